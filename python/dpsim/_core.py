"""dpsim.run, dpsim.sweep and the scenario/error plumbing over libdpsim.so."""
import ctypes
import json
import os

from . import _lib
from ._frames import Results

# dpsim.h's codes
_ERUN, _EINPUT, _ENOMEM = -1, -2, -3


class DpsimError(Exception):
    """A failure reported by the simulator.

    message: the line `dpsim` prints ("FILE:LINE:COL: key: what (got V)");
    file, line, column, key: the input position it names (None when none);
    suggestion: the key a misspelt one was probably meant to be ("epochs"
    for "epochz"), else None; code: dpsim.h's DPSIM_E* value.
    """

    def __init__(self, message, code=_ERUN, file=None, line=None, column=None, key=None):
        super().__init__(message)
        self.message = message
        self.code = code
        self.file = file
        self.line = line
        self.column = column
        self.key = key
        self.suggestion = None
        mark = "did you mean '"
        at = message.find(mark)
        if at >= 0:
            end = message.find("'", at + len(mark))
            if end > 0:
                self.suggestion = message[at + len(mark):end]


class InputError(DpsimError, ValueError):
    """Bad input: a scenario, an override, a policy name (the CLI's exit 2)."""


class RunError(DpsimError, RuntimeError):
    """The run failed: a stall, a database error, a worker that died (exit 1)."""


def _raise(err):
    msg = err.message.decode(errors="replace")
    file = err.file.decode(errors="replace") or None
    key = err.key.decode(errors="replace") or None
    cls = InputError if err.code == _EINPUT else RunError
    if err.code == _ENOMEM:
        cls = MemoryError
        raise cls(msg)
    raise cls(msg, err.code, file, err.line if file else None, err.column if file else None, key)


def _value_text(v):
    """An override value as the command line would take it."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)
    return str(v)


def _set_list(set):
    if not set:
        return []
    if isinstance(set, dict):
        return ["%s=%s" % (k, _value_text(v)) for k, v in set.items()]
    return [str(s) for s in set]


def _dict_to_yaml(d):
    """A scenario dict as YAML text, block style so that positions in
    messages are lines of it (JSON, which YAML reads too, without PyYAML)."""
    try:
        import yaml
    except ImportError:
        return json.dumps(d, indent=1)
    return yaml.safe_dump(d, sort_keys=False, default_flow_style=False)


def _is_path(s):
    if isinstance(s, os.PathLike):
        return True
    if not isinstance(s, str):
        return False
    if s.startswith("builtin:"):
        return True
    return "\n" not in s and (os.path.exists(s) or s.endswith((".yaml", ".yml")))


class Scenario:
    """A loaded, checked scenario (with its overrides).  Reusable: run it
    many times, from several threads at once."""

    def __init__(self, scenario, set=None, base_dir=None):
        self._h = None
        sets = _set_list(set)
        arr = _lib.strings(sets)
        err = _lib.Error()
        h = ctypes.c_void_p()
        if isinstance(scenario, Scenario):
            raise TypeError("already a Scenario")
        if _is_path(scenario):
            rc = _lib.scenario_load_file(os.fsencode(scenario), arr, len(sets), ctypes.byref(h), ctypes.byref(err))
        else:
            if isinstance(scenario, dict):
                name, text = "<dict>", _dict_to_yaml(scenario)
            elif isinstance(scenario, str):
                name, text = "<string>", scenario
            else:
                raise TypeError("scenario: a path, YAML text or a dict (got %s)" % type(scenario).__name__)
            data = text.encode()
            rc = _lib.scenario_load_string(name.encode(), data, len(data),
                                           os.fsencode(base_dir) if base_dir else None,
                                           arr, len(sets), ctypes.byref(h), ctypes.byref(err))
        if rc:
            _raise(err)
        self._h = h
        self.text = None if _is_path(scenario) else text
        self.overrides = sets

    def __del__(self):
        h, self._h = getattr(self, "_h", None), None
        if h and _lib is not None and _lib.scenario_free is not None:  # not at interpreter exit
            _lib.scenario_free(h)

    @property
    def name(self):
        return _lib.scenario_name(self._h).decode()

    @property
    def seed(self):
        return _lib.scenario_seed(self._h)

    @property
    def devices(self):
        return _lib.scenario_devices(self._h)

    @property
    def stochastic(self):
        return bool(_lib.scenario_stochastic(self._h))

    @property
    def policies(self):
        """The policies `--policy all` runs on it, in registry order."""
        buf = ctypes.create_string_buffer(4096)
        _lib.scenario_policies(self._h, buf, len(buf))
        return buf.value.decode().split(",") if buf.value else []

    def run_json(self, policy=None, seed=None, db=None):
        """The JSON text `dpsim run --json` prints for these runs."""
        opts = _lib.RunOptions()
        if policy is not None and not isinstance(policy, str):
            policy = ",".join(policy)
        opts.policies = policy.encode() if policy else None
        if seed is not None:
            if not isinstance(seed, int) or seed < 0 or seed >= 2 ** 64:
                raise InputError("seed: a whole number from 0 to 2^64-1 (got %r)" % (seed,), _EINPUT)
            opts.use_seed, opts.seed = 1, seed
        opts.db = os.fsencode(db) if db else None
        res = ctypes.c_void_p()
        err = _lib.Error()
        if _lib.run(self._h, ctypes.byref(opts), ctypes.byref(res), ctypes.byref(err)):
            _raise(err)
        try:
            text = _lib.results_json(res)
            if text is None:
                raise MemoryError("dpsim: out of memory making the JSON")
            return text.decode()
        finally:
            _lib.results_free(res)


def policies():
    """Every registered policy, in registry order."""
    buf = ctypes.create_string_buffer(4096)
    _lib.policy_names(buf, len(buf))
    return buf.value.decode().split(",")


def version():
    return _lib.version().decode()


def load(scenario, set=None, base_dir=None):
    """Load and check a scenario (a path, YAML text or a dict) with overrides."""
    return Scenario(scenario, set=set, base_dir=base_dir)


def run(scenario, policy=None, set=None, seed=None, db=None, base_dir=None):
    """Simulate `scenario` under `policy` ("ddp", ["ddp", "cadp"], or None:
    every policy that can run it) and return a Results (data frames runs,
    devices, epochs, statistics; .json is `dpsim run --json`'s text).

    scenario: a file path, "builtin:paper-testbed", YAML text, a dict, or
    a loaded Scenario.  set: overrides {"devices.cpu.link.down": "20Mbps"}
    (or ["KEY=VALUE", ...]).  seed: default the scenario's training.seed.
    db: store the runs in this results database, as `dpsim run --db`.
    Raises InputError / RunError (file, line, column, key, suggestion).
    """
    s = scenario if isinstance(scenario, Scenario) else Scenario(scenario, set=set, base_dir=base_dir)
    if isinstance(scenario, Scenario) and set:
        raise TypeError("set= applies when loading: pass the overrides to dpsim.load")
    return Results.from_json(s.run_json(policy=policy, seed=seed, db=db))
