/* population.c: `devices:` items that make many device groups.
 *
 * Two kinds (scenarios/README.md, "Device populations"):
 *
 *  - a device table, `- from_csv: FILE`: one group per CSV row.  The header
 *    names the keys of a device group (`link.up` for a nested one); each
 *    row is turned into a small mapping whose nodes carry the CSV line and
 *    column and converted by the same code as a YAML group, so a cell gets
 *    the checks and messages a YAML value gets, naming FILE:LINE:COL of the
 *    cell.  The file is recorded with the scenario (s->files), so a stored
 *    run is simulated again from the database alone.
 *
 *  - a population: a group in which some values are distributions
 *    (`batch_time: { lognormal: { median: 2.5s, sigma: 0.4 } }`).  It
 *    becomes `count` groups of one device, NAME[0], NAME[1], ..., each
 *    drawing its own values.  The group is first converted once with each
 *    distribution replaced by a representative value of it (every key is
 *    checked as usual); then each member is a copy whose drawn values are
 *    set and checked against the same bounds.  Each drawn key has a GSL
 *    stream of its own, seeded from the group's `seed` (default: the
 *    scenario's training.seed), its name and the key, and members draw in
 *    order: the same scenario gives the same devices on every machine, a
 *    larger count keeps the first devices, and drawing one more key leaves
 *    the others' values as they were.
 */
#include "scenario_impl.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- drawable keys ----------------------------------------------------- */

enum {
    DK_BATCH_TIME,
    DK_PEAK_FLOPS,
    DK_EFFICIENCY,
    DK_MEMORY,
    DK_NOISE,
    DK_UP,
    DK_DOWN,
    DK_LATENCY,
    DK_SITE,
    DK_N
};

typedef struct dkey {
    const char *map; /* NULL: a key of the group itself; else of this nested mapping */
    const char *key;
    scn_unit unit;
    int nonneg;
    double max;
} dkey;

static const dkey dkeys[DK_N] = {
    [DK_BATCH_TIME] = {NULL, "batch_time", SCN_UNIT_TIME, 0, 1e9},
    [DK_PEAK_FLOPS] = {NULL, "peak_flops", SCN_UNIT_FLOPS, 0, 1e21},
    [DK_EFFICIENCY] = {NULL, "efficiency", SCN_UNIT_NUMBER, 0, 1},
    [DK_MEMORY] = {NULL, "memory", SCN_UNIT_BYTES, 0, 1e18},
    [DK_NOISE] = {NULL, "noise", SCN_UNIT_NUMBER, 1, SCN_MAX_NOISE},
    [DK_UP] = {"link", "up", SCN_UNIT_BANDWIDTH, 0, 1e300},
    [DK_DOWN] = {"link", "down", SCN_UNIT_BANDWIDTH, 0, 1e300},
    [DK_LATENCY] = {"link", "latency", SCN_UNIT_TIME, 1, 1e6},
    [DK_SITE] = {NULL, "site", SCN_UNIT_NUMBER, 0, 0}, /* a choice of site names */
};

static double *dk_field(scn_group *g, int k)
{
    switch (k) {
    case DK_BATCH_TIME:
        return &g->batch_time_s;
    case DK_PEAK_FLOPS:
        return &g->peak_flops;
    case DK_EFFICIENCY:
        return &g->efficiency;
    case DK_MEMORY:
        return &g->memory_bytes;
    case DK_NOISE:
        return &g->noise_cv;
    case DK_UP:
        return &g->link.up_Bps;
    case DK_DOWN:
        return &g->link.down_Bps;
    case DK_LATENCY:
        return &g->link.latency_s;
    default:
        return NULL;
    }
}

static const yt_node *dk_node(const yt_node *it, int k)
{
    const yt_node *m = dkeys[k].map ? yt_get(it, dkeys[k].map) : it;
    return m && m->kind == YT_MAP ? yt_get(m, dkeys[k].key) : NULL;
}

/* ---- distributions ----------------------------------------------------- */

typedef enum { D_FIXED, D_UNIFORM, D_LOGNORMAL, D_NORMAL, D_CHOICE } dkind;

typedef struct dist {
    dkind kind;
    double a, b; /* UNIFORM [a, b]; LOGNORMAL mu, sigma (of the log); NORMAL mean, sd; FIXED a */
    size_t n;    /* CHOICE: n values, cumulative weights (NULL: equal) */
    double *vals, *cum;
    const yt_node *node, *rep; /* the distribution, and the value the template uses */
    gsl_rng *rng;
} dist;

static void dist_free(dist *d)
{
    dp_free(d->vals);
    dp_free(d->cum);
    if (d->rng)
        gsl_rng_free(d->rng);
}

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* One value of key k (a quantity or, for site, a site name). */
static int one_value(cv *c, int k, const yt_node *n, const char *kp, double *out)
{
    char g[80];
    if (!n || n->kind != YT_SCALAR || yt_is_null(n))
        return scni_fail(c, n, kp, "expected a single value (got %s)", scni_got(n, g, sizeof g));
    if (k == DK_SITE) {
        int si = scni_site_index(c->s, n->text);
        if (si < 0)
            return scni_unknown_site(c, n, kp);
        *out = si;
        return 0;
    }
    dp_err e;
    if (scn_parse_quantity(n->text, dkeys[k].unit, out, &e))
        return scni_fail(c, n, kp, "%s", e.msg);
    scni_note_unit(c, n, dkeys[k].unit);
    return 0;
}

