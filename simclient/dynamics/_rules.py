"""The dynamics' rules as kernels, each written once: the ligament laws and the ligament's
tension rule, Newton-Euler with Euler parameters on a system's packed bodies, and the bounding
volumes' distance and approach speed. :class:`simclient.dynamics.MultibodySystem` (the Python
right-hand side), the ligaments and the compiled right-hand side call these same functions.

A system's bodies are packed as :mod:`simclient.geometry.layout` says (``BODY_*``); the state of a
free body (13 values from ``BODY_STATE``) is position ``r`` (m, global), Euler parameters ``p``,
velocity ``r'`` (m/s, global) and angular velocity ``w'`` (rad/s, body frame)::

    m r'' = f + m g,     J' w'' = n' - w' x J' w',     p' = 1/2 L(p)^T w' - k (p.p - 1) p

with ``f`` (N, global) and ``n'`` (N m, body frame, about the centre of mass, the body's origin)
the applied force and torque, and ``k = DRIFT_GAIN`` (1/s) the drift control of ``p``.
"""

from __future__ import annotations

import math

import numpy as np

from simclient.geometry import layout as L
from simclient.geometry._poses import euler_rotation
from simclient.geometry.kernels import helper, kernel

__all__ = ["spring_force", "ligament_tension", "poses", "apply_load", "rates", "sphere_box_gap", "approach_speed",
           "DRIFT_GAIN"]

DRIFT_GAIN = 10.0  # 1/s


@kernel("f8(i8, f8[::1], f8)", inline=True)
def spring_force(kind: int, p: np.ndarray, length: float) -> float:
    """Force (N, positive in tension) of a compiled ligament law (``packed`` of
    :class:`simclient.dynamics.QuadraticLaw`, :class:`~simclient.dynamics.BlankevoortLaw`,
    :class:`~simclient.dynamics.LinearSpring`) at ``length`` (m); NaN for an unknown kind:

    - ``SPRING_QUADRATIC``, ``p = (k, l0)``: ``k (l - l0)^2`` when longer than ``l0`` (thesis 5.23);
    - ``SPRING_BLANKEVOORT``, ``p = (k, l0, eps_l)``: with ``eps = (l - l0) / l0``, ``k eps^2 / (4 eps_l)``
      up to ``2 eps_l``, ``k (eps - eps_l)`` beyond (Blankevoort 1991 eqs. 6-8);
    - ``SPRING_LINEAR``, ``p = (k, l0)``: ``k (l - l0)``."""
    if kind == L.SPRING_QUADRATIC:
        return p[0] * (length - p[1]) ** 2 if length > p[1] else 0.0
    if kind == L.SPRING_BLANKEVOORT:
        eps = (length - p[1]) / p[1]
        if eps <= 0.0:
            return 0.0
        if eps <= 2 * p[2]:
            return p[0] * eps * eps / (4 * p[2])
        return p[0] * (eps - p[2])
    if kind == L.SPRING_LINEAR:
        return p[0] * (length - p[1])
    return math.nan


@kernel("f8(f8, f8, f8, b1)", inline=True)
def ligament_tension(elastic: float, rate: float, damping: float, tension_only: bool) -> float:
    """A ligament's tension (N, pulling its insertions together) from its law's force ``elastic``
    (N), its lengthening rate (m/s) and damping (N s/m): ``elastic + damping rate``, except that a
    ``tension_only`` element is damped only while taut and never pushes. The one implementation:
    :class:`simclient.dynamics.Ligament` and the compiled right-hand side call it."""
    if not tension_only:
        return elastic + damping * rate
    if elastic > 0.0 and damping != 0.0:
        elastic = elastic + damping * rate
    return max(elastic, 0.0)


