/* test_jobs.c: many jobs in one world (sim/jobs/, docs/MODEL.md "Many jobs
 * in one world").
 *
 * A test policy, `pulse`, makes job lengths exact: each of its devices
 * computes `iterations` batches per epoch (batch_time 1 s each) and after
 * each sends `bytes` to the server (none when 0); the epoch ends when every
 * device is through.  So a job alone lasts epochs x iterations x (c + m)
 * with m = bytes / (the server NIC's capacity), and every schedule below is
 * derived by hand.  With `work`, the devices share work batches per epoch
 * (work / n each): a job alone on k devices lasts epochs x work / k (the
 * elastic jobs of pollux). */
#include <criterion/criterion.h>
#include <stddef.h>

#include "jobs/jobs.h"
#include "policy/runtime.h"
#include "test_common.h"

typedef struct pulse_opts {
    int iterations;
    double bytes;
    int work; /* > 0: batches per epoch shared by the devices (work / n each), instead of iterations each */
} pulse_opts;

typedef struct pulse_dev {
    size_t d;
    int it;
} pulse_dev;

typedef struct pulse_state {
    pulse_dev *dev;
    size_t done;
    pulse_opts o;
} pulse_state;

static void pulse_iter(prt *rt, void *ctx);

static void pulse_epoch(prt *rt)
{
    pulse_state *st = prt_state(rt);
    st->done = 0;
    for (size_t d = 0; d < prt_n(rt); d++) {
        st->dev[d].it = 0;
        pulse_iter(rt, &st->dev[d]);
    }
}

typedef struct pulse_send {
    prt *rt;
    pulse_dev *pd;
} pulse_send;

static void pulse_back(void *ctx, uint64_t id)
{
    (void)id;
    pulse_send *ps = ctx;
    prt *rt = ps->rt;
    pulse_dev *pd = ps->pd;
    dp_free(ps);
    pulse_iter(rt, pd);
}

static void pulse_computed(prt *rt, void *ctx)
{
    pulse_state *st = prt_state(rt);
    pulse_dev *pd = ctx;
    pd->it++;
    if (st->o.bytes > 0) {
        pulse_send *ps = dp_malloc(sizeof *ps);
        *ps = (pulse_send){rt, pd};
        cr_assert(world_transfer(prt_world(rt), (int)pd->d + 1, 0, st->o.bytes, pulse_back, ps));
        return;
    }
    pulse_iter(rt, pd);
}

static void pulse_iter(prt *rt, void *ctx)
{
    pulse_state *st = prt_state(rt);
    pulse_dev *pd = ctx;
    if (pd->it == (st->o.work > 0 ? st->o.work / (int)prt_n(rt) : st->o.iterations)) {
        if (++st->done == prt_n(rt) && prt_end_epoch(rt) > 0)
            pulse_epoch(rt);
        return;
    }
    const scn_scenario *s = prt_scn(rt);
    prt_compute(rt, pd->d, s->groups[s->devices[pd->d].group].batch, 1.0, pulse_computed, pd, NULL);
}

static int pulse_start(prt *rt, const void *opts)
{
    pulse_state *st = dp_calloc(1, sizeof *st);
    st->dev = dp_calloc(prt_n(rt), sizeof *st->dev);
    st->o = *(const pulse_opts *)opts;
    prt_set_state(rt, st);
    for (size_t d = 0; d < prt_n(rt); d++)
        st->dev[d].d = d;
    pulse_epoch(rt);
    return 0;
}

static void pulse_free(prt *rt, const void *opts)
{
    (void)opts;
    pulse_state *st = prt_state(rt);
    if (st)
        dp_free(st->dev);
    dp_free(st);
    prt_set_state(rt, NULL);
}

static const popt pulse_table[] = {
    {"iterations", NULL, POPT_INT, SCN_UNIT_NUMBER, offsetof(pulse_opts, iterations), 10, 1, 1e6, NULL,
     "batches per device per epoch"},
    {"bytes", NULL, POPT_QUANTITY, SCN_UNIT_BYTES, offsetof(pulse_opts, bytes), 0, -1, 1e15, NULL,
     "bytes each device sends to the server after each batch"},
    {"work", NULL, POPT_INT, SCN_UNIT_NUMBER, offsetof(pulse_opts, work), 0, 0, 1e6, NULL,
     "batches per epoch shared by the devices (0: iterations each)"},
    {NULL, NULL, 0, 0, 0, 0, 0, 0, NULL, NULL},
};

static const policy_def pulse = {
    .name = "pulse",
    .label = "Pulse test",
    .color = "#654321",
    .summary = "a test policy: compute a batch, send to the server, repeat",
    .opts = pulse_table,
    .opts_size = sizeof(pulse_opts),
    .start = pulse_start,
    .free = pulse_free,
};

static void registered(void)
{
    if (!policy_find("pulse")) {
        dp_err e = {0};
        cr_assert_eq(policy_register(&pulse, &e), 0, "%s", e.msg);
    }
}

/* A world of n devices (batch_time 1 s), links 100x the server NIC's
 * 8 Mbps (1 MB/s) down, no latency, plus the jobs text. */
static char *world_text(const char *devices, const char *rest)
{
    static char buf[4096];
    snprintf(buf, sizeof buf,
             "name: w\n"
             "model: { params: 1000, flops_per_sample: 1e6 }\n"
             "dataset: { samples: 100, sample_bytes: 1KB }\n"
             "training: { epochs: 1 }\n"
             "server: { nic: { down: 8Mbps } }\n"
             "devices:\n%s"
             "%s",
             devices, rest);
    return buf;
}

static const char *DEV4 = "  - { name: gpu, count: 4, kind: gpu, memory: 1GiB, batch: 10, batch_time: 1s,\n"
                          "      link: { up: 800Mbps, down: 800Mbps } }\n";
static const char *DEV2 = "  - { name: gpu, count: 2, kind: gpu, memory: 1GiB, batch: 10, batch_time: 1s,\n"
                          "      link: { up: 800Mbps, down: 800Mbps } }\n";

