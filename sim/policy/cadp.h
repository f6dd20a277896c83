/* cadp.h: C-ADP's planner (cadp_plan.c, cadp_refine.c), for the policy
 * (cadp.c) and for `dpsim solve`.
 * Model: docs/MODEL.md section 5 (the allocation problem and its exact
 * solution). */
#ifndef DP_CADP_H
#define DP_CADP_H

#include "scenario.h"

typedef enum { CADP_SOLVER_EXACT = 0, CADP_SOLVER_ALM = 1, CADP_SOLVER_SIMULATE = 2 } cadp_solver;
/* solver: simulate runs at most this many simulations to refine exact's
 * allocation (cadp_refine.c). */
#define CADP_SIM_BUDGET 24
typedef enum { CADP_ROUND_BATCH = 0, CADP_ROUND_LARGEST_REMAINDER = 1 } cadp_rounding;

/* policies.cadp (the option table is in cadp.c). */
typedef struct cadp_opts {
    int solver;       /* cadp_solver; default exact */
    int rounding;     /* cadp_rounding; default batch */
    int exclude_slow; /* default 1: may leave slow-link devices out */
    int locality; /* default 0: with dataset.parts, the send term pays for moved bytes (cadp_locality.c) */
} cadp_opts;

/* ---- the allocation problem from a scenario ---------------------------- */
/* Per-device solver inputs (docs/MODEL.md section 5): a_i = sample_bytes over
 * the rate the device gets from the server, c_i via t_i(bs_i) over the mean
 * speed factor of a speed trace, comm_i = M / down + M / up + both
 * latencies (the per-epoch model exchange), and the per-epoch aggregation
 * per participant (slv_problem.agg_s).  Rates follow the world's routes (world_wan_route) and the
 * TCP window cap; each device's as if it sent alone (cadp_plan.c).  Arrays are
 * dp_malloc'd; free with cadp_inputs_free.  DP_EINPUT names the device with
 * a zero bandwidth. */
typedef struct cadp_inputs {
    size_t n;
    double *send_s, *batch_s, *comm_s;
    int *batch;
    const char **names; /* borrowed from the scenario */
    double agg_s;       /* per-epoch aggregation time per participant (M / aggregate rate):
                           the server averages only the devices given data */
    /* shared links (docs/MODEL.md section 5, "Shared links"): the server NIC
     * and WAN links that their members' flows, each at its own rate, would
     * oversubscribe; none in a world where nothing can saturate */
    size_t n_links;
    struct slv_link *links;
    size_t *members;       /* the links' member lists, one pool */
    double *xdn_s, *xup_s; /* per device: M / model download rate, M / upload rate */
} cadp_inputs;
int cadp_inputs_build(const scn_scenario *s, cadp_inputs *in, dp_err *err);
/* The same with each varying link at its mean over a window (trace.h
 * trace_mean_over): [send0, send1] for the data (send_s), [ex0, ex1] for
 * the per-epoch model exchange (comm_s) and for a device's speed trace
 * (batch_s = t_i(bs_i) / mean speed factor).  An empty window (or one whole
 * outage) falls back to the trace's own mean, as cadp_inputs_build uses. */
int cadp_inputs_build_window(const scn_scenario *s, double send0, double send1, double ex0, double ex1,
                             cadp_inputs *in, dp_err *err);
void cadp_inputs_free(cadp_inputs *in);
/* Fill a solver problem from inputs (borrows the arrays). */
struct slv_problem;
void cadp_problem(const scn_scenario *s, const cadp_opts *o, const cadp_inputs *in, struct slv_problem *p);
/* The shared links of inputs for the solver (borrows the arrays). */
struct slv_shared;
void cadp_shared(const cadp_inputs *in, struct slv_shared *sh);

