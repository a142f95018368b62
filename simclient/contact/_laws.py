"""Contact force laws: a :class:`Contact` and the relative velocity in, a :class:`ContactForce` out.

Detection (:class:`simclient.contact.ContactPair`) returns geometry only; a law never detects.
The normal laws of the thesis (Table 5.4, eqs. 5.32-5.33) map ``(indentation delta [m],
indentation rate delta_dot [m/s], impact velocity delta_dot0 [m/s])`` to a normal force [N]::

    F_N = K delta^n [1 + D(c_r) delta_dot / delta_dot0]

with ``K`` the generalized stiffness [N/m^n], ``n`` = 1.5 and ``delta_dot0`` the indentation rate
latched at the onset of the contact. Hertz has ``D = 0``. A dissipative law never pulls the bodies
together: the force is clipped at zero during restitution.

Laws are looked up by name in :data:`LAWS` through :func:`make_law`: ``hertz``, ``hunt-crossley``,
``herbert-mcwhannell``, ``lee-wang``, ``lankarani-nikravesh``, ``gonthier``, ``zhiying-qishao``,
``flores`` (:class:`HertzianLaw`) and ``double-layer`` (:class:`DoubleLayer`, eq. 5.33).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from simclient.contact._names import DAMPING, LAW_NAMES
from simclient.contact._point import Contact
from simclient.errors import ContactError, ParameterError
from simclient.contact._rules import law_force, step
from simclient.geometry import layout as L

__all__ = ["ContactForce", "ForceLaw", "HertzianLaw", "ViscoelasticLaw", "DoubleLayer", "PenaltyStep", "step", "LAWS",
           "make_law", "hertz_stiffness", "Material", "MATERIALS", "law_force"]


def _packed(kind: int, *values: float) -> tuple[int, np.ndarray]:
    p = np.zeros(L.LAW_PARAMS_SIZE)
    p[:len(values)] = values
    return kind, p


@dataclass(frozen=True)
class ContactForce:
    """What a contact does to its two bodies (global frame, SI).

    ``force`` (N) acts on body i at ``point`` (m) and ``-force`` on body j at ``point_j`` (for a
    point contact, each body's own contact point: the two lie on the common normal, so the pair
    has no net moment); ``moment`` (N m) is a couple on body i (``-moment`` on j; zero for a
    point contact); ``elastic_energy`` (J) is the energy the law stores at this indentation;
    ``power`` (W) is ``force . (v_i - v_j)``, the rate of work of the contact force on the bodies'
    relative motion: ``-d(elastic_energy)/dt`` for a conservative law, less than that by the
    dissipated power for a dissipative one.
    """

    force: np.ndarray
    point: np.ndarray
    point_j: np.ndarray
    moment: np.ndarray
    elastic_energy: float
    power: float


_ZERO = np.zeros(3)
_ZERO.flags.writeable = False


class ForceLaw(ABC):
    """A normal contact force law. Subclasses give :meth:`normal_force` and :meth:`elastic_energy`;
    :meth:`contact_force` turns a contact into a :class:`ContactForce` for every law."""

    name: str
    #: internal state variables the law carries through a simulation (0: none; see
    #: :class:`ViscoelasticLaw`); a stateful law implements :meth:`state_rates` and reads its
    #: state through :meth:`contact_force`'s ``state``
    n_states: int = 0

    @property
    def packed(self) -> tuple[int, np.ndarray] | None:
        """``(kind, parameters)`` of the law's compiled form (:func:`law_force`), or None where it
        has none (then compiled right-hand sides leave the system to Python)."""
        return None

    @abstractmethod
    def normal_force(self, delta: float, delta_dot: float, delta_dot0: float) -> float:
        """Normal force (N, >= 0) at indentation ``delta`` (m), rate ``delta_dot`` (m/s, positive
        while approaching) and impact velocity ``delta_dot0`` (m/s); 0 when ``delta <= 0``."""

    @abstractmethod
    def elastic_energy(self, delta: float) -> float:
        """Energy (J) stored by the elastic part at indentation ``delta`` (m); 0 when apart."""

    def state_rates(self, delta: float, delta_dot: float, state: np.ndarray) -> np.ndarray:
        """Time derivatives of the internal state at indentation ``delta`` (m, <= 0 when apart) and
        rate ``delta_dot`` (m/s)."""
        return np.zeros(0)

    def stateful_force(self, delta: float, delta_dot: float, state: np.ndarray) -> float:
        """Normal force (N) of a stateful law."""
        raise NotImplementedError

    def contact_force(self, contact: Contact, velocity: np.ndarray, impact_velocity: float,
                      state: np.ndarray | None = None) -> ContactForce:
        """The force of ``contact`` for the relative velocity ``velocity = v_i(P_i) - v_j(P_j)``
        (m/s, global) of the bodies' material points, ``impact_velocity`` (m/s) latched at its onset
        (a stateful law: its ``state``). It pushes body i at ``P_i`` along the normal of surface j,
        and body j back at ``P_j``."""
        delta = contact.indentation
        if delta <= 0.0:
            return ContactForce(np.zeros(3), contact.point_i, contact.point_j, _ZERO, 0.0, 0.0)
        if self.n_states:
            if state is None:
                raise ContactError(f"{self.name}: a stateful law needs its state")
            f = self.stateful_force(delta, contact.indentation_rate(velocity), state)
        else:
            f = self.normal_force(delta, contact.indentation_rate(velocity), impact_velocity)
        F = f * contact.normal
        return ContactForce(F, contact.point_i, contact.point_j, _ZERO, self.elastic_energy(delta), float(F @ velocity))


@dataclass(frozen=True)
class HertzianLaw(ForceLaw):
    """``F = K delta^n [1 + D(c_r) delta_dot / delta_dot0]`` (N), clipped at zero: the laws of
    Table 5.4 by ``name`` (a key of :data:`DAMPING`); ``K`` in N/m^n; ``cr`` the coefficient of
    restitution in (0, 1] (unused by Hertz)."""

    name: str
    K: float
    n: float = 1.5
    cr: float = 1.0
    damping: float = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.name not in DAMPING:
            raise ParameterError(f"unknown force law {self.name!r}; choose one of {', '.join(LAWS)}")
        _check_stiffness(self.name, "K", self.K, self.n)
        if self.name != "hertz" and not 0 < self.cr <= 1:
            raise ParameterError(f"{self.name}: the coefficient of restitution must be in (0, 1], got {self.cr}")
        object.__setattr__(self, "damping", DAMPING[self.name](self.cr))

    @cached_property
    def packed(self) -> tuple[int, np.ndarray]:
        return _packed(L.LAW_HERTZIAN, self.K, self.n, self.damping)

    def normal_force(self, delta: float, delta_dot: float, delta_dot0: float) -> float:
        f = law_force(L.LAW_HERTZIAN, self.packed[1], delta, delta_dot, delta_dot0)
        if math.isnan(f):
            raise ContactError(f"{self.name}: the impact velocity must be positive, got {delta_dot0}")
        return f

    def elastic_energy(self, delta: float) -> float:
        return self.K * max(delta, 0.0) ** (self.n + 1) / (self.n + 1)


@dataclass(frozen=True)
class ViscoelasticLaw(ForceLaw):
    """Argatov's viscoelastic thin-layer law (eqs. 31, 33, 61) for a standard linear solid:
    ``P(t) = K int_0^t Psi(t - tau) d(delta^n)/dtau dtau`` with the normalized relaxation function
    ``Psi(t) = 1 + (1/rho - 1) exp(-t / (rho T))`` (``rho = E_inf / E_0`` in (0, 1], ``T`` the creep
    time, s), ``K`` the elastic law's coefficient with the relaxed modulus E_inf (N/m^n: n = 2 for
    the compressible layer, 3 for the incompressible one). One internal state ``q = int
    exp(-(t - tau)/(rho T)) d(delta^n)``: ``P = K (delta^n + (1/rho - 1) q)``, ``q' = n delta^(n-1)
    delta' - q / (rho T)`` (``delta`` taken as 0 when apart), clipped at zero (no adhesion).
    Valid for one loading and one unloading phase (an impact), as the paper says."""

    name: str
    K: float
    n: float
    rho: float
    T: float
    n_states: int = 1

    def __post_init__(self) -> None:
        _check_stiffness(self.name, "K", self.K, self.n)
        # (rho below 1e-6: the instantaneous stiffness K / rho overflows; cartilage's is some 0.1)
        if not (1e-6 <= self.rho <= 1 and self.T > 0 and math.isfinite(self.T)):
            raise ParameterError(f"{self.name}: rho = E_inf / E_0 must be in [1e-6, 1] and T > 0 (s), got rho = "
                                 f"{self.rho}, T = {self.T}")

    @classmethod
    def from_elastic(cls, law: HertzianLaw, rho: float, T: float) -> ViscoelasticLaw:
        """The viscoelastic form of an elastic power law (e.g. Argatov's compressible or
        incompressible thin-layer law built with the relaxed modulus E_inf)."""
        return cls(f"viscoelastic-{law.name}", law.K, law.n, rho, T)

    def normal_force(self, delta: float, delta_dot: float, delta_dot0: float) -> float:
        raise ContactError(f"{self.name}: a stateful law; its force needs the state (stateful_force)")

    def stateful_force(self, delta: float, delta_dot: float, state: np.ndarray) -> float:
        d = max(delta, 0.0)
        return max(0.0, self.K * (d**self.n + (1.0 / self.rho - 1.0) * state[0]))

    def state_rates(self, delta: float, delta_dot: float, state: np.ndarray) -> np.ndarray:
        d = max(delta, 0.0)
        grow = self.n * d ** (self.n - 1) * delta_dot if d > 0 else 0.0
        return np.array([grow - state[0] / (self.rho * self.T)])

    def elastic_energy(self, delta: float) -> float:
        """The relaxed (equilibrium) spring's energy; the energy held by the relaxing part is not
        counted."""
        return self.K * max(delta, 0.0) ** (self.n + 1) / (self.n + 1)


@dataclass(frozen=True)
class DoubleLayer(ForceLaw):
    """Two-layer Hertz law (thesis eq. 5.33): ``K1 delta^n`` up to the first layer's thickness
    ``h1`` (m), then ``K1 h1^n + K2 (delta - h1)^n`` (``K1``, ``K2`` in N/m^n); elastic."""

    K1: float
    K2: float
    h1: float
    n: float = 1.5
    name: str = "double-layer"

    def __post_init__(self) -> None:
        _check_stiffness(self.name, "K1", self.K1, self.n)
        _check_stiffness(self.name, "K2", self.K2, self.n)
        if not (self.h1 > 0 and math.isfinite(self.h1)):
            raise ParameterError(f"{self.name}: the first layer's thickness h1 must be positive (m), got {self.h1}")

    @cached_property
    def packed(self) -> tuple[int, np.ndarray]:
        return _packed(L.LAW_DOUBLE_LAYER, self.K1, self.K2, self.h1, self.n)

    def normal_force(self, delta: float, delta_dot: float, delta_dot0: float) -> float:
        return law_force(L.LAW_DOUBLE_LAYER, self.packed[1], delta, delta_dot, delta_dot0)

    def elastic_energy(self, delta: float) -> float:
        if delta <= 0.0:
            return 0.0
        if delta <= self.h1:
            return self.K1 * delta ** (self.n + 1) / (self.n + 1)
        e1 = self.K1 * self.h1 ** (self.n + 1) / (self.n + 1)
        return e1 + self.K1 * self.h1**self.n * (delta - self.h1) + self.K2 * (delta - self.h1) ** (self.n + 1) / (self.n + 1)


@dataclass(frozen=True)
class PenaltyStep(ForceLaw):
    """The penalty law of multibody codes (Markus et al. 2019 eq. 7, their "CAE 1"):
    ``F = K delta^n + STEP(delta, 0, 0, d_max, c_max) delta_dot`` (N), clipped at zero; ``K`` in
    N/m^n, the damping ramping up to ``c_max`` (N s/m) over the first ``d_max`` (m) of
    indentation, so the force starts at zero. No impact velocity is used."""

    K: float
    n: float = 1.5
    d_max: float = 1e-4
    c_max: float = 49915.668
    name: str = "penalty-step"

    def __post_init__(self) -> None:
        _check_stiffness(self.name, "K", self.K, self.n)
        if not (self.d_max > 0 and math.isfinite(self.d_max)):
            raise ParameterError(f"{self.name}: d_max must be positive (m), got {self.d_max}")
        if not (self.c_max >= 0 and math.isfinite(self.c_max)):
            raise ParameterError(f"{self.name}: c_max must be non-negative (N s/m), got {self.c_max}")

    @cached_property
    def packed(self) -> tuple[int, np.ndarray]:
        return _packed(L.LAW_PENALTY_STEP, self.K, self.n, self.d_max, self.c_max)

    def normal_force(self, delta: float, delta_dot: float, delta_dot0: float) -> float:
        return law_force(L.LAW_PENALTY_STEP, self.packed[1], delta, delta_dot, delta_dot0)

    def elastic_energy(self, delta: float) -> float:
        return self.K * max(delta, 0.0) ** (self.n + 1) / (self.n + 1)


def _check_stiffness(law: str, key: str, K: float, n: float) -> None:
    if not (K > 0 and math.isfinite(K)):
        raise ParameterError(f"{law}: the stiffness {key} must be positive and finite (N/m^n), got {K}")
    if not (n > 0 and math.isfinite(n)):
        raise ParameterError(f"{law}: the exponent n must be positive, got {n}")


def _hertzian(name: str) -> Callable[..., ForceLaw]:
    def make(K: float, cr: float = 1.0, n: float = 1.5) -> ForceLaw:
        return HertzianLaw(name, K, n, cr)
    return make


def _double_layer(K: float, cr: float = 1.0, n: float = 1.5, K2: float | None = None,
                  h1: float | None = None) -> ForceLaw:
    """``K`` is the first layer's stiffness K1; ``K2`` and ``h1`` are required."""
    if K2 is None or h1 is None:
        raise ParameterError("double-layer: the parameters K2 (N/m^n) and h1 (m) are required")
    return DoubleLayer(K, K2, h1, n)


