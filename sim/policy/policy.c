/* policy.c: the registry of policies, their options, and policy_run.
 *
 * The registry is the built-in table (registry.c) followed by policies
 * registered at run time (policy_register), at most POLICY_MAX in all.
 * Options are read generically from each policy's option table
 * (runtime.h's popt): defaults, then `policies.NAME` of the scenario, then
 * the policy's `finish` hook; the same table gives the stored JSON, the
 * summary line of `dpsim check` and the help lines.
 */
#include "policy.h"
#include "learner.h"
#include "runtime_impl.h"
#include "yamltree.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <pthread.h>
#include <string.h>
#include <strings.h>

extern const policy_def *const policy_builtin[];
extern const size_t policy_n_builtin;

static const policy_def *registered[POLICY_MAX];
static size_t n_registered;

const char *const popt_data_names[] = {"replicate", "shard", NULL};
const char *const popt_collective_names[] = {"flows", "analytic", NULL};
const char *const popt_progress_names[] = {"barrier", "pipelined", NULL};

/* ---- registry ------------------------------------------------------------------ */

size_t policy_count(void)
{
    return policy_n_builtin + n_registered;
}

const policy_def *policy_at(size_t i)
{
    if (i < policy_n_builtin)
        return policy_builtin[i];
    i -= policy_n_builtin;
    return i < n_registered ? registered[i] : NULL;
}

int policy_index(const policy_def *p)
{
    for (size_t i = 0; i < policy_count(); i++)
        if (policy_at(i) == p)
            return (int)i;
    return -1;
}

const policy_def *policy_find(const char *name)
{
    for (size_t i = 0; name && i < policy_count(); i++)
        if (strcmp(policy_at(i)->name, name) == 0)
            return policy_at(i);
    return NULL;
}

