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
    size_t longest = 0; /* legend entries with overrides: widen the canvas, not squeeze the plot */
    for (size_t q = 0; q < nk; q++)
        longest = strlen(r[keep[q]].label) > longest ? strlen(r[keep[q]].label) : longest;
    int width = 800 + 9 * (int)(longest < 120 ? longest : 120);
    plot_gp *gp = plot_open(sel, out_path, width < 1200 ? 1200 : width, 700, err);
    if (!gp) {
        rc = err ? err->code : DP_ERUN;
        goto done;
    }
    /* A numeric axis: a bar stands at its staleness value (a power-of-two
     * bin past 63 spans its values), so gaps in the histogram show as gaps. */
    double xhi = 0;
    for (size_t j = 0; j < nx; j++) {
        double hi = xs[j] < 64 ? (double)xedge[j] : (double)(2 * xedge[j] - 1);
        xhi = hi > xhi ? hi : xhi;
    }
    char t[400], ovl[400];
    snprintf(t, sizeof t, "Staleness of model updates, scenario '%s'", r[keep[0]].scenario);
    plot_title(gp, sel->title, t, plot_overrides_line(r, n, ovl, sizeof ovl));
    plot_caption(sel, "asyncps: server updates between a device's pull and its push; flsgd: averaging "
                      "periods; past 63 a bar spans a power-of-two range of values");
    /* Past 30, a log axis of staleness + 1 (0 stays on it), ticks at 0 and
     * powers of two: the bulk near 0 and the tail both read. */
    int logx = xhi > 30;
    plot_gp_printf(gp,
                   "set ylabel 'share of the run''s updates (%%)'\nset xlabel 'staleness%s'\n"
                   "set grid ytics lc rgb '#d0d0d0'\nset key outside right top box opaque\n"
                   "set style fill solid 0.9 noborder\nset yrange [0:105]\nset xtics out nomirror\n",
                   logx ? " (log scale)" : "");
    if (logx) {
        plot_gp_printf(gp, "set logscale x 2\nset xrange [0.6:%.10g]\nset xtics ('0' 1", (xhi + 1) * 1.4);
        for (double v = 1; v <= xhi * 1.4; v *= 2)
            plot_gp_printf(gp, ", '%.0f' %.0f", v, v + 1);
        plot_gp_printf(gp, ")\n");
    } else {
        plot_gp_printf(gp, "set xrange [-0.6:%.10g]\n%s", xhi + 0.6, xhi < 30 ? "set xtics 1\n" : "");
    }
    const double group = 0.8, w = group / (double)nk;
    for (size_t q = 0; q < nk; q++) {
        const store_hist *hk = &h[keep[q]];
        const double hk_total = total[keep[q]];
        plot_gp_printf(gp, "$s%zu << EOD\n", q);
        for (size_t i = 0; i < hk->n; i++) {
            /* the bin's values [lo, hi], its runs side by side across it (in
             * log space on a log axis, so bars keep their width) */
            double lo = (double)hk->edge[i], hi = hk->bin[i] < 64 ? lo : (double)(2 * hk->edge[i] - 1);
            double a = logx ? log2(lo + 0.5) : lo - 0.5, b = logx ? log2(hi + 1.5) : hi + 0.5;
            double span = b - a, left = a + span * (1 - group) / 2 + span * w * (double)q;
            double x0 = left + span * w * 0.05, x1 = left + span * w * 0.95,
                   y = 100 * hk->count[i] / hk_total;
            if (logx)
                x0 = exp2(x0), x1 = exp2(x1);
            plot_gp_printf(gp, "%.10g %.10g %.10g %.10g %.10g %.10g\n", (x0 + x1) / 2, y, x0, x1, 0.0, y);
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
        char lab[400];
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
