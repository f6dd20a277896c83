/* bench_engine: the engine's hold model (schedule + pop) with P pending
 * events, P = 10^3, 10^4 and 10^6.  Each step pops the earliest event, whose
 * handler schedules one more at now + an exponential increment (mean 1), so
 * the queue stays at P; the RNG (xorshift + log) runs in the loop.  Prints the median events/s
 * (processor time) of 5 repetitions and the peak resident memory.  Targets (issue 16): twice ns-3's
 * best scheduler at both sizes (tests/bench/side_by_side.sh), < 50 MB at 10^6; (issue 39) twice
 * ns-3's PriorityQueue scheduler alone (no events, no dispatch) at 10^3 and 10^6.
 * `bench_engine PENDING STEPS [REPS]` runs one size alone, so the peak RSS is that size's. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "engine.h"

#ifndef STEPS
#define STEPS 5000000
#endif
#ifndef REPS
#define REPS 5
#endif
#define MAX_REPS 100

static uint64_t rng = 88172645463325252ull;
static double next_exp(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return -log((double)((rng >> 11) + 1) * 0x1.0p-53);
}

/* The increment is drawn inside the handler, as ns-3's hold model does:
 * pre-drawn increments read about 20% faster (issue 16), which is not what
 * a simulation that draws its own random times sees. */
static void hold(sim_engine *e, void *ctx, uint64_t id)
{
    (void)id;
    sim_after(e, next_exp(), hold, ctx);
}

/* Processor time, not wall time: the machine is shared, and
 * tests/bench/ns3_queue.cc (the peer) measures the same way. */
static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void hold_model(size_t P, uint64_t steps, int reps)
{
    double rate[MAX_REPS];
    for (int rep = 0; rep < reps; rep++) {
        sim_engine *e = sim_engine_new(NULL);
        for (size_t i = 0; i < P; i++)
            sim_at(e, next_exp(), hold, NULL);
        double t0 = cpu_s();
        for (uint64_t s = 0; s < steps; s++)
            sim_step(e);
        rate[rep] = (double)steps / (cpu_s() - t0);
        sim_engine_free(e);
    }
    qsort(rate, (size_t)reps, sizeof *rate, cmp);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("hold model, %7zu pending: median %.2f M events/s (min %.2f, max %.2f); peak RSS %.1f MB\n", P,
           rate[reps / 2] / 1e6, rate[0] / 1e6, rate[reps - 1] / 1e6, (double)ru.ru_maxrss / 1024.0);
}

static int arg(const char *s, unsigned long long lo, unsigned long long hi, unsigned long long *v)
{
    char *end = NULL;
    *v = strtoull(s, &end, 10);
    return *s && !*end && *v >= lo && *v <= hi;
}

int main(int argc, char **argv)
{
    if (argc == 1) {
        hold_model(1000, STEPS, REPS);
        hold_model(10000, STEPS, REPS);
        hold_model(1000000, STEPS, REPS);
        return 0;
    }
    /* One size per process, so the peak RSS is that size's
     * (tests/bench/side_by_side.sh). */
    unsigned long long P, steps, reps = 1;
    if ((argc != 3 && argc != 4) || !arg(argv[1], 1, 16000000, &P) || !arg(argv[2], 1, 1ull << 40, &steps) ||
        (argc == 4 && !arg(argv[3], 1, MAX_REPS, &reps))) {
        fprintf(
            stderr,
            "usage: bench_engine [PENDING STEPS [REPS]]   (REPS <= %d; no arguments: 10^3, 10^4 and 10^6, "
            "%d steps, %d repetitions)\n",
            MAX_REPS, STEPS, REPS);
        return 2;
    }
    hold_model((size_t)P, steps, (int)reps);
    return 0;
}
