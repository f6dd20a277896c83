/* dpsim.c: the public C API (dpsim.h) over the simulator's own modules.
 *
 * A thin layer: loading is scn_load_* plus policy_check_scenario (what the
 * command line's cli_load_scenario does), running is policy_run per policy
 * plus store_put_run (what runner_run does, minus the terminal progress
 * line), JSON is report.c's, so the library and the binary cannot drift.
 * Only dpsim.h's functions leave the shared library (dpsim.map). */
#include "dpsim.h"

#include "cli/report.h"
#include "run/runner.h"
#include "dp_common.h"
#include "dpsim_config.h"
#include "policy/policy.h"
#include "policy/runtime.h"
#include "scenario.h"
#include "store/store.h"
#include "sweep/sweep.h"

#include <ctype.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct dpsim_scenario {
    scn_scenario *s;
    size_t n_set;
    char **set; /* the overrides as given, stored with each run */
};

struct dpsim_results {
    size_t n;
    res_run **runs;
    int64_t *ids;
    const char *scenario_name; /* borrowed from the scenario's copy below */
    char *name;                /* the scenario's name, for the JSON */
    size_t n_set;
    char **set;
    char *json; /* made on first ask */
};

struct dpsim_db {
    store *st;
};

struct dpsim_grid {
    sweep_grid *g;
};

/* ---- process-wide switches, read once -------------------------------------- */

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

/* The simulator reads some environment switches lazily, on first use,
 * which would race when the first runs start in two threads; read them
 * all here once instead, before any run. */
static void init_switches(void)
{
    coll_set_per_flow(dp_env_flag("DPSIM_COLL_PER_FLOW"));
    prt_set_compute_per_batch(dp_env_flag("DPSIM_COMPUTE_PER_BATCH"));
    if (dp_env_flag("DPSIM_NO_FAST_FORWARD"))
        policy_set_fast_forward(0);
}

static void lib_init(void)
{
    pthread_once(&init_once, init_switches);
}

void dpsim_set_fast_forward(int on)
{
    lib_init();
    policy_set_fast_forward(on);
}

const char *dpsim_version(void)
{
    return DPSIM_VERSION;
}

/* ---- errors ------------------------------------------------------------------ */

/* Find "FILE:LINE:COL: " in msg (the loader's form, possibly after a
 * prefix such as "cadp on tiny: ") and split out the file, line, column
 * and the key path that follows when it is one word ("training.epochz:"). */
static void parse_position(dpsim_error *e)
{
    const char *m = e->message;
    for (const char *p = m; *p; p++) {
        if (*p != ':' || !isdigit((unsigned char)p[1]))
            continue;
        char *end;
        long line = strtol(p + 1, &end, 10);
        if (*end != ':' || !isdigit((unsigned char)end[1]))
            continue;
        long col = strtol(end + 1, &end, 10);
        if (end[0] != ':' || end[1] != ' ')
            continue;
        const char *f0 = m; /* the file starts after the last ": " before it */
        for (const char *q = m; q + 1 < p; q++)
            if (q[0] == ':' && q[1] == ' ')
                f0 = q + 2;
        size_t fl = (size_t)(p - f0);
        if (fl == 0 || fl >= sizeof e->file)
            continue;
        memcpy(e->file, f0, fl);
        e->file[fl] = '\0';
        e->line = (int)line;
        e->column = (int)col;
        const char *k0 = end + 2, *k1 = strstr(k0, ": ");
        if (k1 && (size_t)(k1 - k0) < sizeof e->key && !memchr(k0, ' ', (size_t)(k1 - k0))) {
            memcpy(e->key, k0, (size_t)(k1 - k0));
            e->key[k1 - k0] = '\0';
        }
        return;
    }
}

static int fail(dpsim_error *e, const dp_err *de)
{
    int code = de->code ? de->code : DPSIM_ERUN;
    if (e) {
        memset(e, 0, sizeof *e);
        e->code = code;
        snprintf(e->message, sizeof e->message, "%s", de->msg);
        parse_position(e);
    }
    return code;
}

static int fail_msg(dpsim_error *e, int code, const char *msg)
{
    dp_err de = {0};
    dp_err_set(&de, code, "%s", msg);
    return fail(e, &de);
}

static void ok(dpsim_error *e)
{
    if (e)
        memset(e, 0, sizeof *e);
}

/* ---- scenarios ------------------------------------------------------------------ */

static void strings_free(char **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        dp_free(v[i]);
    dp_free(v);
}

