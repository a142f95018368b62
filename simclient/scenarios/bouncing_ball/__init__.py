"""The bouncing ball of thesis section 6.5.1 (``simclient run bouncing-ball``).

A ball of m = 0.092 kg, R = 20 mm (tables ``ball`` and ``ground`` of
sample_surfaces/bouncing_ball.toml) dropped from rest with a 12 mm gap between its lowest point
and the ground (the thesis omits the height; 12 mm gives 4 impacts in 0.4 s), moving at 0.15 m/s
along +x, Hertz K = 5.5e9 N/m^1.5, for 0.4 s. The ball's inertia is the solid sphere's
2/5 m R^2 = 1.472e-5 kg m^2 (the thesis prints 1.472e-4, ten times that: a typo that does not
matter without friction). Gravity 9.81 m/s^2 along -z (the thesis gives no value). The double-layer
law (eq. 5.33) uses the thesis' cartilage thickness h1 = 0.415 mm and, as an assumption, a second
layer ten times stiffer (K2 = 5.5e10 N/m^1.5); the ball's 30 um indentations stay in the first layer.

With ``--friction MU`` (not in the thesis) the contact has Coulomb friction (static and dynamic MU,
Simbody's regularized model: :class:`simclient.contact.Friction`), and a ball moving along x starts
rolling: its contact point goes round its table about y, so use the ball table ``ball_rolling``
(poles across the travel, periodic in v; ``--ball ball_rolling``). A ball that reaches rolling inside
its first impact (MU (1 + e) v_impact >= 2/7 vx) leaves it at 5/7 vx, the closed form reported
beside the run's. With ``--vy`` too it rolls about an axis that is not its table's pole axis, and its
contact point would reach a pole: ``--atlas`` gives the ball a second table, ``--ball-chart``
(default ``ball_rolling``, its poles along y where ``ball``'s are along x), the two an atlas
(:class:`simclient.contact.AtlasPair`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import lazy_loader as _lazy

from simclient.contact import LAW_NAMES
from simclient.dynamics import METHODS
from simclient.errors import ParameterError, nonnegative
from simclient.geometry import INTERPOLATIONS
from simclient.scenarios._base import Scenario, check_positive, extent_param, param

if TYPE_CHECKING:
    from simclient.contact import ForceLaw

G = 9.81  # m/s^2


@dataclass(frozen=True)
class BallParams:
    """Bouncing-ball parameters (SI) and run settings."""

    mass: float = param(0.092, "mass of the ball", "kg")
    radius: float = param(0.020, "radius of the ball", "m")
    gap: float = param(0.012, "initial gap between the ball's lowest point and the ground", "m")
    vx: float = param(0.15, "horizontal velocity along +x", "m/s")
    vy: float = param(0.0, "horizontal velocity along +y", "m/s")
    x0: float = param(-0.03, "initial x of the centre", "m")
    law: str = param("hertz", "contact force law", choices=LAW_NAMES)
    K: float = param(5.5e9, "generalized stiffness (double-layer: of the first layer)", "N/m^1.5")
    n: float = param(1.5, "exponent of the force law")
    cr: float = param(1.0, "coefficient of restitution of the dissipative laws")
    K2: float = param(5.5e10, "double-layer: stiffness of the second layer", "N/m^1.5")
    h1: float = param(4.15e-4, "double-layer: thickness of the first layer", "m")
    relax_ratio: float = param(1.0, "E_inf / E_0 of a standard linear solid: below 1 the law becomes Argatov's "
                                    "viscoelastic form (hertz only), K being the relaxed stiffness")
    creep_time: float = param(1e-3, "the standard linear solid's creep time T (with --relax-ratio)", "s")
    friction: float = param(0.0, "coefficient of friction, static and dynamic (0: frictionless, as the thesis; "
                                 "a rolling ball wants --ball ball_rolling, and --atlas where it has --vy)")
    atlas: bool = param(False, "the ball's tables an atlas: --ball and a second chart --ball-chart (its poles on "
                               "another axis), for a ball that rolls any way")
    t_end: float = param(0.4, "simulated time", "s")
    window_ball: tuple[int, int] = extent_param((3, 3), "the ball's window, records")
    window_ground: tuple[int, int] = extent_param((3, 9), "the ground's window, records")
    interpolation: str = param("hermite", "interpolation inside the windows", choices=tuple(INTERPOLATIONS))
    method: str = param("DOP853-jit", "integration method", choices=tuple(METHODS))
    rtol: float = param(1e-10, "relative tolerance of the adaptive methods")
    atol: float = param(1e-12, "absolute tolerance of the adaptive methods")
    h: float = param(1e-5, "step of the fixed-step method rk4", "s")
    prefetch: bool = param(False, "prefetch the strips the next window move will need")

    def __post_init__(self) -> None:
        # (a drop: from a gap; the closed forms divide by the impact speed sqrt(2 g gap))
        check_positive(self, "bouncing-ball", "mass", "radius", "gap", "t_end", "K", "rtol", "atol", "h")
        nonnegative(self.friction, "bouncing-ball: friction")
        if not 0 < self.cr <= 1:
            raise ParameterError(f"bouncing-ball: the coefficient of restitution must be in (0, 1], got {self.cr}")

    def force_law(self) -> ForceLaw:
        """The contact's force law: ``law``'s, with ``relax_ratio`` below 1 Argatov's viscoelastic form."""
        from simclient.contact import HertzianLaw, ViscoelasticLaw, make_law

        if self.law == "double-layer":
            law = make_law(self.law, self.K, n=self.n, K2=self.K2, h1=self.h1)
        else:
            law = make_law(self.law, self.K, self.cr, self.n)
        if self.relax_ratio == 1.0:
            return law
        if not isinstance(law, HertzianLaw) or law.name != "hertz":
            raise ParameterError("bouncing-ball: --relax-ratio makes the elastic law hertz viscoelastic; "
                                 f"not {self.law}")
        return ViscoelasticLaw.from_elastic(law, self.relax_ratio, self.creep_time)


class BouncingBall(Scenario, name="bouncing-ball", params=BallParams,
                   tables={"ball": "ball", "ground": "ground", "ball_chart": "ball_rolling"},
                   title="thesis 6.5.1: a ball bouncing on a ground plane (Hertz and the dissipative laws)"):

    def table_names(self, params: BallParams) -> dict[str, str]:
        return {role: name for role, name in self.tables.items() if params.atlas or role != "ball_chart"}


# the model's names, loaded when first used
__getattr__, __dir__, _model_names = _lazy.attach(
    __name__, submod_attrs={"model": ["bouncing_ball", "hertz_drop"]})
__all__ = ["BallParams", "BouncingBall", "G", *_model_names]
