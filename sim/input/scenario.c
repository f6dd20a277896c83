/* scenario.c: scenario files -> scn_scenario, validated.
 *
 * Pipeline: text -> yt_parse (libyaml, positions kept) -> overrides edit the
 * tree -> one pass over the tree that checks every key against the schema
 * and converts units -> cross checks (names, sites, memory, limits) ->
 * devices expanded.  The first problem found is the one message returned,
 * as "FILE:LINE:COLUMN: key.path: what is wrong (got VALUE)", or with
 * "override KEY=VALUE" in place of the position when an override made the
 * node.  Key paths name list items the way overrides address them
 * (`devices.rtx3090.link.up`, `wan.hz-remote.latency`), falling back to an
 * index (`devices[2]`) before the item's name is known.
 *
 * Limits (documented in scenarios/README.md) keep absurd values from
 * overflowing ints or allocating gigabytes: see the SCN_MAX_* below.
 */
#include "scenario.h"
#include "scenario_impl.h"
#include "yamltree.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The embedded copy of scenarios/paper-testbed.yaml (scenarios/meson.build). */
extern const char dpsim_builtin_paper_testbed[];
extern const size_t dpsim_builtin_paper_testbed_len;

/* ---- messages ---------------------------------------------------------- */

static void where(const cv *c, const yt_node *n, char *buf, size_t len)
{
    if (n && n->origin)
        snprintf(buf, len, "%s", n->origin);
    else if (n)
        snprintf(buf, len, "%s:%d:%d", c->file, n->line, n->column);
    else
        snprintf(buf, len, "%s", c->file);
}

int scni_fail(cv *c, const yt_node *n, const char *path, const char *fmt, ...)
{
    char w[400], msg[700];
    where(c, n, w, sizeof w);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return dp_err_set(c->err, DP_EINPUT, "%s: %s: %s", w, path[0] ? path : "(top level)", msg);
}

int scni_oom(cv *c)
{
    return dp_err_set(c->err, DP_ENOMEM, "%s: out of memory", c->file);
}

/* The "got" text of a node: its scalar, cut to 60 bytes, or its shape. */
const char *scni_got(const yt_node *n, char *buf, size_t len)
{
    if (!n)
        return "nothing";
    if (n->kind == YT_MAP)
        return "a mapping";
    if (n->kind == YT_SEQ)
        return "a list";
    if (strlen(n->text) > 60)
        snprintf(buf, len, "%.57s...", n->text);
    else
        snprintf(buf, len, "%s", n->text);
    return buf;
}

/* "a.b" (or "b" at the top); a path too long for buf is cut, which only
 * shortens a message. */
void scni_join(char *buf, size_t len, const char *a, const char *b)
{
    /* memcpy, not snprintf: every key read joins a path (two per value),
     * and snprintf's format machinery was 11% of loading 100,000 groups. */
    if (!len)
        return;
    size_t la = strlen(a), lb = strlen(b), k = 0;
    if (la) {
        la = la < len - 1 ? la : len - 1;
        memcpy(buf, a, la);
        k = la;
        if (k < len - 1)
            buf[k++] = '.';
    }
    lb = lb < len - 1 - k ? lb : len - 1 - k;
    memcpy(buf + k, b, lb);
    buf[k + lb] = '\0';
}

/* ---- schema checks ----------------------------------------------------- */

static size_t count_of(const char *const *list)
{
    size_t n = 0;
    while (list[n])
        n++;
    return n;
}

/* n must be a mapping whose keys are all in `keys` (NULL-terminated), with
 * no key twice and every key of `required` present with a value. */
int scni_check_map(cv *c, const yt_node *n, const char *path, const char *const *keys,
                   const char *const *required)
{
    return scni_check_map_at(c, n, path, keys, required, NULL, NULL);
}

/* The index of key t in keys (NULL-terminated, nk of them), or nk.  The
 * first byte tells most keys apart without a call. */
static size_t key_index(const char *const *keys, size_t nk, const char *t)
{
    size_t j;
    for (j = 0; j < nk; j++)
        if (keys[j][0] == t[0] && yt_key_is(t, keys[j]))
            break;
    return j;
}

int scni_check_map_at(cv *c, const yt_node *n, const char *path, const char *const *keys,
                      const char *const *required, const yt_node **vals, const yt_node **knodes)
{
    char g[80];
    if (!n || n->kind != YT_MAP)
        return scni_fail(c, n, path, "expected a mapping of keys (got %s)", scni_got(n, g, sizeof g));
    size_t nk = count_of(keys);
    if (vals)
        for (size_t j = 0; j < nk; j++)
            vals[j] = knodes[j] = NULL;
    for (size_t i = 0; i < n->n; i++) {
        const yt_node *k = n->keys[i];
        const char *t = k->text;
        char kp[300];
        size_t j = key_index(keys, nk, t);
        if (j == nk) {
            scni_join(kp, sizeof kp, path, k->text);
            const char *near = yt_nearest(k->text, keys, nk);
            char known[400] = "";
            for (j = 0; j < nk && strlen(known) + strlen(keys[j]) + 3 < sizeof known; j++) {
                if (j)
                    strcat(known, ", ");
                strcat(known, keys[j]);
            }
            if (near)
                return scni_fail(c, k, kp, "unknown key, did you mean '%s'? (got '%s')", near,
                                 scni_got(k, g, sizeof g));
            return scni_fail(c, k, kp, "unknown key; known keys here: %s (got '%s')", known,
                             scni_got(k, g, sizeof g));
        }
        const yt_node *first = NULL; /* the same key earlier */
        if (vals)
            first = knodes[j];
        else
            for (size_t m = 0; m < i && !first; m++)
                if (n->keys[m]->text[0] == t[0] && strcmp(n->keys[m]->text, t) == 0)
                    first = n->keys[m];
        if (first) {
            scni_join(kp, sizeof kp, path, k->text);
            if (first->origin)
                return scni_fail(c, k, kp, "duplicate key (got '%s' twice)", k->text);
            return scni_fail(c, k, kp, "duplicate key, first at line %d (got '%s' twice)", first->line,
                             k->text);
        }
        if (vals) {
            vals[j] = n->items[i];
            knodes[j] = k;
        }
    }
    for (size_t r = 0; required && required[r]; r++) {
        size_t j = vals ? key_index(keys, nk, required[r]) : nk;
        const yt_node *v = j < nk ? vals[j] : yt_get(n, required[r]);
        if (yt_is_null(v)) {
            const yt_node *at = j < nk ? knodes[j] : yt_get_key(n, required[r]);
            return scni_fail(c, at ? at : n, path, "missing required key '%s'", required[r]);
        }
    }
    return 0;
}

/* Scalar at m[key]: 1 and *out set, 0 if absent or null, < 0 on error. */
int scni_get_scalar(cv *c, const yt_node *m, const char *path, const char *key, int required,
                    const yt_node **out)
{
    return scni_scalar_at(c, m, yt_get(m, key), path, key, required, out);
}

int scni_scalar_at(cv *c, const yt_node *m, const yt_node *n, const char *path, const char *key, int required,
                   const yt_node **out)
{
    if (yt_is_null(n)) {
        if (required)
            return scni_fail(c, n ? n : m, path, "missing required key '%s'", key);
        return 0;
    }
    if (n->kind != YT_SCALAR) {
        char kp[300], g[80];
        scni_join(kp, sizeof kp, path, key);
        return scni_fail(c, n, kp, "expected a single value (got %s)", scni_got(n, g, sizeof g));
    }
    *out = n;
    return 1;
}

/* A quantity.  Returns 1 (set), 0 (absent: *out = def), < 0 error. */
int scni_get_q(cv *c, const yt_node *m, const char *path, const char *key, scn_unit u, int required,
               double def, double *out, const yt_node **node)
{
    return scni_q_at(c, m, yt_get(m, key), path, key, u, required, def, out, node);
}

int scni_q_at(cv *c, const yt_node *m, const yt_node *v, const char *path, const char *key, scn_unit u,
              int required, double def, double *out, const yt_node **node)
{
    const yt_node *n = NULL;
    int r = scni_scalar_at(c, m, v, path, key, required, &n);
    if (node)
        *node = n;
    if (r <= 0) {
        *out = def;
        return r;
    }
    dp_err e;
    if (scn_parse_quantity(n->text, u, out, &e)) {
        char kp[300];
        scni_join(kp, sizeof kp, path, key);
        return scni_fail(c, n, kp, "%s", e.msg);
    }
    return 1;
}

/* The smallest nonzero value of a unit the simulator can honour: below
 * it, rates and times overflow to infinity (1 / 1e-320), a transfer takes
 * longer than any run, or the exact solver divides by a subnormal and never
 * converges.  `check` refuses them so `run` never meets them. */
double scni_unit_floor(scn_unit u)
{
    switch (u) {
    case SCN_UNIT_TIME:
        return 1e-9; /* 1 ns */
    case SCN_UNIT_BANDWIDTH:
    case SCN_UNIT_RATE:
        return 1.0 / 8; /* 1 bit/s */
    case SCN_UNIT_FLOPS:
        return 1; /* 1 FLOPS */
    default:
        return 1e-9;
    }
}

/* Positive (or >= 0 with nonneg) and at most `max`; a nonzero value is at
 * least unit_floor. */
int scni_get_pos(cv *c, const yt_node *m, const char *path, const char *key, scn_unit u, int required,
                 double def, int nonneg, double max, double *out)
{
    return scni_pos_at(c, m, yt_get(m, key), path, key, u, required, def, nonneg, max, out);
}

