/* runtime_impl.h: the runtime's state, shared by runtime.c, collective.c
 * policy.c (the dispatcher) and the runtime's own files (runtime*.c, whose
 * private records and functions close this header) only.  Policies see runtime.h.  */
#ifndef DP_RUNTIME_IMPL_H
#define DP_RUNTIME_IMPL_H

#include "lcompress.h"
#include "policy.h"
#include "runtime.h"
#include "runtime_perf.h"

struct learner;
struct lrn_cfg;

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
    double
        *data_ready_s; /* when it held its full data share (the results' device records, made at the end) */
    int *pending;      /* outstanding initial transfers per device */
    double tsend_s;    /* when the last device held its data */
    int finished;      /* the policy declared the end */
    /* learning (scenario `learning:`; learn_stream.c), NULL without */
    struct lrn_cfg *learn_cfg;
    struct learner *learn;
    /* learning.efficiency's update log, fed beside the learner (NULL without) */
    struct eff_log *eff_log;
    struct eff_tap *eff_tap;
    struct eff_params *eff_params; /* without a learner: the model the results use */
    /* a job's run (jobrt.c): its learner's epochs count on from
     * learn_epoch0, and every epoch's end writes its checkpoint there
     * (NULL, 0: a single run) */
    int learn_epoch0;
    struct pjob_learn *learn_ckpt;
    lc_cfg comp; /* scenario `compression:` (compress.c); LC_NONE: off */
    int failed;
    int shared; /* one job of many in a shared world (prt_new_on): no fast-forward, no hints */
    dp_err *err;
    /* activity tracking */
    res_activity *act;
    double *act_since;
    double *act_time; /* n * RES_ACT_COUNT seconds; this and the other running
                       * records below count from the last epoch_close (runtime.c) */
    double *busy_compute;
    int64_t *batches;
    double samples_done;
    /* the no-progress watchdog (on_world_device): device failures since the
     * last batch finished or epoch ended, and the marks that tell */
    uint64_t stuck_downs;
    double stuck_since, stuck_samples;
    int stuck_epoch;
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
    struct coll_cache *cc; /* collective.c's own (edge offsets, shared-link counts); freed by coll_free_all */
    int coll_pipelined;    /* collectives started from now on progress rank by rank (coll_set_progress) */
    int may_fail;          /* scn_has_failures: devices can go down (else every one is always up) */
    double *part_done;     /* per device: fraction of a batch done in pieces */
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
    /* data where it lives (scenario dataset.parts/.storage/.caches;
     * runtime_data.c), NULL when the dataset is at the server */
    struct rt_data *data;
    struct prt_energy *energy; /* devices' power and batteries (runtime_energy.c), NULL without */
    double between_servers; /* bytes between two servers (regional), counted once (prt_add_between_servers) */
    /* exact symmetry (runtime_sym.c): NULL while off.  sym_rep[d] is the
     * device whose records d follows (d itself: a representative, or a
     * device alone); a follower's own records are stale until sym_flush. */
    size_t *sym_rep;
    uint32_t *sym_k;  /* per representative: the devices it stands for, itself included */
    size_t *sym_reps; /* the representatives and the devices alone, in device order */
    size_t n_sym_reps;
    int sym_tried;       /* prt_sym_begin looked once */
    uint64_t sym_events; /* the events one event of a representative stood for, beyond its own */
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
/* prt_new on a given world, which the runtime then owns; w != NULL: one
 * job's view of a shared world (world_new_view, sim/jobs/) on its own
 * engine (its clock domain, engine_group.h): every time recorded is the
 * run's own, from 0 at its start, its clock restarts at clean epoch
 * boundaries as a single run's does (prt_boundary), and no epoch is
 * fast-forwarded (other jobs on shared links could change an epoch). */
prt *prt_new_on(const scn_scenario *s, const char *policy, uint64_t seed, world *w, dp_err *err);
/* A job's driver steps its engine (jobrt.h): after each of its events,
 * the epoch boundary prt_run would handle (a rebase).  0 or DP_ENOMEM. */
