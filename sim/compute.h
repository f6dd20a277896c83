/* compute.h: how long a device takes to process a batch (docs/MODEL.md section 3).
 *
 * The base time comes from the scenario's compute model (scn_batch_time).
 * On top: optional multiplicative noise, lognormal with mean 1 and the
 * group's coefficient of variation, drawn from the device's own GSL stream
 * (seeded from the run seed and the device index, so adding a device does
 * not change the others' draws); and an optional speed trace, a factor over
 * time: work of w seconds at factor 1 started at t ends when the integral of
 * the factor from t reaches w.
 *
 * Ownership: cmp_new/cmp_free; the scenario is borrowed and must outlive it.
 */
#ifndef DP_COMPUTE_H
#define DP_COMPUTE_H

#include "dp_common.h"
#include "scenario.h"

typedef struct cmp_model cmp_model;

cmp_model *cmp_new(const scn_scenario *s, uint64_t seed, dp_err *err);
void cmp_free(cmp_model *c);

/* Seconds for device `dev` (0-based, scenario order) to process the share
 * `part` (0, 1] of a batch of n samples, starting at simulated time
 * t_start_s.  Draws one noise sample when the device has noise.  INFINITY if
 * its speed trace stays at 0. */
double cmp_batch_s(cmp_model *c, size_t dev, int n, double t_start_s, double part);

/* Wall time to do `work_s` seconds of factor-1 work from t under trace tr
 * (NULL = factor 1).  Exposed for tests. */
double cmp_stretch(const trace *tr, double t_start_s, double work_s);

#endif
