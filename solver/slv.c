/* slv.c: the solver object, input validation, the integer objective and the
 * one-call convenience.  The algorithms live in slv_exact.c, slv_alm.c and
 * slv_round.c behind the method table (struct slv_method in slv.h).
 *
 * Invariants: after a successful slv_set the solver holds its own copy of the
 * problem with comm_s, cap and min_share filled in (0, -1, 0 when the caller
 * passed NULL), so the methods never test for NULL arrays; the result's alloc
 * always sums to D when slv_solve returns 0.
 */
#include "slv.h"
#include "log.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <gsl/gsl_errno.h>

struct slv_solver {
    const slv_method *m;
    size_t n;
    void *state;
    slv_params prm;
    slv_problem p; /* points into the arrays below */
    double *send_s, *batch_s, *comm_s;
    int *batch;
    int64_t *cap, *min_share;
    int loaded; /* slv_set succeeded */
    int done;   /* iterate returned 0 */
    int solved; /* result filled */
    double cpu_s;
    slv_result res;
};

/* ---- names ------------------------------------------------------------- */

const slv_method *slv_method_by_name(const char *name)
{
    if (!name)
        return NULL;
    if (strcmp(name, "exact") == 0)
        return slv_exact;
    if (strcmp(name, "alm") == 0)
        return slv_alm;
    return NULL;
}

const char *slv_method_name(const slv_method *m)
{
    return m ? m->name : "?";
}

const char *slv_rounding_name(slv_rounding r)
{
    switch (r) {
    case SLV_ROUND_BATCH:
        return "batch";
    case SLV_ROUND_LARGEST_REMAINDER:
        return "largest-remainder";
    }
    return "?";
}

const char *slv_status_name(slv_status s)
{
    switch (s) {
    case SLV_STATUS_RUNNING:
        return "running";
    case SLV_STATUS_OPTIMAL:
        return "optimal";
    case SLV_STATUS_NEAR_OPTIMAL:
        return "near-optimal";
    case SLV_STATUS_CONVERGED:
        return "converged";
    case SLV_STATUS_MAX_ITER:
        return "max-iter";
    case SLV_STATUS_NUMERIC:
        return "numeric-failure";
    }
    return "?";
}

/* Defaults: see solver/README.md ("ALM defaults") for the reasoning. */
void slv_params_default(slv_params *out)
{
    if (!out)
        return;
    out->p = 100.0;
    out->rho = 10.0;
    out->mu0 = 1e-5;
    out->mu_decay = 0.1;
    out->eta = 1.0;
    out->eps = 1e-6;
    out->zeta = 2000;
    out->psi = 30;
    out->rounding = SLV_ROUND_BATCH;
    out->exact_max_evals = 0;
}

/* ---- validation ---------------------------------------------------------- */

/* "device i (name)": formatted only when a message needs it (an snprintf
 * per device would be a tenth of the solve time at N = 10^6). */
static const char *devname(const slv_problem *p, size_t i, char *buf, size_t len)
{
    if (p->names && p->names[i])
        snprintf(buf, len, "device %zu (%s)", i, p->names[i]);
    else
        snprintf(buf, len, "device %zu", i);
    return buf;
}

