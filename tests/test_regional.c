/* Regional parameter servers (policy regional, scenario `servers:`)
 * against a timeline computed by hand, and against localsgd's server
 * rounds where there is one group.
 *
 * World TWO_SITES: sites x (the main server, unlimited NIC, averaging 1e7
 * B/s; devices a[0], a[1], 1 s a batch) and y (a regional server, unlimited
 * NIC, averaging 1e7 B/s; device b, 2 s a batch).  Access links 1e6 B/s
 * each way, 10 ms; WAN x-y 1e6 B/s, 50 ms.  Model M = 1e6 B, D = 60
 * samples of 1e4 B: 20 each, two batches of 10; steps 1, so an epoch is
 * two rounds.
 */
#include <criterion/criterion.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"
#include "policy/runtime.h"

#include "test_common.h"

#define BODY                                                                                                 \
    "model: { name: m, params: 250000, bytes_per_param: 4, flops_per_sample: 1.0e6 }\n"                      \
    "dataset: { name: d, samples: 60, sample_bytes: 10000 }\n"                                               \
    "training: { epochs: 1 }\n"                                                                              \
    "server: { aggregate_rate: 10MB/s, site: x }\n"                                                          \
    "sites: [ x, y ]\n"                                                                                      \
    "wan: [ { between: [x, y], bandwidth: 8Mbps, latency: 50ms } ]\n"                                        \
    "devices:\n"                                                                                             \
    "  - { name: a, count: 2, kind: gpu, site: x, memory: 1GiB, batch: 10,\n"                                \
    "      batch_time: 1s, link: { up: 8Mbps, down: 8Mbps, latency: 10ms } }\n"                              \
    "  - { name: b, kind: cpu, site: y, memory: 1GiB, batch: 10, batch_time: 2s,\n"                          \
    "      link: { up: 8Mbps, down: 8Mbps, latency: 10ms } }\n"                                              \
    "policies:\n"                                                                                            \
    "  regional: { steps: 1 }\n"                                                                             \
    "  localsgd: { steps: 1, sync: server }\n"

static const char *TWO_SITES = BODY "servers: [ { site: y, aggregate_rate: 10MB/s } ]\n";
static const char *NO_SERVERS = BODY;

TEST_SUITE_NO_LEAKS(regional);

static res_run *run(const char *policy, const scn_scenario *s)
{
    dp_err err = {0};
    res_run *r = policy_run(policy_find(policy), s, 1, &err);
    cr_assert(r, "%s: %s", policy, err.msg);
    return r;
}

static double stat(const res_run *r, const char *name)
{
    const res_stat *x = res_find_stat(r, name, RES_SCOPE_RUN, 0, 0);
    cr_assert(x, "no statistic %s", name);
    return x->value;
}

/* By hand (each flow alone on its links unless said):
 *  distribution from the main server: a's data and model share a.down
 *    (0.5e6 each) until the data ends, then the model alone: 0.01 + 0.2 /
 *    0.5 + 0.8 = 1.21; b's also share the WAN, 0.06 + 1.2 = 1.26;
 *  round 1: a computes to 2.21, uploads to the main server (3.22), which
 *    averages its group of 2 (0.2 s): 3.42.  b computes to 3.26, uploads
 *    to y's server (4.27), which averages 1 model (0.1 s, 4.37) and sends
 *    it over the WAN (1.05 s): at the main server at 5.42; the WAN average
 *    of 2 models ends at 5.62.  Back: a[i] at 5.62 + 1.01 = 6.63; y's
 *    server at 5.62 + 1.05 = 6.67, b at 6.67 + 1.01 = 7.68;
 *  round 2: a computes to 7.63, uploads (8.64), its group averaged at 8.84;
 *    b computes to 9.68, uploads (10.69), averaged (10.79), at the main
 *    server at 11.84; the WAN average ends the epoch at 12.04. */
