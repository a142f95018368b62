"""What every scenario's report uses: matplotlib, imported when a plot is made, and histories
written as NPZ and CSV."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["pyplot", "save_table", "pressure_levels", "draw_compartments"]


def pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend (files, no screen), imported when a plot is made."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_table(history: dict[str, Any], npz: Path, csv: Path) -> None:
    """A history (equal-length columns by name) as NPZ and as CSV with a header row."""
    np.savez(npz, **history)
    keys = list(history)
    np.savetxt(csv, np.column_stack([history[k] for k in keys]), delimiter=",", header=",".join(keys), comments="")


def pressure_levels(peak: float, n: int = 12) -> np.ndarray:
    """Contour levels from 0 to at least ``peak`` (any unit) at round steps (1, 2, 2.5 or 5 times a
    power of ten), about ``n`` of them: the colour bar's ticks read 0, 0.5, 1, ..., not 0.3046, ...."""
    from matplotlib.ticker import MaxNLocator

    levels = np.asarray(MaxNLocator(nbins=n, steps=[1, 2, 2.5, 5, 10]).tick_values(0.0, max(peak, 1e-12)))
    return levels[levels >= 0]


def draw_compartments(ax: Any, maps: dict[str, tuple[Any, np.ndarray]], levels: np.ndarray) -> Any:
    """Pressure maps of elastic-foundation compartments on the x-z plane of their frame (mm, MPa):
    ``maps`` names each compartment's element grid and pressures (Pa, one per element); each is
    filled in ``levels`` (MPa), outlined where its elements are usable and labelled with its name at
    its centre. Returns the last contour set (for a colour bar)."""
    cs = None
    for name, (grid, pressure) in maps.items():
        X = grid.centre[:, 0].reshape(grid.shape) * 1e3
        Z = grid.centre[:, 2].reshape(grid.shape) * 1e3
        usable = grid.usable.reshape(grid.shape)
        P = np.where(usable, np.nan_to_num(np.asarray(pressure, float).reshape(grid.shape)) / 1e6, np.nan)
        cs = ax.contourf(Z, X, P, levels=levels, cmap="viridis", extend="max")
        ax.contour(Z, X, usable.astype(float), levels=[0.5], colors="grey", linewidths=0.5)
        ax.text(float(Z[usable].mean()), float(X[usable].max()), name, ha="center", va="bottom", fontsize=9)
    return cs
