/* hierarchical.c: hierarchical geo averaging.
 *
 * Data: an equal split, sent once with the model.  Rounds of `steps: H`
 * local steps per device (a round never crosses an epoch, as in localsgd).
 * Then, in three phases:
 *  1. site: when every device of a site has finished its steps, the site's
 *     devices all-reduce the model among themselves (a ring over the site's
 *     links, coll_start_among; nothing for a one-device site);
 *  2. WAN: when every site is done, one device per site (its first in
 *     scenario order, the leader) averages across sites: a ring all-reduce
 *     of the leaders (`wan: ring`) or a push to the server, the server's
 *     averaging (sites x M / aggregate rate) and a pull (`wan: server`);
 *  3. return: each leader, once it holds the result, sends the model to
 *     every other device of its site (direct transfers, all at once).
 * The round ends when every device holds the result.  A scenario without
 * sites is refused (check).
 */
#include "commlight.h"
#include "runtime.h"

#include <math.h>
#include <stddef.h>

typedef enum { HI_WAN_RING = 0, HI_WAN_SERVER = 1 } hi_wan;

typedef struct hi_opts {
    int steps;      /* H; 0 = a whole local epoch */
    int wan;        /* hi_wan */
    int collective; /* prt_coll_mode of the rings */
} hi_opts;

typedef struct hi_dev {
    prt *rt;
    size_t d;
    int site;
    int done;
    int64_t samples;
} hi_dev;

typedef struct hi_site {
    prt *rt;
    size_t *members; /* participants of the site, scenario order; [0] leads */
    size_t m;
    size_t arrived; /* members done with their steps */
    size_t pending; /* transfers of phase 3 in flight */
} hi_site;

typedef struct hi_state {
    hi_opts o;
    hi_dev *dev;
    hi_site *site;
    size_t n_sites; /* sites with participants */
    size_t *leaders;
    size_t sites_done, wan_arrived, returned;
    size_t *all; /* member storage */
    cl_stats cs;
} hi_state;

static void step(prt *rt, void *ctx);

static void begin_round(prt *rt, hi_dev *v)
{
    v->done = 0;
    step(rt, v);
}

static void round_end(prt *rt, hi_state *st)
{
    int64_t batch = 0, devs = 0;
    size_t n = prt_n(rt);
    for (size_t d = 0; d < n; d++) {
        batch += st->dev[d].samples;
        devs += st->dev[d].samples > 0;
        st->dev[d].samples = 0;
    }
    st->cs.rounds++;
    cl_update(&st->cs, batch, devs, 0);
    st->sites_done = st->wan_arrived = st->returned = 0;
    for (size_t k = 0; k < st->n_sites; k++)
        st->site[k].arrived = 0;
    if (!prt_work_left(rt)) {
        if (prt_epoch(rt) >= prt_scn(rt)->training.epochs && cl_emit(rt, &st->cs))
            return;
        if (prt_end_epoch(rt) <= 0)
            return;
    }
    for (size_t k = 0; k < st->n_sites; k++)
        for (size_t i = 0; i < st->site[k].m; i++)
            begin_round(rt, &st->dev[st->site[k].members[i]]);
}

/* ---- phase 3: the result returns inside each site ---- */
static void on_returned(void *ctx, uint64_t id)
{
    (void)id;
    hi_dev *v = ctx;
    prt *rt = v->rt;
    hi_state *st = prt_state(rt);
    prt_set_act(rt, v->d, RES_ACT_WAIT);
    hi_site *s = &st->site[v->site];
    if (--s->pending > 0)
        return;
    prt_set_act(rt, s->members[0], RES_ACT_WAIT);
    if (++st->returned == st->n_sites)
        round_end(rt, st);
}

static void site_return(prt *rt, hi_state *st, size_t k)
{
    hi_site *s = &st->site[k];
    if (s->m < 2) {
        if (++st->returned == st->n_sites)
            round_end(rt, st);
        return;
    }
    double M = prt_scn(rt)->model.model_bytes;
    s->pending = s->m - 1;
    prt_set_act(rt, s->members[0], RES_ACT_SEND);
    for (size_t i = 1; i < s->m; i++) {
        size_t d = s->members[i];
        prt_set_act(rt, d, RES_ACT_RECV_MODEL);
        if (!world_transfer(prt_world(rt), (int)s->members[0] + 1, (int)d + 1, M, on_returned, &st->dev[d])) {
            prt_fail(rt, DP_ENOMEM, "out of memory");
            return;
        }
    }
}

