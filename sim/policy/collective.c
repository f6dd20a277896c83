/* collective.c: ring collectives over all devices or a subset of them
 * (docs/MODEL.md section 4).
 *
 * Ring order is member order (scenario order for all devices): member i
 * sends to member i+1, the last to the first.  A round starts N flows of
 * bytes/N at once and ends when the last of them ends, so a slow or shared
 * link holds the whole ring back, as in NCCL's ring.  The analytic mode
 * gives the same time without flows: each round lasts max over ring edges
 * of (path latency + (bytes/N) / rate), the rate being the minimum over the
 * edge's links of capacity / ring flows crossing that link (a WAN link
 * crossed by several edges when sites alternate in the ring), taken at the
 * collective's start.  Under max-min fairness that is exact when flows
 * sharing a link have equal latencies (always when none is shared); when
 * they do not, the run is flagged analytic.approximate (note_approximate).
 * It cannot see other traffic or capacity changes during the collective
 * (flagged too), except outages, which the scenario lists in advance: a
 * collective with a ring link down at its start or an outage within its
 * analytic span runs as flows instead, which is exact.  Its rings' bytes,
 * busy time and peak share go to the per-link statistics aside from the
 * flows' (net_link_account_aside), as the flows would have put them when
 * flows sharing a link have equal latencies.
 */
#include "runtime_impl.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the analytic mode keeps beside the runtime's ring cache (rt->cc,
 * freed by coll_free_all): the full ring's edge offsets into
 * rt->ring_links and, per entry, the ring edges crossing that link (at the
 * last ring_fill); whether two edges of different latencies share a link;
 * a per-link scratch of latencies (NAN between uses). */
typedef struct coll_cache {
    size_t *ring_off;  /* edge i's links: rt->ring_links[ring_off[i], ring_off[i + 1]) */
    double *ring_plat; /* edge i's path latency (world_path's) */
    int routes_ok;     /* ring_routes made them */
    /* link classes (below): 0 not tried, 1 on (the full ring held for
     * good), -1 off for the run; the collective in closed form on it */
    int lk;
    struct coll *lk_c;
    unsigned *ring_k;
    int ring_unequal; /* -1: none; else a shared link whose edges' latencies differ */
    double *lk_lat;   /* per network link */
    size_t lk_cap;
    /* the full ring's slowest edge time (lat + chunk / rate) for the last
     * chunk sizes, valid while the ring cache's capacities are w_caps:
     * DDP's buckets have two sizes, and an O(devices) pass per bucket was
     * most of a 10^6-device run once devices moved as classes */
#define WORST_CACHED 4
    double w_chunk[WORST_CACHED], w_worst[WORST_CACHED];
    int w_n, w_next;
    uint64_t w_caps;
} coll_cache;

typedef struct coll {
    prt *rt;
    double chunk;
    int rounds, round, pending;
    prt_fn fn;
    void *ctx;
    size_t m;                 /* members */
    size_t *members;          /* NULL: every device, in scenario order */
    int broken;               /* a member went down: it never ends (until prt_abort) */
    struct coll *prev, *next; /* rt->colls: every collective in flight */
    int dropped;              /* broken and given up by its policy (coll_drop_broken) */
    struct closed *cf;        /* the rounds left run in closed form (below), or NULL */
    struct pipe *pp;          /* pipelined progress as flows (below) */
    int pipelined;            /* rt->coll_pipelined when it started */
} coll;

static void lk_off(prt *rt);

/* ---- pipelined progress (collective_progress: pipelined) ---------------
 * Without the barrier, each rank goes on as MPI's ring all-reduce does
 * with a send-receive per step: member i sends its round r + 1 chunk to
 * i + 1 once its own round-r send has ended and its round-r chunk from
 * i - 1 has arrived.  Sends of edge i end at
 *     e(i, r) = max(e(i, r - 1), e(i - 1, r - 1)) + d(i, r),
 * e(i, -1) = the start; the collective ends at max_i e(i, R - 1).  As flows,
 * d is what the network gives each flow.  When each edge takes the same
 * d_i in every round (flows alone on their links: the closed form's
 * worlds; the analytic mode's d_i = lat_i + chunk / rate_i), the end is
 * the barrier's, R max_i d_i: every e(i, r) <= (r + 1) max d (induction),
 * and the slowest edge j alone reaches it (e(j, r) >= e(j, r - 1) + d_j).
 * So the analytic mode's time is the barrier's, and only sharing (a flow
 * slowed by another that has not yet started, or has ended, in the
 * pipelined order) tells the two apart; as flows the rounds then run
 * without a closed form (pipe_start). */
typedef struct pedge {
    struct coll *c;
    size_t i;
} pedge;

typedef struct pipe {
    int *started; /* per edge: the round of its current (or last) send */
    int *done;    /* per edge: the last round whose send ended (-1: none) */
    pedge *pe;    /* per edge: its flows' callback context */
    size_t left;  /* edges with rounds still to end */
} pipe;

/* ---- rounds in closed form ---------------------------------------------
 * When every finite link on the ring's paths is crossed by one ring edge
 * only, carries no other flow and devices cannot fail, each flow runs
 * alone at its bottleneck rate (the minimum capacity on its path, and its
 * TCP window cap; piecewise constant over a traced link, below) from the
 * end of its latency until its last byte: flow i of a round starting at t
 * ends at (t + lat_i) + bytes/rate_i,
 * the round ends at the latest of these, and nothing else can happen on
 * those links.  The collective then holds the links (net_link_hold) and
 * runs its remaining rounds as one event at the end of the last, adding
 * what its flows carried to the links' statistics.  If anything would
 * touch a held link before then (another flow, a capacity change), the
 * net calls closed_takeback first, which starts the current round's
 * unfinished flows as real flows with the bytes they still had, and the
 * collective goes on with flows.  The result equals the per-flow
 * simulation's up to rounding (docs/MODEL.md section 2: each flow's rate
 * is the same; only the order of floating-point operations differs, and
 * the per-flow net ends a flow whose remaining bytes fall below 1e-9 of its
 * size at the next event, which this does not).
 *
 * A link that follows a trace can be held too: the net suspends its trace
 * while held (net_link_hold) and the closed form reads the schedule
 * itself (net_link_trace).  An edge crossing such a link (a traced edge)
 * has a piecewise-constant rate: its flow of each round is run as the net
 * runs a lone flow, change by change of its traced links' capacities
 * (cte_run: the same times, values and arithmetic, so the same bits), and
 * a round ends at the latest of the untraced candidates' ends and the
 * traced edges' ends.  Its links get the bytes, the busy time (each
 * round's end minus activation) and the highest share of their capacity
 * in use (net_link_account_util).  On release the net applies the changes
 * due meanwhile, so what comes after sees the capacity it would have. */
#define CLOSED_CANDS 8
/* A traced edge's flow crossing more changes than this in one round: the
 * rounds go to flows (a trace of very fine steps). */
#define CTE_MAX_CHANGES 100000

/* A held traced link's schedule as at the hold, and a cursor on it. */
typedef struct ctlink {
    const trace *tr;
    double cap0, next0; /* its capacity at the hold, when its next change was due */
    double ct, cv, cn;  /* cursor: the last change read (-INFINITY: none), its value, the next */
} ctlink;

/* A traced edge: its finite links in path order (capacity if untraced,
 * else its ctlink), and what settling accumulates over rounds. */
typedef struct ctedge {
    size_t i;
    int nl;
    int link[NET_MAX_PATH];
    int tl[NET_MAX_PATH]; /* index into closed.tl, or -1 */
    double cap[NET_MAX_PATH];
    double lat, wcap;          /* path latency, TCP window cap */
    double busy;               /* accumulated: seconds its flows were active */
    double util[NET_MAX_PATH]; /* accumulated: the highest rate / capacity per link */
} ctedge;

typedef struct closed {
    int round0;   /* the first round run in closed form */
    double t0;    /* when it started */
    double *lat;  /* per edge: path latency */
    double *x;    /* per edge: transfer seconds of one chunk (chunk / rate) */
    double *rate; /* per edge: its flow's rate */
    /* the edges that can end a round (distinct (lat, x) within rounding of
     * the slowest): a round's end is the latest of their ends, computed as
     * the per-flow net computes a lone flow's end */
    double cand_lat[CLOSED_CANDS], cand_x[CLOSED_CANDS];
    int n_cand;
    uint64_t ev; /* the engine event at the end of the last round */
    int lk;      /* on the ring held for good: no per-edge arrays (link classes) */
    /* traced edges (above); te_of per edge: its index in te, or -1 */
    ctlink *tl;
    size_t n_tl, cap_tl;
    ctedge *te;
    size_t n_te, cap_te;
    int *te_of;
} closed;

/* Off: every round as flows (tests compare both; DPSIM_COLL_PER_FLOW=1
 * sets it for a whole process). */
static int per_flow_only = -1;

