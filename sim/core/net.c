/* net.c: max-min fair flows by progressive filling.
 *
 * Invariants:
 *  - Every ACTIVE flow has a rate set by the last reshare and a predicted
 *    finish time; `t_last` is when all remaining byte counts were brought up
 *    to date.  Rates are constant between reshares, so advancing is exact
 *    up to rounding.
 *  - At most one completion event (the earliest finish) and at most one
 *    deferred reshare event are pending.
 *
 * Progressive filling: every bottleneck candidate (a finite link with
 * unfrozen flows, level = remaining capacity / unfrozen flows; or a flow's
 * own rate cap) sits in a min-heap.  The smallest level is popped and its
 * flows frozen at that level, which lowers the capacity and the count of the
 * other links they cross.  A link's level can only rise when a flow is frozen
 * at a level not above it, so entries pushed earlier are stale exactly when
 * their level differs from the link's current one, and are skipped.  Cost of
 * one reshare: O((F * path + L) log(F + L)) for F active flows over L links,
 * instead of the O(L * F) of the textbook loop (tests/bench_net.c).
 *
 * Flows that share at most one link each (a server NIC and access links)
 * are held instead by net_star.c's water-filling, O(log F) per event; it
 * hands them back here when that structure breaks.
 */
#include "net.h"
#include "log.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { FLOW_FREE = 0, FLOW_PENDING, FLOW_ACTIVE };

typedef struct link {
    /* First the fields a flow's start and end read and write (unhold,
     * link_busy_inc/dec, flow_links_end, the star path's ownership): one
     * 64-byte line when the array happens to align, two at worst, instead
     * of three scattered over 160 bytes (a cache miss each with 10^6
     * devices' links). */
    double cap; /* in effect: 0 while down */
    int n_active;
    int down;      /* an outage: carries nothing whatever its nominal capacity */
    double bytes;  /* delivered by finished flows, since the last net_fold */
    double busy_s; /* closed busy intervals, likewise */
    double busy_since;
    /* held by a closed-form schedule (net_link_hold): hold(hold_ctx) runs
     * before anything changes its shares */
    net_hold_fn hold;
    /* star fast path (net_star.c) */
    uint32_t owner; /* 1 + the flow it is private to, or 0 */
    uint32_t hub;   /* the hub it is, or 0 */
    double peak;    /* highest share of its capacity in use after a reshare */
    /* the rest */
    void *hold_ctx;
    double nominal;             /* from the trace or net_link_set_capacity */
    double bytes_tot, busy_tot; /* folded by net_fold */
    /* net_link_account_aside: since the last fold, and folded */
    double abytes, abusy, abytes_tot, abusy_tot;
    char *name;
    trace *tr;
    struct trace_ctx *tctx;
    /* reshare scratch */
    unsigned stamp;
    double R;
    double W; /* weighted sharing: the unfrozen flows' weights (nu counts them) */
    int nu, off, cnt;
    int deferred; /* on n->deferred: its new level is pushed once, after the bottleneck's freezes */
} link;

typedef struct trace_ctx {
    net *n;
    int link;
} trace_ctx;

/* Flows live in fixed chunks so a flow's address is stable: the engine
 * event that ends its latency phase carries the flow pointer as ctx, with no
 * allocation per flow. */
#define CHUNK_BITS 10
#define CHUNK      (1u << CHUNK_BITS)

typedef struct flow {
    net *n;
    uint32_t index;
    uint32_t gen;
    int state;
    int np;
    int path[NET_MAX_PATH];
    double bytes, remaining, rate, cap, finish_t;
    double w; /* its weight under NET_SHARE_RTT: 1 / max(RTT, NET_RTT_MIN); 1 under max-min */
    net_done_fn done;
    void *ctx;
    uint64_t seq;
    uint64_t act_ev; /* the end of its latency phase, while pending */
    uint32_t next_free;
    int frozen;
    uint32_t apos; /* position in n->active while active */
    /* star fast path (net_star.c) */
    int sset;         /* STAR_OFF, STAR_NEW, STAR_C, STAR_U */
    uint32_t hub;     /* its hub (0: it crosses none) */
    uint64_t sstamp;  /* its entries in its set's heaps carry this (0: in none) */
    double c;         /* private cap */
    double key, t0;   /* C: remaining `key` at t0; U: the virtual time it ends at */
    double fin;       /* C: finish time */
    uint64_t u_epoch; /* U: the first level epoch it ran at */
} flow;

typedef struct sh_ent {
    double key;
    uint64_t stamp;
    uint32_t idx;
} sh_ent;

struct star_epoch {
    uint64_t ep;
    double level;
};

/* One water-filling of the star fast path (net_star.c): the flows of one
 * shared link, or (hub 0) those that share none. */
typedef struct star_hub {
    int link;        /* the shared link, or -1 */
    double V, tV, L; /* virtual clock, when last advanced, level */
    double sum_c, sum_c_err;
    sh_ent *sh[4]; /* heaps, dead entries included */
    size_t sh_n[4], sh_cap[4];
    /* beside each heap, a sorted run: the entries of a bulk placement
     * (sh_bulk_end), read from run_at on (see sh_top) */
    sh_ent *run[4];
    size_t run_at[4], run_n[4], run_cap[4];
    int run_open[4];         /* filling in the current bulk, not sorted yet */
    size_t n_c, n_u;         /* flows in C and in U */
    struct star_epoch *lstk; /* levels since an epoch: L decreasing */
    size_t n_lstk, cap_lstk;
    uint64_t epoch;
} star_hub;

typedef struct lvl {
    double level;
    int32_t who; /* >= 0: link index; < 0: -(active position) - 1 (a rate cap) */
} lvl;

