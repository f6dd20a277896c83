/* test_sweep.c: sweep specs, grids, shards, the canonical JSON texts, and
 * whole sweeps on tests' tiny scenario: --jobs 1 and 2 store the same
 * results, a resumed sweep adds nothing twice, an interrupted one resumes to
 * the same database as an uninterrupted one, shards merged equal the whole.
 * Every test checks the live-allocation counter (Criterion under ASan does
 * not fail a test on a leak). */
#include "store/store.h"
#include "store/store_sql.h" /* rows built and inspected directly */
#include "sweep/sweep.h"

#include <criterion/criterion.h>
#include "leaks.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static long live0;
static char tmpdir[64];
static char *tiny_text;
static size_t tiny_len;
static char tiny_path[1024], tiny_dir[1024];

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    cr_assert(b && fread(b, 1, (size_t)n, f) == (size_t)n);
    b[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return b;
}

static void setup(void)
{
    live0 = dp_alloc_live();
    snprintf(tmpdir, sizeof tmpdir, "/tmp/test_sweep.XXXXXX");
    cr_assert(mkdtemp(tmpdir));
    const char *src = getenv("DPSIM_SRC");
    snprintf(tiny_dir, sizeof tiny_dir, "%s/scenarios", src ? src : "..");
    snprintf(tiny_path, sizeof tiny_path, "%s/tiny.yaml", tiny_dir);
    tiny_text = slurp(tiny_path, &tiny_len);
}

static void teardown(void)
{
    free(tiny_text);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    cr_assert(system(cmd) == 0);
    leaks_verify(live0);
}

TestSuite(sweep, .init = setup, .fini = teardown);

static sweep_grid *grid_of(const char *const *args, size_t n)
{
    dp_err err = {0};
    sweep_grid *g = sweep_grid_new(&err);
    cr_assert(g);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(sweep_grid_add(g, args[i], &err), 0, "%s: %s", args[i], err.msg);
    return g;
}

static void expect_values(const char *arg, const char *const *want, size_t n)
{
    sweep_grid *g = grid_of(&arg, 1);
    cr_assert_eq(sweep_grid_n_values(g, 0), n, "%s: %zu values", arg, sweep_grid_n_values(g, 0));
    for (size_t i = 0; i < n; i++)
        cr_expect_str_eq(sweep_grid_value(g, 0, i), want[i], "%s value %zu", arg, i);
    sweep_grid_free(g);
}

Test(sweep, list_values_as_written)
{
    const char *const w[] = {"10Mbps", "100Mbps", "1Gbps"};
    expect_values("devices.gpu.link.down=10Mbps, 100Mbps ,1Gbps", w, 3);
    const char *const one[] = {"../traces/x.csv"};
    expect_values("devices.gpu.speed_trace=../traces/x.csv", one, 1);
}

Test(sweep, linear_ranges)
{
    const char *const a[] = {"1", "2", "3", "4", "5", "6", "7", "8"};
    expect_values("devices.cpu.count=1..8", a, 8);
    const char *const b[] = {"0", "2", "4"};
    expect_values("devices.cpu.count=0..4:step=2", b, 3);
    const char *const c[] = {"0", "2", "4"};
    expect_values("devices.cpu.count=0..5:step=2", c, 3);
    const char *const d[] = {"10ms", "20ms", "30ms", "40ms", "50ms"};
    expect_values("devices.gpu.link.latency=10ms..50ms:step=10ms", d, 5);
    const char *const e[] = {"0", "0.25", "0.5", "0.75", "1"};
    expect_values("devices.gpu.noise=0..1:lin:5", e, 5);
    /* 0.1 is not exact in binary: the range still ends at 1 */
    const char *const f[] = {"0", "0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9", "1"};
    expect_values("devices.gpu.noise=0..1:step=0.1", f, 11);
    /* a step in another unit of the same kind */
    const char *const h[] = {"1Gbps", "1.5Gbps", "2Gbps"};
    expect_values("devices.gpu.link.down=1Gbps..2Gbps:step=500Mbps", h, 3);
}

