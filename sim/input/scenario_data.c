/* scenario_data.c: where the dataset lives (scenarios/README.md, "Data
 * where it lives"): `dataset.parts` (which samples sit at the server, at a
 * site's storage or on a device group's members, with replicas),
 * `dataset.storage` (a site's storage read rate, latency, a failure) and
 * `dataset.caches` (a cache per site: capacity, policy, read rate).  Read
 * after the devices (a part may name a device group); every value checked
 * with the loader's FILE:LINE:COLUMN messages.  Nothing here when the keys
 * are absent: s->data stays NULL and the dataset is at the server. */
#include "scenario_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const scn_cache_policy_names[] = {"lru", "planned", NULL};

/* A holder name: the server, a site or a device group (or a drawn
 * population, all its groups).  *at, *idx, *ng as in scn_part; sites_only
 * refuses groups (replicas).  0 or DP_EINPUT. */
static int holder(cv *c, const yt_node *n, const char *kp, int sites_only, int *at, int *idx, int *ng)
{
    const scn_scenario *s = c->s;
    char g[80];
    if (!n || n->kind != YT_SCALAR || !n->text[0])
        return scni_fail(c, n, kp, "expected `server`, a site or a device group (got %s)",
                         scni_got(n, g, sizeof g));
    if (strcmp(n->text, "server") == 0) {
        *at = SCN_AT_SERVER, *idx = -1, *ng = 0;
        return 0;
    }
    int si = scni_site_index(s, n->text), gi = -1, gn = 0;
    for (size_t i = 0; i < s->n_groups && gi < 0; i++)
        if (s->groups[i].count > 0 && !s->groups[i].pop && strcmp(s->groups[i].name, n->text) == 0)
            gi = (int)i, gn = 1;
    for (size_t i = 0; i < s->n_pops && gi < 0; i++)
        if (s->pops[i].kind == SCN_POP_DRAWN && strcmp(s->pops[i].name, n->text) == 0)
            gi = (int)s->pops[i].first, gn = (int)s->pops[i].n;
    if (si >= 0 && gi >= 0)
        return scni_fail(c, n, kp, "both a site and a device group are named so: rename one (got %s)",
                         scni_got(n, g, sizeof g));
    if (si >= 0) {
        *at = SCN_AT_SITE, *idx = si, *ng = 0;
        return 0;
    }
    if (gi >= 0 && !sites_only) {
        *at = SCN_AT_GROUP, *idx = gi, *ng = gn;
        return 0;
    }
    if (gi >= 0)
        return scni_fail(c, n, kp, "a replica is kept at the server or a site, not on devices (got %s)",
                         scni_got(n, g, sizeof g));
    if (s->n_sites)
        return scni_unknown_site(c, n, kp);
    return scni_fail(c, n, kp, "unknown holder: expected `server`, a site or a device group (got %s)",
                     scni_got(n, g, sizeof g));
}

/* `samples:` of a part: a whole number, or a percentage of the dataset
 * (*pct set, *count untouched). */
static int part_samples(cv *c, const yt_node *v, const char *kp, int64_t *count, double *pct)
{
    char g[80], *end;
    const char *t = v && v->kind == YT_SCALAR ? v->text : "";
    size_t len = strlen(t);
    *pct = -1;
    if (len > 1 && t[len - 1] == '%') {
        double p = strtod(t, &end);
        if (end == t + len - 1 && p > 0 && p <= 100) {
            *pct = p;
            return 0;
        }
        return scni_fail(c, v, kp, "a percentage must be above 0%% and at most 100%% (got %s)",
                         scni_got(v, g, sizeof g));
    }
    double x = strtod(t, &end);
    if (len && *end == '\0' && x >= 1 && x <= SCN_MAX_SAMPLES && x == floor(x)) {
        *count = (int64_t)x;
        return 0;
    }
    return scni_fail(c, v, kp,
                     "expected a whole number of samples (at least 1) or a percentage like 40%% (got %s)",
                     scni_got(v, g, sizeof g));
}

