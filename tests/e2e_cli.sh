#!/usr/bin/env bash
# e2e_cli.sh: the dpsim binary end to end: help, exit codes, check, solve,
# run (text, JSON, database), runs/show/rerun/export, reproduce table3.
# Needs $DPSIM_BIN (the binary) and $DPSIM_SRC (the source root).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/e2e_lib.sh"

# --- help and usage
expect 0 "$BIN" --help
has "$T/out" "reproduce"
expect 2 "$BIN"
expect 2 "$BIN" runn
has "$T/err" "did you mean 'run'"
for c in check solve run reproduce runs show rerun export plot sweep merge; do
    expect 0 "$BIN" "$c" --help
    has "$T/out" "usage: dpsim $c"
done
expect 0 "$BIN" --version

# --- check
expect 0 "$BIN" check "$SRC/scenarios/tiny.yaml"
has "$T/out" "total"
expect 0 "$BIN" check builtin:paper-testbed
expect 2 "$BIN" check "$T/missing.yaml"
expect 2 "$BIN" check "$T"
printf 'name: x\nmodel: { name: m, params: 10, flops_per_sample: 1 }\ndataset: { name: d, samples: 10, sample_bytes: 1 }\ntraining: { epochs: 1 }\ndevices:\n  - { name: a, kind: gpu, memory: 1GiB, batch: 1, batch_time: 1s,\n      link: { up: 100Mbs, down: 1Mbps, latency: 1ms } }\n' >"$T/bad.yaml"
expect 2 "$BIN" check "$T/bad.yaml"
has "$T/err" "bad.yaml:7:"
has "$T/err" "100Mbs"
expect 2 "$BIN" check "$SRC/scenarios/tiny.yaml" --set devices.nope.count=3
has "$T/err" "nope"
expect 2 "$BIN" check "$SRC/scenarios/tiny.yaml" --bogus

# --- solve
expect 0 "$BIN" solve "$SRC/scenarios/paper-testbed.yaml" --json
python3 - "$T/out" <<'PY' && ok || bad "solve --json allocation"
import json, sys
o = json.load(open(sys.argv[1]))
assert o["method"] == "exact" and sum(o["allocation"]) == 100000, o
assert o["objective_s"] >= o["lower_bound_s"] > 0
PY
expect 0 "$BIN" solve "$SRC/scenarios/tiny.yaml" --method alm
has "$T/out" "objective"
expect 2 "$BIN" solve "$SRC/scenarios/tiny.yaml" --method simplex

# --- run: determinism of --json, database, show, rerun, export
expect 0 "$BIN" run "$SRC/scenarios/tiny.yaml" --no-db --json
cp "$T/out" "$T/a.json"
expect 0 "$BIN" run "$SRC/scenarios/tiny.yaml" --no-db --json
if cmp -s "$T/out" "$T/a.json"; then ok; else bad "--json differs between two runs"; fi
python3 - "$T/a.json" <<'PY' && ok || bad "run --json fields"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["format"] == "dpsim-runs" and doc["scenario"] == "tiny" and doc["dpsim_version"], doc.keys()
runs = doc["runs"]
# every registered policy, the paper's three first (more may follow)
assert [r["policy"] for r in runs][:3] == ["ddp", "deepspeed", "cadp"], runs
assert "hierarchical" not in [r["policy"] for r in runs]  # tiny has no sites: left out
for r in runs:
    for k in ("tsend_s", "ttraining_s", "ttotal_s", "tflops", "utilization", "devices"):
        assert k in r, k
    assert abs(r["ttotal_s"] - r["tsend_s"] - r["ttraining_s"]) < 1e-9 * r["ttotal_s"]
    assert isinstance(r["options"], dict), r["options"]
PY
DB="$T/r.db"
expect 0 "$BIN" run "$SRC/scenarios/tiny.yaml" --db "$DB" --policy cadp,ddp --set training.epochs=3
has "$T/out" "stored in"
expect 0 "$BIN" runs --db "$DB"
has "$T/out" "cadp"
expect 0 "$BIN" show 1 --db "$DB"
has "$T/out" "training.epochs=3"
expect 0 "$BIN" show 1 --db "$DB" --json
expect 0 "$BIN" rerun 1 --db "$DB"
has "$T/out" "identical"
expect 0 "$BIN" rerun 2 --db "$DB"
expect 2 "$BIN" show 99 --db "$DB"
expect 0 "$BIN" export --csv --db "$DB" --out "$T/csv"
for t in runs run_devices run_epochs scenarios; do
    if [ -s "$T/csv/$t.csv" ]; then ok; else bad "export: $t.csv missing"; fi
done
# rerun anywhere: a run whose scenario names traces (geo-3sites.yaml) keeps
# their contents, so it re-runs identically from another directory, after a
# trace changed and after it was deleted, and says when the disk differs.
mkdir -p "$T/proj/scenarios" "$T/proj/traces" "$T/elsewhere"
cp "$SRC/scenarios/geo-3sites.yaml" "$T/proj/scenarios/"
cp "$SRC/traces/"*.csv "$T/proj/traces/"
GDB="$T/geo.db"
expect 0 bash -c "cd '$T/proj' && '$BIN' run scenarios/geo-3sites.yaml --db '$GDB' --policy cadp,ddp"
if [ "$(sqlite3 "$GDB" 'SELECT count(*) FROM run_files WHERE run_id = 1')" -ge 1 ]; then ok; else bad "run 1 kept no trace files"; fi
expect 0 "$BIN" show 1 --db "$GDB"
has "$T/out" "trace kept: ../traces/verizon-lte-down-1s.csv"
for id in 1 2; do
    expect 0 bash -c "cd '$T/elsewhere' && '$BIN' rerun $id --db '$GDB'"
    has "$T/out" "identical"
    if grep -q "using the copy" "$T/out"; then bad "rerun $id: a note although the traces are unchanged"; else ok; fi
