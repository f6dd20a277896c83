/* test_efficiency.c: statistical efficiency (sim/learn/efficiency.h).
 * McCandlish's trade-off with a constant noise scale, AdaptDL's efficiency
 * formula (goodput.py), Pollux's CIFAR-10 traces (tests/data/pollux): a
 * trace's own statistics replayed at its batch give its measured
 * iterations, and how far statistics measured at batch 128 carry to 1,024
 * and 4,096 (printed, and held to the figures measured when this was
 * written so a change shows); the discounts, the curve, the scenario block
 * and its errors.  Every test checks the live-allocation counter. */
#include "learn/efficiency.h"
#include "scenario.h"
#include "yamltree.h"

#include <criterion/criterion.h>
#include "leaks.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long live0;
static char src[512];

static void setup(void)
{
    live0 = dp_alloc_live();
    const char *s = getenv("DPSIM_SRC");
    snprintf(src, sizeof src, "%s", s ? s : "..");
}

static void teardown(void)
{
    leaks_verify(live0);
}

TestSuite(efficiency, .init = setup, .fini = teardown);

static double rel(double a, double b)
{
    return fabs(a / b - 1);
}

/* ---- McCandlish et al. 2018: (S/S_min - 1)(E/E_min - 1) = 1 at B_noise = B_crit */

Test(efficiency, mccandlish_steps_and_examples_trade_off)
{
    const double Bc = 512, M0 = 32, P = 1e4; /* any reference batch: the ratios do not depend on it */
    eff_params *p = eff_params_new(M0, Bc);
    cr_assert(p);
    /* S_min: steps as B -> infinity (gain -> (Bc + M0) / M0); E_min: samples
     * as B -> 0 (gain / B -> (Bc + M0) / (Bc M0)) */
    double S_min = P * M0 / (Bc + M0), E_min = P * Bc * M0 / (Bc + M0);
    static const double ratio[] = {1.0 / 8, 1.0 / 4, 1.0 / 2, 1, 2, 4, 8};
    static const double want_S[] = {9, 5, 3, 2, 1.5, 1.25, 1.125};
    for (size_t k = 0; k < 7; k++) {
        double B = ratio[k] * Bc;
        eff_log *l = eff_log_new();
        for (int i = 0; i < 10; i++)
            cr_assert_eq(eff_log_sync(l, i, 1, B), 0);
        double per_step = eff_progress(p, l, 10) / 10; /* a replay, not the formula */
        double S = P / per_step, E = S * B;
        cr_expect(fabs(S / S_min - want_S[k]) < 1e-9, "B/Bc %g: S/S_min %.12g want %g", ratio[k], S / S_min,
                  want_S[k]);
        cr_expect(fabs(E / E_min - want_S[6 - k]) < 1e-9, "B/Bc %g: E/E_min %.12g want %g", ratio[k],
                  E / E_min, want_S[6 - k]);
        cr_expect(fabs(S / S_min - (1 + Bc / B)) < 1e-9 && fabs(E / E_min - (1 + B / Bc)) < 1e-9);
        eff_log_free(l);
    }
    eff_params_free(p);
}

/* ---- AdaptDL's goodput.py, GoodputFunction.efficiency ------------------- */

static double goodput_py_efficiency(double sqr, double var, double scale)
{
    double denom = var / scale + sqr;
    double gain = denom > 0 ? (var + sqr) / denom : 1.0;
    return gain / scale;
}

Test(efficiency, adaptdl_efficiency_formula)
{
    static const double stats[2][2] = {{8.947, 5.067}, {0.000880, 0.2657}};
    static const double scales[] = {1, 2, 8, 32};
    const double M0 = 128;
    for (int s = 0; s < 2; s++)
        for (int k = 0; k < 4; k++) {
            double sqr = stats[s][0], var = stats[s][1], B = M0 * var / sqr;
            double want = goodput_py_efficiency(sqr, var, scales[k]);
            double got = eff_efficiency(B, M0, scales[k] * M0);
            cr_expect(fabs(got - want) < 1e-12, "(%g, %g) x%g: %.17g want %.17g", sqr, var, scales[k], got,
                      want);
            cr_expect(fabs(eff_gain(B, M0, scales[k] * M0) - want * scales[k]) < 1e-12);
        }
    /* goodput.py's edge: var / scale + sqr = 0 gives gain 1 (B = 0 here) */
    cr_expect_eq(eff_gain(0, M0, 4 * M0), 1.0);
    cr_expect_eq(eff_gain(INFINITY, M0, 4 * M0), 4.0);
}

