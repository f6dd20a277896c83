/* engine.c: the event queue: a sorted run and a small heap, fed by time
 * buckets.
 *
 * Entries are 16 bytes, (time, key) with key = seq << SLOT_BITS | slot; seq
 * increases with every schedule, so (time, key) order is total and
 * deterministic (same time: scheduling order).
 *
 * Layout, after the ladder queue (Tang, Goh, Thng 2005), with one rung:
 *  - the bottom, the nearest events: the run, the current bucket sorted
 *    (an array read front to back), beside a 4-ary min-heap for events
 *    scheduled into the current bucket's span after it was sorted, and for
 *    buckets the run cannot take; the next event is the earlier of the
 *    run's front and the heap's root;
 *  - buckets [cur, K): unsorted lists, bucket i holding the events with
 *    floor((t - start) * inv_width) == i (bucket_pos);
 *  - top: an unsorted list of everything later than the buckets.
 * An event goes to the bottom (the heap) if its bucket index is below cur,
 * to its bucket if below K, else to top: the index is monotone in t, so
 * every bottom event precedes every bucket event, which precedes every top
 * event.  When the bottom empties, bucket cur becomes the run, by a
 * counting sort on fine bins of its span and an insertion sort within them
 * (O(1) an entry, few unpredictable branches, where a heap pays a sift of
 * mispredicted compares per pop: at 10^3 pending that sift was over half
 * of an event's cost), or the heap when it is large, of infinite width or
 * crowded into few bins (run_take).  When the buckets are used up, a
 * rebuild takes the earliest part of top (up to a quantile of a fixed
 * sample; window_q) into K new buckets and leaves the rest.  Inserting into
 * a bucket or top is an append and rebuilds stream through memory, so with
 * 10^6 pending events most operations touch cached memory, where a plain
 * heap pays ~10 cache misses per pop (tests/bench_engine.c measures 10^3,
 * 10^4 and 10^6).  Equal times all land in one bucket and, at worst, the
 * structure degrades to the heap alone: never wrong, only slower.
 *
 * Memory (issue 16: 10^6 pending events in under 50 MB).  The buckets and
 * top are lists of 512-byte chunks (31 entries) drawn from one free list,
 * not arrays grown by doubling: a rebuild hands each chunk of top back as
 * soon as it has been read, so moving events between lists needs no second
 * copy, and a list wastes at most one partly filled chunk.  A slot is 16
 * bytes: ctx, the generation and a 32-bit index into the engine's table of
 * distinct handlers (a program has a few dozen handler functions, not one
 * per event).  About 33 bytes per pending event in all, plus the run's
 * fixed 28 KB (RUN_MAX entries and the counting sort's arrays).
 *
 * A fired event from the heap is not popped at once: if its handler
 * schedules an event for the heap (the usual case when the heap holds
 * everything: the next batch, the next round), that event replaces the
 * root with one sift down instead of a pop plus a push.  An event from the
 * run is taken at once (the run's front moves on).
 *
 * Slots: each entry names a slot holding the handler, ctx and generation.
 * Ids are (generation << 32 | slot): a slot is reused after its event fires
 * or is reclaimed, and the generation makes stale ids harmless.  Cancelling
 * marks the slot (handler index 0); the entry is dropped when it surfaces,
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
 * A refill that runs out of memory is not: the queue looks empty until a
 * later refill succeeds, and meanwhile sim_error says DP_ENOMEM, so a run
 * that stops there reports why instead of looking finished.
 *
 * Limits: 2^24 - 1 pending events and 2^40 scheduled events per engine
 * (sim_at returns 0 past them).
 */
#include "engine.h"
#include "dp_heap.h"

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
    union {
        void *ctx;          /* while scheduled */
        uint32_t next_free; /* free-list link, while free */
    } u;
    uint32_t h; /* index into the handler table; 0: free or cancelled */
    uint32_t gen;
} slot;

/* A list chunk: 16-byte header + 31 entries = 512 bytes.  Every chunk of a
 * list is full but its tail, whose fill the list keeps (appending then
 * reads no chunk header: one cache miss less per append). */
#define CHUNK_N 31
typedef struct chunk {
    struct chunk *next;
    void *pad_;
    hent v[CHUNK_N];
} chunk;

/* Chunks are carved from blocks of CHUNKS_PER_BLOCK, freed with the engine. */
#define CHUNKS_PER_BLOCK 128
typedef struct chunk_block {
    struct chunk_block *next;
    void *pad_;
    chunk c[CHUNKS_PER_BLOCK];
} chunk_block;

