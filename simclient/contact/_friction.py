"""Friction at a point contact: regularized Coulomb friction with a Stribeck and a viscous term.

The model of Simbody's compliant contact (``CompliantContactSubsystem``, which OpenSim's
``HuntCrossleyForce`` uses): a friction force opposite the tangential slip velocity ``v_s``
(m/s) of the two bodies' material points at the contact, of magnitude ``mu(|v_s|) F_N`` with
``F_N`` the law's normal force (N, dissipation included) and, with ``x = |v_s| / v_t``::

    mu = mu_s step5(x)                              x < 1    (stiction: 0 at rest, mu_s at v_t)
    mu = mu_s - (mu_s - mu_d) step5((x - 1) / 2)    1 <= x < 3  (Stribeck: down to mu_d)
    mu = mu_d                                       x >= 3   (sliding)

plus ``mu_v |v_s|`` (viscous), where ``step5(z) = 10 z^3 - 15 z^4 + 6 z^5`` joins its ends with
zero first and second derivatives: the curve is twice continuously differentiable, as adaptive
integrators want. ``v_t`` (the transition velocity) trades stiction for stiffness: a body held by
static friction creeps at a speed of the order of ``v_t``.

The friction force acts on both bodies at one point, the middle of the indentation (between the
two undeformed surfaces' contact points, on their common normal), so a contact exerts no net
moment on the pair (angular momentum is kept); the normal force's moment is the same there as at
the surfaces' points, which lie on the same normal. A point contact carries no torsional or
rolling friction.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from simclient.contact._laws import ContactForce
from simclient.contact._point import Contact
from simclient.contact._rules import friction_coefficient, friction_force
from simclient.errors import ParameterError, nonnegative

__all__ = ["Friction", "checked_friction"]


@dataclass(frozen=True)
class Friction:
    """Friction of a point contact (see the module): ``static`` and ``dynamic`` coefficients
    (``static >= dynamic >= 0``), ``viscous`` coefficient (s/m, >= 0) and ``transition_velocity``
    (m/s, > 0; OpenSim's ``HuntCrossleyForce`` default, 1 mm/s, is ours)."""

    static: float
    dynamic: float
    viscous: float = 0.0
    transition_velocity: float = 1e-3

    def __post_init__(self) -> None:
        values = {"static": self.static, "dynamic": self.dynamic, "viscous": self.viscous,
                  "transition_velocity": self.transition_velocity}
        for key, value in values.items():
            nonnegative(value, f"friction: {key}")
        if self.transition_velocity <= 0:
            raise ParameterError(f"friction: transition_velocity must be positive (m/s), got {self.transition_velocity!r}")
        if self.static < self.dynamic:
            raise ParameterError(f"friction: the static coefficient ({self.static}) is below the dynamic one "
                                 f"({self.dynamic})")

    @cached_property
    def packed(self) -> np.ndarray:
        """``(mu_s, mu_d, mu_v, v_t)``: the compiled form (:func:`simclient.contact.friction_force`)."""
        return np.array([self.static, self.dynamic, self.viscous, self.transition_velocity])

    def coefficient(self, slip: float) -> float:
        """The coefficient of friction at slip speed ``slip`` (m/s)."""
        return float(friction_coefficient(self.packed, float(slip)))

    def apply(self, force: ContactForce, contact: Contact, velocity: np.ndarray) -> ContactForce:
        """``force`` (a law's, for ``contact``) with this friction added, both forces at the
        middle of the indentation; ``velocity`` is ``v_i - v_j`` (m/s, global) of the bodies'
        material points there. The friction's power is negative (it only dissipates)."""
        n = np.ascontiguousarray(contact.normal)
        total = np.array(force.force, dtype=float)
        friction_force(self.packed, n, np.ascontiguousarray(velocity, dtype=float), float(total @ n), total)
        middle = contact.middle
        return ContactForce(total, middle, middle, force.moment, force.elastic_energy, float(total @ velocity))


def checked_friction(friction: object, owner: str) -> Friction | None:
    """``friction`` if it is a :class:`Friction` or None (frictionless); otherwise a
    :class:`ParameterError` naming ``owner`` (the contact) and the value."""
    if friction is not None and not isinstance(friction, Friction):
        raise ParameterError(f"{owner}: friction must be a Friction, got {friction!r}")
    return friction
