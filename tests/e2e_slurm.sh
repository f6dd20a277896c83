#!/usr/bin/env bash
# e2e_slurm.sh: `dpsim sweep --shard slurm` and `--print-sbatch` with
# Slurm's environment simulated (the variables set by hand, a fake sbatch
# on PATH): the tasks of an array cover the grid once, merged they equal a
# whole sweep; missing or inconsistent variables are usage errors; the
# generated script passes `bash -n`, its task part run by hand stores the
# shards and its submit part submits the array and a dependent merge.
# Env: DPSIM_BIN (absolute path of dpsim), DPSIM_SRC (source root).
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/e2e_lib.sh"

if ! command -v sqlite3 >/dev/null 2>&1; then
    echo "e2e_slurm: the sqlite3 command-line shell is required (install the sqlite3 package)" >&2
    echo "0 passed, 1 failed"
    exit 1
fi
cd "$T"
# Whatever Slurm the test itself may run under must not leak in.
unset SLURM_ARRAY_TASK_ID SLURM_ARRAY_TASK_COUNT SLURM_ARRAY_TASK_MIN SLURM_ARRAY_TASK_STEP SLURM_ARRAY_JOB_ID \
    SLURM_CPUS_PER_TASK 2>/dev/null || true

rows() { sqlite3 "$1" "SELECT point_json, policy, seed, status, printf('%.17g', ttotal_s), events FROM runs ORDER BY 1, 2, 3"; }

GRID=(--vary devices.gpu.count=1..5 --vary devices.gpu.link.down=10Mbps,1Gbps --policy ddp,cadp)
"$BIN" sweep "$TINY" "${GRID[@]}" --jobs 1 --db whole.db -q
rows whole.db >whole.txt
[ "$(wc -l <whole.txt)" -eq 20 ] && ok "reference sweep: 10 points x 2 policies" || bad "reference sweep"

# expect_usage NAME NEEDLE ENV... : --shard slurm exits 2 naming NEEDLE.
expect_usage() {
    local name=$1 needle=$2
    shift 2
    local rc=0
    env "$@" "$BIN" sweep "$TINY" "${GRID[@]}" --shard slurm --db never.db -q 2>err.txt || rc=$?
    if [ "$rc" -eq 2 ] && grep -q -- "$needle" err.txt && [ ! -e never.db ]; then
        ok "$name"
    else
        bad "$name (exit $rc)"
        cat err.txt
    fi
}
expect_usage "--shard slurm outside an array: exit 2 naming SLURM_ARRAY_TASK_ID" "SLURM_ARRAY_TASK_ID is not set"
expect_usage "--shard slurm without SLURM_ARRAY_TASK_COUNT" "SLURM_ARRAY_TASK_COUNT is not set" \
    SLURM_ARRAY_TASK_ID=0
expect_usage "--shard slurm: task id beyond the count (a list array)" "task 7 is not one of 3 tasks" \
    SLURM_ARRAY_TASK_ID=7 SLURM_ARRAY_TASK_COUNT=3 SLURM_ARRAY_TASK_MIN=0
expect_usage "--shard slurm: id below MIN" "task 0 is not one of" \
    SLURM_ARRAY_TASK_ID=0 SLURM_ARRAY_TASK_COUNT=3 SLURM_ARRAY_TASK_MIN=1
expect_usage "--shard slurm: id off the step" "task 3 is not one of" \
    SLURM_ARRAY_TASK_ID=3 SLURM_ARRAY_TASK_COUNT=3 SLURM_ARRAY_TASK_MIN=0 SLURM_ARRAY_TASK_STEP=2
expect_usage "--shard slurm: not a number" "want whole numbers" SLURM_ARRAY_TASK_ID=x SLURM_ARRAY_TASK_COUNT=3

