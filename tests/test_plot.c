/* test_plot.c: the plots module (plots/plots.h) against real gnuplot.
 *
 * Each test builds a small results database in a fresh directory (runs
 * filled by hand, or by the real simulator on scenarios/tiny.yaml), draws
 * into it and checks the file's signature and size: a PNG signature, an
 * SVG root element, a PDF header.  The failure cases put a fake gnuplot in
 * DPSIM_GNUPLOT (missing, failing, exiting without reading) and check the
 * error and that no output or .part file is left.  The escaping cases put
 * gnuplot commands in names and titles and check that nothing ran.
 * A live-allocation count is checked after every test (Criterion under
 * ASan does not fail a test on a leak). */
#include <criterion/criterion.h>
#include "leaks.h"

#include "dp_common.h"
#include "plots.h"
#include "policy/policy.h"
#include "results.h"
#include "scenario.h"
#include "store/store.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];
static char dbpath[128];
static long live_at_start;
static store *st;

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/dpsim-plot-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(dbpath, sizeof dbpath, "%s/results.db", dir);
    live_at_start = dp_alloc_live();
    dp_err err = {0};
    st = store_open(dbpath, 0, &err);
    cr_assert_not_null(st, "%s", err.msg);
    unsetenv("DPSIM_GNUPLOT");
}

static void remove_tree(const char *path)
{
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            char sub[1024];
            snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
            remove_tree(sub);
        }
        closedir(d);
    }
    remove(path);
}

static void teardown(void)
{
    store_close(st);
    st = NULL;
    remove_tree(dir);
    leaks_verify(live_at_start);
}

TestSuite(plot, .init = setup, .fini = teardown);

/* ---- building databases ------------------------------------------------ */

/* A scenario record as the store reads it (name, text, hash). */
static scn_scenario fake_scn(const char *name, const char *text)
{
    scn_scenario s;
    memset(&s, 0, sizeof s);
    s.name = (char *)name;
    s.text = (char *)text;
    uint64_t h = 1469598103934665603ull;
    for (const char *p = text; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    s.text_hash = h;
    return s;
}

/* A run with n_dev devices called names[k] (or "dev[k]"), a timeline of
 * segs segments per device cycling through the activities, FLOPS bins and
 * epochs, and times scaled by scale. */
static res_run *hand_run(const char *policy, size_t n_dev, const char *const *names, size_t segs,
                         double scale)
{
    dp_err err = {0};
    res_run *r = res_run_new(n_dev, &err);
    cr_assert_not_null(r);
    snprintf(r->policy, sizeof r->policy, "%s", policy);
    r->tsend_s = 1.5 * scale;
    r->ttraining_s = 40 * scale;
    r->ttotal_s = 41.5 * scale;
    r->tflops = 2.5;
    r->utilization = 0.5;
    r->samples_processed = 1000;
    r->bytes_total = 1e6;
    r->events = 10;
    for (size_t d = 0; d < n_dev; d++) {
        char name[RES_NAME_MAX + 1];
        snprintf(name, sizeof name, "dev[%zu]", d);
        cr_assert_eq(res_device_names(r, d, names ? names[d] : name, "g", "gpu"), 0);
        double t = 0, step = r->ttotal_s / (double)segs;
        for (size_t k = 0; k < segs; k++, t += step)
            cr_assert_eq(res_add_segment(r, (int)d, (res_activity)((k + d) % RES_ACT_COUNT), t, t + step), 0);
    }
    r->bin_s = r->ttotal_s / 50;
    r->n_bins = 50;
    r->flops_bins = dp_calloc(50, sizeof *r->flops_bins);
    for (size_t b = 0; b < 50; b++)
        r->flops_bins[b] = 1e12 * (1 + sin((double)b / 5)) / scale;
    res_add_epoch(r, 1, r->ttotal_s / 2);
    res_add_epoch(r, 2, r->ttotal_s);
    return r;
}

static int64_t put(const scn_scenario *s, res_run *r, int64_t sweep, const char *point)
{
    dp_err err = {0};
    int64_t id = 0;
    cr_assert_eq(store_put_run(st, s, NULL, 0, r, "test", "2026-01-01T00:00:00Z", sweep, point, &id, &err), 0,
                 "%s", err.msg);
    res_run_free(r);
    return id;
}

/* The three policies on a hand-made scenario; ids[0..2]. */
static void three_runs(const scn_scenario *s, int64_t *ids, size_t segs)
{
    ids[0] = put(s, hand_run("ddp", 4, NULL, segs, 100), 0, NULL);
    ids[1] = put(s, hand_run("deepspeed", 4, NULL, segs, 80), 0, NULL);
    ids[2] = put(s, hand_run("cadp", 4, NULL, segs, 1), 0, NULL);
}

/* A sweep over two keys and three seeds: x = link speed, y = cpu count. */
static int64_t make_sweep(const scn_scenario *s, int two_keys)
{
    dp_err err = {0};
    int64_t sid = 0;
    cr_assert_eq(store_sweep_get_or_create(st, s, two_keys ? "{\"two\":1}" : "{\"one\":1}", &sid, &err), 0,
                 "%s", err.msg);
    static const char *const speeds[] = {"10Mbps", "100Mbps", "1Gbps", "10Gbps"};
    static const char *const counts[] = {"0", "1", "2", "4"};
    static const char *const pols[] = {"ddp", "cadp"};
    for (size_t p = 0; p < 2; p++)
        for (size_t i = 0; i < 4; i++)
            for (size_t j = 0; j < (two_keys ? 4u : 1u); j++)
                for (uint64_t seed = 1; seed <= 3; seed++) {
                    char point[200];
                    if (two_keys)
                        snprintf(point, sizeof point,
                                 "{\"devices.gpu.link.down\":\"%s\",\"devices.cpu.count\":\"%s\"}", speeds[i],
                                 counts[j]);
                    else
                        snprintf(point, sizeof point, "{\"devices.gpu.link.down\":\"%s\"}", speeds[i]);
                    double scale = (p ? 1 : 5) * 1000 / pow(10, (double)i) * (1 + 0.3 * (double)j) *
                                   (1 + 0.05 * (double)seed);
                    res_run *r = hand_run(pols[p], 2, NULL, 4, scale);
                    r->seed = seed;
                    put(s, r, sid, point);
                }
    return sid;
}

/* ---- checking files ----------------------------------------------------- */

static long file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) ? -1 : (long)sb.st_size;
}

