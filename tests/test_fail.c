/* Device failures under the load-balancing, local-SGD and asynchronous
 * policies (scenarios/README.md, "What each policy does on a failure"),
 * against timelines computed by hand.
 *
 * World: two identical devices a and b, batch 1 in 1 s, 8 samples (4 each
 * under an equal split), 2 epochs, a 4-byte model, links of 1 Tbps with no
 * latency, so every transfer and collective takes under 1e-10 s and the
 * timelines are exact to 1e-9.  Device b goes down at 6.25 s and comes back
 * at 9.5 s (down.csv), or never (gone.csv: down at 6.25 s for good).
 * tests/e2e_dyn.sh runs the same timelines through the command line, plus
 * the slow-link cases (a failure during an average).  Hierarchical
 * averaging has its own world of two sites (sites.yaml, below), with slow
 * links for crashes during its WAN and return phases.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "policy/policy.h"
#include "policy/runtime.h"

#include "test_common.h"

static const char *CRASH =
    "name: crash\n"
    "model: { name: m, params: 1, flops_per_sample: 1.0e6 }\n"
    "dataset: { name: eight, samples: 8, sample_bytes: 1B }\n"
    "training: { epochs: 2, seed: 1 }\n"
    "devices:\n"
    "  - { name: a, kind: gpu, memory: 1GiB, batch: 1, batch_time: 1s,\n"
    "      link: { up: 1Tbps, down: 1Tbps, latency: 0s } }\n"
    "  - { name: b, kind: gpu, memory: 1GiB, batch: 1, batch_time: 1s,\n"
    "      link: { up: 1Tbps, down: 1Tbps, latency: 0s }, availability: { trace: down.csv } }\n"
    "policies:\n"
    "  equal_finish: { overlap: false, collective: analytic, timeout: 2s, checkpoint_write: 0.5s }\n"
    "  dlb: { overlap: false, collective: analytic, timeout: 2s, checkpoint_write: 0.5s }\n"
    "  lbbsp: { overlap: false, collective: analytic, timeout: 2s, checkpoint_write: 0.5s }\n"
    "  lbb: { overlap: false, collective: analytic, timeout: 2s, checkpoint_write: 0.5s }\n"
    "  localsgd: { steps: 2, collective: analytic }\n"
    "  flsgd: { steps: 2, collective: analytic }\n"
    "  deepspeed: { stage: 3, collective: analytic, timeout: 2s, checkpoint_write: 0.5s }\n";

/* Hierarchical averaging: sites x (a, b) and y (c, d) of the same devices,
 * 16 samples (4 each), rounds of 2 steps (2 s; 4 s an epoch); links of
 * 100 Tbps, so the 4 averages before a crash take under 1e-10 s.  No device
 * fails unless an override gives it a trace. */
static const char *SITES = "name: sites\n"
                           "model: { name: m, params: 1, flops_per_sample: 1.0e6 }\n"
                           "dataset: { name: sixteen, samples: 16, sample_bytes: 1B }\n"
                           "training: { epochs: 2, seed: 1 }\n"
                           "sites: [ { name: x }, { name: y } ]\n"
                           "wan: [ { between: [x, y], bandwidth: 100Tbps, latency: 0s } ]\n"
                           "server: { site: x }\n"
                           "devices:\n"
                           "  - { name: a, kind: gpu, site: x, memory: 1GiB, batch: 1, batch_time: 1s,\n"
                           "      link: { up: 100Tbps, down: 100Tbps, latency: 0s } }\n"
                           "  - { name: b, kind: gpu, site: x, memory: 1GiB, batch: 1, batch_time: 1s,\n"
                           "      link: { up: 100Tbps, down: 100Tbps, latency: 0s } }\n"
                           "  - { name: c, kind: gpu, site: y, memory: 1GiB, batch: 1, batch_time: 1s,\n"
                           "      link: { up: 100Tbps, down: 100Tbps, latency: 0s } }\n"
                           "  - { name: d, kind: gpu, site: y, memory: 1GiB, batch: 1, batch_time: 1s,\n"
                           "      link: { up: 100Tbps, down: 100Tbps, latency: 0s } }\n"
                           "policies:\n"
                           "  hierarchical: { steps: 2, collective: analytic }\n";

static const char *const LB[] = {"equal_finish", "dlb", "lbbsp", "lbb"};

static char dir[] = "/tmp/dpsim-fail-XXXXXX";
static char path[256];

static void put(const char *name, const char *text)
{
    char p[300];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    cr_assert(f, "%s", p);
    fputs(text, f);
    fclose(f);
}

