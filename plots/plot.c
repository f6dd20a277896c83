/* plot.c: what the plot kinds share:
 * choosing runs from the results database, sweep points (flat JSON objects
 * of quantities with units), policy names and colours, metric columns.
 *
 * The database is only read, through the store's typed reads (store.h);
 * a metric name is checked against the fixed table below (and again by
 * store_sweep_runs_get) before it is used.  The entry points are in draw.c,
 * the drawing in plot_kinds.c, the gnuplot process in gnuplot.c.
 */
#include "plots.h"
#include "policy/policy.h"
#include "scenario.h"
#include "yamltree.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* How the database says to show its policies (store_policy_styles_get),
 * loaded by plot_styles_load for the plot being drawn: the label and
 * colour stored with the runs win, so a database draws the same with any
 * binary; the registry's (and then the name and a spare colour) are the
 * fallback for older databases and runs without them.  One plot at a time
 * (the command line draws one after another). */
static store_policy_styles styles;

int plot_styles_load(store *st, dp_err *err)
{
    store_policy_styles_free(&styles);
    return store_policy_styles_get(st, &styles, err);
}

void plot_styles_free(void)
{
    store_policy_styles_free(&styles);
}

const char *plot_policy_label(const char *policy)
{
    const store_policy_style *y = store_policy_style_of(&styles, policy);
    return y ? y->label : policy_label_of(policy);
}

const char *plot_policy_color(const char *policy, size_t k)
{
    const store_policy_style *y = store_policy_style_of(&styles, policy);
    return y && y->color[0] ? y->color : policy_color_of(policy, k);
}

static size_t policy_rank(const char *p)
{
    return policy_rank_of(p);
}

static const struct {
    const char *name, *label;
    double scale;
} metrics[] = {
    {"ttotal_s", "Ttotal (s)", 1},
    {"tsend_s", "Tsend (s)", 1},
    {"ttraining_s", "Ttraining (s)", 1},
    {"tflops", "TFLOPS (paper's count)", 1},
    {"utilization", "cluster utilization (%)", 100},
};
#define N_METRICS (sizeof metrics / sizeof *metrics)

const char *plot_metric_nearest(const char *name)
{
    const char *names[N_METRICS + 1];
    for (size_t k = 0; k < N_METRICS; k++)
        names[k] = metrics[k].name;
    names[N_METRICS] = "final_acc";                 /* tta@X takes a target: not guessed */
    for (size_t k = 0; name && k <= N_METRICS; k++) /* ttotal -> ttotal_s */
        if (strncmp(names[k], name, strlen(name)) == 0 && strlen(name) >= 3)
            return names[k];
    return name ? yt_nearest(name, names, N_METRICS + 1) : NULL;
}

int plot_metric(const char *name, const char **column, const char **label, double *scale)
{
    /* learning: the stored time to a target accuracy, or the last
     * evaluation's accuracy (the store checks the target's syntax) */
    static char tta_label[64];
    double x;
    char *end;
    if (name && !strncmp(name, "tta@", 4) && (x = strtod(name + 4, &end)) > 0 && x <= 1 && end != name + 4 &&
        !*end) {
        snprintf(tta_label, sizeof tta_label, "time to %.4g%% test accuracy (s)", 100 * x);
        *column = name;
        *label = tta_label;
        *scale = 1;
        return (int)N_METRICS;
    }
    if (name && !strcmp(name, "final_acc")) {
        *column = name;
        *label = "final test accuracy (%)";
        *scale = 100;
        return (int)N_METRICS + 1;
    }
    for (int k = 0; k < (int)N_METRICS; k++)
        if (name && !strcmp(name, metrics[k].name)) {
            *column = metrics[k].name;
            *label = metrics[k].label;
            *scale = metrics[k].scale;
            return k;
        }
    return -1;
}

int plot_want_log(int opt, double min_pos, double max, double ratio)
{
    if (opt == 0 || opt == 1)
        return opt;
    return isfinite(min_pos) && min_pos > 0 && isfinite(max) && max / min_pos >= ratio;
}

const char *plot_time_unit(double max_s, double *div)
{
    if (!(max_s >= 1000)) {
        *div = 1;
        return "s";
    }
    if (max_s < 7200) {
        *div = 60;
        return "min";
    }
    if (max_s < 172800) {
        *div = 3600;
        return "h";
    }
    *div = 86400;
    return "days";
}

