"""Markus et al. (2019): a prosthetic leg whose knee is a polycentric four-bar linkage
(``simclient run prosthetic-knee``, ``simclient study prosthetic-knee-laws``).

Four planar bodies (Table 1; the inertias read as kg mm^2, the printed unit being wrong): 1 foot,
shank and housing; 2 anterior link; 3 thigh; 4 posterior link; revolute joints A (2-3), B (3-4),
C (1-4), D (1-2) at the local vectors of eqs. 19-20 (body 4's vector printed "A" is joint B).
Table 2's initial coordinates do not close the joints (0.84-1.03 mm apart: the angles are rounded
to 0.01 rad), so the position Newton of eqs. 3-4 assembles them first, keeping the thigh where Table
2 puts it. A spring-damper between E (body 2) and F (body 1), eq. 24: k = 250 kN/m, c = 50 kN s/m. A
rubber stop, a 3 mm-radius sphere on body 1, 10 mm from joint C, against a convex polar cubic
profile on body 4 (sample_surfaces/prosthetic_knee.toml), found by the 2D common normal on their
tables (eqs. 10-18), with Flores' law (eq. 6), the penalty law with the cubic STEP damping (eqs.
7-9) or Hertz (eq. 5). The thigh's motion is prescribed (three coordinates of body 3).

Assumptions (the paper leaves them out): gravity 9.81 m/s^2 along -y; the hip (body 3's point E,
which Table 2 puts at the origin) stays where it is and the thigh turns by ``thigh_range`` (35 deg,
the range of a stance phase's thigh angle in Winter's data, hip flexion to extension) in
``stance_duration`` (0.6 s), a quintic in time from rest to rest (Table 2's velocities are zero);
the spring's rest length is its initial length less ``spring_preload`` (3 mm, 750 N): the
extension-assist spring of a polycentric knee holds the knee against its extension stop, and with
no preload the stop carries only the leg's weight and inertia (Flores then penetrates at most 0.12
mm over every stop placement tried, against the paper's 0.49 mm); the sphere starts 0.05 mm (along
its path about C) from the profile. Constraints: Baumgarte-stabilised acceleration equations, and
the state projected back onto the joints every ``project_every`` (1 ms).
"""

from __future__ import annotations

from dataclasses import dataclass

import lazy_loader as _lazy

from simclient.contact import LAW_NAMES
from simclient.dynamics import METHODS
from simclient.errors import ParameterError
from simclient.scenarios._base import Scenario, check_choices, check_positive, param
from simclient.scenarios.studies import Study, register

TABLES = {"sphere": "markus_stop_sphere", "profile": "markus_stop_profile"}


@dataclass(frozen=True)
class ProstheticKneeParams:
    """prosthetic-knee parameters (SI) and run settings."""

    law: str = param("flores", "contact force law of the stop", choices=LAW_NAMES)
    K: float = param(99.99e6, "contact stiffness", "N/m^1.5")
    cr: float = param(0.15, "coefficient of restitution (Flores and the other dissipative laws)")
    d_max: float = param(1e-4, "penalty-step: the indentation over which the damping ramps up", "m")
    c_max: float = param(49915.668, "penalty-step: the full damping", "N s/m")
    thigh_range: float = param(35.0, "the thigh's rotation over the stance phase (hip flexion to extension)", "deg")
    stance_duration: float = param(0.6, "duration of the thigh's motion", "s")
    spring_preload: float = param(3e-3, "the spring's initial length less its rest length", "m")
    t_end: float = param(0.7, "simulated time", "s")
    method: str = param("DOP853", "integration method", choices=tuple(METHODS))
    rtol: float = param(1e-9, "relative tolerance of the adaptive methods")
    atol: float = param(1e-12, "absolute tolerance of the adaptive methods")
    project_every: float = param(1e-3, "the longest time between projections onto the joints", "s")
    samples: int = 4001

    def __post_init__(self) -> None:
        check_choices(self, "prosthetic-knee")
        check_positive(self, "prosthetic-knee", "t_end", "stance_duration", "project_every", "rtol", "atol")
        if not 0.01 <= self.stance_duration <= 100:  # (the quintic's coefficients overflow or divide by zero)
            raise ParameterError(f"prosthetic-knee: stance_duration must lie in [0.01, 100] s, got {self.stance_duration}")
        if not (abs(self.thigh_range) <= 90):
            raise ParameterError(f"prosthetic-knee: the thigh range must be within +-90 deg, got {self.thigh_range}")
        if not (0 <= self.spring_preload < 0.05):
            raise ParameterError(f"prosthetic-knee: the spring preload must be in [0, 0.05) m, got {self.spring_preload}")


class ProstheticKnee(Scenario, name="prosthetic-knee", params=ProstheticKneeParams, tables=TABLES,
                     title="Markus et al. 2019: the prosthetic four-bar knee with its rubber stop"):
    """ProstheticKnee (see the package's docstring)."""


register(Study("prosthetic-knee-laws", "prosthetic-knee", "Markus et al. Fig. 6: the stop with Flores' law, the "
               "STEP penalty law and Hertz", tuple((law, {"law": law}) for law in ("flores", "penalty-step", "hertz"))))


# the model's names, loaded when first used
__getattr__, __dir__, _model_names = _lazy.attach(
    __name__, submod_attrs={"model": ['prosthetic_knee', 'BODIES', 'JOINT_VECTORS', 'JOINTS', 'thigh_motion']})
__all__ = ['ProstheticKneeParams', 'ProstheticKnee', 'TABLES', *_model_names]
