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
int cmd_runs(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_rerun(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_reproduce(int argc, char **argv);
int cmd_plot(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);

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
/* Host wall clock in seconds (monotonic), for timing runs. */
double cli_wall_s(void);
/* Load a scenario file or a built-in one ("builtin:paper-testbed"). */
scn_scenario *cli_load_scenario(const char *arg, const scn_override *ov, size_t n_ov, dp_err *err);
/* Catch SIGINT and SIGTERM: the running simulation stops at its next
 * poll and fails with "interrupted" (runs already stored stay stored; the
 * one in flight leaves nothing).  A second signal kills at once. */
void cli_catch_interrupts(void);
/* Parse a non-negative decimal integer; 0 or -1. */
int cli_parse_u64(const char *s, uint64_t *out);
/* Parse "KEY=VALUE" into an override (pointers into arg, which is modified). */
int cli_parse_override(char *arg, scn_override *ov);
/* The built-in paper testbed (scenarios/paper-testbed.yaml, compiled in). */
extern const char dpsim_builtin_paper_testbed[];
extern const size_t dpsim_builtin_paper_testbed_len;

#endif
