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
 * the slow-link cases (a failure during an average).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "policy/policy.h"
#include "policy/runtime.h"

#define REL 1e-9
#define expect_close(got, want)                                                                              \
    do {                                                                                                     \
        double g_ = (double)(got), w_ = (double)(want);                                                      \
        cr_expect(fabs(g_ - w_) <= REL * fmax(1.0, fabs(w_)), "%s = %.17g, want %.17g", #got, g_, w_);       \
    } while (0)

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
    "  flsgd: { steps: 2, collective: analytic }\n";

static const char *const LB[] = {"equal_finish", "dlb", "lbbsp", "lbb"};

static long live0;
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
    live0 = dp_alloc_live();
    cr_assert(mkdtemp(dir));
    put("crash.yaml", CRASH);
    put("down.csv", "time_s,up\n0,1\n6.25,0\n9.5,1\n");
    put("gone.csv", "time_s,up\n0,1\n6.25,0\n");
    put("blip.csv", "time_s,up\n0,1\n4.5,0\n5.5,1\n");
    put("late.csv", "time_s,up\n0,1\n5.75,0\n");
    snprintf(path, sizeof path, "%s/crash.yaml", dir);
}

static void teardown(void)
{
    char p[300];
    const char *files[] = {"crash.yaml", "down.csv", "gone.csv", "blip.csv", "late.csv"};
    for (size_t i = 0; i < 5; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        remove(p);
    }
    rmdir(dir);
    cr_expect_eq(dp_alloc_live(), live0, "leaked %ld blocks", dp_alloc_live() - live0);
}
TestSuite(fail, .init = setup, .fini = teardown);

/* Run `policy` on crash.yaml with overrides; NULL (error in *err) if it failed. */
static res_run *run_with(const char *policy, const scn_override *ov, size_t n, dp_err *err)
{
    scn_scenario *s = scn_load_file(path, ov, n, err);
    cr_assert(s, "%s", err->msg);
    res_run *r = policy_run(policy_find(policy), s, 1, err);
    scn_free(s);
    return r;
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
