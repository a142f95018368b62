"""Writing a table: records encoded as Zarr's codecs define them, hashed and written in the background,
published atomically (:class:`TableWriter`, :func:`create_table`)."""

from __future__ import annotations

import errno
import math
import os
import queue
import re
import shutil
import tempfile
import threading
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import google_crc32c
import numpy as np

from surfacestore.errors import (
    InsufficientSpace,
    TableExists,
)
from surfacestore.format.header import (
    CODECS, DEFAULT_CODEC, Header, NFIELDS, RecordBlock, SHARD_AUTO_RECORDS, SHARD_TARGET_BYTES, _UNWRITTEN,
    _compressor, _compressors, table_name, validate_table_name,
)
from surfacestore.format.reading import Table, _Digest

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


def shard_records(shard: int | str, u_pts: int, v_pts: int, n_rec_u: int, n_rec_v: int) -> int:
    """The records per shard along v (0: not sharded) that ``shard`` (a number, or ``"auto"``:
    shard a table of over :data:`SHARD_AUTO_RECORDS` records, :data:`SHARD_TARGET_BYTES` a shard)
    gives a table of ``n_rec_u`` x ``n_rec_v`` records of ``u_pts`` x ``v_pts`` points."""
    if shard == "auto":
        if n_rec_u * n_rec_v <= SHARD_AUTO_RECORDS:
            return 0
        shard = max(1, SHARD_TARGET_BYTES // (u_pts * v_pts * NFIELDS * 8))
    k = int(shard)
    if k < 0:
        raise ValueError(f"shard must be >= 0, got {k}")
    return min(k, n_rec_v)


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
    k = shard_records(shard, u_pts, v_pts, n_rec_u, n_rec_v)
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
