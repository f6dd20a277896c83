/* jobs.h: many training jobs in one world (issue 31; docs/MODEL.md "Many
 * jobs in one world", scenarios/README.md "Jobs").
 *
 * A scenario with `jobs:` describes one world (devices, links, sites,
 * server, outages, device failures) and a list of jobs (or a job trace file), each with its
 * arrival, policy, device count (or, for the static partition, its device
 * groups) and its own settings as overrides of the scenario (model,
 * dataset, training, policy options).  One engine and one network run all
 * of them: each job's policy runs on the devices its scheduler gives it
 * (sim/policy/jobrt.h), and all jobs' flows share links by the network's
 * max-min model.  A cluster scheduler (sched.h) decides at arrivals, ends
 * and every `scheduler.interval`.
 *
 * Ownership: jobs_load returns a spec the caller frees (jobs_free), which
 * borrows the scenario; jobs_run returns a result (jobs_result_free).
 */
#ifndef DP_JOBS_H
#define DP_JOBS_H

#include "learn/efficiency.h"
#include "policy/policy.h"
#include "jobs_results.h"
#include "sched.h"

/* One job as the scenario (or its trace) gives it. */
typedef struct job_spec {
    char name[64];
    double arrival_s;
    const policy_def *policy;
    int want;             /* devices */
    size_t *pinned;       /* static: its devices (world indices, ascending), want of them; else NULL */
    double weight;        /* default 1 */
    int min_dev, max_dev; /* `min_devices`, `max_devices` (0: not stated; jobs_range) */
    eff_params *eff;      /* `efficiency` (NULL: none, statistical efficiency 1) */
    scn_scenario *scn;    /* its scenario over the whole world (shared between jobs of equal settings) */
    int line, column;     /* where it is written (messages) */
    int dline, dcol;      /* where its device count is written */
} job_spec;

typedef struct jobs_spec {
    const scn_scenario *world; /* borrowed */
    size_t n;
    job_spec *jobs;
    const sched_def *sched; /* `scheduler:` (default fifo) */
    sched_opts opts;
    double arrival_scale; /* scheduler.arrival_scale: every arrival time times this (default 1) */
    size_t n_scn;
    scn_scenario **scns;          /* the distinct job scenarios (owned) */
    char **keys;                  /* each one's settings, "KEY=VALUE\n"... */
    char *trace;                  /* the job trace read (its path), NULL: jobs from the YAML list */
    const scn_override *world_ov; /* jobs_load_ov's, during the load only */
    size_t n_world_ov;
} jobs_spec;

/* The device counts job j may run on under scheduler sd: its
 * min_devices..max_devices under an elastic scheduler (allocate), by
 * default 1..4 x want (at most the world's devices); want..want under the
 * others. */
void jobs_range(const jobs_spec *js, size_t j, const sched_def *sd, int *lo, int *hi);

/* 1 when the scenario has `jobs:`. */
int jobs_in(const scn_scenario *s);
/* Read and check `jobs:` and `scheduler:` (DP_EINPUT: FILE:LINE:COL:
 * key: what; a trace's cells by their line and column).  NULL with err. */
jobs_spec *jobs_load(const scn_scenario *s, dp_err *err);
/* The same for a world loaded with overrides ov[0..n_ov) (`--set`, a sweep
 * point): every job's scenario gets them too, before its own settings (a
 * job's scenario is the world's text loaded again).  ov is borrowed for
 * the call only. */
jobs_spec *jobs_load_ov(const scn_scenario *s, const scn_override *ov, size_t n_ov, dp_err *err);
void jobs_free(jobs_spec *js);

/* The Pollux workload applications (`name,time,application,num_replicas,
 * batch_size`) and the dpsim model each stands for. */
typedef struct jobs_app {
    const char *app;   /* as in the trace */
    const char *model; /* `model.preset` of presets.yaml */
    int epochs;        /* training.epochs given to it */
    const char *note;
    int init_batch; /* Pollux's initial batch: the reference batch M0 of its trace */
} jobs_app;
size_t jobs_app_count(void);
const jobs_app *jobs_app_at(size_t i);
/* The overrides application i sets (NULL-terminated "KEY=VALUE"). */
const char *const *jobs_app_overrides(size_t i);
/* Application i's measured gradient statistics at its initial batch
 * (traces/pollux/APP.csv, built into the binary: a Pollux CSV,
 * eff_params_parse_pollux); *len its bytes. */
const char *jobs_app_trace(size_t i, size_t *len);

/* Run every job of js under scheduler sd (NULL: the spec's) with seed.
 * NULL with err (DP_ERUN: a job failed or the world stalled, DP_EINPUT: a
 * job's policy refuses its devices). */
jobs_result *jobs_run(const jobs_spec *js, const sched_def *sd, uint64_t seed, dp_err *err);

/* The time of job j alone on devices[0..n) of the world (the estimate the
 * schedulers read): a single-job run of its policy.  NAN with err. */
double jobs_alone_s(const jobs_spec *js, size_t j, uint64_t seed, dp_err *err);
/* The same on the first n devices of the world (elastic schedulers). */
double jobs_alone_k(const jobs_spec *js, size_t j, int n, uint64_t seed, dp_err *err);

/* The job's scenario restricted to devices map[0..k) of the world (in
 * that order), for a run on them: a struct that borrows everything from
 * js->jobs[j].scn except its groups' counts and its device list. */
scn_scenario *jobs_sub_scenario(const scn_scenario *job, const size_t *map, size_t k, dp_err *err);
void jobs_sub_free(scn_scenario *sub);

#endif
