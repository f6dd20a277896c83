/* jobs_run.c: many jobs in one world (jobs.h): one network, each job's
 * policy on the devices its scheduler gives it, in its own clock domain.
 *
 * The driver owns the shared world (world_new over the whole scenario):
 * its engine is the root of an engine group (engine_group.h), holding
 * arrivals, decisions and the world's dynamics (traces, failures); each
 * run of a job gets a child engine whose local 0 is the global time it
 * starts (after its restart's load), so a job that shares nothing
 * computes exactly as its single run, clock restarts at epoch boundaries
 * included (pjob_boundary).  The driver steps the group itself; when an
 * event asked to stop (a job ends inside one of its own events) or the
 * root acted, it asks every running job whether it ended, so a finished
 * job sees no event past its end, as a single run stops there.  Decisions
 * (sched.h) run as root events at the instant that asks for them: after
 * the events already queued for that instant (the arrivals of one instant
 * make one decision).  Job-level times are global: a run's local time
 * plus its origin. */
#include "jobs.h"
#include "engine_group.h"
#include "policy/jobrt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct jrun jrun;

typedef struct jstate {
    jrun *R;
    size_t i;
    int state;   /* JS_* */
    size_t *dev; /* the devices it holds (n_dev of them) */
    int n_dev;
    double held_since;
    double attained;   /* device-seconds held before held_since */
    int epochs_done;   /* completed and kept (its checkpoint) */
    double progress;   /* with `efficiency`: steps of M0 those epochs made (epoch_progress) */
    double run_batch;  /* the global batch of its current run */
    int runs;          /* times started */
    int resizes;       /* re-sized after failures since its last completed epoch (on_device) */
    int resize_epochs; /* its epochs done at the last such re-size */
    pjob *job;         /* NULL while not running (or during a restart's load) */
    scn_scenario *sub;
    uint64_t start_ev;
    double *snap; /* link bytes of its devices when its run started */
    double alone_s;
    pjob_learn learn; /* learning: its checkpoint across runs (jobrt.h) */
    size_t n_tta;     /* learning: its targets, when each was first reached (absolute) */
    double *tta_target, *tta_abs;
    job_out out;
    /* elastic schedulers (sched.h allocate): the counts it may run on, its
     * time alone and global batch on each ([k], k <= hi), and when its
     * current run's policy started */
    int lo, hi;
    double *alone_k, *batch_k;
    double began;
    size_t dom;    /* its current run's engine in the group (0: none yet) */
    double origin; /* global time of that run's local 0 */
} jstate;

enum { JS_PENDING = 0, JS_WAITING, JS_RUNNING, JS_DONE };

struct jrun {
    const jobs_spec *js;
    const sched_def *sd;
    world *w;
    sim_engine *e; /* the root engine */
    eg_group *g;
    net *n;
    uint64_t seed;
    jstate *st;
    int *owner; /* per device: the job holding it, or -1 */
    size_t done;
    int decide_pending;
    int failed;
    dp_err *err;
    job_alloc *allocs;
    size_t n_allocs, cap_allocs;
    job_stat *stats; /* every run's policy figures, as its runs end */
    size_t n_stats, cap_stats;
    /* alone-time cache: (scenario, policy, first device, count) -> seconds */
    struct acache {
        const scn_scenario *s;
        const policy_def *p;
        size_t first;
        int n;
        double t;
    } * ac;
    size_t n_ac;
    /* stopped runs and their scenarios, freed with the engine (their
     * stale events may still be queued: jobrt.h) */
    struct grave {
        pjob *job;
        scn_scenario *sub;
    } * graves;
    size_t n_graves;
};

/* ---- the job's scenario over its devices ---- */

scn_scenario *jobs_sub_scenario(const scn_scenario *job, const size_t *map, size_t k, dp_err *err)
{
    scn_scenario *sub = dp_malloc(sizeof *sub);
    scn_group *g = dp_malloc((job->n_groups + 1) * sizeof *g);
    scn_device *dv = dp_malloc((k + 1) * sizeof *dv);
    if (!sub || !g || !dv) {
        dp_free(sub);
        dp_free(g);
        dp_free(dv);
        dp_err_set(err, DP_ENOMEM, "out of memory");
        return NULL;
    }
    *sub = *job;
    memcpy(g, job->groups, job->n_groups * sizeof *g);
    for (size_t q = 0; q < job->n_groups; q++)
        g[q].count = 0;
    for (size_t d = 0; d < k; d++) {
        dv[d] = job->devices[map[d]];
        g[dv[d].group].count++;
    }
    sub->groups = g;
    sub->devices = dv;
    sub->n_devices = k;
    sub->n_pops = 0;
    sub->pops = NULL;
    return sub;
}

void jobs_sub_free(scn_scenario *sub)
{
    if (!sub)
        return;
    dp_free(sub->groups);
    dp_free(sub->devices);
    dp_free(sub);
}

/* ---- the estimate alone ---- */

/* With `efficiency`, a job's epochs count at its reference batch M0 (as
 * Pollux's jobs train to a target, not for a number of epochs): it trains
 * until its progress, in steps of M0 samples (docs/MODEL.md, statistical
 * efficiency), reaches epochs x samples / M0.  An epoch at global batch M
 * from progress p adds samples / M0 x (B + M0) / (B + M), B the noise scale
 * at p: at M = M0 one epoch's worth, at a larger batch less, so the job
 * needs more epochs there. */
