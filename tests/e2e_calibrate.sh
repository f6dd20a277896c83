#!/usr/bin/env bash
# e2e_calibrate.sh: `dpsim calibrate` end to end on tests' tiny scenario:
# help, exit 2 with a message for bad input, progress on stderr and --quiet,
# the fit stored in the database, the calibrated scenario written and
# loadable.  Needs $DPSIM_BIN (the binary) and $DPSIM_SRC (the source root).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/e2e_lib.sh"

FIT=(--fit devices.cpu.link.down=5Mbps..200Mbps:log --fit devices.gpu.batch_time=5ms..100ms)
TGT=(--target ddp.tsend_s=0.48067567567567565 --target cadp.ttraining_s=1.137)

# --- help
expect 0 "$BIN" calibrate --help
has "$T/out" "usage: dpsim calibrate"
expect 0 "$BIN" --help
has "$T/out" "calibrate"

# --- bad input: exit 2, a message naming the culprit
expect 2 "$BIN" calibrate "$TINY" "${TGT[@]}"
has "$T/err" "at least one --fit"
expect 2 "$BIN" calibrate "$TINY" --no-db --fit devices.cpu.link.dwn=5Mbps..200Mbps "${TGT[@]}"
has "$T/err" "dwn"
expect 2 "$BIN" calibrate "$TINY" --no-db --fit devices.cpu.link.down=200Mbps..5Mbps "${TGT[@]}"
has "$T/err" "low bound"
expect 2 "$BIN" calibrate "$TINY" --no-db "${FIT[@]}" --target fsdp.tsend_s=1
has "$T/err" "unknown policy 'fsdp'"
expect 2 "$BIN" calibrate "$TINY" --no-db "${FIT[@]}" --target ddp.speed=1
has "$T/err" "unknown metric 'speed'"
expect 2 "$BIN" calibrate "$TINY" --no-db "${FIT[@]}" "${TGT[@]}" --starts 0
expect 2 "$BIN" calibrate "$TINY" --no-db "${FIT[@]}" "${TGT[@]}" --frobnicate

# --- a fit: progress on stderr, result on stdout, stored, written
expect 0 "$BIN" calibrate "$TINY" --db "$T/c.db" "${FIT[@]}" "${TGT[@]}" --out "$T/cal.yaml"
has "$T/err" "calibrate: start 1/4"
has "$T/out" "37Mbps"
has "$T/out" "33ms"
has "$T/out" "stored as calibration #1"
has "$T/out" "wrote the calibrated scenario"
n=$(sqlite3 "$T/c.db" "SELECT count(*) FROM calibrations")
[ "$n" = 1 ] && ok || bad "calibrations rows: $n"
v=$(sqlite3 "$T/c.db" "SELECT json_extract(result_json, '\$.params[0].text') FROM calibrations")
[ "$v" = 37Mbps ] && ok || bad "stored value: $v"
expect 0 "$BIN" run "$T/cal.yaml" --no-db --policy ddp -q
has "$T/out" "0.48"
has "$T/cal.yaml" "# (fit) dpsim calibrate"
# --quiet: nothing on stderr
expect 0 "$BIN" calibrate "$TINY" --no-db -q "${FIT[@]}" "${TGT[@]}"
[ ! -s "$T/err" ] && ok || bad "--quiet printed: $(head -c 200 "$T/err")"
# deterministic: the same fit twice gives the same text
"$BIN" calibrate "$TINY" --no-db -q "${FIT[@]}" "${TGT[@]}" | grep -v ' in [0-9.]* s$' >"$T/a"
"$BIN" calibrate "$TINY" --no-db -q "${FIT[@]}" "${TGT[@]}" | grep -v ' in [0-9.]* s$' >"$T/b"
cmp -s "$T/a" "$T/b" && ok || bad "two fits differ"
# AT BOUND: an unreachable Tsend
expect 0 "$BIN" calibrate "$TINY" --no-db -q --fit devices.cpu.link.down=5Mbps..50Mbps:log --target ddp.tsend_s=0.2
has "$T/out" "AT BOUND (high)"
# the shared option syntax (getopt_long): --opt=value, -fVALUE, bundled -q
expect 0 "$BIN" calibrate "$TINY" --no-db -q --fit=devices.cpu.link.down=5Mbps..50Mbps:log -tddp.tsend_s=0.2 \
    --set=training.epochs=1
