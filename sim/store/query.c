/* query.c: the store's typed reads (store.h, "typed reads"): what the plots
 * draw, as plain C structs and arrays, so that SQL stays inside sim/store.
 *
 * Every multi-row read is a row function over store_sql_rows (store_sql.h);
 * arrays grow by doubling through grow().  The queries are the ones the
 * plots used to run themselves, unchanged, so the plots draw the same
 * numbers in the same order.
 */
#include "store_sql.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Room for one more element in the array whose pointer is at pp (any
 * object pointer type: read and written with memcpy, so no aliasing rule is
 * bent), n used, *cap allocated, elements of size bytes; 0, or -1 when out
 * of memory (array unchanged). */
static int grow(void *pp, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return 0;
    void *p;
    memcpy(&p, pp, sizeof p);
    size_t nc = *cap ? 2 * *cap : 16;
    void *np = dp_realloc(p, nc * size);
    if (!np)
        return -1;
    memcpy(pp, &np, sizeof np);
    *cap = nc;
    return 0;
}

static int oom(const store *st, const char *what, dp_err *err)
{
    return dp_err_set(err, DP_ENOMEM, "%s: out of memory reading %s", store_path(st), what);
}

/* The file as SQLite names it (absolute), for messages that tell the user
 * which database to list. */
static const char *db_name(store *st)
{
    const char *file = sqlite3_db_filename(store_db(st), "main");
    return file && *file ? file : "the database";
}

/* ---- one run ------------------------------------------------------------ */

int store_run_info_get(store *st, int64_t run_id, store_run_info *out, dp_err *err)
{
    memset(out, 0, sizeof *out);
    sqlite3_stmt *q;
    int row, e = store_sql_first(st, &q, &row, "reading a run", err,
                                 "SELECT r.policy, s.name, r.status, r.error, r.tsend_s, r.ttraining_s,"
                                 " r.ttotal_s, r.tflops, r.bin_s FROM runs r"
                                 " JOIN scenarios s ON s.id = r.scenario_id WHERE r.id = ?1",
                                 "i", run_id);
    if (e)
        return e;
    if (!row)
        return dp_err_set(err, DP_EINPUT, "no run %lld in %s ('dpsim runs --db %s' lists them)",
                          (long long)run_id, db_name(st), db_name(st));
    if (strcmp(store_col_text(q, 2), "ok") != 0) {
        const char *msg = (const char *)sqlite3_column_text(q, 3);
        e = dp_err_set(err, DP_EINPUT, "run %lld failed (%.300s): it has nothing to plot", (long long)run_id,
                       msg ? msg : "no message");
    } else {
        out->id = run_id;
        snprintf(out->policy, sizeof out->policy, "%s", store_col_text(q, 0));
        snprintf(out->scenario, sizeof out->scenario, "%s", store_col_text(q, 1));
        out->tsend_s = store_col_double(q, 4);
        out->ttraining_s = store_col_double(q, 5);
        out->ttotal_s = store_col_double(q, 6);
        out->tflops = store_col_double(q, 7);
        out->bin_s = store_col_double(q, 8);
    }
    sqlite3_finalize(q);
    return e;
}

/* ---- choosing runs ------------------------------------------------------ */

void store_ids_free(store_ids *ids)
{
    if (!ids)
        return;
    dp_free(ids->id);
    ids->id = NULL;
    ids->n = 0;
}

static int push_id(store_ids *ids, size_t *cap, int64_t id)
{
    if (grow(&ids->id, cap, ids->n, sizeof *ids->id))
        return -1;
    ids->id[ids->n++] = id;
    return 0;
}

/* Bind the filters ?1 (scenario name) and ?2 (policy), NULL = any. */
static void bind_filters(sqlite3_stmt *q, const char *scenario, const char *policy)
{
    if (scenario)
        sqlite3_bind_text(q, 1, scenario, -1, SQLITE_TRANSIENT);
    if (policy)
        sqlite3_bind_text(q, 2, policy, -1, SQLITE_TRANSIENT);
}

