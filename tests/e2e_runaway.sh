#!/usr/bin/env bash
# e2e_runaway.sh: issue 38's runaways and silent results, through the real
# binary (inputs in tests/regress/issue38/, deterministic faults only).
#  - a load balancer whose devices' epoch shares pass 2^31 samples ends;
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

e2e_done e2e_runaway
