"""Compile the numba kernels once, into numba's on-disk cache (``simclient warmup``; ``dev.py``
runs it at set-up).

The kernels are compiled with ``cache=True``: the first process that calls one compiles it (a few
seconds for all of them) and every later process loads the machine code from the cache beside the
sources. This runs short versions of the scenarios that call every kernel family (3D point
contact and interpolation, the planar profile contact, the elastic foundation's ray casts) on
small sample tables built in a temporary folder, so the first real run after an install does not
pay for the compilation.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from simclient.scenarios._base import SCENARIOS, Tables
from simclient.scenarios._tables import ensure_sample_tables

__all__ = ["warm_up"]

#: scenario -> (parameters, table overrides): short runs on small tables
RUNS: dict[str, tuple[dict[str, float], dict[str, str]]] = {
    "bouncing-ball": ({"t_end": 0.06}, {"ball": "ball_33"}),
    "knee2d": ({"t_end": 0.02}, {}),
    "prosthetic-knee": ({"t_end": 0.05}, {}),
}


def warm_up(progress: Callable[[str], None] | None = None) -> float:
    """Run the short scenarios and an elastic-foundation press; return the wall time (s)."""
    from simclient.scenarios.validate import run_cases

    say = progress or (lambda s: None)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name, (params, overrides) in RUNS.items():
            cls = SCENARIOS[name]
            roles = {**cls().table_names(cls.Params()), **overrides}
            ensure_sample_tables(folder, names=roles.values())
            say(f"compiling what {name} uses")
            cls().run(cls.Params(**params), Tables(folder=str(folder), overrides=overrides))
        ensure_sample_tables(folder, names=["ef_layer", "ef_sphere"])
        say("compiling the elastic foundation")
        run_cases(folder, ["ef-sphere-linear"])
        from simclient.scenarios.artificial_knee import MATERIALS

        MATERIALS["nonlinear"].pressure(np.array([1e-5]), np.array([1e-3]))  # its compiled pressure solve
    return time.perf_counter() - t0
