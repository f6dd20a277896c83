/* test_plugin.c: a policy written and registered from outside sim/ (this
 * file alone) runs through everything a built-in one does: its options
 * from the scenario (with the loader's errors), `run` (runner_run), the
 * results database, and `plot compare` with its own label and colour.
 *
 * The policy, "solo": each device trains on an equal share with its own
 * batch and never synchronises; an epoch ends when every device is done.
 * Its option `rounds` repeats each epoch's local pass. */
#include "run/runner.h"
#include "plots.h"
#include "policy/policy.h"
#include "policy/runtime.h"
#include "policy/runtime_perf.h"
#include "store/store.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

typedef struct solo_opts {
    int rounds;
} solo_opts;

typedef struct solo_dev {
    size_t d;
    int round;
} solo_dev;

typedef struct solo_state {
    solo_dev *dev;
    size_t done;
    int rounds;
} solo_state;

static void solo_step(prt *rt, void *ctx);

static void solo_epoch(prt *rt)
{
    solo_state *st = prt_state(rt);
    st->done = 0;
    for (size_t d = 0; d < prt_n(rt); d++) {
        st->dev[d].round = 0;
        solo_step(rt, &st->dev[d]);
    }
}

static void solo_step(prt *rt, void *ctx)
{
    solo_state *st = prt_state(rt);
    solo_dev *sd = ctx;
    int64_t *left = prt_left(rt);
    if (left[sd->d] == 0 && ++sd->round < st->rounds)
        left[sd->d] = prt_share(rt)[sd->d];
    if (left[sd->d] == 0) {
        if (++st->done == prt_n(rt) && prt_end_epoch(rt) > 0)
            solo_epoch(rt);
        return;
    }
    const scn_scenario *s = prt_scn(rt);
    int bs = s->groups[s->devices[sd->d].group].batch;
    int n = left[sd->d] < bs ? (int)left[sd->d] : bs;
    left[sd->d] -= n;
    prt_compute(rt, sd->d, n, 1.0, solo_step, sd, NULL);
}

static void solo_ready(prt *rt, void *ctx)
{
    (void)ctx;
    solo_state *st = prt_state(rt);
    if (++st->done == prt_n(rt)) { /* every device holds data and model */
        prt_stat(rt, "solo_rounds", RES_SCOPE_RUN, 0, 0, ((solo_state *)prt_state(rt))->rounds);
        solo_epoch(rt);
    }
}

static int solo_start(prt *rt, const void *opts)
{
    solo_state *st = dp_calloc(1, sizeof *st);
    double *bytes = dp_calloc(prt_n(rt), sizeof *bytes);
    if (st)
        st->dev = dp_calloc(prt_n(rt), sizeof *st->dev);
    prt_set_state(rt, st);
    if (!st || !st->dev || !bytes) {
        dp_free(bytes);
        return dp_err_set(prt_err(rt), DP_ENOMEM, "out of memory");
    }
    st->rounds = ((const solo_opts *)opts)->rounds;
    equal_split(rt, PRT_DATA_SHARD, bytes);
    for (size_t d = 0; d < prt_n(rt); d++) {
        st->dev[d].d = d;
        prt_left(rt)[d] = prt_share(rt)[d];
    }
    int rc = prt_distribute(rt, bytes, NULL, solo_ready, NULL);
    dp_free(bytes);
    return rc;
}

static void solo_free(prt *rt, const void *opts)
{
    (void)opts;
    solo_state *st = prt_state(rt);
    if (st)
        dp_free(st->dev);
    dp_free(st);
    prt_set_state(rt, NULL);
}

static const popt solo_table[] = {
    {"rounds", NULL, POPT_INT, SCN_UNIT_NUMBER, offsetof(solo_opts, rounds), 1, 1, 100, NULL,
     "local passes over the share per epoch"},
    {NULL, NULL, 0, 0, 0, 0, 0, 0, NULL, NULL},
};

static const policy_def solo = {
    .name = "solo",
    .label = "Solo test",
    .color = "#123456",
    .summary = "a test policy: local training, no synchronisation",
    .opts = solo_table,
    .opts_size = sizeof(solo_opts),
    .start = solo_start,
    .free = solo_free,
};

