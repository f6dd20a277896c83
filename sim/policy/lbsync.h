/* lbsync.h: the load-balancing family (equal_finish, dlb, lbbsp, lbb), for
 * its four policy files.  Synchronous SGD with a fixed global batch B per
 * iteration: device i computes b_i samples (sum b_i = B), then gradients
 * are all-reduced exactly as DDP does (sync.c's buckets, overlap, ring
 * flows or analytic collectives; the b_i / B weighting costs nothing).  An
 * epoch is ceil(D / B) iterations; the last one splits the remainder
 * D - (ceil(D/B) - 1) B by the current shares.
 *
 * A policy is an lb_method: where it starts (init) and how it re-sizes
 * after an iteration (iter_end) or an epoch (epoch_end).  lbsync.c keeps
 * the rest: cost models for any batch size, the memory cap per device,
 * water-filling solvers, largest-remainder rounding, shard transfers at
 * epoch boundaries, and the statistics per device and epoch (batch_mean,
 * batch_min, batch_max, wait_s) plus the run's `rebalances`.
 *
 * Units: seconds, samples.  Ownership: lb_start allocates the state the
 * runtime holds (prt_state is sync.c's; the lb is its hooks' ctx), lb_free
 * releases both.
 */
#ifndef DP_LBSYNC_H
#define DP_LBSYNC_H

#include "sync.h"

#include <stddef.h>
#include <stdint.h>

/* policies.NAME for the whole family: the common keys, then each
 * policy's own (unused ones keep their defaults). */
typedef struct lb_opts {
    int global_batch;         /* samples per iteration; 0 = sum of the devices' batch */
    int data;                 /* prt_data_mode */
    double bucket_bytes;      /* as DDP */
    int overlap;              /* as DDP */
    double backward_fraction; /* as DDP */
    int collective;           /* prt_coll_mode */
    double alpha;             /* lbbsp: weight of the newest speed */
    double threshold;         /* lbb: relative gap that triggers a re-solve */
    int window;               /* lbb: (batch, time) pairs per device in the fit */
    int quantum;              /* lbb: samples moved otherwise */
    int locality;             /* the split pays for the samples a device must move (data: shard) */
    sync_fail_cfg fail;       /* worlds with failures: as DDP */
} lb_opts;

/* The common rows of each option table (a macro: tables are static arrays). */
#define LB_COMMON_OPTS                                                                                       \
    {"global_batch",                                                                                         \
     NULL,                                                                                                   \
     POPT_INT,                                                                                               \
     SCN_UNIT_NUMBER,                                                                                        \
     offsetof(lb_opts, global_batch),                                                                        \
     0,                                                                                                      \
     0,                                                                                                      \
     1e9,                                                                                                    \
     NULL,                                                                                                   \
     "samples per iteration over all devices (0: the sum of the devices' batch)"},                           \
        {"data",                                                                                             \
         NULL,                                                                                               \
         POPT_ENUM,                                                                                          \
         SCN_UNIT_NUMBER,                                                                                    \
         offsetof(lb_opts, data),                                                                            \
         PRT_DATA_REPLICATE,                                                                                 \
         0,                                                                                                  \
         0,                                                                                                  \
         popt_data_names,                                                                                    \
         "replicate: every device receives the dataset; shard: only the samples of its epoch share"},        \
        {"bucket",                                                                                           \
         "bucket_bytes",                                                                                     \
         POPT_QUANTITY,                                                                                      \
         SCN_UNIT_BYTES,                                                                                     \
         offsetof(lb_opts, bucket_bytes),                                                                    \
         25.0 * 1048576,                                                                                     \
         0,                                                                                                  \
         1e15,                                                                                               \
         NULL,                                                                                               \
         "gradient bucket size, as DDP"},                                                                    \
        {"overlap",                                                                                          \
         NULL,                                                                                               \
         POPT_BOOL,                                                                                          \
         SCN_UNIT_NUMBER,                                                                                    \
         offsetof(lb_opts, overlap),                                                                         \
         1,                                                                                                  \
         0,                                                                                                  \
         0,                                                                                                  \
         NULL,                                                                                               \
         "bucket all-reduces overlap the backward pass, as DDP"},                                            \
        {"backward_fraction",                                                                                \
         NULL,                                                                                               \
         POPT_QUANTITY,                                                                                      \
         SCN_UNIT_NUMBER,                                                                                    \
         offsetof(lb_opts, backward_fraction),                                                               \
         2.0 / 3.0,                                                                                          \
         0,                                                                                                  \
         1,                                                                                                  \
         NULL,                                                                                               \
         "share of a batch's time spent in the backward pass"},                                              \
        {"collective",                                                                                       \
         NULL,                                                                                               \
         POPT_ENUM,                                                                                          \
         SCN_UNIT_NUMBER,                                                                                    \
         offsetof(lb_opts, collective),                                                                      \
         PRT_COLL_FLOWS,                                                                                     \
         0,                                                                                                  \
         0,                                                                                                  \
         popt_collective_names,                                                                              \
         "flows: ring rounds as network flows; analytic: closed form, no sharing"},                          \
        {"locality",                                                                                         \
         NULL,                                                                                               \
         POPT_BOOL,                                                                                          \
         SCN_UNIT_NUMBER,                                                                                    \
         offsetof(lb_opts, locality),                                                                        \
         0,                                                                                                  \
         0,                                                                                                  \
         0,                                                                                                  \
         NULL,                                                                                               \
         POPT_OPTIONAL                                                                                       \
         "with data: shard, the split pays for moving the samples a device does not hold "                   \
         "(from its nearest holder): it minimises moving time + iterations left x iteration time"},          \
        POPT_SYNC_FAILURE_ROWS(lb_opts, fail)