int slv_problem_check(const slv_problem *p, dp_err *err)
{
    char dn[256];
    if (!p)
        return dp_err_set(err, DP_EINPUT, "solver: no problem given");
    if (p->n == 0)
        return dp_err_set(err, DP_EINPUT, "solver: zero devices");
    if (p->samples < 1)
        return dp_err_set(err, DP_EINPUT, "solver: dataset size %lld samples, need >= 1",
                          (long long)p->samples);
    if (p->samples > ((int64_t)1 << 53))
        return dp_err_set(err, DP_EINPUT, "solver: dataset size %lld samples exceeds 2^53",
                          (long long)p->samples);
    if (p->epochs < 1)
        return dp_err_set(err, DP_EINPUT, "solver: %d epochs, need >= 1", p->epochs);
    if (!isfinite(p->const_s) || p->const_s < 0)
        return dp_err_set(err, DP_EINPUT, "solver: constant term %g s must be finite and >= 0", p->const_s);
    if (!isfinite(p->agg_s) || p->agg_s < 0)
        return dp_err_set(err, DP_EINPUT, "solver: aggregation %g s per device must be finite and >= 0",
                          p->agg_s);
    for (size_t i = 0; p->agg_units && i < p->n; i++)
        if (p->agg_units[i] < 1)
            return dp_err_set(err, DP_EINPUT, "solver: entry %zu stands for %lld devices, need >= 1", i,
                              (long long)p->agg_units[i]);
    if (!p->send_s || !p->batch || !p->batch_s)
        return dp_err_set(err, DP_EINPUT, "solver: send_s, batch and batch_s arrays are required");
    int64_t min_sum = 0, cap_sum = 0;
    int uncapped = 0;
    for (size_t i = 0; i < p->n; i++) {
        double a = p->send_s[i];
        if (!isfinite(a) || a <= 0)
            return dp_err_set(err, DP_EINPUT,
                              "solver: %s: send time per sample %g s is not finite and > 0 "
                              "(zero or infinite bandwidth?)",
                              devname(p, i, dn, sizeof dn), a);
        if (p->batch[i] < 1)
            return dp_err_set(err, DP_EINPUT, "solver: %s: batch size %d, need >= 1",
                              devname(p, i, dn, sizeof dn), p->batch[i]);
        double t = p->batch_s[i];
        if (!isfinite(t) || t <= 0)
            return dp_err_set(err, DP_EINPUT, "solver: %s: seconds per batch %g is not finite and > 0",
                              devname(p, i, dn, sizeof dn), t);
        if (p->comm_s) {
            double c = p->comm_s[i];
            if (!isfinite(c) || c < 0)
                return dp_err_set(err, DP_EINPUT,
                                  "solver: %s: model exchange time %g s is not finite and >= 0",
                                  devname(p, i, dn, sizeof dn), c);
        }
        /* the whole dataset on one device must still be a finite time, or
         * products in the search would overflow to inf */
        double comm0 = p->comm_s ? p->comm_s[i] : 0.0;
        double worst = a * (double)p->samples +
                       (double)p->epochs * (comm0 + t * ceil((double)p->samples / p->batch[i])) + p->const_s;
        if (!isfinite(worst))
            return dp_err_set(err, DP_EINPUT,
                              "solver: %s: times overflow (send %g s/sample, %g s/batch over %lld samples)",
                              devname(p, i, dn, sizeof dn), a, t, (long long)p->samples);
        int64_t cap = p->cap ? p->cap[i] : -1;
        int64_t mn = p->min_share ? p->min_share[i] : 0;
        if (cap >= 0 && cap < p->batch[i])
            return dp_err_set(err, DP_EINPUT,
                              "solver: %s: cannot hold one batch (cap %lld samples < batch size %d)",
                              devname(p, i, dn, sizeof dn), (long long)cap, p->batch[i]);
        if (mn < 0)
            return dp_err_set(err, DP_EINPUT, "solver: %s: minimum share %lld is negative",
                              devname(p, i, dn, sizeof dn), (long long)mn);
        if (mn > p->samples)
            return dp_err_set(err, DP_EINPUT, "solver: %s: minimum share %lld exceeds the dataset (%lld)",
                              devname(p, i, dn, sizeof dn), (long long)mn, (long long)p->samples);
        if (cap >= 0 && mn > cap)
            return dp_err_set(err, DP_EINPUT, "solver: %s: minimum share %lld exceeds its cap %lld",
                              devname(p, i, dn, sizeof dn), (long long)mn, (long long)cap);
        min_sum += mn;
        if (min_sum > p->samples)
            return dp_err_set(err, DP_EINPUT,
                              "solver: infeasible: minimum shares up to %s sum to %lld > dataset %lld",
                              devname(p, i, dn, sizeof dn), (long long)min_sum, (long long)p->samples);
        if (cap < 0)
            uncapped = 1;
        else if (cap_sum < p->samples)
            cap_sum += cap > p->samples ? p->samples : cap;
    }
    if (!uncapped && cap_sum < p->samples)
        return dp_err_set(err, DP_EINPUT,
                          "solver: infeasible: device caps sum to %lld < dataset %lld samples",
                          (long long)cap_sum, (long long)p->samples);
    return DP_OK;
}

