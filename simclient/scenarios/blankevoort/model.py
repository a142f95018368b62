"""The blankevoort's model (see :mod:`simclient.scenarios.blankevoort`)."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from simclient.contact import CompartmentResult, ContactPair, FoundationContact, LinearLayer, element_grid
from simclient.dynamics import BlankevoortLaw, StaticProblem, StaticResult
from simclient.errors import ContactError
from simclient.geometry import StorageWindow, rx, ry, rz
from simclient.io import Source
from simclient.scenarios._base import Progress, Summary, Tables, save_outputs
from simclient.scenarios.blankevoort import SIDES, Blankevoort, BlankevoortParams

__all__ = ["BUNDLES", "BlankevoortParams", "BlankevoortKnee", "blankevoort", "Blankevoort"]

#: bundle -> (stiffness k (N), reference strain eps_r, tibial insertion (m, tibia frame), femoral
#: insertion (m, femur frame)); k and eps_r from Table 1, the insertions assumed: tibial ones at
#: anatomical positions, femoral ones placed (x, z) so that under pure flexion each bundle's length
#: changes from 0 to 95 deg as the bundle is known to behave: the collaterals near isometric (within
#: 4 % to 60 deg), the posterior bundles of the lateral collateral and the capsule slackening; of the
#: cruciates, the aAC (anteromedial) lengthening by 8-10 % at 30-60 deg and the pAC (posterolateral)
#: slackening by 18 % at 95 deg, the aPC (anterolateral) tightening by 41 % at 95 deg and the pPC
#: (posteromedial) 11 % shorter in mid-flexion than at extension and at 90-95 deg. The cruciates'
#: femoral insertions were then moved (by up to 3.7 mm, the patterns kept) by a least-squares fit
#: towards the paper's 620 / 440 N at 90-95 deg, with a penalty on cruciate strains above 10 % along
#: the internal path: it ended at 365 / 282 N and 11.6 % (more force needs more strain, see the README)
BUNDLES: dict[str, tuple[float, float, tuple[float, float, float], tuple[float, float, float]]] = {
    "aAC": (5000.0, 0.06, (0.010, 0.002, -0.018), (0.0054, -0.010, 0.0132)),
    "pAC": (5000.0, 0.10, (0.000, 0.000, -0.015), (0.0034, -0.012, 0.0120)),
    "aPC": (9000.0, -0.24, (-0.028, 0.001, -0.030), (0.0022, 0.010, -0.0110)),
    "pPC": (9000.0, -0.03, (-0.030, -0.002, -0.032), (-0.0131, 0.012, -0.0002)),
    "aLC": (2000.0, -0.25, (-0.012, -0.045, -0.050), (0.0100, -0.042, 0.0072)),
    "sLC": (2000.0, -0.05, (-0.016, -0.046, -0.048), (0.0066, -0.043, 0.0062)),
    "pLC": (2000.0, 0.08, (-0.020, -0.044, -0.046), (0.0028, -0.042, 0.0053)),
    "aMC": (2750.0, 0.04, (0.014, 0.030, -0.075), (0.0047, 0.044, 0.0074)),
    "iMC": (2750.0, 0.04, (0.006, 0.032, -0.073), (0.0044, 0.045, 0.0071)),
    "pMC": (2750.0, 0.03, (-0.004, 0.034, -0.070), (0.0030, 0.044, 0.0065)),
    "aCM": (1000.0, -0.18, (0.004, 0.040, -0.032), (0.0030, 0.042, 0.0038)),
    "pCM": (1000.0, -0.04, (-0.016, 0.038, -0.030), (-0.0062, 0.040, -0.0006)),
}

# the insertions as arrays, a row per bundle in BUNDLES' order: tibial (tibia frame), femoral (femur frame)
_TIBIAL = np.array([b[2] for b in BUNDLES.values()])
_FEMORAL = np.array([b[3] for b in BUNDLES.values()])

#: the paper's peak contact forces at 95 deg, internal-rotation path (linear layer, E = 5 MPa), N
PAPER_95_DEG = {"medial_force_N": 620.0, "lateral_force_N": 440.0}
#: where the paper's largest surface displacements and stresses occur (Fig. 10 and its text)
PAPER_LARGEST_STRESS = {"condyle": "lateral", "path": "internal", "flexion_deg": 90.0}

#: coordinates: x, y, z (m), flexion, varus, internal (rad); flexion (3) is prescribed
FREE = [0, 1, 2, 4, 5]
STEP = np.full(5, 1e-7)  # central-difference steps: m and rad
MAX_STEP = np.array([1e-3, 1e-3, 1e-3, 0.02, 0.02])  # the largest Newton step: m and rad
RAMP = 12  # steps in which the axial torque is applied at full extension
MAX_HALVINGS = 4  # a flexion step that does not converge is split into at most 16
# the line search's shortest step: near extension a bundle going slack bends the residual so much
# that it falls only over the first thousandths of a Newton step (stiff layers stalled there)
MIN_STEP = 1 / 1024
# a stiff layer's contact over fewer elements than this makes the force step as elements enter and
# leave it, and Newton can stall on the steps (150 MPa on the plateaus: 26-32 elements on the
# default grid stall, 77 or more on a grid twice as fine converge)
FEW_ELEMENTS = 100


def run(params: BlankevoortParams, tables: Tables, *, out: Path | None = None, progress: Progress | None = None) -> Summary:
    """The scenario on ``tables``; with ``out``, its report's files there."""
    femoral = {s: tables.open(f"femoral_{s}", Blankevoort.tables[f"femoral_{s}"]) for s in SIDES}
    kind = "plane" if params.surfaces == "planes" else "tibial"
    tibial = {s: tables.open(f"{kind}_{s}", Blankevoort.tables[f"{kind}_{s}"]) for s in SIDES}
    return save_outputs(blankevoort(femoral, tibial, params, progress=progress), out, progress)


