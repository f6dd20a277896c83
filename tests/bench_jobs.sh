#!/usr/bin/env bash
# bench_jobs.sh: 160 jobs of a trace in the Pollux workload shape on 64 T4
# GPUs (scenarios/jobs-pollux.yaml, traces/jobs/pollux-shape-160.csv), once
# per scheduler.  Prints, per scheduler, the median over REPS runs of the
# CPU time (user + system: a shared machine does not inflate it) and the
# wall time of the whole process, and the simulated events; checks that two
# runs give the same JSON (deterministic per seed) and that the median CPU
# time is under LIMIT seconds (default 10: issue 31's target).
#
#   DPSIM_BIN=$PWD/build/dpsim DPSIM_SRC=$PWD bash tests/bench_jobs.sh
#   REPS=3 SCHEDULERS="fifo srf las themis pollux" LIMIT=10 ... (defaults)
set -euo pipefail

BIN=${DPSIM_BIN:?set DPSIM_BIN to the dpsim binary}
SRC=${DPSIM_SRC:?set DPSIM_SRC to the source root}
REPS=${REPS:-3}
LIMIT=${LIMIT:-10}
SCHEDULERS=${SCHEDULERS:-"fifo srf las themis pollux"}
TIME=${TIME_BIN:-/usr/bin/time}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/bench_jobs.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
[ -x "$TIME" ] || { echo "bench_jobs: needs GNU time at $TIME (apt-get install time)" >&2; exit 2; }

median() { sort -g | awk '{ v[NR] = $1 } END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
                                             printf "%.3f (min %.3f, max %.3f)", m, v[1], v[NR] }'; }

echo "160 Pollux-shaped jobs on 64 devices ($(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg), $("$BIN" --version))"
status=0
for s in $SCHEDULERS; do
    cpu=() wall=()
    for r in $(seq 1 "$REPS"); do
        "$TIME" -f '%U %S %e' -o "$TMP/t" "$BIN" jobs "$SRC/scenarios/jobs-pollux.yaml" -S "$s" --no-db --json \
            >"$TMP/out$r.json"
        read -r u sy e <"$TMP/t"
        cpu+=("$(echo "$u + $sy" | bc -l)")
        wall+=("$e")
        cmp -s "$TMP/out1.json" "$TMP/out$r.json" || { echo "bench_jobs: $s: run $r differs from run 1" >&2; status=1; }
    done
    ev=$(sed 's/.*"events":\([0-9]*\).*/\1/' "$TMP/out1.json")
    m=$(printf '%s\n' "${cpu[@]}" | median)
    echo "$s: cpu $m s, wall $(printf '%s\n' "${wall[@]}" | median) s, $ev events"
    awk -v m="${m%% *}" -v l="$LIMIT" 'BEGIN { exit !(m < l) }' ||
        { echo "bench_jobs: $s: median CPU ${m%% *} s is not under $LIMIT s" >&2; status=1; }
done
exit $status
