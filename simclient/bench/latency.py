"""Out of core across a network (``simclient bench latency``): the bouncing ball rolling and
sliding across a large terrain whose table is L ms away.

Tables (built once by the bench, in ``TABLES/latency``): a wavy terrain of ``points`` points (by
default 3163 x 3163, about 10^7, 1.1 GB; records of 9 x 9 points 0.3 mm x 0.6 mm apart, so 0.95 m
x 1.9 m; waves 0.1 mm high and 50 mm long across the travel) and the sample ``ball_rolling``
(poles across the travel) and ``ball_333``, built here with one shard a record row as the terrain
(tables meant for a bucket: a strip of records along v is one ranged request). Runs, each a
``simclient run bouncing-ball --json`` process:

- ``rolling``: ``ball_rolling`` set down on the terrain (1 um above it) at 1 m/s with friction 0.3
  (Hunt-Crossley, restitution 0.5): it slips, then rolls at about 5/7 m/s, its contact point
  travelling round the ball and along the terrain (about 80 ball and 20 terrain window moves, the
  ball's back and forth about each record border it crosses);
- ``sliding``: ``ball_333`` set down the same way at 2 m/s without friction: about 40 moves of the
  terrain's window, 4-5 records each, one every few milliseconds, and none of the ball's.

Each from (a) the table folder (the baseline, as a user runs there: no fetching ahead), (b) a
store serving that folder and (c) the tables uploaded to a local S3 API (moto), both with
``--prefetch`` and behind :class:`~simclient.bench._delay.DelayProxy`, which adds ``L`` ms to
every request (a TCP proxy on loopback: what the client waits for is a real socket's, not a
simulated one), and (d) a store next to the client serving the bucket ``L`` ms away from it: its
first client's run (its record cache cold: every block it serves one upstream round trip of
concurrent record reads) and the next clients' (the records they share held). Rows: the run's
wall time (set-up and integration), the set-up's (opening the tables and reading the first
windows; from a bucket it includes importing its client), the whole process's (what a user
waits for: the interpreter's start and imports too), the time it waited for windows, window
moves, the moves that stalled on a fetch (the worst run's; all of them without prefetch;
``stalls_discarded``, "failed", apart: those of an integrator's failed trial step, whose
detection walked a window off the motion before the step was retried), requests and bytes read
(fetches ahead included; medians), the client's peak RSS, the ratios of the wall and process
times to those of folder runs made back to back with them (each run right after one from the
folder: the machine's drift over the bench cancels), and the CPU time the servers and delay
proxies of the run spent meanwhile ("rig cpu", s: they share the client's cores here, as a
distant store or bucket would not).
Every run's results (impacts, indentations, velocities, steps) are compared with the folder's to
the last bit.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import psutil

from simclient.bench._delay import DelayProxy
from simclient.bench._registry import TableBuilder
from simclient.bench._server import S3Server, ServerProcess, StoreProcess, aws_environment
from simclient.errors import ParameterError

__all__ = ["CASES", "run", "report"]

#: the runs: name -> ``simclient run bouncing-ball`` arguments (the tables' location added)
CASES: dict[str, list[str]] = {
    "rolling": ["--ball", "ball_rolling", "--friction", "0.3", "--vx", "1.0"],
    "sliding": ["--ball", "ball_333", "--vx", "2.0"],
}
_COMMON = ["--gap", "1e-6", "--law", "hunt-crossley", "--cr", "0.5", "--json"]
#: where the tables are read from (the folder is the baseline): a store L ms away; the bucket L ms
#: away; a store next to the client with the bucket L ms away from it, its first client (its record
#: cache cold) and the next ones (what they share held)
SOURCES = ("store", "bucket", "store_bucket_cold", "store_bucket_warm")
#: the summary's values that are results (compared to the last bit), not measurements of the run
_RESULTS = ("impacts", "impact_times_s", "impact_velocities_m_s", "separation_velocities_m_s", "max_indentation_m",
            "contact_durations_s", "rolling", "energy_drift", "steps", "rhs_evaluations")


def terrain(builder: TableBuilder, folder: Path, side: int) -> str:
    """Build (once) the wavy terrain of ``side`` x ``side`` points in 9 x 9-point records at the
    sample ground's spacing (0.3 mm in u, 0.6 mm in v), its v along x as the sample ground's: waves
    of 0.1 mm and 50 mm along x (crests across the travel; the steepest slope 0.7 deg, the
    sharpest crest 0.63 m in radius: a ball at 1 m/s stays on it); returns its name."""
    name = f"waves_{side}"
    half_u, half_v = 0.15 * (side - 1) / 1000, 0.3 * (side - 1) / 1000
    spec = builder.parse_surface(name, {"family": "waves", "amplitude": 1e-4, "wavelength": 0.05,
                                        "u_range": [-half_u, half_u], "v_range": [-half_v, half_v],
                                        "grid": [side, side], "record": [9, 9],
                                        "placement": {"rotation_axis": [0, 0, 1], "rotation_deg": -90}})
    builder.ensure_table(spec, folder, quiet=True)
    return name


def _run(where: Sequence[str], ground: str, case: str, *, t_end: float, x0: float, prefetch: bool = True,
         env: dict[str, str] | None = None, rig: Sequence[ServerProcess] = ()) -> dict[str, Any]:
    """One run of ``case`` in its own process; its summary, with the process's wall time
    (``process_s``) and the CPU time (s) the servers ``rig`` and this process (its delay proxies)
    spent meanwhile (``rig_cpu_s``: on the client's cores)."""
    cmd = [sys.executable, "-m", "simclient.cli", "run", "bouncing-ball", *where, "--ground", ground, *CASES[case],
           *_COMMON, "--t-end", str(t_end), "--x0", str(x0), *(["--prefetch"] if prefetch else [])]
    procs = [psutil.Process(), *(psutil.Process(s.proc.pid) for s in rig if s.proc is not None)]
    def cpu() -> float:
        return sum(sum(p.cpu_times()[:2]) for p in procs)
    c, t = cpu(), time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=900)
    process_s, rig_cpu_s = time.perf_counter() - t, cpu() - c
    if r.returncode != 0:
        raise RuntimeError(f"bench latency: {' '.join(cmd)} failed: {(r.stderr or r.stdout)[-1500:]}")
    return {**json.loads(r.stdout), "process_s": process_s, "rig_cpu_s": rig_cpu_s}