struct net {
    sim_engine *e;
    link *links;
    size_t n_links, cap_links;
    size_t owning; /* links from 0 that may own a name or trace: net_free walks only these */
    flow **chunks;
    size_t n_chunks, cap_chunks;
    uint32_t n_flows; /* slots ever used */
    uint32_t free_head;
    uint32_t *active; /* flow indices */
    size_t n_active, cap_active;
    size_t n_pending;
    uint64_t seq;
    double t_last;
    uint64_t reshare_ev, done_ev;
    int full; /* the pending reshare must recompute the shares */
    uint64_t reshares, fills;
    uint64_t cap_changes; /* capacity changes so far (net_cap_changes) */
    int folded;           /* net_fold ran: the link totals are bytes_tot/busy_tot + the running ones */
    unsigned stamp;
    /* reshare scratch, kept between calls */
    int *touched;
    size_t cap_touched;
    uint32_t *csr;
    size_t cap_csr;
    lvl *heap;
    size_t n_heap, cap_heap;
    lvl *lrun; /* candidates already in order when the fill began (fill_pop) */
    size_t lrun_at, lrun_n, cap_lrun;
    int no_runs;   /* net_set_fill_runs(n, 0): every candidate on the heap */
    uint64_t runs; /* fills that read their candidates as a run */
    int *deferred; /* links whose level changed while a bottleneck froze its flows */
    size_t n_deferred, cap_deferred;
    struct fin_ent *finished; /* a completion's flows, with their start order (report_done) */
    size_t cap_finished;
    struct fin_ent *fin_tmp; /* radix sort scratch (sort_finished) */
    size_t cap_fin_tmp;
    /* star fast path (net_star.c) */
    net_namer_fn namer; /* names of links added without one */
    void *namer_ctx;
    /* net_set_done_prefetch: callbacks whose data report_done fetches ahead */
    struct {
        net_done_fn done;
        sim_prefetch_fn fn;
        void *pctx;
    } dpf[NET_MAX_DONE_PREFETCH];
    int n_dpf;
    int star;         /* on: the flows are held by net_star.c's sets */
    int star_off;     /* DPSIM_NET_NO_STAR */
    size_t star_min;  /* fewest active flows to enter */
    size_t star_bulk; /* fewest flows placed at once to go to runs */
    star_hub *hubs;
    size_t n_hubs, cap_hubs, hubs_made; /* in use, allocated, ever initialised */
    uint64_t sstamp;                    /* stamps handed out */
    int star_oom;
    double done_t;  /* when the pending completion event is, if the star path set it */
    uint32_t *pend; /* STAR_NEW flows */
    size_t n_pend, cap_pend;
    int sh_bulk;     /* a bulk placement is on: pushes append to runs */
    sh_ent *run_tmp; /* radix sort scratch (sh_bulk_end) */
    size_t cap_run_tmp;
    int oom; /* memory ran out computing shares or ends: every flow stalled for good */
    net_sharing sharing; /* NET_SHARE_MAXMIN or NET_SHARE_RTT (net_set_sharing) */
    int aside;           /* net_link_account_aside was called */
    double *adelta;      /* per link: the aside bytes and busy seconds of the last epoch folded */
    size_t cap_adelta;
    int adelta_ok;       /* adelta holds the last fold's */
};

#define NO_FLOW UINT32_MAX

/* A finished flow and its seq, kept beside it so that sorting 10^6 flows
 * ending at one instant does not chase 10^6 pointers per comparison. */
typedef struct fin_ent {
    uint64_t seq;
    flow *f;
} fin_ent;

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t nc = *cap ? *cap : 16;
    while (nc < need)
        nc *= 2;
    void *np = dp_realloc(*p, nc * elem);
    if (!np)
        return -1;
    *p = np;
    *cap = nc;
    return 0;
}

static inline flow *F(const net *n, uint32_t i)
{
    return &n->chunks[i >> CHUNK_BITS][i & (CHUNK - 1)];
}

static void mark_dirty(net *n);
static void mark_touched(net *n);
static void advance(net *n);
static void on_done(sim_engine *e, void *ctx, uint64_t id);
static void active_remove(net *n, flow *f);
static void flow_links_end(net *n, flow *f, double bytes);
static void report_done(net *n, size_t nf);
static void stall_all(net *n);
static void dpf_hint(const net *n, const flow *f);

/* LSD radix sorts (sort_finished, the star path's runs): digits of 11 bits
 * keep the count table in the cache. */
#define RADIX_BITS 11
#define RADIX_MASK ((1u << RADIX_BITS) - 1)

/* The star fast path: flows sharing one link, in closed form (net_star.c). */
#include "net_star.c"

net *net_new(sim_engine *e, dp_err *err)
{
    net *n = dp_calloc(1, sizeof *n);
    if (!n) {
        dp_err_set(err, DP_ENOMEM, "net: out of memory");
        return NULL;
    }
    n->e = e;
    n->free_head = NO_FLOW;
    /* DPSIM_NET_NO_STAR=1: progressive filling only (to compare the two) */
    n->star_off = dp_env_flag("DPSIM_NET_NO_STAR");
    n->star_min = STAR_MIN_FLOWS;
    n->star_bulk = STAR_BULK_MIN;
    return n;
}

void net_free(net *n)
{
    if (!n)
        return;
    for (size_t i = 0; i < n->owning; i++) { /* a device's access links own nothing */
        dp_free(n->links[i].name);
        trace_free(n->links[i].tr);
        dp_free(n->links[i].tctx);
    }
    for (size_t c = 0; c < n->n_chunks; c++)
        dp_free(n->chunks[c]);
    dp_free(n->chunks);
    dp_free(n->links);
    dp_free(n->active);
    dp_free(n->touched);
    dp_free(n->csr);
    dp_free(n->heap);
    dp_free(n->lrun);
    dp_free(n->deferred);
    dp_free(n->finished);
    dp_free(n->fin_tmp);
    dp_free(n->adelta);
    star_free(n);
    dp_free(n);
}

/* A change to a held link's shares is about to happen: its holder takes
 * its flows back first (and releases the link). */
static void unhold(net *n, int link_i)
{
    link *l = &n->links[link_i];
    if (l->hold) {
        net_hold_fn fn = l->hold;
        l->hold = NULL;
        fn(l->hold_ctx);
    }
}

/* ---- links ---------------------------------------------------------------- */

static void link_busy_inc(net *n, link *l)
{
    if (l->n_active++ == 0)
        l->busy_since = sim_now(n->e);
}

static void link_busy_dec(net *n, link *l)
{
    if (--l->n_active == 0)
        l->busy_s += sim_now(n->e) - l->busy_since;
}

/* A flow leaves its links, having delivered `bytes` (the star path's end of
 * a flow; the general path does the same inline). */
static void flow_links_end(net *n, flow *f, double bytes)
{
    for (int j = 0; j < f->np; j++) {
        link *l = &n->links[f->path[j]];
        l->bytes += bytes;
        link_busy_dec(n, l);
    }
}

