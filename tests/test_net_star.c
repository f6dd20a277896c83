/* The network's star fast path (sim/core/net_star.c, docs/MODEL.md section
 * 2): hand-derived timelines of water-filling through one shared link, and
 * random star worlds run with the fast path and with progressive filling
 * alone, every finish time equal to 1e-9 relative and in the same order. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "net.h"

#include "test_common.h"

TEST_SUITE_NO_LEAKS(net_star);

#define MAXF 1024

typedef struct world world;

typedef struct fl {
    world *w;
    int tag;
    uint64_t id;
    double t_done; /* -1 until done */
    double sent;   /* bytes at its cut, -1 if not cut */
} fl;

struct world {
    sim_engine *e;
    net *n;
    fl f[MAXF];
    int order[MAXF], n_done;
    int star_seen;     /* the fast path held the flows at a completion */
    int star_at[MAXF]; /* ... at each completion */
};

static void on_done(void *ctx, uint64_t id)
{
    (void)id;
    fl *f = ctx;
    f->t_done = sim_now(f->w->e);
    f->w->star_at[f->w->n_done] = net_star_on(f->w->n);
    f->w->order[f->w->n_done++] = f->tag;
    f->w->star_seen |= net_star_on(f->w->n);
}

/* For the bulk placement test: the fewest flows placed at once that go to
 * sorted runs (0: the default), and random sizes rounded to whole units of
 * this many bytes (0: not rounded; rounded sizes make many equal keys). */
static size_t g_bulk;
static double g_quantum;

/* The fast path from `star` active flows on (1: as soon as the structure
 * holds; 0: never). */
static void w_init(world *w, size_t star)
{
    memset(w, 0, sizeof *w);
    w->e = sim_engine_new(NULL);
    w->n = net_new(w->e, NULL);
    net_set_star_min_flows(w->n, star ? star : SIZE_MAX);
    if (g_bulk)
        net_set_star_bulk_min(w->n, g_bulk);
    for (int i = 0; i < MAXF; i++)
        w->f[i] = (fl){w, i, 0, -1, -1};
}

static void w_free(world *w)
{
    net_free(w->n);
    sim_engine_free(w->e);
}

static void start(world *w, int tag, const int *path, size_t np, double bytes, double lat, double cap)
{
    w->f[tag].id = net_flow_start(w->n, path, np, bytes, lat, cap, on_done, &w->f[tag]);
    cr_assert(w->f[tag].id, "flow %d refused", tag);
}

/* ---- scheduled actions ---- */

typedef struct action {
    world *w;
    int kind; /* 0 cancel flow `arg`, 1 set capacity of link `arg`, 2 outage, 3 outage ends, 4 probe */
    int arg;
    double value;
    double got[4];
} action;

static void on_action(sim_engine *e, void *ctx, uint64_t id)
{
    (void)e;
    (void)id;
    action *a = ctx;
    world *w = a->w;
    switch (a->kind) {
    case 0:
        if (w->f[a->arg].t_done < 0 && w->f[a->arg].sent < 0)
            cr_assert_eq(net_flow_cancel(w->n, w->f[a->arg].id, &w->f[a->arg].sent), 0);
        break;
    case 1:
        cr_assert_eq(net_link_set_capacity(w->n, a->arg, a->value), 0);
        break;
    case 2:
    case 3:
        cr_assert_eq(net_link_set_down(w->n, a->arg, a->kind == 2), 0);
        break;
    default: /* rates and remaining bytes of flows 0..3, after this instant's reshare */
        for (int i = 0; i < 4; i++)
            a->got[i] = net_flow_rate(w->n, w->f[i].id);
        a->value = net_star_on(w->n);
        break;
    }
}

static void at(world *w, action *a, double t)
{
    a->w = w;
    cr_assert(sim_at(w->e, t, on_action, a));
}

/* A server NIC `nic` of capacity C and one access link per flow. */
static int add_access(world *w, double cap)
{
    int l = net_link_add(w->n, cap, NULL, "acc");
    cr_assert(l >= 0);
    return l;
}

