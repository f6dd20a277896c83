/* test_population.c: device populations (sim/input/population.c).
 *
 * Drawn values: the same seed gives the same devices, another seed others,
 * a larger count keeps the first devices, and drawing one more key leaves
 * the others' draws alone; large samples (fixed seeds, so nothing can
 * flake) match each distribution's closed form.  Device tables: a CSV and
 * the equivalent YAML load to the same groups; hostile tables and
 * distributions give one exact message naming FILE:LINE:COLUMN and the key;
 * running out of memory part way neither crashes nor leaks. */
#include "scenario.h"

#include <criterion/criterion.h>
#include "leaks.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static long live0;
static char dir[64];

static void setup(void)
{
    live0 = dp_alloc_live();
    snprintf(dir, sizeof dir, "/tmp/dpsim-pop-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}
static void teardown(void)
{
    dp_alloc_fail_after(0);
    leaks_verify(live0);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}
TestSuite(population, .init = setup, .fini = teardown);

#define HEAD                                                                                                 \
    "name: t\nmodel: { params: 1000, flops_per_sample: 1e6 }\ndataset: { samples: 100000, sample_bytes: "    \
    "1KB }\n"                                                                                                \
    "training: { epochs: 1, seed: 5 }\nsites: [eu, us]\ndevices:\n"

/* A population of n devices whose batch_time is `bt` (text). */
static char *pop_text(int n, const char *bt, const char *extra)
{
    static char buf[2048];
    snprintf(buf, sizeof buf,
             HEAD "  - name: phone\n    count: %d\n    kind: cpu\n    memory: 1GiB\n    batch: 4\n"
                  "    batch_time: %s\n    link: { up: 10Mbps, down: 10Mbps }\n%s",
             n, bt, extra ? extra : "");
    return buf;
}

static scn_scenario *load_ok(const char *text)
{
    dp_err e = {0};
    scn_scenario *s = scn_load_string("t.yaml", text, strlen(text), dir, NULL, 0, &e);
    cr_assert_not_null(s, "should load: %s", e.msg);
    return s;
}

static void bad(const char *text, const char *msg)
{
    dp_err e = {0};
    scn_scenario *s = scn_load_string("t.yaml", text, strlen(text), dir, NULL, 0, &e);
    cr_assert_null(s, "should fail with '%s'", msg);
    cr_assert_eq(e.code, DP_EINPUT, "code %d: %s", e.code, e.msg);
    cr_assert_str_eq(e.msg, msg);
}

static void write_file(const char *name, const char *text)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
}

/* Batch times of a loaded population, in group order. */
static double *batch_times(const scn_scenario *s, size_t *n)
{
    double *v = malloc(s->n_groups * sizeof *v);
    cr_assert_not_null(v);
    for (size_t i = 0; i < s->n_groups; i++)
        v[i] = s->groups[i].batch_time_s;
    *n = s->n_groups;
    return v;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

Test(population, draws_are_deterministic_per_seed)
{
    const char *ln = "{ lognormal: { median: 2.5s, sigma: 0.4 } }";
    scn_scenario *a = load_ok(pop_text(1000, ln, NULL));
    cr_assert_eq(a->n_devices, 1000);
    cr_assert_eq(a->n_groups, 1000);
    cr_assert_eq(a->n_pops, 1);
    cr_assert_str_eq(a->pops[0].name, "phone");
    cr_assert_eq(a->pops[0].seed, 5); /* training.seed by default */
    cr_assert_str_eq(a->devices[17].name, "phone[17]");
    scn_scenario *b = load_ok(pop_text(1000, ln, NULL));
    size_t n;
    double *va = batch_times(a, &n), *vb = batch_times(b, &n);
    cr_assert(memcmp(va, vb, n * sizeof *va) == 0, "same scenario, same devices, bit for bit");
    /* a larger count keeps the first devices */
    scn_scenario *c = load_ok(pop_text(2000, ln, NULL));
    double *vc = batch_times(c, &n);
    cr_assert(memcmp(va, vc, 1000 * sizeof *va) == 0);
    /* drawing the links too leaves the batch times alone */
    char txt[2048];
    snprintf(txt, sizeof txt, "%s", pop_text(1000, ln, NULL));
    char *l = strstr(txt, "link: { up: 10Mbps");
    memcpy(l, "link: { up: { uniform: [1Mbps, 9Mbps] }, down: 10Mbps }\n", 57);
    scn_scenario *d = load_ok(txt);
    double *vd = batch_times(d, &n);
    cr_assert(memcmp(va, vd, 1000 * sizeof *va) == 0);
    cr_assert(d->groups[3].link.up_Bps != d->groups[4].link.up_Bps);
    /* another seed, other devices */
    scn_scenario *e =
        load_ok(pop_text(1000, "{ lognormal: { median: 2.5s, sigma: 0.4 } }\n    seed: 6", NULL));
    double *ve = batch_times(e, &n);
    size_t same = 0;
    for (size_t i = 0; i < n; i++)
        same += va[i] == ve[i];
    cr_assert_eq(same, 0);
    free(va), free(vb), free(vc), free(vd), free(ve);
    scn_free(a), scn_free(b), scn_free(c), scn_free(d), scn_free(e);
}

/* n = 200,000 draws with a fixed seed: sample statistics within a few
 * standard errors of the closed forms (the seed is fixed: no flakes). */
Test(population, samples_match_closed_forms)
{
    const int N = 200000;
    size_t n;
    /* lognormal by median and sigma: median 2.5 s; sd of log 0.4 */
    scn_scenario *s = load_ok(pop_text(N, "{ lognormal: { median: 2.5s, sigma: 0.4 } }", NULL));
    double *v = batch_times(s, &n);
    double sl = 0, sl2 = 0;
    for (size_t i = 0; i < n; i++)
        sl += log(v[i]), sl2 += log(v[i]) * log(v[i]);
    double mu = sl / n, sd = sqrt(sl2 / n - mu * mu);
    qsort(v, n, sizeof *v, cmp_d);
    cr_expect(fabs(v[n / 2] / 2.5 - 1) < 0.005, "median %g", v[n / 2]);
    cr_expect(fabs(sd / 0.4 - 1) < 0.01, "sigma %g", sd);
    /* the 90% quantile: median x exp(1.2816 sigma) */
    cr_expect(fabs(v[(size_t)(0.9 * n)] / (2.5 * exp(1.2815516 * 0.4)) - 1) < 0.01, "q90 %g",
              v[(size_t)(0.9 * n)]);
    free(v);
    scn_free(s);
    /* lognormal by mean and sd */
    s = load_ok(pop_text(N, "{ lognormal: { mean: 2s, sd: 1s } }", NULL));
    v = batch_times(s, &n);
    double m = 0, m2 = 0;
    for (size_t i = 0; i < n; i++)
        m += v[i], m2 += v[i] * v[i];
    m /= n;
    cr_expect(fabs(m / 2 - 1) < 0.01, "mean %g", m);
    cr_expect(fabs(sqrt(m2 / n - m * m) / 1 - 1) < 0.03, "sd %g", sqrt(m2 / n - m * m));
    free(v);
    scn_free(s);
    /* uniform [1 s, 3 s]: mean 2, within the bounds */
    s = load_ok(pop_text(N, "{ uniform: [1s, 3s] }", NULL));
    v = batch_times(s, &n);
    m = 0;
    double lo = 1e9, hi = 0;
    for (size_t i = 0; i < n; i++)
        m += v[i], lo = fmin(lo, v[i]), hi = fmax(hi, v[i]);
    cr_expect(fabs(m / n / 2 - 1) < 0.005, "mean %g", m / n);
    cr_expect(lo >= 1 && lo < 1.001 && hi <= 3 && hi > 2.999, "[%g, %g]", lo, hi);
    free(v);
    scn_free(s);
    /* normal truncated at > 0: mean mu + sd phi(a) / Phi(a), a = mu / sd */
    s = load_ok(pop_text(N, "{ normal: { mean: 1s, sd: 2s } }", NULL));
    v = batch_times(s, &n);
    m = 0;
    lo = 1e9;
    for (size_t i = 0; i < n; i++)
        m += v[i], lo = fmin(lo, v[i]);
    double a = 0.5, phi = exp(-a * a / 2) / sqrt(2 * M_PI), Phi = 0.5 * erfc(-a / sqrt(2));
    cr_expect(lo > 0);
    cr_expect(fabs(m / n / (1 + 2 * phi / Phi) - 1) < 0.01, "mean %g vs %g", m / n, 1 + 2 * phi / Phi);
    free(v);
    scn_free(s);
    /* choice with weights 3:1 (sites) and a fixed value */
    s = load_ok(pop_text(N, "{ fixed: 2s }", "    site: { choice: [eu, us], weights: [3, 1] }\n"));
    size_t eu = 0;
    for (size_t i = 0; i < s->n_groups; i++) {
        eu += s->groups[i].site == 0;
        cr_assert_eq(s->groups[i].batch_time_s, 2.0);
    }
    cr_expect(fabs((double)eu / N - 0.75) < 0.005, "eu share %g", (double)eu / N);
    scn_free(s);
}

/* The CSV and the YAML it stands for load to the same groups. */
Test(population, csv_equals_yaml)
{
    write_file("fleet.csv", "name,count,kind,memory,batch,batch_time,link.up,link.down,link.latency,site\n"
                            "gpu1,1,gpu,24GB,32,0.3s,100Mbps,100Mbps,20ms,eu\n"
                            "# a comment, then a blank line\n\n"
                            "gpu2,2,gpu,24GB,32,0.35s,80Mbps,\"90Mbps\",,us\r\n"
                            "cpu1,,cpu,8GB,8,2s,20Mbps,20Mbps,5ms,\n");
    scn_scenario *c = load_ok(HEAD "  - from_csv: fleet.csv\n");
    scn_scenario *y = load_ok(
        HEAD "  - { name: gpu1, count: 1, kind: gpu, memory: 24GB, batch: 32, batch_time: 0.3s, site: eu,\n"
             "      link: { up: 100Mbps, down: 100Mbps, latency: 20ms } }\n"
             "  - { name: gpu2, count: 2, kind: gpu, memory: 24GB, batch: 32, batch_time: 0.35s, site: us,\n"
             "      link: { up: 80Mbps, down: 90Mbps } }\n"
             "  - { name: cpu1, kind: cpu, memory: 8GB, batch: 8, batch_time: 2s, link: { up: 20Mbps, down: "
             "20Mbps, "
             "latency: 5ms } }\n");
    cr_assert_eq(c->n_groups, 3);
    cr_assert_eq(c->n_devices, 4);
    cr_assert_eq(c->n_files, 1, "the table is kept with the scenario");
    cr_assert_eq(c->n_pops, 1);
    cr_assert_eq(c->pops[0].kind, SCN_POP_TABLE);
    for (size_t i = 0; i < 3; i++) {
        const scn_group *a = &c->groups[i], *b = &y->groups[i];
        cr_assert_str_eq(a->name, b->name);
        cr_assert_eq(a->count, b->count);
        cr_assert_eq(a->kind, b->kind);
        cr_assert_eq(a->site, b->site);
        cr_assert_eq(a->memory_bytes, b->memory_bytes);
        cr_assert_eq(a->batch, b->batch);
        cr_assert_eq(a->batch_time_s, b->batch_time_s);
        cr_assert_eq(a->link.up_Bps, b->link.up_Bps);
        cr_assert_eq(a->link.down_Bps, b->link.down_Bps);
        cr_assert_eq(a->link.latency_s, b->link.latency_s);
    }
    for (size_t d = 0; d < 4; d++)
        cr_assert_str_eq(c->devices[d].name, y->devices[d].name);
    scn_free(c);
    scn_free(y);
}

Test(population, hostile_tables)
{
    char msg[512];
    const char *hdr = "name,kind,memory,batch,batch_time,link.up,link.down\n";
    write_file("a.csv",
               "name,kind,memory,batch,batch_time,link.up,link.down\nd0,cpu,1GiB,4,1s,1Mbps,1Mbps,7\n");
    snprintf(msg, sizeof msg,
             "%s/a.csv:2:30: devices[0].from_csv: row has more fields than the header's 7 columns", dir);
    bad(HEAD "  - from_csv: a.csv\n", msg);
    write_file("b.csv", "name,kind,memory,batch,batch_time,link.up,link.down\nd0,cpu,1GiB,4,1s\n");
    snprintf(msg, sizeof msg, "%s/b.csv:2:17: devices[0].from_csv: row has 5 fields, the header 7 columns",
             dir);
    bad(HEAD "  - from_csv: b.csv\n", msg);
    write_file("c.csv",
               "name,kind,memory,batch,batch_time,link.up,link.down\nd0,cpu,1GiB,4,-1s,1Mbps,1Mbps\n");
    snprintf(msg, sizeof msg, "%s/c.csv:2:15: devices.d0.batch_time: must be > 0 (got -1s)", dir);
    bad(HEAD "  - from_csv: c.csv\n", msg);
    write_file("d.csv",
               "name,kind,memory,batch,batch_time,link.up,link.down\nd0,cpu,1GiB,4,1s,1Mbpx,1Mbps\n");
    snprintf(msg, sizeof msg,
             "%s/d.csv:2:18: devices.d0.link.up: unknown bandwidth unit 'Mbpx', did you mean 'Mbps'? (got "
             "'1Mbpx')",
             dir);
    bad(HEAD "  - from_csv: d.csv\n", msg);
    write_file("e.csv", "name,kind,memory,batch,batch_time,link.upp,link.down\n");
    /* the table is named at the from_csv value: line 7 column 17 of t.yaml */
    snprintf(msg, sizeof msg,
             "t.yaml:7:15: devices[0].from_csv: device table '%s/e.csv' has no rows below its header", dir);
    bad(HEAD "  - from_csv: e.csv\n", msg);
    write_file("f.csv",
               "name,kind,memory,batch,batch_time,link.upp,link.down\nd0,cpu,1GiB,4,1s,1Mbps,1Mbps\n");
    snprintf(msg, sizeof msg,
             "%s/f.csv:1:35: devices.d0.link.upp: unknown key, did you mean 'up'? (got 'upp')", dir);
    bad(HEAD "  - from_csv: f.csv\n", msg);
    write_file("g.csv", "name,kind,name\n");
    snprintf(msg, sizeof msg,
             "%s/g.csv:1:11: devices[0].from_csv: column 'name' appears twice (also column 1)", dir);
    bad(HEAD "  - from_csv: g.csv\n", msg);
    write_file("h.csv",
               "name,kind,memory,batch,batch_time,link.up,link.down\n\"d0,cpu,1GiB,4,1s,1Mbps,1Mbps\n");
    snprintf(msg, sizeof msg,
             "%s/h.csv:2:1: devices[0].from_csv: unterminated quote or a field over 4095 bytes", dir);
    bad(HEAD "  - from_csv: h.csv\n", msg);
    write_file("i.csv",
               "name,count,kind,memory,batch,batch_time,link.up,link.down\nd0,0,cpu,1GiB,4,1s,1Mbps,1Mbps\n");
    snprintf(msg, sizeof msg,
             "%s/i.csv:2:4: devices.d0.count: must be >= 1 in a file (0 is allowed only through an override) "
             "(got 0)",
             dir);
    bad(HEAD "  - from_csv: i.csv\n", msg);
    write_file("j.csv", "name,link..up\n");
    snprintf(
        msg, sizeof msg,
        "%s/j.csv:1:6: devices[0].from_csv: each column names a device-group key, or a key of its nested "
        "mapping as link.up (got 'link..up')",
        dir);
    bad(HEAD "  - from_csv: j.csv\n", msg);
    write_file("k.csv",
               "name,kind,memory,batch,batch_time,link.up,link.down\nd0,cpu,1GiB,4,1s,1Mbps,1Mbps\n");
    snprintf(msg, sizeof msg,
             "%s/k.csv:2:1: devices[1].name: duplicate device name, also devices[0] at line 2 (got d0)", dir);
    bad(HEAD "  - from_csv: k.csv\n  - from_csv: k.csv\n", msg);
    snprintf(
        msg, sizeof msg,
        "t.yaml:7:15: devices[0].from_csv: device table not found (looked in '%s' and the current directory) "
        "(got nope.csv)",
        dir);
    bad(HEAD "  - from_csv: nope.csv\n", msg);
    {
        char p[256];
        snprintf(p, sizeof p, "%s/n.csv", dir);
        FILE *f = fopen(p, "w");
        cr_assert_not_null(f);
        fwrite("name,kind\nd0,c\0pu\n", 1, 19, f);
        fclose(f);
        snprintf(
            msg, sizeof msg,
            "t.yaml:7:15: devices[0].from_csv: device table '%s/n.csv' holds a NUL byte at line 2, column 5",
            dir);
        bad(HEAD "  - from_csv: n.csv\n", msg);
    }
    bad(HEAD "  - from_csv: k.csv\n    name: x\n",
        "t.yaml:8:5: devices[0].name: unknown key; known keys here: from_csv (got 'name')");
    (void)hdr;
}

Test(population, hostile_distributions)
{
    bad(pop_text(10, "{ gamma: [1, 2] }", NULL), "t.yaml:12:19: devices.phone.batch_time.gamma: unknown key; "
                                                 "known keys here: fixed, uniform, lognormal, normal, "
                                                 "choice, weights (got 'gamma')");
    bad(pop_text(10, "{ uniform: [3s, 1s] }", NULL),
        "t.yaml:12:28: devices.phone.batch_time.uniform: low must not exceed high (got [3s, 1s])");
    bad(pop_text(10, "{ uniform: [0s, 1s] }", NULL),
        "t.yaml:12:29: devices.phone.batch_time.uniform: low must be > 0, at least 1 ns and at most 1e+09 "
        "(got 0 s)");
    bad(pop_text(10, "{ lognormal: { median: 2s, sd: 1s } }", NULL),
        "t.yaml:12:30: devices.phone.batch_time.lognormal: give either { median, sigma } or { mean, sd } "
        "(got both)");
    bad(pop_text(10, "{ lognormal: { median: 2s, sigma: -1 } }", NULL),
        "t.yaml:12:51: devices.phone.batch_time.lognormal.sigma: must be >= 0 (got -1)");
    bad(pop_text(10, "{ lognormal: { median: nan, sigma: 1 } }", NULL),
        "t.yaml:12:40: devices.phone.batch_time.lognormal.median: not a time: expected a number with an "
        "optional unit "
        "(got 'nan')");
    bad(pop_text(10, "{ normal: { mean: -1s, sd: 1s } }", NULL),
        "t.yaml:12:35: devices.phone.batch_time.normal.mean: must be > 0 (got -1s)");
    bad(pop_text(10, "{ normal: { mean: 1s } }", NULL),
        "t.yaml:12:27: devices.phone.batch_time.normal: missing required key 'sd'");
    bad(pop_text(10, "{ fixed: 1s, uniform: [1s, 2s] }", NULL),
        "t.yaml:12:30: devices.phone.batch_time: give one distribution, not fixed and uniform");
    bad(pop_text(10, "{ fixed: 1s }", "    site: { choice: [eu, asia] }\n"),
        "t.yaml:14:26: devices.phone.site.choice[1]: unknown site (have: eu, us) (got asia)");
    bad(pop_text(10, "{ fixed: 1s }", "    site: { choice: [eu, us], weights: [1] }\n"),
        "t.yaml:14:40: devices.phone.site.weights: expected a list of 2 weights, one per choice (got a list "
        "of "
        "another length)");
    bad(pop_text(10, "{ fixed: 1s }", "    site: { choice: [eu, us], weights: [0, 0] }\n"),
        "t.yaml:14:40: devices.phone.site.weights: the weights must add up to a finite number > 0 (got 0)");
    bad(pop_text(10, "{ fixed: 1s }", "    site: { uniform: [eu, us] }\n"),
        "t.yaml:14:11: devices.phone.site: a site is drawn with choice: [SITE, ...] (got uniform)");
    bad(pop_text(10, "1s\n    seed: 3", NULL), "t.yaml:13:5: devices.phone: seed applies only to a group "
                                               "with a drawn value (a distribution) (got seed with "
                                               "none)");
    bad(pop_text(0, "{ fixed: 1s }", NULL), "t.yaml:8:12: devices.phone.count: must be >= 1 in a file (0 is "
                                            "allowed only through an override) (got 0)");
    bad(pop_text(1000001, "{ fixed: 1s }", NULL), "t.yaml:8:12: devices.phone.count: must be at most 1000000 "
                                                  "(the limit on devices per group) (got 1000001)");
    /* a draw outside what a run can honour names the device and the value */
    bad(pop_text(1000, "{ lognormal: { median: 10ns, sigma: 3 } }", NULL),
        "t.yaml:12:17: devices.phone.batch_time: the value drawn for phone[0] must be > 0, at least 1 ns and "
        "at "
        "most 1e+09 (got 0.033248874934450515 ns)");
    /* two groups of one name: the population's name is taken */
    bad(pop_text(
            3, "{ fixed: 1s }",
            "  - { name: phone, kind: cpu, memory: 1GiB, batch: 4, batch_time: 1s, link: { up: 1Mbps, down: "
            "1Mbps } }\n"),
        "t.yaml:14:13: devices[1].name: duplicate device name, also devices[0] at line 7 (got phone)");
}

Test(population, overrides_address_the_population)
{
    const char *t = pop_text(50, "{ lognormal: { median: 2.5s, sigma: 0.4 } }", NULL);
    scn_override ov[] = {{"devices.phone.count", "7"}, {"devices.phone.batch_time.lognormal.sigma", "0"}};
    dp_err e = {0};
    scn_scenario *s = scn_load_string("t.yaml", t, strlen(t), dir, ov, 2, &e);
    cr_assert_not_null(s, "%s", e.msg);
    cr_assert_eq(s->n_devices, 7);
    for (size_t i = 0; i < 7; i++)
        cr_assert_float_eq(s->groups[i].batch_time_s, 2.5, 1e-12);
    scn_free(s);
    /* count 0 through an override skips the population */
    const char *t2 =
        HEAD "  - { name: x, kind: cpu, memory: 1GiB, batch: 4, batch_time: 1s, link: { up: 1Mbps, down: "
             "1Mbps } }\n  - name: phone\n    count: 9\n    kind: cpu\n    memory: 1GiB\n    batch: 4\n"
             "    batch_time: { uniform: [1s, 2s] }\n    link: { up: 1Mbps, down: 1Mbps }\n";
    scn_override z[] = {{"devices.phone.count", "0"}};
    s = scn_load_string("t.yaml", t2, strlen(t2), dir, z, 1, &e);
    cr_assert_not_null(s, "%s", e.msg);
    cr_assert_eq(s->n_devices, 1);
    cr_assert_eq(s->n_groups, 2);
    cr_assert_eq(s->groups[1].count, 0);
    cr_assert_str_eq(s->groups[1].name, "phone");
    scn_free(s);
}

Test(population, out_of_memory_never_crashes_or_leaks)
{
    write_file("t.csv", "name,kind,memory,batch,batch_time,link.up,link.down\nd0,cpu,1GiB,4,1s,1Mbps,1Mbps\n"
                        "d1,gpu,1GiB,4,2s,2Mbps,1Mbps\n");
    const char *t = pop_text(5, "{ lognormal: { median: 2.5s, sigma: 0.4 } }", "  - from_csv: t.csv\n");
    int ok = 0;
    for (long k = 1; k < 5000 && !ok; k++) {
        long before = dp_alloc_live();
        dp_alloc_fail_after(k);
        dp_err e = {0};
        scn_scenario *s = scn_load_string("t.yaml", t, strlen(t), dir, NULL, 0, &e);
        dp_alloc_fail_after(0);
        if (s) {
            ok = 1;
            cr_assert_eq(s->n_devices, 7);
            scn_free(s);
        } else {
            cr_assert(e.code == DP_ENOMEM, "k=%ld: %s", k, e.msg);
        }
        cr_assert_eq(dp_alloc_live(), before, "k=%ld leaked", k);
    }
    cr_assert(ok);
}

/* Members after the first share one block for their names when they own
 * nothing else (scn_group.pooled): every name as dp_indexed_name writes it,
 * across digit boundaries; a template with outages (its own memory) keeps
 * names of their own; both free without leaks (the suite's teardown). */
Test(population, pooled_member_names)
{
    scn_scenario *s = load_ok(pop_text(1001, "{ lognormal: { median: 2.5s, sigma: 0.4 } }", NULL));
    cr_assert_eq(s->n_groups, 1001);
    for (size_t i = 0; i < s->n_groups; i++) {
        char want[64];
        dp_indexed_name(want, sizeof want, "phone", (long long)i);
        cr_assert_str_eq(s->groups[i].name, want);
        cr_assert_eq(s->groups[i].pooled, i > 0, "group %zu", i);
    }
    scn_free(s);
    char text[2048];
    snprintf(text, sizeof text,
             HEAD "  - name: phone\n    count: 12\n    kind: cpu\n    memory: 1GiB\n    batch: 4\n"
                  "    batch_time: { lognormal: { median: 2.5s, sigma: 0.4 } }\n"
                  "    link: { up: 10Mbps, down: 10Mbps, outages: [[1h, 2h]] }\n");
    s = load_ok(text);
    cr_assert_eq(s->n_groups, 12);
    for (size_t i = 0; i < s->n_groups; i++) {
        cr_assert_eq(s->groups[i].pooled, 0);
        cr_assert_not_null(s->groups[i].link.outages.start_s, "group %zu has its own outages", i);
        char want[64];
        dp_indexed_name(want, sizeof want, "phone", (long long)i);
        cr_assert_str_eq(s->groups[i].name, want);
    }
    scn_free(s);
}
