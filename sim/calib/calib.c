/* calib.c: bounded least-squares fit of scenario values to measured
 * figures (see calib.h for the method and its guarantees).
 *
 * Invariants kept here:
 *  - a parameter's value is always inside [lo, hi]: the solver works on
 *    unconstrained u, and value = lo + (hi - lo) * logistic(u) (in log space
 *    for :log), so no evaluation is ever asked outside the plausible range;
 *  - during the fit values are passed to the scenario as %.17g text (exact,
 *    so finite differences see the model, not the printing); the reported
 *    values are rounded to 10 significant digits and *re-simulated*, so the
 *    written scenario reproduces the reported figures exactly;
 *  - GSL's error handler is off while fitting and every status is checked
 *    (the default handler aborts the process).
 */
#include "calib/calib.h"
#include "calib/lsq.h"
#include "run/runner.h"
#include "json.h"
#include "results.h"
#include "yamltree.h"

#include <gsl/gsl_errno.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_vector.h>

#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_STARTS 4
#define VALUE_DIGITS   10 /* significant digits of a reported (and written) value */
#define SENS_STEP      1e-3
#define SHORTCUT_RTOL  1e-9

/* The metrics a target may name: every double of res_run that a run
 * stores and that is deterministic (wall_s is not). */
static const struct {
    const char *name;
    size_t offset;
} metrics[] = {
    {"tsend_s", offsetof(res_run, tsend_s)},
    {"ttraining_s", offsetof(res_run, ttraining_s)},
    {"ttotal_s", offsetof(res_run, ttotal_s)},
    {"tflops", offsetof(res_run, tflops)},
    {"utilization", offsetof(res_run, utilization)},
    {"samples_processed", offsetof(res_run, samples_processed)},
    {"bytes_total", offsetof(res_run, bytes_total)},
};
#define N_METRICS (sizeof metrics / sizeof metrics[0])

typedef struct param {
    char *spec;
    char *label; /* keys joined by "," */
    size_t n_keys;
    char *keys[CALIB_MAX_KEYS];
    double lo, hi; /* in `unit` */
    int log;
    char unit[24];
} param;

typedef struct target {
    char label[80];
    size_t policy; /* index into the problem's policy list */
    size_t metric;
    double value, weight;
} target;

typedef struct setting {
    char *text; /* "KEY=VALUE" as given (for the JSON and the header) */
    char *key;  /* into a copy */
    char *value;
    long policy; /* -1: fixed (--set); else the policy it applies to */
} setting;

struct calib_problem {
    char *scenario_arg;
    scn_scenario *base; /* as given, no override: its name, text and hash */
    size_t n_params, n_targets, n_sets;
    param params[CALIB_MAX_PARAMS];
    target targets[CALIB_MAX_TARGETS];
    setting sets[2 * CALIB_MAX_SETS];
    /* The policies the targets name, in first-mention order.  The only
     * place this module holds policy kinds: everything goes through the
     * runner (run/runner.h). */
    size_t n_policies;
    char policy_names[CALIB_MAX_TARGETS][32];
    const policy_def *pk[CALIB_MAX_TARGETS];
    unsigned starts;
    uint64_t seed;

    /* fit state */
    long evals;
    double best_cost;
    double best_x[CALIB_MAX_PARAMS];
    unsigned cur_start;
    calib_progress_fn progress;
    void *progress_ctx;
    dp_err eval_err; /* the last evaluation failure */
    calib_result result;
};

/* ---- parsing ------------------------------------------------------------ */

static int is_blank(char c)
{
    return c == ' ' || c == '\t';
}

/* "NUMBER[UNIT]" -> number and unit text; -1 when not that shape. */
static int split_qty(const char *s, size_t len, double *num, char *unit, size_t ulen, char *text, size_t tlen)
{
    while (len && is_blank(*s))
        s++, len--;
    while (len && is_blank(s[len - 1]))
        len--;
    if (len == 0 || len >= tlen)
        return -1;
    memcpy(text, s, len);
    text[len] = '\0';
    char *end;
    errno = 0;
    *num = strtod(text, &end);
    /* Plain decimals only: strtod would also take "inf", "nan" and hex,
     * which no bound means. */
    if (errno || end == text || !isfinite(*num))
        return -1;
    for (const char *c = text; c < end; c++)
        if (!((*c >= '0' && *c <= '9') || *c == '.' || *c == 'e' || *c == 'E' || *c == '+' || *c == '-'))
            return -1;
    while (is_blank(*end))
        end++;
    size_t ul = strlen(end);
    if (ul >= ulen)
        return -1;
    for (size_t i = 0; i < ul; i++)
        if (!((end[i] >= 'a' && end[i] <= 'z') || (end[i] >= 'A' && end[i] <= 'Z') || end[i] == '/'))
            return -1;
    memcpy(unit, end, ul + 1);
    return 0;
}

/* Units a bound may carry, as for sweep ranges. */
static const scn_unit bound_units[] = {SCN_UNIT_BANDWIDTH, SCN_UNIT_RATE, SCN_UNIT_BYTES, SCN_UNIT_TIME,
                                       SCN_UNIT_FLOPS};

