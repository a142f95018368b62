"""Tables on S3-compatible object storage, against a real S3 API (a moto server started here):
build, verify and direct reads of ``s3://`` tables equal the local ones bit for bit, an interrupted
upload never looks like a table, the store serves a bucket (same bouncing ball as from a folder)
and answers 503 while the bucket fails; ``simclient run``, ``study`` and ``validate`` with
``--tables s3://...`` build their tables in the bucket and run on them."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np
import pytest

from conftest import SAMPLES
from simclient.bench import S3Server, StoreProcess, aws_environment
from preprocess.cli import main as preprocess_main
from simclient import open_surface
from simclient.errors import SourceNotFound, SourceUnavailable
from simclient.scenarios import Tables, get_scenario
from surfacestore import objects
from surfacestore.catalog import Catalog
from surfacestore.errors import TableNotFound
from surfacestore.format import open_table

pytestmark = pytest.mark.slow  # (the whole module: see `python3 dev.py test --fast`)

BUCKET = "tables"


@pytest.fixture(scope="module")
def s3():
    """A moto S3 server, the AWS environment pointing at it; yields ``s3://tables``."""
    server = S3Server(BUCKET)
    with aws_environment(server.aws_env(timeout_s=3)):
        yield f"s3://{BUCKET}"
    server.stop()


def _upload(folder: Path, url: str) -> None:
    """Publish a local table folder as it is (the bytes of every key unchanged)."""
    objects.publish(folder, url, overwrite=True)


def test_build_verify_and_read_directly(s3, tmp_path, capsys):
    """``preprocess build --out s3://...`` and ``preprocess verify s3://...``; every record read
    through ``open_surface("s3://...")`` equals the same definition built into a folder, and
    zarr-python reads the bucket's table too."""
    spec = SAMPLES / "bouncing_ball.toml"
    root = f"{s3}/build"
    assert preprocess_main(["build", str(spec), "--only", "ball_33", "--out", root]) == 0
    assert preprocess_main(["build", str(spec), "--only", "ball_33", "--out", str(tmp_path)]) == 0
    capsys.readouterr()
    assert preprocess_main(["verify", f"{root}/ball_33.zarr", "--json"]) == 0
    assert '"ok": true' in capsys.readouterr().out
    remote, local = open_surface(f"{root}/ball_33.zarr"), open_surface(tmp_path / "ball_33.zarr")
    assert remote.remote and not local.remote
    h = local.header
    assert dataclasses.replace(remote.header, created=h.created) == h  # the build time aside: same digest, grid
    a = remote.read_block(0, h.n_rec_u, 0, h.n_rec_v)
    assert np.array_equal(a, local.read_block(0, h.n_rec_u, 0, h.n_rec_v), equal_nan=True)
    g = open_table(f"{root}/ball_33.zarr").zarr_group()
    assert np.array_equal(g["points"][:], a, equal_nan=True)
    # an existing table is not replaced without --overwrite
    assert preprocess_main(["build", str(spec), "--only", "ball_33", "--out", root]) == 1
    assert "exists" in capsys.readouterr().err
    with pytest.raises(SourceNotFound):
        open_surface(f"{root}/nothing.zarr")


def test_interrupted_upload_is_never_a_table(s3, sample_tables, monkeypatch):
    """An upload that dies half-way (first build, then a rebuild over a published table) leaves a
    prefix without group metadata: no reader, verify or catalog takes it for a table; the next
    build publishes normally."""
    url = f"{s3}/broken/ball_33.zarr"
    import obstore

    calls = {"n": 0}
    original = obstore.put

    def failing_put(store, path, data, **kw):
        calls["n"] += 1
        if calls["n"] > 3:
            raise KeyboardInterrupt  # the build interrupted while uploading
        return original(store, path, data, **kw)

    for overwrite in (False, True):
        calls["n"] = 0
        monkeypatch.setattr(obstore, "put", failing_put)
        with pytest.raises(KeyboardInterrupt):
            objects.publish(sample_tables / "ball_33.zarr", url, overwrite=overwrite)
        monkeypatch.setattr(obstore, "put", original)
        assert calls["n"] > 3  # keys were uploaded before the interruption
        with pytest.raises(TableNotFound):
            open_table(url)
        assert preprocess_main(["verify", url]) == 1
        assert Catalog(f"{s3}/broken").names() == []
        objects.publish(sample_tables / "ball_33.zarr", url, overwrite=True)
        assert Catalog(f"{s3}/broken").names() == ["ball_33"]


