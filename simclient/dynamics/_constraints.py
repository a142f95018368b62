"""Constraints of the augmented form (thesis 6.24): joints and prescribed coordinates.

A constraint is any object with ``phi(t, system) -> array`` (its residuals, zero when satisfied)
read from the system's poses (:meth:`MultibodySystem.pose`); the system differentiates it
numerically (see :meth:`MultibodySystem._constrain`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from simclient.dynamics._bodies import Body, Poses

__all__ = ["Constraint", "SphericalJoint", "RevoluteJoint", "Prescribed"]


class Constraint(Protocol):
    """A constraint: residuals ``phi(t, system)`` (units of the constrained quantity), zero when held."""

    def phi(self, t: float, system: Poses) -> np.ndarray: ...


@dataclass
class SphericalJoint:
    """``point_a`` of ``body_a`` coincides with ``point_b`` of ``body_b`` (body frames, m)."""

    body_a: Body
    point_a: np.ndarray
    body_b: Body
    point_b: np.ndarray

    def phi(self, t: float, system: Poses) -> np.ndarray:
        ra, Aa, _, _ = system.pose(self.body_a)
        rb, Ab, _, _ = system.pose(self.body_b)
        return (rb + Ab @ self.point_b) - (ra + Aa @ self.point_a)


@dataclass
class RevoluteJoint(SphericalJoint):
    """A spherical joint whose bodies also keep ``axis_a`` (body a) and ``axis_b`` (body b) aligned."""

    axis_a: np.ndarray = field(default_factory=lambda: np.array([1.0, 0, 0]))
    axis_b: np.ndarray = field(default_factory=lambda: np.array([1.0, 0, 0]))

    def __post_init__(self) -> None:
        # the unit axis of a and two unit vectors across the axis of b (body frames), once: the
        # system differentiates phi numerically, a dozen evaluations per right-hand side
        self._ua = np.asarray(self.axis_a, float) / np.linalg.norm(self.axis_a)
        ub = np.asarray(self.axis_b, float) / np.linalg.norm(self.axis_b)
        v1 = np.cross(ub, [1.0, 0, 0] if abs(ub[0]) < 0.9 else [0, 1.0, 0])
        v1 /= np.linalg.norm(v1)
        self._across_b = np.array([v1, np.cross(ub, v1)])

    def phi(self, t: float, system: Poses) -> np.ndarray:
        _, Aa, _, _ = system.pose(self.body_a)
        _, Ab, _, _ = system.pose(self.body_b)
        # the axis of a stays normal to both vectors across the axis of b
        return np.concatenate([super().phi(t, system), (Ab @ self._across_b.T).T @ (Aa @ self._ua)])


@dataclass
class Prescribed:
    """A prescribed coordinate: ``coordinate(r, A) = value(t)`` for ``body`` (units of the
    coordinate: m for positions, rad for angles). E.g. ``Prescribed(tibia, lambda r, A: r[2],
    lambda t: 0.01 * sin(t))``."""

    body: Body
    coordinate: Callable[[np.ndarray, np.ndarray], float]
    value: Callable[[float], float]

    def phi(self, t: float, system: Poses) -> np.ndarray:
        r, A, _, _ = system.pose(self.body)
        return np.array([self.coordinate(r, A) - self.value(t)])