static double epoch_progress(const job_spec *js, double p, int epoch, double M)
{
    double M0 = eff_params_m0(js->eff);
    return (double)js->scn->dataset.samples / M0 * eff_efficiency(eff_noise_at(js->eff, p, epoch), M0, M);
}

/* Does job js train to a progress (`scheduler.train_to: progress` and an
 * efficiency)? */
static int to_progress(const jobs_spec *S, const job_spec *js)
{
    return S->opts.to_progress && js->eff;
}

static double goal_progress(const job_spec *js)
{
    return js->scn->training.epochs * (double)js->scn->dataset.samples / eff_params_m0(js->eff);
}

/* The global batch of devices map[0..n) of s (map NULL: its first n):
 * their per-device batches summed. */
static double global_batch(const scn_scenario *s, const size_t *map, size_t n)
{
    double M = 0;
    for (size_t d = 0; d < n; d++)
        M += s->groups[s->devices[map ? map[d] : d].group].batch;
    return M;
}

/* Progress after n more epochs at batch M from (p, epochs done). */
static double progress_after(const job_spec *js, double p, int done, int n, double M)
{
    for (int q = 0; q < n; q++)
        p += epoch_progress(js, p, done + q + 1, M);
    return p;
}

/* Epochs at batch M that take progress p to the goal (at least 1; at most
 * EPOCHS_MAX, a bound against a batch so large it learns almost nothing). */
#define EPOCHS_MAX 1000000
static int epochs_to_goal(const job_spec *js, double p, int done, double M)
{
    double goal = goal_progress(js) * (1 - 1e-12); /* the sum's rounding must not add an epoch */
    int n = 0;
    while ((p < goal || n == 0) && n < EPOCHS_MAX) {
        p += epoch_progress(js, p, done + n + 1, M);
        n++;
    }
    return n;
}

static double alone_on(jrun *R, size_t i, int n, dp_err *err)
{
    const job_spec *j = &R->js->jobs[i];
    size_t first = j->pinned ? j->pinned[0] : 0;
    for (size_t k = 0; k < R->n_ac; k++)
        if (R->ac[k].s == j->scn && R->ac[k].p == j->policy && R->ac[k].first == first && R->ac[k].n == n)
            return R->ac[k].t;
    double t = jobs_alone_k(R->js, i, n, R->seed, err);
    struct acache *na = dp_realloc(R->ac, (R->n_ac + 1) * sizeof *na);
    if (isfinite(t) && na) {
        R->ac = na;
        R->ac[R->n_ac++] = (struct acache){j->scn, j->policy, first, n, t};
    } else if (na) {
        R->ac = na;
    }
    return t;
}

static double alone_run(const jobs_spec *js, size_t i, int n, int to_goal, uint64_t seed, dp_err *err);

/* Its time alone on its `devices`: with `efficiency`, for the epochs its
 * goal takes at its batch there (rho's denominator). */
double jobs_alone_s(const jobs_spec *js, size_t i, uint64_t seed, dp_err *err)
{
    return alone_run(js, i, js->jobs[i].want, 1, seed, err);
}

/* Its time alone on n devices for its `epochs` (an elastic scheduler's
 * throughput estimate: pollux weighs efficiency itself). */
double jobs_alone_k(const jobs_spec *js, size_t i, int n, uint64_t seed, dp_err *err)
{
    return alone_run(js, i, n, 0, seed, err);
}

static double alone_run(const jobs_spec *js, size_t i, int n, int to_goal, uint64_t seed, dp_err *err)
{
    const job_spec *j = &js->jobs[i];
    size_t *map = j->pinned;
    if (!map) {
        if (!(map = dp_malloc((size_t)n * sizeof *map))) {
            dp_err_set(err, DP_ENOMEM, "out of memory");
            return NAN;
        }
        for (int d = 0; d < n; d++)
            map[d] = (size_t)d;
    }
    scn_scenario *sub = jobs_sub_scenario(j->scn, map, (size_t)n, err);
    if (map != j->pinned)
        dp_free(map);
    if (!sub)
        return NAN;
    /* the estimate is the job's work: on devices that do not fail (a
     * device gone for good would leave no estimate at all) */
    sub->failures = 0;
    for (size_t q = 0; q < sub->n_groups; q++)
        sub->groups[q].avail = (scn_avail){.data_persists = sub->groups[q].avail.data_persists};
    if (to_goal && to_progress(js, j))
        sub->training.epochs = epochs_to_goal(j, 0, 0, global_batch(sub, NULL, sub->n_devices));
    res_run *r = policy_run(j->policy, sub, seed, err);
    jobs_sub_free(sub);
    double t = r ? r->ttotal_s : NAN;
    if (!r)
        dp_err_prefix(err, "job %s alone on %d devices", j->name, n);
    res_run_free(r);
    return t;
}

/* The counts an elastic job's time alone is simulated at: the powers of
 * 2, its `devices` and the ends of its range. */
static int sampled(const jstate *j, int k, int want)
{
    return (k & (k - 1)) == 0 || k == want || k == j->lo || k == j->hi;
}

/* An elastic job's time alone and global batch on each count it may run
 * on.  The time is a single-job run at the sampled counts; between two of
 * them, k1 < k < k2, it is linear in 1/k (exact for a + b / k: compute
 * split over k devices, a part that does not shrink, as a ring's
 * 2 (k - 1) / k x model / bandwidth), so 64 counts cost about 8 runs.  A policy that refuses a count other
 * than its `devices` only rules that count out (NAN), and the counts between it and the next sampled one. */