static jobs_result *run_text(const char *text, const char *sched, scn_scenario **s_out, jobs_spec **js_out)
{
    registered();
    scn_scenario *s = load(text, NULL, 0);
    dp_err e = {0};
    jobs_spec *js = jobs_load(s, &e);
    cr_assert(js, "%s", e.msg);
    jobs_result *r = jobs_run(js, sched ? sched_find(sched) : NULL, 1, &e);
    cr_assert(r, "%s", e.msg);
    *s_out = s;
    *js_out = js;
    return r;
}

static void done(scn_scenario *s, jobs_spec *js, jobs_result *r)
{
    jobs_result_free(r);
    jobs_free(js);
    scn_free(s);
}

/* No device is held by two jobs at once. */
static void never_overlap(const jobs_result *r)
{
    for (size_t a = 0; a < r->n_allocs; a++)
        for (size_t b = a + 1; b < r->n_allocs; b++) {
            const job_alloc *x = &r->allocs[a], *y = &r->allocs[b];
            if (x->device != y->device)
                continue;
            cr_expect(x->t1 <= y->t0 || y->t1 <= x->t0,
                      "device %zu held by jobs %zu [%g, %g) and %zu [%g, %g)", x->device, x->job, x->t0,
                      x->t1, y->job, y->t0, y->t1);
        }
}

TEST_SUITE_NO_LEAKS(jobs);

/* CASSINI's unit: two identical jobs each alternating compute c = 1 s and
 * sending 0.5 MB (m = 0.5 s alone) over the shared 1 MB/s NIC.  In phase
 * they send together at half the rate: every iteration c + 2m. */
Test(jobs, cassini_in_phase_takes_c_plus_2m)
{
    scn_scenario *s;
    jobs_spec *js;
    jobs_result *r = run_text(world_text(DEV2, "policies: { pulse: { iterations: 10, bytes: 0.5MB } }\n"
                                               "jobs:\n"
                                               "  - { name: a, arrival: 0s, policy: pulse, devices: 1 }\n"
                                               "  - { name: b, arrival: 0s, policy: pulse, devices: 1 }\n"),
                              "fifo", &s, &js);
    expect_close(r->jobs[0].alone_s, 10 * (1 + 0.5));
    expect_close(r->jobs[0].end_s, 10 * (1 + 2 * 0.5));
    expect_close(r->jobs[1].end_s, 10 * (1 + 2 * 0.5));
    never_overlap(r);
    done(s, js, r);
}

/* Started m apart (m <= c), their sends interleave: every iteration c + m,
 * as if alone. */
Test(jobs, cassini_offset_by_m_takes_c_plus_m)
{
    scn_scenario *s;
    jobs_spec *js;
    jobs_result *r = run_text(world_text(DEV2, "policies: { pulse: { iterations: 10, bytes: 0.5MB } }\n"
                                               "jobs:\n"
                                               "  - { name: a, arrival: 0s, policy: pulse, devices: 1 }\n"
                                               "  - { name: b, arrival: 0.5s, policy: pulse, devices: 1 }\n"),
                              "fifo", &s, &js);
    expect_close(r->jobs[0].end_s, 10 * (1 + 0.5));
    expect_close(r->jobs[1].end_s, 0.5 + 10 * (1 + 0.5));
    expect_close(r->jobs[1].rho, 1);
    done(s, js, r);
}

/* Run the world of jobs in `text` and each job alone on its devices: end
 * time (arrival + its time alone: each job starts at its arrival), bytes
 * and slowdown agree to `rel` (0: bit for bit). */
static void jobs_vs_alone(const char *text, double rel)
{
    registered();
    scn_scenario *s = load(text, NULL, 0);
    dp_err e = {0};
    jobs_spec *js = jobs_load(s, &e);
    cr_assert(js, "%s", e.msg);
    jobs_result *r = jobs_run(js, NULL, 1, &e);
    cr_assert(r, "%s", e.msg);
    for (size_t j = 0; j < js->n; j++) {
        scn_scenario *sub =
            jobs_sub_scenario(js->jobs[j].scn, js->jobs[j].pinned, (size_t)js->jobs[j].want, &e);
        res_run *one = policy_run(js->jobs[j].policy, sub, 1, &e);
        cr_assert(one, "%s", e.msg);
        double arr = js->jobs[j].arrival_s, end = arr + one->ttotal_s;
        cr_expect(fabs(r->jobs[j].end_s - end) <= rel * end, "job %zu: %.17g alone %.17g", j,
                  r->jobs[j].end_s, end);
        cr_expect(fabs(r->jobs[j].bytes - one->bytes_total) <= rel * one->bytes_total,
                  "job %zu bytes: %.17g alone %.17g", j, r->jobs[j].bytes, one->bytes_total);
        double rho = (end - arr) / one->ttotal_s; /* 1 but for the rounding of arr + T - arr */
        cr_expect(fabs(r->jobs[j].rho - rho) <= rel, "job %zu rho %.17g, want %.17g", j, r->jobs[j].rho, rho);
        cr_expect_eq(r->jobs[j].alone_s, one->ttotal_s); /* the estimate is that run */
        res_run_free(one);
        jobs_sub_free(sub);
    }
    never_overlap(r);
    jobs_result_free(r);
    jobs_free(js);
    scn_free(s);
}

/* Jobs that share no link, their flows contending on their own links
 * (DDP's ring as flows, C-ADP's data and model over the access links), give
 * their single-job figures bit for bit: a flow's bytes left are brought up
 * to date only when its own rate changes (sim/core/net_impl.h, lazy
 * progress), so the other job's events never touch its arithmetic (with
 * every flow brought up to date at any flow's event, job a ended at
 * 9.0283333333333218 s here, alone at ...236).  One epoch, both from 0;
 * the next tests: several epochs, later arrivals. */
