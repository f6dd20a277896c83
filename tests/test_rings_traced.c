/* test_rings_traced.c: ring rounds in closed form across links that follow
 * a trace (collective.c: the net suspends a held link's trace and the
 * closed form integrates the piecewise-constant capacity itself; issue 39).
 * Each case against a hand-computed integral of the trace and against the
 * same run round by round as flows (coll_set_per_flow(1), the reference):
 * the same to rounding (1e-12), with fewer events; the trace goes on after
 * the hold as if it had never stopped; the held links' statistics are the
 * flows'. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"
#include "policy/runtime.h"
#include "world.h"

#include "test_common.h"
#include "policy_helpers.h"

TEST_SUITE_NO_LEAKS(rings_traced);

#define TR_REL 1e-12

static void expect_near(double got, double want, const char *what)
{
    cr_expect(fabs(got - want) <= TR_REL * fmax(1.0, fabs(want)), "%s = %.17g, want %.17g", what, got, want);
}

/* Two devices: a (80 Mbit/s both ways, 1 ms) and b (80 Mbit/s up, 2 ms),
 * whose down link follows tests/data/trace-ring.csv: 2e6 B/s, 6e6 from
 * 1 s, 1e6 from 1.5 s, 4e6 from 5 s, 8e6 from 6 s.  The ring a -> b crosses
 * it (a's up link, 1e7 B/s, then b's down); b -> a runs at 1e7 B/s.  An
 * outage long after the run makes it a dynamic world, whose results carry
 * the links' statistics. */
static const char *TWO =
    "name: two\n"
    "model: { name: m, params: 2000000, flops_per_sample: 1.0e6 }\n"
    "dataset: { name: d, samples: 64, sample_bytes: 1000 }\n"
    "training: { epochs: 1 }\n"
    "devices:\n"
    "  - { name: a, kind: gpu, memory: 1GiB, batch: 4, batch_time: 0.3s,\n"
    "      link: { up: 80Mbps, down: 80Mbps, latency: 1ms, outages: [[1000s, 1001s]] } }\n"
    "  - { name: b, kind: gpu, memory: 1GiB, batch: 4, batch_time: 0.3s,\n"
    "      link: { up: 80Mbps, down_trace: %s/tests/data/trace-ring.csv, latency: 2ms } }\n";

static scn_scenario *load_two(void)
{
    const char *src = getenv("DPSIM_SRC");
    cr_assert(src, "DPSIM_SRC");
    char text[4096];
    snprintf(text, sizeof text, TWO, src);
    return load(text, NULL, 0);
}

/* The policy: one all-reduce of 8e6 B (chunks of 4e6 B, 2 rounds) at
 * tr_t0; a foreign flow of 6e6 B from the server to b at tr_foe (after the
 * ring ends when negative); the epoch ends when both are done.  It notes
 * the two paths, the ring's end and the flow's. */
static double tr_t0, tr_foe;
static double lat_ab, lat_ba, lat_sb, ring_end, foe_end;
static int link_aup, link_bdown, pending;
static double sb_min_cap; /* the server -> b path's untraced capacities */

static double now_of(prt *rt)
{
    return sim_now(world_engine(prt_world(rt)));
}