static void setup(void)
{
    leak_mark();
    cr_assert(mkdtemp(dir));
    put("crash.yaml", CRASH);
    put("sites.yaml", SITES);
    put("down.csv", "time_s,up\n0,1\n6.25,0\n9.5,1\n");
    put("gone.csv", "time_s,up\n0,1\n6.25,0\n");
    put("blip.csv", "time_s,up\n0,1\n4.5,0\n5.5,1\n");
    put("late.csv", "time_s,up\n0,1\n5.75,0\n");
    put("t15.csv", "time_s,up\n0,1\n15.5,0\n");
    put("t18.csv", "time_s,up\n0,1\n18.5,0\n");
    put("t19.csv", "time_s,up\n0,1\n19.5,0\n");
    snprintf(path, sizeof path, "%s/crash.yaml", dir);
}

static void teardown(void)
{
    char p[300];
    const char *files[] = {"crash.yaml", "down.csv", "gone.csv", "blip.csv", "late.csv",
                           "sites.yaml", "t15.csv",  "t18.csv",  "t19.csv"};
    for (size_t i = 0; i < 9; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        remove(p);
    }
    rmdir(dir);
    leak_check();
}
TestSuite(fail, .init = setup, .fini = teardown);

/* Run `policy` on `file` (in the test directory) with overrides; NULL
 * (error in *err) if it failed. */
static res_run *run_file(const char *file, const char *policy, const scn_override *ov, size_t n, dp_err *err)
{
    char p[300];
    snprintf(p, sizeof p, "%s/%s", dir, file);
    scn_scenario *s = scn_load_file(p, ov, n, err);
    cr_assert(s, "%s", err->msg);
    res_run *r = policy_run(policy_find(policy), s, 1, err);
    scn_free(s);
    return r;
}

/* Run `policy` on crash.yaml with overrides; NULL (error in *err) if it failed. */
static res_run *run_with(const char *policy, const scn_override *ov, size_t n, dp_err *err)
{
    return run_file("crash.yaml", policy, ov, n, err);
}

static res_run *run_ok(const char *policy, const scn_override *ov, size_t n)
{
    dp_err err = {0};
    res_run *r = run_with(policy, ov, n, &err);
    cr_assert(r, "%s: %s", policy, err.msg);
    return r;
}

static double stat(const res_run *r, const char *name)
{
    const res_stat *x = res_find_stat(r, name, RES_SCOPE_RUN, 0, 0);
    cr_assert(x, "%s: no statistic %s", r->policy, name);
    return x->value;
}

/* The load balancers, with two equal devices, compute 1 sample each per
 * iteration of 2 (4 iterations an epoch) and react as DDP.  Epoch 1 ends at
 * 4 s, the checkpoint is written by 4.5 s.  At 6.25 s b's step (5.5-6.5 s)
 * is cut; a's ends at 6.5 s; lost since the checkpoint: a 2 s + b 1.75 s.
 * The all-reduce blocks; the timeout fires at 8.25 s.
 *  wait:    restart when b is back at 9.5 s (blocked 3.25 s), the model sent
 *           to both (8 B), epoch 2 again: 4 s, Ttotal 13.5 s.
 *  elastic: restart at 8.25 s with a alone (blocked 2 s, 4 B), a computes
 *           both samples of each iteration (2 s): Ttotal 16.25 s. */
Test(fail, load_balancers_restart_from_the_checkpoint)
{
    for (size_t i = 0; i < 4; i++) {
        char key[64];
        snprintf(key, sizeof key, "policies.%s.on_failure", LB[i]);
        for (int elastic = 0; elastic < 2; elastic++) {
            scn_override ov[] = {{key, elastic ? "elastic" : "wait"}};
            res_run *r = run_ok(LB[i], ov, 1);
            expect_close(r->ttotal_s, elastic ? 16.25 : 13.5);
            expect_close(stat(r, "restarts"), 1);
            expect_close(stat(r, "compute_lost_s"), 3.75);
            expect_close(stat(r, "blocked_s"), elastic ? 2 : 3.25);
            expect_close(stat(r, "bytes_resent"), elastic ? 4 : 8);
            /* 16 samples trained on, plus the 3 whole batches computed
             * after the checkpoint and lost (a's 2, b's first) */
            expect_close(r->samples_processed, 19);
            res_run_free(r);
        }
    }
}

/* Local SGD, rounds of 2 batches: epoch 2's second round starts at 6 s;
 * b's batch (6-7 s) is cut at 6.25 s: 0.25 s lost, its last sample of the
 * epoch skipped; a ends the round alone at 8 s.  Ring and server alike. */
