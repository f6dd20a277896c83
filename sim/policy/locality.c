/* locality.c: locality-aware batching (after "Locality-aware and
 * fault-tolerant batching for machine learning on distributed datasets"):
 * each device trains on the data it holds first and only what balance
 * requires moves (docs/MODEL.md section 4, "Locality-aware batching").
 *
 *  1. Split: `balance: speed` (default) gives the devices shares that end
 *     their epochs together: speed_i (T - c_i) samples, speed_i = batch /
 *     time of a batch (the scenario's cost model), c_i its model exchange
 *     with the server (upload and download at the path's bottleneck, plus
 *     latencies), T by water-filling (a device whose exchange alone
 *     exceeds T gets nothing); whole samples by largest remainder;
 *     `balance: local` gives each device exactly the samples it holds
 *     (dataset.parts on its group; nothing moves, however uneven), the
 *     samples no device holds going by speed as above.
 *  2. Data: prt_distribute, which with dataset.parts reads each device's
 *     own samples in place and moves only the rest, from its site first,
 *     then the nearest (runtime_data.c); a storage that fails re-plans
 *     from replicas or loses its samples there.
 *  3. Epochs, as C-ADP's: a device trains its share locally, uploads its
 *     model, the server averages (weights by samples) and sends it back.
 *     With `reread` a device keeps no copy of what it was sent: before
 *     every later epoch it reads its share again, through its site's cache
 *     (dataset.caches), beside the model download.
 *  4. Device failures (worlds with `availability`; docs/MODEL.md,
 *     "Locality-aware batching"): a participant that goes down leaves the
 *     run's plan.  Its work of the epoch not yet uploaded is lost (the
 *     epoch ends with the others' models); of its share, the samples no
 *     holder that is up has (its own slice: parts on devices have no
 *     replicas) are lost, the others are re-planned: split over the
 *     participants up so that their epochs end together again (water-
 *     filling on each one's epoch time with what it holds), each reading
 *     its part from the nearest holder over the real path
 *     (prt_data_fetch); they train them from the next epoch, which a
 *     device starts once they have arrived.  A device back rejoins at the
 *     next epoch with the samples its failure lost (its own slice, back
 *     with it).  With every participant down the epoch waits for the first
 *     device back, which starts it over (the run fails when none can come
 *     back).  `reread` is refused in such worlds. */
#include "runtime.h"

#include <math.h>
#include <stddef.h>

typedef struct loc_opts {
    int balance; /* 0 speed, 1 local */
    int reread;
} loc_opts;

static const char *const balance_names[] = {"speed", "local", NULL};

typedef struct loc_dev {
    prt *rt;
    size_t d;
    int waiting; /* arrivals before its next epoch starts (model, re-read, fetches) */
    int part;    /* a participant (a share at the start; one lost to a failed storage stays one) */
    /* device failures only */
    int in_epoch;       /* one of the epoch's uploads the server waits for */
    int uploaded;       /* its upload of this epoch arrived */
    int in_wait;        /* its next epoch waits for `waiting` arrivals */
    int fetching;       /* re-planned samples' fetches on their way */
    int rejoin;         /* back up: takes part again from the next epoch */
    int64_t pend_share; /* re-planned samples it trains from the next epoch */
    int64_t dropped;    /* samples its failure lost (its own), taken back when it returns */
    double c0;          /* its compute seconds at its epoch's start */
} loc_dev;

typedef struct loc_state {
    loc_dev *dev;
    size_t parts, uploaded;
    int bs_max;
    const loc_opts *o;
    double *speed, *cx; /* per device: samples per second, model exchange seconds */
    int stranded;       /* every participant down: the first device back starts the epoch over */
    int64_t orphan;     /* samples re-planned while nobody could take them */
    int64_t replanned;  /* samples handed to other devices after failures */
} loc_state;

/* Seconds of one model exchange of device d with the server (upload and
 * download, each at its path's bottleneck, plus latencies): what an epoch
 * costs it beside compute. */
static double exchange_s(prt *rt, size_t d)
{
    double M = prt_scn(rt)->model.model_bytes, t = 0;
    for (int dir = 0; dir < 2; dir++) {
        int links[NET_MAX_PATH];
        size_t nl;
        double lat, cap = INFINITY;
        if (world_path(prt_world(rt), dir ? 0 : (int)d + 1, dir ? (int)d + 1 : 0, links, &nl, &lat))
            return INFINITY;
        for (size_t k = 0; k < nl; k++)
            cap = fmin(cap, net_link_capacity(world_net(prt_world(rt)), links[k]));
        t += lat + (isfinite(cap) && cap > 0 ? (dir ? M : prt_wire_bytes(rt, M)) / cap : 0);
    }
    return t;
}

