/* The communication-light policies (localsgd, flsgd, asyncps,
 * hierarchical) against timelines computed by hand.
 *
 * World TWO (as in test_policy.c): two devices, star network, server NIC
 * unlimited, access links 1e6 B/s each way with 10 ms latency, model M =
 * 1e6 B, samples of 1e4 B, aggregation 1e7 B/s.  Device a: batch 10 in
 * 1 s; b: batch 10 in 2 s.  Equal split.
 *  - D = 40 (20 each, 2 batches): data 2e5 B and model leave together; the
 *    model arrives at t0 = 0.01 + 1.2 = 1.21.
 *  - D = 80 (40 each, 4 batches): t0 = 0.01 + 1.4 = 1.41.
 * A model upload or download alone takes 0.01 + 1 = 1.01 s; a two-device
 * ring all-reduce 2 rounds x (0.02 + 0.5) = 1.04 s; the server averages k
 * models in k x 0.1 s.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "policy/policy.h"
#include "policy/commlight.h"
#include "policy/runtime.h"

#include "test_common.h"

static const char *TWO = "name: two\n"
                         "model: { name: m, params: 250000, bytes_per_param: 4, flops_per_sample: 1.0e6 }\n"
                         "dataset: { name: d, samples: 40, sample_bytes: 10000 }\n"
                         "training: { epochs: 2 }\n"
                         "server: { aggregate_rate: 10MB/s }\n"
                         "devices:\n"
                         "  - { name: a, kind: gpu, memory: 1GiB, batch: 10, batch_time: 1s,\n"
                         "      link: { up: 8Mbps, down: 8Mbps, latency: 10ms } }\n"
                         "  - { name: b, kind: cpu, memory: 1GiB, batch: 10, batch_time: 2s,\n"
                         "      link: { up: 8Mbps, down: 8Mbps, latency: 10ms } }\n";

/* Two sites: x holds the server and a[0], a[1] (1 s per batch); y holds b
 * (2 s).  WAN x-y 1e6 B/s each way, 50 ms.  D = 60: 20 each, 2 batches. */
static const char *SITES = "name: sites\n"
                           "model: { name: m, params: 250000, bytes_per_param: 4, flops_per_sample: 1.0e6 }\n"
                           "dataset: { name: d, samples: 60, sample_bytes: 10000 }\n"
                           "training: { epochs: 2 }\n"
                           "server: { aggregate_rate: 10MB/s, site: x }\n"
                           "sites: [ { name: x }, { name: y } ]\n"
                           "wan: [ { between: [x, y], bandwidth: 8Mbps, latency: 50ms } ]\n"
                           "devices:\n"
                           "  - { name: a, count: 2, kind: gpu, site: x, memory: 1GiB, batch: 10,\n"
                           "      batch_time: 1s, link: { up: 8Mbps, down: 8Mbps, latency: 10ms } }\n"
                           "  - { name: b, kind: cpu, site: y, memory: 1GiB, batch: 10, batch_time: 2s,\n"
                           "      link: { up: 8Mbps, down: 8Mbps, latency: 10ms } }\n";

TEST_SUITE_NO_LEAKS(commlight);

static res_run *run(const char *policy, const scn_scenario *s)
{
    dp_err err = {0};
    res_run *r = policy_run(policy_find(policy), s, 1, &err);
    cr_assert(r, "%s: %s", policy, err.msg);
    return r;
}

static void expect_epochs(const res_run *r, double e1, double e2)
{
    cr_assert_eq(r->n_epochs, 2);
    expect_close(r->epochs[0].end_s, e1);
    expect_close(r->epochs[1].end_s, e2);
    expect_close(r->ttotal_s, e2);
}

static double stat(const res_run *r, const char *name, res_scope sc, int64_t a)
{
    int64_t b = 0;
    if (sc == RES_SCOPE_BIN)
        b = a < 64 ? a : (int64_t)1 << (a - 58);
    const res_stat *s = res_find_stat(r, name, sc, a, b);
    return s ? s->value : 0;
}

