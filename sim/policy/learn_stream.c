/* learn_stream.c: the update stream's runtime side (runtime.h, "the
 * update stream"): the runtime's learner (sim/learn) fed by the runtime
 * itself (steps at batch ends, losses at failures, epoch ends, the end of
 * the run) and by the policy (synchronous steps, averages, pushes,
 * pulls).  Without `learning:` rt->learn is NULL and all of it is a no-op. */
#include "learn/efficiency_tap.h"
#include "jobrt.h"
#include "learner.h"
#include "runtime_impl.h"
#include "yamltree.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static double now_abs(const prt *rt)
{
    return rt->base + sim_now(rt->e);
}

/* The learner's epoch: a job's later run continues its job's count
 * (learn_epoch0: epochs done before it; 0 in a single run), so its
 * learning-rate schedule and its evaluations every k epochs go on. */
static int lep(const prt *rt)
{
    return rt->epoch + rt->learn_epoch0;
}

static void free_eff_log(void *l)
{
    eff_log_free(l);
}

static void learn_oom(prt *rt, int rc)
{
    if (rc == DP_ENOMEM)
        prt_fail(rt, DP_ENOMEM, "learner: out of memory");
    else if (rc < 0)
        prt_fail(rt, DP_ERUN,
                 "learner: over a million evaluations at t = %.6g s; evaluate less often "
                 "(learning.evaluate.every)",
                 rt->base + sim_now(rt->e));
}

int prt_learn_open(prt *rt, uint64_t seed, dp_err *err)
{
    if (!scn_learning(rt->s))
        return 0;
    if (lrn_cfg_read(rt->s, &rt->learn_cfg, err))
        return err ? err->code : DP_EINPUT;
    if (rt->learn_cfg && !(rt->learn = lrn_new(rt->learn_cfg, rt->s, rt->n, seed, err)))
        return err ? err->code : DP_ENOMEM;
    if (rt->learn && lrn_set_compress(rt->learn, &rt->comp))
        return dp_err_set(err, DP_ENOMEM, "out of memory for compression");
    /* learning.efficiency (checked by lrn_cfg_read): the updates logged
     * for the statistical-efficiency model, beside the learner's or alone
     * (then the model gives the run's accuracy: prt_learn_results) */
    const yt_node *em = yt_get(scn_learning(rt->s), "efficiency");
    if (!em)
        return 0;
    if (!rt->learn && eff_params_read(rt->s, em, "learning.efficiency", &rt->eff_params, err) < 0)
        return err ? err->code : DP_EINPUT;
    if (!(rt->eff_log = eff_log_new()) || !(rt->eff_tap = eff_tap_new(rt->eff_log, rt->n)))
        return err ? dp_err_set(err, DP_ENOMEM, "out of memory") : DP_ENOMEM;
    return 0;
}

void prt_learn_close(prt *rt)
{
    lrn_free(rt->learn);
    lrn_cfg_free(rt->learn_cfg);
    eff_tap_free(rt->eff_tap);
    eff_log_free(rt->eff_log); /* NULL once handed to the run's results */
    eff_params_free(rt->eff_params);
    rt->eff_tap = NULL;
    rt->eff_log = NULL;
    rt->eff_params = NULL;
    rt->learn = NULL;
    rt->learn_cfg = NULL;
}

int prt_learning(const prt *rt)
{
    return learn_on(rt);
}

void prt_learn_mode(prt *rt, prt_learn_kind m)
{
    if (rt->learn)
        learn_oom(rt, lrn_set_mode(rt->learn, m == PRT_LEARN_LOCAL   ? LRN_LOCAL
                                              : m == PRT_LEARN_ASYNC ? LRN_ASYNC
                                                                     : LRN_SYNC));
    if (rt->eff_tap)
        eff_tap_mode_set(rt->eff_tap, m == PRT_LEARN_LOCAL   ? EFF_TAP_LOCAL
                                      : m == PRT_LEARN_ASYNC ? EFF_TAP_ASYNC
                                                             : EFF_TAP_SYNC);
}

void prt_learn_batch(prt *rt, size_t d, double t, double samples)
{
    if (rt->learn) {
        lrn_set_shares(rt->learn, rt->share); /* the "policy" partition: sized by the first shares */
        learn_oom(rt, lrn_step(rt->learn, t, lep(rt), d, samples));
    }
    if (rt->eff_tap)
        learn_oom(rt, eff_tap_step(rt->eff_tap, d, samples));
}

void prt_learn_lost(prt *rt, size_t d, double t)
{
    if (rt->learn)
        learn_oom(rt, lrn_lose(rt->learn, t, d));
    if (rt->eff_tap)
        eff_tap_lose(rt->eff_tap, d);
}

