/* test_jobs_inside.c: what happens inside a job of a world of many jobs
 * (sim/jobs/, docs/MODEL.md "Many jobs in one world"): its learning
 * (`learning:`, time to accuracy, a pre-empted job resuming its learner
 * from its checkpoint), the world's device failures hitting the job that
 * holds the device, and its policy's own statistics.
 * tests/test_jobs.c has the schedulers' hand-derived schedules. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <unistd.h>

#include "jobs/jobs.h"
#include "policy/policy.h"
#include "world.h"
#include "test_common.h"

TEST_SUITE_NO_LEAKS(jobs_inside);

/* Eight devices learning the UCI digits (softmax, McMahan's shards) as
 * scenarios/digits.yaml does, 6 epochs. */
#define DIGITS                                                                                               \
    "name: w\n"                                                                                              \
    "model: { name: softmax-digits, params: 650, flops_per_sample: 1300 }\n"                                 \
    "dataset: { name: uci-digits, samples: 1437, sample_bytes: 64B }\n"                                      \
    "training: { epochs: 6, seed: 1 }\n"                                                                     \
    "server: { nic: { up: 1Gbps, down: 1Gbps } }\n"                                                          \
    "devices:\n"                                                                                             \
    "  - { name: fast, count: 4, kind: gpu, memory: 1GiB, batch: 8, batch_time: 5ms,\n"                      \
    "      link: { up: 100Mbps, down: 100Mbps, latency: 5ms } }\n"                                           \
    "  - { name: slow, count: 4, kind: cpu, memory: 1GiB, batch: 8, batch_time: 20ms,\n"                     \
    "      link: { up: 10Mbps, down: 10Mbps, latency: 40ms } }\n"
#define LEARNING                                                                                             \
    "learning: { data: digits, model: softmax, partition: labels, labels_per_device: 2,\n"                   \
    "            lr: { initial: 0.5, every: 4, factor: 0.5 }, evaluate: { epochs: 1 },\n"                    \
    "            targets: [0.85, 0.9, 0.999] }\n"

static jobs_result *run_jobs(const char *text, jobs_spec **js_out, scn_scenario **s_out)
{
    scn_scenario *s = load(text, NULL, 0);
    dp_err e = {0};
    jobs_spec *js = jobs_load(s, &e);
    cr_assert(js, "%s", e.msg);
    jobs_result *r = jobs_run(js, NULL, 1, &e);
    cr_assert(r, "%s", e.msg);
    *js_out = js;
    *s_out = s;
    return r;
}

/* A job alone in the world, arriving at 0 on every device, learns what the
 * single run of the same scenario learns: the same times to accuracy and
 * the same final accuracy, bit for bit (nothing else moves on the network,
 * so its flows' arithmetic is the single run's). */
Test(jobs_inside, a_job_alone_learns_as_the_single_run)
{
    scn_scenario *one = load(DIGITS LEARNING, NULL, 0);
    dp_err e = {0};
    res_run *r1 = policy_run(policy_find("ddp"), one, 1, &e);
    cr_assert(r1, "%s", e.msg);
    cr_assert_eq(r1->n_tta, 3);
    cr_assert(!isnan(r1->tta_s[0]) && !isnan(r1->tta_s[1]) && isnan(r1->tta_s[2]), "targets as designed");
    jobs_spec *js;
    scn_scenario *s;
    jobs_result *r =
        run_jobs(DIGITS LEARNING "jobs: [ { name: a, arrival: 0s, policy: ddp, devices: 8 } ]\n", &js, &s);
    cr_assert_eq(r->n_tta, 3);
    for (size_t k = 0; k < 3; k++) {
        cr_expect_eq(r->tta[k].job, 0);
        cr_expect_eq(r->tta[k].target, r1->tta_target[k]);
        if (isnan(r1->tta_s[k]))
            cr_expect(isnan(r->tta[k].tta_s), "target %zu: %.17g, alone never", k, r->tta[k].tta_s);
        else
            cr_expect_eq(r->tta[k].tta_s, r1->tta_s[k], "target %zu: %.17g, alone %.17g", k, r->tta[k].tta_s,
                         r1->tta_s[k]);
    }
    cr_expect_eq(r->jobs[0].final_acc, r1->evals[r1->n_evals - 1].test_acc);
    cr_expect_eq(r->jobs[0].end_s, r1->ttotal_s);
    res_run_free(r1);
    scn_free(one);
    jobs_result_free(r);
    jobs_free(js);
    scn_free(s);
}