Test(fail, localsgd_averages_over_the_devices_up)
{
    for (int server = 0; server < 2; server++) {
        scn_override ov[] = {{"policies.localsgd.sync", server ? "server" : "ring"}};
        res_run *r = run_ok("localsgd", ov, 1);
        expect_close(r->ttotal_s, 8);
        expect_close(stat(r, "compute_lost_s"), 0.25);
        expect_close(stat(r, "samples_skipped"), 1);
        expect_close(stat(r, "bytes_resent"), 0);
        expect_close(stat(r, "rounds"), 4);
        res_run_free(r);
    }
    /* 3 epochs: b is down at 8 s (its 4 samples of epoch 3 skipped), back
     * at 9.5 s, receives the model (4 B) for the round of 10 s, with nothing
     * left; a ends at 12 s.  Data lost: its 4 samples come too (8 B). */
    scn_override ov3[] = {{"training.epochs", "3"}, {"devices.b.availability.data_persists", "false"}};
    res_run *r = run_ok("localsgd", ov3, 1);
    expect_close(r->ttotal_s, 12);
    expect_close(stat(r, "samples_skipped"), 5);
    expect_close(stat(r, "bytes_resent"), 4);
    res_run_free(r);
    r = run_ok("localsgd", ov3, 2);
    expect_close(r->ttotal_s, 12);
    expect_close(stat(r, "bytes_resent"), 8);
    res_run_free(r);
}

/* Local SGD when every device of a round is down but one is back: b is
 * down 4.5-5.5 s (its batch 4-5 s cut: 0.5 s lost, 3 samples skipped), a
 * goes down for good at 5.75 s (its round since 4 s lost: 1.75 s, 2 samples
 * skipped).  b, up again, takes the next round at once: it receives the
 * model (4 B) and, with nothing left, ends epoch 2 at 5.75 s. */
Test(fail, localsgd_a_device_back_takes_an_empty_round)
{
    scn_override ov[] = {{"devices.b.availability.trace", "blip.csv"},
                         {"devices.a.availability.trace", "late.csv"}};
    res_run *r = run_ok("localsgd", ov, 2);
    expect_close(r->ttotal_s, 5.75);
    expect_close(stat(r, "compute_lost_s"), 2.25);
    expect_close(stat(r, "samples_skipped"), 5);
    expect_close(stat(r, "bytes_resent"), 4);
    res_run_free(r);
}

/* FL-SGD, averages in the background every 2 steps: the one launched at
 * 6 s ends at once; b's batch is cut at 6.25 s (its 0.25 s since that launch
 * lost, 1 sample skipped) and a closes epoch 2 at 8 s.  3 epochs: b, back
 * at 9.5 s, receives the model (4 B) when the average of 10 s ends. */
Test(fail, flsgd_averages_without_the_device_down)
{
    for (int server = 0; server < 2; server++) {
        for (int epochs = 2; epochs <= 3; epochs++) {
            scn_override ov[] = {{"policies.flsgd.sync", server ? "server" : "ring"},
                                 {"training.epochs", epochs == 2 ? "2" : "3"}};
            res_run *r = run_ok("flsgd", ov, 2);
            expect_close(r->ttotal_s, epochs == 2 ? 8 : 12);
            expect_close(stat(r, "compute_lost_s"), 0.25);
            expect_close(stat(r, "samples_skipped"), epochs == 2 ? 1 : 5);
            expect_close(stat(r, "bytes_resent"), epochs == 2 ? 0 : 4);
            res_run_free(r);
        }
    }
}

/* The asynchronous server: pull, batch, push, 4 s an epoch.  b's third
 * batch of epoch 2 (6-7 s) is lost at 6.25 s; a ends epoch 2 at 8 s; 14
 * updates (8 + 4 + b's 2).  Lock-step SSP gives the same. */
Test(fail, asyncps_skips_a_worker_that_is_down)
{
    for (int ssp = 0; ssp < 2; ssp++) {
        scn_override ov[] = {{"policies.asyncps.max_staleness", ssp ? "0" : "-1"}};
        res_run *r = run_ok("asyncps", ov, 1);
        expect_close(r->ttotal_s, 8);
        expect_close(stat(r, "compute_lost_s"), 0.25);
        expect_close(stat(r, "pushes_lost"), 1);
        expect_close(stat(r, "samples_skipped"), 1);
        expect_close(stat(r, "rounds"), 14);
        res_run_free(r);
    }
    /* 4 epochs: b skips epoch 3, pulls at 12 s and both end at 16 s */
    scn_override ov4[] = {{"training.epochs", "4"}};
    res_run *r = run_ok("asyncps", ov4, 1);
    expect_close(r->ttotal_s, 16);
    expect_close(stat(r, "samples_skipped"), 5);
    expect_close(stat(r, "rounds"), 26);
    res_run_free(r);
}