/* localsgd, sync server, H = 1 (D = 40): a round is both devices' steps
 * (b: 2 s), b's upload (1.01), the average of 2 (0.2), the download
 * (1.01) = 4.22; an epoch is two rounds and ends with its last average:
 * 1.21 + 4.22 + 3.21 = 8.64; epoch 2 starts after the download (9.65) and
 * ends at 9.65 + 4.22 + 3.21 = 17.08. */
Test(commlight, localsgd_server_hand_timeline)
{
    scn_override ov[2] = {{"policies.localsgd.sync", "server"}, {"policies.localsgd.steps", "1"}};
    scn_scenario *s = load(TWO, ov, 2);
    res_run *r = run("localsgd", s);
    expect_close(r->tsend_s, 0.41);
    expect_epochs(r, 8.64, 17.08);
    cr_expect_eq(stat(r, "rounds", RES_SCOPE_RUN, 0), 4);
    cr_expect_eq(stat(r, "local_steps", RES_SCOPE_DEVICE, 0), 4);
    cr_expect_eq(stat(r, "local_steps", RES_SCOPE_DEVICE, 1), 4);
    cr_expect_eq(stat(r, "update.batch", RES_SCOPE_BIN, 20), 4); /* 10 + 10 per round */
    cr_expect_eq(stat(r, "update.devices", RES_SCOPE_BIN, 2), 4);
    cr_expect_eq(stat(r, "update.staleness", RES_SCOPE_BIN, 0), 4);
    /* access bytes: data 2e5 + model, then 4 uploads and 3 downloads of M,
     * per device, each crossing one access link (the NIC is unlimited and
     * not a link) */
    expect_close(stat(r, "bytes.access", RES_SCOPE_RUN, 0), 2 * (1.2e6 + 7e6));
    cr_expect_eq(stat(r, "bytes.wan", RES_SCOPE_RUN, 0), 0);
    res_run_free(r);
    scn_free(s);
}

/* localsgd, ring: H = 1, a round is 2 + 1.04 = 3.04 (as DDP's step); H = 2,
 * one round per epoch of 4 + 1.04. */
Test(commlight, localsgd_ring_steps)
{
    scn_override ov[1] = {{"policies.localsgd.steps", "1"}};
    scn_scenario *s = load(TWO, ov, 1);
    res_run *r = run("localsgd", s);
    expect_epochs(r, 1.21 + 2 * 3.04, 1.21 + 4 * 3.04);
    /* each ring moves 2 rounds x 5e5 B up a's and down b's link and back */
    expect_close(stat(r, "bytes.access", RES_SCOPE_RUN, 0), 2 * 1.2e6 + 4 * 4 * 5e5 * 2);
    res_run_free(r);
    scn_free(s);
    ov[0].value = "2";
    s = load(TWO, ov, 1);
    r = run("localsgd", s);
    expect_epochs(r, 1.21 + 5.04, 1.21 + 2 * 5.04);
    cr_expect_eq(stat(r, "rounds", RES_SCOPE_RUN, 0), 2);
    res_run_free(r);
    scn_free(s);
}

/* localsgd, seconds: 4.5 (D = 80, 4 batches each): round 1, a fits 4 steps
 * (after its 3rd, at 3 s, 3 + 1 <= 4.5) and b two (after its 2nd, 4 + 2 >
 * 4.5); both end at 4 s, + 1.04.  Round 2: a has nothing left, b runs 2
 * more: 4 + 1.04.  Epoch = 10.08 from t0 = 1.41. */
Test(commlight, localsgd_seconds_hand_timeline)
{
    scn_override ov[2] = {{"dataset.samples", "80"}, {"policies.localsgd.seconds", "4.5s"}};
    scn_scenario *s = load(TWO, ov, 2);
    res_run *r = run("localsgd", s);
    expect_epochs(r, 1.41 + 10.08, 1.41 + 20.16);
    cr_expect_eq(stat(r, "rounds", RES_SCOPE_RUN, 0), 4);
    cr_expect_eq(stat(r, "update.devices", RES_SCOPE_BIN, 1), 2); /* round 2: b alone */
    cr_expect_eq(stat(r, "update.batch", RES_SCOPE_BIN, 60), 2);  /* round 1: 40 + 20 */
    res_run_free(r);
    scn_free(s);
}

