/* cadp.c: C-ADP, co-adaptive data parallelism (docs/MODEL.md sections 4-5).
 *
 * 1. Solve for the allocation x_i (solver/: exact by default, alm on
 *    request).  A device with x_i = 0 takes no part at all.
 * 2. The server sends each participant its x_i samples and the model.
 * 3. Each epoch a participant trains ceil(x_i / bs_i) local batches (a short
 *    last batch costs what the compute model says: a full one when
 *    measured), uploads its model (M bytes), the server waits for every
 *    upload, averages (participants x M / aggregate rate), and sends the new
 *    model down; the last epoch ends with the average.  A device starts
 *    epoch 1 as soon as its own data and model have arrived.
 *
 * Failures (worlds with `availability`): a participant lost during an
 * epoch drops out of it; its unfinished samples (those left and the batch
 * it was computing) go to the surviving participants, a batch at a time to
 * whichever would finish it first (the min-max the solver solves, over the
 * survivors only), with their data sent from the server (with
 * dataset.parts from their nearest holders: prt_data_fetch); what it had
 * computed that epoch is lost with its model.  A survivor that had
 * uploaded already trains on and uploads again.  At each epoch start the
 * planned allocation applies to the devices up, and the shares of devices
 * down go to the others the same way; a device back with its memory empty
 * receives the model (and its data, unless the data persist).  With
 * dataset.parts a device down takes its own slice with it (counted lost;
 * it trains its own samples first, so those of its epoch not yet trained
 * and, while it is down, its own part of its share are not spread), and
 * the samples spread are read from their nearest holders.
 *
 * This file is the policy's event flow; the planner (inputs, problem,
 * solve) is cadp_plan.c and `solver: simulate` is cadp_refine.c.
 */
#include "cadp.h"
#include "policy.h"
#include "runtime_perf.h"
#include "slv.h"

#include <stddef.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

/* 24 bytes: one per device, 10^5-10^6 of them (what only failures need is
 * beside it, in cadp_state.fl, made only in worlds with failures). */
typedef struct cadp_dev {
    prt *rt;
    uint32_t d;
    int batch;               /* its group's batch (kept here: the device records are large and far apart) */
    unsigned char active;    /* a participant of this epoch, not lost */
    unsigned char uploaded;  /* its upload of this epoch arrived */
    unsigned char uploading; /* its upload is in flight */
    unsigned char busy;      /* computing a batch of inflight samples */
    unsigned char has_data;  /* holds its planned data */
    unsigned char part; /* a participant (given samples at the start; one whose samples a failed storage lost
                           stays one) */
} cadp_dev;

_Static_assert(sizeof(cadp_dev) <= 24, "a C-ADP device record: one per device");

/* A device's failure state (worlds with failures only). */
typedef struct cadp_fl {
    int64_t own; /* samples it holds itself (dataset.parts on its group): out of reach while it is down */
    int64_t incoming; /* extra samples whose data is on its way */
    double c0;        /* its compute seconds at the start of the epoch */
    int inflight;
    int pend; /* transfers to arrive before it starts the epoch */
} cadp_fl;

typedef struct cadp_state {
    cadp_dev *dev;
    cadp_fl *fl;     /* per device, with failures only (fail_on) */
    size_t parts;    /* participants */
    size_t uploaded; /* uploads done this epoch */
    size_t downloaded;
    int fail_on;
    int64_t *alloc; /* the solved allocation (failures only) */
    int64_t orphan; /* samples of this epoch nobody is up to train */
    int stranded;   /* every participant of this epoch was lost before its model
                       arrived: the first device back takes the epoch over,
                       even with no samples left (an upload lost in flight) */
    /* every extra-data record, freed with the state (a transfer cut by a
     * failure never hands its record back) */
    struct extra_rec *extras;
} cadp_state;

/* Extra samples on their way to a survivor. */
typedef struct extra_rec {
    cadp_dev *cd;
    int64_t x;
    struct extra_rec *next;
} extra_rec;

/* cd's failure state (fail_on only). */
static cadp_fl *FL(prt *rt, const cadp_dev *cd)
{
    return &((cadp_state *)prt_state(rt))->fl[cd->d];
}

