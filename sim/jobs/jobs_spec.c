/* jobs_spec.c: `jobs:` and `scheduler:` of a scenario, read and checked
 * (jobs.h): a YAML list of jobs, or a job trace file (CSV, dpsim's shape
 * or the Pollux workload shape), and the scheduler with its options.
 * Each job's own settings are overrides of the world's scenario, loaded
 * once per distinct set (jobs of a trace share a few). */
#include "jobs.h"
#include "yamltree.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A job while it is read: its overrides as "KEY=VALUE" strings. */
typedef struct draft {
    char **set;
    size_t n_set;
    int pinned_groups[64]; /* group indices named by `groups:` */
    size_t n_groups;
    int gline[64], gcol[64];
} draft;

/* What a world of many jobs does not model yet (each job's runtime would
 * get it wrong without a word): data placed at sites (`dataset.parts`: the
 * holders and caches would be each job's own), and batteries (a battery's
 * charge is the device's across jobs, a job's runtime would start it
 * full), so such a scenario is refused.  Power alone (`power:`) is
 * counted: each job's devices' energy while it holds them. */
static const char *not_for_jobs(const scn_scenario *s)
{
    if (s->data)
        return "place the data (dataset.parts, .storage, .caches)";
    for (size_t g = 0; g < s->n_groups; g++)
        if (s->groups[g].energy.on && s->groups[g].energy.battery)
            return "run batteries (a device group's battery:; power: alone is counted)";
    return NULL;
}

/* learning.efficiency logs a run's updates for the statistical-efficiency
 * model, whose figures a job's runs (resumed after pre-emptions) do not
 * piece together yet. */
static int learning_efficiency(const scn_scenario *s)
{
    const yt_node *l = scn_learning(s);
    return l && yt_get(l, "efficiency") != NULL;
}

/* Device failures are the world's (every job sees the same devices fail):
 * a job's settings may not change them. */
static int sets_availability(const draft *d)
{
    for (size_t k = 0; k < d->n_set; k++) { /* "KEY=VALUE": the key's parts */
        const char *key = d->set[k], *eq = strchr(key, '=');
        for (const char *p = key; p && p < eq; p = strchr(p, '.'), p = p ? p + 1 : NULL)
            if (strncmp(p, "availability", 12) == 0 && (p[12] == '.' || p + 12 == eq))
                return 1;
    }
    return 0;
}

static int draft_add(draft *d, const char *key, const char *value)
{
    char **ns = dp_realloc(d->set, (d->n_set + 1) * sizeof *ns);
    if (!ns)
        return DP_ENOMEM;
    d->set = ns;
    size_t len = strlen(key) + strlen(value) + 2;
    if (!(d->set[d->n_set] = dp_malloc(len)))
        return DP_ENOMEM;
    snprintf(d->set[d->n_set++], len, "%s=%s", key, value);
    return 0;
}

static void draft_free(draft *d)
{
    for (size_t i = 0; i < d->n_set; i++)
        dp_free(d->set[i]);
    dp_free(d->set);
}

void jobs_free(jobs_spec *js)
{
    if (!js)
        return;
    for (size_t i = 0; i < js->n; i++) {
        dp_free(js->jobs[i].pinned);
        eff_params_free(js->jobs[i].eff);
    }
    dp_free(js->jobs);
    for (size_t i = 0; i < js->n_scn; i++) {
        scn_free(js->scns[i]);
        dp_free(js->keys[i]);
    }
    dp_free(js->scns);
    dp_free(js->keys);
    dp_free(js->trace);
    dp_free(js);
}

int jobs_in(const scn_scenario *s)
{
    return scn_jobs(s) != NULL;
}

/* ---- the scheduler ---- */

static int unknown_sched(const scn_scenario *s, const yt_node *n, const char *path, dp_err *err)
{
    char have[200], g[80];
    const char *names[16];
    size_t k = sched_count();
    for (size_t i = 0; i < k && i < 16; i++)
        names[i] = sched_at(i)->name;
    sched_names(have, sizeof have, ", ");
    const char *near = yt_nearest(n->text, names, k);
    if (near)
        return scn_read_fail(s, n, path, err, "unknown scheduler, did you mean '%s'? (have: %s) (got %s)",
                             near, have, scn_read_got(n, g, sizeof g));
    return scn_read_fail(s, n, path, err, "unknown scheduler (have: %s) (got %s)", have,
                         scn_read_got(n, g, sizeof g));
}

