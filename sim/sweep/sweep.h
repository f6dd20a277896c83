/* sweep.h: many runs over a grid of scenario variations (`dpsim sweep`),
 * run by worker processes, stored in the results database, resumable, and
 * the merge of several results databases (`dpsim merge`).
 *
 * A grid is a list of axes.  Each axis is `KEY=SPEC`: KEY a scenario
 * override path (scenario.h, e.g. `devices.rtx3090.link.down`), SPEC
 *     a list           10Mbps,100Mbps,1Gbps     (values passed as written)
 *     a linear range   1..8  1..8:step=2  10ms..50ms:step=10ms  0..1:lin:5
 *     a log range      10Mbps..10Gbps:log:7
 * Range values are printed with 10 significant digits in the unit of the
 * start ("31.6227766Mbps"), so the text of every value, hence of every
 * point, is the same each time the spec is expanded.  Range endpoints and
 * steps carry a unit on both ends or on none.
 *
 * The grid is the cartesian product of the axes in the order given, the
 * first axis outermost; point p (0-based) has axis a at value
 * (p / product of the later axes' lengths) % length(a).  A point's identity
 * in the database is its point_json: {"KEY":"VALUE",...} with the keys in
 * axis order and each VALUE exactly the override text.
 *
 * Sharding: shard K of N (1 <= K <= N) holds the points p with
 * p % N == K - 1; the N shards are disjoint and cover the grid, and
 * round-robin keeps slow corners of the grid spread over the shards.
 *
 * Ownership: sweep_grid_new / sweep_grid_free; strings returned by getters
 * are borrowed and live as long as the grid; functions returning char * give
 * a dp_malloc'd string the caller dp_frees.
 */
#ifndef DP_SWEEP_H
#define DP_SWEEP_H

#include "dp_common.h"
#include "policy/policy.h"

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#define SWEEP_MAX_AXES   16
#define SWEEP_MAX_VALUES 100000  /* values on one axis */
#define SWEEP_MAX_RUNS   1000000 /* points x policies x seeds in one sweep */
#define SWEEP_MAX_SEEDS  10000

typedef struct sweep_grid sweep_grid;

sweep_grid *sweep_grid_new(dp_err *err);
void sweep_grid_free(sweep_grid *g);
/* Add an axis from "KEY=SPEC" (the text of one --vary).  DP_EINPUT, with a
 * message starting "--vary ARG:", for a bad SPEC, a key given twice, more
 * than SWEEP_MAX_AXES axes, a value listed twice or a grid of more than
 * SWEEP_MAX_RUNS points.  The key is not checked against a scenario here
 * (see sweep_grid_check). */
int sweep_grid_add(sweep_grid *g, const char *arg, dp_err *err);

size_t sweep_grid_n_axes(const sweep_grid *g);
size_t sweep_grid_n_points(const sweep_grid *g); /* product of the axis lengths; 1 with no axis */
const char *sweep_grid_key(const sweep_grid *g, size_t axis);
const char *sweep_grid_spec(const sweep_grid *g, size_t axis);
size_t sweep_grid_n_values(const sweep_grid *g, size_t axis);
const char *sweep_grid_value(const sweep_grid *g, size_t axis, size_t i);
/* Value of `axis` at point `point` (< sweep_grid_n_points). */
const char *sweep_point_value(const sweep_grid *g, size_t point, size_t axis);
/* {"KEY":"VALUE",...}; NULL when out of memory. */
char *sweep_point_json(const sweep_grid *g, size_t point);
/* "KEY=VALUE, KEY=VALUE" for messages and tables; NULL when out of memory. */
char *sweep_point_label(const sweep_grid *g, size_t point);

