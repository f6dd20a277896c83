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
 *
 * Failures (sync_fail_cfg): the group is the members mem[0..m) (every
 * device until an elastic restart), in ring order.  States: RUN; BLOCKED
 * from a member's failure until the timeout; WAITING for devices to come
 * back; RESTARTING while the checkpoint and data are resent.  Everything in
 * flight at the timeout is abandoned (prt_abort), so no callback of the
 * failed attempt runs afterwards.
 */
#include "runtime_perf.h"
#include "sync.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const char *const popt_on_failure_names[] = {"wait", "elastic", NULL};

#define SEEN_PAIRS 8 /* last_started: distinct (t0, dt) pairs remembered per group */

enum { ST_RUN = 0, ST_BLOCKED, ST_WAITING, ST_RESTARTING };

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
    /* (t0, dt) pairs last_started already folded into ready_t this group:
     * devices of one group usually repeat one, and folding it again changes
     * nothing (max is idempotent), so it is skipped (K work per device
     * was a fifth of a 100,000-device analytic run). */
    double seen_t0[SEEN_PAIRS], seen_dt[SEEN_PAIRS];
    int n_seen;
    double group_t0;
    size_t ready_devs; /* devices holding data + model */
    /* failures */
    int fail_on;
    size_t *mem, m; /* members, ring order */
    char *is_mem;   /* per device */
    int state;
    double blocked_since;
    int ckpt_epoch;      /* epochs the last checkpoint holds */
    double ckpt_compute; /* compute seconds of all devices at that checkpoint */
    int restarts_here;   /* restarts from that checkpoint */
    int64_t *held;       /* per device: samples of data it holds (a whole replica: D) */
    int64_t *target;     /* per device: what it holds once its transfer arrives */
    size_t ckpt_left;    /* checkpoint uploads in flight */
    int ckpt_waiting;    /* uploads done, write time running */
    int since_gather;    /* groups reduced since the last all-gather */
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
static void checkpoint(prt *rt);

/* Equal split of the dataset over the members (non-members get none). */
static void member_split(prt *rt, sync_state *st)
{
    int64_t D = prt_scn(rt)->dataset.samples, M = (int64_t)st->m;
    for (size_t d = 0; d < prt_n(rt); d++)
        prt_share(rt)[d] = 0;
    for (size_t i = 0; i < st->m; i++)
        prt_share(rt)[st->mem[i]] = D / M + ((int64_t)i < D % M ? 1 : 0);
}

int sync_coll(prt *rt, coll_kind k, double bytes, prt_fn fn)
{
    sync_state *st = prt_state(rt);
    if (st->m == prt_n(rt))
        return coll_start(rt, k, bytes, st->cfg.mode, fn, NULL);
    return coll_start_among(rt, k, bytes, st->cfg.mode, st->mem, st->m, fn, NULL);
}

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
 * and t0 = group start for a device with none); count: the devices it stands
 * for (runtime_perf.h, symmetry: 1 alone). */
static void last_started(prt *rt, double t0, double dt, size_t count)
{
    sync_state *st = prt_state(rt);
    int seen = 0;
    for (int i = 0; i < st->n_seen && !seen; i++)
        seen = st->seen_t0[i] == t0 && st->seen_dt[i] == dt;
    if (!seen) {
        for (int k = 0; k < st->K; k++) {
            double t = t0 + bucket_frac(st, k) * dt;
            if (t > st->ready_t[k])
                st->ready_t[k] = t;
        }
        int i = st->n_seen < SEEN_PAIRS ? st->n_seen++ : (int)(st->started_last % SEEN_PAIRS);
        st->seen_t0[i] = t0;
        st->seen_dt[i] = dt;
    }
    if ((st->started_last += count) < st->m)
        return;
    for (int k = 0; k < st->K; k++)
        if (prt_at(rt, st->ready_t[k], on_bucket_ready, (void *)(intptr_t)k))
            prt_fail(rt, DP_ENOMEM, "out of memory");
}

void sync_next_epoch(prt *rt)
{
    sync_state *st = prt_state(rt);
    if (st->fail_on && (prt_epoch(rt) - 1) % st->cfg.fail.ckpt_every == 0)
        checkpoint(rt);
    else if (prt_periodic(rt)) { /* from an event at now: a clean boundary (runtime.h) */
        if (prt_at(rt, prt_now(rt), group_start, NULL))
            prt_fail(rt, DP_ENOMEM, "out of memory");
    } else
        group_start(rt, NULL);
}

void sync_hold(prt *rt, size_t d, int64_t samples)
{
    sync_state *st = prt_state(rt);
    st->held[d] = st->target[d] = samples;
}

