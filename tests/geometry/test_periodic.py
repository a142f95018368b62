"""Tables periodic in v: a closed surface (a sphere's longitudes) whose windows and contact points
go on across its seam, any number of times."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from preprocess.errors import DefinitionError
from preprocess.spec import parse_surface
from simclient.errors import WindowError
from simclient.geometry import StorageWindow
from simclient.io import CountingSource, open_surface
from surfacestore.errors import TableCorrupt
from surfacestore.format import Header

R = 0.02
BALL = {"family": "sphere", "radius": R, "pole_axis": [1, 0, 0], "zero_meridian": [0, 0, -1],
        "u_range_deg": [-90, 90], "v_range_deg": [-180, 180], "grid": [333, 333], "record": [37, 37]}


@pytest.fixture(scope="module")
def periodic_ball(tmp_path_factory):
    """The sample ball's sphere (``ball_333``'s definition) built periodic in v: a table path."""
    from preprocess.build import build_surface

    out = tmp_path_factory.mktemp("periodic")
    build_surface(parse_surface("ball_periodic", {**BALL, "periodic_v": True}), out)
    return out / "ball_periodic.zarr"


def test_a_periodic_definition_builds_a_table_that_says_so(periodic_ball):
    """333 points over the period, the last one step short of the seam (which is the first);
    the header says so and reads back the same."""
    h = open_surface(periodic_ball).header
    assert h.periodic_v and h.v_npts == 333
    assert h.dv == pytest.approx(2 * math.pi / 333, rel=1e-15)
    assert h.v1 + h.dv == pytest.approx(math.pi, rel=1e-15)
    assert Header.from_dict(h.to_dict()) == h
    assert not Header.from_dict({k: v for k, v in h.to_dict().items() if k != "periodic_v"}).periodic_v


@pytest.mark.parametrize("change, message", [
    ({"v_range_deg": [-180, 90]}, "does not close over v_range"),
    ({"record": [37, 36]}, "whole records in v"),
    ({"periodic_v": "yes"}, "periodic_v must be true or false"),
])
def test_bad_periodic_definitions_are_refused(change, message):
    with pytest.raises(DefinitionError, match=message):
        parse_surface("ball_periodic", {**BALL, "periodic_v": True, **change})


def test_bad_periodic_headers_are_refused(periodic_ball):
    d = open_surface(periodic_ball).header.to_dict()
    with pytest.raises(TableCorrupt, match="periodic_v = 'yes' is not true or false"):
        Header.from_dict({**d, "periodic_v": "yes"})
    d.update(v_npts=332, n_rec_v=9)
    with pytest.raises(TableCorrupt, match="whole records in v"):
        Header.from_dict(d)


@pytest.mark.parametrize("prefetch", [False, True])
def test_a_window_reads_on_across_the_seam(periodic_ball, sample_tables, prefetch):
    """A window moved past the seam (records numbered on past the grid's ninth) interpolates there
    what a window placed at the same point one period back does, and the sphere; a table built
    without periodic_v has an edge there."""
    src = open_surface(periodic_ball)
    w = StorageWindow(src, (3, 3), centre=(0.1, math.pi - 0.01), prefetch=prefetch)
    for v in (math.pi - 0.05, math.pi + 0.001, math.pi + 0.3, 3 * math.pi + 0.05, -math.pi - 0.2):
        w.update(0.1, v)
        here = w.sample(0.1, v)
        back = v - 2 * math.pi * math.floor((v + math.pi) / (2 * math.pi))
        there = StorageWindow(src, (3, 3), centre=(0.1, back)).sample(0.1, back)
        np.testing.assert_allclose(here.point, there.point, rtol=0, atol=1e-16)
        np.testing.assert_allclose(here.normal, there.normal, rtol=0, atol=1e-13)
        assert np.linalg.norm(here.point) == pytest.approx(R, rel=1e-8)
        assert here.normal @ here.point / R == pytest.approx(1.0, abs=1e-8)
    assert w.block.rj0 < 0 and w.updates >= 3
    assert math.isfinite(w.time_to_edge(0.1, -math.pi - 0.2, 0.0, -1.0))  # no table edge to stop at
    closed = StorageWindow(open_surface(sample_tables / "ball_333.zarr"), (3, 3), centre=(0.1, math.pi - 0.01))
    assert closed.time_to_edge(0.1, math.pi - 0.01, 0.0, 1.0) == math.inf
    with pytest.raises(WindowError, match="outside the table's parameter domain"):
        closed.update(0.1, math.pi + 0.05)


def test_a_prefetching_window_reads_nothing_on_its_second_turn(periodic_ball):
    """A window fetching ahead that follows its point round the periodic table twice holds, on
    the second turn, the records of the first (a turn is 9 x 3 records, within what it keeps):
    it reads nothing more, and its points are those of a window placed there afresh."""
    src = CountingSource(open_surface(periodic_ball))
    w = StorageWindow(src, (3, 3), centre=(0.1, -math.pi + 0.01), prefetch=True)
    for turn in range(2):
        for v in np.linspace(-math.pi, math.pi, 200, endpoint=False) + 2 * math.pi * turn:
            w.track(0.1, v)
            w.update(0.1, v)
            time.sleep(0.001)
        if turn == 0:
            time.sleep(0.1)  # (the fetches ahead finish)
            read = src.requests
    assert w.updates >= 16 and src.requests == read, (w.stats, read)
    v = 3 * math.pi - 0.1
    back = StorageWindow(open_surface(periodic_ball), (3, 3), centre=(0.1, math.pi - 0.1))
    np.testing.assert_allclose(w.sample(0.1, v).point, back.sample(0.1, v - 2 * math.pi).point, rtol=0, atol=1e-16)


def _rolling_ball(table, ground):
    """The sample ball with ``table``, its pole axis along y, set sliding along x at 0.7 m/s on the
    sample ground with friction (mu 0.3): it rolls from 68 ms on at 0.5 m/s, its contact point
    going round its longitudes, past the seam at 0.16 s."""
    from simclient.contact import Friction, make_law
    from simclient.dynamics import Body, ContactModel, MultibodySystem, Surface

    m, g, K = 0.092, 9.81, 5.5e9
    ball = Body("ball", mass=m, inertia=np.eye(3) * 0.4 * m * R * R,
                position=np.array([-0.09, 0.0, R - (m * g / K) ** (2 / 3)]), velocity=np.array([0.7, 0.0, 0.0]))
    poles_along_y = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    contact = ContactModel("ball-ground", Surface(ball, StorageWindow(open_surface(table), (3, 3), centre=(0, 0)),
                                                  rotation=poles_along_y),
                           Surface(Body("ground", fixed=True),
                                   StorageWindow(open_surface(ground), (3, 5), centre=(0.0, -0.09))),
                           make_law("hertz", K), friction=Friction(0.3, 0.3))
    return MultibodySystem([ball, contact.j.body], [contact]), contact


@pytest.mark.slow
@pytest.mark.parametrize("method", ["DOP853-jit", "DOP853"])
def test_a_ball_rolls_on_across_its_tables_seam(periodic_ball, sample_tables, method):
    """Rolling for 0.3 s (1.2 turns), the ball's contact point crosses its table's seam and goes on
    to v = 6.65 rad: the ball keeps rolling at 5/7 of its first speed (the closed form, within
    1e-5), its kinetic energy 5/7 of the first, its height its static indentation's (within 1e-10
    m). The table built without periodic_v ends the run at the seam, saying so."""
    from simclient.dynamics import simulate

    system, contact = _rolling_ball(periodic_ball, sample_tables / "ground.zarr")
    res = simulate(system, 0.3, method=method, rtol=1e-8, atol=1e-12)
    assert res.success, res.message
    end = res.y[:, -1]
    assert end[7] == pytest.approx(0.5, rel=1e-5)
    assert end[11] * R == pytest.approx(0.5, rel=1e-5)
    kinetic = 0.5 * 0.092 * end[7] ** 2 + 0.5 * 0.4 * 0.092 * R * R * end[11] ** 2
    assert kinetic == pytest.approx(5 / 7 * 0.5 * 0.092 * 0.7**2, rel=1e-4)
    rolling = res.t > 0.05
    assert np.abs(res.y[2, rolling] - res.y[2, 0]).max() < 1e-10
    assert contact.pair.x[1] > 2 * math.pi and contact.i.window.block.rj0 > 9
    # states asked after the run, in any order: the windows are placed where the ball had turned by
    # up to 5 rad less (before, from the far side of the ball Newton's iterates went to a pole, and
    # the energy lacked its elastic part and more); rolling, the ball keeps its energy
    energies = []
    for t in (0.3, 0.1, 0.3, 0.2, 0.08):
        y = res.y[:, -1] if t == 0.3 else res.sol(t)
        found = system.place_windows(y)[0]
        assert found.converged
        assert found.indentation == pytest.approx((0.092 * 9.81 / 5.5e9) ** (2 / 3), rel=1e-3)
        energies.append(system.energy(y))
    np.testing.assert_allclose(energies, energies[0], rtol=1e-8)
    if method == "DOP853-jit":
        closed, _ = _rolling_ball(sample_tables / "ball_333.zarr", sample_tables / "ground.zarr")
        res = simulate(closed, 0.3, method=method, rtol=1e-8, atol=1e-12)
        assert not res.success and "only a table built periodic in v wraps" in res.message


def test_verify_finds_a_seam_that_does_not_close(sample_tables, tmp_path):
    """``ball_333`` (its grid closed: the last column is the first again) with a header saying
    periodic_v: its first column is no step on from its last, which verify reports, exit 1."""
    import json
    import shutil
    import subprocess
    import sys

    table = tmp_path / "ball_333.zarr"
    shutil.copytree(sample_tables / "ball_333.zarr", table)
    meta = json.loads((table / "zarr.json").read_text())
    meta["attributes"]["surface"]["periodic_v"] = True
    (table / "zarr.json").write_text(json.dumps(meta))
    r = subprocess.run([sys.executable, "-m", "preprocess.cli", "verify", str(table)], capture_output=True, text=True)
    assert r.returncode == 1
    assert "periodic_v, but the seam does not close" in r.stdout + r.stderr


@pytest.mark.parametrize("side", [1.0, -1.0])
def test_an_elastic_foundation_presses_across_the_seam(sample_tables, tmp_path, side):
    """A periodic sphere whose seam is its lowest line (zero meridian up) pressed 0.05 mm into a
    linear layer, its window of 3 x 3 records straddling the seam from either side: the force is
    the closed form pi K R d^2 / h within 1 %, as the sample ball's (seam on top) is, and the two
    agree within 1e-6 (their grids differ by one point in v)."""
    from preprocess.build import build_surface
    from simclient.contact import FoundationContact, LinearLayer, element_grid

    build_surface(parse_surface("seam_down", {**BALL, "zero_meridian": [0, 0, 1], "periodic_v": True}), tmp_path)
    law, d, h = LinearLayer(10e6, 0.3), 5e-5, 0.005
    exact = math.pi * law.aggregate_modulus * R * d**2 / h
    grid = element_grid(open_surface(sample_tables / "ef_layer.zarr"), "layer", (-0.002, 0.002), (-0.002, 0.002),
                        (40, 40), h)
    I3 = np.eye(3)
    forces = []
    for table, v in ((tmp_path / "seam_down.zarr", side * (math.pi - 0.01)), (sample_tables / "ball_333.zarr", 0.0)):
        contact = FoundationContact([grid], open_surface(table), law, extent=(3, 3), guesses={"layer": (0.0, v)})
        forces.append(contact.evaluate(I3, np.zeros(3), I3, np.array([0.0, 0.0, R - d]))["layer"].force)
    window = FoundationContact([grid], open_surface(tmp_path / "seam_down.zarr"), law, extent=(3, 3),
                               guesses={"layer": (0.0, side * (math.pi - 0.01))}).compartments["layer"].window
    assert window.block.rj0 < 0 or window.block.rj1 > 9  # (it straddles the seam)
    assert forces[0][2] == pytest.approx(exact, rel=0.01)
    np.testing.assert_allclose(forces[0], forces[1], rtol=0, atol=1e-6 * forces[1][2])
