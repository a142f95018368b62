"""Argatov's thin-layer laws: the reference's derived numbers (the validate cases run in
tests/dynamics/test_dynamics.py), the laws driving the dynamics (a ball on a compressible layer against its
energy balance), and bad input."""

from __future__ import annotations

import math

import pytest
from scipy.optimize import brentq

from simclient.contact import (
    Layer,
    compressible_law,
    force_factor,
    incompressible_contact,
    incompressible_law,
    incompressible_modulus,
    winkler_modulus,
)
from simclient.errors import ParameterError
from simclient.scenarios import Tables, get_scenario
from simclient.scenarios.bouncing_ball import G
from simclient.scenarios.validate import ARGATOV_INCOMPRESSIBLE


@pytest.mark.parametrize("row", list(ARGATOV_INCOMPRESSIBLE))
def test_incompressible_closed_form_matches_the_reference(row):
    """The reference's table (R1, R2, delta, m) -> (s, a, b, p0, P), to its printed digits."""
    (R1, R2, d, m), P = ARGATOV_INCOMPRESSIBLE[row]
    c = incompressible_contact(R1, R2, d, m)
    assert c.P == pytest.approx(P, rel=1e-6)
    expected = {"1": (0.624811, 3.534462, 2.208369, 0.0876894), "2": (1, 4.898979, 4.898979, 0.3),
                "3": (1.448160, 2.169907, 3.142373, 0.079706)}[row]
    assert (c.s, c.a, c.b, c.p0) == pytest.approx(expected, rel=2e-6)
    assert c.P == pytest.approx(math.pi * c.a * c.b * c.p0 / 3, rel=1e-12)


def test_factors_and_moduli():
    assert [force_factor(s) for s in (1.0, 0.5, 0.25)] == pytest.approx([2.0, 1.456, 0.75799], rel=1e-5)
    assert [Layer(1, 1, nu).incompressibility for nu in (0.5, 0.49, 0.45)] == \
        pytest.approx([1.0, 0.898239, 0.575207], rel=1e-6)
    # Blankevoort's S / h: 4.741 N/mm^3; two identical layers in series = one of their total thickness
    assert winkler_modulus(Layer(0.004, 5e6, 0.45)) == pytest.approx(4.741e9, rel=1e-4)
    assert winkler_modulus(Layer(0.001, 5e6, 0.45), Layer(0.003, 5e6, 0.45)) == \
        pytest.approx(winkler_modulus(Layer(0.004, 5e6, 0.45)), rel=1e-12)
    # nu = 0.5: m = E / (h1^3 + h2^3) (the corrected eq. 26)
    assert incompressible_modulus(Layer(0.001, 4e6, 0.5), Layer(0.002, 4e6, 0.5)) == pytest.approx(4e6 / 9e-9)


@pytest.mark.parametrize("make, n", [(compressible_law, 2.0), (incompressible_law, 3.0)])
def test_ball_on_a_thin_layer_matches_its_energy_balance(sample_tables, make, n):
    """The bouncing ball with a thin-layer law (K and n from the closed form, R1 = R2 = 20 mm):
    its largest indentation solves m g (gap + d) = K d^(n+1) / (n+1), within 1e-3."""
    law = make(0.02, 0.02, Layer(0.002, 5e6, 0.45 if n == 2 else 0.49))
    cls = get_scenario("bouncing-ball")
    p = cls.Params(law="hertz", K=law.K, n=law.n, t_end=0.07)
    s = cls().run(p, Tables(folder=str(sample_tables)))
    d = brentq(lambda x: law.K * x ** (n + 1) / (n + 1) - p.mass * G * (p.gap + x), 0, 0.01, xtol=1e-16)
    assert s["max_indentation_m"][0] == pytest.approx(d, rel=1e-3)


@pytest.mark.parametrize("call, match", [
    (lambda: Layer(-0.001, 5e6, 0.45), "thickness"),
    (lambda: Layer(0.001, 0.0, 0.45), "modulus"),
    (lambda: Layer(0.001, 5e6, 0.7), "Poisson"),
    (lambda: incompressible_modulus(Layer(0.001, 5e6, 0.2)), "above 0.25"),
    (lambda: winkler_modulus(Layer(0.001, 5e6, 0.5)), "below 0.5"),
    (lambda: compressible_law(-0.01, 0.02, Layer(0.001, 5e6, 0.45)), "radii"),
    (lambda: incompressible_contact(0.02, 0.02, float("nan"), 1.0), "penetration"),
])
def test_bad_input(call, match):
    with pytest.raises(ParameterError, match=match):
        call()