static void expect_valid(const char *path, long min_size)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s was not written", path);
    char head[4096] = {0};
    size_t n = fread(head, 1, sizeof head - 1, f);
    fclose(f);
    const char *ext = strrchr(path, '.');
    if (!strcmp(ext, ".png"))
        cr_expect(n > 8 && !memcmp(head, "\x89PNG\r\n\x1a\n", 8), "%s: no PNG signature", path);
    else if (!strcmp(ext, ".svg"))
        cr_expect(strstr(head, "<svg") != NULL, "%s: no <svg root element", path);
    else
        cr_expect(n > 5 && !memcmp(head, "%PDF-", 5), "%s: no PDF header", path);
    cr_expect_gt(file_size(path), min_size, "%s is only %ld bytes", path, file_size(path));
    char part[600];
    snprintf(part, sizeof part, "%s.part", path);
    cr_expect_eq(access(part, F_OK), -1, "%s left behind", part);
}

static int draw(plot_kind k, const plot_sel *sel, const char *name, dp_err *err)
{
    char out[300];
    snprintf(out, sizeof out, "%s/%s", dir, name);
    return plots_draw(st, k, sel, out, err);
}

static plot_sel auto_sel(void)
{
    plot_sel s;
    memset(&s, 0, sizeof s);
    s.log_x = s.log_y = -1;
    return s;
}

/* ---- names, quoting, parsing ------------------------------------------- */

Test(plot, kind_names)
{
    cr_expect_eq(plot_kind_by_name("compare"), PLOT_COMPARE);
    cr_expect_eq(plot_kind_by_name("flops"), PLOT_FLOPS);
    cr_expect_eq(plot_kind_by_name("timeline"), PLOT_TIMELINE);
    cr_expect_eq(plot_kind_by_name("sweep"), PLOT_SWEEP);
    cr_expect_eq(plot_kind_by_name("mix"), PLOT_MIX);
    cr_expect_eq(plot_kind_by_name("Compare"), -1);
    cr_expect_eq(plot_kind_by_name(""), -1);
    cr_expect_eq(plot_kind_by_name(NULL), -1);
    /* one table: every kind has a name that finds it and a help text */
    for (int k = 0; k < PLOT_KIND_COUNT; k++) {
        cr_assert_not_null(plot_kind_name(k));
        cr_expect_eq(plot_kind_by_name(plot_kind_name(k)), k);
        cr_expect(plot_kind_help(k) && *plot_kind_help(k));
    }
    cr_expect_null(plot_kind_name(PLOT_KIND_COUNT));
    cr_expect_null(plot_kind_name(-1));
    char list[200];
    cr_expect_str_eq(plot_kind_list(list, sizeof list),
                     "compare, flops, timeline, sweep, mix, batches, staleness, links, accuracy, jobs, "
                     "energy or jobs-sweep");
}

Test(plot, quote_escapes_apostrophes_and_flattens_control_characters)
{
    char b[256];
    cr_expect_str_eq(plot_quote("it's \"fast\"", b, sizeof b), "'it'.\"'\".'s \"fast\"'");
    cr_expect_str_eq(plot_quote("'", b, sizeof b), "\"'\"");
    cr_expect_str_eq(plot_quote("''x", b, sizeof b), "\"'\".\"'\".'x'");
    cr_expect_str_eq(plot_quote("a\nb\rc\td\x7f", b, sizeof b), "'a b c d '");
    cr_expect_str_eq(plot_quote("`x` @y {z}^_&\\", b, sizeof b), "'`x` @y {z}^_&\\'");
    cr_expect_str_eq(plot_quote("caf\xc3\xa9", b, sizeof b), "'caf\xc3\xa9'");
    cr_expect_str_eq(plot_quote("bad\xff\xc3(", b, sizeof b), "'bad?"
                                                              "?('");
    cr_expect_str_eq(plot_quote(NULL, b, sizeof b), "''");
    cr_expect_str_eq(plot_quote("", b, sizeof b), "''");
    /* never cut a UTF-8 character */
    cr_expect_str_eq(plot_quote("\xc3\xa9\xc3\xa9", b, 6), "'\xc3\xa9'");
}

/* What gnuplot itself reads back from plot_quote's output, cut short or
 * not: the text (control characters flattened) or a prefix of it. */
