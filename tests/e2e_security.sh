#!/usr/bin/env bash
# e2e_security.sh: untrusted input that is not a scenario's values (issue 38):
#  - files a scenario names that are not CSV tables or traces (a password
#    file): refused without quoting a byte of them; a line of a real trace
#    that is wrong is quoted as a short escaped excerpt only;
#  - crafted databases: a NULL status, options that are not JSON or spoof a
#    trace, terminal escapes in stored names: `export --trace` and `show
#    --json` fail cleanly, `runs`, `show`, `rerun` and `plot` print no raw
#    escape byte;
#  - plots: into a missing directory (an error naming it, never the image's
#    bytes), onto a full disk (an error, no file), a gnuplot whose output is
#    binary (not quoted).
# Inputs: tests/regress/issue38/.  Env: DPSIM_BIN, DPSIM_SRC.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/e2e_lib.sh"
R=$SRC/tests/regress/issue38

if ! command -v sqlite3 >/dev/null 2>&1; then
    echo "e2e_security: the sqlite3 command-line shell is required (install the sqlite3 package)" >&2
    echo "0 passed, 1 failed"
    exit 1
fi
e2e_cleanup() {
    if mountpoint -q "$T/small" 2>/dev/null; then umount "$T/small"; fi
}
# no_raw FILE: FILE holds no ESC, BEL or other C0 control byte (newlines and
# tabs aside) and no byte of the secret.
no_raw() {
    if LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' "$1"; then bad "raw control bytes in $1: $(head -c 300 "$1" | cat -v)"; else ok; fi
}

# --- files that are not what a scenario says they are -----------------------
# secret.txt is a password file (root's line with a hash field).
for s in table-secret trace-secret avail-secret; do
    expect 2 "$s: exit 2" -- "$BIN" check "$R/$s.yaml"
    hasnt "$T/err" "SECRETHASH"
    hasnt "$T/err" "root:"
    has "$T/err" "secret.txt"
done
# A trace whose header is right and whose third line is not: a short
# escaped excerpt of that line, not the line.
expect 2 "a bad trace line: exit 2" -- "$BIN" check "$R/trace-bad-line.yaml"
has "$T/err" "trace-bad-line.csv:5:1: expected two columns time_s,value (got 'root:"
hasnt "$T/err" "TAILOFTHELINE"
no_raw "$T/err"

# --- crafted databases --------------------------------------------------------
"$BIN" run "$TINY" -p ddp,cadp -q --db "$T/base.db" >/dev/null
# A runs table without its NOT NULL constraints, as a crafted file may have.
loosen() { sqlite3 "$1" "CREATE TABLE r2 AS SELECT * FROM runs; DROP TABLE runs; ALTER TABLE r2 RENAME TO runs;"; }
cp "$T/base.db" "$T/null.db"
loosen "$T/null.db"
sqlite3 "$T/null.db" "UPDATE runs SET status = NULL WHERE id = 1"
expect 2 "export --trace, NULL status: exit 2, no crash" -- "$BIN" export --trace 1 --out "$T/t.json" --db "$T/null.db"
has "$T/err" "failed and has no timeline"
for bad in '{}, "traceEvents": [{"ph": "X"}]' 'not json' '[1, 2]'; do
    cp "$T/base.db" "$T/json.db"
    sqlite3 "$T/json.db" "UPDATE runs SET options_json = '$(printf '%s' "$bad" | sed "s/'/''/g")' WHERE id = 1"
    expect 1 "export --trace, options '$bad': exit 1" -- "$BIN" export --trace 1 --out "$T/t.json" --db "$T/json.db"
    has "$T/err" "not a JSON object"
    [ ! -e "$T/t.json" ] && [ ! -e "$T/t.json.part" ] && ok || bad "export --trace left a file for options '$bad'"
    expect 1 "show --json, options '$bad': exit 1" -- "$BIN" show 1 --json --db "$T/json.db"
    hasnt "$T/out" "traceEvents"
done
cp "$T/base.db" "$T/ovr.db"
sqlite3 "$T/ovr.db" "UPDATE runs SET overrides_json = '[\"a=1\"]]' WHERE id = 1"
expect 1 "export --trace, overrides not JSON: exit 1" -- "$BIN" export --trace 1 --out "$T/t.json" --db "$T/ovr.db"
has "$T/err" "overrides are not a JSON list"
# Terminal escapes in stored names.
cp "$T/base.db" "$T/esc.db"
sqlite3 "$T/esc.db" "UPDATE scenarios SET name = 'sc' || char(27) || ']0;PWNED' || char(7) || char(27) || '[31mRED';
    UPDATE runs SET policy = 'ddp' || char(27) || '[2J' WHERE id = 1;
    UPDATE run_devices SET name = 'dev' || char(27) || '[5m' WHERE run_id = 2;
    UPDATE run_stats SET name = 'st' || char(27) || '[1m' WHERE run_id = 2;"
for cmd in "runs" "show 1" "show 2" "rerun 2" "plot compare --out $T/p.png" "plot timeline --run 2 --out $T/p.png"; do
    # shellcheck disable=SC2086
    "$BIN" $cmd --db "$T/esc.db" >"$T/out" 2>"$T/err" || true
    cat "$T/out" "$T/err" >"$T/both"
    no_raw "$T/both"
done
"$BIN" runs --db "$T/esc.db" >"$T/out"
has "$T/out" 'sc\x1b]0;PWNED\x07\x1b[31mRED'

# --- plots ----------------------------------------------------------------------
if command -v gnuplot >/dev/null 2>&1; then
    expect 1 "plot into a missing directory: exit 1" -- "$BIN" plot compare --out "$T/nodir/p.png" --db "$T/base.db"
    has "$T/err" "directory '$T/nodir'"
    no_raw "$T/err"
    if LC_ALL=C grep -q $'[\x80-\xff]' "$T/err"; then bad "bytes of the image in the message"; else ok; fi
    # A full disk: gnuplot exits 0 with the PNG cut short; dpsim says so.
    mkdir "$T/small"
    if [ "$(id -u)" -eq 0 ] && mount -t tmpfs -o size=16k tmpfs "$T/small" 2>/dev/null; then
        head -c $((12 * 1024)) /dev/zero >"$T/small/fill" 2>/dev/null || true # 4 KiB left
        for ext in png svg pdf; do
            expect 1 "plot onto a full disk (.$ext): exit 1" -- "$BIN" plot compare --out "$T/small/p.$ext" --db "$T/base.db"
            [ ! -e "$T/small/p.$ext" ] && [ ! -e "$T/small/p.$ext.part" ] && ok || bad "a cut .$ext left behind"
        done
        umount "$T/small"
    else
        echo "e2e_security: cannot mount a tmpfs here; the full-disk plot is not checked" >&2
    fi
fi
# A "gnuplot" that writes binary to its stdout and fails: not quoted.
printf '#!/bin/sh\ncat >/dev/null\nprintf "\\211PNG\\r\\n\\032\\n\\033[2J\\000\\377"\nexit 1\n' >"$T/fakegp"
chmod +x "$T/fakegp"
DPSIM_GNUPLOT="$T/fakegp" expect 1 "a gnuplot failing with binary output: exit 1" -- \
    "$BIN" plot compare --out "$T/q.png" --db "$T/base.db"
has "$T/err" "bytes of output that is not text"
no_raw "$T/err"

e2e_done e2e_security
