/* wire.c: a res_run as bytes and back (sweep_impl.h), for the MPI executor:
 * a worker rank sends its run to rank 0, which alone writes the database.
 *
 * Layout: every integer as 8 bytes little-endian, every double as the 8
 * bytes of its IEEE bits little-endian (so the numbers arrive bit for bit,
 * NaN payloads included), strings as a u64 length then the bytes, arrays as
 * a u64 count then the elements.  A magic word and version lead, so bytes
 * from another dpsim build are refused rather than misread.
 *
 * Every field of res_run is carried (results.h): one that is added there
 * must be added to pack_run and unpack_run too (test_wire.c round-trips a
 * real run and compares each field).
 */
#include "sweep/sweep_impl.h"

#include "policy/policy.h"

#include <stdlib.h>
#include <string.h>

#define WIRE_MAGIC   0x64707377697265ULL /* "dpswire" */
#define WIRE_VERSION 2                   /* 2: learning results (evaluations, times to accuracy) */

typedef struct wbuf {
    uint8_t *b;
    size_t len, cap;
    int oom;
} wbuf;

static void put_bytes(wbuf *w, const void *p, size_t n)
{
    if (w->oom)
        return;
    if (w->len + n > w->cap) {
        size_t cap = w->cap ? w->cap : 4096;
        while (cap < w->len + n)
            cap *= 2;
        uint8_t *nb = dp_realloc(w->b, cap);
        if (!nb) {
            w->oom = 1;
            return;
        }
        w->b = nb;
        w->cap = cap;
    }
    if (n)
        memcpy(w->b + w->len, p, n);
    w->len += n;
}

static void put_u64(wbuf *w, uint64_t v)
{
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    put_bytes(w, b, 8);
}

static void put_i64(wbuf *w, int64_t v)
{
    put_u64(w, (uint64_t)v);
}

static void put_f64(wbuf *w, double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    put_u64(w, u);
}

static void put_str(wbuf *w, const char *s, size_t max)
{
    size_t n = s ? strnlen(s, max) : 0;
    put_u64(w, n);
    put_bytes(w, s, n);
}

typedef struct rbuf {
    const uint8_t *b;
    size_t len, off;
    int bad;
} rbuf;

static uint64_t get_u64(rbuf *r)
{
    if (r->bad || r->len - r->off < 8) {
        r->bad = 1;
        return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)r->b[r->off + (size_t)i] << (8 * i);
    r->off += 8;
    return v;
}

static int64_t get_i64(rbuf *r)
{
    return (int64_t)get_u64(r);
}

static double get_f64(rbuf *r)
{
    uint64_t u = get_u64(r);
    double v;
    memcpy(&v, &u, sizeof v);
    return v;
}

/* A count of elements of at least `unit` bytes each that the rest of the
 * buffer can hold (so a corrupt count cannot ask for a huge allocation). */
static size_t get_count(rbuf *r, size_t unit)
{
    uint64_t n = get_u64(r);
    if (r->bad || n > (r->len - r->off) / unit) {
        r->bad = 1;
        return 0;
    }
    return (size_t)n;
}

/* Into a fixed char array of size cap (NUL-terminated). */
static void get_fixed(rbuf *r, char *out, size_t cap)
{
    size_t n = get_count(r, 1);
    if (r->bad || n >= cap) {
        r->bad = 1;
        return;
    }
    memcpy(out, r->b + r->off, n);
    out[n] = '\0';
    r->off += n;
}

/* A dp_malloc'd string; NULL with r->bad on error or out of memory. */
static char *get_dup(rbuf *r, int *oom)
{
    size_t n = get_count(r, 1);
    if (r->bad)
        return NULL;
    char *s = dp_malloc(n + 1);
    if (!s) {
        *oom = 1;
        r->bad = 1;
        return NULL;
    }
    memcpy(s, r->b + r->off, n);
    s[n] = '\0';
    r->off += n;
    return s;
}

