/* slv_relaxed.c: the relaxed optimum of the C-ADP allocation problem
 * (docs/MODEL.md section 5; x real, batches counted fractionally).
 *
 *  - No comm/caps/minimum shares: homogeneous, so the breakpoint scan of
 *    docs/MODEL.md section 5 over r = c_i / a_i is exact in O(N log N)
 *    (gsl_sort_index, or a radix sort for large N).
 *  - General: branch and bound on the continuous epoch level T, S(T) solved
 *    exactly by a selection over the saturation points a_i * v_i (O(N)
 *    expected per level, slv_level.c), stopped at a relative gap of 1e-12 or
 *    a budget.  The search's idea: slv_exact.c. */
#include "slv_bnb.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_sort.h>

/* ---- the pure relaxed problem: docs/MODEL.md section 5 breakpoint scan ----------------- */

int slv_is_pure(const slv_problem *p)
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

int slv_relaxed_pure(const slv_problem *p, double *x_out, double *value_s, long *evals)
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

typedef struct cont_ws {
    const slv_problem *p;
    double *a, *c, *v;
    size_t *idx, *up; /* slv_sl_level's scratch (idx: slv_feas_level's too) */
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
    return slv_sl_level(&in, (double)p->samples, s0, NULL, NULL);
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

int slv_relaxed_solve_general(const slv_problem *p, double *x_out, double *value_s, long *evals)
{
    return slv_relaxed_general_tf(p, x_out, value_s, evals, NULL);
}

int slv_relaxed_general_tf(const slv_problem *p, double *x_out, double *value_s, long *evals,
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
    double Tfeas = slv_feas_level(p, w->c, w->idx);
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
    long ev = 2, budget = n > 100000 ? slv_auto_budget(n, 8) : slv_auto_budget(n, 60);
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
    if ((rc = slv_heap_push(&h, root)))
        goto out;
    if (Lsliver < L0 && isfinite(SL)) {
        node sl = {Lsliver, L0, SL, SL + E * Lsliver + K, HUGE_VAL, 0, 0, root.phiL, 0, 0};
        if ((rc = slv_heap_push(&h, sl)))
            goto out;
    }
    while (h.n > 0) {
        if (slv_interrupted()) {
            rc = DP_ERUN;
            goto out;
        }
        node nd = slv_heap_pop(&h);
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
        if ((rc = slv_heap_push(&h, left)) || (rc = slv_heap_push(&h, right)))
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
    if (slv_is_pure(p))
        return slv_relaxed_pure(p, x_out, value_s, evals);
    return slv_relaxed_solve_general(p, x_out, value_s, evals);
}
