"""dpsim.open_db: a results database (sim/store/SCHEMA.md) as data frames."""
import ctypes
import os
import sqlite3

from . import _lib
from ._core import _raise
from ._frames import Results, _pandas


class Database:
    """Stored runs, read-only.  Frames: runs (one row per run, with its
    scenario's name and, for sweep points, the point as a dict and each
    swept key as a column of its text and one KEY_si of its value in SI
    base units: bytes/s, bytes, s, FLOP/s, as stored in run_values),
    values (every override and point value, text and number), devices,
    epochs, statistics; run(ID) gives one stored run as Results, read by
    the library exactly as `dpsim show ID --json` prints it."""

    def __init__(self, path):
        self.path = os.fspath(path)
        h = ctypes.c_void_p()
        err = _lib.Error()
        # The library's open checks that it is a dpsim database and migrates
        # an older schema, as `dpsim runs` does.
        if _lib.db_open(os.fsencode(self.path), ctypes.byref(h), ctypes.byref(err)):
            _raise(err)
        self._h = h
        self._sql = sqlite3.connect("file:%s?mode=ro" % self.path, uri=True)

    def close(self):
        h, self._h = getattr(self, "_h", None), None
        if h and _lib is not None and _lib.db_close is not None:  # not at interpreter exit
            _lib.db_close(h)
        if getattr(self, "_sql", None):
            self._sql.close()
            self._sql = None

    __del__ = close

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def sql(self, query, params=()):
        """Any read-only SQL query as a data frame."""
        return _pandas().read_sql_query(query, self._sql, params=params)

    @property
    def runs(self):
        import json
        df = self.sql(
            "SELECT r.id AS run, s.name AS scenario, r.policy, r.seed, r.status, r.error, r.version, "
            "r.started_at, r.wall_s, r.tsend_s, r.ttraining_s, r.ttotal_s, r.tflops AS tflops_TFLOPS, "
            "r.utilization, r.samples_processed, r.bytes_total AS bytes_total_B, r.events, "
            "r.options_json, r.overrides_json, r.sweep_id, r.point_json "
            "FROM runs r JOIN scenarios s ON s.id = r.scenario_id ORDER BY r.id")
        df["options"] = [json.loads(t) if t else {} for t in df.pop("options_json")]
        df["overrides"] = [json.loads(t) if t else [] for t in df.pop("overrides_json")]
        df["point"] = [json.loads(t) if t else None for t in df.pop("point_json")]
        # A sweep point's values as columns: the text, and beside it the
        # number in SI base units the database stores (run_values), so they
        # sort and plot as numbers.
        vals = self.sql("SELECT run_id, key, text, si FROM run_values WHERE source = 'point' ORDER BY run_id, seq")
        keys = list(dict.fromkeys(vals["key"]))
        by_run = {}
        for run, key, text, si in vals.itertuples(index=False):
            by_run.setdefault(run, {})[key] = (text, si)
        for k in keys:
            cells = [by_run.get(r, {}).get(k, (None, None)) for r in df["run"]]
            df[k] = [c[0] for c in cells]
            df[k + "_si"] = [c[1] for c in cells]
            df[k + "_si"] = df[k + "_si"].astype(float)
        return df

    @property
    def devices(self):
        return self.sql("SELECT run_id AS run, idx, name, grp AS \"group\", kind, samples, batches, compute_s, "
                        "send_s, recv_s, wait_s, bytes_sent AS bytes_sent_B, bytes_recv AS bytes_recv_B, "
                        "data_ready_s FROM run_devices ORDER BY run_id, idx")

    @property
    def values(self):
        """Each run's overrides (source 'set') and sweep point values
        ('point'): key, text, and si, the number in SI base units (NaN for
        a value that is not a number) with its unit ("B/s", "B", "s",
        "FLOP/s", "" for a plain number, None when not known)."""
        return self.sql("SELECT run_id AS run, seq, source, key, text, si, unit FROM run_values ORDER BY 1, 2")

    @property
    def epochs(self):
        return self.sql("SELECT * FROM run_epochs ORDER BY 1, 2")

    @property
    def statistics(self):
        return self.sql("SELECT * FROM run_stats ORDER BY 1")

    def run(self, run_id):
        res = ctypes.c_void_p()
        err = _lib.Error()
        if _lib.db_run(self._h, int(run_id), ctypes.byref(res), ctypes.byref(err)):
            _raise(err)
        try:
            return Results.from_json(_lib.results_json(res).decode())
        finally:
            _lib.results_free(res)


def open_db(path):
    """Open a results database (as written by `dpsim run`, `sweep`, or
    dpsim.run(..., db=PATH)) for reading."""
    return Database(path)
