/* net_star.c: the network's exact fast path for flows that share at most
 * one link each (the state is in net_impl.h; progressive filling, which it
 * hands back to, in net_share.c).
 *
 * When every active flow crosses at most one shared finite link (a hub: a
 * server NIC's up or down direction) and every other finite link a flow
 * crosses carries no other active flow (its own access links), max-min
 * fairness splits into one water-filling per hub B: flow i has a private
 * cap c_i (its rate cap and its private links' capacities), the level L_B
 * solves sum_i min(c_i, L_B) = cap(B) over B's flows, and rate_i =
 * min(c_i, L_B) (progressive filling would freeze the flows with c_i < L
 * at their caps, then the rest at B's remaining capacity over their count:
 * the same formula, up to rounding).  The flows that cross no hub form a
 * group of their own (hub 0, link -1) where each runs at its c_i.
 *
 * In each hub, flows sit in one of two sets, each with two heaps:
 *  - C, capped (c_i < L): rate c_i; keyed by absolute finish time, and by
 *    c_i largest first (the first to join U when L falls);
 *  - U, uncapped: all at rate L, so one virtual clock V = integral of L dt
 *    measures everyone's progress (processor sharing); keyed by the V at
 *    which each ends, and by c_i smallest first (the first to join C when L
 *    rises).
 * (Heaps of (key, stamp, flow) with lazy deletion, each with a few sorted runs beside it: what a bulk
 * placement fills at once, and entries that come in order, appended without a sift; below.)  A completion
 * pops the smallest keys, an activation inserts, a change moves only the flows whose side of L changed: O(log
 * F) per flow touched, where the general path runs progressive filling over every flow at every event, O(F).
 * Anything that breaks the structure (a flow on two hubs, a link newly shared, a hub made unlimited)
 * materialises every flow's remaining bytes and hands back to progressive filling (star_leave); a later full
 * reshare enters again when the structure holds.
 *
 * Invariants while n->star:
 *  - every ACTIVE flow is in C or U, or is STAR_NEW: on n->pend with
 *    f->remaining current, inserted at the next recomputation (changes at
 *    one instant are batched into one, as in the general path);
 *  - C: remaining(t) = key - c (t - t0), ending at fin = t0 + key / c;
 *    U: remaining(t) = key - V(t), V(t) = V + L (t - tV); U is empty or L
 *    is finite; V restarts at 0 whenever U empties, so a remaining byte
 *    count loses at most about ulp(V) to the subtraction;
 *  - a hub's L, V and tV change only in star_reshare;
 *  - a link's `owner` is 1 + the index of the active flow it was private to
 *    when that flow became active (0: none).
 * Peak utilisation keeps its meaning: a hub's from the rates of every
 * recomputation; a private link's from c_i when its flow joins C, and, for
 * a flow in U, the highest L since it joined, kept by a stack of (epoch, L)
 * with L decreasing (the first entry at or after an epoch is the highest
 * level since then).
 */

#include "net_impl.h"

enum { H_CFIN, H_CCAP, H_UKEY, H_UCAP }; /* C by finish time, C by cap (largest first), U by end, U by cap */

/* More hubs than this (a world of many shared links) stay on progressive
 * filling: every event scans the hubs. */
#define STAR_MAX_HUBS 16

void net_set_star_min_flows(net *n, size_t min_flows)
{
    n->star_min = min_flows ? min_flows : 1;
}

void net_set_star_bulk_min(net *n, size_t min_flows)
{
    n->star_bulk = min_flows ? min_flows : 1;
}

int net_star_on(const net *n)
{
    return n->star;
}

/* ---- heaps of flows, with lazy deletion -------------------------------------- */

/* An entry carries its key and the stamp its flow got when it joined the
 * set; it is live while the flow still has that stamp (its SST is 0 out
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

DP_HEAP_DEFINE(shh, sh_ent, sh_before) /* sim/base/dp_heap.h */

static inline size_t sh_live(const star_hub *hb, int h)
{
    return h == H_CFIN || h == H_CCAP ? hb->n_c : hb->n_u;
}

static inline int sh_alive(const net *n, const sh_ent *e)
{
    return n->fst[e->idx] == e->stamp;
}

/* Heap h of hub hb (or a flow in it) changed: sh_top looks again. */
static inline void sh_stale(star_hub *hb, int h)
{
    hb->top_ok[h] = 0;
}

/* Keep the live entries only: the heap's rebuilt (Floyd, O(size)), the
 * runs kept in order. */
static void sh_compact(const net *n, star_hub *hb, int h)
{
    sh_stale(hb, h);
    sh_ent *e = hb->sh[h];
    size_t m = 0;
    for (size_t i = 0; i < hb->sh_n[h]; i++)
        if (sh_alive(n, &e[i]))
            e[m++] = e[i];
    hb->sh_n[h] = m;
    shh_build(e, m);
    for (int j = 0; j < SH_RUNS; j++) {
        sh_run *r = &hb->run[h][j];
        m = 0;
        for (size_t i = r->at; i < r->n; i++)
            if (sh_alive(n, &r->e[i]))
                r->e[m++] = r->e[i];
        r->at = 0;
        r->n = m;
    }
}

