"""The store's catalog of tables under a root (a folder or an ``s3://`` prefix), and its
byte-bounded record cache.

The catalog looks at the root on every call (a ``stat`` of the table's ``zarr.json``; on object
storage a HEAD request, at most once per ``recheck_s`` per table), so tables added, removed or
rebuilt while the store runs are noticed without a restart. Names are validated and resolved paths
must stay inside the root (no ``..``, no symlinks leading out).
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np

from surfacestore.errors import RecordCorrupt, TableNotFound
from surfacestore import objects
from surfacestore.format import TABLE_SUFFIX, RecordBlock, Table, table_location, validate_table_name
from surfacestore.errors import InvalidTableName

__all__ = ["Catalog", "RecordCache"]


class RecordCache:
    """LRU cache of decoded records bounded by their total size in bytes. Thread-safe.

    Keys include the table digest, so a rebuilt table never serves the old version's records.
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = int(max_bytes)
        self.bytes = 0
        self.hits = 0
        self.misses = 0
        self._data: OrderedDict[Any, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Any) -> np.ndarray | None:
        with self._lock:
            rec = self._data.get(key)
            if rec is None:
                self.misses += 1
                return None
            self._data.move_to_end(key)
            self.hits += 1
            return rec

    def put(self, key: Any, rec: np.ndarray) -> None:
        if rec.nbytes > self.max_bytes:
            return
        with self._lock:
            if key in self._data:
                return
            self._data[key] = rec
            self.bytes += rec.nbytes
            while self.bytes > self.max_bytes:
                _, old = self._data.popitem(last=False)
                self.bytes -= old.nbytes

    def stats(self) -> dict[str, int]:
        return {"bytes": self.bytes, "records": len(self._data), "hits": self.hits, "misses": self.misses,
                "max_bytes": self.max_bytes}


class Catalog:
    """The tables under ``root`` (a folder or an ``s3://BUCKET/PREFIX``), opened on demand and
    reopened when rebuilt. ``recheck_s``: on object storage, how long (s) an open table is served
    before its ``zarr.json`` is checked again (a request per check)."""

    def __init__(self, root: str | os.PathLike[str], cache: RecordCache | None = None,
                 recheck_s: float = 1.0) -> None:
        self.remote = objects.is_object_url(os.fspath(root))
        self.root: str | Path = os.fspath(root).rstrip("/") if self.remote else Path(root).resolve()
        self.cache = cache or RecordCache(256 * 2**20)
        self.recheck_s = recheck_s
        self._open: dict[str, tuple[float, Table]] = {}
        self._lock = threading.Lock()

    def names(self) -> list[str]:
        """Names of the tables currently under the root (hidden and temporary folders excluded)."""
        if isinstance(self.root, str):
            candidates = objects.list_tables(self.root, TABLE_SUFFIX)
        else:
            try:
                entries = sorted(os.listdir(self.root))
            except FileNotFoundError:
                return []
            candidates = [e[: -len(TABLE_SUFFIX)] for e in entries
                          if not e.startswith(".") and e.endswith(TABLE_SUFFIX)]
        out = []
        for name in candidates:
            try:
                self._location(name)
            except (TableNotFound, InvalidTableName):
                continue
            out.append(name)
        return out

    def _location(self, name: str) -> str:
        validate_table_name(name)
        location = table_location(self.root, name)
        if isinstance(self.root, str):
            if not objects.exists(location):
                raise TableNotFound(f"no table named {name!r}")
            return location
        real = Path(os.path.realpath(location))
        if real.parent != self.root and self.root not in real.parents:
            raise TableNotFound(f"no table named {name!r}")  # a symlink leading out of the root
        if not (real / "zarr.json").is_file():
            raise TableNotFound(f"no table named {name!r}")
        return location

    def get(self, name: str) -> Table:
        """The current version of table ``name``; :class:`TableNotFound` if there is none.

        One ``stat`` of the table's ``zarr.json`` per call (on object storage one HEAD request per
        ``recheck_s``) tells whether the open version is still current; the name is validated and
        the path resolved (symlinks) only when (re)opening.
        """
        with self._lock:
            cached = self._open.get(name)
        if cached is not None:
            checked, table = cached
            now = time.monotonic()
            if self.remote and now - checked < self.recheck_s:
                return table
            if table.is_current():
                if self.remote:
                    with self._lock:
                        self._open[name] = (now, table)
                return table
        try:
            table = Table(self._location(name))
        except (InvalidTableName, TableNotFound):
            with self._lock:
                self._open.pop(name, None)
            raise TableNotFound(f"no table named {name!r}") from None
        with self._lock:
            self._open[name] = (time.monotonic(), table)
        return table

    def read_block(self, name: str, block: RecordBlock, array: str = "points") -> tuple[Table, np.ndarray]:
        """Read a block through the record cache, from one version of the table.

        If the table is replaced during the read (a record of the old version disappears), the
        whole block is read again from the new version; a response never mixes versions.
        """
        for attempt in range(3):
            table = self.get(name)
            try:
                return table, self._read_block(table, block, array)
            except RecordCorrupt:
                if attempt == 2 or self.get(name) is table:
                    raise
        raise AssertionError("unreachable")

    def cached_block(self, table: Table, block: RecordBlock, array: str = "points") -> np.ndarray | None:
        """The block assembled from the record cache alone, or ``None`` if a record is not cached
        (then read it with :meth:`read_block`, off the event loop)."""
        table.header.check_block(block)
        digest, name = table.header.digest, table.name
        recs = []
        for ri, rj in block.records():
            rec = self.cache.get((digest, name, array, ri, rj))
            if rec is None:
                return None
            recs.append(rec)
        return self._assemble(table, block, array, recs)

    def _assemble(self, table: Table, block: RecordBlock, array: str, recs: list[np.ndarray]) -> np.ndarray:
        if len(recs) == 1:
            return recs[0]
        h = table.header
        i0, i1, j0, j1 = h.block_points(block)
        out = np.empty((i1 - i0, j1 - j0) + ((14,) if array == "points" else ()), dtype="<f8")
        for (ri, rj), rec in zip(block.records(), recs):
            a, b = ri * h.u_pts - i0, rj * h.v_pts - j0
            out[a:a + rec.shape[0], b:b + rec.shape[1]] = rec
        return out

    def _read_block(self, table: Table, block: RecordBlock, array: str) -> np.ndarray:
        table.header.check_block(block)
        keys = list(block.records())
        cached: dict[tuple[int, int], Any] = {k: self.cache.get((table.header.digest, table.name, array, *k))
                                               for k in keys}
        missing = [k for k, rec in cached.items() if rec is None]
        # the missing records are read together: concurrently on object storage
        for k, rec in zip(missing, table.read_records(missing, array)):
            self.cache.put((table.header.digest, table.name, array, *k), rec)
            cached[k] = rec
        return self._assemble(table, block, array, [cached[k] for k in keys])
