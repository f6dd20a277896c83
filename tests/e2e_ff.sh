#!/usr/bin/env bash
# e2e_ff.sh: steady-state fast-forward (issue 16; docs/MODEL.md "Steady
# state") through the real binary.
#  - `reproduce table3 --json` is byte-identical with and without the
#    fast-forward (DPSIM_NO_FAST_FORWARD=1), apart from the fast_forward
#    statistic, which every run of the table carries;
#  - `run` prints the note, `--no-fast-forward` simulates every epoch (no
#    note, the same table), `show` prints the note again, and `rerun` of a
#    fast-forwarded run gives the same numbers;
#  - a world with noise never fast-forwards;
#  - `reproduce table3 --set` with the rings as flows: the same bytes with
#    and without the fast-forward, the overrides listed and stored, the
#    Ttotals within 1e-9 of the analytic ones; a bad --set exits 2 naming it.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/e2e_lib.sh"
# The fast_forward statistic left out (the only one DDP's and DeepSpeed's
# runs record; after C-ADP's plan statistics).
strip_ff() {
    sed -E -e 's/,"stats":\[\{"name":"fast_forward","scope":"run","a":[0-9]+,"b":[0-9]+,"value":[0-9]+\}\]//g' \
        -e 's/,\{"name":"fast_forward","scope":"run","a":[0-9]+,"b":[0-9]+,"value":[0-9]+\}//g' "$1"
}

"$BIN" reproduce table3 --no-db --json >"$T/ff.json" 2>"$T/err" || bad "reproduce: $(head -c 300 "$T/err")"
DPSIM_NO_FAST_FORWARD=1 "$BIN" reproduce table3 --no-db --json >"$T/full.json" 2>"$T/err" ||
    bad "reproduce (full): $(head -c 300 "$T/err")"
"$BIN" reproduce table3 --no-db --json --no-fast-forward >"$T/full2.json" 2>"$T/err" ||
    bad "reproduce --no-fast-forward: $(head -c 300 "$T/err")"
if cmp -s "$T/full.json" "$T/full2.json"; then ok; else bad "--no-fast-forward differs from DPSIM_NO_FAST_FORWARD=1"; fi
n=$(grep -o '"name":"fast_forward","scope":"run","a":4,"b":50,"value":47' "$T/ff.json" | wc -l)
# DDP, DeepSpeed, C-ADP, DDP with the 10 Gbit/s interconnect
if [ "$n" -eq 4 ]; then ok; else bad "table3: $n runs fast-forwarded epochs 4-50 (want 4)"; fi
if grep -q fast_forward "$T/full.json"; then bad "table3 without fast-forward has the statistic"; else ok; fi
if cmp -s <(strip_ff "$T/ff.json") "$T/full.json"; then
    ok
else
    bad "table3: fast-forwarded and full runs differ:"
    diff <(strip_ff "$T/ff.json" | tr ',' '\n') <(tr ',' '\n' <"$T/full.json") | head -20 >&2
fi

# run: the note; --no-fast-forward: the same table, no note
set_tiny=(--set training.epochs=12 --set policies.ddp.collective=analytic)
"$BIN" run "$SRC/scenarios/tiny.yaml" --policy ddp -q --db "$T/r.db" "${set_tiny[@]}" >"$T/run" 2>"$T/err" ||
    bad "run: $(head -c 300 "$T/err")"
if grep -q '^ddp: fast_forward: epochs 4-12 (they repeat epoch 3 bit for bit' "$T/run"; then ok; else
    bad "run prints no fast_forward note: $(cat "$T/run")"
fi
"$BIN" run "$SRC/scenarios/tiny.yaml" --policy ddp -q --no-db --no-fast-forward "${set_tiny[@]}" >"$T/run2" \
    2>"$T/err" || bad "run --no-fast-forward: $(head -c 300 "$T/err")"
if grep -q fast_forward "$T/run2"; then bad "--no-fast-forward still fast-forwards"; else ok; fi
if cmp -s <(grep '^ddp ' "$T/run" | sed -E 's/ +(#[0-9]+|-)$//') <(grep '^ddp ' "$T/run2" | sed -E 's/ +(#[0-9]+|-)$//'); then ok; else
    bad "run and run --no-fast-forward print different tables"
fi
"$BIN" show 1 --db "$T/r.db" >"$T/show" 2>"$T/err" || bad "show: $(head -c 300 "$T/err")"
if grep -q '^ddp: fast_forward: epochs 4-12' "$T/show"; then ok; else bad "show prints no fast_forward note"; fi
if "$BIN" rerun 1 --db "$T/r.db" >"$T/rerun" 2>&1; then ok; else bad "rerun of a fast-forwarded run: $(head -c 400 "$T/rerun")"; fi

