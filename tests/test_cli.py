"""The simclient command line: scenarios as plug-ins with their own options, every law selectable,
bad input a clear error with exit status 1 (2 for usage errors)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT, run_cli


simclient = run_cli


def test_run_help_lists_the_registry():
    from simclient.scenarios import SCENARIOS

    r = simclient("run", "--help")
    assert r.returncode == 0
    for name in SCENARIOS:
        assert name in r.stdout


def test_every_scenario_has_a_help_page(capsys):
    """Help texts go through argparse's %-formatting: a parameter described as '90 % OA' broke
    ``run knee2d --help``."""
    from simclient.cli import main
    from simclient.scenarios import SCENARIOS

    for name in SCENARIOS:
        with pytest.raises(SystemExit) as exit_:
            main(["run", name, "--help"])
        assert exit_.value.code == 0, name
        assert "--json" in capsys.readouterr().out


def test_each_scenario_shows_only_its_own_options():
    ball = simclient("run", "bouncing-ball", "--help").stdout
    for option in ("--law", "--cr", "--window-ball", "--window-ground", "--t-end", "--method", "--ball", "--ground",
                   "--store", "--tables", "--json"):
        assert option in ball, option
    for option in ("--material", "--insert", "--femoral", "--analysis", "--condyle-medial", "--final-flexion-deg"):
        assert option not in ball, option
    knee = simclient("run", "artificial-knee", "--help").stdout
    assert "--material" in knee and "--insert" in knee and "--window-ball" not in knee


def test_double_layer_law_runs(sample_tables):
    r = simclient("run", "bouncing-ball", "--tables", str(sample_tables), "--law", "double-layer", "--t-end", "0.06",
                  "--json")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert s["law"] == "double-layer" and s["impacts"] == 1 and s["status"] == "ok"
    # 30 um stays inside the 0.415 mm first layer: the Hertz closed form holds
    assert s["max_indentation_m"][0] == pytest.approx(s["analytic"]["max_indentation"], rel=0.01)


@pytest.mark.parametrize("args, status, message", [
    (["--t-end", "-1"], 1, "t_end must be positive"),
    (["--t-end", "nan"], 2, "must be finite"),
    (["--law", "nope"], 1, "unknown law 'nope'"),
    (["--law", "gonthier", "--cr", "0"], 1, "coefficient of restitution"),
    (["--law", "flores", "--cr", "1.5"], 1, "coefficient of restitution"),
    (["--window-ball", "3by3"], 2, "window extent"),
    (["--mass", "-1"], 1, "mass"),
    (["--ball", "nope"], 1, "nope"),
])
def test_bad_input_is_a_clear_error(sample_tables, args, status, message):
    r = simclient("run", "bouncing-ball", "--tables", str(sample_tables), *args)
    assert r.returncode == status, r.stderr
    assert message in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("scenario, table, definition", [("natural-knee", "natural_tibial_cartilage", "natural_knee"),
                                                          ("artificial-knee", "tibial_insert", "grand_challenge_dm")])
def test_a_missing_real_table_says_how_to_build_it(tmp_path, scenario, table, definition):
    """Tables fitted from data outside the project are not built on demand: the error names the
    table and the definition that builds it, and nothing is written."""
    r = simclient("run", scenario, "--tables", str(tmp_path))
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert f"no table {table!r}" in r.stderr
    assert f"preprocess build sample_surfaces/real/{definition}.toml --out {tmp_path}" in r.stderr
    assert list(tmp_path.iterdir()) == []


def test_out_must_be_a_folder(sample_tables, tmp_path):
    f = tmp_path / "a-file"
    f.write_text("x")
    r = simclient("run", "bouncing-ball", "--tables", str(sample_tables), "--t-end", "0.01", "--out", str(f))
    assert r.returncode == 1 and "not a folder" in r.stderr and f.read_text() == "x"


def test_clearing_the_kernel_cache_finds_it_under_NUMBA_CACHE_DIR(tmp_path):
    """With ``NUMBA_CACHE_DIR`` set, numba caches kernels there, not beside the sources: clearing
    the cache (warm-up's first step) deletes them there and leaves the cache beside the sources
    alone. (In a child process, for the variable to apply.)"""
    in_tree = sorted(ROOT.glob("simclient/**/*.nb[ic]"))
    code = ("import numpy as np; from simclient.geometry._poses import point_velocity; "
            "point_velocity(np.zeros(3), np.zeros(3), np.zeros(3), np.ones(3)); "
            "from simclient.scenarios.warmup import clear_kernel_cache; print(clear_kernel_cache())")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                       env={**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    assert int(r.stdout) >= 2  # the kernel's index and data files at least
    assert list(tmp_path.rglob("*.nbi")) == [] and list(tmp_path.rglob("*.nbc")) == []
    assert sorted(ROOT.glob("simclient/**/*.nb[ic]")) == in_tree


def test_warmup_leaves_the_first_runs_nothing_to_compile(sample_tables, monkeypatch):
    """``simclient warmup`` (run by dev.py at set-up) compiles every kernel afresh into numba's
    cache: the first runs of the scenarios it covers, each in a new process, then load every kernel
    they call from the cache and compile none. (In a child process: run in this one, it would
    delete the cached kernels this process has loaded and could not save them again.)"""
    r = run_cli("warmup")
    assert r.returncode == 0 and "kernels compiled and cached" in r.stdout, r.stderr
    monkeypatch.setenv("NUMBA_DEBUG_CACHE", "1")  # numba's own report of each kernel loaded or saved
    for argv in (["bouncing-ball", "--t-end", "0.06"], ["knee2d", "--t-end", "0.02"],
                 ["knee3d", "--final-flexion-deg", "10"], ["prosthetic-knee", "--t-end", "0.05"]):
        r = run_cli("run", *argv, "--tables", str(sample_tables))
        assert r.returncode == 0, r.stderr
        cache = [line for line in r.stdout.splitlines() if line.startswith("[cache]")]
        assert any("data loaded" in line for line in cache), argv
        assert not any("saved" in line for line in cache), (argv, [line for line in cache if "saved" in line])