int scni_pos_at(cv *c, const yt_node *m, const yt_node *v, const char *path, const char *key, scn_unit u,
                int required, double def, int nonneg, double max, double *out)
{
    const yt_node *n;
    int r = scni_q_at(c, m, v, path, key, u, required, def, out, &n);
    if (r <= 0)
        return r;
    int below = nonneg ? *out < 0 : !(*out > 0), above = *out > max;
    int tiny = *out != 0 && *out < scni_unit_floor(u);
    if (!below && !above && !tiny)
        return 1;
    /* A message: only now is the key path made, and the floor formatted. */
    char kp[300], g[80];
    scni_join(kp, sizeof kp, path, key);
    if (below)
        return scni_fail(c, n, kp, "must be %s (got %s)", nonneg ? ">= 0" : "> 0", scni_got(n, g, sizeof g));
    if (above)
        return scni_fail(c, n, kp, "must be at most %g (the limit for this key) (got %s)", max,
                         scni_got(n, g, sizeof g));
    char lo[40];
    scn_format_quantity(scni_unit_floor(u), u, lo, sizeof lo);
    return scni_fail(c, n, kp, "must be %sat least %s, the smallest value a run can honour (got %s)",
                     nonneg ? "0 or " : "", lo, scni_got(n, g, sizeof g));
}

/* A whole number in [lo, hi]; `what` names the limit in messages. */
int scni_get_int(cv *c, const yt_node *m, const char *path, const char *key, int required, int64_t def,
                 double lo, double hi, const char *what, int64_t *out)
{
    return scni_int_at(c, m, yt_get(m, key), path, key, required, def, lo, hi, what, out);
}

int scni_int_at(cv *c, const yt_node *m, const yt_node *at, const char *path, const char *key, int required,
                int64_t def, double lo, double hi, const char *what, int64_t *out)
{
    const yt_node *n;
    double v;
    int r = scni_q_at(c, m, at, path, key, SCN_UNIT_NUMBER, required, (double)def, &v, &n);
    if (r <= 0) {
        *out = def;
        return r;
    }
    if (v == floor(v) && v >= lo && v <= hi) {
        *out = (int64_t)v;
        return 1;
    }
    char kp[300], g[80];
    scni_join(kp, sizeof kp, path, key);
    if (v != floor(v))
        return scni_fail(c, n, kp, "must be a whole number (got %s)", scni_got(n, g, sizeof g));
    if (v < lo)
        return scni_fail(c, n, kp, "must be >= %.0f (got %s)", lo, scni_got(n, g, sizeof g));
    if (v > hi)
        return scni_fail(c, n, kp, "must be at most %.0f (the limit on %s) (got %s)", hi, what,
                         scni_got(n, g, sizeof g));
    *out = (int64_t)v;
    return 1;
}

static int get_bool(cv *c, const yt_node *m, const char *path, const char *key, int def, int *out)
{
    const yt_node *n;
    *out = def;
    int r = scni_get_scalar(c, m, path, key, 0, &n);
    if (r <= 0)
        return r;
    static const char *const yes[] = {"true", "True", "TRUE", "yes", "on", NULL};
    static const char *const no[] = {"false", "False", "FALSE", "no", "off", NULL};
    for (size_t i = 0; yes[i]; i++)
        if (strcmp(n->text, yes[i]) == 0)
            return *out = 1, 1;
    for (size_t i = 0; no[i]; i++)
        if (strcmp(n->text, no[i]) == 0)
            return *out = 0, 1;
    char kp[300], g[80];
    scni_join(kp, sizeof kp, path, key);
    return scni_fail(c, n, kp, "expected true or false (got %s)", scni_got(n, g, sizeof g));
}

/* One of `names` (NULL-terminated); *out = its index. */
static int enum_at(cv *c, const yt_node *m, const yt_node *v, const char *path, const char *key,
                   const char *const *names, int def, int *out)
{
    const yt_node *n;
    *out = def;
    int r = scni_scalar_at(c, m, v, path, key, 0, &n);
    if (r <= 0)
        return r;
    size_t k = count_of(names);
    for (size_t i = 0; i < k; i++)
        if (strcmp(n->text, names[i]) == 0)
            return *out = (int)i, 1;
    char kp[300], g[80], list[200] = "";
    scni_join(kp, sizeof kp, path, key);
    for (size_t i = 0; i < k && strlen(list) + strlen(names[i]) + 3 < sizeof list; i++) {
        if (i)
            strcat(list, ", ");
        strcat(list, names[i]);
    }
    const char *near = yt_nearest(n->text, names, k);
    if (near)
        return scni_fail(c, n, kp, "expected one of %s, did you mean '%s'? (got %s)", list, near,
                         scni_got(n, g, sizeof g));
    return scni_fail(c, n, kp, "expected one of %s (got %s)", list, scni_got(n, g, sizeof g));
}

static int get_enum(cv *c, const yt_node *m, const char *path, const char *key, const char *const *names,
                    int def, int *out)
{
    return enum_at(c, m, yt_get(m, key), path, key, names, def, out);
}

/* Names used as addresses (devices, sites): 1-80 of [A-Za-z0-9_+-]. */
static int check_name(cv *c, const yt_node *n, const char *kp)
{
    char g[80];
    size_t len = strlen(n->text);
    if (len == 0 || len > SCN_NAME_MAX)
        return scni_fail(c, n, kp, "a name must be 1 to %d characters (got '%s')", SCN_NAME_MAX,
                         scni_got(n, g, sizeof g));
    for (size_t i = 0; i < len; i++) {
        char ch = n->text[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
              ch == '-' || ch == '+'))
            return scni_fail(c, n, kp, "a name may hold only letters, digits, '_', '-' and '+' (got '%s')",
                             scni_got(n, g, sizeof g));
    }
    return 0;
}

static int dup_str(cv *c, char **dst, const char *src)
{
    if (!(*dst = dp_strdup(src)))
        return scni_oom(c);
    return 0;
}

/* A free-text name (scenario, model, dataset): printed in headers and
 * stored, so control characters (which would drive the terminal) are
 * refused here; the message shows them escaped. */
static int get_text(cv *c, const yt_node *m, const char *path, const char *key, const char *def, char **dst)
{
    const yt_node *n = NULL;
    int r = scni_get_scalar(c, m, path, key, 0, &n);
    if (r < 0)
        return r;
    if (r) {
        for (const unsigned char *p = (const unsigned char *)n->text; *p; p++)
            if (*p < 0x20 || *p == 0x7f || (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)) {
                char kp[300], g[80];
                scni_join(kp, sizeof kp, path, key);
                return scni_fail(c, n, kp, "a name must not hold control characters (got '%s')",
                                 scni_got(n, g, sizeof g));
            }
    }
    return dup_str(c, dst, r ? n->text : def);
}

/* ---- files ------------------------------------------------------------- */

static int file_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

/* A trace: `key: FILE` or `key: { file, format, mean, loop, bin }`.
 * `bits`: a link trace (CSV in bits/s, mean a bandwidth); else a speed
 * factor trace (CSV factor, mean a plain number). */
static int get_trace(cv *c, const yt_node *n, const char *path, const char *key, int bits, trace **out)
{
    static const char *const keys[] = {"file", "format", "mean", "loop", "bin", NULL};
    static const char *const req[] = {"file", NULL};
    static const char *const fmts[] = {"auto", "csv", "mahimahi", NULL};
    char kp[300], g[80];
    *out = NULL;
    if (yt_is_null(n))
        return 0;
    scni_join(kp, sizeof kp, path, key);
    const yt_node *fnode = n;
    int fmt = 0, loop = -1, r;
    double mean = 0, bin = 0;
    if (n->kind == YT_MAP) {
        if ((r = scni_check_map(c, n, kp, keys, req)) < 0)
            return r;
        if ((r = scni_get_scalar(c, n, kp, "file", 1, &fnode)) < 0)
            return r;
        if ((r = get_enum(c, n, kp, "format", fmts, 0, &fmt)) < 0)
            return r;
        if ((r = scni_get_pos(c, n, kp, "mean", bits ? SCN_UNIT_BANDWIDTH : SCN_UNIT_NUMBER, 0, 0, 0, 1e300,
                              &mean)) < 0)
            return r;
        if ((r = get_bool(c, n, kp, "loop", -1, &loop)) < 0)
            return r;
        if ((r = scni_get_pos(c, n, kp, "bin", SCN_UNIT_TIME, 0, 0, 0, 86400, &bin)) < 0)
            return r;
        if (r > 0 && bin < 0.001)
            return scni_fail(c, yt_get(n, "bin"), kp, "bin must be at least 1 ms (got %s)",
                             scni_got(yt_get(n, "bin"), g, sizeof g));
    } else if (n->kind != YT_SCALAR) {
        return scni_fail(c, n, kp,
                         "expected a file name or a mapping {file, format, mean, loop, bin} (got %s)",
                         scni_got(n, g, sizeof g));
    }
    const char *file = fnode->text;
    if (strlen(file) > 3000)
        return scni_fail(c, fnode, kp, "file name too long (got %s)", scni_got(fnode, g, sizeof g));
    const scn_file *sf = NULL;
    char shown[4200]; /* the path as resolved, for messages */
    int r2 = scni_file_contents(c, fnode, kp, "trace file", file, &sf, shown, sizeof shown);
    if (r2 < 0)
        return r2;
    dp_err e;
    trace_opts o = {0};
    o.format = fmt == 0   ? trace_detect_format(shown, sf->data, sf->len)
               : fmt == 1 ? TRACE_FMT_CSV
                          : TRACE_FMT_MAHIMAHI;
    o.bin_s = bin;
    o.scale_to_mean = mean;
    o.loop = loop >= 0 ? loop : o.format == TRACE_FMT_MAHIMAHI;
    o.value_is_bits = bits;
    *out = trace_read_buffer(shown, sf->data, sf->len, &o, &e);
    if (!*out)
        return e.code == DP_ENOMEM ? dp_err_set(c->err, DP_ENOMEM, "%s", e.msg)
                                   : scni_fail(c, fnode, kp, "%s", e.msg);
    return 1;
}

