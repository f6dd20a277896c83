/* The load-balancing policies (equal_finish, dlb, lbbsp, lbb; lbsync.h)
 * against timelines computed by hand, their convergence with constant
 * speeds, and their reaction to a device slowing down.
 *
 * World for the hand timelines (as tests/test_policy.c): two devices, star
 * network, server NIC unlimited, access links 1e6 B/s each way with 10 ms
 * latency, model M = 1e6 bytes, samples of 1e4 bytes.  Device a: 10
 * samples in 1 s (0.1 s a sample), device b: 10 in 2 s (0.2 s).  D = 40,
 * B = 20 (the sum of the batches): 2 iterations an epoch, 3 epochs.  One
 * bucket (4 MiB > M): an iteration is its slowest compute plus a ring
 * all-reduce of 2 rounds of 0.02 + 5e5 / 1e6 = 0.52 s, i.e. + 1.04 s.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policy/policy.h"
#include "policy/runtime.h"

#include "test_common.h"

static const char *TWO = "name: two\n"
                         "model: { name: m, params: 250000, bytes_per_param: 4, flops_per_sample: 1.0e6 }\n"
                         "dataset: { name: d, samples: 40, sample_bytes: 10000 }\n"
                         "training: { epochs: 3 }\n"
                         "devices:\n"
                         "  - { name: a, kind: gpu, memory: 1GiB, batch: 10, batch_time: 1s,\n"
                         "      link: { up: 8Mbps, down: 8Mbps, latency: 10ms } }\n"
                         "  - { name: b, kind: cpu, memory: 1GiB, batch: 10, batch_time: 2s,\n"
                         "      link: { up: 8Mbps, down: 8Mbps, latency: 10ms } }\n"
                         "policies:\n"
                         "  equal_finish: { bucket: 4MiB, data: shard }\n"
                         "  dlb: { bucket: 4MiB, data: shard }\n"
                         "  lbbsp: { bucket: 4MiB, data: shard }\n"
                         "  lbb: { bucket: 4MiB, data: shard }\n";

TEST_SUITE_NO_LEAKS(lb);

static res_run *run(const char *name, const scn_scenario *s)
{
    dp_err err = {0};
    const policy_def *p = policy_find(name);
    cr_assert(p, "policy %s registered", name);
    res_run *r = policy_run(p, s, 1, &err);
    cr_assert(r, "%s: %s", name, err.msg);
    return r;
}

static double stat(const res_run *r, const char *name, int64_t d, int64_t e)
{
    const res_stat *st = res_find_stat(r, name, RES_SCOPE_DEVICE_EPOCH, d, e);
    cr_assert(st, "statistic %s device %lld epoch %lld", name, (long long)d, (long long)e);
    return st->value;
}

/* equal_finish: k_a = 0.1, k_b = 0.2 s a sample, T = 4/3, x = (13.3, 6.7),
 * b = (13, 7): computes of 1.3 and 1.4 s, an iteration of 1.4 + 1.04.
 * Shard: a holds 26 samples (2.6e5 B, sharing its link with the model:
 * Tsend = 0.01 + 2 x 2.6e5 / 1e6 = 0.53), b 14; training starts when the
 * model has arrived on a's link: 0.01 + 1.26 = 1.27. */
