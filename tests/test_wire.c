/* test_wire.c: the pieces of `sweep --mpi` and `--shard slurm` that need no
 * MPI: a run packed to bytes and back is the same run bit for bit (every
 * field of res_run, with timeline, FLOPS bins and statistics), truncated or
 * corrupt bytes are refused; the cost estimate orders points as their event
 * counts do; Slurm's array variables give the right shard or a message. */
#include "sweep/sweep_impl.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_common.h"

TEST_SUITE_NO_LEAKS(wire);

static scn_scenario *tiny(const scn_override *ov, size_t n)
{
    const char *src = getenv("DPSIM_SRC");
    char path[1024];
    snprintf(path, sizeof path, "%s/scenarios/tiny.yaml", src ? src : "..");
    dp_err e = {0};
    scn_scenario *s = scn_load_file(path, ov, n, &e);
    cr_assert(s, "%s", e.msg);
    return s;
}

static res_run *run_of(const scn_scenario *s, const char *policy)
{
    dp_err e = {0};
    const policy_def *k = policy_find(policy);
    cr_assert(k, "policy %s", policy);
    res_run *r = policy_run(k, s, 3, &e);
    cr_assert(r, "%s", e.msg);
    return r;
}

static int same_bits(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

static void expect_same(const res_run *a, const res_run *b)
{
    cr_expect_str_eq(a->policy, b->policy);
    cr_expect_str_eq(a->options_json ? a->options_json : "(null)",
                     b->options_json ? b->options_json : "(null)");
    cr_expect_eq(a->seed, b->seed);
    const double ma[] = {a->tsend_s,           a->ttraining_s, a->ttotal_s, a->tflops, a->utilization,
                         a->samples_processed, a->bytes_total, a->wall_s,   a->bin_s,  a->timeline_res_s};
    const double mb[] = {b->tsend_s,           b->ttraining_s, b->ttotal_s, b->tflops, b->utilization,
                         b->samples_processed, b->bytes_total, b->wall_s,   b->bin_s,  b->timeline_res_s};
    for (size_t i = 0; i < sizeof ma / sizeof *ma; i++)
        cr_expect(same_bits(ma[i], mb[i]), "metric %zu: %.17g vs %.17g", i, ma[i], mb[i]);
    cr_expect_eq(a->events, b->events);
    cr_assert_eq(a->n_devices, b->n_devices);
    for (size_t i = 0; i < a->n_devices; i++) {
        const res_device *x = &a->devices[i], *y = &b->devices[i];
        cr_expect(strcmp(x->name, y->name) == 0 && strcmp(x->group, y->group) == 0 &&
                      strcmp(x->kind, y->kind) == 0 && x->samples == y->samples && x->batches == y->batches &&
                      same_bits(x->compute_s, y->compute_s) && same_bits(x->send_s, y->send_s) &&
                      same_bits(x->recv_s, y->recv_s) && same_bits(x->wait_s, y->wait_s) &&
                      same_bits(x->bytes_sent, y->bytes_sent) && same_bits(x->bytes_recv, y->bytes_recv) &&
                      same_bits(x->data_ready_s, y->data_ready_s),
                  "device %zu", i);
    }
    cr_assert_eq(a->n_epochs, b->n_epochs);
    for (size_t i = 0; i < a->n_epochs; i++)
        cr_expect(a->epochs[i].epoch == b->epochs[i].epoch &&
                  same_bits(a->epochs[i].end_s, b->epochs[i].end_s));
    cr_assert_eq(a->n_bins, b->n_bins);
    for (size_t i = 0; i < a->n_bins; i++)
        cr_expect(same_bits(a->flops_bins[i], b->flops_bins[i]), "bin %zu", i);
    cr_assert_eq(a->n_segments, b->n_segments);
    for (size_t i = 0; i < a->n_segments; i++)
        cr_expect(a->segments[i].device == b->segments[i].device &&
                      a->segments[i].act == b->segments[i].act &&
                      same_bits(a->segments[i].t0_s, b->segments[i].t0_s) &&
                      same_bits(a->segments[i].t1_s, b->segments[i].t1_s),
                  "segment %zu", i);
    cr_assert_eq(a->n_stats, b->n_stats);
    for (size_t i = 0; i < a->n_stats; i++)
        cr_expect(strcmp(a->stats[i].name, b->stats[i].name) == 0 && a->stats[i].scope == b->stats[i].scope &&
                      a->stats[i].a == b->stats[i].a && a->stats[i].b == b->stats[i].b &&
                      same_bits(a->stats[i].value, b->stats[i].value),
                  "stat %zu", i);
}

Test(wire, every_policy_round_trips_bit_for_bit)
{
    scn_scenario *s = tiny(NULL, 0);
    for (size_t k = 0; k < policy_count(); k++) {
        dp_err e = {0};
        res_run *r = policy_run(policy_at(k), s, 3, &e);
        if (!r)
            continue; /* a policy that cannot run tiny.yaml has nothing to send */
        /* Values that a lossy encoding would alter: a NaN with a payload,
         * -0, a subnormal, and a statistic of each scope. */
        r->wall_s = -0.0;
        uint64_t nan_bits = 0x7ff8000000001234ULL;
        memcpy(&r->utilization, &nan_bits, sizeof nan_bits);
        r->bytes_total = 4.9406564584124654e-324;
        cr_assert_eq(res_add_stat(r, "wire.test", RES_SCOPE_DEVICE_EPOCH, 1, -2, 1.0 / 3.0), 0);
        cr_assert_eq(res_add_stat(r, "wire.bin", RES_SCOPE_BIN, 0, 5, INFINITY), 0);
        uint8_t *b = NULL;
        size_t len = 0;
        cr_assert_eq(sweep_wire_pack_run(r, &b, &len, &e), 0, "%s", e.msg);
        res_run *back = NULL;
        cr_assert_eq(sweep_wire_unpack_run(b, len, &back, &e), 0, "%s: %s", policy_name(policy_at(k)), e.msg);
        cr_expect_gt(r->n_segments, 0, "%s has a timeline to carry", r->policy);
        expect_same(r, back);
        /* Every proper prefix is refused, never misread. */
        for (size_t cut = 0; cut < len; cut += 1 + cut / 8) {
            res_run *bad = NULL;
            dp_err be = {0};
            cr_expect_eq(sweep_wire_unpack_run(b, cut, &bad, &be), DP_ERUN, "prefix of %zu of %zu bytes", cut,
                         len);
            cr_expect_null(bad);
        }
        /* A corrupt count (devices) is refused without a huge allocation. */
        res_run *bad = NULL;
        uint8_t *c = malloc(len);
        cr_assert(c);
        memcpy(c, b, len);
        /* the last stat value's top byte (before the learning results: an
         * empty source, no evaluations, no targets, 3 x 8 bytes): still a
         * valid double */
        c[len - 1 - 24] ^= 0xff;
        cr_expect_eq(sweep_wire_unpack_run(c, len, &bad, &e), 0);
        res_run_free(bad);
        bad = NULL;
        memset(c, 0, 8); /* the magic */
        cr_expect_eq(sweep_wire_unpack_run(c, len, &bad, &e), DP_ERUN);
        free(c);
        res_run_free(back);
        res_run_free(r);
        dp_free(b);
    }
    scn_free(s);
}

Test(wire, cost_estimate_orders_like_events)
{
    /* More devices, more epochs, a larger dataset: more engine events, and
     * a higher estimate, in the same order. */
    const scn_override variants[][2] = {
        {{"devices.gpu.count", "1"}, {"training.epochs", "1"}},
        {{"devices.gpu.count", "2"}, {"training.epochs", "2"}},
        {{"devices.gpu.count", "2"}, {"training.epochs", "3"}},
        {{"devices.gpu.count", "4"}, {"training.epochs", "6"}},
    };
    double last_est = -1;
    uint64_t last_ev = 0;
    for (size_t i = 0; i < sizeof variants / sizeof *variants; i++) {
        scn_scenario *s = tiny(variants[i], 2);
        double est = sweep_cost_estimate(s);
        res_run *r = run_of(s, "ddp");
        cr_expect_gt(est, last_est, "variant %zu: estimate %g after %g", i, est, last_est);
        cr_expect_gt(r->events, last_ev, "variant %zu: %llu events after %llu", i,
                     (unsigned long long)r->events, (unsigned long long)last_ev);
        last_est = est;
        last_ev = r->events;
        res_run_free(r);
        scn_free(s);
    }
}

Test(wire, slurm_shard_from_the_array_variables)
{
    unsigned k = 0, n = 0;
    dp_err e = {0};
    cr_expect_eq(sweep_shard_slurm("0", "16", NULL, NULL, &k, &n, &e), 0);
    cr_expect(k == 1 && n == 16);
    cr_expect_eq(sweep_shard_slurm("15", "16", "0", "1", &k, &n, &e), 0);
    cr_expect(k == 16 && n == 16);
    cr_expect_eq(sweep_shard_slurm("16", "16", "1", NULL, &k, &n, &e), 0); /* --array=1-16 */
    cr_expect(k == 16 && n == 16);
    cr_expect_eq(sweep_shard_slurm("30", "16", "0", "2", &k, &n, &e), 0); /* --array=0-30:2 */
    cr_expect(k == 16 && n == 16);

    cr_expect_eq(sweep_shard_slurm(NULL, "16", NULL, NULL, &k, &n, &e), DP_EINPUT);
    cr_expect(strstr(e.msg, "SLURM_ARRAY_TASK_ID is not set"), "%s", e.msg);
    cr_expect_eq(sweep_shard_slurm("3", NULL, NULL, NULL, &k, &n, &e), DP_EINPUT);
    cr_expect(strstr(e.msg, "SLURM_ARRAY_TASK_COUNT is not set"), "%s", e.msg);
    cr_expect_eq(sweep_shard_slurm("16", "16", NULL, NULL, &k, &n, &e), DP_EINPUT); /* one past */
    cr_expect(strstr(e.msg, "task 16 is not one of 16 tasks"), "%s", e.msg);
    cr_expect_eq(sweep_shard_slurm("9", "3", "1", "4", &k, &n, &e), 0); /* --array=1-9:4: 1, 5, 9 */
    cr_expect(k == 3 && n == 3);
    cr_expect_eq(sweep_shard_slurm("7", "3", "1", "4", &k, &n, &e), DP_EINPUT); /* off the step */
    cr_expect_eq(sweep_shard_slurm("2", "0", NULL, NULL, &k, &n, &e), DP_EINPUT);
    cr_expect_eq(sweep_shard_slurm("-1", "4", NULL, NULL, &k, &n, &e), DP_EINPUT);
    cr_expect_eq(sweep_shard_slurm("1x", "4", NULL, NULL, &k, &n, &e), DP_EINPUT);
    cr_expect(strstr(e.msg, "got '1x'"), "%s", e.msg);
}