static void local_batch(prt *rt, void *ctx);

/* ---- the event flow ------------------------------------------------------------ */

static int st_fail(prt *rt);
static void fl_batch_done(prt *rt, void *ctx);
static void fl_plan_epoch(prt *rt);

static void start_epoch_on(prt *rt, cadp_dev *cd)
{
    prt_left(rt)[cd->d] = prt_share(rt)[cd->d];
    local_batch(rt, cd);
}

static void on_download(void *ctx, uint64_t id)
{
    (void)id;
    cadp_dev *cd = ctx;
    prt *rt = cd->rt;
    prt_set_act(rt, cd->d, RES_ACT_WAIT);
    start_epoch_on(rt, cd);
}

static void send_models(prt *rt, void *ctx);

static void aggregated(prt *rt, void *ctx)
{
    (void)ctx;
    cadp_state *st = prt_state(rt);
    /* the update stream: the epoch's local models averaged with weights
     * D_i / D (the samples each trained on), the result sent back */
    prt_learn_average(rt, NULL, 0, 1, 1);
    if (prt_end_epoch(rt) <= 0)
        return;
    st->uploaded = 0;
    if (st->fail_on) {
        fl_plan_epoch(rt);
        return;
    }
    if (!prt_periodic(rt))
        send_models(rt, NULL);
    else if (prt_at(rt, prt_now(rt), send_models, NULL)) /* from an event at now: a clean boundary */
        prt_fail(rt, DP_ENOMEM, "out of memory");
}

/* The averaged model goes back to every participant, who starts its next
 * local epoch when it arrives. */
static void send_models(prt *rt, void *ctx)
{
    (void)ctx;
    cadp_state *st = prt_state(rt);
    double M = prt_scn(rt)->model.model_bytes;
    for (size_t d = 0; d < prt_n(rt); d++) {
        if (!st->dev[d].part)
            continue;
        prt_set_act(rt, d, RES_ACT_RECV_MODEL);
        prt_add_server_bytes(rt, d, M);
        if (!world_transfer(prt_world(rt), 0, (int)d + 1, M, on_download, &st->dev[d])) {
            prt_fail(rt, DP_ENOMEM, "out of memory");
            return;
        }
    }
}

static void aggregated_now(prt *rt, void *ctx);

/* What an upload's end touches (on_upload: the device's record and its
 * activity), fetched while the flow is still the next to end
 * (net_set_done_prefetch): the record's device follows from its address. */
static void upload_prefetch(void *pctx, void *ctx)
{
    prt *rt = pctx;
    const cadp_state *st = prt_state(rt);
    const cadp_dev *cd = ctx;
    if (!st || !st->dev) /* a flow ending after cadp_free: nothing to fetch */
        return;
    __builtin_prefetch(cd);
    prt_prefetch_act(rt, (size_t)(cd - st->dev));
}

static void on_upload(void *ctx, uint64_t id)
{
    (void)id;
    cadp_dev *cd = ctx;
    prt *rt = cd->rt;
    cadp_state *st = prt_state(rt);
    prt_set_act(rt, cd->d, RES_ACT_WAIT);
    if (st->fail_on) {
        cd->uploading = 0;
        if (prt_left(rt)[cd->d] > 0 || FL(rt, cd)->incoming > 0) { /* work came while it uploaded */
            local_batch(rt, cd);
            return;
        }
        cd->uploaded = 1;
    }
    if (++st->uploaded < st->parts)
        return;
    aggregated_now(rt, NULL);
}

/* Every participant's model is in: the server averages them. */
static void aggregated_now(prt *rt, void *ctx)
{
    (void)ctx;
    cadp_state *st = prt_state(rt);
    /* weighted averaging at the server: participants x M bytes */
    double agg = isfinite(prt_scn(rt)->server.aggregate_Bps)
                     ? (double)st->parts * prt_scn(rt)->model.model_bytes / prt_scn(rt)->server.aggregate_Bps
                     : 0;
    if (prt_at(rt, prt_now(rt) + agg, aggregated, NULL))
        prt_fail(rt, DP_ENOMEM, "out of memory");
}

