/* scenario_sections.c: a scenario's sections, one converter each, and
 * the devices (scenario.c lists the loader's files). */
#include "scenario.h"
#include "scenario_impl.h"
#include "yamltree.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- sections ---------------------------------------------------------- */

static int conv_model(cv *c, const yt_node *root)
{
    static const char *const keys[] = {"name",
                                       "params",
                                       "bytes_per_param",
                                       "flops_per_sample",
                                       "train_flops_per_sample",
                                       "state_factor",
                                       "activation_bytes_per_sample",
                                       NULL};
    static const char *const req[] = {"params", "flops_per_sample", NULL};
    scn_scenario *s = c->s;
    const yt_node *m = yt_get(root, "model");
    int r;
    if ((r = scni_check_map(c, m, "model", keys, req)) < 0)
        return r;
    if ((r = scni_get_text(c, m, "model", "name", "model", &s->model.name)) < 0)
        return r;
    if ((r = scni_get_pos(c, m, "model", "params", SCN_UNIT_NUMBER, 1, 0, 0, SCN_MAX_PARAMS,
                          &s->model.params)) < 0)
        return r;
    if ((r = scni_get_pos(c, m, "model", "bytes_per_param", SCN_UNIT_BYTES, 0, 4, 0, 64,
                          &s->model.bytes_per_param)) < 0)
        return r;
    if ((r = scni_get_pos(c, m, "model", "flops_per_sample", SCN_UNIT_FLOPS, 1, 0, 0, 1e21,
                          &s->model.flops_per_sample)) < 0)
        return r;
    if ((r = scni_get_pos(c, m, "model", "train_flops_per_sample", SCN_UNIT_FLOPS, 0,
                          6 * s->model.flops_per_sample, 0, 1e22, &s->model.train_flops_per_sample)) < 0)
        return r;
    if ((r = scni_get_pos(c, m, "model", "state_factor", SCN_UNIT_NUMBER, 0, 4, 0, 1000,
                          &s->model.state_factor)) < 0)
        return r;
    if ((r = scni_get_pos(c, m, "model", "activation_bytes_per_sample", SCN_UNIT_BYTES, 0, 0, 1, 1e15,
                          &s->model.activation_bytes_per_sample)) < 0)
        return r;
    s->model.model_bytes = s->model.params * s->model.bytes_per_param;
    return 0;
}

static int conv_dataset_training(cv *c, const yt_node *root)
{
    static const char *const dkeys[] = {"name",   "samples", "sample_bytes", "parts", "storage",
                                        "caches", NULL};
    static const char *const dreq[] = {"samples", "sample_bytes", NULL};
    static const char *const tkeys[] = {"epochs", "seed", NULL};
    static const char *const treq[] = {"epochs", NULL};
    scn_scenario *s = c->s;
    const yt_node *d = yt_get(root, "dataset"), *n;
    int r;
    if ((r = scni_check_map(c, d, "dataset", dkeys, dreq)) < 0)
        return r;
    if ((r = scni_get_text(c, d, "dataset", "name", "dataset", &s->dataset.name)) < 0)
        return r;
    if ((r = scni_get_int(c, d, "dataset", "samples", 1, 0, 1, SCN_MAX_SAMPLES, "dataset samples",
                          &s->dataset.samples)) < 0)
        return r;
    if ((r = scni_get_pos(c, d, "dataset", "sample_bytes", SCN_UNIT_BYTES, 1, 0, 0, SCN_MAX_SAMPLE_BYTES,
                          &s->dataset.sample_bytes)) < 0)
        return r;

    const yt_node *t = yt_get(root, "training");
    if ((r = scni_check_map(c, t, "training", tkeys, treq)) < 0)
        return r;
    int64_t v;
    if ((r = scni_get_int(c, t, "training", "epochs", 1, 0, 1, SCN_MAX_EPOCHS, "epochs", &v)) < 0)
        return r;
    s->training.epochs = (int)v;
    s->training.seed = 1;
    if ((r = scni_get_scalar(c, t, "training", "seed", 0, &n)) < 0)
        return r;
    if (r) {
        /* All 64 bits: parsed as an integer, not through a double. */
        const char *p = n->text;
        char *end;
        errno = 0;
        unsigned long long u = strtoull(p, &end, 10);
        char g[80];
        if (!(*p >= '0' && *p <= '9') || *end || errno == ERANGE)
            return scni_fail(c, n, "training.seed", "must be a whole number from 0 to 2^64-1 (got %s)",
                             scni_got(n, g, sizeof g));
        s->training.seed = (uint64_t)u;
    }
    return 0;
}

int scni_site_index(const scn_scenario *s, const char *name)
{
    for (size_t i = 0; i < s->n_sites; i++)
        if (strcmp(s->sites[i], name) == 0)
            return (int)i;
    return -1;
}

int scni_unknown_site(cv *c, const yt_node *n, const char *kp)
{
    scn_scenario *s = c->s;
    char have[300] = "", g[80];
    for (size_t i = 0; i < s->n_sites && strlen(have) + strlen(s->sites[i]) + 3 < sizeof have; i++) {
        if (i)
            strcat(have, ", ");
        strcat(have, s->sites[i]);
    }
    if (s->n_sites == 0)
        return scni_fail(c, n, kp, "unknown site: the scenario has no `sites` list (got %s)",
                         scni_got(n, g, sizeof g));
    const char *near = yt_nearest(n->text, (const char *const *)s->sites, s->n_sites);
    if (near)
        return scni_fail(c, n, kp, "unknown site, did you mean '%s'? (have: %s) (got %s)", near, have,
                         scni_got(n, g, sizeof g));
    return scni_fail(c, n, kp, "unknown site (have: %s) (got %s)", have, scni_got(n, g, sizeof g));
}

