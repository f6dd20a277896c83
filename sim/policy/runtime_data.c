/* runtime_data.c: data where it lives (scenario `dataset.parts`,
 * `.storage`, `.caches`; docs/MODEL.md section 1, "Data where it lives").
 * Without those keys nothing here runs (rt->data is NULL) and every run is
 * as it was.  With them:
 *  - a distribution (prt_distribute, prt_resend) plans each device's
 *    samples with the data placement planner (sim/core/dplace.h: its own
 *    slice first, then its site, then the nearest sites) and moves only
 *    what the device does not hold, one flow per run of samples from its
 *    holder (a site's storage, the server, another device) over the real
 *    path; the model still comes from the server.  A device holds its data
 *    when its last data flow ends (at once when every sample is its own);
 *  - a site's storage failing (`fails_at`) cuts the flows reading it; what
 *    they had not delivered is read again from the nearest replica that is
 *    up, or, with none, is lost: a device training a share loses those
 *    samples from its share (`data.samples_lost`);
 *  - a site's cache (sim/core/dcache.h) serves its devices' reads: hits
 *    from the cache over its read link, misses from their holders, every
 *    read filling it.  In a distribution a hit on samples another device
 *    of the site is still bringing in streams from the cache at once, and
 *    the device holds them when that read has ended too (a dwait on its
 *    flow); prt_data_reread reads a device's
 *    samples again (a policy whose devices keep no copy) through it;
 * Statistics (run scope): data.*, cache.*, wan.bytes (data_stats). */
#include "dcache.h"
#include "dplace.h"
#include "log.h"
#include "policy.h"
#include "runtime_impl.h"

#include <math.h>
#include <string.h>

typedef struct dfetch dfetch;

/* A device of a site reading from the site's cache samples another device
 * of the site is still bringing in: it holds them once that read ends. */
typedef struct dwait {
    struct dwait *next, *all; /* the fill's waiters; every one, for freeing */
    size_t d;
    int32_t pool;
    int64_t first, n;
    uint64_t gen;
    int resent;
} dwait;

typedef struct dflow {
    prt *rt;
    struct dflow *next; /* every flow started, for failures and freeing */
    size_t d;
    int32_t pool;
    int holder;
    int64_t first, n;
    uint64_t id, gen;
    int active, fetch; /* fetch: a re-read (prt_data_reread), else a distribution's data */
    dfetch *fx;        /* a policy's fetch (prt_data_fetch) it belongs to, else NULL */
    dwait *waiters;    /* a distribution's read filling its site's cache: who waits for it */
} dflow;

/* A policy's fetch: its flows outstanding, and what runs when they end. */
struct dfetch {
    prt *rt;
    struct dfetch *next; /* every fetch, for freeing */
    size_t d;
    uint64_t gen; /* d's distribution generation: d going down voids it */
    int pend;
    net_done_fn done;
    void *ctx;
};

typedef struct site_ev {
    prt *rt;
    int site;
} site_ev;

struct rt_data {
    dplace *pl;
    dpl_plan plan; /* the first distribution's: what each device reads */
    int have_plan;
    dcache **cache; /* per site, NULL where none */
    int *dpend;     /* per device: data flows of its distribution outstanding */
    int *fpend;     /* per device: re-read flows outstanding */
    int *kind;      /* per device: its distribution's xfer_arrived kind (1 first, 2 resent) */
    int64_t *held;  /* per device: samples its distribution gives it, less those lost */
    uint64_t *gen;  /* per device: a flow of an older distribution is ignored */
    prt_fn *ffn;    /* per device: what runs when a re-read is complete */
    void **fctx;
    dflow *flows;
    dfetch *fetches;
    dwait *waits;
    int64_t *given; /* per device: samples of its first plan handed to others (prt_data_fetch) */
    site_ev *fev;
    double moved, local, wan, replanned, saved;
    int64_t lost, hits, misses;
};

