/* run.c: sweep_run (sweep.h): a sweep's plan and summary: which runs of the shard
 * are still to do, registering the sweep, and the table per policy at the
 * end.  The grid is grid.c's, the workers pool.c's.
 *
 * Process model.  The parent expands the grid, registers the sweep, looks
 * up which runs are stored already, then forks `jobs` workers and closes
 * its own database connection (a connection must not cross fork()).  The
 * runs still to do are an array every worker inherits; workers claim the
 * next index from a counter in a shared anonymous mapping, so a slow run
 * never holds up a queue behind it.  Each worker opens its own connection
 * and commits every run (ok or failed) as one transaction the moment it
 * ends, then tells the parent over a pipe.  The parent only counts, draws
 * progress and, at the end, reads the stored runs back for the summary.  So
 * an interrupt, or SIGKILL of everything, loses at most the runs in flight,
 * and SQLite's transactions keep the file consistent.
 *
 * Invariant: tasks are ordered point-major (policies, then seeds, inside a
 * point), so a worker usually reuses the scenario it loaded for the last run.
 */
#include "sweep/sweep_impl.h"
#include "table.h"

#include "dpsim_config.h"
#include "json.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- running ------------------------------------------------------------ */

static void plan_free(plan *p)
{
    scn_free(p->base);
    dp_free(p->spec_json);
    dp_free(p->lpoints);
    dp_free(p->tasks);
    dp_free(p->pending);
}

static int plan_build(plan *p, dp_err *err)
{
    const sweep_cfg *c = p->cfg;
    const sweep_grid *g = c->grid;
    size_t np = sweep_grid_n_points(g);
    p->lpoints = dp_malloc((np / c->shard_n + 1) * sizeof *p->lpoints);
    if (!p->lpoints)
        return dp_err_set(err, DP_ENOMEM, "out of memory planning %zu sweep points", np);
    for (size_t pt = (size_t)(c->shard_k - 1); pt < np; pt += c->shard_n) {
        p->n_shard_points++;
        if (sweep_point_devices(g, p->base, pt) == 0) {
            if (p->n_nodev < 3)
                p->nodev_first[p->n_nodev] = pt;
            p->n_nodev++;
            continue;
        }
        p->lpoints[p->n_lpoints++] = pt;
    }
    double runs = (double)p->n_lpoints * (double)p->n_pk * (double)p->seeds;
    if (runs > SWEEP_MAX_RUNS)
        return dp_err_set(
            err, DP_EINPUT,
            "the sweep has %.0f runs (%zu points x %zu policies x %u seeds), more than the limit %d", runs,
            p->n_lpoints, p->n_pk, p->seeds, SWEEP_MAX_RUNS);
    p->n_tasks = (size_t)runs;
    p->tasks = dp_calloc(p->n_tasks ? p->n_tasks : 1, sizeof *p->tasks);
    p->pending = dp_calloc(p->n_tasks ? p->n_tasks : 1, sizeof *p->pending);
    if (!p->tasks || !p->pending)
        return dp_err_set(err, DP_ENOMEM, "out of memory planning %zu sweep runs", p->n_tasks);
    size_t t = 0;
    for (size_t lp = 0; lp < p->n_lpoints; lp++)
        for (size_t pi = 0; pi < p->n_pk; pi++)
            for (unsigned sd = 1; sd <= p->seeds; sd++)
                p->tasks[t++] = (task){p->lpoints[lp], lp, sd, (uint8_t)pi, 0};
    return 0;
}

