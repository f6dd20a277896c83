/* test_adacoopt.c: AdaCoOpt's decision by hand (sim/policy/adacoopt.h; the
 * formulas of the authors' adaptive_tau.py) on three clients, its refusal
 * without learning, bad options, and a run that learns. */
#include <criterion/criterion.h>

#include "learner.h"
#include "policy/adacoopt.h"
#include "policy/policy.h"
#include "test_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* D = 100, 200, 300; eta 0.1; beta 2, rho 1.2, c 0.5, delta 1; F0 2;
 * tau x s = 60; speeds 25, 110, 1000 samples/s; 1 s a round.  By hand,
 * q = 0.95, sum D^2 / D^2 = 140000 / 360000:
 *   tau 1: s 60, h 0:        0.95 x 2 + 2 x 0.01 x 140000 / (0.05 x 2 x 360000 x 60) = 1.9012962962962963
 *   tau 2: s 30, h 0.02:     0.9025 x 2 + 0.0025925925925926 + 1.2 x 0.02           = 1.8315925925925924
 *   tau 3: s 20, h 0.064:    0.857375 x 2 + 0.0038888888888889 + 1.2 x 0.064        = 1.7954388888888884
 *   tau 4: s 15, h 0.1368:   0.81450625 x 2 + 0.0051851851851852 + 1.2 x 0.1368     = 1.7983576851851848
 *   tau 5: s 12, h 0.24416:  0.7737809375 x 2 + 0.0064814814814815 + 1.2 x 0.24416  = 1.8470353564814808
 * (h = (delta / beta)((1 + eta beta)^tau - 1) - delta eta tau): tau 3, s 20.
 * The split of 3 x 20 = 60: caps floor(1 / 3 x speed) = 8, 36, 333;
 * first pass 60 x 100 / 600 = 10 > 8: client 0 capped at 8, 52 left;
 * then 52 x 200 / 500 = 20 and 52 x 300 / 500 = 31 (59 given); the one
 * left goes to the larger D^2 / (b (b + 1)): 40000 / 420 = 95.2 against
 * 90000 / 992 = 90.7: 8, 21, 31. */
Test(adacoopt, three_clients_by_hand)
{
    double D[3] = {100, 200, 300}, speed[3] = {25, 110, 1000};
    aco_in in = {.n = 3,
                 .D = D,
                 .eta = 0.1,
                 .tau_max = 5,
                 .budget = 60,
                 .first_loss = 2,
                 .beta = 2,
                 .rho = 1.2,
                 .c = 0.5,
                 .delta = 1,
                 .has_est = 1,
                 .tau_prev = 1,
                 .speed = speed,
                 .round_time = 1};
    static const double want[5] = {1.9012962962962963, 1.8315925925925924, 1.7954388888888884,
                                   1.7983576851851848, 1.8470353564814808};
    for (int t = 1; t <= 5; t++)
        cr_expect(fabs(aco_gap(&in, t) - want[t - 1]) < 1e-9, "tau %d: gap %.17g, by hand %.17g", t,
                  aco_gap(&in, t), want[t - 1]);
    int tau, s, b[3];
    aco_decide(&in, &tau, &s, b);
    cr_expect_eq(tau, 3);
    cr_expect_eq(s, 20);
    cr_expect(b[0] == 8 && b[1] == 21 && b[2] == 31, "split %d %d %d", b[0], b[1], b[2]);
    /* no caps: in proportion to D, 10 / 20 / 30 */
    in.round_time = 0;
    aco_decide(&in, &tau, &s, b);
    cr_expect(b[0] == 10 && b[1] == 20 && b[2] == 30, "uncapped split %d %d %d", b[0], b[1], b[2]);
    /* no estimate yet: tau stays, s = budget / tau */
    in.has_est = 0;
    in.tau_prev = 4;
    aco_decide(&in, &tau, &s, b);
    cr_expect(tau == 4 && s == 15, "first round: tau %d s %d", tau, s);
}

static const char *WORLD = "name: aco\n"
                           "model: {name: softmax, params: 650, flops_per_sample: 1300}\n"
                           "dataset: {samples: 1437, sample_bytes: 64B}\n"
                           "training: {epochs: 4, seed: 5}\n"
                           "server: {nic: {up: 1Gbps, down: 1Gbps}}\n"
                           "devices:\n"
                           "  - {name: w, count: 4, kind: cpu, memory: 1GiB, batch: 8, batch_time: 10ms,\n"
                           "     link: {up: 100Mbps, down: 100Mbps, latency: 5ms}}\n";

