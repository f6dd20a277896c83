/* plot_staleness.c: the `staleness` plot: the histogram of model-update
 * staleness (run_stats `update.staleness`, scope bin; commlight.h) of each
 * selected run, as grouped bars, a bar per run: share of the run's updates
 * per staleness value.  For asyncps, staleness is the number of server
 * updates between a device's pull and its push; flsgd's background
 * averages are 1 period stale.  Runs without the histogram are left out
 * (the default selection is the latest run of every policy). */
#include "plots.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int plot_draw_staleness(store *st, const plot_sel *sel, const char *out_path, dp_err *err)
{
    plot_run *r;
    size_t n;
    int rc = plot_runs_select(st, sel, 0, &r, &n, err);
    if (rc)
        return rc;
    store_hist *h = dp_calloc(n ? n : 1, sizeof *h);
    size_t *keep = dp_calloc(n ? n : 1, sizeof *keep);
    double *total = dp_calloc(n ? n : 1, sizeof *total); /* each run's count of updates */
    /* the bins any run has, sorted: x positions */
    int64_t *xs = NULL, *xedge = NULL;
    size_t nx = 0, nk = 0, capx = 0;
    if (!h || !keep || !total) {
        rc = dp_err_set(err, DP_ENOMEM, "out of memory");
        goto done;
    }
    for (size_t k = 0; k < n && !rc; k++) {
        if ((rc = store_hist_get(st, r[k].id, "update.staleness", &h[k], err)))
            break;
        for (size_t i = 0; i < h[k].n; i++)
            total[k] += h[k].count[i];
        if (!(total[k] > 0))
            continue;
        keep[nk++] = k;
        for (size_t i = 0; i < h[k].n; i++) {
            size_t j = 0;
            while (j < nx && xs[j] < h[k].bin[i])
                j++;
            if (j < nx && xs[j] == h[k].bin[i])
                continue;
            if (nx == capx) {
                capx = capx ? 2 * capx : 64;
                int64_t *a = dp_realloc(xs, capx * sizeof *a);
                if (a)
                    xs = a;
                int64_t *b = a ? dp_realloc(xedge, capx * sizeof *b) : NULL;
                if (b)
                    xedge = b;
                if (!a || !b) {
                    rc = dp_err_set(err, DP_ENOMEM, "out of memory");
                    goto done;
                }
            }
            memmove(xs + j + 1, xs + j, (nx - j) * sizeof *xs);
            memmove(xedge + j + 1, xedge + j, (nx - j) * sizeof *xedge);
            xs[j] = h[k].bin[i];
            xedge[j] = h[k].edge[i];
            nx++;
        }
    }
    if (rc)
        goto done;
    if (!nk) {
        rc = dp_err_set(err, DP_EINPUT,
                        "staleness: none of the selected runs has a staleness histogram (update.staleness: "
                        "run asyncps, flsgd, localsgd or hierarchical, or choose runs with --run)");
        goto done;
    }
    plot_gp *gp = plot_open(sel, out_path, 1200, 700, err);
    if (!gp) {
        rc = err ? err->code : DP_ERUN;
        goto done;
    }
    plot_gp_printf(gp, "set title ");
    if (sel->title)
        plot_gp_str(gp, sel->title);
    else {
        char t[400];
        snprintf(t, sizeof t, "Staleness of model updates, scenario '%s'", r[keep[0]].scenario);
        plot_gp_str(gp, t);
        plot_gp_printf(gp, " . \"\\n\" . 'asyncps: server updates between a device''s pull and its push; "
                           "flsgd: averaging periods'");
    }
    plot_gp_printf(gp, " font ',14'\n");
    plot_gp_printf(gp,
                   "set ylabel 'share of the run''s updates (%%)'\nset xlabel 'staleness'\n"
                   "set grid ytics lc rgb '#d0d0d0'\nset key outside right top box opaque\n"
                   "set style fill solid 0.9 border lc rgb '#333333'\n"
                   "set yrange [0:105]\nset xrange [-0.6:%.10g]\n",
                   (double)nx - 0.4);
    /* tic labels: the value, or the range of a power-of-two bin */
    plot_gp_printf(gp, "set xtics (");
    size_t step = nx > 40 ? (nx + 39) / 40 : 1;
    for (size_t j = 0, first = 1; j < nx; j++) {
        if (j % step)
            continue;
        char lab[64];
        if (xs[j] < 64)
            snprintf(lab, sizeof lab, "%lld", (long long)xedge[j]);
        else
            snprintf(lab, sizeof lab, "%lld-%lld", (long long)xedge[j], (long long)(2 * xedge[j] - 1));
        plot_gp_printf(gp, "%s'%s' %zu", first ? "" : ", ", lab, j);
        first = 0;
    }
    plot_gp_printf(gp, ") scale 0%s\n", nx > 16 ? " rotate by 45 right" : "");
    const double group = 0.8, w = group / (double)nk;
    for (size_t q = 0; q < nk; q++) {
        const store_hist *hk = &h[keep[q]];
        const double hk_total = total[keep[q]];
        plot_gp_printf(gp, "$s%zu << EOD\n", q);
        for (size_t i = 0; i < hk->n; i++) {
            size_t j = 0;
            while (xs[j] != hk->bin[i])
                j++;
            double x = (double)j - group / 2 + w * ((double)q + 0.5), y = 100 * hk->count[i] / hk_total;
            plot_gp_printf(gp, "%.10g %.10g %.10g %.10g %.10g %.10g\n", x, y, x - 0.45 * w, x + 0.45 * w, 0.0,
                           y);
        }
        plot_gp_printf(gp, "EOD\n");
    }
    plot_gp_printf(gp, "plot ");
    for (size_t q = 0; q < nk; q++) {
        const plot_run *rk = &r[keep[q]];
        /* runs of one policy (e.g. asyncps under several bounds) get
         * colours of a colour-blind-safe cycle instead of the policy's */
        int shared = 0;
        for (size_t o = 0; o < nk; o++)
            shared |= o != q && !strcmp(r[keep[o]].policy, rk->policy);
        static const char *const cycle[] = {"#0072b2", "#e69f00", "#009e73", "#cc79a7",
                                            "#56b4e9", "#d55e00", "#f0e442", "#000000"};
        plot_gp_printf(gp, "%s$s%zu using 1:2:3:4:5:6 with boxxyerror fc rgb '%s' title ",
                       q ? ", \\\n  " : "", q,
                       shared ? cycle[q % 8] : plot_policy_color(rk->policy, keep[q]));
        char lab[96];
        if (strchr(rk->label, '#'))
            snprintf(lab, sizeof lab, "%s", rk->label);
        else
            snprintf(lab, sizeof lab, "%s #%lld", rk->label, (long long)rk->id);
        plot_gp_str(gp, lab);
    }
    plot_gp_printf(gp, "\n");
    rc = plot_gp_close(gp, err);
done:
    for (size_t k = 0; h && k < n; k++)
        store_hist_free(&h[k]);
    dp_free(h);
    dp_free(total);
    dp_free(keep);
    dp_free(xs);
    dp_free(xedge);
    dp_free(r);
    return rc;
}
