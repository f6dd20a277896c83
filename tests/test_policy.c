/* Policies against timelines computed by hand (docs/MODEL.md section 4).
 *
 * World for the hand timelines: two devices, star network, server NIC
 * unlimited, every access link 1e6 B/s each way with 10 ms latency, model
 * M = 1e6 bytes, samples of 1e4 bytes.  Device a: batch 10 in 1 s; device b:
 * batch 10 in 2 s.  D = 40 samples (20 each under an equal split).
 *
 * Distribution (shard): data 2e5 B and model 1e6 B leave at once on one
 * link, sharing it: the data ends at 0.01 + 2 * 2e5 / 1e6 = 0.41 (Tsend),
 * the model at 0.01 + 1.2e6 / 1e6 = 1.21, when training starts.
 * A ring round between the two moves M/2 = 5e5 B over a's up and b's down
 * link (and the reverse) at once: 0.02 + 0.5 = 0.52 s.
 */
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
#include "world.h"
#include "slv.h"

#include "test_common.h"
#include "policy_helpers.h"

static const char *TWO = "name: two\n"
                         "model: { name: m, params: 250000, bytes_per_param: 4, flops_per_sample: 1.0e6 }\n"
                         "dataset: { name: d, samples: 40, sample_bytes: 10000 }\n"
                         "training: { epochs: 2 }\n"
                         "server: { aggregate_rate: 10MB/s }\n"
                         "devices:\n"
                         "  - { name: a, kind: gpu, memory: 1GiB, batch: 10, batch_time: 1s,\n"
                         "      link: { up: 8Mbps, down: 8Mbps, latency: 10ms } }\n"
                         "  - { name: b, kind: cpu, memory: 1GiB, batch: 10, batch_time: 2s,\n"
                         "      link: { up: 8Mbps, down: 8Mbps, latency: 10ms } }\n"
                         "policies:\n"
                         "  ddp: { bucket: 4MiB, data: shard }\n"
                         "  deepspeed: { data: shard }\n";

TEST_SUITE_NO_LEAKS(policy);

static void expect_epochs(const res_run *r, const double *ends, size_t n)
{
    cr_assert_eq(r->n_epochs, n);
    for (size_t e = 0; e < n; e++)
        expect_close(r->epochs[e].end_s, ends[e]);
}

/* DDP: one bucket (4 MiB > M), overlap: the bucket is ready when the slower
 * device's backward ends (t0 + 2).  Step = 2 + 2 rounds x 0.52 = 3.04. */
Test(policy, ddp_hand_timeline)
{
    scn_scenario *s = load(TWO, NULL, 0);
    res_run *r = run(policy_find("ddp"), s);
    expect_close(r->tsend_s, 0.41);
    double ends[2] = {1.21 + 2 * 3.04, 1.21 + 4 * 3.04};
    expect_epochs(r, ends, 2);
    expect_close(r->ttotal_s, 1.21 + 4 * 3.04);
    expect_close(r->ttraining_s, r->ttotal_s - 0.41);
    /* bytes: up = 4 steps x 2 rounds x 5e5; down = data + model + the same */
    for (int d = 0; d < 2; d++) {
        expect_close(r->devices[d].bytes_sent, 4e6);
        expect_close(r->devices[d].bytes_recv, 2e5 + 1e6 + 4e6);
        cr_expect_eq(r->devices[d].samples, 20);
        cr_expect_eq(r->devices[d].batches, 4);
    }
    expect_close(r->devices[0].compute_s, 4.0);
    expect_close(r->devices[1].compute_s, 8.0);
    expect_close(r->samples_processed, 80);
    expect_close(r->tflops, 1e6 * 80 / r->ttraining_s / 1e12);
    expect_close(r->utilization, 12.0 / (2 * r->ttraining_s));
    res_run_free(r);
    scn_free(s);
}

/* Two buckets of 5e5 B, overlap on: backward is 2/3 of the batch, so for
 * device b (2 s) bucket 0 is ready at t0 + 2/3 + 2/3 = t0 + 4/3, bucket 1 at
 * t0 + 2.  Each bucket's all-reduce: 2 rounds of 0.02 + 0.25 = 0.54.
 * Bucket 0 runs t0+4/3 .. t0+4/3+0.54 (= t0+1.8733), bucket 1 from t0+2:
 * the step ends at t0 + 2.54. */
Test(policy, ddp_buckets_overlap_backward)
{
    scn_override ov[1] = {{"policies.ddp.bucket", "500000"}};
    scn_scenario *s = load(TWO, ov, 1);
    res_run *r = run(policy_find("ddp"), s);
    expect_close(r->ttotal_s, 1.21 + 4 * 2.54);
    res_run_free(r);
    scn_free(s);
    scn_override ov2[2] = {{"policies.ddp.bucket", "500000"}, {"policies.ddp.overlap", "false"}};
    s = load(TWO, ov2, 2);
    r = run(policy_find("ddp"), s);
    /* no overlap: one bucket of M after compute, 2 rounds of 0.52 */
    expect_close(r->ttotal_s, 1.21 + 4 * 3.04);
    res_run_free(r);
    scn_free(s);
}

/* Join: 30 samples, a's batch 10 (15 samples: batches of 10 and 5), b's
 * batch 5 (15 samples: 3 batches of 5, each a full 2 s as measured).  Steps
 * per epoch: 3 (b's); in the third a joins with zero gradients. */
Test(policy, ddp_uneven_steps_join)
{
    scn_override ov[3] = {{"dataset.samples", "30"}, {"devices.b.batch", "5"}, {"training.epochs", "1"}};
    scn_scenario *s = load(TWO, ov, 3);
    res_run *r = run(policy_find("ddp"), s);
    /* data: 15 x 1e4 = 1.5e5: Tsend = 0.01 + 0.3; model at 0.01 + 1.15 */
    expect_close(r->tsend_s, 0.31);
    expect_close(r->ttotal_s, 1.16 + 3 * 3.04);
    cr_expect_eq(r->devices[0].batches, 2);
    cr_expect_eq(r->devices[1].batches, 3);
    res_run_free(r);
    scn_free(s);
}

/* Replicated data: each device receives all 40 samples (4e5 B). */
Test(policy, ddp_replicate_sends_whole_dataset)
{
    scn_override ov[1] = {{"policies.ddp.data", "replicate"}};
    scn_scenario *s = load(TWO, ov, 1);
    res_run *r = run(policy_find("ddp"), s);
    expect_close(r->tsend_s, 0.01 + 2 * 4e5 / 1e6);
    expect_close(r->ttotal_s, 0.01 + 1.4 + 4 * 3.04);
    expect_close(r->devices[0].bytes_recv, 4e5 + 1e6 + 4e6);
    res_run_free(r);
    scn_free(s);
}

/* ZeRO-2, no overlap: reduce-scatter (1 round) + all-gather (1 round) per
 * step: the same 3.04 s step as DDP's one bucket.  grad_accum 2: ZeRO-2
 * keeps only its gradient partition, so each micro-step (b: 2 s) ends with
 * a reduce-scatter (0.52), and the optimizer step after the second adds the
 * all-gather (0.52): 2 + 0.52 + 2 + 0.52 + 0.52 = 5.56 s per epoch, 3
 * rounds of 5e5 B per device. */
