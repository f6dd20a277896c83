#!/usr/bin/env bash
# e2e_lb.sh: the load-balancing policies end to end: scenarios/stragglers.yaml
# (the adaptive policies beat equal_finish once a device slows down, and
# shrink its batch; equal_finish never does), their statistics in `run`,
# `show` and --json, the FILE:LINE:COL refusal of a global batch that does
# not fit, `plot compare` on the scenario, and `reproduce table3
# --with-related` (the default output unchanged before the added section).
# Needs $DPSIM_BIN and $DPSIM_SRC.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/e2e_lib.sh"

# --- stragglers: every load balancer, JSON
expect 0 "$BIN" run "$SRC/scenarios/stragglers.yaml" --policy equal_finish,dlb,lbbsp,lbb --db "$T/s.db" --json
cp "$T/out" "$T/s.json"
python3 - "$T/s.json" <<'PY' && ok || bad "stragglers: adaptive policies re-balance, equal_finish does not"
import json, sys
doc = json.load(open(sys.argv[1]))
runs = doc["runs"] if isinstance(doc, dict) and "runs" in doc else doc
by = {r["policy"]: r for r in runs}
def batch(r, dev, ep):
    for s in r["stats"]:
        if s["name"] == "batch_mean" and s["scope"] == "device_epoch" and s["a"] == dev and s["b"] == ep:
            return s["value"]
    raise KeyError((r["policy"], dev, ep))
ef = by["equal_finish"]
# device 1 is the straggler (half speed from t = 120 s)
assert batch(ef, 1, 1) == batch(ef, 1, 6), "equal_finish adapted"
for p in ("dlb", "lbbsp", "lbb"):
    r = by[p]
    assert batch(r, 1, 6) < 0.7 * batch(ef, 1, 6), (p, batch(r, 1, 6))
    assert r["ttotal_s"] < ef["ttotal_s"], p
    names = {s["name"] for s in r["stats"]}
    assert {"batch_mean", "batch_min", "batch_max", "wait_s", "rebalances"} <= names, names
PY
# --- the statistics are shown again by `show`
expect 0 "$BIN" show 3 --db "$T/s.db"
has "$T/out" "lbbsp statistics"
has "$T/out" "batch_mean"
has "$T/out" "wait_s"
# --- a global batch that cannot fit: refused with the key's position
cat >"$T/bad.yaml" <<'Y'
name: bad
model: { name: m, params: 250000, flops_per_sample: 1.0e6, activation_bytes_per_sample: 100MB }
dataset: { name: d, samples: 40, sample_bytes: 10000 }
training: { epochs: 1 }
devices:
  - { name: a, kind: gpu, memory: 1GiB, batch: 10, batch_time: 1s, link: { up: 8Mbps, down: 8Mbps } }
policies:
  lbb: { global_batch: 11 }
Y
expect 2 "$BIN" run "$T/bad.yaml" --policy lbb --no-db
has "$T/err" "bad.yaml:8:24: policies.lbb.global_batch"
# --- plot compare on the scenario
if command -v gnuplot >/dev/null; then
    expect 0 "$BIN" plot compare --db "$T/s.db" --scenario stragglers -o "$T/c.png"
    [ -s "$T/c.png" ] && ok || bad "compare plot empty"
fi
# --- plot batches: one load-balancing run; another policy's run is refused
if command -v gnuplot >/dev/null; then
    expect 0 "$BIN" plot batches --db "$T/s.db" --policy lbbsp -o "$T/b.png"
    [ -s "$T/b.png" ] && ok || bad "batches plot empty"
    "$BIN" run "$SRC/scenarios/tiny.yaml" --policy ddp --db "$T/s.db" -q >/dev/null
    expect 2 "$BIN" plot batches --db "$T/s.db" --policy ddp -o "$T/b2.png" # a run without batch statistics, asked for
    has "$T/err" "no batch statistics"
fi
# --- reproduce table3 --with-related: the default output, then the section
expect 0 "$BIN" reproduce table3 --no-db
grep -v "host time" "$T/out" >"$T/t3"
expect 0 "$BIN" reproduce table3 --no-db --with-related
grep -v "host time" "$T/out" >"$T/t3r"
head -n "$(wc -l <"$T/t3")" "$T/t3r" | cmp -s - "$T/t3" && ok || bad "--with-related changed the default output"
has "$T/t3r" "Beyond the paper"
for p in equal_finish dlb lbbsp lbb; do has "$T/t3r" "$p "; done

e2e_done e2e_lb
