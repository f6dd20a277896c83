/* cmd_db.c: dpsim runs | show | export: reading the results database. */
#include "cli/cli.h"
#include "cli/report.h"
#include "jobs/jobs_report.h"
#include "policy/policy.h"
#include "store/store.h"
#include "store/store_jobs.h"
#include "table.h"
#include "yamltree.h"

#include <getopt.h>
#include <math.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>

typedef struct runs_args {
    const char *scen, *pol;
    int64_t last, sweep;
} runs_args;

enum { K_SCENARIO = 0x2000, K_CSV, K_TRACE, K_FULL, K_DEVICES, K_LAST, K_SWEEP };

static int runs_opt(void *ctx, int key, const char *arg, const char *label)
{
    runs_args *a = ctx;
    uint64_t v;
    if (key == K_SCENARIO) {
        a->scen = arg;
    } else if (key == 'p') {
        a->pol = arg;
    } else if (key == K_LAST || key == K_SWEEP) {
        if (cli_parse_u64(arg, &v) || v == 0 || v > INT64_MAX)
            return cli_usage_error("runs", "%s needs a positive integer (got '%s')", label, arg);
        *(key == K_LAST ? &a->last : &a->sweep) = (int64_t)v;
    } else {
        return cli_usage_error("runs", "unknown option '%s'", label);
    }
    return -1;
}

static void runs_help(void)
{
    printf("usage: dpsim runs [--db FILE] [--scenario NAME] [--policy NAME] [--sweep ID] [--last N]\n\n"
           "List the runs stored in a results database, oldest first: id, start time\n"
           "(UTC), scenario, policy, seed, status, the sweep it belongs to, what it\n"
           "changed (its --set overrides, or a sweep run's point), Tsend, Ttraining,\n"
           "Ttotal (s) and TFLOPS, in the style of `dpsim run`'s table (2 and 4\n"
           "decimals).  Columns are as wide as their content.  Runs of many jobs (`dpsim\n"
           "jobs`) follow in a table of their own, when there are any: id (jN, for `dpsim\n"
           "show jN`), start time, scenario, scheduler, seed, jobs, devices, makespan,\n"
           "mean and p95 JCT (s) and Jain's index; --scenario and --last choose them too,\n"
           "--policy and --sweep leave them out.\n\n"
           "  -d, --db FILE        results database (default results.db)\n"
           "      --scenario NAME  only runs of this scenario\n"
           "  -p, --policy NAME    only runs of this policy\n"
           "      --sweep ID       only the runs of sweep ID\n"
           "      --last N         only the newest N (of those chosen)\n");
}

/* A time as the table shows it: two decimals, "-" for a failed run. */
static void add_seconds(dp_table *t, double v)
{
    if (isnan(v))
        dp_table_add(t, "-");
    else
        dp_table_addf(t, "%.2f", v);
}

/* 2024-01-02T03:04:05Z -> 2024-01-02 03:04:05 */
static void when_text(char *when, size_t len, const char *iso)
{
    snprintf(when, len, "%s", iso);
    if (strlen(when) == 20 && when[10] == 'T' && when[19] == 'Z')
        when[10] = ' ', when[19] = '\0';
}

/* The jobs runs, after the runs: ids jN (`dpsim show jN`). */
static int print_jobs_runs(const store_jobs_row *r, size_t n)
{
    static const dp_col cols[] = {
        {"id", 'r', 4, 0},          {"started (UTC)", 'l', 0, 2}, {"scenario", 'l', 0, 2},
        {"scheduler", 'l', 0, 2},   {"seed", 'r', 0, 2},          {"jobs", 'r', 0, 2},
        {"devices", 'r', 0, 2},     {"makespan (s)", 'r', 0, 2},  {"JCT mean (s)", 'r', 0, 2},
        {"JCT p95 (s)", 'r', 0, 2}, {"Jain", 'r', 0, 2},
    };
    dp_table *t = dp_table_new(cols, sizeof cols / sizeof *cols, NULL);
    for (size_t k = 0; k < n; k++) {
        char when[32];
        dp_table_addf(t, "j%lld", (long long)r[k].id);
        when_text(when, sizeof when, r[k].started_at);
        dp_table_add(t, when);
        dp_table_add(t, r[k].scenario);
        dp_table_add(t, r[k].scheduler);
        dp_table_addf(t, "%llu", (unsigned long long)r[k].seed);
        dp_table_addf(t, "%lld", (long long)r[k].n_jobs);
        dp_table_addf(t, "%lld", (long long)r[k].devices);
        add_seconds(t, r[k].makespan_s);
        add_seconds(t, r[k].jct_mean_s);
        add_seconds(t, r[k].jct_p95_s);
        dp_table_addf(t, "%.4f", r[k].jain);
    }
    printf("\nruns of many jobs (dpsim jobs; dpsim show jN):\n");
    int rc = dp_table_print(t, stdout);
    dp_table_free(t);
    return rc;
}