/* Every row's first column of q (its parameters bound) appended to out. */
static int collect_ids(store *st, sqlite3_stmt *q, store_ids *out, dp_err *err)
{
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW)
        if (push_id(out, &cap, sqlite3_column_int64(q, 0)))
            return oom(st, "runs", err);
    return rc == SQLITE_DONE ? 0 : store_sql_fail(st, rc, "choosing runs", err);
}

/* The selection when the latest run outside sweeps was stored by a tagged
 * invocation (runs.invocation): that invocation's runs, of its (scenario
 * text, overrides) group with the most runs, then the latest.  Returns 1
 * with out filled, 0 when the latest run is untagged (older files: the
 * rules of default_ids apply), or a negative code. */
static int invocation_ids(store *st, const char *scenario, const char *policy, int one, store_ids *out,
                          dp_err *err)
{
    sqlite3_stmt *q;
    int e = store_sql_prepare(st,
                              "SELECT r.invocation FROM runs r JOIN scenarios s ON s.id = r.scenario_id"
                              " WHERE r.status = 'ok' AND r.sweep_id IS NULL AND (?1 IS NULL OR s.name = ?1)"
                              " AND (?2 IS NULL OR r.policy = ?2) ORDER BY r.id DESC LIMIT 1",
                              &q, "choosing runs", err);
    if (e)
        return e;
    bind_filters(q, scenario, policy);
    char *inv = NULL;
    if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_type(q, 0) != SQLITE_NULL)
        inv = dp_strdup(store_col_text(q, 0));
    sqlite3_finalize(q);
    if (!inv)
        return 0;
    e = store_sql_prepare(st,
                          "SELECT r.scenario_id, r.overrides_json, max(r.id) FROM runs r"
                          " JOIN scenarios s ON s.id = r.scenario_id WHERE r.status = 'ok'"
                          " AND r.invocation = ?3 AND (?1 IS NULL OR s.name = ?1)"
                          " AND (?2 IS NULL OR r.policy = ?2) GROUP BY r.scenario_id, r.overrides_json"
                          " ORDER BY count(*) DESC, max(r.id) DESC LIMIT 1",
                          &q, "choosing runs", err);
    if (e) {
        dp_free(inv);
        return e;
    }
    bind_filters(q, scenario, policy);
    sqlite3_bind_text(q, 3, inv, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(q) != SQLITE_ROW) {
        sqlite3_finalize(q);
        dp_free(inv);
        return 0;
    }
    int64_t scn = sqlite3_column_int64(q, 0), last = sqlite3_column_int64(q, 2);
    char *ov = dp_strdup(sqlite3_column_text(q, 1) ? store_col_text(q, 1) : "[]");
    sqlite3_finalize(q);
    size_t cap = 0;
    if (!ov) {
        e = oom(st, "runs", err);
    } else if (one) {
        e = push_id(out, &cap, last) ? oom(st, "runs", err) : 0;
    } else if (!(e = store_sql_prepare(st,
                                       "SELECT max(id) FROM runs WHERE status = 'ok' AND invocation = ?1"
                                       " AND scenario_id = ?2 AND overrides_json = ?3 GROUP BY policy",
                                       &q, "choosing runs", err))) {
        sqlite3_bind_text(q, 1, inv, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(q, 2, scn);
        sqlite3_bind_text(q, 3, ov, -1, SQLITE_TRANSIENT);
        e = collect_ids(st, q, out, err);
        sqlite3_finalize(q);
    }
    dp_free(ov);
    dp_free(inv);
    if (e) {
        store_ids_free(out);
        return e;
    }
    return 1;
}

/* The selection for files without invocation tags.  The anchor is the
 * latest successful run outside sweeps (of scenario if given), preferring
 * runs without overrides: `reproduce table3` stores a what-if DDP run with
 * a faster interconnect after the three plain ones, and it must not
 * replace the plain DDP bar.  Then the latest run of each policy with the
 * anchor's scenario text, overrides and sweep, so the bars compare like
 * with like. */