/* rest samples spread over the devices with speed[d] > 0 so that every
 * one that gets some ends at the same time T: speed[d] (T - c[d]) samples
 * each (water-filling on T: a device whose c[d] exceeds T gets none),
 * whole samples by largest remainder, into out. */
static int waterfill(prt *rt, const double *speed, const double *c, int64_t rest, int64_t *out)
{
    size_t n = prt_n(rt);
    double *frac = dp_calloc(n ? n : 1, sizeof *frac);
    if (!frac)
        return prt_fail(rt, DP_ENOMEM, "out of memory");
    /* T: the smallest level at which sum speed (T - c)+ reaches rest,
     * found over the devices in order of c (a few devices: quadratic) */
    double T = 0;
    for (size_t round = 0; round < n; round++) {
        double S = 0, Sc = 0;
        for (size_t d = 0; d < n; d++)
            if (speed[d] > 0 && c[d] <= T) {
                S += speed[d];
                Sc += speed[d] * c[d];
            }
        double t = S > 0 ? ((double)rest + Sc) / S : INFINITY, next = INFINITY;
        for (size_t d = 0; d < n; d++)
            if (speed[d] > 0 && c[d] > T && c[d] < next)
                next = c[d];
        if (t <= next) {
            T = t;
            break;
        }
        T = next;
    }
    int64_t given = 0;
    for (size_t d = 0; d < n; d++) {
        double v = speed[d] > 0 && c[d] < T ? speed[d] * (T - c[d]) : 0;
        out[d] = (int64_t)floor(v);
        if (out[d] > rest)
            out[d] = rest;
        frac[d] = v - (double)out[d];
        given += out[d];
    }
    while (given < rest) { /* the largest remainders, the first device on ties */
        size_t b = 0;
        for (size_t d = 1; d < n; d++)
            if (frac[d] > frac[b])
                b = d;
        out[b]++;
        frac[b] = -1;
        given++;
    }
    while (given > rest) { /* rounding past rest: take from the largest share */
        size_t b = 0;
        for (size_t d = 1; d < n; d++)
            if (out[d] > out[b])
                b = d;
        out[b]--;
        given--;
    }
    dp_free(frac);
    return 0;
}

/* Shares: rest = D - sum fixed samples by waterfill over the exchange
 * times c, fixed[d] samples on top. */
static int split(prt *rt, const double *speed, const double *c, const int64_t *fixed)
{
    size_t n = prt_n(rt);
    int64_t rest = prt_scn(rt)->dataset.samples, *share = prt_share(rt);
    for (size_t d = 0; d < n; d++)
        rest -= fixed[d];
    int rc = waterfill(rt, speed, c, rest, share);
    for (size_t d = 0; !rc && d < n; d++)
        share[d] += fixed[d];
    return rc;
}

static void epoch_on(prt *rt, loc_dev *v);

static void on_local_done(prt *rt, void *ctx)
{
    loc_dev *v = ctx;
    epoch_on(rt, v);
}

static void on_upload(void *ctx, uint64_t id);

/* Device v trains what is left of its share, then uploads its model. */
static void epoch_on(prt *rt, loc_dev *v)
{
    size_t d = v->d;
    if (prt_left(rt)[d] > 0) {
        int bs = prt_scn(rt)->groups[prt_scn(rt)->devices[d].group].batch;
        prt_compute_left(rt, d, bs, on_local_done, v);
        return;
    }
    double w = prt_wire_bytes(rt, prt_scn(rt)->model.model_bytes);
    prt_set_act(rt, d, RES_ACT_SEND);
    prt_add_server_bytes(rt, d, w);
    if (!world_transfer(prt_world(rt), (int)d + 1, 0, w, on_upload, v))
        prt_fail(rt, DP_ENOMEM, "out of memory");
}

static void arrived(prt *rt, loc_dev *v)
{
    if (--v->waiting > 0)
        return;
    v->in_wait = 0;
    v->c0 = prt_compute_s(rt, v->d);
    prt_set_act(rt, v->d, RES_ACT_WAIT);
    prt_left(rt)[v->d] = prt_share(rt)[v->d];
    epoch_on(rt, v);
}

