"""dpsim.sweep: the CLI's grid, seeds and bits, whatever the job count;
failed points listed, not raised; bad axes are input errors."""
import json
import sqlite3

import pytest

import dpsim
from conftest import TINY, cli

VARY = {"devices.cpu.link.down": "1Mbps..100Mbps:log:3", "devices.gpu.count": [1, 2]}


def test_grid_is_the_clis():
    pts = dpsim.grid(VARY)
    assert len(pts) == 6
    assert pts[0] == {"devices.cpu.link.down": "1Mbps", "devices.gpu.count": "1"}
    assert pts[2]["devices.cpu.link.down"] == "10Mbps"


def test_sweep_same_bits_as_cli_sweep_and_any_jobs(tmp_path):
    db = tmp_path / "s.db"
    cli("sweep", TINY, "--vary", "devices.cpu.link.down=1Mbps..100Mbps:log:3", "--vary", "devices.gpu.count=1,2",
        "--policy", "ddp,cadp", "--jobs", "2", "--db", db, "-q")
    con = sqlite3.connect(str(db))
    want = {(r[0], r[1]): r[2] for r in con.execute("SELECT point_json, policy, ttotal_s FROM runs")}
    with dpsim.open_db(str(db)) as d:  # stored sweep values as SI numbers beside their text
        runs = d.runs
        assert sorted(set(runs["devices.cpu.link.down_si"])) == [125000.0, 1250000.0, 12500000.0]
        assert set(runs["devices.gpu.count_si"]) == {1.0, 2.0}
        assert set(runs["devices.cpu.link.down"]) == {"1Mbps", "10Mbps", "100Mbps"}
        v = d.values  # the rows behind those columns, with their unit
        assert set(v["source"]) == {"point"} and len(v) == 2 * len(runs)
        assert set(v[v["key"] == "devices.cpu.link.down"]["unit"]) == {"B/s"}
        assert set(v[v["key"] == "devices.gpu.count"]["unit"]) == {""}
    # the numbers are SQL's too: sorted by bandwidth, not by text ("100Mbps" < "10Mbps")
    order = [r[0] for r in con.execute(
        "SELECT v.text FROM runs r JOIN run_values v ON v.run_id = r.id AND v.key = 'devices.cpu.link.down'"
        " WHERE r.policy = 'ddp' AND r.point_json LIKE '%\"1\"}' ORDER BY v.si")]
    assert order == ["1Mbps", "10Mbps", "100Mbps"]
    one = dpsim.sweep(TINY, VARY, policy="ddp,cadp", jobs=1)
    two = dpsim.sweep(TINY, VARY, policy=["ddp", "cadp"], jobs=2)
    assert one.data["runs"] == two.data["runs"] and not one.failures
    runs = two.runs
    assert len(runs) == 12
    for _, r in runs.iterrows():
        pj = json.dumps({"devices.cpu.link.down": r["devices.cpu.link.down"],
                         "devices.gpu.count": r["devices.gpu.count"]}, separators=(",", ":"))
        assert want[(pj, r["policy"])] == r["ttotal_s"]


def test_stored_values_in_the_unit_the_scenario_read(tmp_path):
    db = tmp_path / "v.db"
    cli("run", TINY, "--policy", "ddp", "--set", "devices.cpu.link.up=20", "--set", "training.epochs=1",
        "--db", db, "-q")
    with dpsim.open_db(str(db)) as d:
        v = d.values.set_index("key")
        assert (v["source"] == "set").all()
        assert v.loc["devices.cpu.link.up", "si"] == 2.5  # a bare bandwidth is bit/s: 20 bit/s = 2.5 B/s
        assert v.loc["devices.cpu.link.up", "unit"] == "B/s"
        assert v.loc["training.epochs", "si"] == 1.0 and v.loc["training.epochs", "unit"] == ""
    # a sweep of bare bandwidths: bit/s as the scenario reads them, so 1000000 is 125000 B/s
    db2 = tmp_path / "w.db"
    cli("sweep", TINY, "--vary", "devices.cpu.link.down=1000000,2000000", "--policy", "ddp", "--db", db2, "-q")
    with dpsim.open_db(str(db2)) as d:
        # a sweep stores its points as its workers finish them: any order
        assert sorted(d.runs["devices.cpu.link.down_si"]) == [125000.0, 250000.0]


def test_failed_points_are_listed_not_raised():
    # Each value loads alone; 16 x 1 MiB of activations do not fit in 8 MiB.
    res = dpsim.sweep(TINY, {"model.activation_bytes_per_sample": ["0", "1MiB"],
                             "devices.gpu.memory": ["1GiB", "8MiB"]}, policy="ddp", jobs=2)
    assert len(res) == 3 and len(res.failures) == 1
    f = res.failures[0]
    assert f["point"] == {"model.activation_bytes_per_sample": "1MiB", "devices.gpu.memory": "8MiB"}
    assert "cannot hold" in f["error"]


def test_bad_axis_is_input_error():
    with pytest.raises(dpsim.InputError) as ei:
        dpsim.sweep(TINY, {"devices.gpu.cuont": "1..2"})
    assert "cuont" in ei.value.message
