/* jobrt.c: a policy run as one job inside a shared world (jobrt.h). */
#include "jobrt.h"
#include "runtime_impl.h"

#include <string.h>

struct pjob {
    prt *rt;
    const policy_def *p;
    unsigned char opts[POLICY_OPTS_MAX];
    int freed_policy; /* p->free ran */
    dp_err err;       /* the run's own (rt->err) */
};

pjob *pjob_start(const policy_def *p, const scn_scenario *s, uint64_t seed, world *view, dp_err *err)
{
    pjob *j = dp_calloc(1, sizeof *j);
    if (!j) {
        world_free(view);
        dp_err_set(err, DP_ENOMEM, "out of memory");
        return NULL;
    }
    j->p = p;
    j->freed_policy = 1;
    if (policy_options(p, s, j->opts, sizeof j->opts, err) || (p->check && p->check(p, s, j->opts, err))) {
        world_free(view);
        dp_free(j);
        return NULL;
    }
    if (!(j->rt = prt_new_on(s, p->name, seed, view, &j->err))) {
        *err = j->err;
        dp_free(j);
        return NULL;
    }
    prt *rt = j->rt;
    if (p->perf && p->perf->plan_new && (rt->plan = p->perf->plan_new(s, j->opts)) &&
        p->perf->plan_run(rt->plan, err)) {
        pjob_free(j);
        return NULL;
    }
    rt->pdef = p;
    rt->popts = j->opts;
    j->freed_policy = 0;
    if (p->start(rt, j->opts) && !rt->failed)
        prt_fail(rt, DP_ERUN, "policy %s did not start", p->name);
    return j;
}

int pjob_status(const pjob *j)
{
    if (j->rt->failed)
        return -(j->rt->err && j->rt->err->code ? j->rt->err->code : DP_ERUN);
    return j->rt->finished ? 1 : 0;
}

const dp_err *pjob_error(const pjob *j)
{
    return &j->err;
}

int pjob_epochs_done(const pjob *j)
{
    return j->rt->finished ? j->rt->s->training.epochs : j->rt->epoch - 1;
}

res_run *pjob_results(pjob *j)
{
    res_run *r = prt_results(j->rt);
    prt_detach(j->rt);
    if (r)
        r->options_json = policy_options_json(j->p, j->rt->s);
    return r;
}

void pjob_stop(pjob *j)
{
    if (!j || !j->rt)
        return;
    prt_detach(j->rt);
    if (!j->freed_policy)
        j->p->free(j->rt, j->opts);
    j->freed_policy = 1;
}

void pjob_free(pjob *j)
{
    if (!j)
        return;
    prt *rt = j->rt;
    if (rt) {
        pjob_stop(j);
        if (rt->plan)
            j->p->perf->plan_free(rt->plan);
        prt_free(rt);
    }
    dp_free(j);
}
