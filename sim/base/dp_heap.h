/* dp_heap.h: the one min-heap of the simulator (the engine's event queue,
 * progressive filling's candidates, the star path's sets), written once.
 *
 * DP_HEAP_DEFINE(name, T, before) defines, for an array of T ordered by
 * `int before(const T *a, const T *b)` (a strict order: 1 when a comes
 * first):
 *   name_up(h, i, x)      put x at position i (a hole: h[0, i) a heap) and
 *                         move it up to its place;
 *   name_down(h, n, i, x) put x at position i of the heap h[0, n) (a hole)
 *                         and move it down to its place;
 *   name_build(h, n)      make h[0, n) a heap (Floyd, O(n)).
 * A pop is name_down(h, n - 1, 0, h[n - 1]) after reading h[0]; a push is
 * name_up(h, n, x) with room for one more.
 *
 * 4-ary: a sift reads four children in a row (one or two cache lines of
 * 16-24-byte entries) and the heap is half as deep as a binary one; the
 * common case (all four children there) runs without bounds checks.  When
 * no two entries are equal under `before` (every user here breaks ties by
 * a sequence number or an index), the pops come in one order whatever the
 * arity or the way the heap was built: switching heaps moves no figure.
 * Header-only so each user's comparison is inlined. */
#ifndef DP_HEAP_H
#define DP_HEAP_H

#include <stddef.h>

#define DP_HEAP_DEFINE(name, T, before)                                                                      \
    static inline void name##_up(T *h, size_t i, T x)                                                        \
    {                                                                                                        \
        while (i > 0) {                                                                                      \
            size_t p = (i - 1) >> 2;                                                                         \
            if (!before(&x, &h[p]))                                                                          \
                break;                                                                                       \
            h[i] = h[p];                                                                                     \
            i = p;                                                                                           \
        }                                                                                                    \
        h[i] = x;                                                                                            \
    }                                                                                                        \
    static inline void name##_down(T *h, size_t n, size_t i, T x)                                            \
    {                                                                                                        \
        for (;;) {                                                                                           \
            size_t c = 4 * i + 1, b = c;                                                                     \
            if (c + 3 < n) {                                                                                 \
                if (before(&h[c + 1], &h[b]))                                                                \
                    b = c + 1;                                                                               \
                if (before(&h[c + 2], &h[b]))                                                                \
                    b = c + 2;                                                                               \
                if (before(&h[c + 3], &h[b]))                                                                \
                    b = c + 3;                                                                               \
            } else {                                                                                         \
                if (c >= n)                                                                                  \
                    break;                                                                                   \
                for (size_t k = c + 1; k < n; k++)                                                           \
                    if (before(&h[k], &h[b]))                                                                \
                        b = k;                                                                               \
            }                                                                                                \
            if (!before(&h[b], &x))                                                                          \
                break;                                                                                       \
            h[i] = h[b];                                                                                     \
            i = b;                                                                                           \
        }                                                                                                    \
        h[i] = x;                                                                                            \
    }                                                                                                        \
    static inline void name##_build(T *h, size_t n)                                                          \
    {                                                                                                        \
        for (size_t i = n > 1 ? (n - 2) / 4 + 1 : 0; i-- > 0;)                                               \
            name##_down(h, n, i, h[i]);                                                                      \
    }

#endif
