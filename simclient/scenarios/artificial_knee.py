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

Equilibrium (reduced coordinates, like Bei & Fregly's API): flexion, internal-external rotation and
anterior-posterior translation are prescribed; superior-inferior and medial-lateral translation and
varus-valgus rotation are solved for equilibrium at every output instant (Newton from the previous
instant, :func:`simclient.dynamics.newton`): the contact force plus the axial load's force ``F``
and torque ``T`` about the femoral origin, ``(F_y, F_z, T_x) = 0``, to 5e-4 of the load (``TOL_REL``).
The analysis is quasi-static: inertia is neglected (the paper used "large masses" and "heavy
numerical damping", no gravity, to the same end). Where Newton stalls (at a kink of the contact
force, an element entering or leaving the contact), the equilibrium is sought where the femur,
released there, comes to rest under the viscous model ``c q' = Q`` (c = 3e3 N s/m, c_r = 3 N m
s/rad), followed by pseudo-transient continuation (:func:`simclient.dynamics.settle`), which is
also how the static settles find their equilibrium from the first touch. Where that fails too
(in swing, where the medial-lateral translation is barely held and an equilibrium can sit on a
kink, a condyle meeting a rising wall of the insert), the femur is slid along ML to where its
force vanishes; only if that fails too is a point within 1 % of the load (``ACCEPT_REL``) taken.
The summary reports the SI force imbalance ``|F_y| / load`` at every output.
Assumptions (not in the paper): body weight 700 N; the axial load acts along -y through a point
70 % of the way from the lateral to the medial compartment's centre (a 70/30 medial/lateral split at
equilibrium). The active-set search tracks the elements within 0.2 mm of the femur (``margin``;
with Bei & Fregly's search of the penetrating elements only, a settle on these flat-on-flat
compartments misses a second contact area); every solution is checked by a full search.
After the cycle, Bei & Fregly's pressure pass: the 50 x 50 element grids evaluated at the pose of
maximum load (``pressure_grid``); with ``refine_tol``, also a pass at that pose on grids zoomed on
the contact and refined until the results stop depending on them (:meth:`FoundationContact.refine`).

Femoral surface: the single fitted patch (``femoral_component``) or one toroidal table per condyle
(``femoral_surface = "per-condyle"``: ``femoral_medial``, ``femoral_lateral``, each compartment's
rays cast to its own table).

Gait-like cycle (1 s, assumption: smooth monotone-cubic curves through the values below, in the
range of fluoroscopic TKA gait data): flexion 5-18-8 deg in stance and up to 60 deg in swing,
internal-external rotation within +-4 deg, anterior-posterior translation within +-2 mm, axial load
0.25 BW at heel strike rising to 3.0 BW (first peak, 15 %) and 2.6 BW (second peak, 45 %), 0.25 BW in
swing.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from scipy.interpolate import PchipInterpolator
from scipy.optimize import brentq

from simclient.contact import QUADRATURES, FoundationContact, LayerLaw, LinearLayer, NonlinearLayer, element_grid
from simclient.dynamics import NewtonResult, newton, settle
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


#: the compartments' summary rows of the reports: (key, label, factor from SI to the label's unit)
REPORT_ROWS = (("force_N", "contact force [N]", 1.0), ("torque_Nm", "contact torque [N m]", 1.0),
               ("peak_pressure_Pa", "peak pressure [MPa]", 1e-6), ("mean_pressure_Pa", "average pressure [MPa]", 1e-6),
               ("area_m2", "contact area [mm^2]", 1e6))

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


