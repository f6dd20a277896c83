/* test_store.c: the SQLite results store (sim/store/store.h) and the run
 * record it stores (sim/core/results.h).
 *
 * Runs are built by hand (no simulator needed) with awkward doubles so the
 * round trip is checked bit for bit.  Failure cases check both the error
 * (DP_ERUN, message naming the file) and that the rows stored before are
 * still there and the database passes integrity_check. */
#include <criterion/criterion.h>

#include "dp_common.h"
#include "results.h"
#include "scenario.h"
#include "store/store.h"
#include "store/store_sql.h" /* rows built and inspected directly */

#include <errno.h>
#include <float.h>
#include <dirent.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- fixture: a fresh directory per test, and a leak check ------------- */

static char dir[64];
static char dbpath[128];
static long live_at_start;

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/dpsim-store-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(dbpath, sizeof dbpath, "%s/results.db", dir);
    live_at_start = dp_alloc_live();
}

/* rm -rf: the tests create at most a few levels of files. */
static void remove_tree(const char *path)
{
    chmod(path, 0700);
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char sub[1024];
            snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
            remove_tree(sub);
        }
        closedir(d);
    }
    remove(path);
}

static void teardown(void)
{
    dp_alloc_fail_after(0);
    cr_expect_eq(dp_alloc_live(), live_at_start, "leaked %ld blocks", dp_alloc_live() - live_at_start);
    remove_tree(dir);
}

TestSuite(store, .init = setup, .fini = teardown);
TestSuite(results, .init = setup, .fini = teardown);

/* ---- helpers ----------------------------------------------------------- */

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

static const char *const SCN_TEXT = "name: tiny\nmodel: {params: 1e6}\n# a comma, a \"quote\"\r\nend: 1\n";

static scn_scenario fake_scn(const char *name, const char *text)
{
    scn_scenario s;
    memset(&s, 0, sizeof s);
    s.name = (char *)name;
    s.text = (char *)text;
    s.text_hash = fnv1a(text);
    return s;
}

/* A run with every field set to a value that is easy to get wrong. */
static res_run *make_run(uint64_t seed, size_t n_seg)
{
    res_run *r = res_run_new(3, NULL);
    cr_assert_not_null(r);
    snprintf(r->policy, sizeof r->policy, "ddp");
    r->options_json = dp_strdup("{\"bucket_bytes\":26214400,\"overlap\":true}");
    r->seed = seed;
    r->tsend_s = 0.1;
    r->ttraining_s = 1.0 / 3.0;
    r->ttotal_s = 1e-300;
    r->tflops = 5e-324; /* denormal */
    r->utilization = NAN;
    r->samples_processed = 6.02214076e23;
    r->bytes_total = DBL_MAX;
    r->events = UINT64_MAX - 7;
    r->wall_s = 0.125;
    for (size_t i = 0; i < r->n_devices; i++) {
        res_device *d = &r->devices[i];
        snprintf(d->name, sizeof d->name, "rtx3090[%zu] \"x\",y", i);
        snprintf(d->group, sizeof d->group, "g\xc3\xa9%zu", i);
        snprintf(d->kind, sizeof d->kind, "%s", i ? "cpu" : "gpu");
        d->samples = (int64_t)1 << (40 + i);
        d->batches = -(int64_t)i; /* not meaningful, but must round-trip */
        d->compute_s = nextafter(1.0, 2.0) + (double)i;
        d->send_s = 1e308;
        d->recv_s = -0.5;
        d->wait_s = 2.0 / 7.0;
        d->bytes_sent = 1e-5;
        d->bytes_recv = 123456789.123456789;
        d->data_ready_s = INFINITY;
    }
    for (int e = 1; e <= 3; e++)
        cr_assert_eq(res_add_epoch(r, e, e * 0.7), 0);
    r->bin_s = 0.3;
    r->timeline_res_s = 0.125;
    r->n_bins = 4;
    r->flops_bins = dp_calloc(r->n_bins, sizeof *r->flops_bins);
    for (size_t k = 0; k < r->n_bins; k++)
        r->flops_bins[k] = 1.0e12 / (double)(k + 3);
    for (size_t k = 0; k < n_seg; k++)
        cr_assert_eq(
            res_add_segment(r, (int)(k % 3), (res_activity)(k % 4), (double)k * 0.1, (double)k * 0.1 + 0.05),
            0);
    return r;
}

static int same_bits(double a, double b)
{
    if (isnan(a) && isnan(b))
        return 1;
    return memcmp(&a, &b, sizeof a) == 0;
}

