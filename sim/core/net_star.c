/* net_star.c: the exact fast path of net.c for flows that share one link
 * (included by net.c, which owns the structs; not compiled on its own).
 *
 * When every active flow crosses one shared finite link B (a server's NIC)
 * and every other finite link a flow crosses carries no other active flow
 * (its own access links), max-min fairness is water-filling: flow i has a
 * private cap c_i (its rate cap and its private links' capacities), the
 * level L solves sum_i min(c_i, L) = cap(B), and rate_i = min(c_i, L)
 * (progressive filling would freeze the flows with c_i < L at their caps,
 * then the rest at B's remaining capacity over their count: the same
 * formula, up to rounding).  Without a shared link (B = -1: every finite
 * link is private) each flow runs at its c_i.
 *
 * Flows sit in one of two sets, each with two indexed binary heaps:
 *  - C, capped (c_i < L): rate c_i; keyed by absolute finish time, and by
 *    c_i largest first (the first to join U when L falls);
 *  - U, uncapped: all at rate L, so one virtual clock V = integral of L dt
 *    measures everyone's progress (processor sharing); keyed by the V at
 *    which each ends, and by c_i smallest first (the first to join C when L
 *    rises).
 * A completion pops the smallest keys, an activation inserts, a change
 * moves only the flows whose side of L changed: O(log F) per flow touched,
 * where the general path runs progressive filling and brings every flow up
 * to date at every event, O(F).  Anything that breaks the structure (a flow
 * without B, a second shared finite link) materialises every flow's
 * remaining bytes and hands back to progressive filling (star_leave); a
 * later full reshare enters again when the structure holds.
 *
 * Invariants while n->star:
 *  - every ACTIVE flow is in C or U, or is STAR_NEW: on n->pend with
 *    f->remaining current, inserted at the next recomputation (changes at
 *    one instant are batched into one, as in the general path);
 *  - C: remaining(t) = key - c (t - t0), ending at fin = t0 + key / c;
 *    U: remaining(t) = key - V(t), V(t) = V + L (t - tV); U is empty or L
 *    is finite;
 *  - L, V and tV change only in star_reshare;
 *  - a link's `owner` is 1 + the index of the active flow it was private to
 *    when that flow became active (0: none).
 * Peak utilisation keeps its meaning: B's from the rates of every
 * recomputation; a private link's from c_i when its flow joins C, and, for
 * a flow in U, the highest L since it joined, kept by a stack of (epoch, L)
 * with L decreasing (the first entry at or after an epoch is the highest
 * level since then).
 */

enum { STAR_OFF = 0, STAR_NEW, STAR_C, STAR_U };
enum { H_CFIN, H_CCAP, H_UKEY, H_UCAP }; /* C by finish time, C by cap (largest first), U by end, U by cap */

/* Fewer active flows than this stay on progressive filling (small worlds
 * keep their numbers bit for bit). */
#define STAR_MIN_FLOWS 32

void net_set_star_min_flows(net *n, size_t min_flows)
{
    n->star_min = min_flows ? min_flows : 1;
}

int net_star_on(const net *n)
{
    return n->star;
}

/* ---- heaps of flows, with lazy deletion -------------------------------------- */

/* An entry carries its key and the stamp its flow got when it joined the
 * set; it is live while the flow still has that stamp (f->sstamp is 0 out
 * of C and U, and fresh at every entry).  A flow leaving a set costs O(1)
 * and the heaps touch no flow while they sift (10^6 flows: a heap that
 * moved flows' positions spent most of a completion in cache misses).
 * Dead entries are dropped when they reach the top, or all at once when
 * they outnumber the live ones. */
static inline int sh_before(const sh_ent *a, const sh_ent *b)
{
    /* ties by entry order: deterministic */
    return a->key < b->key || (a->key == b->key && a->stamp < b->stamp);
}

static void sh_sift_down(sh_ent *h, size_t m, size_t i, sh_ent x)
{
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= m)
            break;
        if (c + 1 < m && sh_before(&h[c + 1], &h[c]))
            c++;
        if (!sh_before(&h[c], &x))
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = x;
}

static inline size_t sh_live(const net *n, int h)
{
    return h == H_CFIN || h == H_CCAP ? n->n_c : n->n_u;
}

