"""Surface definitions (TOML) and streamed table builds.

A definition file holds one or more named surfaces::

    [surfaces.ball]
    family = "sphere"          # a name in preprocess.families.FAMILIES
    radius = 0.020             # family parameters (SI units) sit beside the grid options
    pole_axis = [1, 0, 0]
    grid = [999, 999]          # points in u and v
    record = [111, 111]        # points per record in u and v
    u_range_deg = [-90, 90]    # or u_range in the family's units; default: the family's domain
    codec = "none"             # none | zstd | blosc
    shard = "auto"             # records per shard along v, 0 = none, "auto"
    flip = false               # true: the outward side is -(tu x tv)

    [surfaces.insert]          # a surface fitted to a mesh or point cloud (see preprocess.fit)
    family = "fit"
    input = "insert.stl"       # relative to this file
    units = "m"
    param = "planar"           # planar | cylindrical | spherical | toroidal | auto
    crop = "z<0.0006"          # optional: fit only the data satisfying AXIS<VALUE / AXIS>VALUE (or a list)
    max_tilt_deg = 45          # optional: leave out mesh triangles tilted more than this (walls)
    back = "plane:y=0"         # optional: thickness to a plane or a second mesh/cloud
    grid = [201, 201]
    record = [9, 9]
    [surfaces.ball.placement]  # rigid transform applied to the family's local frame
    translation = [0, 0, 0]    # metres
    rotation_axis = [0, 0, 1]  # with rotation_deg, or rotation_matrix = [[...], [...], [...]]
    rotation_deg = 0

Builds are streamed record row by record row (in spans of about 16 MB), so peak memory does not
grow with the table.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from preprocess.errors import DefinitionError, PreprocessError
from preprocess.spec import Placement, SurfaceSpec, parse_surface, sample_points, spec_source
from surfacestore.errors import SurfaceStoreError
from surfacestore.format import SHARD_TARGET_BYTES, Table, create_table, open_table, shard_records, table_location

__all__ = ["Placement", "SurfaceSpec", "load_spec", "parse_surface", "build_surface", "sample_points",
           "spec_source", "is_current", "fit_to_table"]


def load_spec(path: str | Path) -> list[SurfaceSpec]:
    """Read and validate every surface of a TOML definition file."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise DefinitionError(f"{path}: cannot read ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise DefinitionError(f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason})") from None
    except tomllib.TOMLDecodeError as exc:
        raise DefinitionError(f"{path}: malformed TOML: {exc}") from None
    surfaces = data.get("surfaces")
    if not isinstance(surfaces, dict) or not surfaces:
        raise DefinitionError(f"{path}: no [surfaces.NAME] tables found")
    specs = []
    for name, d in surfaces.items():
        try:
            if isinstance(d, Mapping) and d.get("family") == "fit":
                from preprocess.fit import fit_spec  # (here: its libraries take 0.3 s to load)

                specs.append(fit_spec(name, d, base=path.parent)[0])
            else:
                specs.append(parse_surface(name, d))
        except PreprocessError as exc:
            raise type(exc)(f"{path}: {exc}") from None
    return specs


def is_current(spec: SurfaceSpec, out_dir: str | Path) -> bool:
    """True if ``out_dir/NAME.zarr`` is a table built from this same definition."""
    try:
        with open_table(table_location(out_dir, spec.name)) as t:
            h = t.header
    except SurfaceStoreError:
        return False
    return (h.source == json.loads(json.dumps(spec_source(spec)))
            and (h.u_npts, h.v_npts, h.u_pts, h.v_pts) == (*spec.grid, *spec.record) and h.codec == spec.codec
            and h.shard_records == shard_records(spec.shard, *spec.record, h.n_rec_u, h.n_rec_v))


def build_surface(spec: SurfaceSpec, out_dir: str | Path, *, overwrite: bool = False,
                  progress: Callable[[int], None] | None = None) -> Table:
    """Sample ``spec`` into the table ``out_dir/NAME.zarr`` (``out_dir`` a folder or an
    ``s3://BUCKET/PREFIX``) and publish it atomically.

    ``progress(n)`` is called with the number of records written after each span. On any error or
    interruption nothing is published.
    """
    nu, nv = spec.grid
    up, vp = spec.record
    writer = create_table(table_location(out_dir, spec.name), u_npts=nu, v_npts=nv, u_pts=up,
                          v_pts=vp, u0=spec.u_range[0], v0=spec.v_range[0], du=spec.du, dv=spec.dv,
                          source=spec_source(spec), codec=spec.codec, shard=spec.shard,
                          normal_sign=-1 if spec.flip else 1, extras=tuple(spec.extras), overwrite=overwrite,
                          periodic_v=spec.periodic_v)
    h = writer.header
    span = h.shard_records or max(1, SHARD_TARGET_BYTES // h.record_bytes)
    with writer:
        for ri in range(h.n_rec_u):
            for rj0 in range(0, h.n_rec_v, span):
                rj1 = min(rj0 + span, h.n_rec_v)
                i0, i1 = ri * up, min((ri + 1) * up, nu)
                pts = sample_points(spec, i0, i1, rj0 * vp, min(rj1 * vp, nv))
                writer.write_records(ri, rj0, rj1, pts, extras={k: f(pts) for k, f in spec.extras.items()})
                if progress is not None:
                    progress(rj1 - rj0)
        return writer.commit()


def _check_plot_path(path: Path, what: str) -> None:
    """:class:`PreprocessError` when a plot cannot be saved at ``path`` (a format matplotlib does not
    write, a folder that cannot be made); the folder is made."""
    from matplotlib.backend_bases import FigureCanvasBase

    formats = FigureCanvasBase.get_supported_filetypes()
    if path.suffix[1:].lower() not in formats:
        raise PreprocessError(f"{what} {path}: not a plot format; use one of {', '.join('.' + f for f in formats)}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PreprocessError(f"{what} {path}: cannot make its folder ({exc.strerror}: {exc.filename})") from None


def fit_to_table(input_path: str | Path, out: str | Path, *, overwrite: bool = False,
                 residual_map: str | Path | None = None, **options: Any) -> tuple[Any, dict[str, Any]]:
    """Fit ``input_path`` and build the table ``out`` (a ``NAME.zarr`` path); return (table, report).
    ``options``: the keys of a fit definition (see :func:`fit_spec`); ``None`` values are ignored."""
    out = os.fspath(out)  # a string: Path would fold the // of s3://
    leaf = os.path.basename(out.rstrip("/"))
    name = leaf[:-5] if leaf.endswith(".zarr") else leaf
    from preprocess.fit import fit_spec, save_residual_map  # (here: its libraries take 0.3 s to load)

    if residual_map is not None:
        _check_plot_path(Path(residual_map), "residual map")  # before the fit, not after it
    d = {"input": str(input_path), **{k: v for k, v in options.items() if v is not None}}
    spec, report, fit = fit_spec(name, d)
    table = build_surface(spec, os.path.dirname(out.rstrip("/")) or ".", overwrite=overwrite)
    if residual_map is not None:
        save_residual_map(fit, Path(residual_map))
    return table, report