static int conv_sites(cv *c, const yt_node *root)
{
    scn_scenario *s = c->s;
    const yt_node *l = yt_get(root, "sites");
    char g[80];
    if (yt_is_null(l))
        return 0;
    if (l->kind != YT_SEQ)
        return scni_fail(c, l, "sites", "expected a list of sites (got %s)", scni_got(l, g, sizeof g));
    if (l->n > SCN_MAX_SITES)
        return scni_fail(c, l, "sites", "at most %d sites (got %zu)", SCN_MAX_SITES, l->n);
    if (!(s->sites = dp_calloc(l->n ? l->n : 1, sizeof *s->sites)))
        return scni_oom(c);
    for (size_t i = 0; i < l->n; i++) {
        const yt_node *it = l->items[i], *nm = it;
        char kp[300];
        snprintf(kp, sizeof kp, "sites[%zu]", i);
        if (it->kind == YT_MAP) {
            static const char *const keys[] = {"name", NULL};
            int r;
            if ((r = scni_check_map(c, it, kp, keys, keys)) < 0)
                return r;
            if ((r = scni_get_scalar(c, it, kp, "name", 1, &nm)) < 0)
                return r;
            size_t kl = strlen(kp);
            snprintf(kp + kl, sizeof kp - kl, ".name");
        } else if (it->kind != YT_SCALAR) {
            return scni_fail(c, it, kp, "expected a site name or {name: ...} (got %s)",
                             scni_got(it, g, sizeof g));
        }
        if (scni_check_name(c, nm, kp))
            return DP_EINPUT;
        if (scni_site_index(s, nm->text) >= 0)
            return scni_fail(c, nm, kp, "duplicate site name (got %s)", scni_got(nm, g, sizeof g));
        if (scni_dup_str(c, &s->sites[i], nm->text))
            return DP_ENOMEM;
        s->n_sites = i + 1;
    }
    return 0;
}

const char *const scn_sharing_names[] = {"maxmin", "rtt", NULL};

static int conv_server_network(cv *c, const yt_node *root)
{
    static const char *const skeys[] = {"nic", "aggregate_rate", "site", NULL};
    static const char *const nickeys[] = {"up", "down", NULL};
    static const char *const nkeys[] = {"tcp_window", "sharing", NULL};
    static const char *const ikeys[] = {"bandwidth", "latency", NULL};
    scn_scenario *s = c->s;
    int r;
    s->server.nic_up_Bps = s->server.nic_down_Bps = INFINITY;
    s->server.aggregate_Bps = INFINITY;
    s->server.site = s->n_sites ? 0 : -1;
    const yt_node *sv = yt_get(root, "server"), *n;
    if (!yt_is_null(sv)) {
        if ((r = scni_check_map(c, sv, "server", skeys, NULL)) < 0)
            return r;
        const yt_node *nic = yt_get(sv, "nic");
        if (!yt_is_null(nic)) {
            if ((r = scni_check_map(c, nic, "server.nic", nickeys, NULL)) < 0)
                return r;
            if ((r = scni_get_pos(c, nic, "server.nic", "up", SCN_UNIT_BANDWIDTH, 0, INFINITY, 0, 1e300,
                                  &s->server.nic_up_Bps)) < 0)
                return r;
            if ((r = scni_get_pos(c, nic, "server.nic", "down", SCN_UNIT_BANDWIDTH, 0, INFINITY, 0, 1e300,
                                  &s->server.nic_down_Bps)) < 0)
                return r;
        }
        if ((r = scni_get_pos(c, sv, "server", "aggregate_rate", SCN_UNIT_RATE, 0, INFINITY, 0, 1e300,
                              &s->server.aggregate_Bps)) < 0)
            return r;
        if ((r = scni_get_scalar(c, sv, "server", "site", 0, &n)) < 0)
            return r;
        if (r && (s->server.site = scni_site_index(s, n->text)) < 0)
            return scni_unknown_site(c, n, "server.site");
    }
    const yt_node *nw = yt_get(root, "network");
    if (!yt_is_null(nw)) {
        if ((r = scni_check_map(c, nw, "network", nkeys, NULL)) < 0)
            return r;
        if ((r = scni_get_pos(c, nw, "network", "tcp_window", SCN_UNIT_BYTES, 0, 0, 1, 1e15,
                              &s->network.tcp_window_bytes)) < 0)
            return r;
        if ((r = scni_get_enum(c, nw, "network", "sharing", scn_sharing_names, SCN_SHARE_MAXMIN,
                               &s->network.sharing)) < 0)
            return r;
    }
    const yt_node *ic = yt_get(root, "interconnect");
    if (!yt_is_null(ic)) {
        if ((r = scni_check_map(c, ic, "interconnect", ikeys, NULL)) < 0)
            return r;
        if ((r = scni_get_pos(c, ic, "interconnect", "bandwidth", SCN_UNIT_BANDWIDTH, 0, 0, 1, 1e300,
                              &s->interconnect.bandwidth_Bps)) < 0)
            return r;
        if ((r = scni_get_pos(c, ic, "interconnect", "latency", SCN_UNIT_TIME, 0, 0, 1, 1e6,
                              &s->interconnect.latency_s)) < 0)
            return r;
    }
    return 0;
}