def _paired(remote: Callable[[], dict[str, Any]], local: Callable[[], dict[str, Any]], n: int) -> dict[str, Any]:
    """The row of ``n`` runs of ``remote``, each right after a run of ``local`` (back to back: the
    machine's drift over the bench cancels in the ratios), against those runs of ``local``."""
    pairs = [(local(), remote()) for _ in range(n)]
    return _row([r for _, r in pairs], _row([f for f, _ in pairs], None))


def _row(runs: list[dict[str, Any]], local: dict[str, Any] | None) -> dict[str, Any]:
    """Medians over repeated runs of one case and source (the stalls and the peak RSS: the
    worst run's); with the folder's row ``local``, ``same_results`` compares every run's results
    with the folder's."""
    last = runs[-1]
    def median(key: str) -> float:
        return statistics.median(r[key] for r in runs)
    def windows(r: dict[str, Any], *keys: str) -> int:  # (summed over the run's windows)
        return sum(w.get(k, 0) for w in r["windows"].values() for k in keys)
    wall = statistics.median(r["setup_s"] + r["wall_s"] for r in runs)
    row = {"wall_s": wall, "process_s": median("process_s"), "rig_cpu_s": median("rig_cpu_s"),
           "setup_s": median("setup_s"), "wait_s": median("window_wait_s"),
           "updates": windows(last, "updates"),
           # (the worst run's stalls; without prefetch every move is one)
           "stalls": max(sum(w.get("stalls", w["updates"]) for w in r["windows"].values()) for r in runs),
           "stalls_discarded": max(windows(r, "stalls_discarded") for r in runs),
           # (the fetches ahead a run's end finds running are not counted: the medians)
           "requests": round(statistics.median(windows(r, "requests", "prefetch_requests") for r in runs)),
           "bytes": round(statistics.median(windows(r, "bytes_read", "prefetch_bytes") for r in runs)),
           "peak_rss_MB": max(r["peak_rss_MB"] for r in runs)}
    if local is not None:
        row["ratio"] = wall / local["wall_s"]
        row["process_ratio"] = row["process_s"] / local["process_s"]
        row["rss_over_local_MB"] = row["peak_rss_MB"] - local["peak_rss_MB"]
        row["same_results"] = all(r.get(k) == local["results"][k] for r in runs for k in _RESULTS)
    else:
        row["results"] = {k: last.get(k) for k in _RESULTS}
    return row


