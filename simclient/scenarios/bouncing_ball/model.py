"""The bouncing ball's model (see :mod:`simclient.scenarios.bouncing_ball`)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from simclient.contact import AtlasPair, Friction
from simclient.dynamics import (
    Body,
    ContactModel,
    MultibodySystem,
    SimulationResult,
    Surface,
    compile_system,
    find_minimum,
    gap_probe,
    simulate,
)
from simclient.errors import ContactError, ParameterError
from simclient.geometry import StorageWindow
from simclient.io import MemorySource, Source, open_surface
from simclient.scenarios._base import Progress, Summary, Tables, save_outputs, time_progress
from simclient.scenarios.bouncing_ball import G, BallParams, BouncingBall

__all__ = ["run", "bouncing_ball", "hertz_drop"]


def hertz_drop(p: BallParams) -> dict[str, float]:
    """Closed forms of a Hertz drop (gravity during the impact neglected): impact speed
    sqrt(2 g gap) (m/s), maximum indentation (5 m v^2 / (4 K))^(2/5) (m), contact duration
    2 (delta_max / v) int_0^1 (1 - x^(5/2))^(-1/2) dx = (4/5) B(2/5, 1/2) delta_max / v
    (= 2.9432 delta_max / v, s), first impact time sqrt(2 gap / g) (s)."""
    v = math.sqrt(2 * G * p.gap)
    dmax = (5 * p.mass * v * v / (4 * p.K)) ** 0.4
    beta = math.gamma(0.4) * math.gamma(0.5) / math.gamma(0.9)
    return {"impact_speed": v, "max_indentation": dmax, "duration": 0.8 * beta * dmax / v,
            "first_impact": math.sqrt(2 * p.gap / G)}


def run(params: BallParams, tables: Tables, *, out: Path | None = None, progress: Progress | None = None) -> Summary:
    """The bouncing ball on ``tables`` (roles ``ball``, ``ground`` and, with ``atlas``, ``ball_chart``)."""
    roles = BouncingBall.tables
    summary = bouncing_ball(tables.location("ball", roles["ball"]), tables.location("ground", roles["ground"]), params,
                            chart=tables.location("ball_chart", roles["ball_chart"]) if params.atlas else None,
                            source_kwargs=tables.source_kwargs(), progress=time_progress(progress, params.t_end))
    return save_outputs(summary, out, progress)


def bouncing_ball(ball: str | Source, ground: str | Source, params: BallParams = BallParams(), *,
                  chart: str | Source | None = None, source_kwargs: dict[str, Any] | None = None,
                  in_memory: bool = False, progress: Callable[[float], None] | None = None) -> Summary:
    """Run the bouncing ball on the tables ``ball`` and ``ground`` (sources, or locations for
    :func:`simclient.open_surface`); with ``chart``, a second table of the ball in the same frame,
    the two an atlas. ``in_memory`` reads the tables whole into memory first (the no-window
    baseline). Returns DESIGN's summary; the artifacts hold the integration ``result``, the
    ``system``, its ``contact``, the windows' ``moves`` and when the run ``ended`` (``time.perf_counter``)."""
    p = params
    kw = source_kwargs or {}
    t_setup = time.perf_counter()
    def opened(src: str | Source | None) -> Source | None:
        return open_surface(src, **kw) if isinstance(src, str) else src
    # (concurrently: tables a round trip away cost one round trip, not one each; so do the first windows)
    with ThreadPoolExecutor(3) as pool:
        src_ball, src_ground, src_chart = pool.map(opened, (ball, ground, chart))
    assert src_ball is not None and src_ground is not None
    if in_memory:
        src_ball, src_ground = MemorySource.load(src_ball), MemorySource.load(src_ground)
        src_chart = None if src_chart is None else MemorySource.load(src_chart)
    hb, hg = src_ball.header, src_ground.header
    if hb.rmax is not None and abs(hb.rmax - p.radius) > 1e-3 * p.radius:
        # the radius places the ball and sets its inertia; the table is the ball that touches
        raise ParameterError(f"bouncing-ball: radius {p.radius:g} m, but the ball table {src_ball.name} is "
                             f"{hb.rmax:.6g} m from its centre at most (use --radius {hb.rmax:.6g})")
    # first windows centred on the expected contact points: the ball's lowest point (u = v = 0 of
    # the sample ball) and the ground under the ball's start (the ground maps (u, v) -> (v, -u))
    def ball_window(src: Source) -> StorageWindow:
        return StorageWindow(src, p.window_ball, p.interpolation,
                             centre=(0.0, 0.0) if src.header.u0 <= 0 <= src.header.u1 else None, prefetch=p.prefetch)
    def ground_window(src: Source) -> StorageWindow:
        return StorageWindow(src, p.window_ground, p.interpolation,
                             centre=(0.0, p.x0) if hg.v0 <= p.x0 <= hg.v1 else None, prefetch=p.prefetch)
    with ThreadPoolExecutor(3) as pool:
        first = [pool.submit(ball_window, src_ball), pool.submit(ground_window, src_ground),
                 None if src_chart is None else pool.submit(ball_window, src_chart)]
        w_ball, w_ground, w_chart = (None if f is None else f.result() for f in first)
    assert w_ball is not None and w_ground is not None
    read = {"ball": w_ball, "ground": w_ground, **({} if w_chart is None else {"ball_chart": w_chart})}
    ball_body = Body("ball", mass=p.mass, inertia=np.eye(3) * 0.4 * p.mass * p.radius**2,
                     position=np.array([p.x0, 0.0, p.radius + p.gap]), velocity=np.array([p.vx, p.vy, 0.0]))
    ground_body = Body("ground", fixed=True)
    contact = ContactModel("ball-ground", Surface(ball_body, w_ball), Surface(ground_body, w_ground), p.force_law(),
                           friction=Friction(p.friction, p.friction) if p.friction else None,
                           pair=None if w_chart is None else AtlasPair([w_ball, w_chart], w_ground, name="ball-ground"))
    system = MultibodySystem([ball_body, ground_body], [contact], gravity=(0, 0, -G))
    setup_s = time.perf_counter() - t_setup
    wait0 = sum(w.wait_s for w in read.values())  # the first windows' fetch belongs to the set-up
    res = simulate(system, p.t_end, method=p.method, rtol=p.rtol, atol=p.atol,
                   h=p.h if p.method == "rk4" else None, progress=progress)
    ended = time.perf_counter()
    # window statistics and moves of the run itself (post-processing below moves the windows again)
    windows = {role: w.stats for role, w in read.items()}
    moves = {role: list(w.moves) for role, w in read.items()}
    wait_s = sum(w.wait_s for w in read.values()) - wait0
    values = {**_impacts(system, contact, res, p), "law": p.law, "method": p.method,
              "interpolation": p.interpolation, "wall_s": res.wall_s, "setup_s": setup_s,
              "window_wait_s": wait_s, "steps": res.steps,
              "rhs_evaluations": res.nfev, "status": "ok" if res.success else "failed", "message": res.message,
              "tables": {role: w.name for role, w in read.items()}, "windows": windows,
              **({} if w_chart is None else {"chart_switches": contact.pair.switches})}  # type: ignore[union-attr]
    for w in read.values():  # (no fetches ahead left queued: the process would wait for them at its exit)
        w.close()
    return Summary("bouncing-ball", values, {"result": res, "system": system, "contact": contact, "moves": moves,
                                             "ended": ended, "params": p})