static void epoch_or_group_done(prt *rt, void *ctx)
{
    (void)ctx;
    if (prt_work_left(rt))
        group_start(rt, NULL);
    else if (prt_end_epoch(rt) > 0)
        sync_next_epoch(rt);
}

static void group_synced(prt *rt, void *ctx)
{
    sync_state *st = prt_state(rt);
    if (st->cfg.hooks && st->cfg.hooks->synced)
        st->cfg.hooks->synced(rt, st->cfg.hooks->ctx);
    else
        epoch_or_group_done(rt, ctx);
}

/* The update stream's optimizer step among the members: DDP and ZeRO
 * average per-rank means; the load balancers (hooks sizing steps) weigh
 * every sample of the global batch alike. */
void sync_learn_step(prt *rt)
{
    sync_state *st = prt_state(rt);
    const sync_hooks *h = st->cfg.hooks;
    prt_learn_sync(rt, st->mem, st->m, h && !h->step);
}

void sync_next(prt *rt)
{
    group_start(rt, NULL);
}

void *sync_hooks_ctx(const prt *rt)
{
    const sync_state *st = prt_state(rt);
    return st && st->cfg.hooks ? st->cfg.hooks->ctx : NULL;
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
    if (step) {
        st->since_gather = 0;
        sync_learn_step(rt);
    }
    if (st->cfg.allgather_after && step) {
        if (sync_coll(rt, COLL_ALLGATHER, prt_scn(rt)->model.model_bytes, group_synced))
            prt_fail(rt, DP_ENOMEM, "out of memory");
        return;
    }
    group_synced(rt, NULL);
}

static void try_next_bucket(prt *rt)
{
    sync_state *st = prt_state(rt);
    if (st->busy || st->next >= st->K || !st->ready[st->next])
        return;
    st->busy = 1;
    if (sync_coll(rt, st->cfg.op, st->bsize[st->next], on_bucket_done))
        prt_fail(rt, DP_ENOMEM, "out of memory");
}

static void micro_step(prt *rt, void *ctx)
{
    sdev *sd = ctx;
    if (sd->in_group <= 0)
        return; /* its group's work is done; it waits for the buckets */
    sync_state *st = prt_state(rt);
    const sync_hooks *h = st->cfg.hooks;
    if (h) {
        double dt = 0;
        sd->in_group = 0;
        if (h->compute(rt, sd->d, h->batch(rt, sd->d, h->ctx), micro_step, sd, &dt, h->ctx))
            return;
        last_started(rt, prt_now(rt), dt, 1);
        return;
    }
    int bs = prt_scn(rt)->groups[prt_scn(rt)->devices[sd->d].group].batch;
    int64_t *left = &prt_left(rt)[sd->d];
    int n = *left < bs ? (int)*left : bs;
    *left -= n;
    sd->in_group--;
    double dt = 0;
    if (prt_compute(rt, sd->d, n, 1.0, micro_step, sd, &dt))
        return;
    if (sd->in_group == 0)
        last_started(rt, prt_now(rt), dt, prt_sym_count(rt, sd->d));
}

static void group_start(prt *rt, void *ctx)
{
    (void)ctx;
    sync_state *st = prt_state(rt);
    st->next = 0;
    st->busy = 0;
    st->started_last = 0;
    st->n_seen = 0;
    st->group_t0 = prt_now(rt);
    for (int k = 0; k < st->K; k++) {
        st->ready[k] = 0;
        st->ready_t[k] = st->group_t0;
    }
    const sync_hooks *h = st->cfg.hooks;
    if (h && h->plan && h->plan(rt, h->ctx))
        return; /* the plan failed the run */
    if (h && h->step) {
        h->step(rt, h->ctx);
        return;
    }
    /* symmetry (runtime_perf.h): with every device a member, no hooks and
     * no failures, the devices that move as one are one; a follower's
     * micro-steps are its representative's */
    size_t n_reps = 0;
    const size_t *reps =
        !h && !st->fail_on && st->m == prt_n(rt) && prt_sym_begin(rt) ? prt_sym_reps(rt, &n_reps) : NULL;
    size_t nd = reps ? n_reps : prt_n(rt);
    for (size_t i = 0; i < nd; i++) {
        size_t d = reps ? reps[i] : i;
        if (h) {
            st->dev[d].in_group = h->batch(rt, d, h->ctx) > 0;
            continue;
        }
        sdev *sd = &st->dev[d];
        int bs = prt_scn(rt)->groups[prt_scn(rt)->devices[d].group].batch;
        int64_t steps = (prt_left(rt)[d] + bs - 1) / bs;
        sd->in_group = steps < st->cfg.micro_per_sync ? (int)steps : st->cfg.micro_per_sync;
    }
    size_t nm = reps ? n_reps : st->m;
    for (size_t i = 0; i < nm && !prt_failed(rt); i++) {
        size_t d = reps ? reps[i] : st->mem[i];
        if (st->dev[d].in_group == 0)
            last_started(rt, st->group_t0, 0, prt_sym_count(rt, d)); /* joined: zero gradients, ready now */
        else
            micro_step(rt, &st->dev[d]);
    }
}

