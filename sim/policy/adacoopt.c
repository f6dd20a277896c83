/* adacoopt.c: AdaCoOpt (Liu et al., IWQoS 2023; the authors' code,
 * control_algorithm/adaptive_tau.py): federated rounds of tau local steps
 * then an average weighted by local data, tau and the per-client batches
 * chosen every round from constants estimated online.
 *
 * A round: every client (a device with a share) holds the global model,
 * runs tau local steps of its batch b_i with learning rate eta x D_i /
 * (D / N), uploads its model (the run's compressed bytes); the server
 * averages the models weighted by D_i (k x M / aggregate rate), decides
 * the next round's tau and b_i (adacoopt.h, aco_decide), and every client
 * downloads the new model.
 *
 * The estimates (as the code's ControlAlgAdaptiveTauClient): at a round's
 * start each client measures the gradient and loss of its next batch at
 * the global model, at its end the same at its local model.  With the
 * previous round's end: beta_i = |g_loc(prev) - g_glob| / |w_loc(prev) -
 * w_glob| (at least 1e-5), rho_i = |F_loc(prev) - F_glob| / the same, c_i
 * = |g_loc(prev)|^2 / F_loc(prev); the server takes their D-weighted
 * means, delta = sum D_i |g_glob_i - g_glob| / D with g_glob the D-weighted
 * mean of the g_glob_i, each smoothed by a moving average (`holding`).
 * The first round runs `tau0`.  Measurements read the learner's data
 * without consuming it, so they cost no simulated time (the code's clients
 * compute them beside training).
 *
 * An epoch is one pass over the data as a pool (a client takes its batch
 * from its own share, then from the share with most left); the round in
 * which the pool runs out ends early and ends the epoch.  The learner must
 * be on (`learning:`): the decisions need gradients.  Not in worlds with
 * failures.
 */
#include "adacoopt.h"
#include "commlight.h"
#include "policy.h"
#include "runtime.h"
#include "yamltree.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

double aco_gap(const aco_in *in, int tau)
{
    double D = 0, D2 = 0;
    for (size_t i = 0; i < in->n; i++)
        D += in->D[i], D2 += in->D[i] * in->D[i];
    double eta = in->eta, beta = in->beta, delta = in->delta;
    double h = (delta / beta) * (pow(eta * beta + 1, tau) - 1) - delta * eta * tau;
    if (!(h > 0))
        h = 0;
    double q = 1 - eta * in->c, qt = pow(q, tau), s = floor(in->budget / tau);
    double gap1 = qt * in->first_loss; /* T = K tau, K = 1 */
    double gap2 = (1 - qt) / (1 - qt) *
                  ((1 - qt) * beta * eta * eta * D2 / ((1 - qt) * (1 - q) * 2 * D * D * s) + in->rho * h);
    return gap1 + gap2;
}

void aco_decide(const aco_in *in, int *tau_out, int *s_out, int *b)
{
    int tau = in->tau_prev;
    if (in->has_est) {
        double best = INFINITY;
        tau = 1;
        for (int t = 1; t <= in->tau_max; t++) {
            double g = aco_gap(in, t);
            if (g < best)
                best = g, tau = t;
        }
    }
    int s = (int)floor(in->budget / tau);
    if (s < 1)
        s = 1;
    *tau_out = tau;
    *s_out = s;
    size_t n = in->n;
    /* caps: what a client computes in round_time / tau */
    double *cap = malloc(n * sizeof *cap), *left = malloc(n * sizeof *left);
    if (!cap || !left) { /* no room for the split: the plain proportional one */
        for (size_t i = 0; i < n; i++)
            b[i] = s;
        free(cap);
        free(left);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        cap[i] = INFINITY;
        if (in->round_time > 0 && in->speed && in->speed[i] > 0) {
            cap[i] = floor(in->round_time / tau * in->speed[i]);
            if (cap[i] < 1)
                cap[i] = 1;
        }
        left[i] = in->D[i]; /* 0: capped (or no data) */
        b[i] = 0;
    }
    double tot = (double)s * (double)n, remain = tot;
    for (int again = 1; again;) { /* the code's passes: remain and the uncapped total move within one */
        again = 0;
        for (size_t i = 0; i < n; i++) {
            if (left[i] == 0)
                continue;
            double sum = 0;
            for (size_t j = 0; j < n; j++)
                sum += left[j];
            double x = floor(remain * left[i] / sum);
            b[i] = x < 1 ? 1 : (int)x;
            if (b[i] > cap[i]) {
                b[i] = (int)cap[i];
                left[i] = 0;
                remain -= b[i];
                again = 1;
            }
        }
    }
    double given = 0;
    for (size_t i = 0; i < n; i++)
        given += b[i];
    for (double k = 0; k < tot - given; k++) { /* leftovers: the largest drop of sum D_i^2 / b_i */
        size_t best = n;
        double bv = -1;
        for (size_t j = 0; j < n; j++)
            if (left[j] != 0) {
                double v = in->D[j] * in->D[j] / ((double)b[j] * (b[j] + 1));
                if (v > bv)
                    bv = v, best = j;
            }
        if (best == n)
            break;
        b[best]++;
        if (b[best] >= cap[best])
            left[best] = 0;
    }
    free(cap);
    free(left);
}

