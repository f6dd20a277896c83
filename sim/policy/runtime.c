/* runtime.c: the runtime every policy shares (runtime.h).
 *
 * Invariants:
 *  - act[d] is device d's activity since act_since[d]; time is charged to
 *    act_time[d][act] when it changes, so the activity times of a device
 *    sum to Ttotal at the end.
 *  - bins[k] holds the FLOP done in [k*bin_s, (k+1)*bin_s); when a run
 *    outgrows MAX_BINS the bins merge pairwise (bin_s doubles), so memory is
 *    bounded whatever the simulated time.
 *  - Timeline: exact segments while there are at most SEG_EXACT of them;
 *    past that, per-device activity histograms of TL_BINS bins (doubling
 *    like the FLOPS bins) replace them and become segments at the end (each
 *    bin showing its dominant activity).  Only the first TL_DEVICES devices
 *    get a timeline: a Gantt chart of more rows is unreadable anyway.
 */
#include "log.h"
#include "policy.h"
#include "runtime_impl.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MAX_BINS   1024
#define SEG_EXACT  20000
#define TL_BINS    2048
#define TL_DEVICES 64

/* ---- accessors (runtime.h) ---------------------------------------------------- */

size_t prt_n(const prt *rt)
{
    return rt->n;
}
const scn_scenario *prt_scn(const prt *rt)
{
    return rt->s;
}
world *prt_world(const prt *rt)
{
    return rt->w;
}
sim_engine *prt_engine(const prt *rt)
{
    return rt->e;
}
double prt_now(const prt *rt)
{
    return sim_now(rt->e);
}
uint64_t prt_seed(const prt *rt)
{
    return rt->r->seed;
}
dp_err *prt_err(const prt *rt)
{
    return rt->err;
}
int prt_failed(const prt *rt)
{
    return rt->failed;
}
int64_t *prt_share(prt *rt)
{
    return rt->share;
}
int64_t *prt_left(prt *rt)
{
    return rt->left;
}
int prt_epoch(const prt *rt)
{
    return rt->epoch;
}
void *prt_state(const prt *rt)
{
    return rt->policy_state;
}
void prt_set_state(prt *rt, void *state)
{
    rt->policy_state = state;
}
int prt_stat(prt *rt, const char *name, res_scope scope, int64_t a, int64_t b, double value)
{
    if (res_add_stat(rt->r, name, scope, a, b, value))
        return prt_fail(rt, DP_ENOMEM, "out of memory recording statistic %s", name);
    return 0;
}

int prt_device_up(const prt *rt, size_t d)
{
    return world_dev_is_up(rt->w, d);
}
double prt_compute_s(const prt *rt, size_t d)
{
    return rt->busy_compute[d];
}
void prt_add_restart(prt *rt)
{
    rt->restarts++;
}
void prt_add_lost_s(prt *rt, double s)
{
    rt->lost_s += s;
}
void prt_add_blocked_s(prt *rt, double s)
{
    rt->blocked_s += s;
}
void prt_add_resent(prt *rt, double bytes)
{
    rt->resent_bytes += bytes;
}
void prt_add_server_bytes(prt *rt, size_t d, double bytes)
{
    rt->server_bytes[d] += bytes;
}

/* ---- small event records with a free list --------------------------------- */

typedef struct prt_ev {
    prt *rt;
    prt_fn fn;
    void *ctx;
    uint64_t gen;
    struct prt_ev *next;
} prt_ev;

typedef struct compute_slot {
    prt *rt;
    size_t d;
    int n;
    double part;
    int step; /* prt_compute_step: one whole step, whatever part says */
    double t0;
    prt_fn fn;
    void *ctx;
    uint64_t ev; /* 0: not computing */
} compute_slot;

typedef struct xfer_ctx {
    prt *rt;
    size_t d;
    int is_data;
} xfer_ctx;

/* Timeline state, private to this file. */
typedef struct timeline {
    int coarse;
    double res_s; /* bin width when coarse */
    size_t ndev;
    double *hist; /* ndev * TL_BINS * RES_ACT_COUNT seconds */
    compute_slot *cslots;
    xfer_ctx *xctx; /* 2 per device */
    prt_fn *dev_fn;
    void **dev_ctx;
    prt_ev *free_ev;
    prt_ev **blocks;
    size_t n_blocks;
    /* Utilisation counts compute inside [Tsend, Ttotal] only: a policy may
     * compute before the last device holds its data (C-ADP starts each
     * device when its own data arrives), and that work over N x Ttraining
     * could pass 100%.  busy_int is the integral of the number of devices
     * computing, up to busy_t; busy_at_tsend its value when Tsend last
     * moved (Tsend only moves to "now"). */
    size_t computing;
    double busy_int, busy_t, busy_at_tsend;
} timeline;