static int params_check(const slv_params *q, dp_err *err)
{
    if (!isfinite(q->p) || q->p < 1)
        return dp_err_set(err, DP_EINPUT, "solver: p-norm exponent %g, need finite >= 1", q->p);
    if (!isfinite(q->rho) || q->rho <= 0)
        return dp_err_set(err, DP_EINPUT, "solver: penalty rho %g, need finite > 0", q->rho);
    if (!isfinite(q->mu0) || q->mu0 < 0)
        return dp_err_set(err, DP_EINPUT, "solver: barrier mu0 %g, need finite >= 0", q->mu0);
    if (!isfinite(q->mu_decay) || q->mu_decay <= 0 || q->mu_decay > 1)
        return dp_err_set(err, DP_EINPUT, "solver: mu_decay %g, need in (0, 1]", q->mu_decay);
    if (!isfinite(q->eta) || q->eta <= 0)
        return dp_err_set(err, DP_EINPUT, "solver: step eta %g, need finite > 0", q->eta);
    if (!isfinite(q->eps) || q->eps <= 0)
        return dp_err_set(err, DP_EINPUT, "solver: tolerance eps %g, need finite > 0", q->eps);
    if (q->zeta < 1 || q->psi < 1)
        return dp_err_set(err, DP_EINPUT, "solver: zeta %d and psi %d must be >= 1", q->zeta, q->psi);
    if (q->rounding != SLV_ROUND_BATCH && q->rounding != SLV_ROUND_LARGEST_REMAINDER)
        return dp_err_set(err, DP_EINPUT, "solver: unknown rounding %d", (int)q->rounding);
    if (q->exact_max_evals < 0)
        return dp_err_set(err, DP_EINPUT, "solver: exact_max_evals %ld, need >= 0", q->exact_max_evals);
    return DP_OK;
}

/* ---- objective ------------------------------------------------------------ */

double slv_objective(const slv_problem *p, const int64_t *alloc)
{
    if (!p || !alloc || p->n == 0)
        return HUGE_VAL;
    int64_t sum = 0;
    double smax = 0, tmax = 0, units = 0;
    for (size_t i = 0; i < p->n; i++) {
        int64_t x = alloc[i];
        if (x < 0 || x > p->samples)
            return HUGE_VAL;
        sum += x;
        double s = p->send_s[i] * (double)x;
        if (s > smax)
            smax = s;
        if (x == 0 && p->allow_exclude)
            continue;
        units += p->agg_units ? (double)p->agg_units[i] : 1.0;
        int64_t nb = (x + p->batch[i] - 1) / p->batch[i];
        double lvl = (p->comm_s ? p->comm_s[i] : 0.0) + p->batch_s[i] * (double)nb;
        if (lvl > tmax)
            tmax = lvl;
    }
    if (sum != p->samples)
        return HUGE_VAL;
    double f = smax + (double)p->epochs * (tmax + p->agg_s * units) + p->const_s;
    return isnan(f) ? HUGE_VAL : f;
}

/* ---- solver object -------------------------------------------------------- */

static double cpu_now(void)
{
    return (double)clock() / CLOCKS_PER_SEC;
}