void coll_set_per_flow(int on)
{
    per_flow_only = on != 0;
}

static int closed_allowed(void)
{
    if (per_flow_only < 0)
        per_flow_only = dp_env_flag("DPSIM_COLL_PER_FLOW");
    return !per_flow_only;
}

static size_t member(const coll *c, size_t i)
{
    return c->members ? c->members[i] : i;
}

static int rounds_of(coll_kind k, size_t n)
{
    if (n < 2)
        return 0;
    return k == COLL_ALLREDUCE ? 2 * (int)(n - 1) : (int)(n - 1);
}

/* The members whose records a collective changes one by one: with
 * symmetry on (runtime_sym.c), the full ring's representatives and devices
 * alone stand for their classes; a subset ring knows no classes, so
 * symmetry ends first. */
static const size_t *acts_members(prt *rt, const coll *c, size_t *m)
{
    if (rt->sym_rep && c->members)
        sym_end(rt);
    const size_t *reps = prt_sym_reps(rt, m);
    if (!reps)
        *m = c->m;
    return reps ? reps : c->members;
}

/* A member idle while its collective runs shows as sending (its links are
 * in the ring); coll_dev counts the collectives each device is in. */
static void coll_begin_acts(prt *rt, const coll *c)
{
    rt->coll_active++;
    size_t m;
    const size_t *mem = acts_members(rt, c, &m);
    for (size_t i = 0; i < m; i++) {
        size_t d = mem ? mem[i] : i;
        if (rt->coll_dev[d]++ == 0 && rt->act[d] == RES_ACT_WAIT)
            prt_set_act(rt, d, RES_ACT_SEND);
    }
}

static void coll_end_acts(prt *rt, const coll *c)
{
    rt->coll_active--;
    size_t m;
    const size_t *mem = acts_members(rt, c, &m);
    for (size_t i = 0; i < m; i++) {
        size_t d = mem ? mem[i] : i;
        if (--rt->coll_dev[d] == 0 && rt->act[d] == RES_ACT_SEND)
            prt_set_act(rt, d, RES_ACT_WAIT);
    }
}

static void closed_drop(coll *c);

static void pipe_free(coll *c)
{
    if (c->pp) {
        dp_free(c->pp->started);
        dp_free(c->pp->done);
        dp_free(c->pp->pe);
        dp_free(c->pp);
        c->pp = NULL;
    }
}

static void coll_free(coll *c)
{
    if (c) {
        prt *rt = c->rt;
        closed_drop(c);
        pipe_free(c);
        if (c->prev)
            c->prev->next = c->next;
        else if (rt->colls == c)
            rt->colls = c->next;
        if (c->next)
            c->next->prev = c->prev;
        dp_free(c->members);
    }
    dp_free(c);
}

static void coll_link(prt *rt, coll *c)
{
    c->prev = NULL;
    c->next = rt->colls;
    if (c->next)
        c->next->prev = c;
    rt->colls = c;
}

void coll_device_down(prt *rt, size_t d)
{
    for (coll *c = rt->colls; c; c = c->next)
        for (size_t i = 0; i < c->m; i++)
            if (member(c, i) == d)
                c->broken = 1;
}

void coll_free_all(prt *rt)
{
    while (rt->colls)
        coll_free(rt->colls);
    if (rt->cc) {
        lk_off(rt);
        dp_free(rt->cc->ring_off);
        dp_free(rt->cc->ring_k);
        dp_free(rt->cc->ring_plat);
        dp_free(rt->cc->lk_lat);
        dp_free(rt->cc);
        rt->cc = NULL;
    }
}

void coll_abort_all(prt *rt)
{
    while (rt->colls) {
        coll *c = rt->colls;
        if (!c->dropped)
            coll_end_acts(rt, c);
        coll_free(c);
    }
}

/* A dropped collective stays listed (flows of its round may still call
 * back; they never complete the round, as the lost member's were cut) and
 * is freed with the run. */
void coll_drop_broken(prt *rt)
{
    for (coll *c = rt->colls; c; c = c->next)
        if (c->broken && !c->dropped) {
            c->dropped = 1;
            coll_end_acts(rt, c);
        }
}

static void finish(prt *rt, void *ctx)
{
    coll *c = ctx;
    if (c->broken)
        return; /* blocked: a member is gone (its flows were cut) */
    prt_fn fn = c->fn;
    void *fctx = c->ctx;
    coll_end_acts(rt, c);
    coll_free(c);
    fn(rt, fctx);
}

static void start_round(coll *c);

/* The last flow of round c->round ended. */
static void round_done(coll *c)
{
    if (++c->round < c->rounds)
        start_round(c);
    else
        finish(c->rt, c);
}

static void on_flow(void *ctx, uint64_t id)
{
    (void)id;
    coll *c = ctx;
    if (--c->pending > 0)
        return;
    round_done(c);
}

/* ---- rounds in closed form (see the top of this part) ---- */

static int ring_routes(const coll *c);

/* The full ring (every device, in order), whose routes ring_routes keeps. */
static int full_ring(const coll *c)
{
    return !c->members && c->m == c->rt->n;
}

/* Ring edge i's path (every link, finite or not) and its latency: from
 * the full ring's route cache (ring_routes: routes never change), else
 * world_path into buf.  A collective in closed form walks its edges three
 * times (hold, release, account); world_path's route lookup at each was
 * a third of DDP with flow collectives at 10^4 devices. */
static const int *edge_links(const coll *c, size_t i, int *buf, size_t *nl, double *lat)
{
    prt *rt = c->rt;
    if (full_ring(c) && !ring_routes(c)) {
        const coll_cache *cc = rt->cc;
        *nl = cc->ring_off[i + 1] - cc->ring_off[i];
        *lat = cc->ring_plat[i];
        return rt->ring_links + cc->ring_off[i];
    }
    world_path(rt->w, (int)member(c, i) + 1, (int)member(c, (i + 1) % c->m) + 1, buf, nl, lat);
    return buf;
}

/* The TCP window cap world_transfer gives a flow of path latency lat. */
static double window_cap(const prt *rt, double lat)
{
    double w = rt->s->network.tcp_window_bytes;
    return w > 0 && lat > 0 ? w / (2 * lat) : INFINITY;
}

/* Release the finite links of edges [0, upto) and the first `links_upto`
 * of edge `upto`'s (the links closed_start held). */
static void closed_release(coll *c, size_t upto, size_t links_upto)
{
    net *n = world_net(c->rt->w);
    for (size_t i = 0; i <= upto && i < c->m; i++) {
        int buf[NET_MAX_PATH];
        size_t nl;
        double lat;
        const int *links = edge_links(c, i, buf, &nl, &lat);
        if (i == upto)
            nl = links_upto < nl ? links_upto : nl;
        for (size_t j = 0; j < nl; j++)
            if (isfinite(net_link_capacity(n, links[j])))
                net_link_release(n, links[j]);
    }
}

static void closed_free(coll *c)
{
    if (!c->cf)
        return;
    dp_free(c->cf->lat);
    dp_free(c->cf->x);
    dp_free(c->cf->rate);
    dp_free(c->cf->tl);
    dp_free(c->cf->te);
    dp_free(c->cf->te_of);
    dp_free(c->cf);
    c->cf = NULL;
}

/* A collective freed mid-schedule (a run that stopped, its results
 * already taken): let the links go. */
static void closed_drop(coll *c)
{
    if (!c->cf)
        return;
    sim_cancel(c->rt->e, c->cf->ev);
    if (c->cf->lk) {
        c->rt->cc->lk_c = NULL;
        lk_off(c->rt);
    } else {
        closed_release(c, c->m, 0);
    }
    closed_free(c);
}

/* Traced link L's capacity at t (the changes at or before t applied, as
 * on_trace_change and trace_resume compute them). */
static double ctl_cap(ctlink *L, double t)
{
    if (t < L->ct) {
        L->ct = -INFINITY;
        L->cv = L->cap0;
        L->cn = L->next0;
    }
    double v;
    while (L->cn <= t) {
        L->ct = L->cn;
        L->cv = trace_value_at(L->tr, L->ct);
        L->cn = trace_next_change(L->tr, L->ct, &v);
    }
    return L->cv;
}

/* Traced edge E's lone-flow rate at t, as progressive filling gives it
 * (its window cap and its finite links' capacities); util (may be NULL)
 * takes rate / capacity per link where higher. */
static double cte_rate(closed *k, const ctedge *E, double t, double *util)
{
    double rate = E->wcap, cap[NET_MAX_PATH];
    for (int j = 0; j < E->nl; j++) {
        cap[j] = E->tl[j] >= 0 ? ctl_cap(&k->tl[E->tl[j]], t) : E->cap[j];
        rate = fmin(rate, cap[j]);
    }
    for (int j = 0; util && j < E->nl; j++)
        if (cap[j] > 0 && rate / cap[j] > util[j])
            util[j] = rate / cap[j];
    return rate;
}

