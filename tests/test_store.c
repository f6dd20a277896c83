/* test_store.c: the SQLite results store (sim/store/store.h) and the run
 * record it stores (sim/core/results.h).
 *
 * Runs are built by hand (no simulator needed) with awkward doubles so the
 * round trip is checked bit for bit.  Failure cases check both the error
 * (DP_ERUN, message naming the file) and that the rows stored before are
 * still there and the database passes integrity_check. */
#include <criterion/criterion.h>

#include "store_fixture.h"

/* ---- results.c ---------------------------------------------------------- */

Test(results, activity_names)
{
    cr_expect_str_eq(res_activity_name(RES_ACT_RECV_DATA), "recv_data");
    cr_expect_str_eq(res_activity_name(RES_ACT_RECV_MODEL), "recv_model");
    cr_expect_str_eq(res_activity_name(RES_ACT_COMPUTE), "compute");
    cr_expect_str_eq(res_activity_name(RES_ACT_SEND), "send");
    cr_expect_str_eq(res_activity_name(RES_ACT_WAIT), "wait");
    cr_expect_str_eq(res_activity_name(RES_ACT_COUNT), "unknown");
}

Test(results, contiguous_same_activity_segments_merge_per_device)
{
    res_run *r = res_run_new(2, NULL);
    cr_assert_eq(res_add_segment(r, 0, RES_ACT_COMPUTE, 0.0, 1.0), 0);
    cr_assert_eq(res_add_segment(r, 1, RES_ACT_COMPUTE, 0.0, 0.5), 0);         /* other device in between */
    cr_assert_eq(res_add_segment(r, 0, RES_ACT_COMPUTE, 1.0, 2.0), 0);         /* merges with device 0's */
    cr_assert_eq(res_add_segment(r, 1, RES_ACT_SEND, 0.5, 0.7), 0);            /* other activity: new */
    cr_assert_eq(res_add_segment(r, 1, RES_ACT_COMPUTE, 0.8, 0.9), 0);         /* gap: new */
    cr_assert_eq(res_add_segment(r, 0, RES_ACT_COMPUTE, 2.0, 2.0), 0);         /* zero length: dropped */
    cr_assert_eq(res_add_segment(r, 0, RES_ACT_COMPUTE, 2.0 + 1e-15, 3.0), 0); /* rounding seam: merges */
    cr_assert_eq(r->n_segments, 4);
    cr_expect_eq(r->segments[0].device, 0);
    cr_expect_eq(r->segments[0].t0_s, 0.0);
    cr_expect_eq(r->segments[0].t1_s, 3.0);
    cr_expect_eq(r->segments[1].t1_s, 0.5);
    cr_expect_eq(r->segments[2].act, RES_ACT_SEND);
    cr_expect_eq(r->segments[3].t0_s, 0.8);
    res_run_free(r);
}

Test(results, invalid_segments_are_refused)
{
    res_run *r = res_run_new(1, NULL);
    cr_expect_eq(res_add_segment(r, 1, RES_ACT_WAIT, 0, 1), DP_EINPUT);
    cr_expect_eq(res_add_segment(r, -1, RES_ACT_WAIT, 0, 1), DP_EINPUT);
    cr_expect_eq(res_add_segment(r, 0, RES_ACT_COUNT, 0, 1), DP_EINPUT);
    cr_expect_eq(res_add_segment(r, 0, RES_ACT_WAIT, 1, 0), DP_EINPUT);
    cr_expect_eq(res_add_segment(r, 0, RES_ACT_WAIT, NAN, 1), DP_EINPUT);
    cr_expect_eq(res_add_segment(NULL, 0, RES_ACT_WAIT, 0, 1), DP_EINPUT);
    cr_expect_eq(r->n_segments, 0);
    res_run_free(r);
    res_run_free(NULL);
}

Test(results, many_segments_and_epochs_grow)
{
    res_run *r = res_run_new(2, NULL);
    for (int i = 0; i < 10000; i++)
        cr_assert_eq(res_add_segment(r, i % 2, (res_activity)((i / 2) % 2), i, i + 1), 0);
    cr_expect_eq(r->n_segments, 10000);
    for (int e = 1; e <= 1000; e++)
        cr_assert_eq(res_add_epoch(r, e, e), 0);
    cr_assert_eq(r->n_epochs, 1000);
    for (int e = 1; e <= 1000; e++)
        cr_expect_eq(r->epochs[e - 1].epoch, e);
    res_run_free(r);
}

Test(results, out_of_memory_is_reported)
{
    dp_alloc_fail_after(1);
    dp_err err = {0};
    cr_expect_null(res_run_new(4, &err));
    cr_expect_eq(err.code, DP_ENOMEM);
    dp_alloc_fail_after(2);
    cr_expect_null(res_run_new(4, &err));
    dp_alloc_fail_after(0);
    res_run *r = res_run_new(1, NULL);
    dp_alloc_fail_after(1);
    cr_expect_eq(res_add_segment(r, 0, RES_ACT_WAIT, 0, 1), DP_ENOMEM);
    cr_expect_eq(res_add_epoch(r, 1, 1), DP_ENOMEM);
    dp_alloc_fail_after(0);
    res_run_free(r);
}

/* ---- open, schema, migrations ------------------------------------------ */

