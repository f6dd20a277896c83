/* sync.h: synchronous data parallelism in groups (sync.c), the machinery
 * DDP, ZeRO and the load-balancing family (lbsync.h) share.  Policies on
 * it include this header; runtime.h is the rest of what they see. */
#ifndef DP_SYNC_H
#define DP_SYNC_H

#include "runtime.h"

#include <stddef.h>
#include <stdint.h>

/* The machinery DDP and DeepSpeed stages 1-2 share.  Equal split (floor(D/N)
 * or one more); training starts when every device holds data and model.
 * Each epoch, a device runs its ceil(share / batch) micro-steps in groups of
 * `micro_per_sync`; a device with none left joins with zero gradients
 * (PyTorch's Join), so every group waits for all N.  At the end of a group
 * the gradients go through `op` (all-reduce for DDP, reduce-scatter for
 * ZeRO) in buckets of `bucket_bytes`: bucket k is ready when every device
 * has run the forward part and (k+1)/K of the backward of its last
 * micro-step, and starts when ready and the previous bucket is done; with
 * overlap off there is one bucket of M, ready when compute ends.  Then, if
 * `allgather_after`, an all-gather of M (ZeRO's updated parameters): after
 * every group, or with `gather_every` = k > 1 after every k-th group and at
 * the end of each epoch (ZeRO-2 reduce-scatters each micro-step's gradients
 * but steps the optimizer every grad_accum micro-steps). */
/* Failure handling (worlds with `availability`; scenarios/README.md): a
 * collective that loses a member blocks; `timeout_s` after the failure the
 * job restarts from its last checkpoint (written every `ckpt_every` epochs:
 * the model, or each member's shard with `ckpt_sharded`, uploaded to the
 * server, then `ckpt_write_s`), with every device once all are up
 * (elastic 0) or at once with the devices up, re-sharding the data
 * (elastic 1; devices that return join at the next checkpoint).  More than
 * `max_restarts` restarts from the same checkpoint fail the run. */
typedef struct sync_fail_cfg {
    double timeout_s;
    int elastic;
    int ckpt_every;
    double ckpt_write_s;
    int ckpt_sharded;
    int max_restarts;
} sync_fail_cfg;
extern const char *const popt_on_failure_names[]; /* wait, elastic */
/* The failure options of a policy on sync.c (DDP, ZeRO): the option-table
 * rows for a sync_fail_cfg member `field` of options struct `type`, so every
 * such policy offers the same keys, defaults and help. */
#define POPT_SYNC_FAILURE_ROWS(type, field)                                                                  \
    {"timeout",                                                                                              \
     "timeout_s",                                                                                            \
     POPT_QUANTITY,                                                                                          \
     SCN_UNIT_TIME,                                                                                          \
     offsetof(type, field.timeout_s),                                                                        \
     1800,                                                                                                   \
     0,                                                                                                      \
     1e12,                                                                                                   \
     NULL,                                                                                                   \
     POPT_FAILURES "a collective that lost a member gives up after this (PyTorch's 30 min)"},                \
        {"on_failure",                                                                                       \
         NULL,                                                                                               \
         POPT_ENUM,                                                                                          \
         SCN_UNIT_NUMBER,                                                                                    \
         offsetof(type, field.elastic),                                                                      \
         0,                                                                                                  \
         0,                                                                                                  \
         0,                                                                                                  \
         popt_on_failure_names,                                                                              \
         POPT_FAILURES "wait (restart with every device once all are back) or elastic (restart with the "    \
                       "survivors)"},                                                                        \
        {"checkpoint_every",                                                                                 \
         NULL,                                                                                               \
         POPT_INT,                                                                                           \
         SCN_UNIT_NUMBER,                                                                                    \
         offsetof(type, field.ckpt_every),                                                                   \
         1,                                                                                                  \
         1,                                                                                                  \
         1000000,                                                                                            \
         NULL,                                                                                               \
         POPT_FAILURES "epochs between checkpoints"},                                                        \
        {"checkpoint_write",                                                                                 \
         "checkpoint_write_s",                                                                               \
         POPT_QUANTITY,                                                                                      \
         SCN_UNIT_TIME,                                                                                      \
         offsetof(type, field.ckpt_write_s),                                                                 \
         30,                                                                                                 \
         -1,                                                                                                 \
         1e12,                                                                                               \
         NULL,                                                                                               \
         POPT_FAILURES "time to write a checkpoint once uploaded to the server"},                            \
    {                                                                                                        \
        "max_restarts", NULL, POPT_INT, SCN_UNIT_NUMBER, offsetof(type, field.max_restarts), 100, 0,         \
            1000000000, NULL,                                                                                \
            POPT_FAILURES "restarts from one checkpoint before the run fails (no progress)"                  \
    }
