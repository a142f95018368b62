"""Surface sources: where a storage window gets its records.

Every source has ``name``, ``header`` (:class:`surfacestore.format.Header`) and
``read_block(ri0, ri1, rj0, rj1, array="points") -> ndarray`` returning the points of records
``[ri0, ri1) x [rj0, rj1)`` as one dense ``(i1-i0, j1-j0, 14)`` float64 array (see
``Header.block_points``), or with ``array`` an extra per-point field as ``(i1-i0, j1-j0)``.
All sources return identical data for the same table.

- :class:`LocalSource` reads a table folder directly (the embedded default: no server).
- :class:`HttpSource` reads from a surface store over HTTP (keep-alive connections, timeouts,
  retries with backoff on connection errors and 5xx).
- :class:`MemorySource` holds a whole table in memory (the "no windows" baseline).
- :class:`CountingSource` wraps any source and counts requests, records, bytes and waiting time.

``open_surface(location)`` picks the source from the location: an ``http(s)://`` URL of a table
(``http://host:port/v1/surfaces/NAME``), an ``s3://`` table, or a local table path.
"""

from __future__ import annotations

import logging
import os
import time
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from simclient.errors import (
    SourceCorrupt,
    SourceError,
    SourceNotFound,
    SourceRequestError,
    SourceUnavailable,
    TableChanged,
)
from simclient.io._connections import Connections, Reply, TransportFailure
from simclient.io._npy import load_npy
from surfacestore.errors import (
    RecordOutOfRange,
    StorageUnavailable,
    SurfaceStoreError,
    TableCorrupt,
    TableNotFound,
    UnknownField,
)
from surfacestore.format import Header, RecordBlock, Table

if TYPE_CHECKING:
    import httpx

    from simclient.io._transport import TransportConnections

#: says when a request failed and is being retried (the retries may take seconds)
_log = logging.getLogger("simclient.io")

__all__ = ["Source", "LocalSource", "HttpSource", "MemorySource", "CountingSource", "open_surface", "read_field"]


@runtime_checkable
class Source(Protocol):
    """What a storage window needs from a table: its ``name``, its ``header``, whether reads cross
    a network (``remote``, a capability flag rather than an isinstance check) and
    :meth:`read_block`. Errors are :class:`simclient.errors.SourceError` subclasses only."""

    name: str
    header: Header
    remote: bool

    def read_block(self, ri0: int, ri1: int, rj0: int, rj1: int, array: str = "points") -> np.ndarray: ...


def read_field(source: Source, array: str) -> np.ndarray:
    """A whole extra per-point field of a table (e.g. ``thickness``, ``data_distance``): array
    ``(Nu, Nv)``. Raises :class:`SourceRequestError` when the table has no such field."""
    h = source.header
    if array not in h.extras:
        raise SourceRequestError(f"{source.name}: no per-point field {array!r} (extras: {list(h.extras)})")
    return source.read_block(0, h.n_rec_u, 0, h.n_rec_v, array)