typedef struct list {
    chunk *head, *tail;
    uint32_t n;      /* entries (< 2^24: the slot limit) */
    uint32_t tail_n; /* entries in the tail chunk */
} list;

static inline uint32_t chunk_fill(const list *l, const chunk *c)
{
    return c == l->tail ? l->tail_n : CHUNK_N;
}

/* Fetch the whole next chunk while this one is read: a list's chunks are
 * not adjacent in memory, so the hardware prefetcher stops at every chunk
 * boundary (without this a rebuild at 10^6 pending ran 30% longer). */
static inline void chunk_prefetch(const chunk *c)
{
    if (c)
        for (size_t off = 0; off < sizeof *c; off += 64)
            __builtin_prefetch((const char *)c + off);
}

struct sim_engine {
    void *block; /* allocation holding the heap, aligned */
    hent *heap;  /* heap[1..4] start a cache line */
    size_t n, cap;
    hent *run;         /* the current bucket, sorted: run[r_pos, r_n) pending */
    uint32_t *run_cnt; /* the counting sort's counts (RUN_BINS x RUN_MAX), then each entry's bin (RUN_MAX) */
    size_t r_pos, r_n;
    list *bk; /* buckets [0, nbk); in use: [cur, K) */
    size_t nbk, K, cur;
    double start, inv_width; /* bucket i: floor((t - start) * inv_width) == i (bucket_pos) */
    list top;
    chunk *free_chunks;
    size_t n_free_chunks;
    chunk_block *blocks;
    slot *slots;
    size_t n_slots, cap_slots;
    uint32_t free_head; /* MAX_SLOTS+1 = empty */
    sim_handler *hs;    /* hs[1..n_hs): the distinct handlers seen */
    uint32_t n_hs, cap_hs;
    uint32_t *htab; /* open addressing: indices into hs, 0 = empty */
    size_t htab_cap;
    sim_prefetch_fn *pf; /* per handler index (sim_set_prefetch), NULL: none */
    void **pf_ctx;
    uint32_t cap_pf;
    sim_handler h_last; /* the last handler looked up, and its index */
    uint32_t h_last_i;
    uint64_t seq;
    double now;
    size_t live, dead;
    uint64_t ran;
    int err; /* a sim_at failed: DP_ENOMEM or DP_EINPUT */
    int stop;
    int top_spent;   /* heap[0] has fired; the next sim_at replaces it */
    size_t spill_at; /* see spill() */
    int starved;     /* the last refill ran out of memory: the queue looked empty but is not */
    /* clock domains (engine_group.h): global time of local 0, and who to
     * tell when the earliest time may change */
    double origin;
    sim_touch_fn touch;
    void *touch_ctx;
};

#define NO_SLOT (MAX_SLOTS + 1)
/* Up to this many events in top a rebuild takes them all into the heap
 * (one bucket of infinite width): a heap this small is cheap, and the
 * rebuild's sample of 64 would be all of top. */
#define LADDER_MIN 64
/* A heap fed directly (no buckets left) past this size goes back to top;
 * see spill(). */
#define SPILL_MIN 32768
/* A bucket of at most this many entries becomes the sorted run (counting
 * sort); a larger one, or one of infinite width, becomes the heap. */
#define RUN_MAX 1024
/* Fine bins per entry of the run's counting sort: two, so that few bins
 * hold two entries and the insertion sort after it seldom moves one. */
#ifndef RUN_BINS
#define RUN_BINS 2
#endif
/* Up to this many slots (16 bytes each) stay in cache: no prefetching. */
#define SLOTS_CACHED 16384
/* A rebuild of top's n events takes those up to the window_q(n)/64
 * quantile of its sample (at most 63: the sample's largest) into buckets
 * of about bucket_n(n) events each; tests/bench_engine.c (timed, and its
 * instructions and mispredicted branches counted by cachegrind) chose them.
 * A small queue (up to LADDER_SMALL events, in cache) takes nearly all of
 * top but its two largest samples (so one far-future event does not
 * stretch the buckets), so few events are read by more than one rebuild,
 * in small buckets, so few new events land in the current bucket's span
 * (they go to the heap).  A large one takes half, in larger buckets: fewer
 * lists to append to, so fewer cache misses. */
#define LADDER_SMALL 65536
static inline size_t window_q(size_t n)
{
    return n <= LADDER_SMALL ? 62 : 32;
}
static inline size_t bucket_n(size_t n)
{
    return n <= LADDER_SMALL ? 16 : 256;
}

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
    e->n_hs = 1; /* index 0 means "no handler" */
    e->spill_at = SPILL_MIN;
    return e;
}

