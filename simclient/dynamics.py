"""Spatial rigid-body dynamics with contact on tabulated surfaces (Newton-Euler, Euler parameters).

State of each free body (13 values): position ``r`` (m, global), Euler parameters ``p``, velocity
``r'`` (m/s, global) and angular velocity ``w'`` (rad/s, body frame). Equations (thesis 6.1-6.8,
errata fixed; see :mod:`simclient.poses`)::

    m r'' = f,     J' w'' = n' - w' x J' w',     p' = 1/2 L(p)^T w' - k (p.p - 1) p

``f`` (N, global) and ``n'`` (N m, body frame, about the centre of mass, which is the body origin)
sum gravity, external loads and contact forces; the last term of ``p'`` is drift control
(``k`` = 10 /s) and ``p`` is normalised at every restart.

Contacts run in two modes. Apart: a contact is only watched by an event function (its gap, or a
cheap bounding-volume distance while the bodies are far apart), so no force is computed. When the
gap closes the integration stops at the onset (a terminal event, found by root finding), latches the
indentation rate as the impact velocity ``delta_dot0`` of the dissipative laws, and continues in
contact mode, where the right-hand side detects the contact and applies the law until the
separation event. ``simulate`` is the one front door: ``method`` is a scipy ``solve_ivp`` method
(``DOP853``, ``RK45``, ``BDF``, ``Radau``, ``LSODA``...) or ``"rk4"`` for fixed steps of ``h``
(the thesis' fixed-step integration; events are then located to the step).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.integrate import solve_ivp

from simclient.contact import Contact, ContactPair
from simclient.errors import ContactError, SimulationError
from simclient.poses import L_matrix, rotation_matrix
from simclient.window import StorageWindow

__all__ = ["Body", "Surface", "ContactModel", "MultibodySystem", "SimulationResult", "simulate"]

DRIFT_GAIN = 10.0  # 1/s


@dataclass
class Body:
    """A rigid body: ``mass`` (kg), ``inertia`` (kg m^2, body frame, about the centre of mass,
    which is the body origin), initial ``position`` (m), ``euler`` parameters, ``velocity`` (m/s)
    and ``omega`` (rad/s, body frame). A ``fixed`` body does not move."""

    name: str
    mass: float = 0.0
    inertia: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))
    position: np.ndarray = field(default_factory=lambda: np.zeros(3))
    euler: np.ndarray = field(default_factory=lambda: np.array([1.0, 0, 0, 0]))
    velocity: np.ndarray = field(default_factory=lambda: np.zeros(3))
    omega: np.ndarray = field(default_factory=lambda: np.zeros(3))
    fixed: bool = False


@dataclass
class Surface:
    """A table on a body: the window reading it and its constant placement in the body
    (``offset`` s_Q in metres and ``rotation`` A_Q, eq. 6.17)."""

    body: Body
    window: StorageWindow
    offset: np.ndarray = field(default_factory=lambda: np.zeros(3))
    rotation: np.ndarray = field(default_factory=lambda: np.eye(3))

    def bound(self) -> tuple[np.ndarray, np.ndarray] | None:
        """Bounding box (lo, hi) of the table in its surface frame, if the header has one."""
        bb = self.window.header.bbox
        return None if bb is None else (np.array(bb[0]), np.array(bb[1]))


@dataclass
class ContactModel:
    """A contact between surface ``i`` and surface ``j`` with a force law (``law.force(delta,
    delta_dot, delta_dot0)`` in N). The force pushes body i along the normal of j and body j the
    other way."""

    name: str
    i: Surface
    j: Surface
    law: Any
    pair: ContactPair | None = None
    active: bool = False  # in contact mode
    impact_velocity: float = 0.0  # latched at onset, m/s

    def __post_init__(self) -> None:
        if self.pair is None:
            self.pair = ContactPair(self.i.window, self.j.window)


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

    @property
    def success(self) -> bool:
        return self.status == 0

    def sol(self, t: float) -> np.ndarray:
        """State at time ``t`` from the dense output of the segment holding it."""
        for seg in self.segments:
            if seg.t_min <= t <= seg.t_max:
                return seg(t)
        raise ValueError(f"t = {t} outside the simulated interval")


class MultibodySystem:
    """Bodies, contacts, gravity (m/s^2, global) and external loads.

    ``loads`` are callables ``load(t, system) -> list of (body, point_global, force_global)``.
    """

    def __init__(self, bodies: Sequence[Body], contacts: Sequence[ContactModel] = (),
                 gravity: Sequence[float] = (0.0, 0.0, -9.81), loads: Sequence[Callable] = ()) -> None:
        self.bodies = list(bodies)
        self.free = [b for b in self.bodies if not b.fixed]
        self.index = {id(b): k for k, b in enumerate(self.free)}
        self.contacts = list(contacts)
        self.gravity = np.asarray(gravity, float)
        self.loads = list(loads)
        self.rhs_evaluations = 0
        self._pose: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}
        for b in self.bodies:
            if not b.fixed and (b.mass <= 0 or np.linalg.eigvalsh(b.inertia).min() <= 0):
                raise ValueError(f"body {b.name}: mass and inertia must be positive")
        self._Jinv = {id(b): np.linalg.inv(b.inertia) for b in self.free}

    # -- state -------------------------------------------------------------------------------------

    def initial_state(self) -> np.ndarray:
        return np.concatenate([np.concatenate([b.position, b.euler / np.linalg.norm(b.euler), b.velocity,
                                               b.omega]) for b in self.free]) if self.free else np.zeros(0)

    def set_state(self, y: np.ndarray) -> None:
        """Poses and velocities of every body from the state vector (cached for the evaluation)."""
        for b in self.bodies:
            if b.fixed:
                self._pose[id(b)] = (b.position, rotation_matrix(b.euler / np.linalg.norm(b.euler)),
                                     np.zeros(3), np.zeros(3))
                continue
            k = 13 * self.index[id(b)]
            p = y[k + 3:k + 7]
            A = rotation_matrix(p / np.linalg.norm(p))
            self._pose[id(b)] = (y[k:k + 3], A, y[k + 7:k + 10], A @ y[k + 10:k + 13])

    def pose(self, body: Body) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(r, A, r', omega_global)`` of a body at the last state set."""
        return self._pose[id(body)]

    def surface_pose(self, s: Surface) -> tuple[np.ndarray, np.ndarray]:
        r, A, _, _ = self.pose(s.body)
        return A @ s.rotation, r + A @ s.offset

    def velocity_at(self, body: Body, P: np.ndarray) -> np.ndarray:
        r, _, v, w = self.pose(body)
        return v + np.cross(w, P - r)

    # -- contacts ----------------------------------------------------------------------------------

    def broad_gap(self, c: ContactModel) -> float | None:
        """A lower bound of the gap (m) from the tables' bounding volumes (a sphere around surface
        i against the box of surface j), or None if a table has no bounding box."""
        bi, bj = c.i.bound(), c.j.bound()
        if bi is None or bj is None:
            return None
        Ri, ci = self.surface_pose(c.i)
        Rj, cj = self.surface_pose(c.j)
        # the smaller of two bounding spheres of i: around its box, or around its frame's origin
        centre, radius = ci + Ri @ ((bi[0] + bi[1]) / 2), np.linalg.norm(bi[1] - bi[0]) / 2
        rmax = c.i.window.header.rmax
        if rmax is not None and rmax < radius:
            centre, radius = ci, rmax
        q = Rj.T @ (centre - cj) - (bj[0] + bj[1]) / 2
        outside = np.maximum(np.abs(q) - (bj[1] - bj[0]) / 2, 0.0)
        return float(np.linalg.norm(outside) - radius)

    def detect(self, c: ContactModel) -> Contact:
        Ri, ci = self.surface_pose(c.i)
        Rj, cj = self.surface_pose(c.j)
        assert c.pair is not None
        return c.pair.detect(np.ascontiguousarray(Ri), ci, np.ascontiguousarray(Rj), cj, strict=True)

    def indentation_rate(self, c: ContactModel, k: Contact) -> float:
        vi = self.velocity_at(c.i.body, k.point_i)
        vj = self.velocity_at(c.j.body, k.point_j)
        return float(np.dot(vj - vi, k.normal))

    def contact_force(self, c: ContactModel) -> tuple[Contact, float, float]:
        """Detect and evaluate: (contact, indentation rate m/s, normal force N)."""
        k = self.detect(c)
        rate = self.indentation_rate(c, k)
        f = c.law.force(k.indentation, rate, c.impact_velocity) if k.indentation > 0 else 0.0
        return k, rate, f

    def gap(self, c: ContactModel, margin: float = 1e-3) -> float:
        """Signed gap (m): minus the indentation; a bounding-volume bound while far apart."""
        bound = self.broad_gap(c)
        if bound is not None and bound > margin:
            return bound
        return -self.detect(c).indentation

    # -- equations of motion -----------------------------------------------------------------------

    def rhs(self, t: float, y: np.ndarray) -> np.ndarray:
        self.rhs_evaluations += 1
        self.set_state(y)
        F = {id(b): b.mass * self.gravity.copy() for b in self.free}
        N = {id(b): np.zeros(3) for b in self.free}  # global torques about the body origin

        def apply(body: Body, P: np.ndarray, f: np.ndarray) -> None:
            if body.fixed:
                return
            F[id(body)] += f
            N[id(body)] += np.cross(P - self._pose[id(body)][0], f)

        for c in self.contacts:
            if not c.active:
                continue
            k, _, f = self.contact_force(c)
            if f > 0.0:
                apply(c.i.body, k.point_i, f * k.normal)
                apply(c.j.body, k.point_j, -f * k.normal)
        for load in self.loads:
            for body, P, f in load(t, self):
                apply(body, P, f)
        dy = np.empty_like(y)
        for b in self.free:
            k = 13 * self.index[id(b)]
            p = y[k + 3:k + 7]
            w = y[k + 10:k + 13]
            A = self._pose[id(b)][1]
            dy[k:k + 3] = y[k + 7:k + 10]
            dy[k + 3:k + 7] = 0.5 * L_matrix(p).T @ w - DRIFT_GAIN * (p @ p - 1.0) * p
            dy[k + 7:k + 10] = F[id(b)] / b.mass
            n_body = A.T @ N[id(b)]
            dy[k + 10:k + 13] = self._Jinv[id(b)] @ (n_body - np.cross(w, b.inertia @ w))
        return dy

    def energy(self, y: np.ndarray) -> float:
        """Kinetic + gravitational + elastic contact energy (J) at state ``y`` (contacts in
        contact mode contribute their law's elastic energy)."""
        self.set_state(y)
        e = 0.0
        for b in self.free:
            k = 13 * self.index[id(b)]
            v, w = y[k + 7:k + 10], y[k + 10:k + 13]
            e += 0.5 * b.mass * v @ v + 0.5 * w @ b.inertia @ w - b.mass * self.gravity @ y[k:k + 3]
        for c in self.contacts:
            if hasattr(c.law, "elastic_energy"):
                g = self.gap(c)
                e += c.law.elastic_energy(-g)
        return e


