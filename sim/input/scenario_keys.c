/* scenario_keys.c: the loader's messages and key readers (scenario.c
 * lists the loader's files), and the same readers for plug-ins' options. */
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

/* ---- messages ---------------------------------------------------------- */

void scni_where(const cv *c, const yt_node *n, char *buf, size_t len)
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
    scni_where(c, n, w, sizeof w);
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

/* A bare number where a unit is expected is accepted (in the base unit)
 * but noted, so `check` can say "20 -> 20 s (no unit)": the first
 * SCN_UNITLESS_MAX of them, and how many in all. */
static void note_unitless(cv *c, const yt_node *n, const char *path, const char *key, scn_unit u)
{
    static const char *const base[] = {[SCN_UNIT_TIME] = "s",
                                       [SCN_UNIT_BANDWIDTH] = "bit/s",
                                       [SCN_UNIT_BYTES] = "B",
                                       [SCN_UNIT_RATE] = "B/s"};
    scn_scenario *s = c->s;
    s->n_unitless_all++;
    if (s->n_unitless >= SCN_UNITLESS_MAX)
        return;
    char w[400], kp[300], line[800];
    scni_where(c, n, w, sizeof w);
    scni_join(kp, sizeof kp, path, key);
    const char *b = (size_t)u < sizeof base / sizeof *base && base[u] ? base[u] : "";
    snprintf(line, sizeof line, "%s: %s: %s -> %s %s (no unit)", w, kp, n->text, n->text, b);
    char *copy = dp_strdup(line);
    if (copy)
        s->unitless[s->n_unitless++] = copy;
}

void scni_note_unit(cv *c, const yt_node *n, scn_unit u)
{
    scn_scenario *s = c->s;
    if (!c->loading || !n || !n->origin || !s || strncmp(n->origin, "override ", 9) != 0)
        return; /* not an override's node (a preset's value, say) */
    for (size_t i = 0; i < s->n_ov_units; i++)
        if (s->ov_units[i].origin == n->origin) /* one string per override */
            return;
    if (s->n_ov_units < SCN_OV_UNITS_MAX) {
        s->ov_units[s->n_ov_units].origin = n->origin;
        s->ov_units[s->n_ov_units++].unit = (int)u;
    }
}

/* "override KEY=VALUE" is origin */
static int origin_is(const char *origin, const char *key, const char *value)
{
    static const char pre[] = "override ";
    size_t kl = strlen(key);
    return !strncmp(origin, pre, sizeof pre - 1) && !strncmp(origin + sizeof pre - 1, key, kl) &&
           origin[sizeof pre - 1 + kl] == '=' && !strcmp(origin + sizeof pre + kl, value);
}

static const char *si_unit_name(scn_unit u)
{
    switch (u) {
    case SCN_UNIT_BANDWIDTH:
    case SCN_UNIT_RATE:
        return "B/s";
    case SCN_UNIT_BYTES:
        return "B";
    case SCN_UNIT_TIME:
        return "s";
    case SCN_UNIT_FLOPS:
        return "FLOP/s";
    default:
        return "";
    }
}

int scn_value_si(const scn_scenario *s, const char *key, const char *value, double *si, const char **unit)
{
    *si = NAN;
    *unit = NULL;
    if (!key || !value)
        return 0;
    for (size_t i = 0; s && i < s->n_ov_units; i++)
        if (origin_is(s->ov_units[i].origin, key, value) &&
            scn_parse_quantity(value, (scn_unit)s->ov_units[i].unit, si, NULL) == 0) {
            *unit = si_unit_name((scn_unit)s->ov_units[i].unit);
            return 1;
        }
    size_t nl = units_number_len(value);
    if (nl && nl == strlen(value)) { /* bare, and no reader said its unit */
        double x = strtod(value, NULL);
        if (isfinite(x))
            *si = x;
        return isfinite(x);
    }
    /* a unit suffix belongs to one kind only ("Mbps", "MiB", "ms") */
    static const scn_unit kinds[] = {SCN_UNIT_BANDWIDTH, SCN_UNIT_RATE, SCN_UNIT_BYTES, SCN_UNIT_TIME,
                                     SCN_UNIT_FLOPS};
    for (size_t k = 0; nl && k < sizeof kinds / sizeof *kinds; k++)
        if (scn_parse_quantity(value, kinds[k], si, NULL) == 0 && isfinite(*si)) {
            *unit = si_unit_name(kinds[k]);
            return 1;
        }
    *si = NAN;
    return 0;
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
    scni_note_unit(c, n, u);
    /* FLOPS keys are counts or rates people write bare (1.8e9), and a key
     * named for its unit (sample_bytes, bytes_per_param, *_s) says it */
    size_t kl = strlen(key);
    int named = strstr(key, "bytes") || (kl > 2 && !strcmp(key + kl - 2, "_s"));
    if ((u == SCN_UNIT_TIME || u == SCN_UNIT_BANDWIDTH || u == SCN_UNIT_RATE || u == SCN_UNIT_BYTES) &&
        !named && units_number_len(n->text) == strlen(n->text))
        note_unitless(c, n, path, key, u);
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

int scni_get_bool(cv *c, const yt_node *m, const char *path, const char *key, int def, int *out)
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
int scni_enum_at(cv *c, const yt_node *m, const yt_node *v, const char *path, const char *key,
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

int scni_get_enum(cv *c, const yt_node *m, const char *path, const char *key, const char *const *names,
                  int def, int *out)
{
    return scni_enum_at(c, m, yt_get(m, key), path, key, names, def, out);
}

/* Names used as addresses (devices, sites): 1-80 of [A-Za-z0-9_+-]. */
int scni_check_name(cv *c, const yt_node *n, const char *kp)
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

int scni_dup_str(cv *c, char **dst, const char *src)
{
    if (!(*dst = dp_strdup(src)))
        return scni_oom(c);
    return 0;
}

/* A free-text name (scenario, model, dataset): printed in headers and
 * stored, so control characters (which would drive the terminal) are
 * refused here; the message shows them escaped. */
int scni_get_text(cv *c, const yt_node *m, const char *path, const char *key, const char *def, char **dst)
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
    return scni_dup_str(c, dst, r ? n->text : def);
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

const yt_node *scn_compression(const scn_scenario *s)
{
    return s ? s->compression : NULL;
}

const yt_node *scn_jobs(const scn_scenario *s)
{
    return s ? s->jobs : NULL;
}

const yt_node *scn_scheduler(const scn_scenario *s)
{
    return s ? s->scheduler : NULL;
}

static cv reader(const scn_scenario *s, dp_err *err)
{
    return (cv){s->path ? s->path : "scenario", NULL, err, (scn_scenario *)s, NULL, 0, NULL, 0, 0, 0};
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
    return scni_get_bool(&c, m, path, key, def, out);
}

int scn_read_enum(const scn_scenario *s, const yt_node *m, const char *path, const char *key,
                  const char *const *names, int def, int *out, dp_err *err)
{
    cv c = reader(s, err);
    return scni_get_enum(&c, m, path, key, names, def, out);
}
