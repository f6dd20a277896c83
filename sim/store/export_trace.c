/* export_trace.c: `dpsim export --trace RUN --out FILE.json`: one stored
 * run as a Chrome trace event file (the JSON object form), which Perfetto
 * (ui.perfetto.dev) and chrome://tracing open.  Format reference:
 * "Trace Event Format" (Google, docs.google.com/document/d/1CvAClvFfyA5R-
 * PhYUmn5OOQtYMH4h6I0nSsKchNAySU).
 *
 * Layout: pid 1 is the cluster (counter track "cluster TFLOPS" from
 * run_flops, instant events at epoch ends); each device group (a site or
 * a kind of device, as the scenario groups them) is pid 2 + the index of
 * its first device (unique per group: the database numbers no groups),
 * tid 1+d device d.
 * Each stored timeline segment becomes one complete event ("ph":"X") named
 * for the activity.  Times are microseconds of simulated time.  Per device
 * the stored segments are disjoint and ordered, so a thread's complete
 * events never overlap.
 *
 * What the database holds is what is exported: the timeline of the first
 * 64 devices (the runtime keeps no more; otherData.note says so when a run
 * has more), coarsened to bins for long runs (otherData.timeline_res_s > 0).
 * A caller may keep only some devices (export --trace --devices).  The file is streamed row by row, written
 * beside its name and renamed, so a failure leaves no half file. */
#include "json.h"
#include "store_sql.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const struct {
    const char *act, *name;
} act_names[] = {{"recv_data", "receiving data"},
                 {"recv_model", "receiving the model"},
                 {"compute", "computing"},
                 {"send", "sending"},
                 {"wait", "waiting"}};

static const char *act_label(const char *act)
{
    for (size_t k = 0; k < sizeof act_names / sizeof *act_names; k++)
        if (act && strcmp(act, act_names[k].act) == 0)
            return act_names[k].name;
    return act ? act : "?";
}

/* One event: its JSON text from j, then a separator for the next. */
static void emit(FILE *f, json_buf *j, int *first)
{
    fputs(*first ? "\n" : ",\n", f);
    fputs(json_text(j), f);
    *first = 0;
}

static void meta(FILE *f, int *first, const char *what, int pid, int tid, const char *name)
{
    json_buf *j = json_new();
    json_obj_begin(j);
    json_key_str(j, "ph", "M");
    json_key_str(j, "name", what);
    json_key_int(j, "pid", pid);
    json_key_int(j, "tid", tid);
    json_key_int(j, "ts", 0);
    json_key(j, "args");
    json_obj_begin(j);
    json_key_str(j, "name", name);
    json_obj_end(j);
    json_obj_end(j);
    emit(f, j, first);
    json_free(j);
}

static int q_fail(store *st, const char *path, dp_err *err)
{
    return dp_err_set(err, DP_ERUN, "%s: reading the database for %s failed: %s", store_path(st), path,
                      sqlite3_errmsg(store_db(st)));
}

struct store_trace {
    store *st;
    FILE *f;
    char *path, *tmp;
    int64_t run;
    int first, full;
    size_t n_dev;
    int *pid;                  /* per device: 2 + the index of its group's first device */
    const unsigned char *keep; /* per device: write it (NULL: every device) */
    size_t n_keep;
};

/* Whether device d's events go into the file (store_trace_begin's keep). */
static int kept(const store_trace *t, int64_t d)
{
    return !t->keep || (d >= 0 && (size_t)d < t->n_keep && t->keep[d]);
}

static void strace_free(store_trace *t)
{
    if (!t)
        return;
    if (t->f)
        fclose(t->f);
    if (t->tmp)
        remove(t->tmp);
    dp_free(t->tmp);
    dp_free(t->path);
    dp_free(t->pid);
    dp_free(t);
}