Test(policy, deepspeed_stage2_hand_timeline)
{
    scn_scenario *s = load(TWO, NULL, 0);
    res_run *r = run(policy_find("deepspeed"), s);
    expect_close(r->ttotal_s, 1.21 + 4 * 3.04);
    res_run_free(r);
    scn_free(s);
    scn_override ov[1] = {{"policies.deepspeed.grad_accum", "2"}};
    s = load(TWO, ov, 1);
    r = run(policy_find("deepspeed"), s);
    double ends[2] = {1.21 + 5.56, 1.21 + 2 * 5.56};
    expect_epochs(r, ends, 2);
    for (int d = 0; d < 2; d++)
        expect_close(r->devices[d].bytes_sent, 2 * 3 * 5e5);
    res_run_free(r);
    scn_free(s);
}

/* ZeRO-1 keeps full gradients: grad_accum 2 accumulates them locally and
 * reduces once per optimizer step: 4 s of compute (b), reduce-scatter and
 * all-gather (1.04): 5.04 s per epoch, 2 rounds of 5e5 B per device. */
Test(policy, deepspeed_stage1_accumulates_locally)
{
    scn_override ov[2] = {{"policies.deepspeed.grad_accum", "2"}, {"policies.deepspeed.stage", "1"}};
    scn_scenario *s = load(TWO, ov, 2);
    res_run *r = run(policy_find("deepspeed"), s);
    double ends[2] = {1.21 + 5.04, 1.21 + 2 * 5.04};
    expect_epochs(r, ends, 2);
    for (int d = 0; d < 2; d++)
        expect_close(r->devices[d].bytes_sent, 2 * 2 * 5e5);
    res_run_free(r);
    scn_free(s);
}

/* ZeRO-2 with grad_accum 3 and two micro-steps an epoch: the epoch's end
 * is an optimizer step too (the all-gather is not carried over). */
Test(policy, deepspeed_stage2_steps_at_epoch_end)
{
    scn_override ov[1] = {{"policies.deepspeed.grad_accum", "3"}};
    scn_scenario *s = load(TWO, ov, 1);
    res_run *r = run(policy_find("deepspeed"), s);
    double ends[2] = {1.21 + 5.56, 1.21 + 2 * 5.56};
    expect_epochs(r, ends, 2);
    res_run_free(r);
    scn_free(s);
}

/* ZeRO-3 without overlap: all-gather 0.52, forward (b: 2/3 s), all-gather
 * 0.52, backward (4/3 s), reduce-scatter 0.52: 3.56 s a step.  With
 * overlap (default) the two gathers (1.04 s) hide under the 2 s of compute
 * and the reduce-scatter follows: 2.52 s. */
Test(policy, deepspeed_stage3_hand_timeline)
{
    scn_override ov[2] = {{"policies.deepspeed.stage", "3"}, {"policies.deepspeed.overlap_comm", "false"}};
    scn_scenario *s = load(TWO, ov, 2);
    res_run *r = run(policy_find("deepspeed"), s);
    expect_close(r->ttotal_s, 1.21 + 4 * 3.56);
    cr_expect_eq(r->devices[1].batches, 4);
    expect_close(r->devices[1].compute_s, 8.0);
    res_run_free(r);
    scn_free(s);
    s = load(TWO, ov, 1);
    r = run(policy_find("deepspeed"), s);
    expect_close(r->ttotal_s, 1.21 + 4 * 2.52);
    res_run_free(r);
    scn_free(s);
}

/* ZeRO-3 moves 1.5x the collective bytes of ZeRO-2 (3 vs 2 passes of
 * (N-1)/N M per device per step), here on four devices. */
Test(policy, zero3_moves_one_and_a_half_times_zero2)
{
    static const char *FOUR =
        "name: four\n"
        "model: { name: m, params: 1000000, flops_per_sample: 1.0e6 }\n"
        "dataset: { name: d, samples: 64, sample_bytes: 1000 }\n"
        "training: { epochs: 1 }\n"
        "devices:\n"
        "  - { name: g, count: 4, kind: gpu, memory: 1GiB, batch: 8, batch_time: 0.1s,\n"
        "      link: { up: 1Gbps, down: 1Gbps, latency: 1ms } }\n"
        "policies: { deepspeed: { data: shard } }\n";
    double up[2];
    for (int k = 0; k < 2; k++) {
        scn_override ov[1] = {{"policies.deepspeed.stage", k ? "3" : "2"}};
        scn_scenario *s = load(FOUR, ov, 1);
        res_run *r = run(policy_find("deepspeed"), s);
        up[k] = 0;
        for (int d = 0; d < 4; d++)
            up[k] += r->devices[d].bytes_sent; /* up links carry only collective traffic */
        res_run_free(r);
        scn_free(s);
    }
    /* 2 steps x 4 devices x 2 x 3/4 x 4e6 */
    expect_close(up[0], 2 * 4 * 2 * 0.75 * 4e6);
    expect_close(up[1] / up[0], 1.5);
}

/* Ring all-reduce: 2(N-1) rounds, each as long as the slowest ring edge
 * (latency + (M/N) / bottleneck).  Three devices, links 1, 2 and 4 MB/s. */
Test(policy, ring_allreduce_closed_form)
{
    static const char *RING = "name: ring\n"
                              "model: { name: m, params: 750000, flops_per_sample: 1.0e6 }\n"
                              "dataset: { name: d, samples: 3, sample_bytes: 1 }\n"
                              "training: { epochs: 1 }\n"
                              "devices:\n"
                              "  - { name: a, kind: gpu, memory: 1GiB, batch: 1, batch_time: 1s, link: { up: "
                              "8Mbps, down: 8Mbps, latency: 5ms } }\n"
                              "  - { name: b, kind: gpu, memory: 1GiB, batch: 1, batch_time: 1s, link: { up: "
                              "16Mbps, down: 16Mbps, latency: 5ms } }\n"
                              "  - { name: c, kind: gpu, memory: 1GiB, batch: 1, batch_time: 1s, link: { up: "
                              "32Mbps, down: 32Mbps, latency: 5ms } }\n"
                              "policies: { ddp: { data: shard, overlap: false } }\n";
    for (int mode = 0; mode < 2; mode++) {
        scn_override ov[1] = {{"policies.ddp.collective", mode ? "analytic" : "flows"}};
        scn_scenario *s = load(RING, ov, 1);
        res_run *r = run(policy_find("ddp"), s);
        /* model 3e6 B; chunk 1e6; edges a->b: min(1,2) MB/s, b->c: 2, c->a: 1 -> 1 s + 10 ms */
        double start = 0;
        for (int d = 0; d < 3; d++)
            start = fmax(start, 0.005 + (1 + 3e6) / (double[]){1e6, 2e6, 4e6}[d]);
        expect_close(r->ttotal_s, start + 1 + 4 * (0.01 + 1.0));
        res_run_free(r);
        scn_free(s);
    }
}

/* C-ADP against its closed form when nothing is shared: with the solver's
 * allocation x, device i is ready at lat + (x_i s + M)/C (data and model
 * share its link), trains ceil(x_i / bs_i) batches, uploads M (lat + M/C);
 * the server aggregates (parts x M / rate); later epochs download M first. */
