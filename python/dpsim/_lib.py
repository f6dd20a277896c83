"""ctypes binding of libdpsim.so (lib/dpsim.h): the few calls the package uses.

The library is found, in this order, at $DPSIM_LIB (a path to the .so), next
to where `meson install` put this package (_install.py, written at install
time), or by the dynamic loader's search (ctypes.util.find_library).
"""
import ctypes
import ctypes.util
import os

ABI = 1


class _Error(ctypes.Structure):
    _fields_ = [
        ("code", ctypes.c_int),
        ("message", ctypes.c_char * 1024),
        ("file", ctypes.c_char * 512),
        ("line", ctypes.c_int),
        ("column", ctypes.c_int),
        ("key", ctypes.c_char * 256),
    ]


class _RunOptions(ctypes.Structure):
    _fields_ = [
        ("policies", ctypes.c_char_p),
        ("use_seed", ctypes.c_int),
        ("seed", ctypes.c_uint64),
        ("db", ctypes.c_char_p),
    ]


def _candidates():
    env = os.environ.get("DPSIM_LIB")
    if env:
        yield env
        return
    try:
        from . import _install  # written by meson install
        yield _install.LIBRARY
    except ImportError:
        pass
    found = ctypes.util.find_library("dpsim")
    if found:
        yield found
    yield "libdpsim.so.%d" % ABI


def _load():
    errors = []
    for path in _candidates():
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            errors.append("%s: %s" % (path, e))
    raise ImportError("dpsim: cannot load libdpsim.so.%d (set DPSIM_LIB to its path): %s"
                      % (ABI, "; ".join(errors)))


lib = _load()

_p = ctypes.c_void_p
_s = ctypes.c_char_p
_sz = ctypes.c_size_t
_E = ctypes.POINTER(_Error)
_strings = ctypes.POINTER(ctypes.c_char_p)


def _fn(name, res, *args):
    f = getattr(lib, name)
    f.restype = res
    f.argtypes = list(args)
    return f


version = _fn("dpsim_version", _s)
scenario_load_file = _fn("dpsim_scenario_load_file", ctypes.c_int, _s, _strings, _sz,
                         ctypes.POINTER(_p), _E)
scenario_load_string = _fn("dpsim_scenario_load_string", ctypes.c_int, _s, _s, _sz, _s, _strings, _sz,
                           ctypes.POINTER(_p), _E)
scenario_free = _fn("dpsim_scenario_free", None, _p)
scenario_name = _fn("dpsim_scenario_name", _s, _p)
scenario_seed = _fn("dpsim_scenario_seed", ctypes.c_uint64, _p)
scenario_devices = _fn("dpsim_scenario_devices", _sz, _p)
scenario_stochastic = _fn("dpsim_scenario_stochastic", ctypes.c_int, _p)
scenario_policies = _fn("dpsim_scenario_policies", ctypes.c_int, _p, ctypes.c_char_p, _sz)
policy_names = _fn("dpsim_policy_names", None, ctypes.c_char_p, _sz)
run = _fn("dpsim_run", ctypes.c_int, _p, ctypes.POINTER(_RunOptions), ctypes.POINTER(_p), _E)
results_free = _fn("dpsim_results_free", None, _p)
results_json = _fn("dpsim_results_json", _s, _p)
set_fast_forward = _fn("dpsim_set_fast_forward", None, ctypes.c_int)
db_open = _fn("dpsim_db_open", ctypes.c_int, _s, ctypes.POINTER(_p), _E)
db_close = _fn("dpsim_db_close", None, _p)
db_run = _fn("dpsim_db_run", ctypes.c_int, _p, ctypes.c_int64, ctypes.POINTER(_p), _E)
si = _fn("dpsim_si", ctypes.c_int, _s, ctypes.POINTER(ctypes.c_double))
grid_new = _fn("dpsim_grid_new", ctypes.c_int, _strings, _sz, ctypes.POINTER(_p), _E)
grid_free = _fn("dpsim_grid_free", None, _p)
grid_axes = _fn("dpsim_grid_axes", _sz, _p)
grid_points = _fn("dpsim_grid_points", _sz, _p)
grid_key = _fn("dpsim_grid_key", _s, _p, _sz)
grid_value = _fn("dpsim_grid_value", _s, _p, _sz, _sz)

Error = _Error
RunOptions = _RunOptions


def strings(values):
    """A C array of char * from Python strings (kept alive by the caller)."""
    arr = (ctypes.c_char_p * max(len(values), 1))()
    for i, v in enumerate(values):
        arr[i] = v.encode()
    return arr


def si_value(text):
    """"100Mbps" -> 12500000.0 (bytes/s); None when not a quantity."""
    v = ctypes.c_double()
    return v.value if si(str(text).encode(), ctypes.byref(v)) == 0 else None