/* Entries left in heap h's runs. */
static size_t sh_in_runs(const star_hub *hb, int h)
{
    size_t m = 0;
    for (int j = 0; j < SH_RUNS; j++)
        m += hb->run[h][j].n - hb->run[h][j].at;
    return m;
}

/* The run an entry that comes in order goes to: the one whose last entry
 * is the latest not after x (x then keeps it sorted), else an empty one,
 * else -1 (the heap).  Flows of one size entering U in turn have keys in
 * order, flows of a few caps make a few ordered sequences: a completion
 * then reads the next entry of a run instead of sifting a heap of 10^5
 * (asyncps at 10^5 devices).  In a bulk placement: the run open for it,
 * else an empty one (opened). */
static int sh_run_for(star_hub *hb, int h, const sh_ent *x, int bulk)
{
    int best = -1, empty = -1;
    for (int j = 0; j < SH_RUNS; j++) {
        sh_run *r = &hb->run[h][j];
        if (r->open)
            return bulk ? j : -1; /* no ordered entry among a bulk's */
        if (r->at == r->n) {
            if (empty < 0)
                empty = j;
        } else if (!bulk && !sh_before(x, &r->e[r->n - 1]) &&
                   (best < 0 || sh_before(&hb->run[h][best].e[hb->run[h][best].n - 1], &r->e[r->n - 1]))) {
            best = j;
        }
    }
    if (best >= 0)
        return best;
    if (empty >= 0) {
        hb->run[h][empty].at = hb->run[h][empty].n = 0;
        hb->run[h][empty].open = bulk;
    }
    return empty;
}

/* A failed allocation leaves the entry out and sets n->star_oom: the
 * recomputation then hands every flow back (star_leave reads the flows, not
 * the heaps).  An entry goes to a run when one takes it (sh_run_for; in a
 * bulk placement unsorted, sorted once by sh_bulk_end), else on the heap.
 * Entries are distinct in (key, stamp): the order of pops is that of one
 * heap holding them all, wherever they are kept. */
static void sh_push(net *n, star_hub *hb, int h, flow *f, double key)
{
    sh_ent x = {key, *SST(n, f), f->index};
    sh_stale(hb, h);
    if (hb->sh_n[h] + sh_in_runs(hb, h) >= 2 * sh_live(hb, h) + 1024)
        sh_compact(n, hb, h);
    int j = sh_run_for(hb, h, &x, n->sh_bulk);
    if (j >= 0) {
        sh_run *r = &hb->run[h][j];
        if (r->at >= 1024 && 2 * r->at >= r->n) { /* read half: move the rest to the front */
            memmove(r->e, r->e + r->at, (r->n - r->at) * sizeof *r->e);
            r->n -= r->at;
            r->at = 0;
        }
        if (grow((void **)&r->e, &r->cap, r->n + 1, sizeof(sh_ent))) {
            n->star_oom = 1;
            return;
        }
        r->e[r->n++] = x;
        return;
    }
    if (grow((void **)&hb->sh[h], &hb->sh_cap[h], hb->sh_n[h] + 1, sizeof(sh_ent))) {
        n->star_oom = 1;
        return;
    }
    shh_up(hb->sh[h], hb->sh_n[h]++, x);
}

/* The live flow with the smallest key, or NULL: the smallest of the heap's
 * top and the runs' heads, dead entries dropped on the way (hb->top_run[h]
 * says where it is). */
static flow *sh_top(const net *n, star_hub *hb, int h)
{
    if (hb->top_ok[h])
        return hb->top_f[h];
    sh_ent *e = hb->sh[h];
    while (hb->sh_n[h] && !sh_alive(n, &e[0]))
        if (--hb->sh_n[h])
            shh_down(e, hb->sh_n[h], 0, e[hb->sh_n[h]]);
    const sh_ent *best = hb->sh_n[h] ? &e[0] : NULL;
    int from = -1;
    for (int j = 0; j < SH_RUNS; j++) {
        sh_run *r = &hb->run[h][j];
        while (r->at < r->n && !sh_alive(n, &r->e[r->at]))
            r->at++;
        if (r->at < r->n && (!best || sh_before(&r->e[r->at], best))) {
            best = &r->e[r->at];
            from = j;
        }
    }
    hb->top_run[h] = from;
    hb->top_f[h] = best ? F(n, best->idx) : NULL;
    hb->top_ok[h] = 1;
    return hb->top_f[h];
}

/* The smallest key left in heap h and its runs, dead entries included
 * (+inf when there is none): no live entry's key is below it.  hub_fill
 * asks it first, so a level far from every cap (10^5 flows through one
 * NIC) never checks which entries are alive: each check reads a stamp of
 * a flow that ended long ago or ends much later, a cache miss each. */