Test(regional, two_sites_by_hand)
{
    scn_scenario *s = load(TWO_SITES, NULL, 0);
    cr_assert_eq(s->n_servers, 1);
    res_run *r = run("regional", s);
    expect_close(r->tsend_s, 0.46); /* b holds its data at 0.06 + 0.4 */
    expect_close(r->devices[0].data_ready_s, 0.41);
    cr_assert_eq(r->n_epochs, 1);
    expect_close(r->epochs[0].end_s, 12.04);
    expect_close(r->ttotal_s, 12.04);
    expect_close(stat(r, "regional.wan_rounds"), 2);
    /* WAN: b's data and model, y's model up in each round, the global one
     * down after the first (the last is not sent) */
    expect_close(stat(r, "bytes.wan"), 2e5 + 1e6 + 3e6);
    /* moved: 3 x (data + model), 3 devices x (2 uploads + 1 download), and
     * between the servers y's 2 models up and 1 global model down */
    expect_close(r->bytes_total, 3 * 1.2e6 + 3 * 3e6 + 3e6);
    res_run_free(r);
    scn_free(s);
}

/* One main server for every device: b's upload crosses the WAN (1.06 s),
 * the server averages 3 models (0.3 s).  Round 1: b's model at 4.32,
 * average to 4.62, b back at 5.68; round 2: b at 7.68, up at 8.74, the
 * epoch's end at 9.04.  WAN bytes: b's data and model, b's model up in
 * each round and down after the first: as many as with y's server (in a
 * site of one device a regional server saves no WAN bytes). */
Test(regional, single_server_by_hand)
{
    scn_scenario *s = load(NO_SERVERS, NULL, 0);
    res_run *r = run("regional", s);
    expect_close(r->epochs[0].end_s, 9.04);
    expect_close(stat(r, "bytes.wan"), 2e5 + 1e6 + 3e6);
    res_run_free(r);
    scn_free(s);
}

static void expect_same(const res_run *a, const res_run *b)
{
    cr_expect_eq(a->tsend_s, b->tsend_s);
    cr_expect_eq(a->ttotal_s, b->ttotal_s);
    cr_expect_eq(a->tflops, b->tflops);
    cr_expect_eq(a->utilization, b->utilization);
    cr_expect_eq(a->bytes_total, b->bytes_total);
    cr_expect_eq(a->events, b->events);
    cr_assert_eq(a->n_epochs, b->n_epochs);
    for (size_t k = 0; k < a->n_epochs; k++)
        cr_expect_eq(a->epochs[k].end_s, b->epochs[k].end_s);
    cr_assert_eq(a->n_devices, b->n_devices);
    for (size_t d = 0; d < a->n_devices; d++) {
        /* the names are each run's own strings (res_device_names): compared
         * as strings, every number as bits */
        const res_device *x = &a->devices[d], *y = &b->devices[d];
        cr_expect(!strcmp(x->name, y->name) && !strcmp(x->group, y->group) && !strcmp(x->kind, y->kind),
                  "device %zu's names differ", d);
        cr_expect(!memcmp(&x->samples, &y->samples, sizeof *x - offsetof(res_device, samples)),
                  "device %zu differs", d);
    }
    cr_assert_eq(a->n_bins, b->n_bins);
    for (size_t k = 0; k < a->n_bins; k++)
        cr_expect_eq(a->flops_bins[k], b->flops_bins[k]);
}

/* With one group (no regional server; or one site whose regional server
 * has the main server's NIC and rate) there is nothing to average across
 * the WAN: the run is localsgd's server rounds bit for bit. */
Test(regional, one_group_is_todays_single_server)
{
    const char *one_site = "model: { name: m, params: 250000, bytes_per_param: 4, flops_per_sample: 1.0e6 }\n"
                           "dataset: { name: d, samples: 100, sample_bytes: 10000 }\n"
                           "training: { epochs: 3 }\n"
                           "server: { aggregate_rate: 10MB/s, site: x }\n"
                           "sites: [ x ]\n"
                           "servers: [ { site: x, aggregate_rate: 10MB/s } ]\n"
                           "devices:\n"
                           "  - { name: a, count: 3, kind: gpu, memory: 1GiB, batch: 10, batch_time: 1s,\n"
                           "      link: { up: 8Mbps, down: 16Mbps, latency: 10ms } }\n"
                           "  - { name: b, kind: cpu, memory: 1GiB, batch: 7, batch_time: 2.5s,\n"
                           "      link: { up: 4Mbps, down: 8Mbps, latency: 30ms } }\n"
                           "policies:\n"
                           "  regional: { steps: 3 }\n"
                           "  localsgd: { steps: 3, sync: server }\n";
    const char *texts[] = {NO_SERVERS, one_site};
    for (int i = 0; i < 2; i++) {
        scn_scenario *s = load(texts[i], NULL, 0);
        res_run *a = run("localsgd", s), *b = run("regional", s);
        expect_same(a, b);
        res_run_free(a);
        res_run_free(b);
        scn_free(s);
    }
}

