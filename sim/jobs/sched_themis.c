/* sched_themis.c: finish-time fairness, after Themis (NSDI 2020).  A job's
 * rho is its expected time to finish in the shared world over its time
 * alone: rho = (now - arrival + remaining) / alone, with the simulator's
 * estimates (alone: its time alone on the devices it asks for; remaining:
 * alone x epochs left / epochs).  The job with the highest rho times its
 * weight (the one the sharing has hurt most; weight 2: as if hurt twice as
 * much) goes first; pre-emptive at each decision, so `scheduler.interval`
 * is Themis' lease. */
#include "sched.h"

static double rho(const sched_job *j, const sched_ctx *c)
{
    return (c->now_s - j->arrival_s + j->remaining_s) / j->alone_s * j->weight;
}

static int cmp(const sched_job *a, const sched_job *b, const sched_ctx *c)
{
    double ra = rho(a, c), rb = rho(b, c);
    if (ra != rb)
        return ra > rb ? -1 : 1;
    return sched_by_arrival(a, b);
}

static void order(const sched_ctx *c, const sched_job *jobs, size_t m, size_t *out)
{
    sched_sort(jobs, m, out, cmp, c);
}

const sched_def sched_themis = {
    .name = "themis",
    .label = "finish-time fairness",
    .color = "#CC79A7",
    .summary = "finish-time fairness (Themis): highest rho first; pre-emptive",
    .preempt = 1,
    .needs_alone = 1,
    .order = order,
};
