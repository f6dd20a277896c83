/* test_data.c: data where it lives and caching (scenario dataset.parts,
 * .storage, .caches; docs/MODEL.md section 1): the placement planner and
 * the cache by hand, whole runs against hand counts and against runs
 * without the keys, and the loader's messages. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <unistd.h>

#include "dcache.h"
#include "dplace.h"
#include "policy/policy.h"
#include "results.h"
#include "test_common.h"

TEST_SUITE_NO_LEAKS(data);

/* tiny.yaml's world: two GPUs on 100 Mbit/s, a CPU on 20 Mbit/s, a 1 Gbit/s NIC */
static const char *TINY =
    "name: t\n"
    "model: { params: 250000, flops_per_sample: 1.0e6 }\n"
    "dataset: { samples: 400, sample_bytes: 3KB }\n"
    "training: { epochs: 2 }\n"
    "server: { nic: { up: 1Gbps, down: 1Gbps }, aggregate_rate: 1GB/s }\n"
    "devices:\n"
    "  - { name: gpu, count: 2, kind: gpu, memory: 1GiB, batch: 16, batch_time: 20ms,\n"
    "      link: { up: 100Mbps, down: 100Mbps, latency: 1ms } }\n"
    "  - { name: cpu, kind: cpu, memory: 512MiB, batch: 4, peak_flops: 10GFLOPS, efficiency: 0.5,\n"
    "      link: { up: 20Mbps, down: 20Mbps, latency: 5ms } }\n";

/* Two sites: the server and three devices in eu, one device in us; 1000
 * samples of 1000 B; a 8 Mbit/s WAN (1e6 B/s). */
static const char *GEO =
    "name: g\n"
    "model: { params: 1000, flops_per_sample: 1.0e6 }\n"
    "dataset: { samples: 1000, sample_bytes: 1000B }\n"
    "training: { epochs: 1 }\n"
    "sites: [eu, us]\n"
    "server: { site: eu }\n"
    "wan: [ { between: [eu, us], bandwidth: 8Mbps } ]\n"
    "devices:\n"
    "  - { name: e, count: 3, kind: gpu, site: eu, memory: 1GiB, batch: 10, batch_time: 10ms,\n"
    "      link: { up: 1Gbps, down: 1Gbps } }\n"
    "  - { name: u, kind: gpu, site: us, memory: 1GiB, batch: 10, batch_time: 10ms,\n"
    "      link: { up: 1Gbps, down: 1Gbps } }\n";

static res_run *run(const scn_scenario *s, const char *policy)
{
    dp_err err = {0};
    res_run *r = policy_run(policy_find(policy), s, 1, &err);
    cr_assert(r, "%s: %s", policy, err.msg);
    return r;
}

static double stat(const res_run *r, const char *name)
{
    const res_stat *x = res_find_stat(r, name, RES_SCOPE_RUN, 0, 0);
    cr_assert(x, "no statistic %s", name);
    return x->value;
}

Test(data, all_at_server_equals_today)
{
    scn_override ov = {"dataset.parts", "[{at: server, samples: 100%}]"};
    const char *pol[] = {"ddp", "cadp", "localsgd", "lbb"};
    for (size_t k = 0; k < 4; k++) {
        scn_scenario *a = load(TINY, NULL, 0), *b = load(TINY, &ov, 1);
        res_run *x = run(a, pol[k]), *y = run(b, pol[k]);
        cr_expect_eq(x->tsend_s, y->tsend_s, "%s", pol[k]);
        cr_expect_eq(x->ttotal_s, y->ttotal_s, "%s", pol[k]);
        cr_expect_eq(x->bytes_total, y->bytes_total, "%s", pol[k]);
        cr_expect_eq(x->events, y->events, "%s", pol[k]);
        for (size_t d = 0; d < 3; d++) {
            cr_expect_eq(x->devices[d].compute_s, y->devices[d].compute_s);
            cr_expect_eq(x->devices[d].bytes_recv, y->devices[d].bytes_recv);
        }
        expect_close(stat(y, "data.bytes_local"), 0);
        res_run_free(x);
        res_run_free(y);
        scn_free(a);
        scn_free(b);
    }
}

/* Every sample already at the device that trains it (DDP's equal shards
 * 134, 133, 133): Tsend is 0, nothing but models moves, and the run is
 * today's shifted by what the data cost: DDP starts when the last device
 * is ready, the CPU, whose data (399,000 B) and model shared its 20 Mbit/s
 * link, so it starts 399000 / 2.5e6 s earlier. */
