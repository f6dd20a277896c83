/* slv_shared.c: the C-ADP allocation problem with shared links (slv.h
 * slv_link, docs/MODEL.md section 5 "Shared links").
 *
 * A server NIC or WAN link that the devices' flows can saturate together
 * adds two things to the model: its members' data cross it at its capacity
 * (a send term per link, sample_s X_l), and each epoch's exchange moves n_l
 * models each way through it (a participant's exchange is then at least
 * n_l model_dn_s down and n_l model_up_s up).  The exchange depends on the
 * participant set P through n_l, which the level search of slv_exact
 * cannot see, so:
 *
 *  - The participant set is an outer search.  For a fixed set Q every
 *    device of Q takes at least one sample (when devices may be left out),
 *    so P = Q and the exchange terms are constants; the minimum over every
 *    Q is the optimum: enumerating every Q is exact.  That is done when at
 *    most SLV_SHARED_ENUM devices may be left out; beyond, candidate sets
 *    (slv.h: the participants of the model without links, the k cheapest
 *    devices over a grid of k), a heuristic reported NEAR_OPTIMAL unless
 *    the bound of the model without links is met.
 *  - For a fixed Q the problem is "min over the epoch level T of S(T) + E T"
 *    as in slv_exact.c, S(T) being the least send level at which D samples
 *    fit: each device at most min(n_i(T), largest k with a_i k <= S), each
 *    link's members together at most the largest X with sample_s X <= S,
 *    summed over the laminar family of links from the inside out.  That
 *    count is monotone in S and decided by the same products the objective
 *    computes, so the least double S at which it reaches D (a bisection
 *    over the doubles' bits, at most 64 counts) is S(T) to the last bit.
 *    Branch and bound over the levels comm'_i + k t_i with the bound
 *    S(H) + E L, as slv_intsearch.c.
 *
 * Cost: O(64 (N + members)) per level, fine for the worlds that have shared
 * links in practice (N up to a few thousand); 2^12 sets at most.
 */
#include "slv_bnb.h"

#include <math.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <gsl/gsl_sort.h>

/* ---- the laminar family of links ---------------------------------------- */

typedef struct lam {
    size_t L;
    size_t *order; /* links by member count, ascending: a link before any that holds it */
    long *parent;  /* the smallest link holding it, -1 none */
    long *inner;   /* per device: its smallest link, -1 none */
} lam;

static void lam_free(lam *f)
{
    dp_free(f->order);
    dp_free(f->parent);
    dp_free(f->inner);
}

/* 1 when every member of link a is a member of link b (members ascending). */
static int subset_of(const slv_link *a, const slv_link *b)
{
    size_t j = 0;
    for (size_t k = 0; k < a->n_members; k++) {
        while (j < b->n_members && b->members[j] < a->members[k])
            j++;
        if (j == b->n_members || b->members[j] != a->members[k])
            return 0;
    }
    return 1;
}

static int intersect(const slv_link *a, const slv_link *b)
{
    size_t j = 0;
    for (size_t k = 0; k < a->n_members; k++) {
        while (j < b->n_members && b->members[j] < a->members[k])
            j++;
        if (j < b->n_members && b->members[j] == a->members[k])
            return 1;
    }
    return 0;
}

