/* slv_exact.c: the relaxed optimum and the integer optimum of the C-ADP
 * allocation problem (MODEL.md section 5), and the `exact` method.
 *
 * Both problems are "min over the epoch level T of S(T) + E*T", where S(T) is
 * the least send level (max_i a_i x_i) that fits D samples when every device
 * stays at or below level T.  S is non-increasing in T, so on any interval
 * [L, H] of levels, S(H) + E*L is a lower bound: a branch and bound on T with
 * that bound is exact and its open nodes always give a valid lower bound.
 *
 *  - Relaxed, no comm/caps/minimum shares: homogeneous, so the MODEL.md
 *    breakpoint scan over r = c_i / a_i is exact in O(N log N) (gsl_sort_index).
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

/* ---- the pure relaxed problem: MODEL.md breakpoint scan ----------------- */

static int is_pure(const slv_problem *p)
{
    for (size_t i = 0; i < p->n; i++)
        if (slv_comm_(p, i) != 0 || slv_cap_(p, i) >= 0 || slv_min_(p, i) != 0)
            return 0;
    return 1;
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
    gsl_sort_index(idx, r, 1, n);
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

/* Least S >= s0 with sum_i min(S / a_i, v_i) >= D, or +inf if sum v < D.
 * Selection over the saturation points w_i = a_i v_i: a bracket (lo, hi] of S
 * shrinks while devices saturated below lo (constant v_i) or linear above hi
 * (slope 1/a_i) leave the active set; once it is empty S solves a linear
 * equation exactly.  idx is scratch of n entries. */
static double cont_send_level(size_t n, const double *a, const double *v, double D, double s0, size_t *idx)
{
    double total = 0, g0 = 0, hi = 0;
    for (size_t i = 0; i < n; i++) {
        total += v[i];
        double w = a[i] * v[i];
        if (w > hi)
            hi = w;
        double c = s0 / a[i];
        g0 += c < v[i] ? c : v[i];
    }
    if (!(total >= D))
        return HUGE_VAL;
    if (g0 >= D)
        return s0;
    double lo = s0, sat = 0, lin = 0;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i] <= 0)
            continue;
        double w = a[i] * v[i];
        if (w <= lo)
            sat += v[i];
        else if (w >= hi)
            lin += 1.0 / a[i];
        else
            idx[m++] = i;
    }
    while (m > 0) {
        /* median of three positions: sorted inputs stay O(N) */
        double w0 = a[idx[0]] * v[idx[0]], w1 = a[idx[m / 2]] * v[idx[m / 2]],
               w2 = a[idx[m - 1]] * v[idx[m - 1]];
        double piv = w0 < w1 ? (w1 < w2 ? w1 : (w0 < w2 ? w2 : w0)) : (w0 < w2 ? w0 : (w1 < w2 ? w2 : w1));
        double g = sat + piv * lin;
        for (size_t k = 0; k < m; k++) {
            size_t i = idx[k];
            double c = piv / a[i];
            g += c < v[i] ? c : v[i];
        }
        if (g >= D)
            hi = piv;
        else
            lo = piv;
        size_t mm = 0;
        for (size_t k = 0; k < m; k++) {
            size_t i = idx[k];
            double w = a[i] * v[i];
            if (w <= lo)
                sat += v[i];
            else if (w >= hi)
                lin += 1.0 / a[i];
            else
                idx[mm++] = i;
        }
        m = mm;
    }
    if (lin <= 0)
        return hi;
    double s = (D - sat) / lin;
    if (s < lo)
        s = lo;
    if (s > hi)
        s = hi;
    return s;
}

typedef struct cont_ws {
    const slv_problem *p;
    double *a, *c, *v;
    size_t *idx;
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
    return cont_send_level(p->n, w->a, w->v, (double)p->samples, s0, w->idx);
}

/* ---- a best-first heap of level intervals -------------------------------- */