int cmd_runs(int argc, char **argv)
{
    static const struct option own[] = {{"scenario", required_argument, NULL, K_SCENARIO},
                                        {"policy", required_argument, NULL, 'p'},
                                        {"last", required_argument, NULL, K_LAST},
                                        {"sweep", required_argument, NULL, K_SWEEP},
                                        {NULL, 0, NULL, 0}};
    runs_args a = {0};
    cli_opts o = {0};
    int prc = cli_parse(argc, argv, "runs", CLI_O_DB | CLI_O_LOG, own, "p:", runs_opt, &a, runs_help, &o);
    if (prc >= 0)
        return prc;
    if (o.n_pos)
        return cli_usage_error("runs", "unexpected argument '%s'", o.pos[0]);
    dp_err err = {0};
    store *st = cli_open_read(o.db, &err);
    if (!st)
        return cli_fail(&err);
    store_runs_filter f = {a.scen, a.pol, a.sweep, a.last};
    store_run_rows rows;
    store_jobs_row *jrows = NULL;
    size_t n_j = 0;
    int rc = store_runs_list(st, &f, &rows, &err);
    if (!rc && !a.pol && !a.sweep && (rc = store_jobs_list(st, a.scen, a.last, 0, &jrows, &n_j, &err)))
        store_run_rows_free(&rows);
    store_close(st);
    if (rc)
        return cli_fail(&err);
    static const dp_col cols[] = {
        {"id", 'r', 4, 0},         {"started (UTC)", 'l', 0, 2}, {"scenario", 'l', 0, 2},
        {"policy", 'l', 0, 2},     {"seed", 'r', 0, 2},          {"status", 'l', 0, 2},
        {"sweep", 'r', 0, 2},      {"Tsend (s)", 'r', 0, 2},     {"Ttraining (s)", 'r', 0, 2},
        {"Ttotal (s)", 'r', 0, 2}, {"TFLOPS", 'r', 0, 2},        {"changed", 'l', 0, 2},
    };
    dp_table *t = dp_table_new(cols, sizeof cols / sizeof *cols, NULL);
    for (size_t k = 0; k < rows.n; k++) {
        const store_run_row *r = &rows.row[k];
        dp_table_addf(t, "%lld", (long long)r->id);
        char when[32];
        when_text(when, sizeof when, r->started_at);
        dp_table_add(t, when);
        dp_table_add(t, r->scenario);
        dp_table_add(t, r->policy);
        dp_table_addf(t, "%llu", (unsigned long long)r->seed);
        dp_table_add(t, r->status);
        if (r->sweep_id)
            dp_table_addf(t, "#%lld", (long long)r->sweep_id);
        else
            dp_table_add(t, "-");
        add_seconds(t, r->tsend_s);
        add_seconds(t, r->ttraining_s);
        add_seconds(t, r->ttotal_s);
        if (isnan(r->tflops))
            dp_table_add(t, "-");
        else
            dp_table_addf(t, "%.4f", r->tflops);
        dp_table_add(t, r->overrides[0] ? r->overrides : "-");
    }
    rc = dp_table_print(t, stdout);
    dp_table_free(t);
    store_run_rows_free(&rows);
    if (!rc && n_j)
        rc = print_jobs_runs(jrows, n_j);
    dp_free(jrows);
    if (rc) {
        dp_err_set(&err, DP_ENOMEM, "out of memory printing the runs");
        return cli_fail(&err);
    }
    return EXIT_OK;
}

/* Arguments of a command on one stored run: RUN [--db FILE] [--json].
 * json may be NULL when the command has no --json.  Returns -1 when the
 * arguments are fine (id and db set), else the exit code (help printed: 0;
 * bad usage: 2). */
static const char *run_help_text;
static void run_help(void)
{
    fputs(run_help_text, stdout);
}