/* Solve C-ADP's allocation for scenario s, options o, per-device inputs `in`:
 * method "exact" or "alm", params (NULL = defaults), paper_model 1 = the
 * paper's model: the exchange counted for every device (the paper's
 * constant) and no shared links.  Otherwise the objective (objective_s,
 * send_s, epoch_s) includes the shared links (slv_objective_shared), and
 * "exact" solves with them (slv_solve_shared) unless the devices are
 * solved per class or are more than CADP_SHARED_MAX (its levels cost 64
 * passes over the devices: 3 s at 20,000): then the links only price the
 * result.  *out gets a
 * per-device result in scenario order (free with slv_result_free).
 *
 * Scenarios of more than CADP_CLASS_MIN devices are solved per device group:
 * the m identical devices of a group act as one device of batch m x bs and
 * send time a/m, whose total is then split as evenly as possible (which is
 * optimal within a group: ceil(ceil(X/m)/bs) = ceil(X/(m bs))).  The relaxed
 * optimum is the same; the class problem's integer optimum is a valid lower
 * bound on the per-device one; the objective is evaluated per device, and
 * is within one sample's send time of the class optimum.  *classes gets the
 * number of units solved (devices or groups). */
#define CADP_CLASS_MIN  4096
#define CADP_SHARED_MAX 10000
struct slv_params;
struct slv_result;
int cadp_solve(const scn_scenario *s, const cadp_opts *o, const cadp_inputs *in, const char *method,
               const struct slv_params *prm, int paper_model, struct slv_result **out, size_t *classes,
               dp_err *err);
/* Plan as the policy does: cadp_solve on cadp_inputs_build's inputs; then,
 * when a link or device has a trace, again with each trace's mean over the
 * window the plan uses it in (data: [0, send term]; models and compute: the
 * E epochs after), until
 * the allocation repeats, at most CADP_PLAN_ROUNDS solves.  A trace's own
 * mean can be far from what the run sees: a non-looping trace holds its
 * last value for the whole run, and a short window of a long trace is not
 * its average.  *in gets the inputs of the last solve (free with
 * cadp_inputs_free), *out its result; both are left empty on error.
 * *solves (may be NULL) gets the number of solves. */
#define CADP_PLAN_ROUNDS 4
int cadp_plan(const scn_scenario *s, const cadp_opts *o, const char *method, const struct slv_params *prm,
              int paper_model, cadp_inputs *in, struct slv_result **out, size_t *classes, int *solves,
              dp_err *err);
/* The same from inputs cadp_inputs_build made (*in, owned from here on:
 * freed on error, else the last solve's). */
/* cadp.locality (cadp_locality.c): solve with each device's send time from
 * its nearest data holder and its own samples free (max a_i (x_i - l_i)+),
 * by a fixed point over linear send terms; *out's send_s and objective_s
 * are the true ones.  0 or an error (*out untouched). */
int cadp_locality_plan(const scn_scenario *s, const cadp_opts *o, const char *method,
                       const struct slv_params *prm, int paper_model, cadp_inputs *in,
                       struct slv_result **out, size_t *classes, dp_err *err);
int cadp_plan_built(const scn_scenario *s, const cadp_opts *o, const char *method,
                    const struct slv_params *prm, int paper_model, cadp_inputs *in, struct slv_result **out,
                    size_t *classes, int *solves, dp_err *err);
/* C-ADP's allocation (samples per device, prt_n(rt) of them) for this
 * run's scenario with its policies.cadp options: for a policy that borrows
 * C-ADP's planner (localsgd's `allocation: cadp`).  0 or an error. */
struct prt;
int cadp_allocation(struct prt *rt, int64_t *alloc);
/* The solver method name ("exact", "alm") and solver rounding of options o. */
const char *cadp_method(const cadp_opts *o);
int cadp_slv_rounding(const cadp_opts *o);

/* ---- solver: simulate (cadp_refine.c) ---------------------------------- */
/* Refine allocation x (n devices, in place) by simulating scenario s with
 * seed: moves towards equal busy time, then pairwise moves, each kept only
 * when it lowers the simulated Ttotal, at most CADP_SIM_BUDGET runs.
 * *best_s gets the best simulated Ttotal, *sims the simulations run. */
int cadp_refine_by_simulation(const scn_scenario *s, uint64_t seed, int64_t *x, size_t n, double *best_s,
                              int *sims, dp_err *err);
/* The allocation a refinement is simulating on this thread (the policy
 * runs with it instead of planning), or NULL. */
const int64_t *cadp_forced_alloc(void);

#endif
