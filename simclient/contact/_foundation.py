"""Elastic-foundation ("bed of springs") contact: layer laws and forces (Bei & Fregly 2004).

:class:`FoundationContact` runs an :class:`simclient.contact.ElementDetector` (which elements of
the fixed body's grids touch the moving table, and how deep along the midsurface normal) and a
layer law: each element is an independent spring whose pressure follows the law of its
interpenetration ``d`` and the layers' thickness ``h``; it pushes the moving body along the
midsurface normal with ``p A`` at the element centre (and the fixed body back). Net force and
torque follow by the principle of replacement about the fixed surface frame's origin. For
dynamics, each element's force can also dissipate and carry friction (Simbody's elastic
foundation; see :class:`FoundationContact`), and :func:`layer_energy` gives the energy it stores.

Units: SI (m, Pa, N, N m). Frames: results live in the fixed surface frame.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from numbers import Real
from typing import Any, Protocol

import numpy as np

from simclient.contact._elements import (
    SUB_OFFSETS,
    SUB_POINTS,
    ElementContact,
    ElementDetector,
    ElementGrid,
    zoomed_grid,
)
from simclient.contact._friction import Friction, checked_friction
from simclient.contact._rules import nonlinear_pressures, resultants
from simclient.errors import ContactError, ParameterError, nonnegative
from simclient.io import Source

__all__ = ["LayerLaw", "LinearLayer", "NonlinearLayer", "ViscoelasticLayer", "CompartmentResult", "FoundationContact",
           "Refinement", "power_gap_strain_ratios", "layer_result", "layer_energy"]


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
    from scipy.integrate import quad  # (a closed form's check: scipy only here)
    from scipy.optimize import brentq

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

    @property
    def aggregate_modulus(self) -> float:
        """``c E(0)`` (Pa), the small-strain slope of the pressure at zero pressure, ``c = (1 - nu) /
        ((1 + nu)(1 - 2 nu))``."""
        return (1 - self.nu) / ((1 + self.nu) * (1 - 2 * self.nu)) * float(self.tangent_modulus(0.0))

    def pressure(self, d: np.ndarray, h: np.ndarray) -> np.ndarray:
        c = (1 - self.nu) / ((1 + self.nu) * (1 - 2 * self.nu))
        g = np.ascontiguousarray(c * _strain_measure(d, h, self.large_strain), dtype=float)
        p = np.empty_like(g)
        worst = nonlinear_pressures(g, 0.5 * self.eps0 / self.p0, float(self.n), float(self.p0), p)
        if worst > 0:
            raise ContactError(f"nonlinear layer: the pressure solve did not converge (max |residual| {worst:.3g} Pa)")
        return p


@dataclass(frozen=True)
class ViscoelasticLayer:
    """A viscoelastic layer for dynamics: one standard linear solid per element (per sub-point with
    the quadratic quadrature), Bei & Fregly's "viscoelastic layers, extra states per element", in
    the quasi-linear form of Argatov's eq. (61) element by element. An element pressed along a
    history of interpenetration ``d(t)`` carries ``p(t) = int_0^t Psi(t - tau) d p_r(d(tau))/dtau
    dtau`` with the normalized relaxation function ``Psi(t) = 1 + (1/rho - 1) exp(-t / (rho T))``:
    ``p_r`` is the ``relaxed`` layer law (:class:`LinearLayer` or :class:`NonlinearLayer` with the
    relaxed modulus E_inf), ``rho = E_inf / E_0`` in [1e-6, 1] and ``T`` (s) the creep time; a
    sudden depth gives ``p_r(d) / rho`` at once, relaxing to ``p_r(d)`` at the relaxation time
    ``rho T``.

    Each element has one state ``z`` (dimensionless): the relaxing arm's share, a strain (the
    hereditary integral of ``p_r`` under the kernel's decaying part, over the relaxed law's
    aggregate modulus ``M``). While the element touches the moving surface, ``p = (p_r(d) - (1 -
    rho) M z) / rho > 0`` and ``z' = (p_r(d) / M - z) / (rho T)``. Where that pressure would pull
    (the moving surface leaves faster than the layer springs back) or ``d <= 0``, the element is
    free: ``p = 0``, its surface springs back at the creep time, ``z' = -z / T``, and it touches
    again when the moving surface reaches it. For the small-strain linear law this is exactly a
    Zener solid on each element (a spring ``K / h`` in parallel with a spring ``(1/rho - 1) K / h``
    in series with a dashpot stretched by ``z h``); its stored energy and dissipated power are
    :meth:`energy` and :meth:`dissipation` (NaN for the other laws, which have no such split).

    Without states (:meth:`pressure`: static analyses, the quasi-static solver) the layer is at
    rest: the relaxed law."""

    relaxed: LinearLayer | NonlinearLayer
    rho: float
    T: float  # s

    def __post_init__(self) -> None:
        if not isinstance(self.relaxed, (LinearLayer, NonlinearLayer)):
            raise ParameterError(f"viscoelastic layer: the relaxed law must be a LinearLayer or a NonlinearLayer, "
                                 f"got {self.relaxed!r}")
        # (rho below 1e-6: the instantaneous modulus E_inf / rho overflows; cartilage's is some 0.1)
        if not (isinstance(self.rho, Real) and isinstance(self.T, Real) and 1e-6 <= self.rho <= 1 and 0 < self.T < math.inf):
            raise ParameterError(f"viscoelastic layer: rho = E_inf / E_0 must be in [1e-6, 1] and the creep time T "
                                 f"positive and finite (s), got rho = {self.rho!r}, T = {self.T!r}")

    @property
    def aggregate_modulus(self) -> float:
        """``M`` (Pa), the relaxed law's: the scale of the states."""
        return self.relaxed.aggregate_modulus

    def pressure(self, d: np.ndarray, h: np.ndarray) -> np.ndarray:
        """The layer at rest (Pa): the relaxed law's pressure."""
        return self.relaxed.pressure(d, h)

    def respond(self, d: np.ndarray, h: np.ndarray, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Pressure (Pa, 0 where free) and state rate (1/s) of elements at interpenetration ``d``
        (m) of layers ``h`` (m) thick with states ``z``: arrays of one shape."""
        # (ravelled: the nonlinear law's per-element solve takes a vector)
        pr = self.relaxed.pressure(np.ravel(d), np.ravel(h)).reshape(np.shape(d))
        M = self.aggregate_modulus
        p = (pr - (1 - self.rho) * M * z) / self.rho
        touching = (d > 0) & (p > 0)
        return np.where(touching, p, 0.0), np.where(touching, (pr / M - z) / (self.rho * self.T), -z / self.T)

    def _zener(self, d: np.ndarray, h: np.ndarray, z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """The small-strain Zener solid's compression ``w`` (m: ``d`` where it touches, ``(1 - rho)
        z h`` where free), the relaxing spring's stretch ``w - z h`` (m) and the state rate; None
        for the other laws."""
        if not (isinstance(self.relaxed, LinearLayer) and not self.relaxed.large_strain):
            return None
        p, rate = self.respond(d, h, z)
        w = np.where(p > 0, d, (1 - self.rho) * z * h)
        return w, w - z * h, rate

    def energy(self, d: np.ndarray, h: np.ndarray, z: np.ndarray) -> np.ndarray:
        """Energy per unit area (J/m^2) held by elements (as :meth:`respond`): ``K / (2 h) (w^2 +
        (1/rho - 1) (w - z h)^2)``, both springs of the small-strain Zener solid; NaN for the other laws."""
        zener = self._zener(d, h, z)
        if zener is None:
            return np.full(np.shape(d), np.nan)
        w, stretch, _ = zener
        return 0.5 * self.aggregate_modulus / h * (w**2 + (1 / self.rho - 1) * stretch**2)

    def dissipation(self, d: np.ndarray, h: np.ndarray, z: np.ndarray) -> np.ndarray:
        """Power per unit area (W/m^2, >= 0) the elements' dashpots dissipate (as :meth:`respond`):
        their force ``(1/rho - 1) K (w - z h) / h`` times their rate ``z' h``; NaN for the other laws."""
        zener = self._zener(d, h, z)
        if zener is None:
            return np.full(np.shape(d), np.nan)
        _, stretch, rate = zener
        return (1 / self.rho - 1) * self.aggregate_modulus * stretch * rate


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


