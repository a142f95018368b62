"""The artificial knee of Bei & Fregly (2004) on real implant tables: elastic-foundation contact
between a fixed tibial insert and a moving femoral component.

Frames (Bei & Fregly; the Grand Challenge "DM" model's own): the insert's table frame is the fixed
frame, +y superior, +z medial, +x = y x z (posterior for this right knee); the femoral component's
table frame coincides with it at the neutral pose. The femoral pose is given by Bei & Fregly's six
generalized coordinates relative to the insert, rotations as a body-3 1-2-3 sequence:
``R = Rx(varus_valgus) Ry(internal_external) Rz(-flexion)`` (flexion positive, bringing the
posterior condyles down) and the femoral frame's origin ``(ap, si, ml)`` in metres.

Element grids: ``grid`` elements per compartment over the insert table's parameter rectangle on
each side of the intercondylar eminence (medial: +z), elements outside the fitted data's footprint
left out; thickness from the table's ``thickness`` field (the distance to the base plane y = 0).

Equilibrium (reduced coordinates, like Bei & Fregly's API): flexion, internal-external rotation and
anterior-posterior translation are prescribed; superior-inferior and medial-lateral translation and
varus-valgus rotation are solved for equilibrium at every output instant (Newton from the previous
instant, :func:`simclient.dynamics.newton`): the contact force plus the axial load's force ``F``
and torque ``T`` about the femoral origin, ``(F_y, F_z, T_x) = 0``, to 5e-4 of the load (``TOL_REL``).
The analysis is quasi-static: inertia is neglected (the paper used "large masses" and "heavy
numerical damping", no gravity, to the same end). Where Newton stalls (at a kink of the contact
force, an element entering or leaving the contact), the equilibrium is sought where the femur,
released there, comes to rest under the viscous model ``c q' = Q`` (c = 3e3 N s/m, c_r = 3 N m
s/rad), followed by pseudo-transient continuation (:func:`simclient.dynamics.settle`), which is
also how the static settles find their equilibrium from the first touch. Where that fails too
(in swing, where the medial-lateral translation is barely held and an equilibrium can sit on a
kink, a condyle meeting a rising wall of the insert), the femur is slid along ML to where its
force vanishes; only if that fails too is a point within 1 % of the load (``ACCEPT_REL``) taken.
The summary reports the SI force imbalance ``|F_y| / load`` at every output.
Assumptions (not in the paper): body weight 700 N; the axial load acts along -y through a point
70 % of the way from the lateral to the medial compartment's centre (a 70/30 medial/lateral split at
equilibrium). The active-set search tracks the elements within 0.2 mm of the femur (``margin``;
with Bei & Fregly's search of the penetrating elements only, a settle on these flat-on-flat
compartments misses a second contact area); every solution is checked by a full search.
After the cycle, Bei & Fregly's pressure pass: the 50 x 50 element grids evaluated at the pose of
maximum load (``pressure_grid``); with ``refine_tol``, also a pass at that pose on grids zoomed on
the contact and refined until the results stop depending on them (:meth:`FoundationContact.refine`).

Femoral surface: the single fitted patch (``femoral_component``) or one toroidal table per condyle
(``femoral_surface = "per-condyle"``: ``femoral_medial``, ``femoral_lateral``, each compartment's
rays cast to its own table).

Gait-like cycle (1 s, assumption: smooth monotone-cubic curves through the values below, in the
range of fluoroscopic TKA gait data): flexion 5-18-8 deg in stance and up to 60 deg in swing,
internal-external rotation within +-4 deg, anterior-posterior translation within +-2 mm, axial load
0.25 BW at heel strike rising to 3.0 BW (first peak, 15 %) and 2.6 BW (second peak, 45 %), 0.25 BW in
swing.
"""

from __future__ import annotations

from dataclasses import dataclass

import lazy_loader as _lazy

from simclient.contact import QUADRATURES
from simclient.errors import ParameterError
from simclient.scenarios._base import Scenario, extent_param, param

#: the UHMWPE models (:data:`simclient.scenarios.artificial_knee.model.MATERIALS`)
MATERIAL_NAMES = ("linear", "nonlinear")

#: the compartments' summary rows of the reports: (key, label, factor from SI to the label's unit)
REPORT_ROWS = (("force_N", "contact force [N]", 1.0), ("torque_Nm", "contact torque [N m]", 1.0),
               ("peak_pressure_Pa", "peak pressure [MPa]", 1e-6), ("mean_pressure_Pa", "average pressure [MPa]", 1e-6),
               ("area_m2", "contact area [mm^2]", 1e6))


