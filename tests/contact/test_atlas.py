"""A surface given by an atlas of tables (AtlasPair): a ball rolls about any axis, its contact point
moving from chart to chart before it reaches a chart's pole."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from simclient.contact import AtlasPair, ContactPair, Friction, chart_margin, make_law
from simclient.dynamics import Body, ContactModel, MultibodySystem, Surface, compile_system, simulate
from simclient.errors import ParameterError
from simclient.geometry import StorageWindow
from simclient.io import open_surface

R, M, G, K = 0.02, 0.092, 9.81, 5.5e9
STATIC = (M * G / K) ** (2 / 3)  # m: Hertz's static indentation of the resting ball


def _sphere(pole, meridian, radius: float = R) -> dict:
    return {"family": "sphere", "radius": radius, "pole_axis": pole, "zero_meridian": meridian,
            "u_range_deg": [-90, 90], "v_range_deg": [-180, 180], "grid": [333, 333], "record": [37, 37],
            "periodic_v": True}


@pytest.fixture(scope="module")
def charts(tmp_path_factory):
    """The sample ball's sphere twice, periodic in v, its poles on x and on z (one surface frame),
    and a slightly larger sphere: table paths by name."""
    from preprocess.build import build_surface
    from preprocess.spec import parse_surface

    out = tmp_path_factory.mktemp("atlas")
    for name, definition in (("poles_x", _sphere([1, 0, 0], [0, 0, -1])),
                             ("poles_z", _sphere([0, 0, 1], [1, 0, 0])),
                             ("larger", _sphere([0, 0, 1], [1, 0, 0], 1.05 * R))):
        build_surface(parse_surface(name, definition), out)
    return {name: out / f"{name}.zarr" for name in ("poles_x", "poles_z", "larger")}


def _windows(charts, names):
    return [StorageWindow(open_surface(charts[n]), (3, 3), centre=(0, 0)) for n in names]


def _ground(sample_tables, x0: float, y0: float) -> StorageWindow:
    return StorageWindow(open_surface(sample_tables / "ground.zarr"), (3, 5), centre=(-y0, x0))


def _rolling_ball(charts, sample_tables, names, velocity, euler=(1.0, 0, 0, 0), start=(-0.09, 0.0)):
    """The sample ball resting on the sample ground (Hertz, mu 0.3), set sliding at ``velocity``
    (m/s, horizontal) with its tables ``names`` (an atlas where there are two)."""
    ball = Body("ball", mass=M, inertia=np.eye(3) * 0.4 * M * R * R, position=np.array([*start, R - STATIC]),
                euler=np.array(euler, float), velocity=np.array([*velocity, 0.0]))
    ws, ground = _windows(charts, names), _ground(sample_tables, *start)
    pair = AtlasPair(ws, ground, name="ball-ground") if len(ws) > 1 else None
    contact = ContactModel("ball-ground", Surface(ball, ws[0]), Surface(Body("ground", fixed=True), ground),
                           make_law("hertz", K), friction=Friction(0.3, 0.3), pair=pair)
    return MultibodySystem([ball, contact.j.body], [contact], gravity=(0, 0, -G)), contact


@pytest.mark.parametrize("method", ["DOP853-jit", "DOP853"])
@pytest.mark.parametrize("velocity, euler, start", [
    ((0.7, 0.0), (1.0, 0, 0, 0), (-0.09, 0.0)),  # rolling about y: the contact point runs through both charts' poles
    ((0.6, 0.3), tuple(Rotation.from_rotvec([0.4, -1.1, 0.7]).as_quat(scalar_first=True)), (-0.09, -0.03)),
], ids=["through-the-poles", "oblique"])
@pytest.mark.slow
def test_a_ball_rolls_about_any_axis_on_an_atlas(charts, sample_tables, velocity, euler, start, method):
    """Set sliding with friction, the ball rolls from the first few centimetres on at 5/7 of its
    first speed (closed form, within 1e-5), turning at speed / R about the horizontal axis across
    its travel, at its static height (within 1e-10 m) and with one energy wherever its states are
    placed again afterwards (1e-8), its contact point moving from chart to chart; on the poles-x
    chart alone the run through the poles stops at the first, saying so. Compiled (the chart
    chosen at accepted steps) and in Python (at every detection) alike, the contact point never
    found nearer a chart's edge than 0.95 of the margin (0.12 before the compiled path chose)."""
    system, contact = _rolling_ball(charts, sample_tables, ["poles_x", "poles_z"], velocity, euler, start)
    assert compile_system(system)[0] is not None
    res = simulate(system, 0.3, method=method, rtol=1e-8, atol=1e-12)
    assert res.success, res.message
    v0 = np.hypot(*velocity)
    end = res.y[:, -1]
    speed = np.hypot(end[7], end[8])
    assert speed == pytest.approx(5 / 7 * v0, rel=1e-5)
    assert end[7] * velocity[1] - end[8] * velocity[0] == pytest.approx(0.0, abs=1e-6 * v0 * v0)  # (its first direction)
    spin = Rotation.from_quat(end[3:7], scalar_first=True).apply(end[10:13])  # (rad/s, global)
    across = np.array([-velocity[1], velocity[0], 0.0]) / v0  # z x the direction of travel
    np.testing.assert_allclose(spin, across * speed / R, rtol=0, atol=1e-5 * speed / R)
    rolling = res.t > 0.07
    assert np.abs(res.y[2, rolling] - res.y[2, 0]).max() < 1e-10
    assert contact.pair.switches >= 2
    assert contact.pair.closest_margin > 0.95 * contact.pair.margin  # (moved on at the margin, not nearer the pole)
    energies = []
    for t in (0.3, 0.1, 0.3, 0.2, 0.08, 0.15):
        y = res.y[:, -1] if t == 0.3 else res.sol(t)
        found = system.place_windows(y)[0]
        assert found.converged
        assert found.indentation == pytest.approx(STATIC, rel=1e-3)
        energies.append(system.energy(y))
    np.testing.assert_allclose(energies, energies[0], rtol=1e-8)
    if euler == (1.0, 0, 0, 0):
        one, _ = _rolling_ball(charts, sample_tables, ["poles_x"], velocity)
        res = simulate(one, 0.3, method=method, rtol=1e-8, atol=1e-12)
        assert not res.success and "singular point of table i" in res.message


