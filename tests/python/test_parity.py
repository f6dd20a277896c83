"""Python and CLI give the same bits: every shipped scenario, every policy
that can run it (`--policy all`), compared as `dpsim run --json` text.
The slowest scenarios run shortened by overrides (the same ones on both
sides) to keep the suite's time: each is still every policy's full code."""
import glob
import os

import pytest

import dpsim
from conftest import SRC, cli

SHORTEN = {
    "geo-3sites.yaml": ["training.epochs=1"],
    "population.yaml": ["devices.phone.count=20", "training.epochs=1", "dataset.samples=2000"],
    "geo-failures.yaml": ["training.epochs=2"],
}
# Scenarios too slow for the suite even shortened (the learner on a real
# data set costs about a minute per policy whatever the schedule); digits.yaml
# covers the learner's path.  DPSIM_PYTEST_SLOW=1 runs them too.
SLOW = {"paper-fashion.yaml"}
# Scenarios whose other policies fail by design: batteries with no charger
# drain, and every policy but fedavg ends "down for good" (exit 1).
ONLY = {"battery-fleet.yaml": "fedavg"}
# Many-jobs scenarios run with `dpsim jobs`; `run` (and dpsim.run) refuse them.
SCENARIOS = sorted(os.path.basename(p) for p in glob.glob(os.path.join(SRC, "scenarios", "*.yaml"))
                   if not os.path.basename(p).startswith("jobs-"))


@pytest.mark.parametrize("name", SCENARIOS + ["builtin:paper-testbed"])
def test_every_policy_same_bits(name):
    if name in SLOW and not os.environ.get("DPSIM_PYTEST_SLOW"):
        pytest.skip("%s: about a minute per policy (the learner on a real data set); "
                    "DPSIM_PYTEST_SLOW=1 runs it" % name)
    path = name if name.startswith("builtin:") else os.path.join(SRC, "scenarios", name)
    sets = SHORTEN.get(name, [])
    args = ["run", path, "--json", "--no-db", "-q"]
    for s in sets:
        args += ["--set", s]
    only = ONLY.get(name)
    if only:
        args += ["--policy", only]
    want = cli(*args).stdout
    got = dpsim.run(path, set=sets, policy=only) if only else dpsim.run(path, set=sets)
    assert got.json + "\n" == want
    assert len(got) == (1 if only else len(dpsim.load(path, set=sets).policies)) >= 1


def test_every_registered_policy_covered():
    seen = set()
    for name in SCENARIOS:
        if name in SLOW:
            continue
        seen.update(dpsim.load(os.path.join(SRC, "scenarios", name), set=SHORTEN.get(name, [])).policies)
    assert seen == set(dpsim.policies())
