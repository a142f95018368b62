"""Blankevoort's quasi-static knee: the envelope's equilibrium, the thin layer against its closed
form, rigid contact's closed gaps, bad input."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from conftest import run_cli

from simclient.contact import Layer, compressible_law
from simclient.errors import ContactError
from simclient.io import open_surface
from simclient.scenarios.blankevoort import BUNDLES, SIDES, BlankevoortKnee, BlankevoortParams


@pytest.fixture(scope="module")
def tables(sample_tables):
    return sample_tables  # the sample definitions hold the Blankevoort surfaces


def _knee(tables, contact="linear"):
    kind = "plane" if contact == "rigid" else "tibial"
    return BlankevoortKnee({s: open_surface(tables / f"bk_femoral_{s}.zarr") for s in SIDES},
                           {s: open_surface(tables / f"bk_{kind}_{s}.zarr") for s in SIDES},
                           BlankevoortParams(contact=contact))


def _run(tables, *args):
    return run_cli("run", "blankevoort", "--tables", str(tables), *args)


def test_envelope_converges_on_both_paths(tables, tmp_path):
    r = _run(tables, "--json", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    rows = s["envelope"]
    for path in ("internal", "external"):
        solved = {round(x["flexion_deg"]) for x in rows if x["path"] == path and x["converged"]}
        assert set(range(0, 101, 10)) <= solved
    assert s["max_residual_N"] <= 1e-6 and s["max_residual_Nm"] <= 1e-6
    # the axial torque's sign shows: the internal path's tibia is more internally rotated everywhere
    by = {(x["path"], x["flexion_deg"]): x for x in rows}
    for fl in range(0, 101, 10):
        assert by[("internal", fl)]["internal_rotation_deg"] > by[("external", fl)]["internal_rotation_deg"] + 2
    assert set(s["at_95_deg_internal"]) == {"medial_force_N", "lateral_force_N", "paper"}
    assert (tmp_path / "blankevoort_envelope.png").stat().st_size > 10_000


def test_reference_lengths_give_the_reference_strains(tables):
    """Eq. 8: at the reference position every bundle sits at its reference strain eps_r."""
    knee = _knee(tables)
    q = knee.reference()
    for name, L in knee.lengths(q).items():
        law = knee.laws[name]
        assert (L - law.l0) / law.l0 == pytest.approx(BUNDLES[name][1], abs=1e-12)


def test_thin_layer_matches_the_closed_form(tables):
    """A pure translation presses each condyle 0.5 mm into its plateau: the element grid's force
    against Argatov's compressible thin layer (Winkler, S/h, eq. 17) on the paraboloid of the two
    surfaces' curvatures at first contact (condyle: ellipse radii b^2/a, c^2/a; plateaus: the
    polynomials' 1/(2R) terms)."""
    knee = _knee(tables)
    layer = Layer(4e-3, 5e6, 0.45)
    radii = {"medial": (1 / (0.026**2 / 0.020) - 1 / 0.080, 1 / (0.020**2 / 0.020) - 1 / 0.040, -0.0204, 0.020),
             "lateral": (1 / (0.024**2 / 0.019) + 1 / 0.120, 1 / (0.018**2 / 0.019) - 1 / 0.060, -0.0194, 0.019)}
    for side, (k1, k2, plateau, a) in radii.items():
        delta = 5e-4
        q = np.zeros(6)
        q[2] = plateau + a - delta  # the condyle's distal point delta below the plateau
        force = float(np.linalg.norm(knee.contact(q, full=True)[side][0]))
        expected = compressible_law(1 / k1, 1 / k2, layer).normal_force(delta, 0.0, 0.0)
        assert force == pytest.approx(expected, rel=0.03), side


def test_rigid_contacts_close_their_gaps(tables):
    knee = _knee(tables, "rigid")
    q = knee.reference()
    knee.torque = -3.0
    state = {}
    for fl in (0, 20, 40):
        state = knee.solve(q, math.radians(fl), state.get("active", SIDES), state.get("p"))
        assert state["converged"]
        q = state["q"]
        for side, (depth, _, normal) in knee.rigid_contacts(q, state["active"]).items():
            assert abs(depth) < 1e-9 and normal[2] > 0.99
            assert state["forces"][side] > 0


def test_a_path_past_the_surfaces_ends_failed_naming_the_flexion(tables):
    # Far past the paper's 100 deg the femoral surface runs out: a central difference there stepped
    # off the tables and a Newton step of NaN reached the contact search, a traceback
    r = _run(tables, "--contact", "rigid", "--flexion-max-deg", "180", "--json")
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    s = json.loads(r.stdout)
    assert s["status"] == "failed" and s["message"].endswith("no equilibrium at flexion 160 deg (residual inf)")
    for path in ("internal", "external"):  # solved up to there, then the path stops
        rows = [(x["flexion_deg"], x["converged"]) for x in s["envelope"] if x["path"] == path]
        assert rows == [(float(f), f < 160) for f in range(0, 161, 5)]
    with pytest.raises(ContactError, match="poses that put the surfaces' points at non-finite"):
        _knee(tables, "rigid").pairs["medial"].detect(np.full((3, 3), np.nan), np.zeros(3), np.eye(3), np.zeros(3),
                                                      strict=True)


@pytest.mark.parametrize("args, needle", [(["--E=-5e6"], "E must be positive"),
                                          (["--nu", "0.5"], "nu must lie in"),
                                          (["--thickness", "0.05"], "more than the joint space"),
                                          (["--contact", "soft"], "soft")])
def test_bad_input_is_an_error(tables, args, needle):
    r = _run(tables, *args)
    assert r.returncode == 1 and needle in r.stderr
