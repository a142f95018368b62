"""The data a fit reads and how it is parametrized (see :mod:`preprocess.fit`, steps 1 and 2).

:func:`load_data` reads a mesh (STL, OBJ, PLY through trimesh) or a point cloud (XYZ/CSV) in the
declared units and converts to metres; a :class:`Parametrization` maps every data point to
parameters ``(u, v)`` in metres and a "height" ``h`` along the projection direction (planar,
cylindrical, spherical or toroidal, :data:`PARAMETRIZATIONS`); :func:`choose_parametrization`
picks one for the data, saying why, and refuses a projection that folds."""

from __future__ import annotations

import math
import re
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import least_squares
from scipy.spatial import cKDTree

from preprocess.errors import FitError

__all__ = ["UNITS", "FitData", "load_data", "Parametrization", "PlanarParametrization", "CylindricalParametrization",
           "SphericalParametrization", "ToroidalParametrization", "PARAMETRIZATIONS", "choose_parametrization",
           "check_folds", "axis_vector"]

UNITS = {"m": 1.0, "mm": 1e-3, "cm": 1e-2, "um": 1e-6}


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
            n = axis_vector(axis)
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
            a = axis_vector(axis)
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
        d = axis_vector(axis) if axis is not None else _unit((pts - c).mean(axis=0))
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


def axis_vector(axis: str | np.ndarray) -> np.ndarray:
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


#: the parametrizations by name: ``(data, axis) -> Parametrization`` fitted to the data
PARAMETRIZATIONS: dict[str, Callable[[FitData, Any], Parametrization]] = {
    "planar": lambda data, axis: PlanarParametrization.fit(data.points, axis, data.mean_normal),
    "cylindrical": CylindricalParametrization.fit,
    "spherical": SphericalParametrization.fit,
    "toroidal": ToroidalParametrization.fit,
}


def choose_parametrization(data: FitData, kind: str = "auto",
                           axis: str | np.ndarray | None = None) -> tuple[Parametrization, str]:
    """The parametrization named by ``kind`` or, for ``auto``, the first that suits the data:
    planar when the mean unit normal is >= 0.85 long (the surface faces one way) and the projection
    does not fold; spherical when a sphere fits within 5 % of its radius and the data span less
    than 150 degrees seen from its centre (a dome); else cylindrical.
    Returns the parametrization and a sentence saying why."""
    if kind in PARAMETRIZATIONS:
        return PARAMETRIZATIONS[kind](data, axis), f"{kind} (requested)"
    if kind != "auto":
        raise FitError(f"unknown parametrization {kind!r}; choose {', '.join(PARAMETRIZATIONS)} or auto")
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