/* A drawn or given value of key k is in the key's range. */
static int in_range(int k, double v)
{
    if (k == DK_SITE)
        return 1;
    if (!(dkeys[k].nonneg ? v >= 0 : v > 0) || v > dkeys[k].max)
        return 0;
    return v == 0 || v >= scni_unit_floor(dkeys[k].unit);
}

static int range_fail(cv *c, int k, const yt_node *n, const char *kp, const char *what, double v)
{
    char lo[40], got[48];
    scn_format_quantity(scni_unit_floor(dkeys[k].unit), dkeys[k].unit, lo, sizeof lo);
    scn_format_quantity(v, dkeys[k].unit, got, sizeof got);
    return scni_fail(c, n, kp, "%s must be %s, at least %s and at most %g (got %s)", what,
                     dkeys[k].nonneg ? ">= 0" : "> 0", lo, dkeys[k].max, got);
}

/* A parameter of a distribution: a value of the key's unit (unit 1) or a
 * plain number (unit 0), > 0 (or >= 0 with nonneg). */
static int param(cv *c, int k, const yt_node *m, const char *path, const char *key, int unit, int nonneg,
                 double *out, const yt_node **node)
{
    char kp[400], g[80];
    scni_join(kp, sizeof kp, path, key);
    const yt_node *n = NULL;
    int r = scni_get_scalar(c, m, path, key, 1, &n);
    if (r < 0)
        return r;
    if (node)
        *node = n;
    dp_err e;
    if (scn_parse_quantity(n->text, unit ? dkeys[k].unit : SCN_UNIT_NUMBER, out, &e))
        return scni_fail(c, n, kp, "%s", e.msg);
    scni_note_unit(c, n, unit ? dkeys[k].unit : SCN_UNIT_NUMBER);
    if (!isfinite(*out) || (nonneg ? *out < 0 : !(*out > 0)))
        return scni_fail(c, n, kp, "must be %s (got %s)", nonneg ? ">= 0" : "> 0", scni_got(n, g, sizeof g));
    return 0;
}

static int parse_choice(cv *c, int k, const yt_node *m, const char *path, dist *d)
{
    char kp[400], g[80];
    const yt_node *l = yt_get(m, "choice"), *w = yt_get(m, "weights");
    scni_join(kp, sizeof kp, path, "choice");
    if (!l || l->kind != YT_SEQ || l->n == 0)
        return scni_fail(c, l, kp, "expected a list of values (got %s)", scni_got(l, g, sizeof g));
    if (!(d->vals = dp_calloc(l->n, sizeof *d->vals)))
        return scni_oom(c);
    d->n = l->n;
    for (size_t i = 0; i < l->n; i++) {
        char ik[420];
        snprintf(ik, sizeof ik, "%s[%zu]", kp, i);
        int r = one_value(c, k, l->items[i], ik, &d->vals[i]);
        if (r < 0)
            return r;
        if (!in_range(k, d->vals[i]))
            return range_fail(c, k, l->items[i], ik, "each value", d->vals[i]);
    }
    d->rep = l->items[0];
    if (yt_is_null(w))
        return 0;
    scni_join(kp, sizeof kp, path, "weights");
    if (w->kind != YT_SEQ || w->n != l->n)
        return scni_fail(c, w, kp, "expected a list of %zu weights, one per choice (got %s)", l->n,
                         w->kind == YT_SEQ ? "a list of another length" : scni_got(w, g, sizeof g));
    if (!(d->cum = dp_calloc(l->n, sizeof *d->cum)))
        return scni_oom(c);
    double sum = 0;
    for (size_t i = 0; i < w->n; i++) {
        double x;
        dp_err e;
        const yt_node *wi = w->items[i];
        if (wi->kind != YT_SCALAR || scn_parse_quantity(wi->text, SCN_UNIT_NUMBER, &x, &e) || !isfinite(x) ||
            x < 0)
            return scni_fail(c, wi, kp, "each weight must be a number >= 0 (got %s)",
                             scni_got(wi, g, sizeof g));
        sum += x;
        d->cum[i] = sum;
    }
    if (!(sum > 0) || !isfinite(sum))
        return scni_fail(c, w, kp, "the weights must add up to a finite number > 0 (got %g)", sum);
    for (size_t i = 0; i < w->n; i++)
        d->cum[i] /= sum;
    return 0;
}

