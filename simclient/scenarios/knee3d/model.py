"""The 3D knee's model (see :mod:`simclient.scenarios.knee3d`)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from simclient.contact import hertz_stiffness, make_law
from simclient.dynamics import Body, ContactModel, Ligament, MultibodySystem, QuadraticLaw, Surface, ligament_forces, simulate
from simclient.geometry import StorageWindow, rx
from simclient.scenarios._base import Progress, Summary, Tables, save_outputs, time_progress
from simclient.scenarios.knee3d import TABLES, KneeParams

__all__ = ["run", "knee3d", "KNEE_LIGAMENTS", "flexion_deg", "internal_rotation_deg", "thesis_checks"]

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

CONDYLE_RADII = {"medial": 0.021, "lateral": 0.020}  # m, the sample condyle tables'


def run(params: KneeParams, tables: Tables, *, out: Path | None = None, progress: Progress | None = None) -> Summary:
    """The 3D knee on ``tables`` (the roles of :data:`TABLES`); with ``out``, its report's files there."""
    summary = knee3d(tables, params, progress)
    return save_outputs(summary, out, progress)


def flexion_deg(A: np.ndarray) -> float:
    """Knee flexion (deg): the tibia's long axis swung posteriorly (towards -y) about x."""
    a = A @ np.array([0.0, 0.0, -1.0])
    return math.degrees(math.atan2(-a[1], -a[2]))


def internal_rotation_deg(A: np.ndarray) -> float:
    """Internal rotation of the tibia about its long axis (deg, positive when the tibia's anterior
    direction +y turns towards medial -x)."""
    B = rx(-math.radians(flexion_deg(A))) @ A  # remove flexion (about x), then read the rotation about z
    return math.degrees(math.atan2(B[1, 0], B[0, 0]))