/* ---- Pollux's CIFAR-10 traces -------------------------------------------- */

#define TARGET_PROGRESS 39063.0 /* 100 epochs of 50,000 samples at batch 128 */

static eff_params *pollux(int batch)
{
    char path[700];
    snprintf(path, sizeof path, "%s/tests/data/pollux/cifar10/validation-%d.csv", src, batch);
    eff_params *p = eff_params_new(128, 0);
    dp_err err = {0};
    cr_assert(p);
    cr_assert_eq(eff_params_load_pollux(p, path, 1, &err), 0, "%s", err.msg);
    return p;
}

/* The file's measured iterations at a progress (linear between rows). */
static double measured_iterations(int batch, double progress)
{
    char path[700], line[256];
    snprintf(path, sizeof path, "%s/tests/data/pollux/cifar10/validation-%d.csv", src, batch);
    FILE *f = fopen(path, "r");
    cr_assert(f);
    double p0 = 0, i0 = 0, p, it, x[3], out = NAN;
    cr_assert(fgets(line, sizeof line, f));
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "%lf,%lf,%lf,%lf,%lf", &p, &it, &x[0], &x[1], &x[2]) == 5) {
            if (p >= progress) {
                out = i0 + (progress - p0) / (p - p0) * (it - i0);
                break;
            }
            p0 = p;
            i0 = it;
        }
    fclose(f);
    return out;
}

/* Synchronous steps at `batch` under p until the progress reaches the
 * target: the predicted iterations. */
static double predicted_iterations(const eff_params *p, int batch)
{
    eff_log *l = eff_log_new();
    size_t n = 50000;
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(eff_log_sync(l, (double)i, 1, batch), 0);
    double *prog = malloc(n * sizeof *prog);
    eff_progress_all(p, l, prog);
    double steps = NAN;
    for (size_t i = 0; i < n; i++)
        if (prog[i] >= TARGET_PROGRESS) {
            steps = (double)(i + 1);
            break;
        }
    free(prog);
    eff_log_free(l);
    return steps;
}

Test(efficiency, pollux_trace_replayed_at_its_own_batch)
{
    eff_params *p = pollux(1024);
    double pred = predicted_iterations(p, 1024), meas = measured_iterations(1024, TARGET_PROGRESS);
    printf("pollux cifar10: own statistics at 1024: %.0f iterations to progress %.0f, measured %.1f, error "
           "%+.2f%%\n",
           pred, TARGET_PROGRESS, meas, 100 * (pred / meas - 1));
    cr_expect(rel(pred, meas) < 0.03, "%g vs %g", pred, meas);
    eff_params_free(p);
    p = pollux(4096);
    pred = predicted_iterations(p, 4096);
    meas = measured_iterations(4096, TARGET_PROGRESS);
    printf("pollux cifar10: own statistics at 4096: %.0f iterations, measured %.1f, error %+.2f%%\n", pred,
           meas, 100 * (pred / meas - 1));
    cr_expect(rel(pred, meas) < 0.08);
    eff_params_free(p);
    /* 128 replayed at 128: progress is the step count (gain 1) */
    p = pollux(128);
    cr_expect_eq(predicted_iterations(p, 128), 39063.0);
    eff_params_free(p);
}

Test(efficiency, pollux_statistics_at_128_extrapolated)
{
    eff_params *p = pollux(128);
    static const int to[] = {1024, 4096};
    static const double when_written[] = {0.2065, 0.7201}; /* errors measured with this model */
    for (int k = 0; k < 2; k++) {
        double pred = predicted_iterations(p, to[k]), meas = measured_iterations(to[k], TARGET_PROGRESS);
        double e = pred / meas - 1;
        printf(
            "pollux cifar10: statistics at 128 predict %.0f iterations at %d, measured %.1f: error %+.1f%% "
            "(extrapolation x%d)\n",
            pred, to[k], meas, 100 * e, to[k] / 128);
        cr_expect(fabs(e - when_written[k]) < 0.005, "error %g, was %g", e, when_written[k]);
    }
    eff_params_free(p);
}

