"""The artificial knee's model (see :mod:`simclient.scenarios.artificial_knee`)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from scipy.interpolate import PchipInterpolator

from simclient.contact import FoundationContact, LayerLaw, LinearLayer, NonlinearLayer, element_grid
from simclient.dynamics import StaticProblem, StaticResult
from simclient.errors import ContactError, SimulationError
from simclient.geometry import rx, ry, rz
from simclient.io import Source, read_field
from simclient.scenarios._base import Progress, Summary, Tables, save_outputs
from simclient.scenarios.artificial_knee import MATERIAL_NAMES, ArtificialKnee, ImplantKneeParams

__all__ = ["run", "MATERIALS", "GAIT", "ImplantKnee", "artificial_knee", "femoral_rotation"]

#: UHMWPE of Bei & Fregly: linear E = 463 MPa, nu = 0.46; nonlinear eps0 = 0.0597, p0 = 18.4 MPa, n = 3
MATERIALS: dict[str, LayerLaw] = {"linear": LinearLayer(463e6, 0.46), "nonlinear": NonlinearLayer(0.0597, 18.4e6, 3, 0.46)}
assert tuple(MATERIALS) == MATERIAL_NAMES

#: (time as a fraction of the cycle, value) knots of the gait-like cycle
GAIT: dict[str, tuple[list[float], list[float]]] = {
    "flexion_deg": ([0, 0.15, 0.4, 0.6, 0.75, 0.9, 1.0], [5, 18, 8, 35, 60, 30, 5]),
    "internal_external_deg": ([0, 0.3, 0.6, 0.8, 1.0], [0, 3, -2, -4, 0]),
    "anterior_posterior_mm": ([0, 0.3, 0.6, 0.8, 1.0], [0, 1, -1, -2, 0]),
    "axial_load_bw": ([0, 0.05, 0.15, 0.3, 0.45, 0.6, 0.7, 1.0], [0.25, 1.5, 3.0, 1.8, 2.6, 0.6, 0.25, 0.25]),
}


#: equilibrium tolerance, relative to the axial load: |Q_si|, |Q_ml| <= TOL_REL load (N) and
#: |Q_vv| <= TOL_REL load 20 mm (N m; about the compartments' half spacing, so that Newton's line
#: search weighs force and moment alike). Not tighter: the windowed Hermite interpolation of the
#: femoral table (re-centred as the femur moves) changes the contact force at one pose by up to a few
#: 1e-4 of the load between evaluations.
TOL_REL = 5e-4
#: where Newton stalls above TOL_REL (that noise, or a kink of the contact force as an element
#: enters), the point is accepted if its residual is within this fraction of the load (the summary
#: reports the imbalance measured at every output)
ACCEPT_REL = 1e-2
#: central-difference steps of (si, ml, vv) for the Newton Jacobian: m, m, rad
STEP = np.array([1e-8, 1e-8, 1e-7])
#: the most pseudo-time steps of one settle (:meth:`ImplantKnee.settle`; 7 contact evaluations each;
#: a settle from a first touch takes 4-23, one in the natural knee 26; one from a stall in the gait
#: cycle, where it resolves it, 1-28)
SETTLE_STEPS = 40
#: the settles' first pseudo-time step (s): about the time constant of the superior-inferior
#: direction, damping / contact stiffness = 3e3 N s/m / 3e7-9e7 N/m
SETTLE_DT = 1e-4
#: the largest Newton step of (si, ml, vv): m, m, rad
MAX_STEP = np.array([5e-5, 2e-4, 2e-3])


def run(params: ImplantKneeParams, tables: Tables, *, out: Path | None = None, progress: Progress | None = None) -> Summary:
    """The scenario on ``tables``; with ``out``, its report's files there."""
    roles = ArtificialKnee().table_names(params)
    opened = {role: tables.open(role, name) for role, name in roles.items()}
    condyles = ({"medial": opened["femoral_medial"], "lateral": opened["femoral_lateral"]}
                if params.femoral_surface == "per-condyle" else None)
    summary = artificial_knee(opened["insert"], opened.get("femoral") or opened["femoral_medial"], params,
                              progress=progress, condyles=condyles)
    return save_outputs(summary, out, progress)


def femoral_rotation(varus_valgus: float, internal_external: float, flexion: float) -> np.ndarray:
    """Body-3 1-2-3 rotation of the femoral frame in the insert frame (radians)."""
    return rx(varus_valgus) @ ry(internal_external) @ rz(-flexion)


@dataclass
class _Lowest:
    point: np.ndarray  # m, table frame
    uv: tuple[float, float]


