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

static const char *const kind_names[PLOT_KIND_COUNT] = {"compare", "flops",   "timeline",  "sweep",
                                                        "mix",     "batches", "staleness", "links", "accuracy"};

int plot_kind_by_name(const char *name)
{
    for (int k = 0; name && k < PLOT_KIND_COUNT; k++)
        if (!strcmp(name, kind_names[k]))
            return k;
    return -1;
}

/* Labels, colours and order come from the policy registry (policy.h), so a
 * new policy needs nothing here. */
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
    switch (k) {
    case PLOT_COMPARE:
        return plot_draw_compare(st, sel, out_path, err);
    case PLOT_FLOPS:
        return plot_draw_flops(st, sel, out_path, err);
    case PLOT_TIMELINE:
        return plot_draw_timeline(st, sel, out_path, err);
    case PLOT_SWEEP:
        return plot_draw_sweep(st, sel, out_path, err);
    case PLOT_MIX:
        return plot_draw_mix(st, sel, out_path, err);
    case PLOT_BATCHES:
        return plot_draw_batches(st, sel, out_path, err);
    case PLOT_STALENESS:
        return plot_draw_staleness(st, sel, out_path, err);
    case PLOT_LINKS:
        return plot_draw_links(st, sel, out_path, err);
    case PLOT_ACCURACY:
        return plot_draw_accuracy(st, sel, out_path, err);
    default:
        return dp_err_set(
            err, DP_EINPUT,
            "plot: unknown kind %d (compare, flops, timeline, sweep, mix, batches, staleness, links, accuracy)",
            (int)k);
    }
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
