/* cadp_plan.c: C-ADP's planner (docs/MODEL.md section 5): the solver's
 * inputs from a scenario (what each device's link to the server gives it,
 * its compute, the per-epoch exchange and aggregation), the allocation
 * problem, its solution per device or per class of identical devices, and
 * the re-planning over trace windows (cadp_plan).  Contracts: cadp.h.  Used
 * by the policy (cadp.c), by `dpsim solve` and by policies that borrow the
 * allocation (cadp_allocation). */
#include "cadp.h"
#include "policy.h"
#include "runtime_perf.h"
#include "slv.h"

#include <stddef.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Mean capacity of a link over [w0, w1] (w1 <= w0: the trace's own mean,
 * the first plan's guess). */
static double link_mean(double bw, const trace *tr, double w0, double w1)
{
    if (!tr)
        return bw;
    double m = w1 > w0 ? trace_mean_over(tr, w0, w1) : 0;
    return m > 0 ? m : trace_mean(tr); /* an outage over the whole window: the trace's mean */
}

void cadp_inputs_free(cadp_inputs *in)
{
    if (!in)
        return;
    dp_free(in->send_s);
    dp_free(in->batch_s);
    dp_free(in->comm_s);
    dp_free(in->batch);
    dp_free((void *)in->names);
    dp_free(in->links);
    dp_free(in->members);
    dp_free(in->xdn_s);
    dp_free(in->xup_s);
    in->send_s = in->batch_s = in->comm_s = in->xdn_s = in->xup_s = NULL;
    in->batch = NULL;
    in->names = NULL;
    in->links = NULL;
    in->members = NULL;
    in->n_links = 0;
}

/* ---- what a device's link to the server gives it ------------------------ */
/* The planner sees each group's path to the server as the run does: its
 * access link, the WAN route the world takes (world_wan_route), the server
 * NIC, and the TCP window cap the world puts on every flow (window / RTT).
 * Each device gets its path's bottleneck as if it sent alone, the paper's
 * bandwidth_i (a max-min estimate with every flow at once was tried and
 * planned worse runs: the flows do not all run at once); the sharing of
 * the NIC and WAN links enters as shared links instead (shared_links),
 * capacity constraints on what their members move together.  Links: 0 NIC
 * up, 1 NIC down, 2 + 2k + r WAN link k (r = 1: site_b -> site_a). */
typedef struct gpath {
    double cap[2];                       /* per-flow cap, down (0) and up (1): access, TCP window */
    double lat;                          /* one way */
    int link[2][WORLD_MAX_WAN_HOPS + 1]; /* NIC and WAN links each way, -1 ends */
} gpath;

static int group_path(const scn_scenario *s, size_t gi, double w0, double w1, gpath *gp, dp_err *err)
{
    const scn_group *g = &s->groups[gi];
    gp->cap[0] = link_mean(g->link.down_Bps, g->link.down_trace, w0, w1);
    gp->cap[1] = link_mean(g->link.up_Bps, g->link.up_trace, w0, w1);
    gp->lat = g->link.latency_s;
    size_t idx[WORLD_MAX_WAN_HOPS], nh;
    int fwd[WORLD_MAX_WAN_HOPS];
    double wlat;
    int rc = world_wan_route(s, s->server.site, g->site, idx, fwd, &nh, &wlat);
    if (rc == DP_EINPUT)
        return dp_err_set(err, rc, "group %s: its site is more than %d WAN links from the server's", g->name,
                          WORLD_MAX_WAN_HOPS);
    if (rc)
        return dp_err_set(err, rc, "out of memory routing sites");
    gp->lat += wlat;
    size_t k0 = 0, k1 = 0;
    if (isfinite(s->server.nic_up_Bps))
        gp->link[0][k0++] = 0;
    for (size_t h = 0; h < nh; h++) /* down: the route as it runs; up: reversed */
        gp->link[0][k0++] = 2 + 2 * (int)idx[h] + !fwd[h];
    for (size_t h = nh; h-- > 0;)
        gp->link[1][k1++] = 2 + 2 * (int)idx[h] + fwd[h];
    if (isfinite(s->server.nic_down_Bps))
        gp->link[1][k1++] = 1;
    gp->link[0][k0] = gp->link[1][k1] = -1;
    if (s->network.tcp_window_bytes > 0 && gp->lat > 0)
        for (int dir = 0; dir < 2; dir++)
            gp->cap[dir] = fmin(gp->cap[dir], s->network.tcp_window_bytes / (2 * gp->lat));
    return 0;
}