/* ---- the policy ---------------------------------------------------------- */

typedef struct aco_opts {
    int tau_max, tau0;
    double budget;     /* tau x s */
    double round_time; /* seconds; 0 = no caps */
    double holding;    /* moving-average holding parameter */
} aco_opts;

typedef struct aco_dev {
    prt *rt;
    size_t d;
    int b;          /* this round's batch */
    int done;       /* steps done this round */
    double c0;      /* compute seconds at the round's start */
    int64_t taken;  /* samples this round */
    double speed;   /* measured samples per second (0: unknown) */
    double *g_glob; /* gradient at the global model, this round */
    double *g_loc;  /* at its local model, the previous round's end */
    double *w_loc;  /* that local model */
    double f_glob, f_loc;
    int has_loc;
} aco_dev;

typedef struct aco_state {
    aco_opts o;
    aco_dev *dev;
    size_t n, *parts, n_parts;
    double *D, *speeds, *gbar, *wts;
    size_t P;
    int tau;
    size_t arrived, downloaded;
    double first_loss;
    int have_first;
    double beta, rho, c, delta; /* moving averages (NAN: none yet) */
    int64_t rounds, tau_sum;
    cl_stats cs;
} aco_state;

static void begin_round(prt *rt, aco_state *st);

static double mavg(double prev, double x, double hold)
{
    if (isnan(prev))
        return x;
    if (isnan(x))
        return prev;
    return hold * prev + (1 - hold) * x;
}

static double dist(const double *a, const double *b, size_t P)
{
    double s = 0;
    for (size_t j = 0; j < P; j++)
        s += (a[j] - b[j]) * (a[j] - b[j]);
    return sqrt(s);
}

/* The estimates from this round's global-model probes and the previous
 * round's local ones (the code's update_after_all_local and server). */
static void estimate(prt *rt, aco_state *st)
{
    const double *wg = prt_learn_weights(rt, prt_n(rt)); /* the global model at this round's start */
    double D = 0, beta = 0, rho = 0, c = 0;
    int any = 0;
    memset(st->gbar, 0, st->P * sizeof *st->gbar);
    for (size_t i = 0; i < st->n_parts; i++) {
        aco_dev *v = &st->dev[st->parts[i]];
        double Di = st->D[i];
        D += Di;
        for (size_t j = 0; j < st->P; j++)
            st->gbar[j] += Di * v->g_glob[j];
        if (!v->has_loc)
            continue;
        any = 1;
        double dw = dist(v->w_loc, wg, st->P), bi = 0, ri = 0;
        if (dw > 1e-10) {
            bi = dist(v->g_loc, v->g_glob, st->P) / dw;
            ri = fabs(v->f_loc - v->f_glob) / dw;
        }
        if (bi < 1e-5 || isnan(bi))
            bi = 1e-5;
        if (isnan(ri))
            ri = 0;
        double gn = 0;
        for (size_t j = 0; j < st->P; j++)
            gn += v->g_loc[j] * v->g_loc[j];
        beta += Di * bi;
        rho += Di * ri;
        c += Di * gn / v->f_loc;
    }
    for (size_t j = 0; j < st->P; j++)
        st->gbar[j] /= D;
    if (!any)
        return;
    double delta = 0;
    for (size_t i = 0; i < st->n_parts; i++)
        delta += st->D[i] * dist(st->dev[st->parts[i]].g_glob, st->gbar, st->P);
    double h = st->o.holding;
    st->beta = mavg(st->beta, beta / D, h);
    st->rho = mavg(st->rho, rho / D, h);
    st->c = mavg(st->c, c / D, h);
    st->delta = mavg(st->delta, delta / D, h);
}

