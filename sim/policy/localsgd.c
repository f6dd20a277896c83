/* localsgd.c: local SGD (Stich, ICLR 2019; the periodic averaging of
 * Hugging Face Accelerate and torchft).
 *
 * Data: an equal split (or C-ADP's allocation, `allocation: cadp`), sent
 * once with the model.  Each device then runs rounds: local steps on its
 * own shard with its own batch, then the parameters are averaged (weighted
 * by samples processed, which costs nothing extra) either by a ring
 * all-reduce of the model among the participants (`sync: ring`) or by a
 * push to the server, the server's averaging (participants x M / aggregate
 * rate) and a pull (`sync: server`).
 *
 * Period: `steps: H` (each device runs H steps; fast ones wait for the
 * average), or `seconds: T` (each device runs the steps that fit in T after
 * its round started, judged by its previous step's duration, at least one;
 * nobody waits for compute).  A round never crosses an epoch: a device out
 * of samples for this epoch ends its round early (with nothing, if it had
 * nothing left), and the round that exhausts the last device ends the
 * epoch.  `steps: 0` = a whole local epoch per round, so with `sync:
 * server` and `allocation: cadp` this is C-ADP exactly (tests/test_commlight.c).
 *
 * Adaptive batch (`batch_growth` > 1): every `growth_every` rounds each
 * device's batch grows by that factor up to what its memory holds (and its
 * share), and its H shrinks to keep its samples per round (H x batch) as
 * they were: H_d = ceil(H x b0_d / b_d).
 *
 * Failures (worlds with `availability`; scenarios/README.md): a round runs
 * over the participants up (`in`); one going down leaves it (its round's
 * work lost, its samples not started skipped), a ring it was in runs again
 * without it; back, it receives the model at the next round.
 */
#include "cadp.h"
#include "commlight.h"

#include <limits.h>
#include <math.h>
#include <stddef.h>

typedef enum { LS_SYNC_RING = 0, LS_SYNC_SERVER = 1 } ls_sync;
typedef enum { LS_ALLOC_EQUAL = 0, LS_ALLOC_CADP = 1 } ls_alloc;

typedef struct ls_opts {
    int steps;           /* H; 0 = a whole local epoch per round */
    double seconds;      /* T; 0 = use steps */
    int sync;            /* ls_sync */
    int allocation;      /* ls_alloc */
    double batch_growth; /* 1 = fixed batch */
    int growth_every;    /* rounds */
    int collective;      /* prt_coll_mode, for sync: ring */
} ls_opts;

typedef struct ls_dev {
    prt *rt;
    size_t d;
    int batch;       /* current local batch */
    int h;           /* steps this round (steps mode) */
    int done;        /* steps done this round */
    double t0;       /* when this round started on the device */
    double last_dt;  /* its previous step's duration */
    int64_t samples; /* this round */
    /* worlds with failures */
    int in;       /* in the round under way */
    int arrived;  /* handed its model in this round */
    int back;     /* up again: joins the next round with the model from the server */
    int has_data; /* holds its shard */
    double c0;    /* its compute seconds when the round began */
} ls_dev;

typedef struct ls_state {
    ls_opts o;
    ls_dev *dev;
    size_t *parts; /* participants (share > 0), scenario order */
    size_t n_parts;
    size_t arrived; /* participants done with the round (uploaded, for server) */
    int64_t since_growth;
    cl_stats cs;
    /* worlds with failures (docs: scenarios/README.md) */
    int fail_on;
    size_t n_in;     /* participants in the round under way (n_parts without failures) */
    size_t *ring;    /* those in the round, for sync: ring */
    int syncing;     /* the round's average is under way */
    int waiting;     /* no participant is up: the next round waits for a return */
    int64_t skipped; /* samples of an epoch a device down did not start */
} ls_state;

static void begin_round(prt *rt, ls_dev *v);
static void step(prt *rt, void *ctx);

static int quota_reached(const ls_state *st, const ls_dev *v, double now)
{
    if (st->o.seconds > 0)
        return v->done >= 1 && now + v->last_dt > v->t0 + st->o.seconds;
    return v->h > 0 && v->done >= v->h;
}

/* Every participant has the averaged model: grow the batch if due, then
 * either end the epoch or go on. Returns 1 when the next round starts. */
