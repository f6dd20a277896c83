/* plots.h: plots drawn by gnuplot from the results database.
 *
 * Data flows one way: store -> plots.  Each function reads what it needs
 * through the store's typed reads (sim/store/store.h; the plots never see
 * SQL), writes a
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
#include "store/store.h"
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

typedef enum {
    PLOT_COMPARE = 0,
    PLOT_FLOPS,
    PLOT_TIMELINE,
    PLOT_SWEEP,
    PLOT_MIX,
    PLOT_BATCHES,
    PLOT_STALENESS,
    PLOT_LINKS,
    PLOT_ACCURACY,
    PLOT_JOBS,
    PLOT_ENERGY,
    PLOT_JOBS_SWEEP,
    PLOT_KIND_COUNT
} plot_kind;

/* The kinds' names, drawers and help are one table (draw.c).  A name
 * ("compare") -> its kind, -1 if unknown. */
int plot_kind_by_name(const char *name);
/* Kind k's name and --help text (lines joined by "\n"); NULL past the
 * last kind. */
const char *plot_kind_name(int k);
const char *plot_kind_help(int k);
/* "compare, flops, ... or accuracy" into buf (cut to cap); returns buf. */
const char *plot_kind_list(char *buf, size_t cap);

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
    FILE *note;             /* where to say which runs (or sweep) are drawn; NULL = nowhere */
    const char *out;        /* the output file (the command line's --out) */
    const char *xlabel;     /* axis labels instead of the default ones (NULL = default) */
    const char *ylabel;
    int width_px, height_px; /* canvas size (0 = the plot's default; pdf: 100 px per inch) */
    double from_s, to_s;     /* timeline: the window of simulated time (to_s <= 0: the end) */
    int panels;              /* flops: 0 auto (a panel per run when there are more than 4 runs or
                                their lengths differ by 20x or more and no x scale was asked),
                                1 a panel per run, 2 one */
    /* timeline: seconds of each activity per device and bin of [share_t0,
     * share_t1), share[(d * share_bins + b) * PLOT_N_ACTS + a] (a: res_activity
     * order), from a re-simulation (plot timeline --exact); NULL: draw the
     * stored segments.  Each bin is then drawn as the shares of its
     * activities, stacked. */
    const double *share;
    size_t share_devices, share_bins;
    double share_t0, share_t1;
} plot_sel;
#define PLOT_N_ACTS 5

/* Draw one plot of kind k into out_path. */
int plots_draw(store *st, plot_kind k, const plot_sel *sel, const char *out_path, dp_err *err);

/* The Table 3 set: DIR/table3-compare.png, DIR/table3-flops.png and one
 * DIR/table3-timeline-POLICY.png per run (DIR is created if absent). */
int plots_table3(store *st, const int64_t *run_ids, size_t n, const char *out_dir, dp_err *err);

/* ---- shared by the plots sources and tests (not for other modules) --------------- */

/* Write s into buf (capacity cap >= 3) as a gnuplot string expression
 * whose value is s: single-quoted chunks (gnuplot does no processing of
 * single-quoted strings: no backslash escapes, no `command` substitution),
 * each apostrophe written as a concatenated "'" (gnuplot 5.4 mis-scans
 * some doubled quotes, e.g. 'a''''').  Control characters (newline, CR,
 * tab, ...) become a space and invalid UTF-8 bytes '?', so the expression
 * stays on one line.  Text that does not fit is cut at a character
 * boundary and the expression stays well formed.  Valid wherever gnuplot
 * takes a string: titles, labels, tic labels, key titles, set output.
 * Returns buf. */
char *plot_quote(const char *s, char *buf, size_t cap);

/* The gnuplot process of one plot.  plot_gp_open starts gnuplot ($DPSIM_GNUPLOT
 * if set and non-empty, else `gnuplot` on PATH) with its stdin on a pipe and
 * its stdout+stderr in an anonymous temporary file (unlinked at once, so a
 * chatty gnuplot can never block us and nothing is left behind), and writes
 * the terminal set-up for out_path's extension with canvas width x height
 * pixels (pdf: 100 px per inch).  gnuplot draws into "OUT_PATH.part",
 * renamed to out_path only when gnuplot succeeds, so a failure never
 * leaves a half-written plot in place of a good one.
 * Writes are buffered; a write error (gnuplot exited early: EPIPE, with
 * SIGPIPE ignored around each write) is latched and reported by
 * plot_gp_close, which closes the pipe, waits for gnuplot and returns 0
 * only when gnuplot exited 0 and the file exists and is non-empty.  Either
 * plot_gp_close or plot_gp_abort (kill, wait, remove the partial file)
 * frees the handle; both accept NULL. */