static void one_done(prt *rt)
{
    if (--pending == 0)
        prt_end_epoch(rt);
}
static void foe_done(void *ctx, uint64_t id)
{
    (void)id;
    prt *rt = ctx;
    foe_end = now_of(rt);
    one_done(rt);
}
static void foe_send(prt *rt, void *ctx)
{
    (void)ctx;
    cr_assert(world_transfer(prt_world(rt), 0, 2, 6e6, foe_done, rt));
}
static void ring_done(prt *rt, void *ctx)
{
    (void)ctx;
    ring_end = now_of(rt);
    if (tr_foe < 0)
        foe_send(rt, NULL);
    one_done(rt);
}
static void ring_go(prt *rt, void *ctx)
{
    (void)ctx;
    cr_assert_eq(coll_start(rt, COLL_ALLREDUCE, 8e6, PRT_COLL_FLOWS, ring_done, NULL), 0);
}
static int tr_start(prt *rt, const void *opts)
{
    (void)opts;
    world *w = prt_world(rt);
    net *n = world_net(w);
    for (size_t d = 0; d < prt_n(rt); d++)
        prt_share(rt)[d] = 32;
    int links[8];
    size_t nl;
    cr_assert_eq(world_path(w, 1, 2, links, &nl, &lat_ab), 0);
    link_aup = links[0];
    link_bdown = links[nl - 1];
    cr_assert(net_link_has_trace(n, link_bdown) && !net_link_has_trace(n, link_aup));
    cr_assert_eq(world_path(w, 2, 1, links, &nl, &lat_ba), 0);
    cr_assert_eq(world_path(w, 0, 2, links, &nl, &lat_sb), 0);
    sb_min_cap = INFINITY;
    for (size_t j = 0; j + 1 < nl; j++)
        sb_min_cap = fmin(sb_min_cap, net_link_capacity(n, links[j]));
    pending = 2;
    if (tr_foe >= 0 && prt_at(rt, tr_foe, foe_send, NULL))
        return DP_ENOMEM;
    return prt_at(rt, tr_t0, ring_go, NULL);
}
static const policy_def policy_ringtr = {
    .name = "ringtraced",
    .label = "ringtraced",
    .color = "#000000",
    .summary = "one ring over a traced link and a foreign flow (test)",
    .start = tr_start,
    .free = early_free,
};

typedef struct outcome {
    res_run *r;
    double ring_end, foe_end;
} outcome;

static outcome tr_run(const scn_scenario *s, double t0, double foe, int per_flow)
{
    static int registered;
    dp_err err = {0};
    if (!registered++)
        cr_assert_eq(policy_register(&policy_ringtr, &err), 0, "%s", err.msg);
    tr_t0 = t0;
    tr_foe = foe;
    coll_set_per_flow(per_flow);
    outcome o = {run(&policy_ringtr, s), 0, 0};
    coll_set_per_flow(0);
    o.ring_end = ring_end;
    o.foe_end = foe_end;
    return o;
}

static double link_stat(const res_run *r, const char *name, int link)
{
    const res_stat *x = res_find_stat(r, name, RES_SCOPE_LINK, link, 0);
    cr_assert(x, "%s[%d]", name, link);
    return x->value;
}

/* The two runs agree: times, devices, every statistic (the links' bytes,
 * busy fractions and peak shares) to TR_REL; the closed form with fewer
 * events when `fewer`. */
static void expect_agree(const outcome *cf, const outcome *pf, int fewer)
{
    if (fewer)
        cr_expect_lt(cf->r->events, pf->r->events, "closed form %llu events, per flow %llu",
                     (unsigned long long)cf->r->events, (unsigned long long)pf->r->events);
    expect_near(cf->ring_end, pf->ring_end, "ring end");
    expect_near(cf->foe_end, pf->foe_end, "foreign flow's end");
    expect_near(cf->r->tsend_s, pf->r->tsend_s, "tsend");
    expect_near(cf->r->ttotal_s, pf->r->ttotal_s, "ttotal");
    cr_assert_eq(cf->r->n_devices, pf->r->n_devices);
    for (size_t d = 0; d < cf->r->n_devices; d++) {
        const res_device *a = &cf->r->devices[d], *b = &pf->r->devices[d];
        expect_near(a->bytes_sent, b->bytes_sent, "bytes_sent");
        expect_near(a->bytes_recv, b->bytes_recv, "bytes_recv");
        expect_near(a->send_s, b->send_s, "send_s");
        expect_near(a->recv_s, b->recv_s, "recv_s");
    }
    cr_assert_eq(cf->r->n_stats, pf->r->n_stats);
    for (size_t k = 0; k < cf->r->n_stats; k++) {
        cr_assert_str_eq(cf->r->stats[k].name, pf->r->stats[k].name);
        expect_near(cf->r->stats[k].value, pf->r->stats[k].value, cf->r->stats[k].name);
    }
}

