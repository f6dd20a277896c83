/* test_ep4ddl.c: EP4DDL's straggler detection (sim/policy/ep4ddl.c,
 * docs/MODEL.md section 4): a device slowed 4x from t = 2 s to t = 3 s (a
 * speed trace) is flagged within its window of the episode's start,
 * unflagged after it, and nobody is flagged in the same world without the
 * episode; its batch shrinks while flagged (more pushes of fewer samples). */
#include <criterion/criterion.h>

#include "policy/policy.h"
#include "test_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char trace_path[64];

static scn_scenario *world(int episode)
{
    static char buf[4096];
    if (!trace_path[0]) {
        snprintf(trace_path, sizeof trace_path, "/tmp/dpsim-ep4ddl-XXXXXX.csv");
        int fd = mkstemps(trace_path, 4);
        cr_assert(fd >= 0);
        const char *csv = "time_s,factor\n0,1\n2,0.25\n3,1\n";
        cr_assert_eq(write(fd, csv, strlen(csv)), (ssize_t)strlen(csv));
        close(fd);
    }
    char tr[160] = "";
    if (episode)
        snprintf(tr, sizeof tr, ", speed_trace: %s", trace_path);
    snprintf(buf, sizeof buf,
             "name: ep\n"
             "model: {name: softmax, params: 650, flops_per_sample: 1300}\n"
             "dataset: {samples: 1437, sample_bytes: 64B}\n"
             "training: {epochs: 5, seed: 5}\n"
             "server: {nic: {up: 1Gbps, down: 1Gbps}}\n"
             "devices:\n"
             "  - {name: a, count: 3, kind: cpu, memory: 1GiB, batch: 8, batch_time: 10ms,\n"
             "     link: {up: 100Mbps, down: 100Mbps, latency: 5ms}}\n"
             "  - {name: b, count: 1, kind: cpu, memory: 1GiB, batch: 8, batch_time: 10ms,\n"
             "     link: {up: 100Mbps, down: 100Mbps, latency: 5ms}%s}\n"
             "policies: {ep4ddl: {window: 8, threshold: 0.5}}\n",
             tr);
    return load(buf, NULL, 0);
}

static double stat(const res_run *r, const char *name, int64_t a)
{
    for (size_t i = 0; i < r->n_stats; i++)
        if (!strcmp(r->stats[i].name, name) && r->stats[i].a == a)
            return r->stats[i].value;
    cr_assert_fail("no statistic %s %lld", name, (long long)a);
    return 0;
}

Test(ep4ddl, flags_a_straggler_episode_within_its_window_and_not_otherwise)
{
    for (int episode = 0; episode < 2; episode++) {
        scn_scenario *s = world(episode);
        dp_err err = {0};
        res_run *r = policy_run(policy_find("ep4ddl"), s, 5, &err);
        cr_assert(r, "%s", err.msg);
        cr_assert(r->ttotal_s > 3.5, "the run outlasts the episode (%g s)", r->ttotal_s);
        if (!episode) {
            cr_expect_eq(stat(r, "ep4ddl.flags", 0), 0, "flagged without an episode");
            for (int d = 0; d < 4; d++)
                cr_expect_eq(stat(r, "ep4ddl.first_flag_s", d), -1, "device %d flagged", d);
        } else {
            double t = stat(r, "ep4ddl.first_flag_s", 3);
            /* an iteration slowed 4x takes at most ~55 ms (40 ms compute, two
             * 5 ms latencies, the transfers): flagged within 8 of them */
            cr_expect(t >= 2 && t <= 2 + 8 * 0.055, "flagged at %g s", t);
            cr_expect_eq(stat(r, "ep4ddl.flags", 0), 1, "flagged once (and unflagged after the episode)");
            double it = stat(r, "ep4ddl.flagged_iters", 3);
            cr_expect(it > 0 && it < 80, "%g iterations flagged",
                      it); /* ~1 s of 2-sample iterations, then the window drains */
            for (int d = 0; d < 3; d++)
                cr_expect_eq(stat(r, "ep4ddl.first_flag_s", d), -1, "device %d flagged", d);
        }
        res_run_free(r);
        scn_free(s);
    }
    unlink(trace_path);
}
