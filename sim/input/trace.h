/* trace.h: time series the simulator reads (link capacity, device speed).
 *
 * A trace is a piecewise-constant series: value v[k] holds on
 * [t[k], t[k+1]); t[0] == 0; t strictly increasing; consecutive equal
 * values are merged at load so every breakpoint is a real change.  After
 * the last point the trace either holds its last value forever (loop == 0)
 * or repeats with period `period_s` (loop == 1; period_s > t[n-1]).
 *
 * Readers:
 *  - CSV, two columns `time_s,value` (header line optional, '#' comments),
 *    times non-decreasing from 0; for links the value is bits/s and is stored
 *    as bytes/s.
 *  - mahimahi: one integer millisecond timestamp per line, each a delivery
 *    opportunity for one 1500-byte packet (see traces/real/README.md);
 *    binned into `bin_s` buckets (default 1 s) -> bytes/s; the period of a
 *    looping mahimahi trace is the last timestamp (where mahimahi loops)
 *    rounded to the nearest whole number of bins (at least one), with rates
 *    scaled so one period still carries exactly the file's bytes.
 *  - CSV with loop: the last row lasts as long as the interval before it,
 *    so period_s = t_last + (t_last - t_before_last).
 *
 * Ownership: trace_free frees everything; trace_free(NULL) is a no-op.
 */
#ifndef DP_TRACE_H
#define DP_TRACE_H

#include "dp_common.h"
#include <stddef.h>

/* What the simulator can honour: breakpoints at least TRACE_MIN_STEP_S
 * apart (a finer CSV is refused at load: each breakpoint is an event, and
 * closer ones blur into the rounding of simulated time), and no time past
 * TRACE_MAX_TIME_S (about 31 years, mahimahi's own limit), where a
 * microsecond is no longer distinguishable in a double. */
#define TRACE_MIN_STEP_S 1e-6
#define TRACE_MAX_TIME_S 1e9

typedef enum { TRACE_FMT_AUTO = 0, TRACE_FMT_CSV, TRACE_FMT_MAHIMAHI } trace_format;

typedef struct trace {
    size_t n;        /* >= 1 */
    double *t_s;     /* breakpoints, t_s[0] == 0 */
    double *value;   /* bytes/s for links, a speed factor for devices; >= 0, finite */
    int loop;        /* 1: repeat with period_s */
    double period_s; /* > t_s[n-1] when loop; mahimahi traces keep their
                        length here even without loop (0 = unknown) */
} trace;

typedef struct trace_opts {
    trace_format format;  /* AUTO: .csv -> CSV, otherwise mahimahi if every line is one integer */
    double bin_s;         /* mahimahi bin width, default 1.0 when 0 */
    double scale_to_mean; /* > 0: rescale so the time-weighted mean over one period equals it */
    int loop;             /* repeat the trace (default: 1 for mahimahi, 0 for CSV: caller sets) */
    int value_is_bits;    /* CSV values are bits/s -> divide by 8 */
} trace_opts;

/* Read a trace file.  Errors (DP_EINPUT) name FILE:LINE:COLUMN and the bad
 * text: missing file, directory, empty file, non-numeric, negative, NaN/inf,
 * decreasing times, a file over the size limit.  Returns NULL on error. */
trace *trace_read_file(const char *path, const trace_opts *opts, dp_err *err);
/* The same from an in-memory buffer; `name` is used in messages. */
trace *trace_read_buffer(const char *name, const char *buf, size_t len, const trace_opts *opts, dp_err *err);
/* The format AUTO resolves to for this file name and content: CSV for a
 * `.csv` name, else mahimahi if every non-blank line is one whole number,
 * else CSV.  Lets a caller pick format-dependent defaults (loop). */
trace_format trace_detect_format(const char *name, const char *buf, size_t len);
/* A constant trace (n == 1). */
trace *trace_constant(double value);
trace *trace_copy(const trace *t);
void trace_free(trace *t);

/* Value at time t_s (>= 0). */
double trace_value_at(const trace *t, double t_s);
/* The first breakpoint strictly after t_s, or INFINITY if the value never
 * changes again.  Sets *value_out to the value from that breakpoint on. */
double trace_next_change(const trace *t, double t_s, double *value_out);
/* The largest value the trace takes at any time after t_s (its value at
 * t_s included): every listed value for a looping trace, the segments from
 * t_s on for one that ends and holds.  0 means it never rises again. */
double trace_max_after(const trace *t, double t_s);
/* The long-run mean: over one period for a looping trace; for a
 * non-looping one its last value, which holds for ever (a run long enough
 * sees nothing else).  This is the mean `mean:` rescales to, the default
 * of a traced link's up/down/bandwidth, and what `dpsim check` calls the
 * mean (it also prints trace_mean_listed).  Planners use trace_mean_over
 * over the window they plan for. */
double trace_mean(const trace *t);
/* Time-weighted mean of the listed part: over one period when the trace
 * has one, else over [0, t_s[n-1]] (the last value left out); the value
 * itself when n == 1. */
double trace_mean_listed(const trace *t);
/* Time-weighted mean over [t0_s, t1_s], with the last value held (or the
 * trace repeated) past its end, as the simulation sees it; the value at t0_s
 * when t1_s <= t0_s; for an infinite t1_s the long-run mean (one period's,
 * or the last value, = trace_mean).  Planners use this over the window
 * they plan for. */
double trace_mean_over(const trace *t, double t0_s, double t1_s);

#endif