static void on_trace_change(sim_engine *e, void *ctx, uint64_t id)
{
    (void)id;
    trace_ctx *tc = ctx;
    net *n = tc->n;
    unhold(n, tc->link);
    link *l = &n->links[tc->link];
    double t = sim_now(e), v;
    l->nominal = trace_value_at(l->tr, t);
    star_cap_change(n, tc->link, l->down ? 0 : l->nominal);
    l->cap = l->down ? 0 : l->nominal;
    n->cap_changes++;
    if (l->n_active > 0)
        mark_dirty(n);
    else
        mark_touched(n);
    double next = trace_next_change(l->tr, t, &v);
    /* A failed sim_at is recorded by the engine (sim_error), which ends
     * the run: the link must not silently keep this capacity forever. */
    if (isfinite(next))
        (void)sim_at(e, next, on_trace_change, tc);
}

int net_link_add(net *n, double cap_Bps, const trace *tr, const char *name)
{
    if (isnan(cap_Bps) || cap_Bps < 0)
        return DP_EINPUT;
    if (n->n_links >= INT32_MAX || grow((void **)&n->links, &n->cap_links, n->n_links + 1, sizeof(link)))
        return DP_ENOMEM;
    link *l = &n->links[n->n_links];
    memset(l, 0, sizeof *l);
    l->cap = l->nominal = cap_Bps;
    n->cap_changes++;
    int idx = (int)n->n_links++;
    if (name || tr)
        n->owning = n->n_links;
    if (name && !(l->name = dp_strdup(name)))
        return DP_ENOMEM;
    if (tr) {
        l->tr = trace_copy(tr);
        l->tctx = dp_malloc(sizeof *l->tctx);
        if (!l->tr || !l->tctx)
            return DP_ENOMEM;
        l->tctx->n = n;
        l->tctx->link = idx;
        double t = sim_now(n->e), v;
        l->cap = l->nominal = trace_value_at(l->tr, t);
        double next = trace_next_change(l->tr, t, &v);
        if (isfinite(next) && !sim_at(n->e, next, on_trace_change, l->tctx))
            return DP_ENOMEM;
    }
    return idx;
}

int net_link_set_capacity(net *n, int link_i, double cap_Bps)
{
    if (link_i < 0 || (size_t)link_i >= n->n_links || isnan(cap_Bps) || cap_Bps < 0)
        return DP_EINPUT;
    unhold(n, link_i);
    star_cap_change(n, link_i, n->links[link_i].down ? 0 : cap_Bps);
    n->links[link_i].nominal = cap_Bps;
    n->links[link_i].cap = n->links[link_i].down ? 0 : cap_Bps;
    n->cap_changes++;
    if (n->links[link_i].n_active > 0)
        mark_dirty(n);
    else
        mark_touched(n);
    return 0;
}

int net_link_set_down(net *n, int link_i, int down)
{
    if (link_i < 0 || (size_t)link_i >= n->n_links)
        return DP_EINPUT;
    unhold(n, link_i);
    link *l = &n->links[link_i];
    star_cap_change(n, link_i, down ? 0 : l->nominal);
    l->down = down != 0;
    l->cap = l->down ? 0 : l->nominal;
    n->cap_changes++;
    mark_dirty(n);
    return 0;
}

double net_link_peak_util(const net *n, int l)
{
    return star_peak_util(n, l);
}

double net_link_capacity(const net *n, int l)
{
    return n->links[l].cap;
}
const char *net_link_name(const net *n, int l)
{
    static _Thread_local char buf[256];
    if (n->links[l].name)
        return n->links[l].name;
    return n->namer ? n->namer(n->namer_ctx, l, buf, sizeof buf) : "link";
}

void net_link_prefetch(const net *n, int l)
{
    if (l >= 0 && (size_t)l < n->n_links)
        __builtin_prefetch(&n->links[l]);
}

int net_set_done_prefetch(net *n, net_done_fn done, sim_prefetch_fn fn, void *pctx)
{
    for (int k = 0; k < n->n_dpf; k++)
        if (n->dpf[k].done == done) {
            n->dpf[k].fn = fn;
            n->dpf[k].pctx = pctx;
            return 0;
        }
    if (n->n_dpf >= NET_MAX_DONE_PREFETCH)
        return DP_EINPUT;
    n->dpf[n->n_dpf].done = done;
    n->dpf[n->n_dpf].fn = fn;
    n->dpf[n->n_dpf].pctx = pctx;
    n->n_dpf++;
    return 0;
}

void net_set_namer(net *n, net_namer_fn fn, void *ctx)
{
    n->namer = fn;
    n->namer_ctx = ctx;
}
int net_out_of_memory(const net *n)
{
    return n->oom;
}

size_t net_link_count(const net *n)
{
    return n->n_links;
}
int net_link_has_trace(const net *n, int l)
{
    return n->links[l].tr != NULL;
}
int net_link_active(const net *n, int l)
{
    return n->links[l].n_active;
}
double net_link_bytes(const net *n, int l)
{
    const link *k = &n->links[l];
    return n->folded ? k->bytes_tot + k->bytes : k->bytes;
}

double net_link_busy_s(const net *n, int l)
{
    const link *k = &n->links[l];
    double run = k->busy_s + (k->n_active ? sim_now(n->e) - k->busy_since : 0);
    return n->folded ? k->busy_tot + run : run;
}

int net_fold(net *n, double *delta)
{
    for (size_t i = 0; i < n->n_links; i++)
        if (n->links[i].n_active)
            return DP_EINPUT;
    /* out of memory: the aside part is folded but not repeated (statistics only) */
    n->adelta_ok = n->aside && !grow((void **)&n->adelta, &n->cap_adelta, 2 * n->n_links, sizeof(double));
    n->folded = 1;
    for (size_t i = 0; n->aside && i < n->n_links; i++) {
        link *l = &n->links[i];
        if (n->adelta_ok) {
            n->adelta[2 * i] = l->abytes;
            n->adelta[2 * i + 1] = l->abusy;
        }
        l->abytes_tot += l->abytes;
        l->abusy_tot += l->abusy;
        l->abytes = l->abusy = 0;
    }
    for (size_t i = 0; i < n->n_links; i++) {
        link *l = &n->links[i];
        if (delta) {
            delta[2 * i] = l->bytes;
            delta[2 * i + 1] = l->busy_s;
        }
        l->bytes_tot += l->bytes;
        l->busy_tot += l->busy_s;
        l->bytes = l->busy_s = 0;
    }
    return 0;
}

