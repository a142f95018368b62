"""Compile the numba kernels once, into numba's on-disk cache (``simclient warmup``; ``dev.py``
runs it at set-up).

The kernels are compiled with ``cache=True``: the first process that calls one compiles it (some
45 s for all of them on a 2-core machine) and every later process loads the machine code from the
cache beside the sources. This runs short versions of the scenarios that call every kernel family
(3D point contact and interpolation, the planar profile contact, the elastic foundation's ray
casts) on small sample tables built in a temporary folder, so the first real run after an install
does not pay for the compilation.

It first deletes the package's cached kernels: numba checks a cached kernel against its own source
file only, not against the kernels it calls from other files, so after an in-place update (a pull,
an edit) a kernel whose file did not change would keep running the old code of its callees.
``dev.py`` runs the warm-up again whenever the package's sources change.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from numba.core.dispatcher import Dispatcher

from simclient.scenarios._base import SCENARIOS, Tables
from simclient.scenarios._tables import ensure_sample_tables

__all__ = ["warm_up", "clear_kernel_cache"]

#: scenario -> (parameters, table overrides): short runs on small tables
RUNS: dict[str, tuple[dict[str, float], dict[str, str]]] = {
    "bouncing-ball": ({"t_end": 0.06}, {"ball": "ball_33"}),
    "knee2d": ({"t_end": 0.02}, {}),
    "knee3d": ({"final_flexion_deg": 10.0}, {}),  # the compiled system with ligaments and two contacts
    "prosthetic-knee": ({"t_end": 0.05}, {}),
}


def _kernel_cache_dirs() -> set[Path]:
    """The folders numba caches this package's kernels in, as its own dispatchers report them:
    beside the sources by default, under ``NUMBA_CACHE_DIR`` when that is set, in the user-wide
    cache where the sources are read-only."""
    import simclient.contact
    import simclient.dynamics
    import simclient.geometry  # noqa: F401  (the packages that define kernels)

    return {Path(obj.stats.cache_path) for name, module in list(sys.modules.items())
            if name.startswith("simclient.") for obj in vars(module).values()
            if isinstance(obj, Dispatcher) and obj.stats.cache_path}


def clear_kernel_cache() -> int:
    """Delete numba's cached kernels of this package (index and data files, wherever
    :func:`_kernel_cache_dirs` says they are); return how many files were deleted."""
    files = [f for folder in _kernel_cache_dirs() for pattern in ("*.nbi", "*.nbc") for f in folder.glob(pattern)]
    for f in files:
        f.unlink(missing_ok=True)
    return len(files)


def warm_up(progress: Callable[[str], None] | None = None) -> float:
    """Compile every kernel afresh (the cache cleared first): run the short scenarios, a batched
    contact solve and an elastic-foundation press; return the wall time (s)."""
    from simclient.scenarios.validate import run_cases

    say = progress or (lambda s: None)
    t0 = time.perf_counter()
    say(f"cleared {clear_kernel_cache()} cached kernel files")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        runs = {}
        for name, (params, overrides) in RUNS.items():
            cls = SCENARIOS[name]
            roles = {**cls().table_names(cls.Params()), **overrides}
            ensure_sample_tables(folder, names=roles.values())
            say(f"compiling what {name} uses")
            runs[name] = cls().run(cls.Params(**params), Tables(folder=str(folder), overrides=overrides))
        # the batched solve along a sequence of poses (a trajectory's analysis, a placement sweep)
        ball = runs["bouncing-ball"].artifacts
        R_i, c_i = ball["system"].surface_pose(ball["contact"].i)
        ball["contact"].pair.detect_many(np.stack([R_i, R_i]), np.stack([c_i, c_i]),
                                         *ball["system"].surface_pose(ball["contact"].j))
        ensure_sample_tables(folder, names=["ef_layer", "ef_sphere"])
        say("compiling the elastic foundation")
        run_cases(folder, ["ef-sphere-linear"])
        from simclient.scenarios.artificial_knee import MATERIALS

        MATERIALS["nonlinear"].pressure(np.array([1e-5]), np.array([1e-3]))  # its compiled pressure solve
    return time.perf_counter() - t0
