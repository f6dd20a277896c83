"""dpsim.sweep: a grid of scenario variants run in worker processes.

The grid is the C library's (dpsim_grid_*, the code of `dpsim sweep
--vary`), so points and their value texts are the CLI's; seeds follow the
CLI too (1..seeds when the scenario or an axis is random, else seed 1
alone), and each run is the same call as `dpsim run`'s, so a point gives
the same bits whichever worker runs it and however many there are.
"""
import concurrent.futures
import ctypes
import json
import multiprocessing
import os

from . import _lib
from ._core import InputError, RunError, Scenario, _raise, _set_list
from ._frames import Results

_RANDOM_KEYS = ("noise", "mtbf", "every")  # an axis on these makes seeds matter (sim/sweep/run.c)


def _axes(vary):
    """{key: spec} ({"devices.cpu.link.down": "1Mbps..100Mbps:log:5"} or a
    list of values) or ["KEY=SPEC", ...] -> ["KEY=SPEC", ...]."""
    if isinstance(vary, dict):
        out = []
        for k, v in vary.items():
            if isinstance(v, (list, tuple)):
                v = ",".join(str(x) for x in v)
            out.append("%s=%s" % (k, v))
        return out
    return [str(v) for v in vary]


def grid(vary):
    """The sweep's points as a list of {key: value text}, first axis outermost."""
    specs = _axes(vary)
    arr = _lib.strings(specs)
    g = ctypes.c_void_p()
    err = _lib.Error()
    if _lib.grid_new(arr, len(specs), ctypes.byref(g), ctypes.byref(err)):
        _raise(err)
    try:
        keys = [_lib.grid_key(g, a).decode() for a in range(_lib.grid_axes(g))]
        return [{k: _lib.grid_value(g, p, a).decode() for a, k in enumerate(keys)}
                for p in range(_lib.grid_points(g))]
    finally:
        _lib.grid_free(g)


# ---- the worker side: one process loads the base once per point ------------

_job = {}


def _init(source, base_dir, base_set):
    _job.update(source=source, base_dir=base_dir, base_set=base_set)


def _run_point(task):
    """Run one point's policies x seeds; returns [(k, json text | None, error
    message | None), ...] in task order."""
    point_set, runs = task
    out = []
    try:
        s = Scenario(_job["source"], set=_job["base_set"] + point_set, base_dir=_job["base_dir"])
    except (InputError, RunError) as e:
        return [(k, None, e.message) for k, _, _ in runs]
    for k, policy, seed in runs:
        try:
            out.append((k, s.run_json(policy=policy, seed=seed), None))
        except (InputError, RunError) as e:
            out.append((k, None, e.message))
    return out


def sweep(scenario, vary, policy=None, seeds=1, jobs=2, set=None, base_dir=None):
    """Run `scenario` at every point of the grid `vary` under each policy
    (default every policy that can run the base scenario) and seed, in
    `jobs` worker processes; return a Results whose frames carry each
    point's swept values as columns.

    vary: {"devices.cpu.link.down": "1Mbps..100Mbps:log:5",
           "devices.gpu.count": [1, 2, 3]} (the CLI's --vary specs).
    A point whose combination fails to load or run is not an exception: it
    is listed in Results.failures (point, policy, seed, error), as `dpsim
    sweep` stores failed points.  Bad input (an unknown key, a bad spec)
    raises InputError; a worker process that dies raises RunError, and the
    calling process goes on.
    """
    base_set = _set_list(set)
    base = Scenario(scenario, set=base_set, base_dir=base_dir)
    points = grid(vary)
    if isinstance(policy, str) and policy != "all":
        policies = policy.split(",")
    elif policy and policy != "all":
        policies = list(policy)
    else:
        policies = base.policies
    if not isinstance(seeds, int) or seeds < 1:
        raise InputError("seeds: want a whole number, 1 or more (got %r)" % (seeds,))
    random = base.stochastic or any(k.rsplit(".", 1)[-1] in _RANDOM_KEYS for k in (points[0] if points else {}))
    seed_list = list(range(1, seeds + 1)) if random else [1]
    # Each axis checked alone first, as the CLI does: a bad key or value is
    # bad input, not a failed point.
    for spec in _axes(vary):
        key = spec.split("=", 1)[0]
        for v in dict.fromkeys(p[key] for p in points):
            try:
                Scenario(scenario, set=base_set + ["%s=%s" % (key, v)], base_dir=base_dir)
            except InputError as e:
                raise InputError("--vary %s: value '%s': %s" % (spec, v, e.message), e.code, e.file, e.line,
                                 e.column, e.key) from None
    source = scenario if not isinstance(scenario, dict) else base.text
    if isinstance(scenario, os.PathLike):
        source = os.fspath(scenario)
    tasks, order = [], []
    for p in points:
        runs = []
        for pol in policies:
            for sd in seed_list:
                runs.append((len(order), pol, sd))
                order.append((p, pol, sd))
        tasks.append((["%s=%s" % kv for kv in p.items()], runs))
    texts = [None] * len(order)
    errors = [None] * len(order)
    jobs = max(1, int(jobs))
    if jobs == 1:
        _init(source, base_dir, base_set)
        results = map(_run_point, tasks)
        for res in results:
            for k, t, e in res:
                texts[k], errors[k] = t, e
    else:
        ctx = multiprocessing.get_context("fork")
        chunk = max(1, len(tasks) // (jobs * 8))
        try:
            with concurrent.futures.ProcessPoolExecutor(jobs, mp_context=ctx, initializer=_init,
                                                        initargs=(source, base_dir, base_set)) as ex:
                for res in ex.map(_run_point, tasks, chunksize=chunk):
                    for k, t, e in res:
                        texts[k], errors[k] = t, e
        except concurrent.futures.process.BrokenProcessPool as e:
            raise RunError("dpsim.sweep: a worker process died (%s); no result was lost in this process" % e) \
                from None
    runs, pts, failures = [], [], []
    name = base.name
    for k, (p, pol, sd) in enumerate(order):
        if texts[k] is None:
            failures.append({"point": p, "policy": pol, "seed": sd, "error": errors[k]})
            continue
        d = json.loads(texts[k])
        runs.extend(d["runs"])
        pts.extend([p] * len(d["runs"]))
    return Results(runs, name, pts, None, failures)
