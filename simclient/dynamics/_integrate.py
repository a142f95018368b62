"""One front door for every integrator: :func:`simulate` for a system with contact events,
:func:`integrate` for any ODE.

Methods are named in :data:`simclient.dynamics.METHODS` (the project's ``DOP853-jit`` and ``rk4``,
and scipy's ``solve_ivp`` methods, imported when asked for); a stepper class can be passed as
``method`` too. Events are located the same way for every method (:mod:`simclient.dynamics._events`):
by root finding on the dense output, contacts shorter than a step included. An integrator failure
is a status of the result, never an exception.
"""

from __future__ import annotations

import bisect
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from simclient.contact import ContactPair
from simclient.dynamics._dop853 import Dop853
from simclient.dynamics._events import Segment, advance
from simclient.dynamics._packed import compile_system, gap_probe
from simclient.dynamics._methods import solver_class
from simclient.dynamics._solvers import DenseSolution, ForwardJacobian
from simclient.errors import ContactError, ParameterError, SimulationError

__all__ = ["integrate", "simulate", "SimulationResult", "System", "IntegrationResult"]

#: restarts of a segment with smaller steps after a failed contact detection (see :func:`simulate`)
MAX_RETRIES = 3
#: half-width (m) of the band around a zero gap that an event must cross: the state at an event is
#: put at the root, where the gap can be exactly zero, and an event function that starts at zero
#: would fire again at once (a zero counts as a crossing), switching the contact back and forth
#: without time advancing
EVENT_HYSTERESIS = 1e-12
#: (m) an onset whose detection finds the bodies further apart than this is not one (see simulate)
FALSE_ONSET_GAP = 1e-9
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


@dataclass
class IntegrationResult:
    """Outcome of :func:`integrate`: ``status`` 0 (the end was reached), 1 (a terminal event) or -1
    (the solver failed, ``message`` says why); ``t``, ``y`` (a column per step), ``t_events`` (per
    event function, the times it fired), ``sol`` (the dense output, or None) and ``nfev``."""

    status: int
    message: str
    t: np.ndarray
    y: np.ndarray
    t_events: list[np.ndarray]
    sol: DenseSolution | None
    nfev: int

    @property
    def success(self) -> bool:
        return self.status >= 0


def integrate(fun: Callable[[float, np.ndarray], np.ndarray], t_span: tuple[float, float], y0: np.ndarray, *,
              method: str | type = "DOP853-jit", events: Sequence[Callable] = (), dense_output: bool = False,
              **options: Any) -> IntegrationResult:
    """Integrate ``y' = fun(t, y)`` over ``t_span`` with ``method`` (see the module docstring);
    ``options`` go to the stepper (``rtol``, ``atol``, ``max_step``; ``h`` for ``rk4``). ``events``:
    terminal event functions ``ev(t, y)`` (``terminal`` set) with a ``direction`` (+1, -1, or 0:
    either way); the integration ends where the first crosses zero."""
    for ev in events:
        if not getattr(ev, "terminal", False):
            raise ParameterError(f"integrate: event {getattr(ev, '__name__', ev)!r} is not terminal (mark it "
                                 "terminal = True: the integration ends where an event fires)")
    t0 = float(t_span[0])
    y = np.asarray(y0, dtype=float)
    watched = [_directed(ev, ev(t0, y)) for ev in events]
    seg = advance(fun, (t0, float(t_span[1])), y, solver_class(method), watched, **options)
    fired: list[list[float]] = [[] for _ in events]
    if seg.fired is not None:
        fired[seg.fired].append(float(seg.t[-1]))
    status, message = (-1, seg.message) if seg.status == -1 else (
        (1, "a terminal event occurred") if seg.fired is not None else (0, "finished"))
    return IntegrationResult(status, message, seg.t, seg.y, [np.array(f) for f in fired],
                             seg.sol if dense_output else None, seg.nfev)


def _directed(ev: Callable, g0: float) -> Callable:
    """``ev`` with a direction of +1 or -1, as :func:`advance` takes it (for 0, either way: the
    side ``ev`` starts on, ``g0``, decides)."""
    d = float(getattr(ev, "direction", 0.0)) or (-1.0 if g0 > 0 else 1.0)

    def watched(tt: float, yy: np.ndarray) -> float:
        return float(ev(tt, yy))
    watched.direction = d  # type: ignore[attr-defined]
    return watched


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


