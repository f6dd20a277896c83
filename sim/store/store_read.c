/* store_read.c: reading the results database back (store.c lists the
 * store's files). */
#include "log.h"
#include "store_impl.h"
#include "store_sql.h"

#include "json.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- reading ---------------------------------------------------------- */

/* Reads run inside one read transaction, so a concurrent writer cannot
 * show us half of another state (WAL gives the snapshot). */
static int begin_read(store *st, const char *what, dp_err *err)
{
    int rc = store_exec(st, "BEGIN");
    return rc == SQLITE_OK ? 0 : store_sql_fail(st, rc, what, err);
}

static int end_read(store *st, int e, const char *what, dp_err *err)
{
    if (e) {
        store_rollback(st);
        return e;
    }
    int rc = store_exec(st, "COMMIT");
    return rc == SQLITE_OK ? 0 : store_sql_fail(st, rc, what, err);
}

static int count_rows(store *st, const char *sql, int64_t run_id, int64_t *n, const char *what, dp_err *err)
{
    sqlite3_stmt *s;
    int row, e = store_sql_first(st, &s, &row, what, err, sql, "i", run_id);
    if (e)
        return e;
    if (!row) /* a count always has its row */
        return store_sql_fail(st, SQLITE_DONE, what, err);
    *n = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return 0;
}

static int corrupt(const store *st, int64_t run_id, const char *what, dp_err *err)
{
    return dp_err_set(err, DP_ERUN, "%s: run %" PRId64 " has inconsistent %s rows", st->path, run_id, what);
}

static int read_run_row(store *st, int64_t run_id, res_run *r, dp_err *err)
{
    sqlite3_stmt *s;
    int row, e = store_sql_first(
                 st, &s, &row, "reading the run", err,
                 "SELECT policy, " STORE_SQL_JSON_OF(
                     "options_json",
                     "object") ","
                               " seed, wall_s, tsend_s, ttraining_s, ttotal_s, tflops,"
                               " utilization, samples_processed, bytes_total, events, bin_s, timeline_res_s,"
                               " policy_label, policy_color FROM runs WHERE id = ?1",
                 "i", run_id);
    if (e)
        return e;
    if (row && sqlite3_column_type(s, 1) == SQLITE_NULL) {
        e = dp_err_set(err, DP_ERUN,
                       "%s: run %" PRId64 ": its stored options are not a JSON object (a damaged "
                       "or crafted database)",
                       st->path, run_id);
        sqlite3_finalize(s);
    } else if (row) {
        snprintf(r->policy, sizeof r->policy, "%s", store_col_text(s, 0));
        r->options_json = dp_strdup(store_col_text(s, 1));
        r->seed = (uint64_t)sqlite3_column_int64(s, 2);
        r->wall_s = store_col_double(s, 3);
        r->tsend_s = store_col_double(s, 4);
        r->ttraining_s = store_col_double(s, 5);
        r->ttotal_s = store_col_double(s, 6);
        r->tflops = store_col_double(s, 7);
        r->utilization = store_col_double(s, 8);
        r->samples_processed = store_col_double(s, 9);
        r->bytes_total = store_col_double(s, 10);
        r->events = (uint64_t)sqlite3_column_int64(s, 11);
        r->bin_s = store_col_double(s, 12);
        r->timeline_res_s = sqlite3_column_type(s, 13) == SQLITE_NULL ? 0 : sqlite3_column_double(s, 13);
        snprintf(r->policy_label, sizeof r->policy_label, "%s", store_col_text(s, 14));
        snprintf(r->policy_color, sizeof r->policy_color, "%s", store_col_text(s, 15));
        if (!r->options_json)
            e = dp_err_set(err, DP_ENOMEM, "%s: out of memory reading run %" PRId64, st->path, run_id);
        sqlite3_finalize(s);
    } else
        e = dp_err_set(err, DP_EINPUT, "%s: no run with id %" PRId64, st->path, run_id);
    return e;
}

