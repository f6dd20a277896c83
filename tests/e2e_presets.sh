#!/usr/bin/env bash
# e2e_presets.sh: `preset: NAME` (sim/input/presets.yaml, sim/input/presets.h):
# `dpsim presets` lists every preset with a source; a preset-only scenario
# checks and runs with the expanded values, the same bits as the same
# scenario written out by hand; the scenario's own keys and --set win;
# stored runs keep the expanded values (rerun identical, no `preset:` in the
# stored text); an unknown preset is exit 2 with FILE:LINE:COL and a
# did-you-mean; every value of every preset names its source and none says
# "estimate"; a preset that leaves a value to the scenario (T4's efficiency,
# a Raspberry Pi's compute) is exit 2 naming the key until the scenario
# gives it.
. "$(dirname "${BASH_SOURCE[0]}")/e2e_lib.sh"

# sources_ok LISTING: every preset of a `dpsim presets` listing has a source
# line that names each of its numeric keys (kind and name are labels) as a
# word, and no source says "estimate"; prints what is wrong, fails if any.
sources_ok() {
    awk '
        function word(s, w) { return s ~ ("(^|[^a-z_])" w "([^a-z_]|$)") }
        /^  [a-z0-9]/ {
            if (pending) { print name ": no source"; bad = 1 }
            name = $1; keys = ""
            for (i = 2; i <= NF; i += 2) if ($i != "kind" && $i != "name") keys = keys " " $i
            pending = 1; next
        }
        /^ *source: / {
            src = $0; sub(/^ *source: /, "", src)
            if (tolower(src) ~ /estimat/) { print name ": its source says estimate"; bad = 1 }
            n = split(keys, k, " ")
            for (j = 1; j <= n; j++) if (!word(src, k[j])) { print name ": " k[j] " has no source"; bad = 1 }
            pending = 0; next
        }
        END { if (pending) { print name ": no source"; bad = 1 }; exit bad }' "$1"
}

expect 0 "dpsim presets" -- "$BIN" presets
for s in "devices (" "models (" "links (" a100-40gb a100-80gb h100 v100 t4 l4 rtx3090 rtx4090 jetson-orin \
    raspberry-pi-4 raspberry-pi-5 phone-high resnet50 wide-resnet101 vit-b16 bert-base bert-large gpt2-small \
    gpt2-medium decoder-7b dc-ethernet-25g lte 5g "wan (" azure-eastus-westeurope azure-westeurope-japaneast; do
    has "$T/out" "$s"
done
n_entries=$(grep -c '^  [a-z0-9]' "$T/out")
n_sources=$(grep -c '^ *source: [^(]' "$T/out")
[ "$n_entries" -gt 20 ] && [ "$n_entries" -eq "$n_sources" ] && ok "every preset cites a source ($n_sources)" ||
    bad "$n_entries presets, $n_sources sources"
cp "$T/out" "$T/listing"
why=$(sources_ok "$T/listing") && ok "every value of every preset names its source, none an estimate" ||
    bad "preset sources: $why"
# the check itself catches a value without a source and an estimate
sed '/^  a100-80gb/,/source:/s/efficiency: 2,470/speed: 2,470/' "$T/listing" >"$T/nosrc"
why=$(sources_ok "$T/nosrc") && bad "a value without a source passes" || {
    case $why in *"a100-80gb: efficiency has no source"*) ok "a value without a source is caught" ;;
        *) bad "a value without a source: $why" ;; esac
}
sed '/^  lte/,/source:/s/latency: half of 55 ms/latency: estimate/' "$T/listing" >"$T/est"
why=$(sources_ok "$T/est") && bad "an estimate passes" || {
    case $why in *"lte: its source says estimate"*) ok "an estimate is caught" ;; *) bad "an estimate: $why" ;; esac
}

cat >"$T/p.yaml" <<'Y'
name: presets-demo
model: { preset: resnet50 }
dataset: { samples: 5000, sample_bytes: 110KB }
training: { epochs: 1 }
sites: [eu, us]
wan:
  - { between: [eu, us], preset: azure-eastus-westeurope, bandwidth: 1Gbps }
devices:
  - { name: dc, preset: a100-80gb, count: 2, batch: 128, site: eu, link: { preset: dc-ethernet-25g } }
  - { name: edge, preset: jetson-orin, memory: 32GB, batch: 32, efficiency: 0.25, site: us, link: { preset: 5g } }
Y
cat >"$T/hand.yaml" <<'Y'
name: presets-demo
model: { name: resnet50, params: 25557032, flops_per_sample: 4.09e9 }
dataset: { samples: 5000, sample_bytes: 110KB }
training: { epochs: 1 }
sites: [eu, us]
wan:
  - { between: [eu, us], latency: 45ms, bandwidth: 1Gbps }
