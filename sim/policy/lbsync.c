/* lbsync.c: the machinery the load-balancing policies share (lbsync.h).
 *
 * One iteration is one sync.c group of one micro-step per device, sized by
 * the hooks below: `plan` picks each device's samples (b_i, or the last
 * iteration's split of the remainder), `compute` starts it and records its
 * time, `synced` (after the buckets' all-reduce) measures the barrier
 * waits, lets the method re-size, and ends epochs.
 *
 * Invariants:
 *  - sum of b = B and 0 <= b_i <= cap_i after every lb_apply (checked up
 *    front: sum of caps >= B, else lb_check refuses the scenario);
 *  - an epoch is exactly ceil(D / B) iterations and processes exactly D
 *    samples (the last iteration's split of the remainder sums to it);
 *  - wait_s of a device in an iteration is the time from the end of its
 *    compute to the end of the slowest device's (the barrier before the
 *    last bucket can reduce); a device with no samples waits it all.
 *
 * Shard data: a device holds round(D * b_i / B) samples for an epoch (its
 * share at the epoch's start); when that grows, the extra samples come from
 * the server (with dataset.parts from their nearest holders, prt_data_fetch)
 * at the epoch boundary and the next epoch starts when every
 * transfer has arrived; shrinking costs nothing.  Re-sizing within an
 * epoch (lbbsp, lbb) is assumed to draw on samples already held: dpsim
 * does not model a per-iteration data movement.
 *
 * Locality (option `locality`, data: shard): every solve of the split
 * (lb_solve_linear, lb_solve_general, hence lb_solve_nominal) pays for the
 * samples a device must move.  A device that holds h_i samples (its own
 * slice of dataset.parts at the start, its shard later) and receives the
 * others at r_i bytes/s (prt_data_rate: its nearest other holder's path,
 * as if alone) needs move_i(x) = (x D / B - h_i)+ sample_bytes / r_i
 * seconds for a per-iteration batch x.  The split minimises
 * J(x) = max_i move_i(x_i) + N max_i cost_i(x_i), N the iterations left
 * in the run: the moves happen once, the iterations N times.  For a bound
 * T on the moving time each device may take at most room_i(T) = (h_i + T
 * r_i / sample_bytes) B / D (and its memory cap); the compute split under
 * those caps is the method's own water-filling, and T is searched: from
 * the least T whose rooms hold B (0 when the devices hold every sample)
 * to the moving time of the split without the term, on a grid of
 * LB_LOC_GRID points, then by golden section around the best.  A search,
 * not a proof: J is never worse than the plain split's (which is a
 * candidate).
 */
#include "lbsync.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LB_LOC_GRID   16 /* grid points of the locality search */
#define LB_LOC_REFINE 24 /* golden-section steps after it */

/* A fractional part and its device, sorted by largest remainder. */
typedef struct lb_rem {
    double frac;
    size_t d;
} lb_rem;

typedef struct lb_xfer {
    lb *st;
    size_t d;
} lb_xfer;

struct lb {
    prt *rt;
    const lb_opts *o;
    const lb_method *m;
    void *mstate;
    sync_hooks hooks;
    size_t n;
    int64_t B, D;
    int64_t iters; /* per epoch */
    int64_t it;    /* iteration within the epoch, 0-based */
    double *x;
    int *b, *cap, *cur;
    int *cap0; /* memory caps; cap is cap0 for the members of a run with failures, 0 for the others */
    double *t, *t_end;
    double t0; /* the iteration's start */
    /* this epoch, per device */
    double *ep_t, *ep_wait;
    int64_t *ep_samples, *ep_last_samples;
    int *ep_min, *ep_max;
    double *ep_last_t;
    int64_t *held; /* shard: samples held */
    int64_t *need; /* scratch: each device's share of an epoch (may pass 2^31) */
    lb_xfer *xfer;
    int pending;
    int64_t rebalances;
    lb_rem *order; /* scratch of round_lr */
    /* locality: */
    double *rate;      /* bytes/s device d receives samples at (prt_data_rate) */
    double *room;      /* scratch: caps of a candidate */
    double *best;      /* scratch: the best split so far */
    double *capd;      /* cap as doubles (the plain solves' caps) */
    int64_t done_iter; /* iterations run so far (N = epochs x iters - done_iter) */
};

/* ---- accessors ------------------------------------------------------------ */

