/* sched_static.c: a static partition.  Every job names its devices
 * (`groups:`) and no two jobs' claims overlap, so each job runs on its own
 * part of the world from its arrival; the parts still share the server,
 * the WAN and any other link between them. */
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

const sched_def sched_static = {
    .name = "static",
    .label = "static partition",
    .color = "#000000",
    .summary = "each job on the device groups it names (`groups:`), from its arrival",
    .pinned = 1,
    .order = order,
};
