/* fedgsync.c: FedGSync, weak synchronisation in a heterogeneous WAN:
 * devices grouped by their gradients, synchronous inside a group, groups
 * pushing to the global model asynchronously.
 *
 * Grouping (fedgsync.h, fgs_group): every device measures the gradient of
 * its next `probe` rows at the global model (the learner's, without
 * consuming them) and uploads it (the run's compressed gradient bytes);
 * the server groups the gradients' principal components into K groups by
 * approximate K-means, seeded from the run's seed.  Devices whose data
 * look alike (label-skewed shards of the same labels) end up together.
 * Every `regroup` rounds (a round: K pushes, one a group on average) the
 * groups finish their push, every device downloads the global model, and
 * the grouping is done again from fresh gradients.
 *
 * A group round: every member runs `steps` local batches (its scenario
 * batch, from the epoch's data as a pool: its own share first, then the
 * share with most left, so fast groups take on what slow ones cannot),
 * then the group averages its models exactly (a ring all-reduce of the
 * model among its members: traffic inside a group is not coded).  After
 * `push_every` rounds the group's leader (the member nearest the server)
 * pushes the group's model to the server, delta-coded with `delta` (the
 * difference against the last model it pushed, quantised to `delta_bits`
 * bits, or coded with the run's `compression:` method when it has one),
 * else as the run's compression sends it.  The server merges pushes one
 * at a time (aggregate rate) into the global model, global = (1 - a)
 * global + a x, with a weight that balances the data distributions:
 * a = alpha x (D_g / D) / (p_g / p), D_g the samples the group holds, p_g
 * its pushes since the grouping and p everyone's, capped at 1 (a group
 * that pushes more often than its share of the data weighs less each
 * time, so each group's pull on the global model follows its data, not
 * its speed).  The leader downloads the new global model (exact) and
 * relays it to the group (a ring all-gather), which goes on.
 *
 * An epoch ends when the pool is empty and every group has pushed its
 * last round.  The learner must be on (`learning:` with an SGD model): the
 * grouping needs gradients, and grouping by speed instead would be a
 * different algorithm (docs/MODEL.md).  Not in worlds with failures.
 */
#include "commlight.h"
#include "fedgsync.h"
#include "policy.h"
#include "runtime.h"
#include "yamltree.h"

#include <gsl/gsl_linalg.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

/* ---- the grouping (fedgsync.h) ------------------------------------------- */

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* Y (n x c) = the unit, centred rows of G on their first c principal
 * components.  0 or DP_ENOMEM. */
static int pca(const double *G, size_t n, size_t P, size_t c, double *Y)
{
    int tall = n >= P;
    size_t rows = tall ? n : P, cols = tall ? P : n;
    double *X = dp_malloc(n * P * sizeof *X), *A = dp_malloc(rows * cols * sizeof *A);
    double *V = dp_malloc(cols * cols * sizeof *V), *S = dp_malloc(cols * sizeof *S),
           *work = dp_malloc(cols * sizeof *work);
    int rc = X && A && V && S && work ? 0 : DP_ENOMEM;
    for (size_t i = 0; !rc && i < n; i++) {
        double nrm = 0;
        for (size_t j = 0; j < P; j++)
            nrm += G[i * P + j] * G[i * P + j];
        nrm = sqrt(nrm);
        for (size_t j = 0; j < P; j++)
            X[i * P + j] = nrm > 0 ? G[i * P + j] / nrm : 0;
    }
    for (size_t j = 0; !rc && j < P; j++) {
        double mean = 0;
        for (size_t i = 0; i < n; i++)
            mean += X[i * P + j];
        mean /= (double)n;
        for (size_t i = 0; i < n; i++)
            A[tall ? i * P + j : j * n + i] = X[i * P + j] - mean;
    }
    if (!rc) { /* A = U S V^T with A the centred rows (tall) or their transpose */
        gsl_matrix_view a = gsl_matrix_view_array(A, rows, cols), v = gsl_matrix_view_array(V, cols, cols);
        gsl_vector_view s = gsl_vector_view_array(S, cols), w = gsl_vector_view_array(work, cols);
        gsl_linalg_SV_decomp(&a.matrix, &v.matrix, &s.vector, &w.vector);
        for (size_t i = 0; i < n; i++) /* the scores: U S (tall) or V S */
            for (size_t k = 0; k < c; k++)
                Y[i * c + k] = (tall ? A[i * cols + k] : V[i * cols + k]) * S[k];
    }
    dp_free(X);
    dp_free(A);
    dp_free(V);
    dp_free(S);
    dp_free(work);
    return rc;
}

