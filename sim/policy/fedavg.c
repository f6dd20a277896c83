/* fedavg.c: federated averaging with client selection (McMahan et al.,
 * AISTATS 2017), for fleets on batteries (docs/MODEL.md section 11).
 *
 * Data: an equal split sent once with the model (cl_distribute).  Then
 * rounds: the server selects up to `clients` devices among those up, sends
 * each the global model (M down), each runs `steps` local batches on its
 * shard and uploads its model (M up); when every selected device still up
 * has uploaded, the server averages them (k x M / aggregate rate), weighted
 * by samples.  A round completes when every client it selected reports (or
 * `min_clients` of them): a round short of models is dropped, its work
 * lost (as Flower's min_fit_clients, or a deadline a client missed).  An
 * epoch is `rounds` completed rounds.
 *
 * Selection (`select`):
 *  - random: a uniform sample of the devices up, from the policy's own
 *    seeded stream (the run's seed);
 *  - energy: the devices up ranked by the rounds their battery still holds,
 *    E_left / E_round, E_round being the energy a round costs the device
 *    alone (its power figures over its model download and upload at its
 *    link's rates and latency, and `steps` batches); ties to the faster
 *    round, then the lower index.  A device without a battery holds
 *    infinitely many rounds.  This is dpsim's own rule in the spirit of
 *    the battery-aware schedulers (select by remaining energy and speed),
 *    not a transcription of one paper's formula;
 *  - eafl: EAFL's utility (eafl.c: Arouj and Abdelmoniem, FedEdge 2022, on
 *    Oort, OSDI 2021): S = w x normalised Oort utility + (1 - w) x battery
 *    level, Oort's utility being the device's samples (its statistical
 *    utility with every loss 1: the learner's losses do not reach the
 *    selector) times (T / t_round)^penalty when its predicted round is
 *    longer than the preferred duration T (`deadline`); the K best scores,
 *    ties to the lower index (Oort and EAFL sample among the best by
 *    score and explore unseen clients; the simulator knows every device's
 *    round, so it takes the best deterministically).
 *
 * Failures (a battery at its cutoff, or `availability`): a selected device
 * going down leaves the round (its compute since the round began is lost),
 * which then completes only with `min_clients` set and met.  With fewer
 * than min_clients (at least one) up the job waits for a return; when none
 * can return (batteries empty, no charger) the run ends there, its rounds
 * counted (`fedavg.rounds`), instead of failing.
 */
#include "commlight.h"
#include "eafl.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { FA_RANDOM = 0, FA_ENERGY = 1, FA_EAFL = 2 } fa_select;

typedef struct fa_opts {
    int clients;     /* per round; 0 = every device */
    int steps;       /* local batches per round */
    int rounds;      /* completed rounds per epoch */
    int select;      /* fa_select */
    int min_clients; /* models a round needs; 0 = every client it selected */
    double weight;   /* eafl: w, Oort's utility against the battery level */
    double deadline; /* eafl: Oort's preferred round duration T (0: none) */
    double penalty;  /* eafl: Oort's straggler penalty alpha */
} fa_opts;

typedef struct fa_dev {
    prt *rt;
    size_t d;
    int in;       /* selected, in the round under way */
    int arrived;  /* its model is at the server */
    int done;     /* steps done this round */
    double c0;    /* compute seconds when the round began */
    int ready;    /* the distribution is over for it (it holds its shard, or it went down) */
    int has_data; /* holds its shard */
    int pending;  /* flows of its download still on the way (the model, and its shard if it lost it) */
    double e_round, t_round; /* predicted energy and time of a round alone */
} fa_dev;

typedef struct fa_state {
    fa_opts o;
    fa_dev *dev;
    size_t *parts, n_parts;
    size_t *pick;               /* the round's selection */
    double *util, *soc, *score; /* eafl: per candidate (index into pick) */
    size_t n_pick, n_in, arrived;
    int64_t rounds, tried, failed, in_epoch, first_drop_round;
    int waiting, ready;
    uint64_t rng;
    cl_stats cs;
} fa_state;

static void start_round(prt *rt, fa_state *st);

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The energy and time of one round of device d alone (no sharing). */
static void predict(prt *rt, fa_dev *v, int steps)
{
    const scn_scenario *s = prt_scn(rt);
    const scn_group *g = &s->groups[s->devices[v->d].group];
    double M = s->model.model_bytes, lat = g->link.latency_s;
    double down = M / fmin(g->link.down_Bps, s->server.nic_up_Bps) + lat;
    double up = prt_wire_bytes(rt, M) / fmin(g->link.up_Bps, s->server.nic_down_Bps) + lat;
    double comp = steps * scn_batch_time(s, g, g->batch);
    const scn_energy *e = prt_energy_of(rt, v->d);
    v->t_round = down + comp + up;
    v->e_round = e ? e->receive_w * down + e->compute_w * comp + e->transmit_w * up : 0;
}

