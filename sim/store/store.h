/* store.h: the results database (SQLite).
 *
 * One file (default results.db) holds the scenarios that were run (their
 * text and the trace files they read, so any run can be repeated from the
 * database alone), every run with
 * its policy, options, overrides, seed, dpsim version, metrics, per-device,
 * per-epoch, FLOPS-bin and timeline rows, and the sweeps.  The schema is
 * documented in sim/store/SCHEMA.md ("Results database"); its version is
 * PRAGMA user_version and store_open migrates older files forward.
 *
 * Guarantees:
 *  - each store_put_* is one transaction (BEGIN IMMEDIATE): a run that fails
 *    or is interrupted, even by a crash, leaves no row at all;
 *  - several processes may write one file at once (WAL journal, a 10 s busy
 *    timeout, writers take the write lock up front so they queue instead of
 *    deadlocking);
 *  - every value goes through a bound parameter of a prepared statement;
 *  - doubles are stored as IEEE REALs and read back bit-exact (a NaN is
 *    stored as NULL, SQLite's only way, and read back as NaN);
 *  - seeds and event counts (uint64) are stored as INTEGER (int64) with the
 *    same bits: values above INT64_MAX show as negative in SQL but read back
 *    exactly.
 *
 * Errors: every fallible function returns 0 or a negative DP_E* code and
 * fills err.  Database and file problems (read-only file, database locked
 * beyond the busy timeout, a file that is not a database, a schema newer
 * than this binary, disk full, I/O errors) are DP_ERUN with a message that
 * names the database file; none of them alters rows already stored.  A run
 * id that does not exist is DP_EINPUT.  Out of memory is DP_ENOMEM.
 *
 * Ownership: store_open returns a handle the caller closes with store_close
 * (store_close(NULL) is a no-op).  A handle is used by one thread at a time
 * and must not cross fork(): a child process opens its own.
 */
#ifndef DP_STORE_H
#define DP_STORE_H

#include "dp_common.h"
#include "results.h"
#include "scenario.h"

#include <stdint.h>
#include <stdio.h>

/* The schema version this binary writes (PRAGMA user_version). */
#define STORE_SCHEMA_VERSION 11
/* How long a writer waits for another process's write lock. */
#define STORE_BUSY_TIMEOUT_MS 10000

typedef struct store store;

/* Open the database at path.
 * readonly = 0: create the file if absent, switch it to WAL, migrate its
 *   schema to STORE_SCHEMA_VERSION (each step in its own transaction), turn
 *   foreign keys on.  Fails when the file is not writable.
 * readonly = 1: the file must exist and hold exactly the current schema
 *   version (an older file is refused: open it read-write once to migrate);
 *   nothing is ever written.
 * Both refuse, without touching the file, a file that is not an SQLite
 * database, a database of another application, and one whose schema
 * version is newer than STORE_SCHEMA_VERSION.  NULL on error. */
store *store_open(const char *path, int readonly, dp_err *err);
void store_close(store *st);
/* Open for reading (as store_open(path, 1)), except that a file of an
 * older schema version is first migrated forward, which is the only write
 * it may make; a file that cannot be migrated (read-only) gives the
 * read-only open's error.  For commands that only read (runs, show, export,
 * plot, merge inputs), so an old results file just works. */
store *store_open_read(const char *path, dp_err *err);

/* Store a finished run: the scenario (deduplicated by its text hash; s->name,
 * s->text, s->text_hash are read), the run row and all its children, and
 * the trace files the scenario read (s->files: contents deduplicated by
 * hash), in one transaction.  overrides: n_overrides "KEY=VALUE" strings applied to the
 * scenario (may be NULL when n_overrides is 0).  r->options_json NULL is
 * stored as "{}".  version: the dpsim version string.  started_at: an
 * ISO-8601 UTC time from the caller (the library never reads the clock for
 * run data).  sweep_id 0 = not part of a sweep; point_json NULL outside
 * sweeps.  Within a sweep, a run replaces a *failed* row for the same
 * (sweep, point, policy, seed, version) so failed points can be retried; a
 * second successful row for the same point is refused (DP_ERUN).
 * Returns 0 and sets *run_id (may be NULL).  Nothing is borrowed after the
 * call returns. */