Test(store, fresh_file_gets_current_schema)
{
    store *st = open_rw();
    cr_expect_eq(query_int(store_db(st), "PRAGMA user_version"), STORE_SCHEMA_VERSION);
    cr_expect_eq(query_int(store_db(st), "PRAGMA application_id"), 0x6470736d);
    cr_expect_eq(query_int(store_db(st), "PRAGMA foreign_keys"), 1);
    cr_expect_eq(query_int(store_db(st), "PRAGMA busy_timeout"), STORE_BUSY_TIMEOUT_MS);
    cr_expect_eq(query_int(store_db(st), "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN"
                                         " ('scenarios','runs','run_devices','run_epochs','run_flops',"
                                         "'run_segments','sweeps')"),
                 7);
    cr_expect_str_eq(store_path(st), dbpath);
    close_checked(st);
    /* WAL is a property of the file, and reopening is idempotent. */
    st = open_rw();
    sqlite3_stmt *s;
    cr_assert_eq(sqlite3_prepare_v2(store_db(st), "PRAGMA journal_mode", -1, &s, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_step(s), SQLITE_ROW);
    cr_expect_str_eq((const char *)sqlite3_column_text(s, 0), "wal");
    sqlite3_finalize(s);
    close_checked(st);
    store_close(NULL);
}

/* The tables of the released version 1 schema: a frozen copy, on purpose
 * not shared with store.c (version 2 added runs.timeline_res_s). */
#define V1_TABLES                                                                                            \
    "CREATE TABLE scenarios(id INTEGER PRIMARY KEY, name TEXT NOT NULL, hash TEXT NOT NULL UNIQUE,"          \
    " text TEXT NOT NULL, created_at TEXT NOT NULL);"                                                        \
    "CREATE TABLE sweeps(id INTEGER PRIMARY KEY, scenario_id INTEGER NOT NULL REFERENCES scenarios(id),"     \
    " spec_json TEXT NOT NULL UNIQUE, created_at TEXT NOT NULL);"                                            \
    "CREATE TABLE runs(id INTEGER PRIMARY KEY, scenario_id INTEGER NOT NULL REFERENCES scenarios(id),"       \
    " policy TEXT NOT NULL, options_json TEXT NOT NULL, overrides_json TEXT NOT NULL DEFAULT '[]',"          \
    " seed INTEGER NOT NULL, version TEXT NOT NULL, started_at TEXT NOT NULL, wall_s REAL NOT NULL,"         \
    " status TEXT NOT NULL DEFAULT 'ok', error TEXT, sweep_id INTEGER REFERENCES sweeps(id),"                \
    " point_json TEXT, tsend_s REAL, ttraining_s REAL, ttotal_s REAL, tflops REAL, utilization REAL,"        \
    " samples_processed REAL, bytes_total REAL, events INTEGER, bin_s REAL);"                                \
    "CREATE UNIQUE INDEX runs_point ON runs(sweep_id, point_json, policy, seed, version)"                    \
    " WHERE sweep_id IS NOT NULL;"                                                                           \
    "CREATE INDEX runs_scenario ON runs(scenario_id);"                                                       \
    "CREATE TABLE run_devices(run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"                \
    " idx INTEGER NOT NULL, name TEXT NOT NULL, grp TEXT NOT NULL, kind TEXT NOT NULL, samples INTEGER,"     \
    " batches INTEGER, compute_s REAL, send_s REAL, recv_s REAL, wait_s REAL, bytes_sent REAL,"              \
    " bytes_recv REAL, data_ready_s REAL, PRIMARY KEY(run_id, idx));"                                        \
    "CREATE TABLE run_epochs(run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"                 \
    " epoch INTEGER NOT NULL, end_s REAL NOT NULL, PRIMARY KEY(run_id, epoch));"                             \
    "CREATE TABLE run_flops(run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"                  \
    " bin INTEGER NOT NULL, t0_s REAL NOT NULL, flops REAL NOT NULL, PRIMARY KEY(run_id, bin));"             \
    "CREATE TABLE run_segments(run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"               \
    " device INTEGER NOT NULL, act TEXT NOT NULL, t0_s REAL NOT NULL, t1_s REAL NOT NULL);"                  \
    "CREATE INDEX run_segments_run ON run_segments(run_id);"

/* A version 1 file (the first released schema) with a run in it is
 * migrated forward on open, its rows intact; old runs read back with an
 * exact timeline (timeline_res_s NULL -> 0). */
Test(store, version_1_file_is_migrated_forward)
{
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(dbpath, &db), SQLITE_OK);
    const char *v1 = V1_TABLES
        "INSERT INTO scenarios VALUES(1, 'old', '00000000000000aa', 'name: old', '2026-01-01T00:00:00Z');"
        "INSERT INTO runs(id, scenario_id, policy, options_json, seed, version, started_at, wall_s,"
        " tsend_s, ttraining_s, ttotal_s, tflops, utilization, samples_processed, bytes_total, events, bin_s)"
        " VALUES(1, 1, 'cadp', '{}', 7, '0.0.9', '2026-01-01T00:00:00Z', 0.5, 1.5, 2.5, 4.0, 0.1, 0.5, 10,"
        " 100, 42, 1);"
        "PRAGMA application_id = 1685091181; PRAGMA user_version = 1;";
    cr_assert_eq(sqlite3_exec(db, v1, NULL, NULL, NULL), SQLITE_OK, "%s", sqlite3_errmsg(db));
    sqlite3_close(db);

    /* a plain read-only open refuses it; the reading commands' open migrates it */
    dp_err rerr = {0};
    cr_expect_null(store_open(dbpath, 1, &rerr));
    cr_expect(strstr(rerr.msg, "older"), "%s", rerr.msg);
    store *ro = store_open_read(dbpath, &rerr);
    cr_assert_not_null(ro, "%s", rerr.msg);
    cr_expect_eq(query_int(store_db(ro), "SELECT count(*) FROM runs"), 1);
    store_close(ro);

    store *st = open_rw();
    cr_expect_eq(query_int(store_db(st), "PRAGMA user_version"), STORE_SCHEMA_VERSION);
    cr_expect_eq(query_int(store_db(st), "SELECT count(*) FROM runs"), 1);
    dp_err err = {0};
    res_run *r = NULL;
    cr_assert_eq(store_get_run(st, 1, &r, &err), 0, "%s", err.msg);
    cr_expect_eq(r->ttotal_s, 4.0);
    cr_expect_eq(r->events, 42);
    cr_expect_eq(r->timeline_res_s, 0);
    res_run_free(r);
    /* and a new run stores its timeline resolution */
    res_run *w = make_run(3, 2);
    w->timeline_res_s = 2.5;
    int64_t id = put(st, w, NULL, 0);
    cr_assert_eq(store_get_run(st, id, &r, &err), 0, "%s", err.msg);
    cr_expect_eq(r->timeline_res_s, 2.5);
    res_run_free(r);
    res_run_free(w);
    close_checked(st);
}