def _check_settings(t_end: float, rtol: float, atol: float, max_step: float, project_every: float | None) -> None:
    if not (t_end > 0 and np.isfinite(t_end)):
        raise ParameterError(f"the end time must be positive and finite (s), got {t_end}")
    # (atol = 0 leaves a state component that is zero, a body at rest along an axis, without an error
    # scale: the solvers then divide by zero and never end)
    if not (rtol > 0 and atol > 0 and np.isfinite(rtol) and np.isfinite(atol)):
        raise ParameterError(f"the tolerances must be positive and finite, got rtol = {rtol}, atol = {atol}")
    for name, value in (("max_step", max_step), ("project_every", project_every)):
        if value is not None and not value >= t_end * 1e-9:  # (a bound of over 10^9 steps ran for ever)
            raise ParameterError(f"{name} must be at least a 10^-9th of the run ({t_end * 1e-9:.3g} s), got {value}")


def simulate(system: System, t_end: float, *, method: str | type = "DOP853", rtol: float = 1e-10, atol: float = 1e-12,
             max_step: float = np.inf, h: float | None = None, stop: Callable[[float, Any], float] | None = None,
             project_every: float | None = None, progress: Callable[[float], None] | None = None) -> SimulationResult:
    """Integrate ``system`` (a :class:`MultibodySystem` or a :class:`PlanarSystem`) from t = 0 to
    ``t_end`` (s).

    ``method``: a name in :data:`METHODS` (``rk4`` steps by ``h``, default 1e-5 s) or a stepper
    class. Contact onsets and separations are terminal events (see
    :mod:`simclient.dynamics._system`), found where a gap changes sign between a step's ends and,
    for contacts or separations shorter than a step, inside it (:mod:`simclient.dynamics._events`),
    so ``max_step`` (s) serves accuracy, not detection. Between contacts, at every accepted step,
    the windows of each contact follow its common normal by the thesis' rule
    (:meth:`ContactPair.follow`; the event probes move no window), and the next step is bounded to
    half the time its contact point, at the rate its parameters moved over the last step, takes
    to reach a window's edge, so the probes inside a step read the surfaces, not a window's edge.
    A contact whose bodies' bounding volumes are more than :data:`FOLLOW_MARGIN` apart is not
    followed; the next step ends before they can come within half of it at their speeds
    (:meth:`MultibodySystem.approach_speed`). (Both bounds hold for the methods that read
    ``max_step`` at every step: not ``LSODA``.) ``stop(t, system)`` ends the run where it crosses
    zero from below (e.g. a flexion angle reaching its target). At every restart the state is
    projected by ``system.normalize`` (Euler parameters; a planar system's constraints), and
    ``project_every`` (s) restarts at least that often. A contact detection that fails inside a
    step (a trial state far from the last accepted one) restarts the segment, from the contacts'
    warm starts and windows of its start, with ``max_step`` a thousandth of the time left, then ten
    and a hundred times smaller; failures beyond that (and the integrator's) end the run with
    ``status = -1`` and a message; the result then covers what was integrated. ``Radau`` and
    ``BDF`` estimate their Jacobians by :class:`ForwardJacobian` (whose evaluations ``nfev``
    counts). A system with per-element states (a viscoelastic layer) counts each element's states
    as one in the error norm: ``DOP853-jit`` and ``rk4`` only. ``progress(t)`` (t in s) hears of the
    run after accepted steps, at most once every :data:`PROGRESS_EVERY` seconds of wall time (so a
    short run not at all).
    """
    _check_settings(t_end, rtol, atol, max_step, project_every)
    return _Run(system, t_end, method, rtol, atol, max_step, h, stop, project_every, progress).run()


