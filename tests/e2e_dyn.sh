#!/usr/bin/env bash
# e2e_dyn.sh: a world that changes (scenarios/README.md, "The dynamic
# world").  Hand-computed timelines on the tiny scenarios of
# tests/data/dyn/, a device gone for good, determinism with failures on,
# and the loader's messages for the new keys.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/e2e_lib.sh"
D=$SRC/tests/data/dyn
# check FILE POLICY TTOTAL STAT=VALUE...: the run's Ttotal and run statistics, to 1e-5 s
check() {
    python3 - "$@" <<'PY' && ok || bad "timeline $*"
import json, sys
_d = json.load(open(sys.argv[1]))
runs = {r["policy"]: r for r in (_d["runs"] if isinstance(_d, dict) else _d)}
r = runs[sys.argv[2]]
want_t = float(sys.argv[3])
assert abs(r["ttotal_s"] - want_t) < 1e-5, ("ttotal", r["ttotal_s"], want_t)
stats = {s["name"]: s["value"] for s in r.get("stats", []) if s["scope"] == "run"}
for kv in sys.argv[4:]:
    k, v = kv.split("=")
    assert abs(stats[k] - float(v)) < 1e-5, (k, stats[k], v)
PY
}

# --- one crash, by hand (crash.yaml: b down at 6.25 s, back at 9.5 s).
# Epoch 1 ends at 4 s; DDP/ZeRO checkpoint by 4.5 s and run epoch 2's
# steps from 4.5 s.  At 6.25 s b's batch is dropped (1.75 s since the
# checkpoint) and a's ends at 6.5 s (2 s): 3.75 s lost; the all-reduce
# blocks; the timeout fires at 8.25 s.
#  wait:    restart when b is back, 9.5 s; epoch 2 again: 4 steps, Ttotal
#           13.5 s; blocked 3.25 s; the checkpoint (4 B) resent to both.
#  elastic: restart at 8.25 s with a alone: 8 steps, Ttotal 16.25 s;
#           blocked 2 s; 4 B resent.
# C-ADP: epoch 2 runs from 4 s; b has done 2 batches and computes its 3rd
# at 6.25 s: its 2 unfinished samples (2 B of data resent) go to a, which
# ends its own 4 at 8 s and those at 10 s; b's 2.25 s of the epoch are lost.
for o in wait elastic; do
    expect 0 "$BIN" run "$D/crash.yaml" --no-db --json --set policies.ddp.on_failure=$o \
        --set policies.deepspeed.on_failure=$o
    cp "$T/out" "$T/crash-$o.json"
done
for p in ddp deepspeed; do
    check "$T/crash-wait.json" $p 13.5 failures=1 restarts=1 compute_lost_s=3.75 blocked_s=3.25 bytes_resent=8
    check "$T/crash-elastic.json" $p 16.25 failures=1 restarts=1 compute_lost_s=3.75 blocked_s=2 bytes_resent=4
done
check "$T/crash-wait.json" cadp 10 failures=1 restarts=0 compute_lost_s=2.25 blocked_s=0 bytes_resent=2
# elastic with sharded data: a takes all 8 samples and receives the 4 it
# lacked (4 B model + 4 B data); with 3 epochs b, back since 9.5 s, joins at
# the checkpoint after epoch 2 (16.25 s + 0.5 s write): epoch 3 on both,
# 4 steps, 20.75 s, b receiving the model (12 B resent in all)
expect 0 "$BIN" run "$D/crash.yaml" --no-db --json -p ddp --set policies.ddp.data=shard \
    --set policies.ddp.on_failure=elastic
check "$T/out" ddp 16.25 bytes_resent=8
expect 0 "$BIN" run "$D/crash.yaml" --no-db --json -p ddp --set policies.ddp.data=shard \
    --set policies.ddp.on_failure=elastic --set training.epochs=3
check "$T/out" ddp 20.75 restarts=1 bytes_resent=12
# C-ADP, 3 epochs: b is back (9.5 s) for epoch 3, planned in again: 10 s to 14 s;
# with its data lost it also receives its 4 samples again (2 + 4 B resent)
expect 0 "$BIN" run "$D/crash.yaml" --no-db --json -p cadp --set training.epochs=3
check "$T/out" cadp 14 failures=1 bytes_resent=2
expect 0 "$BIN" run "$D/crash.yaml" --no-db --json -p cadp --set training.epochs=3 \
    --set devices.b.availability.data_persists=false
