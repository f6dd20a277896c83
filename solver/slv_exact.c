/* slv_exact.c: the relaxed optimum and the integer optimum of the C-ADP
 * allocation problem (docs/MODEL.md section 5), and the `exact` method.
 *
 * Both problems are "min over the epoch level T of S(T) + E*T", where S(T) is
 * the least send level (max_i a_i x_i) that fits D samples when every device
 * stays at or below level T.  S is non-increasing in T, so on any interval
 * [L, H] of levels, S(H) + E*L is a lower bound: a branch and bound on T with
 * that bound is exact and its open nodes always give a valid lower bound.
 *
 *  - Relaxed, no comm/caps/minimum shares: homogeneous, so the breakpoint
 *    scan of docs/MODEL.md section 5 over r = c_i / a_i is exact in
 *    O(N log N) (gsl_sort_index).
 *  - Relaxed, general: the branch and bound above on continuous T, S(T) solved
 *    exactly by a selection over the saturation points a_i * v_i (O(N)
 *    expected per level), stopped at a relative gap of 1e-12 or a budget.
 *  - Integer: the same branch and bound over the discrete levels
 *    comm_i + k * t_i; per level the device limits are whole batches
 *    n_i(T) = bs_i * floor((T - comm_i) / t_i) (capped), and S*(T) is the D-th
 *    smallest of the send times {a_i * k : 1 <= k <= n_i}, found by a
 *    bracketing selection that drops devices whose count cannot change, so a
 *    level costs O(N) expected even for N = 10^6.  Nodes shrink to single
 *    levels, so with no budget the search ends with a proof of optimality.
 *
 * Floating point: "device i can take k samples under send level S" is decided
 * by the same product a_i * k <= S that slv_objective computes, never by a
 * division alone, so the search and the objective agree to the last bit.
 */
#include "slv.h"
#include "slv_par.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_sort.h>

/* Reported lower bounds are shaved by this relative amount so that rounding
 * in their own arithmetic can never push them above the true optimum. */
#define LB_SHAVE 1e-12

static double shave(double v)
{
    return isfinite(v) ? v - fabs(v) * LB_SHAVE : v;
}

static int64_t limit_of(const slv_problem *p, size_t i)
{
    int64_t lim = p->samples;
    if (slv_cap_(p, i) >= 0 && slv_cap_(p, i) < lim)
        lim = slv_cap_(p, i);
    return lim;
}

/* ---- the pure relaxed problem: docs/MODEL.md section 5 breakpoint scan ----------------- */

static int is_pure(const slv_problem *p)
{
    for (size_t i = 0; i < p->n; i++)
        if (slv_comm_(p, i) != 0 || slv_cap_(p, i) >= 0 || slv_min_(p, i) != 0)
            return 0;
    return 1;
}

/* Index sort of positive finite doubles.  gsl_sort_index (heapsort) for small
 * inputs; for large ones an LSD radix sort on the IEEE bits (which order like
 * the values when positive): O(N), stable, and 5x faster than heapsort's
 * cache misses at N = 10^6. */
static int sort_index_pos(size_t *idx, const double *r, size_t n)
{
    if (n < 65536) {
        gsl_sort_index(idx, r, 1, n);
        return DP_OK;
    }
    uint64_t *key = dp_malloc(n * sizeof *key), *k2 = dp_malloc(n * sizeof *k2);
    size_t *i2 = dp_malloc(n * sizeof *i2), *cnt = dp_malloc(65536 * sizeof *cnt);
    if (!key || !k2 || !i2 || !cnt) {
        dp_free(key);
        dp_free(k2);
        dp_free(i2);
        dp_free(cnt);
        return DP_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        memcpy(&key[i], &r[i], sizeof key[i]);
        idx[i] = i;
    }
    uint64_t *ks = key, *kd = k2;
    size_t *is = idx, *id = i2;
    for (int pass = 0; pass < 4; pass++) {
        int sh = 16 * pass;
        memset(cnt, 0, 65536 * sizeof *cnt);
        for (size_t i = 0; i < n; i++)
            cnt[(ks[i] >> sh) & 0xffff]++;
        size_t acc = 0;
        for (size_t d = 0; d < 65536; d++) {
            size_t c = cnt[d];
            cnt[d] = acc;
            acc += c;
        }
        for (size_t i = 0; i < n; i++) {
            size_t pos = cnt[(ks[i] >> sh) & 0xffff]++;
            kd[pos] = ks[i];
            id[pos] = is[i];
        }
        uint64_t *tk = ks;
        ks = kd;
        kd = tk;
        size_t *ti = is;
        is = id;
        id = ti;
    }
    /* four passes: the result is back in idx */
    dp_free(key);
    dp_free(k2);
    dp_free(i2);
    dp_free(cnt);
    return DP_OK;
}