/* The first change of E's traced links after t (cte_rate(t) first). */
static double cte_next(closed *k, const ctedge *E)
{
    double next = INFINITY;
    for (int j = 0; j < E->nl; j++)
        if (E->tl[j] >= 0)
            next = fmin(next, k->tl[E->tl[j]].cn);
    return next;
}

/* E's flow of `chunk` bytes activated at a, run as the net runs a lone
 * flow (net_impl.h: flow_rem_at, flow_finish, flow_rate_to): its end
 * (INFINITY: never, or past CTE_MAX_CHANGES).  With stop < its end, *left
 * gets its remaining bytes at stop.  util (may be NULL): as cte_rate, at
 * activation and at each change while it runs. */
static double cte_run(closed *k, const ctedge *E, double chunk, double a, double stop, double *left,
                      double *util)
{
    double r = cte_rate(k, E, a, util), rem = chunk, tl = a;
    double fin = rem <= 0 ? a : r > 0 ? (isinf(r) ? a : a + rem / r) : INFINITY;
    for (int n = 0;; n++) {
        double tc = cte_next(k, E);
        if (!(tc < fin) || tc > stop)
            break;
        if (n == CTE_MAX_CHANGES)
            return INFINITY;
        double r2 = cte_rate(k, E, tc, util);
        if (r2 == r)
            continue; /* lazy progress: an unchanged rate changes nothing */
        double dt = tc - tl;
        if (dt > 0 && r > 0) {
            rem = isinf(r) ? 0 : rem - r * dt;
            rem = rem > 0 ? rem : 0;
        }
        tl = tc;
        r = r2;
        fin = rem <= 0 ? tc : r > 0 ? (isinf(r) ? tc : tc + rem / r) : INFINITY;
    }
    if (left && stop < fin) {
        double dt = stop - tl, x = rem;
        if (dt > 0 && r > 0) {
            x = isinf(r) ? 0 : rem - r * dt;
            x = x > 0 ? x : 0;
        }
        *left = x;
    }
    return fin;
}

/* Where a round of c starting at t ends; with acc, each traced edge's
 * busy time and peak shares over it are added to its record. */
static double closed_step(const coll *c, closed *k, double t, int acc)
{
    double end = -INFINITY;
    for (int j = 0; j < k->n_cand; j++) {
        double e = (t + k->cand_lat[j]) + k->cand_x[j];
        if (e > end)
            end = e;
    }
    for (size_t u = 0; u < k->n_te; u++) {
        ctedge *E = &k->te[u];
        double a = t + E->lat, e = cte_run(k, E, c->chunk, a, INFINITY, NULL, acc ? E->util : NULL);
        if (acc)
            E->busy += e - a;
        if (e > end)
            end = e;
    }
    return end;
}

/* A lone flow's rate on ring edge `links` of latency lat: its window
 * cap and its finite links' capacities, in path order. */
static double edge_rate_now(const coll *c, const int *links, size_t nl, double lat)
{
    net *n = world_net(c->rt->w);
    double rate = window_cap(c->rt, lat);
    for (size_t j = 0; j < nl; j++) {
        double cap = net_link_capacity(n, links[j]);
        if (isfinite(cap))
            rate = fmin(rate, cap);
    }
    return rate;
}

static void lk_settle(coll *c, double rounds);

/* Let every held link go and add `rounds` whole rounds of every edge to
 * its links' statistics, in one pass over the links (each link's own
 * operations in the order of a release then an account: the same bits). */
static void closed_settle(coll *c, double rounds)
{
    if (c->cf->lk) {
        lk_settle(c, rounds);
        return;
    }
    net *n = world_net(c->rt->w);
    closed *k = c->cf;
    int acc = rounds > 0;
    if (acc && k->n_te) { /* the traced edges round by round, from the first */
        for (size_t u = 0; u < k->n_te; u++) {
            k->te[u].busy = 0;
            memset(k->te[u].util, 0, sizeof k->te[u].util);
        }
        double t = k->t0;
        for (int r = 0; r < (int)rounds; r++)
            t = closed_step(c, k, t, 1);
    }
    for (size_t i = 0; i < c->m; i++) {
        int buf[NET_MAX_PATH];
        size_t nl;
        double lat;
        const int *links = edge_links(c, i, buf, &nl, &lat);
        const ctedge *E = k->te_of && k->te_of[i] >= 0 ? &k->te[k->te_of[i]] : NULL;
        for (size_t j = 0, f = 0; j < nl; j++)
            if (isfinite(net_link_capacity(n, links[j]))) {
                net_link_release(n, links[j]);
                if (acc && E)
                    net_link_account_util(n, links[j], rounds * c->chunk, E->busy, E->util[f]);
                else if (acc)
                    net_link_account(n, links[j], rounds * c->chunk, rounds * k->x[i], k->rate[i]);
                f++;
            }
    }
}

static void closed_end(sim_engine *e, void *ctx, uint64_t id)
{
    (void)e;
    (void)id;
    coll *c = ctx;
    c->cf->ev = 0;
    closed_settle(c, (double)(c->rounds - c->cf->round0));
    closed_free(c);
    c->round = c->rounds;
    finish(c->rt, c);
}

static void round_done_ev(prt *rt, void *ctx)
{
    (void)rt;
    round_done(ctx);
}

/* The net is about to change a held link's shares (now): account the
 * rounds done, start the current round's unfinished flows as real flows
 * with what they have left, and go on with flows. */
static int lk_edges(coll *c);

/* Traced edge E's flow of the round started at t, at a takeback now: its
 * links get what it carried by now; what it has left starts as a flow
 * (*pending counts it).  0, or DP_ENOMEM (the run failed). */
static int closed_takeback_traced(coll *c, closed *k, ctedge *E, double t, double now, const int *links,
                                  size_t nl, int *pending)
{
    prt *rt = c->rt;
    net *n = world_net(rt->w);
    double util[NET_MAX_PATH] = {0}, a = t + E->lat, left = c->chunk, delay = 0;
    double end = a <= now ? cte_run(k, E, c->chunk, a, now, &left, util) : INFINITY;
    double sent = end <= now ? c->chunk : a <= now ? c->chunk - left : 0;
    if (a <= now)
        for (size_t j = 0, f = 0; j < nl; j++)
            if (isfinite(net_link_capacity(n, links[j])))
                net_link_account_util(n, links[j], sent, fmin(end, now) - a, util[f++]);
    if (end <= now)
        return 0;
    if (a > now)
        delay = a - now;
    uint64_t id = world_flow_start(rt->w, links, nl, left, delay, E->wcap, on_flow, c);
    if (!id)
        return prt_fail(rt, DP_ENOMEM, "out of memory starting a collective");
    net_flow_set_rtt(n, id, 2 * E->lat);
    (*pending)++;
    return 0;
}

static void closed_takeback(void *ctx)
{
    coll *c = ctx;
    prt *rt = c->rt;
    closed *k = c->cf;
    net *n = world_net(rt->w);
    if (k->lk && lk_edges(c)) { /* per-edge figures for the flows below */
        sim_cancel(rt->e, k->ev);
        closed_free(c);
        prt_fail(rt, DP_ENOMEM, "out of memory");
        return;
    }
    double now = sim_now(rt->e), t = k->t0;
    int r = k->round0;
    for (double next; r < c->rounds && (next = closed_step(c, k, t, 0)) <= now; r++)
        t = next;
    sim_cancel(rt->e, k->ev);
    closed_settle(c, (double)(r - k->round0));
    c->round = r;
    c->cf = NULL; /* the flows started below must not find it */
    c->pending = 0;
    for (size_t i = 0; r < c->rounds && i < c->m; i++) {
        int lbuf[NET_MAX_PATH], links[NET_MAX_PATH];
        size_t nl;
        double lat;
        const int *el = edge_links(c, i, lbuf, &nl, &lat);
        memcpy(links, el, nl * sizeof *links); /* world_flow_start may not keep a pointer into the cache */
        ctedge *E = k->te_of && k->te_of[i] >= 0 ? &k->te[k->te_of[i]] : NULL;
        if (E) {
            if (closed_takeback_traced(c, k, E, t, now, links, nl, &c->pending))
                break;
            continue;
        }
        double a = t + k->lat[i], end = a + k->x[i], left = c->chunk, delay = 0;
        if (end <= now) {
            left = 0; /* done */
        } else if (a <= now) {
            double sent = fmin(k->rate[i] * (now - a), c->chunk);
            left = c->chunk - sent;
            for (size_t j = 0; j < nl; j++)
                if (isfinite(net_link_capacity(n, links[j])))
                    net_link_account(n, links[j], sent, now - a, k->rate[i]);
        } else {
            delay = a - now;
        }
        if (end <= now) {
            for (size_t j = 0; j < nl; j++)
                if (isfinite(net_link_capacity(n, links[j])))
                    net_link_account(n, links[j], c->chunk, k->x[i], k->rate[i]);
            continue;
        }
        uint64_t id = world_flow_start(rt->w, links, nl, left, delay, window_cap(rt, lat), on_flow, c);
        if (!id) {
            prt_fail(rt, DP_ENOMEM, "out of memory starting a collective");
            break;
        }
        net_flow_set_rtt(n, id, 2 * lat); /* its path's RTT, whatever latency it has left */
        c->pending++;
    }
    c->cf = k;
    closed_free(c);
    if (c->pending == 0 && !rt->failed && prt_at(rt, now, round_done_ev, c))
        prt_fail(rt, DP_ENOMEM, "out of memory");
}

