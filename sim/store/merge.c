/* merge.c: results databases merged into one (store.h store_merge): the
 * way sharded sweeps (--shard K/N on several machines) come back together.
 * Scenarios matched by hash, sweeps by spec, runs with every child row, ids
 * remapped, in one transaction on OUT. */
#include "store_sql.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- merge --------------------------------------------------------------- */

/* Old id -> new id for one input file; filled in increasing old-id order
 * (every copy reads ORDER BY id), so lookups are binary searches. */
typedef struct idmap {
    int64_t *from, *to;
    size_t n, cap;
} idmap;

static int idmap_put(idmap *m, int64_t from, int64_t to)
{
    if (m->n == m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 64;
        int64_t *f = dp_realloc(m->from, cap * sizeof *f);
        if (!f)
            return DP_ENOMEM;
        m->from = f;
        int64_t *t = dp_realloc(m->to, cap * sizeof *t);
        if (!t)
            return DP_ENOMEM;
        m->to = t;
        m->cap = cap;
    }
    m->from[m->n] = from;
    m->to[m->n++] = to;
    return 0;
}

static int idmap_get(const idmap *m, int64_t from, int64_t *to)
{
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->from[mid] < from)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < m->n && m->from[lo] == from) {
        *to = m->to[lo];
        return 0;
    }
    return -1;
}

static void idmap_free(idmap *m)
{
    dp_free(m->from);
    dp_free(m->to);
    memset(m, 0, sizeof *m);
}

typedef struct merger {
    sqlite3 *out, *in;
    const char *out_path, *in_path;
    dp_err *err;
} merger;

static int mfail(merger *m, sqlite3 *db, const char *what)
{
    return dp_err_set(m->err, DP_ERUN, "merge %s into %s: %s: %s", m->in_path, m->out_path, what,
                      sqlite3_errmsg(db));
}

static int mprep(merger *m, sqlite3 *db, const char *sql, sqlite3_stmt **s)
{
    if (sqlite3_prepare_v2(db, sql, -1, s, NULL) != SQLITE_OK)
        return mfail(m, db, "preparing a statement");
    return 0;
}

/* A row copier: INSERT INTO table(every column of `sel` but `id`) with the
 * columns named in `remap` replaced by caller values.  Copying by column
 * name keeps merge independent of column order. */
#define MAX_COLS 64
typedef struct copier {
    sqlite3_stmt *sel, *ins;
    int n;
    int bind[MAX_COLS];  /* parameter index per selected column, 0 = not copied (id) */
    int remap[MAX_COLS]; /* -1 or an index into the caller's values */
} copier;

static int copier_init(merger *m, copier *cp, const char *table, const char *select_sql,
                       const char *const *remap, size_t n_remap)
{
    memset(cp, 0, sizeof *cp);
    if (mprep(m, m->in, select_sql, &cp->sel))
        return DP_ERUN;
    cp->n = sqlite3_column_count(cp->sel);
    if (cp->n > MAX_COLS)
        return dp_err_set(m->err, DP_ERUN, "merge: table %s has more than %d columns", table, MAX_COLS);
    char sql[4096];
    size_t o = (size_t)snprintf(sql, sizeof sql, "INSERT INTO %s(", table);
    int np = 0;
    for (int i = 0; i < cp->n; i++) {
        const char *name = sqlite3_column_name(cp->sel, i);
        cp->remap[i] = -1;
        if (strcmp(name, "id") == 0)
            continue;
        for (size_t r = 0; r < n_remap; r++)
            if (strcmp(name, remap[r]) == 0)
                cp->remap[i] = (int)r;
        cp->bind[i] = ++np;
        o += (size_t)snprintf(sql + o, sizeof sql - o, "%s\"%s\"", np > 1 ? "," : "", name);
        if (o >= sizeof sql - 64)
            return dp_err_set(m->err, DP_ERUN, "merge: column list of %s too long", table);
    }
    o += (size_t)snprintf(sql + o, sizeof sql - o, ") VALUES(");
    for (int i = 1; i <= np && o < sizeof sql - 16; i++)
        o += (size_t)snprintf(sql + o, sizeof sql - o, "%s?%d", i > 1 ? "," : "", i);
    if (o >= sizeof sql - 16)
        return dp_err_set(m->err, DP_ERUN, "merge: column list of %s too long", table);
    snprintf(sql + o, sizeof sql - o, ")");
    return mprep(m, m->out, sql, &cp->ins);
}