Test(net_star, equal_flows_share_the_nic)
{
    world w;
    w_init(&w, 1);
    double C = 1e6, S = 3e5;
    int k = 7, nic = net_link_add(w.n, C, NULL, "nic"), acc[7];
    for (int i = 0; i < k; i++) {
        acc[i] = add_access(&w, 1e6 * (1 + i)); /* every one above C / k */
        int p[2] = {nic, acc[i]};
        start(&w, i, p, 2, S, 0, INFINITY);
    }
    sim_run(w.e, INFINITY);
    cr_assert(w.star_seen);
    cr_assert_eq(w.n_done, k);
    for (int i = 0; i < k; i++) {
        expect_close(w.f[i].t_done, k * S / C);
        cr_expect_eq(w.order[i], i, "simultaneous ends in start order");
        expect_close(net_link_peak_util(w.n, acc[i]), C / k / (1e6 * (1 + i)));
        expect_close(net_link_bytes(w.n, acc[i]), S);
    }
    expect_close(net_link_bytes(w.n, nic), k * S);
    expect_close(net_link_busy_s(w.n, nic), k * S / C);
    expect_close(net_link_peak_util(w.n, nic), 1);
    w_free(&w);
}

Test(net_star, processor_sharing_unequal_sizes)
{
    world w;
    w_init(&w, 1);
    double C = 4;
    int nic = net_link_add(w.n, C, NULL, "nic");
    double S[3] = {12, 20, 27};
    for (int i = 0; i < 3; i++) {
        int p[2] = {nic, add_access(&w, INFINITY)};
        start(&w, i, p, 2, S[i], 0, INFINITY);
    }
    sim_run(w.e, INFINITY);
    cr_assert(w.star_seen);
    double t0 = 3 * S[0] / C, t1 = t0 + 2 * (S[1] - S[0]) / C, t2 = t1 + (S[2] - S[1]) / C;
    expect_close(w.f[0].t_done, t0); /* 9 */
    expect_close(w.f[1].t_done, t1); /* 13 */
    expect_close(w.f[2].t_done, t2); /* 14.75 */
    w_free(&w);
}

/* Capped flows A (2 B/s) and B (3 B/s) and uncapped X, Y through 10 B/s:
 * sum min(c, L) = 10 gives L = 8/3, B uncapped; X ends at 3, then L = 5
 * (B capped at 3, Y at 5) until Y ends at 5; A and B at their caps after:
 * B ends at 7, A at 50. */
Test(net_star, level_rises_past_caps)
{
    world w;
    w_init(&w, 1);
    int nic = net_link_add(w.n, 10, NULL, "nic");
    int pa[2] = {nic, add_access(&w, 2)}, pb[2] = {nic, add_access(&w, 100)};
    int px[2] = {nic, add_access(&w, INFINITY)}, py[1] = {nic};
    start(&w, 0, pa, 2, 100, 0, INFINITY);
    start(&w, 1, pb, 2, 20, 0, 3); /* capped by its own rate cap */
    start(&w, 2, px, 2, 8, 0, INFINITY);
    start(&w, 3, py, 1, 18, 0, INFINITY);
    action probe = {.kind = 4}, probe2 = {.kind = 4};
    at(&w, &probe, 1);
    at(&w, &probe2, 4);
    sim_run(w.e, INFINITY);
    cr_assert(w.star_seen);
    cr_assert_eq(probe.value, 1);
    expect_close(probe.got[0], 2);
    expect_close(probe.got[1], 8.0 / 3);
    expect_close(probe.got[2], 8.0 / 3);
    expect_close(probe.got[3], 8.0 / 3);
    expect_close(probe2.got[1], 3);
    expect_close(probe2.got[3], 5);
    expect_close(w.f[2].t_done, 3);
    expect_close(w.f[3].t_done, 5);
    expect_close(w.f[1].t_done, 7);
    expect_close(w.f[0].t_done, 50);
    cr_expect_eq(w.order[0], 2);
    cr_expect_eq(w.order[1], 3);
    cr_expect_eq(w.order[2], 1);
    cr_expect_eq(w.order[3], 0);
    expect_close(net_link_peak_util(w.n, pb[1]), 3.0 / 100); /* its highest rate, capped */
    w_free(&w);
}

/* W (cap 5, 50 B) and A (60 B) through 12 B/s: W at 5, A at 7.  Z (8 B)
 * arrives at 1: 5 + 2L = 12 would put L below W's cap, so W joins the
 * uncapped and L = 4; Z ends at 3, W at 5 and A at 7 again: A ends at
 * 3 + 45/7, W at 3 + 37/5. */
