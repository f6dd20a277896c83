/* policy_helpers.h: what tests/test_policy.c and tests/test_rings.c share:
 * run(k, s), a policy's run of scenario s (seed 1), the test stopped with
 * the runtime's message if it fails; expect_same_run(a, b), two runs equal
 * bit for bit in their figures, devices and FLOPS bins; ALT, a world of
 * sites whose rings share a WAN link; early_free, a test policy's free
 * hook with nothing to free.  Include it after
 * test_common.h. */
#ifndef DP_POLICY_HELPERS_H
#define DP_POLICY_HELPERS_H

#include <string.h>

#include "policy/policy.h"
#include "results.h"

/* A test policy's free hook with nothing to free. */
static inline void early_free(prt *rt, const void *opts)
{
    (void)rt;
    (void)opts;
}

static inline res_run *run(const policy_def *k, const scn_scenario *s)
{
    dp_err err = {0};
    res_run *r = policy_run(k, s, 1, &err);
    cr_assert(r, "%s: %s", policy_name(k), err.msg);
    return r;
}

static inline void expect_same_run(const res_run *a, const res_run *b)
{
    cr_expect(memcmp(&a->tsend_s, &b->tsend_s, sizeof(double)) == 0);
    cr_expect(memcmp(&a->ttotal_s, &b->ttotal_s, sizeof(double)) == 0);
    cr_expect(memcmp(&a->tflops, &b->tflops, sizeof(double)) == 0);
    cr_expect_eq(a->events, b->events);
    cr_assert_eq(a->n_devices, b->n_devices);
    for (size_t d = 0; d < a->n_devices; d++) {
        cr_expect(memcmp(&a->devices[d].compute_s, &b->devices[d].compute_s, sizeof(double)) == 0);
        cr_expect(memcmp(&a->devices[d].wait_s, &b->devices[d].wait_s, sizeof(double)) == 0);
    }
    cr_assert_eq(a->n_bins, b->n_bins);
    cr_expect(memcmp(a->flops_bins, b->flops_bins, a->n_bins * sizeof(double)) == 0);
}

/* Four devices alternating between two sites (a1 eu, b1 us, a2 eu, b2 us):
 * every ring edge crosses the WAN, two flows each way.  WAN 8 Mbit/s = 1e6
 * B/s, 10 ms one way; access links 80 Mbit/s, 1 ms.  Model 4e6 B, chunk 1e6
 * B: each round 0.012 + 2 x 1e6 / 1e6 = 2.012 s (the WAN halved between two
 * flows; the old analytic mode said 1.012).  DDP, no overlap, one step: data
 * (shard, 1 sample of 1 B) and model 4e6 B from a server in eu: the us
 * devices' two model flows share the eu->us WAN: 0.011 + 2 x 4e6 / 1e6 =
 * 8.011 s; one batch of 1 s; 6 rounds. */
static const char *const ALT =
    "name: alt\n"
    "model: { name: m, params: 1000000, flops_per_sample: 1.0e6 }\n"
    "dataset: { name: d, samples: 4, sample_bytes: 1 }\n"
    "training: { epochs: 1 }\n"
    "sites: [eu, us]\n"
    "server: { site: eu }\n"
    "wan: [{ between: [eu, us], bandwidth: 8Mbps, latency: 10ms }]\n"
    "devices:\n"
    "  - { name: a1, site: eu, kind: gpu, memory: 1GiB, batch: 1, batch_time: 1s,\n"
    "      link: { up: 80Mbps, down: 80Mbps, latency: 1ms } }\n"
    "  - { name: b1, site: us, kind: gpu, memory: 1GiB, batch: 1, batch_time: 1s,\n"
    "      link: { up: 80Mbps, down: 80Mbps, latency: 1ms } }\n"
    "  - { name: a2, site: eu, kind: gpu, memory: 1GiB, batch: 1, batch_time: 1s,\n"
    "      link: { up: 80Mbps, down: 80Mbps, latency: 1ms } }\n"
    "  - { name: b2, site: us, kind: gpu, memory: 1GiB, batch: 1, batch_time: 1s,\n"
    "      link: { up: 80Mbps, down: 80Mbps, latency: 1ms } }\n"
    "policies: { ddp: { data: shard, overlap: false } }\n";

#endif