def knee3d(tables: Tables, params: KneeParams = KneeParams(), progress: Progress | None = None) -> Summary:
    """Run the 3D knee from full extension until ``final_flexion_deg`` (thesis 6.5.2) on the tables
    of the roles ``condyle_medial``, ``condyle_lateral``, ``plateau_medial``, ``plateau_lateral``
    (:data:`TABLES`). The artifacts hold the sampled ``history``."""
    p = params
    femur = Body("femur", fixed=True)
    tibia = Body("tibia", mass=p.tibia_mass, inertia=np.diag(p.tibia_inertia), position=np.array([0, 0, p.tibia_z]))
    contacts = []
    for side, sign in (("medial", -1.0), ("lateral", 1.0)):
        wc = StorageWindow(tables.open(f"condyle_{side}", TABLES[f"condyle_{side}"]), p.window, p.interpolation,
                           centre=(0.0, 0.0))
        wp = StorageWindow(tables.open(f"plateau_{side}", TABLES[f"plateau_{side}"]), p.window, p.interpolation,
                           centre=(0.0, 0.0))
        K = hertz_stiffness(p.E, p.nu, p.E, p.nu, CONDYLE_RADII[side])
        drop = p.lateral_drop if side == "lateral" else 0.0
        contacts.append(ContactModel(side, Surface(femur, wc, offset=np.array([sign * p.condyle_x, 0, p.condyle_z])),
                                     Surface(tibia, wp, offset=np.array([sign * p.condyle_x, 0, p.plateau_z - drop])),
                                     make_law(p.law, K, p.cr)))
    ligaments = []
    for name, (pf, pt, ratio, k) in KNEE_LIGAMENTS.items():
        a, b = np.array(pf) * 1e-3, np.array(pt) * 1e-3
        l_ext = float(np.linalg.norm((np.array([0, 0, p.tibia_z]) + b) - a))
        l0 = l_ext / ratio if p.reading == "ratio" else l_ext * ratio
        ligaments.append(Ligament(name, femur, a, tibia, b, QuadraticLaw(k * 1e6, l0)))
    system = MultibodySystem([femur, tibia], contacts, gravity=p.gravity, loads=ligaments)
    res = simulate(system, p.t_end, method=p.method, rtol=p.rtol, atol=p.atol, max_step=p.max_step,
                   stop=lambda t, s: flexion_deg(s.pose(tibia)[1]) - p.final_flexion_deg,
                   progress=time_progress(progress, p.t_end))
    onsets = [e for e in res.events if e["type"] == "onset"]
    windows = {f"{c.name}_{w}": getattr(c, w).window.stats for c in contacts for w in ("i", "j")}
    # histories sampled from the dense output: angles, ligament forces, contact indentation and force
    ts = np.linspace(0, float(res.t[-1]), p.samples)
    Y = np.column_stack([res.sol(t) for t in ts])
    hist: dict[str, Any] = {"t_s": ts, "flexion_deg": np.empty(p.samples), "internal_rotation_deg": np.empty(p.samples)}
    for lig, f in zip(ligaments, ligament_forces(system, ligaments, Y).T):
        hist[f"ligament_{lig.name}_N"] = f
    for c in contacts:
        hist[f"{c.name}_indentation_m"] = np.empty(p.samples)
        hist[f"{c.name}_force_N"] = np.empty(p.samples)
    for n, y in enumerate(Y.T):
        # the contacts there, on windows moved to them (the run has moved them on since)
        found = system.place_windows(y)
        A = system.pose(tibia)[1]
        hist["flexion_deg"][n] = flexion_deg(A)
        hist["internal_rotation_deg"][n] = internal_rotation_deg(A)
        for c, hit in zip(contacts, found):
            ind = max(hit.indentation if hit.converged else -system.gap(c), 0.0)
            hist[f"{c.name}_indentation_m"][n] = ind
            hist[f"{c.name}_force_N"][n] = c.law.normal_force(ind, 0.0, 1.0)  # the elastic part
    peak = {lig.name: float(hist[f"ligament_{lig.name}_N"].max()) for lig in ligaments}
    flexed = hist["flexion_deg"] > 30.0
    peak30 = {lig.name: float(hist[f"ligament_{lig.name}_N"][flexed].max(initial=0.0)) for lig in ligaments}
    flex, rot = hist["flexion_deg"], hist["internal_rotation_deg"]
    system.set_state(res.y[:, -1])
    values = {"status": "ok" if res.success else "failed", "message": res.message,
              "final_flexion_deg": flexion_deg(system.pose(tibia)[1]), "t_final_s": float(res.t[-1]),
              "first_contact": onsets[0]["contact"] if onsets else None,
              "contacts": {side: sum(1 for e in onsets if e["contact"] == side) for side in ("medial", "lateral")},
              "contact_onsets": [{"t": e["t"], "contact": e["contact"]} for e in onsets],
              "peak_ligament": max(peak, key=lambda k: peak[k]), "peak_ligament_forces_N": peak,
              "peak_ligament_above_30_deg": max(peak30, key=lambda k: peak30[k]),
              # (the stop event ends at the final flexion to within its root's tolerance)
              "internal_rotation_deg": {f"{int(a)}": float(np.interp(a, flex, rot)) for a in range(0, 81, 10)
                                        if a <= max(flex) + 1e-6},
              "max_internal_rotation_at_flexion_deg": float(flex[int(np.argmax(rot))]),
              "wall_s": res.wall_s, "steps": res.steps, "rhs_evaluations": res.nfev, "method": p.method,
              "windows": windows}
    values["thesis"] = thesis_checks(values)
    return Summary("knee3d", values, {"history": hist, "result": res, "system": system})


def thesis_checks(values: dict[str, Any]) -> dict[str, bool]:
    """Which of the thesis' reported behaviours a run shows: R25 first contact medial, R26 three
    medial and three lateral contacts, R27 internal rotation largest at 70 +- 5 deg flexion (and
    internal, > 0), R28 the MCL anterior fibres carrying the largest ligament force above 30 deg."""
    rot = values["internal_rotation_deg"]
    return {"R25": values["first_contact"] == "medial",
            "R26": values["contacts"] == {"medial": 3, "lateral": 3},
            "R27": abs(values["max_internal_rotation_at_flexion_deg"] - 70.0) <= 5.0 and max(rot.values()) > 0.0,
            "R28": values["peak_ligament_above_30_deg"] == "MCL-anterior"}
