/* test_scenario.c: the scenario loader.  Every file in scenarios/ loads;
 * each kind of bad input gives DP_EINPUT and one message naming
 * FILE:LINE:COLUMN and the key path; overrides edit, create and fail as
 * documented; compute models and the memory check; no leaks, also when
 * allocations fail part way. */
#include "policy/policy.h"
#include "scenario.h"

#include <criterion/criterion.h>
#include "leaks.h"
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static long live0;
static void setup(void)
{
    live0 = dp_alloc_live();
}
static void teardown(void)
{
    dp_alloc_fail_after(0);
    leaks_verify(live0);
}
TestSuite(scenario, .init = setup, .fini = teardown);

/* Line numbers below refer to this text. */
static const char *BASE = "name: t\n"                                                 /* 1 */
                          "model: { params: 1000, flops_per_sample: 1e6 }\n"          /* 2 */
                          "dataset: { samples: 100, sample_bytes: 1KB }\n"            /* 3 */
                          "training: { epochs: 2 }\n"                                 /* 4 */
                          "devices:\n"                                                /* 5 */
                          "  - name: gpu\n"                                           /* 6 */
                          "    count: 2\n"                                            /* 7 */
                          "    kind: gpu\n"                                           /* 8 */
                          "    memory: 1GiB\n"                                        /* 9 */
                          "    batch: 8\n"                                            /* 10 */
                          "    batch_time: 10ms\n"                                    /* 11 */
                          "    link: { up: 100Mbps, down: 100Mbps, latency: 20ms }\n" /* 12 */
                          "  - name: cpu\n"                                           /* 13 */
                          "    kind: cpu\n"                                           /* 14 */
                          "    memory: 1GiB\n"                                        /* 15 */
                          "    batch: 4\n"                                            /* 16 */
                          "    peak_flops: 1GFLOPS\n"                                 /* 17 */
                          "    efficiency: 0.5\n"                                     /* 18 */
                          "    link: { up: 10Mbps, down: 10Mbps }\n";                 /* 19 */

static char textbufs[4][8192];
static int textbuf_next;

/* src with the first `from` replaced by `to` (in one of four rotating buffers). */
static const char *subst(const char *src, const char *from, const char *to)
{
    char *out = textbufs[textbuf_next++ % 4];
    const char *p = strstr(src, from);
    cr_assert_not_null(p, "'%s' not in the text", from);
    snprintf(out, sizeof textbufs[0], "%.*s%s%s", (int)(p - src), src, to, p + strlen(from));
    return out;
}

static const char *with(const char *from, const char *to)
{
    return subst(BASE, from, to);
}

/* Load as the command line does: the scenario, then its policies' options. */
static scn_scenario *load(const char *text, const scn_override *ov, size_t n, dp_err *e)
{
    scn_scenario *s = scn_load_string("t.yaml", text, strlen(text), NULL, ov, n, e);
    if (s && policy_check_scenario(s, e)) {
        scn_free(s);
        return NULL;
    }
    return s;
}

/* Option `key` of policy `p` in scenario s. */
static double opt(const scn_scenario *s, const char *p, const char *key)
{
    return policy_option_num(policy_find(p), s, key);
}

static scn_scenario *load_ok(const char *text, const scn_override *ov, size_t n)
{
    dp_err e = {0};
    scn_scenario *s = load(text, ov, n, &e);
    cr_assert_not_null(s, "should load: %s", e.msg);
    return s;
}

static void bad_ov(const char *text, const scn_override *ov, size_t n, const char *needle)
{
    dp_err e = {0};
    scn_scenario *s = load(text, ov, n, &e);
    cr_assert_null(s, "should fail with '%s'", needle);
    cr_assert_eq(e.code, DP_EINPUT, "code %d: %s", e.code, e.msg);
    cr_assert(strstr(e.msg, needle), "message lacks\n  '%s'\ngot\n  '%s'", needle, e.msg);
    cr_assert_null(strchr(e.msg, '\n'), "one line: %s", e.msg);
}

static void bad(const char *text, const char *needle)
{
    bad_ov(text, NULL, 0, needle);
}

static const char *src_path(const char *rel)
{
    static char buf[2048];
    const char *src = getenv("DPSIM_SRC");
    snprintf(buf, sizeof buf, "%s/%s", src ? src : "..", rel);
    return buf;
}

Test(scenario, base_loads_with_defaults)
{
    scn_scenario *s = load_ok(BASE, NULL, 0);
    cr_assert_str_eq(s->name, "t");
    cr_assert_str_eq(s->path, "t.yaml");
    cr_assert_str_eq(s->text, BASE);
    cr_assert_eq(s->n_groups, 2);
    cr_assert_eq(s->n_devices, 3);
    cr_assert_str_eq(s->devices[0].name, "gpu[0]");
    cr_assert_str_eq(s->devices[1].name, "gpu[1]");
    cr_assert_str_eq(s->devices[2].name, "cpu");
    cr_assert_eq(s->devices[2].group, 1);
    cr_assert_eq(s->devices[1].index, 1);
    cr_assert_float_eq(s->model.bytes_per_param, 4, 0);
    cr_assert_float_eq(s->model.model_bytes, 4000, 0);
    cr_assert_float_eq(s->model.train_flops_per_sample, 6e6, 1e-6);
    cr_assert_float_eq(s->model.state_factor, 4, 0);
    cr_assert_eq(s->model.activation_bytes_per_sample, 0);
    cr_assert_eq(s->dataset.samples, 100);
    cr_assert_float_eq(s->dataset.sample_bytes, 1000, 0);
    cr_assert_eq(s->training.epochs, 2);
    cr_assert_eq(s->training.seed, 1);
    cr_assert(isinf(s->server.nic_up_Bps) && isinf(s->server.nic_down_Bps) && isinf(s->server.aggregate_Bps));
    cr_assert_eq(s->server.site, -1);
    cr_assert_eq(s->network.tcp_window_bytes, 0);
    cr_assert_eq(s->interconnect.bandwidth_Bps, 0);
    cr_assert_eq(s->n_sites, 0);
    cr_assert_eq(s->n_wan, 0);
    const scn_group *g = &s->groups[0];
    cr_assert_eq(g->count, 2);
    cr_assert_eq(g->kind, SCN_GPU);
    cr_assert_eq(g->site, -1);
    cr_assert_eq(g->line, 6);
    cr_assert_eq(g->column, 5);
    cr_assert_float_eq(g->link.up_Bps, 12.5e6, 1e-6);
    cr_assert_float_eq(g->link.latency_s, 0.02, 1e-15);
    cr_assert_null(g->link.down_trace);
    cr_assert_eq(s->groups[1].link.latency_s, 0);
    cr_assert_float_eq(opt(s, "ddp", "bucket"), 25.0 * 1048576, 0);
    cr_assert_eq(opt(s, "ddp", "data"), 0);
    cr_assert_eq(opt(s, "ddp", "overlap"), 1);
    cr_assert_float_eq(opt(s, "ddp", "backward_fraction"), 2.0 / 3, 1e-15);
    cr_assert_eq(opt(s, "ddp", "collective"), 0);
    cr_assert_eq(opt(s, "deepspeed", "stage"), 2);
    cr_assert_eq(opt(s, "deepspeed", "grad_accum"), 1);
    cr_assert_eq(opt(s, "deepspeed", "overlap_comm"), 0); /* stage 2: off */
    cr_assert_eq(opt(s, "cadp", "solver"), 0);
    cr_assert_eq(opt(s, "cadp", "rounding"), 0);
    cr_assert_eq(opt(s, "cadp", "exclude_slow"), 1);
    uint64_t h = s->text_hash;
    scn_free(s);
    s = load_ok(with("name: t", "name: u"), NULL, 0);
    cr_assert_neq(s->text_hash, h);
    scn_free(s);
    scn_free(NULL);
}