static int elastic_estimates(jrun *R, jstate *j, dp_err *err)
{
    const job_spec *js = &R->js->jobs[j->i];
    if (!(j->alone_k = dp_calloc((size_t)j->hi + 1, sizeof *j->alone_k)) ||
        !(j->batch_k = dp_calloc((size_t)j->hi + 1, sizeof *j->batch_k)))
        return dp_err_set(err, DP_ENOMEM, "out of memory");
    for (int k = 0; k <= j->hi; k++) {
        j->alone_k[k] = NAN;
        if (k > 0)
            j->batch_k[k] = j->batch_k[k - 1] + js->scn->groups[js->scn->devices[k - 1].group].batch;
        if (k < j->lo || !sampled(j, k, js->want))
            continue;
        dp_err e = {0};
        j->alone_k[k] = k == js->want && !to_progress(R->js, js) ? j->alone_s : alone_on(R, j->i, k, &e);
        if (e.code == DP_ENOMEM)
            return dp_err_set(err, DP_ENOMEM, "%s", e.msg);
    }
    for (int k = j->lo, k1 = 0; k <= j->hi; k++) {
        if (sampled(j, k, js->want)) {
            k1 = k;
            continue;
        }
        int k2 = k + 1;
        while (!sampled(j, k2, js->want))
            k2++;
        double a1 = j->alone_k[k1], a2 = j->alone_k[k2], x = (1.0 / k - 1.0 / k2) / (1.0 / k1 - 1.0 / k2);
        j->alone_k[k] = a2 + (a1 - a2) * x;
    }
    return 0;
}

/* ---- bookkeeping ---- */

static int fail(jrun *R, int code, const char *fmt, const char *a, const char *b)
{
    if (!R->failed) {
        R->failed = 1;
        dp_err_set(R->err, code, fmt, a, b);
    }
    return code;
}

static void release(jrun *R, jstate *j)
{
    double now = sim_now(R->e);
    for (int k = 0; k < j->n_dev; k++) {
        R->owner[j->dev[k]] = -1;
        if (R->n_allocs == R->cap_allocs) {
            size_t nc = R->cap_allocs ? 2 * R->cap_allocs : 64;
            job_alloc *na = dp_realloc(R->allocs, nc * sizeof *na);
            if (!na) {
                fail(R, DP_ENOMEM, "%s%s", "out of memory", "");
                continue;
            }
            R->allocs = na;
            R->cap_allocs = nc;
        }
        R->allocs[R->n_allocs++] = (job_alloc){j->i, j->dev[k], j->held_since, now};
    }
    j->attained += j->n_dev * (now - j->held_since);
    j->n_dev = 0;
}

/* Link bytes of device d's links (those a run's per-device bytes count). */
static double dev_link_bytes(jrun *R, size_t d)
{
    double b = net_link_bytes(R->n, world_dev_up(R->w, d)) + net_link_bytes(R->n, world_dev_down(R->w, d));
    int pu = world_dev_peer_up(R->w, d), pd = world_dev_peer_down(R->w, d);
    if (pu >= 0)
        b += net_link_bytes(R->n, pu) + net_link_bytes(R->n, pd);
    return b;
}

/* The run's own figures (res_stat: its policy's and its failures'),
 * device indices made the world's. */
static void keep_stats(jrun *R, jstate *j, const res_run *r)
{
    for (size_t k = 0; k < r->n_stats; k++) {
        if (strncmp(r->stats[k].name, "link.", 5) == 0)
            continue; /* the world's links, shared by every job: not the job's figures */
        if (R->n_stats == R->cap_stats) {
            size_t nc = R->cap_stats ? 2 * R->cap_stats : 64;
            job_stat *ns = dp_realloc(R->stats, nc * sizeof *ns);
            if (!ns) {
                fail(R, DP_ENOMEM, "%s%s", "out of memory", "");
                return;
            }
            R->stats = ns;
            R->cap_stats = nc;
        }
        res_stat st = r->stats[k];
        if ((st.scope == RES_SCOPE_DEVICE || st.scope == RES_SCOPE_DEVICE_EPOCH) && st.a >= 0 &&
            st.a < j->n_dev)
            st.a = (int64_t)j->dev[st.a];
        R->stats[R->n_stats++] = (job_stat){j->i, j->runs - 1, st};
    }
}

/* Learning: the targets as of this run (a later run carries the earlier
 * ones: jobrt.h) and its last evaluation. */
static void keep_learning(jrun *R, jstate *j, const res_run *r)
{
    if (r->n_evals)
        j->out.final_acc = r->evals[r->n_evals - 1].test_acc;
    if (!r->n_tta)
        return;
    if (!j->tta_target) {
        j->tta_target = dp_malloc(r->n_tta * sizeof *j->tta_target);
        j->tta_abs = dp_malloc(r->n_tta * sizeof *j->tta_abs);
        if (!j->tta_target || !j->tta_abs) {
            fail(R, DP_ENOMEM, "%s%s", "out of memory", "");
            return;
        }
        j->n_tta = r->n_tta;
    }
    memcpy(j->tta_target, r->tta_target, j->n_tta * sizeof *j->tta_target);
    for (size_t k = 0; k < j->n_tta; k++) /* the run's times are local */
        j->tta_abs[k] = j->origin + r->tta_s[k];
}

/* A run of job j ended (finished, or stopped by the scheduler): add its
 * figures.  Every device link's bytes count from the run's start. */
