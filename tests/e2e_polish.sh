#!/usr/bin/env bash
# e2e_polish.sh: what a new user meets, through the binary (issue 17):
# option syntax (getopt_long), the JSON shape and its numbers, the plot's
# default selection and its note, progress lines, --log, and the Chrome
# trace export checked against the trace event format's rules.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/e2e_lib.sh"
GEO=$SRC/scenarios/geo-3sites.yaml

# --- (5) options: --opt=value, --opt value, bundled short options, one parser everywhere
expect 0 "$BIN" run "$TINY" --db="$T/a.db" -qp ddp --set=training.epochs=1
has "$T/out" "stored in $T/a.db"
expect 0 "$BIN" run -qpcadp -d "$T/a.db" --set training.epochs=1 "$TINY"
has "$T/out" "cadp"
expect 0 "$BIN" runs --db="$T/a.db" --policy=cadp
has "$T/out" "cadp"
expect 0 "$BIN" show 2 --db="$T/a.db" --json
expect 0 "$BIN" check "$TINY" --set=training.epochs=3
expect 0 "$BIN" solve "$TINY" --method=alm --json
expect 2 "$BIN" run "$TINY" --bogus
has "$T/err" "unknown option '--bogus'"
expect 2 "$BIN" run "$TINY" --db
has "$T/err" "--db needs a value"
expect 2 "$BIN" run "$TINY" -x
has "$T/err" "unknown option '-x'"
expect 2 "$BIN" export --db="$T/a.db"
expect 2 "$BIN" plot compare --out="$T/x.png" --db="$T/a.db" --log
has "$T/err" "--log needs a value"

# --- (4) JSON: one shape for run and show, options an object, numbers exact
expect 0 "$BIN" run "$TINY" --db "$T/j.db" --json --set training.epochs=3 -p ddp,deepspeed,cadp
cp "$T/out" "$T/run.json"
expect 0 "$BIN" show 1 --db "$T/j.db" --json
cp "$T/out" "$T/show.json"
expect 0 "$BIN" export --csv --db "$T/j.db" --out "$T/csv"
python3 - "$T/run.json" "$T/show.json" "$T/csv/runs.csv" <<'PY' && ok || bad "JSON shape or numbers"
import csv, json, sys
run, show = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
for doc in (run, show):
    assert doc["format"] == "dpsim-runs" and doc["format_version"] == 1, doc
    assert doc["scenario"] == "tiny" and doc["dpsim_version"], doc
assert set(run) == set(show)
assert run["runs"][0] == show["runs"][0], "show --json differs from run --json for the same run"
r = run["runs"][0]
assert isinstance(r["options"], dict) and r["overrides"] == ["training.epochs=3"], r
import re
def digits(t):
    m = t.lstrip("-").split("e")[0].replace(".", "").lstrip("0")
    return len(m.rstrip("0")) if "e" in t or "." in t else len(m)
for tok in re.findall(r'(?<=[:,\[])-?[0-9][0-9.eE+-]*', open(sys.argv[1]).read()):
    short = repr(float(tok))
    assert digits(tok) <= max(15, digits(short)), ("longer than it needs", tok, short)
# every number reads back to the double stored in the database (CSV: %.17g)
rows = {row["policy"]: row for row in csv.DictReader(open(sys.argv[3]))}
for rr in run["runs"]:
    for k in ("tsend_s", "ttraining_s", "ttotal_s", "tflops", "utilization", "samples_processed", "bytes_total"):
        assert float(rows[rr["policy"]][k]) == rr[k], (rr["policy"], k, rows[rr["policy"]][k], rr[k])
PY

# --- (1) plot: the default is the latest invocation, and it says what it drew
expect 0 "$BIN" run "$TINY" --db "$T/p.db" -q -p ddp,deepspeed,cadp
expect 0 "$BIN" run "$GEO" --db "$T/p.db" -q --set training.epochs=1 -p ddp,cadp
expect 0 "$BIN" plot compare --db "$T/p.db" --out "$T/c.png"
has "$T/err" "of scenario 'geo-3sites'"
has "$T/err" "#4 (DDP), #5 (C-ADP)"
expect 0 "$BIN" plot flops --db "$T/p.db" --out "$T/f.png" --scenario tiny
has "$T/err" "#1 (DDP), #2 (DeepSpeed), #3 (C-ADP) of scenario 'tiny'"
expect 0 "$BIN" plot timeline --db "$T/p.db" --out "$T/t.png"
has "$T/err" "drawing run #5 (C-ADP)"

