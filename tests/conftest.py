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
