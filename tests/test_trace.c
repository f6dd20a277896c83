/* test_trace.c: CSV and mahimahi readers, queries with and without loop,
 * rescaling, outages, and the real traces in traces/real/ checked against
 * the statistics their README publishes. */
#include "trace.h"

#include <criterion/criterion.h>
#include "leaks.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long live0;
static void setup(void)
{
    live0 = dp_alloc_live();
}
static void teardown(void)
{
    leaks_verify(live0);
}
TestSuite(trace, .init = setup, .fini = teardown);

static trace *csv(const char *text, int loop, int bits)
{
    trace_opts o = {TRACE_FMT_CSV, 0, 0, loop, bits};
    dp_err e = {0};
    trace *t = trace_read_buffer("t.csv", text, strlen(text), &o, &e);
    cr_assert_not_null(t, "%s", e.msg);
    return t;
}

static void csv_bad(const char *text, const char *needle)
{
    trace_opts o = {TRACE_FMT_CSV, 0, 0, 0, 1};
    dp_err e = {0};
    trace *t = trace_read_buffer("bad.csv", text, strlen(text), &o, &e);
    cr_assert_null(t, "'%s' should be rejected", text);
    cr_assert_eq(e.code, DP_EINPUT);
    cr_assert(strstr(e.msg, needle), "message lacks '%s': %s", needle, e.msg);
}

static char *real_path(const char *name)
{
    static char buf[1024];
    const char *src = getenv("DPSIM_SRC");
    snprintf(buf, sizeof buf, "%s/traces/real/%s", src ? src : "..", name);
    return buf;
}

Test(trace, csv_step_bits_to_bytes_and_header)
{
    trace *t = csv("time_s,bandwidth_bps\n# comment\n0,50000000\n10,100000000\n", 0, 1);
    cr_assert_eq(t->n, 2);
    cr_assert_float_eq(t->value[0], 6.25e6, 1e-6);
    cr_assert_float_eq(t->value[1], 12.5e6, 1e-6);
    cr_assert_float_eq(trace_value_at(t, 0), 6.25e6, 1e-6);
    cr_assert_float_eq(trace_value_at(t, 9.999), 6.25e6, 1e-6);
    cr_assert_float_eq(trace_value_at(t, 10), 12.5e6, 1e-6);
    cr_assert_float_eq(trace_value_at(t, 1e6), 12.5e6, 1e-6);
    double v;
    cr_assert_float_eq(trace_next_change(t, 0, &v), 10, 1e-12);
    cr_assert_float_eq(v, 12.5e6, 1e-6);
    cr_assert(isinf(trace_next_change(t, 10, &v)));
    cr_assert(isinf(trace_next_change(t, 50, &v)));
    cr_assert_float_eq(v, 12.5e6, 1e-6);
    trace_free(t);
}

Test(trace, csv_merges_equal_values_and_same_time_rows)
{
    trace *t = csv("0,1\n1,1\n2,3\n2,5\n3,5\n4,2\n", 0, 0);
    cr_assert_eq(t->n, 3);
    cr_assert_float_eq(t->t_s[1], 2, 1e-12);
    cr_assert_float_eq(t->value[1], 5, 1e-12);
    cr_assert_float_eq(t->t_s[2], 4, 1e-12);
    trace_free(t);
}

Test(trace, loop_repeats_with_period)
{
    /* Looping: the last row lasts as long as the interval before it. */
    trace *t = csv("0,8\n10,16\n", 1, 1);
    cr_assert_eq(t->loop, 1);
    cr_assert_float_eq(t->period_s, 20, 1e-12);
    cr_assert_float_eq(trace_value_at(t, 25), 1, 1e-12);
    cr_assert_float_eq(trace_value_at(t, 35), 2, 1e-12);
    cr_assert_float_eq(trace_value_at(t, 40), 1, 1e-12);
    double v;
    cr_assert_float_eq(trace_next_change(t, 15, &v), 20, 1e-9);
    cr_assert_float_eq(v, 1, 1e-12);
    cr_assert_float_eq(trace_next_change(t, 20, &v), 30, 1e-9);
    cr_assert_float_eq(v, 2, 1e-12);
    cr_assert_float_eq(trace_next_change(t, 1000005, &v), 1000010, 1e-6);
    cr_assert_float_eq(trace_mean(t), 1.5, 1e-12);
    trace_free(t);
}

