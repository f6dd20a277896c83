#!/usr/bin/env bash
# e2e_population.sh: device populations through the binary (scenarios/README.md,
# "Device populations"): `check` summarises a table and a drawn population, and
# the groups past the 50th written one by one (--all lists them); a
# CSV table and the YAML it stands for give identical runs; a run that read a
# table is simulated again from the database after the table is gone; the
# same scenario draws the same devices in every process; bad tables exit 2
# with FILE:LINE:COLUMN and the key.
# Needs $DPSIM_BIN (the binary); tests/e2e_lib.sh sets up the rest.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/e2e_lib.sh"
same() { # same FILE1 FILE2
    if cmp -s "$1" "$2"; then ok; else bad "$1 and $2 differ: $(diff "$1" "$2" | head -c 400)"; fi
}

# --- the example: check summarises, run works
expect 0 "$BIN" check "$SRC/scenarios/population.yaml"
has "$T/out" "devices  2022 in 2004 groups"
has "$T/out" "  fleet.csv: x22 devices in 4 rows: 20 gpu, 2 cpu"
has "$T/out" "  phone        x2000 drawn devices (seed 7): 0 gpu, 2000 cpu"
has "$T/out" "               batch time min 635.1 ms, median 2.483 s, max 11.11 s per batch"
if [ "$(wc -l <"$T/out")" -lt 60 ]; then ok; else bad "check lists the population's devices"; fi

# --- a CSV table and the equivalent YAML: identical runs
HEAD='model: { params: 1e6, flops_per_sample: 1e8 }
dataset: { samples: 20000, sample_bytes: 3KB }
training: { epochs: 2 }
sites: [eu, us]
wan: [{ between: [eu, us], bandwidth: 1Gbps, latency: 30ms }]
devices:'
cat >"$T/t.csv" <<'CSV'
name,count,kind,memory,batch,batch_time,link.up,link.down,link.latency,site
g,2,gpu,24GB,32,0.3s,100Mbps,200Mbps,10ms,eu
c,3,cpu,8GB,8,"2.5s",20Mbps,50Mbps,,us
CSV
printf 'name: same\n%s\n  - from_csv: t.csv\n' "$HEAD" >"$T/csv.yaml"
printf 'name: same\n%s\n%s\n%s\n' "$HEAD" \
    '  - { name: g, count: 2, kind: gpu, memory: 24GB, batch: 32, batch_time: 0.3s, site: eu, link: { up: 100Mbps, down: 200Mbps, latency: 10ms } }' \
    '  - { name: c, count: 3, kind: cpu, memory: 8GB, batch: 8, batch_time: 2.5s, site: us, link: { up: 20Mbps, down: 50Mbps } }' >"$T/yaml.yaml"
for p in cadp ddp; do
    expect 0 "$BIN" run "$T/csv.yaml" --policy $p --no-db --json -q
    cp "$T/out" "$T/csv.json"
    expect 0 "$BIN" run "$T/yaml.yaml" --policy $p --no-db --json -q
    same "$T/csv.json" "$T/out"
done

# --- stored with the run: rerun after the table is gone
expect 0 "$BIN" run "$T/csv.yaml" --policy cadp --db "$T/r.db" -q
rm "$T/t.csv"
expect 0 "$BIN" rerun 1 --db "$T/r.db"
has "$T/out" "identical"

# --- drawn devices: the same in every process, others with another seed
expect 0 "$BIN" run "$SRC/scenarios/population.yaml" --policy cadp --no-db --json -q --set devices.phone.count=300
cp "$T/out" "$T/a.json"
expect 0 "$BIN" run "$SRC/scenarios/population.yaml" --policy cadp --no-db --json -q --set devices.phone.count=300
same "$T/a.json" "$T/out"
expect 0 "$BIN" run "$SRC/scenarios/population.yaml" --policy cadp --no-db --json -q --set devices.phone.count=300 \
    --set devices.phone.seed=8
if cmp -s "$T/a.json" "$T/out"; then bad "seed 8 drew the same devices as seed 7"; else ok; fi

# --- groups written one by one: up to 50 listed, past that 10 and a summary of
# the rest (hand-computed: group i has batch_time i+1 s and up link i+1 Mbps,
# so the 50 left out, 10..59, span 11..60 and their median device, the 25th,
# is 35; groups 50..59 are gpus); --all lists every one
groups() { # groups N: a scenario of N groups, d0 .. d(N-1)
    printf 'name: many\nmodel: { params: 1000, flops_per_sample: 1e6 }\n'
    printf 'dataset: { samples: 100000, sample_bytes: 1KB }\ntraining: { epochs: 1 }\ndevices:\n'
    for ((i = 0; i < $1; i++)); do
        printf '  - { name: d%d, kind: %s, memory: 1GiB, batch: 4, batch_time: %ds, link: { up: %dMbps, down: 1Mbps } }\n' \
            "$i" "$([ "$i" -ge 50 ] && echo gpu || echo cpu)" $((i + 1)) $((i + 1))
    done
}
groups 60 >"$T/g60.yaml"
expect 0 "$BIN" check "$T/g60.yaml"
has "$T/out" "devices  60 in 60 groups"
has "$T/out" "  d9           x1 cpu, memory 1 GiB, batch 4, batch_time 10 s/batch = 0.4 samples/s per device"
hasnt "$T/out" "  d10 "
has "$T/out" "  ... and 50 more groups, x50 devices: 10 gpu, 40 cpu (dpsim check --all lists them)"
has "$T/out" "               batch time min 11 s, median 35 s, max 60 s per batch"
has "$T/out" "               samples/s  min 0.06667, median 0.1111, max 0.3636 per device"
has "$T/out" "               link up    min 11 Mbps, median 35 Mbps, max 60 Mbps"
has "$T/out" "               link down  min 1 Mbps, median 1 Mbps, max 1 Mbps"
has "$T/out" "               memory     min 1 GiB, median 1 GiB, max 1 GiB"
has "$T/out" "total    60 devices,"
expect 0 "$BIN" check --all "$T/g60.yaml"
has "$T/out" "  d59          x1 gpu, memory 1 GiB, batch 4, batch_time 60 s/batch = 0.06667 samples/s per device"
hasnt "$T/out" "more groups"
expect 0 "$BIN" check -a "$T/g60.yaml"
has "$T/out" "  d59 "
groups 50 >"$T/g50.yaml"
expect 0 "$BIN" check "$T/g50.yaml"
has "$T/out" "  d49          x1 cpu"
hasnt "$T/out" "more groups"

# --- bad input: exit 2, one line naming the table's line and column and the key
printf 'name,kind,memory,batch,batch_time,link.up,link.down\nx,cpu,1GiB,4,1s,1Mbps,0Mbps\n' >"$T/t.csv"
printf 'name: bad\n%s\n  - from_csv: t.csv\n' "$HEAD" >"$T/bad.yaml"
expect 2 "$BIN" check "$T/bad.yaml"
has "$T/err" "$T/t.csv:2:23: devices.x.link.down: must be > 0 (got 0Mbps)"
expect 2 "$BIN" run "$T/bad.yaml" --policy cadp --no-db
has "$T/err" "t.csv:2:23: devices.x.link.down"
expect 2 "$BIN" check "$SRC/scenarios/population.yaml" --set 'devices.phone.batch_time.lognormal.sigma=-1'
has "$T/err" "override devices.phone.batch_time.lognormal.sigma=-1: devices.phone.batch_time.lognormal.sigma: must be >= 0 (got -1)"

e2e_done e2e_population
