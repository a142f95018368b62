"""The simclient command line: scenarios as plug-ins with their own options, every law selectable,
bad input a clear error with exit status 1 (2 for usage errors)."""

from __future__ import annotations

import argparse
import json
import os
import re
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


def _readme_commands():
    """The command lines the README and the documentation pages show (code spans and fenced lines)
    of the three CLIs, as token lists."""
    text = "\n".join(p.read_text() for p in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))])
    lines = re.findall(r"`([^`\n]+)`", text) + [ln for block in re.findall(r"```\w*\n(.*?)```", text, re.S)
                                                for ln in block.splitlines()]
    for line in lines:
        for command in re.split(r"&&|;|\|", line.split("#")[0]):
            m = re.match(r"\s*(?:\$\s*)?(?:\.venv/bin/)?(simclient|preprocess|surfacestore) (.*)", command)
            if m:
                yield line, m.group(1), re.findall(r"[\w./:=-]+", m.group(2))


def _problems(parser, path, rest, cases):
    """What a README command line ``path + rest`` names that ``parser`` (its program's) does not know."""
    while rest and not rest[0].startswith("-"):  # subcommands, then positionals
        subs = next((a.choices for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        if subs is None:
            break
        if rest[0] not in subs:
            return [f"{' '.join(path)} has no subcommand {rest[0]!r}"]
        parser = subs[rest.pop(0)]
        path = path + [parser.prog.split()[-1]]
    names = [t for t in rest if not t.startswith("-") and t.islower() and "/" not in t]  # not DIR, a path
    choices = next((a.choices for a in parser._actions if not a.option_strings and a.choices), None)
    problems = []
    if choices and names and rest[0] == names[0] and names[0] not in choices:  # a study's name
        problems.append(f"{' '.join(path)}: {names[0]!r} is not one of {sorted(choices)}")
    if path[1:] == ["validate"]:
        problems += [f"validate has no case {t!r}" for t in names if t not in cases]
    known = {o for a in parser._actions for o in a.option_strings}
    return problems + [f"{' '.join(path)} has no option {t.split('=')[0]}" for t in rest
                       if t.startswith("--") and t.split("=")[0] not in known]


def test_every_command_the_readme_shows_exists():
    """Each README command line of ``simclient``, ``preprocess`` and ``surfacestore`` names
    subcommands, studies, validation cases and options that its parser knows: a renamed option
    or scenario that the README still shows fails here. Placeholders (``DIR``, ``TABLE``) and
    options' values are not checked."""
    from preprocess.cli import build_parser as preprocess_parser
    from simclient.cli import build_parser as simclient_parser
    from simclient.scenarios.validate import CASES
    from surfacestore.cli import build_parser as surfacestore_parser

    parsers = {"simclient": simclient_parser(), "preprocess": preprocess_parser(),
               "surfacestore": surfacestore_parser()}
    commands = [(line, prog, tokens) for line, prog, tokens in _readme_commands()
                if tokens[:2] != ["run", "my-knee"]]  # (the README's example of adding a scenario)
    assert len(commands) > 60
    wrong = [f"{problem}, in: {line}" for line, prog, tokens in commands
             for problem in _problems(parsers[prog], [prog], list(tokens), CASES)]
    assert not wrong, "\n".join(wrong)


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
    (["--gap", "0"], 1, "gap must be positive and finite (m), got 0.0"),  # (was a ZeroDivisionError)
    (["--radius", "0.03"], 1, "radius 0.03 m, but the ball table ball is 0.02 m from its centre at most"),
    (["--ball", "nope"], 1, "nope"),
])
def test_bad_input_is_a_clear_error(sample_tables, args, status, message):
    r = simclient("run", "bouncing-ball", "--tables", str(sample_tables), *args)
    assert r.returncode == status, r.stderr
    assert message in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("args, status, message", [
    (["run", "knee3d", "--rtol", "-1"], 1, "knee3d: rtol must be positive and finite, got -1.0"),
    (["run", "knee2d", "--atol=-1e-9"], 1, "knee2d: atol must be positive and finite, got -1e-09"),
    # (atol 0 left the states' zero components without an error scale: scipy's solvers never ended)
    (["run", "prosthetic-knee", "--atol", "0"], 1, "prosthetic-knee: atol must be positive and finite, got 0.0"),
    (["run", "knee3d", "--atol", "0"], 1, "knee3d: atol must be positive and finite, got 0.0"),
    (["run", "artificial-knee", "--grid", "0x5"], 2, "sides must be at least 1"),
    (["run", "artificial-knee", "--pressure-grid", "50x0"], 2, "sides must be at least 1"),
    (["run", "artificial-knee", "--refine-tol", "1.5"], 1, "artificial-knee: refine_tol must lie in [0, 1)"),
    (["run", "natural-knee", "--refine-tol", "-1"], 1, "natural-knee: refine_tol must lie in [0, 1)"),
    (["study", "knee2d-laws", "--workers", "0"], 2, "must be at least 1"),
    (["bench", "soak", "--minutes", "0"], 2, "must be a positive number of minutes, got '0'"),  # (a ValueError after)
    # values that passed the checks and met a traceback or ran for ever (each found by trying
    # 0, -1, 1e300 and 1e-300 for every number of every scenario)
    (["run", "knee3d", "--E", "0"], 1, "a material needs 0 < E < inf (Pa) and -1 < nu < 0.5, got E = 0.0"),
    (["run", "knee3d", "--nu", "1e300"], 1, "a material needs 0 < E < inf (Pa) and -1 < nu < 0.5"),
    (["run", "knee3d", "--max-step", "1e-300"], 1, "max_step must be at least a 10^-9th of the run"),
    (["run", "bouncing-ball", "--gap", "1e300"], 1, "non-finite coordinates or distances (c_i = [-0.03, 0.0, 1e+300] m"),
    (["run", "bouncing-ball", "--relax-ratio", "1e-300"], 1, "rho = E_inf / E_0 must be in [1e-6, 1]"),
    (["run", "blankevoort", "--flexion-max-deg", "1e300"], 1, "flexion_max_deg must be at most 180 deg"),
    (["run", "blankevoort", "--flexion-step-deg", "1e-300"], 1, "makes more than 10000 steps to 100 deg"),
    (["run", "prosthetic-knee", "--stance-duration", "1e-300"], 1, "stance_duration must lie in [0.01, 100] s"),
    (["run", "prosthetic-knee", "--project-every", "1e-300"], 1, "project_every must be at least a 10^-9th of the run"),
    (["run", "layer-drop", "--rho", "0"], 1, "layer-drop: rho must lie in [1e-6, 1], got 0.0"),
    (["run", "layer-drop", "--rho", "0.5", "--method", "Radau"], 1, "needs DOP853-jit (or rk4)"),
    (["run", "layer-drop", "--ball", "ef_paraboloid"], 1, "layer-drop: the ball's table 'ef_paraboloid' is not a sphere"),
    (["run", "layer-drop", "--v0", "1e300"], 1, "the ball's kinetic energy 0.5 mass v0^2 overflows"),  # (was an OverflowError)
])
def test_bad_settings_are_a_clear_error(sample_tables, args, status, message):
    """Integration tolerances, element grids and worker counts out of range (each once ran: a
    negative rtol as if it were valid, a 0 x 5 grid into a division by zero, 0 workers as the CPUs)."""
    r = simclient(*args, "--tables", str(sample_tables))
    assert r.returncode == status, r.stderr
    # (an error on stderr; a run that starts and fails, in its report's FAILED line on stdout)
    assert message in (r.stderr if status == 2 or "FAILED: " not in r.stdout else r.stdout)
    assert "Traceback" not in r.stderr


