/* learner.h: real SGD on the simulated schedule (docs/MODEL.md
 * "Learning: time to accuracy").
 *
 * The runtime owns one learner per run when the scenario has `learning:`
 * and feeds it the run's update stream in simulated-time order:
 *   step      device d finished a batch of n (simulated) samples;
 *   sync      a synchronous gradient average among members, applied to the
 *             shared model (DDP, ZeRO, the load balancers);
 *   average   a weighted model average among members (C-ADP, local SGD,
 *             FL-SGD, hierarchical), into the global model and/or back
 *             to the members;
 *   push      an asynchronous gradient of device d applied to the server's
 *             model (staleness: versions since d's pull);
 *   pull      device d copies the server's model;
 *   lose      device d's work since its last pull or average is lost.
 * What a step does depends on the device's mode: SYNC accumulates a
 * gradient at the shared model, LOCAL takes an SGD step on the device's own
 * model, ASYNC accumulates a gradient at the device's pulled copy.
 *
 * Every device draws its samples from its own part of the training set
 * (the partition) in an order from its own seeded stream, so the curve
 * does not depend on how events interleave.  The global model is
 * evaluated on the test split at the instants the scenario asks for
 * (every k epochs, and/or every t simulated seconds), lazily: an
 * evaluation at T sees every update at or before T.
 *
 * Ownership: lrn_cfg_read returns a config freed with lrn_cfg_free; the
 * learner borrows it and the scenario for its life.
 */
#ifndef DP_LEARNER_H
#define DP_LEARNER_H

#include "dp_common.h"
#include "lcompress.h"
#include "scenario.h"

#include <stddef.h>
#include <stdint.h>

typedef enum { LRN_SYNC = 0, LRN_LOCAL = 1, LRN_ASYNC = 2 } lrn_mode;
/* How a synchronous average weighs its members' gradients: PyTorch DDP's
 * mean of per-rank means (a rank with no samples adds zero: Join), or the
 * mean over every sample of the global batch (the load balancers). */
typedef enum { LRN_PER_RANK = 0, LRN_BY_SAMPLES = 1 } lrn_weighting;

typedef struct lrn_cfg lrn_cfg;
typedef struct learner learner;

/* Read and check `learning:` (FILE:LINE:COLUMN messages, DP_EINPUT),
 * loading its data set (DP_EINPUT when missing or malformed).  *out =
 * NULL when the scenario has no `learning:`. */
int lrn_cfg_read(const scn_scenario *s, lrn_cfg **out, dp_err *err);
void lrn_cfg_free(lrn_cfg *c);
/* One line describing the learner for `dpsim check` and run notes. */
void lrn_cfg_describe(const lrn_cfg *c, char *buf, size_t len);

/* A learner for a run of n devices; seed: the run's seed (the partition
 * and the data order use learning.seed when set). */
learner *lrn_new(const lrn_cfg *c, const scn_scenario *s, size_t n, uint64_t seed, dp_err *err);
void lrn_free(learner *L);

/* Every device's mode (before the first update). */
/* LOCAL and ASYNC give every device its own copy of the initial model
 * now (0 or DP_ENOMEM). */
int lrn_set_mode(learner *L, lrn_mode m);
/* The partition "policy" sizes parts by these shares (samples per epoch
 * per device), read at the first update if not set before. */
void lrn_set_shares(learner *L, const int64_t *share);

/* Models and gradients travel compressed (lcompress.h; off until set):
 * from now on every member's contribution to a sync, an average (its
 * begin, for a background one) and a push is what arrives after the
 * transform: the mean (per-rank) or summed (by-samples) gradient, or the
 * model, top-k'd with the device's error-feedback residual added first,
 * or quantised; a model delta-coded against the last one the device sent
 * when c->delta (its first: against the initial model).  The averages
 * sent back to the members travel exact.  0 or DP_ENOMEM. */
int lrn_set_compress(learner *L, const lc_cfg *c);

/* ---- for policies whose decisions read training statistics (AdaCoOpt) --
 * The mean gradient (g: n_params entries, may be NULL) and mean loss of
 * device d's data at its own model (LOCAL, ASYNC; the global model when it
 * has none or at_global) on the k rows it reads next, without consuming
 * them (its stream does not advance).  0 or DP_ENOMEM. */
int lrn_probe(learner *L, size_t d, int at_global, size_t k, double *g, double *loss);
/* Device d's own model (NULL: none yet), the global one, their size. */
const double *lrn_device_weights(const learner *L, size_t d);
size_t lrn_n_params(const learner *L);
/* Device d's local steps use lr x f from now on (default 1). */
int lrn_set_lr_scale(learner *L, size_t d, double f);
/* A model average among members[0..m) with the given weights (summing to
 * anything > 0) instead of the samples since the last average: into the
 * global model and back into every member's (LOCAL). */
int lrn_average_weighted(learner *L, double t, int epoch, const size_t *members, size_t m,
                         const double *weights);

/* ---- groups that push to the global model asynchronously (FedGSync) ----
 * A model average among members[0..m) weighted by the samples each
 * trained on since its last average, back into every member, exact
 * whatever the run's compression (traffic inside a group); the global
 * model untouched, and the version each member last read (its pull) kept.
 * 0 or DP_ENOMEM. */
