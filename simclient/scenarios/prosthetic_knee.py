"""Markus et al. (2019): a prosthetic leg whose knee is a polycentric four-bar linkage
(``simclient run prosthetic-knee``, ``simclient study prosthetic-knee-laws``).

Four planar bodies (Table 1; the inertias read as kg mm^2, the printed unit being wrong): 1 foot,
shank and housing; 2 anterior link; 3 thigh; 4 posterior link; revolute joints A (2-3), B (3-4),
C (1-4), D (1-2) at the local vectors of eqs. 19-20 (body 4's vector printed "A" is joint B).
Table 2's initial coordinates do not close the joints (0.84-1.03 mm apart: the angles are rounded
to 0.01 rad), so the position Newton of eqs. 3-4 assembles them first, keeping the thigh where Table
2 puts it. A spring-damper between E (body 2) and F (body 1), eq. 24: k = 250 kN/m, c = 50 kN s/m. A
rubber stop, a 3 mm-radius sphere on body 1, 10 mm from joint C, against a convex polar cubic
profile on body 4 (sample_surfaces/prosthetic_knee.toml), found by the 2D common normal on their
tables (eqs. 10-18), with Flores' law (eq. 6), the penalty law with the cubic STEP damping (eqs.
7-9) or Hertz (eq. 5). The thigh's motion is prescribed (three coordinates of body 3).

Assumptions (the paper leaves them out): gravity 9.81 m/s^2 along -y; the hip (body 3's point E,
which Table 2 puts at the origin) stays where it is and the thigh turns by ``thigh_range`` (35 deg,
the range of a stance phase's thigh angle in Winter's data, hip flexion to extension) in
``stance_duration`` (0.6 s), a quintic in time from rest to rest (Table 2's velocities are zero);
the spring's rest length is its initial length less ``spring_preload`` (3 mm, 750 N): the
extension-assist spring of a polycentric knee holds the knee against its extension stop, and with
no preload the stop carries only the leg's weight and inertia (Flores then penetrates at most 0.12
mm over every stop placement tried, against the paper's 0.49 mm); the sphere starts 0.05 mm (along
its path about C) from the profile. Constraints: Baumgarte-stabilised acceleration equations, and
the state projected back onto the joints every ``project_every`` (1 ms).
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from simclient.contact import LAWS, ProfilePair, make_law
from simclient.dynamics import (
    METHODS,
    PlanarBody,
    PlanarContact,
    PlanarSystem,
    PrescribedMotion,
    ProfileSurface,
    Revolute2D,
    simulate,
    spring_damper,
)
from simclient.errors import ParameterError
from simclient.geometry import StorageWindow, rot2
from simclient.scenarios._base import (Progress, Scenario, Summary, Tables, check_choices, check_positive, param,
                                       time_progress)
from simclient.scenarios.studies import Study, register

__all__ = ["ProstheticKneeParams", "ProstheticKnee", "prosthetic_knee", "BODIES", "JOINT_VECTORS", "JOINTS"]

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
TABLES = {"sphere": "markus_stop_sphere", "profile": "markus_stop_profile"}


def _point(body: int, name: str) -> np.ndarray:
    return np.array(JOINT_VECTORS[body][name])


@dataclass(frozen=True)
class ProstheticKneeParams:
    """prosthetic-knee parameters (SI) and run settings."""

    law: str = param("flores", "contact force law of the stop", choices=tuple(LAWS))
    K: float = param(99.99e6, "contact stiffness", "N/m^1.5")
    cr: float = param(0.15, "coefficient of restitution (Flores and the other dissipative laws)")
    d_max: float = param(1e-4, "penalty-step: the indentation over which the damping ramps up", "m")
    c_max: float = param(49915.668, "penalty-step: the full damping", "N s/m")
    thigh_range: float = param(35.0, "the thigh's rotation over the stance phase (hip flexion to extension)", "deg")
    stance_duration: float = param(0.6, "duration of the thigh's motion", "s")
    spring_preload: float = param(3e-3, "the spring's initial length less its rest length", "m")
    t_end: float = param(0.7, "simulated time", "s")
    method: str = param("DOP853", "integration method", choices=tuple(METHODS))
    rtol: float = param(1e-9, "relative tolerance of the adaptive methods")
    atol: float = param(1e-12, "absolute tolerance of the adaptive methods")
    project_every: float = param(1e-3, "the longest time between projections onto the joints", "s")
    samples: int = 4001

    def __post_init__(self) -> None:
        check_choices(self, "prosthetic-knee")
        check_positive(self, "prosthetic-knee", "t_end", "stance_duration", "project_every", "rtol", "atol")
        if not 0.01 <= self.stance_duration <= 100:  # (the quintic's coefficients overflow or divide by zero)
            raise ParameterError(f"prosthetic-knee: stance_duration must lie in [0.01, 100] s, got {self.stance_duration}")
        if not (abs(self.thigh_range) <= 90):
            raise ParameterError(f"prosthetic-knee: the thigh range must be within +-90 deg, got {self.thigh_range}")
        if not (0 <= self.spring_preload < 0.05):
            raise ParameterError(f"prosthetic-knee: the spring preload must be in [0, 0.05) m, got {self.spring_preload}")


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


class ProstheticKnee(Scenario, name="prosthetic-knee", params=ProstheticKneeParams, tables=TABLES,
                     title="Markus et al. 2019: the prosthetic four-bar knee with its rubber stop"):

    def run(self, params: ProstheticKneeParams, tables: Tables, *, out: Path | None = None,
            progress: Progress | None = None) -> Summary:
        summary = prosthetic_knee(tables, params, progress)
        if out is not None:
            from simclient.scenarios.report import save_prosthetic_knee

            summary.values["outputs"] = [str(f) for f in save_prosthetic_knee([(params.law, summary)], out)]
        return summary

    def report(self, summary: Summary) -> str:
        k = summary["knee_flexion_deg"]
        return "\n".join([
            f"prosthetic-knee ({summary['law']}): assembly residual {summary['assembly_residual_m']:.1e} m, joint "
            f"drift <= {summary['max_link_length_drift_m']:.1e} m; {summary['wall_s']:.2f} s wall",
            f"  stop: max penetration {summary['max_penetration_m'] * 1e3:.3f} mm, peak force "
            f"{summary['peak_contact_force_N']:.0f} N (width {summary['peak_width_s'] * 1e3:.1f} ms at half height), "
            f"in contact {summary['contact_duration_s']:.3f} s, {summary['impacts']} onset(s)",
            f"  knee angle {k['min']:.2f} .. {k['max']:.2f} deg"])


register(Study("prosthetic-knee-laws", "prosthetic-knee", "Markus et al. Fig. 6: the stop with Flores' law, the "
               "STEP penalty law and Hertz", tuple((law, {"law": law}) for law in ("flores", "penalty-step", "hertz")),
               plot="prosthetic-knee"))
