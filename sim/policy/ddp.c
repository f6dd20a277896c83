/* ddp.c: PyTorch DistributedDataParallel (docs/MODEL.md section 4): one
 * micro-step per synchronisation, bucketed ring all-reduce overlapping the
 * backward pass.  The machinery is sync.c's. */
#include "sync.h"

#include <stddef.h>

typedef struct ddp_opts {
    double bucket_bytes;      /* PyTorch's bucket_cap_mb: 25 MiB */
    int data;                 /* prt_data_mode */
    int overlap;              /* bucket all-reduce overlaps backward */
    double backward_fraction; /* of the batch time */
    int collective;           /* prt_coll_mode */
    int progress;             /* coll_set_progress: 0 barrier, 1 pipelined */
    sync_fail_cfg fail;       /* worlds with failures */
} ddp_opts;

static const popt ddp_table[] = {
    {"bucket", "bucket_bytes", POPT_QUANTITY, SCN_UNIT_BYTES, offsetof(ddp_opts, bucket_bytes),
     25.0 * 1048576, 0, 1e15, NULL, "gradient bucket size (PyTorch bucket_cap_mb)"},
    {"data", NULL, POPT_ENUM, SCN_UNIT_NUMBER, offsetof(ddp_opts, data), PRT_DATA_REPLICATE, 0, 0,
     popt_data_names, "replicate: every device receives the dataset; shard: only its share"},
    {"overlap", NULL, POPT_BOOL, SCN_UNIT_NUMBER, offsetof(ddp_opts, overlap), 1, 0, 0, NULL,
     "bucket all-reduces overlap the backward pass"},
    {"backward_fraction", NULL, POPT_QUANTITY, SCN_UNIT_NUMBER, offsetof(ddp_opts, backward_fraction),
     2.0 / 3.0, 0, 1, NULL, "share of a batch's time spent in the backward pass"},
    {"collective", NULL, POPT_ENUM, SCN_UNIT_NUMBER, offsetof(ddp_opts, collective), PRT_COLL_FLOWS, 0, 0,
     popt_collective_names,
     "flows: ring rounds as network flows; analytic: closed form (sees the ring's own link sharing)"},
    {"collective_progress", NULL, POPT_ENUM, SCN_UNIT_NUMBER, offsetof(ddp_opts, progress), 0, 0, 0,
     popt_progress_names,
     POPT_OPTIONAL
     "barrier: a ring round waits for all its flows; pipelined: a member sends on as soon as its "
     "own send and its incoming chunk have ended (MPI's ring)"},
    POPT_SYNC_FAILURE_ROWS(ddp_opts, fail),
    {NULL, NULL, 0, 0, 0, 0, 0, 0, NULL, NULL},
};

static int ddp_check(const policy_def *p, const scn_scenario *s, const void *opts, dp_err *err)
{
    const ddp_opts *o = opts;
    return coll_check_flows(s, p->name, (prt_coll_mode)o->collective, err);
}

static int ddp_start(prt *rt, const void *opts)
{
    const ddp_opts *o = opts;
    sync_cfg cfg = {
        .micro_per_sync = 1,
        .overlap = o->overlap,
        .bucket_bytes = o->bucket_bytes,
        .backward_fraction = o->backward_fraction,
        .op = COLL_ALLREDUCE,
        .allgather_after = 0,
        .data = (prt_data_mode)o->data,
        .mode = (prt_coll_mode)o->collective,
        .pipelined = o->progress,
        .fail = o->fail,
    };
    return sync_start(rt, &cfg);
}

static void ddp_on_device(prt *rt, const void *opts, size_t d, int up)
{
    (void)opts;
    sync_on_device(rt, d, up);
}

static size_t ddp_steady_state(prt *rt, const void *opts, unsigned char *buf, size_t cap)
{
    (void)opts;
    return sync_steady_state(rt, buf, cap);
}

static void ddp_free(prt *rt, const void *opts)
{
    (void)opts;
    sync_free(rt);
}

const policy_def policy_ddp = {
    .name = "ddp",
    .label = "DDP",
    .color = "#0072b2",
    .summary = "PyTorch DistributedDataParallel: equal split, bucketed ring all-reduce every step",
    .opts = ddp_table,
    .opts_size = sizeof(ddp_opts),
    .check = ddp_check,
    .start = ddp_start,
    .free = ddp_free,
    .on_device = ddp_on_device,
    .steady_state = ddp_steady_state,
};
