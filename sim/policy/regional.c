/* regional.c: regional parameter servers (Cloudless-Training, Tan et al.,
 * 2023): a server per site averages its site's devices, then the servers
 * average across the WAN (docs/MODEL.md section 4, "Regional servers").
 *
 * Servers: the scenario's `servers:` list (world nodes N+1..); a device's
 * server is its site's, else the main server (node 0), which is also the
 * global one.  A group is the devices of one server.
 *
 * Data: an equal split, sent once with the model from the main server (as
 * localsgd).  A round: every device runs `steps` local batches (a device
 * out of samples ends its round early; the round that empties the last
 * shard ends the epoch, as localsgd's), uploads its model to its server;
 * when its whole group has, the server averages them (k x M / its
 * aggregate rate).  Then, across the WAN:
 *  - `wan: sync`: every regional server sends its group's model to the
 *    main server (a group of the main server's is there already); when all
 *    are there the main server averages the G models (G x M / its rate) and
 *    sends the result to every regional server, each of which sends it on
 *    to its devices; the next round starts on a device when it holds it.
 *  - `wan: async`: a group does not wait for the others: its server sends
 *    its average straight back to its devices, and every `wan_every`
 *    rounds of its own also sends it to the main server, which averages it
 *    with the global model it holds (M / its rate, one at a time in arrival
 *    order) and sends the result back; the group's next average then
 *    includes it (the regional server averages k device models plus the
 *    global one it last received: (k + 1) x M / its rate).  An epoch ends
 *    when every shard is empty and every group has finished its round.
 * With one group (no regional server, or every device in one site) there
 * is nothing to average across the WAN: the run is localsgd's with `sync:
 * server` and the same steps, bit for bit (tests/test_regional.c).
 *
 * Learning: a group's average is an average of its members' models (back
 * to them); the WAN average of `sync` is the average of every member's
 * model into the global one, weighted by samples since the last (so the
 * groups weigh by their samples), back to every member.  With `async`:
 * a group's average is its members' exact average (back to them), mixed
 * with the global model when its timing includes the one it received
 * (each member (1 - b) x its model + b x the global one, b = 1 / (k + 1),
 * k + 1 models averaged); a push enters the global model when it leaves
 * its server, global = (1 - a) global + a x the site's average, a the
 * group's share of the samples (FedGSync's merge; the stream has no copy
 * of a model in flight, so the global model changes at the push, not a
 * WAN transfer later at the merge, and it mixes in the global model as it
 * is at the average, not as it arrived).
 *
 * Failures (worlds with `availability`, wan: sync; `async` is refused): a
 * device going down before its model is at its server leaves its group's
 * round (its round's compute lost, its samples of the epoch not started
 * skipped) and the group averages the members left; a group with nobody
 * left tells the main server it has no model (no bytes), and the WAN
 * average is over the groups with one.  A device back joins its group's
 * next round (model from its server, its shard from the main server if it
 * lost it).  Nobody up: the job waits for a return.
 */
#include "commlight.h"

#include <math.h>
#include <stddef.h>

typedef enum { RG_SYNC = 0, RG_ASYNC = 1 } rg_wan;

typedef struct rg_opts {
    int steps;     /* H */
    int wan;       /* rg_wan */
    int wan_every; /* async: group rounds between pushes */
} rg_opts;

typedef struct rg_group rg_group;

typedef struct rg_dev {
    prt *rt;
    size_t d;
    rg_group *g;
    int batch, done;
    int64_t samples;
    /* worlds with failures (wan: sync) */
    int in;       /* in its group's round under way */
    int arrived;  /* its model is at its server this round */
    int back;     /* up again since it left: joins its group's next round */
    int has_data; /* holds its shard */
    int pending;  /* transfers of its download still on the way (the model, its shard if lost) */
    double c0;    /* its compute seconds when its round began */
} rg_dev;