static int parse_fit(const char *arg, param *p, dp_err *err)
{
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg)
        return dp_err_set(err, DP_EINPUT, "--fit %s: want KEY[,KEY...]=LO..HI[:log] (e.g. %s)", arg,
                          "devices.gpu.link.down=10Mbps..1Gbps:log");
    if (!(p->spec = dp_strdup(arg)))
        return DP_ENOMEM;
    /* keys */
    size_t klen = (size_t)(eq - arg);
    if (!(p->label = dp_malloc(klen * 2 + 1)))
        return DP_ENOMEM;
    p->label[0] = '\0';
    const char *k = arg;
    while (k < eq) {
        const char *c = memchr(k, ',', (size_t)(eq - k));
        size_t len = c ? (size_t)(c - k) : (size_t)(eq - k);
        if (len == 0)
            return dp_err_set(err, DP_EINPUT, "--fit %s: empty key in the key list", arg);
        if (p->n_keys == CALIB_MAX_KEYS)
            return dp_err_set(err, DP_EINPUT, "--fit %s: more than %d keys tied to one value", arg,
                              CALIB_MAX_KEYS);
        char *key = dp_malloc(len + 1);
        if (!key)
            return DP_ENOMEM;
        memcpy(key, k, len);
        key[len] = '\0';
        for (size_t i = 0; i < p->n_keys; i++)
            if (!strcmp(p->keys[i], key)) {
                dp_free(key);
                return dp_err_set(err, DP_EINPUT, "--fit %s: key '%.*s' listed twice", arg, (int)len, k);
            }
        p->keys[p->n_keys++] = key;
        if (p->n_keys > 1)
            strcat(p->label, ",");
        strcat(p->label, key);
        k += len + (c ? 1 : 0);
        if (c && k == eq)
            return dp_err_set(err, DP_EINPUT, "--fit %s: empty key in the key list", arg);
    }
    /* range */
    const char *spec = eq + 1, *dots = strstr(spec, "..");
    if (!dots)
        return dp_err_set(err, DP_EINPUT,
                          "--fit %s: bad bounds '%s' (want LO..HI[:log], e.g. 10Mbps..1Gbps:log)", arg, spec);
    const char *hi_s = dots + 2, *colon = strchr(hi_s, ':');
    size_t hi_len = colon ? (size_t)(colon - hi_s) : strlen(hi_s);
    if (colon) {
        if (strcmp(colon + 1, "log") != 0)
            return dp_err_set(err, DP_EINPUT, "--fit %s: unknown bound option ':%s' (want :log)", arg,
                              colon + 1);
        p->log = 1;
    }
    double a, b;
    char ua[24], ub[24], ta[64], tb[64];
    if (split_qty(spec, (size_t)(dots - spec), &a, ua, sizeof ua, ta, sizeof ta) ||
        split_qty(hi_s, hi_len, &b, ub, sizeof ub, tb, sizeof tb))
        return dp_err_set(err, DP_EINPUT,
                          "--fit %s: bad bounds '%s' (want LO..HI[:log] with numbers, e.g. 0.24..0.58, "
                          "10Mbps..1Gbps:log)",
                          arg, spec);
    if ((ua[0] != '\0') != (ub[0] != '\0'))
        return dp_err_set(err, DP_EINPUT,
                          "--fit %s: give units on both bounds or on neither (got '%s' and '%s')", arg, ta,
                          tb);
    if (ua[0]) {
        /* Work in the low bound's unit, so values print as the user wrote. */
        size_t nk = sizeof bound_units / sizeof bound_units[0], u;
        double av = 0, bv = 0, one = 1;
        char one_t[32];
        snprintf(one_t, sizeof one_t, "1%s", ua);
        for (u = 0; u < nk; u++)
            if (!scn_parse_quantity(ta, bound_units[u], &av, NULL) &&
                !scn_parse_quantity(tb, bound_units[u], &bv, NULL) &&
                !scn_parse_quantity(one_t, bound_units[u], &one, NULL))
                break;
        if (u == nk)
            return dp_err_set(err, DP_EINPUT,
                              "--fit %s: units of '%s' and '%s' do not fit together (want one kind: "
                              "bandwidth, rate, bytes, time or FLOPS)",
                              arg, ta, tb);
        a = av / one;
        b = bv / one;
        memcpy(p->unit, ua, sizeof p->unit);
    }
    if (!(a < b))
        return dp_err_set(err, DP_EINPUT, "--fit %s: the low bound must be below the high one (got %s..%s)",
                          arg, ta, tb);
    if (p->log && !(a > 0))
        return dp_err_set(err, DP_EINPUT, "--fit %s: a :log range needs a low bound above 0 (got %s)", arg,
                          ta);
    p->lo = a;
    p->hi = b;
    return 0;
}

static long calib_policy_slot(calib_problem *p, const char *name, int add, const char *opt, const char *arg,
                              dp_err *err)
{
    for (size_t j = 0; j < p->n_policies; j++)
        if (!strcmp(p->policy_names[j], name))
            return (long)j;
    if (!add) {
        dp_err_set(err, DP_EINPUT, "%s %s: no --target names policy '%s'", opt, arg, name);
        return -1;
    }
    const policy_def *one[4];
    dp_err perr = {0};
    int n = strcmp(name, "all") ? runner_parse_policies(name, one, 4, &perr) : -1;
    if (n != 1) {
        dp_err_set(err, DP_EINPUT, "%s %s: unknown policy '%s'%s%s", opt, arg, name,
                   n < 0 && perr.msg[0] ? ": " : "", n < 0 ? perr.msg : "");
        return -1;
    }
    if (p->n_policies == CALIB_MAX_TARGETS || strlen(name) >= sizeof p->policy_names[0]) {
        dp_err_set(err, DP_EINPUT, "%s %s: too many policies", opt, arg);
        return -1;
    }
    snprintf(p->policy_names[p->n_policies], sizeof p->policy_names[0], "%s", name);
    p->pk[p->n_policies] = one[0];
    return (long)p->n_policies++;
}

