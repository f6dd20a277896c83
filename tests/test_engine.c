/* Engine: (time, seq) ordering, cancellation from inside handlers, stale
 * ids, determinism, and no leaks. */
#include <criterion/criterion.h>
#include "leaks.h"
#include <math.h>
#include <stdlib.h>

#include "engine.h"

#define LOGN 64
typedef struct logger {
    int log[LOGN];
    int n;
    sim_engine *e;
    uint64_t victim;
} logger;

typedef struct tagged {
    logger *lg;
    int tag;
} tagged;

static void rec(sim_engine *e, void *ctx, uint64_t id)
{
    (void)e;
    (void)id;
    tagged *t = ctx;
    if (t->lg->n < LOGN)
        t->lg->log[t->lg->n++] = t->tag;
}

static long live0;
static void setup(void)
{
    live0 = dp_alloc_live();
}
static void teardown(void)
{
    leaks_verify(live0);
}

TestSuite(engine, .init = setup, .fini = teardown);

Test(engine, orders_by_time_then_schedule_order)
{
    sim_engine *e = sim_engine_new(NULL);
    logger lg = {.n = 0};
    tagged t[6];
    double times[6] = {3.0, 1.0, 2.0, 1.0, 1.0, 0.5};
    for (int i = 0; i < 6; i++) {
        t[i] = (tagged){&lg, i};
        cr_assert(sim_at(e, times[i], rec, &t[i]) != 0);
    }
    cr_expect_eq(sim_pending(e), 6);
    cr_expect_eq(sim_run(e, INFINITY), 6);
    int want[6] = {5, 1, 3, 4, 2, 0};
    for (int i = 0; i < 6; i++)
        cr_expect_eq(lg.log[i], want[i], "position %d: got %d want %d", i, lg.log[i], want[i]);
    cr_expect_eq(sim_now(e), 3.0);
    cr_expect_eq(sim_events_run(e), 6);
    sim_engine_free(e);
}

static void cancel_victim(sim_engine *e, void *ctx, uint64_t id)
{
    (void)id;
    tagged *t = ctx;
    cr_expect_eq(sim_cancel(e, t->lg->victim), 1);
    cr_expect_eq(sim_cancel(e, t->lg->victim), 0, "second cancel is a no-op");
    rec(e, ctx, id);
}

Test(engine, cancel_inside_handler_at_same_time)
{
    sim_engine *e = sim_engine_new(NULL);
    logger lg = {.n = 0};
    tagged a = {&lg, 1}, b = {&lg, 2}, c = {&lg, 3};
    sim_at(e, 1.0, cancel_victim, &a);
    lg.victim = sim_at(e, 1.0, rec, &b); /* same time, later in order: cancelled before it runs */
    sim_at(e, 1.0, rec, &c);
    cr_expect_eq(sim_pending(e), 3);
    sim_run(e, INFINITY);
    cr_expect_eq(lg.n, 2);
    cr_expect_eq(lg.log[0], 1);
    cr_expect_eq(lg.log[1], 3);
    cr_expect_eq(sim_pending(e), 0);
    sim_engine_free(e);
}

Test(engine, stale_ids_are_harmless)
{
    sim_engine *e = sim_engine_new(NULL);
    logger lg = {.n = 0};
    tagged a = {&lg, 1}, b = {&lg, 2};
    uint64_t id = sim_at(e, 1.0, rec, &a);
    sim_run(e, INFINITY);
    uint64_t id2 = sim_at(e, 2.0, rec, &b); /* reuses the slot */
    cr_expect_neq(id, id2);
    cr_expect_eq(sim_cancel(e, id), 0, "a fired id cannot cancel the slot's new event");
    cr_expect_eq(sim_cancel(e, 0), 0);
    cr_expect_eq(sim_cancel(e, 12345678901ull), 0);
    sim_run(e, INFINITY);
    cr_expect_eq(lg.n, 2);
    sim_engine_free(e);
}

