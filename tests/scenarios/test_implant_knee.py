"""The artificial knee on the real implant surfaces of ../shared/data (skipped where absent)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import ROOT, SHARED_DATA, build_definition, run_cli

from simclient.io import open_surface
from simclient.scenarios.artificial_knee import ImplantKnee, ImplantKneeParams

DM = SHARED_DATA / "grand-challenge-dm"
pytestmark = [pytest.mark.skipif(not DM.exists(), reason="../shared/data/grand-challenge-dm is absent"),
              pytest.mark.slow]  # (the whole module: see `python3 dev.py test --fast`)


@pytest.fixture(scope="module")
def implant_tables(tmp_path_factory):
    return build_definition(ROOT / "sample_surfaces" / "real" / "grand_challenge_dm.toml",
                            tmp_path_factory.mktemp("implant"), skip=("patellar_button",))


def _knee(tables, material):
    return ImplantKnee(open_surface(tables / "tibial_insert.zarr"), open_surface(tables / "femoral_component.zarr"),
                       ImplantKneeParams(material=material))


def test_static_settle_is_in_equilibrium_with_the_load_split(implant_tables):
    knee = _knee(implant_tables, "linear")
    y, r = knee.static(0.0, 2000.0)
    res = r["results"]
    # at rest the contact carries the load: force and moment balance (principle of replacement), to
    # the solver's tolerance (5e-4 of the load: 1 N, and 0.02 N m, the force's at 20 mm)
    assert r["residual_force_N"] <= 1.0 and r["residual_torque_Nm"] <= 0.02
    fy = sum(c.force[1] for c in res.values())
    assert fy == pytest.approx(2000.0, rel=1e-3)
    # the load line sits 70 % of the way to the medial dish centre: the medial compartment carries
    # about 70 % (exactly so if both contacts sat at the dish centres)
    share = res["medial"].force[1] / fy
    assert 0.65 < share < 0.78
    for c in res.values():
        assert c.active.sum() > 10 and c.peak_pressure > c.mean_pressure > 0
        # area-weighted mean pressure times area sums the element forces' magnitudes: no less than
        # the resultant's, and close to it (the element normals differ by a few degrees)
        assert 0.95 * c.mean_pressure * c.area < np.linalg.norm(c.force) <= c.mean_pressure * c.area * (1 + 1e-12)


def test_nonlinear_material_lowers_peak_pressure_and_spreads_the_area(implant_tables):
    """Bei & Fregly's Table 4 pattern at a static 2000 N: similar force and torque, lower peak
    pressure and a larger contact area for the nonlinear UHMWPE."""
    out = {m: _knee(implant_tables, m).static(0.0, 2000.0)[1]["results"] for m in ("linear", "nonlinear")}
    for side in ("medial", "lateral"):
        lin, non = out["linear"][side], out["nonlinear"][side]
        assert np.linalg.norm(non.force) == pytest.approx(np.linalg.norm(lin.force), rel=0.1)
        assert np.linalg.norm(non.torque) == pytest.approx(np.linalg.norm(lin.torque), rel=0.1)
        assert non.peak_pressure < lin.peak_pressure
        assert non.area > lin.area


def test_cli_runs_the_gait_cycle_and_writes_maps(implant_tables, tmp_path):
    r = run_cli("run", "artificial-knee", "--tables", str(implant_tables), "--analysis", "gait", "--out", str(tmp_path),
                "--refine-tol", "0.005", "--json")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert s["scenario"] == "artificial-knee" and set(s["compartments"]) == {"medial", "lateral"}
    for q in s["compartments"].values():
        assert {"force_N", "torque_Nm", "peak_pressure_Pa", "mean_pressure_Pa", "area_m2", "active_elements"} <= set(q)
    total = s["compartments"]["medial"]["force_N"] + s["compartments"]["lateral"]["force_N"]
    assert total == pytest.approx(3.0 * 700.0, rel=0.05)  # the peak axial load, 3 body weights
    # every instant in equilibrium: the SI force imbalance (measured by a full search at each output)
    # within the 2 % in stance and 5 % overall; everywhere, within the solver's own tolerance
    # (a Newton stall at a kink of the contact force is settled, or slid along ML, not taken)
    from simclient.scenarios.artificial_knee.model import TOL_REL

    assert s["gait"]["max_force_imbalance_stance"] <= 0.02 and s["gait"]["max_force_imbalance"] <= 0.05
    assert s["gait"]["max_force_imbalance"] <= TOL_REL * (1 + 1e-9)
    # Bei & Fregly's pressure pass: the 50 x 50 grids at the same pose see the same contact areas
    pp = s["pressure_pass"]
    assert pp["element_grid"] == [50, 50] and pp["t_s"] == s["t_max_load_s"]
    for side in ("medial", "lateral"):
        assert pp["compartments"][side]["active_elements"] > s["compartments"][side]["active_elements"]
        r = pp["over_forward_run"][side]
        assert r["force_N"] == pytest.approx(pp["compartments"][side]["force_N"] / s["compartments"][side]["force_N"])
        # Bei & Fregly: force and torque insensitive to the grid (30 x 30 is within 1.3 % of 150 x 150: README)
        assert r["force_N"] == pytest.approx(1.0, abs=0.01) and r["torque_Nm"] == pytest.approx(1.0, abs=0.01)
    # the pass refined on zoomed grids: converged, and the 50 x 50 pass's force within 1 %
    refined = s["refined_pass"]
    assert refined["converged"] and refined["t_s"] == s["t_max_load_s"] and refined["levels"][-1]["change"] <= 0.005
    for side in ("medial", "lateral"):
        level0 = refined["levels"][0]["compartments"][side]  # (the run's own grids, every element evaluated)
        assert level0["force_N"] == pytest.approx(s["compartments"][side]["force_N"], rel=1e-9)
        assert refined["compartments"][side]["force_N"] == pytest.approx(pp["compartments"][side]["force_N"], rel=0.01)
    assert (tmp_path / "artificial_knee_refined.png").stat().st_size > 1000
    finest = refined["levels"][-1]["element_grid"]["medial"]
    vts = (tmp_path / "vtk" / "artificial_knee_refined_medial_0000.vts").read_bytes()
    assert f'WholeExtent="0 {finest[0] - 1} 0 {finest[1] - 1} 0 0"'.encode() in vts and b"pressure_Pa" in vts
    assert "artificial_knee_refined_medial_0000.vts" in (tmp_path / "artificial_knee_refined.pvd").read_text()
    import zarr

    g = zarr.open_group(str(tmp_path / "pressure.zarr"), mode="r")
    assert g["medial"].shape == (101, 30, 30) and g["medial"].chunks == (1, 30, 30)
    k = int(np.argmin(np.abs(g["t_s"][:] - s["t_max_load_s"])))
    assert np.nanmax(g["medial"][k]) == pytest.approx(s["compartments"]["medial"]["peak_pressure_Pa"], rel=1e-12)
    assert (tmp_path / "artificial_knee_pressure.png").stat().st_size > 1000


def test_rays_ignore_the_fits_extrapolation_beyond_the_data(implant_tables):
    """The per-condyle toroidal tables extend beyond their data (the fit's extrapolation curls into
    the insert): rays hitting there are no contact. At a settled pose of the single patch, each
    condyle's table carries a force of the single patch's size (it gave 30 times more before)."""
    from simclient.contact import FoundationContact
    from simclient.scenarios.artificial_knee import MATERIALS

    knee = _knee(implant_tables, "linear")
    y, r = knee.static(0.0, 2000.0)
    R, c = knee.pose(y, 0.0, 0.0, 0.0)
    for side in ("medial", "lateral"):
        table = open_surface(implant_tables / f"femoral_{side}.zarr")
        whole = (table.header.n_rec_u, table.header.n_rec_v)  # no window limits: every ray is cast to its end
        fc = FoundationContact([knee.contact.compartments[side].grid], table, MATERIALS["linear"], extent=whole)
        res = fc.evaluate(np.eye(3), np.zeros(3), R, c, full=True)[side]
        single = np.linalg.norm(r["results"][side].force)
        assert 0.6 * single < np.linalg.norm(res.force) < 1.2 * single and fc.stats["misses"] == 0


def test_per_condyle_tables_carry_the_single_patchs_forces(implant_tables):
    """In equilibrium at the gait's maximum-load pose (18 deg flexion, 2100 N), one toroidal table
    per condyle gives the single patch's compartment forces within 1 %: two fits of one mesh by
    different parametrizations (measured: +0.1 % / -0.3 %; 0.8 % / 1.7 % apart while the single
    patch kept the walls it rang around, 0.05-0.12 mm off on the condyles' edges)."""
    single = _knee(implant_tables, "linear")
    condyles = {s: open_surface(implant_tables / f"femoral_{s}.zarr") for s in ("medial", "lateral")}
    split = ImplantKnee(single.insert, single.femoral, single.params, condyles)
    fl, ie, ap, load = np.radians(18.0), np.radians(2.375), 0.8125e-3, 2100.0
    forces = {}
    for name, knee in (("single", single), ("split", split)):
        y0 = knee.settle((fl, ie, ap, load), np.array([knee.touching(fl, ie, ap), 0.0, 0.0])).x
        y = knee.equilibrium(y0, fl, ie, ap, load)
        Q, res = knee.generalized_forces(y, fl, ie, ap, load, full=True)
        assert abs(Q[0]) < 1e-3 * load
        forces[name] = {s: np.linalg.norm(r.force) for s, r in res.items()}
    for side in ("medial", "lateral"):
        assert forces["split"][side] == pytest.approx(forces["single"][side], rel=0.01)


def test_compiled_search_settles_like_the_python_search(implant_tables):
    """A static settle (18 deg, 2100 N: from the first touch, then checked by a full search) with the
    compiled element search and with the Python one (the reference): the same equilibrium, the
    same compartment forces to 1e-6, and the compiled run almost never needs the Python search."""
    runs = {}
    for compiled in (True, False):
        knee = _knee(implant_tables, "linear")
        knee.contact.detector.compiled = compiled
        y, r = knee.static(18.0, 2100.0)
        runs[compiled] = (y, {s: np.linalg.norm(c.force) for s, c in r["results"].items()}, knee.contact.stats)
    (y1, f1, st1), (y0, f0, st0) = runs[True], runs[False]
    np.testing.assert_allclose(y1, y0, rtol=0, atol=1e-9)
    for side in ("medial", "lateral"):
        assert f1[side] == pytest.approx(f0[side], rel=1e-6)
    assert st1["python_searches"] < 0.05 * st1["searches"] and st0["python_searches"] >= st0["searches"]


def test_a_femur_slid_medial_laterally_comes_back_to_the_same_restoring_equilibrium(implant_tables):
    """From the settled equilibrium at 60 deg and 1000 N with the femur displaced 0.5 mm medially or
    laterally, the slide along ML (:meth:`ImplantKnee._slide_ml`, the last resort for an equilibrium
    on a kink) lands on one equilibrium from both sides: every residual within tolerance, and the ML
    force restoring around it (positive 20 um below, negative 20 um above, SI and VV solved there)."""
    knee = _knee(implant_tables, "linear")
    f, load = np.radians(60.0), 1000.0
    case, tol = (f, 0.0, 0.0, load), knee._tol(load)
    y, _ = knee.static(60.0, load)
    ends = [knee._slide_ml(y + np.array([0.0, d, 0.0]), case) for d in (-5e-4, 5e-4)]
    assert abs(ends[0][1] - ends[1][1]) < 1e-6
    for q in ends:
        assert np.all(np.abs(knee.generalized_forces(q, *case, full=True)[0]) <= tol)
    side = [knee.generalized_forces(knee._hold_ml(ends[0] + np.array([0.0, d, 0.0]), case), *case, full=True)[0][1]
            for d in (-2e-5, 2e-5)]
    assert side[0] > 0 > side[1]


def test_a_femur_slid_across_a_flat_slot_reaches_its_far_wall(implant_tables):
    """At 40 deg flexion under 300 N the femur sits in a slot some 3 mm wide along ML: a flat bottom
    where the ML force is a nearly constant 0.2 % of the load (laterally directed), between walls where
    it rises to 10-100 N within 0.25 mm. Released at the slot's medial end, the slide (its steps
    doubling from 20 um, 5 mm at most) must cross the whole bottom to the lateral wall, 3 mm away,
    beyond its seventh step (2.54 mm): it ends in equilibrium there, the ML force restoring around it."""
    knee = _knee(implant_tables, "linear")
    case, tol = (np.radians(40.0), 0.0, 0.0, 300.0), knee._tol(300.0)
    y, _ = knee.static(40.0, 300.0)
    start = knee._hold_ml(y + np.array([0.0, 2e-3 - y[1], 0.0]), case)  # ML +2 mm (medial), SI and VV solved
    Q_start = knee.generalized_forces(start, *case, full=True)[0]
    assert -0.005 * 300.0 < Q_start[1] < -tol[1]  # on the flat bottom, out of balance, pushed laterally
    end = knee._slide_ml(start, case)
    assert start[1] - end[1] > 2.54e-3
    assert np.all(np.abs(knee.generalized_forces(end, *case, full=True)[0]) <= tol)
    side = [knee.generalized_forces(knee._hold_ml(end + np.array([0.0, d, 0.0]), case), *case, full=True)[0][1]
            for d in (-2e-5, 2e-5)]
    assert side[0] > 0 > side[1]


def test_settles_come_to_rest_in_few_steps_and_an_unbalanced_one_is_an_error(implant_tables, monkeypatch):
    """Every static settle of the default run comes to rest within the equilibrium tolerance in a few
    pseudo-time steps (each a contact evaluation and a Jacobian), at a stable equilibrium: the
    viscous model linearized there (central differences of the full search, 10 times the solver's
    steps) has only decaying modes. One cut short far out of balance (one step, one Newton
    iteration) is an error naming the pose and the imbalance."""
    import simclient.scenarios.artificial_knee.model as ak
    from simclient.errors import SimulationError

    knee = _knee(implant_tables, "linear")
    c = np.array([knee.params.damping, knee.params.damping, knee.params.damping_rot])
    for fl in knee.params.static_flexion_deg:
        for load in knee.params.static_loads_N:
            f = np.radians(fl)
            r = knee.settle((f, 0.0, 0.0, load), np.array([knee.touching(f), 0.0, 0.0]))
            assert r.converged and r.iterations <= 30, (fl, load, r.iterations)
            Q, _ = knee.generalized_forces(r.x, f, 0.0, 0.0, load, full=True)
            assert np.all(np.abs(Q) <= 2 * ak.TOL_REL * load * np.array([1.0, 1.0, 0.02]))
            J = np.empty((3, 3))
            for col, h in enumerate(10 * ak.STEP):
                dq = np.eye(3)[col] * h
                J[:, col] = (knee.generalized_forces(r.x + dq, f, 0.0, 0.0, load, full=True)[0]
                             - knee.generalized_forces(r.x - dq, f, 0.0, 0.0, load, full=True)[0]) / (2 * h)
            assert np.linalg.eigvals(J / c[:, None]).real.max() < 0, (fl, load)
    monkeypatch.setattr(ak, "SETTLE_STEPS", 1)
    short = ImplantKnee(knee.insert, knee.femoral, ImplantKneeParams(material="linear", max_iter=1))
    with pytest.raises(SimulationError, match=r"no equilibrium at flexion 30.00 deg.*out of balance"):
        short.static(30.0, 1000.0)


def test_a_refined_pass_agrees_with_a_fine_uniform_grid(implant_tables):
    """At the static settle under 2000 N, the pass refined to 0.5 % on grids zoomed on each
    compartment's contact (FoundationContact.refine, from the 30 x 30 run's grids) gives the force,
    peak pressure and area of 300 x 300 elements over each whole compartment within 0.5 % (measured:
    0.004 %, 0.05 % and 0.27 % at most; the 30 x 30 grid's own peak pressure and area were up to 18 %
    off, the 150 x 150 grid's up to 0.8 %)."""
    from dataclasses import replace

    knee = _knee(implant_tables, "linear")
    y, _ = knee.static(0.0, 2000.0)
    R, r = knee.pose(y, 0.0, 0.0, 0.0)
    refined = knee.contact.refine(np.eye(3), np.zeros(3), R, r, shape=(30, 30), tol=0.005)
    assert refined.converged
    uniform = ImplantKnee(knee.insert, knee.femoral, replace(knee.params, grid=(300, 300)))
    fine = uniform.generalized_forces(y, 0.0, 0.0, 0.0, 2000.0, full=True)[1]
    coarse = refined.results[0]
    worst = 0.0
    for name, c in refined.result.items():
        f = fine[name]
        assert np.linalg.norm(c.force) == pytest.approx(np.linalg.norm(f.force), rel=5e-3)
        assert c.peak_pressure == pytest.approx(f.peak_pressure, rel=5e-3)
        assert c.area == pytest.approx(f.area, rel=5e-3)
        worst = max(worst, abs(coarse[name].area / f.area - 1), abs(coarse[name].peak_pressure / f.peak_pressure - 1))
    assert worst > 0.05  # (so the comparison tells a refined grid from the first one)
