"""Benchmark: build a large table (default 10^8 points, about 11 GB) with `preprocess build`.

Measures, in one run: the raw sequential write bandwidth for the same number of bytes (16 MB
writes, then sync) and the build (a subprocess running the real CLI, then sync): wall time,
throughput in points/s and MB/s, the ratio to the raw bandwidth, and the build's peak RSS.

    python benchmarks/build_large.py --points 1e8 --dir /path/with/space [--family plane|sphere]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def raw_write(path: Path, nbytes: int) -> float:
    block = np.random.default_rng(0).random(2**21).tobytes()  # 16 MB
    t = time.perf_counter()
    with open(path, "wb") as f:
        left = nbytes
        while left > 0:
            f.write(block[: min(left, len(block))])
            left -= len(block)
    os.sync()
    dt = time.perf_counter() - t
    path.unlink()
    return dt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=float, default=1e8)
    ap.add_argument("--dir", type=Path, default=None, help="scratch folder (needs ~2x the table size free)")
    ap.add_argument("--family", choices=["plane", "sphere"], default="plane")
    ap.add_argument("--record", type=int, default=111)
    args = ap.parse_args()
    n = int(math.isqrt(int(args.points)))
    n += n * n < args.points
    scratch = Path(tempfile.mkdtemp(prefix="build-large-", dir=args.dir))
    nbytes = n * n * 14 * 8
    family = ('family = "plane"\nu_range = [0.0, 1.0]\nv_range = [0.0, 1.0]\n' if args.family == "plane" else
              'family = "sphere"\nradius = 0.02\npole_axis = [1, 0, 0]\nzero_meridian = [0, 0, -1]\n'
              'u_range_deg = [-89, 89]\n')
    spec = scratch / "large.toml"
    spec.write_text(f"[surfaces.large]\n{family}grid = [{n}, {n}]\nrecord = [{args.record}, {args.record}]\n")
    try:
        raw_s = raw_write(scratch / "raw.bin", nbytes)
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "preprocess.cli", "build", str(spec), "--out", str(scratch / "out")],
                       check=True)
        os.sync()
        build_s = time.perf_counter() - t
        rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        files = sum(len(f) for _, _, f in os.walk(scratch / "out"))
        result = {
            "points": n * n, "grid": [n, n], "record": [args.record, args.record], "family": args.family,
            "table_GB": nbytes / 1e9, "files": files,
            "raw_write_s": raw_s, "raw_MB_per_s": nbytes / raw_s / 1e6,
            "build_s": build_s, "build_MB_per_s": nbytes / build_s / 1e6,
            "build_points_per_s": n * n / build_s,
            "ratio_to_raw": raw_s / build_s, "peak_rss_MB": rss_mb,
        }
        print(json.dumps(result, indent=2))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
