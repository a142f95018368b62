"""The bouncing ball of thesis section 6.5.1 (``simclient run bouncing-ball``).

A ball of m = 0.092 kg, R = 20 mm (tables ``ball`` and ``ground`` of
sample_surfaces/bouncing_ball.toml) dropped from rest with a 12 mm gap between its lowest point
and the ground (the thesis omits the height; 12 mm gives 4 impacts in 0.4 s), moving at 0.15 m/s
along +x, Hertz K = 5.5e9 N/m^1.5, for 0.4 s. The ball's inertia is the solid sphere's
2/5 m R^2 = 1.472e-5 kg m^2 (the thesis prints 1.472e-4, ten times that: a typo that does not
matter without friction). Gravity 9.81 m/s^2 along -z (the thesis gives no value). The double-layer
law (eq. 5.33) uses the thesis' cartilage thickness h1 = 0.415 mm and, as an assumption, a second
layer ten times stiffer (K2 = 5.5e10 N/m^1.5); the ball's 30 um indentations stay in the first layer.

With ``--friction MU`` (not in the thesis) the contact has Coulomb friction (static and dynamic MU,
Simbody's regularized model: :class:`simclient.contact.Friction`), and a ball moving along x starts
rolling: its contact point goes round its table about y, so use the ball table ``ball_rolling``
(poles across the travel, periodic in v; ``--ball ball_rolling``). A ball that reaches rolling inside
its first impact (MU (1 + e) v_impact >= 2/7 vx) leaves it at 5/7 vx, the closed form reported
beside the run's. With ``--vy`` too it rolls about an axis that is not its table's pole axis, and its
contact point would reach a pole: ``--atlas`` gives the ball a second table, ``--ball-chart``
(default ``ball_rolling``, its poles along y where ``ball``'s are along x), the two an atlas
(:class:`simclient.contact.AtlasPair`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import minimize_scalar

from simclient.contact import LAWS, AtlasPair, ForceLaw, Friction, HertzianLaw, ViscoelasticLaw, make_law
from simclient.dynamics import (
    METHODS,
    Body,
    ContactModel,
    MultibodySystem,
    SimulationResult,
    Surface,
    compile_system,
    gap_probe,
    simulate,
)
from simclient.errors import ContactError, ParameterError, nonnegative
from simclient.geometry import INTERPOLATIONS, StorageWindow
from simclient.io import MemorySource, Source, open_surface
from simclient.scenarios._base import (Progress, Scenario, Summary, Tables, check_positive, extent_param, param,
                                       time_progress)

__all__ = ["BallParams", "BouncingBall", "bouncing_ball", "hertz_drop", "G"]

G = 9.81  # m/s^2


@dataclass(frozen=True)
class BallParams:
    """Bouncing-ball parameters (SI) and run settings."""

    mass: float = param(0.092, "mass of the ball", "kg")
    radius: float = param(0.020, "radius of the ball", "m")
    gap: float = param(0.012, "initial gap between the ball's lowest point and the ground", "m")
    vx: float = param(0.15, "horizontal velocity along +x", "m/s")
    vy: float = param(0.0, "horizontal velocity along +y", "m/s")
    x0: float = param(-0.03, "initial x of the centre", "m")
    law: str = param("hertz", "contact force law", choices=tuple(LAWS))
    K: float = param(5.5e9, "generalized stiffness (double-layer: of the first layer)", "N/m^1.5")
    n: float = param(1.5, "exponent of the force law")
    cr: float = param(1.0, "coefficient of restitution of the dissipative laws")
    K2: float = param(5.5e10, "double-layer: stiffness of the second layer", "N/m^1.5")
    h1: float = param(4.15e-4, "double-layer: thickness of the first layer", "m")
    relax_ratio: float = param(1.0, "E_inf / E_0 of a standard linear solid: below 1 the law becomes Argatov's "
                                    "viscoelastic form (hertz only), K being the relaxed stiffness")
    creep_time: float = param(1e-3, "the standard linear solid's creep time T (with --relax-ratio)", "s")
    friction: float = param(0.0, "coefficient of friction, static and dynamic (0: frictionless, as the thesis; "
                                 "a rolling ball wants --ball ball_rolling, and --atlas where it has --vy)")
    atlas: bool = param(False, "the ball's tables an atlas: --ball and a second chart --ball-chart (its poles on "
                               "another axis), for a ball that rolls any way")
    t_end: float = param(0.4, "simulated time", "s")
    window_ball: tuple[int, int] = extent_param((3, 3), "the ball's window, records")
    window_ground: tuple[int, int] = extent_param((3, 9), "the ground's window, records")
    interpolation: str = param("hermite", "interpolation inside the windows", choices=tuple(INTERPOLATIONS))
    method: str = param("DOP853-jit", "integration method", choices=tuple(METHODS))
    rtol: float = param(1e-10, "relative tolerance of the adaptive methods")
    atol: float = param(1e-12, "absolute tolerance of the adaptive methods")
    h: float = param(1e-5, "step of the fixed-step method rk4", "s")
    prefetch: bool = param(False, "prefetch the strips the next window move will need")

    def __post_init__(self) -> None:
        # (a drop: from a gap; the closed forms divide by the impact speed sqrt(2 g gap))
        check_positive(self, "bouncing-ball", "mass", "radius", "gap", "t_end", "K", "rtol", "atol", "h")
        nonnegative(self.friction, "bouncing-ball: friction")

    def force_law(self) -> ForceLaw:
        if self.law == "double-layer":
            law = make_law(self.law, self.K, n=self.n, K2=self.K2, h1=self.h1)
        else:
            law = make_law(self.law, self.K, self.cr, self.n)
        if self.relax_ratio == 1.0:
            return law
        if not isinstance(law, HertzianLaw) or law.name != "hertz":
            raise ParameterError("bouncing-ball: --relax-ratio makes the elastic law hertz viscoelastic; "
                                 f"not {self.law}")
        return ViscoelasticLaw.from_elastic(law, self.relax_ratio, self.creep_time)


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


def bouncing_ball(ball: str | Source, ground: str | Source, params: BallParams = BallParams(), *,
                  chart: str | Source | None = None, source_kwargs: dict[str, Any] | None = None,
                  in_memory: bool = False, progress: Callable[[float], None] | None = None) -> Summary:
    """Run the bouncing ball on the tables ``ball`` and ``ground`` (sources, or locations for
    :func:`simclient.open_surface`); with ``chart``, a second table of the ball in the same frame,
    the two an atlas. ``in_memory`` reads the tables whole into memory first (the no-window
    baseline). Returns DESIGN's summary; the artifacts hold the integration ``result``, the
    ``system``, its ``contact`` and the windows' ``moves``."""
    p = params
    kw = source_kwargs or {}
    t_setup = time.perf_counter()
    src_ball = ball if not isinstance(ball, str) else open_surface(ball, **kw)
    src_ground = ground if not isinstance(ground, str) else open_surface(ground, **kw)
    src_chart = chart if not isinstance(chart, str) else open_surface(chart, **kw)
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
    w_ball, w_chart = ball_window(src_ball), None if src_chart is None else ball_window(src_chart)
    w_ground = StorageWindow(src_ground, p.window_ground, p.interpolation,
                             centre=(0.0, p.x0) if hg.v0 <= p.x0 <= hg.v1 else None, prefetch=p.prefetch)
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
    return Summary("bouncing-ball", values, {"result": res, "system": system, "contact": contact, "moves": moves,
                                             "params": p})


