/* sync.c: synchronous data parallelism in groups of micro-steps, the
 * machinery of DDP and ZeRO stages 1-2 (see sync_cfg in policy.h).
 *
 * Invariants within a group:
 *  - every device runs its own micro-steps back to back (no barrier between
 *    micro-steps of a group: they exchange nothing);
 *  - `started_last` counts the devices whose last micro-step of the group has
 *    started (or that have none); once it reaches N, every bucket's ready
 *    time is known (the max over devices of start + (fwd + bwd*(k+1)/K) * dt)
 *    and the ready events are scheduled;
 *  - buckets reduce in order, one at a time (DDP launches them in order on
 *    one stream): bucket k starts at max(ready_k, end of bucket k-1).
 */
#include "runtime.h"

#include <math.h>

typedef struct sdev {
    prt *rt;
    size_t d;
    int in_group; /* micro-steps left in this group */
} sdev;

typedef struct sync_state {
    sync_cfg cfg;
    sdev *dev;
    int K;           /* buckets */
    double *bsize;   /* bytes per bucket */
    double *ready_t; /* per bucket */
    char *ready;     /* per bucket: ready event fired */
    int next;        /* next bucket to reduce */
    int busy;        /* a bucket's collective is in flight */
    size_t started_last;
    double group_t0;
    size_t ready_devs; /* devices holding data + model */
    int since_gather;  /* groups reduced since the last all-gather */
} sync_state;

int equal_split(prt *rt, prt_data_mode data, double *bytes)
{
    int64_t D = prt_scn(rt)->dataset.samples, N = (int64_t)prt_n(rt);
    for (size_t d = 0; d < prt_n(rt); d++) {
        prt_share(rt)[d] = D / N + ((int64_t)d < D % N ? 1 : 0);
        bytes[d] = (data == PRT_DATA_REPLICATE ? (double)D : (double)prt_share(rt)[d]) *
                   prt_scn(rt)->dataset.sample_bytes;
    }
    return 0;
}

static void group_start(prt *rt, void *ctx);
static void micro_step(prt *rt, void *ctx);

static double bucket_frac(const sync_state *st, int k)
{
    if (!st->cfg.overlap)
        return 1.0;
    double bwd = st->cfg.backward_fraction;
    return (1 - bwd) + bwd * (double)(k + 1) / st->K;
}

static void try_next_bucket(prt *rt);

static void on_bucket_ready(prt *rt, void *ctx)
{
    sync_state *st = prt_state(rt);
    st->ready[(int)(intptr_t)ctx] = 1;
    try_next_bucket(rt);
}

/* A device's last micro-step of the group starts at t0 and lasts dt (dt = 0
 * and t0 = group start for a device with none). */
static void last_started(prt *rt, double t0, double dt)
{
    sync_state *st = prt_state(rt);
    for (int k = 0; k < st->K; k++) {
        double t = t0 + bucket_frac(st, k) * dt;
        if (t > st->ready_t[k])
            st->ready_t[k] = t;
    }
    if (++st->started_last < prt_n(rt))
        return;
    for (int k = 0; k < st->K; k++)
        if (prt_at(rt, st->ready_t[k], on_bucket_ready, (void *)(intptr_t)k))
            prt_fail(rt, DP_ENOMEM, "out of memory");
}

static void epoch_or_group_done(prt *rt, void *ctx)
{
    (void)ctx;
    if (prt_work_left(rt) || prt_end_epoch(rt) > 0)
        group_start(rt, NULL);
}

static void on_bucket_done(prt *rt, void *ctx)
{
    (void)ctx;
    sync_state *st = prt_state(rt);
    st->busy = 0;
    st->next++;
    if (st->next < st->K) {
        try_next_bucket(rt);
        return;
    }
    /* The optimizer steps (and ZeRO all-gathers the updated parameters)
     * every gather_every groups, and always at the end of an epoch. */
    int step = ++st->since_gather >= st->cfg.gather_every || !prt_work_left(rt);
    if (step)
        st->since_gather = 0;
    if (st->cfg.allgather_after && step) {
        if (coll_start(rt, COLL_ALLGATHER, prt_scn(rt)->model.model_bytes, st->cfg.mode, epoch_or_group_done,
                       NULL))
            prt_fail(rt, DP_ENOMEM, "out of memory");
        return;
    }
    epoch_or_group_done(rt, NULL);
}