static double sb(const prt *rt)
{
    return rt->s->dataset.sample_bytes;
}

static int dev_site(const prt *rt, size_t d)
{
    return rt->s->groups[rt->s->devices[d].group].site;
}

static void on_store_fail(sim_engine *e, void *ctx, uint64_t id);

int data_open(prt *rt, dp_err *err)
{
    const scn_scenario *s = rt->s;
    if (!s->data)
        return 0;
    struct rt_data *x = dp_calloc(1, sizeof *x);
    size_t n = rt->n + 1, ns = s->n_sites;
    if (!x || !(rt->data = x, x->dpend = dp_calloc(n, sizeof *x->dpend)) ||
        !(x->fpend = dp_calloc(n, sizeof *x->fpend)) || !(x->kind = dp_calloc(n, sizeof *x->kind)) ||
        !(x->held = dp_calloc(n, sizeof *x->held)) || !(x->gen = dp_calloc(n, sizeof *x->gen)) ||
        !(x->ffn = dp_calloc(n, sizeof *x->ffn)) || !(x->fctx = dp_calloc(n, sizeof *x->fctx)) ||
        !(x->given = dp_calloc(n, sizeof *x->given)) || !(x->cache = dp_calloc(ns + 1, sizeof *x->cache)) ||
        !(x->fev = dp_calloc(ns + 1, sizeof *x->fev)))
        return dp_err_set(err, DP_ENOMEM, "out of memory for the data's places");
    if (!(x->pl = dpl_new(s, err)))
        return err->code ? err->code : DP_ENOMEM;
    for (size_t k = 0; k < ns; k++) {
        const scn_cache *c = &s->data->cache[k];
        int64_t cap = (int64_t)floor(c->capacity_bytes / s->dataset.sample_bytes);
        if (c->site >= 0 && cap > 0 && !(x->cache[k] = dcache_new(cap, c->policy)))
            return dp_err_set(err, DP_ENOMEM, "out of memory for a cache");
        x->fev[k] = (site_ev){rt, (int)k};
        if (isfinite(s->data->store[k].fails_at_s) &&
            !sim_at(rt->e, s->data->store[k].fails_at_s, on_store_fail, &x->fev[k]))
            return dp_err_set(err, DP_ENOMEM, "out of memory");
    }
    return 0;
}

void data_close(prt *rt)
{
    struct rt_data *x = rt->data;
    if (!x)
        return;
    for (dflow *f = x->flows, *nx; f; f = nx) {
        nx = f->next;
        dp_free(f);
    }
    for (dfetch *f = x->fetches, *nx; f; f = nx) {
        nx = f->next;
        dp_free(f);
    }
    for (dwait *w = x->waits, *nx; w; w = nx) {
        nx = w->all;
        dp_free(w);
    }
    for (size_t k = 0; x->cache && k < rt->s->n_sites; k++)
        dcache_free(x->cache[k]);
    dpl_plan_free(&x->plan);
    dpl_free(x->pl);
    dp_free(x->cache);
    dp_free(x->fev);
    dp_free(x->dpend);
    dp_free(x->fpend);
    dp_free(x->kind);
    dp_free(x->held);
    dp_free(x->gen);
    dp_free(x->ffn);
    dp_free(x->fctx);
    dp_free(x->given);
    dp_free(x);
    rt->data = NULL;
}

static void on_dflow_done(void *ctx, uint64_t id);

/* Start a flow of n samples (ids from `first`) of pool k from `from` to
 * device d, counting its bytes; 0 or DP_ENOMEM (the run failed). */