static void on_dev_ready(prt *rt, void *ctx)
{
    sync_state *st = prt_state(rt);
    if (st->fail_on && ctx) {
        size_t d = (size_t)((sdev *)ctx - st->dev);
        st->held[d] = st->target[d];
    }
    /* DDP's constructor is a collective: nobody starts before everyone holds
     * data and model. */
    if (++st->ready_devs == st->m) {
        st->state = ST_RUN;
        group_start(rt, NULL);
    }
}

/* ---- failures -------------------------------------------------------------- */

static const char *dev_name(prt *rt, size_t d)
{
    return prt_scn(rt)->devices[d].name;
}

static double total_compute(prt *rt)
{
    double c = 0;
    for (size_t d = 0; d < prt_n(rt); d++)
        c += prt_compute_s(rt, d);
    return c;
}

static void ckpt_done(prt *rt, void *ctx);

/* Start members `want` (devices with want[d]): re-split the data, send
 * each the checkpoint (the model) and the data it lacks, start the group at
 * the checkpoint's next epoch.  `all_load`: every member loads the
 * checkpoint (a restart); else only newcomers (an elastic join). */
static void start_members(prt *rt, const char *want, int all_load)
{
    sync_state *st = prt_state(rt);
    size_t n = prt_n(rt);
    char *old = st->is_mem;
    double *bytes = dp_calloc(n, sizeof *bytes);
    int *skip = dp_calloc(n, sizeof *skip);
    void **ctx = dp_calloc(n, sizeof *ctx);
    if (!bytes || !skip || !ctx) {
        dp_free(bytes);
        dp_free(skip);
        dp_free(ctx);
        prt_fail(rt, DP_ENOMEM, "out of memory");
        return;
    }
    st->m = 0;
    for (size_t d = 0; d < n; d++)
        if (want[d])
            st->mem[st->m++] = d;
    const sync_hooks *h = st->cfg.hooks;
    if (h && h->restart) {
        if (h->restart(rt, want, st->held, h->ctx)) {
            dp_free(bytes);
            dp_free(skip);
            dp_free(ctx);
            return;
        }
    } else {
        member_split(rt, st);
    }
    double sb = prt_scn(rt)->dataset.sample_bytes;
    int64_t D = prt_scn(rt)->dataset.samples;
    st->ready_devs = 0;
    for (size_t d = 0; d < n; d++) {
        int newcomer = want[d] && !old[d];
        skip[d] = !want[d] || (!all_load && !newcomer);
        ctx[d] = &st->dev[d];
        if (!want[d])
            continue;
        int64_t need = st->cfg.data == PRT_DATA_REPLICATE ? D : prt_share(rt)[d];
        st->target[d] = need > st->held[d] ? need : st->held[d];
        if (skip[d]) {
            if (need > st->held[d]) { /* an elastic join re-shards: a member's share grew */
                skip[d] = 0;
            } else {
                st->ready_devs++;
                continue;
            }
        }
        bytes[d] = need > st->held[d] ? (double)(need - st->held[d]) * sb : 0;
    }
    for (size_t d = 0; d < n; d++)
        st->is_mem[d] = want[d];
    prt_rollback(rt, st->ckpt_epoch + 1);
    st->state = ST_RESTARTING;
    if (st->ready_devs == st->m) { /* nothing to send */
        st->state = ST_RUN;
        group_start(rt, NULL);
    } else if (prt_resend(rt, bytes, skip, on_dev_ready, ctx)) {
        prt_fail(rt, DP_ENOMEM, "out of memory");
    }
    dp_free(bytes);
    dp_free(skip);
    dp_free(ctx);
}

