/* test_rings.c: the collectives against hand timelines and against each
 * other (split from test_policy.c, whose two-device world and helpers it
 * shares through policy_helpers.h): ring rounds in closed form against
 * round-by-round flows, analytic collectives under outages and shared
 * links, and pipelined rings. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policy/cadp.h"
#include "policy/policy.h"
#include "compute.h"
#include "policy/runtime.h"
#include "policy/runtime_perf.h"
#include "world.h"
#include "slv.h"

#include "test_common.h"
#include "policy_helpers.h"

TEST_SUITE_NO_LEAKS(rings);

/* ---- ring rounds in closed form against round-by-round flows -------------
 * collective.c runs a ring's rounds as one event when each of its links
 * carries only one ring flow and nothing else (docs/MODEL.md section 2).
 * Each case runs twice, round by round (coll_set_per_flow(1), the reference)
 * and with the closed form allowed, and the results must agree: to a few
 * ulps where the closed form applies (the same rates; only the order of
 * floating-point operations differs), bit for bit where it does not. */

/* Four devices on a star with staggered latencies and rates, DDP with
 * overlap (several buckets, so several collectives). */
static const char *STAR = "name: star\n"
                          "model: { name: m, params: 2000000, flops_per_sample: 1.0e6 }\n"
                          "dataset: { name: d, samples: 64, sample_bytes: 1000 }\n"
                          "training: { epochs: 2 }\n"
                          "devices:\n"
                          "  - { name: a, kind: gpu, memory: 1GiB, batch: 4, batch_time: 0.3s,\n"
                          "      link: { up: 80Mbps, down: 80Mbps, latency: 1ms } }\n"
                          "  - { name: b, kind: gpu, memory: 1GiB, batch: 4, batch_time: 0.5s,\n"
                          "      link: { up: 40Mbps, down: 100Mbps, latency: 17ms } }\n"
                          "  - { name: c, kind: cpu, memory: 1GiB, batch: 4, batch_time: 0.9s,\n"
                          "      link: { up: 25Mbps, down: 60Mbps, latency: 5ms } }\n"
                          "  - { name: e, kind: cpu, memory: 1GiB, batch: 4, batch_time: 0.4s,\n"
                          "      link: { up: 90Mbps, down: 30Mbps, latency: 40ms } }\n"
                          "policies: { ddp: { data: shard, bucket: 2MB },\n"
                          "            deepspeed: { data: shard, bucket: 2MB } }\n";

#define CF_REL 1e-12

static void expect_near(double got, double want, const char *what)
{
    cr_expect(fabs(got - want) <= CF_REL * fmax(1.0, fabs(want)), "%s = %.17g, per flow %.17g", what, got,
              want);
}

/* The figures, per-device bytes and times and per-link statistics of two
 * runs agree to CF_REL (exact = 1: bit for bit, and the same events). */
static void expect_agree(const res_run *cf, const res_run *pf, int exact)
{
    if (exact) {
        expect_same_run(cf, pf);
    } else {
        cr_expect_lt(cf->events, pf->events, "closed form %llu events, per flow %llu",
                     (unsigned long long)cf->events, (unsigned long long)pf->events);
        expect_near(cf->tsend_s, pf->tsend_s, "tsend");
        expect_near(cf->ttotal_s, pf->ttotal_s, "ttotal");
    }
    cr_assert_eq(cf->n_devices, pf->n_devices);
    for (size_t d = 0; d < cf->n_devices; d++) {
        const res_device *a = &cf->devices[d], *b = &pf->devices[d];
        expect_near(a->bytes_sent, b->bytes_sent, "bytes_sent");
        expect_near(a->bytes_recv, b->bytes_recv, "bytes_recv");
        expect_near(a->send_s, b->send_s, "send_s");
        expect_near(a->recv_s, b->recv_s, "recv_s");
        expect_near(a->wait_s, b->wait_s, "wait_s");
    }
    cr_assert_eq(cf->n_stats, pf->n_stats);
    for (size_t k = 0; k < cf->n_stats; k++) {
        cr_assert_str_eq(cf->stats[k].name, pf->stats[k].name);
        expect_near(cf->stats[k].value, pf->stats[k].value, cf->stats[k].name);
    }
}