int slv_shared_check(const slv_problem *p, const slv_shared *sh, dp_err *err)
{
    if (!sh || sh->n_links == 0)
        return 0;
    if (!sh->links || !sh->xdn_s || !sh->xup_s)
        return dp_err_set(err, DP_EINPUT, "solver: shared links without their arrays");
    for (size_t i = 0; i < p->n; i++)
        if (!(sh->xdn_s[i] >= 0) || !(sh->xup_s[i] >= 0) || !isfinite(sh->xdn_s[i] + sh->xup_s[i]))
            return dp_err_set(err, DP_EINPUT, "solver: device %zu: own exchange times must be finite, >= 0",
                              i);
    for (size_t l = 0; l < sh->n_links; l++) {
        const slv_link *k = &sh->links[l];
        double v[3] = {k->sample_s, k->model_dn_s, k->model_up_s};
        for (int j = 0; j < 3; j++)
            if (!(v[j] >= 0) || !isfinite(v[j]))
                return dp_err_set(err, DP_EINPUT, "solver: link %zu: times must be finite and >= 0", l);
        if (k->n_members && !k->members)
            return dp_err_set(err, DP_EINPUT, "solver: link %zu: no member list", l);
        for (size_t m = 0; m < k->n_members; m++)
            if (k->members[m] >= p->n || (m && k->members[m] <= k->members[m - 1]))
                return dp_err_set(err, DP_EINPUT,
                                  "solver: link %zu: members must be ascending device indices", l);
        for (size_t q = 0; q < l; q++) {
            const slv_link *o = &sh->links[q];
            if (intersect(k, o) && !subset_of(k, o) && !subset_of(o, k))
                return dp_err_set(err, DP_EINPUT,
                                  "solver: links %zu and %zu overlap without one holding the other", q, l);
        }
    }
    return 0;
}

static int lam_build(const slv_problem *p, const slv_shared *sh, lam *f)
{
    size_t L = sh->n_links;
    f->L = L;
    f->order = dp_calloc(L ? L : 1, sizeof *f->order);
    f->parent = dp_calloc(L ? L : 1, sizeof *f->parent);
    f->inner = dp_calloc(p->n, sizeof *f->inner);
    if (!f->order || !f->parent || !f->inner)
        return DP_ENOMEM;
    for (size_t l = 0; l < L; l++) { /* insertion sort: few links */
        size_t k = l;
        while (k > 0 && sh->links[f->order[k - 1]].n_members > sh->links[l].n_members) {
            f->order[k] = f->order[k - 1];
            k--;
        }
        f->order[k] = l;
    }
    for (size_t i = 0; i < p->n; i++)
        f->inner[i] = -1;
    for (size_t a = L; a-- > 0;) { /* largest first, so the smallest link wins */
        size_t l = f->order[a];
        f->parent[l] = -1;
        for (size_t b = a + 1; b < L; b++)
            if (subset_of(&sh->links[l], &sh->links[f->order[b]])) {
                f->parent[l] = (long)f->order[b];
                break;
            }
        for (size_t m = 0; m < sh->links[l].n_members; m++)
            f->inner[sh->links[l].members[m]] = (long)l;
    }
    return 0;
}

/* ---- the objective -------------------------------------------------------- */

/* Participants of each link under "in P" = part[i]. */
static void link_counts(const slv_shared *sh, const unsigned char *part, double *nl)
{
    for (size_t l = 0; l < sh->n_links; l++) {
        size_t c = 0;
        for (size_t m = 0; m < sh->links[l].n_members; m++)
            c += part[sh->links[l].members[m]];
        nl[l] = (double)c;
    }
}

/* comm'_i of every device for link participant counts nl: comm_i plus what
 * the shared exchange adds beyond its own (exactly comm_i when nothing). */
static void comm_shared(const slv_problem *p, const slv_shared *sh, const double *nl, double *dn, double *up,
                        double *cm)
{
    for (size_t i = 0; i < p->n; i++)
        dn[i] = up[i] = 0;
    for (size_t l = 0; l < sh->n_links; l++) {
        const slv_link *k = &sh->links[l];
        double d = nl[l] * k->model_dn_s, u = nl[l] * k->model_up_s;
        for (size_t m = 0; m < k->n_members; m++) {
            size_t i = k->members[m];
            dn[i] = fmax(dn[i], d);
            up[i] = fmax(up[i], u);
        }
    }
    for (size_t i = 0; i < p->n; i++)
        cm[i] = slv_comm_(p, i) + fmax(0, dn[i] - sh->xdn_s[i]) + fmax(0, up[i] - sh->xup_s[i]);
}

