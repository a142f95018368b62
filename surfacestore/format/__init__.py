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

The module is a package by concern: :mod:`.header` (constants, the header and its validation, the
record grid), :mod:`.reading`, :mod:`.writing` and :mod:`.verify`; its public names are here.
"""

from surfacestore.format.header import (
    CODECS, DEFAULT_CODEC, DEGENERATE_TOL, FIELDS, FORMAT, NFIELDS, SHARD_TARGET_BYTES, TABLE_SUFFIX, Header,
    RecordBlock, table_location, table_name, validate_table_name, window_block,
)
from surfacestore.format.reading import Table, open_table
from surfacestore.format.verify import VerifyReport, check_points, verify_table
from surfacestore.format.writing import TableWriter, create_table, shard_records

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
    "shard_records",
    "open_table",
    "verify_table",
    "check_points",
    "DEGENERATE_TOL",
    "table_name",
    "table_location",
    "window_block",
    "validate_table_name",
    "SHARD_TARGET_BYTES",
]
