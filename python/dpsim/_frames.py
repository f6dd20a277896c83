"""Results as pandas data frames, from the JSON `dpsim run --json` prints.

The JSON's numbers are the shortest text that reads back to the simulator's
doubles (sim/store/JSON.md), and Python reads them back exactly, so every
number in these frames is the simulator's own, bit for bit.

Column names carry their unit: _s seconds, _B bytes, _TFLOPS; counts and
fractions have none.  Each frame has a `run` column (0-based, the order
runs were made) to join on; a sweep's frames add the point's swept values
as columns named by their keys (text, as given to --vary) and, beside
each, KEY_si: the same value as a number in SI base units (bytes/s, bytes,
s, FLOP/s; a bare number as it is), so that they sort and plot as numbers.
"""
import json

# JSON name -> column name (only those that gain a unit)
_RUN_COLS = {"bytes_total": "bytes_total_B", "tflops": "tflops_TFLOPS"}
_DEV_COLS = {"bytes_sent": "bytes_sent_B", "bytes_recv": "bytes_recv_B"}
_RUN_KEYS = ["policy", "seed", "tsend_s", "ttraining_s", "ttotal_s", "tflops", "utilization",
             "samples_processed", "bytes_total", "events"]
# JSON prints a double of integral value without a point ("2000000"), which
# Python reads as int: these columns are the simulator's doubles.
_RUN_FLOATS = {"tsend_s", "ttraining_s", "ttotal_s", "tflops", "utilization", "samples_processed",
               "bytes_total"}
_DEV_FLOATS = {"compute_s", "send_s", "recv_s", "wait_s", "bytes_sent", "bytes_recv", "data_ready_s"}


def _num(v):
    return float("nan") if v is None else float(v)


def _row(d, keys, floats):
    return [_num(d[k]) if k in floats else d[k] for k in keys]


_DEV_KEYS = ["name", "group", "kind", "samples", "batches", "compute_s", "send_s", "recv_s", "wait_s",
             "bytes_sent", "bytes_recv", "data_ready_s"]


def _pandas():
    try:
        import pandas
    except ImportError as e:  # the frames need it; .json and .data do not
        raise ImportError("dpsim: results as data frames need pandas (Debian: apt-get install "
                          "python3-pandas); .json and .data work without it") from e
    return pandas


class Results:
    """Runs as data frames: runs, devices, epochs, statistics.

    .data: the parsed JSON (a dict); .json: its text when made by one call
    (dpsim.run), as `dpsim run --json` prints it.  Frames are built on
    first use.
    """

    def __init__(self, runs, scenario=None, points=None, text=None, failures=None):
        self.data = {"scenario": scenario, "runs": runs}
        self.json = text
        self.scenario = scenario
        self._points = points  # per run: {key: value text}, or None
        self._frames = {}
        self.failures = failures or []  # sweep runs that failed: dicts

    @classmethod
    def from_json(cls, text, points=None):
        d = json.loads(text)
        r = cls(d["runs"], d.get("scenario"), points, text)
        r.data = d
        return r

    def __len__(self):
        return len(self.data["runs"])

    def __repr__(self):
        return "<dpsim.Results %s: %d run%s>" % (self.scenario, len(self), "" if len(self) == 1 else "s")

    def _point_cols(self, k):
        return self._points[k] if self._points else {}

    def _frame(self, name, rows, columns):
        if name not in self._frames:
            pd = _pandas()
            self._frames[name] = pd.DataFrame.from_records(rows, columns=columns)
        return self._frames[name]

    def _keys(self):
        keys = []
        for p in self._points or []:
            for k in p:
                if k not in keys:
                    keys.append(k)
        return keys

    @property
    def runs(self):
        """One row per run: policy, seed, Tsend/Ttraining/Ttotal (s), TFLOPS,
        utilisation, samples, bytes, events, options (dict), overrides."""
        if "runs" in self._frames:
            return self._frames["runs"]
        keys = self._keys()
        from ._lib import si_value
        cols = ["run"] + [c for k in keys for c in (k, k + "_si")] + [_RUN_COLS.get(k, k) for k in _RUN_KEYS] + ["options", "overrides"]
        rows = []
        for i, r in enumerate(self.data["runs"]):
            p = self._point_cols(i)
            rows.append([i] + [v for k in keys for v in (p.get(k), si_value(p.get(k)))] + _row(r, _RUN_KEYS, _RUN_FLOATS) +
                        [r.get("options", {}), r.get("overrides", [])])
        return self._frame("runs", rows, cols)

    @property
    def devices(self):
        """One row per device and run."""
        if "devices" in self._frames:
            return self._frames["devices"]
        cols = ["run", "policy"] + [_DEV_COLS.get(k, k) for k in _DEV_KEYS]
        rows = [[i, r["policy"]] + _row(d, _DEV_KEYS, _DEV_FLOATS)
                for i, r in enumerate(self.data["runs"]) for d in r["devices"]]
        return self._frame("devices", rows, cols)

    @property
    def epochs(self):
        """One row per epoch end and run (epoch 1-based, end_s simulated s)."""
        if "epochs" in self._frames:
            return self._frames["epochs"]
        rows = [[i, r["policy"], e + 1, _num(t)] for i, r in enumerate(self.data["runs"])
                for e, t in enumerate(r["epochs"])]
        return self._frame("epochs", rows, ["run", "policy", "epoch", "end_s"])

    @property
    def statistics(self):
        """The further figures a policy or the world recorded (name, scope,
        indices a and b, value; meanings in sim/store/SCHEMA.md run_stats)."""
        if "statistics" in self._frames:
            return self._frames["statistics"]
        rows = [[i, r["policy"], s["name"], s["scope"], s["a"], s["b"], _num(s["value"])]
                for i, r in enumerate(self.data["runs"]) for s in r.get("stats", [])]
        return self._frame("statistics", rows, ["run", "policy", "name", "scope", "a", "b", "value"])
