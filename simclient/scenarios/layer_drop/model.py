"""The layer drop's model (see :mod:`simclient.scenarios.layer_drop`)."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import numpy as np
from scipy.special import beta

from simclient.contact import FoundationContact, LayerLaw, LinearLayer, element_grid
from simclient.dynamics import Body, FoundationLoad, MultibodySystem, simulate
from simclient.errors import ContactError, ParameterError
from simclient.io import Source
from simclient.scenarios._base import (Progress, Summary, Tables, save_outputs, time_progress)
from simclient.scenarios.layer_drop import LayerDropParams, LayerDropScenario

__all__ = ["run", "layer_drop", "drop_system", "sphere_radius", "foundation_closed_form"]

START_GAP = 1e-5  # m: the ball's lowest point above the layer at the start


def run(params: LayerDropParams, tables: Tables, *, out: Path | None = None, progress: Progress | None = None) -> Summary:
    """The scenario on ``tables``; with ``out``, its report's files there."""
    roles = LayerDropScenario.tables
    summary = layer_drop(tables.open("ball", roles["ball"]), tables.open("layer", roles["layer"]), params,
                         progress=progress)
    return save_outputs(summary, out, progress)


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


def layer_drop(sphere: Source, plane: Source, params: LayerDropParams | None = None, progress: Progress | None = None) -> Summary:
    """Drop the ball (see the module docstring): the summary (its report writes the history and plots)."""
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


