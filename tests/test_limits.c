/* test_limits.c: absurd sizes get a clear error or a bounded run, never an
 * out-of-memory kill or an endless loop.  Each case loads or runs something
 * far past a documented limit (scenarios/README.md "Limits", and the event
 * budget of a run in sim/policy/policy.c) and checks the code, the message
 * naming the limit, that it fails fast, and that nothing leaks. */
#include "policy/policy.h"
#include "policy/runtime.h"
#include "scenario.h"
#include "trace.h"
#include "yamltree.h"

#include <criterion/criterion.h>
#include "leaks.h"
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long live0;
static void setup(void)
{
    live0 = dp_alloc_live();
}
static void teardown(void)
{
    leaks_verify(live0);
}
TestSuite(limits, .init = setup, .fini = teardown, .timeout = 60);

static const char *BASE = "name: t\n"
                          "model: { params: 1000, flops_per_sample: 1e6 }\n"
                          "dataset: { samples: SAMPLES, sample_bytes: 1KB }\n"
                          "training: { epochs: EPOCHS }\n"
                          "devices:\n"
                          "  - name: gpu\n"
                          "    count: COUNT\n"
                          "    kind: gpu\n"
                          "    memory: 1GiB\n"
                          "    batch: 8\n"
                          "    batch_time: 10ms\n"
                          "    link: { up: 100Mbps, down: 100Mbps, latency: 20ms TRACE}\n";

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* BASE with its placeholders filled; trace "" = none. */
static char *text_of(const char *samples, const char *epochs, const char *count, const char *trace_kv)
{
    static char buf[4096];
    const char *from[4] = {"SAMPLES", "EPOCHS", "COUNT", "TRACE"};
    const char *to[4] = {samples, epochs, count, trace_kv};
    snprintf(buf, sizeof buf, "%s", BASE);
    for (int k = 0; k < 4; k++) {
        char *p = strstr(buf, from[k]);
        cr_assert_not_null(p);
        char tail[4096];
        snprintf(tail, sizeof tail, "%s", p + strlen(from[k]));
        snprintf(p, sizeof buf - (size_t)(p - buf), "%s%s", to[k], tail);
    }
    return buf;
}

static scn_scenario *load(const char *text, dp_err *err)
{
    return scn_load_string("lim.yaml", text, strlen(text), NULL, NULL, 0, err);
}

/* Loading fails with DP_EINPUT, a message holding `want`, within a second. */
static void refused(const char *text, const char *want)
{
    dp_err err = {0};
    double t0 = now_s();
    scn_scenario *s = load(text, &err);
    double dt = now_s() - t0;
    cr_assert_null(s, "accepted: %s", text);
    cr_assert_eq(err.code, DP_EINPUT);
    cr_assert(strstr(err.msg, want), "'%s' not in: %s", want, err.msg);
    cr_assert_lt(dt, 1.0, "took %.2f s", dt);
}

Test(limits, baseline_loads)
{
    dp_err err = {0};
    scn_scenario *s = load(text_of("100", "2", "3", ""), &err);
    cr_assert_not_null(s, "%s", err.msg);
    scn_free(s);
}

Test(limits, a_trillion_devices)
{
    refused(text_of("100", "2", "1000000000000", ""), "at most 1000000");
    refused(text_of("100", "2", "1e12", ""), "devices");
}

Test(limits, devices_in_total)
{
    /* Two groups each under the per-group limit, over it together. */
    char text[8192];
    snprintf(text, sizeof text,
             "%s  - name: cpu\n    count: 600000\n    kind: cpu\n    memory: 1GiB\n"
             "    batch: 8\n    batch_time: 10ms\n    link: { up: 1Mbps, down: 1Mbps }\n",
             text_of("100000000", "1", "600000", ""));
    refused(text, "limit on devices");
}

Test(limits, 1e18_samples)
{
    refused(text_of("1000000000000000000", "2", "3", ""), "at most 1000000000000000");
    refused(text_of("1e18", "2", "3", ""), "dataset.samples");
    refused(text_of("9223372036854775808", "2", "3", ""), "dataset.samples");
}

Test(limits, a_billion_epochs)
{
    refused(text_of("100", "1000000000", "3", ""), "at most 1000000");
    refused(text_of("100", "1e300", "3", ""), "training.epochs");
}

