/* test_fedgsync.c: FedGSync's grouping (sim/policy/fedgsync.h) recovers
 * the true label groups of a constructed non-IID partition from the
 * learner's gradients; its refusals (no learning, unknown options, K
 * groups > devices, regroup < 1) name FILE:LINE:COL; a run learns, is
 * deterministic, and its pushes carry the delta-coded bytes; a tiny run's
 * epochs end at their last merge, at the times computed by hand. */
#include <criterion/criterion.h>

#include "learner.h"
#include "ldata.h"
#include "lmodel.h"
#include "policy/fedgsync.h"
#include "policy/policy.h"
#include "test_common.h"

#include <stdio.h>
#include <stdlib.h>

static const char *WORLD = "name: fgs\n"
                           "model: {name: softmax, params: 650, flops_per_sample: 1300}\n"
                           "dataset: {samples: 1437, sample_bytes: 64B}\n"
                           "training: {epochs: 3, seed: 5}\n"
                           "server: {nic: {up: 1Gbps, down: 1Gbps}}\n"
                           "devices:\n"
                           "  - {name: w, count: 8, kind: cpu, memory: 1GiB, batch: 8, batch_time: 10ms,\n"
                           "     link: {up: 100Mbps, down: 100Mbps, latency: 5ms}}\n";

/* 8 devices in 4 groups of 2 labels: device d holds labels 2g and 2g + 1
 * with g = d % 4 (the groups interleaved, so device order gives nothing
 * away), the two devices of a group every other row of those labels.  Each
 * device's gradient is the learner's (its model and data) on its rows at
 * model w; the grouping must put exactly the devices of a group together. */
static void expect_label_groups(learner *L, const double *w, uint64_t seed)
{
    const ldata *D = lrn_data(L);
    lmodel *m = lrn_model(L);
    size_t P = lrn_n_params(L), n = 8;
    double *G = calloc(n * P, sizeof *G);
    size_t *idx = malloc(D->n_train * sizeof *idx);
    cr_assert(G && idx);
    for (size_t d = 0; d < n; d++) {
        size_t g = d % 4, k = 0, seen = 0;
        for (size_t i = 0; i < D->n_train; i++)
            if ((size_t)D->y_train[i] / 2 == g && seen++ % 2 == d / 4)
                idx[k++] = i;
        cr_assert(k > 50);
        cr_assert(!isnan(lm_grad_sum(m, w, D->x_train, D->y_train, idx, k, G + d * P)));
    }
    int grp[8];
    cr_assert_eq(fgs_group(G, n, P, 4, 2, seed, 8, grp), 0);
    for (size_t d = 0; d < n; d++)
        for (size_t e = 0; e < n; e++)
            cr_expect_eq(grp[d] == grp[e], d % 4 == e % 4,
                         "seed %llu: devices %zu and %zu in groups %d and %d", (unsigned long long)seed, d, e,
                         grp[d], grp[e]);
    cr_expect_eq(grp[0], 0, "groups are numbered by their lowest device");
    free(G);
    free(idx);
}

/* A learner on digits (IID) for WORLD's 8 devices; the caller frees the
 * three. */
static learner *digits_learner(scn_scenario **s, lrn_cfg **cfg)
{
    char buf[2048];
    snprintf(buf, sizeof buf, "%slearning: {data: digits, partition: iid}\n", WORLD);
    *s = load(buf, NULL, 0);
    dp_err err = {0};
    *cfg = NULL;
    cr_assert_eq(lrn_cfg_read(*s, cfg, &err), 0, "%s", err.msg);
    learner *L = lrn_new(*cfg, *s, 8, 5, &err);
    cr_assert(L, "%s", err.msg);
    return L;
}

Test(fedgsync, grouping_recovers_label_groups)
{
    scn_scenario *s;
    lrn_cfg *cfg;
    learner *L = digits_learner(&s, &cfg);
    cr_assert_eq(lrn_set_mode(L, LRN_LOCAL), 0);
    for (uint64_t seed = 1; seed <= 5; seed++) /* at the initial model */
        expect_label_groups(L, lrn_weights(L, NULL), seed);
    for (int r = 0; r < 40; r++) /* and at a model trained a little (device 0's, on IID data) */
        cr_assert_eq(lrn_step(L, r, 1, 0, 8), 0);
    for (uint64_t seed = 1; seed <= 5; seed++)
        expect_label_groups(L, lrn_device_weights(L, 0), seed);
    lrn_free(L);
    lrn_cfg_free(cfg);
    scn_free(s);
}

/* The PCA works whichever way the gradients' matrix is taller: more
 * devices than parameters too. */
