/* sched_srf.c: shortest remaining first.  The job with the least work left
 * by the simulator's own estimate (its time alone on the devices it asks
 * for, times the share of its epochs left), divided by its weight, goes
 * first (weight 2: as if half as long); a shorter arrival pre-empts a
 * longer running job at the next decision. */
#include "sched.h"

static int cmp(const sched_job *a, const sched_job *b, const sched_ctx *c)
{
    (void)c;
    double ra = a->remaining_s / a->weight, rb = b->remaining_s / b->weight;
    if (ra != rb)
        return ra < rb ? -1 : 1;
    return sched_by_arrival(a, b);
}

static void order(const sched_ctx *c, const sched_job *jobs, size_t m, size_t *out)
{
    sched_sort(jobs, m, out, cmp, c);
}

const sched_def sched_srf = {
    .name = "srf",
    .label = "shortest remaining first",
    .color = "#009E73",
    .summary = "shortest remaining first (the simulator's estimate); pre-emptive",
    .preempt = 1,
    .needs_alone = 1,
    .order = order,
};
