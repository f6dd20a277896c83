/* plot_kinds.c: three of the plots (compare, flops, timeline), each a gnuplot program written down the pipe
 * of gnuplot.c with its data inline ($name << EOD blocks of numbers only).
 *
 * Text a user or a scenario chose (scenario and device names, titles, sweep
 * keys and values) is only ever written through plot_gp_str; everything
 * else written here is numbers and fixed text.  Numbers are written with
 * %.10g: more digits than a plot can show, fewer bytes down the pipe for the
 * 100k-segment timelines.
 *
 * (sweep and mix: plot_sweep.c)
 *
 *  compare   grouped bars: a group per metric (Tsend, Ttraining, Ttotal), a bar
 *            per run, the value above each bar; log y when asked or when the
 *            values span more than two decades (Table 3 spans 300 s to 1.8e7 s).
 *  flops     cluster FLOP/s per bin as steps (a bin's value holds over the
 *            bin), a line per run.
 *  timeline  a row per device, one boxxyerror per segment, a colour per
 *            activity, dotted lines at epoch ends.
 *  sweep     metric vs a swept key: mean over seeds with a 95% t-interval.
 *  mix       heat map of a metric over two swept keys (categorical axes, so
 *            uneven grids such as counts 0, 1, 2, 4, 8 get equal cells).
 */
#include "plots.h"
#include "policy/policy.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The user's --xlabel / --ylabel, written last before `plot` so they win. */
void plot_user_labels(plot_gp *gp, const plot_sel *sel)
{
    if (sel->xlabel) {
        plot_gp_printf(gp, "set xlabel ");
        plot_gp_str(gp, sel->xlabel);
        plot_gp_printf(gp, "\n");
    }
    if (sel->ylabel) {
        plot_gp_printf(gp, "set ylabel ");
        plot_gp_str(gp, sel->ylabel);
        plot_gp_printf(gp, "\n");
    }
}

/* "1412 s", "12915 s", "1.84e7 s": short enough to sit above a bar. */
static void fmt_seconds(double v, char *buf, size_t len)
{
    if (v == 0)
        snprintf(buf, len, "0 s");
    else if (fabs(v) < 10)
        snprintf(buf, len, "%.2f s", v);
    else if (fabs(v) < 100)
        snprintf(buf, len, "%.1f s", v);
    else if (fabs(v) < 1e5)
        snprintf(buf, len, "%.0f s", v);
    else {
        int e = (int)floor(log10(fabs(v)));
        double m = v / pow(10, e);
        if (fabs(m) >= 9.995) /* rounding carried into the next decade */
            m /= 10, e++;
        snprintf(buf, len, "%.2fe%d s", m, e);
    }
}

/* The scenario named in a title: one name, or "several scenarios". */
static void scenario_phrase(const plot_run *r, size_t n, char *buf, size_t len)
{
    for (size_t k = 1; k < n; k++)
        if (strcmp(r[k].scenario, r[0].scenario) != 0) {
            snprintf(buf, len, "several scenarios");
            return;
        }
    snprintf(buf, len, "scenario '%s'", n ? r[0].scenario : "");
}

/* ---- compare ------------------------------------------------------------ */

