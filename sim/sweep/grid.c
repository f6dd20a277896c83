/* grid.c: a sweep's grid (sweep.h): --vary specs expanded into values, the
 * cartesian product of the axes as points, shards, and each point checked
 * against the scenario.  Pure: no processes, no database, so every part is
 * testable alone.
 *
 * Invariant: the text of every value and point is a pure function of the
 * command line and the scenario text (no clock, no locale: values are
 * formatted with "%.10g" of doubles parsed by strtod in the C locale the CLI
 * never changes).
 */
#include "sweep/sweep_impl.h"

#include "json.h"
#include "policy/runtime.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- grid -------------------------------------------------------------- */

typedef struct grid_axis {
    char *key, *spec;
    char **values;
    size_t n;
} grid_axis;

struct sweep_grid {
    grid_axis ax[SWEEP_MAX_AXES];
    size_t n_axes;
    size_t n_points;
};

sweep_grid *sweep_grid_new(dp_err *err)
{
    sweep_grid *g = dp_calloc(1, sizeof *g);
    if (!g) {
        dp_err_set(err, DP_ENOMEM, "out of memory creating a sweep grid");
        return NULL;
    }
    g->n_points = 1;
    return g;
}

static void strings_free(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dp_free(v[i]);
    dp_free(v);
}

void sweep_grid_free(sweep_grid *g)
{
    if (!g)
        return;
    for (size_t a = 0; a < g->n_axes; a++) {
        dp_free(g->ax[a].key);
        dp_free(g->ax[a].spec);
        strings_free(g->ax[a].values, g->ax[a].n);
    }
    dp_free(g);
}

/* A growable list of value strings. */
typedef struct vlist {
    char **v;
    size_t n, cap;
} vlist;

static int vlist_push(vlist *l, const char *s, size_t len)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        char **nv = dp_realloc(l->v, cap * sizeof *nv);
        if (!nv)
            return DP_ENOMEM;
        l->v = nv;
        l->cap = cap;
    }
    char *c = dp_malloc(len + 1);
    if (!c)
        return DP_ENOMEM;
    memcpy(c, s, len);
    c[len] = '\0';
    l->v[l->n++] = c;
    return 0;
}

static int is_space(char c)
{
    return c == ' ' || c == '\t';
}

/* A range endpoint or step: "NUMBER[UNIT]" with nothing else around it
 * but blanks.  unit gets the unit text ("" without). */
typedef struct qty {
    char text[64]; /* trimmed */
    double num;    /* the number as written */
    char unit[24];
} qty;

static int parse_qty(const char *s, size_t len, qty *q)
{
    while (len && is_space(*s))
        s++, len--;
    while (len && is_space(s[len - 1]))
        len--;
    if (len == 0 || len >= sizeof q->text)
        return -1;
    memcpy(q->text, s, len);
    q->text[len] = '\0';
    size_t nl = units_number_len(q->text);
    if (!nl)
        return -1;
    char numbuf[64];
    memcpy(numbuf, q->text, nl);
    numbuf[nl] = '\0';
    errno = 0;
    q->num = strtod(numbuf, NULL);
    if (errno || !isfinite(q->num))
        return -1;
    const char *u = q->text + nl;
    while (is_space(*u))
        u++;
    size_t ul = strlen(u);
    if (ul >= sizeof q->unit)
        return -1;
    for (size_t i = 0; i < ul; i++) {
        char c = u[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '/'))
            return -1;
    }
    memcpy(q->unit, u, ul + 1);
    return 0;
}

/* Units a range may use, tried in this order (the first kind that accepts
 * both endpoints wins; no unit text is valid in two kinds). */
static const scn_unit range_units[] = {SCN_UNIT_BANDWIDTH, SCN_UNIT_RATE, SCN_UNIT_BYTES, SCN_UNIT_TIME,
                                       SCN_UNIT_FLOPS};

static int emit_value(vlist *l, double v, const char *unit)
{
    if (v == 0)
        v = 0; /* no "-0" */
    char buf[96];
    int n = snprintf(buf, sizeof buf, "%.10g%s", v, unit);
    if (n < 0 || (size_t)n >= sizeof buf)
        return DP_ENOMEM;
    return vlist_push(l, buf, (size_t)n);
}