static int read_scheduler(jobs_spec *js, const policy_def **def_policy, dp_err *err)
{
    const scn_scenario *s = js->world;
    const yt_node *n = scn_scheduler(s), *name = n;
    js->sched = sched_find("fifo");
    js->opts = (sched_opts){.interval_s = 0, .restart_s = 0, .threshold_s = 3600};
    *def_policy = policy_find("ddp");
    if (!n)
        return 0;
    if (n->kind == YT_MAP) {
        static const char *const keys[] = {"name",   "interval",      "restart",  "threshold",
                                           "policy", "arrival_scale", "train_to", NULL};
        int64_t dummy;
        (void)dummy;
        if (scn_read_keys(s, n, "scheduler", keys, err) < 0 ||
            scn_read_quantity(s, n, "scheduler", "interval", SCN_UNIT_TIME, 0, 1, INFINITY,
                              &js->opts.interval_s, err) < 0 ||
            scn_read_quantity(s, n, "scheduler", "restart", SCN_UNIT_TIME, 0, 1, INFINITY,
                              &js->opts.restart_s, err) < 0 ||
            scn_read_quantity(s, n, "scheduler", "threshold", SCN_UNIT_TIME, 3600, 1, INFINITY,
                              &js->opts.threshold_s, err) < 0 ||
            scn_read_quantity(s, n, "scheduler", "arrival_scale", SCN_UNIT_NUMBER, 1, 0, 1e9,
                              &js->arrival_scale, err) < 0)
            return DP_EINPUT;
        const yt_node *tt = yt_get(n, "train_to");
        if (tt && (tt->kind != YT_SCALAR || (strcmp(tt->text, "epochs") && strcmp(tt->text, "progress")))) {
            char g[80];
            return scn_read_fail(s, tt, "scheduler.train_to", err, "expected epochs or progress (got %s)",
                                 scn_read_got(tt, g, sizeof g));
        }
        js->opts.to_progress = tt && !strcmp(tt->text, "progress");
        const yt_node *p = yt_get(n, "policy");
        if (p && (p->kind != YT_SCALAR || policy_lookup(p->text, "", def_policy, err)))
            return p->kind != YT_SCALAR
                       ? scn_read_fail(s, p, "scheduler.policy", err, "expected a policy name")
                       : scn_read_fail(s, p, "scheduler.policy", err, "%s", err->msg);
        name = yt_get(n, "name");
        if (!name)
            return 0;
    }
    if (name->kind != YT_SCALAR)
        return scn_read_fail(s, name, "scheduler", err, "expected a scheduler name");
    if (!(js->sched = sched_find(name->text)))
        return unknown_sched(s, name, n->kind == YT_MAP ? "scheduler.name" : "scheduler", err);
    return 0;
}

/* ---- jobs from YAML ---- */

/* min_devices <= devices <= max_devices <= the world's devices (each
 * stated one; an unstated one is jobs_range's default). */
static int read_range(const scn_scenario *s, const yt_node *m, const char *path, const job_spec *j,
                      dp_err *err)
{
    const yt_node *lo = yt_get(m, "min_devices"), *hi = yt_get(m, "max_devices");
    char lp[64], hp[64];
    snprintf(lp, sizeof lp, "%s.min_devices", path);
    snprintf(hp, sizeof hp, "%s.max_devices", path);
    if (hi && (size_t)j->max_dev > s->n_devices)
        return scn_read_fail(s, hi, hp, err, "%d, but the world has %zu devices", j->max_dev, s->n_devices);
    if (lo && hi && j->min_dev > j->max_dev)
        return scn_read_fail(s, lo, lp, err, "%d is above max_devices (%d)", j->min_dev, j->max_dev);
    if (lo && j->want && j->min_dev > j->want)
        return scn_read_fail(s, lo, lp, err, "%d is above devices (%d)", j->min_dev, j->want);
    if (hi && j->want && j->max_dev < j->want)
        return scn_read_fail(s, hi, hp, err, "%d is below devices (%d)", j->max_dev, j->want);
    if ((lo || hi) && yt_get(m, "groups"))
        return scn_read_fail(s, lo ? lo : hi, lo ? lp : hp, err,
                             "a job pinned to groups (static) has a fixed count");
    return 0;
}

/* `efficiency: { reference_batch: M0, noise_scale: B | [B per epoch] |
 * noise_trace: FILE }`: what an elastic scheduler (pollux) reads of the
 * job's statistical efficiency (sim/learn/efficiency.h). */