# rerun resolves a scenario's relative trace paths as run did, from any directory
expect 0 bash -c "cd '$T' && '$BIN' rerun 5 --db p.db"
has "$T/out" "identical"

# --- (2) progress: lines on stderr when not a terminal, none with --quiet;
# with --json too (issue 38: --json no longer turns them off without a word)
G1="--set training.epochs=1"
DPSIM_PROGRESS_EVERY=0 expect 0 "$BIN" run "$GEO" $G1 --no-db -p ddp
has "$T/err" "ddp on geo-3sites: t = "
has "$T/err" "events/s"
has "$T/err" "ETA"
# no end or ETA extrapolated from under 2% of the samples (it said an hour
# for an 8-second run of 10^6 devices)
DPSIM_PROGRESS_EVERY=0 expect 0 "$BIN" run "$TINY" --set training.epochs=5000 --no-fast-forward --no-db -p ddp
has "$T/err" "% of the samples), ETA after 2%"
hasnt "$T/err" "(0.0%), ETA"
# work redone after restarts is not progress: the line stays within the
# epoch under way (lbbsp restarting epoch 1 read 246% here)
DPSIM_PROGRESS_EVERY=0 expect 1 "$BIN" run "$SRC/scenarios/geo-failures.yaml" --no-db -p lbbsp \
    --set availability.mtbf=10h --set training.epochs=2 --set policies.lbbsp.max_restarts=25
has "$T/err" "no progress: 25 restarts"
PMAX=$(grep -o '([0-9.]*%' "$T/err" | tr -d '(%' | sort -g | tail -1)
awk -v p="${PMAX:-none}" 'BEGIN { exit !(p != "none" && p + 0 <= 50) }' && ok || bad "progress of epoch 1 of 2 read ${PMAX:-nothing}%"
DPSIM_PROGRESS_EVERY=0 expect 0 "$BIN" run "$GEO" $G1 --no-db -p ddp --quiet
hasnt "$T/err" "events/s"
DPSIM_PROGRESS_EVERY=0 expect 0 "$BIN" run "$GEO" $G1 --no-db -p ddp --json
has "$T/err" "events/s"
hasnt "$T/out" "events/s"
DPSIM_PROGRESS_EVERY=0 expect 0 "$BIN" run "$GEO" $G1 --no-db -p ddp --json -q
hasnt "$T/err" "events/s"

# --- (3) --log: off by default, categories and levels, bad specs refused
expect 0 "$BIN" run "$TINY" --no-db -p cadp
hasnt "$T/err" "[t="
expect 0 "$BIN" run "$TINY" --db "$T/l.db" -p cadp --log policy --log=solver --log store:info
has "$T/err" "policy info: cadp: epoch 2 of 2 ends"
has "$T/err" "solver info: exact on 3 devices"
has "$T/err" "store info: $T/l.db: run #1 (cadp, seed 7) stored"
expect 0 "$BIN" run "$TINY" --no-db -p ddp --log net:debug --log engine:trace
has "$T/err" "net debug: flow"
has "$T/err" "engine trace: event 1 done"
expect 0 "$BIN" run "$TINY" --no-db -p ddp --log all:warn
hasnt "$T/err" "[t="
expect 2 "$BIN" run "$TINY" --no-db --log gpu
has "$T/err" "unknown category 'gpu'"
expect 2 "$BIN" run "$TINY" --no-db --log net:loud
has "$T/err" "unknown level 'loud'"