Test(net_star, late_arrival_lowers_level)
{
    world w;
    w_init(&w, 1);
    int nic = net_link_add(w.n, 12, NULL, "nic");
    int pw[2] = {nic, add_access(&w, 5)}, pa[2] = {nic, add_access(&w, 1e9)},
        pz[2] = {nic, add_access(&w, 1e9)};
    start(&w, 0, pw, 2, 50, 0, INFINITY);
    start(&w, 1, pa, 2, 60, 0, INFINITY);
    start(&w, 2, pz, 2, 8, 1, INFINITY);
    action probe = {.kind = 4};
    at(&w, &probe, 2);
    sim_run(w.e, INFINITY);
    cr_assert(w.star_seen);
    expect_close(probe.got[0], 4);
    expect_close(probe.got[1], 4);
    expect_close(probe.got[2], 4);
    expect_close(w.f[2].t_done, 3);
    expect_close(w.f[1].t_done, 3 + 45.0 / 7);
    expect_close(w.f[0].t_done, 3 + 37.0 / 5);
    expect_close(net_link_peak_util(w.n, pa[1]), 7 / 1e9);
    w_free(&w);
}

/* Three 30 B flows at 1 B/s each; the third is cut at 10 (10 B sent); the
 * other two have 20 B left at 1.5 B/s. */
Test(net_star, cancel_in_the_middle)
{
    world w;
    w_init(&w, 1);
    int nic = net_link_add(w.n, 3, NULL, "nic"), acc[3];
    for (int i = 0; i < 3; i++) {
        acc[i] = add_access(&w, 100);
        int p[2] = {nic, acc[i]};
        start(&w, i, p, 2, 30, 0, INFINITY);
    }
    action cut = {.kind = 0, .arg = 2};
    at(&w, &cut, 10);
    sim_run(w.e, INFINITY);
    cr_assert(w.star_seen);
    expect_close(w.f[2].sent, 10);
    cr_expect_eq(w.f[2].t_done, -1, "a cut flow reports nothing");
    expect_close(w.f[0].t_done, 10 + 40.0 / 3);
    expect_close(w.f[1].t_done, 10 + 40.0 / 3);
    expect_close(net_link_bytes(w.n, nic), 70);
    expect_close(net_link_bytes(w.n, acc[2]), 10);
    expect_close(net_link_busy_s(w.n, acc[2]), 10);
    cr_expect_eq(net_link_active(w.n, nic), 0);
    w_free(&w);
}

/* F1 (cap 3) and F2 (uncapped), 20 B each, through 4 B/s: 2 B/s each.  At
 * 2 the link goes to 8 B/s: F1 at 3, F2 at 5, so F2 ends at 2 + 16/5, F1
 * at 2 + 16/3.  And an outage of the shared link from 1 to 1.5 on a second
 * world shifts everything by 0.5. */
Test(net_star, shared_capacity_change_and_outage)
{
    for (int outage = 0; outage < 2; outage++) {
        world w;
        w_init(&w, 1);
        int nic = net_link_add(w.n, 4, NULL, "nic");
        int p1[2] = {nic, add_access(&w, 3)}, p2[2] = {nic, add_access(&w, INFINITY)};
        start(&w, 0, p1, 2, 20, 0, INFINITY);
        start(&w, 1, p2, 2, 20, 0, INFINITY);
        action up = {.kind = 1, .arg = nic, .value = 8}, down = {.kind = 2, .arg = nic},
               back = {.kind = 3, .arg = nic};
        double shift = outage ? 0.5 : 0;
        at(&w, &up, 2 + shift);
        if (outage) {
            at(&w, &down, 1);
            at(&w, &back, 1.5);
        }
        sim_run(w.e, INFINITY);
        cr_assert(w.star_seen);
        expect_close(w.f[1].t_done, 2 + shift + 16.0 / 5);
        expect_close(w.f[0].t_done, 2 + shift + 16.0 / 3);
        expect_close(net_link_peak_util(w.n, nic), 1);
        w_free(&w);
    }
}

/* A private link's capacity changes: only its flow's cap moves.  Two 20 B
 * flows through 4 B/s; at 2 flow 0's access link drops to 1 B/s: flow 1
 * gets 3 B/s and ends at 2 + 16/3; flow 0 then has 16 - 16/3 left, at 1
 * B/s. */