static int read_efficiency(const scn_scenario *s, const yt_node *m, const char *job, job_spec *j, dp_err *err)
{
    static const char *const keys[] = {"reference_batch", "noise_scale", "noise_trace", NULL};
    char path[80], g[80];
    double M0;
    if (!m)
        return 0;
    snprintf(path, sizeof path, "%s.efficiency", job);
    if (m->kind != YT_MAP)
        return scn_read_fail(s, m, path, err,
                             "expected a mapping (reference_batch, noise_scale or noise_trace) (got %s)",
                             scn_read_got(m, g, sizeof g));
    if (scn_read_keys(s, m, path, keys, err) < 0)
        return DP_EINPUT;
    int r = scn_read_quantity(s, m, path, "reference_batch", SCN_UNIT_NUMBER, 0, 0, 1e12, &M0, err);
    if (r < 0)
        return DP_EINPUT;
    if (r == 0)
        return scn_read_fail(s, m, path, err,
                             "reference_batch is required (M0, the batch the noise scale is measured at)");
    const yt_node *ns = yt_get(m, "noise_scale"), *nt = yt_get(m, "noise_trace");
    if (!ns == !nt)
        return scn_read_fail(
            s, nt ? nt : m, path, err,
            "give exactly one of noise_scale (a number or one per epoch) and noise_trace (a Pollux CSV)");
    if (!(j->eff = eff_params_new(M0, 0)))
        return dp_err_set(err, DP_ENOMEM, "out of memory");
    if (nt) {
        char file[4096];
        const char *slash = s->path ? strrchr(s->path, '/') : NULL;
        dp_err e = {0};
        if (nt->kind != YT_SCALAR)
            return scn_read_fail(s, nt, path, err, "noise_trace: expected a file name (got %s)",
                                 scn_read_got(nt, g, sizeof g));
        if (nt->text[0] != '/' && slash && s->path[0] != '<')
            snprintf(file, sizeof file, "%.*s/%s", (int)(slash - s->path), s->path, nt->text);
        else
            snprintf(file, sizeof file, "%s", nt->text);
        if (eff_params_load_pollux(j->eff, file, 0, &e) < 0)
            return scn_read_fail(s, nt, path, err, "noise_trace: %s", e.msg);
        return 0;
    }
    size_t n = ns->kind == YT_SEQ ? ns->n : 1;
    double B[256];
    if (ns->kind == YT_MAP || n == 0 || n > 256)
        return scn_read_fail(s, ns, path, err,
                             "noise_scale: expected a number >= 0 or a list of 1 to 256 (got %s)",
                             scn_read_got(ns, g, sizeof g));
    for (size_t k = 0; k < n; k++) {
        const yt_node *x = ns->kind == YT_SEQ ? ns->items[k] : ns;
        char *end = NULL;
        B[k] = x->kind == YT_SCALAR ? strtod(x->text, &end) : NAN;
        if (!end || end == x->text || *end || !isfinite(B[k]) || B[k] < 0)
            return scn_read_fail(s, x, path, err, "noise_scale: expected a number >= 0 (got %s)",
                                 scn_read_got(x, g, sizeof g));
    }
    if (n == 1 && ns->kind != YT_SEQ)
        eff_params_set_noise(j->eff, B[0]);
    else if (eff_params_set_noise_epochs(j->eff, B, n))
        return dp_err_set(err, DP_ENOMEM, "out of memory");
    return 0;
}

void jobs_range(const jobs_spec *js, size_t i, const sched_def *sd, int *lo, int *hi)
{
    const job_spec *j = &js->jobs[i];
    if (!sd->allocate) {
        *lo = *hi = j->want;
        return;
    }
    int world = (int)js->world->n_devices, four = j->want > world / 4 ? world : 4 * j->want;
    *lo = j->min_dev ? j->min_dev : 1;
    *hi = j->max_dev ? j->max_dev : four < *lo ? *lo : four;
}

/* A list of values (learning.targets: [0.9, 0.95]) as one override's
 * flow text. */
static int flat_list(const scn_scenario *s, draft *d, const yt_node *v, const char *key, const char *path,
                     dp_err *err)
{
    char text[1024];
    size_t o = 0;
    text[o++] = '[';
    for (size_t k = 0; k < v->n; k++) {
        const yt_node *x = v->items[k];
        if (x->kind != YT_SCALAR)
            return scn_read_fail(s, x, path, err, "%s: expected a list of values", key);
        int w = snprintf(text + o, sizeof text - o, "%s%s", k ? ", " : "", x->text);
        if (w < 0 || (size_t)w >= sizeof text - o - 1)
            return scn_read_fail(s, v, path, err, "%s: list too long for a job's setting", key);
        o += (size_t)w;
    }
    text[o++] = ']';
    text[o] = '\0';
    return draft_add(d, key, text) ? dp_err_set(err, DP_ENOMEM, "out of memory") : 0;
}