/* ---- phase 2: across the WAN ---- */
static void wan_ring_done(prt *rt, void *ctx)
{
    (void)ctx;
    hi_state *st = prt_state(rt);
    for (size_t k = 0; k < st->n_sites && !prt_failed(rt); k++)
        site_return(rt, st, k);
}

static void on_leader_download(void *ctx, uint64_t id)
{
    (void)id;
    hi_dev *v = ctx;
    prt_set_act(v->rt, v->d, RES_ACT_WAIT);
    site_return(v->rt, prt_state(v->rt), (size_t)v->site);
}

static void server_averaged(prt *rt, void *ctx)
{
    (void)ctx;
    hi_state *st = prt_state(rt);
    double M = prt_scn(rt)->model.model_bytes;
    for (size_t k = 0; k < st->n_sites; k++) {
        size_t d = st->leaders[k];
        prt_set_act(rt, d, RES_ACT_RECV_MODEL);
        prt_add_server_bytes(rt, d, M);
        if (!world_transfer(prt_world(rt), 0, (int)d + 1, M, on_leader_download, &st->dev[d])) {
            prt_fail(rt, DP_ENOMEM, "out of memory");
            return;
        }
    }
}

static void on_leader_upload(void *ctx, uint64_t id)
{
    (void)id;
    hi_dev *v = ctx;
    prt *rt = v->rt;
    hi_state *st = prt_state(rt);
    prt_set_act(rt, v->d, RES_ACT_WAIT);
    if (++st->wan_arrived < st->n_sites)
        return;
    const scn_scenario *s = prt_scn(rt);
    double agg = isfinite(s->server.aggregate_Bps)
                     ? (double)st->n_sites * s->model.model_bytes / s->server.aggregate_Bps
                     : 0;
    if (prt_at(rt, prt_now(rt) + agg, server_averaged, NULL))
        prt_fail(rt, DP_ENOMEM, "out of memory");
}

static void wan_phase(prt *rt, hi_state *st)
{
    double M = prt_scn(rt)->model.model_bytes;
    if (st->o.wan == HI_WAN_RING) {
        if (st->o.collective == PRT_COLL_ANALYTIC)
            cl_tally_ring(rt, &st->cs, st->leaders, st->n_sites, COLL_ALLREDUCE, M);
        coll_start_among(rt, COLL_ALLREDUCE, M, st->o.collective, st->leaders, st->n_sites, wan_ring_done,
                         NULL);
        return;
    }
    for (size_t k = 0; k < st->n_sites; k++) {
        size_t d = st->leaders[k];
        prt_set_act(rt, d, RES_ACT_SEND);
        prt_add_server_bytes(rt, d, M);
        if (!world_transfer(prt_world(rt), (int)d + 1, 0, M, on_leader_upload, &st->dev[d])) {
            prt_fail(rt, DP_ENOMEM, "out of memory");
            return;
        }
    }
}

/* ---- phase 1: inside each site ---- */
static void site_done(prt *rt, void *ctx)
{
    (void)ctx;
    hi_state *st = prt_state(rt);
    if (++st->sites_done == st->n_sites)
        wan_phase(rt, st);
}

static void device_done(prt *rt, hi_state *st, hi_dev *v)
{
    prt_set_act(rt, v->d, RES_ACT_WAIT);
    hi_site *s = &st->site[v->site];
    if (++s->arrived < s->m)
        return;
    double M = prt_scn(rt)->model.model_bytes;
    if (st->o.collective == PRT_COLL_ANALYTIC)
        cl_tally_ring(rt, &st->cs, s->members, s->m, COLL_ALLREDUCE, M);
    coll_start_among(rt, COLL_ALLREDUCE, M, st->o.collective, s->members, s->m, site_done, NULL);
}

static void step(prt *rt, void *ctx)
{
    hi_dev *v = ctx;
    hi_state *st = prt_state(rt);
    int64_t *left = prt_left(rt);
    if (left[v->d] <= 0 || (st->o.steps > 0 && v->done >= st->o.steps)) {
        device_done(rt, st, v);
        return;
    }
    int bs = prt_scn(rt)->groups[prt_scn(rt)->devices[v->d].group].batch;
    int n = left[v->d] < bs ? (int)left[v->d] : bs;
    left[v->d] -= n;
    v->samples += n;
    v->done++;
    st->cs.steps[v->d]++;
    prt_compute(rt, v->d, n, 1.0, step, v, NULL);
}

static void on_ready(prt *rt, void *ctx)
{
    begin_round(rt, ctx);
}

