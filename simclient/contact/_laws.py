"""Normal contact force laws (thesis Table 5.4, eqs. 5.32-5.33), generalized stiffness and materials.

Every law maps ``(indentation delta [m], indentation rate delta_dot [m/s], impact velocity
delta_dot0 [m/s])`` to a normal force [N]::

    F_N = K delta^n [1 + D(c_r) delta_dot / delta_dot0]

with ``K`` the generalized stiffness [N/m^n], ``n`` = 1.5 and ``delta_dot0`` the indentation rate
latched at the onset of the contact. Hertz has ``D = 0``. A dissipative law never pulls the bodies
together: the force is clipped at zero during restitution.

Laws are looked up by name in :data:`LAWS` (``hertz``, ``hunt-crossley``, ``herbert-mcwhannell``,
``lee-wang``, ``lankarani-nikravesh``, ``gonthier``, ``zhiying-qishao``, ``flores``);
:class:`DoubleLayer` is the two-layer Hertz law (5.33).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["ForceLaw", "DoubleLayer", "LAWS", "DAMPING", "make_law", "hertz_stiffness", "Material",
           "MATERIALS"]

#: Damping factor D(c_r) of each dissipative law (Table 5.4).
DAMPING: dict[str, Callable[[float], float]] = {
    "hertz": lambda cr: 0.0,
    "hunt-crossley": lambda cr: 3 * (1 - cr) / 2,
    "herbert-mcwhannell": lambda cr: 6 * (1 - cr) / ((2 * cr - 1) ** 2 + 3),
    "lee-wang": lambda cr: 3 * (1 - cr) / 4,
    "lankarani-nikravesh": lambda cr: 3 * (1 - cr**2) / 4,
    "gonthier": lambda cr: (1 - cr**2) / cr,
    "zhiying-qishao": lambda cr: 3 * (1 - cr**2) * math.exp(2 * (1 - cr)) / 4,
    "flores": lambda cr: 8 * (1 - cr) / (5 * cr),
}


@dataclass(frozen=True)
class ForceLaw:
    """``F = K delta^n [1 + D(c_r) delta_dot / delta_dot0]`` (N), clipped at zero.

    ``name`` in :data:`DAMPING`; ``K`` in N/m^n; ``cr`` the coefficient of restitution.
    """

    name: str
    K: float
    n: float = 1.5
    cr: float = 1.0

    @property
    def damping(self) -> float:
        return DAMPING[self.name](self.cr)

    def force(self, delta: float, delta_dot: float, delta_dot0: float) -> float:
        if delta <= 0.0:
            return 0.0
        elastic = self.K * delta**self.n
        D = self.damping
        if D == 0.0:
            return elastic
        if delta_dot0 <= 0.0:
            raise ValueError(f"{self.name}: the impact velocity must be positive, got {delta_dot0}")
        return max(0.0, elastic * (1.0 + D * delta_dot / delta_dot0))

    def elastic_energy(self, delta: float) -> float:
        """Energy stored by the elastic part at indentation ``delta`` (J)."""
        return self.K * max(delta, 0.0) ** (self.n + 1) / (self.n + 1)


@dataclass(frozen=True)
class DoubleLayer:
    """Two-layer Hertz law (5.33): ``K1 delta^n`` up to the first layer's thickness ``h1`` (m),
    then ``K1 h1^n + K2 (delta - h1)^n``."""

    K1: float
    K2: float
    h1: float
    n: float = 1.5
    name: str = "double-layer"

    def force(self, delta: float, delta_dot: float, delta_dot0: float) -> float:
        if delta <= 0.0:
            return 0.0
        if delta <= self.h1:
            return self.K1 * delta**self.n
        return self.K1 * self.h1**self.n + self.K2 * (delta - self.h1) ** self.n

    def elastic_energy(self, delta: float) -> float:
        if delta <= 0.0:
            return 0.0
        if delta <= self.h1:
            return self.K1 * delta ** (self.n + 1) / (self.n + 1)
        e1 = self.K1 * self.h1 ** (self.n + 1) / (self.n + 1)
        return e1 + self.K1 * self.h1**self.n * (delta - self.h1) + self.K2 * (delta - self.h1) ** (self.n + 1) / (self.n + 1)


LAWS = tuple(DAMPING)


def make_law(name: str, K: float, cr: float = 1.0, n: float = 1.5) -> ForceLaw:
    """A law of :data:`LAWS` by name; ValueError listing the choices for an unknown one."""
    if name not in DAMPING:
        raise ValueError(f"unknown force law {name!r}; choose one of {', '.join(LAWS)}")
    if not (K > 0 and math.isfinite(K)):
        raise ValueError(f"stiffness K must be positive, got {K}")
    if name != "hertz" and not 0 < cr <= 1:
        raise ValueError(f"coefficient of restitution must be in (0, 1], got {cr}")
    return ForceLaw(name, K, n, cr)


def hertz_stiffness(E_i: float, nu_i: float, E_j: float, nu_j: float, R_i: float,
                    R_j: float | None = None, kind: str = "convex") -> float:
    """Generalized Hertz stiffness ``K = 4/3 E* sqrt(R*)`` (N/m^1.5).

    ``1/E* = (1 - nu_i^2)/E_i + (1 - nu_j^2)/E_j`` (Pa); ``R* = R_i R_j/(R_i + R_j)`` for two
    convex spheres, ``R_i R_j/(R_j - R_i)`` for sphere i inside concave sphere j (R_j > R_i),
    ``R_i`` for a sphere on a plane (``R_j=None``). Radii in metres. The thesis' Table 5.3 values
    2750403 and 5879434 N/m^1.5 correspond to its convex-convex and convex-concave radius pairs
    swapped (erratum); this function uses the radii as given.
    """
    E_star = 1.0 / ((1 - nu_i**2) / E_i + (1 - nu_j**2) / E_j)
    if R_j is None or kind == "plane":
        R = R_i
    elif kind == "convex":
        R = R_i * R_j / (R_i + R_j)
    elif kind == "concave":
        if R_j <= R_i:
            raise ValueError(f"concave contact needs R_j > R_i, got R_i={R_i}, R_j={R_j}")
        R = R_i * R_j / (R_j - R_i)
    else:
        raise ValueError(f"unknown kind {kind!r}: convex, concave or plane")
    return 4.0 / 3.0 * E_star * math.sqrt(R)


@dataclass(frozen=True)
class Material:
    """Young's modulus ``E`` (Pa), Poisson's ratio ``nu``, coefficient of restitution ``cr``."""

    E: float
    nu: float
    cr: float


#: Table 5.5 of the thesis.
MATERIALS = {
    "cartilage": Material(24e6, 0.38, 0.616),
    "bone": Material(17200e6, 0.39, 0.620),
    "osteoporotic-bone": Material(12000e6, 0.39, 0.620),
    "uhmwpe": Material(800e6, 0.46, 0.790),
    "cr-co": Material(200000e6, 0.30, 0.790),
}