static timeline *TL(prt *rt)
{
    return (timeline *)((char *)rt + sizeof(prt));
}

static void on_world_device(void *ctx, size_t d, int up);

/* Bring the compute integral up to now. */
static void busy_advance(prt *rt)
{
    timeline *tl = TL(rt);
    double now = sim_now(rt->e);
    tl->busy_int += (double)tl->computing * (now - tl->busy_t);
    tl->busy_t = now;
}

prt *prt_new(const scn_scenario *s, const char *policy, uint64_t seed, dp_err *err)
{
    prt *rt = dp_calloc(1, sizeof(prt) + sizeof(timeline));
    if (!rt) {
        dp_err_set(err, DP_ENOMEM, "out of memory");
        return NULL;
    }
    size_t n = s->n_devices;
    rt->s = s;
    rt->n = n;
    rt->err = err;
    rt->bin_s = 1.0;
    timeline *tl = TL(rt);
    tl->ndev = n < TL_DEVICES ? n : TL_DEVICES;
    if (!(rt->w = world_new(s, seed, err)))
        goto fail;
    rt->e = world_engine(rt->w);
    if (!(rt->r = res_run_new(n, err)))
        goto fail;
    snprintf(rt->r->policy, sizeof rt->r->policy, "%s", policy);
    rt->r->seed = seed;
    rt->share = dp_calloc(n, sizeof *rt->share);
    rt->left = dp_calloc(n, sizeof *rt->left);
    rt->epoch = 1;
    rt->ready_s = dp_calloc(n, sizeof *rt->ready_s);
    rt->pending = dp_calloc(n, sizeof *rt->pending);
    rt->act = dp_calloc(n, sizeof *rt->act);
    rt->act_since = dp_calloc(n, sizeof *rt->act_since);
    rt->act_time = dp_calloc(n * RES_ACT_COUNT, sizeof *rt->act_time);
    rt->busy_compute = dp_calloc(n, sizeof *rt->busy_compute);
    rt->batches = dp_calloc(n, sizeof *rt->batches);
    rt->bins = dp_calloc(MAX_BINS, sizeof *rt->bins);
    rt->coll_bytes = dp_calloc(n, sizeof *rt->coll_bytes);
    rt->coll_busy_s = dp_calloc(n, sizeof *rt->coll_busy_s);
    rt->coll_recv_s = dp_calloc(n, sizeof *rt->coll_recv_s);
    rt->part_done = dp_calloc(n, sizeof *rt->part_done);
    rt->server_bytes = dp_calloc(n, sizeof *rt->server_bytes);
    rt->coll_dev = dp_calloc(n, sizeof *rt->coll_dev);
    tl->cslots = dp_calloc(n, sizeof *tl->cslots);
    tl->xctx = dp_calloc(2 * n, sizeof *tl->xctx);
    tl->dev_fn = dp_calloc(n, sizeof *tl->dev_fn);
    tl->dev_ctx = dp_calloc(n, sizeof *tl->dev_ctx);
    if (!rt->share || !rt->left || !rt->ready_s || !rt->pending || !rt->act || !rt->act_since ||
        !rt->act_time || !rt->busy_compute || !rt->batches || !rt->bins || !rt->coll_bytes ||
        !rt->coll_busy_s || !rt->coll_recv_s || !rt->part_done || !rt->server_bytes || !rt->coll_dev ||
        !tl->cslots || !tl->xctx || !tl->dev_fn || !tl->dev_ctx) {
        dp_err_set(err, DP_ENOMEM, "out of memory for %zu devices", n);
        goto fail;
    }
    rt->may_fail = scn_has_failures(s);
    if (rt->may_fail)
        world_on_device(rt->w, on_world_device, rt);
    for (size_t d = 0; d < n; d++) {
        rt->act[d] = RES_ACT_WAIT;
        const scn_device *dv = &s->devices[d];
        const scn_group *g = &s->groups[dv->group];
        res_device *rd = &rt->r->devices[d];
        snprintf(rd->name, sizeof rd->name, "%s", dv->name);
        snprintf(rd->group, sizeof rd->group, "%s", g->name);
        snprintf(rd->kind, sizeof rd->kind, "%s", g->kind == SCN_GPU ? "gpu" : "cpu");
    }
    return rt;
fail:
    prt_free(rt);
    return NULL;
}