Test(policy, cadp_closed_form)
{
    scn_scenario *s = load(TWO, NULL, 0);
    res_run *r = run(policy_find("cadp"), s);
    int64_t x[2] = {r->devices[0].samples, r->devices[1].samples};
    cr_assert_eq(x[0] + x[1], 40);
    double t[2] = {1, 2}, lat = 0.01, C = 1e6, M = 1e6;
    int parts = (x[0] > 0) + (x[1] > 0);
    double agg = parts * M / 1e7, e1 = 0, ep = 0, tsend = 0;
    for (int i = 0; i < 2; i++) {
        if (!x[i])
            continue;
        double data = (double)x[i] * 1e4;
        double ready = lat + (data + M) / C;
        double data_at = lat + (data < M ? 2 * data : data + M) / C;
        tsend = fmax(tsend, data_at);
        double comp = (double)((x[i] + 9) / 10) * t[i];
        e1 = fmax(e1, ready + comp + lat + M / C);
        ep = fmax(ep, lat + M / C + comp + lat + M / C);
    }
    e1 += agg;
    double ends[2] = {e1, e1 + ep + agg};
    expect_close(r->tsend_s, tsend);
    expect_epochs(r, ends, 2);
    expect_close(r->ttotal_s, ends[1]);
    res_run_free(r);
    scn_free(s);
}

/* A device given nothing takes no part: no data, no model, no bytes. */
Test(policy, cadp_excluded_device_moves_nothing)
{
    scn_override ov[2] = {{"devices.b.link.down", "8Kbps"}, {"devices.b.link.up", "8Kbps"}};
    scn_scenario *s = load(TWO, ov, 2);
    res_run *r = run(policy_find("cadp"), s);
    cr_expect_eq(r->devices[1].samples, 0);
    cr_expect_eq(r->devices[1].bytes_recv, 0);
    cr_expect_eq(r->devices[1].bytes_sent, 0);
    cr_expect_eq(r->devices[0].samples, 40);
    res_run_free(r);
    scn_free(s);
}

/* Same scenario, same seed: identical numbers, bit for bit, with noise. */
Test(policy, deterministic_with_noise)
{
    scn_override ov[2] = {{"devices.a.noise", "0.2"}, {"devices.b.noise", "0.1"}};
    scn_scenario *s = load(TWO, ov, 2);
    const policy_def *pk[POLICY_MAX];
    for (size_t k = 0; k < policy_count(); k++)
        pk[k] = policy_at(k);
    /* TWO has no sites (hierarchical) and no learning (adacoopt, fedgsync) */
    size_t np = (size_t)policy_keep_applicable(s, pk, policy_count(), NULL);
    cr_expect_eq(np, policy_count() - 3);
    for (size_t k = 0; k < np; k++) {
        res_run *a = run(pk[k], s), *b = run(pk[k], s);
        expect_same_run(a, b);
        res_run_free(a);
        res_run_free(b);
    }
    /* another seed gives other numbers */
    dp_err err = {0};
    res_run *a = policy_run(policy_find("ddp"), s, 1, &err), *b = policy_run(policy_find("ddp"), s, 2, &err);
    cr_expect_neq(a->ttotal_s, b->ttotal_s);
    res_run_free(a);
    res_run_free(b);
    scn_free(s);
}

/* Analytic collectives equal flow-level ones when no link is shared: the
 * paper testbed, shortened. */
Test(policy, analytic_equals_flows_without_sharing)
{
    char path[4096];
    const char *src = getenv("DPSIM_SRC");
    cr_assert(src);
    snprintf(path, sizeof path, "%s/scenarios/paper-testbed.yaml", src);
    double t[2][2], sent[2][8], busy[2][8], recv[2][8];
    for (int mode = 0; mode < 2; mode++) {
        const char *m = mode ? "analytic" : "flows";
        scn_override ov[4] = {{"dataset.samples", "800"},
                              {"training.epochs", "1"},
                              {"policies.ddp.collective", m},
                              {"policies.deepspeed.collective", m}};
        dp_err err = {0};
        scn_scenario *s = scn_load_file(path, ov, 4, &err);
        cr_assert(s, "%s", err.msg);
        res_run *r = run(policy_find("ddp"), s);
        t[mode][0] = r->ttotal_s;
        cr_assert_eq(r->n_devices, 8);
        for (int d = 0; d < 8; d++) {
            sent[mode][d] = r->devices[d].bytes_sent;
            busy[mode][d] = r->devices[d].send_s;
            recv[mode][d] = r->devices[d].recv_s;
        }
        res_run_free(r);
        r = run(policy_find("deepspeed"), s);
        t[mode][1] = r->ttotal_s;
        res_run_free(r);
        scn_free(s);
    }
    for (int d = 0; d < 8; d++) { /* the analytic mode accounts bytes and link time too */
        expect_close(sent[1][d], sent[0][d]);
        cr_expect(fabs(busy[1][d] - busy[0][d]) <= 1e-6 * busy[0][d], "send_s %g vs %g", busy[1][d],
                  busy[0][d]);
        cr_expect(fabs(recv[1][d] - recv[0][d]) <= 1e-6 * recv[0][d], "recv_s %g vs %g", recv[1][d],
                  recv[0][d]);
    }
    expect_close(t[1][0], t[0][0]);
    expect_close(t[1][1], t[0][1]);
}

/* Scenario text `yaml` loaded from a fresh directory `dir` (a
 * "/tmp/dpsim-test-XXXXXX" buffer) beside its trace files, given as
 * name/contents pairs ended by NULL; stall_world_drop removes them. */
static scn_scenario *stall_world(char *dir, const char *yaml, const char *const *files)
{
    cr_assert(mkdtemp(dir));
    char path[256];
    for (size_t i = 0; files[i]; i += 2) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        FILE *f = fopen(path, "w");
        cr_assert(f);
        fputs(files[i + 1], f);
        fclose(f);
    }
    snprintf(path, sizeof path, "%s/world.yaml", dir);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs(yaml, f);
    fclose(f);
    dp_err err = {0};
    scn_scenario *s = scn_load_file(path, NULL, 0, &err);
    cr_assert(s, "%s", err.msg);
    return s;
}

static void stall_world_drop(const char *dir, scn_scenario *s, const char *const *files)
{
    char path[256];
    scn_free(s);
    for (size_t i = 0; files[i]; i += 2) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        remove(path);
    }
    snprintf(path, sizeof path, "%s/world.yaml", dir);
    remove(path);
    rmdir(dir);
}

/* `policy` on s fails with the stall message naming `link`, and frees
 * everything it held. */
static void expect_stalls_on(const char *policy, const scn_scenario *s, const char *link)
{
    long live = dp_alloc_live();
    dp_err err = {0};
    res_run *r = policy_run(policy_find(policy), s, 1, &err);
    cr_expect_null(r);
    cr_expect_eq(err.code, DP_ERUN);
    cr_expect(strstr(err.msg, "stalled") && strstr(err.msg, link), "%s", err.msg);
    res_run_free(r);
    cr_expect_eq(dp_alloc_live(), live, "leaked %ld blocks", dp_alloc_live() - live);
}

/* The stall worlds' model, data and first device, a (its link follows). */
#define STALL_HEAD                                                                                           \
    "model: { name: m, params: 1000, flops_per_sample: 1.0e6 }\n"                                            \
    "dataset: { name: d, samples: 10, sample_bytes: 100 }\n"                                                 \
    "training: { epochs: 1 }\n"                                                                              \
    "devices:\n"                                                                                             \
    "  - { name: a, kind: gpu, memory: 1GiB, batch: 1, batch_time: 1s,\n"