static int default_ids(store *st, const char *scenario, const char *policy, int one, store_ids *out,
                       dp_err *err)
{
    sqlite3_stmt *q;
    int e = store_sql_prepare(
        st,
        "SELECT r.id, r.scenario_id, r.overrides_json, r.sweep_id FROM runs r"
        " JOIN scenarios s ON s.id = r.scenario_id"
        " WHERE r.status = 'ok' AND (?1 IS NULL OR s.name = ?1) AND (?2 IS NULL OR r.policy = ?2)"
        " ORDER BY (r.sweep_id IS NULL) DESC, (r.overrides_json = '[]') DESC, r.id DESC LIMIT 1",
        &q, "choosing runs", err);
    if (e)
        return e;
    bind_filters(q, scenario, policy);
    int rc = sqlite3_step(q);
    if (rc != SQLITE_ROW) {
        if (rc == SQLITE_DONE)
            e = dp_err_set(err, DP_EINPUT,
                           "no successful run%s%s%s%s%s in %s ('dpsim runs --db %s' lists them)",
                           scenario ? " of scenario '" : "", scenario ? scenario : "", scenario ? "'" : "",
                           policy ? " with policy " : "", policy ? policy : "", db_name(st), db_name(st));
        else
            e = store_sql_fail(st, rc, "choosing runs", err);
        sqlite3_finalize(q);
        return e;
    }
    int64_t anchor = sqlite3_column_int64(q, 0), scn = sqlite3_column_int64(q, 1);
    /* the anchor's sweep: NULL, unless the database holds only sweep runs */
    int64_t sweep = sqlite3_column_type(q, 3) == SQLITE_NULL ? 0 : sqlite3_column_int64(q, 3);
    char *ov = dp_strdup(sqlite3_column_text(q, 2) ? store_col_text(q, 2) : "[]");
    sqlite3_finalize(q);
    size_t cap = 0;
    if (!ov)
        return oom(st, "runs", err);
    if (one) {
        e = push_id(out, &cap, anchor) ? oom(st, "runs", err) : 0;
    } else if (!(e = store_sql_prepare(st,
                                       "SELECT max(id) FROM runs WHERE status = 'ok' AND scenario_id = ?1"
                                       " AND overrides_json = ?2 AND sweep_id IS ?3 GROUP BY policy",
                                       &q, "choosing runs", err))) {
        sqlite3_bind_int64(q, 1, scn);
        sqlite3_bind_text(q, 2, ov, -1, SQLITE_TRANSIENT);
        if (sweep)
            sqlite3_bind_int64(q, 3, sweep);
        e = collect_ids(st, q, out, err);
        sqlite3_finalize(q);
    }
    dp_free(ov);
    if (e)
        store_ids_free(out);
    return e;
}

int store_select_runs(store *st, const char *scenario, const char *policy, int one, store_ids *out,
                      dp_err *err)
{
    memset(out, 0, sizeof *out);
    if (!one)
        policy = NULL;
    int rc = invocation_ids(st, scenario, policy, one, out, err);
    if (rc < 0)
        return rc;
    return rc == 1 ? 0 : default_ids(st, scenario, policy, one, out, err);
}

/* ---- FLOPS bins ----------------------------------------------------------- */

typedef struct flops_ctx {
    store_flops *f;
    size_t cap;
} flops_ctx;

static int flops_row(store *st, sqlite3_stmt *s, int64_t id, size_t i, void *ctx, dp_err *err)
{
    (void)id;
    (void)i;
    flops_ctx *c = ctx;
    store_flops *f = c->f;
    size_t cap = c->cap;
    if (grow(&f->bin, &cap, f->n, sizeof *f->bin) || grow(&f->flops, &c->cap, f->n, sizeof *f->flops))
        return oom(st, "FLOPS bins", err);
    f->bin[f->n] = sqlite3_column_int64(s, 0);
    f->flops[f->n++] = store_col_double(s, 1);
    return 0;
}

