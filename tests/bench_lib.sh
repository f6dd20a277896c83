# bench_lib.sh: what the shell benchmarks that time dpsim with GNU time
# (tests/bench_scale.sh, tests/bench_population.sh) share.  Each sets
# BENCH_NAME and sources it:
#
#     BENCH_NAME=bench_scale
#     . "$(dirname "${BASH_SOURCE[0]}")/bench_lib.sh"
#
# It sets TIME (GNU time: $TIME_BIN, default /usr/bin/time; exits 2 when
# it is missing) and TMP (a new temporary directory, removed on exit), and
# defines
#   median           stdin: one number a line; prints "median M (min, max, reps)"
#   bench NAME REPS CMD...
#                    runs CMD REPS times (output in $TMP/out; a failure shows
#                    it and exits 1) and prints NAME with the medians of CPU
#                    seconds (user + system), wall seconds and peak RSS (MB).
#                    A script's bench_before_rep function, if defined, runs
#                    before each repetition (e.g. to remove a database).
TIME=${TIME_BIN:-/usr/bin/time}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/${BENCH_NAME:?set BENCH_NAME}.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
[ -x "$TIME" ] || { echo "$BENCH_NAME: needs GNU time at $TIME (apt-get install time)" >&2; exit 2; }

median() { sort -g | awk '{ v[NR] = $1 } END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
                                             printf "median %.3g (min %.3g, max %.3g, %d reps)", m, v[1], v[NR], NR }'; }

bench() {
    local name=$1 reps=$2
    shift 2
    local cpu=() wall=() rss=()
    for _ in $(seq 1 "$reps"); do
        if declare -F bench_before_rep >/dev/null; then bench_before_rep; fi
        "$TIME" -f '%U %S %e %M' -o "$TMP/t" "$@" >"$TMP/out" 2>&1 || { cat "$TMP/out" >&2; exit 1; }
        read -r u s e m <"$TMP/t"
        cpu+=("$(echo "$u + $s" | bc)") wall+=("$e") rss+=("$m")
    done
    echo "$name"
    echo "  CPU s:   $(printf '%s\n' "${cpu[@]}" | median)"
    echo "  wall s:  $(printf '%s\n' "${wall[@]}" | median)"
    echo "  peak MB: $(printf '%s\n' "${rss[@]}" | awk '{ print $1 / 1024 }' | median)"
}
