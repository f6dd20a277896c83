/* plot_energy.c: the `energy` plot (scenario `power:`; docs/MODEL.md
 * section 11): per selected run, the joules its devices drew, stacked by
 * activity (compute, transmit, receive, idle), with the run's completed
 * rounds (fedavg) in its label when it has them.  Runs without energy
 * statistics are left out. */
#include "plots.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const parts[] = {"energy.compute_j", "energy.transmit_j", "energy.receive_j",
                                    "energy.idle_j"};
static const char *const part_label[] = {"compute", "transmit", "receive", "idle"};
static const char *const part_color[] = {"#d55e00", "#0072b2", "#56b4e9", "#bbbbbb"};
#define N_PARTS 4

int plot_draw_energy(store *st, const plot_sel *sel, const char *out_path, dp_err *err)
{
    plot_run *r;
    size_t n;
    int rc = plot_runs_select(st, sel, 0, &r, &n, err);
    if (rc)
        return rc;
    double(*v)[N_PARTS + 1] = dp_calloc(n ? n : 1, sizeof *v); /* the parts, then fedavg.rounds (NaN: none) */
    size_t *keep = dp_calloc(n ? n : 1, sizeof *keep), nk = 0;
    double top = 0;
    if (!v || !keep) {
        rc = dp_err_set(err, DP_ENOMEM, "out of memory");
        goto done;
    }
    for (size_t k = 0; k < n && !rc; k++) {
        store_stats s;
        if ((rc = store_stats_get(st, r[k].id, "run", &s, err)))
            break;
        int has = 0;
        v[k][N_PARTS] = NAN;
        for (size_t i = 0; i < s.n; i++) {
            for (int p = 0; p < N_PARTS; p++)
                if (!strcmp(s.stat[i].name, parts[p])) {
                    v[k][p] = isfinite(s.stat[i].value) ? s.stat[i].value : 0;
                    has = 1;
                }
            if (!strcmp(s.stat[i].name, "fedavg.rounds"))
                v[k][N_PARTS] = s.stat[i].value;
        }
        store_stats_free(&s);
        if (!has)
            continue;
        keep[nk++] = k;
        double sum = 0;
        for (int p = 0; p < N_PARTS; p++)
            sum += v[k][p];
        top = fmax(top, sum);
    }
    if (rc)
        goto done;
    if (!nk) {
        rc = dp_err_set(
            err, DP_EINPUT,
            "energy: none of the selected runs has energy statistics (give device groups `power:`, "
            "scenarios/README.md \"Energy\", or choose runs with --run)");
        goto done;
    }
    int kj = top >= 1e4;
    double div = kj ? 1e3 : 1;
    int width = 500 + 120 * (int)nk;
    plot_gp *gp = plot_open(sel, out_path, width > 2400 ? 2400 : width, 640, err);
    if (!gp) {
        rc = err ? err->code : DP_ERUN;
        goto done;
    }
    char t1[300];
    snprintf(t1, sizeof t1, "Energy the devices drew, scenario '%s'", r[keep[0]].scenario);
    plot_title(gp, sel->title, t1, "stacked by activity; a device down draws nothing");
    plot_gp_printf(gp,
                   "set grid ytics lc rgb '#d0d0d0'\nset key outside right top box opaque\n"
                   "set style data histograms\nset style histogram rowstacked\nset boxwidth 0.6\n"
                   "set style fill solid 0.9 border lc rgb '#333333'\nset ylabel 'energy (%s)'\n"
                   "set yrange [0:%.10g]\nset xtics rotate by 15 right\nset lmargin 16\nset bmargin 6\n",
                   kj ? "kJ" : "J", top / div * 1.1 > 0 ? top / div * 1.1 : 1);
    plot_gp_printf(gp, "set xtics (");
    for (size_t q = 0; q < nk; q++) {
        const double *x = v[keep[q]];
        char lab[260];
        if (isfinite(x[N_PARTS]))
            snprintf(lab, sizeof lab, "%s (%.0f rounds)", r[keep[q]].label, x[N_PARTS]);
        else
            snprintf(lab, sizeof lab, "%s", r[keep[q]].label);
        plot_gp_printf(gp, "%s", q ? ", " : "");
        plot_gp_str(gp, lab);
        plot_gp_printf(gp, " %zu", q);
    }
    plot_gp_printf(gp, ")\n$e << EOD\n");
    for (size_t q = 0; q < nk; q++) {
        for (int p = 0; p < N_PARTS; p++)
            plot_gp_printf(gp, "%s%.10g", p ? " " : "", v[keep[q]][p] / div);
        plot_gp_printf(gp, "\n");
    }
    plot_gp_printf(gp, "EOD\nplot ");
    for (int p = 0; p < N_PARTS; p++)
        plot_gp_printf(gp, "%s$e using %d lc rgb '%s' title '%s'", p ? ", " : "", p + 1, part_color[p],
                       part_label[p]);
    plot_gp_printf(gp, "\n");
    rc = plot_gp_close(gp, err);
done:
    dp_free(v);
    dp_free(keep);
    dp_free(r);
    return rc;
}