/* The shared links (docs/MODEL.md section 5): for each NIC or WAN link
 * direction towards the devices that some group's path crosses (id), its
 * members and, per use, whether it binds: the data (window 0), the model
 * down (1) and the uploads over its partner direction (2) bind when the
 * members' solo rates add up to more than its capacity.  A link that binds
 * in no use is left out (it never limits a max-min share: every flow on it
 * gets its solo rate), so a world where nothing can saturate keeps the
 * paper's model bit for bit.  A WAN link crossed by routes that do not nest
 * with the ones kept (not laminar) is left out too.  lcap: capacities per
 * window (3 x nl), rate: solo rates per window and group (3 x G). */
static int shared_links(const scn_scenario *s, const gpath *gp, const double *rate, const double *lcap,
                        size_t nl, cadp_inputs *in, dp_err *err)
{
    size_t n = s->n_devices, G = s->n_groups;
    double M = s->model.model_bytes, sb = s->dataset.sample_bytes;
    in->links = dp_calloc(nl, sizeof *in->links);
    in->members = dp_malloc((n ? n : 1) * nl * sizeof *in->members);
    unsigned char *on = dp_calloc(G ? G : 1, 1);
    if (!in->links || !in->members || !on) {
        dp_free(on);
        return dp_err_set(err, DP_ENOMEM, "out of memory for the shared links");
    }
    size_t used = 0;
    for (size_t id = 0; id < nl; id++) {
        if (id == 1 || (id >= 2 && !isfinite(lcap[id]) && !isfinite(lcap[2 * nl + (id ^ 1)])))
            continue;            /* NIC down is the uploads' side of id 0 */
        size_t partner = id ^ 1; /* 0 <-> 1, 2 + 2k + r <-> 2 + 2k + 1 - r */
        double sum[3] = {0, 0, 0};
        int any = 0;
        for (size_t g = 0; g < G; g++) {
            on[g] = 0;
            for (const int *l = gp[g].link[0]; *l >= 0; l++)
                on[g] |= (size_t)*l == id;
            if (!on[g] || s->groups[g].count <= 0)
                continue;
            any = 1;
            for (int w = 0; w < 3; w++)
                sum[w] += (double)s->groups[g].count * rate[(size_t)w * G + g];
        }
        double c0 = lcap[id], c1 = lcap[nl + id], c2 = lcap[2 * nl + partner];
        int b0 = isfinite(c0) && c0 > 0 && sum[0] > c0, b1 = isfinite(c1) && c1 > 0 && sum[1] > c1,
            b2 = isfinite(c2) && c2 > 0 && sum[2] > c2;
        if (!any || !(b0 || b1 || b2))
            continue;
        slv_link *k = &in->links[in->n_links];
        size_t *mem = in->members + used;
        *k = (slv_link){.sample_s = b0 ? sb / c0 : 0,
                        .model_dn_s = b1 ? M / c1 : 0,
                        .model_up_s = b2 ? M / c2 : 0,
                        .members = mem};
        for (size_t d = 0; d < n; d++)
            if (on[s->devices[d].group])
                mem[k->n_members++] = d;
        slv_problem p = {.n = n};
        slv_shared sh = {in->n_links + 1, in->links, in->xdn_s, in->xup_s};
        dp_err ignored = {0};
        if (slv_shared_check(&p, &sh, &ignored))
            continue; /* its routes do not nest with the links kept */
        used += k->n_members;
        in->n_links++;
    }
    dp_free(on);
    return 0;
}

