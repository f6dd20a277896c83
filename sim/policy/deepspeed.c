/* deepspeed.c: DeepSpeed-style ZeRO data parallelism (docs/MODEL.md section 4).
 *
 * Stage 1 (optimizer state partitioned): devices run grad_accum
 * micro-steps, then the optimizer step reduce-scatters the gradients (N-1
 * rounds of M/N) and, after the partitioned update, all-gathers the
 * parameters (N-1 rounds of M/N): sync.c's machinery with op =
 * reduce-scatter and an all-gather after.  Stage 2 (gradients partitioned
 * too): a device cannot accumulate gradients it does not keep, so every
 * micro-step's backward is followed by a reduce-scatter, and the all-gather
 * follows each optimizer step (every grad_accum micro-steps, and the last
 * micro-step of an epoch).  overlap_comm (default off, as in DeepSpeed)
 * lets the reduce-scatter run in buckets under the backward pass.
 *
 * Stage 3 (parameters partitioned too): every micro-step all-gathers the
 * parameters before forward and again before backward, and reduce-scatters
 * the gradients after it: 3 x (N-1)/N x M bytes per device per micro-step,
 * 1.5x stages 1-2's 2 x (N-1)/N x M (the ZeRO paper's figure).  Overlap
 * (default on, prefetching) runs both all-gathers alongside the compute; the
 * reduce-scatter waits for the backward and the gathers.  Without overlap
 * the phases run one after the other with a barrier between them.
 *
 * Every stage runs on sync.c, so device failures get the same checkpoint,
 * timeout and restart (wait or elastic) everywhere: stage 3 plugs its
 * micro-step into sync.c's groups with the step hook, and runs its
 * collectives among sync.c's members.
 */
#include "sync.h"

#include <stddef.h>
#include <string.h>

/* policies.deepspeed */
typedef struct ds_opts {
    int stage;        /* 1, 2 or 3 */
    int grad_accum;   /* micro-steps per optimizer step */
    int overlap_comm; /* -1 in the table: by stage (finish) */
    int data;         /* prt_data_mode */
    int collective;   /* prt_coll_mode */
    int progress;     /* coll_set_progress: 0 barrier, 1 pipelined */
    double bucket_bytes;
    double backward_fraction;
    sync_fail_cfg fail; /* worlds with failures */
} ds_opts;

typedef struct z3dev {
    prt *rt;
    size_t d;
    int n_now; /* samples of the current micro-step (0: joined, or not a member) */
} z3dev;

/* Stage 3 runs on sync.c with a step hook: sync.c keeps the members, the
 * checkpoints and the restarts (worlds with failures); this loop runs one
 * micro-step among the members each time sync.c starts a group. */
typedef struct z3_state {
    sync_hooks hooks; /* borrowed by sync.c for the run */
    z3dev *dev;
    int overlap;
    double backward_fraction;
    int phase;        /* 0 forward, 1 backward (no overlap); 2 whole step (overlap) */
    size_t computing; /* devices still computing this phase */
    int gathers_left; /* overlap: all-gathers still running */
} z3_state;

static z3_state *z3_of(prt *rt)
{
    return sync_hooks_ctx(rt);
}

static void z3_coll(prt *rt, coll_kind k, prt_fn fn)
{
    if (sync_coll(rt, k, prt_scn(rt)->model.model_bytes, fn))
        prt_fail(rt, DP_ENOMEM, "out of memory");
}

static void z3_step_done(prt *rt, void *ctx)
{
    (void)ctx;
    sync_learn_step(rt);
    if (prt_work_left(rt))
        sync_next(rt);
    else if (prt_end_epoch(rt) > 0)
        sync_next_epoch(rt); /* the checkpoint when one is due; in a periodic world, from an event at now */
}

static void z3_reduce(prt *rt)
{
    z3_coll(rt, COLL_REDUCE_SCATTER, z3_step_done);
}

static void z3_compute_phase(prt *rt, void *ctx);

/* One device finished its compute of the phase. */
static void z3_dev_done(prt *rt, void *ctx)
{
    (void)ctx;
    z3_state *st = z3_of(rt);
    if (--st->computing > 0)
        return;
    if (st->phase == 0) { /* forward done everywhere: gather for backward */
        st->phase = 1;
        z3_coll(rt, COLL_ALLGATHER, z3_compute_phase);
    } else if (st->phase == 1) {
        z3_reduce(rt);
    } else if (st->gathers_left == 0) {
        z3_reduce(rt);
    }
}

