"""The documentation site builds without a warning (MkDocs' strict mode: every link and anchor
resolves), with a page for every command and scenario."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_site_builds_strictly_with_a_page_for_every_command_and_scenario(tmp_path):
    from simclient.scenarios import SCENARIOS

    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
                       cwd=ROOT, capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    for name in SCENARIOS:
        assert (tmp_path / "scenarios" / name / "index.html").exists(), name
    for page in ("simclient-run", "simclient-bench", "preprocess-build", "preprocess-fit", "surfacestore-serve"):
        assert (tmp_path / "reference" / "cli" / page / "index.html").exists(), page
    api = (tmp_path / "reference" / "http-api" / "index.html").read_text()
    assert "/v1/surfaces/{name}/window" in api and "/zarr/{name}/{key}" in api


def test_validation_pages_come_from_the_recorded_results():
    """Each validation page is built from ``docs/data`` (a record's measured values appear on it,
    and its provenance line), so none is typed by hand."""
    sys.path.insert(0, str(ROOT))
    from docs.generate import validation
    from docs.generate.data import load

    pages, _ = validation.pages()
    ball = load("validation", "bouncing-ball")
    assert ball is not None, "docs/data/validation/bouncing-ball.json is missing: python3 dev.py docs --record"
    page = pages["validation/thesis-chapter-6.md"]
    assert f"{ball['result']['impacts']}" in page and ball["commit"] in page
    assert f"{ball['result']['analytic']['max_indentation'] * 1e6:.4g}" in page
