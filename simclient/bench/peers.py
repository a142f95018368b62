"""The bouncing ball against a compiled peer (``simclient bench peers``): OpenSim 4.6 (Simbody).

In one run on this machine, medians of ``repeats``:

- ours: ``simclient run bouncing-ball`` on the local sample tables (Hertz, K = 5.5e9 N/m^1.5,
  rtol 1e-10), the integration's wall time minus the windows' waiting during it, with the compiled
  stages (``DOP853-jit``, the default) and with scipy's DOP853 (the reference path); and the
  whole run in a warm process (opening the tables, the first windows' fetch, the integration, the
  impacts' analysis) from the local tables and from a store on loopback;
- OpenSim: the same ball (0.092 kg, R = 20 mm, 12 mm above the floor, 0.15 m/s sideways) as an
  analytic ``ContactSphere`` on a ``ContactHalfSpace`` with ``HuntCrossleyForce`` (no dissipation,
  no friction), ``Manager.integrate(0.4)`` with recording off, at accuracy 1e-5 and 1e-8. OpenSim
  combines the two geometries' stiffness k as ``(k^(2/3) k^(2/3) / (k^(2/3) + k^(2/3)))^(3/2) =
  k / 2^(3/2)`` and applies ``(4/3) k_c sqrt(R) delta^(3/2)``, so ``k = 2^(3/2) 3 K / (4 sqrt(R))``
  gives the same law; the largest indentation (from an untimed run stepped every 2 us through the
  first impact) shows the mapping is right;
- scipy's DOP853 on the same analytic ball (a half-space, no tables), events at contact, the same
  tolerances as ours: what the integrator costs in Python without any table;
- whole processes, what a user waits for: ``simclient run bouncing-ball --json`` against OpenSim's
  ball as a script (``simclient/bench/_opensim_ball.py``, importing only OpenSim) at accuracy 1e-8,
  timed in turns, and the command line's ``--help``.

OpenSim is an optional extra (``pip install -e '.[peers]'``); without it its rows are skipped and
the report says so. Energy change: relative, between t = 0 and the end (in flight).
"""

from __future__ import annotations

import math
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from simclient.bench import _opensim_ball
from simclient.bench._opensim_ball import GAP, MASS, RADIUS, T_END, VX, X0, G, K, ball_model, manager
from simclient.bench._server import serve_store
from simclient.scenarios import Tables

__all__ = ["run", "report"]

#: the whole run's targets (ms)
WHOLE_TARGET_MS = {"local tables": 60.0, "loopback store": 100.0}


def _ours_once(tables: Tables, method: str = "DOP853-jit", whole: bool = False) -> Callable[[], tuple[float, Any]]:
    """One ``simclient run bouncing-ball`` in this process: ``() -> (seconds, summary)``, the
    integration's wall time minus the windows' waiting during it, or with ``whole`` the whole run
    (opening the tables, the first windows' fetch, the integration, the impacts' analysis)."""
    from simclient.scenarios import get_scenario

    cls = get_scenario("bouncing-ball")

    def once() -> tuple[float, Any]:
        t0 = time.perf_counter()
        s = cls().run(cls.Params(method=method), tables)
        return (time.perf_counter() - t0 if whole else s["wall_s"] - s["window_wait_s"]), s
    once()  # the first run loads the compiled kernels and the tables' pages
    return once


def _ours(tables: Tables, repeats: int, method: str = "DOP853-jit", whole: bool = False) -> dict[str, Any]:
    """Medians of ``repeats`` warm runs (see :func:`_ours_once`)."""
    once = _ours_once(tables, method, whole)
    runs = [once() for _ in range(repeats)]
    s = runs[-1][1]
    return {"wall_ms": statistics.median(w for w, _ in runs) * 1e3, "steps": s["steps"], "rhs": s["rhs_evaluations"],
            "energy_change": s["energy_drift"], "impacts": s["impacts"], "max_indentation_um": s["max_indentation_m"][0] * 1e6}


