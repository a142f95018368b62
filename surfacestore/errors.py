"""Errors raised by :mod:`surfacestore`.

::

    SurfaceStoreError
    ├── TableNotFound            (also FileNotFoundError)  no table at that name or path
    ├── TableExists              (also FileExistsError)    output exists and overwrite was not asked
    ├── InvalidTableName         (also ValueError)         a name that could escape the root
    ├── TableCorrupt                                       header or arrays unreadable or inconsistent
    │   └── RecordCorrupt                                  one record missing, truncated or failing its checksum
    ├── RecordOutOfRange         (also IndexError)         record indices outside the record grid
    ├── UnknownField             (also KeyError)           no per-point array of that name
    ├── BlockTooLarge            (also ValueError)         more records than a configured limit
    ├── StorageUnavailable       (also OSError)            object storage slow or failing (transient)
    └── InsufficientSpace        (also OSError)            a table that does not fit where it is written
"""

from __future__ import annotations

__all__ = [
    "SurfaceStoreError",
    "TableNotFound",
    "TableExists",
    "InvalidTableName",
    "TableCorrupt",
    "RecordCorrupt",
    "RecordOutOfRange",
    "BlockTooLarge",
    "UnknownField",
    "StorageUnavailable",
    "InsufficientSpace",
]


class SurfaceStoreError(Exception):
    """Root of every error raised by surfacestore."""


class TableNotFound(SurfaceStoreError, FileNotFoundError):
    """No table exists at the given name or path."""


class TableExists(SurfaceStoreError, FileExistsError):
    """The output table exists and overwriting was not requested."""


class InvalidTableName(SurfaceStoreError, ValueError):
    """A table name that is empty, hidden, or contains path separators."""


class TableCorrupt(SurfaceStoreError):
    """A table whose header or arrays cannot be read or disagree with each other."""


class RecordCorrupt(TableCorrupt):
    """A record that is missing, truncated, or fails its checksum.

    Attributes
    ----------
    records : list of (ri, rj)
        The records concerned.
    """

    def __init__(self, message: str, records: list[tuple[int, int]] | None = None) -> None:
        super().__init__(message)
        self.records = list(records or [])


class RecordOutOfRange(SurfaceStoreError, IndexError):
    """Record indices outside the table's record grid."""


class BlockTooLarge(SurfaceStoreError, ValueError):
    """A block request for more records than the configured limit."""


class UnknownField(SurfaceStoreError, KeyError):
    """A per-point array name the table does not have."""


class StorageUnavailable(SurfaceStoreError, OSError):
    """Object storage that does not answer, or fails, within its timeout and retries (transient:
    the store answers 503 ``storage_unavailable`` and clients retry)."""


class InsufficientSpace(SurfaceStoreError, OSError):
    """A table that does not fit in the free space of the file system it is written to (found
    before writing an uncompressed table, or when the disk fills); nothing is published."""
