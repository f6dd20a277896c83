/* efficiency.h: statistical efficiency, the analytic learner.  How far a
 * schedule's updates carry a model that is too big to train here, in
 * reference-batch steps ("progress"), and the accuracy that progress buys.
 *
 * The schedule's updates are kept, in simulated-time order, in an eff_log
 * (filled by the runtime's update stream when `learning:` is set, or by
 * hand in tests).  Progress is integrated over the log under eff_params:
 *
 *   synchronous step at global batch M:  gain(M) = (B + M0) / (B + M) x M / M0
 *     (McCandlish et al. 2018, section 2; Pollux/AdaptDL, OSDI 2021, whose
 *     goodput.py writes it as (var + sqr) / (var / scale + sqr), scale =
 *     M / M0, B = M0 var / sqr: the same number);
 *   asynchronous push of m samples, staleness s:  w(s) gain(m), w(s) = (1 + s)^-a;
 *   average of local models after H local steps of global batch M each:
 *     H steps of psi(H) gain(M), psi(H) = 1 / (1 + kappa (H - 1)),
 *     times rho (participation) when use_rho is set.
 *
 * B (the gradient noise scale, B_noise) is a constant, one value per epoch
 * (the record's epoch, 1-based; the last value beyond the list), or taken
 * from a Pollux trace (`progress,iteration,metric,grad_sqr,grad_var`): B =
 * M0 var / sqr of the row whose epoch the progress lies in, a step in
 * progress as AdaptDL's simulator holds a row's statistics for its epoch.
 * The reference curve maps progress to the metric (accuracy): linear
 * between its points, held at its ends.  docs/MODEL.md "Statistical
 * efficiency" says where each piece comes from and where it stops holding.
 *
 * Determinism: every function is a pure replay of the log; no clock, no RNG.
 * Ownership: eff_log and eff_params own their arrays; *_free(NULL) is a no-op.
 */
#ifndef DP_EFFICIENCY_H
#define DP_EFFICIENCY_H

#include "dp_common.h"
#include "scenario.h"

#include <stddef.h>

struct yt_node;

/* ---- the schedule's updates ---------------------------------------------- */

typedef struct eff_log eff_log; /* the schedule's updates in simulated-time order (append-only) */
typedef enum { EFF_SYNC = 0, EFF_ASYNC, EFF_LOCAL } eff_kind;

eff_log *eff_log_new(void);
void eff_log_free(eff_log *l);
eff_log *eff_log_copy(const eff_log *l); /* NULL when out of memory */
/* Each append returns 0, DP_EINPUT for a value out of range (M, m, M_step
 * and H > 0 and finite, s >= 0, rho in (0, 1], t and epoch not before the
 * last record's) or DP_ENOMEM.  `epoch` is the run's epoch (1-based, as the learner's stream) when
 * the update is applied. */
int eff_log_sync(eff_log *l, double t, int epoch,
                 double M); /* one synchronous update at global batch M samples */
int eff_log_async(
    eff_log *l, double t, int epoch, double m,
    double staleness); /* one asynchronous push of m samples, staleness s (versions since the pull) */
int eff_log_local(eff_log *l, double t, int epoch, double H, double M_step,
                  double rho); /* an average of local models after H local steps of global batch M_step per
                                  step (sum of participants' batches), participation rho in (0,1] */
size_t eff_log_len(const eff_log *l);
double eff_log_time(const eff_log *l, size_t i);
int eff_log_epoch(const eff_log *l, size_t i);
eff_kind eff_log_kind(const eff_log *l, size_t i);
/* Samples the record i consumed: M, m, or H x M_step. */
double eff_log_samples(const eff_log *l, size_t i);
/* The batch of one step of record i: M, m, or M_step. */
double eff_log_batch(const eff_log *l, size_t i);

/* ---- the model's parameters ---------------------------------------------- */

typedef struct eff_params eff_params; /* M0, B_noise (constant, per epoch, or from a Pollux CSV), a, kappa,
                                         use_rho, reference curve (progress -> metric) */
typedef enum { EFF_BN_CONST = 0, EFF_BN_EPOCH, EFF_BN_TRACE } eff_bn_kind;