/* Expand "A..B[:step=S | :log:K | :lin:K]" (dots at `dots`). */
static int expand_range(const char *arg, const char *spec, const char *dots, vlist *out, dp_err *err)
{
    qty a, b, step;
    const char *rest = dots + 2;
    const char *colon = strchr(rest, ':');
    size_t blen = colon ? (size_t)(colon - rest) : strlen(rest);
    if (parse_qty(spec, (size_t)(dots - spec), &a) || parse_qty(rest, blen, &b))
        return dp_err_set(err, DP_EINPUT,
                          "--vary %s: bad range '%s' (want START..END[:step=S|:log:K|:lin:K] with numbers, "
                          "e.g. 1..8, 10Mbps..1Gbps:log:5)",
                          arg, spec);
    enum { LIN_STEP, LIN_COUNT, LOG_COUNT } mode = LIN_STEP;
    long count = 0;
    int have_step = 0;
    if (colon) {
        const char *o = colon + 1;
        if (strncmp(o, "step=", 5) == 0) {
            if (parse_qty(o + 5, strlen(o + 5), &step))
                return dp_err_set(err, DP_EINPUT, "--vary %s: bad step '%s' (want a number, e.g. step=2)",
                                  arg, o + 5);
            have_step = 1;
        } else if (strncmp(o, "log:", 4) == 0 || strncmp(o, "lin:", 4) == 0) {
            mode = o[1] == 'o' ? LOG_COUNT : LIN_COUNT;
            char *end;
            errno = 0;
            count = strtol(o + 4, &end, 10);
            if (errno || end == o + 4 || *end || count < 2 || count > SWEEP_MAX_VALUES)
                return dp_err_set(err, DP_EINPUT, "--vary %s: bad count '%s' after '%.4s' (want 2 to %d)",
                                  arg, o + 4, o, SWEEP_MAX_VALUES);
        } else {
            return dp_err_set(err, DP_EINPUT,
                              "--vary %s: unknown range option ':%s' (want :step=S, :log:K or :lin:K)", arg,
                              o);
        }
    }
    /* Units: on both ends or on neither, so "1..8Gbps" cannot silently
     * mean 1 bit/s to 8 Gbit/s. */
    if ((a.unit[0] != '\0') != (b.unit[0] != '\0'))
        return dp_err_set(err, DP_EINPUT,
                          "--vary %s: give units on both ends of the range or on neither (got '%s' and '%s')",
                          arg, a.text, b.text);
    if (have_step && (a.unit[0] != '\0') != (step.unit[0] != '\0'))
        return dp_err_set(err, DP_EINPUT, "--vary %s: the step needs %s unit, like the range (got step=%s)",
                          arg, a.unit[0] ? "a" : "no", step.text);
    double av, bv, sv = 1, unit_v = 1;
    const char *unit = a.unit;
    if (!a.unit[0]) {
        av = a.num;
        bv = b.num;
        if (have_step)
            sv = step.num;
    } else {
        size_t k, nk = sizeof range_units / sizeof range_units[0];
        char one[32];
        snprintf(one, sizeof one, "1%s", a.unit);
        for (k = 0; k < nk; k++) {
            scn_unit u = range_units[k];
            if (scn_parse_quantity(a.text, u, &av, NULL) == 0 &&
                scn_parse_quantity(b.text, u, &bv, NULL) == 0 &&
                scn_parse_quantity(one, u, &unit_v, NULL) == 0 &&
                (!have_step || scn_parse_quantity(step.text, u, &sv, NULL) == 0))
                break;
        }
        if (k == nk)
            return dp_err_set(err, DP_EINPUT,
                              "--vary %s: units of '%s', '%s'%s%s do not fit together (want one kind: "
                              "bandwidth, rate, bytes, time or FLOPS)",
                              arg, a.text, b.text, have_step ? " and step " : "", have_step ? step.text : "");
        /* Work in the start's unit so values print as the user wrote them. */
        av /= unit_v;
        bv /= unit_v;
        sv /= unit_v;
    }
    if (!isfinite(av) || !isfinite(bv) || !isfinite(sv))
        return dp_err_set(err, DP_EINPUT, "--vary %s: range values must be finite", arg);
    if (av > bv)
        return dp_err_set(err, DP_EINPUT, "--vary %s: the range starts above its end (%s > %s)", arg, a.text,
                          b.text);
    if (mode == LIN_STEP) {
        if (!(sv > 0))
            return dp_err_set(err, DP_EINPUT, "--vary %s: the step must be positive (got %s)", arg,
                              step.text);
        /* The tolerance keeps 0..1:step=0.1 ending at 1 despite 0.1's
         * binary rounding. */
        double nd = floor((bv - av) / sv + 1e-9) + 1;
        if (nd > SWEEP_MAX_VALUES)
            return dp_err_set(err, DP_EINPUT, "--vary %s: %.3g values, more than the limit %d", arg, nd,
                              SWEEP_MAX_VALUES);
        for (long i = 0; i < (long)nd; i++)
            if (emit_value(out, av + (double)i * sv, unit))
                return dp_err_set(err, DP_ENOMEM, "out of memory expanding --vary %s", arg);
        return 0;
    }
    if (mode == LOG_COUNT && !(av > 0))
        return dp_err_set(err, DP_EINPUT, "--vary %s: a log range needs a start above 0 (got %s)", arg,
                          a.text);
    for (long i = 0; i < count; i++) {
        double f = (double)i / (double)(count - 1), v;
        if (i == count - 1)
            v = bv; /* exactly the end, not pow's rounding of it */
        else if (mode == LOG_COUNT)
            v = av * pow(bv / av, f);
        else
            v = av + f * (bv - av);
        if (emit_value(out, v, unit))
            return dp_err_set(err, DP_ENOMEM, "out of memory expanding --vary %s", arg);
    }
    return 0;
}

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

