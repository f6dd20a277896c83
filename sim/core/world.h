/* world.h: the platform a policy runs on (docs/MODEL.md section 1), built from a
 * scenario: the engine, the network links, the compute model.  Kept apart
 * from what runs on it (policies), as SimGrid keeps platform and deployment
 * apart.
 *
 * Nodes: 0 is the server (rank 0), 1..N the devices in scenario order,
 * N+1..N+S the regional servers (scenario `servers:`, in file order).
 * Links: each device's access link (up: device -> network, down), the
 * server NIC (when finite), a WAN link per direction for each site pair,
 * and, when the scenario has an interconnect, each device's peer link pair.
 *
 * Paths:
 *   server -> device i : server NIC up, WAN(site(server) -> site(i)), i down
 *     (a regional server: its own NIC, from its site; between two servers
 *     their NICs and the WAN)
 *   device i -> server : i up, WAN, server NIC down
 *   device i -> device j (peer traffic, collectives): i up, WAN, j down; or
 *     with an interconnect: i peer-up, WAN, j peer-down.
 * WAN: a site pair's own link when the scenario lists one; otherwise the
 * route over other sites' WAN links with the least total latency (fewest
 * links among equal ones), at most WORLD_MAX_WAN_HOPS links; sites that no
 * chain of WAN links connects have a direct, unconstrained path.
 * Path latency is the sum of the one-way latencies of the access links on
 * it (the server's access is its NIC, latency 0) and the WAN links.
 *
 * Ownership: world_new/world_free; the scenario is borrowed and must
 * outlive the world.
 */
#ifndef DP_WORLD_H
#define DP_WORLD_H

#include "compute.h"
#include "engine.h"
#include "net.h"
#include "scenario.h"

typedef struct world world;

/* WAN links a path may cross: the rest of NET_MAX_PATH are the two ends. */
#define WORLD_MAX_WAN_HOPS (NET_MAX_PATH - 2)

/* DP_EINPUT (naming the sites) when two sites in use are connected only
 * over more than WORLD_MAX_WAN_HOPS WAN links. */
world *world_new(const scn_scenario *s, uint64_t seed, dp_err *err);

/* The WAN route from site a to site b (see above) from the scenario alone,
 * for planners: wan_idx[h] indexes s->wan, forward[h] is 1 when hop h runs
 * site_a -> site_b; both hold WORLD_MAX_WAN_HOPS.  *n_hops = 0 when a == b,
 * a site is -1 or no WAN links connect them.  0, DP_EINPUT (only longer
 * routes) or DP_ENOMEM. */
int world_wan_route(const scn_scenario *s, int a, int b, size_t *wan_idx, int *forward, size_t *n_hops,
                    double *latency_s);
void world_free(world *w);
/* Many jobs in one world (sim/jobs/): a view of `parent` for one job, whose
 * devices 0..n-1 are the parent's map[0..n) (sub is the job's scenario
 * over those devices, in that order).  It shares the parent's engine,
 * network, server and WAN: its flows contend with every other view's.  Its
 * compute model is sub's, its transfers are tracked so that world_cut_all
 * cuts its own flows only; its devices never fail (jobs refuse
 * `availability`).  Free it before the parent. */
world *world_new_view(world *parent, const scn_scenario *sub, const size_t *map, uint64_t seed, dp_err *err);
/* A view's events go to e instead of the parent's engine: the job's own
 * clock domain (engine_group.h; the network is told by net_set_group).
 * Before anything is scheduled on the view. */
void world_view_set_engine(world *view, sim_engine *e);

sim_engine *world_engine(world *w);
net *world_net(world *w);
cmp_model *world_compute(world *w);

/* Links and latency of the path from node `from` to node `to` (from != to).
 * links must hold NET_MAX_PATH entries.  0 or DP_EINPUT. */
int world_path(const world *w, int from, int to, int *links, size_t *n_links, double *latency_s);
/* A hint: fetch what a transfer to or from device d (0-based) reads first,
 * its route and its up link (and its down link when `down`), without
 * reading them (their indices follow from d). */
