/* cmd_calibrate.c: dpsim calibrate SCENARIO --fit ... --target ...: fit
 * unknown scenario values to measured figures (sim/calib/calib.h), print
 * the fit, store it, write the calibrated scenario. */
#include "calib/calib.h"
#include "cli/calib_acc.h"
#include "cli/cli.h"
#include "dpsim_config.h"

#include <getopt.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

static void help(void)
{
    printf("usage: dpsim calibrate SCENARIO --fit KEY=LO..HI[:log] ... --target POLICY.METRIC=VALUE[:WEIGHT] "
           "...\n"
           "                       [--set KEY=VALUE] [--set-for POLICY:KEY=VALUE] [--out FILE]\n"
           "                       [--db FILE | --no-db] [--starts N] [--seed N] [--quiet]\n\n"
           "Find the values of unknown scenario parameters, within plausible bounds, that\n"
           "make the simulation reproduce measured figures.  Minimises the sum over the\n"
           "targets of weight x (simulated / measured - 1)^2 with GSL's trust-region\n"
           "least squares (parameters kept inside their bounds by a logistic transform,\n"
           "forward-difference Jacobian), from N Latin-hypercube starts; keeps the best.\n"
           "Prints each target (wanted, fitted, ratio), each parameter (value, bounds,\n"
           "AT BOUND when the optimum sits on a bound: some target cannot be reached\n"
           "inside the plausible range), and the sensitivity d log(target) / d log(param)\n"
           "at the optimum.  Stores the fit in the results database (table calibrations)\n"
           "and, with --out, writes the calibrated scenario with a header saying how each\n"
           "value was obtained.  SCENARIO may be a file or builtin:paper-testbed.\n\n"
           "  -f, --fit KEYS=LO..HI[:log]  a free parameter: KEYS one override key (as for\n"
           "                        --set) or several, comma separated, that share one\n"
           "                        value; bounds with units on both ends or neither\n"
           "                        (10Mbps..1Gbps, 0.24s..0.58s, 0.1..0.9); :log searches\n"
           "                        in log space.  Repeat for each parameter.\n"
           "  -t, --target POLICY.METRIC=VALUE[:WEIGHT]  a measured figure: METRIC one of\n"
           "                        tsend_s ttraining_s ttotal_s tflops utilization\n"
           "                        samples_processed bytes_total, VALUE in its unit, WEIGHT\n"
           "                        default 1.  Repeat for each figure.\n"
           "  -s, --set KEY=VALUE   fix a scenario value (also written into --out)\n"
           "      --set-for POLICY:KEY=VALUE  an override for POLICY's runs while fitting\n"
           "                        only, to make evaluations cheap (e.g.\n"
           "                        ddp:training.epochs=1 when only DDP's Tsend is\n"
           "                        targeted); the reported figures come from full runs,\n"
           "                        and the fit fails if a shortcut changed one of them\n"
           "  -o, --out FILE        write the calibrated scenario (every fitted key must be\n"
           "                        a plain value in the scenario file)\n"
           "  -d, --db FILE         results database (default results.db)\n"
           "      --no-db           do not store the fit\n"
           "      --starts N        starting points (default 4, at most 64)\n"
           "      --seed N          seed of the starting design (default 1)\n"
           "  -q, --quiet           no progress on stderr\n"
           "  -h, --help            this help\n\n"
           "Example (the paper's Table 3; see README \"Calibrating to your measurements\"):\n"
           "  dpsim calibrate builtin:paper-testbed \\\n"
           "    --fit devices.rtx3090.link.up,devices.rtx3090.link.down=10Mbps..1Gbps:log \\\n"
           "    --fit devices.rtx3090.batch_time=0.24s..0.58s \\\n"
           "    --target cadp.ttotal_s=12915.28 --target cadp.tflops=8.95 ...\n"
           "(the full command, and what it finds, are in the README).\n\n");
    printf("Accuracy (statistical efficiency, docs/MODEL.md section 10):\n"
           "  dpsim calibrate SCENARIO --accuracy POLICY@EPOCH=ACC ... [--predict POLICY]...\n"
           "                       [--accuracy-fit noise_scale,staleness_exponent,drift,curve]\n"
           "fits the scenario's learning.efficiency (its values are the start, its curve's\n"
           "points after the first are fitted) to measured accuracies of the policies'\n"
           "runs, replaying each run's updates; prints the residuals, the fitted values\n"
           "(AT BOUND, UNDETERMINED), an error band (2 residual standard deviations, only\n"
           "with more points than free values) and, for each --predict, its accuracy by\n"
           "epoch and whether its batch lies inside the fitted runs' range (interpolation)\n"
           "or outside (extrapolation, far less reliable).  Not stored.\n"
           "      --accuracy POLICY@EPOCH=ACC[:WEIGHT]  a measured accuracy at the end of an\n"
           "                        epoch (or POLICY@TIMEs=ACC at a simulated time); ACC a\n"
           "                        fraction or a percentage (70.56%%).  Repeat.\n"
           "      --accuracy-fit LIST  the values to fit (default noise_scale,drift,curve)\n"
           "      --predict POLICY  predict this policy's accuracy from the fit (repeat)\n"
           "  Each run's updates are logged by the runtime (every policy).\n\n"
           "Exit codes: 0 ok, 1 a simulation or the database failed, 2 bad input.\n");
}