/* Expand a SPEC into values. */
static int expand_spec(const char *arg, const char *spec, vlist *out, dp_err *err)
{
    const char *dots = strstr(spec, "..");
    qty probe, probe2;
    /* A range only when a number stands before the dots: "../t.csv" is a
     * (one-value) list of a path. */
    if (dots && parse_qty(spec, (size_t)(dots - spec), &probe) == 0) {
        if (dots[2] == '.') /* 1...3, as some languages write it */
            return dp_err_set(err, DP_EINPUT, "--vary %s: a range has two dots: %.*s..%s", arg,
                              (int)(dots - spec), spec, dots + strspn(dots, "."));
        return expand_range(arg, spec, dots, out, err);
    }
    /* 1-3 or 10Mbps-1Gbps: a number, a dash, a number (not 1e-3, not -1) */
    for (const char *d = spec + 1; !strchr(spec, ',') && (d = strchr(d, '-')) != NULL; d++) {
        if (d[-1] == 'e' || d[-1] == 'E')
            continue;
        if (parse_qty(spec, (size_t)(d - spec), &probe) == 0 && parse_qty(d + 1, strlen(d + 1), &probe2) == 0)
            return dp_err_set(err, DP_EINPUT, "--vary %s: a range is written START..END: %.*s..%s", arg,
                              (int)(d - spec), spec, d + 1);
    }
    const char *p = spec;
    for (;;) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        const char *s = p;
        while (len && is_space(*s))
            s++, len--;
        while (len && is_space(s[len - 1]))
            len--;
        if (len == 0)
            return dp_err_set(err, DP_EINPUT, "--vary %s: empty value in the list '%s'", arg, spec);
        if (out->n >= SWEEP_MAX_VALUES)
            return dp_err_set(err, DP_EINPUT, "--vary %s: more than %d values", arg, SWEEP_MAX_VALUES);
        if (vlist_push(out, s, len))
            return dp_err_set(err, DP_ENOMEM, "out of memory expanding --vary %s", arg);
        if (!c)
            break;
        p = c + 1;
    }
    return 0;
}