/* Record a file the scenario read (s->files), taking ownership of data. */
static int add_file(cv *c, const char *name, const char *path, char *data, size_t len, const scn_file **out)
{
    scn_scenario *s = c->s;
    scn_file *v = dp_realloc(s->files, (s->n_files + 1) * sizeof *v);
    if (!v) {
        dp_free(data);
        return scni_oom(c);
    }
    s->files = v;
    scn_file *f = &v[s->n_files];
    memset(f, 0, sizeof *f);
    f->data = data;
    f->len = len;
    f->hash = scn_hash(data, len);
    s->n_files++; /* from here scn_free frees it */
    if (!(f->name = dp_strdup(name)) || !(f->path = dp_strdup(path)))
        return scni_oom(c);
    *out = f;
    return 0;
}

/* The contents of the trace file `file` (as written), recorded in s->files
 * once per name: the given copy when there is one (rerun), else the file on
 * disk, relative names resolved next to the scenario first, then in the
 * current directory.  A name met again reuses its record, so two traces
 * naming one file see the same bytes.  shown gets the name messages use:
 * the path as resolved on disk, or the given copy's recorded path. */
int scni_file_contents(cv *c, const yt_node *fnode, const char *kp, const char *what, const char *file,
                       const scn_file **out, char *shown, size_t shown_len)
{
    char g[80];
    const scn_file *given = NULL;
    for (size_t i = 0; !given && i < c->n_given; i++)
        if (c->given[i].name && !strcmp(c->given[i].name, file))
            given = &c->given[i];
    const char *use = NULL;
    if (given) {
        use = given->path ? given->path : file;
    } else if (file[0] == '/') {
        use = file;
    } else {
        if (c->base_dir && c->base_dir[0]) {
            snprintf(shown, shown_len, "%s/%s", c->base_dir, file);
            if (file_exists(shown))
                use = shown;
        }
        if (!use && file_exists(file))
            use = file;
    }
    if (!use) {
        if (file[0] != '/' && c->base_dir && c->base_dir[0])
            return scni_fail(c, fnode, kp, "%s not found (looked in '%s' and the current directory) (got %s)",
                             what, c->base_dir, scni_got(fnode, g, sizeof g));
        return scni_fail(c, fnode, kp, "%s not found (got %s)", what, scni_got(fnode, g, sizeof g));
    }
    if (use != shown)
        snprintf(shown, shown_len, "%s", use);
    for (size_t i = 0; i < c->s->n_files; i++)
        if (!strcmp(c->s->files[i].name, file)) {
            *out = &c->s->files[i];
            return 0;
        }
    if (given) {
        char *copy = dp_malloc(given->len + 1);
        if (!copy)
            return scni_oom(c);
        if (given->len)
            memcpy(copy, given->data, given->len);
        copy[given->len] = '\0';
        return add_file(c, file, shown, copy, given->len, out);
    }
    dp_err e;
    size_t len = 0;
    char *buf = dp_read_file(shown, what, SCN_MAX_FILE_BYTES, &len, &e);
    if (!buf)
        return e.code == DP_ENOMEM ? scni_oom(c) : scni_fail(c, fnode, kp, "%s", e.msg);
    /* The record keeps the absolute path, so that `dpsim rerun` can compare
     * the stored bytes with the file from any directory. */
    char *abs = realpath(shown, NULL);
    int r = add_file(c, file, abs ? abs : shown, buf, len, out);
    free(abs); /* realpath's block comes from malloc */
    return r;
}

/* ---- the dynamic world ------------------------------------------------- */

/* p (at key pk) is a pair of scalars, else an error "expected WHAT". */
static int check_pair(cv *c, const yt_node *p, const char *pk, const char *what)
{
    char g[80];
    if (p->kind != YT_SEQ || p->n != 2 || p->items[0]->kind != YT_SCALAR || p->items[1]->kind != YT_SCALAR)
        return scni_fail(c, p, pk, "expected %s (got %s)", what, scni_got(p, g, sizeof g));
    return 0;
}

/* `outages: [[start, end], ...]`: times, start < end, in order, disjoint. */
static int get_outages(cv *c, const yt_node *l, const char *path, scn_outages *o)
{
    char kp[300], g[80];
    if (yt_is_null(l))
        return 0;
    scni_join(kp, sizeof kp, path, "outages");
    if (l->kind != YT_SEQ)
        return scni_fail(c, l, kp, "expected a list of [start, end] intervals (got %s)",
                         scni_got(l, g, sizeof g));
    if (l->n > SCN_MAX_TABLE)
        return scni_fail(c, l, kp, "at most %d outages (got %zu)", SCN_MAX_TABLE, l->n);
    o->start_s = dp_calloc(l->n + 1, sizeof *o->start_s);
    o->end_s = dp_calloc(l->n + 1, sizeof *o->end_s);
    if (!o->start_s || !o->end_s)
        return scni_oom(c);
    for (size_t i = 0; i < l->n; i++) {
        const yt_node *p = l->items[i];
        char pk[340];
        snprintf(pk, sizeof pk, "%s[%zu]", kp, i);
        int bad = check_pair(c, p, pk, "an interval [start, end]");
        if (bad)
            return bad;
        double t[2];
        for (int k = 0; k < 2; k++) {
            dp_err e;
            if (scn_parse_quantity(p->items[k]->text, SCN_UNIT_TIME, &t[k], &e))
                return scni_fail(c, p->items[k], pk, "%s", e.msg);
            if (!(t[k] >= 0) || t[k] > 1e12)
                return scni_fail(c, p->items[k], pk, "times must be >= 0 and at most 1e12 s (got %s)",
                                 p->items[k]->text);
        }
        if (!(t[1] > t[0]))
            return scni_fail(c, p->items[1], pk, "an outage must end after it starts (got [%s, %s])",
                             p->items[0]->text, p->items[1]->text);
        if (i > 0 && t[0] < o->end_s[i - 1])
            return scni_fail(c, p->items[0], pk,
                             "outages must be in order and must not overlap (got start %s)",
                             p->items[0]->text);
        o->start_s[i] = t[0];
        o->end_s[i] = t[1];
        o->n = i + 1;
    }
    return 1;
}

/* `stragglers: { every, lasting, factor }` of a device group. */
static int get_stragglers(cv *c, const yt_node *n, const char *path, scn_stragglers *st)
{
    static const char *const keys[] = {"every", "lasting", "factor", NULL};
    static const char *const req[] = {"every", "lasting", "factor", NULL};
    char kp[300];
    int r;
    if (yt_is_null(n))
        return 0;
    scni_join(kp, sizeof kp, path, "stragglers");
    if ((r = scni_check_map(c, n, kp, keys, req)) < 0)
        return r;
    if ((r = scni_get_pos(c, n, kp, "every", SCN_UNIT_TIME, 1, 0, 0, 1e12, &st->every_s)) < 0 ||
        (r = scni_get_pos(c, n, kp, "lasting", SCN_UNIT_TIME, 1, 0, 0, 1e12, &st->lasting_s)) < 0 ||
        (r = scni_get_pos(c, n, kp, "factor", SCN_UNIT_NUMBER, 1, 0, 0, 1e6, &st->factor)) < 0)
        return r;
    if (st->factor < 1) {
        char g[80], fk[320];
        scni_join(fk, sizeof fk, kp, "factor");
        return scni_fail(c, yt_get(n, "factor"), fk,
                         "a straggler multiplies the batch cost by at least 1 (got %s)",
                         scni_got(yt_get(n, "factor"), g, sizeof g));
    }
    return 1;
}

/* `availability: { mtbf, mttr, data_persists }` or `{ trace: FILE, data_persists }`. */
static int get_avail(cv *c, const yt_node *n, const char *path, scn_avail *a)
{
    static const char *const keys[] = {"mtbf", "mttr", "trace", "data_persists", NULL};
    char kp[300];
    int r;
    if (yt_is_null(n))
        return 0;
    scni_join(kp, sizeof kp, path, "availability");
    if ((r = scni_check_map(c, n, kp, keys, NULL)) < 0)
        return r;
    *a = (scn_avail){0, 0, NULL, 1};
    if ((r = get_trace(c, yt_get(n, "trace"), kp, "trace", 0, &a->trace)) < 0)
        return r;
    int has_mtbf = !yt_is_null(yt_get(n, "mtbf")), has_mttr = !yt_is_null(yt_get(n, "mttr"));
    if (a->trace && (has_mtbf || has_mttr))
        return scni_fail(c, yt_get_key(n, has_mtbf ? "mtbf" : "mttr"), kp,
                         "give either a trace or mtbf and mttr, not both (got %s)",
                         has_mtbf ? "mtbf" : "mttr");
    if (a->trace) {
        for (size_t k = 0; k < a->trace->n; k++)
            if (a->trace->value[k] != 0 && a->trace->value[k] != 1)
                return scni_fail(c, yt_get(n, "trace"), kp,
                                 "an availability trace holds 1 (up) or 0 (down) only (got %g at t = %g s)",
                                 a->trace->value[k], a->trace->t_s[k]);
    } else {
        if (!has_mtbf || !has_mttr)
            return scni_fail(c, n, kp, "missing required key '%s' (or give a trace)",
                             has_mtbf ? "mttr" : "mtbf");
        if ((r = scni_get_pos(c, n, kp, "mtbf", SCN_UNIT_TIME, 1, 0, 0, 1e12, &a->mtbf_s)) < 0 ||
            (r = scni_get_pos(c, n, kp, "mttr", SCN_UNIT_TIME, 1, 0, 0, 1e12, &a->mttr_s)) < 0)
            return r;
    }
    if ((r = get_bool(c, n, kp, "data_persists", 1, &a->data_persists)) < 0)
        return r;
    return 1;
}

/* ---- sections ---------------------------------------------------------- */