static int relaxed_pure(const slv_problem *p, double *x_out, double *value_s, long *evals)
{
    size_t n = p->n;
    double *r = dp_malloc(n * sizeof *r);
    size_t *idx = dp_malloc(n * sizeof *idx);
    if (!r || !idx) {
        dp_free(r);
        dp_free(idx);
        return DP_ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        r[i] = p->batch_s[i] / p->batch[i] / p->send_s[i];
    if (sort_index_pos(idx, r, n)) {
        dp_free(r);
        dp_free(idx);
        return DP_ENOMEM;
    }
    /* suffix sums of 1/c_i in sorted order, not a running difference, so no
     * cancellation residue survives when the last devices switch */
    double *csuf = dp_malloc((n + 1) * sizeof *csuf);
    if (!csuf) {
        dp_free(r);
        dp_free(idx);
        return DP_ENOMEM;
    }
    csuf[n] = 0;
    for (size_t k = n; k-- > 0;)
        csuf[k] = csuf[k + 1] + p->batch[idx[k]] / p->batch_s[idx[k]];
    double E = p->epochs, D = (double)p->samples;
    double A = 0, best = HUGE_VAL, best_r = r[idx[0]], best_h = 1;
    long scanned = 0;
    for (size_t k = 0; k < n;) {
        double rk = r[idx[k]];
        /* all ties at rk switch together: at r = rk they are on both bounds */
        while (k < n && r[idx[k]] == rk) {
            A += 1.0 / p->send_s[idx[k]];
            k++;
        }
        double h = A + rk * csuf[k];
        double obj = D * (1.0 + E * rk) / h;
        scanned++;
        if (obj < best) {
            best = obj;
            best_r = rk;
            best_h = h;
        }
    }
    dp_free(csuf);
    double s = D / best_h;
    if (x_out)
        for (size_t i = 0; i < n; i++) {
            double c = p->batch_s[i] / p->batch[i];
            double xs = s / p->send_s[i], xt = best_r * s / c;
            x_out[i] = xs < xt ? xs : xt;
        }
    *value_s = shave(best + p->const_s);
    if (evals)
        *evals = scanned;
    dp_free(r);
    dp_free(idx);
    return DP_OK;
}

/* ---- continuous send level S_c(T) ---------------------------------------- */

/* sl_level's inputs: a_i, v_i over n devices, two scratch lists of n
 * entries, and the helper for its passes (NULL: one pass in index order). */
typedef struct sl_in {
    size_t n;
    const double *a, *v;
    size_t *idx, *up;
    slv_par *par;
} sl_in;

typedef struct sl_part {
    double total, g0, hi; /* first pass */
    double sat, lin, g;   /* sums of the later passes */
    size_t nlin, m, m_up; /* linear devices; kept below; kept above (in up) */
} sl_part;

/* A pass's job.  The round's sums start from their values before the
 * round (seed_*) in chunk 0, so with one chunk every sum runs in the order
 * of idx from its value before, as a plain loop adds them. */
typedef struct sl_job {
    const sl_in *in;
    size_t *idx, *up; /* the active list and the other scratch (they swap) */
    double s0, lo, hi, piv;
    double seed_g, seed_sat, seed_lin;
    sl_part part[SLV_PAR_CHUNKS];
} sl_job;

static void sl_first(void *vj, size_t c, size_t from, size_t to)
{
    sl_job *j = vj;
    const double *a = j->in->a, *v = j->in->v;
    sl_part r = {0, 0, 0, 0, 0, 0, 0, 0, 0};
    for (size_t i = from; i < to; i++) {
        r.total += v[i];
        double x = a[i] * v[i];
        if (x > r.hi)
            r.hi = x;
        double q = j->s0 / a[i];
        r.g0 += q < v[i] ? q : v[i];
    }
    j->part[c] = r;
}

static void sl_split(void *vj, size_t c, size_t from, size_t to)
{
    sl_job *j = vj;
    const double *a = j->in->a, *v = j->in->v;
    sl_part r = {0, 0, 0, 0, 0, 0, 0, 0, 0};
    size_t *out = j->idx + from;
    for (size_t i = from; i < to; i++) {
        if (v[i] <= 0)
            continue;
        double x = a[i] * v[i];
        if (x <= j->lo)
            r.sat += v[i];
        else if (x >= j->hi)
            r.lin += 1.0 / a[i], r.nlin++;
        else
            out[r.m++] = i;
    }
    j->part[c] = r;
}

/* One selection round at piv over idx[from, to), counting at piv and
 * partitioning for both outcomes in one pass: those below piv stay in idx
 * (in place: a chunk never writes past what it has read), those above it
 * go to up (from up[from]). */
static void sl_round(void *vj, size_t c, size_t from, size_t to)
{
    sl_job *j = vj;
    const double *a = j->in->a, *v = j->in->v;
    size_t *idx = j->idx, *up = j->up;
    double piv = j->piv;
    sl_part r = {0, 0, 0, 0, 0, 0, 0, 0, 0};
    if (c == 0) {
        r.g = j->seed_g;
        r.sat = j->seed_sat;
        r.lin = j->seed_lin;
    }
    for (size_t k = from; k < to; k++) {
        size_t i = idx[k];
        double q = piv / a[i], x = a[i] * v[i];
        r.g += q < v[i] ? q : v[i];
        if (x <= piv)
            r.sat += v[i];
        else
            up[from + r.m_up++] = i;
        if (x >= piv)
            r.lin += 1.0 / a[i], r.nlin++;
        else
            idx[from + r.m++] = i;
    }
    j->part[c] = r;
}

/* Least S >= s0 with sum_i min(S / a_i, v_i) >= D, or +inf if sum v < D;
 * the slope there (1/a_i summed over the devices still linear) and their
 * number when slope_out / nlin_out are given.  Selection over the
 * saturation points w_i = a_i v_i: a bracket (lo, hi] of S shrinks while
 * devices saturated below lo (constant v_i) or linear above hi (slope
 * 1/a_i) leave the active set; once it is empty S solves a linear equation
 * exactly.  Lists stay in index order, so only the sums' rounding depends
 * on in->par: without a helper they are those of a plain loop (the relaxed
 * search needs them so); with one they are cut by chunks (the integer
 * search's first bracket, which exact counts check). */
static double sl_level(const sl_in *in, double D, double s0, double *slope_out, size_t *nlin_out)
{
    size_t n = in->n;
    const double *a = in->a, *v = in->v;
    sl_job j = {in, in->idx, in->up, s0, 0, 0, 0, 0, 0, 0, {{0, 0, 0, 0, 0, 0, 0, 0, 0}}};
    double total = 0, g0 = 0, hi = 0;
    size_t k = slv_par_run(in->par, n, sl_first, &j);
    for (size_t c = 0; c < k; c++) {
        total += j.part[c].total;
        g0 += j.part[c].g0;
        if (j.part[c].hi > hi)
            hi = j.part[c].hi;
    }
    if (!(total >= D))
        return HUGE_VAL;
    if (g0 >= D)
        return s0;
    double lo = s0, sat = 0, lin = 0;
    size_t nlin = 0, m = 0;
    j.lo = lo;
    j.hi = hi;
    k = slv_par_run(in->par, n, sl_split, &j);
    for (size_t c = 0; c < k; c++) {
        const sl_part *r = &j.part[c];
        if (r->m)
            memmove(j.idx + m, j.idx + slv_par_lo(n, k, c), r->m * sizeof *j.idx);
        m += r->m;
        sat += r->sat;
        lin += r->lin;
        nlin += r->nlin;
    }
    while (m > 0) {
        const size_t *idx = j.idx;
        /* median of three positions: sorted inputs stay O(N) */
        double w0 = a[idx[0]] * v[idx[0]], w1 = a[idx[m / 2]] * v[idx[m / 2]],
               w2 = a[idx[m - 1]] * v[idx[m - 1]];
        double piv = w0 < w1 ? (w1 < w2 ? w1 : (w0 < w2 ? w2 : w0)) : (w0 < w2 ? w0 : (w1 < w2 ? w2 : w1));
        j.piv = piv;
        j.seed_g = sat + piv * lin;
        j.seed_sat = sat;
        j.seed_lin = lin;
        k = slv_par_run(in->par, m, sl_round, &j);
        double g = 0, sat_lo = 0, lin_hi = 0;
        size_t nlin_hi = nlin;
        for (size_t c = 0; c < k; c++) {
            g += j.part[c].g;
            sat_lo += j.part[c].sat;
            lin_hi += j.part[c].lin;
            nlin_hi += j.part[c].nlin;
        }
        /* piv becomes hi: those below it stay (idx), else those above (up,
         * which then becomes the list); the chunks' lists are joined in
         * order (nothing moves with one chunk) */
        int below = g >= D;
        size_t *keep_in = below ? j.idx : j.up, kept = 0;
        for (size_t c = 0; c < k; c++) {
            size_t cm = below ? j.part[c].m : j.part[c].m_up;
            if (cm)
                memmove(keep_in + kept, keep_in + slv_par_lo(m, k, c), cm * sizeof *keep_in);
            kept += cm;
        }
        if (!below) {
            j.up = j.idx;
            j.idx = keep_in;
        }
        m = kept;
        if (below) {
            hi = piv;
            lin = lin_hi;
            nlin = nlin_hi;
        } else {
            lo = piv;
            sat = sat_lo;
        }
    }
    if (slope_out)
        *slope_out = lin;
    if (nlin_out)
        *nlin_out = nlin;
    if (lin <= 0)
        return hi;
    double S = (D - sat) / lin;
    return S < lo ? lo : S > hi ? hi : S;
}

/* Least T with sum_i clamp((T - comm_i) / c_i, 0, lim_i) >= D: the epoch
 * level below which the relaxed problem is infeasible (the optimum often sits
 * right on it, and bisecting for it would cost one evaluation per bit).
 * Selection over the 2N breakpoints comm_i and comm_i + c_i lim_i, as in
 * sl_level; O(N) expected.  idx is scratch of n entries. */
static double feas_level(const slv_problem *p, const double *c, size_t *idx)
{
    size_t n = p->n;
    double D = (double)p->samples, lo = HUGE_VAL, hi = 0;
    for (size_t i = 0; i < n; i++) {
        double st = slv_comm_(p, i), en = st + c[i] * (double)limit_of(p, i);
        lo = st < lo ? st : lo;
        hi = en > hi ? en : hi;
    }
    double sat = 0, slope = 0, icpt = 0;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        idx[m++] = i;
    for (;;) {
        size_t mm = 0;
        for (size_t k = 0; k < m; k++) {
            size_t i = idx[k];
            double st = slv_comm_(p, i), lim = (double)limit_of(p, i), en = st + c[i] * lim;
            if (en <= lo)
                sat += lim;
            else if (st >= hi)
                continue;
            else if (st <= lo && en >= hi) {
                slope += 1.0 / c[i];
                icpt -= st / c[i];
            } else
                idx[mm++] = i;
        }
        m = mm;
        if (m == 0)
            break;
        size_t i = idx[m / 2];
        double st = slv_comm_(p, i), en = st + c[i] * (double)limit_of(p, i);
        double piv = st > lo ? st : en;
        double f = sat + slope * piv + icpt;
        for (size_t k = 0; k < m; k++) {
            size_t j = idx[k];
            double v = (piv - slv_comm_(p, j)) / c[j], lim = (double)limit_of(p, j);
            f += v < 0 ? 0 : v > lim ? lim : v;
        }
        if (f >= D)
            hi = piv;
        else
            lo = piv;
    }
    if (!(slope > 0))
        return lo;
    double T = (D - sat - icpt) / slope;
    return T < lo ? lo : T > hi ? hi : T;
}

typedef struct cont_ws {
    const slv_problem *p;
    double *a, *c, *v;
    size_t *idx, *up; /* sl_level's scratch (idx: feas_level's too) */
} cont_ws;

/* S_c(T) for the relaxed problem; +inf when level T is infeasible.  With
 * allow_exclude a device whose comm_i exceeds T simply takes nothing. */
static double cont_eval(cont_ws *w, double T)
{
    const slv_problem *p = w->p;
    double s0 = 0;
    for (size_t i = 0; i < p->n; i++) {
        double room = T - slv_comm_(p, i);
        if (room < 0) {
            if (!p->allow_exclude || slv_min_(p, i) > 0)
                return HUGE_VAL;
            room = 0;
        }
        /* the top level is tested with the same expression that produced
         * it, so T = comm_i + c_i * lim_i gives exactly lim_i, not lim_i - ulp */
        double lim = (double)limit_of(p, i);
        double vi = T >= slv_comm_(p, i) + w->c[i] * lim ? lim : room / w->c[i];
        if (vi > lim)
            vi = lim;
        if (vi < (double)slv_min_(p, i))
            return HUGE_VAL;
        w->v[i] = vi;
        double ms = w->a[i] * (double)slv_min_(p, i);
        if (ms > s0)
            s0 = ms;
    }
    sl_in in = {p->n, w->a, w->v, w->idx, w->up, NULL};
    return sl_level(&in, (double)p->samples, s0, NULL, NULL);
}

/* ---- a best-first heap of level intervals -------------------------------- */

typedef struct node {
    double L, H, SH, lb;
    /* relaxed search only: phi at the ends and the slope parts G_S, G_T of
     * the right slope at L and the left slope at H (see cont_slopes) */
    double phiL, gsL, gtL, phiH, gsH, gtH;
} node;

typedef struct heap {
    node *v;
    size_t n, cap;
} heap;

static int heap_push(heap *h, node x)
{
    if (h->n == h->cap) {
        size_t nc = h->cap ? 2 * h->cap : 64;
        node *nv = dp_realloc(h->v, nc * sizeof *nv);
        if (!nv)
            return DP_ENOMEM;
        h->v = nv;
        h->cap = nc;
    }
    size_t k = h->n++;
    while (k > 0) {
        size_t up = (k - 1) / 2;
        if (h->v[up].lb <= x.lb)
            break;
        h->v[k] = h->v[up];
        k = up;
    }
    h->v[k] = x;
    return DP_OK;
}

static node heap_pop(heap *h)
{
    node top = h->v[0], last = h->v[--h->n];
    size_t k = 0;
    for (;;) {
        size_t c = 2 * k + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && h->v[c + 1].lb < h->v[c].lb)
            c++;
        if (last.lb <= h->v[c].lb)
            break;
        h->v[k] = h->v[c];
        k = c;
    }
    if (h->n)
        h->v[k] = last;
    return top;
}

