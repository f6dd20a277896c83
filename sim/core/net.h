/* net.h: links and flows with max-min fair sharing (docs/MODEL.md section 2).
 *
 * A link is one direction of a physical link with a capacity in bytes/s
 * (INFINITY = unconstrained, never a bottleneck; 0 = stalled).  A flow
 * carries `bytes` along a path of links.  Its first byte leaves after the
 * path latency; then, while active, its rate is its max-min fair share over
 * all active flows (progressive filling), further capped at `rate_cap_Bps`
 * (e.g. a TCP window / RTT).  Shares are recomputed only when a flow becomes
 * active or ends, or a capacity changes; changes at one instant are batched
 * into one recomputation at that instant (rates are piecewise constant
 * between events, so this is exact).
 *
 * A capacity of 0 stalls the flows on the link until capacity returns; the
 * net schedules no completion for a flow of rate 0, so nothing divides by
 * zero or spins.  If nothing else is pending the engine's queue empties and
 * the caller sees the stall.
 *
 * Ownership: net_new/net_free.  Traces given to net_link_add are copied.
 * Callbacks run inside engine handlers at the completion time; they may
 * start new flows.
 */
#ifndef DP_NET_H
#define DP_NET_H

#include "dp_common.h"
#include "engine.h"
#include "trace.h"
#include <stddef.h>
#include <stdint.h>

#define NET_MAX_PATH 8

typedef struct net net;

/* Called when flow `id` has delivered its last byte (sim_now() is that time). */
typedef void (*net_done_fn)(void *ctx, uint64_t id);

net *net_new(sim_engine *e, dp_err *err);
void net_free(net *n);

/* Add a link of constant capacity (or, when tr != NULL, capacity following
 * the trace from t = 0, scaled by 1).  Returns the link index (>= 0) or a
 * negative status.  name is copied (for messages; may be NULL). */
int net_link_add(net *n, double cap_Bps, const trace *tr, const char *name);
/* Set a link's capacity now (>= 0 or INFINITY). */
int net_link_set_capacity(net *n, int link, double cap_Bps);
double net_link_capacity(const net *n, int link);
/* An outage (down = 1) or its end: while down the link carries nothing
 * (capacity 0, its flows stall), whatever its trace or set capacity, which
 * apply again when it is back. */
int net_link_set_down(net *n, int link, int down);
/* The highest share of the link's capacity its flows used at once, in
 * [0, 1] (rates are constant between reshares, so this is exact). */
double net_link_peak_util(const net *n, int link);
/* The link's name: the one given to net_link_add, else the namer's
 * (net_set_namer, written into a per-thread buffer valid until the next
 * call on the thread), else "link". */
const char *net_link_name(const net *n, int link);
/* A hint: fetch link's record into the cache (sim_set_prefetch). */
void net_link_prefetch(const net *n, int link);
/* A hint for completions of many flows at one instant (a model sent to
 * every device): while the callbacks run in start order, fn(pctx, ctx) is
 * called a few flows ahead for each flow whose callback is `done`, to fetch
 * what that callback will touch.  fn must only read (it runs before the
 * callbacks ahead of it).  Up to NET_MAX_DONE_PREFETCH callbacks; DP_EINPUT
 * beyond. */
#define NET_MAX_DONE_PREFETCH 4
int net_set_done_prefetch(net *n, net_done_fn done, sim_prefetch_fn fn, void *pctx);
/* Names for links added without one, made when asked for: a world of 10^6
 * devices has 2x10^6 access links whose names only an error message or a
 * report ever reads.  fn writes link's name into buf (cap bytes) and
 * returns buf. */
typedef const char *(*net_namer_fn)(void *ctx, int link, char *buf, size_t cap);
void net_set_namer(net *n, net_namer_fn fn, void *ctx);
size_t net_link_count(const net *n);
/* 1 if the link's capacity follows a trace. */
int net_link_has_trace(const net *n, int link);
/* Flows on the link now, past their latency phase. */
int net_link_active(const net *n, int link);
/* Bytes delivered by finished flows that crossed the link, and by cut
 * flows up to their cut. */