static int start(prt *rt, size_t d, int from, int32_t k, int64_t first, int64_t n, int fetch, int resent,
                 dfetch *fx)
{
    struct rt_data *x = rt->data;
    double bytes = (double)n * sb(rt);
    dflow *f = dp_calloc(1, sizeof *f);
    if (!f) {
        fail_oom(rt);
        return DP_ENOMEM;
    }
    *f = (dflow){rt, x->flows, d, k, from, first, n, 0, x->gen[d], 1, fetch, fx, NULL};
    x->flows = f;
    x->moved += bytes;
    int hs = dpl_node_site(x->pl, from), ds = dev_site(rt, d);
    if (hs >= 0 && ds >= 0 && hs != ds)
        x->wan += bytes;
    if ((size_t)from == 0 || (size_t)from > rt->n) /* not a device: a byte counted at one end only */
        rt->server_bytes[d] += bytes;
    if (resent)
        rt->resent_bytes += bytes;
    if (fx && resent) /* a policy's re-plan after a failure */
        x->replanned += bytes;
    if (!(f->id = world_transfer(rt->w, from, (int)d + 1, bytes, on_dflow_done, f))) {
        fail_oom(rt);
        return DP_ENOMEM;
    }
    if (fx)
        fx->pend++;
    else if (fetch)
        x->fpend[d]++;
    else
        x->dpend[d]++;
    return 0;
}

/* One of device d's flows ended (or was given up): the distribution's
 * data, or the re-read, is complete when its last one has. */
static void flow_over(prt *rt, const dflow *f)
{
    struct rt_data *x = rt->data;
    size_t d = f->d;
    if (f->gen != x->gen[d])
        return;
    if (f->fx) {
        if (--f->fx->pend == 0)
            f->fx->done(f->fx->ctx, 0);
    } else if (f->fetch) {
        if (--x->fpend[d] == 0 && x->ffn[d])
            x->ffn[d](rt, x->fctx[d]);
    } else if (--x->dpend[d] == 0) {
        xfer_arrived(rt, d, x->kind[d]);
    }
}

static void release(prt *rt, dflow *f, int in_cache);
static void lose(prt *rt, size_t d, int64_t n);

static void on_dflow_done(void *ctx, uint64_t id)
{
    (void)id;
    dflow *f = ctx;
    f->active = 0;
    release(f->rt, f, 1);
    flow_over(f->rt, f);
}

/* Fill f is over: its waiters hold their samples (in_cache), or, the fill
 * cut or given up, read them again from their nearest holder that is up
 * (what their cache reads brought is wasted), or lose them. */
static void release(prt *rt, dflow *f, int in_cache)
{
    struct rt_data *x = rt->data;
    dwait *w = f->waiters;
    f->waiters = NULL;
    for (; w && !rt->failed; w = w->next) {
        if (w->gen != x->gen[w->d])
            continue; /* that device went down: its distribution is void */
        if (!in_cache) {
            int h = dpl_holder_for(x->pl, (size_t)w->pool, w->d, NULL);
            if (h >= 0)
                start(rt, w->d, h, w->pool, w->first, w->n, 0, w->resent, NULL);
            else
                lose(rt, w->d, w->n);
        }
        if (--x->dpend[w->d] == 0) /* the wait is over (a read started here counts itself) */
            xfer_arrived(rt, w->d, x->kind[w->d]);
    }
}

/* An active distribution read of site s's devices that brings ids from
 * `first` into the site's cache, NULL when none is under way. */
static dflow *filling(prt *rt, int s, int64_t first)
{
    struct rt_data *x = rt->data;
    int cnode = world_store_node(rt->w, s, 1);
    for (dflow *f = x->flows; f; f = f->next)
        if (f->active && !f->fetch && !f->fx && f->holder != cnode && f->gen == x->gen[f->d] &&
            dev_site(rt, f->d) == s && f->first <= first && first < f->first + f->n)
            return f;
    return NULL;
}

/* Samples device d could not get: a share larger than what it holds now
 * shrinks to it (a replicated copy short of a few samples still holds a
 * share of the dataset). */