static void local_batch(prt *rt, void *ctx)
{
    cadp_dev *cd = ctx;
    if (prt_left(rt)[cd->d] <= 0) { /* local epoch done: upload the model */
        if (st_fail(rt)) {
            if (FL(rt, cd)->incoming > 0 || cd->uploading || cd->uploaded)
                return; /* waits for its extra data, or has sent its model */
            cd->uploading = 1;
        }
        prt_set_act(rt, cd->d, RES_ACT_SEND);
        prt_add_server_bytes(rt, cd->d, prt_scn(rt)->model.model_bytes);
        if (!world_transfer(prt_world(rt), (int)cd->d + 1, 0, prt_scn(rt)->model.model_bytes, on_upload, cd))
            prt_fail(rt, DP_ENOMEM, "out of memory");
        return;
    }
    int bs = cd->batch;
    if (!st_fail(rt)) { /* all its batches, in one event when their times are fixed */
        prt_compute_left(rt, cd->d, bs, local_batch, cd);
        return;
    }
    int n = prt_left(rt)[cd->d] < bs ? (int)prt_left(rt)[cd->d] : bs;
    prt_left(rt)[cd->d] -= n;
    cd->busy = 1;
    FL(rt, cd)->inflight = n;
    prt_compute(rt, cd->d, n, 1.0, fl_batch_done, cd, NULL);
}

/* ---- failures ------------------------------------------------------------------ */

static int st_fail(prt *rt)
{
    cadp_state *st = prt_state(rt);
    return st->fail_on;
}

static void fl_batch_done(prt *rt, void *ctx)
{
    cadp_dev *cd = ctx;
    cd->busy = 0;
    FL(rt, cd)->inflight = 0;
    local_batch(rt, cd);
}

static double batch_cost(prt *rt, size_t d)
{
    const scn_group *g = &prt_scn(rt)->groups[prt_scn(rt)->devices[d].group];
    return scn_batch_time(prt_scn(rt), g, g->batch);
}

/* Seconds device d still needs for this epoch's work (planned). */
static double projected(prt *rt, const cadp_dev *cd)
{
    int bs = cd->batch;
    int64_t todo = prt_left(rt)[cd->d] + FL(rt, cd)->incoming + FL(rt, cd)->inflight;
    return (double)((todo + bs - 1) / bs) * batch_cost(rt, cd->d);
}

static void on_extra_data(void *ctx, uint64_t id);

/* spread()'s inputs and output, one slot per device, zeroed. */
typedef struct spread_buf {
    char *cand;
    double *busy;
    int64_t *extra;
} spread_buf;

/* 0, or DP_ENOMEM (the run failed); spread_buf_free in every case. */
static int spread_buf_new(prt *rt, spread_buf *b)
{
    size_t n = prt_n(rt);
    b->cand = dp_calloc(n, 1);
    b->busy = dp_calloc(n, sizeof *b->busy);
    b->extra = dp_calloc(n, sizeof *b->extra);
    if (!b->cand || !b->busy || !b->extra)
        return prt_fail(rt, DP_ENOMEM, "out of memory");
    return 0;
}

static void spread_buf_free(spread_buf *b)
{
    dp_free(b->cand);
    dp_free(b->busy);
    dp_free(b->extra);
}

/* Give `u` samples to the devices with cand[d], one batch at a time to the
 * one that would finish it first (ties: the lower index); extra[d] gets
 * each share.  Greedy by batch is the exact min-max here (every device's
 * finish time grows by a constant per batch); it weighs compute only: the
 * extra data's transfer time is left out of the choice (it still delays
 * the survivor, which starts those samples when their data arrives).  Returns 0, or -1 when no device is a
 * candidate. */
