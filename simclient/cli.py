"""The ``simclient`` command line: run scenarios, benchmarks and validation cases.

Exit status: 0 on success, 1 on a failed run or validation, 2 on usage errors.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from simclient.errors import SimClientError
from surfacestore.format import tune_allocator

__all__ = ["main"]

ROOT = Path(__file__).resolve().parents[1]


def _say(quiet: bool):
    return (lambda s: None) if quiet else (lambda s: print(f"... {s}", file=sys.stderr, flush=True))


def _bench_store(args: argparse.Namespace) -> int:
    from simclient.bench.store import format_store_bench, run_store_bench
    from simclient.demo import ensure_sample_tables

    ensure_sample_tables(args.tables, quiet=True)
    res = run_store_bench(args.tables, quick=args.quick, progress=_say(args.json))
    print(json.dumps(res, indent=2) if args.json else format_store_bench(res))
    return 0


def _bench_contact(args: argparse.Namespace) -> int:
    from simclient.bench.contact import format_contact_bench, run_contact_bench
    from simclient.demo import ensure_sample_tables

    ensure_sample_tables(args.tables, quiet=True)
    res = run_contact_bench(args.tables, quick=args.quick)
    print(json.dumps(res, indent=2) if args.json else format_contact_bench(res))
    return 0


def _validate(args: argparse.Namespace) -> int:
    from simclient.demo import ensure_sample_tables
    from simclient.scenarios.validate import run_cases

    ensure_sample_tables(args.tables, quiet=True)
    cases = run_cases(args.tables, args.cases or None)
    if args.json:
        print(json.dumps({"cases": cases}, indent=2))
    else:
        for c in cases:
            print(f"{'PASS' if c['passed'] else 'FAIL'}  {c['name']:32s} measured {c['measured']:.6g}  expected "
                  f"{c['expected']:.6g}  ({c['tolerance_kind']} tolerance {c['tolerance']:g})")
    return 0 if all(c["passed"] for c in cases) else 1


def _bench_windows(args: argparse.Namespace) -> int:
    from simclient.bench.windows import format_windows_bench, plot_windows_bench, run_windows_bench
    from simclient.demo import ensure_sample_tables

    ensure_sample_tables(args.tables, quiet=True)
    res = run_windows_bench(args.tables, quick=args.quick, progress=_say(args.json))
    if args.out is not None:
        res["plot"] = str(plot_windows_bench(res, args.out / "windows_ratio.png"))
    print(json.dumps(res, indent=2) if args.json else format_windows_bench(res))
    return 0


def _bench_sweep(args: argparse.Namespace) -> int:
    from simclient.bench.windows import format_sweep, run_sweep
    from simclient.demo import ensure_sample_tables

    ensure_sample_tables(args.tables, quiet=True)
    res = run_sweep(args.tables, quick=args.quick, progress=_say(args.json))
    print(json.dumps(res, indent=2) if args.json else format_sweep(res))
    return 0


def _peak_rss_mb() -> float:
    """Peak resident memory of this process so far (MB; Linux reports KiB)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _bench_all(args: argparse.Namespace) -> int:
    """The whole suite: store, contact, windows (Table 6.3) and the sweep."""
    from simclient.bench.contact import format_contact_bench, run_contact_bench
    from simclient.bench.store import format_store_bench, run_store_bench
    from simclient.bench.windows import (format_sweep, format_windows_bench, plot_windows_bench, run_sweep,
                                         run_windows_bench)
    from simclient.demo import ensure_sample_tables

    ensure_sample_tables(args.tables, quiet=True)
    say = _say(args.json)
    results: dict = {}
    for name, run, fmt in (("store", run_store_bench, format_store_bench),
                           ("contact", lambda t, quick, progress: run_contact_bench(t, quick), format_contact_bench),
                           ("windows", run_windows_bench, format_windows_bench), ("sweep", run_sweep, format_sweep)):
        say(f"bench {name}")
        results[name] = run(args.tables, quick=args.quick, progress=say)
        if not args.json:
            print(fmt(results[name]), "", sep="\n", flush=True)
    if args.out is not None:
        results["windows"]["plot"] = str(plot_windows_bench(results["windows"], args.out / "windows_ratio.png"))
    if args.json:
        print(json.dumps(results, indent=2))
    return 0


def _extent(text: str) -> tuple[int, int]:
    try:
        a, b = text.lower().split("x")
        return int(a), int(b)
    except ValueError:
        raise argparse.ArgumentTypeError(f"window extent must look like 3x9, got {text!r}") from None


