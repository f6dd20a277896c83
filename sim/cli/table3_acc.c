/* table3_acc.c: accuracy for `dpsim reproduce table3` (table3_acc.h). */
#include "cli/table3_acc.h"
#include "cli/runlog.h"

#include <math.h>
#include <string.h>

int t3_accuracy(const scn_scenario *s, res_run *const runs[T3_NPOL], t3_acc *a, dp_err *err)
{
    memset(a, 0, sizeof *a);
    static const char *const label[T3_NPOL] = {"DDP", "DeepSpeed", "C-ADP"};
    /* the single card: the first GPU group's (the paper's GPUs), else the first */
    size_t g = 0;
    for (size_t k = 0; k < s->n_groups; k++)
        if (s->groups[k].kind == SCN_GPU) {
            g = k;
            break;
        }
    a->single_batch = s->groups[g].batch;
    int rc = 0;
    for (int k = 0; k < T3_NPOL && !rc; k++)
        if (runs[k]->n_epochs < 50)
            rc = dp_err_set(err, DP_EINPUT, "table3 accuracy: %s ran %zu epochs, the paper's points need 50",
                            label[k], runs[k]->n_epochs);
        else
            rc = runlog_derive(s, runs[k], &a->logs[k], err);
    if (!rc && !(a->logs[T3_NPOL] = eff_log_new()))
        rc = DP_ENOMEM;
    if (!rc)
        rc = runlog_single((double)s->dataset.samples, a->single_batch, 50, a->logs[T3_NPOL]);
    if (rc) {
        if (!err->code)
            dp_err_set(err, rc, "table3 accuracy: cannot build the runs' update logs");
        t3_accuracy_free(a);
        return err->code;
    }
    /* The model: progress in steps of the single card's batch; the curve
     * from chance (1 of ImageNet100's 100 classes) through the single card's
     * progress at epochs 30 and 50, those two metrics fitted with the noise
     * scale and the drift. */
    double P = (double)s->dataset.samples / a->single_batch;
    static const double m0[] = {0.01, 0.7, 0.73};
    double cp[] = {0, 30 * P, 50 * P};
    eff_params *start = eff_params_new(a->single_batch, 1000);
    if (!start || eff_params_set_curve(start, cp, m0, 3)) {
        eff_params_free(start);
        t3_accuracy_free(a);
        return dp_err_set(err, DP_ENOMEM, "out of memory");
    }
    eff_params_set_discounts(start, 0, 0.01, 0);
    a->pts[0] = (effit_point){"single card, epoch 30", a->logs[T3_NPOL], 0, 30, T3_ACC_SINGLE_30, 1};
    a->pts[1] = (effit_point){"C-ADP, epoch 30", a->logs[2], 0, 30, T3_ACC_CADP_30, 1};
    a->pts[2] = (effit_point){"C-ADP, epoch 50", a->logs[2], 0, 50, T3_ACC_CADP_50, 1};
    effit_spec sp = {.start = start,
                     .free = EFFIT_NOISE | EFFIT_KAPPA | EFFIT_CURVE,
                     .noise_lo = 1,
                     .noise_hi = 1e7,
                     .curve_fixed = 1,
                     .n_points = T3_NPTS,
                     .points = a->pts};
    rc = effit_run(&sp, &a->fit, err);
    eff_params_free(start);
    if (rc) {
        t3_accuracy_free(a);
        return rc;
    }
    for (int k = 0; k < T3_NPOL; k++) {
        t3_acc_row *w = &a->rows[k];
        w->label = label[k];
        for (int j = 0; j < 2; j++) {
            w->at[j] = eff_metric_at_epoch(a->fit.fit, a->logs[k], j ? 50 : 30);
            w->role[j] = k == 2 ? "fit" : "prediction";
            w->paper[j] = k == 2 ? (j ? T3_ACC_CADP_50 : T3_ACC_CADP_30) : NAN;
            w->t_to[j] = eff_time_to(a->fit.fit, a->logs[k], j ? 0.73 : 0.70);
        }
        w->extrapolation = effit_extrapolation(a->pts, T3_NPTS, a->logs[k]);
    }
    return 0;
}

