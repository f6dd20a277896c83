#!/usr/bin/env bash
# valgrind.sh: the end-to-end commands under valgrind on the tiny scenario:
# no invalid read or write, no use of uninitialised values, no definite
# leak.  Uses the normal build's binary (valgrind and ASan do not mix).
#   tests/valgrind.sh [DPSIM_BINARY]      (default build/dpsim)
# Prints "valgrind: N passed, M failed"; exits non-zero if any failed.
set -uo pipefail
cd "$(dirname "$0")/.."
SRC=$PWD
BIN=$(realpath "${1:-$SRC/build/dpsim}")
command -v valgrind >/dev/null || { echo "valgrind.sh: valgrind is not installed" >&2; exit 1; }
[ -x "$BIN" ] || { echo "valgrind.sh: no binary at $BIN" >&2; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
TINY=$SRC/scenarios/tiny.yaml
pass=0
fail=0
# vg WANT_EXIT ARGS...: dpsim ARGS under valgrind; 99 = a valgrind error.
# $VG_EXTRA: more valgrind options for one command.
VG_EXTRA=
vg() {
    local want=$1
    shift
    local got=0
    (cd "$SRC/scenarios" && timeout 600 valgrind -q --error-exitcode=99 --leak-check=full \
        --errors-for-leak-kinds=definite --track-origins=yes $VG_EXTRA "$BIN" "$@") >"$T/out" 2>"$T/err" || got=$?
    if [ "$got" -eq "$want" ]; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL (exit $got, want $want): dpsim $*" >&2
        grep -E '^==[0-9]+==' "$T/err" | head -n 30 >&2
    fi
}
DB=$T/r.db
vg 0 --help
vg 0 check "$TINY"
vg 0 check builtin:paper-testbed
vg 2 check "$T/missing.yaml"
vg 2 check "$SRC/tests/data/billion-laughs.yaml"
vg 2 check "$TINY" --set devices.nope.count=3
vg 0 check geo-3sites.yaml
vg 0 solve "$TINY" --json
vg 0 solve builtin:paper-testbed
vg 0 run "$TINY" --db "$DB"
vg 0 run "$TINY" --json --no-db --policy cadp,ddp --set policies.ddp.collective=analytic
vg 0 run "$TINY" --db "$DB" --policy deepspeed --set policies.deepspeed.stage=3 --seed 9
vg 2 run "$TINY" --no-db --set training.epochs=1000000000
vg 0 runs --db "$DB"
vg 0 show 1 --db "$DB"
vg 2 show 999 --db "$DB"
vg 0 rerun 2 --db "$DB"
vg 0 export --csv --out "$T/exp" --db "$DB"
# a run that keeps its traces, re-run after one changed and one was deleted
mkdir -p "$T/geo/scenarios" "$T/geo/traces"
cp "$SRC/scenarios/geo-3sites.yaml" "$T/geo/scenarios/" && cp "$SRC"/traces/*.csv "$T/geo/traces/"
vg 0 run "$T/geo/scenarios/geo-3sites.yaml" --db "$T/g.db" --policy cadp
echo "600,1" >>"$T/geo/traces/verizon-lte-down-1s.csv" && rm "$T/geo/traces/step-50-100Mbps.csv"
vg 0 rerun 1 --db "$T/g.db"
printf 'not a database at all\n' >"$T/junk.db"
vg 1 run "$TINY" --db "$T/junk.db" --policy cadp
vg 0 plot compare --db "$DB" --out "$T/c.svg"
vg 0 plot timeline --db "$DB" --out "$T/t.svg"
vg 0 sweep "$TINY" --db "$DB" --jobs 1 --policy cadp --vary devices.cpu.link.down=1Mbps..100Mbps:log:3
for f in "$SRC"/tests/regress/*.yaml; do
    [ -f "$f" ] && vg 2 check "$f"
done
echo "valgrind: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