/* Parse the distribution at node n (key k, key path kp) into d. */
static int parse_dist(cv *c, int k, const yt_node *n, const char *kp, dist *d)
{
    static const char *const kinds[] = {"fixed", "uniform", "lognormal", "normal", "choice", NULL};
    static const char *const keys[] = {"fixed", "uniform", "lognormal", "normal", "choice", "weights", NULL};
    static const char *const ln_keys[] = {"median", "sigma", "mean", "sd", NULL};
    static const char *const n_keys[] = {"mean", "sd", NULL};
    char g[80], sub[420];
    int r, which = -1;
    d->node = n;
    if ((r = scni_check_map(c, n, kp, keys, NULL)) < 0)
        return r;
    for (size_t i = 0; i < n->n; i++)
        for (int j = 0; kinds[j]; j++)
            if (!strcmp(n->keys[i]->text, kinds[j])) {
                if (which >= 0)
                    return scni_fail(c, n->keys[i], kp, "give one distribution, not %s and %s", kinds[which],
                                     kinds[j]);
                which = j;
            }
    if (which < 0)
        return scni_fail(c, n, kp, "expected one of fixed, uniform, lognormal, normal, choice (got %s)",
                         n->n ? n->keys[0]->text : "an empty mapping");
    if (which != D_CHOICE && yt_get_key(n, "weights"))
        return scni_fail(c, yt_get_key(n, "weights"), kp, "weights apply only to choice (got %s)",
                         kinds[which]);
    if (k == DK_SITE && which != D_CHOICE && which != D_FIXED)
        return scni_fail(c, n, kp, "a site is drawn with choice: [SITE, ...] (got %s)", kinds[which]);
    d->kind = (dkind)which;
    scni_join(sub, sizeof sub, kp, kinds[which]);
    const yt_node *v = yt_get(n, kinds[which]);
    switch (d->kind) {
    case D_FIXED:
        if ((r = one_value(c, k, v, sub, &d->a)) < 0)
            return r;
        if (!in_range(k, d->a))
            return range_fail(c, k, v, sub, "the value", d->a);
        d->rep = v;
        return 0;
    case D_UNIFORM: {
        if (!v || v->kind != YT_SEQ || v->n != 2)
            return scni_fail(c, v, sub, "expected [low, high] (got %s)", scni_got(v, g, sizeof g));
        if ((r = one_value(c, k, v->items[0], sub, &d->a)) < 0 ||
            (r = one_value(c, k, v->items[1], sub, &d->b)) < 0)
            return r;
        if (!in_range(k, d->a))
            return range_fail(c, k, v->items[0], sub, "low", d->a);
        if (!in_range(k, d->b))
            return range_fail(c, k, v->items[1], sub, "high", d->b);
        if (d->b < d->a)
            return scni_fail(c, v, sub, "low must not exceed high (got [%s, %s])", v->items[0]->text,
                             v->items[1]->text);
        d->rep = v->items[0];
        return 0;
    }
    case D_LOGNORMAL: {
        if ((r = scni_check_map(c, v, sub, ln_keys, NULL)) < 0)
            return r;
        int by_median = yt_get_key(v, "median") || yt_get_key(v, "sigma");
        int by_mean = yt_get_key(v, "mean") || yt_get_key(v, "sd");
        if (by_median == by_mean)
            return scni_fail(c, v, sub, "give either { median, sigma } or { mean, sd } (got %s)",
                             by_median ? "both" : "neither");
        double m, s;
        if (by_median) {
            if ((r = param(c, k, v, sub, "median", 1, 0, &m, &d->rep)) < 0 ||
                (r = param(c, k, v, sub, "sigma", 0, 1, &s, NULL)) < 0)
                return r;
            d->a = log(m);
            d->b = s;
        } else {
            if ((r = param(c, k, v, sub, "mean", 1, 0, &m, &d->rep)) < 0 ||
                (r = param(c, k, v, sub, "sd", 1, 1, &s, NULL)) < 0)
                return r;
            /* mean M, sd S: sigma^2 = ln(1 + S^2 / M^2), mu = ln M - sigma^2 / 2 */
            double s2 = log1p((s / m) * (s / m));
            d->a = log(m) - s2 / 2;
            d->b = sqrt(s2);
        }
        if (d->b > 10)
            return scni_fail(c, v, sub, "sigma (of the logarithm) must be at most 10 (got %g)", d->b);
        if (!in_range(k, m))
            return range_fail(c, k, d->rep, sub, by_median ? "median" : "mean", m);
        return 0;
    }
    case D_NORMAL: {
        if ((r = scni_check_map(c, v, sub, n_keys, n_keys)) < 0)
            return r;
        if ((r = param(c, k, v, sub, "mean", 1, 0, &d->a, &d->rep)) < 0 ||
            (r = param(c, k, v, sub, "sd", 1, 1, &d->b, NULL)) < 0)
            return r;
        if (!in_range(k, d->a))
            return range_fail(c, k, d->rep, sub, "mean", d->a);
        return 0;
    }
    case D_CHOICE:
        return parse_choice(c, k, n, kp, d);
    }
    return 0;
}

/* The next value of d (site: an index). */
static double draw(dist *d)
{
    switch (d->kind) {
    case D_FIXED:
        return d->a;
    case D_UNIFORM:
        return d->a + (d->b - d->a) * gsl_rng_uniform(d->rng);
    case D_LOGNORMAL:
        return gsl_ran_lognormal(d->rng, d->a, d->b);
    case D_NORMAL: {
        /* truncated at > 0: the mean is > 0, so each try succeeds with
         * probability >= 1/2 and 200 failures in a row do not happen */
        for (int i = 0; i < 200; i++) {
            double x = d->a + gsl_ran_gaussian(d->rng, d->b);
            if (x > 0)
                return x;
        }
        return d->a;
    }
    case D_CHOICE: {
        if (!d->cum)
            return d->vals[gsl_rng_uniform_int(d->rng, d->n)];
        double u = gsl_rng_uniform(d->rng);
        size_t lo = 0, hi = d->n - 1;
        while (lo < hi) { /* the first i with u < cum[i] */
            size_t mid = lo + (hi - lo) / 2;
            if (u < d->cum[mid])
                hi = mid;
            else
                lo = mid + 1;
        }
        return d->vals[lo];
    }
    }
    return d->a;
}