static double dist2(const double *a, const double *b, size_t c)
{
    double s = 0;
    for (size_t k = 0; k < c; k++)
        s += (a[k] - b[k]) * (a[k] - b[k]);
    return s;
}

/* One k-means++ seeding and Lloyd's iterations: labels in lab, the sum of
 * squared distances returned.  cen: K x c, d2, cnt: scratch. */
static double kmeans_once(const double *Y, size_t n, size_t c, size_t K, gsl_rng *r, int *lab, double *cen,
                          double *d2, size_t *cnt)
{
    memcpy(cen, Y + gsl_rng_uniform_int(r, n) * c, c * sizeof *cen);
    for (size_t k = 1; k < K; k++) { /* the next centre with probability in proportion to D^2 */
        double tot = 0;
        for (size_t i = 0; i < n; i++) {
            d2[i] = INFINITY;
            for (size_t j = 0; j < k; j++) {
                double x = dist2(Y + i * c, cen + j * c, c);
                if (x < d2[i])
                    d2[i] = x;
            }
            tot += d2[i];
        }
        size_t pick = gsl_rng_uniform_int(r, n);
        if (tot > 0) {
            double u = gsl_rng_uniform(r) * tot, cum = 0;
            for (size_t i = 0; i < n; i++)
                if (d2[i] > 0 && (cum += d2[i]) > u) {
                    pick = i;
                    break;
                }
        }
        memcpy(cen + k * c, Y + pick * c, c * sizeof *cen);
    }
    for (size_t i = 0; i < n; i++)
        lab[i] = -1;
    for (int it = 0; it < 100; it++) {
        int moved = 0;
        for (size_t i = 0; i < n; i++) { /* nearest centre; ties: the lower */
            int best = 0;
            double bd = INFINITY;
            for (size_t k = 0; k < K; k++) {
                double x = dist2(Y + i * c, cen + k * c, c);
                if (x < bd)
                    bd = x, best = (int)k;
            }
            moved |= lab[i] != best;
            lab[i] = best;
            d2[i] = bd;
        }
        for (size_t k = 0; k < K; k++) { /* an empty cluster takes the point farthest from its centre */
            memset(cnt, 0, K * sizeof *cnt);
            for (size_t i = 0; i < n; i++)
                cnt[lab[i]]++;
            if (cnt[k])
                continue;
            size_t far = n;
            for (size_t i = 0; i < n; i++)
                if (cnt[lab[i]] > 1 && (far == n || d2[i] > d2[far]))
                    far = i;
            lab[far] = (int)k;
            d2[far] = 0;
            moved = 1;
        }
        memset(cen, 0, K * c * sizeof *cen);
        memset(cnt, 0, K * sizeof *cnt);
        for (size_t i = 0; i < n; i++) {
            cnt[lab[i]]++;
            for (size_t k = 0; k < c; k++)
                cen[(size_t)lab[i] * c + k] += Y[i * c + k];
        }
        for (size_t k = 0; k < K; k++)
            for (size_t j = 0; j < c; j++)
                cen[k * c + j] /= (double)cnt[k];
        if (!moved)
            break;
    }
    double in = 0;
    for (size_t i = 0; i < n; i++)
        in += dist2(Y + i * c, cen + (size_t)lab[i] * c, c);
    return in;
}

