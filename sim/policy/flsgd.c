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
 * forced synchronously; the epoch ends once it is averaged (sync: server,
 * before its downloads: docs/MODEL.md, "When a run ends") and the next
 * epoch starts when every member holds it.
 *
 * Statistics: an update's staleness is 1 (period) for a background average
 * and 0 for the forced one.
 *
 * Failures (worlds with `availability`; scenarios/README.md): averages run
 * over the devices up and holding the model (`in`); a device going down
 * leaves the average in flight (a ring restarts among the others after
 * coll_drop_broken; the server stops waiting for its upload) and the epoch
 * (its samples not started skipped); back, it receives the model when the
 * next average ends.
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
    int exh;                        /* counted in `exhausted` this epoch */
    /* worlds with failures */
    int in;        /* takes part in averages (up, holding the model) */
    int in_avg;    /* its work is in the average in flight */
    int phase;     /* sync: server, in that average: 1 uploading, 2 uploaded, 3 downloading */
    int back;      /* up again: receives the model when the next average ends */
    int has_data;  /* holds its shard */
    int64_t snap;  /* samples it gave the average in flight */
    double c_last; /* its compute seconds at the launch of the last average it joined */
    double c_prev; /* ... and of the one before (start of the work in flight) */
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
    /* worlds with failures (scenarios/README.md) */
    int fail_on;
    size_t *mem, n_avg; /* members of the average in flight (n_parts without failures) */
    size_t dl_target;   /* sync: server: downloads of that average */
    int waiting;        /* no participant up: 1 an epoch's start, 2 its end waits for a return */
    int64_t skipped;    /* samples of an epoch a device down did not start */
} fl_state;

static void run(prt *rt, void *ctx);
static void launch(prt *rt, fl_state *st, int forced);
static void maybe_launch(prt *rt, fl_state *st);
static void epoch_start(prt *rt, fl_state *st);
static void rejoin(prt *rt, fl_state *st);

/* The average in flight is complete for the update stream and the
 * statistics (its members stay in_avg until it reached them: avg_done). */
static void count_average(prt *rt, fl_state *st)
{
    prt_learn_average_end(rt, st->mem, st->n_avg); /* applied one period stale */
    st->cs.rounds++;
    cl_update(&st->cs, st->snap_batch, st->snap_devs, st->forced ? 0 : 1);
}

/* The forced average of an epoch is complete (ring: every member holds
 * it; server: averaged at the server, before its downloads): the epoch
 * ends here, since the model is trained once it is averaged (docs/MODEL.md,
 * "When a run ends"); its downloads belong to the next epoch, and after the
 * last there are none.  0 to go on, 1 when the run is over (or failed). */
static int forced_averaged(prt *rt, fl_state *st)
{
    count_average(rt, st);
    if (prt_epoch(rt) >= prt_scn(rt)->training.epochs &&
        (cl_emit(rt, &st->cs) ||
         (st->fail_on && prt_stat(rt, "samples_skipped", RES_SCOPE_RUN, 0, 0, (double)st->skipped))))
        return 1;
    return prt_end_epoch(rt) <= 0;
}

/* The average reached every member. */
static void avg_done(prt *rt, void *ctx)
{
    (void)ctx;
    fl_state *st = prt_state(rt);
    st->inflight = 0;
    for (size_t i = 0; i < st->n_parts; i++)
        st->dev[st->parts[i]].in_avg = 0;
    if (st->forced) {
        if (st->o.sync == FL_SYNC_RING && forced_averaged(rt, st))
            return;
        epoch_start(rt, st);
        return;
    }
    count_average(rt, st);
    if (st->fail_on)
        rejoin(rt, st);
    if (st->closing) {
        launch(rt, st, 1);
        return;
    }
    maybe_launch(rt, st); /* at once if the devices already have H new steps */
}

/* ---- sync: server ---- */

/* v's model reached the server (phase 2) or v (phase 0); a device that
 * waits for the forced average waits on. */
static fl_state *transfer_done(fl_dev *v, int phase)
{
    fl_state *st = prt_state(v->rt);
    if (st->forced)
        prt_set_act(v->rt, v->d, RES_ACT_WAIT);
    v->phase = phase;
    return st;
}

