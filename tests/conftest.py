from __future__ import annotations

import math
import subprocess
import sys
import warnings
from collections.abc import Iterable
from pathlib import Path

import pytest
from scipy.optimize import brentq

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


def paraboloid_strain_ratios(eps0: float) -> tuple[float, float]:
    """Large / small strain at equal force on an elastic foundation pressed by a paraboloidal gap
    (radii R1, R2), closed form: the force is 2 pi sqrt(R1 R2) h M int_0^e f(s) ds for the peak
    strain e (f(s) = s small, -ln(1 - s) large), the area 2 pi sqrt(R1 R2) h e, the peak pressure
    M f(e). Returns the peak pressure's and the area's ratios for the small-strain peak strain
    ``eps0``."""
    e = brentq(lambda e: 2 * ((1 - e) * math.log(1 - e) + e) - eps0**2, 1e-9, 0.999)
    return -math.log(1 - e) / eps0, e / eps0