int store_sql_rows(store *st, const char *sql, const char *what, int64_t id, const char *text, void *ctx,
                   store_row_fn row, size_t *n_rows, dp_err *err)
{
    sqlite3_stmt *s;
    char doing[64];
    snprintf(doing, sizeof doing, "reading %s", what);
    size_t i = 0;
    if (n_rows)
        *n_rows = 0;
    int e = store_sql_prepare(st, sql, &s, doing, err);
    if (e)
        return e;
    sqlite3_bind_int64(s, 1, id);
    if (text)
        sqlite3_bind_text(s, 2, text, -1, SQLITE_TRANSIENT);
    int rc = SQLITE_DONE;
    while (!e && (rc = sqlite3_step(s)) == SQLITE_ROW)
        e = row(st, s, id, i++, ctx, err);
    if (!e && rc != SQLITE_DONE)
        e = store_sql_fail(st, rc, doing, err);
    sqlite3_finalize(s);
    if (n_rows)
        *n_rows = i;
    return e;
}

/* The child tables of store_get_run: each reader is a row function over
 * store_sql_rows, its context the res_run being filled. */

static int device_row(store *st, sqlite3_stmt *s, int64_t run_id, size_t i, void *ctx, dp_err *err)
{
    res_run *r = ctx;
    if (i >= r->n_devices || sqlite3_column_int64(s, 0) != (int64_t)i)
        return corrupt(st, run_id, "device", err);
    res_device *d = &r->devices[i];
    if (res_device_names(r, i, store_col_text(s, 1), store_col_text(s, 2), store_col_text(s, 3)))
        return dp_err_set(err, DP_ENOMEM, "%s: out of memory reading run %lld", st->path, (long long)run_id);
    d->samples = sqlite3_column_int64(s, 4);
    d->batches = sqlite3_column_int64(s, 5);
    d->compute_s = store_col_double(s, 6);
    d->send_s = store_col_double(s, 7);
    d->recv_s = store_col_double(s, 8);
    d->wait_s = store_col_double(s, 9);
    d->bytes_sent = store_col_double(s, 10);
    d->bytes_recv = store_col_double(s, 11);
    d->data_ready_s = store_col_double(s, 12);
    return 0;
}

static int read_devices(store *st, int64_t run_id, res_run *r, dp_err *err)
{
    size_t n = 0;
    int e = store_sql_rows(
        st,
        "SELECT idx, name, grp, kind, samples, batches, compute_s, send_s, recv_s, wait_s,"
        " bytes_sent, bytes_recv, data_ready_s FROM run_devices WHERE run_id = ?1 ORDER BY idx",
        "devices", run_id, NULL, r, device_row, &n, err);
    if (!e && n != r->n_devices)
        e = corrupt(st, run_id, "device", err);
    return e;
}

static int oom_reading(const store *st, int64_t run_id, const char *what, dp_err *err)
{
    return dp_err_set(err, DP_ENOMEM, "%s: out of memory reading %s of run %" PRId64, st->path, what, run_id);
}

static int epoch_row(store *st, sqlite3_stmt *s, int64_t run_id, size_t i, void *ctx, dp_err *err)
{
    (void)i;
    if (res_add_epoch(ctx, sqlite3_column_int(s, 0), store_col_double(s, 1)) != 0)
        return oom_reading(st, run_id, "epochs", err);
    return 0;
}

static int read_epochs(store *st, int64_t run_id, res_run *r, dp_err *err)
{
    return store_sql_rows(st, "SELECT epoch, end_s FROM run_epochs WHERE run_id = ?1 ORDER BY epoch",
                          "epochs", run_id, NULL, r, epoch_row, NULL, err);
}

static int stat_row(store *st, sqlite3_stmt *s, int64_t run_id, size_t i, void *ctx, dp_err *err)
{
    (void)i;
    const char *name = (const char *)sqlite3_column_text(s, 0);
    int scope = res_scope_by_name((const char *)sqlite3_column_text(s, 1));
    double v = store_col_double(s, 4);
    if (!name || scope < 0)
        return corrupt(st, run_id, "statistic", err);
    if (res_add_stat(ctx, name, (res_scope)scope, sqlite3_column_int64(s, 2), sqlite3_column_int64(s, 3), v))
        return oom_reading(st, run_id, "statistics", err);
    return 0;
}

