"""The surface store over real HTTP: endpoints, headers, errors, security, faults, zarr over HTTP."""

from __future__ import annotations

import io
import os
import shutil
import threading
import time
import warnings

import httpx
import numpy as np
import pytest
import zarr
from conftest import StoreProcess

from preprocess.build import build_surface, parse_surface
from simclient import HttpSource, LocalSource, open_surface
from simclient.io import KeepAliveTransport
from simclient.errors import SourceCorrupt, SourceNotFound, SourceRequestError, TableChanged
from surfacestore.catalog import Catalog
from surfacestore.format import RecordBlock, open_table, window_block


def _npy(r: httpx.Response) -> np.ndarray:
    assert r.headers["content-type"] == "application/x-npy"
    return np.load(io.BytesIO(r.content))


def _build(root, name, grid=(40, 50), record=(9, 7), radius=0.02, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build_surface(parse_surface(name, {"family": "sphere", "radius": radius, "u_range_deg": [-80, 80],
                                                  "grid": list(grid), "record": list(record), **kw}), root,
                             overwrite=True)


def test_health_list_header(store, sample_tables):
    assert httpx.get(store.url + "/v1/health").json()["status"] == "ok"
    listed = {t["name"]: t for t in httpx.get(store.url + "/v1/surfaces").json()}
    assert {"ball", "ground", "plateau_medial"} <= set(listed)
    assert listed["ground"]["records"] == [37, 37] and listed["ground"]["shape"] == [333, 333, 14]
    r = httpx.get(store.url + "/v1/surfaces/ground")
    h = open_table(sample_tables / "ground.zarr").header
    assert r.json() == h.to_dict()
    assert r.headers["etag"] == f'"{h.digest[7:]}"'
    r304 = httpx.get(store.url + "/v1/surfaces/ground", headers={"If-None-Match": r.headers["etag"]})
    assert r304.status_code == 304 and r304.content == b""


def test_record_block_window(store, sample_tables):
    local = open_table(sample_tables / "ground.zarr")
    r = httpx.get(store.url + "/v1/surfaces/ground/records/5/7")
    np.testing.assert_array_equal(_npy(r), local.read_record(5, 7))
    assert r.headers["x-record-start"] == "5,7" and r.headers["x-record-extent"] == "1,1"
    assert r.headers["x-point-start"] == "45,63"
    assert r.headers["cache-control"] == "no-cache"
    assert "read;dur=" in r.headers["server-timing"]
    r = httpx.get(store.url + "/v1/surfaces/ground/block", params={"ri0": 2, "ri1": 5, "rj0": 30, "rj1": 37})
    np.testing.assert_array_equal(_npy(r), local.read_block(RecordBlock(2, 5, 30, 37)))
    assert _npy(r).shape == (27, 333 - 270, 14)  # the last record column is short (333 = 36*9 + 9)
    # a window at the border is shifted inward, and says which records it holds
    r = httpx.get(store.url + "/v1/surfaces/ground/window", params={"ri": 0, "rj": 36, "wu": 3, "wv": 9})
    assert r.headers["x-record-start"] == "0,28" and r.headers["x-record-extent"] == "3,9"
    np.testing.assert_array_equal(_npy(r), local.read_block(RecordBlock(0, 3, 28, 37)))
    etag = r.headers["etag"]
    r2 = httpx.get(store.url + "/v1/surfaces/ground/window", params={"ri": 0, "rj": 36, "wu": 3, "wv": 9},
                   headers={"If-None-Match": etag})
    assert r2.status_code == 304
    assert window_block(local.header, 0, 36, 3, 9) == RecordBlock(0, 3, 28, 37)
    assert window_block(local.header, 18, 18, 3, 3) == RecordBlock(17, 20, 17, 20)


@pytest.mark.parametrize("path, status, error, detail", [
    ("/v1/surfaces/nope", 404, "not_found", "nope"),
    ("/v1/surfaces/nope/block?ri0=0&ri1=1&rj0=0&rj1=1", 404, "not_found", "nope"),
    ("/v1/surfaces/ground/block?ri0=0&ri1=38&rj0=0&rj1=1", 422, "out_of_range", "records [0, 38) x [0, 1)"),
    ("/v1/surfaces/ground/block?ri0=-1&ri1=1&rj0=0&rj1=1", 422, "invalid_parameters", "ri0: must be >= 0, got -1"),
    ("/v1/surfaces/ground/block?ri0=a&ri1=1&rj0=0&rj1=1", 422, "invalid_parameters", "ri0: not an integer: 'a'"),
    ("/v1/surfaces/ground/block?ri0=1.5&ri1=2&rj0=0&rj1=1", 422, "invalid_parameters",
     "ri0: not an integer: '1.5'"),
    ("/v1/surfaces/ground/block?ri0=2&ri1=1&rj0=0&rj1=1", 422, "out_of_range", "records [2, 1) x [0, 1)"),
    ("/v1/surfaces/ground/block?ri0=0&ri1=37&rj0=0&rj1=37", 413, "block_too_large", "1369 records"),
    ("/v1/surfaces/ground/records/37/0", 404, "not_found", "records [37, 38) x [0, 1)"),  # (no such record)
    ("/v1/surfaces/ground/records/-1/0", 422, "invalid_parameters", "ri: must be >= 0, got -1"),
    ("/v1/surfaces/ground/window?ri=0&rj=0&wu=0&wv=3", 422, "invalid_parameters", "wu: must be >= 1, got 0"),
    ("/v1/surfaces/ground/window?ri=40&rj=0&wu=3&wv=3", 422, "out_of_range", "records [40, 41) x [0, 1)"),
    ("/v1/surfaces/ground/block?ri0=0&ri1=1&rj0=0&rj1=1&array=thickness", 422, "invalid_parameters",
     "thickness"),
])
def test_errors(store, path, status, error, detail):
    r = httpx.get(store.url + path)
    assert r.status_code == status, r.text
    body = r.json()
    assert body["error"] == error and detail in body["detail"], body


@pytest.mark.parametrize("path", [
    "/v1/surfaces/..%2Fground", "/v1/surfaces/%2e%2e", "/v1/surfaces/.ground", "/v1/surfaces/%2Fetc%2Fpasswd",
    "/zarr/ground/..%2F..%2Fetc%2Fpasswd", "/zarr/ground/../ball.zarr/zarr.json", "/zarr/ground/%2Fetc%2Fpasswd",
    "/zarr/..%2Fground/zarr.json", "/zarr/ground/points/../zarr.json", "/zarr/ground/.%2E/zarr.json",
])
def test_traversal_is_404(store, path):
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", store.port, timeout=10)  # sends the path verbatim
    conn.request("GET", path)
    r = conn.getresponse()
    body = r.read()
    conn.close()
    assert r.status == 404, (path, r.status, body[:200])


def test_symlink_out_of_root_is_404(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    _build(outside, "secret")
    os.symlink(outside / "secret.zarr", root / "secret.zarr")
    cat = Catalog(root)
    assert cat.names() == []
    with pytest.raises(FileNotFoundError):
        cat.get("secret")


def test_token(tmp_path):
    _build(tmp_path, "s")
    s = StoreProcess(tmp_path, "--token", "s3cret")
    try:
        assert httpx.get(s.url + "/v1/health").status_code == 200
        for path in ["/v1/surfaces", "/v1/surfaces/s", "/v1/surfaces/s/records/0/0", "/zarr/s/zarr.json"]:
            r = httpx.get(s.url + path)
            assert r.status_code == 401 and r.json()["error"] == "unauthorized"
            assert r.json()["detail"] == "this store requires 'Authorization: Bearer <token>'"
            r = httpx.get(s.url + path, headers={"Authorization": "Bearer wrong"})
            assert r.status_code == 401 and r.json()["detail"] == "the bearer token was refused"
            assert httpx.get(s.url + path, headers={"Authorization": "Bearer s3cret"}).status_code == 200
        with pytest.raises(SourceRequestError, match="401"):
            HttpSource(s.url + "/v1/surfaces/s", retries=0)
        src = HttpSource(s.url + "/v1/surfaces/s", token="s3cret")
        assert src.read_block(0, 1, 0, 1).shape == (9, 7, 14)
    finally:
        s.stop()


def test_corrupt_record_is_503_and_others_still_served(tmp_path):
    good, bad = _build(tmp_path, "good"), _build(tmp_path, "bad")
    f = bad.path / "points" / "c" / "1" / "1" / "0"
    raw = bytearray(f.read_bytes())
    raw[50] ^= 0xFF
    f.write_bytes(bytes(raw))
    trunc = bad.path / "points" / "c" / "2" / "2" / "0"
    trunc.write_bytes(trunc.read_bytes()[:1000])
    s = StoreProcess(tmp_path)
    try:
        for rec in ("1/1", "2/2"):
            r = httpx.get(f"{s.url}/v1/surfaces/bad/records/{rec}")
            assert r.status_code == 503 and r.json()["error"] == "record_corrupt"
            assert f"({rec.replace('/', ', ')})" in r.json()["detail"]
        assert httpx.get(f"{s.url}/v1/surfaces/bad/records/0/0").status_code == 200
        r = httpx.get(f"{s.url}/v1/surfaces/good/block", params={"ri0": 0, "ri1": 5, "rj0": 0, "rj1": 8})
        np.testing.assert_array_equal(_npy(r), good.read_block(RecordBlock(0, 5, 0, 8)))
        # a corrupt record is the store's definite answer: asked once, not retried
        sent = []

        class Counting(KeepAliveTransport):
            def handle_request(self, request: httpx.Request) -> httpx.Response:
                sent.append(request.url.path)
                return super().handle_request(request)

        src = HttpSource(f"{s.url}/v1/surfaces/bad", retries=8, backoff=1.0, transport=Counting(10.0))
        with pytest.raises(SourceCorrupt, match=r"bad: records \[1, 2\) x \[1, 2\).*503.*record_corrupt"):
            src.read_block(1, 2, 1, 2)
        assert sent == ["/v1/surfaces/bad", "/v1/surfaces/bad/block"]  # the header, then the block once
    finally:
        s.stop()


def test_catalog_notices_added_removed_and_rebuilt_tables(tmp_path):
    s = StoreProcess(tmp_path)
    try:
        assert httpx.get(s.url + "/v1/surfaces").json() == []
        t = _build(tmp_path, "late")
        assert [x["name"] for x in httpx.get(s.url + "/v1/surfaces").json()] == ["late"]
        d1 = httpx.get(s.url + "/v1/surfaces/late").json()["digest"]
        r1 = _npy(httpx.get(s.url + "/v1/surfaces/late/records/0/0"))
        t2 = _build(tmp_path, "late", radius=0.03)  # rebuilt under the same name
        assert httpx.get(s.url + "/v1/surfaces/late").json()["digest"] == t2.header.digest != d1
        r2 = _npy(httpx.get(s.url + "/v1/surfaces/late/records/0/0"))
        np.testing.assert_array_equal(r2, t2.read_record(0, 0))
        assert not np.array_equal(r1, r2)
        shutil.rmtree(t.path)
        assert httpx.get(s.url + "/v1/surfaces").json() == []
        assert httpx.get(s.url + "/v1/surfaces/late").status_code == 404
    finally:
        s.stop()


def test_replaced_table_never_mixes_versions(tmp_path):
    """A reader holding the old version keeps reading it; once it is gone the catalog rereads the
    whole block from the new version."""
    old = _build(tmp_path, "t", radius=0.02)
    cat = Catalog(tmp_path)
    table = cat.get("t")
    first = cat.read_block("t", RecordBlock(0, 2, 0, 2))[1].copy()
    new = _build(tmp_path, "t", radius=0.03)  # atomic replace; the old folder is deleted
    _, block = cat.read_block("t", RecordBlock(0, 5, 0, 8))
    np.testing.assert_array_equal(block, new.read_block(RecordBlock(0, 5, 0, 8)))
    assert cat.get("t") is not table
    # every value of the block comes from one version: radius 0.03 everywhere
    np.testing.assert_allclose(np.linalg.norm(block[..., 2:5], axis=-1), 0.03, rtol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(first[..., 2:5], axis=-1), 0.02, rtol=1e-12)
    del old


def test_zarr_python_reads_over_http(store, sample_tables, tmp_path):
    for name in ("ground", "ball"):
        g = zarr.open_group(f"{store.url}/zarr/{name}", mode="r")
        local = open_table(sample_tables / f"{name}.zarr")
        h = local.header
        np.testing.assert_array_equal(g["points"][h.u_pts:2 * h.u_pts, :h.v_pts], local.read_record(1, 0))
        assert g.attrs["surface"]["digest"] == h.digest


def test_zarr_python_reads_sharded_table_over_http(tmp_path):
    t = _build(tmp_path, "sh", shard=3)
    s = StoreProcess(tmp_path)
    try:
        g = zarr.open_group(f"{s.url}/zarr/sh", mode="r")
        np.testing.assert_array_equal(g["points"][18:27, 28:35], t.read_record(2, 4))
    finally:
        s.stop()


def test_http_and_local_sources_identical(store, sample_tables):
    for name in ("ground", "ball_333"):
        http = open_surface(f"{store.url}/v1/surfaces/{name}")
        local = open_surface(sample_tables / f"{name}.zarr")
        assert isinstance(http, HttpSource) and isinstance(local, LocalSource)
        assert http.header == local.header
        h = local.header
        rng = np.random.default_rng(5)
        for _ in range(10):
            ri0, rj0 = rng.integers(h.n_rec_u), rng.integers(h.n_rec_v)
            ri1, rj1 = min(ri0 + rng.integers(1, 4), h.n_rec_u), min(rj0 + rng.integers(1, 4), h.n_rec_v)
            np.testing.assert_array_equal(http.read_block(ri0, ri1, rj0, rj1), local.read_block(ri0, ri1, rj0, rj1))


def test_http_source_errors_name_table_and_records(store):
    with pytest.raises(SourceNotFound, match="nope"):
        open_surface(store.url + "/v1/surfaces/nope")
    src = open_surface(store.url + "/v1/surfaces/ground")
    with pytest.raises(SourceRequestError, match=r"ground: records \[0, 40\) x \[0, 1\): HTTP 422"):
        src.read_block(0, 40, 0, 1)


def test_http_source_retries_5xx_and_detects_changed_table():
    calls = {"n": 0}
    header = {"format": "surfacetable/1", "fields": ["u", "v", "x", "y", "z", "nx", "ny", "nz", "tux", "tuy",
                                                     "tuz", "tvx", "tvy", "tvz"],
              "u_npts": 2, "v_npts": 2, "u_pts": 2, "v_pts": 2, "u0": 0, "v0": 0, "du": 1, "dv": 1,
              "digest": "sha256:" + "d1" * 32}
    body = io.BytesIO()
    np.save(body, np.zeros((2, 2, 14)))

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/block"):
            calls["n"] += 1
            if calls["n"] < 3:
                return httpx.Response(503, text="Service Unavailable")  # a busy server (concurrency limit)
            digest = "sha256:" + ("d1" if calls["n"] == 3 else "d2") * 32
            return httpx.Response(200, content=body.getvalue(), headers={"X-Table-Digest": digest})
        return httpx.Response(200, json=header)

    src = HttpSource("http://store/v1/surfaces/t", transport=httpx.MockTransport(handler),
                     backoff=0.001)
    assert src.read_block(0, 1, 0, 1).shape == (2, 2, 14)
    assert calls["n"] == 3
    with pytest.raises(TableChanged, match="t: records"):
        src.read_block(0, 1, 0, 1)


@pytest.mark.slow
def test_client_survives_store_restart(sample_tables):
    s = StoreProcess(sample_tables)
    try:
        src = HttpSource(f"{s.url}/v1/surfaces/ground", backoff=0.05, retries=20)
        local = LocalSource(sample_tables / "ground.zarr")
        before = src.read_block(3, 6, 3, 6)
        s.stop()

        def restart():
            time.sleep(0.5)
            s.start(wait=False)

        threading.Thread(target=restart).start()
        after = src.read_block(3, 6, 3, 6)  # retried until the new server answers
        np.testing.assert_array_equal(after, before)
        np.testing.assert_array_equal(after, local.read_block(3, 6, 3, 6))
    finally:
        time.sleep(0.2)
        s.stop()


@pytest.mark.slow
def test_load_32_clients_random_windows(store, sample_tables):
    """32 concurrent clients fetch random windows for a bounded time: no errors, every byte equal."""
    seconds = float(os.environ.get("STORE_LOAD_SECONDS", "8"))
    local = open_table(sample_tables / "ground.zarr")
    h = local.header
    errors: list[str] = []
    counts = []

    def client(seed: int) -> None:
        """Even seeds: httpx.Client on the window endpoint; odd: HttpSource (its own transport)."""
        rng = np.random.default_rng(seed)
        n = 0
        src = HttpSource(f"{store.url}/v1/surfaces/ground", retries=0) if seed % 2 else None
        with httpx.Client(timeout=30) as c:
            end = time.time() + seconds
            while time.time() < end and n < 5000:
                ri, rj = int(rng.integers(h.n_rec_u)), int(rng.integers(h.n_rec_v))
                blk = window_block(h, ri, rj, 3, 3)
                try:
                    if src is None:
                        r = c.get(f"{store.url}/v1/surfaces/ground/window", params={"ri": ri, "rj": rj, "wu": 3, "wv": 3})
                        r.raise_for_status()
                        got = _npy(r)
                    else:
                        got = src.read_block(blk.ri0, blk.ri1, blk.rj0, blk.rj1)
                    if not np.array_equal(got, local.read_block(blk)):
                        errors.append(f"data differs at {blk}")
                except Exception as exc:  # noqa: BLE001 - collected and reported
                    errors.append(repr(exc))
                n += 1
        counts.append(n)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(32)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:5]
    assert len(counts) == 32 and sum(counts) > 32


def test_fast_path_and_fastapi_routes_agree(sample_tables):
    """The data endpoints answer identically through the ASGI fast path and the FastAPI routes."""
    import asyncio

    from surfacestore.app import create_app
    from surfacestore.settings import Settings

    paths = ["/v1/surfaces/ground/records/5/7", "/v1/surfaces/ground/block?ri0=2&ri1=5&rj0=30&rj1=37",
             "/v1/surfaces/ground/window?ri=0&rj=36&wu=3&wv=9", "/v1/surfaces/nope/block?ri0=0&ri1=1&rj0=0&rj1=1",
             "/v1/surfaces/ground/block?ri0=-1&ri1=1&rj0=0&rj1=1", "/v1/surfaces/ground/block?ri0=0&ri1=37&rj0=0&rj1=37",
             "/v1/surfaces/ground/records/37/0", "/v1/surfaces/ground/window?ri=0&rj=0&wu=0&wv=3"]

    async def fetch(fast: bool) -> list[tuple[int, bytes, str | None, str | None]]:
        app = create_app(Settings(root=sample_tables, fast_path=fast, max_block_records=1024))
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
            out = []
            for p in paths:
                r = await c.get(p)
                out.append((r.status_code, r.content, r.headers.get("etag"), r.headers.get("x-record-start")))
            return out

    fast, slow = asyncio.run(fetch(True)), asyncio.run(fetch(False))
    assert [f[0] for f in fast] == [200, 200, 200, 404, 422, 413, 404, 422]
    assert fast == slow


def test_http_source_splits_blocks_over_the_limit(sample_tables):
    s = StoreProcess(sample_tables, "--max-block-records", "100")
    try:
        src = HttpSource(f"{s.url}/v1/surfaces/ground")
        np.testing.assert_array_equal(src.read_block(0, 37, 0, 37),
                                      LocalSource(sample_tables / "ground.zarr").read_block(0, 37, 0, 37))
    finally:
        s.stop()
