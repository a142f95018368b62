"""The 3D knee of thesis section 6.5.2 (``simclient run knee3d``).

The femur is fixed, the tibia free: two spherical condyles on two plateaus (tables of
sample_surfaces/knee3d.toml), Hertz (or any other law) contact with cartilage properties, the
eight ligament fibres of Table 6.5 as quadratic springs with the stretch-ratio reading of its
strain column (l0 = l_extension / ratio), gravity 9.81 m/s^2 along -y, from full extension until
80 deg of flexion. Placements are this project's assumptions (the thesis shows them only in a
figure): condyle sphere centres at x = -+21 mm (medial -x, where the MCL inserts; lateral +x),
z = 19.5 mm in the femur frame; plateaus in the tibia frame at the same x, z = 211.5 mm (global
z = -2.0 mm at full extension), normals +z. At full extension the medial condyle (R = 21 mm) is then
0.5 mm above its plateau and the lateral one (R = 20 mm) 1.5 mm above.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import lazy_loader as _lazy

from simclient.contact import LAW_NAMES
from simclient.dynamics import METHODS
from simclient.geometry import INTERPOLATIONS
from simclient.scenarios._base import Scenario, check_choices, check_positive, extent_param, param
from simclient.scenarios.studies import Study, register

#: the tables by role, with the sample tables' names
TABLES = {f"{part}_{side}": f"{part}_{side}" for part in ("condyle", "plateau") for side in ("medial", "lateral")}


@dataclass(frozen=True)
class KneeParams:
    """knee3d parameters (SI) and run settings; placements as the module docstring says."""

    condyle_x: float = param(0.021, "condyle centres' distance from the mid-plane (femur frame)", "m")
    condyle_z: float = param(0.0195, "condyle centres' height in the femur frame", "m")
    plateau_z: float = param(0.2115, "plateaus' height in the tibia frame", "m")
    lateral_drop: float = param(0.0, "how much lower the lateral plateau is than the medial", "m")
    reading: str = param("ratio", "Table 6.5's strain column: the stretch ratio l_ext / l0 (ratio) or l0 / l_ext "
                         "(inverse)", choices=("ratio", "inverse"))
    tibia_z: float = -0.2135
    tibia_mass: float = 3.3794
    tibia_inertia: tuple[float, float, float] = (0.0412, 0.0432, 0.0070)
    E: float = param(24e6, "cartilage Young's modulus", "Pa")
    nu: float = param(0.38, "cartilage Poisson's ratio")
    cr: float = param(0.616, "coefficient of restitution of the dissipative laws")
    law: str = param("hertz", "contact force law", choices=tuple(k for k in LAW_NAMES if k != "double-layer"))
    gravity: tuple[float, float, float] = (0.0, -9.81, 0.0)
    final_flexion_deg: float = param(80.0, "flexion at which the run stops", "deg")
    t_end: float = param(2.0, "longest simulated time", "s")
    window: tuple[int, int] = extent_param((3, 9), "every window's extent, records")
    interpolation: str = param("hermite", "interpolation inside the windows", choices=tuple(INTERPOLATIONS))
    method: str = param("DOP853-jit", "integration method", choices=tuple(METHODS))
    rtol: float = param(1e-6, "relative tolerance of the adaptive methods")
    atol: float = param(1e-9, "absolute tolerance of the adaptive methods")
    # Unbounded, an explicit method's steps average 1.4 ms here and its looser trajectory touches
    # where the converged one passes by in one of the placement study's 54 cases; with steps of at
    # most 0.5 ms it counts the converged contacts in all of them, and 0.2 ms (a quarter of the
    # study's shortest contact, a 0.83 ms lateral graze) leaves a margin (README, knee3d).
    max_step: float = param(2e-4, "largest step of the adaptive methods (the trajectory's accuracy between "
                            "contacts)", "s")
    samples: int = 400

    def __post_init__(self) -> None:
        check_choices(self, "knee3d")
        check_positive(self, "knee3d", "t_end", "max_step", "rtol", "atol")


class Knee3D(Scenario, name="knee3d", params=KneeParams, tables=TABLES,
             title="thesis 6.5.2: the 3D knee (spherical condyles on plateaus, eight ligament fibres) flexing to 80 deg"):
    """The 3D knee (see the package's docstring)."""


def _placements() -> tuple[tuple[str, dict[str, Any]], ...]:
    """The placement study's grid: the ligament reading, the condyles' distance from the mid-plane,
    the medial gap at full extension (plateau height) and how much lower the lateral plateau is."""
    cases = []
    for reading in ("ratio", "inverse"):
        for x_mm in (18.0, 21.0, 24.0):
            for gap_mm in (0.0, 0.5, 1.0):
                for drop_mm in (0.0, 1.0, 2.0):
                    label = f"{reading}-x{x_mm:g}-gap{gap_mm:g}-drop{drop_mm:g}"
                    cases.append((label, {"reading": reading, "condyle_x": x_mm * 1e-3,
                                          "plateau_z": KneeParams.plateau_z + (0.5 - gap_mm) * 1e-3,
                                          "lateral_drop": drop_mm * 1e-3}))
    return tuple(cases)


register(Study("knee3d-placement", "knee3d", "section 6.5.2: where R25-R28 hold over the unknown placements and "
               "the reading of Table 6.5's strain column", _placements()))


# the model's names, loaded when first used
__getattr__, __dir__, _model_names = _lazy.attach(__name__, submod_attrs={
    "model": ["knee3d", "KNEE_LIGAMENTS", "flexion_deg", "internal_rotation_deg", "thesis_checks"]})
__all__ = ["KneeParams", "Knee3D", "TABLES", *_model_names]