static void copier_free(copier *cp)
{
    sqlite3_finalize(cp->sel);
    sqlite3_finalize(cp->ins);
    memset(cp, 0, sizeof *cp);
}

/* Insert the row `sel` is on; vals[r] replaces remapped column r (has[r]
 * 0 = NULL). */
static int copier_insert(merger *m, copier *cp, const int64_t *vals, const int *has)
{
    sqlite3_reset(cp->ins);
    for (int i = 0; i < cp->n; i++) {
        if (!cp->bind[i])
            continue;
        if (cp->remap[i] >= 0) {
            if (has[cp->remap[i]])
                sqlite3_bind_int64(cp->ins, cp->bind[i], vals[cp->remap[i]]);
            else
                sqlite3_bind_null(cp->ins, cp->bind[i]);
        } else {
            sqlite3_bind_value(cp->ins, cp->bind[i], sqlite3_column_value(cp->sel, i));
        }
    }
    if (sqlite3_step(cp->ins) != SQLITE_DONE)
        return mfail(m, m->out, "inserting a row");
    return 0;
}

static int col_index(sqlite3_stmt *s, const char *name)
{
    for (int i = 0; i < sqlite3_column_count(s); i++)
        if (strcmp(sqlite3_column_name(s, i), name) == 0)
            return i;
    return -1;
}

static int merge_scenarios(merger *m, idmap *map, store_merge_stats *ms)
{
    copier cp;
    sqlite3_stmt *find = NULL;
    int e = copier_init(m, &cp, "scenarios", "SELECT * FROM scenarios ORDER BY id", NULL, 0);
    if (!e)
        e = mprep(m, m->out, "SELECT id, text FROM scenarios WHERE hash = ?1", &find);
    int c_id = cp.sel ? col_index(cp.sel, "id") : -1, c_hash = cp.sel ? col_index(cp.sel, "hash") : -1,
        c_text = cp.sel ? col_index(cp.sel, "text") : -1;
    if (!e && (c_id < 0 || c_hash < 0 || c_text < 0))
        e = dp_err_set(m->err, DP_ERUN, "merge %s: scenarios table lacks id, hash or text", m->in_path);
    int rc = SQLITE_DONE;
    while (!e && (rc = sqlite3_step(cp.sel)) == SQLITE_ROW) {
        int64_t old = sqlite3_column_int64(cp.sel, c_id), nid = 0;
        sqlite3_reset(find);
        sqlite3_bind_value(find, 1, sqlite3_column_value(cp.sel, c_hash));
        rc = sqlite3_step(find);
        if (rc == SQLITE_ROW) {
            const unsigned char *a = sqlite3_column_text(find, 1), *b = sqlite3_column_text(cp.sel, c_text);
            nid = sqlite3_column_int64(find, 0);
            if (!a || !b || strcmp((const char *)a, (const char *)b) != 0)
                e = dp_err_set(m->err, DP_ERUN,
                               "merge %s into %s: scenario %" PRId64
                               " has the hash of stored scenario %" PRId64
                               " but a different text (hash collision)",
                               m->in_path, m->out_path, old, nid);
        } else if (rc == SQLITE_DONE) {
            e = copier_insert(m, &cp, NULL, NULL);
            nid = sqlite3_last_insert_rowid(m->out);
            if (!e)
                ms->scenarios_added++;
        } else {
            e = mfail(m, m->out, "looking up a scenario");
        }
        if (!e && idmap_put(map, old, nid))
            e = dp_err_set(m->err, DP_ENOMEM, "out of memory merging %s", m->in_path);
        rc = SQLITE_DONE;
    }
    if (!e && rc != SQLITE_DONE)
        e = mfail(m, m->in, "reading scenarios");
    sqlite3_finalize(find);
    copier_free(&cp);
    return e;
}

