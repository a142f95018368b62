"""The read-only HTTP surface store (DESIGN.md, "HTTP API, version 1").

``create_app(settings)`` builds the FastAPI application: health, the table list, headers, records,
blocks and windows of records as NPY bodies, and the raw Zarr v3 keys of every table under
``/zarr/{name}/{key}`` so zarr-python can open a table over HTTP.

Binary responses carry::

    ETag             strong, from the table digest and the block (If-None-Match -> 304)
    Cache-Control    no-cache: clients may keep a copy but revalidate, because a table may be
                     rebuilt under the same name (its digest, hence the ETag, then changes)
    X-Table-Digest   the digest of the table version the body comes from
    X-Record-Start   "ri0,rj0": the block's first record
    X-Record-Extent  "nri,nrj": records in u and v
    X-Point-Start    "i0,j0": the grid index of the body's first point
    Server-Timing    read (records from cache or disk) and encode durations

Errors are JSON ``{"error": ..., "detail": ...}``: 401 missing/wrong token, 404 unknown table or
key, 413 block larger than the limit, 422 bad or out-of-range parameters, 503 table unreadable.
"""

from __future__ import annotations

import functools
import io
import json
import logging
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import numpy as np
from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from surfacestore.catalog import Catalog, RecordCache
from surfacestore.errors import (
    BlockTooLarge,
    InvalidTableName,
    RecordOutOfRange,
    SurfaceStoreError,
    TableCorrupt,
    TableNotFound,
    UnknownField,
)
from surfacestore.format import TABLE_SUFFIX, RecordBlock, Table, tune_allocator, window_block
from surfacestore.settings import Settings

__all__ = ["create_app", "create_app_from_env", "npy_bytes"]

log = logging.getLogger("surfacestore")
NPY = "application/x-npy"


@functools.lru_cache(maxsize=256)
def _npy_header(shape: tuple[int, ...], descr: str) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": descr, "fortran_order": False, "shape": shape})
    return buf.getvalue()


def npy_bytes(arr: np.ndarray) -> bytes:
    """``arr`` serialised as an NPY file (readable by ``numpy.load``), with a single copy."""
    arr = np.ascontiguousarray(arr)
    descr = np.lib.format.dtype_to_descr(arr.dtype)
    assert isinstance(descr, str)  # a plain dtype, never a structured one here
    return b"".join((_npy_header(arr.shape, descr), memoryview(arr.data).cast("B")))


class _Unauthorized(Exception):
    pass


class _BadParameter(Exception):
    pass


def _int(raw: str | None, name: str, minimum: int = 0) -> int:
    if raw is None:
        raise _BadParameter(f"{name}: missing")
    try:
        value = int(raw)
    except ValueError:
        raise _BadParameter(f"{name}: not an integer: {raw!r}") from None
    if value < minimum:
        raise _BadParameter(f"{name}: must be >= {minimum}, got {value}")
    return value


_PARAM_DOCS = {
    "ri0": "first record in u", "ri1": "end record in u (exclusive)", "rj0": "first record in v",
    "rj1": "end record in v (exclusive)", "ri": "centre record in u", "rj": "centre record in v",
    "wu": "window extent in records (u)", "wv": "window extent in records (v)",
    "array": "'points' (default) or an extra per-point field",
}


def _params_doc(*names: str) -> dict[str, Any]:
    return {"parameters": [{"name": n, "in": "query", "required": n != "array", "description": _PARAM_DOCS[n],
                            "schema": {"type": "string" if n == "array" else "integer"}} for n in names]}


def _error_parts(exc: BaseException) -> tuple[int, str, str]:
    """HTTP status, error code and detail for an exception (DESIGN's JSON errors)."""
    if isinstance(exc, _Unauthorized):
        return 401, "unauthorized", "this store requires 'Authorization: Bearer <token>'"
    if isinstance(exc, (TableNotFound, InvalidTableName)):
        return 404, "not_found", str(exc)
    if isinstance(exc, BlockTooLarge):
        return 413, "block_too_large", str(exc)
    if isinstance(exc, RecordOutOfRange):
        return 422, "out_of_range", str(exc)
    if isinstance(exc, (UnknownField, _BadParameter, ValueError)):
        return 422, "invalid_parameters", str(exc)
    if isinstance(exc, TableCorrupt):
        log.error("table unreadable: %s", exc)
        return 503, "table_unreadable", str(exc)
    log.error("error serving a request: %r", exc)
    return 500, "internal", str(exc)


_DATA_PATH = re.compile(r"^/v1/surfaces/([^/]+)/(?:(block|window)|records/([^/]+)/([^/]+))$")