Test(engine, past_times_clamp_and_nan_refused)
{
    sim_engine *e = sim_engine_new(NULL);
    logger lg = {.n = 0};
    tagged a = {&lg, 1}, b = {&lg, 2};
    sim_at(e, 5.0, rec, &a);
    sim_run(e, INFINITY);
    cr_expect_neq(sim_at(e, 1.0, rec, &b), 0);
    sim_run(e, INFINITY);
    cr_expect_eq(sim_now(e), 5.0, "time never goes backwards");
    cr_expect_eq(lg.n, 2);
    /* A NaN time is refused, and (like every failed sim_at) ends the run. */
    cr_expect_eq(sim_at(e, NAN, rec, &b), 0);
    cr_expect_eq(sim_error(e), DP_EINPUT);
    cr_expect_neq(sim_at(e, 6.0, rec, &b), 0);
    cr_expect_eq(sim_run(e, INFINITY), 0);
    cr_expect_eq(lg.n, 2);
    sim_engine_free(e);
}

Test(engine, run_until_stops_before_later_events)
{
    sim_engine *e = sim_engine_new(NULL);
    logger lg = {.n = 0};
    tagged t[3] = {{&lg, 0}, {&lg, 1}, {&lg, 2}};
    for (int i = 0; i < 3; i++)
        sim_at(e, i + 1.0, rec, &t[i]);
    cr_expect_eq(sim_run(e, 2.0), 2);
    cr_expect_eq(sim_next_time(e), 3.0);
    cr_expect_eq(sim_run(e, INFINITY), 1);
    cr_expect_eq(sim_next_time(e), INFINITY);
    sim_engine_free(e);
}

/* A pseudo-random workload whose handlers schedule and cancel more events:
 * two runs must produce the same log. */
typedef struct chaos {
    sim_engine *e;
    uint64_t x;
    uint64_t ids[32];
    double log[2000];
    int n;
} chaos;

static uint64_t next_rand(chaos *c)
{
    c->x ^= c->x << 13;
    c->x ^= c->x >> 7;
    c->x ^= c->x << 17;
    return c->x;
}

static void chaos_ev(sim_engine *e, void *ctx, uint64_t id)
{
    chaos *c = ctx;
    if (c->n >= 2000)
        return;
    c->log[c->n++] = sim_now(e) * 1e6 + (double)(id & 0xffff);
    uint64_t r = next_rand(c);
    if (r % 3 == 0)
        sim_cancel(e, c->ids[r % 32]);
    for (int k = 0; k < 2; k++)
        c->ids[(r >> (8 * k)) % 32] = sim_after(e, (double)((r >> (16 + 8 * k)) % 5), chaos_ev, c);
}

static void chaos_run(chaos *c)
{
    c->e = sim_engine_new(NULL);
    c->x = 88172645463325252ull;
    c->n = 0;
    sim_at(c->e, 0, chaos_ev, c);
    sim_run(c->e, INFINITY);
    sim_engine_free(c->e);
}

Test(engine, deterministic_event_log)
{
    static chaos a, b;
    chaos_run(&a);
    chaos_run(&b);
    cr_assert_eq(a.n, b.n);
    cr_expect_gt(a.n, 100);
    for (int i = 0; i < a.n; i++)
        cr_assert_eq(a.log[i], b.log[i], "event %d differs", i);
}

Test(engine, out_of_memory_is_reported)
{
    sim_engine *e = sim_engine_new(NULL);
    logger lg = {.n = 0};
    tagged a = {&lg, 1};
    dp_alloc_fail_after(1);
    uint64_t id = sim_at(e, 1.0, rec, &a);
    dp_alloc_fail_after(0);
    cr_expect_eq(id, 0);
    cr_expect_eq(sim_pending(e), 0);
    cr_expect_eq(sim_error(e), DP_ENOMEM);
    sim_engine_free(e);
}

/* The net's pattern: every step cancels a far-future event and schedules
 * it again.  Cancelled entries must not pile up: before compaction the 2^24
 * slots ran out after as many steps and the chain silently stopped. */
typedef struct churn {
    uint64_t far, steps, left;
} churn;

static void churn_step(sim_engine *e, void *ctx, uint64_t id)
{
    (void)id;
    churn *c = ctx;
    c->steps++;
    cr_assert_eq(sim_cancel(e, c->far), 1);
    c->far = sim_at(e, 1e9 + (double)(c->steps % 7), rec, NULL);
    if (--c->left && !sim_at(e, sim_now(e) + 1e-9, churn_step, c))
        return;
}

Test(engine, cancelled_events_do_not_accumulate)
{
    sim_engine *e = sim_engine_new(NULL);
    churn c = {0, 0, (1u << 24) + 1000};
    c.far = sim_at(e, 1e9, rec, NULL);
    sim_at(e, 0, churn_step, &c);
    sim_run(e, 1e8);
    cr_expect_eq(sim_error(e), 0);
    cr_expect_eq(c.steps, (1u << 24) + 1000);
    cr_expect_eq(sim_pending(e), 1);
    sim_engine_free(e);
}

