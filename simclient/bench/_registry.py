"""The benchmarks by name."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from simclient.bench import contact, store, windows

__all__ = ["Bench", "BENCHES"]


@dataclass(frozen=True)
class Bench:
    """One benchmark: ``run(tables, quick, progress) -> dict`` and ``report(result) -> str``."""

    description: str
    run: Callable[..., dict[str, Any]]
    report: Callable[[dict[str, Any]], str]


#: the benchmarks by name (``simclient bench all`` runs them in this order)
BENCHES: dict[str, Bench] = {
    "store": Bench("store latency and throughput over loopback", store.run, store.report),
    "contact": Bench("contact-evaluation cost and interpolation error", contact.run, contact.report),
    "windows": Bench("the thesis' Table 6.3: window sizes with the bouncing ball", windows.run, windows.report),
    "sweep": Bench("record sizes x window extents x prefetch for a travelling contact", windows.run_sweep,
                   windows.report_sweep),
}