static int read_outcomes(plan *p, store *st, outcome *o, dp_err *err)
{
    /* One snapshot for all lookups, and one lock instead of one per query. */
    int e = store_read_begin(st, err);
    if (e)
        return e;
    char *pj = NULL;
    size_t pj_point = SIZE_MAX;
    for (size_t i = 0; i < p->n_tasks && !e; i++) {
        task *t = &p->tasks[i];
        if (t->point != pj_point) {
            dp_free(pj);
            pj = sweep_point_json(p->cfg->grid, t->point);
            pj_point = t->point;
            if (!pj) {
                e = dp_err_set(err, DP_ENOMEM, "out of memory reading the sweep's runs");
                break;
            }
        }
        int done = 0;
        double ttotal = NAN;
        char msg[sizeof o->ex_msg[0]];
        e = store_point_outcome(st, p->sweep_id, pj, policy_name(p->pk[t->pi]), t->seed, DPSIM_VERSION, &done,
                                &ttotal, msg, sizeof msg, err);
        if (e)
            break;
        t->state = (int8_t)done;
        if (o && o->ttotal)
            o->ttotal[i] = ttotal;
        if (o && done == 2 && o->n_ex < 3) {
            o->ex_task[o->n_ex] = i;
            memcpy(o->ex_msg[o->n_ex], msg, sizeof msg);
            o->n_ex++;
        }
    }
    store_read_end(st);
    dp_free(pj);
    return e;
}

/* ---- summary ------------------------------------------------------------- */

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static void print_label(FILE *out, const sweep_grid *g, size_t point)
{
    char *l = sweep_point_label(g, point);
    fputs(l ? l : "?", out);
    dp_free(l);
}

/* Mean Ttotal of policy pi over the ok seeds of local point lp; NaN if none. */
static double point_mean(const plan *p, const outcome *o, size_t lp, size_t pi)
{
    double sum = 0;
    size_t n = 0;
    for (unsigned sd = 0; sd < p->seeds; sd++) {
        double v = o->ttotal[(lp * p->n_pk + pi) * p->seeds + sd];
        if (!isnan(v))
            sum += v, n++;
    }
    return n ? sum / (double)n : NAN;
}

/* Per policy over the shard: runs ok / failed / missing, min / median / max
 * Ttotal over ok runs, at how many points it is the fastest policy (mean
 * Ttotal over seeds; ties count for each tied policy), and the point of its
 * lowest Ttotal. */
