#!/usr/bin/env bash
# e2e_sweep.sh: `dpsim sweep` and `dpsim merge` end to end on the real
# binary: usage errors, --jobs 1 vs 2, resume, failed and empty points,
# SIGINT and SIGKILL part-way then resume, shards merged vs the whole sweep.
# Needs the sqlite3 command-line shell to look into the databases.
# Env: DPSIM_BIN (absolute path of dpsim), DPSIM_SRC (source root).
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/e2e_lib.sh"
PAPER=$SRC/scenarios/paper-testbed.yaml

if ! command -v sqlite3 >/dev/null 2>&1; then
    echo "e2e_sweep: the sqlite3 command-line shell is required (install the sqlite3 package)" >&2
    echo "0 passed, 1 failed"
    exit 1
fi

cd "$T"
check() { # check NAME COMMAND...: the command must succeed
    local name=$1
    shift
    if "$@"; then ok "$name"; else bad "$name"; fi
}

# expect_exit CODE NAME NEEDLE -- ARGS...: dpsim exits with CODE and its
# stderr contains NEEDLE.
expect_exit() {
    local want=$1 name=$2 needle=$3
    shift 4
    local rc=0
    "$BIN" "$@" >out.txt 2>err.txt || rc=$?
    if [ "$rc" -eq "$want" ] && { [ -z "$needle" ] || grep -qF -- "$needle" err.txt; }; then
        ok "$name"
    else
        bad "$name (exit $rc, want $want; stderr: $(head -c 300 err.txt))"
    fi
}

q() { sqlite3 -batch -noheader "$@"; }

# The stored results that must not depend on jobs, shards or interrupts.
dump() {
    q "$1" "SELECT r.point_json, r.policy, r.seed, r.status, coalesce(r.error, ''), sw.spec_json,
        printf('%.17g|%.17g|%.17g|%.17g|%.17g|%.17g|%.17g', r.tsend_s, r.ttraining_s, r.ttotal_s, r.tflops,
               r.utilization, r.samples_processed, r.bytes_total), r.events,
        (SELECT count(*) FROM run_devices WHERE run_id = r.id),
        (SELECT count(*) || '/' || printf('%.17g', total(t1_s - t0_s)) FROM run_segments WHERE run_id = r.id),
        (SELECT count(*) FROM run_flops WHERE run_id = r.id),
        (SELECT group_concat(source || ':' || key || '=' || text || '=' || printf('%.17g', si) || unit, ' ')
         FROM run_values WHERE run_id = r.id), r.policy_label, r.policy_color
        FROM runs r JOIN sweeps sw ON sw.id = r.sweep_id ORDER BY r.point_json, r.policy, r.seed"
}

once() { # every (point, policy, seed) stored at most once
    [ "$(q "$1" "SELECT count(*) FROM (SELECT 1 FROM runs GROUP BY sweep_id, point_json, policy, seed, version
                 HAVING count(*) > 1)")" = 0 ]
}

# ---- usage ------------------------------------------------------------------
expect_exit 0 "help" "" -- sweep --help
expect_exit 2 "missing scenario" "missing SCENARIO" -- sweep --vary training.epochs=1,2
expect_exit 2 "SPEC without =" "--vary training.epochs" -- sweep "$TINY" --vary training.epochs
expect_exit 2 "backwards range" "--vary training.epochs=3..1" -- sweep "$TINY" --vary training.epochs=3..1
expect_exit 2 "bad log count" "--vary devices.gpu.link.down=1Mbps..1Gbps:log:x" -- \
    sweep "$TINY" --vary devices.gpu.link.down=1Mbps..1Gbps:log:x
expect_exit 2 "unit on one end" "--vary devices.gpu.link.down=1..8Gbps" -- \
    sweep "$TINY" --vary devices.gpu.link.down=1..8Gbps
