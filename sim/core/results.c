/* results.c: the run record a policy fills (results.h).
 *
 * Invariants kept here:
 *  - every array in a res_run is either NULL (count 0) or a dp_malloc block
 *    owned by the run, so res_run_free can release all of it;
 *  - the timeline holds, per device, segments in the order they were added,
 *    with no zero-length segment and no two contiguous segments of the same
 *    activity (they are merged on insertion), so the Gantt chart and the
 *    stored row count stay proportional to real activity changes.
 *
 * The epoch array has no capacity field in the contract, so it grows to the
 * next power of two when its count reaches one: amortised O(1) appends
 * without changing the struct.
 */
#include "results.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const activity_names[RES_ACT_COUNT] = {
    [RES_ACT_RECV_DATA] = "recv_data", [RES_ACT_RECV_MODEL] = "recv_model",
    [RES_ACT_COMPUTE] = "compute",     [RES_ACT_SEND] = "send",
    [RES_ACT_WAIT] = "wait",
};

const char *res_activity_name(res_activity a)
{
    if ((int)a < 0 || a >= RES_ACT_COUNT)
        return "unknown";
    return activity_names[a];
}

res_run *res_run_new_deferred(size_t n_devices, dp_err *err)
{
    res_run *r = dp_calloc(1, sizeof *r);
    if (!r) {
        dp_err_set(err, DP_ENOMEM, "results: out of memory allocating a run");
        return NULL;
    }
    r->n_devices = n_devices;
    return r;
}

int res_run_devices(res_run *r)
{
    if (r->n_devices == 0 || r->devices)
        return 0;
    res_device *v = dp_calloc(r->n_devices, sizeof *v);
    if (!v)
        return DP_ENOMEM;
    for (size_t d = 0; d < r->n_devices; d++)
        v[d].name = v[d].group = v[d].kind = "";
    r->devices = v;
    return 0;
}

res_run *res_run_new(size_t n_devices, dp_err *err)
{
    res_run *r = res_run_new_deferred(n_devices, err);
    if (r && res_run_devices(r)) {
        dp_free(r);
        dp_err_set(err, DP_ENOMEM, "results: out of memory allocating %zu devices", n_devices);
        return NULL;
    }
    return r;
}

/* The devices' strings: packed one after another in blocks that never
 * move (a record points into them), freed with the run. */
#define STR_BLOCK ((size_t)64 << 10)

struct res_strings {
    char **blocks;
    size_t n_blocks, cap_blocks;
    char *at; /* free space in the last block */
    size_t left;
};

static void strings_free(struct res_strings *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n_blocks; i++)
        dp_free(p->blocks[i]);
    dp_free(p->blocks);
    dp_free(p);
}

/* A copy of s cut to max bytes, in the run's strings; NULL when out of
 * memory. */
static const char *string_copy(res_run *r, const char *s, size_t max)
{
    size_t n = s ? strnlen(s, max) : 0;
    if (n == 0)
        return "";
    struct res_strings *p = r->strings;
    if (!p && !(p = r->strings = dp_calloc(1, sizeof *p)))
        return NULL;
    if (p->left < n + 1) {
        if (p->n_blocks == p->cap_blocks) {
            size_t nc = p->cap_blocks ? 2 * p->cap_blocks : 16;
            char **nb = dp_realloc(p->blocks, nc * sizeof *nb);
            if (!nb)
                return NULL;
            p->blocks = nb;
            p->cap_blocks = nc;
        }
        char *b = dp_malloc(STR_BLOCK);
        if (!b)
            return NULL;
        p->blocks[p->n_blocks++] = b;
        p->at = b;
        p->left = STR_BLOCK; /* > RES_NAME_MAX + 1: any string fits */
    }
    char *c = p->at;
    memcpy(c, s, n);
    c[n] = '\0';
    p->at += n + 1;
    p->left -= n + 1;
    return c;
}

