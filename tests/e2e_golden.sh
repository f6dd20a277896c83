#!/usr/bin/env bash
# e2e_golden.sh: the shipped scenarios' numbers, byte for byte.
# tests/golden/ holds the --json output of `reproduce table3`, of every
# policy on scenarios/tiny.yaml and scenarios/geo-3sites.yaml, and the table
# of a small sweep.  A commit that changes any of them must say which
# figure moved and why (regenerate with DPSIM_GOLDEN_UPDATE=1).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/e2e_lib.sh"
G=$SRC/tests/golden
same() { # same GOLDEN_NAME FILE
    if [ "${DPSIM_GOLDEN_UPDATE:-0}" = 1 ]; then
        cp "$2" "$G/$1"
    elif ! cmp -s "$G/$1" "$2"; then
        echo "FAIL: $1 differs from the golden output:" >&2
        diff <(tr ',' '\n' <"$G/$1") <(tr ',' '\n' <"$2") | head -20 >&2 || true
        fail=$((fail + 1))
    fi
}
"$BIN" reproduce table3 --out "$T/t3" --db "$T/t3.db" --json >"$T/t3.json" 2>"$T/err"
same t3.json "$T/t3.json"
for sc in tiny geo-3sites; do
    for p in ddp deepspeed cadp; do
        "$BIN" run "$SRC/scenarios/$sc.yaml" --policy "$p" --json --db "$T/r.db" >"$T/$sc-$p.json" 2>"$T/err"
        same "$sc-$p.json" "$T/$sc-$p.json"
    done
done
"$BIN" sweep "$SRC/scenarios/tiny.yaml" --vary devices.cpu.link.down=1Mbps..100Mbps:log:3 \
    --vary devices.gpu.count=1..2 --policy ddp,deepspeed,cadp --jobs 2 --db "$T/sw.db" 2>"$T/err" |
    grep -v '^this run\|^$' | sed "s|$T/||" >"$T/sweep-tiny.txt"
same sweep-tiny.txt "$T/sweep-tiny.txt"
[ "$fail" -eq 0 ] && echo "golden: all outputs identical"
exit "$fail"
