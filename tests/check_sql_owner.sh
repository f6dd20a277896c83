#!/usr/bin/env bash
# check_sql_owner.sh: the store is the one owner of SQL (sim/store/README.md).
#  - no source under plots/ names sqlite3 at all: the plots read through the
#    store's typed functions (store.h);
#  - <sqlite3.h> is included by sim/store's own files only, and of the
#    headers only by its internal sim/store/store_sql.h (and store_impl.h,
#    the core files' private header, which includes it);
#  - no public header mentions sqlite3 (no handle or statement type leaks
#    out through a declaration; the tests' own headers are not public);
#  - store_sql.h is included only by sim/store and the tests that build
#    rows by hand (their files and their fixture headers).
# Reads the tree this script is in; needs no build.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
fail=0
bad() {
    echo "FAIL: $*" >&2
    fail=$((fail + 1))
}
sources() { find sim plots solver tests -name '*.[ch]' -not -path '*/build*' | sort; }

hits=$(grep -il 'sqlite' plots/*.[ch] || true)
[ -z "$hits" ] || bad "plots/ names sqlite3 (read through store.h instead): $hits"

for f in $(sources); do
    if grep -q '^[[:space:]]*#[[:space:]]*include[[:space:]]*<sqlite3\.h>' "$f"; then
        case $f in
        sim/store/*.c | sim/store/store_sql.h) ;;
        *) bad "$f includes <sqlite3.h> (only sim/store's files and store_sql.h may)" ;;
        esac
    fi
    case $f in
    tests/*.h) ;; # a test's fixture, not a public header
    *.h)
        if [ "$f" != sim/store/store_sql.h ] && [ "$f" != sim/store/store_impl.h ] &&
            grep -q 'sqlite3[_ *]' "$f"; then
            bad "$f declares something of SQLite's (a public header must not)"
        fi
        ;;
    esac
    if grep -q '#[[:space:]]*include[[:space:]]*"\(store/\)\?store_sql\.h"' "$f"; then
        case $f in
        sim/store/*.c | sim/store/store_impl.h | tests/*.c | tests/*.h) ;;
        *) bad "$f includes the store's internal store_sql.h" ;;
        esac
    fi
done
n=$(sources | wc -l)
[ "$n" -gt 50 ] || bad "found only $n source files under $ROOT: is this the tree?"

echo "check_sql_owner: $n files read, $fail failed"
[ "$fail" -eq 0 ]
