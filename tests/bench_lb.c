/* bench_lb: the cost of re-balancing every iteration.  LB-BSP re-sizes
 * 1,000 devices' batches at every iteration (a water-filling solve and a
 * largest-remainder rounding, O(N log N)); DDP does nothing of the kind.
 * Both run the same world: 1,000 devices in four speed classes of the same
 * batch (so both do 20 iterations an epoch), analytic collectives (a flows
 * ring over 1,000 devices is refused by the event budget), 3 epochs.
 * Prints the median host seconds of REPS runs of each, their events, and
 * the ratio; exits 1 when lbbsp costs more than 2x DDP's host time
 * (the budget). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"
#include "bench_common.h"

#ifndef REPS
#define REPS 5
#endif

static const char *SCN = "name: bench-lb-1000\n"
                         "model: { name: m, params: 25e6, bytes_per_param: 4, flops_per_sample: 4e9 }\n"
                         "dataset: { name: d, samples: 640000, sample_bytes: 3KB }\n"
                         "training: { epochs: 3 }\n"
                         "devices:\n"
                         "  - { name: a, count: 250, kind: gpu, memory: 24GiB, batch: 32, batch_time: 0.2s, "
                         "link: { up: 1Gbps, down: "
                         "1Gbps, latency: 1ms } }\n"
                         "  - { name: b, count: 250, kind: gpu, memory: 24GiB, batch: 32, batch_time: 0.3s, "
                         "link: { up: 1Gbps, down: "
                         "1Gbps, latency: 1ms } }\n"
                         "  - { name: c, count: 250, kind: gpu, memory: 24GiB, batch: 32, batch_time: 0.5s, "
                         "link: { up: 1Gbps, down: "
                         "1Gbps, latency: 1ms } }\n"
                         "  - { name: d, count: 250, kind: cpu, memory: 24GiB, batch: 32, batch_time: 1.1s, "
                         "link: { up: 1Gbps, down: "
                         "1Gbps, latency: 1ms } }\n"
                         "policies:\n"
                         "  ddp: { collective: analytic }\n"
                         "  lbbsp: { collective: analytic }\n";

static double median_run(const scn_scenario *s, const char *name, uint64_t *events, double *ttotal)
{
    double t[REPS];
    for (int k = 0; k < REPS; k++) {
        dp_err err = {0};
        double t0 = bench_now_s();
        res_run *r = policy_run(policy_find(name), s, 1, &err);
        t[k] = bench_now_s() - t0;
        if (!r) {
            fprintf(stderr, "bench_lb: %s: %s\n", name, err.msg);
            exit(2);
        }
        *events = r->events;
        *ttotal = r->ttotal_s;
        res_run_free(r);
    }
    qsort(t, REPS, sizeof *t, bench_cmp_double);
    return t[REPS / 2];
}

int main(void)
{
    dp_err err = {0};
    scn_scenario *s = scn_load_string("bench-lb.yaml", SCN, strlen(SCN), NULL, NULL, 0, &err);
    if (!s) {
        fprintf(stderr, "bench_lb: %s\n", err.msg);
        return 2;
    }
    uint64_t ev_ddp = 0, ev_lb = 0;
    double T_ddp = 0, T_lb = 0;
    double ddp = median_run(s, "ddp", &ev_ddp, &T_ddp);
    double lb = median_run(s, "lbbsp", &ev_lb, &T_lb);
    printf("bench_lb: 1000 devices, 60 iterations, analytic collectives, median of %d runs\n", REPS);
    printf("  ddp    %8.4f s host  %10llu events  Ttotal %.1f s simulated\n", ddp, (unsigned long long)ev_ddp,
           T_ddp);
    printf("  lbbsp  %8.4f s host  %10llu events  Ttotal %.1f s simulated\n", lb, (unsigned long long)ev_lb,
           T_lb);
    printf("  ratio lbbsp / ddp host time: %.2f (budget 2.00)\n", lb / ddp);
    scn_free(s);
    return lb <= 2 * ddp ? 0 : 1;
}
