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
 *
 * Failures (worlds with `availability`; scenarios/README.md): the server
 * skips a worker that is down; its gradient not yet at the server is lost
 * (a push there is applied), its samples not started are skipped; back, it
 * pulls at the next epoch.
 */
#include "commlight.h"
#include "runtime.h"
#include "runtime_perf.h"

#include <stddef.h>
#include <stdint.h>

typedef struct aps_opts {
    int max_staleness; /* -1 = unbounded */
} aps_opts;

/* Where a device is in its loop (what a failure loses). */
typedef enum { AP_PULL = 0, AP_COMPUTE, AP_PUSH, AP_QUEUED, AP_WAIT, AP_IDLE } aps_phase;

typedef struct aps_dev {
    prt *rt;
    size_t d;
    int64_t pulled; /* server version of the model it computes on */
    int64_t clock;  /* pushes applied this epoch */
    int n;          /* samples of the batch in flight */
    int active;     /* still has work this epoch (or a push not applied) */
    size_t next;    /* SSP wait list link (index + 1, 0 = none) */
    size_t bucket;  /* SSP: its clock's bucket (index + 1, 0 = none) */
    /* worlds with failures */
    int phase;    /* aps_phase */
    double c0;    /* its compute seconds when it started its pull */
    int has_data; /* holds its shard */
} aps_dev;

typedef struct aps_state {
    int s;
    aps_dev *dev;
    size_t n;
    cl_ps ps;       /* the server: its queue of arrived pushes and its version */
    size_t working; /* devices active this epoch */
    /* SSP: the active devices' clocks as buckets (clock, devices) in a list
     * sorted by clock, so the minimum is the head; a pool of n + 1 (every
     * device in its own bucket, plus the one a step takes before it frees
     * its old one).  Memory is O(devices) whatever the steps per epoch or
     * the bound: an array indexed by clock cost 24 bytes x steps, which a
     * data set of 10^9 one-sample batches made 64 GB.
     * The devices waiting for the minimum to rise form one FIFO: a device
     * waits at clock c only when c - min_clock > s, and its previous clock
     * c - 1 was at most min_clock + s when it went, so every waiter has
     * clock min_clock + s + 1, and all go together once the minimum rises. */
    struct aps_bucket {
        int64_t clock;
        size_t count, prev, next; /* indices + 1, 0 = none */
    } * bk;
    size_t bk_head, bk_free, w_head, w_tail;
    int64_t n_clocks, min_clock; /* n_clocks: the minimum when nobody is counted */
    cl_stats cs;
    /* worlds with failures (scenarios/README.md) */
    int fail_on;
    size_t *parts, n_parts; /* devices with a share */
    int waiting;            /* 1: the next epoch's start, 2: the epoch's end waits for a device to return */
    int64_t skipped, lost;  /* samples a device down did not start; pushes lost */
} aps_state;

static void pull(prt *rt, aps_dev *v);
static void compute(prt *rt, aps_dev *v);

/* What a pull's or a push's end touches (on_pull, on_push: the device's
 * record, its activity and samples left), fetched while the flow is among
 * the next to end (net_set_done_prefetch): with 10^5 devices each is a
 * cache miss otherwise.  The record's device follows from its address (a
 * flow of another run, jobs sharing one network: nothing fetched). */
static void xfer_prefetch(void *pctx, void *ctx)
{
    prt *rt = pctx;
    const aps_state *st = prt_state(rt);
    uintptr_t a = (uintptr_t)ctx;
    if (!st || !st->dev || a < (uintptr_t)st->dev || a >= (uintptr_t)(st->dev + st->n))
        return;
    size_t d = (a - (uintptr_t)st->dev) / sizeof *st->dev;
    __builtin_prefetch(&st->dev[d]);
    prt_prefetch_act(rt, d);
    __builtin_prefetch(&prt_left(rt)[d]);
}

static void on_push(void *ctx, uint64_t id)
{
    (void)id;
    aps_dev *v = ctx;
    prt *rt = v->rt;
    aps_state *st = prt_state(rt);
    prt_set_act(rt, v->d, RES_ACT_WAIT);
    v->phase = AP_QUEUED;
    cl_ps_arrive(rt, &st->ps, v->d);
}

static void after_compute(prt *rt, void *ctx)
{
    aps_dev *v = ctx;
    v->phase = AP_PUSH;
    cl_ps_send(rt, v->d, on_push, v);
}

