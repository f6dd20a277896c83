/* hierarchical.c: hierarchical geo averaging.
 *
 * Data: an equal split, sent once with the model.  Rounds of `steps: H`
 * local steps per device (a round never crosses an epoch, as in localsgd).
 * Then, in three phases:
 *  1. site: when every device of a site has finished its steps, the site's
 *     devices all-reduce the model among themselves (a ring over the site's
 *     links, coll_start_among; nothing for a one-device site);
 *  2. WAN: when every site is done, one device per site (its first in
 *     scenario order, the leader) averages across sites: a ring all-reduce
 *     of the leaders (`wan: ring`) or a push to the server, the server's
 *     averaging (sites x M / aggregate rate) and a pull (`wan: server`);
 *  3. return: each leader, once it holds the result, sends the model to
 *     every other device of its site (direct transfers, all at once).
 * The round ends when every device holds the result; an epoch ends with
 * its last round's WAN average, before phase 3 (docs/MODEL.md, "When a run
 * ends"), so the last epoch returns nothing.  A scenario without
 * sites is refused (check).
 *
 * Failures (worlds with `availability`; scenarios/README.md): a round runs
 * over the participants up at its start (`in`), a site over its members in
 * the round, and a site with none left is skipped by the WAN phase.  The
 * leader is the lowest-index member of the site in the round, so a leader
 * going down is replaced by the next one, which holds the site's average
 * too.  A device going down before its site's average ends loses its
 * round's work (the site's ring, if running, restarts among the others); a
 * site losing its last member before its average is safe (the WAN ring
 * ended, or its upload reached the server) loses every member's work; a
 * broken WAN ring restarts among the leaders left; a leader lost while
 * returning the result leaves the members still waiting for it to fetch
 * the model from the server before the next round.  A device back
 * receives the model (and its shard unless data_persists) and joins at the
 * next round; with nobody up the job waits for a return (cl_none_up).
 */
#include "commlight.h"
#include "runtime.h"

#include <math.h>
#include <stddef.h>

typedef enum { HI_WAN_RING = 0, HI_WAN_SERVER = 1 } hi_wan;

typedef struct hi_opts {
    int steps;      /* H; 0 = a whole local epoch */
    int wan;        /* hi_wan */
    int collective; /* prt_coll_mode of the rings */
} hi_opts;

typedef struct hi_dev {
    prt *rt;
    size_t d;
    int site;
    int done;
    int64_t samples;
    /* worlds with failures */
    int in;       /* in the round under way */
    int arrived;  /* done with its steps in this round */
    int recv;     /* receiving the result from its leader (phase 3) */
    int back;     /* up without the model: fetches it from the server for the next round */
    int has_data; /* holds its shard */
    int lost;     /* its work of this round was counted lost */
    double c0;    /* its compute seconds when the round began */
} hi_dev;

/* Where a site is in the round. */
typedef enum { SITE_COMPUTE, SITE_RING, SITE_AVERAGED, SITE_RETURN, SITE_END } hi_site_phase;
/* Where the WAN phase is: not begun, under way, the server averaging
 * (wan: server), the result exists. */
typedef enum { G_LOCAL, G_WAN, G_AGG, G_AVERAGED } hi_wan_phase;

typedef struct hi_site {
    prt *rt;
    size_t *members; /* participants of the site, scenario order */
    size_t m;
    size_t arrived; /* members in the round done with their steps */
    size_t pending; /* transfers of phase 3 in flight */
    size_t n_in;    /* members in the round (m without failures) */
    int phase;      /* hi_site_phase */
    int uploaded;   /* wan: server: its model reached the server */
    size_t leader;  /* its device in the WAN phase: the lowest-index member in the round */
} hi_site;