/* wan: async: y's group does not wait for the WAN average, so the epoch
 * ends no later than with sync; the main server still merges y's model. */
Test(regional, async_does_not_wait)
{
    scn_override ov = {"policies.regional.wan", "async"};
    scn_scenario *s = load(TWO_SITES, &ov, 1), *t = load(TWO_SITES, NULL, 0);
    res_run *a = run("regional", s), *b = run("regional", t);
    cr_expect(a->ttotal_s < b->ttotal_s, "async %g, sync %g", a->ttotal_s, b->ttotal_s);
    cr_expect(stat(a, "regional.wan_rounds") >= 1);
    res_run_free(a);
    res_run_free(b);
    scn_free(s);
    scn_free(t);
}

/* Learning with wan: async: each site's average, and the global model
 * into which the pushes are mixed, reach the update stream.  The run is
 * deterministic (the same evaluations bit for bit), reaches a time to
 * accuracy, and with one group it is localsgd's learning result. */
#define LEARN                                                                                                \
    "learning: { data: digits, model: softmax, lr: { initial: 0.5 }, evaluate: { every: 2s }, targets: "     \
    "[0.5] }\n"

static void expect_same_learning(const res_run *a, const res_run *b)
{
    cr_assert_eq(a->n_evals, b->n_evals);
    for (size_t k = 0; k < a->n_evals; k++)
        cr_expect(a->evals[k].t_s == b->evals[k].t_s && a->evals[k].test_acc == b->evals[k].test_acc &&
                      a->evals[k].test_loss == b->evals[k].test_loss,
                  "evaluation %zu differs", k);
    cr_assert_eq(a->n_tta, b->n_tta);
    for (size_t k = 0; k < a->n_tta; k++)
        cr_expect(a->tta_s[k] == b->tta_s[k] || (isnan(a->tta_s[k]) && isnan(b->tta_s[k])));
}

Test(regional, async_learning)
{
    char text[4096];
    snprintf(text, sizeof text, "%s%s", TWO_SITES, LEARN);
    scn_override ov[] = {{"policies.regional.wan", "async"}, {"training.epochs", "4"}};
    scn_scenario *s = load(text, ov, 2);
    res_run *a = run("regional", s), *b = run("regional", s);
    cr_expect(a->n_evals > 2, "%zu evaluations", a->n_evals);
    expect_same_learning(a, b);
    cr_assert_eq(a->n_tta, 1);
    cr_expect(isfinite(a->tta_s[0]) && a->tta_s[0] > 0, "time to 50%%: %g", a->tta_s[0]);
    cr_expect(stat(a, "regional.wan_rounds") >= 1);
    res_run_free(a);
    res_run_free(b);
    scn_free(s);
    snprintf(text, sizeof text, "%s%s", NO_SERVERS, LEARN); /* one group: localsgd's result */
    s = load(text, ov, 2);
    a = run("localsgd", s);
    b = run("regional", s);
    expect_same(a, b);
    expect_same_learning(a, b);
    res_run_free(a);
    res_run_free(b);
    scn_free(s);
}

/* Failures (wan: sync): site x holds a and c (the main server's group),
 * y holds b (0.5 s a batch); the WAN is 1e7 B/s, 50 ms.  c goes down at
 * 2 s and comes back at 3 s (data_persists: %s).  By hand:
 *  distribution: a, c at 1.21, b at 1.26 (as TWO_SITES);
 *  round 1: b computes to 1.76, uploads (2.77), y averages 1 model (2.87),
 *    the WAN (0.15 s): at the main server at 3.02.  c leaves at 2.0, its
 *    batch under way lost (0.79 s) and its other 10 samples skipped; a
 *    computes to 2.21, uploads (3.22) and x's average is over the survivor
 *    alone (0.1 s): 3.32; the WAN average of 2 models ends at 3.52;
 *  round 2: a and c (back) download to 4.53; c has nothing left and
 *    uploads at once (5.54); a computes to 5.53, uploads (6.54): x's
 *    average of 2 models ends at 6.74.  y's server has the model at 3.67, b
 *    at 4.68, computes to 5.18, uploads (6.19), y averages (6.29), at the
 *    main server at 6.44; the WAN average ends the epoch at 6.94.
 * Without the failure x's first average takes 0.2 s and the epoch ends at
 * 7.04.  With c's data lost it receives its shard again with the model in
 * round 2 (to 4.73, as the distribution), which changes nothing after. */
