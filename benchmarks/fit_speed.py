"""Time to fit 100k scattered points with a 60 x 60 control net (penalized B-spline, planar).

    python benchmarks/fit_speed.py [--points 100000] [--ctrl 60] [--repeat 3]

Prints the median wall time of ``fit_bspline`` (design matrix, sparse solve, foot-point residuals)
and of ``fit_tps`` on a tenth of the points.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from preprocess.fit import PlanarParametrization, fit_bspline, fit_tps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=100_000)
    ap.add_argument("--ctrl", type=int, default=60)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    xy = rng.uniform(-0.02, 0.02, (args.points, 2))
    pts = np.column_stack([xy, xy[:, 0] ** 2 / 0.06 - xy[:, 1] ** 2 / 0.1 + rng.normal(0, 1e-5, args.points)])
    par = PlanarParametrization.fit(pts, "z")
    for label, run in [(f"bspline {args.points} points, {args.ctrl} x {args.ctrl} net",
                        lambda: fit_bspline(pts, par, ctrl=(args.ctrl, args.ctrl))),
                       (f"tps {args.points // 10} points, tol 10 um",
                        lambda: fit_tps(pts[: args.points // 10], par, tol=1e-5))]:
        times = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            fit = run()
            times.append(time.perf_counter() - t)
        print(f"{label}: median {statistics.median(times):.2f} s (min {min(times):.2f}), "
              f"RMS {fit.report['residual_rms_m'] * 1e6:.2f} um")


if __name__ == "__main__":
    main()