void sim_engine_free(sim_engine *e)
{
    if (!e)
        return;
    dp_free(e->block);
    dp_free(e->run);
    dp_free(e->run_cnt);
    dp_free(e->bk);
    while (e->blocks) {
        chunk_block *b = e->blocks;
        e->blocks = b->next;
        dp_free(b);
    }
    dp_free(e->slots);
    dp_free(e->hs);
    dp_free(e->htab);
    dp_free(e->pf);
    dp_free(e->pf_ctx);
    dp_free(e);
}

/* ---- chunk lists ---- */

/* Make at least k chunks free.  -1 when memory ran out (nothing changed
 * but the free list). */
static int chunk_reserve(sim_engine *e, size_t k)
{
    while (e->n_free_chunks < k) {
        chunk_block *b = dp_malloc(sizeof *b);
        if (!b)
            return -1;
        b->next = e->blocks;
        e->blocks = b;
        for (size_t i = 0; i < CHUNKS_PER_BLOCK; i++) {
            b->c[i].next = e->free_chunks;
            e->free_chunks = &b->c[i];
        }
        e->n_free_chunks += CHUNKS_PER_BLOCK;
    }
    return 0;
}

static inline void chunk_put(sim_engine *e, chunk *c)
{
    c->next = e->free_chunks;
    e->free_chunks = c;
    e->n_free_chunks++;
}

static inline int list_append(sim_engine *e, list *l, hent x)
{
    if (!l->tail || l->tail_n == CHUNK_N) {
        if (!e->free_chunks && chunk_reserve(e, 1))
            return -1;
        chunk *c = e->free_chunks;
        e->free_chunks = c->next;
        e->n_free_chunks--;
        c->next = NULL;
        if (l->tail)
            l->tail->next = c;
        else
            l->head = c;
        l->tail = c;
        l->tail_n = 0;
    }
    l->tail->v[l->tail_n++] = x;
    l->n++;
    return 0;
}

/* ---- handler table ---- */

static inline size_t handler_hash(sim_handler h, size_t mask)
{
    uint64_t x = (uint64_t)(uintptr_t)h;
    x ^= x >> 17;
    x *= 0x9e3779b97f4a7c15ull;
    return (size_t)(x >> 32) & mask;
}

static int htab_grow(sim_engine *e)
{
    size_t nc = e->htab_cap ? e->htab_cap * 2 : 64;
    uint32_t *nt = dp_calloc(nc, sizeof *nt);
    if (!nt)
        return -1;
    for (uint32_t k = 1; k < e->n_hs; k++) {
        size_t i = handler_hash(e->hs[k], nc - 1);
        while (nt[i])
            i = (i + 1) & (nc - 1);
        nt[i] = k;
    }
    dp_free(e->htab);
    e->htab = nt;
    e->htab_cap = nc;
    return 0;
}

/* The index of h in the handler table, adding it if new; 0 when memory ran
 * out. */
static uint32_t handler_index_slow(sim_engine *e, sim_handler h)
{
    if (2 * ((size_t)e->n_hs + 1) > e->htab_cap && htab_grow(e))
        return 0;
    size_t mask = e->htab_cap - 1, i = handler_hash(h, mask);
    for (; e->htab[i]; i = (i + 1) & mask)
        if (e->hs[e->htab[i]] == h)
            goto found;
    if (e->n_hs >= e->cap_hs) {
        uint32_t nc = e->cap_hs ? e->cap_hs * 2 : 32;
        sim_handler *nh = dp_realloc(e->hs, nc * sizeof *nh);
        if (!nh)
            return 0;
        e->hs = nh;
        e->cap_hs = nc;
    }
    e->hs[e->n_hs] = h;
    e->htab[i] = e->n_hs++;
found:
    e->h_last = h;
    e->h_last_i = e->htab[i];
    return e->h_last_i;
}

static inline uint32_t handler_index(sim_engine *e, sim_handler h)
{
    return h == e->h_last ? e->h_last_i : handler_index_slow(e, h);
}

/* ---- the heap ---- */

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

/* The heap: sim/base/dp_heap.h's, 4-ary over (time, key). */
DP_HEAP_DEFINE(hq, hent, before)

/* ---- slots ---- */