struct rg_group {
    prt *rt;
    int node;    /* its server's world node */
    double rate; /* its aggregate rate */
    size_t *members, n;
    size_t arrived;  /* models at its server this round */
    int64_t rounds;  /* its own rounds (async) */
    int has_global;  /* async: a global model arrived since its last average */
    int pushing;     /* async: its model on the way to or at the main server */
    int idle;        /* async: finished its round with no work left this epoch */
    int with_global; /* async: this average includes the global model (as its timing counts it) */
    double share;    /* async, learning: its samples / every participant's (its merge weight) */
    size_t n_in;     /* members in the round under way (n without failures) */
    int reported;    /* failures: its model (or that it has none) is on the way to the main server */
};

typedef struct rg_state {
    rg_opts o;
    rg_dev *dev;
    rg_group *grp;
    size_t n_grp;
    size_t *parts, n_parts;
    size_t at_global; /* sync: group models at the main server */
    size_t ready;
    int64_t wan_rounds;
    double wan_busy_until; /* async: the main server averages one model at a time */
    cl_stats cs;
    /* worlds with failures (wan: sync; docs: scenarios/README.md) */
    int fail_on;
    size_t wan_models; /* group models in this WAN average (a group with nobody left sends none) */
    int waiting;       /* nobody up: the next round waits for a return */
    int64_t skipped;   /* samples of an epoch a device down did not start */
} rg_state;

static void begin_round(prt *rt, rg_dev *v);

static double avg_s(double rate, double models, double M)
{
    return isfinite(rate) ? models * M / rate : 0;
}

static void send(prt *rt, int from, int to, double bytes, net_done_fn fn, void *ctx)
{
    int n = (int)prt_n(rt);
    if ((from == 0 || from > n) && (to == 0 || to > n)) /* two servers */
        prt_add_between_servers(rt, bytes);
    if (!world_transfer(prt_world(rt), from, to, bytes, fn, ctx))
        prt_fail(rt, DP_ENOMEM, "out of memory");
}

/* ---- back to the devices ---- */

static void on_download(void *ctx, uint64_t id)
{
    (void)id;
    rg_dev *v = ctx;
    rg_state *st = prt_state(v->rt);
    if (st->fail_on) {
        if (--v->pending > 0)
            return;
        v->has_data = 1;
        v->back = 0;
    }
    prt_set_act(v->rt, v->d, RES_ACT_WAIT);
    begin_round(v->rt, v);
}

static void group_check(prt *rt, rg_state *st, rg_group *g);

/* Group g's server sends the model to each of its members.  With
 * failures this opens the group's next round: its members up (a member
 * back also gets its shard from the main server if it lost it), or, with
 * none, its report that it has no model. */
static void to_members(prt *rt, rg_group *g)
{
    rg_state *st = prt_state(rt);
    double M = prt_scn(rt)->model.model_bytes;
    if (st->fail_on) {
        g->arrived = 0;
        g->reported = 0;
        g->n_in = 0;
    }
    for (size_t i = 0; i < g->n; i++) {
        rg_dev *v = &st->dev[g->members[i]];
        if (st->fail_on) {
            v->arrived = 0;
            v->in = prt_device_up(rt, v->d);
            if (!v->in) {
                st->skipped += cl_skip_left(rt, v->d);
                continue;
            }
            g->n_in++;
            v->c0 = prt_compute_s(rt, v->d);
            v->pending = 1;
            if (!v->has_data) {
                double data = (double)prt_share(rt)[v->d] * prt_scn(rt)->dataset.sample_bytes;
                v->pending = 2;
                prt_add_server_bytes(rt, v->d, data);
                prt_add_resent(rt, data);
                send(rt, 0, (int)v->d + 1, data, on_download, v);
            }
        }
        prt_set_act(rt, v->d, RES_ACT_RECV_MODEL);
        prt_add_server_bytes(rt, v->d, M);
        send(rt, g->node, (int)v->d + 1, M, on_download, v);
    }
    if (st->fail_on)
        group_check(rt, st, g);
}

