/* ep4ddl.c: EP4DDL (Ji et al., J. Supercomputing 2022): a parameter
 * server with per-node flexible parallelism against stragglers.
 *
 * Each worker loops: pull the model (M bytes down), compute a batch, push
 * its gradient (the run's compressed bytes up, prt_wire_bytes); the server
 * applies pushes one at a time in arrival order (M / aggregate rate each).
 * An epoch is one pass over the data, drawn as a pool: a worker takes its
 * batch from its own share while it lasts, then from the share with most
 * left (so a fast worker does the work a slow one cannot), and the epoch
 * ends once the pool is empty and every push is applied.
 *
 * Performance variance (what the paper leaves open is an option here,
 * docs/MODEL.md section 4 "EP4DDL"): each worker's last `window`
 * iterations' compute seconds per sample (its measured speed; per sample,
 * so that shrinking the batch does not move it) give a sliding-window mean
 * m_d and standard deviation s_d.  Once its window is full, a worker is
 * flagged a straggler when m_d - z s_d > (1 + threshold) x the median of
 * the full-window workers' means.  A flagged worker's batch shrinks in
 * proportion to its speed: b_d = max(1, floor(b0_d x median / m_d)); an
 * unflagged one runs its scenario batch b0_d.
 *
 * Bounded staleness (EPSP-style): a worker's clock counts its pushes
 * applied this epoch; it may pull for its next iteration only while, for
 * every other worker still in the epoch, its clock leads by at most
 * `staleness` (`staleness + slack` against a flagged worker: the others
 * do not wait for a straggler as soon).  A worker held back waits and is
 * released when the laggard's push is applied.
 *
 * Statistics (run_stats): device `ep4ddl.flagged_iters` (iterations run
 * flagged), `ep4ddl.first_flag_s` (when first flagged, -1 never), run
 * `ep4ddl.flags` (times a worker became flagged); plus commlight.h's.
 * Not in worlds with failures (no on_device hook).
 */
#include "commlight.h"
#include "policy.h"
#include "runtime.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef struct ep_opts {
    int window;       /* iterations in the sliding window */
    double threshold; /* flagged above (1 + threshold) x the median mean */
    double z;         /* standard deviations subtracted from the mean before comparing */
    int staleness;    /* bound on the clock lead over an unflagged worker */
    int slack;        /* extra lead allowed over a flagged worker */
} ep_opts;

typedef struct ep_dev {
    prt *rt;
    size_t d;
    int b0;         /* scenario batch */
    int n;          /* samples of the iteration in flight */
    int64_t clock;  /* pushes applied this epoch */
    int64_t pulled; /* server version it computes on */
    int active;     /* in the epoch (an iteration in flight, or waiting) */
    int waiting;    /* held back by the staleness bound */
    int flagged;
    double *win; /* window of seconds per sample (ring) */
    int wn, wpos;
    double mean, sd;
    int64_t flagged_iters;
    double first_flag;
    int fresh; /* holds the initial model: the next iteration needs no pull */
} ep_dev;

typedef struct ep_state {
    ep_opts o;
    ep_dev *dev;
    size_t n;
    double *win_all, *tmp;
    int64_t flags;
    cl_ps ps;        /* the server: its queue of arrived pushes and its version */
    size_t inflight; /* workers with an iteration in flight (pull to push applied) */
    cl_stats cs;
} ep_state;

static void start_iter(prt *rt, ep_state *st, ep_dev *v);

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of the full-window workers' means (0: none yet). */
static double median_mean(ep_state *st)
{
    size_t k = 0;
    for (size_t d = 0; d < st->n; d++)
        if (st->dev[d].wn == st->o.window)
            st->tmp[k++] = st->dev[d].mean;
    if (!k)
        return 0;
    qsort(st->tmp, k, sizeof *st->tmp, cmp_dbl);
    return k % 2 ? st->tmp[k / 2] : 0.5 * (st->tmp[k / 2 - 1] + st->tmp[k / 2]);
}

/* Add one iteration's seconds per sample to v's window; its flag anew. */
static void observe(prt *rt, ep_state *st, ep_dev *v, double per_sample)
{
    int W = st->o.window;
    v->win[v->wpos] = per_sample;
    v->wpos = (v->wpos + 1) % W;
    if (v->wn < W)
        v->wn++;
    double s = 0, s2 = 0;
    for (int i = 0; i < v->wn; i++)
        s += v->win[i];
    v->mean = s / v->wn;
    for (int i = 0; i < v->wn; i++)
        s2 += (v->win[i] - v->mean) * (v->win[i] - v->mean);
    v->sd = v->wn > 1 ? sqrt(s2 / (v->wn - 1)) : 0;
    double med = median_mean(st);
    int was = v->flagged;
    v->flagged = v->wn == W && med > 0 && v->mean - st->o.z * v->sd > (1 + st->o.threshold) * med;
    if (v->flagged && !was) {
        st->flags++;
        if (v->first_flag < 0)
            v->first_flag = prt_now(rt);
    }
}

