"""The planar knee's model (see :mod:`simclient.scenarios.knee2d`)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from simclient.contact import MATERIALS, CirclePair, ForceLaw, ProfilePair, hertz_stiffness, make_law
from simclient.dynamics import (
    Ligament,
    PlanarBody,
    PlanarContact,
    PlanarSystem,
    PointLoad,
    ProfileSurface,
    QuadraticLaw,
    SimulationResult,
    pulse,
    simulate,
)
from simclient.errors import ContactError, ParameterError
from simclient.geometry import StorageWindow
from simclient.scenarios._base import Progress, Summary, Tables, save_outputs, time_progress
from simclient.scenarios.knee2d import GEOMETRIES, MATERIAL_NAMES, Knee2DParams, table_names

__all__ = ["run", "knee2d", "force_law", "LIGAMENTS_2D", "MATERIAL_CASES", "flexion_deg", "impact_hysteresis"]

#: Table 5.2: femoral insertion (x, y), tibial insertion (xi, eta) in mm, l0 (mm), k (N/mm^2)
LIGAMENTS_2D = {
    "acl": ((-33.0, -17.0), (213.0, -9.0), 43.8, 35.0),
    "pcl": ((-19.0, -14.0), (210.0, 35.0), 33.2, 30.0),
    "mcl": ((-23.0, -14.0), (163.0, 8.0), 78.4, 15.0),
    "lcl": ((-25.0, -19.0), (178.0, 25.0), 56.2, 15.0),
}
#: Table 5.1 (SI): the tibia's mass (kg), inertia about its centre of mass (kg m^2), initial
#: position of the centre of mass (m) and angle (rad)
TIBIA_MASS, TIBIA_INERTIA, TIBIA_POSITION, TIBIA_ANGLE = 3.75, 0.065, (-0.2016, -0.1749), 0.6145
R_HEALTHY = 0.0304  # m, the medial femur radius of the text, with which Hertz gives K = 3260513 N/m^1.5
H_CARTILAGE = 0.415e-3  # m, 10 % of the 4.15 mm of cartilage (the 90 % OA models' first layer)
#: the closed forms' placement: they touch the profiles where these are nearest at the start, the
#: condyle's point (femur frame = global, m), the plateau's (tibia frame (xi, eta), m) and the
#: common normal there (global, towards the femur); a test checks these against the profile tables
FEMUR_NEAREST = np.array([-0.041269, -0.027344])
PLATEAU_NEAREST = np.array([0.215, 0.028123])
NORMAL_START = np.array([0.816830, 0.576879])


def _sphere_plane(a: str, b: str) -> float:
    ma, mb = MATERIALS[a], MATERIALS[b]
    return hertz_stiffness(ma.E, ma.nu, mb.E, mb.nu, R_HEALTHY)


#: Table 5.5's five contact scenarios: the force law's stiffnesses and restitution
MATERIAL_CASES: dict[str, dict[str, Any]] = {
    "healthy": {"K": _sphere_plane("cartilage", "cartilage"), "cr": MATERIALS["cartilage"].cr},
    "artificial": {"K": _sphere_plane("uhmwpe", "cr-co"), "cr": MATERIALS["uhmwpe"].cr},
    "oa90": {"K": _sphere_plane("cartilage", "cartilage"), "K2": _sphere_plane("bone", "bone"),
             "h1": H_CARTILAGE, "cr": MATERIALS["bone"].cr},
    "oa90-op": {"K": _sphere_plane("cartilage", "cartilage"),
                "K2": _sphere_plane("osteoporotic-bone", "osteoporotic-bone"), "h1": H_CARTILAGE,
                "cr": MATERIALS["osteoporotic-bone"].cr},
    "oa100-op": {"K": _sphere_plane("osteoporotic-bone", "osteoporotic-bone"), "cr": MATERIALS["osteoporotic-bone"].cr},
}
assert tuple(MATERIAL_CASES) == MATERIAL_NAMES


def force_law(p: Knee2DParams) -> ForceLaw:
    """The contact's force law: the material's (Table 5.5) or the closed-form geometry's stiffness."""
    m = MATERIAL_CASES[p.material]
    cr = m["cr"] if p.cr is None else p.cr
    if p.geometry != "splines":
        return make_law(p.law, GEOMETRIES[p.geometry][2], cr)
    if "K2" in m:  # the double-layer materials
        if p.law not in ("hertz", "double-layer"):
            raise ParameterError(f"knee2d: the {p.material} material is a double layer (Hertz in each "
                                 f"layer, eq. 5.33); the {p.law} law does not apply (the thesis leaves "
                                 "the OA models out of the dissipative-law runs)")
        return make_law("double-layer", m["K"], K2=m["K2"], h1=m["h1"])
    if p.law == "double-layer":
        raise ParameterError(f"knee2d: double-layer needs a layered material (oa90, oa90-op), not {p.material}")
    return make_law(p.law, m["K"], cr)


