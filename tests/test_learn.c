/* test_learn.c: the learner on the update stream (docs/MODEL.md
 * "Learning"): schedules that must equal plain serial SGD bit for bit, local
 * SGD with one step against DDP, determinism, partitions, bad input. */
#include <criterion/criterion.h>
#include <gsl/gsl_cblas.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "learner.h"
#include "ldata.h"
#include "lmodel.h"
#include "policy/policy.h"
#include "sweep/sweep_impl.h"
#include "test_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One device (or `count`), the digits' 1,437 training rows per epoch. */
static char *world(int count, int batch, const char *learning)
{
    static char buf[4096];
    snprintf(buf, sizeof buf,
             "name: learn\n"
             "model: {name: softmax, params: 650, flops_per_sample: 1300}\n"
             "dataset: {samples: 1437, sample_bytes: 64B}\n"
             "training: {epochs: 3, seed: 5}\n"
             "server: {nic: {up: 1Gbps, down: 1Gbps}}\n"
             "devices:\n"
             "  - {name: w, count: %d, kind: cpu, memory: 1GiB, batch: %d, batch_time: 10ms,\n"
             "     link: {up: 100Mbps, down: 100Mbps, latency: 5ms}}\n"
             "%s",
             count, batch, learning);
    return buf;
}

static res_run *run_policy(const char *name, const scn_scenario *s)
{
    dp_err err = {0};
    res_run *r = policy_run(policy_find(name), s, 5, &err);
    cr_assert(r, "%s: %s", name, err.msg);
    return r;
}

/* Plain serial SGD with batch b on the learner's own sample order, its
 * test loss after each epoch of 1,437 samples compared bit for bit with the
 * run's evaluations (one per epoch, after the one at t = 0). */
static void expect_serial(const scn_scenario *s, const res_run *r, int b)
{
    dp_err err = {0};
    lrn_cfg *c = NULL;
    cr_assert_eq(lrn_cfg_read(s, &c, &err), 0, "%s", err.msg);
    learner *L = lrn_new(c, s, 1, 5, &err);
    cr_assert(L, "%s", err.msg);
    const ldata *D = lrn_data(L);
    lmodel *m = lrn_model(L);
    size_t P;
    const double *w0 = lrn_weights(L, &P);
    double *w = malloc(P * sizeof *w), *g = malloc(P * sizeof *g);
    size_t *idx = malloc((size_t)b * sizeof *idx);
    memcpy(w, w0, P * sizeof *w);
    cr_assert_eq(r->n_evals, (size_t)s->training.epochs + 1);
    for (int e = 1; e <= s->training.epochs; e++) {
        double lr = lrn_lr(L, e);
        for (size_t done = 0; done < D->n_train;) {
            size_t k = D->n_train - done < (size_t)b ? D->n_train - done : (size_t)b;
            cr_assert_eq(lrn_draw(L, 0, k, idx), 0);
            lm_grad_sum(m, w, D->x_train, D->y_train, idx, k, g);
            for (size_t j = 0; j < P; j++)
                w[j] -= lr * (g[j] / (double)k);
            done += k;
        }
        double acc, loss;
        lm_eval(m, w, D->x_test, D->y_test, D->n_test, &acc, &loss);
        cr_expect(loss == r->evals[e].test_loss, "epoch %d: serial loss %.17g, run %.17g", e, loss,
                  r->evals[e].test_loss);
        cr_expect(acc == r->evals[e].test_acc, "epoch %d: accuracy %.17g vs %.17g", e, acc,
                  r->evals[e].test_acc);
    }
    free(w);
    free(g);
    free(idx);
    lrn_free(L);
    lrn_cfg_free(c);
}

static const char *SOFTMAX =
    "learning: {data: digits, model: softmax, lr: {initial: 0.5, every: 2, factor: 0.5}}\n";