int prt_boundary(prt *rt);
/* Make a job inert (its results taken, or stopped by its scheduler): no
 * event, transfer or collective of it calls back any more; nothing is
 * recorded. */
void prt_detach(prt *rt);
void prt_free(prt *rt);
/* Run the engine until the policy ends the run or nothing is left.
 * 0, or DP_ERUN with a stall message naming the stuck transfers. */
int prt_run(prt *rt);
/* Free the collectives still in flight (a run that stopped mid-collective). */
void coll_free_all(prt *rt);
/* Device d's ring links take r's statistics (collective.c's link classes;
 * runtime_sym.c's copy_records). */
void coll_sym_links(prt *rt, size_t r, size_t d);
/* Fill the results (Tsend, Ttraining, ...), making the device records.
 * Ownership of rt->r moves to the caller; NULL (rt's error set, rt->r
 * kept for prt_free) when out of memory for the records. */
res_run *prt_results(prt *rt);

/* Touch the per-device records every device of a run writes, changing no
 * value: policy.c calls it while a plan is being made on the other thread,
 * so those page faults happen in that wait. */
void prt_warm(prt *rt);

/* ---- the runtime's private records ------------------------------------ */

#define MAX_BINS             1024
#define SEG_EXACT            20000
#define TL_BINS              2048
#define TL_DEVICES           64
#define PREFETCH_MIN_DEVICES 4096

/* ---- the epoch journal (declarations; "epoch boundaries" below) ---------- */

/* What the runtime records, with engine (relative) times: replaying the
 * entries with another base repeats the records of an epoch exactly.
 * Fixed-size entries (no implicit padding, so they compare with memcmp):
 *   J_ACT    a = activity, r = time; n devices, in call order, as tokens
 *            from f->dv[d] (runtime_ff.c's jrec_act: runs of consecutive ids)
 *            (consecutive changes to the same activity at the same time,
 *            e.g. every member of a collective starting or ending, share
 *            one entry); k = the devices J_CSTARTs at r among them stood
 *            for (folded in: replayed after the entry's changes)
 *   J_CSTART r = time, n = devices it stands for (runtime_sym.c)
 *   J_CDONE  d, n = samples, a = step (| J_FOLDED: a batch of a run in one
 *            event, not its last, after which the device computes on),
 *            r = end, r0 = start, v1 = part; k = further devices d + 1 ..
 *            d + k that ended the same batch (folded in, with the J_ACT
 *            after it growing meanwhile: runtime_ff.c's jrec)
 *   J_COLL   d, n = next member, v1 = bytes, r0 = busy seconds
 *   J_RING   n = rounds, v1 = chunk
 *   J_SRV    d, v1 = bytes exchanged with the server (prt_add_server_bytes)
 *   J_EPOCH  r = time */
typedef enum { J_ACT = 0, J_CSTART, J_CDONE, J_COLL, J_RING, J_SRV, J_EPOCH } jkind;
#define J_FOLDED 2
typedef struct jent {
    uint8_t kind, a;
    uint16_t pad0;
    int32_t d, n;
    uint32_t k;
    double r, r0, v1;
} jent;

/* ---- small event records with a free list --------------------------------- */

typedef struct prt_ev {
    prt *rt;
    prt_fn fn;
    void *ctx;
    uint64_t gen;
    struct prt_ev *next;
} prt_ev;

typedef struct compute_slot { /* one per device: 88 bytes, the two ints together */
    prt *rt;
    size_t d;
    int n;
    int step; /* prt_compute_step: one whole step, whatever part says */
    double part;
    double t0;
    prt_fn fn;
    void *ctx;
    uint64_t ev; /* 0: not computing */
    /* a run of batches in one event (prt_compute_left): fold samples in
     * batches of n, each full one lasting w_full, a short last one w_last;
     * fold == 0: one batch */
    int64_t fold;
    double w_full, w_last;
} compute_slot;

typedef struct xfer_ctx {
    prt *rt;
    size_t d;
    int is_data;
} xfer_ctx;

