/* dpsim.h: the dpsim simulator as a C library (libdpsim.so).
 *
 * Load a scenario (a file or YAML text) with overrides, run one or several
 * scheduling policies on it, read the results as plain structs or as the
 * JSON that `dpsim run --json` prints (sim/store/JSON.md), store them in a
 * results database and read stored runs back.  The same code as the `dpsim`
 * binary: the same scenario, overrides and seed give the same bits.
 *
 *     dpsim_scenario *s;
 *     dpsim_error e;
 *     if (dpsim_scenario_load_file("tiny.yaml", NULL, 0, &s, &e))
 *         fprintf(stderr, "%s\n", e.message);   // FILE:LINE:COL: key: what (got V)
 *     dpsim_results *r;
 *     dpsim_run_options o = {0};
 *     o.policies = "ddp,cadp";
 *     if (dpsim_run(s, &o, &r, &e) == DPSIM_OK) {
 *         dpsim_run_summary m;
 *         dpsim_results_summary(r, 0, &m);       // m.ttotal_s ...
 *         dpsim_results_free(r);
 *     }
 *     dpsim_scenario_free(s);
 *
 * Errors: every fallible call returns DPSIM_OK (0) or a negative
 * DPSIM_E* code and fills an optional dpsim_error (NULL is allowed) with
 * the message the command line prints, e.g.
 *     tiny.yaml:14:3: training.epochz: unknown key, did you mean 'epochs'? (got 'epochz')
 * and, when the message names a place in an input file, that file, line,
 * column and key path as separate fields.  No call exits or aborts the
 * process.
 *
 * Threads: separate runs may go on in separate threads at once (each
 * dpsim_run on its own or a shared scenario: a scenario is read-only once
 * loaded; a results object or database handle is used by one thread at a
 * time).  Process-wide, set once before starting threads and not changed
 * while runs go on: dpsim_set_fast_forward, and the environment switches
 * the simulator reads once (DPSIM_NO_FAST_FORWARD, DPSIM_COLL_PER_FLOW,
 * DPSIM_COMPUTE_PER_BATCH, DPSIM_NET_NO_STAR), read at the first call into
 * the library.
 *
 * Memory: every object this library returns is freed by its own _free
 * function (NULL is a no-op).  Strings in the structs below are borrowed
 * from the object they came from and live as long as it.
 *
 * ABI: the soname's number (libdpsim.so.N) is DPSIM_ABI; it changes when a
 * struct below or a function's signature changes.  Plain C, no dependency
 * in this header beyond <stddef.h> and <stdint.h>; usable from C and C++.
 */
#ifndef DPSIM_H
#define DPSIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define DPSIM_API __attribute__((visibility("default")))
#else
#define DPSIM_API
#endif

#define DPSIM_ABI 1

/* Return codes (the `dpsim` binary's exit code is 2 for DPSIM_EINPUT, 1
 * for the others). */
enum {
    DPSIM_OK = 0,
    DPSIM_ERUN = -1,   /* the run failed: a stall, an interruption, a database error */
    DPSIM_EINPUT = -2, /* bad input: a scenario, an override, a policy name, an argument */
    DPSIM_ENOMEM = -3,
};

typedef struct dpsim_error {
    int code;           /* DPSIM_E*, DPSIM_OK when there was no error */
    char message[1024]; /* one line, as the command line prints it after "dpsim: " */
    /* The input position the message names ("FILE:LINE:COL: key: ..."), or
     * file "" and line, column 0 when it names none. */
    char file[512];
    int line, column;
    char key[256]; /* the key path ("training.epochz"), "" when none */
} dpsim_error;

/* "0.1.0": the library's version (the binary's `dpsim --version`). */
DPSIM_API const char *dpsim_version(void);

/* ---- scenarios ------------------------------------------------------------- */

typedef struct dpsim_scenario dpsim_scenario;

/* Load a scenario file, or the compiled-in "builtin:paper-testbed", with
 * n_set overrides "KEY=VALUE" (`dpsim run --set`; set may be NULL when
 * n_set is 0), then check every policy's options in it (`policies:`).
 * The override texts are kept with the scenario (stored with its runs). */
DPSIM_API int dpsim_scenario_load_file(const char *path, const char *const *set, size_t n_set,
                                       dpsim_scenario **out, dpsim_error *err);
/* The same from YAML text of len bytes; name is the file name in messages
 * (NULL: "<string>"); relative trace paths resolve against base_dir (NULL:
 * the current directory). */
DPSIM_API int dpsim_scenario_load_string(const char *name, const char *text, size_t len, const char *base_dir,
                                         const char *const *set, size_t n_set, dpsim_scenario **out,
                                         dpsim_error *err);
DPSIM_API void dpsim_scenario_free(dpsim_scenario *s);
/* Its `name:`, its training.seed, its device count. */
DPSIM_API const char *dpsim_scenario_name(const dpsim_scenario *s);
DPSIM_API uint64_t dpsim_scenario_seed(const dpsim_scenario *s);
DPSIM_API size_t dpsim_scenario_devices(const dpsim_scenario *s);
/* 1 when the seed matters (compute noise, stragglers or failures), else 0:
 * `dpsim sweep` then runs seed 1 only. */
DPSIM_API int dpsim_scenario_stochastic(const dpsim_scenario *s);
/* The policies that can run this scenario, comma-separated in registry
 * order ("ddp,deepspeed,cadp,..."), what `--policy all` runs, into buf (len
 * bytes).  The number of them. */
DPSIM_API int dpsim_scenario_policies(const dpsim_scenario *s, char *buf, size_t len);

