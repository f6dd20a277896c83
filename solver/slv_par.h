/* slv_par.h: one helper thread for the solvers' O(N) passes (internal).
 *
 * A pass over [0, n) is cut into chunks at fixed positions (they depend on n
 * alone); the caller and the helper take chunks in turn from a shared
 * counter, each chunk writes its own partial result, and the caller combines
 * the partials in chunk order.  Which thread ran a chunk therefore never
 * shows in the result, and a pass whose combination is exact (integer sums,
 * maxima, minima, lists joined in order) gives the same bits as the plain
 * loop.  Passes whose sums are floating point are not run here: cutting
 * them would change their rounding.
 *
 * The helper only takes chunks the caller has not reached yet, so a helper
 * that the kernel does not schedule (both cores busy) costs the caller at
 * most the chunk in its hands. */
#ifndef SLV_PAR_H
#define SLV_PAR_H

#include <stddef.h>

/* Chunks per pass (fixed, so partial results fit in an array). */
#define SLV_PAR_CHUNKS 16

typedef struct slv_par slv_par;

/* Runs chunk c, [lo, hi), of a pass. */
typedef void (*slv_par_fn)(void *ctx, size_t c, size_t lo, size_t hi);

/* A helper for passes over n items, or NULL when n is below the size that
 * pays for a thread (slv_set_par_min), or a thread cannot be had (the
 * passes then run in the caller: same results). */
slv_par *slv_par_new(size_t n);
void slv_par_free(slv_par *p);

/* Run fn over [0, n) as SLV_PAR_CHUNKS chunks (fewer when n is small; one
 * when p is NULL) and return how many: chunk c is [c * n / k, (c + 1) * n / k).
 * Returns when every chunk is done. */
size_t slv_par_run(slv_par *p, size_t n, slv_par_fn fn, void *ctx);

/* The start of chunk c of k over n items. */
static inline size_t slv_par_lo(size_t n, size_t k, size_t c)
{
    return n / k * c + n % k * c / k; /* n * c / k without overflow */
}

#endif
