"""Rigid bodies and the surfaces (tables read through storage windows) they carry."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from simclient.errors import ParameterError
from simclient.geometry import StorageWindow

__all__ = ["Body", "Surface", "Poses"]


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


def check_numbers(owner: str, values: Mapping[str, tuple[Any, tuple[int, ...]]]) -> None:
    """:class:`ParameterError` naming ``owner`` and the key of the first of ``values`` (key ->
    (value, shape)) that is not finite numbers of its shape (a NaN position once reached the
    integrator, which named neither the body nor the value)."""
    for key, (value, shape) in values.items():
        try:
            a = np.asarray(value, float)
        except (TypeError, ValueError):
            a = np.full(1, np.nan)
        if a.shape != shape or not np.isfinite(a).all():
            what = "a finite number" if shape == () else f"{' x '.join(map(str, shape))} finite numbers"
            raise ParameterError(f"{owner}: {key} must be {what}, got {value!r}")


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


class Poses(Protocol):
    """What loads and constraints read from a system at its current state (global frame)."""

    def pose(self, body: Body) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(r, A, r', omega)``: position (m), rotation matrix, velocity (m/s), angular velocity (rad/s)."""
        ...

    def velocity_at(self, body: Body, P: np.ndarray) -> np.ndarray:
        """Velocity (m/s) of the body's material point at global ``P`` (m)."""
        ...
