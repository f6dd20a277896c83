/* Network: closed forms of docs/MODEL.md section 2, matched to 1e-9 relative. */
#include <criterion/criterion.h>
#include <math.h>

#include "engine_group.h"
#include "net.h"

#include "test_common.h"

typedef struct done_log {
    double t[64];
    int who[64];
    int n;
    sim_engine *e;
} done_log;

typedef struct tagctx {
    done_log *lg;
    int tag;
} tagctx;

static void on_done(void *ctx, uint64_t id)
{
    (void)id;
    tagctx *t = ctx;
    t->lg->t[t->tag] = sim_now(t->lg->e);
    t->lg->who[t->lg->n++] = t->tag;
}

TEST_SUITE_NO_LEAKS(net);

typedef struct fixture {
    sim_engine *e;
    net *n;
    done_log lg;
    tagctx tags[64];
} fixture;

static void fx_init(fixture *fx)
{
    fx->e = sim_engine_new(NULL);
    fx->n = net_new(fx->e, NULL);
    fx->lg.n = 0;
    fx->lg.e = fx->e;
    for (int i = 0; i < 64; i++)
        fx->tags[i] = (tagctx){&fx->lg, i};
}

static void fx_free(fixture *fx)
{
    net_free(fx->n);
    sim_engine_free(fx->e);
}

Test(net, one_flow_one_link)
{
    fixture fx;
    fx_init(&fx);
    int l = net_link_add(fx.n, 12.5e6, NULL, "l"); /* 100 Mbit/s */
    double S = 500170384.0, lat = 0.020;
    cr_assert(net_flow_start(fx.n, &l, 1, S, lat, INFINITY, on_done, &fx.tags[0]));
    sim_run(fx.e, INFINITY);
    cr_assert_eq(fx.lg.n, 1);
    expect_close(fx.lg.t[0], lat + S / 12.5e6);
    expect_close(net_link_bytes(fx.n, l), S);
    expect_close(net_link_busy_s(fx.n, l), S / 12.5e6);
    fx_free(&fx);
}

Test(net, path_bottleneck_is_min_capacity)
{
    fixture fx;
    fx_init(&fx);
    int p[3] = {net_link_add(fx.n, 1e9, NULL, "a"), net_link_add(fx.n, 3e6, NULL, "b"),
                net_link_add(fx.n, INFINITY, NULL, "c")};
    net_flow_start(fx.n, p, 3, 7e6, 0.1, INFINITY, on_done, &fx.tags[0]);
    sim_run(fx.e, INFINITY);
    expect_close(fx.lg.t[0], 0.1 + 7e6 / 3e6);
    fx_free(&fx);
}

Test(net, k_equal_flows_share_a_bottleneck)
{
    for (int k = 1; k <= 16; k *= 2) {
        fixture fx;
        fx_init(&fx);
        int nic = net_link_add(fx.n, 1.25e9, NULL, "nic");
        double S = 3e8, lat = 0.03;
        for (int i = 0; i < k; i++) {
            int acc = net_link_add(fx.n, 1e12, NULL, "access");
            int path[2] = {nic, acc};
            net_flow_start(fx.n, path, 2, S, lat, INFINITY, on_done, &fx.tags[i]);
        }
        sim_run(fx.e, INFINITY);
        cr_assert_eq(fx.lg.n, k);
        for (int i = 0; i < k; i++)
            expect_close(fx.lg.t[i], lat + k * S / 1.25e9);
        expect_close(net_link_bytes(fx.n, nic), k * S);
        fx_free(&fx);
    }
}

/* Three flows, two links: A on L1, B on L1+L2, C on L2; L1 = 10, L2 = 4.
 * Max-min: L2 is the bottleneck at 2 each, A takes the rest of L1 (8).
 * Sizes A=40, B=20, C=40: A ends at 5 (B has 10 left, C 30); B stays at 2
 * (L2 still shared) and ends at 10; C has 20 left and runs alone at 4: 15. */
Test(net, max_min_with_different_bottlenecks)
{
    fixture fx;
    fx_init(&fx);
    int L1 = net_link_add(fx.n, 10, NULL, "L1"), L2 = net_link_add(fx.n, 4, NULL, "L2");
    int pa[1] = {L1}, pb[2] = {L1, L2}, pc[1] = {L2};
    uint64_t a = net_flow_start(fx.n, pa, 1, 40, 0, INFINITY, on_done, &fx.tags[0]);
    uint64_t b = net_flow_start(fx.n, pb, 2, 20, 0, INFINITY, on_done, &fx.tags[1]);
    uint64_t c = net_flow_start(fx.n, pc, 1, 40, 0, INFINITY, on_done, &fx.tags[2]);
    net_reshare_now(fx.n);
    expect_close(net_flow_rate(fx.n, a), 8);
    expect_close(net_flow_rate(fx.n, b), 2);
    expect_close(net_flow_rate(fx.n, c), 2);
    sim_run(fx.e, INFINITY);
    expect_close(fx.lg.t[0], 5);
    expect_close(fx.lg.t[1], 10);
    expect_close(fx.lg.t[2], 15);
    cr_expect_eq(fx.lg.who[0], 0);
    cr_expect_eq(fx.lg.who[1], 1);
    cr_expect_eq(fx.lg.who[2], 2);
    fx_free(&fx);
}

/* The classic parking-lot: a long flow over n links, one short flow per
 * link; every link capacity 1 -> every flow gets 1/2. */
Test(net, parking_lot_fair_shares)
{
    fixture fx;
    fx_init(&fx);
    int L[4];
    for (int i = 0; i < 4; i++)
        L[i] = net_link_add(fx.n, 1, NULL, "l");
    uint64_t longf = net_flow_start(fx.n, L, 4, 100, 0, INFINITY, NULL, NULL);
    uint64_t s[4];
    for (int i = 0; i < 4; i++)
        s[i] = net_flow_start(fx.n, &L[i], 1, 100, 0, INFINITY, NULL, NULL);
    net_reshare_now(fx.n);
    expect_close(net_flow_rate(fx.n, longf), 0.5);
    for (int i = 0; i < 4; i++)
        expect_close(net_flow_rate(fx.n, s[i]), 0.5);
    fx_free(&fx);
}

/* Latency is paid before the data: a second flow that becomes active later
 * takes half the link from then on. */
Test(net, latency_then_sharing)
{
    fixture fx;
    fx_init(&fx);
    int l = net_link_add(fx.n, 100, NULL, "l");
    net_flow_start(fx.n, &l, 1, 300, 1.0, INFINITY, on_done, &fx.tags[0]); /* active at 1 */
    net_flow_start(fx.n, &l, 1, 100, 2.0, INFINITY, on_done, &fx.tags[1]); /* active at 2 */
    sim_run(fx.e, INFINITY);
    /* 1..2: A alone 100 -> 200 left; 2..4: 50 each, B done at 4, A 100 left; A alone: 5 */
    expect_close(fx.lg.t[1], 4);
    expect_close(fx.lg.t[0], 5);
    fx_free(&fx);
}

typedef struct capset {
    net *n;
    int link;
    double cap;
} capset;