/* s cut to max bytes equals t (t no longer than max). */
static int same_cut(const char *s, const char *t, size_t max)
{
    size_t n = s ? strnlen(s, max) : 0;
    return strlen(t) == n && memcmp(s, t, n) == 0;
}

int res_device_names(res_run *r, size_t d, const char *name, const char *group, const char *kind)
{
    static const char *const kinds[] = {"gpu", "cpu"};
    res_device *v = &r->devices[d];
    const char *g = d > 0 && same_cut(group, r->devices[d - 1].group, RES_GROUP_MAX)
                        ? r->devices[d - 1].group
                        : string_copy(r, group, RES_GROUP_MAX);
    const char *k = NULL;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0] && !k; i++)
        if (same_cut(kind, kinds[i], RES_KIND_MAX))
            k = kinds[i];
    if (!k)
        k = string_copy(r, kind, RES_KIND_MAX);
    const char *nm = string_copy(r, name, RES_NAME_MAX);
    if (!g || !k || !nm)
        return DP_ENOMEM;
    v->name = nm;
    v->group = g;
    v->kind = k;
    return 0;
}

void res_run_free(res_run *r)
{
    if (!r)
        return;
    if (r->learn_log_free)
        r->learn_log_free(r->learn_log);
    dp_free(r->options_json);
    dp_free(r->evals);
    dp_free(r->tta_target);
    dp_free(r->tta_s);
    dp_free(r->devices);
    dp_free(r->epochs);
    dp_free(r->flops_bins);
    dp_free(r->segments);
    dp_free(r->stats);
    strings_free(r->strings);
    dp_free(r);
}

/* Two instants are the same event time when equal up to rounding in the
 * last few bits; exact equality would leave a seam wherever a policy
 * computes the same instant along two different arithmetic paths. */
static int same_instant(double a, double b)
{
    double scale = fabs(a) > 1.0 ? fabs(a) : 1.0;
    return fabs(a - b) <= 1e-12 * scale;
}

int res_add_segment(res_run *r, int device, res_activity act, double t0_s, double t1_s)
{
    if (!r || device < 0 || (size_t)device >= r->n_devices || (int)act < 0 || act >= RES_ACT_COUNT ||
        !isfinite(t0_s) || !isfinite(t1_s) || t1_s < t0_s)
        return DP_EINPUT;
    if (t1_s == t0_s)
        return 0; /* draws nothing; dropping it lets its neighbours merge */

    /* The device's previous segment: scan back over other devices' entries.
     * Policies add segments roughly in time order across devices, so the
     * scan is usually a few entries (about n_devices). */
    for (size_t i = r->n_segments; i-- > 0;) {
        res_segment *p = &r->segments[i];
        if (p->device != device)
            continue;
        if (p->act == act && same_instant(p->t1_s, t0_s)) {
            p->t1_s = t1_s;
            return 0;
        }
        break;
    }

    if (r->n_segments == r->cap_segments) {
        size_t cap = r->cap_segments ? 2 * r->cap_segments : 64;
        if (cap > SIZE_MAX / sizeof *r->segments)
            return DP_ENOMEM;
        res_segment *s = dp_realloc(r->segments, cap * sizeof *s);
        if (!s)
            return DP_ENOMEM;
        r->segments = s;
        r->cap_segments = cap;
    }
    r->segments[r->n_segments++] = (res_segment){.device = device, .act = act, .t0_s = t0_s, .t1_s = t1_s};
    return 0;
}

static int is_pow2(size_t n)
{
    return n && !(n & (n - 1));
}

