/* store.c: the SQLite results database (store.h, schema in SCHEMA.md).
 *
 * The store's core is three files (store_impl.h holds what they share):
 *  store.c        errors, schema and migrations, open and close
 *  store_write.c  writing runs, failures, calibrations and sweep points
 *  store_read.c   reading runs back, listing them
 *
 * Invariants:
 *  - Values only ever reach SQL through bound parameters.  The few SQL
 *    strings built with snprintf hold compiled-in constants only (the schema
 *    version in `PRAGMA user_version = N`, table names in export.c).
 *  - Every write is one transaction begun with BEGIN IMMEDIATE: the write
 *    lock is taken before the first read, so two writers queue on the busy
 *    timeout instead of both reading and then failing to upgrade (a deferred
 *    transaction that reads first gets SQLITE_BUSY at its first write with
 *    no retry possible).
 *  - On any failure the transaction is rolled back before returning, so the
 *    database holds all of a run or none of it.  A crash mid-transaction is
 *    rolled back by SQLite's WAL on the next open.
 *  - The error message is taken from the connection before the rollback,
 *    which would otherwise overwrite it.
 *  - store_open reads the header (user_version, application_id) before it
 *    writes anything, so a file it refuses is left byte-for-byte unchanged.
 */
#include "log.h"
#include "store_impl.h"
#include "store_sql.h"

#include "json.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* 'dpsm': marks the file as a dpsim results database (PRAGMA application_id),
 * so another application's SQLite file is refused instead of altered. */
#define STORE_APP_ID 0x6470736d

/* ---- errors ------------------------------------------------------------ */

/* Turn an SQLite result code into a DP_ERUN message naming the file.
 * `what` says what the store was doing ("storing run", ...). */
int store_sql_fail(const store *st, int rc, const char *what, dp_err *err)
{
    const char *path = st->path;
    const char *detail = st->db ? sqlite3_errmsg(st->db) : sqlite3_errstr(rc);
    int sys = st->db ? sqlite3_system_errno(st->db) : 0;
    switch (rc & 0xff) {
    case SQLITE_NOMEM:
        return dp_err_set(err, DP_ENOMEM, "%s: out of memory while %s", path, what);
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return dp_err_set(err, DP_ERUN,
                          "%s: database is locked by another process (still locked after the busy "
                          "timeout) while %s; nothing was written",
                          path, what);
    case SQLITE_READONLY:
        return dp_err_set(err, DP_ERUN,
                          "%s: database is read-only (check the permissions of the file and of its "
                          "directory) while %s; nothing was written",
                          path, what);
    case SQLITE_NOTADB:
        return dp_err_set(err, DP_ERUN, "%s: file is not an SQLite database (while %s)", path, what);
    case SQLITE_FULL:
        return dp_err_set(err, DP_ERUN,
                          "%s: disk or database is full while %s; nothing of this write was stored", path,
                          what);
    case SQLITE_CORRUPT:
        return dp_err_set(err, DP_ERUN, "%s: database file is corrupt while %s (%s)", path, what, detail);
    case SQLITE_CANTOPEN:
        return dp_err_set(err, DP_ERUN, "%s: cannot open database file (%s)", path,
                          sys ? strerror(sys) : detail);
    case SQLITE_IOERR:
        /* A failed write is almost always a full disk or a file size
         * limit (EFBIG is not reported as SQLITE_FULL); say so. */
        return dp_err_set(err, DP_ERUN, "%s: I/O error while %s (%s%s%s, SQLite code %d)%s", path, what,
                          detail, sys ? ": " : "", sys ? strerror(sys) : "", rc,
                          rc == SQLITE_IOERR_WRITE || rc == SQLITE_IOERR_FSYNC ||
                                  rc == SQLITE_IOERR_TRUNCATE || sys == ENOSPC || sys == EFBIG
                              ? "; is the disk full or the file size limited?"
                              : "");
    case SQLITE_PERM:
    case SQLITE_AUTH:
        return dp_err_set(err, DP_ERUN, "%s: permission denied while %s (%s)", path, what, detail);
    default:
        return dp_err_set(err, DP_ERUN, "%s: database error while %s: %s", path, what, detail);
    }
}