Test(data, all_at_devices_is_today_minus_distribution)
{
    scn_override sh = {"policies.ddp.data", "shard"};
    scn_override ov[] = {sh, {"dataset.parts", "[{at: gpu, samples: 267}, {at: cpu, samples: 133}]"}};
    scn_scenario *a = load(TINY, &sh, 1), *b = load(TINY, ov, 2);
    res_run *x = run(a, "ddp"), *y = run(b, "ddp");
    cr_expect_eq(y->tsend_s, 0);
    expect_close(stat(y, "data.bytes_moved"), 0);
    expect_close(stat(y, "data.bytes_local"), 400 * 3000.0);
    expect_close(x->ttotal_s - y->ttotal_s, 399000 / 2.5e6);
    expect_close(x->bytes_total - y->bytes_total, 400 * 3000.0);
    expect_close(x->samples_processed, y->samples_processed);
    for (size_t d = 0; d < 3; d++) {
        cr_expect_eq(x->devices[d].samples, y->devices[d].samples);
        cr_expect_eq(x->devices[d].batches, y->devices[d].batches);
        expect_close(x->devices[d].compute_s, y->devices[d].compute_s);
        cr_expect_eq(y->devices[d].data_ready_s, 0);
    }
    res_run_free(x);
    res_run_free(y);
    scn_free(a);
    scn_free(b);
}

/* Half the data at us's storage, half at the server (eu).  Shards of 250:
 * e[0] and e[1] take the server's 500, e[2] finds nothing left in eu and
 * reads 250 from us over the WAN, u reads 250 at home: 1000 samples move,
 * 250 of them over the WAN.  Replicated: every device reads all 1000, the
 * three in eu 500 each over the WAN, u 500 (the server's) the other way. */
Test(data, half_at_one_site_hand_count)
{
    scn_override ov[] = {{"dataset.parts", "[{at: server, samples: 50%}, {at: us, samples: 50%}]"},
                         {"policies.ddp.data", "shard"}};
    scn_scenario *s = load(GEO, ov, 2);
    res_run *r = run(s, "ddp");
    expect_close(stat(r, "data.bytes_moved"), 1000 * 1000.0);
    expect_close(stat(r, "data.bytes_wan"), 250 * 1000.0);
    res_run_free(r);
    scn_free(s);
    s = load(GEO, ov, 1);
    r = run(s, "ddp");
    expect_close(stat(r, "data.bytes_moved"), 4 * 1000 * 1000.0);
    expect_close(stat(r, "data.bytes_wan"), 4 * 500 * 1000.0);
    /* the WAN links carried that and the collectives' share that crossed */
    cr_expect(stat(r, "wan.bytes") >= 4 * 500 * 1000.0);
    res_run_free(r);
    scn_free(s);
}

/* One device in us reads all 1000 samples from eu's storage over the 1e6
 * B/s WAN (asia, holding a replica, is farther: 50 ms); the storage fails
 * at 0.5 s, when 500 samples have arrived.  With the replica the other 500
 * come from asia; without, they are lost and the device trains 500. */
Test(data, failed_storage_replanned_or_lost)
{
    const char *one = "name: f\n"
                      "model: { params: 1000, flops_per_sample: 1.0e6 }\n"
                      "dataset: { samples: 1000, sample_bytes: 1000B }\n"
                      "training: { epochs: 2 }\n"
                      "sites: [eu, us, asia]\n"
                      "server: { site: us }\n"
                      "wan: [ { between: [eu, us], bandwidth: 8Mbps }, { between: [asia, us], bandwidth: "
                      "8Mbps, latency: 50ms } ]\n"
                      "devices:\n"
                      "  - { name: u, kind: gpu, site: us, memory: 1GiB, batch: 10, batch_time: 10ms,\n"
                      "      link: { up: 1Gbps, down: 1Gbps } }\n";
    scn_override ov[] = {{"dataset.storage", "[{site: eu, fails_at: 0.5s}]"},
                         {"dataset.parts", "[{at: eu, samples: 100%, replicas: [asia]}]"}};
    scn_scenario *s = load(one, ov, 2);
    res_run *r = run(s, "locality");
    expect_close(stat(r, "data.samples_lost"), 0);
    expect_close(stat(r, "data.bytes_replanned"), 500 * 1000.0);
    expect_close(stat(r, "data.bytes_moved"), 1000 * 1000.0);
    cr_expect_eq(r->devices[0].samples, 1000);
    res_run_free(r);
    scn_free(s);
    ov[1].value = "[{at: eu, samples: 100%}]";
    s = load(one, ov, 2);
    r = run(s, "locality");
    expect_close(stat(r, "data.samples_lost"), 500);
    expect_close(stat(r, "data.bytes_replanned"), 0);
    cr_expect_eq(r->devices[0].samples, 500);
    expect_close(r->samples_processed, 2 * 500);
    res_run_free(r);
    scn_free(s);
}

