/* Steady-state fast-forward (docs/MODEL.md "Steady state", runtime.c
 * "epoch boundaries"): the engine's exact rebase, and runs with and without
 * the fast-forward compared bit for bit: every scalar, every device row,
 * every epoch end, every FLOPS bin, every timeline segment, every statistic
 * but fast_forward itself.  Worlds that are not periodic (noise, traces),
 * policies without the hook (C-ADP, ZeRO-3) and epochs that use the network
 * (flow collectives) must not fast-forward. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "policy/policy.h"
#include "policy/runtime.h"

/* ---- the engine's rebase -------------------------------------------------- */

static double fired_t[8];
static int fired_k[8], n_fired;

static void rec(sim_engine *e, void *ctx, uint64_t id)
{
    (void)id;
    fired_t[n_fired] = sim_now(e);
    fired_k[n_fired++] = (int)(intptr_t)ctx;
}

static void noop(sim_engine *e, void *ctx, uint64_t id)
{
    (void)e;
    (void)ctx;
    (void)id;
}

Test(ff, rebase_refused_when_an_event_is_later)
{
    sim_engine *e = sim_engine_new(NULL);
    cr_assert(e);
    sim_at(e, 1.5, noop, NULL);
    cr_assert(sim_step(e));
    sim_at(e, 1.5, noop, NULL);
    sim_at(e, 2.0, noop, NULL);
    cr_expect_eq(sim_rebase(e), DP_EINPUT);
    cr_expect_eq(sim_now(e), 1.5, "a refused rebase changes nothing");
    cr_expect_eq(sim_pending(e), 2);
    cr_expect_eq(sim_next_time(e), 1.5);
    sim_engine_free(e);
}

/* Events at now keep their order and fire at 0; cancelled later ones are
 * dropped, not counted as later; the clock goes on from 0. */
Test(ff, rebase_is_exact_and_keeps_order)
{
    sim_engine *e = sim_engine_new(NULL);
    cr_assert(e);
    n_fired = 0;
    sim_at(e, 0.1 + 0.2, noop, NULL);
    cr_assert(sim_step(e));
    double now = sim_now(e);
    uint64_t late = sim_at(e, 7.0, rec, (void *)(intptr_t)9);
    for (int k = 0; k < 3; k++)
        sim_at(e, now, rec, (void *)(intptr_t)k);
    cr_assert(sim_cancel(e, late));
    cr_assert_eq(sim_rebase(e), 0);
    cr_expect_eq(sim_now(e), 0.0);
    cr_expect_eq(sim_pending(e), 3);
    sim_at(e, 0.25, rec, (void *)(intptr_t)3);
    while (sim_step(e))
        ;
    cr_assert_eq(n_fired, 4);
    for (int k = 0; k < 3; k++) {
        cr_expect_eq(fired_k[k], k);
        cr_expect_eq(fired_t[k], 0.0);
    }
    cr_expect_eq(fired_k[3], 3);
    cr_expect_eq(fired_t[3], 0.25);
    sim_engine_free(e);
}

/* A rebase from inside a handler, with the queue empty otherwise: what
 * the runtime does at an epoch boundary. */
static void rebase_now(sim_engine *e, void *ctx, uint64_t id)
{
    (void)id;
    *(int *)ctx = sim_rebase(e);
}

Test(ff, rebase_inside_a_handler)
{
    sim_engine *e = sim_engine_new(NULL);
    cr_assert(e);
    int rc = -1;
    sim_at(e, 3.0, rebase_now, &rc);
    cr_assert(sim_step(e));
    cr_expect_eq(rc, 0);
    cr_expect_eq(sim_now(e), 0.0);
    n_fired = 0;
    sim_at(e, 1.0, rec, (void *)(intptr_t)1);
    cr_assert(sim_step(e));
    cr_expect_eq(fired_t[0], 1.0);
    sim_engine_free(e);
}

/* ---- full vs fast-forwarded runs ------------------------------------------ */