expect_exit 2 "empty list value" "--vary training.epochs=1,,2" -- sweep "$TINY" --vary training.epochs=1,,2
expect_exit 2 "unknown key" "devices.gpu.linkk.down" -- sweep "$TINY" --vary devices.gpu.linkk.down=1Mbps,2Mbps
expect_exit 2 "unknown device" "devices.gpux.count" -- sweep "$TINY" --vary devices.gpux.count=1..3
expect_exit 2 "bad value" "not a bandwidth" -- sweep "$TINY" --vary devices.gpu.link.down=fast
expect_exit 2 "bad shard" "--shard 4/3" -- sweep "$TINY" --vary training.epochs=1,2 --shard 4/3
expect_exit 2 "bad jobs" "--jobs 0" -- sweep "$TINY" --vary training.epochs=1,2 --jobs 0
expect_exit 2 "bad seeds" "--seeds x" -- sweep "$TINY" --vary training.epochs=1,2 --seeds x
expect_exit 2 "unknown policy" "zero" -- sweep "$TINY" --vary training.epochs=1,2 --policy ddp,zero
check "nothing stored on bad usage" test ! -e results.db
expect_exit 2 "merge needs inputs" "want OUT.db" -- merge out.db
expect_exit 2 "merge missing input" "nope.db" -- merge out.db nope.db

# ---- jobs 1 and 2 -----------------------------------------------------------
# the paper's three policies, named: the counts stay put when policies are added
GRID=(--vary devices.gpu.link.down=10Mbps..1Gbps:log:5 --vary devices.cpu.count=0..2 --policy ddp,deepspeed,cadp)
"$BIN" sweep "$TINY" "${GRID[@]}" --jobs 1 --db j1.db >j1.out 2>j1.err
"$BIN" sweep "$TINY" "${GRID[@]}" --jobs 2 --db j2.db >j2.out 2>j2.err
check "jobs 1 stored 45 runs" [ "$(q j1.db 'SELECT count(*) FROM runs')" = 45 ]
check "jobs 1 and 2 store identical results" cmp -s <(dump j1.db) <(dump j2.db)
check "point_json maps each KEY to its VALUE in --vary order" \
    [ "$(q j1.db "SELECT count(*) FROM runs WHERE point_json =
        '{\"devices.gpu.link.down\":\"31.6227766Mbps\",\"devices.cpu.count\":\"2\"}'")" = 3 ]
check "summary per policy" grep -q "^cadp .*15 .*devices.gpu.link.down=" j1.out
check "progress line on stderr" grep -q "45/45 runs" j2.err

# ---- resume, quiet ----------------------------------------------------------
"$BIN" sweep "$TINY" "${GRID[@]}" --jobs 2 --db j2.db >re.out 2>re.err
check "rerun skips stored runs" grep -q "45 stored before" re.out
check "rerun adds nothing" [ "$(q j2.db 'SELECT count(*) FROM runs')" = 45 ]
"$BIN" sweep "$TINY" "${GRID[@]}" --jobs 2 --db j2.db --quiet >qq.out 2>qq.err
check "--quiet is quiet" [ ! -s qq.out ] && [ ! -s qq.err ]

# ---- device mixes, failed points, seeds -------------------------------------
"$BIN" sweep "$TINY" --vary devices.gpu.count=0..2 --vary devices.cpu.count=0..1 --policy cadp --db mix.db \
    >mix.out 2>&1
check "point without devices skipped with a note" grep -q "1 point without any device skipped" mix.out
check "mix stores the other 5 points" [ "$(q mix.db 'SELECT count(*) FROM runs')" = 5 ]
rc=0
"$BIN" sweep "$TINY" --vary devices.gpu.memory=2MB,1GiB --vary model.params=25000,250000 \
    --policy ddp,deepspeed,cadp --db fail.db \
    >fail.out 2>&1 || rc=$?
check "failed points do not fail the sweep" [ "$rc" = 0 ]
check "failed points stored with their error" [ "$(q fail.db "SELECT count(*) FROM runs WHERE status = 'failed'
    AND error LIKE '%cannot hold batch%'")" = 3 ]
check "summary counts failed runs" grep -q "3 failed" fail.out
"$BIN" sweep "$TINY" --vary training.epochs=1,2 --policy ddp --seeds 4 --db seeds.db >seeds.out 2>&1
check "one seed without randomness, said so" grep -q "ran seed 1 only" seeds.out
check "one seed stored" [ "$(q seeds.db 'SELECT count(DISTINCT seed) FROM runs')" = 1 ]
"$BIN" sweep "$TINY" --vary devices.gpu.noise=0.1,0.3 --policy ddp --seeds 3 --db noise.db >noise.out 2>&1
check "seeds 1..N with noise" [ "$(q noise.db 'SELECT count(*) FROM runs')" = 6 ]