/* A round (sync: global; async: a group's) is over: its statistics. */
static void round_stats(rg_state *st, const size_t *members, size_t m)
{
    int64_t batch = 0, devs = 0;
    for (size_t i = 0; i < m; i++) {
        rg_dev *v = &st->dev[members[i]];
        batch += v->samples;
        devs += v->samples > 0;
        v->samples = 0;
    }
    st->cs.rounds++;
    cl_update(&st->cs, batch, devs, 0);
}

/* The epoch's end when no shard has work left.  1 when the next round starts. */
static int round_end(prt *rt, rg_state *st)
{
    if (prt_work_left(rt))
        return 1;
    if (prt_epoch(rt) >= prt_scn(rt)->training.epochs &&
        (cl_emit(rt, &st->cs) ||
         prt_stat(rt, "regional.wan_rounds", RES_SCOPE_RUN, 0, 0, (double)st->wan_rounds) ||
         (st->fail_on && prt_stat(rt, "samples_skipped", RES_SCOPE_RUN, 0, 0, (double)st->skipped))))
        return 0;
    return prt_end_epoch(rt) > 0;
}

/* ---- sync ---- */

static void on_global_down(void *ctx, uint64_t id)
{
    (void)id;
    rg_group *g = ctx;
    to_members(g->rt, g);
}

/* The global model to every group: its own members for the main
 * server's group, the regional servers (which forward it) for the others. */
static void global_out(prt *rt, rg_state *st)
{
    double M = prt_scn(rt)->model.model_bytes;
    for (size_t k = 0; k < st->n_grp; k++) {
        rg_group *g = &st->grp[k];
        if (g->node == 0)
            to_members(rt, g);
        else
            send(rt, 0, g->node, M, on_global_down, g);
    }
}

static void wan_averaged(prt *rt, void *ctx)
{
    (void)ctx;
    rg_state *st = prt_state(rt);
    prt_learn_average(rt, NULL, 0, 1, 1);
    st->wan_rounds++;
    st->at_global = 0;
    st->wan_models = 0;
    round_stats(st, st->parts, st->n_parts);
    if (!round_end(rt, st))
        return;
    if (st->fail_on && (st->waiting = cl_none_up(rt, st->parts, st->n_parts)))
        return; /* nobody up: the next round starts at a return (rg_on_device) */
    global_out(rt, st);
}

/* A group's model (or, with failures, its word that it has none) is at
 * the main server; with every group's there, the WAN average. */
static void at_global(prt *rt, rg_state *st)
{
    if (++st->at_global < st->n_grp)
        return;
    double M = prt_scn(rt)->model.model_bytes,
           models = st->fail_on ? (double)st->wan_models : (double)st->n_grp;
    if (prt_at(rt, prt_now(rt) + avg_s(prt_scn(rt)->server.aggregate_Bps, models, M), wan_averaged, NULL))
        prt_fail(rt, DP_ENOMEM, "out of memory");
}

static void on_group_up(void *ctx, uint64_t id)
{
    (void)id;
    rg_group *g = ctx;
    at_global(g->rt, prt_state(g->rt));
}

/* ---- async ---- */

static void async_next(prt *rt, rg_state *st, rg_group *g);

static void on_global_back(void *ctx, uint64_t id)
{
    (void)id;
    rg_group *g = ctx;
    g->pushing = 0;
    g->has_global = 1;
}

static void global_merged(prt *rt, void *ctx)
{
    rg_group *g = ctx;
    rg_state *st = prt_state(rt);
    st->wan_rounds++;
    send(rt, 0, g->node, prt_scn(rt)->model.model_bytes, on_global_back, g);
}

static void on_async_up(void *ctx, uint64_t id)
{
    (void)id;
    rg_group *g = ctx;
    prt *rt = g->rt;
    rg_state *st = prt_state(rt);
    double now = prt_now(rt), t0 = fmax(now, st->wan_busy_until);
    st->wan_busy_until = t0 + avg_s(prt_scn(rt)->server.aggregate_Bps, 1, prt_scn(rt)->model.model_bytes);
    if (prt_at(rt, st->wan_busy_until, global_merged, g))
        prt_fail(rt, DP_ENOMEM, "out of memory");
}