static void z3_compute_phase(prt *rt, void *ctx)
{
    (void)ctx;
    z3_state *st = z3_of(rt);
    double bwd = st->backward_fraction;
    double part = st->phase == 0 ? 1 - bwd : st->phase == 1 ? bwd : 1.0;
    st->computing = 1; /* guard: no completion below can finish the phase early */
    for (size_t d = 0; d < prt_n(rt); d++) {
        z3dev *zd = &st->dev[d];
        if (zd->n_now == 0)
            continue;
        st->computing++;
        if (prt_compute(rt, d, zd->n_now, part, z3_dev_done, zd, NULL))
            return;
    }
    z3_dev_done(rt, NULL); /* drop the guard */
}

static void z3_gather_done(prt *rt, void *ctx)
{
    (void)ctx;
    z3_state *st = z3_of(rt);
    if (--st->gathers_left > 0) {
        z3_coll(rt, COLL_ALLGATHER, z3_gather_done);
        return;
    }
    if (st->computing == 0)
        z3_reduce(rt);
}

/* sync.c's step hook: one micro-step (after a restart, everything of the
 * abandoned step is set anew here). */
static void z3_step_start(prt *rt, void *ctx)
{
    z3_state *st = ctx;
    for (size_t d = 0; d < prt_n(rt); d++) {
        z3dev *zd = &st->dev[d];
        int bs = prt_scn(rt)->groups[prt_scn(rt)->devices[d].group].batch;
        zd->n_now = prt_left(rt)[d] < bs ? (int)prt_left(rt)[d] : bs;
        prt_left(rt)[d] -= zd->n_now;
    }
    st->computing = 0;
    if (st->overlap) {
        st->phase = 2;
        st->gathers_left = 2; /* before forward, before backward: prefetched */
        z3_coll(rt, COLL_ALLGATHER, z3_gather_done);
        if (!prt_failed(rt))
            z3_compute_phase(rt, NULL);
    } else {
        st->phase = 0;
        z3_coll(rt, COLL_ALLGATHER, z3_compute_phase);
    }
}

static int stage3_start(prt *rt, const ds_opts *o)
{
    z3_state *st = dp_calloc(1, sizeof *st);
    if (st)
        st->dev = dp_calloc(prt_n(rt), sizeof *st->dev);
    if (!st || !st->dev) {
        if (st)
            dp_free(st->dev);
        dp_free(st);
        return dp_err_set(prt_err(rt), DP_ENOMEM, "out of memory");
    }
    st->overlap = o->overlap_comm;
    st->backward_fraction = o->backward_fraction;
    st->hooks = (sync_hooks){.step = z3_step_start, .ctx = st};
    for (size_t d = 0; d < prt_n(rt); d++)
        st->dev[d] = (z3dev){rt, d, 0};
    sync_cfg cfg = {
        .micro_per_sync = 1,
        .gather_every = 1,
        .overlap = 0, /* the step hook overlaps by itself: no buckets */
        .bucket_bytes = o->bucket_bytes,
        .backward_fraction = o->backward_fraction,
        .op = COLL_REDUCE_SCATTER,
        .data = (prt_data_mode)o->data,
        .mode = (prt_coll_mode)o->collective,
        .pipelined = o->progress,
        .hooks = &st->hooks,
        .fail = o->fail,
    };
    cfg.fail.ckpt_sharded = 1; /* ZeRO: each rank saves its partition */
    int rc = sync_start(rt, &cfg);
    if (!prt_state(rt)) { /* sync.c did not keep it: free st here */
        dp_free(st->dev);
        dp_free(st);
    }
    return rc;
}

static int ds_start(prt *rt, const void *opts)
{
    const ds_opts *o = opts;
    if (o->stage == 3)
        return stage3_start(rt, o);
    /* Stage 1 keeps full gradients and reduces them at the accumulation
     * boundary; stage 2 keeps only its partition of them, so each backward
     * pass's gradients are reduce-scattered at once (DeepSpeed's
     * reduce_ipg_grads runs in every backward hook), and only the
     * optimizer step (every grad_accum micro-steps) all-gathers. */
    int stage2 = o->stage == 2;
    sync_cfg cfg = {
        .micro_per_sync = stage2 ? 1 : o->grad_accum,
        .gather_every = stage2 ? o->grad_accum : 1,
        .overlap = o->overlap_comm,
        .bucket_bytes = o->bucket_bytes,
        .backward_fraction = o->backward_fraction,
        .op = COLL_REDUCE_SCATTER,
        .allgather_after = 1,
        .data = (prt_data_mode)o->data,
        .mode = (prt_coll_mode)o->collective,
        .pipelined = o->progress,
        .fail = o->fail,
    };
    cfg.fail.ckpt_sharded = 1; /* ZeRO: each rank saves its partition */
    return sync_start(rt, &cfg);
}

