/* values.c: the run_values rows (SCHEMA.md): each value a run was given
 * by an override (`--set KEY=VALUE`, source 'set') or by its sweep point
 * (source 'point'), as its text and beside it as a number in SI base units
 * (bytes/s, bytes, s, FLOP/s), so SQL and pandas sort and plot swept
 * values without parsing "100Mbps".
 *
 * The pairs are read back from the JSON the run row holds (overrides_json,
 * point_json) with SQLite's json_each, so a run's values and its JSON can
 * never disagree, and the same code fills the rows of runs stored before
 * the table existed (the migration's step).  The number is scn_value_si's:
 * in the unit the scenario read the key in when the scenario is at hand,
 * else by the value's unit suffix.
 */
#include "store_impl.h"
#include "store_sql.h"

#include <string.h>

/* ?1 overrides_json (an array of "KEY=VALUE"), ?2 point_json (an object):
 * (NULL, "KEY=VALUE") per override the point does not give, then (KEY,
 * VALUE) per point key; malformed JSON (a
 * database from elsewhere) gives no rows rather than an error. */
#define POINT_PAIRS                                                                                          \
    "SELECT key, CAST(value AS TEXT) AS text FROM json_each(CASE WHEN json_valid(?2)"                        \
    " AND json_type(?2) = 'object' THEN ?2 ELSE '{}' END) WHERE type IN ('text', 'integer', 'real')"
static const char pairs_sql[] =
    "SELECT NULL, value FROM json_each(CASE WHEN json_valid(?1) AND json_type(?1) = 'array'"
    " THEN ?1 ELSE '[]' END) WHERE type = 'text'"
    /* a sweep hands its point to the scenario as overrides too: once is enough */
    " AND value NOT IN (SELECT key || '=' || text FROM (" POINT_PAIRS "))"
    " UNION ALL " POINT_PAIRS;

typedef struct values_ctx {
    sqlite3_stmt *pairs, *ins;
} values_ctx;

static int put_one(store *st, values_ctx *v, int64_t run_id, int64_t seq, const char *source, const char *key,
                   size_t key_len, const char *text, const scn_scenario *s, dp_err *err)
{
    char k[512];
    if (key_len >= sizeof k)
        return 0; /* no key that long exists; the JSON keeps it */
    memcpy(k, key, key_len);
    k[key_len] = '\0';
    double si;
    const char *unit;
    int num = scn_value_si(s, k, text, &si, &unit);
    sqlite3_bind_int64(v->ins, 1, run_id);
    sqlite3_bind_int64(v->ins, 2, seq);
    sqlite3_bind_text(v->ins, 3, source, -1, SQLITE_STATIC);
    sqlite3_bind_text(v->ins, 4, k, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(v->ins, 5, text, -1, SQLITE_TRANSIENT);
    if (num)
        sqlite3_bind_double(v->ins, 6, si);
    else
        sqlite3_bind_null(v->ins, 6);
    store_bind_opt_text(v->ins, 7, num ? unit : NULL);
    int rc = sqlite3_step(v->ins);
    sqlite3_reset(v->ins);
    return rc == SQLITE_DONE ? 0 : store_sql_fail(st, rc, "storing a run's values", err);
}

static int put_values(store *st, values_ctx *v, int64_t run_id, const scn_scenario *s,
                      const char *overrides_json, const char *point_json, dp_err *err)
{
    sqlite3_reset(v->pairs);
    store_bind_opt_text(v->pairs, 1, overrides_json);
    store_bind_opt_text(v->pairs, 2, point_json);
    int rc, e = 0;
    int64_t seq = 0;
    while (!e && (rc = sqlite3_step(v->pairs)) == SQLITE_ROW) {
        const char *text = store_col_text(v->pairs, 1);
        if (sqlite3_column_type(v->pairs, 0) != SQLITE_NULL) { /* a point: key and value apart */
            const char *key = store_col_text(v->pairs, 0);
            e = put_one(st, v, run_id, seq++, "point", key, strlen(key), text, s, err);
            continue;
        }
        const char *eq = strchr(text, '='); /* an override: KEY=VALUE */
        if (eq && eq != text)
            e = put_one(st, v, run_id, seq++, "set", text, (size_t)(eq - text), eq + 1, s, err);
    }
    if (!e && rc != SQLITE_DONE)
        e = store_sql_fail(st, rc, "reading a run's values", err);
    sqlite3_reset(v->pairs);
    return e;
}

static int ctx_open(store *st, values_ctx *v, dp_err *err)
{
    *v = (values_ctx){0};
    int e = store_sql_prepare(st, pairs_sql, &v->pairs, "reading a run's values", err);
    if (!e)
        e = store_sql_prepare(st,
                              "INSERT INTO run_values(run_id, seq, source, key, text, si, unit)"
                              " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                              &v->ins, "storing a run's values", err);
    return e;
}

static void ctx_close(values_ctx *v)
{
    sqlite3_finalize(v->pairs);
    sqlite3_finalize(v->ins);
}

int store_values_put(store *st, int64_t run_id, const scn_scenario *s, const char *overrides_json,
                     const char *point_json, dp_err *err)
{
    values_ctx v;
    int e = ctx_open(st, &v, err);
    if (!e)
        e = put_values(st, &v, run_id, s, overrides_json, point_json, err);
    ctx_close(&v);
    return e;
}

int store_values_fill(store *st, dp_err *err)
{
    values_ctx v;
    sqlite3_stmt *runs = NULL;
    int e = ctx_open(st, &v, err);
    if (!e)
        e = store_sql_prepare(st, "SELECT id, overrides_json, point_json FROM runs ORDER BY id", &runs,
                              "filling run_values", err);
    int rc = SQLITE_DONE;
    while (!e && (rc = sqlite3_step(runs)) == SQLITE_ROW) {
        const unsigned char *ov = sqlite3_column_text(runs, 1), *pt = sqlite3_column_text(runs, 2);
        e = put_values(st, &v, sqlite3_column_int64(runs, 0), NULL, (const char *)ov, (const char *)pt, err);
    }
    if (!e && rc != SQLITE_DONE)
        e = store_sql_fail(st, rc, "filling run_values", err);
    sqlite3_finalize(runs);
    ctx_close(&v);
    return e;
}
