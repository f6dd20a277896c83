/* cli.c: command dispatch, top-level help, and helpers the commands share. */
#include "cli/cli.h"
#include "run/runner.h"
#include "dpsim_config.h"

#include "policy/policy.h"
#include "store/store.h"
#include "slv.h"

#include "yamltree.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct command {
    const char *name;
    int (*fn)(int, char **);
    const char *summary;
} command;

static const command commands[] = {
    {"check", cmd_check, "load and validate a scenario, print a summary"},
    {"solve", cmd_solve, "solve the C-ADP data allocation for a scenario (no simulation)"},
    {"run", cmd_run, "simulate policies on a scenario and store the results"},
    {"jobs", cmd_jobs, "run many jobs in one world under cluster schedulers"},
    {"reproduce", cmd_reproduce, "reproduce the paper's Table 3 (dpsim reproduce table3)"},
    {"runs", cmd_runs, "list the runs stored in a results database"},
    {"show", cmd_show, "print a stored run again"},
    {"rerun", cmd_rerun, "simulate a stored run again and compare, bit for bit"},
    {"export", cmd_export, "write the results database as CSV files"},
    {"plot", cmd_plot, "draw plots from a results database with gnuplot"},
    {"sweep", cmd_sweep, "run a grid of scenario variations in parallel"},
    {"calibrate", cmd_calibrate, "fit unknown scenario values to measured figures"},
    {"merge", cmd_merge, "merge results databases (e.g. the shards of a sweep)"},
    {"presets", cmd_presets, "list the device, model and link presets with their sources"},
};

static void usage(FILE *out)
{
    fprintf(out,
            "dpsim %s: discrete-event simulator of data-parallel training on\n"
            "heterogeneous, geo-distributed devices (DDP, DeepSpeed ZeRO, C-ADP).\n\n"
            "usage: dpsim COMMAND [OPTIONS] [ARGS]\n\ncommands:\n",
            DPSIM_VERSION);
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n'dpsim COMMAND --help' explains a command and its options ('man dpsim' has them\n"
                 "all).  Options take --opt VALUE or --opt=VALUE; short ones bundle (-qd x.db).\n"
                 "Most commands share -d/--db FILE, -q/--quiet, --json, -s/--set KEY=VALUE and\n"
                 "--log CATEGORY[:LEVEL] (engine, net, policy, solver, store, all).\n"
                 "Exit codes: 0 success, 1 the run failed, 2 bad usage or bad input.\n"
                 "Start here: dpsim reproduce table3 --out table3/\n"
                 "What is simulated (world, policies, the C-ADP problem, outputs): docs/MODEL.md;\n"
                 "scenario keys: scenarios/README.md.\n"
                 "\nenvironment:\n"
                 "  DPSIM_GNUPLOT=PATH         the gnuplot to run (default: gnuplot on PATH)\n"
                 "  DPSIM_PROGRESS_EVERY=S     seconds between progress lines (default 0.2 on a\n"
                 "                             terminal, 5 otherwise; 0: every check)\n"
                 "  DPSIM_NO_FAST_FORWARD=1    simulate every epoch (same results; to compare)\n"
                 "  DPSIM_COMPUTE_PER_BATCH=1  one event per batch, not a run of batches per event\n"
                 "  DPSIM_COLL_PER_FLOW=1      every collective round as flows, no closed form\n"
                 "  DPSIM_NET_NO_STAR=1        progressive filling only, no star fast path\n"
                 "  DPSIM_NO_SYMMETRY=1        every device its own events, no classes of identical\n"
                 "                             devices moving as one\n"
                 "  DPSIM_MPI_TIMEOUT=S        sweep --mpi: seconds a silent rank is waited for\n"
                 "  DPSIM_OUT, DPSIM_MERGED    sweep --slurm's script: shared directory, merged db\n"
                 "The switches that compare (=1) change speed only, never a result.\n");
}

int dpsim_main(int argc, char **argv)
{
    /* Past a file size limit (ulimit -f) a write must fail with EFBIG, which
     * the store and the exports report as a full disk, rather than SIGXFSZ
     * killing the process mid-write (run, reproduce, sweep, merge, export). */
    signal(SIGXFSZ, SIG_IGN);
    /* the runner (sim/run) reports through the command line's progress
     * line and messages */
    static const runner_hooks hooks = {cli_progress_begin, cli_progress_end, cli_interrupted, cli_fail};
    runner_set_hooks(&hooks);
    /* every command (run, reproduce, sweep, rerun, calibrate): simulate
     * every epoch; the same results, for comparing (docs/MODEL.md) */
    const char *noff = getenv("DPSIM_NO_FAST_FORWARD");
    if (noff && *noff && strcmp(noff, "0") != 0)
        policy_set_fast_forward(0);
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (cli_is_help(argv[1]) || strcmp(argv[1], "help") == 0) {
        if (argc > 2 && strcmp(argv[1], "help") == 0) {
            char *hv[] = {argv[2], "--help", NULL};
            for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
                if (strcmp(argv[2], commands[i].name) == 0)
                    return commands[i].fn(2, hv);
        }
        usage(stdout);
        return EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        printf("dpsim %s\n", DPSIM_VERSION);
        return EXIT_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].fn(argc - 1, argv + 1);
    /* suggest the closest command by common prefix */
    const char *best = NULL;
    size_t best_len = 0;
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++) {
        size_t k = 0;
        while (argv[1][k] && argv[1][k] == commands[i].name[k])
            k++;
        if (k > best_len) {
            best_len = k;
            best = commands[i].name;
        }
    }
    char cmd[256];
    fprintf(stderr, "dpsim: unknown command '%s'%s%s%s\nTry 'dpsim --help'.\n",
            dp_esc(cmd, sizeof cmd, argv[1]), best ? " (did you mean '" : "", best ? best : "",
            best ? "'?)" : "");
    return EXIT_USAGE;
}

