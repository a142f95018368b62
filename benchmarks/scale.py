"""Benchmark: out-of-core simulation at scale.

Builds (once) a ground table of 10^8 points (10000 x 10000, records of 9 x 9 points, sharded;
3 m x 6 m at the sample ground's spacing of 0.3 mm x 0.6 mm; 11.2 GB) and one of 10^6 points
(1000 x 1000, same spacing), serves them with the store, and runs the bouncing ball rolling and
bouncing across each (vx = 1 m/s, 0.5 s) in a client subprocess; reports the client's peak RSS
and the wall time per simulated second (median of repeats).

    python benchmarks/scale.py --tables DIR_WITH_12GB_FREE [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import sample_surfaces
from simclient.bench import serve_store


def _ground(name: str, n: int) -> str:
    """A plane of n x n points in 9 x 9 records at the sample ground's spacing (0.3 mm x 0.6 mm)."""
    half_u, half_v = 1.5 * n / 10000, 3.0 * n / 10000
    return (f'[surfaces.{name}]\nfamily = "plane"\nu_range = [{-half_u}, {half_u}]\nv_range = [{-half_v}, {half_v}]\n'
            f'grid = [{n}, {n}]\nrecord = [9, 9]\n[surfaces.{name}.placement]\nrotation_axis = [0, 0, 1]\n'
            'rotation_deg = -90\n')


SPEC = _ground("ground_1e8", 10000) + _ground("ground_1e6", 1000)


def client_run(url: str, ground: str, t_end: float) -> dict:
    r = subprocess.run([sys.executable, "-m", "simclient.cli", "run", "bouncing-ball", "--store", url, "--ball",
                        "ball_333", "--ground", ground, "--vx", "1.0", "--x0", "-0.25", "--t-end", str(t_end),
                        "--window-ground", "3x9", "--json"], capture_output=True, text=True, check=True)
    return json.loads(r.stdout)  # its peak_rss_MB is the client process' own peak


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", type=Path, required=True)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--t-end", type=float, default=0.5)
    args = ap.parse_args()
    args.tables.mkdir(parents=True, exist_ok=True)
    spec = args.tables / "scale.toml"
    spec.write_text(SPEC)
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "preprocess.cli", "build", str(spec), str(sample_surfaces.definition(
                    "bouncing_ball.toml")), "--only", "ground_1e8", "ground_1e6", "ball_333", "--out", str(args.tables),
                    "--skip-existing"], check=True, stdout=sys.stderr)
    print(f"tables ready in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    out = {}
    with serve_store(args.tables) as url:
        for ground in ("ground_1e6", "ground_1e8"):
            runs = [client_run(url, ground, args.t_end) for _ in range(args.repeats)]
            s = runs[-1]
            out[ground] = {"wall_s": statistics.median(r["wall_s"] for r in runs),
                           "setup_s": statistics.median(r["setup_s"] for r in runs),
                           "wall_per_simulated_s": statistics.median((r["wall_s"] + r["setup_s"]) / args.t_end for r in runs),
                           "impacts": s["impacts"], "max_indentation_m": s["max_indentation_m"],
                           "windows": s["windows"], "client_peak_rss_MB": max(r["peak_rss_MB"] for r in runs)}
    h = json.loads(subprocess.run([sys.executable, "-m", "preprocess.cli", "inspect", str(args.tables / "ground_1e8.zarr"),
                                   "--json", "--no-stats"], capture_output=True, text=True, check=True).stdout)["header"]
    out["ground_1e8_table_GB"] = h["u_npts"] * h["v_npts"] * 14 * 8 / 1e9
    out["ratio_time_per_simulated_s"] = out["ground_1e8"]["wall_per_simulated_s"] / out["ground_1e6"]["wall_per_simulated_s"]
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