/* One device running `policy` with batch b: the plain serial SGD loop. */
static void serial_case(const char *policy, int b, const char *learning)
{
    scn_scenario *s = load(world(1, b, learning), NULL, 0);
    res_run *r = run_policy(policy, s);
    expect_serial(s, r, b);
    res_run_free(r);
    scn_free(s);
}

Test(learn, ddp_one_device_equals_serial_sgd)
{
    serial_case("ddp", 64, SOFTMAX);
}

Test(learn, cadp_one_device_equals_serial_sgd)
{
    serial_case("cadp", 64, SOFTMAX);
}

Test(learn, asyncps_one_worker_equals_serial_sgd)
{
    serial_case("asyncps", 64, SOFTMAX);
}

Test(learn, mlp_one_device_equals_serial_sgd)
{
    serial_case("ddp", 32, "learning: {model: mlp, hidden: 16, lr: 0.2}\n");
}

/* Local SGD averaging after every step is DDP (the models' average by
 * samples is the gradients' average, up to rounding) when every rank's
 * batch is the same size: 3 devices of 479 rows, batches of 8 and a last
 * one of 7.  (With unequal last batches they differ on purpose: PyTorch
 * averages per-rank means, local SGD weighs models by samples.) */
Test(learn, localsgd_one_step_equals_ddp)
{
    char text[4096];
    snprintf(text, sizeof text, "%spolicies: {localsgd: {steps: 1}}\n", world(3, 8, SOFTMAX));
    scn_scenario *s = load(text, NULL, 0);
    res_run *a = run_policy("ddp", s), *b = run_policy("localsgd", s);
    cr_assert_eq(a->n_evals, b->n_evals);
    for (size_t k = 0; k < a->n_evals; k++) {
        cr_expect(fabs(a->evals[k].test_loss - b->evals[k].test_loss) <= 1e-12,
                  "eval %zu: ddp %.17g, localsgd %.17g", k, a->evals[k].test_loss, b->evals[k].test_loss);
        cr_expect_eq(a->evals[k].test_acc, b->evals[k].test_acc);
    }
    res_run_free(a);
    res_run_free(b);
    scn_free(s);
}

Test(learn, same_seed_same_curve_and_above_chance)
{
    scn_scenario *s = load(world(8, 8, "learning: {lr: 0.5, partition: labels, targets: [0.5]}\n"), NULL, 0);
    const char *pols[] = {"ddp", "cadp", "localsgd", "flsgd", "asyncps", "dlb"};
    for (size_t p = 0; p < sizeof pols / sizeof *pols; p++) {
        res_run *a = run_policy(pols[p], s), *b = run_policy(pols[p], s);
        cr_assert_eq(a->n_evals, b->n_evals);
        for (size_t k = 0; k < a->n_evals; k++)
            cr_expect(a->evals[k].t_s == b->evals[k].t_s && a->evals[k].test_loss == b->evals[k].test_loss &&
                          a->evals[k].train_loss == b->evals[k].train_loss &&
                          a->evals[k].samples == b->evals[k].samples,
                      "%s: evaluation %zu differs", pols[p], k);
        cr_expect_gt(a->evals[1].test_acc, 0.3, "%s: %.3f after one epoch (chance is 0.1)", pols[p],
                     a->evals[1].test_acc);
        cr_expect_eq(a->n_tta, 1);
        cr_expect(!isnan(a->tta_s[0]), "%s never reached 50%%", pols[p]);
        res_run_free(a);
        res_run_free(b);
    }
    scn_free(s);
}

/* Without `learning:` a run carries no learning results. */
Test(learn, absent_block_changes_nothing)
{
    scn_scenario *s = load(world(2, 8, ""), NULL, 0);
    res_run *r = run_policy("ddp", s);
    cr_expect_eq(r->n_evals, 0);
    cr_expect_eq(r->n_tta, 0);
    cr_expect_str_eq(r->learn_source, "");
    res_run_free(r);
    scn_free(s);
}

