"""Bei & Fregly's natural knee (2004, Table 3) on a real tibial cartilage surface: a static settle at
30 deg flexion under an axial load, small and large strain.

The tibial cartilage of the lenhart2015 healthy right knee (``natural_tibial_cartilage``, fitted by
``sample_surfaces/real/natural_knee.toml``; both plateaus in one table, its ``thickness`` field the
distance to the tibia bone) is the fixed body; element grids cover each plateau (split at the gap
between them, z = 1 mm; medial: z < 0 in this frame, +x anterior, +y superior, +z lateral).

No femoral cartilage mesh is available, so each femoral condyle is a stand-in congruent with its
plateau (:func:`conforming_condyle`): the tibial cartilage table's own records over the
compartment, lifted along +y by a paraboloidal clearance ``r^2 / (2 R)`` (r the x-z distance from
the compartment's centroid, R the femur-tibia relative radius of curvature; ``clearance_exponent``
n: ``r^n / (n R^(n - 1))``, flatter-bottomed and steeper-sided), facing down, and
carrying a 2 mm cartilage layer: the springs have the combined thickness (Bei & Fregly's one
combined layer). What the contact sees of two surfaces is their gap, and this stand-in states the
gap directly, as Hertz theory does with relative radii; an analytic condyle (an ellipsoid, as
before) rests on the real plateau's high spots and spine instead and carries the load on half of
Bei & Fregly's areas. The one unknown per compartment, R, is set from one published figure each:
R = 53.3 mm medially and 22.35 mm laterally give Table 3's small-strain contact areas (344.7 /
234.3 mm^2); the large-strain figures are then predictions. The stand-in is built at the
settle's pose (30 deg flexion), so the flexion angle does not enter the contact. E = 4 MPa,
nu = 0.45 (Table 3's), small strain (eq. 1) or large strain (eq. 2); the quadratic element
quadrature (areas that do not step with whole elements).

The model is the artificial knee's (:class:`simclient.scenarios.artificial_knee.ImplantKnee`):
flexion 30 deg, internal-external rotation and anterior-posterior translation held; superior-
inferior and medial-lateral translation and varus-valgus rotation in equilibrium with the load,
found by settling from the first touch and Newton. Assumptions (not in the paper for this knee):
the load of 1000 N acts along -y through the point 54.5 % of the way from the lateral to the
medial compartment's centroid, which gives Table 3's split (medial / lateral force 1.10; a load
midway gives 0.97); 30 x 30 elements per compartment (theirs: 20 x 15), femoral cartilage 2 mm,
the relative radii above.
"""

from __future__ import annotations

from dataclasses import dataclass

import lazy_loader as _lazy

from simclient.contact import QUADRATURES
from simclient.errors import ParameterError
from simclient.scenarios._base import Scenario, check_positive, extent_param, param
from simclient.scenarios.studies import Study, register


@dataclass(frozen=True)
class NaturalKneeParams:
    """Model parameters (SI); see the module docstring for the assumptions."""

    load_N: float = param(1000.0, "axial load", "N")
    E: float = param(4e6, "cartilage Young's modulus", "Pa")
    nu: float = param(0.45, "cartilage Poisson's ratio")
    femoral_thickness: float = param(0.002, "femoral cartilage thickness", "m")
    medial_radius: float = param(0.0533, "femur-tibia relative radius of curvature, medial compartment (Table 3's "
                                 "small-strain area)", "m")
    lateral_radius: float = param(0.02235, "femur-tibia relative radius of curvature, lateral compartment (Table 3's "
                                  "small-strain area)", "m")
    clearance_exponent: float = param(2.0, "the clearance's exponent n: rho^n / (n R^(n - 1)) with R the radii "
                                      "above (n = 2: the paraboloid of relative radius R; larger n: a flatter "
                                      "bottom and steeper sides, with other radii for the same areas)")
    medial_share: float = param(0.545, "the load line's place between the compartments' centroids, from lateral (0) "
                                "to medial (1) (Table 3's force split)")
    grid: tuple[int, int] = extent_param((30, 30), "elements per compartment")
    quadrature: str = param("quadratic", "element quadrature (see ElementDetector): the centre rule counts whole "
                            "elements, so its areas step by 1-3 % here", choices=QUADRATURES)
    refine_tol: float = param(0.0, "each settle's contact also on grids zoomed on it and refined until no "
                                   "compartment's force, peak pressure or area changes by more than this (relative) "
                                   "(FoundationContact.refine); 0: none")

    def __post_init__(self) -> None:
        check_positive(self, "natural-knee", "load_N", "E", "femoral_thickness", "medial_radius", "lateral_radius")
        for side, radius in (("medial", self.medial_radius), ("lateral", self.lateral_radius)):
            if radius < 0.001:  # (a condyle of a smaller radius rises to infinity across a plateau)
                raise ParameterError(f"natural-knee: {side}_radius must be at least 1 mm, got {radius} m")
        if not 0 <= self.medial_share <= 1:
            raise ParameterError(f"natural-knee: medial_share must lie in [0, 1], got {self.medial_share}")
        if not 2 <= self.clearance_exponent <= 16:
            raise ParameterError(f"natural-knee: clearance_exponent must lie in [2, 16], got {self.clearance_exponent}")
        if not 0 <= self.nu < 0.5:
            raise ParameterError(f"natural-knee: nu must lie in [0, 0.5), got {self.nu}")
        if not 0 <= self.refine_tol < 1:
            raise ParameterError(f"natural-knee: refine_tol must lie in [0, 1) (0: no refined pass), got {self.refine_tol}")
        if self.femoral_thickness > 0.01:
            raise ParameterError(f"natural-knee: a femoral cartilage of {self.femoral_thickness * 1e3:g} mm is "
                                 "thicker than the joint allows (at most 10 mm)")


#: clearance exponents and the radii (m, medial and lateral) that give Table 3's small-strain areas
#: with them (found by iterating the radii; 2 is the default paraboloid)
CLEARANCES = ((2.0, NaturalKneeParams.medial_radius, NaturalKneeParams.lateral_radius), (3.0, 0.02104, 0.01233),
              (4.0, 0.01555, 0.01023), (6.0, 0.01237, 0.00896), (8.0, 0.01132, 0.00854))


class NaturalKneeScenario(Scenario, name="natural-knee", params=NaturalKneeParams,
                          tables={"tibial": "natural_tibial_cartilage"},
                          title="Bei & Fregly 2004: the natural knee's static contact on a real tibial cartilage "
                                "(Table 3), small and large strain"):
    """NaturalKneeScenario (see the package's docstring)."""


register(Study("natural-knee-clearance", "natural-knee", "the large/small-strain ratios against the femoral "
               "clearance's exponent, Table 3's small-strain areas each", tuple(
                   (f"n={n:g}", {"clearance_exponent": n, "medial_radius": rm, "lateral_radius": rl})
                   for n, rm, rl in CLEARANCES)))


# the model's names, loaded when first used
__getattr__, __dir__, _model_names = _lazy.attach(
    __name__, submod_attrs={"model": ['natural_knee', 'NaturalKnee', 'conforming_condyle', 'TABLE_3']})
__all__ = ['NaturalKneeParams', 'NaturalKneeScenario', 'CLEARANCES', *_model_names]
