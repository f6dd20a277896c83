/* cmd_plot.c: dpsim plot KIND --db FILE --out FILE: draw a plot from the
 * results database with gnuplot (plots/plots.h).  The database is opened
 * read-only, so a failing or missing gnuplot cannot touch the results. */
#include "cli/cli.h"
#include "plots.h"
#include "store/store.h"
#include "yamltree.h"
#include "policy/policy.h"
#include "results.h"

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RUNS 64

static void help(void)
{
    printf("usage: dpsim plot KIND --out FILE [--db FILE] [options]\n\n"
           "Draw a plot from the results database with gnuplot (through a pipe; no\n"
           "script is written).  The format follows FILE's extension: .png, .svg, .pdf.\n\n"
           "KIND:\n");
    for (int k = 0; plot_kind_name(k); k++) { /* the plots' own list (draw.c) */
        printf("  %-10s ", plot_kind_name(k));
        for (const char *h = plot_kind_help(k); *h; h++) /* continuation lines indented */
            if (*h == '\n')
                fputs("\n             ", stdout);
            else
                putchar(*h);
        putchar('\n');
    }
    putchar('\n');
    printf("Selection (compare, flops: by default the runs the latest `dpsim run` or\n"
           "`dpsim reproduce` stored, the latest of each policy; timeline, batches, links:\n"
           "the latest of those).  Which runs were drawn is said on stderr.\n"
           "  -d, --db FILE        results database (default results.db); only read\n"
           "  -o, --out FILE       output file (.png, .svg or .pdf), required\n"
           "  -r, --run ID         a run to draw (repeat for compare/flops; 'dpsim runs' lists ids)\n"
           "  -s, --scenario NAME  runs of this scenario\n"
           "  -p, --policy P       timeline, batches: latest run of P; mix: which policy (default cadp)\n"
           "      --sweep ID       sweep, mix, jobs-sweep: which sweep (default the latest)\n"
           "  -m, --metric M       sweep, mix: ttotal_s (default), tsend_s, ttraining_s,\n"
           "                       tflops, utilization; with learning: final_acc, tta@X\n"
           "                       (time to test accuracy X, e.g. tta@0.95; absent where not reached)\n"
           "  -x, --x KEY          sweep, mix, jobs-sweep: the key on x (default the sweep's\n"
           "                       first; jobs-sweep: scheduler.arrival_scale when swept)\n"
           "  -y, --y KEY          mix: the key on y (default the sweep's second);\n"
           "                       sweep: the key whose values get a panel each\n"
           "      --logy, --liny   log or linear y axis (mix: colour scale); default auto\n"
           "                       (--linear = --liny)\n"
           "      --logx, --linx   log or linear x axis (flops, sweep); default auto\n"
           "  -t, --title TEXT     title instead of the default one\n"
           "      --xlabel TEXT    x axis label instead of the default one\n"
           "      --ylabel TEXT    y axis label instead of the default one\n"
           "      --size WxH       canvas size in pixels (pdf: 100 px per inch), e.g. 800x500\n"
           "      --from S, --to S timeline: draw only simulated seconds S to S\n"
           "      --exact          timeline: simulate the run again (it must match the stored\n"
           "                       one bit for bit) and draw each of 600 bins of the window\n"
           "                       (--from/--to) as the shares of its activities, stacked,\n"
           "                       for long runs whose stored timeline keeps only each\n"
           "                       coarse bin's dominant activity (first 80 devices)\n"
           "      --panels[=yes|no|auto]  flops: a panel per run on one shared time axis\n"
           "                       (auto, the default: more than 4 runs, or lengths that\n"
           "                       differ by 20x or more, and neither --logx nor --linx)\n\n"
           "Log axes label their decades as powers of ten: 10^3, 10^6.  Sweep axes name\n"
           "the swept key in words (\"cpu download bandwidth (Mbps)\") and round tick\n"
           "values to three digits.  A figure carries its title (and the --set overrides\n"
           "its runs ran with); notes on how it is drawn (log scales, what a colour or a\n"
           "cell means) are printed on stderr as \"caption: ...\" lines, for the text\n"
           "beside it.\n\n"
           "gnuplot is found on PATH, or set DPSIM_GNUPLOT to its path.\n"
           "Exit codes: 0 drawn, 1 gnuplot missing or failed (the database is untouched),\n"
           "2 bad usage or nothing to plot.\n");
}

