/* net_share.c: how active flows share their links (net.h's sharing
 * strategies: max-min fairness, or weighted max-min with weight 1 / RTT),
 * by progressive filling, and when a reshare runs (every change at one
 * instant batched into one).
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
#include "net_impl.h"

static void reshare_light(net *n);

static void on_reshare(sim_engine *e, void *ctx, uint64_t id)
{
    (void)e;
    (void)id;
    net *n = ctx;
    if (n->g) { /* the current domain's deferred reshare */
        net_dom *d = &n->doms[eg_current(n->g)];
        d->reshare_ev = 0;
        if (n->full || d->full)
            net_reshare_now(n);
        else
            reshare_light(n);
        return;
    }
    n->reshare_ev = 0;
    if (n->full || n->star)
        net_reshare_now(n);
    else
        reshare_light(n);
}

/* Batch every change at this instant into one reshare, run as an event at
 * the current time. */
/* With clock domains: the current domain's reshare, at its now. */
static void dom_mark(net *n, int full)
{
    size_t c = eg_current(n->g);
    net_dom *d = dom_of(n, c);
    if (!d) {
        stall_all(n);
        return;
    }
    d->full |= full;
    if (!d->reshare_ev)
        d->reshare_ev = sim_at(eg_engine(n->g, c), eg_now_in(n->g, c), on_reshare, n);
}

void mark_dirty(net *n)
{
    n->full = 1;
    if (n->g)
        dom_mark(n, 1);
    else if (!n->reshare_ev)
        n->reshare_ev = sim_at(n->e, sim_now(n->e), on_reshare, n);
}

/* A change that alters no share: the capacity of a link no active flow
 * crosses (shares depend only on the links active flows cross).  A looping
 * WAN trace that no flow uses made every breakpoint re-run progressive
 * filling over every flow in the world, quadratic in devices (C-ADP on
 * geo-3sites with 20,000 devices).  The event and the bookkeeping of a
 * reshare are kept (reshare_light), so results, event counts and rounding
 * stay bit for bit those of a full reshare. */
