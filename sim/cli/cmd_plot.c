/* cmd_plot.c: dpsim plot KIND --db FILE --out FILE: draw a plot from the
 * results database with gnuplot (plots/plots.h).  The database is opened
 * read-only, so a failing or missing gnuplot cannot touch the results. */
#include "cli/cli.h"
#include "plots.h"
#include "store/store.h"

#include <string.h>

#define MAX_RUNS 64

static void help(void)
{
    printf("usage: dpsim plot KIND --out FILE [--db FILE] [options]\n\n"
           "Draw a plot from the results database with gnuplot (through a pipe; no\n"
           "script is written).  The format follows FILE's extension: .png, .svg, .pdf.\n\n"
           "KIND:\n"
           "  compare    Tsend, Ttraining and Ttotal per policy as grouped bars, values\n"
           "             above the bars (the paper's Table 3 / Figure 5).  The y axis is\n"
           "             logarithmic when the values span more than two decades, unless\n"
           "             --linear; --log forces it.\n"
           "  flops      cluster FLOPS over simulated time, a line per policy (Figure 6).\n"
           "             The time axis is logarithmic when the runs' lengths\n"
           "             differ by 20x or more (--logx / --linx to choose).\n"
           "  timeline   one run as a Gantt chart: a row per device, coloured by what it\n"
           "             does (receiving data, computing, sending, receiving the model,\n"
           "             waiting), dotted lines at epoch ends.\n"
           "  sweep      a metric against a swept key, a line per policy; with several\n"
           "             seeds the mean and a 95%% t-interval.  Log x when the values\n"
           "             span two decades or more.\n"
           "  mix        heat map of a metric over two swept keys (e.g. two device counts)\n"
           "             for one policy.\n"
           "  batches    one run of a load-balancing policy (equal_finish, dlb, lbbsp,\n"
           "             lbb): each device's batch per epoch (mean, bar from min to max)\n"
           "             and its time waiting at barriers.\n"
           "  staleness  histogram of update staleness per run (asyncps, flsgd)\n"
           "             for one policy.\n"
           "  links      one run's links: busy fraction (bars) and peak utilisation\n"
           "             (points), from the statistics of scenarios with stragglers,\n"
           "             availability or outages (selection as timeline).\n\n"
           "Selection (compare, flops: by default the latest successful run of each policy\n"
           "of the latest scenario, preferring runs without --set overrides; timeline,\n"
           "batches: the latest run):\n"
           "  -d, --db FILE        results database (default results.db); only read\n"
           "  -o, --out FILE       output file (.png, .svg or .pdf), required\n"
           "  -r, --run ID         a run to draw (repeat for compare/flops; 'dpsim runs' lists ids)\n"
           "  -s, --scenario NAME  runs of this scenario\n"
           "  -p, --policy P       timeline, batches: latest run of P; mix: which policy (default cadp)\n"
           "      --sweep ID       sweep, mix: which sweep (default the latest)\n"
           "  -m, --metric M       sweep, mix: ttotal_s (default), tsend_s, ttraining_s,\n"
           "                       tflops, utilization\n"
           "  -x, --x KEY          sweep, mix: the key on x (default the sweep's first)\n"
           "  -y, --y KEY          mix: the key on y (default the sweep's second)\n"
           "      --log, --linear  log or linear y axis (mix: colour scale); default auto\n"
           "      --logx, --linx   log or linear x axis (flops, sweep); default auto\n"
           "  -t, --title TEXT     title instead of the default one\n\n"
           "gnuplot is found on PATH, or set DPSIM_GNUPLOT to its path.\n"
           "Exit codes: 0 drawn, 1 gnuplot missing or failed (the database is untouched),\n"
           "2 bad usage or nothing to plot.\n");
}