static void compute(prt *rt, aps_dev *v)
{
    aps_state *st = prt_state(rt);
    int64_t *left = prt_left(rt);
    int bs = prt_scn(rt)->groups[prt_scn(rt)->devices[v->d].group].batch;
    v->n = left[v->d] < bs ? (int)left[v->d] : bs;
    left[v->d] -= v->n;
    v->phase = AP_COMPUTE;
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
    v->pulled = st->ps.version;
    prt_learn_pull(rt, v->d); /* the update stream: it computes on this version */
    v->phase = AP_PULL;
    v->c0 = prt_compute_s(rt, v->d);
    cl_download(rt, v->d, prt_scn(rt)->model.model_bytes, on_pull, v);
}

/* ---- SSP bookkeeping ---- */
static int may_go(const aps_state *st, const aps_dev *v)
{
    return st->s < 0 || v->clock - st->min_clock <= st->s;
}

static void wait_push(aps_state *st, aps_dev *v)
{
    v->phase = AP_WAIT;
    v->next = 0;
    if (st->w_tail)
        st->dev[st->w_tail - 1].next = v->d + 1;
    else
        st->w_head = v->d + 1;
    st->w_tail = v->d + 1;
}

/* A free bucket for `clock`, linked after `after` (0: at the head). */
static size_t bucket_new(aps_state *st, size_t after, int64_t clock)
{
    size_t b = st->bk_free;
    struct aps_bucket *k = &st->bk[b - 1];
    st->bk_free = k->next;
    size_t nx = after ? st->bk[after - 1].next : st->bk_head;
    *k = (struct aps_bucket){clock, 0, after, nx};
    if (nx)
        st->bk[nx - 1].prev = b;
    if (after)
        st->bk[after - 1].next = b;
    else
        st->bk_head = b;
    return b;
}

/* Device v leaves its clock's bucket (it is done, down or moves on). */
static void clock_leave(aps_state *st, aps_dev *v)
{
    size_t b = v->bucket;
    struct aps_bucket *k = &st->bk[b - 1];
    v->bucket = 0;
    if (--k->count > 0)
        return;
    if (k->prev)
        st->bk[k->prev - 1].next = k->next;
    else
        st->bk_head = k->next;
    if (k->next)
        st->bk[k->next - 1].prev = k->prev;
    k->next = st->bk_free;
    st->bk_free = b;
}

/* Device v starts the epoch at clock 0 (the list is empty or starts at 0). */
static void clock_join(aps_state *st, aps_dev *v)
{
    size_t b = st->bk_head && st->bk[st->bk_head - 1].clock == 0 ? st->bk_head : bucket_new(st, 0, 0);
    st->bk[b - 1].count++;
    v->bucket = b;
}

/* Device v's push was applied and it goes on: its new clock's bucket
 * follows its own (the list is sorted, so clock + 1 is next or absent). */
static void clock_step(aps_state *st, aps_dev *v)
{
    size_t b = v->bucket, nx = st->bk[b - 1].next;
    int64_t c = st->bk[b - 1].clock + 1;
    if (!nx || st->bk[nx - 1].clock != c)
        nx = bucket_new(st, b, c);
    st->bk[nx - 1].count++;
    clock_leave(st, v);
    v->bucket = nx;
}

/* The minimum clock may have risen: release the devices now allowed (the
 * head's clock is the minimum: clocks only rise and leave). */
static void release(prt *rt, aps_state *st)
{
    st->min_clock = st->bk_head ? st->bk[st->bk_head - 1].clock : st->n_clocks;
    if (!st->w_head || st->dev[st->w_head - 1].clock > st->min_clock + st->s)
        return;
    size_t k = st->w_head;
    st->w_head = st->w_tail = 0; /* a pull below may start a new list */
    while (k) {
        aps_dev *v = &st->dev[k - 1];
        k = v->next;
        if (v->active) /* else it went down while waiting */
            pull(rt, v);
    }
}

static void epoch_start(prt *rt, aps_state *st);
static int none_up(prt *rt, aps_state *st, int why);

/* Every push of the epoch is applied and nobody works: the next epoch
 * (with failures: once a device is up, so the job never runs ahead with
 * every device down). */