static int parse_target(calib_problem *p, const char *arg, target *t, dp_err *err)
{
    const char *dot = strchr(arg, '.'), *eq = strchr(arg, '=');
    if (!dot || !eq || dot > eq || dot == arg || eq == dot + 1)
        return dp_err_set(err, DP_EINPUT, "--target %s: want POLICY.METRIC=VALUE[:WEIGHT] (e.g. %s)", arg,
                          "cadp.ttotal_s=12915.28");
    char pol[32], met[40];
    if ((size_t)(dot - arg) >= sizeof pol || (size_t)(eq - dot - 1) >= sizeof met)
        return dp_err_set(err, DP_EINPUT, "--target %s: policy or metric name too long", arg);
    snprintf(pol, sizeof pol, "%.*s", (int)(dot - arg), arg);
    snprintf(met, sizeof met, "%.*s", (int)(eq - dot - 1), dot + 1);
    size_t m;
    for (m = 0; m < N_METRICS; m++)
        if (!strcmp(metrics[m].name, met))
            break;
    if (m == N_METRICS) {
        char have[256] = "";
        for (size_t i = 0; i < N_METRICS; i++) {
            strcat(have, i ? ", " : "");
            strcat(have, metrics[i].name);
        }
        return dp_err_set(err, DP_EINPUT, "--target %s: unknown metric '%s' (have: %s)", arg, met, have);
    }
    long j = calib_policy_slot(p, pol, 1, "--target", arg, err);
    if (j < 0)
        return DP_EINPUT;
    const char *v = eq + 1, *colon = strchr(v, ':');
    char *end;
    errno = 0;
    t->value = strtod(v, &end);
    if (errno || end == v || (colon ? end != colon : *end != '\0') || !isfinite(t->value) || t->value == 0)
        return dp_err_set(err, DP_EINPUT,
                          "--target %s: the value must be a finite non-zero number in the metric's unit "
                          "(seconds, TFLOPS, ...)",
                          arg);
    t->weight = 1;
    if (colon) {
        errno = 0;
        t->weight = strtod(colon + 1, &end);
        if (errno || end == colon + 1 || *end || !isfinite(t->weight) || !(t->weight > 0))
            return dp_err_set(err, DP_EINPUT, "--target %s: the weight must be a positive number (got '%s')",
                              arg, colon + 1);
    }
    snprintf(t->label, sizeof t->label, "%s.%s", pol, met);
    for (size_t k = 0; k < p->n_targets; k++)
        if (!strcmp(p->targets[k].label, t->label))
            return dp_err_set(err, DP_EINPUT, "--target %s: %s is targeted twice", arg, t->label);
    t->policy = (size_t)j;
    t->metric = m;
    return 0;
}

static int parse_setting(calib_problem *p, const char *arg, int per_policy, setting *s, dp_err *err)
{
    const char *opt = per_policy ? "--set-for" : "--set";
    s->policy = -1;
    const char *kv = arg;
    if (per_policy) {
        const char *c = strchr(arg, ':');
        if (!c || c == arg || (size_t)(c - arg) >= 32)
            return dp_err_set(err, DP_EINPUT, "%s %s: want POLICY:KEY=VALUE (e.g. ddp:training.epochs=1)",
                              opt, arg);
        char pol[32];
        snprintf(pol, sizeof pol, "%.*s", (int)(c - arg), arg);
        if ((s->policy = calib_policy_slot(p, pol, 0, opt, arg, err)) < 0)
            return DP_EINPUT;
        kv = c + 1;
    }
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv)
        return dp_err_set(err, DP_EINPUT, "%s %s: want %sKEY=VALUE", opt, arg, per_policy ? "POLICY:" : "");
    if (!(s->text = dp_strdup(arg)) || !(s->key = dp_strdup(kv)))
        return DP_ENOMEM;
    s->key[eq - kv] = '\0';
    s->value = s->key + (eq - kv) + 1;
    return 0;
}

/* ---- evaluation --------------------------------------------------------- */

static void value_text(const param *q, double v, int digits, char *buf, size_t len)
{
    if (v == 0)
        v = 0; /* no "-0" */
    snprintf(buf, len, "%.*g%s", digits, v, q->unit);
}

/* Simulate every policy the targets name at parameter values x (in the
 * bounds' units); f[k] gets target k's metric.  shortcuts: apply the
 * --set-for overrides. */
static int evaluate(calib_problem *p, const double *x, int shortcuts, double *f, dp_err *err)
{
    char vals[CALIB_MAX_PARAMS][64];
    scn_override ov[CALIB_MAX_PARAMS * CALIB_MAX_KEYS + 2 * CALIB_MAX_SETS];
    for (size_t i = 0; i < p->n_params; i++)
        value_text(&p->params[i], x[i], 17, vals[i], sizeof vals[i]);
    for (size_t j = 0; j < p->n_policies; j++) {
        size_t n = 0;
        for (size_t i = 0; i < p->n_sets; i++)
            if (p->sets[i].policy < 0 || (shortcuts && p->sets[i].policy == (long)j))
                ov[n++] = (scn_override){p->sets[i].key, p->sets[i].value};
        for (size_t i = 0; i < p->n_params; i++)
            for (size_t k = 0; k < p->params[i].n_keys; k++)
                ov[n++] = (scn_override){p->params[i].keys[k], vals[i]};
        scn_scenario *s = runner_load_scenario(p->scenario_arg, ov, n, err);
        if (!s)
            return err ? err->code : DP_EINPUT;
        res_run *r = NULL;
        int64_t id = 0;
        int rc = runner_run(s, &p->pk[j], 1, s->training.seed, NULL, NULL, 0, &r, &id, err);
        scn_free(s);
        if (rc) {
            res_run_free(r);
            return rc;
        }
        for (size_t k = 0; k < p->n_targets; k++)
            if (p->targets[k].policy == j)
                f[k] =
                    *(const double *)(const void *)((const char *)r + metrics[p->targets[k].metric].offset);
        res_run_free(r);
    }
    p->evals++;
    return 0;
}

static double cost_of(const calib_problem *p, const double *f)
{
    double c = 0;
    for (size_t k = 0; k < p->n_targets; k++) {
        double e = f[k] / p->targets[k].value - 1;
        c += p->targets[k].weight * e * e;
    }
    return c;
}