static int spread(prt *rt, int64_t u, const char *cand, const double *busy_s, int64_t *extra)
{
    size_t n = prt_n(rt);
    double *F = dp_calloc(n, sizeof *F);
    if (!F)
        return prt_fail(rt, DP_ENOMEM, "out of memory");
    int any = 0;
    for (size_t d = 0; d < n; d++) {
        extra[d] = 0;
        F[d] = busy_s[d];
        any |= cand[d];
    }
    while (any && u > 0) {
        size_t best = n;
        double bf = INFINITY;
        for (size_t d = 0; d < n; d++)
            if (cand[d] && F[d] + batch_cost(rt, d) < bf) {
                bf = F[d] + batch_cost(rt, d);
                best = d;
            }
        int bs = prt_scn(rt)->groups[prt_scn(rt)->devices[best].group].batch;
        int64_t x = u < bs ? u : bs;
        extra[best] += x;
        F[best] = bf;
        u -= x;
    }
    dp_free(F);
    return any ? 0 : -1;
}

/* Send extra samples' data to device d; they join its work on arrival. */
static void send_extra(prt *rt, cadp_dev *cd, int64_t x)
{
    FL(rt, cd)->incoming += x;
    cadp_state *st = prt_state(rt);
    extra_rec *e = dp_malloc(sizeof *e);
    if (!e) {
        prt_fail(rt, DP_ENOMEM, "out of memory");
        return;
    }
    *e = (extra_rec){cd, x, st->extras};
    st->extras = e;
    /* from the server, or with dataset.parts from the nearest holders */
    int64_t lost = prt_data_fetch(rt, cd->d, x, -1, 1, on_extra_data, e);
    if (lost > 0) { /* no holder left: those samples are not trained */
        e->x -= lost;
        FL(rt, cd)->incoming -= lost;
    }
}

static void on_extra_data(void *ctx, uint64_t id)
{
    (void)id;
    const extra_rec *e = ctx;
    int64_t x = e->x;
    cadp_dev *cd = e->cd;
    prt *rt = cd->rt;
    cadp_state *st = prt_state(rt);
    FL(rt, cd)->incoming -= x;
    prt_left(rt)[cd->d] += x;
    if (cd->uploaded) { /* its model changes again: it uploads again */
        cd->uploaded = 0;
        st->uploaded--;
    }
    if (!cd->busy && !cd->uploading && FL(rt, cd)->pend == 0)
        local_batch(rt, cd);
}

/* Samples are left with nobody up: the first device back takes them, and
 * if none ever comes back the run ends here rather than stalling. */
static void orphaned(prt *rt, int64_t u)
{
    cadp_state *st = prt_state(rt);
    st->orphan += u;
    st->stranded = 1;
    for (size_t d = 0; d < prt_n(rt); d++)
        if (isfinite(world_dev_next_change(prt_world(rt), d)))
            return;
    prt_fail(rt, DP_ERUN, "every device is down for good at t = %.6g s with %lld samples of epoch %d left",
             prt_now(rt), (long long)st->orphan, prt_epoch(rt));
}

/* Hand u orphaned samples of this epoch to the active participants. */
static void reassign(prt *rt, int64_t u)
{
    cadp_state *st = prt_state(rt);
    size_t n = prt_n(rt);
    spread_buf b;
    if (spread_buf_new(rt, &b))
        goto done;
    for (size_t d = 0; d < n; d++) {
        b.cand[d] = (char)st->dev[d].active;
        b.busy[d] = st->dev[d].active ? projected(rt, &st->dev[d]) : 0;
    }
    if (spread(rt, u, b.cand, b.busy, b.extra) < 0) {
        orphaned(rt, u); /* nobody left */
        goto done;
    }
    for (size_t d = 0; d < n && !prt_failed(rt); d++)
        if (b.extra[d] > 0)
            send_extra(rt, &st->dev[d], b.extra[d]);
done:
    spread_buf_free(&b);
}

static void fl_ready(void *ctx, uint64_t id)
{
    (void)id;
    cadp_dev *cd = ctx;
    prt *rt = cd->rt;
    if (--FL(rt, cd)->pend > 0)
        return;
    cd->has_data = 1;
    prt_set_act(rt, cd->d, RES_ACT_WAIT);
    local_batch(rt, cd);
}

/* Device d takes part in this epoch with `samples` of its own: model (and
 * its data when it lost it) from the server, then training. */
