/* scenario_summary.c: the human summary `dpsim check FILE` prints.
 *
 * Only reads a validated scenario; every number is shown with its unit so
 * a wrong unit in the file (100MB where 100Mbps was meant) is visible at a
 * glance.  Compute speed is samples/s at the group's own batch size, noise
 * and speed traces excluded (they are the run's business).
 */
#include "scenario.h"
#include "scenario_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Four significant digits: scn_format_quantity is exact (it must round
 * trip), which makes 90.45765686035156 MiB; a summary wants 90.46 MiB. */
static void q(double v, scn_unit u, char *buf, size_t len)
{
    scn_format_quantity(v, u, buf, len);
    char *sp = strchr(buf, ' ');
    if (!isfinite(v) || !sp)
        return;
    char unit[24];
    snprintf(unit, sizeof unit, "%s", sp + 1);
    *sp = '\0';
    double num = strtod(buf, NULL);
    snprintf(buf, len, "%.4g %s", num, unit);
}

static const char *trace_desc(const trace *t, char *buf, size_t len)
{
    if (!t)
        return "";
    char m[48], l[48];
    q(trace_mean(t), SCN_UNIT_BANDWIDTH, m, sizeof m);
    if (t->loop || t->n < 2) {
        snprintf(buf, len, " [trace: %zu points, mean %s%s]", t->n, m, t->loop ? ", looping" : "");
        return buf;
    }
    /* not looping: the listed part, then the last value for ever */
    q(trace_mean_listed(t), SCN_UNIT_BANDWIDTH, l, sizeof l);
    snprintf(buf, len, " [trace: %zu points, %s over [0, %.6g s], then %s for ever: mean %s]", t->n, l,
             t->t_s[t->n - 1], m, m);
    return buf;
}

typedef struct wv {
    double v;
    int w;
} wv;

static int wv_cmp(const void *a, const void *b)
{
    double x = ((const wv *)a)->v, y = ((const wv *)b)->v;
    return (x > y) - (x < y);
}

/* The groups a summary block covers: s->groups[idx[k]] or, with idx NULL,
 * s->groups[first + k], for k < n. */
typedef struct gset {
    const size_t *idx;
    size_t first, n;
} gset;

static const scn_group *gs_at(const scn_scenario *s, const gset *set, size_t k)
{
    return &s->groups[set->idx ? set->idx[k] : set->first + k];
}

enum { Q_BATCH_TIME, Q_SAMPLES, Q_UP, Q_DOWN, Q_LATENCY, Q_MEMORY, Q_N };

/* The value of quantity `what` of group g. */
static double spread_value(const scn_scenario *s, const scn_group *g, int what)
{
    switch (what) {
    case Q_BATCH_TIME:
        return scn_batch_time(s, g, g->batch);
    case Q_SAMPLES: {
        double t = scn_batch_time(s, g, g->batch);
        return t > 0 ? g->batch / t : 0.0;
    }
    case Q_UP:
        return g->link.up_Bps;
    case Q_DOWN:
        return g->link.down_Bps;
    case Q_LATENCY:
        return g->link.latency_s;
    default:
        return g->memory_bytes;
    }
}

/* Devices in a set, and of each kind. */
static long long set_devices(const scn_scenario *s, const gset *set, long long kinds[2])
{
    long long devs = 0;
    kinds[0] = kinds[1] = 0;
    for (size_t k = 0; k < set->n; k++) {
        const scn_group *g = gs_at(s, set, k);
        devs += g->count;
        kinds[g->kind] += g->count;
    }
    return devs;
}

/* The devices of a set at a glance: per site, then min / median / max of
 * each quantity over the devices (a group weighs its count), instead of a
 * line per group.  devs > 0. */