/* Adaptive batch (D = 80, H = 2, growth 2 every round, ring).  Round 1:
 * batch 10, 2 steps: b ends at 4, + 1.04.  Then batch 20, H = ceil(2 x
 * 10 / 20) = 1: one step of 20 (a: 2 s, b: 4 s, the measured model's
 * ceil): 5.04; epoch 1 ends at 1.41 + 10.08.  Then batch 40, H = 1: one
 * step of 40 (b: 8 s): 9.04.  With memory for 20 samples of activations
 * (model state 4 x 1e6 + 20 x 1e6 B = 24 MB) the batch stays at 20 and
 * epoch 2 is 2 x 5.04. */
Test(commlight, localsgd_batch_growth)
{
    scn_override ov[4] = {{"dataset.samples", "80"},
                          {"policies.localsgd.steps", "2"},
                          {"policies.localsgd.batch_growth", "2"},
                          {"model.activation_bytes_per_sample", "1MB"}};
    scn_scenario *s = load(TWO, ov, 3);
    res_run *r = run("localsgd", s);
    expect_epochs(r, 1.41 + 10.08, 1.41 + 10.08 + 9.04);
    cr_expect_eq(stat(r, "rounds", RES_SCOPE_RUN, 0), 3);
    cr_expect_eq(stat(r, "local_steps", RES_SCOPE_DEVICE, 0), 4);
    res_run_free(r);
    scn_free(s);
    scn_override ov2[6] = {
        ov[0], ov[1], ov[2], ov[3], {"devices.a.memory", "24MB"}, {"devices.b.memory", "24MB"}};
    s = load(TWO, ov2, 6);
    r = run("localsgd", s);
    expect_epochs(r, 1.41 + 10.08, 1.41 + 20.16);
    cr_expect_eq(stat(r, "rounds", RES_SCOPE_RUN, 0), 4);
    res_run_free(r);
    scn_free(s);
}

static void expect_cadp_equivalent(const char *text, const scn_override *ov, size_t n)
{
    scn_override all[8];
    cr_assert(n + 3 <= 8);
    if (n) /* ov may be NULL when n is 0, and memcpy wants a pointer either way */
        memcpy(all, ov, n * sizeof *ov);
    all[n] = (scn_override){"policies.localsgd.sync", "server"};
    all[n + 1] = (scn_override){"policies.localsgd.steps", "0"};
    all[n + 2] = (scn_override){"policies.localsgd.allocation", "cadp"};
    scn_scenario *s = load(text, all, n + 3);
    res_run *c = run("cadp", s), *l = run("localsgd", s);
    cr_expect(memcmp(&c->ttotal_s, &l->ttotal_s, sizeof(double)) == 0, "C-ADP %.17g, localsgd %.17g",
              c->ttotal_s, l->ttotal_s);
    cr_expect(memcmp(&c->tsend_s, &l->tsend_s, sizeof(double)) == 0);
    cr_assert_eq(c->n_epochs, l->n_epochs);
    for (size_t e = 0; e < c->n_epochs; e++)
        cr_expect(memcmp(&c->epochs[e].end_s, &l->epochs[e].end_s, sizeof(double)) == 0);
    for (size_t d = 0; d < c->n_devices; d++)
        cr_expect_eq(c->devices[d].samples, l->devices[d].samples);
    res_run_free(c);
    res_run_free(l);
    scn_free(s);
}

/* localsgd with sync: server, a whole local epoch per round (H_i = its
 * batches in an epoch of C-ADP's allocation) and C-ADP's allocation is
 * C-ADP, to the bit. */
