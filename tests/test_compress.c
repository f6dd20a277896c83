/* test_compress.c: compression of models and gradients (scenario
 * `compression:`, docs/MODEL.md "Compression"): the transforms by hand,
 * bytes on the wire exact, top-k keeping everything equal to no
 * compression bit for bit, the accuracy cost visible and monotone, bad
 * input refused with its place. */
#include <criterion/criterion.h>

#include "lcompress.h"
#include "learner.h"
#include "policy/policy.h"
#include "test_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static char *world(const char *extra)
{
    static char buf[4096];
    snprintf(buf, sizeof buf,
             "name: comp\n"
             "model: {name: softmax, params: 650, flops_per_sample: 1300}\n"
             "dataset: {samples: 1437, sample_bytes: 64B}\n"
             "training: {epochs: 4, seed: 5}\n"
             "server: {nic: {up: 1Gbps, down: 1Gbps}}\n"
             "devices:\n"
             "  - {name: w, count: 4, kind: cpu, memory: 1GiB, batch: 8, batch_time: 10ms,\n"
             "     link: {up: 100Mbps, down: 100Mbps, latency: 5ms}}\n"
             "learning: {data: digits, model: softmax, partition: labels, labels_per_device: 3, lr: 0.5}\n"
             "%s",
             extra);
    return buf;
}

Test(compress, transforms_by_hand)
{
    double v[6] = {0.5, -3, 1, 3, -0.25, 2}, out[6];
    size_t idx[6];
    lc_cfg top = {.method = LC_TOPK, .k = 0.5};
    lc_apply(&top, v, 6, out, idx); /* |3| twice: the lower index first; then 2 */
    double want[6] = {0, -3, 0, 3, 0, 2};
    for (int i = 0; i < 6; i++)
        cr_expect(out[i] == want[i], "top-k [%d] %g", i, out[i]);
    lc_cfg q = {.method = LC_QUANTIZE, .bits = 2}; /* levels -3, -1, 1, 3 */
    lc_apply(&q, v, 6, out, idx);
    double wq[6] = {1, -3, 1, 3, -1, 1};
    for (int i = 0; i < 6; i++)
        cr_expect(out[i] == wq[i], "quantize [%d] %g", i, out[i]);
    cr_expect_eq(lc_kept(0.01, 650), 7);
    cr_expect_eq(lc_kept(0.1, 650), 65);
    cr_expect_eq(lc_kept(1e-9, 650), 1);
    cr_expect_eq(lc_kept(1, 650), 650);
}

Test(compress, wire_bytes_exact)
{
    lc_cfg none = {.method = LC_NONE}, t1 = {.method = LC_TOPK, .k = 0.01, .index_bytes = 4},
           t10 = {.method = LC_TOPK, .k = 0.1, .index_bytes = 4}, q8 = {.method = LC_QUANTIZE, .bits = 8},
           q4 = {.method = LC_QUANTIZE, .bits = 4};
    cr_expect_eq(lc_wire_bytes(&none, 650, 4), 2600);
    cr_expect_eq(lc_wire_bytes(&t1, 650, 4), 7 * 8);
    cr_expect_eq(lc_wire_bytes(&t10, 650, 4), 65 * 8);
    cr_expect_eq(lc_wire_bytes(&q8, 650, 4), 650 + 8);
    cr_expect_eq(lc_wire_bytes(&q4, 650, 4), 325 + 8);
    /* a run: every push of asyncps and every ring of localsgd carries the
     * compressed bytes, downloads the model's: the totals differ by
     * exactly pushes x (2600 - 56), rounds x 4 x 2 (3/4) x (2600 - 56) */
    static const char *pol[] = {"asyncps", "localsgd"};
    for (int p = 0; p < 2; p++) {
        dp_err err = {0};
        scn_scenario *a = load(world(""), NULL, 0);
        scn_scenario *b = load(world("compression: {method: topk, k: 0.01}\n"), NULL, 0);
        res_run *ra = policy_run(policy_find(pol[p]), a, 5, &err);
        res_run *rb = policy_run(policy_find(pol[p]), b, 5, &err);
        cr_assert(ra && rb, "%s", err.msg);
        double n = NAN;
        for (size_t i = 0; i < rb->n_stats; i++)
            if (!strcmp(rb->stats[i].name, "updates"))
                n = rb->stats[i].value;
        double want = p == 0 ? n * (2600 - 56) : n * 4 * 2 * 0.75 * (2600 - 56);
        cr_expect(ra->bytes_total - rb->bytes_total == want, "%s: %.17g fewer bytes, want %.17g", pol[p],
                  ra->bytes_total - rb->bytes_total, want);
        res_run_free(ra);
        res_run_free(rb);
        scn_free(a);
        scn_free(b);
    }
}

/* One stream of every kind (local steps and averages, background
 * averages, synchronous steps, pushes) through a learner with compression
 * c and one without; the global models compared bit for bit (same) or
 * not. */