enum { K_ALL = 0x2100 };

static int on_all(void *ctx, int key, const char *arg, const char *label)
{
    (void)arg;
    if (key != K_ALL)
        return cli_usage_error("show", "unknown option '%s'", label);
    *(int *)ctx = 1;
    return -1;
}

/* all: NULL when the command has no --all (every device listed). */
/* jobs: NULL when the command takes no jobs run (jN), else set to 1 for
 * one. */
static int run_args(int argc, char **argv, const char *cmd, const char *help, const char **db, int64_t *id,
                    int *json, int *all, int *jobs)
{
    static const struct option own_all[] = {{"all", no_argument, NULL, K_ALL}, {NULL, 0, NULL, 0}};
    cli_opts o = {0};
    run_help_text = help;
    int prc = cli_parse(argc, argv, cmd, CLI_O_DB | CLI_O_LOG | (json ? CLI_O_JSON : 0u),
                        all ? own_all : NULL, NULL, all ? on_all : NULL, all, run_help, &o);
    if (prc >= 0)
        return prc;
    if (o.n_pos > 1)
        return cli_usage_error(cmd, "unexpected argument '%s'", o.pos[1]);
    const char *id_s = o.n_pos ? o.pos[0] : NULL;
    *db = o.db;
    if (json)
        *json = o.json;
    uint64_t v;
    if (jobs && id_s && id_s[0] == 'j') {
        *jobs = 1;
        if (cli_parse_u64(id_s + 1, &v) || v == 0 || v > INT64_MAX)
            return cli_usage_error(cmd, "RUN: a jobs run is jN as listed by 'dpsim runs' (got '%s')", id_s);
    } else if (!id_s || cli_parse_u64(id_s, &v) || v == 0 || v > INT64_MAX)
        return cli_usage_error(cmd, "RUN must be a run id as listed by 'dpsim runs' (got '%s')",
                               id_s ? id_s : "");
    *id = (int64_t)v;
    return -1;
}

/* `dpsim show jN`: a stored run of many jobs, as `dpsim jobs` printed it. */
static int show_jobs(const char *db, int64_t id, int json, int all)
{
    dp_err err = {0};
    store *st = cli_open_read(db, &err);
    if (!st)
        return cli_fail(&err);
    store_jobs_row *row = NULL;
    size_t n = 0;
    jobs_result *r = NULL;
    int rc = store_jobs_list(st, NULL, 0, id, &row, &n, &err);
    if (!rc && n == 0)
        rc = dp_err_set(&err, DP_EINPUT, "%s: no jobs run j%lld (dpsim runs lists them)", db, (long long)id);
    if (!rc)
        rc = store_jobs_get(st, id, &r, &err);
    store_close(st);
    if (!rc && json) {
        json_buf *j = json_new();
        jobs_json_doc_begin(j, row->scenario);
        jobs_json(r, j);
        json_arr_end(j);
        json_obj_end(j);
        printf("%s\n", json_text(j));
        json_free(j);
    } else if (!rc) {
        char en[300], when[32];
        when_text(when, sizeof when, row->started_at);
        printf("jobs run j%lld: %s, started %s UTC\n", (long long)id, dp_esc(en, sizeof en, row->scenario),
               when);
        jobs_print(r, all, stdout);
    }
    jobs_result_free(r);
    dp_free(row);
    return rc ? cli_fail(&err) : EXIT_OK;
}