int plot_draw_compare(store *st, const plot_sel *sel, const char *out_path, dp_err *err)
{
    plot_run *r;
    size_t n;
    int rc = plot_runs_select(st, sel, 0, &r, &n, err);
    if (rc)
        return rc;
    double minpos = INFINITY, max = 0;
    for (size_t k = 0; k < n; k++) {
        double v[3] = {r[k].tsend_s, r[k].ttraining_s, r[k].ttotal_s};
        for (int j = 0; j < 3; j++)
            if (isfinite(v[j])) {
                if (v[j] > 0 && v[j] < minpos)
                    minpos = v[j];
                if (v[j] > max)
                    max = v[j];
            }
    }
    if (!(max > 0)) {
        dp_free(r);
        return dp_err_set(err, DP_EINPUT, "compare: the selected runs have no positive times to draw");
    }
    int logy = plot_want_log(sel->log_y, minpos, max, 100.0000001);
    plot_gp *gp = plot_open(sel, out_path, 1200, 700, err);
    if (!gp) {
        dp_free(r);
        return err ? err->code : DP_ERUN;
    }
    char scn[200], t1[PLOT_TITLE_MAX];
    scenario_phrase(r, n, scn, sizeof scn);
    snprintf(t1, sizeof t1, "Tsend, Ttraining and Ttotal per policy, %s", scn);
    char ovl[PLOT_TITLE_MAX];
    plot_title(gp, sel->title, t1, plot_overrides_line(r, n, ovl, sizeof ovl));
    if (logy)
        plot_caption(sel, "log scale: the times span more than two decades");
    plot_gp_printf(gp, "set ylabel 'simulated time (s%s)'\n", logy ? ", log scale" : "");
    plot_gp_printf(gp, "set xtics ('Tsend' 0, 'Ttraining' 1, 'Ttotal' 2) scale 0 font ',13'\n"
                       "set xrange [-0.5:2.5]\nset grid ytics lc rgb '#d0d0d0'\n"
                       "set key outside right top box opaque\n"
                       "set style fill solid 0.9 border lc rgb '#333333'\n");
    double ylo;
    if (logy) {
        ylo = pow(10, floor(log10(minpos)));
        plot_gp_printf(gp, "set logscale y 10\nset format y '10^%%T'\nset yrange [%.10g:%.10g]\n", ylo,
                       max * pow(10, 0.35 + 0.08 * (double)n));
    } else {
        ylo = 0;
        plot_gp_printf(gp, "set yrange [0:%.10g]\n", max * (n > 4 ? 1.3 : 1.15));
    }
    const double group = 0.8, w = group / (double)(n ? n : 1);
    for (size_t k = 0; k < n; k++) {
        double v[3] = {r[k].tsend_s, r[k].ttraining_s, r[k].ttotal_s};
        plot_gp_printf(gp, "$r%zu << EOD\n", k);
        int rows = 0;
        for (int j = 0; j < 3; j++) {
            if (!isfinite(v[j]) || (logy && v[j] <= 0))
                continue;
            double x = j - group / 2 + w * ((double)k + 0.5);
            plot_gp_printf(gp, "%.10g %.10g %.10g %.10g %.10g %.10g\n", x, v[j], x - 0.45 * w, x + 0.45 * w,
                           ylo, v[j]);
            rows++;
        }
        if (!rows) /* keep the legend entry of a run with nothing drawable */
            plot_gp_printf(gp, "NaN NaN NaN NaN NaN NaN\n");
        plot_gp_printf(gp, "EOD\n");
    }
    /* the values above the bars (numbers we format: nothing to quote) */
    for (size_t k = 0; k < n; k++) {
        double v[3] = {r[k].tsend_s, r[k].ttraining_s, r[k].ttotal_s};
        for (int j = 0; j < 3; j++) {
            if (!isfinite(v[j]) || (logy && v[j] <= 0))
                continue;
            double x = j - group / 2 + w * ((double)k + 0.5);
            char lab[32];
            fmt_seconds(v[j], lab, sizeof lab);
            if (n > 4)
                plot_gp_printf(
                    gp, "set label '%s' at %.10g,%.10g left rotate by 90 offset 0,0.4 font ',10' front\n",
                    lab, x, v[j]);
            else
                plot_gp_printf(gp, "set label '%s' at %.10g,%.10g center offset 0,0.7 font ',11' front\n",
                               lab, x, v[j]);
        }
    }
    plot_user_labels(gp, sel);
    plot_gp_printf(gp, "plot ");
    for (size_t k = 0; k < n; k++) {
        plot_gp_printf(gp, "%s$r%zu using 1:2:3:4:5:6 with boxxyerror fc rgb '%s' title ",
                       k ? ", \\\n  " : "", k, plot_policy_color(r[k].policy, k));
        plot_gp_str(gp, r[k].label);
    }
    plot_gp_printf(gp, "\n");
    dp_free(r);
    return plot_gp_close(gp, err);
}

/* ---- flops -------------------------------------------------------------- */

