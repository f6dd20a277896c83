/* slv_exact.c: the `exact` method for the C-ADP allocation problem
 * (docs/MODEL.md section 5): the relaxed optimum, then the integer optimum.
 *
 * Both problems are "min over the epoch level T of S(T) + E*T", where S(T) is
 * the least send level (max_i a_i x_i) that fits D samples when every device
 * stays at or below level T.  S is non-increasing in T, so on any interval
 * [L, H] of levels, S(H) + E*L is a lower bound: a branch and bound on T with
 * that bound is exact and its open nodes always give a valid lower bound.
 *
 * The work is split by job (the shared pieces are declared in slv_bnb.h):
 *  - slv_relaxed.c: the relaxed optimum.  No comm/caps/minimum shares: the
 *    breakpoint scan of docs/MODEL.md section 5 over r = c_i / a_i, exact in
 *    O(N log N).  General: the branch and bound above on continuous T,
 *    stopped at a relative gap of 1e-12 or a budget.
 *  - slv_intsearch.c: the integer optimum, the same branch and bound over the
 *    discrete levels comm_i + k * t_i; per level S*(T) is the D-th smallest
 *    send time a_i * k, k <= n_i(T) (whole batches), found in O(N) expected.
 *    With no budget the search ends with a proof of optimality.
 *  - slv_level.c: the continuous send level S_c(T), the feasibility level,
 *    the heap of level intervals and the automatic budget.
 *  - this file: the method object (slv.h slv_method) running the two.
 *
 * Floating point: "device i can take k samples under send level S" is decided
 * by the same product a_i * k <= S that slv_objective computes, never by a
 * division alone, so the search and the objective agree to the last bit.
 */
#include "slv_bnb.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* ---- the `exact` method --------------------------------------------------- */

typedef struct exact_state {
    size_t n;
    int stage; /* 0: relaxed next, 1: integer next, 2: done */
    double *x;
    double lb;
    long lp_evals, int_evals;
    int64_t *alloc;
    int proven;
    double int_lb;
    double tfeas; /* the relaxed solve's feasibility level (NAN: none) */
} exact_state;

static int exact_alloc(void *vs, size_t n)
{
    exact_state *s = vs;
    s->n = n;
    s->x = dp_calloc(n, sizeof(double));
    s->alloc = dp_calloc(n, sizeof(int64_t));
    return (s->x && s->alloc) ? DP_OK : DP_ENOMEM;
}

static void exact_free(void *vs)
{
    exact_state *s = vs;
    dp_free(s->x);
    dp_free(s->alloc);
    s->x = NULL;
    s->alloc = NULL;
}

static int exact_set(void *vs, const slv_problem *p, const slv_params *prm)
{
    (void)p;
    (void)prm;
    exact_state *s = vs;
    s->stage = 0;
    s->proven = 0;
    s->lp_evals = s->int_evals = 0;
    s->tfeas = NAN;
    return DP_OK;
}

static int exact_iterate(void *vs, const slv_problem *p, const slv_params *prm)
{
    exact_state *s = vs;
    int rc;
    if (s->stage == 0) {
        rc = slv_is_pure(p) ? slv_relaxed_pure(p, s->x, &s->lb, &s->lp_evals)
                            : slv_relaxed_general_tf(p, s->x, &s->lb, &s->lp_evals, &s->tfeas);
        if (rc)
            return rc;
        s->stage = 1;
        return 1;
    }
    if (s->stage == 1) {
        /* No rounding as incumbent: the search's first level (everything
         * fits) is one, and its first split is at the relaxed optimum's
         * epoch level rounded up to whole batches, so a rounding would only
         * cost O(N log N) for nothing. */
        double hint = -HUGE_VAL;
        for (size_t i = 0; i < s->n; i++) {
            if (p->allow_exclude && !(s->x[i] > 0))
                continue;
            double lvl = slv_comm_(p, i) + p->batch_s[i] * ceil(s->x[i] / p->batch[i]);
            if (lvl > hint)
                hint = lvl;
        }
        rc = slv_int_search_tf(p, s->alloc, 0, hint, prm->exact_max_evals, &s->int_evals, &s->proven,
                               &s->int_lb, s->tfeas);
        if (rc)
            return rc;
        s->stage = 2;
    }
    return 0;
}

static int exact_finish(void *vs, const slv_problem *p, const slv_params *prm, slv_result *r)
{
    (void)prm;
    exact_state *s = vs;
    memcpy(r->alloc, s->alloc, s->n * sizeof(int64_t));
    memcpy(r->relaxed, s->x, s->n * sizeof(double));
    r->lower_bound_s = s->lb;
    r->int_lower_bound_s = s->int_lb > s->lb ? s->int_lb : s->lb;
    double smax = 0, tmax = 0;
    for (size_t i = 0; i < s->n; i++) {
        double v = p->send_s[i] * s->x[i];
        if (v > smax)
            smax = v;
        if (p->allow_exclude && !(s->x[i] > 0))
            continue;
        double l = slv_comm_(p, i) + p->batch_s[i] / p->batch[i] * s->x[i];
        if (l > tmax)
            tmax = l;
    }
    r->relaxed_s = smax + p->epochs * tmax + p->const_s;
    r->iterations = s->int_evals;
    r->outer_iterations = s->lp_evals;
    r->status = s->proven ? SLV_STATUS_OPTIMAL : SLV_STATUS_NEAR_OPTIMAL;
    r->rounding = SLV_ROUND_BATCH;
    return DP_OK;
}

static const slv_method exact_method = {
    "exact", sizeof(exact_state), exact_alloc, exact_set, exact_iterate, exact_finish, exact_free,
};
const slv_method *const slv_exact = &exact_method;