static void account(jrun *R, jstate *j, res_run *r)
{
    if (!r)
        return;
    keep_stats(R, j, r);
    keep_learning(R, j, r);
    double before = 0, compute = 0;
    for (int k = 0; k < j->n_dev; k++)
        before += j->snap[k];
    for (size_t d = 0; d < r->n_devices; d++)
        compute += r->devices[d].compute_s;
    j->out.bytes += r->bytes_total - before / 2;
    j->out.compute_s += compute;
    if (j->runs == 1) /* (origin - start) + local: exact when the run began at its start */
        j->out.tsend_s = r->tsend_s + (j->origin - j->out.start_s);
    j->out.tflops = r->tflops;
    j->out.end_s = j->origin + r->ttotal_s; /* global; a finished run's end */
}

static void stop_run(jrun *R, jstate *j, int finished)
{
    if (j->job) { /* in its domain, its clock at the global now */
        size_t prev = eg_enter(R->g, j->dom);
        int k = finished ? j->sub->training.epochs : pjob_epochs_done(j->job);
        if (to_progress(R->js, &R->js->jobs[j->i]))
            j->progress = progress_after(&R->js->jobs[j->i], j->progress, j->epochs_done, k, j->run_batch);
        if (!finished || to_progress(R->js, &R->js->jobs[j->i]))
            j->epochs_done += k;
        res_run *r = pjob_results(j->job);
        if (!r) /* out of memory for the run's records */
            fail(R, DP_ENOMEM, "job %s: out of memory for its results%s", R->js->jobs[j->i].name, "");
        account(R, j, r);
        res_run_free(r);
        pjob_stop(j->job);
        eg_leave(R->g, prev);
        eg_retire(R->g, j->dom);       /* its stale events never run */
        net_dom_retired(R->n, j->dom); /* but the shares its cut flows changed are recomputed */
    }
    if (j->start_ev)
        sim_cancel(R->e, j->start_ev);
    j->start_ev = 0;
    struct grave *ng = dp_realloc(R->graves, (R->n_graves + 1) * sizeof *ng);
    if (ng) {
        R->graves = ng;
        R->graves[R->n_graves++] = (struct grave){j->job, j->sub};
    } else { /* nothing of it can run again: only its queued events would read it */
        fail(R, DP_ENOMEM, "%s%s", "out of memory", "");
        pjob_free(j->job);
        jobs_sub_free(j->sub);
    }
    j->job = NULL;
    j->sub = NULL;
    release(R, j);
}

static void on_decide(sim_engine *e, void *ctx, uint64_t id);

static void request_decide(jrun *R)
{
    if (R->decide_pending)
        return;
    R->decide_pending = 1;
    if (!sim_at(R->e, sim_now(R->e), on_decide, R))
        fail(R, DP_ENOMEM, "%s%s", "out of memory", "");
}

/* Start job j's policy on the devices it holds (after a restart's load). */
static void start_run(jrun *R, jstate *j)
{
    const job_spec *js = &R->js->jobs[j->i];
    dp_err e = {0};
    j->start_ev = 0;
    j->runs++;
    if (!(j->sub = jobs_sub_scenario(js->scn, j->dev, (size_t)j->n_dev, &e))) {
        fail(R, e.code, "%s%s", e.msg, "");
        return;
    }
    j->run_batch = global_batch(j->sub, NULL, j->sub->n_devices);
    j->sub->training.epochs = to_progress(R->js, js)
                                  ? epochs_to_goal(js, j->progress, j->epochs_done, j->run_batch)
                                  : js->scn->training.epochs - j->epochs_done;
    for (int k = 0; k < j->n_dev; k++)
        j->snap[k] = dev_link_bytes(R, j->dev[k]);
    j->began = j->origin = sim_now(R->e);
    /* its own clock domain: local 0 is now */
    sim_engine *child = eg_add(R->g, j->origin, j, &e);
    world *v = child ? world_new_view(R->w, j->sub, j->dev, R->seed, &e) : NULL;
    j->learn.epochs = j->epochs_done;
    if (!v) {
        R->failed = 1;
        dp_err_set(R->err, e.code ? e.code : DP_ENOMEM, "job %s: %s", js->name, e.msg);
        return;
    }
    j->dom = eg_count(R->g) - 1;
    world_view_set_engine(v, child);
    size_t prev = eg_enter(R->g, j->dom);
    if (!(j->job = pjob_start(js->policy, j->sub, R->seed, v, &j->learn, &e))) {
        eg_leave(R->g, prev);
        char m[sizeof e.msg];
        memcpy(m, e.msg, sizeof m);
        R->failed = 1;
        dp_err_set(R->err, e.code ? e.code : DP_ERUN, "job %s: %s", js->name, m);
        return;
    }
    /* a device down as it starts (a static job's, or one that failed
     * during the restart's load): the job's view down too, once its
     * policy listens, as a single run's device down from t = 0 */
    for (int k = 0; k < j->n_dev; k++)
        if (!world_dev_is_up(R->w, j->dev[k]))
            pjob_device(j->job, (size_t)k, 0, world_dev_next_change(R->w, j->dev[k]) - j->origin);
    eg_leave(R->g, prev);
}

/* A device of the shared world failed or came back (world_on_device): the
 * job holding it, if running, sees it as a single run would; a device
 * back and free may let a waiting job start. */
#define RESIZES_MAX 100

