/* table.h: the one printer of dpsim's text tables (run, show, runs, sweep
 * summaries, the device breakdown).
 *
 * Why: tables printed with fixed printf widths shifted every column after
 * a name longer than its field.  Here a column is as wide as its widest
 * cell, and never narrower than its `min` (so a table of short names keeps
 * the layout it always had).  Every cell goes through one escaping call
 * (table_escape in table.c) before it is measured or printed, so a name
 * from a scenario or a database cannot drive the terminal.  Widths count
 * UTF-8 characters, not bytes.
 *
 * Use: dp_table_new with the columns, then cells left to right, row after
 * row (dp_table_add / dp_table_addf; a row ends after its last column),
 * then dp_table_print and dp_table_free.  Out of memory is latched and
 * reported by dp_table_print (-1), which then prints nothing. */
#ifndef DP_TABLE_H
#define DP_TABLE_H

#include "dp_common.h"

#include <stddef.h>
#include <stdio.h>

typedef struct dp_col {
    const char *head; /* header text */
    char align;       /* 'l' left, 'r' right */
    int min;          /* at least this wide */
    int gap;          /* spaces before it (ignored for the first column) */
} dp_col;

typedef struct dp_table dp_table;

/* A table of n columns (cols copied); indent is printed before every line
 * (NULL = none).  NULL when out of memory. */
dp_table *dp_table_new(const dp_col *cols, size_t n, const char *indent);
/* The next cell (text copied and escaped); NULL prints as "-". */
void dp_table_add(dp_table *t, const char *text);
void dp_table_addf(dp_table *t, const char *fmt, ...) DP_PRINTF(2, 3);
/* A line of its own between rows (printed after the indent, not part of
 * any column's width): call it at a row boundary. */
void dp_table_note(dp_table *t, const char *text);
/* Header and rows; a last left-aligned column is not padded (no trailing
 * blanks).  0, or -1 when memory ran out on the way (nothing printed). */
int dp_table_print(const dp_table *t, FILE *out);
void dp_table_free(dp_table *t);

#endif