slv_solver *slv_alloc(const slv_method *m, size_t n, dp_err *err)
{
    if (!m) {
        dp_err_set(err, DP_EINPUT, "solver: no method given");
        return NULL;
    }
    if (n == 0) {
        dp_err_set(err, DP_EINPUT, "solver: zero devices");
        return NULL;
    }
    gsl_set_error_handler_off(); /* GSL's default handler aborts; we check statuses */
    slv_solver *s = dp_calloc(1, sizeof *s);
    if (!s)
        goto oom;
    s->m = m;
    s->n = n;
    s->send_s = dp_calloc(n, sizeof(double));
    s->batch_s = dp_calloc(n, sizeof(double));
    s->comm_s = dp_calloc(n, sizeof(double));
    s->batch = dp_calloc(n, sizeof(int));
    s->cap = dp_calloc(n, sizeof(int64_t));
    s->min_share = dp_calloc(n, sizeof(int64_t));
    s->res.alloc = dp_calloc(n, sizeof(int64_t));
    s->res.relaxed = dp_calloc(n, sizeof(double));
    s->state = dp_calloc(1, m->size ? m->size : 1);
    if (!s->send_s || !s->batch_s || !s->comm_s || !s->batch || !s->cap || !s->min_share || !s->res.alloc ||
        !s->res.relaxed || !s->state)
        goto oom;
    s->res.n = n;
    if (m->alloc(s->state, n) != 0)
        goto oom;
    return s;
oom:
    if (s && s->state && m->free) {
        m->free(s->state); /* safe on a zeroed or half-built state */
    }
    if (s)
        s->m = NULL;
    slv_free(s);
    dp_err_set(err, DP_ENOMEM, "solver: out of memory for %zu devices", n);
    return NULL;
}

void slv_free(slv_solver *s)
{
    if (!s)
        return;
    if (s->m && s->state)
        s->m->free(s->state);
    dp_free(s->state);
    dp_free(s->send_s);
    dp_free(s->batch_s);
    dp_free(s->comm_s);
    dp_free(s->batch);
    dp_free(s->cap);
    dp_free(s->min_share);
    dp_free(s->res.alloc);
    dp_free(s->res.relaxed);
    dp_free(s);
}

int slv_set(slv_solver *s, const slv_problem *p, const slv_params *params, dp_err *err)
{
    if (!s)
        return dp_err_set(err, DP_EINPUT, "solver: no solver given");
    s->loaded = s->done = s->solved = 0;
    int rc = slv_problem_check(p, err);
    if (rc)
        return rc;
    if (p->n != s->n)
        return dp_err_set(err, DP_EINPUT, "solver: problem has %zu devices, solver was allocated for %zu",
                          p->n, s->n);
    if (params)
        s->prm = *params;
    else
        slv_params_default(&s->prm);
    rc = params_check(&s->prm, err);
    if (rc)
        return rc;
    size_t n = s->n;
    memcpy(s->send_s, p->send_s, n * sizeof(double));
    memcpy(s->batch_s, p->batch_s, n * sizeof(double));
    memcpy(s->batch, p->batch, n * sizeof(int));
    for (size_t i = 0; i < n; i++) {
        s->comm_s[i] = p->comm_s ? p->comm_s[i] : 0.0;
        s->cap[i] = (p->cap && p->cap[i] >= 0) ? p->cap[i] : -1;
        s->min_share[i] = p->min_share ? p->min_share[i] : 0;
    }
    s->p = *p;
    s->p.send_s = s->send_s;
    s->p.batch_s = s->batch_s;
    s->p.batch = s->batch;
    s->p.comm_s = s->comm_s;
    s->p.cap = s->cap;
    s->p.min_share = s->min_share;
    s->p.names = NULL; /* borrowed pointers are not kept past slv_set */
    s->p.allow_exclude = p->allow_exclude ? 1 : 0;
    double t0 = cpu_now();
    rc = s->m->set(s->state, &s->p, &s->prm);
    s->cpu_s = cpu_now() - t0;
    if (rc)
        return dp_err_set(err, rc, "solver %s: out of memory while setting up %zu devices", s->m->name, n);
    s->loaded = 1;
    return DP_OK;
}

static volatile sig_atomic_t *interrupt_flag;

void slv_set_interrupt(volatile sig_atomic_t *flag)
{
    interrupt_flag = flag;
}