static int eval_row(store *st, sqlite3_stmt *s, int64_t run_id, size_t i, void *ctx, dp_err *err)
{
    res_run *r = ctx;
    const char *src = (const char *)sqlite3_column_text(s, 0);
    if (!src || sqlite3_column_type(s, 1) == SQLITE_NULL)
        return corrupt(st, run_id, "evaluation", err);
    if (i == 0)
        snprintf(r->learn_source, sizeof r->learn_source, "%s", src);
    res_eval e = {.t_s = store_col_double(s, 1),
                  .epochs = store_col_double(s, 2),
                  .samples = store_col_double(s, 3),
                  .epoch = sqlite3_column_int(s, 4),
                  .test_acc = store_col_double(s, 5),
                  .test_loss = store_col_double(s, 6),
                  .train_loss = store_col_double(s, 7)};
    if (res_add_eval(r, &e))
        return oom_reading(st, run_id, "evaluations", err);
    return 0;
}

static int tta_row(store *st, sqlite3_stmt *s, int64_t run_id, size_t i, void *ctx, dp_err *err)
{
    (void)i;
    if (sqlite3_column_type(s, 0) == SQLITE_NULL)
        return corrupt(st, run_id, "time to accuracy", err);
    if (res_add_tta(ctx, store_col_double(s, 0), store_col_double(s, 1)))
        return oom_reading(st, run_id, "times to accuracy", err);
    return 0;
}

/* Learning results: absent in databases before schema version 7's runs and
 * in runs without `learning:` (no rows). */
static int read_learning(store *st, int64_t run_id, res_run *r, dp_err *err)
{
    int e = store_sql_rows(st,
                           "SELECT source, t_s, epochs, samples, epoch, test_acc, test_loss, train_loss"
                           " FROM run_evals WHERE run_id = ?1 ORDER BY seq",
                           "evaluations", run_id, NULL, r, eval_row, NULL, err);
    if (!e)
        e = store_sql_rows(st, "SELECT target, t_s FROM run_tta WHERE run_id = ?1 ORDER BY seq",
                           "times to accuracy", run_id, NULL, r, tta_row, NULL, err);
    return e;
}

static int read_stats(store *st, int64_t run_id, res_run *r, dp_err *err)
{
    return store_sql_rows(st, "SELECT name, scope, a, b, value FROM run_stats WHERE run_id = ?1 ORDER BY seq",
                          "statistics", run_id, NULL, r, stat_row, NULL, err);
}

/* r->n_bins holds the capacity while reading: bins are 0, 1, ... */
static int flops_row(store *st, sqlite3_stmt *s, int64_t run_id, size_t i, void *ctx, dp_err *err)
{
    res_run *r = ctx;
    if (i >= r->n_bins || sqlite3_column_int64(s, 0) != (int64_t)i)
        return corrupt(st, run_id, "FLOPS bin", err);
    r->flops_bins[i] = store_col_double(s, 1);
    return 0;
}

/* An array for the rows of a run's child table, sized by count_sql (which
 * takes the run id as ?1): *out (a T ** passed as void *, written with
 * memcpy) gets n zeroed elements of size bytes, or stays NULL when n is 0. */
static int alloc_rows(store *st, const char *count_sql, int64_t run_id, const char *what, size_t size,
                      void *out, size_t *n, dp_err *err)
{
    char doing[64];
    snprintf(doing, sizeof doing, "reading %s", what);
    int64_t count = 0;
    *n = 0;
    int e = count_rows(st, count_sql, run_id, &count, doing, err);
    if (e || count <= 0)
        return e;
    void *p = dp_calloc((size_t)count, size);
    if (!p)
        return dp_err_set(err, DP_ENOMEM, "%s: out of memory reading %" PRId64 " %s", st->path, count, what);
    memcpy(out, &p, sizeof p);
    *n = (size_t)count;
    return 0;
}

