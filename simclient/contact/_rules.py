"""The contact rules as kernels, each written once: the normal force laws, friction, the nonlinear
layer's pressure and the elastic foundation's resultants. The Python objects
(:class:`simclient.contact.ForceLaw`, :class:`simclient.contact.Friction`, the layers) and the
compiled right-hand side call these same functions.

Units: SI (m, m/s, N, Pa). Parameter layouts: :mod:`simclient.geometry.layout` (``LAW_*``,
``FRICTION_*``).
"""

from __future__ import annotations

import math

import numpy as np

from simclient.geometry import layout as L
from simclient.geometry.kernels import helper, kernel

__all__ = ["step", "law_force", "friction_coefficient", "friction_force", "nonlinear_pressures", "resultants"]


@kernel("f8(f8, f8, f8, f8, f8)", inline=True)
def step(a: float, x1: float, y1: float, x2: float, y2: float) -> float:
    """The cubic STEP of multibody codes (Markus et al. 2019 eq. 8, with the continuity correction:
    the printed middle branch has ``x2 - x1`` where ``y2 - y1`` belongs): ``y1`` for ``a <= x1``,
    ``y1 + (y2 - y1) z^2 (3 - 2 z)`` with ``z = (a - x1) / (x2 - x1)`` between, ``y2`` for
    ``a >= x2``; C1 (zero slope at both ends)."""
    if a <= x1:
        return y1
    if a >= x2:
        return y2
    z = (a - x1) / (x2 - x1)
    return y1 + (y2 - y1) * z * z * (3.0 - 2.0 * z)


@kernel("f8(i8, f8[::1], f8, f8, f8)")
def law_force(kind: int, p: np.ndarray, delta: float, delta_dot: float, delta_dot0: float) -> float:
    """Normal force (N) of a compiled law (:attr:`simclient.contact.ForceLaw.packed`) at indentation
    ``delta`` (m), rate ``delta_dot`` (m/s) and impact velocity ``delta_dot0`` (m/s); NaN where a
    dissipative law has no positive impact velocity, or for an unknown kind. Kinds:

    - ``LAW_HERTZIAN``, ``p = (K, n, D)``: ``K delta^n (1 + D delta_dot / delta_dot0)``, never
      pulling (thesis Table 5.4; ``D = 0`` for Hertz);
    - ``LAW_DOUBLE_LAYER``, ``p = (K1, K2, h1, n)``: ``K1 delta^n`` in the first layer, then
      ``K1 h1^n + K2 (delta - h1)^n`` (eq. 5.33);
    - ``LAW_PENALTY_STEP``, ``p = (K, n, d_max, c_max)``: ``K delta^n + STEP(delta, 0, 0, d_max,
      c_max) delta_dot``, never pulling (Markus et al. 2019 eq. 9)."""
    if delta <= 0.0:
        return 0.0
    if kind == L.LAW_HERTZIAN:
        elastic = p[0] * delta ** p[1]
        if p[2] == 0.0:
            return elastic
        if delta_dot0 <= 0.0:
            return math.nan
        return max(0.0, elastic * (1.0 + p[2] * delta_dot / delta_dot0))
    if kind == L.LAW_DOUBLE_LAYER:
        if delta <= p[2]:
            return p[0] * delta ** p[3]
        return p[0] * p[2] ** p[3] + p[1] * (delta - p[2]) ** p[3]
    if kind == L.LAW_PENALTY_STEP:
        return max(0.0, p[0] * delta ** p[1] + step(delta, 0.0, 0.0, p[2], p[3]) * delta_dot)
    return math.nan


@helper(inline=True)
def _step5(z: float) -> float:
    return z * z * z * (10.0 + z * (6.0 * z - 15.0))


@kernel("f8(f8[::1], f8)", inline=True)
def friction_coefficient(p: np.ndarray, slip: float) -> float:
    """The coefficient of friction (dimensionless) at slip speed ``slip`` (m/s, >= 0) for the
    parameters ``p = (mu_s, mu_d, mu_v, v_t)`` (Simbody's regularized Coulomb friction, see
    :class:`simclient.contact.Friction`): ``mu_s step5(x)`` below the transition velocity
    (``x = slip / v_t < 1``), down to ``mu_d`` by ``x = 3``, plus ``mu_v slip``."""
    x = slip / p[L.FRICTION_V_T]
    mu_s, mu_d = p[L.FRICTION_MU_S], p[L.FRICTION_MU_D]
    if x >= 3.0:
        dry = mu_d
    elif x >= 1.0:
        dry = mu_s - (mu_s - mu_d) * _step5(0.5 * (x - 1.0))
    else:
        dry = mu_s * _step5(x)
    return dry + p[L.FRICTION_MU_V] * slip


