"""Closed-form validation cases run by ``simclient validate`` (measured by the real code).

Each case runs the actual scenario code on the sample tables and compares one measured number with
its expected value:

- ``hertz-indentation``: bouncing ball (333^2 ball), maximum indentation of the first impact
  against ``(5 m v^2 / (4 K))^(2/5)``, within 1 %.
- ``hertz-duration``: the same impact's duration against the Hertz closed form
  ``(4/5) B(2/5, 1/2) delta_max / v = 2.9432 delta_max / v``, within 1 %.
- ``energy``: relative mechanical-energy drift of the 0.4 s Hertz run (expected 0, tolerance 1e-4).
- ``restitution-LAW``: effective restitution (separation over impact velocity) of one impact
  against the input c_r, at a c_r inside the law's documented range of validity: 0.5 for the
  laws derived for any c_r (Flores, Gonthier, Zhiying-Qishao; tolerance 0.05), 0.9 for those
  derived for c_r near 1 (Hunt-Crossley, Herbert-McWhannell, Lankarani-Nikravesh; tolerance
  0.02), 0.95 for Lee-Wang (tolerance 0.03).
- ``ef-sphere-linear``: elastic foundation, a rigid sphere (R = 20 mm) pressed d = 0.05 mm into a
  flat linear layer (E = 10 MPa, nu = 0.3, h = 5 mm), 80 x 80 elements: ``F = pi K R d^2 / h``
  (Argatov eq. 17, K the aggregate modulus), within 1 %.
- ``ef-refined-peak``: that sphere on 20 x 20 elements over +-4 mm (the quadratic quadrature; peak
  pressure 5.3 % low), refined on the contact until force, peak pressure and area change by less
  than 0.5 % (:meth:`simclient.contact.FoundationContact.refine`): its peak pressure against
  ``K d / h`` on the axis, within 1e-3.
- ``ef-sphere-log``: the same with the large-strain law on a thin layer (h = 0.1 mm, strains up to
  0.5) against the numerical integral of ``-K ln(1 - (d - r^2/(2R))/h) 2 pi r dr``, within 1 %.
- ``planar-hertz-tables`` and ``planar-hertz-circles``: the planar contact of thesis section 5.3, a
  disc (the convex-convex femoral circle, R = 26.40 mm, 1 kg) dropped 5 mm onto the fixed tibial
  circle (R = 36.02 mm) along their line of centres, Hertz with Table 5.3's K: the maximum
  indentation on the circles' profile tables (2D common normal) and on the closed-form circles
  (eqs. 5.25-5.31) against the energy balance ``m g (gap + d) = (2/5) K d^(5/2)``, within 1 %.
- ``double-layer-below`` and ``double-layer-above``: the 90 % OA knee (double layer, eq. 5.33,
  h = 0.415 mm) against the healthy knee's single layer (R14): the largest relative difference of
  the run's forces from the single-layer law where the indentation is at most h (expected 0), and
  the run's force at its largest indentation against eq. 5.33 there (within 1e-6), which is
  above the single layer's.
- ``ef-paraboloid``: an elliptic paraboloid indenter (R1 = 20 mm, R2 = 50 mm), d = 0.05 mm, linear
  layer: ``F = pi K sqrt(R1 R2) d^2 / h``, within 1 %.
- ``ef-sphere-drop``: that sphere as a 10 g ball dropped at 0.03 m/s onto that layer in a dynamic
  run (:class:`simclient.dynamics.FoundationLoad`, 40 x 40 elements over +-3 mm, the quadratic
  quadrature): its largest indentation against ``(3 m v^2 / (2 k))^(1/3)``, ``k = pi K R / h``,
  within 1 %.
- ``ef-sphere-dissipation``: the same drop with the elements' dissipation, c v = 0.05: the
  restitution against the one-degree-of-freedom equation ``m d'' = -k d^2 (1 + 3/2 c d')``
  integrated numerically (it depends on ``c v`` alone), within 1e-3.
- ``argatov-incompressible-1..3``: Argatov's incompressible thin layer, eq. 27's closed form at the
  reference's (R1, R2, delta, m) against eqs. 23-24 solved numerically and eq. 22 integrated over the
  ellipse, within 1e-6 (tests also hold both to the reference's P = 0.716755, 7.539822, 0.569139).
- ``argatov-compressible``: Argatov's compressible law (eq. 17, Blankevoort's cartilage E = 5 MPa,
  nu = 0.45, h = 4 mm) against the element grid on the ``ef_paraboloid`` table, within 2 %.
- ``argatov-viscoelastic``: the viscoelastic form of that law (standard linear solid, rho = 0.5,
  T = 1 ms) along a load-unload ramp: its state equation (as the dynamics integrate it) against the
  hereditary integral (eq. 31, the relaxation function normalized as the reference corrects it) by
  quadrature, within 1e-6 of the peak force.
- ``blankevoort-winkler``: the Winkler modulus of that cartilage, 4.741 N/mm^3 (reference), within 1e-4.
- ``graze-onset``: a ball (the 333^2 table) flying at 1 m/s without gravity past a fixed ball (the
  same table), 1 um inside their contact distance: their paths overlap for 0.57 ms inside a
  free-flight step of a few ms, whose ends see the balls apart. The onset's time against the
  closed form ``(-x0 - sqrt(4 R^2 - b^2)) / v``, within 1e-8 s.
- ``terrain-onset``: the same ball flying at 1 m/s over a wavy strip (``wavy_strip``), 1 um into
  its highest crest and above eleven others 0.33 mm lower, its windows following it between
  contacts: the first onset's time against where the exact B-spline comes to R from the ball's
  centre (Brent's method on the distance), within 1e-7 s.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.integrate import dblquad, quad

from simclient.contact import (
    Layer,
    LinearLayer,
    ViscoelasticLaw,
    ViscoelasticLayer,
    compressible_law,
    incompressible_contact,
    winkler_modulus,
)
from simclient.errors import ParameterError, SimulationError
from simclient.scenarios._base import Summary, Tables, locate
from simclient.scenarios.bouncing_ball import BallParams, bouncing_ball, hertz_drop
from simclient.scenarios.knee2d import MATERIAL_CASES, Knee2DParams, knee2d, table_names
from simclient.scenarios.models import (
    EF_K, EF_MASS, HIP_H, HIP_HALF, HIP_LAW, HIP_R, Root, ball_graze, foundation_drop, hip_press,
    hunt_crossley_restitution, indenter_contact, planar_drop, press, press_history, terrain_pass,
    viscoelastic_history,
)

__all__ = ["CASES", "Case", "case_tables", "run_cases"]

CaseRun = Callable[[Root, dict[str, Any]], dict[str, Any]]

RESTITUTION = {"flores": (0.5, 0.05), "gonthier": (0.5, 0.05), "zhiying-qishao": (0.5, 0.05),
               "hunt-crossley": (0.9, 0.02), "herbert-mcwhannell": (0.9, 0.02),
               "lankarani-nikravesh": (0.9, 0.02), "lee-wang": (0.95, 0.03)}


def _ball(tables: Root, params: BallParams = BallParams()) -> Summary:
    return bouncing_ball(locate("ball_333", tables=tables), locate("ground", tables=tables), params)


def _hertz(tables: Root, cache: dict[str, Any]) -> Summary:
    if "hertz" not in cache:
        cache["hertz"] = _ball(tables)
    return cache["hertz"]


def _case(name: str, measured: float, expected: float, tol: float, relative: bool, unit: str) -> dict[str, Any]:
    err = abs(measured - expected) / abs(expected) if relative and expected else abs(measured - expected)
    return {"name": name, "measured": measured, "expected": expected, "unit": unit,
            "rel_error": abs(measured - expected) / abs(expected) if expected else abs(measured),
            "tolerance": tol, "tolerance_kind": "relative" if relative else "absolute", "passed": err <= tol}


def _indentation(tables: Root, cache: dict[str, Any]) -> dict[str, Any]:
    s = _hertz(tables, cache)
    return _case("hertz-indentation", s["max_indentation_m"][0], hertz_drop(BallParams())["max_indentation"],
                 0.01, True, "m")


def _duration(tables: Root, cache: dict[str, Any]) -> dict[str, Any]:
    s = _hertz(tables, cache)
    return _case("hertz-duration", s["contact_durations_s"][0], hertz_drop(BallParams())["duration"], 0.01, True, "s")


def _energy(tables: Root, cache: dict[str, Any]) -> dict[str, Any]:
    return _case("energy", _hertz(tables, cache)["energy_drift"], 0.0, 1e-4, False, "relative")


def _restitution(law: str) -> CaseRun:
    cr, tol = RESTITUTION[law]

    def case(tables: Root, cache: dict[str, Any]) -> dict[str, Any]:
        s = _ball(tables, BallParams(law=law, cr=cr, t_end=0.06))
        c_eff = s["separation_velocities_m_s"][0] / s["impact_velocities_m_s"][0]
        return _case(f"restitution-{law}", c_eff, cr, tol, False, "-")
    return case


def _atlas_rolling(tables: Root, cache: dict[str, Any]) -> dict[str, Any]:
    """The bouncing ball with friction (mu 0.3) on the atlas of ``ball_rolling_x`` and
    ``ball_rolling``, rolling about y through the first one's poles: the rigid ball's 5/7 vx (the
    compliant ball rolls on a radius shorter by its indentation: within 1e-3)."""
    p = BallParams(friction=0.3, vx=0.3, t_end=0.4, atlas=True)
    s = bouncing_ball(locate("ball_rolling_x", tables=tables), locate("ground", tables=tables), p,
                      chart=locate("ball_rolling", tables=tables))
    return _case("atlas-rolling", s["rolling"]["vx_final_m_s"] if s["status"] == "ok" else math.nan, 5 / 7 * p.vx,
                 1e-3, True, "m/s")


_I3 = np.eye(3)


def _ef_sphere_linear(tables: Root, cache: dict[str, Any]) -> dict[str, Any]:
    law, R, d, h = LinearLayer(10e6, 0.3), 0.02, 5e-5, 0.005
    return _case("ef-sphere-linear", press(tables, "ef_sphere", law, d, h), math.pi * law.aggregate_modulus * R * d**2 / h,
                 0.01, True, "N")


def _ef_refined_peak(tables: Root, cache: dict[str, Any]) -> dict[str, Any]:
    law, d, h = LinearLayer(10e6, 0.3), 5e-5, 0.005
    contact, lowest = indenter_contact(tables, "ef_sphere", law, h, 20, quadrature="quadratic")
    refined = contact.refine(_I3, np.zeros(3), _I3, np.array([0.0, 0.0, -lowest - d]), shape=(20, 20), tol=0.005)
    if not refined.converged:
        raise SimulationError(f"ef-refined-peak: the refined pass did not converge (changes {refined.changes})")
    return _case("ef-refined-peak", refined.result["layer"].peak_pressure, law.aggregate_modulus * d / h, 1e-3, True, "Pa")


def _ef_sphere_log(tables: Root, cache: dict[str, Any]) -> dict[str, Any]:
    law, R, d, h = LinearLayer(10e6, 0.3, large_strain=True), 0.02, 5e-5, 1e-4
    expected = quad(lambda r: -law.aggregate_modulus * math.log(1 - (d - r * r / (2 * R)) / h) * 2 * math.pi * r,
                    0, math.sqrt(2 * R * d))[0]
    return _case("ef-sphere-log", press(tables, "ef_sphere", law, d, h), expected, 0.01, True, "N")


def _ef_paraboloid(tables: Root, cache: dict[str, Any]) -> dict[str, Any]:
    law, R1, R2, d, h = LinearLayer(10e6, 0.3), 0.02, 0.05, 5e-5, 0.005
    return _case("ef-paraboloid", press(tables, "ef_paraboloid", law, d, h, half_width=0.0025),
                 math.pi * law.aggregate_modulus * math.sqrt(R1 * R2) * d**2 / h, 0.01, True, "N")


def _ef_hip(tables: Root, cache: dict[str, Any]) -> dict[str, Any]:
    """Axial: ``K delta R^2 / h (2 sin a - 2/3 sin^3 a)(a + sin 2a / 2)`` (a = HIP_HALF)."""
    delta, a = 1e-5, HIP_HALF
    closed = HIP_LAW.aggregate_modulus * delta * HIP_R**2 / HIP_H * (2 * math.sin(a) - 2 / 3 * math.sin(a)**3) \
        * (a + math.sin(2 * a) / 2)
    return _case("ef-hip", float(hip_press(tables, (0.0, 0.0, -delta)).force[2]), closed, 0.01, True, "N")


def _ef_sphere_drop(tables: Root, cache: dict[str, Any]) -> dict[str, Any]:
    v0 = 0.03
    depth = foundation_drop(tables, v0)[6]
    return _case("ef-sphere-drop", depth, (1.5 * EF_MASS * v0**2 / EF_K) ** (1 / 3),
                 0.01, True, "m")


def _ef_sphere_dissipation(tables: Root, cache: dict[str, Any]) -> dict[str, Any]:
    v0, c = 0.03, 0.05 / 0.03
    res = foundation_drop(tables, v0, dissipation=c)[0]
    return _case("ef-sphere-dissipation", float(res.y[9, -1]) / v0, hunt_crossley_restitution(1.5 * c * v0, 2.0),
                 1e-3, True, "-")


def _terrain(tables: Root, cache: dict[str, Any]) -> dict[str, Any]:
    res, t_onset, _ = terrain_pass(tables)
    assert t_onset is not None  # (the default clearance is into the crest)
    onsets = [e["t"] for e in res.events if e["type"] == "onset"]
    # a wrong onset elsewhere on the strip, or none, is measured as the first onset or the run's end
    measured = onsets[0] if onsets else float(res.t[-1])
    return _case("terrain-onset", measured, t_onset, 1e-7, False, "s")


def _graze(tables: Root, cache: dict[str, Any]) -> dict[str, Any]:
    res, t_onset, _ = ball_graze(tables)
    measured = next((e["t"] for e in res.events if e["type"] == "onset"), float(res.t[-1]))  # none: the run's end
    return _case("graze-onset", measured, t_onset, 1e-8, False, "s")


def _planar(kind: str) -> CaseRun:
    def case(tables: Root, cache: dict[str, Any]) -> dict[str, Any]:
        measured, expected = planar_drop(tables if kind == "tables" else None)
        return _case(f"planar-hertz-{kind}", measured, expected, 0.01, True, "m")
    return case


def _oa90(tables: Root, cache: dict[str, Any]) -> tuple[Summary, dict[str, Any]]:
    if "oa90" not in cache:
        cache["oa90"] = knee2d(Tables(folder=tables), Knee2DParams(material="oa90"))
    return cache["oa90"], MATERIAL_CASES["oa90"]


def _double_below(tables: Root, cache: dict[str, Any]) -> dict[str, Any]:
    s, m = _oa90(tables, cache)
    h = s.artifacts["history"]
    d, f = h["indentation_m"], h["force_N"]
    sel = (d > 0) & (d <= m["h1"])
    single = m["K"] * d[sel] ** 1.5
    return _case("double-layer-below", float(np.max(np.abs(f[sel] - single) / single)), 0.0, 1e-9, False, "relative")


def _double_above(tables: Root, cache: dict[str, Any]) -> dict[str, Any]:
    s, m = _oa90(tables, cache)
    h = s.artifacts["history"]
    k = int(np.argmax(h["indentation_m"]))
    d = float(h["indentation_m"][k])
    if d <= m["h1"]:
        raise ParameterError(f"double-layer-above: the 90 % OA run never passed h = {m['h1']} m (max {d} m)")
    expected = m["K"] * m["h1"] ** 1.5 + m["K2"] * (d - m["h1"]) ** 1.5
    return _case("double-layer-above", float(h["force_N"][k]), expected, 1e-6, True, "N")


#: the reference's derived checks of the incompressible thin layer: (R1, R2, delta, m) -> P
ARGATOV_INCOMPRESSIBLE = {"1": ((40, 10, 0.1, 1), 0.716755), "2": ((30, 30, 0.2, 0.5), 7.539822),
                          "3": ((20, 60, 0.05, 2), 0.569139)}


def _argatov_incompressible(row: str) -> CaseRun:
    """Eq. 27's closed form against a second method: eqs. 23-24 solved for (a, b, p0) by Newton
    from a rough start and eq. 22's pressure integrated over the ellipse (polar coordinates)."""
    def case(tables: Root, cache: dict[str, Any]) -> dict[str, Any]:
        from scipy.optimize import fsolve

        (R1, R2, d, m), _ = ARGATOV_INCOMPRESSIBLE[row]

        def conditions(x: np.ndarray) -> list[float]:
            a, b, p0 = x
            return [d - 4 * p0 / m * (1 / a**2 + 1 / b**2), 1 / (2 * R1) - 4 * p0 / (m * a * a) * (3 / a**2 + 1 / b**2),
                    1 / (2 * R2) - 4 * p0 / (m * b * b) * (1 / a**2 + 3 / b**2)]
        g = math.sqrt(2 * d * math.sqrt(R1 * R2))
        a, b, p0 = fsolve(conditions, [g, g, m * d * g * g / 8], xtol=1e-12)
        # p = p0 (1 - r^2)^2 on the ellipse (a r cos t, b r sin t), area element a b r dr dt
        P = dblquad(lambda r, t: p0 * (1 - r * r) ** 2 * a * b * r, 0, 2 * math.pi, 0, 1, epsabs=0, epsrel=1e-12)[0]
        return _case(f"argatov-incompressible-{row}", P, incompressible_contact(R1, R2, d, m).P, 1e-6, True, "N")
    return case