@kernel("void(f8[::1], f8[:, ::1])")
def poses(y: np.ndarray, bodies: np.ndarray) -> None:
    """Each free body's pose, velocity and angular velocity (global) from the state ``y`` into its
    row of ``bodies`` (fixed bodies keep theirs)."""
    for b in range(bodies.shape[0]):
        k = int(bodies[b, L.BODY_STATE])
        if k < 0:
            continue
        row = bodies[b]
        euler_rotation(y, k + L.STATE_P, row, L.BODY_A)
        for a in range(3):
            row[L.BODY_R + a] = y[k + L.STATE_R + a]
            row[L.BODY_V + a] = y[k + L.STATE_V + a]
        w0, w1, w2 = y[k + L.STATE_W], y[k + L.STATE_W + 1], y[k + L.STATE_W + 2]
        for a in range(3):
            row[L.BODY_W + a] = row[L.BODY_A + 3 * a] * w0 + row[L.BODY_A + 3 * a + 1] * w1 + row[L.BODY_A + 3 * a + 2] * w2


@kernel("void(f8[:, ::1], i8, f8[::1], f8[::1])", inline=True)
def apply_load(bodies: np.ndarray, b: int, P: np.ndarray, f: np.ndarray) -> None:
    """Body ``b`` takes the force ``f`` (N, global) at the global point ``P`` (m): its force, and the
    torque about its origin."""
    row = bodies[b]
    d0, d1, d2 = P[0] - row[L.BODY_R], P[1] - row[L.BODY_R + 1], P[2] - row[L.BODY_R + 2]
    row[L.BODY_F] += f[0]
    row[L.BODY_F + 1] += f[1]
    row[L.BODY_F + 2] += f[2]
    row[L.BODY_N] += d1 * f[2] - d2 * f[1]
    row[L.BODY_N + 1] += d2 * f[0] - d0 * f[2]
    row[L.BODY_N + 2] += d0 * f[1] - d1 * f[0]


@kernel("void(f8[::1], f8[:, ::1], f8[::1])")
def rates(y: np.ndarray, bodies: np.ndarray, dy: np.ndarray) -> None:
    """Newton-Euler with Euler parameters for every free body (the module's equations), from the
    force and torque applied to it (its row of ``bodies``, as :func:`poses` and :func:`apply_load`
    leave it) into ``dy``."""
    n = np.empty(3)
    for b in range(bodies.shape[0]):
        k = int(bodies[b, L.BODY_STATE])
        if k < 0:
            continue
        row = bodies[b]
        p, w = k + L.STATE_P, k + L.STATE_W
        e0, e1, e2, e3 = y[p], y[p + 1], y[p + 2], y[p + 3]
        w0, w1, w2 = y[w], y[w + 1], y[w + 2]
        pp = e0 * e0 + e1 * e1 + e2 * e2 + e3 * e3 - 1.0
        for a in range(3):
            dy[k + L.STATE_R + a] = y[k + L.STATE_V + a]
            dy[k + L.STATE_V + a] = row[L.BODY_F + a] / row[L.BODY_MASS] + row[L.BODY_GRAVITY + a]
        # p' = 1/2 L^T w' - k (p.p - 1) p, with L^T w' = (-e.w', e x w' + e0 w')
        dy[p] = -0.5 * (e1 * w0 + e2 * w1 + e3 * w2) - DRIFT_GAIN * pp * e0
        dy[p + 1] = 0.5 * (e2 * w2 - e3 * w1 + e0 * w0) - DRIFT_GAIN * pp * e1
        dy[p + 2] = 0.5 * (e3 * w0 - e1 * w2 + e0 * w1) - DRIFT_GAIN * pp * e2
        dy[p + 3] = 0.5 * (e1 * w1 - e2 * w0 + e0 * w2) - DRIFT_GAIN * pp * e3
        # J' w'' = n' - w' x J' w', n' = A^T n
        for a in range(3):
            n[a] = (row[L.BODY_A + a] * row[L.BODY_N] + row[L.BODY_A + 3 + a] * row[L.BODY_N + 1]
                    + row[L.BODY_A + 6 + a] * row[L.BODY_N + 2])
        J, Ji = L.BODY_J, L.BODY_JINV
        h0 = row[J] * w0 + row[J + 1] * w1 + row[J + 2] * w2
        h1 = row[J + 3] * w0 + row[J + 4] * w1 + row[J + 5] * w2
        h2 = row[J + 6] * w0 + row[J + 7] * w1 + row[J + 8] * w2
        n[0] -= w1 * h2 - w2 * h1
        n[1] -= w2 * h0 - w0 * h2
        n[2] -= w0 * h1 - w1 * h0
        for a in range(3):
            dy[w + a] = row[Ji + 3 * a] * n[0] + row[Ji + 3 * a + 1] * n[1] + row[Ji + 3 * a + 2] * n[2]


