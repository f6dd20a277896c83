/* cmd_run.c: dpsim run SCENARIO: simulate policies, print, store. */
#include "cli/cli.h"
#include "cli/report.h"
#include "jobs/jobs.h"
#include "run/runner.h"
#include "policy/policy.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static void help(void)
{
    printf("usage: dpsim run SCENARIO [options]\n\n"
           "Simulate scheduling policies event by event on the scenario's world and\n"
           "print, per policy, Tsend, Ttraining, Ttotal, TFLOPS as the paper counts\n"
           "it (flops_per_sample x samples / Ttraining), cluster utilisation, and a\n"
           "per-device breakdown.  Each run is stored in the results database as one\n"
           "transaction.  SCENARIO may be a file or builtin:paper-testbed.\n\n"
           "  -p, --policy LIST     policies to run, comma-separated, or all (default: all\n"
           "                        that apply to the scenario; --policy all also says\n"
           "                        which were left out and why; the policies and their\n"
           "                        options are listed below)\n"
           "  -d, --db FILE         results database (default results.db)\n"
           "      --no-db           do not store the results\n"
           "      --seed N          random seed (default: the scenario's training.seed)\n"
           "      --no-fast-forward simulate every epoch, even those proven to repeat (same\n"
           "                        results; docs/MODEL.md \"Steady state\")\n"
           "  -s, --set KEY=VALUE   override a scenario value, e.g.\n"
           "                          --set policies.ddp.bucket=50MiB\n"
           "                          --set policies.cadp.solver=alm\n"
           "                          --set devices.cpu4.link.down=20Mbps\n"
           "                        (policy options: below and scenarios/README.md)\n"
           "      --json            print JSON instead of tables on stdout (shape:\n"
           "                        sim/store/JSON.md); progress stays on stderr (-q: none)\n"
           "  -q, --quiet           print the summary table only, no progress\n"
           "      --all             list every device in the per-device breakdown (past 50\n"
           "                        devices it shows the first 10 and each figure's min,\n"
           "                        median and max)\n"
           "      --log CAT[:LEVEL] diagnostic lines on stderr stamped with simulated time;\n"
           "                        CAT: engine, net, policy, solver, store or all; LEVEL:\n"
           "                        error, warn, info (default), debug, trace (repeatable)\n"
           "  -h, --help            this help\n\n"
           "Long runs show their progress on stderr (simulated time, the estimated end,\n"
           "events/s, ETA): redrawn on a terminal, a line every 5 s otherwise.\n"
           "Options take their value as --opt VALUE or --opt=VALUE; short ones bundle (-qp ddp).\n\n"
           "A policy whose run fails does not stop the others: its message goes to stderr,\n"
           "its row says failed, --json leaves it out, and the exit code is 1 (2 if its\n"
           "options were bad input).\n\n"
           "Exit codes: 0 ok, 1 the run failed (stall, database error), 2 bad input.\n\n"
           "Policies (scenario key policies.NAME.OPTION, or --set):\n");
    policy_print_help(stdout);
}