def _penalty_step(K: float, cr: float = 1.0, n: float = 1.5, d_max: float = 1e-4,
                  c_max: float = 49915.668) -> ForceLaw:
    """Defaults: Markus et al.'s d_max (m) and c_max (N s/m); ``cr`` does not apply."""
    return PenaltyStep(K, n, d_max, c_max)


#: every law by name: a factory ``(K, cr=, n=, **params) -> ForceLaw``
LAWS: dict[str, Callable[..., ForceLaw]] = {**{name: _hertzian(name) for name in DAMPING},
                                            "double-layer": _double_layer, "penalty-step": _penalty_step}
assert tuple(LAWS) == LAW_NAMES


def make_law(name: str, K: float, cr: float = 1.0, n: float = 1.5, **params: Any) -> ForceLaw:
    """The law ``name`` of :data:`LAWS` with stiffness ``K`` (N/m^n), coefficient of restitution
    ``cr`` and exponent ``n``; ``params`` are a law's own (``double-layer``: ``K2`` in N/m^n, ``h1``
    in m; ``penalty-step``: ``d_max`` in m, ``c_max`` in N s/m). :class:`ParameterError` lists the
    laws for an unknown name, and names a bad value."""
    if name not in LAWS:
        raise ParameterError(f"unknown force law {name!r}; choose one of {', '.join(LAWS)}")
    try:
        return LAWS[name](K, cr=cr, n=n, **params)
    except TypeError:
        raise ParameterError(f"{name}: unknown parameter(s) {sorted(params)}") from None