def _paraboloid_toml(path, placements):
    """Elliptic paraboloids (R1 = 20 mm, R2 = 50 mm) under ``placements`` (rotation matrix, translation)."""
    lines = []
    for k, (R, t) in enumerate(placements):
        lines += [f"[surfaces.para{k}]", 'family = "elliptic_paraboloid"', "R1 = 0.020", "R2 = 0.050",
                  "u_range = [-0.004, 0.004]", "v_range = [-0.004, 0.004]", "grid = [81, 81]", "record = [9, 9]",
                  f"flip = {'true' if k % 2 == 0 else 'false'}", f"[surfaces.para{k}.placement]",
                  f"rotation_matrix = {R.tolist()}", f"translation = {[float(x) for x in t]}", ""]
    path.write_text("\n".join(lines))


def test_curvature_of_placed_paraboloids(tmp_path, capsys):
    """``preprocess curvature`` on elliptic paraboloids in random placements: at the apex (and just
    off the grid points) the radii within 1 % of 20 and 50 mm and the principal directions within
    0.5 deg of the placed x and y axes; the sign follows the outward normal (convex side positive)."""
    import json

    import numpy as np
    from scipy.spatial.transform import Rotation

    from preprocess.cli import main as preprocess_main

    rng = np.random.default_rng(7)
    placements = [(Rotation.random(random_state=rng).as_matrix(), rng.uniform(-0.05, 0.05, 3)) for _ in range(4)]
    _paraboloid_toml(tmp_path / "p.toml", placements)
    assert preprocess_main(["build", str(tmp_path / "p.toml"), "--out", str(tmp_path)]) == 0
    for k, (R, _) in enumerate(placements):
        for at in ("0,0", "0.00003,-0.00002"):
            capsys.readouterr()
            assert preprocess_main(["curvature", str(tmp_path / f"para{k}.zarr"), "--at", at, "--json"]) == 0
            r = json.loads(capsys.readouterr().out)
            sign = 1 if k % 2 == 0 else -1  # flipped: the outward normal on the convex side
            assert r["R1_m"] == pytest.approx(sign * 0.020, rel=0.01) and r["R2_m"] == pytest.approx(sign * 0.050, rel=0.01)
            for d, axis in ((r["direction1"], R[:, 0]), (r["direction2"], R[:, 1])):
                assert math.degrees(math.acos(min(1.0, abs(float(np.dot(d, axis)))))) < 0.5
    assert preprocess_main(["curvature", str(tmp_path / "para0.zarr"), "--at", "0.004,0"]) == 1
    assert "interior" in capsys.readouterr().err


def test_viscoelastic_ball_loses_energy_between_its_instant_and_relaxed_stiffness(sample_tables):
    """A ball dropped on the viscoelastic compressible layer (rho = E_inf / E_0 = 0.5, T = 0.2 ms):
    it indents less than on the relaxed layer (K) and more than on the instantaneous one (K / rho),
    both by the energy balance, and rebounds slower than it struck; with rho = 1 the law is the
    elastic one (no state left to act)."""
    law = compressible_law(0.02, 0.02, Layer(0.002, 5e6, 0.45))
    cls = get_scenario("bouncing-ball")

    def run(rho):
        p = cls.Params(law="hertz", K=law.K, n=law.n, t_end=0.07, relax_ratio=rho, creep_time=2e-4)
        return p, cls().run(p, Tables(folder=str(sample_tables)))

    def elastic_depth(p, K):
        return brentq(lambda x: K * x**3 / 3 - p.mass * G * (p.gap + x), 0, 0.01, xtol=1e-16)

    p, elastic = run(1.0)
    assert elastic["max_indentation_m"][0] == pytest.approx(elastic_depth(p, law.K), rel=1e-3)
    assert elastic["separation_velocities_m_s"][0] == pytest.approx(elastic["impact_velocities_m_s"][0], rel=1e-6)
    p, visco = run(0.5)
    assert elastic_depth(p, 2 * law.K) < visco["max_indentation_m"][0] < elastic_depth(p, law.K)
    e = visco["separation_velocities_m_s"][0] / visco["impact_velocities_m_s"][0]
    assert 0.5 < e < 0.95


def test_viscoelastic_law_bad_input():
    from simclient.contact import ViscoelasticLaw

    with pytest.raises(ParameterError, match="rho"):
        ViscoelasticLaw.from_elastic(compressible_law(0.02, 0.02, Layer(0.002, 5e6, 0.45)), 1.5, 1e-3)
