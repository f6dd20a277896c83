/* report.h: printing results (text tables and JSON), shared by run, show,
 * reproduce and sweep. */
#ifndef DP_REPORT_H
#define DP_REPORT_H

#include "json.h"
#include "results.h"
#include "table.h"
#include "scenario.h"
#include <stdio.h>

/* The summary table (one printer, table.h: columns as wide as their
 * content): header, then one row per run (NULL runs skipped; ids NULL or
 * 0: no run id). */
void report_table(FILE *out, const res_run *const *runs, const long long *ids, size_t n);
/* The same built a row at a time, for tables with lines between rows:
 * print and free with dp_table_print / dp_table_free. */
dp_table *report_table_new(void);
void report_table_add(dp_table *t, const res_run *r, long long run_id);
/* Per-device breakdown of one run: every device, or past 50 (unless all)
 * the first 10 and each figure's min / median / max over all. */
void report_devices(FILE *out, const res_run *r, int all);
/* For a run that recorded a plan (C-ADP's plan.objective_s): one line
 * "POLICY: planned Ttotal X s vs simulated Y s (difference)".  Returns 1 if
 * printed (out NULL: only tells), 0 if the run has no plan. */
int report_plan(FILE *out, const res_run *r);
/* With `learning:`, a table of each run's final accuracy and time to
 * every target (NULL out: 1 when there is one to print). */
int report_learning(FILE *out, res_run *const *runs, int n);
/* For a run that fast-forwarded (statistic fast_forward): one line
 * "POLICY: fast_forward: epochs A-B (...)".  Returns 1 if printed (out
 * NULL: only tells), 0 if the run simulated every epoch. */
int report_fast_forward(FILE *out, const res_run *r);
/* A run's further statistics (res_stat), one per line; nothing if none. */
void report_stats(FILE *out, const res_run *r);
/* JSON output, one shape for `run --json` and `show --json` (documented in
 * sim/store/JSON.md): report_json_begin opens
 *   {"format":"dpsim-runs","format_version":1,"dpsim_version":V,"scenario":NAME,"runs":[
 * report_json_run adds one run object, report_json_end closes both.
 * Deterministic: no wall time, no run id, no database path. */
void report_json_begin(json_buf *j, const char *scenario);
/* One run as a JSON object; overrides: the --set strings it ran with. */
void report_json_run(json_buf *j, const res_run *r, const char *const *overrides, size_t n_overrides);
void report_json_end(json_buf *j);

#endif