/* Copy the "KEY=VALUE" texts and split copies of them into overrides. */
static int split_set(const char *const *set, size_t n, char ***texts, char ***bufs, scn_override **ov,
                     dp_err *err)
{
    *texts = *bufs = NULL;
    *ov = NULL;
    if (n == 0)
        return 0;
    if (!set)
        return dp_err_set(err, DP_EINPUT, "overrides: NULL list of %zu", n);
    *texts = dp_calloc(n, sizeof **texts);
    *bufs = dp_calloc(n, sizeof **bufs);
    *ov = dp_calloc(n, sizeof **ov);
    if (!*texts || !*bufs || !*ov)
        return dp_err_set(err, DP_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        if (!set[i])
            return dp_err_set(err, DP_EINPUT, "override %zu: NULL", i + 1);
        if (!((*texts)[i] = dp_strdup(set[i])) || !((*bufs)[i] = dp_strdup(set[i])))
            return dp_err_set(err, DP_ENOMEM, "out of memory");
        char *eq = strchr((*bufs)[i], '=');
        if (!eq || eq == (*bufs)[i])
            return dp_err_set(err, DP_EINPUT, "--set '%s': want KEY=VALUE", set[i]);
        *eq = '\0';
        (*ov)[i].key = (*bufs)[i];
        (*ov)[i].value = eq + 1;
    }
    return 0;
}

static int load(const char *path, const char *name, const char *text, size_t len, const char *base_dir,
                const char *const *set, size_t n_set, dpsim_scenario **out, dpsim_error *e)
{
    lib_init();
    dp_err de = {0};
    if (!out)
        return fail_msg(e, DPSIM_EINPUT, "dpsim_scenario_load: NULL result pointer");
    *out = NULL;
    char **texts, **bufs;
    scn_override *ov;
    scn_scenario *s = NULL;
    if (!split_set(set, n_set, &texts, &bufs, &ov, &de)) {
        if (path && strcmp(path, "builtin:paper-testbed") == 0)
            s = scn_load_builtin("paper-testbed", ov, n_set, &de);
        else if (path)
            s = scn_load_file(path, ov, n_set, &de);
        else if (!text)
            dp_err_set(&de, DP_EINPUT, "dpsim_scenario_load_string: NULL text");
        else
            s = scn_load_string(name ? name : "<string>", text, len, base_dir, ov, n_set, &de);
        if (s && policy_check_scenario(s, &de)) {
            scn_free(s);
            s = NULL;
        }
    }
    strings_free(bufs, n_set);
    dp_free(ov);
    dpsim_scenario *d = s ? dp_calloc(1, sizeof *d) : NULL;
    if (!d) {
        if (s)
            dp_err_set(&de, DP_ENOMEM, "out of memory");
        scn_free(s);
        strings_free(texts, n_set);
        return fail(e, &de);
    }
    d->s = s;
    d->set = texts;
    d->n_set = n_set;
    *out = d;
    ok(e);
    return DPSIM_OK;
}

int dpsim_scenario_load_file(const char *path, const char *const *set, size_t n_set, dpsim_scenario **out,
                             dpsim_error *err)
{
    if (!path)
        return fail_msg(err, DPSIM_EINPUT, "dpsim_scenario_load_file: NULL path");
    return load(path, NULL, NULL, 0, NULL, set, n_set, out, err);
}

int dpsim_scenario_load_string(const char *name, const char *text, size_t len, const char *base_dir,
                               const char *const *set, size_t n_set, dpsim_scenario **out, dpsim_error *err)
{
    return load(NULL, name, text, len, base_dir, set, n_set, out, err);
}

void dpsim_scenario_free(dpsim_scenario *s)
{
    if (!s)
        return;
    scn_free(s->s);
    strings_free(s->set, s->n_set);
    dp_free(s);
}

const char *dpsim_scenario_name(const dpsim_scenario *s)
{
    return s ? s->s->name : NULL;
}

uint64_t dpsim_scenario_seed(const dpsim_scenario *s)
{
    return s ? s->s->training.seed : 0;
}

size_t dpsim_scenario_devices(const dpsim_scenario *s)
{
    return s ? s->s->n_devices : 0;
}

int dpsim_scenario_stochastic(const dpsim_scenario *s)
{
    for (size_t i = 0; s && i < s->s->n_groups; i++) {
        const scn_group *g = &s->s->groups[i];
        if (g->noise_cv > 0 || g->stragglers.every_s > 0 || g->avail.mtbf_s > 0)
            return 1;
    }
    return 0;
}

