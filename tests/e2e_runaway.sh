#!/usr/bin/env bash
# e2e_runaway.sh: issue 38's runaways and silent results, through the real
# binary (inputs in tests/regress/issue38/, deterministic faults only).
#  - a load balancer whose devices' epoch shares pass 2^31 samples ends;
#  - straggler episodes that overlap, or meet a device back after 10^9 s
#    down, end in well under a second;
#  - C-ADP whose last participant up loses its upload in flight: the first
#    device back takes the epoch over (fixed trace; seeded failures, with
#    `solver: exact` and `simulate`);
#  - a run that makes no progress while devices keep failing ends with a
#    message, whatever the policy (no-progress.yaml: no batch can finish);
#  - a flow stuck on a link whose trace ends at 0, while another trace loops,
#    ends with the stall message (trace-dead-link.yaml);
#  - a policy that fails in a multi-policy `run` does not hide the later
#    ones: they run and are stored, the failure is on stderr, exit 1;
#  - batches too short for the simulated time's resolution (1 us at 1e10 s)
#    are refused with a message instead of utilisation and TFLOPS of 0;
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

# --- C-ADP: the only participant loses its upload in flight (t = 5.5 s) and
# is back at 8 s: it takes the epoch over (model down, its model up), then
# epoch 2: 16 s in all
expect 0 "$BIN" run "$R/cadp-upload-lost.yaml" --no-db --json -p cadp
python3 - "$T/out" <<'PY' && ok || bad "cadp-upload-lost: $(head -c 300 "$T/out")"
import json, sys
r = json.load(open(sys.argv[1]))["runs"][0]
assert abs(r["ttotal_s"] - 16.0) < 1e-6, r["ttotal_s"]
assert len(r["epochs"]) == 2, r["epochs"]
PY
for seed in 1 2 4 5; do
    for sv in exact simulate; do
        expect 0 "cadp-random-failures seed $seed $sv" -- "$BIN" run "$R/cadp-random-failures.yaml" --no-db -p cadp \
            --seed $seed --set policies.cadp.solver=$sv
    done
done

# --- no batch can finish and devices keep failing: every policy ends
# (DDP's family by max_restarts, C-ADP by the runtime's watchdog; local SGD,
# FL-SGD and the asynchronous server skip what the devices down miss)
expect 1 "$BIN" run "$R/no-progress.yaml" --no-db -p cadp
has "$T/err" "no progress: 103001 device failures from t = "
has "$T/err" "not one batch finished nor an epoch ended"
expect 1 "$BIN" run "$R/no-progress.yaml" --no-db -p ddp
has "$T/err" "(max_restarts)"
expect 0 "$BIN" run "$R/no-progress.yaml" --no-db -p localsgd,flsgd,asyncps

# --- a flow on a link whose trace ends at 0, while another link's looping
# trace keeps the queue from emptying (fuzz case 1929 ran to the event
# limit): every policy ends with the stall message naming the dead link
# (C-ADP refuses the world first: the link's mean bandwidth is 0)
expect 2 "$BIN" run "$R/trace-dead-link.yaml" --no-db -q # 2: C-ADP's refusal is an input error
n=$(grep -c "zero capacity with no recovery on cpu.down" "$T/err")
[ "$n" -ge 9 ] && ok || bad "trace-dead-link: $n stall messages: $(head -c 600 "$T/err")"
has "$T/err" "cadp on trace-dead-link: device cpu: its link to the server has zero mean bandwidth"

# --- a failed policy hides nothing: C-ADP fails first, local SGD still runs
# (table, --json, the database), exit 1
expect 1 "$BIN" run "$R/no-progress.yaml" --no-db -q -p cadp,localsgd
has "$T/err" "dpsim: cadp on no-progress: no progress"
has "$T/out" "cadp         failed (the message is on stderr)"
if grep -q "^localsgd  " "$T/out"; then ok; else bad "no localsgd row: $(cat "$T/out")"; fi
expect 1 "$BIN" run "$R/no-progress.yaml" --no-db --json -p cadp,localsgd
python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))["runs"]; assert [x["policy"] for x in r] == ["localsgd"], r' \
    "$T/out" && ok || bad "--json after a failed policy: $(head -c 300 "$T/out")"
expect 1 "$BIN" run "$R/no-progress.yaml" --db "$T/f.db" -q -p cadp,localsgd
has "$T/out" "stored in"
if command -v sqlite3 >/dev/null; then
    n=$(sqlite3 "$T/f.db" "SELECT group_concat(policy) FROM runs")
    if [ "$n" = localsgd ]; then ok; else bad "stored after a failed policy: '$n'"; fi
fi

# --- huge simulated times: refused, every policy, naming time and batch
expect 1 "$BIN" run "$R/huge-time.yaml" --no-db -q
# (C-ADP's plan: a tie of the planner's model, [132, 134, 134] since the
# shared NIC entered it; its data arrive at 1.056e10 s)
has "$T/err" "dpsim: cadp on huge-time: at simulated t = 1.056e+10 s a time is resolved to 1.9e-06 s only"
has "$T/err" "dpsim: ddp on huge-time: at simulated t = "
hasnt "$T/out" "0.0%"

e2e_done e2e_runaway
