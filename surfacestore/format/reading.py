"""Reading a table: its folder's files (no link leading out, regular files only), records, blocks and
the digest (:class:`Table`, :func:`open_table`)."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import google_crc32c
import numpy as np

from surfacestore.errors import (
    RecordCorrupt,
    TableCorrupt,
    StorageUnavailable,
    TableNotFound,
    UnknownField,
)
from surfacestore.format.header import (
    Header, NFIELDS, RecordBlock, _MAX_METADATA_BYTES, _MAX_STORED_RECORD, _UNWRITTEN, _decompressor, table_name,
)

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
            # The table's own folder may be a link: whoever named the path chose it (the store's
            # catalog keeps resolved tables inside its root); links inside the table are refused.
            self._dirfd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        except (FileNotFoundError, NotADirectoryError):
            raise TableNotFound(f"no surface table at {path}") from None

    def _open(self, rel: str) -> tuple[int, int]:
        """A descriptor of the regular file ``rel`` and its size (one ``fstat`` for both). No
        component of ``rel`` may be a link (``OSError``): a table holds only folders and regular
        files, so nothing inside it can lead out of the store's root."""
        *folders, name = rel.split("/")
        dirfd, opened = self._dirfd, []
        try:
            for part in folders:
                dirfd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dirfd)
                opened.append(dirfd)
            fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW, dir_fd=dirfd)
        finally:
            for d in opened:
                os.close(d)
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

    def read_versioned(self, rel: str, limit: int) -> tuple[bytes, Any]:
        """:meth:`read` and the :meth:`version` taken before it (a rebuild in between shows as a
        changed version, never as a new version taken for the old content)."""
        version = self.version(rel)
        return self.read(rel, limit), version

    def read_range(self, rel: str, offset: int, nbytes: int) -> bytes:
        fd, _ = self._open(rel)
        try:
            return os.pread(fd, nbytes, offset)
        finally:
            os.close(fd)

    def read_tail(self, rel: str, nbytes: int) -> tuple[bytes, int]:
        """The last ``nbytes`` bytes of ``rel`` (all of it where it is shorter) and its size."""
        fd, size = self._open(rel)
        try:
            return os.pread(fd, min(nbytes, size), max(size - nbytes, 0)), size
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
            # the group metadata and a version that is never newer than what was read (is_current)
            meta, self._version = self._files.read_versioned("zarr.json", _MAX_METADATA_BYTES)
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
        self._index_reads: dict[tuple[str, int, int], Future[np.ndarray]] = {}  # (being read)
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
        try:
            if not k:
                limit = self._stored_size if array == "points" and self._stored_size else _MAX_STORED_RECORD
                return bytes(self._files.read(self._chunk_key(array, ri, rj), limit))
            sj, jj = divmod(rj, k)
            shard = self._chunk_key(array, ri, sj)
            index = self._read_shard_index(array, ri, sj)
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

    @staticmethod
    def _chunk_key(array: str, ri: int, j: int) -> str:
        """The key of ``array``'s chunk (ri, j): record (ri, j), or shard (ri, j) of a sharded table."""
        return f"{array}/c/{ri}/{j}" + ("/0" if array == "points" else "")

    def _read_shard_index(self, array: str, ri: int, sj: int) -> np.ndarray:
        """Shard (ri, sj)'s index, read once: threads asking for it meanwhile wait for that read
        (a window and the reads ahead of it start on the same shards at once)."""
        key = (array, ri, sj)
        index = self._shard_index.get(key)
        if index is not None:
            return index
        with self._lock:
            reading = self._index_reads.get(key)
            if reading is None:
                reading = self._index_reads[key] = Future()
                mine = True
            else:
                mine = False
        if not mine:
            return reading.result()  # (its error too)
        try:
            index = self._shard_index_read(array, ri, sj)
            reading.set_result(index)
        except BaseException as exc:
            reading.set_exception(exc)
            raise
        finally:
            with self._lock:
                del self._index_reads[key]
        return index

    def _shard_index_read(self, array: str, ri: int, sj: int) -> np.ndarray:
        k = self.header.shard_records
        size = k * 16 + 4
        # (one request: a bucket is not asked for the shard's size first)
        raw, end = self._files.read_tail(self._chunk_key(array, ri, sj), size)
        raw = bytes(raw)
        if end < size or len(raw) != size:
            raise RecordCorrupt(f"{self.name}: shard ({ri}, {sj}) of {array} is truncated",
                                [(ri, sj * k + jj) for jj in range(k)])
        if google_crc32c.value(raw[:-4]) != int.from_bytes(raw[-4:], "little"):
            raise RecordCorrupt(f"{self.name}: shard index ({ri}, {sj}) of {array} fails its checksum",
                                [(ri, sj * k + jj) for jj in range(k)])
        index = np.frombuffer(raw[:-4], dtype="<u8").reshape(k, 2)
        with self._lock:
            if len(self._shard_index) > 65536:
                self._shard_index.clear()
            self._shard_index[(array, ri, sj)] = index
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
        gives them. On object storage they are fetched concurrently, and the records of one shard
        that lie next to each other in it in one ranged request (a 3 x 9 window of a sharded table
        then costs about one round trip of three requests instead of 27)."""
        def one(key: tuple[int, int]) -> np.ndarray:
            return self._decode(array, key[0], key[1], self._read_encoded(array, key[0], key[1]))
        if not (self.remote and len(records) > 1):
            return [one(key) for key in records]
        from surfacestore import objects

        if not self.header.shard_records:
            return list(objects.read_pool().map(one, records))
        k = self.header.shard_records
        shards: dict[tuple[int, int], list[tuple[int, int]]] = {}
        for ri, rj in records:
            shards.setdefault((ri, rj // k), []).append((ri, rj))
        pool = objects.read_pool()
        jobs: list[tuple[list[tuple[int, int]], Any]] = []
        for (ri, sj), keys in shards.items():
            if self._decompressor is None and (array, ri, sj) not in self._shard_index:
                # a shard not indexed yet: its records read where an uncompressed shard holds them
                # (the writer's layout), alongside its index: one round trip, not two; checked below
                size = self.record_nbytes(array) + 4
                lo, hi = min(rj % k for _, rj in keys) * size, (max(rj % k for _, rj in keys) + 1) * size
                shard = self._chunk_key(array, ri, sj)
                jobs.append((keys, (lo, pool.submit(self._read_shard_index, array, ri, sj),
                                    pool.submit(self._files.read_range, shard, lo, hi - lo))))
            else:
                jobs.append((keys, pool.submit(self._read_shard_run, array, keys)))
        decoded: dict[tuple[int, int], np.ndarray] = {}
        for keys, job in jobs:
            got = self._guessed_run(array, keys, *job) if isinstance(job, tuple) else job.result()
            decoded.update(got if got is not None else self._read_shard_run(array, keys))
        return [decoded[key] for key in records]

    def _guessed_run(self, array: str, keys: list[tuple[int, int]], lo: int, index_job: Future[np.ndarray],
                     data_job: Future[bytes]) -> dict[tuple[int, int], np.ndarray] | None:
        """Records ``keys`` of one shard from the bytes read from offset ``lo`` where the shard's
        index puts them there; None where it does not, or either read failed (the records are then
        read by the index, which says what is wrong)."""
        try:
            index, data = index_job.result(), bytes(data_job.result())
        except StorageUnavailable:
            raise
        except Exception:  # noqa: BLE001 (read again by _read_shard_run, where a failure is reported)
            return None
        k = self.header.shard_records
        out = {}
        for key in keys:
            offset, nbytes = (int(x) for x in index[key[1] % k])
            piece = data[offset - lo:offset - lo + nbytes]
            if offset < lo or nbytes > _MAX_STORED_RECORD or len(piece) != nbytes:
                return None
            out[key] = self._decode(array, *key, piece)
        return out

    def _read_shard_run(self, array: str, keys: list[tuple[int, int]]) -> dict[tuple[int, int], np.ndarray]:
        """Records ``keys`` of one shard, those stored next to each other read as one range."""
        k = self.header.shard_records
        ri, sj = keys[0][0], keys[0][1] // k
        shard = self._chunk_key(array, ri, sj)
        def alone() -> dict[tuple[int, int], np.ndarray]:  # (each record read alone says what is wrong)
            return {key: self._decode(array, *key, self._read_encoded(array, *key)) for key in keys}
        try:
            index = self._read_shard_index(array, ri, sj)
        except StorageUnavailable:
            raise
        except OSError:  # (a missing or unreadable shard)
            return alone()
        spans = []
        for key in keys:
            offset, nbytes = (int(x) for x in index[key[1] % k])
            if offset == _UNWRITTEN or nbytes > _MAX_STORED_RECORD:
                return alone()
            spans.append((offset, nbytes, key))
        spans.sort()
        out: dict[tuple[int, int], np.ndarray] = {}
        start = 0
        while start < len(spans):
            end = start + 1
            while end < len(spans) and spans[end][0] == spans[end - 1][0] + spans[end - 1][1]:
                end += 1
            lo, hi = spans[start][0], spans[end - 1][0] + spans[end - 1][1]
            try:
                data = bytes(self._files.read_range(shard, lo, hi - lo))
            except StorageUnavailable:
                raise
            except OSError as exc:
                raise RecordCorrupt(f"{self.name}: {array} records {[k for *_, k in spans[start:end]]} are unreadable "
                                    f"({exc.strerror or exc})", [k for *_, k in spans[start:end]]) from exc
            for offset, nbytes, key in spans[start:end]:
                piece = data[offset - lo:offset - lo + nbytes]
                if len(piece) != nbytes:
                    raise RecordCorrupt(f"{self.name}: {array} record {key} is truncated", [key])
                out[key] = self._decode(array, *key, piece)
            start = end
        return out

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