Test(learn, stop_at_target_ends_the_run_early)
{
    scn_scenario *s =
        load(world(4, 8, "learning: {lr: 0.5, targets: [0.8], stop_at_target: true}\n"), NULL, 0);
    res_run *r = run_policy("ddp", s);
    cr_expect_lt(r->n_epochs, 3, "ran %zu epochs", r->n_epochs);
    cr_expect(!isnan(r->tta_s[0]));
    cr_expect_eq(r->tta_s[0], r->ttotal_s);
    res_run_free(r);
    scn_free(s);
}

Test(learn, time_based_evaluations)
{
    scn_scenario *s = load(world(4, 8, "learning: {lr: 0.5, evaluate: {epochs: 0, every: 1s}}\n"), NULL, 0);
    res_run *r = run_policy("ddp", s);
    cr_assert_gt(r->n_evals, 3);
    for (size_t k = 1; k + 1 < r->n_evals; k++) {
        expect_close(r->evals[k].t_s, (double)k);
        cr_expect_geq(r->evals[k].samples, r->evals[k - 1].samples);
    }
    expect_close(r->evals[r->n_evals - 1].t_s, r->ttotal_s);
    res_run_free(r);
    scn_free(s);
}

/* McMahan's shards: with 2 labels per device, each device's rows carry at
 * most 2 (sorted shards can straddle a label boundary: at most 2 + 2). */
Test(learn, label_partition_limits_labels)
{
    scn_scenario *s = load(world(8, 8, "learning: {partition: labels, labels_per_device: 2}\n"), NULL, 0);
    dp_err err = {0};
    lrn_cfg *c = NULL;
    cr_assert_eq(lrn_cfg_read(s, &c, &err), 0, "%s", err.msg);
    learner *L = lrn_new(c, s, 8, 5, &err);
    cr_assert(L);
    const ldata *D = lrn_data(L);
    size_t idx[180];
    for (size_t d = 0; d < 8; d++) {
        int seen[10] = {0}, labels = 0;
        cr_assert_eq(lrn_draw(L, d, 180, idx), 0);
        for (size_t i = 0; i < 180; i++)
            if (!seen[D->y_train[idx[i]]]++)
                labels++;
        cr_expect_leq(labels, 4, "device %zu reads %d labels", d, labels);
    }
    lrn_free(L);
    lrn_cfg_free(c);
    scn_free(s);
}

static void expect_refused(const char *learning, const char *what)
{
    dp_err err = {0};
    const char *text = world(2, 8, learning);
    scn_scenario *s = scn_load_string("bad.yaml", text, strlen(text), NULL, NULL, 0, &err);
    cr_assert(s, "%s", err.msg);
    lrn_cfg *c = NULL;
    cr_expect_eq(lrn_cfg_read(s, &c, &err), DP_EINPUT, "%s: accepted", learning);
    cr_expect(strstr(err.msg, what), "message '%s' lacks '%s'", err.msg, what);
    cr_expect(strstr(err.msg, "bad.yaml:"), "no FILE:LINE:COL in '%s'", err.msg);
    scn_free(s);
}

Test(learn, bad_input_is_refused_with_its_place)
{
    expect_refused("learning: {partition: shuffled}\n", "partition");
    expect_refused("learning: {model: cnn}\n", "model");
    expect_refused("learning: {targets: [1.5]}\n", "(0, 1]");
    expect_refused("learning: {targets: [0]}\n", "(0, 1]");
    expect_refused("learning: {data: /nonexistent/digits.csv}\n", "learning.data");
    expect_refused("learning: {datta: digits}\n", "datta");
    expect_refused("learning: {stop_at_target: true}\n", "targets");
    expect_refused("learning: {partition: labels, labels_per_device: 11}\n", "classes");
    expect_refused("learning: {lr: -1}\n", "lr");
}

