/* runtime.c: the runtime every policy shares (runtime.h).
 *
 * Invariants:
 *  - act[d] is device d's activity since act_since[d] (engine time); time
 *    is charged to act_time[d][act] when it changes, so the activity times
 *    of a device sum to Ttotal at the end.
 *  - Running records (act_time, busy_compute, batches, the collectives'
 *    bytes and seconds, samples_done, the utilisation integral) count from
 *    the last clean epoch boundary in a periodic world, where they are
 *    folded into rt->tot (epoch_close); elsewhere nothing is ever folded and
 *    they count the whole run.  An epoch's records are then a function of
 *    its engine times alone, the same bits for every epoch that repeats,
 *    so a fast-forward adds an epoch's subtotals once instead of redoing
 *    each of its additions.
 *  - bins[k] holds the FLOP done in [k*bin_s, (k+1)*bin_s); when a run
 *    outgrows MAX_BINS the bins merge pairwise (bin_s doubles), so memory is
 *    bounded whatever the simulated time.
 *  - Timeline: exact segments while there are at most SEG_EXACT of them;
 *    past that, per-device activity histograms of TL_BINS bins (doubling
 *    like the FLOPS bins) replace them and become segments at the end (each
 *    bin showing its dominant activity).  A histogram is kept as each
 *    activity's cumulative time at every bin edge (a bin is the difference
 *    of its edges), computed from the records above, so an edge inside a
 *    fast-forwarded epoch is found from that epoch's subtotals.  Only the
 *    first TL_DEVICES devices get a timeline: a Gantt chart of more rows is
 *    unreadable anyway.
 *  - Time: the engine's clock is relative to `base` (0 unless the world is
 *    periodic, see "epoch boundaries"); every absolute time recorded is
 *    base + engine time, computed where it is recorded (abs_now), so a
 *    record replayed by a fast-forward does the same arithmetic.
 */
#include "log.h"
#include "policy.h"
#include "runtime_impl.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MAX_BINS             1024
#define SEG_EXACT            20000
#define TL_BINS              2048
#define TL_DEVICES           64
#define PREFETCH_MIN_DEVICES 4096

/* ---- the epoch journal (declarations; "epoch boundaries" below) ---------- */

/* What the runtime records, with engine (relative) times: replaying the
 * entries with another base repeats the records of an epoch exactly.
 * Fixed-size entries (no implicit padding, so they compare with memcmp):
 *   J_ACT    a = activity, r = time; devices f->dv[d, d + n), in call order
 *            (consecutive changes to the same activity at the same time,
 *            e.g. every member of a collective starting or ending, share
 *            one entry)
 *   J_CSTART r = time
 *   J_CDONE  d, n = samples, a = step (| J_FOLDED: a batch of a run in one
 *            event, not its last, after which the device computes on),
 *            r = end, r0 = start, v1 = part
 *   J_COLL   d, n = next member, v1 = bytes, r0 = busy seconds
 *   J_RING   n = rounds, v1 = chunk
 *   J_SRV    d, v1 = bytes exchanged with the server (prt_add_server_bytes)
 *   J_EPOCH  r = time */
typedef enum { J_ACT = 0, J_CSTART, J_CDONE, J_COLL, J_RING, J_SRV, J_EPOCH } jkind;
#define J_FOLDED 2
typedef struct jent {
    uint8_t kind, a;
    uint16_t pad0;
    int32_t d, n;
    uint32_t pad1;
    double r, r0, v1;
} jent;
static void jrec(prt *rt, jent e);
static void jrec_act(prt *rt, size_t d, res_activity a);
static void jbreak(prt *rt);
static void ff_init(prt *rt);
static void ff_free(prt *rt);
static int ff_boundary(prt *rt);

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
void *prt_plan(const prt *rt)
{
    return rt->plan;
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
    jbreak(rt); /* not journaled: an epoch recording one is never replayed */
    if (res_add_stat(rt->r, name, scope, a, b, value))
        return prt_fail(rt, DP_ENOMEM, "out of memory recording statistic %s", name);
    return 0;
}

int prt_device_up(const prt *rt, size_t d)
{
    return world_dev_is_up(rt->w, d);
}
void prt_add_restart(prt *rt)
{
    jbreak(rt);
    rt->restarts++;
}
void prt_add_lost_s(prt *rt, double s)
{
    jbreak(rt);
    rt->lost_s += s;
}
void prt_add_blocked_s(prt *rt, double s)
{
    jbreak(rt);
    rt->blocked_s += s;
}
void prt_add_resent(prt *rt, double bytes)
{
    jbreak(rt);
    rt->resent_bytes += bytes;
}
void prt_add_server_bytes(prt *rt, size_t d, double bytes)
{
    jrec(rt, (jent){.kind = J_SRV, .d = (int32_t)d, .v1 = bytes});
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
    /* a run of batches in one event (prt_compute_left): fold samples in
     * batches of n, each full one lasting w_full, a short last one w_last;
     * fold == 0: one batch */
    int64_t fold;
    double w_full, w_last;
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
    /* coarse: cum[(d * (TL_BINS + 1) + k) * RES_ACT_COUNT + a] is device
     * d's time in activity a up to the bin edge k * res_s, for edges
     * 1 <= k < next_edge[d] (edge 0 is 0 everywhere) */
    double *cum;
    size_t next_edge[TL_DEVICES];
    /* the engine time of device d's next edge, as tl_edges computes it,
     * while edge_gen[d] == gen (gen changes with the width and the base) */
    double next_xr[TL_DEVICES];
    uint64_t edge_gen[TL_DEVICES], gen;
    double *seg_t0; /* per device: absolute start of its current activity (segments) */
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
     * computing, up to engine time busy_t (a running record); busy_at_tsend
     * its whole-run value when Tsend last moved (Tsend only moves to
     * "now"). */
    size_t computing;
    double busy_int, busy_t, busy_at_tsend;
} timeline;

static timeline *TL(prt *rt)
{
    return (timeline *)((char *)rt + sizeof(prt));
}

/* A calloc'd array's pages, touched now (writing the zeros it holds). */
static void touch(void *p, size_t bytes)
{
    if (p)
        memset(p, 0, bytes);
}

void prt_warm(prt *rt)
{
    size_t n = rt->n;
    timeline *tl = TL(rt);
    touch(rt->share, n * sizeof *rt->share);
    touch(rt->left, n * sizeof *rt->left);
    touch(rt->ready_s, n * sizeof *rt->ready_s);
    touch(rt->pending, n * sizeof *rt->pending);
    touch(rt->act_since, n * sizeof *rt->act_since);
    touch(rt->act_time, n * RES_ACT_COUNT * sizeof *rt->act_time);
    touch(rt->busy_compute, n * sizeof *rt->busy_compute);
    touch(rt->batches, n * sizeof *rt->batches);
    touch(rt->server_bytes, n * sizeof *rt->server_bytes);
    touch(tl->cslots, n * sizeof *tl->cslots);
    touch(tl->xctx, 2 * n * sizeof *tl->xctx);
    touch(tl->dev_fn, n * sizeof *tl->dev_fn);
    touch(tl->dev_ctx, n * sizeof *tl->dev_ctx);
    (void)net_reserve(world_net(rt->w), 2 * n); /* a hint: a run short of memory fails where it did */
}

/* The records an epoch boundary folds (see the invariants): rt->tot holds
 * the folded totals, and an epoch journal keeps one epoch's subtotals. */
typedef struct prt_sums {
    double *act_time; /* n * RES_ACT_COUNT */
    double *busy_compute, *coll_bytes, *coll_busy_s, *coll_recv_s, *server_bytes;
    int64_t *batches;
    double samples_done, busy_int;
} prt_sums;

static void sums_free(prt_sums *x);