typedef struct lb lb;

typedef struct lb_method {
    /* Fill lb_x (the continuous target batch per device, summing to B) for
     * the first iteration.  0 or an error (message in prt_err). */
    int (*init)(lb *st);
    /* After each iteration (measured times in lb_t); may change lb_x and
     * then calls lb_apply.  NULL: nothing. */
    int (*iter_end)(lb *st);
    /* After each epoch but the last (compute time in lb_epoch_t). NULL: nothing. */
    int (*epoch_end)(lb *st);
    void *(*alloc)(lb *st); /* the method's own state (NULL method: none) */
    void (*free)(void *p);
} lb_method;

int lb_check(const scn_scenario *s, const char *policy, const lb_opts *o, dp_err *err);
int lb_start(prt *rt, const lb_opts *o, const lb_method *m);
/* The family's hooks, for a member whose policy_def.family is its
 * lb_method: LB_POLICY_HOOKS fills check, start, free and on_device. */
int lb_policy_check(const policy_def *p, const scn_scenario *s, const void *opts, dp_err *err);
int lb_policy_start(prt *rt, const void *opts);
void lb_policy_free(prt *rt, const void *opts);
#define LB_POLICY_HOOKS                                                                                      \
    .check = lb_policy_check, .start = lb_policy_start, .free = lb_policy_free, .on_device = lb_on_device
/* Every policy's on_device: sync.c's failure handling (sync_on_device); a
 * restart starts the balancer over on the devices it runs with. */
void lb_on_device(prt *rt, const void *opts, size_t d, int up);
void lb_free(prt *rt);

/* ---- for the methods ---------------------------------------------------- */
size_t lb_n(const lb *st);
const lb_opts *lb_o(const lb *st);
int64_t lb_B(const lb *st);
void *lb_method_state(const lb *st);
double *lb_x(lb *st);                          /* continuous target per device (samples per full iteration) */
const int *lb_b(const lb *st);                 /* integer batch per device of a full iteration */
const int *lb_cap(const lb *st);               /* memory cap per device (<= B) */
const int *lb_cur(const lb *st);               /* samples each device computed in the last iteration */
const double *lb_t(const lb *st);              /* its compute time in the last iteration (0 when none) */
const double *lb_epoch_t(const lb *st);        /* pure compute time per device over the last epoch */
const int64_t *lb_epoch_samples(const lb *st); /* samples per device over the last epoch */
/* Nominal seconds for device d to compute x >= 0 samples (no noise, no
 * speed trace): batch_table interpolation, peak_flops, or batch_time * x /
 * batch (these policies need a cost for any batch size). */
double lb_cost(const lb *st, size_t d, double x);
/* x := the batches that make every device's time equal, under each
 * device's cost a_i + k_i * x (k_i > 0), with 0 <= x_i <= cap_i and sum B
 * (water-filling: bisection on the common time T; exact for linear costs
 * up to rounding).  Proportional to speeds v: a = 0, k = 1 / v.
 * With the `locality` option each of these solves (lb_solve_general and
 * lb_solve_nominal too) also pays for the bytes the split moves
 * (lbsync.c, "Locality"): x minimises max_i move_i(x_i) + N max_i
 * cost_i(x_i), move_i the seconds to bring device i the samples of its
 * share x_i D / B it does not hold, N the iterations left in the run. */
void lb_solve_linear(lb *st, const double *a, const double *k);
/* The same under any increasing cost fn(ctx, d, x) (bisection in T and x). */
void lb_solve_general(lb *st, double (*fn)(const void *ctx, size_t d, double x), const void *ctx);
/* x := the equal-finish split under the nominal costs (lb_cost): the
 * closed form when every cost is linear (batch_time, peak_flops), else
 * bisection; cubic = 1 fits a cubic to each batch_table of >= 4 points
 * first (LBB's profile).  0 or DP_ENOMEM. */
int lb_solve_nominal(lb *st, int cubic);
/* Round lb_x into lb_b (largest remainder, sum B, caps kept); counts a
 * rebalance when a batch changed. */
void lb_apply(lb *st);

#endif
