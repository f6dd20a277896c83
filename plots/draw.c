/* draw.c: the entry points of the plots module (plots.h): a plot kind by
 * name, one plot, the Table 3 set.  They check arguments and hand over to
 * the drawers of plot_kinds.c, which use plot.c's shared parts; keeping the
 * dispatch here keeps the two apart (no include circle). */
#include "plots.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* The plot kinds: the one list of their names, drawers and --help text
 * (the command line prints and checks names from it). */
typedef int (*plot_draw_fn)(store *st, const plot_sel *sel, const char *out_path, dp_err *err);
static const struct {
    const char *name;
    plot_draw_fn draw;
    const char *help;
} kinds[PLOT_KIND_COUNT] = {
    [PLOT_COMPARE] = {"compare", plot_draw_compare,
                      "Tsend, Ttraining and Ttotal per policy as grouped bars, values\n"
                      "above the bars (the paper's Table 3 / Figure 5).  The y axis is\n"
                      "logarithmic when the values span more than two decades, unless\n"
                      "--liny; --logy forces it."},
    [PLOT_FLOPS] = {"flops", plot_draw_flops,
                    "cluster FLOPS over simulated time, a line per policy (Figure 6);\n"
                    "a panel per run, stacked on one shared time axis, when there\n"
                    "are more than 4 runs or their lengths differ by 20x or more\n"
                    "(then the time axis is logarithmic unless --linx); --panels."},
    [PLOT_TIMELINE] = {"timeline", plot_draw_timeline,
                       "one run as a Gantt chart: a row per device, coloured by what it\n"
                       "does (receiving data, computing, sending, receiving the model,\n"
                       "waiting; hatched: a device the policy left out), dotted lines\n"
                       "at epoch ends."},
    [PLOT_SWEEP] = {"sweep", plot_draw_sweep,
                    "a metric against a swept key, a line per policy; with several\n"
                    "seeds the mean and a 95% t-interval.  Log x when the values\n"
                    "span two decades or more.  A second swept key with 2 to 12\n"
                    "values (or --y KEY) gives a panel per value; series that\n"
                    "coincide say so in the legend."},
    [PLOT_MIX] = {"mix", plot_draw_mix,
                  "heat map of a metric over two swept keys (e.g. two device counts)\n"
                  "for one policy."},
    [PLOT_BATCHES] = {"batches", plot_draw_batches,
                      "one run of a load-balancing policy (equal_finish, dlb, lbbsp,\n"
                      "lbb): each device's batch per epoch (mean, bar from min to max)\n"
                      "and its time waiting at barriers."},
    [PLOT_STALENESS] = {"staleness", plot_draw_staleness,
                        "histogram of update staleness per run (asyncps, flsgd)."},
    [PLOT_LINKS] = {"links", plot_draw_links,
                    "one run's links: busy fraction (bars) and peak utilisation\n"
                    "(points), from the statistics of scenarios with stragglers,\n"
                    "availability or outages (selection as timeline)."},
    [PLOT_ACCURACY] = {"accuracy", plot_draw_accuracy,
                       "test accuracy against simulated time and epochs per run\n"
                       "(scenario learning:)."},
    [PLOT_JOBS] = {"jobs", plot_draw_jobs,
                   "a `dpsim jobs` run: a Gantt of its jobs over the devices and the\n"
                   "CDF of job completion times, a line per scheduler (--run takes\n"
                   "jobs_runs ids)."},
    [PLOT_ENERGY] = {"energy", plot_draw_energy,
                     "the joules each run's devices drew, stacked by activity (compute,\n"
                     "transmit, receive, idle), with fedavg's completed rounds (scenario\n"
                     "power:; selection as compare)."},
    [PLOT_JOBS_SWEEP] = {"jobs-sweep", plot_draw_jobs_sweep,
                         "a `dpsim sweep` of a jobs scenario: mean (solid) and p95 (dashed)\n"
                         "JCT against the arrival rate (1 / scheduler.arrival_scale; else\n"
                         "--x KEY or the first other swept key), a line per scheduler\n"
                         "(--sweep ID, default the latest)."},
};

int plot_kind_by_name(const char *name)
{
    for (int k = 0; name && k < PLOT_KIND_COUNT; k++)
        if (!strcmp(name, kinds[k].name))
            return k;
    return -1;
}

const char *plot_kind_name(int k)
{
    return k >= 0 && k < PLOT_KIND_COUNT ? kinds[k].name : NULL;
}

const char *plot_kind_help(int k)
{
    return k >= 0 && k < PLOT_KIND_COUNT ? kinds[k].help : NULL;
}