def _argatov_compressible(tables: Root, cache: dict[str, Any]) -> dict[str, Any]:
    """Eq. 17 with Blankevoort's cartilage (E = 5 MPa, nu = 0.45, h = 4 mm) against the element
    grid pressing the same paraboloid (R1 = 20 mm, R2 = 50 mm) 0.05 mm into the layer."""
    E, nu, h, R1, R2, d = 5e6, 0.45, 0.004, 0.02, 0.05, 5e-5
    grid = press(tables, "ef_paraboloid", LinearLayer(E, nu), d, h, half_width=0.0025)
    return _case("argatov-compressible", grid, compressible_law(R1, R2, Layer(h, E, nu)).normal_force(d, 0.0, 1.0),
                 0.02, True, "N")


def _argatov_viscoelastic(tables: Root, cache: dict[str, Any]) -> dict[str, Any]:
    """The viscoelastic compressible law (a standard linear solid, rho = 0.5, T = 1 ms) along a
    load-unload ramp of 0.1 mm in 1 ms and back: its state equation against the hereditary integral
    (eq. 31, as corrected: Psi normalized) by quadrature, the largest difference relative to the
    peak force, expected 0 (1e-6)."""
    law = ViscoelasticLaw.from_elastic(compressible_law(0.02, 0.02, Layer(0.004, 5e6, 0.45)), 0.5, 1e-3)
    t = np.linspace(0.0, 2e-3, 41)[1:]
    ode, hereditary = viscoelastic_history(law, t, 0.1, 1e-3)
    return _case("argatov-viscoelastic", float(np.abs(ode - hereditary).max() / hereditary.max()), 0.0, 1e-6, False,
                 "of the peak force")


