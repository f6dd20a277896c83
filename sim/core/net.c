/* net.c: links, their capacities and statistics (net.h; the state is in
 * net_impl.h, flows in net_flow.c, their shares in net_share.c and
 * net_star.c). */
#include "net_impl.h"
#include <stdio.h>

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
        dp_free(n->own[i].name);
        trace_free(n->own[i].tr);
        dp_free(n->own[i].tctx);
    }
    dp_free(n->own);
    dp_free(n->aside_st);
    for (size_t c = 0; c < n->n_chunks; c++)
        dp_free(n->chunks[c]);
    dp_free(n->chunks);
    dp_free(n->links);
    dp_free(n->cold);
    dp_free(n->ldom);
    dp_free(n->active);
    dp_free(n->touched);
    dp_free(n->csr);
    dp_free(n->heap);
    dp_free(n->lrun);
    dp_free(n->deferred);
    dp_free(n->finished);
    dp_free(n->fin_tmp);
    dp_free(n->adelta);
    dp_free(n->fst);
    dp_free(n->doms);
    star_free(n);
    dp_free(n);
}

/* A change to a held link's shares is about to happen: its holder takes
 * its flows back first (and releases the link). */
void unhold(net *n, int link_i)
{
    link *l = &n->links[link_i];
    if (l->hold) {
        net_hold_fn fn = l->hold;
        l->hold = NULL;
        trace_resume(n, link_i); /* its trace's changes due meanwhile, before the holder's flows */
        /* the holder acts in its own domain (the one that held the link) */
        size_t prev = n->g ? eg_enter(n->g, link_dom(n, (size_t)link_i)) : 0;
        fn(n->cold[link_i].hold_ctx);
        if (n->g)
            eg_leave(n->g, prev);
    }
}

/* ---- clock domains ---------------------------------------------------------- */

int net_set_group(net *n, eg_group *g)
{
    /* every link's domain from now on, 0 (the root) until another touches it */
    if (g && !n->ldom && n->n_links) {
        if (grow((void **)&n->ldom, &n->cap_ldom, n->n_links, sizeof *n->ldom))
            return DP_ENOMEM;
        memset(n->ldom, 0, n->n_links * sizeof *n->ldom);
    }
    n->g = g;
    n->star_off = 1; /* its sets keep one clock: progressive filling only */
    return 0;
}

net_dom *dom_of(net *n, size_t d)
{
    if (d >= n->cap_doms) {
        size_t old = n->cap_doms;
        if (grow((void **)&n->doms, &n->cap_doms, d + 1, sizeof *n->doms))
            return NULL;
        memset(n->doms + old, 0, (n->cap_doms - old) * sizeof *n->doms);
        for (size_t k = old; k < n->cap_doms; k++)
            n->doms[k].done_t = n->doms[k].first = INFINITY;
    }
    return &n->doms[d];
}

double link_now(net *n, link *l)
{
    size_t c = eg_current(n->g), i = (size_t)(l - n->links);
    if (link_dom(n, i) != c) {
        if (l->n_active) /* busy since a time in the other domain's frame */
            l->busy_since = (eg_origin(n->g, link_dom(n, i)) + l->busy_since) - eg_origin(n->g, c);
        n->ldom[i] = (uint32_t)c;
    }
    return eg_now_in(n->g, c);
}

/* A link's statistics are touched by the current domain (no busy time is
 * open: nothing to convert, the domain just owns the link's figures). */
static void link_touch(net *n, link *l)
{
    if (n->g && !l->n_active)
        n->ldom[l - n->links] = (uint32_t)eg_current(n->g);
}

size_t net_dom_flows(const net *n)
{
    if (!n->g)
        return n->n_active + n->n_pending;
    size_t c = eg_current(n->g);
    return c < n->cap_doms ? n->doms[c].n_flows : 0;
}

void net_dom_retired(net *n, size_t d)
{
    if (!n->g || d >= n->cap_doms)
        return;
    net_dom *x = &n->doms[d];
    int pending = x->reshare_ev != 0;
    x->reshare_ev = x->done_ev = 0; /* its engine runs nothing more */
    x->done_t = INFINITY;
    if (pending)
        mark_dirty(n);
}