static int conv_model(cv *c, const yt_node *root)
{
    static const char *const keys[] = {"name",
                                       "params",
                                       "bytes_per_param",
                                       "flops_per_sample",
                                       "train_flops_per_sample",
                                       "state_factor",
                                       "activation_bytes_per_sample",
                                       NULL};
    static const char *const req[] = {"params", "flops_per_sample", NULL};
    scn_scenario *s = c->s;
    const yt_node *m = yt_get(root, "model");
    int r;
    if ((r = scni_check_map(c, m, "model", keys, req)) < 0)
        return r;
    if ((r = get_text(c, m, "model", "name", "model", &s->model.name)) < 0)
        return r;
    if ((r = scni_get_pos(c, m, "model", "params", SCN_UNIT_NUMBER, 1, 0, 0, SCN_MAX_PARAMS,
                          &s->model.params)) < 0)
        return r;
    if ((r = scni_get_pos(c, m, "model", "bytes_per_param", SCN_UNIT_BYTES, 0, 4, 0, 64,
                          &s->model.bytes_per_param)) < 0)
        return r;
    if ((r = scni_get_pos(c, m, "model", "flops_per_sample", SCN_UNIT_FLOPS, 1, 0, 0, 1e21,
                          &s->model.flops_per_sample)) < 0)
        return r;
    if ((r = scni_get_pos(c, m, "model", "train_flops_per_sample", SCN_UNIT_FLOPS, 0,
                          6 * s->model.flops_per_sample, 0, 1e22, &s->model.train_flops_per_sample)) < 0)
        return r;
    if ((r = scni_get_pos(c, m, "model", "state_factor", SCN_UNIT_NUMBER, 0, 4, 0, 1000,
                          &s->model.state_factor)) < 0)
        return r;
    if ((r = scni_get_pos(c, m, "model", "activation_bytes_per_sample", SCN_UNIT_BYTES, 0, 0, 1, 1e15,
                          &s->model.activation_bytes_per_sample)) < 0)
        return r;
    s->model.model_bytes = s->model.params * s->model.bytes_per_param;
    return 0;
}

static int conv_dataset_training(cv *c, const yt_node *root)
{
    static const char *const dkeys[] = {"name", "samples", "sample_bytes", NULL};
    static const char *const dreq[] = {"samples", "sample_bytes", NULL};
    static const char *const tkeys[] = {"epochs", "seed", NULL};
    static const char *const treq[] = {"epochs", NULL};
    scn_scenario *s = c->s;
    const yt_node *d = yt_get(root, "dataset"), *n;
    int r;
    if ((r = scni_check_map(c, d, "dataset", dkeys, dreq)) < 0)
        return r;
    if ((r = get_text(c, d, "dataset", "name", "dataset", &s->dataset.name)) < 0)
        return r;
    if ((r = scni_get_int(c, d, "dataset", "samples", 1, 0, 1, SCN_MAX_SAMPLES, "dataset samples",
                          &s->dataset.samples)) < 0)
        return r;
    if ((r = scni_get_pos(c, d, "dataset", "sample_bytes", SCN_UNIT_BYTES, 1, 0, 0, SCN_MAX_SAMPLE_BYTES,
                          &s->dataset.sample_bytes)) < 0)
        return r;

    const yt_node *t = yt_get(root, "training");
    if ((r = scni_check_map(c, t, "training", tkeys, treq)) < 0)
        return r;
    int64_t v;
    if ((r = scni_get_int(c, t, "training", "epochs", 1, 0, 1, SCN_MAX_EPOCHS, "epochs", &v)) < 0)
        return r;
    s->training.epochs = (int)v;
    s->training.seed = 1;
    if ((r = scni_get_scalar(c, t, "training", "seed", 0, &n)) < 0)
        return r;
    if (r) {
        /* All 64 bits: parsed as an integer, not through a double. */
        const char *p = n->text;
        char *end;
        errno = 0;
        unsigned long long u = strtoull(p, &end, 10);
        char g[80];
        if (!(*p >= '0' && *p <= '9') || *end || errno == ERANGE)
            return scni_fail(c, n, "training.seed", "must be a whole number from 0 to 2^64-1 (got %s)",
                             scni_got(n, g, sizeof g));
        s->training.seed = (uint64_t)u;
    }
    return 0;
}

int scni_site_index(const scn_scenario *s, const char *name)
{
    for (size_t i = 0; i < s->n_sites; i++)
        if (strcmp(s->sites[i], name) == 0)
            return (int)i;
    return -1;
}

int scni_unknown_site(cv *c, const yt_node *n, const char *kp)
{
    scn_scenario *s = c->s;
    char have[300] = "", g[80];
    for (size_t i = 0; i < s->n_sites && strlen(have) + strlen(s->sites[i]) + 3 < sizeof have; i++) {
        if (i)
            strcat(have, ", ");
        strcat(have, s->sites[i]);
    }
    if (s->n_sites == 0)
        return scni_fail(c, n, kp, "unknown site: the scenario has no `sites` list (got %s)",
                         scni_got(n, g, sizeof g));
    const char *near = yt_nearest(n->text, (const char *const *)s->sites, s->n_sites);
    if (near)
        return scni_fail(c, n, kp, "unknown site, did you mean '%s'? (have: %s) (got %s)", near, have,
                         scni_got(n, g, sizeof g));
    return scni_fail(c, n, kp, "unknown site (have: %s) (got %s)", have, scni_got(n, g, sizeof g));
}

static int conv_sites(cv *c, const yt_node *root)
{
    scn_scenario *s = c->s;
    const yt_node *l = yt_get(root, "sites");
    char g[80];
    if (yt_is_null(l))
        return 0;
    if (l->kind != YT_SEQ)
        return scni_fail(c, l, "sites", "expected a list of sites (got %s)", scni_got(l, g, sizeof g));
    if (l->n > SCN_MAX_SITES)
        return scni_fail(c, l, "sites", "at most %d sites (got %zu)", SCN_MAX_SITES, l->n);
    if (!(s->sites = dp_calloc(l->n ? l->n : 1, sizeof *s->sites)))
        return scni_oom(c);
    for (size_t i = 0; i < l->n; i++) {
        const yt_node *it = l->items[i], *nm = it;
        char kp[300];
        snprintf(kp, sizeof kp, "sites[%zu]", i);
        if (it->kind == YT_MAP) {
            static const char *const keys[] = {"name", NULL};
            int r;
            if ((r = scni_check_map(c, it, kp, keys, keys)) < 0)
                return r;
            if ((r = scni_get_scalar(c, it, kp, "name", 1, &nm)) < 0)
                return r;
            size_t kl = strlen(kp);
            snprintf(kp + kl, sizeof kp - kl, ".name");
        } else if (it->kind != YT_SCALAR) {
            return scni_fail(c, it, kp, "expected a site name or {name: ...} (got %s)",
                             scni_got(it, g, sizeof g));
        }
        if (check_name(c, nm, kp))
            return DP_EINPUT;
        if (scni_site_index(s, nm->text) >= 0)
            return scni_fail(c, nm, kp, "duplicate site name (got %s)", scni_got(nm, g, sizeof g));
        if (dup_str(c, &s->sites[i], nm->text))
            return DP_ENOMEM;
        s->n_sites = i + 1;
    }
    return 0;
}

static int conv_server_network(cv *c, const yt_node *root)
{
    static const char *const skeys[] = {"nic", "aggregate_rate", "site", NULL};
    static const char *const nickeys[] = {"up", "down", NULL};
    static const char *const nkeys[] = {"tcp_window", NULL};
    static const char *const ikeys[] = {"bandwidth", "latency", NULL};
    scn_scenario *s = c->s;
    int r;
    s->server.nic_up_Bps = s->server.nic_down_Bps = INFINITY;
    s->server.aggregate_Bps = INFINITY;
    s->server.site = s->n_sites ? 0 : -1;
    const yt_node *sv = yt_get(root, "server"), *n;
    if (!yt_is_null(sv)) {
        if ((r = scni_check_map(c, sv, "server", skeys, NULL)) < 0)
            return r;
        const yt_node *nic = yt_get(sv, "nic");
        if (!yt_is_null(nic)) {
            if ((r = scni_check_map(c, nic, "server.nic", nickeys, NULL)) < 0)
                return r;
            if ((r = scni_get_pos(c, nic, "server.nic", "up", SCN_UNIT_BANDWIDTH, 0, INFINITY, 0, 1e300,
                                  &s->server.nic_up_Bps)) < 0)
                return r;
            if ((r = scni_get_pos(c, nic, "server.nic", "down", SCN_UNIT_BANDWIDTH, 0, INFINITY, 0, 1e300,
                                  &s->server.nic_down_Bps)) < 0)
                return r;
        }
        if ((r = scni_get_pos(c, sv, "server", "aggregate_rate", SCN_UNIT_RATE, 0, INFINITY, 0, 1e300,
                              &s->server.aggregate_Bps)) < 0)
            return r;
        if ((r = scni_get_scalar(c, sv, "server", "site", 0, &n)) < 0)
            return r;
        if (r && (s->server.site = scni_site_index(s, n->text)) < 0)
            return scni_unknown_site(c, n, "server.site");
    }
    const yt_node *nw = yt_get(root, "network");
    if (!yt_is_null(nw)) {
        if ((r = scni_check_map(c, nw, "network", nkeys, NULL)) < 0)
            return r;
        if ((r = scni_get_pos(c, nw, "network", "tcp_window", SCN_UNIT_BYTES, 0, 0, 1, 1e15,
                              &s->network.tcp_window_bytes)) < 0)
            return r;
    }
    const yt_node *ic = yt_get(root, "interconnect");
    if (!yt_is_null(ic)) {
        if ((r = scni_check_map(c, ic, "interconnect", ikeys, NULL)) < 0)
            return r;
        if ((r = scni_get_pos(c, ic, "interconnect", "bandwidth", SCN_UNIT_BANDWIDTH, 0, 0, 1, 1e300,
                              &s->interconnect.bandwidth_Bps)) < 0)
            return r;
        if ((r = scni_get_pos(c, ic, "interconnect", "latency", SCN_UNIT_TIME, 0, 0, 1, 1e6,
                              &s->interconnect.latency_s)) < 0)
            return r;
    }
    return 0;
}

/* A constant capacity next to a trace of the same link would be ignored
 * (the trace sets the capacity at every instant), so it is an error naming
 * both keys rather than a silent no-op (issue 11 item 5). */
