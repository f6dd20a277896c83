#!/usr/bin/env bash
# e2e_libapi.sh: libdpsim.so as a user meets it.  Installs the build into a
# temporary prefix (meson install --destdir), then, through the installed
# pkg-config file alone:
#   - the installed dpsim.h compiles with -Wall -Wextra -pedantic -Werror in
#     C11 and in C++17;
#   - libapi_smoke.c builds against it, runs tiny.yaml, reads results as
#     structs, errors with their fields, runs in two threads;
#   - its JSON is byte for byte `dpsim run --json`'s, for every policy;
#   - the library's soname is versioned and it exports dpsim_* alone.
# Needs DPSIM_BUILD (the build directory; meson's test environment sets it).
. "$(dirname "${BASH_SOURCE[0]}")/../e2e_lib.sh"

build=${DPSIM_BUILD:?DPSIM_BUILD: the meson build directory}
root=$T/root
meson install -C "$build" --destdir "$root" --no-rebuild --quiet >"$T/install.log" 2>&1 ||
    { cat "$T/install.log" >&2; bad "meson install --destdir"; e2e_done libapi; exit 1; }
pc=$(find "$root" -name dpsim.pc | head -n1)
[ -n "$pc" ] && ok "dpsim.pc installed" || bad "no dpsim.pc under $root"
export PKG_CONFIG_PATH=$(dirname "$pc")
# The .pc names the real prefix; the sysroot puts the temp root before it.
export PKG_CONFIG_SYSROOT_DIR=$root
cflags=$(pkg-config --cflags dpsim) && libs=$(pkg-config --libs dpsim) &&
    ok "pkg-config dpsim" || bad "pkg-config dpsim failed"
libdir=$(pkg-config --libs-only-L dpsim | sed 's/^ *-L//; s/ *$//')
incdir=$(pkg-config --cflags-only-I dpsim | sed 's/^ *-I//; s/ *$//')
[ -f "$incdir/dpsim.h" ] && ok "dpsim.h installed" || bad "dpsim.h not in the installed includedir ($incdir)"

# An ASan build's library needs its runtime in the program too.
san=()
if [ -n "${DPSIM_SANITIZE:-}" ] && [ "$DPSIM_SANITIZE" != none ]; then
    san=(-fsanitize="$DPSIM_SANITIZE")
fi
CC=${CC:-cc}
CXX=${CXX:-c++}

printf '#include <dpsim.h>\nint main(void) { return dpsim_version()[0] ? 0 : 1; }\n' >"$T/h.c"
expect 0 "dpsim.h: C11 -Wall -Wextra -pedantic" -- $CC -std=c11 -Wall -Wextra -pedantic -Werror $cflags -c "$T/h.c" -o "$T/h.o"
cp "$T/h.c" "$T/h.cpp"
if command -v "$CXX" >/dev/null; then
    expect 0 "dpsim.h: C++17 -Wall -Wextra -pedantic" -- $CXX -std=c++17 -Wall -Wextra -pedantic -Werror $cflags -c "$T/h.cpp" -o "$T/hpp.o"
else
    bad "no C++ compiler ($CXX) to compile dpsim.h as C++17"
fi

expect 0 "libapi_smoke builds from pkg-config" -- $CC -std=c11 -Wall -Wextra -pedantic -Werror "${san[@]}" $cflags \
    "$SRC/tests/libapi/libapi_smoke.c" -o "$T/smoke" $libs -pthread
export LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
expect 0 "libapi_smoke check (structs, errors, threads)" -- "$T/smoke" "$TINY" check
grep -qx ok "$T/out" || bad "libapi_smoke check did not say ok: $(cat "$T/out" "$T/err")"

# The library's JSON is the binary's, byte for byte, policy by policy.
for p in $("$BIN" run --help | awk '/^Policies/ {on = 1; next} on && /^  [a-z]/ {print $1}' | tr -d ':'); do
    "$BIN" run "$TINY" --policy "$p" --json --no-db -q >"$T/cli.json" 2>"$T/cli.err"
    crc=$?
    "$T/smoke" "$TINY" json "$p" >"$T/lib.json" 2>"$T/lib.err"
    lrc=$?
    if [ $crc -eq 0 ] && [ $lrc -eq 0 ] && cmp -s "$T/cli.json" "$T/lib.json"; then
        ok "JSON of $p: library = CLI"
    elif [ $crc -ne 0 ] && [ $lrc -ne 0 ]; then
        ok "$p refuses tiny in both"
    else
        bad "JSON of $p differs (cli rc $crc, lib rc $lrc)"
    fi
done
"$BIN" run "$TINY" --json --no-db -q >"$T/cli.json" 2>/dev/null
"$T/smoke" "$TINY" json >"$T/lib.json"
cmp -s "$T/cli.json" "$T/lib.json" && ok "JSON of every applicable policy: library = CLI" || bad "--policy all JSON differs"

so=$(find "$libdir" -name 'libdpsim.so.*' -type f | head -n1)
soname=$(objdump -p "$so" 2>/dev/null | awk '/SONAME/ {print $2}')
[ "$soname" = libdpsim.so.1 ] && ok "soname $soname" || bad "soname '$soname' (want libdpsim.so.1)"
others=$(nm -D --defined-only "$so" | awk '$2 == "T" && $3 !~ /^dpsim_/' | head -n3)
[ -z "$others" ] && ok "exports dpsim_* only" || bad "exports more than dpsim.h: $others"

# The Python package: installed beside the library, told where it went.
inst=$(find "$root" -path '*/dpsim/_install.py' | head -n1)
if [ -z "$inst" ]; then
    bad "the Python package was not installed (dpsim/_install.py)"
else
    site=$(dirname "$(dirname "$inst")")
    want=$(sed -n 's/^LIBRARY = "\(.*\)"$/\1/p' "$inst")
    [ -f "$root$want" ] && ok "dpsim/_install.py names the installed library" ||
        bad "dpsim/_install.py names $want, not installed under the prefix"
    if [ ${#san[@]} -eq 0 ] && command -v python3 >/dev/null; then
        # Debian's python3 (meson's); the package needs no pandas for .json.
        py=$(command -v /usr/bin/python3 || command -v python3)
        DPSIM_LIB=$root$want PYTHONPATH=$site "$py" -c 'import dpsim, sys; print(dpsim.run(sys.argv[1], policy="cadp").json)' \
            "$TINY" >"$T/py.json" 2>"$T/py.err"
        "$BIN" run "$TINY" --policy cadp --json --no-db -q >"$T/cli.json"
        cmp -s "$T/py.json" "$T/cli.json" && ok "installed Python package = CLI" ||
            bad "installed Python package: $(head -c 300 "$T/py.err")"
    fi
fi

e2e_done libapi