int fgs_group(const double *G, size_t n, size_t P, size_t K, size_t comp, uint64_t seed, int restarts,
              int *group)
{
    if (K < 1 || K > n)
        return DP_EINPUT;
    size_t c = comp < 1 ? 1 : comp;
    if (c > n)
        c = n;
    if (c > P)
        c = P;
    double *Y = dp_malloc(n * c * sizeof *Y), *cen = dp_malloc(K * c * sizeof *cen),
           *d2 = dp_malloc(n * sizeof *d2);
    size_t *cnt = dp_malloc(K * sizeof *cnt);
    int *lab = dp_malloc(n * sizeof *lab), *map = dp_malloc(K * sizeof *map);
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937); /* NULL when out of memory (GSL's handler aborts first) */
    int rc = Y && cen && d2 && cnt && lab && map && r ? 0 : DP_ENOMEM;
    if (!rc)
        rc = pca(G, n, P, c, Y);
    if (!rc) {
        gsl_rng_set(r, (unsigned long)mix64(seed ^ 0x66656467ULL));
        double best = INFINITY;
        for (int t = 0; t < (restarts < 1 ? 1 : restarts); t++) {
            double in = kmeans_once(Y, n, c, K, r, lab, cen, d2, cnt);
            if (in < best) {
                best = in;
                memcpy(group, lab, n * sizeof *group);
            }
        }
        for (size_t k = 0; k < K; k++) /* renumber in the order of the lowest row */
            map[k] = -1;
        int next = 0;
        for (size_t i = 0; i < n; i++)
            if (map[group[i]] < 0)
                map[group[i]] = next++;
        for (size_t i = 0; i < n; i++)
            group[i] = map[group[i]];
    }
    if (r)
        gsl_rng_free(r);
    dp_free(Y);
    dp_free(cen);
    dp_free(d2);
    dp_free(cnt);
    dp_free(lab);
    dp_free(map);
    return rc;
}

/* ---- the policy ---------------------------------------------------------- */

typedef struct fg_opts {
    int groups;     /* K (0: min(4, devices)) */
    int regroup;    /* rounds between groupings (a round: K pushes) */
    int components; /* principal components the grouping uses */
    int probe;      /* rows per gradient measurement */
    int steps;      /* local batches between a group's averages */
    int push_every; /* group rounds between pushes */
    double alpha;   /* base weight of a push */
    int delta;      /* pushes delta-coded */
    int delta_bits; /* their quantisation without compression: */
    int collective; /* prt_coll_mode of the rings inside a group */
} fg_opts;

typedef struct fg_dev {
    prt *rt;
    size_t d, slot; /* slot: its row among the participants */
    int grp;        /* its group */
    int done;       /* local batches this round */
} fg_dev;

typedef struct fg_grp {
    prt *rt;
    size_t *mem, m; /* members (into fg_state.order) */
    size_t leader;
    size_t arrived;
    int64_t round_taken, push_taken; /* samples this round, since the last push */
    int rounds;                      /* rounds since the last push */
    int idle;                        /* waits for the epoch's end or a regrouping */
    int active;                      /* in a round or pushing: it may merge again this epoch */
    double D;                        /* samples its members hold */
    int64_t pushes;                  /* since the grouping */
} fg_grp;

typedef struct fg_state {
    fg_opts o;
    size_t n, K, P;
    fg_dev *dev;
    fg_grp *grp;
    size_t *parts, n_parts, *order;
    double *G, Dtot, push_bytes, server_free;
    int *lab;
    size_t ready, pending;
    int64_t merges, merges_at_group, pushes_since, regroups;
    int closed; /* the epoch ended at its last merge; its relays finish before the next starts */
    cl_stats cs;
} fg_state;

static void group_round(prt *rt, fg_state *st, fg_grp *g);
static void exchange(prt *rt, fg_state *st, int download);

static int regroup_due(const fg_state *st)
{
    return st->merges - st->merges_at_group >= (int64_t)st->o.regroup * (int64_t)st->K;
}

static int emit(prt *rt, fg_state *st)
{
    if (cl_emit(rt, &st->cs) || prt_stat(rt, "fedgsync.groups", RES_SCOPE_RUN, 0, 0, (double)st->K) ||
        prt_stat(rt, "fedgsync.regroups", RES_SCOPE_RUN, 0, 0, (double)st->regroups) ||
        prt_stat(rt, "fedgsync.push_bytes", RES_SCOPE_RUN, 0, 0, st->push_bytes))
        return DP_ENOMEM;
    for (size_t d = 0; d < st->n; d++)
        if (prt_stat(rt, "fedgsync.group", RES_SCOPE_DEVICE, (int64_t)d, 0, (double)st->dev[d].grp))
            return DP_ENOMEM;
    return 0;
}

/* The epoch ends now (docs/MODEL.md, "When a run ends": at its model's
 * last average): the last epoch's statistics, then the runtime's end.
 * 1 when another epoch opens, 0 when the run ended (or failed). */
