/* engine_group.h: clock domains: one root engine and child engines run in
 * one global order (sim/jobs/: the jobs runner's world on the root, each
 * run of a job on a child of its own).
 *
 * Why: a single run restarts its engine's clock at 0 at every clean epoch
 * boundary (sim_rebase) and computes every later time from small local
 * times; many jobs on one engine could not (another job always has events
 * pending), so their times were absolute and rounded differently.  With a
 * child engine each, a job computes in exactly the frame its single run
 * does: its local 0 is the global time `origin` (sim_origin; a rebase adds
 * to it), and only the ordering between domains, and what domains share
 * (the network: net_set_group), converts between frames.
 *
 * Order: the next event is the one of least origin + local time over the
 * engines; ties go to the children, lower index first (they count from 1
 * in the order they were added), then to the root (0): what the jobs did
 * at an instant is done before the root acts at it.  Deterministic.  The current domain is
 * the one whose event runs (eg_step), or the one entered (eg_enter: the
 * root acting for a job, e.g. starting its policy); outside both, the
 * root.  Entering syncs the engine's clock to the global now in its
 * frame, so what it schedules is not in the past.
 *
 * Ownership: the root is borrowed; children are the group's: freed when
 * retired (their queued events never run; whoever kept the engine must
 * not use it again) or by eg_free.
 */
#ifndef DP_ENGINE_GROUP_H
#define DP_ENGINE_GROUP_H

#include "engine.h"

typedef struct eg_group eg_group;

eg_group *eg_new(sim_engine *root, dp_err *err);
void eg_free(eg_group *g);
/* A child engine whose local 0 is the global time `origin`; ctx is the
 * caller's (eg_ctx).  Its index is eg_count() - 1 before the call.  NULL
 * with err set when out of memory. */
sim_engine *eg_add(eg_group *g, double origin, void *ctx, dp_err *err);
/* Never run engine d's events again (a job's run stopped): the engine is
 * freed (eg_engine gives NULL), its origin kept (eg_origin). */
void eg_retire(eg_group *g, size_t d);
/* The global time of domain d's local 0 (its engine's origin; a retired
 * one's as it was). */
double eg_origin(const eg_group *g, size_t d);
size_t eg_count(const eg_group *g);
sim_engine *eg_engine(const eg_group *g, size_t d);
void *eg_ctx(const eg_group *g, size_t d);
/* The current domain (see above). */
size_t eg_current(const eg_group *g);
/* The global time now: of the last event run (0 before any). */
double eg_now(const eg_group *g);
/* The global now in domain d's frame (exactly d's clock while d is the
 * current domain). */
double eg_now_in(const eg_group *g, size_t d);
/* Make d the current domain (its clock synced); returns the previous one,
 * for eg_leave. */
size_t eg_enter(eg_group *g, size_t d);
void eg_leave(eg_group *g, size_t prev);
/* Run the earliest event of all the engines.  1 if one ran (*who: its
 * engine; *stopped: its handler, or one of an engine entered, asked
 * sim_stop), 0 if none is left.  Afterwards the root is current; its
 * clock is at the global now after a root event or a stop (else behind:
 * eg_enter(g, 0) syncs it). */
int eg_step(eg_group *g, size_t *who, int *stopped);
/* The first engine error (sim_error) of any engine not retired, or 0. */
int eg_error(const eg_group *g);
/* Events run by all engines; events pending in those not retired. */
uint64_t eg_events(const eg_group *g);
size_t eg_pending(const eg_group *g);

#endif