/* Run the rounds from c->round on in closed form if the ring's links allow
 * it (above): 1 if so, 0 to run them as flows. */
static int lk_start(coll *c);

/* Edge i's finite links, held by the caller, as a traced edge: their
 * capacities, and the traced ones' schedules as at the hold.  0, or -1
 * out of memory. */
static int cte_add(coll *c, closed *k, size_t i, const int *links, size_t nl, double lat)
{
    net *n = world_net(c->rt->w);
    if (dp_grow((void **)&k->te, &k->cap_te, k->n_te + 1, sizeof *k->te, 4))
        return -1;
    ctedge *E = &k->te[k->n_te];
    memset(E, 0, sizeof *E);
    E->i = i;
    E->lat = lat;
    E->wcap = window_cap(c->rt, lat);
    for (size_t j = 0; j < nl; j++) {
        double cap = net_link_capacity(n, links[j]), next;
        if (!isfinite(cap))
            continue;
        const trace *tr = net_link_trace(n, links[j], &next);
        E->link[E->nl] = links[j];
        E->cap[E->nl] = cap;
        E->tl[E->nl] = -1;
        if (tr) {
            if (dp_grow((void **)&k->tl, &k->cap_tl, k->n_tl + 1, sizeof *k->tl, 4))
                return -1;
            k->tl[k->n_tl] = (ctlink){tr, cap, next, -INFINITY, cap, next};
            E->tl[E->nl] = (int)k->n_tl++;
        }
        E->nl++;
    }
    k->te_of[i] = (int)k->n_te++;
    return 0;
}

static int closed_start(coll *c)
{
    prt *rt = c->rt;
    if (!closed_allowed() || rt->may_fail || rt->energy || c->broken ||
        c->round >= c->rounds) /* energy: each flow's interval counts */
        return 0;
    int lk = lk_start(c);
    if (lk >= 0)
        return lk;
    net *n = world_net(rt->w);
    closed *k = dp_calloc(1, sizeof *k);
    if (!k)
        return 0;
    c->cf = k;
    k->lat = dp_malloc(c->m * sizeof *k->lat);
    k->x = dp_malloc(c->m * sizeof *k->x);
    k->rate = dp_malloc(c->m * sizeof *k->rate);
    k->te_of = dp_malloc(c->m * sizeof *k->te_of);
    if (!k->lat || !k->x || !k->rate || !k->te_of) {
        closed_free(c);
        return 0;
    }
    double slowest = 0;
    for (size_t i = 0; i < c->m; i++) {
        int buf[NET_MAX_PATH];
        size_t nl;
        const int *links = edge_links(c, i, buf, &nl, &k->lat[i]);
        double rate = window_cap(rt, k->lat[i]);
        int traced = 0;
        k->te_of[i] = -1;
        for (size_t j = 0; j < nl; j++) {
            double cap = net_link_capacity(n, links[j]);
            if (!isfinite(cap))
                continue;
            if (net_link_hold(n, links[j], closed_takeback, c)) { /* shared, busy or stalled */
                closed_release(c, i, j);
                closed_free(c);
                return 0;
            }
            traced |= net_link_trace(n, links[j], NULL) != NULL;
            rate = fmin(rate, cap);
        }
        if (traced && cte_add(c, k, i, links, nl, k->lat[i])) {
            closed_release(c, c->m, 0);
            closed_free(c);
            return 0;
        }
        k->rate[i] = traced ? NAN : rate;
        k->x[i] = traced ? NAN : c->chunk > 0 ? c->chunk / rate : 0;
        if (!traced)
            slowest = fmax(slowest, k->lat[i] + k->x[i]);
    }
    /* the untraced edges that can end a round: within rounding of the
     * slowest over the whole schedule (8 ulps of its last end) */
    double t0 = sim_now(rt->e), horizon = t0 + (double)(c->rounds - c->round + 1) * slowest;
    double eps = 8 * DBL_EPSILON * horizon;
    for (size_t i = 0; i < c->m; i++) {
        if (k->te_of[i] >= 0 || k->lat[i] + k->x[i] < slowest - eps)
            continue;
        int seen = 0;
        for (int j = 0; j < k->n_cand && !seen; j++)
            seen = k->cand_lat[j] == k->lat[i] && k->cand_x[j] == k->x[i];
        if (seen)
            continue;
        if (k->n_cand == CLOSED_CANDS) { /* too many near-ties: flows decide */
            closed_release(c, c->m, 0);
            closed_free(c);
            return 0;
        }
        k->cand_lat[k->n_cand] = k->lat[i];
        k->cand_x[k->n_cand++] = k->x[i];
    }
    k->round0 = c->round;
    k->t0 = t0;
    double t = t0;
    for (int r = c->round; r < c->rounds && isfinite(t); r++)
        t = closed_step(c, k, t, 0);
    if (!isfinite(t) ||
        !(k->ev = sim_at(rt->e, t, closed_end, c))) { /* a traced edge that never ends: flows */
        closed_release(c, c->m, 0);
        closed_free(c);
        return 0;
    }
    return 1;
}

static void on_pflow(void *ctx, uint64_t id);

/* Start edge j's next send if its own last send and its predecessor's send
 * of the same round have ended.  0 or DP_ENOMEM (the run failed). */
static int pipe_try(coll *c, size_t j)
{
    pipe *p = c->pp;
    size_t prev = (j + c->m - 1) % c->m;
    int r = p->started[j];
    if (p->done[j] != r || p->done[prev] < r || r + 1 >= c->rounds)
        return 0;
    p->started[j] = r + 1;
    int from = (int)member(c, j) + 1, to = (int)member(c, (j + 1) % c->m) + 1;
    if (!world_transfer(c->rt->w, from, to, c->chunk, on_pflow, &p->pe[j]))
        return prt_fail(c->rt, DP_ENOMEM, "out of memory starting a collective");
    return 0;
}

/* Edge i's send ended: it may go on, and so may its successor, whose
 * chunk has arrived. */
static void on_pflow(void *ctx, uint64_t id)
{
    (void)id;
    pedge *e = ctx;
    coll *c = e->c;
    pipe *p = c->pp;
    size_t i = e->i;
    if (++p->done[i] == c->rounds - 1 && --p->left == 0) {
        finish(c->rt, c);
        return;
    }
    if (!pipe_try(c, i))
        pipe_try(c, (i + 1) % c->m);
}

/* Every edge's round-0 send now; the rest as they become ready. */
static void pipe_start(coll *c)
{
    prt *rt = c->rt;
    pipe *p = dp_calloc(1, sizeof *p);
    if (p) {
        p->started = dp_calloc(c->m, sizeof *p->started);
        p->done = dp_malloc(c->m * sizeof *p->done);
        p->pe = dp_malloc(c->m * sizeof *p->pe);
    }
    c->pp = p;
    if (!p || !p->started || !p->done || !p->pe) {
        prt_fail(rt, DP_ENOMEM, "out of memory starting a collective");
        return;
    }
    p->left = c->m;
    for (size_t i = 0; i < c->m; i++) {
        p->done[i] = -1;
        p->pe[i] = (pedge){c, i};
    }
    for (size_t i = 0; i < c->m; i++) {
        int from = (int)member(c, i) + 1, to = (int)member(c, (i + 1) % c->m) + 1;
        if (!world_transfer(rt->w, from, to, c->chunk, on_pflow, &p->pe[i])) {
            prt_fail(rt, DP_ENOMEM, "out of memory starting a collective");
            return;
        }
    }
}

/* ---- link classes: the full ring held for good ---------------------------
 * With symmetry on (runtime_sym.c) the full ring's devices form classes:
 * runs of identical consecutive devices whose edges (in and out) are alike.
 * In closed form every round of every edge adds the same to each member's
 * two ring links as to its representative's; walking every edge's links
 * three times per collective (hold, release, account) was nearly all of
 * DDP with flow collectives at 10^5 devices.  So, once the ring's links
 * allow it, they stay held between collectives (the hook: ring_hook), a
 * collective in closed form reads and accounts only the edges of the
 * representatives and of devices alone (O(classes)), and a follower's ring
 * links take its representative's statistics whenever the runtime copies
 * its records (coll_sym_links: sym_flush before an epoch's fold or the
 * results, sym_split).  Anything touching a held link (a flow, a capacity
 * change, an outage) first brings every follower's links up to date,
 * releases the ring and ends the mode for the run (lk_off); a collective in
 * closed form then goes on as flows, as without the mode.  Exact: a
 * follower's links would have received, from edges of the same latency
 * and capacities, the same additions in the same order as its
 * representative's (checked when the mode starts: equal statistics, equal
 * edges, no route over a shared link). */