def _normalize(system: MultibodySystem, y: np.ndarray) -> np.ndarray:
    y = y.copy()
    for b in system.free:
        k = 13 * system.index[id(b)]
        y[k + 3:k + 7] /= np.linalg.norm(y[k + 3:k + 7])
    return y


def simulate(system: MultibodySystem, t_end: float, *, method: str = "DOP853", rtol: float = 1e-10,
             atol: float = 1e-12, max_step: float = np.inf, h: float = 1e-5,
             progress: Callable[[float], None] | None = None) -> SimulationResult:
    """Integrate ``system`` from t = 0 to ``t_end`` (s).

    ``method``: a ``scipy.integrate.solve_ivp`` method name, or ``"rk4"`` (fixed step ``h``).
    Contact onsets and separations are events (see the module docstring). Failures (integrator,
    contact detection) end the run with ``status = -1`` and a message; the result then covers
    what was integrated.
    """
    t0 = time.perf_counter()
    y = _normalize(system, system.initial_state())
    t = 0.0
    events: list[dict[str, Any]] = []
    segments: list[Any] = []
    ts, ys = [np.array([0.0])], [y[:, None]]
    nfev = steps = 0
    status, message = 0, "finished"

    def make_event(c: ContactModel) -> Callable[[float, np.ndarray], float]:
        def ev(tt: float, yy: np.ndarray) -> float:
            system.set_state(yy)
            return system.gap(c)
        ev.terminal = True  # type: ignore[attr-defined]
        ev.direction = 1.0 if c.active else -1.0  # type: ignore[attr-defined]
        return ev

    def switch(c: ContactModel, tt: float, yy: np.ndarray) -> None:
        system.set_state(yy)
        if c.active:
            c.active = False
            k = system.detect(c)
            events.append({"t": tt, "contact": c.name, "type": "separation",
                           "separation_velocity": -system.indentation_rate(c, k)})
        else:
            k = system.detect(c)
            c.impact_velocity = max(system.indentation_rate(c, k), 1e-12)
            c.active = True
            events.append({"t": tt, "contact": c.name, "type": "onset", "impact_velocity": c.impact_velocity})

    try:
        # contacts already closed at t = 0 start in contact mode
        system.set_state(y)
        for c in system.contacts:
            if system.gap(c) < 0:
                switch(c, 0.0, y)
        while t < t_end - 1e-15:
            evs = [make_event(c) for c in system.contacts]
            if method == "rk4":
                seg_t, seg_y, fired, n = _rk4(system, t, y, t_end, h, evs)
                nfev += 4 * n
                steps += n
                segments.append(_PiecewiseCubic(seg_t, seg_y, system))
            else:
                sol = solve_ivp(system.rhs, (t, t_end), y, method=method, rtol=rtol, atol=atol, max_step=max_step,
                                events=evs, dense_output=True)
                nfev += sol.nfev
                steps += len(sol.t) - 1
                if sol.status == -1:
                    raise SimulationError(f"integrator failed at t = {sol.t[-1]:.6g} s: {sol.message}")
                segments.append(sol.sol)
                seg_t, seg_y = sol.t, sol.y
                fired = [k for k, te in enumerate(sol.t_events) if len(te)] if sol.status == 1 else []
            ts.append(seg_t[1:])
            ys.append(seg_y[:, 1:])
            t, y = float(seg_t[-1]), _normalize(system, seg_y[:, -1])
            for k in fired:
                switch(system.contacts[k], t, y)
            if progress is not None:
                progress(t)
    except (SimulationError, ContactError) as exc:
        status, message = -1, str(exc)
    return SimulationResult(status=status, message=message, t=np.concatenate(ts), y=np.concatenate(ys, axis=1),
                            nfev=nfev, steps=steps, events=events, segments=segments,
                            wall_s=time.perf_counter() - t0)