check "$T/out" cadp 14 bytes_resent=6
# C-ADP with a gone for good at 6 s: its 3 unfinished samples go to b; at
# 6.25 s b fails too with 5 unfinished (its 1 + the 3 + the batch in flight):
# nobody is up, so b takes them when back at 9.5 s: 5 batches, 14.5 s
expect 0 "$BIN" run "$D/crash.yaml" --no-db --json -p cadp --set devices.a.availability.trace=gone.csv
check "$T/out" cadp 14.5 failures=2 compute_lost_s=4.25 bytes_resent=8
# and with both gone for good the run ends, saying so
expect 1 "$BIN" run "$D/crash.yaml" --no-db -p cadp --set devices.a.availability.trace=gone.csv \
    --set devices.b.availability.trace=gone.csv
has "$T/err" "every device is down for good at t = 6 s"
# data lost with the device: DDP resends b its replica (8 B) with the checkpoint
expect 0 "$BIN" run "$D/crash.yaml" --no-db --json -p ddp --set devices.b.availability.data_persists=false
check "$T/out" ddp 13.5 bytes_resent=16
# a timeout longer than the outage: the restart waits for it, not for b
expect 0 "$BIN" run "$D/crash.yaml" --no-db --json -p ddp --set policies.ddp.timeout=5s
check "$T/out" ddp 15.25 restarts=1 blocked_s=5
# checkpoints every 2 epochs (none before the crash): back to epoch 1 at 9.5 s,
# two epochs of 4 steps with no checkpoint between them: 17.5 s
expect 0 "$BIN" run "$D/crash.yaml" --no-db --json -p ddp --set policies.ddp.checkpoint_every=2
check "$T/out" ddp 17.5 restarts=1

# --- a link outage in the middle of a ring all-reduce (outage.yaml): 3.5 s, not 3 s
expect 0 "$BIN" run "$D/outage.yaml" --no-db --json -p ddp
check "$T/out" ddp 3.5000020
python3 - "$T/out" <<'PY' && ok || bad "outage: link statistics"
import json, sys
_d = json.load(open(sys.argv[1]))
r = (_d["runs"] if isinstance(_d, dict) else _d)[0]
link = {(s["name"], s["a"]): s["value"] for s in r["stats"] if s["scope"] == "link"}
# link 1 is a's down link: model + data (1 MB + 2 B) and b's half of the ring (1 MB)
assert abs(link[("link.bytes", 1)] - 2000002) < 1e-6, link
# a's up link is busy for the all-reduce only, 2 s to 3.5 s (stalled flows count)
assert abs(link[("link.busy_fraction", 0)] - 1.5 / 3.5000020) < 1e-6, link
assert link[("link.peak_util", 0)] == 1, link
PY
expect 0 "$BIN" run "$D/outage.yaml" --no-db --json -p ddp --set 'devices.a.link.outages=[]'
check "$T/out" ddp 3.0000020

# --- the links plot (skipped without gnuplot)
if command -v gnuplot >/dev/null 2>&1 || [ -n "${DPSIM_GNUPLOT:-}" ]; then
    expect 0 "$BIN" run "$D/outage.yaml" --db "$T/o.db" -p ddp
    expect 0 "$BIN" plot links --db "$T/o.db" --out "$T/links.png"
    if [ -s "$T/links.png" ]; then ok; else bad "plot links: no file"; fi
    expect 0 "$BIN" run "$D/outage.yaml" --db "$T/o.db" -p ddp --set 'devices.a.link.outages=[]'
    expect 2 "$BIN" plot links --db "$T/o.db" --run 2 --out "$T/links2.png"
    has "$T/err" "has no link statistics"
fi

# --- a device gone for good: on_failure wait ends the run, exit 1, naming it
DB="$T/r.db"
expect 1 "$BIN" run "$D/crash.yaml" --db "$DB" -p cadp,ddp --set devices.b.availability.trace=gone.csv
has "$T/err" "device b went down at t = 6 s and never comes back"
has "$T/err" "(t = 8 s)"
expect 0 "$BIN" runs --db "$DB"
has "$T/out" "cadp"
# elastic carries on without it: a alone from 8 s, 8 steps
expect 0 "$BIN" run "$D/crash.yaml" --no-db --json -p ddp --set devices.b.availability.trace=gone.csv \
    --set policies.ddp.on_failure=elastic
