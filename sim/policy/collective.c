/* collective.c: ring collectives over all devices (MODEL.md section 4).
 *
 * Ring order is scenario order: device d sends to d+1, the last to the
 * first.  A round starts N flows of bytes/N at once and ends when the last
 * of them ends, so a slow or shared link holds the whole ring back, as in
 * NCCL's ring.  The analytic mode gives the same time without flows when no
 * link is shared: each round lasts max over ring edges of
 * (path latency + (bytes/N) / path bottleneck), taken at the collective's
 * start; it cannot see sharing or capacity changes during the collective,
 * and counts the bytes but not the link busy time.
 */
#include "policy.h"

#include <math.h>

/* Live collectives form a list on rt->coll_live, so a run that stops
 * mid-collective (a stall on a dead link, a failure) frees them with the
 * runtime; their flows never complete to free them. */
typedef struct coll {
    prt *rt;
    double chunk;
    int rounds, round, pending;
    prt_fn fn;
    void *ctx;
    struct coll *prev, *next;
} coll;

static void coll_unlink(coll *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        c->rt->coll_live = c->next;
    if (c->next)
        c->next->prev = c->prev;
}

void coll_free_all(prt *rt)
{
    for (coll *c = rt->coll_live, *nx; c; c = nx) {
        nx = c->next;
        dp_free(c);
    }
    rt->coll_live = NULL;
}

static int rounds_of(coll_kind k, size_t n)
{
    if (n < 2)
        return 0;
    return k == COLL_ALLREDUCE ? 2 * (int)(n - 1) : (int)(n - 1);
}

static void coll_begin_acts(prt *rt)
{
    if (rt->coll_active++ == 0)
        for (size_t d = 0; d < rt->n; d++)
            if (rt->act[d] == RES_ACT_WAIT)
                prt_set_act(rt, d, RES_ACT_SEND);
}

static void coll_end_acts(prt *rt)
{
    if (--rt->coll_active == 0)
        for (size_t d = 0; d < rt->n; d++)
            if (rt->act[d] == RES_ACT_SEND)
                prt_set_act(rt, d, RES_ACT_WAIT);
}

static void finish(prt *rt, void *ctx)
{
    coll *c = ctx;
    prt_fn fn = c->fn;
    void *fctx = c->ctx;
    coll_unlink(c);
    dp_free(c);
    coll_end_acts(rt);
    fn(rt, fctx);
}

static void start_round(coll *c);

static void on_flow(void *ctx, uint64_t id)
{
    (void)id;
    coll *c = ctx;
    if (--c->pending > 0)
        return;
    if (++c->round < c->rounds)
        start_round(c);
    else
        finish(c->rt, c);
}

static void start_round(coll *c)
{
    prt *rt = c->rt;
    c->pending = (int)rt->n;
    for (size_t d = 0; d < rt->n; d++) {
        int to = (int)((d + 1) % rt->n) + 1;
        if (!world_transfer(rt->w, (int)d + 1, to, c->chunk, on_flow, c)) {
            prt_fail(rt, DP_ENOMEM, "out of memory starting a collective");
            return;
        }
    }
}

/* Latency and bottleneck capacity of ring edge d -> d+1 now. */
static void edge(prt *rt, size_t d, double *lat, double *cap)
{
    int links[NET_MAX_PATH];
    size_t nl;
    net *n = world_net(rt->w);
    *cap = INFINITY;
    world_path(rt->w, (int)d + 1, (int)((d + 1) % rt->n) + 1, links, &nl, lat);
    for (size_t j = 0; j < nl; j++)
        *cap = fmin(*cap, net_link_capacity(n, links[j]));
    if (rt->s->network.tcp_window_bytes > 0 && *lat > 0)
        *cap = fmin(*cap, rt->s->network.tcp_window_bytes / (2 * *lat));
}

/* Seconds edge d's flow of `chunk` bytes transfers (latency excluded). */
static double edge_transfer_s(prt *rt, size_t d, double chunk)
{
    double lat, cap;
    edge(rt, d, &lat, &cap);
    return chunk > 0 ? chunk / cap : 0;
}

double coll_analytic_s(prt *rt, coll_kind k, double bytes)
{
    int rounds = rounds_of(k, rt->n);
    if (!rounds)
        return 0;
    double chunk = bytes / (double)rt->n, worst = 0;
    for (size_t d = 0; d < rt->n; d++) {
        double lat, cap;
        edge(rt, d, &lat, &cap);
        double t = lat + (chunk > 0 ? chunk / cap : 0);
        if (t > worst)
            worst = t;
    }
    return rounds * worst;
}

int coll_start(prt *rt, coll_kind k, double bytes, scn_collective_mode mode, prt_fn fn, void *ctx)
{
    coll *c = dp_malloc(sizeof *c);
    if (!c)
        return prt_fail(rt, DP_ENOMEM, "out of memory starting a collective");
    *c = (coll){rt, bytes / (double)rt->n, rounds_of(k, rt->n), 0, 0, fn, ctx, NULL, rt->coll_live};
    if (c->next)
        c->next->prev = c;
    rt->coll_live = c;
    coll_begin_acts(rt);
    if (c->rounds == 0)
        return prt_at(rt, sim_now(rt->e), finish, c);
    if (mode == SCN_COLL_ANALYTIC) {
        double t = coll_analytic_s(rt, k, bytes);
        if (!isfinite(t)) {
            coll_unlink(c);
            dp_free(c);
            return prt_fail(rt, DP_ERUN, "a ring link has zero capacity: the collective never ends");
        }
        /* every device sends and receives in every round; its links are
         * busy for the round's transfer time, not the slowest edge's */
        for (size_t d = 0; d < rt->n; d++) {
            rt->coll_bytes[d] += c->chunk * c->rounds;
            double busy = c->rounds * edge_transfer_s(rt, d, c->chunk);
            rt->coll_busy_s[d] += busy;               /* d's up link: edge d */
            rt->coll_recv_s[(d + 1) % rt->n] += busy; /* its successor's down link */
        }
        return prt_at(rt, sim_now(rt->e) + t, finish, c);
    }
    start_round(c);
    return rt->failed ? DP_ENOMEM : 0;
}