void prt_free(prt *rt)
{
    if (!rt)
        return;
    timeline *tl = TL(rt);
    coll_free_all(rt);
    world_free(rt->w);
    res_run_free(rt->r);
    dp_free(rt->share);
    dp_free(rt->left);
    dp_free(rt->ready_s);
    dp_free(rt->pending);
    dp_free(rt->act);
    dp_free(rt->act_since);
    dp_free(rt->act_time);
    dp_free(rt->busy_compute);
    dp_free(rt->batches);
    dp_free(rt->bins);
    dp_free(rt->coll_bytes);
    dp_free(rt->coll_busy_s);
    dp_free(rt->coll_recv_s);
    dp_free(rt->part_done);
    dp_free(rt->server_bytes);
    dp_free(rt->coll_dev);
    dp_free(rt->coll_link_n);
    dp_free(rt->ring_lat);
    dp_free(rt->ring_rate);
    dp_free(tl->hist);
    dp_free(tl->cslots);
    dp_free(tl->xctx);
    dp_free(tl->dev_fn);
    dp_free(tl->dev_ctx);
    for (size_t b = 0; b < tl->n_blocks; b++)
        dp_free(tl->blocks[b]);
    dp_free(tl->blocks);
    dp_free(rt);
}

int prt_fail(prt *rt, int code, const char *fmt, ...)
{
    if (!rt->failed) {
        rt->failed = 1;
        if (rt->err) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(rt->err->msg, sizeof rt->err->msg, fmt, ap);
            va_end(ap);
            rt->err->code = code;
        }
        DP_LOG(LOG_POLICY, LOG_ERROR, sim_now(rt->e), "%s fails: %s", rt->r->policy,
               rt->err ? rt->err->msg : "(no message)");
    }
    sim_stop(rt->e);
    return code;
}

static void fail_oom(prt *rt)
{
    prt_fail(rt, DP_ENOMEM, "out of memory during the simulation");
}

/* ---- events ------------------------------------------------------------------ */

static void on_prt_ev(sim_engine *e, void *ctx, uint64_t id)
{
    (void)e;
    (void)id;
    prt_ev *ev = ctx;
    prt *rt = ev->rt;
    prt_fn fn = ev->fn;
    void *c = ev->ctx;
    int stale = ev->gen != rt->gen;
    timeline *tl = TL(rt);
    ev->next = tl->free_ev;
    tl->free_ev = ev;
    if (!stale)
        fn(rt, c);
}

int prt_at(prt *rt, double t, prt_fn fn, void *ctx)
{
    timeline *tl = TL(rt);
    if (!tl->free_ev) {
        prt_ev **nb = dp_realloc(tl->blocks, (tl->n_blocks + 1) * sizeof *nb);
        if (!nb)
            return DP_ENOMEM;
        tl->blocks = nb;
        prt_ev *blk = dp_calloc(256, sizeof *blk);
        if (!blk)
            return DP_ENOMEM;
        tl->blocks[tl->n_blocks++] = blk;
        for (int i = 0; i < 256; i++) {
            blk[i].next = tl->free_ev;
            tl->free_ev = &blk[i];
        }
    }
    prt_ev *ev = tl->free_ev;
    tl->free_ev = ev->next;
    *ev = (prt_ev){rt, fn, ctx, rt->gen, NULL};
    if (!sim_at(rt->e, t, on_prt_ev, ev)) {
        ev->next = tl->free_ev;
        tl->free_ev = ev;
        return DP_ENOMEM;
    }
    return 0;
}

/* ---- epochs ------------------------------------------------------------------ */

int prt_work_left(const prt *rt)
{
    for (size_t d = 0; d < rt->n; d++)
        if (rt->left[d] > 0)
            return 1;
    return 0;
}

int prt_end_epoch(prt *rt)
{
    if (res_add_epoch(rt->r, rt->epoch, sim_now(rt->e))) {
        fail_oom(rt);
        return DP_ENOMEM;
    }
    DP_LOG(LOG_POLICY, LOG_INFO, sim_now(rt->e), "%s: epoch %d of %d ends", rt->r->policy, rt->epoch,
           rt->s->training.epochs);
    if (rt->epoch >= rt->s->training.epochs) {
        rt->finished = 1;
        return 0;
    }
    rt->epoch++;
    for (size_t d = 0; d < rt->n; d++)
        rt->left[d] = rt->share[d];
    return 1;
}

/* ---- FLOPS bins -------------------------------------------------------------- */

