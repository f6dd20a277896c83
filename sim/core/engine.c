/* engine.c: the event queue: a small 4-ary heap fed by time buckets.
 *
 * Entries are 16 bytes, (time, key) with key = seq << SLOT_BITS | slot; seq
 * increases with every schedule, so (time, key) order is total and
 * deterministic (same time: scheduling order).
 *
 * Layout, after the ladder queue (Tang, Goh, Thng 2005), with one rung:
 *  - heap: the nearest events, a 4-ary min-heap small enough to stay in
 *    cache (16-byte entries: a node's four children share a cache line);
 *  - buckets [cur, K): unsorted arrays, bucket i holding the events with
 *    floor((t - start) / width) == i;
 *  - top: an unsorted array of everything later than the buckets.
 * An event goes to the heap if its bucket index is below cur, to its bucket
 * if below K, else to top: the index is monotone in t, so every heap event
 * precedes every bucket event, which precedes every top event.  When the
 * heap empties, bucket cur is heapified into it (cur++); when the buckets
 * are used up, a rebuild takes the earliest ~1/4 of top (a quantile of a
 * fixed sample) into K new buckets and leaves the rest.  Inserting into top
 * is an append and rebuilds stream through memory, so with 10^6 pending
 * events most operations touch cached memory, where a plain heap pays ~10
 * cache misses per pop (tests/bench_engine.c measures both sizes).  Equal
 * times all land in one bucket and, at worst, the structure degrades to the
 * heap alone: never wrong, only slower.
 *
 * A fired event is not popped at once: if its handler schedules an event
 * for the heap (the usual case: the next batch, the next round), that event
 * replaces the root with one sift down instead of a pop plus a push.
 *
 * Slots: each entry names a slot holding the handler, ctx and generation.
 * Ids are (generation << 32 | slot): a slot is reused after its event fires
 * or is reclaimed, and the generation makes stale ids harmless.  Cancelling
 * marks the slot (handler = NULL); the entry is dropped when it surfaces,
 * or earlier by a compaction once cancelled entries outnumber live ones:
 * a caller that keeps rescheduling a far-future event (the net's next
 * completion, at every reshare) would otherwise fill the queue with dead
 * entries that never surface.  Compaction costs O(pending) and runs after
 * at least as many cancellations, so cancelling stays O(1) amortised.
 * `live` counts scheduled, not cancelled events; `dead` cancelled entries
 * still queued.
 *
 * A failed sim_at (queue full, out of memory, NaN time) is sticky:
 * sim_error reports it and sim_step runs nothing more, so a handler that
 * cannot reschedule ends the run instead of silently dropping its future.
 *
 * Limits: 2^24 - 1 pending events and 2^40 scheduled events per engine
 * (sim_at returns 0 past them).
 */
#include "engine.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SLOT_BITS 24
#define MAX_SLOTS ((1u << SLOT_BITS) - 1)
#define MAX_SEQ   (((uint64_t)1 << (64 - SLOT_BITS)) - 1)

typedef struct hent {
    double t;
    uint64_t key;
} hent;

typedef struct slot {
    sim_handler h; /* NULL: free or cancelled */
    void *ctx;
    uint32_t gen;
    uint32_t next_free; /* free-list link, valid while free */
} slot;

typedef struct bucket {
    hent *v;
    uint32_t n, cap;
} bucket;

struct sim_engine {
    void *block; /* allocation holding the heap, aligned */
    hent *heap;  /* heap[1..4] start a cache line */
    size_t n, cap;
    bucket *bk; /* buckets [0, nbk); in use: [cur, K) */
    size_t nbk, K, cur;
    double start, width; /* bucket i: floor((t - start) / width) == i */
    hent *top;
    size_t n_top, cap_top;
    slot *slots;
    size_t n_slots, cap_slots;
    uint32_t free_head; /* MAX_SLOTS+1 = empty */
    uint64_t seq;
    double now;
    size_t live, dead;
    uint64_t ran;
    int err; /* a sim_at failed: DP_ENOMEM or DP_EINPUT */
    int stop;
    int top_spent; /* heap[0] has fired; the next sim_at replaces it */
};