/* ---- groups ------------------------------------------------------------ */

static int copy_array(double **dst, const double *src, size_t n)
{
    if (!src || !n)
        return 0;
    if (!(*dst = dp_malloc(n * sizeof **dst)))
        return DP_ENOMEM;
    memcpy(*dst, src, n * sizeof **dst);
    return 0;
}

static int copy_trace(trace **dst, const trace *src)
{
    return src && !(*dst = trace_copy(src)) ? DP_ENOMEM : 0;
}

/* 1 when g owns memory besides its name (tables, traces, outages). */
static int owns_parts(const scn_group *g)
{
    return g->table_batch || g->table_s || g->speed_trace || g->link.up_trace || g->link.down_trace ||
           g->avail.trace || g->energy.plug_trace || g->link.outages.start_s || g->link.outages.end_s;
}

/* dst = src with copies of everything src owns, named `name`.  On failure
 * dst holds what was copied (scn_free frees it). */
static int group_copy(scn_group *dst, const scn_group *src, const char *name)
{
    *dst = *src;
    dst->name = NULL;
    dst->table_batch = dst->table_s = NULL;
    dst->speed_trace = dst->link.up_trace = dst->link.down_trace = dst->avail.trace = NULL;
    dst->energy.plug_trace = NULL;
    dst->link.outages.start_s = dst->link.outages.end_s = NULL;
    if (!(dst->name = dp_strdup(name)) || copy_array(&dst->table_batch, src->table_batch, src->table_n) ||
        copy_array(&dst->table_s, src->table_s, src->table_n) ||
        copy_trace(&dst->speed_trace, src->speed_trace) ||
        copy_trace(&dst->link.up_trace, src->link.up_trace) ||
        copy_trace(&dst->link.down_trace, src->link.down_trace) ||
        copy_trace(&dst->avail.trace, src->avail.trace) ||
        copy_trace(&dst->energy.plug_trace, src->energy.plug_trace) ||
        copy_array(&dst->link.outages.start_s, src->link.outages.start_s, src->link.outages.n) ||
        copy_array(&dst->link.outages.end_s, src->link.outages.end_s, src->link.outages.n))
        return DP_ENOMEM;
    return 0;
}

static int add_pop(cv *c, scn_pop_kind kind, const char *name, size_t item, size_t first, uint64_t seed,
                   unsigned drawn)
{
    scn_scenario *s = c->s;
    scn_population *p = dp_realloc(s->pops, (s->n_pops + 1) * sizeof *p);
    if (!p)
        return scni_oom(c);
    s->pops = p;
    p = &s->pops[s->n_pops];
    *p = (scn_population){kind, NULL, first, s->n_groups - first, seed, drawn, (int)item, NULL};
    s->n_pops++;
    if (!(p->name = dp_strdup(name)))
        return scni_oom(c);
    for (size_t g = first; g < s->n_groups; g++)
        s->groups[g].pop = (int)s->n_pops;
    return 0;
}

void scni_free_pops(scn_scenario *s)
{
    for (size_t i = 0; i < s->n_pops; i++) {
        dp_free(s->pops[i].name);
        dp_free(s->pops[i].names);
    }
    dp_free(s->pops);
    s->pops = NULL;
    s->n_pops = 0;
}

/* ---- populations ------------------------------------------------------- */

/* 1 when t is a drawable key (of the group's own, or with in_link of its
 * `link`). */
static int has_dist_key(const char *t, int in_link)
{
    for (int k = 0; k < DK_N; k++)
        if ((dkeys[k].map != NULL) == in_link && yt_key_is(t, dkeys[k].key))
            return 1;
    return 0;
}

/* 1 when a drawable key of mapping m (the group's own, or with in_link
 * those of its `link`, the one nested mapping of dkeys) holds a
 * distribution.  One pass from the end: the last of a key given twice is
 * the one yt_get reads (the loader then reports the duplicate). */
static int has_dist(const yt_node *m, int in_link)
{
    unsigned seen = 0;
    for (size_t i = m->n; i-- > 0;) {
        const char *t = m->keys[i]->text;
        for (int k = 0; k < DK_N; k++)
            if ((dkeys[k].map != NULL) == in_link && yt_key_is(t, dkeys[k].key)) {
                if (!(seen & (1u << k)) && m->items[i]->kind == YT_MAP)
                    return 1;
                seen |= 1u << k;
                break;
            }
    }
    return 0;
}