/* Device d's ring links: the one it sends on (first of edge d) and the one
 * it receives on (last of edge d - 1). */
static void lk_dev_links(const prt *rt, size_t d, int *snd, int *rcv)
{
    const coll_cache *cc = rt->cc;
    size_t p = d ? d - 1 : rt->n - 1;
    *snd = rt->ring_links[cc->ring_off[d]];
    *rcv = rt->ring_links[cc->ring_off[p + 1] - 1];
}

void coll_sym_links(prt *rt, size_t r, size_t d)
{
    if (!rt->cc || rt->cc->lk != 1)
        return;
    net *n = world_net(rt->w);
    int sr, rr, sd, rd;
    lk_dev_links(rt, r, &sr, &rr);
    lk_dev_links(rt, d, &sd, &rd);
    net_link_copy_stats(n, sr, sd);
    net_link_copy_stats(n, rr, rd);
}

/* Leave the mode for the run: every follower's links up to date, the ring
 * released. */
static void lk_off(prt *rt)
{
    coll_cache *cc = rt->cc;
    if (!cc || cc->lk != 1)
        return;
    for (size_t d = 0; rt->sym_rep && d < rt->n; d++)
        if (rt->sym_rep[d] != d)
            coll_sym_links(rt, rt->sym_rep[d], d);
    cc->lk = -1;
    net *n = world_net(rt->w);
    for (size_t j = 0; j < rt->n_ring_links; j++)
        if (isfinite(net_link_capacity(n, rt->ring_links[j])))
            net_link_release(n, rt->ring_links[j]);
}

static void ring_hook(void *ctx)
{
    prt *rt = ctx;
    coll *c = rt->cc->lk_c;
    rt->cc->lk_c = NULL;
    lk_off(rt);
    if (c)
        closed_takeback(c);
}

/* Edges i and j alike: the same latency and the same capacities on the
 * same positions of their paths (their rates and chunk times follow). */
static int lk_edges_alike(const prt *rt, size_t i, size_t j)
{
    const coll_cache *cc = rt->cc;
    size_t ni = cc->ring_off[i + 1] - cc->ring_off[i], nj = cc->ring_off[j + 1] - cc->ring_off[j];
    if (ni != nj || memcmp(&cc->ring_plat[i], &cc->ring_plat[j], sizeof(double)) != 0)
        return 0;
    net *n = world_net(rt->w);
    for (size_t k = 0; k < ni; k++) {
        double a = net_link_capacity(n, rt->ring_links[cc->ring_off[i] + k]),
               b = net_link_capacity(n, rt->ring_links[cc->ring_off[j] + k]);
        if (memcmp(&a, &b, sizeof a) != 0)
            return 0;
    }
    return 1;
}

/* Start the mode if the ring allows it: 1 if on. */
static int lk_try(coll *c)
{
    prt *rt = c->rt;
    coll_cache *cc = rt->cc;
    net *n = world_net(rt->w);
    cc->lk = -1; /* tried once a run */
    if (rt->ring_traced || world_has_outages(rt->w) || !rt->sym_rep)
        return 0;
    for (size_t d = 1; d < rt->n; d++) {
        size_t r = rt->sym_rep[d];
        if (r ==
            d) { /* a representative's edge in, whose figures its receiving link gets, like its own out */
            if (d + 1 < rt->n && rt->sym_rep[d + 1] == d && !lk_edges_alike(rt, d, d - 1))
                return 0;
            continue;
        }
        /* a follower: its edges out and in like its predecessor's, on
         * private links only (two per edge: no WAN hop), its links' state
         * and statistics its representative's */
        int sr, rr, sd, rd;
        lk_dev_links(rt, r, &sr, &rr);
        lk_dev_links(rt, d, &sd, &rd);
        if (cc->ring_off[d + 1] - cc->ring_off[d] != 2 || !lk_edges_alike(rt, d, d - 1) ||
            !net_link_same(n, sr, sd) || !net_link_same(n, rr, rd))
            return 0;
    }
    for (size_t j = 0; j < rt->n_ring_links; j++) {
        int l = rt->ring_links[j];
        if (isfinite(net_link_capacity(n, l)) && net_link_hold(n, l, ring_hook, rt)) {
            for (size_t i = 0; i < j; i++)
                if (isfinite(net_link_capacity(n, rt->ring_links[i])))
                    net_link_release(n, rt->ring_links[i]);
            return 0;
        }
    }
    cc->lk = 1;
    return 1;
}

/* Closed form on the held ring: 1 if started, 0 for flows, -1 when the
 * mode does not apply (the caller's own closed form then). */
static int lk_start(coll *c)
{
    prt *rt = c->rt;
    coll_cache *cc = rt->cc;
    size_t nr;
    const size_t *reps = prt_sym_reps(rt, &nr);
    if (!full_ring(c)) {
        if (cc && cc->lk == 1 && cc->lk_c)
            return 0; /* the ring's links are held by a collective: flows, as a failed hold gives */
        if (cc)
            lk_off(rt);
        return -1;
    }
    if (ring_routes(c) || (cc = rt->cc)->lk < 0)
        return -1;
    if (!reps) {
        lk_off(rt); /* symmetry ended (its flush brought every link up to date) */
        return -1;
    }
    if (cc->lk_c)
        return 0;
    if (cc->lk == 0 && !lk_try(c))
        return -1;
    closed *k = dp_calloc(1, sizeof *k);
    if (!k)
        return 0;
    k->lk = 1;
    double slowest = 0;
    for (size_t u = 0; u < nr; u++) { /* a follower's edge is its representative's */
        size_t i = reps[u];
        double lat = cc->ring_plat[i];
        double rate =
            edge_rate_now(c, rt->ring_links + cc->ring_off[i], cc->ring_off[i + 1] - cc->ring_off[i], lat);
        slowest = fmax(slowest, lat + (c->chunk > 0 ? c->chunk / rate : 0));
    }
    double t0 = sim_now(rt->e), horizon = t0 + (double)(c->rounds - c->round + 1) * slowest;
    double eps = 8 * DBL_EPSILON * horizon;
    for (size_t u = 0; u < nr;
         u++) { /* first appearances in edge order: a representative precedes its class */
        size_t i = reps[u];
        double lat = cc->ring_plat[i];
        double rate =
            edge_rate_now(c, rt->ring_links + cc->ring_off[i], cc->ring_off[i + 1] - cc->ring_off[i], lat);
        double x = c->chunk > 0 ? c->chunk / rate : 0;
        if (lat + x < slowest - eps)
            continue;
        int seen = 0;
        for (int j = 0; j < k->n_cand && !seen; j++)
            seen = k->cand_lat[j] == lat && k->cand_x[j] == x;
        if (seen)
            continue;
        if (k->n_cand == CLOSED_CANDS) { /* too many near-ties: flows decide */
            dp_free(k);
            return 0;
        }
        k->cand_lat[k->n_cand] = lat;
        k->cand_x[k->n_cand++] = x;
    }
    k->round0 = c->round;
    k->t0 = t0;
    double t = t0;
    for (int r = c->round; r < c->rounds; r++)
        t = closed_step(c, k, t, 0);
    c->cf = k;
    if (!(k->ev = sim_at(rt->e, t, closed_end, c))) {
        closed_free(c);
        return 0;
    }
    cc->lk_c = c;
    return 1;
}

/* `rounds` whole rounds of the held ring's edges on the links of the
 * representatives and devices alone: each its sending link with its edge's
 * figures, its receiving link with its predecessor's (and a lone device's
 * WAN hops with its own edge's). */
static void lk_settle(coll *c, double rounds)
{
    prt *rt = c->rt;
    coll_cache *cc = rt->cc;
    if (cc->lk_c == c)
        cc->lk_c = NULL;
    if (!(rounds > 0))
        return;
    net *n = world_net(rt->w);
    size_t nr;
    const size_t *reps = prt_sym_reps(rt, &nr);
    if (!reps)
        nr = rt->n; /* symmetry ended mid-collective (its flush took the followers' links): every device */
    for (size_t u = 0; u < nr; u++) {
        size_t i = reps ? reps[u] : u, p = i ? i - 1 : rt->n - 1;
        const int *li = rt->ring_links + cc->ring_off[i], *lp = rt->ring_links + cc->ring_off[p];
        size_t ni = cc->ring_off[i + 1] - cc->ring_off[i], np = cc->ring_off[p + 1] - cc->ring_off[p];
        double ri = edge_rate_now(c, li, ni, cc->ring_plat[i]), xi = c->chunk > 0 ? c->chunk / ri : 0;
        double rp = edge_rate_now(c, lp, np, cc->ring_plat[p]), xp = c->chunk > 0 ? c->chunk / rp : 0;
        for (size_t j = 0; j + 1 < ni; j++)
            if (isfinite(net_link_capacity(n, li[j])))
                net_link_account(n, li[j], rounds * c->chunk, rounds * xi, ri);
        if (isfinite(net_link_capacity(n, lp[np - 1])))
            net_link_account(n, lp[np - 1], rounds * c->chunk, rounds * xp, rp);
    }
}

