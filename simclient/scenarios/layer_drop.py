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
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy.special import beta

from simclient.contact import QUADRATURES, FoundationContact, LayerLaw, LinearLayer, ViscoelasticLayer, element_grid
from simclient.dynamics import METHODS, Body, FoundationLoad, MultibodySystem, simulate
from simclient.errors import ContactError, ParameterError
from simclient.io import Source
from simclient.scenarios._base import (Progress, Scenario, Summary, Tables, check_choices, check_positive, extent_param,
                                       param, time_progress)
from simclient.scenarios.studies import Study, register

__all__ = ["LayerDropParams", "layer_drop", "drop_system", "sphere_radius", "foundation_closed_form"]

START_GAP = 1e-5  # m: the ball's lowest point above the layer at the start


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
    method: str = param("DOP853", "integration method (explicit Runge-Kutta with rho < 1)", choices=tuple(METHODS))
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
        law = LinearLayer(self.E, self.nu, self.strain == "large")
        return law if self.rho == 1 else ViscoelasticLayer(law, self.rho, self.creep_time)


def sphere_radius(sphere: Source) -> float:
    """The radius (m) of a sphere table (its definition's); :class:`ParameterError` for another surface."""
    radius = sphere.header.source.get("parameters", {}).get("radius") if sphere.header.source.get("family") == "sphere" \
        else None
    if radius is None:
        raise ParameterError(f"layer-drop: the ball's table {sphere.name!r} is not a sphere (family "
                             f"{sphere.header.source.get('family')!r})")
    return float(radius)


def drop_system(sphere: Source, plane: Source, layer: LayerLaw, position: Any, velocity: Any, *, mass: float,
                radius: float, thickness: float, grid: tuple[int, int], half_width: float, quadrature: str,
                gravity: float = 0.0, **contact: Any
                ) -> tuple[MultibodySystem, FoundationLoad, float]:
    """The ``sphere`` table as a ball of ``mass`` (kg; a uniform ball's inertia, of ``radius`` m)
    at ``position`` (m, relative to touching ``plane``'s z = 0 with its lowest point at the origin)
    moving at ``velocity`` (m/s), on a ``layer`` ``thickness`` (m) thick on ``plane`` under
    ``gravity`` (m/s^2, along -z): ``grid`` elements over +-``half_width`` (m), the ``quadrature``,
    tracking within 10 um of the surface, the ball's window its whole table; ``contact`` goes to
    :class:`FoundationContact` (``dissipation``, ``friction``). The system, its load and the z of the
    ball's lowest point in its table frame (m)."""
    hs = sphere.header
    lowest = float(sphere.read_block(0, hs.n_rec_u, 0, hs.n_rec_v)[..., 4].min())
    elements = element_grid(plane, "layer", (-half_width, half_width), (-half_width, half_width), grid, thickness)
    fc = FoundationContact([elements], sphere, layer, extent=(hs.n_rec_u, hs.n_rec_v), quadrature=quadrature,
                           margin=1e-5, **contact)
    ball = Body("ball", mass=mass, inertia=np.eye(3) * 0.4 * mass * radius**2,
                position=np.asarray(position, float) - [0.0, 0.0, lowest], velocity=np.asarray(velocity, float))
    ground = Body("ground", fixed=True)
    load = FoundationLoad(fc, ground, ball)
    return MultibodySystem([ball, ground], [], gravity=(0.0, 0.0, -gravity), loads=[load]), load, lowest


def foundation_closed_form(law: LinearLayer, radius: float, thickness: float, mass: float, v0: float
                           ) -> dict[str, float]:
    """A paraboloid of radius ``radius`` (m) striking a small-strain foundation ``law`` (``thickness``
    m) at ``v0`` (m/s) with ``mass`` (kg): ``k = pi K R / h`` (N/m^2), the largest indentation (m)
    and the contact time (s)."""
    k = math.pi * law.aggregate_modulus * radius / thickness
    dmax = (1.5 * mass * (v0 * v0) / k) ** (1 / 3)
    return {"k_N_m2": k, "max_indentation_m": dmax, "contact_time_s": 2 / 3 * beta(1 / 3, 1 / 2) * dmax / v0}