#define NO_SLOT (MAX_SLOTS + 1)
/* Below this many events in top a rebuild takes them all into the heap:
 * small heaps stay in cache and beat the buckets (tests/bench_engine.c). */
#define LADDER_MIN 8192

static inline int before(const hent *a, const hent *b)
{
    return a->t < b->t || (a->t == b->t && a->key < b->key);
}

sim_engine *sim_engine_new(dp_err *err)
{
    sim_engine *e = dp_calloc(1, sizeof *e);
    if (!e) {
        dp_err_set(err, DP_ENOMEM, "engine: out of memory");
        return NULL;
    }
    e->free_head = NO_SLOT;
    return e;
}

void sim_engine_free(sim_engine *e)
{
    if (!e)
        return;
    dp_free(e->block);
    for (size_t i = 0; i < e->nbk; i++)
        dp_free(e->bk[i].v);
    dp_free(e->bk);
    dp_free(e->top);
    dp_free(e->slots);
    dp_free(e);
}

static int heap_grow(sim_engine *e)
{
    size_t nc = e->cap ? e->cap * 2 : 256;
    /* 64 bytes of slack to align, plus 3 entries so heap[1] is aligned */
    void *blk = dp_malloc(nc * sizeof(hent) + 64 + 3 * sizeof(hent));
    if (!blk)
        return -1;
    uintptr_t p = ((uintptr_t)blk + 63) & ~(uintptr_t)63;
    hent *h = (hent *)(p + 3 * sizeof(hent)); /* &h[1] = p + 64 */
    if (e->n)
        memcpy(h, e->heap, e->n * sizeof(hent));
    dp_free(e->block);
    e->block = blk;
    e->heap = h;
    e->cap = nc;
    return 0;
}

static void sift_up(hent *h, size_t i, hent x)
{
    while (i > 0) {
        size_t p = (i - 1) >> 2;
        if (!before(&x, &h[p]))
            break;
        h[i] = h[p];
        i = p;
    }
    h[i] = x;
}

static void sift_down(hent *h, size_t n, hent x)
{
    size_t i = 0;
    for (;;) {
        size_t c = 4 * i + 1;
        if (c + 3 < n) { /* all four children: the common case, no bounds checks */
            size_t b = c;
            if (before(&h[c + 1], &h[b]))
                b = c + 1;
            if (before(&h[c + 2], &h[b]))
                b = c + 2;
            if (before(&h[c + 3], &h[b]))
                b = c + 3;
            if (!before(&h[b], &x))
                break;
            h[i] = h[b];
            i = b;
            continue;
        }
        if (c >= n)
            break;
        size_t b = c;
        for (size_t k = c + 1; k < n; k++)
            if (before(&h[k], &h[b]))
                b = k;
        if (!before(&h[b], &x))
            break;
        h[i] = h[b];
        i = b;
    }
    h[i] = x;
}

static uint32_t slot_get(sim_engine *e)
{
    if (e->free_head != NO_SLOT) {
        uint32_t s = e->free_head;
        e->free_head = e->slots[s].next_free;
        return s;
    }
    if (e->n_slots == e->cap_slots) {
        size_t nc = e->cap_slots ? e->cap_slots * 2 : 256;
        if (nc > MAX_SLOTS)
            nc = MAX_SLOTS;
        if (nc <= e->n_slots)
            return NO_SLOT;
        slot *ns = dp_realloc(e->slots, nc * sizeof *ns);
        if (!ns)
            return NO_SLOT;
        e->slots = ns;
        e->cap_slots = nc;
    }
    e->slots[e->n_slots].gen = 1;
    return (uint32_t)e->n_slots++;
}