static void lose(prt *rt, size_t d, int64_t n)
{
    struct rt_data *x = rt->data;
    x->lost += n;
    x->held[d] = x->held[d] > n ? x->held[d] - n : 0;
    if (rt->share[d] > x->held[d]) {
        int64_t cut = rt->share[d] - x->held[d];
        rt->share[d] = x->held[d];
        rt->left[d] = rt->left[d] > cut ? rt->left[d] - cut : 0;
    }
}

/* What a miss read from `from` by device d costs per byte: the sum over
 * its path's links of 1 / capacity (additive link costs, as LOAM's network
 * costs are; a WAN hop thus costs more than the same bottleneck at home),
 * 1e-12 where nothing limits it: a planned cache keeps the dearest. */
static double miss_cost(prt *rt, int from, size_t d)
{
    int links[NET_MAX_PATH];
    size_t nl;
    double lat, cost = 0;
    if (world_path(rt->w, from, (int)d + 1, links, &nl, &lat))
        return 1e-12;
    for (size_t k = 0; k < nl; k++) {
        double cap = net_link_capacity(world_net(rt->w), links[k]);
        if (isfinite(cap) && cap > 0)
            cost += 1 / cap;
    }
    return cost > 0 ? cost : 1e-12;
}

/* The first distribution's plan places the planned caches: every sample a
 * site's devices read from elsewhere, once per epoch, with what a miss
 * costs. */
static int place_caches(prt *rt)
{
    struct rt_data *x = rt->data;
    for (size_t d = 0; d < rt->n; d++) {
        int s = dev_site(rt, d);
        if (s < 0 || !x->cache[s])
            continue;
        for (size_t i = x->plan.off[d]; i < x->plan.off[d + 1]; i++) {
            const dpl_take *t = &x->plan.takes[i];
            if (t->holder != (int)d + 1 &&
                dcache_pattern_add(x->cache[s], t->first, t->n, miss_cost(rt, t->holder, d)))
                return DP_ENOMEM;
        }
    }
    for (size_t s = 0; s < rt->s->n_sites; s++)
        if (x->cache[s] && dcache_pattern_done(x->cache[s]))
            return DP_ENOMEM;
    return 0;
}

/* Device d's first `hit` ids of take t are in its site's cache: read
 * from the cache over its read link; when another device's read is still
 * bringing them in, the cache streams them (d's read starts now) and d
 * holds them no earlier than that read ends.  0 or DP_ENOMEM. */
static int cache_hit(prt *rt, size_t d, int s, const dpl_take *t, int64_t hit, int resent)
{
    struct rt_data *x = rt->data;
    dflow *f = filling(rt, s, t->first);
    int rc = start(rt, d, world_store_node(rt->w, s, 1), t->pool, t->first, hit, 0, resent, NULL);
    if (rc || !f)
        return rc;
    dwait *w = dp_calloc(1, sizeof *w);
    if (!w) {
        fail_oom(rt);
        return DP_ENOMEM;
    }
    *w = (dwait){f->waiters, x->waits, d, t->pool, t->first, hit, x->gen[d], resent};
    f->waiters = x->waits = w;
    x->dpend[d]++; /* the fill's end */
    return 0;
}

