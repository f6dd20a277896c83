/* jobrt.c: a policy run as one job inside a shared world (jobrt.h). */
#include "jobrt.h"
#include "learner.h"
#include "runtime_impl.h"

#include <math.h>
#include <string.h>

struct pjob {
    prt *rt;
    const policy_def *p;
    unsigned char opts[POLICY_OPTS_MAX];
    int freed_policy; /* p->free ran */
    dp_err err;       /* the run's own (rt->err) */
    pjob_learn *pl;   /* the job's learning across runs (borrowed), NULL without */
    double origin;    /* global time of the run's local 0 (its engine's origin at its start) */
};

int pjob_learn_keep(pjob_learn *pl, const struct learner *L)
{
    size_t P = 0;
    const double *w = lrn_weights(L, &P);
    if (!pl->w && !(pl->w = dp_malloc((P + 1) * sizeof *pl->w)))
        return DP_ENOMEM;
    memcpy(pl->w, w, P * sizeof *w);
    pl->n_params = P;
    pl->consumed = lrn_consumed(L);
    return 0;
}

void pjob_learn_free(pjob_learn *pl)
{
    if (!pl)
        return;
    dp_free(pl->w);
    dp_free(pl->tta);
    pl->w = pl->tta = NULL;
}

/* The run's learner starts where its job's left off (pjob_learn). */
static int learn_resume(prt *rt, pjob_learn *pl)
{
    learner *L = rt->learn;
    size_t nt = lrn_n_targets(L);
    if (!pl->tta) {
        if (!(pl->tta = dp_malloc((nt + 1) * sizeof *pl->tta)))
            return DP_ENOMEM;
        for (size_t k = 0; k < nt; k++)
            pl->tta[k] = NAN;
        pl->n_targets = nt;
    }
    rt->learn_epoch0 = pl->epochs;
    rt->learn_ckpt = pl;
    /* pl keeps global times; the run computes in its own frame (origin) */
    double o = sim_origin(rt->e), *tta = dp_malloc((nt + 1) * sizeof *tta);
    if (!tta)
        return DP_ENOMEM;
    for (size_t k = 0; k < nt; k++)
        tta[k] = pl->tta[k] - o;
    int rc = lrn_resume(L, sim_now(rt->e), pl->epochs + 1, pl->w, pl->consumed,
                        pl->started ? pl->next_t - o : NAN, tta);
    dp_free(tta);
    pl->started++;
    return rc < 0 ? -rc : rc;
}

pjob *pjob_start(const policy_def *p, const scn_scenario *s, uint64_t seed, world *view, pjob_learn *pl,
                 dp_err *err)
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
    j->origin = sim_origin(rt->e);
    if (rt->learn && pl) {
        j->pl = pl;
        if (learn_resume(rt, pl)) {
            dp_err_set(err, DP_ENOMEM, "out of memory for the job's learner");
            pjob_free(j);
            return NULL;
        }
    }
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
    ff_init(rt); /* as prt_run after the start: clean epoch boundaries restart the run's clock */
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

int pjob_boundary_due(const pjob *j)
{
    return j->rt->boundary;
}

int pjob_boundary(pjob *j)
{
    return prt_boundary(j->rt);
}

double pjob_origin(const pjob *j)
{
    return j->origin;
}

void pjob_device(pjob *j, size_t k, int up, double next_s)
{
    world_dev_set(j->rt->w, k, up, next_s);
}

int pjob_epochs_done(const pjob *j)
{
    return j->rt->finished ? j->rt->s->training.epochs : j->rt->epoch - 1;
}

res_run *pjob_results(pjob *j)
{
    res_run *r = prt_results(j->rt);
    if (j->pl &&
        j->rt->learn) { /* where the next run's evaluations go on, and the targets reached (global) */
        j->pl->next_t = j->origin + lrn_next_eval(j->rt->learn);
        for (size_t k = 0; k < j->pl->n_targets; k++)
            j->pl->tta[k] = j->origin + lrn_tta(j->rt->learn, k);
    }
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