Test(scenario, every_file_in_scenarios_loads)
{
    DIR *d = opendir(src_path("scenarios"));
    cr_assert_not_null(d);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l < 6 || strcmp(de->d_name + l - 5, ".yaml") != 0)
            continue;
        char rel[600];
        snprintf(rel, sizeof rel, "scenarios/%s", de->d_name);
        dp_err e = {0};
        scn_scenario *s = scn_load_file(src_path(rel), NULL, 0, &e);
        cr_assert_not_null(s, "%s: %s", rel, e.msg);
        cr_assert(s->n_devices >= 1);
        char *buf = NULL;
        size_t len = 0;
        FILE *mem = open_memstream(&buf, &len);
        scn_print_summary(s, 0, mem);
        fclose(mem);
        cr_assert(strstr(buf, "samples/s"), "%s", buf);
        free(buf);
        scn_free(s);
        n++;
    }
    closedir(d);
    cr_assert_geq(n, 3, "found %d scenario files", n);
}

Test(scenario, shipped_scenarios_have_their_shape)
{
    dp_err e = {0};
    scn_scenario *s = scn_load_file(src_path("scenarios/geo-3sites.yaml"), NULL, 0, &e);
    cr_assert_not_null(s, "%s", e.msg);
    cr_assert_eq(s->n_sites, 3);
    cr_assert_eq(s->n_wan, 3); /* every pair */
    int traced = 0, gpus = 0, cpus = 0;
    for (size_t i = 0; i < s->n_wan; i++)
        traced += s->wan[i].trace != NULL;
    for (size_t i = 0; i < s->n_groups; i++) {
        traced += s->groups[i].link.down_trace != NULL || s->groups[i].link.up_trace != NULL;
        gpus += s->groups[i].kind == SCN_GPU;
        cpus += s->groups[i].kind == SCN_CPU;
    }
    cr_assert_geq(traced, 1);
    cr_assert(gpus > 0 && cpus > 0);
    scn_free(s);

    s = scn_load_file(src_path("scenarios/tiny.yaml"), NULL, 0, &e);
    cr_assert_not_null(s, "%s", e.msg);
    cr_assert(s->n_devices >= 2 && s->n_devices <= 3);
    cr_assert_leq(s->dataset.samples, 1000);
    scn_free(s);
}

Test(scenario, builtin_paper_testbed_matches_file)
{
    dp_err e = {0};
    scn_scenario *b = scn_load_builtin("paper-testbed", NULL, 0, &e);
    cr_assert_not_null(b, "%s", e.msg);
    cr_assert_str_eq(b->path, "<builtin:paper-testbed>");
    scn_scenario *f = scn_load_file(src_path("scenarios/paper-testbed.yaml"), NULL, 0, &e);
    cr_assert_not_null(f, "%s", e.msg);
    cr_assert_eq(b->text_hash, f->text_hash);
    cr_assert_eq(b->n_devices, 8);
    cr_assert_eq(f->n_devices, 8);
    scn_free(b);
    scn_free(f);
    scn_override ov = {"devices.rtx3090.count", "2"};
    b = scn_load_builtin("paper-testbed", &ov, 1, &e);
    cr_assert_not_null(b, "%s", e.msg);
    cr_assert_eq(b->n_devices, 6);
    scn_free(b);
    cr_assert_null(scn_load_builtin("nope", NULL, 0, &e));
    cr_assert_eq(e.code, DP_EINPUT);
}

Test(scenario, yaml_syntax_errors)
{
    bad(with("down: 100Mbps, latency", "down: [100Mbps, latency"), "t.yaml:12:");
    bad(with("down: 100Mbps, latency", "down: [100Mbps, latency"), "YAML syntax error");
    bad("a: b: c\n", "t.yaml:1:5: YAML syntax error: mapping values are not allowed in this context");
    bad("a: \"unterminated\n", "YAML syntax error");
    bad("a: 1\n---\nb: 2\n", "t.yaml:2:1: more than one YAML document");
    bad("- a\n- b\n", "t.yaml:1:1: the top level must be a mapping of keys (got a list)");
    bad("just text\n", "the top level must be a mapping");
    bad("a: *nope\n", "t.yaml:1:4: a: unknown alias (got '*nope')");
    /* parse-level messages name the key path, like every other message */
    bad("devices:\n  - link: [1, *nope]\n", "t.yaml:2:15: devices[0].link[1]: unknown alias (got '*nope')");
    bad("model:\n  params: \"unterminated\n", "model.params: YAML syntax error");
    bad("a: \"\\0\"\n", "NUL character");
    bad("a: \x01\n", "YAML syntax error");
    bad("a: \xff\n", "t.yaml:1:4: YAML syntax error: invalid leading UTF-8 octet (got byte 0xff)");
}

Test(scenario, empty_inputs_directory_and_size_limit)
{
    bad("", "t.yaml:1:1: empty scenario file");
    bad("# nothing but a comment\n\n", "t.yaml:1:1: empty scenario file");
    bad("---\n", "empty scenario file");
    dp_err e = {0};
    cr_assert_null(scn_load_file("data/empty.yaml", NULL, 0, &e));
    cr_assert(strstr(e.msg, "data/empty.yaml:1:1: empty scenario file"), "%s", e.msg);
    cr_assert_null(scn_load_file("data", NULL, 0, &e));
    cr_assert(strstr(e.msg, "data: is a directory, not a scenario file"), "%s", e.msg);
    cr_assert_null(scn_load_file("data/missing.yaml", NULL, 0, &e));
    cr_assert(strstr(e.msg, "data/missing.yaml: cannot open scenario file"), "%s", e.msg);
    cr_assert_null(scn_load_file("", NULL, 0, &e));
    cr_assert_eq(e.code, DP_EINPUT);
    /* A sparse 65 MiB file: refused before reading. */
    char tmp[] = "/tmp/dpsim-big-XXXXXX";
    int fd = mkstemp(tmp);
    cr_assert_geq(fd, 0);
    cr_assert_eq(ftruncate(fd, 65L << 20), 0);
    close(fd);
    cr_assert_null(scn_load_file(tmp, NULL, 0, &e));
    unlink(tmp);
    cr_assert(strstr(e.msg, "larger than the 64 MiB limit"), "%s", e.msg);
    cr_assert_eq(e.code, DP_EINPUT);
}