static void set_cap(sim_engine *e, void *ctx, uint64_t id)
{
    (void)e;
    (void)id;
    capset *c = ctx;
    net_link_set_capacity(c->n, c->link, c->cap);
}

Test(net, capacity_step_mid_transfer)
{
    fixture fx;
    fx_init(&fx);
    int l = net_link_add(fx.n, 100, NULL, "l");
    capset cs = {fx.n, l, 50};
    sim_at(fx.e, 2.0, set_cap, &cs);
    net_flow_start(fx.n, &l, 1, 300, 0, INFINITY, on_done, &fx.tags[0]);
    sim_run(fx.e, INFINITY);
    expect_close(fx.lg.t[0], 4.0); /* 200 by t=2, 100 more at 50 */
    fx_free(&fx);
}

Test(net, zero_capacity_outage_stalls_then_resumes)
{
    fixture fx;
    fx_init(&fx);
    int l = net_link_add(fx.n, 100, NULL, "l");
    capset off = {fx.n, l, 0}, on = {fx.n, l, 100};
    sim_at(fx.e, 1.0, set_cap, &off);
    sim_at(fx.e, 3.0, set_cap, &on);
    net_flow_start(fx.n, &l, 1, 300, 0, INFINITY, on_done, &fx.tags[0]);
    uint64_t ran = sim_run(fx.e, INFINITY);
    expect_close(fx.lg.t[0], 5.0);
    cr_expect_lt(ran, 20, "an outage must not spin (%llu events)", (unsigned long long)ran);
    fx_free(&fx);
}

Test(net, permanent_outage_empties_the_queue)
{
    fixture fx;
    fx_init(&fx);
    int l = net_link_add(fx.n, 0, NULL, "dead");
    net_flow_start(fx.n, &l, 1, 10, 0, INFINITY, on_done, &fx.tags[0]);
    sim_run(fx.e, INFINITY);
    cr_expect_eq(fx.lg.n, 0);
    cr_expect_eq(net_flows_active(fx.n), 1);
    cr_expect_eq(sim_pending(fx.e), 0);
    fx_free(&fx);
}

Test(net, tcp_window_cap)
{
    fixture fx;
    fx_init(&fx);
    int l = net_link_add(fx.n, 100, NULL, "l");
    /* window 3 bytes, RTT 0.1 s -> 30 B/s; the other flow takes the rest */
    uint64_t a = net_flow_start(fx.n, &l, 1, 60, 0, 3 / 0.1, on_done, &fx.tags[0]);
    uint64_t b = net_flow_start(fx.n, &l, 1, 140, 0, INFINITY, on_done, &fx.tags[1]);
    net_reshare_now(fx.n);
    expect_close(net_flow_rate(fx.n, a), 30);
    expect_close(net_flow_rate(fx.n, b), 70);
    sim_run(fx.e, INFINITY);
    expect_close(fx.lg.t[0], 2.0);
    expect_close(fx.lg.t[1], 2.0);
    fx_free(&fx);
}

Test(net, trace_driven_capacity)
{
    fixture fx;
    fx_init(&fx);
    /* 100 B/s on [0,2), 0 on [2,3), 50 on [3,...) */
    trace tr = {
        .n = 3, .t_s = (double[]){0, 2, 3}, .value = (double[]){100, 0, 50}, .loop = 0, .period_s = 0};
    int l = net_link_add(fx.n, 0, &tr, "traced");
    net_flow_start(fx.n, &l, 1, 300, 0, INFINITY, on_done, &fx.tags[0]);
    sim_run(fx.e, INFINITY);
    expect_close(fx.lg.t[0], 5.0); /* 200 by 2, stall, 100 at 50 from 3 */
    fx_free(&fx);
}

Test(net, zero_byte_flow_costs_latency_only)
{
    fixture fx;
    fx_init(&fx);
    int l = net_link_add(fx.n, 100, NULL, "l");
    net_flow_start(fx.n, &l, 1, 0, 0.25, INFINITY, on_done, &fx.tags[0]);
    sim_run(fx.e, INFINITY);
    expect_close(fx.lg.t[0], 0.25);
    fx_free(&fx);
}

Test(net, bad_arguments_refused)
{
    fixture fx;
    fx_init(&fx);
    int l = net_link_add(fx.n, 100, NULL, "l");
    int bad = 99;
    cr_expect_eq(net_flow_start(fx.n, &bad, 1, 1, 0, INFINITY, NULL, NULL), 0);
    cr_expect_eq(net_flow_start(fx.n, &l, 1, NAN, 0, INFINITY, NULL, NULL), 0);
    cr_expect_eq(net_flow_start(fx.n, &l, 1, -1, 0, INFINITY, NULL, NULL), 0);
    cr_expect_eq(net_flow_start(fx.n, &l, 1, 1, -1, INFINITY, NULL, NULL), 0);
    cr_expect_eq(net_flow_start(fx.n, &l, 1, 1, 0, 0, NULL, NULL), 0);
    cr_expect_lt(net_link_add(fx.n, NAN, NULL, "x"), 0);
    cr_expect_lt(net_link_add(fx.n, -5, NULL, "x"), 0);
    fx_free(&fx);
}

/* A looping trace on a link no flow uses: its breakpoints change no share,
 * so they must not re-run progressive filling over the flows elsewhere
 * (C-ADP on geo-3sites: quadratic in devices).  Completion times are the
 * same as without the trace. */
Test(net, idle_link_changes_skip_the_fill)
{
    static const char csv[] = "0,8000000\n0.01,16000000\n";
    trace_opts o = {TRACE_FMT_CSV, 0, 0, 1, 1};
    dp_err err = {0};
    trace *tr = trace_read_buffer("idle.csv", csv, sizeof csv - 1, &o, &err);
    cr_assert_not_null(tr, "%s", err.msg);
    double t_done[2][8];
    uint64_t fills[2];
    for (int with = 0; with < 2; with++) {
        fixture fx;
        fx_init(&fx);
        int l = net_link_add(fx.n, 1e6, NULL, "shared");
        if (with)
            cr_assert(net_link_add(fx.n, 0, tr, "idle") == 1);
        for (int k = 0; k < 8; k++)
            cr_assert(net_flow_start(fx.n, &l, 1, 1e5 * (k + 1), 0, INFINITY, on_done, &fx.tags[k]));
        sim_run(fx.e, 10); /* the trace loops forever: stop after the flows (3.6 s) */
        cr_assert_eq(fx.lg.n, 8);
        for (int k = 0; k < 8; k++)
            t_done[with][k] = fx.lg.t[k];
        fills[with] = net_fills(fx.n);
        if (with)
            cr_expect_gt(net_reshares(fx.n), 100, "the idle link's breakpoints still count as reshares");
        fx_free(&fx);
    }
    for (int k = 0; k < 8; k++)
        expect_close(t_done[1][k], t_done[0][k]);
    cr_expect_eq(fills[1], fills[0], "fills %llu with the idle trace, %llu without",
                 (unsigned long long)fills[1], (unsigned long long)fills[0]);
    trace_free(tr);
}

/* ---- the dynamic world: outages (net_link_set_down), cut flows, peak use ---- */

typedef struct downset {
    net *n;
    int link, down;
} downset;