int cli_exit_for(const dp_err *err)
{
    return err && err->code == DP_EINPUT ? EXIT_USAGE : EXIT_RUN;
}

int cli_fail(const dp_err *err)
{
    fprintf(stderr, "dpsim: %s\n", err && err->msg[0] ? err->msg : "failed");
    return cli_exit_for(err);
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    /* The message quotes command-line arguments: escaped, one line. */
    char raw[1024], msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    fprintf(stderr, "dpsim %s: %s\nTry 'dpsim %s --help'.\n", cmd, dp_esc(msg, sizeof msg, raw), cmd);
    return EXIT_USAGE;
}

int cli_is_help(const char *arg)
{
    return arg && (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0);
}

void cli_now_iso(char *buf, size_t len)
{
    runner_now_iso(buf, len);
}

const char *cli_invocation_id(void)
{
    static char id[64];
    if (!id[0]) { /* start time and process id: unique per invocation on one host */
        char now[32];
        cli_now_iso(now, sizeof now);
        snprintf(id, sizeof id, "%s-%ld", now, (long)getpid());
    }
    return id;
}

double cli_wall_s(void)
{
    return runner_wall_s();
}

/* The entry of path's directory nearest to its name ("tiny.yml" ->
 * "tiny.yaml"), as DIR/NAME in buf; 0 when none is close. */
static int near_file(const char *path, char *buf, size_t cap)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    char dir[1024];
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
    if (slash == path)
        snprintf(dir, sizeof dir, "/");
    DIR *d = opendir(dir);
    if (!d || !*base) {
        if (d)
            closedir(d);
        return 0;
    }
    enum { MAX_NAMES = 4096 };
    char **names = dp_calloc(MAX_NAMES, sizeof *names);
    size_t n = 0;
    for (struct dirent *e; names && n < MAX_NAMES && (e = readdir(d)) != NULL;)
        if (e->d_name[0] != '.' && (names[n] = dp_strdup(e->d_name)) != NULL)
            n++;
    closedir(d);
    const char *near = names ? yt_nearest(base, (const char *const *)names, n) : NULL;
    if (near)
        snprintf(buf, cap, "%.*s%s", (int)(base - path), path, near);
    for (size_t k = 0; k < n; k++)
        dp_free(names[k]);
    dp_free(names);
    return near != NULL;
}

scn_scenario *cli_load_scenario(const char *arg, const scn_override *ov, size_t n_ov, dp_err *err)
{
    /* the user's mistakes named before loading: an unknown built-in, a
     * file that is not there but has a near name */
    if (strncmp(arg, "builtin:", 8) == 0 && strcmp(arg, "builtin:paper-testbed") != 0) {
        dp_err_set(err, DP_EINPUT, "%s: no such built-in scenario (the built-in one: builtin:paper-testbed)",
                   arg);
        return NULL;
    }
    char near[2048];
    if (strncmp(arg, "builtin:", 8) != 0 && access(arg, F_OK) != 0 && errno == ENOENT &&
        near_file(arg, near, sizeof near)) {
        dp_err_set(err, DP_EINPUT, "%s: no such scenario file, did you mean '%s'?", arg, near);
        return NULL;
    }
    return runner_load_scenario(arg, ov, n_ov, err);
}

store *cli_open_read(const char *db, dp_err *err)
{
    /* a file that is not there is the user's mistake (exit 2), not a
     * database error */
    if (db && access(db, F_OK) != 0 && errno == ENOENT) {
        char near[2048];
        if (near_file(db, near, sizeof near))
            dp_err_set(err, DP_EINPUT, "%s: no such results database, did you mean '%s'?", db, near);
        else
            dp_err_set(err, DP_EINPUT,
                       "%s: no such results database (`dpsim run` creates it; --db FILE names another)", db);
        return NULL;
    }
    return store_open_read(db, err);
}

int cli_parse_override(char *arg, scn_override *ov)
{
    char *eq = strchr(arg, '=');
    if (!eq || eq == arg)
        return -1;
    *eq = '\0';
    ov->key = arg;
    ov->value = eq + 1;
    return 0;
}

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
    if (interrupted) { /* second time: the user means it */
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    interrupted = sig;
}

int cli_interrupted(void)
{
    return interrupted != 0;
}

void cli_catch_interrupts(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    policy_set_interrupt(&interrupted);
    slv_set_interrupt(&interrupted); /* C-ADP's solve can be the long part of a run */
}