/* The header, otherData and the process and thread names. */
static int write_head(store_trace *t, dp_err *err)
{
    store *st = t->st;
    sqlite3 *db = store_db(st);
    sqlite3_stmt *q = NULL;
    FILE *f = t->f;
    int64_t run = t->run;
    const char *path = t->path;
    int rc = 0;
    if (sqlite3_prepare_v2(
            db,
            "SELECT s.name, r.policy, r.seed, r.version, r.status, " STORE_SQL_JSON_OF(
                "r.options_json",
                "object") ","
                          " r.timeline_res_s, r.ttotal_s, " STORE_SQL_JSON_OF(
                              "r.overrides_json",
                              "array") ","
                                       " (SELECT count(*) FROM run_devices WHERE run_id = r.id)"
                                       " FROM runs r JOIN scenarios s ON s.id = r.scenario_id WHERE r.id = "
                                       "?1",
            -1, &q, NULL) != SQLITE_OK)
        return q_fail(st, path, err);
    sqlite3_bind_int64(q, 1, run);
    if (sqlite3_step(q) != SQLITE_ROW) {
        sqlite3_finalize(q);
        return dp_err_set(err, DP_EINPUT, "%s: no run #%lld ('dpsim runs --db %s' lists them)",
                          store_path(st), (long long)run, store_path(st));
    }
    /* Every column is checked before use: a database may come from anyone
     * (a NULL status, options that are not JSON, a spoofed trace). */
    if (strcmp(store_col_text(q, 4), "ok") != 0) {
        sqlite3_finalize(q);
        return dp_err_set(err, DP_EINPUT, "%s: run #%lld failed and has no timeline", store_path(st),
                          (long long)run);
    }
    if (sqlite3_column_type(q, 5) == SQLITE_NULL || sqlite3_column_type(q, 8) == SQLITE_NULL) {
        const char *what = sqlite3_column_type(q, 5) == SQLITE_NULL ? "options are not a JSON object"
                                                                    : "overrides are not a JSON list";
        sqlite3_finalize(q);
        return dp_err_set(err, DP_ERUN, "%s: run #%lld: its stored %s (a damaged or crafted database)",
                          store_path(st), (long long)run, what);
    }
    t->n_dev = (size_t)sqlite3_column_int64(q, 9);
    json_buf *j = json_new();
    json_obj_begin(j);
    json_key_str(j, "dpsim_version", (const char *)sqlite3_column_text(q, 3));
    json_key_int(j, "run", run);
    json_key_str(j, "scenario", (const char *)sqlite3_column_text(q, 0));
    json_key_str(j, "policy", (const char *)sqlite3_column_text(q, 1));
    json_key_int(j, "seed", sqlite3_column_int64(q, 2));
    json_key(j, "options");
    json_raw(j, (const char *)sqlite3_column_text(q, 5));
    json_key(j, "overrides");
    json_raw(j, (const char *)sqlite3_column_text(q, 8));
    json_key_num(j, "ttotal_s", sqlite3_column_double(q, 7));
    json_key_str(j, "timeline", t->full ? "full" : "stored");
    json_key_num(j, "timeline_res_s", t->full ? 0 : sqlite3_column_double(q, 6));
    json_key_int(j, "devices", (int64_t)t->n_dev);
    int64_t in_timeline = t->full ? (int64_t)t->n_dev : (int64_t)(t->n_dev < 64 ? t->n_dev : 64);
    json_key_int(j, "timeline_devices", in_timeline);
    if (t->keep) {
        int64_t n_kept = 0;
        for (size_t d = 0; d < t->n_keep && d < t->n_dev; d++)
            n_kept += t->keep[d] != 0;
        json_key_int(j, "devices_written", n_kept);
    }
    if (in_timeline < (int64_t)t->n_dev) {
        char note[200];
        snprintf(note, sizeof note,
                 "the stored timeline holds the first %lld of %zu devices; export --trace RUN --full "
                 "writes every device",
                 (long long)in_timeline, t->n_dev);
        json_key_str(j, "note", note);
    }
    json_obj_end(j);
    char policy[64];
    snprintf(policy, sizeof policy, "%s", store_col_text(q, 1));
    sqlite3_finalize(q);
    fputs("{\"displayTimeUnit\":\"ms\",\"otherData\":", f);
    fputs(json_text(j), f);
    fputs(",\"traceEvents\":[", f);
    json_free(j);
    if (!(t->pid = dp_calloc(t->n_dev ? t->n_dev : 1, sizeof *t->pid)))
        return dp_err_set(err, DP_ENOMEM, "%s: out of memory", path);

    meta(f, &t->first, "process_name", 1, 0, "cluster");
    /* devices: a process per group, a thread per device */
    if (sqlite3_prepare_v2(db,
                           "SELECT idx, name, grp, (SELECT min(idx) FROM run_devices d4 WHERE d4.run_id ="
                           " d.run_id AND d4.grp = d.grp) FROM run_devices d WHERE run_id = ?1 ORDER BY idx",
                           -1, &q, NULL) != SQLITE_OK)
        return q_fail(st, path, err);
    sqlite3_bind_int64(q, 1, run);
    unsigned char *named = dp_calloc(t->n_dev ? t->n_dev : 1, 1); /* per group (its first device) */
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        int64_t d = sqlite3_column_int64(q, 0), g0 = sqlite3_column_int64(q, 3);
        const char *grp = (const char *)sqlite3_column_text(q, 2);
        if (d < 0 || (size_t)d >= t->n_dev || g0 < 0 || g0 > d)
            continue; /* not a device of this run (a crafted index): no thread for it */
        char pname[96];
        snprintf(pname, sizeof pname, "%s (%s)", grp ? grp : "?", policy);
        /* pid: 2 + the index of the group's first device, unique per group
         * (the database has no table numbering groups) */
        int pid = 2 + (int)g0;
        if (d >= 0 && (size_t)d < t->n_dev)
            t->pid[d] = pid;
        if (!kept(t, d))
            continue;
        /* the group's name with its first device written */
        if (g0 >= 0 && (size_t)g0 < t->n_dev && named && !named[g0]) {
            named[g0] = 1;
            meta(f, &t->first, "process_name", pid, 0, pname);
        }
        meta(f, &t->first, "thread_name", pid, (int)d + 1, (const char *)sqlite3_column_text(q, 1));
    }
    dp_free(named);
    sqlite3_finalize(q);
    return rc == SQLITE_DONE ? 0 : q_fail(st, path, err);
}