int scni_item_kind(const yt_node *it)
{
    if (!it || it->kind != YT_MAP)
        return SCNI_ITEM_GROUP;
    int pop = 0;
    for (size_t i = 0; i < it->n; i++) {
        const char *t = it->keys[i]->text;
        const yt_node *v = it->items[i];
        if (yt_key_is(t, "from_csv"))
            return SCNI_ITEM_TABLE;
        if (yt_key_is(t, "seed"))
            pop = 1;
        /* A distribution is a mapping: only a mapping value is looked at
         * closer (and only the last of a key given twice counts). */
        else if (!pop && v->kind == YT_MAP && yt_get(it, t) == v)
            pop = yt_key_is(t, "link") ? has_dist(v, 1) : has_dist_key(t, 0);
    }
    return pop ? SCNI_ITEM_POPULATION : SCNI_ITEM_GROUP;
}

/* A shallow copy of mapping m without the keys `drop1` and `drop2` (may
 * be NULL).  Its arrays are the caller's to free (also on failure); the
 * nodes are m's. */
static int shallow(const yt_node *m, yt_node *out, const char *drop1, const char *drop2)
{
    *out = *m;
    out->n = 0;
    out->keys = dp_calloc(m->n ? m->n : 1, sizeof *out->keys);
    out->items = dp_calloc(m->n ? m->n : 1, sizeof *out->items);
    if (!out->keys || !out->items)
        return DP_ENOMEM;
    for (size_t i = 0; i < m->n; i++) {
        const char *k = m->keys[i]->text;
        if ((drop1 && !strcmp(k, drop1)) || (drop2 && !strcmp(k, drop2)))
            continue;
        out->keys[out->n] = m->keys[i];
        out->items[out->n] = m->items[i];
        out->n++;
    }
    return 0;
}