static void fl_join(prt *rt, cadp_dev *cd, int64_t samples, int need_model)
{
    cadp_state *st = prt_state(rt);
    double M = prt_scn(rt)->model.model_bytes;
    cd->active = 1;
    cd->uploaded = cd->uploading = 0;
    FL(rt, cd)->c0 = prt_compute_s(rt, cd->d);
    st->parts++;
    prt_share(rt)[cd->d] = samples;
    prt_left(rt)[cd->d] = samples;
    FL(rt, cd)->pend = 1;
    int lost_data = !cd->has_data && samples > 0;
    FL(rt, cd)->pend += lost_data;
    if (need_model) {
        prt_set_act(rt, cd->d, RES_ACT_RECV_MODEL);
        prt_add_server_bytes(rt, cd->d, M);
    }
    if (lost_data) { /* its samples again, from the server or where they live */
        int64_t have = prt_data_available(rt, cd->d, samples);
        int64_t lost = prt_data_fetch(rt, cd->d, have, (long)cd->d, 1, fl_ready, cd);
        if (lost < 0)
            return;
        prt_data_lose(rt, samples - have);
        prt_share(rt)[cd->d] -= lost + samples - have;
        prt_left(rt)[cd->d] -= lost + samples - have;
    }
    if (!world_transfer(prt_world(rt), 0, (int)cd->d + 1, need_model ? M : 0, fl_ready, cd))
        prt_fail(rt, DP_ENOMEM, "out of memory");
}

/* The next epoch: the plan for the devices up; shares of those down spread. */
static void fl_plan_epoch(prt *rt)
{
    cadp_state *st = prt_state(rt);
    size_t n = prt_n(rt);
    int64_t u = st->orphan;
    st->orphan = 0;
    st->stranded = 0;
    st->parts = 0;
    spread_buf b;
    if (spread_buf_new(rt, &b))
        goto done;
    for (size_t d = 0; d < n; d++) {
        st->dev[d].active = 0;
        prt_share(rt)[d] = 0;
        prt_left(rt)[d] = 0;
        if (st->alloc[d] == 0)
            continue;
        if (!prt_device_up(rt, d)) { /* its share goes to the others, but for its own samples */
            u += st->alloc[d] - (st->fl[d].own < st->alloc[d] ? st->fl[d].own : st->alloc[d]);
            continue;
        }
        b.cand[d] = 1;
        int bs = prt_scn(rt)->groups[prt_scn(rt)->devices[d].group].batch;
        b.busy[d] = (double)((st->alloc[d] + bs - 1) / bs) * batch_cost(rt, d);
    }
    if (u > 0 && spread(rt, u, b.cand, b.busy, b.extra) < 0) {
        orphaned(rt, u); /* every participant is down */
        goto done;
    }
    for (size_t d = 0; d < n && !prt_failed(rt); d++) {
        if (!b.cand[d])
            continue;
        fl_join(rt, &st->dev[d], st->alloc[d], 1);
        if (b.extra[d] > 0)
            send_extra(rt, &st->dev[d], b.extra[d]);
    }
done:
    spread_buf_free(&b);
}