Test(plot, quote_round_trips_through_gnuplot)
{
    static const char *const in[] = {
        "it's \"fast\"",
        "'",
        "''",
        "'''a",
        "a'''''b",
        "x''",
        "`touch /tmp/x`",
        "a\\nb",
        "@macro {x}^2_y &amp;",
        "'; system \"touch /tmp/x\"; '",
        "\"; print 'oops'; \"",
        "tab\there",
        "caf\xc3\xa9 \xe2\x82\xac",
    };
    const size_t n_in = sizeof in / sizeof *in;
    char prog[300], out[300], cmd[700];
    snprintf(prog, sizeof prog, "%s/q.gp", dir);
    snprintf(out, sizeof out, "%s/q.out", dir);
    FILE *f = fopen(prog, "w");
    cr_assert_not_null(f);
    fprintf(f, "set print '-'\n");
    char b[256];
    for (size_t k = 0; k < n_in; k++) {
        fprintf(f, "print %s\n", plot_quote(in[k], b, sizeof b));
        for (size_t cap = 3; cap < 14; cap++) /* cut short */
            fprintf(f, "print %s\n", plot_quote(in[k], b, cap));
    }
    fclose(f);
    snprintf(cmd, sizeof cmd, "gnuplot '%s' > '%s' 2>&1", prog, out);
    cr_assert_eq(system(cmd), 0, "gnuplot rejected a quoted string (see %s)", out);
    f = fopen(out, "r");
    cr_assert_not_null(f);
    char line[512];
    for (size_t k = 0; k < n_in; k++) {
        char want[256];
        snprintf(want, sizeof want, "%s", in[k]);
        for (char *c = want; *c; c++)
            if ((unsigned char)*c < 0x20)
                *c = ' ';
        cr_assert_not_null(fgets(line, sizeof line, f));
        line[strcspn(line, "\n")] = '\0';
        cr_expect_str_eq(line, want);
        for (size_t cap = 3; cap < 14; cap++) {
            cr_assert_not_null(fgets(line, sizeof line, f));
            line[strcspn(line, "\n")] = '\0';
            cr_expect(strncmp(line, want, strlen(line)) == 0, "cap %zu: '%s' is not a prefix of '%s'", cap,
                      line, want);
        }
    }
    fclose(f);
}

Test(plot, format_from_extension)
{
    const char *f;
    cr_expect_eq(plot_format_for("a/b.png", &f, NULL), 0);
    cr_expect_str_eq(f, "png");
    cr_expect_eq(plot_format_for("b.SVG", &f, NULL), 0);
    cr_expect_str_eq(f, "svg");
    cr_expect_eq(plot_format_for("b.pdf", &f, NULL), 0);
    cr_expect_str_eq(f, "pdf");
    dp_err err = {0};
    cr_expect_eq(plot_format_for("b.jpg", &f, &err), DP_EINPUT);
    cr_expect(strstr(err.msg, ".png, .svg or .pdf") != NULL, "%s", err.msg);
    cr_expect_eq(plot_format_for("dir.png/file", &f, NULL), DP_EINPUT);
    cr_expect_eq(plot_format_for("noext", &f, NULL), DP_EINPUT);
}

Test(plot, json_points)
{
    char **k, **v;
    size_t n;
    cr_assert_eq(
        plot_json_object(" {\"a.b\" : \"10Mbps\", \"c\":4, \"q\\\"\\u00e9\":\"x\\ny\"} ", &k, &v, &n, NULL),
        0);
    cr_assert_eq(n, 3);
    cr_expect_str_eq(k[0], "a.b");
    cr_expect_str_eq(v[0], "10Mbps");
    cr_expect_str_eq(k[1], "c");
    cr_expect_str_eq(v[1], "4");
    cr_expect_str_eq(k[2], "q\"\xc3\xa9");
    cr_expect_str_eq(v[2], "x\ny");
    plot_json_free(k, v, n);
    cr_assert_eq(plot_json_object("{}", &k, &v, &n, NULL), 0);
    cr_expect_eq(n, 0);
    plot_json_free(k, v, n);
    static const char *const bad[] = {"",           "[1]",        "{\"a\":{\"b\":1}}", "{\"a\" 1}",
                                      "{\"a\":1,}", "{\"a\":\"x", "{\"a\":1} x",       "{\"a\":\"\\u12\"}"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        dp_err err = {0};
        cr_expect_eq(plot_json_object(bad[i], &k, &v, &n, &err), DP_EINPUT, "accepted %s", bad[i]);
        cr_expect(strstr(err.msg, "sweep point") != NULL, "%s", err.msg);
        cr_expect_null(k);
    }
    cr_expect_eq(plot_json_object(NULL, &k, &v, &n, NULL), DP_EINPUT);
}

Test(plot, axis_values_take_the_first_unit)
{
    double x[4];
    char unit[64];
    const char *bw[] = {"10Mbps", "1Gbps", "100 Mbps", "1.25MB/s"};
    plot_axis_values(bw, 4, x, unit, sizeof unit);
    cr_expect_str_eq(unit, "Mbps");
    cr_expect_float_eq(x[0], 10, 1e-9);
    cr_expect_float_eq(x[1], 1000, 1e-9);
    cr_expect_float_eq(x[2], 100, 1e-9);
    cr_expect_float_eq(x[3], 10, 1e-9);
    const char *num[] = {"0", "2", "16"};
    plot_axis_values(num, 3, x, unit, sizeof unit);
    cr_expect_str_eq(unit, "");
    cr_expect_float_eq(x[2], 16, 1e-12);
    const char *t[] = {"20ms", "1s", "5"};
    plot_axis_values(t, 3, x, unit, sizeof unit);
    cr_expect_str_eq(unit, "ms");
    cr_expect_float_eq(x[1], 1000, 1e-9);
    cr_expect_float_eq(x[2], 5, 1e-12); /* a plain number next to units is taken in the axis unit */
    const char *sz[] = {"25MiB", "1GiB"};
    plot_axis_values(sz, 2, x, unit, sizeof unit);
    cr_expect_str_eq(unit, "MiB");
    cr_expect_float_eq(x[1], 1024, 1e-9);
    const char *odd[] = {"3 widgets", "7 widgets"};
    plot_axis_values(odd, 2, x, unit, sizeof unit);
    cr_expect_float_eq(x[0], 3, 1e-12);
    cr_expect_float_eq(x[1], 7, 1e-12);
}

