"""One front door for every integrator: :func:`integrate` for any ODE, :func:`simulate` for a
:class:`MultibodySystem` with contact events.

:data:`METHODS` holds scipy's ``solve_ivp`` methods by name (``RK23``, ``RK45``, ``DOP853``,
``Radau``, ``BDF``, ``LSODA``), ``rk4``, the thesis' classical fixed-step Runge-Kutta written as a
scipy ``OdeSolver`` (:class:`RK4`), and ``DOP853-jit``, scipy's DOP853 with compiled stages
(:class:`simclient.dynamics.CompiledDOP853`: the same steps and results to round-off). Events are
located the same way for every method: by root finding on the solver's dense output; :func:`simulate`
also looks inside each step for contacts shorter than the step (see :func:`_event_root`). A subclass
of ``OdeSolver`` can be passed as ``method`` too. An unknown method is a
:class:`simclient.errors.ParameterError` listing the methods; an integrator failure is a status of
the result, never an exception.
"""

from __future__ import annotations

import bisect
import functools
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from scipy.integrate import BDF, DOP853, LSODA, RK23, RK45, DenseOutput, OdeSolution, OdeSolver, Radau, solve_ivp
from scipy.optimize import brentq, minimize_scalar

from simclient.contact import ContactPair
from simclient.dynamics._compiled import CompiledDOP853, compile_system, gap_probe
from simclient.errors import ContactError, ParameterError, SimulationError

__all__ = ["METHODS", "RK4", "solver_class", "integrate", "simulate", "SimulationResult", "System", "ForwardJacobian"]

#: restarts of a segment with smaller steps after a failed contact detection (see :func:`simulate`)
MAX_RETRIES = 3
#: half-width (m) of the band around a zero gap that an event must cross: the state at an event is
#: put at the root, where the gap can be exactly zero, and an event function that starts at zero
#: would fire again at once (scipy counts a zero as a crossing), switching the contact back and
#: forth without time advancing
EVENT_HYSTERESIS = 1e-12
#: (m) an onset whose detection finds the bodies further apart than this is not one (see simulate)
FALSE_ONSET_GAP = 1e-9
#: (s) the shortest step a bound from following the windows may ask for (a guard: a contact point
#: at a window's edge would ask for none)
MIN_FOLLOW_STEP = 1e-9
#: (s) how far ahead the bodies' rigid motion is probed for the rates of a contact's points where
#: following starts (after a contact or at the start): short, so that the chord is the tangent, and
#: long enough for motions of micrometres per second to move the points by more than the solve's
#: tolerance
FOLLOW_PROBE_TIME = 1e-6
#: (m) contacts whose bodies' bounding volumes are further apart than this are not followed: their
#: steps end before the volumes can come within half of it (conservative advancement)
FOLLOW_MARGIN = 1e-3
#: (s, wall) the shortest time between two calls of simulate's ``progress``: a long run reports as it
#: goes, a short one not at all
PROGRESS_EVERY = 1.0


class RK4(OdeSolver):
    """Classical fourth-order Runge-Kutta with a fixed step ``h`` (s), the last step shortened to
    end at ``t_bound``. Dense output: the cubic Hermite interpolant of each step from its end values
    and slopes (the slope at a step's end is the next step's first stage, so a step costs four
    evaluations). ``rtol``, ``atol`` and ``max_step`` do not apply and are ignored."""

    t: float
    y: np.ndarray

    def __init__(self, fun: Callable, t0: float, y0: np.ndarray, t_bound: float, h: float = 1e-5,
                 vectorized: bool = False, **extraneous: Any) -> None:
        if not (h > 0 and np.isfinite(h)):
            raise ParameterError(f"rk4: the step h must be positive (s), got {h}")
        super().__init__(fun, t0, y0, t_bound, vectorized, support_complex=False)
        self.h = float(h)
        self.f = self.fun(self.t, self.y)
        self.y_old: np.ndarray | None = None
        self.f_old: np.ndarray | None = None

    def _step_impl(self) -> tuple[bool, str | None]:
        t, y, k1 = self.t, self.y, self.f
        remaining = abs(self.t_bound - t)
        h = (remaining if remaining <= self.h * (1 + 1e-12) else self.h) * self.direction
        k2 = self.fun(t + h / 2, y + h / 2 * k1)
        k3 = self.fun(t + h / 2, y + h / 2 * k2)
        k4 = self.fun(t + h, y + h * k3)
        y_new = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        t_new = self.t_bound if remaining <= self.h * (1 + 1e-12) else t + h
        self.y_old, self.f_old = y, k1
        self.t, self.y = t_new, y_new
        self.f = self.fun(t_new, y_new)
        return True, None

    def _dense_output_impl(self) -> DenseOutput:
        assert self.t_old is not None and self.y_old is not None and self.f_old is not None
        return _CubicHermite(self.t_old, self.t, self.y_old, self.y, self.f_old, self.f)