static void try_next_bucket(prt *rt)
{
    sync_state *st = prt_state(rt);
    if (st->busy || st->next >= st->K || !st->ready[st->next])
        return;
    st->busy = 1;
    if (coll_start(rt, st->cfg.op, st->bsize[st->next], st->cfg.mode, on_bucket_done, NULL))
        prt_fail(rt, DP_ENOMEM, "out of memory");
}

static void micro_step(prt *rt, void *ctx)
{
    sdev *sd = ctx;
    if (sd->in_group <= 0)
        return; /* its group's work is done; it waits for the buckets */
    int bs = prt_scn(rt)->groups[prt_scn(rt)->devices[sd->d].group].batch;
    int64_t *left = &prt_left(rt)[sd->d];
    int n = *left < bs ? (int)*left : bs;
    *left -= n;
    sd->in_group--;
    double dt = 0;
    if (prt_compute(rt, sd->d, n, 1.0, micro_step, sd, &dt))
        return;
    if (sd->in_group == 0)
        last_started(rt, prt_now(rt), dt);
}

static void group_start(prt *rt, void *ctx)
{
    (void)ctx;
    sync_state *st = prt_state(rt);
    st->next = 0;
    st->busy = 0;
    st->started_last = 0;
    st->group_t0 = prt_now(rt);
    for (int k = 0; k < st->K; k++) {
        st->ready[k] = 0;
        st->ready_t[k] = st->group_t0;
    }
    for (size_t d = 0; d < prt_n(rt); d++) {
        sdev *sd = &st->dev[d];
        int bs = prt_scn(rt)->groups[prt_scn(rt)->devices[d].group].batch;
        int64_t steps = (prt_left(rt)[d] + bs - 1) / bs;
        sd->in_group = steps < st->cfg.micro_per_sync ? (int)steps : st->cfg.micro_per_sync;
    }
    for (size_t d = 0; d < prt_n(rt) && !prt_failed(rt); d++) {
        if (st->dev[d].in_group == 0)
            last_started(rt, st->group_t0, 0); /* joined: zero gradients, ready now */
        else
            micro_step(rt, &st->dev[d]);
    }
}

static void on_dev_ready(prt *rt, void *ctx)
{
    (void)ctx;
    sync_state *st = prt_state(rt);
    /* DDP's constructor is a collective: nobody starts before everyone holds
     * data and model. */
    if (++st->ready_devs == prt_n(rt))
        group_start(rt, NULL);
}

int sync_start(prt *rt, const sync_cfg *cfg)
{
    sync_state *st = dp_calloc(1, sizeof *st);
    if (!st)
        return dp_err_set(prt_err(rt), DP_ENOMEM, "out of memory");
    prt_set_state(rt, st);
    st->cfg = *cfg;
    double M = prt_scn(rt)->model.model_bytes;
    st->K = 1;
    if (cfg->overlap && cfg->bucket_bytes > 0 && cfg->bucket_bytes < M) {
        double k = ceil(M / cfg->bucket_bytes);
        if (k > 1e6)
            return dp_err_set(prt_err(rt), DP_EINPUT,
                              "bucket of %g bytes splits the %g-byte model into over a million buckets",
                              cfg->bucket_bytes, M);
        st->K = (int)k;
    }
    st->bsize = dp_calloc((size_t)st->K, sizeof *st->bsize);
    st->ready_t = dp_calloc((size_t)st->K, sizeof *st->ready_t);
    st->ready = dp_calloc((size_t)st->K, 1);
    st->dev = dp_calloc(prt_n(rt), sizeof *st->dev);
    double *bytes = dp_calloc(prt_n(rt), sizeof *bytes);
    if (!st->bsize || !st->ready_t || !st->ready || !st->dev || !bytes) {
        dp_free(bytes);
        return dp_err_set(prt_err(rt), DP_ENOMEM, "out of memory");
    }
    for (int k = 0; k < st->K; k++)
        st->bsize[k] = k + 1 < st->K ? cfg->bucket_bytes : M - (st->K - 1) * cfg->bucket_bytes;
    equal_split(rt, cfg->data, bytes);
    for (size_t d = 0; d < prt_n(rt); d++) {
        st->dev[d] = (sdev){rt, d, 0};
        prt_left(rt)[d] = prt_share(rt)[d];
    }
    int rc = prt_distribute(rt, bytes, NULL, on_dev_ready, NULL);
    dp_free(bytes);
    return rc;
}

void sync_free(prt *rt)
{
    sync_state *st = prt_state(rt);
    if (!st)
        return;
    dp_free(st->bsize);
    dp_free(st->ready_t);
    dp_free(st->ready);
    dp_free(st->dev);
    dp_free(st);
    prt_set_state(rt, NULL);
}