/* A handler whose sim_at fails ends the run: nothing runs after it. */
static void resched_under_oom(sim_engine *e, void *ctx, uint64_t id)
{
    (void)id;
    dp_alloc_fail_after(1);
    for (int i = 0; i < 300 && sim_at(e, 2.0 + i, rec, ctx); i++)
        ;
    dp_alloc_fail_after(0);
}

Test(engine, failed_schedule_stops_the_run)
{
    sim_engine *e = sim_engine_new(NULL);
    logger lg = {.n = 0};
    tagged a = {&lg, 1};
    sim_at(e, 1.0, resched_under_oom, &a);
    sim_at(e, 3.0, rec, &a);
    sim_run(e, INFINITY);
    cr_expect_eq(sim_error(e), DP_ENOMEM);
    cr_expect_eq(lg.n, 0, "no event runs after a failed sim_at");
    cr_expect_eq(sim_now(e), 1.0);
    sim_engine_free(e);
}

/* The queue against a reference: many events, many of them at equal times,
 * some cancelled, some scheduled from handlers; they must fire in (time,
 * scheduling order), exactly.  Large enough to exercise the buckets and
 * their rebuilds. */
#define REF_N 200000
typedef struct ref_ev {
    double t;
    uint64_t order;
    int cancelled, fired;
} ref_ev;

typedef struct ref_run {
    sim_engine *e;
    ref_ev *ev;
    uint64_t *ids;
    size_t n;
    uint64_t next_order;
    uint64_t x;
    double last_t;
    uint64_t last_order;
    size_t fired;
    int bad;
} ref_run;

static ref_run *RR;

static uint64_t rr_rand(void)
{
    RR->x ^= RR->x << 13;
    RR->x ^= RR->x >> 7;
    RR->x ^= RR->x << 17;
    return RR->x;
}

static void ref_fire(sim_engine *e, void *ctx, uint64_t id)
{
    (void)id;
    ref_ev *v = ctx;
    v->fired = 1;
    RR->fired++;
    double t = sim_now(e);
    if (t != v->t || v->cancelled || t < RR->last_t || (t == RR->last_t && v->order < RR->last_order))
        RR->bad++;
    RR->last_t = t;
    RR->last_order = v->order;
    /* schedule one more now and then, at a coarse time (many ties) */
    if (RR->n < REF_N && (rr_rand() & 3) == 0) {
        ref_ev *w = &RR->ev[RR->n];
        w->t = t + (double)(rr_rand() % 64) * 0.25;
        w->order = RR->next_order++;
        RR->ids[RR->n++] = sim_at(e, w->t, ref_fire, w);
    }
}

/* After a run: every event not cancelled fired once, in order, and nothing
 * is left; then free the run. */
static void ref_check_free(ref_run *r)
{
    size_t want = 0;
    for (size_t i = 0; i < r->n; i++) {
        want += !r->ev[i].cancelled;
        cr_expect_eq(r->ev[i].fired, !r->ev[i].cancelled, "event %zu", i);
    }
    cr_expect_eq(r->bad, 0, "%d events out of order", r->bad);
    cr_expect_eq(r->fired, want);
    cr_expect_eq(sim_pending(r->e), 0);
    sim_engine_free(r->e);
    free(r->ev);
    free(r->ids);
}

Test(engine, matches_reference_order)
{
    static ref_run r;
    r = (ref_run){.x = 0x9e3779b97f4a7c15ull, .last_t = -1};
    RR = &r;
    r.ev = calloc(REF_N, sizeof *r.ev);
    r.ids = calloc(REF_N, sizeof *r.ids);
    r.e = sim_engine_new(NULL);
    size_t initial = REF_N / 2;
    for (size_t i = 0; i < initial; i++) {
        ref_ev *v = &r.ev[r.n];
        /* a mix: coarse times (ties), fine random times, a far tail */
        uint64_t k = rr_rand();
        v->t = (k & 1) ? (double)(k % 1000) : (double)(k % 1000000) * 1e-3 + ((k >> 40) % 7 == 0 ? 1e6 : 0);
        v->order = r.next_order++;
        r.ids[r.n++] = sim_at(r.e, v->t, ref_fire, v);
    }
    for (size_t i = 0; i < initial; i += 7) { /* cancel every seventh */
        cr_assert_eq(sim_cancel(r.e, r.ids[i]), 1);
        r.ev[i].cancelled = 1;
    }
    sim_run(r.e, INFINITY);
    ref_check_free(&r);
}