static int conv_parts(cv *c, const yt_node *l, scn_data *dd)
{
    scn_scenario *s = c->s;
    char g[80], kp[300];
    int64_t D = s->dataset.samples;
    if (l->kind != YT_SEQ || l->n == 0)
        return scni_fail(c, l, "dataset.parts", "expected a list of {at, samples} (got %s)",
                         scni_got(l, g, sizeof g));
    if (!(dd->parts = dp_calloc(l->n, sizeof *dd->parts)))
        return scni_oom(c);
    double *pct = dp_calloc(l->n, sizeof *pct);
    if (!pct)
        return scni_oom(c);
    int64_t counts = 0;
    double psum = 0;
    int r = 0;
    for (size_t i = 0; i < l->n && !r; i++) {
        static const char *const keys[] = {"at", "samples", "replicas", NULL};
        static const char *const req[] = {"at", "samples", NULL};
        const yt_node *it = l->items[i], *v[3], *k[3];
        scn_part *p = &dd->parts[i];
        dd->n_parts = i + 1;
        snprintf(kp, sizeof kp, "dataset.parts[%zu]", i);
        if ((r = scni_check_map_at(c, it, kp, keys, req, v, k)) < 0)
            break;
        char kk[320];
        snprintf(kk, sizeof kk, "%s.at", kp);
        if ((r = holder(c, v[0], kk, 0, &p->at, &p->idx, &p->n_groups)) < 0)
            break;
        snprintf(kk, sizeof kk, "%s.samples", kp);
        if ((r = part_samples(c, v[1], kk, &p->samples, &pct[i])) < 0)
            break;
        if (pct[i] > 0)
            psum += pct[i];
        else
            counts += p->samples;
        const yt_node *rl = v[2];
        if (yt_is_null(rl))
            continue;
        snprintf(kk, sizeof kk, "%s.replicas", kp);
        if (rl->kind != YT_SEQ)
            r = scni_fail(c, rl, kk, "expected a list of sites or `server` (got %s)",
                          scni_got(rl, g, sizeof g));
        else if (p->at == SCN_AT_GROUP)
            r = scni_fail(c, rl, kk,
                          "a part held on devices has no replicas (give the part to a site) (got %s)",
                          scni_got(rl, g, sizeof g));
        else if (!(p->replicas = dp_calloc(rl->n ? rl->n : 1, sizeof *p->replicas)))
            r = scni_oom(c);
        for (size_t j = 0; !r && j < rl->n; j++) {
            int at, idx, ng;
            char kj[340];
            snprintf(kj, sizeof kj, "%s[%zu]", kk, j);
            if ((r = holder(c, rl->items[j], kj, 1, &at, &idx, &ng)) < 0)
                break;
            if ((at == p->at && idx == p->idx))
                r = scni_fail(c, rl->items[j], kj, "a replica where the part already is (got %s)",
                              scni_got(rl->items[j], g, sizeof g));
            for (size_t q = 0; !r && q < p->n_replicas; q++)
                if (p->replicas[q] == idx)
                    r = scni_fail(c, rl->items[j], kj, "a replica named twice (got %s)",
                                  scni_got(rl->items[j], g, sizeof g));
            p->replicas[p->n_replicas++] = idx;
        }
    }
    if (!r) {
        /* percentages of D, rounded down; what rounding leaves goes one
         * sample each to the parts given as percentages, in order */
        double want = (double)(D - counts);
        if (counts > D || fabs(psum / 100.0 * (double)D - want) >= 0.5)
            r = scni_fail(
                c, l, "dataset.parts",
                "the parts must add up to the dataset's %lld samples (got %lld samples and %.10g%%: %.10g "
                "samples)",
                (long long)D, (long long)counts, psum, (double)counts + psum / 100.0 * (double)D);
        int64_t given = counts;
        for (size_t i = 0; !r && i < l->n; i++)
            if (pct[i] > 0)
                given += dd->parts[i].samples = (int64_t)floor(pct[i] / 100.0 * (double)D);
        for (size_t i = 0; !r && i < l->n && given < D; i++)
            if (pct[i] > 0)
                dd->parts[i].samples++, given++;
        for (size_t i = 0; !r && i < l->n; i++)
            if (dd->parts[i].samples < 1) {
                snprintf(kp, sizeof kp, "dataset.parts[%zu].samples", i);
                r = scni_fail(c, yt_get(l->items[i], "samples"), kp, "holds no sample of the %lld (got %s)",
                              (long long)D, scni_got(yt_get(l->items[i], "samples"), g, sizeof g));
            }
    }
    dp_free(pct);
    return r < 0 ? r : 0;
}

