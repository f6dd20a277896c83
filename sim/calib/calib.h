/* calib.h: fit a scenario's unknown values to measured figures
 * (`dpsim calibrate`).
 *
 * A problem is a scenario, free parameters and targets.  A parameter is one
 * value set on one or more override keys at once (`KEY[,KEY...]=LO..HI[:log]`,
 * keys as for `--set`, so `devices.cpu4.link.up,devices.cpu4.link.down` ties
 * two keys to one value), bounded by [LO, HI] in the unit written on the
 * bounds (`10Mbps..1Gbps`, `0.24s..0.58s`, or bare numbers).  A target is a
 * stored per-run metric of one policy and the value measured for it
 * (`POLICY.METRIC=VALUE[:WEIGHT]`, e.g. `cadp.ttotal_s=12915.28`).
 *
 * The fit minimises  sum_k w_k (fitted_k / wanted_k - 1)^2  over the box:
 * each parameter is a logistic function of an unconstrained variable mapped
 * onto [LO, HI] (onto [log LO, log HI] for `:log`), so the solver never
 * leaves the plausible range; GSL's multifit_nlinear trust region
 * (Levenberg-Marquardt, forward-difference Jacobian) runs from several
 * deterministic starts (a Latin hypercube drawn from a seeded gsl_rng) and
 * the best end point is kept.  A parameter whose optimum lies on its bound
 * (the logistic tends to it) is snapped onto it and flagged: some target
 * would need a value outside the plausible range.
 *
 * Policies are reached only through runner_parse_policies / runner_run
 * (run/runner.h, below both the calibrator and the command line), so this module does not depend on how
 * policies are registered.
 *
 * Evaluation shortcuts: `for` overrides (POLICY:KEY=VALUE) are applied only
 * while fitting and only to that policy's runs, e.g. training.epochs=1 for a
 * policy whose only target is Tsend.  The fitted figures reported are those
 * of a final evaluation *without* them; calib_fit fails (DP_EINPUT) when a
 * shortcut changed a targeted metric, so a wrong shortcut cannot pass
 * silently.
 *
 * Determinism: no clock, no global RNG; the same problem gives the same
 * fit, bit for bit, on the same build.
 *
 * Ownership: calib_new copies everything it keeps from the spec;
 * calib_free(NULL) is a no-op; a calib_result is owned by the problem and
 * lives until calib_free.
 */
#ifndef DP_CALIB_H
#define DP_CALIB_H

#include "dp_common.h"
#include "scenario.h"
#include "store/store.h"

#include <stdint.h>
#include <stdio.h>

#define CALIB_MAX_PARAMS  16
#define CALIB_MAX_TARGETS 32
#define CALIB_MAX_KEYS    8  /* keys tied to one parameter */
#define CALIB_MAX_SETS    64 /* fixed and per-policy overrides */
#define CALIB_MAX_STARTS  64
#define CALIB_FLAT        1e-6

/* What the caller asks for: the texts of the command line options. */
typedef struct calib_spec {
    const char *scenario; /* a file, or builtin:paper-testbed */
    size_t n_fit;
    const char *fit[CALIB_MAX_PARAMS]; /* "KEY[,KEY...]=LO..HI[:log]" */
    size_t n_target;
    const char *target[CALIB_MAX_TARGETS]; /* "POLICY.METRIC=VALUE[:WEIGHT]" */
    size_t n_set;
    const char *set[CALIB_MAX_SETS]; /* "KEY=VALUE", fixed, written into the output */
    size_t n_for;
    const char *set_for[CALIB_MAX_SETS]; /* "POLICY:KEY=VALUE", while fitting only */
    unsigned starts;                     /* >= 1; 0 = default 4 */
    uint64_t seed;                       /* of the start design; 0 = 1 */
} calib_spec;

typedef struct calib_problem calib_problem;

/* Parse and check the spec: every text well formed, bounds LO < HI (LO > 0
 * with :log), a known policy and metric in every target, a non-zero target
 * value and a positive weight, and the scenario loads with every parameter
 * at the middle of its range (so an unknown key or a value the scenario
 * refuses is found before any fitting).  NULL and DP_EINPUT with a message
 * naming the option text. */