Test(commlight, localsgd_equals_cadp)
{
    expect_cadp_equivalent(TWO, NULL, 0);
    scn_override slow[2] = {{"devices.b.link.down", "8Kbps"}, {"devices.b.link.up", "8Kbps"}};
    expect_cadp_equivalent(TWO, slow, 2); /* C-ADP leaves b out */
    expect_cadp_equivalent(SITES, NULL, 0);
    scn_override noisy[2] = {{"devices.a.noise", "0.2"}, {"devices.b.noise", "0.1"}};
    expect_cadp_equivalent(SITES, noisy, 2);
}

/* flsgd, H = 1, ring, D = 80 (a: 4 steps of 1 s, b: 4 of 2 s), from t0:
 * at 2 both have a step (b's second event first: it was scheduled
 * earlier): average 1 runs 2 .. 3.04 while both step on.  At 3.04 b has no
 * new step; at 4 b has one, a two: average 2, 4 .. 5.04; a is out of
 * samples at 4.  At 6 b has one: average 3, 6 .. 7.04.  At 8 b is out: the
 * forced average runs 8 .. 9.04 and ends the epoch.  Synchronous local SGD
 * would take 4 x 3.04 = 12.16 per epoch. */
Test(commlight, flsgd_overlap_hand_timeline)
{
    scn_override ov[2] = {{"dataset.samples", "80"}, {"policies.flsgd.steps", "1"}};
    scn_scenario *s = load(TWO, ov, 2);
    res_run *r = run("flsgd", s);
    expect_epochs(r, 1.41 + 9.04, 1.41 + 18.08);
    cr_expect_eq(stat(r, "rounds", RES_SCOPE_RUN, 0), 8);
    cr_expect_eq(stat(r, "update.staleness", RES_SCOPE_BIN, 1), 6);
    cr_expect_eq(stat(r, "update.staleness", RES_SCOPE_BIN, 0), 2);
    expect_close(r->devices[0].compute_s, 8);
    expect_close(r->devices[1].compute_s, 16);
    res_run_free(r);
    scn_free(s);
}

/* flsgd, sync server, H = 2, D = 40 (one background average can never
 * start: a device is out of samples before the other has 2 steps... b has
 * 2 steps at 4, when a is out): the epoch is the forced average alone:
 * steps until 4, upload 1.01, average 0.2: the epoch ends averaged at
 * 5.21; the download (1.01) opens the next one: 6.22 apart, and the last
 * epoch sends nothing back. */
Test(commlight, flsgd_server_forced_only)
{
    scn_override ov[2] = {{"policies.flsgd.sync", "server"}, {"policies.flsgd.steps", "2"}};
    scn_scenario *s = load(TWO, ov, 2);
    res_run *r = run("flsgd", s);
    expect_epochs(r, 1.21 + 5.21, 1.21 + 5.21 + 6.22);
    cr_expect_eq(stat(r, "rounds", RES_SCOPE_RUN, 0), 2);
    cr_expect_eq(stat(r, "update.staleness", RES_SCOPE_BIN, 0), 2);
    res_run_free(r);
    scn_free(s);
}

/* flsgd, sync server, H = 1, D = 80: a background average is the uploads
 * (1.01, beside the compute), the server's average of 2 (0.2) and the
 * downloads (1.01): 2.22.  Average 1 starts at 2 (both have a step) and
 * ends at 4.22; b has one new step (at 4) and samples left: average 2,
 * 4.22 .. 6.44; at 6.44 b has a step but is on its last batch: no more
 * background averages.  b ends at 8: the forced average, averaged at 9.21
 * (the epoch's end), downloaded by 10.22 (the next epoch's start). */
Test(commlight, flsgd_server_overlap_hand_timeline)
{
    scn_override ov[3] = {
        {"dataset.samples", "80"}, {"policies.flsgd.steps", "1"}, {"policies.flsgd.sync", "server"}};
    scn_scenario *s = load(TWO, ov, 3);
    res_run *r = run("flsgd", s);
    expect_epochs(r, 1.41 + 9.21, 1.41 + 10.22 + 9.21);
    cr_expect_eq(stat(r, "rounds", RES_SCOPE_RUN, 0), 6);
    cr_expect_eq(stat(r, "update.staleness", RES_SCOPE_BIN, 1), 4);
    cr_expect_eq(stat(r, "update.staleness", RES_SCOPE_BIN, 0), 2);
    res_run_free(r);
    scn_free(s);
}