static void stream(const lc_cfg *c, int same)
{
    dp_err err = {0};
    scn_scenario *s = load(world(""), NULL, 0);
    lrn_cfg *cfg = NULL;
    cr_assert_eq(lrn_cfg_read(s, &cfg, &err), 0, "%s", err.msg);
    for (int mode = 0; mode < 3; mode++) {
        learner *L[2];
        for (int i = 0; i < 2; i++) {
            L[i] = lrn_new(cfg, s, 4, 5, &err);
            cr_assert(L[i], "%s", err.msg);
            cr_assert_eq(lrn_set_mode(L[i], (lrn_mode)mode), 0);
        }
        cr_assert_eq(lrn_set_compress(L[1], c), 0);
        size_t odd[2] = {1, 3};
        for (int i = 0; i < 2; i++)
            for (int r = 0; r < 20; r++) {
                double t = r;
                for (size_t d = 0; d < 4; d++)
                    cr_assert_eq(lrn_step(L[i], t, 1, d, 8 + (double)d), 0);
                if (mode == LRN_LOCAL && r % 3 == 2) {
                    lrn_average_begin(L[i], t, 1, odd, 2);
                    lrn_average_end(L[i], t, 1, odd, 2);
                } else if (mode == LRN_LOCAL) {
                    lrn_average(L[i], t, 1, r % 2 ? odd : NULL, r % 2 ? 2 : 4, 1, 1);
                } else if (mode == LRN_SYNC) {
                    lrn_sync(L[i], t, 1, NULL, 4, r % 2 ? LRN_BY_SAMPLES : LRN_PER_RANK);
                } else {
                    for (size_t d = 0; d < 4; d++) {
                        cr_assert(lrn_push(L[i], t, 1, d) >= 0);
                        if (d % 2 == (size_t)r % 2)
                            lrn_pull(L[i], t, d);
                    }
                }
            }
        size_t P;
        const double *a = lrn_weights(L[0], &P), *b = lrn_weights(L[1], NULL);
        int eq = memcmp(a, b, P * sizeof *a) == 0;
        cr_expect_eq(eq, same, "mode %d: models %s", mode, eq ? "equal" : "differ");
        lrn_free(L[0]);
        lrn_free(L[1]);
    }
    lrn_cfg_free(cfg);
    scn_free(s);
}

Test(compress, topk_everything_is_no_compression_bit_for_bit)
{
    lc_cfg all = {.method = LC_TOPK, .k = 1, .error_feedback = 1, .index_bytes = 4};
    stream(&all, 1);
    lc_cfg some = {.method = LC_TOPK, .k = 0.1, .error_feedback = 1, .index_bytes = 4};
    stream(&some, 0);
    lc_cfg q = {.method = LC_QUANTIZE, .bits = 4, .delta = 1};
    stream(&q, 0);
}

/* Local SGD on label-skewed digits: the final training loss grows with
 * compression within each method (8 -> 4 -> 2 bits; top-k 10% -> 1%);
 * 8 bits costs nothing measurable (within 1% of none, either side). */
Test(compress, accuracy_cost_monotone_within_each_method)
{
    static const char *set[] = {"",
                                "compression: {method: quantize, bits: 8}\n",
                                "compression: {method: quantize, bits: 4}\n",
                                "compression: {method: quantize, bits: 2}\n",
                                "compression: {method: topk, k: 0.1}\n",
                                "compression: {method: topk, k: 0.01}\n"};
    double loss[6];
    for (int i = 0; i < 6; i++) {
        char extra[512];
        snprintf(extra, sizeof extra, "policies: {localsgd: {steps: 8}}\n%s", set[i]);
        scn_scenario *s = load(world(extra), NULL, 0);
        dp_err err = {0};
        res_run *r = policy_run(policy_find("localsgd"), s, 5, &err);
        cr_assert(r, "%s", err.msg);
        loss[i] = r->evals[r->n_evals - 1].train_loss;
        res_run_free(r);
        scn_free(s);
    }
    cr_expect(fabs(loss[1] - loss[0]) < 0.01 * loss[0] && loss[1] < loss[2] && loss[2] < loss[3],
              "quantize: %g %g %g %g", loss[0], loss[1], loss[2], loss[3]);
    cr_expect(loss[0] < loss[4] && loss[4] < loss[5], "top-k: %g %g %g", loss[0], loss[4], loss[5]);
}

static void expect_refused(const char *extra, const char *what)
{
    dp_err err = {0};
    scn_scenario *s = load(world(extra), NULL, 0);
    cr_assert(s);
    int rc = policy_check_scenario(s, &err);
    cr_expect_eq(rc, DP_EINPUT, "%s: accepted", extra);
    cr_expect(strstr(err.msg, what) && strstr(err.msg, "test.yaml:"), "%s: %s", extra, err.msg);
    scn_free(s);
}

Test(compress, bad_input_is_refused_with_its_place)
{
    expect_refused("compression: {method: topk, k: 0}\n", "compression.k");
    expect_refused("compression: {method: topk, k: 1.5}\n", "compression.k");
    expect_refused("compression: {method: zip}\n", "compression.method");
    expect_refused("compression: {method: topk, kk: 0.1}\n", "kk");
    expect_refused("compression: {method: quantize, bits: 0}\n", "compression.bits");
    expect_refused("compression: {method: quantize, k: 0.1}\n", "topk");
    expect_refused("compression: {bits: 8}\n", "quantize");
}