/* A version 2 file (runs.timeline_res_s, before trace files were kept)
 * with a run in it is migrated to version 3 on open: the blobs and
 * run_files tables appear, the old run reads back with no trace files, and
 * new runs keep theirs.  The version 2 schema: version 1's and its one
 * added column. */
Test(store, version_2_file_is_migrated_forward)
{
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(dbpath, &db), SQLITE_OK);
    const char *v2 = V1_TABLES
        "ALTER TABLE runs ADD COLUMN timeline_res_s REAL;"
        "INSERT INTO scenarios VALUES(1, 'old', '00000000000000aa', 'name: old', '2026-01-01T00:00:00Z');"
        "INSERT INTO runs(id, scenario_id, policy, options_json, seed, version, started_at, wall_s,"
        " tsend_s, ttraining_s, ttotal_s, tflops, utilization, samples_processed, bytes_total, events, bin_s,"
        " timeline_res_s)"
        " VALUES(1, 1, 'cadp', '{}', 7, '0.1.0', '2026-01-01T00:00:00Z', 0.5, 1.5, 2.5, 4.0, 0.1, 0.5, 10,"
        " 100, 42, 1, 0);"
        "PRAGMA application_id = 1685091181; PRAGMA user_version = 2;";
    cr_assert_eq(sqlite3_exec(db, v2, NULL, NULL, NULL), SQLITE_OK, "%s", sqlite3_errmsg(db));
    sqlite3_close(db);

    dp_err err = {0};
    cr_expect_null(store_open(dbpath, 1, &err));
    cr_expect(strstr(err.msg, "older"), "%s", err.msg);
    store *ro = store_open_read(dbpath, &err); /* migrates */
    cr_assert_not_null(ro, "%s", err.msg);
    cr_expect_eq(query_int(store_db(ro), "PRAGMA user_version"), STORE_SCHEMA_VERSION);
    cr_expect_eq(query_int(store_db(ro), "SELECT count(*) FROM blobs"), 0);
    cr_expect_eq(query_int(store_db(ro), "SELECT count(*) FROM run_files"), 0);
    scn_file *f = NULL;
    size_t n = 7;
    cr_assert_eq(store_get_run_files(ro, 1, &f, &n, &err), 0, "%s", err.msg);
    cr_expect_eq(n, 0);
    cr_expect_null(f);
    res_run *r = NULL;
    cr_assert_eq(store_get_run(ro, 1, &r, &err), 0, "%s", err.msg);
    cr_expect_eq(r->ttotal_s, 4.0);
    res_run_free(r);
    expect_integrity_ok(store_db(ro));
    close_checked(ro);
}

/* The trace files a scenario read are stored with the run and read back
 * byte for byte (an empty file and bytes that are not text included); a
 * content shared by two runs or two names is stored once. */
Test(store, trace_files_round_trip_once_per_content)
{
    static const char bin[] = {'0', ',', '1', '\0', '\n', (char)0xff};
    scn_file files[3] = {
        {"a.csv", "/abs/a.csv", (char *)"0,1000\n", 7, 0},
        {"sub/b.mahimahi", "/abs/sub/b.mahimahi", (char *)bin, sizeof bin, 0},
        {"empty.csv", "/abs/empty.csv", (char *)"", 0, 0},
    };
    for (int i = 0; i < 3; i++)
        files[i].hash = scn_hash(files[i].data, files[i].len);
    scn_scenario s = fake_scn("tiny", SCN_TEXT);
    s.files = files;
    s.n_files = 3;
    store *st = open_rw();
    res_run *r = make_run(1, 2);
    dp_err err = {0};
    int64_t id1 = 0, id2 = 0;
    cr_assert_eq(store_put_run(st, &s, NULL, 0, r, "0.1.0", "2024-01-02T03:04:05Z", 0, NULL, &id1, &err), 0,
                 "%s", err.msg);
    files[2].name = "again.csv"; /* same (empty) content under another name */
    cr_assert_eq(store_put_run(st, &s, NULL, 0, r, "0.1.0", "2024-01-02T03:04:05Z", 0, NULL, &id2, &err), 0,
                 "%s", err.msg);
    cr_expect_eq(query_int(store_db(st), "SELECT count(*) FROM blobs"), 3);
    cr_expect_eq(query_int(store_db(st), "SELECT count(*) FROM run_files"), 6);
    res_run_free(r);
    close_checked(st);

    st = open_rw();
    scn_file *got = NULL;
    size_t n = 0;
    cr_assert_eq(store_get_run_files(st, id2, &got, &n, &err), 0, "%s", err.msg);
    cr_assert_eq(n, 3);
    for (size_t i = 0; i < n; i++) {
        cr_expect_str_eq(got[i].name, files[i].name);
        cr_expect_str_eq(got[i].path, files[i].path);
        cr_assert_eq(got[i].len, files[i].len);
        cr_expect(got[i].len == 0 || memcmp(got[i].data, files[i].data, got[i].len) == 0, "%s", got[i].name);
        cr_expect_eq(got[i].data[got[i].len], '\0');
        cr_expect_eq(got[i].hash, files[i].hash);
    }
    store_files_free(got, n);
    store_files_free(NULL, 0);
    /* a run without files, and deleting a run deletes its file rows */
    cr_assert_eq(store_get_run_files(st, 424242, &got, &n, &err), 0, "%s", err.msg);
    cr_expect_eq(n, 0);
    cr_assert_eq(sqlite3_exec(store_db(st), "PRAGMA foreign_keys = ON; DELETE FROM runs WHERE id = 1", NULL,
                              NULL, NULL),
                 SQLITE_OK);
    cr_expect_eq(query_int(store_db(st), "SELECT count(*) FROM run_files"), 3);
    close_checked(st);
}

Test(store, empty_path_is_input_error)
{
    dp_err err = {0};
    cr_expect_null(store_open("", 0, &err));
    cr_expect_eq(err.code, DP_EINPUT);
    cr_expect_null(store_open(NULL, 1, NULL));
}

Test(store, readonly_open_of_missing_or_empty_file_fails)
{
    dp_err err = {0};
    cr_expect_null(store_open(dbpath, 1, &err));
    expect_erun_naming_file(err.code, &err, "cannot open");
    cr_expect_eq(access(dbpath, F_OK), -1, "read-only open created the file");
    write_file(dbpath, "", 0);
    cr_expect_null(store_open(dbpath, 1, &err));
    expect_erun_naming_file(err.code, &err, "empty");
}