static double sh_min_key(const star_hub *hb, int h)
{
    double k = hb->sh_n[h] ? hb->sh[h][0].key : INFINITY;
    for (int j = 0; j < SH_RUNS; j++) {
        const sh_run *r = &hb->run[h][j];
        if (r->at < r->n && r->e[r->at].key < k)
            k = r->e[r->at].key;
    }
    return k;
}

/* Empty heap h of hub hb and its runs. */
static void sh_clear(star_hub *hb, int h)
{
    sh_stale(hb, h);
    hb->sh_n[h] = 0;
    for (int j = 0; j < SH_RUNS; j++) {
        hb->run[h][j].at = hb->run[h][j].n = 0;
        hb->run[h][j].open = 0;
    }
}

/* A key's bits as an unsigned integer that orders like the key (-0 as +0,
 * which compare equal).  Keys are never NaN: finish and virtual times come
 * from finite byte counts, caps are positive or +inf. */
static inline uint64_t sh_key_bits(double k)
{
    uint64_t u;
    if (k == 0)
        k = 0;
    memcpy(&u, &k, sizeof u);
    return (u >> 63) ? ~u : u | (UINT64_C(1) << 63);
}

/* Few distinct keys (a mass send of equal sizes ends at a handful of
 * instants): sorted by a counting sort over the keys' ranks.  At most
 * SH_FEW_KEYS distinct keys, kept in an open-addressing table. */
#define SH_FEW_KEYS  1024
#define SH_FEW_SLOTS 4096

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static inline size_t few_slot(uint64_t k)
{
    return (size_t)((k * UINT64_C(0x9e3779b97f4a7c15)) >> 52); /* 12 bits: SH_FEW_SLOTS */
}

/* Counting sort of a[0, m) into b by the rank of its key among at most
 * SH_FEW_KEYS distinct ones; 1 if done, 0 if the keys are too many (or no
 * memory for the table). */
static int sh_sort_few(const sh_ent *a, sh_ent *b, size_t m)
{
    /* no key is 0: sh_key_bits sets bit 63, or inverts a word that had it */
    struct few {
        uint64_t slot_key[SH_FEW_SLOTS], keys[SH_FEW_KEYS];
        size_t slot_at[SH_FEW_SLOTS]; /* entries with the slot's key, then where they go */
    } *t = dp_calloc(1, sizeof *t);
    if (!t)
        return 0;
    size_t nk = 0;
    for (size_t i = 0; i < m; i++) { /* the distinct keys, and how many of each */
        uint64_t k = sh_key_bits(a[i].key);
        size_t s = few_slot(k);
        while (t->slot_key[s] && t->slot_key[s] != k)
            s = (s + 1) & (SH_FEW_SLOTS - 1);
        if (!t->slot_key[s]) {
            if (nk == SH_FEW_KEYS) {
                dp_free(t);
                return 0;
            }
            t->slot_key[s] = k;
            t->keys[nk++] = k;
        }
        t->slot_at[s]++;
    }
    qsort(t->keys, nk, sizeof *t->keys, cmp_u64);
    size_t at = 0;
    for (size_t r = 0; r < nk; r++) { /* in key order: counts become offsets */
        size_t s = few_slot(t->keys[r]);
        while (t->slot_key[s] != t->keys[r])
            s = (s + 1) & (SH_FEW_SLOTS - 1);
        size_t c = t->slot_at[s];
        t->slot_at[s] = at;
        at += c;
    }
    for (size_t i = 0; i < m; i++) {
        uint64_t k = sh_key_bits(a[i].key);
        size_t s = few_slot(k);
        while (t->slot_key[s] != k)
            s = (s + 1) & (SH_FEW_SLOTS - 1);
        b[t->slot_at[s]++] = a[i];
    }
    dp_free(t);
    return 1;
}

/* Sort run r[0, m) by key, stably: entries were appended in stamp order,
 * so equal keys stay in stamp order, as sh_before has them.  Few distinct
 * keys: a counting sort over their ranks; else LSD radix over 11-bit
 * digits (a cache-sized count table), skipping a digit every entry shares.
 * 0, or -1 when out of memory. */