void net_fold_add(net *n, const double *delta)
{
    n->folded = 1;
    for (size_t i = 0; i < n->n_links; i++) {
        n->links[i].bytes_tot += delta[2 * i];
        n->links[i].busy_tot += delta[2 * i + 1];
    }
    for (size_t i = 0; n->adelta_ok && i < n->n_links; i++) {
        n->links[i].abytes_tot += n->adelta[2 * i];
        n->links[i].abusy_tot += n->adelta[2 * i + 1];
    }
}

void net_link_account_aside(net *n, int link_i, double bytes, double busy_s, double util)
{
    if (link_i < 0 || (size_t)link_i >= n->n_links)
        return;
    link *l = &n->links[link_i];
    n->aside = 1;
    l->abytes += bytes;
    l->abusy += busy_s;
    if (util > l->peak)
        l->peak = util > 1 ? 1 : util;
}

double net_link_stat_bytes(const net *n, int l)
{
    const link *k = &n->links[l];
    return net_link_bytes(n, l) + (n->aside ? k->abytes_tot + k->abytes : 0);
}

double net_link_stat_busy_s(const net *n, int l)
{
    const link *k = &n->links[l];
    return net_link_busy_s(n, l) + (n->aside ? k->abusy_tot + k->abusy : 0);
}

int net_link_hold(net *n, int link_i, net_hold_fn hook, void *ctx)
{
    if (link_i < 0 || (size_t)link_i >= n->n_links || !hook)
        return DP_EINPUT;
    link *l = &n->links[link_i];
    if (l->hold || l->n_active || l->tr || !(l->cap > 0) || !isfinite(l->cap))
        return DP_EINPUT;
    l->hold = hook;
    l->hold_ctx = ctx;
    return 0;
}

void net_link_release(net *n, int link_i)
{
    if (link_i >= 0 && (size_t)link_i < n->n_links)
        n->links[link_i].hold = NULL;
}

void net_link_account(net *n, int link_i, double bytes, double busy_s, double rate)
{
    if (link_i < 0 || (size_t)link_i >= n->n_links)
        return;
    link *l = &n->links[link_i];
    l->bytes += bytes;
    l->busy_s += busy_s;
    /* as a reshare computes it for a lone flow of this rate */
    double R = l->cap - rate;
    if (R < 0)
        R = 0;
    if (l->cap > 0 && l->cap - R > l->peak * l->cap)
        l->peak = (l->cap - R) / l->cap;
}

/* ---- flows ------------------------------------------------------------------ */

static flow *flow_of(const net *n, uint64_t id)
{
    uint32_t i = (uint32_t)(id & 0xffffffffu);
    if (id == 0 || i >= n->n_flows)
        return NULL;
    flow *f = F(n, i);
    return (f->gen == (uint32_t)(id >> 32) && f->state != FLOW_FREE) ? f : NULL;
}

static uint64_t flow_id(const flow *f)
{
    return ((uint64_t)f->gen << 32) | f->index;
}

/* One more chunk of CHUNK zeroed flows (for flow_alloc or net_reserve);
 * NULL when out of memory. */
static flow *chunk_add(net *n)
{
    if (grow((void **)&n->chunks, &n->cap_chunks, n->n_chunks + 1, sizeof(flow *)))
        return NULL;
    flow *c = dp_calloc(CHUNK, sizeof(flow));
    if (c)
        n->chunks[n->n_chunks++] = c;
    return c;
}

static flow *flow_alloc(net *n)
{
    if (n->free_head != NO_FLOW) {
        flow *f = F(n, n->free_head);
        n->free_head = f->next_free;
        return f;
    }
    if (n->n_flows >= NO_FLOW - CHUNK)
        return NULL;
    /* a new chunk at each CHUNK-th flow, unless net_reserve made it */
    if ((n->n_flows & (CHUNK - 1)) == 0 && (n->n_flows >> CHUNK_BITS) >= n->n_chunks && !chunk_add(n))
        return NULL;
    flow *f = F(n, n->n_flows);
    f->index = n->n_flows++;
    f->gen = 1;
    f->n = n;
    return f;
}

int net_reserve(net *n, size_t flows)
{
    size_t need = ((size_t)n->n_flows + flows + CHUNK - 1) >> CHUNK_BITS;
    if (need > (NO_FLOW >> CHUNK_BITS) - 1)
        return DP_EINPUT;
    while (n->n_chunks < need) {
        flow *c = chunk_add(n);
        if (!c)
            return DP_ENOMEM;
        memset(c, 0, CHUNK * sizeof(flow)); /* its pages now (calloc may leave them untouched) */
    }
    size_t total = n->n_flows + flows;
    if (grow((void **)&n->active, &n->cap_active, total, sizeof(uint32_t)) ||
        grow((void **)&n->finished, &n->cap_finished, total, sizeof(fin_ent)))
        return DP_ENOMEM;
    memset(n->active + n->n_active, 0, (n->cap_active - n->n_active) * sizeof(uint32_t));
    memset(n->finished, 0, n->cap_finished * sizeof(fin_ent));
    return 0;
}

static void flow_release(net *n, flow *f)
{
    f->state = FLOW_FREE;
    if (++f->gen == 0)
        f->gen = 1;
    f->next_free = n->free_head;
    n->free_head = f->index;
}

/* Swap-remove an active flow from n->active (what a linear search would
 * do, in O(1)). */
static void active_remove(net *n, flow *f)
{
    uint32_t k = f->apos, last = n->active[--n->n_active];
    n->active[k] = last;
    F(n, last)->apos = k;
}

static void reshare_light(net *n);

static void on_reshare(sim_engine *e, void *ctx, uint64_t id)
{
    (void)e;
    (void)id;
    net *n = ctx;
    n->reshare_ev = 0;
    if (n->full || n->star)
        net_reshare_now(n);
    else
        reshare_light(n);
}

/* Batch every change at this instant into one reshare, run as an event at
 * the current time. */
static void mark_dirty(net *n)
{
    n->full = 1;
    if (!n->reshare_ev)
        n->reshare_ev = sim_at(n->e, sim_now(n->e), on_reshare, n);
}

/* A change that alters no share: the capacity of a link no active flow
 * crosses (shares depend only on the links active flows cross).  A looping
 * WAN trace that no flow uses made every breakpoint re-run progressive
 * filling over every flow in the world, quadratic in devices (C-ADP on
 * geo-3sites with 20,000 devices).  The event and the bookkeeping of a
 * reshare are kept (reshare_light), so results, event counts and rounding
 * stay bit for bit those of a full reshare. */
static void mark_touched(net *n)
{
    if (!n->reshare_ev)
        n->reshare_ev = sim_at(n->e, sim_now(n->e), on_reshare, n);
}

