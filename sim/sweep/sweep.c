/* sweep.c: grids of scenario variations run by forked workers (sweep.h).
 *
 * Process model.  The parent expands the grid, registers the sweep, looks
 * up which runs are stored already, then forks `jobs` workers and closes
 * its own database connection (a connection must not cross fork()).  The
 * runs still to do are an array every worker inherits; workers claim the
 * next index from a counter in a shared anonymous mapping, so a slow run
 * never holds up a queue behind it.  Each worker opens its own connection
 * and commits every run (ok or failed) as one transaction the moment it
 * ends, then tells the parent over a pipe (fixed-size messages below
 * PIPE_BUF, so writes from several workers never interleave).  The parent
 * only counts, draws progress and, at the end, reads the stored runs back
 * for the summary.  So an interrupt, or SIGKILL of everything, loses at
 * most the runs in flight, and SQLite's transactions keep the file
 * consistent.
 *
 * Invariants:
 *  - tasks are ordered point-major (policies, then seeds, inside a point),
 *    so a worker usually reuses the scenario it loaded for the last run;
 *  - the text of every value, point_json and spec_json is a pure function
 *    of the command line and the scenario text (no clock, no locale: values
 *    are formatted with "%.10g" of doubles parsed by strtod in the C locale
 *    the CLI never changes).
 */
#include "sweep/sweep.h"

#include "dpsim_config.h"
#include "json.h"
#include "store/store.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

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

/* A number in plain decimal notation (sign, digits, point, exponent) at the
 * start of s: its length, or 0.  Stricter than strtod on purpose: no
 * "inf", "nan" or hex, which no scenario value means. */
static size_t number_len(const char *s)
{
    size_t i = 0, digits = 0;
    if (s[i] == '+' || s[i] == '-')
        i++;
    while (s[i] >= '0' && s[i] <= '9')
        i++, digits++;
    if (s[i] == '.' && s[i + 1] != '.') { /* "1..8": the dot belongs to the range */
        i++;
        while (s[i] >= '0' && s[i] <= '9')
            i++, digits++;
    }
    if (!digits)
        return 0;
    if (s[i] == 'e' || s[i] == 'E') {
        size_t j = i + 1;
        if (s[j] == '+' || s[j] == '-')
            j++;
        if (s[j] >= '0' && s[j] <= '9') {
            while (s[j] >= '0' && s[j] <= '9')
                j++;
            i = j;
        }
    }
    return i;
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
    size_t nl = number_len(q->text);
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
            return dp_err_set(err, DP_EINPUT, "--vary %s: %.0f values, more than the limit %d", arg, nd,
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
    qty probe;
    /* A range only when a number stands before the dots: "../t.csv" is a
     * (one-value) list of a path. */
    if (dots && parse_qty(spec, (size_t)(dots - spec), &probe) == 0)
        return expand_range(arg, spec, dots, out, err);
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
    json_key(j, "scenario_hash");
    json_str(j, hex);
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
    json_key(j, "seeds");
    json_int(j, seeds);
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

static void point_overrides(const sweep_grid *g, size_t point, scn_override *ov)
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
    point_overrides(g, point, ov);
    return devices_with(base, ov, g->n_axes);
}

/* Load with the policies' options checked, as `dpsim check` does. */
static scn_scenario *load_src(const sweep_source *src, const scn_override *ov, size_t n, dp_err *err)
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
            scn_scenario *s = load_src(src, &ov, 1, &e);
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
        if (checked && own == checked)
            return dp_err_set(err, DP_EINPUT, "--vary %s=%s: %s%s'%s': %s", x->key, x->spec,
                              x->n > 1 ? "every value fails; " : "", "value ", x->values[first], first_e.msg);
    }
    return 0;
}

/* ---- running ------------------------------------------------------------ */

/* One run of the shard: tasks[(lp * n_policies + pi) * seeds + seed - 1]. */
typedef struct task {
    size_t point;  /* grid index */
    size_t lp;     /* index among the shard's points with devices */
    uint32_t seed; /* 1.. */
    uint8_t pi;    /* index into plan.pk */
    int8_t state;  /* 0 not stored, 1 stored ok, 2 stored failed */
} task;

typedef struct plan {
    const sweep_cfg *cfg;
    scn_scenario *base;
    const policy_def *pk[POLICY_MAX]; /* cfg's policies in registry order */
    size_t n_pk;
    unsigned seeds;
    int stochastic;
    char *spec_json;
    int64_t sweep_id;
    size_t *lpoints; /* grid index of each shard point with devices */
    size_t n_lpoints;
    size_t n_shard_points;
    size_t n_nodev, nodev_first[3];
    task *tasks;
    size_t n_tasks;
    size_t *pending; /* indices into tasks still to run */
    size_t n_pending;
} plan;

static void plan_free(plan *p)
{
    scn_free(p->base);
    dp_free(p->spec_json);
    dp_free(p->lpoints);
    dp_free(p->tasks);
    dp_free(p->pending);
}

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

/* Point-major expansion of the shard into tasks. */
static int plan_build(plan *p, dp_err *err)
{
    const sweep_cfg *c = p->cfg;
    const sweep_grid *g = c->grid;
    size_t np = g->n_points;
    p->lpoints = dp_malloc((np / c->shard_n + 1) * sizeof *p->lpoints);
    if (!p->lpoints)
        return dp_err_set(err, DP_ENOMEM, "out of memory planning %zu sweep points", np);
    for (size_t pt = (size_t)(c->shard_k - 1); pt < np; pt += c->shard_n) {
        p->n_shard_points++;
        if (sweep_point_devices(g, p->base, pt) == 0) {
            if (p->n_nodev < 3)
                p->nodev_first[p->n_nodev] = pt;
            p->n_nodev++;
            continue;
        }
        p->lpoints[p->n_lpoints++] = pt;
    }
    double runs = (double)p->n_lpoints * (double)p->n_pk * (double)p->seeds;
    if (runs > SWEEP_MAX_RUNS)
        return dp_err_set(
            err, DP_EINPUT,
            "the sweep has %.0f runs (%zu points x %zu policies x %u seeds), more than the limit %d", runs,
            p->n_lpoints, p->n_pk, p->seeds, SWEEP_MAX_RUNS);
    p->n_tasks = (size_t)runs;
    p->tasks = dp_calloc(p->n_tasks ? p->n_tasks : 1, sizeof *p->tasks);
    p->pending = dp_calloc(p->n_tasks ? p->n_tasks : 1, sizeof *p->pending);
    if (!p->tasks || !p->pending)
        return dp_err_set(err, DP_ENOMEM, "out of memory planning %zu sweep runs", p->n_tasks);
    size_t t = 0;
    for (size_t lp = 0; lp < p->n_lpoints; lp++)
        for (size_t pi = 0; pi < p->n_pk; pi++)
            for (unsigned sd = 1; sd <= p->seeds; sd++)
                p->tasks[t++] = (task){p->lpoints[lp], lp, sd, (uint8_t)pi, 0};
    return 0;
}

/* Outcomes of stored runs, read back for the resume check and the summary. */
typedef struct outcome {
    double *ttotal; /* per task, NaN unless ok; may be NULL */
    size_t n_ex;    /* failed examples kept */
    size_t ex_task[3];
    char ex_msg[3][320];
} outcome;