/* ---- small helpers ---------------------------------------------------- */

/* Constant SQL only (BEGIN/COMMIT/PRAGMA/DDL): no values are ever formatted
 * into these strings. */
int store_exec(store *st, const char *sql)
{
    return sqlite3_exec(st->db, sql, NULL, NULL, NULL);
}

int store_sql_prepare(store *st, const char *sql, sqlite3_stmt **stmt, const char *what, dp_err *err)
{
    int rc = sqlite3_prepare_v2(st->db, sql, -1, stmt, NULL);
    if (rc != SQLITE_OK) {
        *stmt = NULL;
        return store_sql_fail(st, rc, what, err);
    }
    return 0;
}

static int bind_values(sqlite3_stmt *q, const char *types, va_list ap)
{
    int rc = SQLITE_OK;
    for (int i = 0; types[i] && rc == SQLITE_OK; i++) {
        switch (types[i]) {
        case 'i':
            rc = sqlite3_bind_int64(q, i + 1, va_arg(ap, int64_t));
            break;
        case 'd':
            rc = sqlite3_bind_double(q, i + 1, va_arg(ap, double));
            break;
        default: /* 't' */
            rc = store_bind_opt_text(q, i + 1, va_arg(ap, const char *));
            break;
        }
    }
    return rc;
}

static int first_v(store *st, sqlite3_stmt **q, int *row, const char *what, dp_err *err, const char *sql,
                   const char *types, va_list ap)
{
    *row = 0;
    int e = store_sql_prepare(st, sql, q, what, err);
    if (e)
        return e;
    int rc = bind_values(*q, types, ap);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(*q);
    if (rc == SQLITE_ROW) {
        *row = 1;
        return 0;
    }
    e = rc == SQLITE_DONE ? 0 : store_sql_fail(st, rc, what, err);
    sqlite3_finalize(*q);
    *q = NULL;
    return e;
}

int store_sql_first(store *st, sqlite3_stmt **q, int *row, const char *what, dp_err *err, const char *sql,
                    const char *types, ...)
{
    va_list ap;
    va_start(ap, types);
    int e = first_v(st, q, row, what, err, sql, types, ap);
    va_end(ap);
    return e;
}

int store_sql_write(store *st, const char *what, dp_err *err, const char *sql, const char *types, ...)
{
    sqlite3_stmt *q;
    int row;
    va_list ap;
    va_start(ap, types);
    int e = first_v(st, &q, &row, what, err, sql, types, ap);
    va_end(ap);
    if (row)
        sqlite3_finalize(q);
    return e;
}

/* Undo the open transaction, if any, keeping the error already in err. */
void store_rollback(store *st)
{
    if (!sqlite3_get_autocommit(st->db))
        store_exec(st, "ROLLBACK");
}

int store_bind_opt_text(sqlite3_stmt *s, int i, const char *v)
{
    return v ? sqlite3_bind_text(s, i, v, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(s, i);
}

/* Read one integer PRAGMA (user_version, application_id, ...). */
static int pragma_int(store *st, const char *sql, int64_t *out)
{
    sqlite3_stmt *s;
    int rc = sqlite3_prepare_v2(st->db, sql, -1, &s, NULL);
    if (rc != SQLITE_OK)
        return rc;
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        *out = sqlite3_column_int64(s, 0);
        rc = SQLITE_OK;
    } else if (rc == SQLITE_DONE) {
        *out = 0;
        rc = SQLITE_OK;
    }
    if (rc != SQLITE_OK) {
        sqlite3_finalize(s);
        return rc;
    }
    return sqlite3_finalize(s);
}

/* ---- schema and migrations -------------------------------------------- */

