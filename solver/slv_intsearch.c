/* slv_intsearch.c: the integer optimum of the C-ADP allocation problem
 * (docs/MODEL.md section 5): a branch and bound over the discrete epoch
 * levels comm_i + k * t_i.  Per level the device limits are whole batches
 * n_i(T) = bs_i * floor((T - comm_i) / t_i) (capped), and S*(T) is the D-th
 * smallest of the send times {a_i * k : 1 <= k <= n_i}, found by a
 * bracketing selection that drops devices whose count cannot change, so a
 * level costs O(N) expected even for N = 10^6; its O(N) passes run in chunks
 * on a helper thread from slv_set_par_min devices (slv_par.h).  Nodes shrink
 * to single levels, so with no budget the search ends with a proof of
 * optimality.  The search's idea: slv_exact.c. */
#include "slv_bnb.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* ---- integer levels ------------------------------------------------------- */

typedef struct int_ws {
    const slv_problem *p;
    int64_t *nmax;         /* n_i(T) of the last evaluation */
    int64_t *lim;          /* min(cap_i, D) */
    size_t *idx, *up;      /* the bracket's active devices; slv_sl_level's scratch */
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
    double clo = slv_sl_level(&in, (double)D, w->S0, &slope, &nlin);
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

/* slv_int_search_tf's per-device set-up and the extremes it needs, in chunks
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

int slv_int_search(const slv_problem *p, int64_t *alloc, int have_incumbent, double hint_s, long max_evals,
                   long *evals, int *proven, double *int_lb_s)
{
    return slv_int_search_tf(p, alloc, have_incumbent, hint_s, max_evals, evals, proven, int_lb_s, NAN);
}

int slv_int_search_tf(const slv_problem *p, int64_t *alloc, int have_incumbent, double hint_s, long max_evals,
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
        Tfeas = slv_feas_level(p, w.vd, w.idx);
    }
    Tfeas -= fabs(Tfeas) * 1e-12; /* rounding margin: never cut a feasible level */
    if (Tfeas > L0)
        L0 = Tfeas;
    if (max_evals <= 0)
        max_evals = n > 100000 ? slv_auto_budget(n, 8) : slv_auto_budget(n, 24);

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
            if ((rc = slv_heap_push(&h, (node){L0, li.Tsnap, li.S, li.S + E * L0 + K, 0, 0, 0, 0, 0, 0})))
                goto out;
    }
    while (h.n > 0) {
        if (slv_interrupted()) {
            rc = DP_ERUN;
            goto out;
        }
        node nd = slv_heap_pop(&h);
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
            if ((rc = slv_heap_push(&h, (node){nd.L, li.Tsnap, li.S, li.S + E * nd.L + K, 0, 0, 0, 0, 0, 0})))
                goto out;
        }
        if (li.Tnext <= nd.H)
            if ((rc = slv_heap_push(
                     &h, (node){li.Tnext, nd.H, nd.SH, nd.SH + E * li.Tnext + K, 0, 0, 0, 0, 0, 0})))
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