double slv_objective_shared(const slv_problem *p, const slv_shared *sh, const int64_t *alloc, double *send_s,
                            double *epoch_s)
{
    double smax = 0, tmax = 0;
    if (!sh || sh->n_links == 0) {
        double f = slv_objective(p, alloc);
        if (isfinite(f) && (send_s || epoch_s))
            for (size_t i = 0; i < p->n; i++) {
                smax = fmax(smax, p->send_s[i] * (double)alloc[i]);
                if (alloc[i] > 0 || !p->allow_exclude)
                    tmax =
                        fmax(tmax, slv_comm_(p, i) +
                                       p->batch_s[i] * (double)((alloc[i] + p->batch[i] - 1) / p->batch[i]));
            }
        if (send_s)
            *send_s = smax;
        if (epoch_s)
            *epoch_s = tmax;
        return f;
    }
    size_t n = p->n, L = sh->n_links;
    unsigned char *part = dp_malloc(n);
    double *nl = dp_malloc(L * sizeof *nl), *w = dp_malloc(3 * n * sizeof *w);
    double f = HUGE_VAL;
    if (!part || !nl || !w)
        goto done;
    int64_t sum = 0;
    double units = 0;
    for (size_t i = 0; i < n; i++) {
        if (alloc[i] < 0 || alloc[i] > p->samples)
            goto done;
        sum += alloc[i];
        part[i] = alloc[i] > 0 || !p->allow_exclude;
        smax = fmax(smax, p->send_s[i] * (double)alloc[i]);
    }
    if (sum != p->samples)
        goto done;
    link_counts(sh, part, nl);
    for (size_t l = 0; l < L; l++) {
        const slv_link *k = &sh->links[l];
        int64_t X = 0;
        for (size_t m = 0; m < k->n_members; m++)
            X += alloc[k->members[m]];
        smax = fmax(smax, k->sample_s * (double)X);
    }
    comm_shared(p, sh, nl, w, w + n, w + 2 * n);
    for (size_t i = 0; i < n; i++) {
        if (!part[i])
            continue;
        units += p->agg_units ? (double)p->agg_units[i] : 1.0;
        int64_t nb = (alloc[i] + p->batch[i] - 1) / p->batch[i];
        tmax = fmax(tmax, w[2 * n + i] + p->batch_s[i] * (double)nb);
    }
    f = smax + (double)p->epochs * (tmax + p->agg_s * units) + p->const_s;
    if (isnan(f))
        f = HUGE_VAL;
done:
    if (send_s)
        *send_s = smax;
    if (epoch_s)
        *epoch_s = tmax;
    dp_free(part);
    dp_free(nl);
    dp_free(w);
    return f;
}

/* ---- one participant set Q -------------------------------------------------- */

typedef struct sh_ws {
    const slv_problem *p;
    const slv_shared *sh;
    lam f;
    size_t m;      /* devices in Q */
    size_t *q;     /* their indices, ascending */
    double *cm;    /* comm'_i for Q's counts (per device) */
    double *w;     /* scratch, 3n */
    double *nl;    /* per link: participants of Q */
    int64_t *nmax; /* per device: samples that fit under the level (last evaluation) */
    int64_t *x;    /* per device: scratch allocation */
    int64_t *acc;  /* per link: samples counted below it */
    int64_t *amin; /* per link: minimum shares of its members in Q */
    int64_t *mn;   /* per device of Q: its minimum share, at least 1 when devices may be
                      left out (so that the participants are exactly Q) */
    unsigned char *inq;
    double K;   /* E * aggregation of Q + const (for bounds) */
    long evals; /* levels evaluated in all */
} sh_ws;

/* Largest k in [0, kmax] with a * k <= S (the objective's product decides). */
static int64_t send_count(double a, int64_t kmax, double S)
{
    if (!(S >= a))
        return 0;
    double g = S / a;
    int64_t k = g >= (double)kmax ? kmax : (int64_t)g;
    while (k < kmax && a * (double)(k + 1) <= S)
        k++;
    while (k > 0 && a * (double)k > S)
        k--;
    return k;
}