Test(sweep, log_ranges)
{
    const char *const a[] = {"10Mbps",   "31.6227766Mbps", "100Mbps",  "316.227766Mbps",
                             "1000Mbps", "3162.27766Mbps", "10000Mbps"};
    expect_values("devices.gpu.link.down=10Mbps..10Gbps:log:7", a, 7);
    const char *const b[] = {"1", "10", "100", "1000"};
    expect_values("training.epochs=1..1000:log:4", b, 4);
    /* values parse back to the geometric sequence */
    const char *arg = "devices.gpu.link.down=10Mbps..10Gbps:log:7";
    sweep_grid *g = grid_of(&arg, 1);
    double prev = 0;
    for (size_t i = 0; i < 7; i++) {
        double v;
        cr_assert_eq(scn_parse_quantity(sweep_grid_value(g, 0, i), SCN_UNIT_BANDWIDTH, &v, NULL), 0);
        if (i)
            cr_expect(fabs(v / prev - sqrt(10)) < 1e-8, "ratio %g", v / prev);
        prev = v;
    }
    sweep_grid_free(g);
}

Test(sweep, bad_specs_name_the_argument)
{
    const char *const bad[] = {
        "training.epochs",                           /* no SPEC */
        "=1,2",                                      /* no KEY */
        "training.epochs=",                          /* empty SPEC */
        "training.epochs=1,,2",                      /* empty value */
        "training.epochs=1,2,1",                     /* twice */
        "training.epochs=3..1",                      /* backwards */
        "training.epochs=1..3:step=0",               /* zero step */
        "training.epochs=1..3:step=-1",              /* negative step */
        "training.epochs=1..3:step=x",               /* bad step */
        "training.epochs=1..3:log:1",                /* too few */
        "training.epochs=1..3:log:x",                /* not a count */
        "training.epochs=0..3:log:4",                /* log from 0 */
        "training.epochs=1..3:foo",                  /* unknown option */
        "training.epochs=1..x",                      /* bad end */
        "devices.gpu.link.down=1..8Gbps",            /* unit on one end */
        "devices.gpu.link.down=10ms..1Gbps:log:3",   /* mixed kinds */
        "devices.gpu.link.down=1Mbps..2Mbps:step=1", /* bare step with units */
        "training.epochs=1..1000000",                /* too many values */
        "a b=1",                                     /* blank in key */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        dp_err err = {0};
        sweep_grid *g = sweep_grid_new(&err);
        cr_assert(g);
        cr_expect_eq(sweep_grid_add(g, bad[i], &err), DP_EINPUT, "accepted '%s'", bad[i]);
        cr_expect(strstr(err.msg, "--vary") && strstr(err.msg, bad[i]), "'%s': message '%s'", bad[i],
                  err.msg);
        cr_expect_eq(sweep_grid_n_axes(g), 0);
        sweep_grid_free(g);
    }
    /* a key varied twice */
    dp_err err = {0};
    const char *a = "training.epochs=1,2";
    sweep_grid *g = grid_of(&a, 1);
    cr_expect_eq(sweep_grid_add(g, "training.epochs=3", &err), DP_EINPUT);
    cr_expect(strstr(err.msg, "twice"), "%s", err.msg);
    sweep_grid_free(g);
}

Test(sweep, cartesian_product_first_axis_outermost)
{
    const char *const args[] = {"devices.gpu.link.down=10Mbps,1Gbps", "devices.cpu.count=0..2"};
    sweep_grid *g = grid_of(args, 2);
    cr_assert_eq(sweep_grid_n_points(g), 6);
    cr_expect_str_eq(sweep_point_value(g, 0, 0), "10Mbps");
    cr_expect_str_eq(sweep_point_value(g, 0, 1), "0");
    cr_expect_str_eq(sweep_point_value(g, 2, 1), "2");
    cr_expect_str_eq(sweep_point_value(g, 3, 0), "1Gbps");
    cr_expect_str_eq(sweep_point_value(g, 3, 1), "0");
    cr_expect_null(sweep_point_value(g, 6, 0));
    char *j = sweep_point_json(g, 4);
    cr_expect_str_eq(j, "{\"devices.gpu.link.down\":\"1Gbps\",\"devices.cpu.count\":\"1\"}");
    dp_free(j);
    char *l = sweep_point_label(g, 4);
    cr_expect_str_eq(l, "devices.gpu.link.down=1Gbps, devices.cpu.count=1");
    dp_free(l);
    sweep_grid_free(g);
}