store_trace *store_trace_begin(store *st, int64_t run_id, const char *path, int full,
                               const unsigned char *keep, size_t n_keep, dp_err *err)
{
    store_trace *t = dp_calloc(1, sizeof *t);
    size_t n = strlen(path) + 8;
    if (!t || !(t->path = dp_strdup(path)) || !(t->tmp = dp_malloc(n))) {
        strace_free(t);
        dp_err_set(err, DP_ENOMEM, "%s: out of memory", path);
        return NULL;
    }
    t->st = st;
    t->run = run_id;
    t->first = 1;
    t->full = full;
    t->keep = keep;
    t->n_keep = n_keep;
    snprintf(t->tmp, n, "%s.part", path);
    if (!(t->f = fopen(t->tmp, "w"))) {
        dp_err_set(err, DP_ERUN, "%s: cannot write: %s", t->tmp, strerror(errno));
        dp_free(t->tmp);
        t->tmp = NULL;
        strace_free(t);
        return NULL;
    }
    if (write_head(t, err)) {
        strace_free(t);
        return NULL;
    }
    return t;
}

/* One complete event. */
static void put_segment(store_trace *t, int64_t device, const char *act, double t0_s, double t1_s)
{
    if (!kept(t, device))
        return;
    double t0 = t0_s * 1e6, t1 = t1_s * 1e6;
    if (device < 0 || (size_t)device >= t->n_dev)
        return; /* a segment of no device of the run (a crafted row) */
    int pid = t->pid[device] ? t->pid[device] : 2;
    json_buf *j = json_new();
    json_obj_begin(j);
    json_key_str(j, "ph", "X");
    json_key_str(j, "name", act_label(act));
    json_key_str(j, "cat", act ? act : "?");
    json_key_num(j, "ts", t0);
    json_key_num(j, "dur", t1 > t0 ? t1 - t0 : 0);
    json_key_int(j, "pid", pid);
    json_key_int(j, "tid", device + 1);
    json_obj_end(j);
    emit(t->f, j, &t->first);
    json_free(j);
}

void store_trace_segment(store_trace *t, size_t device, const char *act, double t0_s, double t1_s)
{
    if (t)
        put_segment(t, (int64_t)device, act, t0_s, t1_s);
}