/* A device that never returns: wait ends the run naming it; local SGD,
 * FL-SGD and the server go on with a (Ttotal as with b back: b had nothing left to do
 * by 9.5 s in 2 epochs); with both gone, the run fails, it does not hang. */
Test(fail, a_device_gone_for_good_never_hangs)
{
    scn_override gone[] = {{"devices.b.availability.trace", "gone.csv"},
                           {"devices.a.availability.trace", "gone.csv"}};
    for (size_t i = 0; i < 4; i++) {
        dp_err err = {0};
        res_run *r = run_with(LB[i], gone, 1, &err);
        cr_expect_null(r, "%s", LB[i]);
        cr_expect_eq(err.code, DP_ERUN);
        cr_expect(strstr(err.msg, "device b went down at t = 6.25 s and never comes back"), "%s", err.msg);
        res_run_free(r);
    }
    const char *const alone[] = {"localsgd", "flsgd", "asyncps"};
    for (size_t i = 0; i < 3; i++) {
        res_run *r = run_ok(alone[i], gone, 1);
        expect_close(r->ttotal_s, 8);
        res_run_free(r);
        dp_err err = {0};
        r = run_with(alone[i], gone, 2, &err);
        cr_expect_null(r, "%s", alone[i]);
        cr_expect_eq(err.code, DP_ERUN);
        cr_expect(strstr(err.msg, "every device is down for good at t = 6.25 s"), "%s: %s", alone[i],
                  err.msg);
        res_run_free(r);
    }
}

/* ---- DeepSpeed ZeRO stage 3 ------------------------------------------------- */

/* deepspeed stage 3 on crash.yaml with overlap_comm on or off, `on_failure`
 * wait or elastic, plus `ov` (n of them); NULL (error in *err) if it failed. */
static res_run *z3_run(int overlap, int elastic, const scn_override *ov, size_t n, dp_err *err)
{
    scn_override all[4];
    cr_assert(n + 2 <= 4);
    if (n) /* ov may be NULL when n is 0: memcpy must not see it */
        memcpy(all, ov, n * sizeof *ov);
    all[n] = (scn_override){"policies.deepspeed.overlap_comm", overlap ? "true" : "false"};
    all[n + 1] = (scn_override){"policies.deepspeed.on_failure", elastic ? "elastic" : "wait"};
    return run_with("deepspeed", all, n + 2, err);
}

/* Stage 3, one micro-step of 1 sample per device (1 s; every all-gather
 * and reduce-scatter of the 4-byte model under 1e-10 s), 4 steps an epoch.
 * Without overlap a step is gather, forward (1/3 s), gather, backward
 * (2/3 s), reduce-scatter; with overlap, the gathers run beside the whole
 * 1-s batch.  Epoch 1 ends at 4 s; the sharded checkpoint (2 B from each)
 * is written by 4.5 s.  Epoch 2's second step runs 5.5-6.5 s: b is cut at
 * 6.25 s (in its backward pass without overlap), a ends at 6.5 s and the
 * reduce-scatter blocks.  Lost since the checkpoint: a 2 s + b 1.75 s.
 * The timeout fires at 8.25 s.
 *  wait:    restart when b is back at 9.5 s (blocked 3.25 s), the model
 *           sent to both (8 B), epoch 2 again (4 s): Ttotal 13.5 s.
 *  elastic: restart at 8.25 s with a alone (blocked 2 s, 4 B); a computes
 *           the 8 samples of epoch 2 (8 s): Ttotal 16.25 s.
 * Samples computed: the 16 trained on, a's 2 lost batches and b's first,
 * plus, without overlap, b's forward pass of its cut batch, credited as
 * the 1/3 of a sample it completed (a batch cut mid-phase counts nothing). */
Test(fail, zero3_restarts_from_the_checkpoint)
{
    for (int overlap = 0; overlap < 2; overlap++) {
        for (int elastic = 0; elastic < 2; elastic++) {
            dp_err err = {0};
            res_run *r = z3_run(overlap, elastic, NULL, 0, &err);
            cr_assert(r, "overlap %d, elastic %d: %s", overlap, elastic, err.msg);
            expect_close(r->ttotal_s, elastic ? 16.25 : 13.5);
            expect_close(stat(r, "restarts"), 1);
            expect_close(stat(r, "compute_lost_s"), 3.75);
            expect_close(stat(r, "blocked_s"), elastic ? 2 : 3.25);
            expect_close(stat(r, "bytes_resent"), elastic ? 4 : 8);
            expect_close(r->samples_processed, overlap ? 19 : 19 + 1.0 / 3);
            res_run_free(r);
        }
    }
}