/* Keep the live entries only (Floyd's heap build, O(size)). */
static void sh_compact(net *n, int h)
{
    sh_ent *e = n->sh[h];
    size_t m = 0;
    for (size_t i = 0; i < n->sh_n[h]; i++)
        if (F(n, e[i].idx)->sstamp == e[i].stamp)
            e[m++] = e[i];
    n->sh_n[h] = m;
    for (size_t i = m / 2; i-- > 0;)
        sh_sift_down(e, m, i, e[i]);
}

/* A failed allocation leaves the entry out and sets n->star_oom: the
 * recomputation then hands every flow back (star_leave reads the flows, not
 * the heaps). */
static void sh_push(net *n, int h, flow *f, double key)
{
    if (n->sh_n[h] >= 2 * sh_live(n, h) + 1024)
        sh_compact(n, h);
    if (grow((void **)&n->sh[h], &n->sh_cap[h], n->sh_n[h] + 1, sizeof(sh_ent))) {
        n->star_oom = 1;
        return;
    }
    sh_ent *e = n->sh[h], x = {key, f->sstamp, f->index};
    size_t i = n->sh_n[h]++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!sh_before(&x, &e[p]))
            break;
        e[i] = e[p];
        i = p;
    }
    e[i] = x;
}

/* The live flow with the smallest key, or NULL. */
static flow *sh_top(net *n, int h)
{
    while (n->sh_n[h]) {
        sh_ent *e = n->sh[h];
        flow *f = F(n, e[0].idx);
        if (f->sstamp == e[0].stamp)
            return f;
        if (--n->sh_n[h])
            sh_sift_down(e, n->sh_n[h], 0, e[n->sh_n[h]]);
    }
    return NULL;
}

/* ---- the state of one flow ----------------------------------------------------- */

/* The capped rates' sum, compensated (Neumaier): it is updated at every
 * move for the whole run, and L = (cap(B) - sum) / |U| must not drift from
 * the sum a fresh fill would make.  Infinite caps (B = -1 only) are left
 * out: nothing reads the sum then. */
static void sum_add(net *n, double x)
{
    if (!isfinite(x))
        return;
    double s = n->sum_c, t = s + x;
    n->sum_c_err += fabs(s) >= fabs(x) ? (s - t) + x : (x - t) + s;
    n->sum_c = t;
}

static double star_rem(const net *n, const flow *f, double now)
{
    double r;
    if (f->sset == STAR_C) {
        if (!(f->c > 0))
            return f->key; /* a private link at zero: stalled */
        if (isinf(f->c))
            return 0;
        r = f->key - f->c * (now - f->t0);
    } else if (f->sset == STAR_U) {
        r = f->key - (n->V + n->L * (now - n->tV));
    } else {
        return f->remaining;
    }
    return r > 0 ? r : 0;
}

static double star_rate(const net *n, const flow *f)
{
    return f->sset == STAR_C ? f->c : f->sset == STAR_U ? n->L : 0;
}

/* The private cap: the flow's own cap and its links' but B's. */
static double star_cap(const net *n, const flow *f)
{
    double c = f->cap;
    for (int k = 0; k < f->np; k++)
        if (f->path[k] != n->star_B && n->links[f->path[k]].cap < c)
            c = n->links[f->path[k]].cap;
    return c;
}

/* Does f keep the structure: it crosses B, and no other finite link it
 * crosses carries another active flow?  (A shared infinite link is never a
 * bottleneck; star_cap_change leaves if it gets a capacity.) */
static int star_fits(const net *n, const flow *f, int B)
{
    int has_b = B < 0;
    for (int k = 0; k < f->np; k++) {
        const link *l = &n->links[f->path[k]];
        if (f->path[k] == B)
            has_b = 1;
        else if (l->n_active > 1 && isfinite(l->cap))
            return 0;
    }
    return has_b;
}

static void star_own(net *n, flow *f)
{
    for (int k = 0; k < f->np; k++) {
        link *l = &n->links[f->path[k]];
        if (f->path[k] != n->star_B && l->n_active == 1)
            l->owner = f->index + 1;
    }
}

static void star_disown(net *n, flow *f)
{
    for (int k = 0; k < f->np; k++)
        if (n->links[f->path[k]].owner == f->index + 1)
            n->links[f->path[k]].owner = 0;
}

/* A share of a link's capacity in use, as a reshare records it. */
static void link_peak_see(link *l, double used)
{
    if (l->cap > 0 && isfinite(l->cap)) {
        double u = used < l->cap ? used : l->cap;
        if (u > l->peak * l->cap)
            l->peak = u / l->cap;
    }
}