Test(net_star, private_capacity_change)
{
    world w;
    w_init(&w, 1);
    int nic = net_link_add(w.n, 4, NULL, "nic");
    int p0[2] = {nic, add_access(&w, 10)}, p1[2] = {nic, add_access(&w, 10)};
    start(&w, 0, p0, 2, 20, 0, INFINITY);
    start(&w, 1, p1, 2, 20, 0, INFINITY);
    action drop = {.kind = 1, .arg = p0[1], .value = 1};
    at(&w, &drop, 2);
    sim_run(w.e, INFINITY);
    cr_assert(w.star_seen);
    double t1 = 2 + 16.0 / 3;
    expect_close(w.f[1].t_done, t1);
    expect_close(w.f[0].t_done, t1 + (16 - 16.0 / 3));
    expect_close(net_link_peak_util(w.n, p1[1]), 0.3); /* 3 B/s of 10 after the drop */
    expect_close(net_link_peak_util(w.n, p0[1]), 1);   /* 1 B/s of 1 */
    w_free(&w);
}

/* No shared link at all: every flow runs at its own access link. */
Test(net_star, private_links_only)
{
    world w;
    w_init(&w, 1);
    for (int i = 0; i < 5; i++) {
        int p[2] = {add_access(&w, 1 + i), net_link_add(w.n, INFINITY, NULL, "wan")};
        start(&w, i, p, 2, 10, 0.5 * i, INFINITY);
    }
    sim_run(w.e, INFINITY);
    cr_assert(w.star_seen);
    for (int i = 0; i < 5; i++)
        expect_close(w.f[i].t_done, 0.5 * i + 10.0 / (1 + i));
    w_free(&w);
}

/* ---- against progressive filling ---- */

typedef struct rnd {
    uint64_t s;
} rnd;

static double uni(rnd *r)
{
    r->s = r->s * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(r->s >> 11) / 9007199254740992.0;
}

/* A looping trace around `mean`: four steps (0.3 to 1.6 times it) over
 * about a tenth of T. */
static trace *looping_trace(double mean, double T, rnd *r)
{
    char csv[512];
    double t = 0;
    int len = 0;
    for (int k = 0; k < 4; k++) {
        len += snprintf(csv + len, sizeof csv - (size_t)len, "%.17g,%.17g\n", t, mean * (0.3 + 1.3 * uni(r)));
        t += T * (0.01 + 0.03 * uni(r));
    }
    len += snprintf(csv + len, sizeof csv - (size_t)len, "%.17g,%.17g\n", t, mean);
    trace_opts o = {TRACE_FMT_CSV, 0, 0, 1, 0};
    dp_err err = {0};
    trace *tr = trace_read_buffer("random.csv", csv, (size_t)len, &o, &err);
    cr_assert_not_null(tr, "%s", err.msg);
    return tr;
}

typedef struct run_out {
    double t[MAXF], sent[MAXF];
    int order[MAXF], n_done, star_seen, star_at[MAXF];
    double t_intruder; /* when the intruder becomes active */
    double bytes[MAXF + 8], busy[MAXF + 8], peak[MAXF + 8];
    int n_links;
} run_out;

/* A random star world: flows with private access links (some with a rate
 * cap, some unlimited), random sizes and arrivals through a NIC; cancels,
 * NIC and access capacity changes, access outages and a NIC outage at random
 * times.
 * `hubs`: 1, every flow through the NIC; 2, even flows through the NIC and
 * odd ones through a second shared link (a NIC's other direction); 0, the
 * flows share no link (the NIC's actions then act on an idle link).
 * `intruder`: a flow from 0.3 T to its end that crosses flow 0's access
 * link and no NIC, or with two hubs both of them (the structure breaks
 * while it runs, and comes back).  `traced`: the NIC's capacity and every
 * seventh access link's follow looping traces (breakpoints every few
 * percent of the run). */
