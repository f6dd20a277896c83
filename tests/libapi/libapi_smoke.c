/* libapi_smoke.c: a program using libdpsim.so through its public header
 * alone, as a user's would (tests/libapi/e2e_libapi.sh builds it against an
 * installed copy with pkg-config; meson builds it against the build tree).
 *
 *   libapi_smoke SCENARIO json [POLICIES]   print `dpsim run --json`'s text
 *   libapi_smoke SCENARIO check             read the results as structs,
 *       check them against the JSON, a bad scenario's error fields, and two
 *       runs in two threads against one run alone; "ok" or a message, exit 1
 */
#include <dpsim.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define CHECK(cond, ...)                                                                                     \
    do {                                                                                                     \
        if (!(cond)) {                                                                                       \
            fprintf(stderr, "libapi_smoke: %s:%d: ", __FILE__, __LINE__);                                    \
            fprintf(stderr, __VA_ARGS__);                                                                    \
            fprintf(stderr, "\n");                                                                           \
            failures++;                                                                                      \
        }                                                                                                    \
    } while (0)

typedef struct job {
    const dpsim_scenario *s;
    const char *policies;
    char *json; /* malloc'd */
    int rc;
} job;

static void *run_job(void *arg)
{
    job *j = arg;
    dpsim_run_options o = {0};
    o.policies = j->policies;
    dpsim_results *r = NULL;
    dpsim_error e;
    j->rc = dpsim_run(j->s, &o, &r, &e);
    if (j->rc == DPSIM_OK) {
        const char *t = dpsim_results_json(r);
        j->json = t ? malloc(strlen(t) + 1) : NULL;
        if (j->json)
            memcpy(j->json, t, strlen(t) + 1);
    }
    dpsim_results_free(r);
    return NULL;
}

static void check_structs(const dpsim_scenario *s)
{
    dpsim_run_options o = {0};
    o.policies = "ddp,cadp";
    o.use_seed = 1;
    o.seed = 3;
    dpsim_results *r = NULL;
    dpsim_error e;
    int rc = dpsim_run(s, &o, &r, &e);
    CHECK(rc == DPSIM_OK, "run: %s", e.message);
    if (rc)
        return;
    CHECK(dpsim_results_count(r) == 2, "2 runs, got %zu", dpsim_results_count(r));
    dpsim_run_summary m;
    CHECK(dpsim_results_summary(r, 1, &m) == DPSIM_OK, "summary 1");
    CHECK(strcmp(m.policy, "cadp") == 0 && m.seed == 3, "run 1 is cadp seed 3 (got %s %llu)", m.policy,
          (unsigned long long)m.seed);
    CHECK(m.ttotal_s > 0 && m.ttotal_s >= m.tsend_s && m.n_devices == dpsim_scenario_devices(s),
          "cadp's figures: Ttotal %g, Tsend %g, %zu devices", m.ttotal_s, m.tsend_s, m.n_devices);
    double last = -1;
    for (size_t i = 0; i < m.n_epochs; i++) {
        dpsim_epoch ep;
        CHECK(dpsim_results_epoch(r, 1, i, &ep) == DPSIM_OK && ep.epoch == (int)i + 1 && ep.end_s > last,
              "epoch %zu", i);
        last = ep.end_s;
    }
    CHECK(last == m.ttotal_s, "the last epoch ends at Ttotal (%.17g vs %.17g)", last, m.ttotal_s);
    dpsim_device d;
    CHECK(dpsim_results_device(r, 0, 0, &d) == DPSIM_OK && d.name && d.compute_s > 0, "device 0");
    CHECK(dpsim_results_device(r, 0, m.n_devices, &d) == DPSIM_EINPUT, "device out of range");
    CHECK(dpsim_results_summary(r, 2, &m) == DPSIM_EINPUT, "run out of range");
    /* The JSON carries the same doubles, printed to round-trip. */
    const char *json = dpsim_results_json(r);
    dpsim_results_summary(r, 0, &m);
    const char *at = json ? strstr(json, "\"ttotal_s\":") : NULL;
    CHECK(json && strstr(json, "\"format\":\"dpsim-runs\""), "JSON format");
    CHECK(at && strtod(at + strlen("\"ttotal_s\":"), NULL) == m.ttotal_s, "JSON Ttotal is %.17g", m.ttotal_s);
    dpsim_results_free(r);
}