typedef struct plot_args {
    int64_t *ids;
    plot_sel sel;
    int exact;
} plot_args;

/* plot timeline --exact: the seconds of each activity per device and bin
 * of the window, from the re-simulation's every activity interval. */
typedef struct share_acc {
    double *share, t0, t1, w;
    size_t n_dev, n_bins;
} share_acc;

static void on_interval(void *ctx, size_t device, int act, double t0_s, double t1_s)
{
    share_acc *a = ctx;
    if (device >= a->n_dev || act < 0 || act >= PLOT_N_ACTS || !(t1_s > a->t0) || !(t0_s < a->t1))
        return;
    double lo = t0_s > a->t0 ? t0_s : a->t0, hi = t1_s < a->t1 ? t1_s : a->t1;
    size_t b0 = (size_t)((lo - a->t0) / a->w), b1 = (size_t)((hi - a->t0) / a->w);
    for (size_t b = b0; b <= b1 && b < a->n_bins; b++) {
        double s = a->t0 + (double)b * a->w, e = s + a->w;
        double o = (hi < e ? hi : e) - (lo > s ? lo : s);
        if (o > 0)
            a->share[(device * a->n_bins + b) * PLOT_N_ACTS + (size_t)act] += o;
    }
}

/* Choose the run as the plot would, simulate it again (it must end at the
 * stored Ttotal bit for bit, as rerun checks) and fill sel's shares. */
static int exact_shares(store *st, plot_sel *sel, int64_t *id, double **share, dp_err *err)
{
    enum { BINS = 600, MAX_DEV = 80 }; /* ~2 px per bin; a timeline draws at most 80 rows legibly */
    plot_run run;
    plot_sel quiet = *sel;
    quiet.note = NULL;
    int rc = plot_one_run(st, &quiet, &run, err);
    if (rc)
        return rc;
    *id = run.id;
    sel->run_ids = id;
    sel->n_runs = 1;
    res_run *old = NULL, *now = NULL;
    char *name = NULL, *policy = NULL;
    uint64_t seed;
    share_acc a = {0};
    a.t0 = sel->from_s > 0 ? sel->from_s : 0;
    a.t1 = sel->to_s > 0 && sel->to_s < run.ttotal_s ? sel->to_s : run.ttotal_s;
    a.n_bins = BINS;
    a.w = (a.t1 - a.t0) / BINS;
    if (!(a.w > 0))
        return dp_err_set(err, DP_EINPUT, "timeline: --from %g s is not before the run's end (%g s)", a.t0,
                          a.t1);
    store_devices dev;
    if ((rc = store_devices_get(st, run.id, &dev, err)))
        return rc;
    a.n_dev = dev.n < MAX_DEV ? dev.n : MAX_DEV;
    store_devices_free(&dev);
    if (!(a.share = dp_calloc(a.n_dev * a.n_bins * PLOT_N_ACTS + 1, sizeof *a.share)))
        return dp_err_set(err, DP_ENOMEM, "out of memory");
    if (sel->note)
        fprintf(sel->note, "re-simulating run #%lld for its exact timeline\n", (long long)run.id);
    cli_catch_interrupts();
    policy_set_segment_hook(on_interval, &a);
    rc = cli_resimulate(st, (uint64_t)run.id, &old, &now, &name, &policy, &seed, err);
    policy_set_segment_hook(NULL, NULL);
    if (!rc && memcmp(&old->ttotal_s, &now->ttotal_s, sizeof old->ttotal_s) != 0)
        rc = dp_err_set(err, DP_ERUN,
                        "run #%lld: the re-run ends at %.17g s, the stored run at %.17g s (a different build "
                        "or trace files?): its timeline would not be this run's",
                        (long long)run.id, now->ttotal_s, old->ttotal_s);
    res_run_free(old);
    res_run_free(now);
    dp_free(name);
    dp_free(policy);
    if (rc) {
        dp_free(a.share);
        return rc;
    }
    *share = a.share;
    sel->share = a.share;
    sel->share_devices = a.n_dev;
    sel->share_bins = a.n_bins;
    sel->share_t0 = a.t0;
    sel->share_t1 = a.t1;
    return 0;
}