Test(efficiency, pollux_noise_from_the_trace)
{
    eff_params *p = pollux(128);
    /* row 0 (epoch 1): sqr 8.947307535897329, var 5.066593295150894 */
    double B0 = 128 * 5.066593295150894 / 8.947307535897329;
    cr_expect(rel(eff_noise_at(p, 0, 0), B0) < 1e-15);
    cr_expect(rel(eff_noise_at(p, 390.9, 0), B0) < 1e-15);
    cr_expect(rel(eff_noise_at(p, 391, 0), 128 * 1.5924912096114732 / 1.895227805639273) < 1e-15);
    cr_expect(rel(eff_noise_at(p, 1e9, 0), 128 * 0.2656905672841092 / 0.0008797251757316566) < 1e-15);
    /* the curve is the metric column */
    cr_expect_eq(eff_metric(p, 391), 0.4455);
    cr_expect(fabs(eff_metric(p, 586.5) - (0.4455 + 0.6007) / 2) < 1e-12);
    cr_expect_eq(eff_metric(p, 1e9), 0.9448);
    eff_params_free(p);
}

/* ---- the discounts -------------------------------------------------------- */

Test(efficiency, staleness_drift_and_participation)
{
    const double M0 = 16, B = 100;
    eff_params *p = eff_params_new(M0, B);
    eff_log *l = eff_log_new();
    cr_assert_eq(eff_log_async(l, 1, 1, 16, 3), 0);
    cr_assert_eq(eff_log_local(l, 2, 1, 8, 64, 0.5), 0);
    cr_assert_eq(eff_log_local(l, 3, 1, 2.5, 32, 1), 0);
    eff_params_set_discounts(p, 0.5, 0.1, 1);
    double g64 = eff_gain(B, M0, 64), g32 = eff_gain(B, M0, 32);
    cr_expect(fabs(eff_progress(p, l, 1) - pow(4, -0.5)) < 1e-15);
    double two = 0.5 + 8 * g64 / (1 + 0.1 * 7) * 0.5;
    cr_expect(fabs(eff_progress(p, l, 2) - two) < 1e-12);
    cr_expect(fabs(eff_progress(p, l, 3) - (two + 2.5 * g32 / (1 + 0.1 * 1.5))) < 1e-12);
    /* off: no discount, H steps at the global batch, no rho */
    eff_params_set_discounts(p, 0, 0, 0);
    cr_expect(fabs(eff_progress(p, l, 3) - (1 + 8 * g64 + 2.5 * g32)) < 1e-12);
    /* local SGD with H = 1 is synchronous SGD */
    eff_log *a = eff_log_new(), *b = eff_log_new();
    eff_params_set_discounts(p, 0, 0.3, 0);
    for (int i = 0; i < 5; i++) {
        eff_log_sync(a, i, 1, 48);
        eff_log_local(b, i, 1, 1, 48, 1);
    }
    cr_expect(fabs(eff_progress(p, a, 5) - eff_progress(p, b, 5)) < 1e-12);
    eff_log_free(a);
    eff_log_free(b);
    eff_log_free(l);
    eff_params_free(p);
}

Test(efficiency, a_local_average_over_trace_rows_steps_through_them)
{
    /* H steps of one local record equal H synchronous steps when psi = 1
     * (kappa 0), whatever rows of the trace they cross */
    eff_params *p = pollux(128);
    eff_log *a = eff_log_new(), *b = eff_log_new();
    for (int i = 0; i < 3000; i++)
        eff_log_sync(a, i, 1, 256);
    eff_log_local(b, 0, 1, 3000, 256, 1);
    cr_expect(rel(eff_progress(p, a, 3000), eff_progress(p, b, 1)) < 1e-9, "%.17g vs %.17g",
              eff_progress(p, a, 3000), eff_progress(p, b, 1));
    eff_log_free(a);
    eff_log_free(b);
    eff_params_free(p);
}