static double rounds_left(const prt *rt, const fa_dev *v)
{
    double left = prt_energy_left(rt, v->d);
    if (!isfinite(left))
        return INFINITY;
    return v->e_round > 0 ? left / v->e_round : INFINITY;
}

/* 1 if device a ranks before b under `energy`. */
static int before(const prt *rt, const fa_dev *a, const fa_dev *b)
{
    double ra = rounds_left(rt, a), rb = rounds_left(rt, b);
    if (ra != rb)
        return ra > rb;
    if (a->t_round != b->t_round)
        return a->t_round < b->t_round;
    return a->d < b->d;
}

/* The round's clients into st->pick (devices up only). */
static void select_clients(prt *rt, fa_state *st)
{
    size_t m = 0;
    for (size_t i = 0; i < st->n_parts; i++)
        if (prt_device_up(rt, st->parts[i]))
            st->pick[m++] = st->parts[i];
    size_t k = st->o.clients > 0 && (size_t)st->o.clients < m ? (size_t)st->o.clients : m;
    if (st->o.select == FA_EAFL) {
        for (size_t i = 0; i < m; i++) {
            size_t d = st->pick[i];
            st->util[i] = eafl_oort_utility((double)prt_share(rt)[d], st->dev[d].t_round, st->o.deadline,
                                            st->o.penalty);
            st->soc[i] = prt_energy_soc(rt, d);
        }
        eafl_scores(m, st->util, st->soc, st->o.weight, st->score);
    }
    for (size_t i = 0; i < k; i++) { /* the first k of a partial shuffle or of a selection sort */
        size_t j = i;
        if (st->o.select == FA_RANDOM) {
            j = i + (size_t)(splitmix(&st->rng) % (uint64_t)(m - i));
        } else if (st->o.select == FA_EAFL) {
            for (size_t q = i + 1; q < m; q++)
                if (st->score[q] > st->score[j] ||
                    (st->score[q] == st->score[j] && st->pick[q] < st->pick[j]))
                    j = q;
            double x = st->score[i];
            st->score[i] = st->score[j];
            st->score[j] = x;
        } else {
            for (size_t q = i + 1; q < m; q++)
                if (before(rt, &st->dev[st->pick[q]], &st->dev[st->pick[j]]))
                    j = q;
        }
        size_t t = st->pick[i];
        st->pick[i] = st->pick[j];
        st->pick[j] = t;
    }
    st->n_pick = k;
}

static int emit(prt *rt, const fa_state *st)
{
    return cl_emit(rt, &st->cs) || prt_stat(rt, "fedavg.rounds", RES_SCOPE_RUN, 0, 0, (double)st->rounds) ||
           prt_stat(rt, "fedavg.rounds_failed", RES_SCOPE_RUN, 0, 0, (double)st->failed) ||
           prt_stat(rt, "fedavg.first_drop_round", RES_SCOPE_RUN, 0, 0, (double)st->first_drop_round);
}

static void round_done(prt *rt, void *ctx)
{
    (void)ctx;
    fa_state *st = prt_state(rt);
    size_t m = 0;
    int64_t batch = 0;
    for (size_t i = 0; i < st->n_pick; i++) {
        fa_dev *v = &st->dev[st->pick[i]];
        if (v->in && v->arrived) {
            st->pick[m++] = v->d;
            batch += (int64_t)v->done * prt_scn(rt)->groups[prt_scn(rt)->devices[v->d].group].batch;
        }
        v->in = v->arrived = 0;
    }
    size_t need = st->o.min_clients > 0 ? (size_t)st->o.min_clients : st->n_pick;
    st->n_pick = 0;
    if (m < need || !m) {
        st->failed++; /* too few models: the server drops the round */
    } else {
        prt_learn_average(rt, st->pick, m, 1, 1);
        st->rounds++;
        st->cs.rounds++;
        cl_update(&st->cs, batch, (int64_t)m, 0);
        if (++st->in_epoch >= st->o.rounds) {
            st->in_epoch = 0;
            if (prt_epoch(rt) >= prt_scn(rt)->training.epochs) {
                if (emit(rt, st))
                    return;
            }
            if (prt_end_epoch(rt) <= 0)
                return;
        }
    }
    start_round(rt, st);
}

static void average(prt *rt, fa_state *st)
{
    if (prt_at(rt, prt_now(rt) + cl_aggregate_s(rt, (double)st->arrived), round_done, NULL))
        prt_fail(rt, DP_ENOMEM, "out of memory");
}

