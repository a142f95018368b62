"""Surface definitions: one named surface's family, parameter grid, records and placement
(:class:`SurfaceSpec`, parsed from a definition mapping by :func:`parse_surface`), and the sampling
of its grid points into the table's 14 fields (:func:`sample_points`). The TOML file format is
described in :mod:`preprocess.build`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from preprocess.errors import DefinitionError, DegenerateNormal
from preprocess.families import Family, make_family
from surfacestore.errors import InvalidTableName
from surfacestore.format import CODECS, DEFAULT_CODEC, DEGENERATE_TOL, NFIELDS, validate_table_name
from surfacestore.toml import toml_value

__all__ = ["Placement", "SurfaceSpec", "parse_surface", "sample_points", "spec_source"]

_GRID_KEYS = {"family", "grid", "record", "codec", "shard", "flip", "periodic_v", "u_range", "v_range", "u_range_deg",
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
            angle = _array(name, "placement.rotation_deg", d.get("rotation_deg", 0.0), ())  # (NaN failed at the header)
            R = _axis_angle(axis / np.linalg.norm(axis), math.radians(float(angle)))
        return cls(R, t)

    def to_dict(self) -> dict[str, Any]:
        return {"rotation_matrix": self.rotation.tolist(), "translation": self.translation.tolist()}


def _axis_angle(k: np.ndarray, a: float) -> np.ndarray:
    K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + math.sin(a) * K + (1 - math.cos(a)) * K @ K


def _array(name: str, key: str, value: Any, shape: tuple[int, ...]) -> np.ndarray:
    what = f"finite numbers of shape {shape}" if shape else "a finite number"
    try:
        a = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise DefinitionError(f"{name}: {key} must be {what}, got {value!r}") from None
    if a.shape != shape or not np.isfinite(a).all():
        raise DefinitionError(f"{name}: {key} must be {what}, got {value!r}")
    return a


def _holds_bool(value: Any) -> bool:
    """Whether ``value`` is, or nests in lists or tables, a boolean."""
    if isinstance(value, Mapping):
        return any(_holds_bool(x) for x in value.values())
    if isinstance(value, (list, tuple)):
        return any(_holds_bool(x) for x in value)
    return isinstance(value, bool)


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
    #: the surface closes in v over ``v_range`` (its period): the grid then stops one step short of
    #: ``v_range[1]``, which is ``v_range[0]`` again, and the table says so (``Header.periodic_v``)
    periodic_v: bool = False
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
        return (self.v_range[1] - self.v_range[0]) / (self.grid[1] if self.periodic_v else self.grid[1] - 1)


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
    for key in (*params, "u_range", "v_range", "u_range_deg", "v_range_deg", "placement"):
        if key in d and _holds_bool(d[key]):  # (TOML's true is Python's 1: it passed as a number)
            raise DefinitionError(f"{name}: {key} must hold numbers, not true or false, got {toml_value(d[key])}")
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
    fam.check_ranges(name, ranges[0], ranges[1])
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
    periodic_v = d.get("periodic_v", False)
    if not isinstance(periodic_v, bool):
        raise DefinitionError(f"{name}: periodic_v must be true or false, got {periodic_v!r}")
    if periodic_v:
        _check_periodic(name, fam, grid, record, ranges[0], ranges[1])
    return SurfaceSpec(name=name, family=fam, grid=grid, record=record, u_range=ranges[0],
                       v_range=ranges[1], placement=placement, flip=flip, codec=codec, shard=shard,
                       definition=dict(d), periodic_v=periodic_v)


def _check_periodic(name: str, fam: Family, grid: tuple[int, int], record: tuple[int, int],
                    u_range: tuple[float, float], v_range: tuple[float, float]) -> None:
    """A surface said periodic in v: whole records per period, and the surface (point and both
    partials) the same at both ends of ``v_range`` along the whole of u."""
    if grid[1] % record[1]:
        raise DefinitionError(f"{name}: periodic_v needs whole records in v: grid {grid[1]} is not a multiple of "
                              f"record {record[1]}")
    u = np.linspace(*u_range, 7)
    a, b = fam.evaluate(u, np.full_like(u, v_range[0])), fam.evaluate(u, np.full_like(u, v_range[1]))
    size = max(float(np.abs(a[0]).max()), float(np.abs(a[1]).max()), 1e-300)
    gap = max(float(np.abs(x - y).max()) for x, y in zip(a, b))
    if not gap <= 1e-9 * size:
        raise DefinitionError(f"{name}: periodic_v, but the surface does not close over v_range "
                              f"{list(v_range)}: at v = {v_range[1]:g} it is {gap:.3g} from itself at v = "
                              f"{v_range[0]:g} (point or partials; give the range of one period)")


def sample_points(spec: SurfaceSpec, i0: int, i1: int, j0: int, j1: int) -> np.ndarray:
    """The 14 fields of grid points ``[i0, i1) x [j0, j1)``: array ``(i1-i0, j1-j0, 14)``.

    Raises :class:`DegenerateNormal` naming the grid indices where ``tu x tv`` vanishes and the
    family has no analytic normal; where it has one (a sphere's poles), that normal is exact and is
    used without a word.
    """
    u = spec.u_range[0] + np.arange(i0, i1) * spec.du
    v = spec.v_range[0] + np.arange(j0, j1) * spec.dv
    s, tu, tv = spec.family.evaluate_grid(u, v)
    if not (np.isfinite(s).all() and np.isfinite(tu).all() and np.isfinite(tv).all()):
        raise DefinitionError(f"{spec.name}: the family gives non-finite values in rows {i0}..{i1 - 1}")
    R, t = spec.placement.rotation, spec.placement.translation
    placed = s @ R.T + t
    with np.errstate(over="ignore", invalid="ignore"):
        c = np.cross(tu, tv)
        lc = np.linalg.norm(c, axis=-1)
        scale = np.linalg.norm(tu, axis=-1).max() * np.linalg.norm(tv, axis=-1).max()
        measurable = np.isfinite(scale) and np.isfinite(np.einsum("...k,...k", placed, placed)).all()
    if not measurable:  # (their lengths overflow: the table's header, its distances, any contact)
        raise DefinitionError(f"{spec.name}: points or partial derivatives too large to measure in rows "
                              f"{i0}..{i1 - 1} (their squares overflow): lengths are in metres")
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
    out = np.empty((i1 - i0, j1 - j0, NFIELDS))
    out[..., 0] = u[:, None]
    out[..., 1] = v[None, :]
    out[..., 2:5] = placed
    out[..., 5:8] = (n @ R.T) * (-1.0 if spec.flip else 1.0)
    out[..., 8:11] = tu @ R.T
    out[..., 11:14] = tv @ R.T
    return out


def spec_source(spec: SurfaceSpec) -> dict[str, Any]:
    """The header's ``source`` entry for a definition (family, parameters, ranges, placement)."""
    extra = {"fit": spec.definition["fit_report"]} if "fit_report" in spec.definition else {}
    periodic = {"periodic_v": True} if spec.periodic_v else {}
    return {"family": spec.family.name, **extra,
            "parameters": {k: v for k, v in spec.definition.items() if k not in _GRID_KEYS},
            "u_range": list(spec.u_range), "v_range": list(spec.v_range),
            "placement": spec.placement.to_dict(), "flip": spec.flip, **periodic}