static int both_keys_at(cv *c, const yt_node *k, const yt_node *t, const char *path, const char *key,
                        const char *tkey)
{
    if (yt_is_null(k) || yt_is_null(t))
        return 0;
    char kp[300], wt[400];
    scni_join(kp, sizeof kp, path, key);
    where(c, t, wt, sizeof wt);
    return scni_fail(c, k, kp,
                     "given together with '%s' (%s): the trace sets the capacity and '%s' would be ignored; "
                     "remove '%s', or rescale the trace with { file: ..., mean: ... }",
                     tkey, wt, key, key);
}

static int both_keys(cv *c, const yt_node *m, const char *path, const char *key, const char *tkey)
{
    return both_keys_at(c, yt_get(m, key), yt_get(m, tkey), path, key, tkey);
}

static int conv_wan(cv *c, const yt_node *root)
{
    static const char *const keys[] = {"between", "bandwidth", "latency", "trace", "outages", NULL};
    static const char *const req[] = {"between", NULL};
    scn_scenario *s = c->s;
    const yt_node *l = yt_get(root, "wan");
    char g[80];
    int r;
    if (yt_is_null(l))
        return 0;
    if (l->kind != YT_SEQ)
        return scni_fail(c, l, "wan", "expected a list of WAN links (got %s)", scni_got(l, g, sizeof g));
    if (l->n && s->n_sites < 2)
        return scni_fail(c, l, "wan", "WAN links need a `sites` list with at least two sites (got %zu sites)",
                         s->n_sites);
    if (l->n > (size_t)SCN_MAX_SITES * SCN_MAX_SITES)
        return scni_fail(c, l, "wan", "too many WAN links (got %zu)", l->n);
    if (!(s->wan = dp_calloc(l->n ? l->n : 1, sizeof *s->wan)))
        return scni_oom(c);
    for (size_t i = 0; i < l->n; i++) {
        const yt_node *it = l->items[i];
        char kp[300];
        snprintf(kp, sizeof kp, "wan[%zu]", i);
        if ((r = scni_check_map(c, it, kp, keys, req)) < 0)
            return r;
        const yt_node *bw = yt_get(it, "between");
        char bkp[320];
        scni_join(bkp, sizeof bkp, kp, "between");
        if (bw->kind != YT_SEQ || bw->n != 2 || bw->items[0]->kind != YT_SCALAR ||
            bw->items[1]->kind != YT_SCALAR)
            return scni_fail(c, bw, bkp, "expected two site names [A, B] (got %s)",
                             scni_got(bw, g, sizeof g));
        scn_wan *w = &s->wan[i];
        s->n_wan = i + 1;
        if ((w->site_a = scni_site_index(s, bw->items[0]->text)) < 0)
            return scni_unknown_site(c, bw->items[0], bkp);
        if ((w->site_b = scni_site_index(s, bw->items[1]->text)) < 0)
            return scni_unknown_site(c, bw->items[1], bkp);
        if (w->site_a == w->site_b)
            return scni_fail(c, bw, bkp, "a WAN link joins two different sites (got %s twice)",
                             bw->items[0]->text);
        snprintf(kp, sizeof kp, "wan.%s-%s", s->sites[w->site_a], s->sites[w->site_b]);
        for (size_t j = 0; j < i; j++) {
            const scn_wan *o = &s->wan[j];
            if ((o->site_a == w->site_a && o->site_b == w->site_b) ||
                (o->site_a == w->site_b && o->site_b == w->site_a))
                return scni_fail(c, bw, kp, "duplicate WAN link between these sites (also wan[%zu])", j);
        }
        if ((r = get_trace(c, yt_get(it, "trace"), kp, "trace", 1, &w->trace)) < 0)
            return r;
        if ((r = both_keys(c, it, kp, "bandwidth", "trace")) < 0)
            return r;
        if ((r = scni_get_pos(c, it, kp, "bandwidth", SCN_UNIT_BANDWIDTH, w->trace == NULL,
                              w->trace ? trace_mean(w->trace) : 0, 0, 1e300, &w->bandwidth_Bps)) < 0)
            return r;
        if ((r = scni_get_pos(c, it, kp, "latency", SCN_UNIT_TIME, 0, 0, 1, 1e6, &w->latency_s)) < 0)
            return r;
        if ((r = get_outages(c, yt_get(it, "outages"), kp, &w->outages)) < 0)
            return r;
    }
    return 0;
}

/* A device group's `link` mapping l (key path PATH.link). */
static int conv_link(cv *c, const yt_node *l, const char *path, scn_link *L)
{
    enum { L_UP, L_DOWN, L_LATENCY, L_UP_TRACE, L_DOWN_TRACE, L_OUTAGES, L_N };
    static const char *const keys[L_N + 1] = {[L_UP] = "up",
                                              [L_DOWN] = "down",
                                              [L_LATENCY] = "latency",
                                              [L_UP_TRACE] = "up_trace",
                                              [L_DOWN_TRACE] = "down_trace",
                                              [L_OUTAGES] = "outages",
                                              [L_N] = NULL};
    const yt_node *v[L_N], *kn[L_N];
    char kp[300];
    int r;
    scni_join(kp, sizeof kp, path, "link");
    if ((r = scni_check_map_at(c, l, kp, keys, NULL, v, kn)) < 0)
        return r;
    if ((r = get_trace(c, v[L_UP_TRACE], kp, "up_trace", 1, &L->up_trace)) < 0)
        return r;
    if ((r = get_trace(c, v[L_DOWN_TRACE], kp, "down_trace", 1, &L->down_trace)) < 0)
        return r;
    if ((r = both_keys_at(c, v[L_UP], v[L_UP_TRACE], kp, "up", "up_trace")) < 0 ||
        (r = both_keys_at(c, v[L_DOWN], v[L_DOWN_TRACE], kp, "down", "down_trace")) < 0)
        return r;
    /* With a trace the constant is optional: it defaults to the trace's mean. */
    if ((r = scni_pos_at(c, l, v[L_UP], kp, "up", SCN_UNIT_BANDWIDTH, !L->up_trace,
                         L->up_trace ? trace_mean(L->up_trace) : 0, 0, 1e300, &L->up_Bps)) < 0)
        return r;
    if ((r = scni_pos_at(c, l, v[L_DOWN], kp, "down", SCN_UNIT_BANDWIDTH, !L->down_trace,
                         L->down_trace ? trace_mean(L->down_trace) : 0, 0, 1e300, &L->down_Bps)) < 0)
        return r;
    if ((r = scni_pos_at(c, l, v[L_LATENCY], kp, "latency", SCN_UNIT_TIME, 0, 0, 1, 1e6, &L->latency_s)) < 0)
        return r;
    /* a traced direction may end at 0 for good (a link that dies): its
     * capacity is the trace's at every instant, the constant only a summary */
    if ((!L->up_trace && !(L->up_Bps > 0)) || (!L->down_trace && !(L->down_Bps > 0)))
        return scni_fail(c, l, kp, "link capacity must be > 0");
    if ((r = get_outages(c, v[L_OUTAGES], kp, &L->outages)) < 0)
        return r;
    return 0;
}

static int conv_table(cv *c, const yt_node *tb, const char *kp, scn_group *g)
{
    char gt[80];
    if (tb->kind != YT_SEQ)
        return scni_fail(c, tb, kp, "expected a list of [batch, seconds] points (got %s)",
                         scni_got(tb, gt, sizeof gt));
    if (tb->n < 2 || tb->n > SCN_MAX_TABLE)
        return scni_fail(c, tb, kp, "needs 2 to %d [batch, seconds] points (got %zu)", SCN_MAX_TABLE, tb->n);
    g->table_batch = dp_calloc(tb->n, sizeof *g->table_batch);
    g->table_s = dp_calloc(tb->n, sizeof *g->table_s);
    if (!g->table_batch || !g->table_s)
        return scni_oom(c);
    for (size_t i = 0; i < tb->n; i++) {
        const yt_node *p = tb->items[i];
        char pk[400];
        snprintf(pk, sizeof pk, "%s[%zu]", kp, i);
        int bad = check_pair(c, p, pk, "a point [batch, seconds]");
        if (bad)
            return bad;
        double b, t;
        dp_err e;
        if (scn_parse_quantity(p->items[0]->text, SCN_UNIT_NUMBER, &b, &e))
            return scni_fail(c, p->items[0], pk, "%s", e.msg);
        if (b != floor(b) || b < 1 || b > SCN_MAX_BATCH)
            return scni_fail(c, p->items[0], pk, "batch must be a whole number from 1 to %d (got %s)",
                             SCN_MAX_BATCH, p->items[0]->text);
        if (scn_parse_quantity(p->items[1]->text, SCN_UNIT_TIME, &t, &e))
            return scni_fail(c, p->items[1], pk, "%s", e.msg);
        if (!(t >= scni_unit_floor(SCN_UNIT_TIME)) || t > 1e9)
            return scni_fail(c, p->items[1], pk, "seconds must be at least 1 ns and at most 1e9 (got %s)",
                             p->items[1]->text);
        /* Insertion sort by batch: tables are short. */
        size_t j = i;
        while (j > 0 && g->table_batch[j - 1] > b) {
            g->table_batch[j] = g->table_batch[j - 1];
            g->table_s[j] = g->table_s[j - 1];
            j--;
        }
        if (j > 0 && g->table_batch[j - 1] == b)
            return scni_fail(c, p->items[0], pk, "batch %g appears twice", b);
        g->table_batch[j] = b;
        g->table_s[j] = t;
        g->table_n = i + 1;
    }
    return 0;
}

/* FNV-1a: the group-name set's hash. */
static size_t name_hash(const char *t)
{
    uint64_t h = 14695981039346656037u;
    for (; *t; t++)
        h = (h ^ (unsigned char)*t) * 1099511628211u;
    return (size_t)h;
}