/* u (unconstrained) -> value inside the bounds. */
static double from_u(const param *q, double u)
{
    double t = 1 / (1 + exp(-u));
    double v = q->log ? exp(log(q->lo) + t * (log(q->hi) - log(q->lo))) : q->lo + t * (q->hi - q->lo);
    return v < q->lo ? q->lo : v > q->hi ? q->hi : v;
}

static double to_u(double t)
{
    return log(t / (1 - t));
}

static int resid_f(const gsl_vector *u, void *ctx, gsl_vector *fv)
{
    calib_problem *p = ctx;
    double x[CALIB_MAX_PARAMS], f[CALIB_MAX_TARGETS];
    for (size_t i = 0; i < p->n_params; i++)
        x[i] = from_u(&p->params[i], gsl_vector_get(u, i));
    if (evaluate(p, x, 1, f, &p->eval_err))
        return GSL_EBADFUNC;
    for (size_t k = 0; k < fv->size; k++)
        gsl_vector_set(fv, k,
                       k < p->n_targets ? sqrt(p->targets[k].weight) * (f[k] / p->targets[k].value - 1) : 0);
    double c = cost_of(p, f);
    if (!isfinite(c))
        return GSL_EBADFUNC;
    if (c < p->best_cost) {
        p->best_cost = c;
        memcpy(p->best_x, x, p->n_params * sizeof x[0]);
    }
    if (p->progress)
        p->progress(p->progress_ctx, p->cur_start, p->starts, p->evals, p->best_cost);
    return GSL_SUCCESS;
}

/* ---- the problem -------------------------------------------------------- */

calib_problem *calib_new(const calib_spec *spec, dp_err *err)
{
    if (!spec || !spec->scenario) {
        dp_err_set(err, DP_EINPUT, "calibrate: no scenario");
        return NULL;
    }
    if (spec->n_fit == 0 || spec->n_fit > CALIB_MAX_PARAMS || spec->n_target == 0 ||
        spec->n_target > CALIB_MAX_TARGETS || spec->n_set > CALIB_MAX_SETS || spec->n_for > CALIB_MAX_SETS) {
        dp_err_set(err, DP_EINPUT, "calibrate: want 1 to %d --fit and 1 to %d --target (got %zu and %zu)",
                   CALIB_MAX_PARAMS, CALIB_MAX_TARGETS, spec->n_fit, spec->n_target);
        return NULL;
    }
    if (spec->starts > CALIB_MAX_STARTS) {
        dp_err_set(err, DP_EINPUT, "calibrate: --starts %u is more than %d", spec->starts, CALIB_MAX_STARTS);
        return NULL;
    }
    calib_problem *p = dp_calloc(1, sizeof *p);
    if (!p || !(p->scenario_arg = dp_strdup(spec->scenario))) {
        dp_free(p);
        dp_err_set(err, DP_ENOMEM, "calibrate: out of memory");
        return NULL;
    }
    int rc = 0;
    p->starts = spec->starts ? spec->starts : DEFAULT_STARTS;
    p->seed = spec->seed ? spec->seed : 1;
    for (size_t i = 0; !rc && i < spec->n_fit; i++, p->n_params++)
        rc = parse_fit(spec->fit[i], &p->params[i], err);
    for (size_t k = 0; !rc && k < spec->n_target; k++, p->n_targets++)
        rc = parse_target(p, spec->target[k], &p->targets[k], err);
    for (size_t i = 0; !rc && i < spec->n_set; i++, p->n_sets++)
        rc = parse_setting(p, spec->set[i], 0, &p->sets[p->n_sets], err);
    for (size_t i = 0; !rc && i < spec->n_for; i++, p->n_sets++)
        rc = parse_setting(p, spec->set_for[i], 1, &p->sets[p->n_sets], err);
    /* A key fitted twice, or fitted and fixed, has no one meaning. */
    for (size_t i = 0; !rc && i < p->n_params; i++)
        for (size_t a = 0; !rc && a < p->params[i].n_keys; a++) {
            const char *key = p->params[i].keys[a];
            for (size_t j = i + 1; !rc && j < p->n_params; j++)
                for (size_t b = 0; !rc && b < p->params[j].n_keys; b++)
                    if (!strcmp(key, p->params[j].keys[b]))
                        rc = dp_err_set(err, DP_EINPUT, "--fit: key '%s' is fitted twice", key);
            for (size_t j = 0; !rc && j < p->n_sets; j++)
                if (!strcmp(key, p->sets[j].key))
                    rc = dp_err_set(err, DP_EINPUT, "--fit %s: key '%s' is also set by %s", p->params[i].spec,
                                    key, p->sets[j].text);
        }
    if (rc == DP_ENOMEM)
        dp_err_set(err, DP_ENOMEM, "calibrate: out of memory");
    if (!rc)
        p->base = runner_load_scenario(p->scenario_arg, NULL, 0, err);
    if (!rc && !p->base)
        rc = err ? err->code : DP_EINPUT;
    /* Every key and value must be acceptable to the scenario: load it with
     * every override, each parameter at the middle of its range. */
    if (!rc) {
        scn_override ov[CALIB_MAX_PARAMS * CALIB_MAX_KEYS + 2 * CALIB_MAX_SETS];
        char vals[CALIB_MAX_PARAMS][64];
        size_t n = 0;
        for (size_t i = 0; i < p->n_sets; i++)
            ov[n++] = (scn_override){p->sets[i].key, p->sets[i].value};
        for (size_t i = 0; i < p->n_params; i++) {
            const param *q = &p->params[i];
            value_text(q, q->log ? sqrt(q->lo * q->hi) : (q->lo + q->hi) / 2, 17, vals[i], sizeof vals[i]);
            for (size_t k = 0; k < q->n_keys; k++)
                ov[n++] = (scn_override){q->keys[k], vals[i]};
        }
        scn_scenario *s = runner_load_scenario(p->scenario_arg, ov, n, err);
        if (!s)
            rc = err ? err->code : DP_EINPUT;
        scn_free(s);
    }
    if (rc) {
        calib_free(p);
        return NULL;
    }
    return p;
}

