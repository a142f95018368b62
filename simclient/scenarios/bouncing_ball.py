"""Scenarios: ready-made models run by ``simclient run NAME`` (registry :data:`SCENARIOS`).

``bouncing-ball`` (thesis 6.5.1): a ball of m = 0.092 kg, R = 20 mm (tables ``ball`` and
``ground`` of sample_surfaces/bouncing_ball.toml) dropped from rest with a 12 mm gap between its
lowest point and the ground (the thesis omits the height; 12 mm gives 4 impacts in 0.4 s), moving
at 0.15 m/s along +x, Hertz K = 5.5e9 N/m^1.5, for 0.4 s. The ball's inertia is the solid
sphere's 2/5 m R^2 = 1.472e-5 kg m^2 (the thesis prints 1.472e-4, ten times that: a typo that does
not matter without friction). Gravity 9.81 m/s^2 along -z (the thesis gives no value).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from simclient.dynamics._system import Body, ContactModel, MultibodySystem, Surface, simulate
from simclient.contact._laws import make_law
from simclient.io._sources import MemorySource, open_surface
from simclient.geometry._window import StorageWindow

__all__ = ["SCENARIOS", "locate", "bouncing_ball", "BallParams", "hertz_drop"]

G = 9.81


def locate(name: str, store: str | None = None, tables: str | Path | None = None) -> str:
    """Location of table ``name``: on a store (``--store URL``) or in a folder (``--tables DIR``)."""
    if store:
        return f"{store.rstrip('/')}/v1/surfaces/{name}"
    return str(Path(tables or "tables") / f"{name}.zarr")


@dataclass(frozen=True)
class BallParams:
    """Bouncing-ball parameters (SI)."""

    mass: float = 0.092
    radius: float = 0.020
    gap: float = 0.012
    vx: float = 0.15
    x0: float = -0.03
    K: float = 5.5e9
    n: float = 1.5
    law: str = "hertz"
    cr: float = 1.0
    t_end: float = 0.4


def hertz_drop(p: BallParams) -> dict[str, float]:
    """Closed forms of a Hertz drop (gravity during the impact neglected): impact speed
    sqrt(2 g gap), maximum indentation (5 m v^2 / (4 K))^(2/5), contact duration
    2 (delta_max / v) int_0^1 (1 - x^(5/2))^(-1/2) dx = (4/5) B(2/5, 1/2) delta_max / v
    (= 2.9432 delta_max / v), first impact time sqrt(2 gap / g)."""
    v = math.sqrt(2 * G * p.gap)
    dmax = (5 * p.mass * v * v / (4 * p.K)) ** 0.4
    beta = math.gamma(0.4) * math.gamma(0.5) / math.gamma(0.9)
    return {"impact_speed": v, "max_indentation": dmax, "duration": 0.8 * beta * dmax / v,
            "first_impact": math.sqrt(2 * p.gap / G)}


def bouncing_ball(ball: str, ground: str, *, params: BallParams = BallParams(), window_ball=(3, 3),
                  window_ground=(3, 9), interpolation: str = "hermite", method: str = "DOP853",
                  rtol: float = 1e-10, atol: float = 1e-12, max_step: float = np.inf,
                  source_kwargs: dict | None = None, in_memory: bool = False, prefetch: bool = False,
                  progress: Callable[[float], None] | None = None, keep: bool = False) -> dict[str, Any]:
    """Run the bouncing ball on the tables at ``ball`` and ``ground`` (locations for
    :func:`simclient.open_surface`). Returns DESIGN's summary (plus histories with ``keep``).
    ``in_memory`` reads both tables whole into memory first (the no-window baseline)."""
    p = params
    kw = source_kwargs or {}
    t_setup = time.perf_counter()
    src_ball, src_ground = open_surface(ball, **kw), open_surface(ground, **kw)
    if in_memory:
        src_ball, src_ground = MemorySource.load(src_ball), MemorySource.load(src_ground)
    hb, hg = src_ball.header, src_ground.header
    # first windows centred on the expected contact points: the ball's lowest point (u = v = 0 of
    # the sample ball) and the ground under the ball's start (the ground maps (u, v) -> (v, -u))
    w_ball = StorageWindow(src_ball, window_ball, interpolation, centre=(0.0, 0.0) if hb.u0 <= 0 <= hb.u1 else None,
                           prefetch=prefetch)
    w_ground = StorageWindow(src_ground, window_ground, interpolation,
                             centre=(0.0, p.x0) if hg.v0 <= p.x0 <= hg.v1 else None, prefetch=prefetch)
    ball_body = Body("ball", mass=p.mass, inertia=np.eye(3) * 0.4 * p.mass * p.radius**2,
                     position=np.array([p.x0, 0.0, p.radius + p.gap]), velocity=np.array([p.vx, 0.0, 0.0]))
    ground_body = Body("ground", fixed=True)
    law = make_law(p.law, p.K, p.cr, p.n)
    contact = ContactModel("ball-ground", Surface(ball_body, w_ball), Surface(ground_body, w_ground), law)
    system = MultibodySystem([ball_body, ground_body], [contact], gravity=(0, 0, -G))
    setup_s = time.perf_counter() - t_setup
    res = simulate(system, p.t_end, method=method, rtol=rtol, atol=atol, max_step=max_step, progress=progress)
    # window statistics and moves of the run itself (post-processing below moves the windows again)
    windows = {"ball": w_ball.stats, "ground": w_ground.stats}
    moves = {"ball": list(w_ball.moves), "ground": list(w_ground.moves)}
    summary = _ball_summary(system, contact, res, p)
    summary.update(scenario="bouncing-ball", law=p.law, method=method, interpolation=interpolation,
                   wall_s=res.wall_s, setup_s=setup_s, steps=res.steps, rhs_evaluations=res.nfev,
                   status="ok" if res.success else "failed", message=res.message,
                   tables={"ball": ball, "ground": ground},
                   windows=windows)
    if keep:
        summary["_moves"] = moves
        summary["_result"] = res
        summary["_system"] = system
    return summary


def _ball_summary(system: MultibodySystem, contact: ContactModel, res: Any, p: BallParams) -> dict[str, Any]:
    onsets = [e for e in res.events if e["type"] == "onset"]
    seps = [e for e in res.events if e["type"] == "separation"]
    max_ind, durations, t_max = [], [], []
    for k, on in enumerate(onsets):
        t1 = seps[k]["t"] if k < len(seps) else res.t[-1]
        ts = np.linspace(on["t"], t1, 401)
        ind = []
        for t in ts:
            system.set_state(res.sol(t))
            ind.append(-system.gap(contact))
        ind = np.array(ind)
        a = int(np.argmax(ind))
        # refine the maximum with a parabola through the three best samples
        if 0 < a < len(ts) - 1:
            y0, y1, y2 = ind[a - 1:a + 2]
            denom = y0 - 2 * y1 + y2
            peak = y1 - (y0 - y2) ** 2 / (8 * denom) if denom < 0 else y1
        else:
            peak = ind[a]
        max_ind.append(float(peak))
        t_max.append(float(ts[a]))
        durations.append(float(t1 - on["t"]))
    e = np.array([system.energy(res.y[:, k]) for k in range(0, res.y.shape[1], max(1, res.y.shape[1] // 400))])
    drift = float(np.max(np.abs(e - e[0])) / abs(e[0])) if len(e) else 0.0
    return {"impacts": len(onsets), "impact_times_s": [float(o["t"]) for o in onsets],
            "impact_velocities_m_s": [float(o["impact_velocity"]) for o in onsets],
            "separation_velocities_m_s": [float(e["separation_velocity"]) for e in seps],
            "max_indentation_m": max_ind, "max_indentation_times_s": t_max, "contact_durations_s": durations,
            "energy_drift": drift, "analytic": hertz_drop(p)}


SCENARIOS = {"bouncing-ball": bouncing_ball}


def dump(summary: dict[str, Any]) -> str:
    return json.dumps({k: v for k, v in summary.items() if not k.startswith("_")}, indent=2)


# -- knee3d (thesis 6.5.2) -------------------------------------------------------------------------

#: Table 6.5: femur point, tibia point (body frames, mm), stretch ratio at full extension, k (N/mm^2).
KNEE_LIGAMENTS = {
    "ACL-anterior": ((7.3, -15.6, 21.3), (-7.0, 5.0, 211.3), 1.000, 83.15),
    "ACL-posterior": ((7.3, -20.3, 19.6), (2.0, 2.0, 212.3), 1.051, 83.15),
    "PCL-anterior": ((-4.8, -11.2, 14.1), (5.0, -30.0, 206.3), 1.004, 125.00),
    "PCL-posterior": ((-4.8, -23.2, 15.7), (-5.0, -30.0, 206.3), 1.050, 60.00),
    "MCL-anterior": ((-34.8, -1.0, 26.3), (-20.0, 4.0, 171.3), 0.940, 91.25),
    "MCL-oblique": ((-34.8, -8.0, 24.3), (-35.0, -30.0, 199.3), 1.031, 27.86),
    "MCL-deep": ((-34.8, -5.0, 21.3), (-35.0, 0.0, 199.3), 1.049, 21.07),
    "LCL": ((35.3, -15.0, 21.3), (45.0, -25.0, 176.3), 1.050, 72.22),
}


@dataclass(frozen=True)
class KneeParams:
    """knee3d parameters (SI). Placements are this project's assumptions (the thesis shows them
    only in a figure): condyle sphere centres at x = -+21 mm (medial -x, where the MCL inserts;
    lateral +x), z = 19.5 mm in the femur frame; plateaus in the tibia frame at the same x,
    z = 211.5 mm (global z = -2.0 mm at full extension), normals +z. At full extension the
    medial condyle (R = 21 mm) is then 0.5 mm above its plateau and the lateral one (R = 20 mm)
    1.5 mm above."""

    condyle_x: float = 0.021
    condyle_z: float = 0.0195
    plateau_z: float = 0.2115
    tibia_z: float = -0.2135
    tibia_mass: float = 3.3794
    tibia_inertia: tuple[float, float, float] = (0.0412, 0.0432, 0.0070)
    E: float = 24e6
    nu: float = 0.38
    cr: float = 0.616
    law: str = "hertz"
    gravity: tuple[float, float, float] = (0.0, -9.81, 0.0)
    final_flexion_deg: float = 80.0
    t_end: float = 2.0


def flexion_deg(A: np.ndarray) -> float:
    """Knee flexion (deg): the tibia's long axis swung posteriorly (towards -y) about x."""
    a = A @ np.array([0.0, 0.0, -1.0])
    return math.degrees(math.atan2(-a[1], -a[2]))


