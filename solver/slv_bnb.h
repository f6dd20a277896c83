/* slv_bnb.h: what the `exact` method's searches share (internal to solver/).
 *
 * slv_relaxed.c (relaxed optimum), slv_intsearch.c (integer optimum) and
 * slv_exact.c (the method that runs one then the other) use these; the
 * pieces live in slv_level.c.  The method's idea: slv_exact.c. */
#ifndef SLV_BNB_H
#define SLV_BNB_H

#include "slv.h"
#include "slv_par.h"

#include <math.h>

/* Reported lower bounds are shaved by this relative amount so that rounding
 * in their own arithmetic can never push them above the true optimum. */
#define LB_SHAVE 1e-12

static inline double shave(double v)
{
    return isfinite(v) ? v - fabs(v) * LB_SHAVE : v;
}

/* The most samples device i may hold: min(cap_i, D). */
static inline int64_t limit_of(const slv_problem *p, size_t i)
{
    int64_t lim = p->samples;
    if (slv_cap_(p, i) >= 0 && slv_cap_(p, i) < lim)
        lim = slv_cap_(p, i);
    return lim;
}

/* ---- continuous send level S_c(T) (slv_level.c) ----------------------------- */

/* slv_sl_level's inputs: a_i, v_i over n devices, two scratch lists of n
 * entries, and the helper for its passes (NULL: one pass in index order). */
typedef struct sl_in {
    size_t n;
    const double *a, *v;
    size_t *idx, *up;
    slv_par *par;
} sl_in;

/* Least S >= s0 with sum_i min(S / a_i, v_i) >= D, or +inf if sum v < D
 * (and the slope there, the number of linear devices). */
double slv_sl_level(const sl_in *in, double D, double s0, double *slope_out, size_t *nlin_out);
/* Least T with sum_i clamp((T - comm_i) / c_i, 0, lim_i) >= D. */
double slv_feas_level(const slv_problem *p, const double *c, size_t *idx);

/* ---- a best-first heap of level intervals (slv_level.c) ---------------------- */

typedef struct node {
    double L, H, SH, lb;
    /* relaxed search only: phi at the ends and the slope parts G_S, G_T of
     * the right slope at L and the left slope at H (see cont_slopes) */
    double phiL, gsL, gtL, phiH, gsH, gtH;
} node;

typedef struct heap {
    node *v;
    size_t n, cap;
} heap;

int slv_heap_push(heap *h, node x);
node slv_heap_pop(heap *h);
/* Levels evaluated when the caller gives no budget (at least floor_evals). */
long slv_auto_budget(size_t n, long floor_evals);

/* ---- the two searches ---------------------------------------------------------- */

/* No comm, caps or minimum shares: the breakpoint scan applies (slv_relaxed.c). */
int slv_is_pure(const slv_problem *p);
int slv_relaxed_pure(const slv_problem *p, double *x_out, double *value_s, long *evals);
/* slv_relaxed_solve_general, also giving its feasibility level (NULL: not
 * wanted), which the integer search would compute again from the same c_i. */
int slv_relaxed_general_tf(const slv_problem *p, double *x_out, double *value_s, long *evals,
                           double *tfeas_out);
/* slv_int_search, given the relaxed feasibility level when the relaxed
 * solve has it (NAN: compute it) (slv_intsearch.c). */
int slv_int_search_tf(const slv_problem *p, int64_t *alloc, int have_incumbent, double hint_s, long max_evals,
                      long *evals, int *proven, double *int_lb_s, double tfeas_known);

#endif
