/* cadp_refine.c: C-ADP's `solver: simulate`: exact's allocation refined
 * with the simulator as the objective (cadp.h cadp_refine_by_simulation).
 * While a refinement simulates an allocation, the policy runs with it
 * instead of planning (cadp_forced_alloc). */
#include "cadp.h"
#include "policy.h"
#include "runtime_perf.h"
#include "slv.h"

#include <stddef.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

/* solver: simulate.  While a refinement simulates an allocation, C-ADP runs
 * with it instead of planning (per thread: sweeps run in parallel). */
static _Thread_local const int64_t *forced_alloc;

const int64_t *cadp_forced_alloc(void)
{
    return forced_alloc;
}
extern const policy_def policy_cadp;

static int simulate_alloc(const scn_scenario *s, uint64_t seed, const int64_t *alloc, res_run **out,
                          dp_err *err)
{
    const int64_t *prev = forced_alloc;
    forced_alloc = alloc;
    *out = prt_simulate(&policy_cadp, s, seed, err);
    forced_alloc = prev;
    return *out ? 0 : (err && err->code ? err->code : DP_ERUN);
}

/* y = x moved a fraction lam of the way to the allocation that would
 * equalise the participants' busy time (Ttotal - wait) if it grew linearly
 * with samples; whole samples, sum D kept (largest remainders). */
static void rebalance(const res_run *r, const int64_t *x, size_t n, int64_t D, double lam, int64_t *y,
                      double *frac)
{
    double rate_sum = 0;
    for (size_t d = 0; d < n; d++) {
        double busy = r->ttotal_s - r->devices[d].wait_s;
        frac[d] = x[d] > 0 && busy > 0 ? (double)x[d] / busy : 0;
        rate_sum += frac[d];
    }
    int64_t sum = 0;
    for (size_t d = 0; d < n; d++) {
        double t = rate_sum > 0 ? (double)D * frac[d] / rate_sum : (double)x[d];
        double v = (1 - lam) * (double)x[d] + lam * t;
        y[d] = (int64_t)floor(v);
        frac[d] = v - (double)y[d];
        sum += y[d];
    }
    while (sum < D) { /* the largest remainders, lowest index first on ties */
        size_t b = 0;
        for (size_t d = 1; d < n; d++)
            if (frac[d] > frac[b])
                b = d;
        y[b]++;
        frac[b] = -1;
        sum++;
    }
}

/* Refine x (n entries, sum D) with the simulator as the objective
 * (CADP_SIM_BUDGET simulations at most, deterministic: the run's seed).
 * Moves: towards equal busy time (rebalance, lam = 1, 1/2, 1/4 ... while
 * it does not help), and when that is spent, `step` samples from the
 * participant that waited least (the critical one) to the one that waited
 * most (halved after a move that does not help).  A move is kept only when
 * it lowers the simulated Ttotal.  *best_s gets the best simulated Ttotal,
 * *sims the simulations run. */
int cadp_refine_by_simulation(const scn_scenario *s, uint64_t seed, int64_t *x, size_t n, double *best_s,
                              int *sims, dp_err *err)
{
    int64_t *y = dp_malloc(n * sizeof *y);
    double *frac = dp_malloc(n * sizeof *frac);
    if (!y || !frac) {
        dp_free(y);
        dp_free(frac);
        return dp_err_set(err, DP_ENOMEM, "out of memory");
    }
    res_run *r = NULL;
    int rc = simulate_alloc(s, seed, x, &r, err);
    *sims = 1;
    if (rc) {
        dp_free(y);
        dp_free(frac);
        return rc;
    }
    double best = r->ttotal_s, lam = 1;
    size_t parts = 0;
    for (size_t d = 0; d < n; d++)
        parts += x[d] > 0;
    int64_t D = s->dataset.samples, step = D / (int64_t)(8 * (parts ? parts : 1));
    if (step < 1)
        step = 1;
    while (step >= 1 && *sims < CADP_SIM_BUDGET) {
        int pairwise = lam < 1.0 / 16;
        if (pairwise) {
            size_t crit = n, slack = n;
            for (size_t d = 0; d < n; d++) {
                if (x[d] == 0)
                    continue;
                if (crit == n || r->devices[d].wait_s < r->devices[crit].wait_s)
                    crit = d;
                if (slack == n || r->devices[d].wait_s > r->devices[slack].wait_s)
                    slack = d;
            }
            if (crit == n || crit == slack)
                break;
            int64_t m = step < x[crit] ? step : x[crit];
            memcpy(y, x, n * sizeof *y);
            y[crit] -= m;
            y[slack] += m;
        } else {
            rebalance(r, x, n, D, lam, y, frac);
            if (!memcmp(x, y, n * sizeof *y)) {
                lam /= 2;
                continue;
            }
        }
        res_run *t = NULL;
        if (policy_interrupted()) { /* a candidate of under 4096 events never polls the flag itself */
            rc = dp_err_set(err, DP_ERUN, "interrupted while refining the allocation by simulation (%d runs)",
                            *sims);
            break;
        }
        if ((rc = simulate_alloc(s, seed, y, &t, err)))
            break;
        ++*sims;
        if (t->ttotal_s < best) {
            best = t->ttotal_s;
            memcpy(x, y, n * sizeof *x);
            res_run_free(r);
            r = t;
        } else {
            res_run_free(t);
            if (pairwise)
                step /= 2;
            else
                lam /= 2;
        }
    }
    res_run_free(r);
    dp_free(y);
    dp_free(frac);
    *best_s = best;
    return rc;
}

/* The plan (policy_perf.plan_new): the solver's allocation and what it
 * expects, a pure function of the scenario and the options, computed on a
 * second thread while the runtime builds the world (10^6 devices: 1.2 s of
 * solving beside 0.4 s of building). */
