/* asyncps.c: asynchronous parameter server ("robust fully-asynchronous
 * methods" in the seed's related work), with an optional stale-synchronous
 * bound (SSP).
 *
 * Data: an equal split, sent once with the model.  Each device loops: pull
 * the model (M bytes down; its first step uses the model of the initial
 * distribution), compute one batch, push its gradient (M bytes up).  The
 * server applies pushes one at a time in arrival order, each taking
 * M / aggregate_rate; after applying device d's push it sends d the new
 * model (d's next pull).  Staleness of a push = server updates applied
 * between the version d pulled and the one its push is applied to.
 *
 * `max_staleness: s` (SSP): a device's clock is the number of its pushes
 * applied this epoch; a device whose clock is more than s ahead of the
 * slowest device still working this epoch waits before pulling.  s = 0 is
 * lock-step (every device's k-th push is applied before anyone pulls for
 * step k+1); absent (-1) is fully asynchronous.
 *
 * An epoch is one pass over the data: a device out of samples waits, and
 * the epoch ends when every push of it has been applied.  The next epoch
 * starts with a pull on every device.
 */
#include "commlight.h"
#include "runtime.h"

#include <math.h>
#include <stddef.h>

typedef struct aps_opts {
    int max_staleness; /* -1 = unbounded */
} aps_opts;

typedef struct aps_dev {
    prt *rt;
    size_t d;
    int64_t pulled; /* server version of the model it computes on */
    int64_t clock;  /* pushes applied this epoch */
    int n;          /* samples of the batch in flight */
    int active;     /* still has work this epoch (or a push not applied) */
    size_t next;    /* server queue / wait list link (index + 1, 0 = none) */
} aps_dev;

typedef struct aps_state {
    int s;
    aps_dev *dev;
    size_t n;
    int64_t version;
    /* server FIFO of arrived pushes (device index + 1 links) */
    size_t q_head, q_tail;
    int busy;
    double agg_s;
    size_t working; /* devices active this epoch */
    /* SSP: active devices per clock value, the minimum clock, and per clock
     * a FIFO of devices waiting for the minimum to rise */
    int64_t *at_clock;
    size_t *w_head, *w_tail;
    int64_t n_clocks, min_clock, released; /* wait lists up to `released` were drained */
    cl_stats cs;
} aps_state;

static void pull(prt *rt, aps_dev *v);
static void compute(prt *rt, aps_dev *v);

static void serve(prt *rt, aps_state *st);

static void on_push(void *ctx, uint64_t id)
{
    (void)id;
    aps_dev *v = ctx;
    prt *rt = v->rt;
    aps_state *st = prt_state(rt);
    prt_set_act(rt, v->d, RES_ACT_WAIT);
    v->next = 0;
    if (st->q_tail)
        st->dev[st->q_tail - 1].next = v->d + 1;
    else
        st->q_head = v->d + 1;
    st->q_tail = v->d + 1;
    if (!st->busy)
        serve(rt, st);
}

static void after_compute(prt *rt, void *ctx)
{
    aps_dev *v = ctx;
    double M = prt_scn(rt)->model.model_bytes;
    prt_set_act(rt, v->d, RES_ACT_SEND);
    prt_add_server_bytes(rt, v->d, M);
    if (!world_transfer(prt_world(rt), (int)v->d + 1, 0, M, on_push, v))
        prt_fail(rt, DP_ENOMEM, "out of memory");
}

static void compute(prt *rt, aps_dev *v)
{
    aps_state *st = prt_state(rt);
    int64_t *left = prt_left(rt);
    int bs = prt_scn(rt)->groups[prt_scn(rt)->devices[v->d].group].batch;
    v->n = left[v->d] < bs ? (int)left[v->d] : bs;
    left[v->d] -= v->n;
    st->cs.steps[v->d]++;
    prt_compute(rt, v->d, v->n, 1.0, after_compute, v, NULL);
}

static void on_pull(void *ctx, uint64_t id)
{
    (void)id;
    aps_dev *v = ctx;
    prt_set_act(v->rt, v->d, RES_ACT_WAIT);
    compute(v->rt, v);
}