static int flatten_set(const scn_scenario *s, draft *d, const yt_node *m, const char *prefix,
                       const char *path, dp_err *err)
{
    for (size_t i = 0; i < m->n; i++) {
        char key[256];
        snprintf(key, sizeof key, "%s%s%s", prefix, *prefix ? "." : "", m->keys[i]->text);
        const yt_node *v = m->items[i];
        int rc;
        if (v->kind == YT_MAP)
            rc = flatten_set(s, d, v, key, path, err);
        else if (v->kind == YT_SCALAR)
            rc = draft_add(d, key, v->text) ? dp_err_set(err, DP_ENOMEM, "out of memory") : 0;
        else
            rc = flat_list(s, d, v, key, path, err);
        if (rc)
            return rc;
    }
    return 0;
}

static int group_index(const scn_scenario *s, const char *name)
{
    for (size_t g = 0; g < s->n_groups; g++)
        if (strcmp(s->groups[g].name, name) == 0)
            return (int)g;
    return -1;
}

/* The job's mapping `key` (if given) as overrides under prefix. */
static int read_settings(const scn_scenario *s, const yt_node *m, const char *path, const char *key,
                         const char *prefix, const char *expected, draft *d, dp_err *err)
{
    const yt_node *v = yt_get(m, key);
    if (!v)
        return 0;
    char sp[64], g[80];
    snprintf(sp, sizeof sp, "%s.%s", path, key);
    if (v->kind != YT_MAP)
        return scn_read_fail(s, v, sp, err, "expected %s (got %s)", expected, scn_read_got(v, g, sizeof g));
    return flatten_set(s, d, v, prefix, sp, err) ? DP_EINPUT : 0;
}

static int read_yaml_job(const scn_scenario *s, const yt_node *m, size_t i, job_spec *j, draft *d,
                         const policy_def *def_policy, dp_err *err)
{
    static const char *const keys[] = {"name",       "arrival", "policy",      "devices",
                                       "groups",     "weight",  "min_devices", "max_devices",
                                       "efficiency", "set",     "learning",    NULL};
    char path[48], g[80];
    snprintf(path, sizeof path, "jobs[%zu]", i);
    if (m->kind != YT_MAP)
        return scn_read_fail(s, m, path, err,
                             "expected a mapping (name, arrival, policy, devices, ...) (got %s)",
                             scn_read_got(m, g, sizeof g));
    if (scn_read_keys(s, m, path, keys, err) < 0)
        return DP_EINPUT;
    j->line = m->line;
    j->column = m->column;
    const yt_node *nm = yt_get(m, "name");
    snprintf(j->name, sizeof j->name, "%s", nm && nm->kind == YT_SCALAR ? nm->text : "");
    if (!j->name[0])
        snprintf(j->name, sizeof j->name, "job%zu", i);
    int64_t want = 0, lo = 0, hi = 0;
    if (scn_read_quantity(s, m, path, "arrival", SCN_UNIT_TIME, 0, 1, INFINITY, &j->arrival_s, err) < 0 ||
        scn_read_int(s, m, path, "devices", 0, 1, 1e9, &want, err) < 0 ||
        scn_read_int(s, m, path, "min_devices", 0, 1, 1e9, &lo, err) < 0 ||
        scn_read_int(s, m, path, "max_devices", 0, 1, 1e9, &hi, err) < 0 ||
        scn_read_quantity(s, m, path, "weight", SCN_UNIT_NUMBER, 1, 0, INFINITY, &j->weight, err) < 0)
        return DP_EINPUT;
    j->want = (int)want;
    j->min_dev = (int)lo;
    j->max_dev = (int)hi;
    j->policy = def_policy;
    if (read_range(s, m, path, j, err) || read_efficiency(s, yt_get(m, "efficiency"), path, j, err))
        return DP_EINPUT;
    const yt_node *dn = yt_get(m, "devices");
    j->dline = dn ? dn->line : m->line;
    j->dcol = dn ? dn->column : m->column;
    const yt_node *p = yt_get(m, "policy");
    if (p) {
        dp_err e = {0};
        if (p->kind != YT_SCALAR || policy_lookup(p->text, "", &j->policy, &e))
            return scn_read_fail(s, p, path, err, "policy: %s",
                                 p->kind != YT_SCALAR ? "expected a name" : e.msg + 2);
    }
    const yt_node *gr = yt_get(m, "groups");
    if (gr) {
        if (gr->kind != YT_SEQ || gr->n == 0 || gr->n > 64)
            return scn_read_fail(s, gr, path, err,
                                 "groups: expected a list of 1 to 64 device group names (got %s)",
                                 scn_read_got(gr, g, sizeof g));
        for (size_t k = 0; k < gr->n; k++) {
            const yt_node *x = gr->items[k];
            int gi = x->kind == YT_SCALAR ? group_index(s, x->text) : -1;
            if (gi < 0)
                return scn_read_fail(s, x, path, err, "groups: no device group of that name (got %s)",
                                     scn_read_got(x, g, sizeof g));
            d->pinned_groups[d->n_groups] = gi;
            d->gline[d->n_groups] = x->line;
            d->gcol[d->n_groups++] = x->column;
        }
    }
    /* its settings: `set:` (scenario keys), its own `learning:` (the
     * world's otherwise) */
    if (read_settings(s, m, path, "set", "", "a mapping of scenario keys", d, err) ||
        read_settings(s, m, path, "learning", "learning", "a mapping (data, model, targets, ...)", d, err))
        return DP_EINPUT;
    if (!gr && j->want == 0)
        return scn_read_fail(s, m, path, err, "devices: required (how many devices the job asks for)");
    return 0;
}

