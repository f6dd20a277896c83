/* dplace.h: where each device's samples come from, when the dataset lives
 * in parts (scenario `dataset.parts`; docs/MODEL.md section 1, "Data where
 * it lives").  A pure planner over the scenario: no engine, no flows.
 *
 * The dataset's samples are numbered in the order of the parts; a part
 * held by a device group is cut into one slice per member (equal, the
 * first members one more).  Each part (or slice) is a *pool*: a range of
 * sample ids and its holders (nodes of world.h: 0 the server, 1 + d device
 * d, world_store_node for a site's storage; the part's replicas are more
 * holders of the same pool).  A device reads a pool from its nearest
 * holder that is up: itself (class 0, read in place), a holder at its own
 * site or in a world without sites (class 1), else the holder of least WAN
 * route latency (class 2; ties: the first holder listed).
 *
 * A plan gives each device `demand[d]` samples:
 *  - demand >= D (the dataset): every sample (replicated data), each pool
 *    from its nearest holder, without using any pool up;
 *  - otherwise a partition: every device first takes its own slice (pass
 *    0), then, device by device, pools of class 1 in pool order (pass 1),
 *    then pools of class 2, nearest first (pass 2); a pool is used up as it
 *    is taken.  So local data is used first and only what the demand
 *    requires moves, and the nearest copy moves.
 * What no pool can give (pools used up, or every holder of a pool down) is
 * the device's `lost` count.  Deterministic: the same inputs give the same
 * takes.  Tests: tests/test_data.c. */
#ifndef DP_DPLACE_H
#define DP_DPLACE_H

#include "scenario.h"

#include <stddef.h>
#include <stdint.h>

typedef struct dplace dplace;

/* A run of samples device d reads: ids [first, first + n) of pool `pool`,
 * from node `holder` (== 1 + d: read in place, nothing moves). */
typedef struct dpl_take {
    int32_t pool, holder;
    int64_t first, n;
} dpl_take;

typedef struct dpl_plan {
    dpl_take *takes; /* device d's: takes[off[d] .. off[d + 1]) */
    size_t *off;     /* n_devices + 1 */
    int64_t *lost;   /* per device: samples of its demand no pool could give */
    size_t n, cap;
} dpl_plan;

/* Pools from s->data (NULL when the scenario has none).  DP_EINPUT past
 * the planner's size (devices x pools above 2e8). */
dplace *dpl_new(const scn_scenario *s, dp_err *err);
void dpl_free(dplace *p);
size_t dpl_n_pools(const dplace *p);
/* Node `node` is gone (up 0: a site's storage failing, a device down) or
 * back (up 1): it holds nothing while gone. */
void dpl_holder_set(dplace *p, int node, int up);
/* Device d's nearest holder of pool k that is up, -1 when none; *cls its class. */
int dpl_holder_for(const dplace *p, size_t k, size_t d, int *cls);
/* Samples device d holds itself (its slice of a part on its group), 0 when none. */
int64_t dpl_own(const dplace *p, size_t d);
/* Samples in pool k, and its first sample id. */
int64_t dpl_pool_size(const dplace *p, size_t k);
int64_t dpl_pool_first(const dplace *p, size_t k);
/* The site of a node (-1: none). */
int dpl_node_site(const dplace *p, int node);
/* The byte term's rate (as C-ADP's a_i, each path as if alone): the
 * bottleneck rate in bytes/s from node `from` (numbered as above; p may be
 * NULL when from is 0, the server) to device d over the route the world
 * takes (holder's read link: storage `read`, the server's NIC, a device's
 * up link; the WAN route's links; d's down link), capped by the TCP window
 * over the path's RTT; *lat its one-way latency. */
double dpl_path_rate(const scn_scenario *s, const dplace *p, int from, size_t d, double *lat);
/* The rate at which device d receives samples it does not hold: from its
 * nearest holder other than itself that is up (dpl_holder_for's classes,
 * then least latency), from the server when p is NULL (no dataset.parts);
 * 0 when no other holder is left. */
double dpl_read_rate(const scn_scenario *s, const dplace *p, size_t d);
/* Plan demand[d] samples per device (skip[d] set, or NULL: every device).
 * Fills *out (dpl_plan_free frees it).  0 or DP_ENOMEM. */
int dpl_plan_make(dplace *p, const int64_t *demand, const int *skip, dpl_plan *out);
void dpl_plan_free(dpl_plan *pl);

#endif
