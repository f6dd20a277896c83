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
# The load-balancing policies (equal_finish, dlb, lbbsp, lbb) run on the
# same machinery and, with two equal devices (1 sample each per iteration
# of 2), give DDP's timeline; elastic: a alone computes both samples of each
# iteration (2 s), 4 iterations from 8.25 s.
LBP="equal_finish dlb lbbsp lbb"
for o in wait elastic; do
    sets=(--set policies.ddp.on_failure=$o --set policies.deepspeed.on_failure=$o)
    for p in $LBP; do sets+=(--set policies.$p.on_failure=$o); done
    expect 0 "$BIN" run "$D/crash.yaml" --no-db --json "${sets[@]}"
    cp "$T/out" "$T/crash-$o.json"
done
for p in ddp deepspeed $LBP; do
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
# the same for the load balancers: a's share grows to 8 (4 B of data), and b
# (its disk kept: out of the job, its shard is left alone) rejoins at the
# checkpoint after epoch 2 with the model only; its share is 4 again
for p in $LBP; do
    expect 0 "$BIN" run "$D/crash.yaml" --no-db --json -p $p --set policies.$p.data=shard \
        --set policies.$p.on_failure=elastic --set training.epochs=3
    check "$T/out" $p 20.75 restarts=1 bytes_resent=12
done
# lbb with data lost: b receives its replica (8 B) with the checkpoint; a
# checkpoint every 2 epochs: back to epoch 1 at 9.5 s (lost: a 0-7 s, b
# 0-6.25 s), and epoch 1's per-device statistics are kept once, not twice
expect 0 "$BIN" run "$D/crash.yaml" --no-db --json -p lbb --set devices.b.availability.data_persists=false
check "$T/out" lbb 13.5 bytes_resent=16
expect 0 "$BIN" run "$D/crash.yaml" --no-db --json -p dlb --set policies.dlb.checkpoint_every=2
check "$T/out" dlb 17.5 restarts=1 compute_lost_s=13.25
python3 - "$T/out" <<'PY' && ok || bad "dlb: one batch_mean row per device and epoch after a rollback"
import json, sys
_d = json.load(open(sys.argv[1]))
r = (_d["runs"] if isinstance(_d, dict) else _d)[0]
rows = [(s["a"], s["b"]) for s in r["stats"] if s["name"] == "batch_mean"]
assert sorted(rows) == [(0, 1), (0, 2), (1, 1), (1, 2)], rows
PY
# gone for good: wait ends the run naming b; elastic goes on with a (b lost
# at 6 s: 1.5 + 2 s lost; a alone from 8 s, 16 s)
expect 1 "$BIN" run "$D/crash.yaml" --no-db -p lbbsp --set devices.b.availability.trace=gone.csv
has "$T/err" "device b went down at t = 6 s and never comes back"
expect 0 "$BIN" run "$D/crash.yaml" --no-db --json -p lbbsp --set devices.b.availability.trace=gone.csv \
    --set policies.lbbsp.on_failure=elastic
check "$T/out" lbbsp 16 restarts=1 compute_lost_s=3.5
# --- local SGD (steps: 2, ring, analytic): rounds of 2 batches, 4 s per epoch.
# Epoch 2's second round starts at 6 s; b's batch is cut at 6.25 s (0.25 s
# lost), its last sample of the epoch skipped; a ends the round alone (a
# ring of one) at 8 s.  3 epochs: b is down when epoch 3 starts (its 4
# samples skipped), back at 9.5 s, so it receives the model (4 B) at the
# round of 10 s and takes part with nothing left; a ends at 12 s.
LS=(-p localsgd --set policies.localsgd.steps=2 --set policies.localsgd.collective=analytic)
for sync in ring server; do
    expect 0 "$BIN" run "$D/crash.yaml" --no-db --json "${LS[@]}" --set policies.localsgd.sync=$sync
    check "$T/out" localsgd 8 failures=1 compute_lost_s=0.25 samples_skipped=1 bytes_resent=0 restarts=0
    expect 0 "$BIN" run "$D/crash.yaml" --no-db --json "${LS[@]}" --set policies.localsgd.sync=$sync \
        --set training.epochs=3
    check "$T/out" localsgd 12 compute_lost_s=0.25 samples_skipped=5 bytes_resent=4 rounds=6
