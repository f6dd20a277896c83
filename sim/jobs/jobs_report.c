/* jobs_report.c: a many-jobs run as tables and as JSON (jobs.h; the JSON
 * shape is in sim/store/JSON.md, "jobs"). */
#include "jobs.h"
#include "jobs_report.h"

#include "dpsim_config.h"

#include <math.h>
#include <stdio.h>

/* Learning (jobs with `learning:`): each job's accuracy reached and its
 * time to each target, from its arrival (r->tta is by job, then target). */
static void print_learning(const jobs_result *r, size_t show, FILE *out)
{
    int any = 0;
    for (size_t i = 0; i < show; i++)
        any |= !isnan(r->jobs[i].final_acc);
    if (!any)
        return;
    fprintf(out, "learning (times to accuracy from each job's arrival):\n%-16s %9s  %s\n", "job", "final acc",
            "target: t (s)");
    for (size_t i = 0, k = 0; i < show; i++) {
        const job_out *o = &r->jobs[i];
        while (k < r->n_tta && r->tta[k].job < i)
            k++;
        if (isnan(o->final_acc))
            continue;
        fprintf(out, "%-16s %8.2f%% ", o->name, 100 * o->final_acc);
        for (; k < r->n_tta && r->tta[k].job == i; k++) {
            if (isnan(r->tta[k].tta_s))
                fprintf(out, " %g: -", r->tta[k].target);
            else
                fprintf(out, " %g: %.3f", r->tta[k].target, r->tta[k].tta_s);
        }
        fputc('\n', out);
    }
}

/* The fewest and most devices job i held at once while it held any (from
 * its allocations: the count at each allocation's start; an elastic
 * scheduler may give a job other than it asked for).  0, 0 if it never ran. */
static void held_range(const jobs_result *r, size_t i, int *lo, int *hi)
{
    *lo = 0;
    *hi = 0;
    for (size_t a = 0; a < r->n_allocs; a++) {
        const job_alloc *x = &r->allocs[a];
        if (x->job != i)
            continue;
        int n = 0;
        for (size_t b = 0; b < r->n_allocs; b++) {
            const job_alloc *y = &r->allocs[b];
            n += y->job == i && y->t0 <= x->t0 && x->t0 < y->t1;
        }
        if (n == 0)
            continue;
        if (*hi == 0 || n < *lo)
            *lo = n;
        if (n > *hi)
            *hi = n;
    }
}

void jobs_print(const jobs_result *r, int all, FILE *out)
{
    fprintf(out, "scheduler %s: %zu jobs on %zu devices, seed %llu\n", r->scheduler, r->n_jobs, r->n_devices,
            (unsigned long long)r->seed);
    /* dev: devices asked for; held: how many it held at once (a range when
     * an elastic scheduler, pollux, changed its count) */
    fprintf(out, "%-16s %-10s %4s %7s %10s %10s %10s %10s %10s %10s %7s %4s %12s\n", "job", "policy", "dev",
            "held", "arrival_s", "start_s", "end_s", "jct_s", "queue_s", "alone_s", "rho", "pre", "bytes");
    size_t show = all || r->n_jobs <= 50 ? r->n_jobs : 20;
    for (size_t i = 0; i < show; i++) {
        const job_out *o = &r->jobs[i];
        int lo, hi;
        held_range(r, i, &lo, &hi);
        char held[24];
        if (lo == hi)
            snprintf(held, sizeof held, "%d", hi);
        else
            snprintf(held, sizeof held, "%d-%d", lo, hi);
        fprintf(out, "%-16s %-10s %4d %7s %10.3f %10.3f %10.3f %10.3f %10.3f %10.3f %7.3f %4d %12.4g\n",
                o->name, o->policy, o->devices, held, o->arrival_s, o->start_s, o->end_s, o->jct_s,
                o->queue_s, o->alone_s, o->rho, o->preemptions, o->bytes);
    }
    if (show < r->n_jobs)
        fprintf(out, "... %zu more jobs (--all lists every one)\n", r->n_jobs - show);
    print_learning(r, show, out);
    fprintf(
        out,
        "makespan %.3f s; JCT mean %.3f s, median %.3f s, p95 %.3f s, p99 %.3f s, max %.3f s\n"
        "utilisation: devices held %.1f%%, computing %.1f%%; rho mean %.3f, max %.3f; Jain's index %.4f\n",
        r->makespan_s, r->mean_jct_s, r->p50_jct_s, r->p95_jct_s, r->p99_jct_s, r->max_jct_s,
        100 * r->util_alloc, 100 * r->util_busy, r->mean_rho, r->max_rho, r->jain);
}