static void on_download(void *ctx, uint64_t id)
{
    (void)id;
    loc_dev *v = ctx;
    arrived(v->rt, v);
}

static void on_reread(prt *rt, void *ctx)
{
    arrived(rt, ctx);
}

/* Re-planned samples arrived: a device waiting to start its epoch counts
 * them as one of its arrivals. */
static void on_fetched(void *ctx, uint64_t id)
{
    (void)id;
    loc_dev *v = ctx;
    v->fetching--;
    if (v->in_wait)
        arrived(v->rt, v);
}

/* Device v takes part in the epoch about to start: the model (and, with
 * reread, its share again; and re-planned samples still on their way)
 * before it trains. */
static void join_epoch(prt *rt, loc_dev *v)
{
    loc_state *st = prt_state(rt);
    size_t d = v->d;
    double M = prt_scn(rt)->model.model_bytes;
    prt_share(rt)[d] += v->pend_share;
    v->pend_share = 0;
    v->in_epoch = 1;
    v->uploaded = 0;
    v->in_wait = 1;
    st->parts++;
    v->waiting = (st->o->reread ? 2 : 1) + v->fetching;
    prt_set_act(rt, d, RES_ACT_RECV_MODEL);
    prt_add_server_bytes(rt, d, M);
    if (!world_transfer(prt_world(rt), 0, (int)d + 1, M, on_download, v)) {
        prt_fail(rt, DP_ENOMEM, "out of memory");
        return;
    }
    if (st->o->reread)
        prt_data_reread(rt, d, on_reread, v);
}

static void next_epoch(prt *rt, void *ctx)
{
    (void)ctx;
    loc_state *st = prt_state(rt);
    st->parts = 0;
    for (size_t d = 0; d < prt_n(rt) && !prt_failed(rt); d++) {
        loc_dev *v = &st->dev[d];
        if (v->rejoin && prt_device_up(rt, d)) { /* back: its own samples again */
            v->rejoin = 0;
            v->part = 1;
            prt_share(rt)[d] = v->dropped;
            v->dropped = 0;
        }
        if (v->part)
            join_epoch(rt, v);
    }
}

static void aggregated(prt *rt, void *ctx)
{
    (void)ctx;
    loc_state *st = prt_state(rt);
    prt_learn_average(rt, NULL, 0, 1, 1);
    int more = prt_end_epoch(rt);
    if (more == 0 && scn_has_failures(prt_scn(rt)))
        prt_stat(rt, "locality.samples_replanned", RES_SCOPE_RUN, 0, 0, (double)st->replanned);
    if (more <= 0)
        return;
    st->uploaded = 0;
    for (size_t d = 0; d < prt_n(rt); d++)
        st->dev[d].in_epoch = 0;
    if (prt_at(rt, prt_now(rt), next_epoch, NULL))
        prt_fail(rt, DP_ENOMEM, "out of memory");
}

/* Every upload the server waits for has arrived: it averages them. */
static void aggregate(prt *rt)
{
    loc_state *st = prt_state(rt);
    const scn_scenario *s = prt_scn(rt);
    double agg = isfinite(s->server.aggregate_Bps) ? (double)st->parts * s->model.model_bytes / s->server.aggregate_Bps : 0;
    if (prt_at(rt, prt_now(rt) + agg, aggregated, NULL))
        prt_fail(rt, DP_ENOMEM, "out of memory");
}

static void on_upload(void *ctx, uint64_t id)
{
    (void)id;
    loc_dev *v = ctx;
    prt *rt = v->rt;
    loc_state *st = prt_state(rt);
    prt_set_act(rt, v->d, RES_ACT_WAIT);
    v->uploaded = 1;
    if (++st->uploaded < st->parts)
        return;
    aggregate(rt);
}

/* Device d's share goes to the participants up, so that their epochs end
 * together again: what a holder still has, read from the nearest one; the
 * rest is lost (kept as d's, for its return). */