_STILL = (np.zeros(3), np.zeros(3))
_NO_FRICTION = np.zeros(0)
_GAUSS_LEGENDRE = np.polynomial.legendre.leggauss(8)  # nodes on [-1, 1] and weights of layer_energy


def layer_result(contact: ElementContact, layer: LayerLaw, velocity: tuple[np.ndarray, np.ndarray] = _STILL,
                 dissipation: float = 0.0, friction: Friction | None = None,
                 pressure: np.ndarray | None = None) -> CompartmentResult:
    """Pressures, force and torque of one compartment's contact under ``layer``. With sub-points
    (the ``quadratic`` quadrature) an element's pressure is the mean over its sub-points, its
    contact area the element's times the share of them in contact, and its force acts at the
    sub-points' centre of pressure. The peak pressure is the largest element's. ``velocity``,
    ``dissipation`` and ``friction``: see :class:`FoundationContact` (they change the force and
    torque, not the pressures, which are the layer's elastic ones). ``pressure`` (Pa): the active
    elements' (or their sub-points') pressures where the layer has states (:class:`ViscoelasticLayer`),
    instead of ``layer.pressure`` of their depths; an element or sub-point at 0 is not in contact."""
    g, a = contact.grid, contact.active
    if contact.sub_depth is None:
        if pressure is None:
            pressure = layer.pressure(contact.depth[a], contact.thickness) if len(a) else np.zeros(0)
        pa, share, at = pressure, (pressure > 0).astype(float), g.centre[a]
    else:
        sub = contact.sub_depth
        ps = pressure if pressure is not None else \
            layer.pressure(sub.ravel(), np.repeat(contact.thickness, sub.shape[1])).reshape(sub.shape)
        pa, share = ps.mean(axis=1), (ps > 0).mean(axis=1)
        # (u, v) offsets of each element's centre of pressure, in element spacings, onto its edges
        off = ps @ SUB_OFFSETS / np.maximum(ps.sum(axis=1), 1e-300)[:, None]
        at = g.centre[a] + np.einsum("mi,mij->mj", off, g.edges[a])
    V, W = (np.ascontiguousarray(x, dtype=float) for x in velocity)
    F, T, load, cop = resultants(np.ascontiguousarray(pa, dtype=float), g.area[a], np.ascontiguousarray(at),
                                 np.ascontiguousarray(contact.normal, dtype=float), V, W, float(dissipation),
                                 _NO_FRICTION if friction is None else friction.packed)
    area = float(g.area[a] @ share)
    p = np.where(g.usable, 0.0, np.nan)
    p[a] = pa
    return CompartmentResult(g.name, F, T, p, contact.depth, contact.mask, area, float(pa.max(initial=0.0)),
                             load / area if area > 0 else 0.0, cop)


