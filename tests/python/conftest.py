"""Shared fixtures: the source tree, the dpsim binary, CLI helpers."""
import os
import subprocess

import pytest

SRC = os.environ.get("DPSIM_SRC") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("DPSIM_BIN") or os.path.join(SRC, "build", "dpsim")
TINY = os.path.join(SRC, "scenarios", "tiny.yaml")


def cli(*args, check=True):
    """Run the dpsim binary; its CompletedProcess (text)."""
    p = subprocess.run([BIN] + [str(a) for a in args], capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError("dpsim %s: exit %d: %s" % (" ".join(map(str, args)), p.returncode, p.stderr))
    return p


@pytest.fixture
def tiny():
    return TINY
