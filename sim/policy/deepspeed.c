/* deepspeed.c: DeepSpeed-style ZeRO data parallelism (MODEL.md section 4).
 *
 * Stages 1-2 (optimizer state, + gradients partitioned): devices run
 * grad_accum micro-steps, then the optimizer step reduce-scatters the
 * gradients (N-1 rounds of M/N) and, after the partitioned update,
 * all-gathers the parameters (N-1 rounds of M/N): sync.c's machinery with
 * op = reduce-scatter and an all-gather after.  overlap_comm (default off,
 * as in DeepSpeed) lets the reduce-scatter run in buckets under the last
 * backward pass.
 *
 * Stage 3 (parameters partitioned too): every micro-step all-gathers the
 * parameters before forward and again before backward, and reduce-scatters
 * the gradients after it: 3 x (N-1)/N x M bytes per device per micro-step,
 * 1.5x stages 1-2's 2 x (N-1)/N x M (the ZeRO paper's figure).  Overlap
 * (default on, prefetching) runs both all-gathers alongside the compute; the
 * reduce-scatter waits for the backward and the gathers.  Without overlap
 * the phases run one after the other with a barrier between them.
 */
#include "policy.h"

typedef struct z3dev {
    prt *rt;
    size_t d;
    int n_now; /* samples of the current micro-step (0: joined) */
} z3dev;

typedef struct z3_state {
    z3dev *dev;
    int overlap;
    int phase;        /* 0 forward, 1 backward (no overlap); 2 whole step (overlap) */
    size_t computing; /* devices still computing this phase */
    int gathers_left; /* overlap: all-gathers still running */
    size_t ready_devs;
    scn_collective_mode mode;
} z3_state;

static void z3_step_start(prt *rt, void *ctx);

static void z3_step_done(prt *rt, void *ctx)
{
    (void)ctx;
    if (prt_work_left(rt) || prt_end_epoch(rt) > 0)
        z3_step_start(rt, NULL);
}

static void z3_reduce(prt *rt)
{
    z3_state *st = rt->policy_state;
    if (coll_start(rt, COLL_REDUCE_SCATTER, rt->s->model.model_bytes, st->mode, z3_step_done, NULL))
        prt_fail(rt, DP_ENOMEM, "out of memory");
}

static void z3_compute_phase(prt *rt, void *ctx);

/* One device finished its compute of the phase. */
static void z3_dev_done(prt *rt, void *ctx)
{
    (void)ctx;
    z3_state *st = rt->policy_state;
    if (--st->computing > 0)
        return;
    if (st->phase == 0) { /* forward done everywhere: gather for backward */
        st->phase = 1;
        if (coll_start(rt, COLL_ALLGATHER, rt->s->model.model_bytes, st->mode, z3_compute_phase, NULL))
            prt_fail(rt, DP_ENOMEM, "out of memory");
    } else if (st->phase == 1) {
        z3_reduce(rt);
    } else if (st->gathers_left == 0) {
        z3_reduce(rt);
    }
}

static void z3_compute_phase(prt *rt, void *ctx)
{
    (void)ctx;
    z3_state *st = rt->policy_state;
    double bwd = rt->s->ddp.backward_fraction;
    double part = st->phase == 0 ? 1 - bwd : st->phase == 1 ? bwd : 1.0;
    st->computing = 1; /* guard: no completion below can finish the phase early */
    for (size_t d = 0; d < rt->n; d++) {
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
    z3_state *st = rt->policy_state;
    if (--st->gathers_left > 0) {
        if (coll_start(rt, COLL_ALLGATHER, rt->s->model.model_bytes, st->mode, z3_gather_done, NULL))
            prt_fail(rt, DP_ENOMEM, "out of memory");
        return;
    }
    if (st->computing == 0)
        z3_reduce(rt);
}

static void z3_step_start(prt *rt, void *ctx)
{
    (void)ctx;
    z3_state *st = rt->policy_state;
    for (size_t d = 0; d < rt->n; d++) {
        z3dev *zd = &st->dev[d];
        int bs = rt->s->groups[rt->s->devices[d].group].batch;
        zd->n_now = rt->left[d] < bs ? (int)rt->left[d] : bs;
        rt->left[d] -= zd->n_now;
    }
    if (st->overlap) {
        st->phase = 2;
        st->gathers_left = 2; /* before forward, before backward: prefetched */
        if (coll_start(rt, COLL_ALLGATHER, rt->s->model.model_bytes, st->mode, z3_gather_done, NULL)) {
            prt_fail(rt, DP_ENOMEM, "out of memory");
            return;
        }
        z3_compute_phase(rt, NULL);
    } else {
        st->phase = 0;
        if (coll_start(rt, COLL_ALLGATHER, rt->s->model.model_bytes, st->mode, z3_compute_phase, NULL))
            prt_fail(rt, DP_ENOMEM, "out of memory");
    }
}

static void z3_dev_ready(prt *rt, void *ctx)
{
    (void)ctx;
    z3_state *st = rt->policy_state;
    if (++st->ready_devs == rt->n)
        z3_step_start(rt, NULL);
}

static int stage3_start(prt *rt, const scn_deepspeed_opts *o, int overlap)
{
    z3_state *st = dp_calloc(1, sizeof *st);
    double *bytes = dp_calloc(rt->n, sizeof *bytes);
    if (st)
        st->dev = dp_calloc(rt->n, sizeof *st->dev);
    rt->policy_state = st;
    if (!st || !st->dev || !bytes) {
        dp_free(bytes);
        return dp_err_set(rt->err, DP_ENOMEM, "out of memory");
    }
    st->overlap = overlap;
    st->mode = o->collective;
    equal_split(rt, o->data, bytes);
    for (size_t d = 0; d < rt->n; d++) {
        st->dev[d] = (z3dev){rt, d, 0};
        rt->left[d] = rt->share[d];
    }
    int rc = prt_distribute(rt, bytes, NULL, z3_dev_ready, NULL);
    dp_free(bytes);
    return rc;
}

int policy_deepspeed_start(prt *rt)
{
    const scn_deepspeed_opts *o = &rt->s->deepspeed;
    int overlap = o->overlap_comm >= 0 ? o->overlap_comm : o->stage == 3;
    if (o->stage == 3)
        return stage3_start(rt, o, overlap);
    sync_cfg cfg = {
        .micro_per_sync = o->grad_accum,
        .overlap = overlap,
        .bucket_bytes = rt->s->ddp.bucket_bytes,
        .backward_fraction = rt->s->ddp.backward_fraction,
        .op = COLL_REDUCE_SCATTER,
        .allgather_after = 1,
        .data = o->data,
        .mode = o->collective,
    };
    return sync_start(rt, &cfg);
}

void policy_deepspeed_free(prt *rt)
{
    if (rt->s->deepspeed.stage != 3) {
        sync_free(rt);
        return;
    }
    z3_state *st = rt->policy_state;
    if (st)
        dp_free(st->dev);
    dp_free(st);
    rt->policy_state = NULL;
}
