/* plot_accuracy.c: the `accuracy` plot (scenario `learning:`; docs/MODEL.md
 * "Learning"): the global model's test accuracy against simulated time, one
 * line per selected run (the figure the C-ADP paper's Fig. 5 draws), and
 * beside it against epoch-equivalents (training samples consumed / training
 * set size), with the targets as dashed lines.  The left panel shows which
 * schedule reaches a target first; the right one how much each learns per
 * pass over the data.  Runs without evaluations are left out. */
#include "plots.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int plot_draw_accuracy(store *st, const plot_sel *sel, const char *out_path, dp_err *err)
{
    plot_run *r;
    size_t n;
    int rc = plot_runs_select(st, sel, 0, &r, &n, err);
    if (rc)
        return rc;
    res_run **rr = dp_calloc(n ? n : 1, sizeof *rr);
    size_t *keep = dp_calloc(n ? n : 1, sizeof *keep), nk = 0;
    double tmax = 0, emax = 0, tmin = INFINITY; /* tmin: the earliest evaluation after t = 0 */
    if (!rr || !keep) {
        rc = dp_err_set(err, DP_ENOMEM, "out of memory");
        goto done;
    }
    for (size_t k = 0; k < n && !rc; k++) {
        if ((rc = store_get_run(st, r[k].id, &rr[k], err)))
            break;
        if (!rr[k]->n_evals)
            continue;
        keep[nk++] = k;
        const res_eval *last = &rr[k]->evals[rr[k]->n_evals - 1];
        for (size_t i = 0; i < rr[k]->n_evals; i++)
            if (rr[k]->evals[i].t_s > 0)
                tmin = fmin(tmin, rr[k]->evals[i].t_s);
        tmax = fmax(tmax, last->t_s);
        emax = fmax(emax, last->epochs);
    }
    if (rc)
        goto done;
    if (!nk) {
        rc = dp_err_set(err, DP_EINPUT,
                        "accuracy: none of the selected runs has evaluations (give the scenario a "
                        "`learning:` block, scenarios/README.md \"Learning\", or choose runs with --run)");
        goto done;
    }
    double div;
    const char *unit = plot_time_unit(tmax, &div);
    /* schedules whose runs differ by decades (C-ADP's seconds against
     * DDP's hours) share a log time axis; the initial model's evaluation
     * at t = 0 is then left out of the left panel */
    int logx = plot_want_log(sel->log_x, tmin, tmax, 30);
    plot_gp *gp = plot_open(sel, out_path, 1400, 620, err);
    if (!gp) {
        rc = err ? err->code : DP_ERUN;
        goto done;
    }
    const res_run *r0 = rr[keep[0]];
    char t1[300], t2[200];
    snprintf(t1, sizeof t1, "Test accuracy of the global model, scenario '%s'", r[keep[0]].scenario);
    snprintf(t2, sizeof t2, "%s on the simulated schedule; evaluated on the held-out split",
             !strcmp(r0->learn_source, "sgd") ? "real SGD" : r0->learn_source);
    plot_gp_printf(gp, "set multiplot layout 1,2\n");
    for (int panel = 0; panel < 2; panel++) {
        plot_title(gp, sel->title, panel ? "... against epochs" : t1, panel ? "" : t2);
        plot_gp_printf(gp,
                       "set grid lc rgb '#d0d0d0'\nset key bottom right box opaque\n"
                       "set yrange %s\nset ylabel 'test accuracy (%%)'\n",
                       !panel && logx ? "[*:*]" : "[0:100]");
        if (panel)
            plot_gp_printf(gp,
                           "set xlabel 'epochs (training samples consumed / training set)'\n"
                           "set xrange [0:%.10g]\n",
                           emax > 0 ? emax * 1.02 : 1);
        else if (logx)
            plot_gp_printf(gp,
                           "set xlabel 'simulated time (%s, log scale)'\nset logscale x\n"
                           "set format x '%%g'\nset xrange [%.10g:%.10g]\n",
                           unit, tmin / div / 1.2, tmax / div * 1.2);
        else
            plot_gp_printf(gp, "set xlabel 'simulated time (%s)'\nset xrange [0:%.10g]\n", unit,
                           tmax > 0 ? tmax / div * 1.02 : 1);
        if (panel)
            plot_gp_printf(gp, "unset logscale x\nset format x '%%g'\n");
        plot_gp_printf(gp, "unset arrow\n");
        for (size_t k = 0; k < r0->n_tta; k++)
            plot_gp_printf(gp,
                           "set arrow from graph 0, first %.10g to graph 1, first %.10g nohead dt 2 lc rgb "
                           "'#777777'\n",
                           100 * r0->tta_target[k], 100 * r0->tta_target[k]);
        for (size_t q = 0; q < nk; q++) {
            const res_run *x = rr[keep[q]];
            plot_gp_printf(gp, "$a%d_%zu << EOD\n", panel, q);
            for (size_t i = 0; i < x->n_evals; i++)
                if (panel || !logx || x->evals[i].t_s > 0)
                    plot_gp_printf(gp, "%.10g %.10g\n", panel ? x->evals[i].epochs : x->evals[i].t_s / div,
                                   100 * x->evals[i].test_acc);
            plot_gp_printf(gp, "EOD\n");
        }
        plot_gp_printf(gp, "plot ");
        for (size_t q = 0; q < nk; q++) {
            const plot_run *rk = &r[keep[q]];
            plot_gp_printf(gp, "%s$a%d_%zu using 1:2 with linespoints lw 2 pt %zu ps 0.6 lc rgb '%s' title ",
                           q ? ", \\\n  " : "", panel, q, 5 + q % 8, plot_policy_color(rk->policy, keep[q]));
            plot_gp_str(gp, rk->label);
        }
        plot_gp_printf(gp, "\n");
    }
    plot_gp_printf(gp, "unset multiplot\n");
    rc = plot_gp_close(gp, err);
done:
    for (size_t k = 0; rr && k < n; k++)
        res_run_free(rr[k]);
    dp_free(rr);
    dp_free(keep);
    dp_free(r);
    return rc;
}
