"""Surface families against closed forms; NURBS exactness; placement and flip."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from preprocess.build import parse_surface, sample_points
from preprocess.errors import DefinitionError, DegenerateNormal
from preprocess.families import FAMILIES, make_family, nurbs_sphere

rng = np.random.default_rng(1234)

# (family, parameters, u-range and v-range to draw from, implicit residual, closed-form outward normal)
CASES = {
    "plane": ({}, (-1, 1), (-1, 1),
              lambda s: s[..., 2],
              lambda s: np.broadcast_to([0.0, 0.0, 1.0], s.shape)),
    "waves": ({"amplitude": 2e-4, "wavelength": 0.05}, (-0.1, 0.1), (-0.1, 0.1),
              lambda s: s[..., 2] - 2e-4 * np.sin(2 * np.pi * s[..., 1] / 0.05),
              lambda s: _unit(np.stack([0 * s[..., 0], -2e-4 * 2 * np.pi / 0.05 * np.cos(2 * np.pi * s[..., 1] / 0.05),
                                        np.ones_like(s[..., 0])], -1))),
    "sphere": ({"radius": 0.02, "pole_axis": [1, 0, 0], "zero_meridian": [0, 0, -1]}, (-1.4, 1.4), (-3, 3),
               lambda s: np.linalg.norm(s, axis=-1) - 0.02,
               lambda s: s / 0.02),
    "ellipsoid": ({"a": 0.03, "b": 0.02, "c": 0.01, "pole_axis": [0, 1, 1]}, (-1.4, 1.4), (-3, 3),
                  None, None),  # checked in its own frame below
    "cylinder": ({"radius": 0.05}, (0, 6.2), (-0.1, 0.1),
                 lambda s: np.hypot(s[..., 0], s[..., 1]) - 0.05,
                 lambda s: np.stack([s[..., 0], s[..., 1], 0 * s[..., 0]], -1) / 0.05),
    "torus": ({"major_radius": 0.05, "minor_radius": 0.01}, (0, 6.2), (-3, 3),
              lambda s: (np.hypot(s[..., 0], s[..., 1]) - 0.05) ** 2 + s[..., 2] ** 2 - 0.01**2,
              lambda s: _torus_normal(s, 0.05, 0.01)),
    # a polar cubic r = a1 u + a0 (a spiral: its normal is not radial), extruded along z
    "polar_profile": ({"coefficients": [0.0, 0.0, 0.005, 0.03]}, (-2.0, 2.0), (-0.005, 0.005),
                      lambda s: np.hypot(s[..., 0], s[..., 1]) - (0.005 * np.arctan2(s[..., 1], s[..., 0]) + 0.03),
                      lambda s: _unit(np.stack([s[..., 0] + 0.005 * s[..., 1] / np.hypot(s[..., 0], s[..., 1]),
                                                s[..., 1] - 0.005 * s[..., 0] / np.hypot(s[..., 0], s[..., 1]),
                                                0 * s[..., 0]], -1))),
    "elliptic_paraboloid": ({"R1": 0.03, "R2": 0.07}, (-0.02, 0.02), (-0.02, 0.02),
                            lambda s: s[..., 2] - s[..., 0] ** 2 / 0.06 - s[..., 1] ** 2 / 0.14,
                            lambda s: _unit(np.stack([-s[..., 0] / 0.03, -s[..., 1] / 0.07,
                                                      np.ones_like(s[..., 0])], -1))),
    # f = 0.001 + 2 u^2 - 3 u v + 40 u^3 v (coefficients c[i][j] of u^i v^j)
    "height_polynomial": ({"coefficients": [[0.001, 0.0], [0.0, -3.0], [2.0, 0.0], [0.0, 40.0]]},
                          (-0.02, 0.02), (-0.02, 0.02),
                          lambda s: s[..., 2] - (0.001 + 2 * s[..., 0] ** 2 - 3 * s[..., 0] * s[..., 1]
                                                 + 40 * s[..., 0] ** 3 * s[..., 1]),
                          lambda s: _unit(np.stack([-(4 * s[..., 0] - 3 * s[..., 1] + 120 * s[..., 0] ** 2 * s[..., 1]),
                                                    -(-3 * s[..., 0] + 40 * s[..., 0] ** 3),
                                                    np.ones_like(s[..., 0])], -1))),
}


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _torus_normal(s: np.ndarray, R: float, r: float) -> np.ndarray:
    rho = np.hypot(s[..., 0], s[..., 1])
    centre = np.stack([s[..., 0] * R / rho, s[..., 1] * R / rho, 0 * rho], -1)
    return (s - centre) / r


def _fd_check(fam, u, v, h=1e-6):
    s, tu, tv = fam.evaluate(u, v)
    su = (fam.evaluate(u + h, v)[0] - fam.evaluate(u - h, v)[0]) / (2 * h)
    sv = (fam.evaluate(u, v + h)[0] - fam.evaluate(u, v - h)[0]) / (2 * h)
    scale = np.abs(tu).max() + np.abs(tv).max()
    np.testing.assert_allclose(tu, su, atol=1e-7 * scale)
    np.testing.assert_allclose(tv, sv, atol=1e-7 * scale)
    return s, tu, tv


@pytest.mark.parametrize("name", sorted(CASES))
def test_family_against_closed_form(name):
    params, ur, vr, implicit, normal = CASES[name]
    fam = make_family(name, params)
    u = rng.uniform(*ur, 200)
    v = rng.uniform(*vr, 200)
    s, tu, tv = _fd_check(fam, u, v)
    n = _unit(np.cross(tu, tv))
    if name == "ellipsoid":
        f = fam.frame  # columns e1, e2, e3
        loc = s @ f
        a, b, c = 0.03, 0.02, 0.01
        implicit_res = (loc[:, 0] / a) ** 2 + (loc[:, 1] / b) ** 2 + (loc[:, 2] / c) ** 2 - 1
        np.testing.assert_allclose(implicit_res, 0, atol=1e-12)
        expected_n = _unit((loc / np.array([a, b, c]) ** 2) @ f.T)
        np.testing.assert_allclose(f[:, 2], np.array([0, 1, 1]) / math.sqrt(2), atol=1e-15)
    else:
        np.testing.assert_allclose(implicit(s), 0, atol=1e-12)
        expected_n = normal(s)
    np.testing.assert_allclose(n, expected_n, atol=1e-9)  # outward, as documented


def test_every_registered_family_is_tested():
    assert set(FAMILIES) == set(CASES) | {"nurbs", "thin_plate"}


def test_thin_plate_partials_and_affine_part():
    rng = np.random.default_rng(2)
    frame = {"origin": [0.01, 0, 0], "e1": [1, 0, 0], "e2": [0, 1, 0], "normal": [0, 0, 1]}
    centres = rng.uniform(-0.01, 0.01, (12, 2))
    f = make_family("thin_plate", {**frame, "centres": centres.tolist(), "weights": [0.0] * 12,
                                   "affine": [0.001, 0.002, -0.003], "scale": 0.02})
    s, _, _ = f.evaluate(np.array([0.004]), np.array([-0.002]))
    np.testing.assert_allclose(s[0], [0.014, -0.002, 0.001 + 0.002 * 0.2 - 0.003 * -0.1], atol=1e-15)
    f = make_family("thin_plate", {**frame, "centres": centres.tolist(), "weights": rng.normal(0, 1e-3, 12).tolist(),
                                   "affine": [0.0, 0.0, 0.0], "scale": 0.02})
    u, v, h = rng.uniform(-0.01, 0.01, 20), rng.uniform(-0.01, 0.01, 20), 1e-7
    s, su, sv = f.evaluate(u, v)
    np.testing.assert_allclose(su, (f.evaluate(u + h, v)[0] - f.evaluate(u - h, v)[0]) / (2 * h), atol=1e-7)
    np.testing.assert_allclose(sv, (f.evaluate(u, v + h)[0] - f.evaluate(u, v - h)[0]) / (2 * h), atol=1e-7)


def test_sphere_zero_meridian_and_poles():
    fam = make_family("sphere", {"radius": 0.02, "pole_axis": [1, 0, 0], "zero_meridian": [0, 0, -1]})
    s, _, _ = fam.evaluate(np.array([0.0, math.pi / 2]), np.array([0.0, 0.3]))
    np.testing.assert_allclose(s, [[0, 0, -0.02], [0.02, 0, 0]], atol=1e-15)
    np.testing.assert_allclose(fam.analytic_normal(np.array([math.pi / 2]), np.array([1.0])), [[1, 0, 0]],
                               atol=1e-12)


def test_nurbs_reproduces_sphere_exactly():
    R = 0.025
    fam = make_family("nurbs", nurbs_sphere(R))
    u = rng.uniform(0.01, 0.99, 500)
    v = rng.uniform(0, 1, 500)
    s, tu, tv = _fd_check(fam, u, v, h=1e-7)
    np.testing.assert_allclose(np.linalg.norm(s, axis=-1), R, rtol=1e-13)
    n = _unit(np.cross(tu, tv))
    np.testing.assert_allclose(np.abs(np.einsum("ij,ij->i", n, s / R)), 1, atol=1e-9)
    # the grid path gives the same as the scattered path
    sg, tug, tvg = fam.evaluate_grid(u[:7], v[:5])
    s2, tu2, tv2 = fam.evaluate(u[:7, None], v[None, :5])
    np.testing.assert_allclose(sg, s2, atol=1e-15)
    np.testing.assert_allclose(tug, tu2, atol=1e-13)


def test_nurbs_circle_arc_exact():
    # A rational quadratic quarter circle swept linearly: a cylinder patch of radius 0.03.
    w = math.sqrt(0.5)
    P = [[[0.03, 0, 0], [0.03, 0, 0.1]], [[0.03, 0.03, 0], [0.03, 0.03, 0.1]], [[0, 0.03, 0], [0, 0.03, 0.1]]]
    fam = make_family("nurbs", {"degree_u": 2, "degree_v": 1, "knots_u": [0, 0, 0, 1, 1, 1],
                                "knots_v": [0, 0, 1, 1], "control_points": P,
                                "weights": [[1, 1], [w, w], [1, 1]]})
    s, _, _ = _fd_check(fam, rng.uniform(0, 1, 100), rng.uniform(0, 1, 100))
    np.testing.assert_allclose(np.hypot(s[:, 0], s[:, 1]), 0.03, rtol=1e-14)


@pytest.mark.parametrize("bad, message", [
    ({"knots_u": [0, 0, 1, 1, 1]}, r"need n \+ p \+ 1"),
    ({"knots_u": [0, 0, 0, 1, 0.5, 1]}, "non-decreasing"),
    ({"weights": [[1, 1], [0, 1], [1, 1]]}, "weights must be positive"),
    ({"degree_u": 0}, "degrees must be >= 1"),
    ({"control_points": [[0, 0, 0]]}, "control_points"),
])
def test_invalid_nurbs(bad, message):
    good = {"degree_u": 2, "degree_v": 1, "knots_u": [0, 0, 0, 1, 1, 1], "knots_v": [0, 0, 1, 1],
            "control_points": np.zeros((3, 2, 3)).tolist(), "weights": np.ones((3, 2)).tolist()}
    with pytest.raises(DefinitionError, match=message):
        make_family("nurbs", {**good, **bad})


@pytest.mark.parametrize("family, params, message", [
    ("sphere", {"radius": -1}, "positive"),
    ("sphere", {"radius": 0.02, "colour": "red"}, "unknown parameter"),
    ("sphere", {}, "missing parameter 'radius'"),
    ("torus", {"major_radius": 0.01, "minor_radius": 0.02}, "smaller than"),
    ("blob", {}, "unknown surface family"),
])
def test_invalid_parameters(family, params, message):
    with pytest.raises(DefinitionError, match=message):
        make_family(family, params)


def test_placement_and_flip():
    base = {"family": "sphere", "radius": 0.02, "grid": [9, 9], "record": [3, 3], "u_range_deg": [-60, 60]}
    plain = sample_points(parse_surface("a", base), 0, 9, 0, 9)
    moved = sample_points(parse_surface("b", {**base, "flip": True, "placement": {
        "translation": [0.1, 0.2, 0.3], "rotation_axis": [0, 0, 1], "rotation_deg": 90}}), 0, 9, 0, 9)
    Rz = np.array([[0, -1, 0], [1, 0, 0], [0, 0, 1.0]])
    np.testing.assert_allclose(moved[..., 2:5], plain[..., 2:5] @ Rz.T + [0.1, 0.2, 0.3], atol=1e-15)
    np.testing.assert_allclose(moved[..., 5:8], -(plain[..., 5:8] @ Rz.T), atol=1e-15)
    np.testing.assert_allclose(moved[..., 8:14].reshape(9, 9, 2, 3), plain[..., 8:14].reshape(9, 9, 2, 3) @ Rz.T,
                               atol=1e-15)


def test_degenerate_normal_without_analytic_normal_fails_with_indices():
    spec = parse_surface("nsphere", {"family": "nurbs", **nurbs_sphere(0.02), "grid": [5, 9], "record": [5, 9]})
    with pytest.raises(DegenerateNormal, match=r"\(0, 0\)"):
        sample_points(spec, 0, 5, 0, 9)


def test_degenerate_normal_with_analytic_normal_is_exact_and_silent():
    """A sphere's poles take its analytic normal, which is exact there: no warning (the shipped
    ball sample once warned about each of its pole points)."""
    spec = parse_surface("s", {"family": "sphere", "radius": 0.02, "grid": [5, 9], "record": [5, 9]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pts = sample_points(spec, 0, 5, 0, 9)
    np.testing.assert_allclose(pts[0, :, 5:8], np.broadcast_to([0, 0, -1.0], (9, 3)), atol=1e-12)
    np.testing.assert_allclose(pts[4, :, 5:8], np.broadcast_to([0, 0, 1.0], (9, 3)), atol=1e-12)


def test_height_polynomial_over_a_plane_and_scaled():
    """``height_polynomial`` with a frame and a scale L: the same surface as the default one with
    coefficients ``c_ij / L^(i + j)``, moved into the frame (points and partials rotated, the
    partials also against differences); bad frames and scales are refused naming the key."""
    c = np.array([[0.001, 0.0], [0.0, -3.0], [2.0, 0.0], [0.0, 40.0]])
    L = 0.02
    scaled = c * L ** (np.arange(4)[:, None] + np.arange(2)[None, :])
    R = np.linalg.qr(np.random.default_rng(5).normal(size=(3, 3)))[0]
    R[:, 2] = np.cross(R[:, 0], R[:, 1])  # columns e1, e2, normal
    origin = np.array([0.01, -0.03, 0.02])
    framed = make_family("height_polynomial", {"coefficients": scaled.tolist(), "scale": L, "origin": origin.tolist(),
                                               "e1": R[:, 0].tolist(), "e2": R[:, 1].tolist(),
                                               "normal": R[:, 2].tolist()})
    plain = make_family("height_polynomial", {"coefficients": c.tolist()})
    u, v = rng.uniform(-0.02, 0.02, 100), rng.uniform(-0.02, 0.02, 100)
    s, su, sv = _fd_check(framed, u, v)
    p, pu, pv = plain.evaluate(u, v)
    np.testing.assert_allclose(s, origin + p @ R.T, atol=1e-15)
    np.testing.assert_allclose(su, pu @ R.T, atol=1e-12)
    np.testing.assert_allclose(sv, pv @ R.T, atol=1e-12)
    for bad, key in (({"scale": "x"}, "scale"), ({"scale": 0}, "scale"), ({"origin": [0, 0]}, "origin"),
                     ({"normal": [0, 0, 0]}, "normal")):
        with pytest.raises(DefinitionError, match=f"height_polynomial: {key} must"):
            make_family("height_polynomial", {"coefficients": c.tolist(), **bad})
