/* runner.c: scenario -> policies -> results -> store. */
#include "run/runner.h"
#include "dpsim_config.h"

#include <string.h>
#include <time.h>

/* The embedded copy of scenarios/paper-testbed.yaml (scenarios/meson.build). */
extern const char dpsim_builtin_paper_testbed[];
extern const size_t dpsim_builtin_paper_testbed_len;

static runner_hooks hooks;

void runner_set_hooks(const runner_hooks *h)
{
    hooks = h ? *h : (runner_hooks){0};
}

void runner_now_iso(char *buf, size_t len)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

double runner_wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

scn_scenario *runner_load_scenario(const char *arg, const scn_override *ov, size_t n_ov, dp_err *err)
{
    scn_scenario *s;
    if (strcmp(arg, "builtin:paper-testbed") == 0)
        s = scn_load_string("<builtin:paper-testbed>", dpsim_builtin_paper_testbed,
                            dpsim_builtin_paper_testbed_len, NULL, ov, n_ov, err);
    else
        s = scn_load_file(arg, ov, n_ov, err);
    if (s && policy_check_scenario(s, err)) { /* the policies' options, by the registry */
        scn_free(s);
        return NULL;
    }
    return s;
}

int runner_parse_policies(const char *list, const policy_def **out, size_t cap, dp_err *err)
{
    if (!list || strcmp(list, "all") == 0) {
        size_t n = policy_count() < cap ? policy_count() : cap;
        for (size_t k = 0; k < n; k++)
            out[k] = policy_at(k);
        return (int)n;
    }
    size_t n = 0;
    const char *p = list;
    while (*p) {
        const char *q = strchr(p, ',');
        size_t len = q ? (size_t)(q - p) : strlen(p);
        char name[32];
        if (len == 0 || len >= sizeof name) {
            char have[300];
            policy_names(have, sizeof have, ",");
            dp_err_set(err, DP_EINPUT, "--policy: bad list '%s' (want some of %s, or all)", list, have);
            return -1;
        }
        memcpy(name, p, len);
        name[len] = '\0';
        const policy_def *k;
        if (policy_lookup(name, "--policy", &k, err))
            return -1;
        for (size_t i = 0; i < n; i++)
            if (out[i] == k) {
                dp_err_set(err, DP_EINPUT, "--policy: '%s' listed twice", name);
                return -1;
            }
        if (n == cap) {
            dp_err_set(err, DP_EINPUT, "--policy: too many policies");
            return -1;
        }
        out[n++] = k;
        p = q ? q + 1 : p + len;
    }
    if (n == 0) {
        dp_err_set(err, DP_EINPUT, "--policy: empty list");
        return -1;
    }
    return (int)n;
}

/* One policy's run, stored: 0, or its failure's code (err set, prefixed
 * with the policy and scenario when the simulation failed). *sim_failed:
 * 1 when the simulation itself failed (not the store). */
static int run_one(const scn_scenario *s, const policy_def *pk, size_t k, size_t n, uint64_t seed, store *st,
                   const char *const *overrides, size_t n_overrides, res_run **out, int64_t *id,
                   int *sim_failed, dp_err *err)
{
    *sim_failed = 0;
    char started[32];
    runner_now_iso(started, sizeof started);
    double w0 = runner_wall_s();
    char what[96];
    /* "[2/11] ddp on geo-3sites": where an all-policies run stands (k of n) */
    if (n > 1)
        snprintf(what, sizeof what, "[%zu/%zu] %s on %s", k + 1, n, policy_name(pk), s->name);
    else
        snprintf(what, sizeof what, "%s on %s", policy_name(pk), s->name);
    if (hooks.begin)
        hooks.begin(what);
    res_run *r = policy_run(pk, s, seed, err);
    if (hooks.end)
        hooks.end();
    if (!r) {
        *sim_failed = 1;
        dp_err_prefix(err, "%s on %s", policy_name(pk), s->name);
        return err ? err->code : DP_ERUN;
    }
    r->wall_s = runner_wall_s() - w0;
    *out = r;
    if (st)
        return store_put_run(st, s, overrides, n_overrides, r, DPSIM_VERSION, started, 0, NULL, id, err);
    return 0;
}

int runner_run_each(const scn_scenario *s, const policy_def *const *pk, size_t n, uint64_t seed, store *st,
                    const char *const *overrides, size_t n_overrides, res_run **out, int64_t *ids,
                    int *exit_code, dp_err *err)
{
    int failed = 0;
    *exit_code = 0;
    for (size_t k = 0; k < n; k++) {
        out[k] = NULL;
        ids[k] = 0;
    }
    for (size_t k = 0; k < n; k++) {
        int sim_failed;
        int rc =
            run_one(s, pk[k], k, n, seed, st, overrides, n_overrides, &out[k], &ids[k], &sim_failed, err);
        if (!rc)
            continue;
        /* a simulation that failed is this policy's problem; an interrupt,
         * the database or memory are everyone's: stop */
        if (!sim_failed || rc == DP_ENOMEM || (hooks.interrupted && hooks.interrupted()))
            return rc;
        int code = hooks.report ? hooks.report(err) : (err && err->code == DP_EINPUT ? 2 : 1);
        failed++;
        if (code > *exit_code)
            *exit_code = code;
    }
    return failed;
}

int runner_run(const scn_scenario *s, const policy_def *const *pk, size_t n, uint64_t seed, store *st,
               const char *const *overrides, size_t n_overrides, res_run **out, int64_t *ids, dp_err *err)
{
    for (size_t k = 0; k < n; k++) {
        out[k] = NULL;
        ids[k] = 0;
    }
    for (size_t k = 0; k < n; k++) {
        int sim_failed;
        int rc =
            run_one(s, pk[k], k, n, seed, st, overrides, n_overrides, &out[k], &ids[k], &sim_failed, err);
        if (rc)
            return rc;
    }
    return 0;
}
