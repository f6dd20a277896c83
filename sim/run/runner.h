/* runner.h: load a scenario, run policies on it and store each result.
 * Shared by the command line (`run`, `reproduce`, `sweep`) and the
 * calibrator (sim/calib), which sit above it. */
#ifndef DP_RUNNER_H
#define DP_RUNNER_H

#include "policy/policy.h"
#include "store/store.h"

/* Run policies pk[0..n) on s with seed; store each finished run in st (may
 * be NULL) as one transaction with the given override strings.  out[k]
 * receives each result (caller frees), ids[k] its run id (0 when not
 * stored).  Stops at the first failure: earlier runs stay stored, the
 * failed one leaves nothing.  0 or the failure's code. */
int runner_run(const scn_scenario *s, const policy_def *const *pk, size_t n, uint64_t seed, store *st,
               const char *const *overrides, size_t n_overrides, res_run **out, int64_t *ids, dp_err *err);
/* As runner_run, but a policy whose run fails does not hide the others:
 * its message goes to stderr at once ("dpsim: P on S: ..."), out[k] stays
 * NULL, and the next policy runs.  An interrupt, a database failure or
 * running out of memory still stops there.  Returns 0 when every policy
 * ran, the number of policies that failed (> 0; *exit_code gets the worst
 * exit code of their messages: 2 for bad input, else 1), or a negative
 * DP_E* code when it stopped (err holds the message, not yet printed). */
int runner_run_each(const scn_scenario *s, const policy_def *const *pk, size_t n, uint64_t seed, store *st,
                    const char *const *overrides, size_t n_overrides, res_run **out, int64_t *ids,
                    int *exit_code, dp_err *err);
/* A scenario file, or "builtin:paper-testbed", with overrides; its
 * policies' options checked by the registry.  NULL with err set. */
scn_scenario *runner_load_scenario(const char *arg, const scn_override *ov, size_t n_ov, dp_err *err);
/* The wall clock (UTC, ISO 8601) and a monotonic clock in seconds. */
void runner_now_iso(char *buf, size_t len);
double runner_wall_s(void);
/* What the runner asks of the program above it (the command line); any
 * member may be NULL (the default): begin names a run about to start and
 * end follows it (a progress line); interrupted says the user asked to stop
 * (runner_run_each stops then); report prints a failed policy's message
 * and returns its exit code (NULL: not printed, 2 for bad input, else 1). */
typedef struct runner_hooks {
    void (*begin)(const char *what);
    void (*end)(void);
    int (*interrupted)(void);
    int (*report)(const dp_err *err);
} runner_hooks;
void runner_set_hooks(const runner_hooks *h);
/* Parse "ddp,cadp" (or "all": every registered policy, in registry order)
 * into out[0..cap); returns the count or -1 with a message naming the
 * unknown policy. */
int runner_parse_policies(const char *list, const policy_def **out, size_t cap, dp_err *err);

#endif
