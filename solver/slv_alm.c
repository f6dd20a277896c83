/* slv_alm.c: the paper's Algorithm 1 (C-ADP), an augmented Lagrangian on the
 * p-norm-smoothed relaxed problem, followed by rounding.
 *
 * Variables are shares z = x / D and the objective is divided by its value at
 * the uniform start, so rho, mu, eta and eps mean the same on a 3-device toy
 * and on a 1000-device fleet (README.md: "ALM defaults").  With y >= 0,
 *
 *   f(z)  = ||A z||_p + E ||comm + C z||_p          A_i = a_i D, C_i = c_i D
 *   L(z)  = f(z)/f0 + lambda h + rho/2 h^2 - mu sum log z_i + rho/2 |cap/min violation|^2,
 *   h     = sum z - 1.
 *
 * ||y||_p = m (sum (y_i/m)^p)^(1/p) with m = max y_i, so p = 100 never
 * overflows, and its gradient (y_i / ||y||_p)^(p-1) has a base <= 1.
 * Inner loop: gradient steps of length at most eta, halved until the barrier
 * domain (z > 0) is kept and L decreases (Armijo); a fixed step diverges on the
 * p = 100 surrogate, whose curvature grows like p.  Outer loop: lambda += rho h,
 * mu *= mu_decay.  The paper's model is used (every device pays comm_i);
 * allow_exclude is left to `exact`.  Caps and minimum shares, absent from the
 * paper, enter as a quadratic penalty and are enforced exactly by the rounding.
 */
#include "slv.h"

#include <math.h>
#include <string.h>

#include <gsl/gsl_blas.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_vector.h>

typedef struct alm_state {
    size_t n;
    gsl_vector *z, *g, *trial, *A, *C, *C0, *capz, *minz, *scratch, *zprev, *gprev;
    double f0, lambda, mu, step, L;
    long inner, outer;
    int inner_ok;  /* last inner loop met the gradient tolerance */
    int converged; /* outer test met */
    int numeric;   /* a non-finite value was met */
    int finished;
} alm_state;

static void alm_free(void *vs)
{
    alm_state *s = vs;
    gsl_vector **v[] = {&s->z,    &s->g,    &s->trial,   &s->A,     &s->C,    &s->C0,
                        &s->capz, &s->minz, &s->scratch, &s->zprev, &s->gprev};
    for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
        if (*v[k]) {
            dp_free((*v[k])->data);
            dp_free(*v[k]);
            *v[k] = NULL;
        }
    }
}

/* gsl_vector_alloc uses malloc; the house rule is dp_malloc, so build the
 * view by hand (owner = 0 so GSL would never free it). */
static gsl_vector *vec_new(size_t n)
{
    gsl_vector *v = dp_calloc(1, sizeof *v);
    double *d = dp_calloc(n, sizeof *d);
    if (!v || !d) {
        dp_free(v);
        dp_free(d);
        return NULL;
    }
    v->size = n;
    v->stride = 1;
    v->data = d;
    v->block = NULL;
    v->owner = 0;
    return v;
}

static int alm_alloc(void *vs, size_t n)
{
    alm_state *s = vs;
    s->n = n;
    gsl_vector **v[] = {&s->z,    &s->g,    &s->trial,   &s->A,     &s->C,    &s->C0,
                        &s->capz, &s->minz, &s->scratch, &s->zprev, &s->gprev};
    for (size_t k = 0; k < sizeof v / sizeof v[0]; k++)
        if (!(*v[k] = vec_new(n)))
            return DP_ENOMEM;
    return DP_OK;
}

/* ||y||_p for y_i = off_i + scale_i z_i (off may be NULL); if grad is given,
 * adds w * d||y||_p / dz_i to it. */
static double pnorm(const gsl_vector *scale, const gsl_vector *off, const gsl_vector *z, double p,
                    gsl_vector *grad, double w, double *scratch)
{
    size_t n = z->size;
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double y = (off ? off->data[i] : 0) + scale->data[i] * z->data[i];
        if (y > m)
            m = y;
    }
    if (!(m > 0))
        return m == 0 ? 0 : NAN;
    /* one pow per entry: r_i = (y_i/m)^(p-1), then (y_i/m)^p = r_i * y_i/m
     * and the gradient (y_i/||y||)^(p-1) = r_i * (m/||y||)^(p-1) */
    double acc = 0;
    for (size_t i = 0; i < n; i++) {
        double u = ((off ? off->data[i] : 0) + scale->data[i] * z->data[i]) / m;
        double r = u > 0 ? pow(u, p - 1) : 0;
        scratch[i] = r;
        acc += r * u;
    }
    double nrm = m * pow(acc, 1.0 / p);
    if (grad) {
        double f = w * pow(m / nrm, p - 1);
        for (size_t i = 0; i < n; i++)
            grad->data[i] += f * scale->data[i] * scratch[i];
    }
    return nrm;
}

