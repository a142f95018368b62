"""The sample tables: built from the sample definitions (package ``sample_surfaces``) on demand,
by the command lines and the demo (``simclient`` itself reads tables only)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import sample_surfaces
from preprocess.build import SurfaceSpec, build_surface, is_current, load_spec, parse_surface, sample_points
from preprocess.errors import PreprocessError
from surfacestore import objects
from surfacestore.errors import SurfaceStoreError
from surfacestore.format import table_location

#: what the benchmarks that build tables take as their ``builder`` (this module: the command line passes it)
__all__ = ["ensure_sample_tables", "ensure_table", "sample_spec", "build_surface", "parse_surface", "sample_points"]


def ensure_table(spec: SurfaceSpec, out: str | Path, quiet: bool = True, missing_only: bool = False) -> str:
    """Build the table of ``spec`` in ``out`` (a folder or an ``s3://BUCKET/PREFIX``) unless a
    table built from the same definition is there (with ``missing_only``: unless any table of that
    name is there); return its location (printing ``built LOCATION`` unless ``quiet``)."""
    path = table_location(out, spec.name)
    try:
        if not (objects.table_exists(path) if missing_only else is_current(spec, out)):
            build_surface(spec, out, overwrite=True)
            if not quiet:
                print(f"built {path}", flush=True)
    except (PreprocessError, SurfaceStoreError, OSError) as exc:
        raise PreprocessError(f"building the table {path}: {exc}") from exc
    return path


def ensure_sample_tables(out: str | Path, quiet: bool = True, names: Iterable[str] | None = None,
                         missing_only: bool = False) -> list[str]:
    """Build every sample table (or those ``names``) missing from ``out`` (a folder or an
    ``s3://BUCKET/PREFIX``) or built from another definition (with ``missing_only``: only the
    missing ones, so a table of the same name built from another definition is kept); return their
    locations. Prints ``built LOCATION`` per table unless ``quiet``."""
    wanted = None if names is None else set(names)
    try:
        specs = [spec for f in sample_surfaces.definitions() for spec in load_spec(f)]
    except PreprocessError as exc:
        raise PreprocessError(f"reading the sample definitions: {exc}") from exc
    return [ensure_table(spec, out, quiet, missing_only) for spec in specs if wanted is None or spec.name in wanted]


def sample_spec(file_name: str, name: str) -> SurfaceSpec:
    """The definition of sample surface ``name`` in the sample file ``file_name``."""
    for spec in load_spec(sample_surfaces.definition(file_name)):
        if spec.name == name:
            return spec
    raise PreprocessError(f"no surface {name!r} in the sample definitions {file_name}")