/* Group g's round is over: push every wan_every rounds, then either its
 * next round or, with no work left in the epoch, wait for the others. */
static void async_next(prt *rt, rg_state *st, rg_group *g)
{
    g->rounds++;
    round_stats(st, g->members, g->n);
    if (g->node != 0 && !g->pushing && g->rounds % st->o.wan_every == 0) {
        g->pushing = 1;
        /* the update stream: the site's average (every member holds it
         * now) mixed into the global model with its data share */
        prt_learn_merge(rt, g->members[0], g->members, g->n, g->share, 0);
        send(rt, g->node, 0, prt_wire_bytes(rt, prt_scn(rt)->model.model_bytes), on_async_up, g);
    }
    int64_t left = 0;
    for (size_t i = 0; i < g->n; i++)
        left += prt_left(rt)[g->members[i]];
    if (left > 0) {
        to_members(rt, g);
        return;
    }
    g->idle = 1;
    for (size_t k = 0; k < st->n_grp; k++)
        if (!st->grp[k].idle)
            return;
    if (!round_end(rt, st))
        return;
    for (size_t k = 0; k < st->n_grp; k++) {
        st->grp[k].idle = 0;
        to_members(rt, &st->grp[k]);
    }
}

/* ---- a group's average ---- */

static void group_averaged(prt *rt, void *ctx)
{
    rg_group *g = ctx;
    rg_state *st = prt_state(rt);
    g->arrived = 0;
    g->has_global = 0;
    if (st->n_grp == 1) { /* nothing across the WAN: localsgd's server round */
        prt_learn_average(rt, NULL, 0, 1, 1);
        round_stats(st, st->parts, st->n_parts);
        if (round_end(rt, st) && !(st->fail_on && (st->waiting = cl_none_up(rt, st->parts, st->n_parts))))
            to_members(rt, g);
        return;
    }
    if (st->o.wan == RG_ASYNC) {
        prt_learn_group_average(rt, g->members, g->n);
        if (g->with_global) /* the global model it received, one model of k + 1 */
            prt_learn_mix_global(rt, g->members, g->n, 1.0 / (double)(g->n + 1));
        async_next(rt, st, g);
        return;
    }
    prt_learn_average(rt, g->members, g->n, 0, 1);
    st->wan_models++;
    if (g->node == 0)
        at_global(rt, st);
    else
        send(rt, g->node, 0, prt_wire_bytes(rt, prt_scn(rt)->model.model_bytes), on_group_up, g);
}

static void average_group(prt *rt, rg_group *g);

static void on_upload(void *ctx, uint64_t id)
{
    (void)id;
    rg_dev *v = ctx;
    prt *rt = v->rt;
    rg_group *g = v->g;
    prt_set_act(rt, v->d, RES_ACT_WAIT);
    rg_state *st = prt_state(rt);
    if (st->fail_on) {
        v->arrived = 1;
        g->arrived++;
        group_check(rt, st, g);
        return;
    }
    if (++g->arrived < g->n)
        return;
    average_group(rt, g);
}

/* Every model of group g's round is at its server: its average. */
static void average_group(prt *rt, rg_group *g)
{
    g->with_global = g->has_global;
    double models = (double)g->arrived + (g->has_global ? 1 : 0);
    if (prt_at(rt, prt_now(rt) + avg_s(g->rate, models, prt_scn(rt)->model.model_bytes), group_averaged, g))
        prt_fail(rt, DP_ENOMEM, "out of memory");
}

static void step(prt *rt, void *ctx)
{
    rg_dev *v = ctx;
    rg_state *st = prt_state(rt);
    int64_t *left = prt_left(rt);
    if (left[v->d] <= 0 || v->done >= st->o.steps) {
        double M = prt_wire_bytes(rt, prt_scn(rt)->model.model_bytes);
        prt_set_act(rt, v->d, RES_ACT_SEND);
        prt_add_server_bytes(rt, v->d, M);
        send(rt, (int)v->d + 1, v->g->node, M, on_upload, v);
        return;
    }
    int n = left[v->d] < v->batch ? (int)left[v->d] : v->batch;
    left[v->d] -= n;
    v->samples += n;
    v->done++;
    st->cs.steps[v->d]++;
    prt_compute(rt, v->d, n, 1.0, step, v, NULL);
}