int prt_learn_epoch(prt *rt, double t)
{
    if (!rt->learn)
        return 0; /* the efficiency model alone: evaluated at the end */
    int rc = lrn_epoch_end(rt->learn, t, lep(rt));
    learn_oom(rt, rc);
    if (!rc && rt->learn_ckpt) /* a job's checkpoint: the model as of this epoch's end (jobrt.h) */
        learn_oom(rt, pjob_learn_keep(rt->learn_ckpt, rt->learn));
    return !rc && lrn_done(rt->learn);
}

void prt_learn_sync(prt *rt, const size_t *members, size_t m, int by_samples)
{
    if (rt->learn)
        learn_oom(rt, lrn_sync(rt->learn, now_abs(rt), lep(rt), members, m,
                               by_samples ? LRN_BY_SAMPLES : LRN_PER_RANK));
    if (rt->eff_tap)
        learn_oom(rt, eff_tap_sync(rt->eff_tap, now_abs(rt), rt->epoch, members, m));
}

void prt_learn_average(prt *rt, const size_t *members, size_t m, int into_global, int to_members)
{
    if (rt->learn)
        learn_oom(rt, lrn_average(rt->learn, now_abs(rt), lep(rt), members, m, into_global, to_members));
    if (rt->eff_tap)
        learn_oom(rt, eff_tap_average(rt->eff_tap, now_abs(rt), rt->epoch, members, m, into_global));
}

void prt_learn_average_begin(prt *rt, const size_t *members, size_t m)
{
    if (rt->learn)
        learn_oom(rt, lrn_average_begin(rt->learn, now_abs(rt), lep(rt), members, m));
    if (rt->eff_tap)
        learn_oom(rt, eff_tap_average_begin(rt->eff_tap, members, m));
}

void prt_learn_average_end(prt *rt, const size_t *members, size_t m)
{
    if (rt->learn)
        learn_oom(rt, lrn_average_end(rt->learn, now_abs(rt), lep(rt), members, m));
    if (rt->eff_tap)
        learn_oom(rt, eff_tap_average_end(rt->eff_tap, now_abs(rt), rt->epoch, members, m));
}

long prt_learn_push(prt *rt, size_t d)
{
    long s = 0;
    if (rt->learn) {
        s = lrn_push(rt->learn, now_abs(rt), lep(rt), d);
        learn_oom(rt, (int)(s < 0 ? s : 0));
    } else if (rt->eff_tap) {
        s = eff_tap_staleness(rt->eff_tap, d); /* the tap counts versions as the learner does */
    }
    if (rt->eff_tap && s >= 0)
        learn_oom(rt, eff_tap_push(rt->eff_tap, now_abs(rt), rt->epoch, d, (double)s));
    return s < 0 ? 0 : s;
}

void prt_learn_pull(prt *rt, size_t d)
{
    if (rt->learn)
        learn_oom(rt, lrn_pull(rt->learn, now_abs(rt), d));
    if (rt->eff_tap)
        eff_tap_pull(rt->eff_tap, d);
}

size_t prt_learn_params(const prt *rt)
{
    return rt->learn ? lrn_n_params(rt->learn) : 0;
}

const double *prt_learn_weights(const prt *rt, size_t d)
{
    return rt->learn ? lrn_device_weights(rt->learn, d) : NULL;
}

double prt_learn_lr(const prt *rt)
{
    return rt->learn ? lrn_lr(rt->learn, lep(rt)) : 0;
}

int prt_learn_probe(prt *rt, size_t d, int at_global, size_t k, double *g, double *loss)
{
    if (!rt->learn)
        return DP_EINPUT;
    int rc = lrn_probe(rt->learn, d, at_global, k, g, loss);
    learn_oom(rt, rc);
    return rc;
}

void prt_learn_lr_scale(prt *rt, size_t d, double f)
{
    if (rt->learn)
        learn_oom(rt, lrn_set_lr_scale(rt->learn, d, f));
}

void prt_learn_average_weighted(prt *rt, const size_t *members, size_t m, const double *weights)
{
    if (rt->learn)
        learn_oom(rt, lrn_average_weighted(rt->learn, now_abs(rt), lep(rt), members, m, weights));
    if (rt->eff_tap) /* the statistical-efficiency model counts it as an average into the global model */
        learn_oom(rt, eff_tap_average(rt->eff_tap, now_abs(rt), rt->epoch, members, m, 1));
}

void prt_learn_group_average(prt *rt, const size_t *members, size_t m)
{
    if (rt->learn)
        learn_oom(rt, lrn_group_average(rt->learn, now_abs(rt), lep(rt), members, m));
    if (rt->eff_tap)
        learn_oom(rt, eff_tap_average(rt->eff_tap, now_abs(rt), rt->epoch, members, m, 0));
}