class _CubicHermite(DenseOutput):
    """The cubic through ``(t_old, y_old)`` and ``(t, y)`` with slopes ``f_old`` and ``f``."""

    def __init__(self, t_old: float, t: float, y_old: np.ndarray, y: np.ndarray, f_old: np.ndarray,
                 f: np.ndarray) -> None:
        super().__init__(t_old, t)
        self.h = t - t_old
        self.y0, self.y1, self.m0, self.m1 = y_old, y, self.h * f_old, self.h * f

    def _call_impl(self, t: np.ndarray | float) -> np.ndarray:
        s = (np.asarray(t, dtype=float) - self.t_old) / self.h
        s2, s3 = s * s, s * s * s
        w = (2 * s3 - 3 * s2 + 1, s3 - 2 * s2 + s, -2 * s3 + 3 * s2, s3 - s2)
        if np.ndim(s) == 0:
            return w[0] * self.y0 + w[1] * self.m0 + w[2] * self.y1 + w[3] * self.m1
        return (np.outer(self.y0, w[0]) + np.outer(self.m0, w[1]) + np.outer(self.y1, w[2])
                + np.outer(self.m1, w[3]))


class ForwardJacobian:
    """The Jacobian ``d fun / d y`` (``jac(t, y)``) by forward differences, the step of each state
    ``y_j`` being ``sqrt(eps) max(|y_j|, atol_j / rtol)``; ``evaluations`` counts the calls of
    ``fun``. What :func:`simulate` gives ``Radau`` and ``BDF``: scipy's own estimate (``num_jac``)
    grows the step of a state the right-hand side does not depend on tenfold at each estimate,
    without bound (a body's position in free flight, or along a flat ground), and at a ball's
    first impact on the ground it put the ball 0.34 m off its ground table, where the contact had
    no counterpart, and the run failed."""

    def __init__(self, fun: Callable[[float, np.ndarray], np.ndarray], rtol: float, atol: float | np.ndarray) -> None:
        self.fun, self.rtol, self.atol = fun, rtol, atol
        self.evaluations = 0

    def __call__(self, t: float, y: np.ndarray) -> np.ndarray:
        f = self.fun(t, y)
        steps = math.sqrt(np.finfo(float).eps) * np.maximum(np.abs(y), np.asarray(self.atol) / self.rtol)
        J = np.empty((len(f), len(y)))
        for j, h in enumerate(steps):
            yj = y.copy()
            yj[j] += h
            J[:, j] = (self.fun(t, yj) - f) / (yj[j] - y[j])  # (the step as represented)
        self.evaluations += len(y) + 1
        return J


#: integration methods by name
METHODS: dict[str, type[OdeSolver]] = {"RK23": RK23, "RK45": RK45, "DOP853": DOP853, "Radau": Radau, "BDF": BDF,
                                       "LSODA": LSODA, "rk4": RK4, "DOP853-jit": CompiledDOP853}


class _GroupedNorm:
    """The error norm of scipy's explicit Runge-Kutta methods with each group of ``groups`` (slices
    of the state: a viscoelastic layer's states, one per element) counted as one component, its
    largest scaled error. scipy's norm is the root mean square over all components: a thousand
    states of elements out of contact, whose errors are zero, would shrink it some tenfold and let
    the bodies' errors grow as much past the tolerance."""

    groups: tuple[slice, ...]
    E: np.ndarray
    E3: np.ndarray
    E5: np.ndarray

    def _squares(self, e: np.ndarray) -> float:
        """Sum of the squares of ``e`` (scaled errors) over the ungrouped components and of each
        group's largest."""
        first = self.groups[0].start
        return float(e[:first] @ e[:first]) + sum(float(np.max(e[g] * e[g], initial=0.0)) for g in self.groups)

    def _estimate_error_norm(self, K: np.ndarray, h: float, scale: np.ndarray) -> float:
        count = self.groups[0].start + len(self.groups)
        if isinstance(self, DOP853):  # (DOP853's norm, scipy's formula, over the reduced components)
            e5, e3 = self._squares(K.T @ self.E5 / scale), self._squares(K.T @ self.E3 / scale)
            if e5 == 0 and e3 == 0:
                return 0.0
            return abs(h) * e5 / math.sqrt((e5 + 0.01 * e3) * count)
        return math.sqrt(self._squares(K.T @ self.E * h / scale) / count)


