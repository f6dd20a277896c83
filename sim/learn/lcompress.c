/* lcompress.c: top-k and uniform quantisation (lcompress.h). */
#include "lcompress.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

size_t lc_kept(double k, size_t n)
{
    double c = ceil(k * (double)n - 1e-9); /* k x n exact in decimal rounds to itself, not one above */
    size_t m = c < 1 ? 1 : (size_t)c;
    return m > n ? n : m;
}

static _Thread_local const double
    *by_mag; /* qsort has no context argument; runs of a sweep share no state across threads */

static int cmp_mag(const void *a, const void *b)
{
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    double x = fabs(by_mag[i]), y = fabs(by_mag[j]);
    if (x != y)
        return x > y ? -1 : 1;
    return i < j ? -1 : i > j;
}

void lc_apply(const lc_cfg *c, const double *v, size_t n, double *out, size_t *idx)
{
    if (c->method == LC_TOPK) {
        size_t m = lc_kept(c->k, n);
        if (m == n) {
            memcpy(out, v, n * sizeof *out);
            return;
        }
        for (size_t i = 0; i < n; i++)
            idx[i] = i;
        by_mag = v;
        qsort(idx, n, sizeof *idx, cmp_mag);
        memset(out, 0, n * sizeof *out);
        for (size_t i = 0; i < m; i++)
            out[idx[i]] = v[idx[i]];
        return;
    }
    if (c->method == LC_QUANTIZE && n) {
        double lo = v[0], hi = v[0];
        for (size_t i = 1; i < n; i++) {
            if (v[i] < lo)
                lo = v[i];
            if (v[i] > hi)
                hi = v[i];
        }
        double levels = ldexp(1.0, c->bits) - 1, step = (hi - lo) / levels;
        if (!(step > 0)) {
            memcpy(out, v, n * sizeof *out);
            return;
        }
        for (size_t i = 0; i < n; i++)
            out[i] = lo + nearbyint((v[i] - lo) / step) * step;
        return;
    }
    memcpy(out, v, n * sizeof *out);
}

double lc_wire_bytes(const lc_cfg *c, double params, double bytes_per_param)
{
    if (c->method == LC_TOPK) {
        double m = ceil(c->k * params - 1e-9);
        if (m < 1)
            m = 1;
        if (m > params)
            m = params;
        return m * (bytes_per_param + c->index_bytes);
    }
    if (c->method == LC_QUANTIZE)
        return ceil(params * (double)c->bits / 8) + 2 * bytes_per_param;
    return params * bytes_per_param;
}