static void on_upload(void *ctx, uint64_t id)
{
    (void)id;
    fa_dev *v = ctx;
    prt *rt = v->rt;
    fa_state *st = prt_state(rt);
    prt_set_act(rt, v->d, RES_ACT_WAIT);
    if (!v->in)
        return;
    v->arrived = 1;
    if (++st->arrived == st->n_in)
        average(rt, st);
}

static void step(prt *rt, void *ctx)
{
    fa_dev *v = ctx;
    fa_state *st = prt_state(rt);
    if (!v->in)
        return;
    if (v->done >= st->o.steps) {
        double M = prt_wire_bytes(rt, prt_scn(rt)->model.model_bytes);
        prt_set_act(rt, v->d, RES_ACT_SEND);
        prt_add_server_bytes(rt, v->d, M);
        if (!world_transfer(prt_world(rt), (int)v->d + 1, 0, M, on_upload, v))
            prt_fail(rt, DP_ENOMEM, "out of memory");
        return;
    }
    const scn_scenario *s = prt_scn(rt);
    v->done++;
    st->cs.steps[v->d]++;
    prt_compute(rt, v->d, s->groups[s->devices[v->d].group].batch, 1.0, step, v, NULL);
}

static void on_download(void *ctx, uint64_t id)
{
    (void)id;
    fa_dev *v = ctx;
    if (--v->pending > 0)
        return;
    prt_set_act(v->rt, v->d, RES_ACT_WAIT);
    if (!v->in)
        return;
    v->has_data = 1;
    prt_learn_pull(v->rt, v->d);
    step(v->rt, v);
}

/* Too few up for a round: wait for a return, or end the run when none can come. */
static void nobody(prt *rt, fa_state *st)
{
    world *w = prt_world(rt);
    for (size_t i = 0; i < st->n_parts; i++)
        if (isfinite(world_dev_next_change(w, st->parts[i]))) {
            st->waiting = 1;
            return;
        }
    if (emit(rt, st) || prt_stat(rt, "fedavg.exhausted_s", RES_SCOPE_RUN, 0, 0, prt_now(rt)))
        return;
    prt_finish(rt);
}

static void start_round(prt *rt, fa_state *st)
{
    st->waiting = 0;
    select_clients(rt, st);
    if (!st->n_pick || (st->o.min_clients > 0 && st->n_pick < (size_t)st->o.min_clients)) {
        nobody(rt, st);
        return;
    }
    st->tried++;
    st->n_in = st->n_pick;
    st->arrived = 0;
    double M = prt_scn(rt)->model.model_bytes;
    for (size_t i = 0; i < st->n_pick; i++) {
        fa_dev *v = &st->dev[st->pick[i]];
        v->in = 1;
        v->arrived = 0;
        v->done = 0;
        v->c0 = prt_compute_s(rt, v->d);
        v->pending = 1;
        prt_set_act(rt, v->d, RES_ACT_RECV_MODEL);
        prt_add_server_bytes(rt, v->d, M);
        if (!v->has_data) { /* it lost its shard (or never got it): sent again with the model */
            double data = (double)prt_share(rt)[v->d] * prt_scn(rt)->dataset.sample_bytes;
            v->pending = 2;
            prt_add_server_bytes(rt, v->d, data);
            prt_add_resent(rt, data);
            if (!world_transfer(prt_world(rt), 0, (int)v->d + 1, data, on_download, v)) {
                prt_fail(rt, DP_ENOMEM, "out of memory");
                return;
            }
        }
        if (!world_transfer(prt_world(rt), 0, (int)v->d + 1, M, on_download, v)) {
            prt_fail(rt, DP_ENOMEM, "out of memory");
            return;
        }
    }
}

static void on_ready(prt *rt, void *ctx)
{
    fa_dev *v = ctx;
    fa_state *st = prt_state(rt);
    if (v->ready)
        return;
    v->ready = 1;
    v->has_data = prt_device_up(rt, v->d);
    if (++st->ready == (int)st->n_parts)
        start_round(rt, st);
}

static void fa_on_device(prt *rt, const void *opts, size_t d, int up)
{
    (void)opts;
    fa_state *st = prt_state(rt);
    if (!st || prt_failed(rt) || prt_share(rt)[d] == 0)
        return;
    if (up) {
        if (st->waiting)
            start_round(rt, st);
        return;
    }
    if (st->first_drop_round < 0)
        st->first_drop_round = st->tried;
    fa_dev *v = &st->dev[d];
    if (!cl_keeps_data(rt, d))
        v->has_data = 0;
    if (st->ready < (int)st->n_parts) { /* during the distribution: it is not waited for */
        on_ready(rt, v);
        return;
    }
    if (!v->in || v->arrived)
        return; /* a model at the server counts */
    v->in = 0;
    st->n_in--;
    prt_add_lost_s(rt, prt_compute_s(rt, d) - v->c0);
    if (st->n_in == 0 || st->arrived == st->n_in)
        average(rt, st);
}