static inline void slot_put(sim_engine *e, uint32_t s)
{
    slot *sl = &e->slots[s];
    sl->h = NULL;
    if (++sl->gen == 0) /* keep ids non-zero after wrap-around */
        sl->gen = 1;
    sl->next_free = e->free_head;
    e->free_head = s;
}

static inline void pop_top(sim_engine *e);

/* Where an entry of time t belongs: -1 heap, K top, else its bucket. */
static inline long place(const sim_engine *e, double t)
{
    if (e->K == 0)
        return 0; /* no buckets yet: top (K == 0) */
    double q = (t - e->start) / e->width;
    if (q < (double)e->cur)
        return -1;
    if (q < (double)e->K)
        return (long)q;
    return (long)e->K;
}

static int append(hent **v, size_t *n, size_t *cap, hent x)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        hent *nv = dp_realloc(*v, nc * sizeof *nv);
        if (!nv)
            return -1;
        *v = nv;
        *cap = nc;
    }
    (*v)[(*n)++] = x;
    return 0;
}

static int bucket_append(bucket *b, hent x)
{
    size_t n = b->n, cap = b->cap;
    if (n >= UINT32_MAX - 1 || append(&b->v, &n, &cap, x))
        return -1;
    b->n = (uint32_t)n;
    b->cap = (uint32_t)(cap > UINT32_MAX ? UINT32_MAX : cap);
    return 0;
}

static uint64_t at(sim_engine *e, double t_s, sim_handler h, void *ctx);

uint64_t sim_at(sim_engine *e, double t_s, sim_handler h, void *ctx)
{
    uint64_t id = at(e, t_s, h, ctx);
    if (!id && !e->err)
        e->err = (!h || isnan(t_s)) ? DP_EINPUT : DP_ENOMEM;
    return id;
}

int sim_error(const sim_engine *e)
{
    return e->err;
}

static uint64_t at(sim_engine *e, double t_s, sim_handler h, void *ctx)
{
    if (!h || isnan(t_s) || e->seq >= MAX_SEQ)
        return 0;
    if (t_s < e->now)
        t_s = e->now;
    long where = place(e, t_s);
    if (where >= 0 && e->top_spent) { /* not for the heap: retire the spent root now */
        e->top_spent = 0;
        pop_top(e);
    }
    if (where < 0 && !e->top_spent && e->n == e->cap && heap_grow(e))
        return 0;
    uint32_t s = slot_get(e);
    if (s == NO_SLOT)
        return 0;
    hent x = {.t = t_s, .key = ((e->seq + 1) << SLOT_BITS) | s};
    if (where < 0) {
        if (e->top_spent) { /* x >= every key, as t >= now: replace the spent root */
            e->top_spent = 0;
            sift_down(e->heap, e->n, x);
        } else {
            sift_up(e->heap, e->n++, x);
        }
    } else {
        int rc = (size_t)where < e->K ? bucket_append(&e->bk[where], x)
                                      : append(&e->top, &e->n_top, &e->cap_top, x);
        if (rc) {
            slot_put(e, s);
            return 0;
        }
    }
    e->seq++;
    slot *sl = &e->slots[s];
    sl->h = h;
    sl->ctx = ctx;
    e->live++;
    return ((uint64_t)sl->gen << 32) | s;
}

uint64_t sim_after(sim_engine *e, double delay_s, sim_handler h, void *ctx)
{
    return sim_at(e, e->now + (delay_s > 0 ? delay_s : 0), h, ctx);
}

static inline uint32_t slot_of(const hent *x);
static inline void pop_top(sim_engine *e);

/* Drop the cancelled entries of one unsorted array, freeing their slots. */
static size_t sweep(sim_engine *e, hent *v, size_t n)
{
    size_t keep = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t s = slot_of(&v[i]);
        if (e->slots[s].h)
            v[keep++] = v[i];
        else
            slot_put(e, s);
    }
    return keep;
}

