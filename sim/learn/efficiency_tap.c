/* efficiency_tap.c: an eff_log filled from the update stream
 * (efficiency_tap.h). */
#include "learn/efficiency_tap.h"

#include <string.h>

struct eff_tap {
    eff_log *l;
    size_t n;
    eff_tap_mode mode;
    double *wait;                   /* SYNC / ASYNC: samples waiting for a sync or push */
    double *steps, *samp;           /* LOCAL: steps and samples since the last global average */
    double *snap_steps, *snap_samp; /* average_begin's snapshot */
    long version, *read_ver;        /* the global model's updates; each device's at its pull */
};

eff_tap *eff_tap_new(eff_log *l, size_t n)
{
    eff_tap *t = dp_calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->l = l;
    t->n = n;
    t->wait = dp_calloc(n ? n : 1, sizeof(double));
    t->steps = dp_calloc(n ? n : 1, sizeof(double));
    t->samp = dp_calloc(n ? n : 1, sizeof(double));
    t->snap_steps = dp_calloc(n ? n : 1, sizeof(double));
    t->snap_samp = dp_calloc(n ? n : 1, sizeof(double));
    t->read_ver = dp_calloc(n ? n : 1, sizeof(long));
    if (!t->wait || !t->steps || !t->samp || !t->snap_steps || !t->snap_samp || !t->read_ver) {
        eff_tap_free(t);
        return NULL;
    }
    return t;
}

void eff_tap_free(eff_tap *t)
{
    if (!t)
        return;
    dp_free(t->wait);
    dp_free(t->steps);
    dp_free(t->samp);
    dp_free(t->snap_steps);
    dp_free(t->snap_samp);
    dp_free(t->read_ver);
    dp_free(t);
}

void eff_tap_mode_set(eff_tap *t, eff_tap_mode m)
{
    t->mode = m;
}

static size_t member(const size_t *members, size_t i)
{
    return members ? members[i] : i;
}

int eff_tap_step(eff_tap *t, size_t d, double samples)
{
    if (d >= t->n || !(samples >= 0))
        return DP_EINPUT;
    if (t->mode == EFF_TAP_LOCAL) {
        t->steps[d] += 1;
        t->samp[d] += samples;
    } else {
        t->wait[d] += samples;
    }
    return 0;
}

int eff_tap_sync(eff_tap *t, double time, int epoch, const size_t *members, size_t m)
{
    double M = 0;
    if (!members)
        m = t->n;
    for (size_t i = 0; i < m; i++) {
        size_t d = member(members, i);
        M += t->wait[d];
        t->wait[d] = 0;
    }
    if (!(M > 0))
        return 0;
    t->version++;
    return eff_log_sync(t->l, time, epoch, M);
}

int eff_tap_push(eff_tap *t, double time, int epoch, size_t d, double staleness)
{
    double m = t->wait[d];
    t->wait[d] = 0;
    t->version++; /* an empty push is still an update of the server's clock (as the learner counts) */
    return m > 0 ? eff_log_async(t->l, time, epoch, m, staleness) : 0;
}

long eff_tap_staleness(const eff_tap *t, size_t d)
{
    return d < t->n ? t->version - t->read_ver[d] : 0;
}

void eff_tap_pull(eff_tap *t, size_t d)
{
    if (d < t->n)
        t->read_ver[d] = t->version;
}

/* One local average of the given (steps, samples) per member, zeroing them. */
static int local(eff_tap *t, double time, int epoch, const size_t *members, size_t m, double *steps,
                 double *samp)
{
    double M = 0, D = 0, with = 0;
    for (size_t i = 0; i < m; i++) {
        size_t d = member(members, i);
        if (steps[d] > 0 && samp[d] > 0) {
            M += samp[d] / steps[d];
            D += samp[d];
            with++;
        }
        steps[d] = samp[d] = 0;
    }
    if (!(with > 0))
        return 0;
    t->version++;
    return eff_log_local(t->l, time, epoch, D / M, M, with / (double)t->n);
}

int eff_tap_average(eff_tap *t, double time, int epoch, const size_t *members, size_t m, int into_global)
{
    if (!members)
        m = t->n;
    if (!into_global) /* a site's average: the steps count towards the global one */
        return 0;
    return local(t, time, epoch, members, m, t->steps, t->samp);
}

int eff_tap_average_begin(eff_tap *t, const size_t *members, size_t m)
{
    if (!members)
        m = t->n;
    for (size_t i = 0; i < m; i++) {
        size_t d = member(members, i);
        t->snap_steps[d] += t->steps[d];
        t->snap_samp[d] += t->samp[d];
        t->steps[d] = t->samp[d] = 0;
    }
    return 0;
}

int eff_tap_average_end(eff_tap *t, double time, int epoch, const size_t *members, size_t m)
{
    if (!members)
        m = t->n;
    return local(t, time, epoch, members, m, t->snap_steps, t->snap_samp);
}

void eff_tap_lose(eff_tap *t, size_t d)
{
    if (d < t->n)
        t->wait[d] = t->steps[d] = t->samp[d] = 0;
}