static void random_world(uint64_t seed, int F, size_t star, int intruder, int hubs, int traced, run_out *out)
{
    static world w;
    static action acts[4 * MAXF + 16];
    int na = 0;
    rnd r = {seed * 0x9e3779b97f4a7c15ull + 1};
    w_init(&w, star);
    double C = 1e6 * (1 + 9 * uni(&r)), T0 = 1e5 * 50 * F / C; /* about the run's length */
    trace *tr = traced ? looping_trace(C, T0, &r) : NULL;
    int nic = net_link_add(w.n, C, tr, "nic"), acc[MAXF];
    trace_free(tr);
    int nic2 = net_link_add(w.n, 0.7 * C, NULL, "nic2");
    double T = 0;
    for (int i = 0; i < F; i++) {
        double u = uni(&r), a = u < 0.1 ? INFINITY : C * (0.001 + 0.2 * uni(&r));
        tr = traced && i % 7 == 0 && isfinite(a) ? looping_trace(a, T0, &r) : NULL;
        acc[i] = net_link_add(w.n, a, tr, "acc");
        cr_assert(acc[i] >= 0);
        trace_free(tr);
        double cap = uni(&r) < 0.2 ? C * 0.05 * uni(&r) + 1 : INFINITY;
        double bytes = uni(&r) < 0.02 ? 0 : 1e5 * (1 + 100 * uni(&r));
        if (g_quantum > 0)
            bytes = g_quantum * ceil(bytes / g_quantum);
        double lat = uni(&r) < 0.3 ? 0 : 20 * uni(&r);
        int p[3] = {acc[i], hubs == 2 && i % 2 ? nic2 : nic, acc[i]};
        start(&w, i, p, hubs ? 3 : 1, bytes, lat, cap);
        T += bytes / C;
    }
    for (int i = 0; i < F / 10; i++) { /* cancels */
        acts[na] = (action){.kind = 0, .arg = (int)(uni(&r) * F)};
        at(&w, &acts[na++], T * uni(&r));
    }
    for (int i = 0; i < F / 20; i++) { /* access capacity changes */
        acts[na] = (action){.kind = 1, .arg = acc[(int)(uni(&r) * F)], .value = C * (0.001 + 0.3 * uni(&r))};
        at(&w, &acts[na++], T * uni(&r));
    }
    for (int i = 0; i < 4; i++) { /* NIC capacity changes */
        acts[na] = (action){.kind = 1, .arg = i % 2 ? nic2 : nic, .value = C * (0.5 + uni(&r))};
        at(&w, &acts[na++], T * uni(&r));
    }
    for (int i = 0; i < 3; i++) { /* access link outages: a flow's cap drops to 0 and back */
        int l = acc[(int)(uni(&r) * F)];
        double t = T * uni(&r);
        acts[na] = (action){.kind = 2, .arg = l};
        at(&w, &acts[na++], t);
        acts[na] = (action){.kind = 3, .arg = l};
        at(&w, &acts[na++], t + 0.02 * T);
    }
    acts[na] = (action){.kind = 2, .arg = nic};
    double t_out = 0.4 * T * uni(&r);
    at(&w, &acts[na++], t_out);
    acts[na] = (action){.kind = 3, .arg = nic};
    at(&w, &acts[na++], t_out + 0.05 * T);
    if (intruder) {
        int p[2] = {acc[0], nic2};
        if (hubs == 2)
            p[0] = nic;
        start(&w, F, p, hubs == 2 ? 2 : 1, 1e5 * 20, 0.3 * T, INFINITY);
    }
    out->t_intruder = 0.3 * T;
    sim_run(w.e, traced ? 1e3 * T + 1e3 : INFINITY); /* looping traces never end */
    out->n_done = w.n_done;
    out->star_seen = w.star_seen;
    for (int i = 0; i < F + intruder; i++) {
        out->t[i] = w.f[i].t_done;
        out->sent[i] = w.f[i].sent;
    }
    memcpy(out->order, w.order, sizeof w.order);
    memcpy(out->star_at, w.star_at, sizeof w.star_at);
    out->n_links = (int)net_link_count(w.n);
    for (int l = 0; l < out->n_links; l++) {
        out->bytes[l] = net_link_bytes(w.n, l);
        out->busy[l] = net_link_busy_s(w.n, l);
        out->peak[l] = net_link_peak_util(w.n, l);
    }
    cr_assert_eq(net_flows_active(w.n), 0);
    cr_assert_eq(net_flows_pending(w.n), 0);
    w_free(&w);
}