/* A run that starts with one event whose handler schedules 10^5 more (C-ADP's
 * first instant: one completion per device) feeds the heap directly past
 * its spill limit: the entries go back to top and buckets are built from
 * them.  Order must stay exact across that, with ties, cancellations and
 * events scheduled in between; then the same with every time equal (a heap
 * that is large for good must not be spilled again and again). */
static double fan_tie_t;
static void fan_out(sim_engine *e, void *ctx, uint64_t id)
{
    (void)ctx;
    (void)id;
    size_t first = RR->n, many = REF_N / 2;
    for (size_t i = 0; i < many; i++) {
        ref_ev *v = &RR->ev[RR->n];
        uint64_t k = rr_rand();
        v->t = fan_tie_t >= 0 ? fan_tie_t : (k & 1) ? (double)(k % 500) : (double)(k % 1000000) * 1e-4;
        v->order = RR->next_order++;
        RR->ids[RR->n++] = sim_at(e, v->t, ref_fire, v);
        if (i % 5 == 4) { /* cancel one of the earlier ones */
            size_t j = first + (size_t)(rr_rand() % (RR->n - first));
            if (!RR->ev[j].cancelled && sim_cancel(e, RR->ids[j]))
                RR->ev[j].cancelled = 1;
        }
    }
}

static void fan_out_run(double tie_t)
{
    static ref_run r;
    r = (ref_run){.x = 0x2545f4914f6cdd1dull, .last_t = -1};
    RR = &r;
    fan_tie_t = tie_t;
    r.ev = calloc(REF_N, sizeof *r.ev);
    r.ids = calloc(REF_N, sizeof *r.ids);
    r.e = sim_engine_new(NULL);
    cr_assert(sim_at(r.e, 0, fan_out, NULL));
    r.last_t = -1;
    sim_run(r.e, INFINITY);
    cr_expect_gt(r.n, REF_N / 2);
    ref_check_free(&r);
}

Test(engine, heap_fed_directly_spills_and_keeps_order)
{
    fan_out_run(-1);
}

Test(engine, heap_of_equal_times_keeps_order)
{
    fan_out_run(3.0);
}

/* The engine keeps a table of distinct handlers (a slot names its handler
 * by index): many distinct handlers, more than the table's first size,
 * must each fire with their own ctx, in time order. */
#define HANDLERS(X)                                                                                          \
    X(0)                                                                                                     \
    X(1)                                                                                                     \
    X(2)                                                                                                     \
    X(3)                                                                                                     \
    X(4)                                                                                                     \
    X(5)                                                                                                     \
    X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15) X(16) X(17) X(18) X(19) X(20) X(21) X(22) X(23)  \
        X(24) X(25) X(26) X(27) X(28) X(29) X(30) X(31) X(32) X(33) X(34) X(35) X(36) X(37) X(38) X(39)      \
            X(40) X(41) X(42) X(43) X(44) X(45) X(46) X(47) X(48) X(49) X(50) X(51) X(52) X(53) X(54) X(55)  \
                X(56) X(57) X(58) X(59) X(60) X(61) X(62) X(63) X(64) X(65) X(66) X(67) X(68) X(69)
#define DEF_H(k)                                                                                             \
    static void h_##k(sim_engine *e, void *ctx, uint64_t id)                                                 \
    {                                                                                                        \
        (void)e;                                                                                             \
        (void)id;                                                                                            \
        tagged *t = ctx;                                                                                     \
        cr_expect_eq(t->tag % 70, k, "handler %d ran event tagged %d", k, t->tag);                           \
        rec(e, ctx, id);                                                                                     \
    }
HANDLERS(DEF_H)
#define REF_H(k) h_##k,
static const sim_handler many_handlers[] = {HANDLERS(REF_H)};

