/* jobrt.h: one policy run as a job inside a shared world (sim/jobs/).
 *
 * A job is a runtime (prt) over a view of the shared world (world.h,
 * world_new_view): its devices are some of the world's, its network is the
 * world's, so its flows share links with every other job's by the
 * network's one sharing model; its engine is its own clock domain
 * (engine_group.h).  The driver (sim/jobs/) steps the engines itself and
 * asks a job whether it ended when its engine asked to stop; a job stopped
 * by the scheduler is detached (nothing of it calls back any more) and
 * freed.
 *
 * Ownership: pjob_start takes the view (freed with the job, also on
 * failure); pjob_results hands over the job's results.
 */
#ifndef DP_JOBRT_H
#define DP_JOBRT_H

#include "policy.h"
#include "world.h"

typedef struct pjob pjob;
struct learner;

/* A job's learning across its runs (scenario `learning:`; docs/MODEL.md
 * "Many jobs in one world"): the driver keeps one per job, every run of
 * the job reads and writes it.  A run's learner starts at the run's start
 * from the job's checkpoint (w: the global model as of the job's last
 * completed epoch; NULL: the initial model) with its epochs counted on
 * from `epochs`; every epoch's end writes the checkpoint; a run's end
 * writes the next time-based evaluation and the targets reached. */
typedef struct pjob_learn {
    double *w; /* n_params (NULL until an epoch ended) */
    size_t n_params;
    double consumed; /* training samples consumed as of w */
    double next_t;   /* the next time-based evaluation when the last run ended */
    double *tta;     /* n_targets: when each target was first reached (absolute; NAN: not yet) */
    size_t n_targets;
    int epochs;  /* epochs completed before the run to start (the driver sets it) */
    int started; /* runs started */
} pjob_learn;
/* The learner's model and samples now into the checkpoint (an epoch's
 * end, learn_stream.c).  0 or DP_ENOMEM. */
int pjob_learn_keep(pjob_learn *pl, const struct learner *L);
void pjob_learn_free(pjob_learn *pl);

/* Options, check and plan of p on the job's scenario s (its devices only),
 * then a runtime on `view` and the policy's start at the engine's now;
 * with `learning:`, its learner resumes from pl (borrowed for the run's
 * life; NULL: a fresh learner from t = 0).  NULL with err set (DP_EINPUT:
 * the policy refuses the scenario). */
pjob *pjob_start(const policy_def *p, const scn_scenario *s, uint64_t seed, world *view, pjob_learn *pl,
                 dp_err *err);
/* 0 running, 1 ended (the policy finished its training), or the failure's
 * (negative) code, its message in pjob_error. */
int pjob_status(const pjob *j);
const dp_err *pjob_error(const pjob *j);
/* The shared world's device k of the job (its k-th) went down (up = 0)
 * or came back, next_s its next change (INFINITY: none): the job's view
 * changes with it (world_dev_set: its transfers there cut) and its
 * runtime reacts as a single run's does to a failure (its policy's
 * recovery).  Only in worlds with failures. */
void pjob_device(pjob *j, size_t k, int up, double next_s);
/* Clock domains (engine_group.h): the run's view has its own engine (the
 * driver's world_view_set_engine), whose local 0 is the global time
 * pjob_origin; every time of the run (its results, its learner) is local,
 * a pjob_learn's are global.  When its engine asked to stop, the driver
 * calls pjob_boundary if pjob_boundary_due (an epoch boundary where a
 * single run's clock would restart: so does the run's), with the run's
 * domain current.  0 or DP_ENOMEM (the run failed). */
double pjob_origin(const pjob *j);
int pjob_boundary_due(const pjob *j);
int pjob_boundary(pjob *j);
/* Epochs the job completed so far. */
int pjob_epochs_done(const pjob *j);
/* An ended job's results (caller frees); the job is detached. */
res_run *pjob_results(pjob *j);
/* Detach (nothing of it runs any more) and free its policy's state.  Its
 * runtime stays: events of it may still be queued in its engine (the
 * driver retires that engine: they never run), so free it only with the
 * engines. */
void pjob_stop(pjob *j);
/* Stop (if still running) and free. */
void pjob_free(pjob *j);

#endif