static void set_down(sim_engine *e, void *ctx, uint64_t id)
{
    (void)e;
    (void)id;
    downset *d = ctx;
    net_link_set_down(d->n, d->link, d->down);
}

/* An outage overrides a capacity change inside it: the new capacity
 * applies once the link is back.  300 B: 100 by t=1 at 100 B/s, down
 * [1, 3), capacity set to 50 at t=2, 200 more at 50 from t=3: ends at 7. */
Test(net, outage_overrides_capacity_until_it_ends)
{
    fixture fx;
    fx_init(&fx);
    int l = net_link_add(fx.n, 100, NULL, "l");
    downset off = {fx.n, l, 1}, on = {fx.n, l, 0};
    capset half = {fx.n, l, 50};
    sim_at(fx.e, 1.0, set_down, &off);
    sim_at(fx.e, 2.0, set_cap, &half);
    sim_at(fx.e, 3.0, set_down, &on);
    net_flow_start(fx.n, &l, 1, 300, 0, INFINITY, on_done, &fx.tags[0]);
    sim_run(fx.e, INFINITY);
    expect_close(fx.lg.t[0], 7.0);
    expect_close(net_link_busy_s(fx.n, l), 7.0); /* a stalled flow keeps its link busy */
    fx_free(&fx);
}

typedef struct cutter {
    net *n;
    uint64_t id;
    double sent;
} cutter;

static void do_cut(sim_engine *e, void *ctx, uint64_t id)
{
    (void)e;
    (void)id;
    cutter *c = ctx;
    cr_expect_eq(net_flow_cancel(c->n, c->id, &c->sent), 0);
}

/* Two flows share 100 B/s; one is cut at t=2 after 100 B: no callback, its
 * 100 B count on the link, the other gets the whole link: 300 B ends at
 * 2 + 200/100 = 4 s.  Peak use of the link: 1. */
Test(net, cut_flow_counts_bytes_sent_and_frees_its_share)
{
    fixture fx;
    fx_init(&fx);
    int l = net_link_add(fx.n, 100, NULL, "l");
    uint64_t a = net_flow_start(fx.n, &l, 1, 1000, 0, INFINITY, on_done, &fx.tags[0]);
    net_flow_start(fx.n, &l, 1, 300, 0, INFINITY, on_done, &fx.tags[1]);
    cutter c = {fx.n, a, -1};
    sim_at(fx.e, 2.0, do_cut, &c);
    sim_run(fx.e, INFINITY);
    cr_expect_eq(fx.lg.n, 1);
    cr_expect_eq(fx.lg.who[0], 1);
    expect_close(fx.lg.t[1], 4.0);
    expect_close(c.sent, 100);
    expect_close(net_link_bytes(fx.n, l), 400);
    expect_close(net_link_peak_util(fx.n, l), 1.0);
    cr_expect_eq(net_flow_cancel(fx.n, a, NULL), DP_EINPUT); /* gone */
    fx_free(&fx);
}

/* A flow cut in its latency phase never starts and sends nothing; a link
 * with a rate-capped flow peaks at cap / capacity. */
Test(net, cut_pending_flow_and_partial_peak)
{
    fixture fx;
    fx_init(&fx);
    int l = net_link_add(fx.n, 100, NULL, "l");
    uint64_t a = net_flow_start(fx.n, &l, 1, 50, 1.0, INFINITY, on_done, &fx.tags[0]);
    net_flow_start(fx.n, &l, 1, 50, 0, 25, on_done, &fx.tags[1]);
    cutter c = {fx.n, a, -1};
    sim_at(fx.e, 0.5, do_cut, &c);
    sim_run(fx.e, INFINITY);
    cr_expect_eq(fx.lg.n, 1);
    expect_close(c.sent, 0);
    expect_close(fx.lg.t[1], 2.0);
    expect_close(net_link_peak_util(fx.n, l), 0.25);
    cr_expect_eq(net_flows_pending(fx.n), 0);
    fx_free(&fx);
}

/* Caches of capacity-derived figures (the analytic collective's ring
 * rates) are keyed on this count: every way a capacity changes bumps it. */
Test(net, cap_changes_counts_every_capacity_change)
{
    fixture fx;
    fx_init(&fx);
    uint64_t c0 = net_cap_changes(fx.n);
    int l = net_link_add(fx.n, 1e6, NULL, "l");
    uint64_t c1 = net_cap_changes(fx.n);
    cr_expect_gt(c1, c0);
    cr_assert_eq(net_link_set_capacity(fx.n, l, 2e6), 0);
    uint64_t c2 = net_cap_changes(fx.n);
    cr_expect_gt(c2, c1);
    cr_assert_eq(net_link_set_down(fx.n, l, 1), 0);
    uint64_t c3 = net_cap_changes(fx.n);
    cr_expect_gt(c3, c2);
    net_reshare_now(fx.n);
    sim_run(fx.e, INFINITY);
    cr_expect_eq(net_cap_changes(fx.n), c3, "flows and reshares are not capacity changes");
    fx_free(&fx);
}

/* ---- held links (closed-form schedules, collective.c) --------------------- */

static int holds_called;
static void hold_hook(void *ctx)
{
    (void)ctx;
    holds_called++;
}

/* A link can be held only while nothing uses it and its capacity is
 * constant and positive; the holder hears of the first flow that becomes
 * active on it (at its activation, not its start), of a capacity change
 * and of an outage, each time with the link already released. */
Test(net, held_link_calls_its_holder_first)
{
    fixture fx;
    fx_init(&fx);
    int a = net_link_add(fx.n, 1e6, NULL, "a"), b = net_link_add(fx.n, INFINITY, NULL, "b");
    int z = net_link_add(fx.n, 0, NULL, "z");
    cr_expect_eq(net_link_hold(fx.n, b, hold_hook, NULL), DP_EINPUT); /* infinite: never a bottleneck */
    cr_expect_eq(net_link_hold(fx.n, z, hold_hook, NULL), DP_EINPUT); /* stalled */
    cr_assert_eq(net_link_hold(fx.n, a, hold_hook, NULL), 0);
    cr_expect_eq(net_link_hold(fx.n, a, hold_hook, NULL), DP_EINPUT); /* held */
    holds_called = 0;
    cr_assert(net_flow_start(fx.n, &a, 1, 1e6, 0.5, INFINITY, on_done, &fx.tags[0]));
    cr_expect_eq(holds_called, 0); /* in its latency phase: not yet */
    sim_run(fx.e, 0.6);
    cr_expect_eq(holds_called, 1);
    cr_expect_eq(net_link_hold(fx.n, a, hold_hook, NULL), DP_EINPUT); /* carries a flow */
    sim_run(fx.e, INFINITY);
    expect_close(fx.lg.t[0], 1.5);
    cr_assert_eq(net_link_hold(fx.n, a, hold_hook, NULL), 0);
    net_link_set_capacity(fx.n, a, 2e6);
    cr_expect_eq(holds_called, 2);
    cr_assert_eq(net_link_hold(fx.n, a, hold_hook, NULL), 0);
    net_link_set_down(fx.n, a, 1);
    cr_expect_eq(holds_called, 3);
    net_link_set_down(fx.n, a, 0);
    cr_expect_eq(holds_called, 3);
    cr_assert_eq(net_link_hold(fx.n, a, hold_hook, NULL), 0);
    net_link_release(fx.n, a);
    net_link_set_capacity(fx.n, a, 1e6);
    cr_expect_eq(holds_called, 3); /* released: no call */
    fx_free(&fx);
}

