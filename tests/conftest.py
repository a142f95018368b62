from __future__ import annotations

import math
import subprocess
import sys
import warnings
from collections.abc import Iterable
from pathlib import Path

import pytest
from scipy.integrate import quad
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


def power_gap_strain_ratios(eps0: float, n: float = 2.0) -> tuple[float, float]:
    """Large / small strain at equal force on an elastic foundation (layer h, aggregate modulus M)
    pressed by a gap growing as c r^n (n = 2: a paraboloid), closed form: with the peak strain e,
    the interpenetration is h (e - s) at the radius where the strain is s, so the area is
    pi (h e / c)^(2/n) and the force pi M (h / c)^(2/n) (2/n) int_0^e f(s) (e - s)^(2/n - 1) ds
    (f(s) = s small, -ln(1 - s) large); the peak pressure is M f(e). Returns the peak pressure's
    and the area's ratios for the small-strain peak strain ``eps0``."""
    w = ("alg", (0.0, 2 / n - 1))  # quad's weight (s - 0)^0 (e - s)^(2/n - 1)
    small = quad(lambda s: s, 0, eps0, weight=w[0], wvar=w[1])[0]
    e = brentq(lambda e: quad(lambda s: -math.log(1 - s), 0, e, weight=w[0], wvar=w[1])[0] - small, 1e-9,
               min(0.999, 1.5 * eps0))
    return -math.log(1 - e) / eps0, (e / eps0) ** (2 / n)