def rotation(flexion: float, varus: float, internal: float) -> np.ndarray:
    """The femur's orientation in the tibia frame (radians): ``Rz(-int) Rx(-var) Ry(-flex)``."""
    return rz(-internal) @ rx(-varus) @ ry(-flexion)


def _bundles(q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every bundle at coordinates ``q`` (rows in :data:`BUNDLES`' order, tibia frame): the femoral
    insertion about the femoral origin (m), the vector from the tibial insertion to the femoral one
    (m) and its length (m)."""
    arm = _FEMORAL @ rotation(q[3], q[4], q[5]).T
    d = q[:3] + arm - _TIBIAL
    return arm, d, np.sqrt((d * d).sum(axis=1))


class BlankevoortKnee:
    """The model: femoral condyle tables (``femoral[side]``), tibial tables (polynomial plateaus, or
    planes for rigid contact), ligaments and loads; :meth:`forces` and :meth:`solve`."""

    def __init__(self, femoral: dict[str, Source], tibial: dict[str, Source], params: BlankevoortParams) -> None:
        self.params = p = params
        self.rigid = p.contact == "rigid"
        if self.rigid:
            self.pairs = {s: ContactPair(StorageWindow(femoral[s], extent=_whole(femoral[s])),
                                         StorageWindow(tibial[s], extent=_whole(tibial[s]))) for s in SIDES}
        else:
            layer = LinearLayer(p.E, p.nu, large_strain=p.contact == "nonlinear")
            self.foundations = {}
            for s in SIDES:
                h = femoral[s].header
                grid = element_grid(femoral[s], s, (h.u0, h.u1), (h.v0, h.v1), p.grid, p.thickness)
                # the tibial table is small: one window holds it, so no re-centring changes the
                # interpolation between evaluations (Newton needs a deterministic force)
                self.foundations[s] = FoundationContact([grid], tibial[s], layer, extent=_whole(tibial[s]), full_every=0)
        self.laws: dict[str, BlankevoortLaw] = {}
        self.reference_lengths: dict[str, float] = {}  # bundle lengths in the reference position (m)
        self.torque = 0.0  # axial torque on the femur about z (N m)
        self.jacobian: np.ndarray | None = None  # the last solve's, for the next along the path

    # -- loads ------------------------------------------------------------------------------------
    def lengths(self, q: np.ndarray) -> dict[str, float]:
        """Bundle lengths (m) at coordinates ``q``."""
        _, _, L = _bundles(q)
        return {n: float(length) for n, length in zip(BUNDLES, L)}

    def bundle_loads(self, q: np.ndarray) -> dict[str, tuple[float, float]]:
        """Each bundle's strain ``(L - L0) / L0`` (eq. 7) and tension (N) at coordinates ``q``
        (once the reference position has set the laws)."""
        return {n: ((length - law.l0) / law.l0, law.force(length))
                for (n, law), length in zip(self.laws.items(), self.lengths(q).values())}

    def contact(self, q: np.ndarray, full: bool = False) -> dict[str, tuple[np.ndarray, np.ndarray, Any]]:
        """Deformable contact per side: (force on the femur (N, tibia frame), moment about the
        femoral origin (N m), the compartment's result)."""
        R, a = rotation(q[3], q[4], q[5]), q[:3]
        out = {}
        for s, fc in self.foundations.items():
            res = fc.evaluate(R, a, np.eye(3), np.zeros(3), full=full)[s]
            # results in the femur's (the grids') frame, on the tibia: the femur gets the opposite
            out[s] = (-R @ res.force, -R @ res.torque, res)
        return out

    def wrench(self, q: np.ndarray, full: bool = False) -> tuple[np.ndarray, np.ndarray, dict[str, CompartmentResult]]:
        """Force (N) and moment about the femoral origin (N m) on the femur from the external loads,
        the ligaments and (deformable) contact; and each side's contact result."""
        F = np.array([0.0, 0.0, -self.params.compression_N])
        M = np.array([0.0, 0.0, self.torque])
        if self.laws:  # (every bundle's, once the reference position has set them)
            arm, d, L = _bundles(q)
            tension = np.array([law.force(length) for law, length in zip(self.laws.values(), L)])
            f = -(tension / L)[:, None] * d  # tension pulls the femoral insertion towards the tibial one
            F += f.sum(axis=0)
            M += np.cross(arm, f).sum(axis=0)
        sides = {}
        if not self.rigid:
            for s, (f, m, res) in self.contact(q, full).items():
                F += f
                M += m
                sides[s] = res
        return F, M, sides

    def layer_map(self, q: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """The layer over each condyle's contact at coordinates ``q`` (the paper's Fig. 10): per
        side, the centres of the elements in contact (m, tibia frame), their displacements ``u_n``
        (m) and stresses (Pa)."""
        R = rotation(q[3], q[4], q[5])
        out = {}
        for side, (_, _, res) in self.contact(q, full=True).items():
            on = res.depth > 0  # the elements in contact
            centre = self.foundations[side].compartments[side].grid.centre
            out[side] = ((centre @ R.T + q[:3])[on], res.depth[on], res.pressure[on])
        return out

    def generalized(self, q: np.ndarray, F: np.ndarray, M: np.ndarray) -> np.ndarray:
        """The generalized forces of the six coordinates (N for x, y, z; N m for the angles)."""
        Ri = rz(-q[5])
        e_var = Ri @ np.array([1.0, 0.0, 0.0])
        e_flex = Ri @ rx(-q[4]) @ np.array([0.0, 1.0, 0.0])
        return np.array([F[0], F[1], F[2], -(M @ e_flex), -(M @ e_var), -M[2]])

    def rigid_contacts(self, q: np.ndarray, sides: tuple[str, ...]) -> dict[str, tuple[float, np.ndarray, np.ndarray]]:
        """Rigid point contact per side: (indentation (m), point on the femur (tibia frame), unit
        normal pushing the femur)."""
        R, a = rotation(q[3], q[4], q[5]), q[:3]
        out = {}
        for s in sides:
            c = self.pairs[s].detect(R, a, np.eye(3), np.zeros(3), strict=True)
            out[s] = (c.indentation, np.array(c.point_i), np.array(c.normal))
        return out

    # -- equilibrium ------------------------------------------------------------------------------
    def residual(self, q: np.ndarray, forces: np.ndarray | None = None, sides: tuple[str, ...] = (),
                 full: bool = False) -> np.ndarray:
        """Deformable: the free generalized forces (5). Rigid: those with the contact ``forces`` of
        ``sides`` added, then the indentations (m) of those sides, scaled by 1e6 N/m (so that 1 um of
        gap weighs like 1 N)."""
        F, M, _ = self.wrench(q, full)
        if not self.rigid:
            return self.generalized(q, F, M)[FREE]
        gaps = []
        for p_k, (depth, point, normal) in zip(forces if forces is not None else [], self.rigid_contacts(q, sides).values()):
            f = p_k * normal
            F = F + f
            M = M + np.cross(point - q[:3], f)
            gaps.append(depth * 1e6)
        return np.concatenate([self.generalized(q, F, M)[FREE], gaps])

    def solve(self, q0: np.ndarray, flexion: float, active: tuple[str, ...] = SIDES,
              p0: np.ndarray | None = None) -> dict[str, Any]:
        """Equilibrium at ``flexion`` (rad) from ``q0``: the coordinates, the residuals and, per
        side, the contact force (N)."""
        p = self.params
        q = q0.copy()
        q[3] = flexion
        if not self.rigid:
            def fun(x: np.ndarray) -> np.ndarray:
                q[FREE] = x
                return self.residual(q)

            def checked() -> tuple[np.ndarray, dict[str, CompartmentResult]]:  # a full element search at q
                F, M, sides = self.wrench(q, full=True)
                return self.generalized(q, F, M)[FREE], sides

            problem = StaticProblem(lambda x, s: fun(x), tol=np.full(5, p.tol), step=STEP, max_step=MAX_STEP,
                                    max_iter=60, min_step=MIN_STEP)
            r = problem.newton(q[FREE].copy(), jacobian=self.jacobian)
            self.jacobian = r.jacobian
            q[FREE] = r.x
            Q, sides = checked()
            if r.converged and np.abs(Q).max() > p.tol:  # the full search found more: from there again
                q[FREE] = problem.newton(q[FREE].copy()).x
                Q, sides = checked()
            return {"q": q, "converged": bool(np.abs(Q).max() <= p.tol), "Q": Q,
                    "forces": {s: float(np.linalg.norm(res.force)) for s, res in sides.items()}, "compartments": sides,
                    "jacobian": self.jacobian}
        forces = np.full(len(active), p.compression_N / 2) if p0 is None else p0
        while True:
            n = len(active)

            def fun_r(x: np.ndarray) -> np.ndarray:
                q[FREE] = x[:5]
                try:
                    return self.residual(q, x[5:], active)
                except ContactError:  # a trial pose off the tables: the line search steps back
                    return np.full(5 + len(active), np.inf)

            tol = np.concatenate([np.full(5, p.tol), np.full(n, 1e-3)])  # gaps to 1 nm
            x0 = np.concatenate([q[FREE], forces])
            J = self.jacobian if self.jacobian is not None and self.jacobian.shape == (5 + n, 5 + n) else None
            r = StaticProblem(lambda x, s: fun_r(x), tol=tol, step=np.concatenate([STEP, np.full(n, 1e-3)]), max_iter=60,
                              max_step=np.concatenate([MAX_STEP, np.full(n, 1e3)]),
                              min_step=MIN_STEP).newton(x0, jacobian=J)
            self.jacobian = r.jacobian
            q[FREE] = r.x[:5]
            forces = r.x[5:]
            if not r.converged or (forces >= 0).all() or n == 1:
                break
            # the paper's active set: a contact pulling is dropped and the system solved again
            keep = forces >= 0
            active = tuple(s for s, k in zip(active, keep) if k)
            forces = forces[keep]
        Q = r.f[:5]
        return {"q": q, "converged": bool(r.converged and (forces >= 0).all()), "Q": Q,
                "forces": {s: float(f) for s, f in zip(active, forces)}, "active": active, "p": forces,
                "jacobian": self.jacobian}

    def predicted(self, state: dict[str, Any], flexion: float) -> tuple[np.ndarray, np.ndarray | None]:
        """The start for the solve at ``flexion`` (rad) from the converged ``state``: its
        coordinates (and, rigid, contact forces) moved along the path's tangent
        (:meth:`simclient.dynamics.StaticProblem.tangent`, with that solve's Jacobian)."""
        q, forces, J = state["q"], state.get("p"), state.get("jacobian")
        sides = state.get("active", SIDES) if self.rigid else ()
        if J is None or not state.get("converged") or J.shape != (5 + len(sides),) * 2:
            return q, forces

        def residual(x: np.ndarray, flex: float) -> np.ndarray:  # (x: the free coordinates and forces)
            trial = q.copy()
            trial[FREE], trial[3] = x[:5], flex
            return self.residual(trial, x[5:] if forces is not None else None, sides)

        x = np.concatenate([q[FREE], forces if forces is not None else []])
        at = StaticResult(x, np.zeros(len(x)), 0, True, J, "", q[3])
        moved = q.copy()
        start = StaticProblem(residual, tol=np.ones(len(x)), step=np.ones(len(x))).tangent(at, flexion, 1e-6)
        moved[FREE] = start[:5]
        return moved, (None if forces is None else start[5:])

    def reference(self) -> np.ndarray:
        """The reference position (ligaments not yet attached): flexion, internal rotation, AP and
        ML translation zero; z and varus (rigid: and the contact forces) in equilibrium under the
        compressive force. Sets the bundles' laws from the lengths there; returns ``q``."""
        p = self.params
        q = np.zeros(6)
        self.laws = {}
        self.torque = 0.0
        # only z and varus free: solve on them with the others held
        free = [2, 4]

        if self.rigid:
            def fun(x: np.ndarray) -> np.ndarray:
                q[free] = x[:2]
                r = self.residual(q, x[2:], SIDES)
                return np.concatenate([r[[2, 3]], r[5:]])

            x = StaticProblem(lambda x, s: fun(x), tol=[p.tol, p.tol, 1e-3, 1e-3], step=[1e-7, 1e-7, 1e-3, 1e-3],
                              max_iter=60).newton(np.array([0.0, 0.0, p.compression_N / 2, p.compression_N / 2]))
        else:
            q[2] = -self._lift()

            def fun(x: np.ndarray) -> np.ndarray:
                q[free] = x
                return self.residual(q)[[2, 3]]

            x = StaticProblem(lambda x, s: fun(x), tol=np.full(2, p.tol), step=np.full(2, 1e-7), max_iter=60,
                              max_step=[2e-4, 0.01]).newton(q[free].copy())
        if not x.converged:
            raise ContactError(f"blankevoort: no reference position (residual {np.abs(x.f).max():.3g})")
        q[free] = x.x[:2]
        self.reference_lengths = self.lengths(q)
        self.laws = {n: BlankevoortLaw.from_reference(k, self.reference_lengths[n], eps_r)
                     for n, (k, eps_r, _, _) in BUNDLES.items()}
        return q

    def _lift(self) -> float:
        """How far (m) the femur, lowered along z at the reference orientation, sinks before the
        deformable contact carries half the compressive force: a start inside the contact."""
        q = np.zeros(6)
        for k in range(400):
            q[2] = -k * 2e-5
            F, _, _ = self.wrench(q, full=True)
            if F[2] >= -self.params.compression_N / 2:
                return k * 2e-5
        raise ContactError("blankevoort: the condyles do not reach the plateaus within 8 mm")


def _whole(source: Source) -> tuple[int, int]:
    """A window extent holding the whole table."""
    h = source.header
    return (max(h.n_rec_u, 1), max(h.n_rec_v, 1))


def blankevoort(femoral: dict[str, Source], tibial: dict[str, Source], params: BlankevoortParams | None = None,
                progress: Progress | None = None) -> Summary:
    """The envelope of passive motion: flexion 0 to ``flexion_max_deg`` by ``flexion_step_deg`` (the
    last step shorter where it does not divide the path) under the axial torque of each path; the
    summary's ``envelope`` rows, the largest residuals and the forces at 95 deg."""
    p = params or BlankevoortParams()
    say = progress or (lambda s: None)
    t0 = time.perf_counter()
    knee = BlankevoortKnee(femoral, tibial, p)
    q_ref = knee.reference()
    values: dict[str, Any] = {"status": "ok", "contact": p.contact, "tibia": p.surfaces, "E_Pa": p.E,
                              "thickness_m": p.thickness,
                              "reference_lengths_m": knee.reference_lengths,
                              "reference_position_m": q_ref[:3].tolist()}
    flexions = np.arange(0.0, p.flexion_max_deg - 1e-9, p.flexion_step_deg)
    flexions = np.append(flexions, p.flexion_max_deg)  # (a step that does not divide the path: a shorter last)
    rows = []
    solves = 0
    failures: list[str] = []

    def advance(flexion: float, state: dict[str, Any]) -> dict[str, Any]:
        nonlocal solves
        solves += 1
        # from the previous equilibrium moved along the path's tangent: a stiff layer's condyles,
        # held still while the femur flexes, lift clear of it, a poor start for Newton
        q0, p0 = knee.predicted(state, flexion)
        new = knee.solve(q0, flexion, state.get("active", SIDES), p0)
        if not new["converged"]:
            knee.jacobian = None  # the failed solve's is no start for the next
        return new

    for path in (("internal", "external") if p.path == "both" else (p.path,)):
        # the femur's torque about z: minus the tibia's internal rotation
        q = q_ref.copy()
        state: dict[str, Any] = {}
        for k in range(1, RAMP):  # the torque applied in steps at full extension, then the path
            knee.torque = (-1 if path == "internal" else 1) * p.torque_Nm * k / RAMP
            state = knee.solve(q, 0.0, state.get("active", SIDES), state.get("p"))
            q = state["q"] if state["converged"] else q
        knee.torque = -p.torque_Nm if path == "internal" else p.torque_Nm
        state, last = {**state, "q": q}, 0.0
        for fl in flexions:
            say(f"{path} path: flexion {fl:g} deg")
            # a step that does not converge (a stiff layer's contact moving fast) is taken in halves
            state = StaticProblem.continued(advance, lambda st: st["converged"], last, math.radians(fl), state,
                                            MAX_HALVINGS)
            q, last = state["q"], math.radians(fl)
            rows.append(_envelope_row(knee, state, path, float(fl)))
            if not state["converged"]:  # this path ends here; the other still runs
                failures.append(f"{path} path: no equilibrium at flexion {fl:g} deg "
                                f"(residual {np.abs(state['Q']).max():.3g}){_grid_hint(state, p.grid)}")
                break
    if failures:
        values.update(status="failed", message="; ".join(failures))
    values["envelope"] = rows
    values["path_solves"] = solves
    if not knee.rigid:
        values["largest_stress"] = _largest_stress(rows)
    values["largest_strain"] = _largest_strain(rows)
    values["max_residual_N"] = max(r["residual_N"] for r in rows)
    values["max_residual_Nm"] = max(r["residual_Nm"] for r in rows)
    at95 = [r for r in rows if r["path"] == "internal" and abs(r["flexion_deg"] - 95.0) < 1e-9]
    if at95:
        values["at_95_deg_internal"] = {"medial_force_N": at95[0]["medial_force_N"],
                                        "lateral_force_N": at95[0]["lateral_force_N"], "paper": PAPER_95_DEG}
    values["wall_s"] = time.perf_counter() - t0
    return Summary("blankevoort", values, {"knee": knee})


def _envelope_row(knee: BlankevoortKnee, state: dict[str, Any], path: str, flexion_deg: float) -> dict[str, Any]:
    """One row of the envelope: the pose, the contact forces (N), the residuals, each bundle's
    strain and force (N) and, with a deformable layer, its peak stress (Pa), largest displacement
    (m) and contact area (m^2) per condyle (Fig. 10's quantities)."""
    q = state["q"]
    row = {"flexion_deg": flexion_deg, "path": path, "converged": state["converged"],
           "internal_rotation_deg": math.degrees(q[5]), "varus_deg": math.degrees(q[4]), "translation_m": q[:3].tolist(),
           "medial_force_N": state["forces"].get("medial", 0.0), "lateral_force_N": state["forces"].get("lateral", 0.0),
           "residual_N": float(np.abs(state["Q"][:3]).max()), "residual_Nm": float(np.abs(state["Q"][3:5]).max())}
    loads = knee.bundle_loads(q)
    row["bundle_strain"] = {n: strain for n, (strain, _) in loads.items()}
    row["bundle_force_N"] = {n: tension for n, (_, tension) in loads.items()}
    for side, res in state.get("compartments", {}).items():
        row[f"{side}_peak_stress_Pa"] = res.peak_pressure
        row[f"{side}_max_displacement_m"] = float(res.depth.max())
        row[f"{side}_area_m2"] = res.area
    return row


def _grid_hint(state: dict[str, Any], grid: tuple[int, int]) -> str:
    """A hint for a failed step whose layer contact covers few elements: which, and a finer grid;
    "" otherwise (rigid contact, or enough elements)."""
    counts = {side: int(res.active.sum()) for side, res in state.get("compartments", {}).items()}
    if not counts or min(counts.values()) >= FEW_ELEMENTS:
        return ""
    side = min(counts, key=lambda s: counts[s])
    return (f"; the {side} contact covers {counts[side]} elements, where the layer's force steps as elements "
            f"enter and leave it: a finer --grid ({2 * grid[0]}x{2 * grid[1]}) may converge")


def _largest_stress(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Where along the envelope the layer's stress peaks: the stress (Pa) and displacement (m),
    the condyle, path and flexion (deg), beside the paper's (Fig. 10: the lateral condyle, the
    internal path, 90 deg); None where no position was solved."""
    candidates = [(r[f"{s}_peak_stress_Pa"], s, r) for r in rows if r["converged"] for s in SIDES
                  if f"{s}_peak_stress_Pa" in r]
    if not candidates:
        return None
    stress, side, row = max(candidates, key=lambda c: c[0])
    return {"peak_stress_Pa": stress, "max_displacement_m": row[f"{side}_max_displacement_m"], "condyle": side,
            "path": row["path"], "flexion_deg": row["flexion_deg"], "paper": PAPER_LARGEST_STRESS}


def _largest_strain(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The largest bundle strain along the envelope's solved positions: the strain, the bundle,
    its tension (N), the path and flexion (deg); None where no position was solved."""
    candidates = [(strain, name, r) for r in rows if r["converged"] for name, strain in r["bundle_strain"].items()]
    if not candidates:
        return None
    strain, name, row = max(candidates, key=lambda c: c[0])
    return {"strain": strain, "bundle": name, "force_N": row["bundle_force_N"][name], "path": row["path"],
            "flexion_deg": row["flexion_deg"]}