static void bins_fit(prt *rt, double t)
{
    while (t >= rt->bin_s * MAX_BINS) {
        for (size_t k = 0; k < MAX_BINS / 2; k++)
            rt->bins[k] = rt->bins[2 * k] + rt->bins[2 * k + 1];
        memset(rt->bins + MAX_BINS / 2, 0, (MAX_BINS / 2) * sizeof *rt->bins);
        rt->bin_s *= 2;
    }
}

static void prt_add_flops(prt *rt, double t0, double t1, double flops)
{
    if (!(t1 > t0) || !(flops > 0)) {
        if (flops > 0) { /* instantaneous: credit the bin of t0 */
            bins_fit(rt, t0);
            rt->bins[(size_t)(t0 / rt->bin_s)] += flops;
        }
        return;
    }
    bins_fit(rt, t1);
    double rate = flops / (t1 - t0);
    size_t k0 = (size_t)(t0 / rt->bin_s), k1 = (size_t)(t1 / rt->bin_s);
    if (k1 >= MAX_BINS)
        k1 = MAX_BINS - 1;
    for (size_t k = k0; k <= k1; k++) {
        double a = fmax(t0, (double)k * rt->bin_s), b = fmin(t1, (double)(k + 1) * rt->bin_s);
        if (b > a)
            rt->bins[k] += rate * (b - a);
    }
}

/* ---- timeline ---------------------------------------------------------------- */

static void hist_fit(timeline *tl, double t)
{
    while (t >= tl->res_s * TL_BINS) {
        for (size_t d = 0; d < tl->ndev; d++) {
            double *h = tl->hist + d * TL_BINS * RES_ACT_COUNT;
            for (size_t k = 0; k < TL_BINS / 2; k++)
                for (int a = 0; a < RES_ACT_COUNT; a++)
                    h[k * RES_ACT_COUNT + a] =
                        h[2 * k * RES_ACT_COUNT + a] + h[(2 * k + 1) * RES_ACT_COUNT + a];
            memset(h + (TL_BINS / 2) * RES_ACT_COUNT, 0, (TL_BINS / 2) * RES_ACT_COUNT * sizeof *h);
        }
        tl->res_s *= 2;
    }
}

static void hist_add(timeline *tl, size_t d, res_activity a, double t0, double t1)
{
    hist_fit(tl, t1);
    double *h = tl->hist + d * TL_BINS * RES_ACT_COUNT;
    size_t k0 = (size_t)(t0 / tl->res_s), k1 = (size_t)(t1 / tl->res_s);
    if (k1 >= TL_BINS)
        k1 = TL_BINS - 1;
    /* Ternaries, not fmax/fmin: the times are finite (never NaN), where
     * they agree, and the libm calls were a tenth of this function. */
    for (size_t k = k0; k <= k1; k++) {
        double b0 = (double)k * tl->res_s, b1 = (double)(k + 1) * tl->res_s;
        double lo = t0 > b0 ? t0 : b0, hi = t1 < b1 ? t1 : b1;
        if (hi > lo)
            h[k * RES_ACT_COUNT + a] += hi - lo;
    }
}

/* Switch from exact segments to histograms: replay the segments so far. */
static int go_coarse(prt *rt)
{
    timeline *tl = TL(rt);
    tl->hist = dp_calloc(tl->ndev * TL_BINS * RES_ACT_COUNT, sizeof *tl->hist);
    if (!tl->hist)
        return DP_ENOMEM;
    tl->coarse = 1;
    tl->res_s = 1e-3;
    hist_fit(tl, sim_now(rt->e));
    for (size_t k = 0; k < rt->r->n_segments; k++) {
        res_segment *sg = &rt->r->segments[k];
        hist_add(tl, (size_t)sg->device, sg->act, sg->t0_s, sg->t1_s);
    }
    rt->r->n_segments = 0;
    return 0;
}

static policy_segment_fn segment_fn;
static void *segment_ctx;

void policy_set_segment_hook(policy_segment_fn fn, void *ctx)
{
    segment_fn = fn;
    segment_ctx = ctx;
}

static void timeline_add(prt *rt, size_t d, res_activity a, double t0, double t1)
{
    if (segment_fn && t1 > t0)
        segment_fn(segment_ctx, d, (int)a, t0, t1);
    timeline *tl = TL(rt);
    if (d >= tl->ndev || !(t1 > t0))
        return;
    if (!tl->coarse) {
        if (rt->r->n_segments < SEG_EXACT) {
            if (res_add_segment(rt->r, (int)d, a, t0, t1))
                fail_oom(rt);
            return;
        }
        if (go_coarse(rt)) {
            fail_oom(rt);
            return;
        }
    }
    hist_add(tl, d, a, t0, t1);
}