def _ef_viscoelastic(tables: Root, cache: dict[str, Any]) -> dict[str, Any]:
    """Argatov's eq. (31) (the compressible law's hereditary integral, rho = 0.5, T = 1 ms) for the
    paraboloid (R1 = 20 mm, R2 = 50 mm) pushed 50 um into Blankevoort's cartilage (E = 5 MPa, nu =
    0.45, h = 4 mm) in 1 ms, against a :class:`ViscoelasticLayer` on 50 x 50 elements (its states
    integrated along the ramp): the force at the ramp's end."""
    E, nu, h, R1, R2, rho, T, rate, t1 = 5e6, 0.45, 0.004, 0.02, 0.05, 0.5, 1e-3, 0.05, 1e-3
    contact, lowest = indenter_contact(tables, "ef_paraboloid", ViscoelasticLayer(LinearLayer(E, nu), rho, T), h, n=50,
                                       half_width=0.0025)
    times = np.linspace(0.0, t1, 11)[1:]
    grid = press_history(contact, lowest, lambda t: rate * t, times)[-1]
    law = ViscoelasticLaw.from_elastic(compressible_law(R1, R2, Layer(h, E, nu)), rho, T)
    hereditary = viscoelastic_history(law, times, rate, 2 * t1)[1]  # (turning after the last time)
    return _case("ef-viscoelastic", float(grid.force[2]), float(hereditary[-1]), 0.02, True, "N")


