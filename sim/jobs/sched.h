/* sched.h: cluster schedulers, as plug-ins (the same registry pattern as
 * the policies, sim/policy/policy.h).
 *
 * A scheduler decides which jobs hold devices.  At each decision (a job
 * arrives, a job ends, and every `scheduler.interval`) the driver
 * (jobs_run.c) hands it the jobs that have arrived and not ended, and the
 * scheduler orders them, most urgent first.  The driver then walks that
 * order and gives each job the devices it asks for while they last
 * (`strict`: the first job that does not fit stops the walk, FIFO's
 * head-of-line rule; otherwise later jobs that fit go ahead).  A running
 * job left out is pre-empted (only schedulers with `preempt`; the others
 * keep every running job): it keeps the epochs it completed (a checkpoint
 * at each epoch end), and when it runs again it first waits
 * `scheduler.restart` seconds on its new devices (loading the checkpoint),
 * then its policy starts again (data distribution included) for the epochs
 * left.  Schedulers see only the figures below; they never touch the
 * simulation, so a new one is one file (docs/MODEL.md, "Many jobs").
 *
 * An elastic scheduler (`allocate` set: pollux) also chooses how many
 * devices each job gets, between its min_dev and max_dev: the driver then
 * gives each job of count > 0 that many devices (walking the order, which
 * decides whose devices are the lowest free ones), pre-empts the running
 * jobs of count 0, and re-allocates a running job whose count changed
 * (stopped and restarted on its new count: the same checkpoint and
 * `restart` as a pre-emption).  The others leave allocate NULL and jobs
 * get `want` devices, as above.
 */
#ifndef DP_SCHED_H
#define DP_SCHED_H

#include "dp_common.h"

#include <stddef.h>

/* What a scheduler sees of one job at a decision. */
typedef struct sched_job {
    size_t id;          /* position in the scenario's job list (ties break on it) */
    double arrival_s;   /* when it arrived */
    int want;           /* devices it asks for */
    int running;        /* holds devices now */
    double weight;      /* its `weight` (default 1) */
    double attained_s;  /* device-seconds it has held so far (restarts included) */
    double alone_s;     /* the simulator's estimate of its time alone (jobs.h) */
    double remaining_s; /* alone_s x epochs left / epochs */
    int epochs, epochs_done;
    /* elastic schedulers (allocate): */
    int min_dev, max_dev; /* the counts it may run on (want..want unless it states them) */
    int held;             /* devices it holds now (0 when waiting) */
    int resumes;          /* it ran before: any start costs `restart` (its checkpoint's load) */
    double in_epoch_s;    /* running: seconds into its current epoch (the work a stop loses; an estimate) */
    const double
        *alone_k; /* [k]: its time alone on k devices, k in min_dev..max_dev (NAN: cannot run on k) */
    const double *batch_k; /* [k]: its global batch on k devices (samples per step) */
    double ref_batch;      /* M0 of its `efficiency` (0: none: statistical efficiency 1) */
    double noise_scale;    /* B, the gradient noise scale now (its epoch's, or its trace's at its progress) */
} sched_job;

typedef struct sched_opts {
    double interval_s;  /* decisions every interval (0: at arrivals and ends only) */
    double restart_s;   /* a pre-empted (or re-allocated) job's restart cost */
    double threshold_s; /* las: device-seconds that move a job to the low-priority queue */
    int to_progress;    /* `train_to: progress`: a job with an efficiency trains to a progress (jobs_run.c) */
} sched_opts;

typedef struct sched_ctx {
    double now_s;
    size_t n_devices;
    const sched_opts *opts;
} sched_ctx;

typedef struct sched_def {
    const char *name;    /* scenario `scheduler: NAME`, `--scheduler` */
    const char *label;   /* for tables and plots */
    const char *color;   /* gnuplot colour of its curve (dpsim plot jobs) */
    const char *summary; /* one line for --help */
    int strict;          /* the first job that does not fit blocks the ones after it */
    int preempt;         /* may take devices from a running job */
    int pinned;          /* every job names its devices (`groups:`), claims disjoint */
    int needs_alone;     /* reads alone_s / remaining_s (else they are estimated only for the outputs) */
    /* Order jobs[0..m) (those arrived and not ended), most urgent first:
     * order[k] is an index into jobs.  A total order: break ties on id. */
    void (*order)(const sched_ctx *c, const sched_job *jobs, size_t m, size_t *order);
    /* Elastic schedulers only (NULL for the others): count[k] devices for
     * jobs[k] (0: none, else min_dev..max_dev), the counts summing to at
     * most n_devices.  Called after order. */
    void (*allocate)(const sched_ctx *c, const sched_job *jobs, size_t m, int *count);
} sched_def;

/* The registry: built-in schedulers in a fixed order. */
size_t sched_count(void);
const sched_def *sched_at(size_t i);
const sched_def *sched_find(const char *name);
/* "static, fifo, srf, las, themis, pollux" */
void sched_names(char *buf, size_t len, const char *sep);
/* Every scheduler with its summary, for --help. */
void sched_print_help(void *file);

/* Helpers for the plug-ins: sort order[0..m) by cmp (a stable insertion
 * sort: m is the number of jobs waiting or running, small). */
void sched_sort(const sched_job *jobs, size_t m, size_t *order,
                int (*cmp)(const sched_job *a, const sched_job *b, const sched_ctx *c), const sched_ctx *c);
/* Ties: earlier arrival, then the higher weight, then lower id. */
int sched_by_arrival(const sched_job *a, const sched_job *b);

/* Pollux's pieces (sched_pollux.c), for tests: job j's speedup on k
 * devices over its fair share `fair` (restart charged as the scheduler
 * does), and its fair share when `served` jobs share n_devices. */
double sched_pollux_speedup(const sched_job *j, int k, int fair, double restart_s);
int sched_pollux_fair(const sched_job *j, size_t n_devices, size_t served);

#endif
