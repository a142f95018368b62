"""Surface table format, version 1: a Zarr v3 group of records.

A table samples a parametric surface ``s(u, v)`` on the uniform grid ``u_i = u0 + i*du``,
``v_j = v0 + j*dv`` (``i < u_npts``, ``j < v_npts``) and stores 14 float64 values per point in the
array ``points`` of shape ``(u_npts, v_npts, 14)``, field order :data:`FIELDS`:

``u, v, x, y, z, nx, ny, nz, tux, tuy, tuz, tvx, tvy, tvz``

Positions are in metres in the surface frame, ``tu = ds/du`` and ``tv = ds/dv`` are the raw partial
derivatives (metres per unit of parameter), ``n`` is the unit normal ``normal_sign * tu x tv / |tu x tv|``.

The chunks of ``points`` are the *records*: record ``(ri, rj)`` holds the points
``[ri*u_pts, (ri+1)*u_pts) x [rj*v_pts, (rj+1)*v_pts)``; the last row/column of records may be short.
Every record carries a CRC32C checksum (the Zarr ``crc32c`` codec), so a damaged record is found when it
is read. Large tables group one record row's consecutive records into Zarr shards (shard shape
``(u_pts, k*v_pts, 14)``), which keeps the file count small while each record stays readable alone.

Optional extra per-point fields (thickness, distance to data, ...) are arrays of shape
``(u_npts, v_npts)`` with the same record grid, listed in the header under ``extras``.

The header is the group attribute ``surface`` (:class:`Header`). Its ``digest`` is
``sha256:`` + the SHA-256 of the points' little-endian bytes taken record by record in record order
(row-major over ``(ri, rj)``, each record's points in C order), followed by the same for each extra
array in the order of ``extras``; it serves as the table's version and HTTP ETag.

Tables are published atomically: written under a hidden temporary name in the destination folder
and renamed when complete.

This module imports nothing from the web side of the package.
"""

from __future__ import annotations

import errno
import hashlib
import json
import math
import os
import queue
import re
import shutil
import stat
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import google_crc32c
import numpy as np

from surfacestore.errors import (
    InsufficientSpace,
    InvalidTableName,
    RecordCorrupt,
    RecordOutOfRange,
    TableCorrupt,
    TableExists,
    StorageUnavailable,
    TableNotFound,
    UnknownField,
)

__all__ = [
    "FORMAT",
    "FIELDS",
    "NFIELDS",
    "CODECS",
    "DEFAULT_CODEC",
    "TABLE_SUFFIX",
    "Header",
    "RecordBlock",
    "Table",
    "TableWriter",
    "VerifyReport",
    "create_table",
    "open_table",
    "verify_table",
    "check_points",
    "DEGENERATE_TOL",
    "table_name",
    "table_location",
    "window_block",
    "validate_table_name",
]

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


class _Digest:
    """SHA-256 over the records of each array, in record order; combined into one digest."""

    def __init__(self, arrays: Sequence[str]) -> None:
        self._h = {a: hashlib.sha256() for a in arrays}

    def update(self, array: str, record: np.ndarray) -> None:
        self._h[array].update(np.ascontiguousarray(record, dtype="<f8").data)

    def hexdigest(self) -> str:
        top = hashlib.sha256()
        for h in self._h.values():
            top.update(h.digest())
        return "sha256:" + top.hexdigest()


class FolderFiles:
    """The files of one table folder, read through a descriptor of the folder.

    If the table is replaced under the same name (atomic rename), reads keep going to the version
    that was opened, or fail (``FileNotFoundError``) once that version is deleted: they never mix
    versions. Files are opened non-blocking, so a FIFO planted in a table cannot hang a reader;
    anything but a regular file (a folder, a FIFO, a device) is refused with ``OSError``.
    """

    remote = False

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self._dirfd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        except (FileNotFoundError, NotADirectoryError):
            raise TableNotFound(f"no surface table at {path}") from None

    def _open(self, rel: str) -> tuple[int, int]:
        """A descriptor of the regular file ``rel`` and its size (one ``fstat`` for both)."""
        fd = os.open(rel, os.O_RDONLY | os.O_NONBLOCK, dir_fd=self._dirfd)
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            raise OSError(f"{rel} is not a regular file")
        return fd, st.st_size

    def read(self, rel: str, limit: int) -> bytes:
        """The file ``rel``, at most ``limit + 1`` bytes (one more reveals a file too long)."""
        fd, size = self._open(rel)
        try:
            return os.read(fd, min(size, limit) + 1)
        finally:
            os.close(fd)

    def read_range(self, rel: str, offset: int, nbytes: int) -> bytes:
        fd, _ = self._open(rel)
        try:
            return os.pread(fd, nbytes, offset)
        finally:
            os.close(fd)

    def size(self, rel: str) -> int:
        fd, size = self._open(rel)
        os.close(fd)
        return size

    def version(self, rel: str) -> Any:
        """A tag that changes when ``rel`` under the table's *name* is replaced (inode, mtime)."""
        st = os.stat(self.path / rel)
        return st.st_ino, st.st_mtime_ns

    def close(self, _close: Callable[[int], None] = os.close) -> None:
        # (os.close bound at definition: a table collected at interpreter exit outlives the os module's globals)
        fd, self._dirfd = getattr(self, "_dirfd", -1), -1
        if fd >= 0:
            _close(fd)


