"""The planar knee of thesis chapter 5 against the thesis' reported results (R1-R20 of
../shared/reference/thesis-ch5-ch6-models.md): the runs and studies of ``simclient run knee2d`` and
``simclient study knee2d-*``, the planar contact against closed forms, and bad input."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from simclient.cli import main
from simclient.errors import ParameterError
from simclient.scenarios import Tables
from simclient.scenarios.knee2d import (
    Knee2DParams,
    impact_hysteresis,
    knee2d,
)
from simclient.scenarios.knee2d.model import FEMUR_NEAREST, NORMAL_START, PLATEAU_NEAREST
from simclient.scenarios.studies import STUDIES, Study, run_study
from simclient.scenarios.models import planar_drop

# R2: the ligament lengths at t = 0 (mm)
LENGTHS_R2 = {"acl": 43.76, "pcl": 33.16, "mcl": 78.42, "lcl": 56.18}


@pytest.fixture(scope="module")
def tables(sample_tables):
    return Tables(folder=sample_tables)


@pytest.fixture(scope="module")
def default_run(tables):
    return knee2d(tables, Knee2DParams())


@pytest.fixture(scope="module")
def studies(tables):
    """Every knee2d study, each case by label: their cases run as one study in one pool of
    processes (the slowest, the materials, first), which balances the two workers better than
    five pools one after the other."""
    names = ("knee2d-materials", "knee2d-laws", "knee2d-amplitude", "knee2d-splines", "knee2d-geometry")
    every = Study("knee2d-every", "knee2d", "every knee2d study",
                  tuple((f"{name}/{label}", p) for name in names for label, p in STUDIES[name].cases))
    _, cases = run_study(every, tables, workers=2)
    out: dict[str, dict] = {name: {} for name in names}
    for key, summary in cases:
        name, label = key.split("/", 1)
        out[name][label] = summary
    return out


def test_r1_r2_initial_pose(default_run):
    """R1: the initial flexion from Table 5.1; R2: the ligament lengths at t = 0 from Tables 5.1-5.2."""
    assert abs(default_run["initial_flexion_deg"] - 54.79) <= 0.01
    for name, mm in LENGTHS_R2.items():
        assert abs(default_run["ligament_lengths_initial_m"][name] * 1e3 - mm) <= 0.05, name


def test_r4_hertz_run(default_run):
    """R4 (Hertz, A = 50 N, shape-preserving): a separate first impact, then continuous contact from
    26 +- 3 deg to the end, at -5.0 +- 0.3 deg; Hertz's loop has no area (elastic)."""
    s = default_run
    assert s.ok, s["message"]
    assert abs(s["final_flexion_deg"] + 5.0) <= 0.3
    first, second = s["contact_periods"]  # exactly two
    assert first["end_s"] < second["start_s"]
    assert abs(second["start_flexion_deg"] - 26.0) <= 3.0
    assert second["end_s"] == pytest.approx(0.4)
    scale = s["max_force_N"] * s["max_indentation_m"]
    assert s["first_impact_hysteresis_J"] <= 1e-6 * scale


def test_the_pulse_does_the_work_the_knee_gains_then_it_keeps_it(tables):
    """The planar knee's energy balance (Hertz contact, undamped ligaments, gravity): over the pulse
    the energy PlanarSystem.energy counts (kinetic, gravitational, contact, ligaments) grows by the
    pulse's work, int F(t) . v(P) dt by quadrature along the dense output (within 1e-7; measured
    9e-10); after it, the knee keeps its energy within 3e-8 of its size (measured 1.0e-8 at these
    tolerances, 1.7e-9 at rtol 1e-11, 3.5e-7 at rtol 1e-8: it converges with the tolerance)."""
    from scipy.integrate import quad

    p = Knee2DParams(rtol=1e-10, atol=1e-13)
    s = knee2d(tables, p)
    res, system = s.artifacts["result"], s.artifacts["system"]
    push = next(load for load in system.loads if type(load).__name__ == "PointLoad")

    def power(t):
        system.set_state(res.sol(t))
        ((body, P, f),) = push(t, system)
        return float(f @ system.velocity_at(body, P))
    work = quad(power, 0.0, p.pulse_duration, limit=200, epsabs=1e-12, epsrel=1e-10)[0]
    gained = system.energy(res.sol(p.pulse_duration)) - system.energy(res.y[:, 0])
    assert gained == pytest.approx(work, rel=1e-7) and work > 1e-3
    after = [system.energy(y) for y in res.y.T[res.t > p.pulse_duration][::3]]
    assert np.ptp(after) < 3e-8 * max(abs(e) for e in after)


