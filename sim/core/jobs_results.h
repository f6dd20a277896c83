/* jobs_results.h: what a run of many jobs in one world produces (sim/jobs/
 * makes it, the store keeps it, plots read it): plain structs, like a
 * single run's results.h. */
#ifndef DP_JOBS_RESULTS_H
#define DP_JOBS_RESULTS_H

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
} job_out;

/* Job `job` held device `device` over [t0, t1) (t1 - t0 includes a restart's load time). */
typedef struct job_alloc {
    size_t job, device;
    double t0, t1;
} job_alloc;

typedef struct jobs_result {
    char scheduler[32];
    uint64_t seed;
    size_t n_devices, n_jobs, n_allocs;
    job_out *jobs;
    job_alloc *allocs;
    double makespan_s;            /* last end (from t = 0) */
    double mean_jct_s, p50_jct_s, p95_jct_s, p99_jct_s, max_jct_s;
    double util_alloc;            /* device-seconds held / (devices x makespan) */
    double util_busy;             /* device-seconds computing / (devices x makespan) */
    double jain;                  /* Jain's index of alone / jct over the jobs */
    double mean_rho, max_rho;
    uint64_t events;
} jobs_result;

void jobs_result_free(jobs_result *r);

#endif
