"""VTK files for ParaView: grids of points (a table, a window's records, an element grid) as
structured grids, and time series of them collected by ``.pvd`` files.

Written with the ``vtk`` wheel (Kitware's own bindings: the XML formats ParaView reads natively,
with no conversion layer), imported when a file is written. Every grid is a ``vtkStructuredGrid``
(``.vts``): points in metres, the point and cell data a caller gives (a table's ``Normals``,
tangents, parameters; a record's indices, :func:`record_cells`).
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from surfacestore.errors import StorageUnavailable

__all__ = ["write_grid", "write_pvd", "record_cells"]


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
        raise StorageUnavailable(f"{path}: cannot write there ({exc.strerror}: {exc.filename})") from None
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
        raise StorageUnavailable(f"{path}: VTK could not write the file (a full disk?); nothing was written")
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