int cmd_show(int argc, char **argv)
{
    const char *db = NULL;
    int64_t rid = 0;
    int json = 0;
    int all = 0, jobs = 0;
    int ra = run_args(argc, argv, "show",
                      "usage: dpsim show RUN [--db FILE] [--json] [--all]\n\n"
                      "Print a stored run again: its overrides, options, the trace files kept\n"
                      "with it, its summary row and per-device breakdown\n"
                      "(or, with --json, the same object `dpsim run --json` prints).  RUN jN\n"
                      "(as `dpsim runs` lists runs of many jobs) prints that `dpsim jobs` run:\n"
                      "its jobs table and figures, or with --json the document `dpsim jobs\n"
                      "--json` prints, with this one run.\n\n"
                      "  -d, --db FILE   results database (default results.db)\n"
                      "      --json      JSON output\n"
                      "      --all       list every device (past 50 devices the breakdown shows the\n"
                      "                  first 10 and each figure's min, median and max); every job\n",
                      &db, &rid, &json, &all, &jobs);
    if (ra >= 0)
        return ra;
    if (jobs)
        return show_jobs(db, rid, json, all);
    uint64_t id = (uint64_t)rid;
    dp_err err = {0};
    store *st = cli_open_read(db, &err);
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
            report_json_begin(j, name);
            report_json_run(j, r, (const char *const *)ovs, n_ovs);
            report_json_end(j);
            printf("%s\n", json_text(j));
            json_free(j);
        } else {
            /* Every stored text is escaped: a database may come from anyone. */
            char eo[600], en[300], ep[100];
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
            long long lid = (long long)id;
            report_table(stdout, (const res_run *const *)&r, &lid, 1);
            report_learning(stdout, &r, 1);
            printf("\n");
            int note = report_plan(stdout, r);
            note |= report_fast_forward(stdout, r);
            if (note)
                printf("\n");
            report_devices(stdout, r, all);
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

typedef struct export_args {
    const char *out, *devices;
    int csv, full;
    int64_t trace_run;
} export_args;

static int export_opt(void *ctx, int key, const char *arg, const char *label)
{
    export_args *a = ctx;
    uint64_t v;
    if (key == 'o') {
        a->out = arg;
    } else if (key == K_CSV) {
        a->csv = 1;
    } else if (key == K_FULL) {
        a->full = 1;
    } else if (key == K_DEVICES) {
        a->devices = arg;
    } else if (key == K_TRACE) {
        if (cli_parse_u64(arg, &v) || v == 0 || v > INT64_MAX)
            return cli_usage_error("export", "--trace needs a run id as listed by 'dpsim runs' (got '%s')",
                                   arg);
        a->trace_run = (int64_t)v;
    } else {
        return cli_usage_error("export", "unknown option '%s'", label);
    }
    return -1;
}

static void on_segment(void *ctx, size_t device, int act, double t0_s, double t1_s)
{
    store_trace_segment(ctx, device, res_activity_name((res_activity)act), t0_s, t1_s);
}

/* export --trace RUN --full: simulate the run again and stream every
 * activity of every device as it closes; the re-run must reproduce the
 * stored run bit for bit (as `rerun` checks), else the file is dropped. */
static int export_full(store *st, int64_t run, const char *path, const unsigned char *keep, size_t n_keep,
                       dp_err *err)
{
    store_trace *t = store_trace_begin(st, run, path, 1, keep, n_keep, err);
    if (!t)
        return err->code ? err->code : DP_ERUN;
    res_run *old = NULL, *now = NULL;
    char *name = NULL, *policy = NULL;
    uint64_t seed = 0;
    cli_catch_interrupts();
    policy_set_segment_hook(on_segment, t);
    int rc = cli_resimulate(st, (uint64_t)run, &old, &now, &name, &policy, &seed, err);
    policy_set_segment_hook(NULL, NULL);
    if (!rc && memcmp(&old->ttotal_s, &now->ttotal_s, sizeof old->ttotal_s) != 0)
        rc = dp_err_set(
            err, DP_ERUN,
            "run #%lld: the re-run ends at %.17g s, the stored run at %.17g s (a different build or "
            "trace files?): the full timeline would not be this run's",
            (long long)run, now->ttotal_s, old->ttotal_s);
    res_run_free(old);
    res_run_free(now);
    dp_free(name);
    dp_free(policy);
    if (rc) {
        store_trace_abort(t);
        return rc;
    }
    return store_trace_end(t, err);
}

/* The devices --devices SPEC names, as a mask over the run's devices
 * (*keep NULL when SPEC is NULL: all); says on stderr when the stored
 * timeline holds fewer devices than the run has.  DP_EINPUT for an
 * unknown name, an index out of range, or a device past the stored
 * timeline without --full. */
static int trace_devices(store *st, int64_t run, const char *spec, int full, unsigned char **keep,
                         size_t *n_keep, dp_err *err)
{
    enum { STORED = 64 }; /* the runtime keeps the timeline of the first 64 devices */
    store_devices dev;
    int rc = store_devices_get(st, run, &dev, err);
    if (rc)
        return rc;
    size_t n = dev.n;
    if (!spec) {
        if (!full && n > STORED)
            fprintf(stderr,
                    "dpsim: note: run #%lld has %zu devices; the stored timeline holds the first %d (--full "
                    "writes every device, --devices chooses which)\n",
                    (long long)run, n, STORED);
        store_devices_free(&dev);
        return 0;
    }
    unsigned char *m = dp_calloc(n ? n : 1, 1);
    char item[256];
    for (const char *p = spec; !rc && m && *p;) {
        size_t l = strcspn(p, ",");
        snprintf(item, sizeof item, "%.*s", (int)l, p);
        p += l + (p[l] == ',');
        uint64_t lo, hi;
        char *dots = strstr(item, "..");
        if (dots) {
            *dots = '\0';
            if (cli_parse_u64(item, &lo) || cli_parse_u64(dots + 2, &hi) || lo > hi)
                rc = dp_err_set(err, DP_EINPUT, "--devices: bad range '%s..%s' (want A..B, A <= B)", item,
                                dots + 2);
        } else if (!cli_parse_u64(item, &lo)) {
            hi = lo;
        } else { /* a device name */
            size_t k = 0;
            while (k < n && strcmp(dev.name[k], item) != 0)
                k++;
            if (k == n) {
                const char *near = n <= 10000 ? yt_nearest(item, (const char *const *)dev.name, n) : NULL;
                rc = dp_err_set(err, DP_EINPUT, "--devices: run #%lld has no device '%s'%s%s%s",
                                (long long)run, item, near ? ", did you mean '" : "", near ? near : "",
                                near ? "'?" : "");
                break;
            }
            lo = hi = (uint64_t)dev.idx[k];
        }
        if (!rc && hi >= n)
            rc = dp_err_set(err, DP_EINPUT, "--devices: run #%lld has devices 0..%zu (got %llu)",
                            (long long)run, n ? n - 1 : 0, (unsigned long long)hi);
        else if (!rc && !full && hi >= STORED)
            rc = dp_err_set(err, DP_EINPUT,
                            "--devices: device %llu is past the stored timeline (the first %d devices); add "
                            "--full to simulate the run again with every device",
                            (unsigned long long)hi, STORED);
        for (uint64_t d = lo; !rc && d <= hi; d++)
            m[d] = 1;
    }
    store_devices_free(&dev);
    if (!m)
        return dp_err_set(err, DP_ENOMEM, "out of memory");
    if (rc) {
        dp_free(m);
        return rc;
    }
    *keep = m;
    *n_keep = n;
    return 0;
}

static void export_help(void)
{
    printf("usage: dpsim export --csv [--db FILE] [--out DIR]\n"
           "       dpsim export --trace RUN [--db FILE] --out FILE.json\n\n"
           "--csv: write every table of the results database as DIR/TABLE.csv (RFC 4180):\n");
    size_t col = 0; /* the store's own list of tables, wrapped at 78 columns */
    for (size_t i = 0; store_csv_table(i); i++) {
        size_t w = strlen(store_csv_table(i)) + 2;
        if (i)
            fputs(col + w > 78 ? ",\n" : ", ", stdout);
        if (col + w > 78)
            col = 0;
        col += w;
        fputs(store_csv_table(i), stdout);
    }
    printf(".\nrun_values holds each run's overrides and sweep point as numbers in SI units\n"
           "beside their text; run_files the trace files each run read (their contents\n"
           "stay in the database).\n\n"
           "--trace RUN: write one run's timeline in the Chrome trace event format, which\n"
           "Perfetto (ui.perfetto.dev) and chrome://tracing open: a process per device\n"
           "group, a thread per device, a complete event per activity (receiving data,\n"
           "computing, sending, receiving the model, waiting), a counter track of cluster\n"
           "FLOPS, epoch ends as instant events, and metadata naming the scenario and the\n"
           "policy.  It holds what the database stored: the timeline of the first 64\n"
           "devices, coarsened to bins for long runs (see sim/store/JSON.md).  With --full\n"
           "the run is simulated again (it must match the stored one bit for bit) and\n"
           "every activity of every device is streamed to the file: exact, but large\n"
           "for long runs.\n\n"
           "  -d, --db FILE      results database (default results.db)\n"
           "  -o, --out PATH     output directory (--csv, default export/) or file (--trace)\n"
           "      --csv          CSV tables\n"
           "      --trace RUN    Chrome trace event JSON of run RUN\n"
           "      --full         --trace: simulate again and write the whole timeline\n"
           "      --devices LIST --trace: only these devices: indices from 0 in the\n"
           "                     scenario's order, ranges A..B and device names, comma-\n"
           "                     separated (e.g. 0..9,laptop); past the first 64: --full\n");
}

int cmd_export(int argc, char **argv)
{
    static const struct option own[] = {
        {"out", required_argument, NULL, 'o'},           {"csv", no_argument, NULL, K_CSV},
        {"trace", required_argument, NULL, K_TRACE},     {"full", no_argument, NULL, K_FULL},
        {"devices", required_argument, NULL, K_DEVICES}, {NULL, 0, NULL, 0}};
    export_args a = {0};
    cli_opts o = {0};
    int prc =
        cli_parse(argc, argv, "export", CLI_O_DB | CLI_O_LOG, own, "o:", export_opt, &a, export_help, &o);
    if (prc >= 0)
        return prc;
    if (o.n_pos)
        return cli_usage_error("export", "unexpected argument '%s'", o.pos[0]);
    const char *db = o.db, *dir = a.out ? a.out : "export";
    int csv = a.csv;
    if (csv && a.trace_run)
        return cli_usage_error("export", "one format at a time: --csv or --trace RUN");
    if (a.trace_run) {
        if (!a.out)
            return cli_usage_error("export", "--trace needs --out FILE.json");
        dp_err err = {0};
        store *st = cli_open_read(db, &err);
        if (!st)
            return cli_fail(&err);
        unsigned char *keep = NULL;
        size_t n_keep = 0;
        int rc = trace_devices(st, a.trace_run, a.devices, a.full, &keep, &n_keep, &err);
        if (!rc)
            rc = a.full ? export_full(st, a.trace_run, a.out, keep, n_keep, &err)
                        : store_export_trace(st, a.trace_run, a.out, keep, n_keep, &err);
        dp_free(keep);
        store_close(st);
        if (rc)
            return cli_fail(&err);
        printf("%s\n", a.out);
        return EXIT_OK;
    }
    if (!csv)
        return cli_usage_error("export", "say the format: --csv or --trace RUN");
    dp_err err = {0};
    store *st = cli_open_read(db, &err);
    if (!st)
        return cli_fail(&err);
    int rc = store_export_csv(st, dir, &err);
    store_close(st);
    if (rc)
        return cli_fail(&err);
    /* what was written, named as the shell would (no "export//runs.csv") */
    size_t dl = strlen(dir), n = 0;
    while (dl > 1 && dir[dl - 1] == '/')
        dl--;
    while (store_csv_table(n))
        n++;
    char trimmed[1024], ed[1024];
    snprintf(trimmed, sizeof trimmed, "%.*s", (int)dl, dir);
    printf("wrote %zu tables to %s%s:", n, dp_esc(ed, sizeof ed, trimmed), strcmp(trimmed, "/") ? "/" : "");
    for (size_t k = 0; k < n; k++)
        printf("%s %s.csv", k ? "," : "", store_csv_table(k));
    printf("\n");
    return EXIT_OK;
}

/* dpsim rerun RUN: simulate a stored run again from what the database holds
 * (scenario text, overrides, policy, seed) and compare every stored figure
 * bit for bit.  Exit 0 when identical, 1 when anything differs. */
/* Simulate stored run id again from what the database holds (scenario
 * text, overrides, policy, seed).  *old_out: the stored results, *now_out:
 * the new ones, *name_out / *policy_out: dp_malloc strings; the caller frees
 * all four (also on failure).  0 or the failure's code, message in *err_out. */
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
    char en[300], ep[300];
    char *now = dp_read_file(f->path, "trace file", RERUN_MAX_FILE_BYTES, &len, &e);
    if (!now)
        printf("run #%llu: trace '%s' (%s) is no longer readable (%s); using the copy stored with the run\n",
               (unsigned long long)id, dp_esc(en, sizeof en, f->name), dp_esc(ep, sizeof ep, f->path), e.msg);
    else if (len != f->len || memcmp(now, f->data, len) != 0)
        printf("run #%llu: trace '%s' (%s) has changed since the run (%zu bytes, hash %016llx; stored: %zu "
               "bytes, hash %016llx); using the copy stored with the run\n",
               (unsigned long long)id, dp_esc(en, sizeof en, f->name), dp_esc(ep, sizeof ep, f->path), len,
               (unsigned long long)scn_hash(now, len), f->len, (unsigned long long)f->hash);
    dp_free(now);
}