Test(trace, loop_wrap_with_equal_ends_is_not_a_change)
{
    /* values 1,2,1 over period 3: the wrap 1 -> 1 is no breakpoint. */
    trace *t = csv("0,1\n1,2\n2,1\n", 1, 0);
    cr_assert_float_eq(t->period_s, 3, 1e-12);
    double v;
    cr_assert_float_eq(trace_next_change(t, 2.5, &v), 4, 1e-9);
    cr_assert_float_eq(v, 2, 1e-12);
    /* Walking the changes never goes backwards nor stalls. */
    double x = 0;
    for (int i = 0; i < 100; i++) {
        double nx = trace_next_change(t, x, &v);
        cr_assert(nx > x);
        cr_assert_float_eq(trace_value_at(t, nx), v, 1e-12);
        x = nx;
    }
    cr_assert_float_eq(x, 149, 1e-6); /* changes at 1, 2, 4, 5, ...: 49 periods + 2 */
    trace_free(t);
}

Test(trace, zero_capacity_stretches_are_kept)
{
    trace_opts o = {TRACE_FMT_AUTO, 0, 0, 0, 1};
    dp_err e = {0};
    trace *t = trace_read_file("data/trace-outage.csv", &o, &e);
    cr_assert_not_null(t, "%s", e.msg);
    cr_assert_eq(t->n, 3);
    cr_assert_float_eq(trace_value_at(t, 2), 0, 0);
    double v;
    cr_assert_float_eq(trace_next_change(t, 1.5, &v), 3, 1e-12);
    cr_assert_float_eq(v, 2e6, 1e-6);
    trace_free(t);
    /* Rescaled, the outage stays an outage. */
    o.scale_to_mean = 3e6;
    t = trace_read_file("data/trace-outage.csv", &o, &e);
    cr_assert_not_null(t, "%s", e.msg);
    cr_assert_float_eq(trace_mean(t), 3e6, 1e-3);
    cr_assert_eq(trace_value_at(t, 2), 0);
    trace_free(t);
}

Test(trace, rescale_to_mean)
{
    trace_opts o = {TRACE_FMT_CSV, 0, 40e6, 1, 1};
    dp_err e = {0};
    const char *txt = "0,50000000\n10,100000000\n";
    trace *t = trace_read_buffer("s.csv", txt, strlen(txt), &o, &e);
    cr_assert_not_null(t, "%s", e.msg);
    cr_assert_float_eq(trace_mean(t), 40e6, 1e-3);
    cr_assert_float_eq(t->value[1] / t->value[0], 2, 1e-12);
    trace_free(t);
    /* All-zero traces cannot be rescaled. */
    const char *z = "0,0\n5,0\n";
    cr_assert_null(trace_read_buffer("z.csv", z, strlen(z), &o, &e));
    cr_assert(strstr(e.msg, "mean is 0"), "%s", e.msg);
    o.scale_to_mean = -1;
    cr_assert_null(trace_read_buffer("s.csv", txt, strlen(txt), &o, &e));
    cr_assert(strstr(e.msg, "target mean"), "%s", e.msg);
}

