# e2e_lib.sh: what the end-to-end scripts (tests/e2e_*.sh) share.  Each
# sources it first thing, from its own directory, so it works from any
# working directory and in tests/run-all.sh's copy of the tree:
#
#     . "$(dirname "${BASH_SOURCE[0]}")/e2e_lib.sh"
#
# It sets
#   BIN    the dpsim binary ($DPSIM_BIN, required; made absolute, so a
#          script may cd)
#   SRC    the source tree ($DPSIM_SRC, else the tree this file is in)
#   TINY   $SRC/scenarios/tiny.yaml
#   T      a new temporary directory, removed when the script exits, after
#          the script's own e2e_cleanup function if it defines one (to stop
#          a background process, unmount, ...)
#   pass, fail   the counts, and these helpers:
#
#   ok [NAME]        count a pass; NAME, if given, is printed as "ok   NAME"
#   bad MESSAGE      count a failure; "FAIL: MESSAGE" on stderr
#   expect CODE [NAME --] CMD...
#                    run CMD with stdout in $T/out and stderr in $T/err
#                    (under `timeout $E2E_TIMEOUT` when that is set); its exit
#                    code must be CODE.  A failure quotes the command (or
#                    NAME) and the start of its stderr.
#   has [-i] FILE TEXT   FILE contains TEXT (fixed string; -i: any case)
#   hasnt FILE TEXT      FILE does not contain TEXT
#   e2e_done NAME    print "NAME: P passed, F failed"; true only when F is 0
#                    (the script's last command, so it sets its exit code)

BIN=${DPSIM_BIN:?set DPSIM_BIN to the dpsim binary}
case $BIN in /*) ;; *) BIN=$PWD/$BIN ;; esac
SRC=${DPSIM_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
TINY=$SRC/scenarios/tiny.yaml
T=$(mktemp -d "${TMPDIR:-/tmp}/dpsim-e2e.XXXXXX")
e2e_exit() {
    if declare -F e2e_cleanup >/dev/null; then e2e_cleanup || true; fi
    rm -rf "$T"
}
trap e2e_exit EXIT
pass=0
fail=0

ok() {
    pass=$((pass + 1))
    if [ -n "${1:-}" ]; then echo "ok   $1"; fi
}
bad() {
    echo "FAIL: $*" >&2
    fail=$((fail + 1))
}
expect() {
    local want=$1 name=""
    shift
    if [ "${2:-}" = "--" ]; then
        name=$1
        shift 2
    fi
    local got=0
    if [ -n "${E2E_TIMEOUT:-}" ]; then
        timeout "$E2E_TIMEOUT" "$@" >"$T/out" 2>"$T/err" || got=$?
    else
        "$@" >"$T/out" 2>"$T/err" || got=$?
    fi
    if [ "$got" -eq "$want" ]; then
        ok "$name"
    else
        bad "${name:+$name: }exit $got (want $want): $* :: $(head -c 400 "$T/err")"
    fi
}
has() {
    local flags=-qF
    if [ "$1" = -i ]; then
        flags=-qiF
        shift
    fi
    if grep "$flags" -- "$2" "$1"; then ok; else bad "'$2' not in $1: $(head -c 400 "$1")"; fi
}
hasnt() {
    if grep -qF -- "$2" "$1"; then bad "'$2' in $1"; else ok; fi
}
e2e_done() {
    echo "$1: $pass passed, $fail failed"
    [ "$fail" -eq 0 ]
}