@pytest.fixture(scope="module")
def s3_tables(s3, sample_tables):
    """The bouncing ball's tables (a small ball) uploaded key for key to ``s3://tables/lib``."""
    for name in ("ball_333", "ground"):
        _upload(sample_tables / f"{name}.zarr", f"{s3}/lib/{name}.zarr")
    return f"{s3}/lib"


def _ball(tables: Tables) -> dict:
    cls = get_scenario("bouncing-ball")
    s = cls().run(cls.Params(t_end=0.12), dataclasses.replace(tables, overrides={"ball": "ball_333"}))
    return {k: s[k] for k in ("impacts", "max_indentation_m", "separation_velocities_m_s")}


def test_store_serving_a_bucket_runs_the_ball_as_a_folder(s3_tables, sample_tables):
    """The store with ``--root s3://...``: the same records (digest and bytes) and the same bouncing
    ball, to the last bit, as from the folder."""
    with StoreProcess(s3_tables) as store:
        names = [t["name"] for t in httpx.get(f"{store.url}/v1/surfaces").json()]
        assert names == ["ball_333", "ground"]
        from_bucket = _ball(Tables(store=store.url))
        remote = open_surface(f"{store.url}/v1/surfaces/ground")
        local = open_surface(sample_tables / "ground.zarr")
        assert remote.header.digest == local.header.digest
        assert np.array_equal(remote.read_block(0, 3, 0, 3), local.read_block(0, 3, 0, 3))
        r = httpx.get(f"{store.url}/zarr/ground/zarr.json", headers={"Range": "bytes=0-9"})
        assert r.status_code == 206 and r.content == (sample_tables / "ground.zarr" / "zarr.json").read_bytes()[:10]
    from_folder = _ball(Tables(folder=str(sample_tables)))
    assert from_folder["impacts"] >= 1
    assert from_bucket == from_folder


def test_failing_bucket_gives_503_and_the_store_lives_on(sample_tables):
    """A bucket that stops answering: the store answers 503 ``storage_unavailable`` within its
    timeout (the records it has cached are still served) and keeps running; a direct reader gets
    SourceUnavailable. A record missing from one table is 503 ``record_corrupt`` for that table
    only."""
    server = S3Server(BUCKET)
    try:
        with aws_environment(server.aws_env(timeout_s=2)):
            root = f"s3://{BUCKET}/lib"
            for name in ("ball_33", "ball_9"):
                _upload(sample_tables / f"{name}.zarr", f"{root}/{name}.zarr")
            import obstore

            obstore.delete(objects._bucket(BUCKET), "lib/ball_9.zarr/points/c/0/1/0")
            with StoreProcess(root, "--cache-mb", "16") as store:
                ok = httpx.get(f"{store.url}/v1/surfaces/ball_33/records/0/0")
                assert ok.status_code == 200
                bad = httpx.get(f"{store.url}/v1/surfaces/ball_9/records/0/1")
                assert bad.status_code == 503 and bad.json()["error"] == "record_corrupt"
                assert httpx.get(f"{store.url}/v1/surfaces/ball_33/records/0/1").status_code == 200
                direct = open_surface(f"{root}/ball_33.zarr")
                server.stop()
                t0 = time.monotonic()
                r = httpx.get(f"{store.url}/v1/surfaces/ball_33/records/1/1", timeout=60)
                assert r.status_code == 503 and r.json()["error"] == "storage_unavailable", r.text
                assert time.monotonic() - t0 < 30
                assert httpx.get(f"{store.url}/v1/health").status_code == 200
                with pytest.raises(SourceUnavailable):
                    direct.read_block(1, 2, 1, 2)
    finally:
        server.stop()