Test(trace, csv_bad_input)
{
    csv_bad("", "empty trace file");
    csv_bad("# only a comment\n\n", "empty trace");
    csv_bad("0,1\n1,x\n", "bad.csv:2:3: value is not a finite number (got 'x')");
    csv_bad("0,1\n1,nan\n", "bad.csv:2:3:");
    csv_bad("0,1\n1,inf\n", "not a finite number");
    csv_bad("0,1\n1,-5\n", "bad.csv:2:3: negative value (got -5)");
    csv_bad("0,1\n3,1\n2,1\n", "bad.csv:3:1: time goes backwards after 3 (got 2)");
    csv_bad("1,5\n", "the first time must be 0");
    csv_bad("0,1\n5\n", "expected two columns");
    csv_bad("0,1\n1,2,3\n", "bad.csv:2:3: value is not a finite number (got '2,3')");
    {
        trace_opts o = {TRACE_FMT_CSV, 0, 0, 0, 1};
        dp_err e = {0};
        cr_assert_null(trace_read_buffer("nul.csv", "0,1\n\0,1\n", 8, &o, &e));
        cr_assert(strstr(e.msg, "nul.csv:2:1: line longer than 255 characters or holds a NUL byte"), "%s",
                  e.msg);
    }
    char big[600];
    memset(big, '1', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    csv_bad(big, "longer than");
    /* A file that is not a trace by its first line is refused naming the
     * line, quoting nothing of it (issue 38: `file: /etc/shadow`). */
    csv_bad("root:$6$salt$SECRETHASH:19000:0:99999:7:::\n", "bad.csv:1:1: not a trace file");
    csv_bad("# hosts\n127.0.0.1\tlocalhost\n", "bad.csv:2:1: not a trace file");
    csv_bad("\x89PNG\r\n\x1a\n", "bad.csv:1:1: not a trace file");
    {
        trace_opts o = {TRACE_FMT_CSV, 0, 0, 0, 1};
        dp_err e = {0};
        const char *pw = "root:$6$salt$SECRETHASH:19000:0:99999:7:::\n";
        cr_assert_null(trace_read_buffer("pw", pw, strlen(pw), &o, &e));
        cr_assert(!strstr(e.msg, "SECRET") && !strstr(e.msg, "root"), "%s", e.msg);
    }
    /* A wrong line of a file that is a trace: an excerpt of 40 characters. */
    csv_bad("time_s,value\n0,1\nroot:$6$salt$SECRETHASHSECRETHASHSECRETHASH:TAIL\n",
            "bad.csv:3:1: expected two columns time_s,value "
            "(got 'root:$6$salt$SECRETHASHSECRETHASHSECRETH...')");
}

Test(trace, files_missing_directory_empty_malformed)
{
    trace_opts o = {TRACE_FMT_AUTO, 0, 0, 0, 1};
    dp_err e = {0};
    cr_assert_null(trace_read_file("data/no-such-trace.csv", &o, &e));
    cr_assert(strstr(e.msg, "data/no-such-trace.csv: cannot open trace file"), "%s", e.msg);
    cr_assert_null(trace_read_file("data", &o, &e));
    cr_assert(strstr(e.msg, "is a directory"), "%s", e.msg);
    cr_assert_null(trace_read_file("data/empty.csv", &o, &e));
    cr_assert(strstr(e.msg, "data/empty.csv:1:1: empty trace file"), "%s", e.msg);
    cr_assert_null(trace_read_file("data/trace-negative.csv", &o, &e));
    cr_assert(strstr(e.msg, "data/trace-negative.csv:3:3: negative value (got -1)"), "%s", e.msg);
    cr_assert_null(trace_read_file("data/trace-backwards.csv", &o, &e));
    cr_assert(strstr(e.msg, "trace-backwards.csv:3:1: time goes backwards"), "%s", e.msg);
    cr_assert_null(trace_read_file("data/trace-backwards.mahimahi", &o, &e));
    cr_assert(strstr(e.msg, "trace-backwards.mahimahi:3:1: timestamp goes backwards after 5 (got 3)"), "%s",
              e.msg);
    cr_assert_null(trace_read_file("", &o, &e));
    cr_assert_eq(e.code, DP_EINPUT);
}

Test(trace, mahimahi_small_and_bad)
{
    trace_opts o = {TRACE_FMT_MAHIMAHI, 0, 0, 1, 0};
    dp_err e = {0};
    /* One line "1": one packet per ms, looping = 12 Mbit/s constant. */
    trace *t = trace_read_buffer("one", "1\n", 2, &o, &e);
    cr_assert_not_null(t, "%s", e.msg);
    cr_assert_eq(t->n, 1);
    cr_assert_float_eq(trace_mean(t) * 8, 12e6, 1e-3);
    trace_free(t);
    /* Two packets in second 0, none in second 1, one in second 2. */
    const char *txt = "0\n500\n2500\n3000\n";
    t = trace_read_buffer("m", txt, strlen(txt), &o, &e);
    cr_assert_not_null(t, "%s", e.msg);
    cr_assert_float_eq(t->period_s, 3, 1e-12);
    cr_assert_float_eq(trace_value_at(t, 0.5), 3000, 1e-9);
    cr_assert_eq(trace_value_at(t, 1.5), 0);
    cr_assert_float_eq(trace_value_at(t, 2.5), 3000, 1e-9);
    cr_assert_float_eq(trace_value_at(t, 3.5), 3000, 1e-9);
    cr_assert_float_eq(trace_mean(t), 4 * 1500.0 / 3, 1e-9);
    trace_free(t);
    /* Bins of 100 ms. */
    o.bin_s = 0.1;
    t = trace_read_buffer("m", txt, strlen(txt), &o, &e);
    cr_assert_not_null(t, "%s", e.msg);
    cr_assert_float_eq(trace_value_at(t, 0.05), 15000, 1e-6);
    cr_assert_float_eq(trace_value_at(t, 0.15), 0, 1e-6);
    cr_assert_float_eq(trace_value_at(t, 0.55), 15000, 1e-6);
    trace_free(t);
    o.bin_s = 0;
    cr_assert_null(trace_read_buffer("m", "0\n0\n", 4, &o, &e));
    cr_assert(strstr(e.msg, "zero length"), "%s", e.msg);
    cr_assert_null(trace_read_buffer("m", "5\n-3\n", 5, &o, &e));
    cr_assert(strstr(e.msg, "m:2:1: expected a millisecond timestamp"), "%s", e.msg);
    cr_assert_null(trace_read_buffer("m", "99999999999999999999\n", 21, &o, &e));
    cr_assert_eq(e.code, DP_EINPUT);
    cr_assert_null(trace_read_buffer("m", "2000000000000\n", 14, &o, &e));
    cr_assert(strstr(e.msg, "over the limit"), "%s", e.msg);
    o.bin_s = 1e-9;
    cr_assert_null(trace_read_buffer("m", "5\n", 2, &o, &e));
    cr_assert(strstr(e.msg, "bin must be"), "%s", e.msg);
}

Test(trace, auto_detects_format)
{
    cr_assert_eq(trace_detect_format("x.csv", "1\n2\n", 4), TRACE_FMT_CSV);
    cr_assert_eq(trace_detect_format("x.down", "1\n2\n", 4), TRACE_FMT_MAHIMAHI);
    cr_assert_eq(trace_detect_format("x.txt", "0 5\n", 4), TRACE_FMT_CSV);
    cr_assert_eq(trace_detect_format("x", "# c\n", 4), TRACE_FMT_CSV);
}

Test(trace, constant_and_copy)
{
    trace *c = trace_constant(5);
    cr_assert_eq(c->n, 1);
    cr_assert_eq(trace_value_at(c, 123), 5);
    double v;
    cr_assert(isinf(trace_next_change(c, 0, &v)));
    cr_assert_eq(v, 5);
    trace *d = trace_copy(c);
    cr_assert_eq(d->value[0], 5);
    cr_assert_neq(d->value, c->value);
    trace_free(c);
    trace_free(d);
    trace_free(NULL);
    cr_assert_null(trace_constant(NAN));
    cr_assert_null(trace_constant(-1));
}

typedef struct real_case {
    const char *file;
    double seconds, mean_mbps, max_mbps;
    int zero_bins;
} real_case;

Test(trace, real_mahimahi_traces_match_readme)
{
    /* Statistics from traces/real/README.md (1 s bins, Mbit/s). */
    const real_case cases[] = {
        {"mahimahi-ATT-LTE-driving-2016.down", 120, 4.56, 27.55, 0},
        {"mahimahi-ATT-LTE-driving-2016.up", 120, 1.91, 12.77, 4},
        {"mahimahi-Verizon-LTE-short.down", 140, 5.03, 16.78, 0},
        {"mahimahi-Verizon-LTE-short.up", 140, 5.95, 12.95, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        trace_opts o = {TRACE_FMT_AUTO, 1.0, 0, 1, 0};
        dp_err e = {0};
        trace *t = trace_read_file(real_path(cases[i].file), &o, &e);
        cr_assert_not_null(t, "%s", e.msg);
        cr_assert_float_eq(t->period_s, cases[i].seconds, 1e-9, "%s", cases[i].file);
        cr_assert_float_eq(trace_mean(t) * 8 / 1e6, cases[i].mean_mbps, 0.005, "%s mean %g", cases[i].file,
                           trace_mean(t) * 8 / 1e6);
        double mx = 0;
        int zeros = 0;
        for (int s = 0; s < (int)cases[i].seconds; s++) {
            double v = trace_value_at(t, s + 0.5) * 8 / 1e6;
            mx = v > mx ? v : mx;
            zeros += v == 0;
        }
        cr_assert_float_eq(mx, cases[i].max_mbps, 0.01 * cases[i].max_mbps, "%s max %g", cases[i].file, mx);
        cr_assert_eq(zeros, cases[i].zero_bins, "%s zero bins %d", cases[i].file, zeros);
        /* Looping: one period later the same values. */
        cr_assert_float_eq(trace_value_at(t, 7.5), trace_value_at(t, 7.5 + t->period_s), 1e-9);
        /* Rescale to a WAN-like mean keeps the shape. */
        o.scale_to_mean = 50e6;
        trace *r = trace_read_file(real_path(cases[i].file), &o, &e);
        cr_assert_not_null(r, "%s", e.msg);
        cr_assert_float_eq(trace_mean(r), 50e6, 1);
        cr_assert_float_eq(r->value[3] / r->value[5], t->value[3] / t->value[5], 1e-9);
        trace_free(r);
        trace_free(t);
    }
}

Test(trace, repo_example_traces_load)
{
    const char *src = getenv("DPSIM_SRC");
    char p[1024];
    snprintf(p, sizeof p, "%s/traces/step-50-100Mbps.csv", src ? src : "..");
    trace_opts o = {TRACE_FMT_AUTO, 0, 0, 1, 1};
    dp_err e = {0};
    trace *t = trace_read_file(p, &o, &e);
    cr_assert_not_null(t, "%s", e.msg);
    cr_assert_float_eq(trace_mean(t) * 8, 75e6, 1e-3);
    trace_free(t);
    snprintf(p, sizeof p, "%s/traces/verizon-lte-down-1s.csv", src ? src : "..");
    t = trace_read_file(p, &o, &e);
    cr_assert_not_null(t, "%s", e.msg);
    cr_assert_float_eq(t->period_s, 140, 1e-9);
    cr_assert_float_eq(trace_mean(t) * 8 / 1e6, 5.03, 0.005);
    trace_free(t);
}

/* ---- property: a saturating flow receives the trace's integral ---------- */

#include "engine.h"
#include "net.h"

static uint64_t rng_state;
static double urand(void) /* splitmix64 -> [0, 1) */
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) / 9007199254740992.0;
}