static void expect_refused_untouched(const char *word)
{
    size_t n0, n1;
    char *before = slurp(dbpath, &n0);
    for (int ro = 0; ro <= 1; ro++) {
        dp_err err = {0};
        cr_expect_null(store_open(dbpath, ro, &err), "opened (readonly=%d)", ro);
        expect_erun_naming_file(err.code, &err, word);
    }
    char *after = slurp(dbpath, &n1);
    cr_expect(n0 == n1 && memcmp(before, after, n0) == 0, "refused file was modified");
    free(before);
    free(after);
}

Test(store, file_that_is_not_a_database_is_refused_untouched)
{
    char junk[4096];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (char)('a' + i % 26);
    write_file(dbpath, junk, sizeof junk);
    expect_refused_untouched("not an SQLite database");
}

Test(store, newer_schema_version_is_refused_untouched)
{
    sqlite3 *db;
    char sql[256]; /* one past the schema this binary knows, whatever it is */
    snprintf(sql, sizeof sql,
             "CREATE TABLE runs(id INTEGER PRIMARY KEY, future TEXT);"
             "INSERT INTO runs(future) VALUES('from the future');"
             "PRAGMA application_id = 1685091181; PRAGMA user_version = %d;",
             STORE_SCHEMA_VERSION + 1);
    cr_assert_eq(sqlite3_open(dbpath, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    expect_refused_untouched("newer");
}

Test(store, other_applications_database_is_refused_untouched)
{
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(dbpath, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db, "CREATE TABLE contacts(name TEXT); INSERT INTO contacts VALUES('x');", NULL,
                              NULL, NULL),
                 SQLITE_OK);
    sqlite3_close(db);
    expect_refused_untouched("not a dpsim results database");

    cr_assert_eq(sqlite3_open(dbpath, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db, "PRAGMA application_id = 42", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    expect_refused_untouched("application_id");
}

/* ---- round trip ---------------------------------------------------------- */

Test(store, run_round_trips_bit_exact)
{
    res_run *r = make_run(UINT64_MAX, 50);
    store *st = open_rw();
    int64_t id = put(st, r, NULL, 0);
    close_checked(st);
    expect_run_intact(id, r);

    /* The raw columns hold what the schema promises. */
    st = open_rw();
    sqlite3 *db = store_db(st);
    cr_expect_eq(query_int(db, "SELECT count(*) FROM runs WHERE status = 'ok' AND error IS NULL AND"
                               " overrides_json = '[]' AND version = '0.1.0' AND sweep_id IS NULL AND"
                               " started_at = '2024-01-02T03:04:05Z' AND utilization IS NULL"),
                 1);
    char want_hash[64];
    snprintf(want_hash, sizeof want_hash, "SELECT count(*) FROM scenarios WHERE hash = '%016" PRIx64 "'",
             fnv1a(SCN_TEXT));
    cr_expect_eq(query_int(db, want_hash), 1);
    cr_expect_eq(query_int(db, "SELECT count(*) FROM run_flops WHERE t0_s = bin * 0.3"), 4);
    cr_expect_eq(query_int(db, "SELECT count(*) FROM run_segments WHERE act IN ('recv_data','recv_model',"
                               "'compute','send')"),
                 50);
    close_checked(st);
    res_run_free(r);
}

Test(store, run_without_children_and_null_options_round_trips)
{
    res_run *r = res_run_new(0, NULL);
    snprintf(r->policy, sizeof r->policy, "cadp");
    store *st = open_rw();
    int64_t id = put(st, r, NULL, 0);
    res_run *got = NULL;
    dp_err err = {0};
    cr_assert_eq(store_get_run(st, id, &got, &err), 0, "%s", err.msg);
    expect_runs_equal(r, got);
    cr_expect_str_eq(got->options_json, "{}");
    res_run_free(got);
    close_checked(st);
    res_run_free(r);
}

Test(store, missing_run_is_input_error)
{
    store *st = open_rw();
    res_run *got = (res_run *)1;
    dp_err err = {0};
    cr_expect_eq(store_get_run(st, 42, &got, &err), DP_EINPUT);
    cr_expect_null(got);
    cr_expect(strstr(err.msg, "42") != NULL, "%s", err.msg);
    char *t, *n, *p, **ov;
    size_t nov;
    uint64_t seed;
    cr_expect_eq(store_get_run_source(st, 42, &t, &n, &ov, &nov, &p, &seed, &err), DP_EINPUT);
    cr_expect_null(t);
    cr_expect_null(ov);
    close_checked(st);
}

Test(store, scenarios_are_deduplicated_by_hash)
{
    res_run *r = make_run(1, 5);
    store *st = open_rw();
    put(st, r, NULL, 0);
    put(st, r, NULL, 0);
    scn_scenario other = fake_scn("tiny", "name: tiny\nother: 2\n");
    dp_err err = {0};
    cr_assert_eq(store_put_run(st, &other, NULL, 0, r, "0.1.0", "2024-01-01T00:00:00Z", 0, NULL, NULL, &err),
                 0, "%s", err.msg);
    cr_expect_eq(query_int(store_db(st), "SELECT count(*) FROM scenarios"), 2);
    cr_expect_eq(query_int(store_db(st), "SELECT count(*) FROM runs"), 3);
    /* Same hash, different text: refused rather than silently merged. */
    scn_scenario clash = fake_scn("tiny", "completely different");
    clash.text_hash = fnv1a(SCN_TEXT);
    cr_expect_eq(store_put_run(st, &clash, NULL, 0, r, "0.1.0", "x", 0, NULL, NULL, &err), DP_ERUN);
    cr_expect(strstr(err.msg, "collision") != NULL, "%s", err.msg);
    cr_expect_eq(query_int(store_db(st), "SELECT count(*) FROM runs"), 3);
    close_checked(st);
    res_run_free(r);
}

Test(store, run_source_gives_scenario_overrides_policy_seed)
{
    const char *ov[] = {"devices.rtx3090.link.down=50Mbps", "name=a \"b\" \\ c", "x=caf\xc3\xa9",
                        "tab=\t|\n|"};
    res_run *r = make_run(UINT64_MAX - 1, 3);
    store *st = open_rw();
    int64_t id = put(st, r, ov, 4);
    char *text, *name, *pol, **got;
    size_t n;
    uint64_t seed;
    dp_err err = {0};
    cr_assert_eq(store_get_run_source(st, id, &text, &name, &got, &n, &pol, &seed, &err), 0, "%s", err.msg);
    cr_expect_str_eq(text, SCN_TEXT);
    cr_expect_str_eq(name, "tiny");
    cr_expect_str_eq(pol, "ddp");
    cr_expect_eq(seed, UINT64_MAX - 1);
    cr_assert_eq(n, 4);
    for (size_t i = 0; i < n; i++)
        cr_expect_str_eq(got[i], ov[i]);
    dp_free(text);
    dp_free(name);
    dp_free(pol);
    store_strings_free(got, n);

    /* No overrides: NULL array, zero count. */
    id = put(st, r, NULL, 0);
    cr_assert_eq(store_get_run_source(st, id, &text, &name, &got, &n, &pol, &seed, &err), 0, "%s", err.msg);
    cr_expect_null(got);
    cr_expect_eq(n, 0);
    dp_free(text);
    dp_free(name);
    dp_free(pol);
    close_checked(st);
    res_run_free(r);
}

Test(store, failed_run_is_stored_without_metrics)
{
    store *st = open_rw();
    dp_err err = {0};
    int64_t id = 0;
    const char *ov[] = {"training.epochs=0"};
    cr_assert_eq(store_put_failed(st, "tiny", SCN_TEXT, fnv1a(SCN_TEXT), ov, 1, "deepspeed", 7, "0.1.0",
                                  "2024-05-06T07:08:09Z", 0, NULL,
                                  "tiny.yaml:3:5: training.epochs: must be >= 1", &id, &err),
                 0, "%s", err.msg);
    cr_expect_eq(query_int(store_db(st), "SELECT count(*) FROM runs WHERE status = 'failed' AND error LIKE"
                                         " '%must be >= 1' AND tsend_s IS NULL AND options_json = '{}'"),
                 1);
    res_run *got = NULL;
    cr_assert_eq(store_get_run(st, id, &got, &err), 0, "%s", err.msg);
    cr_expect_str_eq(got->policy, "deepspeed");
    cr_expect_eq(got->seed, 7);
    cr_expect(isnan(got->ttotal_s));
    cr_expect_eq(got->n_devices, 0);
    cr_expect_eq(got->n_segments, 0);
    res_run_free(got);
    /* A failed run whose scenario file could not be read at all. */
    cr_assert_eq(store_put_failed(st, "missing.yaml", NULL, 0, NULL, 0, "ddp", 1, "0.1.0", "t", 0, NULL,
                                  "missing.yaml: No such file", NULL, &err),
                 0, "%s", err.msg);
    close_checked(st);
}

/* ---- transactions: nothing partial ------------------------------------- */

Test(store, injected_failure_mid_run_leaves_no_rows)
{
    res_run *r = make_run(3, 20);
    store *st = open_rw();
    int64_t first = put(st, r, NULL, 0);
    char before[256], after[256];
    table_counts(store_db(st), before, sizeof before);
    long n_children = (long)(r->n_devices + r->n_epochs + r->n_bins + r->n_segments);
    const long ks[] = {1, 2, n_children / 2, n_children};
    scn_scenario other = fake_scn("other", "name: other\n"); /* its scenario row must vanish too */
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
        dp_err err = {0};
        store_test_fail_after_rows(st, ks[i]);
        int rc = store_put_run(st, &other, NULL, 0, r, "0.1.0", "t", 0, NULL, NULL, &err);
        expect_erun_naming_file(rc, &err, "injected");
        table_counts(store_db(st), after, sizeof after);
        cr_expect_str_eq(after, before, "rows left behind after failing at child row %ld", ks[i]);
        cr_expect(sqlite3_get_autocommit(store_db(st)), "transaction left open");
    }
    /* The hook disarms itself: the next run is stored whole. */
    store_test_fail_after_rows(st, n_children + 1);
    int64_t id = put(st, r, NULL, 0);
    int64_t id2 = put(st, r, NULL, 0);
    cr_expect_eq(id2, id + 1);
    close_checked(st);
    expect_run_intact(first, r);
    expect_run_intact(id2, r);
    res_run_free(r);
}

static long progress_calls;
static int die_mid_transaction(void *arg)
{
    (void)arg;
    if (++progress_calls == 40)
        _exit(3); /* like a kill -9: no rollback, no close */
    return 0;
}

Test(store, process_killed_mid_run_leaves_no_rows)
{
    res_run *small = make_run(1, 2), *big = make_run(2, 20000);
    store *st = open_rw();
    int64_t first = put(st, small, NULL, 0);
    char before[256], after[256];
    table_counts(store_db(st), before, sizeof before);
    close_checked(st);

    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        store *c = store_open(dbpath, 0, NULL);
        if (!c)
            _exit(1);
        sqlite3_progress_handler(store_db(c), 1000, die_mid_transaction, NULL);
        scn_scenario s = fake_scn("tiny", SCN_TEXT);
        store_put_run(c, &s, NULL, 0, big, "0.1.0", "t", 0, NULL, NULL, NULL);
        _exit(0); /* the run finished before the "crash": the test would prove nothing */
    }
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 3, "child did not die mid-run (status %d)", status);

    st = open_rw(); /* recovers the WAL */
    table_counts(store_db(st), after, sizeof after);
    cr_expect_str_eq(after, before);
    put(st, small, NULL, 0); /* the file is still writable */
    close_checked(st);
    expect_run_intact(first, small);
    res_run_free(small);
    res_run_free(big);
}

