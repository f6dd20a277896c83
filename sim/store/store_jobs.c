/* store_jobs.c: runs of many jobs in one world (store_jobs.h). */
#include "store_jobs.h"
#include "store_impl.h"
#include "store_sql.h"

#include "dpsim_config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static void now_iso(char *buf, size_t len)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int store_put_jobs(store *st, const scn_scenario *s, const jobs_result *r, int64_t *id, dp_err *err)
{
    return store_put_jobs_point(st, s, r, 0, NULL, id, err);
}

int store_put_jobs_point(store *st, const scn_scenario *s, const jobs_result *r, int64_t sweep_id,
                         const char *point_json, int64_t *id, dp_err *err)
{
    int64_t scn = 0;
    char at[32];
    now_iso(at, sizeof at);
    int e = store_write_begin(st, "a jobs run", s, &scn, err);
    if (!e)
        e = store_sql_write(
            st, "storing the jobs run", err,
            "INSERT INTO jobs_runs(scenario_id, scheduler, seed, version, started_at, invocation,"
            " devices, n_jobs, makespan_s, jct_mean_s, jct_p50_s, jct_p95_s, jct_p99_s, jct_max_s,"
            " util_held, util_compute, rho_mean, rho_max, jain, events)"
            " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,"
            " ?18, ?19, ?20)",
            "itittti"
            "i"
            "ddddddddddd"
            "i",
            scn, r->scheduler, (int64_t)r->seed, DPSIM_VERSION, at, st->invocation[0] ? st->invocation : NULL,
            (int64_t)r->n_devices, (int64_t)r->n_jobs, r->makespan_s, r->mean_jct_s, r->p50_jct_s,
            r->p95_jct_s, r->p99_jct_s, r->max_jct_s, r->util_alloc, r->util_busy, r->mean_rho, r->max_rho,
            r->jain, (int64_t)r->events);
    int64_t run = e ? 0 : sqlite3_last_insert_rowid(st->db);
    if (!e && sweep_id)
        e = store_sql_write(st, "storing the jobs run's sweep point", err,
                            "UPDATE jobs_runs SET sweep_id = ?1, point_json = ?2 WHERE id = ?3", "iti",
                            sweep_id, point_json, run);
    for (size_t i = 0; !e && i < r->n_jobs; i++) {
        const job_out *o = &r->jobs[i];
        e = store_sql_write(
            st, "storing a job", err,
            "INSERT INTO jobs(jobs_run_id, idx, name, policy, devices, epochs, arrival_s, start_s,"
            " end_s, jct_s, queue_s, wait_s, alone_s, rho, device_s, compute_s, bytes, tsend_s,"
            " tflops, preemptions, final_acc) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11,"
            " ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21)",
            "iittii"
            "ddddddddddddd"
            "i"
            "d",
            run, (int64_t)i, o->name, o->policy, (int64_t)o->devices, (int64_t)o->epochs, o->arrival_s,
            o->start_s, o->end_s, o->jct_s, o->queue_s, o->wait_s, o->alone_s, o->rho, o->device_s,
            o->compute_s, o->bytes, o->tsend_s, o->tflops, (int64_t)o->preemptions, o->final_acc);
    }
    for (size_t k = 0, seq = 0; !e && k < r->n_tta; k++) { /* seq: the target's place in the job's list */
        seq = k && r->tta[k - 1].job == r->tta[k].job ? seq + 1 : 0;
        const job_tta *t = &r->tta[k];
        e = store_sql_write(
            st, "storing a job's time to accuracy", err,
            "INSERT INTO job_tta(jobs_run_id, job, seq, target, tta_s) VALUES(?1, ?2, ?3, ?4, ?5)",
            "iii"
            "dd",
            run, (int64_t)t->job, (int64_t)seq, t->target, t->tta_s);
    }
    for (size_t k = 0; !e && k < r->n_stats; k++) {
        const job_stat *x = &r->stats[k];
        e = store_sql_write(st, "storing a job's statistics", err,
                            "INSERT INTO job_stats(jobs_run_id, job, run, seq, name, scope, a, b, value)"
                            " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                            "iiiitt"
                            "ii"
                            "d",
                            run, (int64_t)x->job, (int64_t)x->run, (int64_t)k, x->s.name,
                            res_scope_name(x->s.scope), x->s.a, x->s.b,
                            isfinite(x->s.value) ? x->s.value : NAN);
    }
    sqlite3_stmt *q = NULL;
    if (!e)
        e = store_sql_prepare(
            st, "INSERT INTO job_allocs(jobs_run_id, job, device, t0_s, t1_s) VALUES(?1, ?2, ?3, ?4, ?5)", &q,
            "storing the jobs' devices", err);
    for (size_t i = 0; !e && i < r->n_allocs; i++) {
        const job_alloc *a = &r->allocs[i];
        sqlite3_bind_int64(q, 1, run);
        sqlite3_bind_int64(q, 2, (int64_t)a->job);
        sqlite3_bind_int64(q, 3, (int64_t)a->device);
        sqlite3_bind_double(q, 4, a->t0);
        sqlite3_bind_double(q, 5, a->t1);
        int rc = sqlite3_step(q);
        if (rc != SQLITE_DONE)
            e = store_sql_fail(st, rc, "storing the jobs' devices", err);
        sqlite3_reset(q);
    }
    sqlite3_finalize(q);
    e = store_write_end(st, e, "committing the jobs run", err);
    if (!e && id)
        *id = run;
    return e;
}

