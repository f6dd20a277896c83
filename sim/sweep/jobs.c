/* jobs.c: `dpsim sweep` over a scenario with jobs (sim/jobs/): a grid of
 * many-jobs runs, e.g. schedulers x arrival rates.
 *
 * An axis `scheduler` chooses the cluster scheduler a point runs (a name
 * of sched.h's registry, not an override: the scenario's `scheduler:`
 * mapping keeps its interval, restart, ...); every other axis is an
 * override of the world's scenario as in a policy sweep
 * (`scheduler.arrival_scale`, `scheduler.restart`, `devices.t4.count`,
 * ...).  Each point (and seed, with --seeds N > 1: seeds 1..N; else the
 * scenario's training.seed, as `dpsim jobs`) is one jobs run stored with
 * its sweep and point (jobs_runs.sweep_id, point_json), as its own
 * transaction.  Runs stored already (same sweep, point, scheduler, seed,
 * version) are skipped, so a sweep resumes; a point that fails is named on
 * stderr and left unstored (running the sweep again tries it again).
 * Workers (--jobs J) are forked and take the pending runs round-robin,
 * each with its own database connection; a run's figures depend only on
 * its point and seed, so the rows are the same whatever J.  No MPI,
 * Slurm script, --detail or --retry-failed here (cmd_sweep refuses them). */
#include "jobs/jobs.h"
#include "store/store.h"
#include "store/store_jobs.h"
#include "sweep_impl.h"

#include "dpsim_config.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct jtask {
    size_t point;
    uint64_t seed;
} jtask;

typedef struct jplan {
    const sweep_cfg *c;
    int sched_axis;       /* the `scheduler` axis, -1 when none */
    const sched_def *def; /* the scenario's scheduler */
    int64_t sweep_id;
    jtask *task;
    size_t n_task;
} jplan;

static int sched_axis(const sweep_grid *g)
{
    for (size_t a = 0; a < sweep_grid_n_axes(g); a++)
        if (strcmp(sweep_grid_key(g, a), "scheduler") == 0)
            return (int)a;
    return -1;
}

/* The point's scenario (its overrides: every axis but `scheduler`) and
 * scheduler.  NULL with err. */
/* Point p's world (ov[0..*n_ov): its overrides, which every job's
 * scenario gets too: jobs_load_ov) and scheduler. */
static scn_scenario *point_load(const jplan *P, size_t p, const sched_def **sd, scn_override *ov,
                                size_t *n_ov, dp_err *err)
{
    const sweep_grid *g = P->c->grid;
    size_t n = 0;
    *sd = P->def;
    for (size_t a = 0; a < sweep_grid_n_axes(g); a++) {
        const char *v = sweep_point_value(g, p, a);
        if ((int)a == P->sched_axis)
            *sd = sched_find(v);
        else
            ov[n++] = (scn_override){sweep_grid_key(g, a), v};
    }
    *n_ov = n;
    return sweep_load_src(&P->c->src, ov, n, err);
}

/* Every axis value alone must make a scenario whose jobs load (an unknown
 * scheduler, key or bad value is bad usage, naming the --vary). */
static int check_axes(jplan *P, const scn_scenario *base, const jobs_spec *bj, dp_err *err)
{
    const sweep_grid *g = P->c->grid;
    for (size_t a = 0; a < sweep_grid_n_axes(g); a++)
        for (size_t i = 0; i < sweep_grid_n_values(g, a); i++) {
            const char *k = sweep_grid_key(g, a), *v = sweep_grid_value(g, a, i);
            char have[200];
            if ((int)a == P->sched_axis) {
                const sched_def *sd = sched_find(v);
                sched_names(have, sizeof have, ", ");
                if (!sd)
                    return dp_err_set(err, DP_EINPUT,
                                      "--vary %s=%s: value '%s': unknown scheduler (have: %s)", k,
                                      sweep_grid_spec(g, a), v, have);
                if (sd->pinned != (bj->jobs[0].pinned != NULL))
                    return dp_err_set(err, DP_EINPUT, "--vary %s=%s: value '%s': %s", k,
                                      sweep_grid_spec(g, a), v,
                                      sd->pinned ? "static needs every job's groups: (these jobs give counts)"
                                                 : "these jobs name groups: only static runs them");
                continue;
            }
            scn_override ov = {k, v};
            dp_err e = {0};
            scn_scenario *s = sweep_load_src(&P->c->src, &ov, 1, &e);
            jobs_spec *js = s ? jobs_load_ov(s, &ov, 1, &e) : NULL;
            jobs_free(js);
            scn_free(s);
            if (!js)
                return dp_err_set(err, DP_EINPUT, "--vary %s=%s: value '%s': %s", k, sweep_grid_spec(g, a), v,
                                  e.msg);
        }
    (void)base;
    return 0;
}