/* Analytic rings give the flows' times when no link is shared, and count
 * the same bytes on the same links.  The flows run round by round
 * (coll_set_per_flow): rings in closed form move no flows either. */
Test(commlight, analytic_rings_equal_flows)
{
    const char *pol[3] = {"localsgd", "flsgd", "hierarchical"};
    for (int k = 0; k < 3; k++) {
        char key[64], steps[64];
        snprintf(key, sizeof key, "policies.%s.collective", pol[k]);
        snprintf(steps, sizeof steps, "policies.%s.steps", pol[k]);
        scn_override ov[2] = {{key, "flows"}, {steps, "1"}};
        const char *text = k == 2 ? SITES : TWO;
        scn_scenario *s = load(text, ov, 2);
        coll_set_per_flow(1);
        res_run *f = run(pol[k], s);
        coll_set_per_flow(0);
        scn_free(s);
        ov[0].value = "analytic";
        s = load(text, ov, 2);
        res_run *a = run(pol[k], s);
        expect_close(a->ttotal_s, f->ttotal_s);
        expect_close(stat(a, "bytes.access", RES_SCOPE_RUN, 0), stat(f, "bytes.access", RES_SCOPE_RUN, 0));
        expect_close(stat(a, "bytes.wan", RES_SCOPE_RUN, 0), stat(f, "bytes.wan", RES_SCOPE_RUN, 0));
        cr_expect(a->events < f->events, "%s: analytic rings move no flows", pol[k]);
        res_run_free(a);
        res_run_free(f);
        scn_free(s);
    }
}

/* With an interconnect the rings leave the access links: its bytes are the
 * interconnect's (4 all-reduces x 2 rounds x 2 flows x 5e5 B x 2 links),
 * the access links carry the distribution only; same times (same capacity
 * and latency). */
Test(commlight, interconnect_bytes)
{
    scn_override ov[3] = {{"policies.localsgd.steps", "1"},
                          {"interconnect.bandwidth", "8Mbps"},
                          {"interconnect.latency", "10ms"}};
    scn_scenario *s = load(TWO, ov, 3);
    res_run *r = run("localsgd", s);
    expect_epochs(r, 1.21 + 2 * 3.04, 1.21 + 4 * 3.04);
    expect_close(stat(r, "bytes.interconnect", RES_SCOPE_RUN, 0), 4 * 2 * 2 * 5e5 * 2);
    expect_close(stat(r, "bytes.access", RES_SCOPE_RUN, 0), 2 * 1.2e6);
    res_run_free(r);
    scn_free(s);
}

/* growth_every 2 (D = 80, H = 2, growth 2): epoch 1 is two rounds of 2
 * steps of 10; then batch 20 and H = 1: epoch 2 is two rounds of one step of
 * 20.  The measured compute model charges a batch of 20 as two of 10, so
 * the times are those without growth; the steps are not. */
Test(commlight, localsgd_growth_every)
{
    scn_override ov[4] = {{"dataset.samples", "80"},
                          {"policies.localsgd.steps", "2"},
                          {"policies.localsgd.batch_growth", "2"},
                          {"policies.localsgd.growth_every", "2"}};
    scn_scenario *s = load(TWO, ov, 4);
    res_run *r = run("localsgd", s);
    expect_epochs(r, 1.41 + 10.08, 1.41 + 20.16);
    cr_expect_eq(stat(r, "rounds", RES_SCOPE_RUN, 0), 4);
    cr_expect_eq(stat(r, "local_steps", RES_SCOPE_DEVICE, 0), 6);
    cr_expect_eq(stat(r, "update.batch", RES_SCOPE_BIN, 40), 4);
    res_run_free(r);
    scn_free(s);
}