Test(efficiency, curve_time_to_and_epochs)
{
    eff_params *p = eff_params_new(10, 0); /* B = 0: every step is worth 1 */
    static const double cp[] = {0, 10, 20}, cm[] = {0.1, 0.5, 0.7};
    cr_assert_eq(eff_params_set_curve(p, cp, cm, 3), 0);
    eff_log *l = eff_log_new();
    for (int i = 0; i < 30; i++)
        eff_log_sync(l, 2.0 * i, i / 10 + 1, 40);
    cr_expect(fabs(eff_metric(p, 15) - 0.6) < 1e-15);
    cr_expect_eq(eff_metric(p, -1), 0.1);
    cr_expect_eq(eff_metric(p, 99), 0.7);
    cr_expect_eq(eff_time_to(p, l, 0.5), 18.0); /* the 10th step, at t = 18 */
    cr_expect(isnan(eff_time_to(p, l, 0.8)));
    cr_expect(fabs(eff_metric_at_epoch(p, l, 1) - 0.5) < 1e-15);
    cr_expect(fabs(eff_metric_at_epoch(p, l, 2) - 0.7) < 1e-15);
    cr_expect(isnan(eff_metric_at_epoch(p, l, 4)));
    /* per-epoch noise: epoch 1 at B = 0 (gain 1), epoch 2 on at B = inf (gain 4) */
    static const double bn[] = {0, INFINITY};
    cr_assert_eq(eff_params_set_noise_epochs(p, bn, 2), 0);
    cr_expect_eq(eff_progress(p, l, 30), 10 + 20 * 4.0);
    /* bad records */
    cr_expect_eq(eff_log_sync(l, 1, 3, 4), DP_EINPUT);   /* before the last */
    cr_expect_eq(eff_log_sync(l, 100, 2, 4), DP_EINPUT); /* an epoch before the last */
    cr_expect_eq(eff_log_sync(l, 100, 0, 4), DP_EINPUT); /* epochs count from 1 */
    cr_expect_eq(eff_log_sync(l, 100, 3, 0), DP_EINPUT);
    cr_expect_eq(eff_log_local(l, 100, 3, 2, 4, 1.5), DP_EINPUT);
    cr_expect_eq(eff_log_async(l, 100, 3, 4, -1), DP_EINPUT);
    cr_expect_eq(eff_log_len(l), 30u);
    eff_log_free(l);
    eff_params_free(p);
}

/* ---- the scenario block ---------------------------------------------------- */

static scn_scenario *with_learning(const char *block, dp_err *err)
{
    char path[700];
    snprintf(path, sizeof path, "%s/scenarios/tiny.yaml", src);
    size_t len = 0;
    char *text = dp_read_file(path, "scenario", 1 << 20, &len, err);
    cr_assert(text, "%s", err->msg);
    size_t bl = strlen(block);
    char *all = malloc(len + bl + 2);
    memcpy(all, text, len);
    memcpy(all + len, block, bl + 1);
    dp_free(text);
    char dir[700];
    snprintf(dir, sizeof dir, "%s/tests", src);
    scn_scenario *s = scn_load_string("learn.yaml", all, len + bl, dir, NULL, 0, err);
    free(all);
    return s;
}

static int read_block(const char *block, eff_params **p, dp_err *err)
{
    scn_scenario *s = with_learning(block, err);
    cr_assert(s, "%s", err->msg);
    int r = eff_params_read(s, yt_get(scn_learning(s), "efficiency"), "learning.efficiency", p, err);
    scn_free(s);
    return r;
}