@kernel("f8(f8[:, ::1], f8[::1], f8[:, ::1], f8[::1], f8[::1])")
def sphere_box_gap(Ri: np.ndarray, ci: np.ndarray, Rj: np.ndarray, cj: np.ndarray, volumes: np.ndarray) -> float:
    """The distance (m) from surface i's bounding sphere to surface j's bounding box (``volumes``:
    the sphere's centre in i's frame and radius, the box's centre and half-sides in j's frame, m),
    placed by the surfaces' poses; negative (less the radius) inside the box."""
    d = np.empty(3)
    for a in range(3):  # the sphere's centre relative to the box's frame origin, global
        d[a] = ci[a] + Ri[a, 0] * volumes[0] + Ri[a, 1] * volumes[1] + Ri[a, 2] * volumes[2] - cj[a]
    s = 0.0
    for a in range(3):  # in the box's frame, from its centre; outside its half-sides
        q = Rj[0, a] * d[0] + Rj[1, a] * d[1] + Rj[2, a] * d[2] - volumes[4 + a]
        out = abs(q) - volumes[7 + a]
        if out > 0.0:
            s += out * out
    return math.sqrt(s) - volumes[3]


@helper(inline=True)
def _norm3(x0: float, x1: float, x2: float) -> float:
    return math.sqrt(x0 * x0 + x1 * x1 + x2 * x2)


@kernel("f8(f8[:, ::1], f8[::1], f8[:, ::1], f8[::1], f8[::1], f8[:, ::1], i8, i8)")
def approach_speed(Ri: np.ndarray, ci: np.ndarray, Rj: np.ndarray, cj: np.ndarray, volumes: np.ndarray,
                   bodies: np.ndarray, ki: int, kj: int) -> float:
    """An upper bound of the rate (m/s) at which :func:`sphere_box_gap` can shrink, bodies ``ki``
    (surface i's) and ``kj`` moving as their rows of ``bodies`` say: the speed of the sphere's
    centre plus that of the box's fastest point (its body's speed, and its spin times the box's
    farthest point's distance from the body's origin)."""
    P, B = np.empty(3), np.empty(3)
    for a in range(3):  # the sphere's centre and the box's centre, global
        P[a] = ci[a] + Ri[a, 0] * volumes[0] + Ri[a, 1] * volumes[1] + Ri[a, 2] * volumes[2]
        B[a] = cj[a] + Rj[a, 0] * volumes[4] + Rj[a, 1] * volumes[5] + Rj[a, 2] * volumes[6]
    bi, bj = bodies[ki], bodies[kj]
    d0, d1, d2 = P[0] - bi[L.BODY_R], P[1] - bi[L.BODY_R + 1], P[2] - bi[L.BODY_R + 2]
    w0, w1, w2 = bi[L.BODY_W], bi[L.BODY_W + 1], bi[L.BODY_W + 2]
    speed_i = _norm3(bi[L.BODY_V] + w1 * d2 - w2 * d1, bi[L.BODY_V + 1] + w2 * d0 - w0 * d2,
                     bi[L.BODY_V + 2] + w0 * d1 - w1 * d0)
    reach = (_norm3(B[0] - bj[L.BODY_R], B[1] - bj[L.BODY_R + 1], B[2] - bj[L.BODY_R + 2])
             + _norm3(volumes[7], volumes[8], volumes[9]))
    return speed_i + _norm3(bj[L.BODY_V], bj[L.BODY_V + 1], bj[L.BODY_V + 2]) \
        + _norm3(bj[L.BODY_W], bj[L.BODY_W + 1], bj[L.BODY_W + 2]) * reach