/* Arriving later, its times count from its arrival: job b, alone on the
 * world from 200 s (a is done by then), learns what a did from 0. */
Test(jobs_inside, times_to_accuracy_count_from_the_arrival)
{
    jobs_spec *js;
    scn_scenario *s;
    jobs_result *r = run_jobs(DIGITS LEARNING "jobs:\n"
                                              "  - { name: a, arrival: 0s, policy: ddp, devices: 8 }\n"
                                              "  - { name: b, arrival: 200s, policy: ddp, devices: 8 }\n",
                              &js, &s);
    cr_assert(r->jobs[0].end_s < 200, "a ends at %g", r->jobs[0].end_s);
    cr_assert_eq(r->n_tta, 6);
    for (size_t k = 0; k < 3; k++) {
        cr_expect_eq(r->tta[3 + k].job, 1);
        if (isnan(r->tta[k].tta_s))
            cr_expect(isnan(r->tta[3 + k].tta_s));
        else /* the same schedule 200 s later: equal up to the clock's rounding */
            cr_expect(fabs(r->tta[3 + k].tta_s - r->tta[k].tta_s) < 1e-9, "target %zu: %.17g vs %.17g", k,
                      r->tta[3 + k].tta_s, r->tta[k].tta_s);
    }
    cr_expect_eq(r->jobs[1].final_acc, r->jobs[0].final_acc);
    jobs_result_free(r);
    jobs_free(js);
    scn_free(s);
}

/* A job's own `learning:` (the world has none): only it learns. */
Test(jobs_inside, a_job_carries_its_own_learning)
{
    jobs_spec *js;
    scn_scenario *s;
    jobs_result *r =
        run_jobs(DIGITS "jobs:\n"
                        "  - { name: a, arrival: 0s, policy: ddp, devices: 4 }\n"
                        "  - { name: b, arrival: 0s, policy: ddp, devices: 4,\n"
                        "      learning: { data: digits, model: softmax, targets: [0.5, 0.8] } }\n",
                 &js, &s);
    cr_expect(isnan(r->jobs[0].final_acc));
    cr_expect(r->jobs[1].final_acc > 0.8, "%g", r->jobs[1].final_acc);
    cr_assert_eq(r->n_tta, 2);
    cr_expect(r->tta[0].job == 1 && r->tta[0].target == 0.5 && r->tta[1].target == 0.8);
    cr_expect(r->tta[0].tta_s > 0 && r->tta[0].tta_s <= r->tta[1].tta_s);
    jobs_result_free(r);
    jobs_free(js);
    scn_free(s);
}

/* Pre-empted (las: b, arriving at 10 s, goes ahead of a past its 50
 * device-second threshold), job a resumes its learner from its checkpoint:
 * its epochs go on (6 in all: its learning-rate schedule and evaluations
 * count on), it reaches its targets, and the same seed gives the same bits. */
Test(jobs_inside, a_preempted_job_resumes_its_learner)
{
    const char *text = DIGITS LEARNING
        "scheduler: { name: las, restart: 2s, threshold: 50s }\n"
        "jobs:\n"
        "  - { name: a, arrival: 0s, policy: ddp, devices: 8 }\n"
        "  - { name: b, arrival: 10s, policy: ddp, devices: 8, set: { training.epochs: 1 } }\n";
    jobs_spec *js, *js2;
    scn_scenario *s, *s2;
    jobs_result *r = run_jobs(text, &js, &s), *r2 = run_jobs(text, &js2, &s2);
    cr_assert_eq(r->jobs[0].preemptions, 1, "a pre-empted once (got %d)", r->jobs[0].preemptions);
    cr_expect(r->jobs[0].final_acc > 0.9, "%g", r->jobs[0].final_acc);
    /* a was stopped at 10 s, before its first epoch's end: no checkpoint
     * yet, so it starts again from the initial model once b is done and
     * the restart's 2 s have passed; its first evaluation at or above 0.85
     * is that epoch's end, an epoch (b's, alone: 0.85 at its first epoch's
     * end too) later */
    cr_assert_eq(r->n_tta, 6);
    expect_close(r->tta[0].tta_s, r->jobs[1].end_s + 2 + r->tta[3].tta_s);
    cr_expect(!isnan(r->tta[1].tta_s) && r->tta[1].tta_s >= r->tta[0].tta_s);
    for (size_t k = 0; k < r->n_tta; k++)
        cr_expect(memcmp(&r->tta[k], &r2->tta[k], sizeof r->tta[k]) == 0, "deterministic");
    cr_expect_eq(r->jobs[0].final_acc, r2->jobs[0].final_acc);
    jobs_result_free(r);
    jobs_result_free(r2);
    jobs_free(js);
    jobs_free(js2);
    scn_free(s);
    scn_free(s2);
}