Test(store, out_of_memory_in_put_and_get_leaves_no_rows_and_no_leaks)
{
    res_run *r = make_run(5, 10);
    store *st = open_rw();
    int64_t id = 0;
    long k;
    for (k = 1; k < 100; k++) {
        scn_scenario s = fake_scn("tiny", SCN_TEXT);
        dp_err err = {0};
        dp_alloc_fail_after(k);
        int rc = store_put_run(st, &s, NULL, 0, r, "0.1.0", "t", 0, NULL, &id, &err);
        dp_alloc_fail_after(0);
        if (rc == 0)
            break;
        cr_expect_eq(rc, DP_ENOMEM, "%s", err.msg);
        cr_expect_eq(query_int(store_db(st), "SELECT count(*) FROM runs"), 0);
    }
    cr_assert_lt(k, 100);
    for (k = 1; k < 100; k++) {
        res_run *got = NULL;
        dp_err err = {0};
        dp_alloc_fail_after(k);
        int rc = store_get_run(st, id, &got, &err);
        dp_alloc_fail_after(0);
        if (rc == 0) {
            expect_runs_equal(r, got);
            res_run_free(got);
            break;
        }
        cr_expect_eq(rc, DP_ENOMEM, "%s", err.msg);
        cr_expect_null(got);
        cr_expect(sqlite3_get_autocommit(store_db(st)));
    }
    cr_assert_lt(k, 100);
    close_checked(st);
    res_run_free(r);
}