def _level_centres(source: Source, x_window: tuple[float, float],
                   sides: tuple[str, ...] = ("medial", "lateral")) -> dict[str, _Lowest]:
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
        if name not in sides:
            continue
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
    condyles: dict[str, Source] | None = None  # one femoral table per compartment instead of ``femoral``
    contact: FoundationContact = field(init=False)
    neutral: np.ndarray = field(init=False)  # femoral origin at the neutral pose, touching (m)
    load_z: float = field(init=False)  # ML position of the axial load line (m)
    centres: dict[str, float] = field(init=False)
    jacobian: np.ndarray | None = field(init=False, default=None)  # the last equilibrium's, d(Q)/d(si, ml, vv)
    tol_rel: ClassVar[float] = TOL_REL  # the equilibrium tolerance, relative to the load (see TOL_REL)
    label: ClassVar[str] = "artificial knee"  # (what its errors are about)

    def __post_init__(self) -> None:
        p = self.params
        h = self.insert.header
        dish = _level_centres(self.insert, (-0.015, 0.015))
        if self.condyles is None:
            condyle = _level_centres(self.femoral, (-0.02, 0.03))
        else:
            condyle = {n: _level_centres(self.condyles[n], (-0.02, 0.03), (n,))[n] for n in ("medial", "lateral")}
        # the compartments: the two parts of the insert table's v range, split midway between the dishes
        split = (dish["medial"].uv[1] + dish["lateral"].uv[1]) / 2
        grids = [element_grid(self.insert, name, (h.u0, h.u1), (h.v0, split) if d.uv[1] < split else (split, h.v1),
                              p.grid, "thickness") for name, d in dish.items()]
        self.contact = FoundationContact(grids, self.condyles or self.femoral, MATERIALS[p.material],
                                         extent=self.window_extent(), quadrature=p.quadrature,
                                         guesses={n: c.uv for n, c in condyle.items()}, margin=p.margin,
                                         full_every=p.full_every)
        # neutral pose: condyles above the dish bottoms (AP, ML), just touching (SI)
        d_mid = (dish["medial"].point + dish["lateral"].point) / 2
        c_mid = (condyle["medial"].point + condyle["lateral"].point) / 2
        self.neutral = np.array([d_mid[0] - c_mid[0], min(d.point[1] for d in dish.values())
                                 - min(c.point[1] for c in condyle.values()), d_mid[2] - c_mid[2]])
        self.centres = {n: float(d.point[2]) for n, d in dish.items()}
        self.load_z = p.medial_share * self.centres["medial"] + (1 - p.medial_share) * self.centres["lateral"]

    def window_extent(self) -> tuple[int, int]:
        """``params.window`` (records), no larger than the femoral table(s)."""
        tables = list(self.condyles.values()) if self.condyles else [self.femoral]
        return (min(self.params.window[0], *(t.header.n_rec_u for t in tables)),
                min(self.params.window[1], *(t.header.n_rec_v for t in tables)))

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
        F = np.sum([c.force for c in res.values()], axis=0)
        T0 = np.sum([c.torque for c in res.values()], axis=0)  # about the insert origin
        # about the femoral origin r, with the axial load (-load along y) acting through (r_x, r_y, load_z):
        # T_x = T0_x - (r x F)_x + (load_z - r_z) load, written out (np.cross costs more than this)
        T_x = T0[0] - (r[1] * F[2] - r[2] * F[1]) + (self.load_z - r[2]) * load
        return np.array([F[1] - load, F[2], T_x]), res

    # -- analyses -----------------------------------------------------------------------------------
    def statics(self, load: tuple[float, float, float, float], free: Sequence[int] = (0, 1, 2),
                y: np.ndarray | None = None) -> StaticProblem:
        """The equilibrium of the free coordinates ``free`` of (si, ml, vv) under the prescribed pose
        and load ``(flexion, ie, ap, load)``, the others held at ``y``'s: residuals (N, N, N m) to
        ``tol_rel`` of the load, viscous damping ``damping``, ``damping_rot``."""
        p, sub = self.params, list(free)
        held = np.zeros(3) if y is None else np.array(y, float)

        def residual(x: np.ndarray, s: float) -> np.ndarray:
            q = held.copy()
            q[sub] = x
            return self.generalized_forces(q, *load)[0][sub]
        return StaticProblem(residual, tol=self._tol(load[3])[sub], step=STEP[sub], max_step=MAX_STEP[sub],
                             damping=np.array([p.damping, p.damping, p.damping_rot])[sub], max_iter=p.max_iter,
                             names=[("si", "ml", "vv")[k] for k in sub])

    def settle(self, load: tuple[float, float, float, float], y0: np.ndarray) -> StaticResult:
        """The free coordinates (si, ml, vv) where the femur, released at ``y0`` under the prescribed
        pose and load ``(flexion, ie, ap, load)``, comes to rest: the viscous model ``c q' = Q(q)``
        (``damping``, ``damping_rot``) followed to its equilibrium, to ``tol_rel``, by pseudo-transient
        continuation (:meth:`simclient.dynamics.StaticProblem.settle`; at most ``SETTLE_STEPS`` steps). That finds
        the stable equilibrium from a first touch, where Newton alone wanders off: the contact's
        stiffness changes with every element it gains, one direction is unstable until both
        compartments touch, and the medial-lateral translation is barely held."""
        return self.statics(load).settle(y0, dt=SETTLE_DT, max_steps=SETTLE_STEPS)

    def _tol(self, load: float) -> np.ndarray:
        """The equilibrium tolerance of (Q_si, Q_ml, Q_vv) under an axial load ``load`` (N): N, N, N m."""
        return self.tol_rel * load * np.array([1.0, 1.0, 0.02])

    def equilibrium(self, y0: np.ndarray, flexion: float, ie: float, ap: float, load: float) -> np.ndarray:
        """The free coordinates (si, ml, vv) in equilibrium at this prescribed pose and load, by
        Newton from ``y0`` with the active-set search (first quasi-Newton from the last solve's
        Jacobian, then with central differences), checked by a full search at the solution
        (and solved again from there if it does not hold; at most four solves). Where Newton
        stalls within ``ACCEPT_REL`` of the load (at a kink of the contact force, an element
        entering or leaving), the next solve starts where the femur released at the stall comes
        to rest (:meth:`settle`); farther out, from ``y0`` with SI and varus-valgus first solved
        with ML held (:meth:`_hold_ml`), then from where the femur released at ``y0`` comes to
        rest. A stall that no settle resolves is slid along ML to where its force vanishes
        (:meth:`_slide_ml`). The best point is returned if within ``ACCEPT_REL``, else
        :class:`SimulationError`."""
        tol = self._tol(load)
        load_case = (flexion, ie, ap, load)
        problem = self.statics(load_case)

        def solve(y: np.ndarray, quasi: bool) -> StaticResult:
            # quasi: from the last solve's Jacobian (the pose changes little between instants);
            # else central differences at every iteration (the retries, where that failed)
            r = problem.newton(y, jacobian=self.jacobian if quasi else None)
            self.jacobian = r.jacobian
            return r

        def residual(y: np.ndarray) -> float:  # largest |Q| over its tolerance, full search
            return float(np.max(np.abs(self.generalized_forces(y, *load_case, full=True)[0]) / tol))

        best: tuple[float, np.ndarray] = (math.inf, y0)
        y = y0
        for attempt in range(4):
            r = solve(y, attempt == 0)
            worst = residual(r.x)  # the full search also hands the tracked set every element near
            if worst < best[0]:
                best = (worst, r.x)
            if worst <= 1.0 or attempt == 3:
                break
            if r.converged:  # on the tracked set only: again from there
                y = r.x
            elif worst <= ACCEPT_REL / self.tol_rel:
                # stalled near the equilibrium, at a kink of the contact force (an element entering
                # or leaving): where the femur released there comes to rest
                y = self.settle(load_case, r.x).x
            elif attempt == 0:
                # stalled far out of balance, as in swing, where the medial-lateral translation is
                # barely held and Newton's steps wander along it: first superior-inferior and
                # varus-valgus with ML held where it was, then all three again
                y = self._hold_ml(y0, load_case)
            else:  # far out again: where the femur released at y0 comes to rest
                y = self.settle(load_case, y0).x
        if best[0] > 1.0:  # a stall no settle resolved: on a kink, a condyle meeting a wall
            y = self._slide_ml(best[1], load_case)
            worst = residual(y)
            if worst < best[0]:
                best = (worst, y)
        if best[0] > ACCEPT_REL / self.tol_rel:
            raise SimulationError(f"{self.label}: no equilibrium at flexion {math.degrees(flexion):.2f} deg, IE "
                                  f"{math.degrees(ie):.2f} deg, AP {ap * 1e3:.2f} mm, load {load:.6g} N: Newton "
                                  f"stopped {best[0] * self.tol_rel:.2%} of the load out of balance (accepted: "
                                  f"{ACCEPT_REL:.1%})")
        return best[1]

    def _slide_ml(self, y: np.ndarray, load_case: tuple[float, float, float, float]) -> np.ndarray:
        """(si, ml, vv) where the medial-lateral force vanishes on the path the femur, released
        from ``y``, slides along quasi-statically (:meth:`StaticProblem.slide`): ML moved along its
        force in doubling steps from 20 um (SI and varus-valgus solved at each ML held,
        :meth:`_hold_ml`, the force from a search of every element) until the force turns, then its
        zero by Brent's method (to 10 nm); ``y`` if it does not turn within 5 mm. For an equilibrium
        on a kink of the contact force, where a condyle meets a rising wall of the insert: Newton
        and the settle step across the edge and back, the bracket does not."""
        r = self.statics(load_case).slide(y, 1, hold=lambda q: self._hold_ml(q, load_case), first=2e-5, reach=5e-3,
                                          xtol=1e-8,
                                          force=lambda q: float(self.generalized_forces(q, *load_case, full=True)[0][1]))
        return r.x  # (y itself where the force does not turn)

    def _hold_ml(self, y0: np.ndarray, load_case: tuple[float, float, float, float]) -> np.ndarray:
        """(si, ml, vv) with SI and varus-valgus solved by Newton for their equilibrium and ML held at
        ``y0``'s (a step towards the equilibrium where ML is barely held)."""
        sub = [0, 2]
        J = None if self.jacobian is None else self.jacobian[np.ix_(sub, sub)]
        r = self.statics(load_case, sub, y0).newton(y0[sub], jacobian=J)
        return np.array([r.x[0], y0[1], r.x[1]])

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
                raise SimulationError(f"{self.label}: no contact-free height below 20 mm at flexion "
                                      f"{math.degrees(flexion):.1f} deg")
        if lo == 0.0:
            lo = -0.005
            while force(lo) == 0.0:  # down until contact
                lo -= 0.0005
                if lo < -0.02:
                    raise SimulationError(f"{self.label}: the components do not meet at flexion "
                                          f"{math.degrees(flexion):.1f} deg")
        while hi - lo > 1e-6:
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if force(mid) > 0 else (lo, mid)
        return hi

    def static(self, flexion_deg: float, load: float) -> tuple[np.ndarray, dict[str, Any]]:
        """Equilibrium under a constant vertical load at a fixed flexion (IE = AP = 0): the femur
        released where it touches, settled (:meth:`settle`) and the equilibrium checked (and solved
        again where it does not hold) by :meth:`equilibrium`; the free coordinates and the
        compartments' results."""
        fl = math.radians(flexion_deg)
        y = self.settle((fl, 0.0, 0.0, load), np.array([self.touching(fl), 0.0, 0.0])).x
        y = self.equilibrium(y, fl, 0.0, 0.0, load)
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

        y, _ = self.static(GAIT["flexion_deg"][1][0], GAIT["axial_load_bw"][1][0] * p.body_weight)
        t_out = np.linspace(0.0, p.cycle_s, p.outputs)
        evals0, casts0 = self.contact.stats["evaluations"], self.contact.elements_evaluated
        t0 = time.perf_counter()
        solutions: list[np.ndarray] = []
        for t in t_out:  # each instant from the previous one's equilibrium
            if len(solutions) >= 2:  # SI and varus-valgus extrapolated (ML, barely held in swing, not)
                y = y + (solutions[-1] - solutions[-2]) * np.array([1.0, 0.0, 1.0])
            y = self.equilibrium(y, *prescribed(float(t)))
            solutions.append(y)
        wall = time.perf_counter() - t0
        evaluations, casts = self.contact.stats["evaluations"] - evals0, self.contact.elements_evaluated - casts0
        ys = np.array(solutions).T
        history: dict[str, Any] = {"t_s": t_out.tolist(), "load_N": [], "flexion_deg": [], "si_mm": (ys[0] * 1e3).tolist(),
                                   "ml_mm": (ys[1] * 1e3).tolist(), "varus_valgus_deg": np.degrees(ys[2]).tolist(),
                                   "medial_N": [], "lateral_N": []}
        maps: dict[str, list[np.ndarray]] = {n: [] for n in self.contact.compartments}
        results = []
        imbalance = []
        for k, t in enumerate(t_out):
            fl, ie, ap, load = prescribed(t)
            Q, res = self.generalized_forces(ys[:, k], fl, ie, ap, load, full=True)
            imbalance.append(abs(Q[0]) / load)
            results.append(res)
            history["load_N"].append(load)
            history["flexion_deg"].append(math.degrees(fl))
            for n, r in res.items():
                history[f"{n}_N"].append(float(np.linalg.norm(r.force)))
                maps[n].append(r.pressure.reshape(self.contact.compartments[n].grid.shape))
        k_max = int(np.argmax(history["load_N"]))
        # the cost of one element evaluation alone: full searches at the maximum-load pose
        R, r = self.pose(ys[:, k_max], *prescribed(float(t_out[k_max]))[:3])
        n0, t1 = self.contact.elements_evaluated, time.perf_counter()
        for _ in range(20):
            self.contact.evaluate(np.eye(3), np.zeros(3), R, r, full=True)
        per_element = (time.perf_counter() - t1) / (self.contact.elements_evaluated - n0) * 1e6
        history["imbalance"] = imbalance  # |superior-inferior force imbalance| / axial load
        stance = t_out <= 0.6 * p.cycle_s
        out: dict[str, Any] = {}
        if min(p.pressure_grid) > 0:
            # Bei & Fregly's pressure pass: a finer grid evaluated at the coarse run's pose
            fine = ImplantKnee(self.insert, self.femoral, replace(p, grid=p.pressure_grid), self.condyles)
            out["pressure_pass"] = fine.generalized_forces(ys[:, k_max], *prescribed(float(t_out[k_max])), full=True)[1]
        if p.refine_tol > 0:
            # the same pose, on grids zoomed on the contact until the results stop depending on them
            t1 = time.perf_counter()
            out["refined_pass"] = self.contact.refine(np.eye(3), np.zeros(3), R, r, shape=p.grid, tol=p.refine_tol)
            out["refined_pass_s"] = time.perf_counter() - t1
        return {**out, "history": history, "maps": {n: np.array(v) for n, v in maps.items()}, "t_max_load_s": float(t_out[k_max]),
                "at_max_load": results[k_max], "max_imbalance": float(max(imbalance)),
                "max_imbalance_stance": float(np.max(np.array(imbalance)[stance])), "wall_s": wall,
                "evaluations": int(evaluations), "solutions": ys,
                "element_casts": int(casts), "us_per_element": wall / max(casts, 1) * 1e6,
                "us_per_element_full_search": per_element}