Test(jobs, sharing_nothing_is_bit_for_bit)
{
    jobs_vs_alone("name: w\n"
                  "model: { params: 200000, flops_per_sample: 5e7 }\n"
                  "dataset: { samples: 600, sample_bytes: 100KB }\n"
                  "training: { epochs: 1 }\n"
                  "devices:\n"
                  "  - { name: g, count: 3, kind: gpu, memory: 1GiB, batch: 16, batch_time: 30ms,\n"
                  "      link: { up: 100Mbps, down: 70Mbps, latency: 1ms } }\n"
                  "  - { name: c, count: 3, kind: cpu, memory: 1GiB, batch: 8, peak_flops: 20GFLOPS,\n"
                  "      efficiency: 0.5, link: { up: 20Mbps, down: 50Mbps, latency: 4ms } }\n"
                  "policies: { ddp: { collective: flows } }\n"
                  "scheduler: static\n"
                  "jobs:\n"
                  "  - { name: a, arrival: 0s, policy: ddp, groups: [g] }\n"
                  "  - { name: b, arrival: 0s, policy: cadp, groups: [c] }\n",
                  0);
}

/* Jobs that share no link (server NIC unlimited, no WAN) on their own
 * devices give their single-job results bit for bit over several epochs,
 * fast-forward on or off: each run of a job has its own clock domain
 * (sim/core/engine_group.h), which restarts at 0 at each clean epoch
 * boundary exactly as a single run's engine does (sim_rebase,
 * runtime_ff.c); with one engine shared by the jobs it could not (another
 * job always had events pending), so their later epochs added to the
 * absolute time and rounded differently (job a here was 26.445000000000004
 * s, alone ...018). */
static const char *SHARE_NOTHING =
    "name: w\n"
    "model: { params: 2000000, flops_per_sample: 5e7 }\n"
    "dataset: { samples: 600, sample_bytes: 4KB }\n"
    "training: { epochs: 2 }\n"
    "devices:\n"
    "  - { name: g, count: 2, kind: gpu, memory: 1GiB, batch: 16, batch_time: 30ms,\n"
    "      link: { up: 100Mbps, down: 100Mbps, latency: 1ms } }\n"
    "  - { name: c, count: 3, kind: cpu, memory: 1GiB, batch: 8, peak_flops: 20GFLOPS,\n"
    "      efficiency: 0.5, link: { up: 20Mbps, down: 50Mbps, latency: 4ms } }\n"
    "scheduler: static\n"
    "jobs:\n"
    "  - { name: a, arrival: %s, policy: ddp, groups: [g] }\n"
    "  - { name: b, arrival: %s, policy: cadp, groups: [c], set: { training.epochs: 3 } }\n";

Test(jobs, sharing_nothing_gives_single_job_results)
{
    char text[2048];
    snprintf(text, sizeof text, SHARE_NOTHING, "0s", "0s");
    jobs_vs_alone(text, 0);
    policy_set_fast_forward(0);
    jobs_vs_alone(text, 0);
    policy_set_fast_forward(1);
}

/* The same jobs arriving at different times (a job arriving at 7.3 s
 * computes from its own 0, as alone: only its origin is 7.3 s). */
Test(jobs, sharing_nothing_from_different_arrivals)
{
    char text[2048];
    snprintf(text, sizeof text, SHARE_NOTHING, "0s", "7.3s");
    jobs_vs_alone(text, 0);
    snprintf(text, sizeof text, SHARE_NOTHING, "5s", "0.1s");
    policy_set_fast_forward(0);
    jobs_vs_alone(text, 0);
    policy_set_fast_forward(1);
}

/* Job `which` of `text` alone on devices 0..n-1 (jobs given by count
 * take the lowest free devices), with `epochs` epochs. */
static res_run *alone_run(const char *text, size_t which, int epochs, scn_scenario **s_out,
                          jobs_spec **js_out)
{
    registered();
    scn_scenario *s = load(text, NULL, 0);
    dp_err e = {0};
    jobs_spec *js = jobs_load(s, &e);
    cr_assert(js, "%s", e.msg);
    size_t map[64];
    int want = js->jobs[which].want;
    for (int d = 0; d < want; d++)
        map[d] = (size_t)d;
    scn_scenario *sub = jobs_sub_scenario(js->jobs[which].scn, map, (size_t)want, &e);
    cr_assert(sub, "%s", e.msg);
    sub->training.epochs = epochs;
    res_run *r = policy_run(js->jobs[which].policy, sub, 1, &e);
    cr_assert(r, "%s", e.msg);
    jobs_sub_free(sub);
    *s_out = s;
    *js_out = js;
    return r;
}

/* A job pre-empted and restarted: its later run computes in a fresh clock
 * domain whose origin is its restart (after the load), so it is its
 * single run of the epochs left, shifted: SRF, 2 devices, restart 0.5 s;
 * A (DDP, 3 epochs, ring as flows) from 0; B (1 short epoch) arrives in
 * A's second epoch and pre-empts it (A keeps its first epoch), ends after
 * its time alone; A reloads for 0.5 s and runs its 2 epochs left.  Not
 * bit for bit (B's end and A's origin add absolute times), to 1e-9. */
static const char *PREEMPT =
    "name: w\n"
    "model: { params: 2000000, flops_per_sample: 5e7 }\n"
    "dataset: { samples: 600, sample_bytes: 4KB }\n"
    "training: { epochs: 3 }\n"
    "devices:\n"
    "  - { name: g, count: 2, kind: gpu, memory: 1GiB, batch: 16, batch_time: 30ms,\n"
    "      link: { up: 100Mbps, down: 100Mbps, latency: 1ms } }\n"
    "policies: { ddp: { collective: flows } }\n"
    "scheduler: { name: srf, restart: 0.5s }\n"
    "jobs:\n"
    "  - { name: A, arrival: 0s, policy: ddp, devices: 2 }\n"
    "  - { name: B, arrival: %.9fs, policy: ddp, devices: 2,\n"
    "      set: { training.epochs: 1, dataset.samples: 96 } }\n";