static int close_epoch(prt *rt, fg_state *st)
{
    if (prt_epoch(rt) >= prt_scn(rt)->training.epochs && emit(rt, st))
        return 0;
    return prt_end_epoch(rt) > 0;
}

/* Every group idle: the epoch ends when the pool is empty (unless its last
 * merge ended it already); then a regrouping when one is due, else the
 * groups go on. */
static void barrier(prt *rt, fg_state *st)
{
    for (size_t k = 0; k < st->K; k++)
        if (!st->grp[k].idle)
            return;
    if (st->closed) /* ended at its last merge (merged) */
        st->closed = 0;
    else if (!prt_work_left(rt) && close_epoch(rt, st) <= 0)
        return;
    if (regroup_due(st)) {
        exchange(rt, st, 1);
        return;
    }
    for (size_t k = 0; k < st->K && !prt_failed(rt); k++) {
        st->grp[k].idle = 0;
        group_round(rt, st, &st->grp[k]);
    }
}

/* The group holds the new global model: on, or idle. */
static void relayed(prt *rt, void *ctx)
{
    fg_grp *g = ctx;
    fg_state *st = prt_state(rt);
    if (st->closed || regroup_due(st) || !prt_work_left(rt)) {
        g->idle = 1;
        barrier(rt, st);
        return;
    }
    group_round(rt, st, g);
}

static void on_global(void *ctx, uint64_t id)
{
    (void)id;
    fg_grp *g = ctx;
    prt *rt = g->rt;
    fg_state *st = prt_state(rt);
    prt_set_act(rt, g->leader, RES_ACT_WAIT);
    if (g->m < 2) {
        relayed(rt, g);
        return;
    }
    double M = prt_scn(rt)->model.model_bytes; /* the leader relays it, exact */
    if (st->o.collective == PRT_COLL_ANALYTIC)
        cl_tally_ring(rt, &st->cs, g->mem, g->m, COLL_ALLGATHER, M);
    if (coll_start_among(rt, COLL_ALLGATHER, M, st->o.collective, g->mem, g->m, relayed, g))
        prt_fail(rt, DP_ENOMEM, "out of memory");
}

/* The server merges the group's push into the global model now. */
static void merged(prt *rt, void *ctx)
{
    fg_grp *g = ctx;
    fg_state *st = prt_state(rt);
    g->pushes++;
    st->pushes_since++;
    double a = st->o.alpha * (g->D / st->Dtot) / ((double)g->pushes / (double)st->pushes_since);
    if (a > 1)
        a = 1;
    long stale = prt_learn_merge(rt, g->leader, g->mem, g->m, a, st->o.delta ? st->o.delta_bits : 0);
    cl_update(&st->cs, g->push_taken, (int64_t)g->m, stale);
    st->merges++;
    g->push_taken = 0;
    g->rounds = 0;
    for (size_t i = 0; i < g->m; i++) /* the download is served now: the group goes on from this model */
        prt_learn_pull(rt, g->mem[i]);
    g->active = 0;
    int last = !prt_work_left(rt);
    for (size_t k = 0; k < st->K && last; k++)
        last = !st->grp[k].active;
    if (last) { /* no group will merge again: the epoch's model is averaged */
        if (!close_epoch(rt, st))
            return; /* the run ended here: nothing more is sent */
        st->closed = 1;
    }
    cl_download(rt, g->leader, prt_scn(rt)->model.model_bytes, on_global, g);
}

static void on_pushed(void *ctx, uint64_t id)
{
    (void)id;
    fg_grp *g = ctx;
    prt *rt = g->rt;
    fg_state *st = prt_state(rt);
    prt_set_act(rt, g->leader, RES_ACT_WAIT);
    double t = (st->server_free > prt_now(rt) ? st->server_free : prt_now(rt)) + cl_aggregate_s(rt, 1);
    st->server_free = t; /* one merge at a time, in arrival order */
    if (prt_at(rt, t, merged, g))
        prt_fail(rt, DP_ENOMEM, "out of memory");
}

static void push(prt *rt, fg_state *st, fg_grp *g)
{
    cl_upload(rt, g->leader, st->push_bytes, on_pushed, g);
}

