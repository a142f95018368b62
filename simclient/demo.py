"""The main job: build the sample tables, serve them with the store as a local service, run the
bouncing ball against the store, and print a summary.

    python -m simclient.demo [--tables DIR] [--out DIR]
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from preprocess.build import build_surface, is_current, load_spec
from simclient import cli
from simclient.bench.store import serve
from surfacestore.format import TABLE_SUFFIX, open_table

ROOT = Path(__file__).resolve().parents[1]


def ensure_sample_tables(out: Path, quiet: bool = False) -> list[Path]:
    """Build every sample table missing from ``out`` (or whose definition changed)."""
    paths = []
    for spec_file in sorted((ROOT / "sample_surfaces").glob("*.toml")):
        for spec in load_spec(spec_file):
            path = out / f"{spec.name}{TABLE_SUFFIX}"
            current = is_current(spec, out)
            if not current:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    build_surface(spec, out, overwrite=True)
                if not quiet:
                    print(f"built {path}")
            paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", type=Path, default=ROOT / "tables")
    ap.add_argument("--out", type=Path, default=ROOT / "out" / "bouncing-ball")
    args = ap.parse_args(argv)
    print("1. sample tables")
    for path in ensure_sample_tables(args.tables):
        h = open_table(path).header
        print(f"   {path.name:22s} {h.u_npts:4d} x {h.v_npts:<4d} points  {h.n_rec_u:3d} x {h.n_rec_v:<3d} records "
              f"of {h.u_pts} x {h.v_pts}")
    print("2. surface store on loopback")
    with serve([sys.executable, "-m", "surfacestore.cli", "serve", "--root", str(args.tables), "--log-level",
                "warning"]) as url:
        print(f"   serving {args.tables} at {url}")
        print("3. bouncing ball (thesis 6.5.1) against the store")
        status = cli.main(["run", "bouncing-ball", "--store", url, "--out", str(args.out)])
    print(f"   histories and plots in {args.out}")
    return status


if __name__ == "__main__":
    sys.exit(main())