/* Bring a flow's remaining bytes dt seconds on at its rate. */
static inline void flow_advance(flow *f, double dt)
{
    if (f->rate > 0) {
        f->remaining = isinf(f->rate) ? 0 : f->remaining - f->rate * dt;
        if (f->remaining < 0)
            f->remaining = 0;
    }
}

/* Bring every active flow's remaining bytes up to now. */
static void advance(net *n)
{
    double now = sim_now(n->e), dt = now - n->t_last;
    if (dt > 0)
        for (size_t k = 0; k < n->n_active; k++)
            flow_advance(F(n, n->active[k]), dt);
    n->t_last = now;
}

static int activate(net *n, flow *f)
{
    for (int k = 0; k < f->np; k++) /* its links' holders take their flows back first */
        unhold(n, f->path[k]);
    if (grow((void **)&n->active, &n->cap_active, n->n_active + 1, sizeof(uint32_t)))
        return -1;
    if (!n->star)
        advance(n); /* t_last must not predate a flow that joins the set */
    f->state = FLOW_ACTIVE;
    f->rate = 0;
    f->finish_t = INFINITY;
    f->apos = (uint32_t)n->n_active;
    n->active[n->n_active++] = f->index;
    for (int k = 0; k < f->np; k++)
        link_busy_inc(n, &n->links[f->path[k]]);
    if (n->star)
        star_activate(n, f);
    mark_dirty(n);
    return 0;
}

static void on_activate(sim_engine *e, void *ctx, uint64_t id)
{
    (void)e;
    (void)id;
    flow *f = ctx;
    net *n = f->n;
    n->n_pending--;
    if (activate(n, f)) { /* out of memory: the flow can never progress */
        flow_release(n, f);
        stall_all(n);
    }
}

uint64_t net_flow_start(net *n, const int *links, size_t n_links, double bytes, double latency_s,
                        double rate_cap_Bps, net_done_fn done, void *ctx)
{
    if (n_links > NET_MAX_PATH || !(bytes >= 0) || !isfinite(bytes) || !(latency_s >= 0) ||
        !isfinite(latency_s) || !(rate_cap_Bps > 0))
        return 0;
    for (size_t k = 0; k < n_links; k++)
        if (links[k] < 0 || (size_t)links[k] >= n->n_links)
            return 0;
    flow *f = flow_alloc(n);
    if (!f)
        return 0;
    f->np = 0;
    for (size_t k = 0; k < n_links; k++) { /* a link listed twice counts once */
        int dup = 0;
        for (int j = 0; j < f->np; j++)
            dup |= f->path[j] == links[k];
        if (!dup)
            f->path[f->np++] = links[k];
    }
    f->bytes = f->remaining = bytes;
    f->cap = rate_cap_Bps;
    f->w = n->sharing == NET_SHARE_RTT ? 1 / fmax(2 * latency_s, NET_RTT_MIN) : 1;
    f->rate = 0;
    f->finish_t = INFINITY;
    f->done = done;
    f->ctx = ctx;
    f->seq = ++n->seq;
    f->frozen = 0;
    f->sset = STAR_OFF;
    f->sstamp = 0;
    uint64_t id = flow_id(f);
    if (latency_s > 0) {
        f->state = FLOW_PENDING;
        if (!(f->act_ev = sim_at(n->e, sim_now(n->e) + latency_s, on_activate, f))) {
            flow_release(n, f);
            return 0;
        }
        n->n_pending++;
    } else if (activate(n, f)) {
        flow_release(n, f);
        return 0;
    }
    return id;
}

int net_set_sharing(net *n, net_sharing s)
{
    if (n->seq > 0 || (s != NET_SHARE_MAXMIN && s != NET_SHARE_RTT))
        return DP_EINPUT;
    n->sharing = s;
    return 0;
}

net_sharing net_get_sharing(const net *n)
{
    return n->sharing;
}

int net_flow_set_rtt(net *n, uint64_t id, double rtt_s)
{
    flow *f = flow_of(n, id);
    if (!f || !(rtt_s >= 0) || !isfinite(rtt_s))
        return DP_EINPUT;
    if (n->sharing != NET_SHARE_RTT)
        return 0;
    f->w = 1 / fmax(rtt_s, NET_RTT_MIN);
    if (f->state == FLOW_ACTIVE)
        mark_dirty(n);
    return 0;
}

double net_flow_remaining(const net *n, uint64_t id)
{
    flow *f = flow_of(n, id);
    if (!f)
        return 0;
    if (n->star && f->state == FLOW_ACTIVE)
        return star_rem(n, f, sim_now(n->e));
    if (f->state != FLOW_ACTIVE || !(f->rate > 0))
        return f->remaining;
    double r = isinf(f->rate) ? 0 : f->remaining - f->rate * (sim_now(n->e) - n->t_last);
    return r > 0 ? r : 0;
}

int net_flow_cancel(net *n, uint64_t id, double *sent_bytes)
{
    flow *f = flow_of(n, id);
    if (sent_bytes)
        *sent_bytes = 0;
    if (!f)
        return DP_EINPUT;
    if (f->state == FLOW_PENDING) {
        sim_cancel(n->e, f->act_ev);
        n->n_pending--;
    } else {
        double rem;
        if (n->star) {
            rem = star_cancel(n, f);
        } else {
            advance(n);
            rem = f->remaining;
        }
        double sent = f->bytes - rem;
        active_remove(n, f);
        for (int j = 0; j < f->np; j++) {
            link *l = &n->links[f->path[j]];
            l->bytes += sent;
            link_busy_dec(n, l);
        }
        if (sent_bytes)
            *sent_bytes = sent;
        mark_dirty(n);
    }
    flow_release(n, f);
    return 0;
}

double net_flow_rate(const net *n, uint64_t id)
{
    flow *f = flow_of(n, id);
    if (f && f->state == FLOW_ACTIVE && n->star)
        return star_rate(n, f);
    return (f && f->state == FLOW_ACTIVE) ? f->rate : 0;
}

size_t net_flows_active(const net *n)
{
    return n->n_active;
}
size_t net_flows_pending(const net *n)
{
    return n->n_pending;
}
uint64_t net_cap_changes(const net *n)
{
    return n->cap_changes;
}

uint64_t net_reshares(const net *n)
{
    return n->reshares;
}
uint64_t net_fills(const net *n)
{
    return n->fills;
}

/* ---- progressive filling -------------------------------------------------- */