/* After the timeout: restart once the devices it needs are up. */
static void try_resume(prt *rt)
{
    sync_state *st = prt_state(rt);
    size_t n = prt_n(rt), up = 0;
    for (size_t d = 0; d < n; d++)
        up += prt_device_up(rt, d) != 0;
    if (!st->cfg.fail.elastic) {
        for (size_t d = 0; d < n; d++)
            if (!prt_device_up(rt, d) && !isfinite(world_dev_next_change(prt_world(rt), d))) {
                prt_fail(rt, DP_ERUN,
                         "device %s went down at t = %.6g s and never comes back: on_failure: wait cannot "
                         "resume the job (t = %.6g s)",
                         dev_name(rt, d), world_dev_down_since(prt_world(rt), d), prt_now(rt));
                return;
            }
        if (up < n)
            return; /* on_device(up) calls again */
    } else if (up == 0) {
        for (size_t d = 0; d < n; d++)
            if (isfinite(world_dev_next_change(prt_world(rt), d)))
                return;
        prt_fail(rt, DP_ERUN, "every device is down for good at t = %.6g s: nothing can resume the job",
                 prt_now(rt));
        return;
    }
    char *want = dp_calloc(n, 1);
    if (!want) {
        prt_fail(rt, DP_ENOMEM, "out of memory");
        return;
    }
    for (size_t d = 0; d < n; d++)
        want[d] = (char)(prt_device_up(rt, d) != 0);
    prt_add_restart(rt);
    prt_learn_restore(rt); /* the update stream: every device loads the checkpoint's model */
    prt_add_blocked_s(rt, prt_now(rt) - st->blocked_since);
    for (size_t d = 0; d < n; d++)
        st->is_mem[d] = 0; /* a restart: everyone loads the checkpoint */
    start_members(rt, want, 1);
    dp_free(want);
}

static void on_timeout(prt *rt, void *ctx)
{
    (void)ctx;
    sync_state *st = prt_state(rt);
    prt_abort(rt);
    prt_add_lost_s(rt, total_compute(rt) - st->ckpt_compute);
    st->ckpt_compute = total_compute(rt);
    if (++st->restarts_here > st->cfg.fail.max_restarts) {
        prt_fail(rt, DP_ERUN,
                 "no progress: %d restarts from the checkpoint of epoch %d by t = %.6g s; devices fail "
                 "faster than the job gets to its next checkpoint (max_restarts)",
                 st->restarts_here - 1, st->ckpt_epoch, prt_now(rt));
        return;
    }
    st->state = ST_WAITING;
    try_resume(rt);
}

void sync_on_device(prt *rt, size_t d, int up)
{
    sync_state *st = prt_state(rt);
    if (!st || prt_failed(rt))
        return;
    if (!up) {
        if (!prt_scn(rt)->groups[prt_scn(rt)->devices[d].group].avail.data_persists)
            st->held[d] = 0;
        if ((st->state == ST_RUN || st->state == ST_RESTARTING) && st->is_mem[d]) {
            st->state = ST_BLOCKED;
            st->blocked_since = prt_now(rt);
            if (prt_at(rt, prt_now(rt) + st->cfg.fail.timeout_s, on_timeout, NULL))
                prt_fail(rt, DP_ENOMEM, "out of memory");
        }
        return;
    }
    if (st->state == ST_WAITING)
        try_resume(rt);
}

static void ckpt_done(prt *rt, void *ctx)
{
    (void)ctx;
    sync_state *st = prt_state(rt);
    prt_learn_checkpoint(rt);
    st->ckpt_epoch = prt_epoch(rt) - 1;
    st->ckpt_compute = total_compute(rt);
    st->restarts_here = 0;
    if (st->cfg.fail.elastic) { /* devices back since the last restart join now */
        size_t n = prt_n(rt);
        char *want = dp_calloc(n, 1);
        int join = 0;
        if (!want) {
            prt_fail(rt, DP_ENOMEM, "out of memory");
            return;
        }
        for (size_t d = 0; d < n; d++) {
            want[d] = (char)(st->is_mem[d] || prt_device_up(rt, d));
            join |= want[d] && !st->is_mem[d];
        }
        if (join) {
            start_members(rt, want, 0);
            dp_free(want);
            return;
        }
        dp_free(want);
    }
    group_start(rt, NULL);
}

static void on_ckpt_upload(void *ctx, uint64_t id)
{
    (void)id;
    prt *rt = ctx;
    sync_state *st = prt_state(rt);
    if (--st->ckpt_left > 0)
        return;
    if (prt_at(rt, prt_now(rt) + st->cfg.fail.ckpt_write_s, ckpt_done, NULL))
        prt_fail(rt, DP_ENOMEM, "out of memory");
}

/* Write a checkpoint: the first member uploads the model (DDP's rank 0), or
 * each member its shard; then the write time. */