Test(efficiency, reads_the_scenario_block)
{
    dp_err err = {0};
    eff_params *p = NULL;
    cr_assert_eq(read_block("learning:\n  efficiency:\n    reference_batch: 64\n    noise_scale: 300\n"
                            "    staleness_exponent: 0.5\n    drift: 0.01\n    participation: true\n"
                            "    curve: [[0, 0.1], [1000, 0.6]]\n",
                            &p, &err),
                 0, "%s", err.msg);
    cr_expect_eq(eff_params_m0(p), 64);
    cr_expect_eq(eff_params_noise(p), 300);
    cr_expect_eq(eff_params_a(p), 0.5);
    cr_expect_eq(eff_params_kappa(p), 0.01);
    cr_expect_eq(eff_params_use_rho(p), 1);
    cr_expect(fabs(eff_metric(p, 500) - 0.35) < 1e-15);
    eff_params_free(p);
    /* a trace relative to the scenario's folder (tests/) */
    cr_assert_eq(read_block("learning:\n  efficiency:\n    reference_batch: 128\n"
                            "    noise_trace: data/pollux/cifar10/validation-128.csv\n",
                            &p, &err),
                 0, "%s", err.msg);
    cr_expect_eq(eff_params_noise_kind(p), EFF_BN_TRACE);
    cr_expect_eq(eff_params_curve_len(p), 100u);
    eff_params_free(p);
    cr_assert_eq(read_block("learning:\n  efficiency:\n    reference_batch: 8\n    noise_scale: [1, 2, 3]\n"
                            "    curve: [[0, 0.1]]\n",
                            &p, &err),
                 0, "%s", err.msg);
    cr_expect_eq(eff_params_noise_kind(p), EFF_BN_EPOCH);
    cr_expect_eq(eff_noise_at(p, 0, 7), 3);
    eff_params_free(p);
}

