#!/usr/bin/env bash
# e2e_fidelity.sh: issue 11's agreement checks through the binary.
#  - C-ADP solver: simulate never simulates worse than exact (it keeps a move
#    only when the simulated Ttotal drops), is deterministic, and records its
#    simulations.
#  - the planned-vs-simulated property over random small worlds
#    (tests/fidelity_worlds.py).
# Needs $DPSIM_BIN (the binary) and $DPSIM_SRC (the source root).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/e2e_lib.sh"

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
e, a, b = (json.load(open(p))["runs"][0] for p in sys.argv[1:4])
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

# --- analytic collectives over traced or busy links: a run statistic and
# one warning per run
"$BIN" run "$SRC/scenarios/geo-3sites.yaml" --no-db --json --policy ddp --set training.epochs=2 \
    --set policies.ddp.collective=analytic >"$T/a.json" 2>"$T/a.err" || bad "geo-3sites ddp analytic"
n=$(grep -c "analytic collective over link" "$T/a.err" || true)
if [ "$n" = 1 ]; then ok; else bad "want one warning, got $n: $(head -c 300 "$T/a.err")"; fi
if grep -q "laptop.down, which follows a trace" "$T/a.err"; then ok; else bad "warning names the link"; fi
"$BIN" run "$SRC/scenarios/tiny.yaml" --no-db --json --policy ddp --set policies.ddp.collective=analytic \
    >"$T/b.json" 2>"$T/b.err" || bad "tiny ddp analytic"
if [ ! -s "$T/b.err" ]; then ok; else bad "tiny warned: $(head -c 300 "$T/b.err")"; fi
if python3 - "$T/a.json" "$T/b.json" <<'PY'; then ok; else bad "analytic.approximate statistic"; fi
import json, sys
a, b = (json.load(open(p))["runs"][0] for p in sys.argv[1:3])
sa = {x["name"]: x["value"] for x in a.get("stats", [])}
sb = {x["name"]: x["value"] for x in b.get("stats", [])}
assert sa.get("analytic.approximate") == 1, sa
assert "analytic.approximate" not in sb, sb
PY

# --- dpsim check: a non-looping trace's listed part and its long-run mean
printf 'time_s,bandwidth_bps\n0,10000000\n1,1000000000\n' >"$T/a.csv"
sed -e "s|\\.\\./traces/|$SRC/traces/|g" \
    -e "s|latency: 15ms, down_trace: [^ ]*|latency: 15ms, down_trace: { file: $T/a.csv, mean: 100Mbps }|" \
    "$SRC/scenarios/geo-3sites.yaml" >"$T/mean.yaml"
"$BIN" check "$T/mean.yaml" >"$T/check.out" 2>&1 || bad "check mean.yaml: $(head -c 300 "$T/check.out")"
if grep -qF "1 Mbps over [0, 1 s], then 100 Mbps for ever: mean 100 Mbps" "$T/check.out"; then ok; else
    bad "check: $(grep laptop -A1 "$T/check.out" | head -c 300)"; fi

# --- the property over 48 seeded random small worlds (planned and simulated
# side by side for every world; the simulated Ttotal never above the plan
# where nothing is shared and nothing varies)
if python3 "$SRC/tests/fidelity_worlds.py" "$BIN" 48 11; then ok; else bad "fidelity_worlds property"; fi

e2e_done e2e_fidelity