/* Run policy `name` on text + overrides round by round and in closed form. */
static void compare_modes(const char *text, const scn_override *ov, size_t n, const char *name, int exact)
{
    scn_scenario *s = load(text, ov, n);
    coll_set_per_flow(1);
    res_run *pf = run(policy_find(name), s);
    coll_set_per_flow(0);
    res_run *cf = run(policy_find(name), s);
    expect_agree(cf, pf, exact);
    res_run_free(pf);
    res_run_free(cf);
    scn_free(s);
}

Test(rings, closed_form_rounds_star_staggered_latencies)
{
    compare_modes(STAR, NULL, 0, "ddp", 0);
    compare_modes(STAR, NULL, 0, "deepspeed", 0);
    scn_override ov[1] = {{"network.tcp_window", "64KiB"}}; /* rates capped by window / RTT */
    compare_modes(STAR, ov, 1, "ddp", 0);
}

/* A ring over two sites whose edges share the WAN (ALT, geo-3sites-like):
 * rounds stay flows, the same bits. */
Test(rings, closed_form_not_used_on_a_shared_wan)
{
    /* staggered latencies, two epochs of two steps */
    scn_override ov0[4] = {{"devices.b1.link.latency", "3ms"},
                           {"devices.b2.link.latency", "2ms"},
                           {"dataset.samples", "8"},
                           {"training.epochs", "2"}};
    compare_modes(ALT, ov0, 4, "ddp", 1);
    /* sites in ring order, one edge per WAN direction: nothing shared, the
     * closed form applies (the scenario-level check still says "maybe not") */
    scn_override ov[6] = {
        ov0[0], ov0[1], ov0[2], ov0[3], {"devices.b1.site", "eu"}, {"devices.a2.site", "us"}};
    compare_modes(ALT, ov, 6, "ddp", 0);
}

/* A trace on a ring link (a stall from 1 s to 3 s, then twice the rate):
 * its rounds run in closed form across the trace's changes, the same to
 * rounding (tests/test_rings_traced.c has more); an outage in the middle
 * of a collective on a constant ring link: the collective hands its
 * current round back to the net as flows at the outage. */
Test(rings, closed_form_trace_and_outage)
{
    char text[8192];
    const char *src = getenv("DPSIM_SRC"), *at = strstr(STAR, "down: 60Mbps");
    cr_assert(src && at);
    snprintf(text, sizeof text, "%.*sdown_trace: %s/tests/data/trace-outage.csv%s", (int)(at - STAR), STAR,
             src, at + strlen("down: 60Mbps"));
    compare_modes(text, NULL, 0, "ddp", 0);
    /* the first collective starts after the model (2e6 x 4 B) reaches
     * every device, about 2.2 s; outages of b's link inside later ones */
    scn_override out[1] = {{"devices.b.link.outages", "[[3s, 3.5s], [9.05s, 9.3s]]"}};
    compare_modes(STAR, out, 1, "ddp", 0);
}

/* A foreign flow crosses a ring link in the middle of a collective: a
 * test policy runs one all-reduce of 8e6 B over STAR's devices and sends
 * 3e6 B from the server to device e 0.7 s in, over e's down link (3.75e6
 * B/s), which the slowest ring edge c -> e (3.125e6 B/s, 45 ms) crosses. */
static int foe_flows_done;
static void foe_flow_done(void *ctx, uint64_t id)
{
    (void)ctx;
    (void)id;
    foe_flows_done++;
}
static void foe_send(prt *rt, void *ctx)
{
    (void)ctx;
    cr_assert(world_transfer(prt_world(rt), 0, 4, 3e6, foe_flow_done, NULL));
}
static void foe_ring_done(prt *rt, void *ctx)
{
    (void)ctx;
    prt_end_epoch(rt);
}
static int foe_start(prt *rt, const void *opts)
{
    (void)opts;
    for (size_t d = 0; d < prt_n(rt); d++)
        prt_share(rt)[d] = 16;
    if (prt_at(rt, 0.7, foe_send, NULL))
        return DP_ENOMEM;
    return coll_start(rt, COLL_ALLREDUCE, 8e6, PRT_COLL_FLOWS, foe_ring_done, NULL);
}
static const policy_def policy_foe = {
    .name = "ringfoe",
    .label = "ringfoe",
    .color = "#000000",
    .summary = "a ring with a foreign flow (test)",
    .start = foe_start,
    .free = early_free, /* nothing to free either */
};

