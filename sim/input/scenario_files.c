/* scenario_files.c: files and traces a scenario names, and the dynamic
 * world's keys (outages, stragglers, availability); scenario.c lists the
 * loader's files. */
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

/* ---- files ------------------------------------------------------------- */

static int file_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

/* A trace: `key: FILE` or `key: { file, format, mean, loop, bin }`.
 * `bits`: a link trace (CSV in bits/s, mean a bandwidth); else a speed
 * factor trace (CSV factor, mean a plain number). */
int scni_get_trace(cv *c, const yt_node *n, const char *path, const char *key, int bits, trace **out)
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
        if ((r = scni_get_enum(c, n, kp, "format", fmts, 0, &fmt)) < 0)
            return r;
        if ((r = scni_get_pos(c, n, kp, "mean", bits ? SCN_UNIT_BANDWIDTH : SCN_UNIT_NUMBER, 0, 0, 0, 1e300,
                              &mean)) < 0)
            return r;
        if ((r = scni_get_bool(c, n, kp, "loop", -1, &loop)) < 0)
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
int scni_check_pair(cv *c, const yt_node *p, const char *pk, const char *what)
{
    char g[80];
    if (p->kind != YT_SEQ || p->n != 2 || p->items[0]->kind != YT_SCALAR || p->items[1]->kind != YT_SCALAR)
        return scni_fail(c, p, pk, "expected %s (got %s)", what, scni_got(p, g, sizeof g));
    return 0;
}

/* `outages: [[start, end], ...]`: times, start < end, in order, disjoint. */
int scni_get_outages(cv *c, const yt_node *l, const char *path, scn_outages *o)
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
        int bad = scni_check_pair(c, p, pk, "an interval [start, end]");
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
int scni_get_stragglers(cv *c, const yt_node *n, const char *path, scn_stragglers *st)
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
int scni_get_avail(cv *c, const yt_node *n, const char *path, scn_avail *a)
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
    if ((r = scni_get_trace(c, yt_get(n, "trace"), kp, "trace", 0, &a->trace)) < 0)
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
    if ((r = scni_get_bool(c, n, kp, "data_persists", 1, &a->data_persists)) < 0)
        return r;
    return 1;
}
