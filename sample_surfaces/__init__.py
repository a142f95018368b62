"""The sample surface definitions (TOML), shipped with the project as package data so that an
installed copy finds them: :func:`definitions` lists them, :func:`definition` gives one by file name.
``real/`` holds definitions that fit data outside the project (not shipped as defaults)."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterable
from pathlib import Path

__all__ = ["FOLDER", "definitions", "definition", "real_definition", "missing_real_tables"]

#: the folder holding the sample definitions
FOLDER = Path(__file__).resolve().parent


def definitions() -> list[Path]:
    """The sample definition files (``*.toml`` of this folder, sorted)."""
    return sorted(FOLDER.glob("*.toml"))


def definition(file_name: str) -> Path:
    """One sample definition file by name, e.g. ``bouncing_ball.toml``."""
    path = FOLDER / file_name
    if not path.is_file():
        raise FileNotFoundError(f"no sample definition {file_name!r} in {FOLDER}")
    return path


def real_definition(table: str) -> Path | None:
    """The definition under ``real/`` that builds the table named ``table`` from data outside the
    project, or None."""
    for path in sorted((FOLDER / "real").glob("*.toml")):
        with path.open("rb") as f:
            if table in tomllib.load(f).get("surfaces", {}):
                return path
    return None


def missing_real_tables(root: str | os.PathLike[str], names: Iterable[str]) -> dict[str, Path]:
    """Those of the tables ``names`` missing from ``root`` (a folder or an ``s3://`` prefix) that are
    fitted from data outside the project (never built on demand), with the definition under
    ``real/`` that builds each."""
    from surfacestore.format import table_location
    from surfacestore.objects import table_exists

    missing = {}
    for name in names:
        definition = real_definition(name)
        if definition is not None and not table_exists(table_location(root, name)):
            missing[name] = definition
    return missing