int slv_interrupted(void)
{
    return interrupt_flag && *interrupt_flag;
}

int slv_iterate(slv_solver *s)
{
    if (!s || !s->loaded)
        return DP_EINPUT;
    if (s->done)
        return 0;
    double t0 = cpu_now();
    int rc = s->m->iterate(s->state, &s->p, &s->prm);
    s->cpu_s += cpu_now() - t0;
    if (rc == 0)
        s->done = 1;
    return rc;
}

int slv_solve(slv_solver *s, dp_err *err)
{
    if (!s || !s->loaded)
        return dp_err_set(err, DP_EINPUT, "solver: slv_solve before a successful slv_set");
    int rc;
    while ((rc = slv_iterate(s)) > 0)
        if (slv_interrupted()) {
            rc = DP_ERUN;
            break;
        }
    if (rc < 0)
        return dp_err_set(err, rc, "solver %s: %s", s->m->name,
                          rc == DP_ENOMEM ? "out of memory"
                          : rc == DP_ERUN ? "interrupted"
                                          : "iteration failed");
    double t0 = cpu_now();
    slv_result *r = &s->res;
    rc = s->m->finish(s->state, &s->p, &s->prm, r);
    if (rc)
        return dp_err_set(err, rc, "solver %s: out of memory while rounding", s->m->name);
    s->cpu_s += cpu_now() - t0;
    /* Common bookkeeping every method shares: the objective and its parts. */
    r->objective_s = slv_objective(&s->p, r->alloc);
    double smax = 0, tmax = 0;
    for (size_t i = 0; i < s->n; i++) {
        double v = s->send_s[i] * (double)r->alloc[i];
        if (v > smax)
            smax = v;
        if (r->alloc[i] == 0 && s->p.allow_exclude)
            continue;
        double lvl = s->comm_s[i] + s->batch_s[i] * (double)((r->alloc[i] + s->batch[i] - 1) / s->batch[i]);
        if (lvl > tmax)
            tmax = lvl;
    }
    r->send_s = smax;
    r->epoch_s = tmax;
    if (!isfinite(r->objective_s))
        return dp_err_set(err, DP_ERUN, "solver %s: internal error: allocation does not sum to %lld",
                          s->m->name, (long long)s->p.samples);
    if (r->int_lower_bound_s < r->lower_bound_s)
        r->int_lower_bound_s = r->lower_bound_s;
    if (r->int_lower_bound_s > r->objective_s)
        r->int_lower_bound_s = r->objective_s;
    r->solve_seconds = s->cpu_s;
    s->solved = 1;
    return DP_OK;
}

const slv_result *slv_get_result(const slv_solver *s)
{
    return (s && s->solved) ? &s->res : NULL;
}

void slv_result_free(slv_result *r)
{
    if (!r)
        return;
    dp_free(r->alloc);
    dp_free(r->relaxed);
    dp_free(r);
}

static int solve_once(const char *method, const slv_problem *p, const slv_params *params, slv_result **out,
                      dp_err *err)
{
    if (!out)
        return dp_err_set(err, DP_EINPUT, "solver: no output pointer");
    *out = NULL;
    const slv_method *m = slv_method_by_name(method);
    if (!m)
        return dp_err_set(err, DP_EINPUT, "solver: unknown method '%s' (expected exact or alm)",
                          method ? method : "(null)");
    int rc = slv_problem_check(p, err);
    if (rc)
        return rc;
    slv_solver *s = slv_alloc(m, p->n, err);
    if (!s)
        return err ? err->code : DP_ENOMEM;
    rc = slv_set(s, p, params, err);
    if (!rc)
        rc = slv_solve(s, err);
    if (rc) {
        slv_free(s);
        return rc;
    }
    slv_result *r = dp_malloc(sizeof *r);
    if (r) {
        *r = s->res;
        r->alloc = dp_calloc(p->n, sizeof(int64_t));
        r->relaxed = dp_calloc(p->n, sizeof(double));
    }
    if (!r || !r->alloc || !r->relaxed) {
        if (r) {
            dp_free(r->alloc);
            dp_free(r->relaxed);
            dp_free(r);
        }
        slv_free(s);
        return dp_err_set(err, DP_ENOMEM, "solver: out of memory copying the result");
    }
    memcpy(r->alloc, s->res.alloc, p->n * sizeof(int64_t));
    memcpy(r->relaxed, s->res.relaxed, p->n * sizeof(double));
    slv_free(s);
    DP_LOG(LOG_SOLVER, LOG_INFO, -1, "%s on %zu devices: objective %.6g s (bound %.6g s), %s", method, p->n,
           r->objective_s, r->lower_bound_s, slv_status_name(r->status));
    *out = r;
    return DP_OK;
}