def _impacts(system: MultibodySystem, contact: ContactModel, res: SimulationResult, p: BallParams) -> dict[str, Any]:
    """Each impact's largest indentation (the dense output sampled at 21 instants, then the
    maximum located by Brent's minimizer to 1e-12 s), its duration, and the energy drift (J, relative)
    over up to 400 of the steps. Probes run compiled where the system compiles, on windows moved to
    each state probed first (the run has moved them on since, and a ball rolling in contact takes
    its contact point across many records: a window left behind gives the gap at its edge)."""
    probe = gap_probe(system, compile_system(system)[0])

    def gap(c: ContactModel, y: np.ndarray) -> float:
        system.place_windows(y)
        return probe(c, y)
    onsets = [e for e in res.events if e["type"] == "onset"]
    seps = [e for e in res.events if e["type"] == "separation"]
    max_ind, durations, t_max = [], [], []
    for k, on in enumerate(onsets):
        t1 = seps[k]["t"] if k < len(seps) else res.t[-1]
        ts = np.linspace(on["t"], t1, 21)
        ind = np.array([-gap(contact, res.sol(t)) for t in ts])
        a = int(np.argmax(ind))
        t_best, g_best = find_minimum(lambda t: gap(contact, res.sol(t)), ts[max(a - 1, 0)], ts[min(a + 1, 20)],
                                      xatol=1e-12)
        peak, at = (-float(g_best), float(t_best)) if -g_best > ind[a] else (float(ind[a]), float(ts[a]))
        max_ind.append(peak)
        t_max.append(at)
        durations.append(float(t1 - on["t"]))
    # (with friction, from the end of the first impact: the slip it stops dissipates)
    first = np.searchsorted(res.t, seps[0]["t"]) if p.friction and seps else 0

    def energy(y: np.ndarray) -> float:
        try:
            return system.energy(y, gap)
        except ContactError:
            if res.success:
                raise
            return math.nan  # (a failed run's state over a table's edge: its contact cannot be probed)
    e = np.array([energy(res.y[:, k]) for k in range(first, res.y.shape[1], max(1, (res.y.shape[1] - first) // 400))])
    e = e[np.isfinite(e)]
    drift = float(np.max(np.abs(e - e[0])) / abs(e[0])) if len(e) else 0.0
    rolling = {}
    if p.friction and seps:
        y = res.sol(seps[0]["t"])
        rolling = {"rolling": {"vx_after_first_impact_m_s": float(y[7]), "spin_after_first_impact_rad_s": float(y[11]),
                               "vx_final_m_s": float(res.y[7, -1]), "closed_form_vx_m_s": 5 / 7 * p.vx,
                               "vy_final_m_s": float(res.y[8, -1]), "closed_form_vy_m_s": 5 / 7 * p.vy}}
    return {**rolling, "impacts": len(onsets), "impact_times_s": [float(o["t"]) for o in onsets],
            "impact_velocities_m_s": [float(o["impact_velocity"]) for o in onsets],
            "separation_velocities_m_s": [float(s["separation_velocity"]) for s in seps],
            "max_indentation_m": max_ind, "max_indentation_times_s": t_max, "contact_durations_s": durations,
            "energy_drift": drift, "analytic": hertz_drop(p)}