static int round_end(prt *rt, ls_state *st)
{
    /* the update stream: the round's models averaged by samples, back to
     * every participant (and the server's copy) */
    prt_learn_average(rt, NULL, 0, 1, 1);
    int64_t batch = 0, devs = 0;
    for (size_t i = 0; i < st->n_parts; i++) {
        ls_dev *v = &st->dev[st->parts[i]];
        batch += v->samples;
        devs += v->samples > 0;
        v->samples = 0;
    }
    st->cs.rounds++;
    cl_update(&st->cs, batch, devs, 0);
    st->arrived = 0;
    st->syncing = 0;
    if (st->o.batch_growth > 1 && ++st->since_growth >= st->o.growth_every) {
        st->since_growth = 0;
        const scn_scenario *s = prt_scn(rt);
        for (size_t i = 0; i < st->n_parts; i++) {
            ls_dev *v = &st->dev[st->parts[i]];
            int cap = prt_share(rt)[v->d] > INT_MAX ? INT_MAX : (int)prt_share(rt)[v->d];
            double nb = floor((double)v->batch * st->o.batch_growth);
            int b = cl_max_batch(s, v->d, nb > (double)cap ? cap : (int)nb);
            if (b < v->batch)
                b = v->batch;
            int b0 = s->groups[s->devices[v->d].group].batch;
            v->batch = b;
            if (st->o.steps > 0) {
                double h = ceil((double)st->o.steps * (double)b0 / (double)b);
                v->h = h < 1 ? 1 : (int)h;
            }
        }
    }
    if (prt_work_left(rt))
        return 1;
    if (prt_epoch(rt) >= prt_scn(rt)->training.epochs &&
        (cl_emit(rt, &st->cs) ||
         (st->fail_on && prt_stat(rt, "samples_skipped", RES_SCOPE_RUN, 0, 0, (double)st->skipped))))
        return 0;
    return prt_end_epoch(rt) > 0;
}

/* ---- sync: ring ---- */
static void next_round(prt *rt, ls_state *st);

static void ring_done(prt *rt, void *ctx)
{
    (void)ctx;
    ls_state *st = prt_state(rt);
    if (!round_end(rt, st))
        return;
    next_round(rt, st);
}

/* ---- sync: server ---- */
static void on_download(void *ctx, uint64_t id)
{
    (void)id;
    ls_dev *v = ctx;
    prt_set_act(v->rt, v->d, RES_ACT_WAIT);
    begin_round(v->rt, v);
}

static void aggregated(prt *rt, void *ctx)
{
    (void)ctx;
    ls_state *st = prt_state(rt);
    if (!round_end(rt, st))
        return;
    next_round(rt, st);
}

/* The participants in the new round fetch the averaged model (sync:
 * server) or start at once (ring); with failures, next_round picked them. */
static void start_round(prt *rt, ls_state *st)
{
    double M = prt_scn(rt)->model.model_bytes;
    for (size_t i = 0; i < st->n_parts; i++) {
        ls_dev *v = &st->dev[st->parts[i]];
        if (!v->in || v->back)
            continue; /* out, or receiving the model from the server (next_round) */
        v->c0 = prt_compute_s(rt, v->d);
        if (st->o.sync == LS_SYNC_RING) {
            begin_round(rt, v);
            continue;
        }
        prt_set_act(rt, v->d, RES_ACT_RECV_MODEL);
        prt_add_server_bytes(rt, v->d, M);
        if (!world_transfer(prt_world(rt), 0, (int)v->d + 1, M, on_download, v)) {
            prt_fail(rt, DP_ENOMEM, "out of memory");
            return;
        }
    }
}

/* Every participant in the round has handed its model in: average. */
static void average(prt *rt, ls_state *st)
{
    st->syncing = 1;
    double M = prt_wire_bytes(rt, prt_scn(rt)->model.model_bytes); /* the ring's tensor, as compressed */
    if (st->o.sync == LS_SYNC_SERVER) {
        if (prt_at(rt, prt_now(rt) + cl_aggregate_s(rt, (double)st->arrived), aggregated, NULL))
            prt_fail(rt, DP_ENOMEM, "out of memory");
        return;
    }
    const size_t *mem = st->n_parts == prt_n(rt) ? NULL : st->parts;
    size_t m = st->n_parts;
    if (st->n_in < st->n_parts) { /* failures: the ring of those in the round */
        m = 0;
        for (size_t i = 0; i < st->n_parts; i++)
            if (st->dev[st->parts[i]].in)
                st->ring[m++] = st->parts[i];
        mem = st->ring;
    }
    if (st->o.collective == PRT_COLL_ANALYTIC)
        cl_tally_ring(rt, &st->cs, mem, m, COLL_ALLREDUCE, M);
    if (mem)
        coll_start_among(rt, COLL_ALLREDUCE, M, st->o.collective, mem, m, ring_done, NULL);
    else
        coll_start(rt, COLL_ALLREDUCE, M, st->o.collective, ring_done, NULL);
}

static void on_upload(void *ctx, uint64_t id)
{
    (void)id;
    ls_dev *v = ctx;
    prt *rt = v->rt;
    ls_state *st = prt_state(rt);
    prt_set_act(rt, v->d, RES_ACT_WAIT);
    v->arrived = 1;
    if (++st->arrived == st->n_in)
        average(rt, st);
}