/* A constant capacity next to a trace of the same link would be ignored
 * (the trace sets the capacity at every instant), so it is an error naming
 * both keys rather than a silent no-op (issue 11 item 5). */
static int both_keys_at(cv *c, const yt_node *k, const yt_node *t, const char *path, const char *key,
                        const char *tkey)
{
    if (yt_is_null(k) || yt_is_null(t))
        return 0;
    char kp[300], wt[400];
    scni_join(kp, sizeof kp, path, key);
    scni_where(c, t, wt, sizeof wt);
    return scni_fail(c, k, kp,
                     "given together with '%s' (%s): the trace sets the capacity and '%s' would be ignored; "
                     "remove '%s', or rescale the trace with { file: ..., mean: ... }",
                     tkey, wt, key, key);
}

static int both_keys(cv *c, const yt_node *m, const char *path, const char *key, const char *tkey)
{
    return both_keys_at(c, yt_get(m, key), yt_get(m, tkey), path, key, tkey);
}

static int conv_wan(cv *c, const yt_node *root)
{
    static const char *const keys[] = {"between", "bandwidth", "latency", "trace", "outages", NULL};
    static const char *const req[] = {"between", NULL};
    scn_scenario *s = c->s;
    const yt_node *l = yt_get(root, "wan");
    char g[80];
    int r;
    if (yt_is_null(l))
        return 0;
    if (l->kind != YT_SEQ)
        return scni_fail(c, l, "wan", "expected a list of WAN links (got %s)", scni_got(l, g, sizeof g));
    if (l->n && s->n_sites < 2)
        return scni_fail(c, l, "wan", "WAN links need a `sites` list with at least two sites (got %zu sites)",
                         s->n_sites);
    if (l->n > (size_t)SCN_MAX_SITES * SCN_MAX_SITES)
        return scni_fail(c, l, "wan", "too many WAN links (got %zu)", l->n);
    if (!(s->wan = dp_calloc(l->n ? l->n : 1, sizeof *s->wan)))
        return scni_oom(c);
    for (size_t i = 0; i < l->n; i++) {
        const yt_node *it = l->items[i];
        char kp[300];
        snprintf(kp, sizeof kp, "wan[%zu]", i);
        if ((r = scni_check_map(c, it, kp, keys, req)) < 0)
            return r;
        const yt_node *bw = yt_get(it, "between");
        char bkp[320];
        scni_join(bkp, sizeof bkp, kp, "between");
        if (bw->kind != YT_SEQ || bw->n != 2 || bw->items[0]->kind != YT_SCALAR ||
            bw->items[1]->kind != YT_SCALAR)
            return scni_fail(c, bw, bkp, "expected two site names [A, B] (got %s)",
                             scni_got(bw, g, sizeof g));
        scn_wan *w = &s->wan[i];
        s->n_wan = i + 1;
        if ((w->site_a = scni_site_index(s, bw->items[0]->text)) < 0)
            return scni_unknown_site(c, bw->items[0], bkp);
        if ((w->site_b = scni_site_index(s, bw->items[1]->text)) < 0)
            return scni_unknown_site(c, bw->items[1], bkp);
        if (w->site_a == w->site_b)
            return scni_fail(c, bw, bkp, "a WAN link joins two different sites (got %s twice)",
                             bw->items[0]->text);
        snprintf(kp, sizeof kp, "wan.%s-%s", s->sites[w->site_a], s->sites[w->site_b]);
        for (size_t j = 0; j < i; j++) {
            const scn_wan *o = &s->wan[j];
            if ((o->site_a == w->site_a && o->site_b == w->site_b) ||
                (o->site_a == w->site_b && o->site_b == w->site_a))
                return scni_fail(c, bw, kp, "duplicate WAN link between these sites (also wan[%zu])", j);
        }
        if ((r = scni_get_trace(c, yt_get(it, "trace"), kp, "trace", 1, &w->trace)) < 0)
            return r;
        if ((r = both_keys(c, it, kp, "bandwidth", "trace")) < 0)
            return r;
        if ((r = scni_get_pos(c, it, kp, "bandwidth", SCN_UNIT_BANDWIDTH, w->trace == NULL,
                              w->trace ? trace_mean(w->trace) : 0, 0, 1e300, &w->bandwidth_Bps)) < 0)
            return r;
        if ((r = scni_get_pos(c, it, kp, "latency", SCN_UNIT_TIME, 0, 0, 1, 1e6, &w->latency_s)) < 0)
            return r;
        if ((r = scni_get_outages(c, yt_get(it, "outages"), kp, &w->outages)) < 0)
            return r;
    }
    return 0;
}

