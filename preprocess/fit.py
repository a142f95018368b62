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
import re
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.interpolate import BSpline, NdBSpline
from scipy.optimize import least_squares
from scipy.sparse.linalg import splu
from scipy.spatial import cKDTree

from preprocess.errors import DefinitionError, FitError
from preprocess.families import HeightPolynomial, ThinPlate
from preprocess.spec import parse_surface, sample_points

__all__ = ["UNITS", "FitData", "load_data", "Parametrization", "PlanarParametrization", "CylindricalParametrization",
           "SphericalParametrization", "ToroidalParametrization", "choose_parametrization", "fit_bspline", "fit_tps",
           "fit_polynomial", "FitResult", "fit_spec", "FIT_KEYS"]

UNITS = {"m": 1.0, "mm": 1e-3, "cm": 1e-2, "um": 1e-6}
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


# --------------------------------------------------------------------------------------------- data
@dataclass(frozen=True)
class FitData:
    """Points to fit (m), their unit normals when the input is a mesh, denser footprint samples
    (vertices and triangle centroids) and the area-weighted mean face normal."""

    path: Path
    points: np.ndarray
    normals: np.ndarray | None = None
    footprint: np.ndarray | None = None
    mean_normal: np.ndarray | None = None

    @property
    def footprint_points(self) -> np.ndarray:
        return self.points if self.footprint is None else self.footprint


def _crop_mask(crop: Sequence[str]) -> Callable[[np.ndarray], np.ndarray]:
    """The test of ``AXIS<VALUE`` / ``AXIS>VALUE`` conditions (all must hold) on points in the
    input's units."""
    conditions = []
    for c in crop:
        m = re.fullmatch(r"\s*([xyz])\s*([<>])\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*", c)
        if m is None:
            raise FitError(f"invalid crop {c!r}: use AXIS<VALUE or AXIS>VALUE with AXIS x, y or z and VALUE "
                           "in the input's units, e.g. z<0.6")
        conditions.append(("xyz".index(m[1]), m[2] == "<", float(m[3])))

    def mask(pts: np.ndarray) -> np.ndarray:
        keep = np.ones(len(pts), bool)
        for k, below, value in conditions:
            keep &= pts[:, k] < value if below else pts[:, k] > value
        return keep
    return mask