def _analytic(repeats: int) -> dict[str, Any]:
    """The ball on an analytic half-space with scipy's DOP853 (state x, z, vx, vz)."""
    from scipy.integrate import solve_ivp

    def rhs(t: float, y: np.ndarray) -> np.ndarray:
        d = RADIUS - y[1]
        f = K * d**1.5 if d > 0 else 0.0
        return np.array([y[2], y[3], 0.0, -G + f / MASS])

    def run() -> tuple[float, int, int, float, int, float]:
        y, t, impacts, dmax, nfev, steps = np.array([X0, RADIUS + GAP, VX, 0.0]), 0.0, 0, 0.0, 0, 0
        in_contact = False
        t0 = time.perf_counter()
        while t < T_END:
            def event(tt: float, yy: np.ndarray) -> float:
                return RADIUS - yy[1]
            event.terminal = True  # type: ignore[attr-defined]
            event.direction = -1.0 if in_contact else 1.0  # type: ignore[attr-defined]
            sol = solve_ivp(rhs, (t, T_END), y, method="DOP853", rtol=1e-10, atol=1e-12, events=event,
                            dense_output=in_contact)
            nfev += sol.nfev
            steps += len(sol.t) - 1
            if in_contact:
                tt = np.linspace(sol.t[0], sol.t[-1], 2001)
                dmax = max(dmax, float((RADIUS - sol.sol(tt)[1]).max()))
            t, y = float(sol.t[-1]), sol.y[:, -1]
            if sol.status == 1:
                in_contact = not in_contact
                impacts += in_contact
                y = y.copy()
                y[1] = RADIUS + (1e-15 if not in_contact else -1e-15)
        wall = time.perf_counter() - t0
        e = 0.5 * MASS * (y[2] ** 2 + y[3] ** 2) + MASS * G * y[1]
        e0 = MASS * G * (RADIUS + GAP) + 0.5 * MASS * VX**2
        return wall, steps, nfev, (e - e0) / e0, impacts, dmax
    results = [run() for _ in range(repeats)]
    wall, steps, nfev, de, impacts, dmax = results[-1]
    return {"wall_ms": statistics.median(r[0] for r in results) * 1e3, "steps": steps, "rhs": nfev,
            "energy_change": de, "impacts": impacts, "max_indentation_um": dmax * 1e6}


def _opensim_once(accuracy: float) -> tuple[Callable[[], float], dict[str, Any]]:
    """OpenSim's ball: ``() -> seconds`` of one ``Manager.integrate(0.4)``, and its energy change
    and largest indentation (from untimed runs)."""
    import opensim as osim

    model, state, coords = ball_model()

    def energy(s: Any) -> float:
        model.realizeDynamics(s)
        return float(model.calcKineticEnergy(s) + model.calcPotentialEnergy(s))

    def once() -> float:
        m = manager(model, osim.State(state), accuracy)
        t0 = time.perf_counter()
        m.integrate(T_END)
        return time.perf_counter() - t0
    e0 = energy(osim.State(state))
    m = manager(model, osim.State(state), accuracy)  # (the state integrate returns is the manager's: keep it alive)
    de = (energy(m.integrate(T_END)) - e0) / e0
    # the largest indentation: an untimed run stepped every 2 us through the first impact
    m, t, ymin = manager(model, osim.State(state), accuracy), 0.045, math.inf
    s = m.integrate(t)
    while t < 0.056:
        t += 2e-6
        s = m.integrate(t)
        ymin = min(ymin, coords.get(4).getValue(s))
    return once, {"energy_change": de, "max_indentation_um": (RADIUS - ymin) * 1e6}


def _opensim(accuracy: float, repeats: int) -> dict[str, Any]:
    once, row = _opensim_once(accuracy)
    return {"wall_ms": statistics.median(once() for _ in range(repeats)) * 1e3, **row}


def _timed(command: list[str]) -> float:
    """Wall time (s) of ``command`` as a whole process, its output discarded; an error if it fails."""
    t0 = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def _processes(tables: Path, repeats: int, opensim: bool) -> dict[str, Any]:
    """What a user waits for, whole processes timed in turns (ours, OpenSim's, ours, ...): the
    bouncing ball from the command line on the local tables, OpenSim's ball as a script at accuracy
    1e-8, and the command line's help; medians (ms) and the median of the pairs' ratios."""
    scripts = Path(sys.executable).parent
    cli = [str(scripts / "simclient")] if (scripts / "simclient").exists() else [sys.executable, "-m", "simclient.cli"]
    cases = {"simclient run bouncing-ball --json": [*cli, "run", "bouncing-ball", "--tables", str(tables), "--json"],
             "simclient --help": [*cli, "--help"],
             "simclient run bouncing-ball --help": [*cli, "run", "bouncing-ball", "--help"]}
    if opensim:
        cases["OpenSim 4.6 ball script (accuracy 1e-8)"] = [sys.executable, _opensim_ball.__file__, "1e-8"]
    for command in cases.values():  # (once untimed: the page cache, a kernel module built if missing)
        _timed(command)
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(repeats):
        for name, command in cases.items():
            times[name].append(_timed(command))
    out: dict[str, Any] = {name: {"wall_ms": statistics.median(t) * 1e3} for name, t in times.items()}
    if opensim:
        ours, peer = times["simclient run bouncing-ball --json"], times["OpenSim 4.6 ball script (accuracy 1e-8)"]
        out["ratio_in_turns"] = statistics.median(a / b for a, b in zip(ours, peer))
    return out


