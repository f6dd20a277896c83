/* jobs_results.h: what a run of many jobs in one world produces (sim/jobs/
 * makes it, the store keeps it, plots read it): plain structs, like a
 * single run's results.h. */
#ifndef DP_JOBS_RESULTS_H
#define DP_JOBS_RESULTS_H

#include "results.h"

#include <stddef.h>
#include <stdint.h>

typedef struct job_out {
    char name[64];
    char policy[32];
    int devices; /* asked for */
    int epochs;
    double arrival_s, start_s, end_s;
    double jct_s;     /* end - arrival */
    double queue_s;   /* first start - arrival */
    double wait_s;    /* time without devices (queueing + pre-empted) */
    double alone_s;   /* the simulator's estimate alone */
    double rho;       /* jct / alone (finish-time fairness) */
    double device_s;  /* device-seconds held */
    double compute_s; /* device-seconds computing */
    double bytes;     /* bytes its flows moved (as a run's bytes_total) */
    double tsend_s;   /* its first run's Tsend, from its start */
    double tflops;    /* its last run's TFLOPS */
    int preemptions;
    double final_acc; /* learning: the last evaluation's test accuracy (NAN without learning:) */
} job_out;

/* Job `job` (learning:) first reached test accuracy `target` tta_s after
 * its arrival (NAN: never). */
typedef struct job_tta {
    size_t job;
    double target, tta_s;
} job_tta;

/* A figure job `job`'s policy recorded in its run `run` (0: its first;
 * one more after each pre-emption), as a single run's statistics
 * (results.h res_stat); device indices (scopes device, device_epoch) are
 * the world's. */
typedef struct job_stat {
    size_t job;
    int run;
    res_stat s;
} job_stat;

/* Job `job` held device `device` over [t0, t1) (t1 - t0 includes a restart's load time). */
typedef struct job_alloc {
    size_t job, device;
    double t0, t1;
} job_alloc;

typedef struct jobs_result {
    char scheduler[32];
    uint64_t seed;
    size_t n_devices, n_jobs, n_allocs, n_tta, n_stats;
    job_out *jobs;
    job_alloc *allocs;
    job_tta *tta;      /* by job, then target */
    job_stat *stats;   /* by job, run, then as recorded */
    double makespan_s; /* last end (from t = 0) */
    double mean_jct_s, p50_jct_s, p95_jct_s, p99_jct_s, max_jct_s;
    double util_alloc; /* device-seconds held / (devices x makespan) */
    double util_busy;  /* device-seconds computing / (devices x makespan) */
    double jain;       /* Jain's index of alone / jct over the jobs */
    double mean_rho, max_rho;
    uint64_t events;
} jobs_result;

void jobs_result_free(jobs_result *r);

#endif