Test(sweep, spec_json_is_canonical)
{
    const char *const args[] = {"devices.cpu.count=0..2", "training.epochs=1,2"};
    sweep_grid *g = grid_of(args, 2);
    const policy_def *a[] = {policy_find("cadp"), policy_find("ddp")},
                     *b[] = {policy_find("ddp"), policy_find("cadp")};
    char *x = sweep_spec_json(g, 0x1234abcdULL, a, 2, 3), *y = sweep_spec_json(g, 0x1234abcdULL, b, 2, 3);
    cr_expect_str_eq(x, "{\"scenario_hash\":\"000000001234abcd\",\"vary\":[[\"devices.cpu.count\",\"0..2\"],"
                        "[\"training.epochs\",\"1,2\"]],\"policies\":[\"ddp\",\"cadp\"],\"seeds\":3}");
    cr_expect_str_eq(x, y);
    dp_free(x);
    dp_free(y);
    sweep_grid_free(g);
}

Test(sweep, shards_are_disjoint_and_cover)
{
    for (unsigned n = 1; n <= 7; n++)
        for (size_t p = 0; p < 50; p++) {
            unsigned hits = 0;
            for (unsigned k = 1; k <= n; k++)
                hits += (unsigned)sweep_in_shard(p, k, n);
            cr_expect_eq(hits, 1, "point %zu in %u of %u shards", p, hits, n);
        }
    unsigned k, n;
    cr_expect_eq(sweep_shard_parse("2/3", &k, &n, NULL), 0);
    cr_expect(k == 2 && n == 3);
    const char *const bad[] = {"0/3", "4/3", "3", "a/b", "1/0", "-1/3", "1/3x", "", "/3"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        dp_err err = {0};
        cr_expect_eq(sweep_shard_parse(bad[i], &k, &n, &err), DP_EINPUT, "accepted '%s'", bad[i]);
        cr_expect(strstr(err.msg, "--shard"), "%s", err.msg);
    }
}

static sweep_source tiny_src(void)
{
    return (sweep_source){tiny_path, tiny_text, tiny_len, tiny_dir};
}

Test(sweep, check_rejects_unknown_keys_and_bad_values)
{
    sweep_source src = tiny_src();
    scn_scenario *base = scn_load_string(src.name, src.text, src.len, src.base_dir, NULL, 0, NULL);
    cr_assert(base);
    const char *const bad[] = {"devices.gpu.linkk.down=1Mbps,2Mbps", "devices.gpux.count=1..2",
                               "trainingg.epochs=1,2", "devices.gpu.link.down=fast,slow"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sweep_grid *g = grid_of(&bad[i], 1);
        dp_err err = {0};
        cr_expect_eq(sweep_grid_check(g, &src, base, &err), DP_EINPUT, "accepted %s", bad[i]);
        char key[64];
        snprintf(key, sizeof key, "%.*s", (int)(strchr(bad[i], '=') - bad[i]), bad[i]);
        cr_expect(strstr(err.msg, key), "message '%s' does not name %s", err.msg, key);
        sweep_grid_free(g);
    }
    /* a value that fails only in the base scenario's context is left to its
     * points: 2MB holds the model when it has fewer parameters */
    const char *const ok[] = {"devices.gpu.memory=2MB,1GiB", "devices.gpu.count=0..2"};
    for (size_t i = 0; i < 2; i++) {
        sweep_grid *g = grid_of(&ok[i], 1);
        dp_err err = {0};
        cr_expect_eq(sweep_grid_check(g, &src, base, &err), 0, "%s: %s", ok[i], err.msg);
        sweep_grid_free(g);
    }
    const char *mix[] = {"devices.gpu.count=0..1", "devices.cpu.count=0,1"};
    sweep_grid *g = grid_of(mix, 2);
    cr_expect_eq(sweep_point_devices(g, base, 0), 0);
    cr_expect_eq(sweep_point_devices(g, base, 1), 1);
    cr_expect_eq(sweep_point_devices(g, base, 2), 1);
    sweep_grid_free(g);
    scn_free(base);
}