def _impacts(system: MultibodySystem, contact: ContactModel, res: SimulationResult, p: BallParams) -> dict[str, Any]:
    """Each impact's largest indentation (the dense output sampled at 21 instants, then the
    maximum located by bounded Brent to 1e-12 s), its duration, and the energy drift (J, relative)
    over up to 400 of the steps. Probes run compiled where the system compiles, on windows moved to
    each impact's start (the run has moved them on since; an impact moves its contact point far less
    than a record)."""
    gap = gap_probe(system, compile_system(system)[0])
    onsets = [e for e in res.events if e["type"] == "onset"]
    seps = [e for e in res.events if e["type"] == "separation"]
    max_ind, durations, t_max = [], [], []
    for k, on in enumerate(onsets):
        system.place_windows(res.sol(on["t"]))
        t1 = seps[k]["t"] if k < len(seps) else res.t[-1]
        ts = np.linspace(on["t"], t1, 21)
        ind = np.array([-gap(contact, res.sol(t)) for t in ts])
        a = int(np.argmax(ind))
        best = minimize_scalar(lambda t: gap(contact, res.sol(t)), bounds=(ts[max(a - 1, 0)], ts[min(a + 1, 20)]),
                               method="bounded", options={"xatol": 1e-12})
        peak, at = (-float(best.fun), float(best.x)) if -best.fun > ind[a] else (float(ind[a]), float(ts[a]))
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


