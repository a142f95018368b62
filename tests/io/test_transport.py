"""The keep-alive connections and their httpx transport against a standard-library HTTP server:
keep-alive, httpx semantics (content decoding, headers), every failure named by its kind and
translated to httpx's exception tree; a store's client without httpx."""

from __future__ import annotations

import gzip
import http.server
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from simclient.io import KeepAliveTransport
from simclient.io._connections import Connections, TransportFailure


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive

    def setup(self) -> None:
        super().setup()
        self.server.connections += 1  # type: ignore[attr-defined]

    def log_message(self, *args: object) -> None:
        pass

    def _reply(self, body: bytes, headers: dict[str, str] | None = None, status: int = 200) -> None:
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path.startswith("/echo"):
            self._reply(f"{self.path}|{self.headers.get('X-Probe')}|{self.headers.get('Host')}".encode())
        elif self.path == "/gzip":
            self._reply(gzip.compress(b"z" * 1000), {"Content-Encoding": "gzip"})
        elif self.path == "/missing":
            self._reply(b'{"error": "not_found"}', {"Content-Type": "application/json"}, status=404)
        elif self.path == "/close":
            self._reply(b"bye", {"Connection": "close"})
            self.close_connection = True
        elif self.path == "/truncated":  # promises 100 bytes, sends 10, hangs up
            self.send_response(200)
            self.send_header("Content-Length", "100")
            self.end_headers()
            self.wfile.write(b"0123456789")
            self.close_connection = True
        elif self.path == "/slow":
            time.sleep(1.0)
            self._reply(b"late")


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    connections = 0

    def handle_error(self, request: object, client_address: object) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # a client that timed out and left
            super().handle_error(request, client_address)  # type: ignore[arg-type]


@pytest.fixture()
def server() -> Iterator[http.server.ThreadingHTTPServer]:
    srv = _Server(("127.0.0.1", 0), _Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv
    srv.shutdown()
    srv.server_close()


def _url(srv: http.server.ThreadingHTTPServer, path: str) -> str:
    return f"http://127.0.0.1:{srv.server_address[1]}{path}"


def _get(t: KeepAliveTransport, url: str, **kw: object) -> httpx.Response:
    r = t.handle_request(httpx.Request("GET", url, **kw))  # type: ignore[arg-type]
    r.read()
    return r


def test_one_connection_reused_per_thread(server):
    t = KeepAliveTransport()
    for k in range(5):
        r = _get(t, _url(server, f"/echo?k={k}"), headers={"X-Probe": "p"})
        assert r.status_code == 200
        assert r.text == f"/echo?k={k}|p|127.0.0.1:{server.server_address[1]}"
    assert server.connections == 1
    threads = [threading.Thread(target=_get, args=(t, _url(server, "/echo"))) for _ in range(3)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert server.connections == 4  # one more per thread
    t.close()
    _get(t, _url(server, "/echo"))  # after close: a new connection
    assert server.connections == 5


def test_httpx_response_semantics(server):
    t = KeepAliveTransport()
    r = _get(t, _url(server, "/gzip"))
    assert r.content == b"z" * 1000  # decoded by httpx as with its own transport
    r = _get(t, _url(server, "/missing"))
    assert r.status_code == 404 and r.json() == {"error": "not_found"}
    with pytest.raises(httpx.HTTPStatusError):
        r.raise_for_status()


def test_server_closing_the_connection_is_followed_by_a_new_one(server):
    t = KeepAliveTransport()
    assert _get(t, _url(server, "/close")).text == "bye"
    assert _get(t, _url(server, "/echo")).status_code == 200
    assert server.connections == 2


def test_errors_are_httpx_transport_errors(server):
    t = KeepAliveTransport()
    with pytest.raises(httpx.RemoteProtocolError, match="/truncated"):
        _get(t, _url(server, "/truncated"))
    assert _get(t, _url(server, "/echo")).status_code == 200  # the broken connection was dropped
    with pytest.raises(httpx.ReadTimeout, match="/slow"):
        _get(t, _url(server, "/slow"), extensions={"timeout": {"connect": 1.0, "read": 0.2}})
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(httpx.ConnectError, match=f"127.0.0.1:{port}"):
        _get(t, f"http://127.0.0.1:{port}/x")
    with pytest.raises(httpx.UnsupportedProtocol):
        _get(t, "https://127.0.0.1/x")


def test_connections_decode_bodies_and_name_each_failure(server):
    """The standard-library connections HttpSource reads a plain-HTTP store on: a compressed body
    decoded, a broken connection dropped, and each failure a TransportFailure of its kind."""
    c = Connections(timeout=1.0)
    assert c.get(_url(server, "/gzip")).content == b"z" * 1000
    r = c.get(_url(server, "/missing"))
    assert r.status == 404 and r.json() == {"error": "not_found"} and r.headers["content-type"] == "application/json"
    kinds = []
    for path, read_timeout in (("/truncated", None), ("/slow", 0.2)):
        with pytest.raises(TransportFailure, match=path) as err:
            c.request("GET", _url(server, path), read_timeout=read_timeout)
        kinds.append(err.value.kind)
    assert c.get(_url(server, "/echo")).status == 200 and server.connections == 3  # (a new one after each failure)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(TransportFailure, match=f"127.0.0.1:{port}") as err:
        c.get(f"http://127.0.0.1:{port}/x")
    assert kinds + [err.value.kind] == ["protocol", "read_timeout", "connect"]


def test_a_plain_http_store_is_read_without_importing_httpx(store):
    """A client of a plain-HTTP store imports no httpx (some 80 ms of a process's start)."""
    code = ("import sys; from simclient import open_surface; "
            f"s = open_surface('{store.url}/v1/surfaces/ball'); assert s.read_block(0, 1, 0, 1).shape[2] == 14; "
            "print('httpx' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "False", r.stderr[-2000:]