def artificial_knee(insert: Source, femoral: Source, params: ImplantKneeParams | None = None,
                    progress: Progress | None = None, condyles: dict[str, Source] | None = None) -> Summary:
    """Run the static settles and/or the gait-like cycle (``params.analysis``); return the summary
    (the keys ``compartments`` at the instant of maximum axial load, ``wall_s``; ``status``
    ``failed`` with a ``message`` when an integration or a contact evaluation failed). Its report
    writes the pressure maps to ``out/pressure.zarr`` and the plots to ``out/*.png``."""
    p = params or ImplantKneeParams()
    say = progress or (lambda s: None)
    t0 = time.perf_counter()
    knee = ImplantKnee(insert, femoral, p, condyles)
    values: dict[str, Any] = {"status": "ok", "material": p.material, "femoral_surface": p.femoral_surface,
                              "element_grid": list(p.grid),
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
            values["gait"] = {"wall_s": g["wall_s"], "evaluations": g["evaluations"],
                              "max_force_imbalance": g["max_imbalance"],
                              "max_force_imbalance_stance": g["max_imbalance_stance"],
                              "element_casts": g["element_casts"], "us_per_element": g["us_per_element"],
                              "us_per_element_full_search": g["us_per_element_full_search"]}
            if "pressure_pass" in g:
                fine = {n: c.summary() for n, c in g["pressure_pass"].items()}
                # Bei & Fregly found force and torque insensitive to the grid: how far the finer one moves them
                ratios = {n: {k: fine[n][k] / values["compartments"][n][k] for k in ("force_N", "torque_Nm")}
                          for n in fine}
                values["pressure_pass"] = {"element_grid": list(p.pressure_grid), "t_s": g["t_max_load_s"],
                                           "compartments": fine, "over_forward_run": ratios}
            if "refined_pass" in g:
                refined = g["refined_pass"].summary()
                refined["over_forward_run"] = {n: {k: c[k] / values["compartments"][n][k] for k in
                                                   ("force_N", "torque_Nm", "peak_pressure_Pa", "area_m2")}
                                               for n, c in refined["compartments"].items()}
                values["refined_pass"] = {"t_s": g["t_max_load_s"], "wall_s": g["refined_pass_s"], **refined}
        elif "static" in values:
            # without the cycle, report the heaviest static case
            values["compartments"] = max(values["static"], key=lambda r: r["load_N"])["compartments"]
    except (SimulationError, ContactError) as exc:
        values.update(status="failed", message=str(exc))
    values["contact_stats"] = knee.contact.stats
    values["wall_s"] = time.perf_counter() - t0
    return Summary("artificial-knee", values, artifacts)