def test_an_atlas_finds_the_contact_of_a_ball_in_any_orientation(charts, sample_tables):
    """The ball 10 um into the ground, turned every way (60 random turns, the first two with a
    pole of the poles-x chart at the bottom): the contact is the sphere's (indentation within 1e-10
    m, normal +z, the ball's lowest point), found on a chart where it lies at least the margin
    inside, one by one and along the turns in one call; the poles-x chart alone fails at its pole."""
    depth, centre = 1e-5, np.array([0.01, 0.005, R - 1e-5])
    turns = [Rotation.from_euler("y", sign * 90, degrees=True) for sign in (1, -1)]
    turns += list(Rotation.random(58, random_state=7))
    ground = _ground(sample_tables, 0.01, 0.005)
    pair = AtlasPair(_windows(charts, ["poles_x", "poles_z"]), ground)
    alone = ContactPair(_windows(charts, ["poles_x"])[0], _ground(sample_tables, 0.01, 0.005))
    for turn in turns:
        A = turn.as_matrix()
        k = pair.place(A, centre, np.eye(3), np.zeros(3), strict=True)
        assert k.indentation == pytest.approx(depth, abs=1e-10)
        np.testing.assert_allclose(k.normal, [0, 0, 1], atol=1e-8)
        np.testing.assert_allclose(k.point_i, centre - [0, 0, R], atol=1e-9)
        assert chart_margin(pair.wi, *k.params[:2]) >= pair.margin
    assert pair.switches >= 10
    # along the turns in one call (detect_many, pose by pose on an atlas), the same contacts
    many = pair.detect_many(np.array([turn.as_matrix() for turn in turns]), centre, np.eye(3), np.zeros(3))
    assert many.converged.all()
    np.testing.assert_allclose(many.indentation, depth, rtol=0, atol=1e-10)
    np.testing.assert_allclose(many.point_i, np.broadcast_to(centre - [0, 0, R], (len(turns), 3)), atol=1e-9)
    k = alone.place(turns[0].as_matrix(), centre, np.eye(3), np.zeros(3))
    assert not k.converged  # (at the pole its Jacobian is singular)