/* The cache by hand: 3 epochs each reading ids 0..99 in order. */
static int64_t three_epochs(int64_t cap, int policy)
{
    dcache *c = dcache_new(cap, policy);
    cr_assert(c);
    cr_assert_eq(dcache_pattern_add(c, 0, 60, 1), 0);
    cr_assert_eq(dcache_pattern_add(c, 60, 40, 1), 0);
    cr_assert_eq(dcache_pattern_done(c), 0);
    int64_t hits = 0;
    for (int e = 0; e < 3; e++) {
        hits += dcache_access(c, 0, 60); /* two devices' runs */
        hits += dcache_access(c, 60, 40);
    }
    cr_expect(dcache_held(c) <= cap);
    dcache_free(c);
    return hits;
}

Test(data, cache_hit_rate_by_hand)
{
    /* fits: the first epoch fills, the next two hit everything: 200 of 300 */
    cr_expect_eq(three_epochs(100, SCN_CACHE_LRU), 200);
    cr_expect_eq(three_epochs(100, SCN_CACHE_PLANNED), 200);
    /* 50 of 100: LRU's cyclic worst case never hits; planned pins ids
     * 0..49 and hits them in epochs 2 and 3: 100 of 300 */
    cr_expect_eq(three_epochs(50, SCN_CACHE_LRU), 0);
    cr_expect_eq(three_epochs(50, SCN_CACHE_PLANNED), 100);
    cr_expect_eq(three_epochs(0, SCN_CACHE_LRU), 0);
    cr_expect_eq(three_epochs(0, SCN_CACHE_PLANNED), 0);
    /* planned keeps the dearest: ids 60..99 cost 3 a miss, so they are pinned */
    dcache *p = dcache_new(40, SCN_CACHE_PLANNED);
    cr_assert_eq(dcache_pattern_add(p, 0, 60, 1), 0);
    cr_assert_eq(dcache_pattern_add(p, 60, 40, 3), 0);
    cr_assert_eq(dcache_pattern_done(p), 0);
    cr_expect_eq(dcache_access(p, 0, 60) + dcache_access(p, 60, 40), 0);
    cr_expect_eq(dcache_access(p, 0, 60), 0);
    cr_expect_eq(dcache_access(p, 60, 40), 40);
    dcache_free(p);
    /* a re-read inside the capacity hits within the access */
    dcache *c = dcache_new(10, SCN_CACHE_LRU);
    cr_expect_eq(dcache_access(c, 0, 10), 0);
    cr_expect_eq(dcache_access(c, 5, 10), 5); /* 5..9 held, 10..14 push out 0..4 */
    cr_expect_eq(dcache_access(c, 0, 5), 0);  /* gone */
    cr_expect_eq(dcache_held(c), 10);
    dcache_free(c);
}

/* The same in a run: one device in us re-reads its 100 samples from eu's
 * storage every epoch through us's cache (capacity in samples of 1000 B). */
static const char *CACHED =
    "name: c\n"
    "model: { params: 1000, flops_per_sample: 1.0e6 }\n"
    "dataset: { samples: 100, sample_bytes: 1000B, parts: [{at: eu, samples: 100%}] }\n"
    "training: { epochs: 3 }\n"
    "sites: [eu, us]\n"
    "server: { site: us }\n"
    "wan: [ { between: [eu, us], bandwidth: 8Mbps, latency: 10ms } ]\n"
    "policies: { locality: { reread: true } }\n"
    "devices:\n"
    "  - { name: u, kind: gpu, site: us, memory: 1GiB, batch: 10, batch_time: 10ms,\n"
    "      link: { up: 1Gbps, down: 1Gbps } }\n";

Test(data, cache_in_a_run)
{
    struct {
        const char *cache;
        double hits;
    } k[] = {{"[{site: us, capacity: 100KB}]", 200},
             {"[{site: us, capacity: 50KB}]", 0},
             {"[{site: us, capacity: 50KB, policy: planned}]", 100}};
    for (size_t i = 0; i < 3; i++) {
        scn_override ov = {"dataset.caches", k[i].cache};
        scn_scenario *s = load(CACHED, &ov, 1);
        res_run *r = run(s, "locality");
        expect_close(stat(r, "cache.hits"), k[i].hits);
        expect_close(stat(r, "cache.misses"), 300 - k[i].hits);
        expect_close(stat(r, "cache.hit_rate"), k[i].hits / 300);
        expect_close(stat(r, "cache.bytes_saved"), k[i].hits * 1000);
        expect_close(stat(r, "data.bytes_moved"), 300 * 1000.0); /* hits move too, from the cache */
        expect_close(stat(r, "data.bytes_wan"), (300 - k[i].hits) * 1000);
        res_run_free(r);
        scn_free(s);
    }
}

