/* cadp_locality.c: `cadp.locality` (docs/MODEL.md section 5, "Locality"):
 * with the data where it lives (dataset.parts), C-ADP's send term pays for
 * the bytes that move, from where they move:
 *  - a_i, the seconds to send device i one sample, is taken over the path
 *    from its nearest holder other than itself (the sources the placement
 *    planner, sim/core/dplace.h, reads from first: its site's storage, the
 *    server, another device, else the nearest site), not from the server:
 *    the bottleneck of the holder's read link (storage `read`, the server's
 *    NIC, a device's up link), the WAN route's links and the device's down
 *    link, capped by the TCP window over that path's RTT;
 *  - then the send term is what the run's placement would move: for an
 *    allocation x the planner's plan (demand x: own samples free, the rest
 *    from the site, then the nearest sites) gives each device its reads,
 *    and its send time is max(its moved bytes over its down link, each
 *    source's bytes over its path), every path as if alone.  The solvers'
 *    send term is linear (max a_i x_i), so the plan judges candidates by
 *    their true objective and keeps the best: the solve on the nearest
 *    holders' rates; the solve with every device that holds samples capped
 *    at them (rounded up to a batch: train what you hold); then solves
 *    with each a_i moved halfway (geometric mean) towards the best
 *    allocation's send time per sample, while the allocation changes, at
 *    most CADP_LOC_ROUNDS of them.  A search, not a proof: the result is
 *    never worse than the plain solve under that objective, and
 *    `plan.send_s` / `plan.objective_s` report its true terms. */
#include "cadp.h"
#include "dplace.h"
#include "slv.h"

#include <math.h>
#include <string.h>

#define CADP_LOC_ROUNDS 6

/* a_i from each device's nearest holder other than itself (the first
 * solve's); *own gets l_i, the samples it holds. */
static int rates(const scn_scenario *s, cadp_inputs *in, int64_t *own, dp_err *err)
{
    dplace *p = dpl_new(s, err);
    if (!p)
        return err->code ? err->code : DP_ENOMEM;
    for (size_t d = 0; d < in->n; d++) {
        own[d] = dpl_own(p, d);
        double r = dpl_read_rate(s, p, d);
        if (r > 0 && isfinite(r))
            in->send_s[d] = s->dataset.sample_bytes / r;
    }
    dpl_free(p);
    return 0;
}

/* Each device's data time at allocation x, from the placement the run
 * will make (dpl_plan_make with demand x): max(its moved bytes over its
 * down link, each source's bytes over its path), every path as if alone
 * (as C-ADP's rates are).  t[d] = 0 where nothing moves. */
static int send_times(const scn_scenario *s, dplace *p, const int64_t *x, double *t)
{
    dpl_plan pl;
    int rc = dpl_plan_make(p, x, NULL, &pl);
    if (rc)
        return rc;
    double sb = s->dataset.sample_bytes;
    for (size_t d = 0; d < s->n_devices; d++) {
        double total = 0, worst = 0, lat;
        for (size_t i = pl.off[d]; i < pl.off[d + 1]; i++) {
            const dpl_take *k = &pl.takes[i];
            if (k->holder == (int)d + 1)
                continue;
            double b = (double)k->n * sb, r = dpl_path_rate(s, p, k->holder, d, &lat);
            total += b;
            worst = fmax(worst, b / r);
        }
        const scn_group *g = &s->groups[s->devices[d].group];
        t[d] = fmax(worst, total / g->link.down_Bps);
    }
    dpl_plan_free(&pl);
    return 0;
}

/* The true objective of r: its send term from the placement (send_times,
 * into t), its other terms as solved; r->send_s and objective_s become
 * these.  Keeps r as *best when better (else frees it). */