static scn_scenario *load(const char *file, const scn_override *ov, size_t n)
{
    char path[4096];
    const char *src = getenv("DPSIM_SRC");
    cr_assert(src, "DPSIM_SRC is not set (run through meson test)");
    snprintf(path, sizeof path, "%s/scenarios/%s", src, file);
    dp_err err = {0};
    scn_scenario *s = scn_load_file(path, ov, n, &err);
    cr_assert(s, "%s", err.msg);
    return s;
}

static res_run *run(const char *policy, const scn_scenario *s, int ff)
{
    dp_err err = {0};
    policy_set_fast_forward(ff);
    res_run *r = policy_run(policy_find(policy), s, s->training.seed, &err);
    policy_set_fast_forward(1);
    cr_assert(r, "%s: %s", policy, err.msg);
    return r;
}

static const res_stat *find_stat(const res_run *r, const char *name)
{
    for (size_t k = 0; k < r->n_stats; k++)
        if (!strcmp(r->stats[k].name, name))
            return &r->stats[k];
    return NULL;
}

#define SAME_BITS(a, b, what)                                                                                \
    cr_expect(memcmp(&(a), &(b), sizeof(a)) == 0, "%s: %s differs: %.17g vs %.17g", tag, what, (double)(a),  \
              (double)(b))

/* Every stored figure of two runs, bit for bit (wall_s aside: host time).
 * `ff_vs_full`: b's fast_forward statistic is not a's, else the event count
 * is not compared, the FLOPS bins agree to 1e-12 and the timelines are
 * compared as intervals (adjacent segments of one activity merged, whatever
 * their order). */
static void expect_same_events(const res_run *a, const res_run *b, const char *tag, int ff_vs_full);

static void expect_same(const res_run *a, const res_run *b, const char *tag)
{
    expect_same_events(a, b, tag, 1);
}

static int by_dev_t0(const void *x, const void *y)
{
    const res_segment *a = x, *b = y;
    if (a->device != b->device)
        return a->device < b->device ? -1 : 1;
    return a->t0_s < b->t0_s ? -1 : a->t0_s > b->t0_s;
}

/* r's segments per device in time order, runs of one activity that touch
 * merged into one; *n gets the count. */
static res_segment *intervals(const res_run *r, size_t *n)
{
    res_segment *v = malloc((r->n_segments + 1) * sizeof *v);
    cr_assert(v);
    memcpy(v, r->segments, r->n_segments * sizeof *v);
    qsort(v, r->n_segments, sizeof *v, by_dev_t0);
    size_t m = 0;
    for (size_t k = 0; k < r->n_segments; k++) {
        if (m && v[m - 1].device == v[k].device && v[m - 1].act == v[k].act && v[m - 1].t1_s == v[k].t0_s)
            v[m - 1].t1_s = v[k].t1_s;
        else
            v[m++] = v[k];
    }
    *n = m;
    return v;
}

static void expect_same_intervals(const res_run *a, const res_run *b, const char *tag)
{
    size_t na, nb;
    res_segment *x = intervals(a, &na), *y = intervals(b, &nb);
    cr_expect_eq(na, nb, "%s: %zu vs %zu intervals", tag, na, nb);
    for (size_t k = 0; k < na && k < nb; k++) {
        cr_expect(x[k].device == y[k].device && x[k].act == y[k].act, "%s: interval %zu", tag, k);
        SAME_BITS(x[k].t0_s, y[k].t0_s, "interval start");
        SAME_BITS(x[k].t1_s, y[k].t1_s, "interval end");
    }
    free(x);
    free(y);
}