/* ---- each kind, each format -------------------------------------------- */

Test(plot, compare_flops_timeline_in_every_format)
{
    scn_scenario s = fake_scn("unit", "name: unit\n");
    int64_t ids[3];
    three_runs(&s, ids, 40);
    static const char *const ext[] = {"png", "svg", "pdf"};
    static const plot_kind kinds[] = {PLOT_COMPARE, PLOT_FLOPS, PLOT_TIMELINE};
    for (size_t k = 0; k < 3; k++)
        for (size_t e = 0; e < 3; e++) {
            plot_sel sel = auto_sel();
            char name[64], path[300];
            snprintf(name, sizeof name, "k%zu.%s", k, ext[e]);
            dp_err err = {0};
            cr_assert_eq(draw(kinds[k], &sel, name, &err), 0, "%s: %s", name, err.msg);
            snprintf(path, sizeof path, "%s/%s", dir, name);
            expect_valid(path, 5000);
        }
}

Test(plot, default_selection_is_the_latest_run_of_each_policy_without_overrides)
{
    scn_scenario s = fake_scn("sel", "name: sel\n");
    int64_t ids[3];
    three_runs(&s, ids, 4);
    /* a newer DDP run with overrides (like reproduce's what-if) is not picked */
    dp_err err = {0};
    const char *ov[] = {"interconnect.bandwidth=10Gbps"};
    res_run *r = hand_run("ddp", 4, NULL, 4, 3);
    int64_t what_if;
    cr_assert_eq(store_put_run(st, &s, ov, 1, r, "test", "2026-01-01T00:00:00Z", 0, NULL, &what_if, &err), 0);
    res_run_free(r);
    plot_sel sel = auto_sel();
    plot_run *runs;
    size_t n;
    cr_assert_eq(plot_runs_select(st, &sel, 0, &runs, &n, &err), 0, "%s", err.msg);
    cr_assert_eq(n, 3);
    cr_expect_eq(runs[0].id, ids[0]);
    cr_expect_str_eq(runs[0].label, "DDP");
    cr_expect_eq(runs[1].id, ids[1]);
    cr_expect_str_eq(runs[2].label, "C-ADP");
    dp_free(runs);
    /* explicit ids sharing a policy get the id in their label */
    int64_t two[] = {what_if, ids[0]};
    sel.run_ids = two;
    sel.n_runs = 2;
    cr_assert_eq(plot_runs_select(st, &sel, 0, &runs, &n, &err), 0, "%s", err.msg);
    char want[48];
    snprintf(want, sizeof want, "DDP #%lld", (long long)ids[0]);
    cr_expect_str_eq(runs[0].label, want);
    dp_free(runs);
    /* timeline: the latest run of a policy */
    sel = auto_sel();
    sel.policy = "deepspeed";
    cr_assert_eq(plot_runs_select(st, &sel, 1, &runs, &n, &err), 0, "%s", err.msg);
    cr_expect_eq(n, 1);
    cr_expect_eq(runs[0].id, ids[1]);
    dp_free(runs);
}

Test(plot, real_simulator_runs)
{
    char path[512];
    const char *src = getenv("DPSIM_SRC");
    snprintf(path, sizeof path, "%s/scenarios/tiny.yaml", src ? src : "..");
    dp_err err = {0};
    scn_scenario *s = scn_load_file(path, NULL, 0, &err);
    cr_assert_not_null(s, "%s", err.msg);
    int64_t ids[3];
    for (int p = 0; p < 3; p++) {
        res_run *r = policy_run(policy_at((size_t)p), s, 7, &err);
        cr_assert_not_null(r, "%s", err.msg);
        ids[p] = put(s, r, 0, NULL);
    }
    scn_free(s);
    plot_sel sel = auto_sel();
    cr_assert_eq(draw(PLOT_COMPARE, &sel, "c.png", &err), 0, "%s", err.msg);
    cr_assert_eq(draw(PLOT_FLOPS, &sel, "f.svg", &err), 0, "%s", err.msg);
    sel.run_ids = &ids[0];
    sel.n_runs = 1;
    cr_assert_eq(draw(PLOT_TIMELINE, &sel, "t.pdf", &err), 0, "%s", err.msg);
    snprintf(path, sizeof path, "%s/c.png", dir);
    expect_valid(path, 10000);
    snprintf(path, sizeof path, "%s/f.svg", dir);
    expect_valid(path, 5000);
    snprintf(path, sizeof path, "%s/t.pdf", dir);
    expect_valid(path, 5000);
    /* the Table 3 set */
    char out[300];
    snprintf(out, sizeof out, "%s/t3/sub", dir);
    cr_assert_eq(plots_table3(st, ids, 3, out, &err), 0, "%s", err.msg);
    static const char *const names[] = {"table3-compare.png", "table3-flops.png", "table3-timeline-ddp.png",
                                        "table3-timeline-deepspeed.png", "table3-timeline-cadp.png"};
    for (size_t k = 0; k < 5; k++) {
        snprintf(path, sizeof path, "%s/%s", out, names[k]);
        expect_valid(path, 10000);
    }
}