typedef struct progress {
    int quiet, tty;
    unsigned last_start;
    double t0;
} progress;

static void on_progress(void *ctx, unsigned start, unsigned n_starts, long evals, double best)
{
    progress *pg = ctx;
    if (pg->quiet)
        return;
    if (pg->tty) {
        fprintf(stderr, "\rcalibrate: start %u/%u, %ld simulations, best cost %.4g, %.0f s   ", start + 1,
                n_starts, evals, best, cli_wall_s() - pg->t0);
    } else if (start != pg->last_start || evals == 1 || evals % 100 == 0) { /* a log: a line now and then */
        fprintf(stderr, "calibrate: start %u/%u, %ld simulations, best cost %.4g\n", start + 1, n_starts,
                evals, best);
    }
    pg->last_start = start;
    fflush(stderr);
}

static void print_fit(const calib_problem *p, const calib_result *r, double wall)
{
    const scn_scenario *s = calib_scenario(p);
    size_t np = calib_n_params(p), nt = calib_n_targets(p);
    printf("calibrated %s (%s): %zu parameters, %zu targets\n\n", s->name, s->path, np, nt);
    printf("  %-24s %14s %14s %9s %7s\n", "target", "wanted", "fitted", "ratio", "weight");
    for (size_t k = 0; k < nt; k++)
        printf("  %-24s %14.6g %14.6g %9.4f %7g\n", calib_target_label(p, k), calib_target_value(p, k),
               r->fitted[k], r->ratio[k], calib_target_weight(p, k));
    printf("\n  %-4s %-18s %-28s %s\n", "", "value", "bounds", "keys");
    for (size_t i = 0; i < np; i++) {
        char v[64], lo[64], hi[64], b[160];
        calib_param_text(p, i, r->value[i], v, sizeof v);
        calib_param_text(p, i, calib_param_lo(p, i), lo, sizeof lo);
        calib_param_text(p, i, calib_param_hi(p, i), hi, sizeof hi);
        snprintf(b, sizeof b, "%s..%s%s", lo, hi, calib_param_log(p, i) ? " (log)" : "");
        printf("  p%-3zu %-18s %-28s %s%s\n", i + 1, v, b, calib_param_label(p, i),
               r->at_bound[i] < 0   ? "  AT BOUND (low)"
               : r->at_bound[i] > 0 ? "  AT BOUND (high)"
               : r->undetermined[i] ? "  UNDETERMINED"
                                    : "");
    }
    int any = 0, flat = 0;
    for (size_t i = 0; i < np; i++) {
        any |= r->at_bound[i] != 0;
        flat |= r->undetermined[i];
    }
    if (any)
        printf("  AT BOUND: the best fit wants this value beyond its plausible range; the\n"
               "  targets it drives cannot all be reached inside the bounds.\n");
    if (flat)
        printf("  UNDETERMINED: no target moves with this value at the fit (sensitivities\n"
               "  below %g), so the targets do not pin it: it is where the solver stopped.\n",
               CALIB_FLAT);
    printf("\n  sensitivity d log(target) / d log(parameter) at the fit\n  %-24s", "");
    for (size_t i = 0; i < np; i++)
        printf(" %8s%zu", "p", i + 1);
    printf("\n");
    for (size_t k = 0; k < nt; k++) {
        printf("  %-24s", calib_target_label(p, k));
        for (size_t i = 0; i < np; i++)
            printf(" %9.4f", r->sens[k][i]);
        printf("\n");
    }
    printf("\ncost (weighted sum of squared relative errors) %.6g; %ld simulations of the\n"
           "targets' policies from %u starts (best: start %u) in %.1f s\n",
           r->cost, r->evaluations, r->starts, r->best_start + 1, wall);
}

