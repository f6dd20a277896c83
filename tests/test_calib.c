/* test_calib.c: the calibration (sim/calib/calib.h) on tests' tiny scenario:
 * a fit from bounds recovers parameter values that generated its targets,
 * an unreachable target puts its parameter AT BOUND, bad input is refused
 * with a message naming it, a shortcut that changes a target is refused,
 * and the written scenario holds the fitted values.  Every test checks the
 * live-allocation counter (Criterion under ASan does not fail on a leak). */
#include "calib/calib.h"
#include "scenario.h"
#include "yamltree.h"

#include <criterion/criterion.h>
#include "leaks.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static long live0;
static char tiny[1024];

static void setup(void)
{
    live0 = dp_alloc_live();
    const char *src = getenv("DPSIM_SRC");
    snprintf(tiny, sizeof tiny, "%s/scenarios/tiny.yaml", src ? src : "..");
}

static void teardown(void)
{
    leaks_verify(live0);
}

TestSuite(calib, .init = setup, .fini = teardown);

/* Two parameters, each driving one target smoothly: the CPU's download
 * link sets DDP's Tsend (it is the slowest link), the GPUs' batch time sets
 * C-ADP's training time. */
static const char *fit_link = "devices.cpu.link.down=5Mbps..200Mbps:log";
static const char *fit_batch = "devices.gpu.batch_time=5ms..100ms";

static calib_problem *problem(const char *t0, const char *t1, dp_err *err)
{
    calib_spec sp = {
        .scenario = tiny, .n_fit = 2, .fit = {fit_link, fit_batch}, .n_target = 2, .target = {t0, t1}};
    return calib_new(&sp, err);
}

Test(calib, recovers_the_values_that_made_its_targets)
{
    dp_err err = {0};
    /* targets made by simulating at known values */
    calib_problem *p = problem("ddp.tsend_s=1", "cadp.ttraining_s=1", &err);
    cr_assert(p, "%s", err.msg);
    const double truth[2] = {37, 33}; /* Mbps, ms */
    double f[2];
    cr_assert_eq(calib_evaluate(p, truth, f, &err), 0, "%s", err.msg);
    calib_free(p);
    char t0[64], t1[64];
    snprintf(t0, sizeof t0, "ddp.tsend_s=%.17g", f[0]);
    snprintf(t1, sizeof t1, "cadp.ttraining_s=%.17g", f[1]);
    p = problem(t0, t1, &err);
    cr_assert(p, "%s", err.msg);
    const calib_result *r = NULL;
    cr_assert_eq(calib_fit(p, NULL, NULL, &r, &err), 0, "%s", err.msg);
    for (int i = 0; i < 2; i++) {
        cr_expect(fabs(r->value[i] / truth[i] - 1) < 1e-6, "p%d = %.17g, want %g", i + 1, r->value[i],
                  truth[i]);
        cr_expect_eq(r->at_bound[i], 0);
        cr_expect_eq(r->undetermined[i], 0);
        cr_expect(fabs(r->ratio[i] - 1) < 1e-9, "target %d ratio %.17g", i, r->ratio[i]);
    }
    cr_expect(r->cost < 1e-15, "cost %g", r->cost);
    /* d log Tsend / d log link is about -1 (a little above: link latency);
     * the link does not move C-ADP's training and the batch time not Tsend. */
    cr_expect(r->sens[0][0] < -0.9 && r->sens[0][0] > -1.0, "%g", r->sens[0][0]);
    cr_expect(fabs(r->sens[0][1]) < 1e-9 && fabs(r->sens[1][0]) < 1e-9);
    cr_expect(r->sens[1][1] > 0.5, "%g", r->sens[1][1]);
    cr_expect_eq(r->starts, 4);
    cr_expect(r->evaluations > 10);
    calib_free(p);
}

Test(calib, unreachable_target_puts_its_parameter_at_bound)
{
    dp_err err = {0};
    /* DDP's Tsend of 0.2 s needs a CPU link of about 90 Mbit/s; allow 50. */
    calib_spec sp = {.scenario = tiny,
                     .n_fit = 2,
                     .fit = {"devices.cpu.link.down=5Mbps..50Mbps:log", fit_batch},
                     .n_target = 2,
                     .target = {"ddp.tsend_s=0.2", "cadp.ttraining_s=1.137"}};
    calib_problem *p = calib_new(&sp, &err);
    cr_assert(p, "%s", err.msg);
    const calib_result *r = NULL;
    cr_assert_eq(calib_fit(p, NULL, NULL, &r, &err), 0, "%s", err.msg);
    cr_expect_eq(r->at_bound[0], 1);
    cr_expect_eq(r->value[0], 50);
    cr_expect(r->ratio[0] > 1.5, "ratio %g", r->ratio[0]);
    cr_expect_eq(r->at_bound[1], 0);
    cr_expect(fabs(r->ratio[1] - 1) < 1e-6, "the other target is still met: %g", r->ratio[1]);
    char *j = calib_result_json(p, r);
    cr_assert(j);
    cr_expect(strstr(j, "\"at_bound\":1"), "%s", j);
    dp_free(j);
    calib_free(p);
}