def layer_drop(sphere: Source, plane: Source, params: LayerDropParams | None = None, out: str | Path | None = None,
               progress: Progress | None = None) -> Summary:
    """Drop the ball (see the module docstring); the summary and, with ``out``, its history and plots."""
    p = params or LayerDropParams()
    say = progress or (lambda s: None)
    t0 = time.perf_counter()
    radius = sphere_radius(sphere)
    system, load, lowest = drop_system(sphere, plane, p.layer, (0.0, 0.0, START_GAP), (0.0, 0.0, -p.v0), mass=p.mass,
                                       radius=radius, thickness=p.thickness, grid=p.grid, half_width=p.half_width,
                                       quadrature=p.quadrature, dissipation=p.dissipation)

    def stop(t: float, s: MultibodySystem) -> float:
        """Rises through zero where the run ends: the ball's lowest point back at its start's height
        (it has left the layer), or through 95 % of the layer, past which the layer laws mean nothing
        (a fast ball otherwise ran on through the plane for minutes), m."""
        low = float(s.pose(s.bodies[0])[0][2]) + lowest  # over the layer's surface
        return max(low - START_GAP, -low - 0.95 * p.thickness)
    say(f"dropping the ball at {p.v0:g} m/s on {load.contact.stats['elements']} elements"
        + (f", {load.n_states} states" if load.n_states else ""))
    res = simulate(system, p.t_end, method=p.method, rtol=p.rtol, atol=p.atol, stop=stop,
                   progress=time_progress(progress, p.t_end))
    values: dict[str, Any] = {"status": "ok" if res.status >= 0 else "failed", "v0_m_s": p.v0, "mass_kg": p.mass,
                              "radius_m": radius, "layer": _describe(p), "element_grid": list(p.grid),
                              "quadrature": p.quadrature, "states": load.n_states, "method": p.method,
                              "steps": int(len(res.t) - 1), "rhs": int(res.nfev)}
    if res.status < 0:
        values["message"] = res.message
    history = _history(res, system, load, lowest)
    touching = history["force_N"] > 0
    E0 = 0.5 * p.mass * (p.v0 * p.v0)  # (a product: inf where it overflows, where a power raised OverflowError)
    left = bool(res.status >= 0 and res.y[2, -1] + lowest - START_GAP >= -1e-12 and res.y[9, -1] > 0)
    values.update({
        # (a ball that has not left has no speed of leaving: no restitution, rather than its last speed's)
        "left": left, "restitution": float(res.y[9, -1] / p.v0) if left else None,
        "max_indentation_m": float(history["indentation_m"].max()),
        "contact_time_s": _contact_time(res, system, load, history["t_s"], touching),
        "peak_force_N": float(history["force_N"].max()), "peak_pressure_Pa": float(history["peak_pressure_Pa"].max()),
        "max_area_m2": float(history["area_m2"].max()),
        "energy_lost_J": E0 - _energy(system, res.y[:, -1]), "energy_in_J": E0})
    edge = history["t_s"][history["at_edge"] > 0]
    deep = 0.95 * p.thickness * (1 - 1e-6)  # where the stop ended the run (its root, to the event's tolerance)
    if values["status"] == "ok" and len(edge):  # (the force of the elements beyond the grid is missing)
        values.update(status="failed", message=f"the contact reached the element grid's edge at t = {edge[0]:.4g} s: "
                                               f"widen it (half_width {p.half_width:g} m)")
    elif values["status"] == "ok" and values["max_indentation_m"] >= deep:
        values.update(status="failed", message=f"the ball went through 95 % of the {p.thickness:g} m layer, beyond "
                                               "which the layer laws mean nothing")
    elif values["status"] == "ok" and not values["left"] and res.t[-1] < p.t_end:
        # (the stop's root at the start: the first step went from above the layer to through it)
        values.update(status="failed", message=f"the run ended at t = {res.t[-1]:.3g} s with the ball neither through "
                                               "95 % of the layer nor off it: it crossed the layer within the first "
                                               f"integration step (v0 = {p.v0:g} m/s is too fast to resolve)")
    elif values["status"] == "ok" and not values["left"]:
        values.update(status="failed", message=f"the ball had not left the layer by t_end = {p.t_end:g} s")
    if p.strain == "small":
        law = LinearLayer(p.E, p.nu)
        values["closed_form"] = {"relaxed": foundation_closed_form(law, radius, p.thickness, p.mass, p.v0)}
        if p.rho < 1:
            values["closed_form"]["instantaneous"] = foundation_closed_form(LinearLayer(p.E / p.rho, p.nu), radius,
                                                                            p.thickness, p.mass, p.v0)
    values["wall_s"] = time.perf_counter() - t0
    summary = Summary("layer-drop", values, {"history": history, "load": load, "system": system, "result": res,
                                             "lowest": lowest})
    if out is not None:
        from simclient.scenarios.report import save_layer_drop

        values["files"] = [str(f) for f in save_layer_drop(summary, Path(out))]
    return summary