int cli_parse_u64(const char *s, uint64_t *out)
{
    if (!s || !*s || *s == '-')
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

typedef struct run_args {
    const char *plist;
    int all; /* --all: every device in the breakdown */
    int have_seed;
    uint64_t seed;
} run_args;

enum { K_SEED = 0x2000, K_NO_FF, K_ALL };

static int on_opt(void *ctx, int key, const char *arg, const char *label)
{
    run_args *a = ctx;
    if (key == 'p') {
        a->plist = arg;
    } else if (key == K_SEED) {
        if (cli_parse_u64(arg, &a->seed))
            return cli_usage_error("run", "--seed needs a non-negative integer (got '%s')", arg);
        a->have_seed = 1;
    } else if (key == K_NO_FF) {
        policy_set_fast_forward(0);
    } else if (key == K_ALL) {
        a->all = 1;
    } else {
        return cli_usage_error("run", "unknown option '%s'", label);
    }
    return -1;
}

int cmd_run(int argc, char **argv)
{
    static const struct option own[] = {{"policy", required_argument, NULL, 'p'},
                                        {"seed", required_argument, NULL, K_SEED},
                                        {"no-fast-forward", no_argument, NULL, K_NO_FF},
                                        {"all", no_argument, NULL, K_ALL},
                                        {NULL, 0, NULL, 0}};
    run_args a = {0};
    cli_opts o = {0};
    int rc =
        cli_parse(argc, argv, "run", CLI_O_DB | CLI_O_NODB | CLI_O_JSON | CLI_O_QUIET | CLI_O_SET | CLI_O_LOG,
                  own, "p:", on_opt, &a, help, &o);
    if (rc >= 0)
        goto out;
    rc = EXIT_OK;
    if (o.n_pos != 1) {
        rc = o.n_pos
                 ? cli_usage_error("run", "one scenario at a time (got '%s' and '%s')", o.pos[0], o.pos[1])
                 : cli_usage_error("run", "missing SCENARIO");
        goto out;
    }
    const char *file = o.pos[0], *db = o.db, *plist = a.plist;
    int json = o.json, quiet = o.quiet, have_seed = a.have_seed;
    uint64_t seed = a.seed;
    const scn_override *ov = o.ov;
    const char *const *ov_text = o.ov_text;
    size_t n_ov = o.n_ov;
    dp_err err = {0};
    const policy_def *pk[POLICY_MAX];
    int np = runner_parse_policies(plist, pk, POLICY_MAX, &err);
    if (np < 0) {
        rc = cli_fail(&err);
        goto out;
    }
    scn_scenario *s = cli_load_scenario(file, ov, n_ov, &err);
    if (!s) {
        rc = cli_fail(&err);
        goto out;
    }
    if (jobs_in(s)) { /* many jobs: their own command (sim/jobs/) */
        char ep[1024];
        scn_free(s);
        rc = cli_usage_error("run", "%s has jobs: run it with `dpsim jobs %s`", dp_esc(ep, sizeof ep, file),
                             file);
        goto out;
    }
    if (!have_seed)
        seed = s->training.seed;
    /* all: those that can run this scenario; which were left out, and why,
     * only when asked for by name (--policy all), not on every default run */
    if (!plist || !strcmp(plist, "all"))
        np = policy_keep_applicable(s, pk, (size_t)np, plist ? stderr : NULL);
    cli_catch_interrupts();
    cli_progress_init(quiet); /* --json is stdout's format: progress stays on stderr */
    store *st = NULL;
    if (db && !(st = store_open(db, 0, &err))) {
        scn_free(s);
        rc = cli_fail(&err);
        goto out;
    }
    store_set_invocation(st, cli_invocation_id());
    res_run *runs[POLICY_MAX] = {0};
    int64_t ids[POLICY_MAX] = {0};
    /* a policy that fails does not hide the others: its message is on
     * stderr already, the others run, and the exit code says it (rr > 0);
     * an interrupt or the database stops at once (rr < 0) */
    int failed_exit = 0;
    int rr = runner_run_each(s, pk, (size_t)np, seed, st, ov_text, n_ov, runs, ids, &failed_exit, &err);
    if (json) {
        json_buf *j = json_new();
        report_json_begin(j, s->name);
        for (int k = 0; k < np; k++)
            if (runs[k])
                report_json_run(j, runs[k], ov_text, n_ov);
        report_json_end(j);
        if (rr >= 0)
            printf("%s\n", json_text(j));
        json_free(j);
    } else {
        char en[256], ep[1024];
        printf("%s (%s): %zu devices, %lld samples, %d epochs, seed %llu\n\n", dp_esc(en, sizeof en, s->name),
               dp_esc(ep, sizeof ep, s->path), s->n_devices, (long long)s->dataset.samples,
               s->training.epochs, (unsigned long long)seed);
        dp_table *t = report_table_new();
        for (int k = 0; k < np; k++)
            if (runs[k]) {
                report_table_add(t, runs[k], ids[k]);
            } else if (rr > 0) {
                char line[96];
                snprintf(line, sizeof line, "%-12s failed (the message is on stderr)", policy_name(pk[k]));
                dp_table_note(t, line);
            }
        dp_table_print(t, stdout);
        dp_table_free(t);
        report_learning(stdout, runs, np);
        int first = 1; /* what C-ADP planned against what the run gave; epochs skipped */
        for (int k = 0; k < np; k++)
            if (runs[k] && (report_plan(NULL, runs[k]) || report_fast_forward(NULL, runs[k]))) {
                if (first)
                    printf("\n");
                first = 0;
                report_plan(stdout, runs[k]);
                report_fast_forward(stdout, runs[k]);
            }
        if (!quiet)
            for (int k = 0; k < np; k++)
                if (runs[k]) {
                    printf("\n");
                    report_devices(stdout, runs[k], a.all);
                    report_stats(stdout, runs[k]);
                }
        if (st && rr >= 0 && rr < np)
            printf("\nstored in %s\n", dp_esc(ep, sizeof ep, db));
    }
    if (json && st && rr >= 0 && rr < np) {
        char ed[1024];
        fprintf(stderr, "dpsim: stored in %s\n", dp_esc(ed, sizeof ed, db));
    }
    for (int k = 0; k < np; k++)
        res_run_free(runs[k]);
    store_close(st);
    scn_free(s);
    if (rr < 0)
        rc = cli_fail(&err);
    else if (rr > 0)
        rc = failed_exit;
out:
    cli_opts_free(&o);
    return rc;
}
