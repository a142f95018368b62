"""Starting a surface store (or any server command) as a local process: the one helper used by the
demo, the benchmarks and the tests."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from typing import Self
from pathlib import Path

import httpx

from simclient.errors import ServiceError

__all__ = ["free_port", "ServerProcess", "StoreProcess", "S3Server", "NginxProxy", "find_nginx", "aws_environment",
           "serve", "serve_store"]


def free_port() -> int:
    """A free TCP port on the loopback interface."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServerProcess:
    """A server command run with ``--port PORT`` appended, on loopback; ready once
    ``GET health`` (default ``/v1/health``) answers 200. ``url`` is its base URL. Can be stopped
    and started again on the same port (a restart)."""

    def __init__(self, command: Sequence[str], *, port: int | None = None, env: dict[str, str] | None = None,
                 start: bool = True, timeout: float = 30.0, health: str = "/v1/health") -> None:
        self.command = [*command]
        self.health = health
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
                if httpx.get(self.url + self.health, timeout=1).status_code == 200:
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

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class StoreProcess(ServerProcess):
    """``surfacestore serve --root ROOT ARGS...`` on loopback (log level ``warning``); ``root`` a
    folder or an ``s3://`` prefix."""

    def __init__(self, root: str | os.PathLike[str], *args: str, port: int | None = None, start: bool = True,
                 env: dict[str, str] | None = None) -> None:
        super().__init__([sys.executable, "-m", "surfacestore.cli", "serve", "--root", str(root), "--log-level",
                          "warning", *args], port=port, start=start, env=env)


class S3Server(ServerProcess):
    """A local S3 API (``moto.server``, from the test extras) with one bucket; :meth:`aws_env` gives
    the AWS environment variables that point obstore (and so ``s3://`` tables) at it."""

    def __init__(self, bucket: str = "tables", *, port: int | None = None) -> None:
        try:
            import boto3
            import moto  # noqa: F401
        except ImportError:
            raise ServiceError("a local S3 server needs moto[server] (pip install -e '.[test]')") from None
        super().__init__([sys.executable, "-m", "moto.server", "-H", "127.0.0.1"], port=port, health="/moto-api/")
        self.bucket = bucket
        boto3.client("s3", endpoint_url=self.url, aws_access_key_id="test", aws_secret_access_key="test",
                     region_name="us-east-1").create_bucket(Bucket=bucket)

    def aws_env(self, timeout_s: float = 10.0) -> dict[str, str]:
        return {"AWS_ENDPOINT_URL": self.url, "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
                "AWS_REGION": "us-east-1", "SURFACESTORE_S3_TIMEOUT": f"{timeout_s:g}"}


@contextlib.contextmanager
def aws_environment(env: dict[str, str]) -> Iterator[None]:
    """Set ``env`` in this process for the block (the ``s3://`` clients are rebuilt on both sides)."""
    from surfacestore import objects

    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    objects.reset_clients()
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        objects.reset_clients()


NGINX_CONF = Path(__file__).resolve().parents[2] / "deploy" / "nginx.conf"


def find_nginx() -> str | None:
    """The nginx executable, if installed."""
    return shutil.which("nginx") or shutil.which("/usr/sbin/nginx")


class NginxProxy:
    """``deploy/nginx.conf`` (the compose file's proxy) run here in front of ``upstreams`` (base
    URLs of local stores), on a free loopback port; ``url`` is its base URL."""

    def __init__(self, upstreams: Sequence[str], *, workers: int = 2, timeout: float = 30.0) -> None:
        nginx = find_nginx()
        if nginx is None:
            raise ServiceError("nginx is not installed (Debian: apt-get install nginx-light)")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.dir = tempfile.TemporaryDirectory()
        d = Path(self.dir.name)
        conf = NGINX_CONF.read_text()
        conf = conf.replace("server store:8000 max_fails=2 fail_timeout=5s;", "\n".join(
            f"server {u.removeprefix('http://')} max_fails=2 fail_timeout=5s;" for u in upstreams))
        conf = conf.replace("listen 80;", f"listen 127.0.0.1:{self.port};")
        conf = conf.replace("worker_processes auto;", f"worker_processes {workers};\npid {d}/nginx.pid;" +
                            ("\nuser root;" if os.geteuid() == 0 else ""))
        (d / "nginx.conf").write_text(conf)
        (d / "logs").mkdir()
        self.proc = subprocess.Popen([nginx, "-p", str(d), "-c", str(d / "nginx.conf"), "-g",
                                      "daemon off; error_log stderr;"], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        deadline = time.monotonic() + timeout
        while True:
            try:
                if httpx.get(f"{self.url}/v1/health", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                err = self.proc.stderr.read(2000) if self.proc.poll() is not None and self.proc.stderr else b""
                self.stop()
                raise ServiceError(f"nginx did not start: {err.decode(errors='replace')}")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
        self.dir.cleanup()

    def __enter__(self) -> NginxProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


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
