"""The benchmarks by name (each module imported when its benchmark runs)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

__all__ = ["Bench", "BENCHES", "TableBuilder"]


class TableBuilder(Protocol):
    """What builds tables for the benchmarks that need their own (record sizes, a rebuilt table):
    :mod:`preprocess.samples`, which the command line passes (``simclient`` reads tables only)."""

    def sample_spec(self, file_name: str, name: str) -> Any: ...

    def ensure_table(self, spec: Any, out: str | Path, quiet: bool = ..., missing_only: bool = ...) -> str: ...

    def parse_surface(self, name: str, definition: dict[str, Any]) -> Any: ...

    def build_surface(self, spec: Any, out: str | Path, overwrite: bool = ...) -> Any: ...

    def sample_points(self, spec: Any, i0: int, i1: int, j0: int, j1: int) -> Any: ...


@dataclass(frozen=True)
class Bench:
    """One benchmark: ``run(tables, quick, progress) -> dict`` and ``report(result) -> str``, the
    functions ``run_name`` and ``report_name`` of the module ``simclient.bench.<module>``."""

    description: str
    module: str
    in_all: bool = True  # run by ``simclient bench all``
    builds: bool = False  # takes a TableBuilder as ``builder``
    run_name: str = "run"
    report_name: str = "report"

    def _function(self, name: str) -> Callable[..., Any]:
        return getattr(importlib.import_module(f"simclient.bench.{self.module}"), name)

    def run(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return self._function(self.run_name)(*args, **kwargs)

    def report(self, result: dict[str, Any]) -> str:
        return self._function(self.report_name)(result)


#: the benchmarks by name (``simclient bench all`` runs those ``in_all``, in this order)
BENCHES: dict[str, Bench] = {
    "store": Bench("store latency and throughput over loopback", "store"),
    "contact": Bench("contact-evaluation cost and interpolation error", "contact"),
    "windows": Bench("the thesis' Table 6.3: window sizes with the bouncing ball", "windows"),
    "sweep": Bench("record sizes x window extents x prefetch for a travelling contact", "windows",
                   run_name="run_sweep", report_name="report_sweep", builds=True),
    "scenarios": Bench("every scenario's run with its defaults, timed in one process", "runs"),
    "dask-sweep": Bench("simclient sweep's speed-up on 1, 2 and 4 local Dask workers", "dask_sweep", in_all=False),
    "scale-out": Bench("store throughput with 1 and 2 replicas; reading records from object storage", "scale",
                       in_all=False),
    "peers": Bench("the bouncing ball and whole runs against OpenSim 4.6 (optional extra 'peers'), scipy on the "
                   "analytic ball, and the command line's start-up", "peers", in_all=False),
    "latency": Bench("the ball rolling and sliding across a 10^7-point terrain through a store and from a bucket "
                     "L ms away (--latency-ms)", "latency", in_all=False, builds=True),
    "soak": Bench("the store under mixed clients and rebuilds for --minutes (errors, wrong bytes, latency, memory)",
                  "soak", in_all=False, builds=True),
}