static int print_summary(const plan *p, const outcome *o, const sweep_stats *st, FILE *out, dp_err *err)
{
    const sweep_cfg *c = p->cfg;
    const sweep_grid *g = c->grid;
    double *vals = dp_malloc((p->n_lpoints * p->seeds + 1) * sizeof *vals);
    size_t *wins = dp_calloc(p->n_pk, sizeof *wins);
    if (!vals || !wins) {
        dp_free(vals);
        dp_free(wins);
        return dp_err_set(err, DP_ENOMEM, "out of memory summarising the sweep");
    }
    size_t compared = 0;
    for (size_t lp = 0; lp < p->n_lpoints; lp++) {
        double best = INFINITY;
        for (size_t pi = 0; pi < p->n_pk; pi++) {
            double m = point_mean(p, o, lp, pi);
            if (m < best)
                best = m;
        }
        if (isinf(best))
            continue;
        compared++;
        for (size_t pi = 0; pi < p->n_pk; pi++)
            if (point_mean(p, o, lp, pi) <= best * (1 + 1e-12))
                wins[pi]++;
    }

    fprintf(out, "\nsweep %" PRId64 " in %s: %zu point%s", p->sweep_id, c->db_path, p->n_shard_points,
            p->n_shard_points == 1 ? "" : "s");
    if (c->shard_n > 1)
        fprintf(out, " (shard %u/%u of %zu)", c->shard_k, c->shard_n, sweep_grid_n_points(g));
    fprintf(out, " x %zu polic%s x %u seed%s", p->n_pk, p->n_pk == 1 ? "y" : "ies", p->seeds,
            p->seeds == 1 ? "" : "s");
    if (p->n_nodev)
        fprintf(out, ", %zu point%s without devices", p->n_nodev, p->n_nodev == 1 ? "" : "s");
    fprintf(out, " = %zu runs\n\n", p->n_tasks);
    /* one table printer (table.h): the minimum widths are the layout the
     * summary always had, wider only for longer names */
    static const dp_col cols[] = {
        {"policy", 'l', 10, 0},          {"ok", 'r', 6, 1},
        {"failed", 'r', 6, 1},           {"missing", 'r', 7, 1},
        {"Ttotal min (s)", 'r', 14, 1},  {"median (s)", 'r', 14, 1},
        {"max (s)", 'r', 14, 1},         {"fastest", 'r', 9, 1},
        {"lowest Ttotal at", 'l', 0, 2},
    };
    dp_table *tb = dp_table_new(cols, sizeof cols / sizeof *cols, NULL);
    for (size_t pi = 0; pi < p->n_pk; pi++) {
        size_t ok = 0, failed = 0, missing = 0, best_t = SIZE_MAX;
        for (size_t lp = 0; lp < p->n_lpoints; lp++)
            for (unsigned sd = 0; sd < p->seeds; sd++) {
                size_t ti = (lp * p->n_pk + pi) * p->seeds + sd;
                const task *t = &p->tasks[ti];
                if (t->state == 1 && !isnan(o->ttotal[ti])) {
                    vals[ok++] = o->ttotal[ti];
                    if (best_t == SIZE_MAX || o->ttotal[ti] < o->ttotal[best_t])
                        best_t = ti;
                } else if (t->state == 2)
                    failed++;
                else if (t->state == 0)
                    missing++;
            }
        dp_table_add(tb, policy_name(p->pk[pi]));
        dp_table_addf(tb, "%zu", ok);
        dp_table_addf(tb, "%zu", failed);
        dp_table_addf(tb, "%zu", missing);
        if (ok) {
            qsort(vals, ok, sizeof *vals, cmp_double);
            double med = ok % 2 ? vals[ok / 2] : 0.5 * (vals[ok / 2 - 1] + vals[ok / 2]);
            dp_table_addf(tb, "%.2f", vals[0]);
            dp_table_addf(tb, "%.2f", med);
            dp_table_addf(tb, "%.2f", vals[ok - 1]);
            dp_table_addf(tb, "%zu/%zu", wins[pi], compared);
            char *l = sweep_point_label(g, p->tasks[best_t].point);
            if (p->seeds > 1)
                dp_table_addf(tb, "%s (seed %u)", l ? l : "?", p->tasks[best_t].seed);
            else
                dp_table_add(tb, l ? l : "?");
            dp_free(l);
        } else {
            for (int k = 0; k < 3; k++)
                dp_table_add(tb, "-");
            dp_table_addf(tb, "%zu/%zu", wins[pi], compared);
            dp_table_add(tb, "-");
        }
    }
    int tprc = dp_table_print(tb, out);
    dp_table_free(tb);
    if (tprc) {
        dp_free(vals);
        dp_free(wins);
        return dp_err_set(err, DP_ENOMEM, "out of memory summarising the sweep");
    }
    dp_free(vals);
    dp_free(wins);

    fputc('\n', out);
    if (p->stochastic)
        fprintf(out, "seeds: 1..%u at every point (the scenario has compute noise)\n", p->seeds);
    else if (c->seeds > 1)
        fprintf(
            out,
            "seeds: the scenario has no randomness (no compute noise; traces are deterministic), so one seed "
            "suffices: ran seed 1 only (--seeds %u not needed)\n",
            c->seeds);
    else
        fprintf(out, "seeds: 1 (the scenario has no randomness)\n");
    if (p->n_nodev) {
        fprintf(out, "note: %zu point%s without any device skipped (nothing stored), e.g. ", p->n_nodev,
                p->n_nodev == 1 ? "" : "s");
        for (size_t i = 0; i < p->n_nodev && i < 3; i++) {
            fputs(i ? "; " : "", out);
            print_label(out, g, p->nodev_first[i]);
        }
        fputc('\n', out);
    }
    for (size_t i = 0; i < o->n_ex; i++) {
        const task *t = &p->tasks[o->ex_task[i]];
        fprintf(out, "failed: %s at ", policy_name(p->pk[t->pi]));
        print_label(out, g, t->point);
        fprintf(out, ": %s\n", o->ex_msg[i]);
    }
    fprintf(out,
            "this run: %zu runs done (%zu ok, %zu failed), %zu stored before, %zu left; %u worker%s, %.1f s",
            st->runs_ok + st->runs_failed, st->runs_ok, st->runs_failed, st->runs_before, st->runs_left,
            st->jobs, st->jobs == 1 ? "" : "s", st->elapsed_s);
    if (st->runs_ok + st->runs_failed && st->elapsed_s > 0)
        fprintf(out, ", %.1f runs/s", (double)(st->runs_ok + st->runs_failed) / st->elapsed_s);
    fprintf(out, "\n");
    return 0;
}