/* Histograms -> segments: each bin shows its dominant activity. */
static void timeline_finish(prt *rt)
{
    timeline *tl = TL(rt);
    if (!tl->coarse)
        return;
    rt->r->timeline_res_s = tl->res_s;
    for (size_t d = 0; d < tl->ndev; d++) {
        const double *h = tl->hist + d * TL_BINS * RES_ACT_COUNT;
        for (size_t k = 0; k < TL_BINS; k++) {
            double t0 = (double)k * tl->res_s, t1 = fmin((double)(k + 1) * tl->res_s, sim_now(rt->e));
            if (t1 <= t0)
                break;
            int best = RES_ACT_WAIT;
            double bv = -1;
            for (int a = 0; a < RES_ACT_COUNT; a++)
                if (h[k * RES_ACT_COUNT + a] > bv) {
                    bv = h[k * RES_ACT_COUNT + a];
                    best = a;
                }
            if (res_add_segment(rt->r, (int)d, (res_activity)best, t0, t1)) {
                fail_oom(rt);
                return;
            }
        }
    }
}

void prt_set_act(prt *rt, size_t d, res_activity a)
{
    if (rt->act[d] == a)
        return;
    double now = sim_now(rt->e), dur = now - rt->act_since[d];
    rt->act_time[d * RES_ACT_COUNT + rt->act[d]] += dur;
    timeline_add(rt, d, rt->act[d], rt->act_since[d], now);
    rt->act[d] = a;
    rt->act_since[d] = now;
}

/* ---- compute ------------------------------------------------------------------- */

static void on_compute_done(sim_engine *e, void *ctx, uint64_t id)
{
    (void)id;
    compute_slot *c = ctx;
    prt *rt = c->rt;
    double now = sim_now(e);
    c->ev = 0;
    rt->busy_compute[c->d] += now - c->t0;
    busy_advance(rt);
    TL(rt)->computing--;
    /* a batch run in pieces (forward, backward) counts once, when whole */
    rt->part_done[c->d] += c->step ? 1 : c->part;
    if (rt->part_done[c->d] >= 1 - 1e-9) {
        rt->batches[c->d]++;
        rt->part_done[c->d] = 0;
    }
    rt->samples_done += c->n * c->part;
    prt_add_flops(rt, c->t0, now, rt->s->model.flops_per_sample * c->n * c->part);
    prt_set_act(rt, c->d, rt->coll_dev[c->d] ? RES_ACT_SEND : RES_ACT_WAIT);
    c->fn(rt, c->ctx);
}

int prt_compute(prt *rt, size_t d, int n, double part, prt_fn fn, void *ctx, double *dt_out)
{
    compute_slot *c = &TL(rt)->cslots[d];
    double dt = cmp_batch_s(world_compute(rt->w), d, n, sim_now(rt->e), part);
    if (!isfinite(dt))
        return prt_fail(rt, DP_ERUN, "device %s: its speed trace stays at 0, the batch never ends",
                        rt->s->devices[d].name);
    *c = (compute_slot){rt, d, n, part, 0, sim_now(rt->e), fn, ctx, 0};
    if (dt_out)
        *dt_out = dt;
    prt_set_act(rt, d, RES_ACT_COMPUTE);
    if (!(c->ev = sim_at(rt->e, sim_now(rt->e) + dt, on_compute_done, c))) {
        fail_oom(rt);
        return DP_ENOMEM;
    }
    busy_advance(rt);
    TL(rt)->computing++;
    return 0;
}

int prt_compute_step(prt *rt, size_t d, int n, prt_fn fn, void *ctx, double *dt_out)
{
    const scn_group *g = &rt->s->groups[rt->s->devices[d].group];
    /* batch_time alone: n samples cost batch_time * n / batch, i.e. that
     * part of a whole batch (credited as n samples: batch * part) */
    int rc = g->compute == SCN_COMPUTE_MEASURED
                 ? prt_compute(rt, d, g->batch, (double)n / g->batch, fn, ctx, dt_out)
                 : prt_compute(rt, d, n, 1.0, fn, ctx, dt_out);
    if (!rc)
        TL(rt)->cslots[d].step = 1;
    return rc;
}

/* ---- initial distribution --------------------------------------------------- */