/* Remove every cancelled entry from the heap, the buckets and top.  The
 * spent root's slot may already be reused by a new event, so it is retired
 * first; then each remaining entry owns its slot and h == NULL means
 * cancelled.  The heap is rebuilt from the kept entries: pops follow the
 * total (time, key) order, so the run is the same as without compaction. */
static void compact(sim_engine *e)
{
    if (e->top_spent) {
        e->top_spent = 0;
        pop_top(e);
    }
    size_t n = sweep(e, e->heap, e->n);
    e->n = 0;
    for (size_t i = 0; i < n; i++)
        sift_up(e->heap, e->n++, e->heap[i]);
    for (size_t b = e->cur; b < e->K; b++)
        e->bk[b].n = (uint32_t)sweep(e, e->bk[b].v, e->bk[b].n);
    e->n_top = sweep(e, e->top, e->n_top);
    e->dead = 0;
}

int sim_cancel(sim_engine *e, uint64_t id)
{
    uint32_t s = (uint32_t)(id & 0xffffffffu), gen = (uint32_t)(id >> 32);
    if (id == 0 || s >= e->n_slots)
        return 0;
    slot *sl = &e->slots[s];
    if (sl->gen != gen || !sl->h)
        return 0;
    sl->h = NULL; /* the entry is reclaimed when it surfaces or by compact() */
    e->live--;
    e->dead++;
    if (e->dead > e->live + 1024)
        compact(e);
    return 1;
}

double sim_now(const sim_engine *e)
{
    return e->now;
}
size_t sim_pending(const sim_engine *e)
{
    return e->live;
}
uint64_t sim_events_run(const sim_engine *e)
{
    return e->ran;
}
void sim_stop(sim_engine *e)
{
    e->stop = 1;
}

static inline uint32_t slot_of(const hent *x)
{
    return (uint32_t)(x->key & MAX_SLOTS);
}

