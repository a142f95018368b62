"""Type information of the package: its public names (loaded on first use, see __init__)."""

from .errors import (
    BlockTooLarge as BlockTooLarge, InsufficientSpace as InsufficientSpace, InvalidTableName as InvalidTableName,
    RecordCorrupt as RecordCorrupt, RecordOutOfRange as RecordOutOfRange, StorageUnavailable as StorageUnavailable,
    SurfaceStoreError as SurfaceStoreError, TableCorrupt as TableCorrupt, TableExists as TableExists,
    TableNotFound as TableNotFound, UnknownField as UnknownField,
)
from .format import (
    FIELDS as FIELDS, FORMAT as FORMAT, Header as Header, RecordBlock as RecordBlock, Table as Table,
    create_table as create_table, open_table as open_table, verify_table as verify_table,
)

__version__: str
__all__ = ["FIELDS", "FORMAT", "Header", "RecordBlock", "Table", "create_table", "open_table", "verify_table",
           "SurfaceStoreError", "TableNotFound", "TableExists", "InvalidTableName", "TableCorrupt", "RecordCorrupt",
           "RecordOutOfRange", "BlockTooLarge", "UnknownField", "StorageUnavailable", "InsufficientSpace"]
