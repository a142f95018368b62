"""A table as a VTK structured grid for ParaView (:mod:`surfacestore.vtk` writes it).

Written with the ``vtk`` wheel (Kitware's own bindings: the XML formats ParaView reads natively,
with no conversion layer). Every grid is a ``vtkStructuredGrid`` (``.vts``): points in metres,
point data ``Normals`` (unit outward normals), ``tu`` and ``tv`` (tangents), ``uv`` (surface
parameters) and any extra field, and cell data ``record_i``, ``record_j`` and ``record`` (the
record holding each cell's first corner), so ParaView can colour a table by record.
``preprocess export TABLE --format vtk --out FILE.vts [--stride N]``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from preprocess.errors import PreprocessError
from surfacestore.format import RecordBlock, Table
from surfacestore.vtk import record_cells, write_grid

__all__ = ["export_table", "MAX_EXPORT_POINTS"]

#: the most points an export writes (a larger table needs --stride)
MAX_EXPORT_POINTS = 20_000_000


def export_table(table: Table, out: str | os.PathLike[str], stride: int = 1, progress: Any = None) -> Path:
    """Write ``table`` as a ``.vts`` (see the module's notes), every ``stride``-th point in u and
    v (the last row and column always included). ``progress(n)`` is called per record row."""
    h = table.header
    if stride < 1:
        raise PreprocessError(f"--stride must be >= 1, got {stride}")
    rows = np.unique(np.r_[np.arange(0, h.u_npts, stride), h.u_npts - 1])
    cols = np.unique(np.r_[np.arange(0, h.v_npts, stride), h.v_npts - 1])
    if len(rows) * len(cols) > MAX_EXPORT_POINTS:
        need = int(np.ceil(np.sqrt(h.u_npts * h.v_npts / MAX_EXPORT_POINTS)))
        raise PreprocessError(f"{table.name}: {len(rows) * len(cols)} points to export, more than "
                              f"{MAX_EXPORT_POINTS}; use --stride {need} or more")
    fields = ("points", *h.extras)
    data = {f: np.empty((len(rows), len(cols)) + ((14,) if f == "points" else ())) for f in fields}
    for ri in range(h.n_rec_u):  # one record row at a time: memory stays at one row of records
        sel_r = rows[(rows >= ri * h.u_pts) & (rows < (ri + 1) * h.u_pts)]
        if len(sel_r):
            at_r = np.searchsorted(rows, sel_r)
            for f in fields:
                block = table.read_block(RecordBlock(ri, ri + 1, 0, h.n_rec_v), f)
                data[f][at_r] = block[sel_r - ri * h.u_pts][:, cols]
        if progress is not None:
            progress(1)
    p = data["points"]
    point_data = {"Normals": p[..., 5:8], "tu": p[..., 8:11], "tv": p[..., 11:14], "uv": p[..., 0:2],
                  **{f: data[f] for f in h.extras}}
    return write_grid(out, p[..., 2:5], point_data, record_cells(rows, cols, h.u_pts, h.v_pts, h.n_rec_v))
