/* dcache.c: a site's sample cache as runs of ids (dcache.h). */
#include "dcache.h"

#include "dp_common.h"
#include "scenario.h"

#include <stdlib.h>
#include <string.h>

typedef struct run {
    int64_t a, n; /* ids [a, a + n) */
    double w;     /* planned's pattern: a miss's cost per id */
} run;

/* A list of runs: for lru in recency order (oldest first; inside a run the
 * lower ids were read first), for planned sorted by id and disjoint. */
typedef struct runs {
    run *r;
    size_t n, cap;
} runs;

struct dcache {
    int64_t cap; /* samples */
    int policy;
    int64_t held;
    runs cur;     /* lru: the ids held; planned: the pinned ids read so far */
    runs pattern; /* planned: the epoch's accesses, then the pinned ids */
    int placed;
};

static int push_w(runs *l, int64_t a, int64_t n, double w);
static int push(runs *l, int64_t a, int64_t n)
{
    return push_w(l, a, n, 1);
}

static int push_w(runs *l, int64_t a, int64_t n, double w)
{
    if (n <= 0)
        return 0;
    if (l->n == l->cap) {
        size_t c = l->cap ? 2 * l->cap : 16;
        run *nr = dp_realloc(l->r, c * sizeof *nr);
        if (!nr)
            return DP_ENOMEM;
        l->r = nr;
        l->cap = c;
    }
    l->r[l->n++] = (run){a, n, w};
    return 0;
}

dcache *dcache_new(int64_t capacity, int policy)
{
    dcache *c = dp_calloc(1, sizeof *c);
    if (c) {
        c->cap = capacity > 0 ? capacity : 0;
        c->policy = policy;
    }
    return c;
}

void dcache_free(dcache *c)
{
    if (!c)
        return;
    dp_free(c->cur.r);
    dp_free(c->pattern.r);
    dp_free(c);
}

int64_t dcache_held(const dcache *c)
{
    return c ? c->held : 0;
}

int dcache_pattern_add(dcache *c, int64_t first, int64_t n, double cost)
{
    if (c->policy != SCN_CACHE_PLANNED || c->placed || !c->cap)
        return 0;
    return push_w(&c->pattern, first, n, cost);
}

/* A boundary of the sweep over the pattern: +cost where an access starts,
 * -cost where it ends. */
typedef struct edge {
    int64_t x;
    double d;
} edge;

static int edge_cmp(const void *a, const void *b) /* by id, then ends before starts, then by cost */
{
    const edge *p = a, *q = b;
    if (p->x != q->x)
        return p->x < q->x ? -1 : 1;
    return p->d < q->d ? -1 : p->d > q->d ? 1 : 0;
}

typedef struct seg {
    int64_t a, n;
    double cost; /* of one id's reads in an epoch */
} seg;

static int seg_cmp(const void *a, const void *b)
{
    const seg *p = a, *q = b;
    if (p->cost != q->cost)
        return p->cost > q->cost ? -1 : 1;
    return p->a < q->a ? -1 : p->a > q->a ? 1 : 0;
}

static int run_cmp(const void *a, const void *b)
{
    const run *p = a, *q = b;
    return p->a < q->a ? -1 : p->a > q->a ? 1 : 0;
}

int dcache_pattern_done(dcache *c)
{
    if (c->policy != SCN_CACHE_PLANNED || c->placed || !c->cap)
        return 0;
    c->placed = 1;
    size_t m = c->pattern.n;
    edge *e = dp_calloc(2 * m + 1, sizeof *e);
    seg *s = dp_calloc(2 * m + 1, sizeof *s);
    if (!e || !s) {
        dp_free(e);
        dp_free(s);
        return DP_ENOMEM;
    }
    for (size_t i = 0; i < m; i++) {
        e[2 * i] = (edge){c->pattern.r[i].a, c->pattern.r[i].w};
        e[2 * i + 1] = (edge){c->pattern.r[i].a + c->pattern.r[i].n, -c->pattern.r[i].w};
    }
    qsort(e, 2 * m, sizeof *e, edge_cmp);
    /* segments between boundaries with what the accesses covering them
     * cost per id (a running sum; `open` counts the accesses, so a segment
     * no access covers is never taken for one that rounding left at 1e-17) */
    size_t ns = 0, open = 0;
    double depth = 0;
    for (size_t i = 0; i < 2 * m; i++) {
        if (i && open > 0 && e[i].x > e[i - 1].x)
            s[ns++] = (seg){e[i - 1].x, e[i].x - e[i - 1].x, depth};
        depth += e[i].d;
        open += e[i].d > 0 ? 1 : (size_t)-1;
        if (!open)
            depth = 0;
    }
    qsort(s, ns, sizeof *s, seg_cmp); /* dearest first, then the lowest ids */
    c->pattern.n = 0;
    int64_t room = c->cap;
    for (size_t i = 0; i < ns && room > 0; i++) {
        int64_t n = s[i].n < room ? s[i].n : room;
        if (push(&c->pattern, s[i].a, n)) {
            dp_free(e);
            dp_free(s);
            return DP_ENOMEM;
        }
        room -= n;
    }
    qsort(c->pattern.r, c->pattern.n, sizeof *c->pattern.r, run_cmp);
    dp_free(e);
    dp_free(s);
    return 0;
}