/* Returns how the fast path held the flows at completions before, during
 * and after the intruder (bits 1, 2, 4 = on at some completion there; 8 =
 * off at some completion during). */
static int compare(uint64_t seed, int F, size_t star, int intruder, int hubs, int traced)
{
    static run_out a, b;
    random_world(seed, F, star, intruder, hubs, traced, &a);
    random_world(seed, F, 0, intruder, hubs, traced, &b);
    cr_assert(a.star_seen, "seed %llu: the fast path never held the flows", (unsigned long long)seed);
    cr_assert(!b.star_seen);
    cr_assert_eq(a.n_done, b.n_done, "seed %llu", (unsigned long long)seed);
    cr_assert(a.n_done > F / 2);
    for (int i = 0; i < F + intruder; i++) {
        double want = b.t[i], got = a.t[i];
        cr_expect(fabs(got - want) <= 1e-9 * fmax(1.0, fabs(want)),
                  "seed %llu flow %d ends at %.17g, want %.17g", (unsigned long long)seed, i, got, want);
        cr_expect(fabs(a.sent[i] - b.sent[i]) <= 1e-9 * fmax(1.0, fabs(b.sent[i])),
                  "seed %llu flow %d cut after %.17g B, want %.17g", (unsigned long long)seed, i, a.sent[i],
                  b.sent[i]);
    }
    for (int k = 0; k < a.n_done; k++)
        cr_expect_eq(a.order[k], b.order[k], "seed %llu: completion %d", (unsigned long long)seed, k);
    for (int l = 0; l < a.n_links; l++) {
        cr_expect(fabs(a.bytes[l] - b.bytes[l]) <= 1e-9 * fmax(1.0, b.bytes[l]), "seed %llu link %d bytes",
                  (unsigned long long)seed, l);
        cr_expect(fabs(a.busy[l] - b.busy[l]) <= 1e-9 * fmax(1.0, b.busy[l]), "seed %llu link %d busy",
                  (unsigned long long)seed, l);
        cr_expect(fabs(a.peak[l] - b.peak[l]) <= 1e-9, "seed %llu link %d peak %.17g, want %.17g",
                  (unsigned long long)seed, l, a.peak[l], b.peak[l]);
    }
    for (int k = 0; k < a.n_done && !intruder; k++)
        cr_expect(a.star_at[k], "seed %llu: completion %d off the fast path", (unsigned long long)seed, k);
    int seen = 0;
    for (int k = 0; k < a.n_done && intruder; k++) {
        double t = a.t[a.order[k]];
        int phase = t < a.t_intruder ? 0 : t < a.t[F] ? 1 : 2;
        seen |= a.star_at[k] ? 1 << phase : phase == 1 ? 8 : 0;
    }
    return seen;
}

Test(net_star, random_worlds_match_progressive_filling)
{
    for (uint64_t seed = 1; seed <= 8; seed++)
        compare(seed, 100 + (int)(seed * 97 % 400), 1, 0, 1, 0);
}

/* Entering when 64 flows are active, with the others part-way. */
Test(net_star, random_worlds_entered_mid_run)
{
    for (uint64_t seed = 21; seed <= 24; seed++)
        compare(seed, 400, 64, 0, 1, 0);
}

/* Access links only (no shared link): every flow at its own cap. */
Test(net_star, random_worlds_without_shared_link)
{
    for (uint64_t seed = 31; seed <= 34; seed++)
        compare(seed, 300, 1, 0, 0, 0);
}

/* Two shared links, each flow on one (a NIC's up and down directions): two
 * water-fillings side by side. */
Test(net_star, random_worlds_with_two_hubs)
{
    for (uint64_t seed = 41; seed <= 44; seed++)
        compare(seed, 300, 1, 0, 2, 0);
}

/* The NIC and some access links follow looping traces: capacity changes of
 * the hub and of private links at every breakpoint. */
Test(net_star, random_worlds_with_traces)
{
    for (uint64_t seed = 51; seed <= 54; seed++)
        compare(seed, 200, 1, 0, seed % 2 + 1, 1);
}

