/* plot_kinds.c: the five plots, each a gnuplot program written down the pipe
 * of gnuplot.c with its data inline ($name << EOD blocks of numbers only).
 *
 * Text a user or a scenario chose (scenario and device names, titles, sweep
 * keys and values) is only ever written through plot_gp_str; everything
 * else written here is numbers and fixed text.  Numbers are written with
 * %.10g: more digits than a plot can show, fewer bytes down the pipe for the
 * 100k-segment timelines.
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

#include <gsl/gsl_cdf.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TITLE_MAX 600

/* The user's --xlabel / --ylabel, written last before `plot` so they win. */
static void user_labels(plot_gp *gp, const plot_sel *sel)
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
    char scn[200], t1[TITLE_MAX];
    scenario_phrase(r, n, scn, sizeof scn);
    snprintf(t1, sizeof t1, "Tsend, Ttraining and Ttotal per policy, %s", scn);
    char ovl[TITLE_MAX];
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
    user_labels(gp, sel);
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
    char scn[200], t1[TITLE_MAX], ovl[TITLE_MAX];
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
            user_labels(gp, sel);
            plot_gp_printf(gp, "plot $f%zu using 1:2 with steps lw 2 lc rgb '%s' title ", k,
                           plot_policy_color(r[k].policy, k));
            plot_gp_str(gp, r[k].label);
            plot_gp_printf(gp, "\n");
        }
        plot_gp_printf(gp, "unset multiplot\n");
    } else {
        user_labels(gp, sel);
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
    char t1[TITLE_MAX];
    snprintf(t1, sizeof t1, "Timeline of run #%lld: %s on scenario '%s'", (long long)r->id,
             plot_policy_label(r->policy), r->scenario);
    char sub[TITLE_MAX];
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
    char ovl[TITLE_MAX];
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
    user_labels(gp, sel);
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

/* ---- sweeps ------------------------------------------------------------- */

typedef struct srow {
    char policy[32];
    char **keys, **vals;
    size_t nk;
    double value;
} srow;

typedef struct sdata {
    int64_t sweep_id;
    char scenario[128];
    srow *rows;
    size_t n;
    char **keys; /* union of the points' keys, in order of first appearance (borrowed from rows) */
    size_t nk;
    const char *metric_label;
} sdata;

static void sdata_free(sdata *d)
{
    for (size_t k = 0; k < d->n; k++)
        plot_json_free(d->rows[k].keys, d->rows[k].vals, d->rows[k].nk);
    dp_free(d->rows);
    dp_free(d->keys);
    memset(d, 0, sizeof *d);
}

static const char *row_val(const srow *r, const char *key)
{
    for (size_t k = 0; k < r->nk; k++)
        if (!strcmp(r->keys[k], key))
            return r->vals[k];
    return NULL;
}

/* The successful runs of the selected sweep with their points and metric. */
static int sweep_load(store *st, const plot_sel *sel, sdata *d, dp_err *err)
{
    memset(d, 0, sizeof *d);
    const char *col, *label;
    double scale;
    const char *metric = sel->metric ? sel->metric : "ttotal_s";
    if (plot_metric(metric, &col, &label, &scale) < 0)
        return dp_err_set(
            err, DP_EINPUT,
            "unknown metric '%.100s' (known: ttotal_s, tsend_s, ttraining_s, tflops, utilization)", metric);
    d->metric_label = label;
    int rc;
    d->sweep_id = sel->sweep_id;
    if (d->sweep_id == 0 && (rc = store_sweep_latest(st, &d->sweep_id, err)))
        return rc;
    if ((rc = store_sweep_scenario(st, d->sweep_id, d->scenario, sizeof d->scenario, err)))
        return rc;
    char es[300]; /* a stored name, escaped: a database may come from anyone */
    if (sel->note)
        fprintf(sel->note, "drawing sweep #%lld of scenario '%s'%s\n", (long long)d->sweep_id,
                dp_esc(es, sizeof es, d->scenario),
                sel->sweep_id ? "" : " (the latest; choose another with --sweep ID)");
    store_sweep_runs runs;
    if ((rc = store_sweep_runs_get(st, d->sweep_id, col, &runs, err)))
        return rc;
    d->rows = dp_calloc(runs.n, sizeof *d->rows);
    if (!d->rows) {
        rc = dp_err_set(err, DP_ENOMEM, "out of memory reading sweep %lld", (long long)d->sweep_id);
        goto fail;
    }
    for (; d->n < runs.n; d->n++) {
        srow *row = &d->rows[d->n];
        snprintf(row->policy, sizeof row->policy, "%s", runs.run[d->n].policy);
        if ((rc = plot_json_object(runs.run[d->n].point_json, &row->keys, &row->vals, &row->nk, err))) {
            dp_err_prefix(err, "sweep %lld", (long long)d->sweep_id);
            goto fail;
        }
        row->value = runs.run[d->n].value * scale;
    }
    store_sweep_runs_free(&runs);
    /* union of keys */
    size_t kcap = 0;
    for (size_t i = 0; i < d->n; i++)
        for (size_t k = 0; k < d->rows[i].nk; k++) {
            size_t j;
            for (j = 0; j < d->nk; j++)
                if (!strcmp(d->keys[j], d->rows[i].keys[k]))
                    break;
            if (j < d->nk)
                continue;
            if (d->nk == kcap) {
                size_t nc = kcap ? 2 * kcap : 8;
                char **nk = dp_realloc(d->keys, nc * sizeof *nk);
                if (!nk) {
                    rc = dp_err_set(err, DP_ENOMEM, "out of memory reading sweep %lld",
                                    (long long)d->sweep_id);
                    goto fail;
                }
                d->keys = nk;
                kcap = nc;
            }
            d->keys[d->nk++] = d->rows[i].keys[k];
        }
    if (d->nk == 0) {
        rc = dp_err_set(err, DP_EINPUT, "sweep %lld: its points name no swept key", (long long)d->sweep_id);
        goto fail;
    }
    return 0;
fail:
    store_sweep_runs_free(&runs);
    sdata_free(d);
    return rc;
}

/* Resolve key (NULL = the idx-th key that is not `other`). */
static int pick_key(const sdata *d, const char *want, const char *other, const char **out, dp_err *err)
{
    if (want) {
        for (size_t k = 0; k < d->nk; k++)
            if (!strcmp(d->keys[k], want)) {
                *out = d->keys[k];
                return 0;
            }
        char known[400] = "";
        for (size_t k = 0; k < d->nk && strlen(known) < 300; k++)
            snprintf(known + strlen(known), sizeof known - strlen(known), "%s%.80s", k ? ", " : "",
                     d->keys[k]);
        return dp_err_set(err, DP_EINPUT, "sweep %lld has no key '%.100s' (its keys: %s)",
                          (long long)d->sweep_id, want, known);
    }
    for (size_t k = 0; k < d->nk; k++)
        if (!other || strcmp(d->keys[k], other) != 0) {
            *out = d->keys[k];
            return 0;
        }
    return dp_err_set(err, DP_EINPUT, "sweep %lld varies only '%.100s': a heat map needs two swept keys",
                      (long long)d->sweep_id, other ? other : "");
}

/* Distinct values of key over rows (borrowed strings), with numbers for an
 * axis; *idx[i] is row i's position in the list (-1 if it lacks the key). */
typedef struct axis {
    const char **text;
    double *num;
    size_t n;
    int *order; /* positions sorted by num */
    char unit[80];
} axis;

static const axis *sort_ctx;
static int cmp_axis(const void *a, const void *b)
{
    double x = sort_ctx->num[*(const int *)a], y = sort_ctx->num[*(const int *)b];
    return x < y ? -1 : x > y;
}

static void axis_free(axis *a)
{
    dp_free(a->text);
    dp_free(a->num);
    dp_free(a->order);
}

static int axis_build(const sdata *d, const char *key, const char *policy, axis *a, int *idx, dp_err *err)
{
    memset(a, 0, sizeof *a);
    a->text = dp_calloc(d->n, sizeof *a->text);
    a->num = dp_calloc(d->n, sizeof *a->num);
    a->order = dp_calloc(d->n, sizeof *a->order);
    if (!a->text || !a->num || !a->order) {
        axis_free(a);
        return dp_err_set(err, DP_ENOMEM, "out of memory drawing sweep %lld", (long long)d->sweep_id);
    }
    for (size_t i = 0; i < d->n; i++) {
        const char *v = row_val(&d->rows[i], key);
        idx[i] = -1;
        if (!v || (policy && strcmp(d->rows[i].policy, policy) != 0))
            continue;
        size_t j;
        for (j = 0; j < a->n; j++)
            if (!strcmp(a->text[j], v))
                break;
        if (j == a->n)
            a->text[a->n++] = v;
        idx[i] = (int)j;
    }
    plot_axis_values(a->text, a->n, a->num, a->unit, sizeof a->unit);
    for (size_t j = 0; j < a->n; j++)
        a->order[j] = (int)j;
    sort_ctx = a;
    qsort(a->order, a->n, sizeof *a->order, cmp_axis);
    sort_ctx = NULL;
    return 0;
}

/* Welford's running mean and variance: stable for large times with small
 * spread across seeds, where sum-of-squares would cancel. */
typedef struct cell {
    size_t n;
    double mean, m2;
} cell;

static void cell_add(cell *c, double x)
{
    c->n++;
    double dlt = x - c->mean;
    c->mean += dlt / (double)c->n;
    c->m2 += dlt * (x - c->mean);
}

/* Half-width of the 95% t-interval of the mean, 0 for one sample. */
static double cell_ci95(const cell *c)
{
    if (c->n < 2)
        return 0;
    double sd = sqrt(c->m2 / (double)(c->n - 1));
    return gsl_cdf_tdist_Pinv(0.975, (double)(c->n - 1)) * sd / sqrt((double)c->n);
}

/* A swept key in words: devices.cpu.link.down -> "cpu download bandwidth",
 * devices.gpu.count -> "number of gpu devices", policies.ddp.bucket -> "DDP
 * bucket"; other keys: the dots and underscores become spaces.  The key
 * itself follows in brackets, so the figure still names what to --vary. */
static void key_words(char *buf, size_t len, const char *key)
{
    char a[64] = "", b[64] = "", c[64] = "", d[64] = "";
    int n = sscanf(key, "%63[^.].%63[^.].%63[^.].%63s", a, b, c, d);
    if (n == 4 && !strcmp(a, "devices") && !strcmp(c, "link") && (!strcmp(d, "down") || !strcmp(d, "up")))
        snprintf(buf, len, "%s %s bandwidth", b, !strcmp(d, "down") ? "download" : "upload");
    else if (n == 4 && !strcmp(a, "devices") && !strcmp(c, "link"))
        snprintf(buf, len, "%s link %s", b, d);
    else if (n == 3 && !strcmp(a, "devices") && !strcmp(c, "count"))
        snprintf(buf, len, "number of %s devices", b);
    else if (n == 3 && !strcmp(a, "devices"))
        snprintf(buf, len, "%s %s", b, c);
    else if (n == 3 && !strcmp(a, "policies"))
        snprintf(buf, len, "%s %s", plot_policy_label(b), c);
    else
        snprintf(buf, len, "%s", key);
    for (char *p = buf; *p; p++)
        if (*p == '_' || *p == '.')
            *p = ' ';
}

static void axis_label(char *buf, size_t len, const char *key, const char *unit)
{
    char w[160];
    key_words(w, sizeof w, key);
    if (*unit)
        snprintf(buf, len, "%s (%s) [%.150s]", w, unit, key);
    else
        snprintf(buf, len, "%s [%.150s]", w, key);
}

/* A tick label rounded to 3 significant digits, without exponent between
 * 0.001 and 10^6: 3.16228 -> 3.16, 31.6228 -> 31.6, 1000 -> 1000. */
static void tick_text(double v, char *buf, size_t len)
{
    double a = fabs(v);
    if (a == 0) {
        snprintf(buf, len, "0");
        return;
    }
    if (a < 1e-3 || a >= 1e6) {
        snprintf(buf, len, "%.3g", v);
        return;
    }
    int mag = (int)floor(log10(a));
    int dec = 2 - mag < 0 ? 0 : 2 - mag;
    double step = pow(10, mag - 2);
    snprintf(buf, len, "%.*f", dec, round(v / step) * step);
    if (strchr(buf, '.')) { /* 2.50 -> 2.5, 3.00 -> 3 */
        char *e = buf + strlen(buf) - 1;
        while (*e == '0')
            *e-- = '\0';
        if (*e == '.')
            *e = '\0';
    }
}

/* Explicit tics at the values when there are few of them: a sweep's values
 * are the points that exist, and a log axis would label only decades. */
static void value_tics(plot_gp *gp, const char *axname, const axis *a, int categorical)
{
    if (!categorical && a->n > 12)
        return;
    plot_gp_printf(gp, "set %stics (", axname);
    for (size_t j = 0; j < a->n; j++) {
        int p = a->order[j];
        char t[32];
        tick_text(a->num[p], t, sizeof t);
        plot_gp_printf(gp, "%s'%s' %.10g", j ? ", " : "", t, categorical ? (double)j : a->num[p]);
    }
    plot_gp_printf(gp, ")\n");
}

static int group_before(const char *pa, const char *na, const char *pb, const char *nb)
{
    size_t ra = policy_rank_of(pa), rb = policy_rank_of(pb);
    if (ra != rb)
        return ra < rb;
    int c = strcmp(pa, pb);
    return c ? c < 0 : strcmp(na, nb) < 0;
}

/* Whether groups g and h have the same cells (count and mean) everywhere:
 * series that coincide, drawn over each other, are named as such. */
static int same_series(const cell *cells, size_t nf, size_t ng, size_t nx, size_t g, size_t h)
{
    int any = 0;
    for (size_t f = 0; f < nf; f++)
        for (size_t j = 0; j < nx; j++) {
            const cell *a = &cells[(f * ng + g) * nx + j], *b = &cells[(f * ng + h) * nx + j];
            if (a->n != b->n || (a->n && a->mean != b->mean))
                return 0;
            any |= a->n > 0;
        }
    return any;
}

/* The swept key that splits a sweep into facets (a panel per value):
 * --ykey, else the first key besides x with 2 to 12 values; NULL: one panel. */
static const char *facet_key(const sdata *d, const plot_sel *sel, const char *xk)
{
    if (sel->y_key && strcmp(sel->y_key, xk) != 0)
        return sel->y_key;
    for (size_t k = 0; k < d->nk; k++) {
        if (d->keys[k] == xk)
            continue;
        const char *seen[13];
        size_t nv = 0;
        for (size_t i = 0; i < d->n && nv <= 12; i++) {
            const char *v = row_val(&d->rows[i], d->keys[k]);
            size_t j = 0;
            while (v && j < nv && strcmp(seen[j], v))
                j++;
            if (v && j == nv)
                seen[nv++] = v;
        }
        if (nv >= 2 && nv <= 12)
            return d->keys[k];
    }
    return NULL;
}

int plot_draw_sweep(store *st, const plot_sel *sel, const char *out_path, dp_err *err)
{
    sdata d;
    int rc = sweep_load(st, sel, &d, err);
    if (rc)
        return rc;
    const char *xk, *fk = NULL;
    axis ax = {0}, af = {0};
    int *xi = NULL, *gi = NULL, *fi = NULL;
    char **gname = NULL; /* group label per group */
    char **gpol = NULL;  /* group policy (borrowed) */
    cell *cells = NULL;  /* [facet][group][x] */
    size_t ng = 0, nf = 1;
    plot_gp *gp = NULL;
    if ((rc = pick_key(&d, sel->x_key, NULL, &xk, err)))
        goto out;
    xi = dp_calloc(d.n, sizeof *xi);
    gi = dp_calloc(d.n, sizeof *gi);
    fi = dp_calloc(d.n, sizeof *fi);
    gname = dp_calloc(d.n, sizeof *gname);
    gpol = dp_calloc(d.n, sizeof *gpol);
    if (!xi || !gi || !fi || !gname || !gpol) {
        rc = dp_err_set(err, DP_ENOMEM, "out of memory drawing sweep %lld", (long long)d.sweep_id);
        goto out;
    }
    if ((rc = axis_build(&d, xk, NULL, &ax, xi, err)))
        goto out;
    if ((fk = facet_key(&d, sel, xk))) {
        if ((rc = pick_key(&d, fk, xk, &fk, err)) || (rc = axis_build(&d, fk, NULL, &af, fi, err)))
            goto out;
        nf = af.n ? af.n : 1;
    }
    /* groups: policy + the values of the keys on neither x nor the facets */
    for (size_t i = 0; i < d.n; i++) {
        gi[i] = -1;
        if (xi[i] < 0 || (fk && fi[i] < 0))
            continue;
        char g[512];
        snprintf(g, sizeof g, "%s", plot_policy_label(d.rows[i].policy));
        for (size_t k = 0; k < d.nk; k++) {
            const char *v = row_val(&d.rows[i], d.keys[k]);
            if (d.keys[k] != xk && d.keys[k] != fk && v && strlen(g) < sizeof g - 2)
                snprintf(g + strlen(g), sizeof g - strlen(g), ", %s=%s", d.keys[k], v);
        }
        size_t j;
        for (j = 0; j < ng; j++)
            if (!strcmp(gname[j], g) && !strcmp(gpol[j], d.rows[i].policy))
                break;
        if (j == ng) {
            if (!(gname[ng] = dp_strdup(g))) {
                rc = dp_err_set(err, DP_ENOMEM, "out of memory drawing sweep %lld", (long long)d.sweep_id);
                goto out;
            }
            gpol[ng++] = d.rows[i].policy;
        }
        gi[i] = (int)j;
    }
    /* groups in registry order of their policy, then by name: the legend
     * (and which of two equal series is named the twin) must not depend on
     * the order parallel workers stored the runs in */
    for (size_t a = 1; a < ng; a++)
        for (size_t b = a; b > 0 && group_before(gpol[b], gname[b], gpol[b - 1], gname[b - 1]); b--) {
            char *tn = gname[b], *tp = gpol[b];
            gname[b] = gname[b - 1], gpol[b] = gpol[b - 1];
            gname[b - 1] = tn, gpol[b - 1] = tp;
            for (size_t i = 0; i < d.n; i++) /* swap the two groups' rows */
                gi[i] = gi[i] == (int)b ? (int)b - 1 : gi[i] == (int)b - 1 ? (int)b : gi[i];
        }
    /* facet f of a row: its value's rank on the facet axis */
    int *frank = dp_calloc(af.n ? af.n : 1, sizeof *frank);
    if (!frank) {
        rc = dp_err_set(err, DP_ENOMEM, "out of memory drawing sweep %lld", (long long)d.sweep_id);
        goto out;
    }
    for (size_t j = 0; j < af.n; j++)
        frank[af.order[j]] = (int)j;
    cells = dp_calloc(nf * ng * ax.n > 0 ? nf * ng * ax.n : 1, sizeof *cells);
    if (!cells) {
        dp_free(frank);
        rc = dp_err_set(err, DP_ENOMEM, "out of memory drawing sweep %lld", (long long)d.sweep_id);
        goto out;
    }
    double minpos = INFINITY, max = -INFINITY;
    size_t max_n = 0;
    for (size_t i = 0; i < d.n; i++)
        if (gi[i] >= 0 && isfinite(d.rows[i].value)) {
            size_t f = fk ? (size_t)frank[fi[i]] : 0;
            cell_add(&cells[(f * ng + (size_t)gi[i]) * ax.n + (size_t)xi[i]], d.rows[i].value);
        }
    dp_free(frank);
    for (size_t c = 0; c < nf * ng * ax.n; c++)
        if (cells[c].n) {
            max_n = cells[c].n > max_n ? cells[c].n : max_n;
            double h = cell_ci95(&cells[c]), lo = cells[c].mean - h, hi = cells[c].mean + h;
            max = hi > max ? hi : max;
            /* the lowest point drawn: the bar's end if positive, else the mean */
            double low = lo > 0 ? lo : cells[c].mean;
            if (low > 0 && low < minpos)
                minpos = low;
        }
    double xmin = INFINITY, xmax = -INFINITY;
    int xpos = 1;
    for (size_t j = 0; j < ax.n; j++) {
        xpos &= ax.num[j] > 0;
        xmin = ax.num[j] < xmin ? ax.num[j] : xmin;
        xmax = ax.num[j] > xmax ? ax.num[j] : xmax;
    }
    if (!isfinite(max)) {
        rc = dp_err_set(err, DP_EINPUT, "sweep %lld: no finite %s values to draw", (long long)d.sweep_id,
                        d.metric_label);
        goto out;
    }
    int logx = xpos && plot_want_log(sel->log_x, xmin, xmax, 100);
    int logy = plot_want_log(sel->log_y, minpos, max, 100.0000001);
    /* legend entries: a series that coincides with an earlier one says so */
    int *twin = dp_calloc(ng ? ng : 1, sizeof *twin);
    if (!twin) {
        rc = dp_err_set(err, DP_ENOMEM, "out of memory drawing sweep %lld", (long long)d.sweep_id);
        goto out;
    }
    size_t longest = 0; /* widen the canvas for long legend entries, not squeeze the plot */
    for (size_t g = 0; g < ng; g++) {
        twin[g] = -1;
        for (size_t h = 0; h < g && twin[g] < 0; h++)
            if (twin[h] < 0 && same_series(cells, nf, ng, ax.n, g, h))
                twin[g] = (int)h;
        size_t l = strlen(gname[g]) + (twin[g] >= 0 ? strlen(gname[twin[g]]) + 16 : 0);
        longest = l > longest ? l : longest;
    }
    size_t cols = nf <= 3 ? nf : nf == 4 ? 2 : 3, rows = (nf + cols - 1) / cols;
    int legend_px = 130 + 9 * (int)(longest < 90 ? longest : 90);
    int width = (nf > 1 ? 460 * (int)cols : 950) + legend_px;
    int height = nf > 1 ? 120 + 330 * (int)rows : 750;
    gp = plot_open(sel, out_path, width < 1200 ? 1200 : width, height < 750 ? 750 : height, err);
    if (!gp) {
        dp_free(twin);
        rc = err ? err->code : DP_ERUN;
        goto out;
    }
    char t1[TITLE_MAX], t2[TITLE_MAX], xl[400];
    snprintf(t1, sizeof t1, "%s vs %.200s, sweep #%lld of scenario '%s'", d.metric_label, xk,
             (long long)d.sweep_id, d.scenario);
    if (max_n >= 2)
        snprintf(t2, sizeof t2, "mean over up to %zu seeds; error bars: 95%% t-interval of the mean", max_n);
    else
        snprintf(t2, sizeof t2, "one seed per point");
    if (nf == 1)
        plot_title(gp, sel->title, t1, NULL);
    plot_caption(sel, t2);
    if (fk) {
        snprintf(t2, sizeof t2, "a panel per value of %.200s (another key: --y KEY)", fk);
        plot_caption(sel, t2);
    }
    if (nf > 1) { /* panels: the key is in the title, the label only says what and in which unit */
        key_words(xl, sizeof xl, xk);
        if (*ax.unit)
            snprintf(xl + strlen(xl), sizeof xl - strlen(xl), " (%s)", ax.unit);
    } else {
        axis_label(xl, sizeof xl, xk, ax.unit);
    }
    if (logx)
        snprintf(xl + strlen(xl), sizeof xl - strlen(xl), ", log scale");
    plot_gp_printf(gp, "set xlabel ");
    plot_gp_str(gp, xl);
    snprintf(xl, sizeof xl, "%s%s", d.metric_label, logy ? ", log scale" : "");
    plot_gp_printf(gp, "\nset ylabel ");
    plot_gp_str(gp, xl);
    plot_gp_printf(gp, "\n");
    plot_gp_printf(gp, "set grid lc rgb '#d0d0d0'\nset key outside right top box opaque\n");
    if (logx)
        plot_gp_printf(gp, "set logscale x 10\nset format x '10^%%T'\n");
    if (logy) /* one y range in every panel, so panels compare at a glance */
        plot_gp_printf(gp, "set logscale y 10\nset format y '10^%%T'\nset yrange [%.10g:%.10g]\n",
                       minpos / 1.3, max * 1.3);
    else if (minpos > 0 && max > 0)
        plot_gp_printf(gp, "set yrange [0:%.10g]\n", max * 1.05);
    if (xmax > xmin) {
        double pad = logx ? 0 : 0.04 * (xmax - xmin);
        plot_gp_printf(gp, "set xrange [%.10g:%.10g]\n", logx ? xmin / 1.2 : xmin - pad,
                       logx ? xmax * 1.2 : xmax + pad);
    }
    value_tics(gp, "x", &ax, 0);
    for (size_t f = 0; f < nf; f++)
        for (size_t g = 0; g < ng; g++) {
            plot_gp_printf(gp, "$g%zu_%zu << EOD\n", f, g);
            int nrows = 0;
            for (size_t j = 0; j < ax.n; j++) {
                const cell *c = &cells[(f * ng + g) * ax.n + (size_t)ax.order[j]];
                if (!c->n)
                    continue;
                double h = cell_ci95(c);
                plot_gp_printf(gp, "%.10g %.10g %.10g %.10g\n", ax.num[ax.order[j]], c->mean, c->mean - h,
                               c->mean + h);
                nrows++;
            }
            if (!nrows)
                plot_gp_printf(gp, "NaN NaN NaN NaN\n");
            plot_gp_printf(gp, "EOD\n");
        }
    user_labels(gp, sel);
    if (nf > 1) {
        double W = width < 1200 ? 1200 : width, H = height < 750 ? 750 : height;
        /* the figure's title above the grid, a panel's value as its own
         * title, the legend once, in the right margin */
        plot_gp_printf(gp, "set key at screen %.4f, screen %.4f right top\n", 1 - 10 / W, 1 - 70 / H);
        plot_gp_printf(gp, "set multiplot layout %zu,%zu margins %.4f,%.4f,%.4f,%.4f spacing %.4f,%.4f title ",
                       rows, cols, 80 / W, 1 - legend_px / W, 70 / H, 1 - 80 / H, 60 / W, 110 / H);
        plot_gp_str(gp, sel->title ? sel->title : t1);
        plot_gp_printf(gp, " font ',14'\n");
    }
    for (size_t f = 0; f < nf; f++) {
        if (nf > 1) {
            char ft[300];
            snprintf(ft, sizeof ft, "%.200s = %.80s", fk, af.text[af.order[f]]);
            plot_gp_printf(gp, "set title ");
            plot_gp_str(gp, ft);
            plot_gp_printf(gp, " font ',12'\n%s", f == 1 ? "unset key\n" : "");
            if (f % cols == 0) { /* the y label on the first column only */
                plot_gp_printf(gp, "set ylabel ");
                plot_gp_str(gp, sel->ylabel ? sel->ylabel : xl);
                plot_gp_printf(gp, "\n");
            } else {
                plot_gp_printf(gp, "unset ylabel\n");
            }
        }
        plot_gp_printf(gp, "plot ");
        for (size_t g = 0; g < ng; g++) {
            /* a policy's colour and point; other keys' values change the dash */
            size_t same = 0;
            for (size_t h = 0; h < g; h++)
                same += !strcmp(gpol[h], gpol[g]);
            int pt, dt;
            policy_style_of(gpol[g], g, &pt, &dt);
            plot_gp_printf(gp, "%s$g%zu_%zu using 1:2:3:4 with %s lw %s ps 1.2 pt %d dt %zu lc rgb '%s' title ",
                           g ? ", \\\n  " : "", f, g, max_n >= 2 ? "yerrorlines" : "linespoints",
                           twin[g] >= 0 ? "1.2" : "2", same ? 1 + (pt + 2 * (int)same) % 14 : pt, 1 + same % 5,
                           plot_policy_color(gpol[g], g));
            if (twin[g] >= 0) {
                char lab[1100];
                snprintf(lab, sizeof lab, "%s (identical to %s)", gname[g], gname[twin[g]]);
                plot_gp_str(gp, lab);
            } else {
                plot_gp_str(gp, gname[g]);
            }
        }
        plot_gp_printf(gp, "\n");
    }
    if (nf > 1)
        plot_gp_printf(gp, "unset multiplot\n");
    dp_free(twin);
    rc = plot_gp_close(gp, err);
    gp = NULL;
out:
    plot_gp_abort(gp);
    for (size_t g = 0; gname && g < ng; g++)
        dp_free(gname[g]);
    dp_free(gname);
    dp_free(gpol);
    dp_free(cells);
    dp_free(xi);
    dp_free(gi);
    dp_free(fi);
    axis_free(&ax);
    axis_free(&af);
    sdata_free(&d);
    return rc;
}

int plot_draw_mix(store *st, const plot_sel *sel, const char *out_path, dp_err *err)
{
    sdata d;
    int rc = sweep_load(st, sel, &d, err);
    if (rc)
        return rc;
    const char *policy = sel->policy ? sel->policy : "cadp";
    const char *xk = NULL, *yk = NULL;
    axis ax = {0}, ay = {0};
    int *xi = NULL, *yi = NULL;
    cell *cells = NULL;
    plot_gp *gp = NULL;
    size_t have = 0;
    for (size_t i = 0; i < d.n; i++)
        have += !strcmp(d.rows[i].policy, policy);
    if (!have) {
        rc = dp_err_set(err, DP_EINPUT,
                        "sweep %lld has no successful runs of policy '%.40s' (choose with --policy)",
                        (long long)d.sweep_id, policy);
        goto out;
    }
    if ((rc = pick_key(&d, sel->x_key, NULL, &xk, err)) || (rc = pick_key(&d, sel->y_key, xk, &yk, err)))
        goto out;
    if (!strcmp(xk, yk)) {
        rc = dp_err_set(err, DP_EINPUT, "mix: the two keys must differ (got '%.100s' twice)", xk);
        goto out;
    }
    xi = dp_calloc(d.n, sizeof *xi);
    yi = dp_calloc(d.n, sizeof *yi);
    if (!xi || !yi) {
        rc = dp_err_set(err, DP_ENOMEM, "out of memory drawing sweep %lld", (long long)d.sweep_id);
        goto out;
    }
    if ((rc = axis_build(&d, xk, policy, &ax, xi, err)) || (rc = axis_build(&d, yk, policy, &ay, yi, err)))
        goto out;
    if (ax.n == 0 || ay.n == 0) {
        rc = dp_err_set(err, DP_EINPUT, "sweep %lld: no %s run has both '%.100s' and '%.100s'",
                        (long long)d.sweep_id, policy, xk, yk);
        goto out;
    }
    cells = dp_calloc(ax.n * ay.n, sizeof *cells);
    if (!cells) {
        rc = dp_err_set(err, DP_ENOMEM, "out of memory drawing sweep %lld", (long long)d.sweep_id);
        goto out;
    }
    /* rank of each value on its axis */
    int *xr = dp_calloc(ax.n, sizeof *xr), *yr = dp_calloc(ay.n, sizeof *yr);
    if (!xr || !yr) {
        dp_free(xr);
        dp_free(yr);
        rc = dp_err_set(err, DP_ENOMEM, "out of memory drawing sweep %lld", (long long)d.sweep_id);
        goto out;
    }
    for (size_t j = 0; j < ax.n; j++)
        xr[ax.order[j]] = (int)j;
    for (size_t j = 0; j < ay.n; j++)
        yr[ay.order[j]] = (int)j;
    int others = 0; /* whether other keys vary: then a cell averages over them too */
    for (size_t i = 0; i < d.n; i++) {
        if (xi[i] < 0 || yi[i] < 0 || !isfinite(d.rows[i].value))
            continue;
        cell_add(&cells[(size_t)yr[yi[i]] * ax.n + (size_t)xr[xi[i]]], d.rows[i].value);
        for (size_t k = 0; k < d.nk && !others; k++) {
            if (d.keys[k] == xk || d.keys[k] == yk)
                continue;
            const char *v0 = row_val(&d.rows[i], d.keys[k]);
            for (size_t i2 = 0; i2 < i && !others; i2++) {
                const char *v1 = row_val(&d.rows[i2], d.keys[k]);
                others = (v0 == NULL) != (v1 == NULL) || (v0 && v1 && strcmp(v0, v1));
            }
        }
    }
    dp_free(xr);
    dp_free(yr);
    double minpos = INFINITY, max = -INFINITY, min = INFINITY;
    size_t max_n = 0;
    for (size_t c = 0; c < ax.n * ay.n; c++)
        if (cells[c].n) {
            max_n = cells[c].n > max_n ? cells[c].n : max_n;
            max = cells[c].mean > max ? cells[c].mean : max;
            min = cells[c].mean < min ? cells[c].mean : min;
            if (cells[c].mean > 0 && cells[c].mean < minpos)
                minpos = cells[c].mean;
        }
    if (!isfinite(max)) {
        rc = dp_err_set(err, DP_EINPUT, "sweep %lld: no finite %s values to draw", (long long)d.sweep_id,
                        d.metric_label);
        goto out;
    }
    int logc = min > 0 && plot_want_log(sel->log_y, minpos, max, 100.0000001);
    int w = 360 + 70 * (int)(ax.n < 20 ? ax.n : 20), h = 260 + 50 * (int)(ay.n < 20 ? ay.n : 20);
    gp = plot_open(sel, out_path, w < 1000 ? 1000 : w, h < 700 ? 700 : h, err);
    if (!gp) {
        rc = err ? err->code : DP_ERUN;
        goto out;
    }
    char t1[TITLE_MAX], t2[TITLE_MAX], lab[400];
    snprintf(t1, sizeof t1, "%s of %s, sweep #%lld of scenario '%s'", d.metric_label,
             plot_policy_label(policy), (long long)d.sweep_id, d.scenario);
    snprintf(t2, sizeof t2, "cell: mean over %s%s; blank: not in the sweep",
             max_n >= 2 ? "seeds" : "one seed", others ? " and the other swept keys" : "");
    plot_title(gp, sel->title, t1, NULL);
    plot_caption(sel, t2);
    axis_label(lab, sizeof lab, xk, ax.unit);
    plot_gp_printf(gp, "set xlabel ");
    plot_gp_str(gp, lab);
    axis_label(lab, sizeof lab, yk, ay.unit);
    plot_gp_printf(gp, "\nset ylabel ");
    plot_gp_str(gp, lab);
    snprintf(lab, sizeof lab, "%s%s", d.metric_label, logc ? ", log scale" : "");
    plot_gp_printf(gp, "\nset cblabel ");
    plot_gp_str(gp, lab);
    plot_gp_printf(gp, "\n");
    plot_gp_printf(gp, "set xrange [-0.5:%.10g]\nset yrange [-0.5:%.10g]\nset tics scale 0\nunset key\n",
                   (double)ax.n - 0.5, (double)ay.n - 0.5);
    plot_gp_printf(gp, "set palette defined (0 '#ffffe5', 0.4 '#fec44f', 0.75 '#ec7014', 1 '#993404')\n");
    if (logc)
        plot_gp_printf(gp, "set logscale cb 10\nset format cb '10^%%T'\n");
    if (max > min)
        plot_gp_printf(gp, "set cbrange [%.10g:%.10g]\n", min, max);
    else
        plot_gp_printf(gp, "set cbrange [%.10g:%.10g]\n", min - fabs(min) * 0.5 - 1,
                       max + fabs(max) * 0.5 + 1);
    value_tics(gp, "x", &ax, 1);
    value_tics(gp, "y", &ay, 1);
    plot_gp_printf(gp, "$m << EOD\n");
    for (size_t yj = 0; yj < ay.n; yj++)
        for (size_t xj = 0; xj < ax.n; xj++) {
            const cell *c = &cells[yj * ax.n + xj];
            if (c->n && (!logc || c->mean > 0))
                plot_gp_printf(gp, "%zu %zu %.10g %.10g %.10g %.10g %.10g\n", xj, yj, xj - 0.5, xj + 0.5,
                               yj - 0.5, yj + 0.5, c->mean);
        }
    plot_gp_printf(gp, "EOD\n");
    /* white text on the dark end of the palette, black elsewhere */
    double thr = logc ? exp(log(min) + 0.6 * (log(max) - log(min))) : min + 0.6 * (max - min);
    int fs = ax.n > 12 ? 8 : 11;
    user_labels(gp, sel);
    plot_gp_printf(
        gp,
        "plot $m using 1:2:3:4:5:6:7 with boxxyerror fc palette z fs solid 1.0 border lc rgb '#ffffff', \\\n"
        "  $m using 1:2:($7 < %.10g ? sprintf('%%.3g', $7) : '') with labels font ',%d' tc rgb '#000000', "
        "\\\n"
        "  $m using 1:2:($7 >= %.10g ? sprintf('%%.3g', $7) : '') with labels font ',%d' tc rgb '#ffffff'\n",
        thr, fs, thr, fs);
    rc = plot_gp_close(gp, err);
    gp = NULL;
out:
    plot_gp_abort(gp);
    dp_free(cells);
    dp_free(xi);
    dp_free(yi);
    axis_free(&ax);
    axis_free(&ay);
    sdata_free(&d);
    return rc;
}