int scni_conv_population(cv *c, const yt_node *it, size_t item, int64_t *total)
{
    scn_scenario *s = c->s;
    dist d[DK_N];
    memset(d, 0, sizeof d);
    yt_node top = {0}, link = {0};
    char path[300], kp[400];
    scni_group_path(it, item, path, sizeof path);
    unsigned drawn = 0;
    int r = 0;
    int64_t count, seed;
    dp_prefault *pf = NULL;
    if ((r = scni_get_int(c, it, path, "count", 0, 1, 0, SCN_MAX_DEVICES, "devices per group", &count)) < 0 ||
        (r = scni_get_int(c, it, path, "seed", 0, (int64_t)s->training.seed, 0, 9007199254740992.0, "seed",
                          &seed)) < 0)
        return r;
    const yt_node *cn = yt_get(it, "count");
    scni_join(kp, sizeof kp, path, "count");
    if (count == 0 && !(cn && cn->origin))
        return scni_fail(c, cn, kp, "must be >= 1 in a file (0 is allowed only through an override) (got 0)");
    /* The template: `it` without seed and count, each distribution replaced
     * by a representative value (so every key is checked as usual). */
    if (shallow(it, &top, "seed", "count")) {
        r = scni_oom(c);
        goto out;
    }
    const yt_node *lk = yt_get(it, "link");
    if (lk && lk->kind == YT_MAP) {
        if (shallow(lk, &link, NULL, NULL)) {
            r = scni_oom(c);
            goto out;
        }
        for (size_t i = 0; i < top.n; i++)
            if (!strcmp(top.keys[i]->text, "link"))
                top.items[i] = &link;
    }
    for (int k = 0; k < DK_N; k++) {
        const yt_node *n = dk_node(it, k);
        if (!n || n->kind != YT_MAP)
            continue;
        char dp[340], lp[320];
        scni_join(lp, sizeof lp, path, "link");
        scni_join(dp, sizeof dp, dkeys[k].map ? lp : path, dkeys[k].key);
        if ((r = parse_dist(c, k, n, dp, &d[k])) < 0)
            goto out;
        yt_node *m = dkeys[k].map ? &link : &top;
        for (size_t i = 0; i < m->n; i++)
            if (!strcmp(m->keys[i]->text, dkeys[k].key))
                m->items[i] = (yt_node *)d[k].rep;
        drawn |= 1u << k;
    }
    if (!drawn) {
        r = scni_fail(
            c, yt_get_key(it, "seed"), path,
            "seed applies only to a group with a drawn value (a distribution) (got seed with none)");
        goto out;
    }
    size_t first;
    int64_t before = *total;
    if ((r = scni_new_group(c, &first)) < 0 || (r = scni_conv_group(c, &top, item, first, total)) < 0)
        goto out;
    *total = before + count;
    if (*total > SCN_MAX_DEVICES) {
        r = scni_fail(c, cn ? cn : it, kp,
                      "more than %d devices in total (the limit on devices) (got %lld so far)",
                      SCN_MAX_DEVICES, (long long)*total);
        goto out;
    }
    /* Seeds: one stream per drawn key, apart for every group name. */
    uint64_t salt = 1469598103934665603ULL;
    for (const char *p = s->groups[first].name; *p; p++)
        salt = (salt ^ (unsigned char)*p) * 1099511628211ULL;
    for (int k = 0; k < DK_N; k++)
        if (drawn & (1u << k)) {
            if (!(d[k].rng = gsl_rng_alloc(gsl_rng_mt19937))) {
                r = scni_oom(c);
                goto out;
            }
            uint64_t x = mix((uint64_t)seed ^ mix(salt ^ mix((uint64_t)k + 1)));
            unsigned long sd = (unsigned long)((x ^ (x >> 32)) & 0xffffffffu);
            gsl_rng_set(d[k].rng, sd ? sd : 1);
        }
    /* The population's name stays reserved in the name set (its members'
     * names hold '[', which no other group's may, so they cannot clash). */
    if ((r = add_pop(c, SCN_POP_DRAWN, s->groups[first].name, item, first, (uint64_t)seed, drawn)) < 0)
        goto out;
    scn_group tpl = s->groups[first]; /* its heap parts are member 0's */
    const char *base = s->pops[s->n_pops - 1].name;
    const yt_node *bn = yt_get(it, "batch");
    /* the members' groups at once, their pages faulted in beside */
    if (count > 1) {
        if ((r = scni_reserve_groups(c, (size_t)count - 1)) < 0)
            goto out;
        pf = dp_prefault_start(&s->groups[s->n_groups], (size_t)(count - 1) * sizeof *s->groups);
    }
    /* Members 1.. name themselves in one block when they own nothing else:
     * 10^6 names were as many allocations to make and to free. */
    char *pool = NULL, *pool_end = NULL;
    if (count > 1 && !owns_parts(&tpl)) {
        size_t need = 0, lb = strlen(base);
        for (int64_t i = 1; i < count; i++) {
            size_t digits = 1;
            for (int64_t v = i; v >= 10; v /= 10)
                digits++;
            need += lb + digits + 3; /* "base[i]" and its terminator */
        }
        if (!(pool = dp_malloc(need))) {
            r = scni_oom(c);
            goto out;
        }
        s->pops[s->n_pops - 1].names = pool;
        pool_end = pool + need;
    }
    for (int64_t i = 0; i < count; i++) {
        char name[SCN_NAME_MAX + 24];
        dp_indexed_name(name, sizeof name, base, (long long)i);
        size_t gi = first;
        if (i > 0 && (r = scni_new_group(c, &gi)) < 0)
            goto out;
        scn_group *g = &s->groups[gi];
        if (i == 0) {
            char *nm0 = dp_strdup(name);
            if (!nm0) {
                r = scni_oom(c);
                goto out;
            }
            dp_free(g->name); /* the template's name: the population's */
            g->name = nm0;
        } else if (pool && strlen(name) < (size_t)(pool_end - pool)) { /* tpl owns nothing to copy */
            *g = tpl;
            g->name = pool;
            g->pooled = 1;
            size_t len = strlen(name) + 1;
            memcpy(pool, name, len);
            pool += len;
        } else if (group_copy(g, &tpl, name)) {
            r = scni_oom(c);
            goto out;
        }
        g->count = 1;
        for (int k = 0; k < DK_N; k++) {
            if (!(drawn & (1u << k)))
                continue;
            double v = draw(&d[k]);
            if (k == DK_SITE) {
                g->site = (int)v;
                continue;
            }
            if (!in_range(k, v)) {
                char what[SCN_NAME_MAX + 64];
                snprintf(what, sizeof what, "the value drawn for %s", name);
                scni_join(kp, sizeof kp, path, dkeys[k].map ? "link" : dkeys[k].key);
                r = range_fail(c, k, d[k].node, kp, what, v);
                goto out;
            }
            *dk_field(g, k) = v;
        }
        if ((drawn & (1u << DK_MEMORY)) && (r = scni_check_memory(c, g, bn, path)) < 0)
            goto out;
        if (g->compute == SCN_COMPUTE_DERIVED &&
            !(scn_batch_time(s, g, 1) >= scni_unit_floor(SCN_UNIT_TIME))) {
            r = scni_fail(c, d[DK_PEAK_FLOPS].node ? d[DK_PEAK_FLOPS].node : d[DK_EFFICIENCY].node, path,
                          "the time of one sample drawn for %s is below 1 ns (got %.3g s)", name,
                          scn_batch_time(s, g, 1));
            goto out;
        }
    }
    s->pops[s->n_pops - 1].n = s->n_groups - first;
    if (count == 0) /* skipped through an override: the group stays, count 0 */
        s->groups[first].count = 0;
out:
    dp_prefault_wait(pf);
    for (int k = 0; k < DK_N; k++)
        dist_free(&d[k]);
    dp_free(top.keys);
    dp_free(top.items);
    dp_free(link.keys);
    dp_free(link.items);
    return r;
}

/* ---- device tables ----------------------------------------------------- */

/* One CSV field starting at p (RFC 4180: a field in double quotes may hold
 * commas, and "" for a quote).  The field's text is written to out (NUL
 * ended, up to out_len - 1 bytes); *quoted set; returns where the field
 * ends (at ',', '\n', '\r' or end), or NULL for an unterminated quote or
 * a field longer than out_len - 1 bytes. */