/* The group's models averaged: push, or another round. */
static void averaged(prt *rt, void *ctx)
{
    fg_grp *g = ctx;
    fg_state *st = prt_state(rt);
    prt_learn_group_average(rt, g->mem, g->m);
    st->cs.rounds++;
    if (++g->rounds >= st->o.push_every || !prt_work_left(rt))
        push(rt, st, g);
    else
        group_round(rt, st, g);
}

/* Every member has run its batches of the round (or found the pool empty). */
static void round_done(prt *rt, fg_state *st, fg_grp *g)
{
    for (size_t i = 0; i < g->m; i++)
        prt_set_act(rt, g->mem[i], RES_ACT_WAIT);
    if (g->round_taken == 0) { /* the pool is empty */
        if (g->push_taken > 0) {
            push(rt, st, g);
        } else {
            g->idle = 1;
            g->active = 0;
            barrier(rt, st);
        }
        return;
    }
    g->push_taken += g->round_taken;
    if (g->m < 2) {
        averaged(rt, g);
        return;
    }
    double M = prt_scn(rt)->model.model_bytes; /* inside a group: exact */
    if (st->o.collective == PRT_COLL_ANALYTIC)
        cl_tally_ring(rt, &st->cs, g->mem, g->m, COLL_ALLREDUCE, M);
    if (coll_start_among(rt, COLL_ALLREDUCE, M, st->o.collective, g->mem, g->m, averaged, g))
        prt_fail(rt, DP_ENOMEM, "out of memory");
}

static void step(prt *rt, fg_state *st, fg_dev *v);

static void after_step(prt *rt, void *ctx)
{
    fg_dev *v = ctx;
    v->done++;
    step(rt, prt_state(rt), v);
}

static void step(prt *rt, fg_state *st, fg_dev *v)
{
    fg_grp *g = &st->grp[v->grp];
    const scn_scenario *s = prt_scn(rt);
    int n = v->done < st->o.steps ? cl_take(rt, v->d, s->groups[s->devices[v->d].group].batch) : 0;
    if (n == 0) {
        if (++g->arrived == g->m)
            round_done(rt, st, g);
        return;
    }
    g->round_taken += n;
    st->cs.steps[v->d]++;
    prt_compute_step(rt, v->d, n, after_step, v, NULL);
}

static void group_round(prt *rt, fg_state *st, fg_grp *g)
{
    g->active = 1;
    g->arrived = 0;
    g->round_taken = 0;
    for (size_t i = 0; i < g->m; i++)
        st->dev[g->mem[i]].done = 0;
    for (size_t i = 0; i < g->m && !prt_failed(rt); i++)
        step(rt, st, &st->dev[g->mem[i]]);
}

/* Seconds of the path from device d to the server (its latency). */
static double to_server_s(prt *rt, size_t d)
{
    int links[NET_MAX_PATH];
    size_t nl = 0;
    double lat = INFINITY;
    if (world_path(prt_world(rt), (int)d + 1, 0, links, &nl, &lat))
        return INFINITY;
    return lat;
}

/* Every gradient is in: group, then every group starts. */
static void regroup(prt *rt, fg_state *st)
{
    uint64_t seed = prt_seed(rt) ^ ((uint64_t)st->regroups * 0x9e3779b97f4a7c15ULL);
    int rc = fgs_group(st->G, st->n_parts, st->P, st->K, (size_t)st->o.components, seed, 8, st->lab);
    if (rc) { /* K <= the devices with data (fg_start): only memory can fail */
        prt_fail(rt, rc, "out of memory grouping %zu devices", st->n_parts);
        return;
    }
    st->regroups++;
    st->merges_at_group = st->merges;
    st->pushes_since = 0;
    size_t at = 0;
    for (size_t k = 0; k < st->K; k++) { /* members in device order, group by group */
        fg_grp *g = &st->grp[k];
        *g = (fg_grp){.rt = rt, .mem = st->order + at};
        double best = INFINITY;
        for (size_t i = 0; i < st->n_parts; i++) {
            if (st->lab[i] != (int)k)
                continue;
            size_t d = st->parts[i];
            st->order[at++] = d;
            g->m++;
            st->dev[d].grp = (int)k;
            g->D += (double)prt_share(rt)[d];
            double lat = to_server_s(rt, d);
            if (g->m == 1 || lat < best)
                best = lat, g->leader = d;
        }
    }
    for (size_t k = 0; k < st->K && !prt_failed(rt); k++)
        group_round(rt, st, &st->grp[k]);
}