static const char *flops_unit(double max, double *div)
{
    static const struct {
        double f;
        const char *name;
    } u[] = {{1e15, "PFLOP/s"}, {1e12, "TFLOP/s"}, {1e9, "GFLOP/s"}, {1e6, "MFLOP/s"}, {1e3, "KFLOP/s"}};
    for (size_t k = 0; k < sizeof u / sizeof *u; k++)
        if (max >= u[k].f) {
            *div = u[k].f;
            return u[k].name;
        }
    *div = 1;
    return "FLOP/s";
}

/* A run's highest FLOPS bin (0 when it has none). */
static double flops_peak(const store_flops *f)
{
    double peak = 0;
    int any = 0;
    for (size_t i = 0; i < f->n; i++)
        if (!isnan(f->flops[i]) && (!any || f->flops[i] > peak)) {
            peak = f->flops[i];
            any = 1;
        }
    return peak;
}

int plot_draw_flops(store *st, const plot_sel *sel, const char *out_path, dp_err *err)
{
    plot_run *r;
    size_t n;
    int rc = plot_runs_select(st, sel, 0, &r, &n, err);
    if (rc)
        return rc;
    /* Every run's bins first: their extents pick units and log axes
     * before anything is written. */
    store_flops *f = dp_calloc(n ? n : 1, sizeof *f);
    if (!f) {
        dp_free(r);
        return dp_err_set(err, DP_ENOMEM, "out of memory reading FLOPS bins");
    }
    plot_gp *gp = NULL;
    double fmax = 0, tmax = 0, tend_min = INFINITY, tend_max = 0, peak_min = INFINITY, bin_min = INFINITY;
    size_t with_bins = 0;
    for (size_t k = 0; k < n; k++) {
        if ((rc = store_flops_get(st, r[k].id, &f[k], err)))
            goto done;
        if (f[k].n == 0 || !(r[k].bin_s > 0))
            continue;
        with_bins++;
        double peak = flops_peak(&f[k]);
        double tend = (double)(f[k].bin[f[k].n - 1] + 1) * r[k].bin_s;
        r[k].tend_s = tend;
        fmax = peak > fmax ? peak : fmax;
        if (peak > 0 && peak < peak_min)
            peak_min = peak;
        tmax = tend > tmax ? tend : tmax;
        tend_min = tend < tend_min ? tend : tend_min;
        tend_max = tend > tend_max ? tend : tend_max;
        bin_min = r[k].bin_s < bin_min ? r[k].bin_s : bin_min;
    }
    if (!with_bins) {
        rc = dp_err_set(err, DP_EINPUT, "flops: the selected runs have no FLOPS-over-time bins");
        goto done;
    }
    /* Runs of very different length (C-ADP's hour beside DDP's weeks), or
     * many runs, overprint on one plot: a panel per run then, stacked on
     * one shared time axis (log when the lengths differ by 20x or more),
     * the canvas growing with the panels as a timeline's does. */
    int panels = sel->panels == 1 ||
                 (sel->panels == 0 && sel->log_x < 0 && n > 1 && (tend_max >= 20 * tend_min || n > 4));
    int logx = plot_want_log(sel->log_x, tend_min, tend_max, 20);
    int logy = plot_want_log(sel->log_y, peak_min, fmax, 100.0000001);
    double tdiv, fdiv;
    const char *tu = plot_time_unit(tmax, &tdiv);
    const char *fu = flops_unit(fmax, &fdiv);
    const int panel_px = 150, height = panels ? 150 + panel_px * (int)n : 700;
    if (!(gp = plot_open(sel, out_path, 1200, height < 700 ? 700 : height, err))) {
        rc = err ? err->code : DP_ERUN;
        goto done;
    }
    char scn[200], t1[PLOT_TITLE_MAX], ovl[PLOT_TITLE_MAX];
    scenario_phrase(r, n, scn, sizeof scn);
    snprintf(t1, sizeof t1, "Cluster FLOPS over simulated time, %s", scn);
    plot_title(gp, sel->title, t1, plot_overrides_line(r, n, ovl, sizeof ovl));
    if (logx)
        plot_caption(sel, "log time axis: the runs' lengths differ by 20x or more (first bin drawn from its "
                          "middle; a linear axis: --linx)");
    if (panels)
        plot_caption(sel, "a panel per run on one shared time axis (one plot: --panels=no)");
    plot_gp_printf(gp, "set xlabel 'simulated time (%s%s)'\n", tu, logx ? ", log scale" : "");
    char yl[160];
    snprintf(yl, sizeof yl, "cluster FLOPS (%s, paper's count%s)", fu, logy ? ", log scale" : "");
    plot_gp_printf(gp, "set ylabel ");
    plot_gp_str(gp, yl);
    plot_gp_printf(gp, "\n");
    plot_gp_printf(gp, "set grid lc rgb '#d0d0d0'\nset key outside right top box opaque\n");
    if (logx)
        plot_gp_printf(gp, "set logscale x 10\nset format x '10^%%T'\nset xrange [%.10g:%.10g]\n",
                       bin_min / 2 / tdiv, tmax / tdiv);
    else
        plot_gp_printf(gp, "set xrange [0:%.10g]\n", tmax / tdiv);
    if (logy) { /* whole decades around every positive bin, the same in every panel */
        double vmin = INFINITY;
        for (size_t k = 0; k < n; k++)
            for (size_t i = 0; i < f[k].n; i++)
                if (f[k].flops[i] > 0 && f[k].flops[i] < vmin)
                    vmin = f[k].flops[i];
        plot_gp_printf(gp, "set logscale y 10\nset format y '10^%%T'\nset yrange [%.10g:%.10g]\n",
                       pow(10, floor(log10(vmin / fdiv))), pow(10, ceil(log10(fmax / fdiv))));
    } else {
        plot_gp_printf(gp, "set yrange [0:%.10g]\n", fmax / fdiv * 1.1);
    }
    for (size_t k = 0; k < n; k++) {
        plot_gp_printf(gp, "$f%zu << EOD\n", k);
        double last = NAN, bin = r[k].bin_s;
        int64_t b = -1;
        int rows = 0;
        for (size_t i = 0; i < f[k].n; i++) {
            b = f[k].bin[i];
            last = f[k].flops[i];
            double t0 = (double)b * bin;
            if (logx && b == 0)
                t0 = bin / 2;
            if (isfinite(last))
                plot_gp_printf(gp, "%.10g %.10g\n", t0 / tdiv, last / fdiv);
            else
                plot_gp_printf(gp, "%.10g NaN\n", t0 / tdiv);
            rows++;
        }
        if (rows && bin > 0) /* close the last bin: steps hold a value until the next point */
            plot_gp_printf(gp, "%.10g %.10g\n", (double)(b + 1) * bin / tdiv,
                           isfinite(last) ? last / fdiv : NAN);
        else
            plot_gp_printf(gp, "NaN NaN\n");
        plot_gp_printf(gp, "EOD\n");
    }
    if (panels) {
        /* the title above, then one row per run sharing the time axis (its
         * tic labels and label under the last panel only) and the FLOPS scale */
        double H = height < 700 ? 700 : height;
        plot_gp_printf(gp, "set multiplot layout %zu,1 margins 0.08,0.82,%.4f,%.4f spacing 0,%.4f\n", n,
                       70 / H, 1 - 70 / H, 24 / H);
        plot_gp_printf(gp, "set ylabel '%s'\n", fu);
        for (size_t k = 0; k < n; k++) {
            if (k)
                plot_gp_printf(gp, "unset title\n");
            if (k + 1 < n)
                plot_gp_printf(gp, "set format x ''\nunset xlabel\n");
            else
                plot_gp_printf(gp, "set format x %s\nset xlabel 'simulated time (%s%s)'\n",
                               logx ? "'10^%T'" : "'% h'", tu, logx ? ", log scale" : "");
            plot_user_labels(gp, sel);
            plot_gp_printf(gp, "plot $f%zu using 1:2 with steps lw 2 lc rgb '%s' title ", k,
                           plot_policy_color(r[k].policy, k));
            plot_gp_str(gp, r[k].label);
            plot_gp_printf(gp, "\n");
        }
        plot_gp_printf(gp, "unset multiplot\n");
    } else {
        plot_user_labels(gp, sel);
        plot_gp_printf(gp, "plot ");
        for (size_t k = 0; k < n; k++) {
            /* later lines thinner and dashed by policy, so a line drawn over
             * an equal one still shows */
            double lw = 4.0 - 0.9 * (double)k < 1.3 ? 1.3 : 4.0 - 0.9 * (double)k;
            int style_pt, style_dt;
            policy_style_of(r[k].policy, k, &style_pt, &style_dt);
            plot_gp_printf(gp, "%s$f%zu using 1:2 with steps lw %.1f dt %d lc rgb '%s' title ",
                           k ? ", \\\n  " : "", k, lw, style_dt, plot_policy_color(r[k].policy, k));
            plot_gp_str(gp, r[k].label);
        }
        plot_gp_printf(gp, "\n");
    }
    rc = plot_gp_close(gp, err);
    gp = NULL;
done:
    plot_gp_abort(gp);
    for (size_t k = 0; k < n; k++)
        store_flops_free(&f[k]);
    dp_free(f);
    dp_free(r);
    return rc;
}