int cadp_inputs_build_window(const scn_scenario *s, double send0, double send1, double ex0, double ex1,
                             cadp_inputs *in, dp_err *err)
{
    size_t n = s->n_devices, G = s->n_groups, nl = 2 + 2 * s->n_wan;
    in->n = n;
    in->send_s = dp_calloc(n, sizeof(double));
    in->batch_s = dp_calloc(n, sizeof(double));
    in->comm_s = dp_calloc(n, sizeof(double));
    in->batch = dp_calloc(n, sizeof(int));
    in->names = dp_calloc(n, sizeof(char *));
    in->xdn_s = dp_calloc(n, sizeof(double));
    in->xup_s = dp_calloc(n, sizeof(double));
    in->n_links = 0;
    in->links = NULL;
    in->members = NULL;
    gpath *gp = dp_calloc(G ? G : 1, sizeof *gp);
    double *rate = dp_calloc(3 * (G ? G : 1), sizeof *rate), *lcapw = dp_calloc(3 * nl, sizeof *lcapw);
    int rc = 0;
    if (!in->send_s || !in->batch_s || !in->comm_s || !in->batch || !in->names || !in->xdn_s || !in->xup_s ||
        !gp || !rate || !lcapw) {
        rc = dp_err_set(err, DP_ENOMEM, "out of memory for %zu devices", n);
        goto done;
    }
    /* rates: [0] data down over the send window, [1] model down and [2]
     * model up over the epochs' */
    for (int w = 0; w < 3 && !rc; w++) {
        double w0 = w ? ex0 : send0, w1 = w ? ex1 : send1;
        /* the paths of a window already routed (the plan's windows are all
         * [0, 0]): the same calls would give the same paths */
        int same = w == 2 || (w == 1 && ex0 == send0 && ex1 == send1);
        for (size_t g = 0; g < G && !rc && !same; g++) {
            if (s->groups[g].count > 0) {
                rc = group_path(s, g, w0, w1, &gp[g], err);
                continue;
            }
            /* no devices: no flow, no route (the world routes only sites in use) */
            gp[g] = (gpath){.cap = {INFINITY, INFINITY}, .lat = 0};
            gp[g].link[0][0] = gp[g].link[1][0] = -1;
        }
        if (rc)
            break;
        double *lcap = lcapw + (size_t)w * nl;
        lcap[0] = s->server.nic_up_Bps;
        lcap[1] = s->server.nic_down_Bps;
        for (size_t k = 0; k < s->n_wan; k++)
            lcap[2 + 2 * k] = lcap[3 + 2 * k] = link_mean(s->wan[k].bandwidth_Bps, s->wan[k].trace, w0, w1);
        for (size_t g = 0; g < G; g++) { /* the path's bottleneck, as if alone */
            double r = gp[g].cap[w == 2];
            for (const int *l = gp[g].link[w == 2]; *l >= 0; l++)
                r = fmin(r, lcap[*l]);
            rate[(size_t)w * G + g] = r;
        }
    }
    if (rc)
        goto done;
    double M = s->model.model_bytes;
    for (size_t d = 0; d < n; d++) {
        size_t gi = s->devices[d].group;
        const scn_group *g = &s->groups[gi];
        in->names[d] = s->devices[d].name;
        double down = rate[gi], exdown = rate[G + gi], exup = rate[2 * G + gi];
        if (!(down > 0) || !(exdown > 0) || !(exup > 0)) {
            rc = dp_err_set(err, DP_EINPUT, "device %s: its link to the server has zero mean bandwidth",
                            s->devices[d].name);
            goto done;
        }
        /* a speed trace stretches compute by its mean factor over the
         * epochs (the exchange window) */
        double speed = g->speed_trace ? link_mean(1, g->speed_trace, ex0, ex1) : 1;
        if (!(speed > 0)) {
            rc = dp_err_set(err, DP_EINPUT, "device %s: its speed trace averages 0", s->devices[d].name);
            goto done;
        }
        in->send_s[d] = s->dataset.sample_bytes / down;
        in->batch[d] = g->batch;
        in->batch_s[d] = scn_batch_time(s, g, g->batch) / speed;
        in->comm_s[d] = M / exdown + M / exup + 2 * gp[gi].lat;
        in->xdn_s[d] = M / exdown;
        in->xup_s[d] = M / exup;
    }
    in->agg_s = isfinite(s->server.aggregate_Bps) ? M / s->server.aggregate_Bps : 0;
    rc = shared_links(s, gp, rate, lcapw, nl, in, err);
done:
    dp_free(gp);
    dp_free(rate);
    dp_free(lcapw);
    if (rc)
        cadp_inputs_free(in);
    return rc;
}