Test(learn, csv_shape_errors_name_the_line)
{
    char path[] = "/tmp/dpsim-learn-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("0,1,2,1\n3,4,5,0\n6,7,1\n", f);
    fclose(f);
    dp_err err = {0};
    ldata *d = ldata_load(path, NULL, 0.2, &err);
    cr_expect_null(d);
    cr_expect_eq(err.code, DP_EINPUT);
    cr_expect(strstr(err.msg, ":3:"), "%s", err.msg);
    remove(path);
}

Test(learn, digits_shape)
{
    dp_err err = {0};
    ldata *d = ldata_load("digits", NULL, 0.2, &err);
    cr_assert(d, "%s", err.msg);
    cr_expect_eq(d->n_train, 1437);
    cr_expect_eq(d->n_test, 360);
    cr_expect_eq(d->dim, 64);
    cr_expect_eq(d->classes, 10);
    ldata_free(d);
}

/* An MPI sweep's worker sends its run to rank 0: the learning results
 * travel with it, bit for bit. */
Test(learn, learning_results_cross_the_wire)
{
    scn_scenario *s = load(world(4, 8, "learning: {lr: 0.5, targets: [0.8, 0.999]}\n"), NULL, 0);
    res_run *r = run_policy("localsgd", s), *back = NULL;
    uint8_t *b = NULL;
    size_t len = 0;
    dp_err e = {0};
    cr_assert_eq(sweep_wire_pack_run(r, &b, &len, &e), 0, "%s", e.msg);
    cr_assert_eq(sweep_wire_unpack_run(b, len, &back, &e), 0, "%s", e.msg);
    cr_assert_eq(back->n_evals, r->n_evals);
    cr_expect_eq(memcmp(back->evals, r->evals, r->n_evals * sizeof *r->evals), 0);
    cr_assert_eq(back->n_tta, 2);
    cr_expect_eq(back->tta_s[0], r->tta_s[0]);
    cr_expect(isnan(back->tta_s[1]) && isnan(r->tta_s[1]), "0.999 is not reached");
    cr_expect_str_eq(back->learn_source, "sgd");
    dp_free(b);
    res_run_free(back);
    res_run_free(r);
    scn_free(s);
}

/* A short pass's order, computed from the words of mt19937 it needs, is
 * GSL's own shuffle (learner.c "a pass's order"), for every length it
 * takes and many seeds (0: GSL's default seed), rejections included. */
Test(learn, short_pass_order_is_gsl_shuffle)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    cr_assert_not_null(r);
    int took = 0;
    for (size_t len = 2; len <= 80; len++)
        for (unsigned long s = 0; s < 300; s++) {
            unsigned long seed = s < 3 ? s : s * 0x9e3779b97f4a7c15ULL;
            size_t a[80], b[80];
            for (size_t i = 0; i < len; i++)
                a[i] = b[i] = i * 7 + 1;
            gsl_rng_set(r, seed);
            gsl_ran_shuffle(r, a, len, sizeof *a);
            if (lrn_test_pass_order(b, len, seed)) {
                for (size_t i = 0; i < len; i++)
                    cr_assert_eq(b[i], i * 7 + 1, "a pass it declines stays untouched");
                continue;
            }
            took++;
            for (size_t i = 0; i < len; i++)
                cr_assert_eq(a[i], b[i], "len %zu seed %lu: row %zu", len, seed, i);
        }
    cr_assert_gt(took, 60 * 300, "the short way took %d passes", took);
    gsl_rng_free(r);
}

/* The softmax kernels (lm_grad_sum, lm_grad_add, lm_eval) against GSL's
 * reference dgemm, bit for bit: logits, gradient sums of 1 to 5 rows, the
 * gradient added divided by counts that are and are not powers of two. */
