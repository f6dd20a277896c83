/* policy.h: scheduling policies and the runtime they share.
 *
 * A policy decides shares, batch sizes and when to synchronise; the world
 * (engine, network, compute) is the same for all (MODEL.md section 4).
 * Every policy runs event by event:
 *   prt_new -> the policy schedules its first actions -> prt_run -> results.
 *
 * The runtime (prt) keeps what every policy needs: device activity for the
 * timeline and the waiting time, FLOPS over time, the initial data
 * distribution, per-device counters, and the end-of-run figures.
 *
 * Ownership: policy_run returns a res_run the caller frees.
 */
#ifndef DP_POLICY_H
#define DP_POLICY_H

#include "results.h"
#include "scenario.h"
#include "world.h"

typedef enum { POLICY_DDP = 0, POLICY_DEEPSPEED, POLICY_CADP, POLICY_COUNT } policy_kind;

const char *policy_name(policy_kind k);
/* "ddp" | "deepspeed" | "cadp" -> kind; -1 if unknown. */
int policy_by_name(const char *name);

/* Run one policy on the scenario with the given seed.  Returns the results
 * (caller frees with res_run_free) or NULL with err set: DP_EINPUT when the
 * scenario cannot run under this policy (e.g. a batch that does not fit),
 * DP_ERUN when the simulation stalls (a link at zero capacity forever). */
res_run *policy_run(policy_kind k, const scn_scenario *s, uint64_t seed, dp_err *err);

/* An interrupt flag (e.g. set by a SIGINT handler) that running simulations
 * poll between events: when it becomes non-zero, policy_run stops and fails
 * with DP_ERUN "interrupted".  NULL (the default) = never.  The pointer is
 * borrowed for the life of the process. */
#include <signal.h>
void policy_set_interrupt(volatile sig_atomic_t *flag);

/* ---- runtime shared by the policies (internal to sim/policy) ---------- */

typedef struct prt prt;
typedef void (*prt_fn)(prt *rt, void *ctx);

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
    double *act_time; /* n * RES_ACT_COUNT seconds */
    double *busy_compute;
    int64_t *batches;
    double samples_done;
    /* FLOPS over time: bins of width bin_s, doubled when the run outgrows them */
    double bin_s;
    size_t n_bins;
    double *bins;         /* FLOP (paper's count) per bin */
    double *coll_bytes;   /* per device: bytes sent (= received) by analytic collectives */
    double *coll_busy_s;  /* per device: seconds its up (send) / down (recv) link was busy */
    double *coll_recv_s;  /* in analytic collectives */
    double *server_bytes; /* per device: bytes exchanged with the server (to avoid double counting) */
    int coll_active;      /* collectives in flight */
    double *part_done;    /* per device: fraction of a batch done in pieces */
    void *policy_state;
    void *coll_live; /* collectives in flight (collective.c), freed by prt_free */
};

prt *prt_new(const scn_scenario *s, const char *policy, uint64_t seed, dp_err *err);
void prt_free(prt *rt);
/* The run fails: the first failure's message is kept (err), the engine
 * stops after the current handler, prt_run returns the code.  Returns code. */
int prt_fail(prt *rt, int code, const char *fmt, ...) DP_PRINTF(3, 4);
/* Device d (0-based) switches to activity a now. */
void prt_set_act(prt *rt, size_t d, res_activity a);
/* Device d computes a batch of n samples now; fn(rt, ctx) runs when done.
 * `part` (0, 1] is the share of the batch's work done now (1 = the whole
 * batch; DeepSpeed stage 3 runs forward and backward apart); FLOPS and
 * samples are credited in proportion.  *dt_out (may be NULL) gets the
 * duration. */
int prt_compute(prt *rt, size_t d, int n, double part, prt_fn fn, void *ctx, double *dt_out);
/* Send every device with data_bytes[d] > 0 or model its share and the model
 * from the server, all flows at once; per_dev(rt, ctx_d) runs when device
 * d holds both; `skip[d]` (may be NULL) leaves a device out entirely. */
int prt_distribute(prt *rt, const double *data_bytes, const int *skip, prt_fn per_dev, void **ctx);
/* Run the engine until the policy sets rt->finished or nothing is left.
 * 0, or DP_ERUN with a stall message naming the stuck transfers. */
int prt_run(prt *rt);
/* Fill the results (Tsend, Ttraining, ...).  Ownership of rt->r moves to
 * the caller. */
res_run *prt_results(prt *rt);
/* 1 if some device has samples left in the current epoch. */
int prt_work_left(const prt *rt);
/* The current epoch ends now: record it; then either start the next (epoch
 * + 1, `left` reloaded from `share`; returns 1) or, after the last, set
 * `finished` (returns 0).  Negative (run failed) when out of memory. */
