/* commlight.h: what the communication-light policies (localsgd, flsgd,
 * asyncps, hierarchical) share: their per-run statistics and small helpers.
 *
 * Statistics (prt_stat, stored in run_stats; names in scenarios/README.md):
 *  - run `rounds`: averaging rounds (asyncps: server updates);
 *  - device `local_steps`: local batches each device ran;
 *  - run `bytes.access`, `bytes.wan`, `bytes.interconnect`: bytes carried by
 *    the links of each class, every link of a path counted (a transfer
 *    between two devices of one site crosses two access links);
 *  - per model update, the figures a convergence model needs, as
 *    histograms (scope bin, so a long run stores a few dozen rows, not one
 *    per update): `update.batch` (samples the update combines),
 *    `update.devices` (devices whose work it combines), `update.staleness`
 *    (asyncps: server updates between the pull and the push; flsgd: 1 for
 *    an average applied one period late, 0 for the forced one); and run
 *    `updates`, `update.batch_mean`, `update.staleness_mean`,
 *    `update.staleness_max`.
 * Histogram bins: values 0..63 each their own bin (bin = value); above,
 * one bin per power of two (lower edge 2^k).  The stored `b` is the lower
 * edge.
 *
 * Ownership: cl_stats_init allocates, cl_stats_free frees.
 */
#ifndef DP_COMMLIGHT_H
#define DP_COMMLIGHT_H

#include "runtime.h"

#include <stdint.h>

#define CL_HIST_BINS 128

typedef struct cl_hist {
    int64_t count[CL_HIST_BINS];
} cl_hist;

typedef struct cl_stats {
    size_t n;
    int64_t rounds;
    int64_t *steps;     /* per device */
    double analytic[3]; /* bytes per class moved by analytic collectives */
    cl_hist batch, devices, staleness;
    int64_t updates;
    double batch_sum, stale_sum;
    int64_t stale_max;
} cl_stats;

typedef enum { CL_ACCESS = 0, CL_WAN = 1, CL_INTERCONNECT = 2 } cl_class;

int cl_stats_init(cl_stats *st, size_t n); /* 0 or DP_ENOMEM */
void cl_stats_free(cl_stats *st);
/* One model update combining `devices` devices' work, `batch` samples in
 * all, `staleness` as the policy defines it. */
void cl_update(cl_stats *st, int64_t batch, int64_t devices, int64_t staleness);
/* Histogram bin of value v >= 0 and its lower edge. */
size_t cl_bin(int64_t v, int64_t *edge);
/* Count the link bytes of an analytic ring collective of kind k on `bytes`
 * over members[0..m) (NULL: every device), which moves no flows. */
void cl_tally_ring(prt *rt, cl_stats *st, const size_t *members, size_t m, coll_kind k, double bytes);
/* Record every statistic above (call once, before the last prt_end_epoch
 * while the run's results are still open).  0 or DP_ENOMEM (run failed). */
int cl_emit(prt *rt, const cl_stats *st);
/* The largest batch device d's memory holds (model state + activations),
 * capped at `cap`; at least 1. */
int cl_max_batch(const scn_scenario *s, size_t d, int cap);

/* The start every one of these policies shares: with `equal`, the equal
 * split into prt_share (else the policy set prt_share); `left` loaded from
 * it; each participant (share > 0) sent its shard (share x sample bytes)
 * and the model, on_ready(rt, devs + d x dev_size) running when device d
 * holds both (devs: the policy's per-device structs, dev_size bytes each);
 * the participants listed in parts[0..*n_parts), scenario order (both may
 * be NULL).  0 or an error (message in prt_err). */
int cl_distribute(prt *rt, int equal, void *devs, size_t dev_size, size_t *parts, size_t *n_parts,
                  prt_fn on_ready);

/* The equal split into prt_share now, for a policy that reads the shares
 * before its cl_distribute(rt, 0, ...) (asyncps, ep4ddl).  0 or
 * DP_ENOMEM (the message in prt_err). */
int cl_equal_shares(prt *rt);

/* An epoch's data as a pool (ep4ddl, adacoopt): device d takes up to b
 * samples, from its own share's left while it lasts, then from the share
 * with most left (the lowest index on ties).  Returns how many. */
int cl_take(prt *rt, size_t d, int b);

