"""The main job: build the sample tables the bouncing ball reads, serve them with the store as a
local service, run the bouncing ball against the store, and print a summary. (The other scenarios
build their sample tables when first run: ``simclient run NAME --tables DIR``.)

    python -m simclient.demo [--tables DIR] [--out DIR]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from simclient import cli
from simclient.bench import serve_store
from simclient.errors import SimClientError
from preprocess.samples import ensure_sample_tables
from surfacestore.format import open_table


def main(argv: list[str] | None = None) -> int:
    try:
        return _demo(argv)
    except SimClientError as exc:
        print(f"demo: error: {exc}", file=sys.stderr)
        return 1


def _demo(argv: list[str] | None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--tables", type=Path, default=Path("tables"), help="folder of the sample tables [tables]")
    ap.add_argument("--out", type=Path, default=Path("out") / "bouncing-ball", help="histories and plots")
    args = ap.parse_args(argv)
    print("1. sample tables")
    from simclient.scenarios import SCENARIOS

    for path in ensure_sample_tables(args.tables, quiet=False, names=SCENARIOS["bouncing-ball"].tables.values()):
        with open_table(path) as t:
            h = t.header
        print(f"   {Path(path).name:22s} {h.u_npts:4d} x {h.v_npts:<4d} points  {h.n_rec_u:3d} x {h.n_rec_v:<3d} records "
              f"of {h.u_pts} x {h.v_pts}")
    print("2. surface store on loopback")
    with serve_store(args.tables) as url:
        print(f"   serving {args.tables} at {url}")
        print("3. bouncing ball (thesis 6.5.1) against the store")
        status = cli.main(["run", "bouncing-ball", "--store", url, "--out", str(args.out)])
    print(f"   histories and plots in {args.out}")
    return status


if __name__ == "__main__":
    sys.exit(main())
