/* efficiency_read.c: reading the statistical-efficiency model's parameters:
 * the scenario's `learning.efficiency` mapping and Pollux traces
 * (efficiency.h). */
#include "learn/efficiency_impl.h"
#include "units.h"
#include "yamltree.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- Pollux traces ---------------------------------------------------------
 * AdaptDL's simulator traces (petuum/adaptdl, branch osdi21-artifact,
 * simulator/traces/APP/validation-BATCH.csv): one row per epoch,
 * `progress,iteration,metric,grad_sqr,grad_var`, progress in steps of the
 * application's initial batch (128 for cifar10; traces/pollux/ ships one per
 * application), the gradient statistics
 * normalised to that batch, so B_noise = M0 var / sqr. */

#define EFF_TRACE_MAX_ROWS  1000000
#define EFF_TRACE_MAX_BYTES (64L << 20)

static int row_fail(dp_err *err, const char *path, size_t line, const char *what)
{
    return dp_err_set(err, DP_EINPUT, "%s:%zu: %s", path, line, what);
}

/* Parse five comma-separated numbers of one line; 0 or -1. */
static int parse_row(char *s, double v[5])
{
    for (int k = 0; k < 5; k++) {
        char *end;
        v[k] = strtod(s, &end);
        if (end == s || !isfinite(v[k]))
            return -1;
        while (*end == ' ' || *end == '\r')
            end++;
        if (k < 4 && *end++ != ',')
            return -1;
        if (k == 4 && *end)
            return -1;
        s = end;
    }
    return 0;
}

static int parse_pollux(eff_params *p, const char *path, char *text, int curve, dp_err *err);

int eff_params_load_pollux(eff_params *p, const char *path, int curve, dp_err *err)
{
    size_t len = 0;
    char *text = dp_read_file(path, "Pollux trace", EFF_TRACE_MAX_BYTES, &len, err);
    if (!text)
        return err->code;
    return parse_pollux(p, path, text, curve, err);
}

int eff_params_parse_pollux(eff_params *p, const char *name, const char *text, size_t len, int curve,
                            dp_err *err)
{
    char *copy = dp_malloc(len + 1);
    if (!copy)
        return dp_err_set(err, DP_ENOMEM, "out of memory reading %s", name);
    memcpy(copy, text, len);
    copy[len] = '\0';
    return parse_pollux(p, name, copy, curve, err);
}

/* Parse a Pollux trace's text (taken: freed here) into p. */
static int parse_pollux(eff_params *p, const char *path, char *text, int curve, dp_err *err)
{
    double *tp = NULL, *tb = NULL, *tm = NULL;
    size_t n = 0, cap = 0, line = 0;
    int rc = 0;
    char *save = NULL;
    for (char *s = strtok_r(text, "\n", &save); s && !rc; s = strtok_r(NULL, "\n", &save)) {
        line++;
        size_t sl = strlen(s);
        if (sl && s[sl - 1] == '\r')
            s[--sl] = '\0';
        if (line == 1) {
            if (strcmp(s, "progress,iteration,metric,grad_sqr,grad_var") != 0)
                rc = row_fail(err, path, line,
                              "expected the header progress,iteration,metric,grad_sqr,grad_var");
            continue;
        }
        double v[5];
        if (parse_row(s, v))
            rc = row_fail(err, path, line,
                          "expected five numbers: progress,iteration,metric,grad_sqr,grad_var");
        else if (!(v[0] > 0) || (n && !(v[0] > tp[n - 1])))
            rc = row_fail(err, path, line, "progress must be positive and increase from row to row");
        else if (v[3] < 0 || v[4] < 0)
            rc = row_fail(err, path, line, "grad_sqr and grad_var must be >= 0");
        else if (n == EFF_TRACE_MAX_ROWS)
            rc = row_fail(err, path, line, "too many rows");
        if (rc)
            break;
        if (n == cap) {
            cap = cap ? 2 * cap : 128;
            double *a = dp_realloc(tp, cap * sizeof *a), *b = a ? dp_realloc(tb, cap * sizeof *b) : NULL,
                   *m = b ? dp_realloc(tm, cap * sizeof *m) : NULL;
            if (a)
                tp = a;
            if (b)
                tb = b;
            if (m)
                tm = m;
            if (!m) {
                rc = dp_err_set(err, DP_ENOMEM, "out of memory reading %s", path);
                break;
            }
        }
        tp[n] = v[0];
        tm[n] = v[2];
        /* goodput.py: gain 1 when var / scale + sqr is 0 (both 0: B = 0);
         * sqr = 0 alone: all noise, B infinite */
        tb[n] = v[3] > 0 ? p->M0 * v[4] / v[3] : v[4] > 0 ? INFINITY : 0;
        n++;
    }
    dp_free(text);
    if (!rc && !n)
        rc = row_fail(err, path, line, "no rows after the header");
    if (!rc && curve)
        rc = eff_params_set_curve(p, tp, tm, n) ? dp_err_set(err, DP_ENOMEM, "out of memory") : 0;
    if (rc) {
        dp_free(tp);
        dp_free(tb);
        dp_free(tm);
        return rc;
    }
    dp_free(tm);
    dp_free(p->tr_p);
    dp_free(p->tr_b);
    p->tr_p = tp;
    p->tr_b = tb;
    p->n_tr = n;
    p->bn_kind = EFF_BN_TRACE;
    return 0;
}