/* Parse "K/N" (1 <= K <= N <= 1000000).  DP_EINPUT naming the text. */
int sweep_shard_parse(const char *text, unsigned *k, unsigned *n, dp_err *err);
/* The shard of a Slurm job-array task (`--shard slurm`), from the values
 * of SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_COUNT, SLURM_ARRAY_TASK_MIN and
 * SLURM_ARRAY_TASK_STEP (NULL = unset): K = (ID - MIN) / STEP + 1, N =
 * COUNT, so --array=0-15, 1-16 and 0-30:2 all give shards 1..16 of 16.
 * MIN unset counts as 0 and STEP unset as 1.  DP_EINPUT naming the
 * variables when ID or COUNT is unset (not in a job array) or a value is not
 * a number, or when they do not fit (ID below MIN or off the step, K > N:
 * e.g. an array given as a list like 1,5,9, whose ids are not a range). */
int sweep_shard_slurm(const char *id, const char *count, const char *min, const char *step, unsigned *k,
                      unsigned *n, dp_err *err);
/* What `--print-sbatch` writes into the script's sweep command: the
 * sweep's options as parsed (never argv's text).  --print-sbatch, --mpi,
 * --quiet, --jobs, --db and --shard are left out: the script sets them. */
typedef struct sweep_sbatch_spec {
    const char *scenario_abs;          /* SCENARIO made absolute, so tasks find it from any directory */
    const sweep_grid *grid;            /* its axes become --vary KEY=SPEC */
    const policy_def *const *policies; /* --policy's list; n_policies 0: the default (all) */
    size_t n_policies;
    unsigned seeds; /* --seeds (1: left out) */
    int retry_failed, detail;
    const char *const *log; /* each --log as given */
    size_t n_log;
    unsigned tasks; /* the array size written (the user edits it) */
} sweep_sbatch_spec;
/* Write a Slurm job-array script for this sweep to out (`--print-sbatch`).
 * Each task runs its shard (`--shard slurm`) into a database on node-local
 * disk and copies it back; run as `bash SCRIPT` it submits itself as the
 * array and a dependent `dpsim merge` job.  Every value is single-quoted or
 * expanded inside double quotes at run time, so hostile directory or file
 * names ($(...), backquotes, quotes, newlines) stay data. */
int sweep_sbatch_write(FILE *out, const sweep_sbatch_spec *spec, dp_err *err);

/* 1 if point belongs to shard k of n. */
int sweep_in_shard(size_t point, unsigned k, unsigned n);

/* The canonical sweep definition stored in sweeps.spec_json:
 * {"scenario_hash":"16 hex","vary":[["KEY","SPEC"],...],"policies":[...],
 *  "seeds":N}, policies in registry order whatever order they were given
 * in.  Jobs and shard are left out: the shards of one sweep share its
 * identity, which is what lets `dpsim merge` put them back together. */
char *sweep_spec_json(const sweep_grid *g, uint64_t scenario_hash, const policy_def *const *pk, size_t n_pk,
                      unsigned seeds);

/* The scenario a sweep varies: its text read once, so that every point
 * runs the same text even if the file is edited meanwhile. */
typedef struct sweep_source {
    const char *name; /* file name for messages and scenario.path */
    const char *text;
    size_t len;
    const char *base_dir; /* traces resolve against it; NULL = cwd */
} sweep_source;

/* Total device count at a point computed from the base scenario and the
 * point's `devices.NAME.count` values, or -1 when a count value is not a
 * whole number (the loader then reports it). */
long sweep_point_devices(const sweep_grid *g, const scn_scenario *base, size_t point);

/* Check every axis against the scenario: each value, applied alone, must
 * load (unless it leaves no device at all).  So an unknown key or a value
 * the loader rejects in itself is bad usage (DP_EINPUT "--vary KEY=SPEC:
 * value 'V': loader message"), while a combination of good values that
 * does not load or run is stored as a failed point. */
int sweep_grid_check(const sweep_grid *g, const sweep_source *src, const scn_scenario *base, dp_err *err);