int cadp_inputs_build(const scn_scenario *s, cadp_inputs *in, dp_err *err)
{
    return cadp_inputs_build_window(s, 0, 0, 0, 0, in, err);
}

void cadp_problem(const scn_scenario *s, const cadp_opts *o, const cadp_inputs *in, slv_problem *p)
{
    *p = (slv_problem){
        .n = in->n,
        .send_s = in->send_s,
        .batch = in->batch,
        .batch_s = in->batch_s,
        .comm_s = in->comm_s,
        .names = in->names,
        .epochs = s->training.epochs,
        .samples = s->dataset.samples,
        .agg_s = in->agg_s,
        .allow_exclude = o->exclude_slow,
    };
}

void cadp_shared(const cadp_inputs *in, slv_shared *sh)
{
    *sh = (slv_shared){in->n_links, in->links, in->xdn_s, in->xup_s};
}

/* Per-device objective terms of an allocation (send, epoch) for a result. */
static void fill_terms(const slv_problem *p, slv_result *r)
{
    double send = 0, epoch = 0;
    for (size_t d = 0; d < p->n; d++) {
        send = fmax(send, p->send_s[d] * (double)r->alloc[d]);
        if (r->alloc[d] > 0 || !p->allow_exclude)
            epoch = fmax(epoch, p->comm_s[d] +
                                    p->batch_s[d] * (double)((r->alloc[d] + p->batch[d] - 1) / p->batch[d]));
    }
    r->send_s = send;
    r->epoch_s = epoch;
}