check "$T/out" ddp 16 restarts=1
# devices failing faster than an epoch: the run gives up instead of looping
expect 1 "$BIN" run "$SRC/scenarios/tiny.yaml" --no-db -p ddp --set availability.mtbf=5s \
    --set availability.mttr=1s --set policies.ddp.timeout=1s --set policies.ddp.max_restarts=20
has "$T/err" "no progress: 20 restarts"
# a policy without an on_device hook is refused, not run wrong
expect 0 "$BIN" run "$D/crash.yaml" --no-db -p cadp

# --- determinism with failures on: same seed, same bytes; sweeps --jobs 1 = --jobs 2
GEO=(--set availability.mtbf=30min --set availability.mttr=5min --set training.epochs=2)
expect 0 "$BIN" run "$SRC/scenarios/geo-3sites.yaml" --no-db --json -p cadp "${GEO[@]}"
grep -v '"wall_s"' "$T/out" | sed 's/"wall_s":[^,]*,//' >"$T/d1"
expect 0 "$BIN" run "$SRC/scenarios/geo-3sites.yaml" --no-db --json -p cadp "${GEO[@]}"
grep -v '"wall_s"' "$T/out" | sed 's/"wall_s":[^,]*,//' >"$T/d2"
if cmp -s "$T/d1" "$T/d2"; then ok; else bad "same seed, different bytes with failures on"; fi
has "$T/d1" '"failures"'
for j in 1 2; do
    expect 0 "$BIN" sweep "$D/flaky.yaml" --vary availability.mtbf=2s,5s,20s \
        --vary policies.ddp.on_failure=wait,elastic --seeds 2 --jobs $j --db "$T/sw$j.db" -q
    expect 0 "$BIN" export --csv --db "$T/sw$j.db" --out "$T/csv$j"
done
python3 - "$T/csv1" "$T/csv2" <<'PY' && ok || bad "sweep --jobs 1 and --jobs 2 differ"
import csv, sys
def load(d):
    rows = list(csv.DictReader(open(d + "/runs.csv")))
    drop = {"id", "wall_s", "started_at"}
    key = lambda r: (r.get("point_json", ""), r.get("policy", ""), r.get("seed", ""))
    return sorted((key(r), {k: v for k, v in r.items() if k not in drop}) for r in rows)
a, b = load(sys.argv[1]), load(sys.argv[2])
assert len(a) == 36 and a == b, (len(a), len(b))
PY

# --- the loader: FILE:LINE:COL for the new keys
bad_yaml() { # bad_yaml NAME EDIT TEXT: sed EDIT on crash.yaml must be refused with TEXT
    sed "$2" "$D/crash.yaml" >"$T/$1.yaml"
    cp "$D/down.csv" "$T/"
    expect 2 "$BIN" check "$T/$1.yaml"
    has "$T/err" "$3"
}
bad_yaml both 's|{ trace: down.csv }|{ trace: down.csv, mtbf: 1h }|' "$T/both.yaml:23:"
has "$T/err" "give either a trace or mtbf and mttr"
bad_yaml order 's|link: { up: 1Gbps, down: 1Gbps }$|link: { up: 1Gbps, down: 1Gbps, outages: [[5s, 9s], [7s, 8s]] }|' \
    "devices.a.link.outages[1]: outages must be in order"
bad_yaml strag 's|availability: { trace: down.csv }|stragglers: { every: 1h, lasting: 1min, factor: 0.5 }|' \
    "devices.b.stragglers.factor: a straggler multiplies the batch cost by at least 1"
bad_yaml mttr 's|availability: { trace: down.csv }|availability: { mtbf: 1h }|' "missing required key 'mttr'"
bad_yaml zero 's|availability: { trace: down.csv }|availability: { mtbf: 0s, mttr: 1s }|' \
    "devices.b.availability.mtbf: must be > 0"
printf 'time_s,up\n0,1\n3,0.5\n' >"$T/half.csv"
bad_yaml half 's|trace: down.csv|trace: half.csv|' "holds 1 (up) or 0 (down) only (got 0.5 at t = 3 s)"
expect 2 "$BIN" run "$D/crash.yaml" --no-db -p deepspeed --set policies.deepspeed.stage=3
has "$T/err" "stage 3 does not model device failures"

e2e_done e2e_dyn
