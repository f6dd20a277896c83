/* test_store_read.c: the results store's read side (split from
 * test_store.c, sharing its fixture through store_fixture.h): listing and
 * CSV export, the typed reads the plots draw from, and the values stored
 * as numbers (schema 8). */
#include <criterion/criterion.h>

#include "store_fixture.h"

/* ---- listing and export ------------------------------------------------ */

Test(store, list_runs_filters_and_reads_failed_runs)
{
    res_run *r = make_run(11, 3);
    store *st = open_rw();
    const char *ov[] = {"training.epochs=3"};
    put(st, r, NULL, 0);
    snprintf(r->policy, sizeof r->policy, "cadp");
    put(st, r, ov, 1);
    dp_err err = {0};
    cr_assert_eq(store_put_failed(st, "other", "name: other\n", 99, NULL, 0, "ddp", 3, "0.1.0",
                                  "2024-02-02T00:00:00Z", 0, NULL, "boom", NULL, &err),
                 0);
    store_run_rows rows;
    cr_assert_eq(store_runs_list(st, NULL, &rows, &err), 0, "%s", err.msg);
    cr_assert_eq(rows.n, 3);
    cr_expect_eq(rows.row[0].seed, 11); /* seed 11 read, not bits */
    cr_expect_str_eq(rows.row[0].started_at, "2024-01-02T03:04:05Z");
    cr_expect_str_eq(rows.row[0].overrides, "");
    cr_expect_str_eq(rows.row[1].policy, "cadp");
    cr_expect_str_eq(rows.row[1].overrides, "training.epochs=3");
    cr_expect_str_eq(rows.row[2].status, "failed");
    cr_expect_str_eq(rows.row[2].scenario, "other");
    cr_expect(isnan(rows.row[2].ttotal_s));
    store_run_rows_free(&rows);

    store_runs_filter f = {"tiny", "ddp", 0, 0};
    cr_assert_eq(store_runs_list(st, &f, &rows, &err), 0);
    cr_expect_eq(rows.n, 1);
    store_run_rows_free(&rows);
    store_runs_filter nope = {"nope", NULL, 0, 0};
    cr_assert_eq(store_runs_list(st, &nope, &rows, &err), 0);
    cr_expect_eq(rows.n, 0);
    store_run_rows_free(&rows);
    store_runs_filter last = {NULL, NULL, 0, 2}; /* the newest two, oldest first */
    cr_assert_eq(store_runs_list(st, &last, &rows, &err), 0);
    cr_assert_eq(rows.n, 2);
    cr_expect_str_eq(rows.row[0].policy, "cadp");
    cr_expect_str_eq(rows.row[1].status, "failed");
    store_run_rows_free(&rows);
    close_checked(st);
    res_run_free(r);
}

/* Minimal RFC 4180 reader: records end in CRLF; quoted fields may hold
 * anything.  Returns the number of records; fields[rec][col] are malloc'd. */
#define MAXREC 64
#define MAXCOL 32
static int parse_csv(const char *s, char *fields[MAXREC][MAXCOL], int ncol[MAXREC])
{
    int rec = 0;
    while (*s && rec < MAXREC) {
        int col = 0;
        for (;;) {
            char *out = malloc(strlen(s) + 1);
            size_t n = 0;
            if (*s == '"') {
                s++;
                for (;;) {
                    cr_assert(*s, "unterminated quoted field");
                    if (*s == '"' && s[1] == '"') {
                        out[n++] = '"';
                        s += 2;
                    } else if (*s == '"') {
                        s++;
                        break;
                    } else
                        out[n++] = *s++;
                }
            } else {
                while (*s && *s != ',' && *s != '\r' && *s != '\n') {
                    cr_assert(*s != '"', "bare quote in unquoted field");
                    out[n++] = *s++;
                }
            }
            out[n] = '\0';
            cr_assert_lt(col, MAXCOL);
            fields[rec][col++] = out;
            if (*s == ',') {
                s++;
                continue;
            }
            cr_assert(s[0] == '\r' && s[1] == '\n', "record %d does not end in CRLF", rec);
            s += 2;
            break;
        }
        ncol[rec++] = col;
    }
    return rec;
}