/* asyncps, unbounded, D = 40, each push applied in 0.1 s:
 *  a: computes 1.21-2.21 on version 0, push arrives 3.22, applied by 3.32
 *     (staleness 0, version 1); pulls version 1 (4.33), computes to 5.33,
 *     push arrives 6.34, applied at 6.44 (staleness 2 - 1 = 1).
 *  b: computes 1.21-3.21, push arrives 4.22, applied 4.32 (staleness 1 -
 *     0 = 1); pulls version 2 (5.33), computes to 7.33, push 8.34, applied
 *     8.44 (staleness 3 - 2 = 1): the epoch ends at 8.44.
 * Epoch 2 starts with both pulling version 4 (9.45), and the same pattern
 * shifted by 8.44 - 1.21 + 1.01 = 8.24 ends at 16.68. */
Test(commlight, asyncps_unbounded_hand_timeline)
{
    scn_scenario *s = load(TWO, NULL, 0);
    res_run *r = run("asyncps", s);
    expect_epochs(r, 8.44, 16.68);
    cr_expect_eq(stat(r, "rounds", RES_SCOPE_RUN, 0), 8);
    cr_expect_eq(stat(r, "update.staleness", RES_SCOPE_BIN, 0), 2);
    cr_expect_eq(stat(r, "update.staleness", RES_SCOPE_BIN, 1), 6);
    cr_expect_eq(stat(r, "update.devices", RES_SCOPE_BIN, 1), 8);
    cr_expect_eq(stat(r, "update.batch", RES_SCOPE_BIN, 10), 8);
    expect_close(stat(r, "update.staleness_mean", RES_SCOPE_RUN, 0), 0.75);
    res_run_free(r);
    scn_free(s);
}

/* asyncps, max_staleness 0 (lock-step), D = 40: a's first push is applied
 * at 3.32 (staleness 0) but a is one ahead of b and waits; b's at 4.32
 * (staleness 1); both pull version 2 at 4.32 (5.33); a computes to 6.33,
 * push applied 7.34-7.44 (staleness 0); b computes to 7.33, push applied
 * 8.34-8.44 (staleness 1).  Epoch 2: same from 8.44. */
Test(commlight, asyncps_lockstep_hand_timeline)
{
    scn_override ov[1] = {{"policies.asyncps.max_staleness", "0"}};
    scn_scenario *s = load(TWO, ov, 1);
    res_run *r = run("asyncps", s);
    expect_epochs(r, 8.44, 8.44 + 1.01 + 2 + 1.01 + 0.1 + 1.01 + 2 + 1.01 + 0.1);
    cr_expect_eq(stat(r, "update.staleness", RES_SCOPE_BIN, 0), 4);
    cr_expect_eq(stat(r, "update.staleness", RES_SCOPE_BIN, 1), 4);
    /* a waited 3.32 .. 4.32 for b in each epoch on top of its other waits */
    res_run_free(r);
    scn_free(s);
}

/* asyncps where the bound is on the critical path.  Links 1e9 B/s, no
 * latency, no aggregation cost: a model pull or push takes tau = 1e-3 s,
 * everything arrives at t0 = 1.3e-3.  a: 6 batches of 5 in 1 s each; b:
 * one batch of 30 in 3 s.  b's push is applied at t0 + 3 + tau.
 *  - unbounded: a never waits: 6 x (1 + 2 tau) - tau (no first pull).
 *    Staleness: a1 0, a2 0, b1 2 (pulled version 0, applied to 2), a3 1
 *    (pulled 2, b1 came in between), a4-a6 0.
 *  - max_staleness 1: after its 2nd push (t0 + 2 + 3 tau) a is 2 ahead of
 *    b and waits until b's push (t0 + 3 + tau), then 4 more steps: t0 + 7 +
 *    9 tau.  Staleness: b1 2, every other 0.
 *  - max_staleness 0: a waits from its first push until b's, then 5
 *    steps: t0 + 8 + 11 tau.  Staleness: b1 1 (a1 came first), others 0.
 * Epoch 2 begins with a pull on both: 6 + 12 tau, 7 + 10 tau, 8 + 12 tau. */
