/* slv.h: the C-ADP data allocation solvers (docs/MODEL.md section 5).
 *
 * Problem: split D samples over N devices as integers x_i >= 0, sum x_i = D,
 * minimising the integer objective
 *
 *   F(x) = max_i a_i x_i + E * max_{i in P} (comm_i + t_i * ceil(x_i / bs_i))
 *          + E * agg_s * sum_{i in P} u_i + const_s
 *
 * where a_i = send_s[i] (seconds per sample sent), t_i = batch_s[i] (seconds per
 * batch of bs_i = batch[i] samples), comm_i = comm_s[i] (per-epoch model
 * exchange), E = epochs, and P = {i : x_i > 0} when allow_exclude, else every
 * device.  The relaxed problem replaces t_i * ceil(x_i / bs_i) by c_i x_i with
 * c_i = t_i / bs_i and lets x be real; its optimum is a lower bound on F.
 *
 * Shaped like GSL multimin: a method table per algorithm (slv_exact, slv_alm),
 * a solver object (_alloc/_set/_iterate/_free) whose loop the caller may own,
 * and a one-call convenience (slv_solve_problem).
 *
 * Units: seconds for times, samples for counts.  Every fallible function
 * returns 0 (DP_OK) or a negative DP_E* code and fills an optional dp_err.
 * No function here aborts, asserts on input or returns NaN.
 */
#ifndef SLV_H
#define SLV_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "dp_common.h"

/* The problem.  Arrays have n entries and are borrowed: slv_set copies what it
 * needs, so they may be freed as soon as slv_set returns. */
typedef struct slv_problem {
    size_t n;                 /* devices, >= 1 */
    const double *send_s;     /* a_i: seconds to send one sample to device i; finite, > 0 */
    const int *batch;         /* bs_i >= 1 */
    const double *batch_s;    /* t_i(bs_i): seconds per batch; finite, > 0 */
    const double *comm_s;     /* per-epoch model exchange time when device i participates;
                                 finite, >= 0; NULL = all 0 */
    const int64_t *cap;       /* optional max samples per device (NULL = none; entry < 0 = none);
                                 a given cap must hold one batch (cap >= bs_i) */
    const int64_t *min_share; /* optional min samples per device (NULL = none), 0 <= min <= cap */
    const char *const *names; /* optional device names for messages (NULL = "device i") */
    int epochs;               /* E >= 1 */
    int64_t samples;          /* D >= 1, at most 2^53 (exact in a double) */
    double const_s;           /* constant added to the objective, finite, >= 0 */
    int allow_exclude;        /* 1: a device with x_i = 0 pays no comm_i; 0: the paper's model */
    double agg_s;             /* per-epoch aggregation seconds per participating device (the
                                 server averages participants one after another); finite, >= 0.
                                 The methods (slv_set/slv_solve) take the participants as they
                                 find them; slv_solve_problem also searches which to leave out */
    const int64_t *agg_units; /* optional devices each entry stands for in that sum (a class of
                                 m identical devices counts m); NULL = 1 each, entries >= 1 */
} slv_problem;

typedef struct slv_method slv_method;
extern const slv_method *const slv_exact; /* relaxed optimum + branch and bound on the epoch level */
extern const slv_method *const slv_alm;   /* the paper's Algorithm 1 (augmented Lagrangian) */

/* "exact" or "alm" -> the method; anything else (or NULL) -> NULL. */
const slv_method *slv_method_by_name(const char *name);
/* The method's name ("exact", "alm"); never NULL for a valid method. */
const char *slv_method_name(const slv_method *m);

typedef enum {
    SLV_ROUND_BATCH = 0,             /* whole batches first, then the cheapest next batch */
    SLV_ROUND_LARGEST_REMAINDER = 1, /* floor, then +1 to the largest fractional parts */
} slv_rounding;
const char *slv_rounding_name(slv_rounding r); /* "batch", "largest-remainder", "?" */