int store_flops_get(store *st, int64_t run_id, store_flops *out, dp_err *err)
{
    memset(out, 0, sizeof *out);
    flops_ctx c = {out, 0};
    int e = store_sql_rows(st, "SELECT bin, flops FROM run_flops WHERE run_id = ?1 ORDER BY bin",
                           "FLOPS bins", run_id, NULL, &c, flops_row, NULL, err);
    if (e)
        store_flops_free(out);
    return e;
}

void store_flops_free(store_flops *f)
{
    if (!f)
        return;
    dp_free(f->bin);
    dp_free(f->flops);
    memset(f, 0, sizeof *f);
}

/* ---- timeline ------------------------------------------------------------- */

int store_timeline_info_get(store *st, int64_t run_id, store_timeline_info *out, dp_err *err)
{
    memset(out, 0, sizeof *out);
    sqlite3_stmt *q;
    int row, e = store_sql_first(st, &q, &row, "reading a timeline", err,
                                 "SELECT (SELECT count(*) FROM run_devices WHERE run_id = ?1),"
                                 " (SELECT max(t1_s) FROM run_segments WHERE run_id = ?1),"
                                 " (SELECT timeline_res_s FROM runs WHERE id = ?1)",
                                 "i", run_id);
    if (e)
        return e;
    if (!row) /* a row of subqueries always comes */
        return store_sql_fail(st, SQLITE_DONE, "reading a timeline", err);
    int64_t n = sqlite3_column_int64(q, 0);
    out->n_devices = n > 0 ? (size_t)n : 0;
    out->has_segments = sqlite3_column_type(q, 1) != SQLITE_NULL;
    out->end_s = sqlite3_column_double(q, 1);
    out->res_s = sqlite3_column_type(q, 2) == SQLITE_NULL ? 0 : sqlite3_column_double(q, 2);
    sqlite3_finalize(q);
    return 0;
}

typedef struct devices_ctx {
    store_devices *d;
    size_t cap;
} devices_ctx;

static int device_row(store *st, sqlite3_stmt *s, int64_t id, size_t i, void *ctx, dp_err *err)
{
    (void)id;
    (void)i;
    devices_ctx *c = ctx;
    store_devices *d = c->d;
    size_t cap = c->cap;
    if (grow(&d->idx, &cap, d->n, sizeof *d->idx) || grow(&d->name, &c->cap, d->n, sizeof *d->name))
        return oom(st, "devices", err);
    d->idx[d->n] = sqlite3_column_int64(s, 0);
    if (!(d->name[d->n] = dp_strdup(store_col_text(s, 1))))
        return oom(st, "devices", err);
    d->n++;
    return 0;
}

int store_devices_get(store *st, int64_t run_id, store_devices *out, dp_err *err)
{
    memset(out, 0, sizeof *out);
    devices_ctx c = {out, 0};
    int e = store_sql_rows(st, "SELECT idx, name FROM run_devices WHERE run_id = ?1 ORDER BY idx", "devices",
                           run_id, NULL, &c, device_row, NULL, err);
    if (e)
        store_devices_free(out);
    return e;
}

void store_devices_free(store_devices *d)
{
    if (!d)
        return;
    for (size_t k = 0; k < d->n; k++)
        dp_free(d->name[k]);
    dp_free(d->name);
    dp_free(d->idx);
    memset(d, 0, sizeof *d);
}

const char *store_device_name(const store_devices *d, int64_t idx)
{
    for (size_t k = 0; d && k < d->n; k++)
        if (d->idx[k] == idx)
            return d->name[k];
    return NULL;
}

typedef struct values_ctx {
    store_values *v;
    size_t cap, limit;
} values_ctx;

static int value_row(store *st, sqlite3_stmt *s, int64_t id, size_t i, void *ctx, dp_err *err)
{
    (void)id;
    values_ctx *c = ctx;
    if (i >= c->limit)
        return 0;
    if (grow(&c->v->v, &c->cap, c->v->n, sizeof *c->v->v))
        return oom(st, "epochs", err);
    c->v->v[c->v->n++] = sqlite3_column_double(s, 0);
    return 0;
}