/* Stage 3 with b gone for good at 6.25 s: wait ends the run at the timeout
 * (8.25 s) naming b; elastic goes on with a alone as above (16.25 s). */
Test(fail, zero3_device_gone_for_good)
{
    scn_override gone[] = {{"devices.b.availability.trace", "gone.csv"}};
    for (int overlap = 0; overlap < 2; overlap++) {
        dp_err err = {0};
        res_run *r = z3_run(overlap, 0, gone, 1, &err);
        cr_expect_null(r);
        cr_expect_eq(err.code, DP_ERUN);
        cr_expect(strstr(err.msg, "device b went down at t = 6.25 s and never comes back: on_failure: wait "
                                  "cannot resume the job (t = 8.25 s)"),
                  "%s", err.msg);
        res_run_free(r);
        r = z3_run(overlap, 1, gone, 1, &err);
        cr_assert(r, "%s", err.msg);
        expect_close(r->ttotal_s, 16.25);
        expect_close(stat(r, "restarts"), 1);
        res_run_free(r);
    }
}

/* Stage 3 under seeded failures of a (b keeps down.csv): same seed, same
 * run to the bit, overlap on and off, wait and elastic. */
Test(fail, zero3_same_seed_same_run)
{
    scn_override ov[] = {{"availability.mtbf", "3s"}, {"availability.mttr", "1s"}};
    for (int k = 0; k < 4; k++) {
        res_run *r[2];
        for (int j = 0; j < 2; j++) {
            dp_err err = {0};
            r[j] = z3_run(k & 1, k >> 1, ov, 2, &err);
            cr_assert(r[j], "%s", err.msg);
        }
        cr_expect(memcmp(&r[0]->ttotal_s, &r[1]->ttotal_s, sizeof(double)) == 0);
        cr_expect(memcmp(&r[0]->samples_processed, &r[1]->samples_processed, sizeof(double)) == 0);
        cr_expect_eq(r[0]->n_stats, r[1]->n_stats);
        for (size_t j = 0; j < r[0]->n_stats && j < r[1]->n_stats; j++)
            cr_expect(memcmp(&r[0]->stats[j].value, &r[1]->stats[j].value, sizeof(double)) == 0, "%s",
                      r[0]->stats[j].name);
        cr_expect_gt(stat(r[0], "failures"), 0);
        cr_expect_gt(stat(r[0], "restarts"), 0);
        res_run_free(r[0]);
        res_run_free(r[1]);
    }
}

/* Seeded failures of a (mean 3 s up, 1 s down; b keeps down.csv): the same seed gives the same
 * run, to the bit, for every policy that reacts to failures. */
Test(fail, same_seed_same_run_with_failures)
{
    scn_override ov[] = {{"availability.mtbf", "3s"}, {"availability.mttr", "1s"}, {"training.epochs", "3"}};
    const char *const pk[] = {"equal_finish", "dlb", "lbbsp", "lbb", "localsgd", "flsgd", "asyncps"};
    for (size_t i = 0; i < 7; i++) {
        res_run *r[2];
        for (int k = 0; k < 2; k++) {
            dp_err err = {0};
            scn_scenario *s = scn_load_file(path, ov, 3, &err);
            cr_assert(s, "%s", err.msg);
            r[k] = policy_run(policy_find(pk[i]), s, 7, &err);
            scn_free(s);
        }
        cr_assert(r[0] && r[1], "%s", pk[i]);
        cr_expect(memcmp(&r[0]->ttotal_s, &r[1]->ttotal_s, sizeof(double)) == 0, "%s", pk[i]);
        cr_expect_eq(r[0]->n_stats, r[1]->n_stats, "%s", pk[i]);
        for (size_t j = 0; j < r[0]->n_stats && j < r[1]->n_stats; j++)
            cr_expect(memcmp(&r[0]->stats[j].value, &r[1]->stats[j].value, sizeof(double)) == 0, "%s: %s",
                      pk[i], r[0]->stats[j].name);
        cr_expect_gt(stat(r[0], "failures"), 0, "%s", pk[i]);
        res_run_free(r[0]);
        res_run_free(r[1]);
    }
}

/* ---- hierarchical averaging on sites.yaml (2 sites x 2 devices) -------------- */