/* Its next batch: shrunk in proportion to its speed when flagged. */
static int batch_of(ep_state *st, const ep_dev *v)
{
    if (!v->flagged)
        return v->b0;
    double med = median_mean(st), b = floor(v->b0 * med / v->mean);
    return b < 1 ? 1 : (int)b;
}

static int may_go(const ep_state *st, const ep_dev *v)
{
    for (size_t e = 0; e < st->n; e++) {
        const ep_dev *u = &st->dev[e];
        if (u == v || !u->active)
            continue;
        int64_t lim = st->o.staleness + (u->flagged ? st->o.slack : 0);
        if (v->clock - u->clock > lim)
            return 0;
    }
    return 1;
}

static void on_push(void *ctx, uint64_t id)
{
    (void)id;
    ep_dev *v = ctx;
    prt *rt = v->rt;
    ep_state *st = prt_state(rt);
    prt_set_act(rt, v->d, RES_ACT_WAIT);
    cl_ps_arrive(rt, &st->ps, v->d);
}

static void after_compute(prt *rt, void *ctx)
{
    ep_dev *v = ctx;
    cl_ps_send(rt, v->d, on_push, v);
}

static void on_pull(void *ctx, uint64_t id)
{
    (void)id;
    ep_dev *v = ctx;
    prt *rt = v->rt;
    ep_state *st = prt_state(rt);
    prt_set_act(rt, v->d, RES_ACT_WAIT);
    st->cs.steps[v->d]++;
    if (v->flagged)
        v->flagged_iters++;
    double dt = 0;
    if (prt_compute_step(rt, v->d, v->n, after_compute, v, &dt))
        return;
    observe(rt, st, v, dt / v->n);
}

/* v's next iteration: out of the epoch when the pool is empty, held back
 * by the staleness bound, or a pull. */
static void start_iter(prt *rt, ep_state *st, ep_dev *v)
{
    if (!prt_work_left(rt)) {
        v->active = 0;
        return;
    }
    if (!may_go(st, v)) {
        v->waiting = 1;
        return;
    }
    v->waiting = 0;
    v->n = cl_take(rt, v->d, batch_of(st, v));
    st->inflight++;
    if (v->fresh) {
        v->fresh = 0;
        v->pulled = 0; /* the initial model is version 0 */
        on_pull(v, 0);
        return;
    }
    v->pulled = st->ps.version;
    prt_learn_pull(rt, v->d); /* the update stream: it computes on this version */
    cl_download(rt, v->d, prt_scn(rt)->model.model_bytes, on_pull, v);
}

static void epoch_start(prt *rt, ep_state *st)
{
    for (size_t d = 0; d < st->n; d++) {
        ep_dev *v = &st->dev[d];
        v->clock = 0;
        v->active = prt_share(rt)[d] > 0;
        v->waiting = 0;
    }
    for (size_t d = 0; d < st->n && !prt_failed(rt); d++)
        if (st->dev[d].active)
            start_iter(rt, st, &st->dev[d]);
}

static int emit(prt *rt, ep_state *st)
{
    if (cl_emit(rt, &st->cs) || prt_stat(rt, "ep4ddl.flags", RES_SCOPE_RUN, 0, 0, (double)st->flags))
        return DP_ENOMEM;
    for (size_t d = 0; d < st->n; d++)
        if (prt_stat(rt, "ep4ddl.flagged_iters", RES_SCOPE_DEVICE, (int64_t)d, 0,
                     (double)st->dev[d].flagged_iters) ||
            prt_stat(rt, "ep4ddl.first_flag_s", RES_SCOPE_DEVICE, (int64_t)d, 0, st->dev[d].first_flag))
            return DP_ENOMEM;
    return 0;
}