static int site_key(cv *c, const yt_node *v, const char *kp, int *site)
{
    char g[80];
    if (!v || v->kind != YT_SCALAR)
        return scni_fail(c, v, kp, "expected a site name (got %s)", scni_got(v, g, sizeof g));
    if ((*site = scni_site_index(c->s, v->text)) < 0)
        return scni_unknown_site(c, v, kp);
    return 0;
}

/* `storage:` and `caches:`: lists of per-site entries (is_cache picks which). */
static int conv_sitelist(cv *c, const yt_node *l, const char *path, int is_cache, scn_data *dd)
{
    static const char *const skeys[] = {"site", "read", "latency", "fails_at", NULL};
    static const char *const ckeys[] = {"site", "capacity", "policy", "read", NULL};
    static const char *const sreq[] = {"site", NULL};
    static const char *const creq[] = {"site", "capacity", NULL};
    char g[80], kp[300], kk[320];
    if (l->kind != YT_SEQ)
        return scni_fail(c, l, path, "expected a list of per-site entries (got %s)",
                         scni_got(l, g, sizeof g));
    for (size_t i = 0; i < l->n; i++) {
        const yt_node *it = l->items[i], *v[4], *k[4];
        int r, site = -1;
        snprintf(kp, sizeof kp, "%s[%zu]", path, i);
        if ((r = scni_check_map_at(c, it, kp, is_cache ? ckeys : skeys, is_cache ? creq : sreq, v, k)) < 0)
            return r;
        snprintf(kk, sizeof kk, "%s.site", kp);
        if ((r = site_key(c, v[0], kk, &site)) < 0)
            return r;
        if (is_cache ? dd->cache[site].site >= 0 : dd->store[site].site >= 0)
            return scni_fail(c, v[0], kk, "a second entry for this site (got %s)",
                             scni_got(v[0], g, sizeof g));
        if (is_cache) {
            scn_cache *x = &dd->cache[site];
            x->site = site;
            if ((r = scni_pos_at(c, it, v[1], kp, "capacity", SCN_UNIT_BYTES, 1, 0, 1, 1e18,
                                 &x->capacity_bytes)) < 0 ||
                (r = scni_enum_at(c, it, v[2], kp, "policy", scn_cache_policy_names, SCN_CACHE_LRU,
                                  &x->policy)) < 0 ||
                (r = scni_pos_at(c, it, v[3], kp, "read", SCN_UNIT_BANDWIDTH, 0, INFINITY, 0, 1e300,
                                 &x->read_Bps)) < 0)
                return r;
            dd->any_cache |= x->capacity_bytes > 0;
        } else {
            scn_store *x = &dd->store[site];
            x->site = site;
            if ((r = scni_pos_at(c, it, v[1], kp, "read", SCN_UNIT_BANDWIDTH, 0, INFINITY, 0, 1e300,
                                 &x->read_Bps)) < 0 ||
                (r = scni_pos_at(c, it, v[2], kp, "latency", SCN_UNIT_TIME, 0, 0, 1, 1e9, &x->latency_s)) <
                    0 ||
                (r = scni_pos_at(c, it, v[3], kp, "fails_at", SCN_UNIT_TIME, 0, INFINITY, 1, 1e15,
                                 &x->fails_at_s)) < 0)
                return r;
            dd->any_failure |= isfinite(x->fails_at_s);
        }
    }
    return 0;
}

