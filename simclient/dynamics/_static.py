"""Quasi-static equilibrium of one body under contacts, loads and gravity (Blankevoort's eq. 18).

The body's pose is six coordinates ``q = (x, y, z, rx, ry, rz)``: its origin's position (m, global)
and a rotation vector (rad) from its initial orientation, ``A = exp([q_r]x) A0``. Any subset of the
six is prescribed, as a constant or as a function of the load step ``s`` (the loads and the path
see ``s`` as their time argument); the others are free. Equilibrium: the generalized forces of the
free coordinates vanish, ``Q = J^T (F + m g, N) = 0`` with ``J`` the map from ``q'`` to the body's
velocity and angular velocity (``Q`` in N for x, y, z and N m for rx, ry, rz). Every contact counts
whenever it indents (velocities are zero, so dissipative laws give their elastic part).

Newton on the free coordinates with a central finite-difference Jacobian (steps 1e-7 m and
1e-7 rad) and a backtracking line search on ``|Q|^2``; a load path is followed by continuation,
each step starting from the previous solution moved along the path's tangent (:func:`tangent_step`),
an increment that fails being split in halves (down to 1/64). A free
coordinate without stiffness (a zero column of the Jacobian: e.g. a contact still open) is moved
along its load in doubling steps until something holds it; one with neither stiffness nor load is
an input error naming it. A step that does not converge is a result with ``converged = False`` and
a message naming the step.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np

from simclient.dynamics._bodies import Body
from simclient.dynamics._system import MultibodySystem
from simclient.errors import ContactError, ParameterError, SimulationError
from simclient.geometry import euler_from_matrix, rotation_matrix

__all__ = ["COORDINATES", "NewtonResult", "newton", "settle", "StaticResult", "StaticProblem", "continue_step"]

COORDINATES = ("x", "y", "z", "rx", "ry", "rz")
S = TypeVar("S")  # a path's solution, whatever the solver returns
_STEP = np.array([1e-7] * 3 + [1e-7] * 3)


def _rotation(theta: np.ndarray) -> np.ndarray:
    """``exp([theta]x)`` (Rodrigues)."""
    a = float(np.linalg.norm(theta))
    K = np.array([[0, -theta[2], theta[1]], [theta[2], 0, -theta[0]], [-theta[1], theta[0], 0]])
    if a < 1e-12:
        return np.eye(3) + K
    return np.eye(3) + math.sin(a) / a * K + (1 - math.cos(a)) / a**2 * K @ K


def _axial(W: np.ndarray) -> np.ndarray:
    return np.array([W[2, 1] - W[1, 2], W[0, 2] - W[2, 0], W[1, 0] - W[0, 1]]) / 2


@dataclass
class NewtonResult:
    """A root search: the point ``x``, the residual ``f`` there, the Newton ``iterations`` taken,
    whether every ``|f_i| <= tol_i`` (``converged``) and the last ``jacobian`` (None if none was
    needed)."""

    x: np.ndarray
    f: np.ndarray
    iterations: int
    converged: bool
    jacobian: np.ndarray | None = None


def _central_differences(fun: Callable[[np.ndarray], np.ndarray], x: np.ndarray, m: int,
                         step: np.ndarray) -> np.ndarray:
    """The ``m`` x ``len(x)`` Jacobian of ``fun`` at ``x`` by central differences (steps ``step``)."""
    J = np.empty((m, len(x)))
    for col in range(len(x)):
        dx = np.zeros(len(x))
        dx[col] = step[col]
        J[:, col] = (fun(x + dx) - fun(x - dx)) / (2 * step[col])
    return J


def _shortened(dx: np.ndarray, max_step: np.ndarray | None) -> np.ndarray:
    """``dx`` scaled down (direction kept) so that no unknown moves further than its ``max_step``."""
    if max_step is None:
        return dx
    return dx * min(1.0, float(np.min(np.asarray(max_step) / np.maximum(np.abs(dx), 1e-300))))


def _merit_scale(f: np.ndarray) -> float:
    """A power of two (dividing by it is exact) that keeps the measures of a residual this large
    finite: 1 unless some ``|f|`` exceeds 1e150 (a knee loaded with 1e300 N)."""
    m = float(np.max(np.abs(f)))
    return math.ldexp(1.0, math.frexp(m)[1] - 1) if 1e150 < m < math.inf else 1.0  # (|f| / scale < 2)


def _weighed(f: np.ndarray, tol: np.ndarray, scale: float) -> np.ndarray:
    """``f / scale / tol``: inf, without a warning, where that overflows (a trial step's residual
    far larger than the start's, which is then rejected)."""
    with np.errstate(over="ignore"):
        return f / scale / tol


def _merit(f: np.ndarray, tol: np.ndarray, scale: float) -> float:
    """The line search's measure of a residual, ``sum((f / scale / tol)^2)`` (inf where it overflows)."""
    with np.errstate(over="ignore"):
        return float(np.sum(_weighed(f, tol, scale) ** 2))


def newton(fun: Callable[[np.ndarray], np.ndarray], x0: np.ndarray, *, tol: np.ndarray, step: np.ndarray,
           max_iter: int = 50, max_step: np.ndarray | None = None,
           unheld: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray | None] | None = None,
           jacobian: np.ndarray | None = None, min_step: float = 1 / 32) -> NewtonResult:
    """Solve ``fun(x) = 0`` (as many equations as unknowns) by Newton's method.

    The Jacobian by central differences with steps ``step`` (per unknown), the Newton step by least
    squares (a singular Jacobian gives the minimum-norm step), a backtracking line search on
    ``sum((f / tol)^2)`` (so mixed units weigh by their tolerances); ``max_step`` (per unknown)
    shortens a Newton step that would move any unknown further (a contact problem's first steps
    from a light touch would otherwise jump far past it). The search stops, not converged, after
    ``max_iter`` iterations or when no step along Newton's direction lowers the residual (a kink
    of ``fun``, or the noise of its evaluation). ``unheld(x, f, J)``, called
    before each step, may return a new ``x`` (e.g. a coordinate without stiffness moved along its
    load) or None to take the Newton step.

    ``jacobian``: a Jacobian to start from (e.g. the last solve's along a path,
    :attr:`NewtonResult.jacobian`). It is then updated by Broyden's rule after each step, and
    computed again by central differences only where a step along it fails to lower the residual:
    one evaluation per iteration where the Jacobian changes little, instead of ``2 n + 1``.

    ``min_step``: the shortest fraction of a step along a Jacobian just differenced that the line
    search tries before it gives up (a residual strongly curved along the step, such as a ligament
    bundle going slack, may fall only over a few thousandths of it)."""
    x = np.array(x0, float)
    tol = np.asarray(tol, float)
    f = fun(x)
    broyden = jacobian is not None
    J = np.array(jacobian, float) if broyden else None
    last = J  # the last Jacobian computed or updated, for the result
    fresh = False  # J by central differences at x
    it = 0
    while True:
        if np.all(np.abs(f) <= tol):
            return NewtonResult(x, f, it, True, last)
        if it == max_iter:
            return NewtonResult(x, f, max_iter, False, last)
        if J is None:
            J = _central_differences(fun, x, len(f), step)
            fresh, last = True, J
        moved = unheld(x, f, J) if unheld is not None else None
        if moved is not None:
            x, J = moved, None
            f = fun(x)
            it += 1
            continue
        if not (np.isfinite(J).all() and np.isfinite(f).all()):  # off fun's domain (where it is not finite)
            return NewtonResult(x, f, it + 1, False, last)
        dx = np.linalg.lstsq(J, -f, rcond=None)[0]
        if not np.isfinite(dx).all():  # (a residual so large that its step overflows)
            return NewtonResult(x, f, it + 1, False, last)
        dx = _shortened(dx, max_step)
        scale = _merit_scale(f)
        merit = _merit(f, tol, scale)
        lam = 1.0
        while True:
            trial = x + lam * dx
            ft = fun(trial)
            if _merit(ft, tol, scale) < (1 - 1e-4 * lam) * merit:
                break
            lam /= 2
            if lam < (min_step if fresh else 1 / 32):
                break
        if lam < (min_step if fresh else 1 / 32):  # no step lowers the residual
            if fresh:  # stalled (a kink, or noise in fun)
                return NewtonResult(x, f, it + 1, False, last)
            J = None  # an updated Jacobian gone stale: central differences at x, and again
            continue
        it += 1
        if broyden:
            s, y = trial - x, ft - f
            J = last = J + np.outer(y - J @ s, s) / float(s @ s)
            fresh = False
        else:
            J = None
        x, f = trial, ft


