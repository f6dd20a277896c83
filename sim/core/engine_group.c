/* engine_group.c: clock domains in one global order (engine_group.h).
 *
 * The engines sit in a binary min-heap by (origin + next local time,
 * index).  An engine's key changes only when something is scheduled or
 * cancelled on it (the engine's touch hook marks it) or when its own
 * event runs; marked engines are re-keyed before the next pick, so a
 * step costs O(log domains) plus the engines its handler touched. */
#include "engine_group.h"

#include <math.h>

typedef struct eg_node {
    eg_group *g;
    sim_engine *e;
    void *ctx;
    size_t idx;
    size_t rank; /* ties: idx for a child, after every child for the root */
    size_t pos;  /* in the heap, or NO_POS */
    double key;  /* origin + next local time (INFINITY: nothing pending) */
    int dirty;   /* on g->dirty */
    int retired; /* e freed, origin kept */
    double origin;
} eg_node;

#define NO_POS ((size_t)-1)

struct eg_group {
    eg_node **nodes;
    size_t n, cap;
    eg_node **heap;
    size_t hn;
    size_t *dirty;
    size_t n_dirty, cap_dirty;
    size_t cur;
    double now;
    uint64_t retired_events;
    int stop; /* an entered engine asked to stop (eg_leave) */
};

/* Ties: the children in index order, then the root: what the jobs did at
 * an instant (a job's last batch ending at t) is done before the root
 * acts on it (a decision at t sees that job finished). */
static inline int less(const eg_node *a, const eg_node *b)
{
    return a->key < b->key || (a->key == b->key && a->rank < b->rank);
}

static void hswap(eg_group *g, size_t i, size_t j)
{
    eg_node *t = g->heap[i];
    g->heap[i] = g->heap[j];
    g->heap[j] = t;
    g->heap[i]->pos = i;
    g->heap[j]->pos = j;
}