def test_a_run_that_fails_at_its_first_step_is_reported(sample_tables):
    # (its summary read the state at t = 0 from a dense output that had no segment yet: an error
    # "t = 0.0 s is outside the simulated interval [0, 0.0]" instead of the integrator's own)
    r = simclient("run", "knee2d", "--tables", str(sample_tables), "--t-end", "0.05", "--atol", "1e-300", "--json")
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    s = json.loads(r.stdout)
    assert s["status"] == "failed" and s["message"].startswith("integrator failed at t = 0 s")
    assert s["initial_flexion_deg"] == s["final_flexion_deg"]
    # the text report says so too (knee2d's, knee3d's and the knees' reports showed how far a failed
    # run came, and not that it failed)
    r = simclient("run", "knee2d", "--tables", str(sample_tables), "--t-end", "0.05", "--atol", "1e-300")
    assert r.returncode == 1 and "\n  FAILED: integrator failed at t = 0 s" in r.stdout, r.stdout


@pytest.mark.parametrize("store", ["127.0.0.1:8000", "ftp://host", "http://a:8000,b:8000", ""])
def test_a_store_that_is_not_an_http_url_is_a_usage_error(store):
    # (one without its scheme was read as a folder: "no surface table at 127.0.0.1:8000/v1/surfaces/ball")
    r = simclient("run", "bouncing-ball", "--store", store)
    assert r.returncode == 2 and f"a store is an http:// or https:// base URL (http://host:port), got {store!r}" in r.stderr


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