void mark_touched(net *n)
{
    if (n->g)
        dom_mark(n, 0);
    else if (!n->reshare_ev)
        n->reshare_ev = sim_at(n->e, sim_now(n->e), on_reshare, n);
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

/* ---- progressive filling -------------------------------------------------- */

static inline int lvl_less(const lvl *a, const lvl *b)
{
    /* ties broken by `who` so the freezing order is deterministic */
    return a->level < b->level || (a->level == b->level && a->who < b->who);
}

/* The candidates' heap: sim/base/dp_heap.h's. */
DP_HEAP_DEFINE(lvh, lvl, lvl_less)

static int heap_push(net *n, double level, int32_t who)
{
    if (grow((void **)&n->heap, &n->cap_heap, n->n_heap + 1, sizeof(lvl)))
        return -1;
    lvh_up(n->heap, n->n_heap++, (lvl){level, who});
    return 0;
}

static lvl heap_pop(net *n)
{
    lvl top = n->heap[0], x = n->heap[--n->n_heap];
    if (n->n_heap)
        lvh_down(n->heap, n->n_heap, 0, x);
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
    lvh_build(n->heap, n->n_heap);
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
/* With clock domains, flow f's new rate from now in its frame; a flow of
 * another domain whose own reshare is pending at this instant gets it
 * there, in its own frame (net.h: so domains that share nothing never
 * convert). */
static void dom_rate(net *n, flow *f, double rate)
{
    net_dom *d = &n->doms[f->dom];
    if (f->dom != eg_current(n->g) && d->reshare_ev) {
        d->full = 1;
        return;
    }
    flow_rate_to(f, rate, eg_now_in(n->g, f->dom));
}

static int freeze(net *n, flow *f, double rate, int defer)
{
    int wt = n->sharing == NET_SHARE_RTT;
    f->frozen = 1;
    if (n->g)
        dom_rate(n, f, rate);
    else
        flow_rate_to(f, rate, sim_now(n->e));
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

/* Domain d's completion event at its first finish: always for the
 * current domain (as a lone run sets it again at every reshare), for
 * another only when its first finish moved. */
static void dom_arm(net *n, size_t d, size_t c)
{
    net_dom *x = &n->doms[d];
    if (d != c && x->first == x->done_t)
        return;
    sim_engine *e = eg_engine(n->g, d);
    if (x->done_ev)
        sim_cancel(e, x->done_ev);
    x->done_ev = isfinite(x->first) ? sim_at(e, x->first, on_done, n) : 0;
    x->done_t = x->done_ev ? x->first : INFINITY;
}

/* With clock domains: each domain's completion at its flows' earliest
 * finish (in its frame).  Two passes over the flows, each domain handled
 * once (stamps), the current one whether it has flows or not. */
static void dom_schedule_first(net *n)
{
    size_t c = eg_current(n->g);
    if (!dom_of(n, c)) {
        stall_all(n);
        return;
    }
    uint64_t st = ++n->dstamp;
    n->doms[c].stamp = st;
    n->doms[c].first = INFINITY;
    for (size_t k = 0; k < n->n_active; k++) {
        const flow *f = F(n, n->active[k]);
        net_dom *d = &n->doms[f->dom];
        if (d->stamp != st) {
            d->stamp = st;
            d->first = INFINITY;
        }
        if (f->finish_t < d->first)
            d->first = f->finish_t;
    }
    uint64_t done = ++n->dstamp;
    dom_arm(n, c, c);
    n->doms[c].stamp = done;
    for (size_t k = 0; k < n->n_active; k++) {
        const flow *f = F(n, n->active[k]);
        if (n->doms[f->dom].stamp == st) {
            dom_arm(n, f->dom, c);
            n->doms[f->dom].stamp = done;
        }
    }
}

/* The completion event at the earliest predicted finish. */
static void schedule_first(net *n)
{
    if (n->g) {
        dom_schedule_first(n);
        return;
    }
    double first = INFINITY;
    for (size_t k = 0; k < n->n_active; k++) {
        const flow *f = F(n, n->active[k]);
        if (f->finish_t < first)
            first = f->finish_t;
    }
    if (n->done_ev)
        sim_cancel(n->e, n->done_ev);
    n->done_ev = isfinite(first) ? sim_at(n->e, first, on_done, n) : 0;
}

/* Step 5 of a reshare: rates are set (a flow whose rate moved has its
 * finish predicted anew, flow_rate_to); schedule the earliest finish. */
static void schedule_finish(net *n)
{
    double now = sim_now(n->e);
    for (size_t k = 0; k < n->n_active; k++) {
        flow *f = F(n, n->active[k]);
        if (f->frozen) /* else crossing no finite link and without a cap: unconstrained */
            continue;
        if (n->g)
            dom_rate(n, f, INFINITY);
        else
            flow_rate_to(f, INFINITY, now);
    }
    schedule_first(n);
}

/* A reshare whose inputs are unchanged: progressive filling would give
 * every flow the rate it has, and with lazy progress (net_impl.h) an
 * unchanged rate changes nothing of a flow, so only the completion event
 * is set again, exactly as a full reshare does it.  (With tens of
 * thousands of flows this runs at every breakpoint of an idle link's
 * trace.) */
static void reshare_light(net *n)
{
    n->reshares++;
    schedule_first(n);
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
    if (n->g) { /* the current domain's pending reshare is this one */
        net_dom *d = dom_of(n, eg_current(n->g));
        if (!d)
            goto oom;
        if (d->reshare_ev)
            sim_cancel(eg_engine(n->g, eg_current(n->g)), d->reshare_ev);
        d->reshare_ev = 0;
        d->full = 0;
    }
    n->full = 0;
    n->reshares++;
    n->fills++;
    unsigned stamp = ++n->stamp;
    size_t n_touched = 0, n_entries = 0, unfrozen = 0;
    int wt = n->sharing == NET_SHARE_RTT; /* weighted: levels per unit weight (link_level) */

    /* 1. in one pass over the flows (a reshare is bound by memory traffic:
     * F flows through one NIC): count the flows on every finite link (a
     * flow's rate stays as it is until the fill gives it one: freeze and
     * flow_rate_to compare), note the flows to freeze (those
     * crossing a finite link or with a cap of their own; the rest are
     * unconstrained, step 5) and put every cap among the candidates */
    if (grow((void **)&n->heap, &n->cap_heap, n->n_active + 1, sizeof(lvl)))
        goto oom;
    n->n_heap = 0;
    for (size_t k = 0; k < n->n_active; k++) {
        flow *f = F(n, n->active[k]);
        f->frozen = 0;
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
void stall_all(net *n)
{
    n->oom = 1;
    if (n->star)
        star_leave(n); /* the flows' remaining bytes as of now, out of the star sets */
    if (n->reshare_ev)
        sim_cancel(n->e, n->reshare_ev);
    n->reshare_ev = 0;
    double now = sim_now(n->e);
    for (size_t k = 0; k < n->n_active; k++) {
        flow *f = F(n, n->active[k]);
        flow_rate_to(f, 0, n->g ? flow_now(n, f) : now);
    }
    for (size_t d = 0; n->g && d < n->cap_doms && d < eg_count(n->g); d++) {
        net_dom *x = &n->doms[d];
        if (x->reshare_ev)
            sim_cancel(eg_engine(n->g, d), x->reshare_ev);
        if (x->done_ev)
            sim_cancel(eg_engine(n->g, d), x->done_ev);
        x->reshare_ev = x->done_ev = 0;
        x->done_t = INFINITY;
    }
    if (n->done_ev)
        sim_cancel(n->e, n->done_ev);
    n->done_ev = 0;
    n->full = 1; /* the frozen flags are not a finished fill: never reuse them */
}
