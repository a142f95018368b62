"""A ball dropped on a thin layer: elastic-foundation contact in dynamics
(:class:`simclient.dynamics.FoundationLoad`), the layer elastic or viscoelastic
(:class:`simclient.contact.ViscoelasticLayer`, a standard linear solid per element).

The sample sphere (``ef_sphere``, the lower cap of a sphere of radius 20 mm) is a ball of ``mass``
(a uniform ball's inertia) arriving at ``v0`` along -z, without gravity, 10 um above a layer on the
sample plane (``ef_layer``, z = 0): ``thickness``, ``E``, ``nu``, small or large strain (Bei &
Fregly's eqs. 1 and 2), and with ``rho`` < 1 viscoelastic: ``E`` is then the relaxed modulus,
``E / rho`` the instantaneous one, ``creep_time`` the standard linear solid's creep time. The
elements cover +-``half_width`` about the point of impact. The run ends when the ball is back at
its starting height, or has gone through 95 % of the layer (a failed run), or at ``t_end``.

Reported: the restitution (the speed leaving over the speed arriving; none where the ball has not
left), the largest indentation (m), the contact time (s, while the layer pushes), the peak force
(N), peak pressure (Pa) and contact area (m^2), the energy lost (J: what the ball brought less what
it leaves with and what the layer still holds), and for the small-strain linear layer the closed
forms of a paraboloid of the ball's radius R on a foundation, ``F = k d^2``, ``k = pi K R / h``
(``K`` the aggregate modulus): the largest indentation ``(3 m v0^2 / (2 k))^(1/3)`` and the contact
time ``(2/3) B(1/3, 1/2) d_max / v0``, at E and, for a viscoelastic layer, at E / rho (the elastic
layers it lies between: too fast and too slow to relax).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import lazy_loader as _lazy

from simclient.contact import QUADRATURES
from simclient.dynamics import METHODS
from simclient.errors import ParameterError
from simclient.scenarios._base import Scenario, check_choices, check_positive, extent_param, param
from simclient.scenarios.studies import Study, register

if TYPE_CHECKING:
    from simclient.contact import LayerLaw

#: creep times (s) of the study: around the 3-4 ms contact, from nearly relaxed to nearly elastic at E / rho
CREEP_TIMES = (3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 1e-1)


@dataclass(frozen=True)
class LayerDropParams:
    """Model and integration parameters (SI); see the module docstring."""

    v0: float = param(0.03, "impact speed", "m/s")
    mass: float = param(0.01, "ball mass", "kg")
    E: float = param(10e6, "layer Young's modulus (viscoelastic: the relaxed one)", "Pa")
    nu: float = param(0.3, "layer Poisson's ratio")
    thickness: float = param(0.005, "layer thickness", "m")
    strain: str = param("small", "strain measure: small (Bei & Fregly eq. 1) or large (eq. 2)",
                        choices=("small", "large"))
    rho: float = param(1.0, "relaxed over instantaneous modulus, E_inf / E_0 (1: elastic)")
    creep_time: float = param(1e-3, "the standard linear solid's creep time (with rho < 1)", "s")
    dissipation: float = param(0.0, "Hunt-Crossley dissipation per element (see FoundationContact)", "s/m")
    grid: tuple[int, int] = extent_param((41, 41), "elements over the layer's square (odd: one centred under the "
                                         "ball, which the centre rule meets at once)")
    half_width: float = param(0.003, "half the side of the elements' square", "m")
    quadrature: str = param("centre", "element quadrature (quadratic: 16 points, and with rho < 1 16 states, "
                            "per element)", choices=QUADRATURES)
    t_end: float = param(0.05, "the run's end at the latest", "s")
    method: str = param("DOP853-jit", "integration method (DOP853-jit or rk4 with rho < 1: their error norm counts "
                        "an element's states as one)", choices=tuple(METHODS))
    rtol: float = param(1e-8, "relative tolerance")
    atol: float = param(1e-12, "absolute tolerance")

    def __post_init__(self) -> None:
        check_choices(self, "layer-drop")
        check_positive(self, "layer-drop", "v0", "mass", "E", "thickness", "creep_time", "half_width", "t_end", "rtol",
                       "atol")
        if not 0 <= self.nu < 0.5:
            raise ParameterError(f"layer-drop: nu must lie in [0, 0.5), got {self.nu}")
        if not 1e-6 <= self.rho <= 1:
            raise ParameterError(f"layer-drop: rho must lie in [1e-6, 1], got {self.rho}")
        if not math.isfinite(0.5 * self.mass * (self.v0 * self.v0)):  # (the energy balance and the step control need it)
            raise ParameterError(f"layer-drop: the ball's kinetic energy 0.5 mass v0^2 overflows (v0 = {self.v0:g} m/s, "
                                 f"mass = {self.mass:g} kg)")

    @property
    def layer(self) -> LayerLaw:
        """The layer law: linear, viscoelastic where ``rho`` < 1."""
        from simclient.contact import LinearLayer, ViscoelasticLayer

        law = LinearLayer(self.E, self.nu, self.strain == "large")
        return law if self.rho == 1 else ViscoelasticLayer(law, self.rho, self.creep_time)


class LayerDropScenario(Scenario, name="layer-drop", params=LayerDropParams,
                        tables={"ball": "ef_sphere", "layer": "ef_layer"},
                        title="a ball dropped on an elastic or viscoelastic layer (elastic-foundation contact in "
                              "dynamics)"):
    """LayerDropScenario (see the package's docstring)."""


register(Study("layer-drop-creep-time", "layer-drop", "a ball on a viscoelastic layer (rho 0.5): restitution and "
               "largest indentation against the creep time", tuple(
                   (f"T={T:g}s", {"rho": 0.5, "creep_time": T}) for T in CREEP_TIMES)))


# the model's names, loaded when first used
__getattr__, __dir__, _model_names = _lazy.attach(
    __name__, submod_attrs={"model": ['layer_drop', 'drop_system', 'sphere_radius', 'foundation_closed_form']})
__all__ = ['LayerDropParams', 'LayerDropScenario', 'CREEP_TIMES', *_model_names]