/* ---- choosing runs ------------------------------------------------------ */

static int cmp_runs(const void *a, const void *b)
{
    const plot_run *x = a, *y = b;
    size_t rx = policy_rank(x->policy), ry = policy_rank(y->policy);
    if (rx != ry)
        return rx - ry;
    int c = strcmp(x->policy, y->policy);
    if (c)
        return c;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Load run id into *r; DP_EINPUT when absent or not ok. */
static int load_run(store *st, int64_t id, plot_run *r, dp_err *err)
{
    store_run_info info;
    int rc = store_run_info_get(st, id, &info, err);
    if (rc)
        return rc;
    memset(r, 0, sizeof *r);
    r->id = info.id;
    snprintf(r->policy, sizeof r->policy, "%s", info.policy);
    snprintf(r->scenario, sizeof r->scenario, "%s", info.scenario);
    r->tsend_s = info.tsend_s;
    r->ttraining_s = info.ttraining_s;
    r->ttotal_s = info.ttotal_s;
    r->tflops = info.tflops;
    r->bin_s = info.bin_s;
    /* the overrides it ran with, so a figure of changed scenarios says so */
    char *text = NULL, *name = NULL, *policy = NULL, **ov = NULL;
    size_t n_ov = 0;
    uint64_t seed;
    if ((rc = store_get_run_source(st, id, &text, &name, &ov, &n_ov, &policy, &seed, err)))
        return rc;
    for (size_t k = 0; k < n_ov; k++) {
        size_t l = strlen(r->overrides);
        snprintf(r->overrides + l, sizeof r->overrides - l, "%s%s", k ? " " : "", ov[k]);
    }
    dp_free(text);
    dp_free(name);
    dp_free(policy);
    store_strings_free(ov, n_ov);
    return 0;
}

void plot_caption(const plot_sel *sel, const char *text)
{
    if (sel->note && text && *text)
        fprintf(sel->note, "caption: %s\n", text);
}

/* Whether override text `tok` (len bytes) is one of the overrides of r. */
static int has_override(const plot_run *r, const char *tok, size_t len)
{
    for (const char *p = r->overrides; *p;) {
        size_t l = strcspn(p, " ");
        if (l == len && !strncmp(p, tok, len))
            return 1;
        p += l;
        p += *p == ' ';
    }
    return 0;
}

/* The overrides of r[k] that every run (common = 1) or not every run
 * (common = 0) of r[0..n) has, space-separated, in buf. */
static void overrides_split(const plot_run *r, size_t n, size_t k, int common, char *buf, size_t cap)
{
    buf[0] = '\0';
    for (const char *p = r[k].overrides; *p;) {
        size_t l = strcspn(p, " "), used = strlen(buf);
        int all = 1;
        for (size_t j = 0; j < n && all; j++)
            all = has_override(&r[j], p, l);
        if (all == common)
            snprintf(buf + used, cap - used, "%s%.*s", used ? " " : "", (int)l, p);
        p += l;
        p += *p == ' ';
    }
}

const char *plot_overrides_line(const plot_run *r, size_t n, char *buf, size_t cap)
{
    buf[0] = '\0';
    int differ = 0;
    for (size_t k = 0; k < n; k++)
        differ |= strcmp(r[k].overrides, r[0].overrides) != 0;
    char common[256];
    if (n)
        overrides_split(r, n, 0, 1, common, sizeof common);
    if (!n || (!common[0] && !differ))
        return NULL;
    snprintf(buf, cap, "%s%s%s%s", common[0] ? "with --set " : "", common, common[0] && differ ? "; " : "",
             differ ? "runs with other overrides too (in the legend)" : "");
    return buf;
}

void plot_overrides_own(const plot_run *r, size_t n, size_t k, char *buf, size_t cap)
{
    overrides_split(r, n, k, 0, buf, cap);
}

int plot_runs_select(store *st, const plot_sel *sel, int one, plot_run **runs, size_t *n, dp_err *err)
{
    *runs = NULL;
    *n = 0;
    store_ids own = {0};
    const int64_t *ids = sel->run_ids;
    size_t m = sel->n_runs;
    if (m == 0) {
        int rc = store_select_runs(st, sel->scenario, sel->policy, one, &own, err);
        if (rc)
            return rc;
        ids = own.id;
        m = own.n;
    } else if (one && m != 1) {
        return dp_err_set(err, DP_EINPUT, "a timeline shows one run (got %zu run ids)", m);
    }
    plot_run *r = dp_calloc(m ? m : 1, sizeof *r);
    if (!r) {
        store_ids_free(&own);
        return dp_err_set(err, DP_ENOMEM, "out of memory choosing runs");
    }
    for (size_t k = 0; k < m; k++) {
        int rc = load_run(st, ids[k], &r[k], err);
        if (rc) {
            store_ids_free(&own);
            dp_free(r);
            return rc;
        }
    }
    store_ids_free(&own);
    qsort(r, m, sizeof *r, cmp_runs);
    for (size_t k = 0; k < m; k++) {
        int shared = (k > 0 && !strcmp(r[k - 1].policy, r[k].policy)) ||
                     (k + 1 < m && !strcmp(r[k + 1].policy, r[k].policy));
        char mine[256];
        plot_overrides_own(r, m, k, mine, sizeof mine);
        if (shared && mine[0])
            snprintf(r[k].label, sizeof r[k].label, "%.30s #%lld (%.140s)", plot_policy_label(r[k].policy),
                     (long long)r[k].id, mine);
        else if (shared)
            snprintf(r[k].label, sizeof r[k].label, "%.30s #%lld", plot_policy_label(r[k].policy),
                     (long long)r[k].id);
        else
            snprintf(r[k].label, sizeof r[k].label, "%.30s", plot_policy_label(r[k].policy));
    }
    if (sel->note) {           /* say what was drawn, so a surprising default is seen at once */
        char el[200], es[300]; /* stored names, escaped: a database may come from anyone */
        fprintf(sel->note, "drawing run%s", m == 1 ? "" : "s");
        for (size_t k = 0; k < m; k++)
            fprintf(sel->note, "%s #%lld (%s)", k ? "," : "", (long long)r[k].id,
                    dp_esc(el, sizeof el, r[k].label));
        fprintf(sel->note, " of scenario '%s'%s\n", dp_esc(es, sizeof es, m ? r[0].scenario : ""),
                sel->n_runs ? "" : "; choose others with --run ID ('dpsim runs' lists them)");
    }
    *runs = r;
    *n = m;
    return 0;
}

int plot_one_run_with(store *st, const plot_sel *sel, plot_has_fn has, const char *what, plot_run *run,
                      dp_err *err)
{
    if (sel->n_runs || sel->policy || !has)
        return plot_one_run(st, sel, run, err);
    /* the default: the latest run, from the latest invocation's backwards,
     * that has what the plot draws */
    store_ids ids = {0};
    int rc = store_select_runs(st, sel->scenario, NULL, 0, &ids, err);
    if (rc)
        return rc;
    int64_t top = 0;
    for (size_t k = 0; k < ids.n; k++)
        top = ids.id[k] > top ? ids.id[k] : top;
    store_ids_free(&ids);
    enum { MAX_PROBES = 10000 };
    for (int64_t id = top; id >= 1 && id > top - MAX_PROBES; id--) {
        plot_run cand;
        dp_err e = {0};
        if (load_run(st, id, &cand, &e)) /* absent or failed */
            continue;
        if (sel->scenario && strcmp(cand.scenario, sel->scenario) != 0)
            continue;
        int ok = has(st, id, &e);
        if (ok < 0)
            return dp_err_set(err, e.code ? e.code : DP_ERUN, "%s", e.msg);
        if (!ok)
            continue;
        plot_sel one = *sel;
        one.run_ids = &id;
        one.n_runs = 1;
        if ((rc = plot_one_run(st, &one, run, err)))
            return rc;
        if (sel->note)
            fprintf(sel->note, "  (the latest run with %s; choose another with --run ID)\n", what);
        return 0;
    }
    return dp_err_set(err, DP_EINPUT, "no run%s%s%s has %s ('dpsim runs' lists them)",
                      sel->scenario ? " of scenario '" : "", sel->scenario ? sel->scenario : "",
                      sel->scenario ? "'" : "", what);
}

int plot_one_run(store *st, const plot_sel *sel, plot_run *run, dp_err *err)
{
    plot_run *r;
    size_t n;
    int rc = plot_runs_select(st, sel, 1, &r, &n, err);
    if (rc)
        return rc;
    if (n == 1)
        *run = r[0];
    else /* plot_runs_select(one = 1) gives exactly one run or an error */
        rc = dp_err_set(err, DP_EINPUT, "a plot of one run got %zu runs", n);
    dp_free(r);
    return rc;
}

/* ---- sweep points ------------------------------------------------------- */

typedef struct jp {
    const char *s;
    size_t i;
} jp;

static void skip_ws(jp *p)
{
    while (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' || p->s[p->i] == '\r')
        p->i++;
}

static int hexval(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* A JSON string at p (opening quote included) into a new block. */
static char *json_string(jp *p)
{
    if (p->s[p->i] != '"')
        return NULL;
    p->i++;
    size_t start = p->i, len = 0;
    /* first pass: bound the length (escapes never grow the text beyond 3
     * bytes per \uXXXX, which is shorter than its 6 characters) */
    while (p->s[p->i] && p->s[p->i] != '"') {
        if (p->s[p->i] == '\\' && p->s[p->i + 1])
            p->i++;
        p->i++;
        len++;
    }
    if (p->s[p->i] != '"')
        return NULL;
    char *out = dp_malloc(p->i - start + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    for (size_t i = start; i < p->i; i++) {
        char c = p->s[i];
        if (c != '\\') {
            out[o++] = c;
            continue;
        }
        c = p->s[++i];
        switch (c) {
        case 'n':
            out[o++] = '\n';
            break;
        case 't':
            out[o++] = '\t';
            break;
        case 'r':
            out[o++] = '\r';
            break;
        case 'b':
            out[o++] = '\b';
            break;
        case 'f':
            out[o++] = '\f';
            break;
        case 'u': {
            unsigned cp = 0;
            int ok = 1;
            for (int k = 1; k <= 4; k++) {
                int h = i + (size_t)k < p->i ? hexval(p->s[i + (size_t)k]) : -1;
                if (h < 0)
                    ok = 0;
                else
                    cp = cp * 16 + (unsigned)h;
            }
            if (!ok) {
                dp_free(out);
                return NULL;
            }
            i += 4;
            /* surrogates stand for characters outside the BMP: shown as '?' */
            if (cp >= 0xd800 && cp <= 0xdfff)
                out[o++] = '?';
            else if (cp < 0x80)
                out[o++] = (char)cp;
            else if (cp < 0x800)
                out[o++] = (char)(0xc0 | (cp >> 6)), out[o++] = (char)(0x80 | (cp & 0x3f));
            else
                out[o++] = (char)(0xe0 | (cp >> 12)), out[o++] = (char)(0x80 | ((cp >> 6) & 0x3f)),
                out[o++] = (char)(0x80 | (cp & 0x3f));
            break;
        }
        default:
            out[o++] = c;
            break; /* \" \\ \/ */
        }
    }
    out[o] = '\0';
    (void)len;
    p->i++;
    return out;
}

void plot_json_free(char **keys, char **vals, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        if (keys)
            dp_free(keys[k]);
        if (vals)
            dp_free(vals[k]);
    }
    dp_free(keys);
    dp_free(vals);
}

int plot_json_object(const char *json, char ***keys, char ***vals, size_t *n, dp_err *err)
{
    *keys = NULL;
    *vals = NULL;
    *n = 0;
    if (!json)
        return dp_err_set(err, DP_EINPUT, "sweep point: missing (NULL point_json)");
    jp p = {json, 0};
    size_t cap = 0, m = 0;
    char **k = NULL, **v = NULL;
    skip_ws(&p);
    if (json[p.i] != '{')
        goto bad;
    p.i++;
    skip_ws(&p);
    if (json[p.i] == '}') {
        p.i++;
        goto done;
    }
    for (;;) {
        if (m == cap) {
            size_t nc = cap ? 2 * cap : 4;
            char **nk = dp_realloc(k, nc * sizeof *nk);
            if (!nk)
                goto oom;
            k = nk;
            char **nv = dp_realloc(v, nc * sizeof *nv);
            if (!nv)
                goto oom;
            v = nv;
            cap = nc;
        }
        skip_ws(&p);
        k[m] = json_string(&p);
        if (!k[m])
            goto bad;
        v[m] = NULL;
        m++;
        skip_ws(&p);
        if (json[p.i] != ':')
            goto bad;
        p.i++;
        skip_ws(&p);
        if (json[p.i] == '"') {
            v[m - 1] = json_string(&p);
        } else {
            /* a number or a literal: keep its text */
            size_t s = p.i;
            while (json[p.i] && (isalnum((unsigned char)json[p.i]) || strchr("+-.", json[p.i])))
                p.i++;
            if (p.i == s)
                goto bad;
            v[m - 1] = dp_malloc(p.i - s + 1);
            if (v[m - 1]) {
                memcpy(v[m - 1], json + s, p.i - s);
                v[m - 1][p.i - s] = '\0';
            }
        }
        if (!v[m - 1])
            goto bad;
        skip_ws(&p);
        if (json[p.i] == ',') {
            p.i++;
            continue;
        }
        if (json[p.i] == '}') {
            p.i++;
            break;
        }
        goto bad;
    }
done:
    skip_ws(&p);
    if (json[p.i])
        goto bad;
    *keys = k;
    *vals = v;
    *n = m;
    return 0;
bad:
    plot_json_free(k, v, m);
    return dp_err_set(err, DP_EINPUT, "sweep point: not a flat JSON object of strings (got '%.200s')", json);
oom:
    plot_json_free(k, v, m);
    return dp_err_set(err, DP_ENOMEM, "out of memory reading a sweep point");
}

/* The unit suffix of a quantity ("10 Mbps" -> "Mbps"), "" if none. */
static const char *unit_suffix(const char *v)
{
    char *end;
    errno = 0;
    strtod(v, &end);
    if (end == v)
        return "";
    while (*end == ' ')
        end++;
    return end;
}

/* The scenario unit kind that accepts text, or -1.  Plain numbers are
 * SCN_UNIT_NUMBER.  Bandwidths (bits/s) are tried before byte rates: both
 * parsers accept both spellings, and "Mbps" should read as a bandwidth. */
static int unit_kind(const char *text)
{
    double v;
    if (!*unit_suffix(text))
        return scn_parse_quantity(text, SCN_UNIT_NUMBER, &v, NULL) ? -1 : (int)SCN_UNIT_NUMBER;
    const int bits = strstr(text, "bps") != NULL;
    const scn_unit order[] = {SCN_UNIT_BYTES, SCN_UNIT_TIME, SCN_UNIT_FLOPS,
                              bits ? SCN_UNIT_BANDWIDTH : SCN_UNIT_RATE};
    for (size_t k = 0; k < sizeof order / sizeof *order; k++)
        if (!scn_parse_quantity(text, order[k], &v, NULL))
            return (int)order[k];
    return -1;
}

void plot_axis_values(const char *const *vals, size_t n, double *out, char *unit, size_t unit_cap)
{
    /* The display unit: that of the first value with one. */
    int kind = SCN_UNIT_NUMBER;
    const char *suffix = "";
    for (size_t k = 0; k < n; k++) {
        int uk = unit_kind(vals[k]);
        if (uk >= 0 && uk != SCN_UNIT_NUMBER) {
            kind = uk;
            suffix = unit_suffix(vals[k]);
            break;
        }
    }
    double factor = 1;
    if (kind != SCN_UNIT_NUMBER) {
        char one[80];
        snprintf(one, sizeof one, "1%s", suffix);
        if (scn_parse_quantity(one, (scn_unit)kind, &factor, NULL) || !(factor > 0))
            factor = 1;
    }
    int mixed = 0;
    for (size_t k = 0; k < n; k++) {
        double v;
        /* A plain number next to units is taken in the display unit. */
        if (kind != SCN_UNIT_NUMBER && !*unit_suffix(vals[k]) &&
            !scn_parse_quantity(vals[k], SCN_UNIT_NUMBER, &v, NULL))
            out[k] = v;
        else if (!scn_parse_quantity(vals[k], (scn_unit)kind, &v, NULL))
            out[k] = v / factor;
        else {
            out[k] = strtod(vals[k], NULL);
            mixed = 1;
        }
    }
    snprintf(unit, unit_cap, "%s%s", suffix, mixed && *suffix ? ", some values in other units" : "");
}
