#!/usr/bin/env bash
# e2e_fidelity.sh: issue 11's agreement checks through the binary.
#  - C-ADP solver: simulate never simulates worse than exact (it keeps a move
#    only when the simulated Ttotal drops), is deterministic, and records its
#    simulations.
#  - the planned-vs-simulated property over random small worlds
#    (tests/fidelity_worlds.py).
# Needs $DPSIM_BIN (the binary) and $DPSIM_SRC (the source root).
set -euo pipefail
BIN=${DPSIM_BIN:?}
SRC=${DPSIM_SRC:?}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() {
    echo "FAIL: $*" >&2
    fail=$((fail + 1))
}

# --- solver: simulate vs exact
for sc in tiny geo-3sites stragglers; do
    for sv in exact simulate simulate; do
        "$BIN" run "$SRC/scenarios/$sc.yaml" --no-db --json --policy cadp --set policies.cadp.solver=$sv \
            >"$T/$sc-$sv.json" 2>"$T/err" || bad "$sc $sv: $(head -c 300 "$T/err")"
        [ "$sv" = simulate ] && [ -f "$T/$sc-sim1.json" ] && mv "$T/$sc-$sv.json" "$T/$sc-sim2.json"
        [ "$sv" = simulate ] && [ -f "$T/$sc-$sv.json" ] && mv "$T/$sc-$sv.json" "$T/$sc-sim1.json"
    done
    if python3 - "$T/$sc-exact.json" "$T/$sc-sim1.json" "$T/$sc-sim2.json" <<'PY'; then ok; else bad "$sc: simulate vs exact"; fi
import json, sys
e, a, b = (json.load(open(p))[0] for p in sys.argv[1:4])
st = {x["name"]: x["value"] for x in a["stats"]}
assert a["ttotal_s"] <= e["ttotal_s"], (a["ttotal_s"], e["ttotal_s"])
assert a["ttotal_s"] == b["ttotal_s"] and a["devices"] == b["devices"], "not deterministic"
assert 1 <= st["plan.simulations"] <= 24, st
assert st["plan.simulated_s"] == a["ttotal_s"], (st, a["ttotal_s"])
assert st["plan.objective_s"] == {x["name"]: x["value"] for x in e["stats"]}["plan.objective_s"]
print("%s: exact %.3f s, simulate %.3f s (%d simulations), planned %.3f s"
      % (sys.argv[1].split("/")[-1][:-11], e["ttotal_s"], a["ttotal_s"], st["plan.simulations"],
         st["plan.objective_s"]))
PY
done

# --- the property over 48 seeded random small worlds (planned and simulated
# side by side for every world; the simulated Ttotal never above the plan
# where nothing is shared and nothing varies)
if python3 "$SRC/tests/fidelity_worlds.py" "$BIN" 48 11; then ok; else bad "fidelity_worlds property"; fi

echo "e2e_fidelity: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