int store_put_run(store *st, const scn_scenario *s, const char *const *overrides, size_t n_overrides,
                  const res_run *r, const char *version, const char *started_at, int64_t sweep_id,
                  const char *point_json, int64_t *run_id, dp_err *err);

/* Store a run that failed (status 'failed', the error message, no metrics
 * and no child rows, options_json "{}", wall_s 0).  scenario_text may be
 * NULL when the scenario file could not even be read; "" is stored then.
 * Same transaction and sweep rules as store_put_run. */
int store_put_failed(store *st, const char *scenario_name, const char *scenario_text, uint64_t text_hash,
                     const char *const *overrides, size_t n_overrides, const char *policy, uint64_t seed,
                     const char *version, const char *started_at, int64_t sweep_id, const char *point_json,
                     const char *error, int64_t *run_id, dp_err *err);

/* Store one `dpsim calibrate` fit: the scenario (deduplicated as for
 * runs), the spec and result JSON (sim/calib/calib.h), the cost (NaN is
 * stored as NULL) and the number of evaluations, in one transaction.
 * *id gets its row id (may be NULL). */
int store_put_calibration(store *st, const scn_scenario *s, const char *spec_json, const char *result_json,
                          double cost, int64_t evaluations, const char *version, const char *started_at,
                          int64_t *id, dp_err *err);

/* Read run run_id back: metrics, options_json, devices, epochs, FLOPS bins
 * (flops_bins[k] from bin k) and segments in insertion order.  Metrics that
 * are NULL (failed runs) read as NaN, counts as 0.  *out is a new run the
 * caller frees with res_run_free.  DP_EINPUT when no such run. */
int store_get_run(store *st, int64_t run_id, res_run **out, dp_err *err);

/* What is needed to re-run run_id: the scenario text and name, the override
 * strings, the policy and the seed.  Every output string is a dp_malloc
 * block the caller frees with dp_free; *overrides is freed with
 * store_strings_free(*overrides, *n_overrides) (NULL when there are none).
 * On error every output is left NULL/0.  DP_EINPUT when no such run. */
int store_get_run_source(store *st, int64_t run_id, char **scenario_text, char **scenario_name,
                         char ***overrides, size_t *n_overrides, char **policy, uint64_t *seed, dp_err *err);
/* The trace files run_id's scenario read when it ran (store_put_run keeps
 * s->files): name as written, path as resolved then (absolute when it
 * could be), contents and hash, in the order they were read.  Runs stored
 * before schema version 3, and runs of scenarios without traces, have
 * none (*n_files = 0).  *files is freed with store_files_free.  A stored
 * content that does not match its hash is DP_ERUN.  Pass the files to
 * scn_load_string_files to simulate the run with the same traces. */
int store_get_run_files(store *st, int64_t run_id, scn_file **files, size_t *n_files, dp_err *err);
/* Free an array of n files from store_get_run_files; (NULL, 0) is a no-op. */
void store_files_free(scn_file *files, size_t n);
/* Free an array of n dp_malloc'd strings and the array; (NULL, 0) is a no-op. */
void store_strings_free(char **v, size_t n);

/* The runs `dpsim runs` lists, oldest first: which (filter; NULL = all),
 * and per run what its table shows.  Metrics of failed runs read NaN. */
typedef struct store_runs_filter {
    const char *scenario, *policy; /* exact names; NULL = any */
    int64_t sweep_id;              /* 0 = any run */
    int64_t last;                  /* > 0: only the newest `last` of the matches */
} store_runs_filter;
typedef struct store_run_row {
    int64_t id, sweep_id; /* sweep_id 0: not a sweep's run */
    char started_at[32], scenario[128], policy[32], status[16];
    uint64_t seed;
    char *overrides; /* its --set overrides, or a sweep run's point, as "K=V K=V" ("" = none) */
    double tsend_s, ttraining_s, ttotal_s, tflops;
} store_run_row;
typedef struct store_run_rows {
    store_run_row *row;
    size_t n;
} store_run_rows;
int store_runs_list(store *st, const store_runs_filter *f, store_run_rows *out, dp_err *err);
void store_run_rows_free(store_run_rows *r);

