/* runtime.c: the runtime every policy shares (runtime.h).
 *
 * The runtime is four files (runtime_impl.h holds what they share):
 *  runtime.c          a run's life: new, events, epochs, results
 *  runtime_records.c  the records: activity, timeline, FLOPS bins, sums
 *  runtime_work.c     compute, the initial distribution, failures
 *  runtime_ff.c       the event loop, the epoch journal and fast-forward
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
#include "runtime_energy.h"
#include "runtime_impl.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- accessors (runtime.h) ---------------------------------------------------- */

const policy_def *prt_policy(const prt *rt)
{
    return rt->pdef;
}

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
    sym_touch(rt, d);
    jrec(rt, (jent){.kind = J_SRV, .d = (int32_t)d, .v1 = bytes});
    rt->server_bytes[d] += bytes;
}

/* A calloc'd array's pages, touched now (writing the zeros it holds). */
static void touch(void *p, size_t bytes)
{
    if (p)
        memset(p, 0, bytes);
}

void prt_warm(prt *rt)
{
    /* Only the records every device writes whatever the plan: its share,
     * and its activity (every open interval is closed at the end).  Not
     * those only a participant writes (its samples left, readiness,
     * pending transfers, busy time, batches, server bytes, handlers,
     * compute slot and transfer contexts), nor room for a flow per device
     * (net_reserve, which also clears the net's whole per-flow lists):
     * C-ADP, the policy that plans on a second thread, leaves devices out
     * (half of them at 10^5 devices on the paper testbed), and what a
     * participant writes faults in when it first does (issue 39: 13 MiB
     * of C-ADP's peak at 10^5 devices). */
    size_t n = rt->n;
    touch(rt->share, n * sizeof *rt->share);
    touch(rt->act_since, n * sizeof *rt->act_since);
    touch(rt->act_time, n * RES_ACT_COUNT * sizeof *rt->act_time);
}

prt *prt_new(const scn_scenario *s, const char *policy, uint64_t seed, dp_err *err)
{
    return prt_new_on(s, policy, seed, NULL, err);
}

prt *prt_new_on(const scn_scenario *s, const char *policy, uint64_t seed, world *w, dp_err *err)
{
    prt *rt = dp_calloc(1, sizeof(prt) + sizeof(timeline));
    if (!rt) {
        world_free(w);
        dp_err_set(err, DP_ENOMEM, "out of memory");
        return NULL;
    }
    rt->shared = w != NULL;
    size_t n = s->n_devices;
    rt->s = s;
    rt->n = n;
    rt->err = err;
    rt->bin_s = 1.0;
    timeline *tl = TL(rt);
    tl->ndev = n < TL_DEVICES ? n : TL_DEVICES;
    if (!(rt->w = w ? w : world_new(s, seed, err)))
        goto fail;
    rt->e = world_engine(rt->w);
    if (!(rt->r = res_run_new_deferred(n, err))) /* its device records at the end (prt_results) */
        goto fail;
    snprintf(rt->r->policy, sizeof rt->r->policy, "%s", policy);
    rt->r->seed = seed;
    rt->share = dp_calloc(n, sizeof *rt->share);
    rt->left = dp_calloc(n, sizeof *rt->left);
    rt->epoch = 1;
    rt->ready_s = dp_calloc(n, sizeof *rt->ready_s);
    rt->data_ready_s = dp_calloc(n, sizeof *rt->data_ready_s);
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
    if (!rt->share || !rt->left || !rt->ready_s || !rt->data_ready_s || !rt->pending || !rt->act ||
        !rt->act_since || !rt->act_time || !rt->busy_compute || !rt->batches || !rt->bins ||
        !rt->coll_bytes || !rt->coll_busy_s || !rt->coll_recv_s || !rt->part_done || !rt->server_bytes ||
        !rt->coll_dev || !tl->cslots || !tl->xctx || !tl->dev_fn || !tl->dev_ctx || !tl->seg_t0) {
        dp_err_set(err, DP_ENOMEM, "out of memory for %zu devices", n);
        goto fail;
    }
    rt->may_fail = scn_has_failures(s);
    /* Below a few thousand devices their records stay in cache and the
     * hint would only cost its look at the next event (5% of table 3). */
    if (prt_hints(rt) && work_set_prefetch(rt)) {
        dp_err_set(err, DP_ENOMEM, "out of memory");
        goto fail;
    }
    if (prt_compress_open(rt, err) || prt_learn_open(rt, seed, err) || data_open(rt, err) ||
        energy_open(rt, seed, err))
        goto fail;
    ff_init(rt);
    if (rt->may_fail)
        world_on_device(rt->w, on_world_device, rt);
    for (size_t d = 0; d < n; d++)
        rt->act[d] = RES_ACT_WAIT;
    return rt;
fail:
    prt_free(rt);
    return NULL;
}

