/* sched_fifo.c: first in, first out.  Jobs start in arrival order (jobs
 * arriving at the same instant: the higher weight first); the first that
 * does not fit waits, and every job after it waits too (no backfilling),
 * so no job is ever overtaken; no pre-emption. */
#include "sched.h"

static int cmp(const sched_job *a, const sched_job *b, const sched_ctx *c)
{
    (void)c;
    return sched_by_arrival(a, b);
}

static void order(const sched_ctx *c, const sched_job *jobs, size_t m, size_t *out)
{
    sched_sort(jobs, m, out, cmp, c);
}

const sched_def sched_fifo = {
    .name = "fifo",
    .label = "FIFO",
    .color = "#0072B2",
    .summary = "arrival order; the head waits for its devices and blocks the rest",
    .strict = 1,
    .order = order,
};