typedef struct hi_state {
    hi_opts o;
    hi_dev *dev;
    hi_site *site;
    size_t n_sites; /* sites with participants */
    size_t n_parts; /* participants (st->all[0..n_parts)) */
    size_t *leaders;
    size_t *ring; /* members of a ring being started (coll_start_among copies it) */
    size_t *all;  /* member storage */
    int g;        /* hi_wan_phase */
    cl_stats cs;
    /* worlds with failures */
    int fail_on;
    int waiting;     /* nobody up: the next round waits for a return */
    int64_t skipped; /* samples of an epoch a device down did not start */
} hi_state;

static void step(prt *rt, void *ctx);
static void next_round(prt *rt, hi_state *st);
static void upload(prt *rt, hi_state *st, hi_site *s);
static void download(prt *rt, hi_state *st, hi_site *s);

static void begin_round(prt *rt, hi_dev *v)
{
    v->done = 0;
    step(rt, v);
}

/* The members of site s in the round, scenario order, into out; their count. */
static size_t members_in(const hi_state *st, const hi_site *s, size_t *out)
{
    size_t m = 0;
    for (size_t i = 0; i < s->m; i++)
        if (st->dev[s->members[i]].in)
            out[m++] = s->members[i];
    return m;
}

static size_t first_in(const hi_state *st, const hi_site *s)
{
    for (size_t i = 0; i < s->m; i++)
        if (st->dev[s->members[i]].in)
            return s->members[i];
    return s->members[0];
}

static void reset_round(hi_state *st, size_t n)
{
    st->g = G_LOCAL;
    for (size_t k = 0; k < st->n_sites; k++) {
        hi_site *s = &st->site[k];
        s->arrived = s->pending = 0;
        s->phase = SITE_COMPUTE;
        s->uploaded = 0;
    }
    for (size_t d = 0; d < n; d++)
        st->dev[d].arrived = st->dev[d].recv = st->dev[d].lost = 0;
}

/* The round's WAN average exists (at the leaders or the server): the
 * model is averaged.  The update stream takes it, and when the epoch's
 * work is done the epoch ends here, before the result returns to the
 * sites, since the model is trained once it is averaged (docs/MODEL.md,
 * "When a run ends"): the returns belong to the next epoch, and after the
 * last there are none.  0 to go on returning, 1 when the run is over (or
 * failed). */
static int averaged_now(prt *rt, hi_state *st)
{
    st->g = G_AVERAGED;
    /* the update stream: the WAN average of the site models, weighted by
     * the samples behind each since the last one, now on every device */
    prt_learn_average(rt, NULL, 0, 1, 1);
    int64_t batch = 0, devs = 0;
    size_t n = prt_n(rt);
    for (size_t d = 0; d < n; d++) {
        batch += st->dev[d].samples;
        devs += st->dev[d].samples > 0;
        st->dev[d].samples = 0;
    }
    st->cs.rounds++;
    cl_update(&st->cs, batch, devs, 0);
    if (prt_work_left(rt))
        return 0;
    if (prt_epoch(rt) >= prt_scn(rt)->training.epochs &&
        (cl_emit(rt, &st->cs) ||
         (st->fail_on && prt_stat(rt, "samples_skipped", RES_SCOPE_RUN, 0, 0, (double)st->skipped))))
        return 1;
    return prt_end_epoch(rt) <= 0;
}

/* Every device in the round holds the result (the epoch, if done, ended
 * at the average): the next round. */
static void round_end(prt *rt, hi_state *st)
{
    reset_round(st, prt_n(rt));
    if (st->fail_on) {
        next_round(rt, st);
        return;
    }
    for (size_t k = 0; k < st->n_sites; k++)
        for (size_t i = 0; i < st->site[k].m; i++)
            begin_round(rt, &st->dev[st->site[k].members[i]]);
}

/* The round ends once the result exists and every site with members in
 * the round has it. */
static void round_check(prt *rt, hi_state *st)
{
    if (st->g != G_AVERAGED)
        return;
    for (size_t k = 0; k < st->n_sites; k++)
        if (st->site[k].n_in > 0 && st->site[k].phase != SITE_END)
            return;
    round_end(rt, st);
}

