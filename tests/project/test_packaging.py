"""An installed (not editable) copy finds its sample definitions and builds the sample tables from
any working directory: nothing depends on the source tree's layout."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_installed_copy_finds_its_sample_definitions(tmp_path):
    # install from a copy of the tracked files, so the build leaves nothing in the working tree
    source = tmp_path / "source"
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    for f in files:
        (source / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / f, source / f)
    target = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                        "--target", str(target), str(source)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    work = tmp_path / "elsewhere"
    work.mkdir()
    code = ("import sample_surfaces, preprocess.samples as s\n"
            f"assert sample_surfaces.__file__.startswith({str(target)!r}), sample_surfaces.__file__\n"
            "names = [p.name for p in sample_surfaces.definitions()]\n"
            "assert 'bouncing_ball.toml' in names and 'knee3d.toml' in names, names\n"
            "paths = s.ensure_sample_tables('tables', names=['condyle_medial', 'ground'])\n"
            "print(sorted(p.rsplit('/', 1)[-1] for p in paths))\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=work, capture_output=True, text=True,
                       env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["['condyle_medial.zarr',", "'ground.zarr']"]
    assert (work / "tables" / "ground.zarr" / "zarr.json").is_file()