int sweep_grid_add(sweep_grid *g, const char *arg, dp_err *err)
{
    if (!g || !arg)
        return dp_err_set(err, DP_EINPUT, "sweep_grid_add: NULL argument");
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg || !eq[1])
        return dp_err_set(err, DP_EINPUT, "--vary %s: want KEY=SPEC, e.g. devices.gpu.link.down=10Mbps,1Gbps",
                          arg);
    size_t klen = (size_t)(eq - arg);
    if (klen > 256)
        return dp_err_set(err, DP_EINPUT, "--vary %.60s...: key longer than 256 characters", arg);
    for (size_t i = 0; i < klen; i++)
        if (is_space(arg[i]) || arg[i] == '"' || (unsigned char)arg[i] < 0x20)
            return dp_err_set(err, DP_EINPUT, "--vary %s: blank or control character in the key", arg);
    if (g->n_axes == SWEEP_MAX_AXES)
        return dp_err_set(err, DP_EINPUT, "--vary %s: more than %d --vary options", arg, SWEEP_MAX_AXES);
    for (size_t a = 0; a < g->n_axes; a++)
        if (strlen(g->ax[a].key) == klen && strncmp(g->ax[a].key, arg, klen) == 0)
            return dp_err_set(err, DP_EINPUT,
                              "--vary %s: key '%s' is varied twice (give all its values in one --vary)", arg,
                              g->ax[a].key);
    vlist l = {0};
    int e = expand_spec(arg, eq + 1, &l, err);
    if (!e && l.n == 0)
        e = dp_err_set(err, DP_EINPUT, "--vary %s: no values", arg);
    if (!e) {
        /* A value twice would make two points with one identity. */
        char **sorted = dp_malloc(l.n * sizeof *sorted);
        if (!sorted)
            e = dp_err_set(err, DP_ENOMEM, "out of memory checking --vary %s", arg);
        else {
            memcpy(sorted, l.v, l.n * sizeof *sorted);
            qsort(sorted, l.n, sizeof *sorted, cmp_str);
            for (size_t i = 1; i < l.n && !e; i++)
                if (strcmp(sorted[i - 1], sorted[i]) == 0)
                    e = dp_err_set(err, DP_EINPUT, "--vary %s: value '%s' appears twice", arg, sorted[i]);
            dp_free(sorted);
        }
    }
    if (!e && (double)g->n_points * (double)l.n > SWEEP_MAX_RUNS)
        e = dp_err_set(err, DP_EINPUT, "--vary %s: the grid would have %.0f points, more than the limit %d",
                       arg, (double)g->n_points * (double)l.n, SWEEP_MAX_RUNS);
    grid_axis *x = &g->ax[g->n_axes];
    if (!e) {
        x->key = dp_malloc(klen + 1);
        x->spec = dp_strdup(eq + 1);
        if (!x->key || !x->spec) {
            dp_free(x->key);
            dp_free(x->spec);
            x->key = x->spec = NULL;
            e = dp_err_set(err, DP_ENOMEM, "out of memory adding --vary %s", arg);
        }
    }
    if (e) {
        strings_free(l.v, l.n);
        return e;
    }
    memcpy(x->key, arg, klen);
    x->key[klen] = '\0';
    x->values = l.v;
    x->n = l.n;
    g->n_axes++;
    g->n_points *= l.n;
    return 0;
}

size_t sweep_grid_n_axes(const sweep_grid *g)
{
    return g ? g->n_axes : 0;
}
size_t sweep_grid_n_points(const sweep_grid *g)
{
    return g ? g->n_points : 0;
}
const char *sweep_grid_key(const sweep_grid *g, size_t axis)
{
    return g && axis < g->n_axes ? g->ax[axis].key : NULL;
}
const char *sweep_grid_spec(const sweep_grid *g, size_t axis)
{
    return g && axis < g->n_axes ? g->ax[axis].spec : NULL;
}
size_t sweep_grid_n_values(const sweep_grid *g, size_t axis)
{
    return g && axis < g->n_axes ? g->ax[axis].n : 0;
}
const char *sweep_grid_value(const sweep_grid *g, size_t axis, size_t i)
{
    return g && axis < g->n_axes && i < g->ax[axis].n ? g->ax[axis].values[i] : NULL;
}

const char *sweep_point_value(const sweep_grid *g, size_t point, size_t axis)
{
    if (!g || axis >= g->n_axes || point >= g->n_points)
        return NULL;
    size_t stride = 1;
    for (size_t a = axis + 1; a < g->n_axes; a++)
        stride *= g->ax[a].n;
    return g->ax[axis].values[(point / stride) % g->ax[axis].n];
}

char *sweep_point_json(const sweep_grid *g, size_t point)
{
    if (!g || point >= g->n_points)
        return NULL;
    json_buf *j = json_new();
    json_obj_begin(j);
    for (size_t a = 0; a < g->n_axes; a++) {
        json_key(j, g->ax[a].key);
        json_str(j, sweep_point_value(g, point, a));
    }
    json_obj_end(j);
    char *s = json_ok(j) ? dp_strdup(json_text(j)) : NULL;
    json_free(j);
    return s;
}