int store_epoch_ends_get(store *st, int64_t run_id, size_t limit, store_values *out, dp_err *err)
{
    memset(out, 0, sizeof *out);
    values_ctx c = {out, 0, limit};
    int e = store_sql_rows(st, "SELECT end_s FROM run_epochs WHERE run_id = ?1 ORDER BY epoch", "epochs",
                           run_id, NULL, &c, value_row, NULL, err);
    if (e)
        store_values_free(out);
    return e;
}

void store_values_free(store_values *v)
{
    if (!v)
        return;
    dp_free(v->v);
    memset(v, 0, sizeof *v);
}

typedef struct segments_ctx {
    store_segments *s;
    size_t cap;
} segments_ctx;

static int segment_row(store *st, sqlite3_stmt *s, int64_t id, size_t i, void *ctx, dp_err *err)
{
    (void)id;
    (void)i;
    segments_ctx *c = ctx;
    if (grow(&c->s->seg, &c->cap, c->s->n, sizeof *c->s->seg))
        return oom(st, "timeline segments", err);
    c->s->seg[c->s->n++] =
        (store_segment){sqlite3_column_int64(s, 0), sqlite3_column_double(s, 1), sqlite3_column_double(s, 2)};
    return 0;
}

int store_segments_get(store *st, int64_t run_id, const char *act, store_segments *out, dp_err *err)
{
    memset(out, 0, sizeof *out);
    segments_ctx c = {out, 0};
    int e = store_sql_rows(st, "SELECT device, t0_s, t1_s FROM run_segments WHERE run_id = ?1 AND act = ?2",
                           "timeline segments", run_id, act ? act : "", &c, segment_row, NULL, err);
    if (e)
        store_segments_free(out);
    return e;
}

void store_segments_free(store_segments *s)
{
    if (!s)
        return;
    dp_free(s->seg);
    memset(s, 0, sizeof *s);
}

/* ---- how policies are shown ---------------------------------------------- */

/* "#rrggbb": a colour from a database reaches gnuplot's `lc rgb '...'`,
 * so anything else is dropped (the plot falls back to its own). */
static int is_rgb(const char *c)
{
    if (c[0] != '#' || strlen(c) != 7)
        return 0;
    for (int i = 1; i < 7; i++)
        if (!isxdigit((unsigned char)c[i]))
            return 0;
    return 1;
}

typedef struct styles_ctx {
    store_policy_styles *p;
    size_t cap;
} styles_ctx;

static int style_row(store *st, sqlite3_stmt *s, int64_t id, size_t i, void *ctx, dp_err *err)
{
    (void)id;
    (void)i;
    styles_ctx *c = ctx;
    store_policy_styles *p = c->p;
    if (grow(&p->style, &c->cap, p->n, sizeof *p->style))
        return oom(st, "policy labels", err);
    store_policy_style *y = &p->style[p->n++];
    memset(y, 0, sizeof *y);
    snprintf(y->policy, sizeof y->policy, "%s", store_col_text(s, 0));
    snprintf(y->label, sizeof y->label, "%s", store_col_text(s, 1));
    const char *color = store_col_text(s, 2);
    if (is_rgb(color))
        snprintf(y->color, sizeof y->color, "%s", color);
    return 0;
}

int store_policy_styles_get(store *st, store_policy_styles *out, dp_err *err)
{
    memset(out, 0, sizeof *out);
    styles_ctx c = {out, 0};
    /* each policy's latest run that says how to show it */
    int e = store_sql_rows(st,
                           "SELECT policy, policy_label, coalesce(policy_color, '') FROM runs WHERE id IN"
                           " (SELECT max(id) FROM runs WHERE policy_label IS NOT NULL AND policy_label <> ''"
                           " GROUP BY policy) ORDER BY policy",
                           "policy labels", 0, NULL, &c, style_row, NULL, err);
    if (e)
        store_policy_styles_free(out);
    return e;
}

void store_policy_styles_free(store_policy_styles *p)
{
    dp_free(p->style);
    memset(p, 0, sizeof *p);
}

