"""Benchmark: table codecs (none, zstd, blosc) on the sample surfaces.

For each codec and surface: bytes on disk relative to the raw data, build time, and the median
time to read one record and a 3 x 3 block through the table reader (warm page cache).

    python benchmarks/codecs.py
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
import warnings
from pathlib import Path

import sample_surfaces
from preprocess.build import build_surface, load_spec
from surfacestore.format import CODECS, RecordBlock


def _median_us(fn, n: int = 300) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e6


def main() -> None:
    specs = {s.name: s for s in load_spec(sample_surfaces.definition("bouncing_ball.toml"))}
    rows = []
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in ("ball", "ground"):
            for codec in CODECS:
                spec = specs[name]
                spec = type(spec)(**{**spec.__dict__, "codec": codec, "name": f"{name}-{codec}"})
                t = time.perf_counter()
                table = build_surface(spec, tmp)
                build_s = time.perf_counter() - t
                h = table.header
                disk = sum(p.stat().st_size for p in Path(table.path).rglob("*") if p.is_file())
                raw = h.u_npts * h.v_npts * 14 * 8
                ci, cj = h.n_rec_u // 2, h.n_rec_v // 2
                rows.append({
                    "surface": name, "codec": codec, "record_points": h.u_pts * h.v_pts,
                    "disk_over_raw": round(disk / raw, 3), "build_s": round(build_s, 3),
                    "read_record_us": round(_median_us(lambda: table.read_record(ci, cj)), 1),
                    "read_3x3_us": round(_median_us(
                        lambda: table.read_block(RecordBlock(ci - 1, ci + 2, cj - 1, cj + 2)), 100), 1),
                })
                print(json.dumps(rows[-1]))


if __name__ == "__main__":
    main()