static int solve_classes(const scn_scenario *s, const slv_problem *full, const char *method,
                         const slv_params *prm, slv_result **out, dp_err *err)
{
    size_t K = 0, n = full->n;
    for (size_t g = 0; g < s->n_groups; g++)
        K += s->groups[g].count > 0;
    double *send = dp_calloc(K, sizeof *send), *bt = dp_calloc(K, sizeof *bt),
           *comm = dp_calloc(K, sizeof *comm);
    int *batch = dp_calloc(K, sizeof *batch);
    const char **names = dp_calloc(K, sizeof *names);
    size_t *first = dp_calloc(K, sizeof *first), *count = dp_calloc(K, sizeof *count);
    int64_t *units = dp_calloc(K, sizeof *units);
    slv_result *cr = NULL, *r = NULL;
    int rc = 0;
    if (!send || !bt || !comm || !batch || !names || !first || !count || !units) {
        rc = dp_err_set(err, DP_ENOMEM, "out of memory");
        goto done;
    }
    size_t k = 0, d = 0;
    for (size_t g = 0; g < s->n_groups; g++) {
        size_t m = (size_t)(s->groups[g].count > 0 ? s->groups[g].count : 0);
        if (!m)
            continue;
        first[k] = d;
        count[k] = m;
        units[k] = (int64_t)m; /* the server averages each of the class's devices */
        send[k] = full->send_s[d] / (double)m;
        batch[k] = (int)((size_t)full->batch[d] * m); /* the caller checked it fits */
        bt[k] = full->batch_s[d];
        comm[k] = full->comm_s[d];
        names[k] = s->groups[g].name;
        d += m;
        k++;
    }
    slv_problem cp = *full;
    cp.n = K;
    cp.send_s = send;
    cp.batch = batch;
    cp.batch_s = bt;
    cp.comm_s = comm;
    cp.names = names;
    cp.agg_units = units;
    if ((rc = slv_solve_problem(method, &cp, prm, &cr, err)))
        goto done;
    r = dp_malloc(sizeof *r);
    if (r) {
        *r = *cr;
        r->n = n;
        r->alloc = dp_calloc(n, sizeof *r->alloc);
        r->relaxed = dp_calloc(n, sizeof *r->relaxed);
    }
    if (!r || !r->alloc || !r->relaxed) {
        if (r) {
            dp_free(r->alloc);
            dp_free(r->relaxed);
            dp_free(r);
            r = NULL;
        }
        rc = dp_err_set(err, DP_ENOMEM, "out of memory");
        goto done;
    }
    for (k = 0; k < K; k++) { /* as evenly as possible within the group */
        int64_t X = cr->alloc[k], m = (int64_t)count[k], q = X / m, rem = X % m;
        for (size_t j = 0; j < count[k]; j++) {
            r->alloc[first[k] + j] = q + ((int64_t)j < rem ? 1 : 0);
            r->relaxed[first[k] + j] = cr->relaxed[k] / (double)m;
        }
    }
    r->objective_s = slv_objective(full, r->alloc);
    fill_terms(full, r);
    if (r->status == SLV_STATUS_OPTIMAL && r->objective_s > r->int_lower_bound_s * (1 + 1e-12))
        r->status = SLV_STATUS_NEAR_OPTIMAL;
done:
    slv_result_free(cr);
    dp_free(send);
    dp_free(bt);
    dp_free(comm);
    dp_free(batch);
    dp_free((void *)names);
    dp_free(first);
    dp_free(count);
    dp_free(units);
    *out = r;
    return rc;
}

int cadp_solve(const scn_scenario *s, const cadp_opts *o, const cadp_inputs *in, const char *method,
               const slv_params *prm, int paper_model, slv_result **out, size_t *classes, dp_err *err)
{
    slv_problem p;
    cadp_problem(s, o, in, &p);
    if (paper_model)
        p.allow_exclude = 0;
    *out = NULL;
    int collapse = in->n > CADP_CLASS_MIN;
    size_t K = 0;
    for (size_t g = 0; collapse && g < s->n_groups; g++) {
        K += s->groups[g].count > 0;
        if ((int64_t)s->groups[g].batch * s->groups[g].count > INT32_MAX)
            collapse = 0; /* the class's batch would not fit the solver's int */
    }
    if (collapse && K * 2 > in->n)
        collapse = 0; /* mostly distinct devices: nothing to gain */
    if (classes)
        *classes = collapse ? K : in->n;
    slv_shared sh;
    cadp_shared(in, &sh);
    if (paper_model)
        sh.n_links = 0; /* the paper's model */
    if (!collapse && sh.n_links && in->n <= CADP_SHARED_MAX && !strcmp(method, "exact"))
        return slv_solve_shared(&p, &sh, prm, out, err);
    int rc;
    if (!collapse)
        rc = slv_solve_problem(method, &p, prm, out, err);
    else if (!(rc = slv_problem_check(&p, err))) /* per device first, so messages name devices */
        rc = solve_classes(s, &p, method, prm, out, err);
    if (!rc && sh.n_links) { /* solved without the links: price the result with them */
        slv_result *r = *out;
        r->objective_s = slv_objective_shared(&p, &sh, r->alloc, &r->send_s, &r->epoch_s);
        if (r->status == SLV_STATUS_OPTIMAL && r->objective_s > r->int_lower_bound_s * (1 + 1e-12))
            r->status = SLV_STATUS_NEAR_OPTIMAL;
    }
    return rc;
}