/* No device is left in the round before its result exists: the round is
 * given up (its work was counted lost) and the next one starts with the
 * devices up, or waits for one.  An epoch never ends with nobody up. */
static void give_up(prt *rt, hi_state *st)
{
    for (size_t d = 0; d < prt_n(rt); d++)
        st->dev[d].samples = 0;
    next_round(rt, st);
}

/* ---- phase 3: the result returns inside each site ---- */
static void site_end(prt *rt, hi_state *st, hi_site *s)
{
    s->phase = SITE_END;
    round_check(rt, st);
}

static void on_returned(void *ctx, uint64_t id)
{
    (void)id;
    hi_dev *v = ctx;
    prt *rt = v->rt;
    hi_state *st = prt_state(rt);
    prt_set_act(rt, v->d, RES_ACT_WAIT);
    v->recv = 0;
    hi_site *s = &st->site[v->site];
    if (--s->pending > 0)
        return;
    prt_set_act(rt, s->leader, RES_ACT_WAIT);
    site_end(rt, st, s);
}

static void site_return(prt *rt, hi_state *st, hi_site *s)
{
    s->phase = SITE_RETURN;
    s->leader = first_in(st, s);
    if (s->n_in < 2) {
        site_end(rt, st, s);
        return;
    }
    double M = prt_scn(rt)->model.model_bytes;
    s->pending = s->n_in - 1;
    prt_set_act(rt, s->leader, RES_ACT_SEND);
    for (size_t i = 0; i < s->m; i++) {
        size_t d = s->members[i];
        if (d == s->leader || !st->dev[d].in)
            continue;
        prt_set_act(rt, d, RES_ACT_RECV_MODEL);
        st->dev[d].recv = 1;
        if (!world_transfer(prt_world(rt), (int)s->leader + 1, (int)d + 1, M, on_returned, &st->dev[d])) {
            prt_fail(rt, DP_ENOMEM, "out of memory");
            return;
        }
    }
}

/* ---- phase 2: across the WAN ---- */
static void wan_ring_done(prt *rt, void *ctx)
{
    (void)ctx;
    hi_state *st = prt_state(rt);
    if (averaged_now(rt, st))
        return; /* the run is over: the result is not returned */
    for (size_t k = 0; k < st->n_sites && !prt_failed(rt) && st->g == G_AVERAGED; k++)
        if (st->site[k].n_in > 0 && st->site[k].phase == SITE_AVERAGED)
            site_return(rt, st, &st->site[k]);
    round_check(rt, st); /* every site empty: the result exists, the round ends */
}

/* The WAN ring over the leaders of the sites with members in the round
 * (again, after a leader went down); with none, the round is given up. */
static void wan_ring(prt *rt, hi_state *st)
{
    size_t m = 0;
    for (size_t k = 0; k < st->n_sites; k++)
        if (st->site[k].n_in > 0)
            st->leaders[m++] = st->site[k].leader = first_in(st, &st->site[k]);
    if (m == 0) {
        give_up(rt, st);
        return;
    }
    double M = prt_wire_bytes(rt, prt_scn(rt)->model.model_bytes); /* as compressed */
    if (st->o.collective == PRT_COLL_ANALYTIC)
        cl_tally_ring(rt, &st->cs, st->leaders, m, COLL_ALLREDUCE, M);
    coll_start_among(rt, COLL_ALLREDUCE, M, st->o.collective, st->leaders, m, wan_ring_done, NULL);
}

static void on_leader_download(void *ctx, uint64_t id)
{
    (void)id;
    hi_dev *v = ctx;
    prt *rt = v->rt;
    hi_state *st = prt_state(rt);
    prt_set_act(rt, v->d, RES_ACT_WAIT);
    site_return(rt, st, &st->site[v->site]);
}

static void download(prt *rt, hi_state *st, hi_site *s)
{
    double M = prt_scn(rt)->model.model_bytes;
    size_t d = s->leader = first_in(st, s);
    prt_set_act(rt, d, RES_ACT_RECV_MODEL);
    prt_add_server_bytes(rt, d, M);
    if (!world_transfer(prt_world(rt), 0, (int)d + 1, M, on_leader_download, &st->dev[d]))
        prt_fail(rt, DP_ENOMEM, "out of memory");
}