/* The augmented Lagrangian at z; gradient into s->g when grad != 0.
 * +inf outside the barrier's domain. */
static double lagr(alm_state *s, const gsl_vector *z, double E, double rho, double p, int grad)
{
    size_t n = s->n;
    double sum = 0, barrier = 0, pen = 0;
    for (size_t i = 0; i < n; i++) {
        double zi = z->data[i];
        if (!(zi > 0) && s->mu > 0)
            return HUGE_VAL;
        sum += zi;
        if (s->mu > 0)
            barrier += log(zi);
        double up = s->capz->data[i] >= 0 ? zi - s->capz->data[i] : 0;
        double dn = s->minz->data[i] - zi;
        if (up > 0)
            pen += up * up;
        if (dn > 0)
            pen += dn * dn;
    }
    double h = sum - 1;
    if (grad)
        gsl_vector_set_zero(s->g);
    double fs = pnorm(s->A, NULL, z, p, grad ? s->g : NULL, 1.0 / s->f0, s->scratch->data);
    double ft = pnorm(s->C, s->C0, z, p, grad ? s->g : NULL, E / s->f0, s->scratch->data);
    double L = (fs + E * ft) / s->f0 + s->lambda * h + 0.5 * rho * h * h - s->mu * barrier + 0.5 * rho * pen;
    if (grad)
        for (size_t i = 0; i < n; i++) {
            double zi = z->data[i];
            double gi = s->lambda + rho * h - (s->mu > 0 ? s->mu / zi : 0);
            double up = s->capz->data[i] >= 0 ? zi - s->capz->data[i] : 0;
            double dn = s->minz->data[i] - zi;
            if (up > 0)
                gi += rho * up;
            if (dn > 0)
                gi -= rho * dn;
            s->g->data[i] += gi;
        }
    return isnan(L) ? HUGE_VAL : L;
}

static int alm_set(void *vs, const slv_problem *p, const slv_params *prm)
{
    alm_state *s = vs;
    size_t n = s->n;
    double D = (double)p->samples;
    for (size_t i = 0; i < n; i++) {
        s->A->data[i] = p->send_s[i] * D;
        s->C->data[i] = p->batch_s[i] / p->batch[i] * D;
        s->C0->data[i] = slv_comm_(p, i);
        s->capz->data[i] = slv_cap_(p, i) >= 0 ? (double)slv_cap_(p, i) / D : -1;
        s->minz->data[i] = (double)slv_min_(p, i) / D;
        s->z->data[i] = 1.0 / (double)n; /* the paper's uniform start */
    }
    s->f0 = 1;
    double f0 = pnorm(s->A, NULL, s->z, prm->p, NULL, 0, s->scratch->data) +
                p->epochs * pnorm(s->C, s->C0, s->z, prm->p, NULL, 0, s->scratch->data);
    s->f0 = (isfinite(f0) && f0 > 0) ? f0 : 1;
    s->lambda = 0;
    s->mu = prm->mu0;
    s->step = prm->eta;
    s->inner = s->outer = 0;
    s->inner_ok = s->converged = s->numeric = s->finished = 0;
    return DP_OK;
}