Test(fedgsync, grouping_more_rows_than_columns)
{
    double G[12 * 3];
    for (size_t i = 0; i < 12; i++)
        for (size_t j = 0; j < 3; j++)
            G[i * 3 + j] = (j == i % 3 ? 1.0 : 0.0) + 0.01 * (double)(i % 5);
    int grp[12];
    cr_assert_eq(fgs_group(G, 12, 3, 3, 2, 7, 8, grp), 0);
    for (size_t i = 0; i < 12; i++)
        cr_expect_eq(grp[i], (int)(i % 3), "row %zu in group %d", i, grp[i]);
    cr_expect_eq(fgs_group(G, 12, 3, 13, 2, 7, 8, grp), DP_EINPUT);
    cr_expect_eq(fgs_group(G, 12, 3, 0, 2, 7, 8, grp), DP_EINPUT);
}

static void expect_refused(const char *policies, const char *key)
{
    char buf[2048];
    snprintf(buf, sizeof buf, "%spolicies: {fedgsync: {%s}}\nlearning: {data: digits}\n", WORLD, policies);
    scn_scenario *s = load(buf, NULL, 0);
    dp_err err = {0};
    cr_expect_eq(policy_check_scenario(s, &err), DP_EINPUT, "%s accepted", policies);
    cr_expect(strstr(err.msg, "test.yaml:9:") && strstr(err.msg, key), "%s: %s", policies, err.msg);
    scn_free(s);
}

Test(fedgsync, refusals)
{
    expect_refused("groups: 9", "policies.fedgsync.groups");
    expect_refused("regroup: 0", "policies.fedgsync.regroup");
    expect_refused("gruops: 2", "gruops");
    expect_refused("delta_bits: 0", "policies.fedgsync.delta_bits");
    scn_scenario *s = load(WORLD, NULL, 0); /* no learning: refused when it runs */
    dp_err err = {0};
    res_run *r = policy_run(policy_find("fedgsync"), s, 5, &err);
    cr_expect(!r && err.code == DP_EINPUT && strstr(err.msg, "learning"), "%s", err.msg);
    res_run_free(r);
    scn_free(s);
}

static res_run *run(const char *extra, const char *top)
{
    char buf[2048];
    snprintf(buf, sizeof buf,
             "%spolicies: {fedgsync: {groups: 4, regroup: 2, steps: 2, push_every: 2%s}}\n"
             "learning: {data: digits, partition: labels, labels_per_device: 2, lr: 0.5}\n%s",
             WORLD, extra, top);
    scn_scenario *s = load(buf, NULL, 0);
    dp_err err = {0};
    res_run *r = policy_run(policy_find("fedgsync"), s, 5, &err);
    cr_assert(r, "%s", err.msg);
    scn_free(s);
    return r;
}

static double stat(const res_run *r, const char *name)
{
    const res_stat *t = res_find_stat(r, name, RES_SCOPE_RUN, 0, 0);
    cr_assert(t, "no statistic %s", name);
    return t->value;
}

Test(fedgsync, learns_deterministic_and_delta_bytes)
{
    res_run *a = run("", ""), *b = run("", "");
    cr_expect(a->evals[a->n_evals - 1].test_acc > 0.8, "final accuracy %g",
              a->evals[a->n_evals - 1].test_acc);
    cr_expect_eq(a->n_evals, b->n_evals);
    for (size_t i = 0; i < a->n_evals && i < b->n_evals; i++)
        cr_expect(a->evals[i].t_s == b->evals[i].t_s && a->evals[i].test_acc == b->evals[i].test_acc,
                  "evaluation %zu differs between two runs", i);
    cr_expect(stat(a, "fedgsync.regroups") >= 2, "regroups %g", stat(a, "fedgsync.regroups"));
    cr_expect_eq(stat(a, "fedgsync.groups"), 4);
    /* 650 parameters of 4 bytes: a delta quantised to 8 bits is 650 + 2 x 4 bytes, the full model 2600 */
    cr_expect_eq(stat(a, "fedgsync.push_bytes"), 658);
    res_run *c = run(", delta: false", "");
    cr_expect_eq(stat(c, "fedgsync.push_bytes"), 2600);
    cr_expect(c->evals[c->n_evals - 1].test_acc > 0.8);
    /* with compression: its method codes the delta: top-k 10% keeps 65 entries of 4 + 4 index bytes */
    res_run *t = run("", "compression: {method: topk, k: 0.1}\n");
    cr_expect_eq(stat(t, "fedgsync.push_bytes"), 520);
    res_run_free(t);
    res_run_free(a);
    res_run_free(b);
    res_run_free(c);
}

/* The learner's side: a group's average is exact whatever the run's
 * compression and leaves the global model alone; a merge mixes what
 * arrives into the global model with weight alpha, a delta quantised to 8
 * bits arriving within half a step of the model sent. */