static void server_averaged(prt *rt, void *ctx)
{
    (void)ctx;
    hi_state *st = prt_state(rt);
    if (averaged_now(rt, st))
        return; /* the run is over: the result is not returned */
    for (size_t k = 0; k < st->n_sites && !prt_failed(rt); k++)
        if (st->site[k].n_in > 0)
            download(rt, st, &st->site[k]);
    round_check(rt, st); /* every site empty: the round ends */
}

/* wan: server: once every site with members in the round has uploaded,
 * the server averages the models it received; none: the round is given up. */
static void server_check(prt *rt, hi_state *st)
{
    if (st->g != G_WAN)
        return;
    size_t got = 0;
    for (size_t k = 0; k < st->n_sites; k++) {
        if (st->site[k].n_in > 0 && !st->site[k].uploaded)
            return;
        got += (size_t)st->site[k].uploaded;
    }
    if (got == 0) {
        give_up(rt, st);
        return;
    }
    st->g = G_AGG;
    if (prt_at(rt, prt_now(rt) + cl_aggregate_s(rt, (double)got), server_averaged, NULL))
        prt_fail(rt, DP_ENOMEM, "out of memory");
}

static void on_leader_upload(void *ctx, uint64_t id)
{
    (void)id;
    hi_dev *v = ctx;
    prt *rt = v->rt;
    hi_state *st = prt_state(rt);
    prt_set_act(rt, v->d, RES_ACT_WAIT);
    st->site[v->site].uploaded = 1;
    server_check(rt, st);
}

static void upload(prt *rt, hi_state *st, hi_site *s)
{
    double M = prt_wire_bytes(rt, prt_scn(rt)->model.model_bytes); /* as compressed */
    size_t d = s->leader = first_in(st, s);
    prt_set_act(rt, d, RES_ACT_SEND);
    prt_add_server_bytes(rt, d, M);
    if (!world_transfer(prt_world(rt), (int)d + 1, 0, M, on_leader_upload, &st->dev[d]))
        prt_fail(rt, DP_ENOMEM, "out of memory");
}

/* The WAN phase starts once every site with members in the round has its
 * average; with no such site the round is given up. */
static void wan_check(prt *rt, hi_state *st)
{
    if (st->g != G_LOCAL)
        return;
    size_t active = 0;
    for (size_t k = 0; k < st->n_sites; k++) {
        if (st->site[k].n_in == 0)
            continue;
        if (st->site[k].phase != SITE_AVERAGED)
            return;
        active++;
    }
    if (active == 0) {
        give_up(rt, st);
        return;
    }
    st->g = G_WAN;
    if (st->o.wan == HI_WAN_RING) {
        wan_ring(rt, st);
        return;
    }
    for (size_t k = 0; k < st->n_sites && !prt_failed(rt); k++)
        if (st->site[k].n_in > 0)
            upload(rt, st, &st->site[k]);
}

/* ---- phase 1: inside each site ---- */
static void site_done(prt *rt, void *ctx)
{
    hi_site *s = ctx;
    /* the update stream: the site's models averaged among its members in
     * the round (st->ring holds them while the ring runs) */
    hi_state *hs = prt_state(rt);
    size_t m = members_in(hs, s, hs->ring);
    prt_learn_average(rt, hs->ring, m, 0, 1);
    s->phase = SITE_AVERAGED;
    wan_check(rt, prt_state(rt));
}

/* Every member of site s in the round is done with its steps: the site's
 * ring (again, after a member went down). */