/* ---- concurrency ---------------------------------------------------------- */

#define WRITERS   2
#define RUNS_EACH 25

Test(store, two_processes_write_one_new_database_at_once)
{
    res_run *r = make_run(9, 200);
    pid_t pids[WRITERS];
    int gate[2]; /* closing the write end releases all writers at once */
    cr_assert_eq(pipe(gate), 0);
    for (int w = 0; w < WRITERS; w++) {
        pids[w] = fork();
        cr_assert_neq(pids[w], -1);
        if (pids[w] == 0) {
            /* All create and migrate the same new file, then interleave. */
            char c0;
            close(gate[1]);
            if (read(gate[0], &c0, 1) != 0)
                _exit(1);
            dp_err err = {0};
            store *c = store_open(dbpath, 0, &err);
            if (!c) {
                fprintf(stderr, "writer %d: %s\n", w, err.msg);
                _exit(1);
            }
            scn_scenario s = fake_scn("tiny", SCN_TEXT);
            for (int i = 0; i < RUNS_EACH; i++) {
                r->seed = (uint64_t)(w * 1000 + i);
                if (store_put_run(c, &s, NULL, 0, r, "0.1.0", "t", 0, NULL, NULL, &err) != 0) {
                    fprintf(stderr, "writer %d run %d: %s\n", w, i, err.msg);
                    _exit(1);
                }
            }
            store_close(c);
            _exit(0);
        }
    }
    close(gate[0]);
    close(gate[1]);
    for (int w = 0; w < WRITERS; w++) {
        int status;
        cr_assert_eq(waitpid(pids[w], &status, 0), pids[w]);
        cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer %d failed (status %d)", w, status);
    }
    store *st = open_rw();
    sqlite3 *db = store_db(st);
    cr_expect_eq(query_int(db, "SELECT count(*) FROM runs"), WRITERS * RUNS_EACH);
    cr_expect_eq(query_int(db, "SELECT count(*) FROM scenarios"), 1);
    cr_expect_eq(query_int(db, "SELECT count(DISTINCT seed) FROM runs"), WRITERS * RUNS_EACH);
    cr_expect_eq(query_int(db, "SELECT count(*) FROM run_segments"),
                 (int64_t)(WRITERS * RUNS_EACH * r->n_segments));
    /* Every run complete: no run with a partial set of children. */
    cr_expect_eq(query_int(db, "SELECT count(*) FROM runs r WHERE (SELECT count(*) FROM run_segments g"
                               " WHERE g.run_id = r.id) != 200 OR (SELECT count(*) FROM run_devices d"
                               " WHERE d.run_id = r.id) != 3"),
                 0);
    expect_integrity_ok(db);
    close_checked(st);
    res_run_free(r);
}

/* ---- hardening ----------------------------------------------------------- */

Test(store, database_locked_beyond_timeout_is_clear_error)
{
    res_run *r = make_run(1, 5);
    store *st = open_rw();
    int64_t first = put(st, r, NULL, 0);

    sqlite3 *other;
    cr_assert_eq(sqlite3_open(dbpath, &other), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);

    sqlite3_busy_timeout(store_db(st), 200); /* the real 10 s would only slow the test */
    scn_scenario s = fake_scn("tiny", SCN_TEXT);
    dp_err err = {0};
    int rc = store_put_run(st, &s, NULL, 0, r, "0.1.0", "t", 0, NULL, NULL, &err);
    expect_erun_naming_file(rc, &err, "locked");
    int64_t sw;
    rc = store_sweep_get_or_create(st, &s, "{\"a\":1}", &sw, &err);
    expect_erun_naming_file(rc, &err, "locked");

    /* Readers are not blocked by a writer (WAL). */
    dp_err rerr = {0};
    store *ro = store_open(dbpath, 1, &rerr);
    cr_assert_not_null(ro, "%s", rerr.msg);
    res_run *got = NULL;
    cr_expect_eq(store_get_run(ro, first, &got, &rerr), 0, "%s", rerr.msg);
    res_run_free(got);
    store_close(ro);

    sqlite3_exec(other, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(other);
    put(st, r, NULL, 0); /* works again once the lock is gone */
    cr_expect_eq(query_int(store_db(st), "SELECT count(*) FROM runs"), 2);
    close_checked(st);
    expect_run_intact(first, r);
    res_run_free(r);
}

Test(store, readonly_handle_refuses_writes)
{
    res_run *r = make_run(1, 5);
    store *st = open_rw();
    int64_t first = put(st, r, NULL, 0);
    close_checked(st);
    dp_err err = {0};
    st = store_open(dbpath, 1, &err);
    cr_assert_not_null(st, "%s", err.msg);
    scn_scenario s = fake_scn("tiny", SCN_TEXT);
    int rc = store_put_run(st, &s, NULL, 0, r, "0.1.0", "t", 0, NULL, NULL, &err);
    expect_erun_naming_file(rc, &err, "read-only");
    rc = store_put_failed(st, "x", "y", 1, NULL, 0, "ddp", 1, "v", "t", 0, NULL, "e", NULL, &err);
    expect_erun_naming_file(rc, &err, "read-only");
    /* Even through the borrowed handle nothing can be written. */
    cr_expect_neq(sqlite3_exec(store_db(st), "DELETE FROM runs", NULL, NULL, NULL), SQLITE_OK);
    close_checked(st);
    expect_run_intact(first, r);
    res_run_free(r);
}

Test(store, read_only_file_is_clear_error)
{
    res_run *r = make_run(1, 5);
    store *st = open_rw();
    int64_t first = put(st, r, NULL, 0);
    close_checked(st);
    cr_assert_eq(chmod(dbpath, 0444), 0);
    cr_assert_eq(chmod(dir, 0777), 0);

    /* root ignores file modes, so the attempt runs as an unprivileged user. */
    int fd[2];
    cr_assert_eq(pipe(fd), 0);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        close(fd[0]);
        if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0))
            _exit(77);
        dp_err err = {0};
        store *c = store_open(dbpath, 0, &err);
        int rc = c ? 0 : err.code;
        if (c) { /* should not happen; try a write to report what it does */
            scn_scenario s = fake_scn("tiny", SCN_TEXT);
            rc = store_put_run(c, &s, NULL, 0, r, "0.1.0", "t", 0, NULL, NULL, &err);
            store_close(c);
        }
        if (write(fd[1], &rc, sizeof rc) != sizeof rc ||
            write(fd[1], err.msg, sizeof err.msg) != sizeof err.msg)
            _exit(2);
        _exit(0);
    }
    close(fd[1]);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
        cr_skip_test("cannot drop root privileges here");
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    dp_err err = {0};
    int rc = 0;
    cr_assert_eq(read(fd[0], &rc, sizeof rc), (ssize_t)sizeof rc);
    cr_assert_eq(read(fd[0], err.msg, sizeof err.msg), (ssize_t)sizeof err.msg);
    close(fd[0]);
    err.code = rc;
    expect_erun_naming_file(rc, &err, "read-only");

    /* Read-only open of a read-only file works (results can still be shown). */
    expect_run_intact(first, r);
    res_run_free(r);
}