int sweep_wire_pack_run(const res_run *r, uint8_t **out, size_t *len, dp_err *err)
{
    wbuf w = {0};
    put_u64(&w, WIRE_MAGIC);
    put_u64(&w, WIRE_VERSION);
    put_str(&w, r->policy, sizeof r->policy);
    put_u64(&w, r->options_json ? 1 : 0);
    put_str(&w, r->options_json, SIZE_MAX);
    put_u64(&w, r->seed);
    put_f64(&w, r->tsend_s);
    put_f64(&w, r->ttraining_s);
    put_f64(&w, r->ttotal_s);
    put_f64(&w, r->tflops);
    put_f64(&w, r->utilization);
    put_f64(&w, r->samples_processed);
    put_f64(&w, r->bytes_total);
    put_u64(&w, r->events);
    put_f64(&w, r->wall_s);
    put_u64(&w, r->n_devices);
    for (size_t i = 0; i < r->n_devices; i++) {
        const res_device *d = &r->devices[i];
        put_str(&w, d->name, RES_NAME_MAX);
        put_str(&w, d->group, RES_GROUP_MAX);
        put_str(&w, d->kind, RES_KIND_MAX);
        put_i64(&w, d->samples);
        put_i64(&w, d->batches);
        put_f64(&w, d->compute_s);
        put_f64(&w, d->send_s);
        put_f64(&w, d->recv_s);
        put_f64(&w, d->wait_s);
        put_f64(&w, d->bytes_sent);
        put_f64(&w, d->bytes_recv);
        put_f64(&w, d->data_ready_s);
    }
    put_u64(&w, r->n_epochs);
    for (size_t i = 0; i < r->n_epochs; i++) {
        put_i64(&w, r->epochs[i].epoch);
        put_f64(&w, r->epochs[i].end_s);
    }
    put_f64(&w, r->bin_s);
    put_u64(&w, r->n_bins);
    for (size_t i = 0; i < r->n_bins; i++)
        put_f64(&w, r->flops_bins[i]);
    put_f64(&w, r->timeline_res_s);
    put_u64(&w, r->n_segments);
    for (size_t i = 0; i < r->n_segments; i++) {
        const res_segment *s = &r->segments[i];
        put_i64(&w, s->device);
        put_i64(&w, (int64_t)s->act);
        put_f64(&w, s->t0_s);
        put_f64(&w, s->t1_s);
    }
    put_u64(&w, r->n_stats);
    for (size_t i = 0; i < r->n_stats; i++) {
        const res_stat *s = &r->stats[i];
        put_str(&w, s->name, sizeof s->name);
        put_i64(&w, (int64_t)s->scope);
        put_i64(&w, s->a);
        put_i64(&w, s->b);
        put_f64(&w, s->value);
    }
    put_str(&w, r->learn_source, sizeof r->learn_source);
    put_u64(&w, r->n_evals);
    for (size_t i = 0; i < r->n_evals; i++) {
        const res_eval *e = &r->evals[i];
        put_f64(&w, e->t_s);
        put_f64(&w, e->epochs);
        put_f64(&w, e->samples);
        put_i64(&w, e->epoch);
        put_f64(&w, e->test_acc);
        put_f64(&w, e->test_loss);
        put_f64(&w, e->train_loss);
    }
    put_u64(&w, r->n_tta);
    for (size_t i = 0; i < r->n_tta; i++) {
        put_f64(&w, r->tta_target[i]);
        put_f64(&w, r->tta_s[i]);
    }
    if (w.oom) {
        dp_free(w.b);
        return dp_err_set(err, DP_ENOMEM, "out of memory packing a %s run", r->policy);
    }
    *out = w.b;
    *len = w.len;
    return 0;
}