static void site_check(prt *rt, hi_state *st, hi_site *s)
{
    if (s->phase != SITE_COMPUTE || s->n_in == 0 || s->arrived < s->n_in)
        return;
    s->phase = SITE_RING;
    size_t m = members_in(st, s, st->ring);
    double M = prt_wire_bytes(rt, prt_scn(rt)->model.model_bytes); /* as compressed */
    if (st->o.collective == PRT_COLL_ANALYTIC)
        cl_tally_ring(rt, &st->cs, st->ring, m, COLL_ALLREDUCE, M);
    coll_start_among(rt, COLL_ALLREDUCE, M, st->o.collective, st->ring, m, site_done, s);
}

static void device_done(prt *rt, hi_state *st, hi_dev *v)
{
    prt_set_act(rt, v->d, RES_ACT_WAIT);
    hi_site *s = &st->site[v->site];
    v->arrived = 1;
    s->arrived++;
    site_check(rt, st, s);
}

static void step(prt *rt, void *ctx)
{
    hi_dev *v = ctx;
    hi_state *st = prt_state(rt);
    int64_t *left = prt_left(rt);
    if (left[v->d] <= 0 || (st->o.steps > 0 && v->done >= st->o.steps)) {
        device_done(rt, st, v);
        return;
    }
    int bs = prt_scn(rt)->groups[prt_scn(rt)->devices[v->d].group].batch;
    int n = left[v->d] < bs ? (int)left[v->d] : bs;
    left[v->d] -= n;
    v->samples += n;
    v->done++;
    st->cs.steps[v->d]++;
    prt_compute(rt, v->d, n, 1.0, step, v, NULL);
}

static void on_ready(prt *rt, void *ctx)
{
    hi_dev *v = ctx;
    v->has_data = 1;
    v->back = 0;
    v->c0 = prt_compute_s(rt, v->d);
    begin_round(rt, v);
}

/* ---- failures ---------------------------------------------------------------- */

/* What v computed in this round is lost (once). */
static void lose_work(prt *rt, hi_dev *v)
{
    if (v->lost)
        return;
    v->lost = 1;
    prt_add_lost_s(rt, prt_compute_s(rt, v->d) - v->c0);
    v->samples = 0;
}

/* The next round: the participants up; those back first receive the model
 * (and their shard if they lost it); nobody up: wait for a return. */
static void next_round(prt *rt, hi_state *st)
{
    size_t n = prt_n(rt);
    cl_resend r;
    if (cl_resend_begin(rt, &r))
        goto done;
    reset_round(st, n);
    st->waiting = 0;
    size_t up = 0;
    for (size_t k = 0; k < st->n_sites; k++) {
        hi_site *s = &st->site[k];
        s->n_in = 0;
        for (size_t i = 0; i < s->m; i++) {
            hi_dev *v = &st->dev[s->members[i]];
            v->in = prt_device_up(rt, v->d);
            if (!v->in) {
                st->skipped += cl_skip_left(rt, v->d);
                continue;
            }
            s->n_in++;
            up++;
            v->c0 = prt_compute_s(rt, v->d);
            if (v->back)
                cl_resend_add(rt, &r, v->d, v, v->has_data);
        }
    }
    if (up == 0) {
        st->waiting = cl_none_up(rt, st->all, st->n_parts);
        goto done;
    }
    if (cl_resend_send(rt, &r, on_ready))
        goto done;
    for (size_t k = 0; k < st->n_sites && !prt_failed(rt); k++)
        for (size_t i = 0; i < st->site[k].m; i++) {
            hi_dev *v = &st->dev[st->site[k].members[i]];
            if (v->in && !v->back)
                begin_round(rt, v);
        }
done:
    cl_resend_free(&r);
}

/* Site s's work is in a model that outlives it: the WAN average exists, or
 * its upload reached the server. */
static int site_safe(const hi_state *st, const hi_site *s)
{
    return st->g == G_AVERAGED || s->uploaded;
}

/* v (in the round) went down: it leaves the round; what it broke runs
 * again without it. */