class _Run:
    """One :func:`simulate`: its settings, its state between segments, and the event functions and
    window following it gives each segment."""

    def __init__(self, system: System, t_end: float, method: str | type, rtol: float, atol: float, max_step: float,
                 h: float | None, stop: Callable[[float, Any], float] | None, project_every: float | None,
                 progress: Callable[[float], None] | None) -> None:
        self.system, self.t_end, self.stop, self.project_every, self.progress = system, t_end, stop, project_every, progress
        self.solver = solver_class(method)
        self.options: dict[str, Any] = {"rtol": rtol, "atol": atol, "max_step": max_step}
        if h is not None:
            self.options["h"] = h
        groups = tuple(getattr(system, "state_groups", ()))
        if groups:
            if self.solver not in (Dop853, solver_class("rk4")):
                raise ParameterError(f"{getattr(self.solver, '__name__', method)}: a system with per-element states (a "
                                     "viscoelastic layer) needs DOP853-jit (or rk4), whose error norm counts each "
                                     "element as one state")
            self.options["groups"] = groups
        # the project's DOP853 runs a system's compiled form (see simclient.dynamics.Dop853)
        compiled = compile_system(system)[0] if self.solver is Dop853 else None
        if compiled is not None:
            self.options["compiled"] = compiled
        self.rhs = system.rhs if compiled is None else compiled.rhs
        self.jacobian = None
        if getattr(self.solver, "__name__", "") in ("Radau", "BDF"):
            self.jacobian = self.options["jac"] = ForwardJacobian(self.rhs, rtol, atol)
        self.probe = gap_probe(system, compiled)
        self.followed = [c for c in system.contacts if isinstance(getattr(c, "pair", None), ContactPair)]
        self.pairs: list[ContactPair] = [c.pair for c in self.followed]
        self.broad_gap = getattr(system, "broad_gap", None)  # (profiles have no bounding volumes: always followed)
        self.events: list[dict[str, Any]] = []
        self.reported = time.perf_counter()

        def stop_event(tt: float, yy: np.ndarray) -> float:
            system.set_state(yy)
            assert stop is not None
            return stop(tt, system)
        stop_event.terminal = True  # type: ignore[attr-defined]
        stop_event.direction = 1.0  # type: ignore[attr-defined]
        self.stop_event = stop_event

    # -- the event functions -----------------------------------------------------------------------
    def contact_event(self, c: Any) -> Callable[[float, np.ndarray], float]:
        """Contact ``c``'s event function: an onset is its gap falling through -EVENT_HYSTERESIS, a
        separation it rising through +EVENT_HYSTERESIS."""
        side = 1.0 if c.active else -1.0
        # A probe's value depends on its warm start (where an iterate leaves a window, or which of
        # two common normals it finds), so the same state can probe differently later; the root
        # search must see at a step's ends (and the samples inside it) the values that detected the
        # crossing.
        seen: dict[float, tuple[np.ndarray, float]] = {}
        probe = self.probe

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

    def switch(self, c: Any, tt: float, yy: np.ndarray) -> None:
        """Contact ``c``'s mode switched at ``tt`` (an onset latches its impact velocity)."""
        self.system.set_state(yy)
        k = self.system.detect(c)
        if not c.active and k.indentation < -FALSE_ONSET_GAP:
            # not an onset: the probe read a window's edge (windows stay where they were last
            # placed while bodies are far apart, and bodies that turn meanwhile take their contact
            # points off them; two spinning balls "met" 2.9 mm apart). The detection moved the
            # windows to the contact points: the probes read the surfaces again from here.
            return
        rate = k.indentation_rate(self.system.relative_velocity(c, k))
        if c.active:
            c.active = False
            self.events.append({"t": tt, "contact": c.name, "type": "separation", "separation_velocity": -rate})
        else:
            c.impact_velocity = max(rate, 1e-12)
            c.active = True
            self.events.append({"t": tt, "contact": c.name, "type": "onset", "impact_velocity": c.impact_velocity})

    # -- following the windows -----------------------------------------------------------------------
    def follow(self, tt: float, yy: np.ndarray) -> float:
        """The windows of each contact apart follow its bodies (:meth:`ContactPair.follow`): the
        probes of its event function move none, and past a window's edge a probe sees the gap at
        the edge, not the surface there (a ball flying over a terrain would pass through its bumps).
        Returns the longest next step: half the time a contact point takes to reach a window's edge,
        so the probes inside it stay on the windows' records. Bodies far apart are not followed (no
        records fetched for them); their step ends before they can come near."""
        system = self.system
        limit = math.inf
        if any(not c.active for c in self.followed):
            system.set_state(yy)
        for c in self.followed:
            if c.active:
                c.pair.forget()  # (in contact, its windows follow the force's detections)
                c.pair.track()
                continue
            gap = self.broad_gap(c) if self.broad_gap is not None else None
            if gap is not None and gap > FOLLOW_MARGIN:
                c.pair.forget()
                speed = system.approach_speed(c)  # type: ignore[attr-defined]  # (a MultibodySystem)
                limit = min(limit, (gap - FOLLOW_MARGIN / 2) / speed if speed > 0 else math.inf)
            else:
                def ahead(c: Any = c) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]:
                    return (*system.surface_pose(c.i, FOLLOW_PROBE_TIME), *system.surface_pose(c.j, FOLLOW_PROBE_TIME),
                            FOLLOW_PROBE_TIME)
                limit = min(limit, c.pair.follow(*system.surface_pose(c.i), *system.surface_pose(c.j), tt, ahead) / 2)
                c.pair.track()
        return limit

    def report(self, tt: float) -> None:
        if self.progress is not None and time.perf_counter() - self.reported >= PROGRESS_EVERY:
            self.reported = time.perf_counter()
            self.progress(tt)

    def after_step(self, tt: float, yy: np.ndarray) -> float:
        self.report(tt)  # (a segment without an event can last the whole run)
        return self.follow(tt, yy)

    # -- the run ---------------------------------------------------------------------------------
    def start(self, y: np.ndarray) -> None:
        """A system simulated again starts as it did the first time: its contacts apart, their
        windows and warm starts as they were then (a run leaves them where it ended); then contacts
        already closed at t = 0 start in contact mode."""
        for c in self.system.contacts:
            c.active, c.impact_velocity = False, 0.0
        for p in self.pairs:
            p.start()
        self.system.set_state(y)
        for c in self.system.contacts:
            if self.system.gap(c) < 0:
                self.switch(c, 0.0, y)

    def segment(self, t: float, y: np.ndarray) -> Segment:
        """The next segment, retried with smaller steps where a contact detection fails inside it."""
        retries, options, failed_at = 0, dict(self.options), -math.inf
        while True:
            events = [self.contact_event(c) for c in self.system.contacts]
            if self.stop is not None:
                events.append(self.stop_event)
            t_next = self.t_end if self.project_every is None else min(self.t_end, t + self.project_every)
            saved = [p.checkpoint() for p in self.pairs]
            try:
                return advance(self.rhs, (t, t_next), y, self.solver, events, self.after_step, **options)
            except ContactError as exc:
                # a trial state far from the last accepted one (a large step into a stiff contact)
                # can put the contact point off the tables: retry the segment with smaller steps,
                # from the warm starts and windows of the accepted state (the failed trial's would
                # fail the retry's first evaluation). A retry that accepts steps and fails again
                # inside the step that failed before gives up: the motion itself leaves the tables
                # there (a body off a table's edge), and ever smaller steps over the segment only
                # took ever longer. One that fails before accepting a step goes on to smaller ones:
                # the first step into a contact can be too long for its trial stages.
                if (retries == MAX_RETRIES or self.solver is solver_class("rk4")
                        or t < getattr(exc, "t_reached", t) < failed_at):
                    raise
                failed_at = getattr(exc, "span_end", math.inf)
                for p, state in zip(self.pairs, saved):
                    p.restore(state)
                retries += 1
                options["max_step"] = min(self.options["max_step"], self.t_end - t) / 10 ** (retries + 2)

    def fired(self, seg: Segment, t: float, y: np.ndarray) -> bool:
        """An event ended the segment: switch its contact (and any other that crossed at the same
        instant); True where it was the stop."""
        k = seg.fired
        contacts = self.system.contacts
        if k == len(contacts):
            self.events.append({"t": t, "type": "stop"})
            return True
        assert k is not None
        self.switch(contacts[k], t, y)
        # a contact whose gap crossed at the same instant (a body landing on two supports at once)
        # switches too: the solver reports one root per step, and in the next step that contact's
        # event function would start at its threshold, never cross
        for c in contacts:
            if c is not contacts[k] and (self.probe(c, y) < 0) != c.active:
                self.switch(c, t, y)
        return False

    def run(self) -> SimulationResult:
        t0 = time.perf_counter()
        system = self.system
        y = system.normalize(system.initial_state(), 0.0)
        t, nfev, steps, stopped = 0.0, 0, 0, False
        segments: list[Any] = []
        ts, ys = [np.array([0.0])], [y[:, None]]
        status, message = 0, "finished"
        try:
            self.start(y)
            while t < self.t_end - 1e-15 and not stopped:
                seg = self.segment(t, y)
                nfev += seg.nfev
                steps += len(seg.t) - 1
                if seg.status == -1:
                    raise SimulationError(f"integrator failed at t = {seg.t[-1]:.6g} s: {seg.message}")
                segments.append(seg.sol)
                ts.append(seg.t[1:])
                ys.append(seg.y[:, 1:])
                t = float(seg.t[-1])
                y = system.normalize(seg.y[:, -1], t)
                if seg.fired is not None:
                    stopped = self.fired(seg, t, y)
                self.report(t)
        except SimulationError as exc:
            status, message = -1, str(exc)
        except ContactError as exc:  # (found in the step after the last state reached, or at the start)
            status, message = -1, f"{exc}, in the step from t = {getattr(exc, 't_from', t):.6g} s"
        if self.jacobian is not None:
            nfev += self.jacobian.evaluations
        return SimulationResult(status=status, message=message, t=np.concatenate(ts), y=np.concatenate(ys, axis=1),
                                nfev=nfev, steps=steps, events=self.events, segments=segments,
                                wall_s=time.perf_counter() - t0)