def _with_grouped_norm(solver: type[OdeSolver], groups: tuple[slice, ...]) -> type[OdeSolver]:
    """``solver`` with :class:`_GroupedNorm`'s error norm for ``groups`` (the states after the
    ungrouped ones, in order): explicit Runge-Kutta methods, and ``rk4`` (no error norm); the
    implicit methods and LSODA keep their own norms, so they are refused."""
    if issubclass(solver, RK4):
        return solver
    if not issubclass(solver, (RK23, RK45, DOP853)):
        raise ParameterError(f"{solver.__name__}: a system with per-element states (a viscoelastic layer) needs an "
                             f"explicit Runge-Kutta method (DOP853, DOP853-jit, RK45, RK23) or rk4")
    return type(solver.__name__, (_GroupedNorm, solver), {"groups": groups})


def solver_class(method: str | type[OdeSolver]) -> type[OdeSolver]:
    """The solver of ``method``: a name in :data:`METHODS` or an ``OdeSolver`` subclass."""
    if isinstance(method, type) and issubclass(method, OdeSolver):
        return method
    if isinstance(method, str) and method in METHODS:
        return METHODS[method]
    raise ParameterError(f"unknown integration method {method!r}; choose one of {', '.join(METHODS)}")


def integrate(fun: Callable[[float, np.ndarray], np.ndarray], t_span: tuple[float, float], y0: np.ndarray, *,
              method: str | type[OdeSolver] = "DOP853", events: Sequence[Callable] = (),
              t_eval: np.ndarray | None = None, dense_output: bool = False, **options: Any) -> Any:
    """Integrate ``y' = fun(t, y)`` over ``t_span`` with ``method`` (see the module docstring);
    ``options`` go to the solver (``rtol``, ``atol``, ``max_step``; ``h`` for ``rk4``). Returns
    scipy's ``OdeResult``: ``status`` 0 (the end was reached), 1 (a terminal event) or -1 (the
    solver failed, ``message`` says why), with ``t``, ``y``, ``t_events``, ``sol``, ``nfev``."""
    return solve_ivp(fun, t_span, y0, method=solver_class(method), t_eval=t_eval, dense_output=dense_output,
                     events=list(events) or None, **options)


@dataclass
class _Segment:
    """An integration up to an end time or to the first event (see :func:`_advance`)."""

    t: np.ndarray
    y: np.ndarray
    sol: OdeSolution
    status: int  # 0 the end was reached, 1 an event fired, -1 the solver failed
    message: str
    fired: int | None  # the index of the event that ended it
    nfev: int


_EPS = float(np.finfo(float).eps)


#: the difference along the dense output that gives an event function's slope at a step's end, as a
#: fraction of the step (see :func:`_slope`)
SLOPE_FRACTION = 1e-3
#: how much faster than at a step's ends an event function is taken to change inside the step, in
#: deciding whether a turn between the ends can reach zero (see :func:`_excursion`)
SLOPE_MARGIN = 2.0


class _Across(Exception):
    """A sample on the other side of an event's zero, found by :func:`_excursion`'s search."""

    def __init__(self, t: float) -> None:
        self.t = t


def _slope(ev: Callable, sol: Callable[[float], np.ndarray], t: float, g: float, h: float) -> float:
    """``d ev / dt`` at ``t`` (where ``ev`` is ``g``) by the difference to ``t + SLOPE_FRACTION h``
    along the dense output ``sol`` (``h``: the step, negative for the step's end)."""
    dt = SLOPE_FRACTION * h
    return (ev(t + dt, sol(t + dt)) - g) / dt


def _unit_roots(A: float, B: float, C: float) -> list[float]:
    """The real roots of ``A s^2 + B s + C`` in (0, 1) (in scalars: every step of every contact asks)."""
    if A == 0.0:
        roots = [-C / B] if B != 0.0 else []
    else:
        disc = B * B - 4 * A * C
        if disc < 0.0:
            return []
        q = -0.5 * (B + math.copysign(math.sqrt(disc), B))  # without cancellation
        roots = [q / A] + ([C / q] if q != 0.0 else [])
    return [s for s in roots if 0.0 < s < 1.0]