enum {
    K_SWEEP = 0x2000,
    K_LOGY,
    K_LINY,
    K_LOGX,
    K_LINX,
    K_FROM,
    K_TO,
    K_XLABEL,
    K_YLABEL,
    K_SIZE,
    K_PANELS,
    K_EXACT
};

static int on_opt(void *ctx, int key, const char *val, const char *a)
{
    plot_args *p = ctx;
    plot_sel *sel = &p->sel;
    uint64_t v;
    switch (key) {
    case 'o':
        sel->out = val;
        break;
    case 'r':
        if (cli_parse_u64(val, &v) || v == 0 || v > INT64_MAX)
            return cli_usage_error("plot", "%s needs a run id, a positive integer (got '%s')", a, val);
        if (sel->n_runs == MAX_RUNS)
            return cli_usage_error("plot", "at most %d runs (got more)", MAX_RUNS);
        p->ids[sel->n_runs++] = (int64_t)v;
        break;
    case 's':
        sel->scenario = val;
        break;
    case 'p':
        sel->policy = val;
        break;
    case K_SWEEP:
        if (cli_parse_u64(val, &v) || v == 0 || v > INT64_MAX)
            return cli_usage_error("plot", "--sweep needs a sweep id, a positive integer (got '%s')", val);
        sel->sweep_id = (int64_t)v;
        break;
    case 'm':
        sel->metric = val;
        break;
    case 'x':
        sel->x_key = val;
        break;
    case 'y':
        sel->y_key = val;
        break;
    case 't':
        sel->title = val;
        break;
    case K_LOGY:
        sel->log_y = 1;
        break;
    case K_LINY:
        sel->log_y = 0;
        break;
    case K_LOGX:
        sel->log_x = 1;
        break;
    case K_LINX:
        sel->log_x = 0;
        break;
    case K_XLABEL:
        sel->xlabel = val;
        break;
    case K_YLABEL:
        sel->ylabel = val;
        break;
    case K_SIZE: {
        unsigned w = 0, h = 0;
        char tail;
        if (sscanf(val, "%ux%u%c", &w, &h, &tail) != 2 || w < 100 || h < 100 || w > 20000 || h > 20000)
            return cli_usage_error("plot", "--size needs WIDTHxHEIGHT in pixels, 100 to 20000 (got '%s')",
                                   val);
        sel->width_px = (int)w;
        sel->height_px = (int)h;
        break;
    }
    case K_FROM:
    case K_TO: {
        char *end;
        double t = strtod(val, &end);
        if (end == val || *end || !(t >= 0) || !isfinite(t))
            return cli_usage_error("plot", "%s needs seconds of simulated time, >= 0 (got '%s')", a, val);
        *(key == K_FROM ? &sel->from_s : &sel->to_s) = t;
        break;
    }
    case K_EXACT:
        p->exact = 1;
        break;
    case K_PANELS:
        if (!val || !strcmp(val, "yes"))
            sel->panels = 1;
        else if (!strcmp(val, "no"))
            sel->panels = 2;
        else if (!strcmp(val, "auto"))
            sel->panels = 0;
        else
            return cli_usage_error("plot", "--panels takes yes, no or auto (got '%s')", val);
        break;
    default:
        return cli_usage_error("plot", "unknown option '%s'", a);
    }
    return -1;
}