void calib_free(calib_problem *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < CALIB_MAX_PARAMS; i++) {
        dp_free(p->params[i].spec);
        dp_free(p->params[i].label);
        for (size_t k = 0; k < p->params[i].n_keys; k++)
            dp_free(p->params[i].keys[k]);
    }
    for (size_t i = 0; i < 2 * CALIB_MAX_SETS; i++) {
        dp_free(p->sets[i].text);
        dp_free(p->sets[i].key);
    }
    scn_free(p->base);
    dp_free(p->scenario_arg);
    dp_free(p);
}

/* ---- fitting ------------------------------------------------------------ */

/* One trust-region run from unit-box point t0.  Failures of the model at
 * some point end the start (its best point so far stays recorded). */
static int run_start(calib_problem *p, const double *t0)
{
    double u[CALIB_MAX_PARAMS];
    for (size_t i = 0; i < p->n_params; i++)
        u[i] = to_u(t0[i]);
    return lsq_run(resid_f, p, p->n_targets, p->n_params, u, 200);
}

/* Position in the unit box of value v. */
static double unit_pos(const param *q, double v)
{
    return q->log ? (log(v) - log(q->lo)) / (log(q->hi) - log(q->lo)) : (v - q->lo) / (q->hi - q->lo);
}

static double round_digits(double v, int digits)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%.*g", digits, v);
    return strtod(buf, NULL);
}

static int sensitivities(calib_problem *p, calib_result *r, dp_err *err)
{
    double x[CALIB_MAX_PARAMS], fp_[CALIB_MAX_TARGETS], fm[CALIB_MAX_TARGETS];
    for (size_t i = 0; i < p->n_params; i++) {
        const param *q = &p->params[i];
        double v = r->value[i];
        if (!(v > 0)) {
            for (size_t k = 0; k < p->n_targets; k++)
                r->sens[k][i] = NAN;
            continue;
        }
        double up = v * (1 + SENS_STEP), dn = v * (1 - SENS_STEP);
        if (up > q->hi)
            up = v;
        if (dn < q->lo)
            dn = v;
        memcpy(x, r->value, p->n_params * sizeof x[0]);
        x[i] = up;
        int rc = evaluate(p, x, 1, fp_, err);
        x[i] = dn;
        if (!rc)
            rc = evaluate(p, x, 1, fm, err);
        if (rc)
            return dp_err_prefix(err, "sensitivity to %s", q->label);
        r->undetermined[i] = 1;
        for (size_t k = 0; k < p->n_targets; k++) {
            r->sens[k][i] =
                fp_[k] > 0 && fm[k] > 0 && up != dn ? (log(fp_[k]) - log(fm[k])) / (log(up) - log(dn)) : NAN;
            if (!(fabs(r->sens[k][i]) < CALIB_FLAT))
                r->undetermined[i] = 0;
        }
    }
    return 0;
}

int calib_fit(calib_problem *p, calib_progress_fn progress, void *ctx, const calib_result **out, dp_err *err)
{
    gsl_error_handler_t *old = gsl_set_error_handler_off();
    calib_result *r = &p->result;
    memset(r, 0, sizeof *r);
    r->n_params = p->n_params;
    r->n_targets = p->n_targets;
    p->progress = progress;
    p->progress_ctx = ctx;
    p->evals = 0;
    p->best_cost = INFINITY;
    size_t np = p->n_params;
    int rc = 0;

    /* Latin hypercube: each axis cut into `starts` strata, one start in the
     * middle of each, the strata matched across axes by seeded shuffles. */
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    size_t *perm = dp_calloc(p->starts * np + 1, sizeof *perm);
    if (!rng || !perm) {
        rc = dp_err_set(err, DP_ENOMEM, "calibrate: out of memory");
        goto done;
    }
    gsl_rng_set(rng, (unsigned long)p->seed);
    for (size_t i = 0; i < np; i++) {
        size_t *col = perm + i * p->starts;
        for (size_t s = 0; s < p->starts; s++)
            col[s] = s;
        gsl_ran_shuffle(rng, col, p->starts, sizeof *col);
    }
    for (unsigned s = 0; s < p->starts; s++) {
        double t0[CALIB_MAX_PARAMS];
        for (size_t i = 0; i < np; i++)
            t0[i] = ((double)perm[i * p->starts + s] + 0.5) / (double)p->starts;
        p->cur_start = s;
        double before = p->best_cost;
        int e = run_start(p, t0);
        if (e == DP_ENOMEM) {
            rc = dp_err_set(err, DP_ENOMEM, "calibrate: out of memory");
            goto done;
        }
        if (e) { /* the model failed (a stall, an interrupt): nothing to trust */
            if (err)
                *err = p->eval_err;
            rc = p->eval_err.code ? p->eval_err.code : DP_ERUN;
            goto done;
        }
        if (p->best_cost < before)
            r->best_start = s;
    }
    r->starts = p->starts;

    /* An optimum against a bound is approached only asymptotically by the
     * logistic: try the bound itself and keep it when no worse. */
    double x[CALIB_MAX_PARAMS], f[CALIB_MAX_TARGETS];
    memcpy(x, p->best_x, np * sizeof x[0]);
    double cost = p->best_cost;
    for (size_t i = 0; i < np; i++) {
        const param *q = &p->params[i];
        double t = unit_pos(q, x[i]);
        if (t > 0.01 && t < 0.99)
            continue;
        double keep = x[i];
        x[i] = t <= 0.01 ? q->lo : q->hi;
        if (evaluate(p, x, 1, f, &p->eval_err) == 0 && cost_of(p, f) <= cost * (1 + 1e-12)) {
            cost = cost_of(p, f);
        } else {
            x[i] = keep;
        }
    }
    /* Report what a scenario file can hold: values rounded to VALUE_DIGITS
     * digits (kept inside the bounds), simulated again in full. */
    for (size_t i = 0; i < np; i++) {
        const param *q = &p->params[i];
        double v = round_digits(x[i], VALUE_DIGITS);
        r->value[i] = v < q->lo ? q->lo : v > q->hi ? q->hi : v;
        r->at_bound[i] = r->value[i] == q->lo ? -1 : r->value[i] == q->hi ? 1 : 0;
    }
    if ((rc = evaluate(p, r->value, 0, r->fitted, err)))
        goto done;
    int have_for = 0;
    for (size_t i = 0; i < p->n_sets; i++)
        have_for |= p->sets[i].policy >= 0;
    if (have_for) {
        /* The shortcuts must not have changed what was fitted. */
        if ((rc = evaluate(p, r->value, 1, f, err)))
            goto done;
        for (size_t k = 0; k < p->n_targets; k++)
            if (fabs(f[k] - r->fitted[k]) > SHORTCUT_RTOL * fabs(r->fitted[k])) {
                rc = dp_err_set(err, DP_EINPUT,
                                "--set-for: the shortcuts change %s (%.10g with them, %.10g without); "
                                "drop the ones of policy '%s'",
                                p->targets[k].label, f[k], r->fitted[k],
                                p->policy_names[p->targets[k].policy]);
                goto done;
            }
    }
    for (size_t k = 0; k < p->n_targets; k++)
        r->ratio[k] = r->fitted[k] / p->targets[k].value;
    r->cost = cost_of(p, r->fitted);
    if ((rc = sensitivities(p, r, err)))
        goto done;
    r->evaluations = p->evals;
    *out = r;
done:
    dp_free(perm);
    if (rng)
        gsl_rng_free(rng);
    gsl_set_error_handler(old);
    return rc;
}

