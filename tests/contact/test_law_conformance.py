"""What every force law of :data:`LAWS` promises, checked law by law: no force without indentation,
an elastic part that is the derivative of its elastic energy, damping that only dissipates, and a
single impact that rebounds no faster than it came (for the dissipative laws, slower)."""

import math

import numpy as np
import pytest

from simclient.contact import LAWS, make_law

K = 5.5e9  # N/m^1.5, the thesis' ball
DELTAS = np.linspace(1e-7, 6e-5, 25)  # m


#: a law's own parameters (the thesis' double layer: h1 = 0.415 mm, the second layer ten times stiffer)
OWN = {"double-layer": {"K2": 10 * K, "h1": 0.415e-3 / 20}}  # (h1 inside the indentations tried)


@pytest.fixture(params=sorted(LAWS))
def law(request):
    return make_law(request.param, K, 0.7, **OWN.get(request.param, {}))


def test_no_indentation_no_force(law):
    assert law.normal_force(0.0, 0.0, 0.5) == 0.0
    assert law.elastic_energy(0.0) == 0.0


def test_the_elastic_force_is_the_energys_derivative(law):
    """At rest (no approach speed) the force is ``dE/d delta`` (central differences, 1e-6)."""
    for d in DELTAS:
        h = 1e-4 * d
        dE = (law.elastic_energy(d + h) - law.elastic_energy(d - h)) / (2 * h)
        assert law.normal_force(d, 0.0, 0.5) == pytest.approx(dE, rel=1e-6), d


def test_damping_only_dissipates(law):
    """Approaching (delta' > 0) the force is at least the elastic one, receding at most: the damping
    force opposes the motion; and the force never pulls (it is never negative)."""
    for d in DELTAS:
        elastic = law.normal_force(d, 0.0, 0.5)
        approach, recede = law.normal_force(d, 0.3, 0.5), law.normal_force(d, -0.3, 0.5)
        assert approach >= elastic * (1 - 1e-12) >= recede * (1 - 1e-12) >= 0.0, (d, approach, elastic, recede)


def test_one_impact_rebounds_no_faster_than_it_came(law):
    """A 92 g mass striking at 0.5 m/s, the contact integrated alone (RK4, 20000 steps over the
    contact; its error there is below 1e-9): restitution at most 1 (to 1e-6), and below 0.999 for
    the laws that damp."""
    m, v0 = 0.092, 0.5
    if law.n_states:
        pytest.skip("a law with internal states is integrated with its states by the system (tests of ViscoelasticLaw)")

    def accel(d, dd):
        return -law.normal_force(d, dd, v0) / m
    d, v = 0.0, v0
    t_c = 2 * 2.943 * (1.25 * m * v0**2 / K) ** 0.4 / v0  # twice Hertz's contact time
    h = t_c / 20000
    while True:
        k1 = (v, accel(d, v))
        k2 = (v + h / 2 * k1[1], accel(d + h / 2 * k1[0], v + h / 2 * k1[1]))
        k3 = (v + h / 2 * k2[1], accel(d + h / 2 * k2[0], v + h / 2 * k2[1]))
        k4 = (v + h * k3[1], accel(d + h * k3[0], v + h * k3[1]))
        d += h / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0])
        v += h / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1])
        if d < 0 or not math.isfinite(v):
            break
    restitution = -v / v0
    assert restitution <= 1 + 1e-6
    if any(law.normal_force(d, 0.3, v0) > law.normal_force(d, 0.0, v0) for d in DELTAS):  # it damps
        assert restitution < 0.999
