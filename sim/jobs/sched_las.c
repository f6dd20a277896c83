/* sched_las.c: least attained service, after Tiresias (NSDI 2019) with two
 * queues: jobs whose attained service (device-seconds held, divided by
 * their weight) is below `scheduler.threshold` go before those past it;
 * within a queue, arrival order (a tie: the higher weight).  Needs no
 * estimate of a job's length; pre-emptive. */
#include "sched.h"

static int cmp(const sched_job *a, const sched_job *b, const sched_ctx *c)
{
    int qa = a->attained_s / a->weight >= c->opts->threshold_s,
        qb = b->attained_s / b->weight >= c->opts->threshold_s;
    if (qa != qb)
        return qa - qb;
    return sched_by_arrival(a, b);
}

static void order(const sched_ctx *c, const sched_job *jobs, size_t m, size_t *out)
{
    sched_sort(jobs, m, out, cmp, c);
}

const sched_def sched_las = {
    .name = "las",
    .label = "least attained service",
    .color = "#D55E00",
    .summary = "least attained service (Tiresias), two queues; pre-emptive",
    .preempt = 1,
    .order = order,
};