@dataclass(frozen=True)
class ImplantKneeParams:
    """Model parameters (SI). See the module docstring for the assumptions."""

    material: str = param("linear", "UHMWPE model", choices=("linear", "nonlinear"))
    femoral_surface: str = param("single", "the femoral component as one fitted patch or one toroidal table per "
                                 "condyle (--femoral-medial, --femoral-lateral)", choices=("single", "per-condyle"))
    window: tuple[int, int] = extent_param((23, 23), "storage window on the femoral table(s), records, at most "
                                           "the table's (the whole of a 201 x 201-point table; smaller windows than "
                                           "the contact areas thrash: "
                                           "on the single patch 9 x 9 moved 1035 times in a cycle, on the per-condyle "
                                           "tables 17 x 17 moved 336 times and lost rays)")
    analysis: str = param("both", "static settles, the gait-like cycle or both", choices=("static", "gait", "both"))
    grid: tuple[int, int] = extent_param((30, 30), "elements per compartment")
    quadrature: str = param("centre", "element quadrature: Bei & Fregly's centre rule, or the interpenetration "
                            "interpolated quadratically over each element and sampled at sub-points (see "
                            "ElementDetector)", choices=QUADRATURES)
    pressure_grid: tuple[int, int] = extent_param((50, 50), "elements per compartment of the pressure pass at maximum "
                                                            "load (Bei & Fregly); 0x0: none")
    refine_tol: float = param(0.0, "a pressure pass at maximum load refined until no compartment's force, peak "
                                   "pressure or area changes by more than this (relative) from one grid to the next "
                                   "twice as fine, zooming on the contact (FoundationContact.refine); 0: none")
    body_weight: float = 700.0
    margin: float = 2e-4  # active-set tracking margin (m) and full-search period, see FoundationContact
    full_every: int = 0
    medial_share: float = 0.7
    cycle_s: float = 1.0
    static_loads_N: tuple[float, ...] = (1000.0, 2000.0, 3000.0)
    static_flexion_deg: tuple[float, ...] = (0.0, 30.0, 60.0)
    max_iter: int = 30  # Newton iterations per equilibrium
    damping: float = 3e3  # of the settles' viscous model: N s/m, and N m s/rad for the rotation
    damping_rot: float = 3.0
    outputs: int = 101

    def __post_init__(self) -> None:
        if self.material not in MATERIALS:
            raise ParameterError(f"artificial-knee: unknown material {self.material!r}; choose {', '.join(MATERIALS)}")
        if self.analysis not in ("static", "gait", "both"):
            raise ParameterError(f"artificial-knee: unknown analysis {self.analysis!r}; choose static, gait or both")
        if min(self.pressure_grid) < 1 and tuple(self.pressure_grid) != (0, 0):
            raise ParameterError(f"artificial-knee: the pressure grid needs at least 1 x 1 elements (0 x 0: no "
                                 f"pressure pass), got {self.pressure_grid[0]} x {self.pressure_grid[1]}")
        if not 0 <= self.refine_tol < 1:
            raise ParameterError(f"artificial-knee: refine_tol must lie in [0, 1) (0: no refined pass), got {self.refine_tol}")


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
    def settle(self, load: tuple[float, float, float, float], y0: np.ndarray) -> NewtonResult:
        """The free coordinates (si, ml, vv) where the femur, released at ``y0`` under the prescribed
        pose and load ``(flexion, ie, ap, load)``, comes to rest: the viscous model ``c q' = Q(q)``
        (``damping``, ``damping_rot``) followed to its equilibrium, to ``tol_rel``, by pseudo-transient
        continuation (:func:`simclient.dynamics.settle`; at most ``SETTLE_STEPS`` steps). That finds
        the stable equilibrium from a first touch, where Newton alone wanders off: the contact's
        stiffness changes with every element it gains, one direction is unstable until both
        compartments touch, and the medial-lateral translation is barely held."""
        p = self.params
        return settle(lambda q: self.generalized_forces(q, *load)[0], y0, tol=self._tol(load[3]),
                      damping=np.array([p.damping, p.damping, p.damping_rot]), dt=SETTLE_DT, step=STEP,
                      max_steps=SETTLE_STEPS, max_step=MAX_STEP)

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

        def solve(y: np.ndarray, quasi: bool) -> NewtonResult:
            # quasi: from the last solve's Jacobian (the pose changes little between instants);
            # else central differences at every iteration (the retries, where that failed)
            r = newton(lambda q: self.generalized_forces(q, flexion, ie, ap, load)[0], y, tol=tol, step=STEP,
                       max_iter=self.params.max_iter, max_step=MAX_STEP, jacobian=self.jacobian if quasi else None)
            self.jacobian = r.jacobian
            return r

        load_case = (flexion, ie, ap, load)

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
                y = self._hold_ml(y0, load_case, tol)
            else:  # far out again: where the femur released at y0 comes to rest
                y = self.settle(load_case, y0).x
        if best[0] > 1.0:  # a stall no settle resolved: on a kink, a condyle meeting a wall
            y = self._slide_ml(best[1], load_case, tol)
            worst = residual(y)
            if worst < best[0]:
                best = (worst, y)
        if best[0] > ACCEPT_REL / self.tol_rel:
            raise SimulationError(f"{self.label}: no equilibrium at flexion {math.degrees(flexion):.2f} deg, IE "
                                  f"{math.degrees(ie):.2f} deg, AP {ap * 1e3:.2f} mm, load {load:.6g} N: Newton "
                                  f"stopped {best[0] * self.tol_rel:.2%} of the load out of balance (accepted: "
                                  f"{ACCEPT_REL:.1%})")
        return best[1]

    def _slide_ml(self, y: np.ndarray, load_case: tuple[float, float, float, float], tol: np.ndarray) -> np.ndarray:
        """(si, ml, vv) where the medial-lateral force vanishes on the path the femur, released
        from ``y``, slides along quasi-statically: ML moved along its force in doubling steps from
        20 um (SI and varus-valgus solved at each ML held, :meth:`_hold_ml`, every element
        searched) until the force turns, then its zero by Brent's method (to 10 nm); ``y`` if it
        does not turn within 5 mm. For an equilibrium on a kink of the contact force, where a
        condyle meets a rising wall of the insert: Newton and the settle step across the edge and
        back, the bracket does not."""
        def held(ml: float) -> tuple[float, np.ndarray]:  # the ML force (N) and the pose, ML held
            q = self._hold_ml(np.array([y[0], ml, y[2]]), load_case, tol)
            return float(self.generalized_forces(q, *load_case, full=True)[0][1]), q

        a, (fa, _) = y[1], held(y[1])
        b, h, reach = a, 2e-5, 5e-3
        while True:
            # (the last step ends at the reach, not beyond it: a turn between the doubled steps'
            # last point and the reach is found too)
            b = min(max(b + math.copysign(h, fa), y[1] - reach), y[1] + reach)
            fb, _ = held(b)
            if fa * fb <= 0:
                break
            if abs(b - y[1]) >= reach:
                return y
            a, fa, h = b, fb, 2 * h
        return held(brentq(lambda ml: held(ml)[0], min(a, b), max(a, b), xtol=1e-8))[1]

    def _hold_ml(self, y0: np.ndarray, load_case: tuple[float, float, float, float], tol: np.ndarray) -> np.ndarray:
        """(si, ml, vv) with SI and varus-valgus solved by Newton for their equilibrium and ML held at
        ``y0``'s (a step towards the equilibrium where ML is barely held)."""
        sub = [0, 2]

        def fun(q: np.ndarray) -> np.ndarray:
            return self.generalized_forces(np.array([q[0], y0[1], q[1]]), *load_case)[0][sub]
        J = None if self.jacobian is None else self.jacobian[np.ix_(sub, sub)]
        r = newton(fun, y0[sub], tol=tol[sub], step=STEP[sub], max_iter=self.params.max_iter, max_step=MAX_STEP[sub],
                   jacobian=J)
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
                    out: str | Path | None = None, progress: Progress | None = None,
                    condyles: dict[str, Source] | None = None) -> Summary:
    """Run the static settles and/or the gait-like cycle (``params.analysis``); return the summary
    (DESIGN's keys: ``compartments`` at the instant of maximum axial load, ``wall_s``; ``status``
    ``failed`` with a ``message`` when an integration or a contact evaluation failed). With ``out``,
    the pressure maps go to ``out/pressure.zarr`` and the plots to ``out/*.png``."""
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
                     tables={"insert": "tibial_insert", "femoral": "femoral_component",
                             "femoral_medial": "femoral_medial", "femoral_lateral": "femoral_lateral"},
                     title="Bei & Fregly 2004: the implant's elastic-foundation contact, static settles and a gait-like "
                           "cycle"):

    def run(self, params: ImplantKneeParams, tables: Tables, *, out: Path | None = None,
            progress: Progress | None = None) -> Summary:
        roles = self.table_names(params)
        opened = {role: tables.open(role, name) for role, name in roles.items()}
        condyles = ({"medial": opened["femoral_medial"], "lateral": opened["femoral_lateral"]}
                    if params.femoral_surface == "per-condyle" else None)
        return artificial_knee(opened["insert"], opened.get("femoral") or opened["femoral_medial"], params, out=out,
                               progress=progress, condyles=condyles)

    def table_names(self, params: ImplantKneeParams) -> dict[str, str]:
        unused = ("femoral",) if params.femoral_surface == "per-condyle" else ("femoral_medial", "femoral_lateral")
        return {role: name for role, name in self.tables.items() if role not in unused}

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
            lines.append(f"  gait cycle: {g['wall_s']:.2f} s wall, {g['evaluations']} contact evaluations, "
                         f"{g['element_casts']} ray casts ({g['us_per_element']:.1f} us each with everything, "
                         f"{g['us_per_element_full_search']:.2f} us per element evaluation alone); force imbalance <= "
                         f"{g['max_force_imbalance_stance']:.1%} of the load in stance, {g['max_force_imbalance']:.1%} "
                         f"overall; maximum axial load at t = {summary['t_max_load_s']:.2f} s:")
        lines.append(f"  {'':24s}{'medial':>12s}{'lateral':>12s}")
        c = summary["compartments"]
        for key, label, scale in (*REPORT_ROWS, ("active_elements", "active elements", 1)):
            lines.append(f"  {label:24s}{c['medial'][key] * scale:12.4g}{c['lateral'][key] * scale:12.4g}")
        if "pressure_pass" in summary:
            pp = summary["pressure_pass"]
            lines.append(f"  pressure pass, {pp['element_grid'][0]} x {pp['element_grid'][1]} elements at the same pose:")
            for key, label, scale in REPORT_ROWS:
                lines.append(f"  {label:24s}" + "".join(f"{pp['compartments'][n][key] * scale:12.4g}"
                                                        for n in ("medial", "lateral")))
            r = pp["over_forward_run"]
            lines.append("  pass / forward run: force " + " / ".join(f"{r[n]['force_N']:.3f}" for n in ("medial", "lateral"))
                         + ", torque " + " / ".join(f"{r[n]['torque_Nm']:.3f}" for n in ("medial", "lateral"))
                         + " (medial / lateral; Bei & Fregly: insensitive to the grid)")
        if "refined_pass" in summary:
            rp = summary["refined_pass"]
            last = rp["levels"][-1]
            grids = " / ".join(f"{g[0]} x {g[1]}" for g in last["element_grid"].values())
            lines.append(f"  refined pass at the same pose: {len(rp['levels']) - 1} zooms, last {grids} elements "
                         f"(medial / lateral), last change {last['change']:.2%} "
                         f"({'converged' if rp['converged'] else 'NOT converged'} to {rp['tol']:.2%}), "
                         f"{rp['wall_s']:.2f} s:")
            for key, label, scale in REPORT_ROWS:
                lines.append(f"  {label:24s}" + "".join(f"{rp['compartments'][n][key] * scale:12.4g}"
                                                        for n in ("medial", "lateral")))
        lines.extend(f"  wrote {f}" for f in summary.get("files", []))
        return "\n".join(lines)
