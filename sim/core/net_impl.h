/* net_impl.h: the network's state, shared by its own files only (net.c:
 * links; net_flow.c: flows and their ends; net_share.c: the sharing
 * strategies, by progressive filling; net_star.c: the star fast path).
 * Everything else sees net.h.
 *
 * Invariants:
 *  - Every ACTIVE flow has a rate set by the last reshare that changed it
 *    and a predicted finish time; its `remaining` is as of its own `tl`,
 *    brought up to date only when its own rate changes (flow_rate_to) or
 *    it is cut, so another flow's events never touch its arithmetic: jobs
 *    that share no link give their single-job figures bit for bit, and a
 *    reshare updates only the flows whose share moved.  (On the star path
 *    its sets' closed forms hold the flow instead: net_star.c.)
 *  - At most one completion event (the earliest finish) and at most one
 *    deferred reshare event are pending (with clock domains, net_set_group:
 *    per domain, on its engine, its flows' earliest finish in its frame).
 */
#ifndef DP_NET_IMPL_H
#define DP_NET_IMPL_H

#include "dp_heap.h"
#include "engine_group.h"
#include "log.h"
#include "net.h"

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
    unsigned stamp; /* reshare scratch (net_share.c) */
    double bytes;   /* delivered by finished flows, since the last net_fold */
    double busy_s;  /* closed busy intervals, likewise */
    double busy_since;
    /* held by a closed-form schedule (net_link_hold): hold(hold_ctx) runs
     * before anything changes its shares */
    net_hold_fn hold;
    /* star fast path (net_star.c) */
    uint32_t owner; /* 1 + the flow it is private to, or 0 */
    uint32_t hub;   /* the hub it is, or 0 */
    double peak;    /* highest share of its capacity in use after a reshare */
    /* the rest: 112 bytes in all, two per device at 10^5-10^6 devices (what
     * few links have is beside them: n->own, n->aside_st; what is rarely
     * read, n->cold) */
    double bytes_tot, busy_tot; /* folded by net_fold */
    /* reshare scratch */
    double R;
    double W; /* weighted sharing: the unfrozen flows' weights (nu counts them) */
    int nu, off, cnt;
    unsigned char deferred; /* on n->deferred: its new level is pushed once, after the bottleneck's freezes */
    unsigned char down;     /* an outage: carries nothing whatever its nominal capacity (link_down; in
                               what would be padding) */
} link;

_Static_assert(sizeof(link) <= 112, "a link record: two per device");

/* What a link's flows never read as they start, end or share, kept out of
 * the hot record: n->cold[i] beside n->links[i], grown with it by
 * cold_room (read through link_nominal; the hold context by unhold).
 * With clock domains (net_set_group) each link's domain, the frame its
 * busy_since is in, is in n->ldom[i], likewise (link_dom); without, no
 * array and every link is in domain 0. */
typedef struct link_cold {
    double nominal; /* from the trace or net_link_set_capacity */
    void *hold_ctx; /* what hold (net_link_hold) is called with */
} link_cold;

/* What only some links have, kept beside the links so that the two access
 * links of each of 10^5-10^6 devices do not carry them (net.c):
 * a name or a trace (links [0, n->owning) may have one; the devices'
 * links are named by n->namer), ... */
typedef struct link_own {
    char *name;
    trace *tr;
    struct trace_ctx *tctx;
} link_own;

/* ... and net_link_account_aside's sums (every link once it was called):
 * since the last fold, and folded. */
typedef struct link_aside {
    double bytes, busy, bytes_tot, busy_tot;
} link_aside;

/* A traced link's schedule (net.c): its pending change event `ev` at
 * next_t (0 / INFINITY: none).  Suspended while a closed-form schedule
 * holds the link (net_link_hold): no event, next_t kept; trace_resume
 * applies what came due meanwhile and schedules the rest. */
