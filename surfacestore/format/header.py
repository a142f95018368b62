"""The format's constants, the header (:class:`Header`, validated when read) and the record grid's
arithmetic (:class:`RecordBlock`, :func:`window_block`, table names)."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


from surfacestore.errors import (
    InvalidTableName,
    RecordOutOfRange,
    TableCorrupt,
)

FORMAT = "surfacetable/1"
FIELDS: tuple[str, ...] = (
    "u", "v", "x", "y", "z", "nx", "ny", "nz", "tux", "tuy", "tuz", "tvx", "tvy", "tvz",
)
NFIELDS = len(FIELDS)
TABLE_SUFFIX = ".zarr"

#: Codecs a table may use. Each record is serialised little-endian, optionally compressed, and
#: always followed by a CRC32C checksum. ``none`` is the default: see the README for the measurement
#: behind that choice (surface data compresses poorly and decompression costs read latency).
CODECS: tuple[str, ...] = ("none", "zstd", "blosc")
DEFAULT_CODEC = "none"

#: Tables with more records than this are sharded unless told otherwise.
SHARD_AUTO_RECORDS = 4096
#: Target size of one shard in bytes when sharding.
SHARD_TARGET_BYTES = 16 * 2**20

_UNWRITTEN = 2**64 - 1  # shard index entry of a record never written
#: |tu x tv| below this fraction of max|tu| * max|tv| (over a record or build span) is degenerate.
DEGENERATE_TOL = 1e-9
#: the largest record a table may declare (bytes of points, uncompressed): a header asking for more
#: is corrupt, not a reason to allocate it
MAX_RECORD_BYTES = 256 * 2**20
#: the most grid points a table may declare (10^12: 112 TB of points)
MAX_POINTS = 10**12
#: the largest stored record read (a compressed record may exceed its raw size a little) and the
#: largest zarr.json read
_MAX_STORED_RECORD = MAX_RECORD_BYTES + 2**20
_MAX_METADATA_BYTES = 16 * 2**20


# zarr and numcodecs are imported where needed: a reader (the simulation client) needs neither, and
# zarr alone adds about 10 MB to a process.


def _compressors(codec: str) -> list[Any]:
    from zarr.codecs import BloscCodec, Crc32cCodec, ZstdCodec

    if codec == "none":
        return [Crc32cCodec()]
    if codec == "zstd":
        return [ZstdCodec(level=3), Crc32cCodec()]
    if codec == "blosc":
        return [BloscCodec(cname="lz4", clevel=5, shuffle="shuffle", typesize=8), Crc32cCodec()]
    raise ValueError(f"unknown codec {codec!r}; choose one of {', '.join(CODECS)}")


def _compressor(codec: str) -> Any:
    """numcodecs equivalent of the zarr compressor of ``codec`` (None for ``none``)."""
    if codec == "none":
        return None
    import numcodecs

    if codec == "zstd":
        return numcodecs.Zstd(level=3)
    return numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE)


def _decompressor(codec: str) -> Any:
    if codec == "none":
        return None
    import numcodecs

    if codec == "zstd":
        return numcodecs.Zstd()
    if codec == "blosc":
        return numcodecs.Blosc()
    raise TableCorrupt(f"unknown codec {codec!r} in header")


@dataclass(frozen=True, slots=True)
class RecordBlock:
    """The records ``[ri0, ri1) x [rj0, rj1)`` of a table (half-open ranges)."""

    ri0: int
    ri1: int
    rj0: int
    rj1: int

    @property
    def n_records(self) -> int:
        return max(0, self.ri1 - self.ri0) * max(0, self.rj1 - self.rj0)

    def records(self) -> Iterator[tuple[int, int]]:
        for ri in range(self.ri0, self.ri1):
            for rj in range(self.rj0, self.rj1):
                yield ri, rj


@dataclass(frozen=True, slots=True)
class Header:
    """The table header (group attribute ``surface``; the thesis' header record).

    Grid: ``u_npts x v_npts`` points, ``u_pts x v_pts`` points per record, ``n_rec_u x n_rec_v``
    records, parameters ``u = u0 + i*du``, ``v = v0 + j*dv`` (units as defined by the family, e.g.
    metres for a plane, radians for a sphere). ``record_bytes`` is the size of one full record
    uncompressed (``u_pts*v_pts*14*8``, the thesis' l_record).

    Extensions to DESIGN's minimum: ``codec``, ``shard_records`` (records per shard along v, 0 when
    not sharded), ``normal_sign`` (+1 when n = tu x tv / |tu x tv|, -1 when the outward side was
    flipped), ``extras`` (names of extra per-point arrays), ``bbox`` (``[[xmin, ymin, zmin],
    [xmax, ymax, zmax]]`` of the points, metres, surface frame) and ``rmax`` (largest distance of a
    point from the surface frame's origin, metres): bounding volumes for broad-phase contact tests.
    ``periodic_v``: the surface closes on itself in v (a sphere's or a cylinder's longitude), the
    grid point ``j + v_npts`` being point ``j`` (the period is ``v_npts * dv``; point ``v_npts - 1`` is
    one step short of the seam, and ``v_npts`` is a whole number of records); readers may then
    address records and points past either end of v, modulo the grid.
    """

    u_npts: int
    v_npts: int
    u_pts: int
    v_pts: int
    u0: float
    v0: float
    du: float
    dv: float
    source: Mapping[str, Any] = field(default_factory=dict)
    digest: str = ""
    created: str = ""
    codec: str = DEFAULT_CODEC
    shard_records: int = 0
    normal_sign: int = 1
    extras: tuple[str, ...] = ()
    bbox: tuple[tuple[float, float, float], tuple[float, float, float]] | None = None
    rmax: float | None = None
    periodic_v: bool = False
    format: str = FORMAT
    fields: tuple[str, ...] = FIELDS

    @property
    def n_rec_u(self) -> int:
        return -(-self.u_npts // self.u_pts)

    @property
    def n_rec_v(self) -> int:
        return -(-self.v_npts // self.v_pts)

    @property
    def record_bytes(self) -> int:
        return self.u_pts * self.v_pts * NFIELDS * 8

    @property
    def u1(self) -> float:
        """Upper parameter bound in u."""
        return self.u0 + (self.u_npts - 1) * self.du

    @property
    def v1(self) -> float:
        """Upper parameter bound in v."""
        return self.v0 + (self.v_npts - 1) * self.dv

    def record_extent(self, ri: int, rj: int) -> tuple[int, int]:
        """Number of points ``(nu, nv)`` in record ``(ri, rj)`` (short at the last row/column)."""
        return (min(self.u_pts, self.u_npts - ri * self.u_pts),
                min(self.v_pts, self.v_npts - rj * self.v_pts))

    def block_points(self, block: RecordBlock) -> tuple[int, int, int, int]:
        """Point index ranges ``(i0, i1, j0, j1)`` covered by a block of records (past either end
        of v for a periodic table's block that is, unwrapped)."""
        return (block.ri0 * self.u_pts, min(block.ri1 * self.u_pts, self.u_npts),
                block.rj0 * self.v_pts, block.rj1 * self.v_pts if self.periodic_v else min(block.rj1 * self.v_pts, self.v_npts))

    def check_block(self, block: RecordBlock) -> None:
        """Raise :class:`RecordOutOfRange` unless ``block`` is a non-empty block inside the grid."""
        if not (0 <= block.ri0 < block.ri1 <= self.n_rec_u and 0 <= block.rj0 < block.rj1 <= self.n_rec_v):
            raise RecordOutOfRange(
                f"records [{block.ri0}, {block.ri1}) x [{block.rj0}, {block.rj1}) are not a non-empty "
                f"block inside the record grid {self.n_rec_u} x {self.n_rec_v}")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["fields"] = list(self.fields)
        d["extras"] = list(self.extras)
        d["source"] = dict(self.source)
        d["bbox"] = None if self.bbox is None else [list(self.bbox[0]), list(self.bbox[1])]
        d.update(n_rec_u=self.n_rec_u, n_rec_v=self.n_rec_v, record_bytes=self.record_bytes)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Header:
        """The header of a table's ``surface`` attribute, validated (:meth:`validate`);
        :class:`TableCorrupt` naming the key for anything malformed."""
        try:
            if d["format"] != FORMAT:
                raise TableCorrupt(f"unsupported table format {d['format']!r} (expected {FORMAT!r})")
            h = cls(
                u_npts=_whole(d, "u_npts"), v_npts=_whole(d, "v_npts"), u_pts=_whole(d, "u_pts"),
                v_pts=_whole(d, "v_pts"), u0=float(d["u0"]), v0=float(d["v0"]), du=float(d["du"]),
                dv=float(d["dv"]), source=dict(d.get("source", {})), digest=str(d["digest"]),
                created=str(d.get("created", "")), codec=str(d.get("codec", DEFAULT_CODEC)),
                shard_records=_whole(d, "shard_records", 0), normal_sign=_whole(d, "normal_sign", 1),
                extras=tuple(str(x) for x in d.get("extras", ())), fields=tuple(d["fields"]),
                bbox=None if d.get("bbox") is None else (_vector3(d["bbox"][0]), _vector3(d["bbox"][1])),
                rmax=None if d.get("rmax") is None else float(d["rmax"]),
                periodic_v=_flag(d, "periodic_v"),
            )
        except (KeyError, TypeError, ValueError, IndexError, OverflowError) as exc:
            raise TableCorrupt(f"invalid table header: {exc!r}") from exc
        h.validate()
        # strings that pages and clients show: a digest of its form, a printable, bounded date
        if not _DIGEST.fullmatch(h.digest):
            raise TableCorrupt(f"invalid table header: digest {h.digest[:80]!r} is not 'sha256:' and 64 hex digits")
        if len(h.created) > 64 or not h.created.isprintable():
            raise TableCorrupt(f"invalid table header: created {h.created[:80]!r} is not a printable date")
        for key in ("n_rec_u", "n_rec_v", "record_bytes"):
            if key in d and d[key] != getattr(h, key):
                raise TableCorrupt(f"header {key} = {d[key]!r} disagrees with the grid ({getattr(h, key)})")
        return h

    def validate(self) -> None:
        """Raise :class:`TableCorrupt` naming the first value out of range: grid sizes (at least 1,
        records no larger than the grid, at most :data:`MAX_RECORD_BYTES` per record and
        :data:`MAX_POINTS` in all), a finite positive spacing, finite origins, shard size, codec,
        normal sign, extra fields' names and the bounding volumes."""
        problems = []
        for key, n, per in (("u", self.u_npts, self.u_pts), ("v", self.v_npts, self.v_pts)):
            if n < 1:
                problems.append(f"{key}_npts = {n} must be at least 1")
            elif not 1 <= per <= n:
                problems.append(f"{key}_pts = {per} must be in [1, {key}_npts = {n}]")
        for key in ("du", "dv"):
            value = getattr(self, key)
            if not (math.isfinite(value) and value > 0):
                problems.append(f"{key} = {value} must be finite and positive")
        for key in ("u0", "v0"):
            if not math.isfinite(getattr(self, key)):
                problems.append(f"{key} = {getattr(self, key)} must be finite")
        if not problems:
            if self.u_npts * self.v_npts > MAX_POINTS:
                problems.append(f"{self.u_npts} x {self.v_npts} points exceed {MAX_POINTS}")
            if self.record_bytes > MAX_RECORD_BYTES:
                problems.append(f"records of {self.u_pts} x {self.v_pts} points ({self.record_bytes} bytes) exceed "
                                f"{MAX_RECORD_BYTES} bytes")
            if not 0 <= self.shard_records <= self.n_rec_v:
                problems.append(f"shard_records = {self.shard_records} must be in [0, {self.n_rec_v}]")
            if self.periodic_v and self.v_npts % self.v_pts:
                problems.append(f"a table periodic in v needs whole records in v: v_npts = {self.v_npts} is not a "
                                f"multiple of v_pts = {self.v_pts}")
        if self.codec not in CODECS:
            problems.append(f"codec {self.codec!r} is not one of {list(CODECS)}")
        if self.normal_sign not in (1, -1):
            problems.append(f"normal_sign = {self.normal_sign} must be 1 or -1")
        if self.fields != FIELDS:
            problems.append(f"fields {list(self.fields)} differ from {list(FIELDS)}")
        bad = [x for x in self.extras if x == "points" or not _FIELD_NAME.fullmatch(x)]
        if bad or len(set(self.extras)) != len(self.extras):
            problems.append(f"extras {list(self.extras)}: names must be unique, of letters, digits, '-', '_', '.'")
        if self.bbox is not None and not all(map(math.isfinite, (*self.bbox[0], *self.bbox[1]))):
            problems.append(f"bbox {self.bbox} must be two finite 3-vectors")
        if self.rmax is not None and not (math.isfinite(self.rmax) and self.rmax >= 0):
            problems.append(f"rmax = {self.rmax} must be finite and non-negative")
        if problems:
            raise TableCorrupt("invalid table header: " + "; ".join(problems))


_FIELD_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


def _vector3(value: Any) -> tuple[float, float, float]:
    x, y, z = (float(c) for c in value)  # ValueError unless exactly three numbers
    return x, y, z


def _flag(d: Mapping[str, Any], key: str) -> bool:
    """A true/false header value (false when absent)."""
    value = d.get(key, False)
    if not isinstance(value, bool):
        raise TableCorrupt(f"invalid table header: {key} = {value!r} is not true or false")
    return value


def _whole(d: Mapping[str, Any], key: str, default: int | None = None) -> int:
    """An integer header value: an int (not a bool) or an integral float."""
    value = d[key] if default is None else d.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
        raise TableCorrupt(f"invalid table header: {key} = {value!r} is not an integer")
    return int(value)


def window_block(header: Header, ri: int, rj: int, wu: int, wv: int, wrap: bool | None = None) -> RecordBlock:
    """The ``wu x wv`` block of records centred on record ``(ri, rj)``, shifted inward at the
    table's borders (and clamped to the record grid when larger than it). With ``wrap`` (default:
    the table is periodic in v) there are no borders in v: ``rj`` may be any record past either
    end, and so may the block's (records modulo the grid; a store serves only blocks inside it)."""
    wrap = header.periodic_v if wrap is None else wrap and header.periodic_v
    header.check_block(RecordBlock(ri, ri + 1, *((rj, rj + 1) if not wrap else (0, 1))))
    if wu < 1 or wv < 1:
        raise ValueError(f"window extent {wu} x {wv} must be at least 1 x 1")
    wu, wv = min(wu, header.n_rec_u), min(wv, header.n_rec_v)
    ri0 = min(max(ri - wu // 2, 0), header.n_rec_u - wu)
    rj0 = rj - wv // 2 if wrap else min(max(rj - wv // 2, 0), header.n_rec_v - wv)
    return RecordBlock(ri0, ri0 + wu, rj0, rj0 + wv)


def table_name(path: str | os.PathLike[str]) -> str:
    """The name of the table stored at ``path`` (its folder name without ``.zarr``)."""
    name = Path(path).name
    return name[: -len(TABLE_SUFFIX)] if name.endswith(TABLE_SUFFIX) else name


def table_location(root: str | os.PathLike[str], name: str) -> str:
    """Where table ``name`` lives under ``root`` (a folder or an ``s3://`` prefix)."""
    root = os.fspath(root)
    return f"{root.rstrip('/')}/{name}{TABLE_SUFFIX}" if root.startswith("s3://") else \
        os.path.join(root, f"{name}{TABLE_SUFFIX}")


def validate_table_name(name: str) -> str:
    """Return ``name`` if it is a safe table name (letters, digits, ``-_.``; not hidden)."""
    ok = (0 < len(name) <= 128 and not name.startswith(".")
          and all(c.isascii() and (c.isalnum() or c in "-_.") for c in name))
    if not ok:
        raise InvalidTableName(f"invalid table name {name!r}: use letters, digits, '-', '_', '.', "
                               "not starting with '.'")
    return name