/* Timeline state (and the event and compute records), private to the
 * runtime's files; it follows the prt in one allocation (TL). */
typedef struct timeline {
    int coarse;
    double res_s; /* bin width when coarse */
    size_t ndev;
    /* coarse: row[row_of[d]][k * RES_ACT_COUNT + a] is device d's time in
     * activity a up to the bin edge k * res_s, for edges 1 <= k <
     * next_edge[d] (edge 0 is 0 everywhere).  Devices whose edges are the
     * same bits share a row (runtime_records.c, tl_put): row p holds
     * row_fill[p] edges, the first writer of an edge sets it, and a device
     * that computes another value for it leaves with a copy. */
    double *row[TL_DEVICES];
    size_t row_fill[TL_DEVICES], n_rows;
    uint8_t row_of[TL_DEVICES];
    size_t next_edge[TL_DEVICES];
    /* the engine time of device d's next edge, as tl_edges computes it,
     * while edge_gen[d] == gen (gen changes with the width and the base) */
    double next_xr[TL_DEVICES];
    uint64_t edge_gen[TL_DEVICES], gen;
    double *seg_t0; /* per device: absolute start of its current activity (segments) */
    compute_slot *cslots;
    xfer_ctx *xctx; /* 2 per device */
    prt_fn *dev_fn;
    void **dev_ctx;
    prt_ev *free_ev;
    prt_ev **blocks;
    size_t n_blocks;
    /* Utilisation counts compute inside [Tsend, Ttotal] only: a policy may
     * compute before the last device holds its data (C-ADP starts each
     * device when its own data arrives), and that work over N x Ttraining
     * could pass 100%.  busy_int is the integral of the number of devices
     * computing, up to engine time busy_t (a running record); busy_at_tsend
     * its whole-run value when Tsend last moved (Tsend only moves to
     * "now"). */
    size_t computing;
    double busy_int, busy_t, busy_at_tsend;
} timeline;

static inline timeline *TL(prt *rt)
{
    return (timeline *)((char *)rt + sizeof(prt));
}

/* The records an epoch boundary folds (see the invariants): rt->tot holds
 * the folded totals, and an epoch journal keeps one epoch's subtotals. */
typedef struct prt_sums {
    double *act_time; /* n * RES_ACT_COUNT */
    double *busy_compute, *coll_bytes, *coll_busy_s, *coll_recv_s, *server_bytes;
    int64_t *batches;
    double samples_done, busy_int;
} prt_sums;

/* Absolute simulated time now (base + 0.0 == the engine's time exactly
 * while base is 0, i.e. in every world that is not periodic). */
static inline double abs_now(const prt *rt)
{
    return rt->base + sim_now(rt->e);
}

/* Bring the compute integral up to engine time now. */
static inline void busy_advance_to(prt *rt, double now)
{
    timeline *tl = TL(rt);
    tl->busy_int += (double)tl->computing * (now - tl->busy_t);
    tl->busy_t = now;
}

static inline void busy_advance(prt *rt)
{
    busy_advance_to(rt, sim_now(rt->e));
}

/* The FLOP of n samples (part of a batch), as the FLOPS bins count it. */
static inline double batch_flops(const prt *rt, int n, double part)
{
    return rt->s->model.flops_per_sample * n * part;
}

/* ---- between the runtime's own files (runtime*.c) ---------------------- */

/* Events run, as without symmetry: an event of a representative counts
 * for every device it stands for. */
static inline uint64_t prt_events(const prt *rt)
{
    return sim_events_run(rt->e) + rt->sym_events;
}

/* runtime_sym.c: how many devices d's events stand for (1 when symmetry is
 * off or d is alone; 0 for a follower) */
static inline size_t sym_mult(const prt *rt, size_t d)
{
    if (!rt->sym_rep)
        return 1;
    return rt->sym_rep[d] == d ? rt->sym_k[d] : 0;
}
/* Copy every follower's records from its representative (before anything
 * reads all devices' records). */