Test(rings, closed_form_foreign_flow_takes_the_round_back)
{
    dp_err err = {0};
    cr_assert_eq(policy_register(&policy_foe, &err), 0, "%s", err.msg);
    scn_override ov[1] = {{"training.epochs", "1"}};
    scn_scenario *s = load(STAR, ov, 1);
    foe_flows_done = 0;
    coll_set_per_flow(1);
    res_run *pf = run(&policy_foe, s);
    cr_expect_eq(foe_flows_done, 1);
    coll_set_per_flow(0);
    res_run *cf = run(&policy_foe, s);
    cr_expect_eq(foe_flows_done, 2);
    expect_agree(cf, pf, 0);
    /* the foreign flow slowed the ring (halving c -> e's rate for a while):
     * alone it is 6 rounds of the slowest edge, 0.045 + 2e6 / 3.125e6 s */
    double alone = 6 * (0.045 + 2e6 / 3.125e6);
    cr_expect_gt(pf->ttotal_s, alone + 0.1, "%.17g vs %.17g alone", pf->ttotal_s, alone);
    res_run_free(pf);
    res_run_free(cf);
    scn_free(s);
}

/* Link classes (collective.c): 100 identical devices in classes
 * (runtime_sym.c), two all-reduces as flows in closed form on the ring
 * held for good, accounting only the representatives' links; a foreign
 * flow to a follower (device 80) 0.7 s into the first takes it back.  The
 * run equals, bit for bit, the same policy without classes (whose closed
 * form holds, releases and accounts every link), in every device's bytes
 * and link times too; and the per-flow run to 1e-12. */
static int lkp_sym; /* the policy asks for classes */
static int lkp_colls;
static void lkp_send(prt *rt, void *ctx)
{
    (void)ctx;
    cr_assert(world_transfer(prt_world(rt), 0, 81, 3e6, foe_flow_done, NULL));
}
static void lkp_ring_done(prt *rt, void *ctx);
static void lkp_ring(prt *rt)
{
    if (coll_start(rt, COLL_ALLREDUCE, 8e6, PRT_COLL_FLOWS, lkp_ring_done, NULL))
        prt_fail(rt, DP_ENOMEM, "out of memory");
}
static void lkp_ring_done(prt *rt, void *ctx)
{
    (void)ctx;
    if (++lkp_colls < 3)
        lkp_ring(rt); /* the second and third on the ring held again */
    else
        prt_end_epoch(rt);
}
static int lkp_start(prt *rt, const void *opts)
{
    (void)opts;
    for (size_t d = 0; d < prt_n(rt); d++)
        prt_share(rt)[d] = 16;
    lkp_colls = 0;
    if (lkp_sym)
        cr_assert_eq(prt_sym_begin(rt), 1, "no classes");
    if (prt_at(rt, 0.7, lkp_send, NULL))
        return DP_ENOMEM;
    lkp_ring(rt);
    return 0;
}
static const policy_def policy_lkp = {
    .name = "ringclasses",
    .label = "ringclasses",
    .color = "#000000",
    .summary = "rings over classes of devices with a foreign flow (test)",
    .start = lkp_start,
    .free = early_free,
};

Test(rings, closed_form_link_classes_equal_every_link)
{
    dp_err err = {0};
    cr_assert_eq(policy_register(&policy_lkp, &err), 0, "%s", err.msg);
    const char *text = "name: many\n"
                       "model: { name: m, params: 2000000, flops_per_sample: 1.0e6 }\n"
                       "dataset: { name: d, samples: 1600, sample_bytes: 1000 }\n"
                       "training: { epochs: 1 }\n"
                       "devices:\n"
                       "  - { name: g, count: 100, kind: gpu, memory: 1GiB, batch: 4, batch_time: 0.3s,\n"
                       "      link: { up: 80Mbps, down: 40Mbps, latency: 5ms } }\n";
    scn_scenario *s = load(text, NULL, 0);
    lkp_sym = 1;
    res_run *a = run(&policy_lkp, s);
    lkp_sym = 0;
    res_run *b = run(&policy_lkp, s);
    coll_set_per_flow(1);
    res_run *pf = run(&policy_lkp, s);
    coll_set_per_flow(0);
    expect_same_run(a, b);
    for (size_t d = 0; d < a->n_devices; d++) {
        const res_device *x = &a->devices[d], *y = &b->devices[d];
        cr_expect(memcmp(&x->bytes_sent, &y->bytes_sent, sizeof(double)) == 0, "device %zu", d);
        cr_expect(memcmp(&x->bytes_recv, &y->bytes_recv, sizeof(double)) == 0, "device %zu", d);
        cr_expect(memcmp(&x->send_s, &y->send_s, sizeof(double)) == 0, "device %zu", d);
        cr_expect(memcmp(&x->recv_s, &y->recv_s, sizeof(double)) == 0, "device %zu: %.17g vs %.17g", d,
                  x->recv_s, y->recv_s);
    }
    expect_agree(a, pf, 0);
    /* the foreign flow slowed the first collective: not the lone ring's time */
    double round = 0.01 + 8e4 / 5e6;
    cr_expect_gt(a->ttotal_s, 3 * 198 * round + 0.1, "%.17g", a->ttotal_s);
    res_run_free(a);
    res_run_free(b);
    res_run_free(pf);
    scn_free(s);
}

