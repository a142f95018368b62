"""Force laws as objects (a contact in, a ContactForce out), and the loads: ligament laws, the pulse,
point loads."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import quad

from simclient.contact import DAMPING, Contact, ContactStatus, DoubleLayer, HertzianLaw, make_law
from simclient.dynamics import BlankevoortLaw, Body, LinearSpring, MultibodySystem, PointLoad, QuadraticLaw, pulse
from simclient.errors import ParameterError
from simclient.geometry import euler_from_axis_angle, layout, rotation_matrix


def _contact(depth: float, normal=(0.0, 0.0, 1.0)) -> Contact:
    """A converged contact of the given indentation along ``normal`` (surface j's outward normal)."""
    n = np.asarray(normal, float) / np.linalg.norm(normal)
    d = np.zeros(layout.CONTACT_SIZE)
    d[layout.OUT_PI:layout.OUT_PI + 3] = [0.1, 0.2, 0.3]
    d[layout.OUT_PJ:layout.OUT_PJ + 3] = np.array([0.1, 0.2, 0.3]) + depth * n
    d[layout.OUT_N:layout.OUT_N + 3] = n
    d[layout.OUT_NI:layout.OUT_NI + 3] = -n
    d[layout.OUT_DEPTH] = depth
    return Contact(ContactStatus.CONVERGED, d)


@pytest.mark.parametrize("name", list(DAMPING))
def test_contact_force_of_every_hertzian_law(name):
    law = make_law(name, 2e9, cr=0.7)
    n = np.array([0.0, 0.6, 0.8])
    k = _contact(2e-5, n)
    v = np.array([0.3, -0.5, -0.4])  # v_i - v_j: approaching (v . n < 0)
    rate = -v @ n
    cf = law.contact_force(k, v, impact_velocity=0.9)
    expect = 2e9 * 2e-5**1.5 * (1 + law.damping * rate / 0.9)
    np.testing.assert_allclose(cf.force, expect * n, rtol=1e-14)
    np.testing.assert_array_equal(cf.point, k.point_i)
    np.testing.assert_array_equal(cf.point_j, k.point_j)
    assert not cf.moment.any()
    assert cf.elastic_energy == pytest.approx(2e9 * 2e-5**2.5 / 2.5, rel=1e-14)
    # power = force . (v_i - v_j); for the elastic part it is -dE/dt = -F_el * rate
    assert cf.power == pytest.approx(expect * (n @ v), rel=1e-14)
    elastic = 2e9 * 2e-5**1.5
    assert cf.power <= -elastic * rate * (1 - 1e-14)  # a dissipative law takes out at least the elastic rate
    # apart: no force, no energy
    gap = law.contact_force(_contact(-1e-6, n), v, 0.9)
    assert not gap.force.any() and gap.elastic_energy == 0.0 and gap.power == 0.0


def test_dissipative_force_never_pulls():
    law = make_law("flores", 1e9, cr=0.3)
    k = _contact(1e-6)
    cf = law.contact_force(k, np.array([0.0, 0.0, 5.0]), impact_velocity=0.1)  # separating fast
    assert not cf.force.any()


def test_double_layer_law():
    K1, K2, h1 = 3e9, 3e10, 4.15e-4
    law = make_law("double-layer", K1, K2=K2, h1=h1)
    assert isinstance(law, DoubleLayer) and law.name == "double-layer"
    hertz = HertzianLaw("hertz", K1)
    for d in np.linspace(1e-6, h1, 7):  # identical to the single layer within the first layer
        assert law.normal_force(d, 0.3, 1.0) == hertz.normal_force(d, 0.3, 1.0)
    # continuous at h1, and its energy is the integral of its force
    assert law.normal_force(h1 * (1 + 1e-12), 0, 1) == pytest.approx(law.normal_force(h1, 0, 1), rel=1e-9)
    for d in (0.5 * h1, h1, 1.7 * h1, 3 * h1):
        assert law.elastic_energy(d) == pytest.approx(quad(lambda x: law.normal_force(x, 0, 1), 0, d,
                                                           points=[h1] if d > h1 else None)[0], rel=1e-9)
    # a second layer ten times stiffer: beyond a few first-layer thicknesses it carries more than one layer
    assert law.normal_force(4 * h1, 0, 1) > hertz.normal_force(4 * h1, 0, 1)
    with pytest.raises(ParameterError, match="K2"):
        make_law("double-layer", K1)
    with pytest.raises(ParameterError, match="h1"):
        make_law("double-layer", K1, K2=K2, h1=-1.0)


@pytest.mark.parametrize("kwargs, match", [({"name": "x", "K": 1e6}, "unknown force law 'x'.*hertz"),
                                           ({"name": "flores", "K": -1.0}, "stiffness K"),
                                           ({"name": "flores", "K": 1e6, "cr": 0.0}, r"\(0, 1\]"),
                                           ({"name": "hunt-crossley", "K": 1e6, "cr": 1.5}, r"\(0, 1\]"),
                                           ({"name": "hertz", "K": 1e6, "zeta": 1}, "unknown parameter")])
def test_bad_law_parameters(kwargs, match):
    with pytest.raises(ParameterError, match=match):
        make_law(**kwargs)


def test_blankevoort_ligament_law():
    k, l_ref, eps_ref, eps_l = 5000.0, 0.03, 0.04, 0.03
    law = BlankevoortLaw.from_reference(k, l_ref, eps_ref, eps_l)
    assert law.l0 == pytest.approx(l_ref / (1 + eps_ref))
    assert law.force(0.9 * law.l0) == 0.0 and law.force(law.l0) == 0.0
    # toe region k eps^2 / (4 eps_l) meets the linear region k (eps - eps_l) at eps = 2 eps_l, with equal slopes
    l_star = law.l0 * (1 + 2 * eps_l)
    h = 1e-9
    below, above = law.force(l_star - h), law.force(l_star + h)
    assert below == pytest.approx(k * eps_l, rel=1e-5) and above == pytest.approx(k * eps_l, rel=1e-5)
    slope_toe = (law.force(l_star - h) - law.force(l_star - 2 * h)) / h
    slope_lin = (law.force(l_star + 2 * h) - law.force(l_star + h)) / h
    assert slope_toe == pytest.approx(k / law.l0, rel=1e-4) and slope_lin == pytest.approx(k / law.l0, rel=1e-4)
    eps = 0.01
    assert law.force(law.l0 * (1 + eps)) == pytest.approx(k * eps**2 / (4 * eps_l))
    eps = 0.1
    assert law.force(law.l0 * (1 + eps)) == pytest.approx(k * (eps - eps_l))
    q = QuadraticLaw(2e6, 0.04)
    assert q.force(0.039) == 0.0 and q.force(0.041) == pytest.approx(2e6 * 1e-6)


@pytest.mark.parametrize("law", [QuadraticLaw(2e6, 0.04), BlankevoortLaw(5000.0, 0.03, 0.03), LinearSpring(3e4, 0.05)],
                         ids=["quadratic", "blankevoort", "linear"])
def test_ligament_laws_store_the_integral_of_their_force(law):
    """energy(l) against the quadrature of force from the slack length (across the toe region and
    its joint with the line for Blankevoort's law; in compression too for the linear spring)."""
    for stretch in (0.9, 1.0, 1.01, 1.05, 1.06, 1.2):
        length = law.l0 * stretch
        expected = quad(law.force, law.l0, length, points=[law.l0 * 1.06], epsabs=1e-14, epsrel=1e-12)[0]
        assert law.energy(length) == pytest.approx(expected, rel=1e-9, abs=1e-15)


def test_pulse_load():
    A, t_d = 50.0, 0.2
    f = pulse(A, t_d)
    assert f(0.0) == 0.0 and abs(f(t_d)) < 1e-12 and f(t_d + 1e-6) == 0.0 and f(-1e-3) == 0.0
    t = np.linspace(0, t_d, 200001)
    values = np.array([f(x) for x in t])
    # the maximum of exp(-4.73 s^2) sin(pi s): pi cot(pi s) = 9.46 s
    from scipy.optimize import brentq

    s_max = brentq(lambda s: math.pi / math.tan(math.pi * s) - 9.46 * s, 0.05, 0.5)
    assert t[np.argmax(values)] == pytest.approx(s_max * t_d, abs=2e-6)
    assert values.max() == pytest.approx(A * math.exp(-4.73 * s_max**2) * math.sin(math.pi * s_max), rel=1e-9)
    with pytest.raises(ParameterError, match="t_d"):
        pulse(A, 0.0)


def test_point_load_accelerates_a_free_body():
    m, J = 2.0, np.diag([0.01, 0.02, 0.03])
    p = euler_from_axis_angle([0.3, -0.2, 1.0], 0.7)
    A = rotation_matrix(p)
    body = Body("b", mass=m, inertia=J, position=np.array([0.1, 0.2, 0.3]), euler=p)
    point, direction = np.array([0.05, 0.0, -0.02]), np.array([0.0, 1.0, 0.0])
    load = PointLoad(body, point, direction, lambda t: 10.0 + t)
    system = MultibodySystem([body], gravity=(0, 0, 0), loads=[load])
    dy = system.rhs(0.5, system.initial_state())
    F = 10.5 * (A @ direction)
    np.testing.assert_allclose(dy[7:10], F / m, rtol=1e-12)  # r'' = F / m
    # J w' = n' (at rest): the moment of the force about the centre, in the body frame
    np.testing.assert_allclose(dy[10:13], np.linalg.solve(J, np.cross(point, 10.5 * direction)), rtol=1e-12)