Test(scenario, billion_laughs_and_deep_nesting_are_capped)
{
    dp_err e = {0};
    cr_assert_null(scn_load_file("data/billion-laughs.yaml", NULL, 0, &e));
    cr_assert_eq(e.code, DP_EINPUT);
    cr_assert(strstr(e.msg, "more than 4000000 nodes"), "%s", e.msg);
    char deep[400];
    size_t k = 0;
    k += (size_t)snprintf(deep, sizeof deep, "a: ");
    for (int i = 0; i < 100; i++)
        deep[k++] = '[';
    for (int i = 0; i < 100; i++)
        deep[k++] = ']';
    deep[k++] = '\n';
    deep[k] = '\0';
    bad(deep, "nesting deeper than 64 levels");
    /* A self-referencing alias is refused, not expanded. */
    bad("a: &x [1, *x]\n", "alias refers to a node that contains it");
    /* Aliases that stay small are fine (and expanded). */
    char txt[4096];
    snprintf(txt, sizeof txt, "%s", BASE);
    char *p = strstr(txt, "link: { up: 10Mbps, down: 10Mbps }");
    snprintf(p, sizeof txt - (size_t)(p - txt), "link: *l\n");
    char *q = strstr(txt, "link: { up: 100Mbps");
    memmove(q + 9, q + 6, strlen(q + 6) + 1);
    memcpy(q, "link: &l ", 9);
    scn_scenario *s = load_ok(txt, NULL, 0);
    cr_assert_float_eq(s->groups[1].link.up_Bps, 12.5e6, 1e-6);
    scn_free(s);
}

Test(scenario, unknown_keys_suggest_the_nearest)
{
    bad(with("latency: 20ms", "lantency: 20ms"),
        "t.yaml:12:41: devices.gpu.link.lantency: unknown key, did you mean 'latency'? (got 'lantency')");
    bad(with("training:", "trainig:"), "t.yaml:4:1: trainig: unknown key, did you mean 'training'?");
    bad(with("    count: 2\n", "    colour: red\n"),
        "t.yaml:7:5: devices.gpu.colour: unknown key; known keys here:");
    bad(with("epochs: 2", "epochs: 2, epochz: 3"), "t.yaml:4:24: training.epochz: unknown key, did you mean");
    bad(with("    count: 2\n", "    count: 2\n    count: 3\n"),
        "t.yaml:8:5: devices.gpu.count: duplicate key, first at line 7");
}

Test(scenario, missing_required_keys)
{
    bad(with("    batch: 4\n", ""), "t.yaml:13:5: devices.cpu: missing required key 'batch'");
    bad(with("training: { epochs: 2 }\n", ""), "t.yaml:1:1: (top level): missing required key 'training'");
    bad(with("params: 1000, ", ""), "t.yaml:2:8: model: missing required key 'params'");
    bad(with("    link: { up: 10Mbps, down: 10Mbps }\n", "    link: { up: 10Mbps }\n"),
        "t.yaml:19:11: devices.cpu.link: missing required key 'down'");
    bad(with("epochs: 2", "epochs: "), "training: missing required key 'epochs'");
    bad(with("  - name: cpu\n", "  - nam: cpu\n"), "unknown key, did you mean 'name'?");
}

Test(scenario, wrong_types)
{
    bad(with("count: 2", "count: [2]"),
        "t.yaml:7:12: devices.gpu.count: expected a single value (got a list)");
    bad(with("link: { up: 100Mbps, down: 100Mbps, latency: 20ms }", "link: fast"),
        "t.yaml:12:11: devices.gpu.link: expected a mapping of keys (got fast)");
    bad(with("count: 2", "count: two"), "t.yaml:7:12: devices.gpu.count: not a number");
    bad(with("count: 2", "count: 2.5"), "t.yaml:7:12: devices.gpu.count: must be a whole number (got 2.5)");
    bad(with("kind: gpu", "kind: gpux"),
        "t.yaml:8:11: devices.gpu.kind: expected one of gpu, cpu, did you mean 'gpu'?");
    bad(with("devices:\n", "devices: 3\nx:\n"), "unknown key");
    bad(with("name: t\n", "name: t\npolicies: { cadp: { exclude_slow: maybe } }\n"),
        "t.yaml:2:35: policies.cadp.exclude_slow: expected true or false (got maybe)");
}

Test(scenario, bad_values_zero_negative_nan_inf)
{
    bad(with("count: 2", "count: 0"), "t.yaml:7:12: devices.gpu.count: must be >= 1 in a file");
    bad(with("batch: 8", "batch: -8"), "t.yaml:10:12: devices.gpu.batch: must be >= 1 (got -8)");
    bad(with("batch_time: 10ms", "batch_time: .nan"), "t.yaml:11:17: devices.gpu.batch_time: not a time");
    bad(with("batch_time: 10ms", "batch_time: inf"), "devices.gpu.batch_time: not a time");
    bad(with("batch_time: 10ms", "batch_time: -1s"), "devices.gpu.batch_time: must be > 0 (got -1s)");
    bad(with("batch_time: 10ms", "batch_time: 0"), "devices.gpu.batch_time: must be > 0 (got 0)");
    bad(with("up: 100Mbps", "up: 0Mbps"), "t.yaml:12:17: devices.gpu.link.up: must be > 0 (got 0Mbps)");
    bad(with("latency: 20ms", "latency: -1ms"), "devices.gpu.link.latency: must be >= 0 (got -1ms)");
    bad(with("sample_bytes: 1KB", "sample_bytes: 1e999"), "dataset.sample_bytes: size out of range");
    bad(with("efficiency: 0.5", "efficiency: 1.5"), "devices.cpu.efficiency: must be at most 1");
    bad(with("params: 1000", "params: 0"), "t.yaml:2:18: model.params: must be > 0 (got 0)");
}

Test(scenario, unknown_units)
{
    bad(with("up: 100Mbps", "up: 100Mbs"), "t.yaml:12:17: devices.gpu.link.up: unknown bandwidth unit 'Mbs', "
                                           "did you mean 'Mbps'? (got '100Mbs')");
    bad(with("memory: 1GiB", "memory: 1Gib"), "devices.gpu.memory: unknown size unit 'Gib'");
    bad(with("batch_time: 10ms", "batch_time: 10 fortnights"), "devices.gpu.batch_time: unknown time unit");
}

Test(scenario, absurd_values_hit_documented_limits)
{
    bad(with("count: 2", "count: 1e12"), "t.yaml:7:12: devices.gpu.count: must be at most 1000000 (the limit "
                                         "on devices per group) (got 1e12)");
    bad(with("samples: 100", "samples: 1e18"),
        "t.yaml:3:21: dataset.samples: must be at most 1000000000000000 (the limit on dataset samples)");
    bad(with("epochs: 2", "epochs: 1e9"), "training.epochs: must be at most 1000000 (the limit on epochs)");
    bad(with("batch: 8", "batch: 1e10"),
        "devices.gpu.batch: must be at most 10000000 (the limit on batch size)");
    bad(with("params: 1000", "params: 1e20"), "model.params: must be at most 1e+13");
    /* Two groups each under the per-group limit, over the total. */
    const char *t = with("count: 2", "count: 1000000");
    bad(subst(t, "  - name: cpu\n", "  - name: cpu\n    count: 1000000\n"),
        "t.yaml:14:12: devices.cpu.count: more than 1000000 devices in total (the limit on devices)");
}

