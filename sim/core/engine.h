/* engine.h: the discrete-event core (after Redis ae.h, for simulated time).
 *
 * Events are (time, sequence) ordered: two events at the same simulated
 * time fire in the order they were scheduled, so runs are deterministic.
 * An event is named by an id; sim_cancel marks it and the heap drops it
 * lazily (when it surfaces, or in a compaction once cancelled entries
 * outnumber live ones), so a handler may cancel any pending event,
 * including ones at the current time.  The engine owns no RNG and reads no
 * clock.
 *
 * Ownership: sim_engine_new / sim_engine_free.  ctx pointers are borrowed;
 * the engine never frees them.
 */
#ifndef DP_ENGINE_H
#define DP_ENGINE_H

#include "dp_common.h"
#include <stdint.h>

typedef struct sim_engine sim_engine;

/* id 0 is never a valid event id. */
typedef void (*sim_handler)(sim_engine *e, void *ctx, uint64_t id);

sim_engine *sim_engine_new(dp_err *err);
void sim_engine_free(sim_engine *e);

/* Schedule h(ctx) at absolute time t_s (>= now; earlier times are clamped to
 * now, NaN is refused).  Returns the event id, or 0 on allocation failure
 * or a NaN time. */
uint64_t sim_at(sim_engine *e, double t_s, sim_handler h, void *ctx);
/* 0, or the status of the first sim_at that failed (DP_ENOMEM: the queue
 * is full or memory ran out; DP_EINPUT: a NaN time).  Sticky: once set,
 * sim_step runs nothing more, so a run whose future could not be scheduled
 * stops instead of finishing with a silently wrong result.  Also DP_ENOMEM
 * (not sticky) while the queue looks empty only because taking its next
 * events into the heap ran out of memory. */
int sim_error(const sim_engine *e);
/* Schedule after a delay (>= 0). */
uint64_t sim_after(sim_engine *e, double delay_s, sim_handler h, void *ctx);
/* Cancel a pending event.  Returns 1 if it was pending, 0 otherwise (already
 * fired, already cancelled, unknown). */
int sim_cancel(sim_engine *e, uint64_t id);

double sim_now(const sim_engine *e);
/* Run the earliest pending event.  Returns 1 if one ran, 0 if none is left. */
int sim_step(sim_engine *e);
/* Run until no event is left, or the next is later than until_s, or
 * sim_stop was called.  Returns the number of events run. */
uint64_t sim_run(sim_engine *e, double until_s);
/* Ask sim_run to return after the current handler. */
void sim_stop(sim_engine *e);
/* Pending (not cancelled) events. */
size_t sim_pending(const sim_engine *e);
/* Events run so far. */
uint64_t sim_events_run(const sim_engine *e);
/* A hint, never a change of behaviour: when the event after the one about
 * to run is h's, fn(pctx, its ctx) runs first, to issue prefetches of the
 * memory h will touch (with 10^6 devices an event's records are cache
 * misses; fetched while the current event runs, they are not).  fn must
 * not read what it prefetches nor change anything.  0 or DP_ENOMEM. */
typedef void (*sim_prefetch_fn)(void *pctx, void *ctx);
int sim_set_prefetch(sim_engine *e, sim_handler h, sim_prefetch_fn fn, void *pctx);
/* Time of the earliest pending event (INFINITY when none). */
double sim_next_time(sim_engine *e);
/* Restart the clock at 0: every pending event's time becomes 0 and now
 * becomes 0.  Allowed only when every pending (not cancelled) event is at
 * now, so no time is rounded and the order of events is unchanged; the
 * caller keeps the offset (the runtime's epoch base, runtime.c).  0, or
 * DP_EINPUT (nothing changed) when some pending event is later than now.
 * Call it between events or from a handler. */
int sim_rebase(sim_engine *e);

/* ---- clock domains (engine_group.h) ----
 * An engine in a group is one clock domain: its local time 0 is the global
 * time `origin` (0 for a lone engine).  sim_rebase adds the local time it
 * drops to the origin, so origin + local time goes on.  The group is told
 * (touch) when a sim_at or sim_cancel may change the engine's earliest
 * time, and reads (and clears) a stop asked with sim_stop.  sim_set_now
 * moves the clock forward to t (the group's global now, in this frame)
 * when no pending event is earlier; later times than the next event are
 * clamped to it, earlier ones change nothing. */
typedef void (*sim_touch_fn)(void *ctx, sim_engine *e);
void sim_set_touch(sim_engine *e, sim_touch_fn fn, void *ctx);
double sim_origin(const sim_engine *e);
void sim_set_origin(sim_engine *e, double origin);
void sim_set_now(sim_engine *e, double t);
int sim_take_stop(sim_engine *e);

#endif