class Table:
    """A table opened for reading. Thread-safe for concurrent reads.

    ``location`` is a ``NAME.zarr`` folder or an ``s3://BUCKET/PREFIX/NAME.zarr`` prefix (see
    :mod:`surfacestore.objects`). Records are read by direct access (one small read per record, the
    checksum verified, decompressed when the codec compresses); :meth:`zarr_group` gives the same
    data through zarr-python, which is the reference implementation of the format.
    """

    def __init__(self, location: str | os.PathLike[str]) -> None:
        from surfacestore import objects

        self.location = os.fspath(location)
        self.remote = objects.is_object_url(self.location)
        self._files: Any = objects.ObjectFiles(self.location) if self.remote else FolderFiles(Path(self.location))
        try:
            # the version of the group metadata, taken before reading it: a rebuild in between
            # shows as a changed version (is_current), never as a new version taken for the old
            self._version = self._files.version("zarr.json")
            meta = self._files.read("zarr.json", _MAX_METADATA_BYTES)
            if len(meta) > _MAX_METADATA_BYTES:
                raise ValueError(f"zarr.json is larger than {_MAX_METADATA_BYTES} bytes")
            attrs = json.loads(meta)["attributes"]["surface"]
        except FileNotFoundError:
            self.close()
            raise TableNotFound(f"no surface table at {self.location}") from None
        except StorageUnavailable:
            self.close()
            raise
        except (OSError, ValueError, KeyError, TypeError) as exc:
            self.close()
            raise TableCorrupt(f"{self.location}: unreadable header ({exc!r})") from exc
        try:
            self.header = Header.from_dict(attrs)
        except TableCorrupt as exc:
            self.close()
            raise TableCorrupt(f"{self.location}: {exc}") from None
        except BaseException:
            self.close()
            raise
        self.name = table_name(self.location)
        # stored size of an uncompressed record of points (record + CRC32C); 0 when compressed
        self._stored_size = self.header.record_bytes + 4 if self.header.codec == "none" else 0
        self._decompressor = _decompressor(self.header.codec)
        self._shard_index: dict[tuple[str, int, int], np.ndarray] = {}
        self._lock = threading.Lock()

    @property
    def path(self) -> Path:
        """The table's folder (a table on a local disk; see ``location`` for any table)."""
        if self.remote:
            raise AttributeError(f"{self.location} is on object storage: it has a location, not a path")
        return Path(self.location)

    def is_current(self) -> bool:
        """True while the table under this location is still the version this object opened (one
        ``stat``, or one HEAD request on object storage)."""
        try:
            return bool(self._files.version("zarr.json") == self._version)
        except FileNotFoundError:
            return False

    def key_size(self, key: str) -> int:
        """Size in bytes of the raw Zarr key ``key`` (validated by the caller)."""
        return int(self._files.size(key))

    def read_key(self, key: str, offset: int, nbytes: int) -> bytes:
        """Bytes ``[offset, offset + nbytes)`` of the raw Zarr key ``key``."""
        return bytes(self._files.read_range(key, offset, nbytes))

    def close(self) -> None:
        """Release the folder descriptor (also done when the object is garbage-collected)."""
        files = getattr(self, "_files", None)
        if files is not None:
            files.close()

    def __del__(self) -> None:
        self.close()

    def __enter__(self) -> Table:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        h = self.header
        return f"Table({self.name!r}, {h.u_npts}x{h.v_npts} points, {h.n_rec_u}x{h.n_rec_v} records)"

    # -- raw records ------------------------------------------------------------------------------

    def record_nbytes(self, array: str = "points") -> int:
        h = self.header
        return h.u_pts * h.v_pts * (NFIELDS if array == "points" else 1) * 8

    def _read_encoded(self, array: str, ri: int, rj: int) -> bytes:
        """The stored bytes of one record (codec output followed by its CRC32C)."""
        k = self.header.shard_records
        leaf = "/0" if array == "points" else ""
        try:
            if not k:
                limit = self._stored_size if array == "points" and self._stored_size else _MAX_STORED_RECORD
                return bytes(self._files.read(f"{array}/c/{ri}/{rj}{leaf}", limit))
            sj, jj = divmod(rj, k)
            shard = f"{array}/c/{ri}/{sj}{leaf}"
            index = self._read_shard_index(array, ri, sj, shard)
            offset, nbytes = (int(x) for x in index[jj])
            if offset == _UNWRITTEN:
                raise RecordCorrupt(f"{self.name}: {array} record ({ri}, {rj}) was never written", [(ri, rj)])
            if nbytes > _MAX_STORED_RECORD:
                raise RecordCorrupt(f"{self.name}: {array} record ({ri}, {rj}) claims {nbytes} bytes", [(ri, rj)])
            data = bytes(self._files.read_range(shard, offset, nbytes))
            if len(data) != nbytes:
                raise RecordCorrupt(f"{self.name}: {array} record ({ri}, {rj}) is truncated", [(ri, rj)])
            return data
        except FileNotFoundError as exc:
            raise RecordCorrupt(f"{self.name}: {array} record ({ri}, {rj}) is missing", [(ri, rj)]) from exc
        except StorageUnavailable:
            raise
        except OSError as exc:  # a folder or FIFO where the record should be, EIO, ...
            raise RecordCorrupt(f"{self.name}: {array} record ({ri}, {rj}) is unreadable ({exc.strerror or exc})",
                                [(ri, rj)]) from exc

    def _read_shard_index(self, array: str, ri: int, sj: int, shard: str) -> np.ndarray:
        key = (array, ri, sj)
        index = self._shard_index.get(key)
        if index is not None:
            return index
        k = self.header.shard_records
        size = k * 16 + 4
        end = self._files.size(shard)
        if end < size:
            raise RecordCorrupt(f"{self.name}: shard ({ri}, {sj}) of {array} is truncated",
                                [(ri, sj * k + jj) for jj in range(k)])
        raw = bytes(self._files.read_range(shard, end - size, size))
        if google_crc32c.value(raw[:-4]) != int.from_bytes(raw[-4:], "little"):
            raise RecordCorrupt(f"{self.name}: shard index ({ri}, {sj}) of {array} fails its checksum",
                                [(ri, sj * k + jj) for jj in range(k)])
        index = np.frombuffer(raw[:-4], dtype="<u8").reshape(k, 2)
        with self._lock:
            if len(self._shard_index) > 65536:
                self._shard_index.clear()
            self._shard_index[key] = index
        return index

    def _decode(self, array: str, ri: int, rj: int, data: bytes) -> np.ndarray:
        if len(data) < 4 or google_crc32c.value(data[:-4]) != int.from_bytes(data[-4:], "little"):
            raise RecordCorrupt(f"{self.name}: {array} record ({ri}, {rj}) fails its checksum "
                                "(corrupt or truncated)", [(ri, rj)])
        payload = memoryview(data)[:-4]
        if self._decompressor is not None:
            try:
                payload = memoryview(self._decompressor.decode(payload))
            except Exception as exc:  # codec libraries raise assorted errors
                raise RecordCorrupt(f"{self.name}: {array} record ({ri}, {rj}) cannot be decoded: {exc}",
                                    [(ri, rj)]) from exc
        h = self.header
        if len(payload) != self.record_nbytes(array):
            raise RecordCorrupt(f"{self.name}: {array} record ({ri}, {rj}) has {len(payload)} bytes, "
                                f"expected {self.record_nbytes(array)}", [(ri, rj)])
        shape = (h.u_pts, h.v_pts, NFIELDS) if array == "points" else (h.u_pts, h.v_pts)
        nu, nv = h.record_extent(ri, rj)
        return np.frombuffer(payload, dtype="<f8").reshape(shape)[:nu, :nv]

    # -- public reading ---------------------------------------------------------------------------

    def read_record(self, ri: int, rj: int, array: str = "points") -> np.ndarray:
        """One record: shape ``(nu, nv, 14)`` for ``points`` (``(nu, nv)`` for an extra field)."""
        self.header.check_block(RecordBlock(ri, ri + 1, rj, rj + 1))
        self._check_array(array)
        return self._decode(array, ri, rj, self._read_encoded(array, ri, rj))

    def read_block(self, block: RecordBlock, array: str = "points") -> np.ndarray:
        """The records of ``block`` as one dense array of shape ``(i1-i0, j1-j0, 14)``
        (see :meth:`Header.block_points`)."""
        h = self.header
        h.check_block(block)
        self._check_array(array)
        i0, i1, j0, j1 = h.block_points(block)
        out = np.empty((i1 - i0, j1 - j0) + ((NFIELDS,) if array == "points" else ()), dtype="<f8")
        keys = list(block.records())
        for (ri, rj), rec in zip(keys, self.read_records(keys, array)):
            a, b = ri * h.u_pts - i0, rj * h.v_pts - j0
            out[a:a + rec.shape[0], b:b + rec.shape[1]] = rec
        return out

    def read_records(self, records: Sequence[tuple[int, int]], array: str = "points") -> list[np.ndarray]:
        """Records ``(ri, rj)`` (inside the grid: checked by the caller) as :meth:`read_record`
        gives them. On object storage they are fetched concurrently (a request each: a 3 x 3
        window then costs about one round trip instead of nine)."""
        def one(key: tuple[int, int]) -> np.ndarray:
            return self._decode(array, key[0], key[1], self._read_encoded(array, key[0], key[1]))
        if self.remote and len(records) > 1:
            from surfacestore import objects

            return list(objects.read_pool().map(one, records))
        return [one(key) for key in records]

    def _check_array(self, array: str) -> None:
        if array != "points" and array not in self.header.extras:
            raise UnknownField(f"{self.name}: no per-point array {array!r} (extras: {list(self.header.extras)})")

    def zarr_group(self) -> Any:
        """The table as a read-only ``zarr.Group`` (the reference reader)."""
        import zarr

        from surfacestore import objects

        if self.remote:
            return zarr.open_group(objects.zarr_store(self.location), mode="r")
        return zarr.open_group(self.location, mode="r")