def _excursion(ev: Callable, sol: Callable[[float], np.ndarray], t_old: float, t: float, g_old: float,
               g_new: float, r_old: float, r_new: float) -> float | None:
    """A time inside the step where ``ev`` is on the other side of zero (``direction``-wise) though
    both ends are not, or None: an excursion across and back inside the step.

    The step is searched where it may hold such an excursion, by the ends' values ``g`` and slopes
    ``r``: where the slopes turn, towards zero at the start and away at the end, and ``ev``
    changing no faster than ``SLOPE_MARGIN`` times the larger of them could reach zero between the
    ends' values (a body grazing a curved surface: its gap is V-shaped in time, which neither the
    cubic through the ends' values and slopes nor a parabola through three samples follows well);
    or where that cubic turns towards zero inside the step and comes at least halfway from the
    nearer end to zero (two turns in one step). The search evaluates ``ev`` at the cubic's turns,
    then looks for its extremum by Brent's bounded method, stopping at the first sample across
    zero."""
    d: float = ev.direction  # type: ignore[attr-defined]
    h = t - t_old
    # phi = d ev runs from p0 < 0 to p1 < 0; its cubic in s = (tt - t_old) / h
    p0, p1, m0, m1 = d * g_old, d * g_new, d * r_old * h, d * r_new * h
    a, b = 2 * p0 + m0 - 2 * p1 + m1, -3 * p0 - 2 * m0 + 3 * p1 - m1
    turns = [s for s in _unit_roots(3 * a, 2 * b, m0) if 6 * a * s + 2 * b < 0]  # the cubic's maxima
    # the largest phi that a function starting at p0, ending at p1 and changing by at most k per
    # step can reach in between is (p0 + p1 + k) / 2
    reachable = m0 > 0 > m1 and p0 + p1 + SLOPE_MARGIN * max(m0, -m1) >= 0
    if not reachable and not any(((a * s + b) * s + m0) * s + p0 >= 0.5 * max(p0, p1) for s in turns):
        return None

    def phi(tt: float) -> float:
        value = d * ev(tt, sol(tt))
        if value >= 0:
            raise _Across(tt)
        return -value
    try:
        for s in turns:
            phi(t_old + s * h)
        minimize_scalar(phi, bounds=(t_old, t), method="bounded", options={"xatol": 1e-9 * h})
    except _Across as across:
        return across.t
    return None


def _event_root(ev: Callable, sol: Callable[[float], np.ndarray], t_old: float, t: float, g_old: float,
                g_new: float, slopes: tuple[float, float] | None = None) -> float | None:
    """When the event function ``ev`` first crosses zero in its ``direction`` in the step
    [``t_old``, ``t``] (values ``g_old``, ``g_new`` at its ends, ``sol`` its dense output), or None.

    A change of sign between the step's ends is a crossing, as in ``solve_ivp``. Given the slopes
    of ``ev`` at the step's ends (an event function marked ``graze``: a contact's onset or
    separation), so is a crossing and a return inside the step (a contact shorter than the step,
    which the ends alone miss), found by :func:`_excursion`."""
    d: float = ev.direction  # type: ignore[attr-defined]
    if d * g_old > 0:
        return None
    end = t if d * g_new >= 0 else None
    if end is None and slopes is not None:
        end = _excursion(ev, sol, t_old, t, g_old, g_new, *slopes)
    if end is None:
        return None
    return float(brentq(lambda tt: ev(tt, sol(tt)), t_old, end, xtol=4 * _EPS, rtol=4 * _EPS))


