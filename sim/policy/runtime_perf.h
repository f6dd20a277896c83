/* runtime_perf.h: what a policy may add for speed alone.  A policy author
 * can ignore this header: a policy without it runs the same, with the same
 * results bit for bit, only slower with 10^5-10^6 devices.  Each hook here
 * stayed because it was measured to save more than 3% of a run (paired,
 * README.md "Benchmarks"); what saved less was dropped.
 *
 * A policy that wants them points policy_def.perf at a policy_perf. */
#ifndef DP_RUNTIME_PERF_H
#define DP_RUNTIME_PERF_H

#include "runtime.h"

/* The size of the cache line the hints below fetch (x86-64, ARMv8). */
#define DP_CACHE_LINE 64

struct policy_perf {
    /* Optional, all three or none: work that depends on the scenario and
     * the options alone (C-ADP's allocation), done on a second thread while
     * the runtime builds the world, so that a run on a 2-core machine does
     * both at once.  plan_new runs on the calling thread and returns the
     * job (capturing s and opts), or NULL for no plan in this run; plan_run
     * then runs on the other thread (or on this one if no thread can be
     * made) and must read only the job, the scenario and the options and
     * write only the job: 0 or an error in err.  start finds the finished
     * job with prt_plan; the runtime frees it with plan_free after the run
     * (also when anything failed).  The results must not depend on which
     * thread did the work: the plan is a pure function of its inputs. */
    void *(*plan_new)(const scn_scenario *s, const void *opts);
    int (*plan_run)(void *plan, dp_err *err);
    void (*plan_free)(void *plan);
    /* Optional, a hint that must change nothing: fetch the policy's own
     * records of device d (__builtin_prefetch), whose batch run ends or
     * whose data arrives next.  With 10^6 devices each such record is a
     * cache miss when its callback reads it. */
    void (*prefetch)(prt *rt, size_t d);
};

/* The policy's finished plan job (policy_perf.plan_new), or NULL. */
void *prt_plan(const prt *rt);
/* Prefetch hints (they change nothing): nonzero when the run has enough
 * devices for hints to pay (their records no longer stay in cache), and a
 * hint for what prt_set_act(rt, d, ...) will touch. */
int prt_hints(const prt *rt);
void prt_prefetch_act(const prt *rt, size_t d);

/* Exact symmetry (runtime_sym.c), for sync.c's groups: devices identical
 * in every parameter and record (same group and neighbours in the ring, no
 * noise, trace, straggler or failure, no learner) move as one: the first
 * of them, the representative, runs their events once with a multiplicity
 * and the others' records follow its own until something touches one of
 * them alone (then its class splits, exactly).  The results are the same
 * bits (tests: DPSIM_NO_SYMMETRY=1 turns it off, for tests only).
 * prt_sym_begin tries it now (every device idle, between two steps):
 * 1 when on.  prt_sym_reps lists the representatives and the devices alone
 * in device order (NULL while off); prt_sym_count how many devices d's
 * events stand for (1 alone, 0 a follower). */
int prt_sym_begin(prt *rt);
const size_t *prt_sym_reps(const prt *rt, size_t *count);
size_t prt_sym_count(const prt *rt, size_t d);

#endif
