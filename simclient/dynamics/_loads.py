"""Ligaments (tension-only point-to-point springs) and external loads, as loads of a
:class:`simclient.dynamics.MultibodySystem`: callables ``load(t, system) -> [(body, P, f)]``
giving forces ``f`` (N, global) at global points ``P`` (m).

Force laws (``force(length) -> N``):

- :class:`QuadraticLaw` (thesis 5.23-5.24): ``F = k (l - l0)^2`` for ``l > l0``, else 0
  (``k`` in N/m^2; the thesis' N/mm^2 times 1e6).
- :class:`BlankevoortLaw` (Wismans 1980 / Blankevoort 1991, eqs. 6-8): strain
  ``eps = (l - l0)/l0``; ``F = k eps^2 / (4 eps_l)`` for ``0 <= eps <= 2 eps_l`` (the toe region),
  ``k (eps - eps_l)`` beyond, 0 when slack; ``k`` in N, ``eps_l = 0.03``; the slack length from
  a reference length and strain, ``l0 = l_r / (eps_r + 1)``.

Optional damping ``c`` (N s/m) adds ``c l'`` while the ligament is taut (never pushing).

:class:`FoundationLoad` makes an elastic-foundation contact (:class:`simclient.contact.FoundationContact`)
a load: its net force and torque on the two bodies at their poses and relative velocity.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol, cast

import numpy as np

from simclient.contact import CompartmentResult, FoundationContact
from simclient.dynamics._bodies import Body, Poses
from simclient.errors import ParameterError
from simclient.dynamics._rules import ligament_tension, spring_force
from simclient.geometry import layout as L
from simclient.geometry import surface_pose

__all__ = ["Load", "LigamentLaw", "QuadraticLaw", "BlankevoortLaw", "LinearSpring", "Ligament", "spring_damper",
           "pulse", "PointLoad", "spring_energy", "FoundationLoad", "StatePoses"]

#: what a load gives: a body, a point (m) and a force (N), and perhaps a moment (N m), global
LoadItem = tuple[Body, np.ndarray, np.ndarray] | tuple[Body, np.ndarray, np.ndarray, np.ndarray]


def spring_energy(kind: int, p: np.ndarray, length: float) -> float:
    """Energy (J) stored by a compiled ligament law (:func:`spring_force`'s ``kind`` and ``p``) at
    ``length`` (m): the integral of its force from the slack length, in closed form."""
    k, l0 = p[0], p[1]
    if kind == L.SPRING_QUADRATIC:
        return k * (length - l0) ** 3 / 3 if length > l0 else 0.0
    if kind == L.SPRING_BLANKEVOORT:  # the toe region's k eps^3 / (12 eps_l), then the line's
        eps, eps_l = (length - l0) / l0, p[2]
        if eps <= 0.0:
            return 0.0
        if eps <= 2 * eps_l:
            return k * l0 * eps**3 / (12 * eps_l)
        return k * l0 * (2 * eps_l**2 / 3 + ((eps - eps_l) ** 2 - eps_l**2) / 2)
    if kind == L.SPRING_LINEAR:
        return k * (length - l0) ** 2 / 2
    return math.nan


class Load(Protocol):
    """A load: ``load(t, system) -> [(body, P, f)]``, forces ``f`` (N) at points ``P`` (m), global;
    an item may carry a fourth entry, a moment (N m, global) on the body besides the force's
    (:class:`FoundationLoad`'s torques; spatial systems only). A load that stores energy says how
    much by a method ``elastic_energy(system) -> J``, which the systems' ``energy`` counts
    (:class:`Ligament`, :class:`FoundationLoad`); other loads do work from outside. A load with
    internal states says how many by ``n_states`` (:class:`FoundationLoad` on a viscoelastic layer;
    spatial systems only, see :class:`StatePoses`)."""

    def __call__(self, t: float, system: Poses) -> Sequence[LoadItem]: ...


class StatePoses(Poses, Protocol):
    """A spatial system as a stateful load sees it: the poses, and the load's internal states at
    the current state (None in a quasi-static analysis: the load is at rest) and where it writes
    their time derivatives (:class:`simclient.dynamics.MultibodySystem`)."""

    def load_state(self, load: Load) -> np.ndarray | None: ...

    def load_rates(self, load: Load) -> np.ndarray: ...


class LigamentLaw(Protocol):
    """A ligament's force ``force(length) -> N`` (0 when slack) with slack length ``l0`` (m). A law
    may also give its stored energy ``energy(length) -> J`` (the integral of its force from the
    slack length; the shipped laws do), which :meth:`Ligament.elastic_energy` reads."""

    @property
    def l0(self) -> float: ...

    def force(self, length: float) -> float: ...


@dataclass(frozen=True)
class QuadraticLaw:
    """``F = k (l - l0)^2`` for ``l > l0`` (k in N/m^2, lengths in m)."""

    k: float
    l0: float

    @cached_property
    def packed(self) -> tuple[int, np.ndarray]:
        """``(kind, parameters)`` of :func:`spring_force`."""
        return L.SPRING_QUADRATIC, np.array([self.k, self.l0, 0.0])

    def force(self, length: float) -> float:
        return spring_force(L.SPRING_QUADRATIC, self.packed[1], length)

    def energy(self, length: float) -> float:
        """Stored energy (J) at ``length`` (m)."""
        return spring_energy(L.SPRING_QUADRATIC, self.packed[1], length)


@dataclass(frozen=True)
class BlankevoortLaw:
    """Toe region then linear (k in N, lengths in m, ``eps_l`` the toe strain limit)."""

    k: float
    l0: float
    eps_l: float = 0.03

    @classmethod
    def from_reference(cls, k: float, l_ref: float, eps_ref: float, eps_l: float = 0.03) -> BlankevoortLaw:
        """Slack length from the reference length and reference strain: ``l0 = l_r/(eps_r + 1)``."""
        return cls(k, l_ref / (eps_ref + 1.0), eps_l)

    @cached_property
    def packed(self) -> tuple[int, np.ndarray]:
        """``(kind, parameters)`` of :func:`spring_force`."""
        return L.SPRING_BLANKEVOORT, np.array([self.k, self.l0, self.eps_l])

    def force(self, length: float) -> float:
        return spring_force(L.SPRING_BLANKEVOORT, self.packed[1], length)

    def energy(self, length: float) -> float:
        """Stored energy (J) at ``length`` (m)."""
        return spring_energy(L.SPRING_BLANKEVOORT, self.packed[1], length)


@dataclass(frozen=True)
class LinearSpring:
    """``F = k (l - l0)`` (k in N/m, lengths in m), positive in tension, negative in compression."""

    k: float
    l0: float

    @cached_property
    def packed(self) -> tuple[int, np.ndarray]:
        """``(kind, parameters)`` of :func:`spring_force`."""
        return L.SPRING_LINEAR, np.array([self.k, self.l0, 0.0])

    def force(self, length: float) -> float:
        return spring_force(L.SPRING_LINEAR, self.packed[1], length)

    def energy(self, length: float) -> float:
        """Stored energy (J) at ``length`` (m)."""
        return spring_energy(L.SPRING_LINEAR, self.packed[1], length)


@dataclass
class Ligament:
    """A ligament from ``point_a`` on ``body_a`` to ``point_b`` on ``body_b`` (body frames, m): the
    law's force along the line between the points, positive pulling them together, plus ``damping``
    (N s/m) times the lengthening rate. A ``tension_only`` element (a ligament) never pushes and is
    damped only while taut; otherwise (a spring-damper, :func:`spring_damper`) it pushes too.
    Call it as a load."""

    name: str
    body_a: Any  # a Body or a PlanarBody (with planar points)
    point_a: np.ndarray
    body_b: Any
    point_b: np.ndarray
    law: LigamentLaw
    damping: float = 0.0
    tension_only: bool = True

    def state(self, system: Poses, rate: bool = True) -> tuple[np.ndarray, np.ndarray, float, float, float]:
        """Global insertion points, length (m), lengthening rate (m/s) and tension (N;
        :func:`simclient.dynamics.ligament_tension`: never negative for a tension-only element).
        With ``rate`` false the rate is computed only where the tension needs it (damping), else
        reported as 0."""
        ra, Aa, _, _ = system.pose(self.body_a)
        rb, Ab, _, _ = system.pose(self.body_b)
        Pa = ra + Aa @ self.point_a
        Pb = rb + Ab @ self.point_b
        d = Pb - Pa
        length = float(math.sqrt(d @ d))
        lengthening = 0.0
        if rate or self.damping:
            lengthening = float((system.velocity_at(self.body_b, Pb) - system.velocity_at(self.body_a, Pa)) @ d
                                / length)
        f = ligament_tension(float(self.law.force(length)), lengthening, float(self.damping), bool(self.tension_only))
        return Pa, Pb, length, lengthening, f

    def elastic_energy(self, system: Poses) -> float:
        """Energy (J) the law stores at the system's state (0 for a tension-only element pushed
        shorter than its slack length; NaN if the law does not give its energy)."""
        length = self.state(system, rate=False)[2]
        energy = getattr(self.law, "energy", None)
        if energy is None:
            return math.nan
        return 0.0 if self.tension_only and self.law.force(length) < 0.0 else float(energy(length))

    def __call__(self, t: float, system: Poses) -> list[tuple[Body, np.ndarray, np.ndarray]]:
        Pa, Pb, length, _, f = self.state(system, rate=False)
        if f == 0.0 or (f < 0.0 and self.tension_only):
            return []
        u = (Pb - Pa) / length
        return [(self.body_a, Pa, f * u), (self.body_b, Pb, -f * u)]


def spring_damper(name: str, body_a: Any, point_a: np.ndarray, body_b: Any, point_b: np.ndarray, k: float,
                  c: float, l0: float) -> Ligament:
    """A linear spring-damper between two points (Markus et al. eq. 24): ``F = k (l - l0) + c l'``
    (N; k in N/m, c in N s/m, l0 in m), pulling the points together when positive."""
    return Ligament(name, body_a, point_a, body_b, point_b, LinearSpring(k, l0), damping=c, tension_only=False)


def pulse(A: float, t_d: float) -> Callable[[float], float]:
    """The pulse ``F(t) = A exp(-4.73 (t/t_d)^2) sin(pi t/t_d)`` (N) for ``0 <= t <= t_d``, 0 after
    (assumption: the thesis does not say whether it is switched off after t_d). ``t_d`` in s."""
    if not (t_d > 0 and math.isfinite(t_d)):
        raise ParameterError(f"pulse: the duration t_d must be positive (s), got {t_d}")

    def f(t: float) -> float:
        return A * math.exp(-4.73 * (t / t_d) ** 2) * math.sin(math.pi * t / t_d) if 0.0 <= t <= t_d else 0.0
    return f


@dataclass
class PointLoad:
    """A force of magnitude ``magnitude(t)`` (N) at ``point`` (body frame, m) along the body-fixed
    ``direction`` (unit vector, body frame)."""

    body: Any  # a Body or a PlanarBody (with planar vectors)
    point: np.ndarray
    direction: np.ndarray
    magnitude: Callable[[float], float]

    def __call__(self, t: float, system: Poses) -> list[tuple[Body, np.ndarray, np.ndarray]]:
        r, A, _, _ = system.pose(self.body)
        return [(self.body, r + A @ self.point, self.magnitude(t) * (A @ self.direction))]


class FoundationLoad:
    """Elastic-foundation contact as a load of a :class:`simclient.dynamics.MultibodySystem`
    (Simbody's ``ElasticFoundationForce``): ``contact``'s element grids ride on ``fixed`` (the layer;
    its table frame placed in the body by ``fixed_offset`` (m) and ``fixed_rotation``), its moving
    table(s) on ``moving`` (``moving_offset``, ``moving_rotation``). At each evaluation the contact
    is detected at the bodies' poses, with their relative velocity for its dissipation and friction
    (see :class:`simclient.contact.FoundationContact`); the moving body takes the elements' net
    force and torque, the fixed body the opposite. The forces depend on the poses continuously
    (an element's pressure rises from zero as it starts to penetrate), so it needs no contact
    events: the integrator's step control meets the contact. ``last`` holds the last evaluation's
    :class:`simclient.contact.CompartmentResult` per compartment (in the fixed surface frame).

    On a :class:`simclient.contact.ViscoelasticLayer` the load has ``n_states`` internal states,
    one per element (per sub-point with the quadratic quadrature): the system integrates them
    with the bodies. The state vector grows by that many (and the integrator's dense output with
    it: a 40 x 40 grid adds 1600 states; the quadratic quadrature 16 times as many)."""

    def __init__(self, contact: FoundationContact, fixed: Body, moving: Body, *,
                 fixed_offset: np.ndarray | None = None, fixed_rotation: np.ndarray | None = None,
                 moving_offset: np.ndarray | None = None, moving_rotation: np.ndarray | None = None) -> None:
        if not isinstance(contact, FoundationContact):
            raise ParameterError(f"elastic foundation: the contact must be a FoundationContact, got {contact!r}")
        if not (isinstance(fixed, Body) and isinstance(moving, Body)):
            raise ParameterError(f"elastic foundation: the layer's and the moving table's bodies must be Body objects "
                                 f"(a spatial system's), got {fixed!r} and {moving!r}")
        if fixed is moving:
            raise ParameterError(f"elastic foundation: the layer and the moving table are on one body ({fixed.name})")
        self.contact, self.fixed, self.moving = contact, fixed, moving
        self.placements = {id(fixed): _placement(fixed_offset, fixed_rotation),
                           id(moving): _placement(moving_offset, moving_rotation)}
        self.last: dict[str, CompartmentResult] = {}

    @property
    def n_states(self) -> int:
        """Internal states (a viscoelastic layer's, :attr:`FoundationContact.n_states`; else 0)."""
        return self.contact.n_states

    def surface_poses(self, system: Poses) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(R_fixed, c_fixed, R_moving, c_moving)``: the two table frames' global poses (m)."""
        return (*self._pose(system, self.fixed), *self._pose(system, self.moving))

    def _pose(self, system: Poses, body: Body) -> tuple[np.ndarray, np.ndarray]:
        r, A, _, _ = system.pose(body)
        R, c = surface_pose(r, A, *self.placements[id(body)])
        return np.ascontiguousarray(R), c

    def __call__(self, t: float, system: Poses) -> list[tuple[Body, np.ndarray, np.ndarray, np.ndarray]]:
        Rf, cf, Rm, cm = self.surface_poses(system)
        # the moving body's material velocity relative to the fixed body's, at the fixed frame's
        # origin, and the relative angular velocity: global, then in the fixed frame
        W = system.pose(self.moving)[3] - system.pose(self.fixed)[3]
        V = system.velocity_at(self.moving, cf) - system.velocity_at(self.fixed, cf)
        state, rates = _states(self, system) if self.n_states else (None, None)
        self.last = self.contact.evaluate(Rf, cf, Rm, cm, velocity=(Rf.T @ V, Rf.T @ W), state=state, rates=rates)
        F = Rf @ sum((r.force for r in self.last.values()), np.zeros(3))
        T = Rf @ sum((r.torque for r in self.last.values()), np.zeros(3))  # about the fixed frame's origin cf
        if not (F.any() or T.any()):
            return []
        return [(self.moving, cf, F, T), (self.fixed, cf, -F, -T)]

    def elastic_energy(self, system: Poses) -> float:
        """The layers' elastic energy (J) at the system's state (:meth:`FoundationContact.elastic_energy`,
        with the viscoelastic layer's states)."""
        state = _states(self, system)[0] if self.n_states else None
        return self.contact.elastic_energy(*self.surface_poses(system), state=state)


def _states(load: Load, system: Poses) -> tuple[np.ndarray | None, np.ndarray]:
    """A stateful load's state and where its rates go in ``system`` (a :class:`StatePoses`: only
    spatial systems, the ones whose bodies a :class:`FoundationLoad` takes, have load states)."""
    spatial = cast(StatePoses, system)
    return spatial.load_state(load), spatial.load_rates(load)


def _placement(offset: np.ndarray | None, rotation: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    return (np.zeros(3) if offset is None else np.asarray(offset, float),
            np.eye(3) if rotation is None else np.asarray(rotation, float))


def loads_energy(loads: Sequence[Load], system: Poses) -> float:
    """The energy (J) the ``loads`` store at the system's state: the sum of their
    ``elastic_energy(system)``, for those that have one (see :class:`Load`)."""
    total = 0.0
    for load in loads:
        stored = getattr(load, "elastic_energy", None)
        if stored is not None:
            total += stored(system)
    return total