long prt_learn_merge(prt *rt, size_t d, const size_t *members, size_t m, double alpha, int delta_bits)
{
    long s = 0;
    if (rt->learn) {
        lc_cfg c = prt_delta_coder(rt, delta_bits);
        s = lrn_merge(rt->learn, now_abs(rt), lep(rt), d, alpha, delta_bits > 0 ? &c : NULL);
        learn_oom(rt, (int)(s < 0 ? s : 0));
    }
    if (rt->eff_tap) /* the statistical-efficiency model counts it as the group's average into the global
                        model */
        learn_oom(rt, eff_tap_average(rt->eff_tap, now_abs(rt), rt->epoch, members, m, 1));
    return s < 0 ? 0 : s;
}

void prt_learn_mix_global(prt *rt, const size_t *members, size_t m, double beta)
{
    if (rt->learn)
        learn_oom(rt, lrn_mix_global(rt->learn, now_abs(rt), rt->epoch, members, m, beta));
}

void prt_learn_checkpoint(prt *rt)
{
    if (rt->learn)
        learn_oom(rt, lrn_checkpoint(rt->learn));
}

void prt_learn_restore(prt *rt)
{
    if (rt->learn)
        learn_oom(rt, lrn_restore(rt->learn, now_abs(rt), lep(rt)));
}

void prt_learn_up(prt *rt, size_t d, double t)
{
    (void)t;
    if (rt->learn)
        learn_oom(rt, lrn_pull(rt->learn, t, d));
    if (rt->eff_tap)
        eff_tap_pull(rt->eff_tap, d);
}

/* The efficiency model alone (no SGD learner): the run's accuracy at every
 * epoch end from its logged updates; no losses (NAN), no targets. */
static void efficiency_results(prt *rt, res_run *r)
{
    const eff_log *l = rt->eff_log;
    double samples = 0, D = (double)rt->s->dataset.samples;
    size_t i = 0, n = eff_log_len(l);
    for (size_t k = 0; k < r->n_epochs; k++) {
        int e = r->epochs[k].epoch;
        while (i < n && eff_log_epoch(l, i) <= e)
            samples += eff_log_samples(l, i++);
        res_eval x = {.t_s = r->epochs[k].end_s,
                      .epochs = samples / D,
                      .samples = samples,
                      .epoch = e,
                      .test_acc = eff_metric_at_epoch(rt->eff_params, l, e),
                      .test_loss = NAN,
                      .train_loss = NAN};
        if (res_add_eval(r, &x)) {
            learn_oom(rt, DP_ENOMEM);
            return;
        }
    }
    snprintf(r->learn_source, sizeof r->learn_source, "efficiency");
}

void prt_learn_results(prt *rt, res_run *r, double T)
{
    if (!rt->learn) {
        efficiency_results(rt, r);
        r->learn_log = rt->eff_log;
        r->learn_log_free = free_eff_log;
        rt->eff_log = NULL;
        return;
    }
    learner *L = rt->learn;
    /* a job's run stopped by its scheduler ends with no evaluation of its
     * own: its model in flight goes back to the job's checkpoint (jobrt.h) */
    int stopped = rt->learn_ckpt && !rt->finished;
    if (stopped ? lrn_flush(L, T, lep(rt)) : lrn_finish(L, T, lep(rt))) {
        learn_oom(rt, DP_ENOMEM);
        return;
    }
    size_t ne = lrn_n_evals(L), nt = lrn_n_targets(L);
    const lrn_eval *e = lrn_evals(L);
    for (size_t i = 0; i < ne; i++) {
        res_eval x = {.t_s = e[i].t_s,
                      .epochs = e[i].epochs,
                      .samples = e[i].samples,
                      .epoch = e[i].epoch,
                      .test_acc = e[i].test_acc,
                      .test_loss = e[i].test_loss,
                      .train_loss = e[i].train_loss};
        if (res_add_eval(r, &x)) {
            learn_oom(rt, DP_ENOMEM);
            return;
        }
    }
    for (size_t k = 0; k < nt; k++)
        if (res_add_tta(r, lrn_target(L, k), lrn_tta(L, k))) {
            learn_oom(rt, DP_ENOMEM);
            return;
        }
    snprintf(r->learn_source, sizeof r->learn_source, "sgd");
    if (rt->eff_log) { /* the run's results own the update log from here */
        r->learn_log = rt->eff_log;
        r->learn_log_free = free_eff_log;
        rt->eff_log = NULL;
    }
}
