/* registry.c: the built-in policies, in the order tables, sweeps and plots
 * list them.  Adding a policy: one line here (and its file in
 * sim/policy/meson.build). */
#include "runtime.h"

#include <stddef.h>

extern const policy_def policy_ddp, policy_deepspeed, policy_cadp;
extern const policy_def policy_equal_finish, policy_dlb, policy_lbbsp, policy_lbb;
extern const policy_def policy_localsgd, policy_flsgd, policy_asyncps, policy_hierarchical;
extern const policy_def policy_ep4ddl, policy_adacoopt, policy_fedgsync;
extern const policy_def policy_locality;
extern const policy_def policy_ep4ddl, policy_adacoopt, policy_fedgsync, policy_fedavg, policy_regional;

/* One line per policy, so that adding one adds a line. */
/* clang-format off */
const policy_def *const policy_builtin[] = {
    &policy_ddp,
    &policy_deepspeed,
    &policy_cadp,
    &policy_equal_finish,
    &policy_dlb,
    &policy_lbbsp,
    &policy_lbb,
    &policy_localsgd,
    &policy_flsgd,
    &policy_asyncps,
    &policy_hierarchical,
    &policy_ep4ddl,
    &policy_adacoopt,
    &policy_fedgsync,
    &policy_locality,
    &policy_fedavg,
    &policy_regional,
};
/* clang-format on */
const size_t policy_n_builtin = sizeof policy_builtin / sizeof *policy_builtin;
