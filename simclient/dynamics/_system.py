"""Spatial rigid-body dynamics with contact on tabulated surfaces (Newton-Euler, Euler parameters).

State of each free body (13 values): position ``r`` (m, global), Euler parameters ``p``, velocity
``r'`` (m/s, global) and angular velocity ``w'`` (rad/s, body frame). Equations (thesis 6.1-6.8,
errata fixed; see :mod:`simclient.geometry`'s poses)::

    m r'' = f,     J' w'' = n' - w' x J' w',     p' = 1/2 L(p)^T w' - k (p.p - 1) p

``f`` (N, global) and ``n'`` (N m, body frame, about the centre of mass, which is the body origin)
sum gravity, external loads and contact forces; the last term of ``p'`` is drift control
(``k`` = 10 /s) and ``p`` is normalised at every restart.

Contacts run in two modes. Apart: a contact is only watched by an event function (its gap, or a
cheap bounding-volume distance while the bodies are far apart), so no force is computed; its
windows follow the bodies at every accepted step (:meth:`ContactPair.follow`). When the
gap closes the integration stops at the onset (a terminal event, found by root finding), latches the
indentation rate as the impact velocity ``delta_dot0`` of the dissipative laws, and continues in
contact mode, where the right-hand side detects the contact and applies the law's
:class:`simclient.contact.ContactForce` until the separation event (:func:`simclient.dynamics.simulate`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from simclient.contact import Contact, ContactForce, ContactPair, ForceLaw, Friction, checked_friction
from simclient.dynamics._bodies import Body, Surface, check_numbers
from simclient.dynamics._constraints import Constraint
from simclient.dynamics._loads import Load, loads_energy
from simclient.dynamics._rules import DRIFT_GAIN, apply_load, approach_speed, poses, rates, sphere_box_gap
from simclient.errors import ContactError, ParameterError, SimulationError
from simclient.geometry import euler_from_axis_angle, point_velocity, rotation_matrix, surface_pose
from simclient.geometry import layout as L

__all__ = ["ContactModel", "MultibodySystem", "DRIFT_GAIN", "pack_bodies"]


def pack_bodies(bodies: Sequence[Body], gravity: np.ndarray, state_index: Callable[[Body], int]) -> np.ndarray:
    """The bodies' rows for the kernels (:mod:`simclient.geometry.layout`'s ``BODY_*``): mass (kg),
    inertia and its inverse (kg m^2, body frame), ``gravity`` (m/s^2, global), the index of each
    body's first state (``state_index(body)``, -1 for a fixed body) and its pose (a fixed body's
    for good; a free body's is written at each evaluation)."""
    rows = np.zeros((len(bodies), L.BODY_SIZE))
    for k, b in enumerate(bodies):
        row = rows[k]
        row[L.BODY_GRAVITY:L.BODY_GRAVITY + 3] = gravity
        row[L.BODY_STATE] = state_index(b)
        row[L.BODY_A:L.BODY_A + 9] = rotation_matrix(b.euler).ravel()
        row[L.BODY_R:L.BODY_R + 3] = b.position
        if not b.fixed:
            row[L.BODY_MASS] = b.mass
            row[L.BODY_J:L.BODY_J + 9] = np.asarray(b.inertia, float).ravel()
            row[L.BODY_JINV:L.BODY_JINV + 9] = np.linalg.inv(np.asarray(b.inertia, float)).ravel()
    return rows


@dataclass
class ContactModel:
    """A contact between surface ``i`` and surface ``j`` with a force law (a
    :class:`simclient.contact.ForceLaw`): the force pushes body i along the normal of j and body j
    the other way; with ``friction`` (:class:`simclient.contact.Friction`; None: frictionless)
    a tangential force opposes the slip of its bodies at the contact."""

    name: str
    i: Surface
    j: Surface
    law: ForceLaw
    pair: ContactPair | None = None
    active: bool = False  # in contact mode
    impact_velocity: float = 0.0  # latched at onset, m/s
    friction: Friction | None = None

    def __post_init__(self) -> None:
        checked_friction(self.friction, f"contact {self.name}")
        if self.pair is None:
            self.pair = ContactPair(self.i.window, self.j.window, name=self.name)


