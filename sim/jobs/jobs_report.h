/* jobs_report.h: a many-jobs run printed (a table per job, the run's
 * figures) and as JSON (sim/store/JSON.md, "jobs"). */
#ifndef DP_JOBS_REPORT_H
#define DP_JOBS_REPORT_H

#include "jobs.h"
#include "json.h"

#include <stdio.h>

/* all: every job (else past 50 jobs the first 20 and a count). */
void jobs_print(const jobs_result *r, int all, FILE *out);
/* The document `dpsim jobs --json` prints, opened up to its "runs" list
 * (format, versions, scenario); jobs_json each run, then close the list
 * and the object. */
void jobs_json_doc_begin(json_buf *j, const char *scenario);
/* One object: the run's figures, "jobs" and "allocations" ([job, device, t0, t1]). */
void jobs_json(const jobs_result *r, json_buf *j);

#endif
