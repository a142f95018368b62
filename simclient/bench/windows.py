"""Window-size benchmark (``simclient bench windows``): the thesis' Table 6.3 with the bouncing ball.

Ball: the sample ``ball`` (998001 points in 9 x 9 records); ground: ``ground`` (333 x 333 points
in 37 x 37 records of 81 points). The five (ball window, ground window) configurations of Table 6.3
run against the real store (started as a local service) and against the local source, plus a
"whole tables in memory" baseline (both tables read into memory first, windows spanning them).
Per run: wall and CPU time of setup + integration (median of repeats), the ratio to run 1 as the
thesis computes it, window statistics, and the peak of memory allocated by the run (tracemalloc,
in a separate untimed pass, since tracing slows allocation down).
"""

from __future__ import annotations

import dataclasses
import statistics
import time
import tracemalloc
from pathlib import Path
from typing import Any

from simclient.bench._registry import TableBuilder
from simclient.bench._server import serve_store
from simclient.errors import ParameterError
from simclient.scenarios import locate
from simclient.scenarios.bouncing_ball import BallParams, bouncing_ball

__all__ = ["TABLE_6_3", "run", "report", "plot", "run_sweep", "report_sweep"]

#: Table 6.3: (ball window, ground window, CPU time s, ratio %)
TABLE_6_3 = [((9, 9), (37, 37), 397.0, 100.00), ((3, 3), (37, 37), 390.0, 98.34), ((9, 9), (3, 23), 369.0, 93.02),
             ((3, 3), (3, 23), 362.0, 91.20), ((3, 3), (3, 9), 357.0, 89.93)]


