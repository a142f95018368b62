"""The prosthetic knee's model (see :mod:`simclient.scenarios.prosthetic_knee`)."""

from __future__ import annotations

import bisect
import math
from pathlib import Path
from typing import Any

import numpy as np

from simclient.contact import ProfilePair, make_law
from simclient.dynamics import (
    PlanarBody,
    PlanarContact,
    PlanarSystem,
    PrescribedMotion,
    ProfileSurface,
    Revolute2D,
    simulate,
    spring_damper,
)
from simclient.geometry import StorageWindow, rot2
from simclient.scenarios._base import Progress, Summary, Tables, save_outputs, time_progress
from simclient.scenarios.prosthetic_knee import TABLES, ProstheticKneeParams

__all__ = ["run", "prosthetic_knee", "BODIES", "JOINT_VECTORS", "JOINTS"]

#: Table 1 and Table 2: mass (kg), inertia (kg m^2, printed kg mm^2), initial x, y (m) and angle (rad)
BODIES = {
    1: (1.774, 46702.61e-6, -156.118e-3, -830.897e-3, 5.87),
    2: (0.225, 210.69e-6, -79.779e-3, -549.955e-3, 5.72),
    3: (2.144, 61264.44e-6, -36.798e-3, -291.284e-3, 6.16),
    4: (0.196, 219.56e-6, -37.928e-3, -559.137e-3, 5.67),
}
#: eqs. 19-20: the points of each body in its frame (m)
JOINT_VECTORS = {
    1: {"D": (-54.685e-3, 243.71e-3), "C": (8.815e-3, 243.759e-3), "F": (-7.035e-3, -225.831e-3)},
    2: {"A": (-20.538e-3, 43.792e-3), "D": (-5.854e-3, -45.818e-3), "E": (12.205e-3, 1.99e-3)},
    3: {"A": (-9.804e-3, -213.667e-3), "B": (13.217e-3, -224.401e-3), "E": (-0.521e-3, 293.599e-3)},
    4: {"B": (-36.809e-3, 27.369e-3), "C": (19.118e-3, -49.733e-3)},
}
#: the revolute joints: name -> (body, body)
JOINTS = {"A": (2, 3), "B": (3, 4), "C": (1, 4), "D": (1, 2)}
#: the stop sphere's centre on body 1 (m): 10.4 mm from joint C (see the TOML)
SPHERE_ON_BODY1 = (18.2283e-3, 247.1339e-3)


def _point(body: int, name: str) -> np.ndarray:
    return np.array(JOINT_VECTORS[body][name])


def run(params: ProstheticKneeParams, tables: Tables, *, out: Path | None = None, progress: Progress | None = None) -> Summary:
    """The scenario on ``tables``; with ``out``, its report's files there."""
    summary = prosthetic_knee(tables, params, progress)
    return save_outputs(summary, out, progress)