Test(lb, equal_finish_hand_timeline)
{
    scn_scenario *s = load(TWO, NULL, 0);
    res_run *r = run("equal_finish", s);
    expect_close(r->tsend_s, 0.53);
    cr_assert_eq(r->n_epochs, 3);
    for (int e = 0; e < 3; e++)
        expect_close(r->epochs[e].end_s, 1.27 + 2 * (e + 1) * 2.44);
    expect_close(r->ttotal_s, 1.27 + 6 * 2.44);
    /* bytes: 6 all-reduces x 2 rounds x 5e5 each way, plus data and model */
    expect_close(r->devices[0].bytes_sent, 6e6);
    expect_close(r->devices[0].bytes_recv, 2.6e5 + 1e6 + 6e6);
    expect_close(r->devices[1].bytes_recv, 1.4e5 + 1e6 + 6e6);
    cr_expect_eq(r->devices[0].samples, 26);
    cr_expect_eq(r->devices[1].samples, 14);
    cr_expect_eq(r->devices[0].batches, 6); /* one step per iteration, whatever its size */
    cr_expect_eq(r->devices[1].batches, 6);
    expect_close(r->samples_processed, 120);
    expect_close(r->devices[0].compute_s, 6 * 1.3);
    expect_close(r->devices[1].compute_s, 6 * 1.4);
    for (int e = 1; e <= 3; e++) {
        expect_close(stat(r, "batch_mean", 0, e), 13);
        expect_close(stat(r, "batch_min", 1, e), 7);
        expect_close(stat(r, "batch_max", 1, e), 7);
        expect_close(stat(r, "wait_s", 0, e), 2 * 0.1); /* a waits 0.1 s for b each iteration */
        expect_close(stat(r, "wait_s", 1, e), 0);
    }
    expect_close(res_find_stat(r, "rebalances", RES_SCOPE_RUN, 0, 0)->value, 0);
    res_run_free(r);
    scn_free(s);
}

/* dlb: epoch 1 equal (10, 10): iterations of 2 + 1.04, data 2e5 B each
 * (Tsend 0.41, start 1.21), epoch 1 ends at 1.21 + 2 x 3.04 = 7.29.  Its
 * speeds p/t = 0.5/2 and 0.5/4 give shares 2/3, 1/3: b = (13, 7), so a
 * holds 26 instead of 20 and fetches 6 samples (6e4 B: 0.01 + 0.06) before
 * epoch 2 starts at 7.36; epochs 2 and 3 as equal_finish's (2 x 2.44). */
Test(lb, dlb_hand_timeline)
{
    scn_scenario *s = load(TWO, NULL, 0);
    res_run *r = run("dlb", s);
    expect_close(r->tsend_s, 0.41);
    cr_assert_eq(r->n_epochs, 3);
    expect_close(r->epochs[0].end_s, 7.29);
    expect_close(r->epochs[1].end_s, 7.36 + 4.88);
    expect_close(r->epochs[2].end_s, 7.36 + 2 * 4.88);
    expect_close(r->ttotal_s, 7.36 + 2 * 4.88);
    expect_close(r->devices[0].bytes_recv, 2e5 + 6e4 + 1e6 + 6e6);
    expect_close(r->devices[1].bytes_recv, 2e5 + 1e6 + 6e6);
    expect_close(stat(r, "batch_mean", 0, 1), 10);
    expect_close(stat(r, "wait_s", 0, 1), 2 * 1.0);
    expect_close(stat(r, "batch_mean", 0, 2), 13);
    expect_close(stat(r, "batch_mean", 1, 3), 7);
    expect_close(res_find_stat(r, "rebalances", RES_SCOPE_RUN, 0, 0)->value, 1);
    res_run_free(r);
    scn_free(s);
}

/* lbbsp: iteration 1 equal (10, 10) at 1.21 .. 1.21 + 3.04; measured
 * speeds 10 and 5 samples/s give (13.3, 6.7) -> (13, 7) from iteration 2
 * on.  Replicate data: the dataset (4e5 B) and model share each link:
 * Tsend = 0.01 + 0.8, start 0.01 + 1.4. */
Test(lb, lbbsp_hand_timeline)
{
    scn_override ov[1] = {{"policies.lbbsp.data", "replicate"}};
    scn_scenario *s = load(TWO, ov, 1);
    res_run *r = run("lbbsp", s);
    expect_close(r->tsend_s, 0.81);
    expect_close(r->epochs[0].end_s, 1.41 + 3.04 + 2.44);
    expect_close(r->ttotal_s, 1.41 + 3.04 + 5 * 2.44);
    expect_close(stat(r, "batch_min", 0, 1), 10);
    expect_close(stat(r, "batch_max", 0, 1), 13);
    expect_close(stat(r, "batch_min", 0, 2), 13);
    expect_close(stat(r, "batch_max", 1, 3), 7);
    expect_close(r->devices[0].bytes_recv, 4e5 + 1e6 + 6e6);
    res_run_free(r);
    scn_free(s);
}