/* A 1 GB trace (sparse: no disk used) is refused by its size, unread. */
Test(limits, a_gigabyte_trace)
{
    char dir[] = "/tmp/dpsim-limits-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/big.csv", dir);
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    cr_assert_geq(fd, 0);
    cr_assert_eq(ftruncate(fd, (off_t)1 << 30), 0);
    close(fd);

    trace_opts o = {.format = TRACE_FMT_CSV, .value_is_bits = 1};
    dp_err err = {0};
    double t0 = now_s();
    trace *t = trace_read_file(path, &o, &err);
    cr_assert_null(t);
    cr_assert_eq(err.code, DP_EINPUT);
    cr_assert(strstr(err.msg, "64 MiB"), "%s", err.msg);
    cr_assert_lt(now_s() - t0, 1.0);

    char kv[300];
    snprintf(kv, sizeof kv, ", down_trace: %s ", path);
    refused(text_of("100", "2", "3", kv), "64 MiB");
    unlink(path);
    rmdir(dir);
}

/* The largest mahimahi timestamp at the finest bin: the binned series must
 * be refused or bounded, not 10^12 bins. */
Test(limits, mahimahi_far_timestamp_fine_bins)
{
    const char *buf = "0\n1\n999999999999\n";
    trace_opts o = {.format = TRACE_FMT_MAHIMAHI, .bin_s = 0.001, .loop = 1};
    dp_err err = {0};
    double t0 = now_s();
    trace *t = trace_read_buffer("far.down", buf, strlen(buf), &o, &err);
    if (t) {
        cr_assert_leq(t->n, 10u * 1000 * 1000, "%zu breakpoints", t->n);
        trace_free(t);
    } else {
        cr_assert_eq(err.code, DP_EINPUT);
        cr_assert_neq(err.msg[0], 0);
    }
    cr_assert_lt(now_s() - t0, 5.0);
    const char *over = "0\n10000000000000\n";
    cr_assert_null(trace_read_buffer("over.down", over, strlen(over), &o, &err));
    cr_assert_eq(err.code, DP_EINPUT);
}

/* A CSV line longer than the line limit is an error, not a truncation. */
Test(limits, long_trace_line)
{
    char buf[1024];
    memset(buf, '1', sizeof buf);
    memcpy(buf, "0,", 2);
    buf[sizeof buf - 1] = '\n';
    trace_opts o = {.format = TRACE_FMT_CSV};
    dp_err err = {0};
    trace *t = trace_read_buffer("long.csv", buf, sizeof buf, &o, &err);
    cr_assert_null(t);
    cr_assert_eq(err.code, DP_EINPUT);
    cr_assert(strstr(err.msg, "long.csv:1"), "%s", err.msg);
}

/* A ring collective as flows over 50,001 devices round by round needs 1e10
 * events: where its rounds cannot run in closed form (here: links with
 * outages) it is refused before the run starts, naming the way out
 * (analytic collectives). */
Test(limits, flows_ring_over_many_devices, .timeout = 120)
{
    dp_err err = {0};
    scn_scenario *s = load(text_of("10000000", "1", "50001", ", outages: [[1h, 2h]] "), &err);
    cr_assert_not_null(s, "%s", err.msg);
    const policy_def *ks[2] = {policy_find("ddp"), policy_find("deepspeed")};
    for (int k = 0; k < 2; k++) {
        double t0 = now_s();
        res_run *r = policy_run(ks[k], s, 1, &err);
        cr_assert_null(r);
        cr_assert_eq(err.code, DP_EINPUT);
        cr_assert(strstr(err.msg, "collective=analytic"), "%s", err.msg);
        cr_assert(strstr(err.msg, "limit"), "%s", err.msg);
        cr_assert_lt(now_s() - t0, 2.0);
    }
    scn_free(s);
}

/* The same ring on links that change by themselves in no way runs its
 * rounds in closed form (one event per collective): not refused. */