static prt_sums *sums_new(size_t n)
{
    prt_sums *x = dp_calloc(1, sizeof *x);
    if (!x)
        return NULL;
    x->act_time = dp_calloc(n * RES_ACT_COUNT, sizeof *x->act_time);
    x->busy_compute = dp_calloc(n, sizeof *x->busy_compute);
    x->coll_bytes = dp_calloc(n, sizeof *x->coll_bytes);
    x->coll_busy_s = dp_calloc(n, sizeof *x->coll_busy_s);
    x->coll_recv_s = dp_calloc(n, sizeof *x->coll_recv_s);
    x->server_bytes = dp_calloc(n, sizeof *x->server_bytes);
    x->batches = dp_calloc(n, sizeof *x->batches);
    if (!x->act_time || !x->busy_compute || !x->coll_bytes || !x->coll_busy_s || !x->coll_recv_s ||
        !x->server_bytes || !x->batches) {
        sums_free(x);
        return NULL;
    }
    return x;
}

static void sums_free(prt_sums *x)
{
    if (!x)
        return;
    dp_free(x->act_time);
    dp_free(x->busy_compute);
    dp_free(x->coll_bytes);
    dp_free(x->coll_busy_s);
    dp_free(x->coll_recv_s);
    dp_free(x->server_bytes);
    dp_free(x->batches);
    dp_free(x);
}

/* The running records, as a prt_sums whose arrays are the runtime's own. */
static prt_sums running(prt *rt)
{
    return (prt_sums){rt->act_time,     rt->busy_compute, rt->coll_bytes,   rt->coll_busy_s, rt->coll_recv_s,
                      rt->server_bytes, rt->batches,      rt->samples_done, TL(rt)->busy_int};
}

/* to += x, record by record; to = x instead when `copy`. */
static void sums_add(prt_sums *to, const prt_sums *x, size_t n, int copy)
{
    size_t na = n * RES_ACT_COUNT;
    for (size_t i = 0; i < na; i++)
        to->act_time[i] = copy ? x->act_time[i] : to->act_time[i] + x->act_time[i];
    for (size_t i = 0; i < n; i++) {
        to->busy_compute[i] = copy ? x->busy_compute[i] : to->busy_compute[i] + x->busy_compute[i];
        to->coll_bytes[i] = copy ? x->coll_bytes[i] : to->coll_bytes[i] + x->coll_bytes[i];
        to->coll_busy_s[i] = copy ? x->coll_busy_s[i] : to->coll_busy_s[i] + x->coll_busy_s[i];
        to->coll_recv_s[i] = copy ? x->coll_recv_s[i] : to->coll_recv_s[i] + x->coll_recv_s[i];
        to->server_bytes[i] = copy ? x->server_bytes[i] : to->server_bytes[i] + x->server_bytes[i];
        to->batches[i] = copy ? x->batches[i] : to->batches[i] + x->batches[i];
    }
    to->samples_done = copy ? x->samples_done : to->samples_done + x->samples_done;
    to->busy_int = copy ? x->busy_int : to->busy_int + x->busy_int;
}

static void running_zero(prt *rt)
{
    size_t n = rt->n;
    memset(rt->act_time, 0, n * RES_ACT_COUNT * sizeof *rt->act_time);
    memset(rt->busy_compute, 0, n * sizeof *rt->busy_compute);
    memset(rt->coll_bytes, 0, n * sizeof *rt->coll_bytes);
    memset(rt->coll_busy_s, 0, n * sizeof *rt->coll_busy_s);
    memset(rt->coll_recv_s, 0, n * sizeof *rt->coll_recv_s);
    memset(rt->server_bytes, 0, n * sizeof *rt->server_bytes);
    memset(rt->batches, 0, n * sizeof *rt->batches);
    rt->samples_done = 0;
    TL(rt)->busy_int = 0;
}

/* A whole-run total now: folded + running (the running value alone, the
 * same bits, where nothing is folded). */
static double total(const double *tot, const double *run, size_t i)
{
    return tot ? tot[i] + run[i] : run[i];
}

double prt_compute_s(const prt *rt, size_t d)
{
    return total(rt->tot ? rt->tot->busy_compute : NULL, rt->busy_compute, d);
}

static void on_world_device(void *ctx, size_t d, int up);

/* Absolute simulated time now (base + 0.0 == the engine's time exactly
 * while base is 0, i.e. in every world that is not periodic). */
static double abs_now(const prt *rt)
{
    return rt->base + sim_now(rt->e);
}

/* Bring the compute integral up to engine time now. */
static void busy_advance_to(prt *rt, double now)
{
    timeline *tl = TL(rt);
    tl->busy_int += (double)tl->computing * (now - tl->busy_t);
    tl->busy_t = now;
}

static void busy_advance(prt *rt)
{
    busy_advance_to(rt, sim_now(rt->e));
}

/* snprintf(dst, cap, "%s", src) without the format machinery: three per
 * device were a tenth of setting up a run of 10^6 devices. */