Test(scenario, names_sites_and_duplicates)
{
    bad(with("  - name: cpu\n", "  - name: gpu\n"),
        "t.yaml:13:11: devices[1].name: duplicate device name, also devices[0] at line 6 (got gpu)");
    bad(with("  - name: cpu\n", "  - name: c.p.u\n"), "devices[1].name: a name may hold only letters");
    const char *sites = "name: t\nsites: [hz, remote]\n";
    char txt[4096];
    snprintf(txt, sizeof txt, "%s%s", sites, with("    kind: cpu\n", "    kind: cpu\n    site: hx\n") + 8);
    bad(txt, "t.yaml:16:11: devices.cpu.site: unknown site, did you mean 'hz'? (have: hz, remote) (got hx)");
    snprintf(txt, sizeof txt, "%s%s", "name: t\n",
             with("    kind: cpu\n", "    kind: cpu\n    site: hz\n") + 8);
    bad(txt, "devices.cpu.site: unknown site: the scenario has no `sites` list (got hz)");
    snprintf(txt, sizeof txt, "name: t\nsites: [a, a]\n%s", BASE + 8);
    bad(txt, "t.yaml:2:12: sites[1]: duplicate site name (got a)");
    snprintf(txt, sizeof txt, "name: t\nsites: [a, b]\nwan: [{between: [a, c], bandwidth: 1Gbps}]\n%s",
             BASE + 8);
    bad(txt, "t.yaml:3:21: wan[0].between: unknown site (have: a, b) (got c)");
    snprintf(txt, sizeof txt, "name: t\nsites: [a, b]\nwan: [{between: [a, a], bandwidth: 1Gbps}]\n%s",
             BASE + 8);
    bad(txt, "wan[0].between: a WAN link joins two different sites");
    snprintf(
        txt, sizeof txt,
        "name: t\nsites: [a, b]\nwan: [{between: [a, b], bandwidth: 1Gbps}, {between: [b, a], bandwidth: "
        "1Gbps}]\n%s",
        BASE + 8);
    bad(txt, "wan.b-a: duplicate WAN link between these sites (also wan[0])");
    snprintf(txt, sizeof txt, "name: t\nserver: { site: z }\n%s", BASE + 8);
    bad(txt, "t.yaml:2:17: server.site: unknown site: the scenario has no `sites` list");
}

Test(scenario, compute_model_exactly_one)
{
    bad(with("    batch_time: 10ms\n", ""), "t.yaml:6:5: devices.gpu: give exactly one compute model");
    bad(with("    batch_time: 10ms\n", "    batch_time: 10ms\n    peak_flops: 1TFLOPS\n"),
        "devices.gpu: give exactly one compute model: batch_time, batch_table or peak_flops (got 2)");
    bad(with("    batch_time: 10ms\n", "    batch_time: 10ms\n    efficiency: 0.3\n"),
        "t.yaml:12:5: devices.gpu.efficiency: applies only with peak_flops (got 0.3)");
    bad(with("    efficiency: 0.5\n", ""), "devices.cpu: missing required key 'efficiency'");
    bad(with("batch_time: 10ms", "batch_table: [[1, 0.02]]"), "devices.gpu.batch_table: needs 2 to 10000");
    bad(with("batch_time: 10ms", "batch_table: [[1, 0.02], [1, 0.03]]"), "batch 1 appears twice");
    bad(with("batch_time: 10ms", "batch_table: [[1, 0.02], [0, 0.03]]"),
        "t.yaml:11:31: devices.gpu.batch_table[1]: batch must be a whole number from 1");
    bad(with("batch_time: 10ms", "batch_table: [[1, 0.02], [4, -3]]"), "seconds must be at least 1 ns");
    bad(with("batch_time: 10ms", "batch_table: [1, 2]"), "expected a point [batch, seconds] (got 1)");
}

Test(scenario, batch_time_all_three_kinds)
{
    scn_scenario *s =
        load_ok(with("batch_time: 10ms", "batch_table: [[64, 0.43], [1, 0.02], [16, 0.1]]"), NULL, 0);
    const scn_group *t = &s->groups[0], *d = &s->groups[1];
    cr_assert_eq(t->compute, SCN_COMPUTE_TABLE);
    cr_assert_eq(t->table_n, 3);
    cr_assert_eq(t->table_batch[0], 1); /* sorted */
    cr_assert_float_eq(scn_batch_time(s, t, 1), 0.02, 1e-12);
    cr_assert_float_eq(scn_batch_time(s, t, 16), 0.1, 1e-12);
    cr_assert_float_eq(scn_batch_time(s, t, 8), 0.02 + 0.08 * 7 / 15, 1e-12);
    cr_assert_float_eq(scn_batch_time(s, t, 40), 0.1 + 0.33 * 24 / 48, 1e-12);
    cr_assert_float_eq(scn_batch_time(s, t, 128), 0.43 + 0.33 * 64 / 48, 1e-12); /* extrapolated */
    cr_assert_eq(d->compute, SCN_COMPUTE_DERIVED);
    cr_assert_float_eq(scn_batch_time(s, d, 4), 4 * 6e6 / (1e9 * 0.5), 1e-12);
    cr_assert_float_eq(scn_batch_time(s, d, 1), 6e6 / (1e9 * 0.5), 1e-12);
    cr_assert_eq(scn_batch_time(s, d, 0), 0);
    scn_free(s);

    s = load_ok(with("    efficiency: 0.5\n", "    efficiency: 0.5\n    overhead: 5ms\n    noise: 0.05\n"),
                NULL, 0);
    const scn_group *m = &s->groups[0];
    d = &s->groups[1];
    cr_assert_float_eq(scn_batch_time(s, d, 4), 0.005 + 0.048, 1e-12);
    cr_assert_float_eq(d->noise_cv, 0.05, 1e-15);
    cr_assert_eq(m->compute, SCN_COMPUTE_MEASURED);
    cr_assert_float_eq(scn_batch_time(s, m, 8), 0.01, 1e-15);
    cr_assert_float_eq(scn_batch_time(s, m, 1), 0.01, 1e-15); /* a short batch costs a full one */
    cr_assert_float_eq(scn_batch_time(s, m, 9), 0.02, 1e-15);
    cr_assert_float_eq(scn_batch_time(s, m, 64), 0.08, 1e-15);
    scn_free(s);
}

Test(scenario, memory_and_dataset_checks)
{
    /* state 4 x 4000 B = 16 KB; activations 8 x 100 MB = 800 MB > 512 MiB. */
    const char *t =
        with("model: { params: 1000, flops_per_sample: 1e6 }",
             "model: { params: 1000, flops_per_sample: 1e6, activation_bytes_per_sample: 100MB }");
    char txt[4096];
    snprintf(txt, sizeof txt, "%s", t);
    char *p = strstr(txt, "memory: 1GiB");
    memcpy(p, "memory: 512M", 12);
    memmove(p + 14, p + 12, strlen(p + 12) + 1);
    memcpy(p + 12, "iB", 2);
    bad(txt, "t.yaml:10:12: devices.gpu.batch: device 'gpu' cannot hold batch 8: model state");
    bad(txt, "> memory 512 MiB (got 8)");
    /* The same with room is fine; model state alone can also overflow. */
    scn_scenario *s = load_ok(t, NULL, 0);
    scn_free(s);
    bad(with("params: 1000", "params: 1e9"), "device 'gpu' cannot hold batch 8: model state 14.9");
    bad(with("batch: 8", "batch: 101"),
        "t.yaml:10:12: devices.gpu.batch: batch is larger than the dataset (100 samples) (got 101)");
}

