"""Starting a surface store (or any server command) as a local process: the one helper used by the
demo, the benchmarks and the tests."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import httpx

from simclient.errors import ServiceError

__all__ = ["free_port", "ServerProcess", "StoreProcess", "serve", "serve_store"]


def free_port() -> int:
    """A free TCP port on the loopback interface."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServerProcess:
    """A server command run with ``--port PORT`` appended, on loopback; ready once
    ``GET /v1/health`` answers 200. ``url`` is its base URL. Can be stopped and started again on
    the same port (a restart)."""

    def __init__(self, command: Sequence[str], *, port: int | None = None, env: dict[str, str] | None = None,
                 start: bool = True, timeout: float = 30.0) -> None:
        self.command = [*command]
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {**os.environ, **(env or {})}
        self.timeout = timeout
        self.proc: subprocess.Popen[bytes] | None = None
        # the server's log goes to a file: a pipe nobody reads would block the server once full
        self.log = tempfile.TemporaryFile()
        if start:
            self.start()

    def start(self, wait: bool = True) -> None:
        self.proc = subprocess.Popen([*self.command, "--port", str(self.port)], stdout=subprocess.DEVNULL,
                                     stderr=self.log, env=self.env)
        if wait:
            self.wait_ready()

    def log_tail(self, n: int = 2000) -> str:
        """The last ``n`` characters the server wrote to its standard error."""
        self.log.seek(0)
        return self.log.read().decode(errors="replace")[-n:]

    def wait_ready(self) -> None:
        """Wait until the server answers its health check; :class:`ServiceError` if it exits or
        does not answer within the timeout."""
        assert self.proc is not None
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ServiceError(f"{' '.join(self.command)} exited with status {self.proc.returncode}: "
                                   f"{self.log_tail()}")
            try:
                if httpx.get(self.url + "/v1/health", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        self.stop()
        raise ServiceError(f"{' '.join(self.command)} did not answer on {self.url} within {self.timeout:g} s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class StoreProcess(ServerProcess):
    """``surfacestore serve --root ROOT ARGS...`` on loopback (log level ``warning``)."""

    def __init__(self, root: str | os.PathLike[str], *args: str, port: int | None = None, start: bool = True) -> None:
        self.root = Path(root)
        super().__init__([sys.executable, "-m", "surfacestore.cli", "serve", "--root", str(root), "--log-level",
                          "warning", *args], port=port, start=start)


@contextlib.contextmanager
def serve(command: Sequence[str], env: dict[str, str] | None = None) -> Iterator[str]:
    """Run a server command (``--port`` appended) and yield its base URL once healthy."""
    with ServerProcess(command, env=env) as server:
        yield server.url


@contextlib.contextmanager
def serve_store(root: str | os.PathLike[str], *args: str) -> Iterator[str]:
    """Serve the tables of ``root`` with the surface store and yield its base URL once healthy."""
    with StoreProcess(root, *args) as store:
        yield store.url