/* ---- jobs from a trace (CSV) ---- */

static int app_index(const char *a)
{
    for (size_t i = 0; i < jobs_app_count(); i++)
        if (strcmp(jobs_app_at(i)->app, a) == 0)
            return (int)i;
    return -1;
}

/* Split line into at most cap cells (trimmed, in place); col[k] is each
 * cell's 1-based column. */
static size_t split(char *line, char **cell, int *col, size_t cap)
{
    size_t n = 0;
    char *p = line;
    for (;;) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (n < cap) {
            cell[n] = p;
            col[n] = (int)(p - line) + 1;
        }
        char *c = strchr(p, ',');
        char *end = c ? c : p + strlen(p);
        char *t = end;
        while (t > p && (t[-1] == ' ' || t[-1] == '\t' || t[-1] == '\r' || t[-1] == '\n'))
            t--;
        *t = '\0';
        n++;
        if (!c)
            break;
        p = c + 1;
    }
    return n;
}

typedef struct tracer {
    const char *file;
    int line;
    dp_err *err;
} tracer;

static int tfail(const tracer *t, int col, const char *fmt, const char *got)
{
    return dp_err_set(t->err, DP_EINPUT, "%s:%d:%d: jobs trace: %s (got %s)", t->file, t->line, col, fmt,
                      got);
}

