"""Soak benchmark of the store (``simclient bench soak --minutes N``).

A store is started on a scratch folder holding a copy-free build of the sample ``ground`` (333^2
points in 81-point records) and a table ``rebuilt`` that is rebuilt from one of two definitions
every few seconds (with ``--overwrite``, as an operator would). Mixed clients run for the whole
time, each on its own keep-alive connection:

- windows: random 3 x 3 windows of ``ground`` through :class:`simclient.io.HttpSource`;
- blocks: random blocks of ``ground`` of up to 8 x 8 records;
- zarr: raw Zarr keys of ``ground`` (``zarr.json``, chunks, byte ranges);
- rebuilt: blocks of ``rebuilt``, checked against the version its ``X-Table-Digest`` names;
- bad: malformed, out-of-range, too-large and unknown-table requests, traversal attempts.

Every body is compared with the expected bytes (computed locally from the definitions). Reported:
requests, intended errors (the bad client's 4xx, and the short moments a rebuilt table is absent or
replaced: 404, 503) and unintended ones, wrong bytes, p50/p99 latency per client kind, and the
store's resident memory sampled every few seconds.
"""

from __future__ import annotations

import statistics
import tempfile
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import psutil

from simclient.bench._registry import TableBuilder
from simclient.bench._server import StoreProcess
from simclient.errors import ParameterError
from simclient.io import HttpSource, KeepAliveTransport, load_npy
from surfacestore.format import RecordBlock

__all__ = ["run", "report"]

REBUILD_EVERY_S = 3.0
RSS_EVERY_S = 5.0