/* Largest X in [0, D] with s * X <= S (the objective's product decides). */
static int64_t link_count(double s, int64_t D, double S)
{
    if (s == 0)
        return D;
    return send_count(s, D, S);
}

/* The most samples Q can take at send level S under nmax (-1: the minimum
 * shares do not fit); with fill, also such an allocation into w->x. */
static int64_t count_at(sh_ws *w, double S, int fill)
{
    const slv_problem *p = w->p;
    const slv_shared *sh = w->sh;
    int64_t total = 0;
    for (size_t l = 0; l < w->f.L; l++)
        w->acc[l] = 0;
    for (size_t k = 0; k < w->m; k++) {
        size_t i = w->q[k];
        int64_t c = send_count(p->send_s[i], w->nmax[i], S);
        if (c < w->mn[i])
            return -1;
        if (fill)
            w->x[i] = c;
        if (w->f.inner[i] >= 0)
            w->acc[w->f.inner[i]] += c;
        else
            total += c;
    }
    for (size_t a = 0; a < w->f.L; a++) {
        size_t l = w->f.order[a];
        const slv_link *lk = &sh->links[l];
        int64_t cap = link_count(lk->sample_s, p->samples, S);
        if (cap < w->amin[l])
            return -1;
        int64_t v = w->acc[l] < cap ? w->acc[l] : cap;
        if (fill && w->acc[l] > cap) { /* trim members towards their minimum shares */
            int64_t ex = w->acc[l] - cap;
            for (size_t mm = 0; mm < lk->n_members && ex > 0; mm++) {
                size_t i = lk->members[mm];
                if (!w->inq[i])
                    continue;
                int64_t room = w->x[i] - w->mn[i], t = room < ex ? room : ex;
                w->x[i] -= t;
                ex -= t;
            }
        }
        if (w->f.parent[l] >= 0)
            w->acc[w->f.parent[l]] += v;
        else
            total += v;
    }
    return total;
}

static double from_bits(uint64_t b)
{
    double d;
    memcpy(&d, &b, sizeof d);
    return d;
}

static uint64_t to_bits(double d)
{
    uint64_t b;
    memcpy(&b, &d, sizeof b);
    return b;
}

typedef struct lvl {
    double S, Tsnap, Tnext;
} lvl;

/* Largest batch count k in [0, kmax] with cm + t * k <= T. */
static int64_t batch_count(double cm, double t, int64_t kmax, double T)
{
    if (!(T >= cm + t))
        return 0;
    double g = (T - cm) / t;
    int64_t k = g >= (double)kmax ? kmax : (int64_t)g;
    while (k < kmax && cm + t * (double)(k + 1) <= T)
        k++;
    while (k > 0 && cm + t * (double)k > T)
        k--;
    return k;
}

/* S(T) for Q: the least send level at which D samples fit with no device of
 * Q above epoch level T (+inf: none), the largest level used and the next. */
