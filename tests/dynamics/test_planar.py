"""Planar dynamics and planar contact against closed forms: a pendulum on a revolute joint (its
exact period, energy, constraint drift), a disc grazing a post within one long step, profile tables
of circles against the circles' exact contact, and the polar-profile family."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import ellipk

from preprocess.build import build_surface, parse_surface
from preprocess.families import make_family
from simclient.contact import CirclePair, ProfilePair, make_law, planar_pose
from simclient.dynamics import PlanarBody, PlanarContact, PlanarSystem, ProfileSurface, Revolute2D, simulate
from preprocess.errors import DefinitionError
from simclient.geometry import StorageWindow
from simclient.errors import ParameterError
from simclient.io import open_surface

G = 9.81


def test_pendulum_period_energy_and_drift():
    """A rod pendulum (m, J about its centre, pivot at distance l) released at 60 deg: the period
    4 K(sin(a/2)) / w0 with w0^2 = m g l / (J + m l^2), energy conserved, the joint closed."""
    m, J, l, a = 2.0, 0.01, 0.3, math.radians(60)
    ground = PlanarBody("ground", fixed=True)
    rod = PlanarBody("rod", mass=m, inertia=J, position=np.array([l * math.sin(a), -l * math.cos(a)]),
                     angle=a)  # the rod's frame: its pivot at (0, l), so angle 0 hangs straight down
    joint = Revolute2D(ground, np.zeros(2), rod, np.array([0.0, l]))
    system = PlanarSystem([ground, rod], constraints=[joint], gravity=(0.0, -G))
    assert system.assemble() < 1e-12
    w0 = math.sqrt(m * G * l / (J + m * l * l))
    period = 4 * ellipk(math.sin(a / 2) ** 2) / w0
    res = simulate(system, period, rtol=1e-11, atol=1e-13)
    assert res.success, res.message
    y_end = res.y[:, -1]
    assert y_end[2] == pytest.approx(a, abs=1e-6)  # back where it started after one period
    e0 = system.energy(res.y[:, 0])
    assert max(abs(system.energy(y) - e0) for y in res.y.T) <= 1e-8 * abs(e0)
    assert max(system.constraint_residual(y, t) for t, y in zip(res.t, res.y.T)) <= 1e-8


def test_a_body_on_springs_keeps_its_energy():
    """A disc hung from a fixed point by a linear spring and an off-centre quadratic ligament, let go
    swinging and spinning under gravity: the springs' stored energy (PlanarSystem.energy counts the
    loads'), with the kinetic and gravitational, stays constant within 1e-9; their sum without it
    swings by more than a tenth of it."""
    from simclient.dynamics import Ligament, LinearSpring, QuadraticLaw

    ground = PlanarBody("ground", fixed=True)
    disc = PlanarBody("disc", mass=0.5, inertia=2e-3, position=np.array([0.05, -0.3]), velocity=np.array([0.2, 0.0]),
                      omega=1.0)
    springs = [Ligament("spring", ground, np.zeros(2), disc, np.zeros(2), LinearSpring(200.0, 0.25), tension_only=False),
               Ligament("band", ground, np.array([0.1, 0.0]), disc, np.array([0.02, 0.0]), QuadraticLaw(4e3, 0.3))]
    system = PlanarSystem([ground, disc], gravity=(0.0, -G), loads=springs)
    res = simulate(system, 1.0, rtol=1e-11, atol=1e-13)
    assert res.success, res.message
    energies = [system.energy(y) for y in res.y.T]
    assert np.ptp(energies) <= 1e-9 * max(abs(e) for e in energies)
    stored = []
    for y in res.y.T:
        system.set_state(y)
        stored.append(sum(spring.elastic_energy(system) for spring in springs))
    assert np.ptp(np.array(energies) - stored) > 0.1 * np.ptp(stored) > 0


def test_a_sliding_disc_rolls_at_two_thirds_of_its_speed():
    """A disc (J = m R^2 / 2) set sliding at v0 on a plane with friction mu (Hertz normal force at its
    static indentation): it decelerates at mu g while it spins up, and from t = v0 / (3 mu g) rolls
    at 2/3 v0 (the rigid disc's closed form, whatever mu), without slip."""
    from simclient.contact import Friction

    m, R, mu, v0, K = 0.5, 0.02, 0.3, 0.3, 1e9
    ground = PlanarBody("ground", fixed=True)
    disc = PlanarBody("disc", mass=m, inertia=0.5 * m * R * R, position=np.array([0.0, R - (m * G / K) ** (2 / 3)]),
                      velocity=np.array([v0, 0.0]))
    contact = PlanarContact("slide", ProfileSurface(disc), ProfileSurface(ground), make_law("hertz", K),
                            CirclePair(R, None, "plane"), friction=Friction(mu, mu))
    res = simulate(PlanarSystem([ground, disc], [contact], gravity=(0.0, -G)), 0.07, rtol=1e-9, atol=1e-13)
    assert res.success, res.message
    rolls = v0 / (3 * mu * G)
    for t in (0.25 * rolls, 0.5 * rolls, 0.75 * rolls):
        assert res.sol(t)[3] == pytest.approx(v0 - mu * G * t, rel=1e-6)
    x, y, phi, vx, vy, omega = res.y[:, -1]
    assert vx == pytest.approx(2 / 3 * v0, rel=1e-4)
    assert -omega * R == pytest.approx(vx, rel=2e-4)
    with pytest.raises(ParameterError, match="friction must be a Friction"):
        PlanarContact("slide", ProfileSurface(disc), ProfileSurface(ground), make_law("hertz", K),
                      CirclePair(R, None, "plane"), friction=0.3)


@pytest.mark.parametrize("depth", [1e-3, 1e-6])
@pytest.mark.parametrize("x0", [-0.5, -0.43, -0.2])
def test_a_disc_grazing_a_post_within_one_step_is_caught(x0, depth):
    """A disc (R 20 mm) flies at 1 m/s, without gravity, past a fixed post (R 50 mm), its path
    ``depth`` inside their contact distance: its gap is V-shaped in time (sqrt(b^2 + v^2 (t -
    t_c)^2) - R_i - R_j), and in free flight the steps grow to 0.3-0.7 s, ten to a thousand times
    the time their paths overlap (23.6 ms, 0.75 ms). The contact is found inside the step that holds
    it, at the closed-form time and normal speed; the force is central and elastic (Hertz), so the
    disc leaves at the normal speed it came with and at its speed of 1 m/s, deflected away from the
    post. (Looked for at a step's middle only, it passed through the post in all six cases.)"""
    R_i, R_j, v = 0.02, 0.05, 1.0
    b = R_i + R_j - depth
    disc = PlanarBody("disc", mass=0.1, inertia=2e-5, position=np.array([x0, b]), velocity=np.array([v, 0.0]))
    post = PlanarBody("post", fixed=True)
    contact = PlanarContact("graze", ProfileSurface(disc), ProfileSurface(post), make_law("hertz", 1e9),
                            CirclePair(R_i, R_j, "convex"))
    res = simulate(PlanarSystem([disc, post], [contact], gravity=(0.0, 0.0)), 1.0)
    assert res.success, res.message
    assert [e["type"] for e in res.events] == ["onset", "separation"]
    onset, separation = res.events
    half_chord = math.sqrt((R_i + R_j) ** 2 - b * b)  # (m) the path's half length inside the contact distance
    assert onset["t"] == pytest.approx((-x0 - half_chord) / v, abs=1e-9)
    assert onset["impact_velocity"] == pytest.approx(v * half_chord / (R_i + R_j), rel=1e-6)
    assert separation["separation_velocity"] == pytest.approx(onset["impact_velocity"], rel=1e-5)
    assert np.diff(res.t).max() > 10 * 2 * half_chord / v
    velocity = res.y[3:5, -1]
    assert np.linalg.norm(velocity) == pytest.approx(v, rel=1e-7)
    assert velocity[1] > 0


@pytest.fixture(scope="module")
def circles(tmp_path_factory):
    """Two circle profiles (R 20 mm, the lower half; R 50 mm, the upper half) as tables."""
    out = tmp_path_factory.mktemp("circles")
    for name, R, rng in (("small", 0.02, [-170.0, -10.0]), ("large", 0.05, [10.0, 170.0])):
        build_surface(parse_surface(name, {"family": "polar_profile", "coefficients": [0, 0, 0, R],
                                           "u_range_deg": rng, "v_range": [-0.005, 0.005], "grid": [1601, 3],
                                           "record": [40, 3]}), out)
    return {n: StorageWindow(open_surface(str(out / f"{n}.zarr")), (9, 1)) for n in ("small", "large")}


@pytest.mark.parametrize("dx, dy, angle", [(0.0, 0.069, 0.0), (0.01, 0.0685, 0.3), (-0.02, 0.065, -1.0)])
def test_profile_pair_matches_circles(circles, dx, dy, angle):
    """The 2D common normal on circle tables gives the circles' exact contact (the line of centres,
    indentation R_i + R_j - distance), whatever the small circle's rotation."""
    pair = ProfilePair(circles["small"], circles["large"])
    exact = CirclePair(0.02, 0.05, "convex")
    Ri, ci = planar_pose(dx, dy, angle)
    Rj, cj = planar_pose(0.0, 0.0, 0.0)
    k = pair.detect(Ri, ci, Rj, cj, strict=True)
    e = exact.detect(Ri, ci, Rj, cj)
    assert k.indentation == pytest.approx(0.07 - math.hypot(dx, dy), abs=1e-12)
    assert k.indentation == pytest.approx(e.indentation, abs=1e-12)
    np.testing.assert_allclose(k.normal, e.normal, atol=1e-10)
    np.testing.assert_allclose(k.point_j, e.point_j, atol=1e-12)


def test_polar_profile_through_points_reproduces_a_circle():
    """Points on a circle about the origin: every spline gives r = R and the outward normal."""
    th = np.radians(np.linspace(-150, -30, 28))
    pts = np.column_stack([0.03 * np.cos(th), 0.03 * np.sin(th)])
    u = np.radians(np.linspace(-149, -31, 50))
    for spline in ("not-a-knot", "akima", "shape-preserving"):
        fam = make_family("polar_profile", {"points": pts.tolist(), "spline": spline})
        s, tu, tv = fam.evaluate(u, np.zeros_like(u))
        np.testing.assert_allclose(np.hypot(s[:, 0], s[:, 1]), 0.03, rtol=1e-9)
        n = np.cross(tu, tv)
        n /= np.linalg.norm(n, axis=1)[:, None]
        np.testing.assert_allclose(n[:, :2], s[:, :2] / 0.03, atol=1e-8)  # away from the origin


@pytest.mark.parametrize("params, words", [
    ({"points": [[0.03, 0.0], [0.0, 0.03], [0.02, 0.02], [-0.03, 0.0]], "spline": "akima"}, "increase strictly"),
    ({"points": [[0.03, 0.0], [0.0, 0.03]]}, "at least 4"),
    ({"points": [[0.03, 0.0], [0.02, 0.02], [0.0, 0.03], [-0.03, 0.001]], "spline": "quintic"}, "unknown spline"),
    ({"coefficients": [0, 0, 0.03]}, "4 finite numbers"),
    ({}, "either points"),
])
def test_polar_profile_bad_definitions(params, words):
    with pytest.raises(DefinitionError, match=words):
        make_family("polar_profile", params)
