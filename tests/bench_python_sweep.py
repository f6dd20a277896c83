#!/usr/bin/env python3
"""bench_python_sweep.py: a 1,000-run sweep (tiny.yaml, 100 link speeds x 5
GPU counts x ddp,cadp) from Python (dpsim.sweep, jobs=2, results as data
frames) against the CLI's `dpsim sweep --jobs 2` into a fresh database.
Prints the median, min and max host seconds over REPS runs of each, taken
in turn (A B A B ...), measured inside this process (pandas imported once,
as in a notebook); `farm-bench` times the whole processes instead.

    DPSIM_BIN=$PWD/build/dpsim DPSIM_LIB=$PWD/build/lib/libdpsim.so.1 \\
        PYTHONPATH=python python3 tests/bench_python_sweep.py   # REPS=7 (default 5)
"""
import os
import statistics
import subprocess
import tempfile
import time

import pandas  # noqa: F401  (imported once, outside the timing)

import dpsim

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
TINY = os.path.join(SRC, "scenarios", "tiny.yaml")
BIN = os.environ.get("DPSIM_BIN", os.path.join(SRC, "build", "dpsim"))
VARY = {"devices.cpu.link.down": "1Mbps..100Mbps:log:100", "devices.gpu.count": "1..5"}
REPS = int(os.environ.get("REPS", "5"))


def py_sweep():
    r = dpsim.sweep(TINY, VARY, policy=["ddp", "cadp"], jobs=2)
    assert len(r) == 1000 and len(r.runs) == 1000


def cli_sweep(tmp):
    db = os.path.join(tmp, "b.db")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.remove(db + suffix)
    args = [BIN, "sweep", TINY, "--policy", "ddp,cadp", "--jobs", "2", "--db", db, "-q"]
    for k, v in VARY.items():
        args += ["--vary", "%s=%s" % (k, v)]
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)


def main():
    times = {"python": [], "cli": []}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(REPS):
            for name, f in (("python", py_sweep), ("cli", lambda: cli_sweep(tmp))):
                t = time.monotonic()
                f()
                times[name].append(time.monotonic() - t)
    for name, v in times.items():
        print("%-7s 1000 runs: median %.3f s (min %.3f, max %.3f, %d reps)"
              % (name, statistics.median(v), min(v), max(v), len(v)))


if __name__ == "__main__":
    main()