def run(tables: Path, quick: bool = False, progress: Callable[[str], None] | None = None,
        builder: TableBuilder | None = None, latencies_ms: Sequence[float] | None = None,
        side: int = 3163, t_end: float = 0.4, larger_side: int | None = None) -> dict[str, Any]:
    """The runs of the module's docstring at each latency (ms per request; default 0, 5, 20, 50
    and 100, with ``quick`` 0 and 20); ``side`` the terrain's points per side (3163: 10^7 points),
    ``t_end`` the simulated time (s). The ball starts 0.4 m before the terrain's middle (or 90 % of
    the way to its edge on a smaller one). With ``larger_side``, the same runs through the store
    20 ms away over a terrain of that many points a side too (the same spacing, so the same path):
    the bytes they read, against the first terrain's (``table_size``)."""
    if latencies_ms is None:
        latencies_ms = (0, 20) if quick else (0, 5, 20, 50, 100)
    if builder is None:
        raise ParameterError("bench latency: builds its terrain: give it a builder (preprocess.samples)")
    from surfacestore import objects

    say = progress or (lambda s: None)
    repeats = 1 if quick else 3
    folder = tables / "latency"
    folder.mkdir(parents=True, exist_ok=True)
    say(f"building the {side} x {side}-point terrain (once)")
    ground = terrain(builder, folder, side)
    x0 = -min(0.4, 0.9 * 0.3 * (side - 1) / 1000)
    for name in ("ball_rolling", "ball_333"):  # (one shard a record row, as the terrain: tables for a bucket)
        spec = builder.sample_spec("bouncing_ball.toml", name)
        builder.ensure_table(dataclasses.replace(spec, shard=math.ceil(spec.grid[1] / spec.record[1])), folder, quiet=True)
    out: dict[str, Any] = {"terrain": {"name": ground, "points": side * side,
                                       "bytes": sum(f.stat().st_size for f in (folder / f"{ground}.zarr").rglob("*")
                                                    if f.is_file())},
                           "latencies_ms": list(latencies_ms), "repeats": repeats, "t_end": t_end, "x0": x0, "cases": {}}
    def folder_run(case: str) -> Callable[[], dict[str, Any]]:  # (the baseline: as a user runs from a folder)
        return lambda: _run(["--tables", str(folder)], ground, case, t_end=t_end, x0=x0, prefetch=False)
    for case in CASES:
        say(f"{case}: from the folder")
        out["cases"][case] = {"folder": _row([folder_run(case)() for _ in range(repeats)], None),
                              **{source: {} for source in SOURCES}}
    with ExitStack() as stack:
        store = stack.enter_context(StoreProcess(folder))
        s3 = stack.enter_context(S3Server())
        say("uploading the tables to the local S3 API")
        with aws_environment(s3.aws_env()):
            for name in (ground, "ball_rolling", "ball_333"):
                objects.publish(folder / f"{name}.zarr", f"s3://{s3.bucket}/latency/{name}.zarr", overwrite=True)
        for ms in latencies_ms:
            with DelayProxy(store.url, ms / 1e3) as to_store, DelayProxy(s3.url, ms / 1e3) as to_bucket:
                bucket_env = {**s3.aws_env(), "AWS_ENDPOINT_URL": to_bucket.url}
                for case in CASES:
                    say(f"{case}: {ms:g} ms away, through the store and from the bucket")
                    rows, at = out["cases"][case], str(ms)
                    sources: list[tuple[str, list[str], dict[str, str] | None, list[ServerProcess]]] = [
                        ("store", ["--store", to_store.url], None, [store]),
                        ("bucket", ["--tables", f"s3://{s3.bucket}/latency"], bucket_env, [s3])]
                    for source, where, env, rig in sources:
                        def remote(where: list[str] = where, env: dict[str, str] | None = env,
                                   rig: list[ServerProcess] = rig) -> dict[str, Any]:
                            return _run(where, ground, case, t_end=t_end, x0=x0, env=env, rig=rig)
                        rows[source][at] = _paired(remote, folder_run(case), repeats)
                    say(f"{case}: a store next to the client, the bucket {ms:g} ms away from it")
                    with StoreProcess(f"s3://{s3.bucket}/latency", env=bucket_env) as near:
                        def through(near: StoreProcess = near) -> dict[str, Any]:
                            return _run(["--store", near.url], ground, case, t_end=t_end, x0=x0, rig=[near, s3])
                        rows["store_bucket_cold"][at] = _paired(through, folder_run(case), 1)
                        rows["store_bucket_warm"][at] = _paired(through, folder_run(case), repeats)
    if larger_side is not None:
        out["table_size"] = _table_size(builder, folder, ground, larger_side, t_end, x0, say, repeats)
    return out