int data_distribute(prt *rt, const double *data_bytes, const int *skip, prt_fn per_dev, void **ctx,
                    int initial)
{
    struct rt_data *x = rt->data;
    timeline *tl = TL(rt);
    double model = rt->s->model.model_bytes;
    int64_t D = rt->s->dataset.samples;
    int64_t *demand = dp_calloc(rt->n + 1, sizeof *demand);
    dpl_plan pl;
    if (!demand) {
        fail_oom(rt);
        return DP_ENOMEM;
    }
    for (size_t d = 0; d < rt->n; d++)
        demand[d] = (int64_t)llround(data_bytes[d] / sb(rt));
    int rc = dpl_plan_make(x->pl, demand, skip, &pl);
    if (rc) {
        dp_free(demand);
        fail_oom(rt);
        return rc;
    }
    if (!x->have_plan) { /* kept: what each device reads (re-reads, caches) */
        x->plan = pl;
        x->have_plan = 1;
        if (place_caches(rt)) {
            dp_free(demand);
            fail_oom(rt);
            return DP_ENOMEM;
        }
    }
    for (size_t d = 0; d < rt->n && !rt->failed; d++) {
        if (skip && skip[d])
            continue;
        tl->dev_fn[d] = per_dev;
        tl->dev_ctx[d] = ctx ? ctx[d] : NULL;
        x->kind[d] = initial ? 1 : 2;
        x->held[d] = demand[d] < D ? demand[d] : D;
        x->gen[d]++;
        x->dpend[d] = 0;
        rt->pending[d] = 2; /* its data (one or more flows, or none) and the model */
        rt->server_bytes[d] += model;
        if (!initial)
            rt->resent_bytes += model;
        prt_set_act(rt, d, RES_ACT_RECV_DATA);
        tl->xctx[2 * d + 1] = (xfer_ctx){rt, d, 0};
        if (!world_transfer(rt->w, 0, (int)d + 1, model, xfer_done, &tl->xctx[2 * d + 1])) {
            fail_oom(rt);
            break;
        }
        if (pl.lost[d])
            lose(rt, d, pl.lost[d]);
        int s = dev_site(rt, d);
        for (size_t i = pl.off[d]; i < pl.off[d + 1] && !rt->failed; i++) {
            const dpl_take *t = &pl.takes[i];
            if (t->holder == (int)d + 1) {
                x->local += (double)t->n * sb(rt);
                continue;
            }
            int64_t hit = 0;
            if (s >= 0 && x->cache[s]) { /* fills the cache; ids another device of the site read first hit */
                if ((hit = dcache_access(x->cache[s], t->first, t->n)) < 0) {
                    fail_oom(rt);
                    break;
                }
                x->hits += hit;
                x->misses += t->n - hit;
                x->saved += (double)hit * sb(rt);
            }
            if (hit > 0 && cache_hit(rt, d, s, t, hit, !initial))
                break;
            if (t->n - hit > 0)
                start(rt, d, t->holder, t->pool, t->first + hit, t->n - hit, 0, !initial, NULL);
        }
        if (!rt->failed && x->dpend[d] == 0) /* every sample its own: it holds its data now */
            xfer_arrived(rt, d, x->kind[d]);
    }
    if (x->plan.takes != pl.takes)
        dpl_plan_free(&pl);
    dp_free(demand);
    return rt->failed ? rt->err->code : 0;
}

/* The flows reading from `node`, gone (a storage failing, a device going
 * down): their undelivered samples come from the nearest holder that is
 * up, or are lost.  `cut`: the world cut them already (a device down), what
 * they carried is unknown and they are read again whole (the bytes they
 * carried stay in the links' statistics, not in data.bytes_moved). */
static void replan_from(prt *rt, int node, int cut)
{
    struct rt_data *x = rt->data;
    for (dflow *f = x->flows; f && !rt->failed; f = f->next) {
        if (!f->active || f->holder != node || f->gen != x->gen[f->d])
            continue;
        double sent = 0;
        if (!cut)
            world_cancel(rt->w, f->id, &sent);
        f->active = 0;
        release(rt, f, 0);
        x->moved -= (double)f->n * sb(rt) - sent; /* what it did not carry */
        int64_t got = (int64_t)floor(sent / sb(rt) * (1 + 1e-12));
        if (got > f->n)
            got = f->n;
        int64_t rest = f->n - got;
        int h = dpl_holder_for(x->pl, (size_t)f->pool, f->d, NULL);
        if (rest > 0 && h >= 0) {
            x->replanned += (double)rest * sb(rt);
            start(rt, f->d, h, f->pool, f->first + got, rest, f->fetch, 1, f->fx);
        } else if (rest > 0) {
            lose(rt, f->d, rest);
        }
        flow_over(rt, f); /* this flow is over; a replacement counts itself */
    }
}