typedef struct plot_gp plot_gp;
/* ".png" -> "png", ".svg" -> "svg", ".pdf" -> "pdf" (case-insensitive);
 * DP_EINPUT for anything else. */
int plot_format_for(const char *out_path, const char **format, dp_err *err);
plot_gp *plot_gp_open(const char *out_path, int width_px, int height_px, dp_err *err);
/* Batches: between plot_batch_begin and plot_batch_end, plot_gp_open starts
 * no process and plot_gp_close only keeps the plot's program; then
 * plot_batch_end draws them all with one gnuplot (each program sets its own
 * terminal and output, with `reset` between them: gnuplot's start-up, a
 * tenth of a second, is paid once).  If that gnuplot fails or a file is
 * missing, each plot is drawn again in a process of its own, so the error
 * names the plot as without a batch.  The outputs exist only after
 * plot_batch_end returns 0.  One batch at a time (process-wide). */
void plot_batch_begin(void);
int plot_batch_end(dp_err *err);
void plot_gp_printf(plot_gp *gp, const char *fmt, ...) DP_PRINTF(2, 3);
/* Write s as a string expression (plot_quote, at most 400 bytes of text). */
void plot_gp_str(plot_gp *gp, const char *s);
/* plot_kinds.c: the user's --xlabel / --ylabel (written last, so they win),
 * and the longest title a plot writes. */
void plot_user_labels(plot_gp *gp, const plot_sel *sel);
#define PLOT_TITLE_MAX 600
int plot_gp_close(plot_gp *gp, dp_err *err);
void plot_gp_abort(plot_gp *gp);
/* plot_gp_open at the user's --size (sel->width_px, height_px), else at the
 * plot's own w x h. */
plot_gp *plot_open(const plot_sel *sel, const char *out_path, int w, int h, dp_err *err);
/* `set title` with the user's --title (user, not NULL) or line1 and an
 * optional second line, every text through plot_gp_str. */
void plot_title(plot_gp *gp, const char *user, const char *line1, const char *line2);

/* One selected run (plot.c), what compare, flops and timeline need. */
typedef struct plot_run {
    int64_t id;
    char policy[32];
    char label[200];    /* legend text: "C-ADP", "C-ADP #12" when two selected runs share a policy,
                           "C-ADP #12 (K=V)" when those differ in overrides */
    char scenario[128]; /* the scenario's name (user text: quote it) */
    double tsend_s, ttraining_s, ttotal_s, tflops, bin_s;
    double tend_s;       /* flops: the end of its last FLOPS bin (filled by plot_draw_flops) */
    char overrides[256]; /* its --set overrides, space-separated ("" = none; user text: quote it) */
} plot_run;
/* A rendering note (which scale, what a cell or a colour means) goes to
 * the caption, not the figure: "caption: TEXT" on sel->note (stderr for
 * the command line), so the figure a paper prints carries only its title. */
void plot_caption(const plot_sel *sel, const char *text);
/* The title's second line for runs that ran with overrides: "with --set
 * K=V ..." for those every run has, and whether some runs have others
 * (their legend entries name them: plot_overrides_own), in buf; NULL when
 * none of the n runs has overrides. */
const char *plot_overrides_line(const plot_run *r, size_t n, char *buf, size_t cap);
/* The overrides of r[k] that not every run of r[0..n) has ("" if none), for
 * a legend entry telling runs of one policy apart. */
void plot_overrides_own(const plot_run *r, size_t n, size_t k, char *buf, size_t cap);
/* The runs sel asks for (see plot_sel), in the order ddp, deepspeed, cadp,
 * others by name, then by id.  one = 1: exactly one run (timeline).
 * DP_EINPUT when there is none, a run id does not exist or did not
 * succeed.  *runs is a dp_malloc array the caller frees with dp_free. */
int plot_runs_select(store *st, const plot_sel *sel, int one, plot_run **runs, size_t *n, dp_err *err);
/* The start of every plot of one run (timeline, batches, links): the run
 * sel picks (plot_runs_select with one = 1), copied into *run. */