def load_data(path: str | Path, units: str = "m", crop: Sequence[str] = (),
              keep_faces: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None) -> FitData:
    """Read a mesh (STL, OBJ, PLY) or a point cloud (XYZ/CSV: x y z per row) and convert to metres.
    ``crop``: keep only the points (a mesh: the triangles whose centroids) satisfy every condition
    ``AXIS<VALUE`` / ``AXIS>VALUE`` (VALUE in ``units``), e.g. one condyle of a femoral component.
    ``keep_faces(centroids_m, unit_normals)``: a mesh's triangles to keep (a boolean per triangle)."""
    path = Path(path)
    if units not in UNITS:
        raise FitError(f"unknown units {units!r}; choose one of {', '.join(UNITS)}")
    keep = _crop_mask(crop)
    if not path.is_file():
        raise FitError(f"{path}: no such file")
    suffix = path.suffix.lower()
    if keep_faces is not None and suffix in (".xyz", ".csv", ".txt"):
        raise FitError(f"{path}: a point cloud has no triangle normals to leave walls out by (max_tilt_deg)")
    normals = footprint = mean_normal = None
    try:
        if suffix in (".xyz", ".csv", ".txt"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # an empty file is reported below
                pts = np.loadtxt(path, delimiter="," if suffix == ".csv" else None, ndmin=2)
            pts = pts[:, :3] if pts.size else np.zeros((0, 3))
            if crop and pts.shape[1:] == (3,):
                pts = pts[keep(pts)]
        else:
            import trimesh

            # unprocessed first: processing drops vertices that are not finite without a word
            mesh: Any = trimesh.load(path, force="mesh", process=False)  # a Trimesh (loosely typed by the library)
            bad = int((~np.isfinite(np.asarray(mesh.vertices))).any(axis=1).sum())
            if bad:
                raise FitError(f"{path}: non-finite coordinates ({bad} of {len(mesh.vertices)} vertices)")
            mesh.process()  # (as trimesh.load does by default: duplicate vertices merged)
            if crop and len(mesh.faces):
                mesh = mesh.submesh([np.flatnonzero(keep(mesh.triangles_center))], append=True)
            if keep_faces is not None and len(mesh.faces):
                chosen = keep_faces(mesh.triangles_center * UNITS[units], mesh.face_normals)
                mesh = mesh.submesh([np.flatnonzero(chosen)], append=True) if chosen.any() else trimesh.Trimesh()
            pts = np.asarray(mesh.vertices, dtype=np.float64)
            if len(mesh.faces) and np.isfinite(pts).all():
                area = mesh.area_faces
                mean_normal = (mesh.face_normals * area[:, None]).sum(axis=0) / max(area.sum(), 1e-300)
                normals = np.asarray(mesh.vertex_normals, dtype=np.float64)
                footprint = np.concatenate([pts, mesh.triangles_center]) * UNITS[units]
    except FitError:
        raise
    except Exception as exc:  # readers raise assorted errors for unreadable files
        raise FitError(f"{path}: cannot read ({exc})") from None
    if pts.ndim != 2 or pts.shape[0] == 0 or pts.shape[1] != 3:
        raise FitError(f"{path}: no points" + (f" satisfy the crop {', '.join(crop)}" if crop else "")
                       + (" face the parametrization's outward side within max_tilt_deg" if keep_faces else "")
                       + ("" if crop or keep_faces else " (an empty, truncated or unreadable file)"))
    if not np.isfinite(pts).all():
        raise FitError(f"{path}: non-finite coordinates ({int((~np.isfinite(pts)).any(axis=1).sum())} points)")
    if len(pts) < 3:  # (a mesh of degenerate triangles merges to fewer)
        raise FitError(f"{path}: {len(pts)} point(s) (a mesh's merged); a surface needs at least 3")
    pts = pts * UNITS[units]
    extent = float(np.ptp(pts, axis=0).max())
    if extent > 1.0:
        warnings.warn(f"{path}: the data span {extent:.3g} m; for a joint surface that is suspicious "
                      "(wrong units? use --units mm)", stacklevel=2)
    return FitData(path, pts, normals, footprint, mean_normal)


# ---------------------------------------------------------------------------- parametrizations
class Parametrization(ABC):
    """Maps data points to parameters ``(u, v)`` (m) and a height ``h`` (m) along the projection."""

    kind: str

    @abstractmethod
    def project(self, pts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(u, v, h)`` of points ``(N, 3)``; ``u x v`` of the fitted surface points along ``outward``."""

    @abstractmethod
    def outward(self, pts: np.ndarray) -> np.ndarray:
        """Unit projection direction at the points (the side the table's normals face)."""

    @abstractmethod
    def to_dict(self) -> dict[str, Any]:
        ...


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


def _perpendicular(n: np.ndarray) -> np.ndarray:
    helper = np.array([1.0, 0, 0]) if abs(n[0]) < 0.9 else np.array([0, 0, 1.0])
    return _unit(helper - (helper @ n) * n)


def _check_spread(pts: np.ndarray) -> np.ndarray:
    """Singular values of the centred points; refuse fewer than three points or (nearly) collinear data."""
    if len(pts) < 3:
        raise FitError(f"too few points to fit a surface: {len(pts)}")
    q = pts - pts.mean(axis=0)
    s = np.linalg.svd(q[:: max(1, len(q) // 20000)], compute_uv=False)
    if s[1] <= 1e-9 * s[0]:
        raise FitError("degenerate data: the points are (nearly) collinear")
    return s


@dataclass(frozen=True)
class PlanarParametrization(Parametrization):
    """Projection on a plane: origin ``o``, in-plane unit axes ``e1``, ``e2`` and normal ``n``
    (right-handed: e1 x e2 = n); ``(u, v) = ((p - o).e1, (p - o).e2)``, ``h = (p - o).n``."""

    origin: np.ndarray
    e1: np.ndarray
    e2: np.ndarray
    n: np.ndarray
    kind = "planar"

    @classmethod
    def fit(cls, pts: np.ndarray, axis: str | np.ndarray | None = None,
            outward: np.ndarray | None = None) -> PlanarParametrization:
        """Plane through the centroid normal to ``axis`` (x, y, z, -x, ... or a vector), or the
        best-fit plane (smallest principal direction) when ``axis`` is None, its normal turned
        towards ``outward`` (a mesh's mean normal) when given, else towards its largest component."""
        _check_spread(pts)
        c = pts.mean(axis=0)
        if axis is None:
            n = np.linalg.svd(pts[:: max(1, len(pts) // 20000)] - c, full_matrices=False)[2][2]
            ref = outward if outward is not None and np.linalg.norm(outward) > 0 else np.sign(n[np.argmax(abs(n))]) * n
            n = n if n @ ref >= 0 else -n
        else:
            n = _axis_vector(axis)
        e1 = _perpendicular(n)
        return cls(c, e1, np.cross(n, e1), n)

    def project(self, pts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        q = pts - self.origin
        return q @ self.e1, q @ self.e2, q @ self.n

    def outward(self, pts: np.ndarray) -> np.ndarray:
        return np.broadcast_to(self.n, pts.shape)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "origin": self.origin.tolist(), "e1": self.e1.tolist(), "e2": self.e2.tolist(),
                "normal": self.n.tolist()}


@dataclass(frozen=True)
class CylindricalParametrization(Parametrization):
    """Cylindrical coordinates about the axis through ``origin`` along ``axis``: ``u = R theta``
    (theta from ``e1`` towards ``e2 = axis x e1``, in (-pi, pi]), ``v = (p - o).axis``,
    ``h`` = distance from the axis; ``R`` is the data's mean radius. Normals face away from the axis."""

    origin: np.ndarray
    axis: np.ndarray
    e1: np.ndarray
    radius: float
    kind = "cylindrical"

    @property
    def e2(self) -> np.ndarray:
        return np.cross(self.axis, self.e1)

    @classmethod
    def fit(cls, data: FitData, axis: str | np.ndarray | None = None) -> CylindricalParametrization:
        """Axis given, or the direction least represented in the normals (a cylinder's normals are
        all perpendicular to its axis); the axis position from a circle fit of the points projected
        along it; ``e1`` towards the data's mean direction, so the data sit around theta = 0."""
        pts = data.points
        _check_spread(pts)
        if axis is None:
            nrm = data.normals if data.normals is not None else _estimate_normals(pts)
            a = np.linalg.eigh(nrm.T @ nrm)[1][:, 0]
            a = a * np.sign(a[np.argmax(abs(a))])
        else:
            a = _axis_vector(axis)
        e1, e2 = _perpendicular(a), np.cross(a, _perpendicular(a))
        x, y = pts @ e1, pts @ e2
        cx, cy, r = _circle_fit(x, y)
        origin = cx * e1 + cy * e2 + (pts.mean(axis=0) @ a) * a
        q = pts - origin
        radial = q - np.outer(q @ a, a)
        mean_dir = radial.mean(axis=0) if np.linalg.norm(radial.mean(axis=0)) > 1e-9 * r else e1
        return cls(origin, a, _unit(mean_dir - (mean_dir @ a) * a), float(np.linalg.norm(radial, axis=1).mean()))

    def project(self, pts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        q = pts - self.origin
        x, y = q @ self.e1, q @ self.e2
        return self.radius * np.arctan2(y, x), q @ self.axis, np.hypot(x, y)

    def outward(self, pts: np.ndarray) -> np.ndarray:
        q = pts - self.origin
        r = q - np.outer(q @ self.axis, self.axis)
        return r / np.linalg.norm(r, axis=1, keepdims=True)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "origin": self.origin.tolist(), "axis": self.axis.tolist(), "e1": self.e1.tolist(),
                "radius_m": self.radius}


@dataclass(frozen=True)
class SphericalParametrization(Parametrization):
    """Longitude/latitude about ``centre`` with the dome direction ``d`` on the equator at
    longitude 0 and the pole ``p`` perpendicular to it: ``u = R lon``, ``v = R lat``, ``h = |q|``.
    Keeping the pole out of the dome keeps the grid regular. Normals face away from the centre."""

    centre: np.ndarray
    d: np.ndarray
    pole: np.ndarray
    radius: float
    kind = "spherical"

    @classmethod
    def fit(cls, data: FitData, axis: str | np.ndarray | None = None) -> SphericalParametrization:
        """Centre and radius by an algebraic sphere fit; the dome direction ``axis`` given or the
        mean direction of the data from the centre."""
        pts = data.points
        _check_spread(pts)
        c, r = _sphere_fit(pts)
        d = _axis_vector(axis) if axis is not None else _unit((pts - c).mean(axis=0))
        return cls(c, d, _perpendicular(d), r)

    def project(self, pts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        q = pts - self.centre
        w = np.cross(self.pole, self.d)
        rho = np.linalg.norm(q, axis=1)
        lon = np.arctan2(q @ w, q @ self.d)
        lat = np.arcsin(np.clip(q @ self.pole / rho, -1, 1))
        return self.radius * lon, self.radius * lat, rho

    def outward(self, pts: np.ndarray) -> np.ndarray:
        q = pts - self.centre
        return q / np.linalg.norm(q, axis=1, keepdims=True)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "centre": self.centre.tolist(), "direction": self.d.tolist(),
                "pole": self.pole.tolist(), "radius_m": self.radius}


@dataclass(frozen=True)
class ToroidalParametrization(Parametrization):
    """Torus coordinates for a surface that wraps around an axis and also curls across it (a
    femoral condyle with its side walls): ``u = R theta`` about the axis as in
    :class:`CylindricalParametrization`; in the half-plane of each ``theta``, the angle ``phi``
    about the tube centre at ``rho0`` from the axis and ``a0`` along it, measured from the data's
    mean direction ``phi0`` (so the seam lies opposite the data), ``v = r phi``; ``h`` the distance
    from the tube's centre circle. Normals face away from that circle."""

    origin: np.ndarray
    axis: np.ndarray
    e1: np.ndarray
    radius: float
    rho0: float
    a0: float
    tube_radius: float
    phi0: float
    kind = "toroidal"

    @classmethod
    def fit(cls, data: FitData, axis: str | np.ndarray | None = None) -> ToroidalParametrization:
        """The axis and ``theta`` as for the cylindrical parametrization; the tube's centre and
        radius, and the axis position across itself (a cylinder's circle fit is biased by the
        tube's curl), by a least-squares torus fit started from a circle fit of the points in the
        (distance from the axis, position along the axis) half-plane; bounded so that the axis
        moves by less than half the tube radius and stays outside the tube."""
        cyl = CylindricalParametrization.fit(data, axis)
        e2 = np.cross(cyl.axis, cyl.e1)
        pts = data.points[:: max(1, len(data.points) // 5000)]
        origin = cyl.origin
        rho0, a0, r = _circle_fit(*cls._half_plane(origin, cyl.axis, pts))
        if math.isfinite(r) and r > 0 and rho0 > 0:
            def distance(x: np.ndarray) -> np.ndarray:  # x: axis shift along e1, e2; rho0, a0, r
                rho, a = cls._half_plane(cyl.origin + x[0] * cyl.e1 + x[1] * e2, cyl.axis, pts)
                return np.hypot(rho - x[2], a - x[3]) - x[4]

            lo, hi = [-r / 2, -r / 2, 0.0, -np.inf, 0.0], [r / 2, r / 2, np.inf, np.inf, np.inf]
            x = least_squares(distance, [0.0, 0.0, rho0, a0, r], bounds=(lo, hi), x_scale=r).x
            origin, (rho0, a0, r) = cyl.origin + x[0] * cyl.e1 + x[1] * e2, x[2:]
        if not (math.isfinite(r) and r > 0 and rho0 > 0):
            raise FitError(f"{data.path}: the data do not curl around a tube about the axis "
                           f"(tube centre {rho0:.3g} m from the axis, radius {r:.3g} m); use cylindrical")
        rho, a = cls._half_plane(origin, cyl.axis, data.points)
        phi = np.arctan2(a - a0, rho - rho0)
        phi0 = float(np.arctan2(np.sin(phi).mean(), np.cos(phi).mean()))
        return cls(origin, cyl.axis, cyl.e1, cyl.radius, float(rho0), float(a0), float(r), phi0)

    @staticmethod
    def _half_plane(origin: np.ndarray, axis: np.ndarray, pts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        q = pts - origin
        a = q @ axis
        return np.linalg.norm(q - np.outer(a, axis), axis=1), a

    def project(self, pts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        q = pts - self.origin
        theta = np.arctan2(q @ np.cross(self.axis, self.e1), q @ self.e1)
        rho, a = self._half_plane(self.origin, self.axis, pts)
        phi = np.angle(np.exp(1j * (np.arctan2(a - self.a0, rho - self.rho0) - self.phi0)))  # wrapped to (-pi, pi]
        return self.radius * theta, self.tube_radius * phi, np.hypot(rho - self.rho0, a - self.a0)

    def outward(self, pts: np.ndarray) -> np.ndarray:
        q = pts - self.origin
        rho, a = self._half_plane(self.origin, self.axis, pts)
        radial = (q - np.outer(a, self.axis)) / rho[:, None]
        w = (rho - self.rho0)[:, None] * radial + (a - self.a0)[:, None] * self.axis
        return w / np.linalg.norm(w, axis=1, keepdims=True)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "origin": self.origin.tolist(), "axis": self.axis.tolist(), "e1": self.e1.tolist(),
                "radius_m": self.radius, "tube_centre_m": [self.rho0, self.a0], "tube_radius_m": self.tube_radius,
                "phi0_rad": self.phi0}


def _axis_vector(axis: str | np.ndarray) -> np.ndarray:
    if isinstance(axis, str):
        sign = -1.0 if axis.startswith("-") else 1.0
        name = axis.lstrip("+-").lower()
        if name in ("x", "y", "z"):
            v = np.zeros(3)
            v["xyz".index(name)] = sign
            return v
        try:
            axis = np.array([float(x) for x in axis.split(",")])
        except ValueError:
            raise FitError(f"invalid axis {axis!r}: use x, y, z (optionally signed) or a vector ax,ay,az") from None
    v = np.asarray(axis, float)
    if v.shape != (3,) or not np.isfinite(v).all() or np.linalg.norm(v) == 0:
        raise FitError(f"invalid axis {axis!r}: use x, y, z (optionally signed) or a vector ax,ay,az")
    return v / np.linalg.norm(v)


def _circle_fit(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    """Algebraic (Kasa) circle fit: centre and radius."""
    A = np.column_stack([2 * x, 2 * y, np.ones_like(x)])
    (cx, cy, k), *_ = np.linalg.lstsq(A, x**2 + y**2, rcond=None)
    return float(cx), float(cy), float(np.sqrt(k + cx**2 + cy**2))


def _sphere_fit(pts: np.ndarray) -> tuple[np.ndarray, float]:
    """Algebraic sphere fit: centre and radius (m)."""
    A = np.column_stack([2 * pts, np.ones(len(pts))])
    x, *_ = np.linalg.lstsq(A, (pts**2).sum(axis=1), rcond=None)
    return x[:3], float(np.sqrt(x[3] + x[:3] @ x[:3]))


def _estimate_normals(pts: np.ndarray, k: int = 12) -> np.ndarray:
    """Unoriented normals of a point cloud: the smallest principal direction of each point's
    ``k`` nearest neighbours."""
    _, idx = cKDTree(pts).query(pts, k=min(k, len(pts)))
    nb = pts[idx] - pts[idx].mean(axis=1, keepdims=True)
    return np.linalg.eigh(np.einsum("nki,nkj->nij", nb, nb))[1][:, :, 0]


def choose_parametrization(data: FitData, kind: str = "auto",
                           axis: str | np.ndarray | None = None) -> tuple[Parametrization, str]:
    """The parametrization named by ``kind`` or, for ``auto``, the first that suits the data:
    planar when the mean unit normal is >= 0.85 long (the surface faces one way) and the projection
    does not fold; spherical when a sphere fits within 5 % of its radius and the data span less
    than 150 degrees seen from its centre (a dome); else cylindrical.
    Returns the parametrization and a sentence saying why."""
    if kind == "planar":
        return PlanarParametrization.fit(data.points, axis, data.mean_normal), "planar (requested)"
    if kind == "cylindrical":
        return CylindricalParametrization.fit(data, axis), "cylindrical (requested)"
    if kind == "spherical":
        return SphericalParametrization.fit(data, axis), "spherical (requested)"
    if kind == "toroidal":
        return ToroidalParametrization.fit(data, axis), "toroidal (requested)"
    if kind != "auto":
        raise FitError(f"unknown parametrization {kind!r}; choose planar, cylindrical, spherical, toroidal or auto")
    pts = data.points
    _check_spread(pts)
    if data.mean_normal is not None:
        facing = float(np.linalg.norm(data.mean_normal))
    else:  # a cloud's normals, turned towards the best-fit plane's normal
        nrm = _estimate_normals(pts)
        n0 = np.linalg.svd(pts[:: max(1, len(pts) // 20000)] - pts.mean(axis=0), full_matrices=False)[2][2]
        facing = float(np.linalg.norm((nrm * np.sign(nrm @ n0)[:, None]).mean(axis=0)))
    if facing >= 0.85:
        par = PlanarParametrization.fit(pts, axis, data.mean_normal)
        try:
            check_folds(*par.project(pts))
            return par, f"planar (auto: mean normal length {facing:.2f} >= 0.85)"
        except FitError:
            pass
    c, r = _sphere_fit(pts)
    q = (pts - c) / np.linalg.norm(pts - c, axis=1, keepdims=True)
    rel = float(np.std(np.linalg.norm(pts - c, axis=1) - r) / r)
    span = 2 * float(np.degrees(np.arccos(np.clip(q @ _unit(q.mean(axis=0)), -1, 1)).max()))
    if rel < 0.05 and span < 150:
        return SphericalParametrization.fit(data, axis), (f"spherical (auto: sphere fit within {rel:.1%} of R, "
                                                         f"a dome of {span:.0f} deg)")
    return CylindricalParametrization.fit(data, axis), (f"cylindrical (auto: mean normal length {facing:.2f}, "
                                                       f"sphere fit off by {rel:.1%} of R, spanning {span:.0f} deg)")


def check_folds(u: np.ndarray, v: np.ndarray, h: np.ndarray) -> None:
    """Refuse a projection in which nearby parameters carry very different heights (a fold)."""
    uv = np.column_stack([u, v])
    tree = cKDTree(uv)
    d, _ = tree.query(uv, k=2)
    spacing = float(np.median(d[:, 1]))
    pairs = tree.query_pairs(r=0.5 * spacing, output_type="ndarray")
    if len(pairs):
        dh = np.abs(h[pairs[:, 0]] - h[pairs[:, 1]])
        if (dh > 20 * spacing).any():
            k = pairs[np.argmax(dh)]
            raise FitError(f"the projection folds: points {int(k[0])} and {int(k[1])} map to nearly the same "
                           f"parameters with heights {dh.max() * 1e3:.3g} mm apart; try another --param "
                           "(planar, cylindrical, spherical, toroidal), --axis or --crop")


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
            m = _axis_vector(name.strip())
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
    if method not in ("bspline", "tps", "polynomial"):
        raise FitError(f"{name}: unknown method {method!r}; choose bspline, tps or polynomial")
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
    ctrl = tuple(d["ctrl"]) if d.get("ctrl") is not None else None
    if method in ("tps", "polynomial"):
        if not isinstance(par, PlanarParametrization):
            raise FitError(f"{path}: the {method} method fits height fields; the data need {why}")
        degree = d.get("degree", 6)
        if method == "polynomial" and (isinstance(degree, bool) or not isinstance(degree, int)
                                       or not 1 <= degree <= MAX_POLYNOMIAL_DEGREE):
            raise FitError(f"{name}: the polynomial's degree must be an integer from 1 to {MAX_POLYNOMIAL_DEGREE}, "
                           f"got {degree!r}")
        fit = fit_tps(data.points, par, tol=tol) if method == "tps" else fit_polynomial(data.points, par, degree)
    else:
        fit = fit_bspline(data.points, par, ctrl=ctrl, tol=tol, degree=int(d.get("degree", 3)),
                          smoothing=float(d.get("smoothing", 1e-6)))
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
        thick = _thickness(str(d["back"]), units, base)
        oriented = probe.copy()
        oriented[..., 5:8] *= -1 if flip else 1
        t = thick(oriented).ravel()[inside]
        # a natural layer thins out to nothing at its rims (and a mesh's back there can come out a
        # little in front): a minority of points without thickness is the layer's edge; most of
        # them is a back surface on the wrong side
        if np.mean(t <= 0) > MAX_THIN_FRACTION:
            raise FitError(f"{name}: the back surface {d['back']!r} does not lie behind the fitted surface "
                           f"({np.mean(t <= 0):.0%} of the footprint has thickness <= 0)")
        extras["thickness"] = thick
        report["back"] = str(d["back"])
        report["thickness_m"] = {"min": float(t.min()), "median": float(np.median(t)), "max": float(t.max()),
                                 "fraction_not_positive": float(np.mean(t <= 0))}
    spec = parse_surface(name, {**definition, "flip": flip, "fit_report": report})
    return dataclasses.replace(spec, extras=extras), report, fit


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