static void on_device(void *ctx, size_t d, int up)
{
    jrun *R = ctx;
    int o = R->owner[d];
    if (!up && o >= 0 && R->sd->allocate) {
        /* an elastic scheduler re-sizes the job onto devices up (as
         * Pollux restarts a job from its checkpoint when it loses a
         * node): its run sees the failure (its statistics count it), is
         * stopped like a pre-emption (its epoch in progress lost) and
         * waits for the decision now */
        jstate *j = &R->st[o];
        size_t prev = j->job ? eg_enter(R->g, j->dom) : 0;
        for (int k = 0; j->job && k < j->n_dev; k++)
            if (j->dev[k] == d)
                pjob_device(j->job, (size_t)k, 0, world_dev_next_change(R->w, d) - j->origin);
        if (j->job)
            eg_leave(R->g, prev);
        stop_run(R, j, 0);
        j->state = JS_WAITING;
        j->out.preemptions++;
        /* a world that fails faster than the job gets through an epoch
         * would re-size it for ever: stop, as a single run does after
         * max_restarts restarts from one checkpoint (sync.c) */
        if (j->epochs_done > j->resize_epochs)
            j->resizes = 0;
        j->resize_epochs = j->epochs_done;
        if (++j->resizes > RESIZES_MAX) {
            char what[160];
            snprintf(what, sizeof what, "%d re-sizes after failures since epoch %d by t = %.6g s",
                     RESIZES_MAX, j->epochs_done, sim_now(R->e));
            fail(R, DP_ERUN,
                 "job %s: no progress: %s; devices fail faster than the job gets through an epoch",
                 R->js->jobs[j->i].name, what);
            sim_stop(R->e);
            return;
        }
        request_decide(R);
        return;
    }
    if (o >= 0 && R->st[o].job) { /* in its domain; its next change in its frame */
        jstate *j = &R->st[o];
        size_t prev = eg_enter(R->g, j->dom);
        for (int k = 0; k < j->n_dev; k++)
            if (j->dev[k] == d)
                pjob_device(j->job, (size_t)k, up, world_dev_next_change(R->w, d) - j->origin);
        eg_leave(R->g, prev);
    }
    if (up && o < 0)
        request_decide(R);
}

/* Devices of job i that are down (the scheduler counts only devices up). */
static int held_down(const jrun *R, size_t i)
{
    int n = 0;
    for (int k = 0; k < R->st[i].n_dev; k++)
        n += !world_dev_is_up(R->w, R->st[i].dev[k]);
    return n;
}

static void on_start(sim_engine *e, void *ctx, uint64_t id)
{
    (void)e;
    (void)id;
    jstate *j = ctx;
    start_run(j->R, j);
}

/* Give job j devices: its pinned ones, or the lowest free ones (count of
 * them). */
static void take(jrun *R, jstate *j, int count)
{
    const job_spec *js = &R->js->jobs[j->i];
    j->n_dev = 0;
    if (js->pinned) {
        for (int k = 0; k < js->want; k++)
            j->dev[j->n_dev++] = js->pinned[k];
    } else {
        for (size_t d = 0; d < R->js->world->n_devices && j->n_dev < count; d++)
            if (R->owner[d] < 0 && world_dev_is_up(R->w, d))
                j->dev[j->n_dev++] = d;
    }
    for (int k = 0; k < j->n_dev; k++)
        R->owner[j->dev[k]] = (int)j->i;
    double now = sim_now(R->e);
    j->held_since = now;
    j->state = JS_RUNNING;
    if (j->runs == 0 && !(j->out.start_s > 0))
        j->out.start_s = now;
    if (j->runs > 0 && R->js->opts.restart_s > 0) {
        if (!(j->start_ev = sim_at(R->e, now + R->js->opts.restart_s, on_start, j)))
            fail(R, DP_ENOMEM, "%s%s", "out of memory", "");
    } else {
        start_run(R, j);
    }
}

static int pinned_free(const job_spec *js, const char *taken)
{
    for (int k = 0; k < js->want; k++)
        if (taken[js->pinned[k]])
            return 0;
    return 1;
}

/* An elastic scheduler's view of job j (sched.h): its range, estimates,
 * efficiency now and the work a stop would lose. */
static void elastic_view(jrun *R, jstate *j, sched_job *v, double now)
{
    const job_spec *js = &R->js->jobs[j->i];
    v->min_dev = j->lo;
    v->max_dev = j->hi;
    v->held = j->state == JS_RUNNING ? j->n_dev : 0;
    v->resumes = j->runs > 0 && R->js->opts.restart_s > 0;
    v->alone_k = j->alone_k;
    v->batch_k = j->batch_k;
    if (js->eff) { /* the noise scale at its progress now (epoch_progress; epochs done x samples / M0 when it
                      trains for epochs) */
        int k = j->job ? pjob_epochs_done(j->job) : 0;
        v->ref_batch = eff_params_m0(js->eff);
        double p = to_progress(R->js, js) ? progress_after(js, j->progress, j->epochs_done, k, j->run_batch)
                                          : v->epochs_done * (double)js->scn->dataset.samples / v->ref_batch;
        v->noise_scale = eff_noise_at(js->eff, p, v->epochs_done + 1);
    }
    if (v->held && !j->job) { /* loading its checkpoint */
        v->in_epoch_s = now - j->held_since;
    } else if (v->held) {
        double per = j->alone_k[j->n_dev] / v->epochs;
        v->in_epoch_s = fmin(per, fmax(0, now - j->began - pjob_epochs_done(j->job) * per));
    }
}

