#!/usr/bin/env bash
# bench_cadp_simulate.sh: C-ADP Ttotal with solver exact vs simulate on the
# shipped scenarios and on a 1,000-device geo-3sites (200 a100 + 300
# rtx3090 + 499 xeon16 + the laptop, 1,000,000 samples, 2 epochs), as a
# markdown table for the README.  Ttotal is deterministic (the run's seed);
# wall times are medians of $RUNS runs (default 3).
# Usage: tests/bench_cadp_simulate.sh [path/to/dpsim]
set -euo pipefail
BIN=${1:-${DPSIM_BIN:-build/dpsim}}
SRC=${DPSIM_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
RUNS=${RUNS:-3}
BIG=(--set devices.a100.count=200 --set devices.rtx3090.count=300 --set devices.xeon16.count=499
     --set dataset.samples=1000000 --set training.epochs=2)
row() { # row LABEL SCENARIO [--set ...]
    local label=$1 sc=$2
    shift 2
    python3 - "$BIN" "$SRC/scenarios/$sc.yaml" "$label" "$RUNS" "$@" <<'PY'
import json, subprocess, sys, time, statistics
bin_, sc, label, runs, extra = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5:]
out = {}
for sv in ("exact", "simulate"):
    walls = []
    for _ in range(runs):
        t0 = time.monotonic()
        p = subprocess.run([bin_, "run", sc, "--no-db", "--json", "--policy", "cadp",
                            "--set", "policies.cadp.solver=" + sv] + extra,
                           check=True, capture_output=True, text=True)
        walls.append(time.monotonic() - t0)
    r = json.loads(p.stdout)["runs"][0]
    st = {x["name"]: x["value"] for x in r["stats"]}
    out[sv] = (r["ttotal_s"], statistics.median(walls), st)
e, s = out["exact"], out["simulate"]
print("| %s | %d | %.2f | %.2f | %.2f | %+.1f%% | %d | %.2f | %.2f |" % (
    label, len(r["devices"]), e[2]["plan.objective_s"], e[0], s[0], 100 * (s[0] - e[0]) / e[0],
    s[2]["plan.simulations"], e[1], s[1]))
PY
}
echo "| scenario | devices | planned (s) | exact Ttotal (s) | simulate Ttotal (s) | change | simulations | exact wall (s) | simulate wall (s) |"
echo "|---|---|---|---|---|---|---|---|---|"
row tiny tiny
row geo-3sites geo-3sites
row stragglers stragglers
row paper-testbed paper-testbed
row geo-failures geo-failures
row "geo-3sites x 1,000 devices" geo-3sites "${BIG[@]}"