void t3_accuracy_free(t3_acc *a)
{
    effit_result_free(&a->fit);
    for (int k = 0; k <= T3_NPOL; k++) {
        eff_log_free(a->logs[k]);
        a->logs[k] = NULL;
    }
}

static void pct(char *buf, size_t len, double v)
{
    if (isfinite(v))
        snprintf(buf, len, "%.2f%%", 100 * v);
    else
        snprintf(buf, len, "-");
}

static void secs(char *buf, size_t len, double v)
{
    if (isfinite(v))
        snprintf(buf, len, "%.4g s", v);
    else
        snprintf(buf, len, "not reached");
}

void t3_accuracy_print(const t3_acc *a, FILE *out)
{
    char p[32], m[32], t0[32], t1[32];
    const effit_result *r = &a->fit;
    fprintf(out, "\n  accuracy (statistical efficiency, docs/MODEL.md section 10: fitted to the\n"
                 "  paper's three printed points, see note 5)\n");
    fprintf(out, "  %-34s %14s %14s %9s   %s\n", "figure", "paper", "model", "residual", "role");
    for (size_t k = 0; k < T3_NPTS; k++) {
        pct(p, sizeof p, a->pts[k].metric);
        pct(m, sizeof m, r->predicted[k]);
        fprintf(out, "  %-34s %14s %14s %+6.2f pt   fit\n", a->pts[k].label, p, m, 100 * r->residual[k]);
    }
    pct(p, sizeof p, T3_ACC_TABLE);
    fprintf(out, "  %-34s %14s %14s %9s   %s\n", "accuracy C-ADP (Table 3)", p, "-", "-",
            "not fitted: the text gives 73.67% at epoch 50");
    for (int k = 0; k < T3_NPOL; k++) {
        const t3_acc_row *w = &a->rows[k];
        char fig[64], role[96];
        if (w->extrapolation > 1)
            snprintf(role, sizeof role, "prediction, batch extrapolated x%.3g", w->extrapolation);
        else
            snprintf(role, sizeof role, "prediction, batch interpolated");
        for (int j = 0; j < 2; j++) {
            if (k == 2)
                continue; /* C-ADP's are the fitted rows above */
            snprintf(fig, sizeof fig, "%s, epoch %d", w->label, j ? 50 : 30);
            pct(m, sizeof m, w->at[j]);
            fprintf(out, "  %-34s %14s %14s %9s   %s\n", fig, "-", m, "-", role);
        }
    }
    fprintf(out, "  %-34s %14s %14s   %s\n", "time to accuracy", "70%", "73%", "role");
    for (int k = 0; k < T3_NPOL; k++) {
        const t3_acc_row *w = &a->rows[k];
        secs(t0, sizeof t0, w->t_to[0]);
        secs(t1, sizeof t1, w->t_to[1]);
        fprintf(out, "  %-34s %14s %14s   prediction\n", w->label, t0, t1);
    }
    fprintf(out, "  fitted (reference batch %g, the single card's):", a->single_batch);
    for (size_t i = 0; i < r->n_free; i++)
        fprintf(out, "%s %s %.4g%s%s", i ? "," : "", r->name[i],
                strncmp(r->name[i], "curve", 5) ? r->value[i] : 100 * r->value[i],
                r->at_bound[i] < 0   ? " (AT BOUND, low)"
                : r->at_bound[i] > 0 ? " (AT BOUND, high)"
                                     : "",
                r->undetermined[i] ? " (UNDETERMINED)" : "");
    fprintf(out, "\n");
    if (isfinite(r->band))
        fprintf(out, "  error band: +-%.2f points (2 residual standard deviations)\n", 100 * r->band);
    else
        fprintf(out,
                "  error band: none: %zu points for %zu free parameters, so the residuals say nothing\n"
                "  about the predictions' error\n",
                r->n_points, r->n_free);
}
