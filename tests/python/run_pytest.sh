#!/usr/bin/env bash
# run_pytest.sh PYTHON: the Python package's pytest tests (tests/python/),
# against the build tree's libdpsim.so (DPSIM_LIB) and python/ (PYTHONPATH).
# Exits 77 (meson: skipped) with the reason when they cannot run here.
py=${1:?usage: run_pytest.sh PYTHON}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ -n "${DPSIM_SANITIZE:-}" ] && [ "$DPSIM_SANITIZE" != none ]; then
    echo "skipped: a sanitizer build's libdpsim.so cannot load into $py without preloading its runtime;" \
        "the normal build runs these tests"
    exit 77
fi
for m in pytest:python3-pytest pandas:python3-pandas; do
    if ! "$py" -c "import ${m%%:*}" 2>/dev/null; then
        echo "skipped: $py has no ${m%%:*} (Debian: apt-get install ${m#*:}; see the README's setup line)"
        exit 77
    fi
done
export PYTHONPATH=$DPSIM_SRC/python${PYTHONPATH:+:$PYTHONPATH}
export PYTHONDONTWRITEBYTECODE=1
cd "$here" && exec "$py" -m pytest -q -p no:cacheprovider "$here"