static int read_outcomes(plan *p, store *st, outcome *o, dp_err *err)
{
    sqlite3 *db = store_db(st);
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(
        db,
        "SELECT status, ttotal_s, error FROM runs WHERE sweep_id = ?1 AND point_json = ?2"
        " AND policy = ?3 AND seed = ?4 AND version = ?5 ORDER BY status = 'ok' DESC LIMIT 1",
        -1, &q, NULL);
    if (rc != SQLITE_OK)
        return dp_err_set(err, DP_ERUN, "%s: reading the sweep's runs: %s", store_path(st),
                          sqlite3_errmsg(db));
    /* One snapshot for all lookups, and one lock instead of one per query. */
    sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
    char *pj = NULL;
    size_t pj_point = SIZE_MAX;
    int e = 0;
    for (size_t i = 0; i < p->n_tasks && !e; i++) {
        task *t = &p->tasks[i];
        if (t->point != pj_point) {
            dp_free(pj);
            pj = sweep_point_json(p->cfg->grid, t->point);
            pj_point = t->point;
            if (!pj) {
                e = dp_err_set(err, DP_ENOMEM, "out of memory reading the sweep's runs");
                break;
            }
        }
        sqlite3_reset(q);
        sqlite3_bind_int64(q, 1, p->sweep_id);
        sqlite3_bind_text(q, 2, pj, -1, SQLITE_STATIC);
        sqlite3_bind_text(q, 3, policy_name(p->pk[t->pi]), -1, SQLITE_STATIC);
        sqlite3_bind_int64(q, 4, (int64_t)t->seed);
        sqlite3_bind_text(q, 5, DPSIM_VERSION, -1, SQLITE_STATIC);
        rc = sqlite3_step(q);
        if (o && o->ttotal)
            o->ttotal[i] = NAN;
        if (rc == SQLITE_ROW) {
            const unsigned char *status = sqlite3_column_text(q, 0);
            t->state = status && strcmp((const char *)status, "ok") == 0 ? 1 : 2;
            if (o && o->ttotal && t->state == 1 && sqlite3_column_type(q, 1) != SQLITE_NULL)
                o->ttotal[i] = sqlite3_column_double(q, 1);
            if (o && t->state == 2 && o->n_ex < 3) {
                const unsigned char *m = sqlite3_column_text(q, 2);
                o->ex_task[o->n_ex] = i;
                snprintf(o->ex_msg[o->n_ex], sizeof o->ex_msg[0], "%s", m ? (const char *)m : "(no message)");
                o->n_ex++;
            }
        } else if (rc == SQLITE_DONE) {
            t->state = 0;
        } else {
            e = dp_err_set(err, DP_ERUN, "%s: reading the sweep's runs: %s", store_path(st),
                           sqlite3_errmsg(db));
        }
    }
    sqlite3_finalize(q);
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    dp_free(pj);
    return e;
}

/* ---- workers ------------------------------------------------------------- */

enum { WR_OK = 1, WR_FAILED, WR_ALREADY, WR_DBERR };
enum { WORKER_EXIT_DB = 3 };

/* Fixed size and at most PIPE_BUF (512 on every POSIX system), so each is
 * written atomically however many workers share the pipe. */
typedef struct wmsg {
    int32_t task; /* index into plan.pending, -1 for none */
    int32_t status;
    char text[504];
} wmsg;
_Static_assert(sizeof(wmsg) <= 512, "a worker message must fit in PIPE_BUF");

/* What parent and workers share: the next pending index to claim, the
 * stop request (1 = start no new run), and a write lock.  Workers take
 * wlock around each store_put_*: SQLite's own busy handler, when two
 * writers meet, sleeps 1, 2, 5, 10... ms, longer than a whole small run,
 * while a futex hands the lock over at once (measured on tiny.yaml: two
 * workers went no faster than one without it).  The mutex is robust, so a
 * worker killed while holding it cannot block the others; SQLite's lock
 * still guards against other processes. */
typedef struct shared {
    atomic_size_t next;
    atomic_int stop;
    int have_wlock;
    pthread_mutex_t wlock;
} shared;

static void wlock_init(shared *sh)
{
    pthread_mutexattr_t a;
    sh->have_wlock = 0;
    if (pthread_mutexattr_init(&a))
        return;
    if (pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED) == 0 &&
        pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST) == 0 && pthread_mutex_init(&sh->wlock, &a) == 0)
        sh->have_wlock = 1; /* else: SQLite's busy handler alone, slower but correct */
    pthread_mutexattr_destroy(&a);
}

static void wlock(shared *sh)
{
    if (sh->have_wlock && pthread_mutex_lock(&sh->wlock) == EOWNERDEAD)
        pthread_mutex_consistent(&sh->wlock); /* its holder died; the database rolled it back */
}

static void wunlock(shared *sh)
{
    if (sh->have_wlock)
        pthread_mutex_unlock(&sh->wlock);
}

static void send_msg(int fd, long task_i, int status, const char *text)
{
    wmsg m;
    memset(&m, 0, sizeof m);
    m.task = (int32_t)task_i;
    m.status = status;
    if (text)
        snprintf(m.text, sizeof m.text, "%s", text);
    /* A write of at most PIPE_BUF bytes to a pipe is all or nothing. */
    while (write(fd, &m, sizeof m) < 0 && errno == EINTR)
        ;
}

/* The scenario of one point, loaded once per point a worker meets. */
typedef struct wpoint {
    size_t point;
    scn_scenario *s; /* NULL when it did not load: msg says why */
    char msg[1024];
    char *json;
    char *ov_text[SWEEP_MAX_AXES];
} wpoint;

static void wpoint_clear(wpoint *w, size_t n_axes)
{
    scn_free(w->s);
    dp_free(w->json);
    for (size_t a = 0; a < n_axes; a++)
        dp_free(w->ov_text[a]);
    memset(w, 0, sizeof *w);
    w->point = SIZE_MAX;
}

static int wpoint_load(wpoint *w, const plan *p, size_t point)
{
    const sweep_grid *g = p->cfg->grid;
    wpoint_clear(w, g->n_axes);
    w->point = point;
    scn_override ov[SWEEP_MAX_AXES];
    point_overrides(g, point, ov);
    if (!(w->json = sweep_point_json(g, point)))
        return DP_ENOMEM;
    for (size_t a = 0; a < g->n_axes; a++) {
        size_t len = strlen(ov[a].key) + strlen(ov[a].value) + 2;
        if (!(w->ov_text[a] = dp_malloc(len)))
            return DP_ENOMEM;
        snprintf(w->ov_text[a], len, "%s=%s", ov[a].key, ov[a].value);
    }
    dp_err e = {0};
    w->s = load_src(&p->cfg->src, ov, g->n_axes, &e);
    if (!w->s) {
        if (e.code == DP_ENOMEM)
            return DP_ENOMEM;
        snprintf(w->msg, sizeof w->msg, "%s", e.msg);
    }
    return 0;
}

/* Is the run stored (by us earlier, or by a concurrent sweep on the same
 * file)?  1 when there is nothing left to do for it. */
static int stored_already(store *st, const plan *p, const wpoint *w, const task *t)
{
    int done = 0;
    if (store_point_done(st, p->sweep_id, w->json, policy_name(p->pk[t->pi]), t->seed, DPSIM_VERSION, &done,
                         NULL))
        return 0;
    return done == 1 || (done == 2 && !p->cfg->retry_failed);
}