enum { K_SET_FOR = 0x2000, K_STARTS, K_SEED, K_ACC, K_ACC_FIT, K_PREDICT };

typedef struct calib_args {
    calib_spec *sp;
    const char *out;
    calib_acc_args acc;
} calib_args;

static int on_opt(void *ctx, int key, const char *arg, const char *label)
{
    calib_args *ca = ctx;
    calib_spec *sp = ca->sp;
    uint64_t v = 0;
    switch (key) {
    case 'o':
        ca->out = arg;
        break;
    case 'f':
        if (sp->n_fit == CALIB_MAX_PARAMS)
            return cli_usage_error("calibrate", "at most %d --fit", CALIB_MAX_PARAMS);
        sp->fit[sp->n_fit++] = arg;
        break;
    case 't':
        if (sp->n_target == CALIB_MAX_TARGETS)
            return cli_usage_error("calibrate", "at most %d --target", CALIB_MAX_TARGETS);
        sp->target[sp->n_target++] = arg;
        break;
    case K_SET_FOR:
        if (sp->n_for == CALIB_MAX_SETS)
            return cli_usage_error("calibrate", "at most %d --set-for", CALIB_MAX_SETS);
        sp->set_for[sp->n_for++] = arg;
        break;
    case K_STARTS:
        if (cli_parse_u64(arg, &v) || v < 1 || v > CALIB_MAX_STARTS)
            return cli_usage_error("calibrate", "--starts wants 1 to %d (got '%s')", CALIB_MAX_STARTS, arg);
        sp->starts = (unsigned)v;
        break;
    case K_ACC:
        if (ca->acc.n_points == CALIB_ACC_MAX)
            return cli_usage_error("calibrate", "at most %d --accuracy", CALIB_ACC_MAX);
        ca->acc.points[ca->acc.n_points++] = arg;
        break;
    case K_PREDICT:
        if (ca->acc.n_predict == CALIB_ACC_MAX)
            return cli_usage_error("calibrate", "at most %d --predict", CALIB_ACC_MAX);
        ca->acc.predict[ca->acc.n_predict++] = arg;
        break;
    case K_ACC_FIT:
        ca->acc.fit = arg;
        break;
    case K_SEED:
        if (cli_parse_u64(arg, &sp->seed) || sp->seed == 0)
            return cli_usage_error("calibrate", "--seed wants a positive integer (got '%s')", arg);
        break;
    default:
        return cli_usage_error("calibrate", "unknown option '%s'", label);
    }
    return -1;
}