def internal_rotation_deg(A: np.ndarray) -> float:
    """Internal rotation of the tibia about its long axis (deg, positive when the tibia's anterior
    direction +y turns towards medial -x)."""
    # remove flexion (about x), then read the rotation about the tibia's z axis
    f = math.radians(flexion_deg(A))
    Rx = np.array([[1, 0, 0], [0, math.cos(f), math.sin(f)], [0, -math.sin(f), math.cos(f)]])
    B = Rx @ A
    return math.degrees(math.atan2(B[1, 0], B[0, 0]))


def knee3d(locations: dict[str, str], *, params: KneeParams = KneeParams(), window=(3, 3),
           interpolation: str = "hermite", method: str = "BDF", rtol: float = 1e-6, atol: float = 1e-9,
           source_kwargs: dict | None = None, samples: int = 400) -> dict[str, Any]:
    """Run the 3D knee from full extension until ``final_flexion_deg`` (thesis 6.5.2).

    ``locations`` maps ``condyle_medial``, ``condyle_lateral``, ``plateau_medial``,
    ``plateau_lateral`` to table locations.
    """
    from simclient.contact._laws import hertz_stiffness
    from simclient.dynamics._loads import Ligament, QuadraticLaw

    p = params
    kw = source_kwargs or {}
    femur = Body("femur", fixed=True)
    tibia = Body("tibia", mass=p.tibia_mass, inertia=np.diag(p.tibia_inertia), position=np.array([0, 0, p.tibia_z]))
    contacts = []
    for side, sign, R in (("medial", -1.0, 0.021), ("lateral", 1.0, 0.020)):
        wc = StorageWindow(open_surface(locations[f"condyle_{side}"], **kw), window, interpolation, centre=(0.0, 0.0))
        wp = StorageWindow(open_surface(locations[f"plateau_{side}"], **kw), window, interpolation, centre=(0.0, 0.0))
        K = hertz_stiffness(p.E, p.nu, p.E, p.nu, R)
        contacts.append(ContactModel(side, Surface(femur, wc, offset=np.array([sign * p.condyle_x, 0, p.condyle_z])),
                                     Surface(tibia, wp, offset=np.array([sign * p.condyle_x, 0, p.plateau_z])),
                                     make_law(p.law, K, p.cr)))
    ligaments = []
    for name, (pf, pt, ratio, k) in KNEE_LIGAMENTS.items():
        a, b = np.array(pf) * 1e-3, np.array(pt) * 1e-3
        l_ext = float(np.linalg.norm((np.array([0, 0, p.tibia_z]) + b) - a))
        ligaments.append(Ligament(name, femur, a, tibia, b, QuadraticLaw(k * 1e6, l_ext / ratio), record=True))
    system = MultibodySystem([femur, tibia], contacts, gravity=p.gravity, loads=ligaments)
    res = simulate(system, p.t_end, method=method, rtol=rtol, atol=atol,
                   stop=lambda t, s: flexion_deg(s.pose(tibia)[1]) - p.final_flexion_deg)
    onsets = [e for e in res.events if e["type"] == "onset"]
    # histories sampled from the dense output: angles, ligament forces, contact indentation and force
    windows = {f"{c.name}_{w}": getattr(c, w).window.stats for c in contacts for w in ("i", "j")}
    ts = np.linspace(0, float(res.t[-1]), samples)
    hist: dict[str, Any] = {"t_s": ts, "flexion_deg": np.empty(samples), "internal_rotation_deg": np.empty(samples)}
    for lig in ligaments:
        hist[f"ligament_{lig.name}_N"] = np.empty(samples)
    for c in contacts:
        hist[f"{c.name}_indentation_m"] = np.empty(samples)
        hist[f"{c.name}_force_N"] = np.empty(samples)
    for n, t in enumerate(ts):
        system.set_state(res.sol(t))
        A = system.pose(tibia)[1]
        hist["flexion_deg"][n] = flexion_deg(A)
        hist["internal_rotation_deg"][n] = internal_rotation_deg(A)
        for lig in ligaments:
            hist[f"ligament_{lig.name}_N"][n] = lig.state(system)[4]
        for c in contacts:
            ind = max(-system.gap(c), 0.0)
            hist[f"{c.name}_indentation_m"][n] = ind
            hist[f"{c.name}_force_N"][n] = c.law.force(ind, 0.0, 1.0) if ind else 0.0  # elastic part
    peak = {lig.name: float(hist[f"ligament_{lig.name}_N"].max()) for lig in ligaments}
    flex, rot = hist["flexion_deg"], hist["internal_rotation_deg"]
    system.set_state(res.y[:, -1])
    return {"scenario": "knee3d", "status": "ok" if res.success else "failed", "message": res.message,
            "final_flexion_deg": flexion_deg(system.pose(tibia)[1]), "t_final_s": float(res.t[-1]),
            "first_contact": onsets[0]["contact"] if onsets else None,
            "contacts": {side: sum(1 for e in onsets if e["contact"] == side) for side in ("medial", "lateral")},
            "contact_onsets": [{"t": e["t"], "contact": e["contact"]} for e in onsets],
            "peak_ligament": max(peak, key=peak.get), "peak_ligament_forces_N": peak,
            "internal_rotation_deg": {f"{int(a)}": float(np.interp(a, flex, rot)) for a in range(0, 81, 10)
                                      if a <= max(flex)},
            "max_internal_rotation_at_flexion_deg": float(flex[int(np.argmax(rot))]),
            "wall_s": res.wall_s, "steps": res.steps, "rhs_evaluations": res.nfev, "method": method,
            "windows": windows, "_history": hist}


SCENARIOS["knee3d"] = knee3d
