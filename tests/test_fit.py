"""Fitting height fields to noisy samples of known surfaces and to the real tibial insert."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

from conftest import SHARED_DATA
from preprocess.errors import FitError
from preprocess.families import make_family
from preprocess.fit import PlanarParametrization, fit_height_field, load_points
from surfacestore.format import open_table, verify_table

SIGMA = 1e-5  # m: 10 um of measurement noise


def _noisy(h, n=20000, half=0.02, seed=0):
    rng = np.random.default_rng(seed)
    xy = rng.uniform(-half, half, (n, 2))
    z = h(xy[:, 0], xy[:, 1])
    return xy, z, np.column_stack([xy, z + rng.normal(0, SIGMA, n)])


SURFACES = {  # height fields z(x, y) and their gradients
    "ellipsoid_cap": (lambda x, y: -np.sqrt(1 - x**2 / 0.05**2 - y**2 / 0.04**2) * 0.03,
                      lambda x, y: (0.03 * x / 0.05**2 / np.sqrt(1 - x**2 / 0.05**2 - y**2 / 0.04**2),
                                    0.03 * y / 0.04**2 / np.sqrt(1 - x**2 / 0.05**2 - y**2 / 0.04**2))),
    "saddle": (lambda x, y: (x**2 / 0.06 - y**2 / 0.1),
               lambda x, y: (x / 0.03, -y / 0.05)),
    "bumps": (lambda x, y: 0.002 * np.sin(x / 0.004) * np.cos(y / 0.005), None),
}


@pytest.mark.parametrize("name", ["ellipsoid_cap", "saddle"])
def test_fit_noisy_analytic_surfaces(name):
    h, grad = SURFACES[name]
    xy, z_true, pts = _noisy(h)
    par = PlanarParametrization.fit(pts, "z")
    fit = fit_height_field(pts, par, ctrl=(24, 24))
    # the reported residuals match the noise
    assert fit.report["residual_rms_m"] == pytest.approx(SIGMA, rel=0.1)
    assert abs(fit.report["residual_mean_m"]) < 0.1 * SIGMA
    # the fitted surface is closer to the truth than the noise, inside the footprint
    fam = make_family("nurbs", fit.nurbs)
    (a0, a1), (b0, b1) = fit.domain
    # map truth-grid (x, y) to the fit's parameters
    g = np.linspace(-0.018, 0.018, 40)
    X, Y = np.meshgrid(g, g, indexing="ij")
    q = np.column_stack([X.ravel(), Y.ravel(), np.zeros(X.size)]) - par.origin
    a, b = q @ par.e1, q @ par.e2
    s, su, sv = fam.evaluate(a, b)
    # the Greville construction makes the parameters the in-plane coordinates themselves
    np.testing.assert_allclose((s - par.origin) @ par.e1, a, atol=1e-12)
    x = s[:, 0]
    y = s[:, 1]
    dev = s[:, 2] - h(x, y)
    assert np.sqrt(np.mean(dev**2)) < SIGMA / 2 and np.abs(dev).max() < 3 * SIGMA
    n_fit = np.cross(su, sv)
    n_fit /= np.linalg.norm(n_fit, axis=1, keepdims=True)
    gx, gy = grad(x, y)
    n_true = np.column_stack([-gx, -gy, np.ones_like(gx)])
    n_true /= np.linalg.norm(n_true, axis=1, keepdims=True)
    angle = np.degrees(np.arccos(np.clip(np.abs(np.einsum("ij,ij->i", n_fit, n_true)), -1, 1)))
    assert angle.max() < 1.0


def test_fit_grows_control_net_until_tolerance():
    h, _ = SURFACES["bumps"]
    _, _, pts = _noisy(h)
    par = PlanarParametrization.fit(pts, "z")
    fit = fit_height_field(pts, par, tol=1.1 * SIGMA)
    assert fit.report["residual_rms_m"] <= 1.1 * SIGMA
    assert fit.report["control_net"][0] > 8  # grown from 8 x 8


def test_fit_100k_points_60x60_is_fast():
    import time

    h, _ = SURFACES["saddle"]
    _, _, pts = _noisy(h, n=100_000)
    t = time.perf_counter()
    fit = fit_height_field(pts, PlanarParametrization.fit(pts, "z"), ctrl=(60, 60))
    assert fit.report["control_net"] == [60, 60]
    assert time.perf_counter() - t < 30  # a loose bound: the benchmark figure is in the README


def test_bad_inputs(tmp_path):
    empty = tmp_path / "empty.xyz"
    empty.write_text("")
    with pytest.raises(FitError, match="empty.xyz"):
        load_points(empty)
    nan = tmp_path / "nan.xyz"
    nan.write_text("0 0 0\n1 nan 0\n0 1 0\n")
    with pytest.raises(FitError, match="non-finite"):
        load_points(nan)
    line = np.column_stack([np.linspace(0, 1, 50)] * 3) * 0.01
    with pytest.raises(FitError, match="collinear"):
        PlanarParametrization.fit(line)
    few = np.random.default_rng(0).uniform(0, 0.01, (30, 3))
    with pytest.raises(FitError, match="fewer than"):
        fit_height_field(few, PlanarParametrization.fit(few, "z"), ctrl=(8, 8))
    # a closed sphere folds under any planar projection
    rng = np.random.default_rng(1)
    d = rng.normal(size=(5000, 3))
    sphere = 0.02 * d / np.linalg.norm(d, axis=1, keepdims=True)
    with pytest.raises(FitError, match="folds.*cylindrical or spherical"):
        fit_height_field(sphere, PlanarParametrization.fit(sphere, "z"))
    with pytest.warns(UserWarning, match="suspicious"):
        big = tmp_path / "big.xyz"
        np.savetxt(big, rng.uniform(0, 60, (100, 3)))
        load_points(big, "mm")
        load_points(big, "m")


INSERT = SHARED_DATA / "grand-challenge-dm" / "tibial-insert-contact.stl"


@pytest.mark.skipif(not INSERT.exists(), reason="../shared/data/grand-challenge-dm is absent")
def test_real_tibial_insert_default_fit(tmp_path):
    out = tmp_path / "insert.zarr"
    r = subprocess.run([sys.executable, "-m", "preprocess.cli", "fit", str(INSERT), "--out", str(out), "--json",
                        "--residual-map", str(tmp_path / "res.png")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    import json

    report = json.loads(r.stdout)["report"]
    assert report["residual_rms_m"] <= 0.02e-3 and report["residual_p99_m"] <= 0.1e-3
    t = open_table(out)
    assert t.header.source["fit"]["residual_rms_m"] == pytest.approx(report["residual_rms_m"])
    assert verify_table(out).ok
    centre = t.read_record(t.header.n_rec_u // 2, t.header.n_rec_v // 2)[0, 0]
    assert centre[6] > 0.9  # outward normal +y, as the mesh's faces
    assert (tmp_path / "res.png").stat().st_size > 1000
    assert math.isfinite(report["residual_max_m"])
