#!/usr/bin/env bash
# e2e_readme.sh: the README's "Using it" commands, read from README.md (as
# .ci/run reads the setup and test commands) and run as written, in order,
# in a fresh directory laid out like a clone (scenarios/, traces/ and
# ./build/dpsim), so the README cannot drift from the binary.  Each must
# exit 0.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/e2e_lib.sh"
mkdir -p "$T/clone/build"
cp -r "$SRC/scenarios" "$SRC/traces" "$T/clone/"
ln -s "$BIN" "$T/clone/build/dpsim"
# The indented lines of the "## Using it" section up to the next blank line
# after them; a line ending in a backslash continues on the next.
awk '/^## Using it/ {on = 1; next} on && /^## / {exit}
     on && /^    / {sub(/^    /, ""); line = line $0; if (line ~ /\\$/) {sub(/\\$/, "", line); next}
                     print line; line = ""}' "$SRC/README.md" >"$T/commands"
n=$(wc -l <"$T/commands")
[ "$n" -ge 10 ] || { echo "FAIL: found only $n commands in README.md's 'Using it'" >&2; exit 1; }
cd "$T/clone"
while IFS= read -r cmd; do
    if bash -c "$cmd" >"$T/out" 2>"$T/err" </dev/null; then
        ok
    else
        bad "README command exited $?: $cmd :: $(head -c 400 "$T/err")"
    fi
done <"$T/commands"
echo "e2e_readme: $pass of $n README commands ran, $fail failed"
[ "$fail" -eq 0 ]