@kernel("void(f8[::1], f8[::1], f8[::1], f8, f8[::1])", inline=True)
def friction_force(p: np.ndarray, n: np.ndarray, velocity: np.ndarray, fn: float, force: np.ndarray) -> None:
    """Friction added to ``force`` (N, 3): the relative velocity ``velocity`` (m/s, ``v_i - v_j``
    of the bodies' material points where friction acts) less its part along the unit normal ``n``
    is the slip; the friction is ``mu(|slip|) fn`` against it (parameters ``p``, see
    :func:`friction_coefficient`), none without slip or without a pushing normal force ``fn`` (N).
    The one implementation of friction: point contacts (Python and compiled) and each element of
    the elastic foundation call it."""
    vn = velocity[0] * n[0] + velocity[1] * n[1] + velocity[2] * n[2]
    s0, s1, s2 = velocity[0] - vn * n[0], velocity[1] - vn * n[1], velocity[2] - vn * n[2]
    speed = math.sqrt(s0 * s0 + s1 * s1 + s2 * s2)
    if speed > 0.0 and fn > 0.0:
        scale = friction_coefficient(p, speed) * fn / speed
        force[0] -= scale * s0
        force[1] -= scale * s1
        force[2] -= scale * s2


@kernel("f8(f8[::1], f8, f8, f8, f8[::1])")
def nonlinear_pressures(g: np.ndarray, a: float, n: float, p0: float, p: np.ndarray) -> float:
    """:meth:`simclient.contact.NonlinearLayer.pressure` per element: the root of
    ``f(p) = p - g E(p)``, ``E(p) = 1 / (a (1 + n (p/p0)^(n-1)))``, which rises monotonically (E falls
    with p), so it lies in ``[0, g E(0)]``: Newton kept inside the bracket (bisection where a step
    leaves it), to ``|f| <= 1e-10 max(p, 1e-6 p0)``. Writes ``p`` (Pa); returns 0, or the largest
    residual (Pa) of the elements that did not converge in 60 iterations."""
    worst = 0.0
    for k in range(g.shape[0]):
        lo, hi = 0.0, g[k] / (a * (1 + n * 0.0 ** (n - 1)))
        pk = hi
        f = 0.0
        done = False
        for _ in range(60):
            x = pk / p0
            E = 1.0 / (a * (1 + n * x ** (n - 1)))
            f = pk - g[k] * E
            if abs(f) <= 1e-10 * max(pk, p0 * 1e-6):
                done = True
                break
            if f < 0:
                lo = pk
            else:
                hi = pk
            dE = -E * E * a * n * (n - 1) * x ** max(n - 2, 0.0) / p0
            step_ = pk - f / (1 - g[k] * dE)
            pk = step_ if lo <= step_ <= hi else 0.5 * (lo + hi)
        p[k] = pk
        if not done:
            worst = max(worst, abs(f))
    return worst


@kernel("Tuple((f8[::1], f8[::1], f8, f8[::1]))(f8[::1], f8[::1], f8[:, ::1], f8[:, ::1], f8[::1], f8[::1], f8, "
        "f8[::1])")
def resultants(p: np.ndarray, area: np.ndarray, at: np.ndarray, normal: np.ndarray, V: np.ndarray, W: np.ndarray,
               dissipation: float, friction: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, np.ndarray]:
    """Net force (N) and torque about the origin (N m) of element forces ``p[m] area[m]`` along
    ``normal[m]`` at ``at[m]`` (principle of replacement), the load ``sum p A`` (N) and the centre of
    pressure (m; NaN without load). Where the moving body's material moves at ``V + W x at[m]``
    (m/s) relative to the fixed body's: each element's normal force times ``1 + 3/2 c d'`` (``c``
    = ``dissipation``, s/m; ``d' = -v . n`` the rate of interpenetration; never pulling), and with
    ``friction`` (:attr:`simclient.contact.Friction.packed`; empty: none) its friction
    (:func:`friction_force`, Simbody's elastic foundation, element by element)."""
    F, T, cop = np.zeros(3), np.zeros(3), np.zeros(3)
    f, n, v = np.empty(3), np.empty(3), np.empty(3)
    load = 0.0
    moving = dissipation != 0.0 or friction.shape[0] > 0
    for m in range(p.shape[0]):
        pa = p[m] * area[m]
        for a in range(3):
            n[a] = normal[m, a]
            cop[a] += at[m, a] * pa
            f[a] = pa * n[a]
        load += pa
        c0, c1, c2 = at[m, 0], at[m, 1], at[m, 2]
        if moving:
            v[0] = V[0] + W[1] * c2 - W[2] * c1
            v[1] = V[1] + W[2] * c0 - W[0] * c2
            v[2] = V[2] + W[0] * c1 - W[1] * c0
            fn = max(pa * (1.0 - 1.5 * dissipation * (v[0] * n[0] + v[1] * n[1] + v[2] * n[2])), 0.0)
            for a in range(3):
                f[a] = fn * n[a]
            if friction.shape[0] > 0:
                # (the slip of the moving body's material on the fixed one: the force on the moving body)
                friction_force(friction, n, v, fn, f)
        F[0] += f[0]
        F[1] += f[1]
        F[2] += f[2]
        T[0] += c1 * f[2] - c2 * f[1]
        T[1] += c2 * f[0] - c0 * f[2]
        T[2] += c0 * f[1] - c1 * f[0]
    return F, T, load, cop / load if load > 0 else np.full(3, np.nan)
