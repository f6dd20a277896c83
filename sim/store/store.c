/* store.c: the SQLite results database (store.h, schema in SCHEMA.md).
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

/* 'dpsm': marks the file as a dpsim results database (PRAGMA application_id),
 * so another application's SQLite file is refused instead of altered. */
#define STORE_APP_ID 0x6470736d

struct store {
    sqlite3 *db;
    char *path;
    int readonly;
    long fail_after_rows; /* test hook: k-th child row of the next put fails */
    char invocation[64];  /* stored in runs.invocation ("" = NULL) */
};

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
static int exec(store *st, const char *sql)
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

/* Undo the open transaction, if any, keeping the error already in err. */
static void rollback(store *st)
{
    if (!sqlite3_get_autocommit(st->db))
        exec(st, "ROLLBACK");
}

static int bind_opt_text(sqlite3_stmt *s, int i, const char *v)
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
    /* ---- end of the polish branch's step ---- */
};
_Static_assert(sizeof migrations / sizeof migrations[0] == STORE_SCHEMA_VERSION,
               "one migration step per schema version");

static int migrate(store *st, dp_err *err)
{
    for (size_t i = 0; i < sizeof migrations / sizeof migrations[0]; i++) {
        const migration *m = &migrations[i];
        int rc = exec(st, "BEGIN IMMEDIATE");
        if (rc != SQLITE_OK)
            return store_sql_fail(st, rc, "starting a schema migration", err);
        /* Re-read inside the write lock: another process may have migrated
         * the file since we looked. */
        int64_t v = 0;
        rc = pragma_int(st, "PRAGMA user_version", &v);
        if (rc != SQLITE_OK) {
            int e = store_sql_fail(st, rc, "reading the schema version", err);
            rollback(st);
            return e;
        }
        if (v > STORE_SCHEMA_VERSION) {
            rollback(st);
            return dp_err_set(err, DP_ERUN,
                              "%s: database schema version %" PRId64
                              " is newer than this dpsim supports (%d); use a newer dpsim",
                              st->path, v, STORE_SCHEMA_VERSION);
        }
        if (v >= m->version) {
            rollback(st); /* nothing was written */
            continue;
        }
        char bump[96];
        snprintf(bump, sizeof bump, "PRAGMA user_version = %d; PRAGMA application_id = %d", m->version,
                 STORE_APP_ID);
        DP_LOG(LOG_STORE, LOG_INFO, -1, "%s: %s", st->path, m->what);
        rc = exec(st, m->sql);
        if (rc == SQLITE_OK)
            rc = exec(st, bump);
        if (rc == SQLITE_OK)
            rc = exec(st, "COMMIT");
        if (rc != SQLITE_OK) {
            int e = store_sql_fail(st, rc, m->what, err);
            rollback(st);
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
    int rc = exec(st, "BEGIN");
    if (rc == SQLITE_OK)
        rc = pragma_int(st, "PRAGMA user_version", &version);
    if (rc == SQLITE_OK)
        rc = pragma_int(st, "PRAGMA application_id", &app);
    if (rc == SQLITE_OK)
        rc = count_tables(st, &tables);
    if (rc == SQLITE_OK)
        rc = exec(st, "COMMIT");
    if (rc != SQLITE_OK) {
        int e = store_sql_fail(st, rc, "reading the database header", err);
        rollback(st);
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
        rc = exec(st, "PRAGMA query_only = 1");
        if (rc != SQLITE_OK)
            return store_sql_fail(st, rc, "opening read-only", err);
        return 0;
    }

    int e = set_wal(st, err);
    if (e)
        return e;
    rc = exec(st, "PRAGMA foreign_keys = ON");
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
    int e = store_sql_prepare(st, "SELECT id, text FROM scenarios WHERE hash = ?1", &s,
                              "looking up the scenario", err);
    if (e)
        return e;
    sqlite3_bind_text(s, 1, hex, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
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
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE)
        return store_sql_fail(st, rc, "looking up the scenario", err);

    e = store_sql_prepare(st,
                          "INSERT INTO scenarios(name, hash, text, created_at)"
                          " VALUES(?1, ?2, ?3, COALESCE(?4, strftime('%Y-%m-%dT%H:%M:%SZ', 'now')))",
                          &s, "storing the scenario", err);
    if (e)
        return e;
    sqlite3_bind_text(s, 1, name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 2, hex, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 3, text, -1, SQLITE_TRANSIENT);
    bind_opt_text(s, 4, created_at);
    rc = sqlite3_step(s);
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE)
        return store_sql_fail(st, rc, "storing the scenario", err);
    *id = sqlite3_last_insert_rowid(st->db);
    return 0;
}

/* Start a write (BEGIN IMMEDIATE: the write lock is taken first, see the
 * invariants above) and find or add its scenario row, *scn its id.  `what`
 * names the write in messages ("a run").  On error the caller rolls back as
 * after any other failed step (rollback() is a no-op outside a
 * transaction). */
static int begin_write(store *st, const char *what, const char *name, const char *text, uint64_t hash,
                       const char *created_at, int64_t *scn, dp_err *err)
{
    int rc = exec(st, "BEGIN IMMEDIATE");
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
    if (!e && (rc = exec(st, "COMMIT")) != SQLITE_OK)
        e = store_sql_fail(st, rc, what, err);
    if (e)
        rollback(st);
    return e;
}

/* A scenario to store needs its name and text (its identity). */
static int check_scenario(const store *st, const scn_scenario *s, dp_err *err)
{
    if (!s->name || !s->text)
        return dp_err_set(err, DP_EINPUT, "%s: scenario without %s", st->path, s->name ? "text" : "name");
    return 0;
}

/* Bind ?1..?5 to a sweep point's identity (the runs_point index's columns). */
static void bind_point_key(sqlite3_stmt *s, int64_t sweep_id, const char *point_json, const char *policy,
                           uint64_t seed, const char *version)
{
    sqlite3_bind_int64(s, 1, sweep_id);
    bind_opt_text(s, 2, point_json);
    sqlite3_bind_text(s, 3, policy, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 4, (int64_t)seed);
    sqlite3_bind_text(s, 5, version, -1, SQLITE_TRANSIENT);
}

/* A sweep point that failed before may be retried: drop its failed row so
 * the unique index on points admits the new one. */
static int drop_failed_point(store *st, int64_t sweep_id, const char *point_json, const char *policy,
                             uint64_t seed, const char *version, dp_err *err)
{
    if (sweep_id == 0)
        return 0;
    sqlite3_stmt *s;
    int e = store_sql_prepare(st,
                              "DELETE FROM runs WHERE sweep_id = ?1 AND point_json IS ?2 AND policy = ?3"
                              " AND seed = ?4 AND version = ?5 AND status = 'failed'",
                              &s, "replacing a failed sweep point", err);
    if (e)
        return e;
    bind_point_key(s, sweep_id, point_json, policy, seed, version);
    int rc = sqlite3_step(s);
    sqlite3_finalize(s);
    return rc == SQLITE_DONE ? 0 : store_sql_fail(st, rc, "replacing a failed sweep point", err);
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
        " scenario_dir)"
        " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18,"
        " ?19, ?20, ?21, ?22, ?23, ?24)",
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
    bind_opt_text(s, 10, w->error);
    if (w->sweep_id)
        sqlite3_bind_int64(s, 11, w->sweep_id);
    else
        sqlite3_bind_null(s, 11);
    bind_opt_text(s, 12, w->point_json);
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
    bind_opt_text(s, 23, st->invocation[0] ? st->invocation : NULL);
    bind_opt_text(s, 24, w->scenario_dir);
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
    sqlite3_stmt *dev = NULL, *ep = NULL, *fl = NULL, *seg = NULL, *sta = NULL;
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

    for (size_t i = 0; !e && i < r->n_devices; i++) {
        const res_device *d = &r->devices[i];
        sqlite3_bind_int64(dev, 1, run_id);
        sqlite3_bind_int64(dev, 2, (int64_t)i);
        /* Fixed arrays: bound by length so a missing terminator cannot overrun.
         * SQLITE_STATIC: r outlives the statement's step (no copy of three
         * strings per row: 10^6 rows). */
        sqlite3_bind_text(dev, 3, d->name, (int)strnlen(d->name, sizeof d->name), SQLITE_STATIC);
        sqlite3_bind_text(dev, 4, d->group, (int)strnlen(d->group, sizeof d->group), SQLITE_STATIC);
        sqlite3_bind_text(dev, 5, d->kind, (int)strnlen(d->kind, sizeof d->kind), SQLITE_STATIC);
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
    char *ov = overrides_json(overrides, n_overrides, st, err);
    if (!ov)
        return DP_ENOMEM;

    int64_t id = 0;
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
                 .overrides_json = ov,
                 .version = version,
                 .started_at = started_at,
                 .point_json = point_json,
                 .seed = r->seed,
                 .wall_s = r->wall_s,
                 .sweep_id = sweep_id,
                 .r = r};
    e = begin_write(st, "a run", s->name, s->text, s->text_hash, started_at, &w.scenario_id, err);
    if (!e)
        e = drop_failed_point(st, sweep_id, point_json, r->policy, r->seed, version, err);
    if (!e)
        e = insert_run(st, &w, &id, err);
    if (!e)
        e = insert_children(st, id, r, fail_at, err);
    if (!e)
        e = insert_files(st, id, s, err);
    e = end_write(st, e, "committing the run", err);
    dp_free(ov);
    if (!e && run_id)
        *run_id = id;
    return e;
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
    char *ov = overrides_json(overrides, n_overrides, st, err);
    if (!ov)
        return DP_ENOMEM;
    int64_t id = 0;
    run_row w = {.policy = policy,
                 .options_json = "{}",
                 .overrides_json = ov,
                 .version = version,
                 .started_at = started_at,
                 .error = error ? error : "unknown error",
                 .point_json = point_json,
                 .seed = seed,
                 .wall_s = 0.0,
                 .sweep_id = sweep_id,
                 .r = NULL};
    e = begin_write(st, "a failed run", scenario_name, scenario_text ? scenario_text : "", text_hash,
                    started_at, &w.scenario_id, err);
    if (!e)
        e = drop_failed_point(st, sweep_id, point_json, policy, seed, version, err);
    if (!e)
        e = insert_run(st, &w, &id, err);
    e = end_write(st, e, "committing the failed run", err);
    dp_free(ov);
    if (!e && run_id)
        *run_id = id;
    return e;
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
    int rc;
    e = begin_write(st, "a calibration", s->name, s->text, s->text_hash, started_at, &scn, err);
    sqlite3_stmt *q = NULL;
    if (!e)
        e = store_sql_prepare(
            st,
            "INSERT INTO calibrations(scenario_id, spec_json, result_json, cost, evaluations, version,"
            " started_at) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            &q, "storing the calibration", err);
    if (!e) {
        sqlite3_bind_int64(q, 1, scn);
        sqlite3_bind_text(q, 2, spec_json, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(q, 3, result_json, -1, SQLITE_TRANSIENT);
        if (isnan(cost))
            sqlite3_bind_null(q, 4);
        else
            sqlite3_bind_double(q, 4, cost);
        sqlite3_bind_int64(q, 5, evaluations);
        sqlite3_bind_text(q, 6, version, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(q, 7, started_at, -1, SQLITE_TRANSIENT);
        rc = sqlite3_step(q);
        if (rc != SQLITE_DONE)
            e = store_sql_fail(st, rc, "storing the calibration", err);
    }
    sqlite3_finalize(q);
    e = end_write(st, e, "committing the calibration", err);
    if (!e && id)
        *id = sqlite3_last_insert_rowid(st->db);
    return e;
}

/* ---- reading ---------------------------------------------------------- */

/* Reads run inside one read transaction, so a concurrent writer cannot
 * show us half of another state (WAL gives the snapshot). */
static int begin_read(store *st, const char *what, dp_err *err)
{
    int rc = exec(st, "BEGIN");
    return rc == SQLITE_OK ? 0 : store_sql_fail(st, rc, what, err);
}

static int end_read(store *st, int e, const char *what, dp_err *err)
{
    if (e) {
        rollback(st);
        return e;
    }
    int rc = exec(st, "COMMIT");
    return rc == SQLITE_OK ? 0 : store_sql_fail(st, rc, what, err);
}

static int count_rows(store *st, const char *sql, int64_t run_id, int64_t *n, const char *what, dp_err *err)
{
    sqlite3_stmt *s;
    int e = store_sql_prepare(st, sql, &s, what, err);
    if (e)
        return e;
    sqlite3_bind_int64(s, 1, run_id);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        *n = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return rc == SQLITE_ROW ? 0 : store_sql_fail(st, rc, what, err);
}

static int corrupt(const store *st, int64_t run_id, const char *what, dp_err *err)
{
    return dp_err_set(err, DP_ERUN, "%s: run %" PRId64 " has inconsistent %s rows", st->path, run_id, what);
}

static int read_run_row(store *st, int64_t run_id, res_run *r, dp_err *err)
{
    sqlite3_stmt *s;
    int e =
        store_sql_prepare(st,
                          "SELECT policy, options_json, seed, wall_s, tsend_s, ttraining_s, ttotal_s, tflops,"
                          " utilization, samples_processed, bytes_total, events, bin_s, timeline_res_s"
                          " FROM runs WHERE id = ?1",
                          &s, "reading the run", err);
    if (e)
        return e;
    sqlite3_bind_int64(s, 1, run_id);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
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
        if (!r->options_json)
            e = dp_err_set(err, DP_ENOMEM, "%s: out of memory reading run %" PRId64, st->path, run_id);
    } else if (rc == SQLITE_DONE)
        e = dp_err_set(err, DP_EINPUT, "%s: no run with id %" PRId64, st->path, run_id);
    else
        e = store_sql_fail(st, rc, "reading the run", err);
    sqlite3_finalize(s);
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
    snprintf(d->name, sizeof d->name, "%s", store_col_text(s, 1));
    snprintf(d->group, sizeof d->group, "%s", store_col_text(s, 2));
    snprintf(d->kind, sizeof d->kind, "%s", store_col_text(s, 3));
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
    int e = store_sql_prepare(st, "SELECT scenario_dir FROM runs WHERE id = ?1", &q,
                              "reading a run's scenario directory", err);
    if (e)
        return e;
    sqlite3_bind_int64(q, 1, run_id);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW && sqlite3_column_type(q, 0) != SQLITE_NULL &&
        !(*dir = dp_strdup((const char *)sqlite3_column_text(q, 0)))) {
        sqlite3_finalize(q);
        return dp_err_set(err, DP_ENOMEM, "%s: out of memory", st->path);
    }
    sqlite3_finalize(q);
    return rc == SQLITE_ROW || rc == SQLITE_DONE
               ? 0
               : store_sql_fail(st, rc, "reading a run's scenario directory", err);
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
    e = store_sql_prepare(st,
                          "SELECT s.text, s.name, r.overrides_json, r.policy, r.seed FROM runs r"
                          " JOIN scenarios s ON s.id = r.scenario_id WHERE r.id = ?1",
                          &s, "reading a run's source", err);
    if (!e) {
        sqlite3_bind_int64(s, 1, run_id);
        int rc = sqlite3_step(s);
        if (rc == SQLITE_ROW) {
            text = dp_strdup(store_col_text(s, 0));
            name = dp_strdup(store_col_text(s, 1));
            ovj = dp_strdup(store_col_text(s, 2));
            pol = dp_strdup(store_col_text(s, 3));
            sd = (uint64_t)sqlite3_column_int64(s, 4);
            if (!text || !name || !ovj || !pol)
                e = dp_err_set(err, DP_ENOMEM, "%s: out of memory reading run %" PRId64, st->path, run_id);
        } else if (rc == SQLITE_DONE)
            e = dp_err_set(err, DP_EINPUT, "%s: no run with id %" PRId64, st->path, run_id);
        else
            e = store_sql_fail(st, rc, "reading a run's source", err);
        sqlite3_finalize(s);
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

static void print_metric(FILE *out, sqlite3_stmt *s, int i, int width)
{
    if (sqlite3_column_type(s, i) == SQLITE_NULL)
        fprintf(out, "  %*s", width, "-");
    else
        fprintf(out, "  %*.6g", width, sqlite3_column_double(s, i));
}

int store_list_runs(store *st, FILE *out, const char *scenario, const char *policy, dp_err *err)
{
    if (!st || !out)
        return dp_err_set(err, DP_EINPUT, "store_list_runs: %s is NULL", st ? "out" : "store");
    sqlite3_stmt *s;
    int e = store_sql_prepare(
        st,
        "SELECT r.id, r.started_at, s.name, r.policy, r.seed, r.status, r.tsend_s, r.ttraining_s,"
        " r.ttotal_s, r.tflops FROM runs r JOIN scenarios s ON s.id = r.scenario_id"
        " WHERE (?1 IS NULL OR s.name = ?1) AND (?2 IS NULL OR r.policy = ?2) ORDER BY r.id",
        &s, "listing runs", err);
    if (e)
        return e;
    bind_opt_text(s, 1, scenario);
    bind_opt_text(s, 2, policy);
    fprintf(out, "%6s  %-20s  %-24s  %-10s  %10s  %-6s  %12s  %12s  %12s  %10s\n", "id", "started_at",
            "scenario", "policy", "seed", "status", "Tsend_s", "Ttraining_s", "Ttotal_s", "TFLOPS");
    int rc = SQLITE_DONE;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        fprintf(out, "%6" PRId64 "  %-20s  %-24s  %-10s  %10" PRIu64 "  %-6s",
                (int64_t)sqlite3_column_int64(s, 0), store_col_text(s, 1), store_col_text(s, 2),
                store_col_text(s, 3), (uint64_t)sqlite3_column_int64(s, 4), store_col_text(s, 5));
        print_metric(out, s, 6, 12);
        print_metric(out, s, 7, 12);
        print_metric(out, s, 8, 12);
        print_metric(out, s, 9, 10);
        fputc('\n', out);
    }
    if (rc != SQLITE_DONE)
        e = store_sql_fail(st, rc, "listing runs", err);
    sqlite3_finalize(s);
    if (!e && (fflush(out) != 0 || ferror(out)))
        e = dp_err_set(err, DP_ERUN, "%s: writing the run list failed: %s", st->path, strerror(errno));
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
    int rc;
    e = begin_write(st, "a sweep", s->name, s->text, s->text_hash, NULL, &scn, err);
    sqlite3_stmt *q = NULL;
    if (!e)
        e = store_sql_prepare(
            st,
            "INSERT INTO sweeps(scenario_id, spec_json, created_at)"
            " VALUES(?1, ?2, strftime('%Y-%m-%dT%H:%M:%SZ', 'now')) ON CONFLICT(spec_json) DO NOTHING",
            &q, "storing the sweep", err);
    if (!e) {
        sqlite3_bind_int64(q, 1, scn);
        sqlite3_bind_text(q, 2, spec_json, -1, SQLITE_TRANSIENT);
        rc = sqlite3_step(q);
        sqlite3_finalize(q);
        if (rc != SQLITE_DONE)
            e = store_sql_fail(st, rc, "storing the sweep", err);
    }
    if (!e)
        e = store_sql_prepare(st, "SELECT id, scenario_id FROM sweeps WHERE spec_json = ?1", &q,
                              "looking up the sweep", err);
    if (!e) {
        sqlite3_bind_text(q, 1, spec_json, -1, SQLITE_TRANSIENT);
        rc = sqlite3_step(q);
        if (rc == SQLITE_ROW) {
            id = sqlite3_column_int64(q, 0);
            id_scn = sqlite3_column_int64(q, 1);
        } else
            e = store_sql_fail(st, rc == SQLITE_DONE ? SQLITE_ERROR : rc, "looking up the sweep", err);
        sqlite3_finalize(q);
    }
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
    int e = store_sql_prepare(
        st,
        "SELECT status, ttotal_s, error FROM runs WHERE sweep_id = ?1 AND point_json IS ?2"
        " AND policy = ?3 AND seed = ?4 AND version = ?5 ORDER BY status = 'ok' DESC LIMIT 1",
        &s, "checking a sweep point", err);
    if (e)
        return e;
    bind_point_key(s, sweep_id, point_json, policy, seed, version);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        *done = strcmp(store_col_text(s, 0), "ok") == 0 ? 1 : 2;
        if (ttotal_s && *done == 1 && sqlite3_column_type(s, 1) != SQLITE_NULL)
            *ttotal_s = sqlite3_column_double(s, 1);
        if (msg && msg_cap && *done == 2) {
            const unsigned char *m = sqlite3_column_text(s, 2);
            snprintf(msg, msg_cap, "%s", m ? (const char *)m : "(no message)");
        }
    } else if (rc != SQLITE_DONE)
        e = store_sql_fail(st, rc, "checking a sweep point", err);
    sqlite3_finalize(s);
    return e;
}

int store_point_done(store *st, int64_t sweep_id, const char *point_json, const char *policy, uint64_t seed,
                     const char *version, int *done, dp_err *err)
{
    return store_point_outcome(st, sweep_id, point_json, policy, seed, version, done, NULL, NULL, 0, err);
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
