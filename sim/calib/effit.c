/* effit.c: fitting the statistical-efficiency model to measured accuracy
 * (effit.h). */
#include "calib/effit.h"
#include "calib/lsq.h"

#include <gsl/gsl_errno.h>
#include <gsl/gsl_vector.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define MAXP (4 + EFFIT_MAX_CURVE)

/* What one evaluation needs: the spec, the parameters it writes trial
 * values into, and which value each free variable is. */
typedef struct fit {
    const effit_spec *sp;
    eff_params *p;
    size_t np;
    int what[MAXP]; /* EFFIT_NOISE, EFFIT_A, EFFIT_KAPPA, or EFFIT_CURVE + curve index */
    double nlo, nhi, amax, kmax;
} fit;

static double logistic(double u)
{
    return 1 / (1 + exp(-u));
}

static double logit(double f)
{
    f = f < 1e-6 ? 1e-6 : f > 1 - 1e-6 ? 1 - 1e-6 : f;
    return log(f / (1 - f));
}

/* Set free value i directly (value space). */
static void set_value(fit *f, size_t i, double v)
{
    int w = f->what[i];
    if (w == EFFIT_NOISE)
        eff_params_set_noise(f->p, v);
    else if (w == EFFIT_A)
        eff_params_set_discounts(f->p, v, eff_params_kappa(f->p), eff_params_use_rho(f->p));
    else if (w == EFFIT_KAPPA)
        eff_params_set_discounts(f->p, eff_params_a(f->p), v, eff_params_use_rho(f->p));
    else
        eff_params_set_curve_metric(f->p, (size_t)(w - EFFIT_CURVE), v);
}

/* A value a little away from v, inside its range: 5% of the noise scale,
 * 5% of a's or kappa's range, 0.01 of a metric. */
static double nudge(const fit *f, size_t i, double v)
{
    int w = f->what[i];
    if (w == EFFIT_NOISE)
        return v * 1.05 <= f->nhi ? v * 1.05 : v / 1.05;
    double step = w == EFFIT_A ? 0.05 * f->amax : w == EFFIT_KAPPA ? 0.05 * f->kmax : 0.01;
    return w >= EFFIT_CURVE || v - step < 0 ? v + step : v - step;
}

/* Free variables u (unbounded) -> values, written into f->p: the scalars
 * through logistics onto their ranges, the curve's metrics as they are. */
static void set_u(fit *f, const double *u, double *val)
{
    for (size_t i = 0; i < f->np; i++) {
        int w = f->what[i];
        double L = logistic(u[i]), v;
        if (w == EFFIT_NOISE) {
            v = exp(log(f->nlo) + (log(f->nhi) - log(f->nlo)) * L);
            eff_params_set_noise(f->p, v);
        } else if (w == EFFIT_A) {
            v = f->amax * L;
            eff_params_set_discounts(f->p, v, eff_params_kappa(f->p), eff_params_use_rho(f->p));
        } else if (w == EFFIT_KAPPA) {
            v = f->kmax * L;
            eff_params_set_discounts(f->p, eff_params_a(f->p), v, eff_params_use_rho(f->p));
        } else { /* a curve point's metric: the value itself (a linear parameter) */
            v = u[i];
            eff_params_set_curve_metric(f->p, (size_t)(w - EFFIT_CURVE), v);
        }
        if (val)
            val[i] = v;
    }
}

/* The inverse for a start: the u of the parameters' current values. */
static void get_u(const fit *f, double *u)
{
    for (size_t i = 0; i < f->np; i++) {
        int w = f->what[i];
        if (w == EFFIT_NOISE) {
            double b = eff_params_noise(f->p);
            b = b < f->nlo ? f->nlo : b > f->nhi ? f->nhi : b;
            u[i] = logit((log(b) - log(f->nlo)) / (log(f->nhi) - log(f->nlo)));
        } else if (w == EFFIT_A) {
            u[i] = logit(eff_params_a(f->p) / f->amax);
        } else if (w == EFFIT_KAPPA) {
            u[i] = logit(eff_params_kappa(f->p) / f->kmax);
        } else {
            u[i] = eff_params_curve_metric(f->p, (size_t)(w - EFFIT_CURVE));
        }
    }
}

double effit_predict(const eff_params *p, const effit_point *pt)
{
    if (!pt->by_time)
        return eff_metric_at_epoch(p, pt->log, (int)pt->at);
    /* at a time: the progress of the records done by then */
    size_t n = 0, len = eff_log_len(pt->log);
    if (!len || eff_log_time(pt->log, len - 1) < pt->at)
        return NAN;
    while (n < len && eff_log_time(pt->log, n) <= pt->at)
        n++;
    return eff_metric(p, eff_progress(p, pt->log, n));
}