static inline int lvl_less(const lvl *a, const lvl *b)
{
    /* ties broken by `who` so the freezing order is deterministic */
    return a->level < b->level || (a->level == b->level && a->who < b->who);
}

static int heap_push(net *n, double level, int32_t who)
{
    if (grow((void **)&n->heap, &n->cap_heap, n->n_heap + 1, sizeof(lvl)))
        return -1;
    size_t i = n->n_heap++;
    lvl x = {level, who};
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!lvl_less(&x, &n->heap[p]))
            break;
        n->heap[i] = n->heap[p];
        i = p;
    }
    n->heap[i] = x;
    return 0;
}

/* Put x at position i of the heap's first m entries and move it down to
 * its place. */
static void heap_sift_down(lvl *h, size_t m, size_t i, lvl x)
{
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= m)
            break;
        if (c + 1 < m && lvl_less(&h[c + 1], &h[c]))
            c++;
        if (!lvl_less(&h[c], &x))
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = x;
}

static lvl heap_pop(net *n)
{
    lvl top = n->heap[0], x = n->heap[--n->n_heap];
    if (n->n_heap)
        heap_sift_down(n->heap, n->n_heap, 0, x);
    return top;
}

/* The fill's candidates, when they come out of steps 1-3 already in
 * order (a homogeneous world: every access link at one level, touched in
 * index order), become a run read front to back, and the heap starts empty
 * for the levels the fill pushes: 10^6 links then cost no sift at all.
 * fill_pop takes the smaller of the run's head and the heap's top, the
 * order one heap holding both would give (a duplicate (level, who) pair is
 * the same entry, whichever copy comes first).  1 if the run was made. */
static int fill_run(net *n)
{
    if (n->no_runs)
        return 0;
    for (size_t i = 1; i < n->n_heap; i++)
        if (lvl_less(&n->heap[i], &n->heap[i - 1]))
            return 0;
    lvl *t = n->lrun;
    size_t c = n->cap_lrun;
    n->lrun = n->heap;
    n->cap_lrun = n->cap_heap;
    n->lrun_at = 0;
    n->lrun_n = n->n_heap;
    n->heap = t;
    n->cap_heap = c;
    n->n_heap = 0;
    n->runs++;
    return 1;
}

void net_set_fill_runs(net *n, int on)
{
    n->no_runs = !on;
}

uint64_t net_fill_runs(const net *n)
{
    return n->runs;
}

static inline int fill_left(const net *n)
{
    return n->n_heap > 0 || n->lrun_at < n->lrun_n;
}

static lvl fill_pop(net *n)
{
    if (n->lrun_at < n->lrun_n && (!n->n_heap || lvl_less(&n->lrun[n->lrun_at], &n->heap[0])))
        return n->lrun[n->lrun_at++];
    return heap_pop(n);
}

/* Make the n_heap entries a heap (Floyd, O(n)).  Entries are distinct in
 * (level, who), so the pops come in the same order as after pushing them
 * one by one: the fill is unchanged bit for bit. */
static void heap_build(net *n)
{
    for (size_t i = n->n_heap / 2; i-- > 0;)
        heap_sift_down(n->heap, n->n_heap, i, n->heap[i]);
}

/* A link's level: the rate of each of its unfrozen flows if it froze them
 * now.  Weighted (NET_SHARE_RTT), the level x is in rate per unit weight
 * (flow f would get x * f->w), R / W; W is a sum of weights in [1e-3,
 * 1e6] for RTTs from 1 us to 1000 s, so what the subtractions in freeze
 * leave of it stays positive while nu > 0.  Unweighted it is R / nu (the
 * same bits as before weights existed). */
static inline double link_level(const link *l, int wt)
{
    return l->nu > 0 ? (l->R > 0 ? l->R / (wt ? l->W : (double)l->nu) : 0) : INFINITY;
}

/* Freeze flow f at `rate`; take it out of every finite link it crosses.
 * With `defer`, a link whose level changes goes on n->deferred instead of
 * the heap (push_deferred pushes its final level once): a bottleneck's
 * flows are frozen together, and pushing every intermediate level was most
 * of a reshare's heap work (stale entries; F flows through one NIC pushed
 * the NIC F times).  The fill is unchanged: an entry is used only when its
 * level is the link's current one, and entries order by (level, link). */
static int freeze(net *n, flow *f, double rate, int defer)
{
    int wt = n->sharing == NET_SHARE_RTT;
    f->frozen = 1;
    f->rate = rate;
    for (int k = 0; k < f->np; k++) {
        link *l = &n->links[f->path[k]];
        if (!isfinite(l->cap))
            continue;
        l->R -= rate;
        if (l->R < 0)
            l->R = 0;
        if (wt)
            l->W -= f->w;
        if (--l->nu > 0) {
            if (!defer) {
                if (heap_push(n, link_level(l, wt), f->path[k]))
                    return -1;
            } else if (!l->deferred) {
                if (grow((void **)&n->deferred, &n->cap_deferred, n->n_deferred + 1, sizeof(int)))
                    return -1;
                l->deferred = 1;
                n->deferred[n->n_deferred++] = f->path[k];
            }
        }
    }
    return 0;
}

static int push_deferred(net *n)
{
    int rc = 0;
    for (size_t i = 0; i < n->n_deferred; i++) {
        link *l = &n->links[n->deferred[i]];
        l->deferred = 0;
        if (l->nu > 0 && !rc && heap_push(n, link_level(l, n->sharing == NET_SHARE_RTT), n->deferred[i]))
            rc = -1;
    }
    n->n_deferred = 0;
    return rc;
}

/* Step 5 of a reshare: rates are set; predict finishes and schedule the
 * earliest. */
static void schedule_finish(net *n)
{
    double now = sim_now(n->e), first = INFINITY;
    for (size_t k = 0; k < n->n_active; k++) {
        flow *f = F(n, n->active[k]);
        if (!f->frozen)
            f->rate = INFINITY; /* crossing no finite link and without a cap: unconstrained */
        if (f->remaining <= 0)
            f->finish_t = now;
        else if (f->rate > 0)
            f->finish_t = isinf(f->rate) ? now : now + f->remaining / f->rate;
        else
            f->finish_t = INFINITY; /* stalled on a zero-capacity link */
        if (f->finish_t < first)
            first = f->finish_t;
    }
    if (n->done_ev)
        sim_cancel(n->e, n->done_ev);
    n->done_ev = isfinite(first) ? sim_at(n->e, first, on_done, n) : 0;
}