static int fa_start(prt *rt, const void *opts)
{
    size_t n = prt_n(rt);
    fa_state *st = dp_calloc(1, sizeof *st);
    prt_set_state(rt, st);
    if (!st)
        return dp_err_set(prt_err(rt), DP_ENOMEM, "out of memory");
    st->o = *(const fa_opts *)opts;
    st->rng = prt_seed(rt) ^ 0x6665646176670000ull; /* "fedavg" */
    st->first_drop_round = -1;
    prt_learn_mode(rt, PRT_LEARN_LOCAL);
    st->dev = dp_calloc(n, sizeof *st->dev);
    st->parts = dp_calloc(n, sizeof *st->parts);
    st->pick = dp_calloc(n, sizeof *st->pick);
    st->util = dp_calloc(3 * (n ? n : 1), sizeof *st->util);
    st->soc = st->util + n;
    st->score = st->soc + n;
    if (!st->dev || !st->parts || !st->pick || !st->util || cl_stats_init(&st->cs, n))
        return dp_err_set(prt_err(rt), DP_ENOMEM, "out of memory for %zu devices", n);
    for (size_t d = 0; d < n; d++) {
        st->dev[d] = (fa_dev){.rt = rt, .d = d};
        predict(rt, &st->dev[d], st->o.steps);
    }
    return cl_distribute(rt, 1, st->dev, sizeof *st->dev, st->parts, &st->n_parts, on_ready);
}

static void fa_free(prt *rt, const void *opts)
{
    (void)opts;
    fa_state *st = prt_state(rt);
    if (st) {
        dp_free(st->dev);
        dp_free(st->parts);
        dp_free(st->pick);
        dp_free(st->util);
        cl_stats_free(&st->cs);
    }
    dp_free(st);
    prt_set_state(rt, NULL);
}

static const char *const select_names[] = {"random", "energy", "eafl", NULL};

static const popt fa_table[] = {
    {"clients", NULL, POPT_INT, SCN_UNIT_NUMBER, offsetof(fa_opts, clients), 0, 0, 1e9, NULL,
     "K: clients selected per round among the devices up (0 = every device)"},
    {"steps", NULL, POPT_INT, SCN_UNIT_NUMBER, offsetof(fa_opts, steps), 8, 1, 1e9, NULL,
     "local batches each client runs per round"},
    {"rounds", NULL, POPT_INT, SCN_UNIT_NUMBER, offsetof(fa_opts, rounds), 10, 1, 1e9, NULL,
     "completed rounds per epoch"},
    {"min_clients", NULL, POPT_INT, SCN_UNIT_NUMBER, offsetof(fa_opts, min_clients), 0, 0, 1e9, NULL,
     "models a round needs, else the server drops it (0 = every client it selected)"},
    {"select", NULL, POPT_ENUM, SCN_UNIT_NUMBER, offsetof(fa_opts, select), FA_RANDOM, 0, 0, select_names,
     "random: uniform among devices up; energy: most rounds left on the battery first, then the faster; "
     "eafl: EAFL's utility, w x Oort's utility + (1 - w) x battery level"},
    {"weight", NULL, POPT_QUANTITY, SCN_UNIT_NUMBER, offsetof(fa_opts, weight), 0.5, -1, 1, NULL,
     "eafl: w, the weight of Oort's (normalised) utility against the battery level, 0..1"},
    {"deadline", NULL, POPT_QUANTITY, SCN_UNIT_TIME, offsetof(fa_opts, deadline), 0, -1, 1e12, NULL,
     "eafl: Oort's preferred round T; a longer predicted round t scales the utility by (T/t)^penalty (0 = "
     "none)"},
    {"penalty", NULL, POPT_QUANTITY, SCN_UNIT_NUMBER, offsetof(fa_opts, penalty), 2, -1, 1e3, NULL,
     "eafl: Oort's straggler penalty alpha"},
    {NULL, NULL, 0, 0, 0, 0, 0, 0, NULL, NULL},
};

const policy_def policy_fedavg = {
    .name = "fedavg",
    .label = "FedAvg",
    .color = "#e31a1c",
    .summary = "federated averaging: K clients per round (random, energy-aware or EAFL), local steps, server "
               "average",
    .opts = fa_table,
    .opts_size = sizeof(fa_opts),
    .start = fa_start,
    .free = fa_free,
    .on_device = fa_on_device,
};
