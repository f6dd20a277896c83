/* slv_round.c: turn a real allocation into integers that sum to D.
 *
 * Both roundings accept any real input (negative or non-finite entries count
 * as 0, entries are clamped into [min_share_i, cap_i]) and always return an
 * allocation inside those bounds summing exactly to D; validation guarantees
 * such an allocation exists (sum of minimums <= D <= sum of caps).
 *
 *  - largest remainder: floor, then +1 to the largest fractional parts.  It
 *    ignores batches, so it can leave a device one sample into a new batch,
 *    which costs a whole batch time every epoch.
 *  - batch: floor each share to whole batches, then hand out the deficit one
 *    batch at a time to the device whose next batch raises the objective
 *    least (a heap keyed by the objective after the move, refreshed lazily:
 *    the keys only grow as the maxima grow).  This is what docs/MODEL.md section 5 means by
 *    "whole batches, not single samples, move the objective".
 */
#include "slv.h"

#include <math.h>
#include <string.h>

#include <gsl/gsl_sort.h>

static int64_t cap_of(const slv_problem *p, size_t i)
{
    int64_t c = p->samples;
    if (slv_cap_(p, i) >= 0 && slv_cap_(p, i) < c)
        c = slv_cap_(p, i);
    return c;
}

static double clean(double v)
{
    return (isfinite(v) && v > 0) ? v : 0.0;
}

static int64_t clamp_floor(const slv_problem *p, size_t i, double v)
{
    int64_t c = cap_of(p, i);
    int64_t y = v >= (double)c ? c : (int64_t)floor(v);
    if (y < slv_min_(p, i))
        y = slv_min_(p, i);
    return y;
}

int slv_round_largest_remainder(const slv_problem *p, const double *x, int64_t *out)
{
    size_t n = p->n;
    double *frac = dp_malloc(n * sizeof *frac);
    size_t *idx = dp_malloc(n * sizeof *idx);
    if (!frac || !idx) {
        dp_free(frac);
        dp_free(idx);
        return DP_ENOMEM;
    }
    int64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        double v = clean(x[i]);
        out[i] = clamp_floor(p, i, v);
        frac[i] = v - floor(v);
        sum += out[i];
    }
    gsl_sort_index(idx, frac, 1, n); /* ascending fractional part */
    int64_t R = p->samples - sum;
    /* first pass: one sample each by remainder; later passes (only when the
     * clamp moved things) fill or drain as much as the bounds allow */
    for (int pass = 0; R != 0; pass++) {
        for (size_t k = 0; k < n && R != 0; k++) {
            if (R > 0) {
                size_t i = idx[n - 1 - k];
                int64_t room = cap_of(p, i) - out[i];
                int64_t g = pass == 0 ? (room > 0) : (room < R ? room : R);
                out[i] += g;
                R -= g;
            } else {
                size_t i = idx[k];
                int64_t room = out[i] - slv_min_(p, i);
                int64_t g = pass == 0 ? (room > 0) : (room < -R ? room : -R);
                out[i] -= g;
                R += g;
            }
        }
        if (pass > 1)
            break; /* cannot happen for a validated problem; never loop */
    }
    dp_free(frac);
    dp_free(idx);
    return DP_OK;
}

/* ---- batch-aware ---------------------------------------------------------- */

typedef struct hent {
    double key;
    size_t i;
} hent;

static int hless(hent a, hent b)
{
    return a.key < b.key || (a.key == b.key && a.i < b.i);
}

static void hpush(hent *h, size_t *n, hent x)
{
    size_t k = (*n)++;
    while (k > 0 && hless(x, h[(k - 1) / 2])) {
        h[k] = h[(k - 1) / 2];
        k = (k - 1) / 2;
    }
    h[k] = x;
}

static hent hpop(hent *h, size_t *n)
{
    hent top = h[0], last = h[--*n];
    size_t k = 0;
    for (;;) {
        size_t c = 2 * k + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && hless(h[c + 1], h[c]))
            c++;
        if (!hless(h[c], last))
            break;
        h[k] = h[c];
        k = c;
    }
    if (*n)
        h[k] = last;
    return top;
}

