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

import math
import tomllib
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from preprocess.errors import DefinitionError, DegenerateNormal, PreprocessError
from preprocess.families import Family, make_family
from surfacestore.format import (
    CODECS,
    DEFAULT_CODEC,
    DEGENERATE_TOL,
    NFIELDS,
    SHARD_TARGET_BYTES,
    TABLE_SUFFIX,
    Table,
    create_table,
    validate_table_name,
)
from surfacestore.errors import InvalidTableName

__all__ = ["Placement", "SurfaceSpec", "load_spec", "parse_surface", "build_surface", "sample_points",
           "spec_source", "is_current"]

_GRID_KEYS = {"family", "grid", "record", "codec", "shard", "flip", "u_range", "v_range", "u_range_deg",
              "v_range_deg", "placement", "description", "fit_report"}


@dataclass(frozen=True)
class Placement:
    """Rigid transform from the family's local frame to the surface frame: ``x' = R x + t``
    (``t`` in metres)."""

    rotation: np.ndarray = field(default_factory=lambda: np.eye(3))
    translation: np.ndarray = field(default_factory=lambda: np.zeros(3))

    @classmethod
    def from_dict(cls, name: str, d: Mapping[str, Any]) -> Placement:
        unknown = set(d) - {"translation", "rotation_axis", "rotation_deg", "rotation_matrix"}
        if unknown:
            raise DefinitionError(f"{name}: unknown placement key(s) {sorted(unknown)}")
        t = _array(name, "placement.translation", d.get("translation", [0, 0, 0]), (3,))
        if "rotation_matrix" in d:
            R = _array(name, "placement.rotation_matrix", d["rotation_matrix"], (3, 3))
            if np.abs(R @ R.T - np.eye(3)).max() > 1e-9 or np.linalg.det(R) < 0:
                raise DefinitionError(f"{name}: placement.rotation_matrix is not a proper rotation")
        else:
            axis = _array(name, "placement.rotation_axis", d.get("rotation_axis", [0, 0, 1]), (3,))
            if np.linalg.norm(axis) == 0:
                raise DefinitionError(f"{name}: placement.rotation_axis is zero")
            R = _axis_angle(axis / np.linalg.norm(axis), math.radians(float(d.get("rotation_deg", 0.0))))
        return cls(R, t)

    def to_dict(self) -> dict[str, Any]:
        return {"rotation_matrix": self.rotation.tolist(), "translation": self.translation.tolist()}


def _axis_angle(k: np.ndarray, a: float) -> np.ndarray:
    K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + math.sin(a) * K + (1 - math.cos(a)) * K @ K


def _array(name: str, key: str, value: Any, shape: tuple[int, ...]) -> np.ndarray:
    try:
        a = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise DefinitionError(f"{name}: {key} must be numbers of shape {shape}, got {value!r}") from None
    if a.shape != shape or not np.isfinite(a).all():
        raise DefinitionError(f"{name}: {key} must be finite numbers of shape {shape}, got {value!r}")
    return a


def _pair(name: str, key: str, value: Any, *, integer: bool) -> tuple[Any, Any]:
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise DefinitionError(f"{name}: {key} must be a pair [a, b], got {value!r}")
    try:
        if integer:
            if not all(isinstance(x, int) and not isinstance(x, bool) for x in value):
                raise TypeError
            return int(value[0]), int(value[1])
        a, b = float(value[0]), float(value[1])
    except (TypeError, ValueError):
        raise DefinitionError(f"{name}: {key} must be two {'integers' if integer else 'numbers'}, "
                              f"got {value!r}") from None
    if not (math.isfinite(a) and math.isfinite(b) and a < b):
        raise DefinitionError(f"{name}: {key} must be finite and increasing, got {value!r}")
    return a, b


@dataclass(frozen=True)
class SurfaceSpec:
    """One named surface definition, validated."""

    name: str
    family: Family
    grid: tuple[int, int]
    record: tuple[int, int]
    u_range: tuple[float, float]
    v_range: tuple[float, float]
    placement: Placement = field(default_factory=Placement)
    flip: bool = False
    codec: str = DEFAULT_CODEC
    shard: int | str = "auto"
    definition: Mapping[str, Any] = field(default_factory=dict)
    #: extra per-point fields: name -> function of a span of sampled points (..., 14) -> (...)
    extras: Mapping[str, Callable[[np.ndarray], np.ndarray]] = field(default_factory=dict)

    @property
    def du(self) -> float:
        return (self.u_range[1] - self.u_range[0]) / (self.grid[0] - 1)

    @property
    def dv(self) -> float:
        return (self.v_range[1] - self.v_range[0]) / (self.grid[1] - 1)