/* A device group's `link` mapping l (key path PATH.link). */
static int conv_link(cv *c, const yt_node *l, const char *path, scn_link *L)
{
    enum { L_UP, L_DOWN, L_LATENCY, L_UP_TRACE, L_DOWN_TRACE, L_OUTAGES, L_N };
    static const char *const keys[L_N + 1] = {[L_UP] = "up",
                                              [L_DOWN] = "down",
                                              [L_LATENCY] = "latency",
                                              [L_UP_TRACE] = "up_trace",
                                              [L_DOWN_TRACE] = "down_trace",
                                              [L_OUTAGES] = "outages",
                                              [L_N] = NULL};
    const yt_node *v[L_N], *kn[L_N];
    char kp[300];
    int r;
    scni_join(kp, sizeof kp, path, "link");
    if ((r = scni_check_map_at(c, l, kp, keys, NULL, v, kn)) < 0)
        return r;
    if ((r = scni_get_trace(c, v[L_UP_TRACE], kp, "up_trace", 1, &L->up_trace)) < 0)
        return r;
    if ((r = scni_get_trace(c, v[L_DOWN_TRACE], kp, "down_trace", 1, &L->down_trace)) < 0)
        return r;
    if ((r = both_keys_at(c, v[L_UP], v[L_UP_TRACE], kp, "up", "up_trace")) < 0 ||
        (r = both_keys_at(c, v[L_DOWN], v[L_DOWN_TRACE], kp, "down", "down_trace")) < 0)
        return r;
    /* With a trace the constant is optional: it defaults to the trace's mean. */
    if ((r = scni_pos_at(c, l, v[L_UP], kp, "up", SCN_UNIT_BANDWIDTH, !L->up_trace,
                         L->up_trace ? trace_mean(L->up_trace) : 0, 0, 1e300, &L->up_Bps)) < 0)
        return r;
    if ((r = scni_pos_at(c, l, v[L_DOWN], kp, "down", SCN_UNIT_BANDWIDTH, !L->down_trace,
                         L->down_trace ? trace_mean(L->down_trace) : 0, 0, 1e300, &L->down_Bps)) < 0)
        return r;
    if ((r = scni_pos_at(c, l, v[L_LATENCY], kp, "latency", SCN_UNIT_TIME, 0, 0, 1, 1e6, &L->latency_s)) < 0)
        return r;
    /* a traced direction may end at 0 for good (a link that dies): its
     * capacity is the trace's at every instant, the constant only a summary */
    if ((!L->up_trace && !(L->up_Bps > 0)) || (!L->down_trace && !(L->down_Bps > 0)))
        return scni_fail(c, l, kp, "link capacity must be > 0");
    if ((r = scni_get_outages(c, v[L_OUTAGES], kp, &L->outages)) < 0)
        return r;
    return 0;
}

static int conv_table(cv *c, const yt_node *tb, const char *kp, scn_group *g)
{
    char gt[80];
    if (tb->kind != YT_SEQ)
        return scni_fail(c, tb, kp, "expected a list of [batch, seconds] points (got %s)",
                         scni_got(tb, gt, sizeof gt));
    if (tb->n < 2 || tb->n > SCN_MAX_TABLE)
        return scni_fail(c, tb, kp, "needs 2 to %d [batch, seconds] points (got %zu)", SCN_MAX_TABLE, tb->n);
    g->table_batch = dp_calloc(tb->n, sizeof *g->table_batch);
    g->table_s = dp_calloc(tb->n, sizeof *g->table_s);
    if (!g->table_batch || !g->table_s)
        return scni_oom(c);
    for (size_t i = 0; i < tb->n; i++) {
        const yt_node *p = tb->items[i];
        char pk[400];
        snprintf(pk, sizeof pk, "%s[%zu]", kp, i);
        int bad = scni_check_pair(c, p, pk, "a point [batch, seconds]");
        if (bad)
            return bad;
        double b, t;
        dp_err e;
        if (scn_parse_quantity(p->items[0]->text, SCN_UNIT_NUMBER, &b, &e))
            return scni_fail(c, p->items[0], pk, "%s", e.msg);
        if (b != floor(b) || b < 1 || b > SCN_MAX_BATCH)
            return scni_fail(c, p->items[0], pk, "batch must be a whole number from 1 to %d (got %s)",
                             SCN_MAX_BATCH, p->items[0]->text);
        if (scn_parse_quantity(p->items[1]->text, SCN_UNIT_TIME, &t, &e))
            return scni_fail(c, p->items[1], pk, "%s", e.msg);
        if (!(t >= scni_unit_floor(SCN_UNIT_TIME)) || t > 1e9)
            return scni_fail(c, p->items[1], pk, "seconds must be at least 1 ns and at most 1e9 (got %s)",
                             p->items[1]->text);
        /* Insertion sort by batch: tables are short. */
        size_t j = i;
        while (j > 0 && g->table_batch[j - 1] > b) {
            g->table_batch[j] = g->table_batch[j - 1];
            g->table_s[j] = g->table_s[j - 1];
            j--;
        }
        if (j > 0 && g->table_batch[j - 1] == b)
            return scni_fail(c, p->items[0], pk, "batch %g appears twice", b);
        g->table_batch[j] = b;
        g->table_s[j] = t;
        g->table_n = i + 1;
    }
    return 0;
}

/* FNV-1a: the group-name set's hash. */
static size_t name_hash(const char *t)
{
    uint64_t h = 14695981039346656037u;
    for (; *t; t++)
        h = (h ^ (unsigned char)*t) * 1099511628211u;
    return (size_t)h;
}

int scni_check_memory(cv *c, const scn_group *g, const yt_node *bn, const char *path)
{
    const scn_scenario *s = c->s;
    double state = s->model.state_factor * s->model.model_bytes;
    double need = state + g->batch * s->model.activation_bytes_per_sample;
    if (need > g->memory_bytes) {
        char a[40], b[40], m[40], act[40], kp[340];
        scni_join(kp, sizeof kp, path, "batch");
        scn_format_quantity(state, SCN_UNIT_BYTES, a, sizeof a);
        scn_format_quantity(need, SCN_UNIT_BYTES, b, sizeof b);
        scn_format_quantity(g->memory_bytes, SCN_UNIT_BYTES, m, sizeof m);
        scn_format_quantity(s->model.activation_bytes_per_sample, SCN_UNIT_BYTES, act, sizeof act);
        return scni_fail(
            c, bn, kp,
            "device '%s' cannot hold batch %d: model state %s + %d x %s activations = %s > memory %s "
            "(got %d)",
            g->name, g->batch, a, g->batch, act, b, m, g->batch);
    }
    return 0;
}