static void cadp_on_device(prt *rt, const void *opts, size_t d, int up)
{
    (void)opts;
    cadp_state *st = prt_state(rt);
    if (!st || !st->fl) /* devices fail only in worlds with failures (fail_on) */
        return;
    cadp_dev *cd = &st->dev[d];
    if (!up) {
        if (!prt_scn(rt)->groups[prt_scn(rt)->devices[d].group].avail.data_persists)
            cd->has_data = 0;
        prt_data_lose(rt, FL(rt, cd)->own); /* out of reach while it is down */
        if (!cd->active)
            return;
        cd->active = 0;
        if (cd->uploaded)
            return; /* its model of this epoch arrived: nothing to redo */
        int64_t u = prt_left(rt)[d] + FL(rt, cd)->inflight + FL(rt, cd)->incoming;
        if (FL(rt, cd)->own >
            0) { /* its own samples are out of reach (trained first: those not yet trained) */
            int64_t gone = FL(rt, cd)->own - (prt_share(rt)[d] - u);
            gone = gone < 0 ? 0 : gone > u ? u : gone;
            u -= gone;
        }
        prt_add_lost_s(rt, prt_compute_s(rt, d) - FL(rt, cd)->c0);
        prt_left(rt)[d] = 0;
        cd->busy = cd->uploading = 0;
        FL(rt, cd)->incoming = 0;
        FL(rt, cd)->inflight = FL(rt, cd)->pend = 0;
        st->parts--;
        if (u > 0)
            reassign(rt, u);
        else if (st->parts == 0) /* the last one up lost its model on the way (an upload in flight) */
            orphaned(rt, 0);
        else if (st->uploaded >= st->parts && prt_at(rt, prt_now(rt), aggregated_now, NULL))
            prt_fail(rt, DP_ENOMEM, "out of memory");
        return;
    }
    if (st->stranded && st->parts == 0 && st->alloc) { /* nobody was left: it takes the epoch's rest */
        int64_t u = st->orphan;
        st->orphan = 0;
        st->stranded = 0;
        fl_join(rt, cd, 0, 1);
        if (u > 0)
            send_extra(rt, cd, u);
    }
}

static void on_ready(prt *rt, void *ctx)
{
    cadp_dev *cd = ctx;
    if (st_fail(rt)) {
        cd->has_data = 1;
        FL(rt, cd)->pend = 0;
    }
    start_epoch_on(rt, ctx);
}

typedef struct cadp_plan_job {
    const scn_scenario *s;
    const cadp_opts *o;
    cadp_inputs in; /* built by plan_new, on the run's thread (in.n == 0: not built) */
    int64_t *alloc; /* s->n_devices */
    double objective_s, send_s, epoch_s;
    int solves;
} cadp_plan_job;

static void cadp_plan_free(void *pj)
{
    cadp_plan_job *j = pj;
    if (!j)
        return;
    if (j->in.n)
        cadp_inputs_free(&j->in);
    dp_free(j->alloc);
    dp_free(j);
}

/* No plan while a refinement forces the allocation (cadp_forced_alloc is per
 * thread: read it here, on the run's own thread).  The solver's inputs are
 * built here, before the second thread starts: the run's thread waits for
 * the solver anyway (10^6 devices: it builds the world in less time than
 * the solver takes), so their 0.17 s leave the critical path. */
static void *cadp_plan_new(const scn_scenario *s, const void *opts)
{
    if (cadp_forced_alloc())
        return NULL;
    cadp_plan_job *j = dp_calloc(1, sizeof *j);
    if (!j)
        return NULL; /* start plans on its own thread */
    j->s = s;
    j->o = opts;
    dp_err ignored = {0};
    if (cadp_inputs_build(s, &j->in, &ignored))
        j->in = (cadp_inputs){0}; /* plan_run builds them (and meets the error itself) */
    return j;
}

static int cadp_plan_run(void *pj, dp_err *err)
{
    cadp_plan_job *j = pj;
    const scn_scenario *s = j->s;
    if (!(j->alloc = dp_calloc(s->n_devices, sizeof *j->alloc)))
        return dp_err_set(err, DP_ENOMEM, "out of memory");
    cadp_inputs in = j->in;
    j->in = (cadp_inputs){0}; /* cadp_plan_built owns them now */
    slv_params prm;
    slv_params_default(&prm);
    prm.rounding = cadp_slv_rounding(j->o);
    slv_result *res = NULL;
    int rc = in.n ? 0 : cadp_inputs_build(s, &in, err); /* plan_new could not build them */
    if (rc || (rc = cadp_plan_built(s, j->o, cadp_method(j->o), &prm, 0, &in, &res, NULL, &j->solves, err)))
        return rc;
    cadp_inputs_free(&in);
    memcpy(j->alloc, res->alloc, s->n_devices * sizeof *j->alloc);
    j->objective_s = res->objective_s;
    j->send_s = res->send_s;
    j->epoch_s = res->epoch_s;
    slv_result_free(res);
    return 0;
}