size_t lb_n(const lb *st)
{
    return st->n;
}
const lb_opts *lb_o(const lb *st)
{
    return st->o;
}
int64_t lb_B(const lb *st)
{
    return st->B;
}
void *lb_method_state(const lb *st)
{
    return st->mstate;
}
double *lb_x(lb *st)
{
    return st->x;
}
const int *lb_b(const lb *st)
{
    return st->b;
}
const int *lb_cap(const lb *st)
{
    return st->cap;
}
const int *lb_cur(const lb *st)
{
    return st->cur;
}
const double *lb_t(const lb *st)
{
    return st->t;
}
const double *lb_epoch_t(const lb *st)
{
    return st->ep_last_t;
}
const int64_t *lb_epoch_samples(const lb *st)
{
    return st->ep_last_samples;
}

/* ---- costs and caps ---------------------------------------------------------- */

static int64_t global_batch(const scn_scenario *s, const lb_opts *o)
{
    if (o->global_batch > 0)
        return o->global_batch;
    int64_t B = 0;
    for (size_t d = 0; d < s->n_devices; d++)
        B += s->groups[s->devices[d].group].batch;
    return B;
}

/* The memory check of the scenario loader (state + batch x activations <=
 * memory) solved for the batch; B when activations are free. */
static int64_t mem_cap(const scn_scenario *s, const scn_group *g, int64_t B)
{
    double act = s->model.activation_bytes_per_sample;
    if (!(act > 0))
        return B;
    double c = floor((g->memory_bytes - s->model.state_factor * s->model.model_bytes) / act);
    if (c < 0)
        return 0;
    return c < (double)B ? (int64_t)c : B;
}

static double group_cost(const scn_scenario *s, const scn_group *g, double x)
{
    return x > 0 ? scn_batch_cost(s, g, x, 0) : 0;
}

double lb_cost(const lb *st, size_t d, double x)
{
    const scn_scenario *s = prt_scn(st->rt);
    return group_cost(s, &s->groups[s->devices[d].group], x);
}

int lb_check(const scn_scenario *s, const char *policy, const lb_opts *o, dp_err *err)
{
    int rc = coll_check_flows(s, policy, (prt_coll_mode)o->collective, err);
    if (rc)
        return rc;
    int64_t B = global_batch(s, o), sum = 0;
    for (size_t d = 0; d < s->n_devices && sum < B; d++)
        sum += mem_cap(s, &s->groups[s->devices[d].group], B);
    if (sum < B)
        return popt_fail(s, policy, "global_batch", err,
                         "%lld samples per iteration do not fit in the devices' memory (at most %lld with "
                         "%g activation bytes per sample) (got %lld)",
                         (long long)B, (long long)sum, s->model.activation_bytes_per_sample, (long long)B);
    if (o->locality && o->data != PRT_DATA_SHARD)
        return popt_fail(s, policy, "locality", err,
                         "the byte term needs data: shard (a replicated device reads every sample whatever "
                         "its split)");
    if (B > INT32_MAX / 2)
        return popt_fail(s, policy, "global_batch", err, "too many samples per iteration (got %lld)",
                         (long long)B);
    return 0;
}

/* ---- solvers ------------------------------------------------------------------ */

