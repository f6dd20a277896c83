#!/usr/bin/env bash
# bench_symmetry.sh: issue 39's synchronous figures on its scaled paper
# testbed (half RTX 3090s, a quarter 4-core CPUs, an eighth each 16- and
# 8-core CPUs: the paper testbed's four groups, links and model; 1,000
# samples per device, 2 epochs, --no-db -q), medians of REPS runs of host
# CPU seconds (user + system), wall seconds and peak RSS, with exact
# symmetry (sim/policy/runtime_sym.c) on and, for N and NF, off
# (DPSIM_NO_SYMMETRY=1) for the ratio:
#   1. DDP, analytic collectives, N devices (default 100,000; target 3 s);
#   2. DDP, flow collectives, NF devices (default 10,000; the issue's 10^5
#      takes minutes: NF=100000);
#   3. DDP, analytic collectives, NM devices (default 1,000,000; target 10 s).
#   DPSIM_BIN=$PWD/build/dpsim DPSIM_SRC=$PWD bash tests/bench_symmetry.sh
#   REPS=3 N=100000 NF=10000 NM=1000000 OFF=1 (OFF=0: symmetry on only)
set -euo pipefail

BIN=${DPSIM_BIN:?set DPSIM_BIN to the dpsim binary}
SRC=${DPSIM_SRC:?set DPSIM_SRC to the source root}
REPS=${REPS:-3}
N=${N:-100000}
NF=${NF:-10000}
NM=${NM:-1000000}
OFF=${OFF:-1}
BENCH_NAME=bench_symmetry
. "$(dirname "${BASH_SOURCE[0]}")/bench_lib.sh"

echo "bench_symmetry ($(nproc) cores, $("$BIN" --version))"
# the issue's testbed scaled to n devices, 1,000 samples each
scaled() {
    local n=$1 g=$(($1 / 2)) c4=$(($1 / 4)) c16=$(($1 / 8))
    echo --set training.epochs=2 --set dataset.samples=$((n * 1000)) --set devices.rtx3090.count=$g \
        --set devices.cpu4.count=$c4 --set devices.cpu16.count=$c16 --set devices.cpu8.count=$((n - g - c4 - c16))
}
case_() {
    local n=$1 coll=$2 off=$3
    # shellcheck disable=SC2046
    bench "ddp $coll, $n devices" "$REPS" "$BIN" run "$SRC/scenarios/paper-testbed.yaml" --policy ddp --no-db -q \
        $(scaled "$n") --set policies.ddp.collective="$coll"
    if [ "$off" = 1 ]; then
        # shellcheck disable=SC2046
        bench "  the same, symmetry off" "$REPS" env DPSIM_NO_SYMMETRY=1 "$BIN" run "$SRC/scenarios/paper-testbed.yaml" \
            --policy ddp --no-db -q $(scaled "$n") --set policies.ddp.collective="$coll"
    fi
}
case_ "$N" analytic "$OFF"
case_ "$NF" flows "$OFF"
case_ "$NM" analytic 0
