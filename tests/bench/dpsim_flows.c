/* dpsim_flows: dpsim's side of the flow side-by-side (issue 16): the world
 * of tests/bench_net.c part 1 with F flows (one server NIC of 1.25e9 B/s;
 * flow i crosses it and its own access link of 1e6 x (1 + i mod 200) B/s,
 * latency 0, no window cap, 1e6 x (1 + i mod 997) + i bytes), all started
 * at time 0 and run to completion.  tests/bench/simgrid_flows.cpp builds
 * the same world in SimGrid.  Prints one line: "dpsim F flows: makespan S
 * s, N completions, cpu C s, peak RSS M MB"; the makespan must equal
 * SimGrid's (CM02) for the comparison to be between equal answers.
 *
 *   dpsim_flows F [--wan] [--ends FILE]
 * --wan: every odd flow also crosses one shared WAN link of 2e8 B/s, so
 * flows share two links and the star fast path does not apply (progressive
 * filling decides); --ends FILE: each flow's end, "i end_s" a line, in flow
 * order (a single bottleneck fixes the makespan whatever the sharing: the
 * ends are what tell two answers apart). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "net.h"

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static sim_engine *eng;
static uint64_t *ids; /* flow i's id */
static double *ends;  /* flow i's end (--ends) */
static size_t n_flows;

static void done(void *ctx, uint64_t id)
{
    ++*(size_t *)ctx;
    if (!ends)
        return;
    for (size_t lo = 0, hi = n_flows;
         lo < hi;) { /* ids grow with i: no flow has ended when the last starts */
        size_t mid = lo + (hi - lo) / 2;
        if (ids[mid] < id) {
            lo = mid + 1;
        } else {
            if (ids[mid] == id)
                ends[mid] = sim_now(eng);
            hi = mid;
        }
    }
}

int main(int argc, char **argv)
{
    char *end = NULL;
    int wan_on = 0;
    const char *ends_file = NULL;
    for (int a = 2; a < argc; a++) {
        if (!strcmp(argv[a], "--wan"))
            wan_on = 1;
        else if (!strcmp(argv[a], "--ends") && a + 1 < argc)
            ends_file = argv[++a];
        else
            argc = 0; /* usage */
    }
    unsigned long long F = argc >= 2 ? strtoull(argv[1], &end, 10) : 0;
    if (argc < 2 || *end || F == 0 || F > 1000000) {
        fprintf(stderr, "usage: dpsim_flows F [--wan] [--ends FILE]   (1 <= F <= 1000000)\n");
        return 2;
    }
    sim_engine *e = eng = sim_engine_new(NULL);
    net *n = net_new(e, NULL);
    n_flows = F;
    ids = calloc(F, sizeof *ids);
    ends = ends_file ? calloc(F, sizeof *ends) : NULL;
    if (!e || !n || !ids || (ends_file && !ends))
        return 1;
    size_t completions = 0;
    int nic = net_link_add(n, 1.25e9, NULL, "nic");
    int wan = net_link_add(n, 2e8, NULL, "wan");
    for (size_t i = 0; i < F; i++) {
        int acc = net_link_add(n, 1e6 * (double)(1 + i % 200), NULL, "acc");
        int path[3] = {nic, acc, wan};
        ids[i] = net_flow_start(n, path, wan_on && i % 2 ? 3 : 2, 1e6 * (double)(1 + i % 997) + (double)i, 0,
                                INFINITY, done, &completions);
    }
    double t0 = cpu_s();
    sim_run(e, INFINITY);
    double cpu = cpu_s() - t0;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("dpsim %llu flows: makespan %.9g s, %zu completions, cpu %.3f s, peak RSS %.1f MB\n", F,
           sim_now(e), completions, cpu, (double)ru.ru_maxrss / 1024.0);
    int ok = completions == F && !sim_error(e);
    if (ends_file) {
        FILE *fp = fopen(ends_file, "w");
        for (size_t i = 0; fp && i < F; i++)
            fprintf(fp, "%zu %.17g\n", i, ends[i]);
        ok &= fp && fclose(fp) == 0;
    }
    free(ids);
    free(ends);
    net_free(n);
    sim_engine_free(e);
    return ok ? 0 : 1;
}
