/* calib_acc.c: `dpsim calibrate SCENARIO --accuracy POLICY@EPOCH=ACC ...`:
 * the statistical-efficiency model (scenario key learning.efficiency, the
 * starting values and the curve's points) fitted to measured accuracies of
 * one or more policies' runs (sim/calib/effit.h), with residuals, an error
 * band, and predictions for other policies marked as interpolating or
 * extrapolating in batch size. */
#include "calib/effit.h"
#include "cli/calib_acc.h"
#include "cli/cli.h"
#include "cli/runlog.h"
#include "run/runner.h"
#include "yamltree.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* "POLICY@EPOCH=ACC[:WEIGHT]" or "POLICY@TIMEs=ACC[:WEIGHT]"; ACC a
 * fraction or a percentage ("70.56%"). */
static int parse_point(const char *text, char *policy, size_t plen, effit_point *pt, dp_err *err)
{
    const char *at = strchr(text, '@'), *eq = at ? strchr(at, '=') : NULL;
    if (!at || !eq || at == text || (size_t)(at - text) >= plen)
        return dp_err_set(err, DP_EINPUT,
                          "--accuracy '%s': expected POLICY@EPOCH=ACCURACY or POLICY@TIMEs=ACCURACY", text);
    snprintf(policy, plen, "%.*s", (int)(at - text), text);
    char *end;
    pt->at = strtod(at + 1, &end);
    pt->by_time = *end == 's';
    if (pt->by_time)
        end++;
    if (end != eq || !(pt->at > 0) || !isfinite(pt->at) || (!pt->by_time && pt->at != floor(pt->at)))
        return dp_err_set(err, DP_EINPUT,
                          "--accuracy '%s': the epoch is a whole number >= 1, a time ends in s", text);
    pt->metric = strtod(eq + 1, &end);
    if (*end == '%') {
        pt->metric /= 100;
        end++;
    }
    pt->weight = 1;
    if (*end == ':')
        pt->weight = strtod(end + 1, &end);
    if (*end || !isfinite(pt->metric) || !(pt->weight > 0) || !isfinite(pt->weight))
        return dp_err_set(err, DP_EINPUT, "--accuracy '%s': want ACCURACY[:WEIGHT], weight > 0", text);
    pt->label = text;
    return 0;
}

static int parse_free(const char *list, unsigned *out, dp_err *err)
{
    static const char *const names[] = {"noise_scale", "staleness_exponent", "drift", "curve"};
    static const unsigned bits[] = {EFFIT_NOISE, EFFIT_A, EFFIT_KAPPA, EFFIT_CURVE};
    *out = 0;
    const char *p = list;
    while (*p) {
        size_t n = strcspn(p, ",");
        int found = 0;
        for (int k = 0; k < 4; k++)
            if (strlen(names[k]) == n && !strncmp(p, names[k], n)) {
                *out |= bits[k];
                found = 1;
            }
        if (!found)
            return dp_err_set(err, DP_EINPUT,
                              "--accuracy-fit '%s': each of noise_scale, staleness_exponent, drift, curve",
                              list);
        p += n + (p[n] == ',');
    }
    return *out ? 0 : dp_err_set(err, DP_EINPUT, "--accuracy-fit: name at least one value");
}

/* The distinct policies of the points and predictions, in order. */
static int add_policy(const char *name, const policy_def **pk, size_t *n, dp_err *err)
{
    const policy_def *d = NULL;
    if (runner_parse_policies(name, &d, 1, err) != 1)
        return DP_EINPUT;
    for (size_t k = 0; k < *n; k++)
        if (pk[k] == d)
            return (int)k;
    pk[*n] = d;
    return (int)(*n)++;
}

static void pct(char *buf, size_t len, double v)
{
    snprintf(buf, len, isfinite(v) ? "%.2f%%" : "-", 100 * v);
}

static void print_regime(double x)
{
    if (!isfinite(x))
        printf("batch: unknown");
    else if (x <= 1)
        printf("batch inside the fitted range: interpolation");
    else
        printf("batch x%.3g outside the fitted range: EXTRAPOLATION (Pollux's CIFAR-10: x8 put\n"
               "      iterations +21%%, x32 +72%%; docs/MODEL.md section 10)",
               x);
}