static int sel_row(store *st, sqlite3_stmt *s, int64_t id, size_t i, void *ctx, dp_err *err)
{
    (void)id;
    int64_t **ids = ctx;
    int64_t *n = dp_realloc(*ids, (i + 1) * sizeof *n);
    if (!n)
        return dp_err_set(err, DP_ENOMEM, "%s: out of memory", st->path);
    n[i] = sqlite3_column_int64(s, 0);
    *ids = n;
    return 0;
}

int store_jobs_select(store *st, int64_t **ids, size_t *n, dp_err *err)
{
    *ids = NULL;
    *n = 0;
    return store_sql_rows(st,
                          "SELECT id FROM jobs_runs WHERE invocation IS (SELECT invocation FROM jobs_runs"
                          " ORDER BY id DESC LIMIT 1) OR (SELECT invocation FROM jobs_runs ORDER BY id DESC"
                          " LIMIT 1) IS NULL ORDER BY id",
                          "jobs runs", 0, NULL, ids, sel_row, n, err);
}

static int job_row(store *st, sqlite3_stmt *s, int64_t id, size_t i, void *ctx, dp_err *err)
{
    (void)id;
    jobs_result *r = ctx;
    if (i >= r->n_jobs)
        return dp_err_set(err, DP_ERUN, "%s: jobs run has more jobs than it says", st->path);
    job_out *o = &r->jobs[i];
    snprintf(o->name, sizeof o->name, "%s", store_col_text(s, 0));
    snprintf(o->policy, sizeof o->policy, "%s", store_col_text(s, 1));
    o->devices = sqlite3_column_int(s, 2);
    o->arrival_s = store_col_double(s, 3);
    o->start_s = store_col_double(s, 4);
    o->end_s = store_col_double(s, 5);
    o->jct_s = store_col_double(s, 6);
    o->alone_s = store_col_double(s, 7);
    o->rho = store_col_double(s, 8);
    o->epochs = sqlite3_column_int(s, 9);
    o->queue_s = store_col_double(s, 10);
    o->wait_s = store_col_double(s, 11);
    o->device_s = store_col_double(s, 12);
    o->compute_s = store_col_double(s, 13);
    o->bytes = store_col_double(s, 14);
    o->tsend_s = store_col_double(s, 15);
    o->tflops = store_col_double(s, 16);
    o->preemptions = sqlite3_column_int(s, 17);
    o->final_acc = store_col_double(s, 18);
    return 0;
}

