/* cmd_sweep.c: dpsim sweep (a grid of scenario variations) and dpsim merge
 * (results databases, e.g. the shards of a sweep).  The work is in
 * sim/sweep/sweep.c; this file parses options, reads the scenario text
 * once and turns SIGINT/SIGTERM into a stop request. */
#include "cli/cli.h"
#include "run/runner.h"
#include "sweep/sweep.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <getopt.h>
#include <string.h>
#include <unistd.h>

static void sweep_help(void)
{
    printf("usage: dpsim sweep SCENARIO --vary KEY=SPEC [--vary ...] [options]\n\n"
           "Run policies over a grid of scenario variations in parallel worker\n"
           "processes; every run is stored in the results database the moment it\n"
           "ends, so an interrupted sweep resumes where it stopped when the same\n"
           "command runs again.  SCENARIO may be a file or builtin:paper-testbed.\n\n"
           "  -V, --vary KEY=SPEC   vary a scenario value (several: the cartesian product)\n"
           "                          KEY   an override path: devices.rtx3090.link.down,\n"
           "                                devices.cpu4.count, training.epochs,\n"
           "                                wan.hz-remote.bandwidth, policies.ddp.bucket\n"
           "                          SPEC  a list         10Mbps,100Mbps,1Gbps\n"
           "                                a range        1..8  0..4:step=2  10ms..50ms:step=10ms\n"
           "                                               0.1..1:lin:10 (10 evenly spaced values)\n"
           "                                a log range    10Mbps..10Gbps:log:7\n"
           "  -p, --policy LIST     policies, comma-separated, or all (default: all that\n"
           "                        apply; --policy all says which were left out; the\n"
           "                        list: dpsim run --help)\n"
           "      --seeds N         seeds 1..N per point when the scenario has randomness\n"
           "                        (compute noise); without it seed 1 only (default 1)\n"
           "  -j, --jobs J          worker processes (default: the number of cores)\n"
           "  -d, --db FILE         results database (default results.db)\n"
           "      --shard K/N       run only the K-th of N disjoint slices of the grid\n"
           "                        (points p with p %% N == K-1), e.g. in a Slurm job array:\n"
           "                        --shard $((SLURM_ARRAY_TASK_ID+1))/$SLURM_ARRAY_TASK_COUNT;\n"
           "                        then: dpsim merge all.db shard-*.db\n"
           "      --shard slurm     the shard of this Slurm array task: SLURM_ARRAY_TASK_ID\n"
           "                        (from SLURM_ARRAY_TASK_MIN, step SLURM_ARRAY_TASK_STEP) of\n"
           "                        SLURM_ARRAY_TASK_COUNT; an error outside a job array\n"
           "      --print-sbatch    write a Slurm job-array script for this sweep to stdout\n"
           "                        (a shard per task on local disk, copied back, then a\n"
           "                        dependent merge job) and exit; edit it, run it with bash\n"
           "      --mpi             run under MPI: mpirun --enable-recovery -n P dpsim sweep ...\n"
           "                        --mpi; rank 0 hands out runs (costliest first) to every\n"
           "                        rank and alone writes the database (--jobs unused); only\n"
           "                        in builds with MPI (meson -Dmpi); a rank silent for\n"
           "                        DPSIM_MPI_TIMEOUT seconds (default 30) is taken for dead\n"
           "                        and its run in flight left for a resume\n"
           "      --retry-failed    run again the points stored as failed\n"
           "      --detail          also store every run's timeline and FLOPS-over-time rows\n"
           "                        (for 'dpsim plot timeline/flops --run ID'; slower)\n"
           "  -q, --quiet           no progress, no summary\n"
           "  -h, --help            this help\n\n"
           "A scenario with jobs (dpsim jobs) sweeps many-jobs runs: an axis `scheduler`\n"
           "(--vary scheduler=fifo,pollux) picks the cluster scheduler, the others\n"
           "override the world (--vary scheduler.arrival_scale=0.5..2:lin:4); each point\n"
           "is one jobs run, stored with its sweep and point (dpsim plot jobs-sweep); no\n"
           "--policy, --mpi, --detail or --retry-failed; a failed point is not stored.\n"
           "A point where every device group has count 0 is skipped with a note; a\n"
           "point that cannot run is stored as failed with its error.  Ctrl-C (or\n"
           "SIGTERM) stops cleanly: runs in flight finish, a second one abandons them.\n"
           "Exit codes: 0 every run stored (some may have failed: see the summary),\n"
           "1 interrupted or a database error, 2 bad usage (bad SPEC, unknown KEY).\n");
}

