/* lbbsp.c: LB-BSP (Chen et al., "Semi-dynamic load balancing: efficient
 * distributed learning in non-dedicated environments", SoCC 2020), in the
 * load-balancing family (lbsync.h).  At every iteration boundary each
 * device's batch is re-sized in proportion to its predicted speed.  The
 * paper predicts with a NARX network; dpsim predicts with an exponentially
 * weighted mean of the measured speeds b_i / t_i (weight `alpha` on the
 * newest), which follows a step change in a few iterations and is cheap
 * enough for every iteration of 1,000 devices.  Iteration 1 is equal. */
#include "lbsync.h"

static const popt lbbsp_table[] = {
    LB_COMMON_OPTS,
    {"alpha", NULL, POPT_QUANTITY, SCN_UNIT_NUMBER, offsetof(lb_opts, alpha), 0.5, 0, 1, NULL,
     "weight of the newest measured speed in the running mean (1: the last one only)"},
    {NULL, NULL, 0, 0, 0, 0, 0, 0, NULL, NULL},
};

/* State: speed[n] (samples/s, 0 = none measured yet), then a[n], k[n]. */
static void *lbbsp_alloc(lb *st)
{
    return dp_calloc(3 * lb_n(st), sizeof(double));
}

static int lbbsp_init(lb *st)
{
    double *a = (double *)lb_method_state(st) + lb_n(st), *k = a + lb_n(st);
    for (size_t d = 0; d < lb_n(st); d++) {
        a[d] = 0;
        k[d] = 1;
    }
    lb_solve_linear(st, a, k);
    return 0;
}

static int lbbsp_iter_end(lb *st)
{
    size_t n = lb_n(st);
    double *v = lb_method_state(st), *a = v + n, *k = a + n;
    double alpha = lb_o(st)->alpha;
    const int *cur = lb_cur(st);
    const double *t = lb_t(st);
    double vmin = 0;
    for (size_t d = 0; d < n; d++) {
        if (cur[d] > 0 && t[d] > 0) {
            double m = cur[d] / t[d];
            v[d] = v[d] > 0 ? alpha * m + (1 - alpha) * v[d] : m;
        }
        if (v[d] > 0 && (vmin == 0 || v[d] < vmin))
            vmin = v[d];
    }
    if (!(vmin > 0))
        return 0;
    for (size_t d = 0; d < n; d++) {
        /* a device never measured (no samples so far) keeps the slowest
         * known speed, so it is tried again rather than starved */
        a[d] = 0;
        k[d] = 1 / (v[d] > 0 ? v[d] : vmin);
    }
    lb_solve_linear(st, a, k);
    lb_apply(st);
    return 0;
}

static const lb_method lbbsp_method = {
    .init = lbbsp_init,
    .iter_end = lbbsp_iter_end,
    .alloc = lbbsp_alloc,
    .free = dp_free,
};

const policy_def policy_lbbsp = {
    .name = "lbbsp",
    .label = "LB-BSP",
    .color = "#e69f00",
    .summary =
        "LB-BSP (Chen et al. 2020): batches re-sized every iteration to predicted speeds (beyond the paper)",
    .opts = lbbsp_table,
    .opts_size = sizeof(lb_opts),
    .family = &lbbsp_method,
    LB_POLICY_HOOKS,
};