/* The name group j is addressed by: a drawn population's member by the
 * population's. */
static const char *set_name(const scn_scenario *s, size_t j)
{
    const scn_group *g = &s->groups[j];
    if (g->pop && s->pops[g->pop - 1].kind == SCN_POP_DRAWN)
        return s->pops[g->pop - 1].name;
    return g->name;
}

/* Room for `slots` (a power of two) in the group-name set. */
static int names_grow(cv *c, size_t slots)
{
    scni_name_slot *t = dp_calloc(slots, sizeof *t);
    if (!t)
        return DP_ENOMEM;
    for (size_t i = 0; c->names && i <= c->names_mask; i++)
        if (c->names[i].group) {
            size_t k = c->names[i].hash & (slots - 1);
            while (t[k].group)
                k = (k + 1) & (slots - 1);
            t[k] = c->names[i];
        }
    dp_free(c->names);
    c->names = t;
    c->names_mask = slots - 1;
    return 0;
}

int scni_name_add(cv *c, size_t gi, const yt_node *n, const char *kp)
{
    scn_scenario *s = c->s;
    const char *name = s->groups[gi].name;
    char gt[80];
    if (2 * (s->n_groups + 1) > c->names_mask + 1 && names_grow(c, 2 * (c->names_mask + 1)))
        return scni_oom(c);
    /* Slots keep the hash: a slot of another name is passed over without
     * reading that group (a cache miss per probe otherwise). */
    size_t h = name_hash(name);
    size_t slot = h & c->names_mask;
    for (; c->names[slot].group; slot = (slot + 1) & c->names_mask) {
        size_t j = c->names[slot].group - 1;
        if (c->names[slot].hash == (uint32_t)h && strcmp(set_name(s, j), name) == 0)
            return scni_fail(c, n, kp, "duplicate device name, also devices[%d] at line %d (got %s)",
                             s->groups[j].item, s->groups[j].line, scni_got(n, gt, sizeof gt));
    }
    c->names[slot] = (scni_name_slot){(uint32_t)h, (uint32_t)(gi + 1)};
    return 0;
}

int scni_reserve_groups(cv *c, size_t more)
{
    scn_scenario *s = c->s;
    if (more <= c->groups_cap - s->n_groups)
        return 0;
    size_t cap = s->n_groups + more;
    scn_group *g = dp_realloc(s->groups, cap * sizeof *g);
    if (!g)
        return scni_oom(c);
    s->groups = g;
    c->groups_cap = cap;
    return 0;
}

int scni_new_group(cv *c, size_t *gi)
{
    scn_scenario *s = c->s;
    if (s->n_groups == c->groups_cap) {
        size_t cap = c->groups_cap ? 2 * c->groups_cap : 16;
        scn_group *g = dp_realloc(s->groups, cap * sizeof *g);
        if (!g)
            return scni_oom(c);
        s->groups = g;
        c->groups_cap = cap;
    }
    *gi = s->n_groups++; /* from here scn_free sees it */
    memset(&s->groups[*gi], 0, sizeof s->groups[*gi]);
    return 0;
}

/* "PREFIX[i]SUFFIX", cut to fit buf (snprintf's bytes) without snprintf:
 * it was a tenth of converting a group. */
static void path_index(char *buf, size_t len, const char *prefix, size_t i, const char *suffix)
{
    if (len == 0)
        return;
    dp_indexed_name(buf, len, prefix, (long long)i);
    size_t k = strlen(buf), ls = strnlen(suffix, len - 1 - k);
    memcpy(buf + k, suffix, ls);
    buf[k + ls] = '\0';
}

static void group_path_of(const yt_node *nm, size_t item, char *path, size_t len)
{
    size_t ln;
    if (nm && nm->kind == YT_SCALAR && nm->text[0] && (ln = strlen(nm->text)) <= SCN_NAME_MAX &&
        !strpbrk(nm->text, ". []") && ln + 9 <= len) {
        memcpy(path, "devices.", 8);
        memcpy(path + 8, nm->text, ln + 1);
    } else {
        path_index(path, len, "devices", item, "");
    }
}

void scni_group_path(const yt_node *it, size_t item, char *path, size_t len)
{
    group_path_of(yt_get(it, "name"), item, path, len);
}