static const char *TEXT = "name: plug\n"
                          "model: { params: 1000, flops_per_sample: 1e6 }\n"
                          "dataset: { samples: 100, sample_bytes: 1KB }\n"
                          "training: { epochs: 2 }\n"
                          "devices:\n"
                          "  - { name: gpu, count: 2, kind: gpu, memory: 1GiB, batch: 10, batch_time: 1s,\n"
                          "      link: { up: 8Mbps, down: 8Mbps } }\n"
                          "policies:\n"
                          "  solo: { rounds: 3 }\n";

static void registered(void)
{
    if (!policy_find("solo")) {
        dp_err e = {0};
        cr_assert_eq(policy_register(&solo, &e), 0, "%s", e.msg);
    }
}

static scn_scenario *load(const char *text, dp_err *e)
{
    scn_scenario *s = scn_load_string("plug.yaml", text, strlen(text), NULL, NULL, 0, e);
    if (s && policy_check_scenario(s, e)) {
        scn_free(s);
        return NULL;
    }
    return s;
}

Test(plugin, options_are_checked_like_builtins)
{
    dp_err e = {0};
    /* before registration, policies.solo is an unknown policy */
    if (!policy_find("solo")) {
        cr_assert_null(load(TEXT, &e));
        cr_assert(strstr(e.msg, "plug.yaml:9:3: policies.solo: unknown policy 'solo'"), "%s", e.msg);
    }
    registered();
    scn_scenario *s = load(TEXT, &e);
    cr_assert_not_null(s, "%s", e.msg);
    cr_assert_eq(policy_option_num(policy_find("solo"), s, "rounds"), 3);
    scn_free(s);
    char bad[1024];
    snprintf(bad, sizeof bad, "%s", TEXT);
    strcpy(strstr(bad, "rounds: 3"), "rouns: 3 }\n");
    cr_assert_null(load(bad, &e));
    cr_assert(strstr(e.msg, "plug.yaml:9:11: policies.solo.rouns: unknown key, did you mean 'rounds'?"), "%s",
              e.msg);
    /* a second policy of the same name is refused */
    cr_assert_eq(policy_register(&solo, &e), DP_EINPUT);
    cr_assert(strstr(e.msg, "exists already"), "%s", e.msg);
}

Test(plugin, runs_stores_and_plots)
{
    registered();
    dp_err e = {0};
    scn_scenario *s = load(TEXT, &e);
    cr_assert_not_null(s, "%s", e.msg);
    const policy_def *pk[2];
    cr_assert_eq(runner_parse_policies("solo,cadp", pk, 2, &e), 2, "%s", e.msg);
    char dir[] = "/tmp/dpsim-plugin-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char db[300], out[300];
    snprintf(db, sizeof db, "%s/r.db", dir);
    snprintf(out, sizeof out, "%s/compare.svg", dir);
    store *st = store_open(db, 0, &e);
    cr_assert_not_null(st, "%s", e.msg);
    res_run *runs[2];
    int64_t ids[2];
    cr_assert_eq(runner_run(s, pk, 2, 1, st, NULL, 0, runs, ids, &e), 0, "%s", e.msg);
    /* 2 devices x 50 samples x 3 rounds x 2 epochs, batches of 10 at 1 s:
     * 15 batches an epoch once data and model are there (50 KB + 4 KB over
     * 1 MB/s each = 0.054 s) */
    cr_assert_float_eq(runs[0]->tsend_s, 0.054, 1e-9);
    cr_assert_float_eq(runs[0]->ttotal_s, 0.054 + 30, 1e-9);
    cr_assert_float_eq(runs[0]->samples_processed, 600, 0);
    cr_assert_str_eq(runs[0]->options_json, "{\"rounds\":3}");
    const res_stat *x = res_find_stat(runs[0], "solo_rounds", RES_SCOPE_RUN, 0, 0);
    cr_assert_not_null(x);
    cr_assert_eq(x->value, 3);
    /* stored and read back */
    res_run *back = NULL;
    cr_assert_eq(store_get_run(st, ids[0], &back, &e), 0, "%s", e.msg);
    cr_assert_str_eq(back->policy, "solo");
    cr_assert_eq(back->ttotal_s, runs[0]->ttotal_s);
    cr_assert_eq(back->n_stats, 1);
    res_run_free(back);
    /* plot compare draws it with its registered label and colour */
    plot_sel sel;
    memset(&sel, 0, sizeof sel);
    sel.log_x = sel.log_y = -1;
    cr_assert_eq(plots_draw(st, PLOT_COMPARE, &sel, out, &e), 0, "%s", e.msg);
    FILE *f = fopen(out, "r");
    cr_assert_not_null(f);
    static char svg[1 << 20];
    size_t n = fread(svg, 1, sizeof svg - 1, f);
    svg[n] = '\0';
    fclose(f);
    cr_assert(strstr(svg, "Solo test"), "label missing from the plot");
    cr_assert(strstr(svg, "#123456") || strstr(svg, "rgb( 18,  52,  86)") || strstr(svg, "rgb(18, 52, 86)"),
              "colour missing from the plot");
    for (int k = 0; k < 2; k++)
        res_run_free(runs[k]);
    store_close(st);
    scn_free(s);
    unlink(out);
    unlink(db);
    rmdir(dir);
}

