"""dpsim from Python: simulate data-parallel training on heterogeneous,
geo-distributed devices, with results as pandas data frames.

    import dpsim
    r = dpsim.run("scenarios/tiny.yaml", policy="cadp",
                  set={"devices.cpu.link.down": "20Mbps"})
    r.runs[["policy", "ttotal_s"]]
    s = dpsim.sweep("scenarios/tiny.yaml", vary={"devices.gpu.count": "1..3"}, jobs=2)
    db = dpsim.open_db("results.db"); db.runs

On ctypes over libdpsim.so (lib/dpsim.h): the same code as the `dpsim`
binary, so the same scenario, overrides and seed give the same bits.
"""
from ._core import DpsimError, InputError, RunError, Scenario, load, policies, run, version
from ._db import Database, open_db
from ._frames import Results
from ._sweep import grid, sweep

__all__ = ["run", "sweep", "grid", "load", "open_db", "policies", "version", "Scenario", "Results",
           "Database", "DpsimError", "InputError", "RunError"]