def parse_surface(name: str, d: Mapping[str, Any], family: str | type[Family] | None = None) -> SurfaceSpec:
    """Validate one surface definition (the table under ``[surfaces.NAME]``)."""
    try:
        validate_table_name(name)
    except InvalidTableName as exc:
        raise DefinitionError(str(exc)) from None
    if not isinstance(d, Mapping):
        raise DefinitionError(f"{name}: a surface definition must be a table")
    fam_name = family if family is not None else d.get("family")
    if fam_name is None:
        raise DefinitionError(f"{name}: missing 'family'")
    params = {k: v for k, v in d.items() if k not in _GRID_KEYS}
    fam = make_family(fam_name, params) if not isinstance(fam_name, Family) else fam_name
    if "grid" not in d or "record" not in d:
        raise DefinitionError(f"{name}: 'grid' and 'record' ([points in u, points in v]) are required")
    grid = _pair(name, "grid", d["grid"], integer=True)
    record = _pair(name, "record", d["record"], integer=True)
    if min(grid) < 2:
        raise DefinitionError(f"{name}: grid {list(grid)} is smaller than 2 x 2")
    if min(record) < 1 or record[0] > grid[0] or record[1] > grid[1]:
        raise DefinitionError(f"{name}: record {list(record)} must be at least 1 x 1 and no larger than "
                              f"the grid {list(grid)}")
    dom = fam.domain()
    ranges = []
    for axis in ("u", "v"):
        if f"{axis}_range" in d and f"{axis}_range_deg" in d:
            raise DefinitionError(f"{name}: give {axis}_range or {axis}_range_deg, not both")
        if f"{axis}_range" in d:
            ranges.append(_pair(name, f"{axis}_range", d[f"{axis}_range"], integer=False))
        elif f"{axis}_range_deg" in d:
            a, b = _pair(name, f"{axis}_range_deg", d[f"{axis}_range_deg"], integer=False)
            ranges.append((math.radians(a), math.radians(b)))
        elif dom is not None:
            ranges.append(dom[0 if axis == "u" else 1])
        else:
            raise DefinitionError(f"{name}: family {fam.name!r} needs {axis}_range")
    codec = d.get("codec", DEFAULT_CODEC)
    if codec not in CODECS:
        raise DefinitionError(f"{name}: unknown codec {codec!r}; choose one of {', '.join(CODECS)}")
    shard = d.get("shard", "auto")
    if not (shard == "auto" or (isinstance(shard, int) and not isinstance(shard, bool) and shard >= 0)):
        raise DefinitionError(f"{name}: shard must be 'auto' or a non-negative integer, got {shard!r}")
    flip = d.get("flip", False)
    if not isinstance(flip, bool):
        raise DefinitionError(f"{name}: flip must be true or false, got {flip!r}")
    placement = Placement.from_dict(name, d.get("placement", {}))
    return SurfaceSpec(name=name, family=fam, grid=grid, record=record, u_range=ranges[0],
                       v_range=ranges[1], placement=placement, flip=flip, codec=codec, shard=shard,
                       definition=dict(d))