Test(plot, large_timeline)
{
    scn_scenario s = fake_scn("big", "name: big\n");
    int64_t id = put(&s, hand_run("cadp", 64, NULL, 1600, 1000), 0, NULL); /* 102400 segments */
    plot_sel sel = auto_sel();
    sel.run_ids = &id;
    sel.n_runs = 1;
    dp_err err = {0};
    cr_assert_eq(draw(PLOT_TIMELINE, &sel, "big.png", &err), 0, "%s", err.msg);
    char path[300];
    snprintf(path, sizeof path, "%s/big.png", dir);
    expect_valid(path, 20000);
}

Test(plot, sweep_and_mix)
{
    scn_scenario s = fake_scn("sw", "name: sw\n");
    make_sweep(&s, 1);
    dp_err err = {0};
    plot_sel sel = auto_sel();
    char path[300];
    static const char *const names[] = {"sweep.png", "sweep.svg", "sweep.pdf"};
    for (size_t k = 0; k < 3; k++) {
        cr_assert_eq(draw(PLOT_SWEEP, &sel, names[k], &err), 0, "%s", err.msg);
        snprintf(path, sizeof path, "%s/%s", dir, names[k]);
        expect_valid(path, 5000);
    }
    sel.metric = "tflops";
    sel.x_key = "devices.cpu.count";
    cr_assert_eq(draw(PLOT_SWEEP, &sel, "sweep-cpu.png", &err), 0, "%s", err.msg);
    sel = auto_sel();
    static const char *const mnames[] = {"mix.png", "mix.svg", "mix.pdf"};
    for (size_t k = 0; k < 3; k++) {
        cr_assert_eq(draw(PLOT_MIX, &sel, mnames[k], &err), 0, "%s", err.msg);
        snprintf(path, sizeof path, "%s/%s", dir, mnames[k]);
        expect_valid(path, 5000);
    }
    sel.policy = "ddp";
    sel.metric = "utilization";
    sel.x_key = "devices.cpu.count";
    sel.y_key = "devices.gpu.link.down";
    cr_assert_eq(draw(PLOT_MIX, &sel, "mix-ddp.png", &err), 0, "%s", err.msg);
}

Test(plot, sweep_confidence_interval)
{
    /* Three seeds at one point: values 10, 12, 14 -> mean 12, sd 2,
     * half-width t(0.975, 2) * 2 / sqrt(3) = 4.303 * 1.1547 = 4.9683. */
    scn_scenario s = fake_scn("ci", "name: ci\n");
    dp_err err = {0};
    int64_t sid;
    cr_assert_eq(store_sweep_get_or_create(st, &s, "{\"ci\":1}", &sid, &err), 0, "%s", err.msg);
    for (uint64_t seed = 0; seed < 3; seed++) {
        res_run *r = hand_run("cadp", 2, NULL, 2, 1);
        r->seed = seed;
        r->ttotal_s = 10 + 2 * (double)seed;
        put(&s, r, sid, "{\"k\":\"1s\"}");
        r = hand_run("cadp", 2, NULL, 2, 1);
        r->seed = seed;
        r->ttotal_s = 100;
        put(&s, r, sid, "{\"k\":\"2s\"}");
    }
    /* Check through gnuplot's own data: draw with a fake gnuplot that saves
     * its program. */
    char script[300], saved[300];
    snprintf(saved, sizeof saved, "%s/program.gp", dir);
    snprintf(script, sizeof script, "%s/fake-gnuplot", dir);
    FILE *f = fopen(script, "w");
    cr_assert_not_null(f);
    fprintf(f, "#!/bin/sh\ncat > '%s'\nexit 1\n", saved);
    fclose(f);
    chmod(script, 0755);
    setenv("DPSIM_GNUPLOT", script, 1);
    plot_sel sel = auto_sel();
    cr_expect_eq(draw(PLOT_SWEEP, &sel, "ci.png", &err), DP_ERUN);
    unsetenv("DPSIM_GNUPLOT");
    f = fopen(saved, "r");
    cr_assert_not_null(f);
    char line[512];
    int found = 0;
    while (fgets(line, sizeof line, f)) {
        double x, m, lo, hi;
        if (sscanf(line, "%lf %lf %lf %lf", &x, &m, &lo, &hi) == 4 && x == 1) {
            cr_expect_float_eq(m, 12, 1e-9);
            cr_expect_float_eq(hi - m, 4.30265272974946 * 2 / sqrt(3), 1e-6);
            cr_expect_float_eq(m - lo, hi - m, 1e-7); /* %.10g in the data */
            found = 1;
        }
    }
    fclose(f);
    cr_expect(found, "no data row for x = 1 s");
}

/* ---- escaping: names that try to inject gnuplot commands -------------- */