/* The stored segments (unless full), the FLOPS counter, the epoch ends. */
static int write_tail(store_trace *t, dp_err *err)
{
    store *st = t->st;
    sqlite3 *db = store_db(st);
    sqlite3_stmt *q = NULL;
    FILE *f = t->f;
    int64_t run = t->run;
    const char *path = t->path;
    int rc = 0, first = t->first;
    json_buf *j;
    if (!t->full) {
        if (sqlite3_prepare_v2(db,
                               "SELECT device, act, t0_s, t1_s FROM run_segments WHERE run_id = ?1"
                               " ORDER BY device, t0_s",
                               -1, &q, NULL) != SQLITE_OK)
            return q_fail(st, path, err);
        sqlite3_bind_int64(q, 1, run);
        while ((rc = sqlite3_step(q)) == SQLITE_ROW)
            put_segment(t, sqlite3_column_int64(q, 0), (const char *)sqlite3_column_text(q, 1),
                        sqlite3_column_double(q, 2), sqlite3_column_double(q, 3));
        sqlite3_finalize(q);
        if (rc != SQLITE_DONE)
            return q_fail(st, path, err);
    }
    first = t->first;
    /* cluster FLOPS as a counter track */
    if (sqlite3_prepare_v2(db, "SELECT t0_s, flops FROM run_flops WHERE run_id = ?1 ORDER BY bin", -1, &q,
                           NULL) != SQLITE_OK)
        return q_fail(st, path, err);
    sqlite3_bind_int64(q, 1, run);
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        j = json_new();
        json_obj_begin(j);
        json_key_str(j, "ph", "C");
        json_key_str(j, "name", "cluster TFLOPS");
        json_key_num(j, "ts", sqlite3_column_double(q, 0) * 1e6);
        json_key_int(j, "pid", 1);
        json_key_int(j, "tid", 0);
        json_key(j, "args");
        json_obj_begin(j);
        json_key_num(j, "TFLOPS", sqlite3_column_double(q, 1) / 1e12);
        json_obj_end(j);
        json_obj_end(j);
        emit(f, j, &first);
        json_free(j);
    }
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE)
        return q_fail(st, path, err);

    /* epoch ends as global instant events */
    if (sqlite3_prepare_v2(db, "SELECT epoch, end_s FROM run_epochs WHERE run_id = ?1 ORDER BY epoch", -1, &q,
                           NULL) != SQLITE_OK)
        return q_fail(st, path, err);
    sqlite3_bind_int64(q, 1, run);
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        char name[48];
        /* run_epochs.epoch counts from 1 already */
        snprintf(name, sizeof name, "epoch %lld ends", (long long)sqlite3_column_int64(q, 0));
        j = json_new();
        json_obj_begin(j);
        json_key_str(j, "ph", "i");
        json_key_str(j, "s", "g");
        json_key_str(j, "name", name);
        json_key_num(j, "ts", sqlite3_column_double(q, 1) * 1e6);
        json_key_int(j, "pid", 1);
        json_key_int(j, "tid", 0);
        json_obj_end(j);
        emit(f, j, &first);
        json_free(j);
    }
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE)
        return q_fail(st, path, err);
    fputs("\n]}\n", f);
    t->first = first;
    return 0;
}

int store_trace_end(store_trace *t, dp_err *err)
{
    if (!t)
        return 0;
    int rc = write_tail(t, err);
    if (ferror(t->f) && !rc)
        rc = dp_err_set(err, DP_ERUN, "%s: write failed: %s", t->tmp, strerror(errno));
    if (fclose(t->f) != 0 && !rc)
        rc = dp_err_set(err, DP_ERUN, "%s: write failed: %s", t->tmp, strerror(errno));
    t->f = NULL;
    if (!rc && rename(t->tmp, t->path) != 0)
        rc = dp_err_set(err, DP_ERUN, "%s: cannot rename to %s: %s", t->tmp, t->path, strerror(errno));
    if (!rc) {
        dp_free(t->tmp);
        t->tmp = NULL;
    }
    strace_free(t); /* removes the .part file after a failure */
    return rc;
}

void store_trace_abort(store_trace *t)
{
    strace_free(t);
}

int store_export_trace(store *st, int64_t run_id, const char *path, const unsigned char *keep, size_t n_keep,
                       dp_err *err)
{
    /* one read transaction: a consistent snapshot while others store runs */
    sqlite3_exec(store_db(st), "BEGIN", NULL, NULL, NULL);
    store_trace *t = store_trace_begin(st, run_id, path, 0, keep, n_keep, err);
    int rc = t ? store_trace_end(t, err) : (err && err->code ? err->code : DP_ERUN);
    sqlite3_exec(store_db(st), "COMMIT", NULL, NULL, NULL);
    return rc;
}