int lrn_group_average(learner *L, double t, int epoch, const size_t *members, size_t m);
/* Device d's model, as it arrives coded with c (NULL: the run's
 * compression; c->delta: against the last model d sent, the initial model
 * first), mixed into the global model: global = (1 - alpha) global +
 * alpha x.  Returns the staleness (updates of the global model since d's
 * last pull) or a negative DP_E*. */
long lrn_merge(learner *L, double t, int epoch, size_t d, double alpha, const lc_cfg *c);
/* A regional server's average that includes the global model it received
 * (regional, wan: async): each member's model moved to (1 - beta) x its
 * own + beta x the global model, exact; the global model untouched.  0 or
 * a negative DP_E*. */
int lrn_mix_global(learner *L, double t, int epoch, const size_t *members, size_t m, double beta);

/* The stream; t is absolute simulated time, epoch 1-based.  Each returns
 * 0 or a negative DP_E* (out of memory). */
int lrn_step(learner *L, double t, int epoch, size_t d, double samples);
int lrn_sync(learner *L, double t, int epoch, const size_t *members, size_t m, lrn_weighting w);
int lrn_average(learner *L, double t, int epoch, const size_t *members, size_t m, int into_global,
                int to_members);
/* A background average (FL-SGD): begin snapshots each member's model and
 * the samples it trained on since its last snapshot; end averages the
 * snapshots into the global model and moves every member to that average
 * plus its own steps since the snapshot (a one-period-stale average). */
int lrn_average_begin(learner *L, double t, int epoch, const size_t *members, size_t m);
int lrn_average_end(learner *L, double t, int epoch, const size_t *members, size_t m);
/* Returns the push's staleness (>= 0), or a negative DP_E*. */
long lrn_push(learner *L, double t, int epoch, size_t d);
int lrn_pull(learner *L, double t, size_t d);
int lrn_lose(learner *L, double t, size_t d);
/* A checkpoint of the global model is written now; a restart loads it on
 * every device (pending gradients dropped). */
int lrn_checkpoint(learner *L);
int lrn_restore(learner *L, double t, int epoch);
/* A job's run in a world of many jobs (sim/jobs, docs/MODEL.md "Many jobs
 * in one world") starts at t, not 0: its evaluations restart there (the
 * one at 0 dropped, one at t), the time-based ones at next_t (NAN: t +
 * learning.evaluate.every).  A resumed run (after a pre-emption) also
 * loads w (its checkpoint: the global model at the job's last completed
 * epoch; NULL keeps the initial model), counts `consumed` samples before
 * it, and keeps the targets reached before (tta: n_targets absolute
 * times, NAN not reached; NULL none).  Before the first update.  0 or a
 * negative DP_E*. */
int lrn_resume(learner *L, double t, int epoch, const double *w, double consumed, double next_t,
               const double *tta);
/* The time-based evaluations due up to t, and no other (a job's run
 * stopped by its scheduler: the model in flight is not its checkpoint). */
int lrn_flush(learner *L, double t, int epoch);
/* Training samples consumed so far; the next time-based evaluation. */
double lrn_consumed(const learner *L);
double lrn_next_eval(const learner *L);
/* Evaluations due at an epoch's end (learning.evaluate.epochs). */
int lrn_epoch_end(learner *L, double t, int epoch);
/* The run ended at t: the evaluations due up to t, and a final one at t
 * if the last evaluation was before it. */
int lrn_finish(learner *L, double t, int epoch);
/* 1 once every target is reached and learning.stop_at_target is set. */
int lrn_done(const learner *L);

/* Results. */
typedef struct lrn_eval {
    double t_s;        /* simulated time */
    double epochs;     /* epoch-equivalents: training samples consumed / training set size */
    double samples;    /* training samples consumed by updates so far */
    int epoch;         /* the simulation's epoch then */
    double test_acc;   /* accuracy on the test split */
    double test_loss;  /* mean cross-entropy on the test split */
    double train_loss; /* mean cross-entropy on (up to 10,000 rows of) the training split */
} lrn_eval;
size_t lrn_n_evals(const learner *L);
const lrn_eval *lrn_evals(const learner *L);
size_t lrn_n_targets(const learner *L);
double lrn_target(const learner *L, size_t k);
/* Time of the first evaluation at or above target k, or NAN when none. */
double lrn_tta(const learner *L, size_t k);
/* The global model's weights (tests). */
const double *lrn_weights(const learner *L, size_t *n_params);
/* Largest staleness seen by a push, and the number of pushes. */
long lrn_max_staleness(const learner *L);

/* The next k sample indices (into the training split) device d reads,
 * advancing its stream as a step would (tests build the plain serial SGD
 * loop a one-device schedule must equal from a second learner). */
int lrn_draw(learner *L, size_t d, size_t k, size_t *idx);
/* A short pass's order as the learner computes it (learner.c): perm as
 * gsl_ran_shuffle leaves it with GSL's mt19937 seeded with s; 1 (perm
 * untouched) when the pass is too long for that way (tests). */
int lrn_test_pass_order(size_t *perm, size_t len, unsigned long s);
/* The learner's data set and model shapes (tests). */
const struct ldata *lrn_data(const learner *L);
struct lmodel *lrn_model(learner *L);
double lrn_lr(const learner *L, int epoch);

#endif