Test(fedgsync, learner_group_average_and_merge)
{
    scn_scenario *s;
    lrn_cfg *cfg;
    learner *L = digits_learner(&s, &cfg);
    lc_cfg run = {.method = LC_TOPK, .k = 0.01, .error_feedback = 1, .index_bytes = 4};
    cr_assert_eq(lrn_set_compress(L, &run), 0);
    cr_assert_eq(lrn_set_mode(L, LRN_LOCAL), 0);
    size_t P = lrn_n_params(L), mem[2] = {0, 1};
    double *g0 = malloc(P * sizeof *g0), *want = malloc(P * sizeof *want);
    cr_assert(g0 && want);
    memcpy(g0, lrn_weights(L, NULL), P * sizeof *g0);
    for (int r = 0; r < 5; r++) /* device 0 trains twice as much as device 1 */
        cr_assert(!lrn_step(L, r, 1, 0, 16) && !lrn_step(L, r, 1, 1, 8));
    const double *w0 = lrn_device_weights(L, 0), *w1 = lrn_device_weights(L, 1);
    for (size_t j = 0; j < P; j++)
        want[j] = (2.0 / 3) * w0[j] + (1.0 / 3) * w1[j];
    cr_assert_eq(lrn_group_average(L, 5, 1, mem, 2), 0);
    for (size_t j = 0; j < P; j++) {
        expect_close(lrn_device_weights(L, 0)[j], want[j]);
        cr_expect_eq(lrn_device_weights(L, 1)[j], lrn_device_weights(L, 0)[j]);
        cr_expect_eq(lrn_weights(L, NULL)[j], g0[j], "the global model moved");
    }
    lc_cfg delta = {.method = LC_QUANTIZE, .bits = 8, .delta = 1};
    double lo = INFINITY, hi = -INFINITY; /* the delta against the initial model, its range */
    for (size_t j = 0; j < P; j++) {
        double x = want[j] - g0[j];
        lo = x < lo ? x : lo;
        hi = x > hi ? x : hi;
    }
    cr_assert_eq(lrn_merge(L, 6, 1, 0, 0.25, &delta), 0, "staleness 0: nothing merged since its pull");
    double step = (hi - lo) / 255;
    for (size_t j = 0; j < P; j++) {
        double x = (lrn_weights(L, NULL)[j] - 0.75 * g0[j]) / 0.25; /* what arrived */
        cr_expect(fabs(x - want[j]) <= step / 2 + 1e-12, "entry %zu: %g arrived for %g (step %g)", j, x,
                  want[j], step);
    }
    free(g0);
    free(want);
    lrn_free(L);
    lrn_cfg_free(cfg);
    scn_free(s);
}

/* TWO (test_commlight.c's world, with learning): devices a (batch 10 in
 * 1 s) and b (10 in 2 s), access links 1e6 B/s each way with 10 ms, the
 * server's NIC unlimited, M = 1e6 B, merges M / 1e7 B/s = 0.1 s; 40 samples
 * of 1e4 B, 20 a device (2 batches).  groups 2 (one device each, no ring),
 * steps 1, push_every 1, pushes the full model (delta off).  By hand, an
 * upload or download of M alone 0.01 + 1 = 1.01 s:
 *   t0 = 0.01 + (2e5 + 1e6) / 1e6 = 1.21 (shard and model); both gradients
 *   (M each) uploaded at 2.22: the grouping, {a}, {b}, both start.
 *   a: batch 2.22-3.22, push 4.23, merge 4.33, download 5.34; batch (its
 *      last 10) 6.34, push 7.35, merge 7.45 (b still in its round: not the
 *      last), download 8.46: the pool is empty, a waits.
 *   b: batch 2.22-4.22, push 5.23, merge 5.33 (the server free since 4.33),
 *      download 6.34; batch (its last) 8.34, push 9.35, merge 9.45: the pool
 *      empty and no group in a round or pushing, the epoch ends here, at
 *      its last merge, not after b's download (10.46).
 *   Epoch 2 opens when b holds the model, 10.46, both groups start again:
 *   a merges at 12.57 and 15.69, b at 13.57 (pushed 13.47, server free
 *   since 12.57) and 17.69, the last: the run ends at 17.69. */
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
                         "policies: { fedgsync: { groups: 2, steps: 1, push_every: 1, delta: false } }\n"
                         "learning: { data: digits }\n";

Test(fedgsync, epoch_ends_at_last_merge_hand_timeline)
{
    scn_scenario *s = load(TWO, NULL, 0);
    dp_err err = {0};
    res_run *r = policy_run(policy_find("fedgsync"), s, 1, &err);
    cr_assert(r, "%s", err.msg);
    cr_assert_eq(r->n_epochs, 2);
    expect_close(r->epochs[0].end_s, 9.45);
    expect_close(r->epochs[1].end_s, 17.69);
    expect_close(r->ttotal_s, 17.69);
    cr_expect_eq(stat(r, "fedgsync.groups"), 2);
    cr_expect_eq(stat(r, "fedgsync.regroups"), 1);
    cr_expect_eq(stat(r, "fedgsync.push_bytes"), 1e6);
    res_run_free(r);
    scn_free(s);
}