static double clampd(double v, double lo, double hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

static void fill_linear(lb *st, const double *a, const double *k, const double *cap)
{
    size_t n = st->n;
    double lo = INFINITY, hi = -INFINITY;
    for (size_t d = 0; d < n; d++) {
        lo = fmin(lo, a[d]);
        hi = fmax(hi, a[d] + k[d] * cap[d]);
    }
    /* sum_i clamp((T - a_i) / k_i, 0, cap_i) is continuous and increasing
     * in T, from 0 at lo to sum cap >= B at hi. */
    for (int i = 0; i < 200 && lo < hi; i++) {
        double T = 0.5 * (lo + hi), sum = 0;
        if (T <= lo || T >= hi)
            break;
        for (size_t d = 0; d < n; d++)
            sum += clampd((T - a[d]) / k[d], 0, cap[d]);
        if (sum < (double)st->B)
            lo = T;
        else
            hi = T;
    }
    for (size_t d = 0; d < n; d++)
        st->x[d] = clampd((hi - a[d]) / k[d], 0, cap[d]);
}

/* The largest x in [0, cap] with fn(x) <= T (fn increasing). */
static double inverse(double (*fn)(const void *, size_t, double), const void *ctx, size_t d, double T,
                      double cap)
{
    if (fn(ctx, d, cap) <= T)
        return cap;
    double lo = 0, hi = cap;
    for (int i = 0; i < 60; i++) {
        double m = 0.5 * (lo + hi);
        if (fn(ctx, d, m) <= T)
            lo = m;
        else
            hi = m;
    }
    return lo;
}

static void fill_general(lb *st, double (*fn)(const void *ctx, size_t d, double x), const void *ctx,
                         const double *cap)
{
    size_t n = st->n;
    double lo = 0, hi = 0;
    for (size_t d = 0; d < n; d++)
        hi = fmax(hi, fn(ctx, d, cap[d]));
    for (int i = 0; i < 100; i++) {
        double T = 0.5 * (lo + hi), sum = 0;
        if (T <= lo || T >= hi)
            break;
        for (size_t d = 0; d < n; d++)
            sum += inverse(fn, ctx, d, T, cap[d]);
        if (sum < (double)st->B)
            lo = T;
        else
            hi = T;
    }
    for (size_t d = 0; d < n; d++)
        st->x[d] = inverse(fn, ctx, d, hi, cap[d]);
}

/* ---- locality: the byte term (header comment, "Locality") --------------------- */

/* A method's cost model: linear (a + k x) or any increasing fn. */
typedef struct lb_costs {
    const double *a, *k;
    double (*fn)(const void *ctx, size_t d, double x);
    const void *ctx;
} lb_costs;

static void fill(lb *st, const lb_costs *c, const double *cap)
{
    if (c->fn)
        fill_general(st, c->fn, c->ctx, cap);
    else
        fill_linear(st, c->a, c->k, cap);
}

/* Seconds to bring device d the samples of a per-iteration batch x it
 * does not hold. */
static double move_s(const lb *st, size_t d, double x)
{
    double extra = x * (double)st->D / (double)st->B - (double)st->held[d];
    if (!(extra > 1e-9))
        return 0;
    return st->rate[d] > 0 ? extra * prt_scn(st->rt)->dataset.sample_bytes / st->rate[d] : INFINITY;
}

/* Rooms for a moving time T into st->room; 1 when they hold B. */
static int rooms(lb *st, double T)
{
    double sb = prt_scn(st->rt)->dataset.sample_bytes, sum = 0, scale = (double)st->B / (double)st->D;
    for (size_t d = 0; d < st->n; d++) {
        double h = (double)st->held[d];
        if (isinf(st->rate[d]))
            h = INFINITY;
        else if (st->rate[d] > 0)
            h += T * st->rate[d] / sb;
        st->room[d] = fmin((double)st->cap[d], h * scale);
        sum += st->room[d];
    }
    return sum >= (double)st->B * (1 - 1e-12);
}

/* J of st->x, kept in st->best when below *bestj.  Its compute term is
 * the nominal cost in seconds (lb_cost): a method's own model may be in
 * other units (DLB's and LB-BSP's speeds are relative), it only shapes
 * the split. */
static double judge(lb *st, double *bestj)
{
    int64_t N = st->iters * (int64_t)prt_scn(st->rt)->training.epochs - st->done_iter;
    double tm = 0, tc = 0;
    for (size_t d = 0; d < st->n; d++) {
        tm = fmax(tm, move_s(st, d, st->x[d]));
        tc = fmax(tc, lb_cost(st, d, st->x[d]));
    }
    double j = tm + (double)(N > 1 ? N : 1) * tc;
    if (j < *bestj) {
        *bestj = j;
        memcpy(st->best, st->x, st->n * sizeof *st->best);
    }
    return j;
}

/* J at moving time T (infinite when its rooms do not hold B). */
static double try_T(lb *st, const lb_costs *c, double T, double *bestj)
{
    if (!rooms(st, T))
        return INFINITY;
    fill(st, c, st->room);
    return judge(st, bestj);
}

static void loc_solve(lb *st, const lb_costs *c)
{
    double bestj = INFINITY, hi = 0, lo = 0;
    fill(st, c, st->capd); /* the plain split: a candidate, and the top of T's range */
    memcpy(st->best, st->x, st->n * sizeof *st->best);
    judge(st, &bestj);
    for (size_t d = 0; d < st->n; d++)
        hi = fmax(hi, move_s(st, d, st->x[d]));
    if (!rooms(st, 0)) { /* the least T whose rooms hold B */
        double a = 0, b = hi;
        if (!isfinite(b) || !rooms(st, b))
            b = 0; /* no finite T helps: keep the plain split */
        for (int i = 0; i < 100 && b > 0; i++) {
            double m = 0.5 * (a + b);
            if (m <= a || m >= b)
                break;
            if (rooms(st, m))
                b = m;
            else
                a = m;
        }
        lo = b;
    }
    if (lo > 0 || rooms(st, 0)) {
        if (!isfinite(hi) || hi > lo) {
            double top = isfinite(hi) ? hi : lo, step = (top - lo) / LB_LOC_GRID, bj = INFINITY;
            int bi = 0;
            for (int i = 0; i <= LB_LOC_GRID; i++) {
                double j = try_T(st, c, lo + i * step, &bestj);
                if (j < bj)
                    bj = j, bi = i;
            }
            /* golden section in the best point's bracket */
            double a = lo + (bi > 0 ? bi - 1 : 0) * step, b = lo + (bi < LB_LOC_GRID ? bi + 1 : bi) * step;
            const double g = 0.6180339887498949;
            double x1 = b - g * (b - a), x2 = a + g * (b - a);
            double f1 = try_T(st, c, x1, &bestj), f2 = try_T(st, c, x2, &bestj);
            for (int i = 0; i < LB_LOC_REFINE && b > a; i++) {
                if (f1 <= f2) {
                    b = x2, x2 = x1, f2 = f1;
                    x1 = b - g * (b - a);
                    f1 = try_T(st, c, x1, &bestj);
                } else {
                    a = x1, x1 = x2, f1 = f2;
                    x2 = a + g * (b - a);
                    f2 = try_T(st, c, x2, &bestj);
                }
            }
        }
    }
    memcpy(st->x, st->best, st->n * sizeof *st->x);
}

static void solve(lb *st, const lb_costs *c)
{
    for (size_t d = 0; d < st->n; d++)
        st->capd[d] = st->cap[d];
    if (st->o->locality)
        loc_solve(st, c);
    else
        fill(st, c, st->capd);
}

void lb_solve_linear(lb *st, const double *a, const double *k)
{
    lb_costs c = {a, k, NULL, NULL};
    solve(st, &c);
}

void lb_solve_general(lb *st, double (*fn)(const void *ctx, size_t d, double x), const void *ctx)
{
    lb_costs c = {NULL, NULL, fn, ctx};
    solve(st, &c);
}

/* Least squares cubic through a batch table (>= 4 points): normal
 * equations, Gaussian elimination with partial pivoting on 4x4.  The fit
 * is in batch / (the table's last batch) to keep the system conditioned.
 * 0, or -1 when singular. */
static int cubic_fit(const scn_group *g, double c[4])
{
    double A[4][5] = {{0}};
    double sc = g->table_batch[g->table_n - 1];
    for (size_t i = 0; i < g->table_n; i++) {
        double p[4] = {1, g->table_batch[i] / sc, 0, 0};
        p[2] = p[1] * p[1];
        p[3] = p[2] * p[1];
        for (int r = 0; r < 4; r++) {
            for (int q = 0; q < 4; q++)
                A[r][q] += p[r] * p[q];
            A[r][4] += p[r] * g->table_s[i];
        }
    }
    for (int col = 0; col < 4; col++) {
        int piv = col;
        for (int r = col + 1; r < 4; r++)
            if (fabs(A[r][col]) > fabs(A[piv][col]))
                piv = r;
        if (!(fabs(A[piv][col]) > 1e-300))
            return -1;
        for (int q = 0; q < 5; q++) {
            double tmp = A[col][q];
            A[col][q] = A[piv][q];
            A[piv][q] = tmp;
        }
        for (int r = 0; r < 4; r++) {
            if (r == col)
                continue;
            double f = A[r][col] / A[col][col];
            for (int q = col; q < 5; q++)
                A[r][q] -= f * A[col][q];
        }
    }
    for (int r = 0; r < 4; r++)
        c[r] = A[r][4] / A[r][r] / pow(sc, r);
    return 0;
}

typedef struct nominal {
    const lb *st;
    double (*c)[4]; /* per group, when cubic[g] */
    char *cubic;
} nominal;

static double nominal_cost(const void *ctx, size_t d, double x)
{
    const nominal *nm = ctx;
    const scn_scenario *s = prt_scn(nm->st->rt);
    int gi = s->devices[d].group;
    if (!(x > 0))
        return 0;
    if (nm->cubic && nm->cubic[gi]) {
        const double *c = nm->c[gi];
        double v = c[0] + x * (c[1] + x * (c[2] + x * c[3]));
        return v > 0 ? v : 0;
    }
    return group_cost(s, &s->groups[gi], x);
}

int lb_solve_nominal(lb *st, int cubic)
{
    const scn_scenario *s = prt_scn(st->rt);
    int linear = 1;
    for (size_t gi = 0; gi < s->n_groups; gi++)
        if (s->groups[gi].count > 0 && s->groups[gi].compute == SCN_COMPUTE_TABLE)
            linear = 0;
    if (linear) { /* the closed form b_i = (T - a_i) / k_i, T by water-filling */
        double *a = dp_calloc(st->n, sizeof *a), *k = dp_calloc(st->n, sizeof *k);
        if (!a || !k) {
            dp_free(a);
            dp_free(k);
            return dp_err_set(prt_err(st->rt), DP_ENOMEM, "out of memory");
        }
        for (size_t d = 0; d < st->n; d++) {
            const scn_group *g = &s->groups[s->devices[d].group];
            if (g->compute == SCN_COMPUTE_MEASURED) {
                k[d] = g->batch_time_s / g->batch;
            } else {
                a[d] = g->overhead_s;
                k[d] = s->model.train_flops_per_sample / (g->peak_flops * g->efficiency);
            }
        }
        lb_solve_linear(st, a, k);
        dp_free(a);
        dp_free(k);
        return 0;
    }
    nominal nm = {st, NULL, NULL};
    if (cubic) {
        nm.c = dp_calloc(s->n_groups, sizeof *nm.c);
        nm.cubic = dp_calloc(s->n_groups, 1);
        if (!nm.c || !nm.cubic) {
            dp_free(nm.c);
            dp_free(nm.cubic);
            return dp_err_set(prt_err(st->rt), DP_ENOMEM, "out of memory");
        }
        for (size_t gi = 0; gi < s->n_groups; gi++) {
            const scn_group *g = &s->groups[gi];
            nm.cubic[gi] = g->compute == SCN_COMPUTE_TABLE && g->table_n >= 4 && cubic_fit(g, nm.c[gi]) == 0;
        }
    }
    lb_solve_general(st, nominal_cost, &nm);
    dp_free(nm.c);
    dp_free(nm.cubic);
    return 0;
}

static int by_frac_desc(const void *pa, const void *pb)
{
    const lb_rem *a = pa, *b = pb;
    if (a->frac != b->frac)
        return a->frac > b->frac ? -1 : 1;
    return a->d < b->d ? -1 : a->d > b->d; /* ties: lower index first, deterministic */
}

/* Largest remainder: out[i] = floor(x[i] * scale) plus one for the largest
 * fractional parts until the sum is `total`, never above lim[i] (NULL: no
 * limit).  sum x * scale is total up to rounding error, so the passes
 * below move at most about n samples each.  out is int64_t: an epoch's
 * share passes 2^31 samples (check accepts datasets up to 10^15), and an
 * int cast there made the first loop hand out billions of single samples. */
static void round_lr64(lb *st, const double *x, double scale, int64_t total, const int *lim, int64_t *out)
{
    size_t n = st->n;
    int64_t sum = 0;
    for (size_t d = 0; d < n; d++) {
        double v = x[d] * scale;
        double f = floor(v + 1e-9); /* 2.9999999999 is 3 */
        if (lim && f > lim[d])
            f = lim[d];
        if (f < 0)
            f = 0;
        out[d] = (int64_t)f;
        st->order[d] = (lb_rem){v - f, d};
        sum += out[d];
    }
    qsort(st->order, n, sizeof *st->order, by_frac_desc);
    /* Each pass hands out at most one sample per device; the sum of limits
     * is >= total, so this ends. */
    while (sum < total) {
        int64_t before = sum;
        for (size_t i = 0; i < n && sum < total; i++) {
            size_t d = st->order[i].d;
            if (!lim || out[d] < lim[d]) {
                out[d]++;
                sum++;
            }
        }
        if (sum == before)
            break;
    }
    while (sum > total) {
        int64_t before = sum;
        for (size_t i = n; i-- > 0 && sum > total;) {
            size_t d = st->order[i].d;
            if (out[d] > 0) {
                out[d]--;
                sum--;
            }
        }
        if (sum == before)
            break;
    }
}

/* round_lr64 into an int array: with lim (every per-iteration split), each
 * value is at most lim[i] <= B, which lb_check keeps below 2^30. */
static void round_lr(lb *st, const double *x, double scale, int64_t total, const int *lim, int *out)
{
    round_lr64(st, x, scale, total, lim, st->need);
    for (size_t d = 0; d < st->n; d++)
        out[d] = (int)st->need[d];
}

void lb_apply(lb *st)
{
    int changed = 0;
    for (size_t d = 0; d < st->n; d++)
        st->cur[d] = st->b[d];
    round_lr(st, st->x, 1.0, st->B, st->cap, st->b);
    for (size_t d = 0; d < st->n && !changed; d++)
        changed = st->cur[d] != st->b[d];
    st->rebalances += changed;
}

/* ---- the iteration ------------------------------------------------------------- */

static int hk_plan(prt *rt, void *ctx)
{
    lb *st = ctx;
    st->t0 = prt_now(rt);
    if (st->it == st->iters - 1) {
        /* the last iteration: the remainder split by the current shares */
        int64_t R = st->D - (st->iters - 1) * st->B;
        double *sh = st->t_end; /* scratch: overwritten below */
        for (size_t d = 0; d < st->n; d++)
            sh[d] = st->b[d];
        round_lr(st, sh, (double)R / (double)st->B, R, st->b, st->cur);
    } else {
        memcpy(st->cur, st->b, st->n * sizeof *st->cur);
    }
    for (size_t d = 0; d < st->n; d++) {
        st->t[d] = 0;
        st->t_end[d] = st->t0;
    }
    return 0;
}

static int hk_batch(prt *rt, size_t d, void *ctx)
{
    (void)rt;
    return ((lb *)ctx)->cur[d];
}

static int hk_compute(prt *rt, size_t d, int n, prt_fn fn, void *fctx, double *dt, void *ctx)
{
    lb *st = ctx;
    int rc = prt_compute_step(rt, d, n, fn, fctx, dt);
    if (rc)
        return rc;
    st->t[d] = *dt;
    st->t_end[d] = prt_now(rt) + *dt;
    return 0;
}

/* Device d's figures of the epoch under way start again. */
static void clear_epoch(lb *st, size_t d)
{
    st->ep_t[d] = 0;
    st->ep_wait[d] = 0;
    st->ep_samples[d] = 0;
    st->ep_min[d] = INT32_MAX;
    st->ep_max[d] = 0;
}

static int epoch_stats(lb *st)
{
    prt *rt = st->rt;
    int e = prt_epoch(rt);
    for (size_t d = 0; d < st->n; d++) {
        int64_t a = (int64_t)d;
        if (prt_stat(rt, "batch_mean", RES_SCOPE_DEVICE_EPOCH, a, e,
                     (double)st->ep_samples[d] / (double)st->iters) ||
            prt_stat(rt, "batch_min", RES_SCOPE_DEVICE_EPOCH, a, e, st->ep_min[d]) ||
            prt_stat(rt, "batch_max", RES_SCOPE_DEVICE_EPOCH, a, e, st->ep_max[d]) ||
            prt_stat(rt, "wait_s", RES_SCOPE_DEVICE_EPOCH, a, e, st->ep_wait[d]))
            return DP_ENOMEM;
        prt_share(rt)[d] = st->ep_samples[d];
        st->ep_last_t[d] = st->ep_t[d];
        st->ep_last_samples[d] = st->ep_samples[d];
        clear_epoch(st, d);
    }
    return 0;
}

static void on_shard_xfer(void *ctx, uint64_t id)
{
    (void)id;
    lb_xfer *x = ctx;
    lb *st = x->st;
    prt_set_act(st->rt, x->d, RES_ACT_WAIT);
    if (--st->pending == 0)
        sync_next_epoch(st->rt);
}

/* Shard: fetch what each device's next epoch needs beyond what it holds;
 * returns 1 when transfers are under way (the epoch starts when they end). */
static int shard_fetch(lb *st)
{
    prt *rt = st->rt;
    int64_t *need = st->need;
    double *w = st->t_end;
    for (size_t d = 0; d < st->n; d++)
        w[d] = st->b[d];
    round_lr64(st, w, (double)st->D / (double)st->B, st->D, NULL, need);
    st->pending = 0;
    for (size_t d = 0; d < st->n; d++) {
        if (st->cap[d] == 0)
            continue; /* out of the job after a failure: its disk is left alone */
        int64_t extra = need[d] - st->held[d];
        st->held[d] = need[d];
        sync_hold(rt, d, need[d]);
        if (extra <= 0)
            continue;
        st->xfer[d] = (lb_xfer){st, d};
        st->pending++;
        /* from the server, or with dataset.parts from the nearest holders */
        if (prt_data_fetch(rt, d, extra, -1, 0, on_shard_xfer, &st->xfer[d]) < 0)
            return 1;
        prt_set_act(rt, d, RES_ACT_RECV_DATA);
    }
    return st->pending > 0;
}

static void hk_synced(prt *rt, void *ctx)
{
    lb *st = ctx;
    double tmax = st->t0;
    for (size_t d = 0; d < st->n; d++)
        tmax = fmax(tmax, st->t_end[d]);
    for (size_t d = 0; d < st->n; d++) {
        st->ep_wait[d] += tmax - st->t_end[d];
        st->ep_t[d] += st->t[d];
        st->ep_samples[d] += st->cur[d];
        if (st->cur[d] < st->ep_min[d])
            st->ep_min[d] = st->cur[d];
        if (st->cur[d] > st->ep_max[d])
            st->ep_max[d] = st->cur[d];
    }
    st->done_iter++;
    if (st->m->iter_end && st->m->iter_end(st))
        return;
    if (++st->it < st->iters) {
        sync_next(rt);
        return;
    }
    st->it = 0;
    if (epoch_stats(st))
        return;
    int more = prt_end_epoch(rt);
    if (more < 0)
        return;
    if (more == 0) {
        if (prt_stat(rt, "rebalances", RES_SCOPE_RUN, 0, 0, (double)st->rebalances))
            return;
        return;
    }
    if (st->m->epoch_end && st->m->epoch_end(st))
        return;
    if (st->o->data == PRT_DATA_SHARD && shard_fetch(st))
        return;
    sync_next_epoch(rt);
}

/* The method's initial split (under the current caps) into b, and each
 * device's share of an epoch into prt_share and st->need (returned). */
static int initial_split(lb *st, int64_t **need)
{
    int rc = st->m->init(st);
    if (rc)
        return rc;
    round_lr(st, st->x, 1.0, st->B, st->cap, st->b);
    double *w = st->t_end;
    for (size_t d = 0; d < st->n; d++)
        w[d] = st->b[d];
    *need = st->need;
    round_lr64(st, w, (double)st->D / (double)st->B, st->D, NULL, *need);
    for (size_t d = 0; d < st->n; d++)
        prt_share(st->rt)[d] = (*need)[d];
    return 0;
}

static int hk_split(prt *rt, double *bytes, void *ctx)
{
    lb *st = ctx;
    int64_t *need;
    int rc = initial_split(st, &need);
    if (rc)
        return rc;
    double sb = prt_scn(rt)->dataset.sample_bytes;
    for (size_t d = 0; d < st->n; d++) {
        st->held[d] = need[d];
        bytes[d] = (st->o->data == PRT_DATA_SHARD ? (double)need[d] : (double)st->D) * sb;
    }
    return 0;
}

/* ---- failures ------------------------------------------------------------------ */

/* sync.c restarts the job from its checkpoint (or lets devices back join at
 * one) with the devices of `members`: the balancer starts over from its
 * initial split over them (the others' caps are 0, so they get nothing),
 * the epoch from its first iteration.  Every member must hold its share of
 * the epoch: sync.c sends what `held` lacks. */
static int hk_restart(prt *rt, const char *members, const int64_t *held, void *ctx)
{
    lb *st = ctx;
    int64_t room = 0;
    for (size_t d = 0; d < st->n; d++) {
        st->cap[d] = members[d] ? st->cap0[d] : 0;
        room += st->cap[d];
    }
    if (room < st->B)
        return prt_fail(rt, DP_ERUN,
                        "at t = %.6g s the devices up hold at most %lld samples per iteration in memory, "
                        "fewer than the global batch of %lld: the job cannot restart without the devices "
                        "down",
                        prt_now(rt), (long long)room, (long long)st->B);
    int64_t *need;
    if (st->o->locality) { /* the byte term: what each holds now, the run from the restart's epoch */
        for (size_t d = 0; d < st->n; d++) {
            st->held[d] = held[d];
            st->rate[d] = members[d] ? prt_data_rate(rt, d) : 0;
        }
        st->done_iter = (int64_t)(prt_epoch(rt) - 1) * st->iters;
    }
    int rc = initial_split(st, &need);
    if (rc) { /* init set the message in prt_err */
        char msg[sizeof prt_err(rt)->msg];
        snprintf(msg, sizeof msg, "%s", prt_err(rt)->msg);
        return prt_fail(rt, rc, "%s", msg);
    }
    for (size_t d = 0; d < st->n; d++) {
        st->held[d] = held[d] > need[d] ? held[d] : need[d];
        clear_epoch(st, d);
    }
    st->it = 0;
    st->pending = 0;
    return 0;
}

/* ---- start and free -------------------------------------------------------------- */

static void lb_destroy(lb *st)
{
    if (!st)
        return;
    if (st->m && st->m->free)
        st->m->free(st->mstate);
    dp_free(st->x);
    dp_free(st->b);
    dp_free(st->cap);
    dp_free(st->cap0);
    dp_free(st->cur);
    dp_free(st->t);
    dp_free(st->t_end);
    dp_free(st->ep_t);
    dp_free(st->ep_wait);
    dp_free(st->ep_samples);
    dp_free(st->ep_last_samples);
    dp_free(st->ep_min);
    dp_free(st->ep_max);
    dp_free(st->ep_last_t);
    dp_free(st->held);
    dp_free(st->need);
    dp_free(st->xfer);
    dp_free(st->order);
    dp_free(st->rate);
    dp_free(st->room);
    dp_free(st->best);
    dp_free(st->capd);
    dp_free(st);
}

/* The lb is the hooks' ctx, held by sync.c's state (prt_state): found
 * through it to be freed. */
int lb_start(prt *rt, const lb_opts *o, const lb_method *m)
{
    const scn_scenario *s = prt_scn(rt);
    size_t n = prt_n(rt);
    lb *st = dp_calloc(1, sizeof *st);
    if (!st)
        return dp_err_set(prt_err(rt), DP_ENOMEM, "out of memory");
    st->rt = rt;
    st->o = o;
    st->m = m;
    st->n = n;
    st->B = global_batch(s, o);
    st->D = s->dataset.samples;
    st->iters = (st->D + st->B - 1) / st->B;
    st->x = dp_calloc(n, sizeof *st->x);
    st->b = dp_calloc(n, sizeof *st->b);
    st->cap = dp_calloc(n, sizeof *st->cap);
    st->cap0 = dp_calloc(n, sizeof *st->cap0);
    st->cur = dp_calloc(n, sizeof *st->cur);
    st->t = dp_calloc(n, sizeof *st->t);
    st->t_end = dp_calloc(n, sizeof *st->t_end);
    st->ep_t = dp_calloc(n, sizeof *st->ep_t);
    st->ep_wait = dp_calloc(n, sizeof *st->ep_wait);
    st->ep_samples = dp_calloc(n, sizeof *st->ep_samples);
    st->ep_last_samples = dp_calloc(n, sizeof *st->ep_last_samples);
    st->ep_min = dp_calloc(n, sizeof *st->ep_min);
    st->ep_max = dp_calloc(n, sizeof *st->ep_max);
    st->ep_last_t = dp_calloc(n, sizeof *st->ep_last_t);
    st->held = dp_calloc(n, sizeof *st->held);
    st->need = dp_calloc(n, sizeof *st->need);
    st->xfer = dp_calloc(n, sizeof *st->xfer);
    st->order = dp_calloc(n, sizeof *st->order);
    st->rate = dp_calloc(n, sizeof *st->rate);
    st->room = dp_calloc(n, sizeof *st->room);
    st->best = dp_calloc(n, sizeof *st->best);
    st->capd = dp_calloc(n, sizeof *st->capd);
    if (!st->rate || !st->room || !st->best || !st->capd || !st->x || !st->b || !st->cap || !st->cap0 ||
        !st->cur || !st->t || !st->t_end || !st->ep_t || !st->ep_wait || !st->ep_samples ||
        !st->ep_last_samples || !st->ep_min || !st->ep_max || !st->ep_last_t || !st->held || !st->need ||
        !st->xfer || !st->order) {
        lb_destroy(st);
        return dp_err_set(prt_err(rt), DP_ENOMEM, "out of memory for %zu devices", n);
    }
    for (size_t d = 0; d < n; d++) {
        st->cap[d] = st->cap0[d] = (int)mem_cap(s, &s->groups[s->devices[d].group], st->B);
        st->ep_min[d] = INT32_MAX;
        if (o->locality) { /* the byte term: what it holds before any distribution, its read rate */
            st->held[d] = prt_data_local(rt, d);
            st->rate[d] = prt_data_rate(rt, d);
        }
    }
    if (m->alloc && !(st->mstate = m->alloc(st))) {
        lb_destroy(st);
        return dp_err_set(prt_err(rt), DP_ENOMEM, "out of memory for %zu devices", n);
    }
    st->hooks = (sync_hooks){hk_split, hk_plan, hk_batch, hk_compute, hk_synced, st, hk_restart, NULL};
    sync_cfg cfg = {
        .micro_per_sync = 1,
        .overlap = o->overlap,
        .bucket_bytes = o->bucket_bytes,
        .backward_fraction = o->backward_fraction,
        .op = COLL_ALLREDUCE,
        .allgather_after = 0,
        .data = (prt_data_mode)o->data,
        .mode = (prt_coll_mode)o->collective,
        .hooks = &st->hooks,
        .fail = o->fail,
    };
    int rc = sync_start(rt, &cfg);
    if (!sync_hooks_ctx(rt)) /* sync.c did not keep it: ours to free */
        lb_destroy(st);
    return rc;
}

void lb_on_device(prt *rt, const void *opts, size_t d, int up)
{
    (void)opts;
    sync_on_device(rt, d, up);
}

int lb_policy_check(const policy_def *p, const scn_scenario *s, const void *opts, dp_err *err)
{
    return lb_check(s, p->name, opts, err);
}

int lb_policy_start(prt *rt, const void *opts)
{
    return lb_start(rt, opts, prt_policy(rt)->family);
}

void lb_policy_free(prt *rt, const void *opts)
{
    (void)opts;
    lb_free(rt);
}

void lb_free(prt *rt)
{
    lb_destroy(sync_hooks_ctx(rt));
    sync_free(rt);
}