/* network.sharing: rtt: a collective's closed form hands its round back to
 * flows weighted by their path's RTT (an outage in the middle of a
 * collective), as the per-flow run does; on a ring whose edges share a WAN
 * link with unequal latencies the weighted shares change the run. */
Test(rings, rtt_sharing_closed_form_and_shared_wan)
{
    scn_override out[2] = {{"devices.b.link.outages", "[[3s, 3.5s], [9.05s, 9.3s]]"},
                           {"network.sharing", "rtt"}};
    compare_modes(STAR, out, 2, "ddp", 0);
    scn_override ov[5] = {{"devices.b1.link.latency", "30ms"},
                          {"devices.b2.link.latency", "2ms"},
                          {"dataset.samples", "8"},
                          {"training.epochs", "2"},
                          {"network.sharing", "maxmin"}};
    /* a1 -> b1 (41 ms) and a2 -> b2 (13 ms) share the eu -> us WAN: a
     * round's last end is the same (one bottleneck, work-conserving), but
     * under rtt a2's flow gets 41/54 of it and ends first (a1, idle
     * while the collective runs, shows as sending throughout) */
    double T[2], send[2][4];
    for (int k = 0; k < 2; k++) {
        ov[4].value = k ? "rtt" : "maxmin";
        scn_scenario *s = load(ALT, ov, 5);
        res_run *r = run(policy_find("ddp"), s);
        T[k] = r->ttotal_s;
        for (int d = 0; d < 4; d++)
            send[k][d] = r->devices[d].send_s;
        res_run_free(r);
        scn_free(s);
    }
    expect_near(T[1], T[0], "Ttotal under rtt");
    cr_expect(send[1][2] < send[0][2], "a2 sends faster under rtt (%.17g, maxmin %.17g)", send[1][2],
              send[0][2]);
}

/* ---- analytic collectives: outages, link statistics, shared links of
 * unequal latencies (issue 34) ----
 * A test policy runs one all-reduce of 8e6 B over STAR's devices at
 * ro_t0 in mode ro_mode and ends the epoch.  STAR's ring: a -> b (10e6
 * B/s, 18 ms), b -> c (5e6, 22 ms), c -> e (3.125e6, 45 ms), e -> a (10e6,
 * 41 ms); chunks of 2e6 B, 6 rounds of the slowest edge. */
static prt_coll_mode ro_mode;
static double ro_t0;
static int ro_pipe; /* coll_set_progress */
static void ro_done(prt *rt, void *ctx)
{
    (void)ctx;
    prt_end_epoch(rt);
}
static void ro_go(prt *rt, void *ctx)
{
    (void)ctx;
    coll_start(rt, COLL_ALLREDUCE, 8e6, ro_mode, ro_done, NULL);
}
static int ro_start(prt *rt, const void *opts)
{
    (void)opts;
    for (size_t d = 0; d < prt_n(rt); d++)
        prt_share(rt)[d] = 16;
    coll_set_progress(rt, ro_pipe);
    return prt_at(rt, ro_t0, ro_go, NULL);
}
static const policy_def policy_ringone = {
    .name = "ringone",
    .label = "ringone",
    .color = "#000000",
    .summary = "one ring all-reduce (test)",
    .start = ro_start,
    .free = early_free,
};

