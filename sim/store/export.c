/* export.c: `dpsim export --csv`: every table of the results database as
 * one RFC 4180 CSV file (store.h, store_export_csv).
 *
 * All tables are read inside one read transaction, so the files form one
 * consistent snapshot even while other processes keep storing runs.  Each
 * file is written beside its final name and renamed into place, so a
 * failure (disk full, permission) never leaves a truncated TABLE.csv where
 * a good one was.
 */
#include "store_sql.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Table names and their row order are compiled-in constants: they are the
 * only text formatted into SQL here. */
static const struct {
    const char *table, *order;
} tables[] = {
    {"scenarios", "id"},
    {"sweeps", "id"},
    {"runs", "id"},
    {"run_devices", "run_id, idx"},
    {"run_epochs", "run_id, epoch"},
    {"run_flops", "run_id, bin"},
    {"run_segments", "run_id, rowid"},
    {"run_stats", "run_id, seq"},
    {"run_evals", "run_id, seq"},
    {"run_tta", "run_id, seq"},
    {"run_values", "run_id, seq"},
    {"calibrations", "id"},
    {"run_files", "run_id, rowid"}, /* names, paths and hashes; the contents (blobs) stay in the database */
    {"jobs_runs", "id"},            /* many jobs in one world (dpsim jobs) */
    {"jobs", "jobs_run_id, idx"},
    {"job_allocs", "jobs_run_id, rowid"},
    {"job_tta", "jobs_run_id, job, seq"},
    {"job_stats", "jobs_run_id, seq"},
};

/* mkdir -p: create dir and any missing parents. */
static int make_dirs(const char *dir, dp_err *err)
{
    size_t n = strlen(dir);
    char *p = dp_malloc(n + 1);
    if (!p)
        return dp_err_set(err, DP_ENOMEM, "%s: out of memory", dir);
    memcpy(p, dir, n + 1);
    int e = 0;
    for (size_t i = 1; i <= n && !e; i++) {
        if (p[i] != '/' && p[i] != '\0')
            continue;
        char c = p[i];
        p[i] = '\0';
        struct stat sb;
        if (mkdir(p, 0777) != 0 && errno != EEXIST)
            e = dp_err_set(err, DP_ERUN, "%s: cannot create directory: %s", p, strerror(errno));
        else if (stat(p, &sb) != 0 || !S_ISDIR(sb.st_mode))
            e = dp_err_set(err, DP_ERUN, "%s: exists and is not a directory", p);
        p[i] = c;
    }
    dp_free(p);
    return e;
}

/* RFC 4180: quote a field holding a comma, quote, CR or LF; double quotes. */
static void put_field(FILE *f, const char *s, size_t n)
{
    int quote = 0;
    for (size_t i = 0; i < n && !quote; i++)
        quote = s[i] == ',' || s[i] == '"' || s[i] == '\r' || s[i] == '\n';
    if (!quote) {
        fwrite(s, 1, n, f);
        return;
    }
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"')
            fputc('"', f);
        fputc(s[i], f);
    }
    fputc('"', f);
}

static int write_rows(store *st, sqlite3_stmt *q, FILE *f, const char *file, dp_err *err)
{
    int cols = sqlite3_column_count(q);
    for (int c = 0; c < cols; c++) {
        const char *name = sqlite3_column_name(q, c);
        if (c)
            fputc(',', f);
        put_field(f, name ? name : "", name ? strlen(name) : 0);
    }
    fputs("\r\n", f);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        for (int c = 0; c < cols; c++) {
            if (c)
                fputc(',', f);
            switch (sqlite3_column_type(q, c)) {
            case SQLITE_NULL:
                break;
            case SQLITE_INTEGER:
                fprintf(f, "%" PRId64, (int64_t)sqlite3_column_int64(q, c));
                break;
            case SQLITE_FLOAT:
                fprintf(f, "%.17g", sqlite3_column_double(q, c));
                break;
            default: {
                const char *t = (const char *)sqlite3_column_text(q, c);
                put_field(f, t ? t : "", (size_t)sqlite3_column_bytes(q, c));
            }
            }
        }
        fputs("\r\n", f);
        if (ferror(f))
            return dp_err_set(err, DP_ERUN, "%s: write failed: %s", file, strerror(errno));
    }
    if (rc != SQLITE_DONE)
        return dp_err_set(err, DP_ERUN, "%s: reading the database for %s failed: %s", store_path(st), file,
                          sqlite3_errmsg(store_db(st)));
    return 0;
}

static int export_table(store *st, const char *dir, const char *table, const char *order, dp_err *err)
{
    size_t n = strlen(dir) + strlen(table) + 16;
    char *file = dp_malloc(n), *tmp = dp_malloc(n);
    if (!file || !tmp) {
        dp_free(file);
        dp_free(tmp);
        return dp_err_set(err, DP_ENOMEM, "%s: out of memory exporting %s", dir, table);
    }
    snprintf(file, n, "%s/%s.csv", dir, table);
    snprintf(tmp, n, "%s/%s.csv.tmp", dir, table);

    char sql[128];
    snprintf(sql, sizeof sql, "SELECT * FROM %s ORDER BY %s", table, order);
    sqlite3_stmt *q = NULL;
    int e = 0;
    int rc = sqlite3_prepare_v2(store_db(st), sql, -1, &q, NULL);
    if (rc != SQLITE_OK)
        e = dp_err_set(err, DP_ERUN, "%s: cannot read table %s: %s", store_path(st), table,
                       sqlite3_errmsg(store_db(st)));
    FILE *f = NULL;
    if (!e && !(f = fopen(tmp, "wb")))
        e = dp_err_set(err, DP_ERUN, "%s: cannot create: %s", tmp, strerror(errno));
    if (!e)
        e = write_rows(st, q, f, tmp, err);
    if (f && fclose(f) != 0 && !e) /* a full disk often shows only here */
        e = dp_err_set(err, DP_ERUN, "%s: write failed: %s", tmp, strerror(errno));
    if (!e && rename(tmp, file) != 0)
        e = dp_err_set(err, DP_ERUN, "%s: cannot rename to %s: %s", tmp, file, strerror(errno));
    if (e && f)
        remove(tmp);
    sqlite3_finalize(q);
    dp_free(file);
    dp_free(tmp);
    return e;
}

const char *store_csv_table(size_t i)
{
    return i < sizeof tables / sizeof tables[0] ? tables[i].table : NULL;
}

int store_export_csv(store *st, const char *dir, dp_err *err)
{
    if (!st || !dir || !*dir)
        return dp_err_set(err, DP_EINPUT, "store_export_csv: %s",
                          st ? "empty output directory" : "store is NULL");
    int e = make_dirs(dir, err);
    if (e)
        return e;
    int rc = sqlite3_exec(store_db(st), "BEGIN", NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        return dp_err_set(err, DP_ERUN, "%s: cannot start reading: %s", store_path(st),
                          sqlite3_errmsg(store_db(st)));
    for (size_t i = 0; !e && i < sizeof tables / sizeof tables[0]; i++)
        e = export_table(st, dir, tables[i].table, tables[i].order, err);
    sqlite3_exec(store_db(st), e ? "ROLLBACK" : "COMMIT", NULL, NULL, NULL);
    return e;
}