void data_device_down(prt *rt, size_t d)
{
    struct rt_data *x = rt->data;
    x->gen[d]++; /* its flows were cut (world.c): none of them ends */
    x->dpend[d] = x->fpend[d] = 0;
    for (dflow *f = x->flows; f; f = f->next)
        if (f->d == d) {
            f->active = 0;
            release(rt, f, 0); /* those waiting for what it was bringing read it themselves */
        }
    /* what it held for others is out of reach while it is down */
    jbreak(rt);
    dpl_holder_set(x->pl, (int)d + 1, 0);
    replan_from(rt, (int)d + 1, 1);
}

void data_device_up(prt *rt, size_t d)
{
    dpl_holder_set(rt->data->pl, (int)d + 1, 1);
}

/* Site k's storage is gone: its flows' undelivered samples come from the
 * nearest replica that is up, or are lost. */
static void on_store_fail(sim_engine *e, void *ctx, uint64_t id)
{
    (void)e;
    (void)id;
    site_ev *v = ctx;
    prt *rt = v->rt;
    struct rt_data *x = rt->data;
    int node = world_store_node(rt->w, v->site, 0);
    if (rt->failed || rt->finished || node < 0)
        return;
    jbreak(rt);
    dpl_holder_set(x->pl, node, 0);
    DP_LOG(LOG_POLICY, LOG_INFO, abs_now(rt), "%s: the storage of site %s fails", rt->r->policy,
           rt->s->sites[v->site]);
    replan_from(rt, node, 0);
}

int64_t prt_data_available(const prt *rt, size_t src, int64_t n)
{
    const struct rt_data *x = rt->data;
    if (!x || !x->have_plan)
        return n;
    int64_t skip = x->given[src], have = 0, planned = 0;
    for (size_t i = x->plan.off[src]; i < x->plan.off[src + 1]; i++) {
        const dpl_take *t = &x->plan.takes[i];
        int64_t m = t->n - skip;
        skip = m < 0 ? -m : 0;
        if (m <= 0)
            continue;
        planned += m;
        if (dpl_holder_for(x->pl, (size_t)t->pool, src, NULL) >= 0)
            have += m;
    }
    have += n > planned ? n - planned : 0; /* beyond its plan: from the nearest pools */
    return have < n ? have : n;
}

int64_t prt_data_reachable(const prt *rt)
{
    const struct rt_data *x = rt->data;
    if (!x)
        return rt->s->dataset.samples;
    int64_t n = 0;
    for (size_t k = 0; k < dpl_n_pools(x->pl); k++)
        if (dpl_holder_for(x->pl, k, 0, NULL) >= 0)
            n += dpl_pool_size(x->pl, k);
    return n;
}

void prt_data_lose(prt *rt, int64_t n)
{
    if (rt->data && n > 0)
        rt->data->lost += n;
}

static void fetch_now(prt *rt, void *ctx)
{
    dfetch *fx = ctx;
    if (fx->gen == rt->data->gen[fx->d]) /* not when its device went down since */
        fx->done(fx->ctx, 0);
}

/* n samples for device d from the pools nearest it other than its own
 * slice (which it holds already): its site's, then the nearest sites',
 * none used up (which samples they are does not matter here, only where
 * they come from); returns what no pool could give. */
