"""docker-compose.yml and Dockerfile: structure checked here (no Docker engine on CI), and the
commands the compose file runs are run for real against a temporary volume folder."""

from __future__ import annotations

import subprocess
import sys

import httpx
import pytest
import yaml
from conftest import ROOT, free_port

pytestmark = pytest.mark.slow  # (the whole module: see `python3 dev.py test --fast`)


def _compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_compose_structure():
    c = _compose()
    store, job = c["services"]["store"], c["services"]["build-tables"]
    assert "tables" in c["volumes"]
    assert "tables:/tables:ro" in store["volumes"] and "tables:/tables" in job["volumes"]
    assert store["depends_on"]["build-tables"]["condition"] == "service_completed_successfully"
    assert store["deploy"]["replicas"] >= 2 and "ports" not in store  # replicas reached through the proxy only
    proxy = c["services"]["proxy"]
    assert proxy["image"].startswith("nginx:")
    assert "./deploy/nginx.conf:/etc/nginx/nginx.conf:ro" in proxy["volumes"]
    assert proxy["ports"] == ["127.0.0.1:8000:80"]  # published on loopback only
    assert proxy["depends_on"]["store"]["condition"] == "service_healthy"
    assert "/v1/health" in " ".join(proxy["healthcheck"]["test"])
    conf = (ROOT / "deploy" / "nginx.conf").read_text()
    assert "server store:8000" in conf and "proxy_pass http://store;" in conf  # every replica behind one name
    hc = store["healthcheck"]
    assert hc["test"][0] == "CMD" and "/v1/health" in " ".join(hc["test"])
    assert job["command"][0] == "preprocess" and store["command"][0] == "surfacestore"
    docker = (ROOT / "Dockerfile").read_text()
    assert "pip install" in docker and 'CMD ["surfacestore", "serve"]' in docker
    for path in ("surfacestore", "preprocess", "simclient", "sample_surfaces", "pyproject.toml"):
        assert f"COPY {path}" in docker


def _bin(cmd: list[str]) -> list[str]:
    module = {"preprocess": "preprocess.cli", "surfacestore": "surfacestore.cli"}[cmd[0]]
    return [sys.executable, "-m", module, *cmd[1:]]


def test_compose_commands_run(tmp_path):
    c = _compose()
    volume = str(tmp_path)
    job = [a.replace("/tables", volume) for a in c["services"]["build-tables"]["command"]]
    for _ in range(2):  # the second run finds every table up to date
        r = subprocess.run(_bin(job), cwd=ROOT, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    assert r.stdout.count("up to date") >= 9
    port = free_port()
    serve = [a.replace("/tables", volume).replace("0.0.0.0", "127.0.0.1").replace("8000", str(port))
             for a in c["services"]["store"]["command"]]
    proc = subprocess.Popen(_bin(serve), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        health = [a.replace("8000", str(port)) for a in c["services"]["store"]["healthcheck"]["test"][1:]]
        health[0] = sys.executable
        for _ in range(100):
            if subprocess.run(health, capture_output=True).returncode == 0:
                break
            import time

            time.sleep(0.1)
        else:
            raise AssertionError("healthcheck never passed")
        names = {t["name"] for t in httpx.get(f"http://127.0.0.1:{port}/v1/surfaces").json()}
        assert {"ball", "ground", "condyle_medial"} <= names
    finally:
        proc.terminate()
        proc.wait(10)