async def serve_data(cat: Catalog, settings: Settings, name: str, kind: str, query: Mapping[str, str],
                     path_ri: str | None, path_rj: str | None, if_none_match: str | None,
                     authorization: str | None) -> tuple[int, dict[str, str], bytes]:
    """The record, block and window endpoints: ``(status, headers, body)``.

    Records in the cache are served on the event loop (a stat of the header, no data read);
    anything that needs disk reads goes to the thread pool.
    """
    t0 = time.perf_counter()
    if settings.token is not None and authorization != f"Bearer {settings.token}":
        raise _Unauthorized()
    array = query.get("array", "points")
    if not (0 < len(array) <= 128 and all(c.isascii() and (c.isalnum() or c in "-_.") for c in array)):
        raise _BadParameter(f"array: invalid name {array!r}")
    if kind == "records":
        i, j = _int(path_ri, "ri"), _int(path_rj, "rj")
        block = RecordBlock(i, i + 1, j, j + 1)
    elif kind == "block":
        block = RecordBlock(*(_int(query.get(k), k) for k in ("ri0", "ri1", "rj0", "rj1")))
    else:
        ri, rj = _int(query.get("ri"), "ri"), _int(query.get("rj"), "rj")
        wu, wv = _int(query.get("wu"), "wu", 1), _int(query.get("wv"), "wv", 1)
        block = window_block(cat.get(name).header, ri, rj, wu, wv)
    if block.n_records > settings.max_block_records:
        raise BlockTooLarge(f"{name}: {block.n_records} records requested, the limit is "
                            f"{settings.max_block_records}")
    table = cat.get(name)
    cached = cat.cached_block(table, block, array)
    if cached is None:
        table, data = await run_in_threadpool(cat.read_block, name, block, array)
    else:
        data = cached
    h = table.header
    etag = (f'"{h.digest.removeprefix("sha256:")[:32]}.{array}.{block.ri0}-{block.ri1}.'
            f'{block.rj0}-{block.rj1}"')
    i0, _, j0, _ = h.block_points(block)
    headers = {"etag": etag, "cache-control": "no-cache", "x-table-digest": h.digest,
               "x-record-start": f"{block.ri0},{block.rj0}",
               "x-record-extent": f"{block.ri1 - block.ri0},{block.rj1 - block.rj0}",
               "x-point-start": f"{i0},{j0}"}
    t1 = time.perf_counter()
    if if_none_match == etag:
        headers["server-timing"] = f"read;dur={(t1 - t0) * 1e3:.3f}"
        return 304, headers, b""
    body = npy_bytes(data)
    t2 = time.perf_counter()
    headers["server-timing"] = f"read;dur={(t1 - t0) * 1e3:.3f}, encode;dur={(t2 - t1) * 1e3:.3f}"
    headers["content-type"] = NPY
    return 200, headers, body


class DataFastPath:
    """Pure ASGI middleware serving the record, block and window endpoints before FastAPI's
    routing, validation and dependency machinery (about 0.7 ms per request on the development VM,
    more than serving a cached window); every other path goes on to the FastAPI app, which also
    implements the data endpoints (same code, :func:`serve_data`) and documents them."""

    def __init__(self, app: Any, catalog: Catalog, settings: Settings) -> None:
        self.app, self.catalog, self.settings = app, catalog, settings

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        m = _DATA_PATH.match(scope["path"]) if scope["type"] == "http" and scope["method"] == "GET" else None
        if m is None:
            await self.app(scope, receive, send)
            return
        name, kind, ri, rj = m.group(1), m.group(2) or "records", m.group(3), m.group(4)
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        hdrs = {k: v for k, v in scope["headers"] if k in (b"if-none-match", b"authorization")}
        try:
            status, headers, body = await serve_data(
                self.catalog, self.settings, name, kind, query, ri, rj,
                (hdrs.get(b"if-none-match") or b"").decode("latin-1") or None,
                (hdrs.get(b"authorization") or b"").decode("latin-1") or None)
        except (SurfaceStoreError, _Unauthorized, _BadParameter, ValueError) as exc:
            status, error, detail = _error_parts(exc)
            body = json.dumps({"error": error, "detail": detail}, ensure_ascii=False, separators=(",", ":")).encode()
            headers = {"content-type": "application/json"}
            if status == 401:
                headers["www-authenticate"] = "Bearer"
        raw = [(k.encode(), v.encode()) for k, v in headers.items()]
        raw.append((b"content-length", str(len(body)).encode()))
        await send({"type": "http.response.start", "status": status, "headers": raw})
        await send({"type": "http.response.body", "body": body})