int sweep_wire_unpack_run(const uint8_t *buf, size_t len, res_run **out, dp_err *err)
{
    *out = NULL;
    rbuf rb = {buf, len, 0, 0};
    rbuf *b = &rb;
    int oom = 0;
    if (get_u64(b) != WIRE_MAGIC || get_u64(b) != WIRE_VERSION)
        return dp_err_set(err, DP_ERUN, "a result message of %zu bytes is not a dpsim run of this version",
                          len);
    char policy[sizeof((res_run *)0)->policy];
    get_fixed(b, policy, sizeof policy);
    int has_opts = get_u64(b) != 0;
    char *opts = get_dup(b, &oom);
    uint64_t seed = get_u64(b);
    double m[7];
    for (int i = 0; i < 7; i++)
        m[i] = get_f64(b);
    uint64_t events = get_u64(b);
    double wall = get_f64(b);
    /* A device takes at least 3 strings and 9 numbers: 12 x 8 bytes. */
    size_t nd = get_count(b, 96);
    res_run *r = NULL;
    if (!b->bad) {
        dp_err e = {0};
        r = res_run_new(nd, &e);
        if (!r)
            oom = 1, b->bad = 1;
    }
    if (r) {
        snprintf(r->policy, sizeof r->policy, "%s", policy);
        policy_stamp(r); /* the label and colour are the registry's: not on the wire */
        if (has_opts) {
            r->options_json = opts;
            opts = NULL;
        }
        r->seed = seed;
        r->tsend_s = m[0], r->ttraining_s = m[1], r->ttotal_s = m[2], r->tflops = m[3];
        r->utilization = m[4], r->samples_processed = m[5], r->bytes_total = m[6];
        r->events = events;
        r->wall_s = wall;
        for (size_t i = 0; i < nd && !b->bad; i++) {
            res_device *d = &r->devices[i];
            char name[RES_NAME_MAX + 1], group[RES_GROUP_MAX + 1], kind[RES_KIND_MAX + 1];
            get_fixed(b, name, sizeof name);
            get_fixed(b, group, sizeof group);
            get_fixed(b, kind, sizeof kind);
            if (!b->bad && res_device_names(r, i, name, group, kind))
                oom = 1, b->bad = 1;
            d->samples = get_i64(b);
            d->batches = get_i64(b);
            d->compute_s = get_f64(b);
            d->send_s = get_f64(b);
            d->recv_s = get_f64(b);
            d->wait_s = get_f64(b);
            d->bytes_sent = get_f64(b);
            d->bytes_recv = get_f64(b);
            d->data_ready_s = get_f64(b);
        }
        size_t ne = get_count(b, 16);
        for (size_t i = 0; i < ne && !b->bad; i++) {
            int64_t ep = get_i64(b);
            double end = get_f64(b);
            if (!b->bad && res_add_epoch(r, (int)ep, end))
                oom = 1, b->bad = 1;
        }
        r->bin_s = get_f64(b);
        size_t nb = get_count(b, 8);
        if (!b->bad && nb) {
            if (!(r->flops_bins = dp_malloc(nb * sizeof *r->flops_bins)))
                oom = 1, b->bad = 1;
            for (size_t i = 0; i < nb && !b->bad; i++)
                r->flops_bins[i] = get_f64(b);
            if (!b->bad)
                r->n_bins = nb;
        }
        r->timeline_res_s = get_f64(b);
        size_t ns = get_count(b, 32);
        if (!b->bad && ns) {
            if (!(r->segments = dp_malloc(ns * sizeof *r->segments)))
                oom = 1, b->bad = 1;
            else
                r->cap_segments = ns;
            /* Copied as they were, not through res_add_segment, which would
             * merge neighbours the sender kept apart. */
            for (size_t i = 0; i < ns && !b->bad; i++) {
                res_segment *s = &r->segments[i];
                s->device = (int)get_i64(b);
                s->act = (res_activity)get_i64(b);
                s->t0_s = get_f64(b);
                s->t1_s = get_f64(b);
                if (!b->bad)
                    r->n_segments = i + 1;
            }
        }
        size_t nst = get_count(b, 40);
        for (size_t i = 0; i < nst && !b->bad; i++) {
            char name[sizeof((res_stat *)0)->name];
            get_fixed(b, name, sizeof name);
            int64_t scope = get_i64(b), a = get_i64(b), bb = get_i64(b);
            double v = get_f64(b);
            if (!b->bad && (scope < 0 || scope >= RES_SCOPE_COUNT))
                b->bad = 1;
            if (!b->bad && res_add_stat(r, name, (res_scope)scope, a, bb, v))
                oom = 1, b->bad = 1;
        }
        get_fixed(b, r->learn_source, sizeof r->learn_source);
        size_t nev = get_count(b, 56);
        for (size_t i = 0; i < nev && !b->bad; i++) {
            res_eval e = {0};
            e.t_s = get_f64(b);
            e.epochs = get_f64(b);
            e.samples = get_f64(b);
            e.epoch = (int)get_i64(b);
            e.test_acc = get_f64(b);
            e.test_loss = get_f64(b);
            e.train_loss = get_f64(b);
            if (!b->bad && res_add_eval(r, &e))
                oom = 1, b->bad = 1;
        }
        size_t ntt = get_count(b, 16);
        for (size_t i = 0; i < ntt && !b->bad; i++) {
            double tg = get_f64(b), ts = get_f64(b);
            if (!b->bad && res_add_tta(r, tg, ts))
                oom = 1, b->bad = 1;
        }
        if (!b->bad && b->off != len)
            b->bad = 1;
    }
    dp_free(opts);
    if (b->bad) {
        res_run_free(r);
        if (oom)
            return dp_err_set(err, DP_ENOMEM, "out of memory unpacking a run");
        return dp_err_set(err, DP_ERUN, "a result message of %zu bytes is truncated or corrupt (at byte %zu)",
                          len, b->off);
    }
    *out = r;
    return 0;
}
