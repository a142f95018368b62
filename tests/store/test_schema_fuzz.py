"""Schema fuzzing of the real store: schemathesis generates requests from the OpenAPI schema (and
from outside it) for 15 s and checks every response against the schema and HTTP's rules
(``--checks all``); zero failures."""

from __future__ import annotations

import subprocess
import sys

import pytest
from pathlib import Path

pytestmark = pytest.mark.slow  # (the whole module: see `python3 dev.py test --fast`)

HERE = Path(__file__).resolve().parent


def test_schemathesis_finds_no_failure(store):
    cli = Path(sys.executable).parent / "schemathesis"
    r = subprocess.run([str(cli), "--config-file", str(HERE / "schemathesis.toml"), "run", "--checks", "all",
                        "--max-time", "15", "--workers", "2", "--seed", "20261126", "--warnings", "off",
                        f"{store.url}/openapi.json"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-2000:]
    assert "passed" in r.stdout