static const char *FAIL = "model: { name: m, params: 250000, bytes_per_param: 4, flops_per_sample: 1.0e6 }\n"
                          "dataset: { name: d, samples: 60, sample_bytes: 10000 }\n"
                          "training: { epochs: 1 }\n"
                          "server: { aggregate_rate: 10MB/s, site: x }\n"
                          "sites: [ x, y ]\n"
                          "wan: [ { between: [x, y], bandwidth: 80Mbps, latency: 50ms } ]\n"
                          "servers: [ { site: y, aggregate_rate: 10MB/s } ]\n"
                          "devices:\n"
                          "  - { name: a, kind: gpu, site: x, memory: 1GiB, batch: 10, batch_time: 1s,\n"
                          "      link: { up: 8Mbps, down: 8Mbps, latency: 10ms } }\n"
                          "  - { name: c, kind: gpu, site: x, memory: 1GiB, batch: 10, batch_time: 1s,\n"
                          "      link: { up: 8Mbps, down: 8Mbps, latency: 10ms }%s }\n"
                          "  - { name: b, kind: cpu, site: y, memory: 1GiB, batch: 10, batch_time: 0.5s,\n"
                          "      link: { up: 8Mbps, down: 8Mbps, latency: 10ms } }\n"
                          "policies:\n"
                          "  regional: { steps: 1 }\n";

Test(regional, failure_leaves_the_site_average_by_hand)
{
    char tpath[] = "/tmp/dpsim-regional-XXXXXX";
    int fd = mkstemp(tpath);
    cr_assert(fd >= 0);
    FILE *f = fdopen(fd, "w");
    cr_assert(f);
    fputs("time_s,up\n0,1\n2,0\n3,1\n", f);
    fclose(f);
    const char *persists[] = {"true", "false"};
    for (int i = 0; i < 3; i++) {
        char avail[400] = "", text[4096];
        if (i < 2)
            snprintf(avail, sizeof avail, ",\n      availability: { trace: %s, data_persists: %s }", tpath,
                     persists[i]);
        snprintf(text, sizeof text, FAIL, avail);
        scn_scenario *s = load(text, NULL, 0);
        res_run *r = run("regional", s);
        expect_close(r->ttotal_s, i < 2 ? 6.94 : 7.04);
        cr_expect_eq(stat(r, "regional.wan_rounds"), 2);
        if (i < 2) {
            expect_close(stat(r, "compute_lost_s"), 0.79);
            cr_expect_eq(stat(r, "samples_skipped"), 10);
        }
        res_run_free(r);
        scn_free(s);
    }
    remove(tpath);
}

/* wan: async does not model failures yet: refused, saying what to use. */
Test(regional, async_with_failures_refused)
{
    char text[4096];
    snprintf(text, sizeof text, FAIL, ",\n      availability: { mtbf: 1h, mttr: 1min }");
    scn_override ov = {"policies.regional.wan", "async"};
    scn_scenario *s = load(text, &ov, 1);
    dp_err err = {0};
    res_run *r = policy_run(policy_find("regional"), s, 1, &err);
    cr_expect(!r && err.code == DP_EINPUT && strstr(err.msg, "wan: sync"), "%s", err.msg);
    res_run_free(r);
    scn_free(s);
}

Test(regional, bad_servers_name_file_line_column)
{
    const char *bad[][2] = {
        {"servers: [ { site: z } ]\n", "test.yaml:15:20: servers[0].site"},
        {"servers: [ { site: y }, { site: y } ]\n", "test.yaml:15:33: servers[1].site"},
        {"servers: [ { site: y, nic: { up: 0 } } ]\n", "servers[0].nic.up"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char text[4096];
        snprintf(text, sizeof text, "%s%s", NO_SERVERS, bad[i][0]);
        dp_err err = {0};
        scn_scenario *s = scn_load_string("test.yaml", text, strlen(text), NULL, NULL, 0, &err);
        cr_expect_null(s);
        scn_free(s);
        cr_expect_eq(err.code, DP_EINPUT);
        cr_expect(strstr(err.msg, bad[i][1]), "want %s in: %s", bad[i][1], err.msg);
    }
}