# --- (6) export --trace: Chrome trace events, checked against the format's rules
expect 0 "$BIN" export --trace 5 --db "$T/p.db" --out "$T/trace.json"
expect 0 "$BIN" export --trace=1 --db="$T/p.db" -o "$T/trace1.json"
expect 2 "$BIN" export --trace 99 --db "$T/p.db" --out "$T/none.json"
expect 2 "$BIN" export --trace 1 --db "$T/p.db"
expect 0 "$BIN" export --trace 4 --full --db "$T/p.db" --out "$T/tracefull.json"
has "$T/tracefull.json" '"timeline":"full"'
for f in trace trace1 tracefull; do
python3 - "$T/$f.json" <<'PY' && ok || bad "trace format ($f)"
import json, sys
from collections import defaultdict
doc = json.load(open(sys.argv[1]))
meta = doc["otherData"]
assert meta["scenario"] and meta["policy"] and meta["dpsim_version"], meta
ev = doc["traceEvents"]
assert ev, "no events"
per_thread = defaultdict(list)
kinds = defaultdict(int)
names = {}
for e in ev:
    for k in ("ph", "ts", "pid", "tid"):
        assert k in e, (k, e)
    kinds[e["ph"]] += 1
    if e["ph"] == "X":
        assert e["dur"] >= 0, e
        per_thread[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
    if e["ph"] == "M" and e["name"] == "thread_name":
        names[(e["pid"], e["tid"])] = e["args"]["name"]
for key, spans in per_thread.items():
    spans.sort()
    for (a0, a1), (b0, b1) in zip(spans, spans[1:]):
        assert b0 >= a1 - 1e-6 * max(1.0, abs(a1)), ("overlap on", key, (a0, a1), (b0, b1))
    assert key in names, ("thread without a name", key)
assert kinds["X"] > 0 and kinds["C"] > 0 and kinds["M"] > 0 and kinds["i"] > 0, dict(kinds)
assert len(per_thread) == meta["devices"] or len(per_thread) == min(meta["devices"], 64), (len(per_thread), meta)
PY
done
has "$T/trace.json" '"policy":"cadp"'

# --- (7) plots as figures: --size, --xlabel/--ylabel, --from/--to, panels,
# one log tick style, sweep axes in words with rounded ticks.  A wrapper
# records the program dpsim sends to gnuplot.
GP=$(command -v gnuplot)
printf '#!/bin/sh\ntee "%s" | "%s" "$@"\n' "$T/gp.txt" "$GP" >"$T/rec.sh"
chmod +x "$T/rec.sh"
DPSIM_GNUPLOT="$T/rec.sh" expect 0 "$BIN" plot flops --db "$T/p.db" --out "$T/f2.png" --size=800x500 --ylabel "FLOP rate"
has "$T/gp.txt" "size 800,500"
has "$T/gp.txt" "set multiplot layout 2,1" # DDP's days beside C-ADP's minutes: a panel each
has "$T/gp.txt" "set ylabel 'FLOP rate'"
hasnt "$T/gp.txt" "format y '%g'"
DPSIM_GNUPLOT="$T/rec.sh" expect 0 "$BIN" plot flops --db "$T/p.db" --out "$T/f3.png" --panels=no --logx
hasnt "$T/gp.txt" "multiplot"
has "$T/gp.txt" "set format x '10^%T'"
DPSIM_GNUPLOT="$T/rec.sh" expect 0 "$BIN" plot timeline --db "$T/p.db" --out "$T/t2.svg" --from 10 --to=50 --xlabel "t"
has "$T/gp.txt" "set xrange [10:50]"
has "$T/gp.txt" "from 10.0 s to 50.0 s"
has "$T/gp.txt" "set xlabel 't'"
expect 2 "$BIN" plot timeline --db "$T/p.db" --out "$T/t3.png" --from 50 --to 10
expect 2 "$BIN" plot compare --db "$T/p.db" --out "$T/t3.png" --from 5
expect 2 "$BIN" plot compare --db "$T/p.db" --out "$T/t3.png" --size 80
expect 0 "$BIN" sweep "$TINY" --vary devices.cpu.link.down=1Mbps..100Mbps:log:5 --db "$T/sw.db" -q -j 2 -p cadp
DPSIM_GNUPLOT="$T/rec.sh" expect 0 "$BIN" plot sweep --db "$T/sw.db" --out "$T/s.png"
has "$T/gp.txt" "set xlabel 'cpu download bandwidth (Mbps) [devices.cpu.link.down]"
has "$T/gp.txt" "'3.16' 3.16227766"
hasnt "$T/gp.txt" "3.16228'"
has "$T/err" "drawing sweep #1 of scenario 'tiny'"

# --- (8) the manual page: built from the --help texts, installed by meson install
MAN=$(dirname "$BIN")/dpsim.1
if [ -s "$MAN" ]; then ok; else bad "no $MAN"; fi
MANWIDTH=200 man -l "$MAN" >"$T/man.txt" 2>/dev/null
for c in check solve run reproduce runs show rerun export plot sweep merge; do
    "$BIN" "$c" --help >"$T/h.txt"
    # every line of the command's help appears in the rendered page
    if python3 - "$T/h.txt" "$T/man.txt" <<'PY'; then ok; else bad "man page lacks 'dpsim $c --help'"; fi
import sys
man = " ".join(open(sys.argv[2]).read().split())
for line in open(sys.argv[1]):
    words = " ".join(line.split())
    if words and words not in man:
        sys.exit("missing: " + words)
PY
done
BUILD=$(dirname "$BIN")
if meson install -C "$BUILD" --no-rebuild --destdir "$T/inst" >"$T/inst.log" 2>&1; then ok; else bad "meson install: $(tail -3 "$T/inst.log")"; fi
if find "$T/inst" -path '*/man1/dpsim.1' | grep -q .; then ok; else bad "meson install did not install man1/dpsim.1"; fi

# many devices: run and show list the first 10 and each figure's min / median / max; --all lists all
"$BIN" run "$TINY" --policy cadp --set devices.gpu.count=79 --db "$T/many.db" -q >/dev/null 2>&1 || bad "run, 80 devices"
"$BIN" run "$TINY" --policy cadp --set devices.gpu.count=79 --no-db >"$T/many" 2>"$T/err" || bad "run, 80 devices: $(head -c 300 "$T/err")"
has "$T/many" "cadp per device (80 devices: the first 10, then each figure's min / median / max over all; --all lists every one):"
for w in 'gpu\[9\] ' '^  min ' '^  median ' '^  max '; do grep -q "$w" "$T/many" && ok || bad "run, 80 devices: no '$w' line"; done
grep -q 'gpu\[10\] ' "$T/many" && bad "run, 80 devices: lists an 11th device" || ok
"$BIN" run "$TINY" --policy cadp --set devices.gpu.count=79 --no-db --all >"$T/many-all" 2>&1 || bad "run --all"
[ "$(grep -c '^  gpu\[' "$T/many-all")" -eq 79 ] && ok || bad "run --all: $(grep -c '^  gpu\[' "$T/many-all") gpu rows (want 79)"
grep -q '^  median ' "$T/many-all" && bad "run --all still summarises" || ok
"$BIN" show 1 --db "$T/many.db" >"$T/show-many" 2>&1 || bad "show, 80 devices"
grep -q '^  median ' "$T/show-many" && ok || bad "show, 80 devices: no summary"
"$BIN" show 1 --db "$T/many.db" --all >"$T/show-all" 2>&1 || bad "show --all"
[ "$(grep -c '^  gpu\[' "$T/show-all")" -eq 79 ] && ok || bad "show --all lists $(grep -c '^  gpu\[' "$T/show-all") gpu rows"
"$BIN" run "$TINY" --policy cadp --set devices.gpu.count=49 --no-db >"$T/fifty" 2>&1 || bad "run, 50 devices"
grep -q '^  median ' "$T/fifty" && bad "run, 50 devices: summarised" || ok

# ==== issue 37: figures a paper could print, honest tables, messages that point at the fix
# A fake gnuplot keeps the program and writes a token file, so these checks
# read what dpsim asked gnuplot to draw (the real one drew it above).
cat >"$T/fakegp.sh" <<FAKEGP
#!/bin/sh
cat >"$T/prog.txt"
out=\$(sed -n "s/^set output '\\(.*\\)'\$/\\1/p" "$T/prog.txt" | head -1)
printf x >"\$out"
FAKEGP
chmod +x "$T/fakegp.sh"
FAKE="$T/fakegp.sh"
expect 0 "$BIN" run "$TINY" --db "$T/i37.db" -q # every policy that applies
# -- colours: every built-in policy its own colour in compare
DPSIM_GNUPLOT=$FAKE expect 0 "$BIN" plot compare --db "$T/i37.db" --out "$T/c37.png"
python3 - "$T/prog.txt" <<'PY' && ok || bad "compare: policy colours repeat"
import re, sys
cols = re.findall(r"with boxxyerror fc rgb '(#[0-9a-fA-F]{6})' title", open(sys.argv[1]).read())
assert len(cols) >= 10 and len(set(c.lower() for c in cols)) == len(cols), cols
PY
# -- rendering notes are captions on stderr, not the title; log axes read 10^N
has "$T/err" "caption: log scale"
hasnt "$T/prog.txt" "log scale: the times span"
has "$T/prog.txt" "set format y '10^%T'"
# -- flops with many runs: a panel each on one shared time axis, the canvas grows
DPSIM_GNUPLOT=$FAKE expect 0 "$BIN" plot flops --db "$T/i37.db" --out "$T/f37.png"
python3 - "$T/prog.txt" <<'PY' && ok || bad "flops: panels on a shared axis, taller canvas"
import re, sys
p = open(sys.argv[1]).read()
n = int(re.search(r"set multiplot layout (\d+),1", p).group(1))
h = int(re.search(r"size 1200,(\d+)", p).group(1))
assert n >= 10 and h >= 150 * n, (n, h)
assert p.count("set format x ''") == n - 1, "time tic labels only under the last panel"
assert len(set(re.findall(r"set xrange \[[^\]]*\]", p))) == 1, "one shared time range"
PY
# -- a figure of runs with overrides says so in its title
expect 0 "$BIN" run "$TINY" --db "$T/ov.db" -q -p ddp,cadp --set training.epochs=1
DPSIM_GNUPLOT=$FAKE expect 0 "$BIN" plot compare --db "$T/ov.db" --out "$T/ov.png"
has "$T/prog.txt" "with --set training.epochs=1"
# -- timeline: a device the policy leaves out is 'not used', not waiting
expect 0 "$BIN" run "$GEO" --db "$T/geo37.db" -q -p cadp --set training.epochs=1
DPSIM_GNUPLOT=$FAKE expect 0 "$BIN" plot timeline --db "$T/geo37.db" --out "$T/t37.png"
has "$T/prog.txt" "title 'not used'"
has "$T/err" "caption: a row per device"
# -- timeline --exact: the run simulated again, each bin's shares of activities stacked
expect 0 "$BIN" run "$TINY" --db "$T/ex37.db" -q -p ddp
DPSIM_GNUPLOT=$FAKE expect 0 "$BIN" plot timeline --db "$T/ex37.db" --out "$T/ex37.png" --exact --from 1 --to 20
has "$T/err" "re-simulating run #1"
has "$T/err" "stacks the shares of its activities"
python3 - "$T/prog.txt" <<'PY' && ok || bad "timeline --exact: stacked shares"
import re, sys
p = open(sys.argv[1]).read()
assert "set xrange [1:20]" in p, "the window"
rows = re.findall(r"^[0-9.e+-]+ (\d+) ([0-9.e+-]+) ([0-9.e+-]+) ([0-9.e+-]+) ([0-9.e+-]+)$", p, re.M)
assert rows, "no boxes"
for d, t0, t1, y1, y0 in rows:
    d, y1, y0 = int(d), float(y1), float(y0)
    assert d - 0.38 - 1e-9 <= y1 <= y0 <= d + 0.38 + 1e-9, (d, y1, y0) # inside the device's row
PY
expect 2 "$BIN" plot compare --db "$T/ex37.db" --out "$T/ex37c.png" --exact
# -- staleness: a numeric axis, not evenly spaced categories
expect 0 "$BIN" run "$GEO" --db "$T/st37.db" -q -p asyncps --set training.epochs=1
DPSIM_GNUPLOT=$FAKE expect 0 "$BIN" plot staleness --db "$T/st37.db" --out "$T/s37.png"
python3 - "$T/prog.txt" <<'PY' && ok || bad "staleness: numeric axis"
import re, sys
p = open(sys.argv[1]).read()
assert "set logscale x 2" in p, "no numeric (log) x axis"
tics = re.search(r"set xtics \('0' 1(.*)\)", p)
assert tics and "'1' 2" in tics.group(1) and "'2' 3" in tics.group(1), "ticks at staleness + 1"
PY
# -- sweep: a panel per value of the second key, coinciding series named
expect 0 "$BIN" sweep "$TINY" --vary devices.cpu.link.down=1Mbps..100Mbps:log:3 --vary devices.gpu.count=1..2 \
    --db "$T/sw37.db" -q -p ddp,deepspeed,cadp
DPSIM_GNUPLOT=$FAKE expect 0 "$BIN" plot sweep --db "$T/sw37.db" --out "$T/sw37.png"
has "$T/prog.txt" "set multiplot layout 1,2"
has "$T/prog.txt" "devices.gpu.count = 1"
has "$T/prog.txt" "DeepSpeed (identical to DDP)"
has "$T/err" "caption: a panel per value of devices.gpu.count"

# -- tables: columns sized to their content (equal_finish is 12 characters)
expect 0 "$BIN" run "$TINY" --no-db -q
python3 - "$T/out" <<'PY' && ok || bad "run table: columns shift"
import sys
rows = [l.rstrip("\n") for l in open(sys.argv[1]) if l.split() and l.split()[0] in
        ("policy", "ddp", "equal_finish", "cadp", "asyncps")]
assert len(rows) == 5 and len({len(r) for r in rows}) == 1, rows
PY
# -- runs: --last, --sweep, the sweep and what a run changed, one number style
expect 0 "$BIN" runs --db "$T/ov.db" --last 1
[ "$(grep -c '^ *[0-9]' "$T/out")" -eq 1 ] && ok || bad "runs --last 1: $(cat "$T/out")"
has "$T/out" "training.epochs=1"
hasnt "$T/out" "e+0"
expect 0 "$BIN" runs --db "$T/sw37.db" --sweep 1 --policy cadp
[ "$(grep -c '^ *[0-9]' "$T/out")" -eq 6 ] && ok || bad "runs --sweep 1: $(cat "$T/out")"
has "$T/out" "devices.cpu.link.down="
has "$T/out" " #1 "
# -- export --csv says what it wrote
expect 0 "$BIN" export --csv --db "$T/ov.db" --out "$T/csv37/"
has "$T/out" "wrote $(ls "$T/csv37" | wc -l) tables to $T/csv37/:"
hasnt "$T/out" "//"
# -- export --trace: epochs counted from 1; the 64-device limit said; --devices
expect 0 "$BIN" export --trace 1 --db "$T/ov.db" --out "$T/tr37.json"
has "$T/tr37.json" '"epoch 1 ends"'
hasnt "$T/tr37.json" '"epoch 2 ends"'
expect 0 "$BIN" run "$TINY" --db "$T/big.db" -q -p cadp --set devices.gpu.count=79
expect 0 "$BIN" export --trace 1 --db "$T/big.db" --out "$T/big.json"
has "$T/err" "the stored timeline holds the first 64"
has "$T/big.json" '"note":"the stored timeline holds the first 64 of 80 devices'
expect 0 "$BIN" export --trace 1 --db "$T/big.db" --out "$T/big2.json" --devices '0..1,gpu[5]'
python3 - "$T/big2.json" <<'PY' && ok || bad "export --trace --devices"
import json, sys
d = json.load(open(sys.argv[1]))
tids = {e["tid"] for e in d["traceEvents"] if e["ph"] == "X"}
assert tids and d["otherData"]["devices_written"] == len(tids) == 3, (tids, d["otherData"])
PY
expect 2 "$BIN" export --trace 1 --db "$T/big.db" --out "$T/big3.json" --devices 70
has "$T/err" "--full"
expect 0 "$BIN" export --trace 1 --db "$T/big.db" --out "$T/big3.json" --devices 70 --full
# -- the note on policies left out: only when asked (--policy all)
expect 0 "$BIN" run "$TINY" --no-db -q
hasnt "$T/err" "hierarchical left out"
expect 0 "$BIN" run "$TINY" --no-db -q --policy all
has "$T/err" "hierarchical left out"
# -- plot batches and links: the latest run that has what they draw
DPSIM_GNUPLOT=$FAKE expect 0 "$BIN" plot batches --db "$T/i37.db" --out "$T/b37.png"
has "$T/err" "the latest run with batch statistics"
cat >"$T/outage.yaml" <<'YAML'
name: outage
model: { params: 250000, flops_per_sample: 1e6 }
dataset: { samples: 8, sample_bytes: 1B }
training: { epochs: 1 }
server: { nic: { up: 1Gbps, down: 1Gbps } }
devices:
  - { name: a, kind: gpu, memory: 1GB, batch: 4, batch_time: 1s,
      link: { up: 8Mbps, down: 8Mbps, outages: [[2s, 2.5s]] } }
  - { name: b, kind: gpu, memory: 1GB, batch: 4, batch_time: 1s, link: { up: 8Mbps, down: 8Mbps } }
YAML
expect 0 "$BIN" run "$T/outage.yaml" --db "$T/o37.db" -q -p ddp
expect 0 "$BIN" run "$TINY" --db "$T/o37.db" -q -p cadp
DPSIM_GNUPLOT=$FAKE expect 0 "$BIN" plot links --db "$T/o37.db" --out "$T/l37.png"
has "$T/err" "drawing run #1"
# -- progress: which policy of how many, with an ETA
DPSIM_PROGRESS_EVERY=0 expect 0 "$BIN" run "$GEO" --set training.epochs=1 --no-db -p ddp,cadp
has "$T/err" "[1/2] ddp on geo-3sites: t = "
has "$T/err" "ETA"

# -- messages
expect 2 "$BIN" run "$TINY" --no-db --set devices.cpu.link.up=100mbps
has "$T/err" "did you mean 'Mbps'?"
expect 2 "$BIN" run "$TINY" --no-db --policy DDP
has "$T/err" "did you mean 'ddp'?"
for v in 1...3 1-3; do
    expect 2 "$BIN" sweep "$TINY" --vary devices.gpu.count=$v --db "$T/v.db"
    has "$T/err" "1..3"
    hasnt "$T/err" "override"
done
expect 2 "$BIN" sweep "$TINY" --vary devices.gpu.count=abc --db "$T/v.db"
[ "$(grep -o 'abc' "$T/err" | wc -l)" -le 2 ] && ok || bad "the value repeated: $(cat "$T/err")"
expect 2 "$BIN" run "$TINY" --polcy ddp
has "$T/err" "did you mean '--policy'?"
expect 2 "$BIN" plot comapre --out "$T/x.png"
has "$T/err" "did you mean 'compare'?"
expect 2 "$BIN" plot sweep --metric ttotal --out "$T/x.png" --db "$T/sw37.db"
has "$T/err" "did you mean 'ttotal_s'?"
expect 2 "$BIN" run "$SRC/scenarios/tiny.yml" --no-db
has "$T/err" "did you mean '$SRC/scenarios/tiny.yaml'?"
expect 2 "$BIN" run builtin:paper --no-db
has "$T/err" "builtin:paper-testbed"
expect 2 "$BIN" run "$TINY" --no-db --set devices.cpu.link.up= 20Mbps
has "$T/err" "quoted"
expect 2 "$BIN" runs --db "$T/no-such.db"
has "$T/err" "no such results database"
expect 2 "$BIN" plot compare --out "$T/x.png" --db "$T/i37.dv"
has "$T/err" "did you mean '$T/i37.db'?"
expect 0 "$BIN" check "$TINY" --set devices.gpu.link.latency=3
has "$T/out" "devices.gpu.link.latency: 3 -> 3 s (no unit)"
# -- the manual page: ENVIRONMENT lists every DPSIM_* variable the sources read; EXAMPLES
has "$T/man.txt" "ENVIRONMENT"
has "$T/man.txt" "EXAMPLES"
for v in $(grep -rhoE 'DPSIM_[A-Z_]+' "$SRC/sim" "$SRC/plots" "$SRC/solver" | sort -u); do
    case $v in DPSIM_VERSION | DPSIM_HAVE_MPI | DPSIM_TEST_*) continue ;; esac # compile-time or test-only
    has "$T/man.txt" "$v"
done

e2e_done e2e_polish