def _table_size(builder: TableBuilder, folder: Path, ground: str, side: int, t_end: float, x0: float,
                say: Callable[[str], None], repeats: int = 3) -> dict[str, Any]:
    """Bytes read by each case through the store 20 ms away over ``ground`` and over a terrain of
    ``side`` points a side (built once), medians of ``repeats`` runs, and their ratio: what a run
    reads follows its path, not its table."""
    say(f"building the {side} x {side}-point terrain (once)")
    larger = terrain(builder, folder, side)
    rows: dict[str, Any] = {"terrain": larger, "points": side * side}
    with StoreProcess(folder) as store, DelayProxy(store.url, 0.02) as to_store:
        for case in CASES:
            say(f"{case}: over both terrains, 20 ms away")
            got = {g: _row([_run(["--store", to_store.url], g, case, t_end=t_end, x0=x0) for _ in range(repeats)],
                            None)["bytes"] for g in (ground, larger)}
            rows[case] = {"bytes": got[ground], "bytes_larger": got[larger], "ratio": got[larger] / got[ground]}
    return rows


def report(r: dict[str, Any]) -> str:
    t = r["terrain"]
    lines = [f"runs across a network: terrain {t['name']} ({t['points']:.3g} points, {t['bytes'] / 1e9:.2f} GB); "
             f"median of {r['repeats']} (stalls: the worst run's); wall = set-up + integration"]
    head = (f"  {'':8s} {'source':17s} {'ms':>5s} {'wall s':>7s} {'setup':>6s} {'ratio':>6s} {'proc s':>7s} {'ratio':>6s} "
            f"{'wait s':>7s} {'moves':>6s} {'stalls':>6s} {'failed':>6s} {'requests':>8s} {'MB':>7s} {'RSS MB':>7s} "
            f"{'rig cpu':>7s} same")
    for case, rows in r["cases"].items():
        lines.append(head)
        lines.append(_report_row(case, "folder", "-", {**rows["folder"], "ratio": 1.0, "process_ratio": 1.0}))
        lines += [_report_row(case, source, ms, x) for source in SOURCES for ms, x in rows[source].items()]
    if "table_size" in r:
        z = r["table_size"]
        lines.append(f"bytes read through the store 20 ms away, {t['points']:.3g} vs {z['points']:.3g} points:")
        lines += [f"  {case:8s} {z[case]['bytes'] / 1e6:7.2f} MB vs {z[case]['bytes_larger'] / 1e6:7.2f} MB "
                  f"({z[case]['ratio']:.3f}x)" for case in CASES]
    return "\n".join(lines)


def _report_row(case: str, source: str, ms: str, x: dict[str, Any]) -> str:
    remote = "same_results" in x  # (the folder's row: no fetching ahead, nothing to compare)
    same = ("yes" if x["same_results"] else "NO") if remote else ""
    failed = f"{x['stalls_discarded']:6d}" if remote else f"{'-':>6s}"
    return (f"  {case:8s} {source:17s} {ms:>5s} {x['wall_s']:7.3f} {x['setup_s']:6.3f} {x['ratio']:6.2f} "
            f"{x['process_s']:7.3f} {x['process_ratio']:6.2f} {x['wait_s']:7.3f} {x['updates']:6d} {x['stalls']:6d} {failed} "
            f"{x['requests']:8d} "
            f"{x['bytes'] / 1e6:7.1f} {x['peak_rss_MB']:7.1f} {x['rig_cpu_s']:7.3f} {same}")