static void on_gradient(void *ctx, uint64_t id)
{
    (void)id;
    fg_dev *v = ctx;
    prt *rt = v->rt;
    fg_state *st = prt_state(rt);
    prt_set_act(rt, v->d, RES_ACT_WAIT);
    if (--st->pending == 0)
        regroup(rt, st);
}

/* Device v holds the global model: its gradient there, uploaded. */
static void measure(prt *rt, fg_state *st, fg_dev *v)
{
    double loss;
    if (prt_learn_probe(rt, v->d, 1, (size_t)st->o.probe, st->G + v->slot * st->P, &loss))
        return;
    /* a gradient, as the run sends one */
    cl_upload(rt, v->d, prt_wire_bytes(rt, prt_scn(rt)->model.model_bytes), on_gradient, v);
}

static void on_model(void *ctx, uint64_t id)
{
    (void)id;
    fg_dev *v = ctx;
    prt_set_act(v->rt, v->d, RES_ACT_WAIT);
    measure(v->rt, prt_state(v->rt), v);
}

/* A grouping: (download: every device downloads the global model, then)
 * every device measures its gradient and uploads it. */
static void exchange(prt *rt, fg_state *st, int download)
{
    st->pending = st->n_parts;
    for (size_t i = 0; i < st->n_parts && !prt_failed(rt); i++) {
        fg_dev *v = &st->dev[st->parts[i]];
        if (!download) {
            measure(rt, st, v);
            continue;
        }
        prt_learn_pull(rt, v->d);
        cl_download(rt, v->d, prt_scn(rt)->model.model_bytes, on_model, v);
    }
}

static void on_ready(prt *rt, void *ctx)
{
    (void)ctx;
    fg_state *st = prt_state(rt);
    if (++st->ready == st->n_parts) /* everyone holds its shard and the initial model */
        exchange(rt, st, 0);
}

static int fg_check(const policy_def *p, const scn_scenario *s, const void *opts, dp_err *err)
{
    const fg_opts *o = opts;
    if ((size_t)o->groups > s->n_devices)
        return popt_fail(s, p->name, "groups", err,
                         "%d groups of %zu devices: at most one group a device (got %d)", o->groups,
                         s->n_devices, o->groups);
    const yt_node *m = scn_learning(s); /* the SGD learner: `learning:` with more than `efficiency` */
    if (!m || (m->n == 1 && yt_get(m, "efficiency")))
        return dp_err_set(
            err, DP_EINPUT,
            "policies.%s: FedGSync groups devices by their gradients: it needs `learning:` in the "
            "scenario (scenarios/README.md, Learning)",
            p->name);
    return coll_check_flows(s, p->name, (prt_coll_mode)o->collective, err);
}

extern const policy_def policy_fedgsync;

static int fg_start(prt *rt, const void *opts)
{
    size_t n = prt_n(rt);
    fg_state *st = dp_calloc(1, sizeof *st);
    prt_set_state(rt, st);
    if (!st)
        return dp_err_set(prt_err(rt), DP_ENOMEM, "out of memory");
    if (fg_check(&policy_fedgsync, prt_scn(rt), opts, prt_err(rt)))
        return DP_EINPUT;
    st->o = *(const fg_opts *)opts;
    st->n = n;
    prt_learn_mode(rt, PRT_LEARN_LOCAL);
    st->P = prt_learn_params(rt);
    st->dev = dp_calloc(n, sizeof *st->dev);
    st->parts = dp_calloc(n, sizeof *st->parts);
    st->order = dp_calloc(n, sizeof *st->order);
    st->lab = dp_calloc(n, sizeof *st->lab);
    if (!st->dev || !st->parts || !st->order || !st->lab || cl_stats_init(&st->cs, n))
        return dp_err_set(prt_err(rt), DP_ENOMEM, "out of memory for %zu devices", n);
    for (size_t d = 0; d < n; d++)
        st->dev[d] = (fg_dev){.rt = rt, .d = d};
    int rc = cl_distribute(rt, 1, st->dev, sizeof *st->dev, st->parts, &st->n_parts, on_ready);
    if (rc)
        return rc;
    size_t K = st->o.groups ? (size_t)st->o.groups : (st->n_parts < 4 ? st->n_parts : 4);
    if (K > st->n_parts)
        return dp_err_set(prt_err(rt), DP_EINPUT,
                          "policies.fedgsync.groups: %zu groups but only %zu devices hold data (got %zu)", K,
                          st->n_parts, K);
    st->K = K;
    st->grp = dp_calloc(K, sizeof *st->grp);
    st->G = dp_calloc(st->n_parts * (st->P ? st->P : 1), sizeof *st->G);
    if (!st->grp || !st->G)
        return dp_err_set(prt_err(rt), DP_ENOMEM, "out of memory for %zu devices", n);
    for (size_t i = 0; i < st->n_parts; i++) {
        st->dev[st->parts[i]].slot = i;
        st->Dtot += (double)prt_share(rt)[st->parts[i]];
    }
    st->push_bytes =
        prt_delta_wire_bytes(rt, st->o.delta ? st->o.delta_bits : 0, prt_scn(rt)->model.model_bytes);
    return 0;
}