static int read_flops(store *st, int64_t run_id, res_run *r, dp_err *err)
{
    size_t n = 0;
    int e = alloc_rows(st, "SELECT count(*) FROM run_flops WHERE run_id = ?1", run_id, "FLOPS bins",
                       sizeof *r->flops_bins, &r->flops_bins, &n, err);
    if (e || n == 0)
        return e;
    r->n_bins = n;
    size_t got = 0;
    e = store_sql_rows(st, "SELECT bin, flops FROM run_flops WHERE run_id = ?1 ORDER BY bin", "FLOPS bins",
                       run_id, NULL, r, flops_row, &got, err);
    r->n_bins = e ? 0 : got;
    return e;
}

static int activity_from_name(const char *name, res_activity *out)
{
    for (int a = 0; a < RES_ACT_COUNT; a++)
        if (strcmp(name, res_activity_name((res_activity)a)) == 0) {
            *out = (res_activity)a;
            return 0;
        }
    return -1;
}

static int segment_row(store *st, sqlite3_stmt *s, int64_t run_id, size_t i, void *ctx, dp_err *err)
{
    (void)i;
    res_run *r = ctx;
    int64_t dev = sqlite3_column_int64(s, 0);
    res_segment g;
    if (r->n_segments >= r->cap_segments || dev < 0 || (uint64_t)dev >= r->n_devices ||
        activity_from_name(store_col_text(s, 1), &g.act) != 0)
        return corrupt(st, run_id, "timeline segment", err);
    g.device = (int)dev;
    g.t0_s = store_col_double(s, 2);
    g.t1_s = store_col_double(s, 3);
    r->segments[r->n_segments++] = g;
    return 0;
}

static int read_segments(store *st, int64_t run_id, res_run *r, dp_err *err)
{
    size_t n = 0;
    int e = alloc_rows(st, "SELECT count(*) FROM run_segments WHERE run_id = ?1", run_id, "timeline segments",
                       sizeof *r->segments, &r->segments, &n, err);
    if (e || n == 0)
        return e;
    r->cap_segments = n;
    /* Insertion order is rowid order: the stored timeline is the merged
     * one, copied as is (re-merging could only change it if it had been
     * edited by hand). */
    return store_sql_rows(st,
                          "SELECT device, act, t0_s, t1_s FROM run_segments WHERE run_id = ?1 ORDER BY rowid",
                          "timeline segments", run_id, NULL, r, segment_row, NULL, err);
}

int store_get_run(store *st, int64_t run_id, res_run **out, dp_err *err)
{
    if (!st || !out)
        return dp_err_set(err, DP_EINPUT, "store_get_run: %s is NULL", st ? "out" : "store");
    *out = NULL;
    int e = begin_read(st, "reading a run", err);
    if (e)
        return e;
    int64_t n_dev = 0;
    res_run *r = NULL;
    e = count_rows(st, "SELECT count(*) FROM run_devices WHERE run_id = ?1", run_id, &n_dev,
                   "reading devices", err);
    if (!e && !(r = res_run_new((size_t)n_dev, err)))
        e = dp_err_set(err, DP_ENOMEM, "%s: out of memory reading run %" PRId64, st->path, run_id);
    if (!e)
        e = read_run_row(st, run_id, r, err);
    if (!e)
        e = read_devices(st, run_id, r, err);
    if (!e)
        e = read_epochs(st, run_id, r, err);
    if (!e)
        e = read_flops(st, run_id, r, err);
    if (!e)
        e = read_segments(st, run_id, r, err);
    if (!e)
        e = read_stats(st, run_id, r, err);
    if (!e)
        e = read_learning(st, run_id, r, err);
    e = end_read(st, e, "reading a run", err);
    if (e) {
        res_run_free(r);
        return e;
    }
    *out = r;
    return 0;
}

void store_strings_free(char **v, size_t n)
{
    if (!v)
        return;
    for (size_t i = 0; i < n; i++)
        dp_free(v[i]);
    dp_free(v);
}