/* The highest level since epoch ep (0 when none was in effect). */
static double star_level_since(const net *n, uint64_t ep)
{
    size_t lo = 0, hi = n->n_lstk;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (n->lstk[mid].ep < ep)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n->n_lstk ? n->lstk[lo].level : 0;
}

/* A flow leaves U: its private links saw the highest L of its stay. */
static void star_fold_peak(net *n, flow *f)
{
    double L = star_level_since(n, f->u_epoch);
    if (L > 0)
        for (int k = 0; k < f->np; k++)
            if (f->path[k] != n->star_B)
                link_peak_see(&n->links[f->path[k]], L);
}

static void star_to_c(net *n, flow *f, double now, double rem)
{
    f->sset = STAR_C;
    f->sstamp = ++n->sstamp;
    n->n_c++;
    f->key = rem;
    f->t0 = now;
    f->fin = rem <= 0 || isinf(f->c) ? now : f->c > 0 ? now + rem / f->c : INFINITY;
    sh_push(n, H_CFIN, f, f->fin);
    if (n->star_B >= 0) { /* without a shared link nothing ever leaves C for U */
        sh_push(n, H_CCAP, f, -f->c);
        sum_add(n, f->c);
    }
    for (int k = 0; k < f->np; k++)
        if (f->path[k] != n->star_B)
            link_peak_see(&n->links[f->path[k]], f->c);
}

static void star_to_u(net *n, flow *f, double rem)
{
    f->sset = STAR_U;
    f->sstamp = ++n->sstamp;
    n->n_u++;
    f->key = n->V + rem;
    f->u_epoch = n->epoch + 1; /* the level the coming recomputation sets */
    sh_push(n, H_UKEY, f, f->key);
    sh_push(n, H_UCAP, f, f->c);
}

/* Take f out of its set; f->remaining gets its remaining bytes now. */
static void star_detach(net *n, flow *f, double now)
{
    f->remaining = star_rem(n, f, now);
    if (f->sset == STAR_C) {
        if (n->star_B >= 0)
            sum_add(n, -f->c);
        if (!--n->n_c) { /* no rounding carried past an empty set, no dead entries kept */
            n->sum_c = n->sum_c_err = 0;
            n->sh_n[H_CFIN] = n->sh_n[H_CCAP] = 0;
        }
    } else if (f->sset == STAR_U) {
        star_fold_peak(n, f);
        if (!--n->n_u)
            n->sh_n[H_UKEY] = n->sh_n[H_UCAP] = 0;
    }
    f->sstamp = 0;
    f->sset = STAR_NEW;
}

static int star_pend(net *n, flow *f)
{
    if (grow((void **)&n->pend, &n->cap_pend, n->n_pend + 1, sizeof(uint32_t)))
        return -1;
    f->sset = STAR_NEW;
    n->pend[n->n_pend++] = f->index;
    return 0;
}

/* ---- entering and leaving --------------------------------------------------- */

static void star_reset(net *n)
{
    for (int h = 0; h < 4; h++)
        n->sh_n[h] = 0;
    n->n_c = n->n_u = 0;
    n->star_oom = 0;
    n->n_pend = n->n_lstk = 0;
    n->sum_c = n->sum_c_err = n->V = n->L = 0;
    n->tV = sim_now(n->e);
    n->done_t = NAN;
}

/* Hand every flow back to progressive filling: remaining bytes and rates
 * as of now; a full reshare follows at this instant. */
static void star_leave(net *n)
{
    double now = sim_now(n->e);
    for (size_t k = 0; k < n->n_active; k++) {
        flow *f = F(n, n->active[k]);
        f->rate = star_rate(n, f);
        f->remaining = star_rem(n, f, now);
        if (f->sset == STAR_U)
            star_fold_peak(n, f);
        f->sset = STAR_OFF;
        f->sstamp = 0;
        f->finish_t = INFINITY;
        star_disown(n, f);
    }
    star_reset(n);
    n->star = 0;
    n->t_last = now;
    if (n->done_ev)
        sim_cancel(n->e, n->done_ev);
    n->done_ev = 0;
    mark_dirty(n);
}

/* At a full reshare: do the active flows form a star of at least
 * n->star_min flows?  Then take them (all STAR_NEW, up to date) and return
 * 1; star_reshare places them. */