static void fg_free(prt *rt, const void *opts)
{
    (void)opts;
    fg_state *st = prt_state(rt);
    if (st) {
        dp_free(st->dev);
        dp_free(st->grp);
        dp_free(st->parts);
        dp_free(st->order);
        dp_free(st->lab);
        dp_free(st->G);
        cl_stats_free(&st->cs);
    }
    dp_free(st);
    prt_set_state(rt, NULL);
}

static const popt fg_table[] = {
    {"groups", NULL, POPT_INT, SCN_UNIT_NUMBER, offsetof(fg_opts, groups), 0, 0, 1e6, NULL,
     "K, the number of groups, at most the devices (0: min(4, devices))"},
    {"regroup", NULL, POPT_INT, SCN_UNIT_NUMBER, offsetof(fg_opts, regroup), 10, 1, 1e9, NULL,
     "rounds between groupings from fresh gradients (a round: K pushes to the global model)"},
    {"components", NULL, POPT_INT, SCN_UNIT_NUMBER, offsetof(fg_opts, components), 2, 1, 1e6, NULL,
     "principal components of the gradients the K-means grouping uses"},
    {"probe", NULL, POPT_INT, SCN_UNIT_NUMBER, offsetof(fg_opts, probe), 32, 1, 1e6, NULL,
     "rows of its data each device measures its gradient on for a grouping"},
    {"steps", NULL, POPT_INT, SCN_UNIT_NUMBER, offsetof(fg_opts, steps), 1, 1, 1e6, NULL,
     "local batches between a group's averages (1: synchronous SGD inside a group)"},
    {"push_every", NULL, POPT_INT, SCN_UNIT_NUMBER, offsetof(fg_opts, push_every), 8, 1, 1e9, NULL,
     "group rounds between pushes of the group's model to the global one"},
    {"alpha", NULL, POPT_QUANTITY, SCN_UNIT_NUMBER, offsetof(fg_opts, alpha), 0.5, 0, 1, NULL,
     "a push's weight alpha x (D_g / D) / (p_g / p), capped at 1: data share over push share"},
    {"delta", NULL, POPT_BOOL, SCN_UNIT_NUMBER, offsetof(fg_opts, delta), 1, 0, 1, NULL,
     "pushes between groups delta-coded (against the last model pushed), else sent as the run's compression"},
    {"delta_bits", NULL, POPT_INT, SCN_UNIT_NUMBER, offsetof(fg_opts, delta_bits), 8, 1, 32, NULL,
     "bits a delta entry is quantised to (without compression:; with it, its method codes the delta)"},
    {"collective", NULL, POPT_ENUM, SCN_UNIT_NUMBER, offsetof(fg_opts, collective), PRT_COLL_FLOWS, 0, 0,
     popt_collective_names, "the rings inside a group: flows through the network model, or analytic"},
    {NULL, NULL, 0, 0, 0, 0, 0, 0, NULL, NULL},
};

const policy_def policy_fedgsync = {
    .name = "fedgsync",
    .label = "FedGSync",
    .color = "#17becf",
    .summary =
        "FedGSync: devices grouped by their gradients' principal components, synchronous inside a group, "
        "groups pushing delta-coded models asynchronously (needs learning:)",
    .opts = fg_table,
    .opts_size = sizeof(fg_opts),
    .check = fg_check,
    .start = fg_start,
    .free = fg_free,
};
