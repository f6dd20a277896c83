/* cmd_run.c: dpsim run SCENARIO: simulate policies, print, store. */
#include "cli/cli.h"
#include "cli/report.h"
#include "cli/runner.h"

#include <errno.h>
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
           "  -p, --policy LIST     policies to run, comma-separated, or all (default all;\n"
           "                        the policies and their options are listed below)\n"
           "  -d, --db FILE         results database (default results.db)\n"
           "      --no-db           do not store the results\n"
           "      --seed N          random seed (default: the scenario's training.seed)\n"
           "  -s, --set KEY=VALUE   override a scenario value, e.g.\n"
           "                          --set policies.ddp.bucket=50MiB\n"
           "                          --set policies.cadp.solver=alm\n"
           "                          --set devices.cpu4.link.down=20Mbps\n"
           "                        (policy options: below and scenarios/README.md)\n"
           "      --json            print a JSON array of runs instead of tables\n"
           "  -q, --quiet           print the summary table only\n"
           "  -h, --help            this help\n\n"
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

int cmd_run(int argc, char **argv)
{
    const char *file = NULL, *db = "results.db", *plist = NULL;
    int json = 0, quiet = 0, have_seed = 0;
    uint64_t seed = 0;
    scn_override ov[64];
    const char *ov_text[64];
    char *ov_copy[64];
    size_t n_ov = 0;
    int rc = EXIT_OK;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (cli_is_help(a)) {
            help();
            goto out;
        } else if (!strcmp(a, "-p") || !strcmp(a, "--policy")) {
            if (++i >= argc) {
                rc = cli_usage_error("run", "%s needs a list", a);
                goto out;
            }
            plist = argv[i];
        } else if (!strcmp(a, "-d") || !strcmp(a, "--db")) {
            if (++i >= argc) {
                rc = cli_usage_error("run", "%s needs a file", a);
                goto out;
            }
            db = argv[i];
        } else if (!strcmp(a, "--no-db")) {
            db = NULL;
        } else if (!strcmp(a, "--seed")) {
            if (++i >= argc || cli_parse_u64(argv[i], &seed)) {
                rc = cli_usage_error("run", "--seed needs a non-negative integer (got '%s')",
                                     i < argc ? argv[i] : "");
                goto out;
            }
            have_seed = 1;
        } else if (!strcmp(a, "-s") || !strcmp(a, "--set")) {
            if (++i >= argc || n_ov == 64) {
                rc = cli_usage_error("run", "%s needs KEY=VALUE (at most 64)", a);
                goto out;
            }
            ov_text[n_ov] = argv[i];
            ov_copy[n_ov] = dp_strdup(argv[i]);
            if (!ov_copy[n_ov] || cli_parse_override(ov_copy[n_ov], &ov[n_ov])) {
                dp_free(ov_copy[n_ov]);
                rc = cli_usage_error("run", "bad override '%s' (want KEY=VALUE)", argv[i]);
                goto out;
            }
            n_ov++;
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            quiet = 1;
        } else if (a[0] == '-' && a[1]) {
            rc = cli_usage_error("run", "unknown option '%s'", a);
            goto out;
        } else if (file) {
            rc = cli_usage_error("run", "one scenario at a time (got '%s' and '%s')", file, a);
            goto out;
        } else {
            file = a;
        }
    }
    if (!file) {
        rc = cli_usage_error("run", "missing SCENARIO");
        goto out;
    }
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
    if (!have_seed)
        seed = s->training.seed;
    if (!plist || !strcmp(plist, "all")) /* all: those that can run this scenario */
        np = policy_keep_applicable(s, pk, (size_t)np, stderr);
    cli_catch_interrupts();
    store *st = NULL;
    if (db && !(st = store_open(db, 0, &err))) {
        scn_free(s);
        rc = cli_fail(&err);
        goto out;
    }
    res_run *runs[POLICY_MAX] = {0};
    int64_t ids[POLICY_MAX] = {0};
    int rr = runner_run(s, pk, (size_t)np, seed, st, ov_text, n_ov, runs, ids, &err);
    if (json) {
        json_buf *j = json_new();
        json_arr_begin(j);
        for (int k = 0; k < np; k++)
            if (runs[k])
                report_json_run(j, runs[k]);
        json_arr_end(j);
        if (rr == 0)
            printf("%s\n", json_text(j));
        json_free(j);
    } else {
        char en[256], ep[1024];
        printf("%s (%s): %zu devices, %lld samples, %d epochs, seed %llu\n\n", dp_esc(en, sizeof en, s->name),
               dp_esc(ep, sizeof ep, s->path), s->n_devices, (long long)s->dataset.samples,
               s->training.epochs, (unsigned long long)seed);
        report_table_header(stdout);
        for (int k = 0; k < np; k++)
            if (runs[k])
                report_table_row(stdout, runs[k], ids[k]);
        int first = 1; /* what C-ADP planned against what the run gave */
        for (int k = 0; k < np; k++)
            if (runs[k] && report_plan(NULL, runs[k])) {
                if (first)
                    printf("\n");
                first = 0;
                report_plan(stdout, runs[k]);
            }
        if (!quiet)
            for (int k = 0; k < np; k++)
                if (runs[k]) {
                    printf("\n");
                    report_devices(stdout, runs[k]);
                    report_stats(stdout, runs[k]);
                }
        if (st && rr == 0)
            printf("\nstored in %s\n", dp_esc(ep, sizeof ep, db));
    }
    if (json && st && rr == 0) {
        char ed[1024];
        fprintf(stderr, "dpsim: stored in %s\n", dp_esc(ed, sizeof ed, db));
    }
    for (int k = 0; k < np; k++)
        res_run_free(runs[k]);
    store_close(st);
    scn_free(s);
    if (rr)
        rc = cli_fail(&err);
out:
    for (size_t k = 0; k < n_ov; k++)
        dp_free(ov_copy[k]);
    return rc;
}