static void check_errors(void)
{
    static const char bad[] =
        "name: bad\n"
        "model: {params: 1000, flops_per_sample: 1e6}\n"
        "dataset: {samples: 100, sample_bytes: 1KB}\n"
        "training: {epochz: 1}\n"
        "devices: [{name: g, batch: 8, batch_time: 10ms, link: {up: 1Gbps, down: 1Gbps}}]\n";
    dpsim_scenario *s = NULL;
    dpsim_error e;
    int rc = dpsim_scenario_load_string("bad.yaml", bad, sizeof bad - 1, NULL, NULL, 0, &s, &e);
    CHECK(rc == DPSIM_EINPUT && !s, "a bad scenario is DPSIM_EINPUT (got %d)", rc);
    CHECK(strcmp(e.file, "bad.yaml") == 0 && e.line == 4 && e.column > 1, "position: %s:%d:%d (%s)", e.file,
          e.line, e.column, e.message);
    CHECK(strcmp(e.key, "training.epochz") == 0 && strstr(e.message, "did you mean 'epochs'"),
          "key: '%s' (%s)", e.key, e.message);
    rc = dpsim_scenario_load_file("/nonexistent/x.yaml", NULL, 0, &s, &e);
    CHECK(rc == DPSIM_EINPUT && e.message[0], "a missing file: %d %s", rc, e.message);
    const char *set[] = {"devices.nosuch.count=2"};
    rc = dpsim_scenario_load_string("ok.yaml", bad, 0, NULL, set, 1, &s, &e);
    CHECK(rc == DPSIM_EINPUT, "empty text fails");
}

static void check_threads(const dpsim_scenario *s)
{
    job alone = {s, "ddp,cadp", NULL, 0};
    run_job(&alone);
    job j[2] = {{s, "ddp,cadp", NULL, 0}, {s, "ddp,cadp", NULL, 0}};
    pthread_t t[2];
    for (int k = 0; k < 2; k++)
        pthread_create(&t[k], NULL, run_job, &j[k]);
    for (int k = 0; k < 2; k++) {
        pthread_join(t[k], NULL);
        CHECK(j[k].rc == DPSIM_OK && j[k].json && alone.json && strcmp(j[k].json, alone.json) == 0,
              "thread %d gives the same JSON as a run alone", k);
        free(j[k].json);
    }
    free(alone.json);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: libapi_smoke SCENARIO json [POLICIES] | SCENARIO check\n");
        return 2;
    }
    dpsim_scenario *s = NULL;
    dpsim_error e;
    if (dpsim_scenario_load_file(argv[1], NULL, 0, &s, &e)) {
        fprintf(stderr, "libapi_smoke: %s\n", e.message);
        return 2;
    }
    if (strcmp(argv[2], "json") == 0) {
        job j = {s, argc > 3 ? argv[3] : NULL, NULL, 0};
        run_job(&j);
        if (j.rc == DPSIM_OK)
            printf("%s\n", j.json);
        free(j.json);
        dpsim_scenario_free(s);
        return j.rc == DPSIM_OK ? 0 : 1;
    }
    CHECK(strcmp(dpsim_version(), "") != 0, "version");
    char names[512];
    CHECK(dpsim_scenario_policies(s, names, sizeof names) > 0 && strstr(names, "ddp"), "policies: %s", names);
    check_structs(s);
    check_errors();
    check_threads(s);
    dpsim_scenario_free(s);
    if (failures)
        return 1;
    printf("ok\n");
    return 0;
}