static lvl eval_level(sh_ws *w, double T)
{
    const slv_problem *p = w->p;
    lvl r = {HUGE_VAL, -HUGE_VAL, HUGE_VAL};
    w->evals++;
    int64_t sum = 0;
    double shi = 0;
    int ok = 1;
    for (size_t k = 0; k < w->m; k++) {
        size_t i = w->q[k];
        double cm = w->cm[i], t = p->batch_s[i];
        int64_t lim = limit_of(p, i), kmax = (lim + p->batch[i] - 1) / p->batch[i];
        if (!(T >= cm)) {
            ok = 0;
            r.Tnext = fmin(r.Tnext, cm);
            w->nmax[i] = 0;
            continue;
        }
        int64_t kk = batch_count(cm, t, kmax, T);
        int64_t nx = (int64_t)p->batch[i] * kk;
        w->nmax[i] = nx < lim ? nx : lim;
        if (w->nmax[i] < w->mn[i])
            ok = 0;
        r.Tsnap = fmax(r.Tsnap, cm + t * (double)kk);
        if (kk < kmax)
            r.Tnext = fmin(r.Tnext, cm + t * (double)(kk + 1));
        sum += w->nmax[i];
        shi = fmax(shi, p->send_s[i] * (double)w->nmax[i]);
    }
    if (!ok || sum < p->samples)
        return r;
    for (size_t l = 0; l < w->f.L; l++) {
        const slv_link *lk = &w->sh->links[l];
        int64_t X = 0;
        for (size_t mm = 0; mm < lk->n_members; mm++)
            X += w->inq[lk->members[mm]] ? w->nmax[lk->members[mm]] : 0;
        shi = fmax(shi, lk->sample_s * (double)X);
    }
    uint64_t lo = 0, hi = to_bits(shi); /* count(0) = 0 < D; count(shi) = sum >= D */
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (count_at(w, from_bits(mid), 0) >= p->samples)
            hi = mid;
        else
            lo = mid;
    }
    r.S = from_bits(hi);
    return r;
}

/* The allocation at send level S under the last evaluation's nmax, trimmed
 * to D; its true F (the participants it has, at most Q). */
static double materialize(sh_ws *w, double S)
{
    const slv_problem *p = w->p;
    memset(w->x, 0, p->n * sizeof *w->x);
    int64_t total = count_at(w, S, 1), ex = total - p->samples;
    for (size_t k = 0; k < w->m && ex > 0; k++) {
        size_t i = w->q[k];
        int64_t room = w->x[i] - w->mn[i], t = room < ex ? room : ex;
        w->x[i] -= t;
        ex -= t;
    }
    return slv_objective_shared(p, w->sh, w->x, NULL, NULL);
}

/* Branch and bound over Q's epoch levels.  *best_f / best_x: the incumbent
 * (updated); *open_lb: the least bound left open when the budget ran out
 * (+inf when the search ended with a proof). */