Test(scenario, traces_in_scenarios)
{
    char txt[4096];
    snprintf(txt, sizeof txt, "%s",
             with("link: { up: 10Mbps, down: 10Mbps }",
                  "link: { down_trace: traces/step-50-100Mbps.csv, up_trace: { file: "
                  "traces/verizon-lte-down-1s.csv, mean: 20Mbps, loop: true } }"));
    dp_err e = {0};
    const char *src = getenv("DPSIM_SRC");
    scn_scenario *s = scn_load_string("t.yaml", txt, strlen(txt), src ? src : "..", NULL, 0, &e);
    cr_assert_not_null(s, "%s", e.msg);
    const scn_link *l = &s->groups[1].link;
    cr_assert_not_null(l->down_trace);
    cr_assert_eq(l->down_trace->loop, 0);          /* CSV default */
    cr_assert_float_eq(l->down_Bps, 12.5e6, 1e-6); /* absent: the trace's long-run mean (held 100 Mbit/s) */
    cr_assert_float_eq(trace_value_at(l->down_trace, 12), 12.5e6, 1e-6);
    cr_assert_float_eq(trace_mean(l->up_trace), 2.5e6, 1e-3);
    cr_assert_eq(l->up_trace->loop, 1);
    cr_assert_float_eq(l->up_Bps, 2.5e6, 1e-3); /* absent: the rescaled trace's mean */
    scn_free(s);
    /* issue 11 item 5: a constant next to the trace it would be ignored for
     * is an error naming both keys and where they are */
    snprintf(txt, sizeof txt, "%s",
             with("link: { up: 10Mbps, down: 10Mbps }",
                  "link: { up: 10Mbps, down: 1Mbps, down_trace: traces/step-50-100Mbps.csv }"));
    s = scn_load_string("t.yaml", txt, strlen(txt), src ? src : "..", NULL, 0, &e);
    cr_assert_null(s);
    cr_expect(
        strstr(e.msg, "t.yaml:19:31: devices.cpu.link.down: given together with 'down_trace' (t.yaml:19:50)"),
        "%s", e.msg);
    snprintf(txt, sizeof txt, "%s",
             with("link: { up: 10Mbps, down: 10Mbps }",
                  "link: { down: 10Mbps, up: 1Mbps, up_trace: traces/step-50-100Mbps.csv }"));
    s = scn_load_string("t.yaml", txt, strlen(txt), src ? src : "..", NULL, 0, &e);
    cr_assert_null(s);
    cr_expect(strstr(e.msg, "devices.cpu.link.up: given together with 'up_trace'"), "%s", e.msg);
    /* Missing, malformed, a directory, bad options. */
    bad(with("down: 10Mbps }", "down: 10Mbps, down_trace: nope.csv }"),
        "t.yaml:19:51: devices.cpu.link.down_trace: trace file not found (got nope.csv)");
    cr_assert_null(scn_load_file("data/bad-trace-ref.yaml", NULL, 0, &e));
    cr_assert(strstr(e.msg, "data/bad-trace-ref.yaml:11:51: devices.d.link.down_trace: "
                            "data/trace-negative.csv:3:3: negative value (got -1)"),
              "%s", e.msg);
    cr_assert_eq(e.code, DP_EINPUT);
    bad(with("down: 10Mbps }", "down: 10Mbps, down_trace: / }"),
        "devices.cpu.link.down_trace: /: is a directory");
    bad(with("down: 10Mbps }", "down: 10Mbps, down_trace: { file: /, formt: csv } }"),
        "devices.cpu.link.down_trace.formt: unknown key, did you mean 'format'?");
    bad(with("down: 10Mbps }", "down: 10Mbps, down_trace: { format: csv } }"),
        "devices.cpu.link.down_trace: missing required key 'file'");
    bad(with("down: 10Mbps }", "down: 10Mbps, down_trace: [a] }"), "expected a file name or a mapping");
}

/* The loader records every trace file it read (once per name as written,
 * with an absolute path and the exact bytes), and scn_load_string_files
 * takes a trace from the given copy instead of the disk: how a stored run is
 * simulated again after its file moved, changed or was deleted. */
Test(scenario, trace_files_are_recorded_and_can_be_given)
{
    char txt[4096];
    snprintf(txt, sizeof txt, "%s",
             with("link: { up: 10Mbps, down: 10Mbps }",
                  "link: { down_trace: traces/step-50-100Mbps.csv, up_trace: traces/step-50-100Mbps.csv }"));
    dp_err e = {0};
    const char *src = getenv("DPSIM_SRC");
    scn_scenario *s = scn_load_string("t.yaml", txt, strlen(txt), src ? src : "..", NULL, 0, &e);
    cr_assert_not_null(s, "%s", e.msg);
    cr_assert_eq(s->n_files, 1, "one name, read once");
    const scn_file *f = &s->files[0];
    cr_expect_str_eq(f->name, "traces/step-50-100Mbps.csv");
    cr_expect_eq(f->path[0], '/', "absolute path: %s", f->path);
    size_t len = 0;
    char *disk = dp_read_file(src_path("traces/step-50-100Mbps.csv"), "trace", 1 << 20, &len, &e);
    cr_assert_not_null(disk, "%s", e.msg);
    cr_expect(f->len == len && memcmp(f->data, disk, len) == 0);
    cr_expect_eq(f->hash, scn_hash(disk, len));
    dp_free(disk);
    scn_free(s);

    /* a name that exists nowhere on disk, given: loads from the copy */
    const char *gone =
        with("link: { up: 10Mbps, down: 10Mbps }", "link: { up: 10Mbps, down_trace: gone/x.csv }");
    bad(gone, "trace file not found (got gone/x.csv)");
    scn_file given = {(char *)"gone/x.csv", (char *)"/was/here/x.csv", (char *)"0,8000000\n10,16000000\n", 22,
                      0};
    s = scn_load_string_files("t.yaml", gone, strlen(gone), NULL, &given, 1, NULL, 0, &e);
    cr_assert_not_null(s, "%s", e.msg);
    cr_expect_float_eq(trace_value_at(s->groups[1].link.down_trace, 11), 2e6, 1e-9);
    cr_assert_eq(s->n_files, 1);
    cr_expect_str_eq(s->files[0].path, "/was/here/x.csv");
    cr_expect_eq(s->files[0].hash, scn_hash(given.data, given.len));
    scn_free(s);
    /* a given copy wins over the file on disk */
    snprintf(txt, sizeof txt, "%s",
             with("link: { up: 10Mbps, down: 10Mbps }",
                  "link: { up: 10Mbps, down_trace: traces/step-50-100Mbps.csv }"));
    given.name = (char *)"traces/step-50-100Mbps.csv";
    s = scn_load_string_files("t.yaml", txt, strlen(txt), src ? src : "..", &given, 1, NULL, 0, &e);
    cr_assert_not_null(s, "%s", e.msg);
    cr_expect_float_eq(trace_value_at(s->groups[1].link.down_trace, 11), 2e6, 1e-9);
    scn_free(s);
}