/* hierarchical on sites.yaml with `ov` plus each combination of its options
 * that a failure touches (wan ring / server, collective analytic / flows):
 * the 4 runs in r[0..4). */
static void hi_runs(const scn_override *ov, size_t n, res_run *r[4])
{
    for (int k = 0; k < 4; k++) {
        scn_override all[8];
        cr_assert(n + 2 <= 8);
        memcpy(all, ov, n * sizeof *ov);
        all[n] = (scn_override){"policies.hierarchical.wan", k & 1 ? "server" : "ring"};
        all[n + 1] = (scn_override){"policies.hierarchical.collective", k & 2 ? "flows" : "analytic"};
        dp_err err = {0};
        r[k] = run_file("sites.yaml", "hierarchical", all, n + 2, &err);
        cr_assert(r[k], "wan %s, %s: %s", k & 1 ? "server" : "ring", k & 2 ? "flows" : "analytic", err.msg);
    }
}

static void hi_free(res_run *r[4])
{
    for (int k = 0; k < 4; k++)
        res_run_free(r[k]);
}

/* hi_runs, then each run's Ttotal and run statistics (NAN: not checked). */
static void hi_expect(const scn_override *ov, size_t n, double ttotal, double failures, double lost,
                      double skipped, double resent, double rounds)
{
    res_run *r[4];
    hi_runs(ov, n, r);
    const char *name[] = {"failures", "compute_lost_s", "samples_skipped", "bytes_resent", "rounds"};
    double want[] = {failures, lost, skipped, resent, rounds};
    for (int k = 0; k < 4; k++) {
        expect_close(r[k]->ttotal_s, ttotal);
        for (size_t i = 0; i < 5; i++)
            if (!isnan(want[i]))
                expect_close(stat(r[k], name[i]), want[i]);
    }
    hi_free(r);
}

/* A member crash: b (site x, led by a) goes down at 6.25 s in the round of
 * 6-8 s of epoch 2: its batch of 6-7 s is cut (0.25 s lost, the round's
 * work since 6 s), its last sample skipped; x averages over a alone at 8 s,
 * the WAN over a and c: Ttotal 8 s, 4 rounds.  steps: 0 (one round an
 * epoch, 4-8 s): b's round began at 4 s, 2.25 s lost, 2 rounds.  3 epochs:
 * b skips epoch 3 (4 more samples); back at 9.5 s, it receives the model
 * (4 B; 8 B with its shard when data does not persist) for the round of
 * 10 s, with nothing left; a, c, d end at 12 s. */
Test(fail, hierarchical_member_crash)
{
    scn_override ov[] = {{"devices.b.availability.trace", "down.csv"},
                         {"training.epochs", "3"},
                         {"devices.b.availability.data_persists", "false"}};
    scn_override whole[] = {ov[0], {"policies.hierarchical.steps", "0"}};
    hi_expect(ov, 1, 8, 1, 0.25, 1, 0, 4);
    hi_expect(whole, 2, 8, 1, 2.25, 1, 0, 2);
    hi_expect(ov, 2, 12, 1, 0.25, 5, 4, 6);
    hi_expect(ov, 3, 12, 1, 0.25, 5, 8, 6);
}

/* A leader crash: a (x's leader) goes down at 6.25 s: the same timeline as
 * b's, b now leading x (the lowest-index device of x up).  With a gone for
 * good and 3 epochs, b leads x to the end: epoch 3 from 8 s, Ttotal 12 s,
 * a's 4 samples of epoch 3 skipped too. */
Test(fail, hierarchical_leader_crash)
{
    scn_override ov[] = {{"devices.a.availability.trace", "down.csv"}, {"training.epochs", "3"}};
    scn_override gone[] = {{"devices.a.availability.trace", "gone.csv"}, ov[1]};
    hi_expect(ov, 1, 8, 1, 0.25, 1, 0, 4);
    hi_expect(gone, 2, 12, 1, 0.25, 5, 0, 6);
}

/* A whole site down: a and b go down at 6.25 s (0.25 s lost each, 1
 * sample skipped each); the WAN step skips x and y ends the run at 8 s.
 * 3 epochs: both skip epoch 3 (8 more samples), come back at 9.5 s and
 * receive the model (4 B each) for the round of 10 s: Ttotal 12 s. */
Test(fail, hierarchical_site_down)
{
    scn_override ov[] = {{"devices.a.availability.trace", "down.csv"},
                         {"devices.b.availability.trace", "down.csv"},
                         {"training.epochs", "3"}};
    hi_expect(ov, 2, 8, 2, 0.5, 2, 0, 4);
    hi_expect(ov, 3, 12, 2, 0.5, 10, 8, 6);
}