Test(limits, flows_ring_closed_form_not_refused)
{
    dp_err err = {0};
    scn_scenario *s = load(text_of("10000000", "1", "50001", ""), &err);
    cr_assert_not_null(s, "%s", err.msg);
    cr_assert(coll_closed_form_possible(s));
    cr_assert_eq(coll_check_flows(s, "ddp", PRT_COLL_FLOWS, &err), 0, "%s", err.msg);
    scn_free(s);
    s = load(text_of("10000000", "1", "50001", ", outages: [[1h, 2h]] "), &err);
    cr_assert_not_null(s, "%s", err.msg);
    cr_assert(!coll_closed_form_possible(s));
    cr_assert_eq(coll_check_flows(s, "ddp", PRT_COLL_FLOWS, &err), DP_EINPUT);
    scn_free(s);
}

/* Just under the refusal: 1000 devices as flows run (bounded, seconds). */
Test(limits, flows_ring_under_the_limit_runs, .timeout = 120)
{
    dp_err err = {0};
    scn_scenario *s = load(text_of("8000", "1", "1000", ""), &err);
    cr_assert_not_null(s, "%s", err.msg);
    res_run *r = policy_run(policy_find("ddp"), s, 1, &err);
    cr_assert_not_null(r, "%s", err.msg);
    cr_assert_gt(r->ttotal_s, 0);
    res_run_free(r);
    scn_free(s);
}

/* The same scale with analytic collectives and C-ADP: bounded runs. */
Test(limits, many_devices_analytic_and_cadp, .timeout = 120)
{
    dp_err err = {0};
    scn_override ov = {"policies.ddp.collective", "analytic"};
    scn_scenario *s = scn_load_string("limits.yaml", text_of("10000000", "1", "50001", ""),
                                      strlen(text_of("10000000", "1", "50001", "")), NULL, &ov, 1, &err);
    cr_assert_not_null(s, "%s", err.msg);
    res_run *r = policy_run(policy_find("ddp"), s, 1, &err);
    cr_assert_not_null(r, "%s", err.msg);
    res_run_free(r);
    r = policy_run(policy_find("cadp"), s, 1, &err);
    cr_assert_not_null(r, "%s", err.msg);
    res_run_free(r);
    scn_free(s);
}

/* A 100k-item list: the tree's arrays grow geometrically, so the parse
 * makes about two allocations per item (node, text), not three (one
 * realloc per element, quadratic copying: 150 s under ASan). */
Test(limits, long_list_grows_geometrically)
{
    enum { N = 100000 };
    char *text = malloc(16 * N + 16);
    cr_assert_not_null(text);
    size_t len = (size_t)sprintf(text, "big:\n");
    for (int i = 0; i < N; i++)
        len += (size_t)sprintf(text + len, "  - %d\n", i);
    dp_err e = {0};
    dp_alloc_fail_after(2L * N + 1000);
    yt_doc *d = yt_parse("big.yaml", text, len, &e);
    dp_alloc_fail_after(0);
    cr_assert_not_null(d, "%s", e.msg);
    cr_expect_eq(yt_get(yt_root(d), "big")->n, (size_t)N);
    yt_free(d);
    free(text);
}

/* dp_grow, the arrays' one growth rule: doubling from `first` to what is
 * needed, and a size past SIZE_MAX refused with the array as it was. */
Test(limits, dp_grow_doubles_and_refuses_overflow)
{
    double *a = NULL;
    size_t cap = 0;
    cr_assert_eq(dp_grow((void **)&a, &cap, 5, sizeof *a, 4), 0);
    cr_expect_eq(cap, 8);
    a[7] = 1.5;
    cr_assert_eq(dp_grow((void **)&a, &cap, 8, sizeof *a, 4), 0); /* it holds 8: nothing moves */
    cr_expect_eq(cap, 8);
    cr_assert_eq(dp_grow((void **)&a, &cap, 100, sizeof *a, 4), 0);
    cr_expect_eq(cap, 128);
    cr_expect_eq(a[7], 1.5);
    double *before = a;
    cr_expect_eq(dp_grow((void **)&a, &cap, SIZE_MAX / 4, sizeof *a, 4), -1);
    cr_expect_eq(dp_grow((void **)&a, &cap, SIZE_MAX, sizeof *a, 4), -1);
    cr_expect(a == before && cap == 128);
    cr_expect_eq(a[7], 1.5);
    dp_free(a);
}