/* The policies `--policy all` runs on s, into pk; their number. */
static size_t applicable(const scn_scenario *s, const policy_def **pk)
{
    size_t n = policy_count() < POLICY_MAX ? policy_count() : POLICY_MAX;
    for (size_t k = 0; k < n; k++)
        pk[k] = policy_at(k);
    return (size_t)policy_keep_applicable(s, pk, n, NULL);
}

static void join_names(const policy_def *const *pk, size_t n, char *buf, size_t len)
{
    size_t at = 0;
    if (len)
        buf[0] = '\0';
    for (size_t k = 0; k < n && at < len; k++) {
        int w = snprintf(buf + at, len - at, "%s%s", k ? "," : "", policy_name(pk[k]));
        if (w < 0)
            break;
        at += (size_t)w;
    }
}

int dpsim_scenario_policies(const dpsim_scenario *s, char *buf, size_t len)
{
    if (!s)
        return 0;
    lib_init();
    const policy_def *pk[POLICY_MAX];
    size_t n = applicable(s->s, pk);
    join_names(pk, n, buf, len);
    return (int)n;
}

void dpsim_policy_names(char *buf, size_t len)
{
    policy_names(buf, len, ",");
}

/* ---- running ------------------------------------------------------------------------ */

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void now_iso(char *buf, size_t len)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* One id per dpsim_run call that stores (runs.invocation: the plots' default
 * runs are those of the latest invocation), unique on this host. */
static void invocation_id(char *buf, size_t len)
{
    static atomic_ulong calls;
    char now[32];
    now_iso(now, sizeof now);
    snprintf(buf, len, "%s-%ld-lib%lu", now, (long)getpid(), (unsigned long)atomic_fetch_add(&calls, 1) + 1);
}

static dpsim_results *results_new(size_t n, const char *name, char *const *set, size_t n_set)
{
    dpsim_results *r = dp_calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->runs = dp_calloc(n ? n : 1, sizeof *r->runs);
    r->ids = dp_calloc(n ? n : 1, sizeof *r->ids);
    r->name = dp_strdup(name ? name : "");
    r->set = n_set ? dp_calloc(n_set, sizeof *r->set) : NULL;
    int bad = !r->runs || !r->ids || !r->name || (n_set && !r->set);
    for (size_t i = 0; !bad && i < n_set; i++)
        bad = !(r->set[i] = dp_strdup(set[i]));
    r->n_set = n_set;
    if (bad) {
        dpsim_results_free(r);
        return NULL;
    }
    return r;
}

int dpsim_run(const dpsim_scenario *ds, const dpsim_run_options *opts, dpsim_results **out, dpsim_error *e)
{
    lib_init();
    dp_err de = {0};
    if (!ds || !out)
        return fail_msg(e, DPSIM_EINPUT, "dpsim_run: NULL scenario or result pointer");
    *out = NULL;
    const scn_scenario *s = ds->s;
    dpsim_run_options none = {0};
    if (!opts)
        opts = &none;
    const policy_def *pk[POLICY_MAX];
    size_t np;
    if (!opts->policies || strcmp(opts->policies, "all") == 0) {
        np = applicable(s, pk);
    } else {
        int n = runner_parse_policies(opts->policies, pk, POLICY_MAX, &de); /* as `--policy` */
        if (n < 0)
            return fail(e, &de);
        np = (size_t)n;
    }
    uint64_t seed = opts->use_seed ? opts->seed : s->training.seed;
    dpsim_results *r = results_new(np, s->name, ds->set, ds->n_set);
    if (!r)
        return fail_msg(e, DPSIM_ENOMEM, "out of memory");
    store *st = NULL;
    if (opts->db) {
        if (!(st = store_open(opts->db, 0, &de))) {
            dpsim_results_free(r);
            return fail(e, &de);
        }
        char inv[96];
        invocation_id(inv, sizeof inv);
        store_set_invocation(st, inv);
    }
    int rc = 0;
    for (size_t k = 0; k < np && !rc; k++) {
        char started[32];
        now_iso(started, sizeof started);
        double w0 = wall_s();
        res_run *run = policy_run(pk[k], s, seed, &de);
        if (!run) {
            dp_err_prefix(&de, "%s on %s", policy_name(pk[k]), s->name);
            rc = de.code ? de.code : DP_ERUN;
            break;
        }
        run->wall_s = wall_s() - w0;
        r->runs[r->n++] = run;
        if (st)
            rc = store_put_run(st, s, (const char *const *)ds->set, ds->n_set, run, DPSIM_VERSION, started, 0,
                               NULL, &r->ids[k], &de);
    }
    store_close(st);
    if (rc) {
        dpsim_results_free(r);
        return fail(e, &de);
    }
    *out = r;
    ok(e);
    return DPSIM_OK;
}