static const char *csv_field(const char *p, const char *end, char *out, size_t out_len, int *quoted)
{
    size_t k = 0;
    *quoted = 0;
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    if (p < end && *p == '"') {
        *quoted = 1;
        for (p++;; p++) {
            if (p >= end)
                return NULL;
            if (*p == '"') {
                if (p + 1 < end && p[1] == '"')
                    p++;
                else {
                    p++;
                    break;
                }
            }
            if (k + 1 >= out_len)
                return NULL;
            out[k++] = *p;
        }
        while (p < end && (*p == ' ' || *p == '\t'))
            p++;
    } else {
        while (p < end && *p != ',' && *p != '\n' && *p != '\r') {
            if (k + 1 >= out_len)
                return NULL;
            out[k++] = *p++;
        }
        while (k > 0 && (out[k - 1] == ' ' || out[k - 1] == '\t'))
            k--;
    }
    out[k] = '\0';
    return p;
}

#define CSV_MAX_COLS  64
#define CSV_MAX_FIELD 4096

typedef struct csv_col {
    char *head;      /* as written */
    const char *key; /* the group key (after the dot for a nested one) */
    int sub;         /* -1: a key of the group; else index of its nested mapping */
    yt_node k, v;    /* the key and value nodes a row uses */
    char *text;      /* the value's room (CSV_MAX_FIELD) */
} csv_col;

typedef struct csv_sub {
    char *name;
    yt_node key, map;
    yt_node **keys, **items;
} csv_sub;

typedef struct csv_tab {
    csv_col col[CSV_MAX_COLS];
    csv_sub sub[CSV_MAX_COLS];
    size_t ncol, nsub;
    yt_node row;
    yt_node **keys, **items;
} csv_tab;

static void tab_free(csv_tab *t)
{
    for (size_t i = 0; i < t->ncol; i++) {
        dp_free(t->col[i].head);
        dp_free(t->col[i].text);
    }
    for (size_t i = 0; i < t->nsub; i++) {
        dp_free(t->sub[i].name);
        dp_free(t->sub[i].keys);
        dp_free(t->sub[i].items);
    }
    dp_free(t->keys);
    dp_free(t->items);
}

/* Position (1-based column) of p on the line starting at ls. */
static int col_of(const char *ls, const char *p)
{
    return (int)(p - ls) + 1;
}

/* Read the header line [p, end) of line number `line` into t. */
static int tab_header(cv *c, csv_tab *t, const char *p, const char *end, int line, const char *kp)
{
    const char *ls = p;
    char f[CSV_MAX_FIELD];
    for (;;) {
        int quoted;
        const char *start = p;
        yt_node at = {.kind = YT_SCALAR, .line = line, .column = col_of(ls, start), .text = f};
        if (t->ncol == CSV_MAX_COLS)
            return scni_fail(c, &at, kp, "the header has more than %d columns", CSV_MAX_COLS);
        if (!(p = csv_field(p, end, f, sizeof f, &quoted)))
            return scni_fail(c, &at, kp, "unterminated quote or a column name over %d bytes",
                             CSV_MAX_FIELD - 1);
        char *dot = strchr(f, '.');
        if (!f[0] || (dot && (dot == f || !dot[1] || strchr(dot + 1, '.'))))
            return scni_fail(c, &at, kp,
                             "each column names a device-group key, or a key of its nested mapping as "
                             "link.up (got '%s')",
                             f);
        for (size_t i = 0; i < t->ncol; i++)
            if (!strcmp(t->col[i].head, f))
                return scni_fail(c, &at, kp, "column '%s' appears twice (also column %zu)", f, i + 1);
        csv_col *cl = &t->col[t->ncol++]; /* counted first: tab_free frees what it holds */
        if (!(cl->head = dp_strdup(f)) || !(cl->text = dp_malloc(CSV_MAX_FIELD)))
            return scni_oom(c);
        cl->sub = -1;
        cl->key = cl->head;
        if (dot) {
            size_t len = (size_t)(dot - f), j;
            for (j = 0; j < t->nsub; j++)
                if (strlen(t->sub[j].name) == len && !strncmp(t->sub[j].name, f, len))
                    break;
            if (j == t->nsub) {
                t->nsub++;
                if (!(t->sub[j].name = dp_malloc(len + 1)) ||
                    !(t->sub[j].keys = dp_calloc(CSV_MAX_COLS, sizeof(yt_node *))) ||
                    !(t->sub[j].items = dp_calloc(CSV_MAX_COLS, sizeof(yt_node *))))
                    return scni_oom(c);
                memcpy(t->sub[j].name, f, len);
                t->sub[j].name[len] = '\0';
                t->sub[j].key = (yt_node){
                    .kind = YT_SCALAR, .line = line, .column = at.column, .plain = 1, .text = t->sub[j].name};
            }
            cl->sub = (int)j;
            cl->key = cl->head + len + 1;
        }
        cl->k = (yt_node){.kind = YT_SCALAR, .line = line, .column = at.column, .plain = 1, .text = cl->head};
        if (dot)
            cl->k.text = cl->head + (dot - f) + 1;
        if (p >= end || *p != ',')
            break;
        p++;
    }
    if (!(t->keys = dp_calloc(t->ncol + t->nsub, sizeof *t->keys)) ||
        !(t->items = dp_calloc(t->ncol + t->nsub, sizeof *t->items)))
        return scni_oom(c);
    return 0;
}

/* Fill t->row from the data line [p, end): one mapping of the row's
 * non-empty cells (a nested mapping per dotted prefix). */