/* Every edge's latency, chunk time and rate (a takeback from the held
 * ring's closed form goes on with flows): 0, or DP_ENOMEM. */
static int lk_edges(coll *c)
{
    prt *rt = c->rt;
    closed *k = c->cf;
    const coll_cache *cc = rt->cc;
    k->lat = dp_malloc(c->m * sizeof *k->lat);
    k->x = dp_malloc(c->m * sizeof *k->x);
    k->rate = dp_malloc(c->m * sizeof *k->rate);
    if (!k->lat || !k->x || !k->rate)
        return DP_ENOMEM;
    for (size_t i = 0; i < c->m; i++) {
        k->lat[i] = cc->ring_plat[i];
        k->rate[i] = edge_rate_now(c, rt->ring_links + cc->ring_off[i], cc->ring_off[i + 1] - cc->ring_off[i],
                                   k->lat[i]);
        k->x[i] = c->chunk > 0 ? c->chunk / k->rate[i] : 0;
    }
    k->lk = 0; /* from here, as without the mode */
    return 0;
}

static void start_round(coll *c)
{
    prt *rt = c->rt;
    if (closed_start(c))
        return;
    c->pending = (int)c->m;
    for (size_t i = 0; i < c->m; i++) {
        int from = (int)member(c, i) + 1, to = (int)member(c, (i + 1) % c->m) + 1;
        if (!world_transfer(rt->w, from, to, c->chunk, on_flow, c)) {
            prt_fail(rt, DP_ENOMEM, "out of memory starting a collective");
            return;
        }
    }
}

/* Ring flows per link for the analytic mode (rt->coll_link_n, one count
 * per network link, all 0 between calls): add delta for every link of every
 * ring edge's path.  0 or DP_ENOMEM. */
static int count_links(const coll *c, int delta)
{
    prt *rt = c->rt;
    size_t nl_all = net_link_count(world_net(rt->w));
    if (rt->coll_link_cap < nl_all) {
        unsigned *a = dp_realloc(rt->coll_link_n, nl_all * sizeof *a);
        if (!a)
            return DP_ENOMEM;
        for (size_t l = rt->coll_link_cap; l < nl_all; l++)
            a[l] = 0;
        rt->coll_link_n = a;
        rt->coll_link_cap = nl_all;
    }
    for (size_t i = 0; i < c->m; i++) {
        int links[NET_MAX_PATH];
        size_t nl;
        double lat;
        world_path(rt->w, (int)member(c, i) + 1, (int)member(c, (i + 1) % c->m) + 1, links, &nl, &lat);
        for (size_t j = 0; j < nl; j++)
            rt->coll_link_n[links[j]] += (unsigned)delta;
    }
    return 0;
}

/* Ring edge i now: its path latency and its rate (edge: the seconds its
 * flow of `chunk` bytes transfers).  Max-min fairness gives a flow at least min over its
 * links of capacity / flows on the link (and its TCP window cap), so with
 * the round's flows counted on every link (count_links) this is exact for
 * the flows of a round's most loaded link, and an upper bound for the rest
 * (exact when flows that share a link have equal latencies). */
static double edge_rate(const coll *c, size_t i, double *lat)
{
    prt *rt = c->rt;
    int links[NET_MAX_PATH];
    size_t nl;
    net *n = world_net(rt->w);
    double rate = INFINITY;
    world_path(rt->w, (int)member(c, i) + 1, (int)member(c, (i + 1) % c->m) + 1, links, &nl, lat);
    for (size_t j = 0; j < nl; j++) {
        unsigned k = rt->coll_link_n[links[j]];
        rate = fmin(rate, net_link_capacity(n, links[j]) / (double)(k ? k : 1));
    }
    if (rt->s->network.tcp_window_bytes > 0 && *lat > 0)
        rate = fmin(rate, rt->s->network.tcp_window_bytes / (2 * *lat));
    return rate;
}

static void edge(const coll *c, size_t i, double *lat, double *xfer)
{
    double rate = edge_rate(c, i, lat);
    *xfer = c->chunk > 0 ? c->chunk / rate : 0;
}

/* The full ring's edge latencies and rates (rt->ring_*), recomputed only
 * when a capacity changed since: DDP starts one collective per bucket, and
 * recomputing every route and link count each time was most of an
 * analytic run.  The rates are edge()'s, so the times are the same bits.
 * 0 or DP_ENOMEM. */
static coll_cache *cache(prt *rt)
{
    if (!rt->cc && (rt->cc = dp_calloc(1, sizeof *rt->cc)))
        rt->cc->ring_unequal = -1;
    return rt->cc;
}

/* A per-link scratch of NANs as long as the net's link list, or NULL. */
static double *lk_scratch(prt *rt)
{
    coll_cache *cc = cache(rt);
    size_t nl = net_link_count(world_net(rt->w));
    if (!cc)
        return NULL;
    if (cc->lk_cap < nl) {
        double *a = dp_realloc(cc->lk_lat, nl * sizeof *a);
        if (!a)
            return NULL;
        for (size_t l = cc->lk_cap; l < nl; l++)
            a[l] = NAN;
        cc->lk_lat = a;
        cc->lk_cap = nl;
    }
    return cc->lk_lat;
}

/* With edge latency lat on a link that k ring edges cross (lk: the
 * scratch): 1 if an earlier edge on it had another latency. */
static int lat_differs(double *lk, int link, unsigned k, double lat)
{
    if (k < 2)
        return 0;
    if (isnan(lk[link])) {
        lk[link] = lat;
        return 0;
    }
    return lk[link] != lat;
}

/* The full ring's routes (c: the full ring), made once: routes never
 * change.  0, or DP_ENOMEM (then nothing is kept). */
static int ring_routes(const coll *c)
{
    prt *rt = c->rt;
    coll_cache *cc = cache(rt);
    if (!cc)
        return DP_ENOMEM;
    if (cc->routes_ok)
        return 0;
    if (!cc->ring_off)
        cc->ring_off = dp_malloc((rt->n + 1) * sizeof *cc->ring_off);
    if (!cc->ring_plat)
        cc->ring_plat = dp_malloc(rt->n * sizeof *cc->ring_plat);
    if (!rt->ring_links)
        rt->ring_links = dp_malloc(rt->n * NET_MAX_PATH * sizeof *rt->ring_links);
    if (!cc->ring_off || !cc->ring_plat || !rt->ring_links)
        return DP_ENOMEM;
    /* every edge's links, in member order */
    rt->n_ring_links = 0;
    for (size_t i = 0; i < c->m; i++) {
        size_t nl;
        cc->ring_off[i] = rt->n_ring_links;
        world_path(rt->w, (int)member(c, i) + 1, (int)member(c, (i + 1) % c->m) + 1,
                   rt->ring_links + rt->n_ring_links, &nl, &cc->ring_plat[i]);
        rt->n_ring_links += nl;
    }
    cc->ring_off[c->m] = rt->n_ring_links;
    if (!(cc->ring_k = dp_malloc((rt->n_ring_links + 1) * sizeof *cc->ring_k)))
        return DP_ENOMEM;
    for (size_t j = 0; j < rt->n_ring_links; j++) /* traces are fixed when the world is built */
        rt->ring_traced |= net_link_has_trace(world_net(rt->w), rt->ring_links[j]);
    cc->routes_ok = 1;
    return 0;
}

static int ring_fill(const coll *c)
{
    prt *rt = c->rt;
    uint64_t caps = net_cap_changes(world_net(rt->w));
    if (rt->ring_ok && rt->ring_caps == caps)
        return 0;
    coll_cache *cc = cache(rt);
    if (!cc)
        return DP_ENOMEM;
    if (!rt->ring_lat)
        rt->ring_lat = dp_malloc(rt->n * sizeof *rt->ring_lat);
    if (!rt->ring_rate)
        rt->ring_rate = dp_malloc(rt->n * sizeof *rt->ring_rate);
    if (!rt->ring_lat || !rt->ring_rate || ring_routes(c))
        return DP_ENOMEM;
    double *lk = lk_scratch(rt);
    if (!lk || count_links(c, 1))
        return DP_ENOMEM;
    for (size_t i = 0; i < c->m; i++)
        rt->ring_rate[i] = edge_rate(c, i, &rt->ring_lat[i]);
    /* edges sharing a link: how many (the statistics' shares), and whether
     * their latencies differ (the analytic time is then approximate) */
    cc->ring_unequal = -1;
    for (size_t j = 0; j < rt->n_ring_links; j++)
        cc->ring_k[j] = rt->coll_link_n[rt->ring_links[j]];
    for (size_t i = 0; i < c->m; i++)
        for (size_t j = cc->ring_off[i]; j < cc->ring_off[i + 1]; j++)
            if (cc->ring_unequal < 0 && isfinite(net_link_capacity(world_net(rt->w), rt->ring_links[j])) &&
                lat_differs(lk, rt->ring_links[j], cc->ring_k[j], rt->ring_lat[i]))
                cc->ring_unequal = rt->ring_links[j];
    for (size_t j = 0; j < rt->n_ring_links; j++)
        lk[rt->ring_links[j]] = NAN;
    count_links(c, -1);
    rt->ring_caps = caps;
    rt->ring_ok = 1;
    return 0;
}