int cli_resimulate(store *st, uint64_t id, res_run **old_out, res_run **now_out, char **name_out,
                   char **policy_out, uint64_t *seed_out, dp_err *err_out)
{
    res_run *old = NULL, *now = NULL;
    char *text = NULL, *name = NULL, *policy = NULL, **ovs = NULL;
    dp_err err = {0};
    size_t n_ovs = 0;
    uint64_t seed = 0;
    scn_scenario *s = NULL;
    scn_override *ov = NULL;
    scn_file *files = NULL;
    size_t n_files = 0;
    int rc = store_get_run(st, (int64_t)id, &old, &err);
    if (!rc)
        rc = store_get_run_source(st, (int64_t)id, &text, &name, &ovs, &n_ovs, &policy, &seed, &err);
    /* the trace files the run read, as they were: used instead of the disk */
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
        /* traces come from the stored copies; runs stored before dpsim
         * kept them resolve paths as `run` did: against the scenario
         * file's directory when it was stored and still exists */
        char *dir = NULL;
        struct stat sb;
        if (store_get_run_dir(st, (int64_t)id, &dir, &err) == 0 && dir &&
            (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))) {
            dp_free(dir);
            dir = NULL;
        }
        s = scn_load_string_files(label, text, strlen(text), dir, files, n_files, ov, n_ovs, &err);
        dp_free(dir);
        if (!s)
            rc = err.code ? err.code : DP_ERUN;
    }
    const policy_def *k = policy ? policy_find(policy) : NULL;
    if (!rc && !k)
        rc = dp_err_set(&err, DP_ERUN, "run #%llu: unknown policy '%s' (not registered in this build)",
                        (unsigned long long)id, policy);
    if (!rc && !(now = policy_run(k, s, seed, &err)))
        rc = err.code;
    *old_out = old;
    *now_out = now;
    *name_out = name;
    *policy_out = policy;
    *seed_out = seed;
    *err_out = err;
    scn_free(s);
    store_files_free(files, n_files);
    dp_free(ov);
    dp_free(text);
    store_strings_free(ovs, n_ovs);
    return rc;
}