class _PiecewiseCubic:
    """Dense output of a fixed-step segment: cubic Hermite between steps (uses the RHS)."""

    def __init__(self, t: np.ndarray, y: np.ndarray, system: MultibodySystem) -> None:
        from scipy.interpolate import CubicHermiteSpline

        dy = np.column_stack([system.rhs(tt, y[:, k]) for k, tt in enumerate(t)])
        self._s = CubicHermiteSpline(t, y, dy, axis=1) if len(t) > 1 else None
        self.t_min, self.t_max = float(t[0]), float(t[-1])
        self._y0 = y[:, 0]

    def __call__(self, t: float) -> np.ndarray:
        return self._y0 if self._s is None else self._s(t)


def _rk4(system: MultibodySystem, t: float, y: np.ndarray, t_end: float, h: float,
         evs: list[Callable]) -> tuple[np.ndarray, np.ndarray, list[int], int]:
    """Classical RK4 with fixed step h until t_end or the first event sign change (located to the step)."""
    f = system.rhs
    ts, ys = [t], [y]
    g0 = [ev(t, y) for ev in evs]
    n = 0
    while t < t_end - 1e-15:
        hh = min(h, t_end - t)
        k1 = f(t, y)
        k2 = f(t + hh / 2, y + hh / 2 * k1)
        k3 = f(t + hh / 2, y + hh / 2 * k2)
        k4 = f(t + hh, y + hh * k3)
        y = y + hh / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        t += hh
        n += 1
        ts.append(t)
        ys.append(y)
        fired = []
        for k, ev in enumerate(evs):
            g = ev(t, y)
            d = ev.direction  # type: ignore[attr-defined]
            if (g0[k] < 0 <= g and d > 0) or (g0[k] > 0 >= g and d < 0):
                fired.append(k)
            g0[k] = g
        if fired:
            return np.array(ts), np.column_stack(ys), fired, n
    return np.array(ts), np.column_stack(ys), [], n
