/* fuzz_trace.h: shared body of the trace reader fuzz targets.
 *
 * The first input byte picks the reader options (loop, rescaling, bits,
 * mahimahi bin width) so one corpus covers their combinations; the rest is
 * the file's text.  A trace that loads is then queried the way the network
 * and compute models query it (value_at, next_change walked over several
 * periods, mean), since a reader that accepts a malformed series would
 * hang or crash there, not in the reader. */
#ifndef DP_FUZZ_TRACE_H
#define DP_FUZZ_TRACE_H

#include "trace.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

static void fuzz_trace_check(const trace *t)
{
    if (t->n < 1 || t->t_s[0] != 0.0)
        abort();
    for (size_t k = 0; k < t->n; k++) {
        if (!isfinite(t->value[k]) || t->value[k] < 0 || !isfinite(t->t_s[k]))
            abort();
        if (k > 0 && !(t->t_s[k] > t->t_s[k - 1]))
            abort();
    }
    if (t->loop && !(t->period_s > t->t_s[t->n - 1]))
        abort();
    double m = trace_mean(t);
    if (!isfinite(m) || m < 0)
        abort();
    /* Walk the breakpoints as the engine does: each step must move time
     * forward, and a bounded number of steps covers 3 periods. */
    double now = 0, v;
    size_t steps = 0, limit = 3 * t->n + 8;
    while (steps++ < limit) {
        double next = trace_next_change(t, now, &v);
        if (isinf(next))
            break;
        if (!(next > now) || !isfinite(v) || v < 0)
            abort();
        double at = trace_value_at(t, next);
        if (!isfinite(at) || at < 0)
            abort();
        now = next;
    }
}

static int fuzz_trace_one(trace_format fmt, const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t b = data[0];
    trace_opts o = {0};
    o.format = fmt;
    o.loop = b & 1;
    o.value_is_bits = (b >> 1) & 1;
    o.scale_to_mean = (b & 4) ? 1.25e6 : 0;
    static const double bins[4] = {0, 0.001, 0.5, 10};
    o.bin_s = bins[(b >> 3) & 3];
    long live = dp_alloc_live();
    dp_err err = {0};
    trace *t = trace_read_buffer("fuzz.trace", (const char *)data + 1, size - 1, &o, &err);
    if (t) {
        fuzz_trace_check(t);
        trace *c = trace_copy(t);
        if (!c || c->n != t->n)
            abort();
        trace_free(c);
        trace_free(t);
    } else if (!err.msg[0]) {
        abort(); /* every failure must say why */
    }
    if (dp_alloc_live() != live)
        abort();
    return 0;
}

#endif
