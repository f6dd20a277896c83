/* runtime_work.c: the work the runtime runs for a policy (runtime.c lists
 * its files and the invariants): compute (one batch or a run of them in one
 * event), the initial distribution of data and model, failures and
 * restarts, and the hints that fetch the records an event will touch. */
#include "log.h"
#include "policy.h"
#include "runtime_energy.h"
#include "runtime_impl.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void on_fold_done(sim_engine *e, void *ctx, uint64_t id);
static void on_compute_done(sim_engine *e, void *ctx, uint64_t id);

/* Device d's records a batch's end touches (compute_done_at, set_act_at),
 * and what starting another batch reads when `more` (prt_compute_left). */
static void dev_prefetch(prt *rt, size_t d, int more)
{
    const compute_slot *c = &TL(rt)->cslots[d];
    __builtin_prefetch(c);
    __builtin_prefetch((const char *)c + DP_CACHE_LINE);
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
    if (rt->pdef && rt->pdef->perf && rt->pdef->perf->prefetch)
        rt->pdef->perf->prefetch(rt, d);
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

/* What a distribution's end touches (xfer_done, then the device's start:
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
    __builtin_prefetch(&rt->data_ready_s[d]);
    __builtin_prefetch(&tl->dev_fn[d]);
    __builtin_prefetch(&tl->dev_ctx[d]);
    prt_prefetch_act(rt, d);
    __builtin_prefetch(&rt->share[d]);
    __builtin_prefetch(&rt->left[d]);
    const compute_slot *c = &tl->cslots[d]; /* prt_compute_left writes it */
    __builtin_prefetch(c);
    __builtin_prefetch((const char *)c + DP_CACHE_LINE);
    cmp_prefetch(world_compute(rt->w), d);
    if (rt->pdef && rt->pdef->perf && rt->pdef->perf->prefetch)
        rt->pdef->perf->prefetch(rt, d);
}

int work_set_prefetch(prt *rt)
{
    return sim_set_prefetch(rt->e, on_fold_done, fold_prefetch, rt) ||
           sim_set_prefetch(rt->e, on_compute_done, compute_prefetch, rt) ||
           net_set_done_prefetch(world_net(rt->w), xfer_done, xfer_prefetch, rt);
}

/* ---- compute ------------------------------------------------------------------- */

/* A batch of device d, started at engine time t0 and ending at engine time
 * now, is done: its records, with the engine's origin at absolute `base`. */
void compute_done_at(prt *rt, size_t d, double t0, double now, int n, double part, int step, double base)
{
    size_t k = sym_mult(rt, d); /* the devices d stands for (runtime_sym.c) */
    rt->busy_compute[d] += now - t0;
    if (!(step & J_FOLDED)) { /* a folded batch but the last: the device computes on */
        busy_advance_to(rt, now);
        TL(rt)->computing -= k;
    }
    step &= 1;
    /* a batch run in pieces (forward, backward) counts once, when whole */
    rt->part_done[d] += step ? 1 : part;
    if (rt->part_done[d] >= 1 - 1e-9) {
        rt->batches[d]++;
        rt->part_done[d] = 0;
        if (learn_on(rt)) /* the update stream's step: a whole batch (a step of n * part samples) */
            prt_learn_batch(rt, d, base + now, step ? n * part : n);
    }
    for (size_t i = 0; i < k; i++)
        rt->samples_done += n * part;
    prt_add_flops_k(rt, base + t0, base + now, batch_flops(rt, n, part), k);
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
    rt->sym_events += sym_mult(rt, c->d) - 1; /* this event stood for its class's */
    prt_set_act(rt, c->d, rt->coll_dev[c->d] ? RES_ACT_SEND : RES_ACT_WAIT);
    c->fn(rt, c->ctx);
}

/* Times are absolute doubles: at t = 8e9 s one step is 1e-6 s, and a
 * batch of a few steps would end (almost) when it starts, its time lost to
 * rounding, and Ttraining, utilisation and TFLOPS with it (issue 38: all
 * three 0, exit 0).  1 (the run failed, with a message) when device d's
 * batch of dt seconds ending near t is under 8 steps of t. */