typedef struct trace_ctx {
    net *n;
    int link;
    int suspended;
    uint64_t ev;
    double next_t;
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
    /* small enums and flags as bytes (192 bytes in all, one per flow:
     * 10^5-10^6 of them) */
    uint8_t state; /* FLOW_FREE, FLOW_PENDING, FLOW_ACTIVE */
    uint8_t np;    /* links on its path, at most NET_MAX_PATH */
    uint8_t frozen;
    uint8_t sset; /* star fast path (net_star.c): STAR_OFF, STAR_NEW, STAR_C, STAR_U */
    union {
        uint32_t next_free; /* the free list's next, while free */
        uint32_t apos;      /* position in n->active, while active */
    };
    int path[NET_MAX_PATH];
    double bytes, remaining, rate, cap, finish_t;
    double tl; /* when `remaining` was last brought up to date (general path) */
    double w;  /* its weight under NET_SHARE_RTT: 1 / max(RTT, NET_RTT_MIN); 1 under max-min */
    net_done_fn done;
    void *ctx;
    uint64_t seq;
    uint64_t act_ev; /* the end of its latency phase, while pending */
    /* star fast path (net_star.c) */
    uint32_t hub;     /* its hub (0: it crosses none) */
    uint32_t dom;     /* its clock domain (net_set_group; 0 without): tl, finish_t are in its frame */
    double c;         /* private cap */
    double key, t0;   /* C: remaining `key` at t0; U: the virtual time it ends at */
    double fin;       /* C: finish time */
    uint64_t u_epoch; /* U: the first level epoch it ran at */
} flow;

_Static_assert(sizeof(flow) <= 192, "a flow record: one per flow, 10^5-10^6 of them");
_Static_assert(NET_MAX_PATH <= UINT8_MAX, "a flow's np is a byte");

typedef struct sh_ent {
    double key;
    uint64_t stamp;
    uint32_t idx;
} sh_ent;

/* A sorted run of heap entries (net_star.c): e[at, n) in order. */
#define SH_RUNS 4
typedef struct sh_run {
    sh_ent *e;
    size_t at, n, cap;
    int open; /* filling in the current bulk, not sorted yet */
} sh_run;

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
    /* beside each heap, SH_RUNS sorted runs, each read from its `at` on
     * (see sh_top): the entries of a bulk placement (sh_bulk_end), and
     * entries that come in order (net_star.c, sh_push) */
    sh_run run[4][SH_RUNS];
    int top_run[4]; /* where sh_top found the top: a run, or -1 (the heap) */
    /* sh_top's last answer per heap, kept until the heap or a flow in it
     * changes (sh_stale): a recomputation asks every hub's heaps, and
     * most of them (the other NIC direction) did not change */
    struct flow *top_f[4];
    int top_ok[4];
    size_t n_c, n_u;         /* flows in C and in U */
    struct star_epoch *lstk; /* levels since an epoch: L decreasing */
    size_t n_lstk, cap_lstk;
    size_t lcur; /* where star_level_since found its last answer (a hint) */
    /* the run and position star_fetch_ahead last fetched from, per heap */
    int ahead_run[4];
    size_t ahead_at[4];
    uint64_t epoch;
} star_hub;

typedef struct lvl {
    double level;
    int32_t who; /* >= 0: link index; < 0: -(active position) - 1 (a rate cap) */
} lvl;

/* A clock domain's own network events (net_set_group): its completion
 * event (at done_t, its frame) and its deferred reshare; its flows (active
 * or pending); full: its reshare must run progressive filling. */
typedef struct net_dom {
    uint64_t done_ev, reshare_ev;
    double done_t, first;
    size_t n_flows;
    uint64_t stamp;
    int full;
} net_dom;