/* A link dead forever stalls the run: an error, not a hang or a crash. */
Test(policy, permanent_outage_is_a_run_error)
{
    static const char *DEAD =
        "name: dead\n" STALL_HEAD "      link: { up: 8Mbps, latency: 1ms, down_trace: dead.csv } }\n";
    static const char *const files[] = {"dead.csv", "time_s,bandwidth_bps\n0,1000\n0.5,0\n", NULL};
    char dir[] = "/tmp/dpsim-test-XXXXXX";
    scn_scenario *s = stall_world(dir, DEAD, files);
    /* the link's long-run capacity is 0: C-ADP's planner refuses it */
    dp_err err = {0};
    res_run *r = policy_run(policy_find("cadp"), s, 1, &err);
    cr_expect_null(r);
    cr_expect_eq(err.code, DP_EINPUT);
    cr_expect(strstr(err.msg, "device a: its link to the server has zero mean bandwidth"), "%s", err.msg);
    res_run_free(r);
    /* a policy that does not plan meets the outage in the run */
    expect_stalls_on("ddp", s, "a.down");
    stall_world_drop(dir, s, files);
}

/* The same dead download beside another device's idle upload whose trace
 * loops: each of its changes queues a re-share at its instant
 * (reshare_light), so the stall check, every 4096 events, always met one
 * pending and the run went on to the event limit (2e9 events, many
 * minutes; found by fuzz_scenarios).  It stalls as above.  Whether a check
 * lands after a change or after its re-share depends on the events before:
 * with the download dying at 0.3 s every check did. */
Test(policy, dead_download_beside_an_idle_looping_upload_stalls)
{
    static const char *DEAD =
        "name: dead\n" STALL_HEAD "      link: { up: 8Mbps, latency: 1ms, down_trace: dead.csv } }\n"
        "  - { name: b, kind: gpu, memory: 1GiB, batch: 1, batch_time: 1s,\n"
        "      link: { down: 8Mbps, latency: 1ms, up_trace: { file: tick.csv, loop: true } } }\n";
    static const char *const files[] = {"dead.csv", "time_s,bandwidth_bps\n0,1000\n0.3,0\n", "tick.csv",
                                        "time_s,bandwidth_bps\n0,1000000\n0.01,2000000\n0.02,1000000\n",
                                        NULL};
    char dir[] = "/tmp/dpsim-test-XXXXXX";
    scn_scenario *s = stall_world(dir, DEAD, files);
    expect_stalls_on("ddp", s, "a.down");
    stall_world_drop(dir, s, files);
}

/* DDP whose ring meets a link that died after the data arrived: the run
 * stalls mid-collective, and the collective's state is freed with the run
 * (it leaked 48 bytes; the suite's teardown counts live blocks). */
Test(policy, ddp_stalled_in_a_collective_frees_it)
{
    static const char *DEAD =
        "name: dead-ring\n" STALL_HEAD "      link: { down: 8Mbps, latency: 1ms, up_trace: dying.csv } }\n"
        "  - { name: b, kind: gpu, memory: 1GiB, batch: 1, batch_time: 1s,\n"
        "      link: { up: 8Mbps, down: 8Mbps, latency: 1ms } }\n";
    static const char *const files[] = {"dying.csv", "time_s,bandwidth_bps\n0,8000000\n0.5,0\n", NULL};
    char dir[] = "/tmp/dpsim-test-XXXXXX";
    scn_scenario *s = stall_world(dir, DEAD, files);
    expect_stalls_on("ddp", s, "a.up");
    stall_world_drop(dir, s, files);
}

/* Large scenarios are solved per device group (cadp_solve): the same
 * relaxed optimum as the per-device problem, an objective within one
 * sample's send time of the per-device solver's, and an even split inside
 * each group. */
Test(policy, cadp_solve_by_groups_matches_per_device)
{
    static const char *BIG =
        "name: big\n"
        "model: { name: m, params: 1000000, flops_per_sample: 1.0e9 }\n"
        "dataset: { name: d, samples: 2000000, sample_bytes: 100000 }\n"
        "training: { epochs: 20 }\n"
        "devices:\n"
        "  - { name: g, count: 3000, kind: gpu, memory: 64GiB, batch: 32, batch_time: 0.2s,\n"
        "      link: { up: 100Mbps, down: 100Mbps, latency: 10ms } }\n"
        "  - { name: c, count: 2000, kind: cpu, memory: 64GiB, batch: 4, batch_time: 1.5s,\n"
        "      link: { up: 20Mbps, down: 20Mbps, latency: 30ms } }\n";
    scn_scenario *s = load(BIG, NULL, 0);
    dp_err err = {0};
    cadp_opts co;
    cr_assert_eq(policy_options(policy_find("cadp"), s, &co, sizeof co, &err), 0, "%s", err.msg);
    cadp_inputs in;
    cr_assert_eq(cadp_inputs_build(s, &in, &err), 0, "%s", err.msg);
    slv_result *byg = NULL, *byd = NULL;
    size_t classes = 0;
    cr_assert_eq(cadp_solve(s, &co, &in, "exact", NULL, 0, &byg, &classes, &err), 0, "%s", err.msg);
    cr_expect_eq(classes, 2);
    slv_problem p;
    cadp_problem(s, &co, &in, &p);
    cr_assert_eq(slv_solve_problem("exact", &p, NULL, &byd, &err), 0, "%s", err.msg);
    int64_t sum = 0;
    for (size_t d = 0; d < s->n_devices; d++)
        sum += byg->alloc[d];
    cr_expect_eq(sum, 2000000);
    for (size_t d = 1; d < 3000; d++) /* even inside a group */
        cr_expect(llabs(byg->alloc[d] - byg->alloc[0]) <= 1);
    cr_expect(fabs(byg->lower_bound_s - byd->lower_bound_s) <= 1e-6 * byd->lower_bound_s, "LB %.9g vs %.9g",
              byg->lower_bound_s, byd->lower_bound_s);
    expect_close(byg->objective_s, slv_objective(&p, byg->alloc));
    cr_expect(byg->objective_s >= byg->lower_bound_s);
    cr_expect(byg->objective_s <= byd->objective_s + in.send_s[3000] * 1.0001, "groups %.9g vs devices %.9g",
              byg->objective_s, byd->objective_s);
    slv_result_free(byg);
    slv_result_free(byd);
    cadp_inputs_free(&in);
    scn_free(s);
}

/* ---- straggler episodes (compute.c) ---------------------------------------- */

static const char *SLOW = "name: slow\n"
                          "model: { name: m, params: 1, flops_per_sample: 1.0e6 }\n"
                          "dataset: { name: d, samples: 40, sample_bytes: 1 }\n"
                          "training: { epochs: 3 }\n"
                          "devices:\n"
                          "  - { name: a, kind: gpu, memory: 1GiB, batch: 1, batch_time: 1s,\n"
                          "      link: { up: 1Gbps, down: 1Gbps },\n"
                          "      stragglers: { every: 10s, lasting: 2s, factor: 4 } }\n";

/* A 1 s batch starting 0.5 s before an episode of length L at factor 4:
 * 0.5 s of work before it, then the other 0.5 s at a quarter speed (2 s)
 * if L >= 2, else L s inside (L/4 of work) and the rest at full speed. */
Test(policy, straggler_episode_stretches_a_batch_by_hand)
{
    scn_scenario *s = load(SLOW, NULL, 0);
    dp_err err = {0};
    cmp_model *c = cmp_new(s, 5, &err);
    cr_assert(c, "%s", err.msg);
    int checked = 0;
    double t = 0;
    for (int k = 0; k < 30; k++) {
        double es, ee, ns, ne;
        cr_assert_eq(cmp_straggler_episode(c, 0, t, &es, &ee), 1);
        cr_assert(ee > es && es >= t);
        cr_assert_eq(cmp_straggler_episode(c, 0, ee, &ns, &ne), 1); /* the next one */
        cr_assert(ns >= ee);
        double L = ee - es, want = 0.5 + (L >= 2 ? 2 : L + 0.5 - L / 4);
        if (es - 0.5 >= t && ns >= es - 0.5 + want) { /* the batch meets this episode only */
            expect_close(cmp_batch_s(c, 0, 1, es - 0.5, 1.0), want);
            checked++;
        }
        t = ee; /* a batch right after the episode runs at full speed until the next */
        if (ns >= t + 1)
            expect_close(cmp_batch_s(c, 0, 1, t, 1.0), 1.0);
        else
            cr_expect_gt(cmp_batch_s(c, 0, 1, t, 1.0), 1.0);
    }
    cr_expect_gt(checked, 10);
    cmp_free(c);
    scn_free(s);
}