Test(store, full_database_is_clear_error_and_keeps_rows)
{
    res_run *small = make_run(1, 5), *big = make_run(2, 5000);
    store *st = open_rw();
    int64_t first = put(st, small, NULL, 0);
    char before[256], after[256];
    table_counts(store_db(st), before, sizeof before);
    int64_t pages = query_int(store_db(st), "PRAGMA page_count");
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA max_page_count = %" PRId64, pages + 2);
    query_int(store_db(st), sql);

    scn_scenario s = fake_scn("tiny", SCN_TEXT);
    dp_err err = {0};
    int rc = store_put_run(st, &s, NULL, 0, big, "0.1.0", "t", 0, NULL, NULL, &err);
    expect_erun_naming_file(rc, &err, "full");
    table_counts(store_db(st), after, sizeof after);
    cr_expect_str_eq(after, before);
    cr_expect(sqlite3_get_autocommit(store_db(st)));
    expect_integrity_ok(store_db(st));
    close_checked(st);
    expect_run_intact(first, small);
    res_run_free(small);
    res_run_free(big);
}

Test(store, file_size_limit_is_clear_error_and_keeps_rows)
{
    res_run *small = make_run(1, 5), *big = make_run(2, 20000);
    store *st = open_rw();
    int64_t first = put(st, small, NULL, 0);
    char before[256], after[256];
    table_counts(store_db(st), before, sizeof before);
    close_checked(st);

    int fd[2];
    cr_assert_eq(pipe(fd), 0);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        /* The disk "fills" 64 KiB past the current files: writes fail with
         * EFBIG (SIGXFSZ ignored) as they would with ENOSPC. */
        close(fd[0]);
        signal(SIGXFSZ, SIG_IGN);
        dp_err err = {0};
        store *c = store_open(dbpath, 0, &err);
        int rc = DP_OK;
        if (c) {
            struct rlimit lim = {.rlim_cur = 64 * 1024, .rlim_max = RLIM_INFINITY};
            struct stat sb;
            if (stat(dbpath, &sb) == 0)
                lim.rlim_cur += (rlim_t)sb.st_size;
            if (setrlimit(RLIMIT_FSIZE, &lim) != 0)
                _exit(2);
            scn_scenario s = fake_scn("tiny", SCN_TEXT);
            rc = store_put_run(c, &s, NULL, 0, big, "0.1.0", "t", 0, NULL, NULL, &err);
            store_close(c);
        } else
            rc = 1;
        if (write(fd[1], &rc, sizeof rc) != sizeof rc ||
            write(fd[1], err.msg, sizeof err.msg) != sizeof err.msg)
            _exit(2);
        _exit(0);
    }
    close(fd[1]);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d", status);
    dp_err err = {0};
    int rc = 0;
    cr_assert_eq(read(fd[0], &rc, sizeof rc), (ssize_t)sizeof rc);
    cr_assert_eq(read(fd[0], err.msg, sizeof err.msg), (ssize_t)sizeof err.msg);
    close(fd[0]);
    err.code = rc;
    expect_erun_naming_file(rc, &err, NULL);

    st = open_rw();
    table_counts(store_db(st), after, sizeof after);
    cr_expect_str_eq(after, before);
    expect_integrity_ok(store_db(st));
    close_checked(st);
    expect_run_intact(first, small);
    res_run_free(small);
    res_run_free(big);
}