static void went_down(prt *rt, hi_state *st, hi_dev *v)
{
    hi_site *s = &st->site[v->site];
    int leader = st->g != G_LOCAL && s->leader == v->d;
    v->in = 0;
    s->n_in--;
    st->skipped += cl_skip_left(rt, v->d);
    if (v->arrived) {
        v->arrived = 0;
        s->arrived--;
    }
    switch (s->phase) {
    case SITE_RING: /* the site's ring lost a member: it runs again among the others */
        coll_drop_broken(rt);
        s->phase = SITE_COMPUTE;
        /* fall through */
    case SITE_COMPUTE:
        lose_work(rt, v);
        if (s->n_in > 0)
            site_check(rt, st, s);
        else
            wan_check(rt, st); /* the site is skipped */
        return;
    case SITE_AVERAGED:
        if (s->n_in == 0 && !site_safe(st, s))
            for (size_t i = 0; i < s->m; i++) /* the site's average is gone with it */
                lose_work(rt, &st->dev[s->members[i]]);
        if (st->g == G_LOCAL) {
            wan_check(rt, st);
            return;
        }
        if (!leader)
            return;
        if (st->o.wan == HI_WAN_RING) { /* the WAN ring lost a member (the result does not exist yet) */
            coll_drop_broken(rt);
            wan_ring(rt, st);
        } else if (st->g == G_WAN && !s->uploaded) { /* its upload was cut: the next leader's */
            if (s->n_in > 0)
                upload(rt, st, s);
            else
                server_check(rt, st);
        } else if (st->g == G_AVERAGED) { /* its download was cut: the next leader's */
            if (s->n_in > 0)
                download(rt, st, s);
            else
                round_check(rt, st);
        } /* else the server holds its model and the next leader downloads the result */
        return;
    case SITE_RETURN:
        if (leader) { /* the members still waiting fetch the result from the server later */
            for (size_t i = 0; i < s->m; i++) {
                hi_dev *w = &st->dev[s->members[i]];
                if (w->recv) {
                    w->recv = 0;
                    w->back = 1;
                    prt_set_act(rt, w->d, RES_ACT_WAIT);
                }
            }
            s->pending = 0;
            site_end(rt, st, s);
        } else if (v->recv) {
            v->recv = 0;
            if (--s->pending == 0) {
                prt_set_act(rt, s->leader, RES_ACT_WAIT);
                site_end(rt, st, s);
            }
        }
        return;
    default: /* it holds the result: nothing breaks */
        round_check(rt, st);
        return;
    }
}

static void hi_on_device(prt *rt, const void *opts, size_t d, int up)
{
    (void)opts;
    hi_state *st = prt_state(rt);
    if (!st || prt_failed(rt) || prt_share(rt)[d] == 0)
        return; /* not a participant */
    hi_dev *v = &st->dev[d];
    if (up) {
        v->back = 1;
        if (st->waiting)
            next_round(rt, st);
        return;
    }
    v->back = 0;
    if (!cl_keeps_data(rt, d))
        v->has_data = 0;
    if (v->in)
        went_down(rt, st, v);
}

