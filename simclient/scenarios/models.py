"""Model builders that the validation cases, the tests and users reuse: a sphere pressed into or
dropped onto an elastic layer, the ball-and-socket press, the planar drop, a ball flying past a
ball or over a wavy strip, the viscoelastic law's history. Each builds its system from the sample
tables (``tables``: a folder or an ``s3://BUCKET/PREFIX``) and returns what a check compares (SI
units throughout)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy.integrate import dblquad, quad, solve_ivp
from scipy.optimize import brentq

from simclient.contact import (
    CirclePair,
    CompartmentResult,
    FoundationContact,
    LayerLaw,
    LinearLayer,
    ProfilePair,
    ViscoelasticLaw,
    element_grid,
    make_law,
)
from simclient.dynamics import (
    Body,
    ContactModel,
    FoundationLoad,
    find_minimum,
    find_root,
    MultibodySystem,
    PlanarBody,
    PlanarContact,
    PlanarSystem,
    ProfileSurface,
    SimulationResult,
    Surface,
    simulate,
)
from simclient.geometry import StorageWindow
from simclient.errors import ParameterError, SimulationError
from simclient.io import open_surface
from simclient.scenarios._base import locate
from simclient.scenarios._base import Tables
from simclient.scenarios.bouncing_ball import G
from simclient.scenarios.knee2d import GEOMETRIES
from simclient.scenarios.layer_drop import drop_system

__all__ = ["press", "pressed", "indenter_contact", "press_history", "hip_press", "hip_force", "ball_on_layer",
           "foundation_drop", "hunt_crossley_restitution", "planar_drop", "ball_graze", "terrain_pass",
           "strip_section", "viscoelastic_history", "EF_LAW", "EF_R", "EF_H", "EF_MASS", "EF_K", "HIP_R", "HIP_HALF",
           "HIP_LAW", "HIP_H", "Root"]

Root = str | Path  # where the tables are: a folder or an s3://BUCKET/PREFIX
_I3 = np.eye(3)


def press(tables: Root, indenter: str, layer: LayerLaw, depth: float, thickness: float, n: int = 80,
          half_width: float = 0.004) -> float:
    """Normal force (N) of the ``indenter`` table pushed ``depth`` (m) into the ``ef_layer`` table
    carrying a layer of ``thickness`` (m), with ``n x n`` elements over +-``half_width`` (m)."""
    return float(pressed(tables, indenter, layer, depth, thickness, n, half_width).force[2])


def pressed(tables: Root, indenter: str, layer: LayerLaw, depth: float, thickness: float, n: int = 80,
            half_width: float = 0.004, shift: tuple[float, float] = (0.0, 0.0),
            quadrature: str = "centre") -> CompartmentResult:
    """:func:`press`'s whole result (force, pressures, area), the indenter's window its whole table;
    ``shift`` (m) moves the element grid in the layer's plane."""
    contact, lowest = indenter_contact(tables, indenter, layer, thickness, n, half_width, shift, quadrature)
    return contact.evaluate(_I3, np.zeros(3), _I3, np.array([0.0, 0.0, -lowest - depth]))["layer"]


def indenter_contact(tables: Root, indenter: str, layer: LayerLaw, thickness: float, n: int = 80,
                     half_width: float = 0.004, shift: tuple[float, float] = (0.0, 0.0),
                     quadrature: str = "centre") -> tuple[FoundationContact, float]:
    """The contact of :func:`pressed` (its arguments) and the z (m) of the indenter's lowest point
    in its table frame: the indenter's frame at ``(0, 0, -lowest - depth)`` pushes it ``depth`` in."""
    fixed, moving = open_surface(locate("ef_layer", tables=tables)), open_surface(locate(indenter, tables=tables))
    (x, y), w = shift, half_width
    grid = element_grid(fixed, "layer", (x - w, x + w), (y - w, y + w), (n, n), thickness)
    hm = moving.header
    lowest = float(moving.read_block(0, hm.n_rec_u, 0, hm.n_rec_v)[..., 4].min())
    contact = FoundationContact([grid], moving, layer, extent=(hm.n_rec_u, hm.n_rec_v),  # (the whole indenter)
                                quadrature=quadrature)
    return contact, lowest