def settle(fun: Callable[[np.ndarray], np.ndarray], x0: np.ndarray, *, damping: np.ndarray, dt: float,
           tol: np.ndarray, step: np.ndarray, max_steps: int = 200,
           max_step: np.ndarray | None = None) -> NewtonResult:
    """The equilibrium ``fun(x) = 0`` that the viscous model ``damping * x' = fun(x)`` comes to rest
    in from ``x0``, by pseudo-transient continuation (Kelley & Keyes, SIAM J. Numer. Anal. 35, 1998).

    Each step is one implicit Euler step of the model, solved by one Newton iteration:
    ``(damping / dt - J) dx = fun(x)``, ``J`` by central differences with steps ``step``. The time
    step starts at ``dt`` (s; about the time constant ``damping / stiffness`` of the stiffest
    direction) and follows the residual (switched evolution relaxation: times the ratio of the
    last two residual norms, weighed by ``tol``, but at least doubled while the residual falls, so
    a slow direction does not hold it back, and at most tenfold a step; where the residual grows,
    at most five times shorter). Far from the equilibrium the steps follow the relaxation, so a
    released body finds the stable equilibrium it would settle in, where Newton alone may find an
    unstable one or wander; near it the time step grows without bound and the steps become
    Newton's, converging quadratically. Where ``J`` has an unstable mode (an eigenvalue ``mu > 0``
    of ``J / damping``: near a saddle, or a contact that does not hold yet) the time step is kept
    below ``0.5 / mu``, so the step moves away from the unstable equilibrium as the model does
    instead of towards it as Newton's does; the residual growing there shortens it only where it
    grows more than twice as fast as that mode does (``1 / (1 - dt mu)`` a step): an overshoot,
    into a stiff contact say. ``damping`` (per unknown, in ``fun``'s units per unit of ``x'``)
    weighs the unknowns against each other; ``max_step`` (per unknown) shortens a step that would
    move any unknown further. A step to where ``fun`` is not finite (off its domain) is taken again,
    five times shorter; a start where it is not finite is a :class:`SimulationError`. Converged
    when every ``|f_i| <= tol_i``; else not converged after ``max_steps`` steps. A step costs
    ``2 n + 1`` evaluations of ``fun`` (one where it is taken again)."""
    x = np.array(x0, float)
    tol = np.asarray(tol, float)
    c = np.asarray(damping, float)
    f = fun(x)
    if not np.all(np.isfinite(f)):
        raise SimulationError(f"settle: the residual at the start x0 = {x.tolist()} is not finite: {f.tolist()}")
    J, last = None, None
    unstable = 0.0
    for k in range(max_steps):
        if np.all(np.abs(f) <= tol):
            return NewtonResult(x, f, k, True, last)
        if J is None:
            J = last = _central_differences(fun, x, len(f), step)
            unstable = float(np.max(np.linalg.eigvals(J / c[:, None]).real))
        if unstable > 0:
            dt = min(dt, 0.5 / unstable)
        dx = np.linalg.solve(np.diag(c / dt) - J, f)
        if not np.all(np.isfinite(dx)):  # (a residual so large that the step overflows): shorter
            dt *= 0.2
            continue
        dx = _shortened(dx, max_step)
        f_new = fun(x + dx)
        if not np.all(np.isfinite(f_new)):  # a step off the model's domain: shorter, from the same x
            dt *= 0.2
            continue
        scale = _merit_scale(f)
        with np.errstate(over="ignore"):
            ratio = float(np.linalg.norm(_weighed(f, tol, scale))
                          / max(float(np.linalg.norm(_weighed(f_new, tol, scale))), 1e-300))
        # where no mode is unstable, a residual that grows shortens the time step; along an
        # unstable mode, which grows by 1 / (1 - dt mu) a step, only one growing more than twice
        # that (an overshoot, into a stiff contact say)
        grows = ratio < (1.0 if unstable <= 0 else 0.5 * (1 - dt * unstable))
        dt *= max(ratio, 0.2) if grows else min(10.0, max(ratio, 2.0))
        x, f, J = x + dx, f_new, None
    return NewtonResult(x, f, max_steps, bool(np.all(np.abs(f) <= tol)), last)