@pytest.mark.slow
def test_r5_splines_agree(studies):
    """R5: the three piecewise cubics end within 0.5 deg of each other."""
    finals = [s["final_flexion_deg"] for s in studies["knee2d-splines"].values()]
    assert all(s.ok for s in studies["knee2d-splines"].values())
    assert max(finals) - min(finals) <= 0.5


def test_r7_conformality(studies):
    """R7: maximum force (and indentation) convex-concave > convex-plane > convex-convex."""
    g = studies["knee2d-geometry"]
    assert all(s.ok for s in g.values())
    force = {k: s["max_force_N"] for k, s in g.items()}
    assert force["convex-concave"] > force["convex-plane"] > force["convex-convex"]
    depth = {k: s["max_indentation_m"] for k, s in g.items()}
    assert depth["convex-concave"] > depth["convex-plane"] > depth["convex-convex"]


def test_r8_r9_r11_force_laws(studies):
    """R8: Hertz indents most; R9: Flores, Gonthier and Zhiying-Qishao first-impact loops within 10 %
    of each other and larger than every other law's; R11: Lee-Wang's loop the smallest and its
    indentation the largest of the dissipative laws."""
    laws = studies["knee2d-laws"]
    assert all(s.ok for s in laws.values())
    depth = {k: s["max_indentation_m"] for k, s in laws.items()}
    assert max(depth, key=depth.get) == "hertz"
    loop = {k: s["first_impact_hysteresis_J"] for k, s in laws.items() if k != "hertz"}
    trio = [loop[k] for k in ("flores", "gonthier", "zhiying-qishao")]
    assert max(trio) <= 1.1 * min(trio)
    assert min(trio) > max(v for k, v in loop.items() if k not in ("flores", "gonthier", "zhiying-qishao"))
    assert min(loop, key=loop.get) == "lee-wang"
    dissipative = {k: v for k, v in depth.items() if k != "hertz"}
    assert max(dissipative, key=dissipative.get) == "lee-wang"


def test_r14_r15_r16_materials(studies):
    """R16: the healthy knee has the largest indentation and the lowest force of the five; R15: at
    the same layers, 90 % OA is stiffer than 90 % OA + osteoporosis."""
    m = studies["knee2d-materials"]
    assert all(s.ok for s in m.values()), {k: s["message"] for k, s in m.items()}
    depth = {k: s["max_indentation_m"] for k, s in m.items()}
    force = {k: s["max_force_N"] for k, s in m.items()}
    assert max(depth, key=depth.get) == "healthy"
    assert min(force, key=force.get) == "healthy"
    assert force["oa90"] > force["oa90-op"]


def test_r18_r19_amplitude(studies):
    """R19: with Hertz, 150 N instead of 50 N raises the indentation, its rate and the force
    clearly (the largest indentation rate at least doubles, the force and indentation grow by more
    than 5 %); R18: the ligament forces rise with A, the collaterals stay below the cruciates, and
    at 150 N Hertz's ligament forces are well above Flores'."""
    a = studies["knee2d-amplitude"]
    assert all(s.ok for s in a.values())
    h50, h150 = a["hertz-50"], a["hertz-150"]

    def rate(s):
        return float(np.abs(s.artifacts["history"]["indentation_rate_m_s"]).max())

    assert rate(h150) >= 2 * rate(h50)
    assert h150["max_force_N"] > 1.05 * h50["max_force_N"]
    assert h150["max_indentation_m"] > 1.05 * h50["max_indentation_m"]
    lig50, lig150 = h50["max_ligament_force_N"], h150["max_ligament_force_N"]
    assert all(lig150[k] > lig50[k] for k in lig50)
    for s in a.values():
        lig = s["max_ligament_force_N"]
        assert max(lig["mcl"], lig["lcl"]) < min(lig["acl"], lig["pcl"])
    assert a["hertz-150"]["max_ligament_force_N"]["acl"] > 1.3 * a["flores-150"]["max_ligament_force_N"]["acl"]


def test_r20_flores_loop_ratio(studies):
    """R20: the Flores first-impact loop at 150 N over that at 50 N within a factor 2 of 844. A
    check of the calibration of t_d (the 50 N first impact is a graze whose loop grows about five
    times from t_d = 70 to 71 ms; README, planar knee), not a prediction."""
    a = studies["knee2d-amplitude"]
    ratio = a["flores-150"]["first_impact_hysteresis_J"] / a["flores-50"]["first_impact_hysteresis_J"]
    assert 844 / 2 <= ratio <= 844 * 2