static void free_csv(char *fields[MAXREC][MAXCOL], const int ncol[MAXREC], int nrec)
{
    for (int i = 0; i < nrec; i++)
        for (int j = 0; j < ncol[i]; j++)
            free(fields[i][j]);
}

static int col_index(char *fields[MAXREC][MAXCOL], const int ncol[MAXREC], const char *name)
{
    for (int j = 0; j < ncol[0]; j++)
        if (strcmp(fields[0][j], name) == 0)
            return j;
    cr_assert_fail("no column %s", name);
    return -1;
}

Test(store, export_csv_quotes_per_rfc4180_and_keeps_doubles_exact)
{
    res_run *r = make_run(12, 7);
    store *st = open_rw();
    const char *ov[] = {"a=1,2", "b=\"q\""};
    put(st, r, ov, 2);
    char out[256];
    snprintf(out, sizeof out, "%s/exp/nested", dir);
    dp_err err = {0};
    cr_assert_eq(store_export_csv(st, out, &err), 0, "%s", err.msg);

    static char *fields[MAXREC][MAXCOL];
    int ncol[MAXREC];
    char path[512];
    size_t len;

    snprintf(path, sizeof path, "%s/scenarios.csv", out);
    char *text = slurp(path, &len);
    int n = parse_csv(text, fields, ncol);
    cr_assert_eq(n, 2);
    cr_expect_str_eq(fields[1][col_index(fields, ncol, "text")], SCN_TEXT);
    cr_expect_str_eq(fields[1][col_index(fields, ncol, "name")], "tiny");
    free_csv(fields, ncol, n);
    free(text);

    snprintf(path, sizeof path, "%s/runs.csv", out);
    text = slurp(path, &len);
    n = parse_csv(text, fields, ncol);
    cr_assert_eq(n, 2);
    cr_expect_eq(ncol[0], 27); /* version 4 added invocation, scenario_dir; 8 policy_label, policy_color */
    cr_expect_eq(ncol[1], 27);
    cr_expect_str_eq(fields[1][col_index(fields, ncol, "overrides_json")], "[\"a=1,2\",\"b=\\\"q\\\"\"]");
    cr_expect_str_eq(fields[1][col_index(fields, ncol, "utilization")], ""); /* NULL */
    double back = strtod(fields[1][col_index(fields, ncol, "ttraining_s")], NULL);
    expect_bits(back, r->ttraining_s);
    back = strtod(fields[1][col_index(fields, ncol, "tflops")], NULL);
    expect_bits(back, r->tflops);
    free_csv(fields, ncol, n);
    free(text);

    snprintf(path, sizeof path, "%s/run_devices.csv", out);
    text = slurp(path, &len);
    n = parse_csv(text, fields, ncol);
    cr_assert_eq(n, 4);
    cr_expect_str_eq(fields[2][col_index(fields, ncol, "name")], "rtx3090[1] \"x\",y");
    cr_expect_str_eq(fields[2][col_index(fields, ncol, "grp")], "g\xc3\xa9"
                                                                "1");
    free_csv(fields, ncol, n);
    free(text);

    const char *tables[] = {"sweeps", "run_epochs", "run_flops", "run_segments", "run_values"};
    const int rows[] = {0, 3, 4, 7, 2};
    for (int t = 0; t < 5; t++) {
        snprintf(path, sizeof path, "%s/%s.csv", out, tables[t]);
        text = slurp(path, &len);
        n = parse_csv(text, fields, ncol);
        cr_expect_eq(n, rows[t] + 1, "%s: %d records", tables[t], n);
        free_csv(fields, ncol, n);
        free(text);
        snprintf(path, sizeof path, "%s/%s.csv.tmp", out, tables[t]);
        cr_expect_eq(access(path, F_OK), -1, "temporary file left: %s", path);
    }

    /* Exporting into a path that is a file fails clearly. */
    snprintf(path, sizeof path, "%s/plainfile", dir);
    write_file(path, "x", 1);
    cr_expect_eq(store_export_csv(st, path, &err), DP_ERUN);
    cr_expect(strstr(err.msg, "plainfile") != NULL, "%s", err.msg);
    close_checked(st);
    res_run_free(r);
}

