from __future__ import annotations

from pathlib import Path

import pytest

from simclient.bench import StoreProcess, free_port  # noqa: F401  (re-exported for the tests)

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_surfaces"
SHARED_DATA = ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def sample_tables(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample tables of sample_surfaces/, built once per test session."""
    from simclient.scenarios import ensure_sample_tables

    out = tmp_path_factory.mktemp("tables")
    ensure_sample_tables(out)
    return out


@pytest.fixture(scope="session")
def store(sample_tables):
    """The store serving the sample tables for the whole test session."""
    s = StoreProcess(sample_tables)
    yield s
    s.stop()
