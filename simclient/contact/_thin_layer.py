"""Argatov's closed-form contact laws for thin cartilage layers (elliptical contact; the reference's
section 004, eqs. 8-29): what a point contact with effective radii gives without an element grid.

The gap near the contact point is ``phi = eta1^2 / (2 R1) + eta2^2 / (2 R2)`` (R1, R2 the gap's
principal radii in metres, from both surfaces' curvatures) and ``delta`` the pseudo-penetration
(m). Layers ``n = 1, 2`` of thickness ``h_n`` (m), Young's modulus ``E_n`` (Pa) and Poisson's ratio
``nu_n`` on rigid substrates, frictionless:

- compressible (Winkler, eqs. 13-17): ``p = k (delta - phi)``,
  ``k = (A1 h1 / E1 + A2 h2 / E2)^-1`` (N/m^3) with ``A = (1 + nu)(1 - 2 nu) / (1 - nu)``, and
  ``P = pi k sqrt(R1 R2) delta^2``;
- incompressible (eqs. 18-29): ``p = p0 (1 - eta1^2/a^2 - eta2^2/b^2)^2``,
  ``m = (B1 h1^3 / E1 + B2 h2^3 / E2)^-1`` (N/m^5) with ``B = nu (1 + nu)(4 nu - 1) / (3 (1 - nu)^2)``
  (eq. 19 into eq. 25: the printed eq. 26 has ``(1 - nu^2)^2`` where this gives ``(1 - nu)^2``, a
  known erratum), ``P = (pi m / 3) M_P(s) R1 R2 delta^3`` with ``s = b / a`` from eq. 29.

Both are power laws ``P = K delta^n`` (n = 2 and 3): :func:`compressible_law` and
:func:`incompressible_law` give them as force laws the dynamics use like any other. The incompressible
branch needs nu near 0.5 (B vanishes at nu = 0.25 and is negative below).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from simclient.contact._laws import HertzianLaw
from simclient.errors import ParameterError

__all__ = ["Layer", "winkler_modulus", "incompressible_modulus", "shape_ratio", "force_factor",
           "EllipticContact", "incompressible_contact", "compressible_law", "incompressible_law"]


@dataclass(frozen=True)
class Layer:
    """A thin layer: thickness ``h`` (m), Young's modulus ``E`` (Pa), Poisson's ratio ``nu``."""

    h: float
    E: float
    nu: float

    def __post_init__(self) -> None:
        if not (self.h > 0 and math.isfinite(self.h)):
            raise ParameterError(f"layer thickness h must be positive and finite (m), got {self.h}")
        if not (self.E > 0 and math.isfinite(self.E)):
            raise ParameterError(f"layer modulus E must be positive and finite (Pa), got {self.E}")
        if not -1 < self.nu <= 0.5:
            raise ParameterError(f"layer Poisson's ratio must lie in (-1, 0.5], got {self.nu}")

    @property
    def compressibility(self) -> float:
        """``A = (1 + nu)(1 - 2 nu) / (1 - nu)`` (eq. 10)."""
        return (1 + self.nu) * (1 - 2 * self.nu) / (1 - self.nu)

    @property
    def incompressibility(self) -> float:
        """``B = nu (1 + nu)(4 nu - 1) / (3 (1 - nu)^2)`` (eq. 19)."""
        return self.nu * (1 + self.nu) * (4 * self.nu - 1) / (3 * (1 - self.nu) ** 2)


def winkler_modulus(*layers: Layer) -> float:
    """Foundation modulus ``k`` (N/m^3) of one or two layers in series (eq. 14; one layer of
    total thickness h: eq. 15, Blankevoort's ``S / h``)."""
    inv = sum(layer.compressibility * layer.h / layer.E for layer in layers)
    if inv <= 0:
        raise ParameterError("the compressible (Winkler) layer law needs Poisson's ratios below 0.5")
    return 1.0 / inv


def incompressible_modulus(*layers: Layer) -> float:
    """``m`` (N/m^5) of one or two thin incompressible layers (eq. 25, with the corrected eq. 26)."""
    inv = sum(layer.incompressibility * layer.h**3 / layer.E for layer in layers)
    if inv <= 0:
        raise ParameterError("the incompressible thin-layer law needs Poisson's ratios above 0.25 (near 0.5)")
    return 1.0 / inv


def shape_ratio(R1: float, R2: float) -> float:
    """``s = b / a`` of the incompressible contact ellipse (eq. 29)."""
    c = (R1 - R2) / (6 * R1)
    return math.sqrt(math.sqrt(c * c + R2 / R1) - c)


def force_factor(s: float) -> float:
    """``M_P(s) = s (3 s^2 + 1)(s^2 + 3) / (s^2 + 1)^3`` (eq. 28; M_P(1) = 2)."""
    return s * (3 * s * s + 1) * (s * s + 3) / (s * s + 1) ** 3


@dataclass(frozen=True)
class EllipticContact:
    """The incompressible layer's contact: ellipse semi-axes ``a``, ``b`` (m, along R1 and R2),
    central pressure ``p0`` (Pa), force ``P`` (N), ``s = b / a``."""

    s: float
    a: float
    b: float
    p0: float
    P: float


def _check_radii(R1: float, R2: float, delta: float | None = None) -> None:
    if not (R1 > 0 and R2 > 0 and math.isfinite(R1) and math.isfinite(R2)):
        raise ParameterError(f"effective radii must be positive and finite (m), got R1 = {R1}, R2 = {R2}")
    if delta is not None and not (delta >= 0 and math.isfinite(delta)):
        raise ParameterError(f"the penetration must be >= 0 and finite (m), got {delta}")


def incompressible_contact(R1: float, R2: float, delta: float, m: float) -> EllipticContact:
    """The closed forms of eqs. 22-29: ``a^2 = 2 R1 delta (1 + 3 s^2) / (1 + s^2)``,
    ``b^2 = 2 R2 delta (3 + s^2) / (1 + s^2)``, ``p0 = m delta a^2 b^2 / (4 (a^2 + b^2))`` and
    ``P = pi a b p0 / 3 = (pi m / 3) M_P(s) R1 R2 delta^3``."""
    _check_radii(R1, R2, delta)
    s = shape_ratio(R1, R2)
    a = math.sqrt(2 * R1 * delta * (1 + 3 * s * s) / (1 + s * s))
    b = math.sqrt(2 * R2 * delta * (3 + s * s) / (1 + s * s))
    p0 = m * delta * a * a * b * b / (4 * (a * a + b * b)) if delta else 0.0
    return EllipticContact(s, a, b, p0, math.pi / 3 * m * force_factor(s) * R1 * R2 * delta**3)


def compressible_law(R1: float, R2: float, *layers: Layer) -> HertzianLaw:
    """The compressible thin-layer law ``P = pi k sqrt(R1 R2) delta^2`` (eq. 17) as an elastic
    power law (N, m) for the dynamics."""
    _check_radii(R1, R2)
    return HertzianLaw("hertz", math.pi * winkler_modulus(*layers) * math.sqrt(R1 * R2), n=2.0)


def incompressible_law(R1: float, R2: float, *layers: Layer) -> HertzianLaw:
    """The incompressible thin-layer law ``P = (pi m / 3) M_P(s) R1 R2 delta^3`` (eq. 27) as an
    elastic power law (N, m) for the dynamics."""
    _check_radii(R1, R2)
    K = math.pi / 3 * incompressible_modulus(*layers) * force_factor(shape_ratio(R1, R2)) * R1 * R2
    return HertzianLaw("hertz", K, n=3.0)