static void hup(eg_group *g, size_t i)
{
    while (i > 0 && less(g->heap[i], g->heap[(i - 1) / 2])) {
        hswap(g, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static void hdown(eg_group *g, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < g->hn && less(g->heap[l], g->heap[m]))
            m = l;
        if (r < g->hn && less(g->heap[r], g->heap[m]))
            m = r;
        if (m == i)
            return;
        hswap(g, i, m);
        i = m;
    }
}

static void hremove(eg_group *g, eg_node *x)
{
    size_t i = x->pos;
    x->pos = NO_POS;
    if (i == --g->hn)
        return;
    g->heap[i] = g->heap[g->hn];
    g->heap[i]->pos = i;
    hup(g, i);
    hdown(g, g->heap[i]->pos);
}

static void rekey(eg_group *g, eg_node *x)
{
    x->dirty = 0;
    if (x->retired)
        return;
    double t = sim_next_time(x->e);
    x->key = isfinite(t) ? sim_origin(x->e) + t : INFINITY;
    hup(g, x->pos);
    hdown(g, x->pos);
}

/* The engine's touch hook: its earliest time may change. */
static void on_touch(void *ctx, sim_engine *e)
{
    (void)e;
    eg_node *x = ctx;
    eg_group *g = x->g;
    if (x->dirty || x->retired)
        return;
    if (g->n_dirty == g->cap_dirty) { /* room is made in eg_add: one slot per engine */
        rekey(g, x);
        return;
    }
    x->dirty = 1;
    g->dirty[g->n_dirty++] = x->idx;
}

static eg_node *add(eg_group *g, sim_engine *e, double origin, void *ctx, dp_err *err)
{
    if (g->n == g->cap) {
        size_t nc = g->cap ? 2 * g->cap : 16;
        eg_node **nn = dp_realloc(g->nodes, nc * sizeof *nn);
        if (nn)
            g->nodes = nn;
        eg_node **nh = nn ? dp_realloc(g->heap, nc * sizeof *nh) : NULL;
        if (nh)
            g->heap = nh;
        size_t *nd = nh ? dp_realloc(g->dirty, nc * sizeof *nd) : NULL;
        if (!nd) {
            dp_err_set(err, DP_ENOMEM, "engine group: out of memory");
            return NULL;
        }
        g->dirty = nd;
        g->cap = g->cap_dirty = nc;
    }
    eg_node *x = dp_calloc(1, sizeof *x);
    if (!x) {
        dp_err_set(err, DP_ENOMEM, "engine group: out of memory");
        return NULL;
    }
    *x = (eg_node){.g = g,
                   .e = e,
                   .ctx = ctx,
                   .idx = g->n,
                   .rank = g->n ? g->n : SIZE_MAX,
                   .pos = g->hn,
                   .key = INFINITY};
    g->nodes[g->n++] = x;
    g->heap[g->hn++] = x;
    sim_set_origin(e, origin);
    sim_set_touch(e, on_touch, x);
    rekey(g, x);
    return x;
}

eg_group *eg_new(sim_engine *root, dp_err *err)
{
    eg_group *g = dp_calloc(1, sizeof *g);
    if (!g) {
        dp_err_set(err, DP_ENOMEM, "engine group: out of memory");
        return NULL;
    }
    if (!add(g, root, sim_origin(root), NULL, err)) {
        eg_free(g);
        return NULL;
    }
    return g;
}

void eg_free(eg_group *g)
{
    if (!g)
        return;
    for (size_t i = 0; i < g->n; i++) {
        if (g->nodes[i]->e)
            sim_set_touch(g->nodes[i]->e, NULL, NULL);
        if (i > 0)
            sim_engine_free(g->nodes[i]->e);
        dp_free(g->nodes[i]);
    }
    dp_free(g->nodes);
    dp_free(g->heap);
    dp_free(g->dirty);
    dp_free(g);
}

sim_engine *eg_add(eg_group *g, double origin, void *ctx, dp_err *err)
{
    sim_engine *e = sim_engine_new(err);
    if (!e)
        return NULL;
    if (!add(g, e, origin, ctx, err)) {
        sim_engine_free(e);
        return NULL;
    }
    return e;
}

void eg_retire(eg_group *g, size_t d)
{
    eg_node *x = g->nodes[d];
    if (x->retired || d == 0)
        return;
    x->retired = 1;
    g->retired_events += sim_events_run(x->e);
    hremove(g, x);
    x->origin = sim_origin(x->e);
    sim_engine_free(x->e); /* a run stopped early holds a queue's memory: 10^2-10^3 runs in a trace */
    x->e = NULL;
}

double eg_origin(const eg_group *g, size_t d)
{
    const eg_node *x = g->nodes[d];
    return x->retired ? x->origin : sim_origin(x->e);
}

size_t eg_count(const eg_group *g)
{
    return g->n;
}
sim_engine *eg_engine(const eg_group *g, size_t d)
{
    return g->nodes[d]->e;
}
void *eg_ctx(const eg_group *g, size_t d)
{
    return g->nodes[d]->ctx;
}
size_t eg_current(const eg_group *g)
{
    return g->cur;
}
double eg_now(const eg_group *g)
{
    return g->now;
}

double eg_now_in(const eg_group *g, size_t d)
{
    if (d == g->cur)
        return sim_now(g->nodes[d]->e);
    return g->now - eg_origin(g, d);
}

size_t eg_enter(eg_group *g, size_t d)
{
    size_t prev = g->cur;
    if (d != prev) /* the current one's clock is exactly its own */
        sim_set_now(g->nodes[d]->e, g->now - sim_origin(g->nodes[d]->e));
    g->cur = d;
    return prev;
}

void eg_leave(eg_group *g, size_t prev)
{
    if (g->cur != prev && sim_take_stop(g->nodes[g->cur]->e))
        g->stop = 1; /* reported by the next eg_step */
    g->cur = prev;
}

int eg_step(eg_group *g, size_t *who, int *stopped)
{
    while (g->n_dirty)
        rekey(g, g->nodes[g->dirty[--g->n_dirty]]);
    if (!g->hn || !isfinite(g->heap[0]->key))
        return 0;
    eg_node *x = g->heap[0];
    g->now = x->key;
    g->cur = x->idx;
    x->dirty = 1;             /* its own sim_at while it runs: rekeyed once, below */
    int ran = sim_step(x->e); /* 0: its error is sticky (eg_error) */
    *who = x->idx;
    *stopped = sim_take_stop(x->e) | g->stop;
    g->stop = 0;
    g->cur = 0;
    if (*stopped) /* the runner acts at now (the root's frame is global) */
        sim_set_now(g->nodes[0]->e, g->now);
    rekey(g, x);
    return ran;
}

int eg_error(const eg_group *g)
{
    for (size_t i = 0; i < g->n; i++)
        if (!g->nodes[i]->retired && sim_error(g->nodes[i]->e))
            return sim_error(g->nodes[i]->e);
    return 0;
}

uint64_t eg_events(const eg_group *g)
{
    uint64_t k = g->retired_events;
    for (size_t i = 0; i < g->n; i++)
        if (!g->nodes[i]->retired)
            k += sim_events_run(g->nodes[i]->e);
    return k;
}

size_t eg_pending(const eg_group *g)
{
    size_t k = 0;
    for (size_t i = 0; i < g->n; i++)
        if (!g->nodes[i]->retired)
            k += sim_pending(g->nodes[i]->e);
    return k;
}