def _blankevoort_winkler(tables: Root, cache: dict[str, Any]) -> dict[str, Any]:
    """Eq. 15 with Blankevoort's E = 5 MPa, nu = 0.45, h = 4 mm: the reference's 4.741 N/mm^3."""
    return _case("blankevoort-winkler", winkler_modulus(Layer(0.004, 5e6, 0.45)) / 1e9, 4.741, 1e-4, True, "N/mm^3")


@dataclass(frozen=True)
class Case:
    """A validation case: ``run(tables, cache)`` gives its row, reading the sample tables ``tables``."""

    run: CaseRun
    tables: tuple[str, ...] = ()


BALL_TABLES = ("ball_333", "ground")
OA90_TABLES = tuple(table_names(Knee2DParams(material="oa90")).values())

CASES: dict[str, Case] = {
    "hertz-indentation": Case(_indentation, BALL_TABLES), "hertz-duration": Case(_duration, BALL_TABLES),
    "energy": Case(_energy, BALL_TABLES),
    **{f"restitution-{law}": Case(_restitution(law), BALL_TABLES) for law in RESTITUTION},
    "ef-sphere-linear": Case(_ef_sphere_linear, ("ef_layer", "ef_sphere")),
    "ef-sphere-log": Case(_ef_sphere_log, ("ef_layer", "ef_sphere")),
    "ef-refined-peak": Case(_ef_refined_peak, ("ef_layer", "ef_sphere")),
    "ef-paraboloid": Case(_ef_paraboloid, ("ef_layer", "ef_paraboloid")),
    "ef-sphere-drop": Case(_ef_sphere_drop, ("ef_layer", "ef_sphere")),
    "ef-sphere-dissipation": Case(_ef_sphere_dissipation, ("ef_layer", "ef_sphere")),
    "ef-hip": Case(_ef_hip, ("ef_cup", "ef_head")),
    "planar-hertz-tables": Case(_planar("tables"), ("knee2d_circle_femur", "knee2d_circle_tibia")),
    "planar-hertz-circles": Case(_planar("circles")),
    "double-layer-below": Case(_double_below, OA90_TABLES), "double-layer-above": Case(_double_above, OA90_TABLES),
    **{f"argatov-incompressible-{row}": Case(_argatov_incompressible(row)) for row in ARGATOV_INCOMPRESSIBLE},
    "argatov-compressible": Case(_argatov_compressible, ("ef_layer", "ef_paraboloid")),
    "argatov-viscoelastic": Case(_argatov_viscoelastic), "blankevoort-winkler": Case(_blankevoort_winkler),
    "ef-viscoelastic": Case(_ef_viscoelastic, ("ef_layer", "ef_paraboloid")),
    "graze-onset": Case(_graze, ("ball_333",)),
    "terrain-onset": Case(_terrain, ("ball_333", "wavy_strip")),
    "atlas-rolling": Case(_atlas_rolling, ("ball_rolling_x", "ball_rolling", "ground")),
}


def _checked(names: Iterable[str] | None) -> list[str]:
    """``names`` (all cases when empty); :class:`ParameterError` listing the choices for an unknown one."""
    names = list(names or CASES)
    unknown = [n for n in names if n not in CASES]
    if unknown:
        raise ParameterError(f"unknown validation case(s) {unknown}; choose from {', '.join(CASES)}")
    return names


def case_tables(names: Iterable[str] | None = None) -> list[str]:
    """The sample tables the named cases (all by default) read, each once."""
    return list(dict.fromkeys(t for n in _checked(names) for t in CASES[n].tables))


def run_cases(tables: Root, names: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """Run the named cases (all by default) on the sample tables in ``tables`` (a folder or an
    ``s3://BUCKET/PREFIX``); :class:`ParameterError` listing the choices for an unknown one."""
    cache: dict[str, Any] = {}
    return [CASES[n].run(tables, cache) for n in _checked(names)]