static void on_xfer_done(void *ctx, uint64_t id)
{
    (void)id;
    xfer_ctx *x = ctx;
    prt *rt = x->rt;
    size_t d = x->d;
    double now = sim_now(rt->e);
    if (x->is_data == 1) {
        rt->r->devices[d].data_ready_s = now;
        if (now > rt->tsend_s) {
            rt->tsend_s = now;
            busy_advance(rt);
            TL(rt)->busy_at_tsend = TL(rt)->busy_int;
        }
    }
    if (--rt->pending[d] == 0) {
        rt->ready_s[d] = now;
        prt_set_act(rt, d, RES_ACT_WAIT);
        timeline *tl = TL(rt);
        tl->dev_fn[d](rt, tl->dev_ctx[d]);
    } else if (x->is_data) {
        prt_set_act(rt, d, RES_ACT_RECV_MODEL);
    }
}

static int distribute(prt *rt, const double *data_bytes, const int *skip, prt_fn per_dev, void **ctx,
                      int initial)
{
    timeline *tl = TL(rt);
    double model = rt->s->model.model_bytes;
    for (size_t d = 0; d < rt->n; d++) {
        if (skip && skip[d])
            continue;
        tl->dev_fn[d] = per_dev;
        tl->dev_ctx[d] = ctx ? ctx[d] : NULL;
        /* Data and model leave at once as two flows on the same path (the
         * model loads while the data streams); the device starts when it
         * holds both.  Tsend counts the data. */
        tl->xctx[2 * d] = (xfer_ctx){rt, d, initial ? 1 : 2}; /* 2: data resent, not Tsend's */
        tl->xctx[2 * d + 1] = (xfer_ctx){rt, d, 0};
        rt->pending[d] = 2;
        rt->server_bytes[d] += data_bytes[d] + model;
        if (!initial)
            rt->resent_bytes += data_bytes[d] + model;
        prt_set_act(rt, d, RES_ACT_RECV_DATA);
        if (!world_transfer(rt->w, 0, (int)d + 1, data_bytes[d], on_xfer_done, &tl->xctx[2 * d]) ||
            !world_transfer(rt->w, 0, (int)d + 1, model, on_xfer_done, &tl->xctx[2 * d + 1])) {
            fail_oom(rt);
            return DP_ENOMEM;
        }
    }
    return 0;
}

int prt_distribute(prt *rt, const double *data_bytes, const int *skip, prt_fn per_dev, void **ctx)
{
    return distribute(rt, data_bytes, skip, per_dev, ctx, 1);
}

int prt_resend(prt *rt, const double *data_bytes, const int *skip, prt_fn per_dev, void **ctx)
{
    return distribute(rt, data_bytes, skip, per_dev, ctx, 0);
}

/* ---- failures ------------------------------------------------------------------ */

/* Device d's batch in flight ends now without result. */
static void drop_compute(prt *rt, size_t d)
{
    compute_slot *c = &TL(rt)->cslots[d];
    if (!c->ev)
        return;
    sim_cancel(rt->e, c->ev);
    c->ev = 0;
    rt->busy_compute[d] += sim_now(rt->e) - c->t0;
    busy_advance(rt); /* the utilisation integral: one device fewer computing */
    TL(rt)->computing--;
    rt->part_done[d] = 0;
    prt_set_act(rt, d, RES_ACT_WAIT);
}

static void on_world_device(void *ctx, size_t d, int up)
{
    prt *rt = ctx;
    if (rt->failed || rt->finished)
        return;
    if (!up) {
        drop_compute(rt, d);
        rt->pending[d] = 0;
        coll_device_down(rt, d);
        prt_set_act(rt, d, RES_ACT_WAIT);
    }
    if (rt->pdef && rt->pdef->on_device)
        rt->pdef->on_device(rt, rt->popts, d, up);
}

void prt_abort(prt *rt)
{
    rt->gen++;
    for (size_t d = 0; d < rt->n; d++) {
        drop_compute(rt, d);
        rt->pending[d] = 0;
    }
    world_cut_all(rt->w);
    coll_abort_all(rt);
    for (size_t d = 0; d < rt->n; d++)
        prt_set_act(rt, d, RES_ACT_WAIT);
}

void prt_rollback(prt *rt, int epoch)
{
    while (rt->r->n_epochs && rt->r->epochs[rt->r->n_epochs - 1].epoch >= epoch)
        rt->r->n_epochs--;
    /* per-epoch statistics of the epochs done again go too (the load
     * balancers' batch_mean...), so each epoch keeps one row per device */
    size_t k = 0;
    for (size_t i = 0; i < rt->r->n_stats; i++) {
        const res_stat *x = &rt->r->stats[i];
        if (x->scope != RES_SCOPE_DEVICE_EPOCH || x->b < epoch)
            rt->r->stats[k++] = *x;
    }
    rt->r->n_stats = k;
    rt->epoch = epoch;
    for (size_t d = 0; d < rt->n; d++)
        rt->left[d] = rt->share[d];
}