/* jobs_load_ov refuses the scenario with a message naming the file, the
 * job and `what`. */
static void refused(const char *text, const scn_override *ov, size_t n, const char *what)
{
    scn_scenario *s = load(text, ov, n);
    dp_err e = {0};
    jobs_spec *js = jobs_load_ov(s, ov, n, &e);
    cr_expect_null(js);
    cr_expect(strstr(e.msg, "test.yaml") && strstr(e.msg, what), "%s", e.msg);
    jobs_free(js);
    scn_free(s);
}

/* learning.efficiency inside a job is refused (its figures are not pieced
 * together across a job's runs yet), naming the job. */
Test(jobs_inside, learning_efficiency_is_refused)
{
    refused(
        DIGITS
        "learning: { data: digits, model: softmax,\n"
        "            efficiency: { reference_batch: 8, noise_scale: 100, curve: [[0, 0.1], [100, 0.9]] } }\n"
        "jobs: [ { name: a, arrival: 0s, policy: ddp, devices: 4 } ]\n",
        NULL, 0, "jobs[0] (a): a job may not use learning.efficiency");
}

/* ---- device failures (the world's availability) ----
 * The world of tests/test_fail.c's crash timelines, four devices: 1 s
 * batches of 1 sample, 8 samples, 2 epochs, near-instant links (1 Tbps, no
 * latency: every transfer under 1e-10 s), DDP checkpointing after epoch 1
 * (written by 4.5 s) and giving up on a blocked all-reduce after 2 s. */
static const char *CRASH4 =
    "name: crash-jobs\n"
    "model: { name: m, params: 1, flops_per_sample: 1.0e6 }\n"
    "dataset: { name: eight, samples: 8, sample_bytes: 1B }\n"
    "training: { epochs: 2, seed: 1 }\n"
    "devices:\n"
    "  - { name: a, kind: gpu, memory: 1GiB, batch: 1, batch_time: 1s, link: { up: 1Tbps, down: 1Tbps, "
    "latency: 0s } }\n"
    "  - { name: b, kind: gpu, memory: 1GiB, batch: 1, batch_time: 1s, link: { up: 1Tbps, down: 1Tbps, "
    "latency: 0s },\n"
    "      availability: { trace: %s } }\n"
    "  - { name: c, kind: gpu, memory: 1GiB, batch: 1, batch_time: 1s, link: { up: 1Tbps, down: 1Tbps, "
    "latency: 0s } }\n"
    "  - { name: d, kind: gpu, memory: 1GiB, batch: 1, batch_time: 1s, link: { up: 1Tbps, down: 1Tbps, "
    "latency: 0s },\n"
    "      availability: { trace: %s } }\n"
    "policies:\n"
    "  ddp: { overlap: false, collective: analytic, timeout: 2s, checkpoint_write: 0.5s }\n"
    "scheduler: fifo\n"
    "jobs:\n"
    "  - { name: x, arrival: 0s, policy: ddp, devices: 2 }\n"
    "  - { name: y, arrival: %s, policy: ddp, devices: 2 }\n";

/* Run CRASH4 with b's and d's availability traces (text) and y's arrival. */
static jobs_result *run_crash_under(const char *sched, const char *b_trace, const char *d_trace,
                                    const char *y_arrival, jobs_spec **js, scn_scenario **s);

static jobs_result *run_crash(const char *b_trace, const char *d_trace, const char *y_arrival, jobs_spec **js,
                              scn_scenario **s)
{
    return run_crash_under(NULL, b_trace, d_trace, y_arrival, js, s);
}

