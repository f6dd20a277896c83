/* compute.c: per-device batch times with seeded noise, speed traces and
 * straggler episodes.
 *
 * Straggler episodes (docs/MODEL.md section 3, "Straggler episodes"): each
 * device's episodes start as a Poisson process of mean gap `every` and last
 * an exponential time of mean `lasting`; the device is slow while at least
 * one lasts (overlapping episodes merge: the factor does not compound).
 * They are drawn lazily, in time order, in O(1) memory per device, at a
 * cost independent of how long the device was idle, and they depend on the
 * seed only, never on when or how often a policy asks: every policy meets
 * the same slowdowns.  How: time is cut into cells of W = 64 x max(every,
 * lasting), each with its own counter-based stream (seed, device, cell), so
 * any cell can be generated from its start alone.  An episode alive at a
 * cell's end is carried into the next cell and ends there at the latest
 * (it lasted over 64 x lasting: probability e^-64, about 1e-28).  Cell j
 * draws, in this order:
 *   1. R_j ~ Poisson(lambda L (1 - e^{-W/L})): its episodes still alive at
 *      its end (lambda = 1/every, L = lasting);
 *   2. the first start among those R_j (they cover [c_j, W) together);
 *   3. the last end among the R_{j-1} carried in from cell j-1 (drawn from
 *      cell j-1's step 1, random access), dying in [0, W): [0, a_j);
 *   4. then the episodes that start and end inside it, in time order
 *      (starts at exponential gaps, lengths exponential, those reaching the
 *      cell's end left out: they are step 1's, an independent Poisson
 *      thinning of the same process).
 * That is the same process as drawing every episode from t = 0 (Poisson
 * starts, exponential lengths, a union), but a batch starting at t only
 * draws the cell of t from its start up to the batch's end: at most about
 * 64 x max(1, lasting/every) draws beyond the episodes the batch meets.
 * A batch cut short by a failure is followed by one starting earlier than
 * where the generator stands: the generator then starts the cell of that
 * time over (same draws, same episodes). */
#include "compute.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <string.h>

/* A device's straggler episodes, generated piece by piece: pieces are
 * disjoint, in time order, and together are the episodes' union (two
 * pieces may touch). */