Test(scenario, overrides_edit_and_create)
{
    char trace_path[2048];
    snprintf(trace_path, sizeof trace_path, "%s", src_path("traces/step-50-100Mbps.csv"));
    scn_override ov[] = {
        {"devices.gpu.link.down", "50Mbps"},
        {"training.epochs", "3"},
        {"policies.ddp.bucket", "50MiB"},
        {"policies.cadp.solver", "alm"},
        {"devices.cpu.link.down_trace", trace_path},
        {"devices.cpu.link.down", "~"}, /* a constant next to a trace is an error */
        {"devices.1.batch", "2"},
        {"devices.gpu.batch_table", "[[1, 0.01], [8, 0.05]]"},
        {"devices.gpu.batch_time", "~"},
        {"model.activation_bytes_per_sample", "1KB"},
    };
    scn_scenario *s = load_ok(BASE, ov, sizeof ov / sizeof ov[0]);
    cr_assert_float_eq(s->groups[0].link.down_Bps, 6.25e6, 1e-6);
    cr_assert_eq(s->training.epochs, 3);
    cr_assert_float_eq(opt(s, "ddp", "bucket"), 50.0 * 1048576, 0);
    cr_assert_eq(opt(s, "cadp", "solver"), 1);
    cr_assert_not_null(s->groups[1].link.down_trace);
    cr_assert_eq(s->groups[1].batch, 2);
    cr_assert_eq(s->groups[0].compute, SCN_COMPUTE_TABLE);
    cr_assert_float_eq(s->model.activation_bytes_per_sample, 1000, 0);
    cr_assert_str_eq(s->text, BASE); /* the text is the file, overrides are not in it */
    scn_free(s);

    /* wan entries by A-B, either order; creating a key absent in the file. */
    char txt[4096];
    snprintf(txt, sizeof txt, "name: t\nsites: [a, b]\nwan: [{between: [a, b], bandwidth: 1Gbps}]\n%s",
             BASE + 8);
    scn_override w[] = {{"wan.b-a.bandwidth", "2Gbps"},
                        {"wan.a-b.latency", "30ms"},
                        {"sites.1", "c"},
                        {"wan.a-b.between", "[c, a]"}};
    s = load_ok(txt, w, 2);
    cr_assert_float_eq(s->wan[0].bandwidth_Bps, 2.5e8, 1e-3);
    cr_assert_float_eq(s->wan[0].latency_s, 0.03, 1e-15);
    scn_free(s);
    s = load_ok(txt, w + 2, 2);
    cr_assert_str_eq(s->sites[1], "c");
    cr_assert_eq(s->wan[0].site_a, 1);
    scn_free(s);
}

Test(scenario, override_count_zero_skips_a_group)
{
    scn_override ov = {"devices.gpu.count", "0"};
    scn_scenario *s = load_ok(BASE, &ov, 1);
    cr_assert_eq(s->n_groups, 2);
    cr_assert_eq(s->groups[0].count, 0);
    cr_assert_eq(s->n_devices, 1);
    cr_assert_str_eq(s->devices[0].name, "cpu");
    cr_assert_eq(s->devices[0].group, 1);
    scn_free(s);
    scn_override both[] = {{"devices.gpu.count", "0"}, {"devices.cpu.count", "0"}};
    bad_ov(BASE, both, 2, "t.yaml:6:3: devices: no devices: every group has count 0 (got 2 groups)");
}

Test(scenario, override_errors_name_the_override)
{
    scn_override a = {"devices.gpux.count", "3"};
    bad_ov(BASE, &a, 1, "override 'devices.gpux.count': no device named 'gpux' (have: gpu, cpu)");
    scn_override b = {"devices.gpu.link.latncy", "5ms"};
    bad_ov(BASE, &b, 1,
           "override devices.gpu.link.latncy=5ms: devices.gpu.link.latncy: unknown key, did you mean "
           "'latency'?");
    scn_override c = {"training.epochs", "0"};
    bad_ov(BASE, &c, 1, "override training.epochs=0: training.epochs: must be >= 1 (got 0)");
    scn_override d = {"devices.gpu.link.up", "50Mbs"};
    bad_ov(BASE, &d, 1,
           "override devices.gpu.link.up=50Mbs: devices.gpu.link.up: unknown bandwidth unit 'Mbs'");
    scn_override e = {"training.epochs.x", "1"};
    bad_ov(BASE, &e, 1,
           "override 'training.epochs.x': 'training.epochs' is a single value and has no key 'x'");
    scn_override f = {"training.epochs", "[1"};
    bad_ov(BASE, &f, 1, "override training.epochs=[1:2:1: YAML syntax error");
    scn_override g = {"wan.a-b.latency", "1ms"};
    bad_ov(BASE, &g, 1, "override 'wan.a-b.latency': no wan link named 'a-b'");
    scn_override h = {"", "1"};
    bad_ov(BASE, &h, 1, "key must be 1 to 256 characters");
    scn_override i = {"training..epochs", "1"};
    bad_ov(BASE, &i, 1, "empty part in key path");
    scn_override j = {"polices.cadp.solver", "alm"};
    bad_ov(BASE, &j, 1, "override polices.cadp.solver=alm: polices: unknown key, did you mean 'policies'?");
    scn_override k = {"policies.cadp.solver", "almm"};
    bad_ov(BASE, &k, 1,
           "policies.cadp.solver: expected one of exact, alm, simulate, did you mean 'alm'? (got almm)");
    scn_override l = {"devices.gpu.count", "-1"};
    bad_ov(BASE, &l, 1, "override devices.gpu.count=-1: devices.gpu.count: must be >= 0 (got -1)");
    scn_override m = {"devices.7.count", "1"};
    bad_ov(BASE, &m, 1, "no device named '7' (have: gpu, cpu)");
}