static int merge_sweeps(merger *m, const idmap *scn, idmap *map, store_merge_stats *ms)
{
    copier cp;
    sqlite3_stmt *find = NULL;
    const char *const remap[] = {"scenario_id"};
    int e = copier_init(m, &cp, "sweeps", "SELECT * FROM sweeps ORDER BY id", remap, 1);
    if (!e)
        e = mprep(m, m->out, "SELECT id, scenario_id FROM sweeps WHERE spec_json = ?1", &find);
    int c_id = cp.sel ? col_index(cp.sel, "id") : -1, c_scn = cp.sel ? col_index(cp.sel, "scenario_id") : -1,
        c_spec = cp.sel ? col_index(cp.sel, "spec_json") : -1;
    if (!e && (c_id < 0 || c_scn < 0 || c_spec < 0))
        e = dp_err_set(m->err, DP_ERUN, "merge %s: sweeps table lacks id, scenario_id or spec_json",
                       m->in_path);
    int rc = SQLITE_DONE;
    while (!e && (rc = sqlite3_step(cp.sel)) == SQLITE_ROW) {
        int64_t old = sqlite3_column_int64(cp.sel, c_id), nid = 0, nscn = 0;
        if (idmap_get(scn, sqlite3_column_int64(cp.sel, c_scn), &nscn)) {
            e = dp_err_set(m->err, DP_ERUN, "merge %s: sweep %" PRId64 " names a missing scenario",
                           m->in_path, old);
            break;
        }
        sqlite3_reset(find);
        sqlite3_bind_value(find, 1, sqlite3_column_value(cp.sel, c_spec));
        rc = sqlite3_step(find);
        if (rc == SQLITE_ROW) {
            nid = sqlite3_column_int64(find, 0);
            if (sqlite3_column_int64(find, 1) != nscn)
                e = dp_err_set(m->err, DP_ERUN,
                               "merge %s into %s: sweep %" PRId64 " has the spec of stored sweep %" PRId64
                               " but another scenario",
                               m->in_path, m->out_path, old, nid);
        } else if (rc == SQLITE_DONE) {
            int has = 1;
            e = copier_insert(m, &cp, &nscn, &has);
            nid = sqlite3_last_insert_rowid(m->out);
            if (!e)
                ms->sweeps_added++;
        } else {
            e = mfail(m, m->out, "looking up a sweep");
        }
        if (!e && idmap_put(map, old, nid))
            e = dp_err_set(m->err, DP_ENOMEM, "out of memory merging %s", m->in_path);
        rc = SQLITE_DONE;
    }
    if (!e && rc != SQLITE_DONE)
        e = mfail(m, m->in, "reading sweeps");
    sqlite3_finalize(find);
    copier_free(&cp);
    return e;
}

/* The trace contents runs kept (content-addressed: a hash OUT holds already
 * is the same bytes), before the runs whose run_files point at them. */
static int merge_blobs(merger *m)
{
    sqlite3_stmt *rd = NULL, *wr = NULL;
    int e = mprep(m, m->in, "SELECT hash, bytes, data FROM blobs ORDER BY hash", &rd);
    if (!e)
        e = mprep(m, m->out, "INSERT OR IGNORE INTO blobs(hash, bytes, data) VALUES(?1, ?2, ?3)", &wr);
    int rc = SQLITE_DONE;
    while (!e && (rc = sqlite3_step(rd)) == SQLITE_ROW) {
        sqlite3_bind_value(wr, 1, sqlite3_column_value(rd, 0));
        sqlite3_bind_value(wr, 2, sqlite3_column_value(rd, 1));
        sqlite3_bind_value(wr, 3, sqlite3_column_value(rd, 2));
        if (sqlite3_step(wr) != SQLITE_DONE)
            e = mfail(m, m->out, "copying kept trace files");
        sqlite3_reset(wr);
        rc = SQLITE_DONE;
    }
    if (!e && rc != SQLITE_DONE)
        e = mfail(m, m->in, "reading kept trace files");
    sqlite3_finalize(rd);
    sqlite3_finalize(wr);
    return e;
}