static void copy_str(char *dst, size_t cap, const char *src)
{
    size_t n = strnlen(src, cap - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static void on_fold_done(sim_engine *e, void *ctx, uint64_t id);
static void on_compute_done(sim_engine *e, void *ctx, uint64_t id);

/* Device d's records a batch's end touches (compute_done_at, set_act_at),
 * and what starting another batch reads when `more` (prt_compute_left). */
static void dev_prefetch(prt *rt, size_t d, int more)
{
    const compute_slot *c = &TL(rt)->cslots[d];
    __builtin_prefetch(c);
    __builtin_prefetch((const char *)c + 64);
    prt_prefetch_act(rt, d);
    __builtin_prefetch(&rt->busy_compute[d]);
    __builtin_prefetch(&rt->batches[d]);
    __builtin_prefetch(&rt->part_done[d]);
    __builtin_prefetch(&rt->left[d]);
    __builtin_prefetch(&rt->server_bytes[d]);
    if (more)
        cmp_prefetch(world_compute(rt->w), d);
    __builtin_prefetch(&rt->coll_dev[d]);
}

/* The records a batch's end touches, fetched while the event before it
 * runs (sim_set_prefetch): the slot's device is its index in cslots, so
 * nothing cold is read here.  After a run of batches (prt_compute_left,
 * more = 0) the device's samples are done and what follows is a send (its
 * model, a gradient), not another batch or a download: the compute record
 * and the down link are left out, since fewer fetches in flight leave the
 * core's miss buffers to the ones that are used. */
static void slot_prefetch(prt *rt, const void *slot, int more)
{
    size_t d = (size_t)((const compute_slot *)slot - TL(rt)->cslots);
    dev_prefetch(rt, d, more);
    if (rt->pdef && rt->pdef->prefetch)
        rt->pdef->prefetch(rt, d);
    world_prefetch_dev(rt->w, d, more); /* a batch's end often starts a transfer */
}

static void compute_prefetch(void *pctx, void *ctx)
{
    slot_prefetch(pctx, ctx, 1);
}

static void fold_prefetch(void *pctx, void *ctx)
{
    slot_prefetch(pctx, ctx, 0);
}

static void on_xfer_done(void *ctx, uint64_t id);

/* What a distribution's end touches (on_xfer_done, then the device's start:
 * prt_compute_left and its records), fetched a few flows ahead while 10^6
 * distributions end at one instant (net_set_done_prefetch). */
static void xfer_prefetch(void *pctx, void *ctx)
{
    prt *rt = pctx;
    size_t d = ((const xfer_ctx *)ctx)->d;
    timeline *tl = TL(rt);
    /* only these: the lines a batch's end needs (busy_compute, batches,
     * part_done, server_bytes, coll_dev) would wait seconds of simulated
     * time, and every fetch in flight holds one of the core's few miss
     * buffers while 10^6 ends are read in a row */
    __builtin_prefetch(&rt->pending[d]);
    __builtin_prefetch(&rt->ready_s[d]);
    __builtin_prefetch(&rt->r->devices[d].data_ready_s);
    __builtin_prefetch(&tl->dev_fn[d]);
    __builtin_prefetch(&tl->dev_ctx[d]);
    prt_prefetch_act(rt, d);
    __builtin_prefetch(&rt->share[d]);
    __builtin_prefetch(&rt->left[d]);
    const compute_slot *c = &tl->cslots[d]; /* prt_compute_left writes it */
    __builtin_prefetch(c);
    __builtin_prefetch((const char *)c + 64);
    cmp_prefetch(world_compute(rt->w), d);
    if (rt->pdef && rt->pdef->prefetch)
        rt->pdef->prefetch(rt, d);
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
    tl->seg_t0 = dp_calloc(n, sizeof *tl->seg_t0);
    if (!rt->share || !rt->left || !rt->ready_s || !rt->pending || !rt->act || !rt->act_since ||
        !rt->act_time || !rt->busy_compute || !rt->batches || !rt->bins || !rt->coll_bytes ||
        !rt->coll_busy_s || !rt->coll_recv_s || !rt->part_done || !rt->server_bytes || !rt->coll_dev ||
        !tl->cslots || !tl->xctx || !tl->dev_fn || !tl->dev_ctx || !tl->seg_t0) {
        dp_err_set(err, DP_ENOMEM, "out of memory for %zu devices", n);
        goto fail;
    }
    rt->may_fail = scn_has_failures(s);
    /* Below a few thousand devices their records stay in cache and the
     * hint would only cost its look at the next event (5% of table 3). */
    if (prt_hints(rt) && (sim_set_prefetch(rt->e, on_fold_done, fold_prefetch, rt) ||
                          sim_set_prefetch(rt->e, on_compute_done, compute_prefetch, rt) ||
                          net_set_done_prefetch(world_net(rt->w), on_xfer_done, xfer_prefetch, rt))) {
        dp_err_set(err, DP_ENOMEM, "out of memory");
        goto fail;
    }
    ff_init(rt);
    if (rt->may_fail)
        world_on_device(rt->w, on_world_device, rt);
    for (size_t d = 0; d < n; d++) {
        rt->act[d] = RES_ACT_WAIT;
        const scn_device *dv = &s->devices[d];
        const scn_group *g = &s->groups[dv->group];
        res_device *rd = &rt->r->devices[d];
        copy_str(rd->name, sizeof rd->name, dv->name);
        copy_str(rd->group, sizeof rd->group, g->name);
        copy_str(rd->kind, sizeof rd->kind, g->kind == SCN_GPU ? "gpu" : "cpu");
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
    dp_free(rt->ring_links);
    dp_free(rt->ring_xfer);
    dp_free(tl->cum);
    dp_free(tl->seg_t0);
    sums_free(rt->tot);
    dp_free(tl->cslots);
    dp_free(tl->xctx);
    dp_free(tl->dev_fn);
    dp_free(tl->dev_ctx);
    for (size_t b = 0; b < tl->n_blocks; b++)
        dp_free(tl->blocks[b]);
    dp_free(tl->blocks);
    ff_free(rt);
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
        DP_LOG(LOG_POLICY, LOG_ERROR, abs_now(rt), "%s fails: %s", rt->r->policy,
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
        /* Out of memory fails the run: a policy that dropped the error would
         * wait for an event that never comes (in a world of failing devices
         * the queue never empties, so not even a stall would end it). */
        prt_ev **nb = dp_realloc(tl->blocks, (tl->n_blocks + 1) * sizeof *nb);
        if (!nb) {
            fail_oom(rt);
            return DP_ENOMEM;
        }
        tl->blocks = nb;
        prt_ev *blk = dp_calloc(256, sizeof *blk);
        if (!blk) {
            fail_oom(rt);
            return DP_ENOMEM;
        }
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

/* The epoch ends at absolute time now: record it, move on.  The same
 * for a simulated epoch and a replayed one. */
static int end_epoch_at(prt *rt, double now)
{
    if (res_add_epoch(rt->r, rt->epoch, now)) {
        fail_oom(rt);
        return DP_ENOMEM;
    }
    if (rt->epoch >= rt->s->training.epochs) {
        rt->finished = 1;
        return 0;
    }
    rt->epoch++;
    for (size_t d = 0; d < rt->n; d++)
        rt->left[d] = rt->share[d];
    return 1;
}

int prt_end_epoch(prt *rt)
{
    jrec(rt, (jent){.kind = J_EPOCH, .r = sim_now(rt->e)});
    DP_LOG(LOG_POLICY, LOG_INFO, abs_now(rt), "%s: epoch %d of %d ends", rt->r->policy, rt->epoch,
           rt->s->training.epochs);
    int rc = end_epoch_at(rt, abs_now(rt));
    if (rc > 0 && rt->periodic)
        rt->boundary = 1; /* prt_run tries a rebase once this handler returns */
    return rc;
}

int prt_periodic(const prt *rt)
{
    return rt->periodic;
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

/* Every device's histogram edges at twice the bin width: edge j of the
 * new width is edge 2j of the old (k * res_s is exact in both), so nothing
 * is computed and no histogram depends on when this happens. */
static void tl_widen(timeline *tl)
{
    for (size_t d = 0; d < tl->ndev; d++) {
        double *c = tl->cum + d * (TL_BINS + 1) * RES_ACT_COUNT;
        for (size_t j = 1; j <= TL_BINS / 2; j++)
            memcpy(c + j * RES_ACT_COUNT, c + 2 * j * RES_ACT_COUNT, RES_ACT_COUNT * sizeof *c);
        tl->next_edge[d] = (tl->next_edge[d] + 1) / 2;
    }
    tl->res_s *= 2;
    tl->gen++;
}

/* Device d (a timeline device, histograms on) ran activity cur from engine
 * time since to now, its running times at since being S (not yet charged
 * for this interval) and its folded ones rt->tot's: the cumulative times at
 * every bin edge up to now.  An edge's engine time is k * res_s - base, the
 * same arithmetic wherever the edge is computed (a fast-forward included). */
static void tl_edges(prt *rt, size_t d, res_activity cur, double since, double now, const double *S)
{
    timeline *tl = TL(rt);
    const double *T = rt->tot ? rt->tot->act_time + d * RES_ACT_COUNT : NULL;
    for (;;) {
        size_t k = tl->next_edge[d];
        if (k > TL_BINS) {
            tl_widen(tl);
            continue;
        }
        double xr = (double)k * tl->res_s - rt->base;
        if (xr > now) {
            tl->next_xr[d] = xr;
            tl->edge_gen[d] = tl->gen;
            return;
        }
        double *c = tl->cum + (d * (TL_BINS + 1) + k) * RES_ACT_COUNT;
        for (int a = 0; a < RES_ACT_COUNT; a++)
            c[a] = T ? T[a] + S[a] : S[a];
        c[cur] += xr - since;
        tl->next_edge[d] = k + 1;
    }
}

/* Switch from exact segments to histograms at absolute time now: the edges
 * the segments so far cover, from the segments. */
static int go_coarse(prt *rt, double now)
{
    timeline *tl = TL(rt);
    double *run = dp_calloc(tl->ndev * RES_ACT_COUNT, sizeof *run);
    tl->cum = dp_calloc(tl->ndev * (TL_BINS + 1) * RES_ACT_COUNT, sizeof *tl->cum);
    if (!run || !tl->cum) {
        dp_free(run);
        return DP_ENOMEM;
    }
    tl->coarse = 1;
    tl->res_s = 1e-3;
    while (now >= tl->res_s * TL_BINS)
        tl->res_s *= 2;
    for (size_t d = 0; d < tl->ndev; d++)
        tl->next_edge[d] = 1;
    tl->gen++;
    /* a device's segments are in time order and end before now, so below
     * the last edge */
    for (size_t i = 0; i < rt->r->n_segments; i++) {
        const res_segment *sg = &rt->r->segments[i];
        size_t d = (size_t)sg->device;
        double *cd = run + d * RES_ACT_COUNT;
        for (size_t k = tl->next_edge[d]; k <= TL_BINS && (double)k * tl->res_s <= sg->t1_s; k++) {
            double x = (double)k * tl->res_s, *c = tl->cum + (d * (TL_BINS + 1) + k) * RES_ACT_COUNT;
            memcpy(c, cd, RES_ACT_COUNT * sizeof *c);
            if (x > sg->t0_s)
                c[sg->act] += x - sg->t0_s;
            tl->next_edge[d] = k + 1;
        }
        cd[sg->act] += sg->t1_s - sg->t0_s;
    }
    dp_free(run);
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

/* Device d's current activity a ends at absolute time t1: the segment hook
 * and, before histograms, an exact segment (a device's activity that goes
 * on through an epoch boundary stays one segment). */
static void timeline_seg(prt *rt, size_t d, res_activity a, double t1)
{
    timeline *tl = TL(rt);
    double t0 = tl->seg_t0[d];
    tl->seg_t0[d] = t1;
    if (!(t1 > t0))
        return;
    if (segment_fn)
        segment_fn(segment_ctx, d, (int)a, t0, t1);
    if (d >= tl->ndev || tl->coarse)
        return;
    if (rt->r->n_segments < SEG_EXACT) {
        if (res_add_segment(rt->r, (int)d, a, t0, t1))
            fail_oom(rt);
        return;
    }
    if (go_coarse(rt, t1))
        fail_oom(rt); /* set_act_at then adds this interval to the histograms */
}

/* Histograms -> segments: each bin shows its dominant activity.  After the
 * run's records are whole-run totals (prt_results). */
static void timeline_finish(prt *rt, double T)
{
    timeline *tl = TL(rt);
    if (!tl->coarse)
        return;
    rt->r->timeline_res_s = tl->res_s;
    for (size_t d = 0; d < tl->ndev; d++) {
        const double *c = tl->cum + d * (TL_BINS + 1) * RES_ACT_COUNT;
        const double *end = rt->act_time + d * RES_ACT_COUNT; /* the edge at T */
        size_t ne = tl->next_edge[d];
        for (size_t k = 0; k < ne; k++) {
            int last = k + 1 >= ne;
            double t0 = (double)k * tl->res_s, t1 = last ? T : fmin((double)(k + 1) * tl->res_s, T);
            if (t1 <= t0)
                break;
            const double *lo = c + k * RES_ACT_COUNT, *hi = last ? end : c + (k + 1) * RES_ACT_COUNT;
            int best = RES_ACT_WAIT;
            double bv = -1;
            for (int a = 0; a < RES_ACT_COUNT; a++)
                if (hi[a] - lo[a] > bv) {
                    bv = hi[a] - lo[a];
                    best = a;
                }
            if (res_add_segment(rt->r, (int)d, (res_activity)best, t0, t1)) {
                fail_oom(rt);
                return;
            }
        }
    }
}

/* Device d changes to activity a at engine time now (a may be its current
 * one: the interval is closed and goes on). */
static void set_act_at(prt *rt, size_t d, res_activity a, double now)
{
    timeline *tl = TL(rt);
    res_activity cur = rt->act[d];
    double since = rt->act_since[d], *S = rt->act_time + d * RES_ACT_COUNT;
    if (segment_fn || (!tl->coarse && d < tl->ndev))
        timeline_seg(rt, d, cur, rt->base + now);
    /* below the next edge (cached), nothing to compute */
    if (tl->coarse && d < tl->ndev && !(tl->edge_gen[d] == tl->gen && now < tl->next_xr[d]))
        tl_edges(rt, d, cur, since, now, S);
    S[cur] += now - since;
    rt->act[d] = a;
    rt->act_since[d] = now;
}

int prt_hints(const prt *rt)
{
    return rt->n >= PREFETCH_MIN_DEVICES;
}

void prt_prefetch_act(const prt *rt, size_t d)
{
    if (d >= rt->n)
        return;
    __builtin_prefetch(&rt->act[d]);
    __builtin_prefetch(&rt->act_since[d]);
    __builtin_prefetch(&rt->act_time[d * RES_ACT_COUNT]);
    __builtin_prefetch(&rt->act_time[d * RES_ACT_COUNT + RES_ACT_COUNT - 1]);
}

void prt_set_act(prt *rt, size_t d, res_activity a)
{
    if (rt->act[d] == a)
        return;
    jrec_act(rt, d, a);
    set_act_at(rt, d, a, sim_now(rt->e));
}

void prt_rec_coll(prt *rt, size_t d, size_t next, double bytes, double busy_s)
{
    jrec(rt, (jent){.kind = J_COLL, .d = (int32_t)d, .n = (int32_t)next, .r0 = busy_s, .v1 = bytes});
    rt->coll_bytes[d] += bytes;
    rt->coll_busy_s[d] += busy_s;
    rt->coll_recv_s[next] += busy_s;
}

void prt_rec_ring(prt *rt, double chunk, int rounds)
{
    jrec(rt, (jent){.kind = J_RING, .n = rounds, .v1 = chunk});
    coll_ring_account(rt, chunk, rounds);
}

/* ---- compute ------------------------------------------------------------------- */

/* The FLOP of n samples (part of a batch), as the FLOPS bins count it. */
static double batch_flops(const prt *rt, int n, double part)
{
    return rt->s->model.flops_per_sample * n * part;
}

/* A batch of device d, started at engine time t0 and ending at engine time
 * now, is done: its records, with the engine's origin at absolute `base`. */
static void compute_done_at(prt *rt, size_t d, double t0, double now, int n, double part, int step,
                            double base)
{
    rt->busy_compute[d] += now - t0;
    if (!(step & J_FOLDED)) { /* a folded batch but the last: the device computes on */
        busy_advance_to(rt, now);
        TL(rt)->computing--;
    }
    step &= 1;
    /* a batch run in pieces (forward, backward) counts once, when whole */
    rt->part_done[d] += step ? 1 : part;
    if (rt->part_done[d] >= 1 - 1e-9) {
        rt->batches[d]++;
        rt->part_done[d] = 0;
    }
    rt->samples_done += n * part;
    prt_add_flops(rt, base + t0, base + now, batch_flops(rt, n, part));
}

static void on_compute_done(sim_engine *e, void *ctx, uint64_t id)
{
    (void)id;
    compute_slot *c = ctx;
    prt *rt = c->rt;
    double now = sim_now(e);
    c->ev = 0;
    jrec(rt, (jent){.kind = J_CDONE,
                    .a = (uint8_t)c->step,
                    .d = (int32_t)c->d,
                    .n = c->n,
                    .r = now,
                    .r0 = c->t0,
                    .v1 = c->part});
    compute_done_at(rt, c->d, c->t0, now, c->n, c->part, c->step, rt->base);
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
    *c = (compute_slot){rt, d, n, part, 0, sim_now(rt->e), fn, ctx, 0, 0, 0, 0};
    if (dt_out)
        *dt_out = dt;
    prt_set_act(rt, d, RES_ACT_COMPUTE);
    if (!(c->ev = sim_at(rt->e, sim_now(rt->e) + dt, on_compute_done, c))) {
        fail_oom(rt);
        return DP_ENOMEM;
    }
    jrec(rt, (jent){.kind = J_CSTART, .r = sim_now(rt->e)});
    busy_advance(rt);
    TL(rt)->computing++;
    return 0;
}

/* DPSIM_COMPUTE_PER_BATCH=1: one event per batch always (to compare). */
static int per_batch_only = -1;

void prt_set_compute_per_batch(int on)
{
    per_batch_only = on != 0;
}

static int fold_allowed(void)
{
    if (per_batch_only < 0)
        per_batch_only = dp_env_flag("DPSIM_COMPUTE_PER_BATCH");
    return !per_batch_only;
}

/* Batch j (0-based) of a fold started at t0: its samples, and its end
 * from t (its start), as the chain of events would have computed it. */
static inline int fold_n(const compute_slot *c, int64_t j)
{
    int64_t rest = c->fold - j * c->n;
    return rest < c->n ? (int)rest : c->n;
}

/* Credit the batches of a fold that end before engine time upto (at or
 * before, unless strict: a batch ending at the instant its device drops is
 * lost, as its pending event would be), in order, each with the records (and journal entry) its own event
 * would have made; the last one (if credited) as the end of the computation. Returns the start of the first
 * batch not credited and its index. */
static double fold_credit(prt *rt, compute_slot *c, double upto, int strict, int64_t *next)
{
    int64_t nb = (c->fold + c->n - 1) / c->n;
    double t = c->t0;
    int64_t j = 0;
    for (; j < nb; j++) {
        int n = fold_n(c, j);
        double t1 = t + (n == c->n ? c->w_full : c->w_last);
        if (t1 > upto || (strict && t1 == upto))
            break;
        int flag = j + 1 < nb ? J_FOLDED : 0;
        jrec(rt, (jent){.kind = J_CDONE,
                        .a = (uint8_t)flag,
                        .d = (int32_t)c->d,
                        .n = n,
                        .r = t1,
                        .r0 = t,
                        .v1 = 1.0});
        compute_done_at(rt, c->d, t, t1, n, 1.0, flag, rt->base);
        t = t1;
    }
    *next = j;
    return t;
}

static void on_fold_done(sim_engine *e, void *ctx, uint64_t id)
{
    (void)id;
    compute_slot *c = ctx;
    prt *rt = c->rt;
    c->ev = 0;
    int64_t next;
    fold_credit(rt, c, sim_now(e), 0, &next);
    c->fold = 0;
    prt_set_act(rt, c->d, rt->coll_dev[c->d] ? RES_ACT_SEND : RES_ACT_WAIT);
    c->fn(rt, c->ctx);
}

int prt_compute_left(prt *rt, size_t d, int bs, prt_fn fn, void *ctx)
{
    int64_t left = rt->left[d];
    cmp_model *cm = world_compute(rt->w);
    if (left <= 0 || bs < 1)
        return prt_fail(rt, DP_EINPUT, "device %s: a run of batches with %lld samples left in batches of %d",
                        rt->s->devices[d].name, (long long)left, bs);
    if (left <= bs || !fold_allowed() || !cmp_plain(cm, d)) { /* one batch, then again */
        int n = left < bs ? (int)left : bs;
        rt->left[d] -= n;
        return prt_compute(rt, d, n, 1.0, fn, ctx, NULL);
    }
    compute_slot *c = &TL(rt)->cslots[d];
    double now = sim_now(rt->e);
    int last = (int)(left % bs);
    double w_full = cmp_batch_s(cm, d, bs, now, 1.0),
           w_last = last ? cmp_batch_s(cm, d, last, now, 1.0) : w_full;
    *c = (compute_slot){rt, d, bs, 1.0, 0, now, fn, ctx, 0, left, w_full, w_last};
    double t = now;
    for (int64_t j = 0, nb = (left + bs - 1) / bs; j < nb; j++)
        t += fold_n(c, j) == bs ? w_full : w_last;
    rt->left[d] = 0;
    prt_set_act(rt, d, RES_ACT_COMPUTE);
    if (!(c->ev = sim_at(rt->e, t, on_fold_done, c))) {
        fail_oom(rt);
        return DP_ENOMEM;
    }
    jrec(rt, (jent){.kind = J_CSTART, .r = now});
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
    double now = abs_now(rt);
    jbreak(rt); /* the data distribution is not journaled */
    if (x->is_data == 1) {
        rt->r->devices[d].data_ready_s = now;
        if (now > rt->tsend_s) {
            rt->tsend_s = now;
            busy_advance(rt);
            TL(rt)->busy_at_tsend = rt->tot ? rt->tot->busy_int + TL(rt)->busy_int : TL(rt)->busy_int;
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
    jbreak(rt);
    sim_cancel(rt->e, c->ev);
    c->ev = 0;
    if (c->fold) { /* the batches done by now count; the rest is left undone */
        int64_t next;
        c->t0 = fold_credit(rt, c, sim_now(rt->e), 1, &next);
        rt->left[d] = c->fold - (next + 1) * c->n > 0 ? c->fold - (next + 1) * c->n : 0;
        c->fold = 0;
    }
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
    jbreak(rt);
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
    jbreak(rt);
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

/* ---- epoch boundaries: rebase and fast-forward ------------------------------
 *
 * In a periodic world (prt_periodic) a policy with a steady_state hook ends
 * an epoch, and starts the next from an event at now.  Once that handler
 * has returned, if nothing but events at now is pending (no batch,
 * collective or flow in flight), the engine's clock restarts at 0
 * (sim_rebase, exact) and base grows by the epoch's engine time: one
 * addition per epoch.  From there on, an epoch is the same deterministic
 * function of the state at its start, in engine time, whatever its base.
 *
 * The journal keeps the records of the current epoch (jent, engine times),
 * each compared with the previous epoch's entry it overwrites (on arrival;
 * a J_ACT, which grows while devices change at the same time, when closed).
 * At the boundary after epoch j: if epochs j-1 and j were journaled whole
 * (no unjournaled record, no network traffic), their journals, lengths and
 * event counts are equal bit for bit, and the state now (runtime and
 * policy) equals the state at the start of epoch j, then epoch j+1 would
 * repeat epoch j, and so would every later one: the journal is replayed for
 * the remaining epochs through the same record functions with each epoch's
 * base, which is the arithmetic of the full simulation, so the results are
 * the same bits.  Only the order across independent accumulators may
 * differ (replay_acts_by_device, ring_acc_apply), never the order of the
 * additions into one.  The run gets the statistic fast_forward (a = first
 * replayed epoch, b = last). */

static int ff_enabled = 1;
static policy_progress_fn progress_fn;
static void *progress_ctx;

void policy_set_fast_forward(int on)
{
    ff_enabled = on != 0;
}

/* Bytes of one epoch's journal (entries and device lists); an epoch with
 * more is simulated, never fast-forwarded. */
#define J_MAX ((size_t)64 << 20)

typedef struct ffj {
    jent *v; /* this epoch's entries; v[n, n_prev) still the previous epoch's */
    size_t n, n_prev, cap;
    int32_t *dv; /* J_ACT's devices, likewise: dv[nd, nd_prev) the previous epoch's */
    size_t nd, nd_prev, dcap;
    jent open_prev; /* the previous epoch's entry at v[n - 1] while v[n - 1] is an open J_ACT */
    int open;       /* v[n - 1] is a J_ACT still growing, compared when closed */
    int last_kind;  /* of the last entry journaled */
    int n_ends;     /* J_EPOCH entries in this epoch's journal */
    int on;         /* journaling this epoch: it began at a rebase, nothing unjournaled since */
    int match;      /* every entry so far equals the previous epoch's */
    int prev_ok;    /* v[0, n_prev) was a whole epoch */
    double span_prev;
    uint64_t ev0, ev_prev;   /* events at this epoch's start; events of the previous epoch */
    unsigned char *st, *tmp; /* state at this epoch's start (st_n bytes, 0: unknown); scratch */
    size_t st_n, st_cap, tmp_cap;
    prt_sums *ep; /* the running records of the last epoch closed (epoch_close) */
    /* per link: bytes and busy seconds of the epoch just closed (net_fold),
     * and of the one before it */
    double *net_ep, *net_prev;
    size_t n_links;
    int dead; /* journal given up for the run (too large, out of memory) */
} ffj;

/* Every group's speed and link, every WAN link constant; no noise, no
 * failures, stragglers or outages: nothing in the world depends on the
 * absolute time or draws random numbers. */
static int world_periodic(const scn_scenario *s)
{
    if (scn_is_dynamic(s))
        return 0;
    for (size_t i = 0; i < s->n_groups; i++) {
        const scn_group *g = &s->groups[i];
        if (g->count > 0 && (g->noise_cv > 0 || g->speed_trace || g->link.up_trace || g->link.down_trace))
            return 0;
    }
    for (size_t i = 0; i < s->n_wan; i++)
        if (s->wan[i].trace)
            return 0;
    return 1;
}

static void ff_init(prt *rt)
{
    /* one epoch has no boundary to fold at or replay from (its end ends
     * the run): nothing to keep, 144 MB at 10^6 devices */
    if (rt->ff || !rt->pdef || !rt->pdef->steady_state || rt->s->training.epochs < 2 ||
        !world_periodic(rt->s))
        return;
    ffj *f = dp_calloc(1, sizeof *f);
    prt_sums *tot = sums_new(rt->n), *ep = sums_new(rt->n);
    if (f) {
        f->n_links = net_link_count(world_net(rt->w));
        f->net_ep = dp_calloc(2 * f->n_links + 1, sizeof *f->net_ep);
        f->net_prev = dp_calloc(2 * f->n_links + 1, sizeof *f->net_prev);
    }
    if (!f || !f->net_ep || !f->net_prev || !tot || !ep) { /* not periodic then: simulated as before */
        if (f) {
            dp_free(f->net_ep);
            dp_free(f->net_prev);
        }
        dp_free(f);
        sums_free(tot);
        sums_free(ep);
        return;
    }
    f->ep = ep;
    rt->ff = f;
    rt->tot = tot;
    rt->periodic = 1;
}

static void ff_free(prt *rt)
{
    ffj *f = rt->ff;
    if (!f)
        return;
    dp_free(f->v);
    dp_free(f->dv);
    dp_free(f->st);
    dp_free(f->tmp);
    dp_free(f->net_ep);
    dp_free(f->net_prev);
    sums_free(f->ep);
    dp_free(f);
}

static int same_bits(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

static void jdrop(ffj *f)
{
    f->dead = 1;
    f->on = 0;
    dp_free(f->v);
    dp_free(f->dv);
    f->v = NULL;
    f->dv = NULL;
    f->n = f->n_prev = f->cap = 0;
    f->nd = f->nd_prev = f->dcap = 0;
    f->open = 0;
}

/* Room for one more item of `size` bytes in *buf (cap items); 0 when the
 * journal would pass J_MAX or memory is out (the journal is dropped). */
static int jroom(ffj *f, void **buf, size_t *cap, size_t used, size_t size)
{
    if (used < *cap)
        return 1;
    size_t nc = *cap ? 2 * *cap : 4096;
    size_t total = (f->cap * sizeof *f->v + f->dcap * sizeof *f->dv) + (nc - *cap) * size;
    void *nb = total <= J_MAX ? dp_realloc(*buf, nc * size) : NULL;
    if (!nb) {
        jdrop(f);
        return 0;
    }
    *buf = nb;
    *cap = nc;
    return 1;
}

/* The open J_ACT at v[n - 1] is complete: compare it with the previous
 * epoch's entry it overwrote. */
static void jclose(ffj *f)
{
    if (f->open && (f->n > f->n_prev || memcmp(&f->v[f->n - 1], &f->open_prev, sizeof(jent)) != 0))
        f->match = 0;
    f->open = 0;
}

/* Append e (compared with the previous epoch's entry it overwrites, bit
 * for bit, now or when closed for an open J_ACT). */
static void jrec(prt *rt, jent e)
{
    ffj *f = rt->ff;
    if (!f || !f->on)
        return;
    jclose(f);
    if (!jroom(f, (void **)&f->v, &f->cap, f->n, sizeof *f->v))
        return;
    jent *slot = &f->v[f->n];
    if (e.kind == J_ACT) {
        f->open = 1;
        f->open_prev = f->n < f->n_prev ? *slot : (jent){0};
    } else if (f->n >= f->n_prev || memcmp(slot, &e, sizeof e) != 0)
        f->match = 0;
    *slot = e;
    f->n++;
    f->last_kind = e.kind;
    f->n_ends += e.kind == J_EPOCH;
}

/* Device d changes to activity a now: appended to the open J_ACT when it
 * is for the same activity at the same time, else a new J_ACT. */
static void jrec_act(prt *rt, size_t d, res_activity a)
{
    ffj *f = rt->ff;
    if (!f || !f->on)
        return;
    double now = sim_now(rt->e);
    jent *last = f->open ? &f->v[f->n - 1] : NULL;
    if (!last || last->a != (uint8_t)a || !same_bits(last->r, now)) {
        jrec(rt, (jent){.kind = J_ACT, .a = (uint8_t)a, .d = (int32_t)f->nd, .r = now});
        if (!f->on)
            return;
        last = &f->v[f->n - 1];
    }
    if (!jroom(f, (void **)&f->dv, &f->dcap, f->nd, sizeof *f->dv))
        return;
    if (f->nd >= f->nd_prev || f->dv[f->nd] != (int32_t)d)
        f->match = 0;
    f->dv[f->nd++] = (int32_t)d;
    last->n++;
}

static void jbreak(prt *rt)
{
    if (rt->ff)
        rt->ff->on = 0;
}

static int put(unsigned char **buf, size_t *cap, size_t *off, const void *src, size_t len)
{
    if (*off + len > *cap) {
        size_t nc = *cap ? *cap : 256;
        while (nc < *off + len)
            nc *= 2;
        unsigned char *nb = dp_realloc(*buf, nc);
        if (!nb)
            return DP_ENOMEM;
        *buf = nb;
        *cap = nc;
    }
    memcpy(*buf + *off, src, len);
    *off += len;
    return 0;
}

/* The state that decides the run's future at a boundary, into f->tmp:
 * the runtime's (per device: share, left, activity, collectives, part of a
 * batch, transfers pending; what is in flight; pending events) then the
 * policy's.  Its size, 0 when the policy cannot tell, (size_t)-1 when out
 * of memory. */
static size_t state_now(prt *rt)
{
    ffj *f = rt->ff;
    size_t off = 0, n = rt->n, pend = sim_pending(rt->e);
    int ints[4] = {TL(rt)->computing != 0, rt->coll_active, rt->analytic_approx, 0};
    if (put(&f->tmp, &f->tmp_cap, &off, rt->share, n * sizeof *rt->share) ||
        put(&f->tmp, &f->tmp_cap, &off, rt->left, n * sizeof *rt->left) ||
        put(&f->tmp, &f->tmp_cap, &off, rt->act, n * sizeof *rt->act) ||
        put(&f->tmp, &f->tmp_cap, &off, rt->coll_dev, n * sizeof *rt->coll_dev) ||
        put(&f->tmp, &f->tmp_cap, &off, rt->part_done, n * sizeof *rt->part_done) ||
        put(&f->tmp, &f->tmp_cap, &off, rt->pending, n * sizeof *rt->pending) ||
        put(&f->tmp, &f->tmp_cap, &off, ints, sizeof ints) ||
        put(&f->tmp, &f->tmp_cap, &off, &pend, sizeof pend) ||
        put(&f->tmp, &f->tmp_cap, &off, &rt->gen, sizeof rt->gen))
        return (size_t)-1;
    for (;;) {
        size_t room = f->tmp_cap - off;
        size_t k = rt->pdef->steady_state(rt, rt->popts, f->tmp + off, room);
        if (k == 0)
            return 0;
        if (k <= room)
            return off + k;
        size_t need = off + k;
        unsigned char *nb = dp_realloc(f->tmp, need);
        if (!nb)
            return (size_t)-1;
        f->tmp = nb;
        f->tmp_cap = need;
    }
}

/* A clean boundary at engine time span, where the engine restarts at 0:
 * every device's current interval closes at span (and goes on from 0), the
 * running records fold into rt->tot, and into *ep too when given (the
 * epoch's subtotals). */
static void epoch_close(prt *rt, double span, prt_sums *ep)
{
    timeline *tl = TL(rt);
    for (size_t d = 0; d < rt->n; d++) {
        res_activity cur = rt->act[d];
        double since = rt->act_since[d], *S = rt->act_time + d * RES_ACT_COUNT;
        if (tl->coarse && d < tl->ndev)
            tl_edges(rt, d, cur, since, span, S);
        S[cur] += span - since;
        rt->act_since[d] = 0;
    }
    busy_advance_to(rt, span);
    tl->busy_t = 0;
    prt_sums run = running(rt);
    if (ep)
        sums_add(ep, &run, rt->n, 1);
    sums_add(rt->tot, &run, rt->n, 0);
    running_zero(rt);
}

/* One journaled epoch's activity intervals per timeline device, for the
 * bin edges inside a replayed epoch: device d's intervals are k in
 * [off[d], off[d + 1]) in time order, the last ending at the epoch's end;
 * interval k ran activity a[k] from the previous one's end (0 for the
 * first) to t[k].  The device's running times at the start of its
 * intervals 0, DC_EVERY, 2 DC_EVERY, ... are kept (chk, from chk_off[d]);
 * at any other interval they are added up from the one before it, with the
 * simulation's additions in its order (dc_running). */
#define DC_EVERY 64

typedef struct dev_changes {
    size_t *off, *chk_off;
    double *t, *chk;
    uint8_t *a;
    double *done; /* per J_CDONE of the journal: start, end (engine times), FLOP */
    size_t n_done;
} dev_changes;

static void dev_changes_free(dev_changes *c)
{
    dp_free(c->off);
    dp_free(c->chk_off);
    dp_free(c->t);
    dp_free(c->chk);
    dp_free(c->a);
    dp_free(c->done);
}

static inline double dc_since(const dev_changes *c, size_t d, size_t k)
{
    return k == c->off[d] ? 0 : c->t[k - 1];
}

/* Device d's running times at the start of its interval k into S. */
static void dc_running(const dev_changes *c, size_t d, size_t k, double *S)
{
    size_t i = k - c->off[d], j = c->off[d] + i / DC_EVERY * DC_EVERY;
    memcpy(S, c->chk + (c->chk_off[d] + i / DC_EVERY) * RES_ACT_COUNT, RES_ACT_COUNT * sizeof *S);
    for (; j < k; j++)
        S[c->a[j]] += c->t[j] - dc_since(c, d, j);
}

/* From the journal (the epoch just closed, of span engine seconds; each
 * device's activity now is the one it had at the epoch's start).  0,
 * DP_ENOMEM, or 1 when a device's subtotals would not be the epoch's
 * (never expected: the caller then replays in journal order). */
static int dev_changes_build(prt *rt, dev_changes *c, double span)
{
    ffj *f = rt->ff;
    size_t nt = TL(rt)->ndev;
    *c = (dev_changes){
        dp_calloc(nt + 1, sizeof *c->off), dp_calloc(nt + 1, sizeof *c->chk_off), NULL, NULL, NULL, NULL, 0};
    if (!c->off || !c->chk_off)
        return DP_ENOMEM;
    size_t nd = 0;
    for (size_t i = 0; i < f->n; i++)
        nd += f->v[i].kind == J_CDONE;
    if (!(c->done = dp_calloc(3 * nd + 1, sizeof *c->done)))
        return DP_ENOMEM;
    for (size_t i = 0; i < f->n; i++) {
        const jent *e = &f->v[i];
        if (e->kind != J_CDONE)
            continue;
        double *x = c->done + 3 * c->n_done++;
        x[0] = e->r0;
        x[1] = e->r;
        x[2] = batch_flops(rt, e->n, e->v1);
    }
    for (size_t k = 0; k < f->nd; k++)
        if ((size_t)f->dv[k] < nt)
            c->off[f->dv[k] + 1]++;
    for (size_t d = 0; d < nt; d++) {
        size_t m = c->off[d + 1] + 1; /* the epoch's end */
        c->chk_off[d + 1] = c->chk_off[d] + (m + DC_EVERY - 1) / DC_EVERY;
        c->off[d + 1] = c->off[d] + m;
    }
    size_t m = c->off[nt];
    c->t = dp_calloc(m + 1, sizeof *c->t);
    c->a = dp_calloc(m + 1, sizeof *c->a);
    c->chk = dp_calloc((c->chk_off[nt] + 1) * RES_ACT_COUNT, sizeof *c->chk);
    size_t *fill = dp_calloc(nt + 1, sizeof *fill);
    if (!c->t || !c->a || !c->chk || !fill) {
        dp_free(fill);
        return DP_ENOMEM;
    }
    /* first each interval's end and the activity after it */
    for (size_t i = 0; i < f->n; i++) {
        const jent *e = &f->v[i];
        if (e->kind != J_ACT)
            continue;
        for (int32_t k = 0; k < e->n; k++) {
            size_t d = (size_t)f->dv[e->d + k];
            if (d >= nt)
                continue;
            size_t at = c->off[d] + fill[d]++;
            c->t[at] = e->r;
            c->a[at] = e->a;
        }
    }
    dp_free(fill);
    /* then, device by device, the activity during each interval and the
     * running times as the simulation added them */
    double S[RES_ACT_COUNT];
    for (size_t d = 0; d < nt; d++) {
        size_t end = c->off[d + 1] - 1;
        c->t[end] = span;
        memset(S, 0, sizeof S);
        res_activity cur = rt->act[d];
        for (size_t k = c->off[d]; k <= end; k++) {
            res_activity next = k < end ? (res_activity)c->a[k] : cur;
            if ((k - c->off[d]) % DC_EVERY == 0)
                memcpy(c->chk + (c->chk_off[d] + (k - c->off[d]) / DC_EVERY) * RES_ACT_COUNT, S, sizeof S);
            c->a[k] = (uint8_t)cur;
            S[cur] += c->t[k] - dc_since(c, d, k);
            cur = next;
        }
        if (cur != rt->act[d] || memcmp(S, f->ep->act_time + d * RES_ACT_COUNT, sizeof S) != 0)
            return 1;
    }
    return 0;
}

/* The bin edges of timeline device d inside a replayed epoch of span
 * engine seconds: each from the interval that holds it (the first ending
 * at or after it, as in the simulation, where an interval's edges are
 * computed when it ends), found by bisection. */
static void replay_edges(prt *rt, const dev_changes *c, size_t d, double span)
{
    timeline *tl = TL(rt);
    size_t lo = c->off[d], hi = c->off[d + 1];
    double S[RES_ACT_COUNT];
    for (;;) {
        if (tl->next_edge[d] > TL_BINS)
            tl_widen(tl);
        double xr = (double)tl->next_edge[d] * tl->res_s - rt->base;
        if (xr > span)
            return;
        size_t l = lo, h = hi - 1; /* c->t[hi - 1] == span >= xr */
        while (l < h) {
            size_t mid = l + (h - l) / 2;
            if (c->t[mid] >= xr)
                h = mid;
            else
                l = mid + 1;
        }
        dc_running(c, d, l, S);
        tl_edges(rt, d, (res_activity)c->a[l], dc_since(c, d, l), c->t[l], S);
        lo = l + 1 < hi ? l + 1 : hi - 1;
    }
}

/* Replay the journal v[0, n) (one epoch of `span` engine seconds and `ev`
 * events, just closed) for every epoch left, each with its own base.  With
 * histograms (and no segment hook) an epoch costs its bin edges, its FLOPS
 * bins and one addition per record (the epoch's subtotals, f->ep);
 * otherwise every record is replayed in journal order, as simulated. */
static void ff_replay(prt *rt, double span, uint64_t ev)
{
    ffj *f = rt->ff;
    timeline *tl = TL(rt);
    int first = rt->epoch;
    dev_changes ch = {0};
    int by_sums = 0, built = 0;
    const int32_t *dv = f->dv;
    while (!rt->finished && !rt->failed) {
        double base = rt->base;
        if (!built && tl->coarse && !segment_fn) { /* histograms on (perhaps since the last epoch replayed) */
            built = 1;
            int rc = dev_changes_build(rt, &ch, span);
            if (rc == DP_ENOMEM) {
                fail_oom(rt);
                break;
            }
            by_sums = rc == 0;
        }
        if (by_sums) {
            for (size_t d = 0; d < tl->ndev; d++)
                replay_edges(rt, &ch, d, span);
            /* the batches' FLOPS bins and the epoch's end (the journal's last entry) */
            for (size_t k = 0; k < ch.n_done; k++) {
                const double *x = ch.done + 3 * k;
                prt_add_flops(rt, base + x[0], base + x[1], x[2]);
            }
            end_epoch_at(rt, base + f->v[f->n - 1].r);
            sums_add(rt->tot, f->ep, rt->n, 0);
        }
        for (size_t i = 0; i < f->n && !by_sums && !rt->failed; i++) {
            const jent *e = &f->v[i];
            switch (e->kind) {
            case J_ACT:
                for (int32_t k = 0; k < e->n; k++)
                    set_act_at(rt, (size_t)dv[e->d + k], (res_activity)e->a, e->r);
                break;
            case J_CSTART:
                busy_advance_to(rt, e->r);
                tl->computing++;
                break;
            case J_CDONE:
                compute_done_at(rt, (size_t)e->d, e->r0, e->r, e->n, e->v1, e->a, base);
                break;
            case J_RING:
                coll_ring_account(rt, e->v1, e->n);
                break;
            case J_COLL:
                rt->coll_bytes[e->d] += e->v1;
                rt->coll_busy_s[e->d] += e->r0;
                rt->coll_recv_s[e->n] += e->r0;
                break;
            case J_SRV:
                rt->server_bytes[e->d] += e->v1;
                break;
            default: /* J_EPOCH, the journal's last entry */
                end_epoch_at(rt, base + e->r);
                break;
            }
        }
        if (!by_sums)
            epoch_close(rt, span, NULL);
        net_fold_add(world_net(rt->w), f->net_ep);
        rt->ff_events += ev;
        rt->base = base + span; /* the next epoch's origin; after the last, Ttotal */
        tl->gen++;
    }
    dev_changes_free(&ch);
    int last = rt->s->training.epochs;
    DP_LOG(LOG_POLICY, LOG_INFO, rt->base, "%s: fast_forward: epochs %d-%d repeat epoch %d", rt->r->policy,
           first, last, first - 1);
    if (!rt->failed)
        prt_stat(rt, "fast_forward", RES_SCOPE_RUN, first, last, last - first + 1);
    if (progress_fn)
        progress_fn(progress_ctx, rt->base, sim_events_run(rt->e) + rt->ff_events, 1.0);
}

/* After the handler that ended an epoch: rebase if the boundary is clean,
 * then fast-forward or start journaling the new epoch.  0, or DP_ENOMEM
 * (the run failed). */
static int ff_boundary(prt *rt)
{
    rt->boundary = 0;
    ffj *f = rt->ff;
    double span = sim_now(rt->e);
    uint64_t ev = sim_events_run(rt->e);
    int whole = f->on && f->n > 0 && f->last_kind == J_EPOCH && f->n_ends == 1;
    net *nt = world_net(rt->w);
    size_t sn = 0;
    int clean = TL(rt)->computing == 0 && rt->coll_active == 0 && net_flows_active(nt) == 0 &&
                net_flows_pending(nt) == 0;
    if (clean && (sn = state_now(rt)) == (size_t)-1) {
        fail_oom(rt);
        return DP_ENOMEM;
    }
    if (!clean || sn == 0 || sim_rebase(rt->e)) {
        /* not a clean boundary: time goes on from here, unjournaled */
        f->on = 0;
        f->prev_ok = 0;
        f->st_n = 0;
        return 0;
    }
    epoch_close(rt, span, f->ep);
    double *np = f->net_prev;
    f->net_prev = f->net_ep;
    f->net_ep = np;
    net_fold(nt, f->net_ep); /* no flow is active: a clean boundary */
    rt->base += span;
    TL(rt)->gen++; /* edges' engine times move with the base */
    int repeats = whole && f->prev_ok && f->match && f->n == f->n_prev && f->nd == f->nd_prev &&
                  same_bits(span, f->span_prev) && ev - f->ev0 == f->ev_prev && sn == f->st_n &&
                  memcmp(f->tmp, f->st, sn) == 0 &&
                  memcmp(f->net_ep, f->net_prev, 2 * f->n_links * sizeof *f->net_ep) == 0;
    if (repeats && ff_enabled) {
        /* v holds the epoch just ended; base is already the next one's origin */
        ff_replay(rt, span, ev - f->ev0);
        return rt->failed ? DP_ENOMEM : 0;
    }
    f->prev_ok = whole;
    f->n_prev = whole ? f->n : 0;
    f->nd_prev = whole ? f->nd : 0;
    f->span_prev = span;
    f->ev_prev = ev - f->ev0;
    unsigned char *t = f->st;
    size_t tc = f->st_cap;
    f->st = f->tmp;
    f->st_cap = f->tmp_cap;
    f->st_n = sn;
    f->tmp = t;
    f->tmp_cap = tc;
    f->n = 0;
    f->nd = 0;
    f->open = 0;
    f->n_ends = 0;
    f->match = 1;
    f->on = !f->dead;
    f->ev0 = ev;
    return 0;
}

/* ---- run and results ---------------------------------------------------------- */

static volatile sig_atomic_t *interrupt_flag;

void policy_set_interrupt(volatile sig_atomic_t *flag)
{
    interrupt_flag = flag;
}

void policy_set_progress(policy_progress_fn fn, void *ctx)
{
    progress_fn = fn;
    progress_ctx = ctx;
}

int prt_run(prt *rt)
{
    ff_init(rt);
    /* Polling the flag every 4096 events keeps the check off the hot path
     * and still stops within microseconds of host time. */
    uint64_t k = 0;
    while (!rt->finished && !rt->failed && sim_step(rt->e)) {
        DP_LOG(LOG_ENGINE, LOG_TRACE, abs_now(rt), "event %llu done, %zu pending",
               (unsigned long long)sim_events_run(rt->e), sim_pending(rt->e));
        if (rt->boundary && !rt->finished && !rt->failed && ff_boundary(rt))
            break; /* out of memory (the run failed) */
        if ((++k & 4095) != 0)
            continue;
        if (progress_fn) {
            double work = (double)rt->s->dataset.samples * rt->s->training.epochs;
            progress_fn(progress_ctx, abs_now(rt), sim_events_run(rt->e),
                        work > 0 ? rt->samples_done / work : 0);
        }
        if (interrupt_flag && *interrupt_flag)
            return dp_err_set(rt->err, DP_ERUN,
                              "interrupted at simulated t = %.6g s; this run was not stored", abs_now(rt));
        /* The network stalled for good (out of memory): in a world whose
         * devices keep failing and recovering the queue never empties, so
         * the run would go on to the event limit. */
        if (net_out_of_memory(world_net(rt->w)))
            break;
        if (sim_events_run(rt->e) >= PRT_MAX_EVENTS)
            return dp_err_set(rt->err, DP_ERUN,
                              "stopped after %llu events (the limit on events per run) at simulated "
                              "t = %.6g s of a run this large; use fewer epochs or devices, or analytic "
                              "collectives",
                              (unsigned long long)sim_events_run(rt->e), abs_now(rt));
    }
    if (rt->failed)
        return rt->err ? rt->err->code : DP_ERUN;
    if (sim_error(rt->e)) /* e.g. a trace change or a completion could not be scheduled */
        return dp_err_set(rt->err, DP_ERUN,
                          "stopped at simulated t = %.6g s: an event could not be scheduled (%s); "
                          "this run was not stored",
                          abs_now(rt), sim_error(rt->e) == DP_ENOMEM ? "out of memory" : "invalid time");
    if (!rt->finished && net_out_of_memory(world_net(rt->w)))
        return dp_err_set(rt->err, DP_ENOMEM,
                          "stopped at simulated t = %.6g s: out of memory computing the network's shares; "
                          "this run was not stored",
                          abs_now(rt));
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
                          abs_now(rt), net_flows_active(n) + net_flows_pending(n),
                          len ? "zero capacity with no recovery on " : "nothing left to happen", stuck);
    }
    return 0;
}

res_run *prt_results(prt *rt)
{
    res_run *r = rt->r;
    double T = abs_now(rt), now = sim_now(rt->e);
    for (size_t d = 0; d < rt->n; d++) /* close every open interval at T */
        set_act_at(rt, d, rt->act[d], now);
    if (rt->tot) { /* fold, then the totals become the records read below */
        prt_sums run = running(rt);
        sums_add(rt->tot, &run, rt->n, 0);
        sums_add(&run, rt->tot, rt->n, 1); /* run's arrays are the runtime's; its scalars copies */
        rt->samples_done = run.samples_done;
        TL(rt)->busy_int = run.busy_int;
        sums_free(rt->tot);
        rt->tot = NULL;
    }
    timeline_finish(rt, T);
    r->tsend_s = rt->tsend_s;
    r->ttotal_s = T;
    r->ttraining_s = T - rt->tsend_s;
    r->samples_processed = rt->samples_done;
    r->events = sim_events_run(rt->e) + rt->ff_events;
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
