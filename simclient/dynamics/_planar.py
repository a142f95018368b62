"""Planar rigid-body dynamics with contact, joints and prescribed motion (the thesis' chapter 5,
Markus et al. 2019).

Each free body has the coordinates ``q = (x, y, phi)`` (m, m, rad; the position of its centre of
mass and the angle of its frame) and the velocities ``q' = (x', y', phi')``; the state is
``y = (q of every free body, q' of every free body)``. Equations of motion, the augmented form of
thesis eq. (6.24) in the plane::

    [ M   C_q^T ] [ q'' ]   [ Q     ]
    [ C_q   0   ] [ -l  ] = [ gamma ]

with ``M = diag(m, m, J)`` per body, ``Q`` the generalized forces (forces, and their moments about
each centre of mass), ``C(q, t) = 0`` the constraints (revolute joints, prescribed coordinates) with
their analytic Jacobian ``C_q`` and ``gamma = -(C_q q')_q q' - 2 C_qt q' - C_tt``, Baumgarte-stabilised
(``- 2 a C' - a^2 C``). :meth:`PlanarSystem.assemble` closes the constraints by Newton (Markus eqs.
3-4) and :meth:`PlanarSystem.normalize` projects positions and velocities back onto them; the
integrator calls it at every restart, and ``simulate(..., project_every=...)`` restarts as often as
the drift requires.

Contacts are planar contact models: profile tables (:class:`simclient.contact.ProfilePair`) or the
closed-form circles (:class:`simclient.contact.CirclePair`) on bodies, with any force law; they are
watched and switched by events exactly as in the spatial system (:func:`simclient.dynamics.simulate`).
Loads are those of :mod:`simclient.dynamics._loads` (ligaments, point loads, spring-dampers): they
read poses through the same ``pose``/``velocity_at`` interface, here with planar vectors.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from simclient.contact import Contact, ContactForce, ContactPair, ForceLaw, Friction, checked_friction, planar_pose
from simclient.dynamics._bodies import check_numbers
from simclient.dynamics._loads import Load, loads_energy
from simclient.errors import ContactError, ParameterError, SimulationError
from simclient.geometry import StorageWindow, rot2

__all__ = ["PlanarBody", "ProfileSurface", "PlanarContact", "PlanarSystem", "Revolute2D", "PrescribedMotion",
           "PlanarConstraint"]


#: a gap (m) beyond which the profiles' nearest points stand in for a failed common-normal probe
GAP_MARGIN = 2e-4


def _perp(v: np.ndarray) -> np.ndarray:
    """The vector turned by +90 degrees."""
    return np.array([-v[1], v[0]])


@dataclass
class PlanarBody:
    """A planar rigid body: ``mass`` (kg), ``inertia`` (kg m^2, about its centre of mass, which is
    the frame's origin), initial ``position`` (m), ``angle`` (rad), ``velocity`` (m/s) and ``omega``
    (rad/s). A ``fixed`` body does not move (its pose is its initial one)."""

    name: str
    mass: float = 0.0
    inertia: float = 0.0
    position: np.ndarray = field(default_factory=lambda: np.zeros(2))
    angle: float = 0.0
    velocity: np.ndarray = field(default_factory=lambda: np.zeros(2))
    omega: float = 0.0
    fixed: bool = False


@dataclass
class ProfileSurface:
    """A profile on a body: the ``window`` reading its table (None for a closed-form circle or
    line) and its placement in the body, ``offset`` (m) and ``angle`` (rad)."""

    body: PlanarBody
    window: StorageWindow | None = None
    offset: np.ndarray = field(default_factory=lambda: np.zeros(2))
    angle: float = 0.0


class _PairLike(Protocol):
    def detect(self, R_i: np.ndarray, c_i: np.ndarray, R_j: np.ndarray, c_j: np.ndarray, strict: bool = ...,
               update_windows: bool = ...) -> Contact: ...


@dataclass
class PlanarContact:
    """A planar contact between surfaces ``i`` and ``j`` with a force ``law``, detected by ``pair``
    (a :class:`simclient.contact.ProfilePair` or :class:`simclient.contact.CirclePair`); with
    ``friction`` (:class:`simclient.contact.Friction`; None: frictionless) a tangential force
    opposes the slip of its bodies at the contact, as at a spatial point contact."""

    name: str
    i: ProfileSurface
    j: ProfileSurface
    law: ForceLaw
    pair: _PairLike
    active: bool = False
    impact_velocity: float = 0.0
    friction: Friction | None = None

    def __post_init__(self) -> None:
        checked_friction(self.friction, f"contact {self.name}")


class PlanarConstraint(Protocol):
    """Constraint equations ``C(q, t) = 0`` with their Jacobian and acceleration right-hand side.

    ``equations(system, t) -> (C (k,), C_q (k, 3 n), gamma (k,))`` where ``gamma`` is the part of
    ``C_q q'' = gamma`` that does not depend on ``q''`` (velocity products and time derivatives);
    ``C_t(system, t) -> (k,)``, the explicit time derivative (0 for joints)."""

    def equations(self, system: PlanarSystem, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...

    def C_t(self, system: PlanarSystem, t: float) -> np.ndarray: ...


@dataclass
class Revolute2D:
    """A revolute joint: ``point_a`` of ``body_a`` coincides with ``point_b`` of ``body_b`` (body
    frames, m). Two equations."""

    body_a: PlanarBody
    point_a: np.ndarray
    body_b: PlanarBody
    point_b: np.ndarray

    def equations(self, system: PlanarSystem, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        # in scalars: the mechanisms' right-hand sides evaluate this for every joint at every stage
        Cq = np.zeros((2, 3 * system.n))
        C0 = C1 = g0 = g1 = 0.0
        for body, point, sign in ((self.body_a, self.point_a, 1.0), (self.body_b, self.point_b, -1.0)):
            r, A, _, w = system.pose(body)
            (a00, a01), (a10, a11) = A.tolist()
            px, py = float(point[0]), float(point[1])
            sx, sy = a00 * px + a01 * py, a10 * px + a11 * py  # s = A point
            C0 += sign * (float(r[0]) + sx)
            C1 += sign * (float(r[1]) + sy)
            g0 += sign * sx * w * w  # d2/dt2 (A s) = A_phi s phi'' - A s phi'^2
            g1 += sign * sy * w * w
            k = system.column(body)
            if k is not None:
                Cq[0, k] = Cq[1, k + 1] = sign
                Cq[0, k + 2], Cq[1, k + 2] = -sign * sy, sign * sx  # sign * perp(s)
        return np.array([C0, C1]), Cq, np.array([g0, g1])

    def C_t(self, system: PlanarSystem, t: float) -> np.ndarray:
        return np.zeros(2)


@dataclass
class PrescribedMotion:
    """Prescribed coordinates of ``body``: ``coordinates`` (a subset of 0: x, 1: y, 2: phi) follow
    ``motion(t) -> (values, first derivatives, second derivatives)`` (arrays over the subset)."""

    body: PlanarBody
    coordinates: tuple[int, ...]
    motion: Callable[[float], tuple[np.ndarray, np.ndarray, np.ndarray]]
    _last: tuple[float, Any] | None = field(default=None, init=False, repr=False, compare=False)

    def _motion(self, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``motion(t)``, once per time: the right-hand side asks for it twice (equations, C_t)."""
        if self._last is None or self._last[0] != t:
            self._last = (t, self.motion(t))
        return self._last[1]

    def equations(self, system: PlanarSystem, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        k = system.column(self.body)
        if k is None:
            raise ParameterError(f"prescribed motion of the fixed body {self.body.name}")
        value, _, acc = self._motion(t)
        q = system.coordinates(self.body)
        Cq = np.zeros((len(self.coordinates), 3 * system.n))
        for row, c in enumerate(self.coordinates):
            Cq[row, k + c] = 1.0
        return q[list(self.coordinates)] - np.asarray(value), Cq, np.asarray(acc, float)

    def C_t(self, system: PlanarSystem, t: float) -> np.ndarray:
        return -np.asarray(self._motion(t)[1], float)


class PlanarSystem:
    """Planar bodies, contacts, loads, constraints and gravity (m/s^2, global, 2-vector).

    ``baumgarte`` (1/s) stabilises the constraints; :meth:`normalize` projects onto them.
    """

    def __init__(self, bodies: Sequence[PlanarBody], contacts: Sequence[PlanarContact] = (),
                 gravity: Sequence[float] = (0.0, -9.81), loads: Sequence[Load] = (),
                 constraints: Sequence[PlanarConstraint] = (), baumgarte: float = 100.0,
                 projection_tol: float = 1e-12) -> None:
        self.bodies = list(bodies)
        self.free = [b for b in self.bodies if not b.fixed]
        self.n = len(self.free)
        self._col = {id(b): 3 * k for k, b in enumerate(self.free)}
        for b in self.bodies:
            check_numbers(f"body {b.name}", {"position": (b.position, (2,)), "angle": (b.angle, ()),
                                             "velocity": (b.velocity, (2,)), "omega": (b.omega, ())})
            if not b.fixed:
                check_numbers(f"body {b.name}", {"mass": (b.mass, ()), "inertia": (b.inertia, ())})
                if not (b.mass > 0 and b.inertia > 0):
                    raise ParameterError(f"body {b.name}: mass (kg) and inertia (kg m^2) must be positive")
        self.contacts = list(contacts)
        self.loads = list(loads)
        self.constraints = list(constraints)
        self.gravity = np.asarray(gravity, float)
        self.baumgarte = baumgarte
        self.projection_tol = projection_tol
        self._M = np.concatenate([[b.mass, b.mass, b.inertia] for b in self.free]) if self.free else np.zeros(0)
        self._q = np.zeros(3 * self.n)
        self._v = np.zeros(3 * self.n)
        self._t = 0.0
        # every body's pose at the state set, made on first use (ligaments ask for it several times)
        self._poses: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, float]] = {}

    # -- state ------------------------------------------------------------------------------------
    def initial_state(self) -> np.ndarray:
        q = np.concatenate([[*b.position, b.angle] for b in self.free]) if self.free else np.zeros(0)
        v = np.concatenate([[*b.velocity, b.omega] for b in self.free]) if self.free else np.zeros(0)
        return np.concatenate([q, v])

    def set_state(self, y: np.ndarray, t: float | None = None) -> None:
        n3 = 3 * self.n
        self._q, self._v = y[:n3], y[n3:]
        self._poses.clear()
        if t is not None:
            self._t = t

    def column(self, body: PlanarBody) -> int | None:
        """The first column of ``body``'s coordinates in ``q`` (None for a fixed body)."""
        return self._col.get(id(body))

    def coordinates(self, body: PlanarBody) -> np.ndarray:
        k = self.column(body)
        return np.array([*body.position, body.angle]) if k is None else self._q[k:k + 3]

    def pose(self, body: PlanarBody) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
        """``(r, A, r', omega)``: position (m), rotation matrix, velocity (m/s), angular velocity (rad/s)."""
        pose = self._poses.get(id(body))
        if pose is None:
            k = self.column(body)
            if k is None:
                pose = np.asarray(body.position, float), rot2(body.angle), np.zeros(2), 0.0
            else:
                q, v = self._q[k:k + 3], self._v[k:k + 3]
                pose = q[:2], rot2(q[2]), v[:2], float(v[2])
            self._poses[id(body)] = pose
        return pose

    def velocity_at(self, body: PlanarBody, P: np.ndarray) -> np.ndarray:
        """Velocity (m/s) of the body's material point at global ``P`` (m)."""
        r, _, v, w = self.pose(body)
        return v + w * _perp(np.asarray(P)[:2] - r)

    def surface_pose(self, s: ProfileSurface, ahead: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        """The 3D embedding ``(R, c)`` of a surface's global pose; with ``ahead`` (s), that long
        after the last state set, its body moving on at its velocity and angular velocity (as
        :meth:`MultibodySystem.surface_pose`)."""
        r, A, v, w = self.pose(s.body)
        if ahead:
            r, A = r + v * ahead, rot2(w * ahead) @ A
        c = r + A @ s.offset
        angle = math.atan2(A[1, 0], A[0, 0]) + s.angle
        return planar_pose(float(c[0]), float(c[1]), angle)

    # -- contacts ---------------------------------------------------------------------------------
    def detect(self, c: PlanarContact) -> Contact:
        return c.pair.detect(*self.surface_pose(c.i), *self.surface_pose(c.j), strict=True)

    def gap(self, c: PlanarContact) -> float:
        """Signed gap (m), minus the indentation, from a probe that leaves the windows in place.
        Where the profiles have no common normal on the windows (far apart, or the contact point
        past a profile's end) the nearest points' gap stands in, if it is clearly open."""
        poses = (*self.surface_pose(c.i), *self.surface_pose(c.j))
        k = c.pair.detect(*poses, update_windows=False)
        if k.converged or k.status.left_window:
            return -k.indentation
        coarse = getattr(c.pair, "coarse_depth", None)
        if coarse is not None:
            depth = coarse(*poses)
            if depth < -GAP_MARGIN:
                return -depth
        raise ContactError(f"contact {c.name}: {k.status} at {k.params.tolist()}")

    def relative_velocity(self, c: PlanarContact, k: Contact) -> np.ndarray:
        """``v_i(P_i) - v_j(P_j)`` (m/s) as a 3-vector with z = 0."""
        v = self.velocity_at(c.i.body, k.point_i) - self.velocity_at(c.j.body, k.point_j)
        return np.array([v[0], v[1], 0.0])

    def contact_force(self, c: PlanarContact) -> tuple[Contact, ContactForce]:
        """Detect and apply the law (and the friction, at the middle of the indentation)."""
        k = self.detect(c)
        cf = c.law.contact_force(k, self.relative_velocity(c, k), c.impact_velocity)
        if c.friction is None:
            return k, cf
        middle = k.middle
        slip = self.velocity_at(c.i.body, middle) - self.velocity_at(c.j.body, middle)
        return k, c.friction.apply(cf, k, np.array([slip[0], slip[1], 0.0]))

    # -- equations of motion ---------------------------------------------------------------------
    def _add(self, Q: np.ndarray, body: Any, P: np.ndarray, f: np.ndarray) -> None:
        k = self.column(body)
        if k is None:
            return
        r = self._q[k:k + 2]
        Q[k] += f[0]
        Q[k + 1] += f[1]
        Q[k + 2] += (P[0] - r[0]) * f[1] - (P[1] - r[1]) * f[0]

    def forces(self, t: float) -> np.ndarray:
        """Generalized forces ``Q`` (N, N, N m per body) at the current state."""
        Q = np.zeros(3 * self.n)
        for b in self.free:
            k = self._col[id(b)]
            Q[k:k + 2] += b.mass * self.gravity
        for c in self.contacts:
            if c.active:
                _, cf = self.contact_force(c)
                self._add(Q, c.i.body, cf.point, cf.force)
                self._add(Q, c.j.body, cf.point_j, -cf.force)
        for load in self.loads:
            for item in load(t, self):  # type: ignore[arg-type]  # planar poses, same interface
                if len(item) > 3:
                    raise ParameterError(f"load {load!r}: a planar system takes forces at points, not moments")
                self._add(Q, item[0], np.asarray(item[1], float), np.asarray(item[2], float))
        return Q

    def _constraint_system(self, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        parts = [c.equations(self, t) for c in self.constraints]
        C = np.concatenate([p[0] for p in parts])
        Cq = np.vstack([p[1] for p in parts])
        gamma = np.concatenate([p[2] for p in parts])
        Ct = np.concatenate([c.C_t(self, t) for c in self.constraints])
        return C, Cq, gamma, Ct

    def rhs(self, t: float, y: np.ndarray) -> np.ndarray:
        self.set_state(y, t)
        Q = self.forces(t)
        acc = Q / self._M
        if self.constraints:
            C, Cq, gamma, Ct = self._constraint_system(t)
            a = self.baumgarte
            g = gamma - 2 * a * (Cq @ self._v + Ct) - a * a * C
            # [M Cq^T; Cq 0] [q''; -l] = [Q; g], solved through the Schur complement (M is diagonal)
            S = (Cq / self._M) @ Cq.T
            try:
                lam = np.linalg.solve(S, g - Cq @ acc)
            except np.linalg.LinAlgError:
                raise SimulationError(f"t = {t:.6g} s: the constraint Jacobian is singular (a locked or "
                                      "redundant mechanism)") from None
            acc = acc + (Cq.T @ lam) / self._M
        return np.concatenate([self._v, acc])

    # -- constraints at position and velocity level ------------------------------------------------
    def assemble(self, t: float = 0.0, max_iter: int = 50) -> float:
        """Close the constraints at time ``t`` by Newton on the bodies' coordinates, least-norm
        corrections ``C_q dq = -C`` (Markus eqs. 3-4), and make the velocities consistent
        (``C_q q' = -C_t``); the bodies' initial coordinates and velocities are updated. Returns the
        remaining residual (m or rad); :class:`SimulationError` if Newton does not converge."""
        y = self.normalize(self.initial_state(), t, max_iter=max_iter)
        n3 = 3 * self.n
        for k, b in enumerate(self.free):
            b.position, b.angle = y[3 * k:3 * k + 2].copy(), float(y[3 * k + 2])
            b.velocity, b.omega = y[n3 + 3 * k:n3 + 3 * k + 2].copy(), float(y[n3 + 3 * k + 2])
        return self.constraint_residual(y, t)

    def constraint_residual(self, y: np.ndarray, t: float) -> float:
        """The largest constraint violation (m or rad) at state ``y`` and time ``t``."""
        if not self.constraints:
            return 0.0
        self.set_state(y, t)
        return float(np.abs(self._constraint_system(t)[0]).max())

    def normalize(self, y: np.ndarray, t: float | None = None, max_iter: int = 20) -> np.ndarray:
        """Project a state onto the constraints (positions by Newton with least-norm steps, then the
        velocities), to ``projection_tol``; the integrator calls it at every restart."""
        if not self.constraints:
            return y
        t = self._t if t is None else t
        y = y.copy()
        n3 = 3 * self.n
        for _ in range(max_iter):
            self.set_state(y, t)
            C, Cq, _, _ = self._constraint_system(t)
            if np.abs(C).max() <= self.projection_tol:
                break
            y[:n3] -= np.linalg.lstsq(Cq, C, rcond=None)[0]
        else:
            raise SimulationError(f"t = {t:.6g} s: the constraints could not be closed (residual "
                                  f"{np.abs(C).max():.3e}); the mechanism cannot be assembled there")
        self.set_state(y, t)
        _, Cq, _, Ct = self._constraint_system(t)
        y[n3:] -= np.linalg.lstsq(Cq, Cq @ y[n3:] + Ct, rcond=None)[0]
        self.set_state(y, t)
        return y

    def place_windows(self, y: np.ndarray) -> None:
        """Set state ``y`` and move every contact's windows to its contact point there
        (:meth:`MultibodySystem.place_windows`)."""
        self.set_state(y)
        for c in self.contacts:
            if isinstance(c.pair, ContactPair):  # (a circle pair has no windows)
                c.pair.place(*self.surface_pose(c.i), *self.surface_pose(c.j))

    def energy(self, y: np.ndarray) -> float:
        """Kinetic + gravitational energy (J) plus the contacts' elastic energy and the energy the
        loads store (ligaments, springs), the windows moved to ``y``'s contact points first (any
        state can be asked, in any order)."""
        self.place_windows(y)
        n3 = 3 * self.n
        q, v = y[:n3], y[n3:]
        e = 0.5 * float(self._M @ (v * v))
        for k, b in enumerate(self.free):
            e -= b.mass * float(self.gravity @ q[3 * k:3 * k + 2])
        for c in self.contacts:
            e += c.law.elastic_energy(-self.gap(c))
        return e + loads_energy(self.loads, self)  # type: ignore[arg-type]  # planar poses, same interface