static void expect_same_events(const res_run *a, const res_run *b, const char *tag, int ff_vs_full)
{
    SAME_BITS(a->tsend_s, b->tsend_s, "tsend_s");
    SAME_BITS(a->ttraining_s, b->ttraining_s, "ttraining_s");
    SAME_BITS(a->ttotal_s, b->ttotal_s, "ttotal_s");
    SAME_BITS(a->tflops, b->tflops, "tflops");
    SAME_BITS(a->utilization, b->utilization, "utilization");
    SAME_BITS(a->samples_processed, b->samples_processed, "samples_processed");
    SAME_BITS(a->bytes_total, b->bytes_total, "bytes_total");
    cr_expect(!ff_vs_full || a->events == b->events, "%s: events %llu vs %llu", tag,
              (unsigned long long)a->events, (unsigned long long)b->events);
    cr_assert_eq(a->n_devices, b->n_devices);
    for (size_t d = 0; d < a->n_devices; d++) {
        const res_device *x = &a->devices[d], *y = &b->devices[d];
        cr_expect_eq(x->samples, y->samples);
        cr_expect_eq(x->batches, y->batches, "%s: device %zu batches", tag, d);
        SAME_BITS(x->compute_s, y->compute_s, "compute_s");
        SAME_BITS(x->send_s, y->send_s, "send_s");
        SAME_BITS(x->recv_s, y->recv_s, "recv_s");
        SAME_BITS(x->wait_s, y->wait_s, "wait_s");
        SAME_BITS(x->bytes_sent, y->bytes_sent, "bytes_sent");
        SAME_BITS(x->bytes_recv, y->bytes_recv, "bytes_recv");
        SAME_BITS(x->data_ready_s, y->data_ready_s, "data_ready_s");
    }
    cr_assert_eq(a->n_epochs, b->n_epochs, "%s: epochs", tag);
    for (size_t k = 0; k < a->n_epochs; k++) {
        cr_expect_eq(a->epochs[k].epoch, b->epochs[k].epoch);
        SAME_BITS(a->epochs[k].end_s, b->epochs[k].end_s, "epoch end");
    }
    SAME_BITS(a->bin_s, b->bin_s, "bin_s");
    cr_assert_eq(a->n_bins, b->n_bins, "%s: FLOPS bins", tag);
    for (size_t k = 0; k < a->n_bins; k++)
        if (ff_vs_full)
            SAME_BITS(a->flops_bins[k], b->flops_bins[k], "FLOPS bin");
        else /* a bin adds its devices' batches in event order: the last bits move */
            cr_expect(fabs(a->flops_bins[k] - b->flops_bins[k]) <= 1e-12 * fabs(a->flops_bins[k]),
                      "%s: FLOPS bin %zu: %.17g vs %.17g", tag, k, a->flops_bins[k], b->flops_bins[k]);
    SAME_BITS(a->timeline_res_s, b->timeline_res_s, "timeline_res_s");
    if (!ff_vs_full) {
        expect_same_intervals(a, b, tag);
        goto stats;
    }
    cr_assert_eq(a->n_segments, b->n_segments, "%s: %zu vs %zu segments", tag, a->n_segments, b->n_segments);
    for (size_t k = 0; k < a->n_segments; k++) {
        const res_segment *x = &a->segments[k], *y = &b->segments[k];
        cr_expect(x->device == y->device && x->act == y->act, "%s: segment %zu", tag, k);
        SAME_BITS(x->t0_s, y->t0_s, "segment start");
        SAME_BITS(x->t1_s, y->t1_s, "segment end");
    }
stats:;
    size_t nb = 0;
    for (size_t k = 0; k < b->n_stats; k++)
        if (!ff_vs_full || strcmp(b->stats[k].name, "fast_forward") != 0) {
            const res_stat *x = nb < a->n_stats ? &a->stats[nb] : NULL;
            cr_expect(x && !strcmp(x->name, b->stats[k].name) && x->a == b->stats[k].a &&
                          x->b == b->stats[k].b &&
                          memcmp(&x->value, &b->stats[k].value, sizeof x->value) == 0,
                      "%s: statistic %s", tag, b->stats[k].name);
            nb++;
        }
    cr_expect_eq(nb, a->n_stats, "%s: statistics", tag);
}

/* Run both ways; returns the fast_forward statistic's first epoch (0:
 * none) after checking the results are the same bits. */
static int compare(const char *file, const char *policy, const scn_override *ov, size_t n)
{
    scn_scenario *s = load(file, ov, n);
    res_run *full = run(policy, s, 0), *ff = run(policy, s, 1);
    char tag[128];
    snprintf(tag, sizeof tag, "%s %s", file, policy);
    cr_expect_null(find_stat(full, "fast_forward"), "%s: fast-forwarded with it off", tag);
    expect_same(full, ff, tag);
    const res_stat *st = find_stat(ff, "fast_forward");
    int first = 0;
    if (st) {
        cr_expect_eq(st->b, s->training.epochs, "%s: fast-forwards to the last epoch", tag);
        cr_expect_eq(st->value, (double)(st->b - st->a + 1));
        first = (int)st->a;
    }
    res_run_free(full);
    res_run_free(ff);
    scn_free(s);
    return first;
}