def _energy(system: MultibodySystem, y: np.ndarray) -> float:
    """The system's energy (J) at ``y``; NaN where the state cannot be probed (a failed run's last
    state beyond the tables)."""
    try:
        return float(system.energy(y))
    except ContactError:
        return math.nan


def _describe(p: LayerDropParams) -> dict[str, Any]:
    layer = {"E_Pa": p.E, "nu": p.nu, "thickness_m": p.thickness, "strain": p.strain,
             "aggregate_modulus_Pa": LinearLayer(p.E, p.nu).aggregate_modulus}
    if p.rho < 1:
        layer.update(viscoelastic=True, rho=p.rho, creep_time_s=p.creep_time, relaxation_time_s=p.rho * p.creep_time)
    return layer


def _history(res: Any, system: MultibodySystem, load: FoundationLoad, lowest: float, n: int = 801) -> dict[str, np.ndarray]:
    """The run along its dense output (``n`` times): the height (m) of the ball's lowest point over
    the layer and its speed (m/s, along z), the indentation (m, 0 when apart), the layer's force
    (N, along z), peak pressure (Pa) and contact area (m^2), and ``at_edge`` (1 where an element on
    the grid's border is in contact)."""
    t = np.linspace(0.0, float(res.t[-1]), n)
    h: dict[str, np.ndarray] = {k: np.zeros(n) for k in ("t_s", "height_m", "vz_m_s", "indentation_m", "force_N",
                                                          "peak_pressure_Pa", "area_m2", "at_edge")}
    h["t_s"] = t
    grid = load.contact.compartments["layer"].grid
    border = np.pad(np.zeros(np.subtract(grid.shape, 2), bool), 1, constant_values=True).ravel()
    for k, tt in enumerate(t):
        y = res.sol(tt)
        system.set_state(y)
        try:
            load(tt, system)
        except ContactError:  # (a state the run did not visit may lie beyond the tables)
            continue
        r = load.last["layer"]
        h["height_m"][k], h["vz_m_s"][k] = y[2] + lowest, y[9]
        h["indentation_m"][k] = max(-h["height_m"][k], 0.0)
        h["force_N"][k], h["peak_pressure_Pa"][k], h["area_m2"][k] = r.force[2], r.peak_pressure, r.area
        h["at_edge"][k] = float((r.active & border).any())
    return h


