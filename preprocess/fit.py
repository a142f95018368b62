"""Fitting surfaces to point clouds and triangle meshes (first part: planar height fields).

``fit_surface`` reads a mesh (STL, OBJ, PLY through trimesh) or a point cloud (XYZ/CSV), projects
the points on a plane (a given axis or the best-fit plane), refuses projections that fold, and fits
a tensor-product B-spline height field ``h(a, b)`` over the plane by penalized least squares
(sparse design matrix, second-difference smoothing penalty, degree 3). Because a clamped B-spline
reproduces its parameter with control points at the Greville abscissae, the fitted surface
``s(a, b) = o + a e1 + b e2 + h(a, b) n`` is exactly a B-spline surface, returned as the parameters
of the ``nurbs`` family so that tables are built, and derivatives evaluated, by the same code as
any NURBS definition.

The fit report (residuals along the plane normal at the data points: mean, sd, RMS, max, 99th
percentile; control net; parametrization) is returned as data and stored in the table header's
``source``. Units: metres (input scaled by ``units``).

Not yet: cylindrical and spherical parametrizations, the thin-plate (``tps``) method, thickness
to a back surface, and the data-distance extra field.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.interpolate import BSpline
from scipy.sparse.linalg import spsolve
from scipy.spatial import cKDTree

from preprocess.errors import FitError

__all__ = ["UNITS", "load_points", "PlanarParametrization", "fit_height_field", "FitResult", "fit_to_table"]

UNITS = {"m": 1.0, "mm": 1e-3, "cm": 1e-2, "um": 1e-6}


def load_points(path: str | Path, units: str = "m") -> tuple[np.ndarray, np.ndarray | None]:
    """Vertices of a mesh (STL, OBJ, PLY) or the rows of a point cloud (XYZ/CSV), in metres, and
    the mesh's area-weighted mean face normal (None for a point cloud)."""
    path = Path(path)
    if units not in UNITS:
        raise FitError(f"unknown units {units!r}; choose one of {', '.join(UNITS)}")
    if not path.is_file():
        raise FitError(f"{path}: no such file")
    suffix = path.suffix.lower()
    mean_normal = None
    try:
        if suffix in (".xyz", ".csv", ".txt"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # an empty file is reported below
                pts = np.loadtxt(path, delimiter="," if suffix == ".csv" else None, ndmin=2)
            pts = pts[:, :3] if pts.size else np.zeros((0, 3))
        else:
            import trimesh

            mesh = trimesh.load(path, force="mesh")
            pts = np.asarray(mesh.vertices, dtype=float)
            if len(mesh.faces):
                w = mesh.face_normals * mesh.area_faces[:, None]
                mean_normal = w.sum(axis=0) / max(mesh.area_faces.sum(), 1e-300)
    except Exception as exc:  # readers raise assorted errors for unreadable files
        raise FitError(f"{path}: cannot read ({exc})") from None
    if pts.ndim != 2 or pts.shape[0] == 0 or pts.shape[1] != 3:
        raise FitError(f"{path}: no points")
    if not np.isfinite(pts).all():
        raise FitError(f"{path}: non-finite coordinates ({int((~np.isfinite(pts)).any(axis=1).sum())} points)")
    pts = pts * UNITS[units]
    extent = float(np.ptp(pts, axis=0).max())
    if extent > 1.0:
        warnings.warn(f"{path}: the data span {extent:.3g} m; for a joint surface that is suspicious "
                      "(wrong units? use --units mm)", stacklevel=2)
    return pts, mean_normal


@dataclass(frozen=True)
class PlanarParametrization:
    """Projection on a plane: origin ``o``, in-plane unit axes ``e1``, ``e2`` and normal ``n``
    (right-handed: e1 x e2 = n); ``(a, b) = ((p - o).e1, (p - o).e2)``, ``h = (p - o).n``."""

    origin: np.ndarray
    e1: np.ndarray
    e2: np.ndarray
    n: np.ndarray

    @classmethod
    def fit(cls, pts: np.ndarray, axis: str | np.ndarray | None = None,
            outward: np.ndarray | None = None) -> PlanarParametrization:
        """Plane through the centroid normal to ``axis`` (x, y, z, -x, ... or a vector), or the
        best-fit plane (smallest principal direction) when ``axis`` is None, its normal turned
        towards ``outward`` (a mesh's mean normal) when given, else towards its largest positive
        component."""
        c = pts.mean(axis=0)
        q = pts - c
        _, s, vt = np.linalg.svd(q[:: max(1, len(q) // 20000)], full_matrices=False)
        if s[1] <= 1e-9 * s[0]:
            raise FitError("degenerate data: the points are (nearly) collinear")
        if axis is None:
            n = vt[2]
            ref = outward if outward is not None and np.linalg.norm(outward) > 0 else np.sign(n[np.argmax(abs(n))]) * n
            if n @ ref < 0:
                n = -n
        else:
            n = _axis_vector(axis)
        helper = np.array([1.0, 0, 0]) if abs(n[0]) < 0.9 else np.array([0, 0, 1.0])
        e1 = helper - (helper @ n) * n
        e1 /= np.linalg.norm(e1)
        e2 = np.cross(n, e1)
        return cls(c, e1, e2, n)

    def project(self, pts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        q = pts - self.origin
        return q @ self.e1, q @ self.e2, q @ self.n

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "planar", "origin": self.origin.tolist(), "e1": self.e1.tolist(), "e2": self.e2.tolist(),
                "normal": self.n.tolist()}


def _axis_vector(axis: str | np.ndarray) -> np.ndarray:
    if isinstance(axis, str):
        sign = -1.0 if axis.startswith("-") else 1.0
        name = axis.lstrip("+-").lower()
        if name not in ("x", "y", "z"):
            raise FitError(f"invalid axis {axis!r}: use x, y, z (optionally signed) or a vector")
        v = np.zeros(3)
        v["xyz".index(name)] = sign
        return v
    v = np.asarray(axis, float)
    if v.shape != (3,) or not np.isfinite(v).all() or np.linalg.norm(v) == 0:
        raise FitError(f"invalid axis {axis!r}")
    return v / np.linalg.norm(v)


def check_folds(a: np.ndarray, b: np.ndarray, h: np.ndarray) -> None:
    """Refuse a projection in which nearby parameters carry very different heights (a fold)."""
    ab = np.column_stack([a, b])
    tree = cKDTree(ab)
    d, _ = tree.query(ab, k=2)
    spacing = float(np.median(d[:, 1]))
    pairs = tree.query_pairs(r=0.5 * spacing, output_type="ndarray")
    if len(pairs):
        dh = np.abs(h[pairs[:, 0]] - h[pairs[:, 1]])
        bad = dh > 20 * spacing
        if bad.any():
            k = pairs[np.argmax(dh)]
            raise FitError(f"the planar projection folds: points {int(k[0])} and {int(k[1])} map to nearly the same "
                           f"parameters with heights {dh.max() * 1e3:.3g} mm apart; try --param cylindrical or "
                           "spherical, or another --axis")


def _clamped_knots(lo: float, hi: float, n_ctrl: int, p: int) -> np.ndarray:
    inner = np.linspace(lo, hi, n_ctrl - p + 1)
    return np.concatenate([[lo] * p, inner, [hi] * p])


def _design(x: np.ndarray, t: np.ndarray, p: int) -> sp.csr_matrix:
    return BSpline.design_matrix(x, t, p).tocsr()


def _second_difference(n: int) -> sp.csr_matrix:
    return sp.diags([np.ones(n - 2), -2 * np.ones(n - 2), np.ones(n - 2)], [0, 1, 2], shape=(n - 2, n)).tocsr()


@dataclass
class FitResult:
    """A fitted surface: ``nurbs`` family parameters, the parametrization and the report."""

    nurbs: dict[str, Any]
    domain: tuple[tuple[float, float], tuple[float, float]]
    report: dict[str, Any]
    residuals: np.ndarray
    params: np.ndarray


def fit_height_field(pts: np.ndarray, param: PlanarParametrization, ctrl: tuple[int, int] | None = None,
                     tol: float | None = None, degree: int = 3, smoothing: float = 1e-6,
                     max_ctrl: int = 120) -> FitResult:
    """Penalized least-squares B-spline height field over the plane of ``param``.

    ``ctrl``: control net size; or grown (from 8 x 8, by 1.5x) until the RMS residual is below
    ``tol`` (m; default 1e-5 m) or ``max_ctrl`` is reached. ``smoothing`` weighs the second-
    difference penalty relative to the data term (dimensionless, scaled by the point count).
    """
    a, b, h = param.project(pts)
    check_folds(a, b, h)
    lo_a, hi_a, lo_b, hi_b = a.min(), a.max(), b.min(), b.max()
    sizes = [ctrl] if ctrl else []
    if not sizes:
        m = 8
        while m <= max_ctrl:
            sizes.append((m, m))
            m = int(math.ceil(m * 1.5))
    target = 1e-5 if tol is None else tol
    result = None
    for mu, mv in sizes:
        if mu * mv > len(pts):
            if result is None:
                raise FitError(f"{len(pts)} points are fewer than the {mu} x {mv} control points")
            break
        tu, tv = _clamped_knots(lo_a, hi_a, mu, degree), _clamped_knots(lo_b, hi_b, mv, degree)
        Bu, Bv = _design(a, tu, degree), _design(b, tv, degree)
        A = _khatri_rao(Bu, Bv)
        Du, Dv = _second_difference(mu), _second_difference(mv)
        P = sp.kron(Du.T @ Du, sp.identity(mv)) + sp.kron(sp.identity(mu), Dv.T @ Dv)
        lam = smoothing * len(pts) / (mu * mv)
        c = spsolve((A.T @ A + lam * P).tocsc(), A.T @ h)
        res = h - A @ c
        rms = float(np.sqrt(np.mean(res**2)))
        result = (mu, mv, tu, tv, c, res, rms)
        if ctrl or rms <= target:
            break
    assert result is not None
    mu, mv, tu, tv, c, res, rms = result
    # exact B-spline surface: control points at the Greville abscissae
    ga = np.array([tu[i + 1:i + degree + 1].mean() for i in range(mu)])
    gb = np.array([tv[j + 1:j + degree + 1].mean() for j in range(mv)])
    C = c.reshape(mu, mv)
    P3 = (param.origin + ga[:, None, None] * param.e1 + gb[None, :, None] * param.e2
          + C[:, :, None] * param.n)
    nurbs = {"degree_u": degree, "degree_v": degree, "knots_u": tu.tolist(), "knots_v": tv.tolist(),
             "control_points": P3.tolist()}
    report = {"method": "bspline", "degree": degree, "control_net": [mu, mv], "smoothing": smoothing,
              "parametrization": param.to_dict(), "points": int(len(pts)),
              "residual_mean_m": float(res.mean()), "residual_sd_m": float(res.std()), "residual_rms_m": rms,
              "residual_max_m": float(np.abs(res).max()), "residual_p99_m": float(np.percentile(np.abs(res), 99)),
              "tolerance_m": tol}
    return FitResult(nurbs, ((lo_a, hi_a), (lo_b, hi_b)), report, res, np.column_stack([a, b]))


def _khatri_rao(Bu: sp.csr_matrix, Bv: sp.csr_matrix) -> sp.csr_matrix:
    """Row-wise Kronecker product of two B-spline design matrices (each row holds exactly
    degree + 1 stored entries, as ``BSpline.design_matrix`` returns them)."""
    n, nv = Bu.shape[0], Bv.shape[1]
    ku, kv = Bu.indptr[1] - Bu.indptr[0], Bv.indptr[1] - Bv.indptr[0]
    cu, du = Bu.indices.reshape(n, ku), Bu.data.reshape(n, ku)
    cv, dv = Bv.indices.reshape(n, kv), Bv.data.reshape(n, kv)
    cols = (cu[:, :, None] * nv + cv[:, None, :]).reshape(n, -1)
    vals = (du[:, :, None] * dv[:, None, :]).reshape(n, -1)
    indptr = np.arange(0, n * ku * kv + 1, ku * kv)
    return sp.csr_matrix((vals.ravel(), cols.ravel(), indptr), shape=(n, Bu.shape[1] * nv))


def fit_to_table(input_path: str | Path, out: str | Path, *, param: str = "planar", axis: str | None = None,
                 grid: tuple[int, int] = (201, 201), record: tuple[int, int] = (9, 9), ctrl: tuple[int, int] | None = None,
                 tol: float | None = None, units: str = "m", overwrite: bool = False,
                 residual_map: str | Path | None = None) -> tuple[Any, dict[str, Any]]:
    """Fit ``input_path`` and build the table ``out`` (a ``NAME.zarr`` path); return (table, report)."""
    from preprocess.build import build_surface, parse_surface

    if param not in ("planar", "auto"):
        raise FitError(f"parametrization {param!r} is not available yet (planar only)")
    pts, outward = load_points(input_path, units)
    par = PlanarParametrization.fit(pts, axis, outward)
    fit = fit_height_field(pts, par, ctrl=ctrl, tol=tol)
    report = {**fit.report, "input": str(input_path), "units": units,
              "parametrization_chosen": "planar" + (" (auto)" if param == "auto" else "")}
    out = Path(out)
    name = out.name[:-5] if out.name.endswith(".zarr") else out.name
    definition = {"family": "nurbs", **fit.nurbs, "grid": list(grid), "record": list(record)}
    spec = parse_surface(name, definition)
    spec = type(spec)(**{**spec.__dict__, "definition": {**spec.definition, "fit_report": report}})
    table = build_surface(spec, out.parent, overwrite=overwrite)
    if residual_map is not None:
        _residual_map(fit, Path(residual_map))
    return table, report


def _residual_map(fit: FitResult, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 5))
    lim = float(np.percentile(np.abs(fit.residuals), 99)) * 1e3
    sc = ax.scatter(fit.params[:, 0] * 1e3, fit.params[:, 1] * 1e3, c=fit.residuals * 1e3, s=2, cmap="coolwarm",
                    vmin=-lim, vmax=lim)
    fig.colorbar(sc, label="residual along the plane normal [mm]")
    ax.set(xlabel="a [mm]", ylabel="b [mm]", title=f"fit residuals (RMS {fit.report['residual_rms_m'] * 1e3:.4f} mm)")
    ax.set_aspect("equal")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