Test(ff, tiny_ddp_analytic)
{
    scn_override ov[] = {{"training.epochs", "9"}, {"policies.ddp.collective", "analytic"}};
    /* epochs 2 and 3 are journaled whole and equal; 4-9 are replayed */
    cr_expect_eq(compare("tiny.yaml", "ddp", ov, 2), 4);
}

Test(ff, tiny_deepspeed_stages_1_and_2)
{
    scn_override ov[] = {{"training.epochs", "7"},
                         {"policies.deepspeed.collective", "analytic"},
                         {"policies.deepspeed.stage", "1"},
                         {"policies.deepspeed.grad_accum", "3"}};
    cr_expect_eq(compare("tiny.yaml", "deepspeed", ov, 4), 4);
    ov[2].value = "2";
    cr_expect_eq(compare("tiny.yaml", "deepspeed", ov, 4), 4);
}

/* The paper's testbed, shortened (the full one: tests/e2e_ff.sh). */
Test(ff, paper_testbed_ddp_and_deepspeed)
{
    scn_override ov[] = {{"training.epochs", "6"}, {"dataset.samples", "4000"}};
    cr_expect_eq(compare("paper-testbed.yaml", "ddp", ov, 2), 4);
    cr_expect_eq(compare("paper-testbed.yaml", "deepspeed", ov, 2), 4);
}

/* ZeRO stage 3: its step loop's state joins sync.c's in the state check;
 * overlap on and off, analytic and flows. */
Test(ff, zero_stage_3)
{
    scn_override ov[] = {{"training.epochs", "7"},
                         {"policies.deepspeed.stage", "3"},
                         {"policies.deepspeed.overlap_comm", "on"},
                         {"policies.deepspeed.collective", "analytic"}};
    cr_expect_eq(compare("tiny.yaml", "deepspeed", ov, 4), 4);
    ov[2].value = "off";
    cr_expect_eq(compare("tiny.yaml", "deepspeed", ov, 4), 4);
    ov[3].value = "flows";
    cr_expect_eq(compare("tiny.yaml", "deepspeed", ov, 4), 4);
    scn_override pt[] = {
        {"training.epochs", "6"}, {"dataset.samples", "4000"}, {"policies.deepspeed.stage", "3"}};
    cr_expect_eq(compare("paper-testbed.yaml", "deepspeed", pt, 3), 4);
}

/* C-ADP: each epoch's model uploads and downloads are flows through the
 * server's NIC; with the link totals folded per epoch and the server bytes
 * journaled, its epochs repeat too. */
Test(ff, cadp)
{
    scn_override ov[] = {{"training.epochs", "9"}};
    cr_expect_eq(compare("tiny.yaml", "cadp", ov, 1), 4);
    scn_override pt[] = {{"training.epochs", "7"}, {"dataset.samples", "4000"}};
    cr_expect_eq(compare("paper-testbed.yaml", "cadp", pt, 2), 4);
    scn_override alm[] = {{"training.epochs", "5"}, {"policies.cadp.solver", "alm"}};
    cr_expect_eq(compare("paper-testbed.yaml", "cadp", alm, 2), 4);
}

/* Collectives as flows: the network's per-link bytes and busy seconds are
 * folded at each clean boundary too (net_fold), so an epoch whose journal,
 * state and link subtotals repeat is replayed, links included: rings in
 * closed form, with a device interconnect, and every round as real flows. */