Test(store, database_in_read_only_directory_can_still_be_read)
{
    res_run *r = make_run(1, 5);
    store *st = open_rw();
    int64_t first = put(st, r, NULL, 0);
    close_checked(st); /* last connection: the -wal and -shm files go away */
    cr_assert_eq(chmod(dbpath, 0444), 0);
    cr_assert_eq(chmod(dir, 0555), 0); /* no -shm file can be created */

    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0))
            _exit(77);
        dp_err err = {0};
        store *c = store_open(dbpath, 1, &err);
        if (!c) {
            fprintf(stderr, "%s\n", err.msg);
            _exit(1);
        }
        res_run *got = NULL;
        int rc = store_get_run(c, first, &got, &err);
        int ok = rc == 0 && got->n_segments == r->n_segments && same_bits(got->ttraining_s, r->ttraining_s);
        if (rc)
            fprintf(stderr, "%s\n", err.msg);
        res_run_free(got);
        store_close(c);
        _exit(ok ? 0 : 1);
    }
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    chmod(dir, 0700);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
        cr_skip_test("cannot drop root privileges here");
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "read-only open failed (status %d)", status);
    res_run_free(r);
}

/* ---- typed reads (query.c): what the plots draw ------------------------- */

/* A run of make_run with statistics of every scope the plots read. */
static res_run *make_run_with_stats(void)
{
    res_run *r = make_run(7, 10);
    /* batches: devices 0 and 1 have every figure for epochs 1 and 2 (device 1
     * without wait_s), device 2 only a mean (counted, but not a full row) */
    for (int d = 0; d < 2; d++)
        for (int e = 1; e <= 2; e++) {
            cr_assert_eq(res_add_stat(r, "batch_mean", RES_SCOPE_DEVICE_EPOCH, d, e, 10 * d + e), 0);
            cr_assert_eq(res_add_stat(r, "batch_min", RES_SCOPE_DEVICE_EPOCH, d, e, 10 * d + e - 0.5), 0);
            cr_assert_eq(res_add_stat(r, "batch_max", RES_SCOPE_DEVICE_EPOCH, d, e, 10 * d + e + 0.5), 0);
            if (d == 0)
                cr_assert_eq(res_add_stat(r, "wait_s", RES_SCOPE_DEVICE_EPOCH, d, e, 0.25 * e), 0);
        }
    cr_assert_eq(res_add_stat(r, "batch_mean", RES_SCOPE_DEVICE_EPOCH, 2, 3, 99), 0);
    /* links, stored out of link order */
    cr_assert_eq(res_add_stat(r, "link.busy_fraction", RES_SCOPE_LINK, 5, 0, 0.25), 0);
    cr_assert_eq(res_add_stat(r, "link.peak_util", RES_SCOPE_LINK, 2, 0, NAN), 0);
    cr_assert_eq(res_add_stat(r, "link.device", RES_SCOPE_LINK, 5, 0, 1), 0);
    /* a histogram, and another one that must not be mixed in */
    cr_assert_eq(res_add_stat(r, "update.staleness", RES_SCOPE_BIN, 6, 64, 1), 0);
    cr_assert_eq(res_add_stat(r, "update.staleness", RES_SCOPE_BIN, 0, 0, 3), 0);
    cr_assert_eq(res_add_stat(r, "other.hist", RES_SCOPE_BIN, 1, 1, 8), 0);
    return r;
}

