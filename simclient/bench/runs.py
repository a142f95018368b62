"""Benchmark of the scenarios' runs (``simclient bench scenarios``).

Every registered scenario whose tables the folder holds runs with its defaults in this process:
one run first (compiled kernels loaded from their cache, tables opened once by the operating
system), then ``repeats`` more. Reported per scenario: the median, fastest and slowest whole run
(building the model, the integration or solve, the histories after it; no plots) and the median
``wall_s`` the run reports of itself (the integration or the solve). A scenario whose tables are
fitted from data outside the project is skipped, saying which definition builds them.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sample_surfaces import missing_real_tables
from simclient.scenarios import SCENARIOS, Tables

__all__ = ["run", "report"]


def run(tables: Path, quick: bool = False, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    repeats = 1 if quick else 7  # (quick: a smoke run; its "median" is one run)
    say = progress or (lambda _message: None)
    rows: list[dict[str, Any]] = []
    for name, cls in SCENARIOS.items():
        scenario, params = cls(), cls.Params()
        missing = missing_real_tables(tables, scenario.table_names(params).values())
        if missing:
            rows.append({"scenario": name, "skipped": "needs " + ", ".join(
                f"{table} (sample_surfaces/real/{definition.name})" for table, definition in missing.items())})
            continue
        say(f"scenario {name}: {repeats + 1} runs")
        totals, walls = [], []
        for k in range(repeats + 1):
            t0 = time.perf_counter()
            summary = scenario.run(params, Tables(folder=tables))
            total = time.perf_counter() - t0
            if not summary.ok:
                rows.append({"scenario": name, "failed": str(summary.get("message"))})
                break
            if k:  # (the first run loads what later runs find loaded)
                totals.append(total)
                walls.append(float(summary["wall_s"]))
        else:
            rows.append({"scenario": name, "runs": repeats, "median_s": statistics.median(totals),
                         "min_s": min(totals), "max_s": max(totals), "median_wall_s": statistics.median(walls)})
    return {"repeats": repeats, "rows": rows}


def report(r: dict[str, Any]) -> str:
    lines = [f"scenario runs in one process, after a first run (median of {r['repeats']}; seconds)",
             f"{'scenario':<18} {'median':>8} {'min':>8} {'max':>8} {'wall_s':>8}"]
    for row in r["rows"]:
        if "median_s" in row:
            lines.append(f"{row['scenario']:<18} {row['median_s']:8.3f} {row['min_s']:8.3f} {row['max_s']:8.3f} "
                         f"{row['median_wall_s']:8.3f}")
        elif "skipped" in row:
            lines.append(f"{row['scenario']:<18} skipped: {row['skipped']}")
        else:
            lines.append(f"{row['scenario']:<18} FAILED: {row['failed']}")
    return "\n".join(lines)
