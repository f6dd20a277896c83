/* runtime_records.c: the runtime's records (runtime.c lists its files and
 * the invariants): the sums an epoch boundary folds, the FLOPS bins, the
 * timeline, each device's activity. */
#include "log.h"
#include "policy.h"
#include "runtime_energy.h"
#include "runtime_impl.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* The records an epoch boundary folds (see the invariants): rt->tot holds
 * the folded totals, and an epoch journal keeps one epoch's subtotals. */

void sums_free(prt_sums *x);

/* The arrays in one block (act_time first, owning it): freed at once, a
 * block this size goes back to the system, where seven apart (six of them
 * 8 bytes a device) could be left as holes in the heap, resident, while
 * prt_results makes the device records (C-ADP at 10^5 devices: 4.8 MB of
 * its peak). */
prt_sums *sums_new(size_t n)
{
    prt_sums *x = dp_calloc(1, sizeof *x);
    if (!x)
        return NULL;
    _Static_assert(sizeof *x->act_time == 8 && sizeof *x->batches == 8, "8-byte records");
    if (n > SIZE_MAX / 8 / (RES_ACT_COUNT + 6) || !(x->act_time = dp_calloc(n * (RES_ACT_COUNT + 6), 8))) {
        dp_free(x);
        return NULL;
    }
    double *at = x->act_time + n * RES_ACT_COUNT;
    x->busy_compute = at;
    x->coll_bytes = at + n;
    x->coll_busy_s = at + 2 * n;
    x->coll_recv_s = at + 3 * n;
    x->server_bytes = at + 4 * n;
    x->batches = (int64_t *)(void *)(at + 5 * n);
    return x;
}

void sums_free(prt_sums *x)
{
    if (!x)
        return;
    dp_free(x->act_time); /* the block */
    dp_free(x);
}

/* The running records, as a prt_sums whose arrays are the runtime's own. */
prt_sums running(prt *rt)
{
    return (prt_sums){rt->act_time,     rt->busy_compute, rt->coll_bytes,   rt->coll_busy_s, rt->coll_recv_s,
                      rt->server_bytes, rt->batches,      rt->samples_done, TL(rt)->busy_int};
}

/* Records are added and cleared a page at a time, leaving alone a page
 * whose result would be the bits it holds: a record nothing wrote (the
 * collectives' sums under C-ADP, the devices a plan leaves out) then never
 * becomes resident (C-ADP at 10^5 devices: ~6 MB of zeros).  A page of
 * 512 records; all +0.0 bits is what calloc and memset give. */
#define REC_PAGE 512

static int all_zero(const void *p, size_t n) /* n <= REC_PAGE 8-byte records */
{
    static const uint64_t zeros[REC_PAGE];
    return memcmp(p, zeros, 8 * n) == 0;
}

/* Some record is -0.0 (to + +0.0 would turn it into +0.0). */
static int any_minus_zero(const double *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] == 0 && signbit(p[i]))
            return 1;
    return 0;
}

/* to[i] += x[i] (to[i] = x[i] when copy) for i < n, page by page: a page
 * where x is all +0.0 and to would keep its bits is not written. */
static void add_recs(double *to, const double *x, size_t n, int copy)
{
    for (size_t i0 = 0; i0 < n; i0 += REC_PAGE) {
        size_t m = n - i0 < REC_PAGE ? n - i0 : REC_PAGE;
        if (all_zero(x + i0, m) && (copy ? all_zero(to + i0, m) : !any_minus_zero(to + i0, m)))
            continue;
        for (size_t i = i0; i < i0 + m; i++)
            to[i] = copy ? x[i] : to[i] + x[i];
    }
}

static void add_counts(int64_t *to, const int64_t *x, size_t n, int copy)
{
    for (size_t i0 = 0; i0 < n; i0 += REC_PAGE) {
        size_t m = n - i0 < REC_PAGE ? n - i0 : REC_PAGE;
        if (all_zero(x + i0, m) && (!copy || all_zero(to + i0, m)))
            continue;
        for (size_t i = i0; i < i0 + m; i++)
            to[i] = copy ? x[i] : to[i] + x[i];
    }
}

/* p[0, n) = +0.0 (n 8-byte records), writing only pages that are not. */
static void zero_recs(void *p, size_t n)
{
    char *c = p;
    for (size_t i0 = 0; i0 < n; i0 += REC_PAGE) {
        size_t m = n - i0 < REC_PAGE ? n - i0 : REC_PAGE;
        if (!all_zero(c + 8 * i0, m))
            memset(c + 8 * i0, 0, 8 * m);
    }
}

