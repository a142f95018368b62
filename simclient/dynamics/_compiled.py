"""The compiled integrator (``method="DOP853-jit"``): scipy's DOP853 with every stage compiled.

:class:`CompiledDOP853` is scipy's ``DOP853``, step for step (its tableau, error norm, step-size
control and 7th-order dense output), with the attempts at a step (twelve stages each) and the
dense output's three extra stages run by one compiled function that evaluates the whole right-hand
side of a :class:`MultibodySystem`: the bodies' poses, each contact's common-normal solve on its
windows' buffers, the force law, and Newton-Euler. Python runs once per step (scipy's event
location and bookkeeping) instead of once per stage, which is what made a tabulated ball slower
than an analytic one.

A stage the compiled path cannot finish (a window must move, a warm start must restart from a
coarse search, a contact fails) is handed to the Python right-hand side, which moves the window or
raises exactly as the reference path does; its value becomes the stage, and the attempt goes on.
The compiled path holds free bodies, gravity, point contacts with the laws that have a compiled
form (:attr:`simclient.contact.ForceLaw.packed`) and ligaments (:class:`Ligament` with a law's
``packed`` form); systems with anything else (other loads, constraints, laws with internal states,
element or profile contacts) run the Python right-hand side at every stage: then ``DOP853-jit`` is
scipy's ``DOP853``. :func:`compile_system` says which, and why.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy.integrate import DOP853, DenseOutput
from scipy.integrate._ivp.rk import Dop853DenseOutput  # (scipy's own, which DOP853 builds)

from simclient.contact import (
    FRICTION_PARAMS_SIZE,
    AtlasPair,
    ContactPair,
    ContactStatus,
    friction_coefficient,
    law_force,
    solve_contact,
)
from simclient.dynamics._bodies import Body
from simclient.dynamics._loads import Ligament, spring_force
from simclient.dynamics._system import MultibodySystem, _apply, _poses, _rates
from simclient.errors import ParameterError
from simclient.geometry import jit
from simclient.geometry import layout as L

__all__ = ["CompiledDOP853", "compile_system", "gap_probe", "ligament_forces"]

_CONVERGED = int(ContactStatus.CONVERGED)
_LEFT_WINDOW_I, _LEFT_WINDOW_J = int(ContactStatus.LEFT_WINDOW_I), int(ContactStatus.LEFT_WINDOW_J)
# contact rows: integers, then floats
_CI_BODY_I, _CI_BODY_J, _CI_LAW, _CI_ACTIVE, _CI_FRICTION = range(5)
_CF_IMPACT, _CF_LAW, _CF_SQ_I, _CF_AQ_I, _CF_SQ_J, _CF_AQ_J, _CF_FRICTION = 0, 1, 6, 9, 18, 21, 30
_CF_SIZE = _CF_FRICTION + FRICTION_PARAMS_SIZE
# ligament rows: integers, then floats
_LI_BODY_A, _LI_BODY_B, _LI_LAW, _LI_TENSION_ONLY = range(4)
_LF_PA, _LF_PB, _LF_LAW, _LF_DAMPING = 0, 3, 6, 9
_LF_SIZE = 10
# outcome of a compiled attempt, and of a probe
_ACCEPTED, _TOO_SMALL, _STAGE_FAILED = 0, 1, 2
_CONVERGED_PROBE, _LEFT_WINDOW_PROBE, _FAILED_PROBE = 0, 1, 2
#: compiled attempts at one step that may hand a stage to Python before the step runs in Python
MAX_HANDOVERS = 16


class _Kernel:
    """The compiled form of a :class:`MultibodySystem`: its arrays, and the contacts' warm starts
    kept in step with the Python :class:`ContactPair` objects."""

    def __init__(self, system: MultibodySystem) -> None:
        self.system = system
        self.index = {id(c): k for k, c in enumerate(system.contacts)}
        self.pairs: list[ContactPair] = [c.pair for c in system.contacts]  # type: ignore[misc]
        nc, nb = len(system.contacts), len(system.bodies)
        self.bodies = (system._free_idx, system._mass, system._J, system._Jinv, system.gravity)
        # pose and force scratch of its own: the Python system caches surface poses on its arrays
        self.scratch = (np.zeros((nb, 3)), np.tile(np.eye(3), (nb, 1, 1)), np.zeros((nb, 3)), np.zeros((nb, 3)),
                        np.zeros((nb, 3)), np.zeros((nb, 3)))
        for k, b in enumerate(system.bodies):
            if b.fixed:
                self.scratch[0][k], self.scratch[1][k] = system._r[k], system._A[k]
        self.cint = np.zeros((max(nc, 1), 5), dtype=np.int64)
        self.cflt = np.zeros((max(nc, 1), _CF_SIZE))
        for k, c in enumerate(system.contacts):
            kind, params = c.law.packed  # type: ignore[misc]
            self.cint[k, :3] = (system.body_index(c.i.body), system.body_index(c.j.body), kind)
            self.cflt[k, _CF_LAW:_CF_LAW + len(params)] = params
            self.cflt[k, _CF_SQ_I:_CF_SQ_I + 3] = c.i.offset
            self.cflt[k, _CF_AQ_I:_CF_AQ_I + 9] = np.asarray(c.i.rotation, float).ravel()
            self.cflt[k, _CF_SQ_J:_CF_SQ_J + 3] = c.j.offset
            self.cflt[k, _CF_AQ_J:_CF_AQ_J + 9] = np.asarray(c.j.rotation, float).ravel()
            if c.friction is not None:
                self.cint[k, _CI_FRICTION] = 1
                self.cflt[k, _CF_FRICTION:_CF_SIZE] = c.friction.packed
        # (compile_system checked that every load is a packed ligament)
        self.lint, self.lflt = _pack_ligaments(system, system.loads)  # type: ignore[arg-type]
        # contacts on atlases, whose window i changes with the chart in use (see rechart())
        self.atlases: list[tuple[int, Any, AtlasPair]] = []
        for k, c in enumerate(system.contacts):
            if isinstance(c.pair, AtlasPair):
                self.atlases.append((k, c, c.pair))
        self._buffers()
        self.ints = tuple(p.ints for p in self.pairs) or (np.zeros(L.PAIR_INTS_SIZE, dtype=np.int64),)
        self.flts = tuple(p.flts for p in self.pairs) or (np.zeros(L.PAIR_FLTS_SIZE),)
        self.xs = np.zeros((max(nc, 1), 4))
        self.work = np.full((max(nc, 1), L.SOLVE_WORK_SIZE), np.nan)
        self.stage_y = np.zeros(len(system.initial_state()))

    def _buffers(self) -> None:
        """The windows' buffers the compiled solves read, two per contact (window i's that of the
        chart in use, for a contact on an atlas)."""
        self.bufs = tuple(b for p in self.pairs for b in (p.wi.buffer, p.wj.buffer)) or (np.zeros((1, 1, 1)),) * 2
        self._charts = [p.chart for _, _, p in self.atlases]

    def load(self) -> None:
        """The Python side's current state into the arrays: contact modes, impact velocities, warm
        starts and window placements (a window may have moved in Python since the last call, and an
        atlas's chart changed)."""
        for k, c in enumerate(self.system.contacts):
            self._load(k, c, c.pair.x)  # type: ignore[union-attr]  # (compile_system checked every pair)

    def rechart(self, t: float, y: np.ndarray) -> None:
        """At an accepted state: each contact on an atlas whose point has come within its margin of
        its chart's edge detected in Python, which moves it to another chart (the compiled stages
        read one table a contact and leave the choice to the accepted states; a chart's margin is
        far more than a step's travel)."""
        for k, c, p in self.atlases:
            if c.active and not p.inside(self.xs[k]):
                self.system.set_state(y)
                self.system.detect(c)

    def _load(self, k: int, c: Any, x: np.ndarray | None) -> None:
        """Contact ``k``'s (``c``'s) state into the arrays, with its warm start ``x``."""
        if self.atlases and self._charts != [p.chart for _, _, p in self.atlases]:
            self._buffers()
        self.cint[k, _CI_ACTIVE] = c.active
        self.cflt[k, _CF_IMPACT] = c.impact_velocity
        if x is not None:  # (without one, the compiled solve hands the stage to Python)
            self.xs[k] = x
        if not c.pair.synced():
            c.pair._sync()

    def store(self) -> None:
        """The warm starts the compiled solves found back into the Python pairs."""
        for k, c in enumerate(self.system.contacts):
            if c.active:
                c.pair.x = self.xs[k]  # type: ignore[union-attr]  # (the setter copies it)

    def args(self) -> tuple[Any, ...]:
        return (*self.bodies, *self.scratch, self.bufs, self.ints, self.flts, self.cint, self.cflt, self.xs, self.work,
                self.lint, self.lflt)

    def rhs(self, t: float, y: np.ndarray) -> np.ndarray:
        """The system's right-hand side (:meth:`MultibodySystem.rhs`), compiled; the Python one
        where a contact needs it (a window to move, a failure to report)."""
        self.load()
        dy = np.empty(len(y))
        failed = _system_rates(t, y, dy, *self.args())
        self.store()
        return self.system.rhs(t, y) if failed >= 0 else dy

    def gap(self, c: Any, y: np.ndarray) -> float:
        """:meth:`MultibodySystem.gap` of contact ``c`` at state ``y`` (m), compiled where the probe
        converges or leaves a window; the Python probe otherwise (coarse restarts, bounding
        volumes, failures)."""
        k = self.index[id(c)]
        p = c.pair
        x = p.x
        if x is not None:
            self._load(k, c, x)  # (a probe reads no other contact)
            status, depth = _probe(y, k, *self.args())
            if status == _CONVERGED_PROBE:
                p.x = self.xs[k]
            if status != _FAILED_PROBE:
                return -depth
        self.system.set_state(y)
        return self.system.gap(c)


def _compilable(load: Any) -> bool:
    """A load with a compiled form: a ligament between spatial bodies with a packed law."""
    return (isinstance(load, Ligament) and isinstance(load.body_a, Body) and isinstance(load.body_b, Body)
            and getattr(load.law, "packed", None) is not None)


def compile_system(system: Any) -> tuple[_Kernel | None, str]:
    """The compiled form of ``system`` and ``""``, or None and the reason it has none. The compiled
    form offers ``rhs(t, y)`` and ``gap(contact, y)``, the system's own evaluated compiled."""
    if not isinstance(system, MultibodySystem):
        return None, f"{type(system).__name__} is not a MultibodySystem"
    if system.constraints:
        return None, "the system has constraints"
    for load in system.loads:
        if not _compilable(load):
            return None, f"the load {load!r} has no compiled form (only ligaments with packed laws have)"
    for c in system.contacts:
        if type(c.pair) not in (ContactPair, AtlasPair):
            return None, f"contact {c.name}: its {type(c.pair).__name__} has no compiled form (a plain ContactPair has)"
        if c.law.n_states or c.law.packed is None:
            return None, f"contact {c.name}: the law {c.law.name} has no compiled form"
    return _Kernel(system), ""


def gap_probe(system: Any, kernel: _Kernel | None = None) -> Callable[[Any, np.ndarray], float]:
    """``gap(contact, y)``: the signed gap (m) of a contact of ``system`` at state ``y`` (see
    :meth:`MultibodySystem.gap`), by the compiled ``kernel`` (:func:`compile_system`) when given."""
    if kernel is not None:
        return kernel.gap

    def gap(c: Any, y: np.ndarray) -> float:
        system.set_state(y)
        return float(system.gap(c))
    return gap


@jit
def _to_global(r: np.ndarray, A: np.ndarray, b: int, p: np.ndarray, out: np.ndarray) -> None:
    """``out = r_b + A_b p``: body b's point ``p`` (body frame) in the global frame."""
    for a in range(3):
        out[a] = r[b, a] + A[b, a, 0] * p[0] + A[b, a, 1] * p[1] + A[b, a, 2] * p[2]


@jit
def _velocity_along(r: np.ndarray, v: np.ndarray, w: np.ndarray, b: int, P: np.ndarray, n: np.ndarray) -> float:
    """``(r'_b + omega_b x (P - r_b)) . n``: body b's material point at global ``P``, its velocity
    (m/s) along ``n``."""
    p0, p1, p2 = P[0] - r[b, 0], P[1] - r[b, 1], P[2] - r[b, 2]
    return ((v[b, 0] + w[b, 1] * p2 - w[b, 2] * p1) * n[0] + (v[b, 1] + w[b, 2] * p0 - w[b, 0] * p2) * n[1]
            + (v[b, 2] + w[b, 0] * p1 - w[b, 1] * p0) * n[2])


@jit
def _add_friction(r: np.ndarray, v: np.ndarray, w: np.ndarray, bi: int, bj: int, out: np.ndarray, fn: float,
                  p: np.ndarray, f: np.ndarray) -> np.ndarray:
    """:meth:`simclient.contact.Friction.apply` of the solve ``out``: the friction force (parameters
    ``p``, normal force ``fn`` in N) added to ``f``; the point both act at (the middle of the
    indentation)."""
    M, vel = np.empty(3), np.empty(3)
    for a in range(3):
        M[a] = 0.5 * (out[L.OUT_PI + a] + out[L.OUT_PJ + a])
    # v_i(M) - v_j(M), less its normal part: the slip
    di, dj = M - r[bi], M - r[bj]
    for a in range(3):
        b, c = (a + 1) % 3, (a + 2) % 3
        vel[a] = (v[bi, a] + w[bi, b] * di[c] - w[bi, c] * di[b]) - (v[bj, a] + w[bj, b] * dj[c] - w[bj, c] * dj[b])
    n = out[L.OUT_N:L.OUT_N + 3]
    vn = vel[0] * n[0] + vel[1] * n[1] + vel[2] * n[2]
    for a in range(3):
        vel[a] -= vn * n[a]
    speed = math.sqrt(vel[0] * vel[0] + vel[1] * vel[1] + vel[2] * vel[2])
    if speed > 0.0 and fn > 0.0:
        scale = friction_coefficient(p, speed) * fn / speed
        for a in range(3):
            f[a] -= scale * vel[a]
    return M


@jit
def _solve(k: int, check: int, x: np.ndarray, r: np.ndarray, A: np.ndarray, bufs: Any, ints: Any, flts: Any,
           cint: np.ndarray, cflt: np.ndarray, work: np.ndarray) -> int:
    """Contact ``k``'s common-normal solve from ``x`` at the bodies' poses ``r``, ``A`` (the
    surfaces placed by eq. 6.17: ``R = A A_Q``, ``c = r + A s_Q``); its status."""
    Ri, Rj, ci, cj = np.empty((3, 3)), np.empty((3, 3)), np.empty(3), np.empty(3)
    bi, bj = cint[k, _CI_BODY_I], cint[k, _CI_BODY_J]
    _to_global(r, A, bi, cflt[k, _CF_SQ_I:_CF_SQ_I + 3], ci)
    _to_global(r, A, bj, cflt[k, _CF_SQ_J:_CF_SQ_J + 3], cj)
    for a in range(3):
        for b in range(3):
            si = sj = 0.0
            for m in range(3):
                si += A[bi, a, m] * cflt[k, _CF_AQ_I + 3 * m + b]
                sj += A[bj, a, m] * cflt[k, _CF_AQ_J + 3 * m + b]
            Ri[a, b], Rj[a, b] = si, sj
    ints[k][L.PAIR_CHECK] = check
    status, _ = solve_contact(bufs[2 * k], bufs[2 * k + 1], ints[k], flts[k], Ri, ci, Rj, cj, x, work[k])
    return status


@jit
def _probe(y: np.ndarray, k: int, free_idx: np.ndarray, mass: np.ndarray, J: np.ndarray, Jinv: np.ndarray,
           g: np.ndarray, r: np.ndarray, A: np.ndarray, v: np.ndarray, w: np.ndarray, F: np.ndarray, N: np.ndarray,
           bufs: Any, ints: Any, flts: Any, cint: np.ndarray, cflt: np.ndarray, xs: np.ndarray,
           work: np.ndarray, lint: np.ndarray, lflt: np.ndarray) -> tuple[int, float]:
    """A probe of contact ``k`` at state ``y`` with the windows in place (see
    :meth:`MultibodySystem.gap`): ``(outcome, indentation in m)``; a converged probe's solution
    becomes the warm start."""
    _poses(y, free_idx, r, A, v, w)
    x = xs[k].copy()
    status = _solve(k, 0, x, r, A, bufs, ints, flts, cint, cflt, work)
    if status == _CONVERGED:
        xs[k] = x
        return _CONVERGED_PROBE, work[k, L.OUT_DEPTH]
    if status == _LEFT_WINDOW_I or status == _LEFT_WINDOW_J:
        return _LEFT_WINDOW_PROBE, work[k, L.OUT_DEPTH]
    return _FAILED_PROBE, 0.0


@jit
def _system_rates(t: float, y: np.ndarray, dy: np.ndarray, free_idx: np.ndarray, mass: np.ndarray, J: np.ndarray,
                  Jinv: np.ndarray, g: np.ndarray, r: np.ndarray, A: np.ndarray, v: np.ndarray, w: np.ndarray,
                  F: np.ndarray, N: np.ndarray, bufs: Any, ints: Any, flts: Any, cint: np.ndarray, cflt: np.ndarray,
                  xs: np.ndarray, work: np.ndarray, lint: np.ndarray, lflt: np.ndarray) -> int:
    """``dy = f(t, y)`` of the system (see :meth:`MultibodySystem.rhs`); -1, or the index of a
    contact whose solve did not converge (a window to move, a failure) or whose law gave no force."""
    _poses(y, free_idx, r, A, v, w)
    F[:] = 0.0
    N[:] = 0.0
    x = np.empty(4)
    for k in range(cint.shape[0]):
        if cint[k, _CI_ACTIVE] == 0:
            continue
        bi, bj = cint[k, _CI_BODY_I], cint[k, _CI_BODY_J]
        x[:] = xs[k]
        if _solve(k, 1, x, r, A, bufs, ints, flts, cint, cflt, work) != _CONVERGED:
            return k
        xs[k] = x
        out = work[k]
        # the indentation rate: -(v_i(P_i) - v_j(P_j)) . n
        n = out[L.OUT_N:L.OUT_N + 3]
        rate = (_velocity_along(r, v, w, bj, out[L.OUT_PJ:L.OUT_PJ + 3], n)
                - _velocity_along(r, v, w, bi, out[L.OUT_PI:L.OUT_PI + 3], n))
        fn = law_force(cint[k, _CI_LAW], cflt[k, _CF_LAW:_CF_LAW + 5], out[L.OUT_DEPTH], rate, cflt[k, _CF_IMPACT])
        if math.isnan(fn):
            return k
        f = np.empty(3)
        for a in range(3):
            f[a] = fn * out[L.OUT_N + a]
        Pi, Pj = out[L.OUT_PI:L.OUT_PI + 3], out[L.OUT_PJ:L.OUT_PJ + 3]
        if cint[k, _CI_FRICTION]:
            Pi = Pj = _add_friction(r, v, w, bi, bj, out, fn, cflt[k, _CF_FRICTION:_CF_SIZE], f)
        _apply(bi, Pi, f, r, F, N)
        for a in range(3):
            f[a] = -f[a]
        _apply(bj, Pj, f, r, F, N)
    _ligaments(r, A, v, w, F, N, lint, lflt)
    _rates(y, free_idx, mass, J, Jinv, g, A, F, N, dy)
    return -1


@jit
def _ligament_force(m: int, r: np.ndarray, A: np.ndarray, v: np.ndarray, w: np.ndarray, lint: np.ndarray,
                    lflt: np.ndarray, Pa: np.ndarray, Pb: np.ndarray) -> tuple[float, float]:
    """Ligament ``m``'s force (N, pulling its points together; 0 for a slack tension-only one) and
    length (m), its global insertion points into ``Pa``, ``Pb`` (:meth:`Ligament.state` and
    ``__call__``)."""
    ba, bb = lint[m, _LI_BODY_A], lint[m, _LI_BODY_B]
    _to_global(r, A, ba, lflt[m, _LF_PA:_LF_PA + 3], Pa)
    _to_global(r, A, bb, lflt[m, _LF_PB:_LF_PB + 3], Pb)
    d = np.empty(3)
    for a in range(3):
        d[a] = Pb[a] - Pa[a]
    length = math.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
    # the lengthening rate: (v_b(P_b) - v_a(P_a)) . d / l
    rate = (_velocity_along(r, v, w, bb, Pb, d) - _velocity_along(r, v, w, ba, Pa, d)) / length
    fn = spring_force(lint[m, _LI_LAW], lflt[m, _LF_LAW:_LF_LAW + 3], length)
    c = lflt[m, _LF_DAMPING]
    if lint[m, _LI_TENSION_ONLY] == 0:
        return fn + c * rate, length
    if fn > 0.0 and c != 0.0:
        fn = fn + c * rate
    return max(fn, 0.0), length


@jit
def _ligaments(r: np.ndarray, A: np.ndarray, v: np.ndarray, w: np.ndarray, F: np.ndarray, N: np.ndarray,
               lint: np.ndarray, lflt: np.ndarray) -> None:
    """Every ligament's force on its two bodies."""
    Pa, Pb, f = np.empty(3), np.empty(3), np.empty(3)
    for m in range(lint.shape[0]):
        if lint[m, _LI_LAW] == 0:
            continue
        fn, length = _ligament_force(m, r, A, v, w, lint, lflt, Pa, Pb)
        if fn == 0.0:
            continue
        for a in range(3):
            f[a] = fn * (Pb[a] - Pa[a]) / length
        _apply(lint[m, _LI_BODY_A], Pa, f, r, F, N)
        for a in range(3):
            f[a] = -f[a]
        _apply(lint[m, _LI_BODY_B], Pb, f, r, F, N)


@jit
def _ligament_history(Y: np.ndarray, free_idx: np.ndarray, r: np.ndarray, A: np.ndarray, v: np.ndarray,
                      w: np.ndarray, lint: np.ndarray, lflt: np.ndarray, out: np.ndarray) -> None:
    """``out[n, m]``: ligament m's force (N) at the state ``Y[:, n]``."""
    Pa, Pb = np.empty(3), np.empty(3)
    for n in range(Y.shape[1]):
        _poses(Y[:, n], free_idx, r, A, v, w)
        for m in range(out.shape[1]):
            out[n, m] = _ligament_force(m, r, A, v, w, lint, lflt, Pa, Pb)[0]


def _pack_ligaments(system: MultibodySystem, ligaments: Sequence[Ligament]) -> tuple[np.ndarray, np.ndarray]:
    """The compiled rows of ``ligaments`` (of ``system``'s bodies, with packed laws): integers, floats."""
    lint = np.zeros((max(len(ligaments), 1), 4), dtype=np.int64)
    lflt = np.zeros((max(len(ligaments), 1), _LF_SIZE))
    for m, lig in enumerate(ligaments):
        kind, params = lig.law.packed  # type: ignore[attr-defined]
        lint[m] = (system.body_index(lig.body_a), system.body_index(lig.body_b), kind, lig.tension_only)
        lflt[m, _LF_PA:_LF_PA + 3] = lig.point_a
        lflt[m, _LF_PB:_LF_PB + 3] = lig.point_b
        lflt[m, _LF_LAW:_LF_LAW + 3] = params
        lflt[m, _LF_DAMPING] = lig.damping
    return lint, lflt


def ligament_forces(system: MultibodySystem, ligaments: Sequence[Ligament], Y: np.ndarray) -> np.ndarray:
    """Forces (N, pulling the insertions together; shape ``(len(Y[0]), len(ligaments))``) of
    ``ligaments`` at each state ``Y[:, n]`` of ``system`` (a history from a result's dense output),
    in one compiled loop: :meth:`Ligament.state`'s force, except that a tension-only ligament's is
    never negative. The ligaments join the system's bodies (spatial) and have packed laws."""
    for lig in ligaments:
        if not _compilable(lig):
            raise ParameterError(f"ligament {lig.name}: only spatial ligaments with packed laws have a compiled form")
    lint, lflt = _pack_ligaments(system, ligaments)
    nb = len(system.bodies)
    r, A = system._r.copy(), system._A.copy()  # (the fixed bodies' poses; free ones are overwritten)
    out = np.empty((Y.shape[1], len(ligaments)))
    _ligament_history(np.ascontiguousarray(Y, dtype=float), system._free_idx, r, A, np.zeros((nb, 3)),
                      np.zeros((nb, 3)), lint, lflt, out)
    return out


@jit
def _stage(K: np.ndarray, A: np.ndarray, s: int, h: float, y: np.ndarray, ys: np.ndarray) -> None:
    """``ys = y + h sum_m A[m] K[m]`` over the first ``s`` stages."""
    for i in range(len(y)):
        acc = 0.0
        for m in range(s):
            acc += A[m] * K[m, i]
        ys[i] = y[i] + acc * h


@jit
def _attempt(t: float, y: np.ndarray, f: np.ndarray, h_abs: float, min_step: float, t_bound: float,
             direction: float, rtol: float, atol: np.ndarray, rejected: bool, resume: int, K: np.ndarray, y_new: np.ndarray,
             ys: np.ndarray, A: np.ndarray, B: np.ndarray, C: np.ndarray, E3: np.ndarray, E5: np.ndarray,
             free_idx: np.ndarray, mass: np.ndarray, J: np.ndarray, Jinv: np.ndarray, g: np.ndarray, r: np.ndarray,
             Am: np.ndarray, v: np.ndarray, w: np.ndarray, F: np.ndarray, N: np.ndarray, bufs: Any, ints: Any,
             flts: Any, cint: np.ndarray, cflt: np.ndarray, xs: np.ndarray, work: np.ndarray, lint: np.ndarray,
             lflt: np.ndarray) -> tuple[int, float, float, float, bool, float, int, int]:
    """scipy's ``RungeKutta._step_impl`` for DOP853 (attempts until one is accepted), compiled,
    the first attempt from stage ``resume`` (1: from the start; more: the stages before it are in
    ``K``, from an attempt with the same ``h_abs`` that handed the one before over to Python).
    Returns ``(outcome, t_new, h, h_abs, rejected, t_stage, evaluations, stage)``; on
    ``_STAGE_FAILED`` ``ys`` holds the failed stage's state at ``t_stage``."""
    n_stages, n = B.shape[0], len(y)
    nfev = 0
    while True:
        if h_abs < min_step:
            return _TOO_SMALL, t, 0.0, h_abs, rejected, t, nfev, 0
        h = h_abs * direction
        t_new = t + h
        if direction * (t_new - t_bound) > 0:
            t_new = t_bound
        h = t_new - t
        h_abs = abs(h)
        K[0] = f
        for s in range(resume, n_stages):
            _stage(K, A[s], s, h, y, ys)
            nfev += 1
            if _system_rates(t + C[s] * h, ys, K[s], free_idx, mass, J, Jinv, g, r, Am, v, w, F, N, bufs, ints, flts,
                             cint, cflt, xs, work, lint, lflt) >= 0:
                return _STAGE_FAILED, t, h, h_abs, rejected, t + C[s] * h, nfev, s
        _stage(K, B, n_stages, h, y, y_new)
        if resume <= n_stages:
            nfev += 1
            if _system_rates(t_new, y_new, K[n_stages], free_idx, mass, J, Jinv, g, r, Am, v, w, F, N, bufs, ints,
                             flts, cint, cflt, xs, work, lint, lflt) >= 0:
                ys[:] = y_new
                return _STAGE_FAILED, t, h, h_abs, rejected, t_new, nfev, n_stages
        resume = 1
        # DOP853's error norm (scipy's _estimate_error_norm)
        e5 = e3 = 0.0
        for i in range(n):
            scale = atol[i] + max(abs(y[i]), abs(y_new[i])) * rtol
            a5 = b3 = 0.0
            for m in range(n_stages + 1):
                a5 += K[m, i] * E5[m]
                b3 += K[m, i] * E3[m]
            e5 += (a5 / scale) ** 2
            e3 += (b3 / scale) ** 2
        if e5 == 0.0 and e3 == 0.0:
            error_norm = 0.0
        else:
            error_norm = h_abs * e5 / math.sqrt((e5 + 0.01 * e3) * n)
        if error_norm < 1:
            factor = 10.0 if error_norm == 0 else min(10.0, 0.9 * error_norm ** (-1.0 / 8.0))
            if rejected:
                factor = min(1.0, factor)
            return _ACCEPTED, t_new, h, h_abs * factor, rejected, t_new, nfev, 0
        h_abs *= max(0.2, 0.9 * error_norm ** (-1.0 / 8.0))
        rejected = True


@jit
def _extra_stages(t_old: float, y_old: np.ndarray, h: float, K: np.ndarray, A_extra: np.ndarray, C_extra: np.ndarray,
                  first: int, ys: np.ndarray, free_idx: np.ndarray, mass: np.ndarray, J: np.ndarray, Jinv: np.ndarray,
                  g: np.ndarray, r: np.ndarray, Am: np.ndarray, v: np.ndarray, w: np.ndarray, F: np.ndarray,
                  N: np.ndarray, bufs: Any, ints: Any, flts: Any, cint: np.ndarray, cflt: np.ndarray, xs: np.ndarray,
                  work: np.ndarray, lint: np.ndarray, lflt: np.ndarray) -> tuple[int, float]:
    """The dense output's extra stages into ``K`` from stage ``first`` on; ``(-1, t)`` when done,
    else ``(stage, t_stage)`` of the one that failed (its state in ``ys``)."""
    n_stages = K.shape[0] - A_extra.shape[0]
    for e in range(first - n_stages, A_extra.shape[0]):
        s = n_stages + e
        _stage(K, A_extra[e], s, h, y_old, ys)
        ts = t_old + C_extra[e] * h
        if _system_rates(ts, ys, K[s], free_idx, mass, J, Jinv, g, r, Am, v, w, F, N, bufs, ints, flts, cint, cflt,
                         xs, work, lint, lflt) >= 0:
            return s, ts
    return -1, t_old


@jit
def _dense_coefficients(y_old: np.ndarray, y: np.ndarray, f: np.ndarray, h: float, K: np.ndarray, D: np.ndarray,
                        F: np.ndarray) -> None:
    """DOP853's dense-output coefficients (scipy's ``DOP853._dense_output_impl``)."""
    for i in range(len(y)):
        dy = y[i] - y_old[i]
        F[0, i] = dy
        F[1, i] = h * K[0, i] - dy
        F[2, i] = 2 * dy - h * (f[i] + K[0, i])
        for p in range(D.shape[0]):
            acc = 0.0
            for m in range(K.shape[0]):
                acc += D[p, m] * K[m, i]
            F[3 + p, i] = h * acc


class CompiledDOP853(DOP853):
    """scipy's ``DOP853`` with its stages run by a system's compiled right-hand side ``kernel``
    (from :func:`compile_system`; :func:`simclient.dynamics.simulate` passes it); without one it
    is ``DOP853``."""

    takes_kernel = True
    t: float
    y: np.ndarray
    f: np.ndarray
    h_abs: float

    def __init__(self, fun: Any, t0: float, y0: np.ndarray, t_bound: float, kernel: _Kernel | None = None,
                 **options: Any) -> None:
        super().__init__(fun, t0, y0, t_bound, **options)
        self.kernel = kernel
        self._atol = np.broadcast_to(np.asarray(self.atol, float), (self.n,)).copy()

    def _handover(self, t_stage: float, stage: int) -> None:
        """A stage the compiled path could not finish, evaluated by the Python right-hand side into
        ``K[stage]`` (it moves windows, restarts warm starts, or raises as the reference path does)."""
        assert self.kernel is not None
        self.kernel.store()
        self.nfev += 1
        self.K_extended[stage] = self.kernel.system.rhs(t_stage, self.kernel.stage_y.copy())

    def _step_impl(self) -> tuple[bool, str | None]:
        if self.kernel is None:
            return super()._step_impl()
        t, kern = self.t, self.kernel
        min_step = 10 * np.abs(np.nextafter(t, self.direction * np.inf) - t)
        h_abs = self.max_step if self.h_abs > self.max_step else max(self.h_abs, min_step)
        y_new, rejected, resume = np.empty(self.n), False, 1
        for _ in range(MAX_HANDOVERS):
            kern.load()
            outcome, t_new, h, h_next, rejected, t_stage, nfev, stage = _attempt(
                t, self.y, self.f, h_abs, min_step, self.t_bound, float(self.direction), float(self.rtol), self._atol,
                rejected, resume, self.K_extended, y_new, kern.stage_y, self.A, self.B, self.C, self.E3, self.E5,
                *kern.args())
            self.nfev += nfev
            if outcome == _ACCEPTED:
                kern.store()
                if kern.atlases:
                    kern.rechart(t_new, y_new)
                self.h_previous, self.y_old, self.t, self.y = h, self.y, t_new, y_new
                self.h_abs, self.f = h_next, self.K_extended[self.n_stages].copy()
                return True, None
            if outcome == _TOO_SMALL:
                return False, self.TOO_SMALL_STEP
            self._handover(t_stage, stage)  # then the attempt goes on after that stage, as the Python path does
            h_abs, resume = h_next, stage + 1
        self.h_abs = h_abs  # the compiled attempts keep handing over: this step in Python
        return super()._step_impl()

    def _dense_output_impl(self) -> DenseOutput:
        if self.kernel is None:
            return super()._dense_output_impl()
        K, h, kern = self.K_extended, self.h_previous, self.kernel
        first = self.n_stages + 1
        while first < K.shape[0]:
            kern.load()
            failed, t_stage = _extra_stages(self.t_old, self.y_old, h, K, self.A_EXTRA, self.C_EXTRA, first,
                                            kern.stage_y, *kern.args())
            self.nfev += (failed - first + 1) if failed >= 0 else K.shape[0] - first
            if failed < 0:
                kern.store()
                break
            self._handover(t_stage, failed)  # then on after this stage, compiled again
            first = failed + 1
        F = np.empty((self.D.shape[0] + 3, self.n))
        _dense_coefficients(self.y_old, self.y, self.f, h, K, self.D, F)
        return Dop853DenseOutput(self.t_old, self.t, self.y_old, F)