int cmd_plot(int argc, char **argv)
{
    const char *db = "results.db", *out = NULL, *kind_name = NULL;
    int64_t ids[MAX_RUNS];
    plot_sel sel = {0};
    sel.log_x = sel.log_y = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
#define NEED(what)                                                                                           \
    do {                                                                                                     \
        if (!val)                                                                                            \
            return cli_usage_error("plot", "%s needs %s", a, what);                                          \
        i++;                                                                                                 \
    } while (0)
        if (cli_is_help(a)) {
            help();
            return EXIT_OK;
        } else if (!strcmp(a, "-d") || !strcmp(a, "--db")) {
            NEED("a file");
            db = val;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--out")) {
            NEED("a file");
            out = val;
        } else if (!strcmp(a, "-r") || !strcmp(a, "--run")) {
            NEED("a run id");
            uint64_t v;
            if (cli_parse_u64(val, &v) || v == 0 || v > INT64_MAX)
                return cli_usage_error("plot", "%s needs a run id, a positive integer (got '%s')", a, val);
            if (sel.n_runs == MAX_RUNS)
                return cli_usage_error("plot", "at most %d runs (got more)", MAX_RUNS);
            ids[sel.n_runs++] = (int64_t)v;
        } else if (!strcmp(a, "-s") || !strcmp(a, "--scenario")) {
            NEED("a scenario name");
            sel.scenario = val;
        } else if (!strcmp(a, "-p") || !strcmp(a, "--policy")) {
            NEED("a policy");
            sel.policy = val;
        } else if (!strcmp(a, "--sweep")) {
            NEED("a sweep id");
            uint64_t v;
            if (cli_parse_u64(val, &v) || v == 0 || v > INT64_MAX)
                return cli_usage_error("plot", "--sweep needs a sweep id, a positive integer (got '%s')",
                                       val);
            sel.sweep_id = (int64_t)v;
        } else if (!strcmp(a, "-m") || !strcmp(a, "--metric")) {
            NEED("a metric");
            sel.metric = val;
        } else if (!strcmp(a, "-x") || !strcmp(a, "--x")) {
            NEED("a key");
            sel.x_key = val;
        } else if (!strcmp(a, "-y") || !strcmp(a, "--y")) {
            NEED("a key");
            sel.y_key = val;
        } else if (!strcmp(a, "-t") || !strcmp(a, "--title")) {
            NEED("a title");
            sel.title = val;
        } else if (!strcmp(a, "--log") || !strcmp(a, "--logy")) {
            sel.log_y = 1;
        } else if (!strcmp(a, "--linear") || !strcmp(a, "--liny")) {
            sel.log_y = 0;
        } else if (!strcmp(a, "--logx")) {
            sel.log_x = 1;
        } else if (!strcmp(a, "--linx")) {
            sel.log_x = 0;
        } else if (a[0] == '-' && a[1]) {
            return cli_usage_error("plot", "unknown option '%s'", a);
        } else if (kind_name) {
            return cli_usage_error("plot", "one KIND at a time (got '%s' and '%s')", kind_name, a);
        } else {
            kind_name = a;
        }
#undef NEED
    }
    if (!kind_name)
        return cli_usage_error(
            "plot", "missing KIND (compare, flops, timeline, sweep, mix, batches, staleness or links)");
    int k = plot_kind_by_name(kind_name);
    if (k < 0)
        return cli_usage_error(
            "plot", "unknown KIND '%s' (compare, flops, timeline, sweep, mix, batches, staleness or links)",
            kind_name);
    if (!out)
        return cli_usage_error("plot", "missing --out FILE (.png, .svg or .pdf)");
    dp_err err = {0};
    const char *format;
    if (plot_format_for(out, &format, &err))
        return cli_fail(&err);
    if (sel.metric) {
        const char *col, *label;
        double scale;
        if (plot_metric(sel.metric, &col, &label, &scale) < 0)
            return cli_usage_error(
                "plot", "unknown metric '%s' (ttotal_s, tsend_s, ttraining_s, tflops, utilization)",
                sel.metric);
    }
    if ((k == PLOT_TIMELINE || k == PLOT_BATCHES) && sel.n_runs > 1)
        return cli_usage_error("plot", "a %s shows one run (got %zu --run)",
                               k == PLOT_TIMELINE ? "timeline" : "batches plot", sel.n_runs);
    sel.run_ids = sel.n_runs ? ids : NULL;
    store *st = store_open_read(db, &err);
    if (!st)
        return cli_fail(&err);
    int rc = plots_draw(store_db(st), (plot_kind)k, &sel, out, &err);
    store_close(st);
    if (rc)
        return cli_fail(&err);
    printf("%s\n", out);
    return EXIT_OK;
}
