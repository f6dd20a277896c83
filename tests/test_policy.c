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

static res_run *run(const policy_def *k, const scn_scenario *s)
{
    dp_err err = {0};
    res_run *r = policy_run(k, s, 1, &err);
    cr_assert(r, "%s: %s", policy_name(k), err.msg);
    return r;
}

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

static void expect_same_run(const res_run *a, const res_run *b)
{
    cr_expect(memcmp(&a->tsend_s, &b->tsend_s, sizeof(double)) == 0);
    cr_expect(memcmp(&a->ttotal_s, &b->ttotal_s, sizeof(double)) == 0);
    cr_expect(memcmp(&a->tflops, &b->tflops, sizeof(double)) == 0);
    cr_expect_eq(a->events, b->events);
    cr_assert_eq(a->n_devices, b->n_devices);
    for (size_t d = 0; d < a->n_devices; d++) {
        cr_expect(memcmp(&a->devices[d].compute_s, &b->devices[d].compute_s, sizeof(double)) == 0);
        cr_expect(memcmp(&a->devices[d].wait_s, &b->devices[d].wait_s, sizeof(double)) == 0);
    }
    cr_assert_eq(a->n_bins, b->n_bins);
    cr_expect(memcmp(a->flops_bins, b->flops_bins, a->n_bins * sizeof(double)) == 0);
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

/* A link dead forever stalls the run: an error, not a hang or a crash. */
Test(policy, permanent_outage_is_a_run_error)
{
    static const char *DEAD = "name: dead\n"
                              "model: { name: m, params: 1000, flops_per_sample: 1.0e6 }\n"
                              "dataset: { name: d, samples: 10, sample_bytes: 100 }\n"
                              "training: { epochs: 1 }\n"
                              "devices:\n"
                              "  - { name: a, kind: gpu, memory: 1GiB, batch: 1, batch_time: 1s,\n"
                              "      link: { up: 8Mbps, latency: 1ms, down_trace: dead.csv } }\n";
    char dir[] = "/tmp/dpsim-test-XXXXXX";
    cr_assert(mkdtemp(dir));
    char csv[256], yaml[256];
    snprintf(csv, sizeof csv, "%s/dead.csv", dir);
    snprintf(yaml, sizeof yaml, "%s/dead.yaml", dir);
    FILE *f = fopen(csv, "w");
    fputs("time_s,bandwidth_bps\n0,1000\n0.5,0\n", f);
    fclose(f);
    f = fopen(yaml, "w");
    fputs(DEAD, f);
    fclose(f);
    dp_err err = {0};
    scn_scenario *s = scn_load_file(yaml, NULL, 0, &err);
    cr_assert(s, "%s", err.msg);
    /* the link's long-run capacity is 0: C-ADP's planner refuses it */
    res_run *r = policy_run(policy_find("cadp"), s, 1, &err);
    cr_expect_null(r);
    cr_expect_eq(err.code, DP_EINPUT);
    cr_expect(strstr(err.msg, "device a: its link to the server has zero mean bandwidth"), "%s", err.msg);
    res_run_free(r);
    /* a policy that does not plan meets the outage in the run */
    err = (dp_err){0};
    r = policy_run(policy_find("ddp"), s, 1, &err);
    cr_expect_null(r);
    cr_expect_eq(err.code, DP_ERUN);
    cr_expect(strstr(err.msg, "stalled"), "%s", err.msg);
    res_run_free(r);
    scn_free(s);
    remove(csv);
    remove(yaml);
    rmdir(dir);
}

/* DDP whose ring meets a link that died after the data arrived: the run
 * stalls mid-collective, and the collective's state is freed with the run
 * (it leaked 48 bytes; the suite's teardown counts live blocks). */
Test(policy, ddp_stalled_in_a_collective_frees_it)
{
    static const char *DEAD = "name: dead-ring\n"
                              "model: { name: m, params: 1000, flops_per_sample: 1.0e6 }\n"
                              "dataset: { name: d, samples: 10, sample_bytes: 100 }\n"
                              "training: { epochs: 1 }\n"
                              "devices:\n"
                              "  - { name: a, kind: gpu, memory: 1GiB, batch: 1, batch_time: 1s,\n"
                              "      link: { down: 8Mbps, latency: 1ms, up_trace: dying.csv } }\n"
                              "  - { name: b, kind: gpu, memory: 1GiB, batch: 1, batch_time: 1s,\n"
                              "      link: { up: 8Mbps, down: 8Mbps, latency: 1ms } }\n";
    char dir[] = "/tmp/dpsim-test-XXXXXX";
    cr_assert(mkdtemp(dir));
    char csv[256], yaml[256];
    long live = dp_alloc_live();
    snprintf(csv, sizeof csv, "%s/dying.csv", dir);
    snprintf(yaml, sizeof yaml, "%s/dead.yaml", dir);
    FILE *f = fopen(csv, "w");
    fputs("time_s,bandwidth_bps\n0,8000000\n0.5,0\n", f);
    fclose(f);
    f = fopen(yaml, "w");
    fputs(DEAD, f);
    fclose(f);
    dp_err err = {0};
    scn_scenario *s = scn_load_file(yaml, NULL, 0, &err);
    cr_assert(s, "%s", err.msg);
    res_run *r = policy_run(policy_find("ddp"), s, 1, &err);
    cr_expect_null(r);
    cr_expect_eq(err.code, DP_ERUN);
    cr_expect(strstr(err.msg, "stalled"), "%s", err.msg);
    res_run_free(r);
    scn_free(s);
    cr_expect_eq(dp_alloc_live(), live, "leaked %ld blocks", dp_alloc_live() - live);
    remove(csv);
    remove(yaml);
    rmdir(dir);
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

static void early_free(prt *rt, const void *opts)
{
    (void)rt;
    (void)opts;
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

/* Four devices alternating between two sites (a1 eu, b1 us, a2 eu, b2 us):
 * every ring edge crosses the WAN, two flows each way.  WAN 8 Mbit/s = 1e6
 * B/s, 10 ms one way; access links 80 Mbit/s, 1 ms.  Model 4e6 B, chunk 1e6
 * B: each round 0.012 + 2 x 1e6 / 1e6 = 2.012 s (the WAN halved between two
 * flows; the old analytic mode said 1.012).  DDP, no overlap, one step: data
 * (shard, 1 sample of 1 B) and model 4e6 B from a server in eu: the us
 * devices' two model flows share the eu->us WAN: 0.011 + 2 x 4e6 / 1e6 =
 * 8.011 s; one batch of 1 s; 6 rounds. */
static const char *ALT = "name: alt\n"
                         "model: { name: m, params: 1000000, flops_per_sample: 1.0e6 }\n"
                         "dataset: { name: d, samples: 4, sample_bytes: 1 }\n"
                         "training: { epochs: 1 }\n"
                         "sites: [eu, us]\n"
                         "server: { site: eu }\n"
                         "wan: [{ between: [eu, us], bandwidth: 8Mbps, latency: 10ms }]\n"
                         "devices:\n"
                         "  - { name: a1, site: eu, kind: gpu, memory: 1GiB, batch: 1, batch_time: 1s,\n"
                         "      link: { up: 80Mbps, down: 80Mbps, latency: 1ms } }\n"
                         "  - { name: b1, site: us, kind: gpu, memory: 1GiB, batch: 1, batch_time: 1s,\n"
                         "      link: { up: 80Mbps, down: 80Mbps, latency: 1ms } }\n"
                         "  - { name: a2, site: eu, kind: gpu, memory: 1GiB, batch: 1, batch_time: 1s,\n"
                         "      link: { up: 80Mbps, down: 80Mbps, latency: 1ms } }\n"
                         "  - { name: b2, site: us, kind: gpu, memory: 1GiB, batch: 1, batch_time: 1s,\n"
                         "      link: { up: 80Mbps, down: 80Mbps, latency: 1ms } }\n"
                         "policies: { ddp: { data: shard, overlap: false } }\n";

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

Test(policy, closed_form_rounds_star_staggered_latencies)
{
    compare_modes(STAR, NULL, 0, "ddp", 0);
    compare_modes(STAR, NULL, 0, "deepspeed", 0);
    scn_override ov[1] = {{"network.tcp_window", "64KiB"}}; /* rates capped by window / RTT */
    compare_modes(STAR, ov, 1, "ddp", 0);
}

/* A ring over two sites whose edges share the WAN (ALT, geo-3sites-like):
 * rounds stay flows, the same bits. */
Test(policy, closed_form_not_used_on_a_shared_wan)
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

/* A trace on a ring link: its rounds stay flows (bit for bit); an outage
 * in the middle of a collective on a constant ring link: the collective
 * hands its current round back to the net as flows at the outage. */
Test(policy, closed_form_trace_and_outage)
{
    char text[8192];
    const char *src = getenv("DPSIM_SRC"), *at = strstr(STAR, "down: 60Mbps");
    cr_assert(src && at);
    snprintf(text, sizeof text, "%.*sdown_trace: %s/tests/data/trace-outage.csv%s", (int)(at - STAR), STAR,
             src, at + strlen("down: 60Mbps"));
    compare_modes(text, NULL, 0, "ddp", 1);
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

Test(policy, closed_form_foreign_flow_takes_the_round_back)
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

/* network.sharing: rtt: a collective's closed form hands its round back to
 * flows weighted by their path's RTT (an outage in the middle of a
 * collective), as the per-flow run does; on a ring whose edges share a WAN
 * link with unequal latencies the weighted shares change the run. */
Test(policy, rtt_sharing_closed_form_and_shared_wan)
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
Test(policy, analytic_collective_with_outages_runs_as_flows)
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
Test(policy, analytic_collective_fills_link_statistics)
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
            cr_expect(fabs(x->value - y->value) <= 1e-9 * fmax(1, fabs(y->value)), "%s[%lld]: %.17g, flows %.17g",
                      names[k], (long long)l, x->value, y->value);
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
Test(policy, analytic_collective_flags_unequal_latencies_on_a_shared_link)
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
Test(policy, pipelined_ring_hand_timeline_on_a_shared_wan)
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
Test(policy, pipelined_ring_without_sharing_is_the_barrier)
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

Test(policy, pipelined_ring_of_identical_flows_is_the_barrier)
{
    res_run *bar = ring_run(RING3, NULL, 0, PRT_COLL_FLOWS, 0.5, 0, 0);
    res_run *pip = ring_run(RING3, NULL, 0, PRT_COLL_FLOWS, 0.5, 0, 1);
    expect_agree(bar, pip, 0); /* the barrier's rounds in closed form, the pipelined as flows */
    res_run *pf = ring_run(RING3, NULL, 0, PRT_COLL_FLOWS, 0.5, 1, 0);
    cr_expect(memcmp(&pip->ttotal_s, &pf->ttotal_s, sizeof(double)) == 0, "pipelined %.17g, barrier as flows %.17g", pip->ttotal_s,
              pf->ttotal_s);
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
Test(policy, collective_progress_option)
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
