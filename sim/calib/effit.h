/* effit.h: fitting the statistical-efficiency model (sim/learn/efficiency.h)
 * to measured accuracy: `dpsim calibrate`'s accuracy part, and `reproduce
 * table3`'s.
 *
 * A point is one measured (epoch or time, metric) of one schedule, whose
 * updates are an eff_log.  The fit replays each point's log under trial
 * parameters and minimises  sum_k w_k (metric_k - measured_k)^2  (in the
 * metric's own unit: 0.01 is one point of accuracy) over the free
 * parameters: the noise scale B (in [lo, hi], searched in log space), the
 * staleness exponent a (in [0, a_max]), the drift kappa (in [0,
 * kappa_max]) and the metrics of the reference curve's points after the
 * first `curve_fixed` (free values: a fitted curve may fall).  GSL's
 * multifit_nlinear trust region (Levenberg-Marquardt, forward differences)
 * runs on logistic transforms of the scalars from the given values and from
 * a grid of starts over the scalars (3^k, k <= 3); the best end is kept.
 * A fitted noise scale is one constant (a trace or per-epoch values are
 * replaced by it).
 *
 * What the fit can and cannot say: the residuals; an error band of two
 * residual standard deviations when there are more points than free
 * parameters (otherwise none: the residuals are small by construction);
 * parameters that no point moves (undetermined) or whose optimum lies on a
 * bound; and, for a prediction, whether its batch sizes lie inside the
 * fitted logs' range (interpolation) or how far outside (extrapolation:
 * on Pollux's CIFAR-10 traces, statistics measured at batch 128 put the
 * iterations at 1,024 about 21% and at 4,096 about 72% too high; measured
 * at the batch used, 1.3% and 6.8%: tests/test_efficiency.c).
 *
 * Determinism: no clock, no RNG; same inputs, same bits.
 */
#ifndef DP_EFFIT_H
#define DP_EFFIT_H

#include "dp_common.h"
#include "learn/efficiency.h"

#define EFFIT_MAX_POINTS 64
#define EFFIT_MAX_CURVE  32
#define EFFIT_FLAT       1e-9

enum { EFFIT_NOISE = 1, EFFIT_A = 2, EFFIT_KAPPA = 4, EFFIT_CURVE = 8 };

typedef struct effit_point {
    const char *label;  /* "cadp@30" */
    const eff_log *log; /* borrowed */
    int by_time;        /* 0: `at` is an epoch (1-based, its end); 1: a simulated time (s) */
    double at;
    double metric; /* measured */
    double weight; /* > 0; 0 counts as 1 */
} effit_point;

typedef struct effit_spec {
    const eff_params *start;   /* M0, B or its trace, a, kappa, rho, the curve's knots: copied */
    unsigned free;             /* EFFIT_* */
    double noise_lo, noise_hi; /* default 1 .. 1e7 samples */
    double a_max, kappa_max;   /* defaults 4 and 1 */
    size_t curve_fixed;        /* leading curve points kept as they are (default 0) */
    size_t n_points;
    const effit_point *points;
} effit_spec;

typedef struct effit_result {
    eff_params *fit; /* owned: free with effit_result_free */
    size_t n_points, n_free;
    double predicted[EFFIT_MAX_POINTS], residual[EFFIT_MAX_POINTS]; /* predicted - measured */
    double cost;                                                    /* sum w r^2 */
    double sigma; /* residual standard deviation sqrt(cost / (n - p)); NAN when n <= p */
    double band;  /* 2 sigma, NAN when n <= p */
    /* per free parameter, in order noise, a, kappa, curve points */
    char name[4 + EFFIT_MAX_CURVE][32];
    double value[4 + EFFIT_MAX_CURVE];
    int at_bound[4 + EFFIT_MAX_CURVE];     /* -1 low, +1 high, 0 inside */
    int undetermined[4 + EFFIT_MAX_CURVE]; /* no point moves with it */
} effit_result;

/* 0, or DP_EINPUT naming what is wrong (no points, no free parameter, a
 * point whose log does not reach its epoch or time, a curve with too many
 * points, bounds out of order), or DP_ENOMEM.  On success *r holds the fit. */
int effit_run(const effit_spec *spec, effit_result *r, dp_err *err);
void effit_result_free(effit_result *r);

/* The metric a point's log predicts under p (NAN when the log does not
 * reach it). */
double effit_predict(const eff_params *p, const effit_point *pt);

/* A log's batch size: the sample-weighted mean of its updates' batch per
 * step (M, m, or M_step). */
double effit_log_batch(const eff_log *l);
/* How far a prediction's batch lies outside the fitted logs' range: 1 when
 * inside (interpolation), else max(batch / largest, smallest / batch). */
double effit_extrapolation(const effit_point *fitted, size_t n, const eff_log *pred);

#endif