Test(engine, many_distinct_handlers)
{
    sim_engine *e = sim_engine_new(NULL);
    static logger lg;
    static tagged t[140];
    lg = (logger){.n = 0};
    int nh = (int)(sizeof many_handlers / sizeof many_handlers[0]);
    cr_assert_eq(nh, 70);
    /* tag i fires at time 140 - i: the reverse of scheduling order; each
     * handler is used twice, the second time after all others were added */
    for (int i = 0; i < 140; i++) {
        t[i] = (tagged){&lg, i};
        cr_assert(sim_at(e, 140.0 - i, many_handlers[i % 70], &t[i]) != 0);
    }
    cr_expect_eq(sim_run(e, INFINITY), 140);
    cr_assert_eq(lg.n, LOGN);
    for (int i = 0; i < LOGN; i++)
        cr_expect_eq(lg.log[i], 139 - i, "position %d", i);
    sim_engine_free(e);
}

/* Compaction over the chunk lists: with many events in the buckets and in
 * top (several chunks per list), cancelling two thirds of them compacts
 * the lists in place; every survivor must still fire once, in order, and
 * no cancelled one. */
#define CMP_N 60000
typedef struct cmp_ev {
    int cancelled, fired;
} cmp_ev;
static double cmp_last;
static int cmp_bad;
static void cmp_fire(sim_engine *e, void *ctx, uint64_t id)
{
    (void)id;
    cmp_ev *v = ctx;
    if (v->cancelled || v->fired || sim_now(e) < cmp_last)
        cmp_bad++;
    v->fired = 1;
    cmp_last = sim_now(e);
}

Test(engine, compaction_keeps_order_across_chunks)
{
    sim_engine *e = sim_engine_new(NULL);
    static uint64_t ids[CMP_N];
    static cmp_ev ev[CMP_N];
    cmp_last = -1;
    cmp_bad = 0;
    uint64_t x = 0x2545f4914f6cdd1dull;
    for (int i = 0; i < CMP_N; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        ev[i] = (cmp_ev){0, 0};
        ids[i] = sim_at(e, (double)(x % 1000000) * 1e-3, cmp_fire, &ev[i]);
        cr_assert(ids[i] != 0);
    }
    /* fire a few: the first rebuild has spread the rest over buckets and top */
    for (int k = 0; k < 100; k++)
        cr_assert_eq(sim_step(e), 1);
    size_t live = CMP_N - 100;
    for (int i = 0; i < CMP_N; i++)
        if (i % 3 != 0 && !ev[i].fired) {
            cr_assert_eq(sim_cancel(e, ids[i]), 1);
            ev[i].cancelled = 1;
            live--;
        }
    cr_expect_eq(sim_pending(e), live);
    sim_run(e, INFINITY);
    cr_expect_eq(cmp_bad, 0, "%d events out of order, twice or cancelled", cmp_bad);
    for (int i = 0; i < CMP_N; i++)
        cr_expect_eq(ev[i].fired, !ev[i].cancelled, "event %d", i);
    cr_expect_eq(sim_pending(e), 0);
    sim_engine_free(e);
}

/* A rebuild that runs out of memory (the bucket table, then the chunk
 * reserve) moves nothing: the step reports no event, and once memory is
 * back every event fires, in order. */
Test(engine, out_of_memory_in_rebuild_loses_nothing)
{
    for (long fail_at = 1; fail_at <= 2; fail_at++) {
        sim_engine *e = sim_engine_new(NULL);
        static cmp_ev ev[20000];
        cmp_last = -1;
        cmp_bad = 0;
        for (int i = 0; i < 20000; i++) {
            ev[i] = (cmp_ev){0, 0};
            cr_assert(sim_at(e, (double)((i * 7919) % 20000), cmp_fire, &ev[i]) != 0);
        }
        dp_alloc_fail_after(fail_at);
        int ran = sim_step(e);
        dp_alloc_fail_after(0);
        cr_expect_eq(ran, 0, "fail_at %ld: no event runs without its rebuild", fail_at);
        cr_expect_eq(sim_error(e), DP_ENOMEM, "fail_at %ld: the queue is not empty, it ran out of memory",
                     fail_at);
        cr_expect_eq(sim_pending(e), 20000);
        cr_expect_eq(sim_run(e, INFINITY), 20000);
        cr_expect_eq(sim_error(e), 0, "memory came back: no error left");
        cr_expect_eq(cmp_bad, 0);
        for (int i = 0; i < 20000; i++)
            cr_expect_eq(ev[i].fired, 1, "event %d", i);
        sim_engine_free(e);
    }
}

/* sim_set_prefetch: the hint runs before each event for the event after it
 * (the earliest pending then), with that event's ctx, and changes nothing:
 * the order is the same with and without it. */