int prt_end_epoch(prt *rt);
/* Schedule fn(rt, ctx) at absolute time t. */
int prt_at(prt *rt, double t, prt_fn fn, void *ctx);

/* ---- collectives (collective.c) --------------------------------------- */
typedef enum { COLL_ALLREDUCE = 0, COLL_REDUCE_SCATTER, COLL_ALLGATHER } coll_kind;
/* Ring collective over all devices on `bytes` (the full tensor, M):
 * all-reduce 2(N-1) rounds, reduce-scatter and all-gather N-1 rounds, each
 * round every device sends bytes/N to its successor and ends when all its
 * flows end.  mode flows: real flows through the network model; analytic:
 * round time max over ring edges of latency + (bytes/N)/bottleneck, no
 * flows.  fn(rt, ctx) runs when the collective ends. */
int coll_start(prt *rt, coll_kind k, double bytes, scn_collective_mode mode, prt_fn fn, void *ctx);
/* The analytic duration of a collective now (for tests and docs). */
/* Free the collectives still in flight (a run that stopped mid-collective). */
void coll_free_all(prt *rt);
double coll_analytic_s(prt *rt, coll_kind k, double bytes);

/* ---- the C-ADP allocation problem from a scenario (cadp.c) ------------- */
/* Per-device solver inputs (MODEL.md section 5): a_i = sample_bytes over
 * the bottleneck of the server-to-device path, c_i via t_i(bs_i), comm_i =
 * M / down + M / up + both latencies (the per-epoch model exchange), and the
 * per-epoch aggregation as a constant.  Arrays are dp_malloc'd; free with
 * cadp_inputs_free.  DP_EINPUT names the device with a zero bandwidth. */
typedef struct cadp_inputs {
    size_t n;
    double *send_s, *batch_s, *comm_s;
    int *batch;
    const char **names; /* borrowed from the scenario */
    double agg_s;       /* per-epoch aggregation time, all devices */
} cadp_inputs;
int cadp_inputs_build(const scn_scenario *s, cadp_inputs *in, dp_err *err);
void cadp_inputs_free(cadp_inputs *in);
/* Fill a solver problem from inputs (borrows the arrays). */
struct slv_problem;
void cadp_problem(const scn_scenario *s, const cadp_inputs *in, struct slv_problem *p);

/* ---- synchronous data parallelism in groups (sync.c) ------------------- */
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
 * `allgather_after`, an all-gather of M (ZeRO's updated parameters). */
typedef struct sync_cfg {
    int micro_per_sync; /* >= 1 */
    int overlap;
    double bucket_bytes;      /* > 0 */
    double backward_fraction; /* (0, 1] */
    coll_kind op;
    int allgather_after;
    scn_data_mode data;
    scn_collective_mode mode;
} sync_cfg;
int sync_start(prt *rt, const sync_cfg *cfg);
void sync_free(prt *rt);
/* Equal split into rt->share and the bytes each device receives. */
int equal_split(prt *rt, scn_data_mode data, double *bytes);

/* Solve C-ADP's allocation for scenario s with per-device inputs `in`:
 * method "exact" or "alm", params (NULL = defaults), paper_model 1 = the
 * exchange counted for every device (the paper's constant).  *out gets a
 * per-device result in scenario order (free with slv_result_free).
 *
 * Scenarios of more than CADP_CLASS_MIN devices are solved per device group:
 * the m identical devices of a group act as one device of batch m x bs and
 * send time a/m, whose total is then split as evenly as possible (which is
 * optimal within a group: ceil(ceil(X/m)/bs) = ceil(X/(m bs))).  The relaxed
 * optimum is the same; the class problem's integer optimum is a valid lower
 * bound on the per-device one; the objective is evaluated per device, and
 * is within one sample's send time of the class optimum.  *classes gets the
 * number of units solved (devices or groups). */
#define CADP_CLASS_MIN 4096
struct slv_params;
struct slv_result;
int cadp_solve(const scn_scenario *s, const cadp_inputs *in, const char *method, const struct slv_params *prm,
               int paper_model, struct slv_result **out, size_t *classes, dp_err *err);

/* ---- policies ---------------------------------------------------------- */
int policy_ddp_start(prt *rt);
int policy_deepspeed_start(prt *rt);
int policy_cadp_start(prt *rt);
void policy_ddp_free(prt *rt);
void policy_deepspeed_free(prt *rt);
void policy_cadp_free(prt *rt);
/* Options of a policy as a JSON object (dp_malloc'd string). */
char *policy_options_json(policy_kind k, const scn_scenario *s);

#endif