has "$T/out" "AT BOUND (high)"
expect 2 "$BIN" calibrate "$TINY" --no-db --fits=x=1..2 --target=ddp.tsend_s=1
has "$T/err" "unknown option '--fits=x=1..2'"

# --- accuracy (statistical efficiency): learning.efficiency fitted to measured
# accuracies of runs, residuals, band, a prediction's regime; bad input exit 2
ACC="$T/acc.yaml"
cp "$TINY" "$ACC"
cat >>"$ACC" <<'YAML'
learning:
  efficiency:
    reference_batch: 16
    noise_scale: 100
    drift: 0.01
    curve: [[0, 0.1], [25, 0.5], [50, 0.7]]
YAML
expect 0 "$BIN" calibrate "$ACC" --accuracy cadp@1=0.4 --accuracy cadp@2=0.6 --accuracy ddp@2=55% \
    --accuracy ddp@1=0.35 --accuracy-fit noise_scale,curve --predict deepspeed
has "$T/out" "accuracy fit on tiny"
has "$T/out" "cadp@2=0.6"
has "$T/out" "error band: +-"
has "$T/out" "prediction deepspeed"
has "$T/out" "interpolation"
"$BIN" calibrate "$ACC" --accuracy cadp@1=0.4 --accuracy cadp@2=0.6 --predict ddp >"$T/a"
"$BIN" calibrate "$ACC" --accuracy cadp@1=0.4 --accuracy cadp@2=0.6 --predict ddp >"$T/b"
cmp -s "$T/a" "$T/b" && ok || bad "two accuracy fits differ"
# a run with learning.efficiency alone: accuracy by the model, every policy
# (asyncps's pushes at their staleness), the same bytes twice
expect 0 "$BIN" run "$ACC" --no-db --policy ddp,asyncps,localsgd,flsgd --json
python3 - "$T/out" <<'PY' && ok || bad "efficiency-only learning results"
import json, sys
o = json.load(open(sys.argv[1]))
for r in o["runs"]:
    l = r["learning"]
    assert l["source"] == "efficiency", l
    acc = [e["test_acc"] for e in l["evaluations"]]
    assert len(acc) == 2 and all(0.1 < a < 0.8 for a in acc), (r["policy"], acc)
PY
cp "$T/out" "$T/run1"
"$BIN" run "$ACC" --no-db --policy ddp,asyncps,localsgd,flsgd --json >"$T/run2" 2>/dev/null
cmp -s "$T/run1" "$T/run2" && ok || bad "two efficiency runs differ"
expect 2 "$BIN" calibrate "$TINY" --accuracy cadp@1=0.4
has "$T/err" "which the scenario lacks"
expect 2 "$BIN" calibrate "$ACC" --accuracy cadp@one=0.4
has "$T/err" "--accuracy 'cadp@one=0.4'"
expect 2 "$BIN" calibrate "$ACC" --accuracy cadp@1=0.4:0
has "$T/err" "weight > 0"
expect 2 "$BIN" calibrate "$ACC" --accuracy fsdp@1=0.4
has "$T/err" "fsdp"
expect 0 "$BIN" calibrate "$ACC" --accuracy localsgd@1=0.4 --accuracy asyncps@2=0.5
has "$T/out" "asyncps@2=0.5"
expect 2 "$BIN" calibrate "$ACC" --accuracy cadp@9=0.4
has "$T/err" "does not reach epoch 9"
expect 2 "$BIN" calibrate "$ACC" --accuracy cadp@1=0.4 --accuracy-fit drfit
has "$T/err" "--accuracy-fit 'drfit'"
expect 2 "$BIN" calibrate "$ACC" --predict ddp
has "$T/err" "want at least one --accuracy"
expect 2 "$BIN" calibrate "$ACC" --accuracy cadp@1=0.4 "${FIT[@]}"
has "$T/err" "drop --fit"

e2e_done e2e_calibrate
