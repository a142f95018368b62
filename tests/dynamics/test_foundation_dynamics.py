"""Elastic-foundation contact in dynamics (:class:`simclient.dynamics.FoundationLoad`): a rigid
sphere (R = 20 mm, the ``ef_sphere`` table) on a linear layer (E = 10 MPa, nu = 0.3, h = 5 mm, the
``ef_layer`` table), against the closed forms of the paraboloid's foundation force ``F = k d^2``,
``k = pi K R / h`` (the sphere's differs by 0.15 % at these depths: see test_foundation.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import beta

from simclient.contact import FoundationContact, Friction, LinearLayer, NonlinearLayer, element_grid, layer_energy
from simclient.dynamics import Body, BodyEquilibrium, FoundationLoad, MultibodySystem, simulate
from simclient.errors import ParameterError
from simclient.geometry import rotation_matrix
from simclient.io import open_surface
from simclient.scenarios import locate
from simclient.scenarios.models import (EF_H, EF_K, EF_LAW, EF_MASS, EF_R, ball_on_layer, foundation_drop,
                                        hunt_crossley_restitution)

LAW, R, H, M, K_F = EF_LAW, EF_R, EF_H, EF_MASS, EF_K  # Pa, m, m, kg, N/m^2 (F = K_F d^2)


@pytest.mark.slow
def test_a_sphere_bounces_off_a_layer_as_the_closed_form_says(sample_tables):
    """Without dissipation: the largest indentation d_max = (3 m v0^2 / (2 k))^(1/3) and the contact
    time 2 (d_max / v0) int_0^1 (1 - x^3)^(-1/2) dx = (2/3) B(1/3, 1/2) d_max / v0 within 0.1 %,
    leaving as fast as it came (the force depends on the pose only), and kinetic plus the layer's
    elastic energy (MultibodySystem.energy) constant within 5e-4 (the rest: the midsurface
    correction of the depths, which the force follows and the energy of the depths does not)."""
    v0 = 0.03
    dmax = (1.5 * M * v0**2 / K_F) ** (1 / 3)
    res, system, load, lowest, t_in, t_out, _ = foundation_drop(sample_tables, v0)
    assert -(res.y[2].min() + lowest) == pytest.approx(dmax, rel=1e-3)
    assert t_out - t_in == pytest.approx(2 / 3 * beta(1 / 3, 1 / 2) * dmax / v0, rel=1e-3)
    assert res.y[9, -1] == pytest.approx(v0, rel=1e-5)
    energies = [system.energy(y) for y in res.y.T[::5]]  # (it counts the layer's: FoundationLoad.elastic_energy)
    assert energies[0] == pytest.approx(0.5 * M * v0**2, rel=1e-12)  # (apart at the start)
    assert np.ptp(energies) / energies[0] < 5e-4
    assert load.contact.stats["misses"] == 0


@pytest.mark.slow
def test_dissipation_gives_hunt_and_crossleys_restitution(sample_tables):
    """Each element's force times 1 + 3/2 c d' on a flat layer makes the whole force k d^2 (1 + 3/2
    c d'), whose restitution depends on c v0 alone: a second method, the one-degree-of-freedom
    equation in dimensionless form, gives it (0.95237 at c v0 = 0.05, near 1 - c v0)."""
    v0, c = 0.03, 0.05 / 0.03
    res = foundation_drop(sample_tables, v0, dissipation=c)[0]
    e = hunt_crossley_restitution(1.5 * c * v0, 2.0)
    assert e == pytest.approx(1 - c * v0, abs=5e-3)
    assert hunt_crossley_restitution(1e-9, 2.0) == pytest.approx(1.0, abs=1e-8)  # (no dissipation: none lost)
    assert res.y[9, -1] / v0 == pytest.approx(e, rel=1e-4)


@pytest.mark.slow
def test_friction_makes_a_sliding_sphere_roll(sample_tables):
    """Set sliding at 0.05 m/s on the layer under gravity with mu = 0.3 (each element's friction
    against its slip): it decelerates at mu g, and rolls at 5/7 of its first speed (the rigid ball's
    closed form; on the layer it rolls on a radius shorter by the indentation, -7e-4, and creeps at
    the slip where the regularized friction balances nothing) and without slip, within 1e-3."""
    g, v0, mu = 9.81, 0.05, 0.3
    ds = math.sqrt(M * g / K_F)  # the static indentation
    system, load, _ = ball_on_layer(sample_tables, (-0.001, 0, -ds), (v0, 0, 0), gravity=g,
                                     friction=Friction(mu, mu))
    ts = 2 / 7 * v0 / (mu * g)  # the sliding time
    res = simulate(system, 2 * ts, method="DOP853", rtol=1e-8, atol=1e-12)
    assert res.status == 0, res.message
    deceleration = (res.sol(0.51 * ts)[7] - res.sol(0.49 * ts)[7]) / (0.02 * ts)
    assert -deceleration == pytest.approx(mu * g, rel=2e-3)
    vx, wy = res.y[7, -1], res.y[11, -1]
    assert vx == pytest.approx(5 / 7 * v0, rel=1e-3)
    assert wy * R == pytest.approx(vx, rel=1e-3)
    assert abs(res.y[8, -1]) < 1e-9  # (nothing pushes it sideways)


@pytest.mark.slow
def test_two_free_bodies_keep_their_momenta_through_a_rough_lossy_impact(sample_tables):
    """The layer on a free body too (50 g), the spinning ball striking it off-centre and obliquely
    with dissipation and friction: every element's force acts on both bodies at one point, so the
    linear and angular momentum of the pair (about the origin) are kept (to round-off); the kinetic
    energy only falls. (That the moment each body takes is right, the rolling test checks: without
    it the sliding ball does not roll at 5/7 of its speed.)"""
    system, load, _ = ball_on_layer(sample_tables, (0.0005, -0.0003, 1e-5), (0.02, 0.01, -0.03), dissipation=1.0,
                                    friction=Friction(0.4, 0.3))
    ball, layer = system.bodies
    ball.omega = np.array([30.0, -20.0, 50.0])  # rad/s
    layer.fixed, layer.mass, layer.inertia = False, 0.05, np.diag([2e-6, 3e-6, 4e-6])
    system = MultibodySystem([ball, layer], [], gravity=(0.0, 0.0, 0.0), loads=[load])
    res = simulate(system, 0.005, method="DOP853", rtol=1e-8, atol=1e-12)
    assert res.status == 0, res.message

    def momenta(y):
        P, L, E = np.zeros(3), np.zeros(3), 0.0
        for f, b in enumerate(system.free):
            r, p, v, w = np.split(y[13 * f:13 * f + 13], [3, 7, 10])
            P, L = P + b.mass * v, L + np.cross(r, b.mass * v) + rotation_matrix(p / np.linalg.norm(p)) @ b.inertia @ w
            E += 0.5 * b.mass * v @ v + 0.5 * w @ b.inertia @ w
        return P, L, E
    (P0, L0, E0), (P1, L1, E1) = momenta(res.y[:, 0]), momenta(res.y[:, -1])
    assert np.abs(P1 - P0).max() < 1e-12 * np.abs(P0).max()
    assert np.abs(L1 - L0).max() < 1e-12 * np.abs(L0).max()
    assert res.y[22, -1] < 0 < res.y[9, -1] and E1 < 0.98 * E0  # apart again, having lost energy (3.5 %)
    assert np.linalg.norm(res.y[10:13, -1] - ball.omega) > 1.0  # (the friction's torque turned the ball)


def test_the_static_solver_rests_a_sphere_on_the_layer(sample_tables):
    """The quasi-static solver takes the load like any other: resting under gravity, the sphere
    sinks until k d^2 = m g (within 0.5 %: the sphere's force is the paraboloid's within 0.15 %)."""
    g = 9.81
    system, load, lowest = ball_on_layer(sample_tables, (0, 0, 1e-6), (0, 0, 0), gravity=g)
    ball = system.free[0]
    problem = BodyEquilibrium(system, ball, {"x": 0.0, "y": 0.0, "rx": 0.0, "ry": 0.0, "rz": 0.0}, tol_N=1e-9)
    result = problem.solve(0.0)
    assert result.converged, result.message
    assert -(result.x[2] + lowest) == pytest.approx(math.sqrt(M * g / K_F), rel=5e-3)


def test_layer_energy_integrates_the_laws():
    """layer_energy against the closed forms: K d^2 / (2 h) (small strain), K (d + (h - d) ln(1 -
    d/h)) (large strain) and, for the nonlinear law with n = 1, the linear law of E = p0 / eps0."""
    d, h = np.array([-1e-5, 0.0, 1e-5, 5e-5, 4e-4]), np.full(5, 5e-4)
    K = LAW.aggregate_modulus
    dp = np.maximum(d, 0)
    assert np.allclose(layer_energy(LAW, d, h), K * dp**2 / (2 * h), rtol=1e-12, atol=0)
    large = LinearLayer(10e6, 0.3, large_strain=True)
    assert np.allclose(layer_energy(large, d, h), K * (dp + (h - dp) * np.log1p(-dp / h)), rtol=1e-6, atol=1e-12)
    one = NonlinearLayer(eps0=0.05, p0=0.5e6, n=1.0, nu=0.3)
    assert np.allclose(layer_energy(one, d, h), layer_energy(LinearLayer(1e7, 0.3), d, h), rtol=1e-9)


def test_bad_foundation_loads_are_refused(sample_tables):
    layer = open_surface(locate("ef_layer", tables=sample_tables))
    grid = element_grid(layer, "layer", (-0.003, 0.003), (-0.003, 0.003), (4, 4), H)
    for bad in (-1.0, math.nan, "1"):
        with pytest.raises(ParameterError, match="dissipation"):
            FoundationContact([grid], layer, LAW, dissipation=bad)
    with pytest.raises(ParameterError, match="friction must be a Friction"):
        FoundationContact([grid], layer, LAW, friction=0.3)
    body, contact = Body("b", mass=1.0, inertia=np.eye(3)), FoundationContact([grid], layer, LAW)
    with pytest.raises(ParameterError, match="one body"):
        FoundationLoad(contact, body, body)
    with pytest.raises(ParameterError, match="must be a FoundationContact"):
        FoundationLoad(grid, Body("ground", fixed=True), body)
    with pytest.raises(ParameterError, match="must be Body objects"):
        FoundationLoad(contact, Body("ground", fixed=True), "ball")