/* ---- the participant search (aggregation per participant) ------------------ */

/* p restricted to the devices with keep[i]: arrays into buf (n entries each). */
typedef struct {
    double *send, *bt, *comm;
    int *batch;
    int64_t *cap, *mn, *units;
    const char **names;
    size_t *idx;
} sub_buf;

static void sub_make(const slv_problem *p, const unsigned char *keep, sub_buf *b, slv_problem *q)
{
    size_t k = 0;
    for (size_t i = 0; i < p->n; i++) {
        if (!keep[i])
            continue;
        b->idx[k] = i;
        b->send[k] = p->send_s[i];
        b->bt[k] = p->batch_s[i];
        b->comm[k] = p->comm_s ? p->comm_s[i] : 0.0;
        b->batch[k] = p->batch[i];
        b->cap[k] = p->cap ? p->cap[i] : -1;
        b->mn[k] = p->min_share ? p->min_share[i] : 0;
        b->units[k] = p->agg_units ? p->agg_units[i] : 1;
        b->names[k] = p->names ? p->names[i] : NULL;
        k++;
    }
    *q = *p;
    q->n = k;
    q->send_s = b->send;
    q->batch_s = b->bt;
    q->comm_s = b->comm;
    q->batch = b->batch;
    q->cap = b->cap;
    q->min_share = b->mn;
    q->agg_units = b->units;
    q->names = p->names ? b->names : NULL;
    q->agg_s = 0; /* the methods see the participants' exchange; F adds aggregation */
}