static int pf_seen[16], pf_n;
static void pf_rec(void *pctx, void *ctx)
{
    (void)pctx;
    if (pf_n < 16)
        pf_seen[pf_n++] = ((tagged *)ctx)->tag;
}

static void other(sim_engine *e, void *ctx, uint64_t id)
{
    rec(e, ctx, id);
}

Test(engine, prefetch_hint_sees_the_next_event_and_changes_nothing)
{
    for (int with = 0; with < 2; with++) {
        sim_engine *e = sim_engine_new(NULL);
        logger lg = {.n = 0};
        tagged t[6];
        double times[6] = {3.0, 1.0, 2.0, 1.0, 1.0, 0.5};
        pf_n = 0;
        if (with)
            cr_assert_eq(sim_set_prefetch(e, rec, pf_rec, NULL), 0);
        for (int i = 0; i < 6; i++) {
            t[i] = (tagged){&lg, i};
            cr_assert(sim_at(e, times[i], i == 2 ? other : rec, &t[i]) != 0);
        }
        cr_expect_eq(sim_run(e, INFINITY), 6);
        int want[6] = {5, 1, 3, 4, 2, 0};
        for (int i = 0; i < 6; i++)
            cr_expect_eq(lg.log[i], want[i], "position %d: got %d want %d", i, lg.log[i], want[i]);
        if (with) { /* before each of 5, 1, 3, 4, 2 runs: the next (2's handler has no hint) */
            int pf_want[] = {1, 3, 4, 0};
            cr_expect_eq(pf_n, 4, "%d hints", pf_n);
            for (int i = 0; i < 4 && i < pf_n; i++)
                cr_expect_eq(pf_seen[i], pf_want[i], "hint %d: %d", i, pf_seen[i]);
        } else {
            cr_expect_eq(pf_n, 0);
        }
        sim_engine_free(e);
    }
}

/* The bottom of the queue is a sorted run (a bucket counting-sorted when it
 * becomes current) beside a heap (events that land before the next bucket,
 * and buckets the run cannot take).  The hold model at several sizes, with
 * ties, cancellations and events for now: every event fires once, in
 * (time, scheduling) order. */
#define HOLD_N 40000
typedef struct hold_ev {
    double t;
    uint64_t order, id;
    int cancelled, fired;
} hold_ev;
static hold_ev hold_ev_[HOLD_N];
static size_t hold_n, hold_fired;
static uint64_t hold_x, hold_order, hold_last_order;
static double hold_last_t;
static int hold_bad;
static int hold_quiet; /* hold_fire only checks, schedules nothing */

static uint64_t hold_rand(void)
{
    hold_x ^= hold_x << 13;
    hold_x ^= hold_x >> 7;
    hold_x ^= hold_x << 17;
    return hold_x;
}

static void hold_sched(sim_engine *e, double t);
static void hold_fire(sim_engine *e, void *ctx, uint64_t id)
{
    (void)id;
    hold_ev *v = ctx;
    double t = sim_now(e);
    if (v->fired || v->cancelled || t != v->t || t < hold_last_t ||
        (t == hold_last_t && v->order < hold_last_order))
        hold_bad++;
    v->fired = 1;
    hold_fired++;
    hold_last_t = t;
    hold_last_order = v->order;
    if (hold_quiet)
        return;
    uint64_t k = hold_rand();
    if (k % 16 == 0) /* one for now */
        hold_sched(e, t);
    else if (k % 16 == 1) /* one on a coarse grid (ties) */
        hold_sched(e, ceil(t) + (double)(k >> 40 & 7));
    else /* the hold model's increment, mean 1 */
        hold_sched(e, t - log((double)((k >> 11) + 1) * 0x1.0p-53));
    if (k % 16 == 2 && hold_n > 1) { /* cancel one pending at random */
        hold_ev *w = &hold_ev_[(k >> 20) % hold_n];
        if (!w->fired && !w->cancelled && sim_cancel(e, w->id))
            w->cancelled = 1;
    }
}

static void hold_sched(sim_engine *e, double t)
{
    if (hold_n == HOLD_N)
        return;
    hold_ev *v = &hold_ev_[hold_n++];
    *v = (hold_ev){.t = t, .order = hold_order++};
    v->id = sim_at(e, t, hold_fire, v);
    cr_assert(v->id != 0);
}