static int64_t fetch_nearest(prt *rt, size_t d, int64_t n, int resent, dfetch *fx)
{
    struct rt_data *x = rt->data;
    size_t np = dpl_n_pools(x->pl);
    char *seen = dp_calloc(np + 1, 1);
    if (!seen) {
        fail_oom(rt);
        return 0;
    }
    while (n > 0 && !rt->failed) {
        size_t best = np;
        int bc = 3, bh = -1;
        double bl = INFINITY, lat;
        for (size_t k = 0; k < np; k++) {
            int c, h = seen[k] ? -1 : dpl_holder_for(x->pl, k, d, &c);
            if (h < 0 || h == (int)d + 1)
                continue;
            dpl_path_rate(rt->s, x->pl, h, d, &lat);
            if (c < bc || (c == bc && lat < bl))
                best = k, bc = c, bl = lat, bh = h;
        }
        if (best == np)
            break;
        seen[best] = 1;
        int64_t m = dpl_pool_size(x->pl, best) < n ? dpl_pool_size(x->pl, best) : n;
        start(rt, d, bh, (int32_t)best, dpl_pool_first(x->pl, best), m, 0, resent, fx);
        n -= m;
    }
    dp_free(seen);
    return n;
}

int64_t prt_data_fetch(prt *rt, size_t d, int64_t n, long src, int resent, net_done_fn done, void *ctx)
{
    struct rt_data *x = rt->data;
    double b = (double)n * rt->s->dataset.sample_bytes;
    if (!x) { /* the whole dataset at the server: one flow, as always */
        if (resent)
            prt_add_resent(rt, b);
        prt_add_server_bytes(rt, d, b);
        if (!world_transfer(rt->w, 0, (int)d + 1, b, done, ctx)) {
            fail_oom(rt);
            return DP_ENOMEM;
        }
        return 0;
    }
    jbreak(rt);
    dfetch *fx = dp_calloc(1, sizeof *fx);
    if (!fx) {
        fail_oom(rt);
        return DP_ENOMEM;
    }
    *fx = (dfetch){rt, x->fetches, d, x->gen[d], 1, done, ctx}; /* pend 1 until every flow is started */
    x->fetches = fx;
    int64_t lost = 0;
    if (src >= 0 && x->have_plan) { /* device src's samples, in its plan's order */
        size_t s = (size_t)src;
        int64_t skip = x->given[s];
        for (size_t i = x->plan.off[s]; i < x->plan.off[s + 1] && n > 0 && !rt->failed; i++) {
            const dpl_take *t = &x->plan.takes[i];
            if (skip >= t->n) {
                skip -= t->n;
                continue;
            }
            int h = dpl_holder_for(x->pl, (size_t)t->pool, d, NULL);
            int64_t m = h < 0 || t->n - skip < n ? t->n - skip : n, first = t->first + skip;
            skip = 0;
            if (s != d) /* handed on (samples no holder has are passed over: prt_data_available) */
                x->given[s] += m;
            if (h < 0)
                continue;
            if (h == (int)d + 1)
                x->local += (double)m * sb(rt);
            else
                start(rt, d, h, t->pool, first, m, 0, resent, fx);
            n -= m;
        }
    }
    if (n > 0 && !rt->failed)
        lost += fetch_nearest(rt, d, n, resent, fx);
    x->lost += lost;
    if (rt->failed)
        return rt->err->code;
    if (--fx->pend == 0 && prt_at(rt, sim_now(rt->e), fetch_now, fx))
        return DP_ENOMEM;
    return lost;
}

int prt_data_placed(const prt *rt)
{
    return rt->data != NULL;
}

int64_t prt_data_local(const prt *rt, size_t d)
{
    const struct rt_data *x = rt->data;
    int64_t n = 0;
    if (!x)
        return 0;
    for (size_t k = 0; k < dpl_n_pools(x->pl); k++) {
        int cls;
        if (dpl_holder_for(x->pl, k, d, &cls) == (int)d + 1 && cls == 0)
            n += dpl_pool_size(x->pl, k);
    }
    return n;
}

double prt_data_rate(const prt *rt, size_t d)
{
    return dpl_read_rate(rt->s, rt->data ? rt->data->pl : NULL, d);
}

static void reread_now(prt *rt, void *ctx)
{
    size_t d = (size_t)((prt_fn *)ctx - rt->data->ffn);
    rt->data->ffn[d](rt, rt->data->fctx[d]);
}