int calib_evaluate(calib_problem *p, const double *x, double *f, dp_err *err)
{
    for (size_t i = 0; i < p->n_params; i++)
        if (!(x[i] >= p->params[i].lo && x[i] <= p->params[i].hi))
            return dp_err_set(err, DP_EINPUT, "calibrate: %s = %g is outside its bounds", p->params[i].label,
                              x[i]);
    return evaluate(p, x, 0, f, err);
}

/* ---- accessors ---------------------------------------------------------- */

size_t calib_n_params(const calib_problem *p)
{
    return p->n_params;
}
size_t calib_n_targets(const calib_problem *p)
{
    return p->n_targets;
}
const char *calib_param_label(const calib_problem *p, size_t i)
{
    return p->params[i].label;
}
void calib_param_text(const calib_problem *p, size_t i, double v, char *buf, size_t len)
{
    value_text(&p->params[i], v, VALUE_DIGITS, buf, len);
}
double calib_param_lo(const calib_problem *p, size_t i)
{
    return p->params[i].lo;
}
double calib_param_hi(const calib_problem *p, size_t i)
{
    return p->params[i].hi;
}
int calib_param_log(const calib_problem *p, size_t i)
{
    return p->params[i].log;
}
const char *calib_target_label(const calib_problem *p, size_t k)
{
    return p->targets[k].label;
}
double calib_target_value(const calib_problem *p, size_t k)
{
    return p->targets[k].value;
}
double calib_target_weight(const calib_problem *p, size_t k)
{
    return p->targets[k].weight;
}
const scn_scenario *calib_scenario(const calib_problem *p)
{
    return p->base;
}

/* ---- JSON and the database ---------------------------------------------- */

static void json_keys(json_buf *j, const param *q)
{
    json_key(j, "keys");
    json_arr_begin(j);
    for (size_t k = 0; k < q->n_keys; k++)
        json_str(j, q->keys[k]);
    json_arr_end(j);
}

static char *json_take(json_buf *j)
{
    char *s = j && json_ok(j) ? dp_strdup(json_text(j)) : NULL;
    json_free(j);
    return s;
}

char *calib_spec_json(const calib_problem *p)
{
    json_buf *j = json_new();
    json_obj_begin(j);
    json_key(j, "fit");
    json_arr_begin(j);
    for (size_t i = 0; i < p->n_params; i++) {
        const param *q = &p->params[i];
        json_obj_begin(j);
        json_keys(j, q);
        json_key_num(j, "lo", q->lo);
        json_key_num(j, "hi", q->hi);
        json_key_str(j, "unit", q->unit);
        json_key_bool(j, "log", q->log);
        json_obj_end(j);
    }
    json_arr_end(j);
    json_key(j, "targets");
    json_arr_begin(j);
    for (size_t k = 0; k < p->n_targets; k++) {
        const target *t = &p->targets[k];
        json_obj_begin(j);
        json_key_str(j, "policy", p->policy_names[t->policy]);
        json_key_str(j, "metric", metrics[t->metric].name);
        json_key_num(j, "value", t->value);
        json_key_num(j, "weight", t->weight);
        json_obj_end(j);
    }
    json_arr_end(j);
    for (int per = 0; per < 2; per++) {
        json_key(j, per ? "set_for" : "set");
        json_arr_begin(j);
        for (size_t i = 0; i < p->n_sets; i++)
            if ((p->sets[i].policy >= 0) == per)
                json_str(j, p->sets[i].text);
        json_arr_end(j);
    }
    json_key_int(j, "starts", p->starts);
    json_key_int(j, "seed", (int64_t)p->seed);
    json_obj_end(j);
    return json_take(j);
}

