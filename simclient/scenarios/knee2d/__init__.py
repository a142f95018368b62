"""The planar knee of thesis chapter 5 (``simclient run knee2d``, ``simclient study knee2d-*``).

The femur is fixed (its frame, at the intercondylar notch, is the global frame: x anterior, y
proximal); the tibia is a free planar body (Table 5.1: m = 3.75 kg, J = 0.065 kg m^2, centre of mass
at (-201.6, -174.9) mm, angle 0.6145 rad, i.e. 54.79 deg of flexion, flexion = 90 deg - phi). It is
moved by gravity, the external pulse of eq. 5.1 at its centre of mass along its proximal axis, the
four quadratic ligaments of Table 5.2 (eqs. 5.23-5.24) and the contact between the femoral condyle
and the tibial plateau, found by the 2D common normal (eqs. 5.10-5.22) on profile tables
(sample_surfaces/knee2d.toml) or, for the conformality study of section 5.3, the closed-form circles
and plane of eqs. 5.25-5.31 (Table 5.3's radii and stiffnesses).

The run lasts 0.4 s (the thesis' duration). Assumptions (the chapter does not give them): gravity
9.81 m/s^2 along -y; the tibia starts at rest; the pulse lasts t_d = 0.0712 s and is off afterwards;
the MRI points are this project's (see the TOML; they and t_d are calibrated to the thesis' R4 and
R20: the Flores loop ratio of R20 moves from 5520 to 77 as t_d goes from 70 to 75 ms);
the closed-form geometries touch the profiles where these are nearest at the start (so every
geometry starts 1.07 mm apart along the same normal); the double layer's second layer is bone on bone (normal bone for 90 % OA,
osteoporotic for 90 % OA + OP), K from Hertz's sphere-plane formula with the healthy model's radius
(30.4 mm), which reproduces the thesis' 3260513 N/m^1.5 for cartilage.
"""

from __future__ import annotations

from dataclasses import dataclass

import lazy_loader as _lazy

from simclient.contact import DAMPING, LAW_NAMES
from simclient.dynamics import METHODS
from simclient.errors import ParameterError
from simclient.geometry import INTERPOLATIONS
from simclient.scenarios._base import Scenario, check_choices, check_positive, extent_param, param
from simclient.scenarios.studies import Study, register

#: the profiles' piecewise cubics (the sample definitions' tables: ``knee2d_{femur,tibia}_SPLINE``)
SPLINES = ("shape-preserving", "not-a-knot", "akima")
#: Table 5.5's contact scenarios (:data:`simclient.scenarios.knee2d.model.MATERIAL_CASES`)
MATERIAL_NAMES = ("healthy", "artificial", "oa90", "oa90-op", "oa100-op")
#: Table 5.3 (radii in m, K in N/m^1.5 as printed; see simclient.contact.hertz_stiffness on the erratum)
GEOMETRIES = {
    "convex-convex": (0.02640, 0.03602, 2750403.0),
    "convex-concave": (0.03040, 0.07500, 5879434.0),
    "convex-plane": (0.03040, None, 3260513.0),
}


@dataclass(frozen=True)
class Knee2DParams:
    """knee2d parameters (SI) and run settings."""

    law: str = param("hertz", "contact force law (the 90 % OA materials use double-layer)", choices=LAW_NAMES)
    cr: float | None = param(None, "coefficient of restitution (default: the material's)", parse=float)
    material: str = param("healthy", "contact materials (Table 5.5)", choices=MATERIAL_NAMES)
    amplitude: float = param(50.0, "amplitude A of the external pulse", "N")
    pulse_duration: float = param(0.0712, "duration t_d of the external pulse", "s")
    spline: str = param("shape-preserving", "the profiles' piecewise cubic", choices=SPLINES)
    geometry: str = param("splines", "contact geometry: the profiles or a closed form of section 5.3",
                          choices=("splines", *GEOMETRIES))
    t_end: float = param(0.4, "simulated time (the thesis': 0.4 s)", "s")
    window: tuple[int, int] = extent_param((64, 1), "the profiles' windows, records (at most the whole profile)")
    interpolation: str = param("hermite", "interpolation inside the windows", choices=tuple(INTERPOLATIONS))
    method: str = param("DOP853", "integration method", choices=tuple(METHODS))
    rtol: float = param(1e-9, "relative tolerance of the adaptive methods")
    atol: float = param(1e-12, "absolute tolerance of the adaptive methods")
    samples: int = 2001

    def __post_init__(self) -> None:
        check_choices(self, "knee2d")
        check_positive(self, "knee2d", "t_end", "pulse_duration", "rtol", "atol")
        if not (0 < self.amplitude <= 1000):
            raise ParameterError(f"knee2d: the pulse amplitude must be in (0, 1000] N, got {self.amplitude}")
        if self.cr is not None and not 0 < self.cr <= 1:
            raise ParameterError(f"knee2d: the coefficient of restitution must be in (0, 1], got {self.cr}")



def table_names(params: Knee2DParams) -> dict[str, str]:
    """The profile tables of ``params`` by role (none for the closed-form geometries)."""
    if params.geometry != "splines":
        return {}
    return {part: f"knee2d_{part}_{params.spline}" for part in ("femur", "tibia")}


class Knee2D(Scenario, name="knee2d", params=Knee2DParams,
            tables={"femur": "knee2d_femur_shape-preserving", "tibia": "knee2d_tibia_shape-preserving"},
            title="thesis chapter 5: the planar knee (spline profiles, 2D common normal, pulse, four ligaments)"):

    def table_names(self, params: Knee2DParams) -> dict[str, str]:
        return table_names(params)


# -- the chapter's studies (simclient study NAME) -------------------------------------------------
register(Study("knee2d-splines", "knee2d", "section 5.2: the three piecewise cubics of the profiles",
               tuple((s, {"spline": s}) for s in SPLINES)))
register(Study("knee2d-geometry", "knee2d", "section 5.3: conformality, the closed-form circles and plane",
               tuple((g, {"geometry": g}) for g in GEOMETRIES)))
register(Study("knee2d-laws", "knee2d", "section 5.4: the force laws of Table 5.4 (healthy cartilage)",
               tuple((law, {"law": law}) for law in DAMPING)))
register(Study("knee2d-materials", "knee2d", "section 5.5: the five contact scenarios of Table 5.5 (Hertz)",
               tuple((m, {"material": m}) for m in MATERIAL_NAMES)))
register(Study("knee2d-amplitude", "knee2d", "section 5.6: the pulse amplitude, Hertz and Flores et al.",
               tuple((f"{law}-{a}", {"law": law, "amplitude": float(a)}) for law in ("hertz", "flores")
                     for a in (50, 150))))


# the model's names, loaded when first used
__getattr__, __dir__, _model_names = _lazy.attach(__name__, submod_attrs={
    "model": ["knee2d", "force_law", "LIGAMENTS_2D", "MATERIAL_CASES", "flexion_deg", "impact_hysteresis"]})
__all__ = ["Knee2DParams", "Knee2D", "GEOMETRIES", "SPLINES", "MATERIAL_NAMES", "table_names", *_model_names]