/* Integral of the trace over [0, H], in long double, from the definition. */
static long double integral(const trace *t, double H)
{
    long double sum = 0, base = 0;
    int loop = t->loop && t->n > 1 && t->period_s > t->t_s[t->n - 1];
    if (loop) {
        long double per = 0;
        for (size_t k = 0; k < t->n; k++) {
            long double end = k + 1 < t->n ? t->t_s[k + 1] : t->period_s;
            per += (long double)t->value[k] * (end - t->t_s[k]);
        }
        long double c = floorl((long double)H / t->period_s);
        sum = c * per;
        base = c * (long double)t->period_s;
    }
    for (size_t k = 0; k < t->n; k++) {
        long double a = base + t->t_s[k];
        long double b = k + 1 < t->n ? base + t->t_s[k + 1] : (loop ? base + t->period_s : INFINITY);
        if (a >= H)
            break;
        if (b > H)
            b = H;
        sum += (long double)t->value[k] * (b - a);
    }
    return sum;
}

static void noop(sim_engine *e, void *ctx, uint64_t id)
{
    (void)e;
    (void)ctx;
    (void)id;
}

/* Bytes a flow with nothing but the trace's link in its way delivers by H. */
static double delivered(const trace *t, double H)
{
    sim_engine *e = sim_engine_new(NULL);
    net *n = net_new(e, NULL);
    cr_assert(net_link_add(n, 0, t, "l") == 0);
    double bytes = 2 * (double)integral(t, H) + 1;
    int path[1] = {0};
    uint64_t id = net_flow_start(n, path, 1, bytes, 0, INFINITY, NULL, NULL);
    cr_assert(id);
    cr_assert(sim_at(e, H, noop, NULL));
    sim_run(e, H);
    cr_assert_eq(sim_now(e), H);
    double got = bytes - net_flow_remaining(n, id);
    net_free(n);
    sim_engine_free(e);
    return got;
}

