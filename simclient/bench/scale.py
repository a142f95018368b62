"""Scaling out the store (``simclient bench scale-out``): throughput with one and two replicas,
and record reads from object storage against a local folder.

Replicas: random 3 x 3 windows of 81-point records (the ``ground`` table) fetched by 8 and 16
client threads for a few seconds from (a) one store process, (b) two store processes with the
clients split between them (the client's own round robin, ``Tables(store="A,B")``), (c) the same
two behind ``deploy/nginx.conf`` (when nginx is installed). Cases are interleaved and repeated;
medians. On a 2-core machine the clients, the stores and the proxy share the same two cores, so
this measures how far a second replica helps when the load generator competes with it.

Object storage: one 81-point record and one 3 x 3 window of them read directly (``LocalSource``)
from the table's folder and from the same table uploaded to a local S3 API (moto, from the test
extras), then through a store serving that bucket with its record cache off; p50 of interleaved
calls and the ratio to the folder. And a window from a bucket 20 ms away (a delay added to each
request): the records fetched concurrently, as tables on object storage do, and one by one.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from simclient.bench._server import NginxProxy, S3Server, StoreProcess, aws_environment, find_nginx
from simclient.bench.store import latency, throughput
from simclient.io import HttpSource, LocalSource

__all__ = ["run", "report"]


def _replicas(tables: Path, quick: bool, say: Callable[[str], None]) -> dict[str, Any]:
    seconds, repeats = (2.0, 1) if quick else (4.0, 3)
    n_rec = LocalSource(tables / "ground.zarr").header
    grid = (n_rec.n_rec_u, n_rec.n_rec_v)
    with ExitStack() as stack:
        stores = [stack.enter_context(StoreProcess(tables)) for _ in range(2)]
        targets: dict[str, str | list[str]] = {"1 replica": stores[0].url,
                                               "2 replicas, client round robin": [s.url for s in stores]}
        if find_nginx() is not None:
            targets["2 replicas behind nginx"] = stack.enter_context(NginxProxy([s.url for s in stores])).url
        rows: dict[str, dict[int, list[float]]] = {k: {} for k in targets}
        for clients in (8, 16):
            for _ in range(repeats):
                for case, url in targets.items():
                    say(f"{case}, {clients} clients")
                    r = throughput(url, "ground", grid, clients, seconds)
                    rows[case].setdefault(clients, []).append(r["windows_per_s"])
    med = {case: {str(c): statistics.median(v) for c, v in by.items()} for case, by in rows.items()}
    base = med["1 replica"]
    return {"seconds": seconds, "repeats": repeats, "windows_per_s": med,
            "ratio_to_one": {case: {c: v / base[c] for c, v in by.items()} for case, by in med.items()}}


def _object_storage(tables: Path, quick: bool, say: Callable[[str], None]) -> dict[str, Any]:
    from surfacestore import objects

    n = 50 if quick else 300
    say("starting a local S3 API and uploading the ground table")
    with S3Server() as s3, aws_environment(s3.aws_env()):
        url = f"s3://{s3.bucket}/bench/ground.zarr"
        objects.publish(tables / "ground.zarr", url, overwrite=True)
        folder, bucket = LocalSource(tables / "ground.zarr"), LocalSource(url)
        with StoreProcess(f"s3://{s3.bucket}/bench", "--cache-mb", "0") as store:
            http = HttpSource(f"{store.url}/v1/surfaces/ground")
            out = {}
            for case, blk in {"record_81": (18, 19, 18, 19), "window_3x3_81": (17, 20, 17, 20)}.items():
                say(f"object storage: {case}")
                lat = latency({"folder": lambda: folder.read_block(*blk), "s3_direct": lambda: bucket.read_block(*blk),
                                "store_over_s3": lambda: http.read_block(*blk)}, n)
                out[case] = {k: v["p50_ms"] for k, v in lat.items()}
                out[case]["s3_direct_ratio"] = out[case]["s3_direct"] / out[case]["folder"]
                out[case]["store_over_s3_ratio"] = out[case]["store_over_s3"] / out[case]["folder"]
        slow = _slow_bucket(url, 10 if quick else 30)
    return {"requests": n, "p50_ms": out, "slow_bucket": slow}


def _slow_bucket(url: str, n: int, delay_s: float = 0.02) -> dict[str, float]:
    """A 3 x 3 window read directly from a bucket ``delay_s`` away (a cloud round trip, added to
    every request of the local S3 API): the records fetched concurrently (the default) and one
    after the other. Against the local API alone both are bound by its request handling."""
    import time

    from surfacestore import objects
    from surfacestore.format import RecordBlock, Table

    table = Table(url)
    read = objects.ObjectFiles.read

    def slow_read(self: objects.ObjectFiles, rel: str, limit: int) -> bytes:
        time.sleep(delay_s)
        return read(self, rel, limit)
    keys = list(RecordBlock(17, 20, 17, 20).records())
    objects.ObjectFiles.read = slow_read  # type: ignore[method-assign]
    try:
        lat = latency({"concurrent": lambda: table.read_records(keys),
                       "one_at_a_time": lambda: [table.read_record(ri, rj) for ri, rj in keys]}, n)
    finally:
        objects.ObjectFiles.read = read  # type: ignore[method-assign]
    return {"delay_ms": delay_s * 1e3, **{k: v["p50_ms"] for k, v in lat.items()}}


def run(tables: Path, quick: bool = False, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    say = progress or (lambda s: None)
    return {"replicas": _replicas(tables, quick, say), "object_storage": _object_storage(tables, quick, say)}


def report(r: dict[str, Any]) -> str:
    rep = r["replicas"]
    lines = [f"store throughput, random 3 x 3 windows of 81-point records (median of {rep['repeats']} x "
             f"{rep['seconds']:g} s; windows/s, ratio to one replica)"]
    for case, by in rep["windows_per_s"].items():
        cells = "   ".join(f"{c} clients: {v:7.0f} ({rep['ratio_to_one'][case][c]:.2f}x)" for c, v in by.items())
        lines.append(f"  {case:32s} {cells}")
    obj = r["object_storage"]
    lines.append(f"reading from object storage (local S3 API; p50 of {obj['requests']} calls, ms; ratio to the folder)")
    for case, row in obj["p50_ms"].items():
        lines.append(f"  {case:14s} folder {row['folder']:7.3f}   s3 direct {row['s3_direct']:7.3f} "
                     f"({row['s3_direct_ratio']:.1f}x)   store over s3, no cache {row['store_over_s3']:7.3f} "
                     f"({row['store_over_s3_ratio']:.1f}x)")
    slow = obj["slow_bucket"]
    lines.append(f"  3 x 3 window, bucket {slow['delay_ms']:g} ms away: concurrent {slow['concurrent']:.1f} ms, "
                 f"one at a time {slow['one_at_a_time']:.1f} ms")
    return "\n".join(lines)
