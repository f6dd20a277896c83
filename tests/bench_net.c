/* bench_net: flow sharing at scale.
 *  1. 10,000 devices, each with one flow through its own access link and a
 *     shared server NIC; sizes differ so one flow ends at every completion
 *     event, and each end reshares the remaining flows.  Reports events/s,
 *     with the star fast path (water-filling, net_star.c) and with
 *     progressive filling alone, and the last end time of both.
 *  2. The cost of one progressive filling against the number of active
 *     flows F, to show it grows about as F log F (the ratio time / (F log F)
 *     stays flat).
 *  3. The star fast path from 10^4 to 10^6 flows: time per event grows as
 *     log F (progressive filling would be O(F) per event, O(F^2) in all).
 * Medians of 5 repetitions (3 in part 3).  `bench_net once [F]` runs part 1
 * once (below; DPSIM_NET_NO_STAR=1 for progressive filling). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net.h"
#include "bench_common.h"

/* star: 0 = progressive filling only, 1 = the default (star fast path). */
static void build(size_t F, int star, sim_engine **e, net **n)
{
    *e = sim_engine_new(NULL);
    *n = net_new(*e, NULL);
    if (!star)
        net_set_star_min_flows(*n, SIZE_MAX);
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
    build(F, 1, &e, &n);
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
    for (int star = 1; star >= 0; star--) {
        double rate[5], end = 0;
        uint64_t events = 0, reshares = 0;
        for (int rep = 0; rep < 5; rep++) {
            sim_engine *e;
            net *n;
            build(10000, star, &e, &n);
            double t0 = bench_now_s();
            sim_run(e, INFINITY);
            double dt = bench_now_s() - t0;
            events = sim_events_run(e);
            reshares = net_reshares(n);
            rate[rep] = (double)events / dt;
            end = sim_now(e);
            net_free(n);
            sim_engine_free(e);
        }
        qsort(rate, 5, sizeof *rate, bench_cmp_double);
        printf("10000 flows through one NIC, one ending per event, %s: %llu events, %llu reshares; median "
               "%.0f events/s, %.1f us per event; last end at %.17g s\n",
               star ? "star fast path" : "progressive filling", (unsigned long long)events,
               (unsigned long long)reshares, rate[2], 1e6 / rate[2], end);
    }

    printf("progressive filling: reshare cost by active flows F (median of 5):\n");
    for (size_t F = 1000; F <= 64000; F *= 2) {
        double t[5];
        for (int rep = 0; rep < 5; rep++) {
            sim_engine *e;
            net *n;
            build(F, 0, &e, &n);
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

    printf("star fast path: F flows through one NIC run to completion (median of 3):\n");
    for (size_t F = 10000; F <= 1000000; F *= 10) {
        double t[3];
        uint64_t events = 0;
        for (int rep = 0; rep < 3; rep++) {
            sim_engine *e;
            net *n;
            build(F, 1, &e, &n);
            double t0 = bench_now_s();
            sim_run(e, INFINITY);
            t[rep] = bench_now_s() - t0;
            events = sim_events_run(e);
            net_free(n);
            sim_engine_free(e);
        }
        qsort(t, 3, sizeof *t, bench_cmp_double);
        printf("  F = %7zu: %7.3f s, %.2f us per event, %.1f ns per event per log2 F\n", F, t[1],
               1e6 * t[1] / (double)events, 1e9 * t[1] / (double)events / log2((double)F));
    }
    return 0;
}