Test(efficiency, refuses_bad_blocks_naming_the_place)
{
    static const struct {
        const char *block, *want;
    } bad[] = {
        {"learning:\n  efficiency:\n    noise_scale: 3\n    curve: [[0, 1]]\n",
         "reference_batch is required"},
        {"learning:\n  efficiency:\n    reference_batch: 8\n    noise_scale: -3\n    curve: [[0, 1]]\n",
         "learn.yaml:37:18: learning.efficiency.noise_scale"},
        {"learning:\n  efficiency:\n    reference_batch: 8\n    curve: [[0, 1]]\n", "exactly one of"},
        {"learning:\n  efficiency:\n    reference_batch: 8\n    noise_scale: 1\n",
         "a reference curve is needed"},
        {"learning:\n  efficiency:\n    reference_batch: 8\n    noise_scale: 1\n    curve: [[5, 1], [2, "
         "2]]\n",
         "learn.yaml:38:22: learning.efficiency.curve: progress must be >= 0 and increase"},
        {"learning:\n  efficiency:\n    reference_batch: 8\n    noise_scale: [1, x]\n    curve: [[0, 1]]\n",
         "learn.yaml:37:22: learning.efficiency.noise_scale: expected a number (got x)"},
        {"learning:\n  efficiency:\n    reference_batch: 8\n    noise_trace: data/empty.csv\n",
         "learning.efficiency.noise_trace: "},
        {"learning:\n  efficiency:\n    reference_batch: 8\n    noise_trace: data/nope.csv\n", "nope.csv"},
        {"learning:\n  efficiency:\n    reference_batch: 8\n    noise_scale: 1\n    curve: [[0, 1]]\n    "
         "drfit: 1\n",
         "drift"},
        {"learning:\n  efficiency:\n    reference_batch: 8\n    noise_scale: 1\n    curve: [[0, 1]]\n"
         "    staleness_exponent: -1\n",
         "learning.efficiency.staleness_exponent"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        dp_err err = {0};
        eff_params *p = (eff_params *)1;
        cr_expect_eq(read_block(bad[k].block, &p, &err), DP_EINPUT, "case %zu", k);
        cr_expect_null(p, "case %zu", k);
        cr_expect(strstr(err.msg, bad[k].want), "case %zu: '%s' lacks '%s'", k, err.msg, bad[k].want);
    }
}

/* ---- the fit (sim/calib/effit.h) ------------------------------------------ */

#include "calib/effit.h"

/* n epochs of a schedule: per epoch `steps` records (sync at M, or local
 * averages of H steps at M), one second each. */
static eff_log *schedule(int epochs, int steps, double H, double M)
{
    eff_log *l = eff_log_new();
    double t = 0;
    for (int e = 0; e < epochs; e++)
        for (int i = 0; i < steps; i++)
            cr_assert_eq(H > 0 ? eff_log_local(l, ++t, e + 1, H, M, 1) : eff_log_sync(l, ++t, e + 1, M), 0);
    return l;
}

Test(efficiency, the_fit_recovers_what_made_its_points)
{
    static const double cp[] = {0, 300, 700, 1200}, truth_m[] = {0.1, 0.5, 0.7, 0.8};
    eff_params *truth = eff_params_new(64, 500);
    eff_params_set_discounts(truth, 0, 0.05, 0);
    cr_assert_eq(eff_params_set_curve(truth, cp, truth_m, 4), 0);
    /* three schedules of about 10,000 samples an epoch: batch 64, batch 512, local SGD H = 8 at 256 */
    eff_log *lg[3] = {schedule(8, 156, 0, 64), schedule(8, 19, 0, 512), schedule(8, 5, 8, 256)};
    effit_point pts[24];
    char labels[24][16];
    for (int s = 0; s < 3; s++)
        for (int e = 1; e <= 8; e++) {
            effit_point *pt = &pts[s * 8 + e - 1];
            snprintf(labels[s * 8 + e - 1], 16, "s%d@%d", s, e);
            *pt = (effit_point){labels[s * 8 + e - 1], lg[s], 0, e, 0, 1};
            pt->metric = effit_predict(truth, pt);
        }
    /* start away from the truth */
    eff_params *start = eff_params_copy(truth);
    eff_params_set_noise(start, 50);
    eff_params_set_discounts(start, 0, 0.3, 0);
    static const double m0[] = {0.1, 0.3, 0.4, 0.9};
    cr_assert_eq(eff_params_set_curve(start, cp, m0, 4), 0);
    effit_spec sp = {.start = start,
                     .free = EFFIT_NOISE | EFFIT_KAPPA | EFFIT_CURVE | EFFIT_A,
                     .curve_fixed = 1,
                     .n_points = 24,
                     .points = pts};
    effit_result r;
    dp_err err = {0};
    cr_assert_eq(effit_run(&sp, &r, &err), 0, "%s", err.msg);
    printf("fit: B %g (truth 500), kappa %g (0.05), curve %g %g %g, cost %g, band %g\n",
           eff_params_noise(r.fit), eff_params_kappa(r.fit), eff_params_curve_metric(r.fit, 1),
           eff_params_curve_metric(r.fit, 2), eff_params_curve_metric(r.fit, 3), r.cost, r.band);
    cr_expect(rel(eff_params_noise(r.fit), 500) < 1e-3);
    cr_expect(fabs(eff_params_kappa(r.fit) - 0.05) < 1e-5);
    for (int k = 1; k < 4; k++)
        cr_expect(fabs(eff_params_curve_metric(r.fit, k) - truth_m[k]) < 1e-5);
    cr_expect(r.cost < 1e-12);
    /* no asynchronous push: nothing pins a */
    cr_expect_eq(r.undetermined[1], 1, "%s", r.name[1]);
    cr_expect_eq(r.undetermined[0] | r.undetermined[2], 0);
    /* the regime of a prediction at batch 4096 from fits at 64..512 */
    eff_log *big = schedule(1, 3, 0, 4096), *mid = schedule(1, 40, 0, 256);
    cr_expect(fabs(effit_extrapolation(pts, 24, big) - 8) < 1e-12);
    cr_expect_eq(effit_extrapolation(pts, 24, mid), 1);
    eff_log_free(big);
    eff_log_free(mid);
    /* a point the log does not reach */
    effit_point far = {"s0@10", lg[0], 0, 10, 0.9, 1};
    sp.points = &far;
    sp.n_points = 1;
    effit_result r2;
    cr_expect_eq(effit_run(&sp, &r2, &err), DP_EINPUT);
    cr_expect(strstr(err.msg, "s0@10: the schedule's log does not reach epoch 10"), "%s", err.msg);
    effit_result_free(&r);
    eff_params_free(start);
    eff_params_free(truth);
    for (int s = 0; s < 3; s++)
        eff_log_free(lg[s]);
}

/* ---- the update stream's tap (sim/learn/efficiency_tap.h) ----------------- */

#include "learn/efficiency_tap.h"

Test(efficiency, the_tap_logs_what_the_stream_combined)
{
    eff_log *l = eff_log_new();
    eff_tap *t = eff_tap_new(l, 3);
    cr_assert(t);
    /* synchronous: the members' waiting samples in one update */
    eff_tap_step(t, 0, 64);
    eff_tap_step(t, 1, 16);
    cr_expect_eq(eff_tap_sync(t, 1, 1, NULL, 0), 0);
    cr_expect_eq(eff_tap_sync(t, 2, 1, NULL, 0), 0); /* nothing waiting: nothing logged */
    cr_assert_eq(eff_log_len(l), 1u);
    cr_expect_eq(eff_log_kind(l, 0), EFF_SYNC);
    cr_expect_eq(eff_log_samples(l, 0), 80);
    /* asynchronous: d's samples at its staleness */
    eff_tap_mode_set(t, EFF_TAP_ASYNC);
    eff_tap_step(t, 2, 8);
    eff_tap_step(t, 2, 8);
    cr_expect_eq(eff_tap_push(t, 3, 1, 2, 5), 0);
    cr_assert_eq(eff_log_len(l), 2u);
    cr_expect_eq(eff_log_kind(l, 1), EFF_ASYNC);
    cr_expect_eq(eff_log_samples(l, 1), 16);
    /* local: a site's average logs nothing, the global one all steps since */
    eff_tap_mode_set(t, EFF_TAP_LOCAL);
    for (int i = 0; i < 4; i++)
        eff_tap_step(t, 0, 64);
    eff_tap_step(t, 1, 16);
    eff_tap_step(t, 1, 16);
    size_t site[] = {0, 1};
    cr_expect_eq(eff_tap_average(t, 4, 2, site, 2, 0), 0);
    cr_expect_eq(eff_log_len(l), 2u);
    cr_expect_eq(eff_tap_average(t, 5, 2, NULL, 0, 1), 0);
    cr_assert_eq(eff_log_len(l), 3u);
    cr_expect_eq(eff_log_kind(l, 2), EFF_LOCAL);
    cr_expect_eq(eff_log_batch(l, 2), 80);         /* M_step = 64 + 16 */
    cr_expect_eq(eff_log_samples(l, 2), 256 + 32); /* H x M_step */
    /* rho = 2 of 3: with use_rho the progress is 2/3 of H gain(80) */
    eff_params *p = eff_params_new(16, 0);
    eff_params_set_discounts(p, 0, 0, 1);
    cr_expect(fabs(eff_progress(p, l, 3) - eff_progress(p, l, 2) - 3.6 * 1 * 2.0 / 3) < 1e-12);
    /* FL-SGD's background average: the steps up to begin, averaged at end */
    eff_tap_step(t, 0, 10);
    cr_expect_eq(eff_tap_average_begin(t, NULL, 0), 0);
    eff_tap_step(t, 0, 10);
    eff_tap_step(t, 0, 10);
    cr_expect_eq(eff_tap_average_end(t, 6, 2, NULL, 0), 0);
    cr_assert_eq(eff_log_len(l), 4u);
    cr_expect_eq(eff_log_samples(l, 3), 10);
    cr_expect_eq(eff_tap_average(t, 7, 3, NULL, 0, 1), 0);
    cr_assert_eq(eff_log_len(l), 5u);
    cr_expect_eq(eff_log_samples(l, 4), 20);
    /* lost work logs nothing */
    eff_tap_step(t, 1, 16);
    eff_tap_lose(t, 1);
    cr_expect_eq(eff_tap_average(t, 8, 3, NULL, 0, 1), 0);
    cr_expect_eq(eff_log_len(l), 5u);
    /* a record going back in time is refused */
    eff_tap_step(t, 1, 16);
    cr_expect_eq(eff_tap_average(t, 1, 3, NULL, 0, 1), DP_EINPUT);
    eff_params_free(p);
    eff_tap_free(t);
    eff_log_free(l);
}

Test(efficiency, a_tapped_one_device_ddp_is_its_serial_steps)
{
    eff_log *a = eff_log_new(), *b = eff_log_new();
    eff_tap *t = eff_tap_new(b, 1);
    for (int i = 0; i < 20; i++) {
        eff_log_sync(a, i, 1 + i / 10, 64);
        eff_tap_step(t, 0, 64);
        eff_tap_sync(t, i, 1 + i / 10, NULL, 0);
    }
    eff_params *p = eff_params_new(32, 500);
    cr_expect_eq(eff_progress(p, a, 20), eff_progress(p, b, 20));
    eff_params_free(p);
    eff_tap_free(t);
    eff_log_free(a);
    eff_log_free(b);
}

/* ---- cross-check with the learner (issue: fit two schedules, predict a third) */

#include "cli/runlog.h"
#include "run/runner.h"
#include "policy/policy.h"

/* One policy's run of tests/data/learn-digits8.yaml with overrides. */
static res_run *digits_run(const char *policy, const scn_override *ov, size_t n_ov)
{
    char path[700];
    snprintf(path, sizeof path, "%s/tests/data/learn-digits8.yaml", src);
    dp_err err = {0};
    scn_scenario *s = scn_load_file(path, ov, n_ov, &err);
    cr_assert(s, "%s", err.msg);
    const policy_def *pk[1] = {policy_find(policy)};
    res_run *r = NULL;
    int64_t id = 0;
    cr_assert_eq(runner_run(s, pk, 1, s->training.seed, NULL, NULL, 0, &r, &id, &err), 0, "%s", err.msg);
    scn_free(s);
    cr_assert(r->learn_log, "%s: the runtime logged no updates", policy);
    return r;
}

Test(efficiency, fitted_on_two_learner_curves_it_predicts_a_third, .timeout = 120)
{
    static const scn_override h8 = {"policies.localsgd.steps", "8"}, h32 = {"policies.localsgd.steps", "32"};
    res_run *run[3] = {digits_run("ddp", NULL, 0), digits_run("localsgd", &h8, 1),
                       digits_run("localsgd", &h32, 1)};
    static const char *const name[3] = {"ddp", "localsgd H=8", "localsgd H=32"};
    char path[700];
    snprintf(path, sizeof path, "%s/tests/data/learn-digits8.yaml", src);
    dp_err err = {0};
    scn_scenario *s = scn_load_file(path, NULL, 0, &err);
    eff_params *start = NULL;
    cr_assert_eq(
        eff_params_read(s, yt_get(scn_learning(s), "efficiency"), "learning.efficiency", &start, &err), 0,
        "%s", err.msg);
    scn_free(s);
    /* points: the learner's test accuracy at every epoch end of the first two */
    effit_point pts[64];
    char labels[64][32];
    size_t np = 0;
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < run[k]->n_evals && np < 64; i++)
            if (run[k]->evals[i].epochs >= 1) {
                snprintf(labels[np], sizeof labels[0], "%s@%d", name[k], run[k]->evals[i].epoch);
                pts[np] = (effit_point){
                    labels[np], run[k]->learn_log, 0, run[k]->evals[i].epoch, run[k]->evals[i].test_acc, 1};
                np++;
            }
    effit_spec sp = {.start = start,
                     .free = EFFIT_NOISE | EFFIT_KAPPA | EFFIT_CURVE,
                     .curve_fixed = 1,
                     .n_points = np,
                     .points = pts};
    effit_result r;
    cr_assert_eq(effit_run(&sp, &r, &err), 0, "%s", err.msg);
    double worst = 0, sum = 0;
    int n = 0;
    for (size_t i = 0; i < run[2]->n_evals; i++)
        if (run[2]->evals[i].epochs >= 1) {
            double pred = eff_metric_at_epoch(r.fit, run[2]->learn_log, run[2]->evals[i].epoch);
            double e = pred - run[2]->evals[i].test_acc;
            worst = fmax(worst, fabs(e));
            sum += fabs(e);
            n++;
        }
    printf(
        "cross-check on digits: fitted on ddp and localsgd H=8 (%zu points; B %.4g, kappa %.4g, band +-%.2f "
        "points), localsgd H=32 predicted over %d epochs: mean |error| %.2f points, worst %.2f "
        "(extrapolation "
        "x%.3g in batch)\n",
        np, eff_params_noise(r.fit), eff_params_kappa(r.fit), 100 * r.band, n, 100 * sum / n, 100 * worst,
        effit_extrapolation(pts, np, run[2]->learn_log));
    cr_expect(n == 20 && isfinite(worst));
    effit_result_free(&r);
    eff_params_free(start);
    for (int k = 0; k < 3; k++)
        res_run_free(run[k]);
}