void dpsim_results_free(dpsim_results *r)
{
    if (!r)
        return;
    for (size_t k = 0; r->runs && k < r->n; k++)
        res_run_free(r->runs[k]);
    dp_free(r->runs);
    dp_free(r->ids);
    dp_free(r->name);
    strings_free(r->set, r->n_set);
    dp_free(r->json);
    dp_free(r);
}

/* ---- results as structs -------------------------------------------------------------- */

size_t dpsim_results_count(const dpsim_results *r)
{
    return r ? r->n : 0;
}

static const res_run *run_at(const dpsim_results *r, size_t k)
{
    return r && k < r->n ? r->runs[k] : NULL;
}

int dpsim_results_summary(const dpsim_results *r, size_t k, dpsim_run_summary *out)
{
    const res_run *x = run_at(r, k);
    if (!x || !out)
        return DPSIM_EINPUT;
    *out = (dpsim_run_summary){
        .policy = x->policy,
        .seed = x->seed,
        .tsend_s = x->tsend_s,
        .ttraining_s = x->ttraining_s,
        .ttotal_s = x->ttotal_s,
        .tflops = x->tflops,
        .utilization = x->utilization,
        .samples_processed = x->samples_processed,
        .bytes_total = x->bytes_total,
        .events = x->events,
        .wall_s = x->wall_s,
        .run_id = r->ids[k],
        .n_devices = x->n_devices,
        .n_epochs = x->n_epochs,
        .n_stats = x->n_stats,
        .options_json = x->options_json ? x->options_json : "{}",
    };
    return DPSIM_OK;
}

int dpsim_results_device(const dpsim_results *r, size_t k, size_t i, dpsim_device *out)
{
    const res_run *x = run_at(r, k);
    if (!x || i >= x->n_devices || !out)
        return DPSIM_EINPUT;
    const res_device *d = &x->devices[i];
    *out = (dpsim_device){
        .name = d->name,
        .group = d->group,
        .kind = d->kind,
        .samples = d->samples,
        .batches = d->batches,
        .compute_s = d->compute_s,
        .send_s = d->send_s,
        .recv_s = d->recv_s,
        .wait_s = d->wait_s,
        .bytes_sent = d->bytes_sent,
        .bytes_recv = d->bytes_recv,
        .data_ready_s = d->data_ready_s,
    };
    return DPSIM_OK;
}

int dpsim_results_epoch(const dpsim_results *r, size_t k, size_t i, dpsim_epoch *out)
{
    const res_run *x = run_at(r, k);
    if (!x || i >= x->n_epochs || !out)
        return DPSIM_EINPUT;
    *out = (dpsim_epoch){.epoch = x->epochs[i].epoch, .end_s = x->epochs[i].end_s};
    return DPSIM_OK;
}

int dpsim_results_stat(const dpsim_results *r, size_t k, size_t i, dpsim_stat *out)
{
    const res_run *x = run_at(r, k);
    if (!x || i >= x->n_stats || !out)
        return DPSIM_EINPUT;
    const res_stat *t = &x->stats[i];
    *out = (dpsim_stat){
        .name = t->name, .scope = res_scope_name(t->scope), .a = t->a, .b = t->b, .value = t->value};
    return DPSIM_OK;
}

const char *dpsim_results_json(dpsim_results *r)
{
    if (!r)
        return NULL;
    if (r->json)
        return r->json;
    json_buf *j = json_new();
    if (!j)
        return NULL;
    report_json_begin(j, r->name);
    for (size_t k = 0; k < r->n; k++)
        report_json_run(j, r->runs[k], (const char *const *)r->set, r->n_set);
    report_json_end(j);
    if (json_ok(j))
        r->json = dp_strdup(json_text(j));
    json_free(j);
    return r->json;
}

/* ---- a results database ------------------------------------------------------------------ */

