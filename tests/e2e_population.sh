#!/usr/bin/env bash
# e2e_population.sh: device populations through the binary (scenarios/README.md,
# "Device populations"): `check` summarises a table and a drawn population; a
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