static int has_trace(const scn_scenario *s)
{
    for (size_t g = 0; g < s->n_groups; g++)
        if (s->groups[g].link.up_trace || s->groups[g].link.down_trace || s->groups[g].speed_trace)
            return 1;
    for (size_t k = 0; k < s->n_wan; k++)
        if (s->wan[k].trace)
            return 1;
    return 0;
}

static int same_alloc(const slv_result *a, const slv_result *b)
{
    for (size_t d = 0; d < a->n; d++)
        if (a->alloc[d] != b->alloc[d])
            return 0;
    return 1;
}

int cadp_plan(const scn_scenario *s, const cadp_opts *o, const char *method, const slv_params *prm,
              int paper_model, cadp_inputs *in, slv_result **out, size_t *classes, int *solves, dp_err *err)
{
    *out = NULL;
    int rc = cadp_inputs_build(s, in, err);
    if (rc)
        return rc;
    return cadp_plan_built(s, o, method, prm, paper_model, in, out, classes, solves, err);
}

int cadp_plan_built(const scn_scenario *s, const cadp_opts *o, const char *method, const slv_params *prm,
                    int paper_model, cadp_inputs *in, slv_result **out, size_t *classes, int *solves,
                    dp_err *err)
{
    *out = NULL;
    if (solves)
        *solves = 1;
    int rc, loc = o->locality && s->data; /* cadp.locality: cadp_locality.c */
    if ((rc = loc ? cadp_locality_plan(s, o, method, prm, paper_model, in, out, classes, err)
                  : cadp_solve(s, o, in, method, prm, paper_model, out, classes, err))) {
        cadp_inputs_free(in);
        return rc;
    }
    for (int round = 1; round < CADP_PLAN_ROUNDS && has_trace(s) && !loc; round++) {
        /* the data moves over [0, send term], the models over the epochs after */
        double send = (*out)->send_s, train = (double)s->training.epochs * (*out)->epoch_s;
        cadp_inputs next;
        slv_result *r = NULL;
        if ((rc = cadp_inputs_build_window(s, 0, send, send, send + train, &next, err)))
            break;
        if ((rc = cadp_solve(s, o, &next, method, prm, paper_model, &r, classes, err))) {
            cadp_inputs_free(&next);
            break;
        }
        int same = same_alloc(r, *out);
        if (solves)
            *solves = round + 1;
        cadp_inputs_free(in);
        *in = next;
        slv_result_free(*out);
        *out = r;
        if (same)
            break;
    }
    if (rc) {
        slv_result_free(*out);
        *out = NULL;
        cadp_inputs_free(in);
    }
    return rc;
}

const char *cadp_method(const cadp_opts *o)
{
    return o->solver == CADP_SOLVER_ALM ? "alm" : "exact"; /* simulate starts from exact */
}

int cadp_slv_rounding(const cadp_opts *o)
{
    return o->rounding == CADP_ROUND_BATCH ? SLV_ROUND_BATCH : SLV_ROUND_LARGEST_REMAINDER;
}

/* C-ADP's allocation for this scenario, with the scenario's policies.cadp
 * options. */
int cadp_allocation(prt *rt, int64_t *alloc)
{
    const scn_scenario *s = prt_scn(rt);
    cadp_opts co;
    int rc = prt_options_of(rt, "cadp", &co, sizeof co);
    if (rc)
        return rc;
    cadp_inputs in;
    if ((rc = cadp_inputs_build(s, &in, prt_err(rt))))
        return rc;
    slv_params prm;
    slv_params_default(&prm);
    prm.rounding = cadp_slv_rounding(&co);
    slv_result *res = NULL;
    rc = cadp_solve(s, &co, &in, cadp_method(&co), &prm, 0, &res, NULL, prt_err(rt));
    cadp_inputs_free(&in);
    if (rc)
        return rc;
    for (size_t d = 0; d < prt_n(rt); d++)
        alloc[d] = res->alloc[d];
    slv_result_free(res);
    return 0;
}