static void decide(prt *rt, aco_state *st)
{
    int *b = (int *)st->wts; /* scratch: n_parts ints fit in n_parts doubles */
    for (size_t i = 0; i < st->n_parts; i++)
        st->speeds[i] = st->dev[st->parts[i]].speed;
    aco_in in = {.n = st->n_parts,
                 .D = st->D,
                 .eta = prt_learn_lr(rt),
                 .tau_max = st->o.tau_max,
                 .budget = st->o.budget,
                 .first_loss = st->first_loss,
                 .beta = st->beta,
                 .rho = st->rho,
                 .c = st->c,
                 .delta = st->delta,
                 .has_est = !isnan(st->beta),
                 .tau_prev = st->tau,
                 .speed = st->speeds,
                 .round_time = st->o.round_time};
    int s;
    aco_decide(&in, &st->tau, &s, b);
    for (size_t i = 0; i < st->n_parts; i++)
        st->dev[st->parts[i]].b = b[i];
}

static void step(prt *rt, aco_dev *v);

static void on_upload(void *ctx, uint64_t id);

static void device_done(prt *rt, aco_state *st, aco_dev *v)
{
    double c = prt_compute_s(rt, v->d) - v->c0;
    if (c > 0 && v->taken > 0)
        v->speed = (double)v->taken / c;
    /* the local end of the round: its gradient and loss, and the model */
    memcpy(v->w_loc, prt_learn_weights(rt, v->d), st->P * sizeof *v->w_loc);
    if (prt_learn_probe(rt, v->d, 0, (size_t)(v->b > 0 ? v->b : 1), v->g_loc, &v->f_loc))
        return;
    v->has_loc = 1;
    double M = prt_wire_bytes(rt, prt_scn(rt)->model.model_bytes); /* the upload, as compressed */
    prt_set_act(rt, v->d, RES_ACT_SEND);
    prt_add_server_bytes(rt, v->d, M);
    if (!world_transfer(prt_world(rt), (int)v->d + 1, 0, M, on_upload, v))
        prt_fail(rt, DP_ENOMEM, "out of memory");
}

static void after_step(prt *rt, void *ctx)
{
    aco_dev *v = ctx;
    v->done++;
    step(rt, v);
}

static void step(prt *rt, aco_dev *v)
{
    aco_state *st = prt_state(rt);
    int n = v->done < st->tau ? cl_take(rt, v->d, v->b) : 0;
    if (n == 0) {
        device_done(rt, st, v);
        return;
    }
    v->taken += n;
    st->cs.steps[v->d]++;
    prt_compute_step(rt, v->d, n, after_step, v, NULL);
}

static void on_download(void *ctx, uint64_t id)
{
    (void)id;
    aco_dev *v = ctx;
    prt *rt = v->rt;
    aco_state *st = prt_state(rt);
    prt_set_act(rt, v->d, RES_ACT_WAIT);
    if (++st->downloaded == st->n_parts)
        begin_round(rt, st);
}

