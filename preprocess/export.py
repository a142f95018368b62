"""VTK output for ParaView: tables as structured grids, and time series collected by ``.pvd`` files.

Written with the ``vtk`` wheel (Kitware's own bindings: the XML formats ParaView reads natively,
with no conversion layer). Every grid is a ``vtkStructuredGrid`` (``.vts``): points in metres,
point data ``Normals`` (unit outward normals), ``tu`` and ``tv`` (tangents), ``uv`` (surface
parameters) and any extra field, and cell data ``record_i``, ``record_j`` and ``record`` (the
record holding each cell's first corner), so ParaView can colour a table by record.
``preprocess export TABLE --format vtk --out FILE.vts [--stride N]``.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from preprocess.errors import PreprocessError
from surfacestore.format import RecordBlock, Table

__all__ = ["write_grid", "write_pvd", "export_table", "MAX_EXPORT_POINTS"]

#: the most points an export writes (a larger table needs --stride)
MAX_EXPORT_POINTS = 20_000_000


def write_grid(path: str | os.PathLike[str], xyz: np.ndarray, point_data: Mapping[str, np.ndarray] | None = None,
               cell_data: Mapping[str, np.ndarray] | None = None) -> Path:
    """Write the grid of points ``xyz`` (shape ``(nu, nv, 3)``, m) as a VTK XML structured grid
    (``.vts``) with ``point_data`` (arrays ``(nu, nv)`` or ``(nu, nv, k)``) and ``cell_data``
    (arrays ``(nu-1, nv-1)``). Returns the path."""
    import vtk
    from vtk.util.numpy_support import numpy_to_vtk

    nu, nv = xyz.shape[:2]
    grid = vtk.vtkStructuredGrid()
    grid.SetDimensions(nv, nu, 1)  # VTK's first index runs fastest: v along x
    pts = vtk.vtkPoints()
    pts.SetData(numpy_to_vtk(np.ascontiguousarray(xyz.reshape(-1, 3), dtype=np.float64), deep=True))
    grid.SetPoints(pts)

    def add(target: Any, name: str, a: np.ndarray, n: int) -> None:
        arr = numpy_to_vtk(np.ascontiguousarray(a.reshape(n, -1) if a.ndim > 2 else a.reshape(n)), deep=True)
        arr.SetName(name)
        target.AddArray(arr)
    for name, a in (point_data or {}).items():
        add(grid.GetPointData(), name, np.asarray(a), nu * nv)
    for name, a in (cell_data or {}).items():
        add(grid.GetCellData(), name, np.asarray(a), (nu - 1) * (nv - 1))
    if "Normals" in (point_data or {}):
        grid.GetPointData().SetActiveNormals("Normals")
    path = Path(path)
    # written beside, then renamed: a write that fails (a full disk) leaves an earlier file whole
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        open(tmp, "wb").close()  # (VTK would say only that it failed, at length, on stderr)
    except OSError as exc:
        raise PreprocessError(f"{path}: cannot write there ({exc.strerror}: {exc.filename})") from None
    writer = vtk.vtkXMLStructuredGridWriter()
    writer.SetFileName(str(tmp))
    writer.SetInputData(grid)
    writer.SetDataModeToAppended()
    writer.SetCompressorTypeToZLib()
    shown = vtk.vtkObject.GetGlobalWarningDisplay()
    vtk.vtkObject.GlobalWarningDisplayOff()  # its failure is reported here, in one line
    try:
        ok = writer.Write() and writer.GetErrorCode() == 0
    finally:
        vtk.vtkObject.SetGlobalWarningDisplay(shown)
    if not ok:
        tmp.unlink(missing_ok=True)
        raise PreprocessError(f"{path}: VTK could not write the file (a full disk?); nothing was written")
    os.replace(tmp, path)
    return path


def write_pvd(path: str | os.PathLike[str], datasets: Iterable[tuple[float, str, str | os.PathLike[str]]]) -> Path:
    """Write a ParaView collection (``.pvd``): ``datasets`` are ``(time_s, part, file)``; files
    are stored relative to the collection's folder, parts become blocks of one dataset."""
    path = Path(path)
    root = ET.Element("VTKFile", type="Collection", version="0.1", byte_order="LittleEndian")
    coll = ET.SubElement(root, "Collection")
    parts: dict[str, int] = {}
    for t, part, f in datasets:
        rel = os.path.relpath(f, path.parent)
        ET.SubElement(coll, "DataSet", timestep=repr(float(t)), group="", part=str(parts.setdefault(part, len(parts))),
                      name=part, file=rel)
    ET.indent(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(path, xml_declaration=True, encoding="utf-8")
    return path


def record_cells(rows: np.ndarray, cols: np.ndarray, u_pts: int, v_pts: int, n_rec_v: int) -> dict[str, np.ndarray]:
    """Cell data naming the record of each cell's first corner, for grid rows ``rows`` and
    columns ``cols`` (point indices of the table)."""
    ri = np.broadcast_to((rows[:-1] // u_pts)[:, None], (len(rows) - 1, len(cols) - 1))
    rj = np.broadcast_to((cols[:-1] // v_pts)[None, :], (len(rows) - 1, len(cols) - 1))
    return {"record_i": ri.astype(np.int32), "record_j": rj.astype(np.int32), "record": (ri * n_rec_v + rj).astype(np.int32)}


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
