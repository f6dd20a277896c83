/* plots.h: plots drawn by gnuplot from the results database.
 *
 * Data flows one way: store (SQLite) -> plots.  Each function reads what it
 * needs with read-only queries (schema: sim/store/SCHEMA.md), writes a
 * gnuplot program with inline data blocks ($data << EOD ... EOD) into a pipe
 * to `gnuplot` (found on PATH, or $DPSIM_GNUPLOT), and checks gnuplot's exit
 * status.  No temporary script is left behind.  Every string that comes from
 * a user or a scenario (device names, scenario names, titles, file names) is
 * escaped before it reaches gnuplot, so it cannot break or inject commands.
 * The terminal follows the output file's extension: .png (pngcairo), .svg,
 * .pdf (pdfcairo).
 *
 * Errors: DP_EINPUT for a bad selection (no such run, unknown metric,
 * unknown extension); DP_ERUN when gnuplot is missing (the message says
 * `apt-get install gnuplot-nox`), fails, or exits early (its stderr is
 * quoted).  The database is only read.
 */
#ifndef DP_PLOTS_H
#define DP_PLOTS_H

#include "dp_common.h"
#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { PLOT_COMPARE = 0, PLOT_FLOPS, PLOT_TIMELINE, PLOT_SWEEP, PLOT_MIX, PLOT_KIND_COUNT } plot_kind;

/* "compare" | "flops" | "timeline" | "sweep" | "mix" -> kind, -1 if unknown. */
int plot_kind_by_name(const char *name);

typedef struct plot_sel {
    const int64_t *run_ids; /* runs to draw (compare, flops: one per policy; timeline: one) */
    size_t n_runs;          /* 0 = choose: the latest run of each policy of `scenario` */
    const char *scenario;   /* scenario name filter (NULL = the latest run's scenario) */
    int64_t sweep_id;       /* sweep, mix: which sweep (0 = the latest) */
    const char *metric;     /* sweep, mix: ttotal_s (default), tsend_s, ttraining_s, tflops, utilization */
    const char *x_key;      /* sweep: the swept key on x (NULL = the sweep's first key) */
    const char *y_key;      /* mix: the second key (NULL = the sweep's second key) */
    const char *policy;     /* mix: which policy (NULL = cadp) */
    int log_y;              /* -1 auto, 0 linear, 1 log */
    int log_x;              /* -1 auto (log when the values span >= 2 decades), 0, 1 */
    const char *title;      /* NULL = a default title */
} plot_sel;

/* Draw one plot of kind k into out_path. */
int plots_draw(sqlite3 *db, plot_kind k, const plot_sel *sel, const char *out_path, dp_err *err);

/* The Table 3 set: DIR/table3-compare.png, DIR/table3-flops.png and one
 * DIR/table3-timeline-POLICY.png per run (DIR is created if absent). */
int plots_table3(sqlite3 *db, const int64_t *run_ids, size_t n, const char *out_dir, dp_err *err);

#endif