int cmd_rerun(int argc, char **argv)
{
    const char *db = NULL;
    int64_t rid = 0;
    int ra = run_args(argc, argv, "rerun",
                      "usage: dpsim rerun RUN [--db FILE]\n\n"
                      "Simulate a stored run again from what the database holds (the scenario\n"
                      "text, its overrides, the policy, the seed and the contents of the trace\n"
                      "files it read) and compare Tsend, Ttraining, Ttotal, TFLOPS, utilisation,\n"
                      "events and every device's figures with the stored ones, bit for bit.\n"
                      "Nothing is written.  Works from any directory: the traces come from the\n"
                      "database; a note says when a trace file on disk has changed or is gone\n"
                      "since the run (the stored copy is used either way).  Runs stored before\n"
                      "dpsim kept trace contents resolve trace paths against the scenario file's\n"
                      "directory as the run saw it (when stored and still there), else the\n"
                      "current directory.\n\n"
                      "Exit 0 when identical, 1 when anything differs or the run fails.\n",
                      &db, &rid, NULL, NULL, NULL);
    if (ra >= 0)
        return ra;
    uint64_t id = (uint64_t)rid;
    dp_err err = {0};
    store *st = cli_open_read(db, &err);
    if (!st)
        return cli_fail(&err);
    res_run *old = NULL, *now = NULL;
    char *name = NULL, *policy = NULL;
    uint64_t seed = 0;
    int rc = cli_resimulate(st, id, &old, &now, &name, &policy, &seed, &err);
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
        char en[300], ep[100];
        printf("run #%llu (%s, %s, seed %llu): stored Ttotal %.17g s, re-run %.17g s: %s\n",
               (unsigned long long)id, dp_esc(en, sizeof en, name), dp_esc(ep, sizeof ep, policy),
               (unsigned long long)seed, old->ttotal_s, now->ttotal_s, same ? "identical" : "DIFFERENT");
    }
    res_run_free(old);
    res_run_free(now);
    dp_free(name);
    dp_free(policy);
    store_close(st);
    if (rc)
        return cli_fail(&err);
    return same ? EXIT_OK : EXIT_RUN;
}
