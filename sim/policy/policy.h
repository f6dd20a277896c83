/* policy.h: the scheduling policies, as the rest of dpsim sees them.
 *
 * A policy decides shares, batch sizes and when to synchronise; the world
 * (engine, network, compute) is the same for all (docs/MODEL.md section 4).
 * Policies are plug-ins: each is a method table (runtime.h's policy_def)
 * listed in one registry (registry.c), so `run`, `sweep`, `--help`, the
 * scenario summary, error messages and the plots take the list, labels,
 * colours and options from here and name no policy themselves.
 *
 * Options live under `policies.NAME` in a scenario.  The scenario loader
 * keeps that mapping as it is; policy_check_scenario validates it (unknown
 * policy names with a did-you-mean, every option with FILE:LINE:COLUMN).
 *
 * Ownership: policy_run returns a res_run the caller frees; policy_def
 * pointers are static (or, for registered ones, the caller's) and live for
 * the process.
 */
#ifndef DP_POLICY_H
#define DP_POLICY_H

#include "results.h"
#include "scenario.h"

#include <signal.h>
#include <stdio.h>

typedef struct policy_def policy_def;

/* At most this many policies (built in and registered). */
#define POLICY_MAX 32

/* ---- the registry ------------------------------------------------------ */

/* Policies in registry order (the order of tables, sweeps and plots). */
size_t policy_count(void);
const policy_def *policy_at(size_t i);
/* Position in the registry, or -1. */
int policy_index(const policy_def *p);
/* By name, or NULL. */
const policy_def *policy_find(const char *name);
/* By name, or DP_EINPUT with "unknown policy 'x', did you mean 'y'? (have:
 * a, b, c)" prefixed by `what` (e.g. "--policy"). */
int policy_lookup(const char *name, const char *what, const policy_def **out, dp_err *err);
/* Add a policy (e.g. from a test or an embedding program).  DP_EINPUT if
 * its name is taken or malformed, its table incomplete, or the registry is
 * full.  `p` must live as long as the process uses the registry. */
int policy_register(const policy_def *p, dp_err *err);
/* "ddp, deepspeed, cadp" (separator sep). */
void policy_names(char *buf, size_t len, const char *sep);

const char *policy_name(const policy_def *p);
const char *policy_label(const policy_def *p);
/* The label and colour for a stored policy name (plots): a registered
 * policy's, else the name itself and a colour of a colour-blind-safe cycle
 * picked by k.  Every built-in policy has a colour of its own; a plug-in
 * registered without one (colour NULL) gets one no policy uses. */
const char *policy_label_of(const char *name);
const char *policy_color_of(const char *name, size_t k);
/* Fill r->policy_label and r->policy_color from the registry entry of
 * r->policy (left "" for a name the registry does not know): what the
 * results database keeps so plots need no registry. */
void policy_stamp(res_run *r);
/* A policy's gnuplot point type and dash type, fixed by its registry place
 * (unknown names: by k), so lines of different policies differ in shape as
 * well as colour. */
void policy_style_of(const char *name, size_t k, int *point, int *dash);
/* Registry position of a stored policy name, or policy_count() if unknown
 * (plots order policies by it). */
size_t policy_rank_of(const char *name);

/* ---- options ----------------------------------------------------------- */

/* Validate `policies:` of a scenario: every key a known policy, every
 * option known and in range.  0 or DP_EINPUT (FILE:LINE:COLUMN: key.path:
 * what is wrong (got VALUE)). */
int policy_check_scenario(const scn_scenario *s, dp_err *err);
/* Parse p's options from the scenario into `opts` (p's options struct,
 * `size` >= its size): defaults, then policies.NAME.  0 or DP_EINPUT. */
int policy_options(const policy_def *p, const scn_scenario *s, void *opts, size_t size, dp_err *err);
/* The value of option `key` of p (a QUANTITY as a double, others as their
 * int), from the scenario; NAN when p has no such option or it is bad. */
double policy_option_num(const policy_def *p, const scn_scenario *s, const char *key);
/* p's options as a JSON object (dp_malloc'd), as stored with each run. */
char *policy_options_json(const policy_def *p, const scn_scenario *s);
/* One line "  NAME: key value, key value" for `dpsim check`. */
void policy_print_options(const policy_def *p, const scn_scenario *s, FILE *out);
/* Every policy with its summary and options (help lines), for --help. */
void policy_print_help(FILE *out);

/* Keep those of pk[0..n) whose `check` accepts scenario s (in order) and
 * print a note to `note` (may be NULL) for each one left out, e.g.
 * hierarchical on a scenario without sites; returns how many remain.
 * For "every policy" runs, where a refusal is not the user's error. */
int policy_keep_applicable(const scn_scenario *s, const policy_def **pk, size_t n, FILE *note);

/* ---- running ----------------------------------------------------------- */

/* Run policy p on the scenario with the given seed.  Returns the results
 * (caller frees with res_run_free) or NULL with err set: DP_EINPUT when the
 * scenario cannot run under this policy (e.g. a batch that does not fit),
 * DP_ERUN when the simulation stalls (a link at zero capacity forever). */
res_run *policy_run(const policy_def *p, const scn_scenario *s, uint64_t seed, dp_err *err);

/* An interrupt flag (e.g. set by a SIGINT handler) that running simulations
 * poll between events: when it becomes non-zero, policy_run stops and fails
 * with DP_ERUN "interrupted".  NULL (the default) = never.  The pointer is
 * borrowed for the life of the process. */
void policy_set_interrupt(volatile sig_atomic_t *flag);
/* 1 once that flag is set: loops outside the event loop (C-ADP's
 * refinement by simulation, the replay of repeated epochs) poll it. */
int policy_interrupted(void);
/* Steady-state fast-forward (docs/MODEL.md "Steady state"): on (1, the
 * default) lets a run skip the simulation of epochs proven to repeat,
 * replaying their records instead (bit-identical results); 0 simulates
 * every epoch (`DPSIM_NO_FAST_FORWARD=1`, tests comparing both). */
void policy_set_fast_forward(int on);
/* A progress callback that running simulations call every 4096 events with
 * the simulated time, the events run so far and the fraction of the
 * training's samples processed (0 while the data is still being sent, 1 at
 * the end).  It must not touch the simulation; it decides itself how often
 * to print (host time).  NULL (the default) = none. */
typedef void (*policy_progress_fn)(void *ctx, double now_s, uint64_t events, double frac_done);
void policy_set_progress(policy_progress_fn fn, void *ctx);
/* A hook that sees every activity interval of every device as it closes
 * (device, res_activity, start, end in simulated seconds), before the
 * runtime cuts its own timeline to 64 devices and coarsens long runs:
 * `export --trace --full` streams them to a file.  It must not touch the
 * simulation.  NULL (the default) = none. */
typedef void (*policy_segment_fn)(void *ctx, size_t device, int act, double t0_s, double t1_s);
void policy_set_segment_hook(policy_segment_fn fn, void *ctx);

#endif
