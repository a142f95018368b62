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
    from simclient.bench_store import format_store_bench, run_store_bench
    from simclient.demo import ensure_sample_tables

    ensure_sample_tables(args.tables, quiet=True)
    res = run_store_bench(args.tables, quick=args.quick, progress=_say(args.json))
    print(json.dumps(res, indent=2) if args.json else format_store_bench(res))
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="simclient", description="Multibody contact against tabulated surfaces.")
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser("bench", help="benchmarks")
    bsub = b.add_subparsers(dest="bench", required=True)
    bs = bsub.add_parser("store", help="store latency and throughput over loopback")
    bs.add_argument("--tables", type=Path, default=ROOT / "tables", help="sample tables (built if missing)")
    bs.add_argument("--quick", action="store_true")
    bs.add_argument("--json", action="store_true")
    bs.set_defaults(func=_bench_store)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    tune_allocator()
    try:
        return int(args.func(args))
    except SimClientError as exc:
        print(f"simclient: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("simclient: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