static void on_download(void *ctx, uint64_t id)
{
    (void)id;
    fl_dev *v = ctx;
    fl_state *st = transfer_done(v, 0);
    if (++st->downloaded == st->dl_target)
        avg_done(v->rt, NULL);
}

static void averaged(prt *rt, void *ctx)
{
    (void)ctx;
    fl_state *st = prt_state(rt);
    if (st->forced && forced_averaged(rt, st))
        return; /* the run is over: the model is not sent back */
    double M = prt_scn(rt)->model.model_bytes;
    st->dl_target = 0;
    for (size_t i = 0; i < st->n_avg; i++)
        st->dl_target += !st->fail_on || prt_device_up(rt, st->mem[i]);
    if (st->dl_target == 0) { /* every member went down since its upload */
        avg_done(rt, NULL);
        return;
    }
    for (size_t i = 0; i < st->n_avg; i++) {
        fl_dev *v = &st->dev[st->mem[i]];
        if (st->fail_on && !prt_device_up(rt, v->d))
            continue;
        v->phase = 3;
        if (st->forced)
            prt_set_act(rt, v->d, RES_ACT_RECV_MODEL);
        prt_add_server_bytes(rt, v->d, M);
        if (!world_transfer(prt_world(rt), 0, (int)v->d + 1, M, on_download, v)) {
            prt_fail(rt, DP_ENOMEM, "out of memory");
            return;
        }
    }
}

/* Every member's model is at the server: average them. */
static void aggregate(prt *rt, fl_state *st)
{
    if (prt_at(rt, prt_now(rt) + cl_aggregate_s(rt, (double)st->uploaded), averaged, NULL))
        prt_fail(rt, DP_ENOMEM, "out of memory");
}

/* sync: ring, among the members of the average (all participants without
 * failures). */
static void ring_average(prt *rt, fl_state *st)
{
    double M = prt_wire_bytes(rt, prt_scn(rt)->model.model_bytes); /* the ring's tensor, as compressed */
    const size_t *mem = st->n_avg == prt_n(rt) ? NULL : st->mem;
    if (st->o.collective == PRT_COLL_ANALYTIC)
        cl_tally_ring(rt, &st->cs, mem, st->n_avg, COLL_ALLREDUCE, M);
    if (mem)
        coll_start_among(rt, COLL_ALLREDUCE, M, st->o.collective, mem, st->n_avg, avg_done, NULL);
    else
        coll_start(rt, COLL_ALLREDUCE, M, st->o.collective, avg_done, NULL);
}

static void on_upload(void *ctx, uint64_t id)
{
    (void)id;
    fl_dev *v = ctx;
    fl_state *st = transfer_done(v, 2);
    if (++st->uploaded == st->n_avg)
        aggregate(v->rt, st);
}

/* Start an average of what every device accumulated.  Devices that are
 * computing keep their activity: the transfers run beside their steps. */