const store_policy_style *store_policy_style_of(const store_policy_styles *p, const char *policy)
{
    for (size_t i = 0; p && policy && i < p->n; i++)
        if (!strcmp(p->style[i].policy, policy))
            return &p->style[i];
    return NULL;
}

/* ---- sweeps --------------------------------------------------------------- */

int store_sweep_latest(store *st, int64_t *sweep_id, dp_err *err)
{
    *sweep_id = 0;
    sqlite3_stmt *q;
    int row, e = store_sql_first(
                 st, &q, &row, "choosing a sweep", err,
                 "SELECT max(sweep_id) FROM runs WHERE sweep_id IS NOT NULL AND status = 'ok'", "");
    if (e)
        return e;
    if (!row) /* an aggregate always has its row */
        return store_sql_fail(st, SQLITE_DONE, "choosing a sweep", err);
    if (sqlite3_column_type(q, 0) == SQLITE_NULL)
        e = dp_err_set(err, DP_EINPUT, "no sweep with successful runs in %s (make one with 'dpsim sweep')",
                       db_name(st));
    else
        *sweep_id = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    return e;
}

int store_sweep_scenario(store *st, int64_t sweep_id, char *buf, size_t cap, dp_err *err)
{
    if (cap)
        buf[0] = '\0';
    sqlite3_stmt *q;
    int row, e = store_sql_first(st, &q, &row, "reading a sweep", err,
                                 "SELECT s.name FROM sweeps w JOIN scenarios s ON s.id = w.scenario_id"
                                 " WHERE w.id = ?1",
                                 "i", sweep_id);
    if (e || !row)
        return e;
    if (cap)
        snprintf(buf, cap, "%s", store_col_text(q, 0));
    sqlite3_finalize(q);
    return 0;
}

typedef struct sweep_ctx {
    store_sweep_runs *r;
    size_t cap;
} sweep_ctx;

static int sweep_row(store *st, sqlite3_stmt *s, int64_t id, size_t i, void *ctx, dp_err *err)
{
    (void)st;
    (void)i;
    sweep_ctx *c = ctx;
    store_sweep_runs *r = c->r;
    if (grow(&r->run, &c->cap, r->n, sizeof *r->run))
        return dp_err_set(err, DP_ENOMEM, "out of memory reading sweep %lld", (long long)id);
    store_sweep_run *x = &r->run[r->n];
    memset(x, 0, sizeof *x);
    snprintf(x->policy, sizeof x->policy, "%s", store_col_text(s, 0));
    if (sqlite3_column_type(s, 1) != SQLITE_NULL && !(x->point_json = dp_strdup(store_col_text(s, 1))))
        return dp_err_set(err, DP_ENOMEM, "out of memory reading sweep %lld", (long long)id);
    x->value = sqlite3_column_double(s, 2);
    r->n++;
    return 0;
}

