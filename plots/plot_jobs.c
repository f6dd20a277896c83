/* plot_jobs.c: the `jobs` plot (dpsim jobs; sim/jobs/): above, a Gantt of
 * one run's jobs over the devices (a row per device, a box per stretch a
 * job held it, coloured by job, the job's name inside when it fits);
 * below, the CDF of job completion times, a line per selected run (one per
 * scheduler of the latest `dpsim jobs`).  It reads through the store's
 * typed reads of the jobs tables (store_jobs.h). */
#include "plots.h"
#include "store/store_jobs.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Scheduler colours by name (sched.h's), else a cycle. */
static const char *sched_color(const char *name, size_t k)
{
    static const struct {
        const char *n, *c;
    } known[] = {{"static", "#000000"}, {"fifo", "#0072B2"}, {"srf", "#009E73"}, {"las", "#D55E00"},
                 {"themis", "#CC79A7"}, {"pollux", "#E69F00"}};
    for (size_t i = 0; i < sizeof known / sizeof *known; i++)
        if (!strcmp(known[i].n, name))
            return known[i].c;
    static const char *const cycle[] = {"#56b4e9", "#e69f00", "#f0e442", "#999999"};
    return cycle[k % 4];
}

int plot_draw_jobs(store *st, const plot_sel *sel, const char *out_path, dp_err *err)
{
    int64_t *ids = NULL;
    size_t n = 0;
    int rc = 0;
    if (sel->n_runs) {
        ids = dp_malloc(sel->n_runs * sizeof *ids);
        if (!ids)
            return dp_err_set(err, DP_ENOMEM, "out of memory");
        memcpy(ids, sel->run_ids, sel->n_runs * sizeof *ids);
        n = sel->n_runs;
    } else if ((rc = store_jobs_select(st, &ids, &n, err))) {
        return rc;
    }
    if (n == 0) {
        dp_free(ids);
        return dp_err_set(err, DP_EINPUT, "jobs: no jobs run in the database (run `dpsim jobs SCENARIO` first)");
    }
    jobs_result **r = dp_calloc(n, sizeof *r);
    if (!r) {
        dp_free(ids);
        return dp_err_set(err, DP_ENOMEM, "out of memory");
    }
    for (size_t k = 0; k < n && !rc; k++)
        rc = store_jobs_get(st, ids[k], &r[k], err);
    plot_gp *gp = NULL;
    if (rc)
        goto done;
    if (sel->note) {
        fprintf(sel->note, "dpsim: plot jobs: jobs runs");
        for (size_t k = 0; k < n; k++)
            fprintf(sel->note, " %lld (%s)", (long long)ids[k], r[k]->scheduler);
        fprintf(sel->note, "; the Gantt shows the first\n");
    }
    const jobs_result *g = r[0];
    size_t rows = g->n_devices > 64 ? 64 : g->n_devices;
    double tmax = 0;
    for (size_t k = 0; k < n; k++)
        for (size_t j = 0; j < r[k]->n_jobs; j++)
            tmax = fmax(tmax, fmax(r[k]->jobs[j].end_s, r[k]->jobs[j].jct_s));
    double div;
    const char *tu = plot_time_unit(tmax, &div);
    int h = 420 + 14 * (int)rows;
    if (!(gp = plot_open(sel, out_path, 1200, h < 1400 ? h : 1400, err))) {
        rc = err ? err->code : DP_ERUN;
        goto done;
    }
    char t[300];
    snprintf(t, sizeof t, "%zu jobs on %zu devices", g->n_jobs, g->n_devices);
    plot_title(gp, sel->title, t, NULL);
    plot_caption(sel, "above: which job held each device over time (first run drawn, first 64 devices); "
                      "below: the CDF of job completion times, a line per run");
    plot_gp_printf(gp, "set multiplot layout 2,1\nset grid lc rgb '#d0d0d0'\nset style fill solid 0.85 border "
                       "lc rgb '#ffffff'\n");
    /* the Gantt: one box per allocation */
    plot_gp_printf(gp, "$g << EOD\n");
    static const char *const cyc[] = {"0x0072b2", "0xe69f00", "0x009e73", "0xcc79a7", "0x56b4e9",
                                      "0xd55e00", "0xf0e442", "0x999999", "0x332288", "0x88ccee"};
    for (size_t a = 0; a < g->n_allocs; a++) {
        const job_alloc *x = &g->allocs[a];
        if (x->device >= rows)
            continue;
        plot_gp_printf(gp, "%.10g %.10g %.10g %.10g %zu %s\n", (x->t0 + x->t1) / 2 / div, (double)x->device,
                       x->t0 / div, x->t1 / div, x->job, cyc[x->job % 10]);
    }
    plot_gp_printf(gp, "EOD\n");
    snprintf(t, sizeof t, "scheduler %s", g->scheduler);
    plot_gp_printf(gp, "set title ");
    plot_gp_str(gp, t);
    plot_gp_printf(gp,
                   "\nset ylabel 'device'\nset xlabel 'simulated time (%s)'\nset yrange [%.1f:-0.6]\n"
                   "set xrange [0:%.10g]\nset ytics %d\nunset key\n"
                   "plot $g using 1:2:3:4:($2-0.4):($2+0.4):6 with boxxyerror fc rgb variable\n",
                   tu, (double)rows - 0.4, tmax / div * 1.02, rows <= 20 ? 1 : 8);
    /* the JCT CDFs */
    for (size_t k = 0; k < n; k++) {
        double *v = dp_malloc((r[k]->n_jobs + 1) * sizeof *v);
        if (!v) {
            plot_gp_abort(gp);
            gp = NULL;
            rc = dp_err_set(err, DP_ENOMEM, "out of memory");
            goto done;
        }
        for (size_t j = 0; j < r[k]->n_jobs; j++)
            v[j] = r[k]->jobs[j].jct_s;
        qsort(v, r[k]->n_jobs, sizeof *v, cmp_double);
        plot_gp_printf(gp, "$c%zu << EOD\n0 0\n", k);
        for (size_t j = 0; j < r[k]->n_jobs; j++)
            plot_gp_printf(gp, "%.10g %.10g\n", v[j] / div, (double)(j + 1) / (double)r[k]->n_jobs);
        plot_gp_printf(gp, "EOD\n");
        dp_free(v);
    }
    plot_gp_printf(gp, "set title 'Job completion time'\nset ylabel 'fraction of jobs'\n"
                       "set xlabel 'JCT (%s)'\nset yrange [0:1.02]\nset ytics auto\nset autoscale x\nset xrange [0:*]\n"
                       "set key right bottom box opaque\nplot ",
                   tu);
    for (size_t k = 0; k < n; k++) {
        char lab[160];
        snprintf(lab, sizeof lab, "%s #%lld (mean %.4g %s)", r[k]->scheduler, (long long)ids[k],
                 r[k]->mean_jct_s / div, tu);
        plot_gp_printf(gp, "%s$c%zu using 1:2 with steps lw 2 lc rgb '%s' title ", k ? ", \\\n  " : "", k,
                       sched_color(r[k]->scheduler, k));
        plot_gp_str(gp, lab);
    }
    plot_gp_printf(gp, "\nunset multiplot\n");
    rc = plot_gp_close(gp, err);
    gp = NULL;
done:
    for (size_t k = 0; k < n; k++)
        jobs_result_free(r[k]);
    dp_free(r);
    dp_free(ids);
    return rc;
}