/* "cut": each device computes its share as one run of batches
 * (prt_compute_left: batch times fixed, so one event), and at a set time
 * the policy aborts (prt_abort): the batches that ended by then count, the
 * one in flight counts its seconds but not as a batch, and the samples of
 * the batches not started are left. */
static double cut_at = 2.5; /* < 0: ask for an empty run instead */

typedef struct cut_state {
    size_t ready;
    double at;
} cut_state;

/* the batches' end, or (batch times not fixed) one batch's: go on */
static void cut_more(prt *rt, void *ctx)
{
    size_t d = (size_t)(intptr_t)ctx;
    const scn_scenario *s = prt_scn(rt);
    if (prt_left(rt)[d] > 0)
        cr_assert_eq(prt_compute_left(rt, d, s->groups[s->devices[d].group].batch, cut_more, ctx), 0);
}

/* ... or asks for a run with nothing left (a policy's bug): the run fails */
static void cut_nothing(prt *rt, void *ctx)
{
    (void)ctx;
    prt_left(rt)[0] = 0;
    prt_compute_left(rt, 0, 10, cut_more, NULL);
}

static void cut_now(prt *rt, void *ctx)
{
    (void)ctx;
    prt_abort(rt);
    for (size_t d = 0; d < prt_n(rt); d++)
        prt_stat(rt, "left", RES_SCOPE_DEVICE, (int64_t)d, 0, (double)prt_left(rt)[d]);
    prt_end_epoch(rt);
}

static void cut_ready(prt *rt, void *ctx)
{
    (void)ctx;
    cut_state *st = prt_state(rt);
    if (++st->ready < prt_n(rt))
        return;
    if (st->at < 0) {
        cut_nothing(rt, NULL);
        return;
    }
    for (size_t d = 0; d < prt_n(rt); d++)
        cut_more(rt, (void *)(intptr_t)d);
    prt_at(rt, prt_now(rt) + st->at, cut_now, NULL);
}

static int cut_start(prt *rt, const void *opts)
{
    (void)opts;
    cut_state *st = dp_calloc(1, sizeof *st);
    double *bytes = dp_calloc(prt_n(rt), sizeof *bytes);
    prt_set_state(rt, st);
    if (!st || !bytes) {
        dp_free(bytes);
        return dp_err_set(prt_err(rt), DP_ENOMEM, "out of memory");
    }
    st->at = cut_at;
    equal_split(rt, PRT_DATA_SHARD, bytes);
    for (size_t d = 0; d < prt_n(rt); d++)
        prt_left(rt)[d] = prt_share(rt)[d];
    int rc = prt_distribute(rt, bytes, NULL, cut_ready, NULL);
    dp_free(bytes);
    return rc;
}

static void cut_free(prt *rt, const void *opts)
{
    (void)opts;
    dp_free(prt_state(rt));
    prt_set_state(rt, NULL);
}