/* Write every table as DIR/TABLE.csv (scenarios, sweeps, runs, run_devices,
 * run_epochs, run_flops, run_segments, run_files; not blobs, the trace
 * contents, which are binary).  dir and its missing parents are
 * created.  RFC 4180: a header row of column names, CRLF line ends, a field
 * holding a comma, quote, CR or LF is quoted with inner quotes doubled;
 * NULL is an empty field; REALs print as %.17g (exact).  Each file is
 * written to TABLE.csv.tmp and renamed, so an existing export is never left
 * half-written. */
int store_export_csv(store *st, const char *dir, dp_err *err);
/* The i-th table store_export_csv writes (as TABLE.csv), NULL past the last. */
const char *store_csv_table(size_t i);
/* Write run run_id as a Chrome trace event JSON file at path (Perfetto,
 * chrome://tracing; layout in export_trace.c and sim/store/JSON.md),
 * streamed, via path.part renamed into place.  keep (NULL = every device)
 * marks the devices to write, by index (n_keep entries; others left out).  DP_EINPUT when the run does
 * not exist or failed; DP_ERUN on a write or database error. */
int store_export_trace(store *st, int64_t run_id, const char *path, const unsigned char *keep, size_t n_keep,
                       dp_err *err);
/* The same file in three steps, for a caller that re-simulates the run and
 * streams every activity (export --trace --full): begin writes the header
 * and the names (full = 1: no stored segments will be added); segment adds
 * one complete event (act: res_activity_name); end adds the stored
 * segments (unless full), the FLOPS counter and the epoch ends, and renames
 * the file into place.  end and abort free t. */
typedef struct store_trace store_trace;
store_trace *store_trace_begin(store *st, int64_t run_id, const char *path, int full,
                               const unsigned char *keep, size_t n_keep, dp_err *err);
void store_trace_segment(store_trace *t, size_t device, const char *act, double t0_s, double t1_s);
int store_trace_end(store_trace *t, dp_err *err);
void store_trace_abort(store_trace *t);

/* Get the id of the sweep whose canonical spec JSON is spec_json, creating
 * the sweep row (and the scenario row of s) when absent. */
int store_sweep_get_or_create(store *st, const scn_scenario *s, const char *spec_json, int64_t *sweep_id,
                              dp_err *err);
/* Whether a point of a sweep is stored already: *done = 0 not stored,
 * 1 stored as ok, 2 stored as failed (retry it with store_put_run, which
 * replaces the failed row).  point_json must be byte-equal to the stored
 * text (use the json writer with keys in a fixed order). */
int store_point_done(store *st, int64_t sweep_id, const char *point_json, const char *policy, uint64_t seed,
                     const char *version, int *done, dp_err *err);
/* The same, with what a summary needs: *ttotal_s (may be NULL) the stored
 * Ttotal of an ok point (NaN otherwise), msg (may be NULL) the error of a
 * failed one. */
int store_point_outcome(store *st, int64_t sweep_id, const char *point_json, const char *policy,
                        uint64_t seed, const char *version, int *done, double *ttotal_s, char *msg,
                        size_t msg_cap, dp_err *err);
/* Hold one read transaction over many reads (one snapshot, one lock
 * instead of one per query); store_read_end ends it. */
int store_read_begin(store *st, dp_err *err);
void store_read_end(store *st);

/* The file name given to store_open (borrowed, lives as long as st). */
const char *store_path(const store *st);

/* ---- typed reads (query.c): what the plots draw ------------------------
 *
 * Plain C structs and arrays, so that no caller sees SQL.  Each result that
 * holds memory has its own free function, which accepts a zeroed result and
 * leaves the result zeroed; on error every result is left zeroed.  Reals
 * stored as NULL read as NaN unless said otherwise.  Errors: DP_ERUN for a
 * database error (the message names the file), DP_EINPUT where said,
 * DP_ENOMEM. */

/* One run's row: its policy, scenario name and headline metrics. */
typedef struct store_run_info {
    int64_t id;
    char policy[32];
    char scenario[128]; /* the scenario's name (user text) */
    double tsend_s, ttraining_s, ttotal_s, tflops, bin_s;
} store_run_info;
/* DP_EINPUT when run_id does not exist or did not succeed (the message
 * quotes its error). */