void sync_on_device(prt *rt, size_t d, int up);

typedef struct sync_hooks sync_hooks;
typedef struct sync_cfg {
    int micro_per_sync; /* >= 1 */
    int overlap;
    double bucket_bytes;      /* > 0 */
    double backward_fraction; /* (0, 1] */
    coll_kind op;
    int allgather_after;
    int gather_every; /* groups per all-gather; 0 or 1: every group */
    prt_data_mode data;
    prt_coll_mode mode;
    int pipelined;           /* coll_set_progress */
    const sync_hooks *hooks; /* NULL: DDP's fixed batches above */
    sync_fail_cfg fail;
} sync_cfg;
/* A policy that sizes every step itself (the load-balancing family,
 * lbsync.c) hooks into the same groups and buckets: one micro-step per
 * group (micro_per_sync is taken as 1), of `batch(d)` samples (0: the
 * device joins with zero gradients), computed by `compute` (which starts
 * prt_compute and gives its duration); `split` replaces the equal split of
 * the initial distribution; `synced` runs when the group's collectives end,
 * instead of moving on by itself: the policy calls sync_next (or ends the
 * run).  `plan` runs at the start of every group.  All but batch/compute
 * may be NULL.  The hooks and ctx are borrowed for the run. */
struct sync_hooks {
    int (*split)(prt *rt, double *bytes, void *ctx);
    int (*plan)(prt *rt, void *ctx);
    int (*batch)(prt *rt, size_t d, void *ctx);
    int (*compute)(prt *rt, size_t d, int n, prt_fn fn, void *fctx, double *dt, void *ctx);
    void (*synced)(prt *rt, void *ctx);
    void *ctx;
    /* Worlds with failures (may be NULL: the policy then gets the equal
     * split over the members): a restart or an elastic join is about to
     * start the group anew at the checkpoint's next epoch with the devices
     * of `members` (1 = in); set prt_share of each (0 for the others: what
     * it must hold) and reset the iteration.  `held`: the samples each
     * device holds now (0 after a failure that lost its data).  0, or the
     * run failed (prt_fail). */
    int (*restart)(prt *rt, const char *members, const int64_t *held, void *ctx);
    /* A policy with a step loop of its own (ZeRO stage 3; may be NULL):
     * every group start (the first, after each step, after a restart)
     * calls step instead of sync.c's micro-steps and buckets (then
     * batch/compute may be NULL and the cfg's overlap must be 0).  The
     * policy runs one step among the members (sync_coll for its
     * collectives, prt_left for its samples) and, when done, moves on with
     * sync_next or, at an epoch boundary, sync_next_epoch.  A restart
     * abandons the step in flight (prt_abort) and calls step anew. */
    void (*step)(prt *rt, void *ctx);
};
int sync_start(prt *rt, const sync_cfg *cfg);
/* Start the next group now (from a `synced` hook, possibly later). */
void sync_next(prt *rt);
/* The optimizer step of the update stream (runtime.h, learning) among the
 * members: sync.c takes it by itself; a step hook (ZeRO-3) calls it when
 * its step's gradients are reduced. */
void sync_learn_step(prt *rt);
/* The same at an epoch boundary (after prt_end_epoch started the next
 * epoch): writes the checkpoint first when one is due (worlds with
 * failures), as sync.c does by itself without hooks. */
void sync_next_epoch(prt *rt);
/* A policy with hooks moved data to device d itself (lbsync.c's shard
 * fetches): it now holds `samples`, so a restart resends only what it lacks. */
void sync_hold(prt *rt, size_t d, int64_t samples);
/* A collective among the current members (every device until an elastic
 * restart), in the cfg's mode: for a policy's step hook. */
int sync_coll(prt *rt, coll_kind k, double bytes, prt_fn fn);
/* The hooks' ctx of the running sync state (NULL: none, or no hooks). */
void *sync_hooks_ctx(const prt *rt);
void sync_free(prt *rt);
/* The steady_state hook of a policy on sync.c without hooks (DDP, ZeRO
 * stages 1-2): see policy_def.  0 with failures or hooks. */
size_t sync_steady_state(prt *rt, unsigned char *buf, size_t cap);
/* The same for a policy with hooks whose own state at the boundary it
 * appends itself (ZeRO stage 3): sync.c's part, or 0 with failures. */
size_t sync_steady_state_hooked(prt *rt, unsigned char *buf, size_t cap);

#endif