int scni_conv_group(cv *c, const yt_node *it, size_t item, size_t gi, int64_t *total)
{
    /* Every key of the mapping is found in one pass (scni_check_map_at);
     * the values are then read from v[], not looked up again. */
    enum {
        G_NAME,
        G_COUNT,
        G_KIND,
        G_SITE,
        G_MEMORY,
        G_BATCH,
        G_BATCH_TIME,
        G_BATCH_TABLE,
        G_PEAK_FLOPS,
        G_EFFICIENCY,
        G_OVERHEAD,
        G_NOISE,
        G_SPEED_TRACE,
        G_LINK,
        G_STRAGGLERS,
        G_AVAILABILITY,
        G_POWER,
        G_BATTERY,
        G_N
    };
    static const char *const keys[G_N + 1] = {[G_NAME] = "name",
                                              [G_COUNT] = "count",
                                              [G_KIND] = "kind",
                                              [G_SITE] = "site",
                                              [G_MEMORY] = "memory",
                                              [G_BATCH] = "batch",
                                              [G_BATCH_TIME] = "batch_time",
                                              [G_BATCH_TABLE] = "batch_table",
                                              [G_PEAK_FLOPS] = "peak_flops",
                                              [G_EFFICIENCY] = "efficiency",
                                              [G_OVERHEAD] = "overhead",
                                              [G_NOISE] = "noise",
                                              [G_SPEED_TRACE] = "speed_trace",
                                              [G_LINK] = "link",
                                              [G_STRAGGLERS] = "stragglers",
                                              [G_AVAILABILITY] = "availability",
                                              [G_POWER] = "power",
                                              [G_BATTERY] = "battery",
                                              [G_N] = NULL};
    static const char *const req[] = {"name", "kind", "memory", "batch", "link", NULL};
    static const char *const kinds[] = {"gpu", "cpu", NULL};
    scn_scenario *s = c->s;
    scn_group *g = &s->groups[gi];
    const yt_node *v[G_N], *kn[G_N];
    char path[300], gt[80];
    int r = 0;
    scni_group_path(it, item, path, sizeof path);
    if ((r = scni_check_map_at(c, it, path, keys, req, v, kn)) < 0)
        return r;
    g->item = (int)item;
    g->line = it->line;
    g->column = it->column;
    g->site = -1;
    const yt_node *n;
    if ((r = scni_scalar_at(c, it, v[G_NAME], path, "name", 1, &n)) < 0)
        return r;
    char nkp[320];
    path_index(nkp, sizeof nkp, "devices", item, ".name");
    if (scni_check_name(c, n, nkp))
        return DP_EINPUT;
    if (scni_dup_str(c, &g->name, n->text) || (r = scni_name_add(c, gi, n, nkp)) < 0)
        return r < 0 ? r : DP_ENOMEM;
    group_path_of(n, item, path, sizeof path); /* devices.NAME: the name is valid */

    int64_t val;
    char kp[340];
    const yt_node *cn = v[G_COUNT];
    if ((r = scni_int_at(c, it, cn, path, "count", 0, 1, 0, SCN_MAX_DEVICES, "devices per group", &val)) < 0)
        return r;
    if (val == 0 && !(cn && cn->origin)) {
        scni_join(kp, sizeof kp, path, "count");
        return scni_fail(c, cn, kp, "must be >= 1 in a file (0 is allowed only through an override) (got 0)");
    }
    g->count = (int)val;
    *total += val;
    if (*total > SCN_MAX_DEVICES) { /* a group without count (1) is located by its mapping */
        scni_join(kp, sizeof kp, path, "count");
        return scni_fail(c, cn ? cn : it, kp,
                         "more than %d devices in total (the limit on devices) (got %lld so far)",
                         SCN_MAX_DEVICES, (long long)*total);
    }
    int kind;
    if ((r = scni_enum_at(c, it, v[G_KIND], path, "kind", kinds, 0, &kind)) < 0)
        return r;
    g->kind = (scn_kind)kind;
    if ((r = scni_scalar_at(c, it, v[G_SITE], path, "site", 0, &n)) < 0)
        return r;
    if (r) {
        scni_join(kp, sizeof kp, path, "site");
        if ((g->site = scni_site_index(s, n->text)) < 0)
            return scni_unknown_site(c, n, kp);
    } else {
        g->site = s->n_sites ? 0 : -1;
    }
    if ((r = scni_pos_at(c, it, v[G_MEMORY], path, "memory", SCN_UNIT_BYTES, 1, 0, 0, 1e18,
                         &g->memory_bytes)) < 0)
        return r;
    const yt_node *bn = v[G_BATCH];
    if ((r = scni_int_at(c, it, bn, path, "batch", 1, 0, 1, SCN_MAX_BATCH, "batch size", &val)) < 0)
        return r;
    g->batch = (int)val;

    /* Compute model: exactly one of the three. */
    const yt_node *bt = v[G_BATCH_TIME], *tb = v[G_BATCH_TABLE], *pf = v[G_PEAK_FLOPS];
    int have = !yt_is_null(bt) + !yt_is_null(tb) + !yt_is_null(pf);
    if (have != 1)
        return scni_fail(c, have ? (!yt_is_null(tb) ? tb : pf) : it, path,
                         "give exactly one compute model: batch_time, batch_table or peak_flops (got %d)",
                         have);
    if (!yt_is_null(bt)) {
        g->compute = SCN_COMPUTE_MEASURED;
        if ((r = scni_pos_at(c, it, bt, path, "batch_time", SCN_UNIT_TIME, 1, 0, 0, 1e9, &g->batch_time_s)) <
            0)
            return r;
    } else if (!yt_is_null(tb)) {
        g->compute = SCN_COMPUTE_TABLE;
        scni_join(kp, sizeof kp, path, "batch_table");
        if ((r = conv_table(c, tb, kp, g)) < 0)
            return r;
    } else {
        g->compute = SCN_COMPUTE_DERIVED;
        if ((r = scni_pos_at(c, it, pf, path, "peak_flops", SCN_UNIT_FLOPS, 1, 0, 0, 1e21, &g->peak_flops)) <
            0)
            return r;
        if ((r = scni_pos_at(c, it, v[G_EFFICIENCY], path, "efficiency", SCN_UNIT_NUMBER, 1, 0, 0, 1,
                             &g->efficiency)) < 0)
            return r;
        if ((r = scni_pos_at(c, it, v[G_OVERHEAD], path, "overhead", SCN_UNIT_TIME, 0, 0, 1, 1e9,
                             &g->overhead_s)) < 0)
            return r;
    }
    if (g->compute != SCN_COMPUTE_DERIVED) {
        const int only[] = {G_EFFICIENCY, G_OVERHEAD};
        for (int k = 0; k < 2; k++)
            if (!yt_is_null(v[only[k]])) {
                scni_join(kp, sizeof kp, path, keys[only[k]]);
                return scni_fail(c, kn[only[k]], kp, "applies only with peak_flops (got %s)",
                                 scni_got(v[only[k]], gt, sizeof gt));
            }
    }
    if (g->compute == SCN_COMPUTE_DERIVED) {
        /* Each input is in range, but flops / (peak x efficiency) can still
         * be far below a nanosecond (or a subnormal), which no run honours. */
        double t1 = scn_batch_time(s, g, 1);
        if (!(t1 >= scni_unit_floor(SCN_UNIT_TIME)))
            return scni_fail(c, pf, path,
                             "the time of one sample, train_flops_per_sample / (peak_flops x efficiency) + "
                             "overhead, must be at least 1 ns (got %.3g s)",
                             t1);
    }
    if ((r = scni_pos_at(c, it, v[G_NOISE], path, "noise", SCN_UNIT_NUMBER, 0, 0, 1, SCN_MAX_NOISE,
                         &g->noise_cv)) < 0)
        return r;
    if ((r = scni_get_trace(c, v[G_SPEED_TRACE], path, "speed_trace", 0, &g->speed_trace)) < 0)
        return r;
    if ((r = conv_link(c, v[G_LINK], path, &g->link)) < 0)
        return r;
    if ((r = scni_get_stragglers(c, v[G_STRAGGLERS], path, &g->stragglers)) < 0)
        return r;
    if ((r = scni_get_avail(c, v[G_AVAILABILITY], path, &g->avail)) < 0)
        return r;
    int own_avail = r > 0;
    if ((r = scni_get_energy(c, v[G_POWER], v[G_BATTERY], path, g, own_avail, kn[G_AVAILABILITY])) < 0)
        return r;
    if (g->energy.battery) { /* its battery decides when it is up; it keeps its data */
        g->avail = (scn_avail){0, 0, NULL, 1};
    } else if (!own_avail) { /* the top-level default, a copy of its own */
        g->avail = s->availability;
        if (s->availability.trace && !(g->avail.trace = trace_copy(s->availability.trace)))
            return scni_oom(c);
    }

    /* Cross checks that need the model and dataset. */
    if ((int64_t)g->batch > s->dataset.samples) {
        scni_join(kp, sizeof kp, path, "batch");
        return scni_fail(c, bn, kp, "batch is larger than the dataset (%lld samples) (got %d)",
                         (long long)s->dataset.samples, g->batch);
    }
    return scni_check_memory(c, g, bn, path);
}