void policy_names(char *buf, size_t len, const char *sep)
{
    size_t used = 0;
    if (len)
        buf[0] = '\0';
    for (size_t i = 0; i < policy_count() && used < len; i++) {
        int w = snprintf(buf + used, len - used, "%s%s", i ? sep : "", policy_at(i)->name);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

int policy_lookup(const char *name, const char *what, const policy_def **out, dp_err *err)
{
    *out = policy_find(name);
    if (*out)
        return 0;
    const char *cands[POLICY_MAX];
    size_t n = policy_count();
    for (size_t i = 0; i < n; i++)
        cands[i] = policy_at(i)->name;
    const char *near = name ? yt_nearest(name, cands, n) : NULL;
    char have[400];
    policy_names(have, sizeof have, ", ");
    if (near)
        return dp_err_set(err, DP_EINPUT, "%s: unknown policy '%s', did you mean '%s'? (have: %s)", what,
                          name ? name : "", near, have);
    return dp_err_set(err, DP_EINPUT, "%s: unknown policy '%s' (have: %s)", what, name ? name : "", have);
}

static int name_ok(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > 31)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') || name[i] == '_'))
            return 0;
    return 1;
}

int policy_register(const policy_def *p, dp_err *err)
{
    if (!p || !name_ok(p->name))
        return dp_err_set(err, DP_EINPUT,
                          "policy_register: a policy needs a name of 1-31 of [a-z0-9_] (got '%s')",
                          p && p->name ? p->name : "");
    if (!p->label || !p->summary || !p->start || !p->free || p->opts_size > POLICY_OPTS_MAX)
        return dp_err_set(err, DP_EINPUT,
                          "policy_register: policy '%s' needs a label, summary, start and free, and "
                          "options of at most %d bytes",
                          p->name, POLICY_OPTS_MAX);
    const policy_perf *pf = p->perf;
    if (pf && (!!pf->plan_new != !!pf->plan_run || !!pf->plan_new != !!pf->plan_free))
        return dp_err_set(err, DP_EINPUT,
                          "policy_register: policy '%s' needs plan_new, plan_run and plan_free together",
                          p->name);
    if (policy_find(p->name))
        return dp_err_set(err, DP_EINPUT, "policy_register: a policy named '%s' exists already", p->name);
    if (policy_count() >= POLICY_MAX)
        return dp_err_set(err, DP_EINPUT, "policy_register: at most %d policies", POLICY_MAX);
    registered[n_registered++] = p;
    return 0;
}

const char *policy_name(const policy_def *p)
{
    return p ? p->name : "?";
}
const char *policy_label(const policy_def *p)
{
    return p ? p->label : "?";
}
const char *policy_label_of(const char *name)
{
    const policy_def *p = policy_find(name);
    return p ? p->label : name;
}

/* Colours no built-in policy uses, for plug-ins registered without one and
 * for names the registry does not know. */
static const char *const spare_colors[] = {"#44aa99", "#ddcc77", "#aa4499", "#117733",
                                           "#88ccee", "#661100", "#6699cc", "#888888"};
#define N_SPARE (sizeof spare_colors / sizeof *spare_colors)

/* Whether colour c is some registered policy's own (case-insensitive). */
static int color_taken(const char *c)
{
    for (size_t i = 0; i < policy_count(); i++)
        if (policy_at(i)->color && strcasecmp(policy_at(i)->color, c) == 0)
            return 1;
    return 0;
}

/* The j-th spare colour no policy has taken (cycling when all are). */
static const char *spare_color(size_t j)
{
    size_t free_n = 0;
    const char *free_c[N_SPARE];
    for (size_t i = 0; i < N_SPARE; i++)
        if (!color_taken(spare_colors[i]))
            free_c[free_n++] = spare_colors[i];
    return free_n ? free_c[j % free_n] : spare_colors[j % N_SPARE];
}

/* Registered policies keep their colour in every plot, so a reader learns
 * it once: their own, or (a plug-in without one) the spare colour of its
 * place among the colourless; unknown names take spare colours by k. */
const char *policy_color_of(const char *name, size_t k)
{
    const policy_def *p = policy_find(name);
    if (p && p->color)
        return p->color;
    if (p) {
        size_t j = 0;
        for (size_t i = 0; i < policy_count() && policy_at(i) != p; i++)
            j += policy_at(i)->color == NULL;
        return spare_color(j);
    }
    return spare_color(k);
}

void policy_stamp(res_run *r)
{
    if (!r || !policy_find(r->policy))
        return;
    snprintf(r->policy_label, sizeof r->policy_label, "%s", policy_label_of(r->policy));
    snprintf(r->policy_color, sizeof r->policy_color, "%s", policy_color_of(r->policy, 0));
}

/* Point types and dash patterns that gnuplot's png, svg and pdf terminals
 * all draw distinctly: a policy's pair is fixed by its registry place, so
 * lines stay apart in grey print and where colours are near. */
void policy_style_of(const char *name, size_t k, int *point, int *dash)
{
    static const int pts[] = {7, 5, 9, 13, 11, 4, 6, 8, 10, 12, 14, 1, 2, 3};
    int i = policy_index(policy_find(name));
    size_t r = i < 0 ? policy_count() + k : (size_t)i;
    *point = pts[r % (sizeof pts / sizeof *pts)];
    *dash = 1 + (int)(r % 5);
}

size_t policy_rank_of(const char *name)
{
    int i = policy_index(policy_find(name));
    return i < 0 ? policy_count() : (size_t)i;
}

/* ---- options ------------------------------------------------------------------- */

int popt_fail(const scn_scenario *s, const char *policy, const char *key, dp_err *err, const char *fmt, ...)
{
    char msg[600], path[96];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(path, sizeof path, "policies.%s.%s", policy, key);
    const yt_node *pol = yt_get(scn_policies(s), policy), *k = yt_get(pol, key);
    return scn_read_fail(s, k ? k : pol, path, err, "%s", msg);
}

int prt_options_of(prt *rt, const char *policy, void *opts, size_t size)
{
    const policy_def *p = policy_find(policy);
    if (!p)
        return dp_err_set(rt->err, DP_EINPUT, "no policy '%s' in this build", policy);
    return policy_options(p, rt->s, opts, size, rt->err);
}

res_run *prt_simulate(const policy_def *p, const scn_scenario *s, uint64_t seed, dp_err *err)
{
    return policy_run(p, s, seed, err);
}

int popt_failures_only(const popt *o)
{
    return o->help && strncmp(o->help, POPT_FAILURES, strlen(POPT_FAILURES)) == 0;
}

static double *dbl_at(void *opts, const popt *o);
static int *int_at(void *opts, const popt *o);

int popt_left_out(const popt *o, const void *opts, int fails)
{
    if (popt_failures_only(o) && !fails)
        return 1;
    if (!o->help || strncmp(o->help, POPT_OPTIONAL, strlen(POPT_OPTIONAL)) != 0)
        return 0;
    void *v = (void *)opts; /* read only */
    return o->type == POPT_QUANTITY ? *dbl_at(v, o) == o->def : *int_at(v, o) == (int)o->def;
}

static size_t n_opts(const policy_def *p)
{
    size_t n = 0;
    while (p->opts && p->opts[n].key)
        n++;
    return n;
}

static double *dbl_at(void *opts, const popt *o)
{
    return (double *)(void *)((char *)opts + o->offset);
}
static int *int_at(void *opts, const popt *o)
{
    return (int *)(void *)((char *)opts + o->offset);
}

static void opts_default(const policy_def *p, void *opts)
{
    memset(opts, 0, p->opts_size);
    for (const popt *o = p->opts; o && o->key; o++) {
        if (o->type == POPT_QUANTITY)
            *dbl_at(opts, o) = o->def;
        else
            *int_at(opts, o) = (int)o->def;
    }
}

/* Options from policies.NAME (node may be NULL: defaults). */
static int opts_read(const policy_def *p, const scn_scenario *s, const yt_node *node, void *opts, dp_err *err)
{
    opts_default(p, opts);
    if (!yt_is_null(node)) {
        char path[64];
        snprintf(path, sizeof path, "policies.%s", p->name);
        const char *keys[64];
        size_t n = n_opts(p);
        if (n >= 64)
            n = 63;
        for (size_t i = 0; i < n; i++)
            keys[i] = p->opts[i].key;
        keys[n] = NULL;
        int r = scn_read_keys(s, node, path, keys, err);
        for (const popt *o = p->opts; r >= 0 && o && o->key; o++) {
            int64_t v;
            switch (o->type) {
            case POPT_QUANTITY:
                r = scn_read_quantity(s, node, path, o->key, o->unit, o->def, o->lo < 0, o->hi,
                                      dbl_at(opts, o), err);
                break;
            case POPT_INT:
                r = scn_read_int(s, node, path, o->key, (int64_t)o->def, o->lo, o->hi, &v, err);
                *int_at(opts, o) = (int)v;
                break;
            case POPT_BOOL:
                r = scn_read_bool(s, node, path, o->key, (int)o->def, int_at(opts, o), err);
                break;
            case POPT_ENUM:
                r = scn_read_enum(s, node, path, o->key, o->names, (int)o->def, int_at(opts, o), err);
                break;
            }
        }
        if (r < 0)
            return r;
    }
    if (p->finish)
        p->finish(opts);
    return 0;
}

int policy_options(const policy_def *p, const scn_scenario *s, void *opts, size_t size, dp_err *err)
{
    if (!p || size < p->opts_size)
        return dp_err_set(err, DP_EINPUT, "policy options: buffer too small");
    return opts_read(p, s, yt_get(scn_policies(s), p->name), opts, err);
}

int policy_check_scenario(const scn_scenario *s, dp_err *err)
{
    /* `learning:` is the runtime's (every policy runs the same learner):
     * checked here, before any run, with its data set loaded */
    lrn_cfg *lc = NULL;
    int lr = lrn_cfg_read(s, &lc, err);
    lrn_cfg_free(lc);
    if (lr < 0)
        return lr;
    lc_cfg cc; /* `compression:`, the runtime's too */
    if ((lr = prt_compress_read(s, &cc, err)) < 0)
        return lr;
    const yt_node *m = scn_policies(s);
    if (!m)
        return 0;
    for (size_t i = 0; i < m->n; i++) {
        const yt_node *k = m->keys[i];
        const policy_def *p = policy_find(k->text);
        char path[300];
        snprintf(path, sizeof path, "policies.%s", k->text);
        if (!p) {
            dp_err e;
            policy_lookup(k->text, "x", &p, &e);
            const char *msg = strstr(e.msg, "unknown policy");
            return scn_read_fail(s, k, path, err, "%s", msg ? msg : e.msg);
        }
        for (size_t j = 0; j < i; j++)
            if (strcmp(m->keys[j]->text, k->text) == 0)
                return scn_read_fail(s, k, path, err, "duplicate key (got '%s' twice)", k->text);
        unsigned char opts[POLICY_OPTS_MAX];
        int r = opts_read(p, s, m->items[i], opts, err);
        if (r < 0)
            return r;
        if (p->check && (r = p->check(p, s, opts, err)) < 0)
            return r;
    }
    return 0;
}

double policy_option_num(const policy_def *p, const scn_scenario *s, const char *key)
{
    unsigned char opts[POLICY_OPTS_MAX];
    dp_err e;
    if (!p || policy_options(p, s, opts, sizeof opts, &e))
        return NAN;
    for (const popt *o = p->opts; o && o->key; o++)
        if (strcmp(o->key, key) == 0)
            return o->type == POPT_QUANTITY ? *dbl_at(opts, o) : (double)*int_at(opts, o);
    return NAN;
}

char *policy_options_json(const policy_def *p, const scn_scenario *s)
{
    unsigned char opts[POLICY_OPTS_MAX];
    dp_err e;
    if (policy_options(p, s, opts, sizeof opts, &e))
        return NULL;
    json_buf *j = json_new();
    json_obj_begin(j);
    int fails = scn_has_failures(s);
    for (const popt *o = p->opts; o && o->key; o++) {
        if (popt_left_out(o, opts, fails))
            continue;
        json_key(j, o->json ? o->json : o->key);
        switch (o->type) {
        case POPT_QUANTITY:
            json_num(j, *dbl_at(opts, o));
            break;
        case POPT_INT:
            json_int(j, *int_at(opts, o));
            break;
        case POPT_BOOL:
            json_bool(j, *int_at(opts, o));
            break;
        case POPT_ENUM:
            json_str(j, o->names[*int_at(opts, o)]);
            break;
        }
    }
    json_obj_end(j);
    char *out = json_ok(j) ? dp_strdup(json_text(j)) : NULL;
    json_free(j);
    return out;
}

static void print_value(const popt *o, void *opts, FILE *out)
{
    char q[64];
    switch (o->type) {
    case POPT_QUANTITY:
        scn_format_quantity(*dbl_at(opts, o), o->unit, q, sizeof q);
        fputs(q, out);
        break;
    case POPT_INT:
        fprintf(out, "%d", *int_at(opts, o));
        break;
    case POPT_BOOL:
        fputs(*int_at(opts, o) < 0 ? "default" : *int_at(opts, o) ? "on" : "off", out);
        break;
    case POPT_ENUM:
        fputs(o->names[*int_at(opts, o)], out);
        break;
    }
}

void policy_print_options(const policy_def *p, const scn_scenario *s, FILE *out)
{
    unsigned char opts[POLICY_OPTS_MAX];
    dp_err e;
    if (policy_options(p, s, opts, sizeof opts, &e)) {
        fprintf(out, "  %-10s (bad options: %s)\n", p->name, e.msg);
        return;
    }
    fprintf(out, "  %-10s", p->name);
    int fails = scn_has_failures(s);
    for (const popt *o = p->opts; o && o->key; o++) {
        if (popt_left_out(o, opts, fails))
            continue;
        fprintf(out, "%s%s ", o == p->opts ? " " : ", ", o->key);
        print_value(o, opts, out);
    }
    fputc('\n', out);
}

void policy_print_help(FILE *out)
{
    for (size_t i = 0; i < policy_count(); i++) {
        const policy_def *p = policy_at(i);
        unsigned char opts[POLICY_OPTS_MAX];
        opts_default(p, opts);
        fprintf(out, "  %-10s %s (%s)\n", p->name, p->summary, p->label);
        for (const popt *o = p->opts; o && o->key; o++) {
            fprintf(out, "      policies.%s.%s: %s; default ", p->name, o->key, o->help);
            if (o->type == POPT_BOOL && *int_at(opts, o) < 0)
                fputs("see above", out);
            else
                print_value(o, opts, out);
            if (o->type == POPT_ENUM) {
                fputs(" (", out);
                for (size_t k = 0; o->names[k]; k++)
                    fprintf(out, "%s%s", k ? ", " : "", o->names[k]);
                fputc(')', out);
            }
            fputc('\n', out);
        }
    }
}

/* p cannot run scenario s: its own check, or a world with failures and no
 * on_device hook.  DP_EINPUT with the reason, else 0. */
static int refuses(const policy_def *p, const scn_scenario *s, const void *opts, dp_err *err)
{
    int rc;
    if (p->check && (rc = p->check(p, s, opts, err)))
        return rc;
    if (!p->on_device && scn_has_failures(s))
        return dp_err_set(err, DP_EINPUT,
                          "%s: policy %s does not model device failures; this scenario has `availability` "
                          "(scenarios/README.md)",
                          s->path ? s->path : "scenario", p->name);
    return 0;
}

int policy_keep_applicable(const scn_scenario *s, const policy_def **pk, size_t n, FILE *note)
{
    size_t m = 0;
    for (size_t k = 0; k < n; k++) {
        unsigned char opts[POLICY_OPTS_MAX];
        dp_err e = {0};
        if (!policy_options(pk[k], s, opts, sizeof opts, &e) && refuses(pk[k], s, opts, &e)) {
            if (note)
                fprintf(note, "dpsim: note: %s left out: %s\n", pk[k]->name, e.msg);
            continue;
        }
        pk[m++] = pk[k];
    }
    return (int)m;
}

/* ---- running ------------------------------------------------------------------- */

/* A policy's plan (policy_perf.plan_new), done beside prt_new. */
typedef struct plan_job {
    const policy_def *p;
    void *plan;
    int rc;
    dp_err err;
} plan_job;

static void *plan_main(void *arg)
{
    plan_job *j = arg;
    j->rc = j->p->perf->plan_run(j->plan, &j->err);
    return NULL;
}

res_run *policy_run(const policy_def *p, const scn_scenario *s, uint64_t seed, dp_err *err)
{
    if (!p) {
        dp_err_set(err, DP_EINPUT, "unknown policy");
        return NULL;
    }
    if (s->n_devices == 0) {
        dp_err_set(err, DP_EINPUT, "%s: scenario has no devices", s->path ? s->path : "scenario");
        return NULL;
    }
    unsigned char opts[POLICY_OPTS_MAX];
    if (policy_options(p, s, opts, sizeof opts, err) || refuses(p, s, opts, err))
        return NULL;
    plan_job job = {p, p->perf && p->perf->plan_new ? p->perf->plan_new(s, opts) : NULL, 0, {0}};
    pthread_t th;
    int threaded = job.plan && pthread_create(&th, NULL, plan_main, &job) == 0;
    if (job.plan && !threaded)
        plan_main(&job);
    prt *rt = prt_new(s, p->name, seed, err);
    if (rt && threaded)
        prt_warm(rt); /* the plan takes longer than the world: fault in the run's memory meanwhile */
    if (threaded)
        pthread_join(th, NULL);
    if (rt && job.rc) { /* the runtime's own error (it came first before the plan moved) wins */
        *err = job.err;
        prt_free(rt);
        rt = NULL;
    }
    if (!rt) {
        if (job.plan)
            p->perf->plan_free(job.plan);
        return NULL;
    }
    rt->plan = job.plan;
    rt->pdef = p;
    rt->popts = opts;
    int rc = p->start(rt, opts);
    if (rc == 0)
        rc = prt_run(rt);
    res_run *r = NULL;
    if (rc == 0 && (r = prt_results(rt))) { /* NULL: out of memory for its records (err set) */
        r->options_json = policy_options_json(p, s);
        policy_stamp(r);
    }
    p->free(rt, opts);
    if (rt->plan)
        p->perf->plan_free(rt->plan);
    prt_free(rt);
    return r;
}