static const policy_def cut = {
    .name = "cut",
    .label = "Cut test",
    .color = "#654321",
    .summary = "a test policy: a run of batches aborted in the middle",
    .start = cut_start,
    .free = cut_free,
};

Test(plugin, run_of_batches_cut_short)
{
    dp_err e = {0};
    if (!policy_find("cut"))
        cr_assert_eq(policy_register(&cut, &e), 0, "%s", e.msg);
    const char *text = "name: cut\n"
                       "model: { params: 1000, flops_per_sample: 1e6 }\n"
                       "dataset: { samples: 100, sample_bytes: 1KB }\n"
                       "training: { epochs: 1 }\n"
                       "devices:\n"
                       "  - { name: gpu, count: 2, kind: gpu, memory: 1GiB, batch: 10, batch_time: 1s,\n"
                       "      link: { up: 8Mbps, down: 8Mbps } }\n";
    scn_scenario *s = load(text, &e);
    cr_assert_not_null(s, "%s", e.msg);
    for (int per_batch = 0; per_batch < 2; per_batch++) {
        prt_set_compute_per_batch(per_batch);
        res_run *r = policy_run(policy_find("cut"), s, 1, &e);
        cr_assert_not_null(r, "%s", e.msg);
        /* 50 samples each in 5 batches of 1 s from 0.054 s; cut at 2.554 s */
        for (size_t d = 0; d < 2; d++) {
            cr_expect_eq(r->devices[d].batches, 2, "per batch %d, device %zu: %lld batches", per_batch, d,
                         (long long)r->devices[d].batches);
            cr_expect_float_eq(r->devices[d].compute_s, 2.5, 1e-9, "per batch %d: compute %.17g", per_batch,
                               r->devices[d].compute_s);
        }
        size_t found = 0;
        for (size_t k = 0; k < r->n_stats; k++)
            if (!strcmp(r->stats[k].name, "left")) {
                cr_expect_eq(r->stats[k].value, 20, "per batch %d: %g samples left", per_batch,
                             r->stats[k].value);
                found++;
            }
        cr_expect_eq(found, 2);
        res_run_free(r);
    }
    prt_set_compute_per_batch(0);
    cut_at = -1;
    cr_expect_null(policy_run(policy_find("cut"), s, 1, &e));
    cr_expect(strstr(e.msg, "device gpu[0]: a run of batches with 0 samples left in batches of 10"), "%s",
              e.msg);
    cut_at = 2.5;
    scn_free(s);
}

/* ---- a plan beside the runtime (policy_perf.plan_new / plan_run / plan_free) ---- */

/* "planned": solo whose shares come from a plan job: every device's batch
 * size, summed on the plan's thread.  The job records which thread ran it,
 * and the counters below how often each hook ran. */
typedef struct planned_job {
    const scn_scenario *s;
    int64_t batches;
    pthread_t ran_on;
    int fail; /* plan_run fails with this message */
} planned_job;

static int planned_made, planned_freed, planned_fail, planned_none;
static pthread_t planned_start_on, planned_ran_on;
static int64_t planned_seen;

static void *planned_new(const scn_scenario *s, const void *opts)
{
    (void)opts;
    if (planned_none)
        return NULL;
    planned_job *j = dp_calloc(1, sizeof *j);
    if (j) {
        j->s = s;
        j->fail = planned_fail;
        planned_made++;
    }
    return j;
}

static int planned_run(void *pj, dp_err *err)
{
    planned_job *j = pj;
    j->ran_on = pthread_self();
    if (j->fail)
        return dp_err_set(err, DP_EINPUT, "planned: the plan found no allocation");
    for (size_t d = 0; d < j->s->n_devices; d++)
        j->batches += j->s->groups[j->s->devices[d].group].batch;
    return 0;
}

static void planned_free_job(void *pj)
{
    planned_freed++;
    dp_free(pj);
}

static int planned_start(prt *rt, const void *opts)
{
    planned_job *j = prt_plan(rt);
    planned_start_on = pthread_self();
    if (j)
        planned_ran_on = j->ran_on;
    planned_seen = j ? j->batches : -1;
    return solo_start(rt, opts);
}