Test(jobs, preempted_job_restarts_in_a_fresh_domain)
{
    char text[2048];
    snprintf(text, sizeof text, PREEMPT, 1.0);
    scn_scenario *s;
    jobs_spec *js;
    res_run *a3 = alone_run(text, 0, 3, &s, &js);
    cr_assert(a3->n_epochs == 3);
    double arr = (a3->epochs[0].end_s + a3->epochs[1].end_s) / 2; /* inside A's second epoch */
    res_run_free(a3);
    jobs_free(js);
    scn_free(s);
    snprintf(text, sizeof text, PREEMPT, arr);
    res_run *a2 = alone_run(text, 0, 2, &s, &js);
    jobs_free(js);
    scn_free(s);
    res_run *b = alone_run(text, 1, 1, &s, &js);
    jobs_free(js);
    scn_free(s);
    jobs_result *r = run_text(text, NULL, &s, &js);
    arr = js->jobs[1].arrival_s;
    cr_expect_eq(r->jobs[0].preemptions, 1);
    cr_expect_eq(r->jobs[1].start_s, arr);
    double b_end = arr + b->ttotal_s, a_end = b_end + 0.5 + a2->ttotal_s;
    cr_expect(fabs(r->jobs[1].end_s - b_end) <= 1e-9 * b_end, "B ends %.17g, want %.17g", r->jobs[1].end_s,
              b_end);
    cr_expect(fabs(r->jobs[0].end_s - a_end) <= 1e-9 * a_end, "A ends %.17g, want %.17g", r->jobs[0].end_s,
              a_end);
    never_overlap(r);
    res_run_free(a2);
    res_run_free(b);
    done(s, js, r);
}

/* Jobs that share links (the eu-us WAN, whose capacity follows a looping
 * trace, and the server's NIC) convert between clock domains where their
 * flows meet: their figures are those of the one shared engine before
 * clock domains (these numbers) to 1e-9 (2e-16 apart when measured). */
Test(jobs, shared_links_with_a_trace_keep_their_figures)
{
    scn_scenario *s;
    jobs_spec *js;
    jobs_result *r = run_text(
        "name: geo\n"
        "model: { name: resnet18, params: 11689512, flops_per_sample: 1.8e9 }\n"
        "dataset: { samples: 640, sample_bytes: 110KB }\n"
        "training: { epochs: 2, seed: 1 }\n"
        "policies: { ddp: { collective: flows } }\n"
        "server: { site: eu, nic: { up: 10Gbps, down: 10Gbps } }\n"
        "sites: [ { name: eu }, { name: us } ]\n"
        "wan:\n"
        "  - { between: [eu, us], latency: 40ms, trace: { file: ../traces/step-50-100Mbps.csv, loop: true } "
        "}\n"
        "devices:\n"
        "  - { name: eu-a100, count: 2, kind: gpu, site: eu, memory: 40GiB, batch: 64, batch_time: 60ms,\n"
        "      link: { up: 10Gbps, down: 10Gbps, latency: 1ms } }\n"
        "  - { name: us-v100, count: 2, kind: gpu, site: us, memory: 32GiB, batch: 64, batch_time: 90ms,\n"
        "      link: { up: 10Gbps, down: 10Gbps, latency: 1ms } }\n"
        "  - { name: us-t4, count: 2, kind: gpu, site: us, memory: 16GiB, batch: 32, batch_time: 110ms,\n"
        "      link: { up: 10Gbps, down: 10Gbps, latency: 1ms } }\n"
        "scheduler: static\n"
        "jobs:\n"
        "  - { name: eu-ddp, arrival: 0s, policy: ddp, groups: [eu-a100] }\n"
        "  - { name: us-asyncps, arrival: 0s, policy: asyncps, groups: [us-v100] }\n"
        "  - { name: us-localsgd, arrival: 5s, policy: localsgd, groups: [us-t4] }\n",
        NULL, &s, &js);
    double end[] = {1.0432582300301516, 227.27208255999986, 38.52988823679999};
    double bytes[] = {1169477056, 1940721920, 350948288};
    double tsend[] = {0.18919384603015077, 30.0485, 28.798499999999997};
    for (int j = 0; j < 3; j++) {
        cr_expect(fabs(r->jobs[j].end_s - end[j]) <= 1e-9 * end[j], "job %d ends %.17g, was %.17g", j,
                  r->jobs[j].end_s, end[j]);
        cr_expect(fabs(r->jobs[j].bytes - bytes[j]) <= 1e-9 * bytes[j], "job %d bytes %.17g, was %.17g", j,
                  r->jobs[j].bytes, bytes[j]);
        cr_expect(fabs(r->jobs[j].tsend_s - tsend[j]) <= 1e-9 * tsend[j], "job %d Tsend %.17g, was %.17g", j,
                  r->jobs[j].tsend_s, tsend[j]);
    }
    done(s, js, r);
}

/* ---- hand-derived schedules (pure compute: a job alone lasts epochs x
 * iterations seconds) ---- */

/* FIFO, 4 devices: A (2 devices, 10 s) at 0; B (4 devices, 5 s) at 1 waits
 * for A; C (2 devices, 3 s) at 2 fits beside A but waits behind B. */