static int read_trace(jobs_spec *js, const yt_node *n, const policy_def *def_policy, draft **drafts,
                      dp_err *err)
{
    const scn_scenario *s = js->world;
    char path[4096];
    const char *slash = s->path ? strrchr(s->path, '/') : NULL;
    if (n->text[0] != '/' && slash && s->path[0] != '<')
        snprintf(path, sizeof path, "%.*s/%s", (int)(slash - s->path), s->path, n->text);
    else
        snprintf(path, sizeof path, "%s", n->text);
    FILE *f = fopen(path, "r");
    if (!f)
        return scn_read_fail(s, n, "jobs", err, "cannot read the job trace %s", path);
    if (!(js->trace = dp_strdup(path))) {
        fclose(f);
        return dp_err_set(err, DP_ENOMEM, "out of memory");
    }
    char buf[1024];
    char *cell[16];
    int col[16];
    tracer t = {path, 0, err};
    int pollux = -1, rc = 0;
    double last = -INFINITY;
    while (!rc && fgets(buf, sizeof buf, f)) {
        t.line++;
        if (buf[0] == '#' || buf[strspn(buf, " \t\r\n")] == '\0')
            continue;
        size_t nc = split(buf, cell, col, 16);
        if (pollux < 0) { /* the header names the shape */
            if (nc == 5 && !strcmp(cell[0], "name") && !strcmp(cell[1], "time") &&
                !strcmp(cell[2], "application") && !strcmp(cell[3], "num_replicas") &&
                !strcmp(cell[4], "batch_size"))
                pollux = 1;
            else if ((nc == 6 || nc == 7) && !strcmp(cell[0], "name") && !strcmp(cell[1], "arrival") &&
                     !strcmp(cell[2], "application") && !strcmp(cell[3], "epochs") &&
                     !strcmp(cell[4], "devices") && !strcmp(cell[5], "batch") &&
                     (nc == 6 || !strcmp(cell[6], "policy")))
                pollux = 0;
            else
                rc = tfail(&t, 1,
                           "expected the header name,time,application,num_replicas,batch_size (Pollux) or "
                           "name,arrival,application,epochs,devices,batch[,policy]",
                           cell[0]);
            continue;
        }
        size_t want_cells = pollux ? 5 : (size_t)(nc == 7 ? 7 : 6);
        if (nc != want_cells) {
            rc = tfail(&t, 1, "wrong number of cells", buf);
            break;
        }
        job_spec *nj = dp_realloc(js->jobs, (js->n + 1) * sizeof *nj);
        draft *nd = dp_realloc(*drafts, (js->n + 1) * sizeof *nd);
        if (nj)
            js->jobs = nj;
        if (nd)
            *drafts = nd;
        if (!nj || !nd) {
            rc = dp_err_set(err, DP_ENOMEM, "out of memory");
            break;
        }
        job_spec *j = &js->jobs[js->n];
        draft *d = &(*drafts)[js->n];
        memset(j, 0, sizeof *j);
        memset(d, 0, sizeof *d);
        js->n++;
        snprintf(j->name, sizeof j->name, "%s", cell[0]);
        j->line = t.line;
        j->column = 1;
        j->weight = 1;
        j->policy = def_policy;
        char *end;
        double v = strtod(cell[1], &end);
        if (end == cell[1])
            v = NAN;
        else if (*end) { /* a unit: "30s", "2h" */
            double q;
            dp_err e = {0};
            if (scn_parse_quantity(cell[1], SCN_UNIT_TIME, &q, &e) == 0)
                v = q;
            else
                v = NAN;
        }
        if (!isfinite(v) || v < 0) {
            rc = tfail(&t, col[1], "arrival: expected a time >= 0 (seconds, or with a unit)", cell[1]);
            break;
        }
        if (v < last) {
            rc = tfail(&t, col[1], "arrival before the previous job's: a trace lists jobs in arrival order",
                       cell[1]);
            break;
        }
        last = j->arrival_s = v;
        int a = app_index(cell[2]);
        if (a < 0) {
            char have[200] = "";
            for (size_t k = 0, o = 0; k < jobs_app_count() && o < sizeof have; k++)
                o += (size_t)snprintf(have + o, sizeof have - o, "%s%s", k ? ", " : "", jobs_app_at(k)->app);
            char msg[260];
            snprintf(msg, sizeof msg, "unknown application (have: %s)", have);
            rc = tfail(&t, col[2], msg, cell[2]);
            break;
        }
        long reps = strtol(cell[pollux ? 3 : 4], &end, 10);
        if (*end || reps < 1 || reps > 1000000) {
            rc =
                tfail(&t, col[pollux ? 3 : 4], "devices: expected a whole number >= 1", cell[pollux ? 3 : 4]);
            break;
        }
        long batch = strtol(cell[pollux ? 4 : 5], &end, 10);
        if (*end || batch < 1 || batch > 100000000) {
            rc = tfail(&t, col[pollux ? 4 : 5], "batch: expected a whole number >= 1", cell[pollux ? 4 : 5]);
            break;
        }
        long epochs = jobs_app_at((size_t)a)->epochs;
        if (!pollux) {
            epochs = strtol(cell[3], &end, 10);
            if (*end || epochs < 1 || epochs > 1000000) {
                rc = tfail(&t, col[3], "epochs: expected a whole number >= 1", cell[3]);
                break;
            }
            if (nc == 7) {
                dp_err e = {0};
                if (policy_lookup(cell[6], "", &j->policy, &e)) {
                    rc = tfail(&t, col[6], e.msg + 2, cell[6]);
                    break;
                }
            }
        }
        j->want = (int)reps;
        /* the application's measured statistical efficiency (jobs_apps.c) */
        size_t tl = 0;
        const char *tt = jobs_app_trace((size_t)a, &tl);
        if (!(j->eff = eff_params_new(jobs_app_at((size_t)a)->init_batch, 0))) {
            rc = dp_err_set(err, DP_ENOMEM, "out of memory");
            break;
        }
        if ((rc = eff_params_parse_pollux(j->eff, jobs_app_at((size_t)a)->app, tt, tl, 0, err)))
            break;
        j->dline = t.line;
        j->dcol = col[pollux ? 3 : 4];
        char num[32];
        for (const char *const *o = jobs_app_overrides((size_t)a); *o && !rc; o++) {
            const char *eq = strchr(*o, '=');
            char key[64];
            snprintf(key, sizeof key, "%.*s", (int)(eq - *o), *o);
            rc = draft_add(d, key, eq + 1);
        }
        snprintf(num, sizeof num, "%ld", epochs);
        rc = rc ? rc : draft_add(d, "training.epochs", num);
        /* Pollux's batch_size is the job's whole batch; per device its share */
        snprintf(num, sizeof num, "%ld", pollux ? (batch + reps - 1) / reps : batch);
        for (size_t g = 0; g < s->n_groups && !rc; g++) {
            char key[160];
            snprintf(key, sizeof key, "devices.%s.batch", s->groups[g].name);
            rc = draft_add(d, key, num);
        }
        if (rc)
            rc = dp_err_set(err, DP_ENOMEM, "out of memory");
    }
    fclose(f);
    if (!rc && pollux < 0)
        rc = tfail(&t, 1, "empty trace", "nothing");
    else if (!rc && js->n == 0) /* a header and no row: nothing to run */
        rc = tfail(&t, 1, "no jobs after the header", "nothing");
    return rc;
}