#define expect_bits(a, b) cr_expect(same_bits((a), (b)), "%s: %.17g != %.17g", #a, (a), (b))

static void expect_runs_equal(const res_run *a, const res_run *b)
{
    cr_expect_str_eq(a->policy, b->policy);
    cr_expect_str_eq(a->options_json ? a->options_json : "{}", b->options_json);
    cr_expect_eq(a->seed, b->seed);
    expect_bits(a->tsend_s, b->tsend_s);
    expect_bits(a->ttraining_s, b->ttraining_s);
    expect_bits(a->ttotal_s, b->ttotal_s);
    expect_bits(a->tflops, b->tflops);
    expect_bits(a->utilization, b->utilization);
    expect_bits(a->samples_processed, b->samples_processed);
    expect_bits(a->bytes_total, b->bytes_total);
    cr_expect_eq(a->events, b->events);
    expect_bits(a->wall_s, b->wall_s);
    cr_assert_eq(a->n_devices, b->n_devices);
    for (size_t i = 0; i < a->n_devices; i++) {
        const res_device *x = &a->devices[i], *y = &b->devices[i];
        cr_expect_str_eq(x->name, y->name);
        cr_expect_str_eq(x->group, y->group);
        cr_expect_str_eq(x->kind, y->kind);
        cr_expect_eq(x->samples, y->samples);
        cr_expect_eq(x->batches, y->batches);
        expect_bits(x->compute_s, y->compute_s);
        expect_bits(x->send_s, y->send_s);
        expect_bits(x->recv_s, y->recv_s);
        expect_bits(x->wait_s, y->wait_s);
        expect_bits(x->bytes_sent, y->bytes_sent);
        expect_bits(x->bytes_recv, y->bytes_recv);
        expect_bits(x->data_ready_s, y->data_ready_s);
    }
    cr_assert_eq(a->n_epochs, b->n_epochs);
    for (size_t i = 0; i < a->n_epochs; i++) {
        cr_expect_eq(a->epochs[i].epoch, b->epochs[i].epoch);
        expect_bits(a->epochs[i].end_s, b->epochs[i].end_s);
    }
    expect_bits(a->bin_s, b->bin_s);
    expect_bits(a->timeline_res_s, b->timeline_res_s);
    cr_assert_eq(a->n_bins, b->n_bins);
    for (size_t i = 0; i < a->n_bins; i++)
        expect_bits(a->flops_bins[i], b->flops_bins[i]);
    cr_assert_eq(a->n_segments, b->n_segments);
    for (size_t i = 0; i < a->n_segments; i++) {
        cr_expect_eq(a->segments[i].device, b->segments[i].device);
        cr_expect_eq(a->segments[i].act, b->segments[i].act);
        expect_bits(a->segments[i].t0_s, b->segments[i].t0_s);
        expect_bits(a->segments[i].t1_s, b->segments[i].t1_s);
    }
}

static store *open_rw(void)
{
    dp_err err = {0};
    store *st = store_open(dbpath, 0, &err);
    cr_assert_not_null(st, "store_open: %s", err.msg);
    return st;
}

/* Close, checking first that no statement was left unfinalized (SQLite
 * would keep the connection alive as a zombie: a leak outside dp_malloc). */
static void close_checked(store *st)
{
    cr_expect_null(sqlite3_next_stmt(store_db(st), NULL), "a prepared statement was left open");
    cr_expect(sqlite3_get_autocommit(store_db(st)), "a transaction was left open");
    store_close(st);
}

static int64_t put(store *st, const res_run *r, const char *const *ov, size_t n_ov)
{
    scn_scenario s = fake_scn("tiny", SCN_TEXT);
    dp_err err = {0};
    int64_t id = 0;
    int rc = store_put_run(st, &s, ov, n_ov, r, "0.1.0", "2024-01-02T03:04:05Z", 0, NULL, &id, &err);
    cr_assert_eq(rc, 0, "store_put_run: %s", err.msg);
    cr_assert_gt(id, 0);
    return id;
}

static int64_t query_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *s;
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(db));
    cr_assert_eq(sqlite3_step(s), SQLITE_ROW, "%s: %s", sql, sqlite3_errmsg(db));
    int64_t v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
}