Test(jobs, fifo_blocks_behind_the_head)
{
    scn_scenario *s;
    jobs_spec *js;
    jobs_result *r = run_text(
        world_text(
            DEV4,
            "scheduler: fifo\n"
            "jobs:\n"
            "  - { name: A, arrival: 0s, policy: pulse, devices: 2, set: { policies.pulse.iterations: 10 } "
            "}\n"
            "  - { name: B, arrival: 1s, policy: pulse, devices: 4, set: { policies.pulse.iterations: 5 } }\n"
            "  - { name: C, arrival: 2s, policy: pulse, devices: 2, set: { policies.pulse.iterations: 3 } "
            "}\n"),
        NULL, &s, &js);
    double start[] = {0, 10, 15}, end[] = {10, 15, 18};
    for (int j = 0; j < 3; j++) {
        expect_close(r->jobs[j].start_s, start[j]);
        expect_close(r->jobs[j].end_s, end[j]);
    }
    expect_close(r->jobs[1].queue_s, 9);
    expect_close(r->makespan_s, 18);
    expect_close(r->mean_jct_s, (10 + 14 + 16) / 3.0);
    expect_close(r->util_alloc, (2 * 10 + 4 * 5 + 2 * 3) / (4 * 18.0));
    /* Jain's index of alone/jct: 1, 5/14, 3/16 */
    double x[] = {1, 5 / 14.0, 3 / 16.0}, sx = x[0] + x[1] + x[2],
           sxx = x[0] * x[0] + x[1] * x[1] + x[2] * x[2];
    expect_close(r->jain, sx * sx / (3 * sxx));
    never_overlap(r);
    done(s, js, r);
}

/* With `train_to: progress`, a job with an `efficiency` counts its epochs
 * at its reference batch M0: it trains until its progress reaches
 * epochs x samples / M0, an epoch at global batch M adding
 * samples / M0 x (B + M0) / (B + M).  FIFO, 4 devices of batch 10, epochs
 * of 5 s: A (2 devices, M = 20; M0 10, B 10: 2/3 of an epoch's progress
 * each) needs 3 epochs for its 2: 15 s.  B (2 devices; B 10 in its first
 * epoch, 0 after: 2/3, then 1/2 each) needs 4 (2/3 + 1/2 + 1/2 = 5/3 < 2):
 * 20 s.  C (M = 10 = M0) runs its 2 after A.  Each one's time alone is for
 * the epochs it takes, and the table shows them.  By default (`train_to:
 * epochs`) each runs its 2 epochs: A and B end at 10, C at 20. */
Test(jobs, efficiency_counts_epochs_at_the_reference_batch)
{
    static const char *jobs = "jobs:\n"
                              "  - { name: A, arrival: 0s, policy: pulse, devices: 2,\n"
                              "      efficiency: { reference_batch: 10, noise_scale: 10 },\n"
                              "      set: { policies.pulse.iterations: 5, training.epochs: 2 } }\n"
                              "  - { name: B, arrival: 0s, policy: pulse, devices: 2,\n"
                              "      efficiency: { reference_batch: 10, noise_scale: [10, 0] },\n"
                              "      set: { policies.pulse.iterations: 5, training.epochs: 2 } }\n"
                              "  - { name: C, arrival: 1s, policy: pulse, devices: 1,\n"
                              "      efficiency: { reference_batch: 10, noise_scale: 10 },\n"
                              "      set: { policies.pulse.iterations: 5, training.epochs: 2 } }\n";
    static const double end[2][3] = {{10, 10, 20}, {15, 20, 25}};
    static const int epochs[2][3] = {{2, 2, 2}, {3, 4, 2}};
    for (int progress = 0; progress < 2; progress++) {
        char text[2048];
        snprintf(text, sizeof text, "scheduler: { name: fifo, train_to: %s }\n%s",
                 progress ? "progress" : "epochs", jobs);
        scn_scenario *s;
        jobs_spec *js;
        jobs_result *r = run_text(world_text(DEV4, text), NULL, &s, &js);
        for (int j = 0; j < 3; j++) {
            expect_close(r->jobs[j].end_s, end[progress][j]);
            cr_expect_eq(r->jobs[j].epochs, epochs[progress][j], "%d: job %d: %d epochs", progress, j,
                         r->jobs[j].epochs);
            expect_close(r->jobs[j].alone_s, 5 * epochs[progress][j]);
        }
        expect_close(r->jobs[2].start_s, 10 + 5 * progress); /* C waits for A's devices */
        never_overlap(r);
        done(s, js, r);
    }
}

/* The same jobs under LAS (no job reaches the threshold): the queue is in
 * arrival order but C goes ahead of B, which does not fit. */
Test(jobs, las_lets_a_job_that_fits_go_ahead)
{
    scn_scenario *s;
    jobs_spec *js;
    jobs_result *r = run_text(
        world_text(
            DEV4,
            "scheduler: las\n"
            "jobs:\n"
            "  - { name: A, arrival: 0s, policy: pulse, devices: 2, set: { policies.pulse.iterations: 10 } "
            "}\n"
            "  - { name: B, arrival: 1s, policy: pulse, devices: 4, set: { policies.pulse.iterations: 5 } }\n"
            "  - { name: C, arrival: 2s, policy: pulse, devices: 2, set: { policies.pulse.iterations: 3 } "
            "}\n"),
        NULL, &s, &js);
    double start[] = {0, 10, 2}, end[] = {10, 15, 5};
    for (int j = 0; j < 3; j++) {
        expect_close(r->jobs[j].start_s, start[j]);
        expect_close(r->jobs[j].end_s, end[j]);
    }
    never_overlap(r);
    done(s, js, r);
}

/* LAS with a threshold of 4 device-seconds, decisions every second, a
 * restart costing 0.5 s, 2 devices: A (2 epochs of 3 s) holds both from 0;
 * at 2 it has attained 4 and drops to the second queue, so B (2 s, arrived
 * at 1) pre-empts it (A had finished no epoch: its 2 s are lost).  B ends
 * at 4; A reloads until 4.5 and runs its 6 s: ends at 10.5. */
