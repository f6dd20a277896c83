/* store_jobs.h: runs of many jobs in one world in the results database
 * (tables jobs_runs, jobs, job_allocs; SCHEMA.md version 8). */
#ifndef DP_STORE_JOBS_H
#define DP_STORE_JOBS_H

#include "jobs_results.h"
#include "scenario.h"
#include "store.h"

/* One scheduler's run as one transaction; *id its jobs_runs id. */
int store_put_jobs(store *st, const scn_scenario *s, const jobs_result *r, int64_t *id, dp_err *err);
/* The same for a point of sweep sweep_id (`dpsim sweep` over jobs):
 * point_json as runs.point_json ({"KEY":"VALUE",...}). */
int store_put_jobs_point(store *st, const scn_scenario *s, const jobs_result *r, int64_t sweep_id,
                         const char *point_json, int64_t *id, dp_err *err);
/* Whether sweep sweep_id has a jobs run of that point, scheduler, seed and
 * version stored (*done 1) or not (0): a sweep resumes without it. */
int store_jobs_point_done(store *st, int64_t sweep_id, const char *point_json, const char *scheduler,
                          uint64_t seed, const char *version, int *done, dp_err *err);
/* A jobs sweep's runs, in point order as stored (point_json, scheduler,
 * figures); sweep_id 0: the latest sweep that has jobs runs (*sweep_id_out
 * gets it, 0 when none). */
typedef struct store_jobs_point {
    char point_json[512], scheduler[32];
    uint64_t seed;
    double makespan_s, jct_mean_s, jct_p95_s, jain;
} store_jobs_point;
int store_jobs_sweep_get(store *st, int64_t sweep_id, int64_t *sweep_id_out, store_jobs_point **rows,
                         size_t *n, dp_err *err);
/* The jobs_runs ids a plot draws by default: the latest invocation's
 * (else every one), in id order.  Free *ids with dp_free. */
int store_jobs_select(store *st, int64_t **ids, size_t *n, dp_err *err);
/* A stored run back (scheduler, figures, jobs, allocations, learning,
 * statistics); DP_EINPUT when
 * there is no such run.  Free with jobs_result_free. */
int store_jobs_get(store *st, int64_t id, jobs_result **out, dp_err *err);

/* The jobs runs stored, oldest first (`dpsim runs`, `dpsim show jN`):
 * those of scenario `scenario` (NULL: any), the newest `last` (0: all),
 * or the one of id `id` (0: any). */
typedef struct store_jobs_row {
    int64_t id;
    char started_at[32], scenario[128], scheduler[32];
    uint64_t seed;
    int64_t n_jobs, devices;
    double makespan_s, jct_mean_s, jct_p95_s, jain;
} store_jobs_row;
int store_jobs_list(store *st, const char *scenario, int64_t last, int64_t id, store_jobs_row **rows,
                    size_t *n, dp_err *err);

#endif
