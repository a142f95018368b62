"""Steps with events: an integration up to its end or to the first crossing of an event function,
contacts shorter than a step included (:func:`advance`).

Events are located the same way for every method: by root finding on the stepper's dense output
(:func:`simclient.dynamics._roots.find_root`). An event function marked ``graze`` (a contact's
onset or separation) is also looked for inside each step, where its values at the ends do not
cross zero but it may cross and come back (:func:`excursion`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from simclient.dynamics._roots import find_minimum, find_root
from simclient.dynamics._solvers import DenseSolution
from simclient.errors import ContactError

__all__ = ["Segment", "advance", "event_root", "MIN_FOLLOW_STEP"]

#: (s) the shortest step a bound from following the windows may ask for (a guard: a contact point
#: at a window's edge would ask for none)
MIN_FOLLOW_STEP = 1e-9


@dataclass
class Segment:
    """An integration up to an end time or to the first event (see :func:`_advance`)."""

    t: np.ndarray
    y: np.ndarray
    sol: DenseSolution
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
        find_minimum(phi, t_old, t, xatol=1e-9 * h)
    except _Across as across:
        return across.t
    return None


def event_root(ev: Callable, sol: Callable[[float], np.ndarray], t_old: float, t: float, g_old: float,
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
    return float(find_root(lambda tt: ev(tt, sol(tt)), t_old, end, xtol=4 * _EPS, rtol=4 * _EPS))


def _crossings(events: Sequence[Callable], at: Callable[[float], np.ndarray], t_old: float, t: float, g: list[float],
               g_new: list[float], grazes: list[bool], rates: list[float | None]) -> list[tuple[float, int]]:
    """``(time, index)`` of each event function that crosses zero in the step from ``t_old`` to ``t``
    (values ``g`` and ``g_new`` at its ends, ``at`` the dense output, its samples shared), grazes
    of the ``graze`` events included; ``rates`` keeps their slopes at the step's end for the next."""
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
        r = event_root(ev, at, t_old, t, g[k], g_new[k], slopes)
        if r is not None:
            roots.append((r, k))
    return roots


def advance(fun: Callable[[float, np.ndarray], np.ndarray], t_span: tuple[float, float], y0: np.ndarray,
            solver: type, events: Sequence[Callable], after_step: Callable[[float, np.ndarray], float] | None = None,
            **options: Any) -> Segment:
    """Integrate ``y' = fun(t, y)`` over ``t_span`` by ``solver`` until the first crossing of an
    event function (each with a ``direction``, ±1), found in every step by :func:`event_root`,
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
            g_new = [ev(t, y) for ev in events]
            roots = _crossings(events, functools.cache(sol), t_old, t, g, g_new, grazes, rates)
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
    return Segment(t=np.array(ts), y=np.array(ys).T, sol=DenseSolution(ts, dense), status=status, message=message,
                    fired=fired, nfev=run.nfev)


