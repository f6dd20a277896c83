/* efficiency_tap.h: an eff_log (efficiency.h) filled from the runtime's
 * update stream, the same calls the learner gets (learner.h: step, sync,
 * average, average_begin/end, push, lose), so every policy that reports
 * its updates gets the analytic learner too.
 *
 * What each call logs:
 *   step(d, samples)   in SYNC or ASYNC mode the samples wait for d's next
 *                      sync or push; in LOCAL mode they are one local step
 *                      of d (steps and samples since d's last average into
 *                      the global model);
 *   sync(members)      one synchronous update of the members' waiting
 *                      samples (M = their sum; nothing when 0);
 *   push(d, s)         one asynchronous update of d's waiting samples at
 *                      staleness s;
 *   average(members, into_global)  into the global model: one average of
 *                      the members with local steps since their last one:
 *                      M_step = the sum of their mean batches, H = their
 *                      samples / M_step (so H x M_step is what they
 *                      consumed), rho = participants / devices; an average
 *                      not into the global model (a site's) logs nothing
 *                      and keeps the steps counting towards the global one;
 *   average_begin / average_end  FL-SGD's background average: the members'
 *                      steps up to begin are averaged at end;
 *   lose(d)            d's waiting samples and local steps are gone.
 * Times are absolute simulated seconds, epochs 1-based (the runtime's).
 */
#ifndef DP_EFFICIENCY_TAP_H
#define DP_EFFICIENCY_TAP_H

#include "learn/efficiency.h"

#include <stddef.h>

typedef struct eff_tap eff_tap;
typedef enum { EFF_TAP_SYNC = 0, EFF_TAP_LOCAL, EFF_TAP_ASYNC } eff_tap_mode;

/* A tap for a run of n devices, appending to l (borrowed).  NULL when out
 * of memory. */
eff_tap *eff_tap_new(eff_log *l, size_t n);
void eff_tap_free(eff_tap *t);
void eff_tap_mode_set(eff_tap *t, eff_tap_mode m);
/* Each returns 0 or a negative DP_E* (out of memory, or a record the log
 * refuses: time or epoch going back).  members NULL: every device. */
int eff_tap_step(eff_tap *t, size_t d, double samples);
int eff_tap_sync(eff_tap *t, double time, int epoch, const size_t *members, size_t m);
int eff_tap_push(eff_tap *t, double time, int epoch, size_t d, double staleness);
int eff_tap_average(eff_tap *t, double time, int epoch, const size_t *members, size_t m, int into_global);
int eff_tap_average_begin(eff_tap *t, const size_t *members, size_t m);
int eff_tap_average_end(eff_tap *t, double time, int epoch, const size_t *members, size_t m);
void eff_tap_lose(eff_tap *t, size_t d);
/* Versions: every logged sync and global average, and every push (even an
 * empty one), is one update of the global model; a pull records the
 * version d read.  Without the learner, a push's staleness is
 * eff_tap_staleness(d) before the push, counted as the learner counts it. */
void eff_tap_pull(eff_tap *t, size_t d);
long eff_tap_staleness(const eff_tap *t, size_t d);

#endif