/* The pull is served now: the device will compute on this version. */
static void pull(prt *rt, aps_dev *v)
{
    aps_state *st = prt_state(rt);
    double M = prt_scn(rt)->model.model_bytes;
    v->pulled = st->version;
    prt_set_act(rt, v->d, RES_ACT_RECV_MODEL);
    prt_add_server_bytes(rt, v->d, M);
    if (!world_transfer(prt_world(rt), 0, (int)v->d + 1, M, on_pull, v))
        prt_fail(rt, DP_ENOMEM, "out of memory");
}

/* ---- SSP bookkeeping ---- */
static int may_go(const aps_state *st, const aps_dev *v)
{
    return st->s < 0 || v->clock - st->min_clock <= st->s;
}

static void wait_push(aps_state *st, aps_dev *v)
{
    int64_t c = v->clock;
    v->next = 0;
    if (st->w_tail[c])
        st->dev[st->w_tail[c] - 1].next = v->d + 1;
    else
        st->w_head[c] = v->d + 1;
    st->w_tail[c] = v->d + 1;
}

/* The minimum clock may have risen: release the devices now allowed. */
static void release(prt *rt, aps_state *st)
{
    while (st->min_clock < st->n_clocks && st->at_clock[st->min_clock] == 0)
        st->min_clock++;
    int64_t upto = st->min_clock + st->s;
    if (upto >= st->n_clocks)
        upto = st->n_clocks - 1;
    for (; st->released <= upto; st->released++) {
        int64_t c = st->released;
        size_t k = st->w_head[c];
        st->w_head[c] = st->w_tail[c] = 0;
        while (k) {
            aps_dev *v = &st->dev[k - 1];
            k = v->next;
            pull(rt, v);
        }
    }
}

static void epoch_start(prt *rt, aps_state *st);

static void applied(prt *rt, void *ctx)
{
    (void)ctx;
    aps_state *st = prt_state(rt);
    aps_dev *v = &st->dev[st->q_head - 1];
    st->q_head = v->next;
    if (!st->q_head)
        st->q_tail = 0;
    st->busy = 0;
    cl_update(&st->cs, v->n, 1, st->version - v->pulled);
    st->version++;
    st->cs.rounds++;
    if (st->s >= 0)
        st->at_clock[v->clock]--;
    v->clock++;
    if (prt_left(rt)[v->d] > 0) {
        if (st->s >= 0)
            st->at_clock[v->clock]++;
        if (may_go(st, v))
            pull(rt, v);
        else
            wait_push(st, v);
    } else {
        v->active = 0;
        st->working--;
    }
    if (st->s >= 0)
        release(rt, st);
    if (st->q_head) {
        serve(rt, st);
        return;
    }
    if (st->working)
        return;
    /* every push of the epoch is applied */
    if (prt_epoch(rt) >= prt_scn(rt)->training.epochs && cl_emit(rt, &st->cs))
        return;
    if (prt_end_epoch(rt) > 0)
        epoch_start(rt, st);
}

static void serve(prt *rt, aps_state *st)
{
    st->busy = 1;
    if (prt_at(rt, prt_now(rt) + st->agg_s, applied, NULL))
        prt_fail(rt, DP_ENOMEM, "out of memory");
}

static void reset_clocks(aps_state *st)
{
    st->working = 0;
    st->min_clock = 0;
    st->released = 0;
    for (int64_t c = 0; st->s >= 0 && c < st->n_clocks; c++)
        st->at_clock[c] = 0;
    for (size_t d = 0; d < st->n; d++) {
        aps_dev *v = &st->dev[d];
        v->clock = 0;
        v->active = 0;
    }
}

static void epoch_start(prt *rt, aps_state *st)
{
    reset_clocks(st);
    for (size_t d = 0; d < st->n; d++)
        if (prt_left(rt)[d] > 0) {
            st->dev[d].active = 1;
            st->working++;
            if (st->s >= 0)
                st->at_clock[0]++;
        }
    for (size_t d = 0; d < st->n && !prt_failed(rt); d++)
        if (st->dev[d].active)
            pull(rt, &st->dev[d]);
}

