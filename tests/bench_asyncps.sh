#!/usr/bin/env bash
# bench_asyncps.sh: asyncps at scale: the paper testbed's model and links
# (scenarios/paper-testbed.yaml) with N devices (default 10,000: 5,000
# RTX 3090s, 4,998 4-core CPUs, the 16- and 8-core CPUs), one epoch, fully
# asynchronous (max_staleness unbounded) and with an SSP bound.  Prints the
# median over REPS runs of the simulated events per second of host time
# (wall clock, and CPU time: user + system, which a shared machine does not
# inflate) and of the peak resident memory (GNU time's maximum RSS), with
# min and max.
#
#   DPSIM_BIN=$PWD/build/dpsim DPSIM_SRC=$PWD bash tests/bench_asyncps.sh
#   REPS=5 N=10000 BOUNDS="-1 4" ... (defaults)
set -euo pipefail

BIN=${DPSIM_BIN:?set DPSIM_BIN to the dpsim binary}
SRC=${DPSIM_SRC:?set DPSIM_SRC to the source root}
REPS=${REPS:-5}
N=${N:-10000}
BOUNDS=${BOUNDS:-"-1 4"}
TIME=${TIME_BIN:-/usr/bin/time}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/bench_asyncps.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
[ -x "$TIME" ] || { echo "bench_asyncps: needs GNU time at $TIME (apt-get install time)" >&2; exit 2; }
((N >= 4)) || { echo "bench_asyncps: N must be at least 4" >&2; exit 2; }

gpus=$((N / 2))
cpus=$((N - gpus - 2))
SET=(--set training.epochs=1 --set devices.rtx3090.count=$gpus --set devices.cpu4.count=$cpus)

now_ns() { date +%s%N; }
median() { sort -g | awk '{ v[NR] = $1 } END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
                                             printf "median %.4g (min %.4g, max %.4g, %d reps)", m, v[1], v[NR], NR }'; }

echo "asyncps, paper-testbed model, $N devices, 1 epoch ($(nproc) cores, $("$BIN" --version))"
for b in $BOUNDS; do
    rates=() cpu=() rss=() wall=()
    for r in $(seq 1 "$REPS"); do
        t0=$(now_ns)
        "$TIME" -f '%M %U %S' -o "$TMP/rss" "$BIN" run "$SRC/scenarios/paper-testbed.yaml" --policy asyncps \
            "${SET[@]}" --set policies.asyncps.max_staleness="$b" --no-db --json >"$TMP/out.json"
        t1=$(now_ns)
        ev=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["runs"][0]["events"])' "$TMP/out.json")
        rates+=("$(awk -v e="$ev" -v ns=$((t1 - t0)) 'BEGIN { printf "%.0f", e / (ns / 1e9) }')")
        wall+=("$(awk -v ns=$((t1 - t0)) 'BEGIN { printf "%.2f", ns / 1e9 }')")
        rss+=("$(awk '{ printf "%.1f", $1 / 1024 }' "$TMP/rss")")
        cpu+=("$(awk -v e="$ev" '{ printf "%.0f", e / ($2 + $3) }' "$TMP/rss")")
    done
    python3 - "$TMP/out.json" "$b" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["runs"][0]
st = {s["name"]: s["value"] for s in r["stats"] if s["scope"] == "run"}
print(f"  max_staleness {sys.argv[2]}: {r['events']} events, Ttotal {r['ttotal_s']:.6g} s simulated, "
      f"{int(st['updates'])} updates, staleness mean {st['update.staleness_mean']:.4g} max {int(st['update.staleness_max'])}")
PY
    echo "    events/s     $(printf '%s\n' "${rates[@]}" | median) (wall)"
    echo "    events/s     $(printf '%s\n' "${cpu[@]}" | median) (CPU)"
    echo "    wall (s)     $(printf '%s\n' "${wall[@]}" | median)"
    echo "    peak RSS MiB $(printf '%s\n' "${rss[@]}" | median)"
done