Test(plot, hostile_names_render_and_run_nothing)
{
    char pwned[4][300];
    for (int k = 0; k < 4; k++)
        snprintf(pwned[k], sizeof pwned[k], "%s/pwned%d", dir, k);
    char dev0[96], dev1[96], scn_name[400], title[400], key[300];
    snprintf(dev0, sizeof dev0, "it's \"fast\"'; system \"touch %.30s\"; '", pwned[0]);
    snprintf(dev1, sizeof dev1, "`touch %.40s`\n@x {y}^_&", pwned[1]);
    snprintf(scn_name, sizeof scn_name, "evil'\nsystem 'touch %s'\n'", pwned[2]);
    snprintf(title, sizeof title, "t'; system \"touch %s\"; print '", pwned[3]);
    snprintf(key, sizeof key, "k'\\\"; system \\\"touch %s\\\"; '", pwned[3]);
    const char *names[] = {dev0, dev1};
    scn_scenario s = fake_scn(scn_name, "name: evil\n");
    put(&s, hand_run("cadp", 2, names, 10, 1), 0, NULL);
    put(&s, hand_run("it's \"odd\"; system \"touch x\"", 2, names, 10, 2), 0, NULL);
    dp_err err = {0};
    plot_sel sel = auto_sel();
    cr_assert_eq(draw(PLOT_COMPARE, &sel, "c.png", &err), 0, "%s", err.msg);
    cr_assert_eq(draw(PLOT_FLOPS, &sel, "f.svg", &err), 0, "%s", err.msg);
    cr_assert_eq(draw(PLOT_TIMELINE, &sel, "t.png", &err), 0, "%s", err.msg);
    sel.title = title;
    cr_assert_eq(draw(PLOT_TIMELINE, &sel, "t2.pdf", &err), 0, "%s", err.msg);
    /* a sweep key and value with quotes */
    int64_t sid;
    cr_assert_eq(store_sweep_get_or_create(st, &s, "{\"evil\":1}", &sid, &err), 0, "%s", err.msg);
    char point[600];
    snprintf(point, sizeof point, "{\"%s\":\"4'; system 'touch %s'\",\"b\":\"1\"}", key, pwned[3]);
    res_run *r = hand_run("cadp", 2, NULL, 2, 1);
    put(&s, r, sid, point);
    sel = auto_sel();
    cr_assert_eq(draw(PLOT_SWEEP, &sel, "s.png", &err), 0, "%s", err.msg);
    cr_assert_eq(draw(PLOT_MIX, &sel, "m.png", &err), 0, "%s", err.msg);
    char path[300];
    snprintf(path, sizeof path, "%s/t.png", dir);
    expect_valid(path, 5000);
    snprintf(path, sizeof path, "%s/s.png", dir);
    expect_valid(path, 5000);
    for (int k = 0; k < 4; k++)
        cr_expect_eq(access(pwned[k], F_OK), -1, "%s was created: a name ran a command", pwned[k]);
    cr_expect_eq(access("x", F_OK), -1);
    /* the SVG holds the device name as text (escaped for XML by gnuplot) */
    snprintf(path, sizeof path, "%s/f.svg", dir);
    expect_valid(path, 3000);
}

/* A policy's label and colour come from the database (stored with its
 * runs), so a plug-in this binary never registered draws as it did where
 * it ran; a stored colour that is not #rrggbb is dropped, never sent to
 * gnuplot; runs without them (older databases) take the registry's. */
Test(plot, labels_and_colours_come_from_the_database)
{
    char pwned[300];
    snprintf(pwned, sizeof pwned, "%s/pwned", dir);
    scn_scenario s = fake_scn("plug", "name: plug\n");
    res_run *r = hand_run("myplug", 2, NULL, 4, 1);
    snprintf(r->policy_label, sizeof r->policy_label, "My Plug");
    snprintf(r->policy_color, sizeof r->policy_color, "#abcdef");
    put(&s, r, 0, NULL);
    r = hand_run("evilplug", 2, NULL, 4, 2);
    snprintf(r->policy_label, sizeof r->policy_label, "Evil'; system 'touch %.20s", pwned);
    snprintf(r->policy_color, sizeof r->policy_color, "red' lw 9");
    put(&s, r, 0, NULL);
    put(&s, hand_run("cadp", 2, NULL, 4, 3), 0, NULL); /* no label stored: the registry's */
    dp_err err = {0};
    plot_sel sel = auto_sel();
    cr_assert_eq(draw(PLOT_COMPARE, &sel, "c.svg", &err), 0, "%s", err.msg);
    char path[300];
    snprintf(path, sizeof path, "%s/c.svg", dir);
    expect_valid(path, 2000);
    size_t len;
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f);
    static char svg[1 << 20];
    len = fread(svg, 1, sizeof svg - 1, f);
    fclose(f);
    svg[len] = '\0';
    cr_expect(strstr(svg, "My Plug") != NULL, "the stored label is not drawn");
    cr_expect(strstr(svg, "myplug") == NULL, "the policy name is drawn instead of its stored label");
    cr_expect(strstr(svg, "rgb(171, 205, 239)") != NULL, "the stored colour #abcdef is not drawn");
    cr_expect(strstr(svg, "C-ADP") != NULL, "a run without a stored label lost the registry's");
    cr_expect_eq(access(pwned, F_OK), -1, "a stored label ran a command");
    store_policy_styles ps = {0};
    cr_assert_eq(store_policy_styles_get(st, &ps, &err), 0, "%s", err.msg);
    const store_policy_style *e = store_policy_style_of(&ps, "evilplug");
    cr_assert_not_null(e);
    cr_expect_str_eq(e->color, ""); /* dropped */
    cr_expect_null(store_policy_style_of(&ps, "cadp"));
    store_policy_styles_free(&ps);
}

Test(plot, output_name_with_quote_and_newline)
{
    scn_scenario s = fake_scn("o", "name: o\n");
    int64_t ids[3];
    three_runs(&s, ids, 4);
    plot_sel sel = auto_sel();
    dp_err err = {0};
    cr_assert_eq(draw(PLOT_COMPARE, &sel, "it's a plot.png", &err), 0, "%s", err.msg);
    char path[300];
    snprintf(path, sizeof path, "%s/it's a plot.png", dir);
    expect_valid(path, 5000);
    cr_expect_eq(draw(PLOT_COMPARE, &sel, "bad\nname.png", &err), DP_EINPUT);
}

/* ---- gnuplot missing, failing, leaving early ---------------------------- */

static char *fake_gnuplot(const char *body)
{
    static char script[300];
    snprintf(script, sizeof script, "%s/fake-gnuplot", dir);
    FILE *f = fopen(script, "w");
    cr_assert_not_null(f);
    fprintf(f, "#!/bin/sh\n%s\n", body);
    fclose(f);
    chmod(script, 0755);
    return script;
}

