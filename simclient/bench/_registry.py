"""The benchmarks by name."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from simclient.bench import contact, dask_sweep, peers, runs, scale, soak, store, windows

__all__ = ["Bench", "BENCHES"]


@dataclass(frozen=True)
class Bench:
    """One benchmark: ``run(tables, quick, progress) -> dict`` and ``report(result) -> str``."""

    description: str
    run: Callable[..., dict[str, Any]]
    report: Callable[[dict[str, Any]], str]
    in_all: bool = True  # run by ``simclient bench all``


#: the benchmarks by name (``simclient bench all`` runs those ``in_all``, in this order)
BENCHES: dict[str, Bench] = {
    "store": Bench("store latency and throughput over loopback", store.run, store.report),
    "contact": Bench("contact-evaluation cost and interpolation error", contact.run, contact.report),
    "windows": Bench("the thesis' Table 6.3: window sizes with the bouncing ball", windows.run, windows.report),
    "sweep": Bench("record sizes x window extents x prefetch for a travelling contact", windows.run_sweep,
                   windows.report_sweep),
    "scenarios": Bench("every scenario's run with its defaults, timed in one process", runs.run, runs.report),
    "dask-sweep": Bench("simclient sweep's speed-up on 1, 2 and 4 local Dask workers", dask_sweep.run, dask_sweep.report,
                        in_all=False),
    "scale-out": Bench("store throughput with 1 and 2 replicas; reading records from object storage", scale.run,
                       scale.report, in_all=False),
    "peers": Bench("the bouncing ball against OpenSim 4.6 (optional extra 'peers') and scipy on the analytic ball",
                   peers.run, peers.report, in_all=False),
    "soak": Bench("the store under mixed clients and rebuilds for --minutes (errors, wrong bytes, latency, memory)",
                  soak.run, soak.report, in_all=False),
}