/* ---- a held link's trace: suspended while held, resumed on release ------
 * Capacity (B/s) 1e6 from 0, 2e6 from 1 s, 4e6 from 2 s, 1e6 from 3 s
 * on: held from 0.5 s to 2.5 s, no change fires (the trace
 * schedules nothing), the capacity stays the one at the hold, and
 * net_link_trace still says when the next change is due (1 s); on release
 * the capacity is the trace's at 2.5 s and the next change is at 3 s, as
 * if nothing had stopped it: a flow started after the release ends at the
 * same time, to the bit, as on a link never held. */
static const char held_csv[] = "0,8000000\n1,16000000\n2,32000000\n3,8000000\n";

static trace *held_trace(void)
{
    trace_opts o = {TRACE_FMT_CSV, 0, 0, 0, 1};
    dp_err err = {0};
    trace *tr = trace_read_buffer("held.csv", held_csv, sizeof held_csv - 1, &o, &err);
    cr_assert_not_null(tr, "%s", err.msg);
    return tr;
}

static int held_id;
static fixture *held_fx;
static void held_hold(sim_engine *e, void *ctx, uint64_t id)
{
    (void)e;
    (void)ctx;
    (void)id;
    cr_assert_eq(net_link_hold(held_fx->n, held_id, hold_hook, NULL), 0);
}
static void held_release(sim_engine *e, void *ctx, uint64_t id)
{
    (void)e;
    (void)ctx;
    (void)id;
    net_link_release(held_fx->n, held_id);
}
static void held_start(sim_engine *e, void *ctx, uint64_t id)
{
    (void)e;
    (void)ctx;
    (void)id;
    cr_assert(net_flow_start(held_fx->n, &held_id, 1, 4e6, 0.25, INFINITY, on_done, &held_fx->tags[0]));
}

Test(net, held_trace_suspends_and_resumes_on_schedule)
{
    trace *tr = held_trace();
    double end[2];
    for (int hold = 0; hold < 2; hold++) {
        fixture fx;
        fx_init(&fx);
        held_fx = &fx;
        held_id = net_link_add(fx.n, 0, tr, "wan");
        cr_assert_eq(held_id, 0);
        cr_expect_eq(net_trace_events(fx.n), 1);
        if (hold) {
            cr_assert(sim_at(fx.e, 0.5, held_hold, NULL));
            cr_assert(sim_at(fx.e, 2.5, held_release, NULL));
        }
        cr_assert(sim_at(fx.e, 2.5, held_start, NULL)); /* after the release: scheduled later */
        sim_run(fx.e, 0.75);
        double next;
        cr_expect_not_null(net_link_trace(fx.n, held_id, &next)); /* the net's copy */
        cr_expect_eq(next, 1.0, "next change due at %.17g", next);
        cr_expect_eq(net_trace_events(fx.n), hold ? 0u : 1u, "suspended: nothing scheduled");
        sim_run(fx.e, 2.25);
        /* held: the capacity of the hold; else the trace's */
        cr_expect_eq(net_link_capacity(fx.n, held_id), hold ? 1e6 : 4e6);
        net_link_trace(fx.n, held_id, &next);
        cr_expect_eq(next, hold ? 1.0 : 3.0, "next change %.17g", next);
        sim_run(fx.e, 2.6);
        cr_expect_eq(net_link_capacity(fx.n, held_id), 4e6);
        net_link_trace(fx.n, held_id, &next);
        cr_expect_eq(next, 3.0, "resumed: next change %.17g", next);
        cr_expect_eq(net_trace_events(fx.n), 1);
        sim_run(fx.e, 9);
        cr_assert_eq(fx.lg.n, 1);
        end[hold] = fx.lg.t[0];
        /* 0.25 s at 4e6 from 2.75 s, then 3e6 B at 1e6 from 3 s */
        expect_close(end[hold], 6.0);
        fx_free(&fx);
    }
    cr_expect(memcmp(&end[0], &end[1], sizeof end[0]) == 0, "held %.17g, never held %.17g", end[1], end[0]);
    trace_free(tr);
}

/* A flow becoming active on a held traced link: its trace resumes (the
 * changes due by then applied) before the holder's hook runs, so the
 * holder's flows see the capacity of now.  The trace then goes on firing;
 * a release after the hook changes nothing. */
static double hook_saw_cap;
static void trace_hold_hook(void *ctx)
{
    fixture *fx = ctx;
    holds_called++;
    hook_saw_cap = net_link_capacity(fx->n, 0);
}

Test(net, held_trace_resumes_before_the_holder_hears)
{
    trace *tr = held_trace();
    fixture fx;
    fx_init(&fx);
    int l = net_link_add(fx.n, 0, tr, "wan");
    cr_assert_eq(net_link_hold(fx.n, l, trace_hold_hook, &fx), 0);
    cr_expect_eq(net_trace_events(fx.n), 0);
    holds_called = 0;
    cr_assert(net_flow_start(fx.n, &l, 1, 8e5, 1.5, INFINITY, on_done, &fx.tags[0])); /* active at 1.5 s */
    sim_run(fx.e, INFINITY);
    cr_expect_eq(holds_called, 1);
    cr_expect_eq(hook_saw_cap, 2e6, "the capacity from 1 s: %.17g", hook_saw_cap);
    cr_assert_eq(fx.lg.n, 1);
    expect_close(fx.lg.t[0], 1.9);                 /* 8e5 B at 2e6 B/s from 1.5 s */
    cr_expect_eq(net_link_capacity(fx.n, l), 1e6); /* every change fired: the one at 3 s last */
    net_link_release(fx.n, l);                     /* not held: nothing */
    cr_expect_eq(net_trace_events(fx.n), 0);
    fx_free(&fx);
    trace_free(tr);
}

/* net_link_account_util: bytes, busy time and a share of the capacity in
 * use, whatever the capacity now (a traced link's changed since). */
Test(net, account_util_adds_a_held_periods_statistics)
{
    fixture fx;
    fx_init(&fx);
    int a = net_link_add(fx.n, 1e6, NULL, "a");
    net_link_account_util(fx.n, a, 3e6, 3.5, 0.25);
    expect_close(net_link_bytes(fx.n, a), 3e6);
    expect_close(net_link_busy_s(fx.n, a), 3.5);
    expect_close(net_link_peak_util(fx.n, a), 0.25);
    net_link_account_util(fx.n, a, 1e6, 1, 0.125); /* lower: the peak stays */
    expect_close(net_link_peak_util(fx.n, a), 0.25);
    net_link_account_util(fx.n, a, 0, 0, 3); /* at most 1 */
    expect_close(net_link_peak_util(fx.n, a), 1.0);
    expect_close(net_link_bytes(fx.n, a), 4e6);
    fx_free(&fx);
}

/* A link's nominal capacity, outage flag and hold context sit beside the
 * hot link records (n->cold, issue 39): after thousands more links made
 * both arrays grow (and move), an outage's end restores the nominal
 * capacity set before it, a capacity set during the outage is the one
 * restored, and each holder hears with its own context. */
