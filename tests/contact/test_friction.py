"""Friction at point contacts: the Stribeck curve, the force it adds, and motions with closed forms
(a ball sliding until it rolls, a ball rolling down an incline)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq

from simclient.contact import Contact, ContactStatus, Friction, make_law
from simclient.errors import ParameterError
from simclient.geometry import layout

M, R, G = 0.092, 0.02, 9.81  # the sample ball: kg, m; m/s^2
K = 5.5e9  # N/m^1.5: Hertz, steel on steel


def test_the_friction_coefficient_follows_its_curve():
    """0 at rest, mu_s at v_t, halfway down to mu_d at 2 v_t, mu_d from 3 v_t on, plus the viscous
    term; rising through the stiction range; value, slope and curvature continuous where its pieces
    join (the quintic steps' zero end derivatives)."""
    f = Friction(0.5, 0.3, viscous=0.2, transition_velocity=2e-3)
    vt = 2e-3
    assert f.coefficient(0.0) == 0.0
    assert f.coefficient(vt) == pytest.approx(0.5 + 0.2 * vt, rel=1e-14)
    assert f.coefficient(2 * vt) == pytest.approx(0.4 + 0.2 * 2 * vt, rel=1e-14)
    assert f.coefficient(3 * vt) == pytest.approx(0.3 + 0.2 * 3 * vt, rel=1e-14)
    assert f.coefficient(1.7) == pytest.approx(0.3 + 0.2 * 1.7, rel=1e-14)
    rising = [f.coefficient(s) for s in np.linspace(0, vt, 50)]
    assert np.all(np.diff(rising) > 0)
    h = 1e-7
    for joint in (vt, 3 * vt):
        below = [f.coefficient(joint - k * h) for k in (0, 1, 2)]
        above = [f.coefficient(joint + k * h) for k in (0, 1, 2)]
        slope_below, slope_above = (below[0] - below[1]) / h, (above[1] - above[0]) / h
        assert slope_below == pytest.approx(slope_above, abs=1e-3)
        curv_below = (below[0] - 2 * below[1] + below[2]) / h**2
        curv_above = (above[0] - 2 * above[1] + above[2]) / h**2
        assert abs(curv_below - curv_above) < 1e-2 * 0.2 / vt**2


def test_the_friction_force_opposes_the_slip_at_the_middle_of_the_indentation():
    n = np.array([0.0, 0.6, 0.8])
    d = np.zeros(layout.CONTACT_SIZE)
    d[layout.OUT_PI:layout.OUT_PI + 3] = [0.1, 0.2, 0.3]
    d[layout.OUT_PJ:layout.OUT_PJ + 3] = np.array([0.1, 0.2, 0.3]) + 2e-5 * n
    d[layout.OUT_N:layout.OUT_N + 3] = n
    d[layout.OUT_DEPTH] = 2e-5
    k = Contact(ContactStatus.CONVERGED, d)
    law = make_law("hertz", 2e9)
    v = np.array([0.3, -0.5, -0.1])  # v_i - v_j
    normal = law.contact_force(k, v, 0.0)
    f = Friction(0.4, 0.25)
    cf = f.apply(normal, k, v)
    fn = 2e9 * 2e-5**1.5
    slip = v - (v @ n) * n
    np.testing.assert_allclose(cf.force - normal.force, -0.25 * fn * slip / np.linalg.norm(slip), rtol=1e-13)
    np.testing.assert_allclose(cf.point, 0.5 * (k.point_i + k.point_j), rtol=1e-15)
    np.testing.assert_array_equal(cf.point, cf.point_j)  # one point: no net moment on the pair
    assert cf.power == pytest.approx(normal.power - 0.25 * fn * np.linalg.norm(slip), rel=1e-13)
    apart = law.contact_force(Contact(ContactStatus.CONVERGED, np.where(np.arange(len(d)) == layout.OUT_DEPTH,
                                                                            -1e-6, d)), v, 0.0)
    assert not f.apply(apart, k, v).force.any()  # no normal force, no friction


@pytest.mark.parametrize("kwargs, key", [
    ({"static": -0.1, "dynamic": 0.0}, "static"),
    ({"static": 0.3, "dynamic": math.nan}, "dynamic"),
    ({"static": 0.3, "dynamic": 0.2, "viscous": -1.0}, "viscous"),
    ({"static": 0.3, "dynamic": 0.2, "transition_velocity": 0.0}, "transition_velocity"),
    ({"static": 0.2, "dynamic": 0.3}, "below the dynamic"),
    ({"static": "0.3", "dynamic": 0.2}, "static"),
])
def test_bad_friction_is_refused(kwargs, key):
    with pytest.raises(ParameterError, match=key):
        Friction(**kwargs)


def test_a_contact_model_takes_only_a_friction(sample_tables):
    system, ball, _ = _ball_on_ground(sample_tables, Friction(0.3, 0.3))
    from simclient.dynamics import ContactModel

    with pytest.raises(ParameterError, match="friction must be a Friction"):
        ContactModel("c", system.contacts[0].i, system.contacts[0].j, make_law("hertz", K), friction=0.3)


def _ball_on_ground(tables, friction, velocity=(0.0, 0.0, 0.0), gravity=(0.0, 0.0, -G)):
    """The sample ball (``ball_333``) resting on the sample ground at Hertz's static indentation
    under ``gravity``'s normal part, moving at ``velocity`` (m/s)."""
    from simclient.dynamics import Body, ContactModel, MultibodySystem, Surface
    from simclient.geometry import StorageWindow
    from simclient.io import open_surface

    depth = (M * -gravity[2] / K) ** (2 / 3)
    ball = Body("ball", mass=M, inertia=np.eye(3) * 0.4 * M * R * R, position=np.array([-0.05, 0.0, R - depth]),
                velocity=np.array(velocity, float))
    contact = ContactModel("ball-ground",
                           Surface(ball, StorageWindow(open_surface(tables / "ball_333.zarr"), (3, 3), centre=(0, 0))),
                           Surface(Body("ground", fixed=True),
                                   StorageWindow(open_surface(tables / "ground.zarr"), (3, 5), centre=(0.0, -0.05))),
                           make_law("hertz", K), friction=friction)
    return MultibodySystem([ball, contact.j.body], [contact], gravity=gravity), ball, contact


def _kinetic(y):
    v, w = y[7:10], y[10:13]
    return 0.5 * M * v @ v + 0.5 * 0.4 * M * R * R * w @ w


@pytest.mark.parametrize("method", ["DOP853-jit", "DOP853"])
def test_a_sliding_ball_rolls_at_five_sevenths_of_its_speed(sample_tables, method):
    """A ball set sliding at v0 without spin decelerates at mu g, spins up at 5 mu g / 2R, and rolls
    from t = 2 v0 / (7 mu g) at 5/7 v0, having lost 2/7 of its kinetic energy (the closed form of a
    rigid ball, whatever mu). Compiled and Python right-hand sides agree."""
    from simclient.dynamics import simulate

    mu, v0 = 0.3, 0.3
    system, _, contact = _ball_on_ground(sample_tables, Friction(mu, mu), velocity=(v0, 0.0, 0.0))
    res = simulate(system, 0.04, method=method, rtol=1e-8, atol=1e-12)
    assert res.success, res.message
    assert res.events == [{"t": 0.0, "contact": "ball-ground", "type": "onset",
                           "impact_velocity": res.events[0]["impact_velocity"]}]  # in contact throughout
    rolls = 2 * v0 / (7 * mu * G)
    for t in (0.25 * rolls, 0.5 * rolls, 0.75 * rolls):  # sliding
        y = res.sol(t)
        assert y[7] == pytest.approx(v0 - mu * G * t, rel=1e-6)
        assert y[11] == pytest.approx(5 * mu * G * t / (2 * R), rel=1e-5)  # about the ball's y axis (no turn yet)
    end = res.y[:, -1]
    assert end[7] == pytest.approx(5 / 7 * v0, rel=1e-4)
    assert np.linalg.norm(end[10:13]) * R == pytest.approx(end[7], rel=2e-4)  # rolling (slip < 2e-4 v)
    assert _kinetic(res.y[:, 0]) - _kinetic(end) == pytest.approx(2 / 7 * _kinetic(res.y[:, 0]), rel=1e-4)
    if method == "DOP853":
        compiled = simulate(_ball_on_ground(sample_tables, Friction(mu, mu), velocity=(v0, 0.0, 0.0))[0], 0.04,
                            method="DOP853-jit", rtol=1e-8, atol=1e-12)
        np.testing.assert_allclose(compiled.y[:, -1], end, rtol=1e-9, atol=1e-10)


def test_a_ball_rolls_down_an_incline_at_five_sevenths_of_g_sin_theta(sample_tables):
    """On a 20 deg incline (gravity tilted) with mu = 0.3 > 2/7 tan(theta), a ball let go at rest
    rolls: it accelerates at 5/7 g sin(theta), held by 2/7 m g sin(theta) of static friction, for
    which it creeps at the slip speed where the Stribeck curve gives mu(s) = 2/7 tan(theta)."""
    from simclient.dynamics import simulate

    theta, mu = math.radians(20.0), 0.3
    gravity = (G * math.sin(theta), 0.0, -G * math.cos(theta))
    friction = Friction(mu, mu)
    system, _, contact = _ball_on_ground(sample_tables, friction, gravity=gravity)
    res = simulate(system, 0.04, method="DOP853-jit", rtol=1e-9, atol=1e-13)
    assert res.success, res.message
    t1, t2 = 0.02, 0.04
    a = (res.sol(t2)[7] - res.sol(t1)[7]) / (t2 - t1)
    assert a == pytest.approx(5 / 7 * G * math.sin(theta), rel=1e-5)
    creep = brentq(lambda s: friction.coefficient(s) - 2 / 7 * math.tan(theta), 1e-9, 1e-3)
    found = system.place_windows(res.y[:, -1])[0]  # (the ground does not move: v_i is the slip)
    slip = system.velocity_at(contact.i.body, 0.5 * (found.point_i + found.point_j))
    assert slip[0] == pytest.approx(creep, rel=1e-3)
    assert abs(slip[1]) < 1e-12 and abs(slip[2]) < 1e-9


def test_the_bouncing_ball_with_friction_rolls_at_five_sevenths(sample_tables):
    """``simclient run bouncing-ball --friction 0.3 --ball ball_rolling --t-end 0.8``: the first impact
    (its friction impulse up to 0.6 m v_impact, seven times what stopping the slip takes) leaves the
    ball rolling at 5/7 of its 0.15 m/s (the rigid ball's closed form, within 1e-3: the compliant
    ball rolls on a radius some micrometres short of R), and it rolls on unchanged through seven more
    impacts while its contact point goes round the periodic table past its seam; the impacts are
    Hertz's, as without friction."""
    from simclient.scenarios.bouncing_ball import BallParams, bouncing_ball, hertz_drop

    p = BallParams(friction=0.3, t_end=0.8)
    s = bouncing_ball(str(sample_tables / "ball_rolling.zarr"), str(sample_tables / "ground.zarr"), p)
    assert s["status"] == "ok" and s["impacts"] == 8
    r = s["rolling"]
    assert r["vx_after_first_impact_m_s"] == pytest.approx(5 / 7 * 0.15, rel=1e-3)
    assert r["spin_after_first_impact_rad_s"] * R == pytest.approx(r["vx_after_first_impact_m_s"], rel=1e-3)
    assert r["vx_final_m_s"] == pytest.approx(r["vx_after_first_impact_m_s"], rel=1e-6)
    np.testing.assert_allclose(s["max_indentation_m"], hertz_drop(p)["max_indentation"], rtol=2e-3)
    assert s["energy_drift"] < 1e-7
    window = s.artifacts["contact"].i.window
    assert max(b.rj1 for _, b in window.moves) > window.header.n_rec_v  # (past the seam)
    with pytest.raises(ParameterError, match="friction must be a finite number >= 0"):
        BallParams(friction=-0.1)


@pytest.mark.parametrize("method", ["Radau", "BDF"])
def test_the_implicit_methods_take_the_frictional_impact(sample_tables, method):
    """The same run's first 0.12 s by the implicit methods, which estimate Jacobians: the ball leaves
    its first impact rolling as it does by DOP853-jit (within 1e-8). (With scipy's own estimate, whose
    step for the ball's position, on which nothing depends over a flat ground, grew tenfold at each
    estimate, both failed at the first impact: the ball put 0.34 m off the ground table.)"""
    from simclient.scenarios.bouncing_ball import BallParams, bouncing_ball

    ball, ground = str(sample_tables / "ball_rolling.zarr"), str(sample_tables / "ground.zarr")
    runs = {m: bouncing_ball(ball, ground, BallParams(friction=0.3, t_end=0.12, method=m)) for m in (method, "DOP853-jit")}
    assert runs[method]["status"] == "ok", runs[method]["message"]
    assert runs[method]["rolling"]["vx_after_first_impact_m_s"] == pytest.approx(
        runs["DOP853-jit"]["rolling"]["vx_after_first_impact_m_s"], rel=1e-8)


@pytest.mark.slow
def test_the_rolling_balls_saved_histories(sample_tables, tmp_path):
    """``--out`` of the rolling ball: its histories carry the spin, which meets vx / R once it rolls,
    and every impact's indentation, read after the run from windows placed back along 2 rad of
    rolling, is Hertz's (the placements from the run's end reached the contact points by
    continuation)."""
    from simclient.scenarios import Tables, get_scenario
    from simclient.scenarios.bouncing_ball import hertz_drop

    cls = get_scenario("bouncing-ball")
    p = cls.Params(friction=0.3, t_end=0.4)
    s = cls().run(p, Tables(folder=str(sample_tables), overrides={"ball": "ball_rolling"}), out=tmp_path)
    h = np.load(tmp_path / "bouncing_ball.npz")
    rolling = h["t"] > 0.06
    np.testing.assert_allclose(h["angular_velocity"][rolling, 1] * R, h["velocity"][rolling, 0], rtol=1e-3)
    peaks = [h["indentation"][(h["t"] > t) & (h["t"] < t + 3e-4)].max() for t in s["impact_times_s"]]
    np.testing.assert_allclose(peaks, hertz_drop(p)["max_indentation"], rtol=2e-3)
    assert (tmp_path / "bouncing_ball.png").stat().st_size > 0


def test_a_long_rolling_contact_over_waves_reports_its_own_indentation(sample_tables, tmp_path):
    """The ball set down rolling (from a wave's zero crossing) over a wavy ground (waves 0.1 mm high,
    50 mm long) stays in one contact across many ground records: its largest indentation is at
    least the quasi-static one in a trough, where the load is m (g + v^2 kappa) (kappa = A k^2 the
    trough's curvature, v = 5/7 of 1 m/s), (m (g + v^2 kappa) / K)^(2/3) for Hunt-Crossley's
    K delta^1.5, and at most 6 % more (the landing's ringing). Before, the report probed that contact
    on the windows of its start: 3.05e-7 m, short of the troughs' 3.16e-7 m (1.3 mm on a longer run)."""
    from preprocess.build import build_surface, parse_surface
    from simclient.scenarios.bouncing_ball import BallParams, bouncing_ball

    A, L = 1e-4, 0.05
    build_surface(parse_surface("waves", {"family": "waves", "amplitude": A, "wavelength": L,
                                          "u_range": [-0.05, 0.05], "v_range": [-0.1, 0.1], "grid": [167, 333],
                                          "record": [9, 9], "placement": {"rotation_axis": [0, 0, 1],
                                                                          "rotation_deg": -90}}), tmp_path)
    p = BallParams(friction=0.3, vx=1.0, gap=1e-6, law="hunt-crossley", cr=0.5, t_end=0.12, x0=-0.05)
    s = bouncing_ball(str(sample_tables / "ball_rolling.zarr"), str(tmp_path / "waves.zarr"), p)
    assert s["status"] == "ok", s["message"]
    assert s["contact_durations_s"][-1] > 0.1 and s["windows"]["ground"]["updates"] > 5
    trough = (p.mass * (9.81 + (5 / 7) ** 2 * A * (2 * math.pi / L) ** 2) / p.K) ** (2 / 3)
    assert 0.99 * trough <= s["max_indentation_m"][-1] <= 1.06 * trough