# Three array layouts, each of 3 tasks, cover the grid once: --array=0-2,
# --array=1-3 and --array=0-4:2.
for layout in "0 1" "1 1" "0 2"; do
    set -- $layout
    min=$1 step=$2
    rm -f t-*.db
    for i in 0 1 2; do
        id=$((min + i * step))
        env SLURM_ARRAY_TASK_ID=$id SLURM_ARRAY_TASK_COUNT=3 SLURM_ARRAY_TASK_MIN=$min SLURM_ARRAY_TASK_STEP=$step \
            "$BIN" sweep "$TINY" "${GRID[@]}" --shard slurm --jobs 1 --db "t-$i.db" >"t-$i.out" 2>&1
    done
    # Task i runs shard i+1 of 3: the points p with p mod 3 == i.
    shard_ok=1
    for i in 0 1 2; do
        grep -q "(shard $((i + 1))/3 of 10)" "t-$i.out" || shard_ok=0
    done
    n=$(for i in 0 1 2; do sqlite3 "t-$i.db" "SELECT count(*) FROM runs"; done | awk "{s += \$1} END {print s}")
    rm -f merged.db
    "$BIN" merge merged.db t-0.db t-1.db t-2.db >/dev/null
    if [ "$shard_ok" = 1 ] && [ "$n" -eq 20 ] && rows merged.db | cmp -s whole.txt -; then
        ok "array MIN=$min STEP=$step: 3 tasks are shards 1..3 of 3, 20 runs in all, merged = the whole sweep"
    else
        bad "array MIN=$min STEP=$step: shards ($shard_ok), $n runs, or merged differs"
    fi
done

# ---- --print-sbatch ------------------------------------------------------
"$BIN" sweep "$TINY" "${GRID[@]}" --jobs 7 --db ignored.db --print-sbatch >job.sh
if bash -n job.sh; then ok "--print-sbatch: the script passes bash -n"; else bad "--print-sbatch: bash -n"; fi
if grep -q '^#SBATCH --array=0-9$' job.sh && grep -q -- "--shard slurm" job.sh && grep -q "'$TINY'" job.sh &&
    ! grep -v '^#' job.sh | grep -q -- "--print-sbatch\|ignored.db\|--jobs 7\|'7'"; then
    ok "--print-sbatch: 10 tasks for 10 points, --shard slurm, absolute scenario, own --jobs/--db"
else
    bad "--print-sbatch: content"
    cat job.sh
fi
[ ! -e ignored.db ] && ok "--print-sbatch runs nothing" || bad "--print-sbatch created the database"

# Its task part, run by hand as Slurm would (3 tasks here: the count comes
# from the environment, not from the #SBATCH line).
mkdir -p out node
for i in 0 1 2; do
    env SLURM_ARRAY_TASK_ID=$i SLURM_ARRAY_TASK_COUNT=3 SLURM_ARRAY_TASK_MIN=0 SLURM_ARRAY_JOB_ID=42 \
        SLURM_CPUS_PER_TASK=1 TMPDIR="$T/node" DPSIM="$BIN" DPSIM_OUT="$T/out" bash job.sh >"job-$i.log" 2>&1 ||
        { bad "task $i of the script failed"; cat "job-$i.log"; }
done
rm -f merged2.db
"$BIN" merge merged2.db out/shards/shard-*.db >/dev/null
if [ "$(ls out/shards/*.db | wc -l)" -eq 3 ] && rows merged2.db | cmp -s whole.txt - && [ -z "$(ls node)" ]; then
    ok "script tasks: 3 shards copied back from local disk (cleaned), merged = the whole sweep"
else
    bad "script tasks: shards or merge"
    ls -R out node
fi
# Submitted again, each task resumes from its copied shard: nothing re-run.
env SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_COUNT=3 SLURM_ARRAY_JOB_ID=43 TMPDIR="$T/node" DPSIM="$BIN" \
    DPSIM_OUT="$T/out" bash job.sh >job-again.log 2>&1
if [ "$(sqlite3 out/shards/shard-1.db "SELECT count(*) FROM runs")" -eq "$(sqlite3 t-1.db "SELECT count(*) FROM runs")" ] &&
    grep -q "0 runs done (0 ok, 0 failed), [1-9][0-9]* stored before, 0 left" job-again.log; then
    ok "script task resubmitted: resumes from its shard, nothing run twice"
else
    bad "script task resubmitted"
    tail -3 job-again.log
fi

# Its submit part, with a fake sbatch that logs its arguments and runs a
# --wrap command as Slurm does: with /bin/sh (dash on Debian, which has no
# shopt), in the environment sbatch was given (--export=ALL).
mkdir -p fakebin
cat >fakebin/sbatch <<'EOF'
#!/bin/bash
printf '%s\n' "$*" >>"$FAKE_LOG"
for a in "$@"; do
    case $a in --wrap=*) /bin/sh -c "${a#--wrap=}" >>"$FAKE_LOG.wrap" 2>&1 || echo "wrap failed: $?" >>"$FAKE_LOG" ;; esac
