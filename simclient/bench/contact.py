"""Benchmark of contact detection (``simclient bench contact``).

Microseconds per warm-started contact evaluation, through ``ContactPair.detect`` (one Python call
per pose: window checks and the result object), through ``ContactPair.detect_many`` (the poses in
one call, the same results) and through the compiled kernel alone (table look-ups, interpolation and
the Newton solve) for the sample ball on the ground, the mean Newton
iterations, and the error of the indentation against the analytic sphere-plane value for the
33^2, 333^2 and 999^2 balls with bilinear and Hermite interpolation.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from simclient.contact import ContactPair
from simclient.contact._newton import solve_contacts
from simclient.geometry import StorageWindow, euler_from_axis_angle, layout, rotation_matrix
from simclient.io import LocalSource

__all__ = ["run", "report"]


def _kernel_loop(pair: ContactPair, Rs: np.ndarray, cs: np.ndarray, Rj: np.ndarray, cj: np.ndarray,
                 x: np.ndarray) -> bool:
    """The compiled kernel over a pose sequence from the warm start ``x``, without the Python call
    path (window checks excluded: the windows do not move in this benchmark's stretch); whether
    every pose converged."""
    pair.x = x
    pair.ints[layout.PAIR_CHECK] = 0
    n = len(cs)
    done = solve_contacts(pair.address, Rs, cs, np.broadcast_to(Rj, (n, 3, 3)).copy(), np.broadcast_to(cj, (n, 3)).copy(),
                          0, np.zeros(n, np.int64), np.zeros((n, layout.CONTACT_SIZE)))
    return bool(done == n)


def run(tables: Path, quick: bool = False, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    n = 5000 if quick else 20000
    R = 0.02
    out: dict[str, Any] = {"evaluations": n, "timing": {}, "error": []}
    ground_src = LocalSource(tables / "ground.zarr")
    for interp in ("hermite", "bilinear"):
        ball = StorageWindow(LocalSource(tables / "ball_333.zarr"), (3, 3), interp, centre=(0.0, 0.0))
        ground = StorageWindow(ground_src, (3, 9), interp, centre=(0.0, -0.03))
        pair = ContactPair(ball, ground)
        I, z = np.eye(3), np.zeros(3)
        # the ball sliding at 0.15 m/s along x and spinning at 7.5 rad/s about its pole axis (so the
        # contact point travels on both tables), sampled every 10 us: one warm start per sample
        poses = []
        for k in range(n):
            t = k * 1e-5
            A = np.ascontiguousarray(rotation_matrix(euler_from_axis_angle(np.array([1.0, 0, 0]), 0.15 * t / R)))
            poses.append((A, np.array([-0.03 + 0.15 * t, 0.0, R - 2e-5])))
        pair.detect(*poses[0], I, z)
        it0, ev0 = pair.newton_iterations, pair.evaluations
        times, batched = [], []
        for chunk in range(0, n, 1000):
            t0 = time.perf_counter()
            for A, c in poses[chunk:chunk + 1000]:
                pair.detect(A, c, I, z)
            times.append((time.perf_counter() - t0) / len(poses[chunk:chunk + 1000]) * 1e6)
        As, cs = np.array([A for A, _ in poses]), np.array([c for _, c in poses])
        many = ContactPair(ball, ground)
        many.detect(*poses[0], I, z)
        for chunk in range(0, n, 1000):
            t0 = time.perf_counter()
            many.detect_many(As[chunk:chunk + 1000], cs[chunk:chunk + 1000], I, z)
            batched.append((time.perf_counter() - t0) / len(cs[chunk:chunk + 1000]) * 1e6)
        # the same motion through the compiled kernel alone, over a stretch where no window moves
        m = 2000
        Rs = np.array([A for A, _ in poses[:m]])
        cs = np.array([c for _, c in poses[:m]])
        pair.detect(poses[0][0], poses[0][1], I, z)
        for A, c in poses[:m]:
            pair.detect(A, c, I, z)  # bring the windows to where the stretch needs them
        pair.detect(poses[0][0], poses[0][1], I, z)
        assert pair.x is not None
        x = pair.x.copy()
        ktimes = []
        for _ in range(7):
            t0 = time.perf_counter()
            ok = _kernel_loop(pair, Rs, cs, I, z, x.copy())
            ktimes.append((time.perf_counter() - t0) / m * 1e6)
        out["timing"][interp] = {"us_per_eval": statistics.median(times),
                                 "us_per_eval_batched": statistics.median(batched),
                                 "kernel_us_per_eval": statistics.median(ktimes) if ok else None,
                                 "iterations": (pair.newton_iterations - it0) / (pair.evaluations - ev0),
                                 "ground_window_updates": ground.updates}
    rng = np.random.default_rng(0)
    for name in ("ball_33", "ball_333", "ball"):
        src = LocalSource(tables / f"{name}.zarr")
        h = src.header
        for interp in ("bilinear", "hermite"):
            ball = StorageWindow(src, (h.n_rec_u, h.n_rec_v), interp)
            ground = StorageWindow(ground_src, (37, 37), interp)
            errs = []
            for _ in range(30 if quick else 200):
                # random ball orientations with the contact point off the poles and the seam
                while True:
                    A = rotation_matrix(euler_from_axis_angle(rng.normal(size=3), rng.uniform(0, math.pi)))
                    d = A.T @ np.array([0, 0, -1.0])
                    if abs(d[0]) < 0.8 and abs(math.degrees(math.atan2(d[1], -d[2]))) < 150:
                        break
                depth = rng.uniform(0, 5e-5)
                hit = ContactPair(ball, ground).detect(np.ascontiguousarray(A), np.array([0, 0, R - depth]), np.eye(3),
                                                       np.zeros(3))
                if hit.converged:
                    errs.append(abs(hit.indentation - depth))
            hmax = R * max(h.du, h.dv)
            out["error"].append({"table": name, "points": h.u_npts * h.v_npts, "interpolation": interp,
                                 "max_error_m": float(max(errs)), "rms_error_m": float(np.sqrt(np.mean(np.square(errs)))),
                                 "chordal_bound_m": 2 * hmax * hmax / (8 * R), "samples": len(errs)})
    out["us_per_eval"] = out["timing"]["hermite"]["us_per_eval"]
    out["us_per_eval_batched"] = out["timing"]["hermite"]["us_per_eval_batched"]
    out["iterations"] = out["timing"]["hermite"]["iterations"]
    return out


def report(res: dict[str, Any]) -> str:
    lines = ["warm-started contact evaluation (ball_333 on ground, median over chunks of 1000)"]
    for k, v in res["timing"].items():
        lines.append(f"  {k:8s}: {v['us_per_eval']:6.2f} us/eval through ContactPair.detect, "
                     f"{v['us_per_eval_batched']:5.2f} through detect_many, "
                     f"{v['kernel_us_per_eval']:5.2f} in the compiled kernel, "
                     f"{v['iterations']:.2f} Newton iterations")
    lines.append("indentation error against the analytic sphere on a plane")
    lines.append(f"  {'table':9s} {'points':>8s} {'interp':9s} {'max err [m]':>12s} {'rms [m]':>10s} {'h^2/(8R)x2':>11s}")
    for e in res["error"]:
        lines.append(f"  {e['table']:9s} {e['points']:8d} {e['interpolation']:9s} {e['max_error_m']:12.3e} "
                     f"{e['rms_error_m']:10.3e} {e['chordal_bound_m']:11.3e}")
    return "\n".join(lines)
