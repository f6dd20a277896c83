/* runtime_energy.h: the runtime's side of devices' energy and batteries
 * (runtime_energy.c); policies see prt_energy_left and prt_energy_of in
 * runtime.h. */
#ifndef DP_RUNTIME_ENERGY_H
#define DP_RUNTIME_ENERGY_H

#include "runtime.h"

typedef struct prt_energy prt_energy;

/* rt->energy from the scenario's `power:` and `battery:` (stays NULL when
 * no group has power figures); batteries' first cutoffs scheduled. */
int energy_open(prt *rt, uint64_t seed, dp_err *err);
void energy_close(prt *rt);
/* Device d changes from its current activity (rt->act[d]) to a at
 * absolute time now. */
void energy_switch(prt *rt, size_t d, res_activity a, double now);
/* Device d went down or came back (the world's hook, before the policy's). */
void energy_updown(prt *rt, size_t d, int up);
/* Energy and battery statistics into r (every interval closed).  0 or DP_ENOMEM. */
int energy_results(prt *rt, res_run *r);

#endif