def test_chart_margin_counts_the_edges_that_are_edges(charts, sample_tables):
    w = _windows(charts, ["poles_x"])[0]
    assert chart_margin(w, 0.0, 3.0) == pytest.approx(0.5)
    assert chart_margin(w, math.pi / 2, 0.0) == pytest.approx(0.0, abs=1e-12)
    assert chart_margin(w, -math.pi / 4, 100.0) == pytest.approx(0.25)  # (v periodic: no edge)
    plane = _ground(sample_tables, 0.0, 0.0)  # u in [-0.05, 0.05], v in [-0.1, 0.1] (m)
    assert chart_margin(plane, 0.0, 0.09) == pytest.approx(0.05)


def test_bad_atlases_are_refused(charts, sample_tables):
    ground = _ground(sample_tables, 0.0, 0.0)
    with pytest.raises(ParameterError, match="at least two charts"):
        AtlasPair(_windows(charts, ["poles_x"]), ground)
    with pytest.raises(ParameterError, match="margin 0.5 must lie in"):
        AtlasPair(_windows(charts, ["poles_x", "poles_z"]), ground, margin=0.5)
    with pytest.raises(ParameterError, match="not one surface in one frame"):
        AtlasPair(_windows(charts, ["poles_x", "larger"]), ground)
    ws = _windows(charts, ["poles_x"]) + [StorageWindow(open_surface(charts["poles_z"]), (3, 3), "bilinear")]
    with pytest.raises(ParameterError, match="one interpolation"):
        AtlasPair(ws, ground)


def test_the_bouncing_ball_rolls_through_its_tables_pole_on_an_atlas(sample_tables):
    """``simclient run bouncing-ball --ball ball_rolling_x --atlas --ball-chart ball_rolling
    --friction 0.3 --vx 0.3``: bouncing and rolling about y, the ball's contact point runs through
    the poles of ``ball_rolling_x``. On the atlas the run is the one on ``ball_rolling`` alone (whose
    pole axis is the rolling axis: a second method) within 1e-7; on ``ball_rolling_x`` alone it
    stops at the pole."""
    from simclient.scenarios.bouncing_ball import BallParams, BouncingBall, bouncing_ball

    p = BallParams(friction=0.3, vx=0.3, t_end=0.4, atlas=True)
    assert BouncingBall().table_names(p)["ball_chart"] == "ball_rolling"
    assert "ball_chart" not in BouncingBall().table_names(BallParams())
    tables = {name: str(sample_tables / f"{name}.zarr") for name in ("ball_rolling_x", "ball_rolling", "ground")}
    atlas = bouncing_ball(tables["ball_rolling_x"], tables["ground"], p, chart=tables["ball_rolling"])
    alone = bouncing_ball(tables["ball_rolling"], tables["ground"], p)
    assert atlas["status"] == alone["status"] == "ok", atlas["message"]
    assert atlas["chart_switches"] >= 1 and atlas["tables"]["ball_chart"] == "ball_rolling"
    assert atlas["impacts"] == alone["impacts"] == 4
    for key in ("impact_times_s", "max_indentation_m", "separation_velocities_m_s"):
        np.testing.assert_allclose(atlas[key], alone[key], rtol=1e-7, err_msg=key)
    for key in ("vx_final_m_s", "spin_after_first_impact_rad_s"):
        assert atlas["rolling"][key] == pytest.approx(alone["rolling"][key], rel=1e-7), key
    assert atlas["energy_drift"] < 1e-7
    pole = bouncing_ball(tables["ball_rolling_x"], tables["ground"], p)
    assert pole["status"] == "failed" and "singular point of table i" in pole["message"]
