"""One suite that every source passes (as zarr's StoreTests): local, HTTP (through
``httpx.MockTransport`` on the real store app, no socket), memory and counting sources."""

from __future__ import annotations

import asyncio
import dataclasses

import httpx
import numpy as np
import pytest
import zarr

from preprocess.build import build_surface, parse_surface
from simclient.errors import SourceNotFound, SourceRequestError
from simclient.io import CountingSource, HttpSource, LocalSource, MemorySource, Source, open_surface, read_field
from surfacestore.app import create_app
from surfacestore.settings import Settings

KINDS = ["local", "http", "memory", "counting"]
#: blocks read from each table: the ground (81-point records), a small plane (short last records)
BLOCKS = {"ground": [(0, 1, 0, 1), (17, 20, 17, 20), (36, 37, 0, 37)],
          "layer": [(0, 5, 0, 5), (4, 5, 4, 5), (2, 5, 3, 4)]}


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    """The sample ground, and a small plane with short last records and two extra per-point fields."""
    from preprocess.samples import ensure_sample_tables

    root = tmp_path_factory.mktemp("sources")
    ensure_sample_tables(root, names=["ground"])
    spec = parse_surface("layer", {"family": "plane", "u_range": [-0.01, 0.01], "v_range": [-0.02, 0.02],
                                   "grid": [40, 31], "record": [9, 7]})
    build_surface(dataclasses.replace(spec, extras={"thickness": lambda p: 0.002 + 0.05 * p[..., 2] ** 2,
                                                    "code": lambda p: p[..., 0] * 1e3 + p[..., 1]}), root)
    return root


@pytest.fixture(scope="module")
def app_client(tables):
    """The real store app, called in-process through httpx's ASGI transport."""
    return create_app(Settings(root=tables))


def _mock_transport(app) -> httpx.MockTransport:
    """A synchronous transport whose handler sends each request to the app (no socket)."""
    async def send(request: httpx.Request) -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://store") as client:
            r = await client.request(request.method, request.url.raw_path.decode(), headers=request.headers)
            return httpx.Response(r.status_code, headers=r.headers, content=r.content)

    return httpx.MockTransport(lambda request: asyncio.run(send(request)))


def make_source(kind: str, tables, name: str, app_client) -> Source:
    path = tables / f"{name}.zarr"
    if kind == "local":
        return LocalSource(path)
    if kind == "http":
        return HttpSource(f"http://store/v1/surfaces/{name}", transport=_mock_transport(app_client), retries=0)
    if kind == "memory":
        return MemorySource.load(LocalSource(path))
    return CountingSource(LocalSource(path))


@pytest.mark.parametrize("kind", KINDS)
class TestSource:
    def test_protocol_and_header(self, kind, tables, app_client):
        ref = LocalSource(tables / "ground.zarr")
        src = make_source(kind, tables, "ground", app_client)
        assert isinstance(src, Source)
        assert src.name == "ground"
        assert src.header == ref.header
        assert src.remote == (kind == "http")

    @pytest.mark.parametrize("name", list(BLOCKS))
    def test_blocks_equal_the_table(self, kind, name, tables, app_client):
        full = zarr.open_group(tables / f"{name}.zarr", mode="r")["points"][:]  # the reference reader
        src = make_source(kind, tables, name, app_client)
        h = src.header
        for ri0, ri1, rj0, rj1 in BLOCKS[name]:
            block = src.read_block(ri0, ri1, rj0, rj1)
            i0, j0 = ri0 * h.u_pts, rj0 * h.v_pts
            np.testing.assert_array_equal(block, full[i0:i0 + block.shape[0], j0:j0 + block.shape[1]])
            assert block.shape == (min(ri1 * h.u_pts, h.u_npts) - i0, min(rj1 * h.v_pts, h.v_npts) - j0, 14)

    def test_extra_fields(self, kind, tables, app_client):
        src = make_source(kind, tables, "layer", app_client)
        assert set(src.header.extras) == {"thickness", "code"}
        group = zarr.open_group(tables / "layer.zarr", mode="r")
        for name in src.header.extras:
            np.testing.assert_array_equal(read_field(src, name), group[name][:])
        np.testing.assert_array_equal(src.read_block(1, 3, 2, 5, "code"), group["code"][9:27, 14:35])
        with pytest.raises(SourceRequestError, match="nope"):
            read_field(src, "nope")

    def test_out_of_range_is_a_request_error(self, kind, tables, app_client):
        src = make_source(kind, tables, "ground", app_client)
        n_u, n_v = src.header.n_rec_u, src.header.n_rec_v
        for block in [(0, n_u + 1, 0, 1), (-1, 1, 0, 1), (2, 2, 0, 1), (0, 1, n_v, n_v + 1)]:
            with pytest.raises(SourceRequestError, match="ground"):
                src.read_block(*block)


def test_counting_source_counts(tables):
    src = CountingSource(LocalSource(tables / "ground.zarr"))
    src.read_block(0, 2, 0, 3)
    src.read_block(5, 6, 5, 6)
    assert (src.requests, src.records_fetched) == (2, 7)
    assert src.bytes_fetched == 7 * 81 * 14 * 8 and src.wait_s > 0


@pytest.mark.parametrize("location", ["nope.zarr", "http://store/v1/surfaces/nope"])
def test_unknown_table_is_not_found(location, tables, app_client):
    kw = {"transport": _mock_transport(app_client), "retries": 0} if location.startswith("http") else {}
    with pytest.raises(SourceNotFound, match="nope"):
        open_surface(location if location.startswith("http") else tables / location, **kw)


def test_a_store_that_does_not_answer_is_said_to_be_retried(caplog):
    """The first failure says that the request is retried and for how long (before, 9.7 s of
    silence preceded "failed after 9 attempts")."""
    import logging
    import socket

    from simclient.errors import SourceUnavailable
    from simclient.io import HttpSource

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # (closed again: nothing listens there)
    with caplog.at_level(logging.WARNING, logger="simclient.io"), pytest.raises(SourceUnavailable, match="3 attempts"):
        HttpSource(f"http://127.0.0.1:{port}/v1/surfaces/ball", retries=2, backoff=0.01)
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and "retrying up to 2 times" in said[0] and "ball" in said[0], said