const char *plot_kind_list(char *buf, size_t cap)
{
    size_t o = 0;
    if (cap)
        buf[0] = '\0';
    for (int k = 0; k < PLOT_KIND_COUNT && o < cap; k++) {
        int n = snprintf(buf + o, cap - o, "%s%s",
                         k == 0                     ? ""
                         : k + 1 == PLOT_KIND_COUNT ? " or "
                                                    : ", ",
                         kinds[k].name);
        o += n > 0 ? (size_t)n : 0;
    }
    return buf;
}

/* ---- entry points ------------------------------------------------------- */

int plots_draw(store *st, plot_kind k, const plot_sel *sel, const char *out_path, dp_err *err)
{
    plot_sel dflt = {0};
    dflt.log_x = dflt.log_y = -1;
    if (!sel)
        sel = &dflt;
    const char *format;
    if (!st)
        return dp_err_set(err, DP_EINPUT, "plot: no database");
    if (!out_path || !*out_path)
        return dp_err_set(err, DP_EINPUT, "plot: no output file (want FILE.png, .svg or .pdf)");
    if (plot_format_for(out_path, &format, err))
        return DP_EINPUT;
    if ((int)k < 0 || k >= PLOT_KIND_COUNT) {
        char list[160];
        return dp_err_set(err, DP_EINPUT, "plot: unknown kind %d (%s)", (int)k,
                          plot_kind_list(list, sizeof list));
    }
    /* labels and colours as the database's runs say (plot.c) */
    int rc = plot_styles_load(st, err);
    if (!rc)
        rc = kinds[k].draw(st, sel, out_path, err);
    plot_styles_free();
    return rc;
}

/* mkdir -p */
static int make_dir(const char *dir, dp_err *err)
{
    size_t len = strlen(dir);
    char *p = dp_malloc(len + 1);
    if (!p)
        return dp_err_set(err, DP_ENOMEM, "out of memory");
    memcpy(p, dir, len + 1);
    for (size_t i = 1; i <= len; i++) {
        if (p[i] != '/' && p[i] != '\0')
            continue;
        char c = p[i];
        p[i] = '\0';
        if (mkdir(p, 0777) && errno != EEXIST) {
            int e = errno;
            int rc = dp_err_set(err, DP_ERUN, "cannot create directory %s: %s", p, strerror(e));
            dp_free(p);
            return rc;
        }
        p[i] = c;
    }
    dp_free(p);
    struct stat sb;
    if (stat(dir, &sb) || !S_ISDIR(sb.st_mode))
        return dp_err_set(err, DP_ERUN, "%s is not a directory", dir);
    return 0;
}

int plots_table3(store *st, const int64_t *run_ids, size_t n, const char *out_dir, dp_err *err)
{
    if (!st || !out_dir || !*out_dir || (n && !run_ids))
        return dp_err_set(err, DP_EINPUT, "plots_table3: missing database, runs or directory");
    int rc = make_dir(out_dir, err);
    if (rc)
        return rc;
    size_t len = strlen(out_dir) + 64;
    char *path = dp_malloc(len);
    if (!path)
        return dp_err_set(err, DP_ENOMEM, "out of memory");
    plot_sel sel = {0};
    sel.run_ids = run_ids;
    sel.n_runs = n;
    sel.log_x = sel.log_y = -1;
    plot_batch_begin(); /* five plots, one gnuplot */
    snprintf(path, len, "%s/table3-compare.png", out_dir);
    rc = plots_draw(st, PLOT_COMPARE, &sel, path, err);
    if (!rc) {
        snprintf(path, len, "%s/table3-flops.png", out_dir);
        rc = plots_draw(st, PLOT_FLOPS, &sel, path, err);
    }
    plot_run *runs = NULL;
    size_t m = 0;
    if (!rc)
        rc = plot_runs_select(st, &sel, 0, &runs, &m, err);
    for (size_t k = 0; !rc && k < m; k++) {
        /* the policy name comes from the database: keep file-name-safe characters only */
        char safe[32];
        size_t o = 0;
        for (const char *c = runs[k].policy; *c && o + 1 < sizeof safe; c++)
            safe[o++] = isalnum((unsigned char)*c) || *c == '-' || *c == '_' ? *c : '_';
        safe[o] = '\0';
        int dup = (k > 0 && !strcmp(runs[k - 1].policy, runs[k].policy)) ||
                  (k + 1 < m && !strcmp(runs[k + 1].policy, runs[k].policy));
        if (dup)
            snprintf(path, len, "%s/table3-timeline-%s-%lld.png", out_dir, safe, (long long)runs[k].id);
        else
            snprintf(path, len, "%s/table3-timeline-%s.png", out_dir, safe);
        plot_sel one = sel;
        one.run_ids = &runs[k].id;
        one.n_runs = 1;
        rc = plots_draw(st, PLOT_TIMELINE, &one, path, err);
    }
    dp_free(runs);
    dp_free(path);
    dp_err berr = {0};
    int brc = plot_batch_end(rc ? &berr : err); /* after an error: its files are removed, err kept */
    return rc ? rc : brc;
}