static void launch(prt *rt, fl_state *st, int forced)
{
    st->inflight = 1;
    st->forced = forced;
    st->snap_batch = st->snap_devs = 0;
    st->n_avg = 0;
    for (size_t i = 0; i < st->n_parts; i++) {
        fl_dev *v = &st->dev[st->parts[i]];
        if (!v->in)
            continue; /* down, or receiving the model */
        st->snap_batch += v->acc_samples;
        st->snap_devs += v->acc_samples > 0;
        v->snap = v->acc_samples;
        v->acc_steps = v->acc_samples = 0;
        v->in_avg = 1;
        v->c_prev = v->c_last;
        v->c_last = prt_compute_s(rt, v->d);
        st->mem[st->n_avg++] = v->d;
    }
    prt_learn_average_begin(rt, st->mem, st->n_avg); /* the update stream: what each accumulated */
    double M = prt_wire_bytes(rt, prt_scn(rt)->model.model_bytes); /* the uploads, as compressed */
    if (st->o.sync == FL_SYNC_RING) {
        ring_average(rt, st);
        return;
    }
    st->uploaded = st->downloaded = 0;
    if (st->n_avg == 0) { /* nobody up: nothing to average */
        averaged(rt, NULL);
        return;
    }
    for (size_t i = 0; i < st->n_avg; i++) {
        fl_dev *v = &st->dev[st->mem[i]];
        v->phase = 1;
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
        if (!v->in)
            continue; /* down, or receiving the model: not waited for */
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

static int none_up(prt *rt, fl_state *st, int why);

/* Device v has no samples left this epoch; the last one closes it (with
 * failures: once a participant is up, so no epoch ends with all down). */
static void exhaust(prt *rt, fl_state *st, fl_dev *v)
{
    if (v->exh)
        return;
    v->exh = 1;
    if (++st->exhausted == st->n_parts && !(st->fail_on && none_up(rt, st, 2))) {
        st->closing = 1;
        if (!st->inflight)
            launch(rt, st, 1);
    }
}

static void run(prt *rt, void *ctx)
{
    fl_dev *v = ctx;
    fl_state *st = prt_state(rt);
    int64_t *left = prt_left(rt);
    if (left[v->d] <= 0) {
        prt_set_act(rt, v->d, RES_ACT_WAIT);
        exhaust(rt, st, v);
        return;
    }
    int bs = prt_scn(rt)->groups[prt_scn(rt)->devices[v->d].group].batch;
    int n = left[v->d] < bs ? (int)left[v->d] : bs;
    left[v->d] -= n;
    v->n = n;
    st->cs.steps[v->d]++;
    prt_compute(rt, v->d, n, 1.0, after_step, v, NULL);
}

static void on_ready(prt *rt, void *ctx)
{
    ((fl_dev *)ctx)->has_data = 1;
    run(rt, ctx);
}

/* ---- failures ---------------------------------------------------------------- */

/* Back with the model (and its shard): it takes part again. */
static void on_rejoined(prt *rt, void *ctx)
{
    fl_dev *v = ctx;
    v->in = 1;
    v->back = 0;
    v->has_data = 1;
    v->acc_steps = v->acc_samples = 0;
    v->c_last = prt_compute_s(rt, v->d);
    run(rt, v);
}

/* Devices back and up receive the model from the server (and their shard
 * if they lost it): resent bytes. */
static void rejoin(prt *rt, fl_state *st)
{
    cl_resend r;
    if (cl_resend_begin(rt, &r))
        goto done;
    for (size_t d = 0; d < prt_n(rt); d++) {
        fl_dev *v = &st->dev[d];
        if (!v->back || !prt_device_up(rt, d))
            continue;
        v->back = 0; /* once: the transfer is under way */
        cl_resend_add(rt, &r, d, v, v->has_data);
    }
    cl_resend_send(rt, &r, on_rejoined);
done:
    cl_resend_free(&r);
}

/* 1 if no participant is up: the job waits for a return (st->waiting =
 * `why`: 1 to start the epoch, 2 to close it), or the run failed. */
static int none_up(prt *rt, fl_state *st, int why)
{
    int none = cl_none_up(rt, st->parts, st->n_parts);
    st->waiting = none ? why : 0;
    return none;
}

/* A new epoch: every participant runs; with failures those down skip it,
 * those back join once they hold the model, and with nobody up the epoch
 * waits for a return (or the run fails if none can come). */
static void epoch_start(prt *rt, fl_state *st)
{
    st->closing = 0;
    st->exhausted = 0;
    for (size_t i = 0; i < st->n_parts; i++)
        st->dev[st->parts[i]].exh = 0;
    if (st->fail_on) {
        if (none_up(rt, st, 1))
            return;
        for (size_t i = 0; i < st->n_parts; i++) {
            fl_dev *v = &st->dev[st->parts[i]];
            if (!prt_device_up(rt, v->d)) {
                st->skipped += cl_skip_left(rt, v->d);
                v->exh = 1;
                st->exhausted++;
            }
        }
        rejoin(rt, st);
    }
    for (size_t i = 0; i < st->n_parts && !prt_failed(rt); i++) {
        fl_dev *v = &st->dev[st->parts[i]];
        if (v->in && !v->exh)
            run(rt, v);
    }
}

/* Device v goes down: it leaves the averaging.  Its work since its last
 * contribution that reaches an average is lost; its samples not started
 * are skipped.  An average in flight goes on without it: a ring it was in
 * runs again among the others (their contributions unchanged); the server
 * does not wait for its upload, and a model it already received counts. */
static void went_down(prt *rt, fl_state *st, fl_dev *v)
{
    int avg_loses = v->in_avg && (st->o.sync == FL_SYNC_RING || v->phase == 1);
    v->in = 0;
    prt_add_lost_s(rt, prt_compute_s(rt, v->d) - (avg_loses ? v->c_prev : v->c_last));
    st->skipped += cl_skip_left(rt, v->d);
    v->acc_steps = v->acc_samples = 0;
    if (v->in_avg && st->inflight) {
        if (avg_loses) {
            st->snap_batch -= v->snap;
            st->snap_devs -= v->snap > 0;
            v->in_avg = 0;
            size_t m = 0;
            for (size_t i = 0; i < st->n_avg; i++)
                if (st->mem[i] != v->d)
                    st->mem[m++] = st->mem[i];
            st->n_avg = m;
            if (st->o.sync == FL_SYNC_RING) {
                coll_drop_broken(rt);
                ring_average(rt, st);
            } else if (st->uploaded == st->n_avg) {
                aggregate(rt, st);
            }
        } else if (v->phase == 3) { /* its download is cut */
            v->in_avg = 0;
            if (--st->dl_target == st->downloaded)
                avg_done(rt, NULL);
        }
    }
    if (prt_failed(rt))
        return;
    if (!v->exh)
        exhaust(rt, st, v); /* may close the epoch */
    maybe_launch(rt, st);   /* it no longer holds an average back */
}

static void fl_on_device(prt *rt, const void *opts, size_t d, int up)
{
    (void)opts;
    fl_state *st = prt_state(rt);
    if (!st || prt_failed(rt) || prt_share(rt)[d] == 0)
        return; /* not a participant */
    fl_dev *v = &st->dev[d];
    if (up) {
        v->back = 1;
        if (st->waiting == 1) {
            epoch_start(rt, st);
        } else if (st->waiting == 2) { /* the epoch closes now; v rejoins after its last average */
            st->waiting = 0;
            st->closing = 1;
            if (!st->inflight)
                launch(rt, st, 1);
        }
        return;
    }
    v->back = 0;
    if (!cl_keeps_data(rt, d))
        v->has_data = 0;
    if (v->in) {
        went_down(rt, st, v);
    } else if (!v->exh) { /* it was receiving the model to rejoin: its epoch is skipped */
        st->skipped += cl_skip_left(rt, d);
        exhaust(rt, st, v);
    }
}

static int fl_start(prt *rt, const void *opts)
{
    size_t n = prt_n(rt);
    fl_state *st = dp_calloc(1, sizeof *st);
    prt_set_state(rt, st);
    if (!st)
        return dp_err_set(prt_err(rt), DP_ENOMEM, "out of memory");
    st->o = *(const fl_opts *)opts;
    prt_learn_mode(rt, PRT_LEARN_LOCAL);
    st->dev = dp_calloc(n, sizeof *st->dev);
    st->parts = dp_calloc(n, sizeof *st->parts);
    st->mem = dp_calloc(n, sizeof *st->mem);
    if (!st->dev || !st->parts || !st->mem || cl_stats_init(&st->cs, n))
        return dp_err_set(prt_err(rt), DP_ENOMEM, "out of memory for %zu devices", n);
    st->fail_on = scn_has_failures(prt_scn(rt));
    for (size_t d = 0; d < n; d++)
        st->dev[d] = (fl_dev){.rt = rt, .d = d, .in = 1};
    return cl_distribute(rt, 1, st->dev, sizeof *st->dev, st->parts, &st->n_parts, on_ready);
}

static void fl_free(prt *rt, const void *opts)
{
    (void)opts;
    fl_state *st = prt_state(rt);
    if (st) {
        dp_free(st->dev);
        dp_free(st->parts);
        dp_free(st->mem);
        cl_stats_free(&st->cs);
    }
    dp_free(st);
    prt_set_state(rt, NULL);
}

static int fl_check(const policy_def *p, const scn_scenario *s, const void *opts, dp_err *err)
{
    const fl_opts *o = opts;
    return o->sync == FL_SYNC_RING ? coll_check_flows(s, p->name, o->collective, err) : 0;
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
    .color = "#882255",
    .summary = "local SGD with the average in the background: devices never wait, apply a one-period-stale "
               "average",
    .opts = fl_table,
    .opts_size = sizeof(fl_opts),
    .check = fl_check,
    .start = fl_start,
    .free = fl_free,
    .on_device = fl_on_device,
};
