/* slv_level.c: the pieces both searches of the `exact` method share
 * (slv_bnb.h): the continuous send level S_c(T) (a selection over the
 * saturation points, O(N) expected), the relaxed feasibility level, the
 * best-first heap of level intervals and the automatic evaluation budget.
 * Their contracts and the method's idea: slv_exact.c, solver/README.md. */
#include "slv_bnb.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* ---- continuous send level S_c(T) ---------------------------------------- */

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
double slv_sl_level(const sl_in *in, double D, double s0, double *slope_out, size_t *nlin_out)
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
 * slv_sl_level; O(N) expected.  idx is scratch of n entries. */
double slv_feas_level(const slv_problem *p, const double *c, size_t *idx)
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

/* ---- a best-first heap of level intervals -------------------------------- */

int slv_heap_push(heap *h, node x)
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

node slv_heap_pop(heap *h)
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
long slv_auto_budget(size_t n, long floor_evals)
{
    double b = 8e6 / (double)n;
    return b < (double)floor_evals ? floor_evals : (long)b;
}