/* ---- whole sweeps ------------------------------------------------------ */

static void db_path(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", tmpdir, name);
}

static sweep_cfg cfg_of(const sweep_grid *g, const char *db, unsigned jobs)
{
    sweep_cfg c;
    memset(&c, 0, sizeof c);
    c.src = tiny_src();
    c.grid = g;
    /* The paper's three policies, named: the counts below stay put when
     * more policies are registered. */
    static const char *const names[] = {"ddp", "deepspeed", "cadp"};
    c.n_policies = 3;
    for (size_t k = 0; k < 3; k++)
        c.policies[k] = policy_find(names[k]);
    c.seeds = 1;
    c.jobs = jobs;
    c.shard_k = c.shard_n = 1;
    c.db_path = db;
    return c;
}

/* The stored results that must not depend on jobs, shards or interrupts:
 * the metric columns of every run and a digest of its child rows, ordered
 * by point, policy and seed; and the number of sweeps. */
static char *dump(const char *db)
{
    dp_err err = {0};
    store *st = store_open(db, 1, &err);
    cr_assert(st, "%s", err.msg);
    sqlite3 *h = store_db(st);
    sqlite3_stmt *s;
    cr_assert_eq(
        sqlite3_prepare_v2(
            h,
            "SELECT r.point_json, r.policy, r.seed, r.status, r.error, r.version, sw.spec_json, r.tsend_s,"
            " r.ttraining_s, r.ttotal_s, r.tflops, r.utilization, r.samples_processed, r.bytes_total,"
            " r.events, r.bin_s, r.overrides_json, r.options_json,"
            " (SELECT count(*) || '/' || total(wait_s) FROM run_devices WHERE run_id = r.id),"
            " (SELECT count(*) || '/' || total(end_s) FROM run_epochs WHERE run_id = r.id),"
            " (SELECT count(*) || '/' || total(flops) FROM run_flops WHERE run_id = r.id),"
            " (SELECT count(*) || '/' || total(t1_s - t0_s) FROM run_segments WHERE run_id = r.id),"
            " (SELECT hash FROM scenarios WHERE id = r.scenario_id)"
            " FROM runs r JOIN sweeps sw ON sw.id = r.sweep_id ORDER BY r.point_json, r.policy, r.seed",
            -1, &s, NULL),
        SQLITE_OK, "%s", sqlite3_errmsg(h));
    size_t cap = 4096, len = 0;
    char *out = malloc(cap);
    out[0] = '\0';
    while (sqlite3_step(s) == SQLITE_ROW) {
        for (int i = 0; i < sqlite3_column_count(s); i++) {
            char cell[512];
            if (sqlite3_column_type(s, i) == SQLITE_FLOAT)
                snprintf(cell, sizeof cell, "%.17g|", sqlite3_column_double(s, i));
            else {
                const unsigned char *t = sqlite3_column_text(s, i);
                snprintf(cell, sizeof cell, "%s|", t ? (const char *)t : "NULL");
            }
            size_t cl = strlen(cell);
            if (len + cl + 2 > cap) {
                cap = 2 * (len + cl + 2);
                out = realloc(out, cap);
            }
            memcpy(out + len, cell, cl + 1);
            len += cl;
        }
        out[len++] = '\n';
        out[len] = '\0';
    }
    sqlite3_finalize(s);
    store_close(st);
    return out;
}