Test(store, invalid_runs_are_refused_before_any_write)
{
    res_run *r = make_run(1, 3);
    store *st = open_rw();
    scn_scenario s = fake_scn("tiny", SCN_TEXT);
    dp_err err = {0};
    r->flops_bins[1] = NAN;
    cr_expect_eq(store_put_run(st, &s, NULL, 0, r, "0.1.0", "t", 0, NULL, NULL, &err), DP_EINPUT);
    r->flops_bins[1] = 1.0;
    r->segments[0].device = 7;
    cr_expect_eq(store_put_run(st, &s, NULL, 0, r, "0.1.0", "t", 0, NULL, NULL, &err), DP_EINPUT);
    r->segments[0].device = 0;
    const char *bad_ov[] = {"a=1", NULL};
    cr_expect_eq(store_put_run(st, &s, bad_ov, 2, r, "0.1.0", "t", 0, NULL, NULL, &err), DP_EINPUT);
    cr_expect_eq(store_put_run(st, &s, NULL, 0, r, NULL, "t", 0, NULL, NULL, &err), DP_EINPUT);
    cr_expect_eq(store_put_run(st, &s, NULL, 0, NULL, "v", "t", 0, NULL, NULL, &err), DP_EINPUT);
    cr_expect_eq(query_int(store_db(st), "SELECT count(*) FROM runs"), 0);
    close_checked(st);
    res_run_free(r);
}

/* ---- sweeps ------------------------------------------------------------- */

Test(store, sweep_points_are_tracked_and_failed_ones_retried)
{
    res_run *r = make_run(4, 3);
    store *st = open_rw();
    scn_scenario s = fake_scn("tiny", SCN_TEXT);
    dp_err err = {0};
    int64_t sw = 0, sw2 = 0;
    const char *spec = "{\"axes\":[{\"key\":\"training.epochs\",\"values\":[1,2]}]}";
    cr_assert_eq(store_sweep_get_or_create(st, &s, spec, &sw, &err), 0, "%s", err.msg);
    cr_assert_eq(store_sweep_get_or_create(st, &s, spec, &sw2, &err), 0, "%s", err.msg);
    cr_expect_eq(sw, sw2);
    cr_expect_eq(query_int(store_db(st), "SELECT count(*) FROM sweeps"), 1);

    /* Same spec over another scenario is refused. */
    scn_scenario other = fake_scn("tiny", "name: tiny\nedited: 1\n");
    cr_expect_eq(store_sweep_get_or_create(st, &other, spec, &sw2, &err), DP_ERUN);

    const char *pt = "{\"training.epochs\":\"2\"}";
    int done = -1;
    cr_assert_eq(store_point_done(st, sw, pt, "ddp", 4, "0.1.0", &done, &err), 0, "%s", err.msg);
    cr_expect_eq(done, 0);
    cr_assert_eq(store_put_failed(st, "tiny", SCN_TEXT, s.text_hash, NULL, 0, "ddp", 4, "0.1.0", "t", sw, pt,
                                  "stalled", NULL, &err),
                 0, "%s", err.msg);
    cr_assert_eq(store_point_done(st, sw, pt, "ddp", 4, "0.1.0", &done, &err), 0);
    cr_expect_eq(done, 2);
    int64_t id = 0;
    cr_assert_eq(store_put_run(st, &s, NULL, 0, r, "0.1.0", "t", sw, pt, &id, &err), 0, "%s", err.msg);
    cr_assert_eq(store_point_done(st, sw, pt, "ddp", 4, "0.1.0", &done, &err), 0);
    cr_expect_eq(done, 1);
    cr_expect_eq(query_int(store_db(st), "SELECT count(*) FROM runs"), 1);
    /* Other version, seed or policy: a different point. */
    cr_assert_eq(store_point_done(st, sw, pt, "ddp", 4, "0.2.0", &done, &err), 0);
    cr_expect_eq(done, 0);
    cr_assert_eq(store_point_done(st, sw, pt, "cadp", 4, "0.1.0", &done, &err), 0);
    cr_expect_eq(done, 0);
    /* A second successful row for the same point is refused, nothing added. */
    int rc = store_put_run(st, &s, NULL, 0, r, "0.1.0", "t", sw, pt, NULL, &err);
    expect_erun_naming_file(rc, &err, "stored already");
    cr_expect_eq(query_int(store_db(st), "SELECT count(*) FROM runs"), 1);
    /* An unknown sweep id is refused by the foreign key. */
    rc = store_put_run(st, &s, NULL, 0, r, "0.1.0", "t", sw + 100, pt, NULL, &err);
    expect_erun_naming_file(rc, &err, "does not exist");
    close_checked(st);
    res_run_free(r);
}

/* Runs stored before run_values existed get their rows when the file is
 * migrated (units by suffix); JSON that is not what it should be gives
 * no rows rather than a failed migration. */
Test(store, older_runs_get_their_values_when_migrated)
{
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(dbpath, &db), SQLITE_OK);
    const char *v1 = V1_TABLES
        "INSERT INTO scenarios VALUES(1, 'old', '00000000000000aa', 'name: old', '2026-01-01T00:00:00Z');"
        "INSERT INTO runs(id, scenario_id, policy, options_json, overrides_json, seed, version, started_at,"
        " wall_s) VALUES(1, 1, 'cadp', '{}', '[\"devices.a.link.up=2Gbps\",\"training.epochs=3\"]', 7, "
        "'0.0.9',"
        " '2026-01-01T00:00:00Z', 0.5);"
        "INSERT INTO runs(id, scenario_id, policy, options_json, overrides_json, seed, version, started_at,"
        " wall_s) VALUES(2, 1, 'ddp', '{}', 'not json', 7, '0.0.9', '2026-01-01T00:00:00Z', 0.5);"
        "PRAGMA application_id = 1685091181; PRAGMA user_version = 1;";
    cr_assert_eq(sqlite3_exec(db, v1, NULL, NULL, NULL), SQLITE_OK, "%s", sqlite3_errmsg(db));
    sqlite3_close(db);
    dp_err err = {0};
    store *ro = store_open_read(dbpath, &err); /* migrates */
    cr_assert_not_null(ro, "%s", err.msg);
    char row[256];
    value_row(store_db(ro), 1, 0, row, sizeof row);
    cr_expect_str_eq(row, "set|devices.a.link.up|2Gbps|250000000.0|B/s");
    value_row(store_db(ro), 1, 1, row, sizeof row);
    cr_expect_str_eq(row, "set|training.epochs|3|3.0|-");
    cr_expect_eq(query_int(store_db(ro), "SELECT count(*) FROM run_values WHERE run_id = 2"), 0);
    cr_expect_eq(query_int(store_db(ro), "SELECT count(*) FROM runs WHERE policy_label IS NULL"), 2);
    close_checked(ro);
}