static int alm_iterate(void *vs, const slv_problem *p, const slv_params *prm)
{
    alm_state *s = vs;
    if (s->finished)
        return 0;
    double E = p->epochs, rho = prm->rho, pp = prm->p;
    double L = lagr(s, s->z, E, rho, pp, 1);
    enum { NM = 10 };
    double hist[NM] = {0};
    s->inner_ok = 0;
    for (int k = 0; k < prm->zeta; k++) {
        double gn = gsl_blas_dnrm2(s->g);
        if (!isfinite(L) || !isfinite(gn)) {
            s->numeric = 1;
            break;
        }
        if (gn < prm->eps) {
            s->inner_ok = 1;
            break;
        }
        s->inner++;
        /* Barzilai-Borwein step (s's / s'y from the last move) as the first
         * trial: plain gradient steps crawl on the p = 100 surrogate */
        double t = s->step, Lt = HUGE_VAL;
        /* non-monotone Armijo (Grippo et al.; Raydan's global BB): compare
         * with the worst of the last NM values so BB steps are not cut */
        double Lref = L;
        for (int j = 0; j < NM && j < k; j++)
            Lref = hist[j] > Lref ? hist[j] : Lref;
        if (k > 0) {
            double ss, sy;
            gsl_vector_memcpy(s->trial, s->z);
            gsl_vector_sub(s->trial, s->zprev);
            gsl_vector_memcpy(s->scratch, s->g);
            gsl_vector_sub(s->scratch, s->gprev);
            gsl_blas_ddot(s->trial, s->trial, &ss);
            gsl_blas_ddot(s->trial, s->scratch, &sy);
            if (sy > 0 && ss > 0)
                t = ss / sy < prm->eta ? ss / sy : prm->eta;
        }
        int ok = 0;
        for (int half = 0; half < 80; half++) {
            gsl_vector_memcpy(s->trial, s->z);
            gsl_blas_daxpy(-t, s->g, s->trial);
            Lt = lagr(s, s->trial, E, rho, pp, 0);
            if (Lt <= Lref - 1e-4 * t * gn * gn) {
                ok = 1;
                break;
            }
            t *= 0.5;
        }
        if (!ok) {
            /* no descent along the gradient at double precision: the inner
             * problem is solved as well as this arithmetic allows */
            s->inner_ok = gn < 1e3 * prm->eps;
            break;
        }
        gsl_vector_memcpy(s->zprev, s->z);
        gsl_vector_memcpy(s->gprev, s->g);
        gsl_vector_memcpy(s->z, s->trial);
        /* remember the step; try a larger one next time (up to eta) */
        s->step = 2 * t < prm->eta ? 2 * t : prm->eta;
        hist[k % NM] = L;
        L = lagr(s, s->z, E, rho, pp, 1);
    }
    double sum = 0;
    for (size_t i = 0; i < s->n; i++)
        sum += s->z->data[i];
    double h = sum - 1;
    s->outer++;
    if (s->numeric) {
        s->finished = 1;
        return 0;
    }
    s->lambda += rho * h;
    double mu_now = s->mu;
    s->mu *= prm->mu_decay;
    s->step = prm->eta; /* the landscape changed: start the steps afresh */
    if (s->inner_ok && fabs(h) < prm->eps && mu_now <= prm->eps) {
        s->converged = 1;
        s->finished = 1;
        return 0;
    }
    if (s->outer >= prm->psi) {
        s->finished = 1;
        return 0;
    }
    return 1;
}

static int alm_finish(void *vs, const slv_problem *p, const slv_params *prm, slv_result *r)
{
    alm_state *s = vs;
    size_t n = s->n;
    double D = (double)p->samples, sum = 0;
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        double zi = s->z->data[i];
        if (!isfinite(zi)) {
            bad = 1;
            break;
        }
        sum += zi > 0 ? zi : 0;
    }
    if (bad || !(sum > 0)) {
        /* NaN never reaches the output: fall back to the uniform start */
        s->numeric = 1;
        for (size_t i = 0; i < n; i++)
            s->z->data[i] = 1.0 / (double)n;
        sum = 1;
    }
    for (size_t i = 0; i < n; i++) {
        double zi = s->z->data[i];
        r->relaxed[i] = (zi > 0 ? zi : 0) / sum * D;
    }
    int rc = prm->rounding == SLV_ROUND_LARGEST_REMAINDER
                 ? slv_round_largest_remainder(p, r->relaxed, r->alloc)
                 : slv_round_batch(p, r->relaxed, r->alloc);
    if (rc)
        return rc;
    double lb;
    rc = slv_relaxed_solve(p, NULL, &lb, NULL);
    if (rc)
        return rc;
    r->lower_bound_s = lb;
    r->int_lower_bound_s = lb;
    double smax = 0, tmax = 0;
    for (size_t i = 0; i < n; i++) {
        double v = p->send_s[i] * r->relaxed[i];
        double l = slv_comm_(p, i) + p->batch_s[i] / p->batch[i] * r->relaxed[i];
        smax = v > smax ? v : smax;
        tmax = l > tmax ? l : tmax;
    }
    r->relaxed_s = smax + p->epochs * tmax + p->const_s;
    r->iterations = s->inner;
    r->outer_iterations = s->outer;
    r->status = s->numeric ? SLV_STATUS_NUMERIC : s->converged ? SLV_STATUS_CONVERGED : SLV_STATUS_MAX_ITER;
    r->rounding = prm->rounding;
    return DP_OK;
}

static const slv_method alm_method = {
    "alm", sizeof(alm_state), alm_alloc, alm_set, alm_iterate, alm_finish, alm_free,
};
const slv_method *const slv_alm = &alm_method;