static long count(const char *db, const char *sql)
{
    store *st = store_open(db, 1, NULL);
    cr_assert(st);
    sqlite3_stmt *s;
    cr_assert_eq(sqlite3_prepare_v2(store_db(st), sql, -1, &s, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_step(s), SQLITE_ROW);
    long n = (long)sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    store_close(st);
    return n;
}

static void expect_integrity(const char *db)
{
    store *st = store_open(db, 1, NULL);
    cr_assert(st);
    sqlite3_stmt *s;
    cr_assert_eq(sqlite3_prepare_v2(store_db(st), "PRAGMA integrity_check", -1, &s, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_step(s), SQLITE_ROW);
    cr_expect_str_eq((const char *)sqlite3_column_text(s, 0), "ok");
    sqlite3_finalize(s);
    store_close(st);
}

static const char *const grid2[] = {"devices.gpu.link.down=10Mbps..1Gbps:log:3", "devices.cpu.count=0..2"};

Test(sweep, jobs_1_and_2_store_identical_results)
{
    sweep_grid *g = grid_of(grid2, 2);
    char a[128], b[128];
    db_path(a, sizeof a, "j1.db");
    db_path(b, sizeof b, "j2.db");
    sweep_cfg c1 = cfg_of(g, a, 1), c2 = cfg_of(g, b, 2);
    sweep_stats s1, s2;
    dp_err err = {0};
    cr_assert_eq(sweep_run(&c1, &s1, &err), 0, "%s", err.msg);
    cr_assert_eq(sweep_run(&c2, &s2, &err), 0, "%s", err.msg);
    cr_expect_eq(s1.runs, 27);
    cr_expect_eq(s1.runs_ok, 27);
    cr_expect_eq(s2.runs_ok, 27);
    cr_expect_eq(s1.jobs, 1);
    cr_expect_eq(s2.jobs, 2);
    cr_expect_eq(s1.seeds, 1);
    char *da = dump(a), *dbb = dump(b);
    cr_expect_gt(strlen(da), 100);
    cr_expect_str_eq(da, dbb);
    cr_expect_eq(count(a, "SELECT count(DISTINCT point_json) FROM runs"), 9);
    free(da);
    free(dbb);
    sweep_grid_free(g);
}

Test(sweep, rerun_resumes_and_stores_nothing_twice)
{
    sweep_grid *g = grid_of(grid2, 2);
    char a[128];
    db_path(a, sizeof a, "r.db");
    sweep_cfg c = cfg_of(g, a, 2);
    sweep_stats s;
    dp_err err = {0};
    cr_assert_eq(sweep_run(&c, &s, &err), 0, "%s", err.msg);
    char *d1 = dump(a);
    cr_assert_eq(sweep_run(&c, &s, &err), 0, "%s", err.msg);
    cr_expect_eq(s.runs_before, 27);
    cr_expect_eq(s.runs_ok + s.runs_failed, 0);
    cr_expect_eq(s.runs_left, 0);
    char *d2 = dump(a);
    cr_expect_str_eq(d1, d2);
    cr_expect_eq(count(a, "SELECT count(*) FROM runs"), 27);
    cr_expect_eq(count(a, "SELECT count(*) FROM sweeps"), 1);
    free(d1);
    free(d2);
    sweep_grid_free(g);
}

Test(sweep, interrupted_sweep_resumes_to_the_same_database)
{
    sweep_grid *g = grid_of(grid2, 2);
    char a[128], b[128];
    db_path(a, sizeof a, "whole.db");
    db_path(b, sizeof b, "cut.db");
    sweep_cfg c = cfg_of(g, a, 2);
    dp_err err = {0};
    sweep_stats s;
    cr_assert_eq(sweep_run(&c, &s, &err), 0, "%s", err.msg);
    /* A stop request before the first message: workers finish what they
     * claimed and start nothing new. */
    volatile sig_atomic_t stop = 1;
    sweep_cfg ci = cfg_of(g, b, 2);
    ci.stop = &stop;
    cr_expect_eq(sweep_run(&ci, &s, &err), DP_ERUN);
    cr_expect(s.interrupted);
    cr_expect(strstr(err.msg, "interrupted"), "%s", err.msg);
    cr_expect_lt(s.runs_ok, 27);
    cr_expect_eq(s.runs_left, 27 - s.runs_ok);
    expect_integrity(b);
    /* Abandoning in-flight runs (a second signal) leaves nothing partial. */
    stop = 2;
    sweep_run(&ci, &s, &err);
    expect_integrity(b);
    cr_expect_eq(count(b, "SELECT count(*) FROM run_devices WHERE run_id NOT IN (SELECT id FROM runs)"), 0);
    sweep_cfg cr = cfg_of(g, b, 2);
    cr_assert_eq(sweep_run(&cr, &s, &err), 0, "%s", err.msg);
    char *d1 = dump(a), *d2 = dump(b);
    cr_expect_str_eq(d1, d2);
    cr_expect_eq(count(b, "SELECT count(*) FROM (SELECT 1 FROM runs GROUP BY point_json, policy, seed"
                          " HAVING count(*) > 1)"),
                 0);
    free(d1);
    free(d2);
    sweep_grid_free(g);
}

Test(sweep, shards_merged_equal_the_whole_sweep)
{
    sweep_grid *g = grid_of(grid2, 2);
    char whole[128], merged[128], sh[3][128];
    db_path(whole, sizeof whole, "whole.db");
    db_path(merged, sizeof merged, "merged.db");
    dp_err err = {0};
    sweep_stats s;
    sweep_cfg c = cfg_of(g, whole, 2);
    cr_assert_eq(sweep_run(&c, &s, &err), 0, "%s", err.msg);
    size_t total = 0;
    const char *in[3];
    for (unsigned k = 1; k <= 3; k++) {
        db_path(sh[k - 1], sizeof sh[0], k == 1 ? "s1.db" : k == 2 ? "s2.db" : "s3.db");
        sweep_cfg ck = cfg_of(g, sh[k - 1], 1);
        ck.shard_k = k;
        ck.shard_n = 3;
        cr_assert_eq(sweep_run(&ck, &s, &err), 0, "%s", err.msg);
        cr_expect_eq(s.points, 3);
        total += s.runs_ok;
        in[k - 1] = sh[k - 1];
    }
    cr_expect_eq(total, 27);
    store_merge_stats ms;
    cr_assert_eq(store_merge(merged, in, 3, &ms, &err), 0, "%s", err.msg);
    cr_expect_eq(ms.runs_added, 27);
    cr_expect_eq(ms.runs_skipped, 0);
    cr_expect_eq(ms.sweeps_added, 1);
    cr_expect_eq(ms.scenarios_added, 1);
    char *d1 = dump(whole), *d2 = dump(merged);
    cr_expect_str_eq(d1, d2);
    /* merging again, or the whole sweep into its merge, adds nothing */
    cr_assert_eq(store_merge(merged, in, 3, &ms, &err), 0, "%s", err.msg);
    cr_expect_eq(ms.runs_added, 0);
    cr_expect_eq(ms.runs_skipped, 27);
    const char *w[] = {whole};
    cr_assert_eq(store_merge(merged, w, 1, &ms, &err), 0, "%s", err.msg);
    cr_expect_eq(ms.runs_added, 0);
    char *d3 = dump(merged);
    cr_expect_str_eq(d1, d3);
    expect_integrity(merged);
    /* and the merged file resumes as the whole sweep */
    sweep_cfg cm = cfg_of(g, merged, 1);
    cr_assert_eq(sweep_run(&cm, &s, &err), 0, "%s", err.msg);
    cr_expect_eq(s.runs_before, 27);
    free(d1);
    free(d2);
    free(d3);
    sweep_grid_free(g);
}

Test(sweep, merge_keeps_plain_runs_once_and_refuses_bad_inputs)
{
    char a[128], b[128];
    db_path(a, sizeof a, "plain.db");
    db_path(b, sizeof b, "out.db");
    dp_err err = {0};
    scn_scenario *s = scn_load_string(tiny_path, tiny_text, tiny_len, tiny_dir, NULL, 0, NULL);
    cr_assert(s);
    res_run *r = policy_run(policy_find("cadp"), s, 1, &err);
    cr_assert(r, "%s", err.msg);
    store *st = store_open(a, 0, &err);
    cr_assert(st, "%s", err.msg);
    cr_assert_eq(store_put_run(st, s, NULL, 0, r, "0.1.0", "2026-01-01T00:00:00Z", 0, NULL, NULL, &err), 0,
                 "%s", err.msg);
    cr_assert_eq(store_put_run(st, s, NULL, 0, r, "0.1.0", "2026-01-01T00:00:01Z", 0, NULL, NULL, &err), 0,
                 "%s", err.msg);
    store_close(st);
    res_run_free(r);
    scn_free(s);
    const char *in[] = {a, a};
    store_merge_stats ms;
    cr_assert_eq(store_merge(b, in, 2, &ms, &err), 0, "%s", err.msg);
    cr_expect_eq(ms.runs_added, 2);
    cr_expect_eq(ms.runs_skipped, 2);
    cr_expect_eq(count(b, "SELECT count(*) FROM run_segments"),
                 count(a, "SELECT count(*) FROM run_segments"));
    cr_expect_gt(count(b, "SELECT count(*) FROM run_segments"), 0);
    const char *self[] = {b};
    cr_expect_eq(store_merge(b, self, 1, &ms, &err), DP_EINPUT);
    cr_expect(strstr(err.msg, "output"), "%s", err.msg);
    char missing[128];
    db_path(missing, sizeof missing, "nope.db");
    const char *m[] = {missing};
    cr_expect_eq(store_merge(b, m, 1, &ms, &err), DP_EINPUT);
    cr_expect(strstr(err.msg, "nope.db"), "%s", err.msg);
    char notdb[128];
    db_path(notdb, sizeof notdb, "text.db");
    FILE *f = fopen(notdb, "w");
    fputs("this is not a database, just some text that is long enough to look like a header\n", f);
    fclose(f);
    const char *nd[] = {a, notdb};
    long before = count(b, "SELECT count(*) FROM runs");
    cr_expect_eq(store_merge(b, nd, 2, &ms, &err), DP_ERUN);
    cr_expect_eq(count(b, "SELECT count(*) FROM runs"), before, "a failed merge changed OUT");
}

Test(sweep, failed_points_are_stored_and_counted)
{
    /* 2 MB holds the model only with fewer parameters: one of 4 points fails */
    const char *const args[] = {"devices.gpu.memory=2MB,1GiB", "model.params=25000,250000"};
    sweep_grid *g = grid_of(args, 2);
    char a[128];
    db_path(a, sizeof a, "f.db");
    sweep_cfg c = cfg_of(g, a, 2);
    char *sum = NULL;
    size_t sum_len = 0;
    c.summary_out = open_memstream(&sum, &sum_len);
    sweep_stats s;
    dp_err err = {0};
    cr_assert_eq(sweep_run(&c, &s, &err), 0, "%s", err.msg);
    fclose(c.summary_out);
    cr_expect_eq(s.runs_failed, 3);
    cr_expect_eq(s.runs_ok, 9);
    cr_expect_eq(
        count(a, "SELECT count(*) FROM runs WHERE status = 'failed' AND error LIKE '%cannot hold batch%'"
                 " AND point_json = '{\"devices.gpu.memory\":\"2MB\",\"model.params\":\"250000\"}'"),
        3);
    cr_expect(strstr(sum, "cannot hold batch"), "%s", sum);
    cr_expect(strstr(sum, "fastest"), "%s", sum);
    free(sum);
    /* failed runs are stored runs: a rerun skips them unless asked */
    sweep_cfg c2 = cfg_of(g, a, 1);
    cr_assert_eq(sweep_run(&c2, &s, &err), 0, "%s", err.msg);
    cr_expect_eq(s.runs_before, 12);
    c2.retry_failed = 1;
    cr_assert_eq(sweep_run(&c2, &s, &err), 0, "%s", err.msg);
    cr_expect_eq(s.runs_failed, 3);
    cr_expect_eq(count(a, "SELECT count(*) FROM runs"), 12);
    sweep_grid_free(g);
}

Test(sweep, points_without_devices_are_skipped_with_a_note)
{
    const char *const args[] = {"devices.gpu.count=0..2", "devices.cpu.count=0,1"};
    sweep_grid *g = grid_of(args, 2);
    char a[128];
    db_path(a, sizeof a, "mix.db");
    sweep_cfg c = cfg_of(g, a, 2);
    c.n_policies = 1;
    c.policies[0] = policy_find("cadp");
    char *sum = NULL;
    size_t sum_len = 0;
    c.summary_out = open_memstream(&sum, &sum_len);
    sweep_stats s;
    dp_err err = {0};
    cr_assert_eq(sweep_run(&c, &s, &err), 0, "%s", err.msg);
    fclose(c.summary_out);
    cr_expect_eq(s.points, 6);
    cr_expect_eq(s.points_nodev, 1);
    cr_expect_eq(s.runs, 5);
    cr_expect_eq(s.runs_ok, 5);
    cr_expect_eq(count(a, "SELECT count(*) FROM runs"), 5);
    cr_expect(strstr(sum, "without any device skipped"), "%s", sum);
    free(sum);
    sweep_grid_free(g);
}

Test(sweep, seeds_run_only_when_the_scenario_is_random)
{
    char a[128];
    db_path(a, sizeof a, "seeds.db");
    dp_err err = {0};
    sweep_stats s;
    const char *det = "training.epochs=1,2";
    sweep_grid *g = grid_of(&det, 1);
    sweep_cfg c = cfg_of(g, a, 2);
    c.n_policies = 1;
    c.policies[0] = policy_find("ddp");
    c.seeds = 3;
    cr_assert_eq(sweep_run(&c, &s, &err), 0, "%s", err.msg);
    cr_expect_eq(s.seeds, 1);
    cr_expect_not(s.stochastic);
    cr_expect_eq(s.runs_ok, 2);
    sweep_grid_free(g);

    const char *noisy = "devices.gpu.noise=0.05,0.2";
    g = grid_of(&noisy, 1);
    c = cfg_of(g, a, 2);
    c.n_policies = 1;
    c.policies[0] = policy_find("ddp");
    c.seeds = 3;
    cr_assert_eq(sweep_run(&c, &s, &err), 0, "%s", err.msg);
    cr_expect(s.stochastic);
    cr_expect_eq(s.seeds, 3);
    cr_expect_eq(s.runs_ok, 6);
    /* the seeds give different runs */
    cr_expect_eq(count(a, "SELECT count(DISTINCT ttotal_s) FROM runs WHERE point_json LIKE '%0.2%'"), 3);
    sweep_grid_free(g);
}

Test(sweep, bad_configuration_is_input_error)
{
    const char *a = "training.epochs=1,2";
    sweep_grid *g = grid_of(&a, 1);
    char db[128];
    db_path(db, sizeof db, "bad.db");
    dp_err err = {0};
    sweep_cfg c = cfg_of(g, db, 0);
    cr_expect_eq(sweep_run(&c, NULL, &err), DP_EINPUT);
    c = cfg_of(g, db, 1);
    c.shard_k = 4;
    c.shard_n = 3;
    cr_expect_eq(sweep_run(&c, NULL, &err), DP_EINPUT);
    c = cfg_of(g, db, 1);
    c.n_policies = 0;
    cr_expect_eq(sweep_run(&c, NULL, &err), DP_EINPUT);
    const char *unk = "training.epochz=1,2";
    sweep_grid *g2 = grid_of(&unk, 1);
    c = cfg_of(g2, db, 1);
    cr_expect_eq(sweep_run(&c, NULL, &err), DP_EINPUT);
    cr_expect(strstr(err.msg, "training.epochz"), "%s", err.msg);
    cr_expect_eq(access(db, F_OK), -1, "a rejected sweep created the database");
    sweep_grid_free(g);
    sweep_grid_free(g2);
}
