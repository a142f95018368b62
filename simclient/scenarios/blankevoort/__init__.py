"""Blankevoort, Kuiper, Huiskes & Grootenboer (1991): the quasi-static knee with articular contact.

The tibia is fixed; the femur's pose is six coordinates: the femoral origin ``a = (x, y, z)`` (m,
tibia frame: x anterior, y medial, z proximal) and three angles (rad), ``R = Rz(-int) Rx(-var)
Ry(-flex)`` (the paper's reversed Grood & Suntay sequence for the femur on the tibia: external
rotation, valgus, extension): ``flex`` flexion (the femoral shaft turns posteriorly, the contact moves
onto the posterior condyles), ``var``
varus and ``int`` internal rotation, both of the tibia relative to the femur. Flexion is prescribed
along the path; the other five coordinates solve equilibrium (eq. 18) by Newton
(:meth:`simclient.dynamics.StaticProblem.newton`, central-difference Jacobian, the angles' generalized forces
exact: ``Q_int = -M_z``, ``Q_var = -M . Rz(-int) e_x``, ``Q_flex = -M . Rz(-int) Rx(-var) e_y`` for the
moment ``M`` about the femoral origin), continuing from the previous flexion.

Loads: a compressive 150 N on the femur along -z (at its origin) and an axial torque of 3 N m about
z, on the femur, of the sign that rotates the tibia internally (``--path internal``) or externally;
12 ligament bundles (Table 1: stiffness k, reference strain eps_r, eps_l = 0.03, eqs. 6-8): the
reference lengths are the bundle lengths in the reference position (flexion, internal rotation and
AP and ML translation zero, the femur pressed down by the 150 N alone), ``L0 = L_r / (eps_r + 1)``.

Contact per compartment (medial: y > 0):
- ``linear`` / ``nonlinear``: a thin layer on a rigid foundation (eqs. 13-15, ``sigma = S u/h`` or
  ``-S ln(1 - u/h)``, S the aggregate modulus, h = 4 mm: both 2 mm layers), integrated over an
  element grid on the femoral condyle's table; each element's penetration is measured along its
  ray to the tibial table (Bei & Fregly's rays, not the paper's vertical projection: they agree to
  the cosine of the surface slope, a few per cent on these plateaus);
- ``rigid``: point contact on the least-squares planes ("pl. rig."): the common-normal contact of
  the condyle table and the plane table holds the gap at zero with the contact force as one more
  unknown per compartment; a compartment whose force comes out tensile is dropped (the paper's
  active set).
``tibia``: the layers may also run on the planes (the paper's Figs. 7-8 compare the two); rigid
contact runs on the planes only. Each row of the envelope also gives, for the layers, each condyle's
peak stress, largest displacement ``u_n`` and contact area (Fig. 10's quantities); a flexion step
starts from the previous equilibrium moved along the path's tangent (:meth:`BlankevoortKnee.predicted`)
and, if it does not converge, is taken in halves (:meth:`simclient.dynamics.StaticProblem.continued`). The studies
``blankevoort-modulus`` (Fig. 9) and ``blankevoort-contact`` (Figs. 7-8) are registered here.

Assumptions (the paper gives the surfaces and the insertions in figures only): the surfaces of
``sample_surfaces/blankevoort.toml`` (ellipsoidal condyles, polynomial plateaus) and the insertions
of :data:`BUNDLES` (plausible anatomical positions consistent with the paper's origin, 15 mm
proximal to the pAC's tibial insertion); E = 5 MPa, nu = 0.45.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import lazy_loader as _lazy

from simclient.errors import ParameterError
from simclient.scenarios._base import Scenario, check_positive, extent_param, param
from simclient.scenarios.studies import Study, register

SIDES = ("medial", "lateral")


@dataclass(frozen=True)
class BlankevoortParams:
    """Model parameters (SI); see the module docstring for the assumptions."""

    contact: str = param("linear", "articular contact", choices=("rigid", "linear", "nonlinear"))
    tibia: str = param("auto", "tibial surfaces: the polynomial plateaus or their least-squares planes (auto: "
                       "polynomials for the thin layers, planes for rigid contact, as in the paper)",
                       choices=("auto", "polynomial", "planes"))
    path: str = param("both", "axial torque of the envelope: tibial internal or external rotation",
                      choices=("internal", "external", "both"))
    E: float = param(5e6, "cartilage Young's modulus", "Pa")
    nu: float = param(0.45, "cartilage Poisson's ratio")
    thickness: float = param(4e-3, "both cartilage layers together", "m")
    flexion_max_deg: float = param(100.0, "flexion at the end of the path", "deg")
    flexion_step_deg: float = param(5.0, "flexion increment of the path (the last one shorter where it does "
                                    "not divide the path)", "deg")
    torque_Nm: float = param(3.0, "axial torque's magnitude", "N m")
    compression_N: float = param(150.0, "compressive force on the femur along the tibial axis", "N")
    grid: tuple[int, int] = extent_param((36, 84), "elements per femoral condyle (ML x sagittal)")
    tol: float = param(1e-6, "equilibrium tolerance, N and N m")

    def __post_init__(self) -> None:
        # (without the compressive force the reference position, the femur pressed down by it, is
        # not defined: the bundles' reference lengths came from a femur off its plateaus)
        check_positive(self, "blankevoort", "E", "thickness", "flexion_max_deg", "flexion_step_deg", "tol",
                       "compression_N")
        if not 0 <= self.torque_Nm < math.inf:  # (a magnitude: the path gives the sign)
            raise ParameterError(f"blankevoort: torque_Nm is the axial torque's magnitude (N m; --path gives its "
                                 f"sign): it must be finite and at least 0, got {self.torque_Nm}")
        if self.contact == "rigid" and self.tibia == "polynomial":
            raise ParameterError("blankevoort: rigid contact runs on the plateaus' planes (--tibia planes), as in the "
                                 "paper: on the curved plateaus point contact cannot be held in every position")
        if not 0 <= self.nu < 0.5:
            raise ParameterError(f"blankevoort: nu must lie in [0, 0.5), got {self.nu}")
        if self.thickness > 0.02:
            raise ParameterError(f"blankevoort: a cartilage thickness of {self.thickness * 1e3:g} mm is more than "
                                 "the joint space the surfaces leave (at most 20 mm)")
        if min(self.grid) < 2:
            raise ParameterError(f"blankevoort: grid must be at least 2x2 elements, got {self.grid}")
        if self.flexion_max_deg > 180:
            raise ParameterError(f"blankevoort: flexion_max_deg must be at most 180 deg, got {self.flexion_max_deg:g}")
        if self.flexion_max_deg / self.flexion_step_deg > 10_000:  # (a path of more steps ran out of memory)
            raise ParameterError(f"blankevoort: flexion_step_deg {self.flexion_step_deg:g} deg makes more than 10000 "
                                 f"steps to {self.flexion_max_deg:g} deg")

    @property
    def surfaces(self) -> str:
        """The tibial surfaces this contact runs on: ``polynomial`` or ``planes``."""
        if self.tibia == "auto":
            return "planes" if self.contact == "rigid" else "polynomial"
        return self.tibia


class Blankevoort(Scenario, name="blankevoort", params=BlankevoortParams,
                  tables={f"{kind}_{side}": f"bk_{kind}_{side}" for kind in ("femoral", "tibial", "plane")
                          for side in SIDES},
                  title="Blankevoort 1991: the quasi-static knee's envelope of passive motion with articular contact"):

    def table_names(self, params: BlankevoortParams) -> dict[str, str]:
        unused = "tibial" if params.surfaces == "planes" else "plane"
        return {r: n for r, n in self.tables.items() if not r.startswith(unused)}


register(Study("blankevoort-modulus", "blankevoort", "Blankevoort et al. Fig. 9: the cartilage's Young's modulus "
               "from 2.5 to 20 MPa (linear layer)", tuple((f"E={E / 1e6:g}MPa", {"E": E})
                                                          for E in (2.5e6, 5e6, 10e6, 20e6))))
register(Study("blankevoort-contact", "blankevoort", "Blankevoort et al. Figs. 7-8: thin layers on the polynomial "
               "plateaus, a layer and rigid contact on their planes",
               (("linear", {}), ("nonlinear", {"contact": "nonlinear"}), ("linear-planes", {"tibia": "planes"}),
                ("rigid-planes", {"contact": "rigid"}))))


# the model's names, loaded when first used
__getattr__, __dir__, _model_names = _lazy.attach(
    __name__, submod_attrs={"model": ['blankevoort', 'BlankevoortKnee', 'BUNDLES', 'rotation', 'PAPER_LARGEST_STRESS']})
__all__ = ['BlankevoortParams', 'Blankevoort', 'SIDES', *_model_names]
