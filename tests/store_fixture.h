/* store_fixture.h: what test_store.c and test_store_read.c share: a fresh
 * directory per test with a leak check (the suites `store` and `results`),
 * runs built by hand with awkward doubles, and the checks on a database
 * (integrity, row counts, a run read back bit for bit).  Helpers are
 * static inline, so a file that uses some of them compiles cleanly. */
#ifndef DP_STORE_FIXTURE_H
#define DP_STORE_FIXTURE_H

#include <criterion/criterion.h>
#include "leaks.h"

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

static inline void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/dpsim-store-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(dbpath, sizeof dbpath, "%s/results.db", dir);
    live_at_start = dp_alloc_live();
}

/* rm -rf: the tests create at most a few levels of files. */
static inline void remove_tree(const char *path)
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

static inline void teardown(void)
{
    dp_alloc_fail_after(0);
    leaks_verify(live_at_start);
    remove_tree(dir);
}

TestSuite(store, .init = setup, .fini = teardown);
TestSuite(results, .init = setup, .fini = teardown);

/* ---- helpers ----------------------------------------------------------- */

static inline uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

static const char *const SCN_TEXT = "name: tiny\nmodel: {params: 1e6}\n# a comma, a \"quote\"\r\nend: 1\n";

static inline scn_scenario fake_scn(const char *name, const char *text)
{
    scn_scenario s;
    memset(&s, 0, sizeof s);
    s.name = (char *)name;
    s.text = (char *)text;
    s.text_hash = fnv1a(text);
    return s;
}

/* A run with every field set to a value that is easy to get wrong. */
static inline res_run *make_run(uint64_t seed, size_t n_seg)
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
        char name[RES_NAME_MAX + 1], group[RES_GROUP_MAX + 1];
        snprintf(name, sizeof name, "rtx3090[%zu] \"x\",y", i);
        snprintf(group, sizeof group, "g\xc3\xa9%zu", i);
        cr_assert_eq(res_device_names(r, i, name, group, i ? "cpu" : "gpu"), 0);
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

static inline int same_bits(double a, double b)
{
    if (isnan(a) && isnan(b))
        return 1;
    return memcmp(&a, &b, sizeof a) == 0;
}

#define expect_bits(a, b) cr_expect(same_bits((a), (b)), "%s: %.17g != %.17g", #a, (a), (b))

static inline void expect_runs_equal(const res_run *a, const res_run *b)
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

static inline store *open_rw(void)
{
    dp_err err = {0};
    store *st = store_open(dbpath, 0, &err);
    cr_assert_not_null(st, "store_open: %s", err.msg);
    return st;
}

/* Close, checking first that no statement was left unfinalized (SQLite
 * would keep the connection alive as a zombie: a leak outside dp_malloc). */
static inline void close_checked(store *st)
{
    cr_expect_null(sqlite3_next_stmt(store_db(st), NULL), "a prepared statement was left open");
    cr_expect(sqlite3_get_autocommit(store_db(st)), "a transaction was left open");
    store_close(st);
}

static inline int64_t put(store *st, const res_run *r, const char *const *ov, size_t n_ov)
{
    scn_scenario s = fake_scn("tiny", SCN_TEXT);
    dp_err err = {0};
    int64_t id = 0;
    int rc = store_put_run(st, &s, ov, n_ov, r, "0.1.0", "2024-01-02T03:04:05Z", 0, NULL, &id, &err);
    cr_assert_eq(rc, 0, "store_put_run: %s", err.msg);
    cr_assert_gt(id, 0);
    return id;
}

static inline int64_t query_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *s;
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(db));
    cr_assert_eq(sqlite3_step(s), SQLITE_ROW, "%s: %s", sql, sqlite3_errmsg(db));
    int64_t v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
}

/* Row counts of every table, as one comparable string. */
static inline void table_counts(sqlite3 *db, char *buf, size_t len)
{
    snprintf(buf, len, "%" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64,
             query_int(db, "SELECT count(*) FROM scenarios"), query_int(db, "SELECT count(*) FROM sweeps"),
             query_int(db, "SELECT count(*) FROM runs"), query_int(db, "SELECT count(*) FROM run_devices"),
             query_int(db, "SELECT count(*) FROM run_epochs"),
             query_int(db, "SELECT count(*) FROM run_flops"),
             query_int(db, "SELECT count(*) FROM run_segments"));
}

static inline void expect_integrity_ok(sqlite3 *db)
{
    sqlite3_stmt *s;
    cr_assert_eq(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &s, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_step(s), SQLITE_ROW);
    cr_expect_str_eq((const char *)sqlite3_column_text(s, 0), "ok");
    sqlite3_finalize(s);
}

/* Reopen the database and check that run `id` still equals `want`. */
static inline void expect_run_intact(int64_t id, const res_run *want)
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

static inline char *slurp(const char *path, size_t *len)
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

static inline void write_file(const char *path, const char *text, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(text, 1, n, f), n);
    cr_assert_eq(fclose(f), 0);
}

static inline void expect_erun_naming_file(int rc, const dp_err *err, const char *word)
{
    cr_log_info("%s", err->msg); /* shown with --verbose: the messages users will see */
    cr_expect_eq(rc, DP_ERUN, "rc %d: %s", rc, err->msg);
    cr_expect_eq(err->code, DP_ERUN);
    cr_expect(strstr(err->msg, dbpath) != NULL, "message does not name the file: %s", err->msg);
    if (word)
        cr_expect(strstr(err->msg, word) != NULL, "message lacks '%s': %s", word, err->msg);
}

/* One run_values row as "source|key|text|si|unit" (NULL as "-"). */
static inline void value_row(sqlite3 *db, int64_t run, int seq, char *buf, size_t len)
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

#endif