char *sweep_point_label(const sweep_grid *g, size_t point)
{
    if (!g || point >= g->n_points)
        return NULL;
    size_t len = 1;
    for (size_t a = 0; a < g->n_axes; a++)
        len += strlen(g->ax[a].key) + strlen(sweep_point_value(g, point, a)) + 3;
    char *s = dp_malloc(len + 8);
    if (!s)
        return NULL;
    size_t o = 0;
    if (g->n_axes == 0)
        o += (size_t)snprintf(s, len + 8, "(base scenario)");
    for (size_t a = 0; a < g->n_axes; a++)
        o += (size_t)snprintf(s + o, len + 8 - o, "%s%s=%s", a ? ", " : "", g->ax[a].key,
                              sweep_point_value(g, point, a));
    return s;
}

int sweep_shard_parse(const char *text, unsigned *k, unsigned *n, dp_err *err)
{
    unsigned long kk = 0, nn = 0;
    const char *t = text ? text : "";
    char *end;
    if (*t >= '0' && *t <= '9') {
        errno = 0;
        kk = strtoul(t, &end, 10);
        if (!errno && *end == '/' && end[1] >= '0' && end[1] <= '9') {
            const char *nt = end + 1;
            nn = strtoul(nt, &end, 10);
            if (errno || *end)
                nn = 0;
        }
    }
    if (nn == 0 || nn > 1000000 || kk < 1 || kk > nn)
        return dp_err_set(err, DP_EINPUT, "--shard %s: want K/N with 1 <= K <= N (e.g. --shard 2/8)", t);
    *k = (unsigned)kk;
    *n = (unsigned)nn;
    return 0;
}

int sweep_in_shard(size_t point, unsigned k, unsigned n)
{
    return n > 0 && point % n == (size_t)(k - 1);
}

char *sweep_spec_json(const sweep_grid *g, uint64_t scenario_hash, const policy_def *const *pk, size_t n_pk,
                      unsigned seeds)
{
    if (!g || (n_pk && !pk))
        return NULL;
    char hex[17];
    snprintf(hex, sizeof hex, "%016" PRIx64, scenario_hash);
    json_buf *j = json_new();
    json_obj_begin(j);
    json_key_str(j, "scenario_hash", hex);
    json_key(j, "vary");
    json_arr_begin(j);
    for (size_t a = 0; a < g->n_axes; a++) {
        json_arr_begin(j);
        json_str(j, g->ax[a].key);
        json_str(j, g->ax[a].spec);
        json_arr_end(j);
    }
    json_arr_end(j);
    json_key(j, "policies");
    json_arr_begin(j);
    for (size_t k = 0; k < policy_count(); k++)
        for (size_t i = 0; i < n_pk; i++)
            if (pk[i] == policy_at(k)) {
                json_str(j, policy_name(policy_at(k)));
                break;
            }
    json_arr_end(j);
    json_key_int(j, "seeds", seeds);
    json_obj_end(j);
    char *s = json_ok(j) ? dp_strdup(json_text(j)) : NULL;
    json_free(j);
    return s;
}

/* ---- points against the scenario --------------------------------------- */

/* "devices.NAME.count" or "devices.INDEX.count" addressing group gi. */
static int is_count_key(const char *key, const scn_scenario *base, size_t gi)
{
    if (strncmp(key, "devices.", 8) != 0)
        return 0;
    const char *name = key + 8;
    const char *dot = strchr(name, '.');
    if (!dot || strcmp(dot, ".count") != 0)
        return 0;
    size_t len = (size_t)(dot - name);
    const char *gname = base->groups[gi].name;
    if (strlen(gname) == len && strncmp(gname, name, len) == 0)
        return 1;
    char idx[24];
    snprintf(idx, sizeof idx, "%zu", gi);
    return strlen(idx) == len && strncmp(idx, name, len) == 0;
}

/* Device count with overrides ov[0..n) (later ones win, as in the loader). */
static long devices_with(const scn_scenario *base, const scn_override *ov, size_t n)
{
    long total = 0;
    for (size_t gi = 0; gi < base->n_groups; gi++) {
        long c = base->groups[gi].count;
        for (size_t i = 0; i < n; i++) {
            if (!is_count_key(ov[i].key, base, gi))
                continue;
            const char *v = ov[i].value;
            char *end;
            errno = 0;
            long x = *v >= '0' && *v <= '9' ? strtol(v, &end, 10) : -1;
            if (x < 0 || errno || *end)
                return -1;
            c = x;
        }
        total += c;
    }
    return total;
}