int store_sweep_runs_get(store *st, int64_t sweep_id, const char *metric, store_sweep_runs *out, dp_err *err)
{
    memset(out, 0, sizeof *out);
    /* The column name comes from this fixed list, never from the caller's text. */
    static const char *const columns[] = {"ttotal_s", "tsend_s", "ttraining_s", "tflops", "utilization"};
    const char *col = NULL;
    for (size_t k = 0; k < sizeof columns / sizeof *columns; k++)
        if (metric && !strcmp(metric, columns[k]))
            col = columns[k];
    char sql[512], target[32] = "";
    double x = 0;
    char *end = NULL;
    if (!col && metric && !strncmp(metric, "tta@", 4) && (x = strtod(metric + 4, &end)) > 0 && x <= 1 &&
        end != metric + 4 && !*end) {
        /* learning: each run's time to the target (runs that never reached
         * it have no point: NULL is never turned into a number) */
        snprintf(target, sizeof target, "%.17g", x);
        snprintf(sql, sizeof sql,
                 "SELECT r.policy, r.point_json, t.t_s FROM runs r JOIN run_tta t ON t.run_id = r.id"
                 " WHERE r.sweep_id = ?1 AND r.status = 'ok' AND abs(t.target - CAST(?2 AS REAL)) < 1e-12"
                 " AND t.t_s IS NOT NULL ORDER BY r.id");
    } else if (!col && metric && !strcmp(metric, "final_acc")) {
        snprintf(sql, sizeof sql,
                 "SELECT r.policy, r.point_json, e.test_acc FROM runs r JOIN run_evals e ON e.run_id = r.id"
                 " AND e.seq = (SELECT max(seq) FROM run_evals WHERE run_id = r.id)"
                 " WHERE r.sweep_id = ?1 AND r.status = 'ok' ORDER BY r.id");
    } else if (!col) {
        return dp_err_set(
            err, DP_EINPUT,
            "unknown metric '%.100s' (known: ttotal_s, tsend_s, ttraining_s, tflops, utilization;"
            " with learning: final_acc, tta@X for a target X in (0, 1])",
            metric ? metric : "");
    } else {
        snprintf(sql, sizeof sql,
                 "SELECT policy, point_json, %s FROM runs WHERE sweep_id = ?1 AND status = 'ok'"
                 " AND %s IS NOT NULL ORDER BY id",
                 col, col);
    }
    sweep_ctx c = {out, 0};
    int e = store_sql_rows(st, sql, "a sweep", sweep_id, target[0] ? target : NULL, &c, sweep_row, NULL, err);
    if (!e && out->n == 0)
        e = dp_err_set(err, DP_EINPUT, "sweep %lld has no successful runs in %s", (long long)sweep_id,
                       db_name(st));
    if (e)
        store_sweep_runs_free(out);
    return e;
}

void store_sweep_runs_free(store_sweep_runs *r)
{
    if (!r)
        return;
    for (size_t k = 0; k < r->n; k++)
        dp_free(r->run[k].point_json);
    dp_free(r->run);
    memset(r, 0, sizeof *r);
}

/* ---- statistics ----------------------------------------------------------- */

typedef struct batches_ctx {
    store_batches *b;
    size_t cap, max_devices;
} batches_ctx;

static int batch_row(store *st, sqlite3_stmt *s, int64_t id, size_t i, void *ctx, dp_err *err)
{
    (void)id;
    (void)i;
    batches_ctx *c = ctx;
    int64_t d = sqlite3_column_int64(s, 0);
    if (d < 0 || (uint64_t)d >= c->max_devices)
        return 0;
    if (grow(&c->b->row, &c->cap, c->b->n, sizeof *c->b->row))
        return oom(st, "batch statistics", err);
    c->b->row[c->b->n++] = (store_batch_row){
        d,
        sqlite3_column_int64(s, 1),
        sqlite3_column_double(s, 2),
        sqlite3_column_double(s, 3),
        sqlite3_column_double(s, 4),
        sqlite3_column_type(s, 5) == SQLITE_NULL ? 0 : sqlite3_column_double(s, 5),
    };
    return 0;
}

int store_batches_get(store *st, int64_t run_id, size_t max_devices, store_batches *out, dp_err *err)
{
    memset(out, 0, sizeof *out);
    sqlite3_stmt *q;
    int row, e = store_sql_first(st, &q, &row, "reading batch statistics", err,
                                 "SELECT count(DISTINCT a), max(b) FROM run_stats WHERE run_id = ?1"
                                 " AND scope = 'device_epoch' AND name = 'batch_mean'",
                                 "i", run_id);
    if (e)
        return e;
    if (!row) /* an aggregate always has its row */
        return store_sql_fail(st, SQLITE_DONE, "reading batch statistics", err);
    out->n_devices = (size_t)sqlite3_column_int64(q, 0);
    out->n_epochs = sqlite3_column_int64(q, 1);
    sqlite3_finalize(q);
    if (out->n_devices == 0)
        return 0;
    batches_ctx c = {out, 0, max_devices};
    e = store_sql_rows(st,
                       "SELECT m.a, m.b, m.value, lo.value, hi.value, w.value FROM run_stats m"
                       " JOIN run_stats lo ON lo.run_id = m.run_id AND lo.a = m.a AND lo.b = m.b"
                       "  AND lo.scope = 'device_epoch' AND lo.name = 'batch_min'"
                       " JOIN run_stats hi ON hi.run_id = m.run_id AND hi.a = m.a AND hi.b = m.b"
                       "  AND hi.scope = 'device_epoch' AND hi.name = 'batch_max'"
                       " LEFT JOIN run_stats w ON w.run_id = m.run_id AND w.a = m.a AND w.b = m.b"
                       "  AND w.scope = 'device_epoch' AND w.name = 'wait_s'"
                       " WHERE m.run_id = ?1 AND m.scope = 'device_epoch' AND m.name = 'batch_mean'"
                       " ORDER BY m.a, m.b",
                       "batch statistics", run_id, NULL, &c, batch_row, NULL, err);
    if (e)
        store_batches_free(out);
    return e;
}