/* ---- each job's scenario ---- */

static int load_job_scenario(jobs_spec *js, size_t i, draft *d, dp_err *err)
{
    const scn_scenario *s = js->world;
    job_spec *j = &js->jobs[i];
    /* the settings as one key: jobs with the same settings share a scenario */
    size_t klen = 1;
    for (size_t k = 0; k < d->n_set; k++)
        klen += strlen(d->set[k]) + 1;
    char *key = dp_malloc(klen);
    if (!key)
        return dp_err_set(err, DP_ENOMEM, "out of memory");
    key[0] = '\0';
    for (size_t k = 0, o = 0; k < d->n_set; k++)
        o += (size_t)snprintf(key + o, klen - o, "%s\n", d->set[k]);
    for (size_t k = 0; k < js->n_scn; k++)
        if (strcmp(js->keys[k], key) == 0) {
            j->scn = js->scns[k];
            dp_free(key);
            return 0;
        }
    /* the world's overrides (--set) first, then the job's own */
    size_t nw = js->n_world_ov;
    scn_override *ov = dp_calloc(nw + d->n_set + 1, sizeof *ov);
    if (!ov) {
        dp_free(key);
        return dp_err_set(err, DP_ENOMEM, "out of memory");
    }
    for (size_t k = 0; k < nw; k++)
        ov[k] = js->world_ov[k];
    for (size_t k = 0; k < d->n_set; k++) {
        char *eq = strchr(d->set[k], '=');
        *eq = '\0';
        ov[nw + k] = (scn_override){d->set[k], eq + 1};
    }
    char dir[4096];
    const char *slash = s->path ? strrchr(s->path, '/') : NULL;
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - s->path) : 1, slash ? s->path : ".");
    scn_scenario *js_s =
        scn_load_string_files(s->path, s->text, strlen(s->text), s->path[0] == '<' ? NULL : dir, s->files,
                              s->n_files, ov, nw + d->n_set, err);
    for (size_t k = 0; k < d->n_set; k++)
        d->set[k][strlen(d->set[k])] = '='; /* restore */
    dp_free(ov);
    if (js_s && policy_check_scenario(js_s, err)) {
        scn_free(js_s);
        js_s = NULL;
    }
    if (!js_s) {
        dp_free(key);
        return dp_err_prefix(err, "%s:%d:%d: jobs[%zu] (%s)", s->path, j->line, j->column, i, j->name);
    }
    const char *no = js_s->n_devices != s->n_devices ? "change the world's devices"
                     : sets_availability(d)          ? "change the world's device failures (availability)"
                     : learning_efficiency(js_s)     ? "use learning.efficiency yet"
                                                     : not_for_jobs(js_s);
    if (no) {
        scn_free(js_s);
        dp_free(key);
        return dp_err_set(err, DP_EINPUT, "%s:%d:%d: jobs[%zu] (%s): a job may not %s",
                          js->trace ? js->trace : s->path, j->line, j->column, i, j->name, no);
    }
    scn_scenario **ns = dp_realloc(js->scns, (js->n_scn + 1) * sizeof *ns);
    char **nk = ns ? dp_realloc(js->keys, (js->n_scn + 1) * sizeof *nk) : NULL;
    if (ns)
        js->scns = ns;
    if (nk)
        js->keys = nk;
    if (!ns || !nk) {
        scn_free(js_s);
        dp_free(key);
        return dp_err_set(err, DP_ENOMEM, "out of memory");
    }
    js->scns[js->n_scn] = js_s;
    js->keys[js->n_scn++] = key;
    j->scn = js_s;
    return 0;
}

/* ---- the whole spec ---- */

/* Devices of the groups a static job names, ascending; claims checked. */
static int pin(jobs_spec *js, size_t i, const draft *d, int *owner, dp_err *err)
{
    const scn_scenario *s = js->world;
    job_spec *j = &js->jobs[i];
    size_t n = 0;
    for (size_t k = 0; k < s->n_devices; k++)
        for (size_t q = 0; q < d->n_groups; q++)
            n += s->devices[k].group == d->pinned_groups[q];
    if (!(j->pinned = dp_calloc(n + 1, sizeof *j->pinned)))
        return dp_err_set(err, DP_ENOMEM, "out of memory");
    n = 0;
    for (size_t k = 0; k < s->n_devices; k++)
        for (size_t q = 0; q < d->n_groups; q++)
            if (s->devices[k].group == d->pinned_groups[q]) {
                if (owner[k] >= 0)
                    return dp_err_set(
                        err, DP_EINPUT,
                        "%s:%d:%d: jobs[%zu].groups: device %s is claimed by job %s too; a static "
                        "partition's claims may not overlap",
                        s->path, d->gline[q], d->gcol[q], i, s->devices[k].name, js->jobs[owner[k]].name);
                owner[k] = (int)i;
                j->pinned[n++] = k;
            }
    if (j->want && j->want != (int)n)
        return dp_err_set(err, DP_EINPUT, "%s:%d:%d: jobs[%zu]: devices: %d, but its groups have %zu devices",
                          s->path, j->line, j->column, i, j->want, n);
    j->want = (int)n;
    return 0;
}

