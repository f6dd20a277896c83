#!/usr/bin/env bash
# e2e_plot.sh: `dpsim plot` end to end with the real binary and gnuplot.
# Each kind from a database made here gives a valid file; hostile names run
# nothing; no gnuplot on PATH (or DPSIM_GNUPLOT pointing nowhere) is a clear
# message and exit 1 with the database untouched; bad usage is exit 2.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/e2e_lib.sh"

# valid FILE: the signature its extension promises and a non-trivial size
valid() {
    local f=$1 size
    [[ -f $f ]] || return 1
    size=$(stat -c %s "$f")
    ((size > 5000)) || return 1
    [[ ! -e $f.part ]] || return 1
    case $f in
    *.png) [[ $(head -c 8 "$f" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]] ;;
    *.svg) grep -q '<svg' "$f" ;;
    *.pdf) [[ $(head -c 5 "$f") == %PDF- ]] ;;
    *) return 1 ;;
    esac
}

DB=$T/r.db
"$BIN" run "$SRC/scenarios/tiny.yaml" --db "$DB" -q >/dev/null

# every kind that needs plain runs, in every format
for kind in compare flops timeline; do
    for ext in png svg pdf; do
        expect 0 "$kind .$ext" -- "$BIN" plot "$kind" --db "$DB" --out "$T/$kind.$ext"
        if valid "$T/$kind.$ext"; then ok "$kind .$ext is a valid file"; else bad "$kind .$ext is not a valid file"; fi
    done
done
expect 0 "timeline --run 1 --log options" -- "$BIN" plot timeline --run 1 --db "$DB" --out "$T/t1.png"
expect 0 "compare --linear" -- "$BIN" plot compare --linear --db "$DB" --out "$T/lin.png"
valid "$T/lin.png" && ok "compare --linear file" || bad "compare --linear file"

# sweep and mix: sweep rows written with sqlite3 (the sweep command is
# separate), two keys, two policies, three seeds
if command -v sqlite3 >/dev/null; then
    sqlite3 "$DB" "INSERT INTO sweeps(scenario_id, spec_json, created_at) VALUES (1, '{\"e2e\":1}', '2026');"
    for pol in ddp cadp; do
        for bw in 1Mbps 10Mbps 100Mbps 1Gbps; do
            for n in 0 1 2; do
                for seed in 1 2 3; do
                    sqlite3 "$DB" "INSERT INTO runs(scenario_id, policy, options_json, overrides_json, seed, version,
                      started_at, wall_s, status, sweep_id, point_json, tsend_s, ttraining_s, ttotal_s, tflops,
                      utilization, samples_processed, bytes_total, events, bin_s)
                      VALUES (1, '$pol', '{}', '[]', $seed, 'e2e', '2026', 0, 'ok', 1,
                      '{\"devices.cpu.link.down\":\"$bw\",\"devices.gpu.count\":\"$n\"}', 1, 10, 11 + $seed + $n * 3,
                      0.5, 0.4, 100, 100, 10, 1);"
                done
            done
        done
    done
    for ext in png svg pdf; do
        expect 0 "sweep .$ext" -- "$BIN" plot sweep --db "$DB" --out "$T/sweep.$ext"
        valid "$T/sweep.$ext" && ok "sweep .$ext is a valid file" || bad "sweep .$ext is not a valid file"
        expect 0 "mix .$ext" -- "$BIN" plot mix --db "$DB" --out "$T/mix.$ext"
        valid "$T/mix.$ext" && ok "mix .$ext is a valid file" || bad "mix .$ext is not a valid file"
    done
    expect 0 "sweep on the other key" -- "$BIN" plot sweep -x devices.gpu.count -m tflops --db "$DB" --out "$T/s2.png"
    expect 2 "sweep with an unknown key" -- "$BIN" plot sweep -x nosuch --db "$DB" --out "$T/s3.png"
    grep -q "devices.cpu.link.down" "$T/err" && ok "unknown key lists the keys" || bad "unknown key lists the keys"
else
    echo "skip sweep/mix: no sqlite3 command"
fi

# hostile names: a scenario name and a title that try to run commands
EVIL=$T/evil.yaml
sed "s|^name: tiny\$|name: \"it's \\\\\"fast\\\\\"'; system \\\\\"touch $T/pwned1\\\\\"; ' \`touch $T/pwned2\` {x}^2_@y\"|" \
    "$SRC/scenarios/tiny.yaml" >"$EVIL"
