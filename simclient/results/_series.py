"""Result series for ParaView and the store's pages: the bodies' surfaces over a run (VTK series and
their ``.pvd`` collection) and pressure maps over time (a Zarr v3 group the store's ``/results``
page plays, or a VTK series). Units: SI (m, s, Pa)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from simclient.errors import SimClientError
from surfacestore.vtk import record_cells, write_grid, write_pvd

__all__ = ["save_surfaces_vtk", "save_pressure_zarr", "save_pressure_vtk"]


def save_surfaces_vtk(result: Any, system: Any, out: Path, name: str, frames: int = 100,
                      max_side: int = 64, progress: Callable[[str], None] | None = None) -> list[Path]:
    """The bodies' surfaces over a run (a :class:`simclient.dynamics.SimulationResult` of ``system``),
    for ParaView: at ``frames`` instants, every contact
    surface as the records its window holds then (the window following the contact as in the
    run; at most ``max_side`` points a side), placed by its body's pose (global frame, m), with the
    normals and the record indices; one ``.vts`` per surface and frame under ``out/vtk/`` and the
    collection ``out/NAME.pvd`` (open it and press play). ``progress`` hears how far it has come
    about once a second."""
    res = result
    surfaces: dict[int, tuple[str, Any]] = {}
    for c in system.contacts:
        for side in (c.i, c.j):
            surfaces.setdefault(id(side), (side.window.name, side))
    entries = []
    said = time.monotonic()
    for k, t in enumerate(np.linspace(0.0, float(res.t[-1]), frames)):
        if progress is not None and time.monotonic() - said >= 1.0:
            progress(f"ParaView frame {k + 1} of {frames}")
            said = time.monotonic()
        try:
            system.place_windows(res.sol(t))  # the windows on the contact points, as in the run
        except SimClientError:
            pass  # no contact point at this pose: the windows stay where they are
        for label, surface in surfaces.values():
            w = surface.window
            pts = w.points()
            # at most max_side points a side (the last row and column kept): frames stay small
            su, sv = (np.unique(np.r_[np.arange(0, n, -(-n // max_side)), n - 1]) for n in pts.shape[:2])
            pts = pts[su][:, sv]
            R, origin = system.surface_pose(surface)
            h, b = w.header, w.block
            rows, cols = b.ri0 * h.u_pts + su, b.rj0 * h.v_pts + sv
            f = write_grid(out / "vtk" / f"{name}_{label}_{k:04d}.vts", pts[..., 2:5] @ R.T + origin,
                           {"Normals": pts[..., 5:8] @ R.T, "uv": pts[..., 0:2]},
                           record_cells(rows, cols, h.u_pts, h.v_pts, h.n_rec_v))
            entries.append((t, label, f))
    return [write_pvd(out / f"{name}.pvd", entries)]


def save_pressure_zarr(path: Path, t: np.ndarray, grids: dict[str, np.ndarray], maps: dict[str, np.ndarray],
                       attrs: dict[str, Any]) -> Path:
    """A pressure-map series as a Zarr v3 group (what the store's ``/results`` page plays): ``t_s``
    (s), per compartment ``NAME`` the maps ``(times, nu, nv)`` in Pa (NaN: no usable element), one
    time step per chunk, and the element centres' ``NAME_x_m``/``NAME_z_m`` from ``grids[NAME]``
    (``(nu, nv, 3)``, m); attributes ``units: Pa`` and ``attrs``."""
    import zarr

    root = zarr.open_group(str(path), mode="w", zarr_format=3)
    root.attrs.update({"units": "Pa", **attrs})
    root.create_array("t_s", data=np.asarray(t, dtype=float))
    for name, m in maps.items():
        arr = root.create_array(name, shape=m.shape, chunks=(1, *m.shape[1:]), dtype="f8", fill_value=np.nan)
        arr[:] = m
        for axis, k in (("x_m", 0), ("z_m", 2)):
            root.create_array(f"{name}_{axis}", data=np.ascontiguousarray(grids[name][..., k]))
    return path


def save_pressure_vtk(out: Path, name: str, t: np.ndarray, grids: dict[str, np.ndarray],
                      maps: dict[str, np.ndarray]) -> list[Path]:
    """A pressure-map series for ParaView: per time step and compartment, the element grid
    ``grids[c]`` (element centres, ``(nu, nv, 3)``, m) with point data ``pressure_Pa`` from
    ``maps[c]`` (``(times, nu, nv)``, Pa, NaN where no element is usable); ``out/vtk/*.vts`` and
    the collection ``out/NAME.pvd``."""
    entries = []
    for k, tk in enumerate(t):
        for comp, xyz in grids.items():
            f = write_grid(out / "vtk" / f"{name}_{comp}_{k:04d}.vts", xyz, {"pressure_Pa": maps[comp][k]})
            entries.append((float(tk), comp, f))
    return [write_pvd(out / f"{name}.pvd", entries)]