static void maybe_epoch_end(prt *rt, aps_state *st)
{
    if (st->ps.head || st->ps.busy || st->working)
        return;
    if (st->fail_on && none_up(rt, st, 2))
        return;
    if (prt_epoch(rt) >= prt_scn(rt)->training.epochs &&
        (cl_emit(rt, &st->cs) ||
         (st->fail_on && (prt_stat(rt, "samples_skipped", RES_SCOPE_RUN, 0, 0, (double)st->skipped) ||
                          prt_stat(rt, "pushes_lost", RES_SCOPE_RUN, 0, 0, (double)st->lost)))))
        return;
    if (prt_end_epoch(rt) > 0)
        epoch_start(rt, st);
}

/* Device v is out of this epoch: inactive, its samples not started skipped. */
static void drop_out(prt *rt, aps_state *st, aps_dev *v)
{
    st->skipped += cl_skip_left(rt, v->d);
    v->active = 0;
    v->phase = AP_IDLE;
    st->working--;
}

static void applied(prt *rt, void *ctx)
{
    (void)ctx;
    aps_state *st = prt_state(rt);
    aps_dev *v = &st->dev[cl_ps_pop(&st->ps)];
    cl_ps_apply(rt, &st->ps, &st->cs, v->d, v->n, v->pulled);
    int up = prt_device_up(rt, v->d), goes_on = up && prt_left(rt)[v->d] > 0;
    if (st->s >= 0) {
        if (goes_on)
            clock_step(st, v);
        else
            clock_leave(st, v);
    }
    v->clock++;
    if (!up) { /* its push counted; it went down since */
        drop_out(rt, st, v);
    } else if (goes_on) {
        if (may_go(st, v))
            pull(rt, v);
        else
            wait_push(st, v);
    } else {
        v->active = 0;
        v->phase = AP_IDLE;
        st->working--;
    }
    if (st->s >= 0)
        release(rt, st);
    if (!cl_ps_next(rt, &st->ps))
        maybe_epoch_end(rt, st);
}

static void reset_clocks(aps_state *st)
{
    st->working = 0;
    st->min_clock = 0;
    st->w_head = st->w_tail = 0; /* a device down may be left in it */
    st->bk_head = 0;
    st->bk_free = st->bk ? 1 : 0;
    for (size_t b = 0; st->bk && b <= st->n; b++)
        st->bk[b].next = b < st->n ? b + 2 : 0;
    for (size_t d = 0; d < st->n; d++) {
        aps_dev *v = &st->dev[d];
        v->clock = 0;
        v->active = 0;
        v->bucket = 0;
    }
}

static void on_ready(prt *rt, void *ctx)
{
    aps_dev *v = ctx;
    v->has_data = 1;
    v->pulled = 0; /* the initial model is version 0 */
    compute(rt, v);
}

/* Back without its shard: it received shard and model (pulled when sent). */
static void on_resent(prt *rt, void *ctx)
{
    aps_dev *v = ctx;
    v->has_data = 1;
    compute(rt, v);
}

/* 1 if no device with a share is up: the job waits (`why`: st->waiting),
 * or the run failed if none can return. */
static int none_up(prt *rt, aps_state *st, int why)
{
    int none = cl_none_up(rt, st->parts, st->n_parts);
    st->waiting = none ? why : 0;
    return none;
}

/* With failures, the devices down when an epoch starts skip it; if none is
 * up the epoch waits for one.  Returns 1 when the epoch can start. */
static int epoch_devices(prt *rt, aps_state *st)
{
    if (none_up(rt, st, 1))
        return 0;
    for (size_t d = 0; d < st->n; d++)
        if (!prt_device_up(rt, d)) {
            st->skipped += cl_skip_left(rt, d);
        }
    return 1;
}

/* Devices back without their shard receive it with the model (resent). */
static int resend_lost_data(prt *rt, aps_state *st)
{
    cl_resend r;
    int rc = cl_resend_begin(rt, &r);
    for (size_t d = 0; d < st->n && !rc; d++) {
        aps_dev *v = &st->dev[d];
        if (!v->active || v->has_data)
            continue;
        cl_resend_add(rt, &r, d, v, 0);
        v->pulled = st->ps.version;
        prt_learn_pull(rt, d);
        v->phase = AP_PULL;
        v->c0 = prt_compute_s(rt, d);
    }
    if (!rc)
        rc = cl_resend_send(rt, &r, on_resent);
    cl_resend_free(&r);
    return rc;
}

