"""The ``simclient`` command line: run scenarios, validation cases and benchmarks.

    simclient run SCENARIO [options]   # simclient run --help lists the scenarios
    simclient study STUDY [options]    # several runs compared (simclient study --help lists them)
    simclient sweep SPEC.toml [options] # a parameter sweep on Dask (local workers or a cluster)
    simclient validate [CASE ...]      # closed-form validation cases
    simclient bench NAME [--quick]     # benchmarks (store, contact, windows, sweep, all)

Exit status: 0 on success, 1 on a failed run or validation or on an error of this project (a
message names the input and the problem), 2 on usage errors. Anything else is a bug and shows
its traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from simclient.errors import SimClientError

if TYPE_CHECKING:  # (the scenarios are imported when a command needs them)
    from simclient.scenarios import Scenario, Summary

__all__ = ["main", "build_parser"]


def _say(quiet: bool) -> Callable[[str], None]:
    return (lambda s: None) if quiet else (lambda s: print(f"... {s}", file=sys.stderr, flush=True))


def _peak_rss_mb() -> float:
    """Peak resident memory of this program so far (MB): Linux's ``VmHWM``, where there is one
    (``ru_maxrss`` keeps the peak of the process that started it, across ``exec``: a benchmark's
    child would report its parent's), else ``ru_maxrss`` (KiB on Linux)."""
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration, ValueError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _run(args: argparse.Namespace) -> int:
    scenario = args.scenario_class()
    params = scenario.params_from_args(args)
    tables = scenario.tables_from_args(args)
    _make_out(args.out)
    if args.store is None:
        # the sample tables this scenario reads, built when missing from --tables: its defaults, and
        # sample tables chosen by name instead (--ball ball_rolling)
        names = tables.names(scenario.table_names(params))
        _ensure_tables(args.tables, names, quiet=args.json)
    summary = scenario.run(params, tables, out=args.out, progress=_say(args.json or not sys.stderr.isatty()))
    summary.values["peak_rss_MB"] = _peak_rss_mb()
    print(summary.to_json() if args.json else _report(scenario, summary))
    return 0 if summary.ok else 1


def _report(scenario: Scenario, summary: Summary) -> str:
    """A run's report, with its failure (a failed run's report shows how far it came)."""
    wrote = "".join(f"\n  wrote {f}" for f in summary.get("outputs", []))
    return scenario.report(summary) + wrote + ("" if summary.ok else f"\n  FAILED: {summary['message']}")


def _make_out(out: Path | None) -> None:
    """Make the ``--out`` folder before the run, so a folder that cannot be made is said at once,
    not after the run with its results lost."""
    if out is None:
        return
    if out.exists() and not out.is_dir():
        raise SimClientError(f"--out {out}: exists and is not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SimClientError(f"--out {out}: cannot make this folder ({exc.strerror}: {exc.filename})") from None


def _ensure_tables(root: str | Path, names: list[str] | None, quiet: bool, missing_only: bool = True) -> None:
    """Build the sample tables ``names`` (None: all) missing from ``root`` (and, unless
    ``missing_only``, those built from another definition); the tables' builder is imported only
    when one must be built. A table fitted from data outside the project (``sample_surfaces/real``)
    is not built on demand: say how to build it when missing."""
    from surfacestore.format import table_location
    from surfacestore.objects import table_exists

    missing = names if names is None or not missing_only else [n for n in names if not table_exists(table_location(root, n))]
    if missing is not None and not missing:
        return
    from preprocess.errors import PreprocessError
    from preprocess.samples import ensure_sample_tables
    from sample_surfaces import missing_real_tables

    real = missing_real_tables(root, missing) if missing is not None else {}
    if real:
        name, definition = next(iter(real.items()))
        raise SimClientError(f"no table {name!r} in {root}: it is fitted from data outside the project; build "
                             f"it with `preprocess build sample_surfaces/real/{definition.name} --out {root}` "
                             "(see that file for the data it reads)")
    try:
        ensure_sample_tables(root, quiet=quiet, names=missing, missing_only=missing_only)
    except PreprocessError as exc:
        raise SimClientError(str(exc)) from exc


def _kernels(args: argparse.Namespace) -> int:
    from simclient.geometry import kernels

    if args.rebuild:
        kernels.build(quiet=False, force=True)
    report = kernels.report()  # (builds them first where this version's are missing)
    print(json.dumps(report, indent=2) if args.json else
          "\n".join(f"{key.replace('_', ' ')}: {value}" for key, value in report.items()))
    return 0


def _validate(args: argparse.Namespace) -> int:
    from simclient.scenarios.validate import case_tables, run_cases

    # the cases assume the sample geometry: tables built from another definition are rebuilt
    _ensure_tables(args.tables, case_tables(args.cases), quiet=args.json, missing_only=False)
    cases = run_cases(args.tables, args.cases)
    if args.json:
        print(json.dumps({"cases": cases}, indent=2))
    else:
        for c in cases:
            print(f"{'PASS' if c['passed'] else 'FAIL'}  {c['name']:32s} measured {c['measured']:.6g}  expected "
                  f"{c['expected']:.6g}  ({c['tolerance_kind']} tolerance {c['tolerance']:g})")
    return 0 if all(c["passed"] for c in cases) else 1


def _study(args: argparse.Namespace) -> int:
    from simclient.scenarios import Tables, get_scenario
    from simclient.scenarios.studies import get_study, run_study

    study = get_study(args.study)
    cls = get_scenario(study.scenario)
    _make_out(args.out)
    tables = Tables(store=args.store, folder=args.tables, token=args.token)
    if args.store is None:
        names = sorted({t for _, p in study.cases for t in cls().table_names(cls.Params(**p)).values()})
        _ensure_tables(args.tables, names, quiet=args.json)
    say = _say(args.json or not sys.stderr.isatty())
    say(f"study {study.name}: {len(study.cases)} runs of {study.scenario}")
    summary, cases = run_study(study, tables, out=args.out, workers=args.workers, progress=say)
    if args.json:
        print(json.dumps(summary, indent=2, default=float))
    else:
        scenario = cls()
        for label, s in cases:
            print(f"[{label}]", _report(scenario, s), sep="\n")
        for f in summary.get("outputs", []):
            print(f"wrote {f}")
    return 0 if all(s.ok for _, s in cases) else 1


def _sweep(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from simclient.scenarios import Tables, get_scenario
    from simclient.scenarios.sweep import cluster, load_sweep, run_sweep

    spec = load_sweep(args.spec, args.max_runs)
    print(f"sweep of {spec.scenario}: {len(spec.runs())} runs", file=sys.stderr, flush=True)
    _make_out(args.out)
    tables = Tables(store=args.store, folder=None if args.store else str(
        args.tables.resolve() if isinstance(args.tables, Path) else args.tables), token=args.token)
    if args.store is None:
        cls = get_scenario(spec.scenario)
        names = sorted({t for p in spec.runs() for t in cls().table_names(cls.params(p)).values()})
        _ensure_tables(args.tables, names, quiet=args.json)
    with cluster(args.scheduler) as client, tqdm(total=len(spec.runs()), desc=f"sweep {spec.scenario}", unit="run",
                                                disable=args.json or not sys.stderr.isatty()) as bar:
        summary = run_sweep(spec, tables, client, out=args.out, progress=lambda done, n: bar.update(1))
    if args.json:
        print(json.dumps(summary, indent=2, default=float))
    else:
        print(f"sweep of {spec.scenario}: {summary['runs']} runs, {len(summary['failed'])} failed, "
              f"{summary['wall_s']:.1f} s")
        for f in summary["failed"]:
            print(f"  failed run {f['run']} {f['parameters']}: {f['error']}")
        for f in summary.get("outputs", []):
            print(f"wrote {f}")
    return 0 if not summary["failed"] else 1


def _bench(args: argparse.Namespace) -> int:
    from simclient.bench import BENCHES
    from simclient.bench.windows import plot

    _make_out(getattr(args, "out", None))
    _ensure_tables(args.tables, None, quiet=True, missing_only=False)
    say = _say(args.json)
    names = [n for n, b in BENCHES.items() if b.in_all] if args.bench == "all" else [args.bench]
    options: dict[str, Any] = {"minutes": args.minutes} if args.bench == "soak" else {}
    if args.bench == "latency":
        options.update({k: v for k, v in (("latencies_ms", args.latency_ms), ("larger_side", args.larger_side))
                        if v is not None})
    results: dict[str, Any] = {}
    for name in names:
        say(f"bench {name}")
        if BENCHES[name].builds:
            import preprocess.samples  # (simclient reads tables; these benchmarks build their own)

            options["builder"] = preprocess.samples
        results[name] = BENCHES[name].run(args.tables, quick=args.quick, progress=say, **options)
        if not args.json:
            print(BENCHES[name].report(results[name]), "", sep="\n", flush=True)
    if "windows" in results and getattr(args, "out", None) is not None:
        results["windows"]["plot"] = str(plot(results["windows"], args.out / "windows_ratio.png"))
    if args.json:
        print(json.dumps(results if args.bench == "all" else results[args.bench], indent=2))
    return 0


def _latencies(text: str) -> list[float]:
    try:
        values = [float(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of milliseconds: {text!r}") from None
    if not values or not all(0 <= v < 10_000 for v in values):
        raise argparse.ArgumentTypeError(f"latencies must be in [0, 10000) ms, got {text!r}")
    return values


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _positive_minutes(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value < float("inf"):  # (0, a negative or NaN ran nothing, then failed on no samples)
        raise argparse.ArgumentTypeError(f"must be a positive number of minutes, got {text!r}")
    return value


def _table_root(value: str) -> str | Path:
    """``--tables``: an ``s3://BUCKET/PREFIX`` as it is, anything else a folder."""
    return value.rstrip("/") if value.startswith("s3://") else Path(value)


def _store_url(value: str) -> str:
    """``--store``: one http(s) base URL, or several comma-separated (replicas)."""
    bad = [b for b in value.split(",") if not b.strip().startswith(("http://", "https://"))]
    if bad or not value.strip():
        raise argparse.ArgumentTypeError(f"a store is an http:// or https:// base URL (http://host:port), got {value!r}")
    return value


def _add_where(parser: argparse.ArgumentParser) -> None:
    """The options that say where the tables are: a store (and its token) or a folder."""
    where = parser.add_argument_group("where the tables are")
    src = where.add_mutually_exclusive_group()
    src.add_argument("--store", type=_store_url, help="base URL of a surface store (http://host:port; replicas: comma-separated)")
    src.add_argument("--tables", type=_table_root, default=Path("tables"),
                     help="folder (or s3://BUCKET/PREFIX) of NAME.zarr tables; missing sample tables are built "
                          "there (default: tables)")
    where.add_argument("--token", help="bearer token for the store")


#: the commands and their one-line help (each command's options are built when it is the one used)
COMMANDS = {"run": "run a scenario", "study": "run a study (independent runs compared)",
            "sweep": "run a parameter sweep of a scenario on Dask",
            "kernels": "the compiled kernels: how they run, built first where this version's are missing",
            "validate": "closed-form validation cases", "bench": "benchmarks"}


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The command line's parser. With ``argv``, only the options of the command (and scenario) it
    names are built in full, so ``simclient --help`` and a scenario's ``--help`` import no numpy and
    no other scenario; without, every command's (the reference pages, the tests)."""
    from simclient import __version__

    p = argparse.ArgumentParser(prog="simclient", description="Multibody contact against tabulated surfaces.")
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    words = [a for a in argv if not a.startswith("-")] if argv is not None else []
    chosen = words[0] if words else None
    for name, help_text in COMMANDS.items():
        sp = sub.add_parser(name, help=help_text)
        if argv is None or name == chosen:
            _ADD[name](sp, words[1] if len(words) > 1 else None)
    return p


def _add_run(run: argparse.ArgumentParser, scenario: str | None) -> None:
    from simclient.scenarios import SCENARIOS

    # every scenario's package is light; with one named, only it is imported
    named = scenario in SCENARIOS
    listed = {name: SCENARIOS[name].title for name in SCENARIOS} if not named else {}
    run.description = "Run a scenario." + ("" if named else " Scenarios: " + "; ".join(f"{n}: {t}" for n, t in listed.items()))
    scenarios = run.add_subparsers(dest="scenario", required=True, metavar="SCENARIO")
    for name in SCENARIOS:
        if named and name != scenario:
            scenarios.add_parser(name)
            continue
        cls = SCENARIOS[name]
        sp = scenarios.add_parser(name, help=cls.title, description=cls.title)
        _add_where(sp)
        sp.add_argument("--out", type=Path, help="folder for histories and plots")
        sp.add_argument("--json", action="store_true", help="print the JSON summary")
        cls.add_arguments(sp)
        sp.set_defaults(func=_run, scenario_class=cls)


def _add_study(st: argparse.ArgumentParser, _: str | None) -> None:
    from simclient.scenarios.studies import STUDIES

    st.description = "Studies: " + "; ".join(f"{name}: {study.title}" for name, study in STUDIES.items())
    st.add_argument("study", choices=list(STUDIES), metavar="STUDY", help=", ".join(STUDIES))
    _add_where(st)
    st.add_argument("--out", type=Path, help="folder for the comparison plots")
    st.add_argument("--workers", type=_positive_int, help="parallel processes (default: the CPUs)")
    st.add_argument("--json", action="store_true", help="print the JSON summary")
    st.set_defaults(func=_study)


def _add_sweep(sw: argparse.ArgumentParser, _: str | None) -> None:
    sw.description = ("Run every point of a sweep specification (TOML: scenario, [fixed], [grid], [sample], "
                      "[output]) as a Dask task.")
    sw.add_argument("spec", type=Path, help="the sweep specification (TOML)")
    sw.add_argument("--scheduler", default="local", help="local, local:N (N worker processes) or tcp://HOST:PORT "
                    "(an existing Dask scheduler) (default: local)")
    _add_where(sw)
    sw.add_argument("--out", type=Path, help="folder for the table (CSV, Zarr) and the plots")
    from simclient.scenarios.sweep import MAX_RUNS

    sw.add_argument("--max-runs", type=int, default=MAX_RUNS, metavar="N",
                    help=f"refuse a specification of more runs than this (default {MAX_RUNS})")
    sw.add_argument("--json", action="store_true", help="print the JSON summary")
    sw.set_defaults(func=_sweep)


def _add_kernels(k: argparse.ArgumentParser, _: str | None) -> None:
    k.description = ("Report how the compiled kernels run (ahead-of-time module, numba JIT or pure Python) and "
                     "where they are; the module of the current sources is built first if it is missing (once per "
                     "version of the sources; runs build it themselves as well).")
    k.add_argument("--rebuild", action="store_true", help="build the module again even if it is there")
    k.add_argument("--json", action="store_true")
    k.set_defaults(func=_kernels)


def _add_validate(v: argparse.ArgumentParser, _: str | None) -> None:
    v.add_argument("cases", nargs="*", help="case names (default: all)")
    v.add_argument("--tables", type=_table_root, default=Path("tables"),
                   help="folder (or s3://BUCKET/PREFIX) of the sample tables; those the cases read are built there "
                        "when missing or built from another definition (default: tables)")
    v.add_argument("--json", action="store_true")
    v.set_defaults(func=_validate)


def _add_bench(b: argparse.ArgumentParser, _: str | None) -> None:
    from simclient.bench import BENCHES

    bsub = b.add_subparsers(dest="bench", required=True)
    for name, bench in {**{n: bb.description for n, bb in BENCHES.items()},
                        "all": "the whole suite: " + ", ".join(n for n, b in BENCHES.items() if b.in_all)}.items():
        bp = bsub.add_parser(name, help=bench)
        bp.add_argument("--tables", type=Path, default=Path("tables"), help="sample tables (built if missing)")
        bp.add_argument("--quick", action="store_true", help="a short run (a few minutes for 'all')")
        bp.add_argument("--json", action="store_true")
        if name in ("windows", "all"):
            bp.add_argument("--out", type=Path, help="folder for the plot of the window ratios")
        if name == "latency":
            bp.add_argument("--latency-ms", type=_latencies, help="latencies added to every request, ms "
                            "(default 0,5,20,50,100; 0,20 with --quick)")
            bp.add_argument("--larger-side", type=_positive_int, help="also a terrain of this many points a side "
                            "(10000: 10^8 points, 11 GB), the same runs through the store at 20 ms: its bytes read")
        if name == "soak":
            bp.add_argument("--minutes", type=_positive_minutes, help="how long (default 10; 0.3 with --quick)")
        bp.set_defaults(func=_bench)


_ADD: dict[str, Callable[[argparse.ArgumentParser, str | None], None]] = {
    "run": _add_run, "study": _add_study, "sweep": _add_sweep, "kernels": _add_kernels, "validate": _add_validate,
    "bench": _add_bench}


def main(argv: Sequence[str] | None = None) -> int:
    from surfacestore.runtime import tune_allocator

    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(argv).parse_args(argv)
    tune_allocator()
    try:
        status = int(args.func(args))
        sys.stdout.flush()  # here, where a reader gone away is caught, not at the interpreter's exit
        return status
    except SimClientError as exc:
        print(f"simclient: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("simclient: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the output's reader stopped reading (`| head`): stop quietly, as a filter does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing left to flush at exit
        return 1


if __name__ == "__main__":
    sys.exit(main())
