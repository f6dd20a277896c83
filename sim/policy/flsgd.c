/* flsgd.c: free local SGD with parallel synchronisation (the design of
 * HLSGD's public code): the averaging runs in the background.
 *
 * Data: an equal split, sent once with the model.  Devices never wait for
 * an average during an epoch: they take local steps back to back.  An
 * average starts when none is in flight and every participant has taken
 * `steps: H` steps since the previous one started (or has no samples left
 * this epoch); it averages what each device accumulated since, by a ring
 * all-reduce (`sync: ring`) or a push, the server's averaging and a pull
 * (`sync: server`), while the devices go on stepping.  When it completes,
 * each device applies the result, which is one period stale (its own steps
 * since are kept as a correction, which costs no time here), and the next
 * average starts as soon as the devices have H new steps, at once if they
 * already have.  At the end of an epoch (every device out of samples) the
 * average in flight completes, then a last average of what remains is
 * forced synchronously; the next epoch starts when it is done.
 *
 * Statistics: an update's staleness is 1 (period) for a background average
 * and 0 for the forced one.
 */
#include "commlight.h"
#include "runtime.h"

#include <math.h>
#include <stddef.h>

typedef enum { FL_SYNC_RING = 0, FL_SYNC_SERVER = 1 } fl_sync;

typedef struct fl_opts {
    int steps;      /* H >= 1 */
    int sync;       /* fl_sync */
    int collective; /* prt_coll_mode, sync: ring */
} fl_opts;

typedef struct fl_dev {
    prt *rt;
    size_t d;
    int64_t acc_steps, acc_samples; /* steps finished since the last average started */
    int n;                          /* samples of the step in progress */
} fl_dev;

typedef struct fl_state {
    fl_opts o;
    fl_dev *dev;
    size_t *parts;
    size_t n_parts;
    size_t exhausted; /* participants out of samples this epoch */
    int inflight, forced, closing;
    int64_t snap_batch, snap_devs;
    size_t uploaded, downloaded;
    cl_stats cs;
} fl_state;

static void run(prt *rt, void *ctx);
static void launch(prt *rt, fl_state *st, int forced);
static void maybe_launch(prt *rt, fl_state *st);

static void avg_done(prt *rt, void *ctx)
{
    (void)ctx;
    fl_state *st = prt_state(rt);
    st->inflight = 0;
    st->cs.rounds++;
    cl_update(&st->cs, st->snap_batch, st->snap_devs, st->forced ? 0 : 1);
    if (st->forced) {
        if (prt_epoch(rt) >= prt_scn(rt)->training.epochs && cl_emit(rt, &st->cs))
            return;
        if (prt_end_epoch(rt) <= 0)
            return;
        st->closing = 0;
        st->exhausted = 0;
        for (size_t i = 0; i < st->n_parts && !prt_failed(rt); i++)
            run(rt, &st->dev[st->parts[i]]);
        return;
    }
    if (st->closing) {
        launch(rt, st, 1);
        return;
    }
    maybe_launch(rt, st); /* at once if the devices already have H new steps */
}

/* ---- sync: server ---- */
static void on_download(void *ctx, uint64_t id)
{
    (void)id;
    fl_dev *v = ctx;
    prt *rt = v->rt;
    fl_state *st = prt_state(rt);
    if (st->forced)
        prt_set_act(rt, v->d, RES_ACT_WAIT);
    if (++st->downloaded == st->n_parts)
        avg_done(rt, NULL);
}

static void averaged(prt *rt, void *ctx)
{
    (void)ctx;
    fl_state *st = prt_state(rt);
    double M = prt_scn(rt)->model.model_bytes;
    for (size_t i = 0; i < st->n_parts; i++) {
        fl_dev *v = &st->dev[st->parts[i]];
        if (st->forced)
            prt_set_act(rt, v->d, RES_ACT_RECV_MODEL);
        prt_add_server_bytes(rt, v->d, M);
        if (!world_transfer(prt_world(rt), 0, (int)v->d + 1, M, on_download, v)) {
            prt_fail(rt, DP_ENOMEM, "out of memory");
            return;
        }
    }
}

static void on_upload(void *ctx, uint64_t id)
{
    (void)id;
    fl_dev *v = ctx;
    prt *rt = v->rt;
    fl_state *st = prt_state(rt);
    if (st->forced)
        prt_set_act(rt, v->d, RES_ACT_WAIT);
    if (++st->uploaded < st->n_parts)
        return;
    const scn_scenario *s = prt_scn(rt);
    double agg = isfinite(s->server.aggregate_Bps)
                     ? (double)st->n_parts * s->model.model_bytes / s->server.aggregate_Bps
                     : 0;
    if (prt_at(rt, prt_now(rt) + agg, averaged, NULL))
        prt_fail(rt, DP_ENOMEM, "out of memory");
}

/* Start an average of what every device accumulated.  Devices that are
 * computing keep their activity: the transfers run beside their steps. */