/* Evaluations allowed when the caller gives no budget: a level costs O(N)
 * (about 60 ns per device at N = 10^6), so 8e6 / N levels keep the whole
 * search near half a second at any N; small instances get a floor large
 * enough that the search ends with a proof in practice (tests: brute force). */
static long auto_budget(size_t n, long floor_evals)
{
    double b = 8e6 / (double)n;
    return b < (double)floor_evals ? floor_evals : (long)b;
}

/* ---- general relaxed problem: branch and bound on continuous T ----------- */

/* One-sided slopes of phi(T) = S_c(T) + E T at T (S = S_c(T) given), from
 * dS/dT = -G_T / G_S where G(S, T) = sum_i min(S / a_i, v_i(T)).  Devices at
 * (or within 1e-9 of) a tie are counted on the side that makes the slope
 * larger for *s_hi and smaller for *s_lo, so for a convex phi the lines
 * phi(T) + s_lo (T' - T) for T' > T and phi(T) + s_hi (T' - T) for T' < T are
 * valid lower bounds even after rounding.  0 if no slope exists (S pinned by
 * a minimum share or every device capped). */
static int cont_slopes(const cont_ws *w, double T, double S, double *gs_lo_out, double *gt_lo_out,
                       double *gs_hi_out, double *gt_hi_out)
{
    const slv_problem *p = w->p;
    double gs_lo = 0, gt_lo = 0, gs_hi = 0, gt_hi = 0;
    for (size_t i = 0; i < p->n; i++) {
        double comm = slv_comm_(p, i);
        if (T < comm)
            continue;
        double xs = S / w->a[i], room = (T - comm) / w->c[i];
        double lim = (double)limit_of(p, i);
        double tol = 1e-9 * (xs > room ? xs : room) + 1e-300;
        int capped = room > lim + tol, maybe_capped = room >= lim - tol;
        int sbound = xs < room - tol && xs < lim - tol, maybe_s = xs <= room + tol && xs <= lim + tol;
        int entering = room <= tol; /* comm_i == T: present only to the right */
        /* s_hi: as large as possible -> more S-bound, fewer T-bound */
        if (maybe_s)
            gs_hi += 1.0 / w->a[i];
        else if (!maybe_capped && !entering)
            gt_hi += 1.0 / w->c[i];
        /* s_lo: as small as possible -> fewer S-bound, more T-bound */
        if (sbound && !entering)
            gs_lo += 1.0 / w->a[i];
        else if (!capped && !sbound)
            gt_lo += 1.0 / w->c[i];
    }
    if (!(gs_lo > 0) || !(gs_hi > 0))
        return 0;
    *gs_lo_out = gs_lo;
    *gt_lo_out = gt_lo;
    *gs_hi_out = gs_hi;
    *gt_hi_out = gt_hi;
    return 1;
}

typedef struct rel_ws {
    cont_ws w;
    /* allow_exclude: comm values sorted, with prefix sums of 1/c_i and
     * comm_i/c_i in that order (long double: differences of prefix sums of
     * 10^6 terms must stay accurate) */
    double *comm_sorted;
    long double *P1, *P2;
    double E, K;
} rel_ws;