Test(data, zero_capacity_cache_changes_nothing)
{
    scn_override ov = {"dataset.caches", "[{site: us, capacity: 0B, read: 1Gbps}]"};
    scn_scenario *a = load(CACHED, NULL, 0), *b = load(CACHED, &ov, 1);
    res_run *x = run(a, "locality"), *y = run(b, "locality");
    cr_expect_eq(x->ttotal_s, y->ttotal_s);
    cr_expect_eq(x->tsend_s, y->tsend_s);
    cr_expect_eq(x->bytes_total, y->bytes_total);
    cr_expect_eq(x->n_stats, y->n_stats);
    for (size_t i = 0; i < x->n_stats && i < y->n_stats; i++)
        cr_expect_eq(x->stats[i].value, y->stats[i].value, "%s", x->stats[i].name);
    res_run_free(x);
    res_run_free(y);
    scn_free(a);
    scn_free(b);
}

/* The planner alone: own slice first, then the site, then the nearest. */
Test(data, planner_local_first)
{
    scn_override ov = {"dataset.parts", "[{at: e, samples: 60%}, {at: us, samples: 40%}]"};
    scn_scenario *s = load(GEO, &ov, 1);
    dp_err err = {0};
    dplace *p = dpl_new(s, &err);
    cr_assert(p, "%s", err.msg);
    cr_expect_eq(dpl_n_pools(p), 4); /* e[0..2]: 200 each; us: 400 */
    int64_t demand[4] = {100, 300, 200, 400};
    dpl_plan pl;
    cr_assert_eq(dpl_plan_make(p, demand, NULL, &pl), 0);
    /* e[0]: 100 of its own; e[1]: its 200, then 100 of e[0]'s left (its
     * site, pool order); e[2]: its own 200; u: the 400 at us */
    cr_assert_eq(pl.off[1] - pl.off[0], 1);
    cr_expect_eq(pl.takes[pl.off[0]].holder, 1);
    cr_expect_eq(pl.takes[pl.off[0]].n, 100);
    cr_assert_eq(pl.off[2] - pl.off[1], 2);
    cr_expect_eq(pl.takes[pl.off[1]].holder, 2);
    cr_expect_eq(pl.takes[pl.off[1] + 1].holder, 1);
    cr_expect_eq(pl.takes[pl.off[1] + 1].first, 100);
    cr_expect_eq(pl.takes[pl.off[1] + 1].n, 100);
    cr_expect_eq(pl.takes[pl.off[3]].holder, 5 + 1); /* us's storage: node 4 + 1 + site 1 */
    for (size_t d = 0; d < 4; d++)
        cr_expect_eq(pl.lost[d], 0);
    dpl_plan_free(&pl);
    dpl_holder_set(p, 6, 0); /* us's storage gone: eu has nothing left over, u loses all 400 */
    cr_assert_eq(dpl_plan_make(p, demand, NULL, &pl), 0);
    cr_expect_eq(pl.lost[3], 400);
    cr_expect_eq(pl.off[4] - pl.off[3], 0);
    dpl_plan_free(&pl);
    dpl_free(p);
    scn_free(s);
}

static void refused(const char *text, const scn_override *ov, size_t n, const char *want)
{
    dp_err err = {0};
    scn_scenario *s = scn_load_string("test.yaml", text, strlen(text), NULL, ov, n, &err);
    cr_expect_null(s, "accepted: %s", want);
    cr_expect_eq(err.code, DP_EINPUT);
    cr_expect(strstr(err.msg, want) != NULL, "got: %s\nwant: %s", err.msg, want);
    scn_free(s);
}