def _flat_columns(J: np.ndarray) -> list[int]:
    """The columns of ``J`` that are zero (nothing stiffens those unknowns)."""
    scale = np.abs(J).max()
    return [col for col in range(J.shape[1]) if scale == 0 or not np.abs(J[:, col]).max() > 1e-9 * scale]


@dataclass
class StaticResult:
    """One equilibrium: load step ``s``, the six coordinates ``q`` (m, rad), whether it
    ``converged``, the largest free force and moment residuals (N, N m), Newton iterations and a
    message."""

    s: float
    q: np.ndarray
    converged: bool
    residual_N: float
    residual_Nm: float
    iterations: int
    message: str = ""
    #: the last Jacobian of the free generalized forces in the free coordinates (N/m, N, N m/rad),
    #: for the path's tangent from here
    jacobian: np.ndarray | None = field(default=None, repr=False, compare=False)


class StaticProblem:
    """Equilibrium of ``body`` in ``system`` (the other bodies stay at their initial states).

    ``prescribed`` maps coordinate names (:data:`COORDINATES`) to a value or a function of the
    load step; ``tol_N`` and ``tol_Nm`` bound the free residuals; ``max_iter`` Newton iterations
    per solve."""

    def __init__(self, system: MultibodySystem, body: Body,
                 prescribed: Mapping[str, float | Callable[[float], float]] | None = None, *,
                 tol_N: float = 1e-6, tol_Nm: float = 1e-6, max_iter: int = 50) -> None:
        if body.fixed or body not in system.free:
            raise ParameterError(f"static: body {body.name!r} is not a free body of the system")
        prescribed = dict(prescribed or {})
        unknown = set(prescribed) - set(COORDINATES)
        if unknown:
            raise ParameterError(f"static: unknown coordinate(s) {sorted(unknown)}; choose from {', '.join(COORDINATES)}")
        self.free = [k for k, c in enumerate(COORDINATES) if c not in prescribed]
        if not self.free:
            raise ParameterError("static: every coordinate is prescribed; nothing to solve")
        self.system, self.body, self.prescribed = system, body, prescribed
        self.tol_N, self.tol_Nm, self.max_iter = tol_N, tol_Nm, max_iter
        self._y0 = system.initial_state()
        self._k = 13 * system.index[id(body)]
        self._A0 = rotation_matrix(np.asarray(body.euler, float) / np.linalg.norm(body.euler))
        self._row = system.body_index(body)

    def initial(self, s: float = 0.0) -> np.ndarray:
        """The coordinates of the body's initial pose, with the prescribed ones at step ``s``."""
        return self._prescribe(np.concatenate([self.body.position, np.zeros(3)]), s)

    def _prescribe(self, q: np.ndarray, s: float) -> np.ndarray:
        q = q.copy()
        for name, value in self.prescribed.items():
            q[COORDINATES.index(name)] = value(s) if callable(value) else value
        return q

    def _pose(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return q[:3], _rotation(q[3:]) @ self._A0

    def generalized_forces(self, q: np.ndarray, s: float) -> np.ndarray:
        """``Q`` (N for x, y, z; N m for rx, ry, rz) at coordinates ``q`` and load step ``s``."""
        r, A = self._pose(q)
        y = self._y0.copy()
        y[self._k:self._k + 3] = r
        y[self._k + 3:self._k + 7] = euler_from_matrix(A)
        y[self._k + 7:self._k + 13] = 0.0
        self.system.set_state(y)
        F, N = self.system.applied(s, every_contact=True)
        f = F[self._row] + self.body.mass * np.asarray(self.system.gravity, float)
        n = N[self._row]
        # rotational rows: T(theta)^T n, T's columns the angular velocities of d theta_i (numerically)
        R0 = _rotation(q[3:])
        T = np.empty((3, 3))
        for i in range(3):
            e = np.zeros(3)
            e[i] = 1e-7
            T[:, i] = _axial((_rotation(q[3:] + e) - _rotation(q[3:] - e)) / 2e-7 @ R0.T)
        return np.concatenate([f, T.T @ n])

    def _residuals(self, Q: np.ndarray) -> tuple[float, float]:
        trans = [abs(Q[k]) for k in self.free if k < 3]
        rot = [abs(Q[k]) for k in self.free if k >= 3]
        return max(trans, default=0.0), max(rot, default=0.0)

    def solve(self, s: float, q0: np.ndarray | None = None) -> StaticResult:
        """Equilibrium at load step ``s`` from ``q0`` (default: the initial pose)."""
        q = self._prescribe(self.initial(s) if q0 is None else np.asarray(q0, float), s)
        free = np.array(self.free)
        tol = np.where(free < 3, self.tol_N, self.tol_Nm)

        def fun(x: np.ndarray) -> np.ndarray:
            q[free] = x
            return self.generalized_forces(q, s)[free]

        def unheld(x: np.ndarray, Qf: np.ndarray, J: np.ndarray) -> np.ndarray | None:
            # no stiffness along these: a load moves them until something (a contact closing)
            # holds them; without a load nothing ever will
            loose = _flat_columns(J)
            if not loose:
                return None
            idle = [self.free[c] for c in loose if abs(Qf[c]) <= tol[c]]
            if idle:
                raise ParameterError(f"static: no load holds the free coordinate(s) "
                                     f"{', '.join(COORDINATES[k] for k in idle)} of body {self.body.name!r}; prescribe them")
            q[free] = x
            return self._advance(q, s, [self.free[c] for c in loose], self.generalized_forces(q, s))[free]

        try:
            r = newton(fun, q[free].copy(), tol=tol, step=_STEP[free], max_iter=self.max_iter, unheld=unheld)
        except ContactError as exc:
            return self._result(s, q, np.full(6, np.nan), 0, False, f"step s = {s:g}: contact detection failed ({exc})")
        q[free] = r.x
        Q = self.generalized_forces(q, s)
        if r.converged:
            return self._result(s, q, Q, r.iterations, True, "converged", r.jacobian)
        return self._result(s, q, Q, r.iterations, False, f"step s = {s:g}: no equilibrium after {self.max_iter} "
                                                          "Newton iterations")

    def _advance(self, q: np.ndarray, s: float, loose: list[int], Q: np.ndarray) -> np.ndarray:
        """Move the loose coordinates along their loads, in doubling steps from 10 um (or urad),
        until each meets some stiffness; :class:`ParameterError` if none does within 10 m (rad)."""
        q = q.copy()
        for k in loose:
            h, moved = 1e-5, 0.0
            while moved < 10.0:
                q[k] += math.copysign(h, Q[k])
                moved += h
                dq = np.zeros(6)
                dq[k] = _STEP[k]
                column = self.generalized_forces(q + dq, s) - self.generalized_forces(q - dq, s)
                if np.abs(column[self.free]).max() > 0:
                    break
                h *= 2
            else:
                raise ParameterError(f"static: nothing holds coordinate {COORDINATES[k]} of body {self.body.name!r} "
                                     "under its load; prescribe it or add a load that holds it")
        return q

    def _result(self, s: float, q: np.ndarray, Q: np.ndarray, it: int, ok: bool, message: str,
                jacobian: np.ndarray | None = None) -> StaticResult:
        rN, rM = self._residuals(Q) if np.isfinite(Q).all() else (math.inf, math.inf)
        return StaticResult(s, q.copy(), ok, rN, rM, it, message, jacobian)

    def predicted(self, result: StaticResult, s: float) -> np.ndarray:
        """The start for the solve at load step ``s`` from the equilibrium ``result``: its free
        coordinates moved along the path's tangent (:func:`tangent_step`, with the result's
        Jacobian), unmoved where it has none or did not converge."""
        if result.jacobian is None or not result.converged or s == result.s:
            return result.q
        free = np.array(self.free)

        def residual(s_: float) -> np.ndarray:
            return self.generalized_forces(self._prescribe(result.q, s_), s_)[free]

        q = result.q.copy()
        try:
            q[free] += tangent_step(result.jacobian, residual, result.s, s, 1e-3 * abs(s - result.s))
        except ContactError:  # (the differences stepped off a table: no tangent)
            pass
        return q

    def path(self, steps: Sequence[float], q0: np.ndarray | None = None, max_halvings: int = 6) -> list[StaticResult]:
        """Equilibria along the load steps ``steps`` by continuation; an increment that fails is
        split in halves (at most ``max_halvings`` times, :func:`continue_step`); the path stops at a
        step that still fails (its result, not converged, is the last)."""
        out: list[StaticResult] = []
        for s in steps:
            if not out:
                res = self.solve(s, None if q0 is None else np.asarray(q0, float))
            else:
                res = continue_step(lambda s_, r: self.solve(s_, self.predicted(r, s_)), lambda r: r.converged,
                                    out[-1].s, s, out[-1], max_halvings)
            out.append(res)
            if not res.converged:
                break
        return out


def tangent_step(jacobian: np.ndarray, residual: Callable[[float], np.ndarray], s_prev: float, s: float,
                 h: float) -> np.ndarray:
    """The unknowns' first-order change along a path from a solution at ``s_prev`` to ``s``:
    ``dx = -J^-1 (dr/ds) (s - s_prev)``, with ``J`` the Jacobian of the residual in the unknowns
    there and ``dr/ds`` the residual's derivative along the path at those unknowns (``residual(s')``
    by central differences of step ``h``). Started from ``x + dx``, a solve begins second-order close
    to the next solution rather than first-order (a stiff contact's bodies, held still while the
    path moves on, may start out of contact or deep in it). Zeros where ``dx`` is not finite."""
    slope = (residual(s_prev + h) - residual(s_prev - h)) / (2 * h)
    if jacobian.shape != (len(slope), len(slope)):
        raise ParameterError(f"tangent_step: a Jacobian of shape {jacobian.shape} for {len(slope)} residuals")
    dx = -np.linalg.lstsq(jacobian, slope, rcond=None)[0] * (s - s_prev)
    return dx if np.isfinite(dx).all() else np.zeros_like(dx)


def continue_step(solve: Callable[[float, S], S], converged: Callable[[S], bool], s_prev: float, s: float, start: S,
                  max_halvings: int = 6) -> S:
    """The solution at path parameter ``s`` continued from ``start``, the solution at ``s_prev``.

    ``solve(s, state)`` solves at ``s`` from ``state``; ``converged(state)`` says whether it did.
    Where the step from ``s_prev`` to ``s`` does not converge, it is split into 2, 4, ... (at most
    ``2**max_halvings``) equal steps, each solved from the last; the first split that converges
    throughout gives the result. If none does, the unsplit attempt's result (not converged, at
    ``s``) is returned."""
    first = solve(s, start)
    if converged(first):
        return first
    for depth in range(1, max_halvings + 1):
        state = start
        for k in range(1, 2**depth + 1):
            state = solve(s_prev + (s - s_prev) * k / 2**depth, state)
            if not converged(state):
                break
        else:
            return state
    return first