struct net {
    sim_engine *e;
    link *links;
    size_t n_links, cap_links;
    link_cold *cold; /* per link: its rarely read fields (link_cold) */
    size_t cap_cold;
    uint32_t *ldom; /* per link, with clock domains only: its domain (link_dom) */
    size_t cap_ldom;
    size_t owning; /* links from 0 that may own a name or trace: n->own[0, owning) */
    link_own *own;
    size_t cap_own;
    flow **chunks;
    size_t n_chunks, cap_chunks;
    uint32_t n_flows; /* slots ever used */
    uint32_t free_head;
    uint32_t *active; /* flow indices */
    size_t n_active, cap_active;
    size_t n_pending;
    uint64_t seq;
    uint64_t reshare_ev, done_ev;
    int full; /* the pending reshare must recompute the shares */
    uint64_t reshares, fills;
    uint64_t cap_changes; /* capacity changes so far (net_cap_changes) */
    size_t trace_events;  /* trace changes scheduled on the engine (net_trace_events) */
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
    /* per flow index, the stamp its entries in its set's heaps carry (0: in
     * none): dense, so that telling a dead entry at a heap's or run's head
     * reads 8 bytes, not a flow record (sh_alive) */
    uint64_t *fst;
    size_t cap_fst;
    int star_oom;
    double done_t;  /* when the pending completion event is, if the star path set it */
    uint32_t *pend; /* STAR_NEW flows */
    size_t n_pend, cap_pend;
    int sh_bulk;     /* a bulk placement is on: pushes append to runs */
    sh_ent *run_tmp; /* radix sort scratch (sh_bulk_end) */
    size_t cap_run_tmp;
    int oom;              /* memory ran out computing shares or ends: every flow stalled for good */
    net_sharing sharing;  /* NET_SHARE_MAXMIN or NET_SHARE_RTT (net_set_sharing) */
    int aside;            /* net_link_account_aside was called */
    link_aside *aside_st; /* per link [0, n_aside), from its first call */
    size_t n_aside, cap_aside;
    double *adelta; /* per link: the aside bytes and busy seconds of the last epoch folded */
    size_t cap_adelta;
    int adelta_ok; /* adelta holds the last fold's */
    /* clock domains (net_set_group): NULL, or the group whose engines the
     * flows' events go to; doms[d] per engine index (root: 0) */
    eg_group *g;
    net_dom *doms;
    size_t cap_doms;
    uint64_t dstamp;
};

#define NO_FLOW UINT32_MAX

/* A finished flow and its seq, kept beside it so that sorting 10^6 flows
 * ending at one instant does not chase 10^6 pointers per comparison. */
typedef struct fin_ent {
    uint64_t seq;
    flow *f;
} fin_ent;

/* The star fast path's sets (net_star.c): a flow's `sset`. */
enum { STAR_OFF = 0, STAR_NEW, STAR_C, STAR_U };

/* Fewer active flows than this stay on progressive filling (small worlds
 * keep their numbers bit for bit). */
#define STAR_MIN_FLOWS 32

/* Placements of at least this many flows at once (entering the star path
 * with 10^6 flows after a model went to every device) go to runs: one
 * sort, then every completion reads the next entry instead of sifting a
 * heap of 10^6. */
#define STAR_BULK_MIN 4096

static inline int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    return need <= *cap ? 0 : dp_grow(p, cap, need, elem, 16);
}

/* Link i's rarely read fields (link_cold). */
static inline double link_nominal(const net *n, size_t i)
{
    return n->cold[i].nominal;
}
static inline int link_down(const net *n, size_t i)
{
    return n->links[i].down;
}
static inline size_t link_dom(const net *n, size_t i)
{
    return n->ldom ? n->ldom[i] : 0;
}

static inline flow *F(const net *n, uint32_t i)
{
    return &n->chunks[i >> CHUNK_BITS][i & (CHUNK - 1)];
}

/* f's stamp in the star path's sets (net_star.c). */
static inline uint64_t *SST(const net *n, const flow *f)
{
    return &n->fst[f->index];
}

/* LSD radix sorts (sort_finished, the star path's runs): digits of 11 bits
 * keep the count table in the cache. */
#define RADIX_BITS 11
#define RADIX_MASK ((1u << RADIX_BITS) - 1)

/* A flow's remaining bytes at `now` at its current rate (from its own tl). */
static inline double flow_rem_at(const flow *f, double now)
{
    double dt = now - f->tl;
    if (!(dt > 0) || !(f->rate > 0))
        return f->remaining;
    double r = isinf(f->rate) ? 0 : f->remaining - f->rate * dt;
    return r > 0 ? r : 0;
}

