#!/usr/bin/env bash
# bench_population.sh: issue 16's population figures, medians of REPS runs of
# host CPU time (user + system: a shared machine does not inflate it), wall
# time and peak memory:
#   1. `dpsim check` on G distinct device groups written out in YAML
#      (default 100,000; target: load in under 1 s);
#   2. the same G groups as a CSV device table (`- from_csv: FILE`);
#   3. `dpsim check` on a population of N drawn devices (default 1,000,000:
#      lognormal batch time, uniform up link, normal down link, seeded);
#   4. `dpsim run --policy cadp` on N drawn devices (lognormal batch time,
#      equal links), without storing (--no-db) and storing (one row per
#      device in results.db); REPS_RUN runs each (default 1: minutes).
#   DPSIM_BIN=$PWD/build/dpsim DPSIM_SRC=$PWD bash tests/bench_population.sh
#   REPS=3 REPS_RUN=1 G=100000 N=1000000 (defaults); LOAD_ONLY=1 runs the
#   loading cases 1-3 only (seconds, not minutes).
set -euo pipefail

BIN=${DPSIM_BIN:?set DPSIM_BIN to the dpsim binary}
REPS=${REPS:-3}
REPS_RUN=${REPS_RUN:-1}
LOAD_ONLY=${LOAD_ONLY:-0}
G=${G:-100000}
N=${N:-1000000}
BENCH_NAME=bench_population
. "$(dirname "${BASH_SOURCE[0]}")/bench_lib.sh"
bench_before_rep() { rm -f "$TMP/r.db"*; } # every stored run starts from an empty database

HEAD='model: { params: 1000, flops_per_sample: 1e6 }
dataset: { samples: 10000000, sample_bytes: 1KB }
training: { epochs: 1 }
devices:'

echo "bench_population ($(nproc) cores, $("$BIN" --version))"
{
    printf 'name: groups\n%s\n' "$HEAD"
    awk -v g="$G" 'BEGIN { for (i = 0; i < g; i++)
        printf "  - { name: d%d, kind: cpu, memory: 1GiB, batch: 4, batch_time: %.3fs, link: { up: %dMbps, down: 1Mbps } }\n", i, 1 + (i % 997) / 1000, 1 + i % 89 }'
} >"$TMP/groups.yaml"
bench "dpsim check, $G distinct groups in YAML" "$REPS" "$BIN" check "$TMP/groups.yaml"

{
    echo "name,kind,memory,batch,batch_time,link.up,link.down"
    awk -v g="$G" 'BEGIN { for (i = 0; i < g; i++) printf "d%d,cpu,1GiB,4,%.3fs,%dMbps,1Mbps\n", i, 1 + (i % 997) / 1000, 1 + i % 89 }'
} >"$TMP/fleet.csv"
printf 'name: table\n%s\n  - from_csv: fleet.csv\n' "$HEAD" >"$TMP/table.yaml"
bench "dpsim check, $G distinct groups in a CSV table" "$REPS" "$BIN" check "$TMP/table.yaml"

# drawn NAME LINK: a scenario NAME.yaml of $N phones, lognormal batch times, links LINK.
drawn() {
    printf 'name: %s\n%s\n%s\n' "$1" "$HEAD" "  - name: phone
    count: $N
    seed: 7
    kind: cpu
    memory: 1GiB
    batch: 4
    batch_time: { lognormal: { median: 2.5s, sigma: 0.4 } }
    link: $2" >"$TMP/$1.yaml"
}

drawn drawn '{ up: { uniform: [10Mbps, 100Mbps] }, down: { normal: { mean: 50Mbps, sd: 10Mbps } } }'
bench "dpsim check, $N drawn devices" "$REPS" "$BIN" check "$TMP/drawn.yaml"

[ "$LOAD_ONLY" = 1 ] && exit 0
drawn drawn-bt '{ up: 50Mbps, down: 50Mbps }'
bench "dpsim run --policy cadp --no-db, $N drawn devices" "$REPS_RUN" "$BIN" run "$TMP/drawn-bt.yaml" --policy cadp --no-db -q
bench "dpsim run --policy cadp (stored), $N drawn devices" "$REPS_RUN" "$BIN" run "$TMP/drawn-bt.yaml" --policy cadp --db "$TMP/r.db" -q
