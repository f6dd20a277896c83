#!/usr/bin/env bash
# e2e_symmetry.sh: exact symmetry (issue 39; sim/policy/runtime_sym.c)
# changes no stored byte.  Each world runs twice, with symmetry off
# (DPSIM_NO_SYMMETRY=1, a switch for tests only) and on, and the stored runs
# (every table of the run: devices, FLOPS bins, statistics, epochs,
# segments, values) and the printed tables must be equal, but for the wall
# time, the run's id and dates:
#  - the small shipped scenarios as they are, every policy (too few devices
#    for a class: the switch must change nothing);
#  - every shipped scenario with each device group 40 times as large, where
#    classes form (symmetry needs more than 65 devices), analytic and flow
#    rings, with enough epochs for the fast-forward to replay (a replayed
#    epoch of classes);
#  - the fidelity worlds (tests/fidelity_worlds.py) with 30 devices per
#    group: shared NICs, WAN sites with TCP windows, traced links (their
#    groups stay alone);
#  - a world of groups one device wide in a row (nothing forms).
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/e2e_lib.sh"

# The stored run, minus what differs from one run to the next.
dump() {
    sqlite3 "$1" "select * from runs" |
        sed -E 's/\|[0-9.e+-]+\|ok\|/|W|ok|/; s/[0-9T:-]+Z-[0-9]+/ID/; s/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]+Z/DATE/g'
    for t in run_devices run_flops run_stats run_epochs run_segments run_values run_evals run_tta; do
        sqlite3 "$1" "select * from $t" 2>/dev/null
    done
}

# same NAME ARGS...: `dpsim run ARGS` with symmetry off and on, compared
# (a run that fails, as DDP on a fleet whose batteries die, must fail the
# same way).
same() {
    local name=$1 rc0 rc1
    shift
    rm -f "$T/off.db" "$T/on.db"
    DPSIM_NO_SYMMETRY=1 "$BIN" run "$@" --db "$T/off.db" -q >"$T/off.out" 2>"$T/off.err"
    rc0=$?
    "$BIN" run "$@" --db "$T/on.db" -q >"$T/on.out" 2>"$T/on.err"
    rc1=$?
    if [ "$rc0" -ne "$rc1" ] || [ "$rc0" -gt 1 ]; then
        bad "$name: exit $rc0 with symmetry off, $rc1 on: $(head -c 300 "$T/on.err")"
        return
    fi
    sed -i '/stored in/d' "$T/off.out" "$T/on.out"
    if cmp -s <(dump "$T/off.db") <(dump "$T/on.db") && cmp -s "$T/off.out" "$T/on.out" &&
        cmp -s "$T/off.err" "$T/on.err"; then
        ok "$name"
    else
        bad "$name: symmetry on and off differ"
        diff <(dump "$T/off.db") <(dump "$T/on.db") | head -6 >&2
        diff "$T/off.out" "$T/on.out" | head -6 >&2
    fi
}

# --set devices.G.count=K*count for every group of a scenario (its groups
# from a short C-ADP run's devices)
scale_args() {
    "$BIN" run "$1" --policy cadp --no-db --json -q --set training.epochs=1 2>/dev/null | python3 -c '
import collections, json, sys
k = int(sys.argv[1])
n = collections.Counter(d["group"] for d in json.load(sys.stdin)["runs"][0]["devices"])
for g, c in n.items():
    if "[" not in g:  # drawn devices are groups of one
        print("--set devices.%s.count=%d" % (g, c * k))' "$2"
}

# unscaled (too few devices for a class: the switch must change nothing either)
for sc in tiny digits stragglers; do
    same "$sc (every policy)" "$SRC/scenarios/$sc.yaml"