/* ---- timeline ----------------------------------------------------------- */

/* Drawn in this order, so the legend reads as a step goes. */
static const struct {
    const char *act, *label, *color;
} acts[] = {
    {"recv_data", "receiving data", "#56b4e9"},
    {"recv_model", "receiving the model", "#cc79a7"},
    {"compute", "computing", "#009e73"},
    {"send", "sending", "#e69f00"},
    {"wait", "waiting", "#c8c8c8"},
};
#define N_ACTS (sizeof acts / sizeof *acts)

/* A re-simulated timeline (sel->share): per device and bin, a box per
 * activity, stacked bottom-up in drawing order, each as tall as the share
 * of the bin the activity took; what is left of the bin's height is white
 * (nothing recorded).  One data block per activity, always written (an
 * empty one holds a NaN row), so the key lists every activity. */
static int timeline_shares(plot_gp *gp, const plot_sel *sel, int64_t n_dev, double tdiv)
{
    size_t nb = sel->share_bins, nd = sel->share_devices < (size_t)n_dev ? sel->share_devices : (size_t)n_dev;
    double w = (sel->share_t1 - sel->share_t0) / (double)nb;
    for (size_t a = 0; a < N_ACTS; a++) {
        plot_gp_printf(gp, "$a%zu << EOD\n", a);
        int rows = 0;
        for (size_t d = 0; d < nd; d++)
            for (size_t b = 0; b < nb; b++) {
                const double *x = &sel->share[(d * nb + b) * PLOT_N_ACTS];
                double below = 0;
                for (size_t k = 0; k < a; k++)
                    below += x[k];
                if (!(x[a] > 0))
                    continue;
                double t0 = (sel->share_t0 + (double)b * w) / tdiv, t1 = t0 + w / tdiv;
                double y0 = (double)d + 0.38 - 0.76 * below / w, y1 = y0 - 0.76 * x[a] / w;
                plot_gp_printf(gp, "%.10g %zu %.10g %.10g %.10g %.10g\n", (t0 + t1) / 2, d, t0, t1, y1, y0);
                rows++;
            }
        if (!rows)
            plot_gp_printf(gp, "NaN NaN NaN NaN NaN NaN\n");
        plot_gp_printf(gp, "EOD\n");
    }
    return 0;
}