/* The ring at 0.25 s, the foreign flow after it.  By hand (C = 4e6 B a
 * chunk; a -> b at min(1e7, trace), b -> a at 1e7):
 *   round 1: a -> b active at a1 = 0.25 + lat_ab at 2e6 B/s until 1 s,
 *            the rest at 6e6: e1 = 1 + (C - 2e6 (1 - a1)) / 6e6 (< 1.5);
 *            b -> a ends at 0.25 + lat_ba + C / 1e7, earlier;
 *   round 2: from e1, active at a2 = e1 + lat_ab, 6e6 until 1.5 s, 1e6
 *            until 5 s, then 4e6: e2 = 5 + (C - 6e6 (1.5 - a2) - 3.5e6) / 4e6;
 * the held trace's changes at 1.5 s and 5 s fired no event.  Then the
 * foreign flow, active at af = e2 + lat_sb, sees the capacity the trace
 * has after the hold: 4e6 until its change at 6 s, then 8e6:
 *   ef = 6 + (6e6 - 4e6 (6 - af)) / 8e6.
 * a's up link carried 8e6 B, busy (e1 - a1) + (e2 - a2), at most 6e6 of
 * its 1e7 B/s at once: peak 0.6. */
Test(rings_traced, ring_over_a_traced_link_is_the_trace_integral)
{
    scn_scenario *s = load_two();
    outcome pf = tr_run(s, 0.25, -1, 1);
    outcome cf = tr_run(s, 0.25, -1, 0);
    cr_assert(sb_min_cap >= 8e6, "the foreign flow's bottleneck is the trace (%.17g)", sb_min_cap);
    const double C = 4e6;
    double a1 = 0.25 + lat_ab, e1 = 1 + (C - 2e6 * (1 - a1)) / 6e6;
    cr_assert(a1 < 1 && e1 > 1 && e1 < 1.5, "e1 = %.17g", e1);
    cr_assert(0.25 + lat_ba + C / 1e7 < e1);
    double a2 = e1 + lat_ab, left = C - 6e6 * (1.5 - a2);
    cr_assert(a2 < 1.5 && left > 3.5e6 && left < 3.5e6 + 4e6, "left at 1.5 s: %.17g", left);
    double e2 = 5 + (left - 3.5e6) / 4e6;
    cr_assert(e1 + lat_ba + C / 1e7 < e2);
    double af = e2 + lat_sb, ef = 6 + (6e6 - 4e6 * (6 - af)) / 8e6;
    cr_assert(af < 6 && ef > 6);
    expect_near(cf.ring_end, e2, "ring end (closed form)");
    expect_near(pf.ring_end, e2, "ring end (flows)");
    expect_near(cf.foe_end, ef, "foreign flow after the hold (closed form)");
    expect_near(pf.foe_end, ef, "foreign flow (flows)");
    /* a's up link: the ring's only (statistics of a dynamic world: the trace) */
    double busy = (e1 - a1) + (e2 - a2);
    expect_near(link_stat(cf.r, "link.bytes", link_aup), 8e6, "a up: bytes");
    expect_near(link_stat(cf.r, "link.busy_fraction", link_aup) * cf.r->ttotal_s, busy, "a up: busy s");
    expect_near(link_stat(cf.r, "link.peak_util", link_aup), 0.6, "a up: peak");
    /* b's down link: the ring's and the foreign flow's */
    expect_near(link_stat(cf.r, "link.bytes", link_bdown), 8e6 + 6e6, "b down: bytes");
    expect_near(link_stat(cf.r, "link.busy_fraction", link_bdown) * cf.r->ttotal_s, busy + (ef - af),
                "b down: busy s");
    expect_near(link_stat(cf.r, "link.peak_util", link_bdown), 1, "b down: peak");
    expect_agree(&cf, &pf, 1);
    res_run_free(pf.r);
    res_run_free(cf.r);
    scn_free(s);
}