/* Overrides come back through SQLite's JSON functions, the inverse of the
 * writer used to store them. */
static int read_overrides(store *st, const char *json, char ***out, size_t *n_out, dp_err *err)
{
    sqlite3_stmt *s;
    int e = store_sql_prepare(st, "SELECT value, type FROM json_each(?1) ORDER BY key", &s,
                              "reading overrides", err);
    if (e)
        return e;
    sqlite3_bind_text(s, 1, json, -1, SQLITE_TRANSIENT);
    char **v = NULL;
    size_t n = 0, cap = 0;
    int rc = SQLITE_DONE;
    while (!e && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (strcmp(store_col_text(s, 1), "text") != 0) {
            e = dp_err_set(err, DP_ERUN, "%s: stored overrides are not a list of strings: %s", st->path,
                           json);
            break;
        }
        if (n == cap) {
            size_t c = cap ? 2 * cap : 8;
            char **nv = dp_realloc(v, c * sizeof *nv);
            if (!nv) {
                e = dp_err_set(err, DP_ENOMEM, "%s: out of memory reading overrides", st->path);
                break;
            }
            v = nv;
            cap = c;
        }
        if (!(v[n] = dp_strdup(store_col_text(s, 0)))) {
            e = dp_err_set(err, DP_ENOMEM, "%s: out of memory reading overrides", st->path);
            break;
        }
        n++;
    }
    if (!e && rc != SQLITE_DONE)
        e = store_sql_fail(st, rc, "reading overrides", err);
    sqlite3_finalize(s);
    if (e) {
        store_strings_free(v, n);
        return e;
    }
    *out = v;
    *n_out = n;
    return 0;
}

int store_get_run_dir(store *st, int64_t run_id, char **dir, dp_err *err)
{
    *dir = NULL;
    sqlite3_stmt *q;
    int row, e = store_sql_first(st, &q, &row, "reading a run's scenario directory", err,
                                 "SELECT scenario_dir FROM runs WHERE id = ?1", "i", run_id);
    if (e || !row)
        return e;
    if (sqlite3_column_type(q, 0) != SQLITE_NULL &&
        !(*dir = dp_strdup((const char *)sqlite3_column_text(q, 0))))
        e = dp_err_set(err, DP_ENOMEM, "%s: out of memory", st->path);
    sqlite3_finalize(q);
    return e;
}

int store_get_run_source(store *st, int64_t run_id, char **scenario_text, char **scenario_name,
                         char ***overrides, size_t *n_overrides, char **policy, uint64_t *seed, dp_err *err)
{
    if (!st || !scenario_text || !scenario_name || !overrides || !n_overrides || !policy || !seed)
        return dp_err_set(err, DP_EINPUT, "store_get_run_source: NULL argument");
    *scenario_text = *scenario_name = *policy = NULL;
    *overrides = NULL;
    *n_overrides = 0;
    *seed = 0;
    int e = begin_read(st, "reading a run's source", err);
    if (e)
        return e;
    sqlite3_stmt *s;
    char *text = NULL, *name = NULL, *pol = NULL, *ovj = NULL, **ov = NULL;
    size_t n_ov = 0;
    uint64_t sd = 0;
    int row;
    e = store_sql_first(st, &s, &row, "reading a run's source", err,
                        "SELECT s.text, s.name, r.overrides_json, r.policy, r.seed FROM runs r"
                        " JOIN scenarios s ON s.id = r.scenario_id WHERE r.id = ?1",
                        "i", run_id);
    if (!e) {
        if (row) {
            text = dp_strdup(store_col_text(s, 0));
            name = dp_strdup(store_col_text(s, 1));
            ovj = dp_strdup(store_col_text(s, 2));
            pol = dp_strdup(store_col_text(s, 3));
            sd = (uint64_t)sqlite3_column_int64(s, 4);
            if (!text || !name || !ovj || !pol)
                e = dp_err_set(err, DP_ENOMEM, "%s: out of memory reading run %" PRId64, st->path, run_id);
            sqlite3_finalize(s);
        } else
            e = dp_err_set(err, DP_EINPUT, "%s: no run with id %" PRId64, st->path, run_id);
    }
    if (!e)
        e = read_overrides(st, ovj, &ov, &n_ov, err);
    dp_free(ovj);
    e = end_read(st, e, "reading a run's source", err);
    if (e) {
        dp_free(text);
        dp_free(name);
        dp_free(pol);
        store_strings_free(ov, n_ov);
        return e;
    }
    *scenario_text = text;
    *scenario_name = name;
    *policy = pol;
    *overrides = ov;
    *n_overrides = n_ov;
    *seed = sd;
    return 0;
}

