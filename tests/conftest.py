from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_surfaces"
SHARED_DATA = ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def sample_tables(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample tables of sample_surfaces/, built once per test session."""
    from preprocess.build import build_surface, load_spec

    out = tmp_path_factory.mktemp("tables")
    for spec_file in sorted(SAMPLES.glob("*.toml")):
        for spec in load_spec(spec_file):
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                build_surface(spec, out)
    return out


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class StoreProcess:
    """A real `surfacestore serve` process on a free loopback port."""

    def __init__(self, root: Path, *args: str, port: int | None = None) -> None:
        self.root, self.args = root, args
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = None
        self.start()

    def start(self, wait: bool = True) -> None:
        import subprocess
        import sys

        self.proc = subprocess.Popen(
            [sys.executable, "-m", "surfacestore.cli", "serve", "--root", str(self.root), "--port", str(self.port),
             "--log-level", "warning", *self.args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if wait:
            self.wait_ready()

    def wait_ready(self, timeout: float = 30.0) -> None:
        import time

        import httpx

        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"store exited: {self.proc.stderr.read().decode()}")
            try:
                if httpx.get(self.url + "/v1/health", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.05)
        raise RuntimeError("store did not start")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except Exception:
                self.proc.kill()


@pytest.fixture(scope="session")
def store(sample_tables):
    """The store serving the sample tables for the whole test session."""
    s = StoreProcess(sample_tables)
    yield s
    s.stop()
