/* trace.c: piecewise-constant time series read from CSV or mahimahi files.
 *
 * Invariants kept by every constructor: n >= 1, t_s[0] == 0, t_s strictly
 * increasing, values finite and >= 0, no two consecutive equal values; a
 * looping trace has period_s > t_s[n-1].
 *
 * mahimahi files are binned without ever holding a per-bin array: the
 * timestamps are sorted, so bins are emitted in order and empty runs become
 * one zero point.  The bin grid is fitted to the file's own period (its last
 * timestamp, where mahimahi loops): the period is rounded to the nearest
 * whole number of bins and time is stretched by that tiny factor, with rates
 * scaled to match, so one period carries exactly the file's bytes and the
 * long-run mean equals (lines x 1500 B) / last timestamp, as mahimahi
 * delivers.  Rounding *up* instead (e.g. 120.002 s -> 121 s for the AT&T
 * traces) would append a near-empty bin, a fake outage once per period.
 *
 * Input is untrusted: files over TRACE_MAX_BYTES are refused before reading,
 * every line is parsed within the buffer's length (no NUL terminator is
 * assumed), numbers are checked by hand before strtod (which would accept
 * "inf", "nan" and hex), and every loop is bounded by the input size.
 */
#include "trace.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRACE_MAX_BYTES (64L * 1024 * 1024)
#define TRACE_LINE_MAX  256
#define MAHIMAHI_PKT    1500.0
#define MAHIMAHI_MAX_MS 1000000000000LL /* 10^12 ms, about 31 years */

typedef struct builder {
    double *t, *v;
    size_t n, cap;
} builder;

/* Append a point, merging a value equal to the previous one and replacing
 * a point at the same time. */
static int bpush(builder *b, double t, double v)
{
    if (b->n > 0 && b->t[b->n - 1] == t) {
        b->v[b->n - 1] = v;
        if (b->n > 1 && b->v[b->n - 2] == v)
            b->n--;
        return 0;
    }
    if (b->n > 0 && b->v[b->n - 1] == v)
        return 0;
    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 64;
        double *t2 = dp_realloc(b->t, cap * sizeof *t2);
        if (!t2)
            return DP_ENOMEM;
        b->t = t2;
        double *v2 = dp_realloc(b->v, cap * sizeof *v2);
        if (!v2)
            return DP_ENOMEM;
        b->v = v2;
        b->cap = cap;
    }
    b->t[b->n] = t;
    b->v[b->n] = v;
    b->n++;
    return 0;
}

static void bfree(builder *b)
{
    dp_free(b->t);
    dp_free(b->v);
    b->t = b->v = NULL;
}

static trace *bfinish(builder *b, int loop, double period)
{
    trace *t = dp_calloc(1, sizeof *t);
    if (!t) {
        bfree(b);
        return NULL;
    }
    t->n = b->n;
    t->t_s = b->t;
    t->value = b->v;
    t->loop = loop && b->n > 1;
    t->period_s = period;
    b->t = b->v = NULL;
    return t;
}

trace *trace_constant(double value)
{
    if (!isfinite(value) || value < 0)
        return NULL;
    builder b = {0};
    if (bpush(&b, 0, value)) {
        bfree(&b);
        return NULL;
    }
    return bfinish(&b, 0, 0);
}

trace *trace_copy(const trace *s)
{
    if (!s)
        return NULL;
    trace *t = dp_calloc(1, sizeof *t);
    if (!t)
        return NULL;
    *t = *s;
    t->t_s = dp_malloc(s->n * sizeof *t->t_s);
    t->value = dp_malloc(s->n * sizeof *t->value);
    if (!t->t_s || !t->value) {
        trace_free(t);
        return NULL;
    }
    memcpy(t->t_s, s->t_s, s->n * sizeof *t->t_s);
    memcpy(t->value, s->value, s->n * sizeof *t->value);
    return t;
}

void trace_free(trace *t)
{
    if (!t)
        return;
    dp_free(t->t_s);
    dp_free(t->value);
    dp_free(t);
}

/* ---- reading ----------------------------------------------------------- */

typedef struct lines {
    const char *buf;
    size_t len, pos;
    long lineno;
} lines;

