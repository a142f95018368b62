"""Rigid-body poses with Euler parameters (thesis eqs. 6.1-6.8, errata fixed).

Euler parameters ``p = (e0, e1, e2, e3)`` with ``p . p = 1`` (the thesis' line 565 constraint
"e0' + e1' + e2' + e3' = 0" should read ``p . p' = 0``). The rotation matrix from the body frame to
the global frame is eq. (6.3) WITH its leading factor 2, missing in the thesis::

    A = 2 [[e0^2 + e1^2 - 1/2, e1 e2 - e0 e3,     e1 e3 + e0 e2],
           [e1 e2 + e0 e3,     e0^2 + e2^2 - 1/2, e2 e3 - e0 e1],
           [e1 e3 - e0 e2,     e2 e3 + e0 e1,     e0^2 + e3^2 - 1/2]]

Angular velocity: ``omega = 2 G p'`` (global frame), ``omega' = 2 L p'`` (body frame) with
``G = [-e, e~ + e0 I]``, ``L = [-e, -e~ + e0 I]``; conversely ``p' = 1/2 L^T omega'``.

A surface is placed in its body by a constant offset ``s_Q`` (m, body frame) and rotation ``A_Q``
(eq. 6.17): a table point ``s`` is at ``r + A (s_Q + A_Q s)`` in the global frame.
"""

from __future__ import annotations

import math

import numpy as np

from simclient.geometry._interpolation import jit

__all__ = ["rotation_matrix", "rotation_into", "euler_from_axis_angle", "euler_from_matrix", "G_matrix", "L_matrix",
           "surface_pose", "point_velocity", "normalize_euler", "rx", "ry", "rz", "rot2"]


@jit
def rotation_into(p: np.ndarray, A: np.ndarray) -> None:
    """Write A(p) of eq. (6.3), with its factor 2, into ``A`` (3 x 3); ``p`` is normalised on the
    fly, so integrators' slightly drifted parameters give a proper rotation (compiled: it runs in
    every right-hand side)."""
    nn = math.sqrt(p[0] ** 2 + p[1] ** 2 + p[2] ** 2 + p[3] ** 2)
    e0, e1, e2, e3 = p[0] / nn, p[1] / nn, p[2] / nn, p[3] / nn
    A[0, 0] = 2 * (e0 * e0 + e1 * e1) - 1
    A[0, 1] = 2 * (e1 * e2 - e0 * e3)
    A[0, 2] = 2 * (e1 * e3 + e0 * e2)
    A[1, 0] = 2 * (e1 * e2 + e0 * e3)
    A[1, 1] = 2 * (e0 * e0 + e2 * e2) - 1
    A[1, 2] = 2 * (e2 * e3 - e0 * e1)
    A[2, 0] = 2 * (e1 * e3 - e0 * e2)
    A[2, 1] = 2 * (e2 * e3 + e0 * e1)
    A[2, 2] = 2 * (e0 * e0 + e3 * e3) - 1


def rotation_matrix(p: np.ndarray) -> np.ndarray:
    """Rotation matrix A(p) (body to global) of Euler parameters ``p`` (eq. 6.3, factor 2)."""
    A = np.empty((3, 3))
    rotation_into(np.asarray(p, dtype=float), A)
    return A


def rx(a: float) -> np.ndarray:
    """Rotation by ``a`` (rad) about x (right-handed)."""
    c, s = math.cos(a), math.sin(a)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def ry(a: float) -> np.ndarray:
    """Rotation by ``a`` (rad) about y (right-handed)."""
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def rz(a: float) -> np.ndarray:
    """Rotation by ``a`` (rad) about z (right-handed)."""
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def rot2(a: float) -> np.ndarray:
    """The planar rotation by ``a`` (rad, counter-clockwise): 2 x 2."""
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s], [s, c]])


def euler_from_axis_angle(axis: np.ndarray, angle: float) -> np.ndarray:
    """Euler parameters of a rotation by ``angle`` (rad) about ``axis``."""
    k = np.asarray(axis, float)
    k = k / np.linalg.norm(k)
    return np.concatenate([[math.cos(angle / 2)], math.sin(angle / 2) * k])


def euler_from_matrix(A: np.ndarray) -> np.ndarray:
    """Euler parameters (e0 >= 0) of a rotation matrix (Shepperd's method)."""
    tr = np.trace(A)
    q = np.array([tr, A[0, 0], A[1, 1], A[2, 2]])
    k = int(np.argmax(q))
    if k == 0:
        e0 = 0.5 * math.sqrt(1 + tr)
        p = np.array([e0, (A[2, 1] - A[1, 2]) / (4 * e0), (A[0, 2] - A[2, 0]) / (4 * e0), (A[1, 0] - A[0, 1]) / (4 * e0)])
    elif k == 1:
        e1 = 0.5 * math.sqrt(1 + 2 * A[0, 0] - tr)
        p = np.array([(A[2, 1] - A[1, 2]) / (4 * e1), e1, (A[0, 1] + A[1, 0]) / (4 * e1), (A[0, 2] + A[2, 0]) / (4 * e1)])
    elif k == 2:
        e2 = 0.5 * math.sqrt(1 + 2 * A[1, 1] - tr)
        p = np.array([(A[0, 2] - A[2, 0]) / (4 * e2), (A[0, 1] + A[1, 0]) / (4 * e2), e2, (A[1, 2] + A[2, 1]) / (4 * e2)])
    else:
        e3 = 0.5 * math.sqrt(1 + 2 * A[2, 2] - tr)
        p = np.array([(A[1, 0] - A[0, 1]) / (4 * e3), (A[0, 2] + A[2, 0]) / (4 * e3), (A[1, 2] + A[2, 1]) / (4 * e3), e3])
    return p if p[0] >= 0 else -p


def _skew(e: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -e[2], e[1]], [e[2], 0.0, -e[0]], [-e[1], e[0], 0.0]])


def G_matrix(p: np.ndarray) -> np.ndarray:
    """G(p), 3 x 4: global angular velocity ``omega = 2 G p'``."""
    e0, e = p[0], p[1:]
    return np.column_stack([-e, _skew(e) + e0 * np.eye(3)])


def L_matrix(p: np.ndarray) -> np.ndarray:
    """L(p), 3 x 4: body angular velocity ``omega' = 2 L p'``; ``p' = 1/2 L^T omega'``."""
    e0, e = p[0], p[1:]
    return np.column_stack([-e, -_skew(e) + e0 * np.eye(3)])


def normalize_euler(p: np.ndarray) -> np.ndarray:
    """Project Euler parameters back onto ``p . p = 1`` (drift control)."""
    return p / np.linalg.norm(p)


def surface_pose(r: np.ndarray, A: np.ndarray, s_Q: np.ndarray, A_Q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Global pose ``(R, c)`` of a surface frame: a table point ``s`` is at ``c + R s`` (eq. 6.17)."""
    return A @ A_Q, r + A @ s_Q


@jit
def point_velocity(r_dot: np.ndarray, omega: np.ndarray, r: np.ndarray, P: np.ndarray) -> np.ndarray:
    """Velocity (m/s, global) of the body's material point at global ``P``: ``r' + omega x (P - r)``
    (compiled: it runs in every contact evaluation)."""
    d0, d1, d2 = P[0] - r[0], P[1] - r[1], P[2] - r[2]
    return np.array([r_dot[0] + omega[1] * d2 - omega[2] * d1, r_dot[1] + omega[2] * d0 - omega[0] * d2,
                     r_dot[2] + omega[0] * d1 - omega[1] * d0])
