/* bench_net: flow sharing at scale.
 *  1. 10,000 devices, each with one flow through its own access link and a
 *     shared server NIC; sizes differ so one flow ends at every completion
 *     event, and each end reshares the remaining flows.  Reports events/s.
 *  2. The cost of one reshare against the number of active flows F, to show
 *     it grows about as F log F (the ratio time / (F log F) stays flat).
 * Medians of 5 repetitions.  `bench_net once [F]` runs part 1 once (below). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net.h"
#include "bench_common.h"

static void build(size_t F, sim_engine **e, net **n)
{
    *e = sim_engine_new(NULL);
    *n = net_new(*e, NULL);
    int nic = net_link_add(*n, 1.25e9, NULL, "nic");
    for (size_t i = 0; i < F; i++) {
        /* access links of different speeds: some flows are bottlenecked at
         * their own link, the rest share the NIC */
        int acc = net_link_add(*n, 1e6 * (double)(1 + i % 200), NULL, "acc");
        int path[2] = {nic, acc};
        net_flow_start(*n, path, 2, 1e6 * (double)(1 + i % 997) + (double)i, 0, INFINITY, NULL, NULL);
    }
}

/* `bench_net once [F]`: part 1 once with F flows (default 10,000), for an
 * outside timer that takes its own medians (wall time of the whole
 * process, building the flows included). */
static int once(size_t F)
{
    sim_engine *e;
    net *n;
    build(F, &e, &n);
    double t0 = bench_now_s();
    sim_run(e, INFINITY);
    double dt = bench_now_s() - t0;
    printf("%zu flows through one NIC run to completion: %llu events, %llu reshares, %.3f s, last end at "
           "t = %.17g s\n",
           F, (unsigned long long)sim_events_run(e), (unsigned long long)net_reshares(n), dt, sim_now(e));
    net_free(n);
    sim_engine_free(e);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "once") == 0)
        return once(argc > 2 ? (size_t)strtoul(argv[2], NULL, 10) : 10000);
    double rate[5], resh[5];
    uint64_t events = 0, reshares = 0;
    for (int rep = 0; rep < 5; rep++) {
        sim_engine *e;
        net *n;
        build(10000, &e, &n);
        double t0 = bench_now_s();
        sim_run(e, INFINITY);
        double dt = bench_now_s() - t0;
        events = sim_events_run(e);
        reshares = net_reshares(n);
        rate[rep] = (double)events / dt;
        resh[rep] = dt / (double)reshares;
        net_free(n);
        sim_engine_free(e);
    }
    qsort(rate, 5, sizeof *rate, bench_cmp_double);
    qsort(resh, 5, sizeof *resh, bench_cmp_double);
    printf("10000 flows through one NIC, one ending per event: %llu events, %llu reshares; median %.0f "
           "events/s, "
           "%.3f ms per event\n",
           (unsigned long long)events, (unsigned long long)reshares, rate[2], 1e3 / rate[2]);

    printf("reshare cost by active flows F (median of 5):\n");
    for (size_t F = 1000; F <= 64000; F *= 2) {
        double t[5];
        for (int rep = 0; rep < 5; rep++) {
            sim_engine *e;
            net *n;
            build(F, &e, &n);
            net_reshare_now(n);
            int reps = (int)(2e6 / (double)F) + 1;
            double t0 = bench_now_s();
            for (int r = 0; r < reps; r++)
                net_reshare_now(n);
            t[rep] = (bench_now_s() - t0) / reps;
            net_free(n);
            sim_engine_free(e);
        }
        qsort(t, 5, sizeof *t, bench_cmp_double);
        printf("  F = %6zu: %8.3f ms per reshare, %.2f ns per F log2 F\n", F, 1e3 * t[2],
               1e9 * t[2] / ((double)F * log2((double)F)));
    }
    return 0;
}