/* The device's part of the round is over: hand its model in. */
static void device_done(prt *rt, ls_state *st, ls_dev *v)
{
    if (st->o.sync == LS_SYNC_SERVER) {
        double M = prt_wire_bytes(rt, prt_scn(rt)->model.model_bytes); /* the upload, as compressed */
        prt_set_act(rt, v->d, RES_ACT_SEND);
        prt_add_server_bytes(rt, v->d, M);
        if (!world_transfer(prt_world(rt), (int)v->d + 1, 0, M, on_upload, v))
            prt_fail(rt, DP_ENOMEM, "out of memory");
        return;
    }
    prt_set_act(rt, v->d, RES_ACT_WAIT);
    v->arrived = 1;
    if (++st->arrived == st->n_in)
        average(rt, st);
}

static void step(prt *rt, void *ctx)
{
    ls_dev *v = ctx;
    ls_state *st = prt_state(rt);
    int64_t *left = prt_left(rt);
    if (left[v->d] <= 0 || quota_reached(st, v, prt_now(rt))) {
        device_done(rt, st, v);
        return;
    }
    int n = left[v->d] < v->batch ? (int)left[v->d] : v->batch;
    left[v->d] -= n;
    v->samples += n;
    v->done++;
    st->cs.steps[v->d]++;
    prt_compute(rt, v->d, n, 1.0, step, v, &v->last_dt);
}

static void begin_round(prt *rt, ls_dev *v)
{
    v->done = 0;
    v->t0 = prt_now(rt);
    step(rt, v);
}

static void on_ready(prt *rt, void *ctx)
{
    ls_dev *v = ctx;
    v->has_data = 1;
    v->back = 0;
    v->c0 = prt_compute_s(rt, v->d);
    begin_round(rt, v);
}

/* ---- failures ---------------------------------------------------------------- */

/* Device v leaves the round under way: what it computed in it is lost, its
 * samples of the epoch not started are skipped. */
static void leave_round(prt *rt, ls_state *st, ls_dev *v)
{
    v->in = 0;
    st->n_in--;
    prt_add_lost_s(rt, prt_compute_s(rt, v->d) - v->c0);
    st->skipped += cl_skip_left(rt, v->d);
    v->samples = 0;
    if (v->arrived) {
        v->arrived = 0;
        st->arrived--;
    }
}

/* The next round (after an average, or a return while waiting): without
 * failures every participant; with them the participants up, those back
 * first receiving the model (and their shard if they lost it). */
static void next_round(prt *rt, ls_state *st)
{
    if (!st->fail_on) {
        start_round(rt, st);
        return;
    }
    cl_resend r;
    if (cl_resend_begin(rt, &r))
        goto done;
    st->n_in = 0;
    st->waiting = 0;
    st->syncing = 0;
    for (size_t i = 0; i < st->n_parts; i++) {
        ls_dev *v = &st->dev[st->parts[i]];
        v->arrived = 0;
        v->in = prt_device_up(rt, v->d);
        if (!v->in) {
            st->skipped += cl_skip_left(rt, v->d);
            continue;
        }
        st->n_in++;
        v->c0 = prt_compute_s(rt, v->d);
        if (v->back)
            cl_resend_add(rt, &r, v->d, v, v->has_data);
    }
    if (st->n_in == 0) { /* nobody up: wait for a return (or the run failed) */
        st->waiting = cl_none_up(rt, st->parts, st->n_parts);
        goto done;
    }
    if (cl_resend_send(rt, &r, on_ready))
        goto done;
    start_round(rt, st);
done:
    cl_resend_free(&r);
}

static void ls_on_device(prt *rt, const void *opts, size_t d, int up)
{
    (void)opts;
    ls_state *st = prt_state(rt);
    if (!st || prt_failed(rt) || prt_share(rt)[d] == 0)
        return; /* not a participant */
    ls_dev *v = &st->dev[d];
    if (up) {
        v->back = 1;
        if (st->waiting)
            next_round(rt, st);
        return;
    }
    v->back = 0;
    if (!cl_keeps_data(rt, d))
        v->has_data = 0;
    if (!v->in)
        return;
    /* sync: server: a model the server holds counts (the device misses the
     * download only) */
    if (st->o.sync == LS_SYNC_SERVER && v->arrived)
        return;
    leave_round(rt, st, v);
    if (st->syncing) /* the ring lost a member: the others run it again */
        prt_abort(rt);
    if (st->n_in == 0) {
        next_round(rt, st); /* a device back and up takes it; else the job waits */
    } else if (st->syncing || st->arrived == st->n_in) {
        average(rt, st);
    }
}