void prt_free(prt *rt)
{
    if (!rt)
        return;
    prt_learn_close(rt);
    data_close(rt);
    energy_close(rt);
    timeline *tl = TL(rt);
    coll_free_all(rt);
    world_free(rt->w);
    res_run_free(rt->r);
    sym_end(rt);
    dp_free(rt->share);
    dp_free(rt->left);
    dp_free(rt->ready_s);
    dp_free(rt->data_ready_s);
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
    for (size_t p = 0; p < tl->n_rows; p++)
        dp_free(tl->row[p]);
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

void fail_oom(prt *rt)
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
    if (rt->sym_rep) { /* a follower's own count is stale: its representative's is its */
        for (size_t i = 0; i < rt->n_sym_reps; i++)
            if (rt->left[rt->sym_reps[i]] > 0)
                return 1;
        return 0;
    }
    for (size_t d = 0; d < rt->n; d++)
        if (rt->left[d] > 0)
            return 1;
    return 0;
}

/* The epoch ends at absolute time now: record it, move on.  The same
 * for a simulated epoch and a replayed one. */
int end_epoch_at(prt *rt, double now)
{
    if (res_add_epoch(rt->r, rt->epoch, now)) {
        fail_oom(rt);
        return DP_ENOMEM;
    }
    int stop = learn_on(rt) && prt_learn_epoch(rt, now); /* evaluate; every target reached? */
    if (rt->failed)
        return DP_ENOMEM;
    if (rt->epoch >= rt->s->training.epochs || stop) {
        rt->finished = 1;
        if (rt->shared) /* the jobs driver runs the engine: hand back to it (jobrt.h) */
            sim_stop(rt->e);
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
    if (rc > 0 && rt->periodic) {
        rt->boundary = 1; /* prt_run tries a rebase once this handler returns */
        if (rt->shared)   /* the jobs driver does (prt_boundary): hand back to it */
            sim_stop(rt->e);
    }
    return rc;
}

void prt_add_between_servers(prt *rt, double bytes)
{
    rt->between_servers += bytes;
}

void prt_finish(prt *rt)
{
    rt->finished = 1;
}

int prt_periodic(const prt *rt)
{
    return rt->periodic;
}

res_run *prt_results(prt *rt)
{
    res_run *r = rt->r;
    double T = abs_now(rt), now = sim_now(rt->e);
    sym_end(rt);                       /* every device's own records from here on */
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
    if (learn_on(rt))
        prt_learn_results(rt, r, T);
    r->tsend_s = rt->tsend_s;
    r->ttotal_s = T;
    r->ttraining_s = T - rt->tsend_s;
    r->samples_processed = rt->samples_done;
    r->events = prt_events(rt) + rt->ff_events;
    dyn_stats(rt, T);
    if (energy_results(rt, r))
        fail_oom(rt);
    /* the device records, made now rather than held through the run (the
     * folded sums above are freed first) */
    if (res_run_devices(r)) {
        dp_err_set(rt->err, DP_ENOMEM, "out of memory for the results of %zu devices", rt->n);
        return NULL;
    }
    for (size_t d = 0; d < rt->n; d++) {
        const scn_device *dv = &rt->s->devices[d];
        const scn_group *g = &rt->s->groups[dv->group];
        if (res_device_names(r, d, dv->name, g->name, g->kind == SCN_GPU ? "gpu" : "cpu")) {
            dp_err_set(rt->err, DP_ENOMEM, "out of memory for the results of %zu devices", rt->n);
            return NULL;
        }
    }
    double busy = 0;
    net *n = world_net(rt->w);
    for (size_t d = 0; d < rt->n; d++) {
        res_device *rd = &r->devices[d];
        rd->data_ready_s = rt->data_ready_s[d];
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
        r->bytes_total = (dev + server) / 2 + rt->between_servers;
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