static uint32_t slot_new(sim_engine *e)
{
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

static inline uint32_t slot_get(sim_engine *e)
{
    if (e->free_head == NO_SLOT)
        return slot_new(e);
    uint32_t s = e->free_head;
    e->free_head = e->slots[s].u.next_free;
    return s;
}

static inline void slot_put(sim_engine *e, uint32_t s)
{
    slot *sl = &e->slots[s];
    sl->h = 0;
    if (++sl->gen == 0) /* keep ids non-zero after wrap-around */
        sl->gen = 1;
    sl->u.next_free = e->free_head;
    e->free_head = s;
}

static inline uint32_t slot_of(const hent *x)
{
    return (uint32_t)(x->key & MAX_SLOTS);
}

static inline void pop_top(sim_engine *e)
{
    hent last = e->heap[--e->n];
    if (e->n)
        hq_down(e->heap, e->n, 0, last);
}

/* The bucket coordinate of time t: bucket i holds [i, i + 1).  Monotone in
 * t (a product rounds monotonically), so buckets never disagree with the
 * (time, key) order.  NaN only where infinities meet (an infinite time, or
 * a rebuild of infinite times, or inv_width 0: one bucket of infinite
 * width); every user takes NaN as the earliest place, so an infinite time
 * still fires after every finite one and in key order among its equals. */
static inline double bucket_pos(const sim_engine *e, double t)
{
    return (t - e->start) * e->inv_width;
}

/* Where an entry of time t belongs: -1 the bottom (run or heap), K top,
 * else its bucket. */
static inline long place(const sim_engine *e, double t)
{
    if (e->K == 0)
        return 0; /* no buckets yet: top (K == 0) */
    double q = bucket_pos(e, t);
    if (!(q >= (double)e->cur))
        return -1;
    if (q < (double)e->K)
        return (long)q;
    return (long)e->K;
}

/* ---- scheduling ---- */

static inline uint64_t at(sim_engine *e, double t_s, sim_handler h, void *ctx);

/* sim_at's body, inlined into sim_after too (the common call). */
static inline uint64_t schedule(sim_engine *e, double t_s, sim_handler h, void *ctx)
{
    if (e->touch)
        e->touch(e->touch_ctx, e);
    uint64_t id = at(e, t_s, h, ctx);
    if (!id && !e->err)
        e->err = (!h || isnan(t_s)) ? DP_EINPUT : DP_ENOMEM;
    return id;
}

uint64_t sim_at(sim_engine *e, double t_s, sim_handler h, void *ctx)
{
    return schedule(e, t_s, h, ctx);
}

int sim_error(const sim_engine *e)
{
    return e->err ? e->err : e->starved ? DP_ENOMEM : 0;
}

/* A rebuild that takes everything (few or equal times) leaves one bucket of
 * infinite width, and every later event then goes straight to the heap.
 * That is right for a small queue, but a run that starts with a handful of
 * events and then schedules 10^6 (C-ADP's first instant: one completion per
 * device) would keep a 10^6-entry heap, ~10 cache misses per pop.  So once
 * no bucket is left and the heap holds at least spill_at entries and half
 * of everything queued, its entries go back to top (appended, any order),
 * and the next refill builds buckets from them.  spill_at doubles a
 * refilled heap's size, so a heap that is large for good (all times equal)
 * is not spilled again at once; a spill costs O(queued) after at least
 * queued/2 - spill_at/2 direct pushes: O(1) amortised.  Order is (time,
 * key) whatever the structure, so results do not change.  0: spilled;
 * -1: no memory for the chunks (nothing changed, the heap just stays). */
static int spill(sim_engine *e)
{
    if (chunk_reserve(e, (e->n + e->r_n - e->r_pos) / CHUNK_N + 2))
        return -1;
    if (e->top_spent) {
        e->top_spent = 0;
        pop_top(e);
    }
    /* the run too: with K == 0 every new event goes to top, so nothing may
     * stay in the bottom that a new event could precede */
    for (size_t i = e->r_pos; i < e->r_n; i++)
        (void)list_append(e, &e->top, e->run[i]); /* cannot fail: reserved */
    e->r_pos = e->r_n = 0;
    for (size_t i = 0; i < e->n; i++)
        (void)list_append(e, &e->top, e->heap[i]); /* cannot fail: reserved */
    e->n = 0;
    e->K = 0;
    e->cur = 0;
    return 0;
}

static inline __attribute__((always_inline)) uint64_t at(sim_engine *e, double t_s, sim_handler h, void *ctx)
{
    if (!(t_s >= e->now)) { /* earlier: clamped; NaN: refused */
        if (isnan(t_s))
            return 0;
        t_s = e->now;
    }
    if (!h || e->seq >= MAX_SEQ)
        return 0;
    uint32_t hi = handler_index(e, h);
    if (!hi)
        return 0;
    long where = place(e, t_s);
    if (where < 0 && e->n >= e->spill_at && e->cur == e->K && 2 * e->n >= e->live + e->dead && !spill(e))
        where = place(e, t_s);        /* K == 0 now: top */
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
            hq_down(e->heap, e->n, 0, x);
        } else {
            hq_up(e->heap, e->n++, x);
        }
    } else if (list_append(e, (size_t)where < e->K ? &e->bk[where] : &e->top, x)) {
        slot_put(e, s);
        return 0;
    }
    e->seq++;
    slot *sl = &e->slots[s];
    sl->h = hi;
    sl->u.ctx = ctx;
    e->live++;
    return ((uint64_t)sl->gen << 32) | s;
}