/* Migrations, oldest first.  Step k brings user_version from k-1 to k; each
 * runs in its own transaction together with the user_version bump, so an
 * interrupted migration leaves the previous version intact.  To change the
 * schema, append a step (never edit a released one), bump
 * STORE_SCHEMA_VERSION and document the change in SCHEMA.md. */
typedef struct migration {
    int version;
    const char *what;
    const char *sql;
} migration;

static const migration migrations[] = {
    {1, "creating the version 1 schema",
     "CREATE TABLE scenarios(id INTEGER PRIMARY KEY, name TEXT NOT NULL, hash TEXT NOT NULL UNIQUE,"
     " text TEXT NOT NULL, created_at TEXT NOT NULL);"
     "CREATE TABLE sweeps(id INTEGER PRIMARY KEY, scenario_id INTEGER NOT NULL REFERENCES scenarios(id),"
     " spec_json TEXT NOT NULL UNIQUE, created_at TEXT NOT NULL);"
     "CREATE TABLE runs(id INTEGER PRIMARY KEY, scenario_id INTEGER NOT NULL REFERENCES scenarios(id),"
     " policy TEXT NOT NULL, options_json TEXT NOT NULL, overrides_json TEXT NOT NULL DEFAULT '[]',"
     " seed INTEGER NOT NULL, version TEXT NOT NULL, started_at TEXT NOT NULL, wall_s REAL NOT NULL,"
     " status TEXT NOT NULL DEFAULT 'ok', error TEXT, sweep_id INTEGER REFERENCES sweeps(id),"
     " point_json TEXT, tsend_s REAL, ttraining_s REAL, ttotal_s REAL, tflops REAL, utilization REAL,"
     " samples_processed REAL, bytes_total REAL, events INTEGER, bin_s REAL);"
     "CREATE UNIQUE INDEX runs_point ON runs(sweep_id, point_json, policy, seed, version)"
     " WHERE sweep_id IS NOT NULL;"
     "CREATE INDEX runs_scenario ON runs(scenario_id);"
     "CREATE TABLE run_devices(run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
     " idx INTEGER NOT NULL, name TEXT NOT NULL, grp TEXT NOT NULL, kind TEXT NOT NULL, samples INTEGER,"
     " batches INTEGER, compute_s REAL, send_s REAL, recv_s REAL, wait_s REAL, bytes_sent REAL,"
     " bytes_recv REAL, data_ready_s REAL, PRIMARY KEY(run_id, idx));"
     "CREATE TABLE run_epochs(run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
     " epoch INTEGER NOT NULL, end_s REAL NOT NULL, PRIMARY KEY(run_id, epoch));"
     "CREATE TABLE run_flops(run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
     " bin INTEGER NOT NULL, t0_s REAL NOT NULL, flops REAL NOT NULL, PRIMARY KEY(run_id, bin));"
     "CREATE TABLE run_segments(run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
     " device INTEGER NOT NULL, act TEXT NOT NULL, t0_s REAL NOT NULL, t1_s REAL NOT NULL);"
     "CREATE INDEX run_segments_run ON run_segments(run_id);"},
    {2, "adding runs.timeline_res_s (version 2)",
     /* NULL (old runs) or 0: exact timeline segments; > 0: the bin width of
      * a coarsened timeline (see results.h). */
     "ALTER TABLE runs ADD COLUMN timeline_res_s REAL;"},
    {3, "adding run_stats (version 3)",
     /* A policy's or the world's own figures (results.h res_stat). */
     "CREATE TABLE run_stats(run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
     " seq INTEGER NOT NULL, name TEXT NOT NULL, scope TEXT NOT NULL, a INTEGER NOT NULL,"
     " b INTEGER NOT NULL, value REAL, PRIMARY KEY(run_id, seq));"},
    {4, "adding the calibrations table (version 4)",
     /* One row per `dpsim calibrate` fit: what was asked (spec_json: the
      * parameters, bounds, targets, overrides) and what was found
      * (result_json: values, fitted figures, sensitivities).  Kept as JSON
      * because the number of parameters and targets varies per fit. */
     "CREATE TABLE calibrations(id INTEGER PRIMARY KEY,"
     " scenario_id INTEGER NOT NULL REFERENCES scenarios(id), spec_json TEXT NOT NULL,"
     " result_json TEXT NOT NULL, cost REAL, evaluations INTEGER NOT NULL, version TEXT NOT NULL,"
     " started_at TEXT NOT NULL);"},
    {5, "adding the blobs and run_files tables (version 5)",
     /* The trace files a run's scenario read, kept whole so the run can be
      * simulated again anywhere: each distinct content once (blobs, keyed
      * by its hash), and which run read which file under which name. */
     "CREATE TABLE blobs(hash TEXT PRIMARY KEY, bytes INTEGER NOT NULL, data BLOB NOT NULL);"
     "CREATE TABLE run_files(run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
     " name TEXT NOT NULL, path TEXT NOT NULL, hash TEXT NOT NULL REFERENCES blobs(hash),"
     " bytes INTEGER NOT NULL, PRIMARY KEY(run_id, name));"
     "CREATE INDEX run_files_hash ON run_files(hash);"},
    {6, "adding runs.invocation and runs.scenario_dir (version 6)",
     /* Which command invocation stored the run (store_set_invocation), so
      * that plots default to the runs the user just made; NULL for sweep
      * points and runs stored before version 6. */
     "ALTER TABLE runs ADD COLUMN invocation TEXT;"
     /* The absolute directory of the scenario file, against which `rerun`
      * resolves relative trace paths as `run` did (NULL: built-in or
      * unknown). */
     "ALTER TABLE runs ADD COLUMN scenario_dir TEXT;"
     "CREATE INDEX runs_invocation ON runs(invocation) WHERE invocation IS NOT NULL;"},
    {7, "adding run_evals and run_tta (version 7)",
     /* Learning (scenario `learning:`): the global model's evaluations in
      * time order, and each target accuracy's time to accuracy (NULL: not
      * reached), each marked by the model that produced it (`source`:
      * "sgd", the learner; "efficiency", the statistical-efficiency model). */
     "CREATE TABLE run_evals(run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
     " seq INTEGER NOT NULL, source TEXT NOT NULL, t_s REAL NOT NULL, epochs REAL, samples REAL,"
     " epoch INTEGER, test_acc REAL, test_loss REAL, train_loss REAL, PRIMARY KEY(run_id, seq));"
     "CREATE TABLE run_tta(run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
     " seq INTEGER NOT NULL, source TEXT NOT NULL, target REAL NOT NULL, t_s REAL,"
     " PRIMARY KEY(run_id, seq));"},
    /* ---- end of the polish branch's step ---- */
    /* ---- the store branch's step (issues 35, 36): renumber freely ---- */
    {8, "adding run_values and runs.policy_label, policy_color (version 8)",
     /* Each override and sweep-point value of a run as its text and as a
      * number in SI base units (values.c), so SQL sorts and plots them;
      * filled here for the runs already stored. */
     "CREATE TABLE run_values(run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
     " seq INTEGER NOT NULL, source TEXT NOT NULL, key TEXT NOT NULL, text TEXT NOT NULL, si REAL,"
     " unit TEXT, PRIMARY KEY(run_id, seq));"
     "CREATE INDEX run_values_key ON run_values(key);"
     /* How plots show the run's policy, from the binary that ran it (NULL:
      * older runs, failed runs; plots then ask their own registry). */
     "ALTER TABLE runs ADD COLUMN policy_label TEXT;"
     "ALTER TABLE runs ADD COLUMN policy_color TEXT;"},
    /* ---- the jobs branch's step (issue 31): renumber freely ---- */
    {9, "adding jobs_runs, jobs and job_allocs (version 9)",
     /* Many jobs in one world (sim/jobs/, `dpsim jobs`): one jobs_runs row
      * per scheduler run with the run's figures, a jobs row per job, and
      * the devices each job held over time (the Gantt's bars). */
     "CREATE TABLE jobs_runs(id INTEGER PRIMARY KEY, scenario_id INTEGER NOT NULL REFERENCES scenarios(id),"
     " scheduler TEXT NOT NULL, seed INTEGER NOT NULL, version TEXT NOT NULL, started_at TEXT NOT NULL,"
     " invocation TEXT, devices INTEGER NOT NULL, n_jobs INTEGER NOT NULL, makespan_s REAL, jct_mean_s REAL,"
     " jct_p50_s REAL, jct_p95_s REAL, jct_p99_s REAL, jct_max_s REAL, util_held REAL, util_compute REAL,"
     " rho_mean REAL, rho_max REAL, jain REAL, events INTEGER);"
     "CREATE TABLE jobs(jobs_run_id INTEGER NOT NULL REFERENCES jobs_runs(id) ON DELETE CASCADE,"
     " idx INTEGER NOT NULL, name TEXT NOT NULL, policy TEXT NOT NULL, devices INTEGER NOT NULL,"
     " epochs INTEGER NOT NULL, arrival_s REAL, start_s REAL, end_s REAL, jct_s REAL, queue_s REAL,"
     " wait_s REAL, alone_s REAL, rho REAL, device_s REAL, compute_s REAL, bytes REAL, tsend_s REAL,"
     " tflops REAL, preemptions INTEGER, PRIMARY KEY(jobs_run_id, idx));"
     "CREATE TABLE job_allocs(jobs_run_id INTEGER NOT NULL REFERENCES jobs_runs(id) ON DELETE CASCADE,"
     " job INTEGER NOT NULL, device INTEGER NOT NULL, t0_s REAL NOT NULL, t1_s REAL NOT NULL);"
     "CREATE INDEX job_allocs_run ON job_allocs(jobs_run_id);"},
    /* ---- the jobs sweeps' step (issue 31a): renumber freely ---- */
    {10, "adding jobs_runs.sweep_id and point_json (version 10)",
     /* A jobs run of a sweep (`dpsim sweep` over a jobs scenario): its
      * sweep and point, as runs.sweep_id and runs.point_json. */
     "ALTER TABLE jobs_runs ADD COLUMN sweep_id INTEGER REFERENCES sweeps(id);"
     "ALTER TABLE jobs_runs ADD COLUMN point_json TEXT;"
     "CREATE INDEX jobs_runs_sweep ON jobs_runs(sweep_id);"},
    /* ---- the jobsin branch's step (issue 31b): renumber freely ---- */
    {11, "adding job_tta, job_stats and jobs.final_acc (version 11)",
     /* Inside jobs: learning (a job's final accuracy, its time to each
      * target from its arrival) and the policy's own figures of each of a
      * job's runs (as run_stats, with the run they came from). */
     "ALTER TABLE jobs ADD COLUMN final_acc REAL;"
     "CREATE TABLE job_tta(jobs_run_id INTEGER NOT NULL REFERENCES jobs_runs(id) ON DELETE CASCADE,"
     " job INTEGER NOT NULL, seq INTEGER NOT NULL, target REAL NOT NULL, tta_s REAL,"
     " PRIMARY KEY(jobs_run_id, job, seq));"
     "CREATE TABLE job_stats(jobs_run_id INTEGER NOT NULL REFERENCES jobs_runs(id) ON DELETE CASCADE,"
     " job INTEGER NOT NULL, run INTEGER NOT NULL, seq INTEGER NOT NULL, name TEXT NOT NULL, scope TEXT NOT "
     "NULL,"
     " a INTEGER, b INTEGER, value REAL, PRIMARY KEY(jobs_run_id, seq));"},
};