def _advance(fun: Callable[[float, np.ndarray], np.ndarray], t_span: tuple[float, float], y0: np.ndarray,
             solver: type[OdeSolver], events: Sequence[Callable],
             after_step: Callable[[float, np.ndarray], float] | None = None, **options: Any) -> _Segment:
    """Integrate ``y' = fun(t, y)`` over ``t_span`` by ``solver`` until the first crossing of an
    event function (each with a ``direction``, ±1), found in every step by :func:`_event_root`,
    grazes included; the step is then cut at the crossing, as ``solve_ivp`` cuts at a terminal
    event. ``after_step(t, y)``, called at the start and after every step without a crossing,
    returns the longest next step (s) on top of ``max_step`` (the solvers that read their
    ``max_step`` at every step: scipy's Runge-Kutta methods, Radau, BDF and ``DOP853-jit``)."""
    t0, t1 = t_span
    run = solver(fun, t0, y0, t1, **options)
    max_step = options.get("max_step", np.inf)

    def bound_next(t: float, y: np.ndarray) -> None:
        if after_step is not None:
            run.max_step = min(max_step, max(after_step(t, y), MIN_FOLLOW_STEP))
    ts, ys, dense = [t0], [np.asarray(y0, dtype=float)], []
    try:
        bound_next(t0, y0)
        g = [ev(t0, y0) for ev in events]
        grazes = [getattr(ev, "graze", False) for ev in events]
        rates: list[float | None] = [None] * len(events)  # the graze events' slopes at the step's start
        status, message, fired = None, "", None
        while status is None:
            message = run.step() or ""
            if run.status == "failed":
                status = -1
                break
            t_old, t, y = run.t_old, run.t, run.y
            sol = run.dense_output()
            at = functools.cache(sol)  # the events' samples inside the step share their states
            g_new = [ev(t, y) for ev in events]
            roots = []
            for k, ev in enumerate(events):
                slopes = None
                d: float = ev.direction  # type: ignore[attr-defined]
                if grazes[k] and d * g[k] <= 0 > d * g_new[k]:  # both ends short of zero: look inside
                    r_old = rates[k]
                    if r_old is None:
                        r_old = _slope(ev, at, t_old, g[k], t - t_old)
                    r_new = _slope(ev, at, t, g_new[k], t_old - t)
                    rates[k] = r_new
                    slopes = (r_old, r_new)
                else:
                    rates[k] = None  # (a crossing at the ends ends the segment; the rare other case starts afresh)
                r = _event_root(ev, at, t_old, t, g[k], g_new[k], slopes)
                if r is not None:
                    roots.append((r, k))
            if roots:
                t, fired = min(roots)
                y = sol(t)
                status = 1
            elif run.status == "finished":
                status = 0
            else:
                bound_next(t, y)
            g = g_new
            if len(ts) > 1 and t == ts[-1]:  # an event at the step's start: no new point
                continue
            ts.append(t)
            ys.append(y)
            dense.append(sol)
    except ContactError as exc:
        # where: the start of the failing step (the last state this segment accepted: the solver's
        # own time has moved to the step's end where an event or the following failed), for the
        # message; and, for simulate's retries, the solver's time and the end of the step it would
        # try from there
        h = getattr(run, "h_abs", None) or (run.t - run.t_old if run.t_old is not None else 0.0)
        exc.t_from, exc.t_reached, exc.span_end = ts[-1], run.t, run.t + h  # type: ignore[attr-defined]
        raise
    return _Segment(t=np.array(ts), y=np.array(ys).T, sol=OdeSolution(ts, dense), status=status, message=message,
                    fired=fired, nfev=run.nfev)


@dataclass
class SimulationResult:
    """Outcome of :func:`simulate` (``status`` 0 finished, -1 failed, with ``message``)."""

    status: int
    message: str
    t: np.ndarray
    y: np.ndarray
    nfev: int
    steps: int
    events: list[dict[str, Any]]
    segments: list[Any]
    wall_s: float
    _ends: list[float] = field(init=False, repr=False)  # the segments' ends, for sol

    def __post_init__(self) -> None:
        self._ends = [seg.t_max for seg in self.segments]  # (in time order, each from the last one's end)

    @property
    def success(self) -> bool:
        return self.status == 0

    def sol(self, t: float) -> np.ndarray:
        """State at time ``t`` (s) from the dense output of the (first) segment holding it."""
        k = bisect.bisect_left(self._ends, t)
        if k < len(self.segments) and self.segments[k].t_min <= t:
            return self.segments[k](t)
        i = int(np.searchsorted(self.t, t))
        if i < len(self.t) and self.t[i] == t:  # a state with no segment on it: the start of a run that failed at once
            return self.y[:, i].copy()
        raise ParameterError(f"t = {t} s is outside the simulated interval [0, {self.t[-1]}]")