/* One ring edge's part of its links' statistics over `rounds` rounds: its
 * bytes, and, on a link k edges cross, 1/k of its transfer time as busy
 * time and k times its rate as the share in use (the k flows run side by
 * side at equal shares when their latencies are equal, which is when the
 * analytic time is exact). */
static int edge_aside(const coll *c, int link, unsigned k, double rate, double xfer)
{
    net *n = world_net(c->rt->w);
    double cap = net_link_capacity(n, link);
    if (!isfinite(cap) || !(cap > 0))
        return 0;
    k = k ? k : 1;
    return net_link_account_aside(n, link, c->chunk * c->rounds, c->rounds * xfer / k, k * rate / cap);
}

/* Duration of the collective (rounds x the slowest edge, pipelined or
 * not: see the top of the pipelined part), or a negative value when out of
 * memory. */
static double analytic_s(const coll *c)
{
    if (!c->rounds)
        return 0;
    int full = !c->members && c->m == c->rt->n;
    if (full ? ring_fill(c) : count_links(c, 1))
        return -1;
    prt *rt = c->rt;
    double worst = 0;
    coll_cache *cc = rt->cc;
    if (full) {
        if (cc->w_caps != rt->ring_caps)
            cc->w_n = 0;
        for (int j = 0; j < cc->w_n; j++)
            if (memcmp(&cc->w_chunk[j], &c->chunk, sizeof c->chunk) == 0)
                return c->rounds * cc->w_worst[j];
    }
    for (size_t i = 0; i < c->m; i++) {
        double lat, xfer;
        if (full) {
            lat = rt->ring_lat[i];
            xfer = c->chunk > 0 ? c->chunk / rt->ring_rate[i] : 0;
        } else
            edge(c, i, &lat, &xfer);
        if (lat + xfer > worst)
            worst = lat + xfer;
    }
    if (!full)
        count_links(c, -1);
    else { /* remember it (oldest out) */
        int j = cc->w_n < WORST_CACHED ? cc->w_n++ : cc->w_next++ % WORST_CACHED;
        cc->w_chunk[j] = c->chunk;
        cc->w_worst[j] = worst;
        cc->w_caps = rt->ring_caps;
    }
    return c->rounds * worst;
}

/* Record a collective analytic_s has timed: each member's bytes and link
 * busy time in the runtime's counters and, in a world that reports link
 * statistics (a dynamic one: dyn_stats, runtime_work.c), every edge's bytes,
 * busy time and share on its links (edge_aside; O(ring links), so not
 * where nothing reads them).  0 or DP_ENOMEM. */
static int analytic_record(const coll *c)
{
    if (!c->rounds)
        return 0;
    prt *rt = c->rt;
    int full = !c->members && c->m == rt->n, links_too = scn_is_dynamic(rt->s);
    if (full) {
        prt_rec_ring(rt, c->chunk, c->rounds); /* from the ring cache (filled by analytic_s) */
        const coll_cache *cc = rt->cc;
        for (size_t i = 0; links_too && i < c->m; i++) {
            double xfer = c->chunk > 0 ? c->chunk / rt->ring_rate[i] : 0;
            for (size_t j = cc->ring_off[i]; j < cc->ring_off[i + 1]; j++)
                if (edge_aside(c, rt->ring_links[j], cc->ring_k[j], rt->ring_rate[i], xfer))
                    return DP_ENOMEM;
        }
        return 0;
    }
    if (count_links(c, 1))
        return DP_ENOMEM;
    for (size_t i = 0; i < c->m; i++) {
        /* every member sends and receives in every round; its links are
         * busy for its own flow's transfer time, not the slowest edge's */
        size_t d = member(c, i), next = member(c, (i + 1) % c->m);
        int links[NET_MAX_PATH];
        size_t nl;
        double lat;
        double rate = edge_rate(c, i, &lat), xfer = c->chunk > 0 ? c->chunk / rate : 0; /* edge()'s */
        prt_rec_coll(rt, d, next, c->chunk * c->rounds, c->rounds * xfer); /* d's up link: edge i */
        if (!links_too)
            continue;
        world_path(rt->w, (int)d + 1, (int)next + 1, links, &nl, &lat);
        for (size_t j = 0; j < nl; j++)
            if (edge_aside(c, links[j], rt->coll_link_n[links[j]], rate, xfer)) {
                count_links(c, -1);
                return DP_ENOMEM;
            }
    }
    count_links(c, -1);
    return 0;
}

/* 1 if a ring link has a scenario outage overlapping [t0, t1]. */
static int ring_outage(const coll *c, double t0, double t1)
{
    prt *rt = c->rt;
    if (!world_has_outages(rt->w))
        return 0;
    for (size_t i = 0; i < c->m; i++) {
        int links[NET_MAX_PATH];
        size_t nl;
        double lat;
        world_path(rt->w, (int)member(c, i) + 1, (int)member(c, (i + 1) % c->m) + 1, links, &nl, &lat);
        for (size_t j = 0; j < nl; j++)
            if (world_link_outage_in(rt->w, links[j], t0, t1))
                return 1;
    }
    return 0;
}

void coll_ring_account(prt *rt, double chunk, int rounds)
{
    size_t nr;
    const size_t *reps = prt_sym_reps(rt, &nr);
    if (reps) {
        /* with symmetry, each representative (and device alone) stands for
         * its class: its edges, in and out, are its followers'
         * (runtime_sym.c); edge i's time as below, O(classes) */
        const double *rate = rt->ring_rate;
        for (size_t j = 0; j < nr; j++) {
            size_t i = reps[j], prev = i ? i - 1 : rt->n - 1;
            double xi = chunk > 0 ? chunk / rate[i] : 0, xp = chunk > 0 ? chunk / rate[prev] : 0;
            rt->coll_bytes[i] += chunk * rounds;
            rt->coll_busy_s[i] += rounds * xi;
            rt->coll_recv_s[i] += rounds * xp;
        }
        return;
    }
    /* each edge's transfer time for this chunk, kept while the chunk and the
     * ring's rates stay (DDP's buckets all have one size but the last): a
     * division per device and bucket was a seventh of a run of 100,000 */
    if (!rt->ring_xfer && !(rt->ring_xfer = dp_malloc(rt->n * sizeof *rt->ring_xfer))) {
        prt_fail(rt, DP_ENOMEM, "out of memory");
        return;
    }
    if (!rt->ring_xfer_ok || rt->ring_xfer_caps != rt->ring_caps ||
        memcmp(&rt->ring_xfer_chunk, &chunk, sizeof chunk) != 0) {
        for (size_t i = 0; i < rt->n; i++)
            rt->ring_xfer[i] = chunk > 0 ? chunk / rt->ring_rate[i] : 0;
        rt->ring_xfer_chunk = chunk;
        rt->ring_xfer_caps = rt->ring_caps;
        rt->ring_xfer_ok = 1;
    }
    const double *xf = rt->ring_xfer;
    for (size_t i = 0; i < rt->n; i++) {
        size_t next = i + 1 < rt->n ? i + 1 : 0; /* (i + 1) % n */
        rt->coll_bytes[i] += chunk * rounds;
        rt->coll_busy_s[i] += rounds * xf[i];
        rt->coll_recv_s[next] += rounds * xf[i];
    }
}

/* The analytic mode sees neither other traffic nor capacity changes during
 * a collective: when a ring link carries other flows now or follows a
 * trace, the run gets the statistic analytic.approximate = 1 and one
 * warning on stderr (scenarios/README.md). */
/* 1 (and the warning, once per run) when one of these links follows a
 * trace or carries other flows now. */