Test(trace, property_saturating_flow_gets_the_integral)
{
    rng_state = 19;
    char *buf = malloc(1 << 20);
    cr_assert_not_null(buf);
    for (int i = 0; i < 48; i++) {
        int mahi = i % 2, loop = (i / 2) % 2 || i % 8 == 7;
        double step = pow(10, -3 + 4 * urand()); /* 1 ms .. 10 s */
        trace_opts o = {mahi ? TRACE_FMT_MAHIMAHI : TRACE_FMT_CSV, 0, 0, loop, 1};
        size_t len = 0;
        if (mahi) {
            /* bin = step; packets over a span of 2 .. 200 bins, with gaps */
            o.bin_s = step;
            double span_ms = fmax(1, step * 1000 * (2 + 198 * urand()));
            long long ms = 0;
            while (ms < (long long)span_ms && len < (1 << 20) - 32) {
                len += (size_t)sprintf(buf + len, "%lld\n", ms);
                ms += urand() < 0.3 ? (long long)(urand() * step * 3000) : (urand() < 0.5);
            }
            len += (size_t)sprintf(buf + len, "%lld\n", (long long)span_ms);
        } else {
            int rows = 2 + (int)(urand() * 40);
            if (i % 12 == 4) { /* the finest accepted trace: 2 rows, period 2 us */
                step = TRACE_MIN_STEP_S;
                rows = 2;
            }
            double t = 0;
            for (int r = 0; r < rows; r++) {
                double v = urand() < 0.2 ? 0 : pow(10, 3 + 6 * urand());
                len += (size_t)sprintf(buf + len, "%.17g,%.17g\n", t, v);
                t += step * (i % 12 == 4 ? 1 : 1 + (int)(urand() * 3));
            }
        }
        dp_err err = {0};
        trace *t = trace_read_buffer(mahi ? "p.mahi" : "p.csv", buf, len, &o, &err);
        cr_assert_not_null(t, "case %d: %s", i, err.msg);
        double span = t->loop ? t->period_s : t->t_s[t->n - 1] + step;
        /* long: hundreds of periods, capped at ~1e5 breakpoints and 10^4 s */
        double H = fmin(1e4, 1e5 * span / (double)t->n) * (0.5 + 0.5 * urand());
        H = fmax(H, 2 * span);
        long double want = integral(t, H);
        double got = delivered(t, H);
        cr_expect(
            fabsl(got - want) <= 1e-9 * fmaxl(want, 1e-300L),
            "case %d (%s, loop %d, n %zu, period %.9g, H %.9g): delivered %.17g, integral %.17Lg (ratio "
            "%.12g)",
            i, mahi ? "mahimahi" : "csv", t->loop, t->n, t->period_s, H, got, want,
            (double)(got / (double)want));
        trace_free(t);
    }
    free(buf);
}