static int hi_start(prt *rt, const void *opts)
{
    const scn_scenario *s = prt_scn(rt);
    size_t n = prt_n(rt), ns = s->n_sites;
    hi_state *st = dp_calloc(1, sizeof *st);
    prt_set_state(rt, st);
    if (!st)
        return dp_err_set(prt_err(rt), DP_ENOMEM, "out of memory");
    st->o = *(const hi_opts *)opts;
    st->dev = dp_calloc(n, sizeof *st->dev);
    st->site = dp_calloc(ns, sizeof *st->site);
    st->leaders = dp_calloc(ns, sizeof *st->leaders);
    st->all = dp_calloc(n, sizeof *st->all);
    size_t *count = dp_calloc(ns, sizeof *count);
    int *site_of = dp_calloc(ns, sizeof *site_of); /* scenario site -> our site + 1 */
    double *bytes = dp_calloc(n, sizeof *bytes);   /* equal_split's, unused: cl_distribute sends */
    int rc = 0;
    if (!st->dev || !st->site || !st->leaders || !st->all || !count || !site_of || !bytes ||
        cl_stats_init(&st->cs, n)) {
        rc = dp_err_set(prt_err(rt), DP_ENOMEM, "out of memory for %zu devices", n);
        goto done;
    }
    equal_split(rt, PRT_DATA_SHARD, bytes);
    for (size_t d = 0; d < n; d++)
        if (prt_share(rt)[d] > 0)
            count[s->groups[s->devices[d].group].site]++;
    size_t off = 0;
    for (size_t k = 0; k < ns; k++) {
        if (!count[k])
            continue;
        site_of[k] = (int)st->n_sites + 1;
        st->site[st->n_sites++] = (hi_site){rt, st->all + off, 0, 0, 0};
        off += count[k];
    }
    for (size_t d = 0; d < n; d++) {
        int sk = s->groups[s->devices[d].group].site;
        int k = prt_share(rt)[d] > 0 ? site_of[sk] - 1 : 0;
        st->dev[d] = (hi_dev){rt, d, k, 0, 0};
        if (prt_share(rt)[d] > 0)
            st->site[k].members[st->site[k].m++] = d;
    }
    for (size_t k = 0; k < st->n_sites; k++)
        st->leaders[k] = st->site[k].members[0];
    rc = cl_distribute(rt, 0, st->dev, sizeof *st->dev, NULL, NULL, on_ready);
done:
    dp_free(count);
    dp_free(site_of);
    dp_free(bytes);
    return rc;
}

static void hi_free(prt *rt, const void *opts)
{
    (void)opts;
    hi_state *st = prt_state(rt);
    if (st) {
        dp_free(st->dev);
        dp_free(st->site);
        dp_free(st->leaders);
        dp_free(st->all);
        cl_stats_free(&st->cs);
    }
    dp_free(st);
    prt_set_state(rt, NULL);
}

static int hi_check(const scn_scenario *s, const void *opts, dp_err *err)
{
    (void)opts;
    if (s->n_sites == 0)
        return dp_err_set(err, DP_EINPUT,
                          "%s: policy hierarchical averages inside sites and then across them, but the "
                          "scenario has no `sites:` (give devices a `site:`, or run localsgd instead)",
                          s->path ? s->path : "scenario");
    return 0;
}

static const char *const wan_names[] = {"ring", "server", NULL};

static const popt hi_table[] = {
    {"steps", NULL, POPT_INT, SCN_UNIT_NUMBER, offsetof(hi_opts, steps), 16, 0, 1e9, NULL,
     "H: local steps per device between averages (0 = a whole local epoch)"},
    {"wan", NULL, POPT_ENUM, SCN_UNIT_NUMBER, offsetof(hi_opts, wan), HI_WAN_RING, 0, 0, wan_names,
     "across sites: ring all-reduce of one device per site, or push/pull through the server"},
    {"collective", NULL, POPT_ENUM, SCN_UNIT_NUMBER, offsetof(hi_opts, collective), PRT_COLL_FLOWS, 0, 0,
     popt_collective_names, "the rings (site and WAN): flows through the network model, or analytic"},
    {NULL, NULL, 0, 0, 0, 0, 0, 0, NULL, NULL},
};

const policy_def policy_hierarchical = {
    .name = "hierarchical",
    .label = "Hierarchical",
    .color = "#f0e442",
    .summary = "hierarchical geo averaging: H local steps, average in each site, then across sites",
    .opts = hi_table,
    .opts_size = sizeof(hi_opts),
    .check = hi_check,
    .start = hi_start,
    .free = hi_free,
};