Test(store, typed_reads_give_what_was_stored)
{
    res_run *r = make_run_with_stats();
    store *st = open_rw();
    int64_t id = put(st, r, NULL, 0);
    dp_err err = {0};

    store_run_info info;
    cr_assert_eq(store_run_info_get(st, id, &info, &err), 0, "%s", err.msg);
    cr_expect_eq(info.id, id);
    cr_expect_str_eq(info.policy, "ddp");
    cr_expect_str_eq(info.scenario, "tiny");
    expect_bits(info.tsend_s, r->tsend_s);
    expect_bits(info.ttraining_s, r->ttraining_s);
    expect_bits(info.ttotal_s, r->ttotal_s);
    expect_bits(info.tflops, r->tflops);
    expect_bits(info.bin_s, 0.3);

    store_flops f;
    cr_assert_eq(store_flops_get(st, id, &f, &err), 0, "%s", err.msg);
    cr_assert_eq(f.n, 4);
    for (size_t k = 0; k < f.n; k++) {
        cr_expect_eq(f.bin[k], (int64_t)k);
        expect_bits(f.flops[k], 1.0e12 / (double)(k + 3));
    }
    store_flops_free(&f);
    cr_expect_null(f.bin);

    /* segments k = 0..9: device k % 3, activity k % 4, [0.1 k, 0.1 k + 0.05] */
    store_timeline_info ti;
    cr_assert_eq(store_timeline_info_get(st, id, &ti, &err), 0, "%s", err.msg);
    cr_expect_eq(ti.n_devices, 3);
    cr_expect(ti.has_segments);
    expect_bits(ti.end_s, 9 * 0.1 + 0.05);
    expect_bits(ti.res_s, 0.125);
    store_segments sg;
    cr_assert_eq(store_segments_get(st, id, res_activity_name((res_activity)2), &sg, &err), 0, "%s", err.msg);
    cr_assert_eq(sg.n, 2); /* k = 2 and 6, in stored order */
    cr_expect_eq(sg.seg[0].device, 2);
    expect_bits(sg.seg[0].t0_s, 2 * 0.1);
    expect_bits(sg.seg[0].t1_s, 2 * 0.1 + 0.05);
    cr_expect_eq(sg.seg[1].device, 0);
    expect_bits(sg.seg[1].t0_s, 6 * 0.1);
    store_segments_free(&sg);
    cr_assert_eq(store_segments_get(st, id, "no such activity", &sg, &err), 0, "%s", err.msg);
    cr_expect_eq(sg.n, 0);
    store_segments_free(&sg);

    store_devices dv;
    cr_assert_eq(store_devices_get(st, id, &dv, &err), 0, "%s", err.msg);
    cr_assert_eq(dv.n, 3);
    for (size_t k = 0; k < dv.n; k++)
        cr_expect_eq(dv.idx[k], (int64_t)k);
    cr_expect_str_eq(dv.name[1], "rtx3090[1] \"x\",y");
    cr_expect_str_eq(store_device_name(&dv, 2), "rtx3090[2] \"x\",y");
    cr_expect_null(store_device_name(&dv, 3));
    store_devices_free(&dv);

    store_values ends;
    cr_assert_eq(store_epoch_ends_get(st, id, 2, &ends, &err), 0, "%s", err.msg);
    cr_assert_eq(ends.n, 2); /* of 3 epochs, the limit */
    expect_bits(ends.v[0], 0.7);
    expect_bits(ends.v[1], 2 * 0.7);
    store_values_free(&ends);

    store_batches bt;
    cr_assert_eq(store_batches_get(st, id, 1, &bt, &err), 0, "%s", err.msg);
    cr_expect_eq(bt.n_devices, 3);
    cr_expect_eq(bt.n_epochs, 3);
    cr_assert_eq(bt.n, 2); /* device 0 only (max_devices 1), epochs 1, 2 */
    cr_expect_eq(bt.row[1].device, 0);
    cr_expect_eq(bt.row[1].epoch, 2);
    expect_bits(bt.row[1].mean, 2);
    expect_bits(bt.row[1].min, 1.5);
    expect_bits(bt.row[1].max, 2.5);
    expect_bits(bt.row[1].wait_s, 0.5);
    store_batches_free(&bt);
    cr_assert_eq(store_batches_get(st, id, 16, &bt, &err), 0, "%s", err.msg);
    cr_assert_eq(bt.n, 4); /* device 2 has no min/max: no row */
    cr_expect_eq(bt.row[2].device, 1);
    expect_bits(bt.row[2].mean, 11);
    expect_bits(bt.row[2].wait_s, 0); /* no wait_s stored: 0 */
    store_batches_free(&bt);

    store_stats ls;
    cr_assert_eq(store_stats_get(st, id, "link", &ls, &err), 0, "%s", err.msg);
    cr_assert_eq(ls.n, 3);
    cr_expect_eq(ls.stat[0].a, 2);
    cr_expect_str_eq(ls.stat[0].name, "link.peak_util");
    cr_expect(isnan(ls.stat[0].value));
    cr_expect_str_eq(ls.stat[1].name, "link.busy_fraction"); /* link 5 in stored order */
    cr_expect_str_eq(ls.stat[2].name, "link.device");
    expect_bits(ls.stat[2].value, 1);
    store_stats_free(&ls);

    store_hist h;
    cr_assert_eq(store_hist_get(st, id, "update.staleness", &h, &err), 0, "%s", err.msg);
    cr_assert_eq(h.n, 2);
    cr_expect_eq(h.bin[0], 0);
    cr_expect_eq(h.edge[1], 64);
    expect_bits(h.count[0], 3);
    expect_bits(h.count[1], 1);
    store_hist_free(&h);
    cr_assert_eq(store_hist_get(st, id, "no.such", &h, &err), 0, "%s", err.msg);
    cr_expect_eq(h.n, 0);
    store_hist_free(&h);

    cr_expect_eq(store_run_info_get(st, id + 1, &info, &err), DP_EINPUT);
    cr_expect(strstr(err.msg, "no run") != NULL, "%s", err.msg);
    close_checked(st);
    res_run_free(r);
}