/* to += x, record by record; to = x instead when `copy`. */
void sums_add(prt_sums *to, const prt_sums *x, size_t n, int copy)
{
    add_recs(to->act_time, x->act_time, n * RES_ACT_COUNT, copy);
    add_recs(to->busy_compute, x->busy_compute, n, copy);
    add_recs(to->coll_bytes, x->coll_bytes, n, copy);
    add_recs(to->coll_busy_s, x->coll_busy_s, n, copy);
    add_recs(to->coll_recv_s, x->coll_recv_s, n, copy);
    add_recs(to->server_bytes, x->server_bytes, n, copy);
    add_counts(to->batches, x->batches, n, copy);
    to->samples_done = copy ? x->samples_done : to->samples_done + x->samples_done;
    to->busy_int = copy ? x->busy_int : to->busy_int + x->busy_int;
}

void running_zero(prt *rt)
{
    size_t n = rt->n;
    zero_recs(rt->act_time, n * RES_ACT_COUNT);
    zero_recs(rt->busy_compute, n);
    zero_recs(rt->coll_bytes, n);
    zero_recs(rt->coll_busy_s, n);
    zero_recs(rt->coll_recv_s, n);
    zero_recs(rt->server_bytes, n);
    zero_recs(rt->batches, n);
    rt->samples_done = 0;
    TL(rt)->busy_int = 0;
}

/* A whole-run total now: folded + running (the running value alone, the
 * same bits, where nothing is folded). */
static double total(const double *tot, const double *run, size_t i)
{
    return tot ? tot[i] + run[i] : run[i];
}

double prt_compute_s(const prt *rt, size_t d)
{
    if (rt->sym_rep)
        d = rt->sym_rep[d]; /* a follower's records are its representative's */
    return total(rt->tot ? rt->tot->busy_compute : NULL, rt->busy_compute, d);
}

/* ---- FLOPS bins -------------------------------------------------------------- */

static void bins_fit(prt *rt, double t)
{
    while (t >= rt->bin_s * MAX_BINS) {
        for (size_t k = 0; k < MAX_BINS / 2; k++)
            rt->bins[k] = rt->bins[2 * k] + rt->bins[2 * k + 1];
        memset(rt->bins + MAX_BINS / 2, 0, (MAX_BINS / 2) * sizeof *rt->bins);
        rt->bin_s *= 2;
    }
}

void prt_add_flops(prt *rt, double t0, double t1, double flops)
{
    prt_add_flops_k(rt, t0, t1, flops, 1);
}

/* The same k times in a row (k devices' batches, runtime_sym.c): each bin
 * gets its k additions in the order k calls would have made them. */
void prt_add_flops_k(prt *rt, double t0, double t1, double flops, size_t k)
{
    if (!(t1 > t0) || !(flops > 0)) {
        if (flops > 0) { /* instantaneous: credit the bin of t0 */
            bins_fit(rt, t0);
            for (size_t i = 0; i < k; i++)
                rt->bins[(size_t)(t0 / rt->bin_s)] += flops;
        }
        return;
    }
    bins_fit(rt, t1);
    double rate = flops / (t1 - t0);
    size_t k0 = (size_t)(t0 / rt->bin_s), k1 = (size_t)(t1 / rt->bin_s);
    if (k1 >= MAX_BINS)
        k1 = MAX_BINS - 1;
    for (size_t j = k0; j <= k1; j++) {
        double a = fmax(t0, (double)j * rt->bin_s), b = fmin(t1, (double)(j + 1) * rt->bin_s);
        if (b > a) {
            double v = rate * (b - a), *bin = &rt->bins[j];
            for (size_t i = 0; i < k; i++)
                *bin += v;
        }
    }
}

/* ---- timeline ---------------------------------------------------------------- */

/* Every device's histogram edges at twice the bin width: edge j of the
 * new width is edge 2j of the old (k * res_s is exact in both), so nothing
 * is computed and no histogram depends on when this happens.  A shared
 * row's sharers keep sharing: each holds the edges 2j < its next_edge,
 * now j < (next_edge + 1) / 2. */
void tl_widen(timeline *tl)
{
    for (size_t p = 0; p < tl->n_rows; p++) {
        double *c = tl->row[p];
        for (size_t j = 1; 2 * j < tl->row_fill[p]; j++)
            memcpy(c + j * RES_ACT_COUNT, c + 2 * j * RES_ACT_COUNT, RES_ACT_COUNT * sizeof *c);
        tl->row_fill[p] = (tl->row_fill[p] + 1) / 2;
    }
    for (size_t d = 0; d < tl->ndev; d++)
        tl->next_edge[d] = (tl->next_edge[d] + 1) / 2;
    tl->res_s *= 2;
    tl->gen++;
}

#define TL_ROW_BYTES ((TL_BINS + 1) * RES_ACT_COUNT * sizeof(double))

