/* store_write.c: writing to the results database (store.c lists the
 * store's files and the invariants every write keeps). */
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

/* ---- writing ---------------------------------------------------------- */

static int check_writable(const store *st, dp_err *err)
{
    if (st->readonly)
        return dp_err_set(err, DP_ERUN, "%s: database was opened read-only; cannot store results", st->path);
    return 0;
}

/* JSON array of the override strings. */
static char *overrides_json(const char *const *ov, size_t n, const store *st, dp_err *err)
{
    json_buf *j = json_new();
    json_arr_begin(j);
    for (size_t i = 0; i < n; i++)
        json_str(j, ov[i]);
    json_arr_end(j);
    char *s = json_ok(j) ? dp_strdup(json_text(j)) : NULL;
    json_free(j);
    if (!s)
        dp_err_set(err, DP_ENOMEM, "%s: out of memory encoding %zu overrides", st->path, n);
    return s;
}

/* Id of the scenario with this text, inserting it when new.  Called inside
 * the write transaction, so check-then-insert cannot race.  created_at NULL
 * = the database's clock (sweep rows have no caller-supplied time). */
static int scenario_id(store *st, const char *name, const char *text, uint64_t hash, const char *created_at,
                       int64_t *id, dp_err *err)
{
    char hex[17];
    snprintf(hex, sizeof hex, "%016" PRIx64, hash);
    sqlite3_stmt *s;
    int row, e = store_sql_first(st, &s, &row, "looking up the scenario", err,
                                 "SELECT id, text FROM scenarios WHERE hash = ?1", "t", hex);
    if (e)
        return e;
    if (row) {
        *id = sqlite3_column_int64(s, 0);
        int same = strcmp(store_col_text(s, 1), text) == 0;
        sqlite3_finalize(s);
        if (!same)
            return dp_err_set(err, DP_ERUN,
                              "%s: scenario '%s' has the same text hash %s as stored scenario %" PRId64
                              " but a different text (hash collision)",
                              st->path, name, hex, *id);
        return 0;
    }
    e = store_sql_write(st, "storing the scenario", err,
                        "INSERT INTO scenarios(name, hash, text, created_at)"
                        " VALUES(?1, ?2, ?3, COALESCE(?4, strftime('%Y-%m-%dT%H:%M:%SZ', 'now')))",
                        "tttt", name, hex, text, created_at);
    if (e)
        return e;
    *id = sqlite3_last_insert_rowid(st->db);
    return 0;
}

/* Start a write (BEGIN IMMEDIATE: the write lock is taken first, see the
 * invariants above) and find or add its scenario row, *scn its id.  `what`
 * names the write in messages ("a run").  On error the caller rolls back as
 * after any other failed step (store_rollback() is a no-op outside a
 * transaction). */
static int begin_write(store *st, const char *what, const char *name, const char *text, uint64_t hash,
                       const char *created_at, int64_t *scn, dp_err *err)
{
    int rc = store_exec(st, "BEGIN IMMEDIATE");
    if (rc != SQLITE_OK) {
        char doing[80];
        snprintf(doing, sizeof doing, "starting to store %s", what);
        return store_sql_fail(st, rc, doing, err);
    }
    return scenario_id(st, name, text, hash, created_at, scn, err);
}

/* End a write begun by begin_write: commit if e is 0; roll back if e is
 * not, or if the commit fails (`what`: "committing the run", ...).
 * Returns e, or the commit's error. */
static int end_write(store *st, int e, const char *what, dp_err *err)
{
    int rc;
    if (!e && (rc = store_exec(st, "COMMIT")) != SQLITE_OK)
        e = store_sql_fail(st, rc, what, err);
    if (e)
        store_rollback(st);
    return e;
}

/* A scenario to store needs its name and text (its identity). */
static int check_scenario(const store *st, const scn_scenario *s, dp_err *err)
{
    if (!s->name || !s->text)
        return dp_err_set(err, DP_EINPUT, "%s: scenario without %s", st->path, s->name ? "text" : "name");
    return 0;
}

/* ?1..?5 of a sweep point's identity (the runs_point index's columns):
 * sweep_id, point_json, policy, seed (its bits as an int64), version. */