int dpsim_db_open(const char *path, dpsim_db **out, dpsim_error *e)
{
    lib_init();
    dp_err de = {0};
    if (!path || !out)
        return fail_msg(e, DPSIM_EINPUT, "dpsim_db_open: NULL path or result pointer");
    *out = NULL;
    store *st = store_open_read(path, &de);
    if (!st)
        return fail(e, &de);
    dpsim_db *db = dp_calloc(1, sizeof *db);
    if (!db) {
        store_close(st);
        return fail_msg(e, DPSIM_ENOMEM, "out of memory");
    }
    db->st = st;
    *out = db;
    ok(e);
    return DPSIM_OK;
}

void dpsim_db_close(dpsim_db *db)
{
    if (!db)
        return;
    store_close(db->st);
    dp_free(db);
}

int dpsim_db_run(dpsim_db *db, int64_t run_id, dpsim_results **out, dpsim_error *e)
{
    dp_err de = {0};
    if (!db || !out)
        return fail_msg(e, DPSIM_EINPUT, "dpsim_db_run: NULL database or result pointer");
    *out = NULL;
    char *text = NULL, *name = NULL, *policy = NULL, **set = NULL;
    size_t n_set = 0;
    uint64_t seed;
    res_run *run = NULL;
    int rc = store_get_run_source(db->st, run_id, &text, &name, &set, &n_set, &policy, &seed, &de);
    if (!rc)
        rc = store_get_run(db->st, run_id, &run, &de);
    dpsim_results *r = rc ? NULL : results_new(1, name, set, n_set);
    if (!rc && !r)
        rc = dp_err_set(&de, DP_ENOMEM, "out of memory");
    dp_free(text);
    dp_free(name);
    dp_free(policy);
    store_strings_free(set, n_set);
    if (rc || !r) {
        res_run_free(run);
        return fail(e, &de);
    }
    r->runs[0] = run;
    r->ids[0] = run_id;
    r->n = 1;
    *out = r;
    ok(e);
    return DPSIM_OK;
}

/* ---- quantities ------------------------------------------------------------------------------ */

int dpsim_si(const char *text, double *out)
{
    static const scn_unit units[] = {SCN_UNIT_NUMBER, SCN_UNIT_BANDWIDTH, SCN_UNIT_RATE,
                                     SCN_UNIT_BYTES,  SCN_UNIT_TIME,      SCN_UNIT_FLOPS};
    if (!text || !out)
        return DPSIM_EINPUT;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) /* the unit's suffix picks one */
        if (scn_parse_quantity(text, units[i], out, NULL) == 0)
            return DPSIM_OK;
    return DPSIM_EINPUT;
}

/* ---- sweep grids ---------------------------------------------------------------------------- */

int dpsim_grid_new(const char *const *vary, size_t n_vary, dpsim_grid **out, dpsim_error *e)
{
    dp_err de = {0};
    if (!out || (n_vary && !vary))
        return fail_msg(e, DPSIM_EINPUT, "dpsim_grid_new: NULL argument");
    *out = NULL;
    sweep_grid *g = sweep_grid_new(&de);
    for (size_t i = 0; g && i < n_vary; i++)
        if (!vary[i] || sweep_grid_add(g, vary[i], &de)) {
            if (!vary[i])
                dp_err_set(&de, DP_EINPUT, "--vary %zu: NULL", i + 1);
            sweep_grid_free(g);
            g = NULL;
        }
    dpsim_grid *d = g ? dp_calloc(1, sizeof *d) : NULL;
    if (!d) {
        if (g)
            dp_err_set(&de, DP_ENOMEM, "out of memory");
        sweep_grid_free(g);
        return fail(e, &de);
    }
    d->g = g;
    *out = d;
    ok(e);
    return DPSIM_OK;
}

void dpsim_grid_free(dpsim_grid *g)
{
    if (!g)
        return;
    sweep_grid_free(g->g);
    dp_free(g);
}

size_t dpsim_grid_axes(const dpsim_grid *g)
{
    return g ? sweep_grid_n_axes(g->g) : 0;
}

size_t dpsim_grid_points(const dpsim_grid *g)
{
    return g ? sweep_grid_n_points(g->g) : 0;
}

const char *dpsim_grid_key(const dpsim_grid *g, size_t axis)
{
    return g && axis < sweep_grid_n_axes(g->g) ? sweep_grid_key(g->g, axis) : NULL;
}

const char *dpsim_grid_value(const dpsim_grid *g, size_t point, size_t axis)
{
    if (!g || axis >= sweep_grid_n_axes(g->g) || point >= sweep_grid_n_points(g->g))
        return NULL;
    return sweep_point_value(g->g, point, axis);
}