static void *hold_seen[4];
static int hold_seen_n;
static void hold_ctx_hook(void *ctx)
{
    if (hold_seen_n < 4)
        hold_seen[hold_seen_n] = ctx;
    hold_seen_n++;
}

Test(net, nominal_and_hold_context_beside_the_links_after_growth)
{
    fixture fx;
    fx_init(&fx);
    int ctx[3];
    int a = net_link_add(fx.n, 1e6, NULL, "a"), b = net_link_add(fx.n, 2e6, NULL, NULL);
    int c = net_link_add(fx.n, 3e6, NULL, NULL);
    cr_assert_eq(net_link_hold(fx.n, a, hold_ctx_hook, &ctx[0]), 0);
    cr_assert_eq(net_link_hold(fx.n, c, hold_ctx_hook, &ctx[2]), 0);
    cr_assert_eq(net_link_set_down(fx.n, b, 1), 0);
    cr_expect_eq(net_link_capacity(fx.n, b), 0);
    int last = -1;
    for (int i = 0; i < 5000; i++)
        last = net_link_add(fx.n, 1e3 + i, NULL, NULL);
    cr_assert_eq(last, 5002);
    hold_seen_n = 0;
    cr_assert_eq(net_link_set_capacity(fx.n, c, 4e6), 0); /* c's holder first, with c's context */
    cr_assert_eq(hold_seen_n, 1);
    cr_expect_eq(hold_seen[0], &ctx[2]);
    cr_expect_eq(net_link_capacity(fx.n, c), 4e6);
    cr_assert_eq(net_link_set_down(fx.n, a, 1), 0); /* a's holder, with a's */
    cr_assert_eq(hold_seen_n, 2);
    cr_expect_eq(hold_seen[1], &ctx[0]);
    cr_expect_eq(net_link_capacity(fx.n, a), 0);
    cr_assert_eq(net_link_set_down(fx.n, a, 0), 0);
    cr_expect_eq(net_link_capacity(fx.n, a), 1e6, "a's nominal capacity back after its outage");
    cr_assert_eq(net_link_set_down(fx.n, b, 0), 0);
    cr_expect_eq(net_link_capacity(fx.n, b), 2e6, "b's nominal capacity, set before the links grew");
    cr_assert_eq(net_link_set_down(fx.n, b, 1), 0);
    cr_assert_eq(net_link_set_capacity(fx.n, b, 5e6), 0); /* while down: its nominal only */
    cr_expect_eq(net_link_capacity(fx.n, b), 0);
    cr_assert_eq(net_link_set_down(fx.n, b, 0), 0);
    cr_expect_eq(net_link_capacity(fx.n, b), 5e6);
    cr_expect_eq(net_link_capacity(fx.n, last), 1e3 + 4999);
    cr_assert_eq(net_link_hold(fx.n, last, hold_ctx_hook, &ctx[1]), 0); /* a link added after the growth */
    cr_assert_eq(net_link_set_down(fx.n, last, 1), 0);
    cr_assert_eq(hold_seen_n, 3);
    cr_expect_eq(hold_seen[2], &ctx[1]);
    cr_assert_eq(net_link_set_down(fx.n, last, 0), 0);
    cr_expect_eq(net_link_capacity(fx.n, last), 1e3 + 4999);
    int twin = net_link_add(fx.n, 1e3, NULL, NULL); /* link 3's capacity */
    cr_assert_eq(net_link_set_down(fx.n, 3, 1), 0);
    cr_assert_eq(net_link_set_down(fx.n, 4, 1), 0);
    cr_assert_eq(net_link_set_down(fx.n, twin, 1), 0);
    cr_expect(!net_link_same(fx.n, 3, 4), "both down, their nominal capacities differ");
    cr_expect(net_link_same(fx.n, 3, twin), "both down, the same nominal capacity");
    cr_assert_eq(net_link_set_down(fx.n, twin, 0), 0);
    cr_expect(!net_link_same(fx.n, 3, twin), "one down, one up");
    fx_free(&fx);
}

/* Each link's clock domain is kept only with clock domains: net_set_group
 * makes room for it and can fail (the net unchanged, no group), and links
 * added later get theirs; a flow then runs as before. */
Test(net, set_group_keeps_link_domains_and_may_fail)
{
    fixture fx;
    fx_init(&fx);
    int a = net_link_add(fx.n, 1e6, NULL, "a");
    eg_group *g = eg_new(fx.e, NULL);
    cr_assert_not_null(g);
    dp_alloc_fail_after(1);
    int rc = net_set_group(fx.n, g);
    dp_alloc_fail_after(0);
    cr_expect_eq(rc, DP_ENOMEM);
    cr_assert_eq(net_set_group(fx.n, g), 0);
    int b = net_link_add(fx.n, 2e6, NULL, NULL);
    for (int i = 0; i < 100; i++)
        cr_assert_geq(net_link_add(fx.n, 1e3, NULL, NULL), 0);
    int path[2] = {a, b};
    cr_assert(net_flow_start(fx.n, path, 2, 1e6, 0, INFINITY, on_done, &fx.tags[0]));
    sim_run(fx.e, INFINITY);
    expect_close(fx.lg.t[0], 1.0);
    expect_close(net_link_busy_s(fx.n, b), 1.0);
    net_free(fx.n);
    eg_free(g); /* before the root engine it touches */
    sim_engine_free(fx.e);
}

/* net_link_account adds what a lone flow would have: bytes, busy time, and
 * its share of the capacity to the peak. */
Test(net, account_adds_a_lone_flows_statistics)
{
    fixture fx;
    fx_init(&fx);
    int a = net_link_add(fx.n, 1e6, NULL, "a");
    net_link_account(fx.n, a, 3e6, 3.5, 5e5);
    expect_close(net_link_bytes(fx.n, a), 3e6);
    expect_close(net_link_busy_s(fx.n, a), 3.5);
    expect_close(net_link_peak_util(fx.n, a), 0.5);
    net_link_account(fx.n, a, 1e6, 1, 1e6);
    expect_close(net_link_bytes(fx.n, a), 4e6);
    expect_close(net_link_peak_util(fx.n, a), 1.0);
    fx_free(&fx);
}

/* Flows ending at one instant are reported in the order they started,
 * however many (10,000 here: the radix sort of report_done; 100: qsort),
 * by progressive filling (whose scan scrambles them) and by the star path. */
static int start_order_seen[20000], start_order_n;
static void on_done_order(void *ctx, uint64_t id)
{
    (void)id;
    start_order_seen[start_order_n++] = (int)(intptr_t)ctx;
}

