"""Keep-alive HTTP/1.1 connections to a surface store, on the standard library's ``http.client``.

:class:`Connections` holds one persistent connection per thread and ``(host, port)`` and sends
GETs on it (:meth:`Connections.get` -> :class:`Reply`). It exists for latency and start-up: on
the 2-core development VM a 3 x 3 window (82 KB) took about 1.2 ms through ``httpx.Client`` with
its default transport and about 0.75 ms on these connections, against about 0.5 ms for a raw
socket (``simclient bench store`` shows the same comparison for the bare endpoint); and a
process that imports httpx pays some 80 ms for modules a store's client never uses (its command
line's, its auth flows'). :class:`simclient.io.HttpSource` reads ``http://`` stores on these
connections and imports httpx only for a transport it is given (``https://``, a test's mock);
:class:`simclient.io.KeepAliveTransport` offers them to httpx clients.

A failure is a :class:`TransportFailure` whose ``kind`` says what failed::

    connect          refused / unreachable while connecting
    connect_timeout  timeout while connecting
    read_timeout     timeout while sending or reading
    protocol         connection closed or reset by the server, or a malformed response
    network          any other socket error

A connection that failed, or that the server asked to close, is dropped and the next request
opens a new one; requests are not retried here (:class:`simclient.io.HttpSource` retries).
Only ``http://`` URLs are handled.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
import zlib
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

__all__ = ["Connections", "Reply", "TransportFailure"]


class TransportFailure(OSError):
    """A request that got no complete response; ``kind`` as in the module's table."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class Reply:
    """A response: its ``status``, ``headers`` (names in lower case) and ``content`` (decoded
    where the server compressed it)."""

    status: int
    headers: dict[str, str]
    content: bytes

    def json(self) -> Any:
        return json.loads(self.content)

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")


class Connections:
    """Keep-alive connections, one per thread and ``(host, port)``; thread-safe. ``timeout`` (s)
    for connecting and for each read unless a request gives its own."""

    def __init__(self, timeout: float | None = 10.0) -> None:
        self.timeout = timeout
        self._local = threading.local()
        self._lock = threading.Lock()
        self._all: set[http.client.HTTPConnection] = set()

    def _connection(self, host: str, port: int, timeout: float | None) -> http.client.HTTPConnection:
        conns: dict[tuple[str, int], http.client.HTTPConnection] = self._local.__dict__.setdefault("conns", {})
        conn = conns.get((host, port))
        if conn is None:
            conn = http.client.HTTPConnection(host, port, timeout=timeout)
            try:
                conn.connect()
            except TimeoutError as exc:
                raise TransportFailure("connect_timeout", f"connecting to {host}:{port}: {exc}") from exc
            except OSError as exc:
                raise TransportFailure("connect", f"connecting to {host}:{port}: {exc}") from exc
            # small requests go out at once rather than waiting for Nagle's algorithm
            conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conns[(host, port)] = conn
            with self._lock:
                self._all.add(conn)
        return conn

    def _drop(self, conn: http.client.HTTPConnection) -> None:
        conn.close()
        conns = self._local.__dict__.get("conns", {})
        for key in [k for k, c in conns.items() if c is conn]:
            del conns[key]
        with self._lock:
            self._all.discard(conn)

    def request(self, method: str, url: str, headers: dict[str, str] | None = None, body: bytes | None = None,
                connect_timeout: float | None = None, read_timeout: float | None = None, decode: bool = True) -> Reply:
        """Send ``method url`` with ``headers`` and ``body``; the response, read whole (with
        ``decode``, a compressed body decompressed). Timeouts (s) default to the connections' ``timeout``."""
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"keep-alive connections handle http:// URLs only, not {url!r}")
        host, port = parts.hostname, parts.port or 80
        conn = self._connection(host, port, self.timeout if connect_timeout is None else connect_timeout)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        try:
            conn.sock.settimeout(self.timeout if read_timeout is None else read_timeout)
            conn.request(method, target, body=body, headers=headers or {})
            response = conn.getresponse()
            content = response.read()
        except BaseException as exc:
            self._drop(conn)
            where = f"{method} {url}"
            if isinstance(exc, TimeoutError):
                raise TransportFailure("read_timeout", f"{where}: timed out: {exc}") from exc
            if isinstance(exc, (http.client.HTTPException, ConnectionError)):
                raise TransportFailure("protocol", f"{where}: {type(exc).__name__}: {exc}") from exc
            if isinstance(exc, OSError):
                raise TransportFailure("network", f"{where}: {type(exc).__name__}: {exc}") from exc
            raise
        if response.will_close:
            self._drop(conn)
        reply_headers = {k.lower(): v for k, v in response.getheaders()}
        encoding = reply_headers.get("content-encoding", "identity").lower()
        if decode and encoding in ("gzip", "deflate"):
            try:
                content = zlib.decompress(content, wbits=47)  # (47: a gzip or a zlib header, either)
            except zlib.error as exc:
                raise TransportFailure("protocol", f"{method} {url}: a body that is not {encoding}: {exc}") from exc
        return Reply(response.status, reply_headers, content)

    def get(self, url: str, headers: dict[str, str] | None = None) -> Reply:
        """``GET url``, as :meth:`request`."""
        return self.request("GET", url, headers)

    def close(self) -> None:
        """Close every connection of every thread."""
        with self._lock:
            conns, self._all = self._all, set()
        for conn in conns:
            conn.close()
        self._local = threading.local()
