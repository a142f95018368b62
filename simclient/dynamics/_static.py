"""Quasi-static equilibrium: one front door, :class:`StaticProblem`.

A problem is a residual ``r(x, s)``: the generalized forces of its coordinates ``x`` (one per
coordinate; N for a translation, N m for a rotation, or whatever units the caller's coordinates
have) at a load or path parameter ``s``, with a tolerance, a central-difference step and,
optionally, a largest step and a viscous damping per coordinate. Its strategies each return a
:class:`StaticResult`, data (coordinates, residuals, converged, iterations, message, Jacobian):

- :meth:`StaticProblem.newton`: Newton's method with a backtracking line search (central-difference
  Jacobian, or Broyden updates of a Jacobian handed in), a stall reported where no step helps;
- :meth:`StaticProblem.settle`: pseudo-transient continuation, the equilibrium the viscous model
  ``damping x' = r(x)`` comes to rest in (the stable one a released body finds);
- :meth:`StaticProblem.slide`: one coordinate moved along its force, the others solved at each
  place (``hold``), until the force turns, then its zero by Brent's method (an equilibrium on a kink);
- :meth:`StaticProblem.path`, :meth:`StaticProblem.tangent` and :meth:`StaticProblem.continued`: a
  load path by continuation, each step started on the path's tangent, an increment that fails split
  in halves.

:class:`BodyEquilibrium` is the problem of one body of a :class:`MultibodySystem` (Blankevoort's
eq. 18): its six coordinates ``q = (x, y, z, rx, ry, rz)``, the origin's position (m, global) and a
rotation vector (rad) from its initial orientation, ``A = exp([q_r]x) A0``, any of them prescribed
as a constant or a function of ``s`` (the loads see ``s`` as their time). Equilibrium: the free
generalized forces vanish, ``Q = J^T (F + m g, N) = 0``; every contact counts whenever it indents
(velocities are zero, so dissipative laws give their elastic part). A free coordinate without
stiffness (a zero column of the Jacobian: a contact still open) is moved along its load in doubling
steps until something holds it; one with neither stiffness nor load is an input error naming it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np

from simclient.dynamics._bodies import Body
from simclient.dynamics._roots import find_root
from simclient.dynamics._system import MultibodySystem
from simclient.errors import ContactError, ParameterError, SimulationError
from simclient.geometry import euler_from_matrix, rotation_matrix

__all__ = ["StaticProblem", "StaticResult", "BodyEquilibrium", "COORDINATES"]

COORDINATES = ("x", "y", "z", "rx", "ry", "rz")
S = TypeVar("S")  # a path's solution, whatever the solver returns
_STEP = np.array([1e-7] * 3 + [1e-7] * 3)
Residual = Callable[[np.ndarray, float], np.ndarray]


@dataclass
class StaticResult:
    """One solve: the coordinates ``x`` reached, the residual ``f`` there, whether every
    ``|f_i| <= tol_i`` (``converged``), the iterations (or pseudo-time steps) taken, a ``message``
    saying what happened, the last ``jacobian`` (None if none was needed) and the load step ``s``."""

    x: np.ndarray
    f: np.ndarray
    iterations: int
    converged: bool
    jacobian: np.ndarray | None = field(default=None, repr=False, compare=False)
    message: str = ""
    s: float = 0.0


class StaticProblem:
    """Equilibrium ``residual(x, s) = 0`` of ``len(tol)`` coordinates (see the module docstring).

    ``tol``: per coordinate, the largest residual accepted (the residual's units); ``step``: the
    central-difference steps of the Jacobian (the coordinates' units); ``max_step``: the largest
    step any solve takes along each coordinate; ``damping``: the viscous model's damping per
    coordinate (the residual's units per unit of ``x'``, for :meth:`settle`); ``max_iter``: Newton's
    iterations; ``min_step``: the shortest fraction of a freshly differenced Newton step the line
    search tries; ``names``: the coordinates' names, for messages."""

    def __init__(self, residual: Residual, *, tol: Sequence[float] | np.ndarray, step: Sequence[float] | np.ndarray,
                 max_step: Sequence[float] | np.ndarray | None = None,
                 damping: Sequence[float] | np.ndarray | None = None, max_iter: int = 50, min_step: float = 1 / 32,
                 names: Sequence[str] | None = None) -> None:
        self.residual = residual
        self.tol = np.asarray(tol, float)
        self.step = np.asarray(step, float)
        self.max_step = None if max_step is None else np.asarray(max_step, float)
        self.damping = None if damping is None else np.asarray(damping, float)
        self.max_iter, self.min_step = max_iter, min_step
        self.names = tuple(names) if names is not None else tuple(f"x{k}" for k in range(len(self.tol)))
        for what, v in (("step", self.step), ("max_step", self.max_step), ("damping", self.damping)):
            if v is not None and v.shape != self.tol.shape:
                raise ParameterError(f"static: {what} has {v.size} entries for {self.tol.size} coordinates")

    def newton(self, x0: np.ndarray, s: float = 0.0, *, jacobian: np.ndarray | None = None,
               unheld: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray | None] | None = None) -> StaticResult:
        """Equilibrium at ``s`` from ``x0`` by Newton's method (see :func:`_newton`); ``jacobian``
        to start from (then updated by Broyden's rule); ``unheld(x, f, J)`` may move ``x`` before a
        step (a coordinate without stiffness)."""
        r = _newton(lambda x: self.residual(x, s), x0, tol=self.tol, step=self.step, max_iter=self.max_iter,
                    max_step=self.max_step, unheld=unheld, jacobian=jacobian, min_step=self.min_step)
        r.s = s
        r.message = "converged" if r.converged else (f"no equilibrium at s = {s:g} after {r.iterations} Newton "
                                                     "iterations (or a stall: no step lowers the residual)")
        return r

    def settle(self, x0: np.ndarray, s: float = 0.0, *, dt: float, max_steps: int = 200) -> StaticResult:
        """Where the viscous model ``damping x' = residual(x, s)`` released at ``x0`` comes to rest
        (pseudo-transient continuation from the time step ``dt``, s; at most ``max_steps`` steps;
        see :func:`_settle`)."""
        if self.damping is None:
            raise ParameterError("static: settle needs the problem's damping")
        r = _settle(lambda x: self.residual(x, s), x0, damping=self.damping, dt=dt, tol=self.tol, step=self.step,
                    max_steps=max_steps, max_step=self.max_step)
        r.s = s
        r.message = "converged" if r.converged else f"not at rest at s = {s:g} after {max_steps} pseudo-time steps"
        return r

    def slide(self, x0: np.ndarray, coordinate: int, s: float = 0.0, *, hold: Callable[[np.ndarray], np.ndarray],
              force: Callable[[np.ndarray], float] | None = None, first: float, reach: float,
              xtol: float) -> StaticResult:
        """Equilibrium along one coordinate: ``x0[coordinate]`` moved along its force in doubling
        steps from ``first`` until the force turns (at most ``reach`` away), ``hold(x)`` solving the
        other coordinates with it held at each place, then the force's zero by Brent's method to
        ``xtol``. ``force(x)`` is the coordinate's force (default: its residual). For an equilibrium
        on a kink of the residual, which Newton and a settle step across and back. Not converged
        (at ``x0``) where the force does not turn within ``reach``."""
        def held(c: float) -> tuple[float, np.ndarray]:
            x = np.array(x0, float)
            x[coordinate] = c
            x = hold(x)
            return (force(x) if force is not None else float(self.residual(x, s)[coordinate])), x

        start = float(x0[coordinate])
        a, (fa, _) = start, held(start)
        b, h = a, first
        while True:
            # (the last step ends at the reach, not beyond it: a turn between the doubled steps'
            # last point and the reach is found too)
            b = min(max(b + math.copysign(h, fa), start - reach), start + reach)
            fb, _ = held(b)
            if fa * fb <= 0:
                break
            if abs(b - start) >= reach:
                x = np.array(x0, float)
                return StaticResult(x, self.residual(x, s), 0, False, None,
                                    f"{self.names[coordinate]}'s force does not turn within {reach:g}", s)
            a, fa, h = b, fb, 2 * h
        x = held(find_root(lambda c: held(c)[0], min(a, b), max(a, b), xtol=xtol))[1]
        f = self.residual(x, s)
        return StaticResult(x, f, 0, bool(np.all(np.abs(f) <= self.tol)), None, "slid", s)

    def tangent(self, result: StaticResult, s: float, h: float) -> np.ndarray:
        """The start for the solve at ``s`` from the equilibrium ``result``: its coordinates moved
        along the path's tangent, ``dx = -J^-1 (dr/ds) (s - s_prev)`` with the result's Jacobian and
        ``dr/ds`` by central differences of step ``h`` (see :func:`_tangent_step`); unmoved where
        it has no Jacobian, did not converge, or the differences leave the model (a table)."""
        if result.jacobian is None or not result.converged:
            return result.x
        try:
            return result.x + _tangent_step(result.jacobian, lambda s_: self.residual(result.x, s_), result.s, s, h)
        except ContactError:  # (the differences stepped off a table: no tangent)
            return result.x

    @staticmethod
    def continued(solve: Callable[[float, S], S], converged: Callable[[S], bool], s_prev: float, s: float, start: S,
                  max_halvings: int = 6) -> S:
        """The solution at path parameter ``s`` continued from ``start``, the solution at
        ``s_prev``, by ``solve(s, state)``; a step that does not converge split in halves (at most
        ``2**max_halvings`` parts, see :func:`_continue_step`)."""
        return _continue_step(solve, converged, s_prev, s, start, max_halvings)

    def path(self, steps: Sequence[float], x0: np.ndarray, *, max_halvings: int = 6) -> list[StaticResult]:
        """Equilibria along the load steps ``steps`` by Newton, each step started on the path's
        tangent (:meth:`tangent`, differences of 1e-3 of the step), an increment that fails split
        in halves; the path stops at a step that still fails (its result, not converged, is the last)."""
        out: list[StaticResult] = []
        for s in steps:
            if not out:
                res = self.newton(np.asarray(x0, float), s)
            else:
                res = self.continued(lambda s_, r: self.newton(self.tangent(r, s_, 1e-3 * abs(s_ - r.s)), s_,
                                                               jacobian=r.jacobian),
                                     lambda r: r.converged, out[-1].s, s, out[-1], max_halvings)
            out.append(res)
            if not res.converged:
                break
        return out


# -- the strategies' algorithms ------------------------------------------------------------

def _rotation(theta: np.ndarray) -> np.ndarray:
    """``exp([theta]x)`` (Rodrigues)."""
    a = float(np.linalg.norm(theta))
    K = np.array([[0, -theta[2], theta[1]], [theta[2], 0, -theta[0]], [-theta[1], theta[0], 0]])
    if a < 1e-12:
        return np.eye(3) + K
    return np.eye(3) + math.sin(a) / a * K + (1 - math.cos(a)) / a**2 * K @ K


def _axial(W: np.ndarray) -> np.ndarray:
    return np.array([W[2, 1] - W[1, 2], W[0, 2] - W[2, 0], W[1, 0] - W[0, 1]]) / 2


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


def _newton(fun: Callable[[np.ndarray], np.ndarray], x0: np.ndarray, *, tol: np.ndarray, step: np.ndarray,
           max_iter: int = 50, max_step: np.ndarray | None = None,
           unheld: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray | None] | None = None,
           jacobian: np.ndarray | None = None, min_step: float = 1 / 32) -> StaticResult:
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
            return StaticResult(x, f, it, True, last)
        if it == max_iter:
            return StaticResult(x, f, max_iter, False, last)
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
            return StaticResult(x, f, it + 1, False, last)
        dx = np.linalg.lstsq(J, -f, rcond=None)[0]
        if not np.isfinite(dx).all():  # (a residual so large that its step overflows)
            return StaticResult(x, f, it + 1, False, last)
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
                return StaticResult(x, f, it + 1, False, last)
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


