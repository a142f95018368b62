"""The preprocess CLI: sample tables, inspect, and clear errors on bad input."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from conftest import SAMPLES

from preprocess.cli import main
from surfacestore.format import RecordBlock, open_table, verify_table


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "preprocess.cli", *args], capture_output=True, text=True)


@pytest.mark.slow
def test_sample_tables_match_the_thesis(sample_tables):
    expect = {  # name: (points, records, record points)
        "ball": ((999, 999), (9, 9), (111, 111)),
        "ball_333": ((333, 333), (9, 9), (37, 37)),
        "ball_33": ((33, 33), (3, 3), (11, 11)),
        "ball_9": ((9, 9), (3, 3), (3, 3)),
        "ground": ((333, 333), (37, 37), (9, 9)),
        "condyle_medial": ((333, 333), (37, 37), (9, 9)),
        "condyle_lateral": ((333, 333), (37, 37), (9, 9)),
        "plateau_medial": ((333, 333), (37, 37), (9, 9)),
        "plateau_lateral": ((333, 333), (37, 37), (9, 9)),
    }
    for name, (pts, recs, rec) in expect.items():
        t = open_table(sample_tables / f"{name}.zarr")
        h = t.header
        assert (h.u_npts, h.v_npts) == pts and (h.n_rec_u, h.n_rec_v) == recs and (h.u_pts, h.v_pts) == rec
        assert verify_table(t.path).ok, name
    assert open_table(sample_tables / "ground.zarr").header.record_bytes == 9072  # thesis l_record
    # the ball's lowest point is the central grid node, a regular point with normal -z
    ball = open_table(sample_tables / "ball.zarr")
    p = ball.read_record(4, 4)[499 - 444, 499 - 444]
    np.testing.assert_allclose(p[2:5], [0, 0, -0.02], atol=1e-15)
    np.testing.assert_allclose(p[5:8], [0, 0, -1], atol=1e-15)
    assert np.linalg.norm(np.cross(p[8:11], p[11:14])) > 0.9 * 0.02**2
    ground = open_table(sample_tables / "ground.zarr")
    assert ground.header.u1 - ground.header.u0 == pytest.approx(0.1)  # across the travel
    assert ground.header.v1 - ground.header.v0 == pytest.approx(0.2)  # along the travel (x)
    np.testing.assert_allclose(ground.read_record(0, 36)[0, -1, 2:8], [0.1, 0.05, 0, 0, 0, 1], atol=1e-15)
    plateau = open_table(sample_tables / "plateau_medial.zarr").header
    assert (plateau.u1 - plateau.u0) * (plateau.v1 - plateau.v0) == pytest.approx(5535.36e-6)


@pytest.mark.slow
def test_build_inspect_verify_cli(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text('[surfaces.tor]\nfamily = "torus"\nmajor_radius = 0.05\nminor_radius = 0.01\n'
                    'grid = [30, 40]\nrecord = [7, 9]\ncodec = "zstd"\n')
    r = run("build", str(spec), "--out", str(tmp_path / "t"), "--json")
    assert r.returncode == 0, r.stderr
    built = json.loads(r.stdout)["tables"][0]
    assert built["records"] == [5, 5] and built["codec"] == "zstd"
    r = run("inspect", str(tmp_path / "t" / "tor.zarr"), "--json")
    info = json.loads(r.stdout)
    assert info["header"]["digest"] == built["digest"]
    assert info["stats"]["bbox_max_m"][2] == pytest.approx(0.01, rel=0.02)
    assert run("verify", str(tmp_path / "t" / "tor.zarr")).returncode == 0


BAD = {
    # (a NaN angle was found only at the header, after the whole table was written)
    "nan_angle": ('[surfaces.a]\nfamily = "plane"\nu_range = [0, 1]\nv_range = [0, 1]\ngrid = [5, 5]\nrecord = [5, 5]\n'
                  '[surfaces.a.placement]\nrotation_deg = nan\n', r"a: placement.rotation_deg must be a finite number, got nan"),
    "unknown_family": ('[surfaces.a]\nfamily = "blob"\ngrid = [5, 5]\nrecord = [5, 5]\n', "unknown surface family"),
    "bad_radius": ('[surfaces.a]\nfamily = "sphere"\nradius = 0\ngrid = [5, 5]\nrecord = [5, 5]\n', "positive"),
    "missing_radius": ('[surfaces.a]\nfamily = "sphere"\ngrid = [5, 5]\nrecord = [5, 5]\n', "radius"),
    "small_grid": ('[surfaces.a]\nfamily = "sphere"\nradius = 1\ngrid = [1, 5]\nrecord = [1, 1]\n', "2 x 2"),
    "big_record": ('[surfaces.a]\nfamily = "sphere"\nradius = 1\ngrid = [5, 5]\nrecord = [6, 5]\n',
                   "no larger than the grid"),
    "malformed": ('[surfaces.a\nfamily = "sphere"\n', "malformed TOML"),
    "no_surfaces": ('title = "x"\n', "no \\[surfaces.NAME\\]"),
    "nurbs_knots": ('[surfaces.a]\nfamily = "nurbs"\ndegree_u = 1\ndegree_v = 1\nknots_u = [0, 0, 1]\n'
                    'knots_v = [0, 0, 1, 1]\ncontrol_points = [[[0,0,0],[0,1,0]],[[1,0,0],[1,1,0]]]\n'
                    'grid = [5, 5]\nrecord = [5, 5]\n', "need n \\+ p \\+ 1"),
    "nurbs_decreasing": ('[surfaces.a]\nfamily = "nurbs"\ndegree_u = 1\ndegree_v = 1\nknots_u = [0, 1, 0, 1]\n'
                         'knots_v = [0, 0, 1, 1]\ncontrol_points = [[[0,0,0],[0,1,0]],[[1,0,0],[1,1,0]]]\n'
                         'grid = [5, 5]\nrecord = [5, 5]\n', "non-decreasing"),
    "nurbs_weights": ('[surfaces.a]\nfamily = "nurbs"\ndegree_u = 1\ndegree_v = 1\nknots_u = [0, 0, 1, 1]\n'
                      'knots_v = [0, 0, 1, 1]\ncontrol_points = [[[0,0,0],[0,1,0]],[[1,0,0],[1,1,0]]]\n'
                      'weights = [[1, 1], [1, -1]]\ngrid = [5, 5]\nrecord = [5, 5]\n', "weights must be positive"),
    "plane_without_range": ('[surfaces.a]\nfamily = "plane"\ngrid = [5, 5]\nrecord = [5, 5]\n', "needs u_range"),
    "bad_name": ('[surfaces."../evil"]\nfamily = "plane"\ngrid = [5, 5]\nrecord = [5, 5]\n', "invalid table name"),
    "bad_codec": ('[surfaces.a]\nfamily = "sphere"\nradius = 1\ngrid = [5, 5]\nrecord = [5, 5]\ncodec = "lzma"\n',
                  "unknown codec"),
    "degenerate": ('[surfaces.a]\nfamily = "nurbs"\ndegree_u = 1\ndegree_v = 1\nknots_u = [0, 0, 1, 1]\n'
                   'knots_v = [0, 0, 1, 1]\ncontrol_points = [[[0,0,0],[0,0,0]],[[1,0,0],[1,1,0]]]\n'
                   'grid = [5, 5]\nrecord = [5, 5]\n', r"\|tu x tv\| ~ 0 at grid points \(i, j\) = \(0, 0\)"),
    # each of the following built a table (or failed only at its header, naming the table, not the definition)
    "true_is_no_radius": ('[surfaces.a]\nfamily = "sphere"\nradius = true\ngrid = [5, 5]\nrecord = [5, 5]\n',
                          "a: radius must hold numbers, not true or false, got true$"),
    "past_the_pole": ('[surfaces.a]\nfamily = "sphere"\nradius = 1\nu_range_deg = [-90, 100]\ngrid = [5, 5]\n'
                      'record = [5, 5]\n', r"a: u_range .* \(-90 to 100 deg\) leaves the sphere's domain .* \(-90 to 90 deg\)"),
    "two_turns": ('[surfaces.a]\nfamily = "torus"\nmajor_radius = 2\nminor_radius = 1\nv_range_deg = [0, 720]\n'
                  'grid = [5, 5]\nrecord = [5, 5]\n', "a: v_range .* is longer than one turn of the torus"),
    "beyond_the_knots": ('[surfaces.a]\nfamily = "nurbs"\ndegree_u = 1\ndegree_v = 1\nknots_u = [0, 0, 1, 1]\n'
                         'knots_v = [0, 0, 1, 1]\ncontrol_points = [[[0,0,0],[0,1,0]],[[1,0,0],[1,1,0]]]\n'
                         'u_range = [0, 2]\ngrid = [5, 5]\nrecord = [5, 5]\n',
                         r"a: u_range \[0, 2\] leaves the nurbs's domain \[0, 1\]"),
    "infinite_degree": ('[surfaces.a]\nfamily = "nurbs"\ndegree_u = inf\ndegree_v = 1\nknots_u = [0, 0, 1, 1]\n'
                        'knots_v = [0, 0, 1, 1]\ncontrol_points = [[[0,0,0],[0,1,0]],[[1,0,0],[1,1,0]]]\n'
                        'grid = [5, 5]\nrecord = [5, 5]\n', r"degrees must be integers, got \(inf, 1\)"),
    "overflowing_radius": ('[surfaces.a]\nfamily = "sphere"\nradius = 1e300\ngrid = [5, 5]\nrecord = [5, 5]\n',
                           r"a: points or partial derivatives too large to measure .* lengths are in metres"),
    "overflowing_meridian": ('[surfaces.a]\nfamily = "sphere"\nradius = 1\nzero_meridian = [0, 1e300, 0]\n'
                             'grid = [5, 5]\nrecord = [5, 5]\n', "zero_meridian must be a non-zero 3-vector of finite length"),
    "scaled_frame": ('[surfaces.a]\nfamily = "height_polynomial"\ncoefficients = [[0]]\ne1 = [2, 0, 0]\n'
                     'u_range = [0, 1]\nv_range = [0, 1]\ngrid = [5, 5]\nrecord = [5, 5]\n',
                     "e1, e2 and normal must be unit vectors, orthogonal, with e1 x e2 = normal"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_definitions_fail_cleanly(tmp_path, case, capsys):
    import re

    text, message = BAD[case]
    spec = tmp_path / "bad.toml"
    spec.write_text(text)
    out = tmp_path / "out"
    status = main(["build", str(spec), "--out", str(out)])
    err = capsys.readouterr().err
    assert status == 1
    assert re.search(message, err), err
    assert str(spec) in err or "a:" in err or "nurbs" in err
    assert not out.exists() or list(out.iterdir()) == []


@pytest.mark.slow
def test_existing_output_cli(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text('[surfaces.p]\nfamily = "plane"\nu_range = [0, 1]\nv_range = [0, 1]\ngrid = [5, 5]\n'
                    'record = [5, 5]\n')
    assert run("build", str(spec), "--out", str(tmp_path)).returncode == 0
    r = run("build", str(spec), "--out", str(tmp_path))
    assert r.returncode == 1 and "exists" in r.stderr and "--overwrite" in r.stderr
    assert run("build", str(spec), "--out", str(tmp_path), "--overwrite").returncode == 0
    # one name in two definitions: said before anything is built (the first was built, then refused)
    other = tmp_path / "other.toml"
    other.write_text(spec.read_text().replace("[surfaces.p]", "[surfaces.q]\nfamily = \"plane\"\nu_range = [0, 1]\n"
                                              "v_range = [0, 1]\ngrid = [5, 5]\nrecord = [5, 5]\n[surfaces.p]"))
    r = run("build", str(other), str(spec), "--out", str(tmp_path / "two"))
    assert r.returncode == 1 and f"{spec}: surface 'p' is defined in {other} too" in r.stderr, r.stderr
    assert not (tmp_path / "two").exists()


def test_missing_spec_and_table(tmp_path):
    r = run("build", str(tmp_path / "none.toml"), "--out", str(tmp_path))
    assert r.returncode == 1 and "none.toml" in r.stderr
    r = run("inspect", str(tmp_path / "none.zarr"))
    assert r.returncode == 1 and "no surface table" in r.stderr


def test_samples_are_valid_definitions():
    from preprocess.build import load_spec

    names = [s.name for f in SAMPLES.glob("*.toml") for s in load_spec(f)]
    assert len(names) == len(set(names)) >= 9


def test_a_table_is_rebuilt_when_its_definition_asks_for_another_layout(tmp_path):
    """A definition whose shards changed is not the one the table was built from: ensure_table
    builds it again, the same points in the new layout, and once only (before, only the surface,
    grid, records and codec were compared, and the old layout stayed)."""
    from dataclasses import replace

    from preprocess import samples

    spec = samples.sample_spec("bouncing_ball.toml", "ball_333")  # 9 x 9 records: "auto" does not shard it
    samples.ensure_table(spec, tmp_path)
    with open_table(tmp_path / "ball_333.zarr") as t:
        assert t.header.shard_records == 0
        points = t.read_block(RecordBlock(0, 9, 0, 9))
    sharded = replace(spec, shard=9)
    samples.ensure_table(sharded, tmp_path)
    header = tmp_path / "ball_333.zarr" / "zarr.json"
    built = header.stat().st_mtime_ns
    with open_table(tmp_path / "ball_333.zarr") as t:
        assert t.header.shard_records == 9
        np.testing.assert_array_equal(t.read_block(RecordBlock(0, 9, 0, 9)), points)
    samples.ensure_table(sharded, tmp_path)
    assert header.stat().st_mtime_ns == built
