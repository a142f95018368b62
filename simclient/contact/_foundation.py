"""Elastic-foundation ("bed of springs") contact: layer laws and forces (Bei & Fregly 2004).

:class:`FoundationContact` runs an :class:`simclient.contact.ElementDetector` (which elements of
the fixed body's grids touch the moving table, and how deep along the midsurface normal) and a
layer law: each element is an independent spring whose pressure follows the law of its
interpenetration ``d`` and the layers' thickness ``h``; it pushes the moving body along the
midsurface normal with ``p A`` at the element centre (and the fixed body back). Net force and
torque follow by the principle of replacement about the fixed surface frame's origin.

Units: SI (m, Pa, N, N m). Frames: results live in the fixed surface frame.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from scipy.integrate import quad
from scipy.optimize import brentq

from simclient.contact._elements import SUB_OFFSETS, ElementContact, ElementDetector, ElementGrid
from simclient.errors import ContactError
from simclient.geometry import jit
from simclient.io import Source

__all__ = ["LayerLaw", "LinearLayer", "NonlinearLayer", "CompartmentResult", "FoundationContact",
           "power_gap_strain_ratios"]


class LayerLaw(Protocol):
    """A layer law: ``pressure(d, h)`` (Pa) for interpenetrations ``d`` (m) of layers of thickness
    ``h`` (m), arrays of the same shape."""

    def pressure(self, d: np.ndarray, h: np.ndarray) -> np.ndarray: ...


def power_gap_strain_ratios(eps0: float, n: float = 2.0) -> tuple[float, float]:
    """Large against small strain (Bei & Fregly's eqs. 2 and 1) at equal force on an elastic
    foundation of even thickness h pressed by a gap growing as ``c r^n`` (n = 2: a paraboloid, of
    any radii), closed form: with the peak strain e the interpenetration is h (e - s) where the
    strain is s, so the area is pi (h e / c)^(2/n), the force pi M (h / c)^(2/n) (2/n)
    int_0^e f(s) (e - s)^(2/n - 1) ds (M the aggregate modulus; f(s) = s small, -ln(1 - s) large)
    and the peak pressure M f(e). Returns ``(peak pressure ratio, area ratio)`` for the
    small-strain peak strain ``eps0`` (0 < eps0 < 1); neither depends on h, c or M."""
    w = {"weight": "alg", "wvar": (0.0, 2 / n - 1)}  # quad's weight (e - s)^(2/n - 1)
    small = quad(lambda s: s, 0, eps0, **w)[0]
    e = brentq(lambda e: quad(lambda s: -math.log(1 - s), 0, e, **w)[0] - small, 1e-9, min(0.999, 1.5 * eps0))
    return -math.log(1 - e) / eps0, (e / eps0) ** (2 / n)


def _strain_measure(d: np.ndarray, h: np.ndarray, large: bool) -> np.ndarray:
    e = np.minimum(np.maximum(d / h, 0.0), 0.95)  # beyond 95 % of the layer the laws no longer mean anything
    return -np.log1p(-e) if large else e


@dataclass(frozen=True)
class LinearLayer:
    """Linear elastic layer, Bei & Fregly eq. (1) (small strain: ``p = K d / h``) or eq. (2)
    (large strain: ``p = -K ln(1 - d / h)``), ``K = (1 - nu) E / ((1 + nu)(1 - 2 nu))`` (Pa)."""

    E: float  # Young's modulus, Pa
    nu: float  # Poisson's ratio
    large_strain: bool = False

    @property
    def aggregate_modulus(self) -> float:
        """``K = (1 - nu) E / ((1 + nu)(1 - 2 nu))``, Pa."""
        return (1 - self.nu) * self.E / ((1 + self.nu) * (1 - 2 * self.nu))

    def pressure(self, d: np.ndarray, h: np.ndarray) -> np.ndarray:
        """Pressure (Pa) for interpenetration ``d`` (m) of a layer of thickness ``h`` (m); 0 for d <= 0."""
        return self.aggregate_modulus * _strain_measure(d, h, self.large_strain)


@dataclass(frozen=True)
class NonlinearLayer:
    """Nonlinear material of Bei & Fregly eqs. (3)-(4): strain ``eps = eps0/2 (p/p0) + eps0/2
    (p/p0)^n``, tangent modulus ``E(p) = 1 / (eps0/(2 p0) (1 + n (p/p0)^(n-1)))``, substituted into
    eq. (1) (or (2) with ``large_strain``): ``p = c E(p) f(d/h)`` with ``c = (1 - nu)/((1 + nu)(1 - 2 nu))``,
    solved per element (Newton inside a bracket). ``n = 1`` is the linear layer with ``E = p0/eps0``."""

    eps0: float
    p0: float  # Pa
    n: float
    nu: float
    large_strain: bool = False

    def tangent_modulus(self, p: np.ndarray | float) -> np.ndarray:
        """``E(p)``, Pa."""
        return 1.0 / (0.5 * self.eps0 / self.p0 * (1 + self.n * (np.asarray(p) / self.p0) ** (self.n - 1)))

    def pressure(self, d: np.ndarray, h: np.ndarray) -> np.ndarray:
        c = (1 - self.nu) / ((1 + self.nu) * (1 - 2 * self.nu))
        g = np.ascontiguousarray(c * _strain_measure(d, h, self.large_strain), dtype=float)
        p = np.empty_like(g)
        worst = _nonlinear_pressures(g, 0.5 * self.eps0 / self.p0, float(self.n), float(self.p0), p)
        if worst > 0:
            raise ContactError(f"nonlinear layer: the pressure solve did not converge (max |residual| {worst:.3g} Pa)")
        return p


@jit
def _nonlinear_pressures(g: np.ndarray, a: float, n: float, p0: float, p: np.ndarray) -> float:
    """:meth:`NonlinearLayer.pressure` per element: the root of ``f(p) = p - g E(p)``, ``E(p) = 1 /
    (a (1 + n (p/p0)^(n-1)))``, which rises monotonically (E falls with p), so it lies in
    ``[0, g E(0)]``: Newton kept inside the bracket (bisection where a step leaves it), to
    ``|f| <= 1e-10 max(p, 1e-6 p0)``. Writes ``p`` (Pa); returns 0, or the largest residual (Pa)
    of the elements that did not converge in 60 iterations."""
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
            step = pk - f / (1 - g[k] * dE)
            pk = step if lo <= step <= hi else 0.5 * (lo + hi)
        p[k] = pk
        if not done:
            worst = max(worst, abs(f))
    return worst


@dataclass
class CompartmentResult:
    """One compartment's contact for one pose (fixed surface frame): ``force`` (N) on the moving
    body and ``torque`` (N m) about the fixed frame's origin, ``pressure`` (n,) Pa per element
    (NaN where not usable), ``depth`` (n,) m (corrected interpenetration, 0 where inactive),
    ``active`` (n,) bool; summaries ``peak_pressure`` and ``mean_pressure`` (area-weighted over the
    active elements) in Pa, ``area`` m^2, ``centre_of_pressure`` m."""

    name: str
    force: np.ndarray
    torque: np.ndarray
    pressure: np.ndarray
    depth: np.ndarray
    active: np.ndarray
    area: float
    peak_pressure: float
    mean_pressure: float
    centre_of_pressure: np.ndarray

    def summary(self) -> dict[str, Any]:
        """The DESIGN's per-compartment keys (and a few more)."""
        return {"force_N": float(np.linalg.norm(self.force)), "torque_Nm": float(np.linalg.norm(self.torque)),
                "peak_pressure_Pa": self.peak_pressure, "mean_pressure_Pa": self.mean_pressure,
                "area_m2": self.area, "active_elements": int(self.active.sum()),
                "force_vector_N": self.force.tolist(), "centre_of_pressure_m": self.centre_of_pressure.tolist()}


@jit
def _resultants(p: np.ndarray, area: np.ndarray, at: np.ndarray,
                normal: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, np.ndarray]:
    """Net force (N) and torque about the origin (N m) of element forces ``p[m] area[m]`` along
    ``normal[m]`` at ``at[m]`` (principle of replacement), the load ``sum p A`` (N) and the centre of
    pressure (m; NaN without load)."""
    F, T, cop = np.zeros(3), np.zeros(3), np.zeros(3)
    load = 0.0
    for m in range(p.shape[0]):
        pa = p[m] * area[m]
        f0, f1, f2 = pa * normal[m, 0], pa * normal[m, 1], pa * normal[m, 2]
        c0, c1, c2 = at[m, 0], at[m, 1], at[m, 2]
        F[0] += f0
        F[1] += f1
        F[2] += f2
        T[0] += c1 * f2 - c2 * f1
        T[1] += c2 * f0 - c0 * f2
        T[2] += c0 * f1 - c1 * f0
        cop[0] += c0 * pa
        cop[1] += c1 * pa
        cop[2] += c2 * pa
        load += pa
    return F, T, load, cop / load if load > 0 else np.full(3, np.nan)


def layer_result(contact: ElementContact, layer: LayerLaw) -> CompartmentResult:
    """Pressures, force and torque of one compartment's contact under ``layer``. With sub-points
    (the ``quadratic`` quadrature) an element's pressure is the mean over its sub-points, its
    contact area the element's times the share of them in contact, and its force acts at the
    sub-points' centre of pressure. The peak pressure is the largest element's."""
    g, a = contact.grid, contact.active
    if contact.sub_depth is None:
        pa = layer.pressure(contact.depth[a], contact.thickness) if len(a) else np.zeros(0)
        share, at = np.ones(len(a)), g.centre[a]
    else:
        sub = contact.sub_depth
        ps = layer.pressure(sub.ravel(), np.repeat(contact.thickness, sub.shape[1])).reshape(sub.shape)
        pa, share = ps.mean(axis=1), (sub > 0).mean(axis=1)
        # (u, v) offsets of each element's centre of pressure, in element spacings, onto its edges
        off = ps @ SUB_OFFSETS / np.maximum(ps.sum(axis=1), 1e-300)[:, None]
        at = g.centre[a] + np.einsum("mi,mij->mj", off, g.edges[a])
    F, T, load, cop = _resultants(pa, g.area[a], at, contact.normal)
    area = float(g.area[a] @ share)
    p = np.where(g.usable, 0.0, np.nan)
    p[a] = pa
    return CompartmentResult(g.name, F, T, p, contact.depth, contact.mask, area, float(pa.max(initial=0.0)),
                             load / area if area > 0 else 0.0, cop)


class FoundationContact:
    """Elastic-foundation contact between element grids on a fixed table and a moving table:
    an :class:`ElementDetector` (``grids``, ``moving`` -- one table, or one per compartment -- and
    the keyword ``options`` are its own)
    and a ``layer`` law (:class:`LinearLayer`, :class:`NonlinearLayer`)."""

    def __init__(self, grids: list[ElementGrid], moving: Source | Mapping[str, Source], layer: LayerLaw,
                 **options: Any) -> None:
        self.layer = layer
        self.detector = ElementDetector(grids, moving, **options)
        # the last detection and its result per compartment: a copied detection keeps its result
        self._last: dict[str, tuple[ElementContact, CompartmentResult]] = {}

    @property
    def compartments(self) -> dict[str, Any]:
        """Per compartment: its ``grid`` and the moving table's ``window``."""
        return self.detector.compartments

    @property
    def stats(self) -> dict[str, Any]:
        """The detector's statistics (see :attr:`ElementDetector.stats`)."""
        return self.detector.stats

    @property
    def elements_evaluated(self) -> int:
        """Ray casts so far."""
        return self.detector.elements_evaluated

    def evaluate(self, R_fixed: np.ndarray, c_fixed: np.ndarray, R_moving: np.ndarray, c_moving: np.ndarray,
                 full: bool = False) -> dict[str, CompartmentResult]:
        """Contact for the surface frames' poses (global): per compartment, in the fixed surface frame.
        ``full`` forces a full search (for checks)."""
        out = {}
        for name, contact in self.detector.detect(R_fixed, c_fixed, R_moving, c_moving, full).items():
            last = self._last.get(name)
            if last is None or last[0] is not contact:
                last = self._last[name] = (contact, layer_result(contact, self.layer))
            out[name] = last[1]
        return out