class _Tally:
    """Counts and latencies of one client kind (thread-safe)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests = self.intended = self.unintended = self.wrong = 0
        self.latency: list[float] = []
        self.examples: list[str] = []

    def add(self, dt: float, outcome: str, note: str = "") -> None:
        with self.lock:
            self.requests += 1
            self.latency.append(dt)
            if outcome != "ok":
                setattr(self, outcome, getattr(self, outcome) + 1)
                if outcome in ("unintended", "wrong") and len(self.examples) < 5:
                    self.examples.append(note)

    def summary(self) -> dict[str, Any]:
        lat = sorted(self.latency) or [0.0]
        return {"requests": self.requests, "intended_errors": self.intended, "unintended_errors": self.unintended,
                "wrong_bytes": self.wrong, "p50_ms": statistics.median(lat) * 1e3,
                "p99_ms": lat[int(0.99 * (len(lat) - 1))] * 1e3, "examples": self.examples}


def run(tables: Path, quick: bool = False, progress: Callable[[str], None] | None = None,
        minutes: float | None = None, builder: TableBuilder | None = None) -> dict[str, Any]:
    """Soak the store for ``minutes`` (default 10, 0.3 with ``quick``). ``tables`` is unused: the
    soak builds its own tables in a scratch folder with ``builder`` (required), since it rebuilds
    one of them."""
    if builder is None:
        raise ParameterError("bench soak: builds its own tables: give it a builder (preprocess.samples)")
    sample_spec, parse_surface = builder.sample_spec, builder.parse_surface
    build_surface, sample_points = builder.build_surface, builder.sample_points
    minutes = minutes if minutes is not None else (0.3 if quick else 10.0)
    say = progress or (lambda s: None)
    ground_spec = sample_spec("bouncing_ball.toml", "ground")
    condyle = dict(sample_spec("knee3d.toml", "condyle_medial").definition)
    versions = [parse_surface("rebuilt", condyle), parse_surface("rebuilt", {**condyle, "radius": 0.025})]
    with tempfile.TemporaryDirectory(prefix="soak-") as tmp:
        root = Path(tmp)
        say("building the soak tables")
        ground = build_surface(ground_spec, root)
        expected_ground = ground.read_block(RecordBlock(0, ground.header.n_rec_u, 0, ground.header.n_rec_v))
        expect_rebuilt: dict[str, np.ndarray] = {}
        for spec in versions:
            t = build_surface(spec, root, overwrite=True)
            expect_rebuilt[t.header.digest] = sample_points(spec, 0, spec.grid[0], 0, spec.grid[1])
        zarr_files = {p.relative_to(root / "ground.zarr").as_posix(): p.read_bytes()
                      for p in (root / "ground.zarr").rglob("*") if p.is_file()}
        with StoreProcess(root) as store:
            stop = threading.Event()
            tallies = {k: _Tally() for k in ("windows", "blocks", "zarr", "rebuilt", "bad")}
            rss: list[tuple[float, float]] = []
            rebuilds = [0]
            t_start = time.perf_counter()
            clients = [
                threading.Thread(target=_windows, args=(store.url, expected_ground, tallies["windows"], stop, k))
                for k in range(2)] + [
                threading.Thread(target=_blocks, args=(store.url, expected_ground, tallies["blocks"], stop)),
                threading.Thread(target=_zarr, args=(store.url, zarr_files, tallies["zarr"], stop)),
                threading.Thread(target=_rebuilt, args=(store.url, expect_rebuilt, tallies["rebuilt"], stop)),
                threading.Thread(target=_bad, args=(store.url, tallies["bad"], stop)),
                threading.Thread(target=_rebuilder, args=(build_surface, root, versions, rebuilds, stop))]
            for c in clients:
                c.start()
            assert store.proc is not None
            server = psutil.Process(store.proc.pid)
            end = t_start + minutes * 60
            next_say = t_start
            while time.perf_counter() < end:
                rss.append((time.perf_counter() - t_start, server.memory_info().rss / 2**20))
                if time.perf_counter() >= next_say:
                    n = sum(t.requests for t in tallies.values())
                    say(f"{(time.perf_counter() - t_start) / 60:.1f} / {minutes:g} min: {n} requests, "
                        f"RSS {rss[-1][1]:.0f} MiB")
                    next_say += 60
                time.sleep(min(RSS_EVERY_S, max(0.0, end - time.perf_counter())))
            stop.set()
            for c in clients:
                c.join()
            alive = store.proc.poll() is None
    return _result(minutes, tallies, rss, rebuilds[0], alive)


def _result(minutes: float, tallies: dict[str, _Tally], rss: list[tuple[float, float]], rebuilds: int,
            alive: bool) -> dict[str, Any]:
    settled = [m for t, m in rss if t >= min(60.0, rss[-1][0] / 4)] or [m for _, m in rss]
    kinds = {k: t.summary() for k, t in tallies.items()}
    return {"minutes": minutes, "rebuilds": rebuilds, "store_alive": alive, "clients": kinds,
            "requests": sum(k["requests"] for k in kinds.values()),
            "unintended_errors": sum(k["unintended_errors"] for k in kinds.values()),
            "wrong_bytes": sum(k["wrong_bytes"] for k in kinds.values()),
            "rss_MiB": [[round(t, 1), round(m, 1)] for t, m in rss],
            "rss_settled_min_MiB": min(settled), "rss_settled_max_MiB": max(settled),
            "rss_settled_spread": max(settled) / min(settled) - 1}


def _timed(tally: _Tally, fn: Callable[[], tuple[str, str]]) -> None:
    t = time.perf_counter()
    try:
        outcome, note = fn()
    except Exception as exc:  # a failure of any kind counts, never ends the client
        outcome, note = "unintended", f"{type(exc).__name__}: {exc}"
    tally.add(time.perf_counter() - t, outcome, note)


def _windows(url: str, expected: np.ndarray, tally: _Tally, stop: threading.Event, seed: int) -> None:
    src = HttpSource(f"{url}/v1/surfaces/ground", retries=0)
    h = src.header
    rng = np.random.default_rng(seed)
    while not stop.is_set():
        ri, rj = int(rng.integers(0, h.n_rec_u - 2)), int(rng.integers(0, h.n_rec_v - 2))

        def one() -> tuple[str, str]:
            got = src.read_block(ri, ri + 3, rj, rj + 3)
            i0, i1, j0, j1 = h.block_points(RecordBlock(ri, ri + 3, rj, rj + 3))
            return ("ok", "") if np.array_equal(got, expected[i0:i1, j0:j1]) else ("wrong", f"window {ri},{rj}")
        _timed(tally, one)
    src.close()


def _get(transport: KeepAliveTransport, url: str, headers: dict[str, str] | None = None) -> httpx.Response:
    r = transport.handle_request(httpx.Request("GET", url, headers=headers or {}))
    r.read()
    return r


def _blocks(url: str, expected: np.ndarray, tally: _Tally, stop: threading.Event) -> None:
    transport = KeepAliveTransport()
    rng = np.random.default_rng(7)
    n_u, n_v = 37, 37
    while not stop.is_set():
        ri0, rj0 = int(rng.integers(0, n_u)), int(rng.integers(0, n_v))
        ri1, rj1 = min(ri0 + int(rng.integers(1, 9)), n_u), min(rj0 + int(rng.integers(1, 9)), n_v)

        def one() -> tuple[str, str]:
            r = _get(transport, f"{url}/v1/surfaces/ground/block?ri0={ri0}&ri1={ri1}&rj0={rj0}&rj1={rj1}")
            if r.status_code != 200:
                return "unintended", f"block: HTTP {r.status_code}"
            ok = np.array_equal(load_npy(r.content), expected[ri0 * 9:ri1 * 9, rj0 * 9:rj1 * 9])
            return ("ok", "") if ok else ("wrong", f"block {ri0}-{ri1} x {rj0}-{rj1}")
        _timed(tally, one)
    transport.close()


def _zarr(url: str, files: dict[str, bytes], tally: _Tally, stop: threading.Event) -> None:
    transport = KeepAliveTransport()
    rng = np.random.default_rng(11)
    keys = sorted(files)
    while not stop.is_set():
        key = keys[int(rng.integers(len(keys)))]
        body = files[key]
        a = int(rng.integers(0, len(body)))
        b = int(rng.integers(a, len(body)))
        ranged = bool(rng.integers(2))

        def one() -> tuple[str, str]:
            r = _get(transport, f"{url}/zarr/ground/{key}", {"Range": f"bytes={a}-{b}"} if ranged else None)
            want, status = (body[a:b + 1], 206) if ranged else (body, 200)
            if r.status_code != status:
                return "unintended", f"zarr {key}: HTTP {r.status_code}"
            return ("ok", "") if r.content == want else ("wrong", f"zarr {key} {a}-{b}")
        _timed(tally, one)
    transport.close()


def _rebuilt(url: str, expected: dict[str, np.ndarray], tally: _Tally, stop: threading.Event) -> None:
    transport = KeepAliveTransport()
    rng = np.random.default_rng(13)
    while not stop.is_set():
        ri0, rj0 = int(rng.integers(0, 4)), int(rng.integers(0, 4))

        def one() -> tuple[str, str]:
            r = _get(transport, f"{url}/v1/surfaces/rebuilt/block?ri0={ri0}&ri1={ri0 + 2}&rj0={rj0}&rj1={rj0 + 2}")
            if r.status_code in (404, 503):  # the moment between two versions: intended
                return "intended", ""
            if r.status_code != 200:
                return "unintended", f"rebuilt: HTTP {r.status_code} {r.text[:80]}"
            want = expected.get(r.headers.get("x-table-digest", ""))
            if want is None:
                return "unintended", f"rebuilt: unknown digest {r.headers.get('x-table-digest')}"
            got = load_npy(r.content)
            ok = np.array_equal(got, want[ri0 * 9:ri0 * 9 + got.shape[0], rj0 * 9:rj0 * 9 + got.shape[1]])
            return ("ok", "") if ok else ("wrong", f"rebuilt {ri0},{rj0}")
        _timed(tally, one)
    transport.close()


#: bad requests and the status each must get
BAD = [("/v1/surfaces/ground/block?ri0=0&ri1=40&rj0=0&rj1=1", 422), ("/v1/surfaces/ground/block?ri0=+1&ri1=2&rj0=0&rj1=1", 422),
       ("/v1/surfaces/ground/block?ri0=0&ri1=37&rj0=0&rj1=37", 413), ("/v1/surfaces/nope/records/0/0", 404),
       ("/v1/surfaces/..%2F..%2Fetc/records/0/0", 404), ("/zarr/ground/..%2Fzarr.json", 404),
       ("/v1/surfaces/ground/window?ri=0&rj=0&wu=0&wv=3", 422), ("/v1/surfaces/ground/records/0/0?array=nope", 422)]


def _bad(url: str, tally: _Tally, stop: threading.Event) -> None:
    transport = KeepAliveTransport()
    k = 0
    while not stop.is_set():
        path, status = BAD[k % len(BAD)]
        k += 1

        def one() -> tuple[str, str]:
            r = _get(transport, url + path)
            ok = r.status_code == status and r.headers.get("content-type") == "application/json"
            return ("intended", "") if ok else ("unintended", f"{path}: HTTP {r.status_code}, expected {status}")
        _timed(tally, one)
        time.sleep(0.005)
    transport.close()


def _rebuilder(build_surface: Callable[..., Any], root: Path, versions: list[Any], count: list[int],
               stop: threading.Event) -> None:
    k = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        while not stop.wait(REBUILD_EVERY_S):
            k += 1
            build_surface(versions[k % 2], root, overwrite=True)
            count[0] += 1


def report(res: dict[str, Any]) -> str:
    lines = [f"soak: {res['minutes']:g} min, {res['requests']} requests, {res['rebuilds']} rebuilds; "
             f"unintended errors {res['unintended_errors']}, wrong bytes {res['wrong_bytes']}; store "
             f"{'alive' if res['store_alive'] else 'DEAD'}",
             f"  {'client':9s} {'requests':>9s} {'intended':>9s} {'unintended':>10s} {'wrong':>6s} {'p50 [ms]':>9s} "
             f"{'p99 [ms]':>9s}"]
    for name, c in res["clients"].items():
        lines.append(f"  {name:9s} {c['requests']:9d} {c['intended_errors']:9d} {c['unintended_errors']:10d} "
                     f"{c['wrong_bytes']:6d} {c['p50_ms']:9.2f} {c['p99_ms']:9.2f}")
        lines.extend(f"    e.g. {e}" for e in c["examples"])
    lines.append(f"  store RSS after the first minute: {res['rss_settled_min_MiB']:.0f}-{res['rss_settled_max_MiB']:.0f} "
                 f"MiB (spread {res['rss_settled_spread']:.1%})")
    return "\n".join(lines)
