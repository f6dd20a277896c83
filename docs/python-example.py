#!/usr/bin/env python3
"""dpsim from Python, notebook style (tests/python/test_run.py runs it).

Needs the dpsim package and libdpsim.so: after `meson install` both are in
place; from a build tree, set PYTHONPATH=python and
DPSIM_LIB=build/lib/libdpsim.so.1.  Debian packages: python3-pandas
(python3-yaml for scenarios given as dicts)."""
import os

import dpsim

HERE = os.path.dirname(os.path.abspath(__file__))
TINY = os.path.join(HERE, "..", "scenarios", "tiny.yaml")

# %% One scenario, two policies, an override: results as data frames.
r = dpsim.run(TINY, policy=["ddp", "cadp"], set={"devices.cpu.link.down": "20Mbps"})
print(r.runs[["policy", "tsend_s", "ttraining_s", "ttotal_s", "utilization"]])
print(r.devices.groupby("policy")[["compute_s", "wait_s"]].sum())

# %% A scenario built as a dict (no file): two GPUs and a phone-class CPU.
scenario = {
    "name": "from-python",
    "model": {"params": 1.0e6, "flops_per_sample": 2.0e8},
    "dataset": {"samples": 2000, "sample_bytes": "3KB"},
    "training": {"epochs": 2},
    "server": {"nic": {"up": "1Gbps", "down": "1Gbps"}},
    "devices": [
        {"name": "gpu", "count": 2, "kind": "gpu", "memory": "16GiB", "batch": 32, "batch_time": "15ms",
         "link": {"up": "200Mbps", "down": "200Mbps", "latency": "2ms"}},
        {"name": "phone", "kind": "cpu", "memory": "4GiB", "batch": 8, "batch_time": "120ms",
         "link": {"up": "10Mbps", "down": "40Mbps", "latency": "30ms"}},
    ],
}
try:
    import yaml  # noqa: F401  (a dict is written out as YAML, or as JSON without it)
except ImportError:
    pass
d = dpsim.run(scenario, policy="cadp")
print(d.runs[["policy", "ttotal_s"]])

# %% A typo is an exception naming the key path and the likely meant key.
scenario["training"]["epochz"] = scenario["training"].pop("epochs")
try:
    dpsim.run(scenario)
except dpsim.InputError as e:
    print("bad input:", e.key, "-> did you mean", e.suggestion, f"({e.file}:{e.line}:{e.column})")

# %% A sweep in two worker processes, as `dpsim sweep --jobs 2`.
s = dpsim.sweep(TINY, vary={"devices.cpu.link.down": "1Mbps..100Mbps:log:5"}, policy=["ddp", "cadp"], jobs=2)
# Swept values come as text and, beside them, as SI numbers (bytes/s here).
print(s.runs.pivot(index="devices.cpu.link.down_si", columns="policy", values="ttotal_s"))

# %% Store runs and read them back.
dpsim.run(TINY, policy="ddp", db="example.db")
with dpsim.open_db("example.db") as db:
    print(db.runs[["run", "scenario", "policy", "ttotal_s"]])