uint64_t sim_after(sim_engine *e, double delay_s, sim_handler h, void *ctx)
{
    return schedule(e, e->now + (delay_s > 0 ? delay_s : 0), h, ctx);
}

/* Drop the cancelled entries of the heap array, freeing their slots. */
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

/* The same for a list: survivors move forward in place (the write position
 * never passes the read position), emptied chunks go back to the free
 * list. */
static void list_sweep(sim_engine *e, list *l)
{
    chunk *w = l->head;
    uint32_t wn = 0, kept = 0;
    for (chunk *c = l->head; c; c = c->next) {
        chunk_prefetch(c->next);
        for (uint32_t i = 0, cn = chunk_fill(l, c); i < cn; i++) {
            hent x = c->v[i];
            uint32_t s = slot_of(&x);
            if (!e->slots[s].h) {
                slot_put(e, s);
                continue;
            }
            if (wn == CHUNK_N) {
                w = w->next;
                wn = 0;
            }
            w->v[wn++] = x;
            kept++;
        }
    }
    chunk *rest = l->head;
    if (kept) {
        rest = w->next;
        w->next = NULL;
        l->tail = w;
        l->tail_n = wn;
    } else {
        l->head = l->tail = NULL;
        l->tail_n = 0;
    }
    while (rest) {
        chunk *nx = rest->next;
        chunk_put(e, rest);
        rest = nx;
    }
    l->n = kept;
}

/* Remove every cancelled entry from the heap, the buckets and top.  The
 * spent root's slot may already be reused by a new event, so it is retired
 * first; then each remaining entry owns its slot and h == 0 means
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
        hq_up(e->heap, e->n++, e->heap[i]);
    e->r_n = e->r_pos + sweep(e, e->run + e->r_pos, e->r_n - e->r_pos); /* keeps the order */
    for (size_t b = e->cur; b < e->K; b++)
        list_sweep(e, &e->bk[b]);
    list_sweep(e, &e->top);
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
    if (e->touch)
        e->touch(e->touch_ctx, e);
    sl->h = 0; /* the entry is reclaimed when it surfaces or by compact() */
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

/* The k-th smallest of a[0, n) (k < n), by quickselect; reorders a.
 * Deterministic (middle pivot), and no NaN reaches it. */