/* The plots' default selection: untagged files take the latest run of
 * each policy; a tagged invocation takes its largest override set. */
Test(store, select_runs_follows_the_latest_invocation)
{
    res_run *r = make_run(1, 0);
    store *st = open_rw();
    dp_err err = {0};
    store_ids ids;
    cr_expect_eq(store_select_runs(st, NULL, NULL, 0, &ids, &err), DP_EINPUT);
    cr_expect(strstr(err.msg, "no successful run") != NULL, "%s", err.msg);

    int64_t a = put(st, r, NULL, 0);
    snprintf(r->policy, sizeof r->policy, "cadp");
    int64_t b = put(st, r, NULL, 0);
    cr_assert_eq(store_select_runs(st, NULL, NULL, 0, &ids, &err), 0, "%s", err.msg);
    cr_assert_eq(ids.n, 2);
    cr_expect((ids.id[0] == a && ids.id[1] == b) || (ids.id[0] == b && ids.id[1] == a));
    store_ids_free(&ids);
    cr_assert_eq(store_select_runs(st, NULL, "ddp", 1, &ids, &err), 0, "%s", err.msg);
    cr_assert_eq(ids.n, 1);
    cr_expect_eq(ids.id[0], a);
    store_ids_free(&ids);

    /* a tagged invocation: one run with overrides, then two without */
    store_set_invocation(st, "inv-1");
    snprintf(r->policy, sizeof r->policy, "ddp");
    const char *ov[] = {"devices.a.link.down=1Gbps"};
    int64_t c = put(st, r, ov, 1);
    int64_t d = put(st, r, NULL, 0);
    snprintf(r->policy, sizeof r->policy, "cadp");
    int64_t e = put(st, r, NULL, 0);
    cr_assert_eq(store_select_runs(st, NULL, NULL, 0, &ids, &err), 0, "%s", err.msg);
    cr_assert_eq(ids.n, 2);
    cr_expect((ids.id[0] == d && ids.id[1] == e) || (ids.id[0] == e && ids.id[1] == d), "%lld %lld",
              (long long)ids.id[0], (long long)ids.id[1]);
    store_ids_free(&ids);
    /* one ddp run: its two groups tie (one run each): the latest wins */
    cr_assert_eq(store_select_runs(st, NULL, "ddp", 1, &ids, &err), 0, "%s", err.msg);
    cr_assert_eq(ids.n, 1);
    cr_expect_eq(ids.id[0], d);
    store_ids_free(&ids);
    (void)c;
    cr_expect_eq(store_select_runs(st, "nosuch", NULL, 0, &ids, &err), DP_EINPUT);
    cr_expect(strstr(err.msg, "'nosuch'") != NULL, "%s", err.msg);
    cr_expect_null(ids.id);
    close_checked(st);
    res_run_free(r);
}