/* Rows a step computes in C after its SQL, in the same transaction (its
 * version: renumber with the step). */
static const struct {
    int version;
    int (*fill)(store *st, dp_err *err);
} migration_fills[] = {{8, store_values_fill}};

static int migration_fill(store *st, int version, dp_err *err)
{
    for (size_t i = 0; i < sizeof migration_fills / sizeof *migration_fills; i++)
        if (migration_fills[i].version == version)
            return migration_fills[i].fill(st, err);
    return 0;
}
_Static_assert(sizeof migrations / sizeof migrations[0] == STORE_SCHEMA_VERSION,
               "one migration step per schema version");

static int migrate(store *st, dp_err *err)
{
    for (size_t i = 0; i < sizeof migrations / sizeof migrations[0]; i++) {
        const migration *m = &migrations[i];
        int rc = store_exec(st, "BEGIN IMMEDIATE");
        if (rc != SQLITE_OK)
            return store_sql_fail(st, rc, "starting a schema migration", err);
        /* Re-read inside the write lock: another process may have migrated
         * the file since we looked. */
        int64_t v = 0;
        rc = pragma_int(st, "PRAGMA user_version", &v);
        if (rc != SQLITE_OK) {
            int e = store_sql_fail(st, rc, "reading the schema version", err);
            store_rollback(st);
            return e;
        }
        if (v > STORE_SCHEMA_VERSION) {
            store_rollback(st);
            return dp_err_set(err, DP_ERUN,
                              "%s: database schema version %" PRId64
                              " is newer than this dpsim supports (%d); use a newer dpsim",
                              st->path, v, STORE_SCHEMA_VERSION);
        }
        if (v >= m->version) {
            store_rollback(st); /* nothing was written */
            continue;
        }
        char bump[96];
        snprintf(bump, sizeof bump, "PRAGMA user_version = %d; PRAGMA application_id = %d", m->version,
                 STORE_APP_ID);
        DP_LOG(LOG_STORE, LOG_INFO, -1, "%s: %s", st->path, m->what);
        rc = store_exec(st, m->sql);
        if (rc == SQLITE_OK) {
            int e = migration_fill(st, m->version, err);
            if (e) {
                store_rollback(st);
                return e;
            }
        }
        if (rc == SQLITE_OK)
            rc = store_exec(st, bump);
        if (rc == SQLITE_OK)
            rc = store_exec(st, "COMMIT");
        if (rc != SQLITE_OK) {
            int e = store_sql_fail(st, rc, m->what, err);
            store_rollback(st);
            return e;
        }
    }
    return 0;
}