Test(net_star, leaves_and_comes_back_exactly)
{
    for (uint64_t seed = 11; seed <= 18; seed++) {
        int seen = compare(seed, 300, 1, 1, seed <= 14 ? 1 : 2, 0); /* then a flow on both hubs */
        cr_expect(seen & 1, "seed %llu: on before the intruder", (unsigned long long)seed);
        cr_expect(!(seen & 2), "seed %llu: on while a flow left the star", (unsigned long long)seed);
        cr_expect(seen & 8, "seed %llu: no completion while the intruder ran", (unsigned long long)seed);
        cr_expect(seen & 4, "seed %llu: not on again after the intruder", (unsigned long long)seed);
    }
}

/* Bulk placements (sorted runs beside the heaps) change no bit: the same
 * worlds with every placement in bulk and with none, star path on in both,
 * give the same finish times, cut sizes, order and link figures exactly.
 * Sizes rounded to whole units make many flows end at one instant (equal
 * keys, ordered by entry). */
static void compare_bulk(uint64_t seed, int F, size_t star, int intruder, int hubs, int traced,
                         double quantum)
{
    static run_out a, b;
    g_quantum = quantum;
    g_bulk = 1;
    random_world(seed, F, star, intruder, hubs, traced, &a);
    g_bulk = SIZE_MAX;
    random_world(seed, F, star, intruder, hubs, traced, &b);
    g_bulk = 0;
    g_quantum = 0;
    cr_assert(a.star_seen && b.star_seen, "seed %llu: the fast path never held the flows",
              (unsigned long long)seed);
    cr_assert_eq(a.n_done, b.n_done, "seed %llu", (unsigned long long)seed);
    for (int i = 0; i < F + intruder; i++) {
        cr_expect(a.t[i] == b.t[i] || (isnan(a.t[i]) && isnan(b.t[i])),
                  "seed %llu flow %d ends at %.17g, without bulk %.17g", (unsigned long long)seed, i, a.t[i],
                  b.t[i]);
        cr_expect(a.sent[i] == b.sent[i], "seed %llu flow %d cut after %.17g B, without bulk %.17g",
                  (unsigned long long)seed, i, a.sent[i], b.sent[i]);
    }
    for (int k = 0; k < a.n_done; k++)
        cr_expect_eq(a.order[k], b.order[k], "seed %llu: completion %d", (unsigned long long)seed, k);
    for (int k = 0; k < a.n_done; k++)
        cr_expect_eq(a.star_at[k], b.star_at[k], "seed %llu: completion %d", (unsigned long long)seed, k);
    for (int l = 0; l < a.n_links; l++) {
        cr_expect(a.bytes[l] == b.bytes[l], "seed %llu link %d bytes", (unsigned long long)seed, l);
        cr_expect(a.busy[l] == b.busy[l], "seed %llu link %d busy", (unsigned long long)seed, l);
        cr_expect(a.peak[l] == b.peak[l], "seed %llu link %d peak", (unsigned long long)seed, l);
    }
}

Test(net_star, bulk_placement_changes_no_bit)
{
    for (uint64_t seed = 61; seed <= 64; seed++) {
        compare_bulk(seed, 500, 1, 0, (int)(seed % 3), 0, 0);     /* one hub, two, none */
        compare_bulk(seed, 500, 1, 0, (int)(seed % 3), 0, 2e6);   /* ... with many equal keys */
        compare_bulk(seed, 400, 64, 0, 1, 0, 1e6);                /* entered mid-run */
        compare_bulk(seed, 300, 1, 1, seed <= 62 ? 1 : 2, 0, 0);  /* left and entered again */
        compare_bulk(seed, 200, 1, 0, (int)(seed % 2) + 1, 1, 0); /* traced capacities */
    }
}

/* Bulk placements of thousands of flows: with distinct sizes (more keys
 * than the few-keys sort takes: the radix sort), with a handful of sizes
 * (the few-keys sort), with keys negative and equal (caps under a shared
 * link), every finish time and the order the same bits as without runs. */
static int bulk_order[8192], bulk_n;
static double bulk_t[8192];
static sim_engine *bulk_e;
static void on_bulk_done(void *ctx, uint64_t id)
{
    (void)id;
    int tag = (int)(intptr_t)ctx;
    bulk_t[tag] = sim_now(bulk_e);
    bulk_order[bulk_n++] = tag;
}

/* F flows through access links (and a NIC if shared), started, not run;
 * the engine in bulk_e. */