static void begin_round(prt *rt, rg_dev *v)
{
    v->done = 0;
    step(rt, v);
}

static void on_ready(prt *rt, void *ctx)
{
    rg_dev *v = ctx;
    v->has_data = 1;
    begin_round(rt, v);
}

/* ---- failures (wan: sync) ---- */

/* Group g's round is complete when every member still in it has handed
 * its model in (so its average is over the survivors; a model at its
 * server counts even if its device went down since), or when nobody is
 * left in it: then its server tells the main server it has no model (a
 * message, no bytes) and the WAN average goes on without it. */
static void group_check(prt *rt, rg_state *st, rg_group *g)
{
    if (g->reported || (g->n_in > 0 && g->arrived < g->n_in))
        return;
    g->reported = 1;
    if (g->n_in > 0)
        average_group(rt, g);
    else if (st->n_grp == 1)
        group_averaged(rt, g); /* one group: its round ends with nothing averaged */
    else
        at_global(rt, st);
}

static void rg_on_device(prt *rt, const void *opts, size_t d, int up)
{
    (void)opts;
    rg_state *st = prt_state(rt);
    if (!st || prt_failed(rt) || prt_share(rt)[d] == 0 || !st->dev[d].g)
        return; /* not a participant */
    rg_dev *v = &st->dev[d];
    if (up) {
        v->back = 1;
        if (st->waiting) { /* the first return after nobody was up: the next round */
            st->waiting = 0;
            if (st->n_grp == 1)
                to_members(rt, &st->grp[0]);
            else
                global_out(rt, st);
        }
        return;
    }
    v->back = 0;
    if (!cl_keeps_data(rt, d))
        v->has_data = 0;
    if (!v->in || v->arrived)
        return; /* out of the round, or its model at its server counts (it misses the download) */
    v->in = 0;
    v->g->n_in--;
    prt_add_lost_s(rt, prt_compute_s(rt, d) - v->c0);
    st->skipped += cl_skip_left(rt, d);
    v->samples = 0;
    group_check(rt, st, v->g);
}

/* ---- set-up ---- */