int prt_data_reread(prt *rt, size_t d, prt_fn fn, void *ctx)
{
    struct rt_data *x = rt->data;
    if (!x || !x->have_plan)
        return prt_fail(rt, DP_EINPUT, "device %s re-reads its data before any distribution (a policy's bug)",
                        rt->s->devices[d].name);
    x->ffn[d] = fn;
    x->fctx[d] = ctx;
    x->fpend[d] = 0;
    int s = dev_site(rt, d);
    dcache *c = s >= 0 ? x->cache[s] : NULL;
    int cnode = c ? world_store_node(rt->w, s, 1) : -1;
    prt_set_act(rt, d, RES_ACT_RECV_DATA);
    for (size_t i = x->plan.off[d]; i < x->plan.off[d + 1] && !rt->failed; i++) {
        dpl_take *t = &x->plan.takes[i];
        int h = dpl_holder_for(x->pl, (size_t)t->pool, d, NULL);
        if (t->n <= 0 || h == (int)d + 1) {
            x->local += (double)(t->n > 0 ? t->n : 0) * sb(rt);
            continue;
        }
        if (h < 0) { /* every holder gone: lost for good */
            lose(rt, d, t->n);
            t->n = 0;
            continue;
        }
        int64_t hit = c ? dcache_access(c, t->first, t->n) : 0;
        if (hit < 0) {
            fail_oom(rt);
            break;
        }
        if (c) {
            x->hits += hit;
            x->misses += t->n - hit;
            x->saved += (double)hit * sb(rt);
        }
        if (hit > 0)
            start(rt, d, cnode, t->pool, t->first, hit, 1, 0, NULL);
        if (t->n - hit > 0 && !rt->failed)
            start(rt, d, h, t->pool, t->first + hit, t->n - hit, 1, 0, NULL);
    }
    if (rt->failed)
        return rt->err->code;
    if (x->fpend[d] == 0) /* nothing moves: go on from an event now */
        return prt_at(rt, sim_now(rt->e), reread_now, &x->ffn[d]);
    return 0;
}

void data_stats(prt *rt)
{
    struct rt_data *x = rt->data;
    res_run *r = rt->r;
    net *n = world_net(rt->w);
    double wan = 0;
    for (size_t l = 0; l < net_link_count(n); l++) {
        int dev, dir;
        world_link_owner(rt->w, (int)l, &dev, &dir);
        if (dev == -2)
            wan += net_link_stat_bytes(n, (int)l); /* analytic rings included */
    }
    int bad = res_add_stat(r, "data.bytes_moved", RES_SCOPE_RUN, 0, 0, x->moved) ||
              res_add_stat(r, "data.bytes_local", RES_SCOPE_RUN, 0, 0, x->local) ||
              res_add_stat(r, "data.bytes_wan", RES_SCOPE_RUN, 0, 0, x->wan) ||
              res_add_stat(r, "data.bytes_replanned", RES_SCOPE_RUN, 0, 0, x->replanned) ||
              res_add_stat(r, "data.samples_lost", RES_SCOPE_RUN, 0, 0, (double)x->lost) ||
              res_add_stat(r, "wan.bytes", RES_SCOPE_RUN, 0, 0, wan);
    if (!bad && rt->s->data->any_cache)
        bad = res_add_stat(r, "cache.hits", RES_SCOPE_RUN, 0, 0, (double)x->hits) ||
              res_add_stat(r, "cache.misses", RES_SCOPE_RUN, 0, 0, (double)x->misses) ||
              res_add_stat(r, "cache.hit_rate", RES_SCOPE_RUN, 0, 0,
                           x->hits + x->misses ? (double)x->hits / (double)(x->hits + x->misses) : 0) ||
              res_add_stat(r, "cache.bytes_saved", RES_SCOPE_RUN, 0, 0, x->saved);
    if (bad)
        fail_oom(rt);
}