void net_dom_rebased(net *n, double span)
{
    if (!n->g)
        return;
    size_t c = eg_current(n->g);
    for (size_t i = 0; i < n->n_links; i++) {
        link *l = &n->links[i];
        if (link_dom(n, i) == c && l->n_active)
            l->busy_since -= span;
    }
    if (c < n->cap_doms)
        n->doms[c].done_t = INFINITY;
}

/* ---- links ---------------------------------------------------------------- */

static const trace *link_trace(const net *n, int l)
{
    return (size_t)l < n->owning ? n->own[l].tr : NULL;
}

/* Link l's aside sums (zeros before net_link_account_aside's first call). */
static const link_aside *link_aside_of(const net *n, int l)
{
    static const link_aside none;
    return (size_t)l < n->n_aside ? &n->aside_st[l] : &none;
}

/* n->aside_st covers every link (zeroed where new): from
 * net_link_account_aside's first call on, net_link_add keeps it so
 * (n_aside is 0 or n_links).  0 or DP_ENOMEM. */
/* Room in n->cold (and with clock domains n->ldom) for the next link
 * (n->links[n->n_links]): 0 or DP_ENOMEM. */
static int cold_room(net *n)
{
    if (grow((void **)&n->cold, &n->cap_cold, n->n_links + 1, sizeof *n->cold))
        return DP_ENOMEM;
    if (n->g && grow((void **)&n->ldom, &n->cap_ldom, n->n_links + 1, sizeof *n->ldom))
        return DP_ENOMEM;
    return 0;
}

static int aside_room(net *n)
{
    if (n->n_aside == n->n_links)
        return 0;
    if (grow((void **)&n->aside_st, &n->cap_aside, n->n_links, sizeof *n->aside_st))
        return DP_ENOMEM;
    memset(n->aside_st + n->n_aside, 0, (n->n_links - n->n_aside) * sizeof *n->aside_st);
    n->n_aside = n->n_links;
    return 0;
}

/* A flow leaves its links, having delivered `bytes` (the star path's end of
 * a flow; the general path does the same inline). */
void flow_links_end(net *n, flow *f, double bytes)
{
    for (int j = 0; j < f->np; j++) {
        link *l = &n->links[f->path[j]];
        l->bytes += bytes;
        link_busy_dec(n, l);
    }
}

static void on_trace_change(sim_engine *e, void *ctx, uint64_t id);

/* Link li's capacity now follows its trace's value v (a change, or those
 * due while its trace was suspended). */
static void trace_set_cap(net *n, int li, double v)
{
    link *l = &n->links[li];
    n->cold[li].nominal = v;
    star_cap_change(n, li, link_down(n, (size_t)li) ? 0 : link_nominal(n, (size_t)li));
    l->cap = link_down(n, (size_t)li) ? 0 : link_nominal(n, (size_t)li);
    n->cap_changes++;
    if (l->n_active > 0)
        mark_dirty(n);
    else
        mark_touched(n);
}

/* tc's next change at `next` (INFINITY: none).  A failed sim_at is
 * recorded by the engine (sim_error), which ends the run: the link must
 * not silently keep this capacity forever.  0, or DP_ENOMEM. */
static int trace_schedule(net *n, trace_ctx *tc, double next)
{
    tc->ev = 0;
    tc->next_t = next;
    if (!isfinite(next))
        return 0;
    if (!(tc->ev = sim_at(n->e, next, on_trace_change, tc)))
        return DP_ENOMEM;
    n->trace_events++;
    return 0;
}

static void on_trace_change(sim_engine *e, void *ctx, uint64_t id)
{
    (void)id;
    trace_ctx *tc = ctx;
    net *n = tc->n;
    n->trace_events--;
    tc->ev = 0;
    unhold(n, tc->link);
    double t = sim_now(e), v;
    const trace *tr = n->own[tc->link].tr;
    trace_set_cap(n, tc->link, trace_value_at(tr, t));
    trace_schedule(n, tc, trace_next_change(tr, t, &v));
}

static trace_ctx *trace_ctx_of(const net *n, int li)
{
    return li >= 0 && (size_t)li < n->owning ? n->own[li].tctx : NULL;
}

/* A held link's trace stops firing: its pending change is cancelled, its
 * time kept (the holder integrates the schedule itself, net_link_trace). */