/* ---- learning.efficiency ---------------------------------------------------- */

/* A number from a scalar node, or a message at it. */
static int num_at(const scn_scenario *s, const yt_node *n, const char *kp, double *out, dp_err *err)
{
    char g[80];
    dp_err e = {0};
    if (!n || n->kind != YT_SCALAR || scn_parse_quantity(n->text, SCN_UNIT_NUMBER, out, &e) ||
        !isfinite(*out))
        return scn_read_fail(s, n, kp, err, "expected a number (got %s)", scn_read_got(n, g, sizeof g));
    return 0;
}

/* noise_scale: a number or a list of numbers >= 0 (one per epoch). */
static int read_noise(const scn_scenario *s, const yt_node *m, const char *path, eff_params *p, dp_err *err)
{
    const yt_node *v = yt_get(m, "noise_scale");
    char kp[160], g[80];
    snprintf(kp, sizeof kp, "%s.noise_scale", path);
    if (v->kind == YT_SCALAR) {
        double b;
        int r = scn_read_quantity(s, m, path, "noise_scale", SCN_UNIT_NUMBER, 0, 1, 1e300, &b, err);
        if (r < 0)
            return r;
        eff_params_set_noise(p, b);
        return 0;
    }
    if (v->kind != YT_SEQ || !v->n)
        return scn_read_fail(s, v, kp, err, "expected a number or a list of numbers, one per epoch (got %s)",
                             scn_read_got(v, g, sizeof g));
    double *b = dp_malloc(v->n * sizeof *b);
    if (!b)
        return dp_err_set(err, DP_ENOMEM, "out of memory");
    int r = 0;
    for (size_t i = 0; i < v->n && !r; i++)
        if (!(r = num_at(s, v->items[i], kp, &b[i], err)) && b[i] < 0)
            r = scn_read_fail(s, v->items[i], kp, err, "must be >= 0 (got %s)",
                              scn_read_got(v->items[i], g, sizeof g));
    if (!r && eff_params_set_noise_epochs(p, b, v->n))
        r = dp_err_set(err, DP_ENOMEM, "out of memory");
    dp_free(b);
    return r;
}

/* curve: [[progress, metric], ...], progress >= 0 and increasing. */
static int read_curve(const scn_scenario *s, const yt_node *v, const char *path, eff_params *p, dp_err *err)
{
    char kp[160], g[80];
    snprintf(kp, sizeof kp, "%s.curve", path);
    if (v->kind != YT_SEQ || !v->n)
        return scn_read_fail(s, v, kp, err, "expected a list of [progress, metric] pairs (got %s)",
                             scn_read_got(v, g, sizeof g));
    double *cp = dp_malloc(v->n * sizeof *cp), *cm = dp_malloc(v->n * sizeof *cm);
    int r = cp && cm ? 0 : dp_err_set(err, DP_ENOMEM, "out of memory");
    for (size_t i = 0; i < v->n && !r; i++) {
        const yt_node *it = v->items[i];
        if (it->kind != YT_SEQ || it->n != 2)
            r = scn_read_fail(s, it, kp, err, "expected a [progress, metric] pair (got %s)",
                              scn_read_got(it, g, sizeof g));
        else if (!(r = num_at(s, it->items[0], kp, &cp[i], err)) &&
                 !(r = num_at(s, it->items[1], kp, &cm[i], err)) &&
                 (cp[i] < 0 || (i && !(cp[i] > cp[i - 1]))))
            r = scn_read_fail(s, it->items[0], kp, err,
                              "progress must be >= 0 and increase along the curve (got %s)",
                              scn_read_got(it->items[0], g, sizeof g));
    }
    if (!r && eff_params_set_curve(p, cp, cm, v->n))
        r = dp_err_set(err, DP_ENOMEM, "out of memory");
    dp_free(cp);
    dp_free(cm);
    return r;
}