/* A reshare whose inputs are unchanged: progressive filling would give
 * every flow the rate it has, so only the rest is done, exactly as a full
 * reshare does it (advance, finish times, the completion event). */
static void reshare_light(net *n)
{
    /* advance() and schedule_finish() fused into one pass over the flows
     * (the same operations in the same order per flow): with tens of
     * thousands of flows this runs at every breakpoint of an idle link's
     * trace, and one pass halves the memory traffic. */
    double now = sim_now(n->e), dt = now - n->t_last, first = INFINITY;
    for (size_t k = 0; k < n->n_active; k++) {
        flow *f = F(n, n->active[k]);
        if (dt > 0)
            flow_advance(f, dt);
        if (!f->frozen)
            f->rate = INFINITY;
        if (f->remaining <= 0)
            f->finish_t = now;
        else if (f->rate > 0)
            f->finish_t = isinf(f->rate) ? now : now + f->remaining / f->rate;
        else
            f->finish_t = INFINITY;
        if (f->finish_t < first)
            first = f->finish_t;
    }
    n->t_last = now;
    n->reshares++;
    if (n->done_ev)
        sim_cancel(n->e, n->done_ev);
    n->done_ev = isfinite(first) ? sim_at(n->e, first, on_done, n) : 0;
}

void net_reshare_now(net *n)
{
    if (n->oom) { /* sticky: memory ran out once, the run ends stalled (net_out_of_memory) */
        stall_all(n);
        return;
    }
    /* the star fast path, when the flows form one (net_star.c) */
    if ((n->star || star_try_enter(n)) && star_reshare(n))
        return;
    if (n->reshare_ev) {
        sim_cancel(n->e, n->reshare_ev);
        n->reshare_ev = 0;
    }
    n->full = 0;
    n->reshares++;
    n->fills++;
    unsigned stamp = ++n->stamp;
    size_t n_touched = 0, n_entries = 0, unfrozen = 0;
    int wt = n->sharing == NET_SHARE_RTT; /* weighted: levels per unit weight (link_level) */
    double dt = sim_now(n->e) - n->t_last;
    n->t_last = sim_now(n->e);

    /* 1. in one pass over the flows (a reshare is bound by memory traffic:
     * F flows through one NIC): bring each up to now (as advance() does),
     * count the flows on every finite link, note the flows to freeze (those
     * crossing a finite link or with a cap of their own; the rest are
     * unconstrained, step 5) and put every cap among the candidates */
    if (grow((void **)&n->heap, &n->cap_heap, n->n_active + 1, sizeof(lvl)))
        goto oom;
    n->n_heap = 0;
    for (size_t k = 0; k < n->n_active; k++) {
        flow *f = F(n, n->active[k]);
        if (dt > 0)
            flow_advance(f, dt);
        f->frozen = 0;
        f->rate = 0;
        int bounded = isfinite(f->cap);
        for (int j = 0; j < f->np; j++) {
            link *l = &n->links[f->path[j]];
            if (!isfinite(l->cap))
                continue;
            bounded = 1;
            if (l->stamp != stamp) {
                if (grow((void **)&n->touched, &n->cap_touched, n_touched + 1, sizeof(int)))
                    goto oom;
                l->stamp = stamp;
                l->cnt = 0;
                n->touched[n_touched++] = f->path[j];
            }
            l->cnt++;
            n_entries++;
        }
        unfrozen += (size_t)bounded;
        if (isfinite(f->cap)) /* its cap, as a level: reached at x = cap / w */
            n->heap[n->n_heap++] = (lvl){wt ? f->cap / f->w : f->cap, -(int32_t)k - 1};
    }
    /* 2. link -> flows adjacency (CSR) */
    if (grow((void **)&n->csr, &n->cap_csr, n_entries + 1, sizeof(uint32_t)))
        goto oom;
    size_t off = 0;
    for (size_t t = 0; t < n_touched; t++) {
        link *l = &n->links[n->touched[t]];
        l->off = (int)off;
        off += (size_t)l->cnt;
        l->nu = 0;
        l->R = l->cap;
        l->W = 0;
    }
    for (size_t k = 0; k < n->n_active; k++) {
        flow *f = F(n, n->active[k]);
        for (int j = 0; j < f->np; j++) {
            link *l = &n->links[f->path[j]];
            if (isfinite(l->cap)) {
                n->csr[l->off + l->nu++] = (uint32_t)k;
                if (wt)
                    l->W += f->w;
            }
        }
    }
    /* 3. candidates: every link's level with the caps, made a heap in
     * O(L + F) (heap_build) rather than pushed one by one */
    if (grow((void **)&n->heap, &n->cap_heap, n->n_heap + n_touched + 1, sizeof(lvl)))
        goto oom;
    for (size_t t = 0; t < n_touched; t++)
        n->heap[n->n_heap++] = (lvl){link_level(&n->links[n->touched[t]], wt), n->touched[t]};
    n->lrun_at = n->lrun_n = 0;
    if (!fill_run(n))
        heap_build(n);
    /* 4. fill, until every bounded flow is frozen: what is left in the heap
     * then is stale or a frozen flow's cap (F flows through one NIC left F
     * stale access-link entries to pop, half a reshare's cost) */
    while (fill_left(n) && unfrozen > 0) {
        lvl top = fill_pop(n);
        if (top.who < 0) {
            flow *f = F(n, n->active[-(top.who + 1)]);
            if (!f->frozen) {
                if (freeze(n, f, f->cap, 0)) /* its cap: top.level unweighted */
                    goto oom;
                unfrozen--;
            }
            continue;
        }
        link *l = &n->links[top.who];
        if (l->nu <= 0 || link_level(l, wt) != top.level)
            continue; /* stale */
        double level = top.level;
        for (int j = 0; j < l->cnt; j++) {
            flow *f = F(n, n->active[n->csr[l->off + j]]);
            if (!f->frozen) {
                if (freeze(n, f, wt ? level * f->w : level, 1))
                    goto oom;
                unfrozen--;
            }
        }
        if (push_deferred(n))
            goto oom;
    }
    /* peak utilisation: rates hold until the next reshare */
    for (size_t t = 0; t < n_touched; t++) {
        link *l = &n->links[n->touched[t]];
        if (l->cap > 0 && l->cap - l->R > l->peak * l->cap)
            l->peak = (l->cap - l->R) / l->cap;
    }
    /* 5. flows crossing no finite link and without a cap are unconstrained */
    schedule_finish(n);
    return;
oom:
    for (size_t i = 0; i < n->n_deferred; i++)
        n->links[n->deferred[i]].deferred = 0;
    n->n_deferred = 0;
    stall_all(n);
}