static int tab_row(cv *c, csv_tab *t, const char *p, const char *end, int line, const char *kp)
{
    const char *ls = p;
    t->row = (yt_node){.kind = YT_MAP, .line = line, .column = 1, .keys = t->keys, .items = t->items};
    for (size_t j = 0; j < t->nsub; j++)
        t->sub[j].map = (yt_node){
            .kind = YT_MAP, .line = line, .column = 1, .keys = t->sub[j].keys, .items = t->sub[j].items};
    size_t i = 0;
    for (;; i++) {
        const char *start = p;
        yt_node at = {.kind = YT_MAP, .line = line, .column = col_of(ls, start)};
        if (i == t->ncol)
            return scni_fail(c, &at, kp, "row has more fields than the header's %zu columns", t->ncol);
        csv_col *cl = &t->col[i];
        int quoted;
        if (!(p = csv_field(p, end, cl->text, CSV_MAX_FIELD, &quoted)))
            return scni_fail(c, &at, kp, "unterminated quote or a field over %d bytes", CSV_MAX_FIELD - 1);
        if (cl->text[0] || quoted) {
            cl->v = (yt_node){
                .kind = YT_SCALAR, .line = line, .column = at.column, .plain = !quoted, .text = cl->text};
            yt_node *m = cl->sub < 0 ? &t->row : &t->sub[cl->sub].map;
            if (cl->sub >= 0 && m->n == 0) { /* the nested mapping's first cell: add it to the row */
                m->column = at.column;
                t->row.keys[t->row.n] = &t->sub[cl->sub].key;
                t->row.items[t->row.n++] = m;
            }
            m->keys[m->n] = &cl->k;
            m->items[m->n++] = &cl->v;
        }
        if (p >= end || *p != ',')
            break;
        p++;
    }
    if (i + 1 < t->ncol) {
        yt_node at = {.kind = YT_MAP, .line = line, .column = col_of(ls, p)};
        return scni_fail(c, &at, kp, "row has %zu fields, the header %zu columns", i + 1, t->ncol);
    }
    return 0;
}

int scni_conv_table(cv *c, const yt_node *it, size_t item, int64_t *total)
{
    static const char *const keys[] = {"from_csv", NULL};
    char ip[40], kp[300], g[80];
    int r;
    snprintf(ip, sizeof ip, "devices[%zu]", item);
    const yt_node *fn;
    if ((r = scni_check_map(c, it, ip, keys, keys)) < 0 ||
        (r = scni_get_scalar(c, it, ip, "from_csv", 1, &fn)) < 0)
        return r;
    scni_join(kp, sizeof kp, ip, "from_csv");
    if (strlen(fn->text) > 3000)
        return scni_fail(c, fn, kp, "file name too long (got %s)", scni_got(fn, g, sizeof g));
    const scn_file *sf;
    char shown[4200];
    if ((r = scni_file_contents(c, fn, kp, "device table", fn->text, &sf, shown, sizeof shown)) < 0)
        return r;
    const char *nul = memchr(sf->data, '\0', sf->len);
    if (nul) { /* a cell would be cut there without a word: refuse the table */
        size_t line = 1, col = 1;
        for (const char *q = sf->data; q < nul; q++)
            *q == '\n' ? (line++, col = 1) : col++;
        return scni_fail(c, fn, kp, "device table '%s' holds a NUL byte at line %zu, column %zu", shown, line,
                         col);
    }
    /* A scenario may name any file: one that is not a CSV table by its
     * first line is refused without quoting a byte of it. */
    long not_csv = dp_csv_sniff(sf->data, sf->len);
    if (not_csv)
        return scni_fail(c, fn, kp,
                         "device table '%s' is not a CSV table: its line %ld is not a header of column names",
                         shown, not_csv);
    csv_tab *t = dp_calloc(1, sizeof *t);
    if (!t)
        return scni_oom(c);
    const char *scen = c->file;
    const char *p = sf->data, *end = sf->data + sf->len;
    size_t first = c->s->n_groups;
    int line = 0, have_header = 0;
    c->file = shown; /* messages about cells name the table */
    while (p < end && r >= 0) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        line++;
        const char *q = p;
        while (q < le && (*q == ' ' || *q == '\t' || *q == '\r'))
            q++;
        if (q < le && *q != '#') { /* blank lines and # comments are skipped */
            const char *ce = le;
            if (ce > p && ce[-1] == '\r')
                ce--;
            if (!have_header) {
                r = tab_header(c, t, p, ce, line, kp);
                have_header = 1;
            } else {
                size_t gi;
                if ((r = tab_row(c, t, p, ce, line, kp)) >= 0 && (r = scni_new_group(c, &gi)) >= 0)
                    r = scni_conv_group(c, &t->row, item, gi, total);
            }
        }
        p = nl ? nl + 1 : end;
    }
    c->file = scen;
    tab_free(t);
    dp_free(t);
    if (r < 0)
        return r;
    if (c->s->n_groups == first)
        return scni_fail(c, fn, kp, "device table '%s' has no rows%s", shown,
                         have_header ? " below its header" : "");
    return add_pop(c, SCN_POP_TABLE, fn->text, item, first, 0, 0);
}