/* A plain device's batch time comes from a dense per-device record, not its
 * group: the same bits as scn_batch_time for every compute model, batch
 * size and part (a table device keeps going through its group). */
Test(policy, plain_batch_time_matches_the_group_bit_for_bit)
{
    static const char *T = "name: plain\n"
                           "model: { name: m, params: 1, flops_per_sample: 3.7e6 }\n"
                           "dataset: { name: d, samples: 40, sample_bytes: 1 }\n"
                           "training: { epochs: 1 }\n"
                           "devices:\n"
                           "  - { name: m, count: 3, kind: gpu, memory: 1GiB, batch: 7, batch_time: 0.37s,\n"
                           "      link: { up: 1Gbps, down: 1Gbps } }\n"
                           "  - { name: p, kind: cpu, memory: 1GiB, batch: 5, peak_flops: 3.3GFLOPS,\n"
                           "      efficiency: 0.37, overhead: 3ms, link: { up: 1Gbps, down: 1Gbps } }\n"
                           "  - { name: t, kind: cpu, memory: 1GiB, batch: 4,\n"
                           "      batch_table: [[1, 0.11s], [4, 0.3s], [16, 1.1s]],\n"
                           "      link: { up: 1Gbps, down: 1Gbps } }\n";
    scn_scenario *s = load(T, NULL, 0);
    dp_err err = {0};
    cmp_model *c = cmp_new(s, 5, &err);
    cr_assert(c, "%s", err.msg);
    const double parts[] = {1.0, 0.5, 1.0 / 3.0, 0.0};
    for (size_t d = 0; d < s->n_devices; d++) {
        const scn_group *g = &s->groups[s->devices[d].group];
        cr_assert(cmp_plain(c, d), "device %zu", d);
        for (int n = 0; n <= 40; n++)
            for (size_t k = 0; k < sizeof parts / sizeof *parts; k++) {
                double want = scn_batch_time(s, g, n) * parts[k], got = cmp_batch_s(c, d, n, 1.25, parts[k]);
                cr_expect_eq(memcmp(&got, &want, sizeof got), 0, "device %zu n=%d part %g: %.17g, want %.17g",
                             d, n, parts[k], got, want);
            }
    }
    cmp_free(c);
    scn_free(s);
}

/* The same seed gives the same episodes whatever is asked in between. */
Test(policy, straggler_episodes_depend_on_the_seed_only)
{
    scn_scenario *s = load(SLOW, NULL, 0);
    cmp_model *a = cmp_new(s, 9, NULL), *b = cmp_new(s, 9, NULL);
    cr_assert(a && b);
    for (int i = 0; i < 50; i++) /* a: many batch queries first */
        cmp_batch_s(a, 0, 1, i * 3.0, 1.0);
    double as, ae, bs, be;
    cmp_straggler_episode(a, 0, 150, &as, &ae);
    cmp_straggler_episode(b, 0, 150, &bs, &be);
    cr_expect_eq(as, bs);
    cr_expect_eq(ae, be);
    cmp_free(a);
    cmp_free(b);
    scn_free(s);
}

/* Overlapping episodes merge: the device is slow while at least one lasts,
 * so the slow fraction is P(some episode alive) = 1 - e^{-lasting/every}
 * (Poisson starts, exponential lengths): 0.181 for every 10 s lasting 2 s,
 * 1 - e^-30 for every 1 min lasting 30 min (issue 38: this one hung, the
 * old merging loop drawing about e^30 episodes per merged one). */
static double slow_fraction(const char *every, const char *lasting, double t0, double t1)
{
    scn_override ov[] = {{"devices.a.stragglers.every", every}, {"devices.a.stragglers.lasting", lasting}};
    scn_scenario *s = load(SLOW, ov, 2);
    cmp_model *c = cmp_new(s, 3, NULL);
    cr_assert(c);
    double slow = 0, t = t0, es, ee;
    while (t < t1) {
        cr_assert_eq(cmp_straggler_episode(c, 0, t, &es, &ee), 1);
        if (es >= t1)
            break;
        slow += fmin(ee, t1) - fmax(es, t);
        t = ee;
    }
    cmp_free(c);
    scn_free(s);
    return slow / (t1 - t0);
}

Test(policy, straggler_episodes_overlapping_merge)
{
    double f = slow_fraction("10s", "2s", 1000, 1e6);
    cr_expect(fabs(f - (1 - exp(-0.2))) < 0.01, "slow %g of the time, want %g", f, 1 - exp(-0.2));
    f = slow_fraction("1min", "30min", 1e5, 1e6);
    cr_expect(f > 0.999999, "slow %g of the time", f);
}

/* A device idle for 10^9 s (a long outage) asks for its next batch: the
 * episodes between are never drawn (the old generator kept every one since
 * t = 0: 1.4 GB at 10^8 s), and the answer is the one a device that asked
 * all along gets. */
Test(policy, straggler_episodes_far_ahead_cost_nothing_in_between)
{
    scn_scenario *s = load(SLOW, NULL, 0);
    cmp_model *a = cmp_new(s, 4, NULL), *b = cmp_new(s, 4, NULL);
    cr_assert(a && b);
    double as, ae, bs, be;
    for (double t = 0; t < 2e5; t += 7.5) /* a: asks all along (to 2e5 s) */
        cmp_batch_s(a, 0, 1, t, 1.0);
    cr_assert_eq(cmp_straggler_episode(a, 0, 2e5, &as, &ae), 1);
    cr_assert_eq(cmp_straggler_episode(b, 0, 2e5, &bs, &be), 1); /* b: jumps there */
    cr_expect_eq(as, bs);
    cr_expect_eq(ae, be);
    for (double t = 1e9; t < 1e9 + 1e4; t += 1) { /* b jumps to 10^9 s: cells are drawn on demand */
        double d = cmp_batch_s(b, 0, 1, t, 1.0);
        cr_assert(d >= 1.0 - 1e-9 && d <= 4.0 + 1e-9, "a 1 s batch at t = %.17g took %g s", t, d);
    }
    cr_assert_eq(cmp_straggler_episode(b, 0, 1e12, &bs, &be), 1);
    cr_expect(be > 1e12 && be > bs);
    cmp_free(a);
    cmp_free(b);
    scn_free(s);
}

/* One device computing back to back (C-ADP, 3 epochs of 40 batches): the
 * episodes add exactly the straggle_s statistic to Ttotal. */
Test(policy, straggler_episodes_during_epochs_add_their_time)
{
    scn_scenario *s = load(SLOW, NULL, 0);
    scn_override off = {"devices.a.stragglers.factor", "1"};
    scn_scenario *s0 = load(SLOW, &off, 1);
    res_run *r = run(policy_find("cadp"), s), *r0 = run(policy_find("cadp"), s0);
    const res_stat *st = res_find_stat(r, "straggle_s", RES_SCOPE_RUN, 0, 0);
    cr_assert(st);
    cr_expect_gt(st->value, 1.0);
    cr_expect(fabs(r->ttotal_s - (r0->ttotal_s + st->value)) < 1e-9 * r->ttotal_s, "%.17g vs %.17g + %.17g",
              r->ttotal_s, r0->ttotal_s, st->value);
    res_run_free(r);
    res_run_free(r0);
    scn_free(s);
    scn_free(s0);
}