static const char *ASYNC = "name: async\n"
                           "model: { name: m, params: 250000, bytes_per_param: 4, flops_per_sample: 1.0e6 }\n"
                           "dataset: { name: d, samples: 60, sample_bytes: 10000 }\n"
                           "training: { epochs: 2 }\n"
                           "devices:\n"
                           "  - { name: a, kind: gpu, memory: 1GiB, batch: 5, batch_time: 1s,\n"
                           "      link: { up: 8Gbps, down: 8Gbps, latency: 0s } }\n"
                           "  - { name: b, kind: cpu, memory: 1GiB, batch: 30, batch_time: 3s,\n"
                           "      link: { up: 8Gbps, down: 8Gbps, latency: 0s } }\n";

Test(commlight, asyncps_bounds_hand_timeline)
{
    const char *bound[3] = {"-1", "1", "0"};
    double tau = 1e-3, t0 = 1.3e-3;
    double e1[3] = {t0 + 6 + 11 * tau, t0 + 7 + 9 * tau, t0 + 8 + 11 * tau};
    double e2[3] = {6 + 12 * tau, 7 + 10 * tau, 8 + 12 * tau};
    double stale0[3] = {5, 6, 6}, stale1[3] = {1, 0, 1}, stale2[3] = {1, 1, 0};
    for (int k = 0; k < 3; k++) {
        scn_override ov[1] = {{"policies.asyncps.max_staleness", bound[k]}};
        scn_scenario *s = load(ASYNC, ov, 1);
        res_run *r = run("asyncps", s);
        expect_epochs(r, e1[k], e1[k] + e2[k]);
        cr_expect_eq(stat(r, "rounds", RES_SCOPE_RUN, 0), 14);
        cr_expect_eq(stat(r, "update.staleness", RES_SCOPE_BIN, 0), 2 * stale0[k], "bound %s", bound[k]);
        cr_expect_eq(stat(r, "update.staleness", RES_SCOPE_BIN, 1), 2 * stale1[k], "bound %s", bound[k]);
        cr_expect_eq(stat(r, "update.staleness", RES_SCOPE_BIN, 2), 2 * stale2[k], "bound %s", bound[k]);
        cr_expect_eq(stat(r, "local_steps", RES_SCOPE_DEVICE, 0), 12);
        cr_expect_eq(stat(r, "local_steps", RES_SCOPE_DEVICE, 1), 2);
        res_run_free(r);
        scn_free(s);
    }
}

/* Bit-for-bit determinism of the asynchronous and overlapped policies with
 * noisy compute, and another seed gives another run. */
Test(commlight, deterministic_with_noise)
{
    scn_override ov[3] = {{"devices.a.noise", "0.2"}, {"devices.b.noise", "0.1"}, {"dataset.samples", "400"}};
    scn_scenario *s = load(SITES, ov, 3);
    const char *pols[4] = {"localsgd", "flsgd", "asyncps", "hierarchical"};
    for (int k = 0; k < 4; k++) {
        dp_err err = {0};
        res_run *a = run(pols[k], s), *b = run(pols[k], s);
        res_run *c = policy_run(policy_find(pols[k]), s, 2, &err);
        cr_assert(c, "%s", err.msg);
        cr_expect(memcmp(&a->ttotal_s, &b->ttotal_s, sizeof(double)) == 0, "%s", pols[k]);
        cr_expect_eq(a->events, b->events);
        cr_assert_eq(a->n_stats, b->n_stats);
        for (size_t i = 0; i < a->n_stats; i++)
            cr_expect(memcmp(&a->stats[i].value, &b->stats[i].value, sizeof(double)) == 0);
        for (size_t d = 0; d < a->n_devices; d++)
            cr_expect(memcmp(&a->devices[d].wait_s, &b->devices[d].wait_s, sizeof(double)) == 0);
        cr_expect_neq(a->ttotal_s, c->ttotal_s, "%s: seed 2 gives the same run", pols[k]);
        res_run_free(a);
        res_run_free(b);
        res_run_free(c);
    }
    scn_free(s);
}