def open_table(path: str | os.PathLike[str]) -> Table:
    """Open the table stored at ``path`` (a ``NAME.zarr`` folder)."""
    return Table(path)


class TableWriter:
    """Writes a table record row by record row, then publishes it atomically.

    Use :func:`create_table`. Call :meth:`write_records` for consecutive spans of records of the
    current record row, in record order, then :meth:`commit`. Leaving the ``with`` block without a
    commit (error, Ctrl-C) removes the temporary folder, so no table appears.

    zarr-python writes the array metadata; the records themselves are encoded here, exactly as
    Zarr v3's ``bytes`` (+ compressor) + ``crc32c`` codecs and the ``sharding_indexed`` codec define
    them (the tests read every table back through zarr-python), because encoding a span of records
    with numpy in one pass is far faster than zarr's per-chunk pipeline. Encoding overlaps with
    hashing and writing, which run in a background thread.
    """

    def __init__(self, location: str, header: Header, overwrite: bool) -> None:
        import zarr
        from zarr.codecs import BytesCodec

        from surfacestore import objects

        self.location = location
        self.header = header
        self._overwrite = overwrite
        name = Path(location).name
        if objects.is_object_url(location):
            # staged in a local temporary folder, then uploaded (objects.publish: metadata last)
            self._staging: Path | None = Path(tempfile.mkdtemp(prefix=f".{name}.tmp-"))
            self._tmp = self._staging / name
        else:
            path = Path(location)
            _remove_stale(path)
            self._staging = None
            self._tmp = path.parent / f".{name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        h = header
        shards = None
        if h.shard_records:
            shards = (h.u_pts, h.v_pts * h.shard_records)
        group = zarr.open_group(self._tmp, mode="w-")
        self._group = group
        for name in ("points", *h.extras):
            pt = name == "points"
            group.create_array(
                name,
                shape=(h.u_npts, h.v_npts) + ((NFIELDS,) if pt else ()),
                chunks=(h.u_pts, h.v_pts) + ((NFIELDS,) if pt else ()),
                shards=None if shards is None else shards + ((NFIELDS,) if pt else ()),
                dtype="<f8",
                fill_value=float("nan"),
                serializer=BytesCodec(endian="little"),
                compressors=_compressors(h.codec),
                filters=None,
                config={"write_empty_chunks": True},
                dimension_names=("i", "j", "field") if pt else ("i", "j"),
            )
        self._compressor = _compressor(h.codec)
        self._digest = _Digest(["points", *h.extras])
        self._lo = np.full(3, np.inf)
        self._hi = np.full(3, -np.inf)
        self._rmax = 0.0
        self._next = (0, 0)
        self._done = False
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=2)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._drain, name=f"write-{name}", daemon=True)
        self._thread.start()

    def __enter__(self) -> TableWriter:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if not self._done:
            self.abort()

    # -- background hashing and writing ------------------------------------------------------------

    def _drain(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            if self._error is not None:
                continue
            try:
                digests, files = item
                for name, rec in digests:
                    self._digest.update(name, rec)
                for path, parts in files:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                    try:
                        for i in range(0, len(parts), 1024):  # IOV_MAX
                            _writev_all(fd, parts[i:i + 1024])
                    finally:
                        os.close(fd)
            except BaseException as exc:  # reported to the producer at its next call
                self._error = exc

    def _put(self, item: Any) -> None:
        self._raise_error()
        self._queue.put(item)

    def _raise_error(self) -> None:
        """Raise what the background writer met, a full disk as :class:`InsufficientSpace`."""
        exc = self._error
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise InsufficientSpace(f"{self.location}: the disk filled while the table was written ({exc.strerror}); "
                                    f"nothing was published") from exc
        if exc is not None:
            raise exc

    def _stop(self) -> None:
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()

    # -- encoding ----------------------------------------------------------------------------------

    def _encode_span(self, name: str, ri: int, rj0: int, rj1: int, arr: np.ndarray) -> tuple[list, list]:
        h = self.header
        up, vp, nrec = h.u_pts, h.v_pts, rj1 - rj0
        tail = (NFIELDS,) if name == "points" else ()
        nu, nv = arr.shape[:2]
        if (nu, nv) != (up, nrec * vp):  # short last row/column: pad records with the fill value
            padded = np.full((up, nrec * vp) + tail, np.nan)
            padded[:nu, :nv] = arr
            arr = padded
        recs = np.ascontiguousarray(arr.reshape((up, nrec, vp) + tail).swapaxes(0, 1), dtype="<f8")
        # digest over the records' valid points, in record order
        if (nu, nv) == (up, nrec * vp):
            digests = [(name, recs)]
        else:
            digests = [(name, recs[r, :nu, :min(vp, nv - r * vp)]) for r in range(nrec)]
        encoded = []
        for r in range(nrec):
            payload = recs[r] if self._compressor is None else np.frombuffer(
                self._compressor.encode(recs[r]), dtype=np.uint8)
            encoded.append((payload, google_crc32c.value(payload).to_bytes(4, "little")))
        base = self._tmp / name / "c" / str(ri)
        leaf = ("0",) if name == "points" else ()
        files = []
        if not h.shard_records:
            for r, (payload, crc) in enumerate(encoded):
                files.append((base.joinpath(str(rj0 + r), *leaf), [payload, crc]))
            return digests, files
        k = h.shard_records
        index = np.full((k, 2), _UNWRITTEN, dtype="<u8")
        parts: list[Any] = []
        offset = 0
        for r, (payload, crc) in enumerate(encoded):
            n = payload.nbytes + 4
            index[r] = (offset, n)
            parts += [payload, crc]
            offset += n
        parts += [index, google_crc32c.value(index).to_bytes(4, "little")]
        files.append((base.joinpath(str(rj0 // k), *leaf), parts))
        return digests, files

    def write_records(self, ri: int, rj0: int, rj1: int, points: np.ndarray,
                      extras: Mapping[str, np.ndarray] | None = None) -> None:
        """Write records ``(ri, rj0) .. (ri, rj1-1)``.

        ``points`` has shape ``(nu, nv, 14)`` covering exactly those records' points; extra fields
        have shape ``(nu, nv)``. Spans must come in record order and, when sharded, start and end on
        shard boundaries (or the end of the row).
        """
        h = self.header
        if (ri, rj0) != self._next:
            raise ValueError(f"records must be written in order: expected {self._next}, got {(ri, rj0)}")
        k = h.shard_records
        if k and (rj0 % k or (rj1 % k and rj1 != h.n_rec_v)):
            raise ValueError(f"span [{rj0}, {rj1}) is not aligned to shards of {k} records")
        if not rj0 < rj1 <= h.n_rec_v:
            raise ValueError(f"span [{rj0}, {rj1}) outside the record grid")
        i0, i1, j0, j1 = h.block_points(RecordBlock(ri, ri + 1, rj0, rj1))
        extras = dict(extras or {})
        if set(extras) != set(h.extras):
            raise ValueError(f"extra fields {sorted(extras)} differ from the header's {list(h.extras)}")
        data = {"points": points, **{e: extras[e] for e in h.extras}}
        xyz = points[..., 2:5].reshape(-1, 3)
        np.minimum(self._lo, xyz.min(axis=0), out=self._lo)
        np.maximum(self._hi, xyz.max(axis=0), out=self._hi)
        self._rmax = max(self._rmax, float(np.sqrt(np.einsum("ij,ij->i", xyz, xyz).max())))
        digests: list[Any] = []
        files: list[Any] = []
        for name, arr in data.items():
            want = (i1 - i0, j1 - j0) + ((NFIELDS,) if name == "points" else ())
            if arr.shape != want:
                raise ValueError(f"{name}: shape {arr.shape}, expected {want}")
            step = k or (rj1 - rj0)
            for a in range(rj0, rj1, step):
                b = min(a + step, rj1)
                d, f = self._encode_span(name, ri, a, b, arr[:, (a - rj0) * h.v_pts:(b - rj0) * h.v_pts])
                digests += d
                files += f
        # The digest hashes all of "points" before each extra array: keep per-array order.
        self._put((digests, files))
        self._next = (ri, rj1) if rj1 < h.n_rec_v else (ri + 1, 0)

    def commit(self) -> Table:
        """Write the header and publish the table under its final name."""
        h = self.header
        if self._next != (h.n_rec_u, 0):
            raise ValueError(f"table incomplete: next record to write is {self._next}")
        self._stop()
        self._raise_error()
        self.header = replace(h, digest=self._digest.hexdigest(),
                              bbox=(tuple(self._lo.tolist()), tuple(self._hi.tolist())), rmax=self._rmax,
                              created=datetime.now(timezone.utc).isoformat(timespec="seconds"))
        self._group.attrs["surface"] = self.header.to_dict()
        if self._staging is not None:
            from surfacestore import objects

            objects.publish(self._tmp, self.location, self._overwrite)
            self.abort()  # the staging folder
            return Table(self.location)
        path, old = Path(self.location), None
        if path.exists():
            if not self._overwrite:
                raise TableExists(f"{path} exists (use overwrite)")
            old = path.parent / f".{path.name}.old-{os.getpid()}-{uuid.uuid4().hex[:8]}"
            os.rename(path, old)
        os.rename(self._tmp, path)
        self._done = True
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        return Table(path)

    def abort(self) -> None:
        """Remove everything written so far."""
        self._done = True
        self._stop()
        shutil.rmtree(self._staging or self._tmp, ignore_errors=True)


def _remove_stale(path: Path) -> None:
    """Remove the hidden temporary folders of earlier builds of ``path`` whose process is gone (a
    build killed with SIGKILL cannot clean up after itself). Their names carry the builder's pid:
    ``.NAME.tmp-PID-XXXXXXXX`` and ``.NAME.old-PID-XXXXXXXX``."""
    pattern = re.compile(re.escape(f".{path.name}.") + r"(?:tmp|old)-(\d+)-[0-9a-f]{8}")
    try:
        entries = os.listdir(path.parent)
    except OSError:
        return
    for entry in entries:
        m = pattern.fullmatch(entry)
        if m is None or _alive(int(m.group(1))):
            continue
        shutil.rmtree(path.parent / entry, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _writev_all(fd: int, parts: Sequence[Any]) -> None:
    views = [memoryview(p).cast("B") for p in parts]
    while views:
        n = os.writev(fd, views)
        while views and n >= len(views[0]):
            n -= len(views.pop(0))
        if views and n:
            views[0] = views[0][n:]


def _auto_shard(u_pts: int, v_pts: int, n_rec_u: int, n_rec_v: int) -> int:
    if n_rec_u * n_rec_v <= SHARD_AUTO_RECORDS:
        return 0
    per = max(1, SHARD_TARGET_BYTES // (u_pts * v_pts * NFIELDS * 8))
    return int(min(per, n_rec_v))


def create_table(path: str | os.PathLike[str], *, u_npts: int, v_npts: int, u_pts: int, v_pts: int,
                 u0: float, v0: float, du: float, dv: float, source: Mapping[str, Any] | None = None,
                 codec: str = DEFAULT_CODEC, shard: int | str = "auto", normal_sign: int = 1,
                 extras: Sequence[str] = (), overwrite: bool = False, periodic_v: bool = False) -> TableWriter:
    """Start writing a table at ``path`` (a folder, conventionally ``NAME.zarr``, or an
    ``s3://BUCKET/PREFIX/NAME.zarr`` prefix: see :mod:`surfacestore.objects`).

    Parameters
    ----------
    u_npts, v_npts : points of the grid in u and v (each >= 2).
    u_pts, v_pts : points per record in u and v (1 <= u_pts <= u_npts).
    u0, v0, du, dv : the parameter grid ``u_i = u0 + i*du`` (units of the family's parameters).
    shard : records per shard along v, 0 for no sharding, or ``"auto"`` (shard when the table has
        more than 4096 records, about 16 MB per shard).
    normal_sign : +1 if ``n = tu x tv / |tu x tv|``, -1 if the outward side is the other one.
    periodic_v : the surface closes in v, point ``v_npts`` being point 0 (see :class:`Header`).
    """
    from surfacestore import objects

    location = os.fspath(path)
    remote = objects.is_object_url(location)
    validate_table_name(table_name(location))
    if codec not in CODECS:
        raise ValueError(f"unknown codec {codec!r}; choose one of {', '.join(CODECS)}")
    if u_npts < 2 or v_npts < 2:
        raise ValueError(f"grid {u_npts} x {v_npts} is smaller than 2 x 2")
    if not (1 <= u_pts <= u_npts and 1 <= v_pts <= v_npts):
        raise ValueError(f"record {u_pts} x {v_pts} is empty or larger than the grid {u_npts} x {v_npts}")
    if not all(math.isfinite(x) for x in (u0, v0, du, dv)) or du <= 0 or dv <= 0:
        raise ValueError(f"invalid parameter grid u0={u0}, v0={v0}, du={du}, dv={dv}")
    if normal_sign not in (1, -1):
        raise ValueError("normal_sign must be +1 or -1")
    if periodic_v and v_npts % v_pts:
        raise ValueError(f"a table periodic in v needs whole records in v: {v_npts} points in v are not a "
                         f"multiple of {v_pts} per record")
    for e in extras:
        validate_table_name(e)
        if e == "points":
            raise ValueError("'points' is not a valid extra field name")
    if not overwrite and (objects.exists(location) if remote else Path(location).exists()):
        raise TableExists(f"output {location} exists (use --overwrite to replace it)")
    n_rec_u, n_rec_v = -(-u_npts // u_pts), -(-v_npts // v_pts)
    k = _auto_shard(u_pts, v_pts, n_rec_u, n_rec_v) if shard == "auto" else int(shard)
    if k < 0:
        raise ValueError(f"shard must be >= 0, got {k}")
    k = min(k, n_rec_v)
    header = Header(u_npts=u_npts, v_npts=v_npts, u_pts=u_pts, v_pts=v_pts, u0=float(u0), v0=float(v0),
                    du=float(du), dv=float(dv), source=dict(source or {}), codec=codec, shard_records=k,
                    normal_sign=normal_sign, extras=tuple(extras), periodic_v=bool(periodic_v))
    if not remote:
        Path(location).parent.mkdir(parents=True, exist_ok=True)
    _check_space(location, Path(tempfile.gettempdir()) if remote else Path(location).parent, header)
    return TableWriter(location, header, overwrite)


def _check_space(location: str, folder: Path, h: Header) -> None:
    """Refuse an uncompressed table larger than the free space under ``folder`` (where it is written,
    or staged for object storage) before writing anything, rather than fill the disk and fail. A
    compressed table's size is not known beforehand: a disk filling while it is written is reported
    then (:class:`InsufficientSpace` too)."""
    if h.codec != "none":
        return
    n_rec = h.n_rec_u * h.n_rec_v
    n_shards = h.n_rec_u * -(-h.n_rec_v // h.shard_records) if h.shard_records else 0
    point_bytes = h.u_pts * h.v_pts * 8  # (one value per point: an extra field's record)
    need = sum(n_rec * (point_bytes * width + 4) + n_shards * (16 * h.shard_records + 4)
               for width in (NFIELDS, *(1 for _ in h.extras)))
    free = shutil.disk_usage(folder).free
    if need > free:
        raise InsufficientSpace(f"{location}: the table ({h.u_npts} x {h.v_npts} points) needs {need / 1e9:.3g} GB, "
                                f"and {folder} has {free / 1e9:.3g} GB free")


# -- verification ---------------------------------------------------------------------------------

@dataclass
class VerifyReport:
    """Outcome of :func:`verify_table`: ``ok`` when the table is sound.

    ``problems`` holds table-level findings; ``bad_records`` maps ``(ri, rj)`` to the reasons that
    record failed.
    """

    path: str
    digest_expected: str = ""
    digest_actual: str = ""
    problems: list[str] = field(default_factory=list)
    bad_records: dict[tuple[int, int], list[str]] = field(default_factory=dict)
    degenerate_points: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems and not self.bad_records

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "ok": self.ok, "digest_expected": self.digest_expected,
                "digest_actual": self.digest_actual, "problems": self.problems,
                "bad_records": [{"record": list(k), "reasons": v} for k, v in sorted(self.bad_records.items())],
                "degenerate_points": self.degenerate_points}


def check_points(p: np.ndarray, normal_sign: int, tol: float = 1e-9) -> tuple[list[str], int]:
    """Physical checks of a block of points ``(..., 14)``.

    Returns the failed checks and the number of points with a degenerate ``tu x tv`` (where the
    family supplied an analytic normal, so the parallel test does not apply).
    """
    reasons = []
    if not np.isfinite(p).all():
        return ["non-finite values"], 0
    n, tu, tv = p[..., 5:8], p[..., 8:11], p[..., 11:14]
    if np.abs(np.linalg.norm(n, axis=-1) - 1.0).max(initial=0.0) > tol:
        reasons.append("|n| != 1")
    ltu, ltv = np.linalg.norm(tu, axis=-1), np.linalg.norm(tv, axis=-1)
    if (np.abs(np.einsum("...k,...k", n, tu)) > tol * (1 + ltu)).any() or \
       (np.abs(np.einsum("...k,...k", n, tv)) > tol * (1 + ltv)).any():
        reasons.append("n not orthogonal to tu, tv")
    c = np.cross(tu, tv)
    lc = np.linalg.norm(c, axis=-1)
    regular = lc > DEGENERATE_TOL * ltu.max(initial=0.0) * ltv.max(initial=0.0)
    cos = np.einsum("...k,...k", n, c)[regular] / lc[regular]
    if (cos * normal_sign < 1 - tol).any():
        reasons.append("n not parallel to tu x tv" + (" (flipped)" if normal_sign < 0 else ""))
    return reasons, int((~regular).sum())


def _seam_gap(table: Table) -> str | None:
    """A table periodic in v whose seam does not close: its first column of points is not one step
    on from its last (within a quarter of a step of where the last column's tangent ``tv`` puts it,
    for a surface whose v-curves turn by much less than a radian per step); else None."""
    h = table.header
    first = table.read_block(RecordBlock(0, h.n_rec_u, 0, 1))[:, 0]
    last = table.read_block(RecordBlock(0, h.n_rec_u, h.n_rec_v - 1, h.n_rec_v))[:, -1]
    step = h.dv * np.linalg.norm(last[:, 11:14], axis=-1)
    off = np.linalg.norm(first[:, 2:5] - (last[:, 2:5] + h.dv * last[:, 11:14]), axis=-1)
    bad = off > 0.25 * step + 1e-12 * (1 + np.abs(last[:, 2:5]).max())
    if not bad.any():
        return None
    i = int(np.argmax(off - 0.25 * step))
    return (f"periodic_v, but the seam does not close: at u = {h.u0 + i * h.du:.6g} the first column's point is "
            f"{off[i]:.3g} m from one step on from the last ({step[i]:.3g} m a step)")


def verify_table(path: str | os.PathLike[str], progress: Any = None) -> VerifyReport:
    """Check a table: header against arrays, every record present with a valid checksum, the
    parameter grid, finite values, ``|n| = 1``, ``n`` orthogonal to ``tu`` and ``tv`` and parallel
    to ``tu x tv``, a periodic table's seam closing, and the digest recomputed from the data.
    ``progress(n)`` is called per record row.
    """
    report = VerifyReport(path=str(path))
    table = open_table(path)
    h = table.header
    report.digest_expected = h.digest
    try:
        group = table.zarr_group()
        for name in ("points", *h.extras):
            arr = group[name]
            want = (h.u_npts, h.v_npts) + ((NFIELDS,) if name == "points" else ())
            if tuple(arr.shape) != want:
                report.problems.append(f"array {name} has shape {tuple(arr.shape)}, header says {want}")
            if tuple(arr.chunks[:2]) != (h.u_pts, h.v_pts):
                report.problems.append(f"array {name} has records {tuple(arr.chunks[:2])}, "
                                       f"header says {(h.u_pts, h.v_pts)}")
    except Exception as exc:
        report.problems.append(f"arrays unreadable through zarr: {exc!r}")
    if report.problems:
        return report
    digest = _Digest(["points", *h.extras])
    for ri in range(h.n_rec_u):
        for rj in range(h.n_rec_v):
            for name in ("points", *h.extras):
                try:
                    rec = table.read_record(ri, rj, name)
                except RecordCorrupt as exc:
                    report.bad_records.setdefault((ri, rj), []).append(str(exc))
                    rec = np.full((*h.record_extent(ri, rj),) + ((NFIELDS,) if name == "points" else ()),
                                  np.nan)
                    digest.update(name, rec)
                    continue
                digest.update(name, rec)
                if name != "points":
                    if not np.isfinite(rec).all():
                        report.bad_records.setdefault((ri, rj), []).append(f"non-finite {name} values")
                    continue
                reasons, ndeg = check_points(rec, h.normal_sign)
                report.degenerate_points += ndeg
                i0, j0 = ri * h.u_pts, rj * h.v_pts
                uu = h.u0 + (i0 + np.arange(rec.shape[0]))[:, None] * h.du
                vv = h.v0 + (j0 + np.arange(rec.shape[1]))[None, :] * h.dv
                if not reasons and (
                        np.abs(rec[..., 0] - uu).max() > 1e-9 * (1 + abs(uu).max())
                        or np.abs(rec[..., 1] - vv).max() > 1e-9 * (1 + abs(vv).max())):
                    reasons.append("u, v fields differ from the header's parameter grid")
                if reasons:
                    report.bad_records.setdefault((ri, rj), []).extend(reasons)
        if progress is not None:
            progress(1)
    if h.periodic_v and not report.bad_records:
        seam = _seam_gap(table)
        if seam is not None:
            report.problems.append(seam)
    report.digest_actual = digest.hexdigest()
    if report.digest_actual != h.digest:
        report.problems.append(f"digest mismatch: header {h.digest}, data {report.digest_actual}")
    return report
