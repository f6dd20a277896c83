/* table.c: text tables sized to their content (table.h). */
#include "table.h"

#include <stdarg.h>
#include <string.h>

struct dp_table {
    dp_col *col;
    size_t n_col;
    char indent[32];
    char **cell; /* row-major, n_cells of them */
    size_t n_cells, cap;
    int oom;
};

/* The one escaping step of every cell: control characters (C0, DEL, C1)
 * as \n, \xNN, so a cell stays on its line and cannot move the cursor. */
static const char *table_escape(char *buf, size_t cap, const char *s)
{
    return dp_esc(buf, cap, s);
}

/* Display width: UTF-8 characters (continuation bytes do not count). */
static int text_width(const char *s)
{
    int w = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        w += (*p & 0xc0) != 0x80;
    return w;
}

dp_table *dp_table_new(const dp_col *cols, size_t n, const char *indent)
{
    dp_table *t = dp_calloc(1, sizeof *t);
    if (!t)
        return NULL;
    if (!(t->col = dp_malloc((n ? n : 1) * sizeof *t->col))) {
        dp_free(t);
        return NULL;
    }
    memcpy(t->col, cols, n * sizeof *cols);
    t->n_col = n;
    snprintf(t->indent, sizeof t->indent, "%s", indent ? indent : "");
    return t;
}

void dp_table_add(dp_table *t, const char *text)
{
    if (!t || t->oom)
        return;
    if (t->n_cells == t->cap) {
        size_t nc = t->cap ? 2 * t->cap : 64;
        char **c = dp_realloc(t->cell, nc * sizeof *c);
        if (!c) {
            t->oom = 1;
            return;
        }
        t->cell = c;
        t->cap = nc;
    }
    char buf[2048];
    if (!(t->cell[t->n_cells] = dp_strdup(table_escape(buf, sizeof buf, text ? text : "-"))))
        t->oom = 1;
    else
        t->n_cells++;
}

void dp_table_note(dp_table *t, const char *text)
{
    /* stored as a cell starting with \x01, which escaped text never holds */
    char buf[2048], esc[2048];
    snprintf(buf, sizeof buf, "\x01%s", table_escape(esc, sizeof esc, text ? text : ""));
    if (!t || t->oom)
        return;
    size_t before = t->n_cells;
    dp_table_add(t, "");
    if (t->n_cells > before) {
        char *c = dp_strdup(buf);
        if (!c) {
            t->oom = 1;
            return;
        }
        dp_free(t->cell[before]);
        t->cell[before] = c;
    }
}

static int is_note(const char *c)
{
    return c[0] == '\x01';
}

void dp_table_addf(dp_table *t, const char *fmt, ...)
{
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    dp_table_add(t, buf);
}

/* One line: cells[0..n_col) (NULL past the row's end prints nothing). */
static void print_line(const dp_table *t, FILE *out, const char *const *cells, const int *w)
{
    fputs(t->indent, out);
    for (size_t c = 0; c < t->n_col; c++) {
        const char *s = cells[c] ? cells[c] : "";
        int pad = w[c] - text_width(s);
        if (c)
            fprintf(out, "%*s", t->col[c].gap, "");
        int last = c + 1 == t->n_col;
        if (t->col[c].align == 'r')
            fprintf(out, "%*s%s", pad > 0 ? pad : 0, "", s);
        else
            fprintf(out, "%s%*s", s, last || pad <= 0 ? 0 : pad, "");
    }
    fputc('\n', out);
}

int dp_table_print(const dp_table *t, FILE *out)
{
    if (!t || t->oom)
        return -1;
    int *w = dp_calloc(t->n_col ? t->n_col : 1, sizeof *w);
    const char **line = dp_calloc(t->n_col ? t->n_col : 1, sizeof *line);
    if (!w || !line) {
        dp_free(w);
        dp_free(line);
        return -1;
    }
    for (size_t c = 0; c < t->n_col; c++) {
        int hw = text_width(t->col[c].head);
        w[c] = hw > t->col[c].min ? hw : t->col[c].min;
    }
    for (size_t i = 0, c = 0; i < t->n_cells; i++) {
        if (is_note(t->cell[i]))
            continue;
        int cw = text_width(t->cell[i]);
        w[c] = cw > w[c] ? cw : w[c];
        c = (c + 1) % t->n_col;
    }
    for (size_t c = 0; c < t->n_col; c++)
        line[c] = t->col[c].head;
    print_line(t, out, line, w);
    for (size_t i = 0; i < t->n_cells;) {
        if (is_note(t->cell[i])) {
            fprintf(out, "%s%s\n", t->indent, t->cell[i] + 1);
            i++;
            continue;
        }
        for (size_t c = 0; c < t->n_col; c++)
            line[c] = i + c < t->n_cells ? t->cell[i + c] : NULL;
        print_line(t, out, line, w);
        i += t->n_col;
    }
    dp_free(w);
    dp_free(line);
    return 0;
}

void dp_table_free(dp_table *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n_cells; i++)
        dp_free(t->cell[i]);
    dp_free(t->cell);
    dp_free(t->col);
    dp_free(t);
}
