/* report.h: printing results (text tables and JSON), shared by run, show,
 * reproduce and sweep. */
#ifndef DP_REPORT_H
#define DP_REPORT_H

#include "json.h"
#include "results.h"
#include "scenario.h"
#include <stdio.h>

/* The summary table: header, then one row per run. */
void report_table_header(FILE *out);
void report_table_row(FILE *out, const res_run *r, long long run_id);
/* Per-device breakdown of one run. */
void report_devices(FILE *out, const res_run *r);
/* For a run that recorded a plan (C-ADP's plan.objective_s): one line
 * "POLICY: planned Ttotal X s vs simulated Y s (difference)".  Returns 1 if
 * printed (out NULL: only tells), 0 if the run has no plan. */
int report_plan(FILE *out, const res_run *r);
/* A run's further statistics (res_stat), one per line; nothing if none. */
void report_stats(FILE *out, const res_run *r);
/* One run as a JSON object (deterministic: no wall time, no run id). */
void report_json_run(json_buf *j, const res_run *r);

#endif