static void print_spread(const scn_scenario *s, const gset *set, long long devs, FILE *out)
{
    static const char *const names[Q_N] = {"batch time", "samples/s", "link up",
                                           "link down",  "latency",   "memory"};
    static const scn_unit units[Q_N] = {SCN_UNIT_TIME,      SCN_UNIT_NUMBER, SCN_UNIT_BANDWIDTH,
                                        SCN_UNIT_BANDWIDTH, SCN_UNIT_TIME,   SCN_UNIT_BYTES};
    static const char *const after[Q_N] = {" per batch", " per device", "", "", "", ""};
    if (s->n_sites) {
        long long *per = calloc(s->n_sites, sizeof *per);
        if (per) {
            for (size_t k = 0; k < set->n; k++) {
                const scn_group *g = gs_at(s, set, k);
                if (g->site >= 0)
                    per[g->site] += g->count;
            }
            fprintf(out, "               sites");
            for (size_t k = 0; k < s->n_sites; k++)
                if (per[k])
                    fprintf(out, " %s %lld", s->sites[k], per[k]);
            fprintf(out, "\n");
            free(per);
        }
    }
    /* One pass over the groups (each quantity's values side by side),
     * not one per quantity: the groups are the big array. */
    size_t n = 0;
    double *val = malloc(Q_N * set->n * sizeof *val);
    int *w = malloc(set->n * sizeof *w);
    wv *pair = NULL;
    if (!val || !w)
        goto out;
    int ones = 1; /* every group one device */
    for (size_t k = 0; k < set->n; k++) {
        const scn_group *g = gs_at(s, set, k);
        if (g->count <= 0)
            continue;
        for (int what = 0; what < Q_N; what++)
            val[what * set->n + n] = spread_value(s, g, what);
        w[n] = g->count;
        ones &= g->count == 1;
        n++;
    }
    for (int what = 0; what < Q_N; what++) {
        double *v = val + what * set->n;
        /* the median device: the first in value order at which the counts
         * reach half the devices */
        long long half = (devs + 1) / 2, seen = 0;
        int flat = 1; /* one value for all */
        double lo = v[0], hi = v[0], med;
        for (size_t i = 0; i < n; i++) {
            flat &= v[i] == v[0];
            lo = v[i] < lo ? v[i] : lo;
            hi = v[i] > hi ? v[i] : hi;
        }
        if (flat) {
            med = v[0];
        } else if (ones) { /* the median device is the half-th value */
            med = dp_kth_smallest(v, n, (size_t)half - 1);
        } else {
            if (!pair && !(pair = malloc(n * sizeof *pair)))
                goto out;
            for (size_t i = 0; i < n; i++)
                pair[i] = (wv){v[i], w[i]};
            qsort(pair, n, sizeof *pair, wv_cmp);
            size_t m = 0;
            while (m < n && (seen += pair[m].w) < half)
                m++;
            med = pair[m < n ? m : n - 1].v;
        }
        double at[3] = {lo, med, hi};
        char t[3][48];
        for (int j = 0; j < 3; j++) {
            if (units[what] == SCN_UNIT_NUMBER)
                snprintf(t[j], sizeof t[j], "%.4g", at[j]);
            else
                q(at[j], units[what], t[j], sizeof t[j]);
        }
        fprintf(out, "               %-10s min %s, median %s, max %s%s\n", names[what], t[0], t[1], t[2],
                after[what]);
    }
out:
    free(pair);
    free(w);
    free(val);
}

/* A population: its count, kinds and sites, and the spread of its
 * devices' values, instead of a line per group. */
static void print_pop(const scn_scenario *s, const scn_population *p, FILE *out)
{
    char en[256];
    gset set = {NULL, p->first, p->n};
    long long kinds[2];
    long long devs = set_devices(s, &set, kinds);
    if (p->kind == SCN_POP_DRAWN)
        fprintf(out, "  %-12s x%lld drawn devices (seed %llu)", dp_esc(en, sizeof en, p->name), devs,
                (unsigned long long)p->seed);
    else
        fprintf(out, "  %s: x%lld devices in %zu rows", dp_esc(en, sizeof en, p->name), devs, p->n);
    fprintf(out, ": %lld gpu, %lld cpu\n", kinds[SCN_GPU], kinds[SCN_CPU]);
    if (devs == 0) {
        fprintf(out, "               (skipped: count 0)\n");
        return;
    }
    print_spread(s, &set, devs, out);
}

/* The groups written one by one that a long listing leaves out: how many,
 * their spread, and what else some of them have (traces, failures...),
 * so that nothing in the file goes unmentioned. */
static void print_rest(const scn_scenario *s, const gset *set, FILE *out)
{
    long long kinds[2];
    long long devs = set_devices(s, set, kinds);
    size_t skipped = 0, traced = 0, noisy = 0, strag = 0, avail = 0, outages = 0, comp[3] = {0, 0, 0};
    for (size_t k = 0; k < set->n; k++) {
        const scn_group *g = gs_at(s, set, k);
        skipped += g->count == 0;
        traced += g->link.up_trace || g->link.down_trace;
        noisy += g->noise_cv > 0 || g->speed_trace;
        strag += g->stragglers.every_s > 0;
        avail += g->avail.mtbf_s > 0 || g->avail.trace;
        outages += g->link.outages.n > 0;
        comp[g->compute]++;
    }
    fprintf(out,
            "  ... and %zu more groups, x%lld devices: %lld gpu, %lld cpu (dpsim check --all lists them)\n",
            set->n, devs, kinds[SCN_GPU], kinds[SCN_CPU]);
    if (devs > 0)
        print_spread(s, set, devs, out);
    static const char *const compute_names[] = {"batch_time", "batch_table", "peak_flops"};
    char also[400] = "";
    size_t used = 0;
    const struct {
        size_t n;
        const char *what;
    } notes[] = {{comp[0], compute_names[0]},
                 {comp[1], compute_names[1]},
                 {comp[2], compute_names[2]},
                 {traced, "with a link trace"},
                 {noisy, "with noise or a speed trace"},
                 {strag, "with stragglers"},
                 {avail, "with failures"},
                 {outages, "with link outages"},
                 {skipped, "skipped (count 0)"}};
    for (size_t i = 0; i < sizeof notes / sizeof notes[0]; i++) {
        /* compute models only when they differ */
        if (!notes[i].n || (i < 3 && notes[i].n == set->n))
            continue;
        int w = snprintf(also + used, sizeof also - used, "%s%zu %s", used ? ", " : "", notes[i].n,
                         notes[i].what);
        if (w > 0 && (size_t)w < sizeof also - used)
            used += (size_t)w;
    }
    if (used)
        fprintf(out, "               of which %s\n", also);
}

