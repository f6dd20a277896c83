/* cmd_db.c: dpsim runs | show | export: reading the results database. */
#include "cli/cli.h"
#include "cli/report.h"
#include "policy/policy.h"
#include "store/store.h"

#include <stdlib.h>
#include <string.h>

static int need_arg(int *i, int argc, char **argv, const char *cmd, const char **out)
{
    if (++*i >= argc)
        return cli_usage_error(cmd, "%s needs a value", argv[*i - 1]);
    *out = argv[*i];
    return 0;
}

int cmd_runs(int argc, char **argv)
{
    const char *db = "results.db", *scen = NULL, *pol = NULL;
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            printf("usage: dpsim runs [--db FILE] [--scenario NAME] [--policy NAME]\n\n"
                   "List the runs stored in a results database, oldest first: id, start time,\n"
                   "scenario, policy, seed, status, Tsend, Ttraining, Ttotal (s), TFLOPS.\n\n"
                   "  -d, --db FILE        results database (default results.db)\n"
                   "      --scenario NAME  only runs of this scenario\n"
                   "  -p, --policy NAME    only runs of this policy\n");
            return EXIT_OK;
        }
        int rc = 0;
        if (!strcmp(argv[i], "-d") || !strcmp(argv[i], "--db"))
            rc = need_arg(&i, argc, argv, "runs", &db);
        else if (!strcmp(argv[i], "--scenario"))
            rc = need_arg(&i, argc, argv, "runs", &scen);
        else if (!strcmp(argv[i], "-p") || !strcmp(argv[i], "--policy"))
            rc = need_arg(&i, argc, argv, "runs", &pol);
        else
            return cli_usage_error("runs", "unexpected argument '%s'", argv[i]);
        if (rc)
            return rc;
    }
    dp_err err = {0};
    store *st = store_open_read(db, &err);
    if (!st)
        return cli_fail(&err);
    int rc = store_list_runs(st, stdout, scen, pol, &err);
    store_close(st);
    return rc ? cli_fail(&err) : EXIT_OK;
}

/* Arguments of a command on one stored run: RUN [--db FILE] [--json].
 * json may be NULL when the command has no --json.  Returns -1 when the
 * arguments are fine (id and db set), else the exit code (help printed: 0;
 * bad usage: 2). */
static int run_args(int argc, char **argv, const char *cmd, const char *help, const char **db, int64_t *id,
                    int *json)
{
    const char *id_s = NULL;
    *db = "results.db";
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            fputs(help, stdout);
            return EXIT_OK;
        }
        if (!strcmp(argv[i], "-d") || !strcmp(argv[i], "--db")) {
            int rc = need_arg(&i, argc, argv, cmd, db);
            if (rc)
                return rc;
        } else if (json && !strcmp(argv[i], "--json")) {
            *json = 1;
        } else if (argv[i][0] == '-' || id_s) {
            return cli_usage_error(cmd, "unexpected argument '%s'", argv[i]);
        } else {
            id_s = argv[i];
        }
    }
    uint64_t v;
    if (!id_s || cli_parse_u64(id_s, &v) || v == 0 || v > INT64_MAX)
        return cli_usage_error(cmd, "RUN must be a run id as listed by 'dpsim runs' (got '%s')",
                               id_s ? id_s : "");
    *id = (int64_t)v;
    return -1;
}

int cmd_show(int argc, char **argv)
{
    const char *db;
    int64_t rid;
    int json = 0;
    int ra = run_args(argc, argv, "show",
                      "usage: dpsim show RUN [--db FILE] [--json]\n\n"
                      "Print a stored run again: its overrides, options, the trace files kept\n"
                      "with it, its summary row and per-device breakdown (or, with --json, the\n"
                      "same object `dpsim run --json` prints).\n\n"
                      "  -d, --db FILE   results database (default results.db)\n"
                      "      --json      JSON output\n",
                      &db, &rid, &json);
    if (ra >= 0)
        return ra;
    uint64_t id = (uint64_t)rid;
    dp_err err = {0};
    store *st = store_open_read(db, &err);
    if (!st)
        return cli_fail(&err);
    res_run *r = NULL;
    char *text = NULL, *name = NULL, *policy = NULL, **ovs = NULL;
    size_t n_ovs = 0;
    uint64_t seed = 0;
    int rc = store_get_run(st, (int64_t)id, &r, &err);
    if (!rc)
        rc = store_get_run_source(st, (int64_t)id, &text, &name, &ovs, &n_ovs, &policy, &seed, &err);
    if (!rc) {
        if (json) {
            json_buf *j = json_new();
            report_json_run(j, r);
            printf("%s\n", json_text(j));
            json_free(j);
        } else {
            char en[256], ep[64], eo[1024];
            printf("run #%llu: %s, policy %s, seed %llu", (unsigned long long)id, dp_esc(en, sizeof en, name),
                   dp_esc(ep, sizeof ep, policy), (unsigned long long)seed);
            for (size_t k = 0; k < n_ovs; k++)
                printf("%s%s", k ? ", " : ", overrides: ", dp_esc(eo, sizeof eo, ovs[k]));
            printf("\noptions: %s\n", dp_esc(eo, sizeof eo, r->options_json ? r->options_json : "{}"));
            scn_file *files = NULL;
            size_t n_files = 0;
            rc = store_get_run_files(st, (int64_t)id, &files, &n_files, &err);
            for (size_t k = 0; !rc && k < n_files; k++) {
                char ef[300];
                printf("trace kept: %s (%zu bytes, hash %016llx, ", dp_esc(ef, sizeof ef, files[k].name),
                       files[k].len, (unsigned long long)files[k].hash);
                printf("read from %s)\n", dp_esc(ef, sizeof ef, files[k].path));
            }
            printf("\n");
            store_files_free(files, n_files);
            report_table_header(stdout);
            report_table_row(stdout, r, (long long)id);
            printf("\n");
            if (report_plan(stdout, r))
                printf("\n");
            report_devices(stdout, r);
            report_stats(stdout, r);
        }
    }
    res_run_free(r);
    dp_free(text);
    dp_free(name);
    dp_free(policy);
    store_strings_free(ovs, n_ovs);
    store_close(st);
    return rc ? cli_fail(&err) : EXIT_OK;
}