/* The run of one all-reduce at t0 in mode m (DPSIM per-flow rounds when
 * per_flow). */
static res_run *ring_run(const char *text, const scn_override *ov, size_t n, prt_coll_mode m, double t0,
                         int per_flow, int pipe)
{
    static int registered;
    dp_err err = {0};
    if (!registered++)
        cr_assert_eq(policy_register(&policy_ringone, &err), 0, "%s", err.msg);
    scn_scenario *s = load(text, ov, n);
    ro_mode = m;
    ro_t0 = t0;
    ro_pipe = pipe;
    coll_set_per_flow(per_flow);
    res_run *r = run(&policy_ringone, s);
    coll_set_per_flow(0);
    scn_free(s);
    return r;
}

static res_run *ring_once(const scn_override *ov, size_t n, prt_coll_mode m, double t0, int per_flow)
{
    return ring_run(STAR, ov, n, m, t0, per_flow, 0);
}

static const double RING_ALONE = 6 * (0.045 + 2e6 / 3.125e6);

/* (a) an outage of c's link covering the collective's start (it starts at
 * 1 s, c is down over [0.5 s, 2 s]) and (b) one starting in the middle of
 * it ([2.5 s, 2.9 s]): the analytic mode runs that collective as flows, so
 * it ends when the flows do, and never fails "the collective never ends". */
Test(rings, analytic_collective_with_outages_runs_as_flows)
{
    const char *outs[2] = {"[[0.5s, 2s]]", "[[2.5s, 2.9s]]"};
    for (int k = 0; k < 2; k++) {
        scn_override ov[2] = {{"training.epochs", "1"}, {"devices.c.link.outages", outs[k]}};
        res_run *an = ring_once(ov, 2, PRT_COLL_ANALYTIC, 1.0, 0);
        res_run *fl = ring_once(ov, 2, PRT_COLL_FLOWS, 1.0, 1);
        expect_near(an->ttotal_s, fl->ttotal_s, "Ttotal (analytic, outage)");
        cr_expect_gt(an->ttotal_s, 1.0 + RING_ALONE + 0.3, "outage %s: %.17g", outs[k], an->ttotal_s);
        res_run_free(an);
        res_run_free(fl);
    }
    /* without an outage the analytic time is the closed form */
    scn_override ov[1] = {{"training.epochs", "1"}};
    res_run *an = ring_once(ov, 1, PRT_COLL_ANALYTIC, 1.0, 0);
    expect_near(an->ttotal_s, 1.0 + RING_ALONE, "Ttotal (analytic)");
    res_run_free(an);
}

/* (c) the ring's bytes, busy time and peak share are in the per-link
 * statistics under analytic, as under flows (no link shared by two edges:
 * exact).  Before, they read 0 (the rings' bytes were only in the devices'
 * figures). */
Test(rings, analytic_collective_fills_link_statistics)
{
    /* link statistics are those of a dynamic world: an outage long after */
    scn_override ov[2] = {{"training.epochs", "1"}, {"devices.a.link.outages", "[[1000s, 1001s]]"}};
    res_run *an = ring_once(ov, 2, PRT_COLL_ANALYTIC, 1.0, 0);
    res_run *fl = ring_once(ov, 2, PRT_COLL_FLOWS, 1.0, 1);
    expect_near(an->ttotal_s, 1.0 + RING_ALONE, "Ttotal (analytic)");
    const char *names[3] = {"link.bytes", "link.busy_fraction", "link.peak_util"};
    int seen = 0;
    for (int64_t l = 0; l < 64; l++) {
        const res_stat *b = res_find_stat(fl, "link.bytes", RES_SCOPE_LINK, l, 0);
        if (!b)
            break;
        for (int k = 0; k < 3; k++) {
            const res_stat *x = res_find_stat(an, names[k], RES_SCOPE_LINK, l, 0);
            const res_stat *y = res_find_stat(fl, names[k], RES_SCOPE_LINK, l, 0);
            cr_assert(x && y);
            cr_expect(fabs(x->value - y->value) <= 1e-9 * fmax(1, fabs(y->value)),
                      "%s[%lld]: %.17g, flows %.17g", names[k], (long long)l, x->value, y->value);
        }
        seen += b->value > 0;
    }
    cr_expect_eq(seen, 8, "every device's up and down link carried ring bytes (%d)", seen);
    res_run_free(an);
    res_run_free(fl);
}