calib_problem *calib_new(const calib_spec *spec, dp_err *err);
void calib_free(calib_problem *p);

/* Called after every evaluation while fitting: the start (0-based), the
 * evaluations so far and the lowest cost seen.  May be NULL. */
typedef void (*calib_progress_fn)(void *ctx, unsigned start, unsigned n_starts, long evals, double best_cost);

typedef struct calib_result {
    size_t n_params, n_targets;
    double value[CALIB_MAX_PARAMS]; /* in the unit of the bounds */
    int at_bound[CALIB_MAX_PARAMS]; /* -1 on LO, +1 on HI, 0 inside */
    /* 1 when no target moves with the parameter at the fit (every
     * |sensitivity| < CALIB_FLAT): the targets do not determine it, and its
     * value is only where the solver happened to stop. */
    int undetermined[CALIB_MAX_PARAMS];
    double fitted[CALIB_MAX_TARGETS]; /* the metric at value[], full evaluation */
    double ratio[CALIB_MAX_TARGETS];  /* fitted / wanted */
    /* sens[k][i] = d log fitted_k / d log value_i at the optimum (central
     * differences of 0.1%, one-sided on a bound); NaN when the metric is 0. */
    double sens[CALIB_MAX_TARGETS][CALIB_MAX_PARAMS];
    double cost;      /* sum_k w_k (ratio_k - 1)^2 */
    long evaluations; /* simulations of the whole target set, including the final ones */
    unsigned starts;  /* starts run */
    unsigned best_start;
} calib_result;

/* Run the fit.  0, or the error of the first simulation that failed (a
 * stall, an interrupt: the fit stops there, as nothing after it could be
 * trusted), or DP_EINPUT when a --set-for shortcut changed a target.  *out
 * borrows the problem's result. */
int calib_fit(calib_problem *p, calib_progress_fn progress, void *ctx, const calib_result **out, dp_err *err);

/* Simulate the targets' policies once at parameter values x[0..n_params)
 * (in the bounds' units, inside the bounds; full runs, no --set-for);
 * f[k] gets target k's metric.  For tests and for making synthetic
 * targets.  0 or the simulation's error. */
int calib_evaluate(calib_problem *p, const double *x, double *f, dp_err *err);

/* Accessors for printing (borrowed, live as long as p). */
size_t calib_n_params(const calib_problem *p);
size_t calib_n_targets(const calib_problem *p);
const char *calib_param_label(const calib_problem *p, size_t i); /* the keys, comma separated */
/* The bounds and the value as override text ("93.51Mbps"), in buf. */
void calib_param_text(const calib_problem *p, size_t i, double v, char *buf, size_t len);
double calib_param_lo(const calib_problem *p, size_t i);
double calib_param_hi(const calib_problem *p, size_t i);
int calib_param_log(const calib_problem *p, size_t i);
const char *calib_target_label(const calib_problem *p, size_t k); /* "cadp.ttotal_s" */
double calib_target_value(const calib_problem *p, size_t k);
double calib_target_weight(const calib_problem *p, size_t k);
/* The scenario's name and its text hash (of the file as given). */
const scn_scenario *calib_scenario(const calib_problem *p);

/* The spec and the result as JSON objects (dp_malloc'd, caller dp_frees;
 * NULL when out of memory).  Deterministic: no date, no host time. */
char *calib_spec_json(const calib_problem *p);
char *calib_result_json(const calib_problem *p, const calib_result *r);

/* Write the calibrated scenario to path: the scenario's text with each
 * fitted key (and each fixed --set key) replaced by its value, the comment
 * on each changed line replaced by "(fit)" or "(set)", and a comment block
 * at the top saying how every value was obtained.  Each key must be a plain
 * one-line scalar of the file (DP_EINPUT naming it otherwise: set it in the
 * file first).  Written to PATH.tmp and renamed. */
int calib_write_scenario(const calib_problem *p, const calib_result *r, const char *path, dp_err *err);

/* Store the fit (spec, result, cost, evaluations) in st as one row of
 * `calibrations`; *id its id (may be NULL). */
int calib_store(const calib_problem *p, const calib_result *r, store *st, const char *version,
                const char *started_at, int64_t *id, dp_err *err);

#endif