/* Next line into out (NUL-terminated, '\r' and '#' comments removed,
 * trimmed).  Returns 1 with a line, 0 at the end, -1 if it is too long or
 * holds a NUL byte.  *col0 is the column of the first kept character. */
static int next_line(lines *L, char *out, int *col0)
{
    if (L->pos >= L->len)
        return 0;
    size_t s = L->pos, e = s;
    while (e < L->len && L->buf[e] != '\n')
        e++;
    L->pos = e + 1;
    L->lineno++;
    size_t n = e - s;
    const char *p = L->buf + s;
    if (memchr(p, '\0', n))
        return -1;
    const char *hash = memchr(p, '#', n);
    if (hash)
        n = (size_t)(hash - p);
    size_t a = 0;
    while (a < n && (p[a] == ' ' || p[a] == '\t' || p[a] == '\r'))
        a++;
    while (n > a && (p[n - 1] == ' ' || p[n - 1] == '\t' || p[n - 1] == '\r'))
        n--;
    if (n - a >= TRACE_LINE_MAX)
        return -1;
    memcpy(out, p + a, n - a);
    out[n - a] = '\0';
    *col0 = (int)a + 1;
    return 1;
}

/* A decimal number and nothing else; finite. */
static int parse_num(const char *s, double *out)
{
    if (!*s)
        return -1;
    for (const char *q = s; *q; q++)
        if (!strchr("0123456789+-.eE", *q))
            return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (*end != '\0' || end == s || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

static int is_uint(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return 0;
    return 1;
}

static int ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

/* A line quoted in a message: a short escaped excerpt (dp_excerpt). */
#define EX(s) dp_excerpt(ex, sizeof ex, (s), strlen(s))

static trace *read_csv(const char *name, const char *buf, size_t len, const trace_opts *o, dp_err *err)
{
    lines L = {buf, len, 0, 0};
    char line[TRACE_LINE_MAX], ex[4 * DP_EXCERPT_MAX + 8];
    int col0, r, rows = 0;
    builder b = {0};
    double last_t = 0, prev_t = 0;
    while ((r = next_line(&L, line, &col0)) != 0) {
        if (r < 0) {
            dp_err_set(err, DP_EINPUT, "%s:%ld:1: line longer than %d characters or holds a NUL byte", name,
                       L.lineno, TRACE_LINE_MAX - 1);
            goto fail;
        }
        if (!line[0])
            continue;
        /* Split at the first ',', ';', tab or run of spaces. */
        char *sep = line + strcspn(line, ",; \t");
        if (!*sep) {
            if (rows == 0 && parse_num(line, &(double){0}) != 0) {
                rows = -1; /* a one-word header line */
                continue;
            }
            dp_err_set(err, DP_EINPUT, "%s:%ld:%d: expected two columns time_s,value (got '%s')", name,
                       L.lineno, col0, EX(line));
            goto fail;
        }
        *sep = '\0';
        char *f2 = sep + 1;
        while (*f2 == ' ' || *f2 == '\t')
            f2++;
        int col2 = col0 + (int)(f2 - line);
        double t = 0, v = 0; /* set by parse_num only on success */
        int bad1 = parse_num(line, &t), bad2 = parse_num(f2, &v);
        if ((bad1 || bad2) && rows == 0) {
            rows = -1; /* header: only as the first line */
            continue;
        }
        if (bad1) {
            dp_err_set(err, DP_EINPUT, "%s:%ld:%d: time is not a finite number (got '%s')", name, L.lineno,
                       col0, EX(line));
            goto fail;
        }
        if (bad2 || strpbrk(f2, ",; \t")) {
            dp_err_set(err, DP_EINPUT, "%s:%ld:%d: value is not a finite number (got '%s')", name, L.lineno,
                       col2, EX(f2));
            goto fail;
        }
        if (rows <= 0 && t != 0) {
            dp_err_set(err, DP_EINPUT, "%s:%ld:%d: the first time must be 0 (got %s)", name, L.lineno, col0,
                       EX(line));
            goto fail;
        }
        if (t < last_t) {
            dp_err_set(err, DP_EINPUT, "%s:%ld:%d: time goes backwards after %g (got %s)", name, L.lineno,
                       col0, last_t, EX(line));
            goto fail;
        }
        if (t > TRACE_MAX_TIME_S) {
            dp_err_set(err, DP_EINPUT, "%s:%ld:%d: time over the limit of %g s (got %.6g)", name, L.lineno,
                       col0, TRACE_MAX_TIME_S, t);
            goto fail;
        }
        if (t > last_t && t - last_t < TRACE_MIN_STEP_S) {
            dp_err_set(err, DP_EINPUT,
                       "%s:%ld:%d: breakpoints closer than %g s cannot be simulated (got %.6g s after %.9g)",
                       name, L.lineno, col0, TRACE_MIN_STEP_S, t - last_t, last_t);
            goto fail;
        }
        if (v < 0) {
            dp_err_set(err, DP_EINPUT, "%s:%ld:%d: negative value (got %s)", name, L.lineno, col2, EX(f2));
            goto fail;
        }
        /* Below this a positive rate only overflows what is computed from
         * it (1 / 1e-320): 1 bit/s for a link, 1e-9 for a speed factor. */
        double vmin = o->value_is_bits ? 1 : 1e-9;
        if (v > 0 && v < vmin) {
            dp_err_set(err, DP_EINPUT, "%s:%ld:%d: a positive value must be at least %s (got %.3g)", name,
                       L.lineno, col2, o->value_is_bits ? "1 bit/s" : "1e-9", v);
            goto fail;
        }
        if (t > last_t) {
            prev_t = last_t;
            last_t = t;
        }
        if (bpush(&b, t, o->value_is_bits ? v / 8 : v)) {
            dp_err_set(err, DP_ENOMEM, "%s: out of memory", name);
            goto fail;
        }
        rows = rows < 0 ? 1 : rows + 1;
    }
    if (rows <= 0) {
        dp_err_set(err, DP_EINPUT, "%s:1:1: empty trace: no time_s,value rows", name);
        goto fail;
    }
    /* Looping: the last row lasts as long as the interval before it (the
     * natural reading of a regularly sampled series). */
    return bfinish(&b, o->loop, o->loop && last_t > 0 ? last_t + (last_t - prev_t) : 0);
fail:
    bfree(&b);
    return NULL;
}

static trace *read_mahimahi(const char *name, const char *buf, size_t len, const trace_opts *o, dp_err *err)
{
    double bin_s = o->bin_s > 0 ? o->bin_s : 1.0;
    if (!isfinite(bin_s) || bin_s < 0.001 || bin_s > 86400) {
        dp_err_set(err, DP_EINPUT, "%s: bin must be between 1 ms and 1 day (got %g s)", name, o->bin_s);
        return NULL;
    }
    /* Pass 1: validate, find the last timestamp. */
    lines L = {buf, len, 0, 0};
    char line[TRACE_LINE_MAX], ex[4 * DP_EXCERPT_MAX + 8];
    int col0, r;
    long long last = -1;
    size_t count = 0;
    while ((r = next_line(&L, line, &col0)) != 0) {
        if (r < 0) {
            dp_err_set(err, DP_EINPUT, "%s:%ld:1: line longer than %d characters or holds a NUL byte", name,
                       L.lineno, TRACE_LINE_MAX - 1);
            return NULL;
        }
        if (!line[0])
            continue;
        if (!is_uint(line) || strlen(line) > 13) {
            dp_err_set(err, DP_EINPUT,
                       "%s:%ld:%d: expected a millisecond timestamp, a whole number <= %lld (got '%s')", name,
                       L.lineno, col0, MAHIMAHI_MAX_MS, EX(line));
            return NULL;
        }
        long long ms = strtoll(line, NULL, 10);
        if (ms > MAHIMAHI_MAX_MS) {
            dp_err_set(err, DP_EINPUT, "%s:%ld:%d: timestamp over the limit of %lld ms (got %s)", name,
                       L.lineno, col0, MAHIMAHI_MAX_MS, EX(line));
            return NULL;
        }
        if (ms < last) {
            dp_err_set(err, DP_EINPUT, "%s:%ld:%d: timestamp goes backwards after %lld (got %s)", name,
                       L.lineno, col0, last, EX(line));
            return NULL;
        }
        last = ms;
        count++;
    }
    if (count == 0) {
        dp_err_set(err, DP_EINPUT, "%s:1:1: empty trace: no timestamps", name);
        return NULL;
    }
    if (last <= 0) {
        dp_err_set(err, DP_EINPUT,
                   "%s:%ld:1: trace has zero length: the last timestamp must be > 0 ms (got %lld)", name,
                   L.lineno, last);
        return NULL;
    }
    double bin_ms = bin_s * 1000;
    double nbd = floor((double)last / bin_ms + 0.5);
    long long nb = nbd < 1 ? 1 : (long long)nbd;
    double real_bin_s = (double)last / 1000 / (double)nb; /* each bin's true length */

    /* Pass 2: emit bins in order. */
    builder b = {0};
    L = (lines){buf, len, 0, 0};
    long long cur = 0, n_in = 0;
    while (next_line(&L, line, &col0) > 0) {
        if (!line[0])
            continue;
        long long ms = strtoll(line, NULL, 10), k;
        if (nb <= LLONG_MAX / (ms + 1))
            k = ms * nb / last;
        else
            k = (long long)floor((double)ms * (double)nb / (double)last);
        if (k >= nb)
            k = nb - 1; /* the last timestamp is where the loop restarts */
        if (k != cur) {
            if (bpush(&b, (double)cur * bin_s, (double)n_in * MAHIMAHI_PKT / real_bin_s) ||
                (k > cur + 1 && bpush(&b, (double)(cur + 1) * bin_s, 0)))
                goto oom;
            cur = k;
            n_in = 0;
        }
        n_in++;
    }
    if (bpush(&b, (double)cur * bin_s, (double)n_in * MAHIMAHI_PKT / real_bin_s))
        goto oom;
    return bfinish(&b, o->loop, (double)nb * bin_s);
oom:
    bfree(&b);
    dp_err_set(err, DP_ENOMEM, "%s: out of memory", name);
    return NULL;
}

trace_format trace_detect_format(const char *name, const char *buf, size_t len)
{
    if (name && (ends_with(name, ".csv") || ends_with(name, ".CSV")))
        return TRACE_FMT_CSV;
    if (!buf)
        return TRACE_FMT_CSV;
    lines L = {buf, len, 0, 0};
    char line[TRACE_LINE_MAX];
    int col0, r, any = 0;
    while ((r = next_line(&L, line, &col0)) != 0) {
        if (r > 0 && !line[0])
            continue;
        if (r < 0 || !is_uint(line))
            return TRACE_FMT_CSV;
        any = 1;
    }
    /* Only comments or blanks: the CSV reader says "empty". */
    return any ? TRACE_FMT_MAHIMAHI : TRACE_FMT_CSV;
}

trace *trace_read_buffer(const char *name, const char *buf, size_t len, const trace_opts *opts, dp_err *err)
{
    trace_opts o = {0};
    if (opts)
        o = *opts;
    if (!name)
        name = "<trace>";
    if (!buf)
        len = 0;
    if (len > (size_t)TRACE_MAX_BYTES) {
        dp_err_set(err, DP_EINPUT, "%s: trace file is larger than the 64 MiB limit (got %zu bytes)", name,
                   len);
        return NULL;
    }
    if (len == 0) {
        dp_err_set(err, DP_EINPUT, "%s:1:1: empty trace file", name);
        return NULL;
    }
    /* A scenario may name any file: one that is not a trace by its first
     * line is refused without quoting a byte of it (`file: /etc/shadow`). */
    long not_csv = dp_csv_sniff(buf, len);
    if (not_csv) {
        dp_err_set(err, DP_EINPUT,
                   "%s:%ld:1: not a trace file: its first line is neither column names nor numbers "
                   "(time_s,value; mahimahi: a millisecond timestamp)",
                   name, not_csv);
        return NULL;
    }
    if (opts && opts->scale_to_mean != 0 && !(opts->scale_to_mean > 0 && isfinite(opts->scale_to_mean))) {
        dp_err_set(err, DP_EINPUT, "%s: target mean must be positive and finite (got %g)", name,
                   opts->scale_to_mean);
        return NULL;
    }
    trace_format f = o.format == TRACE_FMT_AUTO ? trace_detect_format(name, buf, len) : o.format;
    trace *t =
        f == TRACE_FMT_MAHIMAHI ? read_mahimahi(name, buf, len, &o, err) : read_csv(name, buf, len, &o, err);
    if (!t)
        return NULL;
    if (o.scale_to_mean > 0) {
        double m = trace_mean(t);
        if (!(m > 0)) {
            dp_err_set(err, DP_EINPUT, "%s: cannot rescale to a mean: the trace's mean is 0", name);
            trace_free(t);
            return NULL;
        }
        double k = o.scale_to_mean / m;
        for (size_t i = 0; i < t->n; i++) {
            t->value[i] *= k;
            if (!isfinite(t->value[i])) {
                dp_err_set(err, DP_EINPUT, "%s: rescaling to mean %g overflows", name, o.scale_to_mean);
                trace_free(t);
                return NULL;
            }
        }
    }
    return t;
}

trace *trace_read_file(const char *path, const trace_opts *opts, dp_err *err)
{
    if (!path || !*path) {
        dp_err_set(err, DP_EINPUT, "trace file name is empty");
        return NULL;
    }
    size_t n;
    char *buf = dp_read_file(path, "trace file", TRACE_MAX_BYTES, &n, err);
    if (!buf)
        return NULL;
    trace *t = trace_read_buffer(path, buf, n, opts, err);
    dp_free(buf);
    return t;
}

/* ---- queries ----------------------------------------------------------- */

/* Last index k with t_s[k] <= x (x >= 0). */
static size_t find_seg(const trace *t, double x)
{
    size_t lo = 0, hi = t->n; /* answer in [lo, hi) */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->t_s[mid] <= x)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

static int looping(const trace *t)
{
    return t->loop && t->n > 1 && t->period_s > t->t_s[t->n - 1];
}

/* Start of segment k in period c.  Every query derives breakpoint times
 * from this one expression, so the time trace_next_change returns looks
 * up, in trace_value_at, to exactly the segment it announced: the period
 * index and the offset are never recovered by subtracting a rounded
 * c * P from the time, which could land back in the previous segment. */
static double seg_start(const trace *t, double c, size_t k)
{
    return c * t->period_s + t->t_s[k];
}

/* Locate x: the period c and segment k with seg_start(c, k) <= x, k the
 * last such index, and x < seg_start(c + 1, 0).  seg_start is monotone in
 * k for a fixed c (adding a larger t_s never rounds lower), so a binary
 * search over the rounded starts is exact. */
static size_t locate(const trace *t, double x, double *c_out)
{
    if (!looping(t)) {
        *c_out = 0;
        return find_seg(t, x);
    }
    double c = floor(x / t->period_s);
    if (!(c >= 0))
        c = 0;
    /* x / P rounds, so c may be one off either way; the bound only matters
     * past 2^53 periods, where c + 1 == c. */
    for (int i = 0; i < 4 && c > 0 && seg_start(t, c, 0) > x; i++)
        c--;
    for (int i = 0; i < 4 && seg_start(t, c + 1, 0) <= x; i++)
        c++;
    size_t lo = 0, hi = t->n;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (seg_start(t, c, mid) <= x)
            lo = mid;
        else
            hi = mid;
    }
    *c_out = c;
    return lo;
}

double trace_value_at(const trace *t, double x)
{
    if (!t || t->n == 0)
        return 0;
    if (!(x > 0))
        return t->value[0];
    double c;
    return t->value[locate(t, x, &c)];
}

double trace_next_change(const trace *t, double x, double *value_out)
{
    if (!t || t->n == 0) {
        if (value_out)
            *value_out = 0;
        return INFINITY;
    }
    if (t->n == 1 || isnan(x)) {
        if (value_out)
            *value_out = t->value[t->n - 1];
        return INFINITY;
    }
    if (x < 0)
        x = 0;
    double c, cand, val;
    size_t k = locate(t, x, &c);
    if (!looping(t)) {
        if (k + 1 >= t->n || t->t_s[k + 1] <= x) {
            if (value_out)
                *value_out = t->value[t->n - 1];
            return INFINITY;
        }
        cand = t->t_s[k + 1];
        val = t->value[k + 1];
    } else {
        double wrap = seg_start(t, c + 1, 0);
        if (k + 1 < t->n && seg_start(t, c, k + 1) < wrap) {
            cand = seg_start(t, c, k + 1);
            val = t->value[k + 1];
        } else if (t->value[0] != t->value[k]) {
            cand = wrap;
            val = t->value[0];
        } else { /* the wrap is no change: the next one is segment 1 of the next period */
            cand = seg_start(t, c + 1, 1);
            val = t->value[1];
        }
    }
    /* Only past 2^53 periods (or times near DBL_MAX) can the next start
     * round onto x; no later change can be told apart there. */
    if (!(cand > x) || !isfinite(cand)) {
        if (value_out)
            *value_out = t->value[k];
        return INFINITY;
    }
    if (value_out)
        *value_out = val;
    return cand;
}

double trace_max_after(const trace *t, double x)
{
    if (!t || t->n == 0)
        return 0;
    size_t k = 0;
    double c;
    if (!looping(t) && !isnan(x))
        k = locate(t, x < 0 ? 0 : x, &c);
    double m = t->value[k];
    for (size_t i = k + 1; i < t->n; i++)
        m = t->value[i] > m ? t->value[i] : m;
    return m;
}

double trace_mean_listed(const trace *t)
{
    if (!t || t->n == 0)
        return 0;
    if (t->n == 1)
        return t->value[0];
    /* Over one period when the trace has one (mahimahi files always know
     * their length), else over [0, t_s[n-1]]. */
    double end = t->period_s > t->t_s[t->n - 1] ? t->period_s : t->t_s[t->n - 1];
    double sum = 0;
    for (size_t k = 0; k < t->n; k++) {
        double next = k + 1 < t->n ? t->t_s[k + 1] : end;
        sum += t->value[k] * (next - t->t_s[k]);
    }
    return sum / end;
}

double trace_mean(const trace *t)
{
    if (!t || t->n == 0)
        return 0;
    /* The long-run mean, what a run long enough sees: one period's when the
     * trace repeats; without repeats the last value holds for ever, so it
     * outweighs any finite prefix (issue 11: averaging only the listed part
     * called 10 Mbit/s then 1 Gbit/s for ever "10 Mbps"). */
    return looping(t) ? trace_mean_listed(t) : t->value[t->n - 1];
}

/* Integral of the trace over [0, x] within its points (0 <= x; for a
 * looping trace x <= period_s, the last value lasting to period_s). */
static double integral_in(const trace *t, double x)
{
    double acc = 0;
    for (size_t k = 0; k < t->n && t->t_s[k] < x; k++) {
        double next = k + 1 < t->n ? t->t_s[k + 1] : looping(t) ? t->period_s : INFINITY;
        acc += t->value[k] * (fmin(next, x) - t->t_s[k]);
    }
    return acc;
}

/* Integral of the trace over [0, x] (x >= 0), through the held last value
 * or the repeats. */
static double integral_to(const trace *t, double x)
{
    if (!looping(t))
        return integral_in(t, x);
    double c;
    locate(t, x, &c); /* the period x falls in, as trace_value_at sees it */
    double r = x - c * t->period_s;
    if (r < 0)
        r = 0;
    return c * integral_in(t, t->period_s) + integral_in(t, r);
}

double trace_mean_over(const trace *t, double t0_s, double t1_s)
{
    if (!t || t->n == 0)
        return 0;
    if (!(t0_s > 0))
        t0_s = 0;
    if (t->n == 1 || !(t1_s > t0_s))
        return trace_value_at(t, t0_s);
    if (!isfinite(t1_s)) /* the long run: one period, or the value held forever */
        return looping(t) ? trace_mean(t) : t->value[t->n - 1];
    return (integral_to(t, t1_s) - integral_to(t, t0_s)) / (t1_s - t0_s);
}