int plot_draw_timeline(store *st, const plot_sel *sel, const char *out_path, dp_err *err)
{
    plot_run run;
    const plot_run *r = &run;
    int rc = plot_one_run(st, sel, &run, err);
    if (rc)
        return rc;
    store_timeline_info info;
    if ((rc = store_timeline_info_get(st, r->id, &info, err)))
        return rc;
    int64_t n_dev = (int64_t)info.n_devices;
    double tmax = info.end_s, res_s = info.res_s;
    if (n_dev == 0 || !info.has_segments || !(tmax > 0)) {
        rc = dp_err_set(err, DP_EINPUT, "timeline: run %lld has no %s to draw", (long long)r->id,
                        n_dev == 0 ? "devices" : "timeline segments");
        return rc;
    }
    double t_lo = sel->from_s > 0 ? sel->from_s : 0,
           t_hi = sel->to_s > 0 && sel->to_s < tmax ? sel->to_s : tmax;
    if (!(t_lo < t_hi)) {
        rc = dp_err_set(err, DP_EINPUT, "timeline: --from %g s is not before the run's end (%g s)", t_lo,
                        t_hi);
        return rc;
    }
    double tdiv;
    const char *tu = plot_time_unit(t_hi, &tdiv);
    int height = 170 + 26 * (int)(n_dev < 80 ? n_dev : 80);
    height = height < 520 ? 520 : height;
    plot_gp *gp = plot_open(sel, out_path, 1400, height, err);
    if (!gp)
        return err ? err->code : DP_ERUN;
    char *unused = NULL; /* per device: left out by the policy */
    int drawn[N_ACTS] = {0};
    size_t n_unused = 0;
    char t1[PLOT_TITLE_MAX];
    snprintf(t1, sizeof t1, "Timeline of run #%lld: %s on scenario '%s'", (long long)r->id,
             plot_policy_label(r->policy), r->scenario);
    char sub[PLOT_TITLE_MAX];
    if (sel->share)
        snprintf(sub, sizeof sub,
                 "a row per device (re-simulated); each %.3g-s bin stacks the shares of its activities, "
                 "white: nothing recorded",
                 (sel->share_t1 - sel->share_t0) / (double)sel->share_bins);
    else if (res_s > 0) /* a long run: the simulator kept bins, not every step (results.h) */
        snprintf(sub, sizeof sub,
                 "a row per device; each bar: the dominant activity of %.3g-s bins (per-device totals: "
                 "dpsim show %lld; each bin's share of activities: --exact)",
                 res_s, (long long)r->id);
    else
        snprintf(sub, sizeof sub, "%s",
                 "a row per device; white: no activity recorded; steps shorter than a pixel drawn 1 px wide");
    if (t_lo > 0 || t_hi < tmax) {
        char w[160];
        fmt_seconds(t_lo, w, sizeof w / 2);
        size_t l = strlen(w);
        snprintf(w + l, sizeof w - l, " to ");
        fmt_seconds(t_hi, w + l + 4, sizeof w - l - 4);
        snprintf(t1 + strlen(t1), sizeof t1 - strlen(t1), ", from %s", w);
    }
    char ovl[PLOT_TITLE_MAX];
    plot_title(gp, sel->title, t1, plot_overrides_line(r, 1, ovl, sizeof ovl));
    plot_caption(sel, sub);
    plot_gp_printf(gp, "set xlabel 'simulated time (%s); dotted lines: epoch ends'\n", tu);
    plot_gp_printf(gp, "set ylabel 'device'\nset xrange [%.10g:%.10g]\nset yrange [%.10g:-0.5]\n",
                   t_lo / tdiv, t_hi / tdiv, (double)n_dev - 0.5);
    plot_gp_printf(gp, "set bmargin 5.5\nset key at screen 0.5, screen 0.012 center bottom horizontal\nset "
                       "grid xtics lc rgb '#e0e0e0'\n"
                       "set style fill solid 1.0 noborder\nset tics front\n");
    /* ytics: one per device, its name (user text) quoted. */
    store_devices dev;
    if ((rc = store_devices_get(st, r->id, &dev, err)))
        goto fail;
    plot_gp_printf(gp, "set ytics (");
    for (size_t k = 0; k < dev.n; k++) {
        plot_gp_printf(gp, "%s", k ? ", " : "");
        plot_gp_str(gp, dev.name[k]);
        plot_gp_printf(gp, " %lld", (long long)dev.idx[k]);
    }
    store_devices_free(&dev);
    plot_gp_printf(gp, ") scale 0%s\n", n_dev > 40 ? " font ',8'" : "");
    /* epoch ends */
    store_values ends;
    if ((rc = store_epoch_ends_get(st, r->id, 201, &ends, err)))
        goto fail;
    if (ends.n <= 200) /* more would hide the segments */
        for (size_t e = 0; e < ends.n; e++)
            plot_gp_printf(
                gp, "set arrow from %.10g, graph 0 to %.10g, graph 1 nohead lc rgb '#333333' dt 3 front\n",
                ends.v[e] / tdiv, ends.v[e] / tdiv);
    store_values_free(&ends);
    if (sel->share) { /* a re-simulation's shares per bin, stacked */
        rc = timeline_shares(gp, sel, n_dev, tdiv);
        goto draw_key;
    }
    /* one data block per activity; waiting comes last, so by then a device
     * with no other activity is known: one the policy left out, drawn as
     * one "not used" bar, not as waiting all run (exact timelines only: in
     * a coarsened one a device that computes a little shows no bin of it) */
    if (!(unused = dp_calloc((size_t)n_dev, 1))) { /* 1 = no activity but waiting seen so far */
        rc = dp_err_set(err, DP_ENOMEM, "out of memory drawing a timeline");
        goto fail;
    }
    memset(unused, res_s > 0 ? 0 : 1, (size_t)n_dev);
    const double min_w = tmax / tdiv / 1150; /* ~1 px of the ~1150 px wide plot area */
    for (size_t a = 0; a < N_ACTS; a++) {
        store_segments seg;
        if ((rc = store_segments_get(st, r->id, acts[a].act, &seg, err)))
            goto fail;
        int rows = 0;
        for (size_t i = 0; i < seg.n; i++) {
            int64_t d = seg.seg[i].device;
            double t0 = seg.seg[i].t0_s / tdiv, t1s = seg.seg[i].t1_s / tdiv;
            if (d < 0 || d >= n_dev || !isfinite(t0) || !isfinite(t1s) || t1s < t0)
                continue;
            if (strcmp(acts[a].act, "wait") != 0)
                unused[d] = 0;
            else if (unused[d] == 1 || unused[d] == 2) {
                unused[d] = 2; /* waiting only: drawn as not used below */
                continue;
            }
            /* Shorter than a pixel would vanish: draw it a pixel wide (the
             * short compute steps between long transfers are the point). */
            if ((t1s - t0) < min_w) {
                double mid = (t0 + t1s) / 2;
                t0 = mid - min_w / 2, t1s = mid + min_w / 2;
            }
            if (!rows)
                plot_gp_printf(gp, "$a%zu << EOD\n", a);
            plot_gp_printf(gp, "%.10g %lld %.10g %.10g %.10g %.10g\n", (t0 + t1s) / 2, (long long)d, t0, t1s,
                           (double)d - 0.38, (double)d + 0.38);
            rows++;
        }
        store_segments_free(&seg);
        if (rows)
            plot_gp_printf(gp, "EOD\n");
        drawn[a] = rows > 0;
    }
    for (int64_t d = 0; d < n_dev; d++)
        n_unused += unused[d] == 2;
    if (n_unused) {
        plot_gp_printf(gp, "$unused << EOD\n");
        for (int64_t d = 0; d < n_dev; d++)
            if (unused[d] == 2)
                plot_gp_printf(gp, "%.10g %lld %.10g %.10g %.10g %.10g\n", (t_lo + t_hi) / 2 / tdiv,
                               (long long)d, t_lo / tdiv, t_hi / tdiv, (double)d - 0.38, (double)d + 0.38);
        plot_gp_printf(gp, "EOD\n");
    }
    dp_free(unused);
    unused = NULL;
draw_key:
    if (rc)
        goto fail;
    if (sel->share) {
        for (size_t a = 0; a < N_ACTS; a++)
            drawn[a] = 1;
        n_unused = 0;
    }
    plot_user_labels(gp, sel);
    plot_gp_printf(gp, "plot ");
    int first = 1;
    for (size_t a = 0; a < N_ACTS; a++) {
        if (!drawn[a])
            continue;
        plot_gp_printf(gp, "%s$a%zu using 1:2:3:4:5:6 with boxxyerror fc rgb '%s' title '%s'",
                       first ? "" : ", \\\n  ", a, acts[a].color, acts[a].label);
        first = 0;
    }
    if (n_unused)
        plot_gp_printf(gp,
                       "%s$unused using 1:2:3:4:5:6 with boxxyerror fs pattern 4 border lc rgb '#9a9a9a' "
                       "fc rgb '#9a9a9a' title 'not used'",
                       first ? "" : ", \\\n  ");
    plot_gp_printf(gp, "\n");
    return plot_gp_close(gp, err);
fail:
    dp_free(unused);
    plot_gp_abort(gp);
    return rc;
}
