#!/usr/bin/env bash
# bench_sweep.sh: sweep throughput (stored runs per second, wall clock of
# the whole `dpsim sweep` command into a fresh database) for
#   - cadp on the paper testbed (8 devices, 50 epochs; ~10 ms to simulate),
#   - ddp on tiny.yaml (3 devices; ~1 ms to simulate),
# at --jobs 1 and --jobs 2.  Prints the median (and min/max) over REPS runs.
#
#   DPSIM_BIN=$PWD/build/dpsim DPSIM_SRC=$PWD bash tests/bench_sweep.sh
#   REPS=9 ... (default 5)
set -euo pipefail

BIN=${DPSIM_BIN:?set DPSIM_BIN to the dpsim binary}
SRC=${DPSIM_SRC:?set DPSIM_SRC to the source root}
REPS=${REPS:-5}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/bench_sweep.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

now_ns() { date +%s%N; }

# bench NAME JOBS RUNS ARGS...: median runs/s over REPS fresh sweeps
bench() {
    local name=$1 jobs=$2 runs=$3
    shift 3
    local rates=()
    for r in $(seq 1 "$REPS"); do
        rm -f "$TMP"/b.db*
        local t0 t1
        t0=$(now_ns)
        "$BIN" sweep "$@" --jobs "$jobs" --db "$TMP/b.db" --quiet
        t1=$(now_ns)
        rates+=("$(awk -v n="$runs" -v ns=$((t1 - t0)) 'BEGIN { printf "%.1f", n / (ns / 1e9) }')")
    done
    printf '%s\n' "${rates[@]}" | sort -g | awk -v name="$name" -v jobs="$jobs" -v runs="$runs" '
        { v[NR] = $1 }
        END { med = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
              printf "%-26s jobs %d  %4d runs  median %7.1f runs/s  (min %.1f, max %.1f, %d reps)\n",
                     name, jobs, runs, med, v[1], v[NR], NR }'
}

PAPER=(--policy cadp --vary devices.rtx3090.link.down=50Mbps..200Mbps:lin:8 --vary devices.cpu4.count=0..3)
TINY=(--policy ddp --vary devices.gpu.link.down=10Mbps..1Gbps:log:40 --vary devices.cpu.count=0..4)

echo "dpsim sweep throughput ($(nproc) cores, $("$BIN" --version))"
for j in 1 2; do
    bench "paper-testbed cadp" "$j" 32 "$SRC/scenarios/paper-testbed.yaml" "${PAPER[@]}"
done
for j in 1 2; do
    bench "tiny ddp" "$j" 200 "$SRC/scenarios/tiny.yaml" "${TINY[@]}"
done