int cmd_plot(int argc, char **argv)
{
    static const struct option own[] = {
        {"out", required_argument, NULL, 'o'},         {"run", required_argument, NULL, 'r'},
        {"scenario", required_argument, NULL, 's'},    {"policy", required_argument, NULL, 'p'},
        {"sweep", required_argument, NULL, K_SWEEP},   {"metric", required_argument, NULL, 'm'},
        {"x", required_argument, NULL, 'x'},           {"y", required_argument, NULL, 'y'},
        {"title", required_argument, NULL, 't'},       {"logy", no_argument, NULL, K_LOGY},
        {"liny", no_argument, NULL, K_LINY},           {"linear", no_argument, NULL, K_LINY},
        {"logx", no_argument, NULL, K_LOGX},           {"linx", no_argument, NULL, K_LINX},
        {"xlabel", required_argument, NULL, K_XLABEL}, {"ylabel", required_argument, NULL, K_YLABEL},
        {"size", required_argument, NULL, K_SIZE},     {"from", required_argument, NULL, K_FROM},
        {"to", required_argument, NULL, K_TO},         {"panels", optional_argument, NULL, K_PANELS},
        {"exact", no_argument, NULL, K_EXACT},         {NULL, 0, NULL, 0}};
    int64_t ids[MAX_RUNS];
    plot_args pa = {ids, {0}, 0};
    pa.sel.log_x = pa.sel.log_y = -1;
    cli_opts o = {0};
    int prc =
        cli_parse(argc, argv, "plot", CLI_O_DB | CLI_O_LOG, own, "o:r:s:p:m:x:y:t:", on_opt, &pa, help, &o);
    if (prc >= 0)
        return prc;
    if (o.n_pos > 1)
        return cli_usage_error("plot", "one KIND at a time (got '%s' and '%s')", o.pos[0], o.pos[1]);
    plot_sel sel = pa.sel;
    const char *db = o.db, *out = sel.out, *kind_name = o.n_pos ? o.pos[0] : NULL;
    sel.note = stderr;
    char kinds[160];
    plot_kind_list(kinds, sizeof kinds);
    if (!kind_name)
        return cli_usage_error("plot", "missing KIND (%s)", kinds);
    int k = plot_kind_by_name(kind_name);
    if (k < 0) {
        const char *names[PLOT_KIND_COUNT];
        for (int j = 0; j < PLOT_KIND_COUNT; j++)
            names[j] = plot_kind_name(j);
        const char *near = yt_nearest(kind_name, names, PLOT_KIND_COUNT);
        return cli_usage_error("plot", "unknown KIND '%s'%s%s%s (%s)", kind_name,
                               near ? ", did you mean '" : "", near ? near : "", near ? "'?" : "", kinds);
    }
    if (!out)
        return cli_usage_error("plot", "missing --out FILE (.png, .svg or .pdf)");
    dp_err err = {0};
    const char *format;
    if (plot_format_for(out, &format, &err))
        return cli_fail(&err);
    if (sel.metric) {
        const char *col, *label;
        double scale;
        if (plot_metric(sel.metric, &col, &label, &scale) < 0) {
            const char *near = plot_metric_nearest(sel.metric);
            return cli_usage_error("plot",
                                   "unknown metric '%s'%s%s%s (ttotal_s, tsend_s, ttraining_s, tflops, "
                                   "utilization, final_acc, tta@X)",
                                   sel.metric, near ? ", did you mean '" : "", near ? near : "",
                                   near ? "'?" : "");
        }
    }
    if (sel.to_s > 0 && !(sel.from_s < sel.to_s))
        return cli_usage_error("plot", "--from %g is not before --to %g", sel.from_s, sel.to_s);
    if ((sel.from_s > 0 || sel.to_s > 0) && k != PLOT_TIMELINE)
        return cli_usage_error("plot", "--from and --to zoom a timeline (got KIND %s)", kind_name);
    if ((k == PLOT_TIMELINE || k == PLOT_BATCHES || k == PLOT_LINKS) && sel.n_runs > 1)
        return cli_usage_error("plot", "a %s shows one run (got %zu --run)", kind_name, sel.n_runs);
    if (pa.exact && k != PLOT_TIMELINE)
        return cli_usage_error("plot", "--exact re-simulates a timeline (got KIND %s)", kind_name);
    sel.run_ids = sel.n_runs ? ids : NULL;
    store *st = cli_open_read(db, &err);
    if (!st)
        return cli_fail(&err);
    double *share = NULL;
    int64_t one_id = 0;
    int rc = pa.exact ? exact_shares(st, &sel, &one_id, &share, &err) : 0;
    if (!rc)
        rc = plots_draw(st, (plot_kind)k, &sel, out, &err);
    dp_free(share);
    store_close(st);
    if (rc)
        return cli_fail(&err);
    printf("%s\n", out);
    return EXIT_OK;
}