Test(ff, flows_fast_forward_with_their_links)
{
    scn_override ov[] = {{"training.epochs", "5"}};
    cr_expect_eq(compare("tiny.yaml", "ddp", ov, 1), 4);
    scn_override ic[] = {{"training.epochs", "6"}, {"interconnect.bandwidth", "1Gbps"}};
    cr_expect_eq(compare("tiny.yaml", "ddp", ic, 2), 4);
    cr_expect_eq(compare("tiny.yaml", "deepspeed", ic, 2), 4);
    coll_set_per_flow(1);
    cr_expect_eq(compare("tiny.yaml", "ddp", ov, 1), 4);
    coll_set_per_flow(0);
    scn_override pt[] = {
        {"training.epochs", "6"}, {"dataset.samples", "4000"}, {"policies.ddp.collective", "flows"}};
    cr_expect_eq(compare("paper-testbed.yaml", "ddp", pt, 3), 4);
}

/* C-ADP's local epochs: a device whose batch times are fixed computes all
 * of its batches in one event, with each batch's end, records and FLOPS
 * those of its own event; with noise, stragglers or a speed trace a device
 * goes batch by batch.  Every figure but the event count is the same bits
 * as one event per batch (DPSIM_COMPUTE_PER_BATCH), with and without the
 * fast-forward, in worlds that mix both kinds of device. */
static void compare_folding(const char *file, const scn_override *ov, size_t n, int ff, int folds)
{
    scn_scenario *s = load(file, ov, n);
    prt_set_compute_per_batch(1);
    res_run *per = run("cadp", s, ff);
    prt_set_compute_per_batch(0);
    res_run *fold = run("cadp", s, ff);
    char tag[160];
    snprintf(tag, sizeof tag, "%s cadp%s, per batch vs folded", file, ff ? " (fast-forward)" : "");
    expect_same_events(per, fold, tag, 0);
    cr_expect(!folds || fold->events < per->events, "%s: %llu events folded vs %llu", tag,
              (unsigned long long)fold->events, (unsigned long long)per->events);
    res_run_free(per);
    res_run_free(fold);
    scn_free(s);
}

Test(ff, cadp_local_epochs_in_one_event)
{
    scn_override ep[] = {{"training.epochs", "6"}};
    compare_folding("tiny.yaml", ep, 1, 0, 1);
    compare_folding("tiny.yaml", ep, 1, 1, 1);
    scn_override pt[] = {{"training.epochs", "5"}, {"dataset.samples", "4000"}};
    compare_folding("paper-testbed.yaml", pt, 2, 1, 1);
    compare_folding("geo-3sites.yaml", NULL, 0, 1, 1);
    compare_folding("stragglers.yaml", NULL, 0, 1, 1);
    compare_folding("population.yaml", NULL, 0, 1, 1);
    /* noise on the GPUs (the CPU has one batch an epoch: nothing to fold) */
    scn_override noisy[] = {{"training.epochs", "3"}, {"devices.gpu.noise", "0.05"}};
    compare_folding("tiny.yaml", noisy, 2, 0, 0);
    scn_override lr[] = {{"training.epochs", "3"}, {"policies.cadp.rounding", "largest_remainder"}};
    compare_folding("tiny.yaml", lr, 2, 1, 1);
}

Test(ff, noise_traces_and_other_policies_never_fast_forward)
{
    scn_override noisy[] = {
        {"training.epochs", "6"}, {"policies.ddp.collective", "analytic"}, {"devices.gpu.noise", "0.05"}};
    cr_expect_eq(compare("tiny.yaml", "ddp", noisy, 3), 0);
    scn_override geo[] = {{"training.epochs", "4"}, {"policies.ddp.collective", "analytic"}};
    cr_expect_eq(compare("geo-3sites.yaml", "ddp", geo, 2), 0); /* WAN and link traces, noise */
    scn_override lb[] = {{"training.epochs", "6"}, {"policies.lbbsp.collective", "analytic"}};
    cr_expect_eq(compare("tiny.yaml", "lbbsp", lb, 2), 0); /* a balancer re-splits as it goes */
    scn_override cadp[] = {{"training.epochs", "6"}, {"devices.gpu.noise", "0.05"}};
    cr_expect_eq(compare("tiny.yaml", "cadp", cadp, 2), 0);
}

