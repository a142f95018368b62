"""Bei & Fregly's natural knee on the lenhart2015 tibial cartilage of ../shared/data (skipped where
absent): equilibrium, small against large strain, bad input."""

from __future__ import annotations

import json

import pytest
from conftest import ROOT, SHARED_DATA, build_definition, run_cli

DATA = SHARED_DATA / "lenhart2015"
pytestmark = pytest.mark.skipif(not DATA.exists(), reason="../shared/data/lenhart2015 is absent")


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    from simclient.scenarios import ensure_sample_tables

    out = build_definition(ROOT / "sample_surfaces" / "real" / "natural_knee.toml", tmp_path_factory.mktemp("natural"))
    ensure_sample_tables(out, names=["natural_femoral_medial", "natural_femoral_lateral"])
    return out


def _run(tables, *args):
    return run_cli("run", "natural-knee", "--tables", str(tables), *args)


def test_static_settle_balances_the_load_with_small_and_large_strain(tables, tmp_path):
    r = _run(tables, "--json", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    for strain in ("small", "large"):
        # the compartments carry the axial load (vertical components; the principle of replacement)
        assert s["force_sum_over_load"][strain] == pytest.approx(1.0, abs=0.01)
        for side in ("medial", "lateral"):
            c = s["strain"][strain]["compartments"][side]
            assert c["active_elements"] > 20 and c["peak_pressure_Pa"] > c["mean_pressure_Pa"] > 0
    ratio = s["large_over_small"]
    for side in ("medial", "lateral"):
        # Bei & Fregly's pattern: the same force, a stiffer law at large strain gives a higher peak
        # pressure on a smaller area
        assert ratio[side]["force_N"] == pytest.approx(1.0, abs=0.02)
        assert ratio[side]["peak_pressure_Pa"] > 1.0 and ratio[side]["area_m2"] < 1.0
    assert (tmp_path / "natural_knee_pressure.png").stat().st_size > 10_000


def test_a_tibial_table_without_thickness_is_an_error(tables):
    r = _run(tables, "--tibial", str(tables / "natural_femoral_medial.zarr"))
    assert r.returncode == 1 and "no 'thickness' field" in r.stderr