/* Bring a flow's remaining bytes up to `now` at its current rate. */
static inline void flow_catch_up(flow *f, double now)
{
    f->remaining = flow_rem_at(f, now);
    f->tl = now;
}

/* Its predicted finish from its remaining bytes as of `now` (tl == now). */
static inline double flow_finish(const flow *f, double now)
{
    if (f->remaining <= 0)
        return now;
    if (f->rate > 0)
        return isinf(f->rate) ? now : now + f->remaining / f->rate;
    return INFINITY; /* stalled on a zero-capacity link */
}

/* Give flow f `rate` from now.  An unchanged rate leaves its remaining
 * bytes, tl and finish time as they are (lazy progress: net_impl.h's
 * invariants); a new one first brings the bytes up to now at the old. */
static inline void flow_rate_to(flow *f, double rate, double now)
{
    if (rate == f->rate)
        return;
    flow_catch_up(f, now);
    f->rate = rate;
    f->finish_t = flow_finish(f, now);
}

static inline flow *flow_of(const net *n, uint64_t id)
{
    uint32_t i = (uint32_t)(id & 0xffffffffu);
    if (id == 0 || i >= n->n_flows)
        return NULL;
    flow *f = F(n, i);
    return (f->gen == (uint32_t)(id >> 32) && f->state != FLOW_FREE) ? f : NULL;
}

/* ---- clock domains (net_set_group; net.c) ----
 * Without a group every time is the engine's.  With one, each flow's
 * times are in its domain's frame (the engine its owner schedules on), and
 * a link's busy_since in the frame of the domain that last touched it: a
 * flow of the current domain computes with exactly that engine's now,
 * another's with the global now converted (eg_now_in), so flows of
 * domains that share nothing compute exactly as they would alone. */
static inline size_t cur_dom(const net *n)
{
    return n->g ? eg_current(n->g) : 0;
}
static inline sim_engine *dom_engine(const net *n, size_t d)
{
    return n->g ? eg_engine(n->g, d) : n->e;
}
static inline double dom_now(const net *n, size_t d)
{
    return n->g ? eg_now_in(n->g, d) : sim_now(n->e);
}
static inline double flow_now(const net *n, const flow *f)
{
    return n->g ? eg_now_in(n->g, f->dom) : sim_now(n->e);
}
/* Domain d's record (grown as engines are added); NULL out of memory. */
net_dom *dom_of(net *n, size_t d);
/* The current domain's now, link l's busy_since brought into its frame. */
double link_now(net *n, link *l);

static inline void link_busy_inc(net *n, link *l)
{
    if (l->n_active++ == 0)
        l->busy_since = n->g ? link_now(n, l) : sim_now(n->e);
}

static inline void link_busy_dec(net *n, link *l)
{
    if (--l->n_active == 0)
        l->busy_s += (n->g ? link_now(n, l) : sim_now(n->e)) - l->busy_since;
}

/* net.c: links */
void unhold(net *n, int link_i);
void trace_suspend(net *n, int link_i);
void trace_resume(net *n, int link_i);
void flow_links_end(net *n, flow *f, double bytes);

/* net_flow.c: flows and their ends */
void active_remove(net *n, flow *f);
void on_done(sim_engine *e, void *ctx, uint64_t id);
void report_done(net *n, size_t nf);
void dpf_hint(const net *n, const flow *f);

/* net_share.c: when shares are recomputed, and how */
void mark_dirty(net *n);
void mark_touched(net *n);
void stall_all(net *n);

/* net_star.c: the star fast path (its own header comment) */
void star_free(net *n);
double star_rem(const net *n, const flow *f, double now);
double star_rate(const net *n, const flow *f);
void star_leave(net *n);
int star_try_enter(net *n);
void star_activate(net *n, flow *f);
void star_cap_change(net *n, int li, double new_cap);
double star_cancel(net *n, flow *f);
int star_reshare(net *n);
void star_on_done(net *n);
double star_peak_util(const net *n, int li);

#endif