Test(scenario, policies_options)
{
    const char *t =
        with("name: t\n", "name: t\npolicies:\n"
                          "  ddp: { bucket: 10MiB, data: shard, overlap: false, backward_fraction: 0.5, "
                          "collective: analytic }\n"
                          "  deepspeed: { stage: 3, grad_accum: 4, overlap_comm: true, data: shard }\n"
                          "  cadp: { solver: alm, rounding: largest_remainder, exclude_slow: no }\n"
                          "network: { tcp_window: 4MiB }\n"
                          "interconnect: { bandwidth: 10Gbps, latency: 50us }\n");
    scn_scenario *s = load_ok(t, NULL, 0);
    cr_assert_float_eq(opt(s, "ddp", "bucket"), 10.0 * 1048576, 0);
    cr_assert_eq(opt(s, "ddp", "data"), 1);
    cr_assert_eq(opt(s, "ddp", "overlap"), 0);
    cr_assert_float_eq(opt(s, "ddp", "backward_fraction"), 0.5, 0);
    cr_assert_eq(opt(s, "ddp", "collective"), 1);
    cr_assert_eq(opt(s, "deepspeed", "stage"), 3);
    cr_assert_eq(opt(s, "deepspeed", "grad_accum"), 4);
    cr_assert_eq(opt(s, "deepspeed", "overlap_comm"), 1);
    cr_assert_eq(opt(s, "deepspeed", "data"), 1);
    cr_assert_eq(opt(s, "cadp", "rounding"), 1);
    cr_assert_eq(opt(s, "cadp", "exclude_slow"), 0);
    cr_assert_float_eq(s->network.tcp_window_bytes, 4.0 * 1048576, 0);
    cr_assert_eq(s->network.sharing, SCN_SHARE_MAXMIN); /* the default */
    cr_assert_float_eq(s->interconnect.bandwidth_Bps, 1.25e9, 1e-3);
    cr_assert_float_eq(s->interconnect.latency_s, 50e-6, 1e-18);
    scn_free(s);
    bad(with("name: t\n", "name: t\npolicies: { deepspeed: { stage: 4 } }\n"),
        "policies.deepspeed.stage: must be at most 3 (the limit on this key) (got 4)");
    bad(with("name: t\n", "name: t\npolicies: { dpp: {} }\n"),
        "policies.dpp: unknown policy 'dpp', did you mean 'ddp'?");
    bad(with("name: t\n", "name: t\ntraining2: 1\n"), "unknown key");
}

Test(scenario, seed_keeps_all_64_bits)
{
    scn_scenario *s = load_ok(with("epochs: 2", "epochs: 2, seed: 18446744073709551615"), NULL, 0);
    cr_assert_eq(s->training.seed, UINT64_MAX);
    scn_free(s);
    bad(with("epochs: 2", "epochs: 2, seed: 18446744073709551616"), "training.seed: must be a whole number");
    bad(with("epochs: 2", "epochs: 2, seed: -1"), "training.seed: must be a whole number");
}

Test(scenario, out_of_memory_never_crashes_or_leaks)
{
    /* Fail the k-th allocation for every k until a load succeeds. */
    const char *txt =
        with("name: t\n", "name: t\nsites: [a, b]\nwan: [{between: [a, b], bandwidth: 1Gbps}]\n");
    scn_override ov[] = {{"devices.gpu.link.down", "50Mbps"}, {"policies.cadp.solver", "alm"}};
    int ok = 0;
    for (long k = 1; k < 5000 && !ok; k++) {
        long before = dp_alloc_live();
        dp_alloc_fail_after(k);
        dp_err e = {0};
        scn_scenario *s = scn_load_string("t.yaml", txt, strlen(txt), NULL, ov, 2, &e);
        dp_alloc_fail_after(0);
        if (s) {
            ok = 1;
            scn_free(s);
        } else {
            cr_assert(e.code == DP_ENOMEM, "k=%ld: %s", k, e.msg);
        }
        cr_assert_eq(dp_alloc_live(), before, "k=%ld leaked", k);
    }
    cr_assert(ok);
}

/* The duplicate-name check is a hash set over group names: many groups
 * (colliding slots), a duplicate found far from its first, and no false
 * match among thousands of distinct names. */
Test(scenario, duplicate_names_among_many_groups)
{
    const size_t n = 3000;
    size_t cap = n * 120 + 512, len = 0;
    char *t = malloc(cap);
    cr_assert_not_null(t);
    len +=
        (size_t)snprintf(t + len, cap - len,
                         "name: t\nmodel: { params: 1000, flops_per_sample: 1e6 }\n"
                         "dataset: { samples: 100, sample_bytes: 1KB }\ntraining: { epochs: 1 }\ndevices:\n");
    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(t + len, cap - len,
                                "  - { name: d%zu, kind: cpu, memory: 1GiB, batch: 4, batch_time: 1s, "
                                "link: { up: 1Mbps, down: 1Mbps } }\n",
                                i);
    scn_scenario *s = load_ok(t, NULL, 0);
    cr_expect_eq(s->n_groups, n);
    scn_free(s);
    len += (size_t)snprintf(t + len, cap - len,
                            "  - { name: d1234, kind: cpu, memory: 1GiB, batch: 4, batch_time: 1s, "
                            "link: { up: 1Mbps, down: 1Mbps } }\n");
    bad(t, "devices[3000].name: duplicate device name, also devices[1234] at line 1240 (got d1234)");
    free(t);
}

/* The summary of a scenario's many groups as scn_print_summary writes it. */
static char *summary_of(const char *text, int all)
{
    scn_scenario *s = load_ok(text, NULL, 0);
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    scn_print_summary(s, all, mem);
    fclose(mem);
    scn_free(s);
    return buf;
}

/* Groups written one by one past SCN_SUMMARY_LIST: the first
 * SCN_SUMMARY_SHOW listed, the rest one block.  Hand-computed: group i
 * has batch_time i+1 s, except g40's table [[1, 1s], [8, 2s]], which at
 * batch 4 costs 1 + 3/7 s; g59 holds 100 devices, so of the 149 devices
 * left out the 75th in batch-time order (the median) is one of g59's. */
Test(scenario, summary_of_many_groups_weighs_counts_and_names_what_it_leaves_out)
{
    static char text[16384];
    size_t k = (size_t)snprintf(text, sizeof text,
                                "name: many\n"
                                "model: { params: 1000, flops_per_sample: 1e6 }\n"
                                "dataset: { samples: 100000, sample_bytes: 1KB }\n"
                                "training: { epochs: 1 }\n"
                                "devices:\n");
    for (int i = 0; i < 60; i++) {
        char compute[64], extra[96] = "";
        if (i == 40)
            snprintf(compute, sizeof compute, "batch_table: [[1, 1s], [8, 2s]]");
        else
            snprintf(compute, sizeof compute, "batch_time: %ds", i + 1);
        if (i == 20)
            snprintf(extra, sizeof extra, ", stragglers: { every: 100s, lasting: 10s, factor: 2 }");
        if (i == 30)
            snprintf(extra, sizeof extra, ", noise: 0.1");
        k +=
            (size_t)snprintf(text + k, sizeof text - k,
                             "  - { name: g%d, count: %d, kind: cpu, memory: 1GiB, batch: 4, %s, link: { up: "
                             "%dMbps, down: 1Mbps }%s }\n",
                             i, i == 59 ? 100 : 1, compute, i + 1, extra);
    }
    cr_assert_lt(k, sizeof text);
    char *out = summary_of(text, 0);
    cr_expect(strstr(out, "  g9           x1 cpu"), "%s", out);
    cr_expect(!strstr(out, "  g10 "), "%s", out);
    cr_expect(strstr(out,
                     "  ... and 50 more groups, x149 devices: 0 gpu, 149 cpu (dpsim check --all lists them)\n"
                     "               batch time min 1.429 s, median 60 s, max 60 s per batch\n"
                     "               samples/s  min 0.06667, median 0.06667, max 2.8 per device\n"
                     "               link up    min 11 Mbps, median 60 Mbps, max 60 Mbps\n"),
              "%s", out);
    cr_expect(strstr(out,
                     "               of which 49 batch_time, 1 batch_table, 1 with noise or a speed trace, 1 "
                     "with stragglers\n"),
              "%s", out);
    cr_expect(strstr(out, "total    149 devices,") == NULL && strstr(out, "total    159 devices,"), "%s",
              out);
    free(out);
    out = summary_of(text, 1);
    cr_expect(strstr(out, "  g59          x100 cpu"), "%s", out);
    cr_expect(!strstr(out, "more groups"), "%s", out);
    free(out);
}