Test(net, simultaneous_ends_reported_in_start_order)
{
    int sizes[] = {100, 10000};
    for (int star = 0; star < 2; star++)
        for (int z = 0; z < 2; z++) {
            int m = sizes[z];
            sim_engine *e = sim_engine_new(NULL);
            net *n = net_new(e, NULL);
            if (!star)
                net_set_star_min_flows(n, (size_t)-1);
            /* pairs on a shared link: a short flow and a long one each, so the
             * short ones end together and leave the long ones in the middle */
            for (int i = 0; i < m; i++) {
                int l = net_link_add(n, 1e6, NULL, NULL);
                cr_assert(l >= 0);
                cr_assert(
                    net_flow_start(n, &l, 1, 1000, 0, INFINITY, on_done_order, (void *)(intptr_t)(2 * i)));
                cr_assert(net_flow_start(n, &l, 1, 5000, 0, INFINITY, on_done_order,
                                         (void *)(intptr_t)(2 * i + 1)));
            }
            start_order_n = 0;
            sim_step(e); /* the reshare at 0 */
            while (start_order_n < m && sim_step(e))
                ;
            cr_assert_eq(start_order_n, m, "star %d, %d pairs: %d ended first", star, m, start_order_n);
            for (int i = 0; i < m; i++)
                cr_expect_eq(start_order_seen[i], 2 * i, "star %d, %d pairs: report %d is flow %d", star, m,
                             i, start_order_seen[i]);
            sim_run(e, INFINITY);
            net_free(n);
            sim_engine_free(e);
        }
}

/* net_set_done_prefetch: while many flows end at one instant, the hint
 * runs a few flows ahead of the callbacks, only for flows whose callback
 * it was registered for, and before their callback runs; the reports are
 * unchanged.  A fifth callback is refused. */
static int pf_seen[20000], pf_n, pf_late;
static void pf_hint(void *pctx, void *ctx)
{
    cr_assert_eq((intptr_t)pctx, 7);
    int tag = (int)(intptr_t)ctx;
    for (int k = 0; k < start_order_n; k++)
        pf_late += start_order_seen[k] == tag; /* already reported: too late to help */
    pf_seen[pf_n++] = tag;
}
static void on_done_other(void *ctx, uint64_t id)
{
    on_done_order(ctx, id);
}
static void on_done_third(void *ctx, uint64_t id)
{
    on_done_order(ctx, id);
}
static void on_done_fourth(void *ctx, uint64_t id)
{
    on_done_order(ctx, id);
}
static void on_done_fifth(void *ctx, uint64_t id)
{
    on_done_order(ctx, id);
}

Test(net, done_prefetch_runs_ahead_and_changes_nothing)
{
    for (int star = 0; star < 2; star++) {
        sim_engine *e = sim_engine_new(NULL);
        net *n = net_new(e, NULL);
        if (!star)
            net_set_star_min_flows(n, (size_t)-1);
        cr_assert_eq(net_set_done_prefetch(n, on_done_order, pf_hint, (void *)(intptr_t)7), 0);
        int m = 1000;
        for (int i = 0; i < m; i++) { /* even tags: the hinted callback; odd: another */
            int l = net_link_add(n, 1e6, NULL, NULL);
            cr_assert(net_flow_start(n, &l, 1, 1000, 0, INFINITY, i % 2 ? on_done_other : on_done_order,
                                     (void *)(intptr_t)i));
        }
        start_order_n = pf_n = pf_late = 0;
        sim_run(e, INFINITY);
        cr_assert_eq(start_order_n, m);
        for (int i = 0; i < m; i++)
            cr_expect_eq(start_order_seen[i], i, "star %d: report %d is flow %d", star, i,
                         start_order_seen[i]);
        cr_expect_eq(pf_late, 0, "star %d: hints after their callback", star);
        cr_expect(pf_n > m / 2 - 16 && pf_n <= m / 2, "star %d: %d hints for %d hinted flows", star, pf_n,
                  m / 2);
        for (int k = 0; k < pf_n; k++)
            cr_expect_eq(pf_seen[k] % 2, 0, "star %d: hint for flow %d, not registered", star, pf_seen[k]);
        net_free(n);
        sim_engine_free(e);
    }
    sim_engine *e = sim_engine_new(NULL);
    net *n = net_new(e, NULL);
    net_done_fn fns[] = {on_done_order, on_done_other, on_done_third, on_done_fourth, on_done_fifth};
    for (int k = 0; k < 4; k++)
        cr_assert_eq(net_set_done_prefetch(n, fns[k], pf_hint, NULL), 0);
    cr_assert_eq(net_set_done_prefetch(n, fns[4], pf_hint, NULL), DP_EINPUT);
    cr_assert_eq(net_set_done_prefetch(n, fns[0], pf_hint, NULL), 0); /* again: replaced, not added */
    net_free(n);
    sim_engine_free(e);
}

/* Flows through one shared NIC ending one at a time (the star path: a wave
 * of uploads): the next flow to end gets its hint while the flow before it
 * is still running, never after its callback, and only for the registered
 * callback; the times and order are the same bits as without the hint. */
static double one_t[2][400];
static sim_engine *one_e;
static int one_pass;
static void on_one_order(void *ctx, uint64_t id)
{
    (void)id;
    int tag = (int)(intptr_t)ctx;
    one_t[one_pass][tag] = sim_now(one_e);
    on_done_order(ctx, id);
}
static void on_one_other(void *ctx, uint64_t id)
{
    on_one_order(ctx, id);
}

Test(net, done_prefetch_for_flows_ending_one_at_a_time)
{
    int m = 400;
    for (one_pass = 0; one_pass < 2; one_pass++) {
        sim_engine *e = sim_engine_new(NULL);
        net *n = net_new(e, NULL);
        one_e = e;
        if (one_pass)
            cr_assert_eq(net_set_done_prefetch(n, on_one_order, pf_hint, (void *)(intptr_t)7), 0);
        int nic = net_link_add(n, 1e6, NULL, NULL);
        for (int i = 0; i < m; i++) { /* distinct sizes: distinct ends; even tags hinted */
            int path[2] = {net_link_add(n, 1e7, NULL, NULL), nic};
            cr_assert(net_flow_start(n, path, 2, 1000.0 + 37.0 * i, 0, INFINITY,
                                     i % 2 ? on_one_other : on_one_order, (void *)(intptr_t)i));
        }
        start_order_n = pf_n = pf_late = 0;
        sim_run(e, INFINITY);
        cr_assert_eq(start_order_n, m);
        if (one_pass) {
            cr_expect_eq(pf_late, 0, "hints after their callback");
            cr_expect_geq(pf_n, m / 2 - 1, "%d hints for %d hinted flows", pf_n, m / 2);
            for (int k = 0; k < pf_n; k++)
                cr_expect_eq(pf_seen[k] % 2, 0, "hint for flow %d, not registered", pf_seen[k]);
            cr_expect_eq(memcmp(one_t[0], one_t[1], (size_t)m * sizeof one_t[0][0]), 0);
        }
        net_free(n);
        sim_engine_free(e);
    }
}

/* Progressive filling with its candidates as a run (homogeneous worlds:
 * equal access links touched in index order) gives the same bits as with
 * every candidate on the heap: finish times, order and link figures, in
 * worlds of equal access links alone, with a shared NIC, and with some
 * access links slower (candidates then out of order at some fills). */
typedef struct fr_out {
    double t[3000], bytes[3100], busy[3100], peak[3100];
    int order[3000], n_done;
    uint64_t runs;
} fr_out;
static fr_out *fr_cur;
static sim_engine *fr_e;
static void on_fr_done(void *ctx, uint64_t id)
{
    (void)id;
    int tag = (int)(intptr_t)ctx;
    fr_cur->t[tag] = sim_now(fr_e);
    fr_cur->order[fr_cur->n_done++] = tag;
}