/* Row counts of every table, as one comparable string. */
static void table_counts(sqlite3 *db, char *buf, size_t len)
{
    snprintf(buf, len, "%" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64,
             query_int(db, "SELECT count(*) FROM scenarios"), query_int(db, "SELECT count(*) FROM sweeps"),
             query_int(db, "SELECT count(*) FROM runs"), query_int(db, "SELECT count(*) FROM run_devices"),
             query_int(db, "SELECT count(*) FROM run_epochs"),
             query_int(db, "SELECT count(*) FROM run_flops"),
             query_int(db, "SELECT count(*) FROM run_segments"));
}

static void expect_integrity_ok(sqlite3 *db)
{
    sqlite3_stmt *s;
    cr_assert_eq(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &s, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_step(s), SQLITE_ROW);
    cr_expect_str_eq((const char *)sqlite3_column_text(s, 0), "ok");
    sqlite3_finalize(s);
}

/* Reopen the database and check that run `id` still equals `want`. */
static void expect_run_intact(int64_t id, const res_run *want)
{
    dp_err err = {0};
    store *st = store_open(dbpath, 1, &err);
    cr_assert_not_null(st, "%s", err.msg);
    res_run *got = NULL;
    cr_assert_eq(store_get_run(st, id, &got, &err), 0, "%s", err.msg);
    expect_runs_equal(want, got);
    expect_integrity_ok(store_db(st));
    res_run_free(got);
    close_checked(st);
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    char *buf = NULL;
    size_t n = 0, cap = 0;
    int c;
    while ((c = fgetc(f)) != EOF) {
        if (n + 1 >= cap) {
            cap = cap ? 2 * cap : 4096;
            buf = realloc(buf, cap);
            cr_assert_not_null(buf);
        }
        buf[n++] = (char)c;
    }
    fclose(f);
    if (!buf)
        buf = calloc(1, 1);
    buf[n] = '\0';
    *len = n;
    return buf;
}

static void write_file(const char *path, const char *text, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(text, 1, n, f), n);
    cr_assert_eq(fclose(f), 0);
}

static void expect_erun_naming_file(int rc, const dp_err *err, const char *word)
{
    cr_log_info("%s", err->msg); /* shown with --verbose: the messages users will see */
    cr_expect_eq(rc, DP_ERUN, "rc %d: %s", rc, err->msg);
    cr_expect_eq(err->code, DP_ERUN);
    cr_expect(strstr(err->msg, dbpath) != NULL, "message does not name the file: %s", err->msg);
    if (word)
        cr_expect(strstr(err->msg, word) != NULL, "message lacks '%s': %s", word, err->msg);
}

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

/* One run_values row as "source|key|text|si|unit" (NULL as "-"). */
static void value_row(sqlite3 *db, int64_t run, int seq, char *buf, size_t len)
{
    sqlite3_stmt *s;
    cr_assert_eq(sqlite3_prepare_v2(db,
                                    "SELECT source, key, text, quote(si), coalesce(unit, '-') FROM run_values"
                                    " WHERE run_id = ?1 AND seq = ?2",
                                    -1, &s, NULL),
                 SQLITE_OK);
    sqlite3_bind_int64(s, 1, run);
    sqlite3_bind_int(s, 2, seq);
    if (sqlite3_step(s) == SQLITE_ROW)
        snprintf(buf, len, "%s|%s|%s|%s|%s", sqlite3_column_text(s, 0), sqlite3_column_text(s, 1),
                 sqlite3_column_text(s, 2), sqlite3_column_text(s, 3), sqlite3_column_text(s, 4));
    else
        snprintf(buf, len, "(none)");
    sqlite3_finalize(s);
}

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
                                  "{\"devices.cpu.link.down\":\"1Gbps\",\"devices.gpu.count\":2}", "boom", &fid,
                                  &err),
                 0, "%s", err.msg);
    value_row(store_db(st), fid, 0, row, sizeof row);
    cr_expect_str_eq(row, "point|devices.cpu.link.down|1Gbps|125000000.0|B/s");
    value_row(store_db(st), fid, 1, row, sizeof row);
    cr_expect_str_eq(row, "point|devices.gpu.count|2|2.0|-");
    cr_expect_eq(query_int(store_db(st), "SELECT count(*) FROM run_values WHERE run_id IN (SELECT id FROM runs"
                                         " WHERE status = 'failed')"),
                 2);
    cr_expect_eq(query_int(store_db(st), "SELECT count(*) FROM runs WHERE policy_label IS NULL"), 1);
    close_checked(st);
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
        " wall_s) VALUES(1, 1, 'cadp', '{}', '[\"devices.a.link.up=2Gbps\",\"training.epochs=3\"]', 7, '0.0.9',"
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
