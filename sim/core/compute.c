/* compute.c: per-device batch times with seeded noise and speed traces. */
#include "compute.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>

struct cmp_model {
    const scn_scenario *s;
    size_t n;
    gsl_rng **rng; /* NULL entry: device without noise */
};

/* splitmix64: decorrelates (seed, device) into one 64-bit stream seed. */
static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

cmp_model *cmp_new(const scn_scenario *s, uint64_t seed, dp_err *err)
{
    cmp_model *c = dp_calloc(1, sizeof *c);
    if (!c || !(c->rng = dp_calloc(s->n_devices ? s->n_devices : 1, sizeof *c->rng))) {
        dp_free(c);
        dp_err_set(err, DP_ENOMEM, "compute model: out of memory");
        return NULL;
    }
    c->s = s;
    c->n = s->n_devices;
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
    return c;
}

void cmp_free(cmp_model *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++)
        if (c->rng[i])
            gsl_rng_free(c->rng[i]);
    dp_free(c->rng);
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

double cmp_batch_s(cmp_model *c, size_t dev, int n, double t_start_s, double part)
{
    const scn_group *g = &c->s->groups[c->s->devices[dev].group];
    double w = scn_batch_time(c->s, g, n) * part;
    if (c->rng[dev]) {
        /* lognormal with mean 1 and CV noise_cv: sigma^2 = ln(1 + cv^2) */
        double s2 = log1p(g->noise_cv * g->noise_cv);
        w *= gsl_ran_lognormal(c->rng[dev], -0.5 * s2, sqrt(s2));
    }
    return cmp_stretch(g->speed_trace, t_start_s, w);
}
