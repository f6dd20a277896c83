#!/usr/bin/env bash
# e2e_runaway.sh: issue 38's runaways and silent results, through the real
# binary (inputs in tests/regress/issue38/, deterministic faults only).
#  - a load balancer whose devices' epoch shares pass 2^31 samples ends;
#  - straggler episodes that overlap, or meet a device back after 10^9 s
#    down, end in well under a second;
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/e2e_lib.sh"
R=$SRC/tests/regress/issue38
E2E_TIMEOUT=60 # expect: at most 60 s per command (a runaway fails here)

# --- shares past 2^31 samples: every balancer runs its 2 x 10 iterations
expect 0 "$BIN" run "$R/lb-share-2e31.yaml" --no-db --json -p equal_finish,dlb,lbbsp,lbb
python3 - "$T/out" <<'PY' && ok || bad "lb-share-2e31: $(head -c 300 "$T/out")"
import json, sys
runs = json.load(open(sys.argv[1]))["runs"]
assert len(runs) == 4, len(runs)
for r in runs:
    assert r["samples_processed"] == 2 * 10**10, r["policy"]
    assert sum(d["samples"] for d in r["devices"]) == 10**10, r["policy"]
    assert max(d["samples"] for d in r["devices"]) > 2**31, r["policy"]
PY

# --- straggler episodes: overlapping ones (slow all the time), and a device
# whose next batch starts 10^9 s later; every policy, straggle_s >= 0
for f in straggle-overlap straggle-idle; do
    expect 0 "$f" -- "$BIN" run "$R/$f.yaml" --no-db --json
    python3 - "$T/out" "$f" <<'PY' && ok || bad "$f: $(head -c 300 "$T/out")"
import json, sys
runs = json.load(open(sys.argv[1]))["runs"]
assert len(runs) >= 9, len(runs)
for r in runs:
    st = [s["value"] for s in r["stats"] if s["name"] == "straggle_s"]
    assert st and st[0] >= 0, (r["policy"], st)
    if sys.argv[2] == "straggle-overlap":  # slow (x2) all the time after the first minutes
        assert st[0] > 0, r["policy"]
    elif r["policy"] == "ddp":  # waits for the CPU, back at 10^9 s
        assert r["ttotal_s"] > 1e9, r["ttotal_s"]
PY
done

e2e_done e2e_runaway
