"""Benchmarks in quick mode: their output is checked for sanity (not for speed)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # (the whole module: see `python3 dev.py test --fast`)


def test_bench_windows_quick(sample_tables, tmp_path):
    r = subprocess.run([sys.executable, "-m", "simclient.cli", "bench", "windows", "--quick", "--json",
                        "--tables", str(sample_tables), "--out", str(tmp_path)], capture_output=True, text=True,
                       timeout=900)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    runs = res["runs"]
    assert [(x["source"], x["run"]) for x in runs] == [(s, k) for s in ("http", "local") for k in range(1, 6)] + [
        ("memory", 0)]
    for x in runs:
        assert x["impacts"] == 4 and x["wall_s"] > 0 and x["ratio"] > 0
        assert x["windows"]["ball"]["updates"] == 0  # the ball's window never moves (thesis)
        # only run 5's 3 x 9 ground window must be re-centred (thesis, Table 6.3)
        assert (x["windows"]["ground"]["updates"] > 0) == (x["run"] == 5)
    assert {x["ratio"] for x in runs if x["run"] == 1} == {1.0}
    assert (tmp_path / "windows_ratio.png").stat().st_size > 1000


def test_bench_contact_and_store_quick(sample_tables):
    r = subprocess.run([sys.executable, "-m", "simclient.cli", "bench", "contact", "--quick", "--json", "--tables",
                        str(sample_tables)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["us_per_eval"] > 0 and res["iterations"] >= 1
    errs = {(e["table"], e["interpolation"]): e for e in res["error"]}
    for table in ("ball_33", "ball_333", "ball"):
        assert errs[table, "bilinear"]["max_error_m"] <= errs[table, "bilinear"]["chordal_bound_m"]
        assert errs[table, "hermite"]["max_error_m"] < errs[table, "bilinear"]["max_error_m"]


def test_bench_soak_quick(sample_tables):
    r = subprocess.run([sys.executable, "-m", "simclient.cli", "bench", "soak", "--minutes", "0.25", "--json",
                        "--tables", str(sample_tables)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["store_alive"] and res["rebuilds"] >= 2
    assert res["unintended_errors"] == 0 and res["wrong_bytes"] == 0, res["clients"]
    assert all(c["requests"] > 50 for c in res["clients"].values())
    assert res["clients"]["bad"]["intended_errors"] == res["clients"]["bad"]["requests"]


def test_bench_peers_quick(sample_tables):
    """Ours against the analytic ball and, where OpenSim is installed, against OpenSim: the same
    largest indentation (Hertz, 30.014 um; OpenSim's stiffness mapped to ours), the energy kept."""
    r = subprocess.run([sys.executable, "-m", "simclient.cli", "bench", "peers", "--quick", "--json", "--tables",
                        str(sample_tables)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    rows = res["rows"]
    for case in ("ours (tables, DOP853-jit rtol 1e-10)", "ours (tables, DOP853 rtol 1e-10)",
                 "scipy DOP853, analytic ball (rtol 1e-10)"):
        assert abs(rows[case]["max_indentation_um"] - 30.014) < 0.002 and abs(rows[case]["energy_change"]) < 1e-8
    # the same steps, but for one where round-off tips a step-size choice (as in tests/dynamics/test_compiled.py)
    jit, ref = rows["ours (tables, DOP853-jit rtol 1e-10)"]["rhs"], rows["ours (tables, DOP853 rtol 1e-10)"]["rhs"]
    assert abs(jit - ref) <= 0.01 * ref
    assert all(row["wall_ms"] > 0 for row in res["whole"].values())
    if "opensim" in res:
        assert "not installed" in res["opensim"]
    else:
        osim = rows["OpenSim 4.6 Hunt-Crossley, accuracy 1e-08"]
        assert abs(osim["max_indentation_um"] - 30.014) < 0.01 and res["ratio_in_turns"] > 0


def test_bench_scenarios_quick(sample_tables):
    """Every scenario timed with its defaults, or skipped where its real-data tables are missing
    (saying which definition builds them); a run's own ``wall_s`` is part of the whole run."""
    from sample_surfaces import missing_real_tables
    from simclient.scenarios import SCENARIOS

    r = subprocess.run([sys.executable, "-m", "simclient.cli", "bench", "scenarios", "--quick", "--json", "--tables",
                        str(sample_tables)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    rows = {row["scenario"]: row for row in json.loads(r.stdout)["rows"]}
    assert set(rows) == set(SCENARIOS)
    for name, row in rows.items():
        missing = missing_real_tables(sample_tables, SCENARIOS[name]().table_names(SCENARIOS[name].Params()).values())
        if missing:
            assert all(table in row["skipped"] and definition.name in row["skipped"]
                       for table, definition in missing.items()), row
        else:
            assert row["runs"] == 1 and 0 < row["min_s"] <= row["median_s"] <= row["max_s"], row
            assert 0 < row["median_wall_s"] <= row["max_s"], row


def test_delay_proxy_adds_its_latency_to_each_request_and_overlaps_concurrent_ones():
    """Through :class:`DelayProxy`, a request and its reply arrive intact, one after another
    each takes at least the delay, and requests in flight together overlap their delays (as on a
    link with that latency, not a queue)."""
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    import httpx

    from simclient.bench._delay import DelayProxy

    class Echo(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
            body = self.path.encode() * 1000
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    delay = 0.1
    try:
        with DelayProxy(f"127.0.0.1:{server.server_address[1]}", delay) as proxy, httpx.Client() as client:
            t0 = time.perf_counter()
            for k in range(3):
                r = client.get(f"{proxy.url}/r{k}")
                assert r.status_code == 200 and r.content == f"/r{k}".encode() * 1000
            assert time.perf_counter() - t0 >= 3 * delay
            t0 = time.perf_counter()
            with ThreadPoolExecutor(4) as pool:
                bodies = list(pool.map(lambda k: httpx.get(f"{proxy.url}/c{k}").content, range(4)))
            assert bodies == [f"/c{k}".encode() * 1000 for k in range(4)]
            assert delay <= time.perf_counter() - t0 < 4 * delay  # (one after another: 4 delays)
    finally:
        server.shutdown()


def test_bench_latency_gives_the_folders_results_through_the_store_and_the_bucket(sample_tables, tmp_path):
    """The latency benchmark on a small terrain (400 x 400 points, 0.08 s), 10 ms away: the runs through
    the store, from the bucket and through a store in front of the bucket give the folder's results
    to the last bit, and every row is complete."""
    import shutil

    import preprocess.samples
    from simclient.bench import latency

    (tmp_path / "latency").mkdir()
    for name in ("ball_rolling", "ball_333"):
        shutil.copytree(sample_tables / f"{name}.zarr", tmp_path / "latency" / f"{name}.zarr")
    res = latency.run(tmp_path, quick=True, builder=preprocess.samples, latencies_ms=(10,), side=400, t_end=0.08)
    assert res["terrain"]["points"] == 160000
    for case, rows in res["cases"].items():
        assert rows["folder"]["updates"] > 0 and rows["folder"]["stalls"] == rows["folder"]["updates"], case
        for source in latency.SOURCES:
            row = rows[source]["10"]
            assert row["same_results"], (case, source)
            assert row["updates"] == rows["folder"]["updates"] and row["stalls"] <= row["updates"], (case, source)
            assert row["ratio"] > 0 and row["requests"] > 0
    assert "rolling" in latency.report(res)