Test(data, bad_input_file_line_col)
{
    const char *head = "name: g\nmodel: { params: 1000, flops_per_sample: 1.0e6 }\n"
                       "dataset:\n  samples: 1000\n  sample_bytes: 1000B\n";
    const char *tail =
        "training: { epochs: 1 }\nsites: [eu, us]\n"
        "devices:\n  - { name: e, kind: gpu, site: eu, memory: 1GiB, batch: 10, batch_time: 10ms,\n"
        "      link: { up: 1Gbps, down: 1Gbps } }\n";
    char buf[4096];
    /* parts not adding up to the dataset (line 6: `parts:`'s list) */
    snprintf(buf, sizeof buf,
             "%s  parts:\n    - { at: eu, samples: 40%% }\n    - { at: us, samples: 500 }\n%s", head, tail);
    refused(buf, NULL, 0,
            "test.yaml:7:5: dataset.parts: the parts must add up to the dataset's 1000 samples (got 500 "
            "samples and "
            "40%: 900 samples)");
    /* a cache at an unknown site */
    snprintf(buf, sizeof buf, "%s  caches: [{site: mars, capacity: 1GB}]\n%s", head, tail);
    refused(buf, NULL, 0, "test.yaml:6:19: dataset.caches[0].site: unknown site (have: eu, us) (got mars)");
    scn_override o1 = {"dataset.parts", "[{at: venus, samples: 100%}]"};
    refused(GEO, &o1, 1, "dataset.parts[0].at: unknown site");
    scn_override o2 = {"dataset.parts", "[{at: e, samples: 100%, replicas: [us]}]"};
    refused(GEO, &o2, 1, "a part held on devices has no replicas");
    scn_override o3 = {"dataset.parts", "[{at: us, samples: 0%}, {at: eu, samples: 100%}]"};
    refused(GEO, &o3, 1, "a percentage must be above 0%");
    scn_override o4 = {"dataset.storage", "[{site: us, read: 1Gbps}, {site: us}]"};
    refused(GEO, &o4, 1, "dataset.storage[1].site: a second entry for this site");
    scn_override o5 = {"dataset.caches", "[{site: us, capacity: 1GB, policy: fifo}]"};
    refused(GEO, &o5, 1, "dataset.caches[0].policy");
}

/* cadp.locality: half the samples on the CPU, whose 20 Mbit/s link C-ADP's
 * plain plan avoids; those samples then crawl up that link to the GPUs
 * (24 s), which the plain plan, sending from the server, does not see.
 * Paying for the bytes that move, the plan trains every device on what it
 * holds: nothing moves, and the plan's objective is the run's Ttotal. */
Test(data, cadp_locality_pays_for_moved_bytes)
{
    scn_override ov[] = {{"dataset.parts", "[{at: cpu, samples: 50%}, {at: gpu, samples: 50%}]"},
                         {"dataset.sample_bytes", "300KB"},
                         {"policies.cadp.locality", "true"}};
    scn_scenario *a = load(TINY, ov, 2), *b = load(TINY, ov, 3);
    res_run *x = run(a, "cadp"), *y = run(b, "cadp");
    cr_expect_eq(x->devices[2].samples, 0);
    expect_close(x->tsend_s, 0.006 + 200 * 300e3 / 2.5e6); /* the CPU's up link, shared by the two GPUs */
    cr_expect_eq(y->tsend_s, 0);
    cr_expect_eq(y->devices[0].samples, 100);
    cr_expect_eq(y->devices[1].samples, 100);
    cr_expect_eq(y->devices[2].samples, 200);
    expect_close(stat(y, "data.bytes_moved"), 0);
    expect_close(stat(y, "plan.send_s"), 0);
    expect_close(stat(y, "plan.objective_s"), y->ttotal_s);
    cr_expect(y->ttotal_s < x->ttotal_s / 10, "%g vs %g", y->ttotal_s, x->ttotal_s);
    res_run_free(x);
    res_run_free(y);
    scn_free(a);
    scn_free(b);
}

Test(data, cadp_locality_without_parts_changes_nothing)
{
    scn_override ov = {"policies.cadp.locality", "true"};
    scn_scenario *a = load(TINY, NULL, 0), *b = load(TINY, &ov, 1);
    res_run *x = run(a, "cadp"), *y = run(b, "cadp");
    cr_expect_eq(x->ttotal_s, y->ttotal_s);
    cr_expect_eq(x->tsend_s, y->tsend_s);
    cr_expect_eq(x->bytes_total, y->bytes_total);
    cr_expect_eq(x->n_stats, y->n_stats);
    res_run_free(x);
    res_run_free(y);
    scn_free(a);
    scn_free(b);
}

/* Two GPUs, one twice as fast (16 samples in 10 ms against 20 ms), each
 * holding 200 of the 400 samples; B = 32 per iteration, 13 iterations an
 * epoch, 2 epochs.  The equal-finish split is 21.33 : 10.67, rounded 21 +
 * 11, epoch shares 262.5 : 137.5 -> 263 + 137: the fast GPU reads 63
 * samples from the slow one (100 Mbit/s, 12.5e6 B/s).  With `locality`
 * the split weighs moving (66.7 extra samples per share at sample_bytes /
 * 12.5e6 s each) against 26 iterations x the compute it saves (20 ms ->
 * 13.3 ms a step):
 *  - 3 KB samples: 0.016 s + 26 x 13.3 ms = 0.36 s < 26 x 20 ms = 0.52 s:
 *    the same split, 63 x 3000 B moved;
 *  - 100 KB samples: 0.53 s + 0.35 s > 0.52 s: each trains what it holds,
 *    200 + 200, nothing moves and Tsend is 0, where without the option
 *    63 x 100 KB cross the slow GPU's up link (before the first iteration,
 *    or for dlb and lbbsp, which start equal, at the epoch boundary). */
