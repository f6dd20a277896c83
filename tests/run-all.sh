#!/usr/bin/env bash
# run-all.sh: the whole test suite, as the README's second command runs it.
#   1. the normal build (debugoptimized, warnings as errors): every unit test
#      and end-to-end test;
#   2. the sanitizer build (-Db_sanitize=address,undefined): the same suite;
#   3. valgrind over the end-to-end commands with the normal build's binary
#      (tests/valgrind.sh);
#   4. the release build (-O3, NDEBUG), compiled with warnings as errors:
#      optimisation enables warnings (-Wmaybe-uninitialized...) the other
#      builds do not see; it counts as one test.
# Prints one closing line "tests: N passed, M failed" over all three and
# exits non-zero if anything failed.
#
# It runs in a copy: the repository's files (git ls-files: tracked plus
# untracked-but-not-ignored, so uncommitted edits are tested; without git,
# the tree minus .git and build*/) are copied into a new empty temporary
# directory, and the three suites build and run there.  Nothing sits beside
# the copy, so a test that needs a file outside the repository (a
# team folder, a sibling checkout) fails here as it would on a user's
# fresh clone.  The copy is deleted afterwards (DPSIM_KEEP_COPY=1 keeps it).
#   tests/run-all.sh              run from a fresh standalone copy
#   tests/run-all.sh --in-place   run in this tree, reusing build/ and
#                                 build-asan/ (faster while developing)
set -uo pipefail
cd "$(dirname "$0")/.."

in_place=0
case "${1:-}" in
--in-place) in_place=1 ;;
"") ;;
*)
    echo "usage: tests/run-all.sh [--in-place]" >&2
    exit 2
    ;;
esac

if [ "$in_place" -eq 0 ]; then
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/dpsim-standalone.XXXXXX") || exit 1
    # Readable by all, as a clone is: e2e_hardening runs dpsim as another
    # user (read-only database case), which must still read the scenarios.
    chmod 755 "$tmp" || exit 1
    copy=$tmp/dpsim
    mkdir -m 755 "$copy" || exit 1
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1 && [ "$(git rev-parse --show-prefix)" = "" ]; then
        # Files deleted in the work tree but still in the index are skipped.
        git ls-files -z --cached --others --exclude-standard |
            while IFS= read -r -d '' f; do [ -f "$f" ] && printf '%s\0' "$f"; done |
            tar --null -T - -cf - | tar -xf - -C "$copy" || exit 1
    else
        tar --exclude=./.git --exclude='./build*' -cf - . | tar -xf - -C "$copy" || exit 1
    fi
    if [ "$(ls -A "$tmp")" != dpsim ]; then
        echo "run-all.sh: $tmp should hold only the copy" >&2
        exit 1
    fi
    echo "run-all.sh: testing a standalone copy of the repository in $copy"
    (cd "$copy" && tests/run-all.sh --in-place)
    rc=$?
    if [ "${DPSIM_KEEP_COPY:-0}" = 1 ]; then
        echo "run-all.sh: copy kept in $copy"
    else
        rm -rf "$tmp"
    fi
    exit "$rc"
fi

passed=0
failed=0
status=0

suite() { # suite BUILD_DIR [meson setup options...]
    local dir=$1
    shift
    if [ ! -f "$dir/build.ninja" ]; then
        meson setup "$dir" "$@" || return 1
    fi
    meson compile -C "$dir" || return 1
    local log
    log=$(mktemp)
    meson test -C "$dir" --print-errorlogs --num-processes 2 2>&1 | tee "$log"
    local rc=${PIPESTATUS[0]}
    local ok fail to
    ok=$(awk '/^Ok:/ {print $2}' "$log" | tail -n1)
    fail=$(awk '/^Fail:/ {print $2}' "$log" | tail -n1)
    to=$(awk '/^Timeout:/ {print $2}' "$log" | tail -n1)
    rm -f "$log"
    passed=$((passed + ${ok:-0}))
    failed=$((failed + ${fail:-0} + ${to:-0}))
    return "$rc"
}

suite build || status=1
# In the sanitizer suite e2e_hardening.sh also compares its --json byte for
# byte with the normal build's (both binaries are fresh by then).
export DPSIM_OTHER_BINS="$PWD/build/dpsim"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:strict_string_checks=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
suite build-asan -Db_sanitize=address,undefined -Db_lundef=false || status=1

vlog=$(mktemp)
tests/valgrind.sh "$PWD/build/dpsim" 2>&1 | tee "$vlog"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
vok=$(awk '/^valgrind:/ {print $2}' "$vlog" | tail -n1)
vfail=$(awk '/^valgrind:/ {print $4}' "$vlog" | tail -n1)
rm -f "$vlog"
passed=$((passed + ${vok:-0}))
failed=$((failed + ${vfail:-0}))

# Release: compile only (the suites above already ran the same code).
rlog=$(mktemp)
if { [ -f build-release/build.ninja ] || meson setup build-release --buildtype=release -Db_ndebug=true -Dtests=disabled; } >"$rlog" 2>&1 &&
    meson compile -C build-release >>"$rlog" 2>&1; then
    echo "release build: ok"
    passed=$((passed + 1))
else
    cat "$rlog"
    echo "release build: FAILED (meson compile -C build-release)"
    failed=$((failed + 1))
    status=1
fi
rm -f "$rlog"

if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then
    failed=1 # a build or setup step failed before any test could
fi
echo "tests: $passed passed, $failed failed"
exit "$status"