def thigh_motion(theta0: float, hip: np.ndarray, rng: float, T: float) -> Any:
    """Body 3's prescribed coordinates ``(x, y, theta)`` with their first and second time
    derivatives: the thigh turning by ``rng`` (rad) about the fixed ``hip`` (global, m; its point E)
    along the quintic from rest to rest in ``T`` (s), then still."""
    uE = _point(3, "E")

    def motion(t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        s = min(max(t / T, 0.0), 1.0)
        f = 10 * s**3 - 15 * s**4 + 6 * s**5
        fd = (30 * s**2 - 60 * s**3 + 30 * s**4) / T if t < T else 0.0
        fdd = (60 * s - 180 * s**2 + 120 * s**3) / T**2 if t < T else 0.0
        th, w, a = theta0 + rng * f, rng * fd, rng * fdd
        A = rot2(th)
        A_th = np.array([[-math.sin(th), -math.cos(th)], [math.cos(th), -math.sin(th)]])
        R = hip - A @ uE  # the centre of gravity keeps E at the hip
        Rd = -w * (A_th @ uE)
        Rdd = -a * (A_th @ uE) + w * w * (A @ uE)
        return np.array([*R, th]), np.array([*Rd, w]), np.array([*Rdd, a])
    return motion


def prosthetic_knee(tables: Tables, params: ProstheticKneeParams = ProstheticKneeParams(),
                    progress: Progress | None = None) -> Summary:
    """Run the prosthetic leg (module docstring); the artifacts hold the ``history``, ``result``
    and ``system``."""
    p = params
    ground = PlanarBody("ground", fixed=True)
    bodies = {k: PlanarBody(f"body{k}", mass=m, inertia=J, position=np.array([x, y]), angle=th)
              for k, (m, J, x, y, th) in BODIES.items()}
    joints = [Revolute2D(bodies[a], _point(a, name), bodies[b], _point(b, name)) for name, (a, b) in JOINTS.items()]
    b3 = bodies[3]
    hip = b3.position + rot2(b3.angle) @ _point(3, "E")
    thigh = PrescribedMotion(b3, (0, 1, 2), thigh_motion(b3.angle, hip, math.radians(p.thigh_range), p.stance_duration))
    law = make_law(p.law, p.K, p.cr, **({"d_max": p.d_max, "c_max": p.c_max} if p.law == "penalty-step" else {}))
    ws = StorageWindow.whole(tables.open("sphere", TABLES["sphere"]))
    wp = StorageWindow.whole(tables.open("profile", TABLES["profile"]))
    stop = PlanarContact("stop", ProfileSurface(bodies[1], ws, offset=np.array(SPHERE_ON_BODY1)),
                         ProfileSurface(bodies[4], wp), law, ProfilePair(ws, wp))
    system = PlanarSystem([ground, *bodies.values()], [stop], gravity=(0.0, -9.81), constraints=[*joints, thigh])
    residual = system.assemble()
    b1, b2 = bodies[1], bodies[2]

    def spring_length(q1: tuple[np.ndarray, float], q2: tuple[np.ndarray, float]) -> float:
        return float(np.linalg.norm(q2[0] + rot2(q2[1]) @ _point(2, "E") - q1[0] - rot2(q1[1]) @ _point(1, "F")))

    l_init = spring_length((b1.position, b1.angle), (b2.position, b2.angle))
    system.loads.append(spring_damper("spring", b2, _point(2, "E"), b1, _point(1, "F"), 250e3, 50e3,
                                      l_init - p.spring_preload))
    res = simulate(system, p.t_end, method=p.method, rtol=p.rtol, atol=p.atol, project_every=p.project_every,
                   progress=time_progress(progress, p.t_end))
    values, hist = _summary(system, stop, joints, bodies, res, p)
    values.update(assembly_residual_m=residual, spring_rest_length_m=l_init - p.spring_preload, law=law.name,
                  status="ok" if res.success else "failed", message=res.message, wall_s=res.wall_s,
                  steps=res.steps, rhs_evaluations=res.nfev)
    return Summary("prosthetic-knee", values, {"history": hist, "result": res, "system": system})


def _summary(system: PlanarSystem, stop: PlanarContact, joints: list[Revolute2D], bodies: dict[int, PlanarBody],
             res: Any, p: ProstheticKneeParams) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    t_final = float(res.t[-1])
    impacts = [e for e in res.events if e["type"] == "onset"]  # in time order
    onsets = [e["t"] for e in impacts]
    ts = np.unique(np.concatenate([np.linspace(0.0, t_final, p.samples),
                                   *[np.linspace(t, min(t + 0.02, t_final), 2001) for t in onsets]]))
    n3 = 3 * system.n
    col1 = system.column(bodies[1])
    assert col1 is not None
    h: dict[str, np.ndarray] = {k: np.zeros(len(ts)) for k in (
        "knee_angle_deg", "body1_angle_deg", "body1_omega_rad_s", "body1_alpha_rad_s2", "penetration_m",
        "contact_force_N", "joint_gap_m")}
    h["t_s"] = ts
    final = stop.active, stop.impact_velocity
    for n, t in enumerate(ts):
        y = res.sol(float(t))
        system.set_state(y, float(t))
        k = system.detect(stop)
        # the stop as the integrator had it at t: in contact, with the impact velocity of its last onset
        stop.active = k.indentation > 0
        last = bisect.bisect_right(onsets, t) - 1
        stop.impact_velocity = impacts[last]["impact_velocity"] if last >= 0 else 1.0
        q = y[:n3].reshape(-1, 3)
        h["knee_angle_deg"][n] = math.degrees(q[2, 2] - q[0, 2])  # thigh angle less shank angle
        h["body1_angle_deg"][n] = math.degrees(y[col1 + 2])
        h["body1_omega_rad_s"][n] = y[n3 + col1 + 2]
        h["body1_alpha_rad_s2"][n] = system.rhs(float(t), y)[n3 + col1 + 2]
        h["joint_gap_m"][n] = max(float(np.linalg.norm(j.equations(system, float(t))[0])) for j in joints)
        if stop.active:
            rate = k.indentation_rate(system.relative_velocity(stop, k))
            h["penetration_m"][n] = k.indentation
            h["contact_force_N"][n] = stop.law.normal_force(k.indentation, rate, stop.impact_velocity)
    stop.active, stop.impact_velocity = final
    f = h["contact_force_N"]
    in_contact = h["penetration_m"] > 0
    duration = float(np.sum(np.diff(ts)[in_contact[:-1] & in_contact[1:]]))
    top = int(np.argmax(f))
    half = f >= f[top] / 2  # the peak's width at half its height, around the peak
    lo = top
    while lo > 0 and half[lo - 1]:
        lo -= 1
    hi = top
    while hi < len(ts) - 1 and half[hi + 1]:
        hi += 1
    knee = h["knee_angle_deg"]
    values = {
        "t_final_s": float(res.t[-1]), "impacts": len(onsets),
        "max_link_length_drift_m": float(h["joint_gap_m"].max()),
        "max_penetration_m": float(h["penetration_m"].max()), "peak_contact_force_N": float(f[top]),
        "peak_time_s": float(ts[top]), "peak_width_s": float(ts[hi] - ts[lo]) if f[top] > 0 else 0.0,
        "contact_duration_s": duration,
        "knee_flexion_deg": {"min": float(knee.min()), "max": float(knee.max()), "initial": float(knee[0])},
    }
    return values, h