static void fr_world(int F, int nic_kind, int slow_every, int runs, fr_out *o)
{
    memset(o, 0, sizeof *o);
    fr_cur = o;
    fr_e = sim_engine_new(NULL);
    net *n = net_new(fr_e, NULL);
    net_set_star_min_flows(n, (size_t)-1); /* progressive filling only */
    net_set_fill_runs(n, runs);
    /* nic_kind 2: access links rising from 1e6 to 2e6 and a NIC whose level
     * starts between the first two, so the run is in order and the NIC's
     * level, pushed after the first freeze, must come before the run's
     * next entry */
    double C = nic_kind == 2 ? 1.0005e6 * F : nic_kind ? 1e6 * F / 3 : INFINITY;
    int nic = net_link_add(n, C, NULL, "nic");
    for (int i = 0; i < F; i++) {
        double cap = nic_kind == 2                       ? 1e6 * (1 + (double)i / F)
                     : slow_every && i % slow_every == 0 ? 2e5
                                                         : 1e6;
        int acc = net_link_add(n, cap, NULL, NULL), p[2] = {acc, nic};
        double bytes = 1e4 * (1 + i % 7) + (i % 3) * 1e3;
        cr_assert(net_flow_start(n, p, 2, bytes, i % 5 || nic_kind == 2 ? 0 : 1e-3, INFINITY, on_fr_done,
                                 (void *)(intptr_t)i));
        if (i % 4 == 0 && nic_kind != 2) /* two flows on some access links */
            cr_assert(
                net_flow_start(n, p, 2, bytes / 2, 0, INFINITY, on_fr_done, (void *)(intptr_t)(F + i / 4)));
    }
    sim_run(fr_e, INFINITY);
    for (size_t l = 0; l < net_link_count(n); l++) {
        o->bytes[l] = net_link_bytes(n, (int)l);
        o->busy[l] = net_link_busy_s(n, (int)l);
        o->peak[l] = net_link_peak_util(n, (int)l);
    }
    o->runs = net_fill_runs(n);
    net_free(n);
    sim_engine_free(fr_e);
}

Test(net, fill_runs_change_no_bit)
{
    static fr_out a, b;
    int cases[][3] = {{2000, 0, 0}, {2000, 1, 0}, {2000, 0, 9}, {2000, 1, 13}, {1000, 2, 0}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        int F = cases[c][0];
        fr_world(F, cases[c][1], cases[c][2], 1, &a);
        fr_world(F, cases[c][1], cases[c][2], 0, &b);
        cr_expect(a.runs > 0, "case %zu: no fill read a run", c);
        cr_expect_eq(b.runs, 0);
        cr_assert_eq(a.n_done, b.n_done);
        int nf = cases[c][1] == 2 ? F : F + F / 4;
        for (int i = 0; i < nf; i++)
            cr_expect(a.t[i] == b.t[i], "case %zu flow %d ends at %.17g, on the heap %.17g", c, i, a.t[i],
                      b.t[i]);
        for (int k = 0; k < a.n_done; k++)
            cr_expect_eq(a.order[k], b.order[k], "case %zu completion %d", c, k);
        for (int l = 0; l < F + 1; l++)
            cr_expect(a.bytes[l] == b.bytes[l] && a.busy[l] == b.busy[l] && a.peak[l] == b.peak[l],
                      "case %zu link %d", c, l);
    }
}

/* net_reserve makes room ahead (the runtime calls it while a plan is made):
 * flows started after it, fewer or more than reserved, get the same ids,
 * the same ends and the same report order as without it. */
typedef struct res_log {
    uint64_t id[6000];
    double t[6000];
    int n;
    sim_engine *e;
} res_log;
static res_log *RL;
static void on_done_log(void *ctx, uint64_t id)
{
    (void)ctx;
    if (RL->n < 6000) {
        RL->id[RL->n] = id;
        RL->t[RL->n++] = sim_now(RL->e);
    }
}

static void reserve_run(size_t reserve, int m, res_log *out, uint64_t *ids)
{
    sim_engine *e = sim_engine_new(NULL);
    net *n = net_new(e, NULL);
    *out = (res_log){.e = e};
    RL = out;
    if (reserve)
        cr_assert_eq(net_reserve(n, reserve), 0);
    for (int i = 0; i < m; i++) {
        int l = net_link_add(n, 1e6 + 1000.0 * (i % 7), NULL, NULL);
        cr_assert(l >= 0);
        ids[2 * i] =
            net_flow_start(n, &l, 1, 1000 + 10 * (i % 13), 0.001 * (i % 3), INFINITY, on_done_log, NULL);
        ids[2 * i + 1] = net_flow_start(n, &l, 1, 5000, 0, INFINITY, on_done_log, NULL);
    }
    sim_run(e, INFINITY);
    net_free(n);
    sim_engine_free(e);
}

Test(net, reserve_changes_no_id_time_or_order)
{
    static res_log a, b;
    static uint64_t ia[6000], ib[6000];
    int m = 2500; /* 5000 flows: five chunks */
    reserve_run(0, m, &a, ia);
    size_t reserves[] = {1, 1000, 5000, 20000};
    for (size_t r = 0; r < sizeof reserves / sizeof *reserves; r++) {
        reserve_run(reserves[r], m, &b, ib);
        cr_assert_eq(a.n, 2 * m);
        cr_assert_eq(b.n, a.n, "reserve %zu", reserves[r]);
        for (int i = 0; i < 2 * m; i++) {
            cr_expect_eq(ia[i], ib[i], "reserve %zu: flow %d's id", reserves[r], i);
            cr_expect_eq(a.id[i], b.id[i], "reserve %zu: report %d", reserves[r], i);
            cr_expect_eq(a.t[i], b.t[i], "reserve %zu: report %d's time", reserves[r], i);
        }
    }
}

/* ---- RTT-aware sharing (NET_SHARE_RTT): weighted max-min, weight 1/RTT,
 * RTT = 2 x latency; hand-derived timelines ---- */

/* Two flows of 10 B on one link of 10 B/s: A with latency 0.1 (RTT 0.2,
 * weight 5), B with latency 0.3 (RTT 0.6, weight 5/3).
 *  0.1-0.3: A alone at 10: sends 2, 8 left.
 *  from 0.3: shares 5/(5 + 5/3) = 3/4 and 1/4: A at 7.5, B at 2.5;
 *    A ends at 0.3 + 8/7.5 = 0.3 + 16/15; B has sent 2.5 x 16/15 = 8/3.
 *  B alone at 10 with 22/3 left: ends at 0.3 + 16/15 + 11/15 = 2.1 (the
 *  link never idles after 0.1: 0.1 + 20/10). */