static double weight(const effit_point *pt)
{
    return pt->weight > 0 ? pt->weight : 1;
}

static int resid_f(const gsl_vector *u, void *ctx, gsl_vector *out)
{
    fit *f = ctx;
    double uu[MAXP];
    for (size_t i = 0; i < f->np; i++)
        uu[i] = gsl_vector_get(u, i);
    set_u(f, uu, NULL);
    for (size_t k = 0; k < out->size; k++) {
        if (k >= f->sp->n_points) {
            gsl_vector_set(out, k, 0); /* padding: multifit wants n >= p */
            continue;
        }
        const effit_point *pt = &f->sp->points[k];
        double r = sqrt(weight(pt)) * (effit_predict(f->p, pt) - pt->metric);
        if (!isfinite(r))
            return GSL_EBADFUNC;
        gsl_vector_set(out, k, r);
    }
    return GSL_SUCCESS;
}

static double cost_at(fit *f, const double *u)
{
    set_u(f, u, NULL);
    double c = 0;
    for (size_t k = 0; k < f->sp->n_points; k++) {
        const effit_point *pt = &f->sp->points[k];
        double r = effit_predict(f->p, pt) - pt->metric;
        c += weight(pt) * r * r;
    }
    return c;
}

/* One trust-region run from u0; the end point in u0.  A model failure
 * (a point the log does not reach) was ruled out by check(). */
static int run_start(fit *f, double *u0)
{
    int rc = lsq_run(resid_f, f, f->sp->n_points, f->np, u0, 300);
    return rc == DP_ENOMEM ? rc : 0;
}

static int check(const effit_spec *sp, dp_err *err)
{
    if (!sp->start || !sp->n_points || sp->n_points > EFFIT_MAX_POINTS)
        return dp_err_set(err, DP_EINPUT, "accuracy fit: want a model and 1 to %d measured points",
                          EFFIT_MAX_POINTS);
    if (!sp->free)
        return dp_err_set(err, DP_EINPUT, "accuracy fit: nothing to fit");
    size_t nc = eff_params_curve_len(sp->start);
    if (!nc || nc > EFFIT_MAX_CURVE)
        return dp_err_set(err, DP_EINPUT, "accuracy fit: the reference curve needs 1 to %d points (has %zu)",
                          EFFIT_MAX_CURVE, nc);
    for (size_t k = 0; k < sp->n_points; k++) {
        const effit_point *pt = &sp->points[k];
        if (!pt->log || !isfinite(effit_predict(sp->start, pt)))
            return dp_err_set(err, DP_EINPUT, "accuracy fit: %s: the schedule's log does not reach %s %g",
                              pt->label ? pt->label : "a point", pt->by_time ? "time" : "epoch", pt->at);
        if (!isfinite(pt->metric))
            return dp_err_set(err, DP_EINPUT, "accuracy fit: %s: no measured value", pt->label);
    }
    return 0;
}