void scni_free_data(scn_scenario *s)
{
    scn_data *dd = s->data;
    if (!dd)
        return;
    for (size_t i = 0; i < dd->n_parts; i++)
        dp_free(dd->parts[i].replicas);
    dp_free(dd->parts);
    dp_free(dd->store);
    dp_free(dd->cache);
    dp_free(dd);
    s->data = NULL;
}

int scni_conv_data(cv *c, const yt_node *d)
{
    scn_scenario *s = c->s;
    const yt_node *parts = yt_get(d, "parts"), *st = yt_get(d, "storage"), *ca = yt_get(d, "caches");
    if (yt_is_null(parts) && yt_is_null(st) && yt_is_null(ca))
        return 0;
    scn_data *dd = dp_calloc(1, sizeof *dd);
    size_t ns = s->n_sites ? s->n_sites : 1;
    if (!dd || !(s->data = dd, dd->store = dp_calloc(ns, sizeof *dd->store)) ||
        !(dd->cache = dp_calloc(ns, sizeof *dd->cache)))
        return scni_oom(c);
    for (size_t i = 0; i < ns; i++) {
        dd->store[i] = (scn_store){-1, INFINITY, 0, INFINITY};
        dd->cache[i] = (scn_cache){-1, 0, SCN_CACHE_LRU, INFINITY};
    }
    int r;
    if (!yt_is_null(parts)) {
        if ((r = conv_parts(c, parts, dd)) < 0)
            return r;
    } else { /* storage or caches alone: the dataset is at the server */
        if (!(dd->parts = dp_calloc(1, sizeof *dd->parts)))
            return scni_oom(c);
        dd->parts[0] = (scn_part){SCN_AT_SERVER, -1, 0, s->dataset.samples, 0, NULL};
        dd->n_parts = 1;
    }
    if (!yt_is_null(st) && (r = conv_sitelist(c, st, "dataset.storage", 0, dd)) < 0)
        return r;
    if (!yt_is_null(ca) && (r = conv_sitelist(c, ca, "dataset.caches", 1, dd)) < 0)
        return r;
    return 0;
}

void scni_print_data(const scn_scenario *s, FILE *out)
{
    const scn_data *dd = s->data;
    if (!dd)
        return;
    char a[64];
    fprintf(out, "data    ");
    for (size_t i = 0; i < dd->n_parts; i++) {
        const scn_part *p = &dd->parts[i];
        const char *at = p->at == SCN_AT_SERVER ? "server"
                         : p->at == SCN_AT_SITE ? s->sites[p->idx]
                                                : s->groups[p->idx].name;
        fprintf(out, "%s %lld at %s%s", i ? "," : "", (long long)p->samples, at,
                p->at == SCN_AT_GROUP ? " (its devices)" : "");
        for (size_t r = 0; r < p->n_replicas; r++)
            fprintf(out, "%s%s",
                    r ? ", " : " (replicas: ", p->replicas[r] < 0 ? "server" : s->sites[p->replicas[r]]);
        if (p->n_replicas)
            fprintf(out, ")");
    }
    fprintf(out, "\n");
    for (size_t k = 0; k < s->n_sites; k++) {
        const scn_store *x = &dd->store[k];
        const scn_cache *c = &dd->cache[k];
        if (x->site >= 0) {
            scn_format_quantity(x->read_Bps, SCN_UNIT_BANDWIDTH, a, sizeof a);
            fprintf(out, "storage  %s: read %s", s->sites[k], isfinite(x->read_Bps) ? a : "unlimited");
            if (isfinite(x->fails_at_s))
                fprintf(out, ", fails at %g s", x->fails_at_s);
            fprintf(out, "\n");
        }
        if (c->site >= 0) {
            fprintf(out, "cache    %s: %.0f bytes (%lld samples), %s\n", s->sites[k], c->capacity_bytes,
                    (long long)floor(c->capacity_bytes / s->dataset.sample_bytes),
                    scn_cache_policy_names[c->policy]);
        }
    }
}