Test(net, rtt_two_flows_share_by_inverse_rtt)
{
    fixture fx;
    fx_init(&fx);
    cr_assert_eq(net_set_sharing(fx.n, NET_SHARE_RTT), 0);
    cr_assert_eq(net_get_sharing(fx.n), NET_SHARE_RTT);
    int l = net_link_add(fx.n, 10, NULL, "l");
    uint64_t a = net_flow_start(fx.n, &l, 1, 10, 0.1, INFINITY, on_done, &fx.tags[0]);
    uint64_t b = net_flow_start(fx.n, &l, 1, 10, 0.3, INFINITY, on_done, &fx.tags[1]);
    cr_assert(a && b);
    cr_assert_eq(net_set_sharing(fx.n, NET_SHARE_MAXMIN), DP_EINPUT); /* flows started */
    sim_run(fx.e, 0.5);
    cr_assert(fabs(net_flow_rate(fx.n, a) - 7.5) <= 1e-9 * 7.5);
    cr_assert(fabs(net_flow_rate(fx.n, b) - 2.5) <= 1e-9 * 2.5);
    sim_run(fx.e, INFINITY);
    cr_assert_eq(fx.lg.n, 2);
    expect_close(fx.lg.t[0], 0.3 + 16.0 / 15.0);
    expect_close(fx.lg.t[1], 2.1);
    expect_close(net_link_bytes(fx.n, l), 20);
    fx_free(&fx);
}

/* Three flows on link L (12 B/s); C also crosses L2 (1 B/s).
 * A: latency 0.1 (weight 5), 10 B; B: latency 0.2 (weight 2.5), 10 B;
 * C: latency 0.05 (weight 10), 1 B.  Levels x are per unit weight.
 *  0.05: C alone: L2 holds it at 1.
 *  0.1:  L2's level 1/10 = 0.1 < L's 12/15: C frozen at 1; L: 11 left
 *        over weight 5: A at 11.
 *  0.2:  A has 10 - 1.1 = 8.9 left.  C at 1 again (L2 at 0.1 < 12/17.5);
 *        L: 11 over weight 7.5, x = 22/15: A at 22/3, B at 11/3.
 *  1.05: C ends (1 B at 1 B/s from 0.05).  A sent 0.85 x 22/3, 8/3 left;
 *        B sent 0.85 x 11/3.  L: 12 over 7.5, x = 1.6: A at 8, B at 4.
 *  A ends at 1.05 + (8/3)/8 = 1.05 + 1/3; B has sent 0.85 x 11/3 + 4/3
 *  = 4.45, 5.55 left, alone at 12: ends at 1.05 + 1/3 + 0.4625. */
Test(net, rtt_three_flows_with_a_second_bottleneck)
{
    fixture fx;
    fx_init(&fx);
    cr_assert_eq(net_set_sharing(fx.n, NET_SHARE_RTT), 0);
    int L = net_link_add(fx.n, 12, NULL, "L"), L2 = net_link_add(fx.n, 1, NULL, "L2");
    int pc[2] = {L, L2};
    uint64_t a = net_flow_start(fx.n, &L, 1, 10, 0.1, INFINITY, on_done, &fx.tags[0]);
    uint64_t b = net_flow_start(fx.n, &L, 1, 10, 0.2, INFINITY, on_done, &fx.tags[1]);
    uint64_t c = net_flow_start(fx.n, pc, 2, 1, 0.05, INFINITY, on_done, &fx.tags[2]);
    sim_run(fx.e, 0.15);
    expect_close(net_flow_rate(fx.n, a), 11);
    expect_close(net_flow_rate(fx.n, c), 1);
    sim_run(fx.e, 0.5);
    expect_close(net_flow_rate(fx.n, a), 22.0 / 3.0);
    expect_close(net_flow_rate(fx.n, b), 11.0 / 3.0);
    expect_close(net_flow_rate(fx.n, c), 1);
    sim_run(fx.e, INFINITY);
    cr_assert_eq(fx.lg.n, 3);
    expect_close(fx.lg.t[2], 1.05);
    expect_close(fx.lg.t[0], 1.05 + 1.0 / 3.0);
    expect_close(fx.lg.t[1], 1.05 + 1.0 / 3.0 + 0.4625);
    expect_close(net_link_bytes(fx.n, L), 21);
    fx_free(&fx);
}

/* A rate cap under weights: three flows at once on a link of 9 B/s, RTTs
 * set by net_flow_set_rtt (latency 0): A 0.1 s (weight 10), B 0.2 s (5),
 * C 0.2 s (5) capped at 1 B/s.  x = 9/20 would give C 2.25 > 1: C frozen at
 * its cap (level 1/5), then A and B share 8 by 10:5: 16/3 and 8/3. */
Test(net, rtt_weights_with_a_rate_cap_and_set_rtt)
{
    fixture fx;
    fx_init(&fx);
    cr_assert_eq(net_set_sharing(fx.n, NET_SHARE_RTT), 0);
    int l = net_link_add(fx.n, 9, NULL, "l");
    uint64_t a = net_flow_start(fx.n, &l, 1, 100, 0, INFINITY, on_done, &fx.tags[0]);
    uint64_t b = net_flow_start(fx.n, &l, 1, 100, 0, INFINITY, on_done, &fx.tags[1]);
    uint64_t c = net_flow_start(fx.n, &l, 1, 100, 0, 1, on_done, &fx.tags[2]);
    cr_assert_eq(net_flow_set_rtt(fx.n, a, 0.1), 0);
    cr_assert_eq(net_flow_set_rtt(fx.n, b, 0.2), 0);
    cr_assert_eq(net_flow_set_rtt(fx.n, c, 0.2), 0);
    cr_assert_eq(net_flow_set_rtt(fx.n, c, -1), DP_EINPUT);
    net_reshare_now(fx.n);
    expect_close(net_flow_rate(fx.n, a), 16.0 / 3.0);
    expect_close(net_flow_rate(fx.n, b), 8.0 / 3.0);
    expect_close(net_flow_rate(fx.n, c), 1);
    /* A ends at 100 / (16/3) = 18.75; then B and C: B's share 8 of 9 */
    sim_run(fx.e, INFINITY);
    expect_close(fx.lg.t[0], 18.75);
    fx_free(&fx);
}

/* The star path is exact for max-min only: under RTT sharing a star of
 * flows through one NIC stays on progressive filling, and its shares are
 * the weighted ones (flow i of latency (i + 1) ms gets 1/(i + 1) of the
 * others' weights). */
Test(net, rtt_keeps_the_star_path_off)
{
    fixture fx;
    fx_init(&fx);
    cr_assert_eq(net_set_sharing(fx.n, NET_SHARE_RTT), 0);
    net_set_star_min_flows(fx.n, 1);
    int nic = net_link_add(fx.n, 1e6, NULL, "nic");
    uint64_t id[40];
    double wsum = 0;
    for (int i = 0; i < 40; i++) {
        int acc = net_link_add(fx.n, 1e9, NULL, NULL), p[2] = {nic, acc};
        id[i] = net_flow_start(fx.n, p, 2, 1e9, 1e-3 * (i + 1), INFINITY, on_done, &fx.tags[i]);
        wsum += 1 / (2e-3 * (i + 1));
    }
    sim_run(fx.e, 1);
    cr_assert_not(net_star_on(fx.n));
    for (int i = 0; i < 40; i++)
        expect_close(net_flow_rate(fx.n, id[i]), 1e6 * (1 / (2e-3 * (i + 1))) / wsum);
    net_free(fx.n);
    fx.n = NULL;
    sim_engine_free(fx.e);
}