static const policy_perf planned_perf = {
    .plan_new = planned_new,
    .plan_run = planned_run,
    .plan_free = planned_free_job,
};

static const policy_def planned = {
    .name = "planned",
    .label = "Planned test",
    .color = "#654321",
    .summary = "a test policy: solo with a plan made beside the runtime",
    .opts = solo_table,
    .opts_size = sizeof(solo_opts),
    .start = planned_start,
    .free = solo_free,
    .perf = &planned_perf,
};

static void planned_registered(void)
{
    if (!policy_find("planned")) {
        dp_err e = {0};
        cr_assert_eq(policy_register(&planned, &e), 0, "%s", e.msg);
    }
}

Test(plugin, plan_runs_beside_the_runtime_and_is_freed_once)
{
    planned_registered();
    dp_err e = {0};
    scn_scenario *s = scn_load_string("plug.yaml", TEXT, strlen(TEXT), NULL, NULL, 0, &e);
    cr_assert_not_null(s, "%s", e.msg);
    long live = dp_alloc_live();

    planned_made = planned_freed = planned_fail = planned_none = 0;
    res_run *r = policy_run(policy_find("planned"), s, 1, &e);
    cr_assert_not_null(r, "%s", e.msg);
    cr_expect_eq(planned_seen, 20, "start saw the plan's sum of batch sizes (2 devices x 10)");
    cr_expect_eq(planned_made, 1);
    cr_expect_eq(planned_freed, 1, "the runtime frees the plan after the run");
    cr_expect(!pthread_equal(planned_ran_on, planned_start_on), "the plan ran on a thread of its own");
    double ttotal = r->ttotal_s;
    res_run_free(r);

    /* a plan that fails: the run fails with its message, the job is freed */
    planned_fail = 1;
    e = (dp_err){0};
    cr_expect_null(policy_run(policy_find("planned"), s, 1, &e));
    cr_expect_eq(e.code, DP_EINPUT);
    cr_expect_str_eq(e.msg, "planned: the plan found no allocation");
    cr_expect_eq(planned_freed, 2);

    /* no plan for this run (plan_new says NULL): start sees none */
    planned_fail = 0;
    planned_none = 1;
    r = policy_run(policy_find("planned"), s, 1, &e);
    cr_assert_not_null(r, "%s", e.msg);
    cr_expect_eq(planned_seen, -1);
    cr_expect_eq(planned_freed, 2);
    cr_expect_eq(r->ttotal_s, ttotal, "the plan changes nothing but what start reads");
    res_run_free(r);
    planned_none = 0;
    cr_expect_eq(dp_alloc_live(), live, "every block of the runs was freed");
    scn_free(s);
}

Test(plugin, plan_hooks_come_together)
{
    static policy_perf half_perf;
    half_perf = planned_perf;
    half_perf.plan_free = NULL;
    policy_def half = planned;
    half.name = "half_planned";
    half.perf = &half_perf;
    dp_err e = {0};
    cr_expect_eq(policy_register(&half, &e), DP_EINPUT);
    cr_expect(strstr(e.msg, "plan_new, plan_run and plan_free together") != NULL, "%s", e.msg);
    cr_expect_null(policy_find("half_planned"));
}

/* C-ADP (which plans on a second thread) out of memory at any allocation,
 * on either thread, fails the run cleanly (an error that says so, nothing
 * leaked, no endless instant: an engine refill or a
 * completion's list that could not grow once made the run look finished or
 * repeat one instant for ever), and
 * once memory suffices the run gives the figures of an unhindered one. */