static int star_try_enter(net *n)
{
    if (n->star_off || n->n_active < n->star_min || !n->n_active)
        return 0;
    const flow *f0 = F(n, n->active[0]);
    int B = -1;
    for (int k = 0; k < f0->np; k++) {
        const link *l = &n->links[f0->path[k]];
        if (isfinite(l->cap) && (size_t)l->n_active == n->n_active) {
            if (B >= 0)
                return 0; /* a second shared link */
            B = f0->path[k];
        }
    }
    if (B >= 0 && !(n->links[B].cap > 0))
        return 0;
    for (size_t k = 0; k < n->n_active; k++)
        if (!star_fits(n, F(n, n->active[k]), B))
            return 0;
    if (grow((void **)&n->pend, &n->cap_pend, n->n_active, sizeof(uint32_t)))
        return 0;
    advance(n);
    star_reset(n);
    n->star = 1;
    n->star_B = B;
    for (size_t k = 0; k < n->n_active; k++) {
        flow *f = F(n, n->active[k]);
        star_own(n, f);
        f->sset = STAR_NEW;
        n->pend[n->n_pend++] = f->index;
    }
    n->full = 1;
    return 1;
}

/* ---- events -------------------------------------------------------------------- */

/* A flow became active (activate(), after its links counted it). */
static void star_activate(net *n, flow *f)
{
    star_own(n, f);
    if (star_pend(n, f))
        star_leave(n);
}

/* Link li's capacity is about to become new_cap (before the change: a
 * flow leaving U folds its peak with the capacity it ran under). */
static void star_cap_change(net *n, int li, double new_cap)
{
    if (!n->star)
        return;
    link *l = &n->links[li];
    if (li == n->star_B) {
        if (!isfinite(new_cap))
            star_leave(n); /* no shared bottleneck any more: let the general fill decide */
        return;            /* otherwise the recomputation reads the new capacity */
    }
    if (l->n_active == 0)
        return;
    if (l->n_active == 1 && l->owner) {
        flow *f = F(n, l->owner - 1);
        if (f->sset == STAR_C || f->sset == STAR_U) {
            star_detach(n, f, sim_now(n->e));
            if (star_pend(n, f))
                star_leave(n);
        }
        return;
    }
    if (isfinite(l->cap) || isfinite(new_cap))
        star_leave(n); /* a link shared by flows other than through B */
}

/* Cut flow f now; returns its remaining bytes.  It leaves n->active. */
static double star_cancel(net *n, flow *f)
{
    star_detach(n, f, sim_now(n->e));
    f->sset = STAR_OFF;
    star_disown(n, f);
    n->full = 1;
    return f->remaining;
}

static double star_level(const net *n)
{
    double cap_b = n->star_B >= 0 ? n->links[n->star_B].cap : INFINITY;
    if (isinf(cap_b))
        return INFINITY;
    double room = cap_b - (n->sum_c + n->sum_c_err);
    size_t nu = n->n_u;
    if (!nu)
        return room >= 0 ? INFINITY : -INFINITY;
    return room > 0 ? room / (double)nu : 0;
}

/* When a flow in U ends at the current level (a flow with nothing left
 * ends now even if the level is 0, as in the general path). */
static double u_fin(const net *n, const flow *f)
{
    double left = f->key - n->V;
    return left <= 0 ? n->tV : n->L > 0 ? n->tV + left / n->L : INFINITY;
}

static void star_schedule(net *n, double now)
{
    double first = INFINITY;
    flow *f = sh_top(n, H_CFIN);
    if (f)
        first = f->fin;
    f = sh_top(n, H_UKEY);
    if (f && u_fin(n, f) < first)
        first = u_fin(n, f);
    if (first < now)
        first = now;
    if (n->done_ev && first == n->done_t)
        return; /* already pending: no cancelled event left in the engine's queue */
    if (n->done_ev)
        sim_cancel(n->e, n->done_ev);
    n->done_ev = isfinite(first) ? sim_at(n->e, first, on_done, n) : 0;
    n->done_t = first;
}

/* The recomputation of a star: returns 1, or 0 when the structure broke
 * (every flow is then handed back, and the caller runs the general fill). */