def _contact_time(res: Any, system: MultibodySystem, load: FoundationLoad, t: np.ndarray, touching: np.ndarray
                  ) -> float:
    """How long the layer pushed (s): from the first to the last of the history's times ``t``
    where it does (``touching``), each end found by bisection (to 1e-10 s) against the next time out."""
    k = np.flatnonzero(touching)
    if not len(k):
        return 0.0

    def pushes(tt: float) -> bool:
        system.set_state(res.sol(tt))
        load(tt, system)
        return bool(load.last["layer"].force[2] > 0)

    def edge(inside: float, outside: float) -> float:
        while abs(outside - inside) > 1e-10:
            middle = 0.5 * (inside + outside)
            inside, outside = (middle, outside) if pushes(middle) else (inside, middle)
        return inside
    first = edge(t[k[0]], t[k[0] - 1]) if k[0] > 0 else t[0]
    last = edge(t[k[-1]], t[k[-1] + 1]) if k[-1] < len(t) - 1 else t[-1]
    return float(last - first)


class LayerDropScenario(Scenario, name="layer-drop", params=LayerDropParams,
                        tables={"ball": "ef_sphere", "layer": "ef_layer"},
                        title="a ball dropped on an elastic or viscoelastic layer (elastic-foundation contact in "
                              "dynamics)"):

    def run(self, params: LayerDropParams, tables: Tables, *, out: Path | None = None,
            progress: Progress | None = None) -> Summary:
        return layer_drop(tables.open("ball", self.tables["ball"]), tables.open("layer", self.tables["layer"]), params,
                          out=out, progress=progress)

    def report(self, summary: Summary) -> str:
        layer = summary["layer"]
        kind = (f"viscoelastic (rho {layer['rho']:g}, creep time {layer['creep_time_s']:g} s)" if layer.get("viscoelastic")
                else "elastic")
        lines = [f"layer-drop: a {summary['mass_kg'] * 1e3:g} g ball (R {summary['radius_m'] * 1e3:g} mm) at "
                 f"{summary['v0_m_s']:g} m/s on a {layer['thickness_m'] * 1e3:g} mm {kind} layer, E "
                 f"{layer['E_Pa'] / 1e6:g} MPa, {layer['strain']} strain, {summary['element_grid'][0]} x "
                 f"{summary['element_grid'][1]} elements: {summary['steps']} steps, {summary['rhs']} right-hand sides, "
                 f"{summary['wall_s']:.2f} s wall"]
        closed = summary.get("closed_form", {})
        bounds = "".join(f"; {name} elastic layer {c['max_indentation_m'] * 1e6:.3f} um, {c['contact_time_s'] * 1e3:.4f} ms"
                         for name, c in closed.items())
        lines += [f"  largest indentation {summary['max_indentation_m'] * 1e6:.3f} um, contact time "
                  f"{summary['contact_time_s'] * 1e3:.4f} ms (closed form{'s' if len(closed) > 1 else ''}{bounds or ': none'})",
                  f"  restitution {_restitution(summary)}; energy lost {summary['energy_lost_J']:.4g} J of "
                  f"{summary['energy_in_J']:.4g} J",
                  f"  peak force {summary['peak_force_N']:.4g} N, peak pressure {summary['peak_pressure_Pa'] / 1e6:.4g} MPa, "
                  f"largest contact area {summary['max_area_m2'] * 1e6:.4g} mm^2"]
        lines.extend(f"  wrote {f}" for f in summary.get("files", []))
        return "\n".join(lines)


def _restitution(summary: Summary) -> str:
    """The restitution as reported: none where the ball did not leave the layer."""
    e = summary["restitution"]
    return "none (the ball did not leave the layer)" if e is None else f"{e:.5f}"


#: creep times (s) of the study: around the 3-4 ms contact, from nearly relaxed to nearly elastic at E / rho
CREEP_TIMES = (3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 1e-1)

register(Study("layer-drop-creep-time", "layer-drop", "a ball on a viscoelastic layer (rho 0.5): restitution and "
               "largest indentation against the creep time", tuple(
                   (f"T={T:g}s", {"rho": 0.5, "creep_time": T}) for T in CREEP_TIMES), plot="layer-drop"))