Test(adacoopt, refuses_without_learning_and_bad_options)
{
    char buf[2048];
    dp_err err = {0};
    scn_scenario *s = load(WORLD, NULL, 0);
    cr_expect_eq(policy_check_scenario(s, &err), 0, "%s", err.msg); /* checked only when it runs */
    res_run *r = policy_run(policy_find("adacoopt"), s, 5, &err);
    cr_expect(!r && err.code == DP_EINPUT && strstr(err.msg, "learning"), "%s", err.msg);
    res_run_free(r);
    scn_free(s);
    snprintf(buf, sizeof buf, "%spolicies: {adacoopt: {tau_max: 0}}\nlearning: {data: digits}\n", WORLD);
    s = load(buf, NULL, 0);
    err = (dp_err){0};
    cr_expect_eq(policy_check_scenario(s, &err), DP_EINPUT);
    cr_expect(strstr(err.msg, "test.yaml:9:") && strstr(err.msg, "tau_max"), "%s", err.msg);
    scn_free(s);
    snprintf(buf, sizeof buf, "%spolicies: {adacoopt: {tau: 3}}\nlearning: {data: digits}\n", WORLD);
    s = load(buf, NULL, 0);
    err = (dp_err){0};
    cr_expect_eq(policy_check_scenario(s, &err), DP_EINPUT);
    cr_expect(strstr(err.msg, "test.yaml:9:") && strstr(err.msg, "tau"), "%s", err.msg);
    scn_free(s);
}

Test(adacoopt, learns_on_digits)
{
    char buf[2048];
    snprintf(buf, sizeof buf,
             "%slearning: {data: digits, partition: labels, labels_per_device: 3, lr: 0.5}\n", WORLD);
    scn_scenario *s = load(buf, NULL, 0);
    dp_err err = {0};
    res_run *r = policy_run(policy_find("adacoopt"), s, 5, &err);
    cr_assert(r, "%s", err.msg);
    cr_expect(r->evals[r->n_evals - 1].test_acc > 0.85, "final accuracy %g",
              r->evals[r->n_evals - 1].test_acc);
    const res_stat *t = res_find_stat(r, "adacoopt.tau_mean", RES_SCOPE_RUN, 0, 0);
    cr_expect(t && t->value >= 1 && t->value <= 10, "tau mean %g", t ? t->value : -1);
    res_run_free(r);
    scn_free(s);
}

/* A probe reads a device's next rows without consuming them: a stream
 * with probes in it (some across a pass's end) steps exactly as one
 * without. */
Test(adacoopt, probes_leave_the_data_stream_alone)
{
    char buf[2048];
    snprintf(buf, sizeof buf, "%slearning: {data: digits, partition: iid}\n", WORLD);
    scn_scenario *s = load(buf, NULL, 0);
    dp_err err = {0};
    lrn_cfg *cfg = NULL;
    cr_assert_eq(lrn_cfg_read(s, &cfg, &err), 0, "%s", err.msg);
    learner *L[2];
    for (int i = 0; i < 2; i++) {
        L[i] = lrn_new(cfg, s, 4, 5, &err);
        cr_assert(L[i]);
        cr_assert_eq(lrn_set_mode(L[i], LRN_LOCAL), 0);
    }
    size_t P = lrn_n_params(L[1]);
    double *g = malloc(P * sizeof *g), loss;
    for (int r = 0; r < 200; r++)
        for (int i = 0; i < 2; i++) {
            for (size_t d = 0; d < 4; d++) {
                if (i == 1)
                    cr_assert_eq(lrn_probe(L[1], d, r % 2, 50, g, &loss), 0);
                cr_assert_eq(lrn_step(L[i], r, 1, d, 7), 0);
            }
            if (r % 5 == 4)
                lrn_average(L[i], r, 1, NULL, 4, 1, 1);
        }
    cr_expect(memcmp(lrn_weights(L[0], NULL), lrn_weights(L[1], NULL), P * sizeof(double)) == 0);
    free(g);
    lrn_free(L[0]);
    lrn_free(L[1]);
    lrn_cfg_free(cfg);
    scn_free(s);
}
