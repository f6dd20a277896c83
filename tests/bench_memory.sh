#!/usr/bin/env bash
# bench_memory.sh: issue 39's memory figures on its scaled paper testbed
# (half RTX 3090s, a quarter 4-core CPUs, an eighth each 16- and 8-core
# CPUs; 1,000 samples per device; --no-db -q), the median of REPS peak RSS
# (GNU time's maximum resident set size, in MiB) beside its target:
#   1. C-ADP, N devices (default 100,000), 2 epochs: target 103 MB (the
#      release before issue 39's regression);
#   2. DDP (analytic collectives), NS devices (default 1,000) at 2, 4 and
#      8 epochs, exact symmetry on and off (DPSIM_NO_SYMMETRY=1): target
#      10 MB (the fast-forward journal must not cost what it saves).
#   DPSIM_BIN=$PWD/build/dpsim DPSIM_SRC=$PWD bash tests/bench_memory.sh
#   REPS=3 N=100000 NS=1000 (defaults)
# Peak RSS counts the pages a run touched, so a figure is the same on a
# busy machine; the binary and its libraries alone are about 4.5 MB.
set -euo pipefail

BIN=${DPSIM_BIN:?set DPSIM_BIN to the dpsim binary}
SRC=${DPSIM_SRC:?set DPSIM_SRC to the source root}
REPS=${REPS:-3}
N=${N:-100000}
NS=${NS:-1000}
BENCH_NAME=bench_memory
. "$(dirname "${BASH_SOURCE[0]}")/bench_lib.sh"
((N >= 8 && NS >= 8)) || { echo "bench_memory: N and NS must be at least 8" >&2; exit 2; }

# the issue's testbed scaled to n devices, e epochs, 1,000 samples each
scaled() {
    local n=$1 e=$2 g=$(($1 / 2)) c4=$(($1 / 4)) c16=$(($1 / 8))
    echo --set training.epochs="$e" --set dataset.samples=$((n * 1000)) --set devices.rtx3090.count=$g \
        --set devices.cpu4.count=$c4 --set devices.cpu16.count=$c16 --set devices.cpu8.count=$((n - g - c4 - c16))
}
# peak NAME TARGET_MB CMD...: the median peak RSS of REPS runs against its target
peak() {
    local name=$1 target=$2 rss=()
    shift 2
    for _ in $(seq 1 "$REPS"); do
        "$TIME" -f '%M' -o "$TMP/t" "$@" >"$TMP/out" 2>&1 || { cat "$TMP/out" >&2; exit 1; }
        rss+=("$(tail -n 1 "$TMP/t")")
    done
    local m
    m=$(printf '%s\n' "${rss[@]}" | sort -n | awk '{ v[NR] = $1 } END { printf "%.1f", v[int((NR + 1) / 2)] / 1024 }')
    printf '  %-44s %7s MiB  (target %s, %s)\n' "$name" "$m" "$target" \
        "$(awk -v m="$m" -v t="$target" 'BEGIN { print m <= t ? "met" : sprintf("%.2fx", m / t) }')"
}

echo "bench_memory ($(nproc) cores, $("$BIN" --version)), peak RSS, median of $REPS"
# shellcheck disable=SC2046
peak "cadp, $N devices, 2 epochs" 103 "$BIN" run "$SRC/scenarios/paper-testbed.yaml" --policy cadp --no-db -q \
    $(scaled "$N" 2)
for e in 2 4 8; do
    # shellcheck disable=SC2046
    peak "ddp, $NS devices, $e epochs" 10 "$BIN" run "$SRC/scenarios/paper-testbed.yaml" --policy ddp --no-db -q \
        $(scaled "$NS" "$e")
    # shellcheck disable=SC2046
    peak "ddp, $NS devices, $e epochs, symmetry off" 10 env DPSIM_NO_SYMMETRY=1 "$BIN" run \
        "$SRC/scenarios/paper-testbed.yaml" --policy ddp --no-db -q $(scaled "$NS" "$e")
done