/* Every device down at 6.25 s (1 s lost, 4 samples skipped): the round is
 * given up and the job waits.  At 9.5 s a is back first (the traces are
 * read in device order): it receives the model (4 B) and, with nothing
 * left, ends epoch 2 alone at 9.5 s.  3 epochs: b, c, d, back too, receive
 * the model (12 B) and epoch 3 runs 9.5-13.5 s.  Gone for good: the run
 * fails, naming the time; it does not hang. */
Test(fail, hierarchical_every_device_down_waits)
{
    scn_override ov[] = {{"devices.a.availability.trace", "down.csv"},
                         {"devices.b.availability.trace", "down.csv"},
                         {"devices.c.availability.trace", "down.csv"},
                         {"devices.d.availability.trace", "down.csv"},
                         {"training.epochs", "3"}};
    hi_expect(ov, 4, 9.5, 4, 1, 4, 4, NAN);
    hi_expect(ov, 5, 13.5, 4, 1, 4, 16, NAN);
    for (int wan = 0; wan < 2; wan++) {
        scn_override gone[5];
        for (int i = 0; i < 4; i++)
            gone[i] = (scn_override){ov[i].key, "gone.csv"};
        gone[4] = (scn_override){"policies.hierarchical.wan", wan ? "server" : "ring"};
        dp_err err = {0};
        res_run *x = run_file("sites.yaml", "hierarchical", gone, 5, &err);
        cr_expect_null(x);
        cr_expect_eq(err.code, DP_ERUN);
        cr_expect(strstr(err.msg, "every device is down for good at t = 6.25 s"), "%s", err.msg);
        res_run_free(x);
    }
}

/* Crashes during the WAN phase, over a WAN of 32 bps (the two directions
 * share it): the data (8 B to each of c and d) takes 4 s; the WAN ring
 * moves M/2 = 16 bits each way per step, 1 s for its 2 steps; a push or
 * pull across it (32 bits) 1 s, those of site x nothing.
 *  ring: rounds of 2 s + 1 s from 4 s, the last 13-16 s.  A leader (a, or
 *   c) down at 15.5 s breaks the WAN ring; b (or d), holding its site's
 *   average, leads the ring again from 15.5 s: Ttotal 16.5 s, nothing lost.
 *   Both a and b down: x's average (their 2 s each) is lost, the ring
 *   restarts over c alone: Ttotal 15.5 s, 4 s lost.
 *  server: rounds of 2 s + 2 s (c's push, then its pull), the last 16-20 s;
 *   the run ends when the server has averaged (docs/MODEL.md, "When a run
 *   ends"), at 19 s, before the pulls.  a down at 18.5 s: the server holds
 *   x's model (a pushed at 18 s): Ttotal 19 s.  c down at 18.5 s (its push
 *   cut): d pushes from then: Ttotal 19.5 s, nothing lost.  c down at
 *   19.5 s: after the end, Ttotal 19 s.  c and d down at 18.5 s: y's 4 s
 *   are lost, the server averages x alone at once: Ttotal 18.5 s. */
Test(fail, hierarchical_leader_crash_in_the_wan_phase)
{
    const char *slow = "[ { between: [x, y], bandwidth: 32bps, latency: 0s } ]";
    struct {
        const char *wan, *down1, *down2, *trace;
        double ttotal, lost;
    } c[] = {
        {"ring", "a", NULL, "t15.csv", 16.5, 0},   {"ring", "c", NULL, "t15.csv", 16.5, 0},
        {"ring", "a", "b", "t15.csv", 15.5, 4},    {"server", "a", NULL, "t18.csv", 19, 0},
        {"server", "c", NULL, "t18.csv", 19.5, 0}, {"server", "c", NULL, "t19.csv", 19, 0},
        {"server", "c", "d", "t18.csv", 18.5, 4},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        char k1[64], k2[64];
        snprintf(k1, sizeof k1, "devices.%s.availability.trace", c[i].down1);
        snprintf(k2, sizeof k2, "devices.%s.availability.trace", c[i].down2 ? c[i].down2 : c[i].down1);
        scn_override ov[] = {
            {"wan", slow}, {"policies.hierarchical.wan", c[i].wan}, {k1, c[i].trace}, {k2, c[i].trace}};
        dp_err err = {0};
        res_run *r = run_file("sites.yaml", "hierarchical", ov, 4, &err);
        cr_assert(r, "%s", err.msg);
        expect_close(r->ttotal_s, c[i].ttotal);
        expect_close(stat(r, "compute_lost_s"), c[i].lost);
        expect_close(stat(r, "samples_skipped"), 0);
        expect_close(stat(r, "rounds"), 4);
        res_run_free(r);
    }
}