static int sh_run_sort(net *n, sh_run *run)
{
    sh_ent *r = run->e;
    size_t m = run->n;
    int sorted = 1;
    for (size_t i = 1; i < m && sorted; i++)
        sorted = !sh_before(&r[i], &r[i - 1]);
    if (sorted)
        return 0;
    if (grow((void **)&n->run_tmp, &n->cap_run_tmp, m, sizeof(sh_ent)))
        return -1;
    if (sh_sort_few(r, n->run_tmp, m)) { /* the scratch becomes the run */
        run->e = n->run_tmp;
        n->run_tmp = r;
        size_t c = run->cap;
        run->cap = n->cap_run_tmp;
        n->cap_run_tmp = c;
        return 0;
    }
    size_t cnt[1u << RADIX_BITS]; /* on the stack, as sort_finished's */
    sh_ent *a = r, *b = n->run_tmp;
    for (int sh = 0; sh < 64; sh += RADIX_BITS) {
        memset(cnt, 0, sizeof cnt);
        for (size_t i = 0; i < m; i++)
            cnt[(sh_key_bits(a[i].key) >> sh) & RADIX_MASK]++;
        if (cnt[(sh_key_bits(a[0].key) >> sh) & RADIX_MASK] == m)
            continue; /* one digit for all: this pass would move nothing */
        size_t acc = 0;
        for (size_t d = 0; d <= RADIX_MASK; d++) {
            size_t c = cnt[d];
            cnt[d] = acc;
            acc += c;
        }
        for (size_t i = 0; i < m; i++)
            b[cnt[(sh_key_bits(a[i].key) >> sh) & RADIX_MASK]++] = a[i];
        sh_ent *t = a;
        a = b;
        b = t;
    }
    if (a != r)
        memcpy(r, a, m * sizeof *r);
    return 0;
}

/* End a bulk placement: sort the runs it filled.  No memory for a sort
 * sets n->star_oom (the run dropped), as a failed push does: the
 * recomputation then hands every flow back. */
static void sh_bulk_end(net *n)
{
    n->sh_bulk = 0;
    for (size_t i = 0; i < n->n_hubs; i++) {
        star_hub *hb = &n->hubs[i];
        for (int h = 0; h < 4; h++)
            for (int j = 0; j < SH_RUNS; j++) {
                sh_run *r = &hb->run[h][j];
                sh_stale(hb, h);
                if (!r->open)
                    continue;
                r->open = 0;
                if (sh_run_sort(n, r)) {
                    r->n = 0;
                    n->star_oom = 1;
                }
            }
    }
}

/* ---- the state of one flow ----------------------------------------------------- */

/* The capped rates' sum, compensated (Neumaier): it is updated at every
 * move for the whole run, and L = (cap(B) - sum) / |U| must not drift from
 * the sum a fresh fill would make.  Only hubs with a link keep it (hub 0
 * has no level), and their C holds no infinite cap (such a flow is never
 * below a finite level). */
static void sum_add(star_hub *hb, double x)
{
    if (!isfinite(x))
        return;
    double s = hb->sum_c, t = s + x;
    hb->sum_c_err += fabs(s) >= fabs(x) ? (s - t) + x : (x - t) + s;
    hb->sum_c = t;
}

static inline star_hub *hub_of(const net *n, const flow *f)
{
    return &n->hubs[f->hub];
}

double star_rem(const net *n, const flow *f, double now)
{
    double r;
    if (f->sset == STAR_C) {
        if (!(f->c > 0))
            return f->key; /* a private link at zero: stalled */
        if (isinf(f->c))
            return 0;
        r = f->key - f->c * (now - f->t0);
    } else if (f->sset == STAR_U) {
        const star_hub *hb = hub_of(n, f);
        r = f->key - (hb->V + hb->L * (now - hb->tV));
    } else {
        return f->remaining;
    }
    return r > 0 ? r : 0;
}

double star_rate(const net *n, const flow *f)
{
    return f->sset == STAR_C ? f->c : f->sset == STAR_U ? hub_of(n, f)->L : 0;
}

/* The private cap: the flow's own cap and its links' but its hub's. */
static double star_cap(const net *n, const flow *f)
{
    double c = f->cap;
    for (int k = 0; k < f->np; k++)
        if (!n->links[f->path[k]].hub && n->links[f->path[k]].cap < c)
            c = n->links[f->path[k]].cap;
    return c;
}

/* Does f keep the structure: at most one hub, and no other finite link it
 * crosses carries another active flow?  Returns its hub (0: none), or -1.
 * (A shared infinite link is never a bottleneck; star_cap_change leaves if
 * it gets a capacity.) */
static int star_fits(const net *n, const flow *f)
{
    int hub = 0;
    for (int k = 0; k < f->np; k++) {
        const link *l = &n->links[f->path[k]];
        if (l->hub) {
            if (hub)
                return -1;
            hub = (int)l->hub;
        } else if (l->n_active > 1 && isfinite(l->cap)) {
            return -1;
        }
    }
    return hub;
}

