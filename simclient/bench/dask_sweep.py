"""The sweep's speed-up on 1, 2 and 4 local Dask workers (``simclient bench dask-sweep``).

The same 16 bouncing-ball runs (two laws, two c_r, two stiffnesses, two window sizes; 0.4 s each)
through :func:`simclient.scenarios.sweep.run_sweep` on LocalClusters of 1, 2 and 4 single-threaded
worker processes. Each cluster first runs one warm-up run per worker (the compiled kernels load
from numba's cache in each new process), so the figures are the sweeps proper; medians of
``repeats``.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["run", "report", "SPEC"]

SPEC: dict[str, list[Any]] = {"law": ["hunt-crossley", "flores"], "cr": [0.5, 0.9], "K": [4e9, 5.5e9],
                              "window_ground": [(3, 9), (3, 23)]}


def run(tables: Path, quick: bool = False, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    from simclient.scenarios import Tables
    from simclient.scenarios.sweep import SweepSpec, cluster, run_sweep

    say = progress or (lambda s: None)
    t_end = 0.12 if quick else 0.4
    spec = SweepSpec("bouncing-ball", {"t_end": t_end}, {k: list(v) for k, v in SPEC.items()})
    warm = SweepSpec("bouncing-ball", {"t_end": 0.01}, {"cr": [0.5, 0.6, 0.7, 0.8]})
    where = Tables(folder=str(Path(tables).resolve()))
    repeats = 1 if quick else 3
    wall: dict[int, list[float]] = {}
    for n in (1, 2, 4):
        with cluster(f"local:{n}") as client:
            run_sweep(warm, where, client)
            for _ in range(repeats):
                s = run_sweep(spec, where, client)
                if s["failed"]:
                    raise RuntimeError(f"dask-sweep: failed runs {s['failed']}")
                wall.setdefault(n, []).append(s["wall_s"])
        say(f"{n} worker(s): {statistics.median(wall[n]):.2f} s")
    med = {n: statistics.median(v) for n, v in wall.items()}
    return {"runs": len(spec.runs()), "t_end_s": t_end, "repeats": repeats,
            "wall_s": {str(n): v for n, v in wall.items()}, "median_s": {str(n): v for n, v in med.items()},
            "speedup": {str(n): med[1] / v for n, v in med.items()}}


def report(r: dict[str, Any]) -> str:
    rows = [f"sweep of {r['runs']} bouncing-ball runs ({r['t_end_s']} s each), median of {r['repeats']}:"]
    for n in r["median_s"]:
        rows.append(f"  {n} worker(s): {r['median_s'][n]:6.2f} s   speed-up {r['speedup'][n]:.2f}x")
    return "\n".join(rows)