static double kth_smallest(double *a, size_t n, size_t k)
{
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        double p = a[lo + (hi - lo) / 2];
        size_t i = lo, j = hi;
        while (i <= j) {
            while (a[i] < p)
                i++;
            while (a[j] > p)
                j--;
            if (i <= j) {
                double t = a[i];
                a[i] = a[j];
                a[j] = t;
                i++;
                if (j == 0)
                    break;
                j--;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            break;
    }
    return a[k];
}

/* Take the earliest part of top into fresh buckets.  The window ends at
 * the 1/4 quantile of a fixed sample of top (deterministic), so new events
 * mostly land in top, where inserting is an append.  Each chunk of top is
 * freed once read, so the move needs at most one partly filled chunk per
 * list beyond what top held: those are reserved first, and a rebuild that
 * cannot reserve them changes nothing. */
static int rebuild(sim_engine *e)
{
    size_t n = e->top.n;
    double lo = INFINITY, smp[64];
    size_t stride = n > LADDER_MIN ? n / 64 : 0, next = 0, idx = 0;
    int ns = 0;
    for (chunk *c = e->top.head; c; c = c->next) {
        chunk_prefetch(c->next);
        for (uint32_t i = 0, cn = chunk_fill(&e->top, c); i < cn; i++, idx++) {
            double t = c->v[i].t;
            if (t < lo)
                lo = t;
            if (stride && idx == next && ns < 64) {
                smp[ns++] = t;
                next += stride;
            }
        }
    }
    double end = INFINITY;
    if (stride)
        end = kth_smallest(smp, (size_t)ns, (size_t)ns * window_q(n) / 64);
    size_t K = n * window_q(n) / 64 / bucket_n(n) + 1;
    if (K > 65536)
        K = 65536;
    double inv = (double)K / (end - lo);
    if (!(inv > 0) || !isfinite(inv)) { /* all equal, or take everything: one bucket of infinite width */
        K = 1;
        inv = 0;
    }
    if (K > e->nbk) {
        list *nb = dp_realloc(e->bk, K * sizeof *nb);
        if (!nb)
            return -1;
        memset(nb + e->nbk, 0, (K - e->nbk) * sizeof *nb);
        e->bk = nb;
        e->nbk = K;
    }
    if (chunk_reserve(e, K + 2))
        return -1;
    e->start = lo;
    e->inv_width = inv;
    e->K = K;
    e->cur = 0;
    list old = e->top;
    e->top = (list){NULL, NULL, 0, 0};
    for (chunk *c = old.head; c;) {
        chunk_prefetch(c->next);
        for (uint32_t i = 0, cn = chunk_fill(&old, c); i < cn; i++) {
            hent x = c->v[i];
            double q = bucket_pos(e, x.t);
            list *l = !(q >= 0)       ? &e->bk[0]
                      : q < (double)K ? &e->bk[(size_t)q]
                                      : &e->top; /* NaN: the earliest, as place() */
            /* cannot fail: the reserve covers every partly filled chunk */
            (void)list_append(e, l, x);
        }
        chunk *nx = c->next;
        chunk_put(e, c);
        c = nx;
    }
    return 0;
}

/* The fine bin in [0, m) of time t: t * a - b, clamped (only a hint for
 * the insertion sort, so its rounding does not matter). */
static inline uint32_t fine_bin(double t, double a, double b, uint32_t m)
{
    double f = t * a - b;
    if (!(f >= 0))
        return 0;
    return f < (double)m ? (uint32_t)f : m - 1;
}

/* Sort bucket b (coordinate c: its entries' bucket_pos in [c, c + 1), up
 * to rounding) into the run: a counting sort on m fine bins of the same
 * coordinate, then an insertion sort for the order within a bin (about one
 * entry each, so a few moves).  Bins and the sort are branch-light where a
 * heap of m entries costs a sift with unpredictable branches per pop.  -1
 * (nothing changed) when the run's arrays cannot be had, or when the
 * bucket's entries crowd into a few bins (equal or near-equal times, keys in
 * any order): the insertion sort is abandoned past 8 moves an entry and the
 * caller heapifies the bucket instead, so a bucket costs O(m log m) at
 * worst, never O(m^2). */
static int run_take(sim_engine *e, const list *b, size_t c)
{
    size_t m = b->n;
    if (!e->run) {
        e->run = dp_malloc(RUN_MAX * sizeof *e->run);
        e->run_cnt = dp_malloc((RUN_BINS + 1) * RUN_MAX * sizeof *e->run_cnt);
        if (!e->run || !e->run_cnt) {
            dp_free(e->run);
            dp_free(e->run_cnt);
            e->run = NULL;
            e->run_cnt = NULL;
            return -1;
        }
    }
    /* bucket c spans [c, c + 1) of bucket_pos, mb bins across it */
    uint32_t *cnt = e->run_cnt, *bin = cnt + RUN_BINS * RUN_MAX, mb = (uint32_t)(RUN_BINS * m);
    double a = e->inv_width * (double)mb, off = (e->start * e->inv_width + (double)c) * (double)mb;
    memset(cnt, 0, mb * sizeof *cnt);
    size_t j = 0;
    for (const chunk *k = b->head; k; k = k->next) {
        chunk_prefetch(k->next);
        for (uint32_t i = 0, kn = chunk_fill(b, k); i < kn; i++, j++)
            cnt[bin[j] = fine_bin(k->v[i].t, a, off, mb)]++;
    }
    for (uint32_t f = 0, sum = 0; f < mb; f++) { /* cnt[f]: where bin f starts */
        uint32_t n_f = cnt[f];
        cnt[f] = sum;
        sum += n_f;
    }
    hent *r = e->run;
    j = 0;
    for (const chunk *k = b->head; k; k = k->next)
        for (uint32_t i = 0, kn = chunk_fill(b, k); i < kn; i++, j++)
            r[cnt[bin[j]]++] = k->v[i];
    size_t moves = 0, budget = 8 * m;
    for (size_t i = 1; i < m; i++) {
        hent x = r[i];
        size_t p = i;
        while (p > 0 && before(&x, &r[p - 1])) {
            r[p] = r[p - 1];
            p--;
        }
        r[p] = x;
        moves += i - p;
        if (moves > budget)
            return -1; /* r holds a permutation of b's entries; b is unchanged */
    }
    if (e->n_slots > SLOTS_CACHED) /* read when they fire: fetch them now */
        for (size_t i = 0; i < m; i++)
            __builtin_prefetch(&e->slots[slot_of(&r[i])]);
    e->r_pos = 0;
    e->r_n = m;
    return 0;
}

static void list_free_chunks(sim_engine *e, list *l)
{
    for (chunk *c = l->head; c;) {
        chunk *nx = c->next;
        chunk_put(e, c);
        c = nx;
    }
    *l = (list){NULL, NULL, 0, 0};
}

/* Make the bottom (the run or the heap) non-empty if anything is pending:
 * sort the next bucket into the run (or heapify it, when large or of
 * infinite width), rebuilding from top when the buckets are used up.  0
 * when empty. */
static __attribute__((noinline)) int refill_slow(sim_engine *e)
{
    while (e->n == 0 && e->r_pos == e->r_n) {
        if (e->cur < e->K) {
            list *b = &e->bk[e->cur];
            if (b->n == 0) {
                e->cur++;
                continue;
            }
            if (b->n <= RUN_MAX && e->inv_width > 0 && !run_take(e, b, e->cur)) {
                e->cur++;
                list_free_chunks(e, b);
                e->spill_at = SPILL_MIN;
                continue;
            }
            while (e->cap < b->n)
                if (heap_grow(e)) {
                    e->starved = 1; /* report empty rather than lose order, and say why (sim_error) */
                    return 0;
                }
            e->cur++;
            for (chunk *c = b->head; c;) {
                chunk_prefetch(c->next);
                for (uint32_t i = 0, cn = chunk_fill(b, c); i < cn; i++) {
                    /* their slots are read when they fire: fetch them now,
                     * while the heap is built, instead of one miss per event */
                    __builtin_prefetch(&e->slots[slot_of(&c->v[i])]);
                    hq_up(e->heap, e->n++, c->v[i]);
                }
                chunk *nx = c->next;
                chunk_put(e, c);
                c = nx;
            }
            *b = (list){NULL, NULL, 0, 0};
            e->spill_at = 2 * e->n > SPILL_MIN ? 2 * e->n : SPILL_MIN;
            continue;
        }
        if (e->top.n == 0) {
            e->starved = 0;
            return 0;
        }
        if (rebuild(e)) {
            e->starved = 1;
            return 0;
        }
    }
    e->starved = 0;
    return 1;
}

static inline int refill(sim_engine *e)
{
    return e->n || e->r_pos < e->r_n || refill_slow(e);
}

/* The earliest entry of the bottom (the run's next or the heap's root),
 * NULL when both are empty. */
static inline const hent *bottom_min(const sim_engine *e)
{
    const hent *r = e->r_pos < e->r_n ? &e->run[e->r_pos] : NULL;
    if (e->n && (!r || before(&e->heap[0], r)))
        return &e->heap[0];
    return r;
}

/* Drop the spent root and cancelled entries from the front of the bottom,
 * refilling it as needed: the earliest live, unfired entry, or NULL when
 * nothing is pending. */
static inline __attribute__((always_inline)) const hent *drop_cancelled(sim_engine *e)
{
    if (e->top_spent) {
        e->top_spent = 0;
        pop_top(e);
    }
    for (;;) {
        const hent *x = refill(e) ? bottom_min(e) : NULL;
        if (!x)
            return NULL;
        uint32_t s = slot_of(x);
        if (e->slots[s].h)
            return x;
        if (x == e->heap)
            pop_top(e);
        else
            e->r_pos++;
        slot_put(e, s);
        e->dead--;
    }
}

double sim_next_time(sim_engine *e)
{
    const hent *x = drop_cancelled(e);
    return x ? x->t : INFINITY;
}

int sim_set_prefetch(sim_engine *e, sim_handler h, sim_prefetch_fn fn, void *pctx)
{
    uint32_t i = handler_index(e, h);
    if (!i)
        return DP_ENOMEM;
    if (i >= e->cap_pf) {
        uint32_t nc = e->cap_hs > i ? e->cap_hs : i + 1;
        sim_prefetch_fn *np = dp_realloc(e->pf, nc * sizeof *np);
        if (!np)
            return DP_ENOMEM;
        e->pf = np;
        void **nx = dp_realloc(e->pf_ctx, nc * sizeof *nx);
        if (!nx)
            return DP_ENOMEM;
        e->pf_ctx = nx;
        for (uint32_t k = e->cap_pf; k < nc; k++) {
            e->pf[k] = NULL;
            e->pf_ctx[k] = NULL;
        }
        e->cap_pf = nc;
    }
    e->pf[i] = fn;
    e->pf_ctx[i] = pctx;
    return 0;
}

/* Run the prefetch hint of the event after the one about to run (the
 * heap's root is spent when top_spent is set, else the run's entry was
 * taken): the earlier of the run's next entry and the heap's root, or its
 * best child when the root is spent. */
static void prefetch_next(const sim_engine *e)
{
    const hent *b = NULL;
    size_t k0 = e->top_spent ? 1 : 0, k1 = e->top_spent ? 4 : 0;
    for (size_t k = k0; k < e->n && k <= k1; k++)
        if (!b || before(&e->heap[k], b))
            b = &e->heap[k];
    if (e->r_pos < e->r_n && (!b || before(&e->run[e->r_pos], b)))
        b = &e->run[e->r_pos];
    if (!b)
        return;
    const slot *ns = &e->slots[slot_of(b)];
    if (ns->h < e->cap_pf && e->pf[ns->h])
        e->pf[ns->h](e->pf_ctx[ns->h], ns->u.ctx);
}

int sim_step(sim_engine *e)
{
    if (e->err)
        return 0;
    const hent *x = drop_cancelled(e);
    if (!x)
        return 0;
    hent top = *x;
    if (x == e->heap)
        e->top_spent = 1; /* popped lazily: see sim_at */
    else
        e->r_pos++;
    uint32_t s = slot_of(&top);
    slot *sl = &e->slots[s];
    sim_handler h = e->hs[sl->h];
    void *ctx = sl->u.ctx;
    uint64_t id = ((uint64_t)sl->gen << 32) | s;
    if (e->pf)
        prefetch_next(e);
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
static int list_all_at(const list *l, double t)
{
    for (const chunk *c = l->head; c; c = c->next)
        for (uint32_t i = 0, cn = chunk_fill(l, c); i < cn; i++)
            if (c->v[i].t != t)
                return 0;
    return 1;
}

/* Move a list's entries into the heap (room is there) and its chunks back
 * to the free list. */
static void list_into_heap(sim_engine *e, list *l)
{
    for (chunk *c = l->head; c;) {
        for (uint32_t i = 0, cn = chunk_fill(l, c); i < cn; i++)
            hq_up(e->heap, e->n++, c->v[i]);
        chunk *nx = c->next;
        chunk_put(e, c);
        c = nx;
    }
    *l = (list){NULL, NULL, 0, 0};
}

int sim_rebase(sim_engine *e)
{
    compact(e); /* cancelled entries may sit at any time: drop them first */
    for (size_t i = 0; i < e->n; i++)
        if (e->heap[i].t != e->now)
            return DP_EINPUT;
    for (size_t i = e->r_pos; i < e->r_n; i++)
        if (e->run[i].t != e->now)
            return DP_EINPUT;
    for (size_t b = e->cur; b < e->K; b++)
        if (!list_all_at(&e->bk[b], e->now))
            return DP_EINPUT;
    if (!list_all_at(&e->top, e->now))
        return DP_EINPUT;
    while (e->cap < e->live)
        if (heap_grow(e))
            return DP_ENOMEM;
    for (size_t b = e->cur; b < e->K; b++)
        list_into_heap(e, &e->bk[b]);
    list_into_heap(e, &e->top);
    e->K = 0;
    e->cur = 0;
    e->spill_at = 2 * e->n > SPILL_MIN ? 2 * e->n : SPILL_MIN;
    for (size_t i = 0; i < e->n; i++)
        e->heap[i].t = 0; /* all equal: the heap order (by key) still holds */
    for (size_t i = e->r_pos; i < e->r_n; i++)
        e->run[i].t = 0; /* the run stays sorted (by key) and ahead of everything later */
    e->origin += e->now;
    e->now = 0;
    return 0;
}

/* ---- clock domains ---- */

void sim_set_touch(sim_engine *e, sim_touch_fn fn, void *ctx)
{
    e->touch = fn;
    e->touch_ctx = ctx;
}

double sim_origin(const sim_engine *e)
{
    return e->origin;
}

void sim_set_origin(sim_engine *e, double origin)
{
    e->origin = origin;
}

void sim_set_now(sim_engine *e, double t)
{
    if (!(t > e->now))
        return;
    double next = sim_next_time(e);
    e->now = t < next ? t : next;
}

int sim_take_stop(sim_engine *e)
{
    int s = e->stop;
    e->stop = 0;
    return s;
}