static void averaged(prt *rt, void *ctx)
{
    (void)ctx;
    aco_state *st = prt_state(rt);
    for (size_t i = 0; i < st->n_parts; i++)
        st->wts[i] = st->D[i];
    prt_learn_average_weighted(rt, st->parts, st->n_parts, st->wts);
    int64_t batch = 0;
    for (size_t i = 0; i < st->n_parts; i++)
        batch += st->dev[st->parts[i]].taken;
    cl_update(&st->cs, batch, (int64_t)st->n_parts, 0);
    st->cs.rounds++;
    st->rounds++;
    st->tau_sum += st->tau;
    if (!prt_work_left(rt)) { /* the pool is empty: the epoch ends with this average */
        if (prt_epoch(rt) >= prt_scn(rt)->training.epochs &&
            (cl_emit(rt, &st->cs) ||
             prt_stat(rt, "adacoopt.tau_mean", RES_SCOPE_RUN, 0, 0,
                      (double)st->tau_sum / (double)st->rounds) ||
             prt_stat(rt, "adacoopt.tau_last", RES_SCOPE_RUN, 0, 0, st->tau)))
            return;
        if (prt_end_epoch(rt) <= 0)
            return;
    }
    st->downloaded = 0;
    double M = prt_scn(rt)->model.model_bytes;
    for (size_t i = 0; i < st->n_parts; i++) {
        aco_dev *v = &st->dev[st->parts[i]];
        prt_set_act(rt, v->d, RES_ACT_RECV_MODEL);
        prt_add_server_bytes(rt, v->d, M);
        if (!world_transfer(prt_world(rt), 0, (int)v->d + 1, M, on_download, v)) {
            prt_fail(rt, DP_ENOMEM, "out of memory");
            return;
        }
    }
}

static void on_upload(void *ctx, uint64_t id)
{
    (void)id;
    aco_dev *v = ctx;
    prt *rt = v->rt;
    aco_state *st = prt_state(rt);
    prt_set_act(rt, v->d, RES_ACT_WAIT);
    if (++st->arrived < st->n_parts)
        return;
    if (prt_at(rt, prt_now(rt) + cl_aggregate_s(rt, (double)st->n_parts), averaged, NULL))
        prt_fail(rt, DP_ENOMEM, "out of memory");
}

/* Every client holds the global model: probe it, estimate, decide, run. */
static void begin_round(prt *rt, aco_state *st)
{
    double F = 0, D = 0;
    for (size_t i = 0; i < st->n_parts; i++) {
        aco_dev *v = &st->dev[st->parts[i]];
        int k = v->b > 0 ? v->b : (int)floor(st->o.budget / st->tau);
        if (prt_learn_probe(rt, v->d, 1, (size_t)(k > 0 ? k : 1), v->g_glob, &v->f_glob))
            return;
        F += st->D[i] * v->f_glob;
        D += st->D[i];
    }
    if (!st->have_first) {
        st->first_loss = F / D;
        st->have_first = 1;
    }
    estimate(rt, st);
    decide(rt, st);
    st->arrived = 0;
    for (size_t i = 0; i < st->n_parts && !prt_failed(rt); i++) {
        aco_dev *v = &st->dev[st->parts[i]];
        v->done = 0;
        v->taken = 0;
        v->c0 = prt_compute_s(rt, v->d);
        step(rt, v);
    }
}

static void on_ready(prt *rt, void *ctx)
{
    (void)ctx;
    aco_state *st = prt_state(rt);
    if (++st->downloaded == st->n_parts)
        begin_round(rt, st);
}

static int aco_check(const policy_def *p, const scn_scenario *s, const void *opts, dp_err *err)
{
    (void)opts;
    const yt_node *m = scn_learning(s); /* the SGD learner: `learning:` with more than `efficiency` */
    if (!m || (m->n == 1 && yt_get(m, "efficiency")))
        return dp_err_set(err, DP_EINPUT,
                          "policies.%s: AdaCoOpt chooses tau and the batches from gradients and losses: "
                          "it needs `learning:` in the scenario (scenarios/README.md, Learning)",
                          p->name);
    return 0;
}

extern const policy_def policy_adacoopt;

