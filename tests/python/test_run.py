"""dpsim.run: scenarios as paths, text and dicts; overrides; seeds; frames;
errors as exceptions with their position; a failing run leaves Python up."""
import json
import os

import pandas as pd
import pytest

import dpsim
from conftest import SRC, TINY, cli

try:
    import yaml
except ImportError:  # dicts go through JSON then (still YAML)
    yaml = None


def test_run_matches_cli_bit_for_bit():
    r = dpsim.run(TINY, policy=["ddp", "cadp"], set={"devices.cpu.link.down": "20Mbps"}, seed=3)
    want = cli("run", TINY, "--policy", "ddp,cadp", "--set", "devices.cpu.link.down=20Mbps", "--seed", "3",
               "--json", "--no-db", "-q").stdout
    assert r.json + "\n" == want
    w = json.loads(want)["runs"]
    assert list(r.runs["ttotal_s"]) == [x["ttotal_s"] for x in w]
    assert list(r.runs["policy"]) == ["ddp", "cadp"] and list(r.runs["seed"]) == [3, 3]


def test_frames_numbers_and_units():
    r = dpsim.run(TINY, policy="cadp")
    runs, dev, ep = r.runs, r.devices, r.epochs
    for col in ["tsend_s", "ttraining_s", "ttotal_s", "tflops_TFLOPS", "utilization", "bytes_total_B"]:
        assert pd.api.types.is_float_dtype(runs[col]), col
    for col in ["compute_s", "wait_s", "bytes_sent_B", "bytes_recv_B", "data_ready_s"]:
        assert pd.api.types.is_numeric_dtype(dev[col]), col
    assert pd.api.types.is_integer_dtype(dev["samples"])
    assert len(dev) == 3 and set(dev["kind"]) == {"gpu", "cpu"}
    assert list(ep["epoch"]) == [1, 2] and ep["end_s"].iloc[-1] == runs["ttotal_s"].iloc[0]
    assert isinstance(runs["options"].iloc[0], dict)
    assert list(r.statistics.columns) == ["run", "policy", "name", "scope", "a", "b", "value"]


def test_scenario_as_text_and_dict():
    text = open(TINY).read()
    by_path = dpsim.run(TINY, policy="ddp")
    by_text = dpsim.run(text, policy="ddp")
    assert by_text.runs["ttotal_s"].iloc[0] == by_path.runs["ttotal_s"].iloc[0]
    if yaml is not None:
        d = yaml.safe_load(text)
        by_dict = dpsim.run(d, policy="ddp")
        assert by_dict.runs["ttotal_s"].iloc[0] == by_path.runs["ttotal_s"].iloc[0]


def test_misspelt_key_in_a_dict_names_the_key_and_suggests():
    d = yaml.safe_load(open(TINY)) if yaml else json.loads(json.dumps({}))
    if yaml is None:
        pytest.skip("python3-yaml missing: no dict to misspell from tiny.yaml")
    d["training"]["epochz"] = d["training"].pop("epochs")
    with pytest.raises(dpsim.InputError) as ei:
        dpsim.run(d)
    e = ei.value
    assert e.key == "training.epochz" and e.suggestion == "epochs"
    assert e.file == "<dict>" and e.line > 0 and e.column > 0
    assert "did you mean 'epochs'" in str(e)


def test_bad_file_position_and_bad_override(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(open(TINY).read().replace("  epochs: 2", "  epochs: -2"))
    with pytest.raises(dpsim.InputError) as ei:
        dpsim.run(str(bad))
    want = cli("check", bad, check=False)
    assert want.returncode == 2 and want.stderr.strip() == "dpsim: " + ei.value.message
    assert ei.value.file == str(bad) and ei.value.line == 14 and ei.value.key == "training.epochs"
    with pytest.raises(dpsim.InputError) as ei:
        dpsim.run(TINY, set={"devices.nosuch.count": 2})
    assert "nosuch" in ei.value.message
    with pytest.raises(dpsim.InputError):
        dpsim.run(TINY, policy="nosuch")
    with pytest.raises(dpsim.InputError):
        dpsim.run(str(tmp_path / "missing.yaml"))


def test_failing_run_raises_and_python_goes_on(tmp_path):
    # A speed trace that falls to 0 for good: the batch never ends, the run
    # fails in C (DPSIM_ERUN) and Python gets an exception, then runs on.
    tr = tmp_path / "dead.csv"
    tr.write_text("time_s,factor\n0,1\n0.05,0\n")
    text = open(TINY).read().replace("    batch_time: 20ms\n", "    batch_time: 20ms\n    speed_trace: dead.csv\n")
    with pytest.raises(dpsim.DpsimError) as ei:
        dpsim.run(text, policy="ddp", base_dir=str(tmp_path))
    assert "never" in ei.value.message or "stall" in ei.value.message or ei.value.code in (-1, -2)
    assert dpsim.run(TINY, policy="ddp").runs["ttotal_s"].iloc[0] > 0


def test_store_and_open_db(tmp_path):
    db = tmp_path / "r.db"
    r = dpsim.run(TINY, policy=["ddp", "cadp"], db=str(db))
    with dpsim.open_db(str(db)) as d:
        runs = d.runs
        assert list(runs["policy"]) == ["ddp", "cadp"]
        assert list(runs["ttotal_s"]) == list(r.runs["ttotal_s"])
        assert len(d.devices) == 6
        again = d.run(int(runs["run"].iloc[1]))
        assert again.runs["ttotal_s"].iloc[0] == r.runs["ttotal_s"].iloc[1]
    shown = cli("show", "1", "--db", db, "--json").stdout
    assert json.loads(shown)["runs"][0]["ttotal_s"] == r.runs["ttotal_s"].iloc[0]
    junk = tmp_path / "not-a-db.txt"
    junk.write_text("not a database\n" * 100)
    with pytest.raises(dpsim.RunError) as ei:
        dpsim.open_db(str(junk))
    assert "not-a-db.txt" in ei.value.message


def test_threads_share_a_scenario():
    import concurrent.futures
    s = dpsim.load(TINY)
    alone = s.run_json(policy="ddp,cadp")
    with concurrent.futures.ThreadPoolExecutor(2) as ex:
        got = list(ex.map(lambda _: s.run_json(policy="ddp,cadp"), range(4)))
    assert all(g == alone for g in got)


def test_example_script_runs(tmp_path):
    import runpy
    path = os.path.join(SRC, "docs", "python-example.py")
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        runpy.run_path(path, run_name="__main__")
    finally:
        os.chdir(cwd)
