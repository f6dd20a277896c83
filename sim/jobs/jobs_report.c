/* jobs_report.c: a many-jobs run as tables and as JSON (jobs.h; the JSON
 * shape is in sim/store/JSON.md, "jobs"). */
#include "jobs.h"
#include "jobs_report.h"

#include "dpsim_config.h"

#include <math.h>
#include <stdio.h>

void jobs_print(const jobs_result *r, int all, FILE *out)
{
    fprintf(out, "scheduler %s: %zu jobs on %zu devices, seed %llu\n", r->scheduler, r->n_jobs, r->n_devices,
            (unsigned long long)r->seed);
    fprintf(out, "%-16s %-10s %4s %10s %10s %10s %10s %10s %10s %7s %4s %12s\n", "job", "policy", "dev", "arrival_s",
            "start_s", "end_s", "jct_s", "queue_s", "alone_s", "rho", "pre", "bytes");
    size_t show = all || r->n_jobs <= 50 ? r->n_jobs : 20;
    for (size_t i = 0; i < show; i++) {
        const job_out *o = &r->jobs[i];
        fprintf(out, "%-16s %-10s %4d %10.3f %10.3f %10.3f %10.3f %10.3f %10.3f %7.3f %4d %12.4g\n", o->name,
                o->policy, o->devices, o->arrival_s, o->start_s, o->end_s, o->jct_s, o->queue_s, o->alone_s, o->rho,
                o->preemptions, o->bytes);
    }
    if (show < r->n_jobs)
        fprintf(out, "... %zu more jobs (--all lists every one)\n", r->n_jobs - show);
    fprintf(out,
            "makespan %.3f s; JCT mean %.3f s, median %.3f s, p95 %.3f s, p99 %.3f s, max %.3f s\n"
            "utilisation: devices held %.1f%%, computing %.1f%%; rho mean %.3f, max %.3f; Jain's index %.4f\n",
            r->makespan_s, r->mean_jct_s, r->p50_jct_s, r->p95_jct_s, r->p99_jct_s, r->max_jct_s, 100 * r->util_alloc,
            100 * r->util_busy, r->mean_rho, r->max_rho, r->jain);
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