static void replan(prt *rt, size_t d)
{
    loc_state *st = prt_state(rt);
    loc_dev *v = &st->dev[d];
    size_t n = prt_n(rt);
    int64_t S = prt_share(rt)[d] + v->pend_share, R = prt_data_available(rt, d, S);
    v->pend_share = 0;
    prt_share(rt)[d] = 0;
    prt_left(rt)[d] = 0;
    v->dropped += S - R;
    prt_data_lose(rt, S - R);
    double *speed = dp_calloc(n, sizeof *speed), *c = dp_calloc(n, sizeof *c);
    int64_t *extra = dp_calloc(n, sizeof *extra);
    size_t up = 0;
    if (!speed || !c || !extra) {
        prt_fail(rt, DP_ENOMEM, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        if (!st->dev[i].part || !prt_device_up(rt, i))
            continue;
        up++;
        speed[i] = st->speed[i];
        c[i] = st->cx[i] + (double)(prt_share(rt)[i] + st->dev[i].pend_share) / st->speed[i];
    }
    if (R > 0 && up == 0) { /* nobody to take them: the first device back will */
        st->orphan += R;
        goto done;
    }
    if (R > 0 && waterfill(rt, speed, c, R, extra))
        goto done;
    st->replanned += R;
    for (size_t i = 0; i < n && !prt_failed(rt); i++) {
        if (extra[i] <= 0)
            continue;
        loc_dev *u = &st->dev[i];
        u->pend_share += extra[i];
        u->fetching++;
        int64_t lost = prt_data_fetch(rt, i, extra[i], (long)d, 1, on_fetched, u);
        if (lost > 0)
            u->pend_share -= lost;
    }
done:
    dp_free(speed);
    dp_free(c);
    dp_free(extra);
}

/* Nobody is left to finish the epoch: it starts over with device v, back,
 * taking the samples nobody could. */
static void restart_with(prt *rt, loc_dev *v)
{
    loc_state *st = prt_state(rt);
    st->stranded = 0;
    st->uploaded = 0;
    st->parts = 0;
    v->rejoin = 0;
    v->part = 1;
    prt_share(rt)[v->d] = v->dropped;
    v->dropped = 0;
    if (st->orphan > 0) {
        v->pend_share += st->orphan;
        v->fetching++;
        int64_t lost = prt_data_fetch(rt, v->d, st->orphan, -1, 1, on_fetched, v);
        if (lost > 0)
            v->pend_share -= lost;
        st->orphan = 0;
    }
    join_epoch(rt, v);
}

static void loc_on_device(prt *rt, const void *opts, size_t d, int up)
{
    (void)opts;
    loc_state *st = prt_state(rt);
    loc_dev *v = &st->dev[d];
    if (up) {
        if (v->dropped <= 0 && !(st->stranded && st->orphan > 0))
            return; /* nothing of its own to train: it stays out */
        v->rejoin = 1;
        if (st->stranded)
            restart_with(rt, v);
        return;
    }
    if (!v->part)
        return;
    v->part = 0;
    v->in_wait = 0;
    v->fetching = 0; /* its fetches were cut */
    int owed = v->in_epoch && !v->uploaded; /* an upload the server waits for */
    if (owed) { /* its work since the epoch's start is lost */
        v->in_epoch = 0;
        st->parts--;
        prt_add_lost_s(rt, prt_compute_s(rt, d) - v->c0);
    }
    replan(rt, d);
    if (prt_failed(rt) || !owed)
        return;
    if (st->parts > 0) { /* the others' uploads may all be there */
        if (st->uploaded >= st->parts)
            aggregate(rt);
        return;
    }
    /* nobody is left in the epoch */
    for (size_t i = 0; i < prt_n(rt); i++)
        if (isfinite(world_dev_next_change(prt_world(rt), i))) {
            st->stranded = 1;
            return;
        }
    prt_fail(rt, DP_ERUN, "locality: every participant is down for good at t = %.6g s (epoch %d)", prt_now(rt),
             prt_epoch(rt));
}

static void on_ready(prt *rt, void *ctx)
{
    loc_dev *v = ctx;
    v->c0 = prt_compute_s(rt, v->d);
    prt_left(rt)[v->d] = prt_share(rt)[v->d];
    epoch_on(rt, v);
}

static int loc_start(prt *rt, const void *opts)
{
    const loc_opts *o = opts;
    const scn_scenario *s = prt_scn(rt);
    size_t n = prt_n(rt);
    loc_state *st = dp_calloc(1, sizeof *st);
    if (!st)
        return prt_fail(rt, DP_ENOMEM, "out of memory");
    prt_set_state(rt, st);
    st->o = o;
    st->dev = dp_calloc(n ? n : 1, sizeof *st->dev);
    st->speed = dp_calloc(n ? n : 1, sizeof *st->speed);
    st->cx = dp_calloc(n ? n : 1, sizeof *st->cx);
    double *weight = dp_calloc(n ? n : 1, sizeof *weight), *cx = dp_calloc(n ? n : 1, sizeof *cx), *bytes = dp_calloc(n ? n : 1, sizeof *bytes);
    int64_t *fixed = dp_calloc(n ? n : 1, sizeof *fixed);
    int *skip = dp_calloc(n ? n : 1, sizeof *skip);
    void **ctx = dp_calloc(n ? n : 1, sizeof *ctx);
    int rc = 0;
    if (!st->dev || !st->speed || !st->cx || !weight || !cx || !bytes || !fixed || !skip || !ctx) {
        rc = prt_fail(rt, DP_ENOMEM, "out of memory");
        goto done;
    }
    prt_learn_mode(rt, PRT_LEARN_LOCAL);
    for (size_t d = 0; d < n; d++) {
        const scn_group *g = &s->groups[s->devices[d].group];
        st->dev[d] = (loc_dev){.rt = rt, .d = d};
        ctx[d] = &st->dev[d];
        weight[d] = g->batch / scn_batch_time(s, g, g->batch); /* samples per second */
        cx[d] = exchange_s(rt, d);
        st->speed[d] = weight[d];
        st->cx[d] = cx[d];
        if (o->balance == 1) { /* its own samples, no more: the rest by speed */
            fixed[d] = prt_data_local(rt, d);
            weight[d] = fixed[d] > 0 ? 0 : weight[d];
        }
    }
    double W = 0;
    for (size_t d = 0; d < n; d++)
        W += weight[d];
    for (size_t d = 0; W == 0 && d < n; d++) /* every device holds some: the rest by speed over all */
        weight[d] = s->groups[s->devices[d].group].batch /
                    scn_batch_time(s, &s->groups[s->devices[d].group], s->groups[s->devices[d].group].batch);
    if ((rc = split(rt, weight, cx, fixed)))
        goto done;
    for (size_t d = 0; d < n; d++) {
        bytes[d] = (double)prt_share(rt)[d] * s->dataset.sample_bytes;
        skip[d] = prt_share(rt)[d] == 0;
        st->dev[d].part = st->dev[d].in_epoch = !skip[d];
        st->parts += !skip[d];
    }
    prt_stat(rt, "locality.participants", RES_SCOPE_RUN, 0, 0, (double)st->parts);
    rc = prt_distribute(rt, bytes, skip, on_ready, ctx);
done:
    dp_free(weight);
    dp_free(cx);
    dp_free(bytes);
    dp_free(fixed);
    dp_free(skip);
    dp_free(ctx);
    return rc;
}

static void loc_free(prt *rt, const void *opts)
{
    (void)opts;
    loc_state *st = prt_state(rt);
    if (st) {
        dp_free(st->dev);
        dp_free(st->speed);
        dp_free(st->cx);
    }
    dp_free(st);
    prt_set_state(rt, NULL);
}

static int loc_check(const policy_def *p, const scn_scenario *s, const void *opts, dp_err *err)
{
    const loc_opts *o = opts;
    if (o->reread && !s->data)
        return popt_fail(s, p->name, "reread", err,
                         "re-reading needs the dataset's places (dataset.parts, .storage or .caches)");
    if (o->reread && scn_has_failures(s))
        return popt_fail(s, p->name, "reread", err,
                         "re-reading is not modelled with device failures (availability)");
    return 0;
}

static const popt loc_table[] = {
    {"balance", NULL, POPT_ENUM, SCN_UNIT_NUMBER, offsetof(loc_opts, balance), 0, 0, 0, balance_names,
     "speed: shares that end every device's epoch (compute and model exchange) together, its own samples used "
     "first; local: each device its own samples"},
    {"reread", NULL, POPT_BOOL, SCN_UNIT_NUMBER, offsetof(loc_opts, reread), 0, 0, 0, NULL,
     "devices keep no copy: every later epoch reads its share again, through its site's cache"},
    {NULL, NULL, 0, 0, 0, 0, 0, 0, NULL, NULL},
};

const policy_def policy_locality = {
    .name = "locality",
    .label = "Locality",
    .color = "#a6761d",
    .summary = "locality-aware batching: local data first, only what balance requires moves; local epochs, "
               "server average",
    .opts = loc_table,
    .opts_size = sizeof(loc_opts),
    .check = loc_check,
    .start = loc_start,
    .free = loc_free,
    .on_device = loc_on_device,
};
