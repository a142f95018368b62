#!/usr/bin/env python3
"""Set up the project's environment and run its main jobs. Needs only python3 (>= 3.11).

    python3 dev.py demo           # set up, build the sample tables, serve them, simulate, print a summary
    python3 dev.py test [--fast]  # set up with the test tools and run the test suite (--fast: not the slow tests)
    python3 dev.py docs           # build the documentation site and serve it (--record: measure its results)
    python3 dev.py setup          # set up only (.venv with the project and its test tools, editable)

The virtual environment lives in .venv; it is (re)installed when pyproject.toml or constraints.txt
changes, with the versions constraints.txt pins (those the test suite last passed with). Where those
cannot be installed (another Python, another platform), or with ``--latest`` after the job's name,
it takes the newest versions pyproject.toml allows instead. The demo installs what running needs;
the other jobs add the test and documentation tools.
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


def setup(latest: bool = False, extras: str = "[test]", wait: bool = True) -> subprocess.Popen[bytes] | None:
    """Install what ``extras`` need where missing and build the project's bytecode and compiled
    kernels; with ``wait`` false the kernels build in the background (returned: a run that needs
    them before they are done waits for them), while the job goes on."""
    if sys.version_info < (3, 11):
        sys.exit(f"python >= 3.11 is required (this is {sys.version.split()[0]})")
    if not PY.exists():
        print("creating .venv ...", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    stamp = VENV / ".installed"
    pins = ROOT / "constraints.txt"
    want = hashlib.sha256((ROOT / "pyproject.toml").read_bytes() + (b"latest" if latest else pins.read_bytes()))
    done = stamp.read_text().split() if stamp.exists() else []
    # (an installation with the test tools serves the demo too)
    if not done or done[0] != want.hexdigest() or (extras and extras not in done[1:]):
        print("installing the project and its dependencies into .venv ...", flush=True)
        # what the compiled kernels need first: they compile (about a minute) while the rest installs
        first = [PY, "-m", "pip", "install", "--quiet", "numpy", "numba", "lazy-loader", "-c", pins]
        if not latest and subprocess.run(first).returncode == 0:
            subprocess.Popen([PY, "-c", "from simclient.geometry import kernels; kernels.build()"], cwd=ROOT,
                             env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        install = [PY, "-m", "pip", "install", "--quiet", "-e", f"{ROOT}{extras}"]
        if latest or subprocess.run([*install, "-c", pins]).returncode != 0:
            if not latest:
                print("the pinned versions of constraints.txt did not install here: taking the newest that "
                      "pyproject.toml allows", flush=True)
            subprocess.run([*install, "--upgrade"], check=True)
        stamp.write_text(" ".join([want.hexdigest(), extras or "[]"]))
    # the project's bytecode, written now (pip does so for what it installs, not for an editable
    # project; a process that cannot write it, PYTHONDONTWRITEBYTECODE, would compile every module
    # at every start), and the compiled kernels of this version of the sources, built now where
    # missing (a run would build them itself; here the first run does not wait)
    packages = ["surfacestore", "preprocess", "simclient", "sample_surfaces"]
    subprocess.run([PY, "-m", "compileall", "-q", *packages], check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    kernels = subprocess.Popen([PY, "-m", "simclient.cli", "kernels"], cwd=ROOT, stdout=subprocess.DEVNULL)
    if wait and kernels.wait() != 0:
        sys.exit("building the compiled kernels failed")
    return None if wait else kernels


def main() -> int:
    job = sys.argv[1] if len(sys.argv) > 1 else "demo"
    latest = "--latest" in sys.argv[2:]
    if latest:
        sys.argv.remove("--latest")
    if job not in ("demo", "test", "docs", "setup"):
        sys.exit(f"unknown job {job!r}: use demo, test, docs or setup")
    # the demo builds its tables while the kernels compile (both take most of a fresh demo's time)
    kernels = setup(latest, "" if job == "demo" else "[test]", wait=job != "demo")
    args = sys.argv[2:]
    if job == "test":
        fast = ["-m", "not slow"] if "--fast" in args else []
        return subprocess.run([PY, "-m", "pytest", *fast, *[a for a in args if a != "--fast"]], cwd=ROOT).returncode
    if job == "demo":
        status = subprocess.run([PY, "-m", "simclient.demo", *args], cwd=ROOT).returncode
        return status or (kernels.wait() if kernels is not None else 0)
    if job == "docs":
        if "--record" in args:
            return subprocess.run([PY, "-m", "docs.generate.record", *[a for a in args if a != "--record"]],
                                  cwd=ROOT).returncode
        return subprocess.run([PY, "-m", "mkdocs", "serve", "--dev-addr", "127.0.0.1:8001", *args], cwd=ROOT).returncode
    return 0


if __name__ == "__main__":
    sys.exit(main())
