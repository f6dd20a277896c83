/* equal_finish.c: the static oracle of the load-balancing family
 * (lbsync.h): before training, the batches that make every device's
 * compute time equal under the nominal cost models (closed form for linear
 * costs, b_i = (T - a_i) / k_i; bisection on T otherwise), capped by memory
 * with water-filling.  It never adapts: in a world whose speeds change it
 * shows what balancing from the profile alone is worth. */
#include "lbsync.h"

static const popt ef_table[] = {
    LB_COMMON_OPTS,
    {NULL, NULL, 0, 0, 0, 0, 0, 0, NULL, NULL},
};

static int ef_init(lb *st)
{
    return lb_solve_nominal(st, 0);
}

static const lb_method ef_method = {.init = ef_init};

const policy_def policy_equal_finish = {
    .name = "equal_finish",
    .label = "Equal-finish",
    .color = "#999999",
    .summary = "static batches that equalise compute times under the nominal costs (beyond the paper)",
    .opts = ef_table,
    .opts_size = sizeof(lb_opts),
    .family = &ef_method,
    LB_POLICY_HOOKS,
};