void sweep_point_overrides(const sweep_grid *g, size_t point, scn_override *ov)
{
    for (size_t a = 0; a < g->n_axes; a++) {
        ov[a].key = g->ax[a].key;
        ov[a].value = sweep_point_value(g, point, a);
    }
}

long sweep_point_devices(const sweep_grid *g, const scn_scenario *base, size_t point)
{
    if (!g || !base || point >= g->n_points)
        return -1;
    scn_override ov[SWEEP_MAX_AXES];
    sweep_point_overrides(g, point, ov);
    return devices_with(base, ov, g->n_axes);
}

/* Load with the policies' options checked, as `dpsim check` does. */
scn_scenario *sweep_load_src(const sweep_source *src, const scn_override *ov, size_t n, dp_err *err)
{
    scn_scenario *s = scn_load_string(src->name, src->text, src->len, src->base_dir, ov, n, err);
    if (s && policy_check_scenario(s, err)) {
        scn_free(s);
        return NULL;
    }
    return s;
}

/* Does a loader message put the error at this override (its node, or the
 * path it names)?  The loader labels nodes an override made with
 * "override KEY=VALUE" instead of FILE:LINE:COLUMN (yamltree.h). */
static int own_error(const char *msg, const char *key)
{
    char a[300], b[300];
    snprintf(a, sizeof a, "override %s=", key);
    snprintf(b, sizeof b, "override '%s'", key);
    return strstr(msg, a) != NULL || strstr(msg, b) != NULL;
}

int sweep_grid_check(const sweep_grid *g, const sweep_source *src, const scn_scenario *base, dp_err *err)
{
    if (!g || !src || !base)
        return dp_err_set(err, DP_EINPUT, "sweep_grid_check: NULL argument");
    for (size_t a = 0; a < g->n_axes; a++) {
        const grid_axis *x = &g->ax[a];
        size_t checked = 0, own = 0, first = 0;
        dp_err first_e = {0};
        for (size_t i = 0; i < x->n; i++) {
            scn_override ov = {x->key, x->values[i]};
            if (devices_with(base, &ov, 1) == 0)
                continue; /* a point without devices is skipped, not an error */
            checked++;
            dp_err e = {0};
            scn_scenario *s = sweep_load_src(src, &ov, 1, &e);
            if (s) {
                scn_free(s);
                continue;
            }
            if (e.code != DP_EINPUT)
                return dp_err_set(err, e.code, "%s", e.msg);
            if (own_error(e.msg, x->key) && own++ == 0) {
                first = i;
                first_e = e;
            }
        }
        /* Every value fails at the override itself: an unknown key or a
         * whole axis of bad values.  A value that fails only in the base
         * scenario's context may be fine in combination with other axes,
         * so it is left to its points (stored as failed if it fails). */
        if (checked && own == checked) {
            /* one message: the loader's "override KEY=VALUE: KEY: " would
             * repeat what --vary names already */
            const char *m = first_e.msg;
            char pre[600];
            snprintf(pre, sizeof pre, "override %s=%s: ", x->key, x->values[first]);
            if (!strncmp(m, pre, strlen(pre)))
                m += strlen(pre);
            snprintf(pre, sizeof pre, "%s: ", x->key);
            if (!strncmp(m, pre, strlen(pre)))
                m += strlen(pre);
            if (x->n > 1)
                return dp_err_set(err, DP_EINPUT, "--vary %s=%s: every value fails; '%s': %s", x->key,
                                  x->spec, x->values[first], m);
            return dp_err_set(err, DP_EINPUT, "--vary %s=%s: %s", x->key, x->spec, m);
        }
    }
    return 0;
}

double sweep_cost_estimate(const scn_scenario *s)
{
    double batch = 0;
    for (size_t i = 0; i < s->n_groups; i++)
        batch += (double)s->groups[i].count * (double)s->groups[i].batch;
    if (batch <= 0 || s->n_devices == 0)
        return 0;
    double iters = ceil((double)s->dataset.samples / batch);
    double n = (double)s->n_devices;
    return (double)s->training.epochs * iters * n * (coll_closed_form_possible(s) ? 1 : n);
}
