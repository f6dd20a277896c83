/* runtime_impl.h: the runtime's state, shared by runtime.c, collective.c
 * and policy.c (the dispatcher) only.  Policies see runtime.h.  */
#ifndef DP_RUNTIME_IMPL_H
#define DP_RUNTIME_IMPL_H

#include "runtime.h"

struct prt {
    world *w;
    sim_engine *e;
    const scn_scenario *s;
    res_run *r;
    size_t n;        /* devices */
    int64_t *share;  /* samples per epoch, per device */
    int64_t *left;   /* samples left in the current epoch, per device */
    int epoch;       /* current epoch, 1-based */
    double *ready_s; /* when data and model had arrived */
    int *pending;    /* outstanding initial transfers per device */
    double tsend_s;  /* when the last device held its data */
    int finished;    /* the policy declared the end */
    int failed;
    dp_err *err;
    /* activity tracking */
    res_activity *act;
    double *act_since;
    double *act_time; /* n * RES_ACT_COUNT seconds; this and the other running
                       * records below count from the last epoch_close (runtime.c) */
    double *busy_compute;
    int64_t *batches;
    double samples_done;
    /* FLOPS over time: bins of width bin_s, doubled when the run outgrows them */
    double bin_s;
    size_t n_bins;
    double *bins;          /* FLOP (paper's count) per bin */
    double *coll_bytes;    /* per device: bytes sent (= received) by analytic collectives */
    double *coll_busy_s;   /* per device: seconds its up (send) / down (recv) link was busy */
    double *coll_recv_s;   /* in analytic collectives */
    double *server_bytes;  /* per device: bytes exchanged with the server (to avoid double counting) */
    int coll_active;       /* collectives in flight */
    int *coll_dev;         /* per device: collectives in flight it is a member of */
    unsigned *coll_link_n; /* per network link: ring flows on it (analytic collectives; 0 between) */
    size_t coll_link_cap;  /* entries of coll_link_n */
    int analytic_approx;   /* an analytic collective met a traced or busy link (warned once) */
    /* The full ring's edges (member i -> i+1 over all devices) for analytic
     * collectives: path latency and rate, computed as edge() does; valid
     * while ring_ok and the network's capacity-change count is ring_caps
     * (routes never change; rates change only with capacities). */
    double *ring_lat, *ring_rate;
    int *ring_links; /* every edge's path, one after the other (note_approximate) */
    size_t n_ring_links;
    int ring_traced; /* one of them follows a trace */
    /* coll_ring_account's per-edge transfer times for ring_xfer_chunk,
     * valid while ring_xfer_ok and ring_caps == ring_xfer_caps */
    double *ring_xfer, ring_xfer_chunk;
    uint64_t ring_xfer_caps;
    int ring_xfer_ok;
    uint64_t ring_caps;
    int ring_ok;
    int may_fail;      /* scn_has_failures: devices can go down (else every one is always up) */
    double *part_done; /* per device: fraction of a batch done in pieces */
    void *policy_state;
    void *plan; /* pdef->plan_new's job, finished (policy.c frees it) */
    /* the dynamic world */
    const struct policy_def *pdef; /* for on_device */
    const void *popts;
    uint64_t gen;       /* prt_abort bumps it: older prt_at events are dropped */
    struct coll *colls; /* collectives in flight (collective.c's list), freed by prt_free */
    int restarts;
    double lost_s, resent_bytes, blocked_s;
    /* steady state (runtime.c "epoch boundaries"): in a periodic world the
     * engine's clock restarts at 0 at each clean epoch boundary; `base` is
     * the absolute time of the engine's 0 (one addition per epoch), and
     * everything recorded is base + engine time. */
    int periodic;       /* prt_periodic */
    int boundary;       /* an epoch ended: try a rebase after this event */
    double base;        /* absolute time of the engine's 0 */
    uint64_t ff_events; /* events of the epochs fast-forwarded */
    struct ffj *ff;     /* the epoch journal (runtime.c), NULL when not periodic */
    /* periodic worlds: the running records folded at each clean epoch
     * boundary (runtime.c's invariants), NULL elsewhere */
    struct prt_sums *tot;
};

/* collective.c: an analytic collective's accounting for member d (bytes
 * sent = received, and the seconds its up link, and next's down link, are
 * busy), through the runtime so a fast-forward can replay it. */
void prt_rec_coll(prt *rt, size_t d, size_t next, double bytes, double busy_s);
/* The same for every member of a collective over the full ring, from the
 * ring cache (rt->ring_rate, valid: capacities do not change in a world
 * that fast-forwards): one journal entry instead of one per device. */
void prt_rec_ring(prt *rt, double chunk, int rounds);
void coll_ring_account(prt *rt, double chunk, int rounds);

/* collective.c: device d went down (collectives it is in block for good);
 * abort every collective in flight (a restart). */
void coll_device_down(prt *rt, size_t d);
void coll_abort_all(prt *rt);

/* The event budget of one run.  Without it a large enough scenario (10^6
 * epochs under DDP, thousands of devices in a flows-mode ring) runs for
 * hours or days, which nobody can tell from a hang.  2e9 events is about 4x
 * the heaviest documented run (the paper testbed's DDP with flow
 * collectives, 4.9e8 events) and 10-15 minutes of host time at 1-3 million
 * events per second. */
#define PRT_MAX_EVENTS 2000000000ull

prt *prt_new(const scn_scenario *s, const char *policy, uint64_t seed, dp_err *err);
void prt_free(prt *rt);
/* Run the engine until the policy ends the run or nothing is left.
 * 0, or DP_ERUN with a stall message naming the stuck transfers. */
int prt_run(prt *rt);
/* Free the collectives still in flight (a run that stopped mid-collective). */
void coll_free_all(prt *rt);
/* Fill the results (Tsend, Ttraining, ...).  Ownership of rt->r moves to
 * the caller. */
res_run *prt_results(prt *rt);

/* Touch the per-device records a run will write and make room for a
 * distribution's flows (data and model to every device), changing no
 * value: policy.c calls it while a plan is being made on the other thread,
 * so the page faults of the first instant happen in that wait. */
void prt_warm(prt *rt);

#endif