/* Out of memory where the shares or the ends of flows must be computed, or
 * a flow started: leave every flow stalled (rate 0, no completion pending)
 * for the rest of the run, which then ends with an out-of-memory error
 * (net_out_of_memory) rather than wrong numbers, or an instant whose flows
 * can never be taken off repeating for ever. */
static void stall_all(net *n)
{
    n->oom = 1;
    if (n->star)
        star_leave(n); /* the flows' remaining bytes as of now, out of the star sets */
    if (n->reshare_ev)
        sim_cancel(n->e, n->reshare_ev);
    n->reshare_ev = 0;
    for (size_t k = 0; k < n->n_active; k++)
        F(n, n->active[k])->rate = 0;
    if (n->done_ev)
        sim_cancel(n->e, n->done_ev);
    n->done_ev = 0;
    n->full = 1; /* the frozen flags are not a finished fill: never reuse them */
}

/* n->finished[0, nf) into start (seq) order.  Often already in order (the
 * star path ends ties in entry order); 10^6 flows ending at one instant (a
 * model sent to every device) are put in order by an LSD radix sort over
 * RADIX_BITS-bit digits of seq, O(nf) (qsort took 0.15 s).  seqs are
 * distinct, so any sort gives the same order. */
static int by_seq(const void *a, const void *b);

static void sort_finished(net *n, size_t nf)
{
    size_t k0 = 1;
    uint64_t top = nf ? n->finished[0].seq : 0;
    while (k0 < nf && n->finished[k0 - 1].seq < n->finished[k0].seq)
        k0++;
    if (k0 >= nf)
        return;
    if (nf < 4096 || grow((void **)&n->fin_tmp, &n->cap_fin_tmp, nf, sizeof(fin_ent))) {
        qsort(n->finished, nf, sizeof(fin_ent), by_seq);
        return;
    }
    for (size_t k = 1; k < nf; k++)
        top = n->finished[k].seq > top ? n->finished[k].seq : top;
    fin_ent *a = n->finished, *b = n->fin_tmp;
    size_t cnt[1u << RADIX_BITS]; /* on the stack: runs of a sweep share no net but may share a thread pool */
    for (int shift = 0; shift < 64 && (top >> shift) != 0; shift += RADIX_BITS) {
        memset(cnt, 0, sizeof cnt);
        for (size_t k = 0; k < nf; k++)
            cnt[(a[k].seq >> shift) & RADIX_MASK]++;
        size_t sum = 0;
        for (size_t v = 0; v < (1u << RADIX_BITS); v++) {
            size_t c = cnt[v];
            cnt[v] = sum;
            sum += c;
        }
        for (size_t k = 0; k < nf; k++)
            b[cnt[(a[k].seq >> shift) & RADIX_MASK]++] = a[k];
        fin_ent *t = a;
        a = b;
        b = t;
    }
    if (a != n->finished)
        memcpy(n->finished, a, nf * sizeof *a);
}

static int by_seq(const void *a, const void *b)
{
    const fin_ent *x = a, *y = b;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

static void on_done(sim_engine *e, void *ctx, uint64_t id)
{
    (void)id;
    net *n = ctx;
    n->done_ev = 0;
    if (n->star) {
        star_on_done(n);
        return;
    }
    advance(n);
    double now = sim_now(e);
    size_t nf = 0, kept = 0;
    /* room for every flow to end (kept between completions): a list that
     * could not grow would leave a finished flow active, ending "now" again
     * and again */
    if (grow((void **)&n->finished, &n->cap_finished, n->n_active, sizeof(fin_ent))) {
        stall_all(n);
        return;
    }
    /* Finished: predicted to end by now, or with nothing left (rounding).
     * The others keep their order (a stable compaction, not swap-remove:
     * when 10^6 flows end at one instant the survivors stay in the order
     * they were started, which is their order in memory, so the passes
     * that follow stream through them instead of jumping at random). */
    for (size_t k = 0; k < n->n_active; k++) {
        flow *f = F(n, n->active[k]);
        if (f->finish_t <= now || f->remaining <= 1e-9 * f->bytes) {
            n->finished[nf++] = (fin_ent){f->seq, f};
            for (int j = 0; j < f->np; j++) {
                link *l = &n->links[f->path[j]];
                l->bytes += f->bytes;
                link_busy_dec(n, l);
            }
            continue;
        }
        if (kept != k) {
            n->active[kept] = n->active[k];
            f->apos = (uint32_t)kept;
        }
        kept++;
    }
    n->n_active = kept;
    report_done(n, nf);
    net_reshare_now(n);
}

/* Distances ahead of the callback being run (report_done): the flow
 * record, then what its callback will touch (read through the flow). */
#define DPF_FLOW 16
#define DPF_CTX  8

/* The hint registered for f's callback, if any, on f's context. */
static void dpf_hint(const net *n, const flow *f)
{
    for (int j = 0; j < n->n_dpf; j++)
        if (n->dpf[j].done == f->done) {
            n->dpf[j].fn(n->dpf[j].pctx, f->ctx);
            break;
        }
}

static void done_prefetch(const net *n, size_t k, size_t nf)
{
    if (k + DPF_FLOW < nf)
        __builtin_prefetch(&n->finished[k + DPF_FLOW].f->done);
    if (k + DPF_CTX < nf)
        dpf_hint(n, n->finished[k + DPF_CTX].f);
}

/* Report the nf flows in n->finished, released: callbacks in start order,
 * so simultaneous completions are reported deterministically whatever the
 * active list's order. */
static void report_done(net *n, size_t nf)
{
    sort_finished(n, nf);
    /* 10^6 flows ending at one instant: their callbacks touch every
     * device's records once, a cache miss each, unless fetched ahead */
    int ahead = n->n_dpf > 0 && nf > DPF_FLOW;
    for (size_t k = 0; k < nf; k++) {
        if (ahead)
            done_prefetch(n, k, nf);
        flow *f = n->finished[k].f;
        net_done_fn cb = f->done;
        void *cctx = f->ctx;
        uint64_t fid = flow_id(f);
        DP_LOG(LOG_NET, LOG_DEBUG, sim_now(n->e), "flow %llu done (%.6g B)", (unsigned long long)fid,
               f->bytes);
        flow_release(n, f);
        if (cb)
            cb(cctx, fid);
    }
}