void trace_suspend(net *n, int li)
{
    trace_ctx *tc = trace_ctx_of(n, li);
    if (!tc || tc->suspended)
        return;
    if (tc->ev && sim_cancel(n->e, tc->ev))
        n->trace_events--;
    tc->ev = 0;
    tc->suspended = 1;
}

/* ... and goes on where its schedule is now: the changes due by now, the
 * same chain of times on_trace_change would have walked, set the
 * capacity the last of them gives, and the next is scheduled. */
void trace_resume(net *n, int li)
{
    trace_ctx *tc = trace_ctx_of(n, li);
    if (!tc || !tc->suspended)
        return;
    tc->suspended = 0;
    const trace *tr = n->own[li].tr;
    double now = sim_now(n->e), t = tc->next_t, last = NAN, v;
    while (t <= now) {
        last = t;
        t = trace_next_change(tr, t, &v);
    }
    if (!isnan(last))
        trace_set_cap(n, li, trace_value_at(tr, last));
    trace_schedule(n, tc, t);
}

int net_link_add(net *n, double cap_Bps, const trace *tr, const char *name)
{
    if (isnan(cap_Bps) || cap_Bps < 0)
        return DP_EINPUT;
    if (n->n_links >= INT32_MAX || grow((void **)&n->links, &n->cap_links, n->n_links + 1, sizeof(link)) ||
        cold_room(n))
        return DP_ENOMEM;
    link *l = &n->links[n->n_links];
    link_cold *k = &n->cold[n->n_links];
    memset(l, 0, sizeof *l);
    memset(k, 0, sizeof *k);
    if (n->g)
        n->ldom[n->n_links] = 0;
    l->cap = k->nominal = cap_Bps;
    n->cap_changes++;
    int idx = (int)n->n_links++;
    if (n->n_aside && aside_room(n))
        return DP_ENOMEM;
    if (!name && !tr)
        return idx;
    if (grow((void **)&n->own, &n->cap_own, n->n_links, sizeof *n->own))
        return DP_ENOMEM;
    memset(n->own + n->owning, 0, (n->n_links - n->owning) * sizeof *n->own);
    n->owning = n->n_links;
    link_own *o = &n->own[idx];
    if (name && !(o->name = dp_strdup(name)))
        return DP_ENOMEM;
    if (tr) {
        o->tr = trace_copy(tr);
        o->tctx = dp_calloc(1, sizeof *o->tctx);
        if (!o->tr || !o->tctx)
            return DP_ENOMEM;
        o->tctx->n = n;
        o->tctx->link = idx;
        double t = sim_now(n->e), v;
        l->cap = n->cold[idx].nominal = trace_value_at(o->tr, t);
        if (trace_schedule(n, o->tctx, trace_next_change(o->tr, t, &v)))
            return DP_ENOMEM;
    }
    return idx;
}

