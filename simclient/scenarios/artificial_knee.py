"""The artificial knee of Bei & Fregly (2004) on real implant tables: elastic-foundation contact
between a fixed tibial insert and a moving femoral component.

Frames (Bei & Fregly; the Grand Challenge "DM" model's own): the insert's table frame is the fixed
frame, +y superior, +z medial, +x = y x z (posterior for this right knee); the femoral component's
table frame coincides with it at the neutral pose. The femoral pose is given by Bei & Fregly's six
generalized coordinates relative to the insert, rotations as a body-3 1-2-3 sequence:
``R = Rx(varus_valgus) Ry(internal_external) Rz(-flexion)`` (flexion positive, bringing the
posterior condyles down) and the femoral frame's origin ``(ap, si, ml)`` in metres.

Element grids: ``grid`` elements per compartment over the insert table's parameter rectangle on
each side of the intercondylar eminence (medial: +z), elements outside the fitted data's footprint
left out; thickness from the table's ``thickness`` field (the distance to the base plane y = 0).

Dynamics (reduced coordinates, like Bei & Fregly's API): flexion, internal-external rotation and
anterior-posterior translation are prescribed; superior-inferior and medial-lateral translation
and varus-valgus rotation are integrated with a stiff method (BDF through :func:`simclient.dynamics.integrate`) as a quasi-static,
massless viscous model ``c si' = F_y``, ``c ml' = F_z``, ``c_r vv' = T_x`` with the contact force and
the axial load's force ``F`` and torque ``T`` about the femoral origin: the coordinates relax to
equilibrium with time constants ``c / k`` of tens of microseconds and lag the prescribed motion by a
force imbalance ``c q'`` that the summary reports. Assumptions (not in the paper, which used "large
masses" and "heavy numerical damping", no gravity, to the same end): c = 3e3 N s/m, c_r = 3 N m s/rad
(c times about the compartments' half spacing squared), body weight 700 N; the axial load acts
along -y through a point 70 % of the way from the lateral to the medial compartment's centre (a
70/30 medial/lateral split at equilibrium); inertia is neglected (the analysis is quasi-static).
The active-set search tracks the elements within 0.2 mm of the femur (``margin``; with Bei &
Fregly's search of the penetrating elements only, a settle on these flat-on-flat compartments misses
a second contact area and stops 141 N out of balance); no periodic full search (a full search at
every evaluation gives the same histories). The force imbalance is the viscous model's lag and
scales with ``c``: about 10 % of the load in stance and up to half the 175 N load at the end of
swing, where the femur moves fastest relative to the load; with c = 1e3 N s/m it is a third of that
(the forces at maximum load change by 0.2 %) but the stiffer system takes ten times longer.

Gait-like cycle (1 s, assumption: smooth monotone-cubic curves through the values below, in the
range of fluoroscopic TKA gait data): flexion 5-18-8 deg in stance and up to 60 deg in swing,
internal-external rotation within +-4 deg, anterior-posterior translation within +-2 mm, axial load
0.25 BW at heel strike rising to 3.0 BW (first peak, 15 %) and 2.6 BW (second peak, 45 %), 0.25 BW in
swing.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy.interpolate import PchipInterpolator

from simclient.contact import FoundationContact, LayerLaw, LinearLayer, NonlinearLayer, element_grid
from simclient.dynamics import integrate
from simclient.errors import ContactError, ParameterError, SimulationError
from simclient.geometry import rx, ry, rz
from simclient.io import Source, read_field
from simclient.scenarios._base import Progress, Scenario, Summary, Tables, extent_param, param

__all__ = ["ImplantKneeParams", "MATERIALS", "GAIT", "ImplantKnee", "artificial_knee", "ArtificialKnee"]

#: UHMWPE of Bei & Fregly: linear E = 463 MPa, nu = 0.46; nonlinear eps0 = 0.0597, p0 = 18.4 MPa, n = 3
MATERIALS: dict[str, LayerLaw] = {"linear": LinearLayer(463e6, 0.46), "nonlinear": NonlinearLayer(0.0597, 18.4e6, 3, 0.46)}

#: (time as a fraction of the cycle, value) knots of the gait-like cycle
GAIT: dict[str, tuple[list[float], list[float]]] = {
    "flexion_deg": ([0, 0.15, 0.4, 0.6, 0.75, 0.9, 1.0], [5, 18, 8, 35, 60, 30, 5]),
    "internal_external_deg": ([0, 0.3, 0.6, 0.8, 1.0], [0, 3, -2, -4, 0]),
    "anterior_posterior_mm": ([0, 0.3, 0.6, 0.8, 1.0], [0, 1, -1, -2, 0]),
    "axial_load_bw": ([0, 0.05, 0.15, 0.3, 0.45, 0.6, 0.7, 1.0], [0.25, 1.5, 3.0, 1.8, 2.6, 0.6, 0.25, 0.25]),
}


#: absolute tolerances of (si, ml, vv): 0.1 um, 0.1 um, 1e-5 rad (0.6 mdeg)
ATOL = [1e-7, 1e-7, 1e-5]


@dataclass(frozen=True)
class ImplantKneeParams:
    """Model parameters (SI). See the module docstring for the assumptions."""

    material: str = param("linear", "UHMWPE model", choices=("linear", "nonlinear"))
    analysis: str = param("both", "static settles, the gait-like cycle or both", choices=("static", "gait", "both"))
    grid: tuple[int, int] = extent_param((30, 30), "elements per compartment")
    body_weight: float = 700.0
    damping: float = 3e3
    damping_rot: float = 3.0
    margin: float = 2e-4  # active-set tracking margin (m) and full-search period, see FoundationContact
    full_every: int = 0
    medial_share: float = 0.7
    cycle_s: float = 1.0
    settle_s: float = 0.3
    static_loads_N: tuple[float, ...] = (1000.0, 2000.0, 3000.0)
    static_flexion_deg: tuple[float, ...] = (0.0, 30.0, 60.0)
    rtol: float = 1e-5
    outputs: int = 101

    def __post_init__(self) -> None:
        if self.material not in MATERIALS:
            raise ParameterError(f"artificial-knee: unknown material {self.material!r}; choose {', '.join(MATERIALS)}")
        if self.analysis not in ("static", "gait", "both"):
            raise ParameterError(f"artificial-knee: unknown analysis {self.analysis!r}; choose static, gait or both")


def femoral_rotation(varus_valgus: float, internal_external: float, flexion: float) -> np.ndarray:
    """Body-3 1-2-3 rotation of the femoral frame in the insert frame (radians)."""
    return rx(varus_valgus) @ ry(internal_external) @ rz(-flexion)


@dataclass
class _Lowest:
    point: np.ndarray  # m, table frame
    uv: tuple[float, float]


def _level_centres(source: Source, x_window: tuple[float, float]) -> dict[str, _Lowest]:
    """Per side (medial: z > 0, lateral: z < 0) the centre of the lowest level region (|n_y| > 0.995,
    within 0.1 mm of the minimum height) inside the data footprint, within ``x_window`` (m), at
    least 8 mm from the mid-plane z = 0: the dish bottoms of the insert or the distal flats of the
    condyles. Both components of this design are nearly flat across (medial-lateral), so a lowest
    *point* would be arbitrary."""
    h = source.header
    pts = source.read_block(0, h.n_rec_u, 0, h.n_rec_v)
    base = np.ones(pts.shape[:2], bool)
    if "data_distance" in h.extras:
        base = read_field(source, "data_distance") <= h.source["fit"]["footprint_radius_m"]
    base &= (pts[..., 2] > x_window[0]) & (pts[..., 2] < x_window[1]) & (np.abs(pts[..., 6]) > 0.995)
    out = {}
    for name, side in (("medial", 1.0), ("lateral", -1.0)):
        ok = base & (side * pts[..., 4] > 0.008)
        if not ok.any():
            raise SimulationError(f"{source.name}: no level table points on the {name} side")
        y = np.where(ok, pts[..., 3], np.inf)
        region = pts[y < y.min() + 1e-4]
        centre = region[:, 2:5].mean(axis=0)
        k = np.argmin(np.linalg.norm(region[:, 2:5] - centre, axis=1))
        out[name] = _Lowest(np.array([centre[0], y.min(), centre[2]]), (float(region[k, 0]), float(region[k, 1])))
    return out


@dataclass
class ImplantKnee:
    """The insert's element grids, the femoral table and the contact; ``pose(q)`` and ``loads``."""

    insert: Source
    femoral: Source
    params: ImplantKneeParams
    contact: FoundationContact = field(init=False)
    neutral: np.ndarray = field(init=False)  # femoral origin at the neutral pose, touching (m)
    load_z: float = field(init=False)  # ML position of the axial load line (m)
    centres: dict[str, float] = field(init=False)

    def __post_init__(self) -> None:
        p = self.params
        h = self.insert.header
        dish = _level_centres(self.insert, (-0.015, 0.015))
        condyle = _level_centres(self.femoral, (-0.02, 0.03))
        # the compartments: the two parts of the insert table's v range, split midway between the dishes
        split = (dish["medial"].uv[1] + dish["lateral"].uv[1]) / 2
        grids = [element_grid(self.insert, name, (h.u0, h.u1), (h.v0, split) if d.uv[1] < split else (split, h.v1),
                              p.grid, "thickness") for name, d in dish.items()]
        self.contact = FoundationContact(grids, self.femoral, MATERIALS[p.material], extent=(9, 9),
                                         guesses={n: c.uv for n, c in condyle.items()}, margin=p.margin,
                                         full_every=p.full_every)
        # neutral pose: condyles above the dish bottoms (AP, ML), just touching (SI)
        d_mid = (dish["medial"].point + dish["lateral"].point) / 2
        c_mid = (condyle["medial"].point + condyle["lateral"].point) / 2
        self.neutral = np.array([d_mid[0] - c_mid[0], min(d.point[1] for d in dish.values())
                                 - min(c.point[1] for c in condyle.values()), d_mid[2] - c_mid[2]])
        self.centres = {n: float(d.point[2]) for n, d in dish.items()}
        self.load_z = p.medial_share * self.centres["medial"] + (1 - p.medial_share) * self.centres["lateral"]

    # -- kinematics and loads ----------------------------------------------------------------------
    def pose(self, free: np.ndarray, flexion: float, ie: float, ap: float) -> tuple[np.ndarray, np.ndarray]:
        """Femoral frame (R, origin) in the insert frame for free coordinates (si, ml, vv) (offsets
        from the neutral pose, m, m, rad) and the prescribed flexion, IE (rad) and AP offset (m)."""
        si, ml, vv = free
        R = femoral_rotation(vv, ie, flexion)
        return R, self.neutral + np.array([ap, si, ml])

    def generalized_forces(self, free: np.ndarray, flexion: float, ie: float, ap: float, load: float,
                           full: bool = False) -> tuple[np.ndarray, dict[str, Any]]:
        """(Q_si, Q_ml, Q_vv) in N, N, N m from the contact and the axial load ``load`` (N, along -y);
        ``full``: evaluate every element (no active-set tracking)."""
        R, r = self.pose(free, flexion, ie, ap)
        res = self.contact.evaluate(np.eye(3), np.zeros(3), R, r, full=full)
        F = sum(c.force for c in res.values())
        T0 = sum(c.torque for c in res.values())  # about the insert origin
        T = T0 - np.cross(r, F)  # about the femoral origin
        f_load = np.array([0.0, -load, 0.0])
        arm = np.array([r[0], r[1], self.load_z]) - r
        T = T + np.cross(arm, f_load)
        F = F + f_load
        return np.array([F[1], F[2], T[0]]), res

    # -- analyses -----------------------------------------------------------------------------------
    def integrate(self, t_end: float, prescribed: Callable[[float], tuple[float, float, float, float]],
                 y0: np.ndarray | None = None, t_eval: np.ndarray | None = None) -> Any:
        """Integrate the free coordinates (si, ml, vv) from ``y0`` (default: neutral) with
        ``prescribed(t) -> (flexion, ie, ap, load)``: ``c q' = Q(q, t)``, BDF."""
        p = self.params
        c = np.array([p.damping, p.damping, p.damping_rot])

        def rhs(t: float, y: np.ndarray) -> np.ndarray:
            Q, _ = self.generalized_forces(y, *prescribed(t))
            return Q / c

        y0 = np.zeros(3) if y0 is None else y0
        sol = integrate(rhs, (0.0, t_end), y0, method="BDF", rtol=p.rtol, atol=ATOL, t_eval=t_eval)
        if sol.status != 0:
            raise SimulationError(f"artificial knee: the integrator failed at t = {sol.t[-1]:.4g} s: {sol.message}")
        return sol

    def touching(self, flexion: float, ie: float = 0.0, ap: float = 0.0) -> float:
        """Superior-inferior offset (m) at which the femur, lowered from above at this pose, first
        touches the insert (to 1 um): where settles start."""
        def force(si: float) -> float:
            R, r = self.pose(np.array([si, 0.0, 0.0]), flexion, ie, ap)
            res = self.contact.evaluate(np.eye(3), np.zeros(3), R, r, full=True)
            return sum(float(np.linalg.norm(c.force)) for c in res.values())

        lo, hi = 0.0, 0.0005
        while force(hi) > 0:  # up in 0.5 mm steps, then bisect
            lo, hi = hi, hi + 0.0005
            if hi > 0.02:
                raise SimulationError(f"artificial knee: no contact-free height below 20 mm at flexion "
                                      f"{math.degrees(flexion):.1f} deg")
        if lo == 0.0:
            lo = -0.005
            while force(lo) == 0.0:  # down until contact
                lo -= 0.0005
                if lo < -0.02:
                    raise SimulationError(f"artificial knee: the components do not meet at flexion "
                                          f"{math.degrees(flexion):.1f} deg")
        while hi - lo > 1e-6:
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if force(mid) > 0 else (lo, mid)
        return hi

    def static(self, flexion_deg: float, load: float) -> tuple[np.ndarray, dict[str, Any]]:
        """Settle under a constant vertical load at a fixed flexion (IE = AP = 0), starting at rest
        where the femur touches: the free coordinates at rest and the compartments' results."""
        fl = math.radians(flexion_deg)
        y0 = np.array([self.touching(fl), 0.0, 0.0])
        sol = self.integrate(self.params.settle_s, lambda t: (fl, 0.0, 0.0, load), y0=y0)
        y = sol.y[:, -1]
        Q, res = self.generalized_forces(y, fl, 0.0, 0.0, load, full=True)
        return y, {"flexion_deg": flexion_deg, "load_N": load, "residual_force_N": float(np.abs(Q[:2]).max()),
                   "residual_torque_Nm": float(abs(Q[2])), "si_mm": y[0] * 1e3, "ml_mm": y[1] * 1e3,
                   "varus_valgus_deg": math.degrees(y[2]), "results": res}

    def gait(self) -> dict[str, Any]:
        """One gait-like cycle (after a settle at its first instant): time histories, the pressure
        maps at the output times and the compartments at the instant of maximum axial load."""
        p = self.params
        curves = {k: PchipInterpolator(np.array(t) * p.cycle_s, v) for k, (t, v) in GAIT.items()}

        def prescribed(t: float) -> tuple[float, float, float, float]:
            return (math.radians(float(curves["flexion_deg"](t))), math.radians(float(curves["internal_external_deg"](t))),
                    float(curves["anterior_posterior_mm"](t)) * 1e-3, float(curves["axial_load_bw"](t)) * p.body_weight)

        y0, _ = self.static(GAIT["flexion_deg"][1][0], GAIT["axial_load_bw"][1][0] * p.body_weight)
        t_out = np.linspace(0.0, p.cycle_s, p.outputs)
        evals0 = self.contact.elements_evaluated
        t0 = time.perf_counter()
        sol = self.integrate(p.cycle_s, prescribed, y0=y0, t_eval=t_out)
        wall = time.perf_counter() - t0
        casts = self.contact.elements_evaluated - evals0
        history: dict[str, Any] = {"t_s": t_out.tolist(), "load_N": [], "flexion_deg": [], "si_mm": (sol.y[0] * 1e3).tolist(),
                                   "ml_mm": (sol.y[1] * 1e3).tolist(), "varus_valgus_deg": np.degrees(sol.y[2]).tolist(),
                                   "medial_N": [], "lateral_N": []}
        maps: dict[str, list[np.ndarray]] = {n: [] for n in self.contact.compartments}
        results = []
        imbalance = []
        for k, t in enumerate(t_out):
            fl, ie, ap, load = prescribed(t)
            Q, res = self.generalized_forces(sol.y[:, k], fl, ie, ap, load, full=True)
            imbalance.append(abs(Q[0]) / load)
            results.append(res)
            history["load_N"].append(load)
            history["flexion_deg"].append(math.degrees(fl))
            for n, r in res.items():
                history[f"{n}_N"].append(float(np.linalg.norm(r.force)))
                maps[n].append(r.pressure.reshape(self.contact.compartments[n].grid.shape))
        k_max = int(np.argmax(history["load_N"]))
        # the cost of one element evaluation alone: full searches at the maximum-load pose
        R, r = self.pose(sol.y[:, k_max], *prescribed(float(t_out[k_max]))[:3])
        n0, t1 = self.contact.elements_evaluated, time.perf_counter()
        for _ in range(20):
            self.contact.evaluate(np.eye(3), np.zeros(3), R, r, full=True)
        per_element = (time.perf_counter() - t1) / (self.contact.elements_evaluated - n0) * 1e6
        history["imbalance"] = imbalance  # |superior-inferior force imbalance| / axial load
        stance = t_out <= 0.6 * p.cycle_s
        return {"history": history, "maps": {n: np.array(v) for n, v in maps.items()}, "t_max_load_s": float(t_out[k_max]),
                "at_max_load": results[k_max], "max_imbalance": float(max(imbalance)),
                "max_imbalance_stance": float(np.max(np.array(imbalance)[stance])), "wall_s": wall,
                "rhs_evaluations": int(sol.nfev),
                "element_casts": int(casts), "us_per_element": wall / max(casts, 1) * 1e6,
                "us_per_element_full_search": per_element}