/* The shortest runs: epoch 4 alone replayed; 3 epochs, none. */
Test(ff, fewest_epochs)
{
    scn_override ov[] = {{"training.epochs", "4"}, {"policies.ddp.collective", "analytic"}};
    cr_expect_eq(compare("tiny.yaml", "ddp", ov, 2), 4);
    ov[0].value = "3";
    cr_expect_eq(compare("tiny.yaml", "ddp", ov, 2), 0);
}

/* Without symmetry, devices of a group start and end each batch together,
 * one after the other: their batch starts ride on their change to
 * computing and their ends share one entry (runtime_ff.c, jfold), and a
 * replayed epoch, entry by entry (an exact timeline) or from the epoch's
 * sums (histograms, with 64 timeline devices alike), gives the simulated
 * bits. */
Test(ff, journal_folds_devices_in_lockstep)
{
    setenv("DPSIM_NO_SYMMETRY", "1", 1); /* read once per process: this test's */
    scn_override ov[] = {{"training.epochs", "6"},        {"dataset.samples", "9600"},
                         {"devices.rtx3090.count", "48"}, {"devices.cpu4.count", "24"},
                         {"devices.cpu16.count", "12"},   {"devices.cpu8.count", "12"}};
    cr_expect_eq(compare("paper-testbed.yaml", "ddp", ov, 6), 4);
    cr_expect_eq(compare("paper-testbed.yaml", "cadp", ov, 6), 4);
    scn_override big[] = {{"training.epochs", "5"},         {"dataset.samples", "200000"},
                          {"devices.rtx3090.count", "100"}, {"devices.cpu4.count", "50"},
                          {"devices.cpu16.count", "25"},    {"devices.cpu8.count", "25"}};
    cr_expect_eq(compare("paper-testbed.yaml", "ddp", big, 6), 4);
}

/* A long run: the timeline turns coarse (past 20,000 segments) and the
 * FLOPS bins double during the replayed epochs; still the same bits. */
Test(ff, long_run_coarse_timeline_and_bins)
{
    scn_override ov[] = {
        {"training.epochs", "400"}, {"policies.ddp.collective", "analytic"}, {"policies.ddp.data", "shard"}};
    scn_scenario *s = load("tiny.yaml", ov, 3);
    res_run *r = run("ddp", s, 1);
    cr_expect_gt(r->timeline_res_s, 0, "the timeline is coarse");
    cr_expect_gt(r->bin_s, 1, "the FLOPS bins doubled");
    res_run_free(r);
    scn_free(s);
    cr_expect_eq(compare("tiny.yaml", "ddp", ov, 3), 4);
}

/* The segment hook (`export --trace --full`) sees every activity interval
 * of a fast-forwarded run in the same order, with the same bits, as a
 * simulated one: with the hook set, a replayed epoch keeps the journal's
 * order across devices (the interleaving the stream shows). */
typedef struct seg_log {
    size_t n, cap;
    double *v; /* device, act, t0, t1 per interval */
} seg_log;

static void on_seg(void *ctx, size_t device, int act, double t0_s, double t1_s)
{
    seg_log *l = ctx;
    if (l->n + 4 > l->cap) {
        l->cap = l->cap ? 2 * l->cap : 4096;
        l->v = realloc(l->v, l->cap * sizeof *l->v);
        cr_assert(l->v);
    }
    l->v[l->n++] = (double)device;
    l->v[l->n++] = act;
    l->v[l->n++] = t0_s;
    l->v[l->n++] = t1_s;
}

Test(ff, segment_stream_is_the_same)
{
    scn_override ov[] = {
        {"training.epochs", "400"}, {"policies.ddp.collective", "analytic"}, {"policies.ddp.data", "shard"}};
    scn_scenario *s = load("tiny.yaml", ov, 3);
    seg_log full = {0}, ff = {0};
    policy_set_segment_hook(on_seg, &full);
    res_run *a = run("ddp", s, 0);
    policy_set_segment_hook(on_seg, &ff);
    res_run *b = run("ddp", s, 1);
    policy_set_segment_hook(NULL, NULL);
    cr_expect(a->timeline_res_s > 0, "the timeline turned coarse");
    cr_expect(find_stat(b, "fast_forward"), "epochs were fast-forwarded");
    cr_assert_eq(full.n, ff.n, "%zu vs %zu intervals streamed", full.n / 4, ff.n / 4);
    cr_expect(memcmp(full.v, ff.v, full.n * sizeof *full.v) == 0, "the streams differ");
    expect_same(a, b, "tiny ddp, segment hook");
    free(full.v);
    free(ff.v);
    res_run_free(a);
    res_run_free(b);
    scn_free(s);
}