/* (d) a ring whose edges share the WAN with unequal latencies (ALT with
 * b1 3 ms away: a1 -> b1 14 ms, a2 -> b2 12 ms) is flagged
 * analytic.approximate at run time; with equal latencies it is not. */
Test(rings, analytic_collective_flags_unequal_latencies_on_a_shared_link)
{
    for (int k = 0; k < 2; k++) {
        scn_override ov[2] = {{"policies.ddp.collective", "analytic"},
                              {"devices.b1.link.latency", k ? "3ms" : "1ms"}};
        scn_scenario *s = load(ALT, ov, 2);
        res_run *r = run(policy_find("ddp"), s);
        const res_stat *st = res_find_stat(r, "analytic.approximate", RES_SCOPE_RUN, 0, 0);
        if (k)
            cr_expect(st && st->value == 1, "unequal latencies on the WAN: flagged");
        else
            cr_expect_null(st, "equal latencies: exact, not flagged");
        res_run_free(r);
        scn_free(s);
    }
}

/* ---- pipelined rings (collective_progress: pipelined) ----
 * ALT's ring a1 -> b1 -> a2 -> b2 -> a1 (edges e0..e3) alternates sites:
 * e0 and e2 share the eu -> us WAN (1e6 B/s), e1 and e3 us -> eu; access
 * links 1e7 B/s never bind.  b1 is 5 ms away, the rest 1 ms: e0 and e1
 * have 16 ms of latency, e2 and e3 12 ms.  One all-reduce of 8e6 B from
 * 1 s: 6 rounds of 2e6 B chunks.  A flow of latency 12 ms next to one of
 * 16 ms starting at the same time: alone for 4 ms (4000 B), then both at
 * 0.5e6 B/s; it ends 1,996,000 / 0.5e6 = 3.992 s after 16 ms and the other
 * 4000 / 1e6 later: a round of 4.012 s.
 *  barrier: 6 x 4.012 = 24.072 s.
 *  pipelined (hand timeline, ends relative to 1 s; edge i goes on when e_i
 *  and e_{i-1} have ended; a pair's lead gap g = its later start + 16 ms
 *  - its earlier start - 12 ms is what the earlier flow sends alone, at
 *  1e6 B/s):
 *   r0: all start 0:           e2, e3 end 4.008; e0, e1 4.012
 *   r1: e3 starts 4.008, the rest 4.012: us->eu gap 8 ms: e3 ends
 *       4.020 + 0.008 + 1.992e6/0.5e6 = 8.012, e1 8.020; eu->us gap 4 ms:
 *       e2 8.020, e0 8.024
 *   r2: e2, e3 start 8.020, e0, e1 8.024: gaps 8 ms: e2, e3 end 12.024;
 *       e0, e1 12.032
 *   r3: e3 starts 12.024, the rest 12.032: us->eu gap 12 ms: e3 16.024,
 *       e1 16.036; eu->us gap 4 ms: e2 16.040, e0 16.044
 *   r4: e2, e3 start 16.040, e0, e1 16.044: gaps 8 ms: e2, e3 20.044;
 *       e0, e1 20.052
 *   r5: e3 starts 20.044, the rest 20.052: us->eu gap 12 ms: e3 24.044,
 *       e1 24.056; eu->us gap 4 ms: e2 24.060, e0 24.064.
 *  The collective ends at 1 + 24.064 s, 8 ms before the barrier's. */
Test(rings, pipelined_ring_hand_timeline_on_a_shared_wan)
{
    scn_override ov[2] = {{"training.epochs", "1"}, {"devices.b1.link.latency", "5ms"}};
    res_run *bar = ring_run(ALT, ov, 2, PRT_COLL_FLOWS, 1.0, 0, 0);
    res_run *pip = ring_run(ALT, ov, 2, PRT_COLL_FLOWS, 1.0, 0, 1);
    expect_near(bar->ttotal_s, 1 + 6 * 4.012, "barrier");
    expect_near(pip->ttotal_s, 1 + 24.064, "pipelined");
    res_run_free(bar);
    res_run_free(pip);
}

