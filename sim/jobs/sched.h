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
 */
#ifndef DP_SCHED_H
#define DP_SCHED_H

#include "dp_common.h"

#include <stddef.h>

/* What a scheduler sees of one job at a decision. */
typedef struct sched_job {
    size_t id;           /* position in the scenario's job list (ties break on it) */
    double arrival_s;    /* when it arrived */
    int want;            /* devices it asks for */
    int running;         /* holds devices now */
    double weight;       /* its `weight` (default 1) */
    double attained_s;   /* device-seconds it has held so far (restarts included) */
    double alone_s;      /* the simulator's estimate of its time alone (jobs.h) */
    double remaining_s;  /* alone_s x epochs left / epochs */
    int epochs, epochs_done;
} sched_job;

typedef struct sched_opts {
    double interval_s;  /* decisions every interval (0: at arrivals and ends only) */
    double restart_s;   /* a pre-empted job's restart cost */
    double threshold_s; /* las: device-seconds that move a job to the low-priority queue */
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
} sched_def;

/* The registry: built-in schedulers in a fixed order. */
size_t sched_count(void);
const sched_def *sched_at(size_t i);
const sched_def *sched_find(const char *name);
/* "static, fifo, srf, las, themis" */
void sched_names(char *buf, size_t len, const char *sep);
/* Every scheduler with its summary, for --help. */
void sched_print_help(void *file);

/* Helpers for the plug-ins: sort order[0..m) by cmp (a stable insertion
 * sort: m is the number of jobs waiting or running, small). */
void sched_sort(const sched_job *jobs, size_t m, size_t *order,
                int (*cmp)(const sched_job *a, const sched_job *b, const sched_ctx *c), const sched_ctx *c);
/* Ties: earlier arrival, then lower id. */
int sched_by_arrival(const sched_job *a, const sched_job *b);

#endif