Test(learn, softmax_kernels_are_dgemm_bits)
{
    const size_t dim = 13, K = 7, P = K * dim + K;
    lmodel m;
    dp_err err = {0};
    cr_assert_eq(lm_init(&m, LM_SOFTMAX, dim, K, 0, &err), 0);
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    double X[20 * 13], w[7 * 13 + 7], g[7 * 13 + 7], acc[7 * 13 + 7], ref[7 * 13 + 7], tmp[7 * 13 + 7];
    int y[20];
    for (size_t i = 0; i < 20 * dim; i++)
        X[i] = (i % 5 == 0) ? 0.0 : gsl_ran_gaussian(r, 1.0);
    for (size_t i = 0; i < 20; i++)
        y[i] = (int)(gsl_rng_uniform_int(r, K));
    for (size_t j = 0; j < P; j++)
        w[j] = gsl_ran_gaussian(r, 0.3);
    const size_t idx[5] = {3, 17, 0, 9, 3};
    for (size_t n = 1; n <= 5; n++) {
        /* the reference: the rows copied, logits and gradient through dgemm */
        double xb[5 * 13], z[5 * 7], gw[7 * 13], gb[7] = {0};
        for (size_t i = 0; i < n; i++)
            memcpy(xb + i * dim, X + idx[i] * dim, dim * sizeof *X);
        for (size_t i = 0; i < n; i++)
            memcpy(z + i * K, w + K * dim, K * sizeof *z);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, (int)K, (int)dim, 1.0, xb, (int)dim, w,
                    (int)dim, 1.0, z, (int)K);
        for (size_t i = 0; i < n; i++) {
            double mx = z[i * K], s = 0;
            for (size_t k = 1; k < K; k++)
                mx = z[i * K + k] > mx ? z[i * K + k] : mx;
            for (size_t k = 0; k < K; k++)
                s += z[i * K + k] = exp(z[i * K + k] - mx);
            for (size_t k = 0; k < K; k++)
                z[i * K + k] /= s;
            z[i * K + (size_t)y[idx[i]]] -= 1.0;
        }
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)K, (int)dim, (int)n, 1.0, z, (int)K, xb,
                    (int)dim, 0.0, gw, (int)dim);
        for (size_t i = 0; i < n; i++)
            for (size_t k = 0; k < K; k++)
                gb[k] += z[i * K + k];
        lm_grad_sum(&m, w, X, y, idx, n, g);
        cr_assert_eq(memcmp(g, gw, sizeof gw), 0, "n %zu: weights' gradient", n);
        cr_assert_eq(memcmp(g + K * dim, gb, sizeof gb), 0, "n %zu: biases' gradient", n);
        const double cs[] = {1, 2, 3, 8, 1437};
        for (size_t c = 0; c < 5; c++) {
            for (size_t j = 0; j < P; j++)
                acc[j] = ref[j] = 0.25 * (double)j - 3;
            for (size_t j = 0; j < P; j++)
                ref[j] += g[j] / cs[c];
            cr_assert_eq(lm_grad_add(&m, w, X, y, idx, n, cs[c], acc, tmp), 0);
            cr_assert_eq(memcmp(acc, ref, sizeof ref), 0, "n %zu, c %g: added", n, cs[c]);
        }
    }
    /* packed weights (lm_pack): the same gradients and evaluation */
    for (size_t n = 1; n <= 5; n++) {
        double g2[7 * 13 + 7];
        lm_grad_sum(&m, w, X, y, idx, n, g);
        cr_assert_eq(lm_pack(&m, w), 0);
        lm_grad_sum(&m, w, X, y, idx, n, g2);
        lm_unpack(&m);
        cr_assert_eq(memcmp(g, g2, sizeof g2), 0, "n %zu: packed", n);
    }
    double a1, l1, a2, l2;
    cr_assert_eq(lm_eval(&m, w, X, y, 20, &a1, &l1), 0);
    cr_assert_eq(lm_pack(&m, w), 0);
    cr_assert_eq(lm_eval(&m, w, X, y, 20, &a2, &l2), 0);
    lm_unpack(&m);
    cr_assert(a1 == a2 && l1 == l2, "packed evaluation");
    gsl_rng_free(r);
    lm_free(&m);
}
