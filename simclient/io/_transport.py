"""httpx transports for a surface store's client.

- :class:`KeepAliveTransport`: :class:`simclient.io._connections.Connections` (plain-HTTP/1.1
  keep-alive on the standard library, one connection per thread and host) as an
  ``httpx.BaseTransport``, for httpx clients (the benchmarks' and soak tests' clients).
- :class:`TransportConnections`: any httpx transport (``https://``, a test's ``MockTransport``)
  behind the interface :class:`simclient.io.HttpSource` reads with, that of ``Connections``.

A failure of the connections is raised as httpx's exception tree, and an httpx transport's as a
:class:`~simclient.io._connections.TransportFailure`, by one table::

    connect          httpx.ConnectError
    connect_timeout  httpx.ConnectTimeout
    read_timeout     httpx.ReadTimeout (and httpx's other timeouts)
    protocol         httpx.RemoteProtocolError
    network          httpx.NetworkError (and httpx's other transport errors)
"""

from __future__ import annotations

import httpx

from simclient.io._connections import Connections, Reply, TransportFailure

__all__ = ["KeepAliveTransport", "TransportConnections"]

_HTTPX_ERRORS: dict[str, type[httpx.TransportError]] = {
    "connect": httpx.ConnectError, "connect_timeout": httpx.ConnectTimeout, "read_timeout": httpx.ReadTimeout,
    "protocol": httpx.RemoteProtocolError, "network": httpx.NetworkError}


class KeepAliveTransport(httpx.BaseTransport):
    """Plain-HTTP/1.1 httpx transport on keep-alive connections, one per thread and
    ``(host, port)``; thread-safe. Timeouts (seconds) come from the request's ``timeout``
    extension as httpx sets it (``connect``, ``read``), else ``default_timeout``."""

    def __init__(self, default_timeout: float | None = 10.0) -> None:
        self.default_timeout = default_timeout
        self._connections = Connections(default_timeout)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.scheme != "http":
            raise httpx.UnsupportedProtocol(f"KeepAliveTransport handles http:// only, not {request.url.scheme}://")
        timeouts = request.extensions.get("timeout", {})
        try:
            reply = self._connections.request(
                request.method, str(request.url), {k.decode("latin-1"): v.decode("latin-1") for k, v in request.headers.raw},
                request.read() or None, timeouts.get("connect"), timeouts.get("read"), decode=False)
        except TransportFailure as exc:
            raise _HTTPX_ERRORS[exc.kind](str(exc), request=request) from exc
        # (the body as sent: httpx decodes it by its Content-Encoding, as with its own transports)
        return httpx.Response(reply.status, headers=list(reply.headers.items()), stream=httpx.ByteStream(reply.content),
                              request=request)

    def close(self) -> None:
        """Close every connection of every thread."""
        self._connections.close()


class TransportConnections:
    """An httpx ``transport`` read as :class:`~simclient.io._connections.Connections` are, each
    request with ``timeout`` (s)."""

    def __init__(self, transport: httpx.BaseTransport, timeout: float | None) -> None:
        self.transport = transport
        self._timeout = httpx.Timeout(timeout).as_dict()

    def get(self, url: str, headers: dict[str, str] | None = None) -> Reply:
        try:
            r = self.transport.handle_request(httpx.Request("GET", httpx.URL(url), headers=headers,
                                                            extensions={"timeout": self._timeout}))
            r.read()
        except httpx.TransportError as exc:
            kind = next((k for k, cls in _HTTPX_ERRORS.items() if isinstance(exc, cls)),
                        "read_timeout" if isinstance(exc, httpx.TimeoutException) else "network")
            raise TransportFailure(kind, f"{type(exc).__name__}: {exc}") from exc
        return Reply(r.status_code, {k.lower(): v for k, v in r.headers.items()}, r.content)

    def close(self) -> None:
        self.transport.close()