static int ls_start(prt *rt, const void *opts)
{
    const scn_scenario *s = prt_scn(rt);
    size_t n = prt_n(rt);
    ls_state *st = dp_calloc(1, sizeof *st);
    prt_set_state(rt, st);
    if (!st)
        return dp_err_set(prt_err(rt), DP_ENOMEM, "out of memory");
    st->o = *(const ls_opts *)opts;
    prt_learn_mode(rt, PRT_LEARN_LOCAL);
    st->dev = dp_calloc(n, sizeof *st->dev);
    st->parts = dp_calloc(n, sizeof *st->parts);
    st->ring = dp_calloc(n, sizeof *st->ring);
    st->fail_on = scn_has_failures(s);
    if (!st->dev || !st->parts || !st->ring || cl_stats_init(&st->cs, n))
        return dp_err_set(prt_err(rt), DP_ENOMEM, "out of memory for %zu devices", n);
    int rc;
    if (st->o.allocation == LS_ALLOC_CADP && (rc = cadp_allocation(rt, prt_share(rt))))
        return rc;
    for (size_t d = 0; d < n; d++)
        st->dev[d] =
            (ls_dev){rt, d, s->groups[s->devices[d].group].batch, st->o.steps, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    rc = cl_distribute(rt, st->o.allocation != LS_ALLOC_CADP, st->dev, sizeof *st->dev, st->parts,
                       &st->n_parts, on_ready);
    for (size_t i = 0; i < st->n_parts; i++)
        st->dev[st->parts[i]].in = 1;
    st->n_in = st->n_parts;
    return rc;
}

static void ls_free(prt *rt, const void *opts)
{
    (void)opts;
    ls_state *st = prt_state(rt);
    if (st) {
        dp_free(st->dev);
        dp_free(st->parts);
        dp_free(st->ring);
        cl_stats_free(&st->cs);
    }
    dp_free(st);
    prt_set_state(rt, NULL);
}

static int ls_check(const policy_def *p, const scn_scenario *s, const void *opts, dp_err *err)
{
    (void)p;
    const ls_opts *o = opts;
    if (o->batch_growth < 1)
        return dp_err_set(
            err, DP_EINPUT,
            "%s: policies.localsgd.batch_growth: a batch grows by a factor of at least 1 (got %g)",
            s->path ? s->path : "scenario", o->batch_growth);
    if (o->sync == LS_SYNC_RING)
        return coll_check_flows(s, "localsgd", o->collective, err);
    return 0;
}

static const char *const alloc_names[] = {"equal", "cadp", NULL};

static const popt ls_table[] = {
    {"steps", NULL, POPT_INT, SCN_UNIT_NUMBER, offsetof(ls_opts, steps), 16, 0, 1e9, NULL,
     "H: local steps per device between averages (0 = a whole local epoch)"},
    {"seconds", NULL, POPT_QUANTITY, SCN_UNIT_TIME, offsetof(ls_opts, seconds), 0, -1, 1e9, NULL,
     "T: average every T seconds instead, each device running the steps that fit (0 = use steps)"},
    {"sync", NULL, POPT_ENUM, SCN_UNIT_NUMBER, offsetof(ls_opts, sync), LS_SYNC_RING, 0, 0, cl_sync_names,
     "ring: all-reduce of the model among devices; server: push, average at the server, pull"},
    {"allocation", NULL, POPT_ENUM, SCN_UNIT_NUMBER, offsetof(ls_opts, allocation), LS_ALLOC_EQUAL, 0, 0,
     alloc_names, "equal: equal shards; cadp: C-ADP's allocation (its policies.cadp options)"},
    {"batch_growth", NULL, POPT_QUANTITY, SCN_UNIT_NUMBER, offsetof(ls_opts, batch_growth), 1, 0, 1e3, NULL,
     "local batch factor every growth_every rounds, up to the memory cap (1 = fixed)"},
    {"growth_every", NULL, POPT_INT, SCN_UNIT_NUMBER, offsetof(ls_opts, growth_every), 1, 1, 1e9, NULL,
     "rounds between batch growths"},
    {"collective", NULL, POPT_ENUM, SCN_UNIT_NUMBER, offsetof(ls_opts, collective), PRT_COLL_FLOWS, 0, 0,
     popt_collective_names, "sync: ring only: flows through the network model, or analytic"},
    {NULL, NULL, 0, 0, 0, 0, 0, 0, NULL, NULL},
};

const policy_def policy_localsgd = {
    .name = "localsgd",
    .label = "Local SGD",
    .color = "#000000",
    .summary = "local SGD: H local steps (or T seconds) on each shard, then a weighted model average",
    .opts = ls_table,
    .opts_size = sizeof(ls_opts),
    .check = ls_check,
    .start = ls_start,
    .free = ls_free,
    .on_device = ls_on_device,
};