int effit_run(const effit_spec *sp, effit_result *r, dp_err *err)
{
    memset(r, 0, sizeof *r);
    int rc = check(sp, err);
    if (rc)
        return rc;
    fit f = {sp,
             eff_params_copy(sp->start),
             0,
             {0},
             sp->noise_lo > 0 ? sp->noise_lo : 1,
             sp->noise_hi > 0 ? sp->noise_hi : 1e7,
             sp->a_max > 0 ? sp->a_max : 4,
             sp->kappa_max > 0 ? sp->kappa_max : 1};
    if (!f.p)
        return dp_err_set(err, DP_ENOMEM, "out of memory");
    if (!(f.nlo < f.nhi)) {
        eff_params_free(f.p);
        return dp_err_set(err, DP_EINPUT, "accuracy fit: noise bounds %g..%g out of order", f.nlo, f.nhi);
    }
    if (sp->free & EFFIT_NOISE) {
        snprintf(r->name[f.np], sizeof r->name[0], "noise_scale");
        f.what[f.np++] = EFFIT_NOISE;
        if (eff_params_noise_kind(f.p) != EFF_BN_CONST) /* a fitted noise scale is one constant */
            eff_params_set_noise(f.p, sqrt(f.nlo * f.nhi));
    }
    if (sp->free & EFFIT_A) {
        snprintf(r->name[f.np], sizeof r->name[0], "staleness_exponent");
        f.what[f.np++] = EFFIT_A;
    }
    if (sp->free & EFFIT_KAPPA) {
        snprintf(r->name[f.np], sizeof r->name[0], "drift");
        f.what[f.np++] = EFFIT_KAPPA;
    }
    if (sp->free & EFFIT_CURVE)
        for (size_t k = sp->curve_fixed; k < eff_params_curve_len(f.p); k++) {
            snprintf(r->name[f.np], sizeof r->name[0], "curve[%zu] at %.6g", k,
                     eff_params_curve_progress(f.p, k));
            f.what[f.np++] = EFFIT_CURVE + (int)k;
        }
    if (!f.np) {
        eff_params_free(f.p);
        return dp_err_set(err, DP_EINPUT,
                          "accuracy fit: no free parameter (the curve's points are all fixed)");
    }
    /* Starts: the given values, then every corner and middle of a grid over
     * the scalars (noise, a, kappa at logistic -4, 0, 4: near each bound and
     * in the middle; a logistic saturates near a bound, where a single start
     * can stall), the curve at its given values; the best end is kept. */
    double best[MAXP], u0[MAXP], u[MAXP], bc = INFINITY;
    size_t ns = 0;
    for (size_t i = 0; i < f.np; i++)
        ns += f.what[i] < EFFIT_CURVE;
    get_u(&f, u0);
    long grid = 1;
    for (size_t i = 0; i < ns; i++)
        grid *= 3;
    for (long s = -1; s < grid; s++) {
        memcpy(u, u0, f.np * sizeof *u);
        for (size_t i = 0, g = (size_t)(s < 0 ? 0 : s); s >= 0 && i < ns; i++, g /= 3)
            u[i] = -4.0 + 4.0 * (double)(g % 3);
        if ((rc = run_start(&f, u)) < 0)
            break;
        double c = cost_at(&f, u);
        if (c < bc) {
            bc = c;
            memcpy(best, u, f.np * sizeof *u);
        }
    }
    if (rc < 0) {
        eff_params_free(f.p);
        return dp_err_set(err, rc, "accuracy fit: out of memory");
    }
    set_u(&f, best, r->value);
    r->fit = f.p;
    r->n_points = sp->n_points;
    r->n_free = f.np;
    r->cost = 0;
    for (size_t k = 0; k < sp->n_points; k++) {
        r->predicted[k] = effit_predict(f.p, &sp->points[k]);
        r->residual[k] = r->predicted[k] - sp->points[k].metric;
        r->cost += weight(&sp->points[k]) * r->residual[k] * r->residual[k];
    }
    r->sigma = sp->n_points > f.np ? sqrt(r->cost / (double)(sp->n_points - f.np)) : NAN;
    r->band = 2 * r->sigma;
    /* On a bound, and undetermined: does any prediction move when the value
     * moves a little (in value space, so a saturated logistic does not hide
     * a dependence)? */
    for (size_t i = 0; i < f.np; i++) {
        double L = logistic(best[i]), moved = 0;
        r->at_bound[i] = f.what[i] >= EFFIT_CURVE ? 0 : L < 1e-4 ? -1 : L > 1 - 1e-4 ? 1 : 0;
        set_u(&f, best, NULL);
        set_value(&f, i, nudge(&f, i, r->value[i]));
        for (size_t k = 0; k < sp->n_points; k++)
            moved = fmax(moved, fabs(effit_predict(f.p, &sp->points[k]) - r->predicted[k]));
        r->undetermined[i] = moved < EFFIT_FLAT;
    }
    set_u(&f, best, NULL);
    return 0;
}

void effit_result_free(effit_result *r)
{
    if (r) {
        eff_params_free(r->fit);
        r->fit = NULL;
    }
}

double effit_log_batch(const eff_log *l)
{
    double s = 0, w = 0;
    for (size_t i = 0; i < eff_log_len(l); i++) {
        double n = eff_log_samples(l, i);
        s += n * eff_log_batch(l, i);
        w += n;
    }
    return w > 0 ? s / w : NAN;
}

double effit_extrapolation(const effit_point *fitted, size_t n, const eff_log *pred)
{
    double lo = INFINITY, hi = 0, b = effit_log_batch(pred);
    for (size_t k = 0; k < n; k++) {
        double x = effit_log_batch(fitted[k].log);
        lo = fmin(lo, x);
        hi = fmax(hi, x);
    }
    if (!(hi > 0) || !isfinite(b))
        return NAN;
    return b > hi * (1 + 1e-9) ? b / hi : b < lo * (1 - 1e-9) ? lo / b : 1;
}