double net_link_bytes(const net *n, int link);
/* Seconds during which the link carried at least one active flow (flows in
 * their latency phase do not count), up to now. */
double net_link_busy_s(const net *n, int link);

/* ---- links held by a closed-form schedule ----
 * A caller that computes its flows' progress itself (collective.c: a ring
 * whose links carry nothing else, each crossed by one of its flows, so
 * every flow runs at its own bottleneck rate) holds those links and adds
 * what they carried with net_link_account.  The first time anything could
 * change a held link's shares (a flow becoming active on it, a capacity
 * change, an outage) hook(ctx) runs first, at that instant, with the link
 * already released; it must start, as real flows, what its schedule still
 * had to send (and release its other links), so the results are those of
 * flows from the start (docs/MODEL.md section 2).
 * A held link that follows a trace has its trace suspended: its changes
 * fire no event while it is held (net_link_capacity keeps the value of
 * the last change before the hold) and the holder reads the schedule
 * with net_link_trace; when the link is released (net_link_release, or
 * before hook runs) the changes due meanwhile are applied (the capacity
 * is the trace's at its last change by now) and the next is scheduled,
 * at the same times as if it had never stopped.
 * net_link_hold: 0, or DP_EINPUT when the link is held, carries an active
 * flow, has zero or infinite capacity, or follows a trace under clock
 * domains (net_set_group). */
typedef void (*net_hold_fn)(void *ctx);
int net_link_hold(net *n, int link, net_hold_fn hook, void *ctx);
void net_link_release(net *n, int link);
/* The link's trace (NULL: none) and, in *next_change (may be NULL), when
 * its next change is due (INFINITY: none): the time of its pending event,
 * or while held (suspended) the time that event would have had.  Its
 * value from a change at t on is trace_value_at(tr, t), and the change
 * after is trace_next_change(tr, t, ...), as the net computes them. */
const trace *net_link_trace(const net *n, int link, double *next_change);
/* Add bytes, busy seconds and a flow's rate (for the peak utilisation) to
 * a link's statistics, as flows that crossed it alone would have. */
void net_link_account(net *n, int link, double bytes, double busy_s, double rate);
/* The same with the share of its capacity in use (for the peak, in
 * [0, 1]) given instead of a rate: a traced link held while its capacity
 * changed, whose holder took the highest share over the hold. */
void net_link_account_util(net *n, int link, double bytes, double busy_s, double util);
/* Links that move alike (a class of identical devices whose collectives
 * account only the representative's links, sim/policy/collective.c):
 * net_link_same: 1 when a and b have the same capacity and state (idle,
 * untraced, up) and bit-identical statistics; net_link_copy_stats gives
 * `to` the statistics of `from` (bytes, busy time, peak, and the aside and
 * folded ones), as if the same flows had crossed it. */
int net_link_same(const net *n, int a, int b);
void net_link_copy_stats(net *n, int from, int to);

/* Add bytes, busy seconds and a share of its capacity in use (for the
 * peak utilisation, in [0, 1]) to a link's statistics aside from what its
 * flows and holders carried: the analytic collectives' rings, whose
 * bytes a device's own figures count separately.  net_link_bytes and
 * net_link_busy_s leave them out; net_link_stat_bytes and
 * net_link_stat_busy_s (the link statistics) add them.  Folded with the
 * rest (net_fold): net_fold_add adds the aside part of the last epoch
 * folded again, the epoch a run repeats.  0 (also for no such link) or
 * DP_ENOMEM (nothing added). */
int net_link_account_aside(net *n, int link, double bytes, double busy_s, double util);
double net_link_stat_bytes(const net *n, int link);
double net_link_stat_busy_s(const net *n, int link);

/* Epoch subtotals (the runtime's clean epoch boundaries, where no flow is
 * active): every link's bytes and busy seconds since the last fold move
 * into its totals, which net_link_bytes / net_link_busy_s add to what
 * comes after; delta (2 per link: bytes, busy seconds; may be NULL)
 * receives what moved.  A run that repeats an epoch adds that epoch's
 * delta again with net_fold_add: the same additions, bit for bit, as
 * simulating it.  Before any fold the figures are the running ones alone.
 * net_fold: 0, or DP_EINPUT (nothing done) while a flow is active. */