char *calib_result_json(const calib_problem *p, const calib_result *r)
{
    json_buf *j = json_new();
    json_obj_begin(j);
    json_key(j, "params");
    json_arr_begin(j);
    for (size_t i = 0; i < p->n_params; i++) {
        char buf[64];
        json_obj_begin(j);
        json_keys(j, &p->params[i]);
        json_key_num(j, "value", r->value[i]);
        value_text(&p->params[i], r->value[i], VALUE_DIGITS, buf, sizeof buf);
        json_key_str(j, "text", buf);
        json_key_int(j, "at_bound", r->at_bound[i]);
        json_key_bool(j, "undetermined", r->undetermined[i]);
        json_obj_end(j);
    }
    json_arr_end(j);
    json_key(j, "targets");
    json_arr_begin(j);
    for (size_t k = 0; k < p->n_targets; k++) {
        json_obj_begin(j);
        json_key_str(j, "label", p->targets[k].label);
        json_key_num(j, "wanted", p->targets[k].value);
        json_key_num(j, "fitted", r->fitted[k]);
        json_key_num(j, "ratio", r->ratio[k]);
        json_obj_end(j);
    }
    json_arr_end(j);
    json_key(j, "sensitivity");
    json_arr_begin(j);
    for (size_t k = 0; k < p->n_targets; k++) {
        json_arr_begin(j);
        for (size_t i = 0; i < p->n_params; i++)
            json_num(j, r->sens[k][i]);
        json_arr_end(j);
    }
    json_arr_end(j);
    json_key_num(j, "cost", r->cost);
    json_key_int(j, "evaluations", r->evaluations);
    json_key_int(j, "best_start", r->best_start);
    json_obj_end(j);
    return json_take(j);
}

int calib_store(const calib_problem *p, const calib_result *r, store *st, const char *version,
                const char *started_at, int64_t *id, dp_err *err)
{
    char *spec = calib_spec_json(p), *res = calib_result_json(p, r);
    int rc = spec && res ? store_put_calibration(st, p->base, spec, res, r->cost, r->evaluations, version,
                                                 started_at, id, err)
                         : dp_err_set(err, DP_ENOMEM, "calibrate: out of memory");
    dp_free(spec);
    dp_free(res);
    return rc;
}

/* ---- the calibrated scenario file --------------------------------------- */

typedef struct patch {
    size_t off, len; /* bytes of the original text replaced */
    char text[160];
} patch;

static int cmp_patch(const void *a, const void *b)
{
    const patch *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off;
}

/* Byte offset of 1-based (line, column) in text; columns count bytes, which
 * is what libyaml counts on an ASCII prefix (checked by the caller). */
static int offset_of(const char *text, size_t len, int line, int col, size_t *off)
{
    size_t o = 0;
    for (int l = 1; l < line; l++) {
        const char *nl = memchr(text + o, '\n', len - o);
        if (!nl)
            return -1;
        o = (size_t)(nl - text) + 1;
    }
    for (int c = 1; c < col; c++, o++)
        if (o >= len || text[o] == '\n' || (unsigned char)text[o] >= 0x80)
            return -1;
    *off = o;
    return 0;
}

static int add_value_patch(const yt_doc *d, const char *text, size_t len, const char *key, const char *value,
                           patch *pt, size_t *n, dp_err *err)
{
    const yt_node *nd = yt_find(d, key);
    size_t off = 0, vl = nd && nd->kind == YT_SCALAR ? strlen(nd->text) : 0;
    if (!nd || nd->kind != YT_SCALAR || nd->line <= 0 || !nd->plain || vl == 0 ||
        offset_of(text, len, nd->line, nd->column, &off) || off + vl > len ||
        memcmp(text + off, nd->text, vl))
        return dp_err_set(err, DP_EINPUT,
                          "--out: cannot rewrite '%s' in the scenario: it is not a plain one-line value "
                          "there%s (write it in the file first, e.g. `%s: 1`)",
                          key, nd ? "" : " (absent)", strrchr(key, '.') ? strrchr(key, '.') + 1 : key);
    for (size_t i = 0; i < *n; i++)
        if (pt[i].off == off && pt[i].len)
            return dp_err_set(err, DP_EINPUT, "--out: '%s' names a value rewritten already", key);
    pt[*n].off = off;
    pt[*n].len = vl;
    snprintf(pt[*n].text, sizeof pt[*n].text, "%s", value);
    (*n)++;
    return 0;
}

static size_t line_end_of(const char *text, size_t len, size_t off)
{
    const char *nl = memchr(text + off, '\n', len - off);
    return nl ? (size_t)(nl - text) : len;
}

/* Mark each changed line: its trailing comment (or a new one) becomes the
 * mark of its first change.  pt[0..n) are value patches sorted by offset;
 * the marks are appended after them; returns the new count. */
static size_t add_comment_patches(const char *text, size_t len, patch *pt, size_t n, const char *const *mark)
{
    size_t m = n;
    for (size_t i = 0; i < n;) {
        size_t eol = line_end_of(text, len, pt[i].off), last = i;
        while (last + 1 < n && pt[last + 1].off < eol)
            last++;
        size_t from = pt[last].off + pt[last].len, hash = eol;
        for (size_t o = from; o < eol; o++)
            if (text[o] == '#' && is_blank(text[o - 1])) {
                hash = o;
                break;
            }
        pt[m].off = hash;
        pt[m].len = eol - hash;
        snprintf(pt[m].text, sizeof pt[m].text, "%s%s", hash == eol ? "   " : "", mark[i]);
        m++;
        i = last + 1;
    }
    return m;
}

static void header_line(FILE *f, const char *fmt, ...) DP_PRINTF(2, 3);
static void header_line(FILE *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("# ", f);
    vfprintf(f, fmt, ap);
    fputc('\n', f);
    va_end(ap);
}