static void merge_help(void)
{
    printf("usage: dpsim merge OUT.db IN.db [IN.db ...]\n\n"
           "Copy the scenarios, sweeps and runs (with their device, epoch, FLOPS and\n"
           "timeline rows) of each IN database into OUT (created if absent), in one\n"
           "transaction.  Runs already in OUT are skipped: a sweep run when OUT has the\n"
           "same sweep spec, point, policy, seed and version (a failed one is replaced\n"
           "by an ok one); another run when OUT has one with the same scenario, policy,\n"
           "seed, version, start time and overrides.  Runs of many jobs (dpsim jobs) come\n"
           "with their jobs and allocations, skipped when OUT has one with the same\n"
           "scenario, scheduler, seed, version, start time and sweep point.  So\n"
           "merging the shards of a sweep gives the sweep, and merging twice changes\n"
           "nothing.\n\n"
           "Exit codes: 0 ok, 1 database error (OUT unchanged), 2 bad usage.\n");
}

static volatile sig_atomic_t stop_requests;

static void on_signal(int sig)
{
    (void)sig;
    if (stop_requests < 100)
        stop_requests++;
}

/* The scenario text, read once so every point runs the same text. */
static char *read_text(const char *path, size_t *len, dp_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        dp_err_set(err, DP_EINPUT, "%s: cannot read the scenario: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    const size_t limit = 64u << 20; /* the loader's limit; it reports a larger file */
    char *buf = dp_malloc(cap + 1);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap || n > limit)
            break;
        char *nb = dp_realloc(buf, 2 * cap + 1);
        if (!nb) {
            dp_free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf) {
        dp_err_set(err, DP_ENOMEM, "%s: out of memory reading the scenario", path);
        return NULL;
    }
    if (bad) {
        dp_free(buf);
        dp_err_set(err, DP_EINPUT, "%s: error reading the scenario", path);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

enum { K_SEEDS = 0x2000, K_SHARD, K_RETRY, K_DETAIL, K_MPI, K_SBATCH };

typedef struct sweep_args {
    sweep_cfg *cfg;
    sweep_grid *g;
    const char *plist, *shard;
    dp_err *err;
    int print_sbatch;
} sweep_args;

static int on_opt(void *ctx, int key, const char *arg, const char *label)
{
    sweep_args *a = ctx;
    uint64_t v;
    switch (key) {
    case 'V':
        if (sweep_grid_add(a->g, arg, a->err))
            return a->err->code == DP_EINPUT ? cli_usage_error("sweep", "%s", a->err->msg) : cli_fail(a->err);
        break;
    case 'p':
        a->plist = arg;
        break;
    case K_SEEDS:
        if (cli_parse_u64(arg, &v) || v < 1 || v > SWEEP_MAX_SEEDS)
            return cli_usage_error("sweep", "--seeds %s: want 1 to %d", arg, SWEEP_MAX_SEEDS);
        a->cfg->seeds = (unsigned)v;
        break;
    case 'j':
        if (cli_parse_u64(arg, &v) || v < 1 || v > 1024)
            return cli_usage_error("sweep", "--jobs %s: want 1 to 1024", arg);
        a->cfg->jobs = (unsigned)v;
        break;
    case K_SHARD:
        a->shard = arg;
        break;
    case K_RETRY:
        a->cfg->retry_failed = 1;
        break;
    case K_DETAIL:
        a->cfg->detail = 1;
        break;
    case K_MPI:
        a->cfg->mpi = 1;
        break;
    case K_SBATCH:
        a->print_sbatch = 1;
        break;
    default:
        return cli_usage_error("sweep", "unknown option '%s'", label);
    }
    return -1;
}

/* --print-sbatch: the script on stdout, written from the parsed options,
 * SCENARIO made absolute so that tasks find it (and its traces) from any
 * directory. */
static int print_sbatch_script(const char *file, const sweep_cfg *cfg, const char *plist, const cli_opts *o)
{
    char abs[4096];
    if (strncmp(file, "builtin:", 8) == 0)
        snprintf(abs, sizeof abs, "%s", file);
    else if (!realpath(file, abs))
        return cli_usage_error("sweep", "%s: %s", file, strerror(errno));
    size_t np = sweep_grid_n_points(cfg->grid);
    int all = !plist || !strcmp(plist, "all");
    sweep_sbatch_spec sp = {.scenario_abs = abs,
                            .grid = cfg->grid,
                            .policies = cfg->policies,
                            .n_policies = all ? 0 : cfg->n_policies,
                            .seeds = cfg->seeds,
                            .retry_failed = cfg->retry_failed,
                            .detail = cfg->detail,
                            .log = o->log_text,
                            .n_log = o->n_log,
                            .tasks = np < 16 ? (unsigned)np : 16u};
    dp_err err = {0};
    if (sweep_sbatch_write(stdout, &sp, &err))
        return cli_fail(&err);
    return EXIT_OK;
}

int cmd_sweep(int argc, char **argv)
{
    sweep_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.db_path = "results.db";
    cfg.seeds = 1;
    cfg.shard_k = cfg.shard_n = 1;
    cfg.progress = 1;
    cfg.summary_out = stdout;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    cfg.jobs = ncpu > 0 ? (unsigned)(ncpu > 1024 ? 1024 : ncpu) : 1;
    dp_err err = {0};
    sweep_grid *g = sweep_grid_new(&err);
    if (!g)
        return cli_fail(&err);
    static const struct option own[] = {
        {"vary", required_argument, NULL, 'V'},        {"policy", required_argument, NULL, 'p'},
        {"seeds", required_argument, NULL, K_SEEDS},   {"jobs", required_argument, NULL, 'j'},
        {"shard", required_argument, NULL, K_SHARD},   {"retry-failed", no_argument, NULL, K_RETRY},
        {"detail", no_argument, NULL, K_DETAIL},       {"mpi", no_argument, NULL, K_MPI},
        {"print-sbatch", no_argument, NULL, K_SBATCH}, {NULL, 0, NULL, 0}};
    sweep_args sa_ = {&cfg, g, NULL, NULL, &err, 0};
    cli_opts o = {0};
    int rc = cli_parse(argc, argv, "sweep", CLI_O_DB | CLI_O_QUIET | CLI_O_LOG, own, "V:p:j:", on_opt, &sa_,
                       sweep_help, &o);
    if (rc >= 0 || (rc = cli_one_pos(&o, "SCENARIO")) >= 0)
        goto out;
    rc = EXIT_OK;
    const char *file = o.pos[0], *plist = sa_.plist, *shard = sa_.shard;
    cfg.db_path = o.db;
    if (o.quiet) {
        cfg.progress = 0;
        cfg.summary_out = NULL;
    }
    if (shard && !strcmp(shard, "slurm")) {
        if (!sa_.print_sbatch &&
            sweep_shard_slurm(getenv("SLURM_ARRAY_TASK_ID"), getenv("SLURM_ARRAY_TASK_COUNT"),
                              getenv("SLURM_ARRAY_TASK_MIN"), getenv("SLURM_ARRAY_TASK_STEP"), &cfg.shard_k,
                              &cfg.shard_n, &err)) {
            rc = cli_usage_error("sweep", "%s", err.msg);
            goto out;
        }
    } else if (shard && sweep_shard_parse(shard, &cfg.shard_k, &cfg.shard_n, &err)) {
        rc = cli_usage_error("sweep", "%s", err.msg);
        goto out;
    }
    int np = runner_parse_policies(plist, cfg.policies, POLICY_MAX, &err);
    if (np < 0) {
        rc = cli_usage_error("sweep", "%s", err.msg);
        goto out;
    }
    cfg.n_policies = (size_t)np;
    cfg.grid = g;
    if (sa_.print_sbatch) {
        rc = print_sbatch_script(file, &cfg, plist, &o);
        goto out;
    }

    char *text = NULL;
    char dir[4096];
    if (strcmp(file, "builtin:paper-testbed") == 0) {
        cfg.src = (sweep_source){"<builtin:paper-testbed>", dpsim_builtin_paper_testbed,
                                 dpsim_builtin_paper_testbed_len, NULL};
    } else {
        size_t len = 0;
        if (!(text = read_text(file, &len, &err))) {
            rc = cli_fail(&err);
            goto out;
        }
        /* Traces resolve against the scenario's directory, as in `run`. */
        const char *slash = strrchr(file, '/');
        if (!slash)
            snprintf(dir, sizeof dir, ".");
        else if (slash == file)
            snprintf(dir, sizeof dir, "/");
        else
            snprintf(dir, sizeof dir, "%.*s", (int)(slash - file), file);
        cfg.src = (sweep_source){file, text, len, dir};
    }

    { /* many jobs (sim/jobs/): a grid of jobs runs (sweep/jobs.c) */
        scn_scenario *b =
            scn_load_string(cfg.src.name, cfg.src.text, cfg.src.len, cfg.src.base_dir, NULL, 0, &err);
        int jobs = b && scn_jobs(b);
        scn_free(b);
        err = (dp_err){0};
        const char *no = plist              ? "--policy (vary `scheduler` instead; each job names its policy)"
                         : cfg.mpi          ? "--mpi"
                         : cfg.retry_failed ? "--retry-failed (failed points are not stored: "
                                              "running again retries them)"
                         : cfg.detail       ? "--detail"
                                            : NULL;
        if (jobs && no) {
            char ef[1024];
            rc = cli_usage_error("sweep", "%s has jobs: a sweep of jobs takes no %s",
                                 dp_esc(ef, sizeof ef, file), no);
            dp_free(text);
            goto out;
        }
        if (jobs) {
            sweep_stats js;
            int e = sweep_jobs_run(&cfg, &js, &err);
            rc = e == DP_EINPUT ? cli_usage_error("sweep", "%s", err.msg) : e ? cli_fail(&err) : EXIT_OK;
            dp_free(text);
            goto out;
        }
    }
    if (!plist || !strcmp(plist, "all")) { /* all: those that can run this scenario */
        scn_scenario *base =
            scn_load_string(cfg.src.name, cfg.src.text, cfg.src.len, cfg.src.base_dir, NULL, 0, &err);
        if (base) {
            cfg.n_policies =
                (size_t)policy_keep_applicable(base, cfg.policies, cfg.n_policies, plist ? stderr : NULL);
            scn_free(base);
        } /* else the sweep reports the scenario's error itself */
    }

    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART: poll() returns so the stop is seen at once */
    stop_requests = 0;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    cfg.stop = &stop_requests;

    sweep_stats st;
    int e = sweep_run(&cfg, &st, &err);

    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    fflush(stdout);
    if (e == DP_EINPUT)
        rc = cli_usage_error("sweep", "%s", err.msg);
    else if (e)
        rc = cli_fail(&err);
    dp_free(text);
out:
    sweep_grid_free(g);
    return rc;
}

int cmd_merge(int argc, char **argv)
{
    const char *out = NULL;
    const char **in = dp_calloc(argc > 1 ? (size_t)argc : 1, sizeof *in);
    size_t n_in = 0;
    int rc = EXIT_OK;
    if (!in) {
        fprintf(stderr, "dpsim merge: out of memory\n");
        return EXIT_RUN;
    }
    cli_opts o = {0};
    int prc = cli_parse(argc, argv, "merge", CLI_O_LOG, NULL, NULL, NULL, NULL, merge_help, &o);
    if (prc >= 0) {
        rc = prc;
        goto done;
    }
    for (size_t i = 0; i < o.n_pos; i++) {
        if (!out)
            out = o.pos[i];
        else
            in[n_in++] = o.pos[i];
    }
    if (!out || n_in == 0) {
        rc = cli_usage_error("merge", "want OUT.db and at least one IN.db");
        goto done;
    }
    dp_err err = {0};
    store_merge_stats ms;
    int e = store_merge(out, in, n_in, &ms, &err);
    if (e == DP_EINPUT)
        rc = cli_usage_error("merge", "%s", err.msg);
    else if (e)
        rc = cli_fail(&err);
    else
        printf("merged %zu database%s into %s: %zu runs added, %zu already there, %zu failed runs replaced; "
               "%zu scenarios and %zu sweeps added%s",
               n_in, n_in == 1 ? "" : "s", out, ms.runs_added, ms.runs_skipped, ms.runs_replaced,
               ms.scenarios_added, ms.sweeps_added, ms.jobs_runs_added || ms.jobs_runs_skipped ? "; " : "\n");
    if (!e && (ms.jobs_runs_added || ms.jobs_runs_skipped))
        printf("%zu jobs runs added, %zu already there\n", ms.jobs_runs_added, ms.jobs_runs_skipped);
done:
    dp_free((void *)in);
    return rc;
}