/* Switch to WAL (readers never block the writer, and concurrent writers
 * only wait for each other's commits).  The switch needs an exclusive lock
 * and SQLite does not always route that wait through the busy handler, so
 * retry here for up to the busy timeout. */
static int set_wal(store *st, dp_err *err)
{
    int waited_ms = 0;
    for (;;) {
        sqlite3_stmt *s;
        int rc = sqlite3_prepare_v2(st->db, "PRAGMA journal_mode = WAL", -1, &s, NULL);
        if (rc == SQLITE_OK) {
            rc = sqlite3_step(s);
            if (rc == SQLITE_ROW || rc == SQLITE_DONE)
                rc = SQLITE_OK;
            if (rc != SQLITE_OK)
                sqlite3_finalize(s);
            else
                rc = sqlite3_finalize(s);
        }
        if ((rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED) {
            if (rc != SQLITE_OK)
                return store_sql_fail(st, rc, "switching to WAL journal mode", err);
            return 0;
        }
        if (waited_ms >= STORE_BUSY_TIMEOUT_MS)
            return store_sql_fail(st, rc, "switching to WAL journal mode", err);
        sqlite3_sleep(50);
        waited_ms += 50;
    }
}

static int count_tables(store *st, int64_t *n)
{
    return pragma_int(st, "SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'", n);
}

/* ---- open / close ----------------------------------------------------- */

static int open_checks(store *st, int readonly, dp_err *err)
{
    sqlite3_extended_result_codes(st->db, 1);
    sqlite3_busy_timeout(st->db, STORE_BUSY_TIMEOUT_MS);

    /* SQLite silently opens a write-protected file read-only; say so now
     * rather than at the first write (or as a confusing WAL error). */
    if (!readonly && sqlite3_db_readonly(st->db, "main") == 1)
        return dp_err_set(err, DP_ERUN,
                          "%s: database file is read-only (check the permissions of the file and of its "
                          "directory); cannot store results",
                          st->path);
    /* Header first, writing nothing: this is where a non-database file or
     * a newer schema is caught.  One read transaction, so the three values
     * are one snapshot: read apart, a process migrating the new file in
     * between makes it look like "tables but no version". */
    int64_t version = 0, app = 0, tables = 0;
    int rc = store_exec(st, "BEGIN");
    if (rc == SQLITE_OK)
        rc = pragma_int(st, "PRAGMA user_version", &version);
    if (rc == SQLITE_OK)
        rc = pragma_int(st, "PRAGMA application_id", &app);
    if (rc == SQLITE_OK)
        rc = count_tables(st, &tables);
    if (rc == SQLITE_OK)
        rc = store_exec(st, "COMMIT");
    if (rc != SQLITE_OK) {
        int e = store_sql_fail(st, rc, "reading the database header", err);
        store_rollback(st);
        return e;
    }

    if (app != 0 && app != STORE_APP_ID)
        return dp_err_set(err, DP_ERUN,
                          "%s: not a dpsim results database (SQLite application_id 0x%08" PRIx64 ")",
                          st->path, (uint64_t)app);
    if (version > STORE_SCHEMA_VERSION)
        return dp_err_set(err, DP_ERUN,
                          "%s: database schema version %" PRId64
                          " is newer than this dpsim supports (%d); use a newer dpsim",
                          st->path, version, STORE_SCHEMA_VERSION);
    if (version == 0 && tables > 0)
        return dp_err_set(err, DP_ERUN,
                          "%s: not a dpsim results database (it has %" PRId64
                          " tables but no dpsim schema version)",
                          st->path, tables);

    if (readonly) {
        if (version < STORE_SCHEMA_VERSION)
            return dp_err_set(err, DP_ERUN,
                              version == 0
                                  ? "%s: empty database, no dpsim results stored (schema version %" PRId64 ")"
                                  : "%s: database schema version %" PRId64
                                    " is older than this dpsim's; open it for writing once "
                                    "(e.g. store a run) to migrate it",
                              st->path, version);
        rc = store_exec(st, "PRAGMA query_only = 1");
        if (rc != SQLITE_OK)
            return store_sql_fail(st, rc, "opening read-only", err);
        return 0;
    }

    int e = set_wal(st, err);
    if (e)
        return e;
    rc = store_exec(st, "PRAGMA foreign_keys = ON");
    if (rc != SQLITE_OK)
        return store_sql_fail(st, rc, "enabling foreign keys", err);
    if (version < STORE_SCHEMA_VERSION)
        return migrate(st, err);
    return 0;
}

/* A WAL database needs its -shm file even to be read; in a directory the
 * user cannot write (a results file shipped read-only) it cannot be
 * created and every read fails.  When no -wal file exists no writer has
 * uncommitted-to-main data, so the main file alone is the whole database
 * and it can be opened as immutable (no locks, no -shm). */
static int reopen_immutable_if_needed(store *st, dp_err *err)
{
    int64_t v;
    int rc = pragma_int(st, "PRAGMA user_version", &v);
    if ((rc & 0xff) != SQLITE_READONLY && (rc & 0xff) != SQLITE_CANTOPEN)
        return 0; /* fine, or an error open_checks reports better */
    size_t n = strlen(st->path);
    char *wal = dp_malloc(n + 5), *uri = dp_malloc(3 * n + 32);
    int e = 0;
    if (!wal || !uri)
        e = dp_err_set(err, DP_ENOMEM, "%s: out of memory opening the results database", st->path);
    if (!e) {
        snprintf(wal, n + 5, "%s-wal", st->path);
        struct stat sb;
        if (stat(wal, &sb) == 0 && sb.st_size > 0)
            e = store_sql_fail(
                st, rc,
                "reading the database header (its -wal file holds data and no -shm file can be "
                "created beside it)",
                err);
    }
    if (!e) {
        /* URI: percent-encode every byte but unreserved ones and '/'. */
        static const char hex[] = "0123456789ABCDEF";
        char *u = uri + sprintf(uri, "file:");
        for (const unsigned char *c = (const unsigned char *)st->path; *c; c++) {
            if (isalnum(*c) || strchr("-._~/", *c))
                *u++ = (char)*c;
            else {
                *u++ = '%';
                *u++ = hex[*c >> 4];
                *u++ = hex[*c & 15];
            }
        }
        strcpy(u, "?immutable=1");
        sqlite3_close_v2(st->db);
        st->db = NULL;
        rc = sqlite3_open_v2(uri, &st->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL);
        if (rc != SQLITE_OK)
            e = store_sql_fail(st, rc, "opening", err);
    }
    dp_free(wal);
    dp_free(uri);
    return e;
}

store *store_open(const char *path, int readonly, dp_err *err)
{
    if (!path || !*path) {
        dp_err_set(err, DP_EINPUT, "results database: empty file name");
        return NULL;
    }
    if (readonly && strcmp(path, ":memory:") != 0 && access(path, F_OK) != 0) {
        dp_err_set(err, DP_ERUN, "%s: cannot open database file (%s)", path, strerror(errno));
        return NULL;
    }
    store *st = dp_calloc(1, sizeof *st);
    char *p = dp_strdup(path);
    if (!st || !p) {
        dp_free(st);
        dp_free(p);
        dp_err_set(err, DP_ENOMEM, "%s: out of memory opening the results database", path);
        return NULL;
    }
    st->path = p;
    st->readonly = readonly;
    int flags = readonly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    int rc = sqlite3_open_v2(path, &st->db, flags, NULL);
    if (rc != SQLITE_OK) {
        store_sql_fail(st, rc, "opening", err);
        store_close(st);
        return NULL;
    }
    if (readonly && reopen_immutable_if_needed(st, err) != 0) {
        store_close(st);
        return NULL;
    }
    if (open_checks(st, readonly, err) != 0) {
        store_close(st);
        return NULL;
    }
    return st;
}

/* The user_version of the file at path, without opening it as a store: -1
 * when it cannot be read as an SQLite database. */
static int64_t peek_version(const char *path)
{
    sqlite3 *db = NULL;
    int64_t v = -1;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        sqlite3_stmt *s = NULL;
        if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &s, NULL) == SQLITE_OK &&
            sqlite3_step(s) == SQLITE_ROW)
            v = sqlite3_column_int64(s, 0);
        sqlite3_finalize(s);
    }
    sqlite3_close(db);
    return v;
}

store *store_open_read(const char *path, dp_err *err)
{
    store *st = store_open(path, 1, err);
    if (st || !path)
        return st;
    int64_t v = peek_version(path);
    if (v < 1 || v >= STORE_SCHEMA_VERSION)
        return NULL; /* not an older dpsim file: the read-only open's error stands */
    dp_err merr = {0};
    store *w = store_open(path, 0, &merr); /* migrates */
    if (!w)
        return NULL;
    store_close(w);
    return store_open(path, 1, err);
}

void store_close(store *st)
{
    if (!st)
        return;
    sqlite3_close_v2(st->db); /* NULL is a harmless no-op */
    dp_free(st->path);
    dp_free(st);
}

sqlite3 *store_db(store *st)
{
    return st ? st->db : NULL;
}
const char *store_path(const store *st)
{
    return st ? st->path : "";
}
void store_test_fail_after_rows(store *st, long k)
{
    if (st)
        st->fail_after_rows = k > 0 ? k : 0;
}

void store_set_invocation(store *st, const char *id)
{
    if (st)
        snprintf(st->invocation, sizeof st->invocation, "%s", id ? id : "");
}