@dataclass(frozen=True)
class ImplantKneeParams:
    """Model parameters (SI). See the module docstring for the assumptions."""

    material: str = param("linear", "UHMWPE model", choices=("linear", "nonlinear"))
    femoral_surface: str = param("single", "the femoral component as one fitted patch or one toroidal table per "
                                 "condyle (--femoral-medial, --femoral-lateral)", choices=("single", "per-condyle"))
    window: tuple[int, int] = extent_param((23, 23), "storage window on the femoral table(s), records, at most "
                                           "the table's (the whole of a 201 x 201-point table; smaller windows than "
                                           "the contact areas thrash: "
                                           "on the single patch 9 x 9 moved 1035 times in a cycle, on the per-condyle "
                                           "tables 17 x 17 moved 336 times and lost rays)")
    analysis: str = param("both", "static settles, the gait-like cycle or both", choices=("static", "gait", "both"))
    grid: tuple[int, int] = extent_param((30, 30), "elements per compartment")
    quadrature: str = param("centre", "element quadrature: Bei & Fregly's centre rule, or the interpenetration "
                            "interpolated quadratically over each element and sampled at sub-points (see "
                            "ElementDetector)", choices=QUADRATURES)
    pressure_grid: tuple[int, int] = extent_param((50, 50), "elements per compartment of the pressure pass at maximum "
                                                            "load (Bei & Fregly); 0x0: none")
    refine_tol: float = param(0.0, "a pressure pass at maximum load refined until no compartment's force, peak "
                                   "pressure or area changes by more than this (relative) from one grid to the next "
                                   "twice as fine, zooming on the contact (FoundationContact.refine); 0: none")
    body_weight: float = 700.0
    margin: float = 2e-4  # active-set tracking margin (m) and full-search period, see FoundationContact
    full_every: int = 0
    medial_share: float = 0.7
    cycle_s: float = 1.0
    static_loads_N: tuple[float, ...] = (1000.0, 2000.0, 3000.0)
    static_flexion_deg: tuple[float, ...] = (0.0, 30.0, 60.0)
    max_iter: int = 30  # Newton iterations per equilibrium
    damping: float = 3e3  # of the settles' viscous model: N s/m, and N m s/rad for the rotation
    damping_rot: float = 3.0
    outputs: int = 101

    def __post_init__(self) -> None:
        if self.material not in MATERIAL_NAMES:
            raise ParameterError(f"artificial-knee: unknown material {self.material!r}; choose {', '.join(MATERIAL_NAMES)}")
        if self.analysis not in ("static", "gait", "both"):
            raise ParameterError(f"artificial-knee: unknown analysis {self.analysis!r}; choose static, gait or both")
        if min(self.pressure_grid) < 1 and tuple(self.pressure_grid) != (0, 0):
            raise ParameterError(f"artificial-knee: the pressure grid needs at least 1 x 1 elements (0 x 0: no "
                                 f"pressure pass), got {self.pressure_grid[0]} x {self.pressure_grid[1]}")
        if not 0 <= self.refine_tol < 1:
            raise ParameterError(f"artificial-knee: refine_tol must lie in [0, 1) (0: no refined pass), got {self.refine_tol}")


class ArtificialKnee(Scenario, name="artificial-knee", params=ImplantKneeParams,
                     tables={"insert": "tibial_insert", "femoral": "femoral_component",
                             "femoral_medial": "femoral_medial", "femoral_lateral": "femoral_lateral"},
                     title="Bei & Fregly 2004: the implant's elastic-foundation contact, static settles and a gait-like "
                           "cycle"):

    def table_names(self, params: ImplantKneeParams) -> dict[str, str]:
        unused = ("femoral",) if params.femoral_surface == "per-condyle" else ("femoral_medial", "femoral_lateral")
        return {role: name for role, name in self.tables.items() if role not in unused}


# the model's names, loaded when first used
__getattr__, __dir__, _model_names = _lazy.attach(
    __name__, submod_attrs={"model": ['artificial_knee', 'MATERIALS', 'GAIT', 'ImplantKnee', 'femoral_rotation']})
__all__ = ['ImplantKneeParams', 'ArtificialKnee', 'REPORT_ROWS', 'MATERIAL_NAMES', *_model_names]
