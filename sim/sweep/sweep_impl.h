/* sweep_impl.h: what the parts of the sweep module share (grid.c, plan and
 * summary in run.c, the worker pool in pool.c).  Not for other modules. */
#ifndef DP_SWEEP_IMPL_H
#define DP_SWEEP_IMPL_H

#include "store/store.h"
#include "sweep/sweep.h"

#include <stdint.h>

/* One run of the shard: tasks[(lp * n_policies + pi) * seeds + seed - 1]. */
typedef struct task {
    size_t point;  /* grid index */
    size_t lp;     /* index among the shard's points with devices */
    uint32_t seed; /* 1.. */
    uint8_t pi;    /* index into plan.pk */
    int8_t state;  /* 0 not stored, 1 stored ok, 2 stored failed */
} task;

typedef struct plan {
    const sweep_cfg *cfg;
    scn_scenario *base;
    const policy_def *pk[POLICY_MAX]; /* cfg's policies in registry order */
    size_t n_pk;
    unsigned seeds;
    int stochastic;
    char *spec_json;
    int64_t sweep_id;
    size_t *lpoints; /* grid index of each shard point with devices */
    size_t n_lpoints;
    size_t n_shard_points;
    size_t n_nodev, nodev_first[3];
    task *tasks;
    size_t n_tasks;
    size_t *pending; /* indices into tasks still to run */
    size_t n_pending;
} plan;

/* Outcomes of stored runs, read back for the resume check and the summary. */
typedef struct outcome {
    double *ttotal; /* per task, NaN unless ok; may be NULL */
    size_t n_ex;    /* failed examples kept */
    size_t ex_task[3];
    char ex_msg[3][320];
} outcome;

/* grid.c: the overrides of a point (one per axis), and the scenario loaded
 * with them and its policies' options checked. */
void sweep_point_overrides(const sweep_grid *g, size_t point, scn_override *ov);
scn_scenario *sweep_load_src(const sweep_source *src, const scn_override *ov, size_t n, dp_err *err);

/* pool.c: host clock (monotonic seconds) and UTC time as ISO 8601. */
double sweep_wall_s(void);
void sweep_now_iso(char *buf, size_t len);

/* pool.c: run p's pending tasks in cfg->jobs forked workers, with progress;
 * counts into stats.  0, or DP_ERUN when interrupted or a worker died. */
int sweep_run_workers(plan *p, sweep_stats *stats, dp_err *err);

#endif