static int worker_run_one(store *st, shared *sh, const plan *p, const wpoint *w, const task *t, dp_err *err)
{
    const sweep_grid *g = p->cfg->grid;
    const policy_def *k = p->pk[t->pi];
    char started[32];
    now_iso(started, sizeof started);
    const char *const *ovs = (const char *const *)w->ov_text;
    dp_err rerr = {0};
    res_run *r = NULL;
    if (w->s) {
        double w0 = wall_s();
        r = policy_run(k, w->s, t->seed, &rerr);
        if (r)
            r->wall_s = wall_s() - w0;
    }
    int rc, ok = r != NULL;
    if (r && !p->cfg->detail) { /* metrics only (sweep_cfg.detail) */
        r->n_segments = 0;
        r->n_bins = 0;
    }
    if (r) {
        wlock(sh);
        rc = store_put_run(st, w->s, ovs, g->n_axes, r, DPSIM_VERSION, started, p->sweep_id, w->json, NULL,
                           err);
        wunlock(sh);
        res_run_free(r);
    } else {
        const char *msg = w->s ? rerr.msg : w->msg;
        if (rerr.code == DP_ENOMEM)
            return dp_err_set(err, DP_ENOMEM, "out of memory running %s: %s", policy_name(k), rerr.msg);
        wlock(sh);
        rc = store_put_failed(st, p->base->name, p->cfg->src.text, p->base->text_hash, ovs, g->n_axes,
                              policy_name(k), t->seed, DPSIM_VERSION, started, p->sweep_id, w->json, msg,
                              NULL, err);
        wunlock(sh);
    }
    if (rc) {
        /* A concurrent sweep on the same file may have stored this run
         * between our check and our write; that is not a failure. */
        if (stored_already(st, p, w, t))
            return WR_ALREADY;
        return rc;
    }
    return ok ? WR_OK : WR_FAILED;
}

static void worker_main(const plan *p, shared *sh, int wfd, pid_t parent)
{
    /* The parent coordinates interrupts: a terminal's Ctrl-C reaches the
     * whole process group, and workers must finish their run, not die. */
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
#ifdef __linux__
    /* If the parent is killed (even by SIGKILL), stop too, rather than
     * racing a resumed sweep for the same runs. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
    if (getppid() != parent)
        _exit(0);
    dp_err err = {0};
    store *st = store_open(p->cfg->db_path, 0, &err);
    if (!st) {
        send_msg(wfd, -1, WR_DBERR, err.msg);
        _exit(WORKER_EXIT_DB);
    }
    wpoint w;
    memset(&w, 0, sizeof w);
    w.point = SIZE_MAX;
    int code = 0;
    for (;;) {
        if (atomic_load(&sh->stop) || getppid() != parent)
            break;
        size_t i = atomic_fetch_add(&sh->next, 1);
        if (i >= p->n_pending)
            break;
        const task *t = &p->tasks[p->pending[i]];
        if (t->point != w.point && wpoint_load(&w, p, t->point)) {
            send_msg(wfd, (long)i, WR_DBERR, "out of memory loading a sweep point");
            code = WORKER_EXIT_DB;
            break;
        }
        if (stored_already(st, p, &w, t)) {
            send_msg(wfd, (long)i, WR_ALREADY, NULL);
            continue;
        }
        int r = worker_run_one(st, sh, p, &w, t, &err);
        if (r < 0) {
            send_msg(wfd, (long)i, WR_DBERR, err.msg);
            code = WORKER_EXIT_DB;
            break;
        }
        send_msg(wfd, (long)i, r, NULL);
    }
    wpoint_clear(&w, p->cfg->grid->n_axes);
    store_close(st);
    close(wfd);
    /* _exit: the parent's stdio buffers and atexit handlers are not ours. */
    _exit(code);
}

/* ---- progress ------------------------------------------------------------ */

typedef struct progress {
    FILE *out;
    int on, tty, drawn;
    double t0, last;
    size_t total, done, failed;
    size_t points_total, points_done;
} progress;