/* Every allocation of one policy's run on `s` failed in turn. */
static void oom_sweep(const scn_scenario *s, const char *policy)
{
    dp_err e = {0};
    res_run *ref = policy_run(policy_find(policy), s, 1, &e);
    cr_assert_not_null(ref, "%s: %s", policy, e.msg);
    long live = dp_alloc_live();
    int ok = 0; /* every allocation among the first 600, then every eighth */
    for (long k = 1; k < 1000000 && !ok; k += k < 600 ? 1 : k / 8) {
        e = (dp_err){0};
        dp_alloc_fail_after(k);
        res_run *r = policy_run(policy_find(policy), s, 1, &e);
        dp_alloc_fail_after(0);
        if (r) {
            cr_expect_eq(r->ttotal_s, ref->ttotal_s, "%s, k = %ld", policy, k);
            res_run_free(r);
            ok = 1;
        } else {
            cr_expect(e.code == DP_ENOMEM || (e.code == DP_ERUN && strstr(e.msg, "out of memory")),
                      "%s, k = %ld: %d %s", policy, k, e.code, e.msg);
        }
        cr_expect_eq(dp_alloc_live(), live, "%s, k = %ld: blocks leaked", policy, k);
    }
    cr_expect(ok, "%s: the run never got enough memory", policy);
    res_run_free(ref);
}

Test(plugin, cadp_out_of_memory_anywhere_fails_cleanly, .timeout = 120)
{
    dp_err e = {0};
    scn_scenario *s = scn_load_string("plug.yaml", TEXT, strlen(TEXT), NULL, NULL, 0, &e);
    cr_assert_not_null(s, "%s", e.msg);
    oom_sweep(s, "cadp");
    scn_free(s);
}

/* oom_sweep for every built-in policy that accepts the scenario `text`
 * (in a world with failures that is those with an on_device hook:
 * policy_keep_applicable refuses the others). */
static void sweep_builtins(const char *text, const scn_override *ov, size_t n_ov)
{
    dp_err e = {0};
    scn_scenario *s = scn_load_string("plug.yaml", text, strlen(text), NULL, ov, n_ov, &e);
    cr_assert_not_null(s, "%s", e.msg);
    const policy_def *pk[POLICY_MAX];
    size_t np = 0;
    for (size_t i = 0; i < policy_count(); i++)
        if (strcmp(policy_name(policy_at(i)), "solo") && strcmp(policy_name(policy_at(i)), "planned"))
            pk[np++] = policy_at(i); /* built in: not this file's own */
    np = (size_t)policy_keep_applicable(s, pk, np, NULL);
    cr_expect_geq(np, 10, "the built-in policies that run on two devices");
    for (size_t i = 0; i < np; i++)
        oom_sweep(s, policy_name(pk[i]));
    scn_free(s);
}

/* The same for every built-in policy (flow collectives for the synchronous
 * ones, so the network's paths are swept too). */
Test(plugin, every_policy_out_of_memory_fails_cleanly, .timeout = 300)
{
    scn_override ov[] = {{"policies.ddp.collective", "flows"}, {"policies.deepspeed.collective", "flows"}};
    sweep_builtins(TEXT, ov, 2);
}

/* And in a world whose devices fail and come back: each policy's reaction
 * to a failure (cut transfers, lost batches, resends) is swept too. */
Test(plugin, every_policy_out_of_memory_with_failures_fails_cleanly, .timeout = 300)
{
    char text[2048];
    snprintf(text, sizeof text, "%savailability: { mtbf: 3s, mttr: 1s }\n", TEXT);
    sweep_builtins(text, NULL, 0);
}

/* ---- policy_perf.prefetch: a hint that changes nothing --------------------- */

extern const policy_def policy_cadp;
static long hint_calls, hint_bad;
static size_t hint_n;

static void counting_prefetch(prt *rt, size_t d)
{
    hint_calls++;
    hint_bad += d >= prt_n(rt) || d >= hint_n;
    policy_cadp.perf->prefetch(rt, d);
}

/* C-ADP with and without a (counting) prefetch hook, on a population large
 * enough for the hints to run (PREFETCH_MIN_DEVICES, runtime.c; many
 * distributions ending at one instant, batch runs ending one after
 * another): the hook is called, only for real devices, and every figure is
 * the same bits. */
