/* dlb.c: DLB (Ye et al., "DLB: a dynamic load balance strategy for
 * distributed training of deep neural networks", IEEE TETCI 2022; its
 * public code dbs.py), in the load-balancing family (lbsync.h).  Equal
 * shares in epoch 1; at each epoch end, with t_i device i's pure compute
 * time over the epoch and p_i its share of the epoch's samples, the new
 * share is p_i' = (p_i / t_i) / sum_j (p_j / t_j), b_i = p_i' B (capped by
 * memory, water-filled).  A device that computed nothing keeps the speed
 * of its nominal cost model. */
#include "lbsync.h"

#include <stdlib.h>

static const popt dlb_table[] = {
    LB_COMMON_OPTS,
    {NULL, NULL, 0, 0, 0, 0, 0, 0, NULL, NULL},
};

static int dlb_init(lb *st)
{
    /* equal shares, memory caps kept: water-filling with equal speeds */
    double *a = lb_method_state(st), *k = a + lb_n(st);
    for (size_t d = 0; d < lb_n(st); d++) {
        a[d] = 0;
        k[d] = 1;
    }
    lb_solve_linear(st, a, k);
    return 0;
}

static int dlb_epoch_end(lb *st)
{
    size_t n = lb_n(st);
    const double *t = lb_epoch_t(st);
    const int64_t *smp = lb_epoch_samples(st);
    double *a = lb_method_state(st), *k = a + n;
    int64_t total = 0;
    for (size_t d = 0; d < n; d++)
        total += smp[d];
    for (size_t d = 0; d < n; d++) {
        double v; /* p_i / t_i */
        if (smp[d] > 0 && t[d] > 0) {
            v = ((double)smp[d] / (double)total) / t[d];
        } else { /* nothing measured: its nominal speed for an equal share */
            double x = (double)lb_B(st) / (double)n;
            v = (x / (double)total) / lb_cost(st, d, x);
        }
        /* x proportional to v: the solver's linear costs with a = 0, k = 1 / v */
        a[d] = 0;
        k[d] = 1 / v;
    }
    lb_solve_linear(st, a, k);
    lb_apply(st);
    return 0;
}

static void *dlb_alloc(lb *st)
{
    return dp_calloc(2 * lb_n(st), sizeof(double));
}

static const lb_method dlb_method = {
    .init = dlb_init,
    .epoch_end = dlb_epoch_end,
    .alloc = dlb_alloc,
    .free = dp_free,
};

const policy_def policy_dlb = {
    .name = "dlb",
    .label = "DLB",
    .color = "#cc79a7",
    .summary = "DLB (Ye et al. 2022): batch shares re-sized at each epoch end from measured speeds (beyond "
               "the paper)",
    .opts = dlb_table,
    .opts_size = sizeof(lb_opts),
    .family = &dlb_method,
    LB_POLICY_HOOKS,
};