static int tta_row(store *st, sqlite3_stmt *s, int64_t id, size_t i, void *ctx, dp_err *err)
{
    (void)id;
    jobs_result *r = ctx;
    job_tta *n = dp_realloc(r->tta, (i + 1) * sizeof *n);
    if (!n)
        return dp_err_set(err, DP_ENOMEM, "%s: out of memory", st->path);
    r->tta = n;
    int64_t job = sqlite3_column_int64(s, 0);
    if (job < 0 || (size_t)job >= r->n_jobs)
        return dp_err_set(err, DP_ERUN, "%s: job_tta row outside its run", st->path);
    n[i] = (job_tta){(size_t)job, store_col_double(s, 1), store_col_double(s, 2)};
    r->n_tta = i + 1;
    return 0;
}

static int stat_row(store *st, sqlite3_stmt *s, int64_t id, size_t i, void *ctx, dp_err *err)
{
    (void)id;
    jobs_result *r = ctx;
    job_stat *n = dp_realloc(r->stats, (i + 1) * sizeof *n);
    if (!n)
        return dp_err_set(err, DP_ENOMEM, "%s: out of memory", st->path);
    r->stats = n;
    int64_t job = sqlite3_column_int64(s, 0);
    int scope = res_scope_by_name(store_col_text(s, 3));
    if (job < 0 || (size_t)job >= r->n_jobs || scope < 0)
        return dp_err_set(err, DP_ERUN, "%s: job_stats row outside its run", st->path);
    n[i] = (job_stat){.job = (size_t)job, .run = sqlite3_column_int(s, 1)};
    snprintf(n[i].s.name, sizeof n[i].s.name, "%s", store_col_text(s, 2));
    n[i].s.scope = (res_scope)scope;
    n[i].s.a = sqlite3_column_int64(s, 4);
    n[i].s.b = sqlite3_column_int64(s, 5);
    n[i].s.value = store_col_double(s, 6);
    r->n_stats = i + 1;
    return 0;
}

static int alloc_row(store *st, sqlite3_stmt *s, int64_t id, size_t i, void *ctx, dp_err *err)
{
    (void)id;
    jobs_result *r = ctx;
    job_alloc *n = dp_realloc(r->allocs, (i + 1) * sizeof *n);
    if (!n)
        return dp_err_set(err, DP_ENOMEM, "%s: out of memory", st->path);
    r->allocs = n;
    int64_t job = sqlite3_column_int64(s, 0), dev = sqlite3_column_int64(s, 1);
    if (job < 0 || (size_t)job >= r->n_jobs || dev < 0 || (size_t)dev >= r->n_devices)
        return dp_err_set(err, DP_ERUN, "%s: job_allocs row outside its run", st->path);
    n[i] = (job_alloc){(size_t)job, (size_t)dev, store_col_double(s, 2), store_col_double(s, 3)};
    r->n_allocs = i + 1;
    return 0;
}