def hertz_stiffness(E_i: float, nu_i: float, E_j: float, nu_j: float, R_i: float,
                    R_j: float | None = None, kind: str = "convex") -> float:
    """Generalized Hertz stiffness ``K = 4/3 E* sqrt(R*)`` (N/m^1.5).

    ``1/E* = (1 - nu_i^2)/E_i + (1 - nu_j^2)/E_j`` (Pa); ``R* = R_i R_j/(R_i + R_j)`` for two
    convex spheres, ``R_i R_j/(R_j - R_i)`` for sphere i inside concave sphere j (R_j > R_i),
    ``R_i`` for a sphere on a plane (``R_j=None``). Radii in metres. The thesis' Table 5.3 values
    2750403 and 5879434 N/m^1.5 correspond to its convex-convex and convex-concave radius pairs
    swapped (erratum); this function uses the radii as given.
    """
    for E, nu in ((E_i, nu_i), (E_j, nu_j)):
        if not (0 < E < math.inf and -1 < nu < 0.5):
            raise ParameterError(f"Hertz stiffness: a material needs 0 < E < inf (Pa) and -1 < nu < 0.5, got E = {E}, "
                                 f"nu = {nu}")
    E_star = 1.0 / ((1 - nu_i**2) / E_i + (1 - nu_j**2) / E_j)
    if R_j is None or kind == "plane":
        R = R_i
    elif kind == "convex":
        R = R_i * R_j / (R_i + R_j)
    elif kind == "concave":
        if R_j <= R_i:
            raise ParameterError(f"concave contact needs R_j > R_i, got R_i={R_i}, R_j={R_j}")
        R = R_i * R_j / (R_j - R_i)
    else:
        raise ParameterError(f"unknown kind {kind!r}: convex, concave or plane")
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