class BouncingBall(Scenario, name="bouncing-ball", params=BallParams,
                   tables={"ball": "ball", "ground": "ground", "ball_chart": "ball_rolling"},
                   title="thesis 6.5.1: a ball bouncing on a ground plane (Hertz and the dissipative laws)"):

    def run(self, params: BallParams, tables: Tables, *, out: Path | None = None,
            progress: Progress | None = None) -> Summary:
        summary = bouncing_ball(tables.location("ball", self.tables["ball"]),
                                tables.location("ground", self.tables["ground"]), params,
                                chart=tables.location("ball_chart", self.tables["ball_chart"]) if params.atlas else None,
                                source_kwargs=tables.source_kwargs(), progress=time_progress(progress, params.t_end))
        if out is not None:
            from simclient.scenarios.report import save_bouncing_ball

            summary.values["outputs"] = [str(f) for f in save_bouncing_ball(summary, out)]
        return summary

    def table_names(self, params: BallParams) -> dict[str, str]:
        return {role: name for role, name in self.tables.items() if params.atlas or role != "ball_chart"}

    def report(self, summary: Summary) -> str:
        a = summary["analytic"]
        times = ", ".join(f"{t:.4f}" for t in summary["impact_times_s"])
        depths = ", ".join(f"{d * 1e6:.3f}" for d in summary["max_indentation_m"])
        lines = [f"bouncing-ball ({summary['law']}, {summary['method']}, {summary['interpolation']}): "
                 f"{summary['impacts']} impacts" + (f" at {times} s" if times else ""),
                 f"  max indentation {f'{depths} um' if depths else 'none'} "
                 f"(Hertz closed form {a['max_indentation'] * 1e6:.3f} um)"]
        if "rolling" in summary.values:
            r = summary["rolling"]
            lines.append(f"  rolling at {r['vx_after_first_impact_m_s']:.6f} m/s after the first impact (5/7 vx: "
                         f"{r['closed_form_vx_m_s']:.6f} m/s), {r['vx_final_m_s']:.6f} m/s at the end"
                         + (f"; vy {r['vy_final_m_s']:.6f} m/s at the end (5/7 vy: {r['closed_form_vy_m_s']:.6f} m/s)"
                            if r["closed_form_vy_m_s"] else ""))
        if "chart_switches" in summary.values:
            n = summary["chart_switches"]
            lines.append(f"  the ball's atlas ({summary['tables']['ball']}, {summary['tables']['ball_chart']}): "
                         f"{n} chart switch{'' if n == 1 else 'es'}")
        lines.append(f"  energy drift {summary['energy_drift']:.2e}; {summary['steps']} steps, "
                     f"{summary['rhs_evaluations']} rhs evaluations, {summary['wall_s']:.3f} s wall")
        for name, st in summary["windows"].items():
            lines.append(f"  window {name} {st['extent'][0]}x{st['extent'][1]}: {st['updates']} updates, "
                         f"{st['records_fetched']} records ({st['bytes_fetched'] / 1e6:.2f} MB) in {st['requests']} "
                         f"requests, {st['wait_s'] * 1e3:.1f} ms waiting")
        return "\n".join(lines)