class System(Protocol):
    """What :func:`simulate` needs of a system (:class:`MultibodySystem`, :class:`PlanarSystem`)."""

    @property
    def contacts(self) -> Sequence[Any]: ...

    def initial_state(self) -> np.ndarray: ...

    def normalize(self, y: np.ndarray, t: float | None = None) -> np.ndarray: ...

    def set_state(self, y: np.ndarray) -> None: ...

    def rhs(self, t: float, y: np.ndarray) -> np.ndarray: ...

    def gap(self, c: Any) -> float: ...

    def detect(self, c: Any) -> Any: ...

    def relative_velocity(self, c: Any, k: Any) -> np.ndarray: ...

    def surface_pose(self, s: Any, ahead: float = ...) -> tuple[np.ndarray, np.ndarray]: ...


def simulate(system: System, t_end: float, *, method: str | type[OdeSolver] = "DOP853",
             rtol: float = 1e-10, atol: float = 1e-12, max_step: float = np.inf, h: float | None = None,
             stop: Callable[[float, Any], float] | None = None, project_every: float | None = None,
             progress: Callable[[float], None] | None = None) -> SimulationResult:
    """Integrate ``system`` (a :class:`MultibodySystem` or a :class:`PlanarSystem`) from t = 0 to
    ``t_end`` (s).

    ``method``: a name in :data:`METHODS` (``rk4`` steps by ``h``, default 1e-5 s) or an
    ``OdeSolver`` subclass. Contact onsets and separations are terminal events (see
    :mod:`simclient.dynamics._system`), found where a gap changes sign between a step's ends and,
    for contacts or separations shorter than a step, inside it (:func:`_excursion`: where the
    gap's slopes at the step's ends turn and it could reach zero, or the cubic through its values
    and slopes there turns towards zero), so ``max_step`` (s) serves accuracy, not detection.
    Between contacts, at every accepted step, the windows of each contact follow its common normal
    by the thesis' rule (:meth:`ContactPair.follow`; the event probes move no window), and the next
    step is bounded to half the time its contact point, at the rate its parameters moved over the
    last step, takes to reach a window's edge, so the probes inside a step read the surfaces, not a
    window's edge. A contact whose bodies' bounding volumes are more than :data:`FOLLOW_MARGIN`
    apart is not followed; the next step ends before they can come within half of it at their
    speeds (:meth:`MultibodySystem.approach_speed`). (Both bounds hold for the methods that read
    ``max_step`` at every step: not ``LSODA``.) ``stop(t, system)`` ends the run
    where it crosses zero from below (e.g. a flexion angle reaching its target). At every restart
    the state is projected by ``system.normalize`` (Euler parameters; a planar system's
    constraints), and ``project_every`` (s) restarts at least that often. A contact detection that
    fails inside a step (a trial state far from the last accepted one) restarts the segment, from
    the contacts' warm starts and windows of its start, with ``max_step`` a thousandth of the time
    left, then ten and a hundred times smaller; failures beyond that (and the integrator's) end the
    run with ``status = -1`` and a message; the result then covers what was integrated. ``Radau``
    and ``BDF`` estimate their Jacobians by :class:`ForwardJacobian` (whose evaluations ``nfev``
    counts). ``progress(t)`` (t in s) hears of the run after accepted steps, at most once every
    :data:`PROGRESS_EVERY` seconds of wall time (so a short run not at all).
    """
    if not (t_end > 0 and np.isfinite(t_end)):
        raise ParameterError(f"the end time must be positive and finite (s), got {t_end}")
    # (atol = 0 leaves a state component that is zero, a body at rest along an axis, without an error
    # scale: scipy's solvers then divide by zero and never end)
    if not (rtol > 0 and atol > 0 and np.isfinite(rtol) and np.isfinite(atol)):
        raise ParameterError(f"the tolerances must be positive and finite, got rtol = {rtol}, atol = {atol}")
    for name, value in (("max_step", max_step), ("project_every", project_every)):
        if value is not None and not value >= t_end * 1e-9:  # (a bound of over 10^9 steps ran for ever)
            raise ParameterError(f"{name} must be at least a 10^-9th of the run ({t_end * 1e-9:.3g} s), got {value}")
    solver = solver_class(method)
    groups = tuple(getattr(system, "state_groups", ()))
    if groups:
        solver = _with_grouped_norm(solver, groups)
    options: dict[str, Any] = {"rtol": rtol, "atol": atol, "max_step": max_step}
    if h is not None:
        options["h"] = h
    # a compiled solver evaluates the system itself (see simclient.dynamics.CompiledDOP853)
    kernel = compile_system(system)[0] if getattr(solver, "takes_kernel", False) else None
    if kernel is not None:
        options["kernel"] = kernel
    rhs = system.rhs if kernel is None else kernel.rhs
    jacobian = ForwardJacobian(rhs, rtol, atol) if issubclass(solver, (Radau, BDF)) else None
    if jacobian is not None:
        options["jac"] = jacobian
    probe = gap_probe(system, kernel)
    t0 = time.perf_counter()
    y = system.normalize(system.initial_state(), 0.0)
    t = 0.0
    events: list[dict[str, Any]] = []
    segments: list[Any] = []
    ts, ys = [np.array([0.0])], [y[:, None]]
    nfev = steps = 0
    status, message = 0, "finished"

    def make_event(c: Any) -> Callable[[float, np.ndarray], float]:
        # an onset is the gap falling through -EVENT_HYSTERESIS, a separation it rising through +
        side = 1.0 if c.active else -1.0
        # A probe's value depends on its warm start (where an iterate leaves a window, or which of
        # two common normals it finds), so the same state can probe differently later; the root
        # search must see at a step's ends (and the samples inside it) the values that detected the
        # crossing.
        seen: dict[float, tuple[np.ndarray, float]] = {}

        def ev(tt: float, yy: np.ndarray) -> float:
            old = seen.get(tt)
            if old is not None and (np.abs(old[0] - yy) <= 1e-15 + 1e-12 * np.abs(yy)).all():  # np.allclose, 4x faster
                return old[1]
            g = probe(c, yy) - side * EVENT_HYSTERESIS
            if len(seen) >= 64:  # a step's ends, its slopes' samples and a graze search's (some 30)
                del seen[next(iter(seen))]
            seen[tt] = (yy.copy(), g)
            return g
        ev.terminal = True  # type: ignore[attr-defined]
        ev.direction = side  # type: ignore[attr-defined]
        # looked for inside steps too: an unseen onset would let the surfaces pass through each
        # other without force, an unseen separation would merge two contact periods (a dissipative
        # law would keep the first one's impact velocity)
        ev.graze = True  # type: ignore[attr-defined]
        return ev

    def switch(c: Any, tt: float, yy: np.ndarray) -> None:
        system.set_state(yy)
        k = system.detect(c)
        if not c.active and k.indentation < -FALSE_ONSET_GAP:
            # not an onset: the probe read a window's edge (windows stay where they were last
            # placed while bodies are far apart, and bodies that turn meanwhile take their contact
            # points off them; two spinning balls "met" 2.9 mm apart). The detection moved the
            # windows to the contact points: the probes read the surfaces again from here.
            return
        rate = k.indentation_rate(system.relative_velocity(c, k))
        if c.active:
            c.active = False
            events.append({"t": tt, "contact": c.name, "type": "separation", "separation_velocity": -rate})
        else:
            c.impact_velocity = max(rate, 1e-12)
            c.active = True
            events.append({"t": tt, "contact": c.name, "type": "onset", "impact_velocity": c.impact_velocity})

    followed = [c for c in system.contacts if isinstance(getattr(c, "pair", None), ContactPair)]
    pairs: list[ContactPair] = [c.pair for c in followed]
    broad_gap = getattr(system, "broad_gap", None)  # (profiles have no bounding volumes: always followed)

    def follow(tt: float, yy: np.ndarray) -> float:
        # The windows of a contact apart follow its bodies (ContactPair.follow): the probes of its
        # event function move none, and past a window's edge a probe sees the gap at the edge, not
        # the surface there (a ball flying over a terrain would pass through its bumps). The next
        # step is bounded to half the time a contact point takes to reach a window's edge, so the
        # probes inside it stay on the windows' records. Bodies far apart are not followed (no
        # records fetched for them); their step ends before they can come near.
        limit = math.inf
        if any(not c.active for c in followed):
            system.set_state(yy)
        for c in followed:
            if c.active:
                c.pair.forget()  # (in contact, its windows follow the force's detections)
                continue
            gap = broad_gap(c) if broad_gap is not None else None
            if gap is not None and gap > FOLLOW_MARGIN:
                c.pair.forget()
                speed = system.approach_speed(c)  # type: ignore[attr-defined]  # (a MultibodySystem)
                limit = min(limit, (gap - FOLLOW_MARGIN / 2) / speed if speed > 0 else math.inf)
            else:
                def ahead(c: Any = c) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]:
                    return (*system.surface_pose(c.i, FOLLOW_PROBE_TIME), *system.surface_pose(c.j, FOLLOW_PROBE_TIME),
                            FOLLOW_PROBE_TIME)
                limit = min(limit, c.pair.follow(*system.surface_pose(c.i), *system.surface_pose(c.j), tt, ahead) / 2)
        return limit

    reported = time.perf_counter()

    def report(tt: float) -> None:
        nonlocal reported
        if progress is not None and time.perf_counter() - reported >= PROGRESS_EVERY:
            reported = time.perf_counter()
            progress(tt)

    def after_step(tt: float, yy: np.ndarray) -> float:
        report(tt)  # (a segment without an event can last the whole run)
        return follow(tt, yy)

    def stop_event(tt: float, yy: np.ndarray) -> float:
        system.set_state(yy)
        assert stop is not None
        return stop(tt, system)
    stop_event.terminal = True  # type: ignore[attr-defined]
    stop_event.direction = 1.0  # type: ignore[attr-defined]

    try:
        # a system simulated again starts as it did the first time: its contacts apart, their
        # windows and warm starts as they were then (a run leaves them where it ended); then
        # contacts already closed at t = 0 start in contact mode
        for c in system.contacts:
            c.active, c.impact_velocity = False, 0.0
        for p in pairs:
            p.start()
        system.set_state(y)
        for c in system.contacts:
            if system.gap(c) < 0:
                switch(c, 0.0, y)
        stopped = False
        retries, segment_options, failed_at = 0, dict(options), -math.inf
        while t < t_end - 1e-15 and not stopped:
            evs = [make_event(c) for c in system.contacts] + ([stop_event] if stop is not None else [])
            t_next = t_end if project_every is None else min(t_end, t + project_every)
            saved = [p.checkpoint() for p in pairs]
            try:
                sol = _advance(rhs, (t, t_next), y, solver, evs, after_step, **segment_options)
            except ContactError as exc:
                # a trial state far from the last accepted one (a large step into a stiff contact)
                # can put the contact point off the tables: retry the segment with smaller steps,
                # from the warm starts and windows of the accepted state (the failed trial's would
                # fail the retry's first evaluation). A retry that accepts steps and fails again
                # inside the step that failed before gives up: the motion itself leaves the tables
                # there (a body off a table's edge), and ever smaller steps over the segment only
                # took ever longer. One that fails before accepting a step goes on to smaller ones:
                # the first step into a contact can be too long for its trial stages.
                if retries == MAX_RETRIES or solver is RK4 or t < getattr(exc, "t_reached", t) < failed_at:
                    raise
                failed_at = getattr(exc, "span_end", math.inf)
                for p, state in zip(pairs, saved):
                    p.restore(state)
                retries += 1
                segment_options["max_step"] = min(options["max_step"], t_end - t) / 10 ** (retries + 2)
                continue
            retries, segment_options, failed_at = 0, dict(options), -math.inf
            nfev += sol.nfev
            steps += len(sol.t) - 1
            if sol.status == -1:
                raise SimulationError(f"integrator failed at t = {sol.t[-1]:.6g} s: {sol.message}")
            segments.append(sol.sol)
            ts.append(sol.t[1:])
            ys.append(sol.y[:, 1:])
            t = float(sol.t[-1])
            y = system.normalize(sol.y[:, -1], t)
            if sol.fired is not None:
                k = sol.fired
                if k == len(system.contacts):
                    stopped = True
                    events.append({"t": t, "type": "stop"})
                else:
                    switch(system.contacts[k], t, y)
                    # a contact whose gap crossed at the same instant (a body landing on two supports
                    # at once) switches too: the solver reports one root per step, and in the next
                    # step that contact's event function would start at its threshold, never cross
                    for c in system.contacts:
                        if c is not system.contacts[k] and (probe(c, y) < 0) != c.active:
                            switch(c, t, y)
            report(t)
    except SimulationError as exc:
        status, message = -1, str(exc)
    except ContactError as exc:  # (found in the step after the last state reached, or at the start)
        status, message = -1, f"{exc}, in the step from t = {getattr(exc, 't_from', t):.6g} s"
    if jacobian is not None:
        nfev += jacobian.evaluations
    return SimulationResult(status=status, message=message, t=np.concatenate(ts), y=np.concatenate(ys, axis=1),
                            nfev=nfev, steps=steps, events=events, segments=segments,
                            wall_s=time.perf_counter() - t0)