static int cadp_start(prt *rt, const void *opts)
{
    const cadp_opts *o = opts;
    const scn_scenario *s = prt_scn(rt);
    prt_learn_mode(rt, PRT_LEARN_LOCAL);
    int64_t *alloc = dp_calloc(prt_n(rt), sizeof *alloc);
    if (!alloc)
        return dp_err_set(prt_err(rt), DP_ENOMEM, "out of memory");
    if (cadp_forced_alloc()) {
        memcpy(alloc, cadp_forced_alloc(), prt_n(rt) * sizeof *alloc);
    } else {
        cadp_plan_job own = {.s = s, .o = o}, *pl = prt_plan(rt);
        int rc = 0;
        if (!pl) { /* no second thread's plan (out of memory making the job): plan here */
            pl = &own;
            rc = cadp_plan_run(pl, prt_err(rt));
        }
        if (!rc) {
            memcpy(alloc, pl->alloc, prt_n(rt) * sizeof *alloc);
            /* what the planner expects, to hold against what the run gives */
            if (prt_stat(rt, "plan.objective_s", RES_SCOPE_RUN, 0, 0, pl->objective_s) ||
                prt_stat(rt, "plan.send_s", RES_SCOPE_RUN, 0, 0, pl->send_s) ||
                prt_stat(rt, "plan.epoch_s", RES_SCOPE_RUN, 0, 0, pl->epoch_s) ||
                prt_stat(rt, "plan.solves", RES_SCOPE_RUN, 0, 0, pl->solves))
                rc = DP_ENOMEM;
        }
        dp_free(own.alloc);
        if (rc) {
            dp_free(alloc);
            return rc;
        }
        if (o->solver == CADP_SOLVER_SIMULATE) {
            double best = 0;
            int sims = 0;
            if ((rc = cadp_refine_by_simulation(s, prt_seed(rt), alloc, prt_n(rt), &best, &sims,
                                                prt_err(rt)))) {
                dp_free(alloc);
                return rc;
            }
            if (prt_stat(rt, "plan.simulations", RES_SCOPE_RUN, 0, 0, sims) ||
                prt_stat(rt, "plan.simulated_s", RES_SCOPE_RUN, 0, 0, best)) {
                dp_free(alloc);
                return DP_ENOMEM;
            }
        }
    }
    cadp_state *st = dp_calloc(1, sizeof *st);
    double *bytes = dp_calloc(prt_n(rt), sizeof *bytes);
    int *skip = dp_calloc(prt_n(rt), sizeof *skip);
    void **ctx = dp_calloc(prt_n(rt), sizeof *ctx);
    if (st)
        st->dev = dp_calloc(prt_n(rt), sizeof *st->dev);
    prt_set_state(rt, st);
    if (!st || !st->dev || !bytes || !skip || !ctx) {
        dp_free(alloc);
        dp_free(bytes);
        dp_free(skip);
        dp_free(ctx);
        return dp_err_set(prt_err(rt), DP_ENOMEM, "out of memory");
    }
    st->fail_on = scn_has_failures(s);
    /* a hint only: were its table full, the run would be the same */
    if (prt_hints(rt))
        (void)net_set_done_prefetch(world_net(prt_world(rt)), on_upload, upload_prefetch, rt);
    if (st->fail_on && (!(st->alloc = dp_calloc(prt_n(rt), sizeof *st->alloc)) ||
                        !(st->fl = dp_calloc(prt_n(rt), sizeof *st->fl)))) {
        dp_free(alloc);
        dp_free(bytes);
        dp_free(skip);
        dp_free(ctx);
        return dp_err_set(prt_err(rt), DP_ENOMEM, "out of memory");
    }
    for (size_t d = 0; d < prt_n(rt); d++) {
        if (st->alloc)
            st->alloc[d] = alloc[d];
        prt_share(rt)[d] = alloc[d];
        st->dev[d] = (cadp_dev){
            .rt = rt, .d = (uint32_t)d, .batch = s->groups[s->devices[d].group].batch, .part = alloc[d] > 0};
        if (st->fail_on)
            st->fl[d].own = prt_data_local(rt, d);
        if (st->fail_on && alloc[d] > 0) { /* a participant from the start */
            st->dev[d].active = 1;
            st->fl[d].pend = 1;
            prt_left(rt)[d] = alloc[d];
        }
        ctx[d] = &st->dev[d];
        skip[d] = alloc[d] == 0;
        bytes[d] = (double)alloc[d] * s->dataset.sample_bytes;
        st->parts += !skip[d];
    }
    dp_free(alloc);
    int rc = prt_distribute(rt, bytes, skip, on_ready, ctx);
    dp_free(bytes);
    dp_free(skip);
    dp_free(ctx);
    return rc;
}

