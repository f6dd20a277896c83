/* cli.h: the dpsim command line.  Each command is a function taking its own
 * argv (argv[0] is the command name) and returning the process exit code:
 * 0 success, 1 the run failed, 2 bad usage or bad input. */
#ifndef DP_CLI_H
#define DP_CLI_H

#include "dp_common.h"
#include "scenario.h"
#include <stdio.h>

enum { EXIT_OK = 0, EXIT_RUN = 1, EXIT_USAGE = 2 };

int dpsim_main(int argc, char **argv);

int cmd_check(int argc, char **argv);
int cmd_solve(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_jobs(int argc, char **argv);
int cmd_runs(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_rerun(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_reproduce(int argc, char **argv);
int cmd_plot(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_presets(int argc, char **argv);

/* Shared helpers. */
/* Map a dp_err code to an exit code (DP_EINPUT -> 2, else 1). */
int cli_exit_for(const dp_err *err);
/* Print "dpsim: MESSAGE" to stderr and return the exit code for err. */
int cli_fail(const dp_err *err);
/* Print "dpsim COMMAND: MESSAGE\nTry 'dpsim COMMAND --help'." and return 2. */
int cli_usage_error(const char *cmd, const char *fmt, ...) DP_PRINTF(2, 3);
/* 1 if arg is -h or --help. */
int cli_is_help(const char *arg);
/* Current UTC time as ISO-8601 ("2026-11-29T10:00:00Z"). */
void cli_now_iso(char *buf, size_t len);
/* This process's invocation id (start time and pid), which run and
 * reproduce store with their runs (store_set_invocation). */
const char *cli_invocation_id(void);
/* Host wall clock in seconds (monotonic), for timing runs. */
double cli_wall_s(void);
/* Load a scenario file or a built-in one ("builtin:paper-testbed").  A
 * file that does not exist is DP_EINPUT naming the nearest file of its
 * directory ("tiny.yml" -> "tiny.yaml"); an unknown builtin: lists them. */
scn_scenario *cli_load_scenario(const char *arg, const scn_override *ov, size_t n_ov, dp_err *err);
/* store_open_read, except that a database file that does not exist is
 * DP_EINPUT (exit 2, bad input) with the nearest file name if one is close. */
typedef struct store store;
store *cli_open_read(const char *db, dp_err *err);
/* Simulate stored run id again from what the database holds (scenario
 * text, overrides, policy, seed, trace files): *old_out the stored results,
 * *now_out the new ones, *name_out / *policy_out dp_malloc strings, all for
 * the caller to free (cmd_db.c; rerun, export --trace --full, plot
 * timeline --exact).  A segment hook set with policy_set_segment_hook sees
 * the re-run's every activity. */
typedef struct res_run res_run;
int cli_resimulate(store *st, uint64_t id, res_run **old_out, res_run **now_out, char **name_out,
                   char **policy_out, uint64_t *seed_out, dp_err *err_out);
/* Catch SIGINT and SIGTERM: the running simulation stops at its next
 * poll and fails with "interrupted" (runs already stored stay stored; the
 * one in flight leaves nothing).  A second signal kills at once. */
void cli_catch_interrupts(void);
/* 1 once SIGINT or SIGTERM arrived (after cli_catch_interrupts). */
int cli_interrupted(void);
/* Parse a non-negative decimal integer; 0 or -1. */
int cli_parse_u64(const char *s, uint64_t *out);
/* Parse "KEY=VALUE" into an override (pointers into arg, which is modified). */
int cli_parse_override(char *arg, scn_override *ov);
/* ---- options (cliopt.c) ------------------------------------------------------
 * One getopt_long parser for every command: --opt=value, --opt value,
 * -o value, -ovalue and bundled short options (-qd x.db) all work.  The
 * shared options a command accepts are chosen by CLI_O_* bits; -h/--help is
 * always accepted. */
#define CLI_MAX_SET 64
#define CLI_MAX_POS 1024
#define CLI_MAX_LOG 32
enum {
    CLI_O_DB = 1 << 0,    /* -d, --db FILE (default results.db) */
    CLI_O_NODB = 1 << 1,  /* --no-db: db becomes NULL */
    CLI_O_JSON = 1 << 2,  /* --json */
    CLI_O_QUIET = 1 << 3, /* -q, --quiet */
    CLI_O_SET = 1 << 4,   /* -s, --set KEY=VALUE (repeatable, at most CLI_MAX_SET) */
    CLI_O_LOG = 1 << 5,   /* --log CATEGORY[:LEVEL] (repeatable, at most CLI_MAX_LOG; log.h) */
};
typedef struct cli_opts {
    const char *cmd;
    const char *db; /* --db's value (borrowed from argv); NULL after --no-db */
    int json, quiet;
    size_t n_ov;
    scn_override ov[CLI_MAX_SET];     /* pointers into ov_buf */
    const char *ov_text[CLI_MAX_SET]; /* each --set as typed (borrowed from argv) */
    char *ov_buf[CLI_MAX_SET];        /* owned; cli_opts_free */
    size_t n_pos;
    const char *pos[CLI_MAX_POS]; /* positional arguments in order (borrowed) */
    size_t n_log;
    const char *log_text[CLI_MAX_LOG]; /* each --log as given (borrowed), for generated scripts */
} cli_opts;
struct option;
/* A command's own option: key is getopt_long's return (the short letter or
 * the table's val), label the option as typed ("--out" or "-o"), arg its
 * value or NULL.  Return -1 to go on, or an exit code to stop with. */
typedef int (*cli_on_opt)(void *ctx, int key, const char *arg, const char *label);
/* Parse argv[1..argc) (argv is permuted, as GNU getopt does).  own/own_short:
 * the command's options (may be NULL).  Returns -1 when parsing succeeded
 * (o filled), else the exit code: 0 after printing help, 2 after a usage
 * message.  Call cli_opts_free(o) in every case. */
int cli_parse(int argc, char **argv, const char *cmd, unsigned want, const struct option *own,
              const char *own_short, cli_on_opt on, void *ctx, void (*help)(void), cli_opts *o);
void cli_opts_free(cli_opts *o);
/* -1 when exactly one positional argument was given, else a usage message
 * ("missing WHAT", "one WHAT at a time") and its exit code. */
int cli_one_pos(const cli_opts *o, const char *what);

/* ---- progress (progress.c) ----------------------------------------------------
 * run, reproduce and rerun show how a long simulation advances: on a
 * terminal one line redrawn in place, otherwise a line every 5 s on stderr.
 * quiet turns it off.  cli_progress_begin before each run names it;
 * cli_progress_end clears the line. */
void cli_progress_init(int quiet);
void cli_progress_begin(const char *what);
void cli_progress_end(void);

/* The built-in paper testbed (scenarios/paper-testbed.yaml, compiled in). */
extern const char dpsim_builtin_paper_testbed[];
extern const size_t dpsim_builtin_paper_testbed_len;

#endif