def _artificial_knee(args: argparse.Namespace) -> int:
    from simclient.scenarios.artificial_knee import ImplantKneeParams, artificial_knee
    from simclient.scenarios.bouncing_ball import dump, locate

    say = _say(args.json or not sys.stderr.isatty())
    summary = artificial_knee(args.insert or locate("tibial_insert", args.store, args.tables),
                              args.femoral or locate("femoral_component", args.store, args.tables),
                              ImplantKneeParams(material=args.material), analyses=args.analysis, out=args.out,
                              progress=say)
    if args.json:
        print(dump(summary))
        return 0
    print(f"artificial-knee ({args.material} UHMWPE, {summary['element_grid'][0]} x {summary['element_grid'][1]} "
          f"elements per compartment, {summary['usable_elements']} usable): {summary['wall_s']:.1f} s wall")
    for row in summary.get("static", []):
        c = row["compartments"]
        print(f"  static {row['flexion_deg']:4.0f} deg {row['load_N']:6.0f} N: medial {c['medial']['force_N']:7.1f} N, "
              f"lateral {c['lateral']['force_N']:7.1f} N, SI {row['si_mm']:+.3f} mm, ML {row['ml_mm']:+.3f} mm, "
              f"VV {row['varus_valgus_deg']:+.3f} deg")
    if "gait" in summary:
        g = summary["gait"]
        print(f"  gait cycle: {g['wall_s']:.2f} s wall, {g['rhs_evaluations']} evaluations, {g['element_casts']} ray "
              f"casts ({g['us_per_element']:.1f} us each with everything, {g['us_per_element_full_search']:.2f} us "
              f"per element evaluation alone); force imbalance <= {g['max_force_imbalance_stance']:.1%} of the load in "
              f"stance, {g['max_force_imbalance']:.0%} overall; maximum axial load at t = {summary['t_max_load_s']:.2f} s:")
    print(f"  {'':24s}{'medial':>12s}{'lateral':>12s}")
    for key, label, scale in (("force_N", "contact force [N]", 1), ("torque_Nm", "contact torque [N m]", 1),
                              ("peak_pressure_Pa", "peak pressure [MPa]", 1e-6),
                              ("mean_pressure_Pa", "average pressure [MPa]", 1e-6), ("area_m2", "contact area [mm^2]", 1e6),
                              ("active_elements", "active elements", 1)):
        c = summary["compartments"]
        print(f"  {label:24s}{c['medial'][key] * scale:12.4g}{c['lateral'][key] * scale:12.4g}")
    for f in summary.get("files", []):
        print(f"  wrote {f}")
    return 0