static void epoch_start(prt *rt, aps_state *st)
{
    if (st->fail_on && !epoch_devices(rt, st))
        return;
    reset_clocks(st);
    for (size_t d = 0; d < st->n; d++)
        if (prt_left(rt)[d] > 0) {
            st->dev[d].active = 1;
            st->working++;
            if (st->s >= 0)
                clock_join(st, &st->dev[d]);
        }
    if (st->fail_on && resend_lost_data(rt, st))
        return;
    for (size_t d = 0; d < st->n && !prt_failed(rt); d++)
        if (st->dev[d].active && (!st->fail_on || st->dev[d].has_data))
            pull(rt, &st->dev[d]);
}

/* A device down loses the batch it computes on (pulled, computed or pushed
 * but not yet at the server): pushes_lost, its compute since the pull
 * lost; a push already at the server is applied.  Either way it is out of
 * the epoch.  Back, it pulls at the next epoch's start. */
static void aps_on_device(prt *rt, const void *opts, size_t d, int up)
{
    (void)opts;
    aps_state *st = prt_state(rt);
    if (!st || prt_failed(rt) || prt_share(rt)[d] == 0)
        return;
    aps_dev *v = &st->dev[d];
    if (up) {
        if (st->waiting == 1)
            epoch_start(rt, st);
        else if (st->waiting == 2)
            maybe_epoch_end(rt, st);
        return;
    }
    if (!cl_keeps_data(rt, d))
        v->has_data = 0;
    if (!v->active || v->phase == AP_QUEUED)
        return; /* idle, or its push is at the server (applied() drops it out) */
    if (v->phase == AP_COMPUTE || v->phase == AP_PUSH) {
        st->lost++;
        prt_add_lost_s(rt, prt_compute_s(rt, d) - v->c0);
    }
    if (st->s >= 0)
        clock_leave(st, v);
    drop_out(rt, st, v);
    if (st->s >= 0)
        release(rt, st);
    maybe_epoch_end(rt, st);
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
    prt_learn_mode(rt, PRT_LEARN_ASYNC);
    st->n = n;
    st->dev = dp_calloc(n, sizeof *st->dev);
    st->parts = dp_calloc(n, sizeof *st->parts);
    if (!st->dev || !st->parts || cl_stats_init(&st->cs, n) || cl_ps_init(rt, &st->ps, applied))
        return dp_err_set(prt_err(rt), DP_ENOMEM, "out of memory for %zu devices", n);
    if (cl_equal_shares(rt))
        return DP_ENOMEM;
    if (prt_hints(rt)) { /* hints only: a full table fetches nothing */
        net *nt = world_net(prt_world(rt));
        (void)net_set_done_prefetch(nt, on_pull, xfer_prefetch, rt);
        (void)net_set_done_prefetch(nt, on_push, xfer_prefetch, rt);
    }
    st->fail_on = scn_has_failures(s);
    int64_t most = 0;
    for (size_t d = 0; d < n; d++) {
        int64_t bs = s->groups[s->devices[d].group].batch, steps = (prt_share(rt)[d] + bs - 1) / bs;
        if (steps > most)
            most = steps;
    }
    if (st->s >= 0) {
        st->n_clocks = most + 2;
        st->bk = dp_calloc(n + 1, sizeof *st->bk);
        if (!st->bk)
            return dp_err_set(prt_err(rt), DP_ENOMEM, "out of memory");
    }
    for (size_t d = 0; d < n; d++)
        st->dev[d] = (aps_dev){.rt = rt, .d = d, .phase = AP_PULL};
    reset_clocks(st);
    for (size_t d = 0; d < n; d++)
        if (prt_share(rt)[d] > 0) {
            st->dev[d].active = 1;
            st->working++;
            if (st->s >= 0)
                clock_join(st, &st->dev[d]);
        }
    return cl_distribute(rt, 0, st->dev, sizeof *st->dev, st->parts, &st->n_parts, on_ready);
}

static void aps_free(prt *rt, const void *opts)
{
    (void)opts;
    aps_state *st = prt_state(rt);
    if (st) {
        dp_free(st->dev);
        dp_free(st->parts);
        dp_free(st->bk);
        cl_stats_free(&st->cs);
        cl_ps_free(&st->ps);
    }
    dp_free(st);
    prt_set_state(rt, NULL);
}

/* policy_perf.prefetch: the device's record, which a batch's end reads
 * first (after_compute). */
static void aps_prefetch(prt *rt, size_t d)
{
    const aps_state *st = prt_state(rt);
    if (st && st->dev && d < st->n)
        __builtin_prefetch(&st->dev[d]);
}

static const policy_perf aps_perf = {
    .prefetch = aps_prefetch,
};

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
    .on_device = aps_on_device,
    .perf = &aps_perf,
};