def run(params: Knee2DParams, tables: Tables, *, out: Path | None = None, progress: Progress | None = None) -> Summary:
    """The planar knee on ``tables`` (the profiles of :func:`table_names`); with ``out``, its report's files there."""
    summary = knee2d(tables, params, progress)
    return save_outputs(summary, out, progress)


def flexion_deg(phi: float) -> float:
    """Knee flexion (deg) from the tibia's angle (rad): 90 deg - phi."""
    return 90.0 - math.degrees(phi)


def _window(source: Any, p: Knee2DParams) -> StorageWindow:
    """A window on a profile table, at most the whole profile. (The event functions probe the gap
    without moving windows, and the gap at a window's edge is only a stand-in: a profile is small,
    so by default its window holds all of it.)"""
    h = source.header
    return StorageWindow(source, (min(p.window[0], h.n_rec_u), min(p.window[1], h.n_rec_v)), p.interpolation)


def _check_profiles(femur: StorageWindow, tibia: StorageWindow) -> None:
    """The common-normal method needs a convex condyle, and a plateau whose concavity (if any) is
    gentler than the condyle's typical convexity (a unique contact point). Curvatures from the
    tabulated points; a shape-preserving (PCHIP) or Akima profile's curvature varies from piece to
    piece, hence the median."""
    def curvature(w: StorageWindow) -> np.ndarray:
        h = w.header
        p = w.source.read_block(0, h.n_rec_u, 0, h.n_rec_v)[:, h.v_npts // 2]  # the whole (small) profile
        dx, dy = np.gradient(p[:, 2]), np.gradient(p[:, 3])
        ddx, ddy = np.gradient(dx), np.gradient(dy)
        # signed curvature (1/m), positive where the curve bends away from its outward normal (convex)
        return (dx * ddy - dy * ddx) / np.maximum((dx * dx + dy * dy) ** 1.5, 1e-300) * w.header.normal_sign

    kf, kt = curvature(femur), curvature(tibia)
    if (kf[2:-2] <= 0).any():
        raise ParameterError(f"knee2d: the femoral profile {femur.name} is not convex (the 2D common-normal "
                             "method needs a convex condyle)")
    if (kt[2:-2] < -np.percentile(kf, 5)).any():
        raise ParameterError(f"knee2d: the tibial profile {tibia.name} is more concave than the condyle is convex: "
                             "the contact point would not be unique")


def knee2d(tables: Tables, params: Knee2DParams = Knee2DParams(), progress: Progress | None = None) -> Summary:
    """Run the planar knee (module docstring). The artifacts hold the ``result``, the ``system``
    and the sampled ``history``."""
    p = params
    femur = PlanarBody("femur", fixed=True)
    tibia = PlanarBody("tibia", mass=TIBIA_MASS, inertia=TIBIA_INERTIA, position=np.array(TIBIA_POSITION),
                       angle=TIBIA_ANGLE)
    law = force_law(p)
    names = table_names(p)
    if names:
        wf, wt = (_window(tables.open(part, names[part]), p) for part in ("femur", "tibia"))
        _check_profiles(wf, wt)
        contact = PlanarContact("femur-tibia", ProfileSurface(femur, wf), ProfileSurface(tibia, wt), law,
                                ProfilePair(wf, wt))
    else:
        Ri, Rj, _ = GEOMETRIES[p.geometry]
        centre = FEMUR_NEAREST + Ri * NORMAL_START  # the circle touches the condyle where it is nearest
        xi_axis = np.array([1.0, 0.0])  # the plateau's normal in the tibia frame
        if Rj is None:  # the plateau plane: outward normal (+y of its frame) along the tibia's +xi
            j = ProfileSurface(tibia, offset=PLATEAU_NEAREST, angle=-math.pi / 2)
            kind = "plane"
        elif p.geometry == "convex-convex":
            j = ProfileSurface(tibia, offset=PLATEAU_NEAREST - Rj * xi_axis)
            kind = "convex"
        else:
            j = ProfileSurface(tibia, offset=PLATEAU_NEAREST + Rj * xi_axis)
            kind = "concave"
        contact = PlanarContact("femur-tibia", ProfileSurface(femur, offset=centre), j, law, CirclePair(Ri, Rj, kind))
    ligaments = [Ligament(name, femur, np.array(pf) * 1e-3, tibia, np.array(pt) * 1e-3, QuadraticLaw(k * 1e6, l0 * 1e-3))
                 for name, (pf, pt, l0, k) in LIGAMENTS_2D.items()]
    push = PointLoad(tibia, np.zeros(2), np.array([1.0, 0.0]), pulse(p.amplitude, p.pulse_duration))
    system = PlanarSystem([femur, tibia], [contact], gravity=(0.0, -9.81), loads=[*ligaments, push])
    y0 = system.initial_state()
    system.set_state(y0)
    lengths0 = {lig.name: lig.state(system)[2] for lig in ligaments}  # type: ignore[arg-type]
    res = simulate(system, p.t_end, method=p.method, rtol=p.rtol, atol=p.atol,
                   progress=time_progress(progress, p.t_end))
    values, history = _summary(system, contact, ligaments, res, p)
    values.update(initial_flexion_deg=flexion_deg(TIBIA_ANGLE), ligament_lengths_initial_m=lengths0,
                  status="ok" if res.success else "failed", message=res.message, wall_s=res.wall_s,
                  steps=res.steps, rhs_evaluations=res.nfev, law=law.name, material=p.material,
                  geometry=p.geometry, spline=p.spline if names else None, amplitude_N=p.amplitude,
                  pulse_duration_s=p.pulse_duration)
    return Summary("knee2d", values, {"result": res, "system": system, "history": history})


def impact_hysteresis(indentation: np.ndarray, force: np.ndarray) -> float:
    """The hysteresis (J) of the first impact in a contact period's samples (indentation in m, force
    in N, in time order from the onset): the area between the loading branch (up to the first
    maximum of the indentation) and the unloading branch (from there to the next minimum, or the
    separation), over the indentations both cover. A separated impact's loop is closed and this is
    its area; an elastic law's branches coincide and give 0."""
    d, f = np.asarray(indentation, float), np.asarray(force, float)
    if len(d) < 3:
        return 0.0
    k = next((i for i in range(1, len(d) - 1) if d[i + 1] < d[i]), len(d) - 1)  # first maximum
    m = next((i for i in range(k + 1, len(d) - 1) if d[i + 1] > d[i]), len(d) - 1)  # then the minimum
    lo, hi = d[m], d[k]
    if m == k or hi <= lo:
        return 0.0
    grid = np.linspace(lo, hi, 2001)
    load = np.interp(grid, d[:k + 1], f[:k + 1])  # d rises along the loading branch
    unload = np.interp(grid, d[k:m + 1][::-1], f[k:m + 1][::-1])
    diff = load - unload
    return float(np.sum(0.5 * (diff[1:] + diff[:-1]) * np.diff(grid)))


def _summary(system: PlanarSystem, contact: PlanarContact, ligaments: list[Ligament], res: SimulationResult,
             p: Knee2DParams) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Contact periods, peaks, the first impact's hysteresis and the sampled histories."""
    t_final = float(res.t[-1])
    ts = np.linspace(0.0, t_final, p.samples)
    events = [e for e in res.events if e.get("contact") == contact.name]
    periods, t_on = [], None
    for e in events:
        if e["type"] == "onset":
            t_on = e["t"]
        elif t_on is not None:
            periods.append((t_on, e["t"]))
            t_on = None
    if t_on is not None:
        periods.append((t_on, t_final))
    # sample every contact period densely too, so short impacts are resolved
    ts = np.unique(np.concatenate([ts, *[np.linspace(a, b, 801) for a, b in periods]]))
    keys = ["flexion_deg", "indentation_m", "indentation_rate_m_s", "force_N", "contact_x_m", "contact_y_m",
            *[f"ligament_{lig.name}_N" for lig in ligaments]]
    hist = {k: np.zeros(len(ts)) for k in keys}
    hist["t_s"] = ts
    in_contact = np.zeros(len(ts), bool)
    for (a, b) in periods:
        in_contact |= (ts >= a) & (ts <= b)
    impact_velocity = {a: next(e["impact_velocity"] for e in events if e["type"] == "onset" and e["t"] == a)
                       for a, _ in periods if any(e["type"] == "onset" and e["t"] == a for e in events)}
    for n, t in enumerate(ts):
        y: np.ndarray = res.sol(float(t))
        system.set_state(y)
        hist["flexion_deg"][n] = flexion_deg(float(y[2]))  # y = (x, y, phi, ...) of the tibia
        for lig in ligaments:
            hist[f"ligament_{lig.name}_N"][n] = lig.state(system, rate=False)[4]  # type: ignore[arg-type]
        try:
            k = system.detect(contact)
        except ContactError:  # apart, with no common normal on the profiles: no contact point
            hist["contact_x_m"][n] = hist["contact_y_m"][n] = np.nan
            continue
        hist["contact_x_m"][n], hist["contact_y_m"][n] = k.point_j[0], k.point_j[1]
        if in_contact[n] and k.indentation > 0:
            rate = k.indentation_rate(system.relative_velocity(contact, k))
            start = max((a for a, _ in periods if a <= t), default=0.0)
            v0 = impact_velocity.get(start, 1.0)
            hist["indentation_m"][n] = k.indentation
            hist["indentation_rate_m_s"][n] = rate
            hist["force_N"][n] = contact.law.normal_force(k.indentation, rate, max(v0, 1e-12))
    flex = hist["flexion_deg"]
    hysteresis = 0.0
    if periods:
        a, b = periods[0]
        first = (ts >= a) & (ts <= b)
        hysteresis = impact_hysteresis(hist["indentation_m"][first], hist["force_N"][first])
    values = {
        "final_flexion_deg": float(flex[-1]), "t_final_s": t_final,
        "contact_periods": [{"start_s": a, "end_s": b, "start_flexion_deg": float(np.interp(a, ts, flex)),
                             "end_flexion_deg": float(np.interp(b, ts, flex))} for a, b in periods],
        "max_indentation_m": float(hist["indentation_m"].max()), "max_force_N": float(hist["force_N"].max()),
        "first_impact_hysteresis_J": hysteresis,
        "max_ligament_force_N": {lig.name: float(hist[f"ligament_{lig.name}_N"].max()) for lig in ligaments},
    }
    return values, hist