def run(tables: Path, quick: bool = False, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    say = progress or (lambda s: None)
    repeats = 3 if quick else 9
    out: dict[str, Any] = {"repeats": repeats, "rows": {}}
    for method in ("DOP853-jit", "DOP853"):
        say(f"ours: the bouncing ball on the local tables, {method}")
        out["rows"][f"ours (tables, {method} rtol 1e-10)"] = _ours(Tables(folder=str(tables)), repeats, method)
    say("ours: whole runs, local tables and the loopback store")
    out["whole"] = {"local tables": _ours(Tables(folder=str(tables)), repeats, whole=True)}
    with serve_store(tables) as url:
        out["whole"]["loopback store"] = _ours(Tables(store=url), repeats, whole=True)
    say("scipy DOP853 on the analytic ball")
    out["rows"]["scipy DOP853, analytic ball (rtol 1e-10)"] = _analytic(repeats)
    try:
        import opensim  # noqa: F401
    except ImportError:
        out["opensim"] = "not installed: pip install -e '.[peers]' (OpenSim 4.6 from the package index)"
    say("whole processes, in turns")
    out["processes"] = _processes(tables, 3 if quick else 7, "opensim" not in out)
    if "opensim" in out:
        return out
    for acc in (1e-5, 1e-8):
        say(f"OpenSim 4.6, accuracy {acc:g}")
        out["rows"][f"OpenSim 4.6 Hunt-Crossley, accuracy {acc:g}"] = _opensim(acc, repeats)
    # the ratio from runs taken in turns (a burst of load on the machine then slows both alike)
    say("ours and OpenSim at 1e-8 in turns")
    ours, peer = _ours_once(Tables(folder=str(tables))), _opensim_once(1e-8)[0]
    out["ratio_in_turns"] = statistics.median(ours()[0] / peer() for _ in range(repeats))
    return out


def report(r: dict[str, Any]) -> str:
    whole = [f"whole run ({case}): {row['wall_ms']:.1f} ms (target <= {WHOLE_TARGET_MS[case]:.0f} ms)"
             for case, row in r["whole"].items()]
    procs = r["processes"]
    whole += [f"whole process: {name}: {row['wall_ms']:.0f} ms" for name, row in procs.items() if name != "ratio_in_turns"]
    if "ratio_in_turns" in procs:
        whole.append(f"whole process, ours / OpenSim's: {procs['ratio_in_turns']:.2f}x (median of the pairs' ratios, "
                     "taken in turns; target <= 1.0x)")
    lines = [*whole, f"bouncing ball, 0.4 s, 4 impacts (median of {r['repeats']}; ours: integration minus the windows' waiting)",
             f"{'case':44s} {'wall ms':>9s} {'energy change':>14s} {'max indentation um':>19s} {'rhs':>6s}"]
    for case, row in r["rows"].items():
        lines.append(f"{case:44s} {row['wall_ms']:9.1f} {row['energy_change']:14.2e} {row['max_indentation_um']:19.3f} "
                     f"{row.get('rhs', ''):>6}")
    if "opensim" in r:
        lines.append(f"OpenSim: {r['opensim']}")
    else:
        ours = r["rows"]["ours (tables, DOP853-jit rtol 1e-10)"]["wall_ms"]
        peer = r["rows"]["OpenSim 4.6 Hunt-Crossley, accuracy 1e-08"]["wall_ms"]
        lines.append(f"ours / OpenSim at 1e-8: {ours / peer:.2f}x from the medians, {r['ratio_in_turns']:.2f}x from runs "
                     "taken in turns (median of the pairs' ratios; target <= 1.0x)")
    return "\n".join(lines)