static int too_fine(prt *rt, size_t d, double t, double dt)
{
    double step = nextafter(t, INFINITY) - t;
    if (!(dt > 0 && dt < 8 * step))
        return 0;
    prt_fail(rt, DP_ERUN,
             "at simulated t = %.6g s a time is resolved to %.2g s only, and device %s's batch takes %.2g s: "
             "it would be lost to rounding (Ttraining, utilisation, TFLOPS); shorten the transfers before it "
             "(slow links, huge samples) or scale the scenario's times",
             rt->base + t, step, rt->s->devices[d].name, dt);
    return 1;
}

int prt_compute(prt *rt, size_t d, int n, double part, prt_fn fn, void *ctx, double *dt_out)
{
    sym_touch(rt, d);
    compute_slot *c = &TL(rt)->cslots[d];
    double now = sim_now(rt->e), dt = cmp_batch_s(world_compute(rt->w), d, n, now, part);
    if (isnan(dt))
        return prt_fail(rt, DP_ERUN,
                        "device %s: straggler episodes cannot be drawn at t = %.6g s (too far in time)",
                        rt->s->devices[d].name, abs_now(rt));
    if (!isfinite(dt))
        return prt_fail(rt, DP_ERUN, "device %s: its speed trace stays at 0, the batch never ends",
                        rt->s->devices[d].name);
    if (too_fine(rt, d, now, dt))
        return DP_ERUN;
    *c = (compute_slot){.rt = rt, .d = d, .n = n, .part = part, .t0 = sim_now(rt->e), .fn = fn, .ctx = ctx};
    if (dt_out)
        *dt_out = dt;
    prt_set_act(rt, d, RES_ACT_COMPUTE);
    if (!(c->ev = sim_at(rt->e, sim_now(rt->e) + dt, on_compute_done, c))) {
        fail_oom(rt);
        return DP_ENOMEM;
    }
    jrec(rt, (jent){.kind = J_CSTART, .n = (int32_t)sym_mult(rt, d), .r = sim_now(rt->e)});
    busy_advance(rt);
    TL(rt)->computing += sym_mult(rt, d);
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
    rt->sym_events += sym_mult(rt, c->d) - 1;
    c->fold = 0;
    prt_set_act(rt, c->d, rt->coll_dev[c->d] ? RES_ACT_SEND : RES_ACT_WAIT);
    c->fn(rt, c->ctx);
}