int scni_check_memory(cv *c, const scn_group *g, const yt_node *bn, const char *path)
{
    const scn_scenario *s = c->s;
    double state = s->model.state_factor * s->model.model_bytes;
    double need = state + g->batch * s->model.activation_bytes_per_sample;
    if (need > g->memory_bytes) {
        char a[40], b[40], m[40], act[40], kp[340];
        scni_join(kp, sizeof kp, path, "batch");
        scn_format_quantity(state, SCN_UNIT_BYTES, a, sizeof a);
        scn_format_quantity(need, SCN_UNIT_BYTES, b, sizeof b);
        scn_format_quantity(g->memory_bytes, SCN_UNIT_BYTES, m, sizeof m);
        scn_format_quantity(s->model.activation_bytes_per_sample, SCN_UNIT_BYTES, act, sizeof act);
        return scni_fail(
            c, bn, kp,
            "device '%s' cannot hold batch %d: model state %s + %d x %s activations = %s > memory %s "
            "(got %d)",
            g->name, g->batch, a, g->batch, act, b, m, g->batch);
    }
    return 0;
}

/* The name group j is addressed by: a drawn population's member by the
 * population's. */
static const char *set_name(const scn_scenario *s, size_t j)
{
    const scn_group *g = &s->groups[j];
    if (g->pop && s->pops[g->pop - 1].kind == SCN_POP_DRAWN)
        return s->pops[g->pop - 1].name;
    return g->name;
}

/* Room for `slots` (a power of two) in the group-name set. */
static int names_grow(cv *c, size_t slots)
{
    scni_name_slot *t = dp_calloc(slots, sizeof *t);
    if (!t)
        return DP_ENOMEM;
    for (size_t i = 0; c->names && i <= c->names_mask; i++)
        if (c->names[i].group) {
            size_t k = c->names[i].hash & (slots - 1);
            while (t[k].group)
                k = (k + 1) & (slots - 1);
            t[k] = c->names[i];
        }
    dp_free(c->names);
    c->names = t;
    c->names_mask = slots - 1;
    return 0;
}

int scni_name_add(cv *c, size_t gi, const yt_node *n, const char *kp)
{
    scn_scenario *s = c->s;
    const char *name = s->groups[gi].name;
    char gt[80];
    if (2 * (s->n_groups + 1) > c->names_mask + 1 && names_grow(c, 2 * (c->names_mask + 1)))
        return scni_oom(c);
    /* Slots keep the hash: a slot of another name is passed over without
     * reading that group (a cache miss per probe otherwise). */
    size_t h = name_hash(name);
    size_t slot = h & c->names_mask;
    for (; c->names[slot].group; slot = (slot + 1) & c->names_mask) {
        size_t j = c->names[slot].group - 1;
        if (c->names[slot].hash == (uint32_t)h && strcmp(set_name(s, j), name) == 0)
            return scni_fail(c, n, kp, "duplicate device name, also devices[%d] at line %d (got %s)",
                             s->groups[j].item, s->groups[j].line, scni_got(n, gt, sizeof gt));
    }
    c->names[slot] = (scni_name_slot){(uint32_t)h, (uint32_t)(gi + 1)};
    return 0;
}

int scni_reserve_groups(cv *c, size_t more)
{
    scn_scenario *s = c->s;
    if (more <= c->groups_cap - s->n_groups)
        return 0;
    size_t cap = s->n_groups + more;
    scn_group *g = dp_realloc(s->groups, cap * sizeof *g);
    if (!g)
        return scni_oom(c);
    s->groups = g;
    c->groups_cap = cap;
    return 0;
}

int scni_new_group(cv *c, size_t *gi)
{
    scn_scenario *s = c->s;
    if (s->n_groups == c->groups_cap) {
        size_t cap = c->groups_cap ? 2 * c->groups_cap : 16;
        scn_group *g = dp_realloc(s->groups, cap * sizeof *g);
        if (!g)
            return scni_oom(c);
        s->groups = g;
        c->groups_cap = cap;
    }
    *gi = s->n_groups++; /* from here scn_free sees it */
    memset(&s->groups[*gi], 0, sizeof s->groups[*gi]);
    return 0;
}

/* "PREFIX[i]SUFFIX", cut to fit buf (snprintf's bytes) without snprintf:
 * it was a tenth of converting a group. */
static void path_index(char *buf, size_t len, const char *prefix, size_t i, const char *suffix)
{
    if (len == 0)
        return;
    dp_indexed_name(buf, len, prefix, (long long)i);
    size_t k = strlen(buf), ls = strnlen(suffix, len - 1 - k);
    memcpy(buf + k, suffix, ls);
    buf[k + ls] = '\0';
}

static void group_path_of(const yt_node *nm, size_t item, char *path, size_t len)
{
    size_t ln;
    if (nm && nm->kind == YT_SCALAR && nm->text[0] && (ln = strlen(nm->text)) <= SCN_NAME_MAX &&
        !strpbrk(nm->text, ". []") && ln + 9 <= len) {
        memcpy(path, "devices.", 8);
        memcpy(path + 8, nm->text, ln + 1);
    } else {
        path_index(path, len, "devices", item, "");
    }
}

void scni_group_path(const yt_node *it, size_t item, char *path, size_t len)
{
    group_path_of(yt_get(it, "name"), item, path, len);
}

int scni_conv_group(cv *c, const yt_node *it, size_t item, size_t gi, int64_t *total)
{
    /* Every key of the mapping is found in one pass (scni_check_map_at);
     * the values are then read from v[], not looked up again. */
    enum {
        G_NAME,
        G_COUNT,
        G_KIND,
        G_SITE,
        G_MEMORY,
        G_BATCH,
        G_BATCH_TIME,
        G_BATCH_TABLE,
        G_PEAK_FLOPS,
        G_EFFICIENCY,
        G_OVERHEAD,
        G_NOISE,
        G_SPEED_TRACE,
        G_LINK,
        G_STRAGGLERS,
        G_AVAILABILITY,
        G_N
    };
    static const char *const keys[G_N + 1] = {[G_NAME] = "name",
                                              [G_COUNT] = "count",
                                              [G_KIND] = "kind",
                                              [G_SITE] = "site",
                                              [G_MEMORY] = "memory",
                                              [G_BATCH] = "batch",
                                              [G_BATCH_TIME] = "batch_time",
                                              [G_BATCH_TABLE] = "batch_table",
                                              [G_PEAK_FLOPS] = "peak_flops",
                                              [G_EFFICIENCY] = "efficiency",
                                              [G_OVERHEAD] = "overhead",
                                              [G_NOISE] = "noise",
                                              [G_SPEED_TRACE] = "speed_trace",
                                              [G_LINK] = "link",
                                              [G_STRAGGLERS] = "stragglers",
                                              [G_AVAILABILITY] = "availability",
                                              [G_N] = NULL};
    static const char *const req[] = {"name", "kind", "memory", "batch", "link", NULL};
    static const char *const kinds[] = {"gpu", "cpu", NULL};
    scn_scenario *s = c->s;
    scn_group *g = &s->groups[gi];
    const yt_node *v[G_N], *kn[G_N];
    char path[300], gt[80];
    int r = 0;
    scni_group_path(it, item, path, sizeof path);
    if ((r = scni_check_map_at(c, it, path, keys, req, v, kn)) < 0)
        return r;
    g->item = (int)item;
    g->line = it->line;
    g->column = it->column;
    g->site = -1;
    const yt_node *n;
    if ((r = scni_scalar_at(c, it, v[G_NAME], path, "name", 1, &n)) < 0)
        return r;
    char nkp[320];
    path_index(nkp, sizeof nkp, "devices", item, ".name");
    if (check_name(c, n, nkp))
        return DP_EINPUT;
    if (dup_str(c, &g->name, n->text) || (r = scni_name_add(c, gi, n, nkp)) < 0)
        return r < 0 ? r : DP_ENOMEM;
    group_path_of(n, item, path, sizeof path); /* devices.NAME: the name is valid */

    int64_t val;
    char kp[340];
    const yt_node *cn = v[G_COUNT];
    if ((r = scni_int_at(c, it, cn, path, "count", 0, 1, 0, SCN_MAX_DEVICES, "devices per group", &val)) < 0)
        return r;
    if (val == 0 && !(cn && cn->origin)) {
        scni_join(kp, sizeof kp, path, "count");
        return scni_fail(c, cn, kp, "must be >= 1 in a file (0 is allowed only through an override) (got 0)");
    }
    g->count = (int)val;
    *total += val;
    if (*total > SCN_MAX_DEVICES) { /* a group without count (1) is located by its mapping */
        scni_join(kp, sizeof kp, path, "count");
        return scni_fail(c, cn ? cn : it, kp,
                         "more than %d devices in total (the limit on devices) (got %lld so far)",
                         SCN_MAX_DEVICES, (long long)*total);
    }
    int kind;
    if ((r = enum_at(c, it, v[G_KIND], path, "kind", kinds, 0, &kind)) < 0)
        return r;
    g->kind = (scn_kind)kind;
    if ((r = scni_scalar_at(c, it, v[G_SITE], path, "site", 0, &n)) < 0)
        return r;
    if (r) {
        scni_join(kp, sizeof kp, path, "site");
        if ((g->site = scni_site_index(s, n->text)) < 0)
            return scni_unknown_site(c, n, kp);
    } else {
        g->site = s->n_sites ? 0 : -1;
    }
    if ((r = scni_pos_at(c, it, v[G_MEMORY], path, "memory", SCN_UNIT_BYTES, 1, 0, 0, 1e18,
                         &g->memory_bytes)) < 0)
        return r;
    const yt_node *bn = v[G_BATCH];
    if ((r = scni_int_at(c, it, bn, path, "batch", 1, 0, 1, SCN_MAX_BATCH, "batch size", &val)) < 0)
        return r;
    g->batch = (int)val;

    /* Compute model: exactly one of the three. */
    const yt_node *bt = v[G_BATCH_TIME], *tb = v[G_BATCH_TABLE], *pf = v[G_PEAK_FLOPS];
    int have = !yt_is_null(bt) + !yt_is_null(tb) + !yt_is_null(pf);
    if (have != 1)
        return scni_fail(c, have ? (!yt_is_null(tb) ? tb : pf) : it, path,
                         "give exactly one compute model: batch_time, batch_table or peak_flops (got %d)",
                         have);
    if (!yt_is_null(bt)) {
        g->compute = SCN_COMPUTE_MEASURED;
        if ((r = scni_pos_at(c, it, bt, path, "batch_time", SCN_UNIT_TIME, 1, 0, 0, 1e9, &g->batch_time_s)) <
            0)
            return r;
    } else if (!yt_is_null(tb)) {
        g->compute = SCN_COMPUTE_TABLE;
        scni_join(kp, sizeof kp, path, "batch_table");
        if ((r = conv_table(c, tb, kp, g)) < 0)
            return r;
    } else {
        g->compute = SCN_COMPUTE_DERIVED;
        if ((r = scni_pos_at(c, it, pf, path, "peak_flops", SCN_UNIT_FLOPS, 1, 0, 0, 1e21, &g->peak_flops)) <
            0)
            return r;
        if ((r = scni_pos_at(c, it, v[G_EFFICIENCY], path, "efficiency", SCN_UNIT_NUMBER, 1, 0, 0, 1,
                             &g->efficiency)) < 0)
            return r;
        if ((r = scni_pos_at(c, it, v[G_OVERHEAD], path, "overhead", SCN_UNIT_TIME, 0, 0, 1, 1e9,
                             &g->overhead_s)) < 0)
            return r;
    }
    if (g->compute != SCN_COMPUTE_DERIVED) {
        const int only[] = {G_EFFICIENCY, G_OVERHEAD};
        for (int k = 0; k < 2; k++)
            if (!yt_is_null(v[only[k]])) {
                scni_join(kp, sizeof kp, path, keys[only[k]]);
                return scni_fail(c, kn[only[k]], kp, "applies only with peak_flops (got %s)",
                                 scni_got(v[only[k]], gt, sizeof gt));
            }
    }
    if (g->compute == SCN_COMPUTE_DERIVED) {
        /* Each input is in range, but flops / (peak x efficiency) can still
         * be far below a nanosecond (or a subnormal), which no run honours. */
        double t1 = scn_batch_time(s, g, 1);
        if (!(t1 >= scni_unit_floor(SCN_UNIT_TIME)))
            return scni_fail(c, pf, path,
                             "the time of one sample, train_flops_per_sample / (peak_flops x efficiency) + "
                             "overhead, must be at least 1 ns (got %.3g s)",
                             t1);
    }
    if ((r = scni_pos_at(c, it, v[G_NOISE], path, "noise", SCN_UNIT_NUMBER, 0, 0, 1, SCN_MAX_NOISE,
                         &g->noise_cv)) < 0)
        return r;
    if ((r = get_trace(c, v[G_SPEED_TRACE], path, "speed_trace", 0, &g->speed_trace)) < 0)
        return r;
    if ((r = conv_link(c, v[G_LINK], path, &g->link)) < 0)
        return r;
    if ((r = get_stragglers(c, v[G_STRAGGLERS], path, &g->stragglers)) < 0)
        return r;
    if ((r = get_avail(c, v[G_AVAILABILITY], path, &g->avail)) < 0)
        return r;
    if (r == 0) { /* the top-level default, a copy of its own */
        g->avail = s->availability;
        if (s->availability.trace && !(g->avail.trace = trace_copy(s->availability.trace)))
            return scni_oom(c);
    }

    /* Cross checks that need the model and dataset. */
    if ((int64_t)g->batch > s->dataset.samples) {
        scni_join(kp, sizeof kp, path, "batch");
        return scni_fail(c, bn, kp, "batch is larger than the dataset (%lld samples) (got %d)",
                         (long long)s->dataset.samples, g->batch);
    }
    return scni_check_memory(c, g, bn, path);
}