/* ALM parameters (ignored by exact except exact_max_evals).  The ALM works on
 * normalised variables z = x / D and objective f / f(uniform), so rho, mu and
 * eta are dimensionless; see solver/README.md for why the defaults are these. */
typedef struct slv_params {
    double p;        /* p-norm exponent smoothing both maxima, >= 1 (default 100) */
    double rho;      /* quadratic penalty on (sum z - 1), > 0 */
    double mu0;      /* initial log-barrier weight, >= 0 */
    double mu_decay; /* mu <- mu * mu_decay after each outer iteration, in (0, 1] */
    double eta;      /* largest gradient step (backtracking halves it), > 0 */
    double eps;      /* inner stop: gradient norm < eps; outer: |sum z - 1| < eps, > 0 */
    int zeta;        /* max inner iterations per outer iteration, >= 1 */
    int psi;         /* max outer iterations, >= 1 */
    slv_rounding rounding;
    long exact_max_evals; /* exact: budget of epoch levels to evaluate; 0 = automatic */
} slv_params;
void slv_params_default(slv_params *out);

typedef enum {
    SLV_STATUS_RUNNING = 0,  /* not finished (only seen between slv_iterate calls) */
    SLV_STATUS_OPTIMAL,      /* exact: allocation proven optimal for F */
    SLV_STATUS_NEAR_OPTIMAL, /* exact: evaluation budget used up; gap reported */
    SLV_STATUS_CONVERGED,    /* alm: gradient and constraint tolerances met */
    SLV_STATUS_MAX_ITER,     /* alm: psi outer iterations done without converging */
    SLV_STATUS_NUMERIC,      /* alm: iterate became non-finite; last finite point used */
} slv_status;
const char *slv_status_name(slv_status s); /* "optimal", "near-optimal", ... */

typedef struct slv_result {
    size_t n;
    int64_t *alloc;           /* integer allocation, sums to D, within [min_share, cap] */
    double *relaxed;          /* relaxed (continuous) solution the method produced */
    double objective_s;       /* F(alloc) */
    double lower_bound_s;     /* relaxed optimum: a valid lower bound on min F */
    double int_lower_bound_s; /* best proven bound on the integer optimum (>= lower_bound_s;
                                 == objective_s when OPTIMAL) */
    double relaxed_s;         /* the method's own relaxed objective at `relaxed` */
    double send_s, epoch_s;   /* max_i a_i x_i and the per-epoch term of alloc */
    long iterations;          /* alm: inner iterations; exact: epoch levels evaluated */
    long outer_iterations;    /* alm: outer iterations; exact: breakpoints scanned */
    slv_status status;
    slv_rounding rounding; /* how relaxed became alloc (exact: always BATCH) */
    double solve_seconds;  /* host CPU time, informative only */
} slv_result;

typedef struct slv_solver slv_solver;

/* A solver of method m for n devices.  NULL (err filled) if m is NULL, n == 0
 * or memory runs out.  Free with slv_free. */
slv_solver *slv_alloc(const slv_method *m, size_t n, dp_err *err);
/* Validate and load problem p (p->n must equal the n given to slv_alloc) with
 * params (NULL = defaults).  DP_EINPUT with a message naming the device (index
 * and name) and the reason on bad input; DP_ENOMEM.  Resets any earlier run. */
int slv_set(slv_solver *s, const slv_problem *p, const slv_params *params, dp_err *err);
/* One step (exact: first the relaxed optimum, then the integer search; alm:
 * one outer iteration).  Returns 1 while
 * more remains, 0 when done, negative on error (or if slv_set has not succeeded). */
int slv_iterate(slv_solver *s);
/* An interrupt flag (set by a SIGINT/SIGTERM handler) that the solvers'
 * long loops poll: once it is set they stop at once and slv_solve fails with
 * DP_ERUN "interrupted".  NULL (the default) = never.  The pointer is
 * borrowed for the life of the process. */
