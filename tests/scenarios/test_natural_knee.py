"""Bei & Fregly's natural knee: the congruent femoral stand-in (always), and the model on the
lenhart2015 tibial cartilage of ../shared/data (skipped where absent): equilibrium, small against
large strain beside Table 3, bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import ROOT, SHARED_DATA, build_definition, run_cli

from simclient.contact import power_gap_strain_ratios
from simclient.io import MemorySource
from simclient.scenarios.artificial_knee import femoral_rotation
from simclient.scenarios.natural_knee import TABLE_3, conforming_condyle
from surfacestore.format import NFIELDS, Header

pytestmark = pytest.mark.slow  # (the whole module: see `python3 dev.py test --fast`)

DATA = SHARED_DATA / "lenhart2015"


@pytest.mark.parametrize("n", [2.0, 3.5])
def test_conforming_condyle_is_the_plateau_lifted_by_the_clearance(n):
    """On a flat plateau (y = 0, u along z, v along x, normal +y) the condyle is the surface
    y = rho^n / (n R^(n - 1)), rho^2 = (x - cx)^2 + (z - cz)^2 (n = 2: the paraboloid rho^2 / (2 R)):
    points, partials and the outward normal (facing the tibia) against their closed forms, rotated
    into the femoral frame, over the records asked for."""
    n, d = 41, 0.001
    u, v = np.meshgrid(np.arange(n) * d - 0.02, np.arange(n) * d - 0.02, indexing="ij")
    pts = np.zeros((n, n, NFIELDS))
    pts[..., 0], pts[..., 1], pts[..., 2], pts[..., 4] = u, v, v, u  # x = v, z = u
    pts[..., 6], pts[..., 10], pts[..., 11] = 1.0, 1.0, 1.0  # n = +y, tu = +z, tv = +x
    plateau = MemorySource(Header(n, n, 8, 8, -0.02, -0.02, d, d), pts, "plateau")
    (cx, cz), R, rot = (0.003, -0.004), 0.05, femoral_rotation(0.02, -0.1, 0.5)
    condyle = conforming_condyle(plateau, (1, 4), (cx, cz), R, rot, "condyle", n)
    h = condyle.header
    assert (h.v_npts, h.v0, h.normal_sign, h.n_rec_v) == (24, pytest.approx(-0.012), -1, 3)
    got = condyle.read_block(0, h.n_rec_u, 0, h.n_rec_v)
    back = {k: got[..., k:k + 3] @ rot.T for k in (2, 5, 8, 11)}  # to the tibia's frame
    x, z = back[2][..., 0], back[2][..., 2]
    np.testing.assert_allclose(got[..., 1], np.broadcast_to(h.v0 + np.arange(24) * d, (n, 24)), atol=1e-12)
    np.testing.assert_allclose(x, got[..., 1], atol=1e-15)
    rho = np.hypot(x - cx, z - cz)
    np.testing.assert_allclose(back[2][..., 1], rho**n / (n * R ** (n - 1)), atol=1e-15)
    gx, gz = (x - cx) * rho ** (n - 2) / R ** (n - 1), (z - cz) * rho ** (n - 2) / R ** (n - 1)  # the slopes
    up = np.stack([-gx, np.ones_like(x), -gz], axis=-1)
    np.testing.assert_allclose(back[5], -up / np.linalg.norm(up, axis=-1, keepdims=True), atol=1e-14)
    np.testing.assert_allclose(back[8], np.stack([0 * x, gz, 1 + 0 * x], axis=-1), atol=1e-14)
    np.testing.assert_allclose(back[11], np.stack([1 + 0 * x, gx, 0 * x], axis=-1), atol=1e-14)
    assert np.all(plateau.points[..., 3] == 0)  # the plateau itself is untouched


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    if not DATA.exists():
        pytest.skip("../shared/data/lenhart2015 is absent")
    from preprocess.samples import ensure_sample_tables

    out = build_definition(ROOT / "sample_surfaces" / "real" / "natural_knee.toml", tmp_path_factory.mktemp("natural"))
    ensure_sample_tables(out, names=["ground"])
    return out


def _run(tables, *args):
    return run_cli("run", "natural-knee", "--tables", str(tables), *args)


@pytest.fixture(scope="module")
def settled(tables, tmp_path_factory):
    """The default run's JSON summary and its ``--out`` folder, with a pass refined to 0.5 % (which
    changes nothing else)."""
    out = tmp_path_factory.mktemp("natural_out")
    r = _run(tables, "--json", "--out", str(out), "--refine-tol", "0.005")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout), out


def test_static_settle_beside_table_3(settled):
    """The relative radii and the load line are set from Table 3's small-strain areas and force
    split; what follows is compared with the rest of Table 3 and with the closed form."""
    s, out = settled
    K = (1 - s["nu"]) * s["E_Pa"] / ((1 + s["nu"]) * (1 - 2 * s["nu"]))  # aggregate modulus, Pa
    for strain in ("small", "large"):
        # the compartments carry the axial load (vertical components; the principle of replacement)
        assert s["force_sum_over_load"][strain] == pytest.approx(1.0, abs=0.01)
        assert s["strain"][strain]["residual_force_N"] < 1e-3
    small = s["strain"]["small"]["compartments"]
    ratio = s["large_over_small"]
    for side, bf_peak_ratio in (("medial", 4.216 / 3.893), ("lateral", 4.225 / 3.854)):
        paper = TABLE_3["small"][side]
        # set from Table 3 (the calibration holds)
        assert small[side]["area_m2"] == pytest.approx(paper[4], rel=0.02)
        # predicted: the small-strain peak pressure within 10 % of Table 3's (measured -8 / +8 %)
        assert small[side]["peak_pressure_Pa"] == pytest.approx(paper[2], rel=0.1)
        # Bei & Fregly's large / small strain: equal force, peak pressure 1.083 / 1.096 (measured
        # 1.087 / 1.102)
        assert ratio[side]["force_N"] == pytest.approx(1.0, abs=0.01)
        assert ratio[side]["peak_pressure_Pa"] == pytest.approx(bf_peak_ratio, rel=0.01)
        # both ratios where the paraboloidal gap's closed form puts them for this peak strain
        peak, area = power_gap_strain_ratios(small[side]["peak_pressure_Pa"] / K)
        assert ratio[side]["peak_pressure_Pa"] == pytest.approx(peak, rel=0.01)
        assert ratio[side]["area_m2"] == pytest.approx(area, rel=0.015)
    assert (out / "natural_knee_pressure.png").stat().st_size > 10_000


def test_a_flatter_clearance_trades_the_peak_ratio_for_the_area_ratio(tables, tmp_path):
    """``simclient study natural-knee-clearance``: the clearance rho^n for n = 2 to 8, each with
    radii that give Table 3's small-strain areas again. The ratios follow the closed form for that
    gap, and as n grows the area ratio rises while the peak pressure's falls: the area comes
    within 3 % (n >= 4) only with peak ratios below Bei & Fregly's 1.083 / 1.096, so no case
    reaches their pair."""
    r = run_cli("study", "natural-knee-clearance", "--tables", str(tables), "--json", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    cases = json.loads(r.stdout)["cases"]
    assert [c["clearance_exponent"] for c in cases] == [2, 3, 4, 6, 8]
    for side in ("medial", "lateral"):
        peaks, areas = [], []
        for c in cases:
            K = (1 - c["nu"]) * c["E_Pa"] / ((1 + c["nu"]) * (1 - 2 * c["nu"]))
            small, ratio = c["strain"]["small"]["compartments"][side], c["large_over_small"][side]
            assert small["area_m2"] == pytest.approx(TABLE_3["small"][side][4], rel=0.02)
            assert all(v == pytest.approx(1.0, abs=0.01) for v in c["force_sum_over_load"].values())
            peak, area = power_gap_strain_ratios(small["peak_pressure_Pa"] / K, c["clearance_exponent"])
            assert ratio["peak_pressure_Pa"] == pytest.approx(peak, rel=0.01)
            assert ratio["area_m2"] == pytest.approx(area, rel=0.015)
            assert not (ratio["area_m2"] > 0.97 and ratio["peak_pressure_Pa"] > 1.08)
            peaks.append(ratio["peak_pressure_Pa"])
            areas.append(ratio["area_m2"])
        assert peaks == sorted(peaks, reverse=True) and areas == sorted(areas)
        assert areas[2] > 0.97  # n = 4
    assert (tmp_path / "natural-knee-clearance.png").stat().st_size > 10_000


def test_the_large_over_small_ratios_are_not_the_grids(settled):
    """On grids zoomed on each settle's contact and refined until force, peak pressure and area
    change by less than 0.5 % (FoundationContact.refine: 30 x 30 over each plateau, then 30 x 30 up to
    120 x 120 over the contact), large against small strain keeps the 30 x 30 grid's ratios within
    0.5 % (measured: areas 0.9539 / 0.9524 against 0.9536 / 0.9514, peak pressures 1.0904 / 1.1036
    against 1.0872 / 1.1015): the smaller area at large strain is the model's, not the grid's."""
    s, _ = settled
    for strain in ("small", "large"):
        assert s["strain"][strain]["refined"]["converged"]
        assert len(s["strain"][strain]["refined"]["levels"]) >= 3
    for side in ("medial", "lateral"):
        for key in ("force_N", "peak_pressure_Pa", "area_m2"):
            assert s["large_over_small_refined"][side][key] == pytest.approx(s["large_over_small"][side][key], rel=5e-3)
        assert s["large_over_small_refined"][side]["area_m2"] < 0.96


@pytest.mark.xfail(strict=True, reason="Bei & Fregly's equal areas (1.000 / 0.993): on an elastic foundation the "
                   "peak ratios they report come with 4-5 % less area (closed form; measured 0.954 / 0.951)")
def test_large_strain_keeps_the_contact_area_within_3_percent(settled):
    s, _ = settled
    assert all(s["large_over_small"][side]["area_m2"] > 0.97 for side in ("medial", "lateral"))


def test_a_load_line_over_one_plateau_is_still_in_equilibrium(tables):
    """With the load line over the lateral centroid (``--medial-share 0``) both settles hold to the
    tolerance, 1e-6 of the load: the small-strain one once stopped 0.385 N out of balance, accepted
    as a stall, where a full element search had missed an element 37 um deep (a ray from a stale
    start)."""
    s = json.loads(_run(tables, "--medial-share", "0", "--json").stdout)
    assert s["status"] == "ok", s.get("message")
    for strain in ("small", "large"):
        assert s["strain"][strain]["residual_force_N"] <= 1e-6 * s["load_N"]
        assert s["force_sum_over_load"][strain] == pytest.approx(1.0, abs=1e-6)


def test_a_tibial_table_without_thickness_is_an_error(tables):
    r = _run(tables, "--tibial", str(tables / "ground.zarr"))
    assert r.returncode == 1 and "no 'thickness' field" in r.stderr


def test_no_equilibrium_is_a_failure_of_the_natural_knee(tables):
    # one element a compartment cannot carry the load where it must: said as the natural knee's
    # failure (it was named the artificial knee's, whose solver it shares)
    r = _run(tables, "--grid", "1x1", "--json")
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    s = json.loads(r.stdout)
    assert s["status"] == "failed" and s["message"].startswith("natural knee: no equilibrium at flexion 30.00 deg")
    # a load of 1e300 N: its settle's step overflowed into a NaN pose ("non-finite pose of the moving body")
    r = _run(tables, "--load-N", "1e300", "--json")
    assert r.returncode == 1 and "Traceback" not in r.stderr and "RuntimeWarning" not in r.stderr, r.stderr
    assert json.loads(r.stdout)["message"].startswith("natural knee: no equilibrium at flexion 30.00 deg, IE 0.00 deg, "
                                                      "AP 0.00 mm, load 1e+300 N")


@pytest.mark.parametrize("option, value, message", [("--medial-radius", "-0.05", "medial_radius must be positive"),
                                                    ("--medial-share", "1.5", "medial_share must lie in [0, 1]"),
                                                    ("--lateral-radius", "1e-300", "lateral_radius must be at least 1 mm"),
                                                    ("--clearance-exponent", "1", "clearance_exponent must lie in [2, 16]")])
def test_bad_parameters_are_errors(tables, option, value, message):
    r = _run(tables, option, value)
    assert r.returncode == 1 and message in r.stderr