/* hierarchical, H = 1, wan ring.  Site x's devices start at 1.21; b's data
 * and model cross the WAN too (latency 0.06): it starts at 1.26.  Round
 * 1: a's end at 2.21, site x's ring 1.04 -> 3.25; b ends at 3.26 (a
 * one-device site has nothing to do); the WAN ring of a[0] and b: 2 rounds
 * of 0.07 + 0.5 = 1.14 -> 4.40; a[0] sends the model to a[1]: 0.02 + 1 ->
 * 5.42.  Later rounds: max(1 + 1.04, 2) + 1.14 + 1.02 = 4.20.  An epoch
 * (two rounds) ends with its last WAN average, before the return (1.02):
 * 5.42 + 3.18, and the last epoch returns nothing. */
Test(commlight, hierarchical_ring_hand_timeline)
{
    scn_override ov[1] = {{"policies.hierarchical.steps", "1"}};
    scn_scenario *s = load(SITES, ov, 1);
    res_run *r = run("hierarchical", s);
    expect_epochs(r, 5.42 + 3.18, 5.42 + 2 * 4.20 + 3.18);
    cr_expect_eq(stat(r, "rounds", RES_SCOPE_RUN, 0), 4);
    /* WAN: b's data and model, then per round 2 x 5e5 B each way */
    expect_close(stat(r, "bytes.wan", RES_SCOPE_RUN, 0), 1.2e6 + 4 * 2e6);
    cr_expect_eq(stat(r, "update.devices", RES_SCOPE_BIN, 3), 4);
    res_run_free(r);
    scn_free(s);
}

/* hierarchical, wan server: after the sites (3.26), a[0] uploads (1.01)
 * and b uploads over the WAN (1.06); the server averages 2 models (0.2) at
 * 4.52; a[0] downloads (5.53) and passes the model to a[1] (6.55); b
 * downloads by 5.58.  Later rounds: 2.04 + 1.06 + 0.2 + 1.01 + 1.02 =
 * 5.33.  An epoch (two rounds) ends at its last server average, before
 * the download and the return (2.03): 6.55 + 3.30. */
Test(commlight, hierarchical_server_hand_timeline)
{
    scn_override ov[2] = {{"policies.hierarchical.steps", "1"}, {"policies.hierarchical.wan", "server"}};
    scn_scenario *s = load(SITES, ov, 2);
    res_run *r = run("hierarchical", s);
    expect_epochs(r, 6.55 + 3.30, 6.55 + 2 * 5.33 + 3.30);
    res_run_free(r);
    scn_free(s);
}

/* Without sites: refused before any simulation, with a message that says
 * why. */
Test(commlight, hierarchical_needs_sites)
{
    scn_scenario *s = load(TWO, NULL, 0);
    dp_err err = {0};
    res_run *r = policy_run(policy_find("hierarchical"), s, 1, &err);
    cr_expect_null(r);
    cr_expect_eq(err.code, DP_EINPUT);
    cr_expect(strstr(err.msg, "no `sites:`"), "%s", err.msg);
    scn_free(s);
}

/* Histogram bins: 0..63 exact, then one per power of two. */
Test(commlight, bins)
{
    int64_t e;
    cr_expect_eq(cl_bin(0, &e), 0);
    cr_expect_eq(e, 0);
    cr_expect_eq(cl_bin(63, &e), 63);
    cr_expect_eq(cl_bin(64, &e), 64);
    cr_expect_eq(e, 64);
    cr_expect_eq(cl_bin(127, &e), 64);
    cr_expect_eq(cl_bin(128, &e), 65);
    cr_expect_eq(e, 128);
    cr_expect_eq(cl_bin(INT64_MAX, &e), 64 + 56);
}