def artificial_knee(insert: Source, femoral: Source, params: ImplantKneeParams | None = None,
                    out: str | Path | None = None, progress: Progress | None = None) -> Summary:
    """Run the static settles and/or the gait-like cycle (``params.analysis``); return the summary
    (DESIGN's keys: ``compartments`` at the instant of maximum axial load, ``wall_s``; ``status``
    ``failed`` with a ``message`` when an integration or a contact evaluation failed). With ``out``,
    the pressure maps go to ``out/pressure.zarr`` and the plots to ``out/*.png``."""
    p = params or ImplantKneeParams()
    say = progress or (lambda s: None)
    t0 = time.perf_counter()
    knee = ImplantKnee(insert, femoral, p)
    values: dict[str, Any] = {"status": "ok", "material": p.material, "element_grid": list(p.grid),
                              "usable_elements": knee.contact.stats["elements"]}
    artifacts: dict[str, Any] = {"knee": knee}
    try:
        if p.analysis in ("static", "both"):
            rows = []
            for fl in p.static_flexion_deg:
                for load in p.static_loads_N:
                    say(f"static settle: flexion {fl:g} deg, {load:g} N")
                    _, r = knee.static(fl, load)
                    rows.append({**{k: v for k, v in r.items() if k != "results"},
                                 "compartments": {n: c.summary() for n, c in r["results"].items()}})
            values["static"] = rows
        if p.analysis in ("gait", "both"):
            say("gait-like cycle")
            g = artifacts["gait"] = knee.gait()
            values["compartments"] = {n: c.summary() for n, c in g["at_max_load"].items()}
            values["t_max_load_s"] = g["t_max_load_s"]
            values["gait"] = {"wall_s": g["wall_s"], "rhs_evaluations": g["rhs_evaluations"],
                              "max_force_imbalance": g["max_imbalance"],
                              "max_force_imbalance_stance": g["max_imbalance_stance"],
                              "element_casts": g["element_casts"], "us_per_element": g["us_per_element"],
                              "us_per_element_full_search": g["us_per_element_full_search"]}
            if out is not None:
                from simclient.scenarios.report import save_artificial_knee

                values["files"] = save_artificial_knee(Path(out), g, knee, p)
        elif "static" in values:
            # without the cycle, report the heaviest static case
            values["compartments"] = max(values["static"], key=lambda r: r["load_N"])["compartments"]
    except (SimulationError, ContactError) as exc:
        values.update(status="failed", message=str(exc))
    values["contact_stats"] = knee.contact.stats
    values["wall_s"] = time.perf_counter() - t0
    return Summary("artificial-knee", values, artifacts)


