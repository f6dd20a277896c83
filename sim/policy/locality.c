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
 *     "Locality-aware batching"): a participant that goes down loses its
 *     work of the epoch not yet uploaded (the epoch ends with the others'
 *     models); its own slice is out of reach until it is back (counted in
 *     data.samples_lost: parts on devices have no replicas).  The next
 *     epoch re-plans over the devices up: the split of step 1 over the
 *     samples a holder that is up still has, and a device whose share is
 *     more than it holds (its own slice and what it received) reads the
 *     difference from the nearest holders over the real path
 *     (prt_data_fetch) before it trains; a device back takes part so
 *     again.  With every participant down the epoch waits for the first
 *     device back and starts over (the run fails when none can come
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
    int in_epoch; /* one of the epoch's uploads the server waits for */
    int uploaded; /* its upload of this epoch arrived */
    int in_wait;  /* its next epoch waits for `waiting` arrivals */
    int fetching; /* re-planned samples' fetch on its way */
    int64_t own;  /* samples it holds itself (its slice of dataset.parts) */
    int64_t recv; /* samples it received and keeps */
    double c0;    /* its compute seconds at its epoch's start */
} loc_dev;

typedef struct loc_state {
    loc_dev *dev;
    size_t parts, uploaded;
    int bs_max;
    const loc_opts *o;
    double *speed, *cx; /* per device: samples per second, model exchange seconds */
    int dirty;          /* a device went down or came back: the next epoch re-plans */
    int stranded;       /* every participant down: the first device back starts the epoch over */
    int64_t replanned;  /* samples read again for a re-plan */
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

static int plan_shares(prt *rt, const int *up, int64_t total);

/* The split over the devices up after a failure or a return: each device
 * short of its share reads the difference from the nearest holders. */
static void replan(prt *rt)
{
    loc_state *st = prt_state(rt);
    size_t n = prt_n(rt);
    int *up = dp_calloc(n ? n : 1, sizeof *up);
    if (!up) {
        prt_fail(rt, DP_ENOMEM, "out of memory");
        return;
    }
    for (size_t d = 0; d < n; d++)
        up[d] = prt_device_up(rt, d);
    int rc = plan_shares(rt, up, prt_data_reachable(rt));
    dp_free(up);
    if (rc)
        return;
    for (size_t d = 0; d < n && !prt_failed(rt); d++) {
        loc_dev *v = &st->dev[d];
        int64_t want = prt_share(rt)[d], extra = want - v->own - v->recv;
        v->part = want > 0;
        if (!v->part || extra <= 0)
            continue;
        v->fetching = 1;
        int64_t lost = prt_data_fetch(rt, d, extra, -1, 1, on_fetched, v);
        if (lost < 0)
            return;
        prt_share(rt)[d] -= lost;
        v->recv += extra - lost;
        st->replanned += extra - lost;
    }
}

static void next_epoch(prt *rt, void *ctx)
{
    (void)ctx;
    loc_state *st = prt_state(rt);
    if (st->dirty) {
        st->dirty = 0;
        replan(rt);
    }
    st->parts = 0;
    for (size_t d = 0; d < prt_n(rt) && !prt_failed(rt); d++)
        if (st->dev[d].part)
            join_epoch(rt, &st->dev[d]);
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
    double agg = isfinite(s->server.aggregate_Bps)
                     ? (double)st->parts * s->model.model_bytes / s->server.aggregate_Bps
                     : 0;
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

static void loc_on_device(prt *rt, const void *opts, size_t d, int up)
{
    (void)opts;
    loc_state *st = prt_state(rt);
    loc_dev *v = &st->dev[d];
    st->dirty = 1;
    if (up) {
        if (st->stranded) { /* nobody was left: the epoch starts over with the devices up */
            st->stranded = 0;
            st->uploaded = 0;
            next_epoch(rt, NULL);
        }
        return;
    }
    if (!prt_scn(rt)->groups[prt_scn(rt)->devices[d].group].avail.data_persists)
        v->recv = 0;
    prt_data_lose(rt, v->own); /* out of reach while it is down */
    if (!v->part)
        return;
    v->part = 0;
    v->in_wait = 0;
    v->fetching = 0; /* its fetch was cut */
    prt_share(rt)[d] = 0;
    prt_left(rt)[d] = 0;
    if (!v->in_epoch || v->uploaded)
        return;      /* nothing the server waits for */
    v->in_epoch = 0; /* its work since the epoch's start is lost */
    st->parts--;
    prt_add_lost_s(rt, prt_compute_s(rt, d) - v->c0);
    if (st->parts > 0) { /* the others' uploads may all be there */
        if (st->uploaded >= st->parts)
            aggregate(rt);
        return;
    }
    for (size_t i = 0; i < prt_n(rt); i++) /* nobody is left in the epoch */
        if (isfinite(world_dev_next_change(prt_world(rt), i))) {
            st->stranded = 1;
            return;
        }
    prt_fail(rt, DP_ERUN, "locality: every participant is down for good at t = %.6g s (epoch %d)",
             prt_now(rt), prt_epoch(rt));
}

static void on_ready(prt *rt, void *ctx)
{
    loc_dev *v = ctx;
    v->c0 = prt_compute_s(rt, v->d);
    prt_left(rt)[v->d] = prt_share(rt)[v->d];
    epoch_on(rt, v);
}

/* Shares over the devices up (up NULL: all) of `total` samples: by speed
 * (waterfill over the exchange times), or with balance: local each
 * device's own samples and the rest by speed over the devices that hold
 * none (over all when every one holds some). */
static int plan_shares(prt *rt, const int *up, int64_t total)
{
    loc_state *st = prt_state(rt);
    size_t n = prt_n(rt);
    double *weight = dp_calloc(n ? n : 1, sizeof *weight);
    int64_t *fixed = dp_calloc(n ? n : 1, sizeof *fixed), *share = prt_share(rt);
    if (!weight || !fixed) {
        dp_free(weight);
        dp_free(fixed);
        return prt_fail(rt, DP_ENOMEM, "out of memory");
    }
    for (size_t d = 0; d < n; d++) {
        if (up && !up[d])
            continue;
        weight[d] = st->speed[d];
        if (st->o->balance == 1) { /* its own samples, no more: the rest by speed */
            fixed[d] = st->dev[d].own;
            weight[d] = fixed[d] > 0 ? 0 : weight[d];
        }
    }
    double W = 0;
    int64_t rest = total;
    for (size_t d = 0; d < n; d++) {
        W += weight[d];
        rest -= fixed[d];
    }
    for (size_t d = 0; W == 0 && d < n; d++) /* every device holds some: the rest by speed over all */
        weight[d] = up && !up[d] ? 0 : st->speed[d];
    int rc = waterfill(rt, weight, st->cx, rest, share);
    for (size_t d = 0; !rc && d < n; d++)
        share[d] += fixed[d];
    dp_free(weight);
    dp_free(fixed);
    return rc;
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
    double *bytes = dp_calloc(n ? n : 1, sizeof *bytes);
    int *skip = dp_calloc(n ? n : 1, sizeof *skip);
    void **ctx = dp_calloc(n ? n : 1, sizeof *ctx);
    int rc = 0;
    if (!st->dev || !st->speed || !st->cx || !bytes || !skip || !ctx) {
        rc = prt_fail(rt, DP_ENOMEM, "out of memory");
        goto done;
    }
    prt_learn_mode(rt, PRT_LEARN_LOCAL);
    for (size_t d = 0; d < n; d++) {
        const scn_group *g = &s->groups[s->devices[d].group];
        st->dev[d] = (loc_dev){.rt = rt, .d = d, .own = prt_data_local(rt, d)};
        ctx[d] = &st->dev[d];
        st->speed[d] = g->batch / scn_batch_time(s, g, g->batch); /* samples per second */
        st->cx[d] = exchange_s(rt, d);
    }
    if ((rc = plan_shares(rt, NULL, s->dataset.samples)))
        goto done;
    for (size_t d = 0; d < n; d++) {
        loc_dev *v = &st->dev[d];
        int64_t sh = prt_share(rt)[d];
        bytes[d] = (double)sh * s->dataset.sample_bytes;
        skip[d] = sh == 0;
        v->part = v->in_epoch = !skip[d];
        v->recv = sh > v->own ? sh - v->own : 0;
        st->parts += !skip[d];
    }
    prt_stat(rt, "locality.participants", RES_SCOPE_RUN, 0, 0, (double)st->parts);
    rc = prt_distribute(rt, bytes, skip, on_ready, ctx);
done:
    dp_free(bytes);
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
     "speed: shares that end every device's epoch (compute and model exchange) together, its own samples "
     "used "
     "first; local: each device its own samples"},
    {"reread", NULL, POPT_BOOL, SCN_UNIT_NUMBER, offsetof(loc_opts, reread), 0, 0, 0, NULL,
     "devices keep no copy: every later epoch reads its share again, through its site's cache (not with "
     "availability)"},
    {NULL, NULL, 0, 0, 0, 0, 0, 0, NULL, NULL},
};

const policy_def policy_locality = {
    .name = "locality",
    .label = "Locality",
    .color = "#a6761d",
    .summary = "locality-aware batching: local data first, only what balance requires moves; local epochs, "
               "server average; re-planned over the devices up after a failure",
    .opts = loc_table,
    .opts_size = sizeof(loc_opts),
    .check = loc_check,
    .start = loc_start,
    .free = loc_free,
    .on_device = loc_on_device,
};