static double level(const slv_problem *p, size_t i, int64_t y)
{
    if (y == 0 && p->allow_exclude)
        return 0;
    return slv_comm_(p, i) + p->batch_s[i] * (double)((y + p->batch[i] - 1) / p->batch[i]);
}

/* Samples device i takes in one move: up to its next batch boundary. */
static int64_t step_of(const slv_problem *p, size_t i, int64_t y, int64_t R)
{
    int64_t b = p->batch[i];
    int64_t g = b - y % b;
    int64_t room = cap_of(p, i) - y;
    if (g > room)
        g = room;
    if (g > R)
        g = R;
    return g;
}

static double key_after(const slv_problem *p, size_t i, int64_t y, int64_t g, double smax, double tmax)
{
    double s = p->send_s[i] * (double)(y + g), t = level(p, i, y + g);
    return (s > smax ? s : smax) + p->epochs * (t > tmax ? t : tmax);
}

int slv_round_batch(const slv_problem *p, const double *x, int64_t *out)
{
    size_t n = p->n;
    hent *h = dp_malloc(n * sizeof *h);
    if (!h)
        return DP_ENOMEM;
    int64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        double v = clean(x[i]);
        int64_t y = clamp_floor(p, i, v);
        int64_t b = p->batch[i];
        int64_t whole = y - y % b; /* whole batches only */
        out[i] = whole < slv_min_(p, i) ? slv_min_(p, i) : whole;
        sum += out[i];
    }
    /* Too many (minimum shares rounded up): drain partial batches first from
     * the devices with the largest own cost, then anything above minimums. */
    if (sum > p->samples) {
        size_t hn = 0;
        for (size_t i = 0; i < n; i++)
            if (out[i] > slv_min_(p, i))
                hpush(h, &hn, (hent){-(p->send_s[i] * (double)out[i] + p->epochs * level(p, i, out[i])), i});
        while (sum > p->samples && hn > 0) {
            hent e = hpop(h, &hn);
            size_t i = e.i;
            int64_t b = p->batch[i], over = sum - p->samples;
            int64_t part = (out[i] - 1) % b + 1; /* samples in the last batch */
            int64_t g = out[i] - slv_min_(p, i);
            if (g > part)
                g = part;
            if (g > over)
                g = over;
            out[i] -= g;
            sum -= g;
            if (out[i] > slv_min_(p, i))
                hpush(h, &hn, (hent){-(p->send_s[i] * (double)out[i] + p->epochs * level(p, i, out[i])), i});
        }
    }
    int64_t R = p->samples - sum;
    if (R > 0) {
        double smax = 0, tmax = 0;
        for (size_t i = 0; i < n; i++) {
            double s = p->send_s[i] * (double)out[i], t = level(p, i, out[i]);
            smax = s > smax ? s : smax;
            tmax = t > tmax ? t : tmax;
        }
        size_t hn = 0;
        for (size_t i = 0; i < n; i++)
            if (cap_of(p, i) > out[i])
                hpush(h, &hn, (hent){key_after(p, i, out[i], step_of(p, i, out[i], R), smax, tmax), i});
        while (R > 0 && hn > 0) {
            hent e = hpop(h, &hn);
            size_t i = e.i;
            int64_t g = step_of(p, i, out[i], R);
            double k = key_after(p, i, out[i], g, smax, tmax);
            if (hn > 0 && hless(h[0], (hent){k, i})) {
                hpush(h, &hn, (hent){k, i}); /* stale key: the maxima grew */
                continue;
            }
            out[i] += g;
            R -= g;
            double s = p->send_s[i] * (double)out[i], t = level(p, i, out[i]);
            smax = s > smax ? s : smax;
            tmax = t > tmax ? t : tmax;
            if (cap_of(p, i) > out[i] && R > 0)
                hpush(h, &hn, (hent){key_after(p, i, out[i], step_of(p, i, out[i], R), smax, tmax), i});
        }
    }
    dp_free(h);
    return DP_OK;
}
