"""Surface tables (Zarr v3) and the read-only HTTP store that serves them.

This package's root imports only the table format; the web service lives in
:mod:`surfacestore.app` and is imported on demand.
"""

from surfacestore.errors import (
    BlockTooLarge,
    InsufficientSpace,
    InvalidTableName,
    RecordCorrupt,
    RecordOutOfRange,
    StorageUnavailable,
    SurfaceStoreError,
    TableCorrupt,
    TableExists,
    TableNotFound,
    UnknownField,
)
from surfacestore.format import (
    FIELDS,
    FORMAT,
    Header,
    RecordBlock,
    Table,
    create_table,
    open_table,
    verify_table,
)

__all__ = [
    "FIELDS",
    "FORMAT",
    "Header",
    "RecordBlock",
    "Table",
    "create_table",
    "open_table",
    "verify_table",
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