void store_batches_free(store_batches *b)
{
    if (!b)
        return;
    dp_free(b->row);
    memset(b, 0, sizeof *b);
}

typedef struct stats_ctx {
    store_stats *s;
    size_t cap;
} stats_ctx;

static int scope_row(store *st, sqlite3_stmt *s, int64_t id, size_t i, void *ctx, dp_err *err)
{
    (void)id;
    (void)i;
    stats_ctx *c = ctx;
    if (grow(&c->s->stat, &c->cap, c->s->n, sizeof *c->s->stat))
        return oom(st, "statistics", err);
    store_stat *x = &c->s->stat[c->s->n];
    *x = (store_stat){sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1), dp_strdup(store_col_text(s, 2)),
                      store_col_double(s, 3)};
    if (!x->name)
        return oom(st, "statistics", err);
    c->s->n++;
    return 0;
}

int store_stats_get(store *st, int64_t run_id, const char *scope, store_stats *out, dp_err *err)
{
    memset(out, 0, sizeof *out);
    stats_ctx c = {out, 0};
    int e = store_sql_rows(
        st, "SELECT a, b, name, value FROM run_stats WHERE run_id = ?1 AND scope = ?2 ORDER BY a, seq",
        "statistics", run_id, scope ? scope : "", &c, scope_row, NULL, err);
    if (e)
        store_stats_free(out);
    return e;
}

void store_stats_free(store_stats *s)
{
    if (!s)
        return;
    for (size_t k = 0; k < s->n; k++)
        dp_free(s->stat[k].name);
    dp_free(s->stat);
    memset(s, 0, sizeof *s);
}

typedef struct hist_ctx {
    store_hist *h;
    size_t cap;
} hist_ctx;

static int hist_row(store *st, sqlite3_stmt *s, int64_t id, size_t i, void *ctx, dp_err *err)
{
    (void)id;
    (void)i;
    hist_ctx *c = ctx;
    store_hist *h = c->h;
    size_t cap1 = c->cap, cap2 = c->cap;
    if (grow(&h->bin, &cap1, h->n, sizeof *h->bin) || grow(&h->edge, &cap2, h->n, sizeof *h->edge) ||
        grow(&h->count, &c->cap, h->n, sizeof *h->count))
        return oom(st, "a histogram", err);
    h->bin[h->n] = sqlite3_column_int64(s, 0);
    h->edge[h->n] = sqlite3_column_int64(s, 1);
    h->count[h->n++] = sqlite3_column_double(s, 2);
    return 0;
}

int store_hist_get(store *st, int64_t run_id, const char *name, store_hist *out, dp_err *err)
{
    memset(out, 0, sizeof *out);
    hist_ctx c = {out, 0};
    int e =
        store_sql_rows(st,
                       "SELECT a, b, value FROM run_stats WHERE run_id = ?1 AND name = ?2 AND scope = 'bin'"
                       " ORDER BY a",
                       "a histogram", run_id, name ? name : "", &c, hist_row, NULL, err);
    if (e)
        store_hist_free(out);
    return e;
}

void store_hist_free(store_hist *h)
{
    if (!h)
        return;
    dp_free(h->bin);
    dp_free(h->edge);
    dp_free(h->count);
    memset(h, 0, sizeof *h);
}