static void checkpoint(prt *rt)
{
    sync_state *st = prt_state(rt);
    double M = prt_scn(rt)->model.model_bytes;
    size_t k = st->cfg.fail.ckpt_sharded ? st->m : 1;
    st->ckpt_left = k;
    for (size_t i = 0; i < k; i++) {
        size_t d = st->mem[i];
        double b = M / (double)k;
        prt_add_server_bytes(rt, d, b);
        if (!world_transfer(prt_world(rt), (int)d + 1, 0, b, on_ckpt_upload, rt)) {
            prt_fail(rt, DP_ENOMEM, "out of memory");
            return;
        }
    }
}

int sync_start(prt *rt, const sync_cfg *cfg)
{
    sync_state *st = dp_calloc(1, sizeof *st);
    if (!st)
        return dp_err_set(prt_err(rt), DP_ENOMEM, "out of memory");
    prt_set_state(rt, st);
    st->cfg = *cfg;
    coll_set_progress(rt, cfg->pipelined);
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
    st->mem = dp_calloc(prt_n(rt), sizeof *st->mem);
    st->is_mem = dp_calloc(prt_n(rt), 1);
    st->held = dp_calloc(prt_n(rt), sizeof *st->held);
    st->target = dp_calloc(prt_n(rt), sizeof *st->target);
    double *bytes = dp_calloc(prt_n(rt), sizeof *bytes);
    void **ctx = dp_calloc(prt_n(rt), sizeof *ctx);
    if (!st->bsize || !st->ready_t || !st->ready || !st->dev || !st->mem || !st->is_mem || !st->held ||
        !st->target || !bytes || !ctx) {
        dp_free(ctx);
        dp_free(bytes);
        return dp_err_set(prt_err(rt), DP_ENOMEM, "out of memory");
    }
    for (int k = 0; k < st->K; k++)
        st->bsize[k] = k + 1 < st->K ? cfg->bucket_bytes : M - (st->K - 1) * cfg->bucket_bytes;
    if (cfg->hooks && cfg->hooks->split) {
        int rc = cfg->hooks->split(rt, bytes, cfg->hooks->ctx);
        if (rc) {
            dp_free(bytes);
            dp_free(ctx);
            return rc;
        }
    } else {
        equal_split(rt, cfg->data, bytes);
    }
    st->fail_on = scn_has_failures(prt_scn(rt));
    st->m = prt_n(rt);
    for (size_t d = 0; d < prt_n(rt); d++) {
        st->dev[d] = (sdev){rt, d, 0};
        ctx[d] = &st->dev[d];
        st->mem[d] = d;
        st->is_mem[d] = 1;
        st->target[d] = cfg->data == PRT_DATA_REPLICATE ? prt_scn(rt)->dataset.samples : prt_share(rt)[d];
        prt_left(rt)[d] = prt_share(rt)[d];
    }
    int rc = prt_distribute(rt, bytes, NULL, on_dev_ready, ctx);
    dp_free(bytes);
    dp_free(ctx);
    return rc;
}

/* At an epoch boundary everything a group resets (buckets, ready times)
 * is about to be reset; what carries over is the optimizer-step count, the
 * members and, per device, the micro-steps its group still owes (0 at a
 * boundary).  The configuration never changes.  Policies with hooks
 * (lbsync.c) keep state of their own: they cannot tell. */
static size_t steady_state(prt *rt, unsigned char *buf, size_t cap, int hooked)
{
    const sync_state *st = prt_state(rt);
    if (!st || (st->cfg.hooks && !hooked) || st->fail_on || st->state != ST_RUN)
        return 0;
    size_t n = prt_n(rt);
    size_t need = 2 * sizeof(int) + sizeof st->m + st->m * sizeof *st->mem + n * sizeof(int);
    if (need > cap)
        return need;
    size_t off = 0;
    memcpy(buf + off, &st->since_gather, sizeof(int));
    off += sizeof(int);
    memcpy(buf + off, &st->K, sizeof(int));
    off += sizeof(int);
    memcpy(buf + off, &st->m, sizeof st->m);
    off += sizeof st->m;
    memcpy(buf + off, st->mem, st->m * sizeof *st->mem);
    off += st->m * sizeof *st->mem;
    for (size_t d = 0; d < n; d++) {
        memcpy(buf + off, &st->dev[d].in_group, sizeof(int));
        off += sizeof(int);
    }
    return off;
}

size_t sync_steady_state(prt *rt, unsigned char *buf, size_t cap)
{
    return steady_state(rt, buf, cap, 0);
}

size_t sync_steady_state_hooked(prt *rt, unsigned char *buf, size_t cap)
{
    return steady_state(rt, buf, cap, 1);
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
    dp_free(st->mem);
    dp_free(st->is_mem);
    dp_free(st->held);
    dp_free(st->target);
    dp_free(st);
    prt_set_state(rt, NULL);
}