Test(store, sweep_reads_take_a_fixed_metric_column)
{
    res_run *r = make_run(3, 0);
    store *st = open_rw();
    scn_scenario s = fake_scn("tiny", SCN_TEXT);
    dp_err err = {0};
    int64_t sw = 0, latest = 0;
    cr_expect_eq(store_sweep_latest(st, &latest, &err), DP_EINPUT);
    cr_expect(strstr(err.msg, "no sweep") != NULL, "%s", err.msg);
    cr_assert_eq(store_sweep_get_or_create(st, &s, "{\"axes\":[]}", &sw, &err), 0, "%s", err.msg);
    const char *pts[] = {"{\"k\":\"1\"}", "{\"k\":\"2\"}"};
    for (int k = 0; k < 2; k++) {
        r->ttotal_s = 10.0 + k;
        cr_assert_eq(store_put_run(st, &s, NULL, 0, r, "0.1.0", "t", sw, pts[k], NULL, &err), 0, "%s",
                     err.msg);
    }
    cr_assert_eq(store_sweep_latest(st, &latest, &err), 0, "%s", err.msg);
    cr_expect_eq(latest, sw);
    char name[16];
    cr_assert_eq(store_sweep_scenario(st, sw, name, sizeof name, &err), 0, "%s", err.msg);
    cr_expect_str_eq(name, "tiny");
    store_sweep_runs sr;
    cr_assert_eq(store_sweep_runs_get(st, sw, "ttotal_s", &sr, &err), 0, "%s", err.msg);
    cr_assert_eq(sr.n, 2);
    cr_expect_str_eq(sr.run[1].policy, "ddp");
    cr_expect_str_eq(sr.run[1].point_json, pts[1]);
    expect_bits(sr.run[1].value, 11.0);
    store_sweep_runs_free(&sr);
    /* utilization is NaN (NULL) in every run: none has the metric */
    cr_expect_eq(store_sweep_runs_get(st, sw, "utilization", &sr, &err), DP_EINPUT);
    cr_expect(strstr(err.msg, "no successful runs") != NULL, "%s", err.msg);
    /* a metric outside the fixed list never reaches SQL */
    cr_expect_eq(store_sweep_runs_get(st, sw, "ttotal_s FROM runs; --", &sr, &err), DP_EINPUT);
    cr_expect(strstr(err.msg, "unknown metric") != NULL, "%s", err.msg);
    cr_expect_null(sr.run);
    close_checked(st);
    res_run_free(r);
}

