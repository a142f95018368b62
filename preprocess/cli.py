"""The ``preprocess`` command line: build, inspect and verify surface tables.

Exit status: 0 on success, 1 when a table is unsound or an input is invalid, 2 on usage errors,
130 when interrupted.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from surfacestore import __version__
from preprocess.build import build_surface, is_current, load_spec
from preprocess.errors import PreprocessError
from surfacestore.errors import SurfaceStoreError
from surfacestore.format import open_table, verify_table

__all__ = ["main"]


def _progress_bar(total: int, desc: str, quiet: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="rec", disable=quiet or not sys.stderr.isatty(), leave=False)


def _cmd_build(args: argparse.Namespace) -> int:
    specs: list[Any] = []
    where: dict[str, Path] = {}  # name -> its definition file
    for f in args.spec:
        for s in load_spec(f):
            if s.name in where:  # (found before anything is built, not at the second table)
                raise PreprocessError(f"{f}: surface {s.name!r} is defined in {where[s.name]} too")
            specs.append(s)
            where[s.name] = f
    if args.only:
        missing = set(args.only) - {s.name for s in specs}
        if missing:
            raise PreprocessError(f"{', '.join(map(str, args.spec))}: no surface named {', '.join(sorted(missing))}")
        specs = [s for s in specs if s.name in args.only]
    built = []
    for spec in specs:
        if args.skip_existing and is_current(spec, args.out):
            if not args.json:
                print(f"up to date: {spec.name}")
            continue
        n_rec = -(-spec.grid[0] // spec.record[0]) * -(-spec.grid[1] // spec.record[1])
        with _progress_bar(n_rec, spec.name, args.json) as bar, warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            table = build_surface(spec, args.out, overwrite=args.overwrite, progress=bar.update)
        for w in {str(c.message) for c in caught}:
            print(f"warning: {w}", file=sys.stderr)
        h = table.header
        built.append({"name": table.name, "path": table.location, "points": [h.u_npts, h.v_npts],
                      "records": [h.n_rec_u, h.n_rec_v], "record_points": [h.u_pts, h.v_pts],
                      "shard_records": h.shard_records, "codec": h.codec, "digest": h.digest})
        if not args.json:
            print(f"built {table.name}: {h.u_npts} x {h.v_npts} points in {h.n_rec_u} x {h.n_rec_v} records "
                  f"of {h.u_pts} x {h.v_pts} -> {table.location}")
    if args.json:
        print(json.dumps({"tables": built}, indent=2))
    return 0


def _cmd_inspect(args: argparse.Namespace) -> int:
    table = open_table(args.table)
    h = table.header
    info: dict[str, Any] = {"name": table.name, "path": table.location, "header": h.to_dict()}
    if not args.no_stats:
        # Summary statistics from a strided sample of records (all of them for small tables).
        step_i = max(1, h.n_rec_u // 16)
        step_j = max(1, h.n_rec_v // 16)
        pts = np.concatenate([table.read_record(ri, rj).reshape(-1, 14)
                              for ri in range(0, h.n_rec_u, step_i) for rj in range(0, h.n_rec_v, step_j)])
        xyz = pts[:, 2:5]
        info["stats"] = {
            "sampled_points": int(len(pts)),
            "bbox_min_m": xyz.min(axis=0).tolist(), "bbox_max_m": xyz.max(axis=0).tolist(),
            "tu_norm_range": [float(x) for x in np.percentile(np.linalg.norm(pts[:, 8:11], axis=1), [0, 100])],
            "tv_norm_range": [float(x) for x in np.percentile(np.linalg.norm(pts[:, 11:14], axis=1), [0, 100])],
            "table_bytes": h.u_npts * h.v_npts * 14 * 8,
        }
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    print(f"table {table.name} ({table.location})")
    for k, v in h.to_dict().items():
        if k != "source":
            print(f"  {k:14s} {v}")
    print(f"  {'source':14s} {json.dumps(h.source)}")
    for k, v in info.get("stats", {}).items():
        print(f"  {k:14s} {v}")
    return 0


def _cmd_verify(args: argparse.Namespace) -> int:
    status = 0
    for path in args.tables:
        table = open_table(path)
        with _progress_bar(table.header.n_rec_u, f"verify {table.name}", args.json) as bar:
            report = verify_table(path, progress=lambda n: bar.update(n * 1))
        if args.json:
            print(json.dumps(report.to_dict(), indent=2))
        elif report.ok:
            print(f"{path}: OK ({report.digest_actual})")
        else:
            print(f"{path}: FAILED", file=sys.stderr)
            for p in report.problems:
                print(f"  {p}", file=sys.stderr)
            for (ri, rj), reasons in sorted(report.bad_records.items()):
                print(f"  record ({ri}, {rj}): {'; '.join(reasons)}", file=sys.stderr)
        if not report.ok:
            status = 1
    return status


def _cmd_export(args: argparse.Namespace) -> int:
    from preprocess.export import export_table

    table = open_table(args.table)
    if not str(args.out).endswith(".vts"):
        raise PreprocessError(f"--out {args.out}: a VTK structured grid is written to a .vts file")
    with _progress_bar(table.header.n_rec_u, f"export {table.name}", args.json) as bar:
        path = export_table(table, args.out, stride=args.stride, progress=bar.update)
    if args.json:
        print(json.dumps({"table": table.name, "file": str(path), "stride": args.stride}))
    else:
        print(f"exported {table.name} -> {path} (open it in ParaView; colour by record, Normals, tu, tv or a field)")
    return 0


def _cmd_curvature(args: argparse.Namespace) -> int:
    from preprocess.curvature import principal_curvatures

    r = principal_curvatures(open_table(args.table), *args.at)
    if args.json:
        print(json.dumps(r, indent=2))
        return 0
    print(f"{r['table']} at (u, v) = ({r['u']:g}, {r['v']:g}), point {np.round(r['point_m'], 6).tolist()} m")
    for k in (1, 2):
        print(f"  R{k} = {r[f'R{k}_m']:.6g} m along {np.round(r[f'direction{k}'], 6).tolist()}")
    return 0


def _point(text: str) -> tuple[float, float]:
    try:
        a, b = text.split(",")
        return float(a), float(b)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected U,V, got {text!r}") from None


def _pair(text: str) -> tuple[int, int]:
    try:
        a, b = text.lower().split("x")
        return int(a), int(b)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected NxM, got {text!r}") from None


def _length(text: str) -> float:
    from preprocess.fit import UNITS

    for unit in sorted(UNITS, key=len, reverse=True):
        if text.endswith(unit):
            return float(text[: -len(unit)]) * UNITS[unit]
    return float(text)


def _cmd_fit(args: argparse.Namespace) -> int:
    from preprocess.build import fit_to_table

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table, report = fit_to_table(args.input, args.out, param=args.param, axis=args.axis,
                                     grid=list(args.grid), record=list(args.record), ctrl=args.ctrl, tol=args.tol,
                                     units=args.units, method=args.method, degree=args.degree, back=args.back,
                                     crop=args.crop,
                                     max_tilt_deg=args.max_tilt,
                                     overwrite=args.overwrite, residual_map=args.residual_map)
    for w in {str(c.message) for c in caught}:
        print(f"warning: {w}", file=sys.stderr)
    if args.json:
        print(json.dumps({"table": table.location, "report": report}, indent=2))
    else:
        r = report
        net = (f"control net {r['control_net'][0]} x {r['control_net'][1]}" if "control_net" in r
               else f"{r['centres']} thin-plate centres" if "centres" in r else f"degree {r['degree']}")
        print(f"fitted {args.input} -> {table.location} ({r['parametrization_chosen']}; {r['method']}, {net}, "
              f"{r['points']} points)")
        if r.get("max_tilt_deg") is not None:
            print(f"  {r['points_left_out']} points on walls tilted more than {r['max_tilt_deg']:g} deg from the "
                  "parametrization's outward direction left out")
        print(f"  residual mean {r['residual_mean_m'] * 1e3:+.5f} +- {r['residual_sd_m'] * 1e3:.5f} mm, RMS "
              f"{r['residual_rms_m'] * 1e3:.5f} mm, 99th percentile {r['residual_p99_m'] * 1e3:.5f} mm, max "
              f"{r['residual_max_m'] * 1e3:.5f} mm")
        print(f"  footprint: {r['footprint_fraction']:.1%} of the table within {r['footprint_radius_m'] * 1e3:.3f} mm "
              "of the data (extra field data_distance)")
        if "thickness_m" in r:
            t = r["thickness_m"]
            print(f"  thickness to {r['back']}: {t['min'] * 1e3:.3f} .. {t['max'] * 1e3:.3f} mm (median "
                  f"{t['median'] * 1e3:.3f})")
        if r.get("tolerance_met") is False:
            print("  warning: the tolerance was not met (the least-bending fit with the smallest residual is "
                  "stored)", file=sys.stderr)
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="preprocess", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    b = sub.add_parser("build", help="sample the surfaces of a TOML definition into tables")
    b.add_argument("spec", type=Path, nargs="+", help="TOML file(s) with [surfaces.NAME] tables")
    b.add_argument("--out", required=True, help="folder for the tables (NAME.zarr), or s3://BUCKET/PREFIX")
    b.add_argument("--only", nargs="+", metavar="NAME", help="build only these surfaces")
    b.add_argument("--overwrite", action="store_true", help="replace existing tables")
    b.add_argument("--skip-existing", action="store_true",
                   help="skip tables already built from the same definition")
    b.add_argument("--json", action="store_true", help="print a JSON summary")
    b.set_defaults(func=_cmd_build)

    i = sub.add_parser("inspect", help="print a table's header and summary statistics")
    i.add_argument("table", help="a table: NAME.zarr folder or s3://BUCKET/PREFIX/NAME.zarr")
    i.add_argument("--json", action="store_true")
    i.add_argument("--no-stats", action="store_true", help="header only")
    i.set_defaults(func=_cmd_inspect)

    from preprocess.fit import METHODS, PARAMETRIZATIONS

    f = sub.add_parser("fit", help="fit a mesh or point cloud and build its table")
    f.add_argument("input", type=Path, help="STL, OBJ, PLY mesh or XYZ/CSV point cloud")
    f.add_argument("--param", choices=[*PARAMETRIZATIONS, "auto"], default="auto",
                   help="parametrization of the data [auto: planar, spherical or cylindrical, and says why]")
    f.add_argument("--axis", help="planar: projection normal; cylindrical, toroidal: axis; spherical: dome direction "
                                  "(x, y, z, -x, ... or ax,ay,az); default: estimated")
    f.add_argument("--crop", action="append", metavar="AXIS<VALUE",
                   help="fit only the data with AXIS<VALUE or AXIS>VALUE (VALUE in --units; repeatable), e.g. one "
                        "condyle: --crop 'z<0.0006'")
    f.add_argument("--max-tilt", type=float, metavar="DEG",
                   help="leave out the mesh triangles tilted more than DEG from the parametrization's outward "
                        "direction (walls a height field cannot follow), e.g. a femoral component: --max-tilt 45")
    f.add_argument("--method", choices=list(METHODS), default="bspline",
                   help="penalized B-spline, Argatov's regularized thin plate (planar) or Blankevoort's bivariate "
                        "polynomial height field (planar) [bspline]")
    f.add_argument("--degree", type=int, help="the B-spline's degree [3], or the polynomial's total degree [6]")
    f.add_argument("--back", help="back surface for the thickness field: a mesh/cloud file or plane:AXIS=VALUE "
                                  "(VALUE in --units), e.g. plane:y=0")
    f.add_argument("--grid", type=_pair, default=(201, 201), help="table points, NUxNV [201x201]")
    f.add_argument("--record", type=_pair, default=(9, 9), help="points per record, UPxVP [9x9]")
    g = f.add_mutually_exclusive_group()
    g.add_argument("--ctrl", type=_pair, help="control net MxN (default: grown until --tol)")
    g.add_argument("--tol", type=_length, help="RMS tolerance, e.g. 0.01mm [0.01mm]")
    f.add_argument("--units", default="m", help="units of the input coordinates [m]")
    f.add_argument("--out", required=True, help="output table, NAME.zarr (a path or s3://BUCKET/PREFIX/NAME.zarr)")
    f.add_argument("--overwrite", action="store_true")
    f.add_argument("--residual-map", type=Path, help="PNG of the residuals over the parameters")
    f.add_argument("--json", action="store_true")
    f.set_defaults(func=_cmd_fit)

    e = sub.add_parser("export", help="write a table for ParaView (VTK structured grid, .vts)")
    e.add_argument("table", help="a table: NAME.zarr folder or s3://BUCKET/PREFIX/NAME.zarr")
    e.add_argument("--format", choices=["vtk"], default="vtk", help="output format [vtk]")
    e.add_argument("--out", type=Path, required=True, help="output file, FILE.vts")
    e.add_argument("--stride", type=int, default=1, help="every N-th point in u and v [1: all]")
    e.add_argument("--json", action="store_true")
    e.set_defaults(func=_cmd_export)

    c = sub.add_parser("curvature", help="principal radii and directions of a table at a parameter point")
    c.add_argument("table", help="a table: NAME.zarr folder or s3://BUCKET/PREFIX/NAME.zarr")
    c.add_argument("--at", type=_point, required=True, metavar="U,V", help="the parameter point (table units)")
    c.add_argument("--json", action="store_true")
    c.set_defaults(func=_cmd_curvature)

    v = sub.add_parser("verify", help="check tables; exit 1 listing the failing records")
    v.add_argument("tables", nargs="+", help="tables: NAME.zarr folders or s3:// prefixes")
    v.add_argument("--json", action="store_true")
    v.set_defaults(func=_cmd_verify)
    return p


def _terminate(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt  # SIGTERM unwinds like Ctrl-C, so an unfinished table is removed


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    try:
        status = int(args.func(args))
        sys.stdout.flush()  # here, where a reader gone away is caught, not at the interpreter's exit
        return status
    except (PreprocessError, SurfaceStoreError) as exc:
        print(f"preprocess: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("preprocess: interrupted; nothing was published", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the output's reader stopped reading (`| head`): stop quietly, as a filter does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing left to flush at exit
        return 1
    except OSError as exc:
        print(f"preprocess: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