/* The same under scheduler sched (NULL: the scenario's, fifo). */
static jobs_result *run_crash_under(const char *sched, const char *b_trace, const char *d_trace,
                                    const char *y_arrival, jobs_spec **js, scn_scenario **s)
{
    char dir[] = "/tmp/dpsim-jobsin-XXXXXX", p[3][64], text[4096];
    cr_assert(mkdtemp(dir));
    const char *name[3] = {"w.yaml", "b.csv", "d.csv"};
    snprintf(text, sizeof text, CRASH4, "b.csv", "d.csv", y_arrival);
    const char *body[3] = {text, b_trace, d_trace};
    for (int k = 0; k < 3; k++) {
        snprintf(p[k], sizeof p[k], "%s/%s", dir, name[k]);
        FILE *f = fopen(p[k], "w");
        cr_assert(f);
        fputs(body[k], f);
        fclose(f);
    }
    dp_err e = {0};
    *s = scn_load_file(p[0], NULL, 0, &e);
    for (int k = 0; k < 3; k++)
        remove(p[k]);
    rmdir(dir);
    cr_assert(*s, "%s", e.msg);
    *js = jobs_load(*s, &e);
    cr_assert(*js, "%s", e.msg);
    jobs_result *r = jobs_run(*js, sched ? sched_find(sched) : NULL, 1, &e);
    cr_assert(r, "%s", e.msg);
    return r;
}

static const job_stat *job_stat_of(const jobs_result *r, size_t job, const char *name)
{
    for (size_t k = 0; k < r->n_stats; k++)
        if (r->stats[k].job == job && strcmp(r->stats[k].s.name, name) == 0)
            return &r->stats[k];
    cr_assert_fail("job %zu: no statistic %s", job, name);
    return NULL;
}

static const char *ALWAYS = "time_s,up\n0,1\n";

/* Two jobs from 0: x on a, b; y on c, d.  b fails at 6.25 s and is back at
 * 9.5 s.  x lives test_fail's crash timeline: epoch 1 ends at 4 s, the
 * checkpoint is written by 4.5 s and epoch 2 runs from there; b's work
 * since (1.75 s, its batch cut at 6.25 s) and a's (2 s, to 6.5 s) is
 * lost (3.75 s), the all-reduce blocks, the timeout fires at 8.25 s, DDP waits for b (back at
 * 9.5 s: blocked 3.25 s), sends the checkpoint (4 B) to both and runs
 * epoch 2 again: 4 s, ends at 13.5 s.  y, whose devices never fail, ends
 * at 8.5 s as it would alone, untouched.  The failure is x's alone. */
Test(jobs_inside, a_failure_hits_the_job_holding_the_device)
{
    jobs_spec *js;
    scn_scenario *s;
    jobs_result *r = run_crash("time_s,up\n0,1\n6.25,0\n9.5,1\n", ALWAYS, "0s", &js, &s);
    expect_close(r->jobs[0].end_s, 13.5);
    expect_close(r->jobs[1].end_s, 8.5);
    expect_close(job_stat_of(r, 0, "failures")->s.value, 1);
    expect_close(job_stat_of(r, 0, "restarts")->s.value, 1);
    expect_close(job_stat_of(r, 0, "compute_lost_s")->s.value, 3.75);
    expect_close(job_stat_of(r, 0, "blocked_s")->s.value, 3.25);
    expect_close(job_stat_of(r, 0, "bytes_resent")->s.value, 8);
    expect_close(job_stat_of(r, 1, "failures")->s.value, 0);
    expect_close(job_stat_of(r, 1, "compute_lost_s")->s.value, 0);
    for (size_t k = 0; k < r->n_stats; k++) /* the world's links are no job's figures */
        cr_expect(strncmp(r->stats[k].s.name, "link.", 5) != 0, "%s", r->stats[k].s.name);
    /* its time alone is its work on devices that do not fail: 2 epochs of
     * 4 s, no checkpoint (a world without failures writes none) */
    expect_close(r->jobs[0].alone_s, 8);
    jobs_result_free(r);
    jobs_free(js);
    scn_free(s);
}

/* The scheduler counts only devices up: d is down over [1 s, 5 s).  x (2
 * devices) takes a, b at 0 and ends at 8.5 s; y arrives at 2 s asking for
 * 2 while only c is up and free, waits, and takes c, d when d is back at
 * 5 s: queued 3 s, ends at 5 + 8.5 = 13.5 s. */
Test(jobs_inside, the_scheduler_sees_fewer_devices_while_one_is_down)
{
    jobs_spec *js;
    scn_scenario *s;
    jobs_result *r = run_crash(ALWAYS, "time_s,up\n0,1\n1,0\n5,1\n", "2s", &js, &s);
    expect_close(r->jobs[0].end_s, 8.5);
    expect_close(r->jobs[1].start_s, 5);
    expect_close(r->jobs[1].queue_s, 3);
    expect_close(r->jobs[1].end_s, 13.5);
    cr_assert_eq(r->n_allocs, 4);
    for (size_t k = 0; k < r->n_allocs; k++)
        if (r->allocs[k].job == 1)
            cr_expect(r->allocs[k].device == 2 || r->allocs[k].device == 3, "y on c, d (got %zu)",
                      r->allocs[k].device);
    jobs_result_free(r);
    jobs_free(js);
    scn_free(s);
}