static int star_reshare(net *n)
{
    if (n->reshare_ev) {
        sim_cancel(n->e, n->reshare_ev);
        n->reshare_ev = 0;
    }
    n->reshares++;
    if (!n->full && !n->n_pend)
        return 1; /* nothing the shares depend on changed */
    n->full = 0;
    n->fills++;
    double now = sim_now(n->e);
    if (n->n_u)
        n->V += n->L * (now - n->tV);
    n->tV = now;
    for (size_t i = 0; i < n->n_pend; i++) {
        flow *f = F(n, n->pend[i]);
        if (f->state != FLOW_ACTIVE || f->sset != STAR_NEW)
            continue; /* cut, or listed twice */
        if (!star_fits(n, f, n->star_B)) {
            star_leave(n);
            return 0;
        }
        f->c = star_cap(n, f);
        if (n->star_B >= 0)
            star_to_u(n, f, f->remaining);
        else
            star_to_c(n, f, now, f->remaining); /* no level: every flow at its cap */
    }
    n->n_pend = 0;
    /* water-filling from the current split: the capped flows whose cap is
     * not below the level join U (largest first; each raises L, but to at
     * most its own cap), then the uncapped ones whose cap is below it join
     * C (smallest first; each raises L, so no capped flow has to go back) */
    double L = star_level(n);
    for (flow *f; (f = sh_top(n, H_CCAP)) && L < INFINITY && f->c >= L; L = star_level(n)) {
        star_detach(n, f, now);
        star_to_u(n, f, f->remaining);
    }
    for (flow *f; (f = sh_top(n, H_UCAP)) && (f->c < L || L == INFINITY); L = star_level(n)) {
        star_detach(n, f, now);
        star_to_c(n, f, now, f->remaining);
    }
    if (n->star_oom) {
        star_leave(n);
        return 0;
    }
    size_t nu = n->n_u;
    n->L = nu ? L : 0;
    if (n->star_B >= 0)
        link_peak_see(&n->links[n->star_B], n->sum_c + n->sum_c_err + (double)nu * n->L);
    if (nu) {
        if (grow((void **)&n->lstk, &n->cap_lstk, n->n_lstk + 1, sizeof *n->lstk)) {
            star_leave(n);
            return 0;
        }
        n->epoch++;
        while (n->n_lstk && n->lstk[n->n_lstk - 1].level <= n->L)
            n->n_lstk--;
        n->lstk[n->n_lstk++] = (struct star_epoch){n->epoch, n->L};
    } else {
        n->V = 0; /* nothing in U: start the virtual clock again, so keys stay small */
        n->n_lstk = 0;
    }
    star_schedule(n, now);
    return 1;
}

/* The completion event: end the flows at the top of either set that end
 * now (or have less than 1e-9 of their size left), report them in start
 * order, recompute. */
static void star_on_done(net *n)
{
    double now = sim_now(n->e);
    size_t nf = 0;
    for (int set = 0; set < 2; set++) {
        int h = set ? H_UKEY : H_CFIN;
        for (flow *f; (f = sh_top(n, h));) {
            double t = set ? u_fin(n, f) : f->fin;
            if (!(t <= now || star_rem(n, f, now) <= 1e-9 * f->bytes))
                break;
            if (grow((void **)&n->finished, &n->cap_finished, nf + 1, sizeof(flow *)))
                break;
            star_detach(n, f, now);
            f->sset = STAR_OFF;
            star_disown(n, f);
            active_remove(n, f);
            flow_links_end(n, f, f->bytes);
            n->finished[nf++] = f;
        }
    }
    n->full = 1;
    report_done(n, nf);
    if (n->star && !n->n_active) {
        /* every flow is done: the next wave may share another link */
        star_reset(n);
        n->star = 0;
        n->t_last = now;
    }
    net_reshare_now(n);
}

static void star_free(net *n)
{
    for (int h = 0; h < 4; h++)
        dp_free(n->sh[h]);
    dp_free(n->pend);
    dp_free(n->lstk);
}

/* A link's peak share, with the level its private flow in U runs at now. */
static double star_peak_util(const net *n, int li)
{
    const link *l = &n->links[li];
    double p = l->peak;
    if (n->star && l->owner && li != n->star_B) {
        const flow *f = F(n, l->owner - 1);
        if (f->sset == STAR_U && l->cap > 0 && isfinite(l->cap)) {
            double L = star_level_since(n, f->u_epoch);
            double u = (L < l->cap ? L : l->cap) / l->cap;
            if (u > p)
                p = u;
        }
    }
    return p;
}
