/* dcache.h: a site's sample cache (scenario `dataset.caches`; docs/MODEL.md
 * section 1, "Caching"), after LOAM's caching at network nodes.  It holds
 * sample ids, kept as runs of consecutive ids, so a cache of 10^9 samples
 * read in large runs costs a few runs, not a sample each.  Pure: no engine.
 *
 *  - lru: an access reads its ids in order; those held are hits; every id
 *    read becomes the most recent, and the least recent ids leave while
 *    more than `capacity` are held.  A cyclic scan of W > capacity ids thus
 *    never hits (each id left before it came round again): LRU's known
 *    worst case, which the planned placement avoids.
 *  - planned: placed ahead from one epoch's access pattern (every access
 *    the epoch will make, each with the cost of a miss per id, given
 *    before the first): the ids whose reads cost most in an epoch (the sum
 *    of their accesses' costs) are pinned, up to the capacity (ties: the
 *    lowest ids); a pinned id is held from its first read on and never
 *    leaves.  So an epoch that re-reads W ids hits min(capacity, W) of
 *    them, the dearest first.
 * A cache of capacity 0 holds nothing and never hits. */
#ifndef DP_DCACHE_H
#define DP_DCACHE_H

#include <stdint.h>

typedef struct dcache dcache;

/* capacity in samples (>= 0); policy SCN_CACHE_LRU or SCN_CACHE_PLANNED.
 * NULL when out of memory. */
dcache *dcache_new(int64_t capacity, int policy);
void dcache_free(dcache *c);
/* planned: one access of the epoch's pattern, ids [first, first + n), a
 * miss costing `cost` (> 0) per id; then dcache_pattern_done once.  0 or
 * DP_ENOMEM.  (lru: ignored.) */
int dcache_pattern_add(dcache *c, int64_t first, int64_t n, double cost);
int dcache_pattern_done(dcache *c);
/* Read ids [first, first + n): how many hit (0..n); the cache changes as
 * the policy says.  Negative (DP_ENOMEM) when out of memory. */
int64_t dcache_access(dcache *c, int64_t first, int64_t n);
/* Ids held now. */
int64_t dcache_held(const dcache *c);

#endif