int store_run_info_get(store *st, int64_t run_id, store_run_info *out, dp_err *err);

typedef struct store_ids {
    int64_t *id;
    size_t n;
} store_ids;
void store_ids_free(store_ids *ids);
/* The default runs of a plot (plots/README.md): the runs the latest tagged
 * invocation stored outside sweeps (runs.invocation; of its override sets,
 * the one with the most runs), the latest of each policy; for files whose
 * latest run is untagged, the latest run outside sweeps preferring one
 * without overrides, and the latest run of each policy with its scenario
 * text and overrides.  scenario (NULL = any) filters on the scenario's name.
 * one = 1: only the latest run of that group, of `policy` when not NULL
 * (policy is ignored when one = 0).  Ids in no particular order.  DP_EINPUT
 * when no successful run matches. */
int store_select_runs(store *st, const char *scenario, const char *policy, int one, store_ids *out,
                      dp_err *err);

/* A run's FLOPS bins (run_flops) in bin order. */
typedef struct store_flops {
    int64_t *bin;
    double *flops;
    size_t n;
} store_flops;
int store_flops_get(store *st, int64_t run_id, store_flops *out, dp_err *err);
void store_flops_free(store_flops *f);

/* The extent of a run's timeline. */
typedef struct store_timeline_info {
    size_t n_devices;
    int has_segments; /* 0: no run_segments rows (end_s is then 0) */
    double end_s;     /* the latest segment end */
    double res_s;     /* runs.timeline_res_s: > 0 a coarsened timeline's bin, else 0 */
} store_timeline_info;
int store_timeline_info_get(store *st, int64_t run_id, store_timeline_info *out, dp_err *err);

/* A run's devices (run_devices) by index: idx[k] and name[k]. */
typedef struct store_devices {
    int64_t *idx;
    char **name;
    size_t n;
} store_devices;
int store_devices_get(store *st, int64_t run_id, store_devices *out, dp_err *err);
void store_devices_free(store_devices *d);
/* The name of device idx in d, NULL when d has none. */
const char *store_device_name(const store_devices *d, int64_t idx);

/* The end of each epoch (run_epochs), in epoch order, at most `limit`. */
typedef struct store_values {
    double *v;
    size_t n;
} store_values;
int store_epoch_ends_get(store *st, int64_t run_id, size_t limit, store_values *out, dp_err *err);
void store_values_free(store_values *v);

/* A run's timeline segments of one activity (act: res_activity_name), in
 * the order the database returns them (stored order). */
typedef struct store_segment {
    int64_t device;
    double t0_s, t1_s;
} store_segment;
typedef struct store_segments {
    store_segment *seg;
    size_t n;
} store_segments;
int store_segments_get(store *st, int64_t run_id, const char *act, store_segments *out, dp_err *err);
void store_segments_free(store_segments *s);

/* How each policy of the database is shown (runs.policy_label,
 * policy_color), as the binary that ran its latest such run registered
 * it: label "" never (policies without one are left out), color "" when
 * the stored one is not "#rrggbb".  Empty for databases before version 8:
 * plots then fall back to their own registry. */
typedef struct store_policy_style {
    char policy[32], label[48], color[16];
} store_policy_style;
typedef struct store_policy_styles {
    store_policy_style *style;
    size_t n;
} store_policy_styles;
int store_policy_styles_get(store *st, store_policy_styles *out, dp_err *err);
void store_policy_styles_free(store_policy_styles *p);
/* The entry of policy in p, NULL when it has none. */
const store_policy_style *store_policy_style_of(const store_policy_styles *p, const char *policy);

/* The latest sweep with a successful run; DP_EINPUT when there is none. */
int store_sweep_latest(store *st, int64_t *sweep_id, dp_err *err);
/* The scenario name of a sweep into buf ("" when unknown). */
int store_sweep_scenario(store *st, int64_t sweep_id, char *buf, size_t cap, dp_err *err);
/* The successful runs of a sweep with a value of `metric` (a runs column:
 * ttotal_s, tsend_s, ttraining_s, tflops, utilization; anything else is
 * DP_EINPUT), in id order: policy, point (the stored JSON, NULL if none)
 * and value.  DP_EINPUT when the sweep has none. */