def test_closed_forms_touch_the_profiles(default_run):
    """The closed-form geometries are placed where the profile tables are nearest at the start."""
    system = default_run.artifacts["system"]
    contact = system.contacts[0]
    system.set_state(system.initial_state())
    k = system.detect(contact)
    np.testing.assert_allclose(k.point_i[:2], FEMUR_NEAREST, atol=1e-6)
    np.testing.assert_allclose(k.normal[:2], NORMAL_START, atol=1e-5)
    r, A, _, _ = system.pose(contact.j.body)
    np.testing.assert_allclose(A.T @ (k.point_j[:2] - r), PLATEAU_NEAREST, atol=1e-6)


@pytest.mark.parametrize("kind", ["tables", "circles"])
def test_planar_drop_closed_form(sample_tables, kind):
    """Section 5.3's circles: the drop's largest indentation against the energy balance, on the
    profile tables (2D common normal) and on the closed-form circles."""
    measured, expected = planar_drop(sample_tables if kind == "tables" else None)
    assert measured == pytest.approx(expected, rel=0.01)


def test_impact_hysteresis_closed_forms():
    """A Kelvin-Voigt cycle (F = k d + c d', d = A sin(w t) up and down) has the loop area
    c A^2 w pi / 2; an elastic law's branches coincide (no area)."""
    A, w, k, c = 1e-3, 50.0, 1e5, 40.0
    t = np.linspace(0.0, math.pi / w, 20001)
    d, dd = np.maximum(A * np.sin(w * t), 0.0), A * w * np.cos(w * t)
    assert impact_hysteresis(d, k * d + c * dd) == pytest.approx(c * A * A * w * math.pi / 2, rel=1e-4)
    assert abs(impact_hysteresis(d, k * d**1.5)) < 1e-12


@pytest.mark.slow
def test_study_cli_json(sample_tables, capsys, tmp_path):
    """``simclient study``: the JSON names the study and every case by its label, and the plots are
    written."""
    assert main(["study", "knee2d-geometry", "--tables", str(sample_tables), "--json", "--out", str(tmp_path)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["study"] == "knee2d-geometry"
    assert [c["case"] for c in out["cases"]] == ["convex-convex", "convex-concave", "convex-plane"]
    for c in out["cases"]:
        assert {"final_flexion_deg", "contact_periods", "max_indentation_m", "max_force_N",
                "first_impact_hysteresis_J", "max_ligament_force_N"} <= set(c)
    assert (tmp_path / "knee2d-geometry.png").stat().st_size > 0


def test_run_cli_json_and_plots(sample_tables, capsys, tmp_path):
    assert main(["run", "knee2d", "--tables", str(sample_tables), "--json", "--out", str(tmp_path)]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("initial_flexion_deg", "final_flexion_deg", "ligament_lengths_initial_m", "contact_periods",
                "max_indentation_m", "max_force_N", "first_impact_hysteresis_J", "max_ligament_force_N"):
        assert key in out
    assert set(out["ligament_lengths_initial_m"]) == {"acl", "pcl", "mcl", "lcl"}
    assert (tmp_path / "knee2d.png").stat().st_size > 0


@pytest.mark.parametrize("args, words", [
    (["--law", "coulomb"], "unknown law 'coulomb'"),
    (["--material", "steel"], "unknown material 'steel'"),
    (["--spline", "linear"], "unknown spline 'linear'"),
    (["--geometry", "cube"], "unknown geometry 'cube'"),
    (["--amplitude", "-5"], "amplitude"),
    (["--amplitude", "5000"], "amplitude"),
    (["--cr", "1.5"], "restitution"),
    (["--material", "oa90", "--law", "flores"], "double layer"),
])
def test_bad_input_exit_1(sample_tables, capsys, args, words):
    """Bad input is a clear error naming the input, and exit status 1."""
    assert main(["run", "knee2d", "--tables", str(sample_tables), *args]) == 1
    assert words in capsys.readouterr().err


def test_non_convex_profile_refused(sample_tables, tmp_path):
    """A condyle with a dent is refused before the run: the 2D common normal needs it convex."""
    from preprocess.build import build_surface, parse_surface

    theta = np.radians(np.linspace(-150, -30, 28))
    r = 0.03 * (1 + 0.2 * np.exp(-((theta - np.radians(-90)) / 0.1) ** 2) * -1)  # a dent at the bottom
    pts = np.column_stack([r * np.cos(theta), r * np.sin(theta)])
    build_surface(parse_surface("dented", {"family": "polar_profile", "spline": "not-a-knot", "grid": [601, 3],
                                           "record": [30, 3], "points": pts.tolist()}), tmp_path)
    t = Tables(folder=sample_tables, overrides={"femur": str(tmp_path / "dented.zarr")})
    with pytest.raises(ParameterError, match="not convex"):
        knee2d(t, Knee2DParams())