/* Worlds with failures: 1 if none of parts[0..n) is up (the policy waits
 * for a return); if none can return either, the run fails (exit 1) naming
 * the last device down and when. */
int cl_none_up(prt *rt, const size_t *parts, size_t n);
/* Worlds with failures: devices back receive the model again, and their
 * shard if they lost it (prt_resend).  Fill with cl_resend_add, then
 * cl_resend_send; cl_resend_free in every case (also after a failed
 * cl_resend_begin). */
typedef struct cl_resend {
    double *bytes; /* per device: shard bytes to send (0: the model only) */
    int *skip;     /* per device: 1 unless added */
    void **ctx;    /* per device: on_ready's context */
    int any;       /* some device added */
} cl_resend;
/* 0, or DP_ENOMEM (the run failed, "out of memory"). */
int cl_resend_begin(prt *rt, cl_resend *r);
/* Device d receives the model, and its shard (share x sample bytes) unless
 * has_data; done(rt, ctx) runs when it holds them. */
void cl_resend_add(prt *rt, cl_resend *r, size_t d, void *ctx, int has_data);
/* Start the transfers of the devices added (none: nothing).  0, or
 * DP_ENOMEM (the run failed). */
int cl_resend_send(prt *rt, cl_resend *r, prt_fn done);
void cl_resend_free(cl_resend *r);

/* A device down or out for the rest of the epoch: its samples not started
 * are skipped (prt_left zeroed).  Returns how many. */
int64_t cl_skip_left(prt *rt, size_t d);
/* Device d just went down: 1 if it keeps its shard (data_persists). */
int cl_keeps_data(const prt *rt, size_t d);

/* Seconds the server takes to average `models` models (0 at an unlimited
 * aggregate rate). */
double cl_aggregate_s(const prt *rt, double models);

/* Model traffic between device d and the server that a policy sends
 * itself: d's activity set (sending, receiving the model), the bytes
 * counted as the server's (prt_add_server_bytes), done(ctx, id) when the
 * transfer ends; out of memory fails the run. */
void cl_upload(prt *rt, size_t d, double bytes, net_done_fn done, void *ctx);
void cl_download(prt *rt, size_t d, double bytes, net_done_fn done, void *ctx);

/* The parameter server of asyncps and ep4ddl: pushes that have arrived
 * wait in a queue and are applied one at a time in arrival order, each
 * taking a model at the aggregate rate.  The policy's `applied` (prt_fn,
 * ctx NULL) runs when the push at the head is applied: it takes the device
 * with cl_ps_pop, applies it with cl_ps_apply, does its own bookkeeping,
 * and returns through cl_ps_next, which starts the next push waiting. */
typedef struct cl_ps {
    size_t *next;      /* per device: the next in the queue (index + 1, 0: none) */
    size_t head, tail; /* index + 1, 0: empty */
    int busy;          /* a push is being applied */
    double agg_s;      /* seconds to apply one */
    int64_t version;   /* pushes applied: the server model's version */
    prt_fn applied;
} cl_ps;
int cl_ps_init(prt *rt, cl_ps *ps, prt_fn applied); /* 0 or DP_ENOMEM */
void cl_ps_free(cl_ps *ps);
/* Device d pushes its gradient (the run's compressed bytes, prt_wire_bytes)
 * to the server; on_push(ctx, id) runs when it has arrived. */
void cl_ps_send(prt *rt, size_t d, net_done_fn on_push, void *ctx);
/* Device d's push has arrived: it queues; an idle server takes it. */
void cl_ps_arrive(prt *rt, cl_ps *ps, size_t d);
/* In `applied`: the device whose push is applied now, off the queue. */
size_t cl_ps_pop(cl_ps *ps);
/* Its push applied: a model update of `samples` samples in st, staleness
 * the versions since `pulled`, fed to the learner (prt_learn_push), the
 * server's version one more, one more server update (st->rounds). */
void cl_ps_apply(prt *rt, cl_ps *ps, cl_stats *st, size_t d, int64_t samples, int64_t pulled);
/* At the end of `applied`: 1 if a push waited and the server took it. */
int cl_ps_next(prt *rt, cl_ps *ps);

/* Option value names. */
extern const char *const cl_sync_names[]; /* ring, server */

#endif