static const char *TWO = "name: two\n"
                         "model: { params: 250000, flops_per_sample: 1.0e6 }\n"
                         "dataset: { samples: 400, sample_bytes: 3KB, parts: [{at: fast, samples: 200}, {at: "
                         "slow, samples: 200}] }\n"
                         "training: { epochs: 2 }\n"
                         "server: { nic: { up: 1Gbps, down: 1Gbps }, aggregate_rate: 1GB/s }\n"
                         "devices:\n"
                         "  - { name: fast, kind: gpu, memory: 1GiB, batch: 16, batch_time: 10ms,\n"
                         "      link: { up: 100Mbps, down: 100Mbps, latency: 1ms } }\n"
                         "  - { name: slow, kind: gpu, memory: 1GiB, batch: 16, batch_time: 20ms,\n"
                         "      link: { up: 100Mbps, down: 100Mbps, latency: 1ms } }\n";

Test(data, balancers_locality_pay_for_moved_bytes)
{
    const char *pol[] = {"equal_finish", "lbb", "lbbsp", "dlb"};
    for (size_t k = 0; k < 4; k++)
        for (int dear = 0; dear < 2; dear++)
            for (int loc = 0; loc < 2; loc++) {
                char key[64], lkey[64];
                snprintf(key, sizeof key, "policies.%s.data", pol[k]);
                snprintf(lkey, sizeof lkey, "policies.%s.locality", pol[k]);
                scn_override ov[] = {{key, "shard"},
                                     {lkey, loc ? "true" : "false"},
                                     {"dataset.sample_bytes", dear ? "100KB" : "3KB"}};
                scn_scenario *s = load(TWO, ov, 3);
                res_run *r = run(s, pol[k]);
                int own = dear && loc;
                cr_expect_eq(r->devices[0].samples, own ? 200 : 263, "%s dear %d loc %d", pol[k], dear, loc);
                cr_expect_eq(r->devices[1].samples, own ? 200 : 137, "%s dear %d loc %d", pol[k], dear, loc);
                /* equal_finish and lbb start balanced: the first distribution
                 * moves; dlb and lbbsp start equal, the fast GPU's shard grows
                 * at the epoch boundary, read from the slow one */
                int first = k < 2;
                double moved = own ? 0 : 63 * (dear ? 100e3 : 3e3);
                expect_close(stat(r, "data.bytes_moved"), moved);
                if (own || !first)
                    cr_expect_eq(r->tsend_s, 0, "%s dear %d loc %d", pol[k], dear, loc);
                else
                    cr_expect(r->tsend_s > moved / 12.5e6, "%s: Tsend %g", pol[k], r->tsend_s);
                res_run_free(r);
                scn_free(s);
            }
}

/* The option off is today's split; with data: replicate it is refused. */
Test(data, balancers_locality_off_changes_nothing)
{
    scn_override ov[] = {{"policies.lbb.data", "shard"}, {"policies.lbb.locality", "false"}};
    scn_scenario *a = load(TWO, ov, 1), *b = load(TWO, ov, 2);
    res_run *x = run(a, "lbb"), *y = run(b, "lbb");
    cr_expect_eq(x->ttotal_s, y->ttotal_s);
    cr_expect_eq(x->bytes_total, y->bytes_total);
    cr_expect_eq(x->events, y->events);
    res_run_free(x);
    res_run_free(y);
    scn_free(a);
    scn_free(b);
    scn_override bad = {"policies.dlb.locality", "true"};
    dp_err err = {0};
    scn_scenario *s = load(TWO, &bad, 1);
    cr_expect_null(policy_run(policy_find("dlb"), s, 1, &err));
    cr_expect(strstr(err.msg, "policies.dlb.locality: the byte term needs data: shard"), "%s", err.msg);
    scn_free(s);
}

/* The balancers' growing shards come from the nearest holder, not the
 * server: the fast GPU in us, the slow one and the server in eu, every
 * sample in us's storage.  DLB starts equal (200 + 200: the slow GPU reads
 * its 200 over the WAN), then re-sizes to 263 + 137 at the epoch end: the
 * fast GPU's 63 more come from us's storage, at home.  WAN bytes: 200
 * samples, not 263 (as when the growth came from the eu server). */