/* A relative trace path resolves against the scenario's folder, then the
 * current directory (as the loader's traces do). */
static void resolve(const scn_scenario *s, const char *file, char *buf, size_t len)
{
    snprintf(buf, len, "%s", file);
    if (file[0] == '/' || !s->path || s->path[0] != '/')
        return;
    const char *slash = strrchr(s->path, '/');
    snprintf(buf, len, "%.*s/%s", (int)(slash - s->path), s->path, file);
    if (access(buf, R_OK) != 0)
        snprintf(buf, len, "%s", file);
}

int eff_params_read(const scn_scenario *s, const yt_node *m, const char *path, eff_params **out, dp_err *err)
{
    static const char *const keys[] = {
        "reference_batch", "noise_scale",   "noise_trace", "staleness_exponent",
        "drift",           "participation", "curve",       NULL};
    char g[80], kp[160];
    *out = NULL;
    if (!m || m->kind != YT_MAP)
        return scn_read_fail(s, m, path, err,
                             "expected a mapping (reference_batch, noise_scale, ...) (got %s)",
                             scn_read_got(m, g, sizeof g));
    int r = scn_read_keys(s, m, path, keys, err);
    if (r < 0)
        return r;
    double M0, a, kappa;
    int rho;
    if ((r = scn_read_quantity(s, m, path, "reference_batch", SCN_UNIT_NUMBER, 0, 0, 1e12, &M0, err)) < 0)
        return r;
    if (r == 0)
        return scn_read_fail(s, m, path, err,
                             "reference_batch is required (the batch size progress is counted in)");
    if ((r = scn_read_quantity(s, m, path, "staleness_exponent", SCN_UNIT_NUMBER, 0, 1, 100, &a, err)) < 0 ||
        (r = scn_read_quantity(s, m, path, "drift", SCN_UNIT_NUMBER, 0, 1, 1e6, &kappa, err)) < 0 ||
        (r = scn_read_bool(s, m, path, "participation", 0, &rho, err)) < 0)
        return r;
    const yt_node *ns = yt_get(m, "noise_scale"), *nt = yt_get(m, "noise_trace"), *cu = yt_get(m, "curve");
    int has_ns = !yt_is_null(ns), has_nt = !yt_is_null(nt);
    if (has_ns == has_nt)
        return scn_read_fail(s, has_nt ? nt : m, path, err,
                             "give exactly one of noise_scale (a number or one per epoch) and noise_trace (a "
                             "Pollux CSV)");
    if (!has_nt && yt_is_null(cu))
        return scn_read_fail(s, m, path, err,
                             "a reference curve is needed: curve: [[progress, metric], ...] or a "
                             "noise_trace with a metric column");
    eff_params *p = eff_params_new(M0, 0);
    if (!p)
        return dp_err_set(err, DP_ENOMEM, "out of memory");
    eff_params_set_discounts(p, a, kappa, rho);
    if (has_ns)
        r = read_noise(s, m, path, p, err);
    if (!r && has_nt) {
        snprintf(kp, sizeof kp, "%s.noise_trace", path);
        if (nt->kind != YT_SCALAR) {
            r = scn_read_fail(s, nt, kp, err, "expected a file name (got %s)", scn_read_got(nt, g, sizeof g));
        } else {
            char file[4096];
            dp_err e = {0};
            resolve(s, nt->text, file, sizeof file);
            if ((r = eff_params_load_pollux(p, file, 1, &e)) < 0)
                r = scn_read_fail(s, nt, kp, err, "%s", e.msg);
        }
    }
    if (!r && !yt_is_null(cu))
        r = read_curve(s, cu, path, p, err);
    if (r < 0) {
        eff_params_free(p);
        return r;
    }
    *out = p;
    return 0;
}