/* Device d's edge k (its next) is v: written into its row if first there,
 * else compared with what a device sharing the row wrote, and on a
 * difference d leaves with a copy of the edges before k (at most one row
 * per device: the last writer of a row never leaves it).  At 10^3
 * devices in lockstep the 64 timeline devices' 5 MB of edges are one
 * row.  0 or DP_ENOMEM. */
static int tl_put(timeline *tl, size_t d, size_t k, const double *v)
{
    size_t p = tl->row_of[d];
    if (k < tl->row_fill[p]) {
        if (memcmp(tl->row[p] + k * RES_ACT_COUNT, v, RES_ACT_COUNT * sizeof *v) == 0)
            return 0;
        double *c = dp_malloc(TL_ROW_BYTES);
        if (!c)
            return DP_ENOMEM;
        memcpy(c, tl->row[p], k * RES_ACT_COUNT * sizeof *c);
        p = tl->n_rows++;
        tl->row[p] = c;
        tl->row_fill[p] = k;
        tl->row_of[d] = (uint8_t)p;
    }
    memcpy(tl->row[p] + k * RES_ACT_COUNT, v, RES_ACT_COUNT * sizeof *v);
    tl->row_fill[p] = k + 1;
    return 0;
}

/* Device d's edges (a row, perhaps shared), from edge 0. */
static const double *tl_row(const timeline *tl, size_t d)
{
    return tl->row[tl->row_of[d]];
}

/* Device d (a timeline device, histograms on) ran activity cur from engine
 * time since to now, its running times at since being S (not yet charged
 * for this interval) and its folded ones rt->tot's: the cumulative times at
 * every bin edge up to now.  An edge's engine time is k * res_s - base, the
 * same arithmetic wherever the edge is computed (a fast-forward included). */
void tl_edges(prt *rt, size_t d, res_activity cur, double since, double now, const double *S)
{
    timeline *tl = TL(rt);
    const double *T = rt->tot ? rt->tot->act_time + d * RES_ACT_COUNT : NULL;
    for (;;) {
        size_t k = tl->next_edge[d];
        if (k > TL_BINS) {
            tl_widen(tl);
            continue;
        }
        double xr = (double)k * tl->res_s - rt->base;
        if (xr > now) {
            tl->next_xr[d] = xr;
            tl->edge_gen[d] = tl->gen;
            return;
        }
        double c[RES_ACT_COUNT];
        for (int a = 0; a < RES_ACT_COUNT; a++)
            c[a] = T ? T[a] + S[a] : S[a];
        c[cur] += xr - since;
        if (tl_put(tl, d, k, c)) {
            fail_oom(rt);
            return;
        }
        tl->next_edge[d] = k + 1;
    }
}

/* Switch from exact segments to histograms at absolute time now: the edges
 * the segments so far cover, from the segments, device by device (each
 * from its own segments in time order, as tl_put wants its edges), so
 * that devices with the same edges share a row from the start. */
static int go_coarse(prt *rt, double now)
{
    timeline *tl = TL(rt);
    if (!(tl->row[0] = dp_malloc(TL_ROW_BYTES)))
        return DP_ENOMEM;
    memset(tl->row[0], 0, RES_ACT_COUNT * sizeof(double)); /* edge 0 */
    tl->n_rows = 1;
    tl->row_fill[0] = 1;
    tl->coarse = 1;
    tl->res_s = 1e-3;
    while (now >= tl->res_s * TL_BINS)
        tl->res_s *= 2;
    for (size_t d = 0; d < tl->ndev; d++) {
        tl->next_edge[d] = 1;
        tl->row_of[d] = 0;
    }
    tl->gen++;
    /* a device's segments are in time order and end before now, so below
     * the last edge */
    for (size_t d = 0; d < tl->ndev; d++) {
        double cd[RES_ACT_COUNT] = {0};
        for (size_t i = 0; i < rt->r->n_segments; i++) {
            const res_segment *sg = &rt->r->segments[i];
            if ((size_t)sg->device != d)
                continue;
            for (size_t k = tl->next_edge[d]; k <= TL_BINS && (double)k * tl->res_s <= sg->t1_s; k++) {
                double x = (double)k * tl->res_s, c[RES_ACT_COUNT];
                memcpy(c, cd, sizeof c);
                if (x > sg->t0_s)
                    c[sg->act] += x - sg->t0_s;
                if (tl_put(tl, d, k, c))
                    return DP_ENOMEM;
                tl->next_edge[d] = k + 1;
            }
            cd[sg->act] += sg->t1_s - sg->t0_s;
        }
    }
    rt->r->n_segments = 0;
    return 0;
}

policy_segment_fn rt_segment_fn;
static void *segment_ctx;

void policy_set_segment_hook(policy_segment_fn fn, void *ctx)
{
    rt_segment_fn = fn;
    segment_ctx = ctx;
}