void store_files_free(scn_file *files, size_t n)
{
    for (size_t i = 0; files && i < n; i++) {
        dp_free(files[i].name);
        dp_free(files[i].path);
        dp_free(files[i].data);
    }
    dp_free(files);
}

int store_get_run_files(store *st, int64_t run_id, scn_file **files, size_t *n_files, dp_err *err)
{
    if (!st || !files || !n_files)
        return dp_err_set(err, DP_EINPUT, "store_get_run_files: NULL argument");
    *files = NULL;
    *n_files = 0;
    int e = begin_read(st, "reading a run's trace files", err);
    if (e)
        return e;
    sqlite3_stmt *s = NULL;
    scn_file *v = NULL;
    size_t n = 0;
    e = store_sql_prepare(
        st,
        "SELECT f.name, f.path, f.hash, b.data FROM run_files f JOIN blobs b ON b.hash = f.hash"
        " WHERE f.run_id = ?1 ORDER BY f.rowid",
        &s, "reading a run's trace files", err);
    int rc = SQLITE_DONE;
    if (!e)
        sqlite3_bind_int64(s, 1, run_id);
    while (!e && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        scn_file *nv = dp_realloc(v, (n + 1) * sizeof *nv);
        if (!nv) {
            e = dp_err_set(err, DP_ENOMEM, "%s: out of memory reading trace files", st->path);
            break;
        }
        v = nv;
        scn_file *f = &v[n++];
        memset(f, 0, sizeof *f);
        const void *d = sqlite3_column_blob(s, 3);
        size_t len = (size_t)sqlite3_column_bytes(s, 3);
        f->name = dp_strdup(store_col_text(s, 0));
        f->path = dp_strdup(store_col_text(s, 1));
        f->data = dp_malloc(len + 1);
        if (!f->name || !f->path || !f->data) {
            e = dp_err_set(err, DP_ENOMEM, "%s: out of memory reading trace files", st->path);
            break;
        }
        if (len)
            memcpy(f->data, d, len);
        f->data[len] = '\0';
        f->len = len;
        f->hash = scn_hash(f->data, len);
        char hex[17];
        snprintf(hex, sizeof hex, "%016" PRIx64, f->hash);
        if (strcmp(hex, store_col_text(s, 2)) != 0)
            e = dp_err_set(err, DP_ERUN,
                           "%s: run %" PRId64 ": stored trace file '%s' does not match its hash %s", st->path,
                           run_id, f->name, store_col_text(s, 2));
    }
    if (!e && rc != SQLITE_DONE)
        e = store_sql_fail(st, rc, "reading a run's trace files", err);
    if (s)
        sqlite3_finalize(s);
    e = end_read(st, e, "reading a run's trace files", err);
    if (e) {
        store_files_free(v, n);
        return e;
    }
    *files = v;
    *n_files = n;
    return 0;
}

/* ---- listing ---------------------------------------------------------- */

static double col_or_nan(sqlite3_stmt *s, int i)
{
    return sqlite3_column_type(s, i) == SQLITE_NULL ? NAN : sqlite3_column_double(s, i);
}