static void write_header(FILE *f, const calib_problem *p, const calib_result *r)
{
    char a[64], b[64];
    header_line(f, "Calibrated by `dpsim calibrate` from %s (scenario '%s').", p->base->path, p->base->name);
    header_line(f, "Values marked (fit) were fitted and those marked (set) fixed by the");
    header_line(f, "command; every other value, and the comments below, are as in that file.");
    fputs("#\n", f);
    header_line(f, "Method: minimise sum_k w_k (fitted_k / wanted_k - 1)^2 over the bounds");
    header_line(f, "below (GSL multifit_nlinear trust region, forward-difference Jacobian,");
    header_line(f, "parameters kept inside their bounds by a logistic transform, %u Latin-", p->starts);
    header_line(f, "hypercube starts from seed %llu, the best kept; values rounded to %d",
                (unsigned long long)p->seed, VALUE_DIGITS);
    header_line(f, "significant digits and simulated again; %ld simulations).", r->evaluations);
    fputs("#\n", f);
    header_line(f, "Fitted parameters (value; bounds):");
    for (size_t i = 0; i < p->n_params; i++) {
        const param *q = &p->params[i];
        char v[64];
        value_text(q, r->value[i], VALUE_DIGITS, v, sizeof v);
        value_text(q, q->lo, VALUE_DIGITS, a, sizeof a);
        value_text(q, q->hi, VALUE_DIGITS, b, sizeof b);
        header_line(f, "  %s", q->label);
        header_line(f, "      = %s; %s..%s%s%s", v, a, b, q->log ? " (log)" : "",
                    r->at_bound[i] < 0   ? "  AT BOUND (low): a target wants it lower"
                    : r->at_bound[i] > 0 ? "  AT BOUND (high): a target wants it higher"
                    : r->undetermined[i] ? "  UNDETERMINED: no target depends on it here"
                                         : "");
    }
    header_line(f, "Targets (wanted, fitted, fitted/wanted, weight):");
    for (size_t k = 0; k < p->n_targets; k++)
        header_line(f, "  %-22s %14.6g %14.6g %9.4f %6g", p->targets[k].label, p->targets[k].value,
                    r->fitted[k], r->ratio[k], p->targets[k].weight);
    header_line(f, "Cost (weighted sum of squared relative errors): %.6g", r->cost);
    int any_set = 0, any_for = 0;
    for (size_t i = 0; i < p->n_sets; i++) {
        any_set |= p->sets[i].policy < 0;
        any_for |= p->sets[i].policy >= 0;
    }
    if (any_set) {
        header_line(f, "Fixed values (--set):");
        for (size_t i = 0; i < p->n_sets; i++)
            if (p->sets[i].policy < 0)
                header_line(f, "  %s", p->sets[i].text);
    }
    if (any_for) {
        header_line(f, "Used while fitting only, not in this file (--set-for); the fitted");
        header_line(f, "figures above are from full runs without them:");
        for (size_t i = 0; i < p->n_sets; i++)
            if (p->sets[i].policy >= 0)
                header_line(f, "  %s", p->sets[i].text);
    }
    fputs("#\n", f);
}

int calib_write_scenario(const calib_problem *p, const calib_result *r, const char *path, dp_err *err)
{
    const char *text = p->base->text;
    size_t len = strlen(text);
    yt_doc *d = yt_parse(p->base->path, text, len, err);
    if (!d)
        return err ? err->code : DP_EINPUT;
    size_t cap = 2 * (CALIB_MAX_PARAMS * CALIB_MAX_KEYS + 2 * CALIB_MAX_SETS), n = 0;
    patch *pt = dp_calloc(cap, sizeof *pt);
    const char **mark = dp_calloc(cap, sizeof *mark);
    int rc = pt && mark ? 0 : dp_err_set(err, DP_ENOMEM, "--out: out of memory");
    for (size_t i = 0; !rc && i < p->n_params; i++) {
        char v[64];
        value_text(&p->params[i], r->value[i], VALUE_DIGITS, v, sizeof v);
        for (size_t k = 0; !rc && k < p->params[i].n_keys; k++) {
            mark[n] = "# (fit) dpsim calibrate: see the header";
            rc = add_value_patch(d, text, len, p->params[i].keys[k], v, pt, &n, err);
        }
    }
    for (size_t i = 0; !rc && i < p->n_sets; i++)
        if (p->sets[i].policy < 0) {
            mark[n] = "# (set) dpsim calibrate --set: see the header";
            rc = add_value_patch(d, text, len, p->sets[i].key, p->sets[i].value, pt, &n, err);
        }
    yt_free(d);
    FILE *f = NULL;
    char *tmp = NULL;
    if (!rc) {
        /* sort value patches with their marks together */
        for (size_t i = 0; i < n; i++)
            for (size_t j = i + 1; j < n; j++)
                if (pt[j].off < pt[i].off) {
                    patch t = pt[i];
                    pt[i] = pt[j];
                    pt[j] = t;
                    const char *m = mark[i];
                    mark[i] = mark[j];
                    mark[j] = m;
                }
        size_t m = add_comment_patches(text, len, pt, n, mark);
        qsort(pt, m, sizeof *pt, cmp_patch);
        size_t tl = strlen(path) + 5;
        if (!(tmp = dp_malloc(tl)))
            rc = dp_err_set(err, DP_ENOMEM, "--out: out of memory");
        else
            snprintf(tmp, tl, "%s.tmp", path);
        if (!rc && !(f = fopen(tmp, "w")))
            rc = dp_err_set(err, DP_ERUN, "%s: cannot write: %s", tmp, strerror(errno));
        if (!rc) {
            write_header(f, p, r);
            size_t o = 0;
            for (size_t i = 0; i < m; i++) {
                fwrite(text + o, 1, pt[i].off - o, f);
                fputs(pt[i].text, f);
                o = pt[i].off + pt[i].len;
            }
            fwrite(text + o, 1, len - o, f);
            int bad = ferror(f);
            if (fclose(f) || bad) {
                rc = dp_err_set(err, DP_ERUN, "%s: write failed: %s", tmp, strerror(errno));
                remove(tmp);
            } else if (rename(tmp, path)) {
                rc = dp_err_set(err, DP_ERUN, "%s: cannot rename to %s: %s", tmp, path, strerror(errno));
                remove(tmp);
            }
        }
    }
    dp_free(tmp);
    dp_free(pt);
    dp_free(mark);
    return rc;
}
