"""A lean synchronous httpx transport for talking to a surface store over plain HTTP.

:class:`KeepAliveTransport` implements ``httpx.BaseTransport`` on the standard library's
``http.client``: one persistent HTTP/1.1 connection per thread and host. It exists for latency:
on the 2-core development VM a 3 x 3 window (82 KB) took about 1.2 ms through ``httpx.Client``
with its default transport and about 0.75 ms through this transport called directly, against
about 0.5 ms for a raw socket (``simclient bench store`` shows the same comparison for the bare
endpoint). The saving is httpcore's and the client's per-request bookkeeping (connection pool,
cookies, redirects, auth flow), none of which a store client needs.

Errors of the standard library are translated to httpx's exception tree at this boundary, so
callers catch ``httpx.TransportError`` whichever transport is in use::

    refused / unreachable while connecting   -> httpx.ConnectError
    timeout while connecting                  -> httpx.ConnectTimeout
    timeout while sending or reading          -> httpx.ReadTimeout
    connection closed or reset by the server  -> httpx.RemoteProtocolError
    malformed response                        -> httpx.RemoteProtocolError
    any other socket error                    -> httpx.NetworkError

A connection that failed, or that the server asked to close, is dropped and the next request
opens a new one; requests are not retried here (:class:`simclient.io.HttpSource` retries).
Only ``http://`` URLs are handled: give ``httpx.HTTPTransport()`` for TLS.
"""

from __future__ import annotations

import http.client
import socket
import threading

import httpx

__all__ = ["KeepAliveTransport"]


class KeepAliveTransport(httpx.BaseTransport):
    """Plain-HTTP/1.1 httpx transport over ``http.client`` keep-alive connections, one per
    thread and ``(host, port)``; thread-safe. Timeouts (seconds) come from the request's
    ``timeout`` extension as httpx sets it (``connect``, ``read``), else ``default_timeout``."""

    def __init__(self, default_timeout: float | None = 10.0) -> None:
        self.default_timeout = default_timeout
        self._local = threading.local()
        self._lock = threading.Lock()
        self._all: set[http.client.HTTPConnection] = set()

    def _connection(self, url: httpx.URL, timeouts: dict[str, float | None]) -> http.client.HTTPConnection:
        if url.scheme != "http":
            raise httpx.UnsupportedProtocol(f"KeepAliveTransport handles http:// only, not {url.scheme}://")
        conns: dict[tuple[str, int], http.client.HTTPConnection] = self._local.__dict__.setdefault("conns", {})
        key = (url.host, url.port or 80)
        conn = conns.get(key)
        if conn is None:
            conn = http.client.HTTPConnection(*key, timeout=timeouts.get("connect", self.default_timeout))
            try:
                conn.connect()
            except TimeoutError as exc:
                raise httpx.ConnectTimeout(f"connecting to {url.host}:{key[1]}: {exc}") from exc
            except OSError as exc:
                raise httpx.ConnectError(f"connecting to {url.host}:{key[1]}: {exc}") from exc
            # small requests go out at once rather than waiting for Nagle's algorithm
            conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conns[key] = conn
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

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        timeouts = request.extensions.get("timeout", {})
        conn = self._connection(request.url, timeouts)
        try:
            conn.sock.settimeout(timeouts.get("read", self.default_timeout))
            conn.request(request.method, request.url.raw_path.decode("ascii"), body=request.read() or None,
                         headers={k.decode("latin-1"): v.decode("latin-1") for k, v in request.headers.raw})
            response = conn.getresponse()
            body = response.read()
        except BaseException as exc:
            self._drop(conn)
            where = f"{request.method} {request.url}"
            if isinstance(exc, TimeoutError):
                raise httpx.ReadTimeout(f"{where}: timed out: {exc}", request=request) from exc
            if isinstance(exc, (http.client.HTTPException, ConnectionError)):
                raise httpx.RemoteProtocolError(f"{where}: {type(exc).__name__}: {exc}", request=request) from exc
            if isinstance(exc, OSError):
                raise httpx.NetworkError(f"{where}: {type(exc).__name__}: {exc}", request=request) from exc
            raise
        if response.will_close:
            self._drop(conn)
        return httpx.Response(response.status, headers=response.getheaders(), stream=httpx.ByteStream(body),
                              request=request)

    def close(self) -> None:
        """Close every connection of every thread."""
        with self._lock:
            conns, self._all = self._all, set()
        for conn in conns:
            conn.close()
        self._local = threading.local()
