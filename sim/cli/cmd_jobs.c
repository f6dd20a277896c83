/* cmd_jobs.c: dpsim jobs SCENARIO: many jobs in one world under one or
 * more cluster schedulers (sim/jobs/). */
#include "cli/cli.h"
#include "dpsim_config.h"
#include "jobs/jobs.h"
#include "jobs/jobs_report.h"
#include "store/store_jobs.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static void help(void)
{
    printf("usage: dpsim jobs SCENARIO [options]\n\n"
           "Run the scenario's jobs (its `jobs:` list or job trace) in one shared world:\n"
           "one network, each job's policy on the devices its cluster scheduler gives\n"
           "it in a clock of its own (a job that shares nothing gives its single-job\n"
           "results), every job's flows sharing links by max-min fairness.\n"
           "Prints per job its arrival, start, end, JCT, queueing delay, its time alone\n"
           "(the simulator's estimate), rho = JCT / alone, pre-emptions and bytes (with\n"
           "`learning:` its final accuracy and time to each target from its arrival), and\n"
           "per scheduler the makespan, mean and tail JCT, utilisation and Jain's index.\n"
           "Each scheduler's run is stored as one transaction (tables jobs_runs, jobs,\n"
           "job_allocs, job_tta, job_stats: sim/store/SCHEMA.md); `dpsim plot jobs`\n"
           "draws them.\n\n"
           "  -S, --scheduler LIST  schedulers to run, comma-separated, or all (default:\n"
           "                        the scenario's `scheduler:`, else fifo)\n"
           "  -d, --db FILE         results database (default results.db)\n"
           "      --no-db           do not store the results\n"
           "      --seed N          random seed (default: the scenario's training.seed)\n"
           "  -s, --set KEY=VALUE   override a scenario value (the world's; a job's own\n"
           "                        settings are its `set:`)\n"
           "      --json            print JSON instead of tables (sim/store/JSON.md, \"jobs\")\n"
           "  -q, --quiet           no progress\n"
           "      --all             list every job (past 50 jobs the table shows 20)\n"
           "      --log CAT[:LEVEL] diagnostic lines on stderr (as for dpsim run)\n"
           "  -h, --help            this help\n\n"
           "Exit codes: 0 ok, 1 a run failed (a job stalled, database error), 2 bad input.\n\n"
           "Schedulers (scenario `scheduler: NAME` or a mapping with name, interval,\n"
           "restart, threshold, policy, arrival_scale; scenarios/README.md, \"Jobs\"):\n");
    sched_print_help(stdout);
    printf("\nA job's `weight` scales what each scheduler compares (srf: remaining / weight,\n"
           "las: attained / weight, themis: rho x weight, pollux: its power mean; ties of\n"
           "arrival go to the higher weight).  Under pollux a job runs on min_devices..\n"
           "max_devices (default 1..4 x devices), its goodput its estimated throughput x\n"
           "its `efficiency` (reference_batch, noise_scale or noise_trace; default 1).\n");
}

typedef struct jobs_args {
    const char *slist;
    int all, have_seed;
    uint64_t seed;
} jobs_args;

enum { K_SEED = 0x2000, K_ALL };

static int on_opt(void *ctx, int key, const char *arg, const char *label)
{
    jobs_args *a = ctx;
    if (key == 'S') {
        a->slist = arg;
    } else if (key == K_SEED) {
        if (cli_parse_u64(arg, &a->seed))
            return cli_usage_error("jobs", "--seed needs a non-negative integer (got '%s')", arg);
        a->have_seed = 1;
    } else if (key == K_ALL) {
        a->all = 1;
    } else {
        return cli_usage_error("jobs", "unknown option '%s'", label);
    }
    return -1;
}

/* "fifo,las" or "all" into out; -1 after a usage message. */
static int parse_scheds(const char *list, const jobs_spec *js, const sched_def **out, size_t cap)
{
    if (!list) {
        out[0] = js->sched;
        return 1;
    }
    if (!strcmp(list, "all")) {
        size_t n = 0;
        for (size_t i = 0; i < sched_count() && n < cap; i++)
            if (sched_at(i)->pinned == js->sched->pinned) /* static needs pinned jobs, the others counts */
                out[n++] = sched_at(i);
        return (int)n;
    }
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    size_t n = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (n == cap || !(out[n] = sched_find(t))) {
            char have[200];
            sched_names(have, sizeof have, ", ");
            cli_usage_error("jobs", "--scheduler: unknown scheduler '%s' (have: %s)", t, have);
            return -1;
        }
        n++;
    }
    return (int)n;
}

int cmd_jobs(int argc, char **argv)
{
    static const struct option own[] = {{"scheduler", required_argument, NULL, 'S'},
                                        {"seed", required_argument, NULL, K_SEED},
                                        {"all", no_argument, NULL, K_ALL},
                                        {NULL, 0, NULL, 0}};
    jobs_args a = {0};
    cli_opts o = {0};
    int rc = cli_parse(argc, argv, "jobs",
                       CLI_O_DB | CLI_O_NODB | CLI_O_JSON | CLI_O_QUIET | CLI_O_SET | CLI_O_LOG, own,
                       "S:", on_opt, &a, help, &o);
    if (rc >= 0)
        goto out;
    rc = EXIT_OK;
    if (o.n_pos != 1) {
        rc = cli_usage_error("jobs", o.n_pos ? "one scenario at a time" : "missing SCENARIO");
        goto out;
    }
    dp_err err = {0};
    scn_scenario *s = cli_load_scenario(o.pos[0], o.ov, o.n_ov, &err);
    jobs_spec *js = s ? jobs_load_ov(s, o.ov, o.n_ov, &err) : NULL; /* --set reaches every job */
    const sched_def *sk[16];
    int ns = js ? parse_scheds(a.slist, js, sk, 16) : 0;
    if (!js || ns < 0) {
        rc = js ? EXIT_USAGE : cli_fail(&err);
        jobs_free(js);
        scn_free(s);
        goto out;
    }
    uint64_t seed = a.have_seed ? a.seed : s->training.seed;
    store *st = NULL;
    if (o.db && !(st = store_open(o.db, 0, &err))) {
        rc = cli_fail(&err);
        ns = 0;
    }
    store_set_invocation(st, cli_invocation_id());
    json_buf *j = o.json ? json_new() : NULL;
    if (j) {
        jobs_json_doc_begin(j, s->name);
    }
    for (int k = 0; k < ns && rc == EXIT_OK; k++) {
        jobs_result *r = jobs_run(js, sk[k], seed, &err);
        int64_t id = 0;
        if (r && st && store_put_jobs(st, s, r, &id, &err)) {
            jobs_result_free(r);
            r = NULL;
        }
        if (!r) {
            rc = cli_fail(&err);
            break;
        }
        if (j)
            jobs_json(r, j);
        else {
            if (k)
                printf("\n");
            jobs_print(r, a.all, stdout);
            if (id)
                printf("stored as jobs run j%lld (dpsim show j%lld)\n", (long long)id, (long long)id);
        }
        jobs_result_free(r);
    }
    if (j) {
        json_arr_end(j);
        json_obj_end(j);
        if (rc == EXIT_OK)
            printf("%s\n", json_text(j));
        json_free(j);
    }
    store_close(st);
    jobs_free(js);
    scn_free(s);
out:
    cli_opts_free(&o);
    return rc;
}