typedef struct strag {
    gsl_rng *rng;   /* a counter-based stream, reseeded per cell; NULL: no stragglers */
    uint64_t key;   /* the device's stream key */
    double W;       /* nominal cell length */
    int64_t cell;   /* the cell being generated; -1: none yet */
    double c0, c1;  /* its bounds [c0, c1), absolute */
    double a_end;   /* carried episodes cover [0, a_end) (relative; 0: none) */
    double c_start; /* episodes alive at its end cover [c_start, W) (W: none) */
    double u, e;    /* next episode inside the cell: [u, e) relative (u >= c_start: none left) */
    int stage;      /* 0: carried piece next, 1: inside, 2: the end piece, 3: cell done */
    int has;        /* a current piece [ps, pe) */
    double ps, pe;  /* the current piece, absolute */
    double prev_e;  /* every piece before the current one ends at or before it */
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

/* A counter-based GSL generator (splitmix64): its whole state is one word,
 * so a cell's stream starts by setting it (mt19937's 2.5 KB state took
 * microseconds to seed; a device's straggler stream is reseeded per cell). */
static void sm_set(void *state, unsigned long seed)
{
    *(uint64_t *)state = seed;
}
static uint64_t sm_next(void *state)
{
    uint64_t *x = state;
    *x += 0x9e3779b97f4a7c15ull;
    return mix(*x);
}
static unsigned long sm_get(void *state)
{
    return (unsigned long)(sm_next(state) >> 32);
}
static double sm_get_double(void *state)
{
    return (double)(sm_next(state) >> 11) * 0x1p-53; /* [0, 1) */
}
static const gsl_rng_type sm_type = {"dpsim-splitmix64", 0xffffffffUL, 0, sizeof(uint64_t), sm_set, sm_get,
                                     sm_get_double};

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
        if (!(st->rng = gsl_rng_alloc(&sm_type))) {
            cmp_free(c);
            dp_err_set(err, DP_ENOMEM, "compute model: out of memory");
            return NULL;
        }
        /* the key of stream(seed, CMP_STREAM_STRAGGLERS's salt), unfolded */
        st->key = mix(seed ^ mix(((uint64_t)CMP_STREAM_STRAGGLERS << 40) + (uint64_t)i + 1));
        st->W = 64 * fmax(sg->every_s, sg->lasting_s);
        st->cell = -1;
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

/* ---- straggler episodes (the cells of the header comment) ---------------- */

static void cell_seed(strag *st, int64_t j)
{
    sm_set(st->rng->state, mix(st->key ^ mix((uint64_t)j + 1)));
}

/* Step 1 of cell j: how many of its episodes are alive at its end. */
static unsigned cell_alive_at_end(strag *st, const scn_stragglers *sg, int64_t j)
{
    cell_seed(st, j);
    double L = sg->lasting_s;
    return gsl_ran_poisson(st->rng, -expm1(-st->W / L) * L / sg->every_s);
}

/* Step 4: the next episode that starts and ends inside the cell, after u. */
static void cell_next_inside(strag *st, const scn_stragglers *sg)
{
    for (;;) {
        st->u += gsl_ran_exponential(st->rng, sg->every_s);
        if (!(st->u < st->c_start)) /* the rest is inside [c_start, W) */
            return;
        double e = st->u + gsl_ran_exponential(st->rng, sg->lasting_s);
        if (e < st->W) {
            st->e = e;
            return;
        }
    }
}

/* Start cell j over from its beginning. */
static void cell_enter(strag *st, const scn_stragglers *sg, int64_t j)
{
    double W = st->W, L = sg->lasting_s, p = exp(-W / L);
    unsigned carried = j > 0 ? cell_alive_at_end(st, sg, j - 1) : 0;
    unsigned alive = cell_alive_at_end(st, sg, j); /* step 1: the first draws of cell j */
    st->c_start = W;
    if (alive) { /* step 2: the minimum of `alive` starts of density e^{-(W-u)/L} on [0, W) */
        double g = -expm1(log1p(-gsl_rng_uniform(st->rng)) / alive);
        st->c_start = fmin(W, fmax(0, W + L * log(p + (1 - p) * g)));
    }
    st->a_end = 0;
    if (carried) { /* step 3: the maximum of `carried` ends of density e^{-x/L} on [0, W) */
        double v = exp(log(gsl_rng_uniform_pos(st->rng)) / carried);
        st->a_end = fmin(W, -L * log1p(-(1 - p) * v));
    }
    st->u = 0;
    cell_next_inside(st, sg);
    st->cell = j;
    st->c0 = (double)j * W;
    st->c1 = (double)(j + 1) * W;
    st->stage = 0;
    st->has = 0;
    st->prev_e = st->c0;
}

/* The next piece after the current one (entering the next cells as needed). */
static void strag_next_piece(strag *st, const scn_stragglers *sg)
{
    for (;;) {
        double rs, re;
        if (st->stage == 0) {
            st->stage = 1;
            if (!(st->a_end > 0))
                continue;
            rs = 0, re = st->a_end;
        } else if (st->stage == 1) {
            if (!(st->u < st->c_start)) {
                st->stage = 2;
                continue;
            }
            rs = st->u, re = st->e;
            cell_next_inside(st, sg);
        } else if (st->stage == 2) {
            st->stage = 3;
            if (!(st->c_start < st->W))
                continue;
            rs = st->c_start, re = st->W;
        } else {
            double prev = st->prev_e;
            cell_enter(st, sg, st->cell + 1);
            st->prev_e = fmax(prev, st->c0);
            continue;
        }
        double a = fmax(st->c0 + rs, st->prev_e), b = re >= st->W ? st->c1 : fmin(st->c0 + re, st->c1);
        if (b > a) {
            st->ps = a;
            st->pe = b;
            st->has = 1;
            return;
        }
    }
}

/* Make the current piece the first one ending after t; 0, or -1 when t is
 * past what a double can cut into cells. */
static int strag_find(strag *st, const scn_stragglers *sg, double t)
{
    double jd = floor(t / st->W);
    if (!(jd >= 0 && jd < 0x1p53))
        return -1;
    int64_t j = (int64_t)jd;
    if (st->cell < 0 || j > st->cell || t < st->prev_e)
        cell_enter(st, sg, j); /* ahead (nothing in between is drawn), or back */
    for (;;) {
        if (!st->has)
            strag_next_piece(st, sg);
        if (st->pe > t)
            return 0;
        st->prev_e = st->pe;
        st->has = 0;
        if (floor(t / st->W) > (double)st->cell) {
            double prev = st->prev_e;
            cell_enter(st, sg, (int64_t)floor(t / st->W));
            st->prev_e = fmax(prev, st->c0);
        }
    }
}

/* cmp_stretch with straggler episodes: speed = trace factor / factor inside one. */
static double stretch_strag(cmp_model *c, size_t dev, const trace *tr, double t, double work)
{
    strag *st = &c->st[dev];
    const scn_stragglers *sg = &c->s->groups[c->s->devices[dev].group].stragglers;
    double start = t;
    /* one pass per piece the batch meets, or per trace breakpoint */
    for (long guard = 0; guard < 100000000L; guard++) {
        if (strag_find(st, sg, t))
            return NAN;
        int in = st->ps <= t;
        double bound = in ? st->pe : st->ps;
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
    if (f->plain && f->kind != FAST_NONE) { /* scn_batch_time, on the group's values kept here */
        if (n < 1)
            return 0 * part;
        double w = f->kind == FAST_MEASURED
                       ? scn_cost_measured(f->b, f->batch, (double)n, 1)
                       : scn_cost_derived(f->a, c->s->model.train_flops_per_sample, f->b, (double)n);
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
    /* Episodes only slow a device (factor >= 1), so dt >= plain in exact
     * arithmetic; the two walks cut the same work at different points (the
     * pieces' bounds), and a difference of -1e-14 s is their rounding, not
     * time given back: clamped to 0. */
    if (isfinite(dt) && isfinite(plain) && dt > plain)
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
    const scn_stragglers *sg = &c->s->groups[c->s->devices[dev].group].stragglers;
    if (strag_find(st, sg, t))
        return DP_EINPUT;
    double s0 = st->ps, e0 = st->pe;
    /* join the pieces that touch it (at most 2^20 of them: a device slow
     * nearly all the time has merged episodes of any length) */
    for (int k = 0; k < (1 << 20); k++) {
        if (strag_find(st, sg, e0))
            return DP_EINPUT;
        if (st->ps > e0)
            break;
        e0 = st->pe;
    }
    *start_s = s0;
    *end_s = e0;
    return 1;
}

double cmp_straggle_s(const cmp_model *c, size_t dev)
{
    return c->straggle_s[dev];
}