int store_jobs_get(store *st, int64_t id, jobs_result **out, dp_err *err)
{
    *out = NULL;
    sqlite3_stmt *q;
    int row, e = store_sql_first(
                 st, &q, &row, "reading a jobs run", err,
                 "SELECT scheduler, seed, devices, n_jobs, makespan_s, jct_mean_s, jct_p95_s, jain,"
                 " jct_p50_s, jct_p99_s, jct_max_s, util_held, util_compute, rho_mean, rho_max, events"
                 " FROM jobs_runs WHERE id = ?1",
                 "i", id);
    if (e)
        return e;
    if (!row)
        return dp_err_set(err, DP_EINPUT, "%s: no jobs run %lld", st->path, (long long)id);
    jobs_result *r = dp_calloc(1, sizeof *r);
    int64_t nj = sqlite3_column_int64(q, 3), nd = sqlite3_column_int64(q, 2);
    if (r && nj > 0 && nj < 100000000 && nd > 0 && nd < 100000000) {
        snprintf(r->scheduler, sizeof r->scheduler, "%s", store_col_text(q, 0));
        r->seed = (uint64_t)sqlite3_column_int64(q, 1);
        r->n_devices = (size_t)nd;
        r->n_jobs = (size_t)nj;
        r->makespan_s = store_col_double(q, 4);
        r->mean_jct_s = store_col_double(q, 5);
        r->p95_jct_s = store_col_double(q, 6);
        r->jain = store_col_double(q, 7);
        r->p50_jct_s = store_col_double(q, 8);
        r->p99_jct_s = store_col_double(q, 9);
        r->max_jct_s = store_col_double(q, 10);
        r->util_alloc = store_col_double(q, 11);
        r->util_busy = store_col_double(q, 12);
        r->mean_rho = store_col_double(q, 13);
        r->max_rho = store_col_double(q, 14);
        r->events = (uint64_t)sqlite3_column_int64(q, 15);
        r->jobs = dp_calloc(r->n_jobs, sizeof *r->jobs);
    }
    sqlite3_finalize(q);
    if (!r || !r->jobs) {
        jobs_result_free(r);
        return dp_err_set(err, r ? DP_ERUN : DP_ENOMEM, "%s: jobs run %lld unreadable", st->path,
                          (long long)id);
    }
    e = store_sql_rows(
        st,
        "SELECT name, policy, devices, arrival_s, start_s, end_s, jct_s, alone_s, rho, epochs,"
        " queue_s, wait_s, device_s, compute_s, bytes, tsend_s, tflops, preemptions, final_acc FROM jobs"
        " WHERE jobs_run_id = ?1 ORDER BY idx",
        "jobs", id, NULL, r, job_row, NULL, err);
    if (!e)
        e = store_sql_rows(st,
                           "SELECT job, target, tta_s FROM job_tta WHERE jobs_run_id = ?1 ORDER BY job, seq",
                           "jobs' times to accuracy", id, NULL, r, tta_row, NULL, err);
    if (!e)
        e = store_sql_rows(st,
                           "SELECT job, run, name, scope, a, b, value FROM job_stats WHERE jobs_run_id = ?1"
                           " ORDER BY seq",
                           "jobs' statistics", id, NULL, r, stat_row, NULL, err);
    if (!e)
        e = store_sql_rows(
            st, "SELECT job, device, t0_s, t1_s FROM job_allocs WHERE jobs_run_id = ?1 ORDER BY rowid",
            "job devices", id, NULL, r, alloc_row, NULL, err);
    if (e) {
        jobs_result_free(r);
        return e;
    }
    *out = r;
    return 0;
}

typedef struct list_ctx {
    store_jobs_row *rows;
} list_ctx;

static int list_row(store *st, sqlite3_stmt *s, int64_t id, size_t i, void *ctx, dp_err *err)
{
    (void)id;
    list_ctx *c = ctx;
    store_jobs_row *n = dp_realloc(c->rows, (i + 1) * sizeof *n);
    if (!n)
        return dp_err_set(err, DP_ENOMEM, "%s: out of memory", st->path);
    c->rows = n;
    store_jobs_row *r = &n[i];
    memset(r, 0, sizeof *r);
    r->id = sqlite3_column_int64(s, 0);
    snprintf(r->started_at, sizeof r->started_at, "%s", store_col_text(s, 1));
    snprintf(r->scenario, sizeof r->scenario, "%s", store_col_text(s, 2));
    snprintf(r->scheduler, sizeof r->scheduler, "%s", store_col_text(s, 3));
    r->seed = (uint64_t)sqlite3_column_int64(s, 4);
    r->n_jobs = sqlite3_column_int64(s, 5);
    r->devices = sqlite3_column_int64(s, 6);
    r->makespan_s = store_col_double(s, 7);
    r->jct_mean_s = store_col_double(s, 8);
    r->jct_p95_s = store_col_double(s, 9);
    r->jain = store_col_double(s, 10);
    return 0;
}

