/* compress.c: the scenario's `compression:` (runtime.h, "compression"):
 * how the models and gradients a policy sends travel, in bytes on the
 * wire (prt_wire_bytes) and in what the learner receives (lcompress.h,
 * lrn_set_compress).  Absent: every send is the model's bytes, exact. */
#include "runtime_impl.h"
#include "yamltree.h"

#include <math.h>

const char *const prt_compress_names[] = {"none", "topk", "quantize", NULL};

int prt_compress_read(const scn_scenario *s, lc_cfg *c, dp_err *err)
{
    *c = (lc_cfg){.method = LC_NONE, .k = 1, .bits = 32, .error_feedback = 1, .index_bytes = 4};
    const yt_node *m = scn_compression(s);
    if (!m)
        return 0;
    static const char *const keys[] = {"method", "k", "bits", "delta", "error_feedback", "index_bytes", NULL};
    int64_t bits;
    int hk, hb;
    if (scn_read_keys(s, m, "compression", keys, err) < 0 ||
        scn_read_enum(s, m, "compression", "method", prt_compress_names, LC_NONE, &c->method, err) < 0 ||
        (hk = scn_read_quantity(s, m, "compression", "k", SCN_UNIT_NUMBER, 0.01, 0, 1, &c->k, err)) < 0 ||
        (hb = scn_read_int(s, m, "compression", "bits", 8, 1, 32, &bits, err)) < 0 ||
        scn_read_bool(s, m, "compression", "delta", 0, &c->delta, err) < 0 ||
        scn_read_bool(s, m, "compression", "error_feedback", 1, &c->error_feedback, err) < 0 ||
        scn_read_quantity(s, m, "compression", "index_bytes", SCN_UNIT_NUMBER, 4, 0, 64, &c->index_bytes,
                          err) < 0)
        return DP_EINPUT;
    c->bits = (int)bits;
    if (hk && c->method != LC_TOPK)
        return scn_read_fail(s, yt_get_key(m, "k"), "compression.k", err, "k is top-k's: give method: topk");
    if (hb && c->method != LC_QUANTIZE)
        return scn_read_fail(s, yt_get_key(m, "bits"), "compression.bits", err,
                             "bits is quantize's: give method: quantize");
    return 0;
}

int prt_compress_open(prt *rt, dp_err *err)
{
    return prt_compress_read(rt->s, &rt->comp, err);
}

const lc_cfg *prt_compress(const prt *rt)
{
    return &rt->comp;
}

/* Bytes on the wire of a payload of `bytes` (the model's, or a part of
 * them, scaled) coded with c. */
static double coded_bytes(const prt *rt, const lc_cfg *c, double bytes)
{
    const scn_scenario *s = rt->s;
    if (c->method == LC_NONE || !(s->model.model_bytes > 0))
        return bytes;
    double full = lc_wire_bytes(c, s->model.params, s->model.bytes_per_param);
    return bytes == s->model.model_bytes ? full : full * (bytes / s->model.model_bytes);
}

double prt_wire_bytes(const prt *rt, double bytes)
{
    return coded_bytes(rt, &rt->comp, bytes);
}

/* The coder of a delta-coded model send (runtime.h, prt_delta_wire_bytes):
 * the run's method with delta coding on, or q-bit quantisation of the
 * delta when the run has no compression. */
lc_cfg prt_delta_coder(const prt *rt, int bits)
{
    lc_cfg c = rt->comp;
    if (c.method == LC_NONE) {
        c.method = LC_QUANTIZE;
        c.bits = bits;
    }
    c.delta = 1;
    return c;
}

double prt_delta_wire_bytes(const prt *rt, int bits, double bytes)
{
    if (bits <= 0)
        return prt_wire_bytes(rt, bytes);
    lc_cfg c = prt_delta_coder(rt, bits);
    return coded_bytes(rt, &c, bytes);
}