/* Means over a window, by hand: the step 1 B/s on [0, 10), 2 B/s after. */
Test(trace, mean_over_a_window)
{
    trace *t = csv("0,8\n10,16\n", 0, 1);               /* held: 2 from t = 10 on */
    cr_assert_float_eq(trace_mean_listed(t), 1, 1e-12); /* the points alone: [0, 10] */
    cr_assert_float_eq(trace_mean(t), 2, 1e-12);        /* long run: the held last value */
    cr_assert_float_eq(trace_mean_over(t, 0, 10), 1, 1e-12);
    cr_assert_float_eq(trace_mean_over(t, 0, 20), 1.5, 1e-12);
    cr_assert_float_eq(trace_mean_over(t, 0, 110), 210.0 / 110, 1e-12);
    cr_assert_float_eq(trace_mean_over(t, 5, 15), 1.5, 1e-12);
    cr_assert_float_eq(trace_mean_over(t, 12, 30), 2, 1e-12);
    cr_assert_float_eq(trace_mean_over(t, 3, 3), 1, 1e-12); /* empty window: the value there */
    cr_assert_float_eq(trace_mean_over(t, 0, INFINITY), 2, 1e-12);
    trace_free(t);
    t = csv("0,8\n10,16\n", 1, 1); /* looped: period 20 */
    cr_assert_float_eq(trace_mean_over(t, 0, 20), 1.5, 1e-12);
    cr_assert_float_eq(trace_mean_over(t, 0, 30), 40.0 / 30, 1e-12);
    cr_assert_float_eq(trace_mean_over(t, 15, 45), 45.0 / 30, 1e-12);
    cr_assert_float_eq(trace_mean_over(t, 1e6, 1e6 + 20), 1.5, 1e-9);
    cr_assert_float_eq(trace_mean_over(t, 0, INFINITY), 1.5, 1e-12);
    trace_free(t);
    t = trace_constant(7);
    cr_assert_float_eq(trace_mean_over(t, 2, 9), 7, 1e-12);
    trace_free(t);
}