int plot_one_run(store *st, const plot_sel *sel, plot_run *run, dp_err *err);
/* Whether run id has what a plot draws: 1 yes, 0 no, -1 error (err set). */
typedef int (*plot_has_fn)(store *st, int64_t id, dp_err *err);
/* plot_one_run, except that the default (no --run, no --policy) is the
 * latest run that has what the plot draws (has), searched from the latest
 * invocation's runs back, instead of a run it must then refuse; `what`
 * names it in messages ("batch statistics"). */
int plot_one_run_with(store *st, const plot_sel *sel, plot_has_fn has, const char *what, plot_run *run,
                      dp_err *err);

/* A flat JSON object of strings or numbers (a sweep point), parsed:
 * keys[i] -> vals[i] (numbers keep their text).  Free with
 * plot_json_free.  DP_EINPUT on anything else, with the text quoted. */
int plot_json_object(const char *json, char ***keys, char ***vals, size_t *n, dp_err *err);
void plot_json_free(char **keys, char **vals, size_t n);

/* Numbers for the values of one swept key ("10Mbps", "1Gbps", "4"):
 * out[i] in the unit of the first value that has one (so an axis reads in
 * the unit the user wrote), unit = that unit's text ("" for plain numbers),
 * found by trying the scenario unit kinds (scn_parse_quantity); values that
 * no kind accepts fall back to their leading number. */
void plot_axis_values(const char *const *vals, size_t n, double *out, char *unit, size_t unit_cap);

/* Policy display name ("C-ADP") and colour ("#2ca02c"): as stored with
 * the runs of the database plot_styles_load read (runs.policy_label,
 * policy_color), else this binary's registry (policy.h), else the name and
 * a spare colour picked by k. */
const char *plot_policy_label(const char *policy);
const char *plot_policy_color(const char *policy, size_t k);
/* Read how st's runs show their policies, for the plot about to be drawn
 * (plots_draw does it); plot_styles_free forgets it. */
int plot_styles_load(store *st, dp_err *err);
void plot_styles_free(void);
/* The metric columns sweep and mix may plot: column name, axis label, and
 * the factor from the stored value to the plotted one.  -1 if unknown. */
int plot_metric(const char *name, const char **column, const char **label, double *scale);
/* The metric name nearest to a mistyped one (ttotal -> ttotal_s), or NULL. */
const char *plot_metric_nearest(const char *name);
/* Whether to use a log axis: opt 0/1 is the user's choice; -1 = auto, log
 * when max / min (positive values only) >= ratio. */
int plot_want_log(int opt, double min_pos, double max, double ratio);
/* A time unit for an axis reaching max_s: s, min, h or days; *div is its
 * length in seconds. */
const char *plot_time_unit(double max_s, double *div);

/* The drawers of plot_kinds.c (arguments checked by plots_draw). */
int plot_draw_compare(store *st, const plot_sel *sel, const char *out_path, dp_err *err);
int plot_draw_flops(store *st, const plot_sel *sel, const char *out_path, dp_err *err);
int plot_draw_timeline(store *st, const plot_sel *sel, const char *out_path, dp_err *err);
int plot_draw_sweep(store *st, const plot_sel *sel, const char *out_path, dp_err *err);
int plot_draw_mix(store *st, const plot_sel *sel, const char *out_path, dp_err *err);
/* plot_batches.c */
int plot_draw_batches(store *st, const plot_sel *sel, const char *out_path, dp_err *err);
/* plot_staleness.c */
int plot_draw_staleness(store *st, const plot_sel *sel, const char *out_path, dp_err *err);
/* plot_accuracy.c */
int plot_draw_accuracy(store *st, const plot_sel *sel, const char *out_path, dp_err *err);
/* plot_jobs.c: a many-jobs run's Gantt and the JCT CDF per scheduler (sel->run_ids: jobs_runs ids) */
int plot_draw_jobs(store *st, const plot_sel *sel, const char *out_path, dp_err *err);
int plot_draw_jobs_sweep(store *st, const plot_sel *sel, const char *out_path, dp_err *err);
/* plot_links.c: one run's links by busy fraction and peak utilisation. */
int plot_draw_links(store *st, const plot_sel *sel, const char *out_path, dp_err *err);
/* plot_energy.c: the devices' energy per run, stacked by activity. */
int plot_draw_energy(store *st, const plot_sel *sel, const char *out_path, dp_err *err);

#endif