class LocalSource:
    """A table read directly, without a store: a folder, or an ``s3://BUCKET/PREFIX/NAME.zarr``
    prefix on object storage (then ``remote``: every read is a request)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        try:
            self._table = Table(path)
        except TableNotFound as exc:
            raise SourceNotFound(str(exc)) from None
        except TableCorrupt as exc:
            raise SourceCorrupt(str(exc)) from None
        except StorageUnavailable as exc:
            raise SourceUnavailable(str(exc)) from None
        except SurfaceStoreError as exc:
            raise SourceError(str(exc)) from exc
        self.name = self._table.name
        self.header = self._table.header
        self.remote = self._table.remote

    def read_block(self, ri0: int, ri1: int, rj0: int, rj1: int, array: str = "points") -> np.ndarray:
        # the table's errors are translated here: callers see only simclient's error tree
        try:
            return self._table.read_block(RecordBlock(ri0, ri1, rj0, rj1), array)
        except (RecordOutOfRange, UnknownField) as exc:
            raise SourceRequestError(f"{self.name}: {exc}") from None
        except TableCorrupt as exc:
            raise SourceCorrupt(f"{self.name}: records [{ri0}, {ri1}) x [{rj0}, {rj1}): {exc}") from None
        except StorageUnavailable as exc:
            raise SourceUnavailable(f"{self.name}: records [{ri0}, {ri1}) x [{rj0}, {rj1}): {exc}") from None
        except (SurfaceStoreError, OSError) as exc:
            raise SourceError(f"{self.name}: records [{ri0}, {ri1}) x [{rj0}, {rj1}): {exc}") from exc

    def close(self) -> None:
        self._table.close()

    def __repr__(self) -> str:
        return f"LocalSource({self._table.location!r})"


class MemorySource:
    """A whole table held in memory: ``points`` of shape ``(Nu, Nv, 14)`` and ``fields``, the extra
    per-point arrays ``(Nu, Nv)`` by name (the header's ``extras``)."""

    remote = False

    def __init__(self, header: Header, points: np.ndarray, name: str = "memory",
                 fields: dict[str, np.ndarray] | None = None) -> None:
        self.header = header
        self.points = points
        self.name = name
        self.fields = dict(fields or {})

    @classmethod
    def load(cls, source: Source) -> MemorySource:
        """Read every record of ``source`` (points and extra fields) into memory; a source already
        in memory is returned as it is (sources are read-only)."""
        if isinstance(source, MemorySource):
            return source
        h = source.header
        return cls(h, source.read_block(0, h.n_rec_u, 0, h.n_rec_v), source.name,
                   {a: source.read_block(0, h.n_rec_u, 0, h.n_rec_v, a) for a in h.extras})

    def read_block(self, ri0: int, ri1: int, rj0: int, rj1: int, array: str = "points") -> np.ndarray:
        data = self.points if array == "points" else self.fields.get(array)
        if data is None:
            raise SourceRequestError(f"{self.name}: no per-point array {array!r} (extras: {list(self.fields)})")
        block = RecordBlock(ri0, ri1, rj0, rj1)
        try:
            self.header.check_block(block)
        except RecordOutOfRange as exc:
            raise SourceRequestError(f"{self.name}: {exc}") from None
        i0, i1, j0, j1 = self.header.block_points(block)
        return data[i0:i1, j0:j1]


class HttpSource:
    """A table served by a surface store.

    Parameters
    ----------
    url : ``http://host:port/v1/surfaces/NAME``.
    token : bearer token when the store requires one.
    timeout : seconds per request.
    retries : attempts after the first on connection errors and 5xx, with exponential backoff
        starting at ``backoff`` seconds (capped at 2 s), so a store restart is ridden out.
    transport : an ``httpx`` transport to send the requests on (``https://``; tests pass a
        ``MockTransport``); by default, for ``http://``, keep-alive connections on the standard
        library (:class:`simclient.io._connections.Connections`: a store's client needs none of
        ``httpx.Client``'s cookies, redirects or auth flows, which cost about 0.3 ms a request on
        the development VM, a third of a window's round trip, and importing httpx some 80 ms of
        a process's start), and ``httpx.HTTPTransport`` for ``https://``.
    """

    remote = True

    def __init__(self, url: str, *, token: str | None = None, timeout: float = 10.0, retries: int = 8,
                 backoff: float = 0.05, transport: httpx.BaseTransport | None = None) -> None:
        self.url = url.rstrip("/")
        self.name = self.url.rsplit("/", 1)[-1]
        self.retries = retries
        self.backoff = backoff
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._connections: Connections | TransportConnections
        if transport is None and self.url.startswith("http://"):
            self._connections = Connections(timeout)
        else:  # (httpx only here: a run on a plain-HTTP store does without it)
            import httpx

            from simclient.io._transport import TransportConnections
            self._connections = TransportConnections(transport or httpx.HTTPTransport(), timeout)
        r = self._get(self.url, what="header")
        self.header = Header.from_dict(r.json())

    def _get(self, url: str, *, what: str) -> Reply:
        delay = self.backoff
        for attempt in range(self.retries + 1):
            try:
                r = self._connections.get(url, self._headers)
            except TransportFailure as exc:
                cause: str = str(exc)
            else:
                if r.status < 400:
                    return r
                code, detail = _detail(r)
                if r.status == 404:
                    raise SourceNotFound(f"{self.name}: {what}: not found ({detail})")
                if code in ("record_corrupt", "table_unreadable"):  # the store's definite answer
                    raise SourceCorrupt(f"{self.name}: {what}: HTTP {r.status} ({detail})")
                if r.status < 500:
                    err = SourceRequestError(f"{self.name}: {what}: HTTP {r.status} ({detail})")
                    err.status_code = r.status  # type: ignore[attr-defined]
                    raise err
                cause = f"HTTP {r.status} ({detail})"
            if attempt < self.retries:
                if attempt == 0:  # (once: a store restarting answers within the retries, silently after)
                    _log.warning("%s: %s: %s; retrying up to %d times over %.0f s", self.name, what, cause,
                                 self.retries, self._retry_time())
                time.sleep(delay)
                delay = min(2 * delay, 2.0)
        raise SourceUnavailable(f"{self.name}: {what}: failed after {self.retries + 1} attempts: {cause}")

    def _retry_time(self) -> float:
        """How long (s) the retries wait in all."""
        return sum(min(self.backoff * 2**k, 2.0) for k in range(self.retries))

    def read_block(self, ri0: int, ri1: int, rj0: int, rj1: int, array: str = "points") -> np.ndarray:
        try:
            return self._read_block(ri0, ri1, rj0, rj1, array)
        except SourceRequestError as exc:
            # larger than the store's per-request limit (413): fetch it in two halves
            if getattr(exc, "status_code", None) != 413 or (ri1 - ri0) * (rj1 - rj0) < 2:
                raise
        if ri1 - ri0 >= rj1 - rj0:
            m = (ri0 + ri1) // 2
            return np.concatenate([self.read_block(ri0, m, rj0, rj1, array), self.read_block(m, ri1, rj0, rj1, array)],
                                  axis=0)
        m = (rj0 + rj1) // 2
        return np.concatenate([self.read_block(ri0, ri1, rj0, m, array), self.read_block(ri0, ri1, m, rj1, array)],
                              axis=1)

    def _read_block(self, ri0: int, ri1: int, rj0: int, rj1: int, array: str) -> np.ndarray:
        what = f"records [{ri0}, {ri1}) x [{rj0}, {rj1})"
        extra = "" if array == "points" else f"&array={array}"
        r = self._get(f"{self.url}/block?ri0={int(ri0)}&ri1={int(ri1)}&rj0={int(rj0)}&rj1={int(rj1)}{extra}", what=what)
        digest = r.headers.get("x-table-digest")
        if digest != self.header.digest:
            raise TableChanged(f"{self.name}: {what}: the table changed on the store "
                               f"(digest {digest}, expected {self.header.digest})")
        return load_npy(r.content)

    def close(self) -> None:
        self._connections.close()

    def __repr__(self) -> str:
        return f"HttpSource({self.url!r})"


def _detail(r: Reply) -> tuple[str | None, str]:
    """The store's error code and a readable ``code: detail`` (or the body's start)."""
    try:
        body = r.json()
        return str(body.get("error")), f"{body.get('error')}: {body.get('detail')}"
    except (ValueError, AttributeError):
        return None, r.text[:200]


class CountingSource:
    """Wraps a source and counts what passes through: ``requests``, ``records_fetched``,
    ``bytes_fetched`` (points' bytes) and ``wait_s`` (seconds spent inside ``read_block``)."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.name = source.name
        self.header = source.header
        self.remote = source.remote
        self.requests = 0
        self.records_fetched = 0
        self.bytes_fetched = 0
        self.wait_s = 0.0

    def read_block(self, ri0: int, ri1: int, rj0: int, rj1: int, array: str = "points") -> np.ndarray:
        t = time.perf_counter()
        try:
            data = self.source.read_block(ri0, ri1, rj0, rj1, array)
        finally:
            self.wait_s += time.perf_counter() - t
            self.requests += 1
        self.records_fetched += (ri1 - ri0) * (rj1 - rj0)
        self.bytes_fetched += data.nbytes
        return data


def open_surface(location: str | os.PathLike[str], **kwargs: Any) -> Source:
    """Open a table: an HTTP(S) URL of a table on a store, an ``s3://BUCKET/PREFIX/NAME.zarr``
    table on object storage (read directly, credentials and endpoint from the AWS environment
    variables), or a local table path."""
    loc = os.fspath(location)
    if loc.startswith(("http://", "https://")):
        return HttpSource(loc, **kwargs)
    return LocalSource(loc)