static void hold_reset(uint64_t seed)
{
    hold_n = hold_fired = 0;
    hold_x = seed;
    hold_order = 0;
    hold_last_t = -1;
    hold_bad = 0;
    hold_quiet = 0;
}

/* After a run: every event not cancelled fired once, in order. */
static void hold_check(sim_engine *e, const char *what, int k)
{
    cr_expect_eq(hold_bad, 0, "%s %d: %d events out of order", what, k, hold_bad);
    for (size_t i = 0; i < hold_n; i++)
        cr_expect_eq(hold_ev_[i].fired, !hold_ev_[i].cancelled, "%s %d: event %zu", what, k, i);
    cr_expect_eq(sim_pending(e), 0);
}

Test(engine, sorted_run_and_heap_keep_order_in_the_hold_model)
{
    size_t sizes[] = {10, 70, 1000, 5000, 20000};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        sim_engine *e = sim_engine_new(NULL);
        hold_reset(0x9e3779b97f4a7c15ull + s);
        for (size_t i = 0; i < sizes[s]; i++)
            hold_sched(e, (double)(hold_rand() % 1000) * 1e-3 * (double)sizes[s]);
        sim_run(e, INFINITY);
        size_t want = 0;
        for (size_t i = 0; i < hold_n; i++) {
            want += !hold_ev_[i].cancelled;
            cr_expect_eq(hold_ev_[i].fired, !hold_ev_[i].cancelled, "size %zu, event %zu", sizes[s], i);
        }
        cr_expect_eq(hold_bad, 0, "size %zu: %d events out of order", sizes[s], hold_bad);
        cr_expect_eq(hold_fired, want);
        cr_expect_eq(hold_n, HOLD_N);
        cr_expect_eq(sim_pending(e), 0);
        sim_engine_free(e);
    }
}

/* A bucket whose entries crowd into a few fine bins with their keys out of
 * order (a spilled heap goes back to top in heap order) is abandoned by the
 * run's insertion sort and heapified instead: the order must not change. */
static void crowd_out(sim_engine *e, void *ctx, uint64_t id)
{
    (void)ctx;
    (void)id;
    for (size_t i = 0; i < 36000; i++) /* 360 times, 100 events each, in scrambled order */
        hold_sched(e, 1.0 + (double)((i * 7919) % 360));
}

Test(engine, crowded_buckets_out_of_key_order_keep_order)
{
    sim_engine *e = sim_engine_new(NULL);
    hold_reset(0x2545f4914f6cdd1dull);
    cr_assert(sim_at(e, 0, crowd_out, NULL) != 0);
    sim_run(e, INFINITY);
    hold_check(e, "crowded", 0);
    sim_engine_free(e);
}

/* A heap fed directly past its spill limit while the run still holds
 * entries: both go back to top (with no bucket left, every new event goes
 * to top, so nothing may stay in the bottom that a new event could
 * precede).  66 events at 1, 2, ..., 66 make one rebuild into a few
 * buckets; one of them, in turn each of several along the window, then
 * schedules a burst for now (into the heap): from the last bucket (t = 56
 * with the rebuild's present sizes), the burst spills with the run's
 * rest. */
static void spill_out(sim_engine *e, void *ctx, uint64_t id)
{
    hold_fire(e, ctx, id);
    for (size_t i = 0; i < 36000; i++)
        hold_sched(e, sim_now(e));
}

Test(engine, spill_with_a_run_keeps_order)
{
    for (int trigger = 5; trigger < 66; trigger += 10) {
        sim_engine *e = sim_engine_new(NULL);
        hold_reset(0x2545f4914f6cdd1dull);
        hold_quiet = 1; /* the buckets stay as built */
        for (int i = 0; i < 66; i++) {
            hold_ev *v = &hold_ev_[hold_n++];
            *v = (hold_ev){.t = 1.0 + i, .order = hold_order++};
            v->id = sim_at(e, v->t, i == trigger ? spill_out : hold_fire, v);
            cr_assert(v->id != 0);
        }
        sim_run(e, INFINITY);
        hold_check(e, "trigger", trigger);
        sim_engine_free(e);
    }
}

/* sim_rebase while the sorted run holds the remaining events (all at now):
 * they keep their order at time 0, ahead of anything scheduled after. */
