/* compute.c: per-device batch times with seeded noise, speed traces and
 * straggler episodes.
 *
 * Straggler episodes are drawn lazily, in time order, from each device's
 * own stream (seeded from the run seed, the device and a salt apart from
 * the noise stream's), so the episodes a device sees depend on the seed
 * only, never on when or how often a policy asks: every policy meets the
 * same slowdowns.  Merged episodes are kept from the earliest one a batch
 * may still start in, since a batch cut short by a failure is followed by
 * one starting before the end of the episodes the cut one walked through. */
#include "compute.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <string.h>

typedef struct strag {
    gsl_rng *rng;
    double next_start;   /* next raw episode start not merged yet */
    double *ep_s, *ep_e; /* merged episodes [ep_s, ep_e), in order */
    size_t head, n, cap; /* live episodes are [head, n) */
} strag;

/* What a plain device's batch time needs, beside its other devices' in one
 * dense array: a batch's end reads this record instead of the device's and
 * then its group's (two dependent cache misses at 10^6 devices). */
typedef struct cmp_fast {
    double a, b;         /* FAST_MEASURED: b = batch_time_s; FAST_DERIVED: a = overhead_s,
                            b = peak_flops * efficiency (the product scn_batch_time divides by) */
    int batch;           /* FAST_MEASURED: the group's batch */
    unsigned char kind;  /* FAST_NONE: through the group (tables) */
    unsigned char plain; /* cmp_plain */
} cmp_fast;

enum { FAST_NONE, FAST_MEASURED, FAST_DERIVED };

struct cmp_model {
    const scn_scenario *s;
    size_t n;
    gsl_rng **rng;      /* NULL entry: device without noise */
    strag *st;          /* per device, NULL when no group has stragglers; rng NULL: none */
    double *straggle_s; /* per device: wall seconds added by episodes */
    cmp_fast *fast;     /* per device */
};

/* splitmix64: decorrelates (seed, device) into one 64-bit stream seed. */
static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static gsl_rng *stream(uint64_t seed, uint64_t salt)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    if (r) {
        uint64_t k = mix(seed ^ mix(salt));
        unsigned long sd = (unsigned long)((k ^ (k >> 32)) & 0xffffffffu);
        gsl_rng_set(r, sd ? sd : 1);
    }
    return r;
}

gsl_rng *cmp_stream(uint64_t seed, size_t dev, int process)
{
    /* process 0 is the noise stream below (salt dev + 1); others are apart */
    return stream(seed, ((uint64_t)process << 40) + (uint64_t)dev + 1);
}

cmp_model *cmp_new(const scn_scenario *s, uint64_t seed, dp_err *err)
{
    cmp_model *c = dp_calloc(1, sizeof *c);
    size_t nd = s->n_devices ? s->n_devices : 1;
    int strag_any = 0;
    for (size_t g = 0; g < s->n_groups; g++)
        strag_any |= s->groups[g].count > 0 && s->groups[g].stragglers.every_s > 0;
    if (!c || !(c->rng = dp_calloc(nd, sizeof *c->rng)) ||
        (strag_any && !(c->st = dp_calloc(nd, sizeof *c->st))) ||
        !(c->straggle_s = dp_calloc(nd, sizeof *c->straggle_s)) ||
        !(c->fast = dp_calloc(nd, sizeof *c->fast))) {
        if (c) {
            dp_free(c->rng);
            dp_free(c->st);
            dp_free(c->straggle_s);
        }
        dp_free(c);
        dp_err_set(err, DP_ENOMEM, "compute model: out of memory");
        return NULL;
    }
    c->s = s;
    c->n = s->n_devices;
    for (size_t i = 0; c->st && i < c->n; i++) {
        const scn_stragglers *sg = &s->groups[s->devices[i].group].stragglers;
        if (!(sg->every_s > 0))
            continue;
        strag *st = &c->st[i];
        if (!(st->rng = cmp_stream(seed, i, CMP_STREAM_STRAGGLERS))) {
            cmp_free(c);
            dp_err_set(err, DP_ENOMEM, "compute model: out of memory");
            return NULL;
        }
        st->next_start = gsl_ran_exponential(st->rng, sg->every_s);
    }
    for (size_t i = 0; i < c->n; i++) {
        const scn_group *g = &s->groups[s->devices[i].group];
        if (g->noise_cv > 0) {
            c->rng[i] = gsl_rng_alloc(gsl_rng_mt19937);
            if (!c->rng[i]) {
                cmp_free(c);
                dp_err_set(err, DP_ENOMEM, "compute model: out of memory");
                return NULL;
            }
            /* mt19937 takes an unsigned long seed; fold to 32 bits, never 0
             * (GSL maps 0 to its default seed). */
            uint64_t k = mix(seed ^ mix((uint64_t)i + 1));
            unsigned long sd = (unsigned long)((k ^ (k >> 32)) & 0xffffffffu);
            gsl_rng_set(c->rng[i], sd ? sd : 1);
        }
    }
    for (size_t i = 0; i < c->n; i++) {
        const scn_group *g = &s->groups[s->devices[i].group];
        cmp_fast *f = &c->fast[i];
        f->plain = !c->rng[i] && !(c->st && c->st[i].rng) && !g->speed_trace;
        if (g->compute == SCN_COMPUTE_MEASURED) {
            f->kind = FAST_MEASURED;
            f->b = g->batch_time_s;
            f->batch = g->batch;
        } else if (g->compute == SCN_COMPUTE_DERIVED) {
            f->kind = FAST_DERIVED;
            f->a = g->overhead_s;
            f->b = g->peak_flops * g->efficiency;
        }
    }
    return c;
}