Test(store, typed_reads_out_of_memory_leave_nothing)
{
    res_run *r = make_run_with_stats();
    store *st = open_rw();
    int64_t id = put(st, r, NULL, 0);
    dp_err err = {0};
    /* every allocation point of each read fails once in turn: an error, a
     * zeroed result, no leak (the teardown counts blocks) */
    int failed[3] = {0};
    for (long k = 1; k <= 40; k++) {
        store_devices dv;
        store_stats ls;
        store_ids ids;
        dp_alloc_fail_after(k);
        int rc1 = store_devices_get(st, id, &dv, &err);
        dp_alloc_fail_after(0);
        failed[0] += rc1 == DP_ENOMEM;
        if (rc1)
            cr_expect(dv.n == 0 && !dv.name && !dv.idx);
        store_devices_free(&dv);
        dp_alloc_fail_after(k);
        int rc2 = store_stats_get(st, id, "link", &ls, &err);
        dp_alloc_fail_after(0);
        failed[1] += rc2 == DP_ENOMEM;
        if (rc2)
            cr_expect(ls.n == 0 && !ls.stat);
        store_stats_free(&ls);
        dp_alloc_fail_after(k);
        int rc3 = store_select_runs(st, NULL, NULL, 0, &ids, &err);
        dp_alloc_fail_after(0);
        failed[2] += rc3 == DP_ENOMEM;
        if (rc3)
            cr_expect(ids.n == 0 && !ids.id);
        store_ids_free(&ids);
    }
    for (int k = 0; k < 3; k++) /* each read did meet an allocation failure */
        cr_expect_gt(failed[k], 0, "read %d never failed", k);
    close_checked(st);
    res_run_free(r);
}

/* ---- run_values and the policy's label (schema version 8) ------------- */

Test(store, values_are_stored_as_numbers_beside_their_text)
{
    store *st = open_rw();
    res_run *r = make_run(1, 0);
    snprintf(r->policy_label, sizeof r->policy_label, "D-D-P");
    snprintf(r->policy_color, sizeof r->policy_color, "#123456");
    const char *ov[] = {"devices.cpu.link.up=30Mbps", "policies.cadp.mode=fast", "training.epochs=4", "junk"};
    int64_t id = put(st, r, ov, 4);
    char row[256];
    value_row(store_db(st), id, 0, row, sizeof row);
    cr_expect_str_eq(row, "set|devices.cpu.link.up|30Mbps|3750000.0|B/s");
    value_row(store_db(st), id, 1, row, sizeof row);
    cr_expect_str_eq(row, "set|policies.cadp.mode|fast|NULL|-");
    value_row(store_db(st), id, 2, row, sizeof row);
    cr_expect_str_eq(row, "set|training.epochs|4|4.0|-");
    value_row(store_db(st), id, 3, row, sizeof row); /* "junk" has no KEY= */
    cr_expect_str_eq(row, "(none)");
    res_run *got = NULL;
    dp_err err = {0};
    cr_assert_eq(store_get_run(st, id, &got, &err), 0, "%s", err.msg);
    cr_expect_str_eq(got->policy_label, "D-D-P");
    cr_expect_str_eq(got->policy_color, "#123456");
    res_run_free(got);
    res_run_free(r);

    /* a failed sweep point: its point once (the same pairs as overrides are not repeated) */
    scn_scenario s = fake_scn("tiny", SCN_TEXT);
    int64_t sw = 0, fid = 0;
    cr_assert_eq(store_sweep_get_or_create(st, &s, "{\"spec\":1}", &sw, &err), 0, "%s", err.msg);
    const char *pov[] = {"devices.cpu.link.down=1Gbps", "devices.gpu.count=2"};
    cr_assert_eq(store_put_failed(st, "tiny", SCN_TEXT, s.text_hash, pov, 2, "ddp", 1, "0.1.0", "t", sw,
                                  "{\"devices.cpu.link.down\":\"1Gbps\",\"devices.gpu.count\":2}", "boom",
                                  &fid, &err),
                 0, "%s", err.msg);
    value_row(store_db(st), fid, 0, row, sizeof row);
    cr_expect_str_eq(row, "point|devices.cpu.link.down|1Gbps|125000000.0|B/s");
    value_row(store_db(st), fid, 1, row, sizeof row);
    cr_expect_str_eq(row, "point|devices.gpu.count|2|2.0|-");
    cr_expect_eq(query_int(store_db(st),
                           "SELECT count(*) FROM run_values WHERE run_id IN (SELECT id FROM runs"
                           " WHERE status = 'failed')"),
                 2);
    cr_expect_eq(query_int(store_db(st), "SELECT count(*) FROM runs WHERE policy_label IS NULL"), 1);
    close_checked(st);
}