Test(plot, missing_gnuplot_is_a_clear_error)
{
    scn_scenario s = fake_scn("m", "name: m\n");
    int64_t ids[3];
    three_runs(&s, ids, 4);
    setenv("DPSIM_GNUPLOT", "/nonexistent/gnuplot", 1);
    plot_sel sel = auto_sel();
    dp_err err = {0};
    cr_expect_eq(draw(PLOT_COMPARE, &sel, "c.png", &err), DP_ERUN);
    cr_expect(strstr(err.msg, "gnuplot not found") != NULL, "%s", err.msg);
    cr_expect(strstr(err.msg, "apt-get install gnuplot-nox") != NULL, "%s", err.msg);
    cr_expect(strstr(err.msg, "/nonexistent/gnuplot") != NULL, "%s", err.msg);
    char path[300];
    snprintf(path, sizeof path, "%s/c.png", dir);
    cr_expect_eq(access(path, F_OK), -1);
    /* PATH without gnuplot */
    unsetenv("DPSIM_GNUPLOT");
    char *old = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
    setenv("PATH", dir, 1);
    cr_expect_eq(draw(PLOT_FLOPS, &sel, "f.png", &err), DP_ERUN);
    cr_expect(strstr(err.msg, "PATH") != NULL && strstr(err.msg, "gnuplot-nox") != NULL, "%s", err.msg);
    if (old) {
        setenv("PATH", old, 1);
        free(old);
    }
}

Test(plot, failing_gnuplot_is_quoted)
{
    scn_scenario s = fake_scn("f", "name: f\n");
    int64_t ids[3];
    three_runs(&s, ids, 4);
    char path[300];
    /* an earlier good plot must survive a failed redraw */
    plot_sel sel = auto_sel();
    dp_err err = {0};
    cr_assert_eq(draw(PLOT_COMPARE, &sel, "c.png", &err), 0, "%s", err.msg);
    snprintf(path, sizeof path, "%s/c.png", dir);
    long before = file_size(path);
    setenv("DPSIM_GNUPLOT", fake_gnuplot("cat >/dev/null; echo 'line 3: boom, no such terminal' >&2; exit 3"),
           1);
    cr_expect_eq(draw(PLOT_COMPARE, &sel, "c.png", &err), DP_ERUN);
    cr_expect(strstr(err.msg, "boom, no such terminal") != NULL, "%s", err.msg);
    cr_expect(strstr(err.msg, "exit status 3") != NULL, "%s", err.msg);
    cr_expect_eq(file_size(path), before, "the good plot was replaced");
    expect_valid(path, 5000);
    /* reads everything, exits 0, writes nothing */
    setenv("DPSIM_GNUPLOT", fake_gnuplot("cat >/dev/null"), 1);
    cr_expect_eq(draw(PLOT_FLOPS, &sel, "f.png", &err), DP_ERUN);
    cr_expect(strstr(err.msg, "without writing") != NULL, "%s", err.msg);
    /* it cannot write there: said before gnuplot starts, naming the
     * directory (gnuplot would draw the image to its stdout, which became
     * the message: issue 38) */
    unsetenv("DPSIM_GNUPLOT");
    cr_expect_eq(draw(PLOT_FLOPS, &sel, "no/such/dir/f.png", &err), DP_ERUN);
    cr_expect(strstr(err.msg, "directory") != NULL && strstr(err.msg, "no/such/dir'") != NULL, "%s", err.msg);
}

Test(plot, gnuplot_exiting_early_is_reported_not_fatal)
{
    scn_scenario s = fake_scn("e", "name: e\n");
    int64_t id = put(&s, hand_run("cadp", 16, NULL, 2000, 1), 0, NULL); /* ~2 MB of data */
    plot_sel sel = auto_sel();
    sel.run_ids = &id;
    sel.n_runs = 1;
    dp_err err = {0};
    setenv("DPSIM_GNUPLOT", fake_gnuplot("exec head -c 100 >/dev/null"), 1);
    cr_expect_eq(draw(PLOT_TIMELINE, &sel, "t.png", &err), DP_ERUN);
    cr_expect(strstr(err.msg, "exited before reading") != NULL, "%s", err.msg);
    setenv("DPSIM_GNUPLOT", fake_gnuplot("echo 'dying' >&2; kill -9 $$"), 1);
    cr_expect_eq(draw(PLOT_TIMELINE, &sel, "t.png", &err), DP_ERUN);
    cr_expect(strstr(err.msg, "signal 9") != NULL, "%s", err.msg);
    char path[300];
    snprintf(path, sizeof path, "%s/t.png.part", dir);
    cr_expect_eq(access(path, F_OK), -1);
}

/* ---- bad selections ----------------------------------------------------- */