void cmp_free(cmp_model *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++) {
        if (c->rng[i])
            gsl_rng_free(c->rng[i]);
        if (!c->st)
            continue;
        if (c->st[i].rng)
            gsl_rng_free(c->st[i].rng);
        dp_free(c->st[i].ep_s);
        dp_free(c->st[i].ep_e);
    }
    dp_free(c->rng);
    dp_free(c->st);
    dp_free(c->straggle_s);
    dp_free(c->fast);
    dp_free(c);
}

double cmp_stretch(const trace *tr, double t, double work)
{
    if (!tr)
        return work;
    double start = t;
    /* Walk breakpoints; bounded by the trace length times the number of
     * periods the work spans, and a zero-mean looping trace is refused at
     * load, so this ends. */
    for (long guard = 0; guard < 100000000L; guard++) {
        double v, next = trace_next_change(tr, t, &v);
        double f = trace_value_at(tr, t);
        if (f > 0) {
            double can = isfinite(next) ? (next - t) * f : INFINITY;
            if (can >= work)
                return t + work / f - start;
            work -= can;
        } else if (!isfinite(next)) {
            return INFINITY; /* stuck at factor 0 forever */
        }
        t = next;
    }
    return INFINITY;
}

/* Merge the next raw episodes into one more merged episode. */
static int strag_grow(strag *st, const scn_stragglers *sg)
{
    if (st->n == st->cap) {
        size_t nc = st->cap ? 2 * st->cap : 16;
        double *a = dp_realloc(st->ep_s, nc * sizeof *a);
        if (!a)
            return -1;
        st->ep_s = a;
        double *b = dp_realloc(st->ep_e, nc * sizeof *b);
        if (!b)
            return -1;
        st->ep_e = b;
        st->cap = nc;
    }
    double s0 = st->next_start, e0 = s0 + gsl_ran_exponential(st->rng, sg->lasting_s);
    st->next_start += gsl_ran_exponential(st->rng, sg->every_s);
    while (st->next_start < e0) { /* an episode starting inside this one extends it */
        e0 = fmax(e0, st->next_start + gsl_ran_exponential(st->rng, sg->lasting_s));
        st->next_start += gsl_ran_exponential(st->rng, sg->every_s);
    }
    st->ep_s[st->n] = s0;
    st->ep_e[st->n] = e0;
    st->n++;
    return 0;
}

/* The index of the first merged episode ending after t (generated as needed). */
static long strag_find(strag *st, const scn_stragglers *sg, size_t from, double t)
{
    size_t k = from;
    for (;;) {
        while (k < st->n && st->ep_e[k] <= t)
            k++;
        if (k < st->n)
            return (long)k;
        if (strag_grow(st, sg))
            return -1;
    }
}

