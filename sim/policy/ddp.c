/* ddp.c: PyTorch DistributedDataParallel (MODEL.md section 4): one
 * micro-step per synchronisation, bucketed ring all-reduce overlapping the
 * backward pass.  The machinery is sync.c's. */
#include "policy.h"

int policy_ddp_start(prt *rt)
{
    const scn_ddp_opts *o = &rt->s->ddp;
    sync_cfg cfg = {
        .micro_per_sync = 1,
        .overlap = o->overlap,
        .bucket_bytes = o->bucket_bytes,
        .backward_fraction = o->backward_fraction,
        .op = COLL_ALLREDUCE,
        .allgather_after = 0,
        .data = o->data,
        .mode = o->collective,
    };
    return sync_start(rt, &cfg);
}

void policy_ddp_free(prt *rt)
{
    sync_free(rt);
}