/* The ring starts at 0.25 s and a foreign flow onto b's down link becomes
 * active in its second round (sent at 1.7 s): the collective takes the
 * round back at that instant (its traced edge's flow with the bytes the
 * trace integral left it, the trace resumed first), and everything goes
 * on as flows, as round by round. */
Test(rings_traced, foreign_flow_takes_a_traced_round_back)
{
    scn_scenario *s = load_two();
    outcome pf = tr_run(s, 0.25, 1.7, 1);
    outcome cf = tr_run(s, 0.25, 1.7, 0);
    cr_expect_gt(pf.ring_end, 5.5, "the foreign flow slowed the ring (%.17g)", pf.ring_end);
    expect_agree(&cf, &pf, 1);
    res_run_free(pf.r);
    res_run_free(cf.r);
    /* and in the first round, before the activation of its traced flow
     * (0.251 s: a takeback with the flow still in its latency) */
    pf = tr_run(s, 0.25, 0.2505 - lat_sb, 1);
    cf = tr_run(s, 0.25, 0.2505 - lat_sb, 0);
    expect_agree(&cf, &pf, 0);
    res_run_free(pf.r);
    res_run_free(cf.r);
    scn_free(s);
}

/* DDP over four devices, two of whose ring links follow looping traces
 * (a real LTE shape rescaled to 40 Mbit/s on c's down link, a 50/100
 * Mbit/s step on e's up link): every collective's rounds in closed form
 * across their changes, the same as flows to TR_REL, in far fewer events. */
Test(rings_traced, ddp_over_looping_traces_matches_flows)
{
    const char *src = getenv("DPSIM_SRC");
    cr_assert(src);
    char text[8192];
    snprintf(text, sizeof text,
             "name: star\n"
             "model: { name: m, params: 2000000, flops_per_sample: 1.0e6 }\n"
             "dataset: { name: d, samples: 64, sample_bytes: 1000 }\n"
             "training: { epochs: 2 }\n"
             "devices:\n"
             "  - { name: a, kind: gpu, memory: 1GiB, batch: 4, batch_time: 0.3s,\n"
             "      link: { up: 80Mbps, down: 80Mbps, latency: 1ms } }\n"
             "  - { name: b, kind: gpu, memory: 1GiB, batch: 4, batch_time: 0.5s,\n"
             "      link: { up: 40Mbps, down: 100Mbps, latency: 17ms } }\n"
             "  - { name: c, kind: cpu, memory: 1GiB, batch: 4, batch_time: 0.9s,\n"
             "      link: { up: 25Mbps, latency: 5ms,\n"
             "              down_trace: { file: %s/traces/verizon-lte-down-1s.csv, mean: 40Mbps, loop: true "
             "} } }\n"
             "  - { name: e, kind: cpu, memory: 1GiB, batch: 4, batch_time: 0.4s,\n"
             "      link: { up_trace: { file: %s/traces/step-50-100Mbps.csv, loop: true }, down: 30Mbps,\n"
             "              latency: 40ms } }\n"
             "policies: { ddp: { data: shard, bucket: 2MB } }\n",
             src, src);
    scn_scenario *s = load(text, NULL, 0);
    coll_set_per_flow(1);
    outcome pf = {run(policy_find("ddp"), s), 0, 0};
    coll_set_per_flow(0);
    outcome cf = {run(policy_find("ddp"), s), 0, 0};
    expect_agree(&cf, &pf, 1);
    cr_expect_lt(2 * cf.r->events, pf.r->events, "closed form %llu events, per flow %llu",
                 (unsigned long long)cf.r->events, (unsigned long long)pf.r->events);
    res_run_free(pf.r);
    res_run_free(cf.r);
    scn_free(s);
}