grep -q "pwned1" "$EVIL" || bad "evil scenario was not written"
"$BIN" run "$EVIL" --db "$T/evil.db" -q >/dev/null
for kind in compare flops timeline; do
    expect 0 "hostile scenario name: $kind" -- "$BIN" plot "$kind" --db "$T/evil.db" --out "$T/evil-$kind.png" \
        --title "t'\"; system \"touch $T/pwned3\"; print \"'"
    valid "$T/evil-$kind.png" && ok "hostile $kind renders" || bad "hostile $kind renders"
done
expect 0 "output file name with a quote" -- "$BIN" plot compare --db "$DB" --out "$T/it's.png"
valid "$T/it's.png" && ok "file with a quote in its name" || bad "file with a quote in its name"
if compgen -G "$T/pwned*" >/dev/null; then bad "a name ran a command"; else ok "no name ran a command"; fi

# no gnuplot: message, exit 1, database untouched
sum_before=$(cat "$DB"* | md5sum)
mkdir "$T/empty"
expect 1 "no gnuplot on PATH" -- env PATH="$T/empty" "$BIN" plot compare --db "$DB" --out "$T/nogp.png"
grep -q "gnuplot not found" "$T/err" && grep -q "apt-get install gnuplot-nox" "$T/err" &&
    ok "no gnuplot: message with the install hint" || bad "no gnuplot: message with the install hint"
[[ ! -e $T/nogp.png ]] && ok "no gnuplot: no file" || bad "no gnuplot: no file"
expect 1 "DPSIM_GNUPLOT=/nonexistent" -- env DPSIM_GNUPLOT=/nonexistent "$BIN" plot flops --db "$DB" --out "$T/x.png"
grep -q "/nonexistent" "$T/err" && ok "DPSIM_GNUPLOT named in the message" || bad "DPSIM_GNUPLOT named in the message"
printf '#!/bin/sh\ncat >/dev/null\necho "gnuplot: fake failure" >&2\nexit 1\n' >"$T/fail.sh"
chmod +x "$T/fail.sh"
expect 1 "failing gnuplot" -- env DPSIM_GNUPLOT="$T/fail.sh" "$BIN" plot timeline --db "$DB" --out "$T/f.png"
grep -q "fake failure" "$T/err" && ok "gnuplot's stderr is quoted" || bad "gnuplot's stderr is quoted"
printf '#!/bin/sh\nexit 0\n' >"$T/quit.sh"
chmod +x "$T/quit.sh"
expect 1 "gnuplot exiting at once" -- env DPSIM_GNUPLOT="$T/quit.sh" "$BIN" plot timeline --db "$DB" --out "$T/q.png"
[[ $(cat "$DB"* | md5sum) == "$sum_before" ]] && ok "database untouched" || bad "database untouched"

# usage
expect 2 "unknown kind" -- "$BIN" plot pie --db "$DB" --out "$T/p.png"
expect 2 "missing --out" -- "$BIN" plot compare --db "$DB"
expect 2 "unknown extension" -- "$BIN" plot compare --db "$DB" --out "$T/p.jpg"
expect 2 "no such run" -- "$BIN" plot timeline --run 999 --db "$DB" --out "$T/p.png"
expect 2 "bad metric" -- "$BIN" plot sweep --metric speed --db "$DB" --out "$T/p.png"
expect 0 "help" -- "$BIN" plot --help
grep -q "more than two decades" "$T/out" && ok "help explains the log scale" || bad "help explains the log scale"
expect 2 "no such database (bad input, issue 37)" -- "$BIN" plot compare --db "$T/none.db" --out "$T/p.png"

# staleness: asyncps under two bounds, and a database whose runs have no histogram
SDB="$T/stale.db"
for b in -1 0; do
    "$BIN" run "$SRC/scenarios/tiny.yaml" --policy asyncps --set policies.asyncps.max_staleness=$b --db "$SDB" -q \
        >/dev/null 2>&1
done
expect 0 "staleness plot" -- "$BIN" plot staleness --db "$SDB" --run 1 --run 2 --out "$T/stale.png"
valid "$T/stale.png" && ok "staleness plot is a valid png" || bad "staleness plot is a valid png"
"$BIN" run "$SRC/scenarios/tiny.yaml" --policy ddp --db "$T/ddp.db" -q >/dev/null 2>&1
expect 2 "staleness without histograms" -- "$BIN" plot staleness --db "$T/ddp.db" --out "$T/s2.png"
grep -q "no staleness histogram\|none of the selected runs has a staleness" "$T/err" && ok "says why" || bad "says why"

e2e_done e2e_plot