def _error(status: int, error: str, detail: str) -> JSONResponse:
    return JSONResponse({"error": error, "detail": detail}, status_code=status)


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the store for ``settings`` (default: from the environment)."""
    settings = settings or Settings.from_env()
    app = FastAPI(title="surfacestore", version="1", docs_url="/docs", redoc_url=None)
    app.state.settings = settings
    app.state.catalog = Catalog(settings.root, RecordCache(int(settings.cache_mb * 2**20)))

    async def catalog() -> Catalog:  # async: a sync dependency would cost a thread-pool hop
        return app.state.catalog

    async def require_token(request: Request) -> None:
        if settings.token is None:
            return
        if request.headers.get("authorization", "") != f"Bearer {settings.token}":
            raise _Unauthorized()

    # -- errors ------------------------------------------------------------------------------------

    @app.exception_handler(_Unauthorized)
    @app.exception_handler(SurfaceStoreError)
    @app.exception_handler(_BadParameter)
    @app.exception_handler(ValueError)
    async def _known_error(request: Request, exc: Exception) -> JSONResponse:
        status, error, detail = _error_parts(exc)
        r = _error(status, error, detail)
        if status == 401:
            r.headers["WWW-Authenticate"] = "Bearer"
        return r

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        detail = "; ".join(f"{'.'.join(str(x) for x in e['loc'][1:])}: {e['msg']}" for e in exc.errors())
        return _error(422, "invalid_parameters", detail)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return _error(exc.status_code, "not_found" if exc.status_code == 404 else "http_error", str(exc.detail))

    # -- endpoints ---------------------------------------------------------------------------------

    @app.get("/v1/health")
    async def health() -> dict[str, Any]:
        return {"status": "ok", "root": str(settings.root), "cache": app.state.catalog.cache.stats()}

    auth = [Depends(require_token)]

    @app.get("/v1/surfaces", dependencies=auth)
    async def list_surfaces(cat: Catalog = Depends(catalog)) -> list[dict[str, Any]]:
        def scan() -> list[dict[str, Any]]:
            out = []
            for name in cat.names():
                try:
                    h = cat.get(name).header
                except SurfaceStoreError:
                    continue
                out.append({"name": name, "shape": [h.u_npts, h.v_npts, 14], "records": [h.n_rec_u, h.n_rec_v],
                            "record_points": [h.u_pts, h.v_pts], "digest": h.digest})
            return out

        return await run_in_threadpool(scan)

    @app.get("/v1/surfaces/{name}", dependencies=auth)
    async def header(name: str, request: Request, cat: Catalog = Depends(catalog)) -> Response:
        table = await run_in_threadpool(cat.get, name)
        etag = f'"{table.header.digest.removeprefix("sha256:")}"'
        if request.headers.get("if-none-match") == etag:
            return Response(status_code=304, headers={"ETag": etag, "Cache-Control": "no-cache"})
        return JSONResponse(table.header.to_dict(), headers={"ETag": etag, "Cache-Control": "no-cache"})

    # The three data endpoints parse their query parameters by hand: pydantic validation and
    # dependency resolution cost more than serving a cached window (see README, store benchmark).
    # The parameters are documented in the OpenAPI schema through ``openapi_extra``.

    async def _data(request: Request, name: str, kind: str, ri: str | None = None, rj: str | None = None) -> Response:
        status, headers, body = await serve_data(
            app.state.catalog, settings, name, kind, request.query_params, ri, rj,
            request.headers.get("if-none-match"), request.headers.get("authorization"))
        return Response(body, status_code=status, headers=headers)

    @app.get("/v1/surfaces/{name}/records/{ri}/{rj}", openapi_extra=_params_doc("array"))
    async def record(name: str, ri: str, rj: str, request: Request) -> Response:
        return await _data(request, name, "records", ri, rj)

    @app.get("/v1/surfaces/{name}/block", openapi_extra=_params_doc("ri0", "ri1", "rj0", "rj1", "array"))
    async def block(name: str, request: Request) -> Response:
        return await _data(request, name, "block")

    @app.get("/v1/surfaces/{name}/window", openapi_extra=_params_doc("ri", "rj", "wu", "wv", "array"))
    async def window(name: str, request: Request) -> Response:
        return await _data(request, name, "window")

    @app.api_route("/zarr/{name}/{key:path}", methods=["GET", "HEAD"], dependencies=auth)
    async def zarr_key(name: str, key: str, cat: Catalog = Depends(catalog)) -> Response:
        table: Table = await run_in_threadpool(cat.get, name)
        path = _zarr_path(cat.root / f"{name}{TABLE_SUFFIX}", key)
        return FileResponse(path, media_type="application/json" if key.endswith(".json") else
                            "application/octet-stream", headers={"Cache-Control": "no-cache",
                                                                "X-Table-Digest": table.header.digest})

    if settings.fast_path:
        app.add_middleware(DataFastPath, catalog=app.state.catalog, settings=settings)
    return app


def _zarr_path(table_dir: Path, key: str) -> Path:
    parts = key.split("/")
    if not key or any(p in ("", ".", "..") or p.startswith(".") for p in parts) or "\\" in key:
        raise TableNotFound(f"no key {key!r}")
    real_dir = table_dir.resolve()
    path = (table_dir / key).resolve()
    if real_dir not in path.parents or not path.is_file():
        raise TableNotFound(f"no key {key!r} in table {table_dir.name}")
    return path


def create_app_from_env() -> FastAPI:
    """Factory for ``uvicorn --factory`` (worker processes read their settings from the environment)."""
    tune_allocator()
    return create_app(Settings.from_env())