static void launch(prt *rt, fl_state *st, int forced)
{
    st->inflight = 1;
    st->forced = forced;
    st->snap_batch = st->snap_devs = 0;
    for (size_t i = 0; i < st->n_parts; i++) {
        fl_dev *v = &st->dev[st->parts[i]];
        st->snap_batch += v->acc_samples;
        st->snap_devs += v->acc_samples > 0;
        v->acc_steps = v->acc_samples = 0;
    }
    double M = prt_scn(rt)->model.model_bytes;
    if (st->o.sync == FL_SYNC_RING) {
        const size_t *mem = st->n_parts == prt_n(rt) ? NULL : st->parts;
        if (st->o.collective == PRT_COLL_ANALYTIC)
            cl_tally_ring(rt, &st->cs, mem, st->n_parts, COLL_ALLREDUCE, M);
        if (mem)
            coll_start_among(rt, COLL_ALLREDUCE, M, st->o.collective, mem, st->n_parts, avg_done, NULL);
        else
            coll_start(rt, COLL_ALLREDUCE, M, st->o.collective, avg_done, NULL);
        return;
    }
    st->uploaded = st->downloaded = 0;
    for (size_t i = 0; i < st->n_parts; i++) {
        fl_dev *v = &st->dev[st->parts[i]];
        if (forced)
            prt_set_act(rt, v->d, RES_ACT_SEND);
        prt_add_server_bytes(rt, v->d, M);
        if (!world_transfer(prt_world(rt), (int)v->d + 1, 0, M, on_upload, v)) {
            prt_fail(rt, DP_ENOMEM, "out of memory");
            return;
        }
    }
}

static void maybe_launch(prt *rt, fl_state *st)
{
    if (st->inflight || st->closing)
        return;
    int working = 0;
    for (size_t i = 0; i < st->n_parts; i++) {
        fl_dev *v = &st->dev[st->parts[i]];
        int out = prt_left(rt)[v->d] <= 0;
        if (v->acc_steps < st->o.steps && !out)
            return;
        working |= !out;
    }
    if (working) /* otherwise the epoch's forced average comes next */
        launch(rt, st, 0);
}

static void after_step(prt *rt, void *ctx)
{
    fl_dev *v = ctx;
    fl_state *st = prt_state(rt);
    v->acc_steps++;
    v->acc_samples += v->n;
    maybe_launch(rt, st);
    run(rt, v);
}

static void run(prt *rt, void *ctx)
{
    fl_dev *v = ctx;
    fl_state *st = prt_state(rt);
    int64_t *left = prt_left(rt);
    if (left[v->d] <= 0) {
        prt_set_act(rt, v->d, RES_ACT_WAIT);
        if (++st->exhausted == st->n_parts) {
            st->closing = 1;
            if (!st->inflight)
                launch(rt, st, 1);
        }
        return;
    }
    int bs = prt_scn(rt)->groups[prt_scn(rt)->devices[v->d].group].batch;
    int n = left[v->d] < bs ? (int)left[v->d] : bs;
    left[v->d] -= n;
    v->n = n;
    st->cs.steps[v->d]++;
    prt_compute(rt, v->d, n, 1.0, after_step, v, NULL);
}

static int fl_start(prt *rt, const void *opts)
{
    size_t n = prt_n(rt);
    fl_state *st = dp_calloc(1, sizeof *st);
    prt_set_state(rt, st);
    if (!st)
        return dp_err_set(prt_err(rt), DP_ENOMEM, "out of memory");
    st->o = *(const fl_opts *)opts;
    st->dev = dp_calloc(n, sizeof *st->dev);
    st->parts = dp_calloc(n, sizeof *st->parts);
    if (!st->dev || !st->parts || cl_stats_init(&st->cs, n))
        return dp_err_set(prt_err(rt), DP_ENOMEM, "out of memory for %zu devices", n);
    for (size_t d = 0; d < n; d++)
        st->dev[d] = (fl_dev){rt, d, 0, 0, 0};
    return cl_distribute(rt, 1, st->dev, sizeof *st->dev, st->parts, &st->n_parts, run);
}

static void fl_free(prt *rt, const void *opts)
{
    (void)opts;
    fl_state *st = prt_state(rt);
    if (st) {
        dp_free(st->dev);
        dp_free(st->parts);
        cl_stats_free(&st->cs);
    }
    dp_free(st);
    prt_set_state(rt, NULL);
}

static int fl_check(const scn_scenario *s, const void *opts, dp_err *err)
{
    const fl_opts *o = opts;
    return o->sync == FL_SYNC_RING ? coll_check_flows(s, "flsgd", o->collective, err) : 0;
}

static const popt fl_table[] = {
    {"steps", NULL, POPT_INT, SCN_UNIT_NUMBER, offsetof(fl_opts, steps), 16, 1, 1e9, NULL,
     "H: local steps every device takes, at least, between the starts of two background averages"},
    {"sync", NULL, POPT_ENUM, SCN_UNIT_NUMBER, offsetof(fl_opts, sync), FL_SYNC_RING, 0, 0, cl_sync_names,
     "ring: all-reduce of the model among devices; server: push, average at the server, pull"},
    {"collective", NULL, POPT_ENUM, SCN_UNIT_NUMBER, offsetof(fl_opts, collective), PRT_COLL_FLOWS, 0, 0,
     popt_collective_names, "sync: ring only: flows through the network model, or analytic"},
    {NULL, NULL, 0, 0, 0, 0, 0, 0, NULL, NULL},
};

const policy_def policy_flsgd = {
    .name = "flsgd",
    .label = "FL-SGD",
    .color = "#d55e00",
    .summary = "local SGD with the average in the background: devices never wait, apply a one-period-stale "
               "average",
    .opts = fl_table,
    .opts_size = sizeof(fl_opts),
    .check = fl_check,
    .start = fl_start,
    .free = fl_free,
};
