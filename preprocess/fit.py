"""Fitting surfaces to point clouds and triangle meshes.

Pipeline (``fit_spec``; ``preprocess.build.fit_to_table`` builds the table):

1. :func:`load_data` reads a mesh (STL, OBJ, PLY through trimesh) or a point cloud (XYZ/CSV) in
   the declared units and converts to metres.
2. A :class:`Parametrization` maps every data point to parameters ``(u, v)`` in metres and a
   "height" ``h`` along the projection direction: planar (``u, v`` in a plane, ``h`` along its
   normal), cylindrical (``u`` = arc length ``R theta`` about an axis, ``v`` along it, ``h`` the
   radius), spherical (``u``, ``v`` = ``R`` x longitude, latitude about a centre, the dome on the
   equator so the grid has no pole; ``h`` the distance to the centre) or toroidal (``u`` as
   cylindrical, ``v`` = tube radius x the angle about a tube's centre circle, ``h`` the distance
   from that circle: a condyle whose side walls curl under it). A projection that folds (nearby
   parameters, very different heights) is refused. ``crop`` conditions select part of the data.
3. ``bspline`` (default): a tensor-product B-spline surface ``s(u, v)`` (degree 3, clamped uniform
   knots) fitted to the three coordinates by penalized least squares (sparse design matrix,
   second-difference penalty on the control net), the control net given or grown until the RMS
   distance is below the tolerance. For curved parametrizations the data parameters are then
   corrected to the foot points on the fitted surface and the fit repeated (Hoschek's parameter
   correction), so residuals are orthogonal distances. The result is exactly a ``nurbs`` family
   definition (unit weights), built and differentiated by the same code as any NURBS table.
   ``polynomial`` (planar only): Blankevoort's bivariate polynomial height field of total degree
   ``degree`` (default 6) by least squares (:func:`fit_polynomial`).
   ``tps`` (planar only): Argatov's regularized thin-plate fit, eqs. (34)-(38): the height field
   ``w = b0 + b1 a + b2 b + sum f_k r_k^2 ln r_k`` minimizing the bending energy subject to the RMS
   residual equal to the tolerance (the Lagrange multiplier found by bisection). Assumption: for
   more than 1500 points the radial functions are centred on 1500 of them, spread evenly (a
   low-rank thin-plate spline), which keeps the solve dense but small.
4. Extra per-point fields of the table: ``data_distance`` (m) from each table point to the nearest
   data point (mesh vertices and triangle centroids), so contact code can ignore the extrapolated
   part of the rectangular domain; ``thickness`` (m) to a back surface (a mesh or cloud: along the
   normal; a plane ``plane:y=0``: the perpendicular distance, Bei & Fregly's insert convention).

The fit report (signed orthogonal residuals at the data points: mean, sd, RMS, max, 99th
percentile; control net; parametrization; footprint fraction) is returned, stored in the table
header's ``source`` and optionally drawn as a residual map (PNG). Units: metres throughout.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.interpolate import BSpline, NdBSpline
from scipy.sparse.linalg import splu
from scipy.spatial import cKDTree

from preprocess.errors import DefinitionError, FitError
from preprocess.families import HeightPolynomial, ThinPlate
from preprocess.parametrize import (
    PARAMETRIZATIONS, UNITS, CylindricalParametrization, FitData, Parametrization, PlanarParametrization,
    SphericalParametrization, ToroidalParametrization, axis_vector, check_folds, choose_parametrization, load_data,
)
from preprocess.spec import parse_surface, sample_points

__all__ = ["UNITS", "FitData", "load_data", "Parametrization", "PlanarParametrization", "CylindricalParametrization",
           "SphericalParametrization", "ToroidalParametrization", "choose_parametrization", "fit_bspline", "fit_tps",
           "fit_polynomial", "FitResult", "fit_spec", "FIT_KEYS", "METHODS", "PARAMETRIZATIONS"]

MAX_POLYNOMIAL_DEGREE = 12  # (91 terms; Blankevoort et al. went to 7)
DEFAULT_TOL = 1e-5  # m: RMS tolerance when none is given (half the 0.02 mm target for implant CAD)
FOOTPRINT_FACTOR = 2.0  # a table point is inside the footprint within 2x the data's p95 spacing
TPS_MAX_CENTRES = 1500

#: keys of a ``family = "fit"`` definition in a TOML file (besides the grid keys)
#: the largest fraction of a fit's footprint where the thickness to its back surface may be <= 0
#: (the layer's rims); more means the back surface is not behind the fitted one
MAX_THIN_FRACTION = 0.15

FIT_KEYS = {"input", "param", "axis", "ctrl", "tol", "units", "method", "back", "degree", "smoothing", "crop",
            "max_tilt_deg"}


# -------------------------------------------------------------------------------------- B-splines
def _clamped_knots(lo: float, hi: float, n_ctrl: int, p: int) -> np.ndarray:
    inner = np.linspace(lo, hi, n_ctrl - p + 1)
    return np.concatenate([[lo] * p, inner, [hi] * p])


def _design(x: np.ndarray, t: np.ndarray, p: int) -> sp.csr_matrix:
    return BSpline.design_matrix(x, t, p).tocsr()


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


def _second_difference(n: int) -> sp.csr_matrix:
    return sp.diags([np.ones(n - 2), -2 * np.ones(n - 2), np.ones(n - 2)], [0, 1, 2], shape=(n - 2, n)).tocsr()


Evaluator = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]


@dataclass
class FitResult:
    """A fitted surface: its family (``nurbs`` or ``thin_plate``) and parameters, the parameter
    domain ((u0, u1), (v0, v1)) in metres, the report, the signed orthogonal residual (m) of
    every data point and its foot point's parameters."""

    family: str
    parameters: dict[str, Any]
    domain: tuple[tuple[float, float], tuple[float, float]]
    report: dict[str, Any]
    residuals: np.ndarray
    params: np.ndarray = field(repr=False)