static int aco_start(prt *rt, const void *opts)
{
    size_t n = prt_n(rt);
    aco_state *st = dp_calloc(1, sizeof *st);
    prt_set_state(rt, st);
    if (!st)
        return dp_err_set(prt_err(rt), DP_ENOMEM, "out of memory");
    if (aco_check(&policy_adacoopt, prt_scn(rt), opts, prt_err(rt)))
        return DP_EINPUT;
    st->o = *(const aco_opts *)opts;
    st->n = n;
    st->tau = st->o.tau0 < st->o.tau_max ? st->o.tau0 : st->o.tau_max;
    st->beta = st->rho = st->c = st->delta = NAN;
    prt_learn_mode(rt, PRT_LEARN_LOCAL);
    st->P = prt_learn_params(rt);
    st->dev = dp_calloc(n, sizeof *st->dev);
    st->parts = dp_calloc(n, sizeof *st->parts);
    st->D = dp_calloc(n, sizeof *st->D);
    st->speeds = dp_calloc(n, sizeof *st->speeds);
    st->wts = dp_calloc(n + 1, sizeof *st->wts);
    st->gbar = dp_calloc(st->P, sizeof *st->gbar);
    if (!st->dev || !st->parts || !st->D || !st->speeds || !st->wts || !st->gbar || cl_stats_init(&st->cs, n))
        return dp_err_set(prt_err(rt), DP_ENOMEM, "out of memory for %zu devices", n);
    for (size_t d = 0; d < n; d++) {
        aco_dev *v = &st->dev[d];
        v->rt = rt;
        v->d = d;
        v->g_glob = dp_calloc(st->P, sizeof(double));
        v->g_loc = dp_calloc(st->P, sizeof(double));
        v->w_loc = dp_calloc(st->P, sizeof(double));
        if (!v->g_glob || !v->g_loc || !v->w_loc)
            return dp_err_set(prt_err(rt), DP_ENOMEM, "out of memory");
    }
    int rc = cl_distribute(rt, 1, st->dev, sizeof *st->dev, st->parts, &st->n_parts, on_ready);
    if (rc)
        return rc;
    double D = 0;
    for (size_t i = 0; i < st->n_parts; i++)
        D += st->D[i] = (double)prt_share(rt)[st->parts[i]];
    for (size_t i = 0; i < st->n_parts; i++) /* the per-client learning rate eta x D_i / (D / N) */
        prt_learn_lr_scale(rt, st->parts[i], st->D[i] * (double)st->n_parts / D);
    return 0;
}

static void aco_free(prt *rt, const void *opts)
{
    (void)opts;
    aco_state *st = prt_state(rt);
    if (st) {
        for (size_t d = 0; st->dev && d < st->n; d++) {
            dp_free(st->dev[d].g_glob);
            dp_free(st->dev[d].g_loc);
            dp_free(st->dev[d].w_loc);
        }
        dp_free(st->dev);
        dp_free(st->parts);
        dp_free(st->D);
        dp_free(st->speeds);
        dp_free(st->wts);
        dp_free(st->gbar);
        cl_stats_free(&st->cs);
    }
    dp_free(st);
    prt_set_state(rt, NULL);
}

static const popt aco_table[] = {
    {"tau_max", NULL, POPT_INT, SCN_UNIT_NUMBER, offsetof(aco_opts, tau_max), 10, 1, 1e6, NULL,
     "tau is chosen each round in 1..tau_max (the code: 10)"},
    {"tau0", NULL, POPT_INT, SCN_UNIT_NUMBER, offsetof(aco_opts, tau0), 1, 1, 1e6, NULL,
     "tau of the first round, before any estimate (at most tau_max)"},
    {"budget", NULL, POPT_QUANTITY, SCN_UNIT_NUMBER, offsetof(aco_opts, budget), 120, 0, 1e12, NULL,
     "tau x s, the samples per client of a round (the code's ts = 120)"},
    {"round_time", NULL, POPT_QUANTITY, SCN_UNIT_TIME, offsetof(aco_opts, round_time), 0, -1, 1e15, NULL,
     "time a round's tau steps may take: caps each batch at round_time / tau x its measured speed (0 = no "
     "caps)"},
    {"holding", NULL, POPT_QUANTITY, SCN_UNIT_NUMBER, offsetof(aco_opts, holding), 0, -1, 0.999999, NULL,
     "moving-average holding parameter of the estimates (the code: 0, no smoothing)"},
    {NULL, NULL, 0, 0, 0, 0, 0, 0, NULL, NULL},
};

const policy_def policy_adacoopt = {
    .name = "adacoopt",
    .label = "AdaCoOpt",
    .color = "#bcbd22",
    .summary =
        "AdaCoOpt: rounds of tau local steps and a data-weighted average; tau and the batches chosen each "
        "round by a convergence bound estimated online (needs learning:)",
    .opts = aco_table,
    .opts_size = sizeof(aco_opts),
    .check = aco_check,
    .start = aco_start,
    .free = aco_free,
};
