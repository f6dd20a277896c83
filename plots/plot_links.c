/* plot_links.c: one run's links by how busy they were (the dynamic world's
 * link statistics, scenarios/README.md): a bar per link of its busy
 * fraction, with its peak utilisation as a point, links named from the
 * run's devices (link.device / link.dir). */
#include "plots.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct lrow {
    int64_t link;
    double busy, peak, bytes, dev, dir;
} lrow;

#define LINKS_MAX 400

static int has_links(store *st, int64_t id, dp_err *err)
{
    store_stats s;
    if (store_stats_get(st, id, "link", &s, err))
        return -1;
    int has = s.n > 0;
    store_stats_free(&s);
    return has;
}

int plot_draw_links(store *st, const plot_sel *sel, const char *out_path, dp_err *err)
{
    plot_run run;
    const plot_run *r = &run;
    int rc = plot_one_run_with(st, sel, has_links, "link statistics (stragglers, availability or outages)",
                               &run, err);
    if (rc)
        return rc;
    static lrow rows[LINKS_MAX];
    size_t nl = 0;
    store_stats stats;
    if ((rc = store_stats_get(st, r->id, "link", &stats, err)))
        return rc;
    for (size_t k = 0; k < stats.n; k++) {
        const store_stat *s = &stats.stat[k];
        if (nl == 0 || rows[nl - 1].link != s->a) {
            if (nl == LINKS_MAX)
                break;
            rows[nl++] = (lrow){s->a, 0, 0, 0, -2, 0};
        }
        lrow *x = &rows[nl - 1];
        if (strcmp(s->name, "link.busy_fraction") == 0)
            x->busy = s->value;
        else if (strcmp(s->name, "link.peak_util") == 0)
            x->peak = s->value;
        else if (strcmp(s->name, "link.bytes") == 0)
            x->bytes = s->value;
        else if (strcmp(s->name, "link.device") == 0)
            x->dev = s->value;
        else if (strcmp(s->name, "link.dir") == 0)
            x->dir = s->value;
    }
    store_stats_free(&stats);
    if (nl == 0) {
        rc = dp_err_set(err, DP_EINPUT,
                        "links: run %lld has no link statistics (they are recorded in scenarios with "
                        "stragglers, availability or outages)",
                        (long long)r->id);
        return rc;
    }
    /* device names, for the labels (by position, at most LINKS_MAX) */
    char names[LINKS_MAX][100];
    size_t nd = 0;
    store_devices devs;
    if ((rc = store_devices_get(st, r->id, &devs, err)))
        return rc;
    for (; nd < LINKS_MAX && nd < devs.n; nd++)
        snprintf(names[nd], sizeof names[0], "%s", devs.name[nd]);
    store_devices_free(&devs);
    int width = 300 + 22 * (int)nl;
    plot_gp *gp = plot_open(sel, out_path, width < 900 ? 900 : width > 4000 ? 4000 : width, 700, err);
    if (!gp)
        return err ? err->code : DP_ERUN;
    char t1[300];
    snprintf(t1, sizeof t1, "Links of run #%lld: %s on scenario ", (long long)r->id,
             plot_policy_label(r->policy));
    if (sel->title) {
        plot_gp_printf(gp, "set title ");
        plot_gp_str(gp, sel->title);
    } else {
        char full[500];
        snprintf(full, sizeof full, "%s'%s'", t1, r->scenario);
        plot_gp_printf(gp, "set title ");
        plot_gp_str(gp, full);
    }
    plot_gp_printf(
        gp,
        "\nset yrange [0:1.05]\nset ylabel 'busy: share of the run; peak: share of capacity'\nset xrange "
        "[-0.7:%.1f]\n"
        "set grid ytics lc rgb '#d0d0d0'\nset key at screen 0.5, screen 0.012 center bottom horizontal\n"
        "set style fill solid 0.85 border lc rgb '#333333'\nset boxwidth 0.7\n"
        "set xtics rotate by 60 right font ',9'\nset bmargin 9\n",
        (double)nl - 0.3);
    plot_gp_printf(gp, "set xtics (");
    static const char *const ddir[] = {"up", "down", "peer up", "peer down"};
    for (size_t k = 0; k < nl; k++) {
        char lab[140];
        int dev = (int)rows[k].dev, dir = (int)rows[k].dir;
        if (dev >= 0 && (size_t)dev < nd && dir >= 0 && dir < 4)
            snprintf(lab, sizeof lab, "%s %s", names[dev], ddir[dir]);
        else if (dev == -1)
            snprintf(lab, sizeof lab, "server %s", dir ? "down" : "up");
        else
            snprintf(lab, sizeof lab, "WAN #%lld %s", (long long)rows[k].link, dir ? "rev" : "fwd");
        plot_gp_printf(gp, "%s", k ? ", " : "");
        plot_gp_str(gp, lab);
        plot_gp_printf(gp, " %zu", k);
    }
    plot_gp_printf(gp, ")\n$l << EOD\n");
    for (size_t k = 0; k < nl; k++)
        plot_gp_printf(gp, "%zu %.10g %.10g\n", k, isfinite(rows[k].busy) ? rows[k].busy : 0,
                       isfinite(rows[k].peak) ? rows[k].peak : 0);
    plot_gp_printf(gp, "EOD\nplot $l using 1:2 with boxes fc rgb '#56b4e9' title 'busy fraction', \\\n"
                       "  $l using 1:3 with points pt 7 ps 1.2 lc rgb '#d55e00' title 'peak utilisation'\n");
    return plot_gp_close(gp, err);
}