done
echo "1234;cluster"
EOF
chmod +x fakebin/sbatch
if env PATH="$T/fakebin:$PATH" FAKE_LOG="$T/sbatch.log" DPSIM="$BIN" DPSIM_OUT="$T/out" bash job.sh >submit.log &&
    head -1 sbatch.log | grep -q -- "--parsable.* job.sh$" &&
    sed -n 2p sbatch.log | grep -q -- "--dependency=afterany:1234 .*merge" && ! grep -q "wrap failed" sbatch.log &&
    rows out/results.db | cmp -s whole.txt -; then
    ok "script submit: the array, then dpsim merge (run by /bin/sh) after any end of job 1234"
else
    bad "script submit"
    cat sbatch.log submit.log sbatch.log.wrap
fi

# Hostile names (issue 38): a project directory, scenario and binary path
# holding $(...), backquotes, quotes, spaces and a newline are data, never
# code, in the task part and in the merge job.
H="$T/p \$(touch PWNED1) \`touch PWNED2\` \"q\" 'a'
x;touch PWNED3"
mkdir -p "$H/bin"
cp "$TINY" "$H/t \$(touch PWNED4).yaml"
HB="$H/bin/dpsim \`touch PWNED5\`"
ln -s "$BIN" "$HB"
(cd "$H" && "$HB" sweep "t \$(touch PWNED4).yaml" "${GRID[@]}" --print-sbatch >job.sh)
for i in 0 1 2; do
    (cd "$H" && env SLURM_ARRAY_TASK_ID=$i SLURM_ARRAY_TASK_COUNT=3 SLURM_ARRAY_JOB_ID=44 SLURM_CPUS_PER_TASK=1 \
        TMPDIR="$H" DPSIM="$HB" bash job.sh >"$T/hjob-$i.log" 2>&1) || {
        bad "hostile: task $i failed"
        cat "$T/hjob-$i.log"
    }
done
rm -f sbatch.log sbatch.log.wrap
(cd "$H" && env PATH="$T/fakebin:$PATH" FAKE_LOG="$T/sbatch.log" DPSIM="$HB" bash job.sh >"$T/hsubmit.log" 2>&1) ||
    bad "hostile: submit failed: $(cat "$T/hsubmit.log")"
if [ -z "$(find "$T" -name 'PWNED*')" ] && [ -f "$H/results.db" ] && rows "$H/results.db" | cmp -s whole.txt - &&
    ! grep -q "wrap failed" sbatch.log; then
    ok "hostile names in the directory, scenario and binary: nothing run, the merge job merges the 3 shards"
else
    bad "hostile names: $(find "$T" -name 'PWNED*') $(cat sbatch.log sbatch.log.wrap 2>/dev/null)"
fi

# Bundled short options (-qV SPEC, -qp ddp, -qd DB) are taken apart by the
# parser: the script gets --vary 'KEY=SPEC' and --policy 'ddp', and runs.
"$BIN" sweep "$TINY" -qV devices.gpu.count=1..2 -qp ddp -qd ignored.db --print-sbatch >bjob.sh
mkdir -p bout
env SLURM_ARRAY_TASK_ID=0 SLURM_ARRAY_TASK_COUNT=1 SLURM_ARRAY_JOB_ID=45 SLURM_CPUS_PER_TASK=1 TMPDIR="$T/node" \
    DPSIM="$BIN" DPSIM_OUT="$T/bout" bash bjob.sh >bjob.log 2>&1 || true
if grep -q -- "--vary 'devices.gpu.count=1..2'" bjob.sh && grep -q -- "--policy 'ddp'" bjob.sh &&
    ! grep -v '^#' bjob.sh | grep -q -- " -q\|ignored.db" &&
    [ "$(sqlite3 bout/shards/shard-0.db "SELECT group_concat(policy || ':' || status) FROM runs")" = "ddp:ok,ddp:ok" ]; then
    ok "bundled -qV/-qp/-qd: the script carries --vary and --policy from the parsed options; 2 runs stored"
else
    bad "bundled short options"
    cat bjob.sh bjob.log
fi

e2e_done e2e_slurm