/* ---- sweep_run ----------------------------------------------------------- */

static int check_cfg(const sweep_cfg *c, dp_err *err)
{
    if (!c || !c->grid || !c->src.text || !c->db_path)
        return dp_err_set(err, DP_EINPUT, "sweep_run: missing grid, scenario or database");
    if (c->n_policies == 0 || c->n_policies > policy_count())
        return dp_err_set(err, DP_EINPUT, "sweep: want 1 to %zu policies (got %zu)", policy_count(),
                          c->n_policies);
    for (size_t i = 0; i < c->n_policies; i++) {
        if (policy_index(c->policies[i]) < 0)
            return dp_err_set(err, DP_EINPUT, "sweep: policy %zu is not registered", i);
        for (size_t j = 0; j < i; j++)
            if (c->policies[j] == c->policies[i])
                return dp_err_set(err, DP_EINPUT, "sweep: policy '%s' given twice",
                                  policy_name(c->policies[i]));
    }
    if (c->seeds < 1 || c->seeds > SWEEP_MAX_SEEDS)
        return dp_err_set(err, DP_EINPUT, "--seeds %u: want 1 to %d", c->seeds, SWEEP_MAX_SEEDS);
    if (c->jobs < 1 || c->jobs > 1024)
        return dp_err_set(err, DP_EINPUT, "--jobs %u: want 1 to 1024", c->jobs);
    if (c->shard_n < 1 || c->shard_k < 1 || c->shard_k > c->shard_n)
        return dp_err_set(err, DP_EINPUT, "--shard %u/%u: want K/N with 1 <= K <= N", c->shard_k, c->shard_n);
    return 0;
}

/* The seed feeds compute noise, straggler episodes, availability
 * processes and Bernoulli chargers (compute.c, world.c, runtime_energy.c):
 * any of them in the scenario, or on an axis, makes seeds matter. */
static int is_stochastic(const scn_scenario *base, const sweep_grid *g)
{
    for (size_t i = 0; i < base->n_groups; i++)
        if (base->groups[i].noise_cv > 0 || base->groups[i].stragglers.every_s > 0 ||
            base->groups[i].avail.mtbf_s > 0 || base->groups[i].energy.charging == SCN_CHARGE_BERNOULLI)
            return 1;
    for (size_t a = 0; a < sweep_grid_n_axes(g); a++) {
        const char *dot = strrchr(sweep_grid_key(g, a), '.');
        const char *k = dot ? dot + 1 : sweep_grid_key(g, a);
        if (strcmp(k, "noise") == 0 || strcmp(k, "mtbf") == 0 || strcmp(k, "every") == 0)
            return 1;
    }
    return 0;
}

static int run_plan(const sweep_cfg *c, sweep_stats *stats, dp_err *err);

int sweep_run(const sweep_cfg *c, sweep_stats *stats, dp_err *err)
{
    sweep_stats dummy;
    if (!stats)
        stats = &dummy;
    memset(stats, 0, sizeof *stats);
    int e = check_cfg(c, err);
    if (e || !c->mpi)
        return e ? e : run_plan(c, stats, err);
#if DPSIM_HAVE_MPI
    int rank = 0, size = 1;
    if ((e = sweep_mpi_init(&rank, &size, err)))
        return e;
    /* Rank 0 plans, stores and summarises; the others serve runs. */
    e = rank == 0 ? run_plan(c, stats, err) : sweep_mpi_worker(c, err);
    sweep_mpi_end(e, err);
    return e;
#else
    return dp_err_set(
        err, DP_EINPUT,
        "--mpi: this dpsim was built without MPI (install Open MPI, e.g. Debian's libopenmpi-dev and "
        "openmpi-bin, then meson setup --reconfigure -Dmpi=enabled); use --jobs, or --shard with "
        "dpsim merge, instead");
#endif
}

