#!/usr/bin/env bash
# bench_scale.sh: issue 16's scale figures, medians of REPS runs of host CPU
# time (user + system: a shared machine does not inflate it) and wall time:
#   1. `dpsim reproduce table3` end to end (plots and database included), and
#      with the rings of DDP and DeepSpeed as flows (--json, no database);
#   2. DDP with analytic collectives on the paper testbed's model and links
#      scaled to N devices (default 100,000: half RTX 3090s, a quarter 4-core
#      CPUs, an eighth each 16- and 8-core CPUs), 2 epochs, 10^7 samples;
#   3. `dpsim check` on G distinct device groups (default 40,000; a YAML
#      document is limited to 4x10^6 nodes, about 230,000 such groups);
#   4. DDP with flow collectives on the same scaled testbed with NF devices
#      (default 1,000; dataset 100 samples per device), 2 epochs;
#   5. the paper testbed's DDP with flow collectives (50 epochs).
#   DPSIM_BIN=$PWD/build/dpsim DPSIM_SRC=$PWD bash tests/bench_scale.sh
#   REPS=3 N=100000 G=40000 NF=1000 (defaults)
set -euo pipefail

BIN=${DPSIM_BIN:?set DPSIM_BIN to the dpsim binary}
SRC=${DPSIM_SRC:?set DPSIM_SRC to the source root}
REPS=${REPS:-3}
N=${N:-100000}
G=${G:-40000}
NF=${NF:-1000}
BENCH_NAME=bench_scale
. "$(dirname "${BASH_SOURCE[0]}")/bench_lib.sh"
((N >= 8)) || { echo "bench_scale: N must be at least 8" >&2; exit 2; }

echo "bench_scale ($(nproc) cores, $("$BIN" --version))"
bench_before_rep() { rm -rf "$TMP/t3" "$TMP/t3.db"*; } # each run draws and stores from scratch
bench "reproduce table3" "$REPS" "$BIN" reproduce table3 --out "$TMP/t3" --db "$TMP/t3.db"
bench_before_rep() { :; }
bench "reproduce table3, collectives as flows" "$REPS" "$BIN" reproduce table3 --json --no-db \
    --set policies.ddp.collective=flows --set policies.deepspeed.collective=flows

# scaled N: the paper testbed's groups in its proportions, 100 samples each
scaled() {
    local n=$1 g=$(($1 / 2)) c4=$(($1 / 4)) c16=$(($1 / 8))
    echo --set training.epochs=2 --set dataset.samples=$((n * 100)) --set devices.rtx3090.count=$g \
        --set devices.cpu4.count=$c4 --set devices.cpu16.count=$c16 --set devices.cpu8.count=$((n - g - c4 - c16))
}
# shellcheck disable=SC2046
bench "ddp analytic, $N devices, 2 epochs" "$REPS" "$BIN" run "$SRC/scenarios/paper-testbed.yaml" --policy ddp --no-db \
    $(scaled "$N") --set policies.ddp.collective=analytic

{
    printf 'name: groups\nmodel: { params: 1000, flops_per_sample: 1e6 }\n'
    printf 'dataset: { samples: 1000, sample_bytes: 1KB }\ntraining: { epochs: 1 }\ndevices:\n'
    awk -v g="$G" 'BEGIN { for (i = 0; i < g; i++)
        printf "  - { name: d%d, kind: cpu, memory: 1GiB, batch: 4, batch_time: %.3fs, link: { up: 1Mbps, down: 1Mbps } }\n", i, 1 + (i % 997) / 1000 }'
} >"$TMP/groups.yaml"
bench "dpsim check, $G distinct groups" "$REPS" "$BIN" check "$TMP/groups.yaml"
# shellcheck disable=SC2046
bench "ddp flows, $NF devices, 2 epochs" "$REPS" "$BIN" run "$SRC/scenarios/paper-testbed.yaml" --policy ddp --no-db \
    $(scaled "$NF") --set policies.ddp.collective=flows
bench "paper testbed ddp flows, 50 epochs" "$REPS" "$BIN" run "$SRC/scenarios/paper-testbed.yaml" --policy ddp --no-db \
    --set policies.ddp.collective=flows