static int judge(const scn_scenario *s, dplace *p, slv_result *r, double *t, slv_result **best)
{
    int rc = send_times(s, p, r->alloc, t);
    if (rc) {
        slv_result_free(r);
        return rc;
    }
    double send = 0;
    for (size_t d = 0; d < s->n_devices; d++)
        send = fmax(send, t[d]);
    r->objective_s = r->objective_s - r->send_s + send;
    r->send_s = send;
    if (!*best || r->objective_s < (*best)->objective_s) {
        slv_result_free(*best);
        *best = r;
    } else {
        slv_result_free(r);
    }
    return 0;
}

/* The candidate that keeps every device that holds samples to those it
 * holds (rounded up to a batch): caps on the per-device problem.  NULL
 * when it does not apply (devices solved by class, caps short of D). */
static slv_result *local_candidate(const scn_scenario *s, const cadp_opts *o, const cadp_inputs *in,
                                   const char *method, const struct slv_params *prm, int paper_model,
                                   const int64_t *own)
{
    if (in->n > CADP_CLASS_MIN)
        return NULL;
    int64_t *cap = dp_calloc(in->n, sizeof *cap);
    if (!cap)
        return NULL;
    for (size_t d = 0; d < in->n; d++)
        cap[d] = own[d] <= 0 ? -1 : own[d] >= in->batch[d] ? own[d] : in->batch[d];
    slv_problem pr;
    cadp_problem(s, o, in, &pr);
    if (paper_model)
        pr.allow_exclude = 0;
    pr.cap = cap;
    slv_result *r = NULL;
    dp_err quiet = {0};
    if (slv_solve_problem(method, &pr, prm, &r, &quiet)) /* infeasible: no such candidate */
        r = NULL;
    dp_free(cap);
    return r;
}

int cadp_locality_plan(const scn_scenario *s, const cadp_opts *o, const char *method,
                       const struct slv_params *prm, int paper_model, cadp_inputs *in,
                       struct slv_result **out, size_t *classes, dp_err *err)
{
    size_t n = in->n;
    int64_t *own = dp_calloc(n ? n : 1, sizeof *own), *last = dp_calloc(n ? n : 1, sizeof *last);
    double *a = dp_calloc(n ? n : 1, sizeof *a), *t = dp_calloc(n ? n : 1, sizeof *t), *base = in->send_s;
    dplace *p = NULL;
    slv_result *best = NULL, *r = NULL;
    int rc = own && a && last && t ? rates(s, in, own, err) : dp_err_set(err, DP_ENOMEM, "out of memory");
    if (!rc && !(p = dpl_new(s, err)))
        rc = err->code ? err->code : DP_ENOMEM;
    /* the plain solve on the nearest holders' rates, and the local one */
    if (!rc && !(rc = cadp_solve(s, o, in, method, prm, paper_model, &r, classes, err)))
        rc = judge(s, p, r, t, &best);
    if (!rc && (r = local_candidate(s, o, in, method, prm, paper_model, own)))
        rc = judge(s, p, r, t, &best);
    /* then send costs moved halfway (geometrically) towards what the best
     * allocation's placement costs per sample, while the allocation changes */
    if (!rc) {
        memcpy(a, base, n * sizeof *a);
        memcpy(last, best->alloc, n * sizeof *last);
        send_times(s, p, last, t);
    }
    for (int round = 0; !rc && round < CADP_LOC_ROUNDS; round++) {
        for (size_t d = 0; d < n; d++)
            if (last[d] > 0)
                a[d] = sqrt(a[d] * fmax(t[d], 1e-6 * base[d]) / (double)last[d]);
        in->send_s = a;
        rc = cadp_solve(s, o, in, method, prm, paper_model, &r, classes, err);
        in->send_s = base;
        if (rc)
            break;
        int same = memcmp(last, r->alloc, n * sizeof *last) == 0;
        memcpy(last, r->alloc, n * sizeof *last);
        if ((rc = judge(s, p, r, t, &best)) || same)
            break;
    }
    dpl_free(p);
    dp_free(own);
    dp_free(last);
    dp_free(a);
    dp_free(t);
    if (rc) {
        slv_result_free(best);
        return rc;
    }
    *out = best;
    return 0;
}
