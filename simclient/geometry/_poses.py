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

from simclient.geometry.kernels import helper, kernel

__all__ = ["rotation_matrix", "rotation_into", "euler_from_axis_angle", "euler_from_matrix", "G_matrix", "L_matrix",
           "surface_pose", "place", "place_at", "to_global", "euler_rotation", "point_velocity", "normalize_euler", "rx",
           "ry", "rz", "rot2"]


@helper(inline=True)
def euler_rotation(p: np.ndarray, o: int, A: np.ndarray, a: int) -> None:
    """A(p) of eq. (6.3), with its factor 2, of the Euler parameters ``p[o:o + 4]`` into
    ``A[a:a + 9]`` (row-major); ``p`` is normalised on the fly, so integrators' slightly drifted
    parameters give a proper rotation. The one implementation of eq. 6.3."""
    nn = math.sqrt(p[o] ** 2 + p[o + 1] ** 2 + p[o + 2] ** 2 + p[o + 3] ** 2)
    e0, e1, e2, e3 = p[o] / nn, p[o + 1] / nn, p[o + 2] / nn, p[o + 3] / nn
    A[a] = 2 * (e0 * e0 + e1 * e1) - 1
    A[a + 1] = 2 * (e1 * e2 - e0 * e3)
    A[a + 2] = 2 * (e1 * e3 + e0 * e2)
    A[a + 3] = 2 * (e1 * e2 + e0 * e3)
    A[a + 4] = 2 * (e0 * e0 + e2 * e2) - 1
    A[a + 5] = 2 * (e2 * e3 - e0 * e1)
    A[a + 6] = 2 * (e1 * e3 - e0 * e2)
    A[a + 7] = 2 * (e2 * e3 + e0 * e1)
    A[a + 8] = 2 * (e0 * e0 + e3 * e3) - 1


@kernel("void(f8[::1], f8[:, ::1])")
def rotation_into(p: np.ndarray, A: np.ndarray) -> None:
    """Write A(p) of eq. (6.3) into ``A`` (3 x 3, C-contiguous; :func:`euler_rotation`)."""
    euler_rotation(p, 0, A.reshape(9), 0)


def rotation_matrix(p: np.ndarray) -> np.ndarray:
    """Rotation matrix A(p) (body to global) of Euler parameters ``p`` (eq. 6.3, factor 2)."""
    A = np.empty((3, 3))
    rotation_into(np.ascontiguousarray(p, dtype=float), A)
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


@helper(inline=True)
def to_global(r: np.ndarray, ro: int, A: np.ndarray, ao: int, p: np.ndarray, po: int, out: np.ndarray, oo: int) -> None:
    """``out[oo:oo + 3] = r + A p``: the point ``p`` of a frame at ``(r, A)`` (m; ``A`` row-major),
    every vector flat at its offset (kernels pass packed rows whole)."""
    for a in range(3):
        out[oo + a] = r[ro + a] + A[ao + 3 * a] * p[po] + A[ao + 3 * a + 1] * p[po + 1] + A[ao + 3 * a + 2] * p[po + 2]


@helper(inline=True)
def place_at(r: np.ndarray, ro: int, A: np.ndarray, ao: int, s_Q: np.ndarray, so: int, A_Q: np.ndarray, qo: int,
             R: np.ndarray, c: np.ndarray) -> None:
    """Eq. 6.17: the global pose ``R = A A_Q``, ``c = r + A s_Q`` (into ``R``, 3 x 3, and ``c``) of a
    surface placed in its body by ``(s_Q, A_Q)``, the body at ``(r, A)`` (m; rotations body to
    global, row-major), every input flat at its offset. The one implementation of the placement:
    :func:`place` (:func:`surface_pose`) and the compiled right-hand side call it."""
    to_global(r, ro, A, ao, s_Q, so, c, 0)
    for a in range(3):
        for b in range(3):
            R[a, b] = A[ao + 3 * a] * A_Q[qo + b] + A[ao + 3 * a + 1] * A_Q[qo + 3 + b] + A[ao + 3 * a + 2] * A_Q[qo + 6 + b]


@kernel("void(f8[::1], f8[:, ::1], f8[::1], f8[:, ::1], f8[:, ::1], f8[::1])")
def place(r: np.ndarray, A: np.ndarray, s_Q: np.ndarray, A_Q: np.ndarray, R: np.ndarray, c: np.ndarray) -> None:
    """Eq. 6.17 (:func:`place_at`) for 3-vectors and 3 x 3 matrices."""
    place_at(r, 0, A.reshape(9), 0, s_Q, 0, A_Q.reshape(9), 0, R, c)


def surface_pose(r: np.ndarray, A: np.ndarray, s_Q: np.ndarray, A_Q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Global pose ``(R, c)`` of a surface frame: a table point ``s`` is at ``c + R s`` (eq. 6.17,
    :func:`place`); ``R`` C-contiguous."""
    R, c = np.empty((3, 3)), np.empty(3)
    f8 = np.ascontiguousarray
    place(f8(r, dtype=float), f8(A, dtype=float), f8(s_Q, dtype=float), f8(A_Q, dtype=float), R, c)
    return R, c


@kernel("f8[::1](f8[::1], f8[::1], f8[::1], f8[::1])", inline=True)
def point_velocity(r_dot: np.ndarray, omega: np.ndarray, r: np.ndarray, P: np.ndarray) -> np.ndarray:
    """Velocity (m/s, global) of the body's material point at global ``P``: ``r' + omega x (P - r)``
    (compiled: it runs in every contact evaluation)."""
    d0, d1, d2 = P[0] - r[0], P[1] - r[1], P[2] - r[2]
    return np.array([r_dot[0] + omega[1] * d2 - omega[2] * d1, r_dot[1] + omega[2] * d0 - omega[0] * d2,
                     r_dot[2] + omega[0] * d1 - omega[1] * d0])
