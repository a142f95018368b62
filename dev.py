#!/usr/bin/env python3
"""Set up the project's environment and run its main jobs. Needs only python3 (>= 3.11).

    python3 dev.py demo    # set up, build the sample tables, serve them, simulate, print a summary
    python3 dev.py test    # set up and run the test suite
    python3 dev.py setup   # set up only (.venv with the project installed in editable mode)

The virtual environment lives in .venv; it is (re)installed when pyproject.toml or constraints.txt
changes, with the versions constraints.txt pins (those the test suite last passed with). Where those
cannot be installed (another Python, another platform), or with ``--latest`` after the job's name,
it takes the newest versions pyproject.toml allows instead.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
PY = VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def setup(latest: bool = False) -> None:
    if sys.version_info < (3, 11):
        sys.exit(f"python >= 3.11 is required (this is {sys.version.split()[0]})")
    if not PY.exists():
        print("creating .venv ...", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    stamp = VENV / ".installed"
    pins = ROOT / "constraints.txt"
    want = hashlib.sha256((ROOT / "pyproject.toml").read_bytes() + (b"latest" if latest else pins.read_bytes()))
    if not stamp.exists() or stamp.read_text() != want.hexdigest():
        print("installing the project and its dependencies into .venv ...", flush=True)
        subprocess.run([PY, "-m", "pip", "install", "--quiet", "--upgrade", "pip"], check=True)
        install = [PY, "-m", "pip", "install", "--quiet", "-e", f"{ROOT}[test]"]
        if latest or subprocess.run([*install, "-c", pins]).returncode != 0:
            if not latest:
                print("the pinned versions of constraints.txt did not install here: taking the newest that "
                      "pyproject.toml allows", flush=True)
            subprocess.run([*install, "--upgrade"], check=True)
        stamp.write_text(want.hexdigest())
    # the compiled kernels of this version of the sources, built now where missing (a run would build
    # them itself; here the first run does not wait): their module is named by a hash of its sources
    subprocess.run([PY, "-m", "simclient.cli", "kernels"], check=True, cwd=ROOT, stdout=subprocess.DEVNULL)


def main() -> int:
    job = sys.argv[1] if len(sys.argv) > 1 else "demo"
    latest = "--latest" in sys.argv[2:]
    if latest:
        sys.argv.remove("--latest")
    setup(latest)
    if job == "setup":
        return 0
    if job == "test":
        return subprocess.run([PY, "-m", "pytest", *sys.argv[2:]], cwd=ROOT).returncode
    if job == "demo":
        return subprocess.run([PY, "-m", "simclient.demo", *sys.argv[2:]], cwd=ROOT).returncode
    sys.exit(f"unknown job {job!r}: use demo, test or setup")


if __name__ == "__main__":
    sys.exit(main())