void jobs_json_doc_begin(json_buf *j, const char *scenario)
{
    json_obj_begin(j);
    json_key_str(j, "format", "dpsim-jobs");
    json_key_int(j, "format_version", 1);
    json_key_str(j, "dpsim_version", DPSIM_VERSION);
    json_key_str(j, "scenario", scenario);
    json_key(j, "runs");
    json_arr_begin(j);
}

/* Job i's policy figures (its runs' res_stat; only policies that record
 * some), as a single run's "stats" with the run they came from. */
static void json_jobs_stats(const jobs_result *r, size_t i, json_buf *j)
{
    size_t k = 0;
    while (k < r->n_stats && r->stats[k].job != i)
        k++;
    if (k == r->n_stats)
        return;
    json_key(j, "stats");
    json_arr_begin(j);
    for (; k < r->n_stats; k++) {
        const job_stat *x = &r->stats[k];
        if (x->job != i)
            continue;
        json_obj_begin(j);
        json_key_int(j, "run", x->run);
        json_key_str(j, "name", x->s.name);
        json_key_str(j, "scope", res_scope_name(x->s.scope));
        json_key_int(j, "a", x->s.a);
        json_key_int(j, "b", x->s.b);
        json_key_num(j, "value", x->s.value);
        json_obj_end(j);
    }
    json_arr_end(j);
}

void jobs_json(const jobs_result *r, json_buf *j)
{
    json_obj_begin(j);
    json_key_str(j, "scheduler", r->scheduler);
    json_key_int(j, "seed", (int64_t)r->seed);
    json_key_int(j, "devices", (int64_t)r->n_devices);
    json_key_num(j, "makespan_s", r->makespan_s);
    json_key_num(j, "jct_mean_s", r->mean_jct_s);
    json_key_num(j, "jct_p50_s", r->p50_jct_s);
    json_key_num(j, "jct_p95_s", r->p95_jct_s);
    json_key_num(j, "jct_p99_s", r->p99_jct_s);
    json_key_num(j, "jct_max_s", r->max_jct_s);
    json_key_num(j, "util_held", r->util_alloc);
    json_key_num(j, "util_compute", r->util_busy);
    json_key_num(j, "rho_mean", r->mean_rho);
    json_key_num(j, "rho_max", r->max_rho);
    json_key_num(j, "jain", r->jain);
    json_key_int(j, "events", (int64_t)r->events);
    json_key(j, "jobs");
    json_arr_begin(j);
    for (size_t i = 0; i < r->n_jobs; i++) {
        const job_out *o = &r->jobs[i];
        json_obj_begin(j);
        json_key_str(j, "name", o->name);
        json_key_str(j, "policy", o->policy);
        json_key_int(j, "devices", o->devices);
        json_key_int(j, "epochs", o->epochs);
        json_key_num(j, "arrival_s", o->arrival_s);
        json_key_num(j, "start_s", o->start_s);
        json_key_num(j, "end_s", o->end_s);
        json_key_num(j, "jct_s", o->jct_s);
        json_key_num(j, "queue_s", o->queue_s);
        json_key_num(j, "wait_s", o->wait_s);
        json_key_num(j, "alone_s", o->alone_s);
        json_key_num(j, "rho", o->rho);
        json_key_num(j, "device_s", o->device_s);
        json_key_num(j, "compute_s", o->compute_s);
        json_key_num(j, "bytes", o->bytes);
        json_key_num(j, "tsend_s", o->tsend_s);
        json_key_num(j, "tflops", o->tflops);
        json_key_int(j, "preemptions", o->preemptions);
        if (!isnan(o->final_acc)) { /* only jobs with learning: */
            json_key(j, "learning");
            json_obj_begin(j);
            json_key_num(j, "final_acc", o->final_acc);
            json_key(j, "time_to_accuracy");
            json_arr_begin(j);
            for (size_t k = 0; k < r->n_tta; k++)
                if (r->tta[k].job == i) {
                    json_obj_begin(j);
                    json_key_num(j, "target", r->tta[k].target);
                    json_key_num(j, "t_s", r->tta[k].tta_s); /* from its arrival; null: not reached */
                    json_obj_end(j);
                }
            json_arr_end(j);
            json_obj_end(j);
        }
        json_jobs_stats(r, i, j);
        json_obj_end(j);
    }
    json_arr_end(j);
    json_key(j, "allocations");
    json_arr_begin(j);
    for (size_t i = 0; i < r->n_allocs; i++) {
        const job_alloc *a = &r->allocs[i];
        json_arr_begin(j);
        json_int(j, (int64_t)a->job);
        json_int(j, (int64_t)a->device);
        json_num(j, a->t0);
        json_num(j, a->t1);
        json_arr_end(j);
    }
    json_arr_end(j);
    json_obj_end(j);
}