def _sub_thickness(contact: ElementContact) -> np.ndarray:
    """The layers' thickness (m) at each sub-point of the active elements: their element's."""
    assert contact.sub_depth is not None
    return np.broadcast_to(contact.thickness[:, None], contact.sub_depth.shape)


def layer_energy(layer: LayerLaw, d: np.ndarray, h: np.ndarray) -> np.ndarray:
    """Elastic energy per unit area (J/m^2) stored by ``layer`` at interpenetrations ``d`` (m) of
    layers of thickness ``h`` (m): the integral of its pressure from 0 to ``d`` by 8-point
    Gauss-Legendre (exact for the linear law; 0 where ``d <= 0``)."""
    d = np.maximum(np.asarray(d, float), 0.0)
    x, w = _GAUSS_LEGENDRE
    s = 0.5 * d[..., None] * (x + 1)
    p = layer.pressure(s.ravel(), np.broadcast_to(np.asarray(h, float)[..., None], s.shape).ravel()).reshape(s.shape)
    return 0.5 * d * (p @ w)


@dataclass
class Refinement:
    """A pressure pass refined until its results stop depending on the grid
    (:meth:`FoundationContact.refine`): per level, the ``grids`` and the compartments' ``results``
    (level 0 the contact's own grids); ``changes[k]``, the largest relative change of a
    compartment's force, peak pressure or contact area from level k - 1 to level k (``changes[0]``
    is NaN); ``converged`` when the last change is within ``tol``."""

    grids: list[dict[str, ElementGrid]]
    results: list[dict[str, CompartmentResult]]
    changes: list[float]
    tol: float
    converged: bool

    @property
    def result(self) -> dict[str, CompartmentResult]:
        """The finest level's compartments."""
        return self.results[-1]

    def summary(self) -> dict[str, Any]:
        """``converged``, ``tol``, ``levels`` (each: ``element_grid`` and ``element_size_m`` per
        compartment, the ``change`` from the level before (None at level 0), and the compartments'
        summaries) and the finest level's ``compartments``."""
        def size(g: ElementGrid) -> list[float]:  # (the mean edge lengths along u and v, m)
            return np.linalg.norm(g.edges[g.usable], axis=2).mean(axis=0).tolist() if g.usable.any() else [math.nan] * 2
        levels = [{"element_grid": {n: list(g.shape) for n, g in grids.items()},
                   "element_size_m": {n: size(g) for n, g in grids.items()},
                   "change": None if math.isnan(change) else change,
                   "compartments": {n: r.summary() for n, r in results.items()}}
                  for grids, results, change in zip(self.grids, self.results, self.changes)]
        return {"converged": self.converged, "tol": self.tol, "levels": levels, "compartments": levels[-1]["compartments"]}