Test(calib, a_parameter_no_target_depends_on_is_undetermined)
{
    dp_err err = {0};
    calib_spec sp = {.scenario = tiny,
                     .n_fit = 2,
                     .fit = {fit_link, "devices.gpu.link.latency=1ms..2ms"},
                     .n_target = 1,
                     .target = {"ddp.tsend_s=0.5"},
                     .starts = 1};
    calib_problem *p = calib_new(&sp, &err);
    cr_assert(p, "%s", err.msg);
    const calib_result *r = NULL;
    cr_assert_eq(calib_fit(p, NULL, NULL, &r, &err), 0, "%s", err.msg);
    cr_expect_eq(r->undetermined[0], 0);
    cr_expect_eq(r->undetermined[1], 1);
    calib_free(p);
}

static void expect_refused(const calib_spec *sp, const char *needle)
{
    dp_err err = {0};
    calib_problem *p = calib_new(sp, &err);
    cr_expect_null(p, "accepted, want an error naming '%s'", needle);
    calib_free(p);
    cr_expect_eq(err.code, DP_EINPUT, "%s", err.msg);
    cr_expect(strstr(err.msg, needle), "message '%s' should name '%s'", err.msg, needle);
}

Test(calib, bad_input_is_refused_with_a_message_naming_it)
{
    const char *good_t = "ddp.tsend_s=1";
    struct {
        const char *fit, *target, *needle;
    } cases[] = {
        {"devices.cpu.link.dwn=5Mbps..200Mbps", good_t, "dwn"},          /* unknown key */
        {"devices.nope.link.down=5Mbps..200Mbps", good_t, "nope"},       /* unknown device */
        {"devices.cpu.link.down=200Mbps..5Mbps", good_t, "low bound"},   /* reversed */
        {"devices.cpu.link.down=5Mbps..5Mbps", good_t, "low bound"},     /* empty */
        {"devices.cpu.link.down=0..200:log", good_t, ":log"},            /* log from 0 */
        {"devices.cpu.link.down=5Mbps..200", good_t, "units"},           /* half units */
        {"devices.cpu.link.down=5Mbps..2s", good_t, "do not fit"},       /* mixed kinds */
        {"devices.cpu.link.down=5Mbps..200Mbps:lin", good_t, ":lin"},    /* bad option */
        {"devices.cpu.link.down", good_t, "KEY"},                        /* no bounds */
        {"devices.cpu.link.down=abc..def", good_t, "bad bounds"},        /* not numbers */
        {"devices.cpu.link.down=1Mbps..1Tbps", good_t, "cpu.link.down"}, /* fine bounds, test below */
        {fit_link, "fsdp.tsend_s=1", "fsdp"},                            /* unknown policy */
        {fit_link, "all.tsend_s=1", "all"},                              /* not one policy */
        {fit_link, "ddp.speed=1", "speed"},                              /* unknown metric */
        {fit_link, "ddp.tsend_s=0", "non-zero"},                         /* relative error of 0 */
        {fit_link, "ddp.tsend_s=1:-2", "weight"},                        /* bad weight */
        {fit_link, "ddp.tsend_s", "POLICY.METRIC"},                      /* no value */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (i == 10)
            continue; /* a wide range is fine */
        calib_spec sp = {
            .scenario = tiny, .n_fit = 1, .fit = {cases[i].fit}, .n_target = 1, .target = {cases[i].target}};
        expect_refused(&sp, cases[i].needle);
    }
    calib_spec twice = {
        .scenario = tiny, .n_fit = 2, .fit = {fit_link, fit_link}, .n_target = 1, .target = {good_t}};
    expect_refused(&twice, "fitted twice");
    calib_spec fixed = {.scenario = tiny,
                        .n_fit = 1,
                        .fit = {fit_link},
                        .n_target = 1,
                        .target = {good_t},
                        .n_set = 1,
                        .set = {"devices.cpu.link.down=10Mbps"}};
    expect_refused(&fixed, "also set");
    calib_spec for_other = {.scenario = tiny,
                            .n_fit = 1,
                            .fit = {fit_link},
                            .n_target = 1,
                            .target = {good_t},
                            .n_for = 1,
                            .set_for = {"cadp:training.epochs=1"}};
    expect_refused(&for_other, "no --target names policy 'cadp'");
}

