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
key, 405 other methods (with ``Allow``), 408/431/429 a request's headers too slow or too large, or
too many connections from one address (see :mod:`surfacestore.server`), 413 block larger than the
limits, 416 unsatisfiable byte range, 422 bad or out-of-range parameters, 503 table unreadable
(``table_unreadable``: its header; ``record_corrupt``: a record, missing, truncated, failing its
checksum or not a regular file; both permanent until the table is rebuilt) or the server busy.
Details name tables, never paths of the machine.
"""

from __future__ import annotations

import functools
import hmac
import io
import json
import logging
import os
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, cast
from urllib.parse import parse_qsl

import numpy as np
from fastapi import APIRouter, Depends, FastAPI, Query, Request
from fastapi_offline import FastAPIOffline
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from surfacestore import pages
from surfacestore.bodies import LARGE_BODY, BodyBudget
from surfacestore.catalog import Catalog, RecordCache
from surfacestore.errors import (
    BlockTooLarge,
    InvalidTableName,
    RecordCorrupt,
    RecordOutOfRange,
    StorageUnavailable,
    SurfaceStoreError,
    TableCorrupt,
    TableNotFound,
    UnknownField,
)
from surfacestore.format import NFIELDS, TABLE_SUFFIX, Header, RecordBlock, Table, window_block
from surfacestore.settings import Settings

__all__ = ["create_app", "npy_bytes", "parse_index", "ErrorBody"]

log = logging.getLogger("surfacestore")
NPY = "application/x-npy"
#: a table name or extra field name in a path or query (the format's rule: not hidden, no separators)
NAME_PATTERN = r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}$"
#: a result series' path under the root: names of NAME_PATTERN's characters joined by "/"
RESULT_PATH_PATTERN = r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}(/[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}){0,15}$"
Deliver = Callable[[int, dict[str, str], bytes], Awaitable[None]]  # deliver(status, headers, body)


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


class ErrorBody(BaseModel):
    """Every error response: a short code and a human-readable detail."""

    error: str
    detail: str


class _Unauthorized(Exception):
    """No bearer token (``str``: what the store requires), or one that is not the store's."""


class _BadParameter(Exception):
    pass


class _Unsatisfiable(Exception):
    def __init__(self, size: int) -> None:
        super().__init__(f"the range is outside the key's {size} bytes")
        self.size = size


_INDEX = re.compile(r"-?[0-9]{1,18}")


def parse_index(raw: str | None, name: str, minimum: int = 0) -> int:
    """A record index or extent from a path or query: ASCII digits only (no sign, blanks,
    underscores or other scripts' digits), at least ``minimum``; :class:`_BadParameter` otherwise."""
    if raw is None:
        raise _BadParameter(f"{name}: missing")
    if not _INDEX.fullmatch(raw):
        raise _BadParameter(f"{name}: not an integer: {raw[:40]!r}")
    value = int(raw)
    if value < minimum:
        raise _BadParameter(f"{name}: must be >= {minimum}, got {value}")
    return value


class _NoSuchRecord(SurfaceStoreError):
    """``/records/{ri}/{rj}`` names a record outside the table's grid: a resource that is not there (404)."""


def _error_parts(exc: BaseException) -> tuple[int, str, str]:
    """HTTP status, error code and detail for an exception (DESIGN's JSON errors)."""
    if isinstance(exc, _Unauthorized):
        return 401, "unauthorized", str(exc)
    if isinstance(exc, (TableNotFound, InvalidTableName, _NoSuchRecord)):
        return 404, "not_found", str(exc)
    if isinstance(exc, BlockTooLarge):
        return 413, "block_too_large", str(exc)
    if isinstance(exc, _Unsatisfiable):
        return 416, "range_not_satisfiable", str(exc)
    if isinstance(exc, RecordOutOfRange):
        return 422, "out_of_range", str(exc)
    if isinstance(exc, (UnknownField, _BadParameter, ValueError)):
        # a KeyError's str() is the repr of its message; the others' str() is the message
        return 422, "invalid_parameters", str(exc.args[0] if isinstance(exc, KeyError) and exc.args else exc)
    if isinstance(exc, RecordCorrupt):
        log.error("record unreadable: %s", exc)
        return 503, "record_corrupt", str(exc)
    if isinstance(exc, TableCorrupt):
        log.error("table unreadable: %s", exc)
        return 503, "table_unreadable", str(exc)
    if isinstance(exc, StorageUnavailable):
        log.error("object storage failing: %s", exc)
        return 503, "storage_unavailable", str(exc)
    log.error("error serving a request: %r", exc)
    return 500, "internal", type(exc).__name__