static int hi_start(prt *rt, const void *opts)
{
    const scn_scenario *s = prt_scn(rt);
    size_t n = prt_n(rt), ns = s->n_sites;
    hi_state *st = dp_calloc(1, sizeof *st);
    prt_set_state(rt, st);
    if (!st)
        return dp_err_set(prt_err(rt), DP_ENOMEM, "out of memory");
    st->o = *(const hi_opts *)opts;
    prt_learn_mode(rt, PRT_LEARN_LOCAL);
    st->fail_on = scn_has_failures(s);
    st->dev = dp_calloc(n, sizeof *st->dev);
    st->site = dp_calloc(ns, sizeof *st->site);
    st->leaders = dp_calloc(ns, sizeof *st->leaders);
    st->ring = dp_calloc(n, sizeof *st->ring);
    st->all = dp_calloc(n, sizeof *st->all);
    size_t *count = dp_calloc(ns, sizeof *count);
    int *site_of = dp_calloc(ns, sizeof *site_of); /* scenario site -> our site + 1 */
    double *bytes = dp_calloc(n, sizeof *bytes);   /* equal_split's, unused: cl_distribute sends */
    int rc = 0;
    if (!st->dev || !st->site || !st->leaders || !st->ring || !st->all || !count || !site_of || !bytes ||
        cl_stats_init(&st->cs, n)) {
        rc = dp_err_set(prt_err(rt), DP_ENOMEM, "out of memory for %zu devices", n);
        goto done;
    }
    equal_split(rt, PRT_DATA_SHARD, bytes);
    for (size_t d = 0; d < n; d++)
        if (prt_share(rt)[d] > 0)
            count[s->groups[s->devices[d].group].site]++;
    size_t off = 0;
    for (size_t k = 0; k < ns; k++) {
        if (!count[k])
            continue;
        site_of[k] = (int)st->n_sites + 1;
        st->site[st->n_sites++] = (hi_site){rt, st->all + off, 0, 0, 0, 0, SITE_COMPUTE, 0, 0};
        off += count[k];
    }
    st->n_parts = off;
    for (size_t d = 0; d < n; d++) {
        int sk = s->groups[s->devices[d].group].site;
        int k = prt_share(rt)[d] > 0 ? site_of[sk] - 1 : 0;
        st->dev[d] = (hi_dev){rt, d, k, 0, 0, 0, 0, 0, 0, 0, 0, 0};
        if (prt_share(rt)[d] > 0) {
            hi_site *h = &st->site[k];
            h->members[h->m++] = d;
            st->dev[d].in = 1;
            h->n_in++;
        }
    }
    for (size_t k = 0; k < st->n_sites; k++)
        st->site[k].leader = st->site[k].members[0];
    rc = cl_distribute(rt, 0, st->dev, sizeof *st->dev, NULL, NULL, on_ready);
done:
    dp_free(count);
    dp_free(site_of);
    dp_free(bytes);
    return rc;
}

static void hi_free(prt *rt, const void *opts)
{
    (void)opts;
    hi_state *st = prt_state(rt);
    if (st) {
        dp_free(st->dev);
        dp_free(st->site);
        dp_free(st->leaders);
        dp_free(st->ring);
        dp_free(st->all);
        cl_stats_free(&st->cs);
    }
    dp_free(st);
    prt_set_state(rt, NULL);
}

static int hi_check(const policy_def *p, const scn_scenario *s, const void *opts, dp_err *err)
{
    (void)p;
    (void)opts;
    if (s->n_sites == 0)
        return dp_err_set(err, DP_EINPUT,
                          "%s: policy hierarchical averages inside sites and then across them, but the "
                          "scenario has no `sites:` (give devices a `site:`, or run localsgd instead)",
                          s->path ? s->path : "scenario");
    return 0;
}

static const char *const wan_names[] = {"ring", "server", NULL};

static const popt hi_table[] = {
    {"steps", NULL, POPT_INT, SCN_UNIT_NUMBER, offsetof(hi_opts, steps), 16, 0, 1e9, NULL,
     "H: local steps per device between averages (0 = a whole local epoch)"},
    {"wan", NULL, POPT_ENUM, SCN_UNIT_NUMBER, offsetof(hi_opts, wan), HI_WAN_RING, 0, 0, wan_names,
     "across sites: ring all-reduce of one device per site, or push/pull through the server"},
    {"collective", NULL, POPT_ENUM, SCN_UNIT_NUMBER, offsetof(hi_opts, collective), PRT_COLL_FLOWS, 0, 0,
     popt_collective_names, "the rings (site and WAN): flows through the network model, or analytic"},
    {NULL, NULL, 0, 0, 0, 0, 0, 0, NULL, NULL},
};

const policy_def policy_hierarchical = {
    .name = "hierarchical",
    .label = "Hierarchical",
    .color = "#f0e442",
    .summary = "hierarchical geo averaging: H local steps, average in each site, then across sites",
    .opts = hi_table,
    .opts_size = sizeof(hi_opts),
    .check = hi_check,
    .start = hi_start,
    .free = hi_free,
    .on_device = hi_on_device,
};