static void fmt_duration(char *buf, size_t len, double s)
{
    if (!isfinite(s) || s < 0)
        snprintf(buf, len, "--");
    else if (s >= 3600)
        snprintf(buf, len, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
    else if (s >= 60)
        snprintf(buf, len, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
    else
        snprintf(buf, len, "%.1fs", s);
}

static void progress_draw(progress *pg, int final)
{
    if (!pg->on)
        return;
    double now = wall_s();
    if (!final && now - pg->last < (pg->tty ? 0.1 : 5.0))
        return;
    pg->last = now;
    double el = now - pg->t0;
    double rate = el > 0 ? (double)pg->done / el : 0;
    char tm[32];
    /* While running: the time left; at the end: the time it took. */
    fmt_duration(tm, sizeof tm, final ? el : rate > 0 ? (double)(pg->total - pg->done) / rate : NAN);
    const char *tm_what = final ? "took" : "ETA";
    if (pg->tty) {
        char bar[25];
        size_t fill = pg->total ? pg->done * 24 / pg->total : 24;
        for (size_t i = 0; i < 24; i++)
            bar[i] = i < fill ? '#' : '.';
        bar[24] = '\0';
        fprintf(pg->out, "\r[%s] %zu/%zu runs, %zu/%zu points, %zu failed, %.1f runs/s, %s %s\033[K", bar,
                pg->done, pg->total, pg->points_done, pg->points_total, pg->failed, rate, tm_what, tm);
        if (final)
            fputc('\n', pg->out);
    } else {
        fprintf(pg->out,
                "dpsim sweep: %zu/%zu runs (%.0f%%), %zu/%zu points, %zu failed, %.1f runs/s, %s %s\n",
                pg->done, pg->total, pg->total ? 100.0 * (double)pg->done / (double)pg->total : 100.0,
                pg->points_done, pg->points_total, pg->failed, rate, tm_what, tm);
    }
    fflush(pg->out);
    pg->drawn = 1;
}

/* ---- the parent ---------------------------------------------------------- */

static int run_workers(plan *p, sweep_stats *stats, dp_err *err)
{
    const sweep_cfg *c = p->cfg;
    unsigned jobs = c->jobs;
    if (jobs > p->n_pending)
        jobs = (unsigned)p->n_pending;
    /* Runs left per point, for the "points done" count. */
    uint32_t *left = dp_calloc(p->n_lpoints ? p->n_lpoints : 1, sizeof *left);
    pid_t *pids = dp_calloc(jobs, sizeof *pids);
    shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    int fds[2] = {-1, -1};
    int e = 0;
    if (!left || !pids)
        e = dp_err_set(err, DP_ENOMEM, "out of memory starting %u workers", jobs);
    else if (sh == MAP_FAILED)
        e = dp_err_set(err, DP_ERUN, "sweep: shared memory for the workers: %s", strerror(errno));
    else if (pipe(fds) < 0)
        e = dp_err_set(err, DP_ERUN, "sweep: pipe for the workers: %s", strerror(errno));
    if (e) {
        if (sh != MAP_FAILED)
            munmap(sh, sizeof *sh);
        dp_free(left);
        dp_free(pids);
        return e;
    }
    atomic_init(&sh->next, 0);
    atomic_init(&sh->stop, 0);
    wlock_init(sh);
    for (size_t i = 0; i < p->n_pending; i++)
        left[p->tasks[p->pending[i]].lp]++;

    progress pg = {0};
    pg.out = c->progress_out ? c->progress_out : stderr;
    pg.on = c->progress != 0;
    pg.tty = pg.on && isatty(fileno(pg.out));
    pg.total = p->n_pending;
    pg.points_total = p->n_lpoints;
    for (size_t lp = 0; lp < p->n_lpoints; lp++)
        pg.points_done += left[lp] == 0;
    pg.t0 = pg.last = wall_s();

    fflush(stdout);
    fflush(stderr);
    if (c->summary_out)
        fflush(c->summary_out);
    fflush(pg.out);
    pid_t self = getpid();
    unsigned started = 0;
    for (; started < jobs; started++) {
        pid_t pid = fork();
        if (pid == 0) {
            close(fds[0]);
            dp_free(left); /* the parent's bookkeeping: a worker never uses it */
            dp_free(pids);
            worker_main(p, sh, fds[1], self);
        }
        if (pid < 0) {
            e = dp_err_set(err, DP_ERUN, "sweep: starting worker %u of %u: %s", started + 1, jobs,
                           strerror(errno));
            atomic_store(&sh->stop, 1);
            break;
        }
        pids[started] = pid;
    }
    stats->jobs = started;
    close(fds[1]);

    int stop_seen = 0, killed = 0;
    char buf[sizeof(wmsg) * 8];
    size_t have = 0;
    for (;;) {
        int sig = c->stop ? (int)*c->stop : 0;
        if (sig >= 1 && !stop_seen) {
            stop_seen = 1;
            atomic_store(&sh->stop, 1);
            if (pg.tty && pg.drawn)
                fputc('\n', pg.out);
            if (c->progress)
                fprintf(pg.out, "dpsim sweep: interrupted: finishing the runs in flight (interrupt again to "
                                "abandon them)\n");
        }
        if (sig >= 2 && !killed) {
            killed = 1;
            for (unsigned j = 0; j < started; j++)
                kill(pids[j], SIGKILL);
        }
        struct pollfd pf = {fds[0], POLLIN, 0};
        int pr = poll(&pf, 1, 100);
        if (pr < 0 && errno != EINTR) {
            e = dp_err_set(err, DP_ERUN, "sweep: waiting for the workers: %s", strerror(errno));
            atomic_store(&sh->stop, 1);
            break;
        }
        if (pr <= 0) {
            progress_draw(&pg, 0);
            continue;
        }
        ssize_t n = read(fds[0], buf + have, sizeof buf - have);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break; /* every worker closed its end: all are done */
        have += (size_t)n;
        size_t off = 0;
        for (; have - off >= sizeof(wmsg); off += sizeof(wmsg)) {
            wmsg m;
            memcpy(&m, buf + off, sizeof m);
            if (m.status == WR_DBERR) {
                if (!e)
                    e = dp_err_set(err, DP_ERUN, "%s", m.text);
                atomic_store(&sh->stop, 1); /* a broken database fails the others too */
                continue;
            }
            if (m.task < 0 || (size_t)m.task >= p->n_pending)
                continue;
            pg.done++;
            if (m.status == WR_OK)
                stats->runs_ok++;
            else if (m.status == WR_FAILED) {
                stats->runs_failed++;
                pg.failed++;
            } else
                stats->runs_before++;
            size_t lp = p->tasks[p->pending[m.task]].lp;
            if (left[lp] && --left[lp] == 0)
                pg.points_done++;
        }
        memmove(buf, buf + off, have - off);
        have -= off;
        progress_draw(&pg, 0);
    }
    close(fds[0]);
    for (unsigned j = 0; j < started; j++) {
        int status = 0;
        while (waitpid(pids[j], &status, 0) < 0 && errno == EINTR)
            ;
        if (WIFSIGNALED(status) && !stop_seen && !e)
            e = dp_err_set(err, DP_ERUN,
                           "sweep: worker %u (pid %ld) died of signal %d; %zu runs stored so far", j + 1,
                           (long)pids[j], WTERMSIG(status), stats->runs_ok + stats->runs_failed);
        else if (WIFEXITED(status) && WEXITSTATUS(status) != 0 && !e)
            e = dp_err_set(err, DP_ERUN, "sweep: worker %u (pid %ld) failed (exit status %d)", j + 1,
                           (long)pids[j], WEXITSTATUS(status));
    }
    progress_draw(&pg, 1);
    stats->interrupted = stop_seen;
    if (sh->have_wlock)
        pthread_mutex_destroy(&sh->wlock);
    munmap(sh, sizeof *sh);
    dp_free(left);
    dp_free(pids);
    return e;
}

/* ---- summary ------------------------------------------------------------- */

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static void print_label(FILE *out, const sweep_grid *g, size_t point)
{
    char *l = sweep_point_label(g, point);
    fputs(l ? l : "?", out);
    dp_free(l);
}

/* Mean Ttotal of policy pi over the ok seeds of local point lp; NaN if none. */
static double point_mean(const plan *p, const outcome *o, size_t lp, size_t pi)
{
    double sum = 0;
    size_t n = 0;
    for (unsigned sd = 0; sd < p->seeds; sd++) {
        double v = o->ttotal[(lp * p->n_pk + pi) * p->seeds + sd];
        if (!isnan(v))
            sum += v, n++;
    }
    return n ? sum / (double)n : NAN;
}

/* Per policy over the shard: runs ok / failed / missing, min / median / max
 * Ttotal over ok runs, at how many points it is the fastest policy (mean
 * Ttotal over seeds; ties count for each tied policy), and the point of its
 * lowest Ttotal. */
static int print_summary(const plan *p, const outcome *o, const sweep_stats *st, FILE *out, dp_err *err)
{
    const sweep_cfg *c = p->cfg;
    const sweep_grid *g = c->grid;
    double *vals = dp_malloc((p->n_lpoints * p->seeds + 1) * sizeof *vals);
    size_t *wins = dp_calloc(p->n_pk, sizeof *wins);
    if (!vals || !wins) {
        dp_free(vals);
        dp_free(wins);
        return dp_err_set(err, DP_ENOMEM, "out of memory summarising the sweep");
    }
    size_t compared = 0;
    for (size_t lp = 0; lp < p->n_lpoints; lp++) {
        double best = INFINITY;
        for (size_t pi = 0; pi < p->n_pk; pi++) {
            double m = point_mean(p, o, lp, pi);
            if (m < best)
                best = m;
        }
        if (isinf(best))
            continue;
        compared++;
        for (size_t pi = 0; pi < p->n_pk; pi++)
            if (point_mean(p, o, lp, pi) <= best * (1 + 1e-12))
                wins[pi]++;
    }

    fprintf(out, "\nsweep %" PRId64 " in %s: %zu point%s", p->sweep_id, c->db_path, p->n_shard_points,
            p->n_shard_points == 1 ? "" : "s");
    if (c->shard_n > 1)
        fprintf(out, " (shard %u/%u of %zu)", c->shard_k, c->shard_n, g->n_points);
    fprintf(out, " x %zu polic%s x %u seed%s", p->n_pk, p->n_pk == 1 ? "y" : "ies", p->seeds,
            p->seeds == 1 ? "" : "s");
    if (p->n_nodev)
        fprintf(out, ", %zu point%s without devices", p->n_nodev, p->n_nodev == 1 ? "" : "s");
    fprintf(out, " = %zu runs\n\n", p->n_tasks);
    fprintf(out, "%-10s %6s %6s %7s %14s %14s %14s %9s  %s\n", "policy", "ok", "failed", "missing",
            "Ttotal min (s)", "median (s)", "max (s)", "fastest", "lowest Ttotal at");
    for (size_t pi = 0; pi < p->n_pk; pi++) {
        size_t ok = 0, failed = 0, missing = 0, best_t = SIZE_MAX;
        for (size_t lp = 0; lp < p->n_lpoints; lp++)
            for (unsigned sd = 0; sd < p->seeds; sd++) {
                size_t ti = (lp * p->n_pk + pi) * p->seeds + sd;
                const task *t = &p->tasks[ti];
                if (t->state == 1 && !isnan(o->ttotal[ti])) {
                    vals[ok++] = o->ttotal[ti];
                    if (best_t == SIZE_MAX || o->ttotal[ti] < o->ttotal[best_t])
                        best_t = ti;
                } else if (t->state == 2)
                    failed++;
                else if (t->state == 0)
                    missing++;
            }
        fprintf(out, "%-10s %6zu %6zu %7zu ", policy_name(p->pk[pi]), ok, failed, missing);
        char fastest[48];
        snprintf(fastest, sizeof fastest, "%zu/%zu", wins[pi], compared);
        if (ok) {
            qsort(vals, ok, sizeof *vals, cmp_double);
            double med = ok % 2 ? vals[ok / 2] : 0.5 * (vals[ok / 2 - 1] + vals[ok / 2]);
            fprintf(out, "%14.2f %14.2f %14.2f %9s  ", vals[0], med, vals[ok - 1], fastest);
            print_label(out, g, p->tasks[best_t].point);
            if (p->seeds > 1)
                fprintf(out, " (seed %u)", p->tasks[best_t].seed);
        } else {
            fprintf(out, "%14s %14s %14s %9s  -", "-", "-", "-", fastest);
        }
        fputc('\n', out);
    }
    dp_free(vals);
    dp_free(wins);

    fputc('\n', out);
    if (p->stochastic)
        fprintf(out, "seeds: 1..%u at every point (the scenario has compute noise)\n", p->seeds);
    else if (c->seeds > 1)
        fprintf(
            out,
            "seeds: the scenario has no randomness (no compute noise; traces are deterministic), so one seed "
            "suffices: ran seed 1 only (--seeds %u not needed)\n",
            c->seeds);
    else
        fprintf(out, "seeds: 1 (the scenario has no randomness)\n");
    if (p->n_nodev) {
        fprintf(out, "note: %zu point%s without any device skipped (nothing stored), e.g. ", p->n_nodev,
                p->n_nodev == 1 ? "" : "s");
        for (size_t i = 0; i < p->n_nodev && i < 3; i++) {
            fputs(i ? "; " : "", out);
            print_label(out, g, p->nodev_first[i]);
        }
        fputc('\n', out);
    }
    for (size_t i = 0; i < o->n_ex; i++) {
        const task *t = &p->tasks[o->ex_task[i]];
        fprintf(out, "failed: %s at ", policy_name(p->pk[t->pi]));
        print_label(out, g, t->point);
        fprintf(out, ": %s\n", o->ex_msg[i]);
    }
    fprintf(out,
            "this run: %zu runs done (%zu ok, %zu failed), %zu stored before, %zu left; %u worker%s, %.1f s",
            st->runs_ok + st->runs_failed, st->runs_ok, st->runs_failed, st->runs_before, st->runs_left,
            st->jobs, st->jobs == 1 ? "" : "s", st->elapsed_s);
    if (st->runs_ok + st->runs_failed && st->elapsed_s > 0)
        fprintf(out, ", %.1f runs/s", (double)(st->runs_ok + st->runs_failed) / st->elapsed_s);
    fprintf(out, "\n");
    return 0;
}

/* ---- sweep_run ----------------------------------------------------------- */

static int check_cfg(const sweep_cfg *c, dp_err *err)
{
    if (!c || !c->grid || !c->src.text || !c->db_path)
        return dp_err_set(err, DP_EINPUT, "sweep_run: missing grid, scenario or database");
    if (c->n_policies == 0 || c->n_policies > policy_count())
        return dp_err_set(err, DP_EINPUT, "sweep: want 1 to %zu policies (got %zu)", policy_count(),
                          c->n_policies);
    for (size_t i = 0; i < c->n_policies; i++) {
        if (policy_index(c->policies[i]) < 0)
            return dp_err_set(err, DP_EINPUT, "sweep: policy %zu is not registered", i);
        for (size_t j = 0; j < i; j++)
            if (c->policies[j] == c->policies[i])
                return dp_err_set(err, DP_EINPUT, "sweep: policy '%s' given twice",
                                  policy_name(c->policies[i]));
    }
    if (c->seeds < 1 || c->seeds > SWEEP_MAX_SEEDS)
        return dp_err_set(err, DP_EINPUT, "--seeds %u: want 1 to %d", c->seeds, SWEEP_MAX_SEEDS);
    if (c->jobs < 1 || c->jobs > 1024)
        return dp_err_set(err, DP_EINPUT, "--jobs %u: want 1 to 1024", c->jobs);
    if (c->shard_n < 1 || c->shard_k < 1 || c->shard_k > c->shard_n)
        return dp_err_set(err, DP_EINPUT, "--shard %u/%u: want K/N with 1 <= K <= N", c->shard_k, c->shard_n);
    return 0;
}

/* The seed feeds compute noise, straggler episodes and availability
 * processes (compute.c, world.c): any of them in the scenario, or on an
 * axis, makes seeds matter. */
static int is_stochastic(const scn_scenario *base, const sweep_grid *g)
{
    for (size_t i = 0; i < base->n_groups; i++)
        if (base->groups[i].noise_cv > 0 || base->groups[i].stragglers.every_s > 0 ||
            base->groups[i].avail.mtbf_s > 0)
            return 1;
    for (size_t a = 0; a < g->n_axes; a++) {
        const char *dot = strrchr(g->ax[a].key, '.');
        const char *k = dot ? dot + 1 : g->ax[a].key;
        if (strcmp(k, "noise") == 0 || strcmp(k, "mtbf") == 0 || strcmp(k, "every") == 0)
            return 1;
    }
    return 0;
}

int sweep_run(const sweep_cfg *c, sweep_stats *stats, dp_err *err)
{
    sweep_stats dummy;
    if (!stats)
        stats = &dummy;
    memset(stats, 0, sizeof *stats);
    int e = check_cfg(c, err);
    if (e)
        return e;
    double t0 = wall_s();
    plan p;
    memset(&p, 0, sizeof p);
    p.cfg = c;
    for (size_t k = 0; k < policy_count(); k++)
        for (size_t i = 0; i < c->n_policies; i++)
            if (c->policies[i] == policy_at(k))
                p.pk[p.n_pk++] = policy_at(k);
    if (!(p.base = load_src(&c->src, NULL, 0, err)))
        return err ? err->code : DP_EINPUT;
    if ((e = sweep_grid_check(c->grid, &c->src, p.base, err))) {
        plan_free(&p);
        return e;
    }
    p.stochastic = is_stochastic(p.base, c->grid);
    p.seeds = p.stochastic ? c->seeds : 1;
    if (!(p.spec_json = sweep_spec_json(c->grid, p.base->text_hash, p.pk, p.n_pk, p.seeds))) {
        plan_free(&p);
        return dp_err_set(err, DP_ENOMEM, "out of memory writing the sweep spec");
    }
    if ((e = plan_build(&p, err))) {
        plan_free(&p);
        return e;
    }
    stats->points = p.n_shard_points;
    stats->points_nodev = p.n_nodev;
    stats->runs = p.n_tasks;
    stats->seeds = p.seeds;
    stats->stochastic = p.stochastic;

    store *st = store_open(c->db_path, 0, err);
    if (!st) {
        plan_free(&p);
        return err ? err->code : DP_ERUN;
    }
    e = store_sweep_get_or_create(st, p.base, p.spec_json, &p.sweep_id, err);
    if (!e)
        e = read_outcomes(&p, st, NULL, err);
    /* No connection may cross fork(): workers open their own. */
    store_close(st);
    if (e) {
        plan_free(&p);
        return e;
    }
    stats->sweep_id = p.sweep_id;
    for (size_t i = 0; i < p.n_tasks; i++) {
        if (p.tasks[i].state == 0 || (p.tasks[i].state == 2 && c->retry_failed))
            p.pending[p.n_pending++] = i;
        else
            stats->runs_before++;
    }
    int run_e = 0;
    if (p.n_pending)
        run_e = run_workers(&p, stats, err);

    /* Read the outcome of every run of the shard back from the file: the
     * summary covers earlier invocations too, and shows only what is
     * really stored. */
    outcome o;
    memset(&o, 0, sizeof o);
    o.ttotal = dp_malloc((p.n_tasks ? p.n_tasks : 1) * sizeof *o.ttotal);
    dp_err serr = {0};
    int sum_e = o.ttotal ? 0 : dp_err_set(&serr, DP_ENOMEM, "out of memory summarising the sweep");
    if (!sum_e) {
        st = store_open(c->db_path, 1, &serr);
        sum_e = st ? read_outcomes(&p, st, &o, &serr) : serr.code;
        store_close(st);
    }
    if (!sum_e) {
        size_t stored = 0;
        for (size_t i = 0; i < p.n_tasks; i++)
            stored += p.tasks[i].state != 0;
        stats->runs_left = p.n_tasks - stored;
    } else {
        stats->runs_left = p.n_pending - (stats->runs_ok + stats->runs_failed);
    }
    stats->elapsed_s = wall_s() - t0;
    if (!sum_e && c->summary_out)
        sum_e = print_summary(&p, &o, stats, c->summary_out, &serr);
    dp_free(o.ttotal);
    plan_free(&p);
    if (run_e)
        return run_e;
    if (stats->interrupted)
        return dp_err_set(
            err, DP_ERUN,
            "sweep interrupted: %zu runs stored now, %zu left; run the same command again to resume",
            stats->runs_ok + stats->runs_failed, stats->runs_left);
    if (sum_e) {
        if (err)
            *err = serr;
        return sum_e;
    }
    return 0;
}

/* ---- merge --------------------------------------------------------------- */

/* Old id -> new id for one input file; filled in increasing old-id order
 * (every copy reads ORDER BY id), so lookups are binary searches. */
typedef struct idmap {
    int64_t *from, *to;
    size_t n, cap;
} idmap;

static int idmap_put(idmap *m, int64_t from, int64_t to)
{
    if (m->n == m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 64;
        int64_t *f = dp_realloc(m->from, cap * sizeof *f);
        if (!f)
            return DP_ENOMEM;
        m->from = f;
        int64_t *t = dp_realloc(m->to, cap * sizeof *t);
        if (!t)
            return DP_ENOMEM;
        m->to = t;
        m->cap = cap;
    }
    m->from[m->n] = from;
    m->to[m->n++] = to;
    return 0;
}

static int idmap_get(const idmap *m, int64_t from, int64_t *to)
{
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->from[mid] < from)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < m->n && m->from[lo] == from) {
        *to = m->to[lo];
        return 0;
    }
    return -1;
}