class ArtificialKnee(Scenario, name="artificial-knee", params=ImplantKneeParams,
                     tables={"insert": "tibial_insert", "femoral": "femoral_component"},
                     title="Bei & Fregly 2004: the implant's elastic-foundation contact, static settles and a gait-like "
                           "cycle"):

    def run(self, params: ImplantKneeParams, tables: Tables, *, out: Path | None = None,
            progress: Progress | None = None) -> Summary:
        return artificial_knee(tables.open("insert", self.tables["insert"]),
                               tables.open("femoral", self.tables["femoral"]), params, out=out, progress=progress)

    def report(self, summary: Summary) -> str:
        lines = [f"artificial-knee ({summary['material']} UHMWPE, {summary['element_grid'][0]} x "
                 f"{summary['element_grid'][1]} elements per compartment, {summary['usable_elements']} usable): "
                 f"{summary['wall_s']:.1f} s wall"]
        if not summary.ok:
            return "\n".join([*lines, f"  FAILED: {summary['message']}"])
        for row in summary.get("static", []):
            c = row["compartments"]
            lines.append(f"  static {row['flexion_deg']:4.0f} deg {row['load_N']:6.0f} N: medial "
                         f"{c['medial']['force_N']:7.1f} N, lateral {c['lateral']['force_N']:7.1f} N, SI "
                         f"{row['si_mm']:+.3f} mm, ML {row['ml_mm']:+.3f} mm, VV {row['varus_valgus_deg']:+.3f} deg")
        if "gait" in summary:
            g = summary["gait"]
            lines.append(f"  gait cycle: {g['wall_s']:.2f} s wall, {g['rhs_evaluations']} evaluations, "
                         f"{g['element_casts']} ray casts ({g['us_per_element']:.1f} us each with everything, "
                         f"{g['us_per_element_full_search']:.2f} us per element evaluation alone); force imbalance <= "
                         f"{g['max_force_imbalance_stance']:.1%} of the load in stance, {g['max_force_imbalance']:.0%} "
                         f"overall; maximum axial load at t = {summary['t_max_load_s']:.2f} s:")
        lines.append(f"  {'':24s}{'medial':>12s}{'lateral':>12s}")
        c = summary["compartments"]
        for key, label, scale in (("force_N", "contact force [N]", 1), ("torque_Nm", "contact torque [N m]", 1),
                                  ("peak_pressure_Pa", "peak pressure [MPa]", 1e-6),
                                  ("mean_pressure_Pa", "average pressure [MPa]", 1e-6),
                                  ("area_m2", "contact area [mm^2]", 1e6), ("active_elements", "active elements", 1)):
            lines.append(f"  {label:24s}{c['medial'][key] * scale:12.4g}{c['lateral'][key] * scale:12.4g}")
        lines.extend(f"  wrote {f}" for f in summary.get("files", []))
        return "\n".join(lines)