def _run(args: argparse.Namespace) -> int:
    from simclient.scenarios.bouncing_ball import BallParams, bouncing_ball, dump, locate

    if args.scenario == "artificial-knee":
        return _artificial_knee(args)
    kw = {"token": args.token} if args.token else {}
    if args.scenario == "knee3d":
        from simclient.scenarios.bouncing_ball import KneeParams, knee3d

        names = ("condyle_medial", "condyle_lateral", "plateau_medial", "plateau_lateral")
        summary = knee3d({n: locate(n, args.store, args.tables) for n in names}, window=args.window_ground,
                         params=KneeParams(law=args.law), interpolation=args.interpolation,
                         method=args.method if args.method != "DOP853" else "BDF", source_kwargs=kw)
        if args.out is not None:
            from simclient.scenarios.report import save_knee3d

            summary["outputs"] = [str(f) for f in save_knee3d(summary, args.out)]
        if args.json:
            print(dump(summary))
        else:
            print(f"knee3d: {summary['final_flexion_deg']:.1f} deg flexion at t = {summary['t_final_s']:.3f} s; "
                  f"first contact {summary['first_contact']}; contact periods {summary['contacts']}; "
                  f"largest ligament force {summary['peak_ligament']}; {summary['wall_s']:.2f} s wall")
            print("  internal rotation [deg] by flexion: " + ", ".join(
                f"{k}: {v:.1f}" for k, v in summary["internal_rotation_deg"].items()))
        return 0 if summary["status"] == "ok" else 1
    params = BallParams(law=args.law, cr=args.cr, t_end=args.t_end, vx=args.vx, x0=args.x0,
                        **({"K": args.K} if args.K else {}))
    say = _say(args.json or not sys.stderr.isatty())
    summary = bouncing_ball(locate(args.ball, args.store, args.tables), locate(args.ground, args.store, args.tables),
                            params=params, window_ball=args.window_ball, window_ground=args.window_ground,
                            interpolation=args.interpolation, method=args.method, source_kwargs=kw,
                            prefetch=args.prefetch,
                            keep=args.out is not None, progress=None)
    if args.out is not None:
        from simclient.scenarios.report import save_bouncing_ball

        files = save_bouncing_ball(summary, args.out)
        summary["outputs"] = [str(f) for f in files]
        say(f"wrote {', '.join(str(f) for f in files)}")
    summary["peak_rss_MB"] = _peak_rss_mb()
    if args.json:
        print(dump(summary))
    else:
        a = summary["analytic"]
        print(f"bouncing-ball ({summary['law']}, {summary['method']}, {summary['interpolation']}): "
              f"{summary['impacts']} impacts at {', '.join(f'{t:.4f}' for t in summary['impact_times_s'])} s")
        print(f"  max indentation {', '.join(f'{d * 1e6:.3f}' for d in summary['max_indentation_m'])} um "
              f"(Hertz closed form {a['max_indentation'] * 1e6:.3f} um)")
        print(f"  energy drift {summary['energy_drift']:.2e}; {summary['steps']} steps, "
              f"{summary['rhs_evaluations']} rhs evaluations, {summary['wall_s']:.3f} s wall")
        for name, st in summary["windows"].items():
            print(f"  window {name} {st['extent'][0]}x{st['extent'][1]}: {st['updates']} updates, "
                  f"{st['records_fetched']} records ({st['bytes_fetched'] / 1e6:.2f} MB) in {st['requests']} requests, "
                  f"{st['wait_s'] * 1e3:.1f} ms waiting")
    return 0 if summary["status"] == "ok" else 1


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="simclient", description="Multibody contact against tabulated surfaces.")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run a scenario")
    r.add_argument("scenario", choices=["bouncing-ball", "knee3d", "artificial-knee"])
    src = r.add_mutually_exclusive_group()
    src.add_argument("--store", help="base URL of a surface store (http://host:port)")
    src.add_argument("--tables", type=Path, default=ROOT / "tables", help="folder of NAME.zarr tables")
    r.add_argument("--token", help="bearer token for the store")
    r.add_argument("--ball", default="ball", help="table name of the ball [ball]")
    r.add_argument("--ground", default="ground", help="table name of the ground [ground]")
    r.add_argument("--law", default="hertz", help="contact force law [hertz]")
    r.add_argument("--cr", type=float, default=1.0, help="coefficient of restitution (dissipative laws)")
    r.add_argument("--K", type=float, default=None, help="generalized stiffness, N/m^1.5 [5.5e9]")
    r.add_argument("--window-ball", type=_extent, default=(3, 3), help="records, e.g. 3x3")
    r.add_argument("--window-ground", type=_extent, default=(3, 9),
                   help="records, e.g. 3x9 (knee3d: the extent of all its windows, default 3x9)")
    r.add_argument("--interpolation", choices=["hermite", "bilinear"], default="hermite")
    r.add_argument("--method", default="DOP853", help="solve_ivp method or rk4 [DOP853; knee3d: BDF]")
    r.add_argument("--t-end", type=float, default=0.4, help="seconds [0.4]")
    r.add_argument("--vx", type=float, default=0.15, help="bouncing-ball: horizontal velocity, m/s [0.15]")
    r.add_argument("--x0", type=float, default=-0.03, help="bouncing-ball: initial x of the centre, m [-0.03]")
    r.add_argument("--prefetch", action="store_true", help="prefetch the next window strips")
    r.add_argument("--insert", help="artificial-knee: location of the tibial insert's table [tibial_insert]")
    r.add_argument("--femoral", help="artificial-knee: location of the femoral component's table [femoral_component]")
    r.add_argument("--material", choices=["linear", "nonlinear"], default="linear",
                   help="artificial-knee: UHMWPE model [linear]")
    r.add_argument("--analysis", choices=["static", "gait", "both"], default="both",
                   help="artificial-knee: static settles, the gait-like cycle or both [both]")
    r.add_argument("--out", type=Path, help="folder for histories (NPZ, CSV) and plots")
    r.add_argument("--json", action="store_true")
    r.set_defaults(func=_run)

    v = sub.add_parser("validate", help="closed-form validation cases")
    v.add_argument("cases", nargs="*", help="case names (default: all)")
    v.add_argument("--tables", type=Path, default=ROOT / "tables", help="sample tables (built if missing)")
    v.add_argument("--json", action="store_true")
    v.set_defaults(func=_validate)

    b = sub.add_parser("bench", help="benchmarks")
    bsub = b.add_subparsers(dest="bench", required=True)
    benches = [("store", "store latency and throughput over loopback", _bench_store, None),
               ("contact", "contact-evaluation cost and interpolation error", _bench_contact, None),
               ("windows", "the thesis' Table 6.3: window sizes with the bouncing ball", _bench_windows,
                "folder for the plot of the ratios"),
               ("sweep", "record sizes x window extents x prefetch for a travelling contact", _bench_sweep, None),
               ("all", "the whole suite: store, contact, windows, sweep", _bench_all, "folder for plots")]
    for name, text, func, out in benches:
        bp = bsub.add_parser(name, help=text)
        bp.add_argument("--tables", type=Path, default=ROOT / "tables", help="sample tables (built if missing)")
        bp.add_argument("--quick", action="store_true", help="a short run (a few minutes for 'all')")
        bp.add_argument("--json", action="store_true")
        if out:
            bp.add_argument("--out", type=Path, help=out)
        bp.set_defaults(func=func)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    tune_allocator()
    try:
        return int(args.func(args))
    except (SimClientError, ValueError) as exc:
        print(f"simclient: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("simclient: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