static void print_fit(const scn_scenario *s, const effit_point *pts, size_t np, const effit_result *r)
{
    char m[32], f[32];
    printf("accuracy fit on %s (%s): %zu points, %zu free values\n\n", s->name, s->path, np, r->n_free);
    printf("  %-28s %10s %10s %10s %10s\n", "point", "measured", "model", "residual", "batch");
    for (size_t k = 0; k < np; k++) {
        pct(m, sizeof m, pts[k].metric);
        pct(f, sizeof f, r->predicted[k]);
        printf("  %-28s %10s %10s %+7.2f pt %10.4g\n", pts[k].label, m, f, 100 * r->residual[k],
               effit_log_batch(pts[k].log));
    }
    printf("\n  %-24s %14s\n", "value", "fitted");
    for (size_t i = 0; i < r->n_free; i++)
        printf("  %-24s %14.6g%s%s\n", r->name[i], r->value[i],
               r->at_bound[i] < 0   ? "  AT BOUND (low)"
               : r->at_bound[i] > 0 ? "  AT BOUND (high)"
                                    : "",
               r->undetermined[i] ? "  UNDETERMINED: no point moves with it" : "");
    printf("\n  cost (sum of weighted squared residuals) %.6g\n", r->cost);
    if (isfinite(r->band))
        printf("  error band: +-%.2f points (2 residual standard deviations, %zu points - %zu values)\n",
               100 * r->band, r->n_points, r->n_free);
    else
        printf("  error band: none (%zu points for %zu free values: the residuals are small by\n"
               "  construction and say nothing about a prediction's error)\n",
               r->n_points, r->n_free);
}

int calibrate_accuracy(const calib_acc_args *a)
{
    dp_err err = {0};
    unsigned free = EFFIT_NOISE | EFFIT_KAPPA | EFFIT_CURVE;
    if (a->fit && parse_free(a->fit, &free, &err))
        return cli_fail(&err);
    scn_scenario *s = cli_load_scenario(a->scenario, a->ov, a->n_ov, &err);
    if (!s)
        return cli_fail(&err);
    eff_params *start = NULL;
    const struct yt_node *lm = scn_learning(s), *em = lm ? yt_get(lm, "efficiency") : NULL;
    if (!em) {
        scn_free(s);
        dp_err_set(&err, DP_EINPUT,
                   "%s: --accuracy fits learning.efficiency, which the scenario lacks (scenarios/README.md)",
                   a->scenario);
        return cli_fail(&err);
    }
    if (eff_params_read(s, em, "learning.efficiency", &start, &err)) {
        scn_free(s);
        return cli_fail(&err);
    }
    const policy_def *pk[CALIB_ACC_MAX];
    size_t npol = 0;
    effit_point pts[CALIB_ACC_MAX];
    int pol_of[CALIB_ACC_MAX], pred_of[CALIB_ACC_MAX];
    char name[64];
    int rc = 0;
    for (size_t k = 0; k < a->n_points && !rc; k++) {
        if ((rc = parse_point(a->points[k], name, sizeof name, &pts[k], &err)) == 0 &&
            (pol_of[k] = add_policy(name, pk, &npol, &err)) < 0)
            rc = DP_EINPUT;
    }
    for (size_t k = 0; k < a->n_predict && !rc; k++)
        if ((pred_of[k] = add_policy(a->predict[k], pk, &npol, &err)) < 0)
            rc = DP_EINPUT;
    res_run *runs[CALIB_ACC_MAX] = {0};
    int64_t ids[CALIB_ACC_MAX] = {0};
    eff_log *logs[CALIB_ACC_MAX] = {0};
    if (!rc)
        rc = runner_run(s, pk, npol, s->training.seed, NULL, NULL, 0, runs, ids, &err);
    for (size_t k = 0; k < npol && !rc; k++)
        rc = runlog_derive(s, runs[k], &logs[k], &err);
    effit_result r = {0};
    if (!rc) {
        for (size_t k = 0; k < a->n_points; k++)
            pts[k].log = logs[pol_of[k]];
        effit_spec sp = {
            .start = start, .free = free, .curve_fixed = 1, .n_points = a->n_points, .points = pts};
        rc = effit_run(&sp, &r, &err);
    }
    if (!rc) {
        print_fit(s, pts, a->n_points, &r);
        for (size_t k = 0; k < a->n_predict; k++) {
            const eff_log *l = logs[pred_of[k]];
            int last = eff_log_len(l) ? eff_log_epoch(l, eff_log_len(l) - 1) : 0;
            printf("\n  prediction %s (batch %.4g): ", a->predict[k], effit_log_batch(l));
            print_regime(effit_extrapolation(pts, a->n_points, l));
            printf("\n   ");
            for (int e = 1; e <= last; e++)
                if (e == last || e % (last > 10 ? last / 10 : 1) == 0) {
                    char m[32];
                    pct(m, sizeof m, eff_metric_at_epoch(r.fit, l, e));
                    printf(" epoch %d %s", e, m);
                }
            printf("\n");
        }
    }
    effit_result_free(&r);
    for (size_t k = 0; k < npol; k++) {
        eff_log_free(logs[k]);
        res_run_free(runs[k]);
    }
    eff_params_free(start);
    scn_free(s);
    return rc ? cli_fail(&err) : EXIT_OK;
}