int cmd_export(int argc, char **argv)
{
    const char *db = "results.db", *dir = "export";
    int csv = 0;
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            printf("usage: dpsim export --csv [--db FILE] [--out DIR]\n\n"
                   "Write every table of the results database as DIR/TABLE.csv (RFC 4180):\n"
                   "scenarios, sweeps, runs, run_devices, run_epochs, run_flops, run_segments,\n"
                   "run_stats, calibrations, run_files (the trace files each run read; their\n"
                   "contents stay in the database).\n\n"
                   "  -d, --db FILE   results database (default results.db)\n"
                   "  -o, --out DIR   output directory (default export/)\n"
                   "      --csv       CSV format (the only one)\n");
            return EXIT_OK;
        }
        int rc = 0;
        if (!strcmp(argv[i], "-d") || !strcmp(argv[i], "--db"))
            rc = need_arg(&i, argc, argv, "export", &db);
        else if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--out"))
            rc = need_arg(&i, argc, argv, "export", &dir);
        else if (!strcmp(argv[i], "--csv"))
            csv = 1;
        else
            return cli_usage_error("export", "unexpected argument '%s'", argv[i]);
        if (rc)
            return rc;
    }
    if (!csv)
        return cli_usage_error("export", "say the format: --csv");
    dp_err err = {0};
    store *st = store_open_read(db, &err);
    if (!st)
        return cli_fail(&err);
    int rc = store_export_csv(st, dir, &err);
    store_close(st);
    if (rc)
        return cli_fail(&err);
    printf("wrote "
           "%s/{scenarios,sweeps,runs,run_devices,run_epochs,run_flops,run_segments,run_stats,calibrations,"
           "run_files}.csv\n",
           dir);
    return EXIT_OK;
}

/* The loader's limit on a trace file (scenarios/README.md, "Limits"): a
 * stored copy is never larger. */
#define RERUN_MAX_FILE_BYTES (64L * 1024 * 1024)

/* Say when a stored trace file differs from the file at its recorded path
 * today (changed or gone): the run is re-simulated with the stored copy
 * either way, so the user learns that the disk no longer matches it. */
static void note_file_on_disk(uint64_t id, const scn_file *f)
{
    dp_err e = {0};
    size_t len = 0;
    char *now = dp_read_file(f->path, "trace file", RERUN_MAX_FILE_BYTES, &len, &e);
    if (!now)
        printf("run #%llu: trace '%s' (%s) is no longer readable (%s); using the copy stored with the run\n",
               (unsigned long long)id, f->name, f->path, e.msg);
    else if (len != f->len || memcmp(now, f->data, len) != 0)
        printf("run #%llu: trace '%s' (%s) has changed since the run (%zu bytes, hash %016llx; stored: %zu "
               "bytes, hash %016llx); using the copy stored with the run\n",
               (unsigned long long)id, f->name, f->path, len, (unsigned long long)scn_hash(now, len), f->len,
               (unsigned long long)f->hash);
    dp_free(now);
}

/* dpsim rerun RUN: simulate a stored run again from what the database holds
 * (scenario text, overrides, policy, seed, trace contents) and compare every stored figure
 * bit for bit.  Exit 0 when identical, 1 when anything differs. */