def _settle(fun: Callable[[np.ndarray], np.ndarray], x0: np.ndarray, *, damping: np.ndarray, dt: float,
           tol: np.ndarray, step: np.ndarray, max_steps: int = 200,
           max_step: np.ndarray | None = None) -> StaticResult:
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
            return StaticResult(x, f, k, True, last)
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
    return StaticResult(x, f, max_steps, bool(np.all(np.abs(f) <= tol)), last)


def _flat_columns(J: np.ndarray) -> list[int]:
    """The columns of ``J`` that are zero (nothing stiffens those unknowns)."""
    scale = np.abs(J).max()
    return [col for col in range(J.shape[1]) if scale == 0 or not np.abs(J[:, col]).max() > 1e-9 * scale]


class BodyEquilibrium:
    """Equilibrium of ``body`` in ``system`` (the other bodies stay at their initial states): its
    six coordinates (:data:`COORDINATES`; see the module docstring), ``prescribed`` mapping names to
    a value or a function of the load step; ``tol_N`` and ``tol_Nm`` bound the free residuals;
    ``max_iter`` Newton iterations per solve. Results hold all six coordinates in ``x`` and their
    generalized forces in ``f`` (N, N m)."""

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
        free = np.array(self.free)
        self.problem = StaticProblem(self._free_residual, tol=np.where(free < 3, tol_N, tol_Nm), step=_STEP[free],
                                     max_iter=max_iter, names=[COORDINATES[k] for k in self.free])
        self._q = self.initial()  # the prescribed coordinates' values the free residual sees

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

    def _free_residual(self, x: np.ndarray, s: float) -> np.ndarray:
        q = self._prescribe(self._q, s)
        q[self.free] = x
        return self.generalized_forces(q, s)[self.free]

    def residuals(self, result: StaticResult) -> tuple[float, float]:
        """The largest free force (N) and moment (N m) residuals of ``result``."""
        if not np.isfinite(result.f).all():
            return math.inf, math.inf
        trans = [abs(result.f[k]) for k in self.free if k < 3]
        rot = [abs(result.f[k]) for k in self.free if k >= 3]
        return max(trans, default=0.0), max(rot, default=0.0)

    def solve(self, s: float, q0: np.ndarray | None = None, jacobian: np.ndarray | None = None) -> StaticResult:
        """Equilibrium at load step ``s`` from ``q0`` (default: the initial pose)."""
        q = self._prescribe(self.initial(s) if q0 is None else np.asarray(q0, float), s)
        self._q = q
        free = self.free
        tol = self.problem.tol

        def unheld(x: np.ndarray, Qf: np.ndarray, J: np.ndarray) -> np.ndarray | None:
            # no stiffness along these: a load moves them until something (a contact closing)
            # holds them; without a load nothing ever will
            loose = _flat_columns(J)
            if not loose:
                return None
            idle = [free[c] for c in loose if abs(Qf[c]) <= tol[c]]
            if idle:
                raise ParameterError(f"static: no load holds the free coordinate(s) "
                                     f"{', '.join(COORDINATES[k] for k in idle)} of body {self.body.name!r}; prescribe them")
            q[free] = x
            return self._advance(q, s, [free[c] for c in loose], self.generalized_forces(q, s))[free]

        try:
            r = self.problem.newton(q[free].copy(), s, jacobian=jacobian, unheld=unheld)
        except ContactError as exc:
            return StaticResult(q.copy(), np.full(6, np.nan), 0, False, None,
                                f"step s = {s:g}: contact detection failed ({exc})", s)
        q[free] = r.x
        Q = self.generalized_forces(q, s)
        message = "converged" if r.converged else f"step s = {s:g}: no equilibrium after {self.max_iter} Newton iterations"
        return StaticResult(q.copy(), Q, r.iterations, r.converged, r.jacobian, message, s)

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

    def predicted(self, result: StaticResult, s: float) -> np.ndarray:
        """The start for the solve at load step ``s`` from the equilibrium ``result``: its free
        coordinates moved along the path's tangent (:meth:`StaticProblem.tangent`, differences of
        1e-3 of the step), unmoved where it has no Jacobian or did not converge."""
        if s == result.s:
            return result.x
        self._q = result.x
        free_result = StaticResult(result.x[self.free], result.f[self.free], result.iterations, result.converged,
                                   result.jacobian, result.message, result.s)
        q = result.x.copy()
        q[self.free] = self.problem.tangent(free_result, s, 1e-3 * abs(s - result.s))
        return q

    def path(self, steps: Sequence[float], q0: np.ndarray | None = None, max_halvings: int = 6) -> list[StaticResult]:
        """Equilibria along the load steps ``steps`` by continuation (:meth:`predicted` starts, an
        increment that fails split in halves, :meth:`StaticProblem.continued`); the path stops at a
        step that still fails (its result, not converged, is the last)."""
        out: list[StaticResult] = []
        for s in steps:
            if not out:
                res = self.solve(s, None if q0 is None else np.asarray(q0, float))
            else:
                res = StaticProblem.continued(lambda s_, r: self.solve(s_, self.predicted(r, s_)), lambda r: r.converged,
                                              out[-1].s, s, out[-1], max_halvings)
            out.append(res)
            if not res.converged:
                break
        return out


def _tangent_step(jacobian: np.ndarray, residual: Callable[[float], np.ndarray], s_prev: float, s: float,
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


def _continue_step(solve: Callable[[float, S], S], converged: Callable[[S], bool], s_prev: float, s: float, start: S,
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
