"""Each package's public API is its explicit __all__ (as in httpx's test_exported_members)."""

from __future__ import annotations

import importlib

import pytest


@pytest.mark.parametrize("package", ["surfacestore", "preprocess", "simclient"])
def test_exported_members(package):
    mod = importlib.import_module(package)
    public = {name for name in vars(mod) if not name.startswith("_")} - {"annotations"}
    submodules = {name for name in public if type(getattr(mod, name)).__name__ == "module"}
    assert set(mod.__all__) == public - submodules
    for name in mod.__all__:
        assert getattr(mod, name) is not None


def test_format_module_has_no_web_imports():
    import subprocess
    import sys

    code = ("import sys, surfacestore.format, simclient.geometry._window, simclient.contact._point; "
            "bad = [m for m in ('fastapi', 'uvicorn', 'starlette', 'surfacestore.app') if m in sys.modules]; "
            "print(bad); sys.exit(1 if bad else 0)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