def _one(ball: str, ground: str, wb: tuple[int, int], wg: tuple[int, int], memory: bool) -> dict[str, Any]:
    t0, c0 = time.perf_counter(), time.process_time()
    s = bouncing_ball(ball, ground, BallParams(window_ball=wb, window_ground=wg), in_memory=memory)
    return {"wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0, "summary": s}


def _measure(ball: str, ground: str, wb: tuple[int, int], wg: tuple[int, int], repeats: int,
             memory: bool = False) -> dict[str, Any]:
    runs = [_one(ball, ground, wb, wg, memory) for _ in range(repeats)]
    tracemalloc.start()
    _one(ball, ground, wb, wg, memory)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    s = runs[-1]["summary"]
    return {"ball_window": list(wb), "ground_window": list(wg),
            "wall_s": statistics.median(r["wall_s"] for r in runs),
            "cpu_s": statistics.median(r["cpu_s"] for r in runs),
            "integration_wall_s": statistics.median(r["summary"]["wall_s"] for r in runs),
            "peak_alloc_MB": peak / 1e6, "impacts": s["impacts"],
            "max_indentation_m": s["max_indentation_m"], "windows": s["windows"]}


def run(tables: Path, quick: bool = False, progress: Any = None) -> dict[str, Any]:
    """Run Table 6.3 on the local source and over HTTP, plus the in-memory baseline."""
    repeats = 3 if quick else 7
    say = progress or (lambda s: None)
    runs: list[dict[str, Any]] = []
    with serve_store(tables) as url:
        for source, loc in (("http", {"store": url}), ("local", {"tables": tables})):
            ball, ground = locate("ball", **loc), locate("ground", **loc)
            base = None
            for k, (wb, wg, t_thesis, r_thesis) in enumerate(TABLE_6_3, start=1):
                say(f"{source} run {k}: ball {wb[0]}x{wb[1]}, ground {wg[0]}x{wg[1]}")
                r = _measure(ball, ground, wb, wg, repeats)
                base = base or r["cpu_s"]
                r.update(source=source, run=k, ratio=r["cpu_s"] / base, thesis_cpu_s=t_thesis, thesis_ratio=r_thesis / 100)
                runs.append(r)
    say("memory baseline")
    r = _measure(locate("ball", tables=tables), locate("ground", tables=tables), (9, 9), (37, 37), repeats, memory=True)
    r.update(source="memory", run=0, ratio=r["cpu_s"] / runs[0]["cpu_s"] if runs else 1.0)
    runs.append(r)
    return {"repeats": repeats, "runs": runs}


def report(res: dict[str, Any]) -> str:
    lines = [f"Table 6.3 replication: bouncing ball 0.4 s, ball 998001 points in 81 records, ground 110889 points "
             f"in 1369 records (medians of {res['repeats']})",
             f"{'source':7s} {'run':>3s} {'ball':>5s} {'ground':>6s} {'wall [s]':>9s} {'cpu [s]':>8s} {'ratio':>7s} "
             f"{'thesis cpu':>10s} {'thesis':>7s} {'updates b/g':>11s} {'records':>8s} {'MB':>7s} {'requests':>8s} "
             f"{'wait [ms]':>9s} {'alloc MB':>8s}"]
    for r in res["runs"]:
        w = r["windows"]
        lines.append(
            f"{r['source']:7s} {r['run']:3d} {'x'.join(map(str, r['ball_window'])):>5s} "
            f"{'x'.join(map(str, r['ground_window'])):>6s} {r['wall_s']:9.3f} {r['cpu_s']:8.3f} {100 * r['ratio']:6.2f}% "
            f"{r.get('thesis_cpu_s', float('nan')):10.0f} {100 * r.get('thesis_ratio', float('nan')):6.2f}% "
            f"{w['ball']['updates']:5d}/{w['ground']['updates']:<5d} "
            f"{w['ball']['records_fetched'] + w['ground']['records_fetched']:8d} "
            f"{(w['ball']['bytes_fetched'] + w['ground']['bytes_fetched']) / 1e6:7.2f} "
            f"{w['ball']['requests'] + w['ground']['requests']:8d} "
            f"{1e3 * (w['ball']['wait_s'] + w['ground']['wait_s']):9.1f} {r['peak_alloc_MB']:8.1f}")
    return "\n".join(lines)


def plot(res: dict[str, Any], path: Path) -> Path:
    """Bar chart of the CPU-time ratios to run 1, ours (per source) next to the thesis'."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(8, 4))
    x = np.arange(1, 6)
    ax.bar(x - 0.27, [t[3] for t in TABLE_6_3], 0.27, label="thesis (CPU time)")
    for k, source in enumerate(("http", "local")):
        ratios = [100 * r["ratio"] for r in res["runs"] if r["source"] == source]
        ax.bar(x + k * 0.27, ratios, 0.27, label=f"this project, {source} source")
    ax.set(xticks=x, xticklabels=[f"{t[0][0]}x{t[0][1]} / {t[1][0]}x{t[1][1]}" for t in TABLE_6_3],
           ylabel="CPU time / run 1 [%]", xlabel="ball window / ground window (records)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


#: record sizes of the sweep (333 = 3 * 111 = 9 * 37 points)
SWEEP_RECORDS = (3, 9, 37, 111)
SWEEP_WINDOWS = ((3, 3), (5, 5), (9, 9))


def sweep_tables(tables: Path, builder: TableBuilder) -> dict[int, Path]:
    """Ground tables of the sample geometry with records of 3^2, 9^2, 37^2 and 111^2 points."""
    spec = builder.sample_spec("bouncing_ball.toml", "ground")
    return {r: tables / "ground.zarr" if r == 9 else
            Path(builder.ensure_table(dataclasses.replace(spec, name=f"ground_r{r}", record=(r, r)), tables))
            for r in SWEEP_RECORDS}


def run_sweep(tables: Path, quick: bool = False, progress: Any = None,
              builder: TableBuilder | None = None) -> dict[str, Any]:
    """Record size x window extent x prefetch for a ball that crosses many ground records
    (vx = 0.4 m/s from x = -80 mm: 160 mm of travel in 0.4 s), over the HTTP store; the tables
    of other record sizes built by ``builder`` (required; the command line passes
    :mod:`preprocess.samples`)."""
    if builder is None:
        raise ParameterError("bench sweep: builds tables of other record sizes: give it a builder (preprocess.samples)")
    say = progress or (lambda s: None)
    grounds = sweep_tables(tables, builder)
    params = BallParams(vx=0.4, x0=-0.08)
    rows = []
    with serve_store(tables, "--max-block-records", "100000") as url:
        for r, path in grounds.items():
            for wg in SWEEP_WINDOWS[:2] if quick else SWEEP_WINDOWS:
                for prefetch in (False, True):
                    say(f"records {r}x{r}, ground window {wg[0]}x{wg[1]}, prefetch {prefetch}")
                    walls = []
                    for _ in range(1 if quick else 3):
                        s = bouncing_ball(locate("ball_333", store=url), locate(path.name[:-5], store=url),
                                          dataclasses.replace(params, window_ground=wg, prefetch=prefetch))
                        walls.append(s["wall_s"])
                    g = s["windows"]["ground"]
                    rows.append({"record_points": r * r, "ground_window": g["extent"], "prefetch": prefetch,
                                 "wall_s": statistics.median(walls), "impacts": s["impacts"],
                                 "updates": g["updates"], "requests": g["requests"], "bytes": g["bytes_fetched"],
                                 "wait_s": g["wait_s"], "hidden": g.get("hidden", 0), "stalls": g.get("stalls", g["updates"])})
    return {"rows": rows}


def report_sweep(res: dict[str, Any]) -> str:
    lines = ["sweep: ball 0.4 m/s over the ground (HTTP store), medians",
             f"{'record':>7s} {'window':>7s} {'prefetch':>8s} {'wall [s]':>8s} {'updates':>7s} {'requests':>8s} "
             f"{'MB':>7s} {'wait [ms]':>9s} {'hidden':>6s} {'stalls':>6s}"]
    for r in res["rows"]:
        lines.append(f"{r['record_points']:7d} {'x'.join(map(str, r['ground_window'])):>7s} {str(r['prefetch']):>8s} "
                     f"{r['wall_s']:8.3f} {r['updates']:7d} {r['requests']:8d} {r['bytes'] / 1e6:7.2f} "
                     f"{1e3 * r['wait_s']:9.1f} {r['hidden']:6d} {r['stalls']:6d}")
    return "\n".join(lines)