int net_fold(net *n, double *delta);
void net_fold_add(net *n, const double *delta);

/* Start a flow now.  links: path (duplicates and infinite-capacity links
 * are allowed; at most NET_MAX_PATH).  bytes >= 0, latency_s >= 0,
 * rate_cap_Bps > 0 or INFINITY.  Returns a flow id (never 0), or 0 on bad
 * arguments or out of memory. */
uint64_t net_flow_start(net *n, const int *links, size_t n_links, double bytes, double latency_s,
                        double rate_cap_Bps, net_done_fn done, void *ctx);
/* ---- sharing strategies (docs/MODEL.md section 2, item 8) ----
 * How active flows split the links they share:
 *  - NET_SHARE_MAXMIN (the default): max-min fairness, every flow on a
 *    bottleneck gets the same share (progressive filling);
 *  - NET_SHARE_RTT: weighted max-min with weight 1 / RTT, as TCP's
 *    throughput goes and as SimGrid's CM02 model shares (its lmm solver
 *    gives a flow of "sharing penalty" p the rate x / p at a saturated
 *    link's level x, the penalty being the route's latency): on one
 *    bottleneck of capacity C, flow i gets C (1/RTT_i) / sum_j (1/RTT_j),
 *    and a flow held lower elsewhere (another link, its rate cap) leaves
 *    the rest to the others in the same proportions.
 * A flow's RTT is twice its latency at net_flow_start (what the TCP window
 * cap of world_transfer uses) unless net_flow_set_rtt says otherwise; an
 * RTT below NET_RTT_MIN counts as NET_RTT_MIN (a weight must be finite).
 * net_set_sharing: before any flow starts (DP_EINPUT after, or for an
 * unknown strategy).  The star fast path is exact for max-min only
 * (net_star.c, star_exact_for); under another strategy every reshare runs
 * progressive filling. */
typedef enum { NET_SHARE_MAXMIN = 0, NET_SHARE_RTT } net_sharing;
#define NET_RTT_MIN 1e-6
int net_set_sharing(net *n, net_sharing s);
net_sharing net_get_sharing(const net *n);
/* Set flow id's RTT (seconds >= 0) for its RTT weight: a caller that starts
 * a flow with less than its path's latency left (a collective handing its
 * closed-form round back to flows).  0, or DP_EINPUT for an unknown flow
 * or a bad RTT.  Under max-min it changes nothing. */
int net_flow_set_rtt(net *n, uint64_t id, double rtt_s);

/* Bytes a flow still has to deliver, as of now (its size while in its
 * latency phase; 0 once finished or unknown). */
double net_flow_remaining(const net *n, uint64_t id);
/* Cut flow `id` now (its device failed): no callback; *sent_bytes (may be
 * NULL) gets the bytes it delivered, which count as carried by every link
 * on its path.  0, or DP_EINPUT for an unknown or finished flow. */
int net_flow_cancel(net *n, uint64_t id, double *sent_bytes);
/* Current rate of an active flow (0 while in its latency phase or unknown). */
double net_flow_rate(const net *n, uint64_t id);
size_t net_flows_active(const net *n);  /* past latency, not finished */
size_t net_flows_pending(const net *n); /* still in their latency phase */
/* Trace changes scheduled on the engine: when they are all it holds, only
 * capacities can change from here on. */
size_t net_trace_events(const net *n);
/* 1 while a single run's re-share is queued at the current instant (a
 * trace change on a link no flow crosses still queues one: reshare_light);
 * 0 otherwise, and always in a shared world (its domains queue theirs). */
int net_reshare_pending(const net *n);
/* 1 if every flow is past its latency phase and crosses a link whose
 * capacity is 0 and never rises again (no trace, or a trace that stays at
 * 0): nothing but a caller's action can move them.  Names one such link in
 * buf (cap bytes).  0 with no flows, or if any flow may still move. */