/* cmp_stretch with straggler episodes: speed = trace factor / factor inside one. */
static double stretch_strag(cmp_model *c, size_t dev, const trace *tr, double t, double work)
{
    strag *st = &c->st[dev];
    const scn_stragglers *sg = &c->s->groups[c->s->devices[dev].group].stragglers;
    long k = strag_find(st, sg, st->head, t);
    if (k < 0)
        return NAN;
    st->head = (size_t)k;                         /* batches start in nondecreasing time: the past is done */
    if (st->head > 64 && st->head * 2 >= st->n) { /* drop the past, keep memory bounded */
        memmove(st->ep_s, st->ep_s + st->head, (st->n - st->head) * sizeof *st->ep_s);
        memmove(st->ep_e, st->ep_e + st->head, (st->n - st->head) * sizeof *st->ep_e);
        st->n -= st->head;
        st->head = 0;
        k = 0;
    }
    double start = t;
    for (long guard = 0; guard < 100000000L; guard++) {
        if ((k = strag_find(st, sg, (size_t)k, t)) < 0)
            return NAN;
        int in = st->ep_s[k] <= t;
        double bound = in ? st->ep_e[k] : st->ep_s[k];
        double v, next = tr ? trace_next_change(tr, t, &v) : INFINITY;
        double f = tr ? trace_value_at(tr, t) : 1;
        if (in)
            f /= sg->factor;
        if (bound < next)
            next = bound;
        if (f > 0) {
            double can = (next - t) * f;
            if (can >= work)
                return t + work / f - start;
            work -= can;
        } else if (!isfinite(tr ? trace_next_change(tr, t, &v) : INFINITY)) {
            return INFINITY; /* its speed trace stays at 0 */
        }
        t = next;
    }
    return INFINITY;
}

double cmp_batch_s(cmp_model *c, size_t dev, int n, double t_start_s, double part)
{
    const cmp_fast *f = &c->fast[dev];
    if (f->plain && f->kind != FAST_NONE) { /* scn_batch_time's expressions, on the same values */
        if (n < 1)
            return 0 * part;
        double w = f->kind == FAST_MEASURED ? ceil((double)n / (double)f->batch) * f->b
                                            : f->a + (double)n * c->s->model.train_flops_per_sample / f->b;
        return w * part;
    }
    const scn_group *g = &c->s->groups[c->s->devices[dev].group];
    double w = scn_batch_time(c->s, g, n) * part;
    if (c->rng[dev]) {
        /* lognormal with mean 1 and CV noise_cv: sigma^2 = ln(1 + cv^2) */
        double s2 = log1p(g->noise_cv * g->noise_cv);
        w *= gsl_ran_lognormal(c->rng[dev], -0.5 * s2, sqrt(s2));
    }
    if (!c->st || !c->st[dev].rng)
        return cmp_stretch(g->speed_trace, t_start_s, w);
    double dt = stretch_strag(c, dev, g->speed_trace, t_start_s, w);
    double plain = cmp_stretch(g->speed_trace, t_start_s, w);
    if (isfinite(dt) && isfinite(plain))
        c->straggle_s[dev] += dt - plain;
    return dt;
}

int cmp_plain(const cmp_model *c, size_t dev)
{
    return c->fast[dev].plain;
}

void cmp_prefetch(const cmp_model *c, size_t dev)
{
    if (dev < c->n)
        __builtin_prefetch(&c->fast[dev]);
}

int cmp_straggler_episode(cmp_model *c, size_t dev, double t, double *start_s, double *end_s)
{
    if (!c->st || !c->st[dev].rng)
        return 0;
    strag *st = &c->st[dev];
    long k = strag_find(st, &c->s->groups[c->s->devices[dev].group].stragglers, st->head, t);
    if (k < 0)
        return DP_ENOMEM;
    *start_s = st->ep_s[k];
    *end_s = st->ep_e[k];
    return 1;
}

double cmp_straggle_s(const cmp_model *c, size_t dev)
{
    return c->straggle_s[dev];
}