Test(jobs, las_preempts_past_the_threshold)
{
    scn_scenario *s;
    jobs_spec *js;
    jobs_result *r =
        run_text(world_text(DEV2, "scheduler: { name: las, threshold: 4s, interval: 1s, restart: 0.5s }\n"
                                  "jobs:\n"
                                  "  - { name: A, arrival: 0s, policy: pulse, devices: 2, set: { "
                                  "policies.pulse.iterations: 3, training.epochs: 2 } }\n"
                                  "  - { name: B, arrival: 1s, policy: pulse, devices: 2, set: { "
                                  "policies.pulse.iterations: 2 } }\n"),
                 NULL, &s, &js);
    expect_close(r->jobs[0].start_s, 0);
    expect_close(r->jobs[0].end_s, 10.5);
    cr_expect_eq(r->jobs[0].preemptions, 1);
    expect_close(r->jobs[0].device_s, 2 * 2 + 2 * 6.5);
    expect_close(r->jobs[1].start_s, 2);
    expect_close(r->jobs[1].end_s, 4);
    expect_close(r->jobs[1].queue_s, 1);
    expect_close(r->jobs[0].rho, 10.5 / 6);
    never_overlap(r);
    done(s, js, r);
}

/* SRF, 2 devices, restart 1 s: A (10 s) from 0; B (3 s) at 1 has less left,
 * pre-empts A and ends at 4; A restarts at 5 from scratch (no epoch done)
 * and ends at 15. */
Test(jobs, srf_preempts_for_a_shorter_job)
{
    scn_scenario *s;
    jobs_spec *js;
    jobs_result *r = run_text(world_text(DEV2, "scheduler: { name: srf, restart: 1s }\n"
                                               "jobs:\n"
                                               "  - { name: A, arrival: 0s, policy: pulse, devices: 2, set: "
                                               "{ policies.pulse.iterations: 10 } }\n"
                                               "  - { name: B, arrival: 1s, policy: pulse, devices: 2, set: "
                                               "{ policies.pulse.iterations: 3 } }\n"),
                              NULL, &s, &js);
    expect_close(r->jobs[0].alone_s, 10);
    expect_close(r->jobs[1].alone_s, 3);
    expect_close(r->jobs[0].end_s, 15);
    expect_close(r->jobs[1].start_s, 1);
    expect_close(r->jobs[1].end_s, 4);
    cr_expect_eq(r->jobs[0].preemptions, 1);
    expect_close(r->jobs[0].wait_s, 15 - (1 + 11));
    never_overlap(r);
    done(s, js, r);
}

/* Themis, 2 devices, decisions every 0.75 s, restart 0.25 s: A (4 epochs of
 * 1 s) from 0; B (1 s) arrives at 1.2: rho_A = (1.2 + 3) / 4 = 1.05 > 1 =
 * rho_B, A keeps.  At 1.5 rho_B = 1.3 > rho_A = 1.125: B pre-empts A (1
 * epoch kept), ends at 2.5 (at 2.25 rho_B = 2.05 > rho_A = 1.3125).  A
 * reloads until 2.75 and runs its 3 epochs left: ends at 5.75. */
Test(jobs, themis_serves_the_highest_rho)
{
    scn_scenario *s;
    jobs_spec *js;
    jobs_result *r =
        run_text(world_text(DEV2, "scheduler: { name: themis, interval: 0.75s, restart: 0.25s }\n"
                                  "jobs:\n"
                                  "  - { name: A, arrival: 0s, policy: pulse, devices: 2, set: { "
                                  "policies.pulse.iterations: 1, training.epochs: 4 } }\n"
                                  "  - { name: B, arrival: 1.2s, policy: pulse, devices: 2, set: { "
                                  "policies.pulse.iterations: 1 } }\n"),
                 NULL, &s, &js);
    expect_close(r->jobs[0].end_s, 5.75);
    cr_expect_eq(r->jobs[0].preemptions, 1);
    expect_close(r->jobs[1].start_s, 1.5);
    expect_close(r->jobs[1].end_s, 2.5);
    expect_close(r->jobs[1].rho, 1.3);
    expect_close(r->jobs[0].rho, 5.75 / 4);
    never_overlap(r);
    done(s, js, r);
}

/* Static partition: each job on its groups from its arrival; B's devices
 * are g2 whatever the order. */
Test(jobs, static_runs_each_job_on_its_part)
{
    scn_scenario *s;
    jobs_spec *js;
    jobs_result *r =
        run_text(world_text("  - { name: g1, count: 2, kind: gpu, memory: 1GiB, batch: 10, batch_time: 1s,\n"
                            "      link: { up: 800Mbps, down: 800Mbps } }\n"
                            "  - { name: g2, count: 1, kind: gpu, memory: 1GiB, batch: 10, batch_time: 1s,\n"
                            "      link: { up: 800Mbps, down: 800Mbps } }\n",
                            "scheduler: static\n"
                            "jobs:\n"
                            "  - { name: A, arrival: 0s, policy: pulse, groups: [g1], set: { "
                            "policies.pulse.iterations: 3 } }\n"
                            "  - { name: B, arrival: 1s, policy: pulse, groups: [g2], set: { "
                            "policies.pulse.iterations: 2 } }\n"),
                 NULL, &s, &js);
    expect_close(r->jobs[0].end_s, 3);
    expect_close(r->jobs[1].start_s, 1);
    expect_close(r->jobs[1].end_s, 3);
    cr_expect_eq(r->n_allocs, 3);
    for (size_t k = 0; k < r->n_allocs; k++)
        cr_expect_eq(r->allocs[k].device, r->allocs[k].job == 0 ? (size_t)(k < 2 ? k : 9) : 2u);
    done(s, js, r);
}

/* Every scheduler on the example scenario: no device is ever held twice. */
Test(jobs, jobs_on_the_same_devices_never_overlap)
{
    registered();
    dp_err e = {0};
    scn_scenario *s = scn_load_file("../scenarios/jobs-fifo.yaml", NULL, 0, &e);
    cr_assert(s, "%s", e.msg);
    jobs_spec *js = jobs_load(s, &e);
    cr_assert(js, "%s", e.msg);
    const char *names[] = {"fifo", "srf", "las", "themis"};
    for (int k = 0; k < 4; k++) {
        jobs_result *r = jobs_run(js, sched_find(names[k]), 1, &e);
        cr_assert(r, "%s: %s", names[k], e.msg);
        never_overlap(r);
        jobs_result *r2 = jobs_run(js, sched_find(names[k]), 1, &e);
        cr_assert(r2);
        for (size_t j = 0; j < r->n_jobs; j++) /* deterministic */
            cr_expect_eq(r->jobs[j].end_s, r2->jobs[j].end_s);
        jobs_result_free(r);
        jobs_result_free(r2);
    }
    jobs_free(js);
    scn_free(s);
}