/* Run task t and store it (own transaction); 0, or 1 when it failed (said
 * on stderr), or an error of the database. */
static int run_task(const jplan *P, store *st, const jtask *t, dp_err *err)
{
    const sched_def *sd;
    dp_err e = {0};
    scn_override ov[SWEEP_MAX_AXES];
    size_t n_ov = 0;
    scn_scenario *s = point_load(P, t->point, &sd, ov, &n_ov, &e);
    jobs_spec *js = s ? jobs_load_ov(s, ov, n_ov, &e) : NULL;
    jobs_result *r = js ? jobs_run(js, sd, t->seed, &e) : NULL;
    char *json = sweep_point_json(P->c->grid, t->point);
    int rc = 0;
    if (!json) {
        rc = dp_err_set(err, DP_ENOMEM, "out of memory");
    } else if (!r) {
        char *label = sweep_point_label(P->c->grid, t->point);
        fprintf(stderr, "dpsim sweep: point %s, seed %llu: %s\n", label ? label : "?",
                (unsigned long long)t->seed, e.msg);
        dp_free(label);
        rc = 1;
    } else {
        rc = store_put_jobs_point(st, s, r, P->sweep_id, json, NULL, err);
    }
    dp_free(json);
    jobs_result_free(r);
    jobs_free(js);
    scn_free(s);
    return rc;
}

/* Worker w of n: tasks w, w + n, ...; its exit status: 0 all stored, 1
 * some failed, 2 the database failed, 3 stopped. */
static int worker(const jplan *P, unsigned w, unsigned n)
{
    dp_err err = {0};
    store *st = store_open(P->c->db_path, 0, &err);
    int status = 0;
    if (!st) {
        fprintf(stderr, "dpsim sweep: %s\n", err.msg);
        return 2;
    }
    for (size_t i = w; i < P->n_task; i += n) {
        if (P->c->stop && *P->c->stop) {
            status = 3;
            break;
        }
        int rc = run_task(P, st, &P->task[i], &err);
        if (rc > 1) {
            fprintf(stderr, "dpsim sweep: %s\n", err.msg);
            status = 2;
            break;
        }
        if (rc)
            status = 1;
    }
    store_close(st);
    return status;
}

static int run_workers(const jplan *P, unsigned jobs, int *worst, dp_err *err)
{
    *worst = 0;
    if (jobs <= 1) {
        *worst = worker(P, 0, 1);
        return 0;
    }
    pid_t pid[1024];
    unsigned started = 0;
    fflush(NULL);
    for (; started < jobs; started++) {
        if ((pid[started] = fork()) < 0)
            break;
        if (pid[started] == 0) {
            int st = worker(P, started, jobs);
            fflush(NULL);
            _exit(st);
        }
    }
    for (unsigned k = 0; k < started; k++) {
        int ws = 0;
        while (waitpid(pid[k], &ws, 0) < 0)
            ;
        int st = WIFEXITED(ws) ? WEXITSTATUS(ws) : 2;
        *worst = st > *worst ? st : *worst;
    }
    if (started < jobs)
        return dp_err_set(err, DP_ERUN, "sweep: could not start worker %u of %u", started + 1, jobs);
    return 0;
}

/* The sweep's jobs runs as stored: a row per point, scheduler and seed. */
static int summary(const jplan *P, store *st, FILE *out, size_t *n_rows, dp_err *err)
{
    store_jobs_point *rows = NULL;
    int64_t sid = 0;
    size_t n = 0;
    int e = store_jobs_sweep_get(st, P->sweep_id, &sid, &rows, &n, err);
    *n_rows = n;
    if (!e && out) {
        fprintf(out, "%-40s %-10s %6s %12s %12s %12s %7s\n", "point", "scheduler", "seed", "makespan_s",
                "jct_mean_s", "jct_p95_s", "jain");
        for (size_t i = 0; i < n; i++)
            fprintf(out, "%-40s %-10s %6llu %12.3f %12.3f %12.3f %7.4f\n", rows[i].point_json,
                    rows[i].scheduler, (unsigned long long)rows[i].seed, rows[i].makespan_s,
                    rows[i].jct_mean_s, rows[i].jct_p95_s, rows[i].jain);
    }
    dp_free(rows);
    return e;
}