/* Check an elastic scheduler's counts (sched.h allocate). */
static int counts_ok(jrun *R, const sched_job *v, size_t m, const int *count)
{
    size_t sum = 0;
    for (size_t k = 0; k < m; k++) {
        if (count[k] &&
            (count[k] < v[k].min_dev || count[k] > v[k].max_dev || !isfinite(v[k].alone_k[count[k]])))
            return fail(R, DP_ERUN, "scheduler %s gave a job a device count outside its range%s", R->sd->name,
                        "");
        sum += (size_t)count[k];
    }
    size_t up = 0;
    for (size_t d = 0; d < R->js->world->n_devices; d++)
        up += world_dev_is_up(R->w, d);
    if (sum > up)
        return fail(R, DP_ERUN, "scheduler %s gave out more devices than are up%s", R->sd->name, "");
    return 0;
}

static void decide(jrun *R)
{
    const jobs_spec *S = R->js;
    size_t n = S->n, m = 0, N = S->world->n_devices;
    double now = sim_now(R->e);
    sched_job *v = dp_calloc(n + 1, sizeof *v);
    size_t *order = dp_calloc(n + 1, sizeof *order), *who = dp_calloc(n + 1, sizeof *who);
    char *sel = dp_calloc(n + 1, 1), *taken = dp_calloc(N + 1, 1);
    int *count = dp_calloc(n + 1, sizeof *count);
    if (!v || !order || !who || !sel || !taken || !count) {
        fail(R, DP_ENOMEM, "%s%s", "out of memory", "");
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        jstate *j = &R->st[i];
        if (j->state != JS_WAITING && j->state != JS_RUNNING)
            continue;
        const job_spec *js = &S->jobs[i];
        int ep = js->scn->training.epochs;
        int done_ep = j->epochs_done + (j->job ? pjob_epochs_done(j->job) : 0);
        v[m] = (sched_job){
            .id = i,
            .arrival_s = js->arrival_s,
            .want = js->want,
            .running = j->state == JS_RUNNING,
            .weight = js->weight,
            .attained_s = j->attained + (j->state == JS_RUNNING ? j->n_dev * (now - j->held_since) : 0),
            .alone_s = j->alone_s,
            .remaining_s =
                to_progress(S, js)
                    ? j->alone_s * fmax(0, 1 - progress_after(js, j->progress, j->epochs_done,
                                                              done_ep - j->epochs_done, j->run_batch) /
                                                   goal_progress(js))
                    : j->alone_s * (double)(ep - done_ep) / ep,
            .epochs = ep,
            .epochs_done = done_ep};
        if (R->sd->allocate)
            elastic_view(R, j, &v[m], now);
        who[m++] = i;
    }
    size_t n_up = 0; /* an elastic scheduler shares the devices up */
    for (size_t d = 0; d < N; d++)
        n_up += world_dev_is_up(R->w, d);
    sched_ctx c = {now, R->sd->allocate ? n_up : N, &S->opts};
    if (m)
        R->sd->order(&c, v, m, order);
    for (size_t k = 0; k < m; k++)
        count[k] = S->jobs[who[k]].want;
    if (R->sd->allocate && m) { /* elastic: its counts; a running job whose count changes restarts */
        R->sd->allocate(&c, v, m, count);
        if (counts_ok(R, v, m, count))
            goto done;
        for (size_t k = 0; k < m; k++) {
            sel[k] = count[k] > 0;
            if (v[k].running && sel[k] && count[k] != R->st[who[k]].n_dev) {
                jstate *j = &R->st[who[k]];
                stop_run(R, j, 0);
                j->state = JS_WAITING;
                j->out.preemptions++;
                v[k].running = 0;
            }
        }
    }
    /* devices up and not kept by a running job; a running job kept needs
     * only its devices up from the count (its down ones are its own) */
    size_t free_n = N;
    for (size_t d = 0; d < N; d++)
        free_n -= !world_dev_is_up(R->w, d);
    if (!R->sd->preempt) /* running jobs keep their devices */
        for (size_t k = 0; k < m; k++)
            if (v[k].running) {
                sel[k] = 1;
                free_n -= (size_t)(v[k].want - held_down(R, who[k]));
                for (int q = 0; q < R->st[who[k]].n_dev; q++)
                    taken[R->st[who[k]].dev[q]] = 1;
            }
    for (size_t o = 0; o < m && !R->sd->allocate; o++) {
        size_t k = order[o];
        if (sel[k])
            continue;
        const job_spec *js = &S->jobs[who[k]];
        int need = js->want - (v[k].running ? held_down(R, who[k]) : 0);
        int fits = js->pinned ? pinned_free(js, taken) : (size_t)need <= free_n;
        if (fits) {
            sel[k] = 1;
            free_n -= (size_t)need;
            for (int q = 0; js->pinned && q < js->want; q++)
                taken[js->pinned[q]] = 1;
        } else if (R->sd->strict) {
            break;
        }
    }
    /* pre-empt first (their devices go to the jobs starting), then start in order */
    for (size_t k = 0; k < m; k++)
        if (v[k].running && !sel[k]) {
            jstate *j = &R->st[who[k]];
            stop_run(R, j, 0);
            j->state = JS_WAITING;
            j->out.preemptions++;
        }
    for (size_t o = 0; o < m && !R->failed; o++) {
        size_t k = order[o];
        if (sel[k] && !v[k].running)
            take(R, &R->st[who[k]], count[k]);
    }
done:
    dp_free(v);
    dp_free(order);
    dp_free(who);
    dp_free(sel);
    dp_free(taken);
    dp_free(count);
}