int prt_compute_left(prt *rt, size_t d, int bs, prt_fn fn, void *ctx)
{
    sym_touch(rt, d);
    int64_t left = rt->left[d];
    cmp_model *cm = world_compute(rt->w);
    if (left <= 0 || bs < 1)
        return prt_fail(rt, DP_EINPUT, "device %s: a run of batches with %lld samples left in batches of %d",
                        rt->s->devices[d].name, (long long)left, bs);
    /* with a learner, one event per batch: its steps (and the evaluations
     * between them) then come in time order */
    if (left <= bs || !fold_allowed() || !cmp_plain(cm, d) || learn_on(rt)) { /* one batch, then again */
        int n = left < bs ? (int)left : bs;
        rt->left[d] -= n;
        return prt_compute(rt, d, n, 1.0, fn, ctx, NULL);
    }
    compute_slot *c = &TL(rt)->cslots[d];
    double now = sim_now(rt->e);
    int last = (int)(left % bs);
    double w_full = cmp_batch_s(cm, d, bs, now, 1.0),
           w_last = last ? cmp_batch_s(cm, d, last, now, 1.0) : w_full;
    *c = (compute_slot){.rt = rt,
                        .d = d,
                        .n = bs,
                        .part = 1.0,
                        .t0 = now,
                        .fn = fn,
                        .ctx = ctx,
                        .fold = left,
                        .w_full = w_full,
                        .w_last = w_last};
    double t = now;
    for (int64_t j = 0, nb = (left + bs - 1) / bs; j < nb; j++)
        t += fold_n(c, j) == bs ? w_full : w_last;
    if (too_fine(rt, d, t, fmin(w_full, w_last))) {
        c->fold = 0;
        return DP_ERUN;
    }
    rt->left[d] = 0;
    prt_set_act(rt, d, RES_ACT_COMPUTE);
    if (!(c->ev = sim_at(rt->e, t, on_fold_done, c))) {
        fail_oom(rt);
        return DP_ENOMEM;
    }
    jrec(rt, (jent){.kind = J_CSTART, .n = (int32_t)sym_mult(rt, d), .r = now});
    busy_advance(rt);
    TL(rt)->computing += sym_mult(rt, d);
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

void xfer_done(void *ctx, uint64_t id)
{
    (void)id;
    const xfer_ctx *x = ctx;
    xfer_arrived(x->rt, x->d, x->is_data);
}

void xfer_arrived(prt *rt, size_t d, int is_data)
{
    double now = abs_now(rt);
    jbreak(rt); /* the data distribution is not journaled */
    if (is_data == 1) {
        rt->data_ready_s[d] = now;
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
    } else if (is_data) {
        prt_set_act(rt, d, RES_ACT_RECV_MODEL);
    }
}

static int distribute(prt *rt, const double *data_bytes, const int *skip, prt_fn per_dev, void **ctx,
                      int initial)
{
    if (rt->data) /* the data comes from where it lives (runtime_data.c) */
        return data_distribute(rt, data_bytes, skip, per_dev, ctx, initial);
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
        if (!world_transfer(rt->w, 0, (int)d + 1, data_bytes[d], xfer_done, &tl->xctx[2 * d]) ||
            !world_transfer(rt->w, 0, (int)d + 1, model, xfer_done, &tl->xctx[2 * d + 1])) {
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

/* A run whose devices keep failing and coming back never runs out of
 * events, so "nothing left to happen" never fires; when no batch finishes
 * and no epoch ends over this many failures, whatever the policy is
 * waiting for is not coming (a policy's lost state, a world that fails
 * faster than a batch runs) and the run ends with a message.  Generous,
 * so that a policy's own guard speaks first (DDP's max_restarts: 100
 * restarts took 49,000 failures in tests/regress/issue38/no-progress.yaml):
 * each device may fail 1000 times with nothing done, plus 100,000 (about a
 * second of host time). */
static int stuck(prt *rt)
{
    if (rt->epoch != rt->stuck_epoch || rt->samples_done != rt->stuck_samples || !rt->stuck_downs) {
        rt->stuck_epoch = rt->epoch;
        rt->stuck_samples = rt->samples_done;
        rt->stuck_since = rt->base + sim_now(rt->e);
        rt->stuck_downs = 1;
        return 0;
    }
    if (++rt->stuck_downs <= 100000 + 1000 * (uint64_t)rt->n)
        return 0;
    prt_fail(rt, DP_ERUN,
             "no progress: %llu device failures from t = %.6g s to t = %.6g s and not one batch finished "
             "nor an epoch ended (epoch %d); the run cannot go on",
             (unsigned long long)rt->stuck_downs, rt->stuck_since, rt->base + sim_now(rt->e), rt->epoch);
    return 1;
}

void on_world_device(void *ctx, size_t d, int up)
{
    prt *rt = ctx;
    if (rt->energy)
        energy_updown(rt, d, up);
    if (rt->failed || rt->finished)
        return;
    if (!up && stuck(rt))
        return;
    if (!up) {
        drop_compute(rt, d);
        if (learn_on(rt)) /* its work since its last average or push is lost */
            prt_learn_lost(rt, d, rt->base + sim_now(rt->e));
        rt->pending[d] = 0;
        if (rt->data)
            data_device_down(rt, d);
        coll_device_down(rt, d);
        prt_set_act(rt, d, RES_ACT_WAIT);
    }
    if (up && rt->data) /* what it holds for others is in reach again */
        data_device_up(rt, d);
    if (up && learn_on(rt))
        prt_learn_up(rt, d, rt->base + sim_now(rt->e));
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

void prt_detach(prt *rt)
{
    rt->gen++;
    for (size_t d = 0; d < rt->n; d++) {
        compute_slot *c = &TL(rt)->cslots[d];
        if (c->ev)
            sim_cancel(rt->e, c->ev);
        c->ev = 0;
    }
    world_cut_all(rt->w);
    coll_free_all(rt);
    rt->finished = 1;
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
void dyn_stats(prt *rt, double T)
{
    if (rt->data)
        data_stats(rt);
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
              /* with analytic collectives' rings (net_link_account_aside) */
              res_add_stat(r, "link.bytes", RES_SCOPE_LINK, (int64_t)l, 0, net_link_stat_bytes(n, (int)l)) ||
              res_add_stat(r, "link.busy_fraction", RES_SCOPE_LINK, (int64_t)l, 0,
                           T > 0 ? net_link_stat_busy_s(n, (int)l) / T : 0) ||
              res_add_stat(r, "link.peak_util", RES_SCOPE_LINK, (int64_t)l, 0, net_link_peak_util(n, (int)l));
    }
    if (bad)
        fail_oom(rt);
}