/* Every application of the Pollux workloads carries Pollux's measured
 * gradient statistics at its initial batch (traces/pollux/, built in): a
 * trace job's efficiency is its application's.  cifar10's first row
 * (grad_sqr 8.947307535897329, grad_var 5.066593295150894 at batch 128)
 * gives B = 128 x var / sqr at progress 0. */
Test(jobs, trace_jobs_carry_their_applications_efficiency)
{
    registered();
    const int init[] = {128, 200, 256, 20, 8, 12};
    cr_assert_eq(jobs_app_count(), 6);
    for (size_t a = 0; a < jobs_app_count(); a++) {
        size_t len = 0;
        const char *t = jobs_app_trace(a, &len);
        cr_assert(t && len > 0);
        cr_expect_eq(jobs_app_at(a)->init_batch, init[a], "%s", jobs_app_at(a)->app);
        eff_params *p = eff_params_new(jobs_app_at(a)->init_batch, 0);
        dp_err e = {0};
        cr_expect_eq(eff_params_parse_pollux(p, jobs_app_at(a)->app, t, len, 0, &e), 0, "%s", e.msg);
        cr_expect(eff_noise_at(p, 0, 1) > 0, "%s", jobs_app_at(a)->app);
        eff_params_free(p);
    }
}

/* ---- weights ---- */

/* SRF orders by remaining / weight: the SRF schedule above with B's weight
 * 0.25 (3 / 0.25 = 12 > 10): A keeps its devices, B waits for it and runs
 * from 10 to 13. */
Test(jobs, srf_divides_remaining_by_weight)
{
    scn_scenario *s;
    jobs_spec *js;
    jobs_result *r = run_text(world_text(DEV2, "scheduler: { name: srf, restart: 1s }\n"
                                               "jobs:\n"
                                               "  - { name: A, arrival: 0s, policy: pulse, devices: 2, set: "
                                               "{ policies.pulse.iterations: 10 } }\n"
                                               "  - { name: B, arrival: 1s, policy: pulse, devices: 2, "
                                               "weight: 0.25, set: { policies.pulse.iterations: 3 } }\n"),
                              NULL, &s, &js);
    expect_close(r->jobs[0].end_s, 10);
    cr_expect_eq(r->jobs[0].preemptions, 0);
    expect_close(r->jobs[1].start_s, 10);
    expect_close(r->jobs[1].end_s, 13);
    never_overlap(r);
    done(s, js, r);
}

/* FIFO breaks a tie of arrival on the higher weight: B (weight 2) goes
 * before A although A is listed first. */
Test(jobs, fifo_ties_go_to_the_higher_weight)
{
    scn_scenario *s;
    jobs_spec *js;
    jobs_result *r = run_text(
        world_text(
            DEV2,
            "scheduler: fifo\n"
            "jobs:\n"
            "  - { name: A, arrival: 1s, policy: pulse, devices: 2, set: { policies.pulse.iterations: 4 } }\n"
            "  - { name: B, arrival: 1s, policy: pulse, devices: 2, weight: 2, set: { "
            "policies.pulse.iterations: 3 } }\n"),
        NULL, &s, &js);
    expect_close(r->jobs[1].start_s, 1);
    expect_close(r->jobs[1].end_s, 4);
    expect_close(r->jobs[0].start_s, 4);
    expect_close(r->jobs[0].end_s, 8);
    done(s, js, r);
}

/* ---- pollux ---- */

/* The weighted power mean (p = -1) of the speedups of an allocation, as
 * the test computes it (0 when a served job gets no device). */
static double power_mean(const sched_job *v, size_t m, const int *k, const int *fair, double restart)
{
    double sw = 0, inv = 0;
    for (size_t i = 0; i < m; i++) {
        double sp = sched_pollux_speedup(&v[i], k[i], fair[i], restart);
        if (!(sp > 0))
            return 0;
        sw += v[i].weight;
        inv += v[i].weight / sp;
    }
    return sw / inv;
}

/* Three elastic jobs on 6 devices, one with a statistical efficiency: the
 * allocation pollux returns is the best of all allocations by brute force,
 * and the hand-derived one. */