/* Every registered policy, comma-separated, in registry order. */
DPSIM_API void dpsim_policy_names(char *buf, size_t len);

/* ---- running --------------------------------------------------------------- */

typedef struct dpsim_results dpsim_results;

typedef struct dpsim_run_options {
    /* "ddp", "ddp,cadp", or NULL / "all": every policy that can run the
     * scenario (as `dpsim run` without --policy). */
    const char *policies;
    /* use_seed 0: the scenario's training.seed. */
    int use_seed;
    uint64_t seed;
    /* A results database to store each run in (created when absent), or
     * NULL for none.  Runs are stored as `dpsim run` stores them. */
    const char *db;
} dpsim_run_options;

/* Run the policies in order.  On DPSIM_OK *out holds one run per policy.
 * On failure *out is NULL and err says which policy failed and why (runs
 * before it stay stored when a database was given, as with `dpsim run`).
 * opts NULL: every applicable policy, the scenario's seed, no database. */
DPSIM_API int dpsim_run(const dpsim_scenario *s, const dpsim_run_options *opts, dpsim_results **out,
                        dpsim_error *err);
DPSIM_API void dpsim_results_free(dpsim_results *r);

/* Process-wide: 1 (default) lets runs fast-forward repeating epochs, 0
 * simulates every one (`--no-fast-forward`; same results).  Set before
 * starting runs in threads. */
DPSIM_API void dpsim_set_fast_forward(int on);

/* ---- results as structs ------------------------------------------------------ */

typedef struct dpsim_run_summary {
    const char *policy;
    uint64_t seed;
    double tsend_s, ttraining_s, ttotal_s;
    double tflops;      /* the paper's count */
    double utilization; /* 0..1 */
    double samples_processed, bytes_total;
    uint64_t events;
    double wall_s;  /* host seconds (not deterministic) */
    int64_t run_id; /* its id in the database, 0 when not stored */
    size_t n_devices, n_epochs, n_stats;
    const char *options_json; /* the policy's options as a JSON object */
} dpsim_run_summary;

typedef struct dpsim_device {
    const char *name, *group, *kind; /* kind "gpu" or "cpu" */
    int64_t samples, batches;
    double compute_s, send_s, recv_s, wait_s;
    double bytes_sent, bytes_recv;
    double data_ready_s;
} dpsim_device;

typedef struct dpsim_epoch {
    int epoch; /* 1-based */
    double end_s;
} dpsim_epoch;

typedef struct dpsim_stat {
    const char *name;
    const char *scope; /* "run", "device", "device_epoch", "link", "bin" */
    int64_t a, b;
    double value;
} dpsim_stat;

/* How many runs; then run k's figures and rows (k < count; i < its n_*).
 * DPSIM_EINPUT for an index out of range. */
DPSIM_API size_t dpsim_results_count(const dpsim_results *r);
DPSIM_API int dpsim_results_summary(const dpsim_results *r, size_t k, dpsim_run_summary *out);
DPSIM_API int dpsim_results_device(const dpsim_results *r, size_t k, size_t i, dpsim_device *out);
DPSIM_API int dpsim_results_epoch(const dpsim_results *r, size_t k, size_t i, dpsim_epoch *out);
DPSIM_API int dpsim_results_stat(const dpsim_results *r, size_t k, size_t i, dpsim_stat *out);
/* All the runs as `dpsim run --json` prints them (sim/store/JSON.md; the
 * same bytes for the same scenario, overrides, policies and seed).  Owned
 * by r; NULL when out of memory. */
DPSIM_API const char *dpsim_results_json(dpsim_results *r);

/* ---- a results database -------------------------------------------------------- */

typedef struct dpsim_db dpsim_db;

/* Open a results database for reading (an older schema is migrated first,
 * as `dpsim runs` does).  DPSIM_ERUN naming the file when it cannot. */
DPSIM_API int dpsim_db_open(const char *path, dpsim_db **out, dpsim_error *err);
DPSIM_API void dpsim_db_close(dpsim_db *db);
/* Read stored run `run_id` back as results (one run; its run_id set);
 * DPSIM_EINPUT when there is no such run. */
DPSIM_API int dpsim_db_run(dpsim_db *db, int64_t run_id, dpsim_results **out, dpsim_error *err);

/* ---- quantities -------------------------------------------------------------------- */

/* A value as written in a scenario, an override or a sweep ("100Mbps",
 * "25MiB", "20ms", "4GB/s", "35.6TFLOPS", "0.5") in SI base units: bytes/s
 * for bandwidths and rates, bytes, seconds, FLOP/s; a bare number as it is
 * (its unit is the key's).  DPSIM_EINPUT for text that is not a number with
 * a known unit. */
DPSIM_API int dpsim_si(const char *text, double *out);

/* ---- sweep grids ----------------------------------------------------------------- */

typedef struct dpsim_grid dpsim_grid;

/* The grid of `dpsim sweep --vary KEY=SPEC ...` (vary[0..n_vary), the
 * first axis outermost), with the same value texts. */
DPSIM_API int dpsim_grid_new(const char *const *vary, size_t n_vary, dpsim_grid **out, dpsim_error *err);
DPSIM_API void dpsim_grid_free(dpsim_grid *g);
DPSIM_API size_t dpsim_grid_axes(const dpsim_grid *g);
DPSIM_API size_t dpsim_grid_points(const dpsim_grid *g);
DPSIM_API const char *dpsim_grid_key(const dpsim_grid *g, size_t axis);
/* The value text of `axis` at point `point`, NULL when out of range. */
DPSIM_API const char *dpsim_grid_value(const dpsim_grid *g, size_t point, size_t axis);

#ifdef __cplusplus
}
#endif

#endif