static void on_decide(sim_engine *e, void *ctx, uint64_t id)
{
    (void)e;
    (void)id;
    jrun *R = ctx;
    R->decide_pending = 0;
    decide(R);
}

static void on_interval(sim_engine *e, void *ctx, uint64_t id)
{
    (void)id;
    jrun *R = ctx;
    if (R->done == R->js->n)
        return;
    decide(R);
    if (!sim_at(e, sim_now(e) + R->js->opts.interval_s, on_interval, R))
        fail(R, DP_ENOMEM, "%s%s", "out of memory", "");
}

static void on_arrival(sim_engine *e, void *ctx, uint64_t id)
{
    (void)e;
    (void)id;
    jstate *j = ctx;
    j->state = JS_WAITING;
    request_decide(j->R);
}

static void finish(jrun *R, jstate *j)
{
    stop_run(R, j, 1); /* its end: account() */
    if (!to_progress(R->js, &R->js->jobs[j->i]))
        j->epochs_done = R->js->jobs[j->i].scn->training.epochs;
    j->state = JS_DONE;
    R->done++;
    request_decide(R);
}

/* ---- the run ---- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The q-quantile by nearest rank (ceil(q n)-th smallest). */
static double rank_q(const double *sorted, size_t n, double q)
{
    size_t k = (size_t)ceil(q * (double)n);
    return sorted[k ? k - 1 : 0];
}

static void summarise(jrun *R, jobs_result *res)
{
    size_t n = R->js->n, N = R->js->world->n_devices;
    double *jct = dp_malloc((n + 1) * sizeof *jct);
    double sum = 0, held = 0, busy = 0, sx = 0, sxx = 0, srho = 0, mrho = 0;
    for (size_t i = 0; i < n; i++) {
        jstate *j = &R->st[i];
        job_out *o = &j->out;
        const job_spec *js = &R->js->jobs[i];
        snprintf(o->name, sizeof o->name, "%s", js->name);
        snprintf(o->policy, sizeof o->policy, "%s", policy_name(js->policy));
        o->devices = js->want;
        o->epochs = to_progress(R->js, js) ? j->epochs_done
                                           : js->scn->training.epochs; /* to a progress: those it took */
        o->arrival_s = js->arrival_s;
        o->jct_s = o->end_s - o->arrival_s;
        o->queue_s = o->start_s - o->arrival_s;
        o->device_s = j->attained;
        o->wait_s = o->jct_s - j->attained / js->want;
        o->alone_s = j->alone_s;
        o->rho = o->jct_s / j->alone_s;
        for (size_t k = 0; k < j->n_tta && res->tta; k++)
            res->tta[res->n_tta++] = (job_tta){i, j->tta_target[k], j->tta_abs[k] - o->arrival_s};
        if (jct)
            jct[i] = o->jct_s;
        sum += o->jct_s;
        held += j->attained;
        busy += o->compute_s;
        double x = j->alone_s / o->jct_s;
        sx += x;
        sxx += x * x;
        srho += o->rho;
        mrho = fmax(mrho, o->rho);
        res->makespan_s = fmax(res->makespan_s, o->end_s);
        res->jobs[i] = *o;
    }
    res->mean_jct_s = sum / (double)n;
    res->mean_rho = srho / (double)n;
    res->max_rho = mrho;
    res->jain = sxx > 0 ? sx * sx / ((double)n * sxx) : 1;
    double area = (double)N * res->makespan_s;
    res->util_alloc = area > 0 ? held / area : 0;
    res->util_busy = area > 0 ? busy / area : 0;
    if (jct) {
        qsort(jct, n, sizeof *jct, cmp_double);
        res->p50_jct_s = rank_q(jct, n, 0.5);
        res->p95_jct_s = rank_q(jct, n, 0.95);
        res->p99_jct_s = rank_q(jct, n, 0.99);
        res->max_jct_s = jct[n - 1];
    }
    dp_free(jct);
}

static void run_free(jrun *R)
{
    for (size_t i = 0; R->st && i < R->js->n; i++) {
        jstate *j = &R->st[i];
        pjob_free(j->job);
        jobs_sub_free(j->sub);
        dp_free(j->dev);
        dp_free(j->snap);
        dp_free(j->alone_k);
        dp_free(j->batch_k);
        dp_free(j->tta_target);
        dp_free(j->tta_abs);
        pjob_learn_free(&j->learn);
    }
    for (size_t k = 0; k < R->n_graves; k++) {
        pjob_free(R->graves[k].job);
        jobs_sub_free(R->graves[k].sub);
    }
    dp_free(R->graves);
    dp_free(R->st);
    dp_free(R->owner);
    dp_free(R->allocs);
    dp_free(R->stats);
    dp_free(R->ac);
    eg_free(R->g); /* the runs' engines, after the runs that reference them */
    world_free(R->w);
}