/* At an epoch boundary without failures (the only kind that can repeat)
 * every participant is waiting for the model and the counts are reset: the
 * plan (shares, part of the runtime's state) is all that carries over. */
static size_t cadp_steady_state(prt *rt, const void *opts, unsigned char *buf, size_t cap)
{
    (void)opts;
    const cadp_state *st = prt_state(rt);
    if (!st || st->fail_on)
        return 0;
    size_t v[3] = {st->parts, st->uploaded, st->downloaded};
    if (sizeof v > cap)
        return sizeof v;
    memcpy(buf, v, sizeof v);
    return sizeof v;
}

static void cadp_free(prt *rt, const void *opts)
{
    (void)opts;
    cadp_state *st = prt_state(rt);
    if (st) {
        dp_free(st->dev);
        dp_free(st->fl);
        dp_free(st->alloc);
        while (st->extras) {
            extra_rec *e = st->extras;
            st->extras = e->next;
            dp_free(e);
        }
    }
    dp_free(st);
    prt_set_state(rt, NULL);
}

static const char *const solver_names[] = {"exact", "alm", "simulate", NULL};
static const char *const rounding_names[] = {"batch", "largest_remainder", NULL};

static const popt cadp_table[] = {
    {"solver", NULL, POPT_ENUM, SCN_UNIT_NUMBER, offsetof(cadp_opts, solver), CADP_SOLVER_EXACT, 0, 0,
     solver_names,
     "exact: the optimal integer allocation; alm: the paper's augmented Lagrangian; simulate: exact, "
     "then refined with the simulator as the objective"},
    {"rounding", NULL, POPT_ENUM, SCN_UNIT_NUMBER, offsetof(cadp_opts, rounding), CADP_ROUND_BATCH, 0, 0,
     rounding_names, "how the relaxed allocation becomes whole samples"},
    {"exclude_slow", NULL, POPT_BOOL, SCN_UNIT_NUMBER, offsetof(cadp_opts, exclude_slow), 1, 0, 0, NULL,
     "the planner may leave devices with slow links out entirely"},
    {"locality", NULL, POPT_BOOL, SCN_UNIT_NUMBER, offsetof(cadp_opts, locality), 0, 0, 0, NULL,
     POPT_OPTIONAL "with dataset.parts, the split pays for the bytes that move, from where they move: each "
                   "device's send time from the reads the run's placement makes, its own samples free"},
    {NULL, NULL, 0, 0, 0, 0, 0, 0, NULL, NULL},
};

/* policy_perf.prefetch: the device's record, which local_batch reads first. */
static void cadp_prefetch(prt *rt, size_t d)
{
    const cadp_state *st = prt_state(rt);
    if (st && st->dev && d < prt_n(rt))
        __builtin_prefetch(&st->dev[d]);
}

static const policy_perf cadp_perf = {
    .plan_new = cadp_plan_new,
    .plan_run = cadp_plan_run,
    .plan_free = cadp_plan_free,
    .prefetch = cadp_prefetch,
};

const policy_def policy_cadp = {
    .name = "cadp",
    .label = "C-ADP",
    .color = "#009e73",
    .summary = "co-adaptive data parallelism: solved split, data sent once, one averaging per epoch",
    .opts = cadp_table,
    .opts_size = sizeof(cadp_opts),
    .start = cadp_start,
    .free = cadp_free,
    .on_device = cadp_on_device,
    .steady_state = cadp_steady_state,
    .perf = &cadp_perf,
};
