/* jobs_results.c: freeing a run of many jobs (jobs_results.h). */
#include "jobs_results.h"
#include "dp_common.h"

void jobs_result_free(jobs_result *r)
{
    if (!r)
        return;
    dp_free(r->jobs);
    dp_free(r->allocs);
    dp_free(r->tta);
    dp_free(r->stats);
    dp_free(r);
}
