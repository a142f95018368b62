"""Serving the store: uvicorn with limits on what a client may send.

uvicorn's httptools protocol reads a request's line and headers without a size limit or a time
limit (its keep-alive timer runs only between requests), so one client could make the process hold
a 300 MB header, or keep thousands of half-sent requests open until file descriptors run out.
:class:`GuardedHttpProtocol` adds both limits to it:

- a request head (request line and headers) larger than ``max_header_bytes`` is answered
  ``431 Request Header Fields Too Large`` and the connection closed, before more is buffered;
- a head not complete ``header_timeout`` seconds after its first byte (or after the connection
  opened) is answered ``408 Request Timeout`` and the connection closed.

- a connection whose client has not read what the store sends for ``write_timeout`` seconds
  (the transport's buffer full all that time) is closed and its buffer dropped: a client that
  does not read cannot hold the memory of its response (with the large bodies' bound of
  :mod:`surfacestore.bodies`, few can hold one at a time);
- a connection from an address that already holds ``client_connections`` open ones is answered
  ``429 Too Many Requests`` and closed at once: a client that floods the store with connections
  (slow headers that reconnect after each 408, say) holds at most that many, and uvicorn's
  ``limit_concurrency`` (503 beyond that many open connections or running requests, for all
  clients together) is never reached by it alone.

Together with ``timeout_keep_alive`` these are the store's connection limits (:class:`Settings`).
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
from collections import Counter
from typing import Any

from fastapi import FastAPI
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from surfacestore.app import create_app
from surfacestore.errors import StorageUnavailable
from surfacestore.runtime import tune_allocator
from surfacestore.settings import Settings

__all__ = ["GuardedHttpProtocol", "run", "create_app_from_env"]


class GuardedHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a size limit and a time limit on request heads (see the
    module docstring); the limits are class attributes, set once per process by :meth:`configure`."""

    max_header_bytes = 16 * 1024
    header_timeout = 10.0
    client_connections = 64
    write_timeout = 30.0
    _open: Counter[str] = Counter()  # open connections by client address (one event loop per process)

    @classmethod
    def configure(cls, settings: Settings) -> None:
        cls.max_header_bytes = int(settings.max_header_kb * 1024)
        cls.header_timeout = float(settings.header_timeout)
        cls.client_connections = int(settings.client_connections)
        cls.write_timeout = float(settings.write_timeout)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._in_head = True
        self._head_bytes = 0
        self._head_timer: asyncio.TimerHandle | None = None
        self._write_timer: asyncio.TimerHandle | None = None
        peer = transport.get_extra_info("peername")
        self._client: str | None = str(peer[0]) if isinstance(peer, tuple) and peer else ""
        if self._open[self._client] >= self.client_connections:
            self._client = None  # (not counted)
            self._refuse(429, "Too Many Requests", "too_many_connections",
                         f"more than {self.client_connections} open connections from one address")
            return
        self._open[self._client] += 1
        self._head_timer = self.loop.call_later(self.header_timeout, self._head_late)

    def pause_writing(self) -> None:
        super().pause_writing()
        if self._write_timer is None:
            self._write_timer = self.loop.call_later(self.write_timeout, self._not_reading)

    def resume_writing(self) -> None:
        if self._write_timer is not None:
            self._write_timer.cancel()
            self._write_timer = None
        super().resume_writing()

    def _not_reading(self) -> None:
        self._write_timer = None
        if not self.transport.is_closing():
            self.transport.abort()  # (drops what it holds; connection_lost follows)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._write_timer is not None:
            self._write_timer.cancel()
            self._write_timer = None
        self._cancel_head_timer()
        if self._client is not None:
            self._open[self._client] -= 1
            if self._open[self._client] <= 0:
                del self._open[self._client]
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.transport.is_closing():
            return  # (refused: what the client still sends is not read)
        if self._in_head:
            self._head_bytes += len(data)
            if self._head_bytes > self.max_header_bytes:
                self._refuse(431, "Request Header Fields Too Large", "header_too_large",
                             f"the request line and headers exceed {self.max_header_bytes} bytes")
                return
            if self._head_timer is None:
                self._head_timer = self.loop.call_later(self.header_timeout, self._head_late)
        super().data_received(data)

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._cancel_head_timer()
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._in_head, self._head_bytes = True, 0  # the next request on this connection

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_late(self) -> None:
        self._head_timer = None
        if self._in_head and not self.transport.is_closing():
            self._refuse(408, "Request Timeout", "request_timeout",
                         f"the request line and headers did not arrive within {self.header_timeout:g} s")

    def _refuse(self, status: int, reason: str, error: str, detail: str) -> None:
        self._in_head = False
        self._cancel_head_timer()
        if self.transport.is_closing():
            return
        body = json.dumps({"error": error, "detail": detail}).encode()
        self.transport.write(b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n"
                             b"connection: close\r\n\r\n%s" % (status, reason.encode(), len(body), body))
        self.transport.close()


def _raise_file_limit() -> None:
    """Raise this process' soft limit of open files to its hard limit (each connection is one)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard if hard != resource.RLIM_INFINITY else 65536, hard))


def check_address(host: str, port: int) -> None:
    """:class:`StorageUnavailable`, saying why, when ``host:port`` cannot be listened on (taken, or
    not an address of this machine): before the server starts and says it is serving there."""
    import socket

    for family, kind, proto, _, address in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM):
        with socket.socket(family, kind, proto) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # (as uvicorn binds)
            try:
                sock.bind(address)
            except OSError as exc:
                raise StorageUnavailable(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
        return


def run(settings: Settings) -> None:
    """Serve the tables of ``settings.root`` with uvicorn and the connection limits of ``settings``
    (worker processes read the same settings from the environment)."""
    import uvicorn

    _raise_file_limit()
    GuardedHttpProtocol.configure(settings)
    options: dict[str, Any] = {"host": settings.host, "port": settings.port, "log_level": settings.log_level,
                               "http": GuardedHttpProtocol, "limit_concurrency": settings.limit_concurrency,
                               "timeout_keep_alive": settings.timeout_keep_alive, "timeout_graceful_shutdown": 10}
    if settings.workers > 1:
        os.environ.update(settings.to_env())
        uvicorn.run("surfacestore.server:create_app_from_env", factory=True, workers=settings.workers, **options)
    else:
        uvicorn.run(create_app(settings), **options)


def create_app_from_env() -> FastAPI:
    """Factory for ``uvicorn --factory`` (worker processes read their settings from the environment)."""
    tune_allocator()
    settings = Settings.from_env()
    GuardedHttpProtocol.configure(settings)
    return create_app(settings)