static void ds_free(prt *rt, const void *opts)
{
    const ds_opts *o = opts;
    if (o->stage == 3) {
        z3_state *st = sync_hooks_ctx(rt);
        if (st)
            dp_free(st->dev);
        dp_free(st);
    }
    sync_free(rt);
}

/* DeepSpeed's overlap_comm defaults to off, but stage 3 prefetches. */
static void ds_finish(void *opts)
{
    ds_opts *o = opts;
    if (o->overlap_comm < 0)
        o->overlap_comm = o->stage == 3;
}

static int ds_check(const policy_def *p, const scn_scenario *s, const void *opts, dp_err *err)
{
    const ds_opts *o = opts;
    return coll_check_flows(s, p->name, (prt_coll_mode)o->collective, err);
}

static void ds_on_device(prt *rt, const void *opts, size_t d, int up)
{
    (void)opts;
    sync_on_device(rt, d, up); /* every stage runs on sync.c's failure machinery */
}

/* Stages 1-2 run on sync.c alone.  Stage 3 adds its step loop's state:
 * the phase and counters (at a boundary no phase is running) and each
 * device's micro-step size. */
static size_t ds_steady_state(prt *rt, const void *opts, unsigned char *buf, size_t cap)
{
    const ds_opts *o = opts;
    if (o->stage != 3)
        return sync_steady_state(rt, buf, cap);
    const z3_state *z = z3_of(rt);
    size_t k = sync_steady_state_hooked(rt, buf, cap), n = prt_n(rt);
    if (k == 0 || !z)
        return 0;
    int v[3] = {z->phase, z->gathers_left, (int)z->computing};
    size_t need = k + sizeof v + n * sizeof(int);
    if (need > cap)
        return need;
    memcpy(buf + k, v, sizeof v);
    for (size_t d = 0; d < n; d++)
        memcpy(buf + k + sizeof v + d * sizeof(int), &z->dev[d].n_now, sizeof(int));
    return need;
}

static const popt ds_table[] = {
    {"stage", NULL, POPT_INT, SCN_UNIT_NUMBER, offsetof(ds_opts, stage), 2, 1, 3, NULL,
     "ZeRO stage: 1 optimizer state, 2 + gradients, 3 + parameters partitioned"},
    {"grad_accum", NULL, POPT_INT, SCN_UNIT_NUMBER, offsetof(ds_opts, grad_accum), 1, 1, 1000000, NULL,
     "micro-steps per optimizer step (gradient accumulation)"},
    {"overlap_comm", NULL, POPT_BOOL, SCN_UNIT_NUMBER, offsetof(ds_opts, overlap_comm), -1, 0, 0, NULL,
     "communication overlaps compute (default: off for stages 1-2, on for stage 3)"},
    {"data", NULL, POPT_ENUM, SCN_UNIT_NUMBER, offsetof(ds_opts, data), PRT_DATA_REPLICATE, 0, 0,
     popt_data_names, "replicate: every device receives the dataset; shard: only its share"},
    {"collective", NULL, POPT_ENUM, SCN_UNIT_NUMBER, offsetof(ds_opts, collective), PRT_COLL_FLOWS, 0, 0,
     popt_collective_names,
     "flows: ring rounds as network flows; analytic: closed form (sees the ring's own link sharing)"},
    {"collective_progress", NULL, POPT_ENUM, SCN_UNIT_NUMBER, offsetof(ds_opts, progress), 0, 0, 0,
     popt_progress_names,
     POPT_OPTIONAL
     "barrier: a ring round waits for all its flows; pipelined: a member sends on as soon as its "
     "own send and its incoming chunk have ended (MPI's ring)"},
    {"bucket", "bucket_bytes", POPT_QUANTITY, SCN_UNIT_BYTES, offsetof(ds_opts, bucket_bytes), 25.0 * 1048576,
     0, 1e15, NULL, "gradient bucket size with overlap_comm (stages 1-2)"},
    {"backward_fraction", NULL, POPT_QUANTITY, SCN_UNIT_NUMBER, offsetof(ds_opts, backward_fraction),
     2.0 / 3.0, 0, 1, NULL, "share of a batch's time spent in the backward pass"},
    POPT_SYNC_FAILURE_ROWS(ds_opts, fail),
    {NULL, NULL, 0, 0, 0, 0, 0, 0, NULL, NULL},
};

const policy_def policy_deepspeed = {
    .name = "deepspeed",
    .label = "DeepSpeed",
    .color = "#d55e00",
    .summary = "DeepSpeed ZeRO stages 1-3: equal split, reduce-scatter and all-gather of partitioned state",
    .opts = ds_table,
    .opts_size = sizeof(ds_opts),
    .finish = ds_finish,
    .check = ds_check,
    .start = ds_start,
    .free = ds_free,
    .on_device = ds_on_device,
    .steady_state = ds_steady_state,
};