int slv_solve_problem(const char *method, const slv_problem *p, const slv_params *params, slv_result **out,
                      dp_err *err)
{
    if (!p || p->agg_s == 0 || !p->allow_exclude) {
        int rc = solve_once(method, p, params, out, err);
        if (!rc && p && p->agg_s > 0) { /* every device participates: a constant */
            (*out)->objective_s = slv_objective(p, (*out)->alloc);
            double all = 0;
            for (size_t i = 0; i < p->n; i++)
                all += p->agg_units ? (double)p->agg_units[i] : 1.0;
            double extra = (double)p->epochs * p->agg_s * all;
            (*out)->lower_bound_s += extra;
            (*out)->int_lower_bound_s += extra;
            (*out)->relaxed_s += extra;
        }
        return rc;
    }
    if (!out)
        return dp_err_set(err, DP_EINPUT, "solver: no output pointer");
    *out = NULL;
    int rc = slv_problem_check(p, err);
    if (rc)
        return rc;
    size_t n = p->n;
    sub_buf b = {dp_calloc(n, sizeof(double)),  dp_calloc(n, sizeof(double)),  dp_calloc(n, sizeof(double)),
                 dp_calloc(n, sizeof(int)),     dp_calloc(n, sizeof(int64_t)), dp_calloc(n, sizeof(int64_t)),
                 dp_calloc(n, sizeof(int64_t)), dp_calloc(n, sizeof(char *)),  dp_calloc(n, sizeof(size_t))};
    unsigned char *keep = dp_malloc(n);
    slv_result *best = NULL;
    if (!b.send || !b.bt || !b.comm || !b.batch || !b.cap || !b.mn || !b.units || !b.names || !b.idx ||
        !keep) {
        rc = dp_err_set(err, DP_ENOMEM, "solver: out of memory for the participant search");
        goto done;
    }
    memset(keep, 1, n);
    double min_unit = HUGE_VAL;
    for (size_t i = 0; i < n; i++)
        min_unit = fmin(min_unit, p->agg_units ? (double)p->agg_units[i] : 1.0);
    double bound = 0;
    int worse = 0;
    for (int step = 0; step <= 64 && worse < 2; step++) {
        slv_problem q;
        sub_make(p, keep, &b, &q);
        slv_result *r = NULL;
        dp_err e2 = {0};
        int src = solve_once(method, &q, params, &r, step ? &e2 : err);
        if (src) {
            if (!step) {
                rc = src;
                goto done;
            }
            break; /* the rest cannot hold the data (caps): keep the best so far */
        }
        slv_result *full = dp_malloc(sizeof *full);
        if (full) {
            *full = *r;
            full->n = n;
            full->alloc = dp_calloc(n, sizeof(int64_t));
            full->relaxed = dp_calloc(n, sizeof(double));
        }
        if (!full || !full->alloc || !full->relaxed) {
            if (full) {
                dp_free(full->alloc);
                dp_free(full->relaxed);
                dp_free(full);
            }
            slv_result_free(r);
            rc = dp_err_set(err, DP_ENOMEM, "solver: out of memory for the participant search");
            goto done;
        }
        for (size_t k = 0; k < q.n; k++) {
            full->alloc[b.idx[k]] = r->alloc[k];
            full->relaxed[b.idx[k]] = r->relaxed[k];
        }
        full->objective_s = slv_objective(p, full->alloc);
        if (!step) /* over all devices: a bound for any set, plus one participant's aggregation */
            bound = r->int_lower_bound_s + (double)p->epochs * p->agg_s * min_unit;
        if (!best || full->objective_s < best->objective_s) {
            slv_result_free(best);
            best = full;
            worse = 0;
        } else {
            slv_result_free(full);
            worse++;
        }
        /* leave out the costliest participant that has no minimum share */
        size_t drop = n, parts = 0;
        double worst = -1;
        for (size_t k = 0; k < q.n; k++) {
            if (r->alloc[k] == 0) {
                keep[b.idx[k]] = 0; /* the method left it out already */
                continue;
            }
            parts++;
            double c = q.send_s[k] + (double)p->epochs * q.batch_s[k] / q.batch[k];
            if (q.min_share[k] == 0 && c > worst) {
                worst = c;
                drop = b.idx[k];
            }
        }
        slv_result_free(r);
        if (drop == n || parts < 2)
            break;
        keep[drop] = 0;
    }
    best->lower_bound_s = fmin(best->lower_bound_s + (double)p->epochs * p->agg_s * min_unit, bound);
    best->int_lower_bound_s = fmin(bound, best->objective_s);
    if (best->lower_bound_s > best->int_lower_bound_s)
        best->lower_bound_s = best->int_lower_bound_s;
    if (best->status == SLV_STATUS_OPTIMAL && best->objective_s > bound * (1 + 1e-12))
        best->status = SLV_STATUS_NEAR_OPTIMAL;
    double smax = 0, tmax = 0;
    for (size_t i = 0; i < n; i++) {
        smax = fmax(smax, p->send_s[i] * (double)best->alloc[i]);
        if (best->alloc[i] > 0)
            tmax = fmax(tmax, (p->comm_s ? p->comm_s[i] : 0.0) +
                                  p->batch_s[i] * (double)((best->alloc[i] + p->batch[i] - 1) / p->batch[i]));
    }
    best->send_s = smax;
    best->epoch_s = tmax;
    *out = best;
    best = NULL;
done:
    slv_result_free(best);
    dp_free(b.send);
    dp_free(b.bt);
    dp_free(b.comm);
    dp_free(b.batch);
    dp_free(b.cap);
    dp_free(b.mn);
    dp_free(b.units);
    dp_free((void *)b.names);
    dp_free(b.idx);
    dp_free(keep);
    return rc;
}
