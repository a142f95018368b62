"""Markus et al. (2019)'s prosthetic four-bar knee: assembly and constraint drift, the stop's
penetration against the paper, the pattern of its two laws, the STEP function and law errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from simclient.cli import main
from simclient.contact import PenaltyStep, make_law, step
from simclient.errors import ParameterError
from simclient.scenarios import Tables
from simclient.scenarios.prosthetic_knee import JOINT_VECTORS, JOINTS, ProstheticKneeParams
from simclient.scenarios.studies import STUDIES, run_study

pytestmark = pytest.mark.slow  # (the whole module: see `python3 dev.py test --fast`)

PAPER_FLORES, PAPER_PENALTY = 0.49e-3, 0.57e-3  # m, the paper's maximum penetrations


@pytest.fixture(scope="module")
def laws(sample_tables):
    _, cases = run_study(STUDIES["prosthetic-knee-laws"], Tables(folder=sample_tables), workers=2)
    return dict(cases)


def test_table2_does_not_close_and_assembly_does(laws):
    """Table 2's joints are 0.84-1.03 mm apart; the assembly closes them to <= 1e-9 m, and the
    joints stay closed (<= 1e-8 m) over the run."""
    from simclient.scenarios.prosthetic_knee import BODIES

    def rot(a):
        return np.array([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]])

    gaps = []
    for name, (a, b) in JOINTS.items():
        pa = np.array(BODIES[a][2:4]) + rot(BODIES[a][4]) @ np.array(JOINT_VECTORS[a][name])
        pb = np.array(BODIES[b][2:4]) + rot(BODIES[b][4]) @ np.array(JOINT_VECTORS[b][name])
        gaps.append(np.linalg.norm(pa - pb))
    assert 0.8e-3 < min(gaps) and max(gaps) < 1.1e-3
    for s in laws.values():
        assert s.ok, s["message"]
        assert s["assembly_residual_m"] <= 1e-9
        assert s["max_link_length_drift_m"] <= 1e-8


def test_penetration_and_the_papers_pattern(laws):
    """Flores within 50 % of the paper's 0.49 mm; the penalty law penetrates more; Flores' force
    peak is higher and shorter (width at half height)."""
    f, p = laws["flores"], laws["penalty-step"]
    assert abs(f["max_penetration_m"] - PAPER_FLORES) <= 0.5 * PAPER_FLORES
    assert p["max_penetration_m"] > f["max_penetration_m"]
    assert f["peak_contact_force_N"] > p["peak_contact_force_N"]
    assert f["peak_width_s"] < p["peak_width_s"]


def test_histories_follow_the_integrated_motion_through_a_separation(sample_tables):
    """Without the spring's preload the stop is struck and left again (0.094 s, 0.392 s), so the
    run ends out of contact. Body 1's angular acceleration history still equals the time derivative
    of its angular velocity history (a second method: differences of the dense output) in contact
    too, and the stop is indented between its onset and separation and carries no force outside."""
    from simclient.scenarios.prosthetic_knee import prosthetic_knee

    s = prosthetic_knee(Tables(folder=sample_tables), ProstheticKneeParams(spring_preload=0.0))
    kinds = [e["type"] for e in s.artifacts["result"].events]
    assert kinds == ["onset", "separation"], kinds
    (t_on, t_off) = [e["t"] for e in s.artifacts["result"].events]
    h = s.artifacts["history"]
    t, alpha = h["t_s"], h["body1_alpha_rad_s2"]
    derivative = np.gradient(h["body1_omega_rad_s"], t)
    touching = (t > t_on + 1e-4) & (t < t_off - 1e-4)
    assert touching.sum() > 500
    scale = np.abs(alpha).max()
    assert np.abs(derivative - alpha)[touching].max() <= 1e-3 * scale
    assert np.all(h["contact_force_N"][(t < t_on) | (t > t_off)] == 0)
    assert h["penetration_m"][touching].min() > 0


def test_step_against_its_definition():
    """STEP: y1 before x1, y2 after x2, the cubic between, continuous with zero slope at both ends."""
    x1, y1, x2, y2 = 0.0, 0.0, 1e-4, 49915.668
    assert step(-1.0, x1, y1, x2, y2) == y1 and step(x1, x1, y1, x2, y2) == y1
    assert step(x2, x1, y1, x2, y2) == y2 and step(1.0, x1, y1, x2, y2) == y2
    assert step(x2 / 2, x1, y1, x2, y2) == pytest.approx((y1 + y2) / 2)
    assert step(x2 / 4, x1, y1, x2, y2) == pytest.approx(y1 + (y2 - y1) * 0.25**2 * (3 - 0.5))
    h = 1e-10
    for a in (x1, x2):  # continuity and zero slope at both ends
        assert step(a + h, x1, y1, x2, y2) - step(a - h, x1, y1, x2, y2) == pytest.approx(0.0, abs=1e-6 * y2)
    slope = (step(x2 / 2 + h, x1, y1, x2, y2) - step(x2 / 2 - h, x1, y1, x2, y2)) / (2 * h)
    assert slope == pytest.approx(1.5 * (y2 - y1) / (x2 - x1), rel=1e-6)  # 6 z (1 - z) / (x2 - x1) at z = 1/2


def test_penalty_law_force():
    law = make_law("penalty-step", 99.99e6)
    assert isinstance(law, PenaltyStep)
    d, v = 0.5e-4, 0.1
    assert law.normal_force(d, v, 1.0) == pytest.approx(99.99e6 * d**1.5 + 0.5 * 49915.668 * v)
    assert law.normal_force(2e-4, v, 1.0) == pytest.approx(99.99e6 * 2e-4**1.5 + 49915.668 * v)
    assert law.normal_force(0.0, v, 1.0) == 0.0
    assert law.normal_force(d, -10.0, 1.0) == 0.0  # clipped: never pulls


@pytest.mark.parametrize("name, kwargs, words", [
    ("flores", {"K": 1e8, "cr": 0.0}, "coefficient of restitution"),
    ("flores", {"K": 1e8, "cr": 1.5}, "coefficient of restitution"),
    ("flores", {"K": -1e8, "cr": 0.5}, "stiffness"),
    ("penalty-step", {"K": -1.0}, "stiffness"),
    ("penalty-step", {"K": 1e8, "d_max": 0.0}, "d_max"),
    ("penalty-step", {"K": 1e8, "c_max": -1.0}, "c_max"),
])
def test_law_parameters_out_of_range(name, kwargs, words):
    with pytest.raises(ParameterError, match=words):
        make_law(name, **kwargs)


def test_run_cli_json_and_bad_input(sample_tables, capsys, tmp_path):
    import json

    assert main(["run", "prosthetic-knee", "--tables", str(sample_tables), "--json", "--t-end", "0.1",
                 "--out", str(tmp_path)]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("assembly_residual_m", "max_link_length_drift_m", "max_penetration_m", "peak_contact_force_N",
                "contact_duration_s", "knee_flexion_deg"):
        assert key in out
    assert (tmp_path / "prosthetic_knee.png").stat().st_size > 0
    assert main(["run", "prosthetic-knee", "--tables", str(sample_tables), "--cr", "0"]) == 1
    assert "coefficient of restitution" in capsys.readouterr().err
    with pytest.raises(ParameterError, match="spring preload"):
        ProstheticKneeParams(spring_preload=-1.0)