/* ---- utilisation counts compute inside [Tsend, Ttotal] only ------------- */

/* A policy that computes before Tsend: device a gets 1e5 B of data, b 1e6
 * B; each starts when its own data and model are in.  a: data 0.01 + 2e5 /
 * 1e6 = 0.21, model 0.01 + 1.1e6 / 1e6 = 1.11, then 3 batches of 1 s (to
 * 4.11); b: data and model both at 0.01 + 2e6 / 1e6 = 2.01 = Tsend, then
 * one batch of 2 s (to 4.01).  Ttraining = 4.11 - 2.01 = 2.1.  Compute in
 * [Tsend, Ttotal]: a 2.1, b 2.0: utilisation 4.1 / (2 x 2.1).  Counting
 * a's second before Tsend too would give 5 / 4.2, over 100%. */
typedef struct early_dev {
    size_t d;
    int batches_left;
} early_dev;
static early_dev early[2];
static int early_running;

static void early_batch(prt *rt, void *ctx)
{
    early_dev *ed = ctx;
    if (ed->batches_left-- > 0) {
        prt_compute(rt, ed->d, 10, 1.0, early_batch, ed, NULL);
        return;
    }
    if (--early_running == 0)
        prt_end_epoch(rt);
}

static int early_start(prt *rt, const void *opts)
{
    (void)opts;
    double bytes[2] = {1e5, 1e6};
    void *ctx[2] = {&early[0], &early[1]};
    early[0] = (early_dev){0, 3};
    early[1] = (early_dev){1, 1};
    early_running = 2;
    prt_share(rt)[0] = 10;
    prt_share(rt)[1] = 100;
    return prt_distribute(rt, bytes, NULL, early_batch, ctx);
}

static const policy_def policy_early = {
    .name = "early",
    .label = "early",
    .color = "#000000",
    .summary = "computes before Tsend (test)",
    .start = early_start,
    .free = early_free,
};

Test(policy, utilisation_counts_the_training_window)
{
    dp_err err = {0};
    cr_assert_eq(policy_register(&policy_early, &err), 0, "%s", err.msg);
    scn_override ov[1] = {{"training.epochs", "1"}};
    scn_scenario *s = load(TWO, ov, 1);
    res_run *r = run(&policy_early, s);
    expect_close(r->tsend_s, 2.01);
    expect_close(r->ttotal_s, 4.11);
    expect_close(r->devices[0].compute_s, 3.0);
    expect_close(r->devices[1].compute_s, 2.0);
    expect_close(r->utilization, 4.1 / (2 * 2.1));
    cr_expect(r->utilization <= 1.0);
    res_run_free(r);
    scn_free(s);
}

/* ---- analytic collectives see the ring's own link sharing --------------- */

Test(policy, analytic_ring_sees_shared_wan)
{
    double T[2], sent[2][4], busy[2][4];
    for (int mode = 0; mode < 2; mode++) {
        scn_override ov[1] = {{"policies.ddp.collective", mode ? "analytic" : "flows"}};
        scn_scenario *s = load(ALT, ov, 1);
        res_run *r = run(policy_find("ddp"), s);
        T[mode] = r->ttotal_s;
        for (int d = 0; d < 4; d++) {
            sent[mode][d] = r->devices[d].bytes_sent;
            busy[mode][d] = r->devices[d].send_s;
        }
        res_run_free(r);
        scn_free(s);
    }
    /* the model (4e6 B, twice the data's 1 B) ends last: 0.011 + 2 x (4e6 + 1) / 1e6 */
    double ready = 0.011 + 2 * (4e6 + 1) / 1e6;
    expect_close(T[0], ready + 1 + 6 * 2.012);
    expect_close(T[1], T[0]);
    for (int d = 0; d < 4; d++) {
        expect_close(sent[1][d], sent[0][d]);
        /* an up link at 1e7 B/s is busy only while its flow moves, at the
         * WAN's share of 5e5 B/s: 6 rounds x 2 s */
        expect_close(busy[1][d], 6 * 2.0);
    }
}

/* ---- the C-ADP planner plans with the link the run will see -------------- */

/* b's down link is fast (8 Mbit/s) for 0.1 s, then 80 kbit/s (1e4 B/s) for
 * good: the CSV trace does not loop, so its last value holds.  The trace's
 * own mean (its points, [0, 0.1]) said 8 Mbit/s and the planner gave b a
 * share, whose model download then took 100 s an epoch.  Planned over the
 * window of the epochs, b's exchange costs about 101 s and a alone does
 * better: b gets nothing.  a alone, by hand (TWO's world): ready 0.01 +
 * (4e5 + 1e6) / 1e6 = 1.41; epoch 1: 4 batches of 1 s, upload 1.01,
 * aggregation 0.1; epoch 2: download 1.01, 4 s, upload 1.01, 0.1. */
Test(policy, cadp_plans_with_the_held_trace_value)
{
    char dir[] = "/tmp/dpsim-test-XXXXXX";
    cr_assert(mkdtemp(dir));
    char csv[256], yaml[256];
    snprintf(csv, sizeof csv, "%s/drop.csv", dir);
    snprintf(yaml, sizeof yaml, "%s/drop.yaml", dir);
    FILE *f = fopen(csv, "w");
    fputs("time_s,bandwidth_bps\n0,8000000\n0.1,80000\n", f);
    fclose(f);
    f = fopen(yaml, "w");
    const char *b_link = "link: { up: 8Mbps, down: 8Mbps, latency: 10ms } }";
    const char *at = strstr(TWO, "  - { name: b");
    cr_assert(at && strstr(at, b_link));
    fwrite(TWO, 1, (size_t)(strstr(at, b_link) - TWO), f);
    fputs("link: { up: 8Mbps, latency: 10ms, down_trace: drop.csv } }", f);
    fputs(strstr(at, b_link) + strlen(b_link), f);
    fclose(f);
    dp_err err = {0};
    scn_scenario *s = scn_load_file(yaml, NULL, 0, &err);
    cr_assert(s, "%s", err.msg);
    res_run *r = run(policy_find("cadp"), s);
    cr_expect_eq(r->devices[0].samples, 40);
    cr_expect_eq(r->devices[1].samples, 0);
    expect_close(r->ttotal_s, 1.41 + 4 + 1.01 + 0.1 + 1.01 + 4 + 1.01 + 0.1);
    res_run_free(r);
    scn_free(s);
    remove(csv);
    remove(yaml);
    rmdir(dir);
}

/* ---- WAN routes over other sites ---------------------------------------- */

/* Sites hq, hub, far, alt: WAN hq-hub (8 Mbit/s, 10 ms), hub-far (16 Mbit/s,
 * 10 ms), hq-alt (80 Mbit/s, 30 ms), alt-far (80 Mbit/s, 30 ms); no hq-far
 * entry.  The server is in hq, one device in far.  The route hq -> far is
 * the least-latency one, over hub (20 ms, not 60 ms over alt): its links
 * are hq-hub, hub-far and the device's down link, latency 20 + 1 ms. */