void sym_flush(prt *rt);
/* A follower d is about to be touched alone: its class splits (every
 * member gets its records and goes alone).  A representative stands for
 * its class: only the runtime and sync.c, which started symmetry and know
 * it, act on it (runtime_sym.c). */
void sym_split(prt *rt, size_t d);
static inline void sym_touch(prt *rt, size_t d)
{
    if (rt->sym_rep && rt->sym_rep[d] != d)
        sym_split(rt, d);
}
/* Flush and end symmetry for the rest of the run. */
void sym_end(prt *rt);

/* runtime.c */
void fail_oom(prt *rt);
int end_epoch_at(prt *rt, double now);
/* runtime_records.c */
prt_sums *sums_new(size_t n);
void sums_free(prt_sums *x);
prt_sums running(prt *rt);
void sums_add(prt_sums *to, const prt_sums *x, size_t n, int copy);
void running_zero(prt *rt);
void prt_add_flops(prt *rt, double t0, double t1, double flops);
void prt_add_flops_k(prt *rt, double t0, double t1, double flops, size_t k);
void tl_widen(timeline *tl);
void tl_edges(prt *rt, size_t d, res_activity cur, double since, double now, const double *S);
void timeline_finish(prt *rt, double T);
void set_act_at(prt *rt, size_t d, res_activity a, double now);
/* the segment hook (policy_set_segment_hook), NULL when unset */
extern policy_segment_fn rt_segment_fn;
/* runtime_work.c */
void compute_done_at(prt *rt, size_t d, double t0, double now, int n, double part, int step, double base);
void on_world_device(void *ctx, size_t d, int up);
void dyn_stats(prt *rt, double T);
/* Install the prefetch hints of batch and distribution ends; nonzero when
 * out of memory. */
int work_set_prefetch(prt *rt);
/* The initial distribution's arrivals (runtime_work.c): one of device d's
 * transfers ended (is_data 1: its data, counted in Tsend; 2: data resent;
 * 0: the model); xfer_done is the flows' callback (an xfer_ctx). */
void xfer_arrived(prt *rt, size_t d, int is_data);
void xfer_done(void *ctx, uint64_t id);
/* runtime_data.c: data where it lives */
int data_open(prt *rt, dp_err *err);
void data_close(prt *rt);
int data_distribute(prt *rt, const double *data_bytes, const int *skip, prt_fn per_dev, void **ctx,
                    int initial);
void data_device_down(prt *rt, size_t d);
void data_device_up(prt *rt, size_t d);
void data_stats(prt *rt);
/* runtime_ff.c */
void jrec(prt *rt, jent e);
void jrec_act(prt *rt, size_t d, res_activity a);
void jbreak(prt *rt);
void ff_init(prt *rt);
void ff_free(prt *rt);

/* The update stream's runtime side (learn_stream.c): a batch of device d
 * ended at absolute time t with `samples` samples; d went down; an epoch
 * ended (returns 1 when the learner says stop); the run's results. */
int prt_learn_open(prt *rt, uint64_t seed, dp_err *err);
void prt_learn_close(prt *rt);
int prt_compress_open(prt *rt, dp_err *err); /* compress.c: rt->comp from `compression:` */
lc_cfg prt_delta_coder(const prt *rt,
                       int bits); /* compress.c: the coder of prt_delta_wire_bytes (bits > 0) */
void prt_learn_batch(prt *rt, size_t d, double t, double samples);
void prt_learn_lost(prt *rt, size_t d, double t);
/* d came back: it holds the server's model (every policy sends it one). */
void prt_learn_up(prt *rt, size_t d, double t);
int prt_learn_epoch(prt *rt, double t);
void prt_learn_results(prt *rt, res_run *r, double T);

/* Learning on (a learner or the efficiency tap): inline, because the
 * runtime asks at every batch end and a call per batch into another file
 * was the one cost learning added to runs without it. */
static inline int learn_on(const prt *rt)
{
    return rt->learn != NULL || rt->eff_tap != NULL;
}

#endif