def load_spec(path: str | Path) -> list[SurfaceSpec]:
    """Read and validate every surface of a TOML definition file."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except OSError as exc:
        raise DefinitionError(f"{path}: cannot read ({exc.strerror})") from None
    except tomllib.TOMLDecodeError as exc:
        raise DefinitionError(f"{path}: malformed TOML: {exc}") from None
    surfaces = data.get("surfaces")
    if not isinstance(surfaces, dict) or not surfaces:
        raise DefinitionError(f"{path}: no [surfaces.NAME] tables found")
    specs = []
    for name, d in surfaces.items():
        try:
            if isinstance(d, Mapping) and d.get("family") == "fit":
                from preprocess.fit import fit_spec

                specs.append(fit_spec(name, d, base=path.parent)[0])
            else:
                specs.append(parse_surface(name, d))
        except PreprocessError as exc:
            raise type(exc)(f"{path}: {exc}") from None
    return specs


def sample_points(spec: SurfaceSpec, i0: int, i1: int, j0: int, j1: int) -> np.ndarray:
    """The 14 fields of grid points ``[i0, i1) x [j0, j1)``: array ``(i1-i0, j1-j0, 14)``.

    Raises :class:`DegenerateNormal` naming the grid indices where ``tu x tv`` vanishes and the
    family has no analytic normal; where it has one, it is used with a warning.
    """
    u = spec.u_range[0] + np.arange(i0, i1) * spec.du
    v = spec.v_range[0] + np.arange(j0, j1) * spec.dv
    s, tu, tv = spec.family.evaluate_grid(u, v)
    c = np.cross(tu, tv)
    lc = np.linalg.norm(c, axis=-1)
    scale = np.linalg.norm(tu, axis=-1).max() * np.linalg.norm(tv, axis=-1).max()
    bad = ~(lc > DEGENERATE_TOL * scale)
    with np.errstate(invalid="ignore", divide="ignore"):
        n = c / lc[..., None]
    if bad.any():
        ii, jj = np.nonzero(bad)
        where = ", ".join(f"({i0 + a}, {j0 + b})" for a, b in list(zip(ii, jj))[:5])
        more = f" and {len(ii) - 5} more" if len(ii) > 5 else ""
        fixed = spec.family.analytic_normal(u[ii], v[jj])
        if fixed is None:
            raise DegenerateNormal(f"{spec.name}: |tu x tv| ~ 0 at grid points (i, j) = {where}{more}; "
                                   "change the parametrization or the range so the grid avoids them")
        n[ii, jj] = fixed
        warnings.warn(f"{spec.name}: |tu x tv| ~ 0 at grid points (i, j) = {where}{more}; "
                      "using the family's analytic normal there", stacklevel=2)
    if not (np.isfinite(s).all() and np.isfinite(tu).all() and np.isfinite(tv).all()):
        raise DefinitionError(f"{spec.name}: the family gives non-finite values in rows {i0}..{i1 - 1}")
    R, t = spec.placement.rotation, spec.placement.translation
    out = np.empty((i1 - i0, j1 - j0, NFIELDS))
    out[..., 0] = u[:, None]
    out[..., 1] = v[None, :]
    out[..., 2:5] = s @ R.T + t
    out[..., 5:8] = (n @ R.T) * (-1.0 if spec.flip else 1.0)
    out[..., 8:11] = tu @ R.T
    out[..., 11:14] = tv @ R.T
    return out


def spec_source(spec: SurfaceSpec) -> dict[str, Any]:
    """The header's ``source`` entry for a definition (family, parameters, ranges, placement)."""
    extra = {"fit": spec.definition["fit_report"]} if "fit_report" in spec.definition else {}
    return {"family": spec.family.name, **extra,
            "parameters": {k: v for k, v in spec.definition.items() if k not in _GRID_KEYS},
            "u_range": list(spec.u_range), "v_range": list(spec.v_range),
            "placement": spec.placement.to_dict(), "flip": spec.flip}


def is_current(spec: SurfaceSpec, out_dir: str | Path) -> bool:
    """True if ``out_dir/NAME.zarr`` is a table built from this same definition."""
    import json

    from surfacestore.errors import SurfaceStoreError
    from surfacestore.format import open_table

    try:
        with open_table(Path(out_dir) / f"{spec.name}{TABLE_SUFFIX}") as t:
            h = t.header
    except SurfaceStoreError:
        return False
    return (h.source == json.loads(json.dumps(spec_source(spec)))
            and (h.u_npts, h.v_npts, h.u_pts, h.v_pts) == (*spec.grid, *spec.record) and h.codec == spec.codec)


def build_surface(spec: SurfaceSpec, out_dir: str | Path, *, overwrite: bool = False,
                  progress: Callable[[int], None] | None = None) -> Table:
    """Sample ``spec`` into the table ``out_dir/NAME.zarr`` and publish it atomically.

    ``progress(n)`` is called with the number of records written after each span. On any error or
    interruption nothing is published.
    """
    nu, nv = spec.grid
    up, vp = spec.record
    writer = create_table(Path(out_dir) / f"{spec.name}{TABLE_SUFFIX}", u_npts=nu, v_npts=nv, u_pts=up,
                          v_pts=vp, u0=spec.u_range[0], v0=spec.v_range[0], du=spec.du, dv=spec.dv,
                          source=spec_source(spec), codec=spec.codec, shard=spec.shard,
                          normal_sign=-1 if spec.flip else 1, extras=tuple(spec.extras), overwrite=overwrite)
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