static void applied(prt *rt, void *ctx)
{
    (void)ctx;
    ep_state *st = prt_state(rt);
    ep_dev *v = &st->dev[cl_ps_pop(&st->ps)];
    cl_ps_apply(rt, &st->ps, &st->cs, v->d, v->n, v->pulled);
    st->inflight--;
    v->clock++;
    start_iter(rt, st, v);
    for (size_t d = 0; d < st->n && !prt_failed(rt); d++) /* the laggard moved: release those it held */
        if (st->dev[d].waiting && st->dev[d].active)
            start_iter(rt, st, &st->dev[d]);
    if (cl_ps_next(rt, &st->ps) || st->inflight || prt_work_left(rt) || prt_failed(rt))
        return;
    if (prt_epoch(rt) >= prt_scn(rt)->training.epochs && emit(rt, st))
        return;
    if (prt_end_epoch(rt) > 0)
        epoch_start(rt, st);
}

/* A worker holds its shard and the initial model: its first iteration
 * computes on that model (no pull), as the asynchronous server's. */
static void on_ready(prt *rt, void *ctx)
{
    ep_dev *v = ctx;
    ep_state *st = prt_state(rt);
    v->fresh = 1;
    start_iter(rt, st, v);
}

static int ep_start(prt *rt, const void *opts)
{
    const scn_scenario *s = prt_scn(rt);
    size_t n = prt_n(rt);
    ep_state *st = dp_calloc(1, sizeof *st);
    prt_set_state(rt, st);
    if (!st)
        return dp_err_set(prt_err(rt), DP_ENOMEM, "out of memory");
    st->o = *(const ep_opts *)opts;
    st->n = n;
    prt_learn_mode(rt, PRT_LEARN_ASYNC);
    st->dev = dp_calloc(n, sizeof *st->dev);
    st->win_all = dp_calloc(n * (size_t)st->o.window, sizeof *st->win_all);
    st->tmp = dp_calloc(n, sizeof *st->tmp);
    if (!st->dev || !st->win_all || !st->tmp || cl_stats_init(&st->cs, n) || cl_ps_init(rt, &st->ps, applied))
        return dp_err_set(prt_err(rt), DP_ENOMEM, "out of memory for %zu devices", n);
    if (cl_equal_shares(rt))
        return DP_ENOMEM;
    for (size_t d = 0; d < n; d++)
        st->dev[d] = (ep_dev){.rt = rt,
                              .d = d,
                              .b0 = s->groups[s->devices[d].group].batch,
                              .win = st->win_all + d * (size_t)st->o.window,
                              .first_flag = -1};
    for (size_t d = 0; d < n; d++)
        st->dev[d].active = prt_share(rt)[d] > 0;
    return cl_distribute(rt, 0, st->dev, sizeof *st->dev, NULL, NULL, on_ready);
}

static void ep_free(prt *rt, const void *opts)
{
    (void)opts;
    ep_state *st = prt_state(rt);
    if (st) {
        dp_free(st->dev);
        dp_free(st->win_all);
        dp_free(st->tmp);
        cl_stats_free(&st->cs);
        cl_ps_free(&st->ps);
    }
    dp_free(st);
    prt_set_state(rt, NULL);
}

static const popt ep_table[] = {
    {"window", NULL, POPT_INT, SCN_UNIT_NUMBER, offsetof(ep_opts, window), 8, 2, 1e6, NULL,
     "iterations in each worker's sliding window of seconds per sample"},
    {"threshold", NULL, POPT_QUANTITY, SCN_UNIT_NUMBER, offsetof(ep_opts, threshold), 0.5, -1, 1e6, NULL,
     "a worker is flagged when its window mean exceeds (1 + threshold) x the median of the workers' means"},
    {"z", NULL, POPT_QUANTITY, SCN_UNIT_NUMBER, offsetof(ep_opts, z), 0, -1, 100, NULL,
     "standard deviations of its window subtracted from its mean before the comparison (0: the mean alone)"},
    {"staleness", NULL, POPT_INT, SCN_UNIT_NUMBER, offsetof(ep_opts, staleness), 2, 0, 1e9, NULL,
     "a worker's clock leads an unflagged worker's by at most this many pushes"},
    {"slack", NULL, POPT_INT, SCN_UNIT_NUMBER, offsetof(ep_opts, slack), 4, 0, 1e9, NULL,
     "extra lead allowed over a flagged worker (bounded-staleness slack for stragglers)"},
    {NULL, NULL, 0, 0, 0, 0, 0, 0, NULL, NULL},
};

const policy_def policy_ep4ddl = {
    .name = "ep4ddl",
    .label = "EP4DDL",
    .color = "#8c564b",
    .summary =
        "EP4DDL: parameter server; stragglers flagged by a sliding window of their speed run smaller batches "
        "under a bounded staleness with slack",
    .opts = ep_table,
    .opts_size = sizeof(ep_opts),
    .start = ep_start,
    .free = ep_free,
};
