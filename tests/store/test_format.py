"""The table format: records by index, digest, verify, sharding, codecs, atomic publish."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import zarr

from preprocess.build import build_surface, parse_surface
from surfacestore import format as fmt
from surfacestore.errors import RecordCorrupt, RecordOutOfRange, TableExists, TableNotFound
from surfacestore.format import RecordBlock, create_table, open_table, verify_table

SPHERE = {"family": "sphere", "radius": 0.02, "pole_axis": [1, 0, 0], "zero_meridian": [0, 0, -1],
          "u_range_deg": [-80, 80]}


def _build(tmp_path: Path, name: str = "s", grid=(40, 50), record=(9, 7), **kw) -> fmt.Table:
    return build_surface(parse_surface(name, {**SPHERE, "grid": list(grid), "record": list(record), **kw}),
                         tmp_path)


@pytest.mark.parametrize("codec", fmt.CODECS)
@pytest.mark.parametrize("shard", [0, 3])
def test_records_equal_full_zarr_read(tmp_path, codec, shard):
    t = _build(tmp_path, codec=codec, shard=shard)
    h = t.header
    assert (h.n_rec_u, h.n_rec_v, h.shard_records) == (5, 8, shard)
    full = zarr.open_group(t.path, mode="r")["points"][:]  # zarr-python is the reference reader
    assert full.shape == (40, 50, 14)
    for ri, rj in [(0, 0), (4, 7), (2, 5), (4, 0)]:
        rec = t.read_record(ri, rj)
        np.testing.assert_array_equal(rec, full[ri * 9:(ri + 1) * 9, rj * 7:(rj + 1) * 7])
    block = RecordBlock(1, 5, 3, 8)
    i0, i1, j0, j1 = h.block_points(block)
    np.testing.assert_array_equal(t.read_block(block), full[i0:i1, j0:j1])
    assert verify_table(t.path).ok


def test_header_fields(tmp_path):
    t = _build(tmp_path)
    h = t.header.to_dict()
    for key in ("format", "fields", "u_npts", "v_npts", "u_pts", "v_pts", "n_rec_u", "n_rec_v", "u0", "v0",
                "du", "dv", "record_bytes", "digest", "source", "created"):
        assert key in h
    assert h["record_bytes"] == 9 * 7 * 14 * 8
    assert h["fields"] == list(fmt.FIELDS)
    assert h["source"]["family"] == "sphere"
    pts = t.read_record(1, 2)
    np.testing.assert_allclose(pts[3, 4, 0], h["u0"] + (9 + 3) * h["du"], rtol=1e-15)
    np.testing.assert_allclose(pts[3, 4, 1], h["v0"] + (14 + 4) * h["dv"], rtol=1e-15)


def _write_random(path, data, extras=None, **kw):
    nu, nv = data.shape[:2]
    with create_table(path, u_npts=nu, v_npts=nv, u_pts=4, v_pts=4, u0=0, v0=0, du=1, dv=1,
                      extras=tuple(extras or ()), **kw) as w:
        h = w.header
        for ri in range(h.n_rec_u):
            i0, i1 = ri * 4, min(ri * 4 + 4, nu)
            w.write_records(ri, 0, h.n_rec_v, data[i0:i1], {k: v[i0:i1] for k, v in (extras or {}).items()})
        return w.commit()


def test_digest_changes_with_any_value(tmp_path):
    rng = np.random.default_rng(0)
    data = rng.random((10, 11, 14))
    thick = rng.random((10, 11))
    d0 = _write_random(tmp_path / "a.zarr", data, {"thickness": thick}).header.digest
    assert _write_random(tmp_path / "b.zarr", data, {"thickness": thick}).header.digest == d0
    seen = {d0}
    for k in range(6):
        changed = data.copy()
        idx = tuple(rng.integers(s) for s in data.shape)
        changed[idx] = np.nextafter(changed[idx], 2.0)  # the smallest possible change
        digest = _write_random(tmp_path / f"c{k}.zarr", changed, {"thickness": thick}).header.digest
        assert digest not in seen
        seen.add(digest)
    t2 = thick.copy()
    t2[9, 10] += 1e-9
    assert _write_random(tmp_path / "d.zarr", data, {"thickness": t2}).header.digest not in seen


def test_extra_fields_roundtrip(tmp_path):
    rng = np.random.default_rng(1)
    data, thick = rng.random((10, 11, 14)), rng.random((10, 11))
    t = _write_random(tmp_path / "e.zarr", data, {"thickness": thick}, shard=2)
    np.testing.assert_array_equal(t.read_block(RecordBlock(0, 3, 0, 3), "thickness"), thick)
    np.testing.assert_array_equal(zarr.open_group(t.path, mode="r")["thickness"][:], thick)
    assert t.header.extras == ("thickness",)


def test_a_shard_shorter_than_its_index_is_named_truncated(tmp_path):
    t = _build(tmp_path, shard=3)
    (t.path / "points" / "c" / "2" / "1" / "0").write_bytes(b"0123456789")  # records (2, 3..5)
    table = open_table(t.path)
    with pytest.raises(RecordCorrupt, match=r"shard \(2, 1\) of points is truncated"):
        table.read_record(2, 4)
    assert table.read_record(2, 2).shape[2] == 14  # (the shard before it is whole)


@pytest.mark.parametrize("shard", [0, 3])
def test_verify_catches_flipped_byte_and_missing_record(tmp_path, shard):
    t = _build(tmp_path, shard=shard)
    assert verify_table(t.path).ok
    if shard:
        shard_file = t.path / "points" / "c" / "2" / "1" / "0"  # records (2, 3..5)
        raw = bytearray(shard_file.read_bytes())
        raw[t.header.record_bytes + 4 + 100] ^= 0x01  # inside record (2, 4)
        shard_file.write_bytes(bytes(raw))
        flipped = (2, 4)
        missing_file, missing = t.path / "points" / "c" / "4" / "2" / "0", [(4, 6), (4, 7)]
    else:
        f = t.path / "points" / "c" / "2" / "4" / "0"
        raw = bytearray(f.read_bytes())
        raw[100] ^= 0x01
        f.write_bytes(bytes(raw))
        flipped = (2, 4)
        missing_file, missing = t.path / "points" / "c" / "4" / "6" / "0", [(4, 6)]
    os.remove(missing_file)
    report = verify_table(t.path)
    assert not report.ok
    assert set(report.bad_records) == {flipped, *missing}
    assert "digest mismatch" in " ".join(report.problems)
    with pytest.raises(RecordCorrupt, match=r"\(2, 4\)"):
        open_table(t.path).read_record(*flipped)
    # the CLI lists the failing records and exits 1
    r = subprocess.run([sys.executable, "-m", "preprocess.cli", "verify", str(t.path)], capture_output=True,
                       text=True)
    assert r.returncode == 1
    assert "record (2, 4)" in r.stderr and f"record {missing[0]}".replace("(", "(") in r.stderr


def test_verify_catches_physical_errors(tmp_path):
    rng = np.random.default_rng(2)
    data = np.zeros((8, 8, 14))
    data[..., 0] = np.arange(8)[:, None]
    data[..., 1] = np.arange(8)[None, :]
    data[..., 2:5] = rng.random((8, 8, 3))
    data[..., 8] = 1.0  # tu = x
    data[..., 12] = 1.0  # tv = y
    data[..., 7] = 1.0  # n = z
    assert verify_table(_write_random(tmp_path / "good.zarr", data).path).ok
    bad = data.copy()
    bad[5, 6, 7] = 0.9  # |n| != 1 in record (1, 1)
    report = verify_table(_write_random(tmp_path / "bad.zarr", bad).path)
    assert set(report.bad_records) == {(1, 1)} and "|n| != 1" in report.bad_records[(1, 1)]
    assert not report.problems  # the digest matches: the table was written that way
    flipped = data.copy()
    flipped[..., 7] = -1.0  # n antiparallel to tu x tv, header says not flipped
    report = verify_table(_write_random(tmp_path / "flip.zarr", flipped).path)
    assert len(report.bad_records) == 4
    assert verify_table(_write_random(tmp_path / "flip2.zarr", flipped, normal_sign=-1).path).ok


def test_out_of_range_and_missing(tmp_path):
    t = _build(tmp_path)
    for block in [RecordBlock(0, 6, 0, 1), RecordBlock(-1, 1, 0, 1), RecordBlock(2, 2, 0, 1)]:
        with pytest.raises(RecordOutOfRange):
            t.read_block(block)
    with pytest.raises(TableNotFound):
        open_table(tmp_path / "nope.zarr")


@pytest.mark.parametrize("damage", ["cut", "missing", "bad_header"])
def test_failed_open_never_closes_a_descriptor_twice(tmp_path, damage):
    """A table that fails to open must not close its folder descriptor again when collected: by
    then the number may belong to another open file (the store served wrong records that way)."""
    import gc

    from surfacestore.errors import TableCorrupt

    t = _build(tmp_path)
    meta = t.path / "zarr.json"
    t.close()
    text = meta.read_text()
    if damage == "cut":
        meta.write_text(text[: len(text) // 2])
    elif damage == "missing":
        meta.unlink()
    else:
        meta.write_text(text.replace('"u_pts": 9', '"u_pts": "nine"'))
    with pytest.raises((TableCorrupt, TableNotFound)) as failed:
        fmt.Table(t.path)
    # the number the failed open released is the lowest free one: the next open reuses it, while
    # the half-built Table is still alive in the exception's traceback (as in a server's handler)
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        del failed
        gc.collect()  # runs the failed Table's __del__
        os.fstat(fd)  # still ours
    finally:
        os.close(fd)


def test_existing_output_refused_unless_overwrite(tmp_path):
    t = _build(tmp_path)
    digest = t.header.digest
    with pytest.raises(TableExists):
        _build(tmp_path)
    spec = parse_surface("s", {**SPHERE, "radius": 0.03, "grid": [40, 50], "record": [9, 7]})
    t3 = build_surface(spec, tmp_path, overwrite=True)
    assert t3.header.digest != digest
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.zarr"]


def test_failed_build_leaves_nothing(tmp_path, monkeypatch):
    import preprocess.build as build

    calls = {"n": 0}
    real = build.sample_points

    def failing(*args, **kw):
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError(28, "No space left on device")
        return real(*args, **kw)

    monkeypatch.setattr(build, "sample_points", failing)
    with pytest.raises(OSError, match="No space"):
        _build(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_a_table_larger_than_the_free_space_is_refused_before_writing(tmp_path):
    # 10^7 x 10^7 points, uncompressed: 11 PB, more than any disk here; its size is known beforehand
    spec = tmp_path / "huge.toml"
    spec.write_text('[surfaces.huge]\nfamily = "plane"\nu_range = [0, 1]\nv_range = [0, 1]\n'
                    'grid = [10000000, 10000000]\nrecord = [100, 100]\n')
    r = subprocess.run([sys.executable, "-m", "preprocess.cli", "build", str(spec), "--out", str(tmp_path / "out")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert "huge.zarr: the table (10000000 x 10000000 points) needs 1.12e+07 GB" in r.stderr, r.stderr
    assert list((tmp_path / "out").iterdir()) == []


def test_a_disk_filling_during_a_build_is_named_and_keeps_the_old_table(tmp_path, monkeypatch):
    from surfacestore.errors import InsufficientSpace

    old = _build(tmp_path)
    writes = {"n": 0}
    real = os.writev

    def filling(fd, views):
        writes["n"] += 1
        if writes["n"] == 2:
            raise OSError(28, "No space left on device")
        return real(fd, views)

    monkeypatch.setattr(os, "writev", filling)  # (the writer calls os.writev)
    with pytest.raises(InsufficientSpace, match=r"s.zarr: the disk filled while the table was written \(No space"):
        build_surface(parse_surface("s", {**SPHERE, "radius": 0.03, "grid": [40, 50], "record": [9, 7]}), tmp_path,
                      overwrite=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.zarr"]  # no temporary folder left
    assert open_table(tmp_path / "s.zarr").header.digest == old.header.digest
    assert verify_table(tmp_path / "s.zarr").ok


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_cli_build_leaves_no_table(tmp_path, sig):
    spec = tmp_path / "big.toml"
    spec.write_text('[surfaces.big]\nfamily = "plane"\nu_range = [0, 1]\nv_range = [0, 1]\n'
                    'grid = [3000, 3000]\nrecord = [9, 9]\n')
    out = tmp_path / "out"
    # as a foreground command: a shell without job control starts background jobs with SIGINT
    # ignored, which Python (rightly) keeps
    proc = subprocess.Popen([sys.executable, "-m", "preprocess.cli", "build", str(spec), "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 60
    while time.time() < deadline and not (out.exists() and any(out.iterdir())):
        time.sleep(0.05)
    time.sleep(0.5)  # well inside the build (several seconds)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in err
    assert list(out.iterdir()) == []  # not even a hidden temporary folder