Test(plot, bad_selections_are_input_errors)
{
    dp_err err = {0};
    plot_sel sel = auto_sel();
    cr_expect_eq(draw(PLOT_COMPARE, &sel, "c.png", &err), DP_EINPUT);
    cr_expect(strstr(err.msg, "no successful run") != NULL, "%s", err.msg);
    cr_expect_eq(draw(PLOT_SWEEP, &sel, "s.png", &err), DP_EINPUT);
    cr_expect(strstr(err.msg, "no sweep") != NULL, "%s", err.msg);
    scn_scenario s = fake_scn("b", "name: b\n");
    int64_t ids[3];
    three_runs(&s, ids, 4);
    cr_expect_eq(draw(PLOT_COMPARE, &sel, "c.jpg", &err), DP_EINPUT);
    int64_t nope = 999;
    sel.run_ids = &nope;
    sel.n_runs = 1;
    cr_expect_eq(draw(PLOT_TIMELINE, &sel, "t.png", &err), DP_EINPUT);
    cr_expect(strstr(err.msg, "no run 999") != NULL, "%s", err.msg);
    sel.run_ids = ids;
    sel.n_runs = 2;
    cr_expect_eq(draw(PLOT_TIMELINE, &sel, "t.png", &err), DP_EINPUT);
    int64_t failed;
    cr_assert_eq(store_put_failed(st, "b", "name: b\n", s.text_hash, NULL, 0, "cadp", 1, "test",
                                  "2026-01-01T00:00:00Z", 0, NULL, "it stalled", &failed, &err),
                 0, "%s", err.msg);
    sel.run_ids = &failed;
    sel.n_runs = 1;
    cr_expect_eq(draw(PLOT_TIMELINE, &sel, "t.png", &err), DP_EINPUT);
    cr_expect(strstr(err.msg, "it stalled") != NULL, "%s", err.msg);
    sel = auto_sel();
    sel.scenario = "nosuch";
    cr_expect_eq(draw(PLOT_FLOPS, &sel, "f.png", &err), DP_EINPUT);
    cr_expect(strstr(err.msg, "nosuch") != NULL, "%s", err.msg);
    make_sweep(&s, 0);
    sel = auto_sel();
    sel.metric = "speed";
    cr_expect_eq(draw(PLOT_SWEEP, &sel, "s.png", &err), DP_EINPUT);
    cr_expect(strstr(err.msg, "unknown metric") != NULL, "%s", err.msg);
    sel = auto_sel();
    sel.x_key = "devices.nosuch.count";
    cr_expect_eq(draw(PLOT_SWEEP, &sel, "s.png", &err), DP_EINPUT);
    cr_expect(strstr(err.msg, "devices.gpu.link.down") != NULL, "%s", err.msg);
    sel = auto_sel();
    cr_expect_eq(draw(PLOT_MIX, &sel, "m.png", &err), DP_EINPUT);
    cr_expect(strstr(err.msg, "two swept keys") != NULL, "%s", err.msg);
    sel.policy = "nosuch";
    cr_expect_eq(draw(PLOT_MIX, &sel, "m.png", &err), DP_EINPUT);
    sel = auto_sel();
    sel.sweep_id = 12345;
    cr_expect_eq(draw(PLOT_SWEEP, &sel, "s.png", &err), DP_EINPUT);
    cr_expect_eq(plots_draw(st, PLOT_KIND_COUNT, &sel, "x.png", &err), DP_EINPUT);
    cr_expect_eq(plots_draw(NULL, PLOT_COMPARE, &sel, "x.png", &err), DP_EINPUT);
    /* nothing was drawn by any of these */
    char path[300];
    snprintf(path, sizeof path, "%s/t.png", dir);
    cr_expect_eq(access(path, F_OK), -1);
}

/* --size reaches every kind, the one-run plots (batches, links) and the
 * staleness histogram included: the terminal line of the program a fake
 * gnuplot saves names the user's canvas, and without --size the plot's own. */
Test(plot, size_option_reaches_every_kind)
{
    scn_scenario s = fake_scn("sz", "name: sz\n");
    res_run *r = hand_run("dlb", 2, NULL, 4, 1);
    for (int d = 0; d < 2; d++) {
        res_add_stat(r, "batch_mean", RES_SCOPE_DEVICE_EPOCH, d, 1, 8);
        res_add_stat(r, "batch_min", RES_SCOPE_DEVICE_EPOCH, d, 1, 7);
        res_add_stat(r, "batch_max", RES_SCOPE_DEVICE_EPOCH, d, 1, 9);
    }
    res_add_stat(r, "link.busy_fraction", RES_SCOPE_LINK, 0, 0, 0.5);
    res_add_stat(r, "link.device", RES_SCOPE_LINK, 0, 0, 1);
    res_add_stat(r, "update.staleness", RES_SCOPE_BIN, 0, 0, 4);
    int64_t id = put(&s, r, 0, NULL);
    char saved[300], body[400];
    snprintf(saved, sizeof saved, "%s/program.gp", dir);
    snprintf(body, sizeof body, "cat > '%s'\nexit 1", saved);
    setenv("DPSIM_GNUPLOT", fake_gnuplot(body), 1);
    const plot_kind kinds[] = {PLOT_COMPARE, PLOT_FLOPS, PLOT_TIMELINE,
                               PLOT_BATCHES, PLOT_LINKS, PLOT_STALENESS};
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++)
        for (int sized = 0; sized < 2; sized++) {
            plot_sel sel = auto_sel();
            sel.run_ids = &id;
            sel.n_runs = 1;
            if (sized)
                sel.width_px = 640, sel.height_px = 480;
            dp_err err = {0};
            remove(saved);
            cr_expect_eq(draw(kinds[k], &sel, "sz.png", &err), DP_ERUN, "kind %d: %s", (int)kinds[k],
                         err.msg);
            FILE *f = fopen(saved, "r");
            cr_assert_not_null(f, "kind %d: no program saved", (int)kinds[k]);
            char line[512];
            int found = 0;
            while (fgets(line, sizeof line, f))
                found |= strstr(line, "set terminal pngcairo size 640,480 ") != NULL;
            fclose(f);
            cr_expect_eq(found, sized, "kind %d, --size %s", (int)kinds[k], sized ? "given" : "not given");
        }
    unsetenv("DPSIM_GNUPLOT");
}