static int rg_start(prt *rt, const void *opts)
{
    const scn_scenario *s = prt_scn(rt);
    size_t n = prt_n(rt), G = s->n_servers + 1;
    rg_state *st = dp_calloc(1, sizeof *st);
    prt_set_state(rt, st);
    if (!st)
        return dp_err_set(prt_err(rt), DP_ENOMEM, "out of memory");
    st->o = *(const rg_opts *)opts;
    st->fail_on = scn_has_failures(s);
    prt_learn_mode(rt, PRT_LEARN_LOCAL);
    st->dev = dp_calloc(n, sizeof *st->dev);
    st->parts = dp_calloc(n, sizeof *st->parts);
    st->grp = dp_calloc(G, sizeof *st->grp);
    size_t *mem = dp_calloc(n ? n : 1, sizeof *mem); /* every group's members, group by group */
    if (!st->dev || !st->parts || !st->grp || !mem || cl_stats_init(&st->cs, n)) {
        dp_free(mem);
        return dp_err_set(prt_err(rt), DP_ENOMEM, "out of memory for %zu devices", n);
    }
    world *w = prt_world(rt);
    for (size_t d = 0; d < n; d++)
        st->dev[d] = (rg_dev){.rt = rt, .d = d, .batch = s->groups[s->devices[d].group].batch};
    int rc = cl_distribute(rt, 1, st->dev, sizeof *st->dev, st->parts, &st->n_parts, on_ready);
    /* groups in node order (the main server's first), each its members in
     * scenario order; groups with no participant are left out */
    size_t used = 0;
    for (size_t k = 0; k < G; k++) {
        int node = k == 0 ? 0 : (int)(n + k);
        rg_group *g = &st->grp[st->n_grp];
        *g = (rg_group){.rt = rt, .node = node, .members = mem + used};
        g->rate = k == 0 ? s->server.aggregate_Bps : s->servers[k - 1].aggregate_Bps;
        for (size_t i = 0; i < st->n_parts; i++)
            if (world_server_of(w, st->parts[i]) == node) {
                g->members[g->n++] = st->parts[i];
                st->dev[st->parts[i]].g = g;
            }
        used += g->n;
        if (g->n)
            st->n_grp++;
    }
    for (size_t k = 0; k < st->n_grp; k++) { /* the first round: the members up */
        rg_group *g = &st->grp[k];
        for (size_t i = 0; i < g->n; i++) {
            rg_dev *v = &st->dev[g->members[i]];
            v->in = !st->fail_on || prt_device_up(rt, v->d);
            g->n_in += (size_t)v->in;
            if (!v->in)
                st->skipped += cl_skip_left(rt, v->d);
        }
    }
    for (size_t k = 0; st->fail_on && k < st->n_grp; k++)
        group_check(rt, st, &st->grp[k]); /* a group with nobody up at the start */
    double total = 0;
    for (size_t i = 0; i < st->n_parts; i++)
        total += (double)prt_share(rt)[st->parts[i]];
    for (size_t k = 0; k < st->n_grp && total > 0; k++) {
        rg_group *g = &st->grp[k];
        for (size_t i = 0; i < g->n; i++)
            g->share += (double)prt_share(rt)[g->members[i]] / total;
    }
    if (st->n_grp)
        st->grp[0].members = mem; /* the block's owner (rg_free) */
    else
        dp_free(mem);
    return rc;
}

static void rg_free(prt *rt, const void *opts)
{
    (void)opts;
    rg_state *st = prt_state(rt);
    if (st) {
        dp_free(st->dev);
        dp_free(st->parts);
        if (st->grp && st->n_grp)
            dp_free(st->grp[0].members);
        dp_free(st->grp);
        cl_stats_free(&st->cs);
    }
    dp_free(st);
    prt_set_state(rt, NULL);
}

static int rg_check(const policy_def *p, const scn_scenario *s, const void *opts, dp_err *err)
{
    (void)p;
    const rg_opts *o = opts;
    if (o->wan == RG_ASYNC && scn_has_failures(s))
        return dp_err_set(
            err, DP_EINPUT,
            "%s: policies.regional.wan: async does not model device failures yet: use wan: sync in a "
            "world with failures (got async)",
            s->path ? s->path : "scenario");
    return 0;
}

static const char *const wan_names[] = {"sync", "async", NULL};

static const popt rg_table[] = {
    {"steps", NULL, POPT_INT, SCN_UNIT_NUMBER, offsetof(rg_opts, steps), 16, 1, 1e9, NULL,
     "H: local steps per device between its server's averages"},
    {"wan", NULL, POPT_ENUM, SCN_UNIT_NUMBER, offsetof(rg_opts, wan), RG_SYNC, 0, 0, wan_names,
     "sync: every round the servers' models averaged at the main server; async: each server on its own"},
    {"wan_every", NULL, POPT_INT, SCN_UNIT_NUMBER, offsetof(rg_opts, wan_every), 1, 1, 1e9, NULL,
     "async: a server's rounds between its pushes to the main server"},
    {NULL, NULL, 0, 0, 0, 0, 0, 0, NULL, NULL},
};

const policy_def policy_regional = {
    .name = "regional",
    .label = "Regional servers",
    .color = "#fb9a99",
    .summary = "regional parameter servers: site averages at each site's server, then a WAN average",
    .opts = rg_table,
    .opts_size = sizeof(rg_opts),
    .check = rg_check,
    .start = rg_start,
    .free = rg_free,
    .on_device = rg_on_device,
};