static void idmap_free(idmap *m)
{
    dp_free(m->from);
    dp_free(m->to);
    memset(m, 0, sizeof *m);
}

typedef struct merger {
    sqlite3 *out, *in;
    const char *out_path, *in_path;
    dp_err *err;
} merger;

static int mfail(merger *m, sqlite3 *db, const char *what)
{
    return dp_err_set(m->err, DP_ERUN, "merge %s into %s: %s: %s", m->in_path, m->out_path, what,
                      sqlite3_errmsg(db));
}

static int mprep(merger *m, sqlite3 *db, const char *sql, sqlite3_stmt **s)
{
    if (sqlite3_prepare_v2(db, sql, -1, s, NULL) != SQLITE_OK)
        return mfail(m, db, "preparing a statement");
    return 0;
}

/* A row copier: INSERT INTO table(every column of `sel` but `id`) with the
 * columns named in `remap` replaced by caller values.  Copying by column
 * name keeps merge independent of column order. */
#define MAX_COLS 64
typedef struct copier {
    sqlite3_stmt *sel, *ins;
    int n;
    int bind[MAX_COLS];  /* parameter index per selected column, 0 = not copied (id) */
    int remap[MAX_COLS]; /* -1 or an index into the caller's values */
} copier;

static int copier_init(merger *m, copier *cp, const char *table, const char *select_sql,
                       const char *const *remap, size_t n_remap)
{
    memset(cp, 0, sizeof *cp);
    if (mprep(m, m->in, select_sql, &cp->sel))
        return DP_ERUN;
    cp->n = sqlite3_column_count(cp->sel);
    if (cp->n > MAX_COLS)
        return dp_err_set(m->err, DP_ERUN, "merge: table %s has more than %d columns", table, MAX_COLS);
    char sql[4096];
    size_t o = (size_t)snprintf(sql, sizeof sql, "INSERT INTO %s(", table);
    int np = 0;
    for (int i = 0; i < cp->n; i++) {
        const char *name = sqlite3_column_name(cp->sel, i);
        cp->remap[i] = -1;
        if (strcmp(name, "id") == 0)
            continue;
        for (size_t r = 0; r < n_remap; r++)
            if (strcmp(name, remap[r]) == 0)
                cp->remap[i] = (int)r;
        cp->bind[i] = ++np;
        o += (size_t)snprintf(sql + o, sizeof sql - o, "%s\"%s\"", np > 1 ? "," : "", name);
        if (o >= sizeof sql - 64)
            return dp_err_set(m->err, DP_ERUN, "merge: column list of %s too long", table);
    }
    o += (size_t)snprintf(sql + o, sizeof sql - o, ") VALUES(");
    for (int i = 1; i <= np && o < sizeof sql - 16; i++)
        o += (size_t)snprintf(sql + o, sizeof sql - o, "%s?%d", i > 1 ? "," : "", i);
    if (o >= sizeof sql - 16)
        return dp_err_set(m->err, DP_ERUN, "merge: column list of %s too long", table);
    snprintf(sql + o, sizeof sql - o, ")");
    return mprep(m, m->out, sql, &cp->ins);
}