static const char *ROUTED = "name: routed\n"
                            "model: { name: m, params: 250000, flops_per_sample: 1.0e6 }\n"
                            "dataset: { name: d, samples: 10, sample_bytes: 100000 }\n"
                            "training: { epochs: 1 }\n"
                            "sites: [hq, hub, far, alt]\n"
                            "server: { site: hq }\n"
                            "wan:\n"
                            "  - { between: [hq, hub], bandwidth: 8Mbps, latency: 10ms }\n"
                            "  - { between: [hub, far], bandwidth: 16Mbps, latency: 10ms }\n"
                            "  - { between: [hq, alt], bandwidth: 80Mbps, latency: 30ms }\n"
                            "  - { between: [far, alt], bandwidth: 80Mbps, latency: 30ms }\n"
                            "devices:\n"
                            "  - { name: a, site: far, kind: gpu, memory: 1GiB, batch: 10, batch_time: 1s,\n"
                            "      link: { up: 80Mbps, down: 80Mbps, latency: 1ms } }\n"
                            "policies: { ddp: { data: shard } }\n";

/* Every link's name and owner: the server NIC and WAN links are named when
 * added, device links when asked (from their index), with an interconnect
 * too. */
Test(policy, link_names_and_owners)
{
    scn_override ov[] = {{"interconnect.bandwidth", "1Gbps"}, {"server.nic.up", "100Mbps"}};
    scn_scenario *s = load(ROUTED, ov, 2);
    dp_err err = {0};
    world *w = world_new(s, 1, &err);
    cr_assert(w, "%s", err.msg);
    net *n = world_net(w);
    int dev, dir;
    const char *want[] = {"a.up", "a.down", "a.peer.up", "a.peer.down"};
    int link[] = {world_dev_up(w, 0), world_dev_down(w, 0), world_dev_peer_up(w, 0),
                  world_dev_peer_down(w, 0)};
    for (int k = 0; k < 4; k++) {
        cr_expect_str_eq(net_link_name(n, link[k]), want[k]);
        world_link_owner(w, link[k], &dev, &dir);
        cr_expect(dev == 0 && dir == k, "%s: owner %d, direction %d", want[k], dev, dir);
    }
    size_t named = 0;
    for (size_t l = 0; l < net_link_count(n); l++) {
        world_link_owner(w, (int)l, &dev, &dir);
        if (dev == -1)
            cr_expect_str_eq(net_link_name(n, (int)l), "server.nic.up");
        else if (dev == -2)
            cr_expect(!strncmp(net_link_name(n, (int)l), "wan.", 4), "%s", net_link_name(n, (int)l));
        named += dev < 0;
    }
    cr_expect_eq(named, 1 + 2 * 4, "the NIC and 4 WAN links both ways");
    world_free(w);
    scn_free(s);
}

Test(policy, wan_route_over_another_site)
{
    scn_scenario *s = load(ROUTED, NULL, 0);
    dp_err err = {0};
    world *w = world_new(s, 1, &err);
    cr_assert(w, "%s", err.msg);
    int links[NET_MAX_PATH];
    size_t nl;
    double lat;
    cr_assert_eq(world_path(w, 0, 1, links, &nl, &lat), 0);
    cr_expect_eq(nl, 3);
    expect_close(lat, 0.021);
    net *n = world_net(w);
    cr_expect_str_eq(net_link_name(n, links[0]), "wan.hq-hub.fwd");
    cr_expect_str_eq(net_link_name(n, links[1]), "wan.hub-far.fwd");
    cr_assert_eq(world_path(w, 1, 0, links, &nl, &lat), 0); /* and back */
    cr_expect_eq(nl, 3);
    cr_expect_str_eq(net_link_name(n, links[1]), "wan.hub-far.rev");
    cr_expect_str_eq(net_link_name(n, links[2]), "wan.hq-hub.rev");
    world_free(w);
    /* DDP: data 1e6 B and model 1e6 B share the 1e6 B/s hq-hub link: both
     * end at 0.021 + 2 s. */
    res_run *r = run(policy_find("ddp"), s);
    expect_close(r->tsend_s, 0.021 + 2.0);
    res_run_free(r);
    /* the C-ADP planner sees the same route: a sample takes 1e5 / 1e6 s */
    cadp_inputs in;
    cr_assert_eq(cadp_inputs_build(s, &in, &err), 0, "%s", err.msg);
    expect_close(in.send_s[0], 0.1);
    expect_close(in.comm_s[0], 2 * (1e6 / 1e6) + 2 * 0.021);
    cadp_inputs_free(&in);
    scn_free(s);
}

/* Sites chained by WAN links, eight in a row: the ends are 7 links apart,
 * past what a path holds (WORLD_MAX_WAN_HOPS = 6): an input error naming
 * them, not a silently unconstrained path. */
Test(policy, wan_route_too_long_is_an_input_error)
{
    char text[2048];
    int len = snprintf(text, sizeof text,
                       "name: chain\n"
                       "model: { name: m, params: 1000, flops_per_sample: 1.0e6 }\n"
                       "dataset: { name: d, samples: 10, sample_bytes: 100 }\n"
                       "training: { epochs: 1 }\n"
                       "sites: [s0, s1, s2, s3, s4, s5, s6, s7]\n"
                       "server: { site: s0 }\n"
                       "wan:\n");
    for (int i = 0; i < 7; i++)
        len += snprintf(text + len, sizeof text - (size_t)len,
                        "  - { between: [s%d, s%d], bandwidth: 1Gbps, latency: 1ms }\n", i, i + 1);
    snprintf(text + len, sizeof text - (size_t)len,
             "devices:\n"
             "  - { name: a, site: s7, kind: gpu, memory: 1GiB, batch: 1, batch_time: 1s,\n"
             "      link: { up: 8Mbps, down: 8Mbps, latency: 1ms } }\n");
    scn_scenario *s = load(text, NULL, 0);
    dp_err err = {0};
    world *w = world_new(s, 1, &err);
    cr_expect_null(w);
    cr_expect_eq(err.code, DP_EINPUT);
    cr_expect(strstr(err.msg, "s0") && strstr(err.msg, "s7"), "%s", err.msg);
    world_free(w);
    /* six links are fine */
    scn_override ov[1] = {{"devices.a.site", "s6"}};
    scn_free(s);
    s = load(text, ov, 1);
    w = world_new(s, 1, &err);
    cr_expect(w, "%s", err.msg);
    world_free(w);
    scn_free(s);
    /* and a site only an empty group uses is not routed, by the world or
     * the planner (a sweep may take a group down to count 0) */
    size_t len2 = strlen(text);
    snprintf(text + len2, sizeof text - len2,
             "  - { name: e, count: 1, site: s7, kind: gpu, memory: 1GiB, batch: 1, batch_time: 1s,\n"
             "      link: { up: 8Mbps, down: 8Mbps, latency: 1ms } }\n");
    scn_override ov2[2] = {{"devices.a.site", "s6"}, {"devices.e.count", "0"}};
    s = load(text, ov2, 2);
    res_run *r = run(policy_find("cadp"), s);
    cr_expect_eq(r->devices[0].samples, 10);
    res_run_free(r);
    scn_free(s);
}

/* A device whose speed trace holds factor 0.5 computes like one with twice
 * the batch time: the planner plans it so (it took the nominal time: 270
 * and 130 of 400 samples, not 320 and 80), and the runs agree in
 * allocation and end time. */