/* Run statistics of a dynamic world (scenarios/README.md lists them). */
static void dyn_stats(prt *rt, double T)
{
    if (!scn_is_dynamic(rt->s))
        return;
    cmp_model *cm = world_compute(rt->w);
    double straggle = 0;
    for (size_t d = 0; d < rt->n; d++)
        straggle += cmp_straggle_s(cm, d);
    res_run *r = rt->r;
    int bad = res_add_stat(r, "failures", RES_SCOPE_RUN, 0, 0, world_failures(rt->w)) ||
              res_add_stat(r, "restarts", RES_SCOPE_RUN, 0, 0, rt->restarts) ||
              res_add_stat(r, "compute_lost_s", RES_SCOPE_RUN, 0, 0, rt->lost_s) ||
              res_add_stat(r, "bytes_resent", RES_SCOPE_RUN, 0, 0, rt->resent_bytes) ||
              res_add_stat(r, "blocked_s", RES_SCOPE_RUN, 0, 0, rt->blocked_s) ||
              res_add_stat(r, "bytes_cut", RES_SCOPE_RUN, 0, 0, world_cut_bytes(rt->w)) ||
              res_add_stat(r, "straggle_s", RES_SCOPE_RUN, 0, 0, straggle);
    net *n = world_net(rt->w);
    for (size_t l = 0; !bad && l < net_link_count(n); l++) {
        int dev, dir;
        world_link_owner(rt->w, (int)l, &dev, &dir);
        bad = res_add_stat(r, "link.device", RES_SCOPE_LINK, (int64_t)l, 0, dev) ||
              res_add_stat(r, "link.dir", RES_SCOPE_LINK, (int64_t)l, 0, dir) ||
              res_add_stat(r, "link.bytes", RES_SCOPE_LINK, (int64_t)l, 0, net_link_bytes(n, (int)l)) ||
              res_add_stat(r, "link.busy_fraction", RES_SCOPE_LINK, (int64_t)l, 0,
                           T > 0 ? net_link_busy_s(n, (int)l) / T : 0) ||
              res_add_stat(r, "link.peak_util", RES_SCOPE_LINK, (int64_t)l, 0, net_link_peak_util(n, (int)l));
    }
    if (bad)
        fail_oom(rt);
}

/* ---- run and results ---------------------------------------------------------- */

static volatile sig_atomic_t *interrupt_flag;

void policy_set_interrupt(volatile sig_atomic_t *flag)
{
    interrupt_flag = flag;
}

static policy_progress_fn progress_fn;
static void *progress_ctx;

void policy_set_progress(policy_progress_fn fn, void *ctx)
{
    progress_fn = fn;
    progress_ctx = ctx;
}

int prt_run(prt *rt)
{
    /* Polling the flag every 4096 events keeps the check off the hot path
     * and still stops within microseconds of host time. */
    uint64_t k = 0;
    while (!rt->finished && !rt->failed && sim_step(rt->e)) {
        DP_LOG(LOG_ENGINE, LOG_TRACE, sim_now(rt->e), "event %llu done, %zu pending",
               (unsigned long long)sim_events_run(rt->e), sim_pending(rt->e));
        if ((++k & 4095) != 0)
            continue;
        if (progress_fn) {
            double work = (double)rt->s->dataset.samples * rt->s->training.epochs;
            progress_fn(progress_ctx, sim_now(rt->e), sim_events_run(rt->e),
                        work > 0 ? rt->samples_done / work : 0);
        }
        if (interrupt_flag && *interrupt_flag)
            return dp_err_set(rt->err, DP_ERUN,
                              "interrupted at simulated t = %.6g s; this run was not stored", sim_now(rt->e));
        if (sim_events_run(rt->e) >= PRT_MAX_EVENTS)
            return dp_err_set(rt->err, DP_ERUN,
                              "stopped after %llu events (the limit on events per run) at simulated "
                              "t = %.6g s of a run this large; use fewer epochs or devices, or analytic "
                              "collectives",
                              (unsigned long long)sim_events_run(rt->e), sim_now(rt->e));
    }
    if (rt->failed)
        return rt->err ? rt->err->code : DP_ERUN;
    if (sim_error(rt->e)) /* e.g. a trace change or a completion could not be scheduled */
        return dp_err_set(rt->err, DP_ERUN,
                          "stopped at simulated t = %.6g s: an event could not be scheduled (%s); "
                          "this run was not stored",
                          sim_now(rt->e), sim_error(rt->e) == DP_ENOMEM ? "out of memory" : "invalid time");
    if (!rt->finished) {
        net *n = world_net(rt->w);
        char stuck[512] = "";
        size_t len = 0;
        for (size_t l = 0; l < net_link_count(n) && len < sizeof stuck - 80; l++)
            if (net_link_capacity(n, (int)l) == 0)
                len += (size_t)snprintf(stuck + len, sizeof stuck - len, "%s%s", len ? ", " : "",
                                        net_link_name(n, (int)l));
        return dp_err_set(rt->err, DP_ERUN,
                          "simulation stalled at t = %.6g s with %zu transfer(s) unfinished: %s%s",
                          sim_now(rt->e), net_flows_active(n) + net_flows_pending(n),
                          len ? "zero capacity with no recovery on " : "nothing left to happen", stuck);
    }
    return 0;
}

