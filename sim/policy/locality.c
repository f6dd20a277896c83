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
 * No reaction to device failures (refused in worlds with availability). */
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
    int waiting; /* arrivals before its next epoch starts (model, re-read) */
    int part;    /* a participant (a share at the start; one lost to a failed storage stays one) */
} loc_dev;

typedef struct loc_state {
    loc_dev *dev;
    size_t parts, uploaded;
    int bs_max;
    const loc_opts *o;
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

/* Shares: rest = D - sum fixed samples spread so that every device that
 * gets some finishes its epoch at the same time T: speed[d] (T - c[d])
 * samples (water-filling on T: a device whose exchange c[d] exceeds T gets
 * none), whole samples by largest remainder; fixed[d] samples on top. */
static int split(prt *rt, const double *speed, const double *c, const int64_t *fixed)
{
    size_t n = prt_n(rt);
    int64_t D = prt_scn(rt)->dataset.samples, rest = D, *share = prt_share(rt);
    for (size_t d = 0; d < n; d++)
        rest -= fixed[d];
    double *x = dp_calloc(n ? n : 1, sizeof *x);
    if (!x)
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
    double *frac = x;
    int64_t given = 0;
    for (size_t d = 0; d < n; d++) {
        double v = speed[d] > 0 && c[d] < T ? speed[d] * (T - c[d]) : 0;
        share[d] = (int64_t)floor(v);
        if (share[d] > rest)
            share[d] = rest;
        frac[d] = v - (double)share[d];
        given += share[d];
    }
    while (given < rest) { /* the largest remainders, the first device on ties */
        size_t b = 0;
        for (size_t d = 1; d < n; d++)
            if (frac[d] > frac[b])
                b = d;
        share[b]++;
        frac[b] = -1;
        given++;
    }
    while (given > rest) { /* rounding past rest: take from the largest share */
        size_t b = 0;
        for (size_t d = 1; d < n; d++)
            if (share[d] > share[b])
                b = d;
        share[b]--;
        given--;
    }
    for (size_t d = 0; d < n; d++)
        share[d] += fixed[d];
    dp_free(x);
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

static void next_epoch(prt *rt, void *ctx)
{
    (void)ctx;
    loc_state *st = prt_state(rt);
    double M = prt_scn(rt)->model.model_bytes;
    for (size_t d = 0; d < prt_n(rt) && !prt_failed(rt); d++) {
        loc_dev *v = &st->dev[d];
        if (!v->part)
            continue;
        v->waiting = st->o->reread ? 2 : 1;
        prt_set_act(rt, d, RES_ACT_RECV_MODEL);
        prt_add_server_bytes(rt, d, M);
        if (!world_transfer(prt_world(rt), 0, (int)d + 1, M, on_download, v)) {
            prt_fail(rt, DP_ENOMEM, "out of memory");
            return;
        }
        if (st->o->reread)
            prt_data_reread(rt, d, on_reread, v);
    }
}

static void aggregated(prt *rt, void *ctx)
{
    (void)ctx;
    loc_state *st = prt_state(rt);
    prt_learn_average(rt, NULL, 0, 1, 1);
    if (prt_end_epoch(rt) <= 0)
        return;
    st->uploaded = 0;
    if (prt_at(rt, prt_now(rt), next_epoch, NULL))
        prt_fail(rt, DP_ENOMEM, "out of memory");
}

static void on_upload(void *ctx, uint64_t id)
{
    (void)id;
    loc_dev *v = ctx;
    prt *rt = v->rt;
    loc_state *st = prt_state(rt);
    prt_set_act(rt, v->d, RES_ACT_WAIT);
    if (++st->uploaded < st->parts)
        return;
    const scn_scenario *s = prt_scn(rt);
    double agg = isfinite(s->server.aggregate_Bps) ? (double)st->parts * s->model.model_bytes / s->server.aggregate_Bps : 0;
    if (prt_at(rt, prt_now(rt) + agg, aggregated, NULL))
        prt_fail(rt, DP_ENOMEM, "out of memory");
}

static void on_ready(prt *rt, void *ctx)
{
    loc_dev *v = ctx;
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
    double *weight = dp_calloc(n ? n : 1, sizeof *weight), *cx = dp_calloc(n ? n : 1, sizeof *cx), *bytes = dp_calloc(n ? n : 1, sizeof *bytes);
    int64_t *fixed = dp_calloc(n ? n : 1, sizeof *fixed);
    int *skip = dp_calloc(n ? n : 1, sizeof *skip);
    void **ctx = dp_calloc(n ? n : 1, sizeof *ctx);
    int rc = 0;
    if (!st->dev || !weight || !cx || !bytes || !fixed || !skip || !ctx) {
        rc = prt_fail(rt, DP_ENOMEM, "out of memory");
        goto done;
    }
    prt_learn_mode(rt, PRT_LEARN_LOCAL);
    for (size_t d = 0; d < n; d++) {
        const scn_group *g = &s->groups[s->devices[d].group];
        st->dev[d] = (loc_dev){rt, d, 0, 0};
        ctx[d] = &st->dev[d];
        weight[d] = g->batch / scn_batch_time(s, g, g->batch); /* samples per second */
        cx[d] = exchange_s(rt, d);
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
        st->dev[d].part = !skip[d];
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
    if (st)
        dp_free(st->dev);
    dp_free(st);
    prt_set_state(rt, NULL);
}

static int loc_check(const policy_def *p, const scn_scenario *s, const void *opts, dp_err *err)
{
    const loc_opts *o = opts;
    if (o->reread && !s->data)
        return popt_fail(s, p->name, "reread", err,
                         "re-reading needs the dataset's places (dataset.parts, .storage or .caches)");
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
};