def _change(old: CompartmentResult, new: CompartmentResult) -> float:
    """The largest relative change of force, peak pressure and contact area (0 where neither touches)."""
    a = np.array([np.linalg.norm(old.force), old.peak_pressure, old.area])
    b = np.array([np.linalg.norm(new.force), new.peak_pressure, new.area])
    scale = np.maximum(np.abs(a), np.abs(b))
    return float(np.max(np.abs(b - a) / np.where(scale > 0, scale, 1.0)))


class FoundationContact:
    """Elastic-foundation contact between element grids on a fixed table and a moving table:
    an :class:`ElementDetector` (``grids``, ``moving`` -- one table, or one per compartment -- and
    the keyword ``options`` are its own) and a ``layer`` law (:class:`LinearLayer`,
    :class:`NonlinearLayer`, :class:`ViscoelasticLayer`).

    For dynamics (Simbody's elastic foundation, element by element; see
    :class:`simclient.dynamics.FoundationLoad`): ``dissipation`` ``c`` (s/m, >= 0) multiplies each
    element's normal force by ``1 + 3/2 c d'`` (``d'``, m/s, the element's rate of interpenetration;
    Hunt and Crossley's form: a body bouncing at ``v`` keeps ``1 - c v`` of its speed, to first
    order), never pulling; ``friction`` (:class:`simclient.contact.Friction`) adds at each element
    ``mu(|v_s|)`` times its normal force against its slip. Both need the bodies' relative velocity
    (``evaluate``'s ``velocity``); without it the result is the static one. A
    :class:`ViscoelasticLayer` has :attr:`n_states` states, one per element (per sub-point with the
    quadratic quadrature), compartment by compartment in grid order; ``evaluate``'s ``state`` and
    ``rates`` carry them (without a state the layer is at rest)."""

    def __init__(self, grids: list[ElementGrid], moving: Source | Mapping[str, Source], layer: LayerLaw,
                 dissipation: float = 0.0, friction: Friction | None = None, **options: Any) -> None:
        self.layer: LayerLaw = layer
        self.dissipation = nonnegative(dissipation, "elastic foundation: dissipation (s/m)")
        self.friction = checked_friction(friction, "elastic foundation")
        self.detector = ElementDetector(grids, moving, **options)
        self._moving, self._options = moving, options  # (for the refined grids' contacts)
        # the last detection and its result per compartment: a copied detection keeps its result
        self._last: dict[str, tuple[ElementContact, CompartmentResult]] = {}
        # each compartment's states (a viscoelastic layer's), shaped (elements, points per element)
        per = SUB_POINTS if self.detector.quadrature == "quadratic" else 1
        self._states: dict[str, tuple[slice, tuple[int, int]]] = {}
        if isinstance(layer, ViscoelasticLayer):
            k = 0
            for g in grids:
                self._states[g.name] = (slice(k, k + g.n * per), (g.n, per))
                k += g.n * per

    @property
    def n_states(self) -> int:
        """The layer's internal states (a :class:`ViscoelasticLayer`'s; else 0)."""
        return sum(s.stop - s.start for s, _ in self._states.values())

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
                 full: bool = False, velocity: tuple[np.ndarray, np.ndarray] | None = None,
                 state: np.ndarray | None = None, rates: np.ndarray | None = None) -> dict[str, CompartmentResult]:
        """Contact for the surface frames' poses (global): per compartment, in the fixed surface frame.
        ``full`` forces a full search (for checks). ``velocity = (V, W)``: the moving body's
        velocity relative to the fixed body's, in the fixed surface frame: ``V`` (m/s) that of its
        material point at the frame's origin, ``W`` (rad/s) its angular velocity; with it the force
        and torque include the dissipation and the friction. ``state`` (:attr:`n_states`): a
        viscoelastic layer's states, whose pressures then follow them, their time derivatives
        (1/s) written into ``rates`` (same length)."""
        dynamic = velocity is not None and (self.dissipation > 0 or self.friction is not None)
        out = {}
        for name, contact in self.detector.detect(R_fixed, c_fixed, R_moving, c_moving, full).items():
            # (not kept: the same detection moving otherwise, or in another state, has another result)
            pressure = self._respond(name, contact, state, rates) if state is not None and self._states else None
            if dynamic or pressure is not None:
                out[name] = layer_result(contact, self.layer, velocity if dynamic and velocity is not None else _STILL,
                                         self.dissipation, self.friction, pressure)
                continue
            last = self._last.get(name)
            if last is None or last[0] is not contact:
                last = self._last[name] = (contact, layer_result(contact, self.layer))
            out[name] = last[1]
        return out

    def refine(self, R_fixed: np.ndarray, c_fixed: np.ndarray, R_moving: np.ndarray, c_moving: np.ndarray, *,
               shape: tuple[int, int] = (30, 30), tol: float = 0.01, max_levels: int = 4) -> Refinement:
        """A pressure pass at the surface frames' poses (global) whose grids are refined until the
        results stop depending on them (Bei & Fregly's adaptive grids, listed as future work). Level
        0 is this contact's grids, every element evaluated. Each further level zooms every
        compartment in contact on the box of the last level's elements in contact, one of its
        element spacings wider on each side (:func:`zoomed_grid`), with ``shape`` elements at level
        1 and twice as many along each side at every level after it. It stops when, from level 2
        on, no compartment's force, peak pressure or contact area changed by more than ``tol``
        (relative) from the level before, or after ``max_levels`` levels (``converged`` False).
        The layer responds at rest (a viscoelastic layer: its relaxed law); the grids must come
        from :func:`element_grid` (they keep the table they sample). The zoomed boxes hold every
        contact area that level 0 sees (one spacing of margin holds an area's edge, which lies
        within one spacing of a touching element's centre); an area no element of level 0
        touches stays unseen."""
        if not (0 < tol < 1) or max_levels < 2 or min(shape) < 2:
            raise ParameterError(f"elastic foundation: refine needs 0 < tol < 1, max_levels >= 2 and at least 2 x 2 "
                                 f"elements, got tol {tol}, max_levels {max_levels}, shape {shape}")
        grids = {name: k.grid for name, k in self.compartments.items()}
        unknown = [name for name, g in grids.items() if g.origin is None]
        if unknown:
            raise ContactError(f"elastic foundation: grid(s) {', '.join(unknown)} do not say which table they "
                               "sample (make them with element_grid)")
        levels, results = [grids], [self.evaluate(R_fixed, c_fixed, R_moving, c_moving, full=True)]
        changes = [math.nan]
        for level in range(1, max_levels + 1):
            n = (shape[0] * 2 ** (level - 1), shape[1] * 2 ** (level - 1))
            last, res = levels[-1], results[-1]
            # a compartment out of contact keeps its grid (and its result: nothing to refine)
            grids = {name: g if not res[name].active.any() else
                     zoomed_grid(g.origin[0], g, res[name].active, n, g.origin[1], 1, g.origin[2])
                     for name, g in last.items()}
            finer = FoundationContact(list(grids.values()), self._moving, self.layer, **self._options)
            levels.append(grids)
            results.append(finer.evaluate(R_fixed, c_fixed, R_moving, c_moving, full=True))
            changes.append(max((_change(res[name], results[-1][name]) for name in grids), default=0.0))
            if level >= 2 and changes[-1] <= tol:
                break
        return Refinement(levels, results, changes, tol, level >= 2 and changes[-1] <= tol)

    def _states_of(self, name: str, contact: ElementContact, state: np.ndarray
                   ) -> tuple[slice, np.ndarray, np.ndarray, np.ndarray]:
        """A compartment's states: their slice, all of them (elements, points per element), and
        the active elements' depths and thicknesses (m) in the states' shape."""
        sl, shape = self._states[name]
        z = np.asarray(state[sl]).reshape(shape)
        if contact.sub_depth is None:
            return sl, z, contact.depth[contact.active][:, None], contact.thickness[:, None]
        return sl, z, contact.sub_depth, _sub_thickness(contact)

    def _respond(self, name: str, contact: ElementContact, state: np.ndarray, rates: np.ndarray | None) -> np.ndarray:
        """A viscoelastic layer's pressures (Pa) at the active elements (sub-points), writing every
        element's state rate into ``rates``."""
        layer = self.layer
        assert isinstance(layer, ViscoelasticLayer)
        sl, z, d, h = self._states_of(name, contact, state)
        p, dz_active = layer.respond(d, h, z[contact.active])
        if rates is not None:
            dz = -z / layer.T  # free elements spring back
            dz[contact.active] = dz_active
            rates[sl] = dz.ravel()
        return p if contact.sub_depth is not None else p[:, 0]

    def elastic_energy(self, R_fixed: np.ndarray, c_fixed: np.ndarray, R_moving: np.ndarray,
                       c_moving: np.ndarray, state: np.ndarray | None = None) -> float:
        """The layers' elastic energy (J) at the surface frames' poses (global): per element its
        area times :func:`layer_energy` (with sub-points, their mean); a viscoelastic layer with
        its ``state``: :meth:`ViscoelasticLayer.energy`, the elements out of contact included (a
        layer on the fixed body only: with a moving layer too, NaN)."""
        self.evaluate(R_fixed, c_fixed, R_moving, c_moving)
        total = 0.0
        for name, (contact, _) in self._last.items():
            a, area = contact.active, contact.grid.area[contact.active]
            if state is not None and self._states:
                total += self._viscoelastic_energy(name, contact, state)
            elif contact.sub_depth is None:
                total += float(area @ layer_energy(self.layer, contact.depth[a], contact.thickness))
            else:
                total += float(area @ layer_energy(self.layer, contact.sub_depth, _sub_thickness(contact)).mean(axis=1))
        return total

    def _viscoelastic_energy(self, name: str, contact: ElementContact, state: np.ndarray) -> float:
        layer, k = self.layer, self.compartments[name]
        assert isinstance(layer, ViscoelasticLayer)
        if k.moving_h is not None:  # (a free element's energy needs its thickness, which the moving layer's is unknown for)
            return math.nan
        _, z, d, _ = self._states_of(name, contact, state)
        g = contact.grid
        depth = np.zeros(z.shape)
        depth[contact.active] = d
        thickness = np.broadcast_to(np.where(g.usable, g.thickness, 1.0)[:, None], z.shape)
        return float(g.area[g.usable] @ layer.energy(depth, thickness, z)[g.usable].mean(axis=1))
