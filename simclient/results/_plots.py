"""What every scenario's report uses: matplotlib, imported when a plot is made, and histories
written as NPZ and CSV."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["pyplot", "save_table"]


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