int net_link_set_capacity(net *n, int link_i, double cap_Bps)
{
    if (link_i < 0 || (size_t)link_i >= n->n_links || isnan(cap_Bps) || cap_Bps < 0)
        return DP_EINPUT;
    unhold(n, link_i);
    star_cap_change(n, link_i, link_down(n, (size_t)link_i) ? 0 : cap_Bps);
    n->cold[link_i].nominal = cap_Bps;
    n->links[link_i].cap = link_down(n, (size_t)link_i) ? 0 : cap_Bps;
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
    star_cap_change(n, link_i, down ? 0 : link_nominal(n, (size_t)link_i));
    l->down = down != 0;
    l->cap = link_down(n, (size_t)link_i) ? 0 : link_nominal(n, (size_t)link_i);
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
    if ((size_t)l < n->owning && n->own[l].name)
        return n->own[l].name;
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
size_t net_trace_events(const net *n)
{
    return n->trace_events;
}

int net_reshare_pending(const net *n)
{
    return !n->g && n->reshare_ev != 0;
}

/* Link l carries nothing now and never will, as far as the net knows (an
 * outage's end or a capacity set from outside are the caller's events). */
static int dead_for_good(const net *n, int l)
{
    const link *k = &n->links[l];
    const trace *tr = link_trace(n, l);
    return k->cap == 0 && !link_down(n, (size_t)l) && !k->hold &&
           (tr ? trace_max_after(tr, n->g ? eg_now(n->g) : sim_now(n->e)) <= 0
               : link_nominal(n, (size_t)l) == 0);
}

int net_stuck_for_good(const net *n, char *buf, size_t cap)
{
    if (n->n_active == 0 || n->n_pending > 0)
        return 0;
    int named = 0;
    for (size_t i = 0; i < n->n_active; i++) {
        const flow *f = F(n, n->active[i]);
        int dead = -1;
        for (int j = 0; j < f->np && dead < 0; j++)
            if (dead_for_good(n, f->path[j]))
                dead = f->path[j];
        if (dead < 0)
            return 0;
        if (!named && buf && cap) {
            snprintf(buf, cap, "%s", net_link_name(n, dead));
            named = 1;
        }
    }
    return 1;
}

int net_link_has_trace(const net *n, int l)
{
    return link_trace(n, l) != NULL;
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
    double open = 0;
    if (k->n_active && !n->g) {
        open = sim_now(n->e) - k->busy_since;
    } else if (k->n_active) { /* in the current domain's frame */
        size_t c = eg_current(n->g);
        size_t kd = link_dom(n, (size_t)l);
        double since = kd == c ? k->busy_since : (eg_origin(n->g, kd) + k->busy_since) - eg_origin(n->g, c);
        open = eg_now_in(n->g, c) - since;
    }
    double run = k->busy_s + open;
    return n->folded ? k->busy_tot + run : run;
}

/* With clock domains, only the links whose figures the current domain
 * owns (it touched them last) and that carry nothing are folded: the
 * links of a job that shares nothing fold exactly as in its single run,
 * whatever the other jobs do; delta is 0 for the others. */
static int fold_skips(const net *n, const link *l)
{
    return n->g && (link_dom(n, (size_t)(l - n->links)) != eg_current(n->g) || l->n_active);
}

int net_fold(net *n, double *delta)
{
    for (size_t i = 0; i < n->n_links && !n->g; i++)
        if (n->links[i].n_active)
            return DP_EINPUT;
    /* out of memory: the aside part is folded but not repeated (statistics only) */
    n->adelta_ok = n->aside && !grow((void **)&n->adelta, &n->cap_adelta, 2 * n->n_links, sizeof(double));
    n->folded = 1;
    for (size_t i = 0; n->aside && i < n->n_links; i++) {
        link *l = &n->links[i];
        if (fold_skips(n, l)) {
            if (n->adelta_ok)
                n->adelta[2 * i] = n->adelta[2 * i + 1] = 0;
            continue;
        }
        link_aside *a = &n->aside_st[i];
        if (n->adelta_ok) {
            n->adelta[2 * i] = a->bytes;
            n->adelta[2 * i + 1] = a->busy;
        }
        a->bytes_tot += a->bytes;
        a->busy_tot += a->busy;
        a->bytes = a->busy = 0;
    }
    for (size_t i = 0; i < n->n_links; i++) {
        link *l = &n->links[i];
        if (fold_skips(n, l)) {
            if (delta)
                delta[2 * i] = delta[2 * i + 1] = 0;
            continue;
        }
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
        n->aside_st[i].bytes_tot += n->adelta[2 * i];
        n->aside_st[i].busy_tot += n->adelta[2 * i + 1];
    }
}

int net_link_account_aside(net *n, int link_i, double bytes, double busy_s, double util)
{
    if (link_i < 0 || (size_t)link_i >= n->n_links)
        return 0;
    if (aside_room(n))
        return DP_ENOMEM;
    link *l = &n->links[link_i];
    link_touch(n, l);
    link_aside *a = &n->aside_st[link_i];
    n->aside = 1;
    a->bytes += bytes;
    a->busy += busy_s;
    if (util > l->peak)
        l->peak = util > 1 ? 1 : util;
    return 0;
}

double net_link_stat_bytes(const net *n, int l)
{
    const link_aside *a = link_aside_of(n, l);
    return net_link_bytes(n, l) + (n->aside ? a->bytes_tot + a->bytes : 0);
}

double net_link_stat_busy_s(const net *n, int l)
{
    const link_aside *a = link_aside_of(n, l);
    return net_link_busy_s(n, l) + (n->aside ? a->busy_tot + a->busy : 0);
}

int net_link_hold(net *n, int link_i, net_hold_fn hook, void *ctx)
{
    if (link_i < 0 || (size_t)link_i >= n->n_links || !hook)
        return DP_EINPUT;
    link *l = &n->links[link_i];
    /* a trace is suspended while held: in one engine's time only */
    if (l->hold || l->n_active || (n->g && link_trace(n, link_i)) || !(l->cap > 0) || !isfinite(l->cap))
        return DP_EINPUT;
    link_touch(n, l); /* its hook runs in this domain (unhold) */
    l->hold = hook;
    n->cold[link_i].hold_ctx = ctx;
    trace_suspend(n, link_i);
    return 0;
}

void net_link_release(net *n, int link_i)
{
    if (link_i >= 0 && (size_t)link_i < n->n_links && n->links[link_i].hold) {
        n->links[link_i].hold = NULL;
        trace_resume(n, link_i);
    }
}

const trace *net_link_trace(const net *n, int link_i, double *next_change)
{
    const trace *tr = link_i >= 0 && (size_t)link_i < n->n_links ? link_trace(n, link_i) : NULL;
    if (next_change)
        *next_change = tr ? n->own[link_i].tctx->next_t : INFINITY;
    return tr;
}

static int same_d(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

int net_link_same(const net *n, int a, int b)
{
    if (a < 0 || b < 0 || (size_t)a >= n->n_links || (size_t)b >= n->n_links)
        return 0;
    const link *x = &n->links[a], *y = &n->links[b];
    const link_aside *xa = link_aside_of(n, a), *ya = link_aside_of(n, b);
    int same = same_d(x->cap, y->cap) && same_d(link_nominal(n, (size_t)a), link_nominal(n, (size_t)b)) &&
               link_down(n, (size_t)a) == link_down(n, (size_t)b) && !x->n_active && !y->n_active &&
               !link_trace(n, a) && !link_trace(n, b) && same_d(x->bytes, y->bytes) &&
               same_d(x->busy_s, y->busy_s) && same_d(x->peak, y->peak) &&
               same_d(x->bytes_tot, y->bytes_tot) && same_d(x->busy_tot, y->busy_tot) &&
               same_d(xa->bytes, ya->bytes) && same_d(xa->busy, ya->busy) &&
               same_d(xa->bytes_tot, ya->bytes_tot) && same_d(xa->busy_tot, ya->busy_tot);
    if (same && n->adelta_ok)
        same = same_d(n->adelta[2 * (size_t)a], n->adelta[2 * (size_t)b]) &&
               same_d(n->adelta[2 * (size_t)a + 1], n->adelta[2 * (size_t)b + 1]);
    return same;
}

void net_link_copy_stats(net *n, int from, int to)
{
    if (from < 0 || to < 0 || (size_t)from >= n->n_links || (size_t)to >= n->n_links || from == to)
        return;
    const link *x = &n->links[from];
    link *y = &n->links[to];
    link_touch(n, y);
    y->bytes = x->bytes;
    y->busy_s = x->busy_s;
    y->peak = x->peak;
    y->bytes_tot = x->bytes_tot;
    y->busy_tot = x->busy_tot;
    if (n->n_aside) /* every link's, then */
        n->aside_st[to] = n->aside_st[from];
    if (n->adelta_ok) {
        n->adelta[2 * (size_t)to] = n->adelta[2 * (size_t)from];
        n->adelta[2 * (size_t)to + 1] = n->adelta[2 * (size_t)from + 1];
    }
}

/* What a holder's flows carried on link_i (net_link_account*): its
 * bytes and busy time; NULL for a link that does not exist. */
static link *account_add(net *n, int link_i, double bytes, double busy_s)
{
    if (link_i < 0 || (size_t)link_i >= n->n_links)
        return NULL;
    link *l = &n->links[link_i];
    link_touch(n, l);
    l->bytes += bytes;
    l->busy_s += busy_s;
    return l;
}

void net_link_account_util(net *n, int link_i, double bytes, double busy_s, double util)
{
    link *l = account_add(n, link_i, bytes, busy_s);
    if (l && util > l->peak)
        l->peak = util > 1 ? 1 : util;
}

void net_link_account(net *n, int link_i, double bytes, double busy_s, double rate)
{
    link *l = account_add(n, link_i, bytes, busy_s);
    if (!l)
        return;
    /* as a reshare computes it for a lone flow of this rate */
    double R = l->cap - rate;
    if (R < 0)
        R = 0;
    if (l->cap > 0 && l->cap - R > l->peak * l->cap)
        l->peak = (l->cap - R) / l->cap;
}