void scn_print_summary(const scn_scenario *s, int all, FILE *out)
{
    if (!s || !out)
        return;
    char a[64], b[64], c[64], d[64], e[160], f[160];
    char en[256], ep[1024];
    fprintf(out, "scenario %s (%s)\n", dp_esc(en, sizeof en, s->name), dp_esc(ep, sizeof ep, s->path));
    q(s->model.model_bytes, SCN_UNIT_BYTES, a, sizeof a);
    fprintf(out, "model    %s: %.0f params x %g B = %.0f bytes (%s); %.4g FLOP/sample (training %.4g)\n",
            dp_esc(en, sizeof en, s->model.name), s->model.params, s->model.bytes_per_param,
            s->model.model_bytes, a, s->model.flops_per_sample, s->model.train_flops_per_sample);
    q(s->dataset.sample_bytes * (double)s->dataset.samples, SCN_UNIT_BYTES, a, sizeof a);
    fprintf(out, "dataset  %s: %lld samples x %.0f B = %.0f bytes (%s)\n",
            dp_esc(en, sizeof en, s->dataset.name), (long long)s->dataset.samples, s->dataset.sample_bytes,
            s->dataset.sample_bytes * (double)s->dataset.samples, a);
    scni_print_data(s, out); /* dataset.parts, .storage, .caches, when given */
    fprintf(out, "training %d epochs, seed %llu\n", s->training.epochs, (unsigned long long)s->training.seed);
    q(s->server.nic_up_Bps, SCN_UNIT_BANDWIDTH, a, sizeof a);
    q(s->server.nic_down_Bps, SCN_UNIT_BANDWIDTH, b, sizeof b);
    q(s->server.aggregate_Bps, SCN_UNIT_RATE, c, sizeof c);
    fprintf(out, "server   nic up %s, down %s; aggregation %s%s%s\n", a, b, c,
            s->server.site >= 0 ? "; site " : "", s->server.site >= 0 ? s->sites[s->server.site] : "");
    for (size_t k = 0; k < s->n_servers; k++) { /* regional servers */
        q(s->servers[k].nic_up_Bps, SCN_UNIT_BANDWIDTH, a, sizeof a);
        q(s->servers[k].nic_down_Bps, SCN_UNIT_BANDWIDTH, b, sizeof b);
        q(s->servers[k].aggregate_Bps, SCN_UNIT_RATE, c, sizeof c);
        fprintf(out, "         regional server in %s: nic up %s, down %s; aggregation %s\n",
                s->sites[s->servers[k].site], a, b, c);
    }
    if (s->network.tcp_window_bytes > 0) {
        q(s->network.tcp_window_bytes, SCN_UNIT_BYTES, a, sizeof a);
        fprintf(out, "network  tcp window %s\n", a);
    }
    if (s->network.sharing != SCN_SHARE_MAXMIN)
        fprintf(out, "network  sharing %s\n", scn_sharing_names[s->network.sharing]);
    if (s->interconnect.bandwidth_Bps > 0) {
        q(s->interconnect.bandwidth_Bps, SCN_UNIT_BANDWIDTH, a, sizeof a);
        q(s->interconnect.latency_s, SCN_UNIT_TIME, b, sizeof b);
        fprintf(out, "interconnect %s, latency %s\n", a, b);
    }
    if (s->n_sites) {
        fprintf(out, "sites    %zu:", s->n_sites);
        for (size_t i = 0; i < s->n_sites; i++)
            fprintf(out, " %s", s->sites[i]);
        fprintf(out, "\n");
    }
    for (size_t i = 0; i < s->n_wan; i++) {
        const scn_wan *w = &s->wan[i];
        q(w->bandwidth_Bps, SCN_UNIT_BANDWIDTH, a, sizeof a);
        q(w->latency_s, SCN_UNIT_TIME, b, sizeof b);
        fprintf(out, "wan      %s-%s: %s, latency %s%s\n", s->sites[w->site_a], s->sites[w->site_b], a, b,
                trace_desc(w->trace, e, sizeof e));
    }
    fprintf(out, "devices  %zu in %zu groups\n", s->n_devices, s->n_groups);
    static const char *const compute_names[] = {"batch_time", "batch_table", "peak_flops"};
    /* Groups written one by one: past SCN_SUMMARY_LIST of them, the first
     * SCN_SUMMARY_SHOW are listed and the rest summarised at the end. */
    size_t listed = 0, shown = 0, n_rest = 0;
    for (size_t i = 0; i < s->n_groups; i++)
        listed += s->groups[i].pop == 0;
    size_t *rest = NULL;
    if (!all && listed > SCN_SUMMARY_LIST && !(rest = malloc((listed - SCN_SUMMARY_SHOW) * sizeof *rest)))
        all = 1; /* no memory for the short form: the long one needs none */
    for (size_t i = 0; i < s->n_groups; i++) {
        const scn_group *g = &s->groups[i];
        if (g->pop) { /* a table or population: summarised at its first group */
            const scn_population *p = &s->pops[g->pop - 1];
            if (i == p->first)
                print_pop(s, p, out);
            continue;
        }
        if (rest && shown == SCN_SUMMARY_SHOW) {
            rest[n_rest++] = i;
            continue;
        }
        shown++;
        double t = scn_batch_time(s, g, g->batch);
        q(g->memory_bytes, SCN_UNIT_BYTES, a, sizeof a);
        q(t, SCN_UNIT_TIME, b, sizeof b);
        fprintf(out, "  %-12s x%d %s%s%s, memory %s, batch %d, %s %s/batch = %.4g samples/s per device%s\n",
                g->name, g->count, g->kind == SCN_GPU ? "gpu" : "cpu", g->site >= 0 ? " @" : "",
                g->site >= 0 ? s->sites[g->site] : "", a, g->batch, compute_names[g->compute], b,
                t > 0 ? g->batch / t : 0.0, g->count == 0 ? " (skipped: count 0)" : "");
        q(g->link.up_Bps, SCN_UNIT_BANDWIDTH, a, sizeof a);
        q(g->link.down_Bps, SCN_UNIT_BANDWIDTH, c, sizeof c);
        q(g->link.latency_s, SCN_UNIT_TIME, d, sizeof d);
        fprintf(out, "               link up %s%s, down %s%s, latency %s\n", a,
                trace_desc(g->link.up_trace, e, sizeof e), c, trace_desc(g->link.down_trace, f, sizeof f), d);
        if (g->noise_cv > 0 || g->speed_trace)
            fprintf(out, "               noise cv %g%s\n", g->noise_cv,
                    g->speed_trace ? ", speed trace" : "");
        if (g->stragglers.every_s > 0) {
            q(g->stragglers.every_s, SCN_UNIT_TIME, a, sizeof a);
            q(g->stragglers.lasting_s, SCN_UNIT_TIME, b, sizeof b);
            fprintf(out, "               stragglers every %s, lasting %s, factor %g\n", a, b,
                    g->stragglers.factor);
        }
        if (g->avail.mtbf_s > 0) {
            q(g->avail.mtbf_s, SCN_UNIT_TIME, a, sizeof a);
            q(g->avail.mttr_s, SCN_UNIT_TIME, b, sizeof b);
            fprintf(out, "               availability mtbf %s, mttr %s%s\n", a, b,
                    g->avail.data_persists ? "" : ", data lost on failure");
        } else if (g->avail.trace) {
            fprintf(out, "               availability trace%s\n",
                    g->avail.data_persists ? "" : ", data lost on failure");
        }
        if (g->link.outages.n)
            fprintf(out, "               link outages: %zu\n", g->link.outages.n);
        const scn_energy *pw = &g->energy;
        if (pw->on)
            fprintf(out, "               power compute %g W, transmit %g W, receive %g W, idle %g W\n",
                    pw->compute_w, pw->transmit_w, pw->receive_w, pw->idle_w);
        if (pw->battery) {
            static const char *const chg[] = {"no charger", "charger", "Bernoulli charger",
                                              "charger on a trace"};
            fprintf(out, "               battery %.4g Wh, charge %g%%, cutoff %g%%, %s\n",
                    pw->capacity_j / 3600, pw->charge * 100, pw->cutoff * 100, chg[pw->charging]);
        }
    }
    if (rest) {
        gset set = {rest, 0, n_rest};
        print_rest(s, &set, out);
        free(rest);
    }
    double total_rate = 0;
    for (size_t i = 0; i < s->n_groups; i++) {
        double t = scn_batch_time(s, &s->groups[i], s->groups[i].batch);
        if (t > 0)
            total_rate += s->groups[i].count * s->groups[i].batch / t;
    }
    fprintf(out, "total    %zu devices, %.4g samples/s combined\n", s->n_devices, total_rate);
}