def _foot_points(evaluate: Evaluator, pts: np.ndarray, uv: np.ndarray,
                 domain: tuple[tuple[float, float], tuple[float, float]], steps: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Newton projection of ``pts`` on the surface from the start parameters ``uv``:
    returns the foot parameters and the signed distance along the unit normal ``su x sv``."""
    lo = np.array([domain[0][0], domain[1][0]])
    hi = np.array([domain[0][1], domain[1][1]])
    uv = uv.copy()
    for _ in range(steps):
        s, su, sv = evaluate(uv)
        r = pts - s
        a, b, c = (su * su).sum(1), (su * sv).sum(1), (sv * sv).sum(1)
        ru, rv = (r * su).sum(1), (r * sv).sum(1)
        det = a * c - b * b
        uv[:, 0] += (c * ru - b * rv) / det
        uv[:, 1] += (a * rv - b * ru) / det
        np.clip(uv, lo, hi, out=uv)
    s, su, sv = evaluate(uv)
    n = np.cross(su, sv)
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    return uv, ((pts - s) * n).sum(1)


def _report(method: str, par: Parametrization, res: np.ndarray, **extra: Any) -> dict[str, Any]:
    a = np.abs(res)
    return {"method": method, "parametrization": par.to_dict(), "points": int(len(res)), **extra,
            "residual_mean_m": float(res.mean()), "residual_sd_m": float(res.std()),
            "residual_rms_m": float(np.sqrt(np.mean(res**2))), "residual_max_m": float(a.max()),
            "residual_p99_m": float(np.percentile(a, 99))}


def _net_sizes(extent_u: float, extent_v: float, degree: int, max_ctrl: int) -> list[tuple[int, int]]:
    """Control nets of roughly square spans, refined by 1.5x from 5 spans along the longer side."""
    sizes: list[tuple[int, int]] = []
    h = max(extent_u, extent_v) / 5
    while True:
        m = (max(1, round(extent_u / h)) + degree, max(1, round(extent_v / h)) + degree)
        if max(m) > max_ctrl:
            return sizes or [m]
        if not sizes or m != sizes[-1]:
            sizes.append(m)
        h /= 1.5


def fit_bspline(pts: np.ndarray, par: Parametrization, ctrl: tuple[int, int] | None = None,
                tol: float | None = None, degree: int = 3, smoothing: float = 1e-6, max_ctrl: int = 120,
                corrections: int | None = None) -> FitResult:
    """Penalized least-squares B-spline surface through ``pts`` (m) over the parameters of ``par``.

    ``ctrl``: control net size; or grown by 1.5x from 5 spans until the RMS distance is below
    ``tol`` (m; default 0.01 mm) or the net would exceed ``max_ctrl`` or the point count; the
    best net tried is kept. ``smoothing`` weighs the second-difference penalty against the data
    term (dimensionless, scaled by points per control point). ``corrections``: parameter-correction passes (default 0
    for planar, where the in-plane coordinates are reproduced exactly, else 4).
    """
    u, v, h = par.project(pts)
    check_folds(u, v, h)
    domain = ((float(u.min()), float(u.max())), (float(v.min()), float(v.max())))
    if corrections is None:
        corrections = 0 if par.kind == "planar" else 4
    target = DEFAULT_TOL if tol is None else tol
    sizes = [ctrl] if ctrl else _net_sizes(np.ptp(u), np.ptp(v), degree, max_ctrl)
    best = None
    for mu, mv in sizes:
        if mu * mv > len(pts):
            if best is None:
                raise FitError(f"{len(pts)} points are fewer than the {mu} x {mv} control points")
            break
        if min(mu, mv) <= degree:
            raise FitError(f"a {mu} x {mv} control net is too small for degree {degree}")
        tu = _clamped_knots(*domain[0], mu, degree)
        tv = _clamped_knots(*domain[1], mv, degree)
        Du, Dv = _second_difference(mu), _second_difference(mv)
        P = sp.kron(Du.T @ Du, sp.identity(mv)) + sp.kron(sp.identity(mu), Dv.T @ Dv)
        lam = smoothing * len(pts) / (mu * mv)
        uv = np.column_stack([u, v])
        for k in range(corrections + 1):
            A = _khatri_rao(_design(uv[:, 0], tu, degree), _design(uv[:, 1], tv, degree))
            C = splu((A.T @ A + lam * P).tocsc()).solve(np.asarray(A.T @ pts))
            spline = NdBSpline((tu, tv), C.reshape(mu, mv, 3), degree)

            def evaluate(x: np.ndarray, s: NdBSpline = spline) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
                return s(x), s(x, nu=(1, 0)), s(x, nu=(0, 1))

            foot, res = _foot_points(evaluate, pts, uv, domain)
            if k < corrections:
                uv = foot
        rms = float(np.sqrt(np.mean(res**2)))
        if best is None or rms < best[-1]:  # a finer net can fit worse where the data are sparse
            best = (mu, mv, tu, tv, C, res, foot, rms)
        if ctrl or rms <= target:
            break
    assert best is not None
    mu, mv, tu, tv, C, res, foot, _ = best
    nurbs = {"degree_u": degree, "degree_v": degree, "knots_u": tu.tolist(), "knots_v": tv.tolist(),
             "control_points": C.reshape(mu, mv, 3).tolist()}
    report = _report("bspline", par, res, degree=degree, control_net=[mu, mv], smoothing=smoothing,
                     parameter_corrections=corrections, tolerance_m=tol)
    return FitResult("nurbs", nurbs, domain, report, res, foot)


# -------------------------------------------------------------------------------- thin-plate fit
def _even_subset(uv: np.ndarray, m: int) -> np.ndarray:
    """Indices of about ``m`` points spread evenly over ``uv``: one per occupied grid cell."""
    if len(uv) <= m:
        return np.arange(len(uv))
    lo, span = uv.min(axis=0), np.ptp(uv, axis=0) + 1e-300
    cells = int(math.sqrt(m))
    while True:
        key = np.floor((uv - lo) / span * (cells - 1e-9)).astype(int) @ np.array([cells, 1])
        _, first = np.unique(key, return_index=True)
        if len(first) >= 0.8 * m or cells > 4 * math.sqrt(m):
            return first[:m]
        cells += max(1, cells // 8)


def fit_tps(pts: np.ndarray, par: PlanarParametrization, tol: float | None = None) -> FitResult:
    """Argatov's regularized thin-plate height field over the plane of ``par``: minimize the
    bending energy ``f^T K f`` subject to RMS(w - h) = ``tol`` (m, default 0.01 mm), eqs. (34)-(38).
    If even the interpolating limit cannot reach ``tol``, the least-bending fit with the smallest
    residual is returned and the report says so."""
    if par.kind != "planar":
        raise FitError("the thin-plate (tps) method fits height fields: use it with --param planar")
    a, b, h = par.project(pts)
    check_folds(a, b, h)
    target = DEFAULT_TOL if tol is None else tol
    ab = np.column_stack([a, b])
    scale = float(np.ptp(ab, axis=0).max())
    centres = ab[_even_subset(ab, TPS_MAX_CENTRES)]
    m = len(centres)
    if m < 4:
        raise FitError(f"{len(pts)} points are too few for a thin-plate fit")
    # null space of the side conditions (36): f = Z g with sum f = sum f a = sum f b = 0
    Pm = np.column_stack([np.ones(m), centres / scale])
    Z = np.linalg.qr(Pm, mode="complete")[0][:, 3:]
    Kmm = ThinPlate.kernel(centres, centres, scale)
    rows = range(0, len(pts), 20000)  # assemble the normal equations in chunks (bounded memory)
    G = np.zeros((m, m))
    rhs = np.zeros(m)
    for r0 in rows:
        B = _tps_rows(ab[r0:r0 + 20000], centres, scale, Z)
        G += B.T @ B
        rhs += B.T @ h[r0:r0 + 20000]
    E = np.zeros((m, m))
    E[: m - 3, : m - 3] = Z.T @ Kmm @ Z  # bending energy in the null-space coordinates

    hh = float(h @ h)

    def solve(lam: float) -> tuple[np.ndarray, float]:
        x = np.linalg.solve(G + lam * len(pts) * E + 1e-14 * np.trace(G) / m * np.eye(m), rhs)
        # |h - B x|^2 from the normal equations, without revisiting the rows
        return x, math.sqrt(max(hh - 2 * float(x @ rhs) + float(x @ G @ x), 0.0) / len(pts))

    lo, hi = -16.0, 2.0  # log10 of the multiplier; RMS grows with it
    x, rms = solve(10**lo)
    met = rms <= target
    if met:
        for _ in range(30):
            mid = 0.5 * (lo + hi)
            xm, rm = solve(10**mid)
            if rm <= target:
                lo, x, rms = mid, xm, rm
            else:
                hi = mid
            if hi - lo < 0.05:
                break
    f = Z @ x[: m - 3]
    params = {"origin": par.origin.tolist(), "e1": par.e1.tolist(), "e2": par.e2.tolist(), "normal": par.n.tolist(),
              "centres": centres.tolist(), "weights": f.tolist(), "affine": x[m - 3:].tolist(), "scale": scale}
    fam = ThinPlate(**params)
    domain = ((float(a.min()), float(a.max())), (float(b.min()), float(b.max())))
    foot, res = _foot_points(lambda q: fam.evaluate(q[:, 0], q[:, 1]), pts, ab, domain)
    report = _report("tps", par, res, centres=m, multiplier=10**lo * len(pts), tolerance_m=tol,
                     tolerance_met=bool(met))
    return FitResult("thin_plate", params, domain, report, res, foot)


def fit_polynomial(pts: np.ndarray, par: PlanarParametrization, degree: int = 6) -> FitResult:
    """Blankevoort's height field over the plane of ``par``: the bivariate polynomial of total
    degree ``degree`` (``c_ij`` for ``i + j <= degree``, in ``(u/L, v/L)`` with L the data's largest
    distance from the origin along e1 or e2, so the normal equations stay conditioned) fitted to
    the heights by least squares. Blankevoort et al. (1991) used degrees 4, 6 and 7 for the tibial
    plateaus and report the residuals' SD (0.27 mm medial, degree 6; 0.39 mm lateral, degree 7)."""
    if par.kind != "planar":
        raise FitError("the polynomial method fits height fields: use it with --param planar")
    if not (isinstance(degree, int) and 1 <= degree <= MAX_POLYNOMIAL_DEGREE):
        raise FitError(f"polynomial fit: degree must be an integer from 1 to {MAX_POLYNOMIAL_DEGREE}, got {degree!r}")
    a, b, h = par.project(pts)
    check_folds(a, b, h)
    powers = [(i, j) for i in range(degree + 1) for j in range(degree + 1 - i)]
    if len(pts) < 2 * len(powers):
        raise FitError(f"{len(pts)} points are too few for a polynomial of degree {degree} ({len(powers)} terms)")
    scale = float(max(np.abs(a).max(), np.abs(b).max()))
    A = np.column_stack([(a / scale) ** i * (b / scale) ** j for i, j in powers])
    x = np.linalg.lstsq(A, h, rcond=None)[0]
    c = np.zeros((degree + 1, degree + 1))
    for (i, j), value in zip(powers, x):
        c[i, j] = value
    params = {"coefficients": c.tolist(), "scale": scale, "origin": par.origin.tolist(), "e1": par.e1.tolist(),
              "e2": par.e2.tolist(), "normal": par.n.tolist()}
    fam = HeightPolynomial(**params)
    domain = ((float(a.min()), float(a.max())), (float(b.min()), float(b.max())))
    foot, res = _foot_points(lambda q: fam.evaluate(q[:, 0], q[:, 1]), pts, np.column_stack([a, b]), domain)
    return FitResult("height_polynomial", params, domain, _report("polynomial", par, res, degree=degree), res, foot)


def _tps_rows(ab: np.ndarray, centres: np.ndarray, scale: float, Z: np.ndarray) -> np.ndarray:
    """Design rows ``[K Z, 1, a/L, b/L]`` of the thin-plate fit in null-space coordinates."""
    return np.column_stack([ThinPlate.kernel(ab, centres, scale) @ Z, np.ones(len(ab)), ab / scale])


# ----------------------------------------------------------------------------- extra fields
def _data_distance(tree: cKDTree) -> Callable[[np.ndarray], np.ndarray]:
    def field_(points: np.ndarray) -> np.ndarray:
        return tree.query(points[..., 2:5].reshape(-1, 3))[0].reshape(points.shape[:-1])
    return field_


def _thickness(back: str, units: str, base: Path) -> Callable[[np.ndarray], np.ndarray]:
    """Thickness (m) at table points to ``back``: ``plane:AXIS=VALUE`` (VALUE in ``units``; the
    perpendicular distance to the plane) or a mesh/cloud file (the distance along the normal to
    the back point nearest the normal line; negative where the back lies in front)."""
    if back.startswith("plane:"):
        try:
            name, value = back[6:].split("=")
            m = axis_vector(name.strip())
            offset = float(value) * UNITS[units]
        except (ValueError, FitError):
            raise FitError(f"invalid back plane {back!r}: use plane:AXIS=VALUE, e.g. plane:y=0") from None

        def plane(points: np.ndarray) -> np.ndarray:
            # signed so that a surface facing away from the plane has positive thickness
            side = np.sign(np.median((points[..., 5:8] @ m) * (points[..., 2:5] @ m - offset)))
            return np.abs(points[..., 2:5] @ m - offset) * (side if side != 0 else 1.0)
        return plane
    path = Path(back) if Path(back).is_absolute() else base / back
    data = load_data(path, units)
    tree = cKDTree(data.footprint_points)

    def surface(points: np.ndarray) -> np.ndarray:
        p = points[..., 2:5].reshape(-1, 3)
        n = points[..., 5:8].reshape(-1, 3)
        _, idx = tree.query(p, k=min(16, tree.n))
        d = tree.data[idx] - p[:, None, :]
        along = (d * n[:, None, :]).sum(-1)
        lateral = np.linalg.norm(d - along[..., None] * n[:, None, :], axis=-1)
        best = np.argmin(lateral, axis=1)
        return (-along[np.arange(len(p)), best]).reshape(points.shape[:-1])
    return surface


# --------------------------------------------------------------------------------- fit to table
def _bspline(name: str, pts: np.ndarray, par: Any, d: Mapping[str, Any], tol: float | None) -> FitResult:
    ctrl = tuple(d["ctrl"]) if d.get("ctrl") is not None else None
    return fit_bspline(pts, par, ctrl=ctrl, tol=tol, degree=int(d.get("degree", 3)),
                       smoothing=float(d.get("smoothing", 1e-6)))


def _tps(name: str, pts: np.ndarray, par: Any, d: Mapping[str, Any], tol: float | None) -> FitResult:
    return fit_tps(pts, par, tol=tol)


def _polynomial(name: str, pts: np.ndarray, par: Any, d: Mapping[str, Any], tol: float | None) -> FitResult:
    degree = d.get("degree", 6)
    if isinstance(degree, bool) or not isinstance(degree, int) or not 1 <= degree <= MAX_POLYNOMIAL_DEGREE:
        raise FitError(f"{name}: the polynomial's degree must be an integer from 1 to {MAX_POLYNOMIAL_DEGREE}, "
                       f"got {degree!r}")
    return fit_polynomial(pts, par, degree)


#: the fitting methods by name: ``(fit(name, points, parametrization, definition, tol), height_field)``,
#: a height-field method needing a planar parametrization
METHODS: dict[str, tuple[Callable[[str, np.ndarray, Any, Mapping[str, Any], float | None], FitResult], bool]] = {
    "bspline": (_bspline, False), "tps": (_tps, True), "polynomial": (_polynomial, True)}


def fit_spec(name: str, d: Mapping[str, Any], base: str | Path = ".") -> tuple[Any, dict[str, Any], FitResult]:
    """Fit the data of a ``family = "fit"`` definition and return the table's :class:`SurfaceSpec`
    (a ``nurbs``, ``thin_plate`` or ``height_polynomial`` surface with the extra fields), the report and
    the fit.

    Keys: ``input`` (path, relative to ``base``), ``param`` (planar | cylindrical | spherical |
    toroidal | auto), ``axis``, ``crop`` (a condition ``AXIS<VALUE`` or a list of them, see
    :func:`load_data`), ``max_tilt_deg`` (a mesh's triangles tilted more than this from the
    parametrization's outward direction are left out: walls, see :func:`_facing`), ``ctrl``
    ([m, n]), ``tol`` (m), ``units``, ``method`` (bspline | tps | polynomial),
    ``back`` (a path or ``plane:AXIS=VALUE``), ``degree`` (the B-spline's, default 3; the
    polynomial's total degree, default 6), ``smoothing``, plus the grid keys
    (``grid``, ``record``, ``codec``, ...). The table's parameter range is the data's.
    """
    if "input" not in d:
        raise DefinitionError(f"{name}: a fit definition needs 'input' (a mesh or point cloud)")
    base = Path(base)
    path = Path(d["input"]) if Path(d["input"]).is_absolute() else base / d["input"]
    units = d.get("units", "m")
    method = d.get("method", "bspline")
    if method not in METHODS:
        raise FitError(f"{name}: unknown method {method!r}; choose {', '.join(METHODS)}")
    tol = d.get("tol")
    if tol is not None and not (isinstance(tol, (int, float)) and 0 < tol < math.inf):  # (0, -1, nan fitted silently)
        raise FitError(f"{name}: tol must be a positive RMS distance (m), got {tol!r}")
    crop = d.get("crop", ())
    crop = [crop] if isinstance(crop, str) else list(crop)
    data = load_data(path, units, crop)
    par, why = choose_parametrization(data, d.get("param", "auto"), d.get("axis"))
    walls = 0
    if d.get("max_tilt_deg") is not None:
        # read again without the walls: which triangles are walls depends on the parametrization,
        # chosen (its axis from the normals) on all the data (a mesh is read in milliseconds)
        everything = len(data.points)
        data = load_data(path, units, crop, _facing(par, d["max_tilt_deg"]))
        walls = everything - len(data.points)
    fit_method, height_field = METHODS[method]
    if height_field and not isinstance(par, PlanarParametrization):
        raise FitError(f"{path}: the {method} method fits height fields; the data need {why}")
    fit = fit_method(name, data.points, par, d, tol)
    grid_keys = {k: v for k, v in d.items() if k not in FIT_KEYS | {"family"}}
    (u0, u1), (v0, v1) = fit.domain
    definition = {"family": fit.family, **fit.parameters, "grid": [201, 201], "record": [9, 9], **grid_keys,
                  "u_range": [u0, u1], "v_range": [v0, v1]}
    # a probe grid of at most 101 x 101 points over the same domain, for the footprint, the outward
    # side (the mesh's normals, else the parametrization's projection direction) and the thickness
    spec = parse_surface(name, {**definition, "grid": [min(g, 101) for g in parse_surface(name, definition).grid],
                                "record": [1, 1]})
    probe = sample_points(spec, 0, spec.grid[0], 0, spec.grid[1])
    tree = cKDTree(data.footprint_points)
    spacing = tree.query(data.footprint_points, k=2)[0][:, 1]
    radius = FOOTPRINT_FACTOR * float(np.percentile(spacing, 95))
    ref = data.normals if data.normals is not None else par.outward(data.points)
    _, near = cKDTree(data.points).query(probe[..., 2:5].reshape(-1, 3))
    dist = _data_distance(tree)(probe).ravel()
    inside = dist <= radius
    agree = (probe[..., 5:8].reshape(-1, 3)[inside] * ref[near[inside]]).sum(1)
    flip = bool(np.median(agree) < 0)
    extras: dict[str, Callable[[np.ndarray], np.ndarray]] = {"data_distance": _data_distance(tree)}
    report = {**fit.report, "input": str(path), "units": units, "parametrization_chosen": why, "crop": crop,
              "max_tilt_deg": d.get("max_tilt_deg"), "points_left_out": walls, "footprint_radius_m": radius,
              "footprint_fraction": float(inside.mean()), "flipped": flip}
    if "back" in d:
        extras["thickness"] = _back_thickness(name, str(d["back"]), units, base, probe, flip, inside, report)
    spec = parse_surface(name, {**definition, "flip": flip, "fit_report": report})
    return dataclasses.replace(spec, extras=extras), report, fit


def _back_thickness(name: str, back: str, units: str, base: Path, probe: np.ndarray, flip: bool, inside: np.ndarray,
                    report: dict[str, Any]) -> Callable[[np.ndarray], np.ndarray]:
    """The layer's thickness up to the ``back`` surface (:func:`_thickness`), checked on the probe
    grid's points inside the footprint and summarised into ``report``."""
    thick = _thickness(back, units, base)
    oriented = probe.copy()
    oriented[..., 5:8] *= -1 if flip else 1
    t = thick(oriented).ravel()[inside]
    # a natural layer thins out to nothing at its rims (and a mesh's back there can come out a
    # little in front): a minority of points without thickness is the layer's edge; most of
    # them is a back surface on the wrong side
    if np.mean(t <= 0) > MAX_THIN_FRACTION:
        raise FitError(f"{name}: the back surface {back!r} does not lie behind the fitted surface "
                       f"({np.mean(t <= 0):.0%} of the footprint has thickness <= 0)")
    report["back"] = back
    report["thickness_m"] = {"min": float(t.min()), "median": float(np.median(t)), "max": float(t.max()),
                             "fraction_not_positive": float(np.mean(t <= 0))}
    return thick


def _facing(par: Parametrization, max_tilt_deg: Any) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """The test that keeps a mesh's triangles whose normal lies within ``max_tilt_deg`` of the
    parametrization's outward direction at their centroid: walls that rise steeply from (or
    curl back under) the surface, which a height field over the parameters can only follow by
    ringing around them (a femoral component's condyle sides and notch, seen from its
    cylinder axis), are left out of the fit and of its footprint."""
    try:
        tilt = float(max_tilt_deg)
    except (TypeError, ValueError):
        raise FitError(f"max_tilt_deg must be a number of degrees, got {max_tilt_deg!r}") from None
    if not 0 < tilt < 90:
        raise FitError(f"max_tilt_deg must lie between 0 and 90 degrees, got {tilt:g}")
    cos_tilt = math.cos(math.radians(tilt))

    def keep(centroids: np.ndarray, normals: np.ndarray) -> np.ndarray:
        along = (normals * par.outward(centroids)).sum(axis=1)
        return along * (np.sign(np.median(along)) or 1.0) >= cos_tilt  # the mesh may face either way
    return keep


def save_residual_map(fit: FitResult, path: Path) -> None:
    """Scatter plot of the signed residuals (mm) over the foot parameters (mm)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 5))
    lim = max(float(np.percentile(np.abs(fit.residuals), 99)) * 1e3, 1e-6)
    sc = ax.scatter(fit.params[:, 0] * 1e3, fit.params[:, 1] * 1e3, c=fit.residuals * 1e3, s=2, cmap="coolwarm",
                    vmin=-lim, vmax=lim)
    fig.colorbar(sc, label="signed distance to the fitted surface [mm]")
    r = fit.report
    ax.set(xlabel="u [mm]", ylabel="v [mm]",
           title=f"{r['parametrization']['kind']} {r['method']}: RMS {r['residual_rms_m'] * 1e3:.4f} mm, "
                 f"p99 {r['residual_p99_m'] * 1e3:.4f} mm")
    ax.set_aspect("equal")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
