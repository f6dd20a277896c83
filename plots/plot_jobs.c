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
    } known[] = {{"static", "#000000"}, {"fifo", "#0072B2"},   {"srf", "#009E73"},
                 {"las", "#D55E00"},    {"themis", "#CC79A7"}, {"pollux", "#E69F00"}};
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
        return dp_err_set(err, DP_EINPUT,
                          "jobs: no jobs run in the database (run `dpsim jobs SCENARIO` first)");
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
    plot_gp_printf(gp,
                   "set multiplot layout 2,1\nset grid lc rgb '#d0d0d0'\nset style fill solid 0.85 border "
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
    plot_gp_printf(
        gp,
        "set title 'Job completion time'\nset ylabel 'fraction of jobs'\n"
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

/* ---- jobs-sweep ---------------------------------------------------------- */

/* The value of "key" in a point's {"KEY":"VALUE",...} (VALUE copied, its
 * escapes kept as written); 0 when absent. */
static int point_value(const char *json, const char *key, char *out, size_t cap)
{
    char pat[300];
    snprintf(pat, sizeof pat, "\"%s\":\"", key);
    const char *p = strstr(json, pat);
    if (!p || !cap)
        return 0;
    p += strlen(pat);
    size_t n = 0;
    for (; *p && *p != '"' && n + 1 < cap; p++) {
        if (*p == '\\' && p[1])
            p++;
        out[n++] = *p;
    }
    out[n] = '\0';
    return 1;
}

/* The point without the x key: what makes a series (with the scheduler). */
static void series_of(const store_jobs_point *r, const char *xkey, char *out, size_t cap)
{
    snprintf(out, cap, "%s", r->scheduler);
    const char *p = r->point_json;
    while ((p = strchr(p, '"'))) {
        const char *k0 = p + 1, *k1 = strchr(k0, '"');
        if (!k1 || k1[1] != ':' || k1[2] != '"')
            break;
        const char *v0 = k1 + 3, *v1 = v0;
        while (*v1 && *v1 != '"')
            v1 += *v1 == '\\' && v1[1] ? 2 : 1;
        size_t kl = (size_t)(k1 - k0);
        if (!(kl == strlen(xkey) && !strncmp(k0, xkey, kl)) && !(kl == 9 && !strncmp(k0, "scheduler", 9))) {
            size_t o = strlen(out);
            snprintf(out + o, cap - o, ", %.*s=%.*s", (int)kl, k0, (int)(v1 - v0), v0);
        }
        p = *v1 ? v1 + 1 : v1;
    }
}

/* The swept key on x: --x KEY, else scheduler.arrival_scale when swept,
 * else the first key that is not `scheduler`. */
static int x_key_of(const store_jobs_point *r, size_t n, const plot_sel *sel, char *key, size_t cap)
{
    char v[128];
    if (sel->x_key) {
        snprintf(key, cap, "%s", sel->x_key);
        return n && point_value(r[0].point_json, key, v, sizeof v);
    }
    snprintf(key, cap, "scheduler.arrival_scale");
    if (n && point_value(r[0].point_json, key, v, sizeof v))
        return 1;
    const char *p = n ? r[0].point_json : "";
    while ((p = strchr(p, '"'))) {
        const char *k1 = strchr(p + 1, '"');
        if (!k1)
            break;
        if (!((size_t)(k1 - p - 1) == 9 && !strncmp(p + 1, "scheduler", 9))) {
            snprintf(key, cap, "%.*s", (int)(k1 - p - 1), p + 1);
            return 1;
        }
        p = strchr(k1 + 3, '"'); /* past the value */
        p = p ? p + 1 : k1 + 1;
    }
    return 0;
}

typedef struct sweep_pt {
    char series[200];
    double x, mean, p95;
    int n;
} sweep_pt;

static int cmp_pt(const void *a, const void *b)
{
    const sweep_pt *x = a, *y = b;
    int c = strcmp(x->series, y->series);
    return c ? c : (x->x > y->x) - (x->x < y->x);
}

int plot_draw_jobs_sweep(store *st, const plot_sel *sel, const char *out_path, dp_err *err)
{
    store_jobs_point *r = NULL;
    size_t n = 0, m = 0;
    int64_t sid = 0;
    int rc = store_jobs_sweep_get(st, sel->sweep_id, &sid, &r, &n, err);
    if (rc)
        return rc;
    char xkey[200];
    if (n == 0 || !x_key_of(r, n, sel, xkey, sizeof xkey)) {
        dp_free(r);
        return dp_err_set(
            err, DP_EINPUT,
            n ? "jobs-sweep: the sweep varies no key to draw on x (or not --x's)"
              : "jobs-sweep: no sweep of jobs in the database (dpsim sweep SCENARIO-WITH-JOBS --vary "
                "scheduler=fifo,pollux --vary scheduler.arrival_scale=0.5,1,2)");
    }
    int rate = !strcmp(xkey, "scheduler.arrival_scale");
    sweep_pt *pt = dp_calloc(n, sizeof *pt);
    if (!pt) {
        dp_free(r);
        return dp_err_set(err, DP_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++) { /* one point per series and x: the mean over seeds */
        char v[128], s[200];
        if (!point_value(r[i].point_json, xkey, v, sizeof v))
            continue;
        double x = strtod(v, NULL);
        if (rate)
            x = x > 0 ? 1 / x : NAN;
        series_of(&r[i], xkey, s, sizeof s);
        size_t k = 0;
        while (k < m && !(pt[k].x == x && !strcmp(pt[k].series, s)))
            k++;
        if (k == m) {
            snprintf(pt[m].series, sizeof pt[m].series, "%s", s);
            pt[m++].x = x;
        }
        pt[k].mean += r[i].jct_mean_s;
        pt[k].p95 += r[i].jct_p95_s;
        pt[k].n++;
    }
    qsort(pt, m, sizeof *pt, cmp_pt);
    double tmax = 0;
    for (size_t k = 0; k < m; k++) {
        pt[k].mean /= pt[k].n;
        pt[k].p95 /= pt[k].n;
        tmax = fmax(tmax, pt[k].p95);
    }
    if (sel->note)
        fprintf(sel->note, "dpsim: plot jobs-sweep: sweep %lld, %zu jobs runs\n", (long long)sid, n);
    double div;
    const char *tu = plot_time_unit(tmax, &div);
    plot_gp *gp = plot_open(sel, out_path, 1000, 600, err);
    if (!gp) {
        dp_free(pt);
        dp_free(r);
        return err ? err->code : DP_ERUN;
    }
    char t[300];
    snprintf(t, sizeof t, "Job completion time, sweep #%lld", (long long)sid);
    plot_title(gp, sel->title, t, NULL);
    plot_caption(sel, "solid: mean JCT; dashed: 95th percentile; a colour per scheduler");
    plot_gp_printf(
        gp, "set grid lc rgb '#d0d0d0'\nset key outside right top\nset ylabel 'JCT (%s)'\nset xlabel ", tu);
    if (rate)
        plot_gp_str(gp, "arrival rate (x the scenario's: 1 / scheduler.arrival_scale)");
    else
        plot_gp_str(gp, xkey);
    plot_gp_printf(gp, "\nset yrange [0:*]\n");
    plot_user_labels(gp, sel);
    size_t ns = 0;
    for (size_t k = 0; k < m; k++) {
        if (k == 0 || strcmp(pt[k].series, pt[k - 1].series)) {
            if (k)
                plot_gp_printf(gp, "EOD\n");
            plot_gp_printf(gp, "$s%zu << EOD\n", ns++);
        }
        plot_gp_printf(gp, "%.10g %.10g %.10g\n", pt[k].x, pt[k].mean / div, pt[k].p95 / div);
    }
    if (m)
        plot_gp_printf(gp, "EOD\n");
    plot_gp_printf(gp, "plot ");
    for (size_t k = 0, s = 0; k < m; k++) {
        if (k && !strcmp(pt[k].series, pt[k - 1].series))
            continue;
        char sched[64];
        snprintf(sched, sizeof sched, "%s", pt[k].series);
        char *comma = strchr(sched, ',');
        if (comma)
            *comma = '\0';
        const char *col = sched_color(sched, s);
        plot_gp_printf(gp, "%s$s%zu using 1:2 with linespoints lw 2 pt 7 lc rgb '%s' title ",
                       s ? ", \\\n  " : "", s, col);
        plot_gp_str(gp, pt[k].series);
        plot_gp_printf(gp, ", $s%zu using 1:3 with linespoints lw 2 dt 2 pt 6 lc rgb '%s' notitle", s, col);
        s++;
    }
    plot_gp_printf(gp, "\n");
    rc = plot_gp_close(gp, err);
    dp_free(pt);
    dp_free(r);
    return rc;
}