static int solve_set(sh_ws *w, long budget, double *best_f, int64_t *best_x, double *open_lb)
{
    const slv_problem *p = w->p;
    const slv_shared *sh = w->sh;
    size_t n = p->n;
    memset(w->inq, 0, n);
    double units = 0;
    for (size_t k = 0; k < w->m; k++) {
        size_t i = w->q[k];
        w->inq[i] = 1;
        units += p->agg_units ? (double)p->agg_units[i] : 1.0;
        w->mn[i] = slv_min_(p, i) > 0 ? slv_min_(p, i) : p->allow_exclude ? 1 : 0;
    }
    link_counts(sh, w->inq, w->nl);
    comm_shared(p, sh, w->nl, w->w, w->w + n, w->cm);
    for (size_t l = 0; l < w->f.L; l++) {
        w->amin[l] = 0;
        for (size_t mm = 0; mm < sh->links[l].n_members; mm++)
            if (w->inq[sh->links[l].members[mm]])
                w->amin[l] += w->mn[sh->links[l].members[mm]];
    }
    double E = (double)p->epochs, Tmin = -HUGE_VAL, Tall = -HUGE_VAL;
    w->K = E * p->agg_s * units + p->const_s;
    for (size_t k = 0; k < w->m; k++) {
        size_t i = w->q[k];
        int64_t lim = limit_of(p, i), kmax = (lim + p->batch[i] - 1) / p->batch[i];
        Tmin = fmax(Tmin, w->cm[i]);
        Tall = fmax(Tall, w->cm[i] + p->batch_s[i] * (double)kmax);
    }
    *open_lb = HUGE_VAL;
    heap h = {0};
    long used = 0;
    int rc = 0;
#define KEEP(S_, T_)                                                                                         \
    do {                                                                                                     \
        if (isfinite(S_)) {                                                                                  \
            double f_ = materialize(w, (S_));                                                                \
            if (f_ < *best_f) {                                                                              \
                *best_f = f_;                                                                                \
                memcpy(best_x, w->x, n * sizeof *best_x);                                                    \
            }                                                                                                \
        }                                                                                                    \
        (void)(T_);                                                                                          \
    } while (0)
    lvl top = eval_level(w, Tall);
    used++;
    if (!isfinite(top.S))
        return 0; /* Q cannot hold the data */
    KEEP(top.S, top.Tsnap);
    if (Tmin < top.Tsnap)
        rc = slv_heap_push(&h, (node){Tmin, top.Tsnap, top.S, top.S + E * Tmin + w->K, 0, 0, 0, 0, 0, 0});
    while (!rc && h.n) {
        if (slv_interrupted()) {
            rc = DP_ERUN;
            break;
        }
        node nd = slv_heap_pop(&h);
        if (shave(nd.lb) >= *best_f)
            continue; /* nothing in it beats the incumbent: nor in the rest (best first) */
        if (used >= budget) {
            *open_lb = fmin(*open_lb, nd.lb);
            continue;
        }
        double mid = nd.L + (nd.H - nd.L) / 2;
        if (!(mid < nd.H))
            mid = nd.L; /* adjacent doubles: mid rounded up to H */
        lvl r = eval_level(w, mid);
        used++;
        if (isfinite(r.S)) {
            KEEP(r.S, r.Tsnap);
            if (r.Tsnap > nd.L) /* levels in [L, Tsnap]: S(Tsnap) = r.S */
                rc = slv_heap_push(&h, (node){nd.L, r.Tsnap, r.S, r.S + E * nd.L + w->K, 0, 0, 0, 0, 0, 0});
        }
        if (!rc && r.Tnext < nd.H) /* (Tnext, H]: S(H) known, the value at H kept already */
            rc =
                slv_heap_push(&h, (node){r.Tnext, nd.H, nd.SH, nd.SH + E * r.Tnext + w->K, 0, 0, 0, 0, 0, 0});
    }
#undef KEEP
    dp_free(h.v);
    return rc;
}

/* ---- the participant search --------------------------------------------- */

/* Solve the set of devices with keep[i]; the incumbent is updated, *f gets
 * the set's own best (+inf when it cannot hold the data). */
static int try_keep(sh_ws *w, const unsigned char *keep, long budget, double *best_f, int64_t *best_x,
                    int64_t *set_x, double *f)
{
    size_t n = w->p->n;
    w->m = 0;
    for (size_t i = 0; i < n; i++)
        if (keep[i])
            w->q[w->m++] = i;
    *f = HUGE_VAL;
    if (!w->m)
        return 0;
    double olb;
    int rc = solve_set(w, budget, f, set_x, &olb);
    if (!rc && *f < *best_f) {
        *best_f = *f;
        memcpy(best_x, set_x, n * sizeof *best_x);
    }
    return rc;
}

/* The forced devices and the k cheapest free ones (freed[ord[0..k)]). */
static int try_prefix(sh_ws *w, unsigned char *keep, const size_t *freed, const size_t *ord, size_t k,
                      long budget, double *best_f, int64_t *best_x, int64_t *set_x, double *f)
{
    const slv_problem *p = w->p;
    for (size_t i = 0; i < p->n; i++)
        keep[i] = !p->allow_exclude || slv_min_(p, i) > 0;
    for (size_t j = 0; j < k; j++)
        keep[freed[ord[j]]] = 1;
    return try_keep(w, keep, budget, best_f, best_x, set_x, f);
}