typedef struct {
    sim_engine *e;
    double t;
} done_at;
static void on_done_at(void *ctx, uint64_t id)
{
    (void)id;
    done_at *d = ctx;
    d->t = sim_now(d->e);
}

/* Issue 11 item 1: 10 Mbit/s for one second, then 1 Gbit/s for ever.  Its
 * mean is the long-run one, 1 Gbit/s (it was "10 Mbps", the listed part
 * alone); `mean: 100Mbps` scales it by 0.1, so 50 MB take 1 s at 1 Mbit/s
 * (125 kB) and then 49.875 MB at 100 Mbit/s: 4.99 s by hand (it was 1.03 s:
 * a 10x scale gave 10 Gbit/s for ever). */
Test(trace, non_looping_mean_is_the_long_run_one)
{
    const char *txt = "0,10000000\n1,1000000000\n";
    trace_opts o = {TRACE_FMT_CSV, 0, 0, 0, 1};
    dp_err e = {0};
    trace *t = trace_read_buffer("a.csv", txt, strlen(txt), &o, &e);
    cr_assert_not_null(t, "%s", e.msg);
    cr_expect_float_eq(trace_mean(t) * 8, 1e9, 1e-3);
    cr_expect_float_eq(trace_mean_listed(t) * 8, 1e7, 1e-6);
    cr_expect_float_eq(trace_mean_over(t, 0, INFINITY), trace_mean(t), 1e-9);
    trace_free(t);
    o.scale_to_mean = 100e6 / 8;
    t = trace_read_buffer("a.csv", txt, strlen(txt), &o, &e);
    cr_assert_not_null(t, "%s", e.msg);
    cr_expect_float_eq(trace_value_at(t, 0.5) * 8, 1e6, 1e-6);
    cr_expect_float_eq(trace_value_at(t, 2) * 8, 100e6, 1e-3);
    /* 50 MB through a link that follows it alone: the trace's integral */
    sim_engine *eng = sim_engine_new(&e);
    net *nw = net_new(eng, &e);
    cr_assert(eng && nw);
    int l = net_link_add(nw, 0, t, "l");
    cr_assert_geq(l, 0);
    int path[1] = {l};
    done_at d = {eng, -1};
    cr_assert(net_flow_start(nw, path, 1, 50e6, 0, INFINITY, on_done_at, &d));
    sim_run(eng, 100);
    cr_expect_float_eq(d.t, 4.99, 1e-9, "50 MB done at %.6f s", d.t);
    net_free(nw);
    sim_engine_free(eng);
    trace_free(t);
}