void slv_set_interrupt(volatile sig_atomic_t *flag);
/* Nonzero when the flag is set (for the methods' loops). */
int slv_interrupted(void);
/* The exact method's integer search runs its O(N) passes on two threads
 * (the caller and one helper) once N reaches this many devices; 0 restores
 * the default (131072).  The passes it splits combine exactly (integer
 * sums, maxima, lists in order), so the result is the same bits at any
 * setting; tests lower it to check that. */
void slv_set_par_min(size_t n);
/* Iterate to the end, then round and fill the result.  0 ok, negative on error. */
int slv_solve(slv_solver *s, dp_err *err);
/* The result of the last slv_solve: borrowed, valid until the next slv_set or
 * slv_free; NULL if no solve has completed. */
const slv_result *slv_get_result(const slv_solver *s);
void slv_free(slv_solver *s); /* NULL is a no-op */

/* F(alloc) for a valid problem and alloc of p->n entries; +inf if alloc has a
 * negative entry or does not sum to D, NaN never.  p is not validated here. */
double slv_objective(const slv_problem *p, const int64_t *alloc);

/* One call: method by name ("exact" | "alm"), solve, copy the result into *out
 * (caller frees with slv_result_free).  DP_EINPUT for an unknown method name.
 * With agg_s > 0 and allow_exclude, a participant costs E * agg_s * u_i
 * beyond what the methods see, so the participant set is searched: solve
 * over all devices, then repeatedly leave out the participant with the
 * highest per-sample cost a_i + E t_i / bs_i (no minimum share) and solve
 * again, keeping the best F; it stops after two leave-outs that do not
 * improve F, or 64 in all.  This descent is not a proof: the result is
 * OPTIMAL only when its F meets the bound (the all-device bound plus one
 * participant's aggregation), else NEAR_OPTIMAL with that bound. */
int slv_solve_problem(const char *method, const slv_problem *p, const slv_params *params, slv_result **out,
                      dp_err *err);
void slv_result_free(slv_result *r); /* NULL is a no-op */

/* Validate p alone (what slv_set checks).  0 or DP_EINPUT. */
int slv_problem_check(const slv_problem *p, dp_err *err);

/* ---- shared links (slv_shared.c; docs/MODEL.md section 5, "Shared links") ----
 * A link that several devices' flows cross (a server NIC, a WAN link) and
 * that their flows together can saturate.  With links the objective is
 *
 *   F(x) = max(max_i a_i x_i, max_l sample_s_l X_l)
 *          + E * max_{i in P} (comm_i + t_i ceil(x_i / bs_i)
 *                              + max(0, DN_i - xdn_i) + max(0, UP_i - xup_i))
 *          + E * agg_s * sum_{i in P} u_i + const_s
 *
 * X_l = samples of l's members, n_l = participants among them, DN_i =
 * max over i's links of n_l model_dn_s_l (the averaged model sent to every
 * participant at once), UP_i = max of n_l model_up_s_l (the uploads, taken
 * as arriving together), xdn_i + xup_i the device's own exchange (part of
 * comm_i).  Without links F is slv_objective's, bit for bit.  Links must be
 * laminar (two links with a common member: one holds all the other's). */
typedef struct slv_link {
    double sample_s;   /* seconds per sample across it towards the devices (0: never binds) */
    double model_dn_s; /* seconds per participant of the averaged model, towards the devices */
    double model_up_s; /* seconds per participant's upload, towards the server */
    size_t n_members;
    const size_t *members; /* devices crossing it, ascending */
} slv_link;

typedef struct slv_shared {
    size_t n_links;
    const slv_link *links;
    const double *xdn_s, *xup_s; /* per device: its own model download / upload seconds */
} slv_shared;

/* F(alloc) with shared links (slv_objective when sh is NULL or has none);
 * *send_s and *epoch_s (may be NULL) get its two terms. */
double slv_objective_shared(const slv_problem *p, const slv_shared *sh, const int64_t *alloc, double *send_s,
                            double *epoch_s);