int cmd_calibrate(int argc, char **argv)
{
    calib_spec sp = {0};
    const char *db, *out = NULL;
    int quiet;
    static const struct option own[] = {
        {"fit", required_argument, NULL, 'f'},           {"target", required_argument, NULL, 't'},
        {"set-for", required_argument, NULL, K_SET_FOR}, {"out", required_argument, NULL, 'o'},
        {"starts", required_argument, NULL, K_STARTS},   {"seed", required_argument, NULL, K_SEED},
        {"accuracy", required_argument, NULL, K_ACC},    {"accuracy-fit", required_argument, NULL, K_ACC_FIT},
        {"predict", required_argument, NULL, K_PREDICT}, {NULL, 0, NULL, 0}};
    calib_args ca = {&sp, NULL, {0}};
    cli_opts o = {0};
    int prc = cli_parse(argc, argv, "calibrate", CLI_O_DB | CLI_O_NODB | CLI_O_QUIET | CLI_O_SET | CLI_O_LOG,
                        own, "f:t:o:", on_opt, &ca, help, &o);
    if (prc >= 0) {
        cli_opts_free(&o);
        return prc;
    }
    if (o.n_pos > 1) {
        int rc = cli_usage_error("calibrate", "unexpected argument '%s'", o.pos[1]);
        cli_opts_free(&o);
        return rc;
    }
    sp.scenario = o.n_pos ? o.pos[0] : NULL;
    if (ca.acc.n_points || ca.acc.n_predict || ca.acc.fit) {
        int rc;
        if (!ca.acc.n_points)
            rc = cli_usage_error("calibrate", "--predict and --accuracy-fit want at least one --accuracy");
        else if (sp.n_fit || sp.n_target || ca.out)
            rc = cli_usage_error("calibrate",
                                 "--accuracy fits the accuracy model alone: drop --fit, --target, --out");
        else if (!sp.scenario)
            rc = cli_usage_error("calibrate", "which scenario? (a file or builtin:paper-testbed)");
        else {
            ca.acc.scenario = sp.scenario;
            ca.acc.ov = o.ov;
            ca.acc.n_ov = o.n_ov;
            rc = calibrate_accuracy(&ca.acc);
        }
        cli_opts_free(&o);
        return rc;
    }
    out = ca.out;
    db = o.db;
    quiet = o.quiet;
    if (o.n_ov > CALIB_MAX_SETS) {
        cli_opts_free(&o);
        return cli_usage_error("calibrate", "at most %d --set", CALIB_MAX_SETS);
    }
    for (size_t k = 0; k < o.n_ov; k++)
        sp.set[sp.n_set++] = o.ov_text[k]; /* borrowed from argv: outlives o */
    cli_opts_free(&o);
    if (!sp.scenario)
        return cli_usage_error("calibrate", "which scenario? (a file or builtin:paper-testbed)");
    if (!sp.n_fit || !sp.n_target)
        return cli_usage_error("calibrate", "want at least one --fit and one --target");
    dp_err err = {0};
    calib_problem *p = calib_new(&sp, &err);
    if (!p)
        return cli_fail(&err);
    char started[32];
    cli_now_iso(started, sizeof started);
    store *st = NULL;
    if (db && !(st = store_open(db, 0, &err))) {
        calib_free(p);
        return cli_fail(&err);
    }
    cli_catch_interrupts();
    progress pg = {quiet, isatty(2), 0, cli_wall_s()};
    const calib_result *r = NULL;
    int rc = calib_fit(p, on_progress, &pg, &r, &err);
    if (!quiet)
        fprintf(stderr, pg.tty ? "\n" : "calibrate: done\n");
    if (!rc) {
        print_fit(p, r, cli_wall_s() - pg.t0);
        int64_t id = 0;
        if (st && !(rc = calib_store(p, r, st, DPSIM_VERSION, started, &id, &err)))
            printf("stored as calibration #%lld in %s\n", (long long)id, db);
    }
    if (!rc && out && !(rc = calib_write_scenario(p, r, out, &err)))
        printf("wrote the calibrated scenario to %s\n", out);
    calib_free(p);
    store_close(st);
    return rc ? cli_fail(&err) : EXIT_OK;
}