static void copier_free(copier *cp)
{
    sqlite3_finalize(cp->sel);
    sqlite3_finalize(cp->ins);
    memset(cp, 0, sizeof *cp);
}

/* Insert the row `sel` is on; vals[r] replaces remapped column r (has[r]
 * 0 = NULL). */
static int copier_insert(merger *m, copier *cp, const int64_t *vals, const int *has)
{
    sqlite3_reset(cp->ins);
    for (int i = 0; i < cp->n; i++) {
        if (!cp->bind[i])
            continue;
        if (cp->remap[i] >= 0) {
            if (has[cp->remap[i]])
                sqlite3_bind_int64(cp->ins, cp->bind[i], vals[cp->remap[i]]);
            else
                sqlite3_bind_null(cp->ins, cp->bind[i]);
        } else {
            sqlite3_bind_value(cp->ins, cp->bind[i], sqlite3_column_value(cp->sel, i));
        }
    }
    if (sqlite3_step(cp->ins) != SQLITE_DONE)
        return mfail(m, m->out, "inserting a row");
    return 0;
}

static int col_index(sqlite3_stmt *s, const char *name)
{
    for (int i = 0; i < sqlite3_column_count(s); i++)
        if (strcmp(sqlite3_column_name(s, i), name) == 0)
            return i;
    return -1;
}