void world_prefetch_dev(const world *w, size_t d, int down);
/* The node of a site's storage (cache 0) or cache (cache 1), a sender
 * only: its path starts on its read link (dataset.storage / .caches
 * `read`, when finite), then the WAN to the receiver's site and the
 * receiver's access link; -1 in a world without scenario data or sites. */
int world_store_node(const world *w, int site, int cache);
/* The node of device d's server: its site's regional server, else 0. */
int world_server_of(const world *w, size_t d);
/* Start a transfer of `bytes` from node to node along world_path, with the
 * TCP window cap (window / RTT, RTT = 2 x path latency) when configured.
 * Returns the flow id or 0 on failure. */
uint64_t world_transfer(world *w, int from, int to, double bytes, net_done_fn done, void *ctx);

/* fn(ctx, sdev, rdev, on) runs when a transfer starts (on = 1) and when it
 * ends, is cancelled or cut (on = 0), sdev and rdev being the devices
 * (0-based) that send and receive it (-1: not a device; a flow started
 * with world_flow_start: its first link's device if that is an up link,
 * its last link's if a down link).  One hook (the runtime's energy
 * records); with it every transfer is tracked. */
typedef void (*world_flow_fn)(void *ctx, int sdev, int rdev, int on);
void world_on_flow(world *w, world_flow_fn fn, void *ctx);

/* net_flow_start on the world's network; in a view (world_new_view) the
 * flow is tracked, so world_cut_all cuts it with the view's transfers. */
uint64_t world_flow_start(world *w, const int *links, size_t nl, double bytes, double delay_s, double cap,
                          net_done_fn done, void *ctx);

/* ---- the dynamic world (scenario availability and outages) ----
 * fn(ctx, d, up) runs when device d goes down (up = 0; its transfers have
 * been cut) or comes back (up = 1).  One hook; the runtime's. */
typedef void (*world_dev_fn)(void *ctx, size_t d, int up);
void world_on_device(world *w, world_dev_fn fn, void *ctx);
int world_dev_is_up(const world *w, size_t d);
/* When device d changes state next (INFINITY: never, e.g. a trace that
 * ends down: the device is gone for good). */
double world_dev_next_change(const world *w, size_t d);
double world_dev_down_since(const world *w, size_t d); /* its last failure */
/* Device d goes down (up = 0: its transfers are cut, a failure counted) or
 * comes back, by a process outside the world (a battery: the runtime's
 * energy records), the hook told as for the world's own; next_s is its
 * next change as far as that process knows (INFINITY: none, for good).
 * 1 if its state changed.  Only for devices with no availability process
 * of their own, in worlds with failures (else nothing happens). */
int world_dev_set(world *w, size_t d, int up, double next_s);
int world_failures(const world *w);     /* failures so far */
double world_cut_bytes(const world *w); /* bytes cut flows had sent */
/* Cancel one transfer (no callback); *sent_bytes (may be NULL) gets what
 * it delivered.  0, or DP_EINPUT for an unknown or finished one. */
int world_cancel(world *w, uint64_t id, double *sent_bytes);
/* Cut every transfer in flight (a job restart), with no callbacks.  Only
 * in worlds with failures (others do not track transfers). */
void world_cut_all(world *w);

/* Whose link `link` is: *dev = the device index (dir 0 up, 1 down, 2 peer
 * up, 3 peer down), -1 the server NIC (dir 0 up, 1 down), -2 a WAN link
 * (dir 0 the direction listed in the scenario, 1 the reverse), -3 a site's
 * storage (dir 0) or cache (dir 1) read link. */
void world_link_owner(const world *w, int link, int *dev, int *dir);

/* 1 if link has a scenario outage (link.outages of a device's group, a WAN
 * link's outages) overlapping [t0, t1], else 0 (O(outages of that group or
 * WAN link); 0 at once in a world without outages). */
int world_link_outage_in(const world *w, int link, double t0, double t1);
int world_has_outages(const world *w); /* any scenario link outage at all */

/* Link indices of device d (0-based) for statistics. */
int world_dev_up(const world *w, size_t d);
int world_dev_down(const world *w, size_t d);
int world_dev_peer_up(const world *w, size_t d);   /* -1 without interconnect */
int world_dev_peer_down(const world *w, size_t d); /* -1 without interconnect */

#endif