int store_runs_list(store *st, const store_runs_filter *f, store_run_rows *out, dp_err *err)
{
    memset(out, 0, sizeof *out);
    if (!st)
        return dp_err_set(err, DP_EINPUT, "store_runs_list: store is NULL");
    store_runs_filter none = {0};
    if (!f)
        f = &none;
    sqlite3_stmt *s;
    /* the newest `last` of the matching runs, printed oldest first */
    int e = store_sql_prepare(
        st,
        "SELECT * FROM (SELECT r.id, r.started_at, s.name, r.policy, r.seed, r.status, r.sweep_id,"
        /* a file from anywhere may hold text that is not JSON: shown as it is */
        " CASE WHEN r.sweep_id IS NULL THEN CASE WHEN json_valid(r.overrides_json)"
        "  THEN (SELECT group_concat(value, ' ') FROM json_each(r.overrides_json)) ELSE r.overrides_json END"
        "  ELSE CASE WHEN json_valid(r.point_json)"
        "  THEN (SELECT group_concat(key || '=' || value, ' ') FROM json_each(r.point_json)) ELSE "
        "r.point_json END"
        " END,"
        " r.tsend_s, r.ttraining_s, r.ttotal_s, r.tflops"
        " FROM runs r JOIN scenarios s ON s.id = r.scenario_id"
        " WHERE (?1 IS NULL OR s.name = ?1) AND (?2 IS NULL OR r.policy = ?2)"
        " AND (?3 = 0 OR r.sweep_id = ?3) ORDER BY r.id DESC LIMIT ?4) ORDER BY 1",
        &s, "listing runs", err);
    if (e)
        return e;
    store_bind_opt_text(s, 1, f->scenario);
    store_bind_opt_text(s, 2, f->policy);
    sqlite3_bind_int64(s, 3, f->sweep_id);
    sqlite3_bind_int64(s, 4, f->last > 0 ? f->last : -1);
    int rc;
    size_t cap = 0;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (out->n == cap) {
            size_t nc = cap ? 2 * cap : 64;
            store_run_row *nr = dp_realloc(out->row, nc * sizeof *nr);
            if (!nr) {
                e = dp_err_set(err, DP_ENOMEM, "out of memory listing runs");
                break;
            }
            out->row = nr;
            cap = nc;
        }
        store_run_row *r = &out->row[out->n];
        memset(r, 0, sizeof *r);
        r->id = sqlite3_column_int64(s, 0);
        snprintf(r->started_at, sizeof r->started_at, "%s", store_col_text(s, 1));
        snprintf(r->scenario, sizeof r->scenario, "%s", store_col_text(s, 2));
        snprintf(r->policy, sizeof r->policy, "%s", store_col_text(s, 3));
        r->seed = (uint64_t)sqlite3_column_int64(s, 4);
        snprintf(r->status, sizeof r->status, "%s", store_col_text(s, 5));
        r->sweep_id = sqlite3_column_int64(s, 6);
        if (!(r->overrides = dp_strdup(store_col_text(s, 7)))) {
            e = dp_err_set(err, DP_ENOMEM, "out of memory listing runs");
            break;
        }
        r->tsend_s = col_or_nan(s, 8);
        r->ttraining_s = col_or_nan(s, 9);
        r->ttotal_s = col_or_nan(s, 10);
        r->tflops = col_or_nan(s, 11);
        out->n++;
    }
    if (!e && rc != SQLITE_DONE)
        e = store_sql_fail(st, rc, "listing runs", err);
    sqlite3_finalize(s);
    if (e)
        store_run_rows_free(out);
    return e;
}

void store_run_rows_free(store_run_rows *r)
{
    if (!r)
        return;
    for (size_t k = 0; k < r->n; k++)
        dp_free(r->row[k].overrides);
    dp_free(r->row);
    memset(r, 0, sizeof *r);
}

int store_read_begin(store *st, dp_err *err)
{
    int rc = sqlite3_exec(store_db(st), "BEGIN", NULL, NULL, NULL);
    return rc == SQLITE_OK ? 0 : store_sql_fail(st, rc, "starting a read", err);
}

void store_read_end(store *st)
{
    sqlite3_exec(store_db(st), "COMMIT", NULL, NULL, NULL);
}