/* With one device per group the median is found by selection, not by
 * sorting: it must be the value sorting gives, for values in scrambled
 * order with repeats. */
Test(scenario, summary_median_by_selection_is_the_sorted_one)
{
    static char text[65536];
    size_t k = (size_t)snprintf(text, sizeof text,
                                "name: many\n"
                                "model: { params: 1000, flops_per_sample: 1e6 }\n"
                                "dataset: { samples: 100000, sample_bytes: 1KB }\n"
                                "training: { epochs: 1 }\n"
                                "devices:\n");
    int v[400];
    for (int n = 51; n <= 400; n += 87) { /* odd and even counts left out */
        size_t at = k;
        for (int i = 0; i < n; i++) {
            v[i] = 1 + (i * 7919 + 13) % 211; /* seconds, repeats included */
            at += (size_t)snprintf(
                text + at, sizeof text - at,
                "  - { name: g%d, kind: cpu, memory: 1GiB, batch: 1, batch_time: %ds, link: { up: "
                "1Mbps, down: 1Mbps } }\n",
                i, v[i]);
        }
        cr_assert_lt(at, sizeof text);
        /* the rest: groups 10 .. n-1; the median device is the ((m + 1) / 2)-th */
        int m = n - 10, rest[400];
        memcpy(rest, v + 10, (size_t)m * sizeof *rest);
        for (int i = 1; i < m; i++) /* insertion sort, as plain as can be */
            for (int j = i; j > 0 && rest[j - 1] > rest[j]; j--) {
                int t = rest[j];
                rest[j] = rest[j - 1];
                rest[j - 1] = t;
            }
        char want[160];
        snprintf(want, sizeof want, "               batch time min %d s, median %d s, max %d s per batch\n",
                 rest[0], rest[(m + 1) / 2 - 1], rest[m - 1]);
        char *out = summary_of(text, 0);
        cr_expect(strstr(out, want), "n %d: want %s in %s", n, want, out);
        free(out);
        text[k] = '\0';
    }
}

/* network.sharing: maxmin (default) or rtt; anything else names the key. */
Test(scenario, network_sharing)
{
    scn_scenario *s = load_ok(with("name: t\n", "name: t\nnetwork: { sharing: rtt }\n"), NULL, 0);
    cr_assert_eq(s->network.sharing, SCN_SHARE_RTT);
    scn_free(s);
    s = load_ok(with("name: t\n", "name: t\nnetwork: { sharing: maxmin }\n"), NULL, 0);
    cr_assert_eq(s->network.sharing, SCN_SHARE_MAXMIN);
    scn_free(s);
    bad(with("name: t\n", "name: t\nnetwork: { sharing: rtt2 }\n"),
        "network.sharing: expected one of maxmin, rtt, did you mean 'rtt'? (got rtt2)");
}

/* An override's value as an SI number for the results database: in the
 * unit the scenario read its key in (a bare bandwidth is bit/s), else by
 * its own suffix; a name is not a number. */
Test(scenario, override_values_as_si_numbers)
{
    dp_err e = {0};
    scn_override ov[] = {{"devices.cpu.link.up", "20"},
                         {"devices.gpu.link.down", "1Gbps"},
                         {"devices.gpu.batch_time", "30"},
                         {"devices.gpu.count", "3"}};
    scn_scenario *s = scn_load_file(src_path("scenarios/tiny.yaml"), ov, 4, &e);
    cr_assert_not_null(s, "%s", e.msg);
    double v;
    const char *u;
    cr_expect_eq(scn_value_si(s, "devices.cpu.link.up", "20", &v, &u), 1);
    cr_expect_eq(v, 2.5); /* 20 bit/s */
    cr_expect_str_eq(u, "B/s");
    cr_expect_eq(scn_value_si(s, "devices.gpu.link.down", "1Gbps", &v, &u), 1);
    cr_expect_eq(v, 125e6);
    cr_expect_eq(scn_value_si(s, "devices.gpu.batch_time", "30", &v, &u), 1);
    cr_expect_eq(v, 30);
    cr_expect_str_eq(u, "s");
    cr_expect_eq(scn_value_si(s, "devices.gpu.count", "3", &v, &u), 1);
    cr_expect_str_eq(u, "");
    /* not this scenario's override: by the suffix alone */
    cr_expect_eq(scn_value_si(s, "devices.cpu.link.up", "20ms", &v, &u), 1);
    cr_expect_eq(v, 0.02);
    cr_expect_str_eq(u, "s");
    cr_expect_eq(scn_value_si(NULL, "x", "2MiB", &v, &u), 1);
    cr_expect_eq(v, 2097152);
    cr_expect_str_eq(u, "B");
    cr_expect_eq(scn_value_si(NULL, "policies.cadp.alpha", "0.5", &v, &u), 1);
    cr_expect_eq(v, 0.5);
    cr_expect_null(u); /* a bare number nobody read: as written, unit unknown */
    cr_expect_eq(scn_value_si(s, "policies.x.mode", "fast", &v, &u), 0);
    cr_expect(isnan(v));
    cr_expect_eq(scn_value_si(NULL, "k", "1e999", &v, &u), 0);
    scn_free(s);
}

/* The devices' names sit one after another in one block (s->dev_names),
 * each its own length, not in a 96-byte buffer per device (issue 39:
 * 10^5-10^6 devices); the longest group name (80 bytes) with its index
 * still fits SCN_DEV_NAME_MAX. */
Test(scenario, device_names_in_one_block)
{
    char longname[100];
    memset(longname, 'g', 80);
    longname[80] = 0;
    char line[160];
    snprintf(line, sizeof line, "  - name: %s\n    count: 12\n", longname);
    const char *t = with("  - name: gpu\n    count: 2\n", line);
    scn_scenario *s = load_ok(t, NULL, 0);
    cr_assert_eq(s->n_devices, 13);
    cr_assert_not_null(s->dev_names);
    cr_assert_eq(s->devices[0].name, s->dev_names);
    char want[SCN_DEV_NAME_MAX];
    for (size_t k = 0; k < 12; k++) {
        dp_indexed_name(want, sizeof want, longname, (long long)k);
        cr_assert_str_eq(s->devices[k].name, want, "device %zu", k);
        cr_assert_leq(strlen(s->devices[k].name), SCN_DEV_NAME_MAX - 1);
        cr_assert_eq(s->devices[k + 1].name, s->devices[k].name + strlen(s->devices[k].name) + 1,
                     "device %zu follows %zu in the block", k + 1, k);
    }
    cr_assert_eq(strlen(s->devices[10].name), 84); /* 80 + "[10]" */
    cr_assert_str_eq(s->devices[10].name + 80, "[10]");
    cr_assert_str_eq(s->devices[12].name, "cpu");
    cr_assert_eq(s->devices[12].group, 1);
    cr_assert_eq(s->devices[11].index, 11);
    scn_free(s);
}