int store_jobs_list(store *st, const char *scenario, int64_t last, int64_t id, store_jobs_row **rows,
                    size_t *n, dp_err *err)
{
    list_ctx c = {NULL};
    *rows = NULL;
    *n = 0;
    char sql[640];
    snprintf(sql, sizeof sql,
             "SELECT * FROM (SELECT r.id, r.started_at, s.name, r.scheduler, r.seed, r.n_jobs, r.devices,"
             " r.makespan_s, r.jct_mean_s, r.jct_p95_s, r.jain FROM jobs_runs r JOIN scenarios s ON s.id ="
             " r.scenario_id WHERE (?1 = 0 OR r.id = ?1) AND (?2 IS NULL OR s.name = ?2) ORDER BY r.id DESC"
             " LIMIT %lld) ORDER BY id",
             last > 0 ? (long long)last : -1LL);
    int e = store_sql_rows(st, sql, "jobs runs", id, scenario, &c, list_row, n, err);
    if (e) {
        dp_free(c.rows);
        *n = 0;
        return e;
    }
    *rows = c.rows;
    return 0;
}

int store_jobs_point_done(store *st, int64_t sweep_id, const char *point_json, const char *scheduler,
                          uint64_t seed, const char *version, int *done, dp_err *err)
{
    sqlite3_stmt *q;
    int row, e = store_sql_first(
                 st, &q, &row, "looking up a jobs sweep point", err,
                 "SELECT 1 FROM jobs_runs WHERE sweep_id = ?1 AND point_json = ?2 AND scheduler = ?3"
                 " AND seed = ?4 AND version = ?5 LIMIT 1",
                 "ittit", sweep_id, point_json, scheduler, (int64_t)seed, version);
    if (e)
        return e;
    *done = row;
    sqlite3_finalize(q);
    return 0;
}

typedef struct point_ctx {
    store_jobs_point *rows;
} point_ctx;

static int point_row(store *st, sqlite3_stmt *s, int64_t id, size_t i, void *ctx, dp_err *err)
{
    (void)id;
    point_ctx *c = ctx;
    store_jobs_point *n = dp_realloc(c->rows, (i + 1) * sizeof *n);
    if (!n)
        return dp_err_set(err, DP_ENOMEM, "%s: out of memory", st->path);
    c->rows = n;
    store_jobs_point *r = &n[i];
    memset(r, 0, sizeof *r);
    snprintf(r->point_json, sizeof r->point_json, "%s", store_col_text(s, 0));
    snprintf(r->scheduler, sizeof r->scheduler, "%s", store_col_text(s, 1));
    r->seed = (uint64_t)sqlite3_column_int64(s, 2);
    r->makespan_s = store_col_double(s, 3);
    r->jct_mean_s = store_col_double(s, 4);
    r->jct_p95_s = store_col_double(s, 5);
    r->jain = store_col_double(s, 6);
    return 0;
}

int store_jobs_sweep_get(store *st, int64_t sweep_id, int64_t *sweep_id_out, store_jobs_point **rows,
                         size_t *n, dp_err *err)
{
    point_ctx c = {NULL};
    *rows = NULL;
    *n = 0;
    *sweep_id_out = 0;
    if (!sweep_id) {
        sqlite3_stmt *q;
        int row, e = store_sql_first(st, &q, &row, "finding the latest jobs sweep", err,
                                     "SELECT max(sweep_id) FROM jobs_runs", "");
        if (e)
            return e;
        sweep_id = row ? sqlite3_column_int64(q, 0) : 0;
        sqlite3_finalize(q);
        if (!sweep_id)
            return 0;
    }
    *sweep_id_out = sweep_id;
    int e = store_sql_rows(
        st,
        "SELECT point_json, scheduler, seed, makespan_s, jct_mean_s, jct_p95_s, jain FROM jobs_runs"
        " WHERE sweep_id = ?1 ORDER BY point_json, scheduler, seed",
        "jobs sweep runs", sweep_id, NULL, &c, point_row, n, err);
    if (e) {
        dp_free(c.rows);
        *n = 0;
        return e;
    }
    *rows = c.rows;
    return 0;
}
