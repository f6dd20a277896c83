/* options.c: a policy's options as stored with each run (options_json). */
#include "json.h"
#include "policy.h"

#include <string.h>

static const char *data_name(scn_data_mode m)
{
    return m == SCN_DATA_SHARD ? "shard" : "replicate";
}
static const char *coll_name(scn_collective_mode m)
{
    return m == SCN_COLL_ANALYTIC ? "analytic" : "flows";
}

char *policy_options_json(policy_kind k, const scn_scenario *s)
{
    json_buf *j = json_new();
    json_obj_begin(j);
    switch (k) {
    case POLICY_DDP:
        json_key(j, "bucket_bytes");
        json_num(j, s->ddp.bucket_bytes);
        json_key(j, "data");
        json_str(j, data_name(s->ddp.data));
        json_key(j, "overlap");
        json_bool(j, s->ddp.overlap);
        json_key(j, "backward_fraction");
        json_num(j, s->ddp.backward_fraction);
        json_key(j, "collective");
        json_str(j, coll_name(s->ddp.collective));
        break;
    case POLICY_DEEPSPEED: {
        const scn_deepspeed_opts *o = &s->deepspeed;
        json_key(j, "stage");
        json_int(j, o->stage);
        json_key(j, "grad_accum");
        json_int(j, o->grad_accum);
        json_key(j, "overlap_comm");
        json_bool(j, o->overlap_comm >= 0 ? o->overlap_comm : o->stage == 3);
        json_key(j, "data");
        json_str(j, data_name(o->data));
        json_key(j, "collective");
        json_str(j, coll_name(o->collective));
        break;
    }
    default:
        json_key(j, "solver");
        json_str(j, s->cadp.solver == SCN_SOLVER_ALM ? "alm" : "exact");
        json_key(j, "rounding");
        json_str(j, s->cadp.rounding == SCN_ROUND_BATCH ? "batch" : "largest_remainder");
        json_key(j, "exclude_slow");
        json_bool(j, s->cadp.exclude_slow);
        break;
    }
    json_obj_end(j);
    char *out = json_ok(j) ? dp_strdup(json_text(j)) : NULL;
    json_free(j);
    return out;
}