/* The length of member j's name in a group of `count` named with ln
 * bytes: the name alone when count == 1, else "name[j]", both cut at
 * SCN_DEV_NAME_MAX - 1 bytes (as dp_indexed_name cuts). */
static size_t dev_name_len(size_t ln, int count, int j)
{
    if (count == 1)
        return ln;
    size_t digits = 1;
    for (int v = j; v >= 10; v /= 10)
        digits++;
    size_t len = ln + digits + 2;
    return len < SCN_DEV_NAME_MAX - 1 ? len : SCN_DEV_NAME_MAX - 1;
}

static int conv_devices(cv *c, const yt_node *root)
{
    scn_scenario *s = c->s;
    const yt_node *l = yt_get(root, "devices");
    char g[80];
    int r = 0;
    if (l->kind != YT_SEQ)
        return scni_fail(c, l, "devices", "expected a list of device groups (got %s)",
                         scni_got(l, g, sizeof g));
    if (l->n == 0)
        return scni_fail(c, l, "devices", "no device groups (got an empty list)");
    if (l->n > SCN_MAX_DEVICES)
        return scni_fail(c, l, "devices", "more than %d device groups (got %zu)", SCN_MAX_DEVICES, l->n);
    /* Groups grow as items are read: a device table or a population makes
     * many groups from one item.  Room for one group per item from the
     * start: no regrowing when groups are written one by one. */
    size_t slots = 16;
    while (slots < 2 * (l->n + 1))
        slots *= 2;
    if (!(s->groups = dp_calloc(l->n, sizeof *s->groups))) /* scn_free frees it */
        return scni_oom(c);
    c->groups_cap = l->n;
    if (names_grow(c, slots))
        return scni_oom(c);
    int64_t total = 0;
    for (size_t i = 0; i < l->n && r >= 0; i++) {
        const yt_node *it = l->items[i];
        size_t gi;
        int what = scni_item_kind(it);
        if (what == SCNI_ITEM_TABLE)
            r = scni_conv_table(c, it, i, &total);
        else if (what == SCNI_ITEM_POPULATION)
            r = scni_conv_population(c, it, i, &total);
        else if ((r = scni_new_group(c, &gi)) >= 0)
            r = scni_conv_group(c, it, i, gi, &total);
    }
    dp_free(c->names);
    c->names = NULL;
    if (r < 0)
        return r;
    if (total == 0)
        return scni_fail(c, l, "devices", "no devices: every group has count 0 (got %zu groups)",
                         s->n_groups);
    /* the names in one block, each its exact length (dev_name_len) */
    size_t nb = 0;
    for (size_t gi = 0; gi < s->n_groups; gi++) {
        const scn_group *gr = &s->groups[gi];
        size_t ln = strnlen(gr->name, SCN_DEV_NAME_MAX - 1);
        for (int j = 0; j < gr->count; j++)
            nb += dev_name_len(ln, gr->count, j) + 1;
    }
    if (!(s->devices = dp_calloc((size_t)total, sizeof *s->devices)) || !(s->dev_names = dp_malloc(nb)))
        return scni_oom(c);
    dp_prefault *pf = dp_prefault_start(s->devices, (size_t)total * sizeof *s->devices);
    size_t k = 0;
    char *at = s->dev_names;
    for (size_t gi = 0; gi < s->n_groups; gi++) {
        const scn_group *gr = &s->groups[gi];
        size_t ln = strnlen(gr->name, SCN_DEV_NAME_MAX - 1);
        for (int j = 0; j < gr->count; j++, k++) {
            s->devices[k].group = (int)gi;
            s->devices[k].index = j;
            s->devices[k].name = at;
            if (gr->count == 1) { /* a copy, not snprintf: 100,000 groups */
                memcpy(at, gr->name, ln);
                at[ln] = 0;
            } else
                dp_indexed_name(at, SCN_DEV_NAME_MAX, gr->name, j);
            at += dev_name_len(ln, gr->count, j) + 1;
        }
    }
    dp_prefault_wait(pf);
    s->n_devices = k;
    s->failures = scni_any_failures(s);
    return 0;
}

