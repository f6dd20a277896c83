/* engine.c: event queue as a 4-ary min-heap of (time, seq) keys.
 *
 * Invariants:
 *  - heap[] holds keys ordered by (t, seq); seq is unique and increases with
 *    every schedule, so the order is total and deterministic.
 *  - Each heap entry points to a slot in slots[]; a slot carries the handler,
 *    ctx and the event id.  Ids are (generation << 32 | slot index): a slot
 *    is reused after its event fires or is reclaimed, and the generation
 *    makes stale ids harmless (sim_cancel on a fired id is a no-op).
 *  - Cancelling marks the slot (handler = NULL); the heap entry is dropped
 *    when it reaches the top.  `live` counts scheduled, not cancelled events.
 *
 * Why 4-ary: fewer levels than a binary heap and the four children of a
 * node share a cache line or two; measured faster for the hold model with
 * 10^6 pending events (tests/bench_engine.c).
 */
#include "engine.h"

#include <math.h>
#include <string.h>

typedef struct hent {
    double t;
    uint64_t seq;
    uint32_t slot;
} hent;

typedef struct slot {
    sim_handler h; /* NULL: free or cancelled */
    void *ctx;
    uint32_t gen;
    uint32_t next_free; /* free-list link, valid while free */
    int in_heap;
} slot;

struct sim_engine {
    hent *heap;
    size_t n, cap;
    slot *slots;
    size_t n_slots, cap_slots;
    uint32_t free_head; /* UINT32_MAX = empty */
    uint64_t seq;
    double now;
    size_t live;
    uint64_t ran;
    int stop;
};

#define NO_SLOT UINT32_MAX

static inline int before(const hent *a, const hent *b)
{
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
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
    dp_free(e->heap);
    dp_free(e->slots);
    dp_free(e);
}

static void sift_up(hent *h, size_t i)
{
    hent x = h[i];
    while (i > 0) {
        size_t p = (i - 1) / 4;
        if (!before(&x, &h[p]))
            break;
        h[i] = h[p];
        i = p;
    }
    h[i] = x;
}

static void sift_down(hent *h, size_t n, size_t i)
{
    hent x = h[i];
    for (;;) {
        size_t c = 4 * i + 1;
        if (c >= n)
            break;
        size_t best = c, end = c + 4 < n ? c + 4 : n;
        for (size_t k = c + 1; k < end; k++)
            if (before(&h[k], &h[best]))
                best = k;
        if (!before(&h[best], &x))
            break;
        h[i] = h[best];
        i = best;
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
        size_t nc = e->cap_slots ? e->cap_slots * 2 : 64;
        if (nc >= NO_SLOT)
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

static void slot_put(sim_engine *e, uint32_t s)
{
    slot *sl = &e->slots[s];
    sl->h = NULL;
    sl->ctx = NULL;
    sl->in_heap = 0;
    sl->gen++;
    if (sl->gen == 0) /* keep ids non-zero after wrap-around */
        sl->gen = 1;
    sl->next_free = e->free_head;
    e->free_head = s;
}

uint64_t sim_at(sim_engine *e, double t_s, sim_handler h, void *ctx)
{
    if (!h || isnan(t_s))
        return 0;
    if (t_s < e->now)
        t_s = e->now;
    if (e->n == e->cap) {
        size_t nc = e->cap ? e->cap * 2 : 256;
        hent *nh = dp_realloc(e->heap, nc * sizeof *nh);
        if (!nh)
            return 0;
        e->heap = nh;
        e->cap = nc;
    }
    uint32_t s = slot_get(e);
    if (s == NO_SLOT)
        return 0;
    slot *sl = &e->slots[s];
    sl->h = h;
    sl->ctx = ctx;
    sl->in_heap = 1;
    e->heap[e->n] = (hent){.t = t_s, .seq = ++e->seq, .slot = s};
    sift_up(e->heap, e->n++);
    e->live++;
    return ((uint64_t)sl->gen << 32) | s;
}

uint64_t sim_after(sim_engine *e, double delay_s, sim_handler h, void *ctx)
{
    return sim_at(e, e->now + (delay_s > 0 ? delay_s : 0), h, ctx);
}

int sim_cancel(sim_engine *e, uint64_t id)
{
    uint32_t s = (uint32_t)(id & 0xffffffffu), gen = (uint32_t)(id >> 32);
    if (id == 0 || s >= e->n_slots)
        return 0;
    slot *sl = &e->slots[s];
    if (sl->gen != gen || !sl->h)
        return 0;
    sl->h = NULL; /* the heap entry is reclaimed when it surfaces */
    e->live--;
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

/* Drop cancelled entries from the top so heap[0] (if any) is live. */
static void drop_cancelled(sim_engine *e)
{
    while (e->n && !e->slots[e->heap[0].slot].h) {
        uint32_t s = e->heap[0].slot;
        e->heap[0] = e->heap[--e->n];
        if (e->n)
            sift_down(e->heap, e->n, 0);
        slot_put(e, s);
    }
}

double sim_next_time(sim_engine *e)
{
    drop_cancelled(e);
    return e->n ? e->heap[0].t : INFINITY;
}

int sim_step(sim_engine *e)
{
    drop_cancelled(e);
    if (!e->n)
        return 0;
    hent top = e->heap[0];
    e->heap[0] = e->heap[--e->n];
    if (e->n)
        sift_down(e->heap, e->n, 0);
    slot *sl = &e->slots[top.slot];
    sim_handler h = sl->h;
    void *ctx = sl->ctx;
    uint64_t id = ((uint64_t)sl->gen << 32) | top.slot;
    slot_put(e, top.slot); /* before the call: the handler may schedule */
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