devices:
  - { name: dc, kind: gpu, memory: 80GB, peak_flops: 312TFLOPS, efficiency: 0.19, count: 2, batch: 128, site: eu,
      link: { up: 25Gbps, down: 25Gbps, latency: 250us } }
  - { name: edge, kind: gpu, memory: 32GB, peak_flops: 42.5TFLOPS, efficiency: 0.25, batch: 32, site: us,
      link: { up: 17.9Mbps, down: 186.3Mbps, latency: 25.5ms } }
Y
expect 0 "check a preset-only scenario" -- "$BIN" check "$T/p.yaml"
has "$T/out" "resnet50: 25557032 params"
has "$T/out" "memory 74.51 GiB"
has "$T/out" "link up 25 Gbps, down 25 Gbps, latency 250 us"
has "$T/out" "link up 17.9 Mbps, down 186.3 Mbps, latency 25.5 ms"
has "$T/out" "eu-us: 1 Gbps, latency 45 ms"
# and which values the presets filled in, the scenario's own named
has "$T/out" "presets (dpsim presets"
has "$T/out" "devices[0] (dc): a100-80gb: kind gpu, memory 80GB, peak_flops 312TFLOPS, efficiency 0.19"
has "$T/out" "devices[1] (edge): jetson-orin: kind gpu, peak_flops 42.5TFLOPS; the scenario's own: memory"
has "$T/out" "wan[0]: azure-eastus-westeurope: latency 45ms"
"$BIN" check "$T/hand.yaml" | tail -n +2 >"$T/hand.check"
"$BIN" check "$T/p.yaml" | tail -n +2 | sed '/^presets (dpsim presets/,$d' >"$T/p.check"
cmp -s "$T/hand.check" "$T/p.check" && ok "check: presets = the values written by hand" ||
    bad "check differs: $(diff "$T/hand.check" "$T/p.check" | head -5)"
"$BIN" run "$T/p.yaml" --policy ddp,cadp --json --no-db -q >"$T/p.json"
"$BIN" run "$T/hand.yaml" --policy ddp,cadp --json --no-db -q >"$T/hand.json"
cmp -s "$T/p.json" "$T/hand.json" && ok "run: presets = the values written by hand, bit for bit" || bad "run JSON differs"

expect 0 "--set wins over a preset" -- "$BIN" check "$T/p.yaml" --set devices.dc.memory=40GB
has "$T/out" "memory 37.25 GiB"

expect 0 "run and store" -- "$BIN" run "$T/p.yaml" --policy cadp --db "$T/r.db" -q
expect 0 "rerun a preset run" -- "$BIN" rerun 1 --db "$T/r.db"
has "$T/out" "identical"
sqlite3 "$T/r.db" "SELECT text FROM scenarios" >"$T/stored" 2>/dev/null || "$BIN" export --csv --out "$T/csv" --db "$T/r.db"
if [ -s "$T/stored" ]; then
    hasnt "$T/stored" "preset:"
    has "$T/stored" "peak_flops: 312TFLOPS"
fi

# a preset that leaves a value to the scenario: exit 2 naming the key until
# the scenario gives it
sed 's/preset: a100-80gb/preset: t4/' "$T/p.yaml" >"$T/t4.yaml"
expect 2 "the T4 preset without the scenario's efficiency" -- "$BIN" check "$T/t4.yaml"
has "$T/err" "t4.yaml:9:"
has "$T/err" "missing required key 'efficiency'"
sed 's/preset: a100-80gb,/preset: t4, efficiency: 0.3,/' "$T/p.yaml" >"$T/t4e.yaml"
expect 0 "the T4 preset with the scenario's efficiency" -- "$BIN" check "$T/t4e.yaml"
has "$T/out" "devices[0] (dc): t4: kind gpu, memory 16GB, peak_flops 65TFLOPS"
sed 's/preset: a100-80gb/preset: raspberry-pi-4/' "$T/p.yaml" >"$T/pi.yaml"
expect 2 "a Raspberry Pi preset without the scenario's compute" -- "$BIN" check "$T/pi.yaml"
has "$T/err" "pi.yaml:9:"
has "$T/err" "give exactly one compute model"

sed 's/a100-80gb/a100-80gbb/' "$T/p.yaml" >"$T/bad.yaml"
expect 2 "unknown preset" -- "$BIN" check "$T/bad.yaml"
has "$T/err" "bad.yaml:9:"
has "$T/err" "devices[0].preset: unknown device preset, did you mean 'a100-80gb'?"
# a WAN preset gives the latency only: the bandwidth is the scenario's
sed 's/, bandwidth: 1Gbps//' "$T/p.yaml" >"$T/nobw.yaml"
expect 2 "a WAN preset without the scenario's bandwidth" -- "$BIN" check "$T/nobw.yaml"
has "$T/err" "nobw.yaml:7:"
has "$T/err" "missing required key 'bandwidth'"
e2e_done e2e_presets
