#!/bin/bash
# engine_vs.sh: the event queue now against an earlier commit's, paired.
#
# Builds tests/bench_engine.c twice, once with this tree's sim/core/engine.c
# and once with REV's (its engine.c, engine.h and, where it has one,
# sim/base/dp_heap.h), the rest of the library from BUILD, and runs the two
# in turn RUNS times at each size: the hold model's median M events/s
# (processor time) for each and the ratio of medians, so a regression of the
# queue shows as a ratio (issue 39: "the event queue 18% slower at 10^6
# pending", measured against the engine before the chunked lists).
#
# Usage: tests/bench/engine_vs.sh REV [PENDING...]   (default 1000 10000 1000000)
# Environment: BUILD (default build), RUNS (default 5), STEPS (default 2000000),
# CC (default cc).  Run from the source root, after `meson compile -C BUILD`.
set -euo pipefail

rev=${1:?usage: engine_vs.sh REV [PENDING...]}
shift
sizes=("$@")
[ ${#sizes[@]} -eq 0 ] && sizes=(1000 10000 1000000)
BUILD=${BUILD:-build}
RUNS=${RUNS:-5}
STEPS=${STEPS:-2000000}
CC=${CC:-cc}
for val in "$RUNS" "$STEPS" "${sizes[@]}"; do
    if ! [[ $val =~ ^[1-9][0-9]*$ ]]; then
        echo "engine_vs.sh: RUNS, STEPS and PENDING must be positive integers (got '$val')" >&2
        exit 2
    fi
done
lib=$BUILD/libdpsim.a
[ -f "$lib" ] || {
    echo "engine_vs.sh: $lib not found: run meson compile -C $BUILD first" >&2
    exit 2
}
git rev-parse --verify --quiet "$rev^{commit}" >/dev/null || {
    echo "engine_vs.sh: '$rev' is not a commit" >&2
    exit 2
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/old" "$tmp/new"
git show "$rev:sim/core/engine.c" >"$tmp/old/engine.c"
git show "$rev:sim/core/engine.h" >"$tmp/old/engine.h"
git show "$rev:sim/base/dp_heap.h" >"$tmp/old/dp_heap.h" 2>/dev/null || rm -f "$tmp/old/dp_heap.h"
cp sim/core/engine.c sim/core/engine.h sim/base/dp_heap.h "$tmp/new/"
# the flags of meson's debugoptimized build, which the figures quote
flags=(-std=c11 -O2 -g -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -I"$BUILD" -Isim/base -Isim -Isim/core)
libs=$(pkg-config --libs gsl sqlite3 yaml-0.1 zlib)
for side in old new; do
    "$CC" "${flags[@]}" -I"$tmp/$side" -c "$tmp/$side/engine.c" -o "$tmp/$side/engine.o"
    "$CC" "${flags[@]}" -I"$tmp/$side" -c tests/bench_engine.c -o "$tmp/$side/bench.o"
    # shellcheck disable=SC2086
    "$CC" "$tmp/$side/bench.o" "$tmp/$side/engine.o" "$lib" $libs -lm -pthread -o "$tmp/$side/bench_engine"
done

median() {
    sort -g | awk '{a[NR] = $1} END {if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2}'
}
rate() { # the median events/s bench_engine printed, in M
    awk '{for (i = 1; i < NF; i++) if ($i == "median") print $(i + 1)}'
}
echo "hold model, $STEPS timed events, $RUNS runs in turn; median M events/s (processor time)"
printf '| pending | %s | this tree | this / %s |\n|---:|---:|---:|---:|\n' "$rev" "$rev"
for P in "${sizes[@]}"; do
    for ((r = 0; r < RUNS; r++)); do
        "$tmp/old/bench_engine" "$P" "$STEPS" 1 | rate >>"$tmp/r.$P.old"
        "$tmp/new/bench_engine" "$P" "$STEPS" 1 | rate >>"$tmp/r.$P.new"
    done
    o=$(median <"$tmp/r.$P.old")
    n=$(median <"$tmp/r.$P.new")
    printf '| %s | %.2f | %.2f | %.2f |\n' "$P" "$o" "$n" "$(awk -v a="$n" -v b="$o" 'BEGIN {print a / b}')"
done