done
# data lost: b also receives its 4 samples again; gone for good at 6.25 s
# (gone-late.csv): a goes on alone, same times
expect 0 "$BIN" run "$D/crash.yaml" --no-db --json "${LS[@]}" --set training.epochs=3 \
    --set devices.b.availability.data_persists=false
check "$T/out" localsgd 12 bytes_resent=8
expect 0 "$BIN" run "$D/crash.yaml" --no-db --json "${LS[@]}" --set training.epochs=3 \
    --set devices.b.availability.trace=gone-late.csv
check "$T/out" localsgd 12 samples_skipped=5 bytes_resent=0
# a failure during the average: a 250 MB model (1 s per ring round of M/2 at
# 1 Gbps, 2 s per all-reduce, 2 s to send it), b down 5-6 s (blip.csv).
# b down 4.5-5.5 s (blip.csv).
# Ring: model at 2 s, batches 2-4 s, all-reduce from 4 s cut at 4.5 s: a runs
# it again alone (instant), b's 2 s of the round are lost and its 2 samples
# left skipped; a's round 4.5-6.5 s ends epoch 1.  Epoch 2: b, back, receives
# the model 6.5-8.5 s (250 MB resent) while a computes; b computes its 2
# samples 8.5-10.5 s, all-reduce 10.5-12.5 s, last round 12.5-14.5 s,
# all-reduce 14.5-16.5 s.
# Server: every round is download 2 s, batches 2 s, upload 2 s: b's upload
# is cut at 4.5 s (its round lost), a's arrives at 6 s; b, back, receives
# the model with a's download, 6-8 s: 4 more rounds of 6 s, 24 s.
for sync in ring:16.5 server:24; do
    expect 0 "$BIN" run "$D/crash.yaml" --no-db --json "${LS[@]}" --set policies.localsgd.sync=${sync%:*} \
        --set model.params=62500000 --set devices.b.availability.trace=blip.csv
    check "$T/out" localsgd ${sync#*:} compute_lost_s=2 samples_skipped=2 bytes_resent=250000000
done
# both gone for good: exit 1, naming the last and when
expect 1 "$BIN" run "$D/crash.yaml" --no-db "${LS[@]}" --set devices.a.availability.trace=gone.csv \
    --set devices.b.availability.trace=gone.csv
has "$T/err" "every device is down for good at t = 6 s"

# --- the asynchronous parameter server (pull, 1 s batch, push; ~instant
# transfers): 4 s per epoch.  b's third batch of epoch 2 (6-7 s) is lost at
# 6.25 s (pushes_lost 1, 0.25 s lost), its last sample skipped; a ends
# epoch 2 at 8 s.  Lock-step SSP (max_staleness 0) gives the same: b drops
# out of the clocks.  3 epochs: b is down at 8 s, skips epoch 3 (4 more
# samples); 4 epochs: back, it pulls at 12 s and both end at 16 s; with its
# data lost it receives shard and model (8 B) instead of the pull.
for s in -1 0; do
    expect 0 "$BIN" run "$D/crash.yaml" --no-db --json -p asyncps --set policies.asyncps.max_staleness=$s
    check "$T/out" asyncps 8 failures=1 compute_lost_s=0.25 pushes_lost=1 samples_skipped=1 rounds=14
done
expect 0 "$BIN" run "$D/crash.yaml" --no-db --json -p asyncps --set training.epochs=3
check "$T/out" asyncps 12 samples_skipped=5 rounds=18 bytes_resent=0
expect 0 "$BIN" run "$D/crash.yaml" --no-db --json -p asyncps --set training.epochs=4 \
    --set devices.b.availability.data_persists=false
check "$T/out" asyncps 16 samples_skipped=5 rounds=26 bytes_resent=8
# the 250 MB model (2 s per pull or push): b's first push (3-5 s) is cut at
# 4.5 s (1 s of compute lost, 3 samples skipped); a's 4 samples take 5 s
# each (pull, batch, push): epoch 1 ends at 20 s, epoch 2 on both at 40 s
expect 0 "$BIN" run "$D/crash.yaml" --no-db --json -p asyncps --set model.params=62500000 \
    --set devices.b.availability.trace=blip.csv
check "$T/out" asyncps 40 compute_lost_s=1 pushes_lost=1 samples_skipped=3
# every device gone for good: exit 1, not a run that ends early or hangs
expect 1 "$BIN" run "$D/crash.yaml" --no-db -p asyncps --set devices.a.availability.trace=gone.csv \
    --set devices.b.availability.trace=gone.csv
has "$T/err" "every device is down for good at t = 6 s"

# --- FL-SGD (steps: 2, analytic ring or server): averages in the background
# every 2 steps.  The crash as for local SGD: b's batch cut at 6.25 s (its
# work since the average launched at 6 s lost), a closes epoch 2 at 8 s;
# 3 epochs: b, back at 9.5 s, receives the model (4 B) when the average of
# 10 s ends; a closes epoch 3 at 12 s.
FL=(-p flsgd --set policies.flsgd.steps=2 --set policies.flsgd.collective=analytic)
for sync in ring server; do
    expect 0 "$BIN" run "$D/crash.yaml" --no-db --json "${FL[@]}" --set policies.flsgd.sync=$sync
    check "$T/out" flsgd 8 compute_lost_s=0.25 samples_skipped=1 bytes_resent=0
    expect 0 "$BIN" run "$D/crash.yaml" --no-db --json "${FL[@]}" --set policies.flsgd.sync=$sync \
        --set training.epochs=3
    check "$T/out" flsgd 12 compute_lost_s=0.25 samples_skipped=5 bytes_resent=4 rounds=6
done
# A 150 MB model: 1.2 s per transfer, 0.6 s per ring round.  Model at 1.2 s,
# batches from 1.2 s; the first average launches at 3.2 s with 2 batches of
# each.  b down at 4 s (blip4.csv, back at 5.5 s):
#  ring: the all-reduce (3.2-4.4 s) loses b: a runs it alone (at once); b
#    loses all it computed (2.8 s: its part of the average too) and skips 1
#    sample; a closes epoch 1 at 5.2 s alone; b skips epoch 2 (down at 5.2
#    s: 4 more); after a's average at 7.2 s b receives the model (7.2-8.4
#    s); a's last batch ends at 9.2 s, the forced average of both 10.4 s.
#  server: b's upload is cut (2.8 s lost, 1 skipped); a's arrives at 4.4 s,
#    its download ends at 5.6 s, when b (back) gets the model (5.6-6.8 s);
#    the forced average of a alone (5.6-8 s: averaged at 6.8 s, which
#    closes epoch 1, then downloaded); epoch 2 on both: batches 8-10 s, an
#    average 10-12.4 s beside batches 10-12 s, the forced one uploaded
#    12.4-13.6 s and averaged: the run ends at 13.6 s (+ the server's 32 ns
#    of averaging), before the download (docs/MODEL.md, "When a run ends").
# b down 4.5-5.5 s instead (blip.csv): the ring average (3.2-4.4 s) is done:
#  b loses only its work since 3.2 s (1.3 s), has no sample left, and is down
#  at 5.2 s (epoch 2: 4 skipped): 10.4 s again; server: b's download
#  (4.4-5.6 s) is cut, the rest as above: 13.6 s, nothing skipped.
for c in ring:blip4:10.4:2.8:5 server:blip4:13.6:2.8:1 ring:blip:10.4:1.3:4 server:blip:13.6:1.3:0; do
    IFS=: read -r sync trace t lost skip <<<"$c"
    expect 0 "$BIN" run "$D/crash.yaml" --no-db --json "${FL[@]}" --set policies.flsgd.sync=$sync \
        --set model.params=37500000 --set devices.b.availability.trace=$trace.csv
    check "$T/out" flsgd $t compute_lost_s=$lost samples_skipped=$skip bytes_resent=150000000
done
# no epoch ends with every device down: a gone at 6 s, b down 6.25-9.5 s:
# epoch 2 closes when b is back; both gone for good: exit 1
expect 0 "$BIN" run "$D/crash.yaml" --no-db --json "${FL[@]}" --set devices.a.availability.trace=gone.csv
check "$T/out" flsgd 9.5 failures=2 samples_skipped=3
expect 1 "$BIN" run "$D/crash.yaml" --no-db "${FL[@]}" --set devices.a.availability.trace=gone.csv \
    --set devices.b.availability.trace=gone.csv
has "$T/err" "every device is down for good at t = 6 s"

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

# ZeRO stage 3 (its own step loop: gathers before forward and backward,
# reduce-scatter after) on the same machinery: the crash cuts b's step of
# 5.5-6.5 s whether the gathers overlap the compute or run between the
# phases, so the timelines above hold, overlap on and off
for ov in true false; do
    for o in wait elastic; do
        expect 0 "$BIN" run "$D/crash.yaml" --no-db --json -p deepspeed --set policies.deepspeed.stage=3 \
            --set policies.deepspeed.overlap_comm=$ov --set policies.deepspeed.on_failure=$o
        if [ $o = wait ]; then
            check "$T/out" deepspeed 13.5 failures=1 restarts=1 compute_lost_s=3.75 blocked_s=3.25 bytes_resent=8
        else
            check "$T/out" deepspeed 16.25 failures=1 restarts=1 compute_lost_s=3.75 blocked_s=2 bytes_resent=4
        fi
    done
    # the elastic join with sharded data (as DDP's above): b rejoins at the
    # checkpoint after epoch 2, 20.75 s, 12 B resent
    expect 0 "$BIN" run "$D/crash.yaml" --no-db --json -p deepspeed --set policies.deepspeed.stage=3 \
        --set policies.deepspeed.overlap_comm=$ov --set policies.deepspeed.data=shard \
        --set policies.deepspeed.on_failure=elastic --set training.epochs=3
    check "$T/out" deepspeed 20.75 restarts=1 bytes_resent=12
done

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
# the same under ZeRO stage 3
expect 1 "$BIN" run "$D/crash.yaml" --no-db -p deepspeed --set policies.deepspeed.stage=3 \
    --set devices.b.availability.trace=gone.csv
has "$T/err" "device b went down at t = 6 s and never comes back: on_failure: wait cannot resume the job (t = 8 s)"
expect 0 "$BIN" run "$D/crash.yaml" --no-db --json -p deepspeed --set policies.deepspeed.stage=3 \
    --set devices.b.availability.trace=gone.csv --set policies.deepspeed.on_failure=elastic
check "$T/out" deepspeed 16 restarts=1
# devices failing faster than an epoch: the run gives up instead of looping
expect 1 "$BIN" run "$SRC/scenarios/tiny.yaml" --no-db -p ddp --set availability.mtbf=5s \
    --set availability.mttr=1s --set policies.ddp.timeout=1s --set policies.ddp.max_restarts=20
has "$T/err" "no progress: 20 restarts"
# (a policy without an on_device hook is refused: tests/test_fail.c, as no
# built-in policy lacks one)

# --- hierarchical averaging (sites.yaml: sites x = a, b and y = c, d;
# rounds of 2 steps, 2 s; 4 s an epoch).  A member (b) or the leader of x
# (a) down at 6.25 s: its batch of 6-7 s cut (0.25 s lost, 1 sample
# skipped), x averages over the other, the WAN over one device a site:
# Ttotal 8 s.  Both down: x is skipped, 0.5 s lost, 2 samples skipped.
# 3 epochs: back at 9.5 s, each receives the model (4 B) for the round of
# 10 s with its epoch-3 samples skipped; Ttotal 12 s.  Ring and server alike.
# (On 1 Gbps links the averages take microseconds: checked to 1e-5.)
for w in ring server; do
    HS=(--set policies.hierarchical.wan=$w)
    expect 0 "$BIN" run "$D/sites.yaml" --no-db --json -p hierarchical "${HS[@]}" \
        --set devices.b.availability.trace=down.csv
    check "$T/out" hierarchical 8 failures=1 compute_lost_s=0.25 samples_skipped=1 bytes_resent=0 rounds=4
    expect 0 "$BIN" run "$D/sites.yaml" --no-db --json -p hierarchical "${HS[@]}" \
        --set devices.a.availability.trace=down.csv
    check "$T/out" hierarchical 8 failures=1 compute_lost_s=0.25 samples_skipped=1 rounds=4
    expect 0 "$BIN" run "$D/sites.yaml" --no-db --json -p hierarchical "${HS[@]}" --set training.epochs=3 \
        --set devices.a.availability.trace=down.csv --set devices.b.availability.trace=down.csv
    check "$T/out" hierarchical 12 failures=2 compute_lost_s=0.5 samples_skipped=10 bytes_resent=8 rounds=6
    # every device gone for good: exit 1 naming the time, no hang
    expect 1 "$BIN" run "$D/sites.yaml" --no-db -p hierarchical "${HS[@]}" \
        --set devices.a.availability.trace=gone.csv --set devices.b.availability.trace=gone.csv \
        --set devices.c.availability.trace=gone.csv --set devices.d.availability.trace=gone.csv
    has "$T/err" "every device is down for good at t = 6 s"
done

# --- determinism with failures on: same seed, same bytes; sweeps --jobs 1 = --jobs 2
GEO=(--set availability.mtbf=30min --set availability.mttr=5min --set training.epochs=2)
expect 0 "$BIN" run "$SRC/scenarios/geo-3sites.yaml" --no-db --json -p cadp "${GEO[@]}"
grep -v '"wall_s"' "$T/out" | sed 's/"wall_s":[^,]*,//' >"$T/d1"
expect 0 "$BIN" run "$SRC/scenarios/geo-3sites.yaml" --no-db --json -p cadp "${GEO[@]}"
grep -v '"wall_s"' "$T/out" | sed 's/"wall_s":[^,]*,//' >"$T/d2"
if cmp -s "$T/d1" "$T/d2"; then ok; else bad "same seed, different bytes with failures on"; fi
has "$T/d1" '"failures"'
# the load balancers, local SGD and the asynchronous server too (flaky.yaml:
# seeded failures, stragglers)
for i in 1 2; do
    expect 0 "$BIN" run "$D/flaky.yaml" --no-db --json -p equal_finish,dlb,lbbsp,lbb,localsgd,flsgd,asyncps --seed 7
    sed 's/"wall_s":[^,]*,//' "$T/out" >"$T/lb$i"
done
if cmp -s "$T/lb1" "$T/lb2"; then ok; else bad "load balancers: same seed, different bytes with failures on"; fi
has "$T/lb1" '"restarts"'
has "$T/lb1" '"pushes_lost"'
# ZeRO stage 3, overlap on and off, wait and elastic (flaky.yaml)
for i in 1 2; do
    : >"$T/z3_$i"
    for ov in true false; do
        for o in wait elastic; do
            expect 0 "$BIN" run "$D/flaky.yaml" --no-db --json -p deepspeed --seed 7 --set policies.deepspeed.stage=3 \
                --set policies.deepspeed.overlap_comm=$ov --set policies.deepspeed.on_failure=$o
            sed 's/"wall_s":[^,]*,//' "$T/out" >>"$T/z3_$i"
        done
    done
done
if cmp -s "$T/z3_1" "$T/z3_2"; then ok; else bad "ZeRO stage 3: same seed, different bytes with failures on"; fi
has "$T/z3_1" '"restarts"'
# hierarchical averaging: seeded failures of every device on sites.yaml
for i in 1 2; do
    expect 0 "$BIN" run "$D/sites.yaml" --no-db --json -p hierarchical --seed 7 --set training.epochs=4 \
        --set availability.mtbf=3s --set availability.mttr=1s
    sed 's/"wall_s":[^,]*,//' "$T/out" >"$T/hi$i"
done
if cmp -s "$T/hi1" "$T/hi2"; then ok; else bad "hierarchical: same seed, different bytes with failures on"; fi
has "$T/hi1" '"samples_skipped"'
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
assert len(a) == 156 and a == b, (len(a), len(b))  # 3 x 2 x 2 seeds x 13 policies (fedavg, locality, regional)
PY

# --- the loader: FILE:LINE:COL for the new keys
bad_yaml() { # bad_yaml NAME EDIT TEXT: sed EDIT on crash.yaml must be refused with TEXT
    sed "$2" "$D/crash.yaml" >"$T/$1.yaml"
    cp "$D/down.csv" "$T/"
    expect 2 "$BIN" check "$T/$1.yaml"
    has "$T/err" "$3"
}
bad_yaml both 's|{ trace: down.csv }|{ trace: down.csv, mtbf: 1h }|' "$T/both.yaml:25:"
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

e2e_done e2e_dyn