static int approximate_on(prt *rt, const int *links, size_t nl)
{
    net *n = world_net(rt->w);
    for (size_t j = 0; j < nl; j++) {
        int tr = net_link_has_trace(n, links[j]);
        if (!tr && !net_link_active(n, links[j]))
            continue;
        rt->analytic_approx = 1;
        if (res_add_stat(rt->r, "analytic.approximate", RES_SCOPE_RUN, 0, 0, 1))
            prt_fail(rt, DP_ENOMEM, "out of memory");
        fprintf(stderr,
                "dpsim: warning: %s: analytic collective over link %s, which %s: its time is approximate "
                "(collective: flows is exact)\n",
                rt->r->policy, net_link_name(n, links[j]), tr ? "follows a trace" : "carries other traffic");
        return 1;
    }
    return 0;
}

/* Flag the run (once) for a link that ring edges of different latencies
 * share: the analytic mode gives each capacity / k, which max-min does not
 * when one of them starts earlier (docs/MODEL.md section 4). */
static void approximate_unequal(prt *rt, int link)
{
    rt->analytic_approx = 1;
    if (res_add_stat(rt->r, "analytic.approximate", RES_SCOPE_RUN, 0, 0, 1))
        prt_fail(rt, DP_ENOMEM, "out of memory");
    fprintf(stderr,
            "dpsim: warning: %s: analytic collective over link %s, which ring flows of unequal latencies "
            "share: its time is approximate (collective: flows is exact)\n",
            rt->r->policy, net_link_name(world_net(rt->w), link));
}

/* A subset's ring: the first finite link its edges of different latencies
 * share, or -1 (counts from count_links). */
static int subset_unequal(const coll *c)
{
    prt *rt = c->rt;
    net *n = world_net(rt->w);
    double *lk = lk_scratch(rt);
    if (!lk || count_links(c, 1))
        return -1;
    int found = -1;
    for (size_t i = 0; i < c->m; i++) {
        int links[NET_MAX_PATH];
        size_t nl;
        double lat;
        world_path(rt->w, (int)member(c, i) + 1, (int)member(c, (i + 1) % c->m) + 1, links, &nl, &lat);
        for (size_t j = 0; j < nl && found < 0; j++)
            if (isfinite(net_link_capacity(n, links[j])) &&
                lat_differs(lk, links[j], rt->coll_link_n[links[j]], lat))
                found = links[j];
    }
    for (size_t i = 0; i < c->m; i++) { /* the scratch back to NANs */
        int links[NET_MAX_PATH];
        size_t nl;
        double lat;
        world_path(rt->w, (int)member(c, i) + 1, (int)member(c, (i + 1) % c->m) + 1, links, &nl, &lat);
        for (size_t j = 0; j < nl; j++)
            lk[links[j]] = NAN;
    }
    count_links(c, -1);
    return found;
}

static void note_approximate(const coll *c)
{
    prt *rt = c->rt;
    if (rt->analytic_approx)
        return;
    if (!c->members && c->m == rt->n) { /* the full ring: its paths are cached */
        /* no traced link on it and no flow anywhere: nothing to look at
         * (an O(devices) walk per bucket was half of a 100,000-device run) */
        if (ring_fill(c))
            return;
        if ((rt->ring_traced || net_flows_active(world_net(rt->w)) > 0) &&
            approximate_on(rt, rt->ring_links, rt->n_ring_links))
            return;
        if (rt->cc->ring_unequal >= 0)
            approximate_unequal(rt, rt->cc->ring_unequal);
        return;
    }
    for (size_t i = 0; i < c->m; i++) {
        int links[NET_MAX_PATH];
        size_t nl;
        double lat;
        world_path(rt->w, (int)member(c, i) + 1, (int)member(c, (i + 1) % c->m) + 1, links, &nl, &lat);
        if (approximate_on(rt, links, nl))
            return;
    }
    int u = subset_unequal(c);
    if (u >= 0)
        approximate_unequal(rt, u);
}

double coll_analytic_s(prt *rt, coll_kind k, double bytes)
{
    coll c = {.rt = rt, .chunk = bytes / (double)rt->n, .rounds = rounds_of(k, rt->n), .m = rt->n};
    return analytic_s(&c);
}

static int start(prt *rt, coll *c, prt_coll_mode mode)
{
    coll_link(rt, c);
    for (size_t i = 0; rt->may_fail && i < c->m; i++) /* without failures all are up */
        if (!world_dev_is_up(rt->w, member(c, i)))
            c->broken = 1; /* a member is down: the collective blocks */
    coll_begin_acts(rt, c);
    c->pipelined = rt->coll_pipelined;
    if (c->rounds == 0)
        return prt_at(rt, sim_now(rt->e), finish, c);
    if (mode == PRT_COLL_ANALYTIC) {
        if (c->broken)
            return 0; /* blocked on a member that is down (finish never runs) */
        double now = sim_now(rt->e), t = analytic_s(c);
        if (t < 0) {
            coll_end_acts(rt, c);
            coll_free(c);
            return prt_fail(rt, DP_ENOMEM, "out of memory starting a collective");
        }
        /* a ring link down now (zero capacity: the analytic time is
         * infinite) or an outage before the analytic end: as flows, which
         * stall through the outage and go on after it (exact) */
        if (isfinite(t) && !ring_outage(c, now, now + t)) {
            note_approximate(c);
            if (analytic_record(c)) {
                coll_end_acts(rt, c);
                coll_free(c);
                return prt_fail(rt, DP_ENOMEM, "out of memory starting a collective");
            }
            return prt_at(rt, now + t, finish, c);
        }
    }
    if (c->pipelined)
        pipe_start(c); /* as flows, without a closed form */
    else
        start_round(c);
    return rt->failed ? DP_ENOMEM : 0;
}

void coll_set_progress(prt *rt, int pipelined)
{
    rt->coll_pipelined = pipelined != 0;
}

int coll_start(prt *rt, coll_kind k, double bytes, prt_coll_mode mode, prt_fn fn, void *ctx)
{
    coll *c = dp_malloc(sizeof *c);
    if (!c)
        return prt_fail(rt, DP_ENOMEM, "out of memory starting a collective");
    *c = (coll){.rt = rt,
                .chunk = bytes / (double)rt->n,
                .rounds = rounds_of(k, rt->n),
                .fn = fn,
                .ctx = ctx,
                .m = rt->n};
    return start(rt, c, mode);
}

int coll_start_among(prt *rt, coll_kind k, double bytes, prt_coll_mode mode, const size_t *members, size_t m,
                     prt_fn fn, void *ctx)
{
    for (size_t i = 0; i < m; i++)
        if (members[i] >= rt->n)
            return prt_fail(rt, DP_EINPUT, "collective member %zu is not a device (%zu devices)", members[i],
                            rt->n);
    coll *c = dp_malloc(sizeof *c);
    size_t *mem = m ? dp_malloc(m * sizeof *mem) : NULL;
    if (!c || (m && !mem)) {
        dp_free(c);
        dp_free(mem);
        return prt_fail(rt, DP_ENOMEM, "out of memory starting a collective");
    }
    if (m)
        memcpy(mem, members, m * sizeof *mem);
    *c = (coll){
        rt, m ? bytes / (double)m : 0, rounds_of(k, m), 0, 0, fn, ctx, m, mem, 0, NULL, NULL, 0, NULL, NULL,
        0};
    return start(rt, c, mode);
}

double coll_ring_events(size_t n)
{
    return n < 2 ? 0 : 4.0 * (double)(n - 1) * (double)n;
}

static int link_static(const trace *up, const trace *down, const scn_outages *o)
{
    return !up && !down && o->n == 0;
}

int coll_closed_form_possible(const scn_scenario *s)
{
    if (scn_has_failures(s))
        return 0;
    /* with an interconnect, rings cross its links (constant, no outages) */
    for (size_t g = 0; s->interconnect.bandwidth_Bps <= 0 && g < s->n_groups; g++)
        if (!link_static(s->groups[g].link.up_trace, s->groups[g].link.down_trace,
                         &s->groups[g].link.outages))
            return 0;
    /* a ring crossing sites may send several edges over one WAN link */
    for (size_t g = 0; g < s->n_groups; g++)
        if (s->groups[g].site >= 0 && s->groups[g].site != s->groups[0].site)
            return 0;
    return 1;
}

/* A ring collective as flows is 2(N-1) rounds of N flows, two events each:
 * past the event budget one collective alone would take hours (10^6
 * devices: 4e12 events), so refuse it up front, unless its rounds can run
 * in closed form (one event per collective, O(N) work). */
int coll_check_flows(const scn_scenario *s, const char *policy, prt_coll_mode mode, dp_err *err)
{
    double ring_events = coll_ring_events(s->n_devices);
    if (mode == PRT_COLL_FLOWS && ring_events > (double)PRT_MAX_EVENTS && !coll_closed_form_possible(s))
        return dp_err_set(
            err, DP_EINPUT,
            "one ring all-reduce over %zu devices as flows takes %.3g events, over the limit of "
            "%.3g events per run (rounds run in closed form only without failures, link traces, "
            "outages or sites); set policies.%s.collective=analytic",
            s->n_devices, ring_events, (double)PRT_MAX_EVENTS, policy);
    return 0;
}
