/* lcompress.h: the lossy transforms a model or gradient goes through when
 * it is sent compressed (scenario key `compression:`, docs/MODEL.md
 * "Compression"): top-k sparsification, uniform quantisation to q bits;
 * error feedback and delta coding are the learner's (learner.c keeps the
 * per-device residuals and references).  Pure functions, no state. */
#ifndef DP_LCOMPRESS_H
#define DP_LCOMPRESS_H

#include <stddef.h>

typedef enum { LC_NONE = 0, LC_TOPK = 1, LC_QUANTIZE = 2 } lc_method;

typedef struct lc_cfg {
    int method;         /* lc_method */
    double k;           /* top-k: fraction of the entries kept, (0, 1] */
    int bits;           /* quantize: bits per entry, 1..32 */
    int delta;          /* models: code the difference against the last model the device sent */
    int error_feedback; /* top-k: add what the previous sends dropped before choosing */
    double index_bytes; /* top-k: bytes of each kept entry's index on the wire */
} lc_cfg;

/* Entries top-k keeps out of n: ceil(k n), at least 1, at most n. */
size_t lc_kept(double k, size_t n);
/* out[0..n) = the transform of v (out != v).  top-k: the lc_kept entries
 * of largest magnitude (ties: the lower index) kept, the others zero;
 * quantize: each entry rounded to the nearest of 2^bits evenly spaced
 * levels from min(v) to max(v) (all equal: unchanged).  idx: n entries of
 * scratch (top-k).  LC_NONE copies. */
void lc_apply(const lc_cfg *c, const double *v, size_t n, double *out, size_t *idx);
/* Bytes on the wire for a model or gradient of `params` entries of
 * `bytes_per_param` bytes each: top-k: kept x (bytes_per_param +
 * index_bytes); quantize: ceil(params x bits / 8) + 2 x bytes_per_param
 * (the minimum and the step); none: params x bytes_per_param. */
double lc_wire_bytes(const lc_cfg *c, double params, double bytes_per_param);

#endif
