/* store_impl.h: what the store's core files share (store.c lists them):
 * the connection's state and the small SQL helpers.  Not for other files:
 * the rest of sim/store uses store_sql.h. */
#ifndef DP_STORE_IMPL_H
#define DP_STORE_IMPL_H

#include "store_sql.h"

struct store {
    sqlite3 *db;
    char *path;
    int readonly;
    long fail_after_rows; /* test hook: k-th child row of the next put fails */
    char invocation[64];  /* stored in runs.invocation ("" = NULL) */
};

/* Constant SQL only (BEGIN/COMMIT/PRAGMA/DDL): no values are ever formatted
 * into these strings. */
int store_exec(store *st, const char *sql);
/* Undo the open transaction, if any, keeping the error already in err. */
void store_rollback(store *st);
/* Bind text, or NULL when v is NULL. */
int store_bind_opt_text(sqlite3_stmt *s, int i, const char *v);

/* values.c: the run_values rows of run run_id from its overrides and
 * sweep point JSON (as stored in its row); s, the scenario it ran (NULL
 * for a failed run), says the units.  Inside the caller's transaction. */
int store_values_put(store *st, int64_t run_id, const scn_scenario *s, const char *overrides_json,
                     const char *point_json, dp_err *err);
/* The migration's step: run_values rows for every stored run (no scenario
 * at hand: units by the values' suffixes). */
int store_values_fill(store *st, dp_err *err);

/* store_write.c's transaction for the store's other writers: BEGIN
 * IMMEDIATE and the scenario's row (*scn), then COMMIT (e == 0) or roll
 * back. */
struct scn_scenario;
int store_write_begin(store *st, const char *what, const struct scn_scenario *s, int64_t *scn, dp_err *err);
int store_write_end(store *st, int e, const char *what, dp_err *err);

#endif