Test(engine, rebase_with_a_run)
{
    sim_engine *e = sim_engine_new(NULL);
    static logger lg;
    static tagged t[300];
    static uint64_t ids[300];
    lg = (logger){.n = 0};
    for (int i = 0; i < 300; i++) { /* tags 0-4 at time 1, the rest later */
        t[i] = (tagged){&lg, i};
        ids[i] = sim_at(e, i < 5 ? 1.0 : 1.0 + i, rec, &t[i]);
        cr_assert(ids[i] != 0);
    }
    cr_assert_eq(sim_step(e), 1); /* tag 0, from the run */
    cr_expect_eq(sim_now(e), 1.0);
    cr_expect_eq(sim_rebase(e), DP_EINPUT, "later events pending: no rebase");
    for (int i = 5; i < 300; i++)
        cr_assert_eq(sim_cancel(e, ids[i]), 1);
    cr_assert_eq(sim_rebase(e), 0);
    cr_expect_eq(sim_now(e), 0.0);
    cr_expect_eq(sim_next_time(e), 0.0);
    static tagged late = {&lg, 99};
    late.lg = &lg;
    cr_assert(sim_at(e, 0, rec, &late) != 0);
    cr_expect_eq(sim_run(e, INFINITY), 5);
    int want[] = {0, 1, 2, 3, 4, 99};
    cr_assert_eq(lg.n, 6);
    for (int i = 0; i < 6; i++)
        cr_expect_eq(lg.log[i], want[i], "position %d: %d", i, lg.log[i]);
    sim_engine_free(e);
}

/* Infinite times fire after every finite one, in scheduling order among
 * themselves, also when everything queued is infinite (a rebuild of
 * infinite times) and a finite event comes after. */
Test(engine, infinite_times_fire_last_in_order)
{
    sim_engine *e = sim_engine_new(NULL);
    static logger lg;
    static tagged t[LOGN];
    lg = (logger){.n = 0};
    for (int i = 0; i < 40; i++) {
        t[i] = (tagged){&lg, i};
        cr_assert(sim_at(e, INFINITY, rec, &t[i]) != 0);
    }
    cr_expect_eq(sim_next_time(e), INFINITY); /* the queue has been refilled from infinite times */
    for (int i = 40; i < 50; i++) {
        t[i] = (tagged){&lg, i};
        cr_assert(sim_at(e, i % 2 ? INFINITY : 100.0 - i, rec, &t[i]) != 0);
    }
    cr_expect_eq(sim_run(e, INFINITY), 50);
    int k = 0;
    for (int i = 48; i >= 40; i -= 2) /* the finite ones, 52 to 60 */
        cr_expect_eq(lg.log[k++], i, "position %d", k);
    for (int i = 0; i < 40; i++)
        cr_expect_eq(lg.log[k++], i, "position %d", k);
    for (int i = 41; i < 50; i += 2)
        cr_expect_eq(lg.log[k++], i, "position %d", k);
    sim_engine_free(e);
}

/* One allocation failing anywhere in a run (the bucket table, the chunks,
 * the run's arrays, the heap): either the queue takes another way (the run's
 * arrays missing: the bucket goes to the heap) or the step reports no event
 * and DP_ENOMEM until memory is back; no event is lost or reordered. */
Test(engine, one_failed_allocation_loses_nothing)
{
    for (long k = 1; k <= 8; k++) {
        sim_engine *e = sim_engine_new(NULL);
        static cmp_ev ev[2000];
        cmp_last = -1;
        cmp_bad = 0;
        for (int i = 0; i < 2000; i++) {
            ev[i] = (cmp_ev){0, 0};
            cr_assert(sim_at(e, (double)((i * 7919) % 2000), cmp_fire, &ev[i]) != 0);
        }
        dp_alloc_fail_once(k);
        uint64_t ran = sim_run(e, INFINITY);
        dp_alloc_fail_after(0);
        if (ran < 2000)
            cr_expect_eq(sim_error(e), DP_ENOMEM, "k %ld: stopped after %llu events without saying why", k,
                         (unsigned long long)ran);
        ran += sim_run(e, INFINITY);
        cr_expect_eq(ran, 2000, "k %ld", k);
        cr_expect_eq(sim_error(e), 0, "k %ld", k);
        cr_expect_eq(cmp_bad, 0, "k %ld", k);
        for (int i = 0; i < 2000; i++)
            cr_expect_eq(ev[i].fired, 1, "k %ld: event %d", k, i);
        sim_engine_free(e);
    }
}