static const char *const child_tables[] = {"run_devices",  "run_epochs", "run_flops",
                                           "run_segments", "run_stats",  "run_files",
                                           "run_evals",    "run_tta",    "run_values"};
#define N_CHILD (sizeof child_tables / sizeof child_tables[0])

static int step_done(merger *m, sqlite3_stmt *s, const char *what)
{
    return sqlite3_step(s) == SQLITE_DONE ? 0 : mfail(m, m->out, what);
}

/* Column positions in the input's runs rows. */
typedef struct run_cols {
    int id, scn, swp, pt, pol, seed, ver, start, ov, status;
} run_cols;

static int merge_runs(merger *m, const idmap *scn, const idmap *swp, store_merge_stats *ms)
{
    copier runs, child[N_CHILD];
    memset(child, 0, sizeof child);
    sqlite3_stmt *find_sweep = NULL, *find_plain = NULL, *del[N_CHILD + 1] = {0};
    const char *const run_remap[] = {"scenario_id", "sweep_id"};
    const char *const child_remap[] = {"run_id"};
    int e = copier_init(m, &runs, "runs", "SELECT * FROM runs ORDER BY id", run_remap, 2);
    for (size_t k = 0; k < N_CHILD && !e; k++) {
        char sql[128];
        snprintf(sql, sizeof sql, "SELECT * FROM %s WHERE run_id = ?1 ORDER BY rowid", child_tables[k]);
        e = copier_init(m, &child[k], child_tables[k], sql, child_remap, 1);
        snprintf(sql, sizeof sql, "DELETE FROM %s WHERE run_id = ?1", child_tables[k]);
        if (!e)
            e = mprep(m, m->out, sql, &del[k]);
    }
    if (!e)
        e = mprep(m, m->out, "DELETE FROM runs WHERE id = ?1", &del[N_CHILD]);
    if (!e)
        e = mprep(m, m->out,
                  "SELECT id, status FROM runs WHERE sweep_id = ?1 AND point_json IS ?2 AND policy = ?3"
                  " AND seed = ?4 AND version = ?5 ORDER BY status = 'ok' DESC LIMIT 1",
                  &find_sweep);
    if (!e)
        e = mprep(
            m, m->out,
            "SELECT id FROM runs WHERE sweep_id IS NULL AND scenario_id = ?1 AND policy = ?2 AND seed = ?3"
            " AND version = ?4 AND started_at = ?5 AND overrides_json = ?6 LIMIT 1",
            &find_plain);
    sqlite3_stmt *sel = runs.sel;
    run_cols c = {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1};
    if (!e) {
        c = (run_cols){
            col_index(sel, "id"),         col_index(sel, "scenario_id"), col_index(sel, "sweep_id"),
            col_index(sel, "point_json"), col_index(sel, "policy"),      col_index(sel, "seed"),
            col_index(sel, "version"),    col_index(sel, "started_at"),  col_index(sel, "overrides_json"),
            col_index(sel, "status")};
        if (c.id < 0 || c.scn < 0 || c.swp < 0 || c.pt < 0 || c.pol < 0 || c.seed < 0 || c.ver < 0 ||
            c.start < 0 || c.ov < 0 || c.status < 0)
            e = dp_err_set(m->err, DP_ERUN, "merge %s: the runs table lacks a column merge needs",
                           m->in_path);
    }
    int rc = SQLITE_DONE;
    while (!e && (rc = sqlite3_step(sel)) == SQLITE_ROW) {
        int64_t old = sqlite3_column_int64(sel, c.id);
        int64_t vals[2] = {0, 0};
        int has[2] = {1, sqlite3_column_type(sel, c.swp) != SQLITE_NULL};
        if (idmap_get(scn, sqlite3_column_int64(sel, c.scn), &vals[0]) ||
            (has[1] && idmap_get(swp, sqlite3_column_int64(sel, c.swp), &vals[1]))) {
            e = dp_err_set(m->err, DP_ERUN, "merge %s: run %" PRId64 " names a missing scenario or sweep",
                           m->in_path, old);
            break;
        }
        const unsigned char *status = sqlite3_column_text(sel, c.status);
        int in_ok = status && strcmp((const char *)status, "ok") == 0;
        int64_t replace = 0;
        int skip = 0;
        sqlite3_stmt *f = has[1] ? find_sweep : find_plain;
        sqlite3_reset(f);
        if (has[1]) {
            sqlite3_bind_int64(f, 1, vals[1]);
            sqlite3_bind_value(f, 2, sqlite3_column_value(sel, c.pt));
            sqlite3_bind_value(f, 3, sqlite3_column_value(sel, c.pol));
            sqlite3_bind_value(f, 4, sqlite3_column_value(sel, c.seed));
            sqlite3_bind_value(f, 5, sqlite3_column_value(sel, c.ver));
        } else {
            sqlite3_bind_int64(f, 1, vals[0]);
            sqlite3_bind_value(f, 2, sqlite3_column_value(sel, c.pol));
            sqlite3_bind_value(f, 3, sqlite3_column_value(sel, c.seed));
            sqlite3_bind_value(f, 4, sqlite3_column_value(sel, c.ver));
            sqlite3_bind_value(f, 5, sqlite3_column_value(sel, c.start));
            sqlite3_bind_value(f, 6, sqlite3_column_value(sel, c.ov));
        }
        rc = sqlite3_step(f);
        if (rc == SQLITE_ROW) {
            /* An ok run beats a failed one for the same sweep point (as a
             * retried sweep would do); otherwise OUT's row stays. */
            const unsigned char *os = has[1] ? sqlite3_column_text(f, 1) : NULL;
            if (has[1] && in_ok && os && strcmp((const char *)os, "failed") == 0)
                replace = sqlite3_column_int64(f, 0);
            else
                skip = 1;
        } else if (rc != SQLITE_DONE) {
            e = mfail(m, m->out, "looking up a run");
            break;
        }
        rc = SQLITE_DONE;
        if (skip) {
            ms->runs_skipped++;
            continue;
        }
        for (size_t k = 0; replace && k <= N_CHILD && !e; k++) {
            sqlite3_reset(del[k]);
            sqlite3_bind_int64(del[k], 1, replace);
            e = step_done(m, del[k], "replacing a failed run");
        }
        if (!e)
            e = copier_insert(m, &runs, vals, has);
        if (e)
            break;
        int64_t nid = sqlite3_last_insert_rowid(m->out);
        int one = 1;
        for (size_t k = 0; k < N_CHILD && !e; k++) {
            sqlite3_reset(child[k].sel);
            sqlite3_bind_int64(child[k].sel, 1, old);
            while (!e && (rc = sqlite3_step(child[k].sel)) == SQLITE_ROW)
                e = copier_insert(m, &child[k], &nid, &one);
            if (!e && rc != SQLITE_DONE)
                e = mfail(m, m->in, "reading a run's rows");
        }
        rc = SQLITE_DONE;
        if (!e) {
            if (replace)
                ms->runs_replaced++;
            else
                ms->runs_added++;
        }
    }
    if (!e && rc != SQLITE_DONE)
        e = mfail(m, m->in, "reading runs");
    sqlite3_finalize(find_sweep);
    sqlite3_finalize(find_plain);
    for (size_t k = 0; k <= N_CHILD; k++)
        sqlite3_finalize(del[k]);
    for (size_t k = 0; k < N_CHILD; k++)
        copier_free(&child[k]);
    copier_free(&runs);
    return e;
}

