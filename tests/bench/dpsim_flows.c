/* dpsim_flows: dpsim's side of the flow side-by-side (issue 16): the world
 * of tests/bench_net.c part 1 with F flows (one server NIC of 1.25e9 B/s;
 * flow i crosses it and its own access link of 1e6 x (1 + i mod 200) B/s,
 * latency 0, no window cap, 1e6 x (1 + i mod 997) + i bytes), all started
 * at time 0 and run to completion.  tests/bench/simgrid_flows.cpp builds
 * the same world in SimGrid.  Prints one line: "dpsim F flows: makespan S
 * s, N completions, cpu C s, peak RSS M MB"; the makespan must equal
 * SimGrid's (CM02) for the comparison to be between equal answers. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "net.h"

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void done(void *ctx, uint64_t id)
{
    (void)id;
    ++*(size_t *)ctx;
}

int main(int argc, char **argv)
{
    char *end = NULL;
    unsigned long long F = argc == 2 ? strtoull(argv[1], &end, 10) : 0;
    if (argc != 2 || *end || F == 0 || F > 1000000) {
        fprintf(stderr, "usage: dpsim_flows F   (1 <= F <= 1000000)\n");
        return 2;
    }
    sim_engine *e = sim_engine_new(NULL);
    net *n = net_new(e, NULL);
    if (!e || !n)
        return 1;
    size_t completions = 0;
    int nic = net_link_add(n, 1.25e9, NULL, "nic");
    for (size_t i = 0; i < F; i++) {
        int acc = net_link_add(n, 1e6 * (double)(1 + i % 200), NULL, "acc");
        int path[2] = {nic, acc};
        net_flow_start(n, path, 2, 1e6 * (double)(1 + i % 997) + (double)i, 0, INFINITY, done, &completions);
    }
    double t0 = cpu_s();
    sim_run(e, INFINITY);
    double cpu = cpu_s() - t0;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("dpsim %llu flows: makespan %.9g s, %zu completions, cpu %.3f s, peak RSS %.1f MB\n", F,
           sim_now(e), completions, cpu, (double)ru.ru_maxrss / 1024.0);
    int ok = completions == F && !sim_error(e);
    net_free(n);
    sim_engine_free(e);
    return ok ? 0 : 1;
}