/* Without sharing (STAR's ring, staggered latencies and rates: edges of
 * 0.218, 0.422, 0.685 and 0.241 s) each edge takes the same time every
 * round, and the pipelined end is the barrier's, 6 x 0.685 s: the slowest
 * edge c -> e runs back to back either way (its predecessor b -> c is
 * always ready first: e(b->c, r) = ... <= e(c->e, r - 1)).  As flows and
 * analytic. */
Test(rings, pipelined_ring_without_sharing_is_the_barrier)
{
    scn_override ov[1] = {{"training.epochs", "1"}};
    for (int an = 0; an < 2; an++) {
        res_run *bar = ring_run(STAR, ov, 1, an ? PRT_COLL_ANALYTIC : PRT_COLL_FLOWS, 1.0, 0, 0);
        res_run *pip = ring_run(STAR, ov, 1, an ? PRT_COLL_ANALYTIC : PRT_COLL_FLOWS, 1.0, 0, 1);
        expect_near(pip->ttotal_s, 1 + RING_ALONE, "pipelined");
        expect_near(bar->ttotal_s, 1 + RING_ALONE, "barrier");
        res_run_free(bar);
        res_run_free(pip);
    }
}

/* Every flow identical (three devices of one kind, shared links or not):
 * pipelined and barrier are the same run (to 1e-12; the same Ttotal bits
 * as the barrier's rounds as flows).  With a shared WAN (ALT, every
 * latency 1 ms): the same figures too. */
static const char *RING3 = "name: ring3\n"
                           "model: { name: m, params: 1000000, flops_per_sample: 1.0e6 }\n"
                           "dataset: { name: d, samples: 48, sample_bytes: 1 }\n"
                           "training: { epochs: 1 }\n"
                           "devices:\n"
                           "  - { name: g, count: 3, kind: gpu, memory: 1GiB, batch: 4, batch_time: 0.1s,\n"
                           "      link: { up: 40Mbps, down: 40Mbps, latency: 7ms } }\n"
                           "policies: { ddp: { data: shard } }\n";

Test(rings, pipelined_ring_of_identical_flows_is_the_barrier)
{
    res_run *bar = ring_run(RING3, NULL, 0, PRT_COLL_FLOWS, 0.5, 0, 0);
    res_run *pip = ring_run(RING3, NULL, 0, PRT_COLL_FLOWS, 0.5, 0, 1);
    expect_agree(bar, pip, 0); /* the barrier's rounds in closed form, the pipelined as flows */
    res_run *pf = ring_run(RING3, NULL, 0, PRT_COLL_FLOWS, 0.5, 1, 0);
    cr_expect(memcmp(&pip->ttotal_s, &pf->ttotal_s, sizeof(double)) == 0,
              "pipelined %.17g, barrier as flows %.17g", pip->ttotal_s, pf->ttotal_s);
    res_run_free(pf);
    /* 4 rounds of 8e6 / 3 B at 5e6 B/s after 14 ms */
    expect_near(bar->ttotal_s, 0.5 + 4 * (0.014 + 8e6 / 3 / 5e6), "barrier");
    res_run_free(bar);
    res_run_free(pip);
    scn_override ov[1] = {{"training.epochs", "1"}};
    bar = ring_run(ALT, ov, 1, PRT_COLL_FLOWS, 1.0, 0, 0);
    pip = ring_run(ALT, ov, 1, PRT_COLL_FLOWS, 1.0, 0, 1);
    expect_near(pip->ttotal_s, bar->ttotal_s, "pipelined, shared WAN, equal latencies");
    expect_near(bar->ttotal_s, 1 + 6 * (0.012 + 4.0), "barrier, shared WAN");
    res_run_free(bar);
    res_run_free(pip);
}

/* The option: collective_progress, barrier by default and left out of
 * the stored options then. */
Test(rings, collective_progress_option)
{
    scn_override ov[1] = {{"policies.ddp.collective_progress", "pipelined"}};
    scn_scenario *s = load(STAR, ov, 1);
    char *js = policy_options_json(policy_find("ddp"), s);
    cr_assert(js && strstr(js, "\"collective_progress\":\"pipelined\""), "%s", js ? js : "(null)");
    dp_free(js);
    scn_free(s);
    s = load(STAR, NULL, 0);
    js = policy_options_json(policy_find("ddp"), s);
    cr_assert(js && !strstr(js, "collective_progress"), "%s", js ? js : "(null)");
    dp_free(js);
    scn_free(s);
}