int sweep_jobs_run(const sweep_cfg *c, sweep_stats *stats, dp_err *err)
{
    memset(stats, 0, sizeof *stats);
    jplan P = {.c = c, .sched_axis = sched_axis(c->grid)};
    scn_scenario *base = sweep_load_src(&c->src, NULL, 0, err);
    jobs_spec *bj = base ? jobs_load(base, err) : NULL;
    store *st = NULL;
    char *spec = NULL;
    int e = bj ? 0 : DP_EINPUT;
    if (!e) {
        P.def = bj->sched;
        e = check_axes(&P, base, bj, err);
    }
    unsigned seeds = c->seeds;
    size_t np = sweep_grid_n_points(c->grid);
    if (!e && !(spec = sweep_spec_json(c->grid, base->text_hash, NULL, 0, seeds)))
        e = dp_err_set(err, DP_ENOMEM, "out of memory writing the sweep spec");
    if (!e && !(P.task = dp_calloc(np * seeds + 1, sizeof *P.task)))
        e = dp_err_set(err, DP_ENOMEM, "out of memory");
    if (!e && (st = store_open(c->db_path, 0, err)) == NULL)
        e = err->code ? err->code : DP_ERUN;
    if (!e)
        e = store_sweep_get_or_create(st, base, spec, &P.sweep_id, err);
    for (size_t p = 0; !e && p < np; p++) {
        if (!sweep_in_shard(p, c->shard_k, c->shard_n))
            continue;
        stats->points++;
        const sched_def *sd = P.def;
        if (P.sched_axis >= 0)
            sd = sched_find(sweep_point_value(c->grid, p, (size_t)P.sched_axis));
        char *json = sweep_point_json(c->grid, p);
        for (unsigned k = 0; json && !e && k < seeds; k++) {
            uint64_t seed = seeds > 1 ? k + 1 : base->training.seed;
            int done = 0;
            stats->runs++;
            e = store_jobs_point_done(st, P.sweep_id, json, sd->name, seed, DPSIM_VERSION, &done, err);
            if (done)
                stats->runs_before++;
            else if (!e)
                P.task[P.n_task++] = (jtask){p, seed};
        }
        if (!json)
            e = dp_err_set(err, DP_ENOMEM, "out of memory");
        dp_free(json);
    }
    stats->sweep_id = P.sweep_id;
    stats->seeds = seeds;
    store_close(st); /* no connection crosses fork(): workers open their own */
    st = NULL;
    int worst = 0;
    unsigned jobs = c->jobs < P.n_task ? c->jobs : (unsigned)P.n_task;
    double t0 = sweep_wall_s();
    if (!e && P.n_task)
        e = run_workers(&P, jobs, &worst, err);
    stats->jobs = jobs;
    stats->elapsed_s = sweep_wall_s() - t0;
    size_t stored = 0;
    if (!e && !(st = store_open(c->db_path, 0, err)))
        e = err->code ? err->code : DP_ERUN;
    for (size_t i = 0; !e && i < P.n_task; i++) { /* what is really stored now */
        const jtask *t = &P.task[i];
        const sched_def *sd = P.sched_axis >= 0
                                  ? sched_find(sweep_point_value(c->grid, t->point, (size_t)P.sched_axis))
                                  : P.def;
        char *json = sweep_point_json(c->grid, t->point);
        int done = 0;
        e = json ? store_jobs_point_done(st, P.sweep_id, json, sd->name, t->seed, DPSIM_VERSION, &done, err)
                 : dp_err_set(err, DP_ENOMEM, "out of memory");
        stats->runs_ok += (size_t)done;
        dp_free(json);
    }
    if (!e)
        e = summary(&P, st, c->summary_out, &stored, err);
    store_close(st);
    if (!e) {
        stats->runs_left = stats->runs - stats->runs_before - stats->runs_ok;
        stats->interrupted = worst == 3;
        if (c->summary_out)
            fprintf(c->summary_out, "sweep #%lld: %zu jobs runs stored now, %zu before, %zu not stored%s\n",
                    (long long)P.sweep_id, stats->runs_ok, stats->runs_before, stats->runs_left,
                    stats->runs_left ? " (run the same command again to retry)" : "");
        if (worst == 2)
            e = dp_err_set(err, DP_ERUN, "sweep: a worker could not store its runs (see above)");
        else if (worst == 3)
            e = dp_err_set(err, DP_ERUN, "sweep: interrupted; run the same command again to resume");
    }
    dp_free(P.task);
    dp_free(spec);
    jobs_free(bj);
    scn_free(base);
    return e;
}