Test(jobs, pollux_allocation_is_the_best_power_mean)
{
    /* alone on k devices: A 12/k (perfect scaling), B 2 + 6/k (a part that
     * does not shrink), C 12/k with B_noise 64, M0 32, batch 32 per device:
     * efficiency(k) = (64 + 32) / (64 + 32 k) */
    double aA[7], aB[7], aC[7], bk[7];
    for (int k = 0; k <= 6; k++) {
        aA[k] = k ? 12.0 / k : NAN;
        aB[k] = k ? 2 + 6.0 / k : NAN;
        aC[k] = k ? 12.0 / k : NAN;
        bk[k] = 32.0 * k;
    }
    sched_job v[3] = {
        {.id = 0,
         .arrival_s = 0,
         .want = 2,
         .weight = 1,
         .epochs = 1,
         .min_dev = 1,
         .max_dev = 6,
         .alone_k = aA,
         .batch_k = bk},
        {.id = 1,
         .arrival_s = 1,
         .want = 2,
         .weight = 1,
         .epochs = 1,
         .min_dev = 1,
         .max_dev = 6,
         .alone_k = aB,
         .batch_k = bk},
        {.id = 2,
         .arrival_s = 2,
         .want = 2,
         .weight = 1,
         .epochs = 1,
         .min_dev = 1,
         .max_dev = 6,
         .alone_k = aC,
         .batch_k = bk,
         .ref_batch = 32,
         .noise_scale = 64},
    };
    sched_opts o = {.restart_s = 0};
    sched_ctx c = {10, 6, &o};
    const sched_def *px = sched_find("pollux");
    cr_assert(px && px->allocate);
    for (int weighted = 0; weighted < 2; weighted++) {
        v[2].weight = weighted ? 4 : 1;
        int count[3], fair[3], best[3] = {0, 0, 0};
        px->allocate(&c, v, 3, count);
        for (int i = 0; i < 3; i++) {
            fair[i] = sched_pollux_fair(&v[i], 6, 3);
            cr_expect_eq(fair[i], 2);
        }
        double bm = -1;
        for (int a = 0; a <= 6; a++)
            for (int b = 0; a + b <= 6; b++)
                for (int q = 0; a + b + q <= 6; q++) {
                    int k[3] = {a, b, q};
                    double pm = power_mean(v, 3, k, fair, 0);
                    if (pm > bm + 1e-12) {
                        bm = pm;
                        memcpy(best, k, sizeof best);
                    }
                }
        cr_expect_eq(count[0], best[0], "weighted %d: A %d, brute force %d", weighted, count[0], best[0]);
        cr_expect_eq(count[1], best[1], "weighted %d: B %d, brute force %d", weighted, count[1], best[1]);
        cr_expect_eq(count[2], best[2], "weighted %d: C %d, brute force %d", weighted, count[2], best[2]);
        expect_close(power_mean(v, 3, count, fair, 0), bm);
        /* by hand: speedups over the fair share 2 are A k/2, B 5k / (2k + 6),
         * C 2k / (2 + k), so w / s is A 2/k (2, 1, 2/3, 1/2 for k = 1..4), B
         * 1.6, 1, 0.8, 0.7, C w (2 + k) / 2k (w x 1.5, 1, 5/6, 3/4).  Every
         * device helps, so the counts sum to 6: unweighted (2, 2, 2) sums to 3
         * (the next, (3, 2, 1), 3.1667): power mean 1.  With C's weight 4,
         * (2, 1, 3) sums to 1 + 1.6 + 10/3 = 5.9333 (the next, (2, 2, 2), 6):
         * power mean 6 / 5.9333. */
        int want[2][3] = {{2, 2, 2}, {2, 1, 3}};
        for (int i = 0; i < 3; i++)
            cr_expect_eq(count[i], want[weighted][i]);
        expect_close(power_mean(v, 3, count, fair, 0), weighted ? 6 / (1 + 1.6 + 10 / 3.0) : 1);
    }
}

/* A hand-derived elastic schedule, 4 devices, restart 0.5 s.  A (2 epochs
 * of 12 batches shared by its devices: 24 / k s alone on k) arrives at 0
 * alone: its fair share is 4, the most it may take, and it takes 4 (epoch
 * 1 ends at 3).  B (1 epoch of 12: 12 / k) arrives at 4; fair shares 2.
 * Costs w / s: B 2 / k (not yet run: no charge); A, 1 s into epoch 2, k / 2
 * scaled for k != 4 by R / (R + 0.5 + 1), R = 12 / k its epoch left alone:
 * k = 1 2.25, 2 1.25, 3 0.9167, 4 0.5.  (1, 3) 2.9167, (2, 2) 2.25, (3, 1)
 * 2.9167: A is re-allocated to 2 devices (its epoch 2 lost), loads until
 * 4.5 and runs its 6 s: ends 10.5; B runs 4 to 10 on 2.  At 10 A (5.5 s
 * into its epoch, R = 6 / k... on 4: 3 / (3 + 6) scaling, cost 3) keeps 2
 * (cost 2).  With B's weight 4 (costs 8 / k): (1, 3) 4.9167 beats (2, 2)
 * 5.25: B runs 4 to 8 on 3; at 8 A alone (on 1 since 4.5, 3.5 s into its
 * epoch) moves to 4 (cost 1 x 7/3 = 2.33 against 4 on 1, 3.33 on 2, 2.67 on
 * 3): loads until 8.5, ends 11.5. */
Test(jobs, pollux_hand_schedule)
{
    for (int weighted = 0; weighted < 2; weighted++) {
        char jobs[1024];
        snprintf(jobs, sizeof jobs,
                 "scheduler: { name: pollux, restart: 0.5s }\n"
                 "jobs:\n"
                 "  - { name: A, arrival: 0s, policy: pulse, devices: 4, min_devices: 1, max_devices: 4,\n"
                 "      set: { policies.pulse.work: 12, training.epochs: 2 } }\n"
                 "  - { name: B, arrival: 4s, policy: pulse, devices: 2, max_devices: 4, weight: %d,\n"
                 "      set: { policies.pulse.work: 12 } }\n",
                 weighted ? 4 : 1);
        scn_scenario *s;
        jobs_spec *js;
        jobs_result *r = run_text(world_text(DEV4, jobs), NULL, &s, &js);
        expect_close(r->jobs[0].alone_s, 6);
        expect_close(r->jobs[1].alone_s, 6);
        expect_close(r->jobs[0].start_s, 0);
        expect_close(r->jobs[1].start_s, 4);
        if (!weighted) {
            expect_close(r->jobs[0].end_s, 10.5);
            expect_close(r->jobs[1].end_s, 10);
            cr_expect_eq(r->jobs[0].preemptions, 1);
            expect_close(r->jobs[0].device_s, 4 * 4 + 2 * 6.5);
            expect_close(r->jobs[1].device_s, 2 * 6);
        } else {
            expect_close(r->jobs[0].end_s, 11.5);
            expect_close(r->jobs[1].end_s, 8);
            cr_expect_eq(r->jobs[0].preemptions, 2);
            expect_close(r->jobs[0].device_s, 4 * 4 + 1 * 4 + 4 * 3.5);
            expect_close(r->jobs[1].device_s, 3 * 4);
        }
        never_overlap(r);
        done(s, js, r);
    }
}