done
for f in "$SRC"/scenarios/*.yaml; do
    sc=$(basename "$f" .yaml)
    [ "$sc" = population ] && continue # drawn devices: groups of one
    case $sc in
    jobs-*) # many jobs on one world: `dpsim jobs`, its JSON compared
        if DPSIM_NO_SYMMETRY=1 "$BIN" jobs "$f" --json --no-db >"$T/off.json" 2>&1 &&
            "$BIN" jobs "$f" --json --no-db >"$T/on.json" 2>&1 && cmp -s "$T/off.json" "$T/on.json"; then
            ok "$sc (dpsim jobs)"
        else
            bad "$sc: dpsim jobs differs with symmetry on and off (or failed): $(head -c 200 "$T/on.json")"
        fi
        continue
        ;;
    esac
    # a scenario whose data set is an optional Debian package not installed
    # here (paper-fashion: dataset-fashion-mnist) cannot run: said, not failed
    if ! "$BIN" check "$f" >/dev/null 2>"$T/check.err" && grep -q "is not installed" "$T/check.err"; then
        echo "e2e_symmetry: $sc skipped: $(head -c 200 "$T/check.err")" >&2
        continue
    fi
    args=$(scale_args "$f" 40)
    [ -n "$args" ] || { bad "$sc: no groups from a C-ADP run's devices"; continue; }
    # shellcheck disable=SC2086
    same "$sc x40, analytic" "$f" --policy ddp,deepspeed $args --set training.epochs=4 \
        --set policies.ddp.collective=analytic --set policies.deepspeed.collective=analytic \
        --set dataset.samples=20000
    # shellcheck disable=SC2086
    same "$sc x40, flows" "$f" --policy ddp $args --set training.epochs=2 --set policies.ddp.collective=flows \
        --set dataset.samples=8000
done

# the fidelity worlds, 30 devices a group
python3 - "$SRC/tests" "$T" <<'PY'
import os, random, re, sys
sys.path.insert(0, sys.argv[1])
import fidelity_worlds as fw
rng = random.Random(39)
for i in range(8):
    kind = ["star", "nic", "wan", "trace"][i % 4]
    text, _ = fw.world(rng, kind, i, sys.argv[2])
    text = re.sub(r"- \{ name: (d\d+), ", r"- { name: \1, count: 30, ", text)
    with open(os.path.join(sys.argv[2], "fw%d.yaml" % i), "w") as f:
        f.write(text)
PY
for i in 0 1 2 3 4 5 6 7; do
    same "fidelity world $i x30, analytic" "$T/fw$i.yaml" --policy ddp,deepspeed --set training.epochs=4 \
        --set policies.ddp.collective=analytic --set policies.deepspeed.collective=analytic
    same "fidelity world $i x30, flows" "$T/fw$i.yaml" --policy ddp --set training.epochs=2 \
        --set policies.ddp.collective=flows
done

# pipelined rings as flows; no overlap, ZeRO-1 with gradient accumulation
same "fidelity world 1 x30, pipelined flows" "$T/fw1.yaml" --policy ddp --set training.epochs=2 \
    --set policies.ddp.collective=flows --set policies.ddp.collective_progress=pipelined
same "fidelity world 1 x30, no overlap, ZeRO-1 x3" "$T/fw1.yaml" --policy ddp,deepspeed --set training.epochs=3 \
    --set policies.ddp.collective=analytic --set policies.ddp.overlap=false --set policies.deepspeed.stage=1 \
    --set policies.deepspeed.grad_accum=3

{
    printf 'name: row\nmodel: { params: 1000, flops_per_sample: 1e6 }\n'
    printf 'dataset: { samples: 4000, sample_bytes: 1KB }\ntraining: { epochs: 3 }\ndevices:\n'
    for i in $(seq 0 99); do
        printf '  - { name: d%d, kind: cpu, memory: 1GiB, batch: 4, batch_time: %d.5s, link: { up: 1Mbps, down: 1Mbps } }\n' \
            "$i" $((i % 3 + 1))
    done
} >"$T/row.yaml"
same "100 groups of one" "$T/row.yaml" --policy ddp,deepspeed

e2e_done e2e_symmetry