/* `policies:` is each policy's own (policy_check_scenario validates it
 * against the registry); the loader only keeps it, as a mapping. */
static int conv_policies(cv *c, const yt_node *root)
{
    const yt_node *p = yt_get(root, "policies");
    char g[80];
    if (yt_is_null(p))
        return 0;
    if (p->kind != YT_MAP)
        return scni_fail(c, p, "policies", "expected a mapping of policy names (got %s)",
                         scni_got(p, g, sizeof g));
    c->s->policies = p;
    return 0;
}

/* `learning:` is the learner's own (sim/learn validates it when a run
 * starts or `check` runs); the loader only keeps it, as a mapping. */
static int conv_learning(cv *c, const yt_node *root)
{
    const yt_node *p = yt_get(root, "learning");
    char g[80];
    if (yt_is_null(p))
        return 0;
    if (p->kind != YT_MAP)
        return scni_fail(c, p, "learning", "expected a mapping (data, model, partition, ...) (got %s)",
                         scni_got(p, g, sizeof g));
    c->s->learning = p;
    return 0;
}

/* `compression:` is the runtime's (sim/policy/compress.c checks it); the
 * loader only keeps it, as a mapping. */
static int conv_compression(cv *c, const yt_node *root)
{
    const yt_node *p = yt_get(root, "compression");
    char g[80];
    if (yt_is_null(p))
        return 0;
    if (p->kind != YT_MAP)
        return scni_fail(c, p, "compression", "expected a mapping (method, k, bits, delta, ...) (got %s)",
                         scni_got(p, g, sizeof g));
    c->s->compression = p;
    return 0;
}

/* `jobs:` (a list of jobs, or a job trace file) and `scheduler:` (a name or
 * a mapping) belong to the many-jobs driver (sim/jobs/), which validates
 * them; the loader only keeps them. */
static int conv_jobs(cv *c, const yt_node *root)
{
    const yt_node *j = yt_get(root, "jobs"), *sc = yt_get(root, "scheduler");
    char g[80];
    if (!yt_is_null(j) && j->kind == YT_MAP)
        return scni_fail(c, j, "jobs", "expected a list of jobs or a job trace file (got %s)",
                         scni_got(j, g, sizeof g));
    if (!yt_is_null(sc) && sc->kind == YT_SEQ)
        return scni_fail(c, sc, "scheduler", "expected a scheduler name or a mapping (got %s)",
                         scni_got(sc, g, sizeof g));
    c->s->jobs = yt_is_null(j) ? NULL : j;
    c->s->scheduler = yt_is_null(sc) ? NULL : sc;
    return 0;
}

int scni_convert(cv *c, const yt_node *root)
{
    static const char *const keys[] = {"name",    "description", "model",        "dataset",  "training",
                                       "server",  "network",     "interconnect", "sites",    "wan",
                                       "devices", "policies",    "availability", "learning", "compression",
                                       "servers", "jobs",        "scheduler",    NULL};
    static const char *const req[] = {"model", "dataset", "training", "devices", NULL};
    int r;
    if ((r = scni_check_map(c, root, "", keys, req)) < 0)
        return r;
    const yt_node *n;
    if ((r = scni_get_text(c, root, "", "name", "unnamed", &c->s->name)) < 0)
        return r;
    if ((r = scni_get_scalar(c, root, "", "description", 0, &n)) < 0)
        return r;
    if ((r = conv_model(c, root)) < 0 || (r = conv_dataset_training(c, root)) < 0 ||
        (r = conv_sites(c, root)) < 0 || (r = conv_server_network(c, root)) < 0 ||
        (r = conv_wan(c, root)) < 0 || (r = scni_conv_servers(c, yt_get(root, "servers"))) < 0 ||
        (c->s->availability.data_persists = 1,
         r = scni_get_avail(c, yt_get(root, "availability"), "", &c->s->availability)) < 0 ||
        (r = conv_devices(c, root)) < 0 || (r = scni_conv_data(c, yt_get(root, "dataset"))) < 0 ||
        (r = conv_policies(c, root)) < 0 || (r = conv_learning(c, root)) < 0 ||
        (r = conv_compression(c, root)) < 0 || (r = conv_jobs(c, root)) < 0)
        return r;
    return 0;
}