def _error_response(exc: BaseException, roots: tuple[str, ...]) -> tuple[int, dict[str, str], bytes]:
    status, error, detail = _error_parts(exc)
    for root in roots:  # name tables, not the machine's folders
        detail = detail.replace(root, "")
    body = json.dumps({"error": error, "detail": detail}, ensure_ascii=False, separators=(",", ":")).encode()
    headers = {"content-type": "application/json"}
    if status == 401:
        headers["www-authenticate"] = "Bearer"
    if isinstance(exc, _Unsatisfiable):
        headers["content-range"] = f"bytes */{exc.size}"
    return status, headers, body


_DATA_PATH = re.compile(r"^/v1/surfaces/([^/]+)/(?:(block|window)|records/([^/]+)/([^/]+))$")


class _Store:
    """What the endpoints share: settings, the catalog, the token check and the limit on large
    bodies being built at once."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.catalog = Catalog(settings.root, RecordCache(int(settings.cache_mb * 2**20)))
        self.token = None if settings.token is None else settings.token.encode()
        self.max_block_bytes = int(settings.max_block_mb * 2**20)
        self.roots = tuple(sorted({str(self.catalog.root) + os.sep, str(settings.root) + os.sep}, key=len,
                                  reverse=True))
        self.bodies = BodyBudget()

    def check_token(self, authorization: str | None) -> None:
        """``Authorization: Bearer TOKEN`` (the scheme in any case), compared in constant time."""
        if self.token is None:
            return
        scheme, _, token = (authorization or "").partition(" ")
        if not (hmac.compare_digest(token.encode(errors="replace"), self.token) and scheme.lower() == "bearer"):
            # (a token given but refused is said so: "requires a token" misled a client that sent one)
            raise _Unauthorized("this store requires 'Authorization: Bearer <token>'" if authorization is None else
                                 "the bearer token was refused")

    async def serve_data(self, name: str, kind: str, query: Mapping[str, str], path_ri: str | None,
                         path_rj: str | None, if_none_match: str | None, authorization: str | None,
                         deliver: Deliver | None = None) -> tuple[int, dict[str, str], bytes] | None:
        """The record, block and window endpoints: ``(status, headers, body)``, or None where a
        large body was handed to ``deliver`` (which sends it).

        Small blocks whose records are cached are served on the event loop; anything that needs
        disk reads, and any body over :data:`LARGE_BODY`, is built in the thread pool (at most
        :mod:`surfacestore.bodies`' limits); with ``deliver``, a large body is sent while it is held.
        """
        t0 = time.perf_counter()
        self.check_token(authorization)
        array = query.get("array", "points")
        if not re.fullmatch(NAME_PATTERN, array):
            raise _BadParameter(f"array: invalid name {array[:40]!r}")
        cat, settings = self.catalog, self.settings
        if kind == "records":
            i, j = parse_index(path_ri, "ri"), parse_index(path_rj, "rj")
            block = RecordBlock(i, i + 1, j, j + 1)
        elif kind == "block":
            block = RecordBlock(*(parse_index(query.get(k), k) for k in ("ri0", "ri1", "rj0", "rj1")))
        else:
            ri, rj = parse_index(query.get("ri"), "ri"), parse_index(query.get("rj"), "rj")
            wu, wv = parse_index(query.get("wu"), "wu", 1), parse_index(query.get("wv"), "wv", 1)
            block = window_block(cat.get(name).header, ri, rj, wu, wv, wrap=False)  # (one contiguous block)
        table = cat.get(name)
        h = table.header
        try:
            h.check_block(block)
        except RecordOutOfRange as exc:  # (a record named in the path that is not there is not found)
            if kind == "records":
                raise _NoSuchRecord(str(exc)) from None
            raise
        if array != "points" and array not in h.extras:
            raise UnknownField(f"{name}: no per-point array {array!r} (extras: {list(h.extras)})")
        i0, i1, j0, j1 = h.block_points(block)
        nbytes = (i1 - i0) * (j1 - j0) * (NFIELDS if array == "points" else 1) * 8
        if block.n_records > settings.max_block_records or nbytes > self.max_block_bytes:
            raise BlockTooLarge(f"{name}: {block.n_records} records ({nbytes} bytes) requested; the limits are "
                                f"{settings.max_block_records} records and {self.max_block_bytes} bytes")
        etag = (f'"{h.digest.removeprefix("sha256:")[:32]}.{array}.{block.ri0}-{block.ri1}.'
                f'{block.rj0}-{block.rj1}"')
        headers = {"etag": etag, "cache-control": "no-cache", "x-table-digest": h.digest,
                   "x-record-start": f"{block.ri0},{block.rj0}",
                   "x-record-extent": f"{block.ri1 - block.ri0},{block.rj1 - block.rj0}",
                   "x-point-start": f"{i0},{j0}"}
        if if_none_match == etag:
            headers["server-timing"] = f"read;dur={(time.perf_counter() - t0) * 1e3:.3f}"
            return 304, headers, b""
        if nbytes > LARGE_BODY:
            async with self.bodies.held():
                async with self.bodies.building():
                    table, body, t1 = await run_in_threadpool(self._build, name, block, array)
                response = self._headers(table, h, etag, headers, t0, t1, body)
                if deliver is None:
                    return response
                await deliver(*response)
                return None
        else:
            cached = cat.cached_block(table, block, array)
            if cached is None:
                table, data = await run_in_threadpool(cat.read_block, name, block, array)
            else:
                data = cached
            t1 = time.perf_counter()
            body = npy_bytes(data)
        return self._headers(table, h, etag, headers, t0, t1, body)

    @staticmethod
    def _headers(table: Table, h: Header, etag: str, headers: dict[str, str], t0: float, t1: float,
                 body: bytes) -> tuple[int, dict[str, str], bytes]:
        """``headers`` completed for ``body`` from ``table`` (``h`` at the request's start: rebuilt since, the new version's)."""
        if table.header.digest != h.digest:
            headers["x-table-digest"] = table.header.digest
            headers["etag"] = etag.replace(h.digest.removeprefix("sha256:")[:32],
                                           table.header.digest.removeprefix("sha256:")[:32])
        t2 = time.perf_counter()
        headers["server-timing"] = f"read;dur={(t1 - t0) * 1e3:.3f}, encode;dur={(t2 - t1) * 1e3:.3f}"
        headers["content-type"] = NPY
        return 200, headers, body

    def _build(self, name: str, block: RecordBlock, array: str) -> tuple[Table, bytes, float]:
        table, data = self.catalog.read_block(name, block, array)
        t1 = time.perf_counter()
        return table, npy_bytes(data), t1

    def zarr_key(self, name: str, key: str, method: str, range_header: str | None,
                 if_none_match: str | None) -> tuple[int, dict[str, str], bytes]:
        """A raw Zarr key of a table (``zarr.json``, chunk or shard keys), with single byte ranges
        (RFC 9110: a malformed range is ignored, an unsatisfiable one answers 416)."""
        table = self.catalog.get(name)
        _check_zarr_key(self.catalog.root, name, key)
        etag = f'"{table.header.digest.removeprefix("sha256:")[:32]}.{key}"'
        headers = {"cache-control": "no-cache", "x-table-digest": table.header.digest, "etag": etag,
                   "accept-ranges": "bytes",
                   "content-type": "application/json" if key.endswith(".json") else "application/octet-stream"}
        if if_none_match == etag:
            return 304, headers, b""
        try:
            size = table.key_size(key)
        except StorageUnavailable:
            raise
        except OSError:  # missing, or not a regular file
            raise TableNotFound(f"no key {key!r} in table {name}") from None
        span = _byte_range(range_header, size)
        start, end = span if span is not None else (0, size)
        if end - start > self.max_block_bytes:
            raise BlockTooLarge(f"{name}/{key}: {end - start} bytes requested; the limit is "
                                f"{self.max_block_bytes} bytes (ask for a range)")
        try:
            body = b"" if method == "HEAD" else table.read_key(key, start, end - start)
        except StorageUnavailable:
            raise
        except OSError:
            body = b""
        if len(body) != (0 if method == "HEAD" else end - start):
            raise RecordCorrupt(f"{name}/{key}: changed while being read")
        headers["content-length"] = str(end - start)
        if span is not None:
            headers["content-range"] = f"bytes {start}-{end - 1}/{size}"
            return 206, headers, body
        return 200, headers, body


_RANGE = re.compile(r"bytes=(\d*)-(\d*)")


def _byte_range(header: str | None, size: int) -> tuple[int, int] | None:
    """``[start, end)`` of a single ``Range: bytes=a-b`` / ``a-`` / ``-n`` header, or None to
    serve the whole key (no header, or one that is malformed or asks for several ranges)."""
    m = _RANGE.fullmatch((header or "").strip())
    if m is None or (m.group(1) == "" and m.group(2) == ""):
        return None
    first, last = m.group(1), m.group(2)
    if first == "":  # the last n bytes
        n = int(last)
        if n == 0:
            raise _Unsatisfiable(size)
        return max(size - n, 0), size
    start = int(first)
    if last != "" and int(last) < start:  # bytes=10-5: malformed, ignored
        return None
    if start >= size:
        raise _Unsatisfiable(size)
    return start, size if last == "" else min(int(last) + 1, size)


class DataFastPath:
    """Pure ASGI middleware serving the record, block and window endpoints before FastAPI's
    routing, validation and dependency machinery (about 0.7 ms per request on the development VM,
    more than serving a cached window); every other path goes on to the FastAPI app, which also
    implements the data endpoints (same code, :meth:`_Store.serve_data`) and documents them."""

    def __init__(self, app: Any, store: _Store) -> None:
        self.app, self.store = app, store

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        m = _DATA_PATH.match(scope["path"]) if scope["type"] == "http" and scope["method"] == "GET" else None
        if m is None:
            await self.app(scope, receive, send)
            return
        name, kind, ri, rj = m.group(1), m.group(2) or "records", m.group(3), m.group(4)
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True))
        hdrs = {k: v for k, v in scope["headers"] if k in (b"if-none-match", b"authorization")}
        started = False

        async def deliver(status: int, headers: dict[str, str], body: bytes) -> None:
            nonlocal started
            started = True
            raw = [(k.encode(), v.encode()) for k, v in headers.items()]
            raw.append((b"content-length", str(len(body)).encode()))
            await send({"type": "http.response.start", "status": status, "headers": raw})
            for k in range(0, max(len(body), 1), LARGE_BODY):  # (each piece once the last is read)
                await send({"type": "http.response.body", "body": body[k:k + LARGE_BODY],
                            "more_body": k + LARGE_BODY < len(body)})

        try:
            response = await self.store.serve_data(
                name, kind, query, ri, rj, (hdrs.get(b"if-none-match") or b"").decode("latin-1") or None,
                (hdrs.get(b"authorization") or b"").decode("latin-1") or None, deliver)
        except (SurfaceStoreError, _Unauthorized, _BadParameter, ValueError, OSError) as exc:
            if started:
                raise  # (while sending: the connection's, not a response's)
            response = _error_response(exc, self.store.roots)
        if response is not None:
            await deliver(*response)


def _errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    text = {304: "not modified (If-None-Match)", 401: "missing or wrong token", 404: "no such table, key or record",
            413: "more records or bytes than the limits", 416: "the byte range is outside the key",
            422: "bad or out-of-range parameters", 503: "the table or a record is unreadable, or the server is busy"}
    return {s: ({"description": text[s]} if s == 304 else {"model": ErrorBody, "description": text[s]})
            for s in statuses}


_NPY_200: dict[int | str, dict[str, Any]] = {200: {
    "description": "the records as one NPY array (float64, C order): (nu, nv, 14) points or (nu, nv) of an extra field",
                  "content": {NPY: {"schema": {"type": "string", "format": "binary"}}}}}
_PARAM_DOCS = {
    "ri0": "first record in u", "ri1": "end record in u (exclusive)", "rj0": "first record in v",
    "rj1": "end record in v (exclusive)", "ri": "record in u", "rj": "record in v",
    "wu": "window extent in records (u)", "wv": "window extent in records (v)",
}


def _params_doc(*names: str, path: tuple[str, ...] = ()) -> dict[str, Any]:
    """The OpenAPI description of the data endpoints' parameters, which :meth:`_Store.serve_data`
    parses itself (FastAPI's validation costs more than serving a cached window)."""
    params = [{"name": n, "in": "path" if n in path else "query", "required": True, "description": _PARAM_DOCS[n],
               "schema": {"type": "integer", "minimum": 1 if n in ("wu", "wv") else 0}} for n in names]
    params.append({"name": "array", "in": "query", "required": False,
                   "description": "'points' (default) or an extra per-point field",
                   "schema": {"type": "string", "pattern": NAME_PATTERN, "default": "points"}})
    return {"parameters": params}


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the store for ``settings`` (default: from the environment): the error handlers, the
    routers of the tables' metadata, their data and the browser's views, and (``fast_path``) the
    ASGI middleware that serves the data endpoints ahead of FastAPI's routing."""
    settings = settings or Settings.from_env()
    store = _Store(settings)
    # the API docs' scripts and styles come from the package (fastapi-offline), not from a CDN:
    # /docs and /redoc work on a machine without internet access
    app = FastAPIOffline(title="surfacestore", version="1", docs_url="/docs", redoc_url="/redoc")
    app.state.settings = settings
    app.state.catalog = store.catalog
    _add_error_handlers(app, store)
    auth = [Depends(_token_check(store))]
    app.include_router(_table_router(store, auth))
    app.include_router(_data_router(store, auth))
    app.include_router(_view_router(store, auth))
    if settings.fast_path:
        app.add_middleware(DataFastPath, store=store)
    return app


def _token_check(store: _Store) -> Any:
    async def require_token(request: Request) -> None:
        store.check_token(request.headers.get("authorization"))
    return require_token


def _respond(result: tuple[int, dict[str, str], bytes]) -> Response:
    status, headers, body = result
    return Response(body, status_code=status, headers=headers)  # a HEAD's content-length is the key's


def _add_error_handlers(app: FastAPI, store: _Store) -> None:
    """JSON errors ``{"error", "detail"}`` for the store's errors, bad parameters and HTTP's own."""
    @app.exception_handler(_Unauthorized)
    @app.exception_handler(SurfaceStoreError)
    @app.exception_handler(_BadParameter)
    @app.exception_handler(_Unsatisfiable)
    @app.exception_handler(ValueError)
    async def _known_error(request: Request, exc: Exception) -> Response:
        return _respond(_error_response(exc, store.roots))

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        detail = "; ".join(f"{'.'.join(str(x) for x in e['loc'][1:])}: {e['msg']}" for e in exc.errors())
        return JSONResponse({"error": "invalid_parameters", "detail": detail}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        error = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return JSONResponse({"error": error, "detail": str(exc.detail)}, status_code=exc.status_code,
                            headers=dict(exc.headers or {}))  # 405 keeps its Allow header


def _table_router(store: _Store, auth: list[Any]) -> APIRouter:
    """Liveness, the list of tables and each table's header."""
    router = APIRouter()

    @router.get("/v1/health")
    async def health(request: Request) -> dict[str, Any]:
        """Liveness (public: a load balancer's probe needs no token), and the record cache's
        statistics only to a client with the token (where the store has one)."""
        try:
            store.check_token(request.headers.get("authorization"))
        except _Unauthorized:
            return {"status": "ok"}
        return {"status": "ok", "cache": store.catalog.cache.stats()}

    @router.get("/v1/surfaces", dependencies=auth, responses=_errors(401))
    async def list_surfaces() -> list[dict[str, Any]]:
        """The tables under the root; a table whose header cannot be read is listed with
        ``status: unreadable`` and the reason, the others as usual (``status: ok``)."""
        return await run_in_threadpool(_listing, store)

    @router.get("/v1/surfaces/{name}", dependencies=auth, responses=_errors(304, 401, 404, 422, 503))
    async def header(name: str, request: Request) -> Response:
        """The table's header (the format's keys and its extensions)."""
        table = await run_in_threadpool(store.catalog.get, name)
        etag = f'"{table.header.digest.removeprefix("sha256:")}"'
        if request.headers.get("if-none-match") == etag:
            return Response(status_code=304, headers={"ETag": etag, "Cache-Control": "no-cache"})
        return JSONResponse(table.header.to_dict(), headers={"ETag": etag, "Cache-Control": "no-cache"})
    return router


def _listing(store: _Store) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for name in store.catalog.names():
        try:
            h = store.catalog.get(name).header
        except TableNotFound:
            continue  # removed meanwhile
        except SurfaceStoreError as exc:
            out.append({"name": name, "status": "unreadable", "detail": _error_response(exc, store.roots)[2].decode()})
            continue
        out.append({"name": name, "status": "ok", "shape": [h.u_npts, h.v_npts, 14], "records": [h.n_rec_u, h.n_rec_v],
                    "record_points": [h.u_pts, h.v_pts], "digest": h.digest})
    return out


def _data_router(store: _Store, auth: list[Any]) -> APIRouter:
    """The record, block and window endpoints and the raw Zarr keys. The first three are served by
    :class:`DataFastPath` ahead of FastAPI's routing (FastAPI's validation costs more than serving
    a cached window); these routes run the same code (with ``fast_path`` off) and document them."""
    router = APIRouter()
    data_errors: dict[int | str, dict[str, Any]] = {**_NPY_200, **_errors(304, 401, 404, 413, 422, 503)}

    async def _data(request: Request, name: str, kind: str) -> Response:
        result = await store.serve_data(name, kind, request.query_params, request.path_params.get("ri"),
                                        request.path_params.get("rj"), request.headers.get("if-none-match"),
                                        request.headers.get("authorization"))
        return _respond(cast(tuple[int, dict[str, str], bytes], result))  # (without a deliver: returned)

    @router.get("/v1/surfaces/{name}/records/{ri}/{rj}", responses=data_errors, response_class=Response,
                openapi_extra=_params_doc("ri", "rj", path=("ri", "rj")))
    async def record(name: str, request: Request) -> Response:
        """One record."""
        return await _data(request, name, "records")

    @router.get("/v1/surfaces/{name}/block", responses=data_errors, response_class=Response,
                openapi_extra=_params_doc("ri0", "ri1", "rj0", "rj1"))
    async def block(name: str, request: Request) -> Response:
        """The records ``[ri0, ri1) x [rj0, rj1)`` as one array."""
        return await _data(request, name, "block")

    @router.get("/v1/surfaces/{name}/window", responses=data_errors, response_class=Response,
                openapi_extra=_params_doc("ri", "rj", "wu", "wv"))
    async def window(name: str, request: Request) -> Response:
        """A ``wu x wv`` block of records centred on record ``(ri, rj)``, shifted inward at the borders."""
        return await _data(request, name, "window")

    zarr_responses: dict[int | str, dict[str, Any]] = {
        200: {"description": "the key's bytes", "content": {"application/octet-stream": {}, "application/json": {}}},
        206: {"description": "a byte range of the key"}, **_errors(304, 401, 404, 413, 416, 422, 503)}

    async def _zarr(request: Request, name: str, key: str) -> Response:
        return _respond(await run_in_threadpool(store.zarr_key, name, key, request.method,
                                                request.headers.get("range"), request.headers.get("if-none-match")))

    @router.get("/zarr/{name}/{key:path}", dependencies=auth, responses=zarr_responses, response_class=Response,
                operation_id="get_zarr_key")
    async def zarr_key(name: str, key: str, request: Request) -> Response:
        """A raw Zarr v3 key of the table (``zarr.json``, chunk and shard keys); single byte ranges."""
        return await _zarr(request, name, key)

    @router.head("/zarr/{name}/{key:path}", dependencies=auth, responses=zarr_responses, response_class=Response,
                 operation_id="head_zarr_key")
    async def zarr_key_head(name: str, key: str, request: Request) -> Response:
        """The headers of :func:`zarr_key` (its size in ``Content-Length``)."""
        return await _zarr(request, name, key)
    return router


def _view_router(store: _Store, auth: list[Any]) -> APIRouter:
    """The browser's pages (:mod:`surfacestore.pages`) and what they draw: previews of tables and
    pressure series."""
    router = APIRouter()

    def static(file: str, media: str) -> Response:
        return Response(pages.page(file), media_type=media,
                        headers={"cache-control": "no-cache", "content-security-policy": pages.CSP})

    @router.get("/", include_in_schema=False)
    async def index_page() -> Response:
        return static("index.html", "text/html; charset=utf-8")

    @router.get("/view/{name}", include_in_schema=False)
    async def view_page(name: str) -> Response:
        return static("view.html", "text/html; charset=utf-8")

    @router.get("/results", include_in_schema=False)
    async def results_page() -> Response:
        return static("results.html", "text/html; charset=utf-8")

    @router.get("/web/{file}", include_in_schema=False)
    async def web_script(file: str) -> Response:
        if file not in pages.SCRIPTS:
            raise TableNotFound(f"no page asset {file!r}")
        return static(file, "text/javascript; charset=utf-8")

    @router.get("/v1/surfaces/{name}/preview", dependencies=auth, response_class=Response,
                responses={**_NPY_200, **_errors(401, 404, 413, 422, 503)})
    async def preview(name: str, n: int = Query(128, ge=2, le=pages.MAX_PREVIEW, description="points a side (about)"),
                      array: str = Query("points", pattern=NAME_PATTERN,
                                         description="'points' or an extra per-point field")) -> Response:
        """About ``n`` points a side of the table, every ``su``-th and ``sv``-th point (the last row
        and column included; ``X-Preview-Step: su,sv``): what the browser view draws."""
        async with store.bodies.building():  # (built off the event loop, a few at a time, as large data bodies are)
            data, (su, sv) = await run_in_threadpool(pages.preview, store.catalog, name, n, array, store.max_block_bytes)
        return Response(npy_bytes(data), media_type=NPY, headers={"x-preview-step": f"{su},{sv}",
                                                                   "cache-control": "no-cache"})

    @router.get("/v1/results", dependencies=auth, responses=_errors(401, 404, 413, 422))
    async def results(path: str = Query(..., pattern=RESULT_PATH_PATTERN,
                                        description="a pressure series (pressure.zarr) under the root")) -> JSONResponse:
        """A pressure-map series written by a scenario (``--out DIR`` under the store's root):
        ``t_s``, and per compartment the element centres and the maps in Pa (null: no element)."""
        async with store.bodies.building():  # (bounded, and built off the event loop, as large data bodies are)
            series = await run_in_threadpool(pages.pressure_series, store.catalog.root, path, store.max_block_bytes)
        return JSONResponse(series)
    return router


def _check_zarr_key(root: str | Path, name: str, key: str) -> None:
    """Refuse keys that are empty, hidden or could leave the table (``..``, backslashes) and, in a
    folder, keys that resolve outside it (symlinks) or are not regular files."""
    parts = key.split("/")
    if not key or any(p in ("", ".", "..") or p.startswith(".") for p in parts) or "\\" in key:
        raise TableNotFound(f"no key {key!r}")
    if isinstance(root, Path):
        table_dir = root / f"{name}{TABLE_SUFFIX}"
        path = (table_dir / key).resolve()
        if table_dir.resolve() not in path.parents or not path.is_file():
            raise TableNotFound(f"no key {key!r} in table {name}")
