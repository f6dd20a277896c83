#!/usr/bin/env bash
# e2e_learn.sh: time to accuracy through the binary (scenario `learning:`,
# docs/MODEL.md section 9): the table, JSON, database rows, plots, sweeps by
# time to accuracy (the same bytes whatever --jobs), bad input refused with
# its place and nothing stored, and no learning results without the block.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/e2e_lib.sh"
DIG=$SRC/scenarios/digits.yaml
DB=$T/l.db

# --- run: every policy, the time-to-accuracy table, stored
expect 0 "run digits" -- "$BIN" run "$DIG" --db "$DB" -q --set training.epochs=4
has "$T/out" "time to accuracy (sgd"
has "$T/out" "t@0.9 (s)"
has "$T/out" "not reached"  # C-ADP's one average an epoch on skewed shards
n=$(sqlite3 "$DB" "SELECT count(DISTINCT run_id) FROM run_evals")
[ "$n" -ge 10 ] && ok "evaluations stored for every run" || bad "run_evals holds $n runs"
e=$(sqlite3 "$DB" "SELECT count(*) FROM run_evals WHERE run_id = 1")
[ "$e" = 5 ] && ok "one evaluation at t = 0 and one per epoch" || bad "run 1 has $e evaluations (want 5)"
nul=$(sqlite3 "$DB" "SELECT count(*) FROM run_tta WHERE t_s IS NULL")
[ "$nul" -ge 1 ] && ok "a target not reached is NULL" || bad "no NULL time to accuracy"

# --- JSON and show
expect 0 "$BIN" run "$DIG" --policy localsgd --no-db --json --set training.epochs=2
has "$T/out" '"learning":{"source":"sgd","time_to_accuracy":[{"target":0.9,"t_s":'
has "$T/out" '"test_acc":'
expect 0 "$BIN" show 1 --db "$DB"
has "$T/out" "time to accuracy"

# --- plots and export
expect 0 "plot accuracy" -- "$BIN" plot accuracy --db "$DB" --out "$T/acc.png"
[ -s "$T/acc.png" ] && ok || bad "no accuracy plot"
expect 0 "$BIN" export --csv --db "$DB" --out "$T/csv"
[ -s "$T/csv/run_evals.csv" ] && [ -s "$T/csv/run_tta.csv" ] && ok "CSV export of the learning tables" ||
    bad "run_evals.csv / run_tta.csv missing"
# a database without learning runs: a clear refusal
expect 0 "$BIN" run "$TINY" --db "$T/plain.db" -q -p ddp
expect 2 "$BIN" plot accuracy --db "$T/plain.db" --out "$T/none.png"
has "$T/err" "learning:"

# --- sweeps: by time to accuracy, the same bytes with 1 and 2 jobs
for j in 1 2; do
    expect 0 "sweep --jobs $j" -- "$BIN" sweep "$DIG" --vary devices.slow.batch_time=10ms..40ms:log:3 \
        --vary training.epochs=3 -p localsgd,asyncps --jobs $j --db "$T/s$j.db" -q
    sqlite3 "$T/s$j.db" "SELECT r.policy, r.point_json, e.seq, e.t_s, e.test_acc, e.test_loss, e.train_loss
        FROM run_evals e JOIN runs r ON r.id = e.run_id ORDER BY r.policy, r.point_json, e.seq" >"$T/s$j.txt"
done
cmp -s "$T/s1.txt" "$T/s2.txt" && ok "--jobs 1 and --jobs 2: the same curves" || bad "sweep curves differ by --jobs"
expect 0 "plot sweep by tta" -- "$BIN" plot sweep --db "$T/s1.db" --metric tta@0.9 --out "$T/sw.png"
expect 2 "$BIN" plot sweep --db "$T/s1.db" --metric tta@1.5 --out "$T/sw.png"
has "$T/err" "tta@X"

# --- bad input: FILE:LINE:COL, exit 2, the database untouched
before=$(sqlite3 "$DB" "SELECT count(*) FROM runs")
cat >"$T/bad.yaml" <<YAML
$(sed -n '/^name:/,/^learning:/p' "$DIG")
  data: digits
  partition: shards
YAML
expect 2 "$BIN" run "$T/bad.yaml" --db "$DB"
has "$T/err" "bad.yaml:"
has "$T/err" "learning.partition"
expect 2 "$BIN" run "$DIG" --db "$DB" --set learning.targets=[1.2]
has "$T/err" "(0, 1]"
expect 2 "$BIN" run "$DIG" --db "$DB" --set learning.data=missing.csv
has "$T/err" "missing.csv"
expect 2 "$BIN" run "$DIG" --db "$DB" --set learning.model=cnn
# FedGSync's options (8 devices): more groups than devices, regroup < 1, a misspelt key
for opt in "groups: 9" "regroup: 0" "gruops: 2"; do
    sed "s/^policies:\$/policies:\n  fedgsync: { $opt }/" "$DIG" >"$T/fg.yaml"
    expect 2 "$BIN" run "$T/fg.yaml" --db "$DB" -p fedgsync
    has "$T/err" "fg.yaml:39:"
    has "$T/err" "policies.fedgsync.${opt%%:*}"
done
after=$(sqlite3 "$DB" "SELECT count(*) FROM runs")
[ "$before" = "$after" ] && ok "nothing stored by refused runs" || bad "runs went from $before to $after"

# --- the learner sees every update: the same curve with the fast paths off
# (steady-state replay, folded batch runs), and in a world that fails
for p in ddp cadp localsgd; do
    "$BIN" run "$DIG" -p $p --no-db --json --set training.epochs=3 2>/dev/null | grep -v wall_s >"$T/a.json"
    DPSIM_NO_FAST_FORWARD=1 DPSIM_COMPUTE_PER_BATCH=1 "$BIN" run "$DIG" -p $p --no-db --json \
        --set training.epochs=3 2>/dev/null | grep -v wall_s >"$T/b.json"
    sed -i 's/"wall_s":[^,]*,//' "$T/a.json" "$T/b.json"
    cmp -s "$T/a.json" "$T/b.json" && ok "$p: the same bytes without the fast paths" || bad "$p: fast paths change the run"
done
expect 0 "learning in a world that fails" -- "$BIN" run "$DIG" -p ddp,cadp,localsgd,asyncps --no-db -q \
    --set training.epochs=3 --set 'availability={mtbf: 300s, mttr: 5s}' --set policies.ddp.timeout=10s
has "$T/out" "time to accuracy"

# --- evaluations far too frequent for the run's length: a message, not a full memory
expect 1 "$BIN" run "$DIG" -p ddp --no-db -q --set 'learning.evaluate={every: 0.0001s}'
has "$T/err" "evaluate less often"

# --- without learning: no learning output at all
expect 0 "$BIN" run "$TINY" --no-db --json -p cadp
hasnt "$T/out" '"learning"'
expect 0 "$BIN" run "$TINY" --no-db -p cadp
hasnt "$T/out" "time to accuracy"

e2e_done e2e_learn