jobs_spec *jobs_load(const scn_scenario *s, dp_err *err)
{
    return jobs_load_ov(s, NULL, 0, err);
}

jobs_spec *jobs_load_ov(const scn_scenario *s, const scn_override *ov, size_t n_ov, dp_err *err)
{
    jobs_spec *js = dp_calloc(1, sizeof *js);
    if (!js) {
        dp_err_set(err, DP_ENOMEM, "out of memory");
        return NULL;
    }
    js->world = s;
    js->world_ov = ov;
    js->n_world_ov = n_ov;
    draft *drafts = NULL;
    int *owner = NULL;
    const policy_def *def_policy = NULL;
    const yt_node *n = scn_jobs(s);
    js->arrival_scale = 1;
    int rc = read_scheduler(js, &def_policy, err);
    if (!rc && !n)
        rc = dp_err_set(err, DP_EINPUT, "%s: no `jobs:`", s->path);
    if (!rc && !def_policy)
        rc = dp_err_set(err, DP_EINPUT, "%s: scheduler.policy: no policy ddp registered", s->path);
    const char *unmodelled = rc ? NULL : not_for_jobs(s);
    if (unmodelled)
        rc = dp_err_set(err, DP_EINPUT, "%s: jobs: a world of many jobs cannot %s yet", s->path, unmodelled);
    if (!rc && n->kind == YT_SEQ) {
        if (n->n == 0)
            rc = scn_read_fail(s, n, "jobs", err, "expected at least one job");
        js->jobs = dp_calloc(n->n + 1, sizeof *js->jobs);
        drafts = dp_calloc(n->n + 1, sizeof *drafts);
        if (!rc && (!js->jobs || !drafts))
            rc = dp_err_set(err, DP_ENOMEM, "out of memory");
        for (size_t i = 0; !rc && i < n->n; i++) {
            js->n = i + 1;
            rc = read_yaml_job(s, n->items[i], i, &js->jobs[i], &drafts[i], def_policy, err);
        }
    } else if (!rc) {
        rc = read_trace(js, n, def_policy, &drafts, err);
    }
    if (!rc && !(owner = dp_malloc((s->n_devices + 1) * sizeof *owner)))
        rc = dp_err_set(err, DP_ENOMEM, "out of memory");
    for (size_t k = 0; !rc && k < s->n_devices; k++)
        owner[k] = -1;
    for (size_t i = 0; !rc && i < js->n; i++) {
        job_spec *j = &js->jobs[i];
        const draft *d = &drafts[i];
        if (d->n_groups && !js->sched->pinned)
            rc = dp_err_set(err, DP_EINPUT,
                            "%s:%d:%d: jobs[%zu].groups: only the static scheduler pins jobs to groups "
                            "(scheduler %s gives devices by count: use devices: N)",
                            s->path, d->gline[0], d->gcol[0], i, js->sched->name);
        else if (!d->n_groups && js->sched->pinned)
            rc = dp_err_set(err, DP_EINPUT,
                            "%s:%d:%d: jobs[%zu]: groups: required by scheduler static (the device groups "
                            "of the job's partition)",
                            s->path, j->line, j->column, i);
        else if (d->n_groups)
            rc = pin(js, i, d, owner, err);
        else if ((size_t)j->want > s->n_devices)
            rc = dp_err_set(err, DP_EINPUT, "%s:%d:%d: jobs[%zu] (%s): devices: %d, but the world has %zu",
                            js->trace ? js->trace : s->path, j->dline, j->dcol, i, j->name, j->want,
                            s->n_devices);
    }
    for (size_t i = 0; !rc && i < js->n; i++) {
        js->jobs[i].arrival_s *= js->arrival_scale; /* the arrival rate divided by it */
        rc = load_job_scenario(js, i, &drafts[i], err);
    }
    for (size_t i = 0; drafts && i < js->n; i++)
        draft_free(&drafts[i]);
    dp_free(drafts);
    dp_free(owner);
    js->world_ov = NULL; /* borrowed for the load only */
    js->n_world_ov = 0;
    if (rc) {
        jobs_free(js);
        return NULL;
    }
    return js;
}
