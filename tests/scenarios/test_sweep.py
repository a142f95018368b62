"""``simclient sweep`` on Dask: the rows equal separate runs, failed runs are reported, a killed
worker does not lose the sweep, and a cluster started as separate processes runs it."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from simclient.cli import main
from simclient.errors import ParameterError
from simclient.scenarios import Tables, get_scenario
from simclient.scenarios.sweep import cluster, load_sweep, run_sweep
from conftest import free_port

pytestmark = pytest.mark.slow  # (the whole module: see `python3 dev.py test --fast`)

SPEC = """
scenario = "bouncing-ball"
[fixed]
t_end = 0.06
[grid]
law = ["hunt-crossley", "flores"]
cr = [0.5, 0.9]
K = [4e9, 5.5e9]
[output]
keys = ["impacts", "max_indentation_m", "separation_velocities_m_s"]
"""


@pytest.fixture
def spec_file(tmp_path):
    p = tmp_path / "sweep.toml"
    p.write_text(SPEC)
    return p


def _separate(spec, tables):
    """The same runs, one by one in this process."""
    cls = get_scenario(spec.scenario)
    rows = []
    for p in spec.runs():
        s = cls().run(cls.Params(**p), tables)
        rows.append({k: s[k] for k in spec.keys})
    return rows


def _same(rows, expected, keys):
    assert len(rows) == len(expected)
    for r, e in zip(rows, expected):
        for k in keys:
            assert r[k] == e[k] if not isinstance(e[k], list) else r[k] == pytest.approx(e[k], rel=1e-12)


def test_sweep_rows_equal_separate_runs(sample_tables, spec_file, tmp_path, capsys):
    """8 runs on 2 local workers: the same rows, in the specification's order, as 8 separate runs;
    the CSV, the Zarr table and a plot per swept parameter are written."""
    out = tmp_path / "out"
    code = main(["sweep", str(spec_file), "--scheduler", "local:2", "--tables", str(sample_tables), "--out", str(out),
                 "--json"])
    summary = json.loads(capsys.readouterr().out)
    assert code == 0 and summary["runs"] == 8 and summary["failed"] == []
    spec = load_sweep(spec_file)
    assert [{k: r[k] for k in ("law", "cr", "K")} for r in summary["rows"]] == \
        [{k: p[k] for k in ("law", "cr", "K")} for p in spec.runs()]
    _same(summary["rows"], _separate(spec, Tables(folder=str(sample_tables))), spec.keys)
    import zarr

    g = zarr.open_group(str(out / "sweep.zarr"), mode="r")
    assert list(g["cr"][:]) == [p["cr"] for p in spec.runs()]
    assert g.attrs["text_columns"]["law"] == [p["law"] for p in spec.runs()]
    for name in ("sweep.csv", "sweep_law.png", "sweep_cr.png", "sweep_K.png"):
        assert (out / name).stat().st_size > 0
    lists = [k for k in spec.keys if isinstance(summary["rows"][0][k], list)]
    assert lists, "the specification keeps a list-valued key: --json rows hold it as a JSON list"
    assert g.attrs["text_columns"][lists[0]] == [r[lists[0]] for r in summary["rows"]]


def test_plot_labels_carry_units():
    from simclient.scenarios.sweep import axis_label

    assert axis_label("max_indentation_m") == "max indentation [m]"
    assert axis_label("impact_velocities_m_s") == "impact velocities [m/s]"
    assert axis_label("energy_drift") == "energy drift [relative]"
    assert axis_label("impacts") == "impacts"
    assert axis_label("K", "N/m^1.5") == "K [N/m^1.5]"


def test_failed_runs_are_reported(sample_tables, tmp_path):
    """A run that raises in its worker is a failed row (parameters and error); the others complete."""
    p = tmp_path / "bad.toml"
    p.write_text('scenario = "bouncing-ball"\n[fixed]\nt_end = 0.02\n[grid]\nwindow_ball = [[3, 3], [1, 1]]\n')
    spec = load_sweep(p)
    longer = dataclasses.replace(spec, fixed={"t_end": 0.06})
    with cluster("local:1") as client:
        s = run_sweep(spec, Tables(folder=str(sample_tables)), client)
        # a second sweep on the same cluster gets its own rows, not the first one's
        s2 = run_sweep(longer, Tables(folder=str(sample_tables)), client)
    assert s["runs"] == 2 and len(s["failed"]) == 1
    failed = s["failed"][0]
    assert failed["run"] == 1 and failed["parameters"]["window_ball"] == [1, 1]
    assert "narrower than 3 records" in failed["error"]
    assert "error" not in s["rows"][0] and s["rows"][0]["impacts"] == 0  # 0.02 s: before the first impact
    assert s2["rows"][0]["impacts"] == 1 and len(s2["failed"]) == 1  # first impact at 0.049 s


BAD_SPECS = [
    ('scenario = "nope"', "unknown scenario"),
    ('scenario = "bouncing-ball"\n[grid]\nmass = 1.0', "non-empty list"),
    ('scenario = "bouncing-ball"\n[grid]\nwings = [1, 2]', "unknown bouncing-ball parameter"),
    ('scenario = "bouncing-ball"\n[grid]\nlaw = ["hertz", "nope"]', "unknown law 'nope'"),
    ('scenario = "bouncing-ball"\n[sample]\nn = 2\nK = {gamma = [1, 2]}', "unknown distribution"),
    ('scenario = "bouncing-ball"\n[extras]\nx = 1', "unknown section"),
    ('scenario = "bouncing-ball"\n[grid\nlaw = 1', "cannot read"),
    # each value is checked as its command-line option checks it, before anything runs
    ('scenario = "bouncing-ball"\n[grid]\nvx = [0.1, "fast"]', "vx must be a finite number, got \"fast\""),
    ('scenario = "bouncing-ball"\n[grid]\nvx = [nan]', "vx must be a finite number, got nan"),
    ('scenario = "bouncing-ball"\n[fixed]\nlaw = 3', "law must be a name, got 3"),
    ('scenario = "bouncing-ball"\n[grid]\nwindow_ball = [[3, 3], [2.5, 3]]', "window extent must look like 3x9"),
    ('scenario = "bouncing-ball"\n[grid]\nwindow_ball = ["3x3", "0x3"]', "at least 1"),
    ('scenario = "bouncing-ball"\n[sample]\nlaw = {uniform = [0, 1]}', "law must be a name, got 0."),
    ('scenario = "knee2d"\n[grid]\ncr = [0.5, true]', "cr must be a finite number, got true"),
    # the whole specification is checked, key by key, before anything runs or is written
    ('scenario = "bouncing-ball"\nfixed = 3', r"\[fixed\] must be a table of keys, got 3"),
    ('scenario = "bouncing-ball"\n[sample]\nn = "abc"\nK = {uniform = [4e9, 6e9]}',
     r'\[sample\] n must be a whole number of at least 1, got "abc"'),
    ('scenario = "bouncing-ball"\n[sample]\nn = inf\nK = {uniform = [4e9, 6e9]}', r"n must be a whole number .* got inf"),
    ('scenario = "bouncing-ball"\n[sample]\nn = 1.7\nK = {uniform = [4e9, 6e9]}', r"n must be a whole number .* got 1.7"),
    ('scenario = "bouncing-ball"\n[sample]\nn = 2\nK = {uniform = ["a", 6e9]}', "uniform takes two finite numbers"),
    ('scenario = "bouncing-ball"\n[sample]\nn = 2\nK = {normal = [5e9, -1]}', "a positive standard deviation"),
    ('scenario = "bouncing-ball"\n[output]\nkeys = "impacts"', r"keys must be a list of summary keys"),
    # a later random draw out of range: found before anything runs (cr must be in (0, 1])
    ('scenario = "bouncing-ball"\n[grid]\nlaw = ["flores"]\n[sample]\nn = 50\nseed = 1\ncr = {normal = [0.9, 0.2]}',
     r"run \d+: .*coefficient of restitution"),
    ('scenario = "bouncing-ball"\n[grid]\nvx = ' + str(list(range(200))) + '\ncr = ' + str([0.1] * 60),
     "12000 runs, more than the 10000 allowed"),
]


@pytest.mark.parametrize("text, words", BAD_SPECS)
def test_bad_specifications(tmp_path, text, words):
    p = tmp_path / "s.toml"
    p.write_text(text)
    with pytest.raises(ParameterError, match=words):
        spec = load_sweep(p)
        spec.runs()


def test_monte_carlo_draws_are_reproducible(tmp_path):
    p = tmp_path / "mc.toml"
    p.write_text('scenario = "bouncing-ball"\n[grid]\nlaw = ["flores"]\n[sample]\nn = 5\nseed = 3\n'
                 'K = {uniform = [4e9, 6e9]}\ncr = {choice = [0.5, 0.7]}\n')
    runs = load_sweep(p).runs()
    assert len(runs) == 5 and runs == load_sweep(p).runs()
    assert all(4e9 <= r["K"] <= 6e9 and r["cr"] in (0.5, 0.7) for r in runs)


def test_killed_worker_does_not_lose_the_sweep(sample_tables, spec_file):
    """A worker process killed while the sweep runs: its tasks run again elsewhere (Dask's
    retries), and every row comes back."""
    spec = load_sweep(spec_file)
    result = {}
    with cluster("local:2") as client:
        pids = client.run(os.getpid)
        started = threading.Event()

        def sweep():
            result["s"] = run_sweep(spec, Tables(folder=str(sample_tables)), client,
                                    progress=lambda done, n: started.set())
        th = threading.Thread(target=sweep)
        th.start()
        assert started.wait(120), "no run finished"
        os.kill(next(iter(pids.values())), signal.SIGKILL)
        th.join(300)
    s = result["s"]
    assert s["runs"] == 8 and s["failed"] == [], s["failed"]
    _same(s["rows"], _separate(spec, Tables(folder=str(sample_tables))), spec.keys)


def test_sweep_on_a_cluster_of_separate_processes(sample_tables, spec_file, capsys):
    """``dask scheduler`` and two ``dask worker`` processes, the sweep sent with --scheduler tcp://."""
    port = free_port()
    bin_dir = Path(sys.executable).parent
    procs = [subprocess.Popen([str(bin_dir / "dask"), "scheduler", "--port", str(port), "--no-dashboard"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        for _ in range(2):
            procs.append(subprocess.Popen([str(bin_dir / "dask"), "worker", f"tcp://127.0.0.1:{port}", "--nthreads",
                                           "1", "--no-dashboard"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        from distributed import Client

        with Client(f"tcp://127.0.0.1:{port}", timeout="30s") as c:
            c.wait_for_workers(2, timeout=60)
        code = main(["sweep", str(spec_file), "--scheduler", f"tcp://127.0.0.1:{port}", "--tables", str(sample_tables),
                     "--json"])
        s = json.loads(capsys.readouterr().out)
        assert code == 0 and s["runs"] == 8 and not s["failed"]
        spec = load_sweep(spec_file)
        _same(s["rows"], _separate(spec, Tables(folder=str(sample_tables))), spec.keys)
    finally:
        for p in procs[::-1]:
            p.terminate()
        for p in procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
        time.sleep(0.1)


def test_a_scheduler_that_does_not_answer_is_named(monkeypatch):
    # (distributed's own OSError, after its 20 s of retries, was a traceback)
    import distributed

    from simclient.errors import ServiceError

    def unreachable(address, timeout):
        raise OSError(f"Timed out trying to connect to {address} after {timeout}")
    monkeypatch.setattr(distributed, "Client", unreachable)
    with pytest.raises(ServiceError, match=r"sweep: no Dask scheduler answers at tcp://127.0.0.1:1 \(Timed out"):
        with cluster("tcp://127.0.0.1:1"):
            pass


@pytest.mark.parametrize("text, words", BAD_SPECS)
def test_a_bad_specification_is_one_line_exit_1_and_writes_nothing(tmp_path, capsys, text, words):
    """Every bad specification above through the command line: one line naming the problem, exit
    1, no traceback, and no output folder or tables created."""
    import re

    spec = tmp_path / "s.toml"
    spec.write_text(text)
    out = tmp_path / "out"
    assert main(["sweep", str(spec), "--out", str(out), "--tables", str(tmp_path / "tables")]) == 1
    err = capsys.readouterr().err
    assert re.search(words, err) and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists() and not (tmp_path / "tables").exists()