Test(calib, a_shortcut_that_changes_a_target_is_refused)
{
    dp_err err = {0};
    calib_spec sp = {.scenario = tiny,
                     .n_fit = 1,
                     .fit = {fit_batch},
                     .n_target = 1,
                     .target = {"cadp.ttraining_s=1.137"},
                     .n_for = 1,
                     .set_for = {"cadp:training.epochs=1"},
                     .starts = 1};
    calib_problem *p = calib_new(&sp, &err);
    cr_assert(p, "%s", err.msg);
    const calib_result *r = NULL;
    cr_expect_eq(calib_fit(p, NULL, NULL, &r, &err), DP_EINPUT);
    cr_expect(strstr(err.msg, "cadp.ttraining_s"), "%s", err.msg);
    calib_free(p);
}

Test(calib, the_written_scenario_holds_the_fit)
{
    dp_err err = {0};
    calib_spec sp = {.scenario = tiny,
                     .n_fit = 2,
                     .fit = {fit_link, fit_batch},
                     .n_target = 2,
                     .target = {"ddp.tsend_s=0.48067567567567565", "cadp.ttraining_s=1.137"},
                     .n_set = 1,
                     .set = {"devices.gpu.link.latency=2ms"}};
    calib_problem *p = calib_new(&sp, &err);
    cr_assert(p, "%s", err.msg);
    const calib_result *r = NULL;
    cr_assert_eq(calib_fit(p, NULL, NULL, &r, &err), 0, "%s", err.msg);
    char path[] = "/tmp/test_calib.XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    cr_assert_eq(calib_write_scenario(p, r, path, &err), 0, "%s", err.msg);
    scn_scenario *s = scn_load_file(path, NULL, 0, &err);
    cr_assert(s, "%s", err.msg);
    const scn_group *cpu = &s->groups[1], *gpu = &s->groups[0];
    char text[64];
    calib_param_text(p, 0, r->value[0], text, sizeof text);
    double want;
    cr_assert_eq(scn_parse_quantity(text, SCN_UNIT_BANDWIDTH, &want, NULL), 0);
    cr_expect_eq(cpu->link.down_Bps, want, "%s", text);
    cr_expect_eq(cpu->link.up_Bps, 20e6 / 8, "untouched");
    cr_expect(fabs(gpu->batch_time_s - r->value[1] / 1000) < 1e-15);
    cr_expect_eq(gpu->link.latency_s, 2e-3, "the --set value is written too");
    cr_expect(strstr(s->text, "# Calibrated by `dpsim calibrate`") == s->text);
    cr_expect(strstr(s->text, "(fit) dpsim calibrate"));
    cr_expect(strstr(s->text, "(set) dpsim calibrate"));
    scn_free(s);
    unlink(path);
    calib_free(p);
}

/* The written scenario finds each value with yt_find, which must address
 * nodes exactly as overrides do: list items by name, `A-B` for WAN links,
 * index otherwise, and the last of duplicate keys. */
Test(calib, yt_find_addresses_values_as_overrides_do)
{
    static const char text[] = "a: {b: 1, b: 2}\n"
                               "devices:\n"
                               "  - {name: gpu, link: {down: 10Mbps}}\n"
                               "  - {name: cpu, link: {down: 20Mbps}}\n"
                               "wan:\n"
                               "  - {between: [x, y], bandwidth: 5Mbps}\n"
                               "list: [p, q]\n";
    dp_err err = {0};
    yt_doc *d = yt_parse("t.yaml", text, sizeof text - 1, &err);
    cr_assert(d, "%s", err.msg);
    const yt_node *n = yt_find(d, "devices.cpu.link.down");
    cr_assert(n);
    cr_expect_str_eq(n->text, "20Mbps");
    cr_expect_eq(n->line, 4);
    cr_expect_str_eq(yt_find(d, "devices.0.link.down")->text, "10Mbps");
    cr_expect_str_eq(yt_find(d, "wan.y-x.bandwidth")->text, "5Mbps");
    cr_expect_str_eq(yt_find(d, "a.b")->text, "2");
    cr_expect_str_eq(yt_find(d, "list.1")->text, "q");
    cr_expect_null(yt_find(d, "devices.tpu.link.down"));
    cr_expect_null(yt_find(d, "devices.cpu.link.up"));
    cr_expect_null(yt_find(d, "a.b.c"));
    cr_expect_null(yt_find(d, ""));
    yt_free(d);
}