def test_run_with_tables_in_a_bucket_builds_them_there(s3, tmp_path, capsys):
    """``simclient run --tables s3://BUCKET/PREFIX`` builds the missing sample tables under the
    prefix (published, as ``preprocess build --out s3://`` does), reads them directly from the
    bucket, and gives the same planar knee, to the last bit, as the same run on a folder; a second
    run finds them there and builds nothing."""
    from simclient.cli import main

    root = f"{s3}/runs"
    argv = ["run", "knee2d", "--t-end", "0.1", "--json"]

    def run(tables: str) -> dict:
        assert main([*argv, "--tables", tables]) == 0
        values = json.loads(capsys.readouterr().out)
        return {k: v for k, v in values.items() if k not in ("wall_s", "peak_rss_MB", "solver_stats")}

    from_bucket = run(root + "/")
    assert sorted(Catalog(root).names()) == ["knee2d_femur_shape-preserving", "knee2d_tibia_shape-preserving"]
    from_folder = run(str(tmp_path))
    assert from_bucket == from_folder and from_bucket["status"] == "ok"
    published = {n: open_table(f"{root}/{n}.zarr").header.created for n in Catalog(root).names()}
    assert run(root) == from_folder  # found there: not built again
    assert {n: open_table(f"{root}/{n}.zarr").header.created for n in Catalog(root).names()} == published