#define POINT_KEY_TYPES "ittit"

/* A sweep point that failed before may be retried: drop its failed row so
 * the unique index on points admits the new one. */
static int drop_failed_point(store *st, int64_t sweep_id, const char *point_json, const char *policy,
                             uint64_t seed, const char *version, dp_err *err)
{
    if (sweep_id == 0)
        return 0;
    return store_sql_write(st, "replacing a failed sweep point", err,
                           "DELETE FROM runs WHERE sweep_id = ?1 AND point_json IS ?2 AND policy = ?3"
                           " AND seed = ?4 AND version = ?5 AND status = 'failed'",
                           POINT_KEY_TYPES, sweep_id, point_json, policy, (int64_t)seed, version);
}

/* The run row; metrics from r (NULL for a failed run). */
typedef struct run_row {
    int64_t scenario_id;
    const char *policy, *options_json, *overrides_json, *version, *started_at, *error, *point_json;
    const char *scenario_dir;
    uint64_t seed;
    double wall_s;
    int64_t sweep_id;
    const res_run *r;
} run_row;

static int insert_run(store *st, const run_row *w, int64_t *run_id, dp_err *err)
{
    sqlite3_stmt *s;
    int e = store_sql_prepare(
        st,
        "INSERT INTO runs(scenario_id, policy, options_json, overrides_json, seed, version,"
        " started_at, wall_s, status, error, sweep_id, point_json, tsend_s, ttraining_s, ttotal_s,"
        " tflops, utilization, samples_processed, bytes_total, events, bin_s, timeline_res_s, invocation,"
        " scenario_dir, policy_label, policy_color)"
        " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18,"
        " ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26)",
        &s, "storing the run", err);
    if (e)
        return e;
    sqlite3_bind_int64(s, 1, w->scenario_id);
    sqlite3_bind_text(s, 2, w->policy, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 3, w->options_json, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 4, w->overrides_json, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 5, (int64_t)w->seed); /* same bits; see store.h */
    sqlite3_bind_text(s, 6, w->version, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 7, w->started_at, -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(s, 8, w->wall_s);
    sqlite3_bind_text(s, 9, w->r ? "ok" : "failed", -1, SQLITE_STATIC);
    store_bind_opt_text(s, 10, w->error);
    if (w->sweep_id)
        sqlite3_bind_int64(s, 11, w->sweep_id);
    else
        sqlite3_bind_null(s, 11);
    store_bind_opt_text(s, 12, w->point_json);
    if (w->r) {
        const res_run *r = w->r;
        sqlite3_bind_double(s, 13, r->tsend_s);
        sqlite3_bind_double(s, 14, r->ttraining_s);
        sqlite3_bind_double(s, 15, r->ttotal_s);
        sqlite3_bind_double(s, 16, r->tflops);
        sqlite3_bind_double(s, 17, r->utilization);
        sqlite3_bind_double(s, 18, r->samples_processed);
        sqlite3_bind_double(s, 19, r->bytes_total);
        sqlite3_bind_int64(s, 20, (int64_t)r->events);
        sqlite3_bind_double(s, 21, r->bin_s);
        sqlite3_bind_double(s, 22, r->timeline_res_s);
    } /* else metrics stay NULL */
    store_bind_opt_text(s, 23, st->invocation[0] ? st->invocation : NULL);
    store_bind_opt_text(s, 24, w->scenario_dir);
    /* "" (a policy the registry did not know): NULL, the plots' fallback */
    store_bind_opt_text(s, 25, w->r && w->r->policy_label[0] ? w->r->policy_label : NULL);
    store_bind_opt_text(s, 26, w->r && w->r->policy_color[0] ? w->r->policy_color : NULL);
    int rc = sqlite3_step(s);
    sqlite3_finalize(s);
    if (rc == SQLITE_CONSTRAINT_UNIQUE)
        return dp_err_set(
            err, DP_ERUN,
            "%s: sweep %" PRId64 " point %s (policy %s, seed %" PRIu64 ", version %s) is stored already",
            st->path, w->sweep_id, w->point_json ? w->point_json : "null", w->policy, w->seed, w->version);
    if (rc == SQLITE_CONSTRAINT_FOREIGNKEY)
        return dp_err_set(err, DP_ERUN, "%s: sweep id %" PRId64 " does not exist", st->path, w->sweep_id);
    if (rc != SQLITE_DONE)
        return store_sql_fail(st, rc, "storing the run", err);
    *run_id = sqlite3_last_insert_rowid(st->db);
    DP_LOG(LOG_STORE, LOG_INFO, -1, "%s: run #%" PRId64 " (%s, seed %" PRIu64 ") stored", st->path, *run_id,
           w->policy, w->seed);
    return 0;
}

/* Child-row inserter: one prepared statement per table, a shared row count
 * for the test hook. */
typedef struct rows {
    store *st;
    long n, fail_at;
} rows;

static int step_row(rows *w, sqlite3_stmt *s, const char *what, dp_err *err)
{
    w->n++;
    if (w->fail_at && w->n == w->fail_at)
        return dp_err_set(err, DP_ERUN, "%s: injected failure at child row %ld while %s (test hook)",
                          w->st->path, w->n, what);
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    return rc == SQLITE_DONE ? 0 : store_sql_fail(w->st, rc, what, err);
}

static int insert_children(store *st, int64_t run_id, const res_run *r, long fail_at, dp_err *err)
{
    rows w = {st, 0, fail_at};
    sqlite3_stmt *dev = NULL, *ep = NULL, *fl = NULL, *seg = NULL, *sta = NULL, *ev = NULL, *tt = NULL;
    int e = store_sql_prepare(
        st,
        "INSERT INTO run_devices(run_id, idx, name, grp, kind, samples, batches, compute_s, send_s,"
        " recv_s, wait_s, bytes_sent, bytes_recv, data_ready_s)"
        " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
        &dev, "storing devices", err);
    if (!e)
        e = store_sql_prepare(st, "INSERT INTO run_epochs(run_id, epoch, end_s) VALUES(?1, ?2, ?3)", &ep,
                              "storing epochs", err);
    if (!e)
        e = store_sql_prepare(st, "INSERT INTO run_flops(run_id, bin, t0_s, flops) VALUES(?1, ?2, ?3, ?4)",
                              &fl, "storing FLOPS bins", err);
    if (!e)
        e = store_sql_prepare(
            st, "INSERT INTO run_segments(run_id, device, act, t0_s, t1_s) VALUES(?1, ?2, ?3, ?4, ?5)", &seg,
            "storing timeline segments", err);
    if (!e)
        e = store_sql_prepare(st,
                              "INSERT INTO run_stats(run_id, seq, name, scope, a, b, value)"
                              " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                              &sta, "storing statistics", err);
    if (!e && r->n_evals)
        e = store_sql_prepare(
            st,
            "INSERT INTO run_evals(run_id, seq, source, t_s, epochs, samples, epoch, test_acc,"
            " test_loss, train_loss) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            &ev, "storing evaluations", err);
    if (!e && r->n_tta)
        e = store_sql_prepare(
            st, "INSERT INTO run_tta(run_id, seq, source, target, t_s) VALUES(?1, ?2, ?3, ?4, ?5)", &tt,
            "storing times to accuracy", err);

    for (size_t i = 0; !e && i < r->n_devices; i++) {
        const res_device *d = &r->devices[i];
        sqlite3_bind_int64(dev, 1, run_id);
        sqlite3_bind_int64(dev, 2, (int64_t)i);
        /* Bound by length (the records' strings are cut to these).
         * SQLITE_STATIC: r outlives the statement's step (no copy of three
         * strings per row: 10^6 rows). */
        sqlite3_bind_text(dev, 3, d->name, (int)strnlen(d->name, RES_NAME_MAX), SQLITE_STATIC);
        sqlite3_bind_text(dev, 4, d->group, (int)strnlen(d->group, RES_GROUP_MAX), SQLITE_STATIC);
        sqlite3_bind_text(dev, 5, d->kind, (int)strnlen(d->kind, RES_KIND_MAX), SQLITE_STATIC);
        sqlite3_bind_int64(dev, 6, d->samples);
        sqlite3_bind_int64(dev, 7, d->batches);
        sqlite3_bind_double(dev, 8, d->compute_s);
        sqlite3_bind_double(dev, 9, d->send_s);
        sqlite3_bind_double(dev, 10, d->recv_s);
        sqlite3_bind_double(dev, 11, d->wait_s);
        sqlite3_bind_double(dev, 12, d->bytes_sent);
        sqlite3_bind_double(dev, 13, d->bytes_recv);
        sqlite3_bind_double(dev, 14, d->data_ready_s);
        e = step_row(&w, dev, "storing devices", err);
    }
    for (size_t i = 0; !e && i < r->n_epochs; i++) {
        sqlite3_bind_int64(ep, 1, run_id);
        sqlite3_bind_int(ep, 2, r->epochs[i].epoch);
        sqlite3_bind_double(ep, 3, r->epochs[i].end_s);
        e = step_row(&w, ep, "storing epochs", err);
    }
    for (size_t i = 0; !e && i < r->n_bins; i++) {
        sqlite3_bind_int64(fl, 1, run_id);
        sqlite3_bind_int64(fl, 2, (int64_t)i);
        sqlite3_bind_double(fl, 3, (double)i * r->bin_s);
        sqlite3_bind_double(fl, 4, r->flops_bins[i]);
        e = step_row(&w, fl, "storing FLOPS bins", err);
    }
    for (size_t i = 0; !e && i < r->n_segments; i++) {
        const res_segment *g = &r->segments[i];
        sqlite3_bind_int64(seg, 1, run_id);
        sqlite3_bind_int(seg, 2, g->device);
        sqlite3_bind_text(seg, 3, res_activity_name(g->act), -1, SQLITE_STATIC);
        sqlite3_bind_double(seg, 4, g->t0_s);
        sqlite3_bind_double(seg, 5, g->t1_s);
        e = step_row(&w, seg, "storing timeline segments", err);
    }
    for (size_t i = 0; !e && i < r->n_stats; i++) {
        const res_stat *x = &r->stats[i];
        sqlite3_bind_int64(sta, 1, run_id);
        sqlite3_bind_int64(sta, 2, (int64_t)i);
        sqlite3_bind_text(sta, 3, x->name, (int)strnlen(x->name, sizeof x->name), SQLITE_TRANSIENT);
        sqlite3_bind_text(sta, 4, res_scope_name(x->scope), -1, SQLITE_STATIC);
        sqlite3_bind_int64(sta, 5, x->a);
        sqlite3_bind_int64(sta, 6, x->b);
        if (isfinite(x->value))
            sqlite3_bind_double(sta, 7, x->value);
        else
            sqlite3_bind_null(sta, 7); /* SQLite stores no infinities faithfully in every tool */
        e = step_row(&w, sta, "storing statistics", err);
    }
    for (size_t i = 0; !e && i < r->n_evals; i++) {
        const res_eval *x = &r->evals[i];
        sqlite3_bind_int64(ev, 1, run_id);
        sqlite3_bind_int64(ev, 2, (int64_t)i);
        sqlite3_bind_text(ev, 3, r->learn_source, -1, SQLITE_STATIC);
        sqlite3_bind_double(ev, 4, x->t_s);
        sqlite3_bind_double(ev, 5, x->epochs);
        sqlite3_bind_double(ev, 6, x->samples);
        sqlite3_bind_int(ev, 7, x->epoch);
        sqlite3_bind_double(ev, 8, x->test_acc);
        sqlite3_bind_double(ev, 9, x->test_loss);
        sqlite3_bind_double(ev, 10, x->train_loss);
        e = step_row(&w, ev, "storing evaluations", err);
    }
    for (size_t i = 0; !e && i < r->n_tta; i++) {
        sqlite3_bind_int64(tt, 1, run_id);
        sqlite3_bind_int64(tt, 2, (int64_t)i);
        sqlite3_bind_text(tt, 3, r->learn_source, -1, SQLITE_STATIC);
        sqlite3_bind_double(tt, 4, r->tta_target[i]);
        if (isnan(r->tta_s[i]))
            sqlite3_bind_null(tt, 5); /* not reached: NULL, never a guess */
        else
            sqlite3_bind_double(tt, 5, r->tta_s[i]);
        e = step_row(&w, tt, "storing times to accuracy", err);
    }
    sqlite3_finalize(ev);
    sqlite3_finalize(tt);
    sqlite3_finalize(sta);
    sqlite3_finalize(dev);
    sqlite3_finalize(ep);
    sqlite3_finalize(fl);
    sqlite3_finalize(seg);
    return e;
}

/* The trace files of s (s->files) as rows of run_files, their contents in
 * blobs once per hash.  A stored blob of the same hash but other bytes is a
 * hash collision and is refused rather than silently shared. */
static int insert_files(store *st, int64_t run_id, const scn_scenario *s, dp_err *err)
{
    if (!s->n_files)
        return 0;
    sqlite3_stmt *get = NULL, *blob = NULL, *rf = NULL;
    int e = store_sql_prepare(st, "SELECT bytes, data FROM blobs WHERE hash = ?1", &get,
                              "storing trace files", err);
    if (!e)
        e = store_sql_prepare(st, "INSERT INTO blobs(hash, bytes, data) VALUES(?1, ?2, ?3)", &blob,
                              "storing trace files", err);
    if (!e)
        e = store_sql_prepare(
            st, "INSERT INTO run_files(run_id, name, path, hash, bytes) VALUES(?1, ?2, ?3, ?4, ?5)", &rf,
            "storing trace files", err);
    for (size_t i = 0; !e && i < s->n_files; i++) {
        const scn_file *f = &s->files[i];
        if (!f->name || !f->path || (f->len && !f->data) || f->len > (size_t)INT32_MAX) {
            e = dp_err_set(err, DP_EINPUT, "%s: trace file %zu of the scenario is incomplete or too large",
                           st->path, i);
            break;
        }
        char hex[17];
        snprintf(hex, sizeof hex, "%016" PRIx64, f->hash);
        sqlite3_bind_text(get, 1, hex, -1, SQLITE_TRANSIENT);
        int rc = sqlite3_step(get);
        if (rc == SQLITE_ROW) {
            const void *d = sqlite3_column_blob(get, 1);
            int n = sqlite3_column_bytes(get, 1);
            if ((size_t)n != f->len || (n && memcmp(d, f->data, (size_t)n) != 0))
                e = dp_err_set(err, DP_ERUN,
                               "%s: trace file '%s' has the same hash %s as a stored file but other bytes"
                               " (hash collision)",
                               st->path, f->name, hex);
        } else if (rc == SQLITE_DONE) {
            sqlite3_bind_text(blob, 1, hex, -1, SQLITE_TRANSIENT);
            sqlite3_bind_int64(blob, 2, (int64_t)f->len);
            sqlite3_bind_blob(blob, 3, f->data ? f->data : "", (int)f->len, SQLITE_STATIC);
            rc = sqlite3_step(blob);
            sqlite3_reset(blob);
            if (rc != SQLITE_DONE)
                e = store_sql_fail(st, rc, "storing trace files", err);
        } else {
            e = store_sql_fail(st, rc, "storing trace files", err);
        }
        sqlite3_reset(get);
        if (e)
            break;
        sqlite3_bind_int64(rf, 1, run_id);
        sqlite3_bind_text(rf, 2, f->name, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(rf, 3, f->path, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(rf, 4, hex, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(rf, 5, (int64_t)f->len);
        rc = sqlite3_step(rf);
        sqlite3_reset(rf);
        if (rc != SQLITE_DONE)
            e = store_sql_fail(st, rc, "storing trace files", err);
    }
    sqlite3_finalize(get);
    sqlite3_finalize(blob);
    sqlite3_finalize(rf);
    return e;
}

/* Checks a run before any SQL: NOT NULL REAL columns cannot take NaN
 * (SQLite would store NULL and refuse), and arrays must match counts. */
static int check_run(const store *st, const res_run *r, dp_err *err)
{
    if (r->n_devices && !r->devices)
        return dp_err_set(err, DP_EINPUT, "%s: run has %zu devices but no device array", st->path,
                          r->n_devices);
    if ((r->n_epochs && !r->epochs) || (r->n_bins && !r->flops_bins) || (r->n_segments && !r->segments))
        return dp_err_set(err, DP_EINPUT, "%s: run has a count without its array", st->path);
    if (memchr(r->policy, '\0', sizeof r->policy) == NULL || !r->policy[0])
        return dp_err_set(err, DP_EINPUT, "%s: run has no policy name", st->path);
    if (isnan(r->wall_s))
        return dp_err_set(err, DP_EINPUT, "%s: run wall_s is NaN", st->path);
    if (r->n_bins && isnan(r->bin_s))
        return dp_err_set(err, DP_EINPUT, "%s: run bin_s is NaN", st->path);
    for (size_t i = 0; i < r->n_epochs; i++)
        if (isnan(r->epochs[i].end_s))
            return dp_err_set(err, DP_EINPUT, "%s: epoch %d end time is NaN", st->path, r->epochs[i].epoch);
    for (size_t i = 0; i < r->n_bins; i++)
        if (isnan(r->flops_bins[i]))
            return dp_err_set(err, DP_EINPUT, "%s: FLOPS bin %zu is NaN", st->path, i);
    for (size_t i = 0; i < r->n_segments; i++) {
        const res_segment *g = &r->segments[i];
        if (isnan(g->t0_s) || isnan(g->t1_s) || g->device < 0 || (size_t)g->device >= r->n_devices ||
            (int)g->act < 0 || g->act >= RES_ACT_COUNT)
            return dp_err_set(err, DP_EINPUT,
                              "%s: timeline segment %zu is invalid (device %d, activity %d, %g..%g s)",
                              st->path, i, g->device, (int)g->act, g->t0_s, g->t1_s);
    }
    return 0;
}

static int check_strings(const store *st, const char *const *ov, size_t n, const char *version,
                         const char *started_at, dp_err *err)
{
    if (!version || !started_at)
        return dp_err_set(err, DP_EINPUT, "%s: run without %s", st->path, version ? "start time" : "version");
    if (n && !ov)
        return dp_err_set(err, DP_EINPUT, "%s: %zu overrides but no override array", st->path, n);
    for (size_t i = 0; i < n; i++)
        if (!ov[i])
            return dp_err_set(err, DP_EINPUT, "%s: override %zu is NULL", st->path, i);
    return 0;
}

/* One write of a run row (w, its overrides given apart), with its
 * children and files when s is given (a run that ran), alone otherwise (a
 * failed run): the scenario row found or added, a failed try of the same
 * sweep point replaced, all or nothing. */
static int put_run_row(store *st, run_row *w, const char *const *overrides, size_t n_overrides,
                       const scn_scenario *s, const char *name, const char *text, uint64_t hash, long fail_at,
                       int64_t *run_id, dp_err *err)
{
    char *ov = overrides_json(overrides, n_overrides, st, err);
    if (!ov)
        return DP_ENOMEM;
    w->overrides_json = ov;
    int64_t id = 0;
    int e =
        begin_write(st, s ? "a run" : "a failed run", name, text, hash, w->started_at, &w->scenario_id, err);
    if (!e)
        e = drop_failed_point(st, w->sweep_id, w->point_json, w->policy, w->seed, w->version, err);
    if (!e)
        e = insert_run(st, w, &id, err);
    if (!e)
        e = store_values_put(st, id, s, w->overrides_json, w->point_json, err);
    if (!e && s)
        e = insert_children(st, id, w->r, fail_at, err);
    if (!e && s)
        e = insert_files(st, id, s, err);
    e = end_write(st, e, s ? "committing the run" : "committing the failed run", err);
    dp_free(ov);
    if (!e && run_id)
        *run_id = id;
    return e;
}

int store_put_run(store *st, const scn_scenario *s, const char *const *overrides, size_t n_overrides,
                  const res_run *r, const char *version, const char *started_at, int64_t sweep_id,
                  const char *point_json, int64_t *run_id, dp_err *err)
{
    if (!st || !s || !r)
        return dp_err_set(err, DP_EINPUT, "store_put_run: %s is NULL",
                          !st  ? "store"
                          : !s ? "scenario"
                               : "run");
    long fail_at = st->fail_after_rows;
    st->fail_after_rows = 0; /* the hook applies to this one call */
    int e = check_writable(st, err);
    if (!e)
        e = check_strings(st, overrides, n_overrides, version, started_at, err);
    if (!e)
        e = check_run(st, r, err);
    if (!e)
        e = check_scenario(st, s, err);
    if (e)
        return e;
    /* the scenario file's absolute directory, for rerun's trace paths */
    char dir[4096], *real = NULL;
    const char *sdir = NULL;
    if (s->path && s->path[0] != '<' && (real = realpath(s->path, NULL))) {
        char *slash = strrchr(real, '/');
        snprintf(dir, sizeof dir, "%.*s", slash && slash != real ? (int)(slash - real) : 1, real);
        free(real);
        sdir = dir;
    }
    run_row w = {.scenario_dir = sdir,
                 .policy = r->policy,
                 .options_json = r->options_json ? r->options_json : "{}",
                 .version = version,
                 .started_at = started_at,
                 .point_json = point_json,
                 .seed = r->seed,
                 .wall_s = r->wall_s,
                 .sweep_id = sweep_id,
                 .r = r};
    return put_run_row(st, &w, overrides, n_overrides, s, s->name, s->text, s->text_hash, fail_at, run_id,
                       err);
}

int store_put_failed(store *st, const char *scenario_name, const char *scenario_text, uint64_t text_hash,
                     const char *const *overrides, size_t n_overrides, const char *policy, uint64_t seed,
                     const char *version, const char *started_at, int64_t sweep_id, const char *point_json,
                     const char *error, int64_t *run_id, dp_err *err)
{
    if (!st)
        return dp_err_set(err, DP_EINPUT, "store_put_failed: store is NULL");
    int e = check_writable(st, err);
    if (!e)
        e = check_strings(st, overrides, n_overrides, version, started_at, err);
    if (!e && (!scenario_name || !policy))
        e = dp_err_set(err, DP_EINPUT, "%s: failed run without %s", st->path,
                       scenario_name ? "policy" : "scenario name");
    if (e)
        return e;
    run_row w = {.policy = policy,
                 .options_json = "{}",
                 .version = version,
                 .started_at = started_at,
                 .error = error ? error : "unknown error",
                 .point_json = point_json,
                 .seed = seed,
                 .wall_s = 0.0,
                 .sweep_id = sweep_id,
                 .r = NULL};
    return put_run_row(st, &w, overrides, n_overrides, NULL, scenario_name,
                       scenario_text ? scenario_text : "", text_hash, 0, run_id, err);
}

int store_put_calibration(store *st, const scn_scenario *s, const char *spec_json, const char *result_json,
                          double cost, int64_t evaluations, const char *version, const char *started_at,
                          int64_t *id, dp_err *err)
{
    if (!st || !s || !spec_json || !result_json || !version || !started_at)
        return dp_err_set(err, DP_EINPUT, "store_put_calibration: missing argument");
    int e = check_writable(st, err);
    if (!e)
        e = check_scenario(st, s, err);
    if (e)
        return e;
    int64_t scn = 0;
    e = begin_write(st, "a calibration", s->name, s->text, s->text_hash, started_at, &scn, err);
    if (!e) /* a NaN cost binds NULL */
        e = store_sql_write(st, "storing the calibration", err,
                            "INSERT INTO calibrations(scenario_id, spec_json, result_json, cost, evaluations,"
                            " version, started_at) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                            "ittditt", scn, spec_json, result_json, cost, evaluations, version, started_at);
    e = end_write(st, e, "committing the calibration", err);
    if (!e && id)
        *id = sqlite3_last_insert_rowid(st->db);
    return e;
}

/* ---- sweeps ----------------------------------------------------------- */

int store_sweep_get_or_create(store *st, const scn_scenario *s, const char *spec_json, int64_t *sweep_id,
                              dp_err *err)
{
    if (!st || !s || !spec_json || !sweep_id)
        return dp_err_set(err, DP_EINPUT, "store_sweep_get_or_create: NULL argument");
    int e = check_scenario(st, s, err);
    if (!e)
        e = check_writable(st, err);
    if (e)
        return e;
    int64_t scn = 0, id = 0, id_scn = 0;
    e = begin_write(st, "a sweep", s->name, s->text, s->text_hash, NULL, &scn, err);
    if (!e)
        e = store_sql_write(
            st, "storing the sweep", err,
            "INSERT INTO sweeps(scenario_id, spec_json, created_at)"
            " VALUES(?1, ?2, strftime('%Y-%m-%dT%H:%M:%SZ', 'now')) ON CONFLICT(spec_json) DO NOTHING",
            "it", scn, spec_json);
    sqlite3_stmt *q;
    int row = 0;
    if (!e)
        e = store_sql_first(st, &q, &row, "looking up the sweep", err,
                            "SELECT id, scenario_id FROM sweeps WHERE spec_json = ?1", "t", spec_json);
    if (!e && row) {
        id = sqlite3_column_int64(q, 0);
        id_scn = sqlite3_column_int64(q, 1);
        sqlite3_finalize(q);
    } else if (!e)
        e = store_sql_fail(st, SQLITE_ERROR, "looking up the sweep", err);
    /* One spec, one scenario: resuming a sweep over an edited scenario file
     * would mix results of two different scenarios under one sweep. */
    if (!e && id_scn != scn)
        e = dp_err_set(err, DP_ERUN,
                       "%s: sweep %" PRId64 " with this spec was stored for scenario %" PRId64
                       ", not for '%s' (scenario %" PRId64 "); include the scenario hash in the spec",
                       st->path, id, id_scn, s->name, scn);
    if ((e = end_write(st, e, "committing the sweep", err)))
        return e;
    *sweep_id = id;
    return 0;
}

int store_point_outcome(store *st, int64_t sweep_id, const char *point_json, const char *policy,
                        uint64_t seed, const char *version, int *done, double *ttotal_s, char *msg,
                        size_t msg_cap, dp_err *err)
{
    if (!st || !policy || !version || !done)
        return dp_err_set(err, DP_EINPUT, "store_point_outcome: NULL argument");
    *done = 0;
    if (ttotal_s)
        *ttotal_s = NAN;
    if (msg && msg_cap)
        msg[0] = '\0';
    sqlite3_stmt *s;
    int row, e = store_sql_first(
                 st, &s, &row, "checking a sweep point", err,
                 "SELECT status, ttotal_s, error FROM runs WHERE sweep_id = ?1 AND point_json IS ?2"
                 " AND policy = ?3 AND seed = ?4 AND version = ?5 ORDER BY status = 'ok' DESC LIMIT 1",
                 POINT_KEY_TYPES, sweep_id, point_json, policy, (int64_t)seed, version);
    if (e || !row)
        return e;
    *done = strcmp(store_col_text(s, 0), "ok") == 0 ? 1 : 2;
    if (ttotal_s && *done == 1 && sqlite3_column_type(s, 1) != SQLITE_NULL)
        *ttotal_s = sqlite3_column_double(s, 1);
    if (msg && msg_cap && *done == 2) {
        const unsigned char *m = sqlite3_column_text(s, 2);
        snprintf(msg, msg_cap, "%s", m ? (const char *)m : "(no message)");
    }
    sqlite3_finalize(s);
    return 0;
}

int store_point_done(store *st, int64_t sweep_id, const char *point_json, const char *policy, uint64_t seed,
                     const char *version, int *done, dp_err *err)
{
    return store_point_outcome(st, sweep_id, point_json, policy, seed, version, done, NULL, NULL, 0, err);
}

/* For the store's other writers (store_jobs.c): begin_write and end_write. */
int store_write_begin(store *st, const char *what, const scn_scenario *s, int64_t *scn, dp_err *err)
{
    int e = check_writable(st, err) || check_scenario(st, s, err);
    if (e)
        return err->code;
    return begin_write(st, what, s->name, s->text, s->text_hash, NULL, scn, err);
}

int store_write_end(store *st, int e, const char *what, dp_err *err)
{
    return end_write(st, e, what, err);
}