class MultibodySystem:
    """Bodies, contacts, gravity (m/s^2, global) and external loads.

    ``loads`` are callables ``load(t, system) -> list of (body, point_global, force_global)``.
    A load with ``n_states > 0`` (a :class:`FoundationLoad` on a viscoelastic layer) has internal
    states in the state vector, after the contact laws': it reads them by :meth:`load_state` and
    writes their rates into :meth:`load_rates` when called.
    """

    def __init__(self, bodies: Sequence[Body], contacts: Sequence[ContactModel] = (),
                 gravity: Sequence[float] = (0.0, 0.0, -9.81), loads: Sequence[Load] = (),
                 constraints: Sequence[Constraint] = (), baumgarte: float = 200.0) -> None:
        self.bodies = list(bodies)
        self.constraints = list(constraints)
        self.baumgarte = baumgarte  # 1/s: alpha = beta of the Baumgarte stabilization
        self.free = [b for b in self.bodies if not b.fixed]
        self.index = {id(b): k for k, b in enumerate(self.free)}
        self.contacts = list(contacts)
        check_numbers("system", {"gravity": (gravity, (3,))})
        self.gravity = np.asarray(gravity, float)
        self.loads = list(loads)
        for b in self.bodies:
            check_numbers(f"body {b.name}", {"position": (b.position, (3,)), "euler": (b.euler, (4,)),
                                             "velocity": (b.velocity, (3,)), "omega": (b.omega, (3,))})
            if not np.any(b.euler):
                raise ParameterError(f"body {b.name}: euler parameters [0, 0, 0, 0] are no orientation "
                                     "(the identity is [1, 0, 0, 0])")
            if b.fixed:
                continue
            check_numbers(f"body {b.name}", {"mass": (b.mass, ()), "inertia": (b.inertia, (3, 3))})
            inertia = np.asarray(b.inertia, float)
            if not (b.mass > 0 and np.abs(inertia - inertia.T).max() <= 1e-9 * np.abs(inertia).max()
                    and np.linalg.eigvalsh(inertia).min() > 0):
                raise ParameterError(f"body {b.name}: mass (kg) and inertia (kg m^2) must be positive (the inertia "
                                     f"symmetric positive definite), got {b.mass} and {inertia.tolist()}")
        nb = len(self.bodies)
        self._bidx = {id(b): k for k, b in enumerate(self.bodies)}
        # the bodies packed as the kernels take them (pack_bodies), with views of their poses at the
        # last state set: r (m), A, r' (m/s), omega (rad/s, global), and the applied F (N), N (N m)
        self._bodies = pack_bodies(self.bodies, self.gravity, self.state_index)
        self._r, self._v = self._bodies[:, L.BODY_R:L.BODY_R + 3], self._bodies[:, L.BODY_V:L.BODY_V + 3]
        self._A = self._bodies[:, L.BODY_A:L.BODY_A + 9].reshape(nb, 3, 3)
        self._w = self._bodies[:, L.BODY_W:L.BODY_W + 3]
        self._F, self._N = self._bodies[:, L.BODY_F:L.BODY_F + 3], self._bodies[:, L.BODY_N:L.BODY_N + 3]
        self._mass = np.array([b.mass for b in self.free])
        self._Jinv = np.array([np.linalg.inv(b.inertia) for b in self.free]).reshape(-1, 3, 3)
        self._surface_poses: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        # the internal states of stateful contact laws, then of stateful loads (a viscoelastic
        # layer's), follow the bodies' 13 states each
        self._law_states: dict[int, slice] = {}
        self._load_states: dict[int, slice] = {}
        k = 13 * len(self.free)
        for c in self.contacts:
            if c.law.n_states:
                self._law_states[id(c)] = slice(k, k + c.law.n_states)
                k += c.law.n_states
        for load in self.loads:
            n = getattr(load, "n_states", 0)
            if n:
                self._load_states[id(load)] = slice(k, k + n)
                k += n
        self._y: np.ndarray = np.zeros(k)
        self._load_dy = np.zeros(k)  # the stateful loads' rates, written by the loads at each evaluation
        self._at_rest = False  # in a quasi-static analysis: stateful loads take their state at rest
        self._contact_rates: dict[int, np.ndarray] = {}  # the stateful laws' rates found by applied()
        self._volumes: dict[int, np.ndarray | None] = {}  # each contact's bounding volumes (broad_gap)

    # -- state -------------------------------------------------------------------------------------

    def initial_state(self) -> np.ndarray:
        """13 states per free body (position, Euler parameters, velocity, angular velocity), then
        the contact laws' internal states, then the loads' (zero: no history)."""
        bodies = [np.concatenate([b.position, b.euler / np.linalg.norm(b.euler), b.velocity, b.omega])
                  for b in self.free]
        return np.concatenate([*bodies, np.zeros(len(self._y) - 13 * len(self.free))]) if len(self._y) else np.zeros(0)

    def normalize(self, y: np.ndarray, t: float | None = None) -> np.ndarray:
        """Project Euler parameters back onto ``p . p = 1`` (drift control at every restart)."""
        y = y.copy()
        for f in range(len(self.free)):
            k = 13 * f
            y[k + 3:k + 7] /= np.linalg.norm(y[k + 3:k + 7])
        return y

    def state_index(self, body: Body) -> int:
        """The index of ``body``'s first state in the state vector (13 per free body, in order), -1
        for a fixed body."""
        k = self.index.get(id(body))
        return -1 if k is None else 13 * k

    def set_state(self, y: np.ndarray) -> None:
        """Poses and velocities of every body from the state vector (kept for the evaluation)."""
        poses(np.ascontiguousarray(y, dtype=float), self._bodies)
        self._surface_poses.clear()
        self._y = y
        self._at_rest = False

    @property
    def state_groups(self) -> list[slice]:
        """The stateful loads' states, one slice each: :func:`simclient.dynamics.simulate`'s error
        norm counts each as one component (its largest error), so that many element states do not
        dilute the bodies' errors."""
        return list(self._load_states.values())

    def load_state(self, load: Load) -> np.ndarray | None:
        """A stateful load's internal states at the last state set (a view), or None in a
        quasi-static analysis (:meth:`applied` with ``every_contact``), where the load is at rest."""
        sl = self._load_states.get(id(load))
        if sl is None:
            raise ParameterError(f"load {load!r} has no states in this system")
        return None if self._at_rest else self._y[sl]

    def load_rates(self, load: Load) -> np.ndarray:
        """Where a stateful load writes its states' time derivatives at each evaluation (a view)."""
        return self._load_dy[self._load_states[id(load)]]

    def pose(self, body: Body) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(r, A, r', omega_global)`` of a body at the last state set."""
        k = self._bidx[id(body)]
        return self._r[k], self._A[k], self._v[k], self._w[k]

    def surface_pose(self, s: Surface, ahead: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        """Global pose ``(R, c)`` of a surface frame at the last state set (eq. 6.17); with ``ahead``
        (s), that long after it, its body moving on at its velocity and angular velocity (a rigid
        motion without forces: for the rates of what moves with the body)."""
        if ahead:
            r, A, v, w = self.pose(s.body)
            angle = float(np.linalg.norm(w)) * ahead
            turn = rotation_matrix(euler_from_axis_angle(w, angle)) if angle else np.eye(3)
            R, c = surface_pose(r + v * ahead, turn @ A, s.offset, s.rotation)
            return np.ascontiguousarray(R), c
        pose = self._surface_poses.get(id(s))
        if pose is None:
            r, A, _, _ = self.pose(s.body)
            pose = self._surface_poses[id(s)] = surface_pose(r, A, s.offset, s.rotation)
        return pose

    def velocity_at(self, body: Body, P: np.ndarray) -> np.ndarray:
        k = self._bidx[id(body)]
        return point_velocity(self._v[k], self._w[k], self._r[k], np.ascontiguousarray(P, dtype=float))

    # -- contacts ----------------------------------------------------------------------------------

    def broad_gap(self, c: ContactModel) -> float | None:
        """A lower bound of the gap (m) from the tables' bounding volumes (a sphere around surface
        i against the box of surface j), or None if a table has no bounding box."""
        volumes = self._volumes_of(c)
        if volumes is None:
            return None
        Ri, ci = self.surface_pose(c.i)
        Rj, cj = self.surface_pose(c.j)
        return sphere_box_gap(Ri, ci, Rj, cj, volumes)

    def _volumes_of(self, c: ContactModel) -> np.ndarray | None:
        """Contact ``c``'s bounding volumes (:func:`_bounding_volumes`), found once."""
        if id(c) not in self._volumes:
            self._volumes[id(c)] = _bounding_volumes(c)
        return self._volumes[id(c)]

    def approach_speed(self, c: ContactModel) -> float:
        """An upper bound of the rate (m/s) at which :meth:`broad_gap` can shrink: the speed of
        surface i's bounding sphere's centre plus that of the fastest point of surface j's box (its
        body's speed, and its spin times the box's farthest point's distance from the body's
        origin); inf if a table has no bounding box."""
        volumes = self._volumes_of(c)
        if volumes is None:
            return math.inf
        Ri, ci = self.surface_pose(c.i)
        Rj, cj = self.surface_pose(c.j)
        ki, kj = self._bidx[id(c.i.body)], self._bidx[id(c.j.body)]
        return float(approach_speed(Ri, ci, Rj, cj, volumes, self._bodies, ki, kj))

    def detect(self, c: ContactModel) -> Contact:
        Ri, ci = self.surface_pose(c.i)
        Rj, cj = self.surface_pose(c.j)
        assert c.pair is not None
        return c.pair.detect(Ri, ci, Rj, cj, strict=True)

    def relative_velocity(self, c: ContactModel, k: Contact) -> np.ndarray:
        """``v_i(P_i) - v_j(P_j)`` (m/s, global): the bodies' material points at the contact."""
        return self.velocity_at(c.i.body, k.point_i) - self.velocity_at(c.j.body, k.point_j)

    def contact_force(self, c: ContactModel) -> tuple[Contact, ContactForce]:
        """Detect and apply the law (and the friction): the contact and its force."""
        k = self.detect(c)
        state = self._y[self._law_states[id(c)]] if id(c) in self._law_states else None
        cf = c.law.contact_force(k, self.relative_velocity(c, k), c.impact_velocity, state)
        if c.friction is None:
            return k, cf
        middle = k.middle
        return k, c.friction.apply(cf, k, self.velocity_at(c.i.body, middle) - self.velocity_at(c.j.body, middle))

    def _law_rates(self, dy: np.ndarray) -> None:
        """The stateful laws' state derivatives into ``dy``: those :meth:`applied` found for the
        contacts in contact mode, and for the others the rates of a law whose bodies are apart."""
        for c in self.contacts:
            sl = self._law_states.get(id(c))
            if sl is not None:
                rates = self._contact_rates.get(id(c))
                dy[sl] = rates if rates is not None else c.law.state_rates(0.0, 0.0, self._y[sl])

    def gap(self, c: ContactModel, margin: float = 1e-3) -> float:
        """Signed gap (m), minus the indentation, from a probe of the contact.

        A probe leaves the windows in place: integrators evaluate events at trial states far
        beyond the contact onset, and following those would drag the windows ahead of the
        bodies (:func:`simclient.dynamics.simulate` moves them at accepted states instead, and
        bounds its steps so that the probes stay on them); if the probe's solve leaves a window
        all the same, the gap at the window's edge is returned. Where the contact point has no
        counterpart on the tables (it left a table) the bounding-volume distance is used, if the
        bodies are that far apart. (A bounding volume alone is not enough: a body that passed
        through a surface during a long trial step is also "far" from it.)
        """
        Ri, ci = self.surface_pose(c.i)
        Rj, cj = self.surface_pose(c.j)
        assert c.pair is not None
        k = c.pair.detect(Ri, ci, Rj, cj, update_windows=False)
        if k.converged or k.status.left_window:
            return -k.indentation
        bound = self.broad_gap(c)
        if bound is not None and bound > margin:
            return bound
        raise ContactError(f"contact {c.name}: {c.pair.describe(k.status, k.params)} at (u_i, v_i, u_j, v_j) = "
                           f"{k.params.tolist()}")

    # -- equations of motion -----------------------------------------------------------------------

    def rhs(self, t: float, y: np.ndarray) -> np.ndarray:
        y = np.ascontiguousarray(y, dtype=float)
        self.set_state(y)
        self.applied(t)
        dy = np.empty_like(y)
        rates(y, self._bodies, dy)
        if self._law_states:
            self._law_rates(dy)
        for sl in self._load_states.values():
            dy[sl] = self._load_dy[sl]
        if self.constraints:
            self._constrain(t, y, dy)
        return dy

    def applied(self, t: float, every_contact: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Global forces (N) and torques about each body's origin (N m) of the contacts and loads
        at the last state set (gravity not included), one row per body. Contacts count when in
        contact mode, or with ``every_contact`` whenever they indent (quasi-static analysis)."""
        F, N = self._F, self._N
        F[:] = 0.0
        N[:] = 0.0
        self._contact_rates.clear()
        self._at_rest = every_contact
        for c in self.contacts:
            if not (c.active or every_contact):
                continue
            k, cf = self.contact_force(c)
            sl = self._law_states.get(id(c))
            if sl is not None:  # the stateful law's rates from the same detection
                rate = k.indentation_rate(self.relative_velocity(c, k))
                self._contact_rates[id(c)] = c.law.state_rates(k.indentation, rate, self._y[sl])
            self._apply(c.i.body, cf.point, cf.force)
            self._apply(c.j.body, cf.point_j, -cf.force)
            if cf.moment.any():
                N[self._bidx[id(c.i.body)]] += cf.moment
                N[self._bidx[id(c.j.body)]] -= cf.moment
        for load in self.loads:
            for item in load(t, self):
                self._apply(item[0], item[1], item[2])
                if len(item) > 3:  # a moment besides the force's
                    N[self._bidx[id(item[0])]] += item[3]
        return F, N

    def _apply(self, body: Body, P: np.ndarray, f: np.ndarray) -> None:
        """``body`` takes the force ``f`` (N) at ``P`` (m), global (:func:`apply_load`)."""
        apply_load(self._bodies, self._bidx[id(body)], np.ascontiguousarray(P, dtype=float),
                   np.ascontiguousarray(f, dtype=float))

    def body_index(self, body: Body) -> int:
        """The row of ``body`` in :meth:`applied`'s arrays."""
        return self._bidx[id(body)]

    # -- constraints: the augmented form (6.24) ------------------------------------------------------

    def _phi(self, t: float, y: np.ndarray) -> np.ndarray:
        self.set_state(y)
        return np.concatenate([np.atleast_1d(c.phi(t, self)) for c in self.constraints])

    def _drift(self, y: np.ndarray, u: np.ndarray, h: float) -> np.ndarray:
        """State after moving for time h with constant generalized velocities u = (v, w') per body."""
        y2 = y.copy()
        for f in range(len(self.free)):
            k = 13 * f
            v, w = u[6 * f:6 * f + 3], u[6 * f + 3:6 * f + 6]
            y2[k:k + 3] += h * v
            wn = math.sqrt(float(w @ w))
            if wn and h:
                # p (x) q, q the rotation by |w| h about w (body frame); written out: np.cross
                # costs more than the rest of this, and the constraints' differences call it often
                c, s = math.cos(wn * h / 2), math.sin(wn * h / 2) / wn
                q1, q2, q3 = s * w[0], s * w[1], s * w[2]
                p0, p1, p2, p3 = y[k + 3:k + 7]
                y2[k + 3] = p0 * c - p1 * q1 - p2 * q2 - p3 * q3
                y2[k + 4] = p0 * q1 + c * p1 + p2 * q3 - p3 * q2
                y2[k + 5] = p0 * q2 + c * p2 + p3 * q1 - p1 * q3
                y2[k + 6] = p0 * q3 + c * p3 + p1 * q2 - p2 * q1
        return y2

    def _constrain(self, t: float, y: np.ndarray, dy: np.ndarray) -> None:
        """Project the unconstrained accelerations onto the constraints (augmented form 6.24):

            [M  G^T] [u']   [Q    ]
            [G  0  ] [-l] = [gamma]

        with u = (v, w') per body, M = diag(m I, J'), G = dPhi'/du and
        gamma = -(d^2 Phi/dt^2 at u' = 0) - 2 a Phi' - a^2 Phi (Baumgarte, a = ``baumgarte``).
        G and gamma come from central differences of the constraint functions along the exact
        rigid motion with constant u (steps of 1e-6 s for G, 1e-4 s for gamma, whose truncation
        error is then about 1e-8 of the fourth derivative); constraints only need ``phi(t, system)``.
        """
        nf = len(self.free)
        u = np.concatenate([np.concatenate([y[13 * f + 7:13 * f + 10], y[13 * f + 10:13 * f + 13]]) for f in range(nf)])
        h, h2 = 1e-6, 1e-4  # s: G is linear in u (small step); the second difference needs a larger one
        phi0 = self._phi(t, y)
        phip = self._phi(t + h2, self._drift(y, u, h2))
        phim = self._phi(t - h2, self._drift(y, u, -h2))
        phidot = (phip - phim) / (2 * h2)
        phidd = (phip - 2 * phi0 + phim) / (h2 * h2)
        G = np.empty((len(phi0), 6 * nf))
        for k in range(6 * nf):
            e = np.zeros(6 * nf)
            e[k] = 1.0
            G[:, k] = (self._phi(t, self._drift(y, e, h)) - self._phi(t, self._drift(y, e, -h))) / (2 * h)
        a = self.baumgarte
        gamma = -phidd - 2 * a * phidot - a * a * phi0
        a0 = np.concatenate([np.concatenate([dy[13 * f + 7:13 * f + 10], dy[13 * f + 10:13 * f + 13]]) for f in range(nf)])
        Minv = np.zeros((6 * nf, 6 * nf))
        for f in range(nf):
            Minv[6 * f:6 * f + 3, 6 * f:6 * f + 3] = np.eye(3) / self._mass[f]
            Minv[6 * f + 3:6 * f + 6, 6 * f + 3:6 * f + 6] = self._Jinv[f]
        S = G @ Minv @ G.T
        try:
            lam = np.linalg.solve(S, gamma - G @ a0)
        except np.linalg.LinAlgError:
            raise SimulationError(f"t = {t:.6g} s: the constraint Jacobian is singular (redundant constraints?)")
        acc = a0 + Minv @ G.T @ lam
        for f in range(nf):
            dy[13 * f + 7:13 * f + 10] = acc[6 * f:6 * f + 3]
            dy[13 * f + 10:13 * f + 13] = acc[6 * f + 3:6 * f + 6]
        self.set_state(y)

    def place_windows(self, y: np.ndarray) -> list[Contact]:
        """Set state ``y`` and move every contact's windows to its contact point there by the
        update rule, as a run does at its accepted states; the contacts found there. For looking
        at any state after a run: the probes (:meth:`gap`) read the windows where they are, and
        where a run has moved them on, a state they no longer hold gives the gap at a window's edge."""
        self.set_state(y)
        found = []
        for c in self.contacts:
            assert c.pair is not None
            found.append(c.pair.place(*self.surface_pose(c.i), *self.surface_pose(c.j)))
        return found

    def energy(self, y: np.ndarray, gap: Callable[[ContactModel, np.ndarray], float] | None = None) -> float:
        """Kinetic + gravitational + elastic contact energy (J) at state ``y`` (contacts that
        indent contribute their law's elastic energy), and the energy the loads store
        (:func:`simclient.dynamics._loads.loads_energy`); ``gap(contact, y)`` is the probe (m) to use
        (default :meth:`gap`; e.g. a compiled system's, :func:`simclient.dynamics.compile_system`).
        The windows are moved to ``y``'s contact points first (:meth:`place_windows`): any state
        can be asked, in any order."""
        self.place_windows(y)
        e = 0.0
        for b in self.free:
            k = 13 * self.index[id(b)]
            v, w = y[k + 7:k + 10], y[k + 10:k + 13]
            e += 0.5 * b.mass * v @ v + 0.5 * w @ b.inertia @ w - b.mass * self.gravity @ y[k:k + 3]
        for c in self.contacts:
            e += c.law.elastic_energy(-(self.gap(c) if gap is None else gap(c, y)))
        return e + loads_energy(self.loads, self)


def _bounding_volumes(c: ContactModel) -> np.ndarray | None:
    """Surface i's bounding sphere (centre in its frame, m; radius, m) and surface j's bounding box
    (centre and half-sides in its frame, m) as one array of 10, or None if a table has no box."""
    bi, bj = c.i.bound(), c.j.bound()
    if bi is None or bj is None:
        return None
    # the smaller of two bounding spheres of i: around its box, or around its frame's origin
    centre, radius = (bi[0] + bi[1]) / 2, float(np.linalg.norm(bi[1] - bi[0])) / 2
    rmax = c.i.window.header.rmax
    if rmax is not None and rmax < radius:
        centre, radius = np.zeros(3), rmax
    return np.concatenate([centre, [radius], (bj[0] + bj[1]) / 2, (bj[1] - bj[0]) / 2])