def test_study_on_a_bucket_finishes(s3):
    """``simclient study --tables s3://...`` runs its cases in worker processes that read the
    bucket (forked from a process holding the object store's runtime, they used to hang): every
    case ends, and R4's final flexion holds for each spline."""
    r = subprocess.run([sys.executable, "-m", "simclient.cli", "study", "knee2d-splines", "--tables", f"{s3}/study",
                        "--workers", "2", "--json"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    cases = json.loads(r.stdout)["cases"]
    assert len(cases) == 3 and all(c["status"] == "ok" for c in cases)
    assert all(c["final_flexion_deg"] == pytest.approx(-4.79, abs=0.05) for c in cases)


def test_validate_on_a_bucket_builds_only_the_tables_its_cases_read(s3, capsys):
    """``simclient validate CASE ... --tables s3://...`` publishes under the prefix just the sample
    tables its cases read, and the cases pass on them."""
    from simclient.cli import main

    root = f"{s3}/validate"
    assert main(["validate", "planar-hertz-tables", "blankevoort-winkler", "--tables", root, "--json"]) == 0
    cases = json.loads(capsys.readouterr().out)["cases"]
    assert [c["name"] for c in cases] == ["planar-hertz-tables", "blankevoort-winkler"]
    assert all(c["passed"] for c in cases)
    assert sorted(Catalog(root).names()) == ["knee2d_circle_femur", "knee2d_circle_tibia"]


def test_a_sharded_tables_neighbouring_records_come_in_one_ranged_read(s3, tmp_path, monkeypatch):
    """A sharded table on the bucket: every block read equals the folder's bit for bit, the
    records next to each other in a shard arrive in one ranged request (a 3 x 9 window of shards
    of 4 records: one request per shard it touches, not per record), and a record whose bytes are
    damaged inside a shard is named in the error."""
    from preprocess.build import build_surface, parse_surface
    from surfacestore.errors import RecordCorrupt
    from surfacestore.format import RecordBlock

    spec = parse_surface("sharded", {"family": "plane", "u_range": [0, 0.06], "v_range": [0, 0.06], "grid": [61, 61],
                                     "record": [5, 5], "shard": 4})
    folder = build_surface(spec, tmp_path).path
    url = f"{s3}/sharded/sharded.zarr"
    _upload(folder, url)
    local, remote = open_table(folder), open_table(url)
    assert remote.header.shard_records == 4
    calls: list[str] = []
    for name in ("read_range", "read_tail", "_head"):  # (every request a read makes)
        method = getattr(objects.ObjectFiles, name)
        monkeypatch.setattr(objects.ObjectFiles, name,
                            lambda self, rel, *a, _m=method, _n=name: calls.append(_n) or _m(self, rel, *a))
    seen: set[tuple[int, int]] = set()
    for block in (RecordBlock(0, 3, 0, 9), RecordBlock(5, 8, 3, 12), RecordBlock(2, 3, 1, 2), RecordBlock(0, 12, 0, 12)):
        calls.clear()
        np.testing.assert_array_equal(remote.read_block(block), local.read_block(block))
        shards = {(ri, rj // 4) for ri, rj in block.records()}
        # one ranged read a shard, and a shard's index once, in one request (no size asked first)
        assert calls.count("read_range") == len(shards) and calls.count("read_tail") == len(shards - seen), (block, calls)
        assert "_head" not in calls
        seen |= shards
    calls.clear()
    fresh = open_table(url)  # (its shard indexes not read yet)
    with ThreadPoolExecutor(8) as pool:  # eight threads asking for one shard at once: its index read once
        got = list(pool.map(lambda rj: fresh.read_record(6, rj), range(4, 8)))
    assert calls.count("read_tail") == 1 and calls.count("read_range") == 4, calls
    for rj, rec in zip(range(4, 8), got):
        np.testing.assert_array_equal(rec, local.read_record(6, rj))
    index = local._read_shard_index("points", 5, 1)
    offset = int(index[2][0])  # record (5, 6): bytes inside shard (5, 1)
    key = "sharded/sharded.zarr/points/c/5/1/0"
    import obstore

    store = objects._bucket(BUCKET)
    raw = bytearray(bytes(obstore.get(store, key).bytes()))
    raw[offset + 10] ^= 0xFF
    obstore.put(store, key, bytes(raw))
    fresh = open_table(url)
    with pytest.raises(RecordCorrupt, match=r"\(5, 6\)"):
        fresh.read_block(RecordBlock(4, 7, 4, 8))
    obstore.put(store, "sharded/sharded.zarr/points/c/7/0/0", b"0123456789")  # shorter than a shard's index
    with pytest.raises(RecordCorrupt, match=r"shard \(7, 0\) of points is truncated"):
        fresh.read_block(RecordBlock(7, 8, 0, 3))


def test_a_new_shards_records_are_read_alongside_its_index_and_checked_against_it(s3, tmp_path, monkeypatch):
    """Records of a shard whose index is not read yet are read where an uncompressed shard holds
    them, while the index is read (the data request does not wait for the index); where the index
    puts them elsewhere (a shard written in another order), they are read again by the index: the
    points are the folder's either way."""
    import threading

    import google_crc32c
    import obstore

    from preprocess.build import build_surface, parse_surface
    from surfacestore.format import RecordBlock

    spec = parse_surface("guessed", {"family": "plane", "u_range": [0, 0.06], "v_range": [0, 0.06], "grid": [61, 61],
                                     "record": [5, 5], "shard": 4})
    folder = build_surface(spec, tmp_path).path
    url = f"{s3}/guessed/guessed.zarr"
    _upload(folder, url)
    local = open_table(folder)
    data_asked = threading.Event()
    read_range, read_tail = objects.ObjectFiles.read_range, objects.ObjectFiles.read_tail
    monkeypatch.setattr(objects.ObjectFiles, "read_range",
                        lambda self, rel, offset, n: data_asked.set() or read_range(self, rel, offset, n))

    def index_after_data(self, rel, n):  # (the index answers only once the records were asked for)
        assert data_asked.wait(5), "the records were asked for only after the shard's index"
        return read_tail(self, rel, n)
    monkeypatch.setattr(objects.ObjectFiles, "read_tail", index_after_data)
    block = RecordBlock(2, 5, 1, 7)
    np.testing.assert_array_equal(open_table(url).read_block(block), local.read_block(block))
    # shard (3, 1) (records (3, 4..7)) rewritten with its records in reverse order, its index to match
    key = folder / "points" / "c" / "3" / "1" / "0"
    raw = key.read_bytes()
    size = local.record_nbytes() + 4
    chunks = [raw[j * size:(j + 1) * size] for j in range(4)][::-1]
    index = np.array([[(3 - j) * size, size] for j in range(4)], dtype="<u8").tobytes()
    shard = b"".join(chunks) + index + google_crc32c.value(index).to_bytes(4, "little")
    obstore.put(objects._bucket(BUCKET), "guessed/guessed.zarr/points/c/3/1/0", shard)
    np.testing.assert_array_equal(open_table(url).read_block(block), local.read_block(block))