static int merge_scenarios(merger *m, idmap *map, sweep_merge_stats *ms)
{
    copier cp;
    sqlite3_stmt *find = NULL;
    int e = copier_init(m, &cp, "scenarios", "SELECT * FROM scenarios ORDER BY id", NULL, 0);
    if (!e)
        e = mprep(m, m->out, "SELECT id, text FROM scenarios WHERE hash = ?1", &find);
    int c_id = cp.sel ? col_index(cp.sel, "id") : -1, c_hash = cp.sel ? col_index(cp.sel, "hash") : -1,
        c_text = cp.sel ? col_index(cp.sel, "text") : -1;
    if (!e && (c_id < 0 || c_hash < 0 || c_text < 0))
        e = dp_err_set(m->err, DP_ERUN, "merge %s: scenarios table lacks id, hash or text", m->in_path);
    int rc = SQLITE_DONE;
    while (!e && (rc = sqlite3_step(cp.sel)) == SQLITE_ROW) {
        int64_t old = sqlite3_column_int64(cp.sel, c_id), nid = 0;
        sqlite3_reset(find);
        sqlite3_bind_value(find, 1, sqlite3_column_value(cp.sel, c_hash));
        rc = sqlite3_step(find);
        if (rc == SQLITE_ROW) {
            const unsigned char *a = sqlite3_column_text(find, 1), *b = sqlite3_column_text(cp.sel, c_text);
            nid = sqlite3_column_int64(find, 0);
            if (!a || !b || strcmp((const char *)a, (const char *)b) != 0)
                e = dp_err_set(m->err, DP_ERUN,
                               "merge %s into %s: scenario %" PRId64
                               " has the hash of stored scenario %" PRId64
                               " but a different text (hash collision)",
                               m->in_path, m->out_path, old, nid);
        } else if (rc == SQLITE_DONE) {
            e = copier_insert(m, &cp, NULL, NULL);
            nid = sqlite3_last_insert_rowid(m->out);
            if (!e)
                ms->scenarios_added++;
        } else {
            e = mfail(m, m->out, "looking up a scenario");
        }
        if (!e && idmap_put(map, old, nid))
            e = dp_err_set(m->err, DP_ENOMEM, "out of memory merging %s", m->in_path);
        rc = SQLITE_DONE;
    }
    if (!e && rc != SQLITE_DONE)
        e = mfail(m, m->in, "reading scenarios");
    sqlite3_finalize(find);
    copier_free(&cp);
    return e;
}

static int merge_sweeps(merger *m, const idmap *scn, idmap *map, sweep_merge_stats *ms)
{
    copier cp;
    sqlite3_stmt *find = NULL;
    const char *const remap[] = {"scenario_id"};
    int e = copier_init(m, &cp, "sweeps", "SELECT * FROM sweeps ORDER BY id", remap, 1);
    if (!e)
        e = mprep(m, m->out, "SELECT id, scenario_id FROM sweeps WHERE spec_json = ?1", &find);
    int c_id = cp.sel ? col_index(cp.sel, "id") : -1, c_scn = cp.sel ? col_index(cp.sel, "scenario_id") : -1,
        c_spec = cp.sel ? col_index(cp.sel, "spec_json") : -1;
    if (!e && (c_id < 0 || c_scn < 0 || c_spec < 0))
        e = dp_err_set(m->err, DP_ERUN, "merge %s: sweeps table lacks id, scenario_id or spec_json",
                       m->in_path);
    int rc = SQLITE_DONE;
    while (!e && (rc = sqlite3_step(cp.sel)) == SQLITE_ROW) {
        int64_t old = sqlite3_column_int64(cp.sel, c_id), nid = 0, nscn = 0;
        if (idmap_get(scn, sqlite3_column_int64(cp.sel, c_scn), &nscn)) {
            e = dp_err_set(m->err, DP_ERUN, "merge %s: sweep %" PRId64 " names a missing scenario",
                           m->in_path, old);
            break;
        }
        sqlite3_reset(find);
        sqlite3_bind_value(find, 1, sqlite3_column_value(cp.sel, c_spec));
        rc = sqlite3_step(find);
        if (rc == SQLITE_ROW) {
            nid = sqlite3_column_int64(find, 0);
            if (sqlite3_column_int64(find, 1) != nscn)
                e = dp_err_set(m->err, DP_ERUN,
                               "merge %s into %s: sweep %" PRId64 " has the spec of stored sweep %" PRId64
                               " but another scenario",
                               m->in_path, m->out_path, old, nid);
        } else if (rc == SQLITE_DONE) {
            int has = 1;
            e = copier_insert(m, &cp, &nscn, &has);
            nid = sqlite3_last_insert_rowid(m->out);
            if (!e)
                ms->sweeps_added++;
        } else {
            e = mfail(m, m->out, "looking up a sweep");
        }
        if (!e && idmap_put(map, old, nid))
            e = dp_err_set(m->err, DP_ENOMEM, "out of memory merging %s", m->in_path);
        rc = SQLITE_DONE;
    }
    if (!e && rc != SQLITE_DONE)
        e = mfail(m, m->in, "reading sweeps");
    sqlite3_finalize(find);
    copier_free(&cp);
    return e;
}

static const char *const child_tables[] = {"run_devices", "run_epochs", "run_flops", "run_segments",
                                           "run_stats"};
#define N_CHILD (sizeof child_tables / sizeof child_tables[0])

static int step_done(merger *m, sqlite3_stmt *s, const char *what)
{
    return sqlite3_step(s) == SQLITE_DONE ? 0 : mfail(m, m->out, what);
}

/* Column positions in the input's runs rows. */
typedef struct run_cols {
    int id, scn, swp, pt, pol, seed, ver, start, ov, status;
} run_cols;