/* Four devices of linear costs 0.01, 0.02, 0.03, 0.05 s a sample (one with
 * a fixed overhead), B = 120, D = 600: 5 iterations an epoch, 4 epochs. */
static const char *FOUR = "name: four\n"
                          "model: { name: m, params: 250000, bytes_per_param: 4, flops_per_sample: 0.5e9 }\n"
                          "dataset: { name: d, samples: 600, sample_bytes: 1000 }\n"
                          "training: { epochs: 4 }\n"
                          "devices:\n"
                          "  - { name: a, kind: gpu, memory: 1GiB, batch: 30, batch_time: 0.3s, link: { up: "
                          "1Gbps, down: 1Gbps } }\n"
                          "  - { name: b, kind: gpu, memory: 1GiB, batch: 30, batch_time: 0.6s, link: { up: "
                          "1Gbps, down: 1Gbps } }\n"
                          "  - { name: c, kind: gpu, memory: 1GiB, batch: 30, batch_time: 0.9s, link: { up: "
                          "1Gbps, down: 1Gbps } }\n"
                          "  - { name: d, kind: cpu, memory: 1GiB, batch: 30, peak_flops: 240GFLOPS, "
                          "efficiency: 0.5, overhead: 0.1s,\n"
                          "      link: { up: 1Gbps, down: 1Gbps } }\n";

/* With constant speeds every adaptive policy reaches equal_finish's split
 * within one sample per device: dlb from epoch 2, lbbsp and lbb within the
 * 5 iterations of epoch 1 (every iteration of epoch 2 on is within it). */
Test(lb, adaptive_reach_equal_finish)
{
    scn_scenario *s = load(FOUR, NULL, 0);
    res_run *ef = run("equal_finish", s);
    int64_t sum = 0;
    for (int d = 0; d < 4; d++) {
        cr_expect_eq(stat(ef, "batch_min", d, 1), stat(ef, "batch_max", d, 1));
        sum += (int64_t)stat(ef, "batch_max", d, 1);
    }
    cr_expect_eq(sum, 120);
    /* T solves sum (T - a_i) / k_i = 120: k = (0.01, 0.02, 0.03, 0.025), a_d = 0.1 */
    double T = (120 + 0.1 / 0.025) / (1 / 0.01 + 1 / 0.02 + 1 / 0.03 + 1 / 0.025);
    cr_expect(fabs(stat(ef, "batch_max", 0, 1) - T / 0.01) <= 1);
    cr_expect(fabs(stat(ef, "batch_max", 3, 1) - (T - 0.1) / 0.025) <= 1);
    const char *adaptive[] = {"dlb", "lbbsp", "lbb"};
    for (int k = 0; k < 3; k++) {
        res_run *r = run(adaptive[k], s);
        for (int e = 2; e <= 4; e++)
            for (int d = 0; d < 4; d++) {
                double want = stat(ef, "batch_max", d, 1);
                cr_expect(fabs(stat(r, "batch_min", d, e) - want) <= 1,
                          "%s device %d epoch %d: min %g want %g", adaptive[k], d, e,
                          stat(r, "batch_min", d, e), want);
                cr_expect(fabs(stat(r, "batch_max", d, e) - want) <= 1,
                          "%s device %d epoch %d: max %g want %g", adaptive[k], d, e,
                          stat(r, "batch_max", d, e), want);
            }
        res_run_free(r);
    }
    res_run_free(ef);
    scn_free(s);
}

/* Device a at half speed from t = 3 s (in epoch 2 of about 2.8 s each): equal_finish keeps its split, the
 * adaptive policies move samples off a and finish sooner. */