/* Device d's current activity a ends at absolute time t1: the segment hook
 * and, before histograms, an exact segment (a device's activity that goes
 * on through an epoch boundary stays one segment). */
static void timeline_seg(prt *rt, size_t d, res_activity a, double t1)
{
    timeline *tl = TL(rt);
    double t0 = tl->seg_t0[d];
    tl->seg_t0[d] = t1;
    if (!(t1 > t0))
        return;
    if (rt_segment_fn)
        rt_segment_fn(segment_ctx, d, (int)a, t0, t1);
    if (d >= tl->ndev || tl->coarse)
        return;
    if (rt->r->n_segments < SEG_EXACT) {
        if (res_add_segment(rt->r, (int)d, a, t0, t1))
            fail_oom(rt);
        return;
    }
    if (go_coarse(rt, t1))
        fail_oom(rt); /* set_act_at then adds this interval to the histograms */
}

/* Histograms -> segments: each bin shows its dominant activity.  After the
 * run's records are whole-run totals (prt_results). */
void timeline_finish(prt *rt, double T)
{
    timeline *tl = TL(rt);
    if (!tl->coarse)
        return;
    rt->r->timeline_res_s = tl->res_s;
    for (size_t d = 0; d < tl->ndev; d++) {
        const double *c = tl_row(tl, d);
        const double *end = rt->act_time + d * RES_ACT_COUNT; /* the edge at T */
        size_t ne = tl->next_edge[d];
        for (size_t k = 0; k < ne; k++) {
            int last = k + 1 >= ne;
            double t0 = (double)k * tl->res_s, t1 = last ? T : fmin((double)(k + 1) * tl->res_s, T);
            if (t1 <= t0)
                break;
            const double *lo = c + k * RES_ACT_COUNT, *hi = last ? end : c + (k + 1) * RES_ACT_COUNT;
            int best = RES_ACT_WAIT;
            double bv = -1;
            for (int a = 0; a < RES_ACT_COUNT; a++)
                if (hi[a] - lo[a] > bv) {
                    bv = hi[a] - lo[a];
                    best = a;
                }
            if (res_add_segment(rt->r, (int)d, (res_activity)best, t0, t1)) {
                fail_oom(rt);
                return;
            }
        }
    }
}

/* Device d changes to activity a at engine time now (a may be its current
 * one: the interval is closed and goes on). */
void set_act_at(prt *rt, size_t d, res_activity a, double now)
{
    timeline *tl = TL(rt);
    res_activity cur = rt->act[d];
    double since = rt->act_since[d], *S = rt->act_time + d * RES_ACT_COUNT;
    if (rt_segment_fn || (!tl->coarse && d < tl->ndev))
        timeline_seg(rt, d, cur, rt->base + now);
    /* below the next edge (cached), nothing to compute */
    if (tl->coarse && d < tl->ndev && !(tl->edge_gen[d] == tl->gen && now < tl->next_xr[d]))
        tl_edges(rt, d, cur, since, now, S);
    S[cur] += now - since;
    if (rt->energy)
        energy_switch(rt, d, a, rt->base + now);
    rt->act[d] = a;
    rt->act_since[d] = now;
}

int prt_hints(const prt *rt)
{
    return rt->n >= PREFETCH_MIN_DEVICES && !rt->shared; /* hints are per engine: one job's only */
}

void prt_prefetch_act(const prt *rt, size_t d)
{
    if (d >= rt->n)
        return;
    __builtin_prefetch(&rt->act[d]);
    __builtin_prefetch(&rt->act_since[d]);
    __builtin_prefetch(&rt->act_time[d * RES_ACT_COUNT]);
    __builtin_prefetch(&rt->act_time[d * RES_ACT_COUNT + RES_ACT_COUNT - 1]);
}

void prt_set_act(prt *rt, size_t d, res_activity a)
{
    sym_touch(rt, d);
    if (rt->act[d] == a)
        return;
    jrec_act(rt, d, a);
    set_act_at(rt, d, a, sim_now(rt->e));
}

void prt_rec_coll(prt *rt, size_t d, size_t next, double bytes, double busy_s)
{
    sym_touch(rt, d);
    sym_touch(rt, next);
    jrec(rt, (jent){.kind = J_COLL, .d = (int32_t)d, .n = (int32_t)next, .r0 = busy_s, .v1 = bytes});
    rt->coll_bytes[d] += bytes;
    rt->coll_busy_s[d] += busy_s;
    rt->coll_recv_s[next] += busy_s;
}

void prt_rec_ring(prt *rt, double chunk, int rounds)
{
    jrec(rt, (jent){.kind = J_RING, .n = rounds, .v1 = chunk});
    coll_ring_account(rt, chunk, rounds);
}
