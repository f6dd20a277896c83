#!/usr/bin/env bash
# e2e_data.sh: data where it lives and caching through the binary
# (scenarios/README.md "Data where it lives"): bad input exits 2 with
# FILE:LINE:COLUMN and stores nothing; the geo-locality scenario runs,
# stores, reruns bit for bit and shows its data statistics; a scenario
# without the keys gives the same JSON as before the keys existed (the
# goldens check that for tiny and geo-3sites).
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/e2e_lib.sh"
GEO=$SRC/scenarios/geo-locality.yaml
DB=$T/r.db

# parts not adding up to the dataset: FILE:LINE:COL, exit 2, nothing stored
sed 's/{ at: asia, samples: 10% }/{ at: asia, samples: 11% }/' "$GEO" >"$T/bad-parts.yaml"
expect 2 "$BIN" run "$T/bad-parts.yaml" --policy cadp --db "$DB"
has "$T/err" "bad-parts.yaml:24:5: dataset.parts: the parts must add up to the dataset's 100000 samples"
[ ! -e "$DB" ] && ok "nothing stored" || bad "a database was written for a refused scenario"
# a cache at an unknown site
sed 's/^  storage:/  caches: [{ site: mars, capacity: 1GB }]\n  storage:/' "$GEO" >"$T/bad-cache.yaml"
expect 2 "$BIN" check "$T/bad-cache.yaml"
has "$T/err" "bad-cache.yaml:27:20: dataset.caches[0].site: unknown site (have: eu, us, asia) (got mars)"
expect 2 "$BIN" run "$GEO" --policy locality --no-db --set 'dataset.storage=[{site: us, read: -1Gbps}]'
has "$T/err" "dataset.storage[0].read"

# the scenario runs and stores; its statistics are there; rerun is bit for bit
expect 0 "$BIN" run "$GEO" --policy cadp,locality --db "$DB"
has "$T/out" "data.bytes_wan"
has "$T/out" "wan.bytes"
expect 0 "$BIN" rerun 1 --db "$DB"
expect 0 "$BIN" rerun 2 --db "$DB"
# a cache, a failing storage: the same bits twice
for i in 1 2; do
    expect 0 "$BIN" run "$GEO" --policy locality --no-db --json --set policies.locality.reread=true \
        --set 'dataset.caches=[{site: us, capacity: 500MB, policy: planned}]' \
        --set 'dataset.storage=[{site: asia, fails_at: 5s}]'
    cp "$T/out" "$T/run$i.json"
done
cmp -s "$T/run1.json" "$T/run2.json" && ok "deterministic" || bad "two runs differ"
has "$T/run1.json" '"cache.hits"'
has "$T/run1.json" '"data.samples_lost"'
# every kind of policy survives storages failing before and during the
# distribution (a participant whose samples were all lost still exchanges
# its model: C-ADP stalled on it once)
for p in cadp ddp localsgd asyncps hierarchical lbb locality; do
    for fa in 0s 3s; do
        expect 0 "$p storage fails at $fa" -- "$BIN" run "$GEO" --policy $p --no-db -q --set training.epochs=2 \
            --set "dataset.storage=[{site: eu, fails_at: $fa}, {site: asia, fails_at: $fa}]"
    done
done
# locality with device failures: re-planned, the same bits twice; reread refused there
for i in 1 2; do
    expect 0 "$BIN" run "$GEO" --policy locality --no-db --json --set availability.mtbf=200s \
        --set availability.mttr=60s
    cp "$T/out" "$T/fail$i.json"
done
cmp -s "$T/fail1.json" "$T/fail2.json" && ok "locality with failures deterministic" || bad "two runs differ"
has "$T/fail1.json" '"locality.samples_replanned"'
expect 2 "$BIN" run "$GEO" --policy locality --no-db --set availability.mtbf=200s --set availability.mttr=60s \
    --set policies.locality.reread=true
has "$T/err" "policies.locality.reread: re-reading is not modelled with device failures"
# check lists where the data is
expect 0 "$BIN" check "$GEO"
has "$T/out" "data     50000 at eu, 40000 at us (replicas: eu), 10000 at asia"
e2e_done e2e_data