/* Issue 11: what a looping mahimahi period carries.  5 packets at 0, 0.5,
 * 1, 1.5 and 2.5 s, 1 s bins: the period rounds 2.5 s to 3 bins, each bin
 * holds 2.5/3 s of the file (2, 2 and 1 packets), rates 3600, 3600 and
 * 1800 B/s.  The mean is the file's rate, 7500 B / 2.5 s = 3000 B/s; one
 * 3 s period carries 9000 B, not the file's 7500 B. */
Test(trace, mahimahi_period_carries_the_rate)
{
    const char *txt = "0\n500\n1000\n1500\n2500\n";
    trace_opts o = {TRACE_FMT_MAHIMAHI, 1.0, 0, 1, 0};
    dp_err e = {0};
    trace *t = trace_read_buffer("m.down", txt, strlen(txt), &o, &e);
    cr_assert_not_null(t, "%s", e.msg);
    cr_expect_float_eq(t->period_s, 3, 1e-12);
    cr_expect_float_eq(trace_value_at(t, 0.5), 3600, 1e-9);
    cr_expect_float_eq(trace_value_at(t, 2.5), 1800, 1e-9);
    cr_expect_float_eq(trace_mean(t), 3000, 1e-9);
    cr_expect_float_eq(trace_mean_over(t, 0, 3) * 3, 9000, 1e-6);
    trace_free(t);
}

/* trace_max_after: does a link at 0 ever carry again (the runtime's
 * "stalled for good" check)?  Ending at 0: not after its last rise; looping:
 * whenever the period holds a positive value. */
Test(trace, max_after_tells_if_a_zero_ever_rises)
{
    trace *t = csv("time_s,bps\n0,8\n10,0\n20,4\n30,0\n", 0, 0);
    cr_assert_float_eq(trace_max_after(t, 0), 8, 0);
    cr_assert_float_eq(trace_max_after(t, 15), 4, 0);
    cr_assert_float_eq(trace_max_after(t, 25), 4, 0);
    cr_assert_float_eq(trace_max_after(t, 30), 0, 0);
    cr_assert_float_eq(trace_max_after(t, 1e9), 0, 0);
    trace_free(t);
    t = csv("time_s,bps\n0,8\n10,0\n20,4\n30,0\n", 1, 0); /* loops: 8 comes back */
    cr_assert_float_eq(trace_max_after(t, 1e9 + 35), 8, 0);
    trace_free(t);
    t = csv("time_s,bps\n0,0\n5,0\n", 1, 0); /* all zeros, looping */
    cr_assert_float_eq(trace_max_after(t, 3), 0, 0);
    trace_free(t);
    cr_assert_float_eq(trace_max_after(NULL, 3), 0, 0);
}