Test(plugin, prefetch_hint_changes_nothing)
{
    static policy_def plain, hinted;
    static policy_perf plain_perf, hinted_perf;
    plain_perf = hinted_perf = *policy_cadp.perf;
    plain_perf.prefetch = NULL;
    hinted_perf.prefetch = counting_prefetch;
    plain = policy_cadp;
    plain.name = "cadp_plain";
    plain.perf = &plain_perf;
    hinted = policy_cadp;
    hinted.name = "cadp_hinted";
    hinted.perf = &hinted_perf;
    dp_err e = {0};
    if (!policy_find("cadp_plain"))
        cr_assert_eq(policy_register(&plain, &e), 0, "%s", e.msg);
    if (!policy_find("cadp_hinted"))
        cr_assert_eq(policy_register(&hinted, &e), 0, "%s", e.msg);
    const char *text = "name: hint\n"
                       "model: { params: 1000, flops_per_sample: 1e6 }\n"
                       "dataset: { samples: 60000, sample_bytes: 1KB }\n"
                       "training: { epochs: 2 }\n"
                       "devices:\n"
                       "  - name: phone\n    count: 5000\n    seed: 3\n    kind: cpu\n    memory: 1GiB\n"
                       "    batch: 4\n    batch_time: { lognormal: { median: 2.5s, sigma: 0.4 } }\n"
                       "    link: { up: 50Mbps, down: 50Mbps }\n";
    scn_scenario *s = load(text, &e);
    cr_assert_not_null(s, "%s", e.msg);
    hint_n = s->n_devices;
    res_run *a = policy_run(policy_find("cadp_plain"), s, 7, &e);
    cr_assert_not_null(a, "%s", e.msg);
    hint_calls = hint_bad = 0;
    res_run *b = policy_run(policy_find("cadp_hinted"), s, 7, &e);
    cr_assert_not_null(b, "%s", e.msg);
    cr_expect_gt(hint_calls, 5000, "the hook ran %ld times", hint_calls);
    cr_expect_eq(hint_bad, 0);
    const double fa[] = {a->ttotal_s, a->tsend_s, a->ttraining_s, a->samples_processed};
    const double fb[] = {b->ttotal_s, b->tsend_s, b->ttraining_s, b->samples_processed};
    cr_expect_eq(memcmp(fa, fb, sizeof fa), 0, "Ttotal %.17g / %.17g", fa[0], fb[0]);
    cr_assert_eq(a->n_devices, b->n_devices);
    for (size_t d = 0; d < a->n_devices; d++) {
        const res_device *x = &a->devices[d], *y = &b->devices[d];
        const double va[] = {x->compute_s, x->send_s, x->recv_s, x->wait_s, x->data_ready_s, x->bytes_sent};
        const double vb[] = {y->compute_s, y->send_s, y->recv_s, y->wait_s, y->data_ready_s, y->bytes_sent};
        cr_expect_eq(memcmp(va, vb, sizeof va), 0, "device %zu", d);
        cr_expect_eq(x->batches, y->batches, "device %zu", d);
        cr_expect_eq(x->samples, y->samples, "device %zu", d);
    }
    res_run_free(a);
    res_run_free(b);
    scn_free(s);
}

/* Every built-in policy has a colour of its own (issue 37: 11 policies
 * drew on 8 colours); a plug-in registered without one gets a spare no
 * policy uses, and every policy its own point-and-dash pair. */
static const policy_def colourless = {
    .name = "colourless",
    .label = "Colourless test",
    .summary = "a test policy registered without a colour",
    .start = solo_start,
    .free = solo_free,
    .opts = solo_table,
    .opts_size = sizeof(solo_opts),
};

Test(plugin, colours_and_styles_are_distinct)
{
    dp_err err = {0};
    if (!policy_find("colourless"))
        cr_assert_eq(policy_register(&colourless, &err), 0, "%s", err.msg);
    size_t n = policy_count();
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < i; j++) {
            const char *a = policy_at(i)->name, *b = policy_at(j)->name;
            cr_expect(strcasecmp(policy_color_of(a, 0), policy_color_of(b, 0)) != 0, "%s and %s share %s", a,
                      b, policy_color_of(a, 0));
            int pa, da, pb, db;
            policy_style_of(a, 0, &pa, &da);
            policy_style_of(b, 0, &pb, &db);
            cr_expect(pa != pb || da != db, "%s and %s share point %d dash %d", a, b, pa, da);
        }
    cr_expect(policy_color_of("colourless", 0)[0] == '#', "a plug-in without a colour gets one");
}