Test(data, growing_shard_from_the_nearest_holder)
{
    const char *geo2 = "name: two-sites\n"
                       "model: { params: 250000, flops_per_sample: 1.0e6 }\n"
                       "dataset: { samples: 400, sample_bytes: 3KB, parts: [{at: us, samples: 100%}] }\n"
                       "training: { epochs: 2 }\n"
                       "sites: [eu, us]\n"
                       "server: { site: eu, nic: { up: 1Gbps, down: 1Gbps }, aggregate_rate: 1GB/s }\n"
                       "wan: [ { between: [eu, us], bandwidth: 100Mbps, latency: 10ms } ]\n"
                       "devices:\n"
                       "  - { name: fast, site: us, kind: gpu, memory: 1GiB, batch: 16, batch_time: 10ms,\n"
                       "      link: { up: 100Mbps, down: 100Mbps, latency: 1ms } }\n"
                       "  - { name: slow, site: eu, kind: gpu, memory: 1GiB, batch: 16, batch_time: 20ms,\n"
                       "      link: { up: 100Mbps, down: 100Mbps, latency: 1ms } }\n";
    scn_override ov = {"policies.dlb.data", "shard"};
    scn_scenario *s = load(geo2, &ov, 1);
    res_run *r = run(s, "dlb");
    cr_expect_eq(r->devices[0].samples, 263);
    cr_expect_eq(r->devices[1].samples, 137);
    expect_close(stat(r, "data.bytes_moved"), (400 + 63) * 3000.0);
    expect_close(stat(r, "data.bytes_wan"), 200 * 3000.0);
    res_run_free(r);
    scn_free(s);
}

/* locality with a device failing for good.  Three devices of 1 sample/s
 * (a and b in eu, c in us), 12 samples of 1000 B: 2 on each device, 6 in
 * eu's storage; equal shares of 4: each its own 2, then a and b 2 from
 * their site's storage, c the last 2 over the WAN.  b goes down at 2.5 s
 * for good: its epoch's work is lost, its own 2 samples are lost (no
 * replica), its 2 from the storage are re-planned, 1 each to a and c
 * (equal epochs: 5 and 5), a's read at home, c's over the WAN.  Bytes
 * re-moved 2000, WAN 2000 + 1000, moved 6000 + 2000; epoch 1 ends with a
 * and c at 4 s, epoch 2 re-plans over a and c the 10 samples a holder
 * that is up has: 5 each, the one more each reads from the nearest holder
 * (a at home, c over the WAN); Ttotal 9 s (up to the tiny transfers). */
static const char *LOCF = "name: locf\n"
                          "model: { params: 1, flops_per_sample: 1.0e6 }\n"
                          "dataset: { samples: 12, sample_bytes: 1000B,\n"
                          "           parts: [{at: a, samples: 2}, {at: b, samples: 2}, {at: c, samples: 2}, "
                          "{at: eu, samples: 6}] }\n"
                          "training: { epochs: 2 }\n"
                          "sites: [eu, us]\n"
                          "server: { site: eu, nic: { up: 1Tbps, down: 1Tbps } }\n"
                          "wan: [ { between: [eu, us], bandwidth: 8Mbps } ]\n"
                          "devices:\n"
                          "  - { name: a, site: eu, kind: gpu, memory: 1GiB, batch: 1, batch_time: 1s, link: "
                          "{ up: 1Tbps, down: 1Tbps } }\n"
                          "  - { name: b, site: eu, kind: gpu, memory: 1GiB, batch: 1, batch_time: 1s, link: "
                          "{ up: 1Tbps, down: 1Tbps },\n"
                          "      availability: { trace: gone.csv } }\n"
                          "  - { name: c, site: us, kind: gpu, memory: 1GiB, batch: 1, batch_time: 1s, link: "
                          "{ up: 1Tbps, down: 1Tbps } }\n";

static res_run *run_locf(const char *avail, const char *policy, const scn_override *ov, size_t n)
{
    char dir[] = "/tmp/dpsim-locf-XXXXXX", p[300];
    cr_assert(mkdtemp(dir));
    snprintf(p, sizeof p, "%s/gone.csv", dir);
    FILE *f = fopen(p, "w");
    cr_assert(f);
    fputs(avail, f);
    fclose(f);
    snprintf(p, sizeof p, "%s/locf.yaml", dir);
    f = fopen(p, "w");
    cr_assert(f);
    fputs(LOCF, f);
    fclose(f);
    dp_err err = {0};
    scn_scenario *s = scn_load_file(p, ov, n, &err);
    cr_assert(s, "%s", err.msg);
    res_run *r = policy_run(policy_find(policy), s, 1, &err);
    cr_assert(r, "%s: %s", policy, err.msg);
    scn_free(s);
    remove(p);
    snprintf(p, sizeof p, "%s/gone.csv", dir);
    remove(p);
    rmdir(dir);
    return r;
}

