/* compute.h: how long a device takes to process a batch (docs/MODEL.md section 3).
 *
 * The base time comes from the scenario's compute model (scn_batch_time).
 * On top: optional multiplicative noise, lognormal with mean 1 and the
 * group's coefficient of variation, drawn from the device's own GSL stream
 * (seeded from the run seed and the device index, so adding a device does
 * not change the others' draws); straggler episodes (the group's
 * `stragglers`, their own stream); and an optional speed trace, a factor over
 * time: work of w seconds at factor 1 started at t ends when the integral of
 * the factor from t reaches w.
 *
 * Ownership: cmp_new/cmp_free; the scenario is borrowed and must outlive it.
 */
#ifndef DP_COMPUTE_H
#define DP_COMPUTE_H

#include "dp_common.h"
#include "scenario.h"

#include <gsl/gsl_rng.h>

typedef struct cmp_model cmp_model;

cmp_model *cmp_new(const scn_scenario *s, uint64_t seed, dp_err *err);
void cmp_free(cmp_model *c);

/* Seconds for device `dev` (0-based, scenario order) to process the share
 * `part` (0, 1] of a batch of n samples, starting at simulated time
 * t_start_s.  Draws one noise sample when the device has noise.  INFINITY if
 * its speed trace stays at 0. */
double cmp_batch_s(cmp_model *c, size_t dev, int n, double t_start_s, double part);

/* 1 when device dev's batch times depend on the batch size alone (no
 * noise, no stragglers, no speed trace): cmp_batch_s is then a pure
 * function of n and part, which lets the runtime put a run of batches
 * into one event (prt_compute_left). */
int cmp_plain(const cmp_model *c, size_t dev);
/* A hint: fetch what cmp_batch_s and cmp_plain read for dev (a batch's end
 * soon).  Changes nothing. */
void cmp_prefetch(const cmp_model *c, size_t dev);

/* Wall seconds straggler episodes added to device dev's batches so far
 * (counted when a batch starts; a batch cut short still counts whole). */
double cmp_straggle_s(const cmp_model *c, size_t dev);

/* Device dev's first straggler episode ending after t (overlapping ones
 * merged, at most 2^20 generated pieces joined): 1 and [*start_s, *end_s),
 * 0 without stragglers, DP_EINPUT when t is past what a double can cut
 * into cells.  (Tests and docs; any t: the generator starts a cell over
 * when asked about an earlier time.) */
int cmp_straggler_episode(cmp_model *c, size_t dev, double t, double *start_s, double *end_s);

/* The seeded GSL stream of random process `process` of device dev: every
 * process of every device draws from its own, so one policy drawing more
 * of one never shifts another's.  The caller frees it (gsl_rng_free);
 * NULL when out of memory. */
enum { CMP_STREAM_NOISE = 0, CMP_STREAM_STRAGGLERS = 1, CMP_STREAM_AVAILABILITY = 2, CMP_STREAM_CHARGER = 3 };
gsl_rng *cmp_stream(uint64_t seed, size_t dev, int process);

/* Wall time to do `work_s` seconds of factor-1 work from t under trace tr
 * (NULL = factor 1).  Exposed for tests. */
double cmp_stretch(const trace *tr, double t_start_s, double work_s);

#endif
