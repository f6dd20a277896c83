/* bench_common.h: what the C benchmarks (tests/bench_*.c) share: a
 * monotonic clock and the comparison qsort needs to take a median. */
#ifndef DP_BENCH_COMMON_H
#define DP_BENCH_COMMON_H

#include <time.h>

/* Seconds on the monotonic clock (host time, not simulated). */
static inline double bench_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* qsort comparison of two doubles, ascending. */
static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#endif