res_run *prt_results(prt *rt)
{
    res_run *r = rt->r;
    double T = sim_now(rt->e);
    for (size_t d = 0; d < rt->n; d++) { /* close every open interval at T */
        rt->act_time[d * RES_ACT_COUNT + rt->act[d]] += T - rt->act_since[d];
        timeline_add(rt, d, rt->act[d], rt->act_since[d], T);
        rt->act_since[d] = T;
    }
    timeline_finish(rt);
    r->tsend_s = rt->tsend_s;
    r->ttotal_s = T;
    r->ttraining_s = T - rt->tsend_s;
    r->samples_processed = rt->samples_done;
    r->events = sim_events_run(rt->e);
    dyn_stats(rt, T);
    double busy = 0;
    net *n = world_net(rt->w);
    for (size_t d = 0; d < rt->n; d++) {
        res_device *rd = &r->devices[d];
        rd->samples = rt->share[d];
        rd->batches = rt->batches[d];
        rd->compute_s = rt->busy_compute[d];
        busy += rd->compute_s;
        int up = world_dev_up(rt->w, d), down = world_dev_down(rt->w, d);
        int pu = world_dev_peer_up(rt->w, d), pd = world_dev_peer_down(rt->w, d);
        rd->send_s = net_link_busy_s(n, up) + (pu >= 0 ? net_link_busy_s(n, pu) : 0) + rt->coll_busy_s[d];
        rd->recv_s = net_link_busy_s(n, down) + (pd >= 0 ? net_link_busy_s(n, pd) : 0) + rt->coll_recv_s[d];
        rd->bytes_sent = net_link_bytes(n, up) + (pu >= 0 ? net_link_bytes(n, pu) : 0) + rt->coll_bytes[d];
        rd->bytes_recv = net_link_bytes(n, down) + (pd >= 0 ? net_link_bytes(n, pd) : 0) + rt->coll_bytes[d];
        rd->wait_s = rt->act_time[d * RES_ACT_COUNT + RES_ACT_WAIT];
    }
    /* A device-to-device byte is counted at both ends; a server byte once.
     * Network bytes = server traffic + half the device-to-device traffic. */
    {
        double server = 0, dev = 0;
        for (size_t d = 0; d < rt->n; d++)
            dev += r->devices[d].bytes_sent + r->devices[d].bytes_recv;
        for (size_t d = 0; d < rt->n; d++)
            server += rt->server_bytes[d];
        r->bytes_total = (dev + server) / 2;
    }
    /* minus what ran before Tsend (0 when nobody computed before it, so
     * the sum is the per-device one, bit for bit) */
    double busy_training = busy - TL(rt)->busy_at_tsend;
    r->utilization = (r->ttraining_s > 0 && rt->n) ? busy_training / ((double)rt->n * r->ttraining_s) : 0;
    r->tflops =
        r->ttraining_s > 0 ? rt->s->model.flops_per_sample * rt->samples_done / r->ttraining_s / 1e12 : 0;
    /* FLOPS bins: trim to the run, store FLOP/s */
    size_t nb = (size_t)ceil(T / rt->bin_s);
    if (nb > MAX_BINS)
        nb = MAX_BINS;
    if (nb == 0)
        nb = 1;
    r->flops_bins = dp_calloc(nb, sizeof *r->flops_bins);
    if (r->flops_bins) {
        r->n_bins = nb;
        r->bin_s = rt->bin_s;
        for (size_t k = 0; k < nb; k++)
            r->flops_bins[k] = rt->bins[k] / rt->bin_s;
    }
    rt->r = NULL;
    return r;
}