def press_history(contact: FoundationContact, lowest: float, depth: Callable[[float], float],
                  times: np.ndarray) -> list[CompartmentResult]:
    """The results at ``times`` (s, from 0, increasing) of an :func:`indenter_contact` on a
    viscoelastic layer pushed ``depth(t)`` (m) in from rest: the layer's states integrated from
    zero through the contact's rates (RK45, rtol 1e-7, atol 1e-11 on states of the order of the
    strain)."""
    def pose(t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        return _I3, np.zeros(3), _I3, np.array([0.0, 0.0, -lowest - depth(t)])

    def rates(t: float, z: np.ndarray) -> np.ndarray:
        dz = np.empty_like(z)
        contact.evaluate(*pose(t), state=z, rates=dz)
        return dz
    sol = solve_ivp(rates, (0.0, float(times[-1])), np.zeros(contact.n_states), t_eval=times, rtol=1e-7, atol=1e-11)
    if sol.status != 0:
        raise SimulationError(f"viscoelastic press: {sol.message}")
    return [contact.evaluate(*pose(t), state=z)["layer"] for t, z in zip(times, sol.y.T)]


#: the ball-and-socket case: the ef_cup and ef_head tables' radius (m), the element grid's half-width
#: (rad of latitude and longitude about the cup's pole axis x) and a linear layer (h, m)
HIP_R, HIP_HALF, HIP_LAW, HIP_H = 0.025, math.radians(60), LinearLayer(10e6, 0.3), 0.002


def hip_press(tables: Root, displacement: Sequence[float], n: int = 40, quadrature: str = "centre") -> CompartmentResult:
    """A ball-and-socket joint on a thin layer: the ``ef_head`` table displaced by ``displacement``
    (m, the cup's frame) from the centre of the concentric ``ef_cup`` table, which carries ``n x n``
    elements over +-HIP_HALF of latitude and longitude, a layer of HIP_LAW, HIP_H thick."""
    cup, head = open_surface(locate("ef_cup", tables=tables)), open_surface(locate("ef_head", tables=tables))
    grid = element_grid(cup, "cup", (-HIP_HALF, HIP_HALF), (-HIP_HALF, HIP_HALF), (n, n), HIP_H)
    contact = FoundationContact([grid], head, HIP_LAW, extent=(head.header.n_rec_u, head.header.n_rec_v),
                                quadrature=quadrature)
    I = np.eye(3)
    return contact.evaluate(I, np.zeros(3), I, np.asarray(displacement, float))["cup"]


def hip_force(displacement: Sequence[float]) -> np.ndarray:
    """The closed form of :func:`hip_press` (N, on the head): for a displacement ``delta`` much
    smaller than R, an element at unit direction ``e`` from the centre is ``delta . e`` deep and
    pushes the head by ``K (delta . e) / h`` per unit area along ``-e``. On the cup's latitude u
    and longitude v, ``e = (sin u, cos u sin v, -cos u cos v)`` and ``dA = R^2 cos u du dv``; the
    integrals over the part in contact (``delta . e > 0``), by quadrature."""
    d = np.asarray(displacement, float)

    def component(k: int) -> float:
        def f(v: float, u: float) -> float:
            e = np.array([math.sin(u), math.cos(u) * math.sin(v), -math.cos(u) * math.cos(v)])
            return -max(float(d @ e), 0.0) * e[k] * math.cos(u)
        return dblquad(f, -HIP_HALF, HIP_HALF, -HIP_HALF, HIP_HALF, epsabs=0, epsrel=1e-8)[0]
    return HIP_LAW.aggregate_modulus * HIP_R**2 / HIP_H * np.array([component(k) for k in range(3)])


#: the elastic-foundation dynamics cases: a sphere (the ef_sphere table, R = 20 mm, 10 g) on a
#: linear layer (E = 10 MPa, nu = 0.3, h = 5 mm): F = k d^2 for the paraboloid, k in N/m^2
EF_LAW, EF_R, EF_H, EF_MASS = LinearLayer(10e6, 0.3), 0.02, 0.005, 0.01


EF_K = math.pi * EF_LAW.aggregate_modulus * EF_R / EF_H


def ball_on_layer(tables: Root, position: Sequence[float], velocity: Sequence[float], gravity: float = 0.0,
                  layer: LayerLaw = EF_LAW, quadrature: str = "quadratic", **contact: Any
                  ) -> tuple[MultibodySystem, FoundationLoad, float]:
    """The ``ef_sphere`` table as a ball (mass EF_MASS) at ``position`` (m, relative to touching the
    ``ef_layer`` table's plane z = 0 with its lowest point at the origin) moving at ``velocity``
    (m/s), on a ``layer`` (EF_LAW by default; EF_H thick) under ``gravity`` (m/s^2, along -z): 40 x
    40 elements over +-3 mm, the ``quadrature``; ``contact`` goes to :class:`FoundationContact`
    (``dissipation``, ``friction``). See :func:`simclient.scenarios.layer_drop.drop_system`, which
    returns the system, its load and the z of the ball's lowest point in its table frame (m)."""
    return drop_system(open_surface(locate("ef_sphere", tables=tables)), open_surface(locate("ef_layer", tables=tables)),
                       layer, position, velocity, mass=EF_MASS, radius=EF_R, thickness=EF_H, grid=(40, 40),
                       half_width=0.003, quadrature=quadrature, gravity=gravity, **contact)


def foundation_drop(tables: Root, v0: float, **contact: Any
                    ) -> tuple[SimulationResult, MultibodySystem, FoundationLoad, float, float, float, float]:
    """:func:`ball_on_layer` (``contact`` its keywords) dropped from 10 um above the layer at ``v0``
    (m/s) without gravity, until it has left again (DOP853-jit, rtol 1e-8; four times the linear
    layer's contact time): the result, the system, the load, the z of the ball's lowest point in
    its frame (m), the times (s) it touches and leaves the layer (the dense output's roots) and its
    deepest indentation (m; the dense output's minimum, wherever the steps fell)."""
    dmax = (1.5 * EF_MASS * v0**2 / EF_K) ** (1 / 3)
    system, load, lowest = ball_on_layer(tables, (0, 0, 1e-5), (0, 0, -v0), **contact)
    res = simulate(system, 2e-5 / v0 + 4 * dmax / v0, method="DOP853-jit", rtol=1e-8, atol=1e-12)
    if res.status != 0:
        raise SimulationError(f"elastic-foundation drop: {res.message}")

    def height(t: float) -> float:  # of the ball's lowest point above the layer, m
        return float(res.sol(t)[2]) + lowest
    k = int(np.argmin(res.y[2]))
    deepest, lowest_height = find_minimum(height, float(res.t[max(k - 1, 0)]), float(res.t[min(k + 1, len(res.t) - 1)]),
                                          xatol=1e-12)
    return (res, system, load, lowest, find_root(height, 0.0, deepest), find_root(height, deepest, float(res.t[-1])),
            -lowest_height)


def hunt_crossley_restitution(a: float, n: float) -> float:
    """Restitution of a body striking at ``v0`` under ``F = k d^n (1 + alpha d')``, which depends on
    ``a = alpha v0`` (dimensionless) and ``n`` alone: the one-degree-of-freedom equation in units
    where k = m = v0 = 1, integrated until the depth returns to zero."""
    def leaves(t: float, y: np.ndarray) -> float:
        return float(y[0])
    leaves.terminal, leaves.direction = True, -1  # type: ignore[attr-defined]
    ode = solve_ivp(lambda t, y: [y[1], -max(y[0], 0.0) ** n * (1 + a * y[1])], (0, 50), [1e-12, 1.0],
                    events=leaves, rtol=1e-12, atol=1e-14)
    return float(-ode.y_events[0][0][1])


def planar_drop(tables: Root | None, gap: float = 0.005, mass: float = 1.0) -> tuple[float, float]:
    """A disc (section 5.3's convex-convex femoral circle, ``mass`` kg) dropped from rest ``gap``
    (m) onto the fixed tibial circle along their line of centres, Hertz with Table 5.3's K: on the
    circles' profile tables from ``tables``, or on the closed-form circles when None. Returns the
    largest indentation (m) and its energy-balance value ``m g (gap + d) = (2/5) K d^(5/2)``."""
    Ri, Rj, K = GEOMETRIES["convex-convex"]
    assert Rj is not None
    tibia = PlanarBody("tibia", fixed=True)
    disc = PlanarBody("disc", mass=mass, inertia=1e-3, position=np.array([0.0, Ri + Rj + gap]))
    pair: Any
    if tables is None:
        i, j, pair = ProfileSurface(disc), ProfileSurface(tibia), CirclePair(Ri, Rj, "convex")
    else:
        t = Tables(folder=tables)
        wi = StorageWindow(t.open("femur", "knee2d_circle_femur"), (7, 1))
        wj = StorageWindow(t.open("tibia", "knee2d_circle_tibia"), (7, 1))
        i, j, pair = ProfileSurface(disc, wi), ProfileSurface(tibia, wj), ProfilePair(wi, wj)
    contact = PlanarContact("drop", i, j, make_law("hertz", K, 1.0), pair)
    system = PlanarSystem([tibia, disc], [contact], gravity=(0.0, -G))
    res = simulate(system, math.sqrt(2 * gap / G) + 0.01, rtol=1e-10, atol=1e-13)
    if not res.success:
        raise ParameterError(f"planar drop: {res.message}")
    onset = next(e["t"] for e in res.events if e["type"] == "onset")
    end = next((e["t"] for e in res.events if e["type"] == "separation"), float(res.t[-1]))
    depth = 0.0
    for tt in np.linspace(onset, end, 4001):
        system.place_windows(res.sol(float(tt)))
        depth = max(depth, -system.gap(contact))
    expected = float(brentq(lambda d: 0.4 * K * d**2.5 - mass * G * (gap + d), 0.0, 0.05))
    return depth, expected


def _flying_ball(t: Tables, position: np.ndarray, other: Surface, name: str, t_end: float, method: str,
                 gravity: float = 0.0) -> SimulationResult:
    """The sample ball (R = 20 mm, ``ball_333``, 0.092 kg; its lowest point the middle of a 3 x 3
    window) starting at ``position`` (m) at 1 m/s along +x against ``other`` (a surface on a fixed
    body), Hertz (K = 5.5e9 N/m^1.5), with ``gravity`` (m/s^2, along -z), for ``t_end`` (s);
    :class:`ParameterError` if the run fails."""
    R = 0.02
    ball = Body("ball", mass=0.092, inertia=np.eye(3) * 0.4 * 0.092 * R**2, position=position,
                velocity=np.array([1.0, 0.0, 0.0]))
    contact = ContactModel(name, Surface(ball, StorageWindow(t.open("ball", "ball_333"), (3, 3), centre=(0.0, 0.0))),
                           other, make_law("hertz", 5.5e9))
    res = simulate(MultibodySystem([ball, other.body], [contact], gravity=(0.0, 0.0, -gravity)), t_end, method=method)
    if not res.success:
        raise ParameterError(f"{name}: {res.message}")
    return res


def ball_graze(tables: Root, x0: float = -0.25, depth: float = 1e-6, method: str = "DOP853-jit"
               ) -> tuple[SimulationResult, float, float]:
    """A ball (R = 20 mm, ``ball_333``, 0.092 kg) flying from ``x0`` (m) along +x at 1 m/s, without
    gravity, past a fixed ball (the same table turned over, its regular bottom facing up) at the
    origin, ``depth`` (m) inside their contact distance, Hertz (K = 5.5e9 N/m^1.5), for 0.5 s.
    Returns the run and the closed-form time (s) and normal speed (m/s) of its onset."""
    R, v = 0.02, 1.0
    b = 2 * R - depth
    t = Tables(folder=tables)
    post = Surface(Body("post", fixed=True), StorageWindow(t.open("post", "ball_333"), (3, 3), centre=(0.0, 0.0)),
                   rotation=np.diag([1.0, -1.0, -1.0]))
    res = _flying_ball(t, np.array([x0, 0.0, b]), post, "graze", 0.5, method)
    half_chord = math.sqrt(4 * R * R - b * b)  # (m) the path's half length inside the contact distance
    return res, (-x0 - half_chord) / v, v * half_chord / (2 * R)


def terrain_pass(tables: Root, clearance: float = -1e-6, method: str = "DOP853-jit", gravity: float = 0.0,
                 t_end: float = 0.3) -> tuple[SimulationResult, float | None, StorageWindow]:
    """A ball (R = 20 mm, ``ball_333``, 0.092 kg) flying along +x at 1 m/s for ``t_end`` (s) from
    x = -0.05 m over the sample ``wavy_strip`` (``sample_surfaces/terrain.toml``), its lowest point
    ``clearance`` (m) above the strip's highest crest (negative: into it), past eleven lower
    crests, with ``gravity`` (m/s^2, along -z), Hertz (K = 5.5e9 N/m^1.5); the strip's window, 5 x 5
    records (23 mm of it), starts under the ball. Returns the run, the onset's time (s) where the
    exact B-spline's distance from the ball's centre comes to R on its straight path (None if it
    never does, or with gravity) and the strip's window."""
    from scipy.optimize import minimize_scalar

    R, v, x0 = 0.02, 1.0, -0.05
    section = strip_section()

    def nearest(f: Callable[[float], float]) -> Any:  # around the high crest, near u = 19
        return minimize_scalar(f, bounds=(17.0, 21.0), method="bounded", options={"xatol": 1e-12})
    crest = section(nearest(lambda u: -section(u)[1]).x)
    height = crest[1] + R + clearance  # of the ball's centre (m)

    def distance(t: float) -> float:  # from the ball's centre to the section, less R (m)
        centre = np.array([x0 + v * t, height])
        return float(nearest(lambda u: float(np.linalg.norm(section(u) - centre))).fun) - R
    t_crest = (crest[0] - x0) / v
    t_onset = brentq(distance, t_crest - 0.01, t_crest, xtol=1e-13) if not gravity and distance(t_crest) < 0 else None

    t = Tables(folder=tables)
    strip = StorageWindow(t.open("strip", "wavy_strip"), (5, 5),
                          centre=(brentq(lambda u: section(u)[0] - x0, 0.0, 38.0), 0.5))
    res = _flying_ball(t, np.array([x0, 0.0, height]), Surface(Body("ground", fixed=True), strip), "ball-strip",
                       t_end, method, gravity)
    return res, t_onset, strip


def strip_section() -> Callable[[float], np.ndarray]:
    """The sample ``wavy_strip``'s section along x (its definition's cubic B-spline through the
    (x, z) of its control rows, evaluated by scipy from sample_surfaces/terrain.toml: a second
    evaluation of the definition, besides the table's): ``section(u) -> (x, z)`` (m)."""
    import tomllib

    from scipy.interpolate import BSpline

    import sample_surfaces

    with sample_surfaces.definition("terrain.toml").open("rb") as f:
        strip = tomllib.load(f)["surfaces"]["wavy_strip"]
    rows = np.array(strip["control_points"])[:, 0, :]
    curve = BSpline(np.array(strip["knots_u"], dtype=float), rows[:, [0, 2]], strip["degree_u"])
    return lambda u: np.asarray(curve(u), dtype=float)


def viscoelastic_history(law: ViscoelasticLaw, t: np.ndarray, rate: float, t_turn: float) -> tuple[np.ndarray, np.ndarray]:
    """The law's force (N) along a load-unload indentation ``delta = rate t`` up to ``t_turn`` (s),
    then ``rate (2 t_turn - t)``: by integrating its state equation (the dynamics' way) and by
    quadrature of the hereditary integral ``K int_0^t Psi(t - tau) d(delta^n)/dtau dtau``."""

    def delta(tt: float) -> tuple[float, float]:
        return (rate * tt, rate) if tt <= t_turn else (rate * (2 * t_turn - tt), -rate)

    sol = solve_ivp(lambda tt, q: law.state_rates(*delta(tt), q), (0.0, float(t[-1])), [0.0], t_eval=t,
                    rtol=1e-12, atol=1e-30, max_step=t_turn / 200)
    ode = np.array([law.stateful_force(delta(tt)[0], delta(tt)[1], q) for tt, q in zip(t, sol.y.T)])
    tau_r = law.rho * law.T

    def integrand(tau: float, tt: float) -> float:
        d, dd = delta(tau)
        return (1 + (1 / law.rho - 1) * math.exp(-(tt - tau) / tau_r)) * law.n * max(d, 0.0) ** (law.n - 1) * dd

    hereditary = np.array([max(0.0, law.K * sum(quad(integrand, a, b, args=(tt,), epsabs=0, epsrel=1e-12, limit=200)[0]
                                                  for a, b in ((0.0, min(tt, t_turn)), (t_turn, max(tt, t_turn)))))
                           for tt in t])
    return ode, hereditary