/* Crashes while the result returns inside a site: a's up link at 32 bps
 * makes x's ring 1 s (2 steps of 16 bits), a's WAN step (ring: 2 x 16 bits;
 * server: its 32-bit push) 1 s and its send of the result to b 1 s: rounds
 * of 5 s, the last 15-20 s, the send 19-20 s.  2 epochs: the run ends with
 * the last WAN average at 19 s (docs/MODEL.md, "When a run ends"), before
 * the send and the crash.  3 epochs: the second epoch ends at 19 s too; b
 * (waiting for the send) or a (sending it) down at 19.5 s: the send is cut
 * and the round ends at 19.5 s; with a gone, b fetches the model from the server
 * (4 B) and leads x, whose steps are then 2 s a round (its links are
 * fast): 19.5 + 2 x 2 = 23.5 s; with b gone, a alone in x takes 3 s a
 * round (no site ring, its 1-s WAN step): 25.5 s. */
Test(fail, hierarchical_crash_while_returning)
{
    for (int wan = 0; wan < 2; wan++) {
        for (int who = 0; who < 2; who++) {
            for (int epochs = 2; epochs <= 3; epochs++) {
                scn_override ov[] = {
                    {"devices.a.link.up", "32bps"},
                    {"policies.hierarchical.wan", wan ? "server" : "ring"},
                    {who ? "devices.b.availability.trace" : "devices.a.availability.trace", "t19.csv"},
                    {"training.epochs", epochs == 2 ? "2" : "3"}};
                dp_err err = {0};
                res_run *r = run_file("sites.yaml", "hierarchical", ov, 4, &err);
                cr_assert(r, "%s", err.msg);
                expect_close(r->ttotal_s, epochs == 2 ? 19 : who ? 25.5 : 23.5);
                expect_close(stat(r, "compute_lost_s"), 0);
                expect_close(stat(r, "samples_skipped"), epochs == 2 ? 0 : 4);
                expect_close(stat(r, "bytes_resent"), epochs == 3 && !who ? 4 : 0);
                res_run_free(r);
            }
        }
    }
}

/* Seeded failures of every device (mean 3 s up, 1 s down): the same seed
 * gives the same run, to the bit, under each option. */
Test(fail, hierarchical_same_seed_same_run)
{
    scn_override ov[] = {{"availability.mtbf", "3s"}, {"availability.mttr", "1s"}, {"training.epochs", "4"}};
    res_run *a[4], *b[4];
    hi_runs(ov, 3, a);
    hi_runs(ov, 3, b);
    for (int k = 0; k < 4; k++) {
        cr_expect(memcmp(&a[k]->ttotal_s, &b[k]->ttotal_s, sizeof(double)) == 0, "option set %d", k);
        cr_expect_eq(a[k]->n_stats, b[k]->n_stats);
        for (size_t j = 0; j < a[k]->n_stats && j < b[k]->n_stats; j++)
            cr_expect(memcmp(&a[k]->stats[j].value, &b[k]->stats[j].value, sizeof(double)) == 0, "%s",
                      a[k]->stats[j].name);
        cr_expect_gt(stat(a[k], "failures"), 0);
    }
    hi_free(a);
    hi_free(b);
}

/* A policy without an on_device hook (a plugin: every built-in policy has
 * one now) is refused in a world with failures, not run wrong. */
static int nohook_start(prt *rt, const void *opts)
{
    (void)opts;
    return dp_err_set(prt_err(rt), DP_EINPUT, "started although refused");
}

static void nohook_free(prt *rt, const void *opts)
{
    (void)rt;
    (void)opts;
}

static const policy_def nohook = {
    .name = "nohook",
    .label = "No hook",
    .color = "#000000",
    .summary = "a test policy without an on_device hook",
    .start = nohook_start,
    .free = nohook_free,
};

Test(fail, a_policy_without_a_hook_is_refused)
{
    dp_err err = {0};
    cr_assert_eq(policy_register(&nohook, &err), 0, "%s", err.msg);
    res_run *r = run_with("nohook", NULL, 0, &err);
    cr_expect_null(r);
    cr_expect_eq(err.code, DP_EINPUT);
    cr_expect(strstr(err.msg, "crash.yaml: policy nohook does not model device failures"), "%s", err.msg);
    res_run_free(r);
}