/* 0 when sh's links are laminar and well formed for p, else DP_EINPUT. */
int slv_shared_check(const slv_problem *p, const slv_shared *sh, dp_err *err);
/* The exact method on the problem with shared links.  The participant set
 * matters beyond each device's own terms (n_l), so it is searched: every
 * set when the participants may vary over at most SLV_SHARED_ENUM devices
 * (exact: OPTIMAL with a proof unless the level budget runs out), else
 * candidate sets: the participants of the model without links, and the k
 * cheapest devices (per-sample cost) for k on a doubling grid refined
 * around the best (NEAR_OPTIMAL unless the bound of the model without
 * links is met).  For each set a branch and bound over
 * the epoch level T, the least send level at T found by bisection over the
 * doubles of the count of samples that fit (a laminar sum).
 * lower_bound_s = int_lower_bound_s (no relaxation); relaxed = alloc. */
#define SLV_SHARED_ENUM 12
int slv_solve_shared(const slv_problem *p, const slv_shared *sh, const slv_params *params, slv_result **out,
                     dp_err *err);

/* ---- library-internal: shared by solver/slv_*.c and tests -------------------
 * The method table (GSL's gsl_multimin_fdfminimizer_type): `size` bytes of
 * state are allocated per solver; set/iterate/finish see the validated problem
 * copy.  iterate returns 1 while more remains, 0 when done, negative on error;
 * finish fills the result's alloc, relaxed, statuses and counters. */
struct slv_method {
    const char *name;
    size_t size;
    int (*alloc)(void *state, size_t n);
    int (*set)(void *state, const struct slv_problem *p, const struct slv_params *prm);
    int (*iterate)(void *state, const struct slv_problem *p, const struct slv_params *prm);
    int (*finish)(void *state, const struct slv_problem *p, const struct slv_params *prm,
                  struct slv_result *res);
    void (*free)(void *state);
};

/* These take a validated problem; NULL comm_s, cap, min_share read as 0, none, 0. */
static inline double slv_comm_(const struct slv_problem *p, size_t i)
{
    return p->comm_s ? p->comm_s[i] : 0.0;
}
static inline int64_t slv_cap_(const struct slv_problem *p, size_t i)
{
    return p->cap ? p->cap[i] : -1;
}
static inline int64_t slv_min_(const struct slv_problem *p, size_t i)
{
    return p->min_share ? p->min_share[i] : 0;
}

/* The relaxed optimum: *value_s = min over real x of max a_i x_i + E * max_{P}
 * (comm_i + c_i x_i) + const_s, x_out (n entries, may be NULL) a minimiser.
 * Exact breakpoint scan (O(N log N)) when there are no comm, caps or minimum
 * shares; otherwise a branch and bound on the epoch level whose *value_s is a
 * proven lower bound within a relative 1e-12 of the optimum.  *evals counts the
 * breakpoints scanned or levels evaluated.  0, DP_ENOMEM. */
int slv_relaxed_solve(const slv_problem *p, double *x_out, double *value_s, long *evals);
/* Same, always through the general branch and bound (tests compare both). */
int slv_relaxed_solve_general(const slv_problem *p, double *x_out, double *value_s, long *evals);

/* Roundings of a non-negative real allocation x into out: integers within
 * [min_share, cap] summing to D.  0, DP_ENOMEM. */
int slv_round_largest_remainder(const slv_problem *p, const double *x, int64_t *out);
int slv_round_batch(const slv_problem *p, const double *x, int64_t *out);

/* Branch and bound over epoch levels for the integer optimum.  alloc (n
 * entries) receives the best allocation found; if have_incumbent it must hold
 * a valid allocation on entry, which is kept unless beaten.  hint_s is a level
 * (seconds) to split at first (e.g. the relaxed optimum's, rounded up to whole
 * batches; -inf = none).  At most max_evals levels are evaluated (0 =
 * automatic: max(24, 4e7 / N)).  *proven = 1 when alloc is optimal;
 * *int_lb_s = proven lower bound on the integer optimum.  0, DP_ENOMEM. */
int slv_int_search(const slv_problem *p, int64_t *alloc, int have_incumbent, double hint_s, long max_evals,
                   long *evals, int *proven, double *int_lb_s);

#endif