int net_stuck_for_good(const net *n, char *buf, size_t cap);
/* Links added or capacities set, traced or taken down so far: a cache of
 * anything computed from capacities is valid while this is unchanged. */
uint64_t net_cap_changes(const net *n);
uint64_t net_reshares(const net *n); /* recomputations so far */
/* Make room for `flows` more flows than have ever been started, and touch
 * it, so that a burst of starts (a distribution to every device) finds its
 * memory mapped: for a caller with time to spare now (the runtime, while a
 * plan is made on another thread).  Changes nothing else: flows get the
 * same indices, ids and order.  0, DP_ENOMEM or DP_EINPUT (too many). */
int net_reserve(net *n, size_t flows);
/* Memory ran out computing shares or the ends of flows: every flow was left
 * stalled for the rest of the run (which then ends unfinished). */
int net_out_of_memory(const net *n);
/* Of those, the ones that ran progressive filling (a change on a link no
 * active flow crosses changes no share and skips it). */
uint64_t net_fills(const net *n);

/* ---- clock domains (engine_group.h; docs/MODEL.md "Many jobs in one
 * world") ----
 * With a group, each flow belongs to the domain current when it starts
 * (eg_current: the engine whose event runs, or the one entered), its
 * latency phase and completion are events on that engine, and its bytes
 * and finish are computed in that engine's frame: exactly its clock when
 * the domain itself acts, the global now converted when another does (a
 * flow sharing a link with another domain's).  Each domain has its own
 * completion and deferred-reshare events, so flows of domains that share
 * no link compute exactly as they would alone; a reshare that finds
 * another domain with a reshare pending at that instant leaves that
 * domain's flows to it.  The star fast path stays off.  Set before any
 * flow starts (the root engine is the net's own).  net_dom_flows: flows
 * of the current domain, active or in their latency phase.
 * net_dom_rebased: the current domain's clock restarted (sim_rebase) after
 * `span` local seconds; links it last touched that are still busy (with
 * another domain's flows) move their busy start into the new frame.
 * net_dom_retired: below.  net_set_group: 0, or DP_ENOMEM (each link's
 * domain is kept from then on; the net unchanged). */
struct eg_group;
int net_set_group(net *n, struct eg_group *g);
size_t net_dom_flows(const net *n);
void net_dom_rebased(net *n, double span);
/* Domain d's engine is retired (eg_retire: a job's run stopped, its flows
 * cut): a reshare it had pending (the cut changed other flows' shares)
 * runs in the current domain instead. */
void net_dom_retired(net *n, size_t d);

/* Recompute shares now if anything changed (normally done by an engine
 * event at the current instant; exposed for benchmarks and tests). */
void net_reshare_now(net *n);

/* ---- the star fast path (docs/MODEL.md section 2, item 7) ----
 * When at least `min_flows` flows are active (default 32), each crosses at
 * most one finite link that other active flows cross (a hub: a server NIC's
 * direction; at most 16 hubs), the shares are kept by one water-filling per
 * hub, O(log F) per event, instead of progressive filling, O(F) per event.
 * The results are the same up to rounding.  Anything else hands back to
 * progressive filling at once.
 * DPSIM_NET_NO_STAR=1 in the environment (read by net_new) turns it off.
 * net_set_star_min_flows: for tests and benchmarks (1: as soon as the
 * structure holds; SIZE_MAX: never).  net_star_on: 1 while it holds the
 * flows.  net_set_star_bulk_min: for tests (default 4096; 1: always), the
 * fewest flows placed at once that are sorted into runs instead of pushed
 * on heaps one by one (the same order, so the same results to the bit). */
void net_set_star_min_flows(net *n, size_t min_flows);
void net_set_star_bulk_min(net *n, size_t min_flows);
int net_star_on(const net *n);
/* Progressive filling reads its candidates as a sorted run, not a heap,
 * when they come out in order (the same pops, so the same bits); for
 * tests: net_set_fill_runs(n, 0) keeps every candidate on the heap, and
 * net_fill_runs counts the fills that used a run. */
void net_set_fill_runs(net *n, int on);
uint64_t net_fill_runs(const net *n);

#endif