typedef struct store_sweep_run {
    char policy[32];
    char *point_json;
    double value;
} store_sweep_run;
typedef struct store_sweep_runs {
    store_sweep_run *run;
    size_t n;
} store_sweep_runs;
int store_sweep_runs_get(store *st, int64_t sweep_id, const char *metric, store_sweep_runs *out, dp_err *err);
void store_sweep_runs_free(store_sweep_runs *r);

/* A load-balancing run's per-device, per-epoch batch statistics
 * (run_stats scope device_epoch: batch_mean, batch_min, batch_max and
 * wait_s, NULLs read as 0): n_devices and n_epochs over every batch_mean row;
 * rows of the devices below max_devices that have all three batch
 * figures, by device then epoch. */
typedef struct store_batch_row {
    int64_t device, epoch;
    double mean, min, max, wait_s;
} store_batch_row;
typedef struct store_batches {
    size_t n_devices;
    int64_t n_epochs;
    store_batch_row *row;
    size_t n;
} store_batches;
int store_batches_get(store *st, int64_t run_id, size_t max_devices, store_batches *out, dp_err *err);
void store_batches_free(store_batches *b);

/* A run's statistics of one scope (run_stats; "link", ...), ordered by a
 * then by the order they were stored. */
typedef struct store_stat {
    int64_t a, b;
    char *name;
    double value;
} store_stat;
typedef struct store_stats {
    store_stat *stat;
    size_t n;
} store_stats;
int store_stats_get(store *st, int64_t run_id, const char *scope, store_stats *out, dp_err *err);
void store_stats_free(store_stats *s);

/* The histogram `name` (scope bin, run_stats) of a run: n bins in bin
 * order, bin[k] its index, edge[k] its lower edge, count[k] its value
 * (NULL reads as 0).  n = 0 when the run has no such histogram. */
typedef struct store_hist {
    int64_t *bin, *edge;
    double *count;
    size_t n;
} store_hist;
int store_hist_get(store *st, int64_t run_id, const char *name, store_hist *out, dp_err *err);
void store_hist_free(store_hist *h);

/* Test hook: make the k-th child row insert (device, epoch, FLOPS bin or
 * segment row) of the next store_put_run fail as if the database had
 * failed (0 = off).  The hook disarms itself after that call. */
void store_test_fail_after_rows(store *st, long k);
/* Tag the runs this connection stores from now on with an invocation id
 * (runs.invocation; copied, at most 63 bytes; NULL or "" = untagged), so
 * that readers can find the runs of the latest command (plot's default).
 * cli_invocation_id makes one per process. */
void store_set_invocation(store *st, const char *id);
/* The absolute directory of the scenario file run run_id was made from
 * (runs.scenario_dir): *dir is a dp_malloc string, or NULL when unknown
 * (built-in scenario, older file).  0 or an error code. */
int store_get_run_dir(store *st, int64_t run_id, char **dir, dp_err *err);

/* ---- merging databases (merge.c) ---------------------------------------- */

typedef struct store_merge_stats {
    size_t scenarios_added, sweeps_added;
    size_t runs_added;                         /* copied with their child rows */
    size_t runs_skipped;                       /* present in OUT already */
    size_t runs_replaced;                      /* a failed sweep run in OUT replaced by an ok one */
    size_t jobs_runs_added, jobs_runs_skipped; /* `dpsim jobs` runs, with their jobs and allocations */
} store_merge_stats;

/* Merge results databases in_paths[0..n_in) into out_path (created when
 * absent) in one transaction: scenarios matched by hash, sweeps by
 * spec_json, runs with their device, epoch, FLOPS and segment rows, ids
 * remapped.  A sweep run whose (sweep spec, point, policy, seed, version)
 * is in OUT already is skipped (or, if OUT's is failed and this one ok,
 * replaces it); a run outside sweeps is skipped when OUT has one with the
 * same (scenario hash, policy, seed, version, started_at, overrides).
 * DP_EINPUT for a missing input or an input that is OUT itself; DP_ERUN for
 * database errors, after which OUT is unchanged. */
int store_merge(const char *out_path, const char *const *in_paths, size_t n_in, store_merge_stats *ms,
                dp_err *err);

#endif