/* The sweep as rank 0 (or a local sweep) runs it: plan, executor, summary. */
static int run_plan(const sweep_cfg *c, sweep_stats *stats, dp_err *err)
{
    int e = 0;
    double t0 = sweep_wall_s();
    plan p;
    memset(&p, 0, sizeof p);
    p.cfg = c;
    for (size_t k = 0; k < policy_count(); k++)
        for (size_t i = 0; i < c->n_policies; i++)
            if (c->policies[i] == policy_at(k))
                p.pk[p.n_pk++] = policy_at(k);
    if (!(p.base = sweep_load_src(&c->src, NULL, 0, err)))
        return err ? err->code : DP_EINPUT;
    if ((e = sweep_grid_check(c->grid, &c->src, p.base, err))) {
        plan_free(&p);
        return e;
    }
    p.stochastic = is_stochastic(p.base, c->grid);
    p.seeds = p.stochastic ? c->seeds : 1;
    if (!(p.spec_json = sweep_spec_json(c->grid, p.base->text_hash, p.pk, p.n_pk, p.seeds))) {
        plan_free(&p);
        return dp_err_set(err, DP_ENOMEM, "out of memory writing the sweep spec");
    }
    if ((e = plan_build(&p, err))) {
        plan_free(&p);
        return e;
    }
    stats->points = p.n_shard_points;
    stats->points_nodev = p.n_nodev;
    stats->runs = p.n_tasks;
    stats->seeds = p.seeds;
    stats->stochastic = p.stochastic;

    store *st = store_open(c->db_path, 0, err);
    if (!st) {
        plan_free(&p);
        return err ? err->code : DP_ERUN;
    }
    e = store_sweep_get_or_create(st, p.base, p.spec_json, &p.sweep_id, err);
    if (!e)
        e = read_outcomes(&p, st, NULL, err);
    /* No connection may cross fork(): workers open their own. */
    store_close(st);
    if (e) {
        plan_free(&p);
        return e;
    }
    stats->sweep_id = p.sweep_id;
    for (size_t i = 0; i < p.n_tasks; i++) {
        if (p.tasks[i].state == 0 || (p.tasks[i].state == 2 && c->retry_failed))
            p.pending[p.n_pending++] = i;
        else
            stats->runs_before++;
    }
    int run_e = 0;
    if (p.n_pending) {
#if DPSIM_HAVE_MPI
        if (c->mpi)
            run_e = sweep_mpi_master(&p, stats, err);
        else
#endif
            run_e = sweep_run_workers(&p, stats, err);
    }

    /* Read the outcome of every run of the shard back from the file: the
     * summary covers earlier invocations too, and shows only what is
     * really stored. */
    outcome o;
    memset(&o, 0, sizeof o);
    o.ttotal = dp_malloc((p.n_tasks ? p.n_tasks : 1) * sizeof *o.ttotal);
    dp_err serr = {0};
    int sum_e = o.ttotal ? 0 : dp_err_set(&serr, DP_ENOMEM, "out of memory summarising the sweep");
    if (!sum_e) {
        st = store_open(c->db_path, 1, &serr);
        sum_e = st ? read_outcomes(&p, st, &o, &serr) : serr.code;
        store_close(st);
    }
    if (!sum_e) {
        size_t stored = 0;
        for (size_t i = 0; i < p.n_tasks; i++)
            stored += p.tasks[i].state != 0;
        stats->runs_left = p.n_tasks - stored;
    } else {
        stats->runs_left = p.n_pending - (stats->runs_ok + stats->runs_failed);
    }
    stats->elapsed_s = sweep_wall_s() - t0;
    if (!sum_e && c->summary_out)
        sum_e = print_summary(&p, &o, stats, c->summary_out, &serr);
    dp_free(o.ttotal);
    plan_free(&p);
    if (run_e)
        return run_e;
    if (stats->interrupted)
        return dp_err_set(
            err, DP_ERUN,
            "sweep interrupted: %zu runs stored now, %zu left; run the same command again to resume",
            stats->runs_ok + stats->runs_failed, stats->runs_left);
    if (sum_e) {
        if (err)
            *err = serr;
        return sum_e;
    }
    return 0;
}