# ---- interrupts (paper testbed: ~40 ms per stored cadp run) ------------------
PGRID=(--policy cadp --vary devices.rtx3090.link.down=50Mbps..200Mbps:lin:8 --vary devices.cpu4.count=0..7)
"$BIN" sweep "$PAPER" "${PGRID[@]}" --jobs 2 --db ref.db --quiet
check "reference sweep complete" [ "$(q ref.db 'SELECT count(*) FROM runs')" = 64 ]

# partial DB SIG: a sweep that raises SIG on itself once 4 runs are stored
# (DPSIM_TEST_RAISE, sim/sweep/sweep_impl.h): a known point, where polling
# the database and signalling from here raced a sweep that could end first.
partial() {
    rc=0
    DPSIM_TEST_RAISE=0:4:$2 "$BIN" sweep "$PAPER" "${PGRID[@]}" --jobs 2 --db "$1" >"$1.out" 2>"$1.err" || rc=$?
}

partial int.db 2
n_int=$(q int.db "SELECT count(*) FROM runs")
check "SIGINT exits 1" [ "$rc" = 1 ]
check "SIGINT stopped part-way ($n_int of 64 stored)" [ "$n_int" -lt 64 ]
check "SIGINT says interrupted" grep -q "interrupted" int.db.err
check "SIGINT leaves an intact database" [ "$(q int.db 'PRAGMA integrity_check')" = ok ]
"$BIN" sweep "$PAPER" "${PGRID[@]}" --jobs 2 --db int.db >int2.out 2>&1
check "resume after SIGINT completes" grep -q "$n_int stored before" int2.out
check "resume after SIGINT stores every point once" once int.db
check "resume after SIGINT equals the uninterrupted sweep" cmp -s <(dump ref.db) <(dump int.db)

partial kill.db 9
check "SIGKILL: the sweep died of it" [ "$rc" = 137 ]
# Its workers die with it (PR_SET_PDEATHSIG); one still finishing a run may
# store it after this count, which only keeps the count below 64.
n_kill=$(q kill.db "SELECT count(*) FROM runs")
check "SIGKILL stopped part-way ($n_kill of 64 stored)" [ "$n_kill" -lt 64 ]
check "SIGKILL leaves an intact database" [ "$(q kill.db 'PRAGMA integrity_check')" = ok ]
check "SIGKILL leaves no orphan rows" [ "$(q kill.db 'SELECT count(*) FROM run_segments
    WHERE run_id NOT IN (SELECT id FROM runs)')" = 0 ]
"$BIN" sweep "$PAPER" "${PGRID[@]}" --jobs 2 --db kill.db >kill2.out 2>&1
check "resume after SIGKILL stores every point once" once kill.db
check "resume after SIGKILL equals the uninterrupted sweep" cmp -s <(dump ref.db) <(dump kill.db)

# ---- shards and merge ---------------------------------------------------------
for k in 1 2 3; do
    "$BIN" sweep "$TINY" "${GRID[@]}" --shard "$k/3" --jobs 1 --db "s$k.db" --quiet
done
check "shards are disjoint" [ $(( $(q s1.db 'SELECT count(*) FROM runs') + $(q s2.db 'SELECT count(*) FROM runs') \
    + $(q s3.db 'SELECT count(*) FROM runs') )) = 45 ]
"$BIN" merge merged.db s1.db s2.db s3.db >merge.out
check "merge reports what it added" grep -q "45 runs added" merge.out
check "shards merged equal the unsharded sweep" cmp -s <(dump j1.db) <(dump merged.db)
"$BIN" merge merged.db s1.db s2.db s3.db j1.db >merge2.out
check "merged runs keep their values as numbers and their policy's label" \
    [ "$(q merged.db "SELECT count(*) FROM run_values v JOIN runs r ON r.id = v.run_id
                      WHERE v.key = 'devices.gpu.link.down' AND v.unit = 'B/s' AND v.si >= 1250000
                      AND r.policy_label IS NOT NULL")" = 45 ]
check "merging again adds nothing" grep -q "0 runs added, 90 already there" merge2.out
check "merged file is intact" [ "$(q merged.db 'PRAGMA integrity_check')" = ok ]
expect_exit 2 "merge refuses OUT as input" "output database itself" -- merge merged.db merged.db
"$BIN" sweep "$TINY" "${GRID[@]}" --jobs 2 --db merged.db >mres.out 2>&1
check "merged file resumes as the whole sweep" grep -q "45 stored before" mres.out

e2e_done e2e_sweep