/* Under pollux a job that loses a device is re-sized onto devices up.  x
 * (2 epochs of 8 samples, 1 s a batch of 1: 16 / k s alone on k, on its
 * own) takes all four devices at 0; b fails at 1.25 s (back at 9.5 s),
 * in x's first epoch (it would end at 2 s): x's run sees the failure, is
 * stopped (its epoch lost) and pollux gives it the three devices up (a, c,
 * d; restart 0).  On three, an epoch is 3 batches (3, 3, 2 samples), and
 * DDP in a failing world writes a checkpoint after epoch 1 (0.5 s): epoch
 * 1 1.25-4.25, the checkpoint to 4.75, epoch 2 to 7.75 s.  y arrives
 * after. */
Test(jobs_inside, pollux_resizes_a_job_that_loses_a_device)
{
    jobs_spec *js;
    scn_scenario *s;
    jobs_result *r = run_crash_under("pollux", "time_s,up\n0,1\n1.25,0\n9.5,1\n", ALWAYS, "50s", &js, &s);
    expect_close(r->jobs[0].start_s, 0);
    expect_close(r->jobs[0].end_s, 7.75);
    cr_expect_eq(r->jobs[0].preemptions, 1);
    expect_close(job_stat_of(r, 0, "failures")->s.value, 1);
    /* held: a, b, c, d over [0, 1.25), then a, c, d to the end */
    expect_close(r->jobs[0].device_s, 4 * 1.25 + 3 * 6.5);
    for (size_t k = 0; k < r->n_allocs; k++)
        if (r->allocs[k].job == 0 && r->allocs[k].device == 1)
            expect_close(r->allocs[k].t1, 1.25);
    jobs_result_free(r);
    jobs_free(js);
    scn_free(s);
}

/* A job may not change the world's failures: they are every job's. */
Test(jobs_inside, a_job_may_not_change_the_failures)
{
    refused(DIGITS
            "jobs:\n"
            "  - { name: a, arrival: 0s, policy: ddp, devices: 4,\n"
            "      set: { devices.fast.availability.mtbf: 1h, devices.fast.availability.mttr: 1min } }\n",
            NULL, 0, "jobs[0] (a): a job may not change the world's device failures");
}

/* ---- energy (power: alone; batteries are refused) ----
 * A job's devices draw power while it holds them, from its start: job b,
 * alone on the world from 500 s (a is done by then), draws what a drew
 * from 0, and what the single run draws (no idle time before its start). */
Test(jobs_inside, a_job_draws_power_from_its_start)
{
    scn_override ov[] = {{"devices.fast.power", "{compute: 30W, transmit: 2W, receive: 2W, idle: 5W}"},
                         {"devices.slow.power", "{compute: 10W, transmit: 1W, receive: 1W, idle: 2W}"}};
    scn_scenario *one = load(DIGITS, ov, 2);
    dp_err e = {0};
    res_run *r1 = policy_run(policy_find("ddp"), one, 1, &e);
    cr_assert(r1, "%s", e.msg);
    const res_stat *t1 = res_find_stat(r1, "energy.total_j", RES_SCOPE_RUN, 0, 0);
    cr_assert(t1 && t1->value > 0);
    scn_scenario *s = load(DIGITS "jobs:\n"
                                  "  - { name: a, arrival: 0s, policy: ddp, devices: 8 }\n"
                                  "  - { name: b, arrival: 500s, policy: ddp, devices: 8 }\n",
                           ov, 2);
    jobs_spec *js = jobs_load_ov(s, ov, 2, &e);
    cr_assert(js, "%s", e.msg);
    jobs_result *r = jobs_run(js, NULL, 1, &e);
    cr_assert(r, "%s", e.msg);
    cr_assert(r->jobs[0].end_s < 500);
    cr_expect_eq(job_stat_of(r, 0, "energy.total_j")->s.value, t1->value);
    expect_close(job_stat_of(r, 1, "energy.total_j")->s.value, t1->value);
    jobs_result_free(r);
    jobs_free(js);
    scn_free(s);
    res_run_free(r1);
    scn_free(one);
}