jobs_result *jobs_run(const jobs_spec *js, const sched_def *sd, uint64_t seed, dp_err *err)
{
    jrun R = {.js = js, .sd = sd ? sd : js->sched, .seed = seed, .err = err};
    size_t n = js->n, N = js->world->n_devices;
    jobs_result *res = NULL;
    if (R.sd->pinned && !js->jobs[0].pinned) {
        dp_err_set(err, DP_EINPUT, "%s: scheduler static needs every job's groups: (its partition)",
                   js->world->path);
        return NULL;
    }
    if (!R.sd->pinned && js->jobs[0].pinned) {
        dp_err_set(err, DP_EINPUT, "%s: scheduler %s gives devices by count; these jobs name groups (static)",
                   js->world->path, R.sd->name);
        return NULL;
    }
    if (!(R.w = world_new(js->world, seed, err)))
        return NULL;
    R.e = world_engine(R.w);
    R.n = world_net(R.w);
    if (!(R.g = eg_new(R.e, err)))
        goto out;
    if (net_set_group(R.n, R.g)) {
        dp_err_set(err, DP_ENOMEM, "out of memory");
        goto out;
    }
    if (scn_has_failures(js->world))
        world_on_device(R.w, on_device, &R);
    R.st = dp_calloc(n + 1, sizeof *R.st);
    R.owner = dp_malloc((N + 1) * sizeof *R.owner);
    if (!R.st || !R.owner) {
        dp_err_set(err, DP_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t d = 0; d < N; d++)
        R.owner[d] = -1;
    for (size_t i = 0; i < n; i++) {
        jstate *j = &R.st[i];
        j->R = &R;
        j->i = i;
        j->out.final_acc = NAN;
        j->learn.next_t = NAN;
        jobs_range(js, i, R.sd, &j->lo, &j->hi);
        int cap = j->hi > js->jobs[i].want ? j->hi : js->jobs[i].want;
        j->dev = dp_calloc((size_t)cap + 1, sizeof *j->dev);
        j->snap = dp_calloc((size_t)cap + 1, sizeof *j->snap);
        if (!j->dev || !j->snap) {
            dp_err_set(err, DP_ENOMEM, "out of memory");
            goto out;
        }
        /* every job's time alone: the schedulers' estimate and its rho
         * (with efficiency, for the epochs its goal takes on its devices:
         * a run of its own only when they are not its epochs) */
        const job_spec *jp = &js->jobs[i];
        double M = global_batch(jp->scn, jp->pinned, (size_t)jp->want);
        if (!isfinite(j->alone_s =
                          to_progress(js, jp) && epochs_to_goal(jp, 0, 0, M) != jp->scn->training.epochs
                              ? jobs_alone_s(js, i, R.seed, err)
                              : alone_on(&R, i, jp->want, err)))
            goto out;
        if (R.sd->allocate && elastic_estimates(&R, j, err))
            goto out;
        if (!sim_at(R.e, js->jobs[i].arrival_s, on_arrival, j)) {
            dp_err_set(err, DP_ENOMEM, "out of memory");
            goto out;
        }
    }
    if (js->opts.interval_s > 0 && !sim_at(R.e, js->opts.interval_s, on_interval, &R)) {
        dp_err_set(err, DP_ENOMEM, "out of memory");
        goto out;
    }
    /* The engines run until one asks to stop (a job ended or failed:
     * jobrt.h) or the root acted; then every running job is asked. */
    while (!R.failed && R.done < n) {
        size_t who = 0;
        int stopped = 0, ran = eg_step(R.g, &who, &stopped);
        if (ran && who > 0 && !stopped)
            continue;         /* a job's event that asked nothing */
        if (ran && who > 0) { /* it ended, failed or reached an epoch boundary: that in its domain */
            jstate *j = eg_ctx(R.g, who);
            if (j->job && j->dom == who && pjob_boundary_due(j->job)) {
                size_t prev = eg_enter(R.g, who);
                pjob_boundary(j->job); /* out of memory: the run failed, its status says so */
                eg_leave(R.g, prev);
            }
        }
        for (size_t i = 0; i < n && !R.failed; i++) {
            jstate *j = &R.st[i];
            int st = j->job ? pjob_status(j->job) : 0;
            if (st < 0) {
                R.failed = 1;
                dp_err_set(err, -st, "job %s: %s", js->jobs[j->i].name, pjob_error(j->job)->msg);
            } else if (st == 1) {
                finish(&R, j);
            }
        }
        if (!R.failed && eg_error(R.g))
            fail(&R, DP_ERUN, "%s%s", "an event could not be scheduled", "");
        if (!R.failed && R.done < n && !ran && eg_pending(R.g) == 0)
            for (size_t i = 0; i < n; i++)
                if (R.st[i].state != JS_DONE) {
                    fail(&R, DP_ERUN, "job %s stalled: %s", js->jobs[i].name,
                         "nothing left to happen in the world (a link at zero capacity for good?)");
                    break;
                }
    }
    if (R.failed)
        goto out;
    if (!(res = dp_calloc(1, sizeof *res)) || !(res->jobs = dp_calloc(n + 1, sizeof *res->jobs))) {
        dp_free(res);
        res = NULL;
        dp_err_set(err, DP_ENOMEM, "out of memory");
        goto out;
    }
    snprintf(res->scheduler, sizeof res->scheduler, "%s", R.sd->name);
    res->seed = seed;
    res->n_devices = N;
    res->n_jobs = n;
    res->events = eg_events(R.g);
    size_t n_tta = 0;
    for (size_t i = 0; i < n; i++)
        n_tta += R.st[i].n_tta;
    if (n_tta && !(res->tta = dp_calloc(n_tta, sizeof *res->tta))) {
        jobs_result_free(res);
        res = NULL;
        dp_err_set(err, DP_ENOMEM, "out of memory");
        goto out;
    }
    summarise(&R, res);
    res->allocs = R.allocs;
    res->n_allocs = R.n_allocs;
    R.allocs = NULL;
    res->stats = R.stats;
    res->n_stats = R.n_stats;
    R.stats = NULL;
out:
    run_free(&R);
    return res;
}