Test(policy, cadp_plans_with_the_speed_trace)
{
    char dir[] = "/tmp/dpsim-test-XXXXXX";
    cr_assert(mkdtemp(dir));
    char csv[256], yaml[256];
    snprintf(csv, sizeof csv, "%s/half.csv", dir);
    snprintf(yaml, sizeof yaml, "%s/half.yaml", dir);
    FILE *f = fopen(csv, "w");
    fputs("time_s,factor\n0,0.5\n", f);
    fclose(f);
    f = fopen(yaml, "w");
    const char *b_time = "batch: 10, batch_time: 2s,";
    const char *at = strstr(TWO, b_time);
    cr_assert(at);
    fwrite(TWO, 1, (size_t)(at - TWO), f);
    fputs("batch: 10, batch_time: 2s, speed_trace: half.csv,", f);
    fputs(at + strlen(b_time), f);
    fclose(f);
    dp_err err = {0};
    scn_override big[1] = {{"dataset.samples", "400"}};
    scn_scenario *s = scn_load_file(yaml, big, 1, &err);
    cr_assert(s, "%s", err.msg);
    scn_override ov[2] = {{"devices.b.batch_time", "4s"}, {"dataset.samples", "400"}};
    scn_scenario *slow = load(TWO, ov, 2);
    res_run *r = run(policy_find("cadp"), s), *q = run(policy_find("cadp"), slow);
    cr_expect_eq(r->devices[0].samples, 320);
    cr_expect_eq(r->devices[1].samples, q->devices[1].samples);
    cr_expect_eq(r->devices[1].samples, 80);
    expect_close(r->ttotal_s, q->ttotal_s);
    res_run_free(r);
    res_run_free(q);
    scn_free(s);
    scn_free(slow);
    remove(csv);
    remove(yaml);
    rmdir(dir);
}

/* The planner gives each device its path's rate as if it sent alone (the
 * paper's bandwidth_i), on the world's route and with the world's TCP
 * window cap: two devices in far each see the hq-hub link's 1e6 B/s (a
 * sample 0.1 s, the exchange 2 s + 2 x 21 ms); a TCP window of 21 kB caps
 * each flow at 21e3 / 0.042 = 5e5 B/s, as world_transfer does. */
Test(policy, cadp_inputs_route_and_tcp_window)
{
    scn_override two[2] = {{"devices.a.count", "2"}, {"dataset.samples", "20"}};
    scn_scenario *s = load(ROUTED, two, 2);
    dp_err err = {0};
    cadp_inputs in;
    cr_assert_eq(cadp_inputs_build(s, &in, &err), 0, "%s", err.msg);
    cr_assert_eq(in.n, 2);
    for (int d = 0; d < 2; d++) {
        expect_close(in.send_s[d], 0.1);
        expect_close(in.comm_s[d], 2 + 0.042);
    }
    cadp_inputs_free(&in);
    scn_free(s);
    scn_override win[2] = {{"dataset.samples", "20"}, {"network.tcp_window", "21000B"}};
    s = load(ROUTED, win, 2);
    cr_assert_eq(cadp_inputs_build(s, &in, &err), 0, "%s", err.msg);
    expect_close(in.send_s[0], 1e5 / 5e5);
    expect_close(in.comm_s[0], 2 * 1e6 / 5e5 + 0.042);
    cadp_inputs_free(&in);
    scn_free(s);
}

/* A C-ADP run records its plan's expectations: without traces one solve,
 * whose objective and terms are cadp_solve's on cadp_inputs_build. */
Test(policy, cadp_records_its_plan)
{
    scn_scenario *s = load(TWO, NULL, 0);
    res_run *r = run(policy_find("cadp"), s);
    dp_err err = {0};
    cadp_inputs in;
    cadp_opts co;
    cr_assert_eq(policy_options(policy_find("cadp"), s, &co, sizeof co, &err), 0, "%s", err.msg);
    cr_assert_eq(cadp_inputs_build(s, &in, &err), 0, "%s", err.msg);
    slv_params prm;
    slv_params_default(&prm);
    prm.rounding = cadp_slv_rounding(&co);
    slv_result *p = NULL;
    cr_assert_eq(cadp_solve(s, &co, &in, cadp_method(&co), &prm, 0, &p, NULL, &err), 0, "%s", err.msg);
    const char *names[4] = {"plan.objective_s", "plan.send_s", "plan.epoch_s", "plan.solves"};
    double want[4] = {p->objective_s, p->send_s, p->epoch_s, 1};
    for (int k = 0; k < 4; k++) {
        int found = 0;
        for (size_t i = 0; i < r->n_stats; i++)
            if (!strcmp(r->stats[i].name, names[k])) {
                found = 1;
                cr_expect_eq(r->stats[i].scope, RES_SCOPE_RUN);
                expect_close(r->stats[i].value, want[k]);
            }
        cr_expect(found, "no %s", names[k]);
    }
    cr_expect(p->objective_s > 0);
    slv_result_free(p);
    cadp_inputs_free(&in);
    res_run_free(r);
    scn_free(s);
}

/* The replay of repeated epochs (a loop outside the event loop) honours
 * the interrupt flag: with it set before the run, DDP on TWO for 10^6
 * epochs stops within 1024 replayed epochs instead of replaying them all. */
Test(policy, replay_honours_the_interrupt)
{
    scn_override ov[1] = {{"training.epochs", "1000000"}};
    scn_scenario *s = load(TWO, ov, 1);
    static volatile sig_atomic_t flag;
    flag = 1;
    policy_set_interrupt(&flag);
    dp_err err = {0};
    res_run *r = policy_run(policy_find("ddp"), s, 1, &err);
    policy_set_interrupt(NULL);
    cr_expect_null(r);
    cr_expect(strstr(err.msg, "interrupted") && strstr(err.msg, "replaying epoch"), "%s", err.msg);
    res_run_free(r);
    scn_free(s);
}

/* A run's device records made at its end (res_run_new_deferred, then
 * res_run_devices; issue 39): none held meanwhile, though the run counts
 * its devices and takes their segments; then zeroed records named "". */
Test(policy, results_device_records_deferred)
{
    dp_err e = {0};
    res_run *r = res_run_new_deferred(3, &e);
    cr_assert_not_null(r, "%s", e.msg);
    cr_expect_eq(r->n_devices, 3);
    cr_expect_null(r->devices);
    cr_expect_eq(res_add_segment(r, 2, RES_ACT_COMPUTE, 0, 1), 0);
    cr_expect_eq(res_add_segment(r, 3, RES_ACT_COMPUTE, 0, 1), DP_EINPUT);
    cr_expect_eq(r->n_segments, 1);
    cr_assert_eq(res_run_devices(r), 0);
    cr_assert_not_null(r->devices);
    for (size_t d = 0; d < 3; d++) {
        cr_expect_str_eq(r->devices[d].name, "");
        cr_expect_eq(r->devices[d].samples, 0);
        cr_expect_eq(r->devices[d].data_ready_s, 0);
    }
    cr_expect_eq(res_device_names(r, 1, "gpu[1]", "gpu", "gpu"), 0);
    cr_expect_str_eq(r->devices[1].name, "gpu[1]");
    res_device *v = r->devices;
    cr_expect_eq(res_run_devices(r), 0, "made once");
    cr_expect_eq(r->devices, v);
    dp_alloc_fail_after(1);
    res_run *q = res_run_new_deferred(5, &e);
    dp_alloc_fail_after(0);
    cr_expect_null(q);
    cr_expect_eq(e.code, DP_ENOMEM);
    q = res_run_new_deferred(5, &e);
    cr_assert_not_null(q);
    dp_alloc_fail_after(1);
    cr_expect_eq(res_run_devices(q), DP_ENOMEM);
    dp_alloc_fail_after(0);
    cr_expect_null(q->devices, "the run unchanged");
    res_run_free(q);
    res_run_free(r);
}