static int any_failures(const scn_scenario *s);

static int conv_devices(cv *c, const yt_node *root)
{
    scn_scenario *s = c->s;
    const yt_node *l = yt_get(root, "devices");
    char g[80];
    int r = 0;
    if (l->kind != YT_SEQ)
        return scni_fail(c, l, "devices", "expected a list of device groups (got %s)",
                         scni_got(l, g, sizeof g));
    if (l->n == 0)
        return scni_fail(c, l, "devices", "no device groups (got an empty list)");
    if (l->n > SCN_MAX_DEVICES)
        return scni_fail(c, l, "devices", "more than %d device groups (got %zu)", SCN_MAX_DEVICES, l->n);
    /* Groups grow as items are read: a device table or a population makes
     * many groups from one item.  Room for one group per item from the
     * start: no regrowing when groups are written one by one. */
    size_t slots = 16;
    while (slots < 2 * (l->n + 1))
        slots *= 2;
    if (!(s->groups = dp_calloc(l->n, sizeof *s->groups))) /* scn_free frees it */
        return scni_oom(c);
    c->groups_cap = l->n;
    if (names_grow(c, slots))
        return scni_oom(c);
    int64_t total = 0;
    for (size_t i = 0; i < l->n && r >= 0; i++) {
        const yt_node *it = l->items[i];
        size_t gi;
        int what = scni_item_kind(it);
        if (what == SCNI_ITEM_TABLE)
            r = scni_conv_table(c, it, i, &total);
        else if (what == SCNI_ITEM_POPULATION)
            r = scni_conv_population(c, it, i, &total);
        else if ((r = scni_new_group(c, &gi)) >= 0)
            r = scni_conv_group(c, it, i, gi, &total);
    }
    dp_free(c->names);
    c->names = NULL;
    if (r < 0)
        return r;
    if (total == 0)
        return scni_fail(c, l, "devices", "no devices: every group has count 0 (got %zu groups)",
                         s->n_groups);
    if (!(s->devices = dp_calloc((size_t)total, sizeof *s->devices)))
        return scni_oom(c);
    dp_prefault *pf = dp_prefault_start(s->devices, (size_t)total * sizeof *s->devices);
    size_t k = 0;
    for (size_t gi = 0; gi < s->n_groups; gi++) {
        const scn_group *gr = &s->groups[gi];
        for (int j = 0; j < gr->count; j++, k++) {
            s->devices[k].group = (int)gi;
            s->devices[k].index = j;
            if (gr->count == 1) { /* a copy, not snprintf: 100,000 groups */
                size_t ln = strnlen(gr->name, sizeof s->devices[k].name - 1);
                memcpy(s->devices[k].name, gr->name, ln);
                s->devices[k].name[ln] = 0;
            } else
                dp_indexed_name(s->devices[k].name, sizeof s->devices[k].name, gr->name, j);
        }
    }
    dp_prefault_wait(pf);
    s->n_devices = k;
    s->failures = any_failures(s);
    return 0;
}

/* `policies:` is each policy's own (policy_check_scenario validates it
 * against the registry); the loader only keeps it, as a mapping. */
static int conv_policies(cv *c, const yt_node *root)
{
    const yt_node *p = yt_get(root, "policies");
    char g[80];
    if (yt_is_null(p))
        return 0;
    if (p->kind != YT_MAP)
        return scni_fail(c, p, "policies", "expected a mapping of policy names (got %s)",
                         scni_got(p, g, sizeof g));
    c->s->policies = p;
    return 0;
}

/* `learning:` is the learner's own (sim/learn validates it when a run
 * starts or `check` runs); the loader only keeps it, as a mapping. */
static int conv_learning(cv *c, const yt_node *root)
{
    const yt_node *p = yt_get(root, "learning");
    char g[80];
    if (yt_is_null(p))
        return 0;
    if (p->kind != YT_MAP)
        return scni_fail(c, p, "learning", "expected a mapping (data, model, partition, ...) (got %s)",
                         scni_got(p, g, sizeof g));
    c->s->learning = p;
    return 0;
}

static int convert(cv *c, const yt_node *root)
{
    static const char *const keys[] = {"name",    "description", "model",        "dataset", "training",
                                       "server",  "network",     "interconnect", "sites",   "wan",
                                       "devices", "policies",    "availability", "learning", NULL};
    static const char *const req[] = {"model", "dataset", "training", "devices", NULL};
    int r;
    if ((r = scni_check_map(c, root, "", keys, req)) < 0)
        return r;
    const yt_node *n;
    if ((r = get_text(c, root, "", "name", "unnamed", &c->s->name)) < 0)
        return r;
    if ((r = scni_get_scalar(c, root, "", "description", 0, &n)) < 0)
        return r;
    if ((r = conv_model(c, root)) < 0 || (r = conv_dataset_training(c, root)) < 0 ||
        (r = conv_sites(c, root)) < 0 || (r = conv_server_network(c, root)) < 0 ||
        (r = conv_wan(c, root)) < 0 ||
        (c->s->availability.data_persists = 1,
         r = get_avail(c, yt_get(root, "availability"), "", &c->s->availability)) < 0 ||
        (r = conv_devices(c, root)) < 0 || (r = conv_policies(c, root)) < 0 ||
        (r = conv_learning(c, root)) < 0)
        return r;
    return 0;
}

/* ---- public ------------------------------------------------------------ */

uint64_t scn_hash(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)p[i];
        h *= 1099511628211ULL;
    }
    return h;
}

scn_scenario *scn_load_string(const char *name, const char *text, size_t len, const char *base_dir,
                              const scn_override *ov, size_t n_ov, dp_err *err)
{
    return scn_load_string_files(name, text, len, base_dir, NULL, 0, ov, n_ov, err);
}

static scn_scenario *load_parsed(const char *name, const char *text, size_t len, char *own,
                                 const char *base_dir, const scn_file *files, size_t n_files,
                                 const scn_override *ov, size_t n_ov, dp_err *err);

/* The loader.  `own`, when not NULL, is text itself, NUL-terminated and
 * dp_malloc'd: the scenario keeps it as s->text instead of a copy (a file
 * just read), and it is freed on every failure. */