static inline void pop_top(sim_engine *e)
{
    hent last = e->heap[--e->n];
    if (e->n)
        sift_down(e->heap, e->n, last);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Take the earliest part of top into fresh buckets.  The window ends at
 * the 1/4 quantile of a fixed sample of top (deterministic), so new events
 * mostly land in top, where inserting is an append. */
static int rebuild(sim_engine *e)
{
    size_t n = e->n_top;
    double lo = e->top[0].t;
    for (size_t i = 1; i < n; i++)
        if (e->top[i].t < lo)
            lo = e->top[i].t;
    double end = INFINITY;
    if (n > LADDER_MIN) {
        double smp[64];
        for (int i = 0; i < 64; i++)
            smp[i] = e->top[(size_t)i * (n / 64)].t;
        qsort(smp, 64, sizeof *smp, cmp_double);
        end = smp[16];
    }
    size_t K = n / 128 + 1;
    if (K > 65536)
        K = 65536;
    double width = (end - lo) / (double)K;
    if (!(width > 0) || !isfinite(width)) { /* all equal, or take everything: one bucket */
        K = 1;
        width = INFINITY;
    }
    if (K > e->nbk) {
        bucket *nb = dp_realloc(e->bk, K * sizeof *nb);
        if (!nb)
            return -1;
        memset(nb + e->nbk, 0, (K - e->nbk) * sizeof *nb);
        e->bk = nb;
        e->nbk = K;
    }
    e->start = lo;
    e->width = width;
    e->K = K;
    e->cur = 0;
    size_t keep = 0;
    for (size_t i = 0; i < n; i++) {
        hent x = e->top[i];
        double q = (x.t - lo) / width;
        if (width == INFINITY)
            q = 0;
        if (q < (double)K) {
            if (bucket_append(&e->bk[(size_t)q], x))
                return -1; /* entries not yet moved stay in top: nothing is lost */
        } else {
            e->top[keep++] = x;
        }
    }
    e->n_top = keep;
    return 0;
}

/* Make the heap non-empty if anything is pending: heapify the next bucket,
 * rebuilding from top when the buckets are used up.  0 when empty. */
static int refill(sim_engine *e)
{
    while (e->n == 0) {
        if (e->cur < e->K) {
            bucket *b = &e->bk[e->cur++];
            while (e->cap < b->n)
                if (heap_grow(e))
                    return 0; /* out of memory: report empty rather than lose order */
            for (uint32_t i = 0; i < b->n; i++) {
                /* their slots are read when they fire: fetch them now,
                 * while the heap is built, instead of one miss per event */
                __builtin_prefetch(&e->slots[slot_of(&b->v[i])]);
                sift_up(e->heap, e->n++, b->v[i]);
            }
            b->n = 0;
            continue;
        }
        if (e->n_top == 0)
            return 0;
        if (rebuild(e))
            return 0;
    }
    return 1;
}

/* Drop the spent root and cancelled entries from the top so heap[0] (if
 * any) is live and unfired. */
static void drop_cancelled(sim_engine *e)
{
    if (e->top_spent) {
        e->top_spent = 0;
        pop_top(e);
    }
    while (refill(e) && !e->slots[slot_of(&e->heap[0])].h) {
        uint32_t s = slot_of(&e->heap[0]);
        pop_top(e);
        slot_put(e, s);
        e->dead--;
    }
}

double sim_next_time(sim_engine *e)
{
    drop_cancelled(e);
    return e->n ? e->heap[0].t : INFINITY;
}

int sim_step(sim_engine *e)
{
    if (e->err)
        return 0;
    drop_cancelled(e);
    if (!e->n)
        return 0;
    hent top = e->heap[0];
    e->top_spent = 1; /* popped lazily: see sim_at */
    uint32_t s = slot_of(&top);
    slot *sl = &e->slots[s];
    sim_handler h = sl->h;
    void *ctx = sl->ctx;
    uint64_t id = ((uint64_t)sl->gen << 32) | s;
    slot_put(e, s); /* before the call: the handler may schedule */
    e->live--;
    e->now = top.t;
    e->ran++;
    h(e, ctx, id);
    return 1;
}

uint64_t sim_run(sim_engine *e, double until_s)
{
    uint64_t before_n = e->ran;
    e->stop = 0;
    while (!e->stop) {
        if (sim_next_time(e) > until_s)
            break;
        if (!sim_step(e))
            break;
    }
    return e->ran - before_n;
}

/* Every entry still queued after compact() is live; all must be at now.
 * They move into the heap with time 0 (same keys, so the same order) and
 * the buckets are emptied: bucket positions were computed from the old
 * origin. */
int sim_rebase(sim_engine *e)
{
    compact(e); /* cancelled entries may sit at any time: drop them first */
    for (size_t i = 0; i < e->n; i++)
        if (e->heap[i].t != e->now)
            return DP_EINPUT;
    for (size_t b = e->cur; b < e->K; b++)
        for (uint32_t i = 0; i < e->bk[b].n; i++)
            if (e->bk[b].v[i].t != e->now)
                return DP_EINPUT;
    for (size_t i = 0; i < e->n_top; i++)
        if (e->top[i].t != e->now)
            return DP_EINPUT;
    while (e->cap < e->live)
        if (heap_grow(e))
            return DP_ENOMEM;
    for (size_t b = e->cur; b < e->K; b++) {
        for (uint32_t i = 0; i < e->bk[b].n; i++)
            sift_up(e->heap, e->n++, e->bk[b].v[i]);
        e->bk[b].n = 0;
    }
    for (size_t i = 0; i < e->n_top; i++)
        sift_up(e->heap, e->n++, e->top[i]);
    e->n_top = 0;
    e->K = 0;
    e->cur = 0;
    for (size_t i = 0; i < e->n; i++)
        e->heap[i].t = 0; /* all equal: the heap order (by key) still holds */
    e->now = 0;
    return 0;
}