static void star_own(net *n, flow *f)
{
    for (int k = 0; k < f->np; k++) {
        link *l = &n->links[f->path[k]];
        if (!l->hub && l->n_active == 1)
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

/* The highest level of hub hb since epoch ep (0 when none was in effect):
 * the first entry of the stack at or after ep.  Searched from *cur (the
 * last answer; NULL: none) by doubling steps, then halving: flows leave U
 * mostly in the order they joined (one size through one NIC: first in,
 * first out), so the answer is near the last one, and a stack of
 * thousands of levels costs a few reads, not a binary search's misses. */
static double star_level_since(const star_hub *hb, uint64_t ep, size_t *cur)
{
    const struct star_epoch *s = hb->lstk;
    size_t n = hb->n_lstk, c = cur && *cur < n ? *cur : n, lo, hi, step = 1;
    if (c < n && s[c].ep < ep) { /* after c: every entry before lo is earlier than ep */
        lo = c + 1;
        while (lo + step <= n && s[lo + step - 1].ep < ep) {
            lo += step;
            step *= 2;
        }
        hi = lo + step - 1 < n ? lo + step - 1 : n;
    } else { /* at or before c: the answer is at most hi */
        hi = c;
        while (hi >= step && s[hi - step].ep >= ep) {
            hi -= step;
            step *= 2;
        }
        lo = hi >= step ? hi - step + 1 : 0;
    }
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s[mid].ep < ep)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (cur)
        *cur = lo;
    return lo < n ? s[lo].level : 0;
}

/* A flow leaves U: its private links saw the highest L of its stay. */
static void star_fold_peak(net *n, flow *f)
{
    star_hub *hb = hub_of(n, f);
    double L = star_level_since(hb, f->u_epoch, &hb->lcur);
    if (L > 0)
        for (int k = 0; k < f->np; k++)
            if (!n->links[f->path[k]].hub)
                link_peak_see(&n->links[f->path[k]], L);
}

static void star_to_c(net *n, flow *f, double now, double rem)
{
    star_hub *hb = hub_of(n, f);
    f->sset = STAR_C;
    *SST(n, f) = ++n->sstamp;
    hb->n_c++;
    f->key = rem;
    f->t0 = now;
    f->fin = rem <= 0 || isinf(f->c) ? now : f->c > 0 ? now + rem / f->c : INFINITY;
    sh_push(n, hb, H_CFIN, f, f->fin);
    if (hb->link >= 0) { /* without a shared link nothing ever leaves C for U */
        sh_push(n, hb, H_CCAP, f, -f->c);
        sum_add(hb, f->c);
    }
    for (int k = 0; k < f->np; k++)
        if (!n->links[f->path[k]].hub)
            link_peak_see(&n->links[f->path[k]], f->c);
}

static void star_to_u(net *n, flow *f, double rem)
{
    star_hub *hb = hub_of(n, f);
    f->sset = STAR_U;
    *SST(n, f) = ++n->sstamp;
    hb->n_u++;
    f->key = hb->V + rem;
    f->u_epoch = hb->epoch + 1; /* the level the coming recomputation sets */
    sh_push(n, hb, H_UKEY, f, f->key);
    sh_push(n, hb, H_UCAP, f, f->c);
}

/* Take f out of its set; f->remaining gets its remaining bytes now. */
static void star_detach(net *n, flow *f, double now)
{
    star_hub *hb = hub_of(n, f);
    f->remaining = star_rem(n, f, now);
    if (f->sset == STAR_C) { /* its entries die: its set's heaps */
        sh_stale(hb, H_CFIN);
        sh_stale(hb, H_CCAP);
    } else if (f->sset == STAR_U) {
        sh_stale(hb, H_UKEY);
        sh_stale(hb, H_UCAP);
    }
    if (f->sset == STAR_C) {
        if (hb->link >= 0)
            sum_add(hb, -f->c);
        if (!--hb->n_c) { /* no rounding carried past an empty set, no dead entries kept */
            hb->sum_c = hb->sum_c_err = 0;
            sh_clear(hb, H_CFIN);
            sh_clear(hb, H_CCAP);
        }
    } else if (f->sset == STAR_U) {
        star_fold_peak(n, f);
        if (!--hb->n_u) {
            sh_clear(hb, H_UKEY);
            sh_clear(hb, H_UCAP);
        }
    }
    *SST(n, f) = 0;
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

/* Empty every hub and unmark their links (buffers are kept for the next
 * time). */
static void star_reset(net *n)
{
    for (size_t i = 0; i < n->n_hubs; i++) {
        star_hub *hb = &n->hubs[i];
        if (hb->link >= 0)
            n->links[hb->link].hub = 0;
        for (int h = 0; h < 4; h++)
            sh_clear(hb, h);
        hb->n_c = hb->n_u = hb->n_lstk = 0;
        hb->sum_c = hb->sum_c_err = hb->V = hb->L = 0;
        hb->tV = sim_now(n->e);
    }
    n->n_hubs = 0;
    n->star_oom = 0;
    n->sh_bulk = 0;
    n->n_pend = 0;
    n->done_t = NAN;
}

/* Hub number n->n_hubs, for link li (-1: the flows on no shared link). */
static int hub_add(net *n, int li)
{
    if (grow((void **)&n->hubs, &n->cap_hubs, n->n_hubs + 1, sizeof(star_hub)))
        return -1;
    if (n->n_hubs >= n->hubs_made) { /* a new slot: no buffers yet */
        memset(&n->hubs[n->n_hubs], 0, sizeof(star_hub));
        n->hubs_made = n->n_hubs + 1;
    }
    star_hub *hb = &n->hubs[n->n_hubs];
    hb->link = li;
    hb->tV = sim_now(n->e);
    for (int h = 0; h < 4; h++)
        sh_stale(hb, h);
    if (li >= 0)
        n->links[li].hub = (uint32_t)n->n_hubs;
    n->n_hubs++;
    return 0;
}

/* Hand every flow back to progressive filling: remaining bytes and rates
 * as of now; a full reshare follows at this instant. */
void star_leave(net *n)
{
    double now = sim_now(n->e);
    for (size_t k = 0; k < n->n_active; k++) {
        flow *f = F(n, n->active[k]);
        f->rate = star_rate(n, f);
        f->remaining = star_rem(n, f, now);
        if (f->sset == STAR_U)
            star_fold_peak(n, f);
        f->sset = STAR_OFF;
        *SST(n, f) = 0;
        f->tl = now;
        f->finish_t = flow_finish(f, now); /* kept by a fill that gives it the same rate */
        star_disown(n, f);
    }
    star_reset(n);
    n->star = 0;
    if (n->done_ev)
        sim_cancel(n->e, n->done_ev);
    n->done_ev = 0;
    mark_dirty(n);
}

/* The sharing strategies the star path is exact for: its water-filling
 * gives every uncapped flow of a hub one level, which is max-min's; a
 * weighted strategy (NET_SHARE_RTT) stays on progressive filling. */
static int star_exact_for(net_sharing s)
{
    return s == NET_SHARE_MAXMIN;
}

/* At a full reshare: do at least n->star_min active flows form stars
 * (every finite link crossed by two or more of them is a hub, and none
 * crosses two hubs)?  Then take them (all STAR_NEW, up to date) and return
 * 1; star_reshare places them. */
int star_try_enter(net *n)
{
    if (n->star_off || n->n_active < n->star_min || !n->n_active || !star_exact_for(n->sharing))
        return 0;
    if (hub_add(n, -1))
        return 0;
    for (size_t k = 0; k < n->n_active; k++) {
        const flow *f = F(n, n->active[k]);
        int hubs = 0;
        for (int j = 0; j < f->np; j++) {
            link *l = &n->links[f->path[j]];
            if (l->n_active < 2 || !isfinite(l->cap))
                continue;
            if (++hubs > 1 || (!l->hub && (n->n_hubs > STAR_MAX_HUBS || hub_add(n, f->path[j])))) {
                star_reset(n);
                return 0;
            }
        }
    }
    if (grow((void **)&n->pend, &n->cap_pend, n->n_active, sizeof(uint32_t))) {
        star_reset(n);
        return 0;
    }
    double now = sim_now(n->e);
    n->star = 1;
    for (size_t k = 0; k < n->n_active; k++) {
        flow *f = F(n, n->active[k]);
        flow_catch_up(f, now); /* star_reshare places it with its bytes as of now */
        star_own(n, f);
        f->sset = STAR_NEW;
        n->pend[n->n_pend++] = f->index;
    }
    n->full = 1;
    return 1;
}

/* ---- events -------------------------------------------------------------------- */

/* A flow became active (activate(), after its links counted it). */
void star_activate(net *n, flow *f)
{
    star_own(n, f);
    if (star_pend(n, f))
        star_leave(n);
}

/* Link li's capacity is about to become new_cap (before the change: a
 * flow leaving U folds its peak with the capacity it ran under). */
void star_cap_change(net *n, int li, double new_cap)
{
    if (!n->star)
        return;
    link *l = &n->links[li];
    if (l->hub) {
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
        star_leave(n); /* a link shared by flows other than through a hub */
}

/* Cut flow f now; returns its remaining bytes.  It leaves n->active. */
double star_cancel(net *n, flow *f)
{
    star_detach(n, f, sim_now(n->e));
    f->sset = STAR_OFF;
    star_disown(n, f);
    n->full = 1;
    return f->remaining;
}

static double star_level(const net *n, const star_hub *hb)
{
    double cap_b = hb->link >= 0 ? n->links[hb->link].cap : INFINITY;
    if (isinf(cap_b))
        return INFINITY;
    double room = cap_b - (hb->sum_c + hb->sum_c_err);
    if (!hb->n_u)
        return room >= 0 ? INFINITY : -INFINITY;
    return room > 0 ? room / (double)hb->n_u : 0;
}

/* When a flow in U ends at the current level (a flow with nothing left
 * ends now even if the level is 0, as in the general path). */
static double u_fin(const star_hub *hb, const flow *f)
{
    double left = f->key - hb->V;
    return left <= 0 ? hb->tV : hb->L > 0 ? hb->tV + left / hb->L : INFINITY;
}

/* Flows ending one at a time off a sorted run (10^5 uploads through one
 * NIC, each the oldest of its hub): the ones AHEAD_REC completions ahead
 * get their records and stamps fetched, and once a record is in (an event
 * later), the flow AHEAD_LINK ahead its links and what its callback
 * touches.  Each is a cache miss otherwise: flows end in the order they
 * started, long ago.  A hint only: nothing is read but records that
 * stay allocated (flows live in fixed chunks), and a callback's hint only
 * for a flow still alive. */
#define AHEAD_REC  4
#define AHEAD_LINK 1

static void star_fetch_ahead(const net *n, star_hub *hb, int h)
{
    if (hb->top_run[h] < 0)
        return;
    const sh_run *run = &hb->run[h][hb->top_run[h]];
    size_t at = run->at;
    if (hb->ahead_run[h] == hb->top_run[h] && hb->ahead_at[h] == at)
        return; /* fetched at the last recomputation: the same flows */
    hb->ahead_run[h] = hb->top_run[h];
    hb->ahead_at[h] = at;
    if (at + AHEAD_REC < run->n) {
        uint32_t i = run->e[at + AHEAD_REC].idx;
        const char *f = (const char *)F(n, i);
        __builtin_prefetch(f);
        __builtin_prefetch(f + 64);
        __builtin_prefetch(f + 128);
        __builtin_prefetch(&n->fst[i]);
    }
    if (at + AHEAD_LINK < run->n) {
        const sh_ent *e = &run->e[at + AHEAD_LINK];
        const flow *g = F(n, e->idx);
        for (int k = 0; k < g->np; k++) {
            const char *l = (const char *)&n->links[g->path[k]];
            __builtin_prefetch(l);
            __builtin_prefetch(l + 63);
        }
        if (n->n_dpf && sh_alive(n, e))
            dpf_hint(n, g);
    }
}

static void star_schedule(net *n, double now)
{
    double first = INFINITY;
    const flow *next = NULL;
    for (size_t i = 0; i < n->n_hubs; i++) {
        star_hub *hb = &n->hubs[i];
        flow *f = sh_top(n, hb, H_CFIN);
        if (f && f->fin < first) {
            first = f->fin;
            next = f;
        }
        f = sh_top(n, hb, H_UKEY);
        if (f && u_fin(hb, f) < first) {
            first = u_fin(hb, f);
            next = f;
        }
        star_fetch_ahead(n, hb, H_CFIN);
        star_fetch_ahead(n, hb, H_UKEY);
    }
    if (first < now)
        first = now;
    if (n->done_ev && first == n->done_t)
        return; /* already pending: no cancelled event left in the engine's queue */
    if (n->done_ev)
        sim_cancel(n->e, n->done_ev);
    n->done_ev = isfinite(first) ? sim_at(n->e, first, on_done, n) : 0;
    n->done_t = first;
    /* flows ending one at a time (a wave of uploads): what the next one's
     * callback touches is fetched now, events before it ends */
    if (next && n->n_dpf)
        dpf_hint(n, next);
}

/* Water-filling in hub hb from its current split, at `now`: the capped
 * flows whose cap is not below the level join U (largest first; each
 * raises L, but to at most its own cap), then the uncapped ones whose cap
 * is below it join C (smallest first; each raises L, so no capped flow has
 * to go back). */
static void hub_fill(net *n, star_hub *hb, double now)
{
    double L = star_level(n, hb);
    /* (H_CCAP's keys are -c, H_UCAP's c: sh_min_key bounds every live c) */
    if (L < INFINITY && -sh_min_key(hb, H_CCAP) >= L)
        for (flow *f; (f = sh_top(n, hb, H_CCAP)) && L < INFINITY && f->c >= L; L = star_level(n, hb)) {
            star_detach(n, f, now);
            star_to_u(n, f, f->remaining);
        }
    if (L == INFINITY || sh_min_key(hb, H_UCAP) < L)
        for (flow *f; (f = sh_top(n, hb, H_UCAP)) && (f->c < L || L == INFINITY); L = star_level(n, hb)) {
            star_detach(n, f, now);
            star_to_c(n, f, now, f->remaining);
        }
    hb->L = hb->n_u ? L : 0;
    if (hb->link >= 0)
        link_peak_see(&n->links[hb->link], hb->sum_c + hb->sum_c_err + (double)hb->n_u * hb->L);
}

/* Remember hub hb's new level for the peaks of its flows in U (or forget
 * them all when U is empty, and start its virtual clock again, so keys
 * stay small). */
static int hub_epoch(star_hub *hb)
{
    if (!hb->n_u) {
        hb->V = 0;
        hb->n_lstk = 0;
        return 0;
    }
    if (grow((void **)&hb->lstk, &hb->cap_lstk, hb->n_lstk + 1, sizeof *hb->lstk))
        return -1;
    hb->epoch++;
    while (hb->n_lstk && hb->lstk[hb->n_lstk - 1].level <= hb->L)
        hb->n_lstk--;
    hb->lstk[hb->n_lstk++] = (struct star_epoch){hb->epoch, hb->L};
    return 0;
}

/* The recomputation of the stars: returns 1, or 0 when the structure broke
 * (every flow is then handed back, and the caller runs the general fill).
 * Every hub is recomputed (they are few); one with nothing changed moves
 * no flow. */
int star_reshare(net *n)
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
    for (size_t i = 0; i < n->n_hubs; i++) {
        star_hub *hb = &n->hubs[i];
        if (hb->n_u)
            hb->V += hb->L * (now - hb->tV);
        hb->tV = now;
    }
    n->sh_bulk = n->n_pend >= n->star_bulk;
    for (size_t i = 0; i < n->n_pend; i++) {
        flow *f = F(n, n->pend[i]);
        if (f->state != FLOW_ACTIVE || f->sset != STAR_NEW)
            continue; /* cut, or listed twice */
        int hub = star_fits(n, f);
        if (hub < 0) {
            star_leave(n); /* (star_reset ends the bulk) */
            return 0;
        }
        f->hub = (uint32_t)hub;
        f->c = star_cap(n, f);
        if (hub)
            star_to_u(n, f, f->remaining);
        else
            star_to_c(n, f, now, f->remaining); /* no level: every flow at its cap */
    }
    n->n_pend = 0;
    if (n->sh_bulk)
        sh_bulk_end(n);
    int oom = 0;
    for (size_t i = 0; i < n->n_hubs; i++) {
        hub_fill(n, &n->hubs[i], now);
        oom |= hub_epoch(&n->hubs[i]);
    }
    if (oom || n->star_oom) {
        star_leave(n);
        return 0;
    }
    star_schedule(n, now);
    return 1;
}

/* Many flows ending at one instant come off a sorted run: fetch the flow
 * records DONE_FLOW entries ahead (sh_top reads them) and, once a record
 * is in, the links it holds DONE_LINK ahead (star_disown and
 * flow_links_end write them): a cache miss each otherwise. */
#define DONE_FLOW 16
#define DONE_LINK 8

static void star_done_prefetch(const net *n, const star_hub *hb, int h)
{
    if (hb->top_run[h] < 0)
        return;
    const sh_run *run = &hb->run[h][hb->top_run[h]];
    const sh_ent *r = run->e;
    size_t at = run->at, nr = run->n;
    if (at + DONE_FLOW < nr) {
        const char *f = (const char *)F(n, r[at + DONE_FLOW].idx);
        __builtin_prefetch(f);
        __builtin_prefetch(f + 64);
        __builtin_prefetch(f + 128);
    }
    if (at + DONE_LINK < nr) {
        const flow *g = F(n, r[at + DONE_LINK].idx);
        for (int k = 0; k < g->np; k++) { /* a link's first 64 bytes (its hot fields): one line or two */
            const char *l = (const char *)&n->links[g->path[k]];
            __builtin_prefetch(l);
            __builtin_prefetch(l + 63);
        }
    }
}

/* The completion event: end the flows at the top of every set that end
 * now (or have less than 1e-9 of their size left), report them in start
 * order, recompute. */
void star_on_done(net *n)
{
    double now = sim_now(n->e);
    size_t nf = 0;
    if (grow((void **)&n->finished, &n->cap_finished, n->n_active, sizeof(fin_ent))) {
        stall_all(n); /* as on_done: room for every flow to end, or none ends */
        return;
    }
    for (size_t i = 0; i < n->n_hubs; i++) {
        star_hub *hb = &n->hubs[i];
        for (int set = 0; set < 2; set++) {
            int h = set ? H_UKEY : H_CFIN;
            for (flow *f; (f = sh_top(n, hb, h));) {
                star_done_prefetch(n, hb, h);
                double t = set ? u_fin(hb, f) : f->fin;
                if (!(t <= now || star_rem(n, f, now) <= 1e-9 * f->bytes))
                    break;
                star_detach(n, f, now);
                f->sset = STAR_OFF;
                star_disown(n, f);
                active_remove(n, f);
                flow_links_end(n, f, f->bytes);
                n->finished[nf++] = (fin_ent){f->seq, f};
            }
        }
    }
    n->full = 1;
    report_done(n, nf);
    if (n->star && !n->n_active) {
        /* every flow is done: the next wave may share other links */
        star_reset(n);
        n->star = 0;
    }
    net_reshare_now(n);
}

void star_free(net *n)
{
    for (size_t i = 0; i < n->hubs_made; i++) {
        for (int h = 0; h < 4; h++) {
            dp_free(n->hubs[i].sh[h]);
            for (int j = 0; j < SH_RUNS; j++)
                dp_free(n->hubs[i].run[h][j].e);
        }
        dp_free(n->hubs[i].lstk);
    }
    dp_free(n->hubs);
    dp_free(n->pend);
    dp_free(n->run_tmp);
}

/* A link's peak share, with the level its private flow in U runs at now. */
double star_peak_util(const net *n, int li)
{
    const link *l = &n->links[li];
    double p = l->peak;
    if (n->star && l->owner && !l->hub) {
        const flow *f = F(n, l->owner - 1);
        if (f->sset == STAR_U && l->cap > 0 && isfinite(l->cap)) {
            double L = star_level_since(hub_of(n, f), f->u_epoch, NULL);
            double u = (L < l->cap ? L : l->cap) / l->cap;
            if (u > p)
                p = u;
        }
    }
    return p;
}