static int merge_runs(merger *m, const idmap *scn, const idmap *swp, sweep_merge_stats *ms)
{
    copier runs, child[N_CHILD];
    memset(child, 0, sizeof child);
    sqlite3_stmt *find_sweep = NULL, *find_plain = NULL, *del[N_CHILD + 1] = {0};
    const char *const run_remap[] = {"scenario_id", "sweep_id"};
    const char *const child_remap[] = {"run_id"};
    int e = copier_init(m, &runs, "runs", "SELECT * FROM runs ORDER BY id", run_remap, 2);
    for (size_t k = 0; k < N_CHILD && !e; k++) {
        char sql[128];
        snprintf(sql, sizeof sql, "SELECT * FROM %s WHERE run_id = ?1 ORDER BY rowid", child_tables[k]);
        e = copier_init(m, &child[k], child_tables[k], sql, child_remap, 1);
        snprintf(sql, sizeof sql, "DELETE FROM %s WHERE run_id = ?1", child_tables[k]);
        if (!e)
            e = mprep(m, m->out, sql, &del[k]);
    }
    if (!e)
        e = mprep(m, m->out, "DELETE FROM runs WHERE id = ?1", &del[N_CHILD]);
    if (!e)
        e = mprep(m, m->out,
                  "SELECT id, status FROM runs WHERE sweep_id = ?1 AND point_json IS ?2 AND policy = ?3"
                  " AND seed = ?4 AND version = ?5 ORDER BY status = 'ok' DESC LIMIT 1",
                  &find_sweep);
    if (!e)
        e = mprep(
            m, m->out,
            "SELECT id FROM runs WHERE sweep_id IS NULL AND scenario_id = ?1 AND policy = ?2 AND seed = ?3"
            " AND version = ?4 AND started_at = ?5 AND overrides_json = ?6 LIMIT 1",
            &find_plain);
    sqlite3_stmt *sel = runs.sel;
    run_cols c = {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1};
    if (!e) {
        c = (run_cols){
            col_index(sel, "id"),         col_index(sel, "scenario_id"), col_index(sel, "sweep_id"),
            col_index(sel, "point_json"), col_index(sel, "policy"),      col_index(sel, "seed"),
            col_index(sel, "version"),    col_index(sel, "started_at"),  col_index(sel, "overrides_json"),
            col_index(sel, "status")};
        if (c.id < 0 || c.scn < 0 || c.swp < 0 || c.pt < 0 || c.pol < 0 || c.seed < 0 || c.ver < 0 ||
            c.start < 0 || c.ov < 0 || c.status < 0)
            e = dp_err_set(m->err, DP_ERUN, "merge %s: the runs table lacks a column merge needs",
                           m->in_path);
    }
    int rc = SQLITE_DONE;
    while (!e && (rc = sqlite3_step(sel)) == SQLITE_ROW) {
        int64_t old = sqlite3_column_int64(sel, c.id);
        int64_t vals[2] = {0, 0};
        int has[2] = {1, sqlite3_column_type(sel, c.swp) != SQLITE_NULL};
        if (idmap_get(scn, sqlite3_column_int64(sel, c.scn), &vals[0]) ||
            (has[1] && idmap_get(swp, sqlite3_column_int64(sel, c.swp), &vals[1]))) {
            e = dp_err_set(m->err, DP_ERUN, "merge %s: run %" PRId64 " names a missing scenario or sweep",
                           m->in_path, old);
            break;
        }
        const unsigned char *status = sqlite3_column_text(sel, c.status);
        int in_ok = status && strcmp((const char *)status, "ok") == 0;
        int64_t replace = 0;
        int skip = 0;
        sqlite3_stmt *f = has[1] ? find_sweep : find_plain;
        sqlite3_reset(f);
        if (has[1]) {
            sqlite3_bind_int64(f, 1, vals[1]);
            sqlite3_bind_value(f, 2, sqlite3_column_value(sel, c.pt));
            sqlite3_bind_value(f, 3, sqlite3_column_value(sel, c.pol));
            sqlite3_bind_value(f, 4, sqlite3_column_value(sel, c.seed));
            sqlite3_bind_value(f, 5, sqlite3_column_value(sel, c.ver));
        } else {
            sqlite3_bind_int64(f, 1, vals[0]);
            sqlite3_bind_value(f, 2, sqlite3_column_value(sel, c.pol));
            sqlite3_bind_value(f, 3, sqlite3_column_value(sel, c.seed));
            sqlite3_bind_value(f, 4, sqlite3_column_value(sel, c.ver));
            sqlite3_bind_value(f, 5, sqlite3_column_value(sel, c.start));
            sqlite3_bind_value(f, 6, sqlite3_column_value(sel, c.ov));
        }
        rc = sqlite3_step(f);
        if (rc == SQLITE_ROW) {
            /* An ok run beats a failed one for the same sweep point (as a
             * retried sweep would do); otherwise OUT's row stays. */
            const unsigned char *os = has[1] ? sqlite3_column_text(f, 1) : NULL;
            if (has[1] && in_ok && os && strcmp((const char *)os, "failed") == 0)
                replace = sqlite3_column_int64(f, 0);
            else
                skip = 1;
        } else if (rc != SQLITE_DONE) {
            e = mfail(m, m->out, "looking up a run");
            break;
        }
        rc = SQLITE_DONE;
        if (skip) {
            ms->runs_skipped++;
            continue;
        }
        for (size_t k = 0; replace && k <= N_CHILD && !e; k++) {
            sqlite3_reset(del[k]);
            sqlite3_bind_int64(del[k], 1, replace);
            e = step_done(m, del[k], "replacing a failed run");
        }
        if (!e)
            e = copier_insert(m, &runs, vals, has);
        if (e)
            break;
        int64_t nid = sqlite3_last_insert_rowid(m->out);
        int one = 1;
        for (size_t k = 0; k < N_CHILD && !e; k++) {
            sqlite3_reset(child[k].sel);
            sqlite3_bind_int64(child[k].sel, 1, old);
            while (!e && (rc = sqlite3_step(child[k].sel)) == SQLITE_ROW)
                e = copier_insert(m, &child[k], &nid, &one);
            if (!e && rc != SQLITE_DONE)
                e = mfail(m, m->in, "reading a run's rows");
        }
        rc = SQLITE_DONE;
        if (!e) {
            if (replace)
                ms->runs_replaced++;
            else
                ms->runs_added++;
        }
    }
    if (!e && rc != SQLITE_DONE)
        e = mfail(m, m->in, "reading runs");
    sqlite3_finalize(find_sweep);
    sqlite3_finalize(find_plain);
    for (size_t k = 0; k <= N_CHILD; k++)
        sqlite3_finalize(del[k]);
    for (size_t k = 0; k < N_CHILD; k++)
        copier_free(&child[k]);
    copier_free(&runs);
    return e;
}

static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    if (stat(a, &sa) || stat(b, &sb))
        return 0;
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

int sweep_merge(const char *out_path, const char *const *in_paths, size_t n_in, sweep_merge_stats *ms,
                dp_err *err)
{
    sweep_merge_stats dummy;
    if (!ms)
        ms = &dummy;
    memset(ms, 0, sizeof *ms);
    if (!out_path || (n_in && !in_paths))
        return dp_err_set(err, DP_EINPUT, "merge: missing output or input databases");
    for (size_t i = 0; i < n_in; i++) {
        struct stat sb;
        if (!in_paths[i] || stat(in_paths[i], &sb) != 0)
            return dp_err_set(err, DP_EINPUT, "merge: input database '%s' does not exist",
                              in_paths[i] ? in_paths[i] : "(null)");
        if (same_file(in_paths[i], out_path))
            return dp_err_set(err, DP_EINPUT, "merge: input '%s' is the output database itself", in_paths[i]);
    }
    store *out = store_open(out_path, 0, err);
    if (!out)
        return err ? err->code : DP_ERUN;
    sqlite3 *odb = store_db(out);
    int e = 0;
    if (sqlite3_exec(odb, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        e = dp_err_set(err, DP_ERUN, "merge into %s: starting the transaction: %s", out_path,
                       sqlite3_errmsg(odb));
    for (size_t i = 0; i < n_in && !e; i++) {
        store *in = store_open_read(in_paths[i], err);
        if (!in) {
            e = err ? err->code : DP_ERUN;
            break;
        }
        merger m = {odb, store_db(in), out_path, in_paths[i], err};
        idmap scn = {0}, swp = {0};
        /* One read snapshot of the input, however long the copy takes. */
        if (sqlite3_exec(m.in, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
            e = mfail(&m, m.in, "starting to read");
        if (!e)
            e = merge_scenarios(&m, &scn, ms);
        if (!e)
            e = merge_sweeps(&m, &scn, &swp, ms);
        if (!e)
            e = merge_runs(&m, &scn, &swp, ms);
        sqlite3_exec(m.in, "COMMIT", NULL, NULL, NULL);
        idmap_free(&scn);
        idmap_free(&swp);
        store_close(in);
    }
    if (!e && sqlite3_exec(odb, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        e = dp_err_set(err, DP_ERUN, "merge into %s: committing: %s", out_path, sqlite3_errmsg(odb));
    if (e) {
        sqlite3_exec(odb, "ROLLBACK", NULL, NULL, NULL);
        memset(ms, 0, sizeof *ms);
    }
    store_close(out);
    return e;
}