int slv_solve_shared(const slv_problem *p, const slv_shared *sh, const slv_params *params, slv_result **out,
                     dp_err *err)
{
    if (!sh || sh->n_links == 0)
        return slv_solve_problem("exact", p, params, out, err);
    if (!out)
        return dp_err_set(err, DP_EINPUT, "solver: no output pointer");
    *out = NULL;
    int rc = slv_problem_check(p, err);
    if (rc || (rc = slv_shared_check(p, sh, err)))
        return rc;
    size_t n = p->n;
    double t0 = (double)clock() / CLOCKS_PER_SEC;
    sh_ws w = {.p = p, .sh = sh};
    w.q = dp_malloc(n * sizeof *w.q);
    w.cm = dp_malloc(n * sizeof *w.cm);
    w.w = dp_malloc(3 * n * sizeof *w.w);
    w.nmax = dp_calloc(n, sizeof *w.nmax);
    w.x = dp_calloc(n, sizeof *w.x);
    w.inq = dp_calloc(n, 1);
    w.nl = dp_malloc(sh->n_links * sizeof *w.nl);
    w.acc = dp_malloc(sh->n_links * sizeof *w.acc);
    w.amin = dp_malloc(sh->n_links * sizeof *w.amin);
    w.mn = dp_calloc(n, sizeof *w.mn);
    int64_t *best_x = dp_calloc(n, sizeof *best_x), *set_x = dp_calloc(n, sizeof *set_x);
    size_t *freed = dp_malloc(n * sizeof *freed);
    unsigned char *keep = dp_malloc(n);
    slv_result *r = dp_calloc(1, sizeof *r);
    if (r) {
        r->alloc = dp_calloc(n, sizeof *r->alloc);
        r->relaxed = dp_calloc(n, sizeof *r->relaxed);
    }
    if (!w.q || !w.cm || !w.w || !w.nmax || !w.x || !w.inq || !w.nl || !w.acc || !w.amin || !w.mn ||
        !best_x || !set_x || !freed || !keep || !r || !r->alloc || !r->relaxed || lam_build(p, sh, &w.f)) {
        rc = dp_err_set(err, DP_ENOMEM, "solver: out of memory for the shared-link search");
        goto done;
    }
    /* devices that may be left out: exclusion allowed and no minimum share */
    size_t nf = 0;
    for (size_t i = 0; i < n; i++)
        if (p->allow_exclude && slv_min_(p, i) == 0)
            freed[nf++] = i;
    long budget = params && params->exact_max_evals > 0 ? params->exact_max_evals : slv_auto_budget(n, 400);
    double best_f = HUGE_VAL, open_lb = HUGE_VAL, bound = HUGE_VAL;
    int proven = 1;
    if (nf <= SLV_SHARED_ENUM) {
        /* every set: the forced devices plus each subset of the free ones,
         * largest first (the full set gives a good incumbent early) */
        for (uint64_t mask = ((uint64_t)1 << nf); mask-- > 0 && !rc;) {
            memset(keep, 1, n);
            for (size_t k = 0; k < nf; k++)
                keep[freed[k]] = (mask >> k) & 1;
            w.m = 0;
            for (size_t i = 0; i < n; i++)
                if (keep[i])
                    w.q[w.m++] = i;
            if (!w.m)
                continue;
            double olb;
            rc = solve_set(&w, budget, &best_f, best_x, &olb);
            open_lb = fmin(open_lb, olb);
        }
        bound = fmin(best_f, open_lb);
        proven = !isfinite(open_lb) || open_lb >= best_f;
    } else {
        /* Too many sets to try them all: candidate sets, each solved
         * exactly.  First the participants of the model without links, so
         * that the plan is never worse for this model than the one that
         * ignores them; then the forced devices plus the k cheapest free
         * ones (per-sample cost a_i + E t_i / bs_i) for k = 1, 2, 4, ...,
         * nf, and the k's between the best and its neighbours, halving the
         * gap.  The model without links also gives the bound. */
        slv_result *plain = NULL;
        if ((rc = slv_solve_problem("exact", p, params, &plain, err)))
            goto done;
        bound = plain->int_lower_bound_s;
        for (size_t i = 0; i < n; i++)
            keep[i] = plain->alloc[i] > 0 || !p->allow_exclude || slv_min_(p, i) > 0;
        slv_result_free(plain);
        double f0;
        if ((rc = try_keep(&w, keep, budget, &best_f, best_x, set_x, &f0)))
            goto done;
        double *cost = dp_malloc(nf * sizeof *cost);
        size_t *ord = dp_malloc(nf * sizeof *ord);
        if (!cost || !ord) {
            dp_free(cost);
            dp_free(ord);
            rc = dp_err_set(err, DP_ENOMEM, "solver: out of memory for the shared-link search");
            goto done;
        }
        for (size_t k = 0; k < nf; k++) {
            size_t i = freed[k];
            cost[k] = p->send_s[i] + (double)p->epochs * p->batch_s[i] / p->batch[i];
        }
        gsl_sort_index(ord, cost, 1, nf);
        /* f(k): the best of the set with the k cheapest free devices */
        double fk[2 * 64 + 2];
        size_t kk[2 * 64 + 2], nk = 0, kbest = 0;
        double fbest = HUGE_VAL;
        for (size_t k = 1; !rc; k = k * 2 < nf ? k * 2 : (k == nf ? 0 : nf)) {
            if (!k)
                break;
            rc = try_prefix(&w, keep, freed, ord, k, budget, &best_f, best_x, set_x, &fk[nk]);
            kk[nk++] = k;
            if (fk[nk - 1] < fbest) {
                fbest = fk[nk - 1];
                kbest = nk - 1;
            }
        }
        /* refine between the best k and its neighbours on the grid */
        size_t lo = kbest ? kk[kbest - 1] : kk[kbest], hi = kbest + 1 < nk ? kk[kbest + 1] : kk[kbest],
               at = kk[kbest];
        double fat = fbest;
        while (!rc && (at - lo > 1 || hi - at > 1)) {
            size_t c1 = at - lo > hi - at ? lo + (at - lo) / 2 : at + (hi - at) / 2;
            double fc;
            if ((rc = try_prefix(&w, keep, freed, ord, c1, budget, &best_f, best_x, set_x, &fc)))
                break;
            if (fc < fat) { /* the best moves to c1: narrow around it */
                if (c1 < at)
                    hi = at;
                else
                    lo = at;
                at = c1;
                fat = fc;
            } else if (c1 < at)
                lo = c1;
            else
                hi = c1;
        }
        dp_free(cost);
        dp_free(ord);
        bound = fmin(bound, best_f);
        proven = bound >= best_f * (1 - 1e-12);
    }
    if (rc == DP_ERUN)
        dp_err_set(err, rc, "solver: interrupted");
    if (!rc && !isfinite(best_f))
        rc = dp_err_set(err, DP_EINPUT, "solver: no participant set can hold the %lld samples",
                        (long long)p->samples);
    if (rc)
        goto done;
    memcpy(r->alloc, best_x, n * sizeof *best_x);
    for (size_t i = 0; i < n; i++)
        r->relaxed[i] = (double)best_x[i];
    r->n = n;
    r->objective_s = slv_objective_shared(p, sh, best_x, &r->send_s, &r->epoch_s);
    r->int_lower_bound_s = r->lower_bound_s = shave(fmin(bound, r->objective_s));
    r->relaxed_s = r->objective_s;
    r->iterations = w.evals;
    r->status = proven ? SLV_STATUS_OPTIMAL : SLV_STATUS_NEAR_OPTIMAL;
    r->rounding = SLV_ROUND_BATCH;
    r->solve_seconds = (double)clock() / CLOCKS_PER_SEC - t0; /* host CPU time, as slv_solve */
    *out = r;
    r = NULL;
done:
    slv_result_free(r);
    lam_free(&w.f);
    dp_free(w.q);
    dp_free(w.cm);
    dp_free(w.w);
    dp_free(w.nmax);
    dp_free(w.x);
    dp_free(w.inq);
    dp_free(w.nl);
    dp_free(w.acc);
    dp_free(w.amin);
    dp_free(w.mn);
    dp_free(best_x);
    dp_free(set_x);
    dp_free(freed);
    dp_free(keep);
    return rc;
}