@pytest.mark.slow
def test_a_sample_table_chosen_by_name_is_built_when_missing(tmp_path):
    """``--ball ball_rolling`` (a sample table, not the scenario's default) is built in an empty
    ``--tables`` folder as the defaults are; a name that is no sample table is only reported."""
    r = simclient("run", "bouncing-ball", "--tables", str(tmp_path), "--ball", "ball_rolling", "--friction", "0.3",
                  "--t-end", "0.06", "--json")
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ball_rolling.zarr", "ground.zarr"]
    assert json.loads(r.stdout)["rolling"]["vx_after_first_impact_m_s"] > 0.1
    r = simclient("run", "bouncing-ball", "--tables", str(tmp_path), "--ball", "no_such_ball")
    assert r.returncode == 1 and f"no surface table at {tmp_path / 'no_such_ball.zarr'}" in r.stderr


@pytest.mark.parametrize("command", [["preprocess.cli", "inspect", "{tables}/ground.zarr"],
                                     ["simclient.cli", "validate", "--tables", "{tables}", "hertz-indentation"]])
def test_output_read_by_a_reader_that_went_away_ends_quietly(sample_tables, command):
    """``... | head``: a reader that stops reading is no error to report (no traceback, no message);
    the command stops with status 1."""
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first write
    try:
        r = subprocess.run([sys.executable, "-m", *(a.format(tables=sample_tables) for a in command)],
                           stdout=write, stderr=subprocess.PIPE, text=True)
    finally:
        os.close(write)
    assert (r.returncode, r.stderr) == (1, "")


def test_out_must_be_a_folder(sample_tables, tmp_path):
    f = tmp_path / "a-file"
    f.write_text("x")
    r = simclient("run", "bouncing-ball", "--tables", str(sample_tables), "--t-end", "0.01", "--out", str(f))
    assert r.returncode == 1 and "not a folder" in r.stderr and f.read_text() == "x"
    # a folder that cannot be made is said before the run (it was a traceback after it, the results lost)
    for command in (["run", "bouncing-ball", "--t-end", "0.01"], ["study", "knee2d-laws"]):
        r = simclient(*command, "--tables", str(sample_tables), "--out", str(f / "sub"))
        assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
        assert r.stderr == f"simclient: error: --out {f / 'sub'}: cannot make this folder (Not a directory: {f / 'sub'})\n"


@pytest.mark.parametrize("program", ["simclient", "preprocess", "surfacestore"])
def test_every_program_says_its_version(program):
    """``--version``: the distribution's version (one source: ``surfacestore.__version__``)."""
    from importlib.metadata import version

    r = subprocess.run([sys.executable, "-m", f"{program}.cli", "--version"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == f"{program} {version('surfacetables')}", (r.stdout, r.stderr)


def test_peak_rss_is_the_programs_own_not_its_parents():
    """A run started by a process holding 300 MB reports its own peak memory (``ru_maxrss`` would
    report the parent's, kept across ``exec``): what a benchmark's child prints is the child's."""
    import subprocess
    import sys

    held = bytearray(300 * 1024 * 1024)
    held[::4096] = b"\x01" * len(held[::4096])  # (touched: resident)
    r = subprocess.run([sys.executable, "-c", "from simclient.cli import _peak_rss_mb; print(_peak_rss_mb())"],
                       capture_output=True, text=True, check=True)
    assert float(r.stdout) < 200, r.stdout
    del held