/* The coarse timeline against the exact intervals: every bin's activity is
 * the one that fills most of it, computed here from the streamed intervals
 * (a bin whose top two activities are within 1e-9 of its width may go
 * either way).  The run with the stream is simulated in full; the same run
 * fast-forwarded without it (bin edges from the epochs' subtotals) must
 * give the same bits. */
Test(ff, coarse_timeline_bins_hold_their_dominant_activity)
{
    /* slow GPUs: bins alternate between computing, sending and waiting */
    scn_override ov[] = {{"training.epochs", "300"},
                         {"policies.ddp.collective", "analytic"},
                         {"policies.ddp.data", "shard"},
                         {"devices.gpu.batch_time", "3s"}};
    scn_scenario *s = load("tiny.yaml", ov, 4);
    seg_log log = {0};
    policy_set_segment_hook(on_seg, &log);
    res_run *a = run("ddp", s, 0);
    policy_set_segment_hook(NULL, NULL);
    res_run *b = run("ddp", s, 1);
    cr_assert(find_stat(b, "fast_forward"), "epochs were fast-forwarded");
    expect_same(a, b, "tiny ddp: simulated with the stream, fast-forwarded without");
    double res = a->timeline_res_s, T = a->ttotal_s;
    cr_assert_gt(res, 0, "the timeline is coarse");
    size_t nb = (size_t)ceil(T / res), ndev = a->n_devices;
    double *h = calloc(ndev * nb * RES_ACT_COUNT, sizeof *h);
    int *shown = calloc(ndev * nb, sizeof *shown);
    cr_assert(h && shown);
    for (size_t i = 0; i + 3 < log.n; i += 4) {
        size_t d = (size_t)log.v[i];
        int act = (int)log.v[i + 1];
        double t0 = log.v[i + 2], t1 = log.v[i + 3];
        for (size_t k = (size_t)(t0 / res); k < nb && (double)k * res < t1; k++) {
            double lo = fmax(t0, (double)k * res), hi = fmin(t1, (double)(k + 1) * res);
            if (hi > lo)
                h[(d * nb + k) * RES_ACT_COUNT + act] += hi - lo;
        }
    }
    for (size_t k = 0; k < ndev * nb; k++)
        shown[k] = -1;
    for (size_t i = 0; i < a->n_segments; i++) {
        const res_segment *sg = &a->segments[i];
        for (size_t k = (size_t)llround(sg->t0_s / res); k < nb && (double)k * res < sg->t1_s - res / 2; k++)
            shown[sg->device * nb + k] = sg->act;
        if (sg->t1_s == T) /* the last, partial bin */
            shown[sg->device * nb + nb - 1] = sg->act;
    }
    size_t checked = 0;
    for (size_t d = 0; d < ndev; d++)
        for (size_t k = 0; k < nb; k++) {
            const double *x = h + (d * nb + k) * RES_ACT_COUNT;
            int best = 0;
            for (int q = 1; q < RES_ACT_COUNT; q++)
                if (x[q] > x[best])
                    best = q;
            double second = -1;
            for (int q = 0; q < RES_ACT_COUNT; q++)
                if (q != best && x[q] > second)
                    second = x[q];
            cr_expect_neq(shown[d * nb + k], -1, "device %zu bin %zu: no segment", d, k);
            if (x[best] - second <= 1e-9 * res)
                continue;
            checked++;
            cr_expect_eq(shown[d * nb + k], best, "device %zu bin %zu shows %d, mostly %d", d, k,
                         shown[d * nb + k], best);
        }
    cr_expect_gt(checked, 2 * nb, "bins checked");
    cr_expect_gt(a->n_segments, 6 * 100, "bins of different activities");
    free(h);
    free(shown);
    free(log.v);
    res_run_free(a);
    res_run_free(b);
    scn_free(s);
}
