/* sweep_impl.h: what the parts of the sweep module share (grid.c, plan and
 * summary in run.c, the worker pool in pool.c).  Not for other modules. */
#ifndef DP_SWEEP_IMPL_H
#define DP_SWEEP_IMPL_H

#include "store/store.h"
#include "sweep/sweep.h"

#include <stdint.h>

/* Test-only (tests/e2e_mpi.sh, e2e_sweep.sh): DPSIM_TEST_RAISE=RANK:N:SIG
 * makes a sweep raise signal SIG on itself at a known point, where a test
 * would otherwise race the clock to signal it from outside.  worker 0: the
 * process that stores or counts the runs (a local sweep's parent, MPI rank
 * 0) once N runs are done; worker 1: an MPI worker rank RANK as it receives
 * its task number N (from 0; that task is then in flight).  rank: this
 * process's MPI rank (0 for a local sweep). */
void sweep_test_raise(int rank, long count, int worker);

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

/* pool.c: progress on stderr (or cfg->progress_out): a bar on a terminal,
 * else a line every 5 s; shared by the forked pool and the MPI executor. */
typedef struct sweep_progress {
    FILE *out;
    int on, tty, drawn;
    double t0, last;
    size_t total, done, failed;
    size_t points_total, points_done;
} sweep_progress;
void sweep_progress_draw(sweep_progress *pg, int final);

/* pool.c: run p's pending tasks in cfg->jobs forked workers, with progress;
 * counts into stats.  0, or DP_ERUN when interrupted or a worker died. */
int sweep_run_workers(plan *p, sweep_stats *stats, dp_err *err);

/* wire.c: a run as bytes (little-endian, doubles bit for bit) for the MPI
 * executor, and back.  pack: *out is a dp_malloc'd buffer the caller
 * frees.  unpack: *out a new run (res_run_free); DP_ERUN for bytes that are
 * truncated, corrupt or from another wire version. */
int sweep_wire_pack_run(const res_run *r, uint8_t **out, size_t *len, dp_err *err);
int sweep_wire_unpack_run(const uint8_t *buf, size_t len, res_run **out, dp_err *err);

/* grid.c: a cheap estimate of what a run of scenario s costs, from its
 * structure alone (nothing is simulated): epochs x iterations per epoch x
 * devices^2, an iteration being the dataset over the devices' summed
 * batches, and the square because a ring collective takes steps in
 * proportion to the devices, for each device (devices alone where rings
 * run in closed form, one event per collective: coll_closed_form_possible).
 * Coarse (it ignores the
 * policy and link speeds, and a mix of slow CPUs with small batches costs
 * more than it says); only its order matters: the MPI executor hands out
 * the costliest runs first, so that a slow point does not start last and
 * finish after everything else. */
double sweep_cost_estimate(const scn_scenario *s);

/* mpi.c (builds with MPI only, DPSIM_HAVE_MPI): the executor of
 * `sweep --mpi`.  sweep_mpi_init: MPI_Init_thread (once) and this rank's
 * number and the world size.  sweep_mpi_worker: a rank other than 0 serves
 * runs until rank 0 says stop; it never opens the database.
 * sweep_mpi_master: rank 0 hands p's pending tasks to the other ranks and
 * to a thread of its own, stores what comes back, draws progress; 0, or
 * DP_ERUN when interrupted, a rank died (its run in flight is left for a
 * resume) or the database failed.  sweep_mpi_end(e, err): on rank 0,
 * tells workers that are still waiting to stop (when sweep_mpi_master did
 * not run, e.g. bad input), then MPI_Finalize; but when a rank died (or on
 * a second interrupt) it prints err and ends the job with MPI_Abort, since
 * MPI_Finalize can wait for a dead rank forever. */
int sweep_mpi_init(int *rank, int *size, dp_err *err);
int sweep_mpi_worker(const sweep_cfg *c, dp_err *err);
int sweep_mpi_master(plan *p, sweep_stats *stats, dp_err *err);
void sweep_mpi_end(int e, const dp_err *err);

#endif