typedef struct sweep_cfg {
    sweep_source src;
    const sweep_grid *grid;
    const policy_def *policies[POLICY_MAX];
    size_t n_policies;
    unsigned seeds;            /* asked for (>= 1); see sweep_stats.seeds */
    unsigned jobs;             /* worker processes (>= 1) */
    unsigned shard_k, shard_n; /* 1, 1 = the whole grid */
    const char *db_path;
    int retry_failed;   /* re-run points stored as failed */
    int detail;         /* also store each run's timeline and FLOPS bins (default: metrics,
                           devices and epochs only: a sweep is plotted by its metrics, and
                           the detail rows cost as much to write as a small run to simulate) */
    int progress;       /* 0 none; 1 a bar on a terminal, else a line every 5 s */
    FILE *progress_out; /* NULL = stderr */
    FILE *summary_out;  /* NULL = no summary table */
    /* Set (incremented) by the caller's SIGINT/SIGTERM handler; NULL =
     * never.  1: no new runs start, runs in flight finish and are stored.
     * 2 or more: runs in flight are abandoned (workers killed; nothing
     * partial is stored since each run is one transaction). */
    volatile sig_atomic_t *stop;
    /* Run under MPI (`mpirun -n P dpsim sweep ... --mpi`): every rank calls
     * sweep_run with the same cfg; rank 0 plans, hands out runs one at a
     * time (costliest first) to the other ranks and to a thread of its own,
     * and alone writes db_path; jobs is then unused.  DP_EINPUT in a build
     * without MPI (dpsim_config.h DPSIM_HAVE_MPI 0).  On a rank other than
     * 0, sweep_run returns when rank 0 is done, with stats zero. */
    int mpi;
} sweep_cfg;

typedef struct sweep_stats {
    int64_t sweep_id;
    size_t points;               /* points in this shard */
    size_t points_nodev;         /* skipped: no device at all */
    size_t runs;                 /* runs in this shard: points with devices x policies x seeds */
    size_t runs_before;          /* stored by an earlier invocation, skipped */
    size_t runs_ok, runs_failed; /* run now */
    size_t runs_left;            /* not run (interrupted or a worker died) */
    unsigned seeds;              /* seeds run per point: cfg.seeds, or 1 without randomness */
    int stochastic;              /* the scenario (or an axis) has compute noise */
    int interrupted;
    unsigned jobs;    /* workers actually started */
    double elapsed_s; /* host seconds */
} sweep_stats;

/* Run the sweep: load and check the scenario and grid, register the sweep
 * (store_sweep_get_or_create), skip runs stored already, run the rest in
 * cfg->jobs forked workers that each open their own connection and commit
 * every run (ok or failed) as it completes, report progress, and print the
 * summary per policy to cfg->summary_out.
 * Seeds: the seed only feeds compute noise (docs/MODEL.md section 3; traces are
 * deterministic), so without noise in the scenario or on an axis one seed
 * suffices and only seed 1 runs; otherwise seeds 1..cfg->seeds.
 * Returns 0 when every run of the shard is stored (some may be stored as
 * failed: stats says how many); DP_EINPUT for bad input (nothing run);
 * DP_ERUN when interrupted, when the database fails or a worker dies
 * (runs stored so far stay; running the same sweep again resumes). */
int sweep_run(const sweep_cfg *cfg, sweep_stats *stats, dp_err *err);

/* A sweep over a scenario with jobs (sim/jobs/, jobs.c): each point (and
 * seed) one many-jobs run, stored with its sweep and point; an axis
 * `scheduler` picks the scheduler, the others override the world.  The
 * policies, mpi, detail and retry_failed of cfg are not used (the caller
 * refuses them); a summary table of the stored runs to cfg->summary_out.
 * DP_EINPUT for bad input (nothing run), DP_ERUN when interrupted or the
 * database fails. */
int sweep_jobs_run(const sweep_cfg *cfg, sweep_stats *stats, dp_err *err);

#endif