int res_add_epoch(res_run *r, int epoch, double end_s)
{
    if (!r)
        return DP_EINPUT;
    /* Capacity is implicit: the smallest power of two >= n (see file
     * comment), so the array is full exactly when n is 0 or a power of two.
     * Whoever fills `epochs` must therefore go through this function. */
    if (r->n_epochs == 0 || is_pow2(r->n_epochs)) {
        size_t cap = r->n_epochs ? 2 * r->n_epochs : 1;
        if (cap > SIZE_MAX / sizeof *r->epochs)
            return DP_ENOMEM;
        res_epoch *e = dp_realloc(r->epochs, cap * sizeof *e);
        if (!e)
            return DP_ENOMEM;
        r->epochs = e;
    }
    r->epochs[r->n_epochs++] = (res_epoch){.epoch = epoch, .end_s = end_s};
    return 0;
}

static const char *const scope_names[RES_SCOPE_COUNT] = {
    [RES_SCOPE_RUN] = "run",   [RES_SCOPE_DEVICE] = "device", [RES_SCOPE_DEVICE_EPOCH] = "device_epoch",
    [RES_SCOPE_LINK] = "link", [RES_SCOPE_BIN] = "bin",
};

const char *res_scope_name(res_scope s)
{
    return (unsigned)s < RES_SCOPE_COUNT ? scope_names[s] : "?";
}

int res_scope_by_name(const char *name)
{
    for (int k = 0; name && k < RES_SCOPE_COUNT; k++)
        if (strcmp(name, scope_names[k]) == 0)
            return k;
    return -1;
}

int res_add_stat(res_run *r, const char *name, res_scope scope, int64_t a, int64_t b, double value)
{
    if (!r || !name || (unsigned)scope >= RES_SCOPE_COUNT)
        return DP_EINPUT;
    if (r->n_stats == r->cap_stats) {
        size_t cap = r->cap_stats ? 2 * r->cap_stats : 16;
        if (cap > SIZE_MAX / sizeof *r->stats)
            return DP_ENOMEM;
        res_stat *v = dp_realloc(r->stats, cap * sizeof *v);
        if (!v)
            return DP_ENOMEM;
        r->stats = v;
        r->cap_stats = cap;
    }
    res_stat *st = &r->stats[r->n_stats++];
    snprintf(st->name, sizeof st->name, "%s", name);
    st->scope = scope;
    st->a = a;
    st->b = b;
    st->value = value;
    return 0;
}

const res_stat *res_find_stat(const res_run *r, const char *name, res_scope scope, int64_t a, int64_t b)
{
    for (size_t i = 0; r && i < r->n_stats; i++) {
        const res_stat *st = &r->stats[i];
        if (st->scope == scope && st->a == a && st->b == b && strcmp(st->name, name) == 0)
            return st;
    }
    return NULL;
}

/* The evaluations' capacity is the count rounded up to a power of two (the
 * count is its only record, as for epochs). */
int res_add_eval(res_run *r, const res_eval *e)
{
    size_t n = r->n_evals;
    if (n == 0 || (n & (n - 1)) == 0) {
        res_eval *q = dp_realloc(r->evals, (n ? 2 * n : 1) * sizeof *q);
        if (!q)
            return DP_ENOMEM;
        r->evals = q;
    }
    res_eval *x = &r->evals[r->n_evals++];
    memset(x, 0, sizeof *x); /* padding too: rows compare with memcmp */
    x->t_s = e->t_s;
    x->epochs = e->epochs;
    x->samples = e->samples;
    x->epoch = e->epoch;
    x->test_acc = e->test_acc;
    x->test_loss = e->test_loss;
    x->train_loss = e->train_loss;
    return 0;
}

/* A handful per run: grown one at a time. */
int res_add_tta(res_run *r, double target, double t_s)
{
    double *a = dp_realloc(r->tta_target, (r->n_tta + 1) * sizeof *a);
    if (!a)
        return DP_ENOMEM;
    r->tta_target = a;
    double *b = dp_realloc(r->tta_s, (r->n_tta + 1) * sizeof *b);
    if (!b)
        return DP_ENOMEM;
    r->tta_s = b;
    r->tta_target[r->n_tta] = target;
    r->tta_s[r->n_tta++] = t_s;
    return 0;
}