Test(data, locality_device_failure_replanned_or_lost)
{
    res_run *r = run_locf("time_s,up\n0,1\n2.5,0\n", "locality", NULL, 0);
    expect_close(stat(r, "data.samples_lost"), 2);
    expect_close(stat(r, "data.bytes_replanned"), 2000);
    expect_close(stat(r, "data.bytes_moved"), 8000);
    expect_close(stat(r, "data.bytes_wan"), 3000);
    expect_close(stat(r, "locality.samples_replanned"), 2);
    cr_expect_eq(r->devices[0].samples, 5);
    cr_expect_eq(r->devices[2].samples, 5);
    cr_expect(fabs(r->ttotal_s - 9) < 0.01, "Ttotal %g", r->ttotal_s);
    res_run_free(r);
    /* back at 5.5 s, 3 epochs: epoch 2 as above (4 s to 9 s), epoch 3
     * re-planned over all three, 4 each again (b kept what it had read,
     * data_persists): nothing more moves, Ttotal 13 s */
    scn_override ov = {"training.epochs", "3"};
    r = run_locf("time_s,up\n0,1\n2.5,0\n5.5,1\n", "locality", &ov, 1);
    expect_close(stat(r, "data.bytes_replanned"), 2000);
    for (size_t d = 0; d < 3; d++)
        cr_expect_eq(r->devices[d].samples, 4);
    cr_expect(fabs(r->ttotal_s - 13) < 0.01, "Ttotal %g", r->ttotal_s);
    res_run_free(r);
}

/* cadp.locality on the same world, 3 epochs, b gone at 2.5 s: C-ADP's 4
 * each; b trained its own 2 first, so its 2 left (the batch in flight and
 * the next) are spread, 1 to a (read at home) and 1 to c (over the WAN);
 * in epochs 2 and 3 b's share but its own 2 (lost: data.samples_lost 2)
 * is spread so again.  Re-read 3 x 2000 B, WAN 2000 + 3 x 1000 B; a and c
 * train 5 an epoch: Ttotal 15 s. */
Test(data, cadp_locality_device_failure)
{
    scn_override ov[] = {{"training.epochs", "3"}, {"policies.cadp.locality", "true"}};
    res_run *r = run_locf("time_s,up\n0,1\n2.5,0\n", "cadp", ov, 2);
    expect_close(stat(r, "data.samples_lost"), 2);
    expect_close(stat(r, "data.bytes_replanned"), 6000);
    expect_close(stat(r, "data.bytes_wan"), 5000);
    cr_expect(fabs(r->ttotal_s - 15) < 0.01, "Ttotal %g", r->ttotal_s);
    res_run_free(r);
}

/* A site cache serves the first distribution too: every sample in us's
 * storage, DDP replicated, a cache in eu of 1000 samples.  e[0] reads all
 * 1000 over the 1e6 B/s WAN (1 s) and fills the cache; e[1] and e[2] hit
 * all 1000, streamed from the cache over their own 1 Gbit/s links (8 ms),
 * held when e[0]'s read ends: Tsend 1 s instead of 3 s (three reads
 * sharing the WAN), 2000 hits of 3000 reads, 1e6 B over the WAN, not 3e6.
 * An LRU cache of 500 never hits (a cyclic scan); a planned one of 500
 * pins ids 0-499 and hits 2 x 500. */
Test(data, site_cache_serves_the_first_epoch)
{
    struct {
        const char *cache;
        double hits, tsend;
    } k[] = {{"[{site: eu, capacity: 1MB}]", 2000, 1},
             {"[{site: eu, capacity: 500KB}]", 0, 3},
             {"[{site: eu, capacity: 500KB, policy: planned}]", 1000, -1}};
    for (size_t i = 0; i < 3; i++) {
        scn_override ov[] = {{"dataset.parts", "[{at: us, samples: 100%}]"}, {"dataset.caches", k[i].cache}};
        scn_scenario *s = load(GEO, ov, 2);
        res_run *r = run(s, "ddp");
        expect_close(stat(r, "cache.hits"), k[i].hits);
        expect_close(stat(r, "cache.misses"), 3000 - k[i].hits);
        expect_close(stat(r, "data.bytes_wan"), (3000 - k[i].hits) * 1000);
        expect_close(stat(r, "data.bytes_moved"), 4000 * 1000.0);
        if (k[i].tsend > 0)
            expect_close(r->tsend_s, k[i].tsend);
        res_run_free(r);
        scn_free(s);
    }
}
