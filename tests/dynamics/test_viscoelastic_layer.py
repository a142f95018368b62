"""Viscoelastic layers (:class:`simclient.contact.ViscoelasticLayer`: a standard linear solid on
each element, one state each) against closed forms: each element's response to a ramp and a hold
(Argatov's eq. (31) for the paraboloid is ``simclient validate ef-viscoelastic``), in dynamics the
elastic bounce of a layer too slow to relax (the energy the dashpots dissipate: tests/scenarios/test_layer_drop.py). The sphere
(R = 20 mm, the ``ef_sphere`` table) on the linear layer of test_foundation_dynamics.py (E = 10 MPa,
nu = 0.3, h = 5 mm); the layers here relax to half their instantaneous modulus (rho = 0.5)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import beta

from simclient.contact import LinearLayer, NonlinearLayer, ViscoelasticLayer
from simclient.contact._elements import SUB_POINTS
from simclient.dynamics import simulate
from simclient.errors import ParameterError
from simclient.scenarios.models import (EF_H, EF_K, EF_LAW, EF_MASS, ball_on_layer, foundation_drop, indenter_contact,
                                        press_history)

LAW, H, M, K_F = EF_LAW, EF_H, EF_MASS, EF_K  # Pa, m, kg, N/m^2 (F = K_F d^2 on the relaxed layer)


def test_each_element_follows_the_standard_linear_solid(sample_tables):
    """Pushed in at 50 mm/s for 1 ms and then held: each element carries the hereditary integral
    ``(K/h) [d(t) + (1/rho - 1) int_0^t exp(-(t - s)/tau) d'(s) ds]``, tau = rho T, of its own
    depth history d(t) (read from the contact at rest, 601 times; the integral by the recursion
    that is exact for depths linear between them). The grid's load ``sum p A`` (its states
    integrated through the contact's rates) against the sum of those within 5e-5 (the recursion's
    error where elements start to touch inside an interval: measured 3e-5 at 0.1 ms, 2e-6 from
    1 ms on); it relaxes towards the layer at rest."""
    rho, T, v, t1 = 0.5, 1e-3, 0.05, 1e-3
    contact, lowest = indenter_contact(sample_tables, "ef_sphere", ViscoelasticLayer(LAW, rho, T), H, n=30,
                                       half_width=0.002)
    area, tau, K = contact.compartments["layer"].grid.area, rho * T, LAW.aggregate_modulus
    ts = np.linspace(0.0, 3 * t1, 601)
    depth = np.array([contact.evaluate(np.eye(3), np.zeros(3), np.eye(3),
                                       np.array([0.0, 0.0, -lowest - v * min(t, t1)]))["layer"].depth for t in ts])
    decay = math.exp(-(ts[1] - ts[0]) / tau)
    q = np.zeros_like(depth)
    for k in range(1, len(ts)):  # int exp(-(t - s)/tau) d'(s) ds for d linear on [t_k-1, t_k]
        q[k] = q[k - 1] * decay + (depth[k] - depth[k - 1]) / (ts[1] - ts[0]) * tau * (1 - decay)
    expected = (K / H * (depth + (1 / rho - 1) * q)) @ area
    results = press_history(contact, lowest, lambda t: v * min(t, t1), ts[20::20])
    loads = np.array([r.mean_pressure * r.area for r in results])
    np.testing.assert_allclose(loads, expected[20::20], rtol=5e-5, atol=0)
    assert loads[9] / loads[-1] > 1.3  # (it relaxed: at t1 against two relaxation times later)
    assert loads[-1] == pytest.approx((K / H * depth[-1]) @ area, rel=0.02)  # (and nearly to the layer at rest)


def test_a_layer_too_slow_to_relax_bounces_as_its_instantaneous_modulus(sample_tables):
    """With a creep time far beyond the impact (10^9 s) the layer is elastic at E_inf / rho: the
    contact time ``(2/3) B(1/3, 1/2) d_max / v0`` with d_max from ``K_F / rho`` within 1e-3 (the
    centre rule's), and the ball leaves as fast as it came (the dashpots dissipate about
    T / tau ~ 1e-12 of the energy) to within what the integration guarantees.

    That guarantee: with the centre rule each element's force starts (and ends) with a kink, a
    jump ``J = k_e v / m`` in the acceleration's rate, which a Runge-Kutta step of length ``h``
    across it integrates with an error of at most ``J h^2 / 2`` in velocity, whatever its
    tolerances. The jumps of all elements add up to the contact's stiffness at the deepest point,
    ``2 K d_max / m`` per unit speed, on the way in and again on the way out; with
    ``m v0^2 / 2 = K d_max^3 / 3`` the rebound's relative error is at most ``3 (v0 h / d_max)^2``
    with ``h`` the mean step in contact (about 1.5e-3 at rtol 1e-8). The step sequence, and so
    where the kinks fall in it, changes with the last bits of the sums (another CPU's SIMD
    summation order): measured 4e-7 to 1.1e-4 over rtol 1e-7 to 1e-9 and elastic, viscoelastic and
    unrelaxing layers; before, a tolerance of 1e-5 failed on another machine (3.6e-5)."""
    v0, rho = 0.03, 0.5
    dmax = (1.5 * M * v0**2 * rho / K_F) ** (1 / 3)
    res, system, load, _, t_in, t_out, _ = foundation_drop(sample_tables, v0, layer=ViscoelasticLayer(LAW, rho, 1e9),
                                                           quadrature="centre")
    assert load.n_states == 1600 and res.y.shape[0] == 13 + 1600
    assert t_out - t_in == pytest.approx(2 / 3 * beta(1 / 3, 1 / 2) * dmax / v0, rel=1e-3)
    steps = np.count_nonzero((res.t[:-1] >= t_in - 1e-12) & (res.t[1:] <= t_out + 1e-12))
    kinks = 3 * (v0 * (t_out - t_in) / steps / dmax) ** 2
    assert kinks < 1e-2  # (enough steps in contact for the bound to mean something)
    assert res.y[9, -1] == pytest.approx(v0, rel=kinks)


def test_the_static_solver_rests_on_the_relaxed_layer(sample_tables):
    """In a quasi-static analysis the layer is at rest: resting under gravity, the sphere sinks until
    K_F d^2 = m g as on the relaxed elastic layer (within 0.5 %), not by the instantaneous modulus
    (which would give 1/sqrt(2) of it)."""
    from simclient.dynamics import BodyEquilibrium
    g = 9.81
    system, load, lowest = ball_on_layer(sample_tables, (0, 0, 1e-6), (0, 0, 0), gravity=g,
                                         layer=ViscoelasticLayer(LAW, 0.5, 1e-3), quadrature="centre")
    problem = BodyEquilibrium(system, system.free[0], {"x": 0.0, "y": 0.0, "rx": 0.0, "ry": 0.0, "rz": 0.0}, tol_N=1e-9)
    result = problem.solve(0.0)
    assert result.converged, result.message
    assert -(result.x[2] + lowest) == pytest.approx(math.sqrt(M * g / K_F), rel=5e-3)


@pytest.mark.parametrize("quadrature", ["centre", "quadratic"])
def test_the_states_are_the_elements_and_their_sub_points(sample_tables, quadrature):
    """One state per element (per sub-point with the quadratic quadrature), in grid order: with
    every state zero (no history) the layer is the elastic layer at E / rho, and with every state at
    its equilibrium ``p_r(d) / M`` it is the relaxed layer, force, torque and area alike (to
    round-off); a static evaluation is the relaxed layer."""
    rho, depth = 0.25, 4e-5
    pose = (np.eye(3), np.zeros(3), np.eye(3))
    visco, lowest = indenter_contact(sample_tables, "ef_sphere", ViscoelasticLayer(LAW, rho, 1e-3), H, n=12,
                                     half_width=0.0015, quadrature=quadrature)
    c = np.array([0.0, 0.0, -lowest - depth])
    results = {}
    for name, layer in (("instantaneous", LinearLayer(LAW.E / rho, LAW.nu)), ("relaxed", LAW)):
        contact = indenter_contact(sample_tables, "ef_sphere", layer, H, n=12, half_width=0.0015, quadrature=quadrature)[0]
        results[name] = contact.evaluate(*pose, c)["layer"]
    per = SUB_POINTS if quadrature == "quadratic" else 1
    assert visco.n_states == 12 * 12 * per
    found = visco.detector.detect(*pose, c)["layer"]
    d = found.sub_depth if quadrature == "quadratic" else found.depth[found.active][:, None]
    z = np.zeros((144, per))
    z[found.active] = np.maximum(d, 0.0) / H  # p_r(d) / M for the small-strain linear law
    for name, state in (("instantaneous", np.zeros(visco.n_states)), ("relaxed", z.ravel()), ("relaxed", None)):
        r, expected = visco.evaluate(*pose, c, state=state)["layer"], results[name]
        np.testing.assert_allclose(r.force, expected.force, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(r.torque, expected.torque, rtol=1e-12, atol=1e-15)
        assert r.area == pytest.approx(expected.area, rel=1e-12)


def test_only_the_small_strain_law_has_a_zener_energy():
    """The Zener solid's energy and dissipation are the small-strain linear law's; the other laws'
    are NaN (said, not guessed). A sudden depth gives the instantaneous pressure p_r / rho, a free
    element springs back at the creep time."""
    d, h, z = np.array([1e-5, 1e-5, -1e-6]), np.full(3, H), np.array([0.0, 1e-3, 1e-3])
    small = ViscoelasticLayer(LAW, 0.25, 2e-3)
    p, rate = small.respond(d, h, z)
    K = LAW.aggregate_modulus
    assert p[0] == pytest.approx(4 * K * d[0] / H, rel=1e-12) and rate[0] == pytest.approx(d[0] / H / 5e-4, rel=1e-12)
    assert p[2] == 0 and rate[2] == pytest.approx(-z[2] / 2e-3, rel=1e-12)
    assert np.isfinite(small.energy(d, h, z)).all() and (small.dissipation(d, h, z) >= 0).all()
    for relaxed in (LinearLayer(10e6, 0.3, large_strain=True), NonlinearLayer(eps0=0.05, p0=0.5e6, n=2.0, nu=0.3)):
        layer = ViscoelasticLayer(relaxed, 0.5, 1e-3)
        assert np.isnan(layer.energy(d, h, z)).all() and np.isnan(layer.dissipation(d, h, z)).all()
        assert layer.respond(d, h, np.zeros(3))[0][0] == pytest.approx(2 * relaxed.pressure(d[:1], h[:1])[0], rel=1e-9)


def test_bad_viscoelastic_layers_are_refused(sample_tables):
    for rho, T in ((0.0, 1e-3), (1.5, 1e-3), (0.5, 0.0), (0.5, math.inf), (0.5, math.nan), ("0.5", 1e-3)):
        with pytest.raises(ParameterError, match="rho = E_inf / E_0 must be in"):
            ViscoelasticLayer(LAW, rho, T)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="must be a LinearLayer or a NonlinearLayer"):
        ViscoelasticLayer(ViscoelasticLayer(LAW, 0.5, 1e-3), 0.5, 1e-3)  # type: ignore[arg-type]
    system, _, _ = ball_on_layer(sample_tables, (0, 0, 1e-5), (0, 0, -0.03), layer=ViscoelasticLayer(LAW, 0.5, 1e-3),
                                 quadrature="centre")
    for method in ("Radau", "DOP853", "RK45"):
        with pytest.raises(ParameterError, match="needs DOP853-jit"):
            simulate(system, 1e-3, method=method)