Test(lb, straggler_rebalances)
{
    char path[] = "/tmp/dpsim-lb-XXXXXX.csv";
    int fd = mkstemps(path, 4);
    cr_assert(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("time_s,factor\n0,1\n3,0.5\n", f);
    fclose(f);
    scn_override ov[1] = {{"devices.a.speed_trace", path}};
    scn_scenario *s = load(FOUR, ov, 1);
    unlink(path);
    res_run *ef = run("equal_finish", s);
    double a_ef = stat(ef, "batch_mean", 0, 4);
    cr_expect_eq(a_ef, stat(ef, "batch_mean", 0, 1), "equal_finish never adapts");
    const char *adaptive[] = {"dlb", "lbbsp", "lbb"};
    for (int k = 0; k < 3; k++) {
        res_run *r = run(adaptive[k], s);
        /* at half speed a's share of the time-equal split drops from
         * 100/(100+50+33+40) to 50/(50+50+33+40): about 54 -> 35 samples */
        cr_expect(stat(r, "batch_mean", 0, 4) < 0.75 * a_ef, "%s: a's batch %g in the last epoch (was %g)",
                  adaptive[k], stat(r, "batch_mean", 0, 4), a_ef);
        cr_expect(r->ttotal_s < ef->ttotal_s, "%s: %g s, equal_finish %g s", adaptive[k], r->ttotal_s,
                  ef->ttotal_s);
        cr_expect(res_find_stat(r, "rebalances", RES_SCOPE_RUN, 0, 0)->value >= 1);
        res_run_free(r);
    }
    res_run_free(ef);
    scn_free(s);
}

/* Memory caps: 100 MB of activations a sample on 1 GiB (after 4 MB of
 * state, 10 samples fit) holds the fastest device at 10 and water-fills
 * the rest (8 GiB each) in time-equal proportions. */
Test(lb, memory_cap_water_fills)
{
    scn_override ov[5] = {{"model.activation_bytes_per_sample", "100MB"},
                          {"devices.a.batch", "10"},
                          {"devices.b.memory", "8GiB"},
                          {"devices.c.memory", "8GiB"},
                          {"devices.d.memory", "8GiB"}};
    scn_scenario *s = load(FOUR, ov, 5);
    res_run *r = run("equal_finish", s);
    cr_expect_eq(stat(r, "batch_max", 0, 1), 10);
    /* B = 10 + 3 x 30 = 100; the other three: sum (T - a_i)/k_i = 90 */
    double T = (90 + 0.1 / 0.025) / (1 / 0.02 + 1 / 0.03 + 1 / 0.025);
    cr_expect(fabs(stat(r, "batch_max", 1, 1) - T / 0.02) <= 1);
    res_run_free(r);
    for (size_t k = 0; k < 4; k++) {
        const char *names[] = {"dlb", "lbbsp", "lbb", "equal_finish"};
        r = run(names[k], s);
        for (int e = 1; e <= 4; e++)
            cr_expect(stat(r, "batch_max", 0, e) <= 10, "%s", names[k]);
        res_run_free(r);
    }
    scn_free(s);
}

/* A global batch that cannot fit is refused before any simulation. */
Test(lb, global_batch_beyond_memory_refused)
{
    scn_override ov[2] = {{"model.activation_bytes_per_sample", "100MB"},
                          {"policies.lbbsp.global_batch", "41"}};
    scn_scenario *s = load(TWO, ov, 2);
    dp_err err = {0};
    res_run *r = policy_run(policy_find("lbbsp"), s, 1, &err);
    cr_expect_null(r);
    cr_expect_eq(err.code, DP_EINPUT);
    cr_expect(strstr(err.msg, "policies.lbbsp.global_batch") != NULL, "%s", err.msg);
    cr_expect(strstr(err.msg, "at most 20") != NULL, "%s", err.msg);
    scn_free(s);
}

/* A global batch larger than the dataset: one iteration of D an epoch. */
Test(lb, last_iteration_splits_the_remainder)
{
    scn_override ov[1] = {{"policies.equal_finish.global_batch", "30"}};
    scn_scenario *s = load(TWO, ov, 1);
    res_run *r = run("equal_finish", s);
    /* 2 iterations an epoch: 30 = (20, 10), then the remainder 10 by the
     * same shares: (7, 3) (largest remainder of 6.67, 3.33) */
    expect_close(stat(r, "batch_max", 0, 1), 20);
    expect_close(stat(r, "batch_min", 0, 1), 7);
    expect_close(stat(r, "batch_min", 1, 1), 3);
    cr_expect_eq(r->devices[0].samples + r->devices[1].samples, 40);
    expect_close(r->samples_processed, 120);
    res_run_free(r);
    scn_free(s);
}

/* LBB's profile: a batch_table of 4 points is fitted by a cubic.  Points
 * on the line t = 0.05 + 0.03 b: the fit is that line, so LBB starts from
 * (and stays at) equal_finish's split, which interpolates the same line;
 * a wrong fit would start elsewhere. */
Test(lb, lbb_cubic_profile)
{
    char text[2048];
    const char *c = strstr(FOUR, "batch_time: 0.9s");
    cr_assert(c);
    snprintf(text, sizeof text, "%.*sbatch_table: [[10, 0.35], [20, 0.65], [30, 0.95], [40, 1.25]]%s",
             (int)(c - FOUR), FOUR, c + strlen("batch_time: 0.9s"));
    scn_scenario *s = load(text, NULL, 0);
    res_run *ef = run("equal_finish", s), *r = run("lbb", s);
    for (int e = 1; e <= 4; e++) {
        double sum = 0;
        for (int d = 0; d < 4; d++) {
            sum += stat(r, "batch_mean", d, e);
            double want = stat(ef, "batch_max", d, 1);
            cr_expect(fabs(stat(r, "batch_min", d, e) - want) <= 1, "device %d epoch %d", d, e);
            cr_expect(fabs(stat(r, "batch_max", d, e) - want) <= 1, "device %d epoch %d", d, e);
        }
        expect_close(sum, 120);
    }
    res_run_free(ef);
    res_run_free(r);
    scn_free(s);
}

/* lbb below its threshold moves one sample at a time.  Device a runs at
 * half speed from t = 0 (0.2 s a sample), which the profile does not
 * know: it starts at equal_finish's (13, 7) (computes 2.6 and 1.4 s, a gap
 * of 86%, under threshold 1.0), then moves a sample from a to b after each
 * iteration while b's predicted time stays below a's: (12, 8), (11, 9),
 * (10, 10), where both take 2.0 s and it stays.  Shard: a holds 26, b 14;
 * epoch 1 ends with (11, 9), so b fetches 4 samples (0.01 + 0.04 s), after
 * epoch 2 (10, 10) 2 more (0.01 + 0.02). */
Test(lb, lbb_quantum_moves_hand_timeline)
{
    char path[] = "/tmp/dpsim-lb-XXXXXX.csv";
    int fd = mkstemps(path, 4);
    cr_assert(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("time_s,factor\n0,0.5\n", f);
    fclose(f);
    scn_override ov[2] = {{"devices.a.speed_trace", path}, {"policies.lbb.threshold", "1.0"}};
    scn_scenario *s = load(TWO, ov, 2);
    unlink(path);
    res_run *r = run("lbb", s);
    expect_close(r->tsend_s, 0.53);
    cr_assert_eq(r->n_epochs, 3);
    double e1 = 1.27 + (2.6 + 1.04) + (2.4 + 1.04);
    double e2 = e1 + 0.05 + (2.2 + 1.04) + (2.0 + 1.04);
    double e3 = e2 + 0.03 + 2 * (2.0 + 1.04);
    expect_close(r->epochs[0].end_s, e1);
    expect_close(r->epochs[1].end_s, e2);
    expect_close(r->epochs[2].end_s, e3);
    expect_close(r->ttotal_s, e3);
    expect_close(stat(r, "batch_max", 0, 1), 13);
    expect_close(stat(r, "batch_min", 0, 1), 12);
    expect_close(stat(r, "batch_max", 1, 2), 10);
    expect_close(stat(r, "batch_min", 1, 2), 9);
    expect_close(stat(r, "batch_mean", 0, 3), 10);
    expect_close(stat(r, "wait_s", 1, 1), (2.6 - 1.4) + (2.4 - 1.6));
    expect_close(res_find_stat(r, "rebalances", RES_SCOPE_RUN, 0, 0)->value, 3);
    expect_close(r->devices[1].bytes_recv, 1.4e5 + 4e4 + 2e4 + 1e6 + 6e6);
    res_run_free(r);
    scn_free(s);
}