static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    if (stat(a, &sa) || stat(b, &sb))
        return 0;
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* Runs of many jobs (`dpsim jobs`: jobs_runs with their jobs, job_allocs,
 * job_tta and job_stats rows), ids remapped.  A jobs run OUT holds already (same
 * scenario, scheduler, seed, version and start) is skipped, so merging a
 * file twice adds nothing.  Inputs from before the jobs tables have none. */
static int merge_jobs(merger *m, const idmap *scn, const idmap *swp, store_merge_stats *ms)
{
    sqlite3_stmt *has = NULL, *find = NULL;
    int e = mprep(m, m->in, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'jobs_runs'", &has);
    int present = !e && sqlite3_step(has) == SQLITE_ROW;
    sqlite3_finalize(has);
    if (e || !present)
        return e;
    static const char *const kids[] = {"jobs", "job_allocs", "job_tta", "job_stats"};
    enum { NK = sizeof kids / sizeof *kids };
    copier runs, kid[NK];
    memset(kid, 0, sizeof kid);
    const char *const run_remap[] = {"scenario_id", "sweep_id"}, *const kid_remap[] = {"jobs_run_id"};
    e = copier_init(m, &runs, "jobs_runs", "SELECT * FROM jobs_runs ORDER BY id", run_remap, 2);
    for (size_t k = 0; k < NK && !e; k++) {
        char sql[128];
        snprintf(sql, sizeof sql, "SELECT * FROM %s WHERE jobs_run_id = ?1 ORDER BY rowid", kids[k]);
        e = copier_init(m, &kid[k], kids[k], sql, kid_remap, 1);
    }
    if (!e)
        e = mprep(m, m->out,
                  "SELECT id FROM jobs_runs WHERE scenario_id = ?1 AND scheduler = ?2 AND seed = ?3"
                  " AND version = ?4 AND started_at = ?5 AND sweep_id IS ?6 AND point_json IS ?7 LIMIT 1",
                  &find);
    int c_id = -1, c_scn = -1, c_sch = -1, c_seed = -1, c_ver = -1, c_start = -1, c_swp = -1, c_pt = -1;
    if (!e) {
        c_swp = col_index(runs.sel, "sweep_id"); /* -1 in files before jobs sweeps */
        c_pt = col_index(runs.sel, "point_json");
        c_id = col_index(runs.sel, "id"), c_scn = col_index(runs.sel, "scenario_id");
        c_sch = col_index(runs.sel, "scheduler"), c_seed = col_index(runs.sel, "seed");
        c_ver = col_index(runs.sel, "version"), c_start = col_index(runs.sel, "started_at");
        if (c_id < 0 || c_scn < 0 || c_sch < 0 || c_seed < 0 || c_ver < 0 || c_start < 0)
            e = dp_err_set(m->err, DP_ERUN, "merge %s: jobs_runs lacks a column merge matches on",
                           m->in_path);
    }
    int rc = SQLITE_DONE;
    while (!e && (rc = sqlite3_step(runs.sel)) == SQLITE_ROW) {
        int64_t old = sqlite3_column_int64(runs.sel, c_id), nid = 0, nv[2] = {0, 0};
        int hv[2] = {1, c_swp >= 0 && sqlite3_column_type(runs.sel, c_swp) != SQLITE_NULL};
        if (hv[1] && idmap_get(swp, sqlite3_column_int64(runs.sel, c_swp), &nv[1])) {
            e = dp_err_set(m->err, DP_ERUN, "merge %s: jobs run %" PRId64 " names a missing sweep",
                           m->in_path, old);
            break;
        }
        if (idmap_get(scn, sqlite3_column_int64(runs.sel, c_scn), &nv[0])) {
            e = dp_err_set(m->err, DP_ERUN, "merge %s: jobs run %" PRId64 " names a missing scenario",
                           m->in_path, old);
            break;
        }
        sqlite3_reset(find);
        sqlite3_bind_int64(find, 1, nv[0]);
        sqlite3_bind_value(find, 2, sqlite3_column_value(runs.sel, c_sch));
        sqlite3_bind_value(find, 3, sqlite3_column_value(runs.sel, c_seed));
        sqlite3_bind_value(find, 4, sqlite3_column_value(runs.sel, c_ver));
        sqlite3_bind_value(find, 5, sqlite3_column_value(runs.sel, c_start));
        if (hv[1]) /* a sweep's: its point too (runs of one sweep may start in the same second) */
            sqlite3_bind_int64(find, 6, nv[1]);
        else
            sqlite3_bind_null(find, 6);
        if (c_pt >= 0)
            sqlite3_bind_value(find, 7, sqlite3_column_value(runs.sel, c_pt));
        else
            sqlite3_bind_null(find, 7);
        int f = sqlite3_step(find);
        if (f == SQLITE_ROW) {
            ms->jobs_runs_skipped++;
            continue;
        }
        if (f != SQLITE_DONE) {
            e = mfail(m, m->out, "looking up a jobs run");
            break;
        }
        int one = 1;
        e = copier_insert(m, &runs, nv, hv);
        nid = sqlite3_last_insert_rowid(m->out);
        for (size_t k = 0; k < NK && !e; k++) {
            sqlite3_reset(kid[k].sel);
            sqlite3_bind_int64(kid[k].sel, 1, old);
            int kr;
            while (!e && (kr = sqlite3_step(kid[k].sel)) == SQLITE_ROW)
                e = copier_insert(m, &kid[k], &nid, &one);
            if (!e && kr != SQLITE_DONE)
                e = mfail(m, m->in, "reading a jobs run's rows");
        }
        if (!e)
            ms->jobs_runs_added++;
    }
    if (!e && rc != SQLITE_DONE)
        e = mfail(m, m->in, "reading jobs runs");
    sqlite3_finalize(find);
    copier_free(&runs);
    for (size_t k = 0; k < NK; k++)
        copier_free(&kid[k]);
    return e;
}

int store_merge(const char *out_path, const char *const *in_paths, size_t n_in, store_merge_stats *ms,
                dp_err *err)
{
    store_merge_stats dummy;
    if (!ms)
        ms = &dummy;
    memset(ms, 0, sizeof *ms);
    if (!out_path || (n_in && !in_paths))
        return dp_err_set(err, DP_EINPUT, "merge: missing output or input databases");
    for (size_t i = 0; i < n_in; i++) {
        struct stat sb;
        if (!in_paths[i] || stat(in_paths[i], &sb) != 0)
            return dp_err_set(err, DP_EINPUT, "merge: input database '%s' does not exist",
                              in_paths[i] ? in_paths[i] : "(null)");
        if (same_file(in_paths[i], out_path))
            return dp_err_set(err, DP_EINPUT, "merge: input '%s' is the output database itself", in_paths[i]);
    }
    store *out = store_open(out_path, 0, err);
    if (!out)
        return err ? err->code : DP_ERUN;
    sqlite3 *odb = store_db(out);
    int e = 0;
    if (sqlite3_exec(odb, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        e = dp_err_set(err, DP_ERUN, "merge into %s: starting the transaction: %s", out_path,
                       sqlite3_errmsg(odb));
    for (size_t i = 0; i < n_in && !e; i++) {
        store *in = store_open_read(in_paths[i], err);
        if (!in) {
            e = err ? err->code : DP_ERUN;
            break;
        }
        merger m = {odb, store_db(in), out_path, in_paths[i], err};
        idmap scn = {0}, swp = {0};
        /* One read snapshot of the input, however long the copy takes. */
        if (sqlite3_exec(m.in, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
            e = mfail(&m, m.in, "starting to read");
        if (!e)
            e = merge_scenarios(&m, &scn, ms);
        if (!e)
            e = merge_sweeps(&m, &scn, &swp, ms);
        if (!e)
            e = merge_blobs(&m);
        if (!e)
            e = merge_runs(&m, &scn, &swp, ms);
        if (!e)
            e = merge_jobs(&m, &scn, &swp, ms);
        sqlite3_exec(m.in, "COMMIT", NULL, NULL, NULL);
        idmap_free(&scn);
        idmap_free(&swp);
        store_close(in);
    }
    if (!e && sqlite3_exec(odb, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        e = dp_err_set(err, DP_ERUN, "merge into %s: committing: %s", out_path, sqlite3_errmsg(odb));
    if (e) {
        sqlite3_exec(odb, "ROLLBACK", NULL, NULL, NULL);
        memset(ms, 0, sizeof *ms);
    }
    store_close(out);
    return e;
}