static size_t first_above(const rel_ws *r, double v)
{
    size_t lo = 0, hi = r->w.p->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->comm_sorted[mid] > v)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* Lower bound of phi on [L, H] and the point to split at.
 *
 * With no device joining inside (L, H), phi is convex there and the tangent
 * lines from both ends bound it (Kelley's cutting plane).  A device i joining
 * at comm_i in (L, H] makes phi bend down; on [L, H] its capacity
 * max(0, (T - comm_i) / c_i) lies below the chord from (L, 0) to
 * (H, (H - comm_i) / c_i), and replacing it by the chord gives a convex
 * function equal to phi at L and H and below it in between.  The chords
 * change the slopes' T-parts by sums over the joining devices, read from the
 * prefix sums in O(log N), with a margin for their rounding. */
static double rel_bound(const rel_ws *r, node *nd, double *split)
{
    double lb = nd->SH + r->E * nd->L + r->K; /* S non-increasing: always valid */
    *split = 0.5 * (nd->L + nd->H);
    double L = nd->L, H = nd->H;
    if (!isfinite(nd->phiL) || !isfinite(nd->phiH) || !(nd->gsL > 0) || !(nd->gsH > 0) || !(H > L))
        return lb;
    double gtL = nd->gtL, gtH = nd->gtH;
    if (r->comm_sorted) {
        size_t k0 = first_above(r, L), k1 = first_above(r, H);
        if (k1 > k0) {
            long double s1 = r->P1[k1] - r->P1[k0], s2 = r->P2[k1] - r->P2[k0];
            double chord = (double)(((long double)H * s1 - s2) / (long double)(H - L));
            double err =
                1e-12 * (double)(((long double)H * s1 + s2) / (long double)(H - L)) + 1e-12 * (double)s1;
            if (chord < 0)
                chord = 0;
            if (chord > (double)s1)
                chord = (double)s1;
            gtL += chord + err;              /* more T-part: smaller right slope at L */
            gtH -= (double)s1 - chord + err; /* less T-part: larger left slope at H */
            if (gtH < 0)
                gtH = 0;
        }
    }
    double A = nd->phiL, p = r->E - gtL / nd->gsL, B = nd->phiH, q = r->E - gtH / nd->gsH;
    /* min over [L, H] of max(line from L, line from H) */
    double fL = A > B + q * (L - H) ? A : B + q * (L - H);
    double fH = A + p * (H - L) > B ? A + p * (H - L) : B;
    double t = fL < fH ? fL : fH;
    if (q > p) {
        double Tx = (B - A + p * L - q * H) / (p - q);
        if (Tx > L && Tx < H) {
            double fx = A + p * (Tx - L);
            if (fx < t)
                t = fx;
            /* split where the lines cross, kept off the ends */
            double w8 = 0.02 * (H - L);
            *split = Tx < L + w8 ? L + w8 : Tx > H - w8 ? H - w8 : Tx;
        }
    }
    return t > lb ? t : lb;
}

/* slv_relaxed_solve_general, also giving its feasibility level (NULL: not
 * wanted), which the integer search would compute again from the same
 * c_i. */
static int relaxed_general(const slv_problem *p, double *x_out, double *value_s, long *evals,
                           double *tfeas_out);

int slv_relaxed_solve_general(const slv_problem *p, double *x_out, double *value_s, long *evals)
{
    return relaxed_general(p, x_out, value_s, evals, NULL);
}

static int relaxed_general(const slv_problem *p, double *x_out, double *value_s, long *evals,
                           double *tfeas_out)
{
    size_t n = p->n;
    rel_ws r = {{p, dp_malloc(n * sizeof(double)), dp_malloc(n * sizeof(double)),
                 dp_malloc(n * sizeof(double)), dp_malloc(n * sizeof(size_t)), dp_malloc(n * sizeof(size_t))},
                NULL,
                NULL,
                NULL,
                p->epochs,
                p->const_s};
    cont_ws *w = &r.w;
    heap h = {0};
    int rc = DP_OK;
    if (!w->a || !w->c || !w->v || !w->idx || !w->up) {
        rc = DP_ENOMEM;
        goto out;
    }
    if (p->allow_exclude) {
        size_t *ix = dp_malloc(n * sizeof *ix);
        double *cm = dp_malloc(n * sizeof *cm);
        r.comm_sorted = dp_malloc(n * sizeof(double));
        r.P1 = dp_malloc((n + 1) * sizeof(long double));
        r.P2 = dp_malloc((n + 1) * sizeof(long double));
        if (!ix || !cm || !r.comm_sorted || !r.P1 || !r.P2) {
            dp_free(ix);
            dp_free(cm);
            rc = DP_ENOMEM;
            goto out;
        }
        for (size_t i = 0; i < n; i++)
            cm[i] = slv_comm_(p, i);
        rc = sort_index_pos(ix, cm, n);
        if (!rc) {
            r.P1[0] = r.P2[0] = 0;
            for (size_t k = 0; k < n; k++) {
                size_t i = ix[k];
                long double ic = (long double)p->batch[i] / (long double)p->batch_s[i];
                r.comm_sorted[k] = cm[i];
                r.P1[k + 1] = r.P1[k] + ic;
                r.P2[k + 1] = r.P2[k] + (long double)cm[i] * ic;
            }
        }
        dp_free(ix);
        dp_free(cm);
        if (rc)
            goto out;
    }
    double E = r.E, K = r.K;
    double L0 = HUGE_VAL, Tf = 0;
    for (size_t i = 0; i < n; i++) {
        w->a[i] = p->send_s[i];
        w->c[i] = p->batch_s[i] / p->batch[i];
        double lo = slv_comm_(p, i) + w->c[i] * (double)slv_min_(p, i);
        double hi = slv_comm_(p, i) + w->c[i] * (double)limit_of(p, i);
        if (hi > Tf)
            Tf = hi;
        if (p->allow_exclude && slv_min_(p, i) == 0)
            lo = slv_comm_(p, i);
        if (lo < L0)
            L0 = lo;
    }
    for (size_t i = 0; i < n; i++) { /* forced participants set the floor */
        double lo = slv_comm_(p, i) + w->c[i] * (double)slv_min_(p, i);
        if ((!p->allow_exclude || slv_min_(p, i) > 0) && lo > L0)
            L0 = lo;
    }
    double Tfeas = feas_level(p, w->c, w->idx);
    if (tfeas_out)
        *tfeas_out = Tfeas;
    if (Tfeas > L0)
        L0 = Tfeas;
    if (L0 > Tf)
        L0 = Tf;
    /* at Tf every device may take min(cap, D): feasible by validation */
    double SH = cont_eval(w, Tf), g1, g2;
    double best = SH + E * Tf + K, bestT = Tf;
    node root = {L0, Tf, SH, 0, HUGE_VAL, 0, 0, best, 0, 0};
    if (!cont_slopes(w, Tf, SH, &g1, &g2, &root.gsH, &root.gtH))
        root.gsH = 0;
    /* rounding may leave the computed feasibility level a hair short: step up
     * until phi is finite, and keep the sliver below as a node of its own */
    double SL = cont_eval(w, L0), Lsliver = L0;
    for (int k = 0; k < 40 && !isfinite(SL) && L0 < Tf; k++) {
        L0 += fabs(L0) * 1e-15 * (double)(1L << k) + 1e-300;
        if (L0 > Tf)
            L0 = Tf;
        SL = cont_eval(w, L0);
    }
    root.L = L0;
    long ev = 2, budget = n > 100000 ? auto_budget(n, 8) : auto_budget(n, 60);
    if (isfinite(SL)) {
        root.phiL = SL + E * L0 + K;
        if (root.phiL < best) {
            best = root.phiL;
            bestT = L0;
        }
        if (!cont_slopes(w, L0, SL, &root.gsL, &root.gtL, &g1, &g2))
            root.gsL = 0;
    }
    double split;
    root.lb = rel_bound(&r, &root, &split);
    double lb_closed = HUGE_VAL; /* bounds of nodes dropped by the budget */
    if ((rc = heap_push(&h, root)))
        goto out;
    if (Lsliver < L0 && isfinite(SL)) {
        node sl = {Lsliver, L0, SL, SL + E * Lsliver + K, HUGE_VAL, 0, 0, root.phiL, 0, 0};
        if ((rc = heap_push(&h, sl)))
            goto out;
    }
    while (h.n > 0) {
        if (slv_interrupted()) {
            rc = DP_ERUN;
            goto out;
        }
        node nd = heap_pop(&h);
        if (nd.lb >= best - fabs(best) * 1e-12)
            continue; /* no node left can improve beyond the tolerance */
        if (ev >= budget) {
            if (nd.lb < lb_closed)
                lb_closed = nd.lb;
            break;
        }
        rel_bound(&r, &nd, &split);
        double M = split;
        if (!(M > nd.L && M < nd.H))
            continue; /* interval below double resolution: its bound is exact */
        double SM = cont_eval(w, M);
        ev++;
        double val = SM + E * M + K;
        if (val < best) {
            best = val;
            bestT = M;
        }
        double gsl = 0, gtl = 0, gsh = 0, gth = 0;
        if (!isfinite(SM) || !cont_slopes(w, M, SM, &gsl, &gtl, &gsh, &gth))
            gsl = gsh = 0;
        node left = {nd.L, M, SM, 0, nd.phiL, nd.gsL, nd.gtL, val, gsh, gth};
        node right = {M, nd.H, nd.SH, 0, val, gsl, gtl, nd.phiH, nd.gsH, nd.gtH};
        left.lb = rel_bound(&r, &left, &split);
        right.lb = rel_bound(&r, &right, &split);
        if ((rc = heap_push(&h, left)) || (rc = heap_push(&h, right)))
            goto out;
    }
    double lb = best;
    for (size_t k = 0; k < h.n; k++)
        if (h.v[k].lb < lb)
            lb = h.v[k].lb;
    if (lb_closed < lb)
        lb = lb_closed;
    *value_s = shave(lb);
    if (evals)
        *evals = ev;
    if (x_out) {
        double S = cont_eval(w, bestT), sum = 0, over = 0;
        for (size_t i = 0; i < n; i++) {
            double xs = S / w->a[i];
            x_out[i] = xs < w->v[i] ? xs : w->v[i];
            sum += x_out[i];
            over += x_out[i] - (double)slv_min_(p, i);
        }
        /* a minimum-share floor on S can leave more room than D: shrink the
         * part above the minimums proportionally */
        double ex = sum - (double)p->samples;
        if (ex > 0 && over > 0)
            for (size_t i = 0; i < n; i++)
                x_out[i] -= ex * (x_out[i] - (double)slv_min_(p, i)) / over;
    }
out:
    dp_free(w->a);
    dp_free(w->c);
    dp_free(w->v);
    dp_free(w->idx);
    dp_free(w->up);
    dp_free(r.comm_sorted);
    dp_free(r.P1);
    dp_free(r.P2);
    dp_free(h.v);
    return rc;
}

int slv_relaxed_solve(const slv_problem *p, double *x_out, double *value_s, long *evals)
{
    if (is_pure(p))
        return relaxed_pure(p, x_out, value_s, evals);
    return slv_relaxed_solve_general(p, x_out, value_s, evals);
}

/* ---- integer levels ------------------------------------------------------- */

typedef struct int_ws {
    const slv_problem *p;
    int64_t *nmax;         /* n_i(T) of the last evaluation */
    int64_t *lim;          /* min(cap_i, D) */
    size_t *idx, *up;      /* the bracket's active devices; sl_level's scratch */
    double *vd;            /* nmax as doubles, for the continuous bracket */
    double *inv_a, *inv_t; /* 1/a_i, 1/t_i: multiplications guess, products decide */
    double S0;             /* max_i a_i * min_share_i */
    slv_par *par;          /* the passes' helper thread (NULL: none) */
} int_ws;

/* Largest k in [0, nmax] with a * k <= S, decided by the product itself. */
static int64_t send_count(double a, double inv_a, int64_t nmax, double S)
{
    if (!(S >= a))
        return 0;
    double q = S * inv_a; /* a guess; the product tests below decide */
    int64_t k = q >= (double)nmax ? nmax : (int64_t)q;
    while (k < nmax && a * (double)(k + 1) <= S)
        k++;
    while (k > 0 && a * (double)k > S)
        k--;
    return k;
}

/* Largest batch count k in [0, kmax] with comm + t * k <= T. */
static int64_t batch_count(double comm, double t, double inv_t, int64_t kmax, double T)
{
    if (!(T >= comm + t))
        return 0;
    double q = (T - comm) * inv_t;
    int64_t k = q >= (double)kmax ? kmax : (int64_t)q;
    while (k < kmax && comm + t * (double)(k + 1) <= T)
        k++;
    while (k > 0 && comm + t * (double)k > T)
        k--;
    return k;
}

typedef struct level_info {
    double S;     /* S*(T), +inf if infeasible */
    double Tsnap; /* largest level actually used, <= T */
    double Tnext; /* smallest level > T any device can reach (+inf if none) */
} level_info;

/* ---- int_send_level's passes, in chunks (slv_par) ------------------------
 *
 * Each pass runs over the active devices idx[0, m), or over every device.
 * Its combinations are exact (integer sums, minima, lists joined in
 * order), so S*(T) is the same bits at any cut; see slv_par.h. */

typedef struct act_part {
    int64_t at_lo, at_hi, base; /* counts at lo and hi; counts that stay put */
    size_t m;                   /* devices kept (listed from idx[from]) */
    double jump;                /* the least next jump after lo */
} act_part;

typedef struct act_job {
    int_ws *w;
    int all;       /* over every device (else idx[0, m)) */
    int want_hi;   /* keep_chunk: count at hi too */
    double lo, hi; /* the bracket; jump_chunk and count_chunk use lo alone (their level), and
                      count_chunk leaves its count in part[c].at_lo */
    act_part part[SLV_PAR_CHUNKS];
} act_job;

static inline size_t act_dev(const act_job *j, size_t k)
{
    return j->all ? k : j->w->idx[k];
}

/* Keep the devices with a jump in (lo, hi] (and a count that can still
 * change), in order from idx[from]: a chunk never writes past what it has
 * read, so idx may be both its input and its output. */
static void keep_chunk(void *vj, size_t c, size_t from, size_t to)
{
    act_job *j = vj;
    int_ws *w = j->w;
    const double *a = w->p->send_s;
    act_part r = {0, 0, 0, 0, 0};
    size_t *out = w->idx + from;
    for (size_t k = from; k < to; k++) {
        size_t i = act_dev(j, k);
        if (w->nmax[i] == 0)
            continue;
        int64_t kl = send_count(a[i], w->inv_a[i], w->nmax[i], j->lo);
        r.at_lo += kl;
        if (kl == w->nmax[i] || a[i] * (double)(kl + 1) > j->hi) {
            r.base += kl; /* no jump in (lo, hi]: the same count at hi */
            r.at_hi += kl;
        } else {
            out[r.m++] = i;
            if (j->want_hi)
                r.at_hi += send_count(a[i], w->inv_a[i], w->nmax[i], j->hi);
        }
    }
    j->part[c] = r;
}

static void jump_chunk(void *vj, size_t c, size_t from, size_t to)
{
    act_job *j = vj;
    const int_ws *w = j->w;
    const double *a = w->p->send_s;
    double nj = HUGE_VAL;
    for (size_t k = from; k < to; k++) {
        size_t i = w->idx[k];
        double x = a[i] * (double)(send_count(a[i], w->inv_a[i], w->nmax[i], j->lo) + 1);
        if (x < nj)
            nj = x;
    }
    j->part[c].jump = nj;
}

static void count_chunk(void *vj, size_t c, size_t from, size_t to)
{
    act_job *j = vj;
    const int_ws *w = j->w;
    const double *a = w->p->send_s;
    int64_t f = 0;
    for (size_t k = from; k < to; k++) {
        size_t i = w->idx[k];
        f += send_count(a[i], w->inv_a[i], w->nmax[i], j->lo);
    }
    j->part[c].at_lo = f;
}

/* Keep (see keep_chunk) over idx[0, m), or every device when all: adds the
 * counts that stay put to *base and, if asked, the counts at lo and hi;
 * returns how many are kept (now idx[0, kept)). */
static size_t keep(int_ws *w, int all, size_t m, double lo, double hi, int64_t *base, int64_t *at_lo,
                   int64_t *at_hi)
{
    act_job j = {w, all, at_hi != NULL, lo, hi, {{0, 0, 0, 0, 0}}};
    size_t k = slv_par_run(w->par, m, keep_chunk, &j), kept = 0;
    for (size_t c = 0; c < k; c++) {
        const act_part *r = &j.part[c];
        if (r->m)
            memmove(w->idx + kept, w->idx + slv_par_lo(m, k, c), r->m * sizeof *w->idx);
        kept += r->m;
        *base += r->base;
        if (at_lo)
            *at_lo += r->at_lo;
        if (at_hi)
            *at_hi += r->at_hi;
    }
    return kept;
}

/* The least next jump after lo over idx[0, m). */
static double next_jump(int_ws *w, size_t m, double lo)
{
    act_job j = {w, 0, 0, lo, 0, {{0, 0, 0, 0, 0}}};
    double nj = HUGE_VAL;
    for (size_t c = 0, k = slv_par_run(w->par, m, jump_chunk, &j); c < k; c++)
        if (j.part[c].jump < nj)
            nj = j.part[c].jump;
    return nj;
}

/* sum_i min(send_count(S), nmax_i) over idx[0, m), plus a base. */
static int64_t count_at(int_ws *w, size_t m, int64_t base, double S)
{
    act_job j = {w, 0, 0, S, 0, {{0, 0, 0, 0, 0}}};
    int64_t f = base;
    for (size_t c = 0, k = slv_par_run(w->par, m, count_chunk, &j); c < k; c++)
        f += j.part[c].at_lo;
    return f;
}

/* S*(T) given nmax (and, from int_eval's pass, their sum, the largest
 * a_i nmax_i and nmax as doubles in vd): the D-th smallest send time
 * a_i * k (k <= nmax_i), at least S0.  Bracket (lo, hi] with count(lo) < D <= count(hi); a device whose
 * count is the same at lo and hi leaves the active set with that count. */
static double int_send_level(int_ws *w, int64_t total, double hi)
{
    const slv_problem *p = w->p;
    const double *a = p->send_s;
    int64_t D = p->samples;
    if (total < D)
        return HUGE_VAL;
    /* A tight bracket first: with fc(S) = sum min(S / a_i, n_i), the integer
     * count satisfies fc(S) - N < f(S) <= fc(S), so S* lies between the
     * continuous solutions for D and D + N.  Their width is about one send
     * time per device, so few devices have a jump inside and the passes
     * below start from a small active set instead of all N. */
    double lo = w->S0, top = hi, slope = 0;
    size_t nlin = 0;
    /* cut by chunks: its sums round otherwise than a plain loop's, which
     * only moves the bracket; the counts below check it */
    sl_in in = {p->n, a, w->vd, w->idx, w->up, w->par};
    double clo = sl_level(&in, (double)D, w->S0, &slope, &nlin);
    /* f(S) >= fc(S) - (unsaturated devices): about nlin / slope above clo the
     * count reaches D unless devices saturate on the way; grow if not */
    double width = slope > 0 ? 1.05 * (double)nlin / slope : hi - lo;
    int tries = 0;
    if (clo > lo && clo < hi) {
        lo = clo;
        hi = clo + width < top ? clo + width : top;
    }
    size_t m;
    int64_t base, at_lo;
    for (;;) {
        int64_t at_hi = 0;
        base = at_lo = 0;
        m = keep(w, 1, p->n, lo, hi, &base, &at_lo, &at_hi);
        if (lo == w->S0 && hi == top)
            break;
        if (at_lo < D && at_hi >= D)
            break;
        if (at_lo < D && ++tries < 4) {
            width *= 4; /* devices saturated inside: widen */
            hi = lo + width < top ? lo + width : top;
            continue;
        }
        lo = w->S0; /* rounding defeated the bracket: fall back to the full one */
        hi = top;
    }
    if (at_lo >= D)
        return lo; /* the minimum-share floor already fits everything */
    for (int pass = 0;; pass++) {
        /* next jump after lo: if it already reaches D it is the answer */
        double nj = next_jump(w, m, lo);
        if (m == 0 || !(nj < hi))
            return hi;
        if (count_at(w, m, base, nj) >= D)
            return nj;
        lo = nj;
        /* then halve the bracket, alternating a jump of the middle device
         * (shrinks the active set like quickselect) and the value midpoint
         * (bounds the number of passes by the double resolution) */
        double piv;
        if (pass % 2 == 0) {
            size_t i = w->idx[m / 2];
            piv = a[i] * (double)(send_count(a[i], w->inv_a[i], w->nmax[i], lo) + 1);
        } else {
            piv = 0.5 * (lo + hi);
        }
        if (piv > lo && piv < hi) {
            if (count_at(w, m, base, piv) >= D)
                hi = piv;
            else
                lo = piv;
        }
        m = keep(w, 0, m, lo, hi, &base, NULL, NULL);
    }
}

/* int_eval's pass, in chunks (slv_par). */
typedef struct eval_part {
    int64_t total;
    double hi, Tsnap, Tnext;
    int feasible;
} eval_part;

typedef struct eval_job {
    int_ws *w;
    double T;
    eval_part part[SLV_PAR_CHUNKS];
} eval_job;

static void eval_chunk(void *vj, size_t c, size_t from, size_t to)
{
    eval_job *j = vj;
    int_ws *w = j->w;
    const slv_problem *p = w->p;
    double T = j->T;
    eval_part r = {0, 0, -HUGE_VAL, HUGE_VAL, 1};
    for (size_t i = from; i < to; i++) {
        double comm = slv_comm_(p, i), t = p->batch_s[i];
        int64_t b = p->batch[i];
        int64_t kmax = (w->lim[i] + b - 1) / b;
        int64_t kb = batch_count(comm, t, w->inv_t[i], kmax, T);
        int64_t nm = b * kb;
        if (nm > w->lim[i])
            nm = w->lim[i];
        w->nmax[i] = nm;
        w->vd[i] = (double)nm;
        r.total += nm;
        double top = p->send_s[i] * (double)nm;
        if (nm > 0 && top > r.hi)
            r.hi = top;
        if (nm < slv_min_(p, i))
            r.feasible = 0;
        if (!p->allow_exclude && T < comm)
            r.feasible = 0;
        /* the level this device really uses, and the next one it could */
        if (kb > 0 || (!p->allow_exclude && T >= comm)) {
            double lvl = comm + t * (double)kb;
            if (lvl > r.Tsnap)
                r.Tsnap = lvl;
        }
        if (kb < kmax) {
            double nx = (!p->allow_exclude && T < comm) ? comm : comm + t * (double)(kb + 1);
            if (nx < r.Tnext)
                r.Tnext = nx;
        }
    }
    j->part[c] = r;
}

static level_info int_eval(int_ws *w, double T)
{
    eval_job j = {w, T, {{0, 0, 0, 0, 0}}};
    size_t k = slv_par_run(w->par, w->p->n, eval_chunk, &j);
    level_info r = {HUGE_VAL, -HUGE_VAL, HUGE_VAL};
    int feasible = 1;
    int64_t total = 0; /* for int_send_level, in the same pass */
    double hi = 0;
    for (size_t c = 0; c < k; c++) { /* maxima, minima and integer sums: exact in any cut */
        const eval_part *e = &j.part[c];
        total += e->total;
        if (e->hi > hi)
            hi = e->hi;
        if (e->Tsnap > r.Tsnap)
            r.Tsnap = e->Tsnap;
        if (e->Tnext < r.Tnext)
            r.Tnext = e->Tnext;
        feasible &= e->feasible;
    }
    if (feasible)
        r.S = int_send_level(w, total, hi);
    return r;
}

/* int_materialize's send counts, in chunks (slv_par). */
typedef struct mat_job {
    int_ws *w;
    double S;
    int64_t *x;
    int64_t sum[SLV_PAR_CHUNKS];
} mat_job;

static void mat_chunk(void *vj, size_t c, size_t from, size_t to)
{
    mat_job *j = vj;
    const int_ws *w = j->w;
    int64_t sum = 0;
    for (size_t i = from; i < to; i++) {
        j->x[i] = send_count(w->p->send_s[i], w->inv_a[i], w->nmax[i], j->S);
        sum += j->x[i];
    }
    j->sum[c] = sum;
}

/* The allocation for level T (after int_eval(T)): every device at its send
 * count under S, then the excess over D trimmed, first from devices sitting
 * exactly at S, then from any device above its minimum (never raising F). */
static void int_materialize(int_ws *w, double T, int64_t *x)
{
    const slv_problem *p = w->p;
    level_info li = int_eval(w, T);
    mat_job j = {w, li.S, x, {0}};
    size_t k = slv_par_run(w->par, p->n, mat_chunk, &j);
    int64_t sum = 0;
    for (size_t c = 0; c < k; c++)
        sum += j.sum[c];
    int64_t ex = sum - p->samples;
    for (size_t i = 0; i < p->n && ex > 0; i++)
        if (x[i] > slv_min_(p, i) && p->send_s[i] * (double)x[i] >= li.S) {
            x[i]--;
            ex--;
        }
    for (size_t i = p->n; i-- > 0 && ex > 0;) {
        int64_t room = x[i] - slv_min_(p, i);
        int64_t take = room < ex ? room : ex;
        x[i] -= take;
        ex -= take;
    }
}

/* int_search's per-device set-up and the extremes it needs, in chunks
 * (slv_par). */
typedef struct init_part {
    double S0, Tmax, L0, Lforced;
} init_part;

typedef struct init_job {
    int_ws *w;
    init_part part[SLV_PAR_CHUNKS];
} init_job;

static void init_chunk(void *vj, size_t c, size_t from, size_t to)
{
    init_job *j = vj;
    int_ws *w = j->w;
    const slv_problem *p = w->p;
    init_part r = {0, 0, HUGE_VAL, -HUGE_VAL};
    for (size_t i = from; i < to; i++) {
        w->lim[i] = limit_of(p, i);
        w->inv_a[i] = 1.0 / p->send_s[i];
        w->inv_t[i] = 1.0 / p->batch_s[i];
        double ms = p->send_s[i] * (double)slv_min_(p, i);
        if (ms > r.S0)
            r.S0 = ms;
        double comm = slv_comm_(p, i), t = p->batch_s[i];
        int64_t b = p->batch[i];
        double top = comm + t * (double)((w->lim[i] + b - 1) / b);
        if (top > r.Tmax)
            r.Tmax = top;
        double first = p->allow_exclude ? comm + t : comm;
        if (first < r.L0)
            r.L0 = first;
        double forced = -HUGE_VAL;
        if (slv_min_(p, i) > 0)
            forced = comm + t * (double)((slv_min_(p, i) + b - 1) / b);
        else if (!p->allow_exclude)
            forced = comm;
        if (forced > r.Lforced)
            r.Lforced = forced;
    }
    j->part[c] = r;
}

/* slv_int_search, given the relaxed feasibility level when the relaxed
 * solve has it (NAN: compute it). */
static int int_search(const slv_problem *p, int64_t *alloc, int have_incumbent, double hint_s, long max_evals,
                      long *evals, int *proven, double *int_lb_s, double tfeas_known);

int slv_int_search(const slv_problem *p, int64_t *alloc, int have_incumbent, double hint_s, long max_evals,
                   long *evals, int *proven, double *int_lb_s)
{
    return int_search(p, alloc, have_incumbent, hint_s, max_evals, evals, proven, int_lb_s, NAN);
}

static int int_search(const slv_problem *p, int64_t *alloc, int have_incumbent, double hint_s, long max_evals,
                      long *evals, int *proven, double *int_lb_s, double tfeas_known)
{
    size_t n = p->n;
    int_ws w = {p,
                dp_malloc(n * sizeof(int64_t)),
                dp_malloc(n * sizeof(int64_t)),
                dp_malloc(n * sizeof(size_t)),
                dp_malloc(n * sizeof(size_t)),
                dp_malloc(n * sizeof(double)),
                dp_malloc(n * sizeof(double)),
                dp_malloc(n * sizeof(double)),
                0,
                NULL};
    heap h = {0};
    int rc = DP_OK;
    if (!w.nmax || !w.lim || !w.idx || !w.up || !w.vd || !w.inv_a || !w.inv_t) {
        rc = DP_ENOMEM;
        goto out;
    }
    w.par = slv_par_new(n);
    double E = p->epochs, K = p->const_s;
    double L0 = HUGE_VAL, Tmax = 0, Lforced = -HUGE_VAL;
    init_job ij = {&w, {{0, 0, 0, 0}}};
    for (size_t c = 0, k = slv_par_run(w.par, n, init_chunk, &ij); c < k; c++) {
        const init_part *r = &ij.part[c];
        if (r->S0 > w.S0)
            w.S0 = r->S0;
        if (r->Tmax > Tmax)
            Tmax = r->Tmax;
        if (r->L0 < L0)
            L0 = r->L0;
        if (r->Lforced > Lforced)
            Lforced = r->Lforced;
    }
    if (Lforced > L0)
        L0 = Lforced;
    /* n_i(T) <= (T - comm_i) / c_i, so no level below the relaxed feasibility
     * level fits D: skip that stretch instead of bisecting through it */
    double Tfeas = tfeas_known;
    if (isnan(Tfeas)) {
        for (size_t i = 0; i < n; i++)
            w.vd[i] = p->batch_s[i] / p->batch[i];
        Tfeas = feas_level(p, w.vd, w.idx);
    }
    Tfeas -= fabs(Tfeas) * 1e-12; /* rounding margin: never cut a feasible level */
    if (Tfeas > L0)
        L0 = Tfeas;
    if (max_evals <= 0)
        max_evals = n > 100000 ? auto_budget(n, 8) : auto_budget(n, 24);

    double best = have_incumbent ? slv_objective(p, alloc) : HUGE_VAL, bestT = NAN;
    double S_floor = w.S0;
    double H0 = (best - K - S_floor) / E;
    if (H0 > Tmax)
        H0 = Tmax;
    long ev = 0;
    double lb_open = HUGE_VAL, hint = hint_s;
    if (have_incumbent)
        for (size_t i = 0; i < n; i++) {
            if (alloc[i] == 0 && p->allow_exclude)
                continue;
            double lvl =
                slv_comm_(p, i) + p->batch_s[i] * (double)((alloc[i] + p->batch[i] - 1) / p->batch[i]);
            if (lvl > hint)
                hint = lvl;
        }
    if (H0 >= L0) {
        level_info li = int_eval(&w, H0);
        ev++;
        double val = li.S + E * li.Tsnap + K;
        if (val < best) {
            best = val;
            bestT = H0;
        }
        if (isfinite(li.S) && li.Tsnap >= L0)
            if ((rc = heap_push(&h, (node){L0, li.Tsnap, li.S, li.S + E * L0 + K, 0, 0, 0, 0, 0, 0})))
                goto out;
    }
    while (h.n > 0) {
        if (slv_interrupted()) {
            rc = DP_ERUN;
            goto out;
        }
        node nd = heap_pop(&h);
        if (nd.lb >= best - fabs(best) * 1e-12)
            continue;
        if (!(nd.L < nd.H))
            continue; /* a single level: its value was counted when it was evaluated */
        if (ev >= max_evals) {
            lb_open = nd.lb;
            break;
        }
        double M = 0.5 * (nd.L + nd.H);
        if (hint > nd.L && hint < nd.H)
            M = hint; /* first split at the incumbent's level: the optimum is usually near */
        hint = -HUGE_VAL;
        if (!(M < nd.H))
            M = nd.L; /* adjacent doubles: L is a level, evaluating it makes progress */
        level_info li = int_eval(&w, M);
        ev++;
        double val = li.S + E * li.Tsnap + K;
        if (val < best) {
            best = val;
            bestT = M;
        }
        /* levels in (Tsnap, Tnext) do not exist, so the children skip them */
        if (li.Tsnap > nd.L && isfinite(li.S)) {
            if ((rc = heap_push(&h, (node){nd.L, li.Tsnap, li.S, li.S + E * nd.L + K, 0, 0, 0, 0, 0, 0})))
                goto out;
        }
        if (li.Tnext <= nd.H)
            if ((rc = heap_push(&h,
                                (node){li.Tnext, nd.H, nd.SH, nd.SH + E * li.Tnext + K, 0, 0, 0, 0, 0, 0})))
                goto out;
    }
    for (size_t k = 0; k < h.n; k++)
        if (h.v[k].lb < lb_open)
            lb_open = h.v[k].lb;
    *proven = !(lb_open < best - fabs(best) * 1e-12);
    *int_lb_s = *proven ? shave(best) : shave(lb_open);
    if (evals)
        *evals = ev;
    if (!isnan(bestT)) {
        int64_t *x = dp_malloc(n * sizeof(int64_t));
        if (!x) {
            rc = DP_ENOMEM;
            goto out;
        }
        int_materialize(&w, bestT, x);
        if (!have_incumbent || slv_objective(p, x) <= slv_objective(p, alloc))
            memcpy(alloc, x, n * sizeof(int64_t));
        dp_free(x);
    }
out:
    dp_free(w.nmax);
    dp_free(w.lim);
    dp_free(w.idx);
    dp_free(w.up);
    dp_free(w.vd);
    dp_free(w.inv_a);
    dp_free(w.inv_t);
    dp_free(h.v);
    slv_par_free(w.par);
    return rc;
}

/* ---- the `exact` method --------------------------------------------------- */

typedef struct exact_state {
    size_t n;
    int stage; /* 0: relaxed next, 1: integer next, 2: done */
    double *x;
    double lb;
    long lp_evals, int_evals;
    int64_t *alloc;
    int proven;
    double int_lb;
    double tfeas; /* the relaxed solve's feasibility level (NAN: none) */
} exact_state;

static int exact_alloc(void *vs, size_t n)
{
    exact_state *s = vs;
    s->n = n;
    s->x = dp_calloc(n, sizeof(double));
    s->alloc = dp_calloc(n, sizeof(int64_t));
    return (s->x && s->alloc) ? DP_OK : DP_ENOMEM;
}

static void exact_free(void *vs)
{
    exact_state *s = vs;
    dp_free(s->x);
    dp_free(s->alloc);
    s->x = NULL;
    s->alloc = NULL;
}

static int exact_set(void *vs, const slv_problem *p, const slv_params *prm)
{
    (void)p;
    (void)prm;
    exact_state *s = vs;
    s->stage = 0;
    s->proven = 0;
    s->lp_evals = s->int_evals = 0;
    s->tfeas = NAN;
    return DP_OK;
}

static int exact_iterate(void *vs, const slv_problem *p, const slv_params *prm)
{
    exact_state *s = vs;
    int rc;
    if (s->stage == 0) {
        rc = is_pure(p) ? relaxed_pure(p, s->x, &s->lb, &s->lp_evals)
                        : relaxed_general(p, s->x, &s->lb, &s->lp_evals, &s->tfeas);
        if (rc)
            return rc;
        s->stage = 1;
        return 1;
    }
    if (s->stage == 1) {
        /* No rounding as incumbent: the search's first level (everything
         * fits) is one, and its first split is at the relaxed optimum's
         * epoch level rounded up to whole batches, so a rounding would only
         * cost O(N log N) for nothing. */
        double hint = -HUGE_VAL;
        for (size_t i = 0; i < s->n; i++) {
            if (p->allow_exclude && !(s->x[i] > 0))
                continue;
            double lvl = slv_comm_(p, i) + p->batch_s[i] * ceil(s->x[i] / p->batch[i]);
            if (lvl > hint)
                hint = lvl;
        }
        rc = int_search(p, s->alloc, 0, hint, prm->exact_max_evals, &s->int_evals, &s->proven, &s->int_lb,
                        s->tfeas);
        if (rc)
            return rc;
        s->stage = 2;
    }
    return 0;
}

static int exact_finish(void *vs, const slv_problem *p, const slv_params *prm, slv_result *r)
{
    (void)prm;
    exact_state *s = vs;
    memcpy(r->alloc, s->alloc, s->n * sizeof(int64_t));
    memcpy(r->relaxed, s->x, s->n * sizeof(double));
    r->lower_bound_s = s->lb;
    r->int_lower_bound_s = s->int_lb > s->lb ? s->int_lb : s->lb;
    double smax = 0, tmax = 0;
    for (size_t i = 0; i < s->n; i++) {
        double v = p->send_s[i] * s->x[i];
        if (v > smax)
            smax = v;
        if (p->allow_exclude && !(s->x[i] > 0))
            continue;
        double l = slv_comm_(p, i) + p->batch_s[i] / p->batch[i] * s->x[i];
        if (l > tmax)
            tmax = l;
    }
    r->relaxed_s = smax + p->epochs * tmax + p->const_s;
    r->iterations = s->int_evals;
    r->outer_iterations = s->lp_evals;
    r->status = s->proven ? SLV_STATUS_OPTIMAL : SLV_STATUS_NEAR_OPTIMAL;
    r->rounding = SLV_ROUND_BATCH;
    return DP_OK;
}

static const slv_method exact_method = {
    "exact", sizeof(exact_state), exact_alloc, exact_set, exact_iterate, exact_finish, exact_free,
};
const slv_method *const slv_exact = &exact_method;