static scn_scenario *load(const char *name, const char *text, size_t len, char *own, const char *base_dir,
                          const scn_file *files, size_t n_files, const scn_override *ov, size_t n_ov,
                          dp_err *err)
{
    scn_scenario *s = load_parsed(name, text, len, own, base_dir, files, n_files, ov, n_ov, err);
    if (!s)
        dp_free(own);
    return s;
}

scn_scenario *scn_load_string_files(const char *name, const char *text, size_t len, const char *base_dir,
                                    const scn_file *files, size_t n_files, const scn_override *ov,
                                    size_t n_ov, dp_err *err)
{
    return load(name, text, len, NULL, base_dir, files, n_files, ov, n_ov, err);
}

/* load's work; on failure `own` is the caller's to free, on success the
 * scenario's. */
static scn_scenario *load_parsed(const char *name, const char *text, size_t len, char *own,
                                 const char *base_dir, const scn_file *files, size_t n_files,
                                 const scn_override *ov, size_t n_ov, dp_err *err)
{
    if (!name)
        name = "<string>";
    if (!text)
        len = 0;
    if (len > (size_t)SCN_MAX_FILE_BYTES) {
        dp_err_set(err, DP_EINPUT, "%s: scenario is larger than the 64 MiB limit (got %zu bytes)", name, len);
        return NULL;
    }
    if (n_ov && !ov) {
        dp_err_set(err, DP_EINPUT, "%s: %zu overrides but no override list", name, n_ov);
        return NULL;
    }
    yt_doc *doc = yt_parse(name, text, len, err);
    if (!doc)
        return NULL;
    const yt_node *root = yt_root(doc);
    char g[80];
    if (!root) {
        dp_err_set(err, DP_EINPUT, "%s:1:1: empty scenario file (no YAML document)", name);
        yt_free(doc);
        return NULL;
    }
    if (root->kind != YT_MAP) {
        dp_err_set(err, DP_EINPUT, "%s:%d:%d: the top level must be a mapping of keys (got %s)", name,
                   root->line, root->column, scni_got(root, g, sizeof g));
        yt_free(doc);
        return NULL;
    }
    for (size_t i = 0; i < n_ov; i++) {
        if (yt_override(doc, ov[i].key, ov[i].value, err)) {
            yt_free(doc);
            return NULL;
        }
    }
    scn_scenario *s = dp_calloc(1, sizeof *s);
    cv c = {name, base_dir, err, s, files, files ? n_files : 0, NULL, 0, 0};
    if (!s) {
        yt_free(doc);
        scni_oom(&c);
        return NULL;
    }
    int r = 0;
    if (!(s->path = dp_strdup(name)) || !(s->text = own ? own : dp_malloc(len + 1)))
        r = scni_oom(&c);
    if (r == 0) {
        if (!own && len)
            memcpy(s->text, text, len);
        s->text[len] = '\0';
        s->text_hash = scn_hash(text, len);
        r = convert(&c, yt_root(doc));
    }
    s->tree = doc; /* policies' options are read from it later */
    if (r < 0) {
        if (s->text == own)
            s->text = NULL; /* the caller frees it */
        scn_free(s);
        return NULL;
    }
    return s;
}

scn_scenario *scn_load_file(const char *path, const scn_override *ov, size_t n_ov, dp_err *err)
{
    if (!path || !*path) {
        dp_err_set(err, DP_EINPUT, "scenario file name is empty");
        return NULL;
    }
    size_t len = 0;
    char *text = dp_read_file(path, "scenario file", SCN_MAX_FILE_BYTES, &len, err);
    if (!text)
        return NULL;
    /* Traces resolve against the scenario's directory. */
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == path)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    return load(path, text, len, text, dir, NULL, 0, ov, n_ov, err); /* the scenario keeps text */
}

scn_scenario *scn_load_builtin(const char *which, const scn_override *ov, size_t n_ov, dp_err *err)
{
    if (!which || strcmp(which, "paper-testbed") != 0) {
        dp_err_set(err, DP_EINPUT, "no built-in scenario named '%s' (have: paper-testbed)",
                   which ? which : "");
        return NULL;
    }
    return scn_load_string("<builtin:paper-testbed>", dpsim_builtin_paper_testbed,
                           dpsim_builtin_paper_testbed_len, NULL, ov, n_ov, err);
}

static void outages_free(scn_outages *o)
{
    dp_free(o->start_s);
    dp_free(o->end_s);
}

static void link_free(scn_link *l)
{
    trace_free(l->up_trace);
    trace_free(l->down_trace);
    outages_free(&l->outages);
}

static int any_failures(const scn_scenario *s)
{
    for (size_t i = 0; i < s->n_groups; i++)
        if (s->groups[i].count > 0 && (s->groups[i].avail.mtbf_s > 0 || s->groups[i].avail.trace))
            return 1;
    return 0;
}

int scn_has_failures(const scn_scenario *s)
{
    return s ? s->failures : 0;
}

int scn_is_dynamic(const scn_scenario *s)
{
    if (scn_has_failures(s))
        return 1;
    for (size_t i = 0; s && i < s->n_groups; i++)
        if (s->groups[i].count > 0 && (s->groups[i].stragglers.every_s > 0 || s->groups[i].link.outages.n))
            return 1;
    for (size_t i = 0; s && i < s->n_wan; i++)
        if (s->wan[i].outages.n)
            return 1;
    return 0;
}

void scn_free(scn_scenario *s)
{
    if (!s)
        return;
    dp_free(s->name);
    dp_free(s->path);
    dp_free(s->text);
    dp_free(s->model.name);
    dp_free(s->dataset.name);
    for (size_t i = 0; i < s->n_sites; i++)
        dp_free(s->sites[i]);
    dp_free(s->sites);
    for (size_t i = 0; i < s->n_wan; i++) {
        trace_free(s->wan[i].trace);
        outages_free(&s->wan[i].outages);
    }
    trace_free(s->availability.trace);
    dp_free(s->wan);
    for (size_t i = 0; i < s->n_groups; i++) {
        scn_group *g = &s->groups[i];
        if (g->pooled) /* name in its population's block, nothing else owned */
            continue;
        dp_free(g->name);
        dp_free(g->table_batch);
        dp_free(g->table_s);
        trace_free(g->speed_trace);
        trace_free(g->avail.trace);
        link_free(&g->link);
    }
    dp_free(s->groups);
    scni_free_pops(s);
    dp_free(s->devices);
    yt_free(s->tree);
    for (size_t i = 0; i < s->n_files; i++) {
        dp_free(s->files[i].name);
        dp_free(s->files[i].path);
        dp_free(s->files[i].data);
    }
    dp_free(s->files);
    dp_free(s);
}

double scn_batch_time(const scn_scenario *s, const scn_group *g, int n)
{
    if (!s || !g || n < 1)
        return 0;
    switch (g->compute) {
    case SCN_COMPUTE_MEASURED: {
        /* The paper's ceil model: a short batch costs a full one. */
        double batches = ceil((double)n / (double)g->batch);
        return batches * g->batch_time_s;
    }
    case SCN_COMPUTE_TABLE: {
        const double *b = g->table_batch, *t = g->table_s;
        size_t m = g->table_n;
        if (m == 0)
            return 0;
        if (m == 1)
            return t[0] * n / b[0];
        size_t k = 0; /* segment [k, k+1] used, clamped to the ends for extrapolation */
        while (k + 2 < m && b[k + 1] < n)
            k++;
        double v = t[k] + (t[k + 1] - t[k]) * ((double)n - b[k]) / (b[k + 1] - b[k]);
        /* Extrapolating below the first point can reach 0 or less; fall
         * back to proportional scaling of the first point there. */
        if (!(v > 0))
            v = t[0] * n / b[0];
        return v;
    }
    case SCN_COMPUTE_DERIVED:
    default:
        return g->overhead_s + (double)n * s->model.train_flops_per_sample / (g->peak_flops * g->efficiency);
    }
}

/* ---- options of plug-ins ------------------------------------------------ */
/* The same checks and messages as the loader's own keys, for mappings the
 * loader keeps without knowing their keys (policies.NAME). */

const yt_node *scn_policies(const scn_scenario *s)
{
    return s ? s->policies : NULL;
}

const yt_node *scn_learning(const scn_scenario *s)
{
    return s ? s->learning : NULL;
}

static cv reader(const scn_scenario *s, dp_err *err)
{
    return (cv){s->path ? s->path : "scenario", NULL, err, (scn_scenario *)s, NULL, 0, NULL, 0, 0};
}

int scn_read_fail(const scn_scenario *s, const yt_node *n, const char *path, dp_err *err, const char *fmt,
                  ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cv c = reader(s, err);
    return scni_fail(&c, n, path, "%s", msg);
}

const char *scn_read_got(const yt_node *n, char *buf, size_t len)
{
    return scni_got(n, buf, len);
}

int scn_read_keys(const scn_scenario *s, const yt_node *m, const char *path, const char *const *keys,
                  dp_err *err)
{
    cv c = reader(s, err);
    return scni_check_map(&c, m, path, keys, NULL);
}

int scn_read_quantity(const scn_scenario *s, const yt_node *m, const char *path, const char *key, scn_unit u,
                      double def, int nonneg, double max, double *out, dp_err *err)
{
    cv c = reader(s, err);
    return scni_get_pos(&c, m, path, key, u, 0, def, nonneg, max, out);
}

int scn_read_int(const scn_scenario *s, const yt_node *m, const char *path, const char *key, int64_t def,
                 double lo, double hi, int64_t *out, dp_err *err)
{
    cv c = reader(s, err);
    return scni_get_int(&c, m, path, key, 0, def, lo, hi, "this key", out);
}

int scn_read_bool(const scn_scenario *s, const yt_node *m, const char *path, const char *key, int def,
                  int *out, dp_err *err)
{
    cv c = reader(s, err);
    return get_bool(&c, m, path, key, def, out);
}

int scn_read_enum(const scn_scenario *s, const yt_node *m, const char *path, const char *key,
                  const char *const *names, int def, int *out, dp_err *err)
{
    cv c = reader(s, err);
    return get_enum(&c, m, path, key, names, def, out);
}