# noise: never
"$BIN" run "$SRC/scenarios/tiny.yaml" --policy ddp --no-db --json "${set_tiny[@]}" --set devices.gpu.noise=0.05 \
    >"$T/noise.json" 2>"$T/err" || bad "run (noise): $(head -c 300 "$T/err")"
if grep -q fast_forward "$T/noise.json"; then bad "a world with noise fast-forwarded"; else ok; fi

# a link trace that ends and holds (issue 39): epochs simulated until it has
# ended, then fast-forwarded; the same bytes as simulating every epoch.  A
# looping one never ends: never.
sed -e "s|link: { up: 20Mbps, down: 20Mbps, latency: 5ms }|link: { up: 20Mbps, latency: 5ms, down_trace: $SRC/traces/step-50-100Mbps.csv }|" \
    "$SRC/scenarios/tiny.yaml" >"$T/held.yaml"
grep -q down_trace "$T/held.yaml" || bad "tiny.yaml's cpu link line changed: fix this test's sed"
for p in ddp deepspeed localsgd cadp; do
    "$BIN" run "$T/held.yaml" --policy "$p" --no-db --json "${set_tiny[@]}" >"$T/held.$p.json" 2>"$T/err" ||
        bad "run $p (held trace): $(head -c 300 "$T/err")"
    DPSIM_NO_FAST_FORWARD=1 "$BIN" run "$T/held.yaml" --policy "$p" --no-db --json "${set_tiny[@]}" \
        >"$T/heldfull.$p.json" 2>"$T/err" || bad "run $p (held trace, full): $(head -c 300 "$T/err")"
    if cmp -s <(strip_ff "$T/held.$p.json") "$T/heldfull.$p.json"; then ok; else
        bad "$p with a held trace: fast-forwarded and full runs differ"
    fi
done
for p in ddp deepspeed; do
    if grep -q '"name":"fast_forward","scope":"run","a":4,"b":12' "$T/held.$p.json"; then ok; else
        bad "$p with a trace that ended at 10 s: no fast-forward of epochs 4-12"
    fi
done
sed -e "s|link: { up: 20Mbps, down: 20Mbps, latency: 5ms }|link: { up: 20Mbps, latency: 5ms, down_trace: { file: $SRC/traces/step-50-100Mbps.csv, loop: true } }|" \
    "$SRC/scenarios/tiny.yaml" >"$T/loop.yaml"
"$BIN" run "$T/loop.yaml" --policy ddp --no-db --json "${set_tiny[@]}" >"$T/loop.json" 2>"$T/err" ||
    bad "run (looping trace): $(head -c 300 "$T/err")"
if grep -q fast_forward "$T/loop.json"; then bad "a world with a looping trace fast-forwarded"; else ok; fi

# reproduce --set: the rings as flows
flows=(--set policies.ddp.collective=flows --set policies.deepspeed.collective=flows)
"$BIN" reproduce table3 --no-db --json "${flows[@]}" >"$T/f.json" 2>"$T/err" || bad "reproduce --set: $(head -c 300 "$T/err")"
DPSIM_NO_FAST_FORWARD=1 "$BIN" reproduce table3 --no-db --json "${flows[@]}" >"$T/ffull.json" 2>"$T/err" ||
    bad "reproduce --set (full): $(head -c 300 "$T/err")"
if cmp -s <(strip_ff "$T/f.json") "$T/ffull.json"; then ok; else bad "table3 with flows: fast-forwarded and full runs differ"; fi
if python3 - "$T/f.json" "$T/ff.json" <<'PY'; then ok; else bad "table3 with flows: overrides or figures"; fi
import json, sys
f, a = (json.load(open(p)) for p in sys.argv[1:])
assert f["overrides"] == ["policies.ddp.collective=flows", "policies.deepspeed.collective=flows"], f.get("overrides")
assert "overrides" not in a
for x, y in zip(f["figures"], a["figures"]):
    assert x["figure"] == y["figure"]
    assert abs(x["simulated"] - y["simulated"]) <= 1e-9 * abs(y["simulated"]), (x, y)
PY
"$BIN" reproduce table3 --db "$T/s.db" -q "${flows[@]}" >"$T/out" 2>"$T/err" || bad "reproduce --set --db: $(head -c 300 "$T/err")"
if grep -q '^with --set policies.ddp.collective=flows, policies.deepspeed.collective=flows' "$T/out"; then ok; else
    bad "reproduce --set: the text output does not list the overrides"
fi
"$BIN" reproduce table3 --no-db --set policies.ddp.colective=flows >"$T/out" 2>"$T/err"
rc=$?
if [ "$rc" -eq 2 ] && grep -q 'colective' "$T/err"; then ok; else bad "a bad --set: exit $rc, $(head -c 300 "$T/err")"; fi

e2e_done e2e_ff
