"""Benchmark of the surface store over loopback (``simclient bench store``).

Latency (p50, p99) of one 81-point record, a 3 x 3 window of 81-point records and one
111 x 111-point record, fetched from the real store (uvicorn, one worker) by ``HttpSource`` (its
default keep-alive transport), against, in the same run: (a) the local source reading the same
block in-process, (b) a bare FastAPI endpoint returning the same bytes from memory, fetched and
parsed the same way (the HTTP floor), (c) the same window as 9 separate record requests, and (d)
the same block through a default ``httpx.Client`` (the client stack's share). Then throughput
(windows/s, MB/s) with 1, 8 and 32 concurrent clients fetching random 3 x 3 windows.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from simclient.bench._server import serve, serve_store
from simclient.io import HttpSource, KeepAliveTransport, LocalSource, load_npy

__all__ = ["run", "report", "bare_app", "latency", "throughput"]


def bare_app() -> Any:
    """A FastAPI app that returns fixed NPY bytes from memory: the floor of any FastAPI endpoint.

    The bytes are those of ``BENCH_BARE_FILE`` (an NPY file), served at ``/v1/bare``.
    """
    from fastapi import FastAPI
    from fastapi.responses import Response

    body = Path(os.environ["BENCH_BARE_FILE"]).read_bytes()
    app = FastAPI()

    @app.get("/v1/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/v1/bare")
    async def bare() -> Response:
        return Response(body, media_type="application/x-npy")

    return app


def latency(fns: dict[str, Callable[[], Any]], n: int) -> dict[str, dict[str, float]]:
    """p50/p99 of each function, calls interleaved so that all see the same machine noise."""
    for _ in range(min(50, n)):  # warm up (caches, connections)
        for fn in fns.values():
            fn()
    ts: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(n):
        for k, fn in fns.items():
            t = time.perf_counter()
            fn()
            ts[k].append(time.perf_counter() - t)
    out = {}
    for k, v in ts.items():
        v.sort()
        out[k] = {"p50_ms": statistics.median(v) * 1e3, "p99_ms": v[int(0.99 * (len(v) - 1))] * 1e3}
    return out


def throughput(url: str | list[str], name: str, n_rec: tuple[int, int], clients: int,
               seconds: float) -> dict[str, float]:
    """Windows/s and MB/s of ``clients`` threads, each on its own keep-alive connection, fetching
    random 3 x 3 windows of table ``name`` for ``seconds``; with several base URLs (replicas),
    client ``k`` uses ``url[k % len(url)]``."""
    urls = [url] if isinstance(url, str) else url
    counts = [0] * clients
    nbytes = [0] * clients

    def worker(k: int) -> None:
        rng = np.random.default_rng(k)
        transport = KeepAliveTransport()  # each client its own connection, as separate simulations
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            ri, rj = rng.integers(n_rec[0]), rng.integers(n_rec[1])
            r = transport.handle_request(httpx.Request(
                "GET", f"{urls[k % len(urls)]}/v1/surfaces/{name}/window?ri={ri}&rj={rj}&wu=3&wv=3"))
            r.read()
            r.raise_for_status()
            counts[k] += 1
            nbytes[k] += len(r.content)
        transport.close()

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(clients)]
    t = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    dt = time.perf_counter() - t
    return {"clients": clients, "windows_per_s": sum(counts) / dt, "MB_per_s": sum(nbytes) / dt / 1e6}


def run(tables: Path, quick: bool = False, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run the benchmark on the sample tables in ``tables`` (``ground``: 81-point records;
    ``ball``: 111 x 111-point records). Returns the figures as a dict."""
    n = 300 if quick else 2000
    seconds = 2.0 if quick else 5.0
    say = progress or (lambda s: None)
    local_ground = LocalSource(tables / "ground.zarr")
    local_ball = LocalSource(tables / "ball.zarr")
    cases = {  # name: (table, block)
        "record_81": ("ground", (18, 19, 18, 19)),
        "window_3x3_81": ("ground", (17, 20, 17, 20)),
        "record_111x111": ("ball", (4, 5, 4, 5)),
    }
    locals_ = {"ground": local_ground, "ball": local_ball}
    out: dict[str, Any] = {"requests_per_case": n, "latency": {}, "throughput": []}
    with serve_store(tables) as url, tempfile.TemporaryDirectory() as tmp:
        sources = {name: HttpSource(f"{url}/v1/surfaces/{name}") for name in locals_}
        client = httpx.Client(timeout=30)
        transport = KeepAliveTransport()
        for case, (table, blk) in cases.items():
            say(f"latency {case}")
            ri0, ri1, rj0, rj1 = blk
            expect = locals_[table].read_block(*blk)
            np.testing.assert_array_equal(sources[table].read_block(*blk), expect)
            bare_file = Path(tmp) / f"{case}.npy"
            np.save(bare_file, expect)
            with serve([sys.executable, "-m", "uvicorn", "simclient.bench.store:bare_app", "--factory",
                        "--log-level", "warning"], env={"BENCH_BARE_FILE": str(bare_file)}) as bare:
                bare_request = httpx.Request("GET", bare + "/v1/bare")
                block_url = f"{url}/v1/surfaces/{table}/block?ri0={ri0}&ri1={ri1}&rj0={rj0}&rj1={rj1}"
                fns = {"http": lambda: sources[table].read_block(*blk),
                       "local": lambda: locals_[table].read_block(*blk),
                       "bare_endpoint": lambda: load_npy(transport.handle_request(bare_request).read()),
                       "httpx_client": lambda: load_npy(client.get(block_url).content)}
                row: dict[str, Any] = {"bytes": expect.nbytes, **latency(fns, n)}
            if case == "window_3x3_81":
                def separate() -> None:
                    for ri in range(ri0, ri1):
                        for rj in range(rj0, rj1):
                            sources[table].read_block(ri, ri + 1, rj, rj + 1)
                row["separate_requests"] = latency({"s": separate}, max(50, n // 4))["s"]
                row["ratio_to_bare"] = row["http"]["p50_ms"] / row["bare_endpoint"]["p50_ms"]
                row["speedup_vs_separate"] = row["separate_requests"]["p50_ms"] / row["http"]["p50_ms"]
            out["latency"][case] = row
        h = local_ground.header
        for clients in (1, 8, 32):
            say(f"throughput {clients} clients")
            out["throughput"].append(throughput(url, "ground", (h.n_rec_u, h.n_rec_v), clients, seconds))
        client.close()
        transport.close()
    return out


def report(res: dict[str, Any]) -> str:
    lines = [f"latency over loopback ({res['requests_per_case']} requests each; ms)",
             f"{'case':16s} {'bytes':>9s} {'http p50':>9s} {'p99':>7s} {'local p50':>10s} {'bare p50':>9s} "
             f"{'9 reqs p50':>11s} {'httpx.Client p50':>17s}"]
    for case, row in res["latency"].items():
        sep = row.get("separate_requests", {}).get("p50_ms")
        lines.append(f"{case:16s} {row['bytes']:9d} {row['http']['p50_ms']:9.3f} {row['http']['p99_ms']:7.3f} "
                     f"{row['local']['p50_ms']:10.3f} {row['bare_endpoint']['p50_ms']:9.3f} "
                     f"{'' if sep is None else f'{sep:11.3f}':>11s} {row['httpx_client']['p50_ms']:17.3f}")
    w = res["latency"]["window_3x3_81"]
    lines.append(f"3x3 window: {w['ratio_to_bare']:.2f}x the bare endpoint, {w['speedup_vs_separate']:.1f}x faster "
                 "than 9 separate requests")
    lines.append("throughput, random 3 x 3 windows of 81-point records")
    for t in res["throughput"]:
        lines.append(f"  {t['clients']:2d} clients: {t['windows_per_s']:8.0f} windows/s  {t['MB_per_s']:7.1f} MB/s")
    return "\n".join(lines)