/* The `learning.efficiency` mapping (`path` is its key path, for messages):
 *   reference_batch   M0 (samples, > 0; required)
 *   noise_scale       B_noise: a number (constant) or a list (per epoch)
 *   noise_trace       a Pollux CSV (path relative to the scenario file): B_noise
 *                     by progress, and the curve from its metric column
 *   staleness_exponent  a (>= 0, default 0: no discount)
 *   drift             kappa (>= 0, default 0: no drift)
 *   participation     use rho (bool, default false)
 *   curve             [[progress, metric], ...] increasing progress (overrides
 *                     the trace's)
 * Exactly one of noise_scale and noise_trace; a curve from one of curve and
 * noise_trace.  FILE:LINE:COL errors naming the key (DP_EINPUT). */
int eff_params_read(const scn_scenario *s, const struct yt_node *m, const char *path, eff_params **out,
                    dp_err *err);
void eff_params_free(eff_params *p);

/* Building parameters by hand (tests, calibration).  M0 > 0; the noise scale
 * constant B >= 0 (0: batch size buys nothing), no discount, no drift, no
 * curve.  NULL when out of memory or M0 is not > 0. */
eff_params *eff_params_new(double M0, double B_noise);
eff_params *eff_params_copy(const eff_params *p);
int eff_params_set_noise_epochs(eff_params *p, const double *B, size_t n); /* per epoch */
/* A Pollux trace: B_noise by progress, and (when `curve`) the reference
 * curve from its metric column.  DP_EINPUT naming FILE:LINE on a bad file. */
int eff_params_load_pollux(eff_params *p, const char *path, int curve, dp_err *err);
/* The same from a trace's text in memory (len bytes, not NUL-terminated;
 * name stands for the file in messages): the applications' traces built
 * into the binary (sim/jobs/jobs_apps.c). */
int eff_params_parse_pollux(eff_params *p, const char *name, const char *text, size_t len, int curve,
                            dp_err *err);
int eff_params_set_curve(eff_params *p, const double *progress, const double *metric, size_t n);
void eff_params_set_discounts(eff_params *p, double a, double kappa, int use_rho);
double eff_params_m0(const eff_params *p);
eff_bn_kind eff_params_noise_kind(const eff_params *p);
double eff_params_noise(const eff_params *p); /* the constant (EFF_BN_CONST) */
void eff_params_set_noise(eff_params *p, double B);
double eff_params_a(const eff_params *p);
double eff_params_kappa(const eff_params *p);
int eff_params_use_rho(const eff_params *p);
size_t eff_params_curve_len(const eff_params *p);
double eff_params_curve_progress(const eff_params *p, size_t i);
double eff_params_curve_metric(const eff_params *p, size_t i);
void eff_params_set_curve_metric(eff_params *p, size_t i, double metric);

/* ---- the model ------------------------------------------------------------ */

/* gain(M) at noise scale B: (B + M0) / (B + M) x M / M0 (1 for M = M0). */
double eff_gain(double B, double M0, double M);
/* Statistical efficiency gain(M) / (M / M0), in (0, 1] for M >= M0. */
double eff_efficiency(double B, double M0, double M);
/* The noise scale at a progress and epoch under p. */
double eff_noise_at(const eff_params *p, double progress, int epoch);

double eff_progress(const eff_params *p, const eff_log *l,
                    size_t n_records); /* progress (reference-batch steps) after the first n records */
/* Progress after every record: out[i] after records 0..i (n = eff_log_len). */
void eff_progress_all(const eff_params *p, const eff_log *l, double *out);
double eff_metric(const eff_params *p, double progress); /* accuracy from the reference curve */
/* The first record's time at whose end the metric reaches `target`
 * (NAN when it never does; never a guess beyond the log). */
double eff_time_to(const eff_params *p, const eff_log *l, double target);
/* The metric at the end of epoch `epoch` (after its last record); NAN when
 * the log has no record of that epoch or later. */
double eff_metric_at_epoch(const eff_params *p, const eff_log *l, int epoch);

#endif
