from __future__ import annotations

import subprocess
import sys
import warnings
from collections.abc import Iterable
from pathlib import Path

import pytest

from simclient.bench import StoreProcess, free_port  # noqa: F401  (re-exported for the tests)

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_surfaces"
SHARED_DATA = ROOT.parent / "shared" / "data"


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``simclient ARGS`` in a child process (output captured as text)."""
    return subprocess.run([sys.executable, "-m", "simclient.cli", *args], capture_output=True, text=True)


def build_definition(definition: Path, out: Path, skip: Iterable[str] = ()) -> Path:
    """Build the tables of a TOML definition (e.g. a fit of ../shared/data) into ``out``, but those
    named in ``skip``; returns ``out``."""
    from preprocess.build import build_surface, load_spec

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # analytic normals and fit reports, expected
        for spec in load_spec(definition):
            if spec.name not in skip:
                build_surface(spec, out)
    return out


@pytest.fixture(scope="session")
def sample_tables(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample tables of sample_surfaces/, built once per test session."""
    from preprocess.samples import ensure_sample_tables

    out = tmp_path_factory.mktemp("tables")
    ensure_sample_tables(out)
    return out


@pytest.fixture(scope="session")
def store(sample_tables):
    """The store serving the sample tables for the whole test session."""
    s = StoreProcess(sample_tables)
    yield s
    s.stop()