done
echo "600,1" >>"$T/proj/traces/verizon-lte-down-1s.csv"
expect 0 bash -c "cd / && '$BIN' rerun 1 --db '$GDB'"
has "$T/out" "identical"
has "$T/out" "verizon-lte-down-1s.csv"
has "$T/out" "has changed since the run"
rm "$T/proj/traces/verizon-lte-down-1s.csv"
expect 0 bash -c "cd '$T/elsewhere' && '$BIN' rerun 2 --db '$GDB'"
has "$T/out" "identical"
has "$T/out" "no longer readable"
# a merged database keeps the runs' trace contents too (dpsim merge copies
# blobs and run_files), so its runs re-run anywhere as well
expect 0 "$BIN" merge "$T/merged.db" "$GDB"
expect 0 bash -c "cd '$T/elsewhere' && '$BIN' rerun 2 --db '$T/merged.db'"
has "$T/out" "identical"
has "$T/out" "no longer readable"
# a fresh run of the changed scenario now fails (the trace is gone), the
# stored one still re-runs
expect 2 "$BIN" run "$T/proj/scenarios/geo-3sites.yaml" --no-db --policy cadp
has "$T/err" "trace file not found"
# a failed run leaves the database as it was
cp "$DB" "$T/before.db"
expect 2 "$BIN" run "$SRC/scenarios/tiny.yaml" --db "$DB" --set training.epochs=0
expect 0 "$BIN" runs --db "$DB"
if [ "$(grep -c '^ *[0-9]' "$T/out")" -eq 2 ]; then ok; else bad "runs after a failed run: $(cat "$T/out")"; fi
# a file that is not a database: exit 1, file untouched
echo "not a database" >"$T/not.db"
expect 1 "$BIN" run "$SRC/scenarios/tiny.yaml" --db "$T/not.db"
has "$T/err" "not.db"
if [ "$(cat "$T/not.db")" = "not a database" ]; then ok; else bad "not.db was modified"; fi
expect 2 "$BIN" run "$SRC/scenarios/tiny.yaml" --policy dpp --no-db
has "$T/err" "dpp"
expect 2 "$BIN" run "$SRC/scenarios/tiny.yaml" --seed -1 --no-db

# --- reproduce table3: calibrated figures within 2%, C-ADP ahead
expect 0 "$BIN" reproduce table3 --no-db --json
python3 - "$T/out" <<'PY' && ok || bad "table3 targets"
import json, sys
o = json.load(open(sys.argv[1]))
figs = {f["figure"]: f for f in o["figures"]}
for f in figs.values():
    if f["role"] == "calibration target":
        r = f["simulated"] / f["paper"]
        assert 0.98 <= r <= 1.02, (f, r)
ddp, ds, cadp = o["runs"][0], o["runs"][1], o["runs"][2]
for k in ("tsend_s", "ttraining_s"):
    assert cadp[k] < ddp[k] and cadp[k] < ds[k], k
assert cadp["tflops"] > ddp["tflops"] and cadp["tflops"] > ds["tflops"]
PY
expect 2 "$BIN" reproduce table4

# --- issue 11 item 5: a constant next to a trace is refused, naming both keys
expect 2 "$BIN" check "$SRC/scenarios/geo-3sites.yaml" --set devices.laptop.link.down=1Mbps
has "$T/err" "devices.laptop.link.down: given together with 'down_trace' ("
has "$T/err" "geo-3sites.yaml:"
sed -e "s|\\.\\./traces/|$SRC/traces/|g" \
    -e 's|bandwidth: 1Gbps, latency: 40ms }|bandwidth: 1Gbps, latency: 40ms, trace: step.csv }|' \
    "$SRC/scenarios/geo-3sites.yaml" >"$T/wan-both.yaml"
cp "$SRC/traces/step-50-100Mbps.csv" "$T/step.csv"
expect 2 "$BIN" check "$T/wan-both.yaml"
has "$T/err" "wan-both.yaml:29:37: wan.eu-us.bandwidth: given together with 'trace' ($T/wan-both.yaml:29:66)"
has "$T/err" "wan.eu-us.bandwidth: given together with 'trace' ("

# --- issue 11: planned vs simulated, side by side
expect 0 "$BIN" run "$SRC/scenarios/tiny.yaml" --no-db -q --policy cadp
has "$T/out" "cadp: planned Ttotal "
has "$T/out" " s vs simulated "
expect 0 "$BIN" run "$SRC/scenarios/tiny.yaml" --no-db -q --policy ddp
if grep -q "planned Ttotal" "$T/out"; then bad "ddp has no plan"; else ok; fi

e2e_done e2e_cli