/* Ids of [a, b) in the sorted disjoint list l. */
static int64_t overlap(const runs *l, int64_t a, int64_t b)
{
    int64_t h = 0;
    for (size_t i = 0; i < l->n; i++) {
        int64_t lo = l->r[i].a > a ? l->r[i].a : a,
                hi = l->r[i].a + l->r[i].n < b ? l->r[i].a + l->r[i].n : b;
        if (hi > lo)
            h += hi - lo;
    }
    return h;
}

/* Add [a, b) to the sorted disjoint list l, merging. */
static int add_sorted(runs *l, int64_t a, int64_t b)
{
    if (push(l, a, b - a))
        return DP_ENOMEM;
    qsort(l->r, l->n, sizeof *l->r, run_cmp);
    size_t k = 0;
    for (size_t i = 0; i < l->n; i++) {
        if (k && l->r[k - 1].a + l->r[k - 1].n >= l->r[i].a) {
            int64_t end = l->r[i].a + l->r[i].n;
            if (end > l->r[k - 1].a + l->r[k - 1].n)
                l->r[k - 1].n = end - l->r[k - 1].a;
        } else {
            l->r[k++] = l->r[i];
        }
    }
    l->n = k;
    return 0;
}

static int64_t access_planned(dcache *c, int64_t a, int64_t b)
{
    int64_t hits = 0;
    for (size_t i = 0; i < c->pattern.n; i++) { /* the pinned runs this access meets */
        int64_t lo = c->pattern.r[i].a > a ? c->pattern.r[i].a : a;
        int64_t hi = c->pattern.r[i].a + c->pattern.r[i].n < b ? c->pattern.r[i].a + c->pattern.r[i].n : b;
        if (hi <= lo)
            continue;
        int64_t h = overlap(&c->cur, lo, hi);
        hits += h;
        if (h < hi - lo) {
            if (add_sorted(&c->cur, lo, hi))
                return DP_ENOMEM;
            c->held += hi - lo - h;
        }
    }
    return hits;
}

/* Ids [a, b) that are either all held or all not (access_lru cuts an
 * access so): read as a set. */
static int64_t lru_chunk(dcache *c, int64_t a, int64_t b)
{
    runs *l = &c->cur;
    int64_t hits = 0;
    size_t k = 0;
    /* take [a, b) out of every run, keeping the rest in its place; a run
     * cut in two keeps both pieces there, the lower (older) first */
    runs keep = {0};
    for (size_t i = 0; i < l->n; i++) {
        int64_t s = l->r[i].a, e = s + l->r[i].n;
        int64_t lo = s > a ? s : a, hi = e < b ? e : b;
        if (hi <= lo) {
            if (push(&keep, s, e - s))
                goto oom;
            continue;
        }
        hits += hi - lo;
        if (push(&keep, s, lo - s) || push(&keep, hi, e - hi))
            goto oom;
    }
    /* the ids read are the most recent now, in order */
    if (keep.n && keep.r[keep.n - 1].a + keep.r[keep.n - 1].n == a)
        keep.r[keep.n - 1].n += b - a;
    else if (push(&keep, a, b - a))
        goto oom;
    c->held += (b - a) - hits;
    /* the least recent leave */
    while (c->held > c->cap && k < keep.n) {
        int64_t drop = keep.r[k].n < c->held - c->cap ? keep.r[k].n : c->held - c->cap;
        keep.r[k].a += drop;
        keep.r[k].n -= drop;
        c->held -= drop;
        if (!keep.r[k].n)
            k++;
    }
    memmove(keep.r, keep.r + k, (keep.n - k) * sizeof *keep.r);
    keep.n -= k;
    dp_free(l->r);
    *l = keep;
    return hits;
oom:
    dp_free(keep.r);
    return DP_ENOMEM;
}

/* An access reads its ids in order: cut it where the held runs begin or
 * end, as they are when each piece is read (a miss may push out an id read
 * later in the same access), and read each piece. */
static int64_t access_lru(dcache *c, int64_t a, int64_t b)
{
    int64_t hits = 0;
    for (int64_t x = a; x < b;) {
        int64_t y = b;
        for (size_t i = 0; i < c->cur.n; i++) {
            int64_t s = c->cur.r[i].a, e = s + c->cur.r[i].n;
            if (s <= x && x < e) { /* held up to the run's end */
                y = e < b ? e : b;
                break;
            }
            if (s > x && s < y)
                y = s;
        }
        int64_t h = lru_chunk(c, x, y);
        if (h < 0)
            return h;
        hits += h;
        x = y;
    }
    return hits;
}

int64_t dcache_access(dcache *c, int64_t first, int64_t n)
{
    if (!c || !c->cap || n <= 0)
        return 0;
    return c->policy == SCN_CACHE_PLANNED ? access_planned(c, first, first + n)
                                          : access_lru(c, first, first + n);
}