typedef struct node {
    double L, H, SH, lb;
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

static long auto_budget(size_t n, long floor_evals)
{
    double b = 4e7 / (double)n;
    return b < (double)floor_evals ? floor_evals : (long)b;
}

/* ---- general relaxed problem: branch and bound on continuous T ----------- */

int slv_relaxed_solve_general(const slv_problem *p, double *x_out, double *value_s, long *evals)
{
    size_t n = p->n;
    cont_ws w = {p, dp_malloc(n * sizeof(double)), dp_malloc(n * sizeof(double)),
                 dp_malloc(n * sizeof(double)), dp_malloc(n * sizeof(size_t))};
    heap h = {0};
    int rc = DP_OK;
    if (!w.a || !w.c || !w.v || !w.idx) {
        rc = DP_ENOMEM;
        goto out;
    }
    double E = p->epochs, K = p->const_s;
    double L0 = HUGE_VAL, Tf = 0;
    for (size_t i = 0; i < n; i++) {
        w.a[i] = p->send_s[i];
        w.c[i] = p->batch_s[i] / p->batch[i];
        double lo = slv_comm_(p, i) + w.c[i] * (double)slv_min_(p, i);
        double hi = slv_comm_(p, i) + w.c[i] * (double)limit_of(p, i);
        if (hi > Tf)
            Tf = hi;
        if (p->allow_exclude && slv_min_(p, i) == 0)
            lo = slv_comm_(p, i);
        if (lo < L0)
            L0 = lo;
    }
    for (size_t i = 0; i < n; i++) { /* forced participants set the floor */
        double lo = slv_comm_(p, i) + w.c[i] * (double)slv_min_(p, i);
        if ((!p->allow_exclude || slv_min_(p, i) > 0) && lo > L0)
            L0 = lo;
    }
    /* at Tf every device may take min(cap, D): feasible by validation */
    double SH = cont_eval(&w, Tf);
    double best = SH + E * Tf + K, bestT = Tf;
    long ev = 1, budget = auto_budget(n, 60);
    if (L0 > Tf)
        L0 = Tf;
    double lb_closed = HUGE_VAL; /* bounds of nodes dropped by the budget */
    if ((rc = heap_push(&h, (node){L0, Tf, SH, SH + E * L0 + K})))
        goto out;
    while (h.n > 0) {
        node nd = heap_pop(&h);
        if (nd.lb >= best - fabs(best) * 1e-12)
            continue; /* no node left can improve beyond the tolerance */
        if (ev >= budget) {
            if (nd.lb < lb_closed)
                lb_closed = nd.lb;
            break;
        }
        double M = 0.5 * (nd.L + nd.H);
        if (!(M > nd.L && M < nd.H))
            continue; /* interval below double resolution: its bound is exact */
        double SM = cont_eval(&w, M);
        ev++;
        double val = SM + E * M + K;
        if (val < best) {
            best = val;
            bestT = M;
        }
        if ((rc = heap_push(&h, (node){nd.L, M, SM, SM + E * nd.L + K})) ||
            (rc = heap_push(&h, (node){M, nd.H, nd.SH, nd.SH + E * M + K})))
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
        double S = cont_eval(&w, bestT), sum = 0, over = 0;
        for (size_t i = 0; i < n; i++) {
            double xs = S / w.a[i];
            x_out[i] = xs < w.v[i] ? xs : w.v[i];
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
    dp_free(w.a);
    dp_free(w.c);
    dp_free(w.v);
    dp_free(w.idx);
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
    int64_t *nmax; /* n_i(T) of the last evaluation */
    int64_t *lim;  /* min(cap_i, D) */
    size_t *idx;
    int64_t *base;
    double S0; /* max_i a_i * min_share_i */
} int_ws;

/* Largest k in [0, nmax] with a * k <= S, decided by the product itself. */
static int64_t send_count(double a, int64_t nmax, double S)
{
    if (!(S >= a))
        return 0;
    double q = S / a;
    int64_t k = q >= (double)nmax ? nmax : (int64_t)q;
    while (k < nmax && a * (double)(k + 1) <= S)
        k++;
    while (k > 0 && a * (double)k > S)
        k--;
    return k;
}

/* Largest batch count k in [0, kmax] with comm + t * k <= T. */
static int64_t batch_count(double comm, double t, int64_t kmax, double T)
{
    if (!(T >= comm + t))
        return 0;
    double q = (T - comm) / t;
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

/* Count sum_i min(send_count(S), nmax_i) over the active devices plus a base. */
static int64_t count_at(const int_ws *w, size_t m, int64_t base, double S)
{
    const double *a = w->p->send_s;
    int64_t f = base;
    for (size_t k = 0; k < m; k++) {
        size_t i = w->idx[k];
        f += send_count(a[i], w->nmax[i], S);
    }
    return f;
}

/* S*(T) given nmax: the D-th smallest send time a_i * k (k <= nmax_i), at
 * least S0.  Bracket (lo, hi] with count(lo) < D <= count(hi); a device whose
 * count is the same at lo and hi leaves the active set with that count. */
static double int_send_level(int_ws *w)
{
    const slv_problem *p = w->p;
    const double *a = p->send_s;
    int64_t D = p->samples, total = 0;
    double hi = 0;
    for (size_t i = 0; i < p->n; i++) {
        total += w->nmax[i];
        double top = a[i] * (double)w->nmax[i];
        if (w->nmax[i] > 0 && top > hi)
            hi = top;
    }
    if (total < D)
        return HUGE_VAL;
    double lo = w->S0;
    size_t m = 0;
    int64_t base = 0, at_lo = 0;
    for (size_t i = 0; i < p->n; i++) {
        if (w->nmax[i] == 0)
            continue;
        int64_t kl = send_count(a[i], w->nmax[i], lo);
        at_lo += kl;
        if (kl == w->nmax[i] || a[i] * (double)(kl + 1) > hi)
            base += kl;
        else
            w->idx[m++] = i;
    }
    if (at_lo >= D)
        return lo; /* the minimum-share floor already fits everything */
    for (int pass = 0;; pass++) {
        /* next jump after lo: if it already reaches D it is the answer */
        double nj = HUGE_VAL;
        for (size_t k = 0; k < m; k++) {
            size_t i = w->idx[k];
            double j = a[i] * (double)(send_count(a[i], w->nmax[i], lo) + 1);
            if (j < nj)
                nj = j;
        }
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
            piv = a[i] * (double)(send_count(a[i], w->nmax[i], lo) + 1);
        } else {
            piv = 0.5 * (lo + hi);
        }
        if (piv > lo && piv < hi) {
            if (count_at(w, m, base, piv) >= D)
                hi = piv;
            else
                lo = piv;
        }
        size_t mm = 0;
        for (size_t k = 0; k < m; k++) {
            size_t i = w->idx[k];
            int64_t kl = send_count(a[i], w->nmax[i], lo);
            if (kl == w->nmax[i] || a[i] * (double)(kl + 1) > hi)
                base += kl;
            else
                w->idx[mm++] = i;
        }
        m = mm;
    }
}

static level_info int_eval(int_ws *w, double T)
{
    const slv_problem *p = w->p;
    level_info r = {HUGE_VAL, -HUGE_VAL, HUGE_VAL};
    int feasible = 1;
    for (size_t i = 0; i < p->n; i++) {
        double comm = slv_comm_(p, i), t = p->batch_s[i];
        int64_t b = p->batch[i];
        int64_t kmax = (w->lim[i] + b - 1) / b;
        int64_t kb = batch_count(comm, t, kmax, T);
        int64_t nm = b * kb;
        if (nm > w->lim[i])
            nm = w->lim[i];
        w->nmax[i] = nm;
        if (nm < slv_min_(p, i))
            feasible = 0;
        if (!p->allow_exclude && T < comm)
            feasible = 0;
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
    if (feasible)
        r.S = int_send_level(w);
    return r;
}

/* The allocation for level T (after int_eval(T)): every device at its send
 * count under S, then the excess over D trimmed, first from devices sitting
 * exactly at S, then from any device above its minimum (never raising F). */
static void int_materialize(int_ws *w, double T, int64_t *x)
{
    const slv_problem *p = w->p;
    level_info li = int_eval(w, T);
    int64_t sum = 0;
    for (size_t i = 0; i < p->n; i++) {
        x[i] = send_count(p->send_s[i], w->nmax[i], li.S);
        sum += x[i];
    }
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

int slv_int_search(const slv_problem *p, int64_t *alloc, long max_evals, long *evals, int *proven,
                   double *int_lb_s)
{
    size_t n = p->n;
    int_ws w = {p,
                dp_malloc(n * sizeof(int64_t)),
                dp_malloc(n * sizeof(int64_t)),
                dp_malloc(n * sizeof(size_t)),
                NULL,
                0};
    heap h = {0};
    int rc = DP_OK;
    if (!w.nmax || !w.lim || !w.idx) {
        rc = DP_ENOMEM;
        goto out;
    }
    double E = p->epochs, K = p->const_s;
    double L0 = HUGE_VAL, Tmax = 0, Lforced = -HUGE_VAL;
    for (size_t i = 0; i < n; i++) {
        w.lim[i] = limit_of(p, i);
        double ms = p->send_s[i] * (double)slv_min_(p, i);
        if (ms > w.S0)
            w.S0 = ms;
        double comm = slv_comm_(p, i), t = p->batch_s[i];
        int64_t b = p->batch[i];
        double top = comm + t * (double)((w.lim[i] + b - 1) / b);
        if (top > Tmax)
            Tmax = top;
        double first = p->allow_exclude ? comm + t : comm;
        if (first < L0)
            L0 = first;
        double forced = -HUGE_VAL;
        if (slv_min_(p, i) > 0)
            forced = comm + t * (double)((slv_min_(p, i) + b - 1) / b);
        else if (!p->allow_exclude)
            forced = comm;
        if (forced > Lforced)
            Lforced = forced;
    }
    if (Lforced > L0)
        L0 = Lforced;
    if (max_evals <= 0)
        max_evals = auto_budget(n, 24);

    double best = slv_objective(p, alloc), bestT = NAN;
    double S_floor = w.S0;
    double H0 = (best - K - S_floor) / E;
    if (H0 > Tmax)
        H0 = Tmax;
    long ev = 0;
    double lb_open = HUGE_VAL;
    if (H0 >= L0) {
        level_info li = int_eval(&w, H0);
        ev++;
        double val = li.S + E * li.Tsnap + K;
        if (val < best) {
            best = val;
            bestT = H0;
        }
        if (isfinite(li.S) && li.Tsnap >= L0)
            if ((rc = heap_push(&h, (node){L0, li.Tsnap, li.S, li.S + E * L0 + K})))
                goto out;
    }
    while (h.n > 0) {
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
            if ((rc = heap_push(&h, (node){nd.L, li.Tsnap, li.S, li.S + E * nd.L + K})))
                goto out;
        }
        if (li.Tnext <= nd.H)
            if ((rc = heap_push(&h, (node){li.Tnext, nd.H, nd.SH, nd.SH + E * li.Tnext + K})))
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
        if (slv_objective(p, x) <= slv_objective(p, alloc))
            memcpy(alloc, x, n * sizeof(int64_t));
        dp_free(x);
    }
out:
    dp_free(w.nmax);
    dp_free(w.lim);
    dp_free(w.idx);
    dp_free(h.v);
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
    return DP_OK;
}

static int exact_iterate(void *vs, const slv_problem *p, const slv_params *prm)
{
    exact_state *s = vs;
    int rc;
    if (s->stage == 0) {
        rc = slv_relaxed_solve(p, s->x, &s->lb, &s->lp_evals);
        if (rc)
            return rc;
        s->stage = 1;
        return 1;
    }
    if (s->stage == 1) {
        /* incumbent: the better of the two roundings of the relaxed optimum */
        int64_t *alt = dp_malloc(s->n * sizeof(int64_t));
        if (!alt)
            return DP_ENOMEM;
        rc = slv_round_batch(p, s->x, s->alloc);
        if (!rc)
            rc = slv_round_largest_remainder(p, s->x, alt);
        if (!rc && slv_objective(p, alt) < slv_objective(p, s->alloc))
            memcpy(s->alloc, alt, s->n * sizeof(int64_t));
        dp_free(alt);
        if (rc)
            return rc;
        rc = slv_int_search(p, s->alloc, prm->exact_max_evals, &s->int_evals, &s->proven, &s->int_lb);
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
