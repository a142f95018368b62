"""Type information of the package: its public names (loaded on first use, see __init__)."""

from ._plots import (
    draw_compartments as draw_compartments, pressure_levels as pressure_levels, pyplot as pyplot,
    save_table as save_table,
)
from ._series import (
    save_pressure_vtk as save_pressure_vtk, save_pressure_zarr as save_pressure_zarr,
    save_surfaces_vtk as save_surfaces_vtk,
)

__all__ = [
    "pyplot", "save_table", "pressure_levels", "draw_compartments", "save_surfaces_vtk", "save_pressure_zarr",
    "save_pressure_vtk",
]