int cmd_rerun(int argc, char **argv)
{
    const char *db;
    int64_t rid;
    int ra = run_args(argc, argv, "rerun",
                      "usage: dpsim rerun RUN [--db FILE]\n\n"
                      "Simulate a stored run again from what the database holds (the scenario\n"
                      "text, its overrides, the policy, the seed and the contents of the trace\n"
                      "files it read) and compare Tsend, Ttraining, Ttotal, TFLOPS, utilisation,\n"
                      "events and every device's figures with the stored ones, bit for bit.\n"
                      "Nothing is written.  Works from any directory: the traces come from the\n"
                      "database; a note says when a trace file on disk has changed or is gone\n"
                      "since the run (the stored copy is used either way).  Runs stored before\n"
                      "dpsim kept trace contents (schema version 3) read their traces from\n"
                      "disk, relative paths against the current directory.\n\n"
                      "Exit 0 when identical, 1 when anything differs or the run fails.\n",
                      &db, &rid, NULL);
    if (ra >= 0)
        return ra;
    uint64_t id = (uint64_t)rid;
    dp_err err = {0};
    store *st = store_open_read(db, &err);
    if (!st)
        return cli_fail(&err);
    res_run *old = NULL, *now = NULL;
    char *text = NULL, *name = NULL, *policy = NULL, **ovs = NULL;
    size_t n_ovs = 0;
    uint64_t seed = 0;
    scn_scenario *s = NULL;
    scn_override *ov = NULL;
    scn_file *files = NULL;
    size_t n_files = 0;
    int rc = store_get_run(st, (int64_t)id, &old, &err);
    if (!rc)
        rc = store_get_run_source(st, (int64_t)id, &text, &name, &ovs, &n_ovs, &policy, &seed, &err);
    if (!rc)
        rc = store_get_run_files(st, (int64_t)id, &files, &n_files, &err);
    for (size_t k = 0; !rc && k < n_files; k++)
        note_file_on_disk(id, &files[k]);
    if (!rc && n_ovs && !(ov = dp_calloc(n_ovs, sizeof *ov)))
        rc = dp_err_set(&err, DP_ENOMEM, "out of memory");
    for (size_t k = 0; !rc && k < n_ovs; k++)
        if (cli_parse_override(ovs[k], &ov[k]))
            rc = dp_err_set(&err, DP_ERUN, "run #%llu: stored override '%s' is not KEY=VALUE",
                            (unsigned long long)id, ovs[k]);
    if (!rc) {
        char label[160];
        snprintf(label, sizeof label, "<run #%llu: %s>", (unsigned long long)id, name);
        s = scn_load_string_files(label, text, strlen(text), NULL, files, n_files, ov, n_ovs, &err);
        if (!s)
            rc = err.code ? err.code : DP_ERUN;
    }
    const policy_def *k = policy ? policy_find(policy) : NULL;
    if (!rc && !k)
        rc = dp_err_set(&err, DP_ERUN, "run #%llu: unknown policy '%s' (not registered in this build)",
                        (unsigned long long)id, policy);
    if (!rc && !(now = policy_run(k, s, seed, &err)))
        rc = err.code;
    int same = 0;
    if (!rc) {
#define SAME(a, b) (memcmp(&(a), &(b), sizeof(a)) == 0)
        same = SAME(old->tsend_s, now->tsend_s) && SAME(old->ttraining_s, now->ttraining_s) &&
               SAME(old->ttotal_s, now->ttotal_s) && SAME(old->tflops, now->tflops) &&
               SAME(old->utilization, now->utilization) && old->events == now->events &&
               old->n_devices == now->n_devices && old->n_epochs == now->n_epochs;
        for (size_t d = 0; same && d < old->n_devices; d++) {
            const res_device *a = &old->devices[d], *b = &now->devices[d];
            same = a->samples == b->samples && a->batches == b->batches && SAME(a->compute_s, b->compute_s) &&
                   SAME(a->send_s, b->send_s) && SAME(a->recv_s, b->recv_s) && SAME(a->wait_s, b->wait_s) &&
                   SAME(a->bytes_sent, b->bytes_sent) && SAME(a->bytes_recv, b->bytes_recv);
        }
        for (size_t e = 0; same && e < old->n_epochs; e++)
            same = SAME(old->epochs[e].end_s, now->epochs[e].end_s);
#undef SAME
        char en[256], ep[64];
        printf("run #%llu (%s, %s, seed %llu): stored Ttotal %.17g s, re-run %.17g s: %s\n",
               (unsigned long long)id, dp_esc(en, sizeof en, name), dp_esc(ep, sizeof ep, policy),
               (unsigned long long)seed, old->ttotal_s, now->ttotal_s, same ? "identical" : "DIFFERENT");
    }
    res_run_free(old);
    res_run_free(now);
    scn_free(s);
    store_files_free(files, n_files);
    dp_free(ov);
    dp_free(text);
    dp_free(name);
    dp_free(policy);
    store_strings_free(ovs, n_ovs);
    store_close(st);
    if (rc)
        return cli_fail(&err);
    return same ? EXIT_OK : EXIT_RUN;
}