/* Side by side: b holds the world's devices 4..7 (the slow ones) while a
 * holds 0..3; nothing they share is a bottleneck (the server's 1 Gbps
 * carries at most 440 Mbps), so b draws what it draws alone on those
 * devices, its radio's power included (its collectives' flows are charged
 * to its own devices, by its own indices), per device under the world's
 * index. */
Test(jobs_inside, side_by_side_a_job_draws_its_own_devices_power)
{
    scn_override ov[] = {{"devices.fast.power", "{compute: 30W, transmit: 2W, receive: 2W, idle: 5W}"},
                         {"devices.slow.power", "{compute: 10W, transmit: 1W, receive: 1W, idle: 2W}"},
                         {"policies.ddp.bucket", "256B"}}; /* all-reduces during the backward pass */
    scn_scenario *s = load(DIGITS "jobs:\n"
                                  "  - { name: a, arrival: 0s, policy: ddp, devices: 4 }\n"
                                  "  - { name: b, arrival: 0s, policy: ddp, devices: 4 }\n",
                           ov, 3);
    dp_err e = {0};
    jobs_spec *js = jobs_load_ov(s, ov, 3, &e);
    cr_assert(js, "%s", e.msg);
    jobs_result *r = jobs_run(js, NULL, 1, &e);
    cr_assert(r, "%s", e.msg);
    size_t map[4] = {4, 5, 6, 7};
    scn_scenario *sub = jobs_sub_scenario(js->jobs[1].scn, map, 4, &e);
    res_run *one = policy_run(js->jobs[1].policy, sub, 1, &e);
    cr_assert(one, "%s", e.msg);
    expect_close(job_stat_of(r, 1, "energy.total_j")->s.value,
                 res_find_stat(one, "energy.total_j", RES_SCOPE_RUN, 0, 0)->value);
    expect_close(job_stat_of(r, 1, "energy.transmit_j")->s.value,
                 res_find_stat(one, "energy.transmit_j", RES_SCOPE_RUN, 0, 0)->value);
    for (size_t k = 0; k < r->n_stats; k++) {
        const job_stat *x = &r->stats[k];
        if (x->job == 1 && strcmp(x->s.name, "energy_j") == 0) {
            cr_assert(x->s.a >= 4 && x->s.a <= 7, "b's device %lld", (long long)x->s.a);
            expect_close(x->s.value, res_find_stat(one, "energy_j", RES_SCOPE_DEVICE, x->s.a - 4, 0)->value);
        }
    }
    res_run_free(one);
    jobs_sub_free(sub);
    jobs_result_free(r);
    jobs_free(js);
    scn_free(s);
}

/* A job's view names its devices' links by its own indices (the energy
 * records charge a flow's radio power to the devices at its ends, found
 * from its first and last links: world_on_flow), not the world's. */
Test(jobs_inside, a_view_names_its_links_by_its_own_devices)
{
    scn_scenario *s = load(DIGITS, NULL, 0);
    dp_err e = {0};
    world *w = world_new(s, 1, &e);
    cr_assert(w, "%s", e.msg);
    size_t map[2] = {6, 3};
    scn_scenario *sub = jobs_sub_scenario(s, map, 2, &e);
    world *v = world_new_view(w, sub, map, 1, &e);
    cr_assert(v, "%s", e.msg);
    for (size_t d = 0; d < 2; d++) {
        int dev, dir;
        world_link_owner(v, world_dev_up(v, d), &dev, &dir);
        cr_expect(dev == (int)d && dir == 0, "view device %zu up: %d, %d", d, dev, dir);
        world_link_owner(v, world_dev_down(v, d), &dev, &dir);
        cr_expect(dev == (int)d && dir == 1, "view device %zu down: %d, %d", d, dev, dir);
        world_link_owner(w, world_dev_up(v, d), &dev, &dir); /* the world: its own index */
        cr_expect(dev == (int)map[d] && dir == 0, "world device %zu up: %d, %d", map[d], dev, dir);
    }
    world_free(v);
    jobs_sub_free(sub);
    world_free(w);
    scn_free(s);
}

/* A battery's charge is its device's across jobs: refused, naming it. */
Test(jobs_inside, batteries_are_refused)
{
    scn_override ov[] = {{"devices.fast.power", "{compute: 30W}"},
                         {"devices.fast.battery", "{capacity: 10Wh}"}};
    refused(DIGITS "jobs: [ { name: a, arrival: 0s, policy: ddp, devices: 8 } ]\n", ov, 2,
            "a world of many jobs cannot run batteries");
}
