/* store_sql.h: the store's SQL internals, shared by its own sources
 * (store.c, query.c, export.c, export_trace.c, merge.c).
 *
 * The store is the one owner of SQL: <sqlite3.h> is included here and in
 * sim/store's .c files only, never by a public header (store.h gives typed
 * reads instead; tests/check_sql_owner.sh keeps it so).  Outside sim/store
 * only tests that build or inspect rows directly include this header.
 */
#ifndef DP_STORE_SQL_H
#define DP_STORE_SQL_H

#include "store.h"

#include <math.h>
#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/* The SQLite connection, borrowed; valid until store_close.  Do not close
 * it or leave a transaction open. */
sqlite3 *store_db(store *st);

/* An SQLite result code as a DP_E* error naming the file; `what` says what
 * the store was doing ("reading devices"). */
int store_sql_fail(const store *st, int rc, const char *what, dp_err *err);
/* Prepare constant SQL (values go through bound parameters only). */
int store_sql_prepare(store *st, const char *sql, sqlite3_stmt **stmt, const char *what, dp_err *err);

/* The one statement pattern (prepare, bind, step, finalize, the message):
 * prepare sql and bind ?1, ?2, ... from `types`, one letter a value:
 *   'i' int64_t, 'd' double, 't' const char * (NULL binds NULL),
 * then step once.  0 with *q on the first row and *row = 1 (read its
 * columns, then sqlite3_finalize(*q)), or 0 with *row = 0 and *q NULL (no
 * row); on error *q is NULL and err says `what` failed. */
int store_sql_first(store *st, sqlite3_stmt **q, int *row, const char *what, dp_err *err, const char *sql,
                    const char *types, ...);
/* The same for a statement whose rows, if any, are not read (INSERT,
 * UPDATE, DELETE): 0 or the error. */
int store_sql_write(store *st, const char *what, dp_err *err, const char *sql, const char *types, ...);

/* Row callback of store_sql_rows: row i (0-based) of statement s; returns 0
 * or an error code with its message set. */
typedef int (*store_row_fn)(store *st, sqlite3_stmt *s, int64_t id, size_t i, void *ctx, dp_err *err);

/* Every row of `sql` through row(): ?1 is bound to id, ?2 to text when it
 * is not NULL.  `what` names the rows in messages ("epochs").  *n_rows (may
 * be NULL) gets the number of rows handed to row().  The loop every
 * table reader of the store shares. */
int store_sql_rows(store *st, const char *sql, const char *what, int64_t id, const char *text, void *ctx,
                   store_row_fn row, size_t *n_rows, dp_err *err);

/* NULL <-> NaN: SQLite stores a NaN as NULL, so NULL reads back as NaN. */
static inline double store_col_double(sqlite3_stmt *s, int i)
{
    return sqlite3_column_type(s, i) == SQLITE_NULL ? (double)NAN : sqlite3_column_double(s, i);
}

/* SQL for a stored JSON column as re-encoded JSON of the given type
 * ('object', 'array'), or NULL when it is not valid JSON of that type: a
 * database may come from anyone, and its JSON is copied into output
 * (`show --json`, `export --trace`) only through this.  (Nested CASE: SQLite
 * evaluates a CASE lazily, so json_type never sees malformed text.) */
#define STORE_SQL_JSON_OF(col, type)                                                                         \
    "CASE WHEN json_valid(" col ") THEN "                                                                    \
    "CASE WHEN json_type(" col ") = '" type "' THEN json(" col ") END END"

/* A text column, "" for NULL. */
static inline const char *store_col_text(sqlite3_stmt *s, int i)
{
    const unsigned char *t = sqlite3_column_text(s, i);
    return t ? (const char *)t : "";
}

#endif
