/* plot_sweep.c: the plots of a sweep, written as plot_kinds.c writes its
 * own (a gnuplot program down the pipe, data inline, user text only through
 * plot_gp_str):
 *
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
    char t1[PLOT_TITLE_MAX], t2[PLOT_TITLE_MAX], xl[400];
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
    plot_user_labels(gp, sel);
    if (nf > 1) {
        double W = width < 1200 ? 1200 : width, H = height < 750 ? 750 : height;
        /* the figure's title above the grid, a panel's value as its own
         * title, the legend once, in the right margin */
        plot_gp_printf(gp, "set key at screen %.4f, screen %.4f right top\n", 1 - 10 / W, 1 - 70 / H);
        plot_gp_printf(gp,
                       "set multiplot layout %zu,%zu margins %.4f,%.4f,%.4f,%.4f spacing %.4f,%.4f title ",
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
            plot_gp_printf(gp,
                           "%s$g%zu_%zu using 1:2:3:4 with %s lw %s ps 1.2 pt %d dt %zu lc rgb '%s' title ",
                           g ? ", \\\n  " : "", f, g, max_n >= 2 ? "yerrorlines" : "linespoints",
                           twin[g] >= 0 ? "1.2" : "2", same ? 1 + (pt + 2 * (int)same) % 14 : pt,
                           1 + same % 5, plot_policy_color(gpol[g], g));
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
    char t1[PLOT_TITLE_MAX], t2[PLOT_TITLE_MAX], lab[400];
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
    plot_user_labels(gp, sel);
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