static void on_ready(prt *rt, void *ctx)
{
    aps_dev *v = ctx;
    v->pulled = 0; /* the initial model is version 0 */
    compute(rt, v);
}

static int aps_start(prt *rt, const void *opts)
{
    const scn_scenario *s = prt_scn(rt);
    size_t n = prt_n(rt);
    aps_state *st = dp_calloc(1, sizeof *st);
    prt_set_state(rt, st);
    if (!st)
        return dp_err_set(prt_err(rt), DP_ENOMEM, "out of memory");
    st->s = ((const aps_opts *)opts)->max_staleness;
    st->n = n;
    st->dev = dp_calloc(n, sizeof *st->dev);
    double *bytes = dp_calloc(n, sizeof *bytes);
    int *skip = dp_calloc(n, sizeof *skip);
    void **ctx = dp_calloc(n, sizeof *ctx);
    int rc = 0;
    if (!st->dev || !bytes || !skip || !ctx || cl_stats_init(&st->cs, n)) {
        rc = dp_err_set(prt_err(rt), DP_ENOMEM, "out of memory for %zu devices", n);
        goto done;
    }
    equal_split(rt, PRT_DATA_SHARD, bytes);
    st->agg_s = isfinite(s->server.aggregate_Bps) ? s->model.model_bytes / s->server.aggregate_Bps : 0;
    int64_t most = 0;
    for (size_t d = 0; d < n; d++) {
        int64_t bs = s->groups[s->devices[d].group].batch, steps = (prt_share(rt)[d] + bs - 1) / bs;
        if (steps > most)
            most = steps;
    }
    if (st->s >= 0) {
        st->n_clocks = most + 2;
        st->at_clock = dp_calloc((size_t)st->n_clocks, sizeof *st->at_clock);
        st->w_head = dp_calloc((size_t)st->n_clocks, sizeof *st->w_head);
        st->w_tail = dp_calloc((size_t)st->n_clocks, sizeof *st->w_tail);
        if (!st->at_clock || !st->w_head || !st->w_tail) {
            rc = dp_err_set(prt_err(rt), DP_ENOMEM, "out of memory");
            goto done;
        }
    }
    for (size_t d = 0; d < n; d++) {
        prt_left(rt)[d] = prt_share(rt)[d];
        st->dev[d] = (aps_dev){rt, d, 0, 0, 0, 0, 0};
        ctx[d] = &st->dev[d];
        skip[d] = prt_share(rt)[d] == 0;
    }
    reset_clocks(st);
    for (size_t d = 0; d < n; d++)
        if (!skip[d]) {
            st->dev[d].active = 1;
            st->working++;
            if (st->s >= 0)
                st->at_clock[0]++;
        }
    rc = prt_distribute(rt, bytes, skip, on_ready, ctx);
done:
    dp_free(bytes);
    dp_free(skip);
    dp_free(ctx);
    return rc;
}

static void aps_free(prt *rt, const void *opts)
{
    (void)opts;
    aps_state *st = prt_state(rt);
    if (st) {
        dp_free(st->dev);
        dp_free(st->at_clock);
        dp_free(st->w_head);
        dp_free(st->w_tail);
        cl_stats_free(&st->cs);
    }
    dp_free(st);
    prt_set_state(rt, NULL);
}

static const popt aps_table[] = {
    {"max_staleness", NULL, POPT_INT, SCN_UNIT_NUMBER, offsetof(aps_opts, max_staleness), -1, -1, 1e9, NULL,
     "SSP bound: a device at most this many pushes ahead of the slowest (-1 = unbounded, 0 = lock-step)"},
    {NULL, NULL, 0, 0, 0, 0, 0, 0, NULL, NULL},
};

const policy_def policy_asyncps = {
    .name = "asyncps",
    .label = "Async PS",
    .color = "#56b4e9",
    .summary = "asynchronous parameter server: pull, one batch, push; optional stale-synchronous bound",
    .opts = aps_table,
    .opts_size = sizeof(aps_opts),
    .start = aps_start,
    .free = aps_free,
};