static net *bulk_net(int F, int sizes, int shared, size_t bulk)
{
    bulk_e = sim_engine_new(NULL);
    net *n = net_new(bulk_e, NULL);
    net_set_star_min_flows(n, 1);
    net_set_star_bulk_min(n, bulk);
    rnd r = {(uint64_t)(F * 31 + sizes * 7 + shared)};
    int nic = net_link_add(n, shared ? 1e9 : INFINITY, NULL, "nic");
    for (int i = 0; i < F; i++) {
        int acc = net_link_add(n, 1e6 * (1 + (i % 5)), NULL, NULL);
        int p[2] = {acc, nic};
        double bytes = sizes ? 1e4 * (1 + i % sizes) : 1e4 * (1 + 100 * uni(&r));
        double cap = shared && i % 3 == 0 ? 1e5 * (1 + i % 4) : INFINITY;
        cr_assert(net_flow_start(n, p, 2, bytes, 0, cap, on_bulk_done, (void *)(intptr_t)i));
        bulk_t[i] = -1;
    }
    bulk_n = 0;
    return n;
}

static void bulk_world(int F, int sizes, int shared, size_t bulk, double *t, int *order)
{
    net *n = bulk_net(F, sizes, shared, bulk);
    sim_run(bulk_e, INFINITY);
    cr_assert_eq(bulk_n, F);
    memcpy(t, bulk_t, (size_t)F * sizeof *t);
    memcpy(order, bulk_order, (size_t)F * sizeof *order);
    net_free(n);
    sim_engine_free(bulk_e);
}

Test(net_star, bulk_sorts_many_and_few_keys)
{
    static double ta[8192], tb[8192];
    static int oa[8192], ob[8192];
    int cases[][3] = {{6000, 0, 0}, {6000, 3, 0}, {6000, 0, 1}, {6000, 4, 1}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        int F = cases[c][0], sizes = cases[c][1], shared = cases[c][2];
        bulk_world(F, sizes, shared, 1, ta, oa);
        bulk_world(F, sizes, shared, SIZE_MAX, tb, ob);
        for (int i = 0; i < F; i++) {
            cr_expect(ta[i] == tb[i], "case %zu flow %d ends at %.17g, without runs %.17g", c, i, ta[i],
                      tb[i]);
            cr_expect_eq(oa[i], ob[i], "case %zu: completion %d", c, i);
        }
    }
}

/* One allocation of a run whose placements all go to runs (appending,
 * the sort's scratch, the few-keys table) fails, each in turn, the others
 * succeed: the run ends with every flow done at the times of an unhindered
 * one (the same bits, or up to rounding where the failure handed the flows
 * back to progressive filling), or stops and says so (net_out_of_memory,
 * or the engine's sim_error) with the flows that ended before as
 * unhindered; nothing leaks. */
Test(net_star, bulk_out_of_memory_anywhere)
{
    static double ref[8192];
    static int ref_order[8192];
    int F = 300;
    for (int shared = 0; shared < 2; shared++) { /* flows at their caps; and through a NIC */
        bulk_world(F, 0, shared, 1, ref, ref_order);
        int completed = 0, stopped = 0;
        for (long k = 1; k < 300; k++) {
            long live = dp_alloc_live();
            net *n = bulk_net(F, 0, shared, 1);
            dp_alloc_fail_once(k);
            sim_run(bulk_e, INFINITY);
            dp_alloc_fail_after(0);
            int stop = net_out_of_memory(n) || sim_error(bulk_e);
            stopped += stop;
            completed += !stop;
            if (!stop)
                cr_expect_eq(bulk_n, F, "shared %d, k = %ld: neither finished nor stopped", shared, k);
            for (int i = 0; i < F; i++)
                cr_expect(
                    stop ? bulk_t[i] < 0 || bulk_t[i] == ref[i] : fabs(bulk_t[i] - ref[i]) <= 1e-9 * ref[i],
                    "shared %d, k = %ld flow %d ends at %.17g, want %.17g", shared, k, i, bulk_t[i], ref[i]);
            net_free(n);
            sim_engine_free(bulk_e);
            cr_expect_eq(dp_alloc_live(), live, "shared %d, k = %ld: blocks leaked", shared, k);
        }
        cr_expect(stopped > 0 && completed > 0, "shared %d: %d runs stopped, %d completed", shared, stopped,
                  completed);
    }
}
