"""Parametric surface families with analytic first derivatives.

Each family maps parameters ``(u, v)`` to a point ``s(u, v)`` in its local frame (metres) and gives
the raw partial derivatives ``tu = ds/du``, ``tv = ds/dv`` in closed form. The outward normal is
``tu x tv / |tu x tv|`` unless a definition flips it. Families are looked up by name in
:data:`FAMILIES`; a :class:`Family` subclass can be used directly.

Parameter units: lengths in metres, angles in radians (ranges may be given in degrees with the
``_deg`` suffix, e.g. ``u_range_deg``).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
from scipy.interpolate import Akima1DInterpolator, BSpline, CubicSpline, PchipInterpolator

from preprocess.errors import DefinitionError

__all__ = [
    "Family",
    "Plane",
    "Waves",
    "Ellipsoid",
    "Sphere",
    "Cylinder",
    "Torus",
    "EllipticParaboloid",
    "Nurbs",
    "ThinPlate",
    "PolarProfile",
    "PROFILE_SPLINES",
    "FAMILIES",
    "make_family",
    "basis_matrix",
    "nurbs_sphere",
]

Arrays = tuple[np.ndarray, np.ndarray, np.ndarray]


def _positive(name: str, params: Mapping[str, Any], key: str) -> float:
    try:
        x = float(params[key])
    except KeyError:
        raise DefinitionError(f"{name}: missing parameter {key!r}") from None
    except (TypeError, ValueError):
        raise DefinitionError(f"{name}: parameter {key!r} must be a number, got {params[key]!r}") from None
    if not (math.isfinite(x) and x > 0):
        raise DefinitionError(f"{name}: parameter {key!r} must be positive and finite, got {x}")
    return x


def _vector(name: str, value: Any, key: str) -> np.ndarray:
    try:
        v = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise DefinitionError(f"{name}: {key} must be 3 numbers, got {value!r}") from None
    with np.errstate(over="ignore"):
        length = np.linalg.norm(v) if v.shape == (3,) else math.nan
    if not 0 < length < math.inf:  # (a length that overflows made a frame of zeros)
        raise DefinitionError(f"{name}: {key} must be a non-zero 3-vector of finite length, got {value!r}")
    return v


def _plane_frame(name: str, params: Mapping[str, Any]) -> list[np.ndarray]:
    """``origin`` (m; default 0) and the orthonormal ``e1``, ``e2``, ``normal`` = e1 x e2 (default
    x, y, z) of a height field's plane."""
    try:
        origin = np.asarray(params.get("origin", (0.0, 0.0, 0.0)), float)
    except (TypeError, ValueError):
        origin = np.full(3, math.nan)
    if origin.shape != (3,) or not np.isfinite(origin).all():
        raise DefinitionError(f"{name}: origin must be 3 finite numbers (m), got {params.get('origin')!r}")
    e1, e2, n = (_vector(name, params.get(k, default), k)
                 for k, default in (("e1", (1, 0, 0)), ("e2", (0, 1, 0)), ("normal", (0, 0, 1))))
    if not np.allclose(np.array([e1, e2, n]) @ np.array([e1, e2, n]).T, np.eye(3), atol=1e-6) \
            or not np.allclose(np.cross(e1, e2), n, atol=1e-6):
        raise DefinitionError(f"{name}: e1, e2 and normal must be unit vectors, orthogonal, with e1 x e2 = normal "
                              f"(within 1e-6), got {e1.tolist()}, {e2.tolist()}, {n.tolist()}")
    return [origin, e1, e2, n]


def _frame(name: str, params: Mapping[str, Any]) -> np.ndarray:
    """Columns e1, e2, e3: e3 along ``pole_axis`` (default z), e1 towards ``zero_meridian``,
    e2 = e1 x e3 (a left-handed triple, so that with u the latitude and v the longitude
    ``tu x tv`` points outward)."""
    e3 = _vector(name, params.get("pole_axis", [0, 0, 1]), "pole_axis")
    e3 /= np.linalg.norm(e3)
    default = [1, 0, 0] if abs(e3[0]) < 0.9 else [0, 1, 0]
    m = _vector(name, params.get("zero_meridian", default), "zero_meridian")
    e1 = m - (m @ e3) * e3
    if np.linalg.norm(e1) < 1e-9 * np.linalg.norm(m):
        raise DefinitionError(f"{name}: zero_meridian must not be parallel to pole_axis")
    e1 /= np.linalg.norm(e1)
    return np.column_stack([e1, np.cross(e1, e3), e3])


class Family(ABC):
    """A parametric surface ``s(u, v)`` with analytic partial derivatives.

    Subclasses set ``name``, ``params`` (accepted keys), ``default_range`` (``(u_range, v_range)`` or
    ``None`` when the definition must give the ranges) and implement :meth:`evaluate`.
    """

    name: ClassVar[str]
    params: ClassVar[tuple[str, ...]] = ()
    default_range: ClassVar[tuple[tuple[float, float], tuple[float, float]] | None] = None

    def __init__(self, **params: Any) -> None:
        unknown = set(params) - set(self.params)
        if unknown:
            raise DefinitionError(f"{self.name}: unknown parameter(s) {sorted(unknown)}; "
                                  f"accepted: {list(self.params)}")
        self.parameters = dict(params)

    @abstractmethod
    def evaluate(self, u: np.ndarray, v: np.ndarray) -> Arrays:
        """Point and partials at broadcastable ``u``, ``v``: three arrays of shape ``(..., 3)``."""

    def evaluate_grid(self, u: np.ndarray, v: np.ndarray) -> Arrays:
        """Point and partials on the grid ``u x v`` (1-D arrays): arrays of shape ``(nu, nv, 3)``."""
        return self.evaluate(np.asarray(u, float)[:, None], np.asarray(v, float)[None, :])

    def analytic_normal(self, u: np.ndarray, v: np.ndarray) -> np.ndarray | None:
        """Unit outward normal where ``tu x tv`` vanishes, if the family knows it (else ``None``)."""
        return None

    def domain(self) -> tuple[tuple[float, float], tuple[float, float]] | None:
        """The natural parameter domain, or ``None`` when the ranges must be given."""
        return self.default_range

    #: the longest range of each parameter (u, v), None where any: a closed direction's period,
    #: beyond which the surface lies over itself
    periods: ClassVar[tuple[float | None, float | None]] = (None, None)
    #: whether each parameter is an angle (radians; messages give degrees too)
    angular: ClassVar[tuple[bool, bool]] = (False, False)

    def limits(self) -> tuple[tuple[float, float] | None, tuple[float, float] | None]:
        """Where each parameter may lie (the surface is defined there); None: anywhere."""
        return None, None

    def check_ranges(self, name: str, u_range: tuple[float, float], v_range: tuple[float, float]) -> None:
        """:class:`DefinitionError`, naming the surface ``name``, for a range outside :meth:`limits`
        or longer than a period."""
        def show(r: tuple[float, float], angle: bool) -> str:
            deg = f" rad ({math.degrees(r[0]):.6g} to {math.degrees(r[1]):.6g} deg)" if angle else ""
            return f"[{r[0]:.9g}, {r[1]:.9g}]{deg}"

        for axis, r, limit, period, angle in zip("uv", (u_range, v_range), self.limits(), self.periods, self.angular):
            slack = 1e-9 * max(1.0, abs(r[0]), abs(r[1]))
            if limit is not None and (r[0] < limit[0] - slack or r[1] > limit[1] + slack):
                raise DefinitionError(f"{name}: {axis}_range {show(r, angle)} leaves the {self.name}'s domain "
                                      f"{show(limit, angle)}")
            if period is not None and r[1] - r[0] > period + slack:
                raise DefinitionError(f"{name}: {axis}_range {show(r, angle)} is longer than one turn of the "
                                      f"{self.name}: the surface would lie over itself")


class Plane(Family):
    """The plane ``s = (u, v, 0)``: u along x, v along y (metres), normal +z."""

    name = "plane"

    def evaluate(self, u: np.ndarray, v: np.ndarray) -> Arrays:
        u, v = np.broadcast_arrays(u, v)
        s = np.stack([u, v, np.zeros_like(u)], axis=-1)
        tu = np.zeros_like(s)
        tu[..., 0] = 1.0
        tv = np.zeros_like(s)
        tv[..., 1] = 1.0
        return s, tu, tv


class Waves(Family):
    """A wavy plane, ``s = (u, v, A sin(2 pi v / L))`` (metres): crests along u, ``amplitude`` A and
    ``wavelength`` L (m) along v; normal to the +z side. A terrain for a body rolling along v."""

    name = "waves"
    params = ("amplitude", "wavelength")

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self.A, self.k = _positive(self.name, params, "amplitude"), 2 * math.pi / _positive(self.name, params, "wavelength")

    def evaluate(self, u: np.ndarray, v: np.ndarray) -> Arrays:
        u, v = np.broadcast_arrays(np.asarray(u, float), np.asarray(v, float))
        s = np.stack([u, v, self.A * np.sin(self.k * v)], axis=-1)
        tu = np.zeros_like(s)
        tu[..., 0] = 1.0
        tv = np.stack([np.zeros_like(u), np.ones_like(u), self.A * self.k * np.cos(self.k * v)], axis=-1)
        return s, tu, tv


class Ellipsoid(Family):
    """``s = a cos u cos v e1 + b cos u sin v e2 + c sin u e3``.

    u is the latitude in [-pi/2, pi/2], v the longitude (about -e3); the poles (u = +-pi/2, where tv = 0) lie on
    ``e3 = pole_axis`` and the point u = v = 0 on ``e1``, the direction of ``zero_meridian``. Choose
    them so that the working region holds no pole. Normal outward; analytic at the poles.
    """

    name = "ellipsoid"
    params: ClassVar[tuple[str, ...]] = ("a", "b", "c", "pole_axis", "zero_meridian")
    default_range = ((-math.pi / 2, math.pi / 2), (-math.pi, math.pi))
    periods = (None, 2 * math.pi)
    angular = (True, True)

    def limits(self) -> tuple[tuple[float, float] | None, tuple[float, float] | None]:
        return (-math.pi / 2, math.pi / 2), None  # the latitude: past a pole it folds back

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self.axes = np.array([_positive(self.name, params, k) for k in self._axis_keys()])
        self.frame = _frame(self.name, params)

    def _axis_keys(self) -> tuple[str, str, str]:
        return ("a", "b", "c")

    def evaluate(self, u: np.ndarray, v: np.ndarray) -> Arrays:
        u, v = np.broadcast_arrays(u, v)
        cu, su, cv, sv = np.cos(u), np.sin(u), np.cos(v), np.sin(v)
        a, b, c = self.axes
        local = np.stack([a * cu * cv, b * cu * sv, c * su], axis=-1)
        dlu = np.stack([-a * su * cv, -b * su * sv, c * cu], axis=-1)
        dlv = np.stack([-a * cu * sv, b * cu * cv, np.zeros_like(u)], axis=-1)
        f = self.frame
        return local @ f.T, dlu @ f.T, dlv @ f.T

    def analytic_normal(self, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        s, _, _ = self.evaluate(u, v)
        local = s @ self.frame  # coordinates in e1, e2, e3
        g = local / self.axes**2  # gradient of the implicit form
        g = g @ self.frame.T
        return g / np.linalg.norm(g, axis=-1, keepdims=True)


class Sphere(Ellipsoid):
    """A sphere of ``radius`` (metres), parametrized like :class:`Ellipsoid`."""

    name = "sphere"
    params = ("radius", "pole_axis", "zero_meridian")

    def _axis_keys(self) -> tuple[str, str, str]:
        return ("radius", "radius", "radius")


class Cylinder(Family):
    """``s = (R cos u, R sin u, v)``: u the angle (radians), v the axial coordinate (metres)."""

    name = "cylinder"
    params = ("radius",)
    periods = (2 * math.pi, None)
    angular = (True, False)

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self.radius = _positive(self.name, params, "radius")

    def evaluate(self, u: np.ndarray, v: np.ndarray) -> Arrays:
        u, v = np.broadcast_arrays(u, v)
        r, cu, su = self.radius, np.cos(u), np.sin(u)
        s = np.stack([r * cu, r * su, v], axis=-1)
        tu = np.stack([-r * su, r * cu, np.zeros_like(u)], axis=-1)
        tv = np.zeros_like(s)
        tv[..., 2] = 1.0
        return s, tu, tv


class Torus(Family):
    """``s = ((R + r cos v) cos u, (R + r cos v) sin u, r sin v)`` with ``major_radius`` R > r =
    ``minor_radius``; u around the axis z, v around the tube (radians)."""

    name = "torus"
    params = ("major_radius", "minor_radius")
    default_range = ((0.0, 2 * math.pi), (-math.pi, math.pi))
    periods = (2 * math.pi, 2 * math.pi)
    angular = (True, True)

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self.R = _positive(self.name, params, "major_radius")
        self.r = _positive(self.name, params, "minor_radius")
        if self.r >= self.R:
            raise DefinitionError(f"torus: minor_radius {self.r} must be smaller than major_radius {self.R}")

    def evaluate(self, u: np.ndarray, v: np.ndarray) -> Arrays:
        u, v = np.broadcast_arrays(u, v)
        cu, su, cv, sv = np.cos(u), np.sin(u), np.cos(v), np.sin(v)
        w = self.R + self.r * cv
        s = np.stack([w * cu, w * su, self.r * sv], axis=-1)
        tu = np.stack([-w * su, w * cu, np.zeros_like(u)], axis=-1)
        tv = np.stack([-self.r * sv * cu, -self.r * sv * su, self.r * cv], axis=-1)
        return s, tu, tv


class EllipticParaboloid(Family):
    """``s = (u, v, u^2/(2 R1) + v^2/(2 R2))``: principal radii of curvature R1 (along x) and R2
    (along y) at the apex (metres); the normal points to the concave side (+z at the apex)."""

    name = "elliptic_paraboloid"
    params = ("R1", "R2")

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self.R1 = _positive(self.name, params, "R1")
        self.R2 = _positive(self.name, params, "R2")

    def evaluate(self, u: np.ndarray, v: np.ndarray) -> Arrays:
        u, v = np.broadcast_arrays(u, v)
        s = np.stack([u, v, u**2 / (2 * self.R1) + v**2 / (2 * self.R2)], axis=-1)
        tu = np.stack([np.ones_like(u), np.zeros_like(u), u / self.R1], axis=-1)
        tv = np.stack([np.zeros_like(u), np.ones_like(u), v / self.R2], axis=-1)
        return s, tu, tv


class HeightPolynomial(Family):
    """A height field over a plane, ``s(u, v) = origin + u e1 + v e2 + f(u, v) normal`` (metres),
    ``f = sum_ij c[i][j] (u/L)^i (v/L)^j``: the bivariate polynomial surfaces of Blankevoort et al.
    (1991) for the tibial plateaus. ``coefficients`` is the matrix ``c`` (row i: the powers of u,
    metres); ``scale`` L (m, default 1) keeps the coefficients of a high degree well conditioned;
    the frame ``origin``, ``e1``, ``e2``, ``normal`` (unit, e1 x e2 = normal) defaults to the
    table's own (0, x, y, z). Normal to the +normal side."""

    name = "height_polynomial"
    params = ("coefficients", "scale", "origin", "e1", "e2", "normal")

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        try:
            c = np.atleast_2d(np.asarray(params.get("coefficients"), dtype=float))
        except (TypeError, ValueError):
            c = np.empty((0, 0))
        if c.ndim != 2 or c.size == 0 or not np.isfinite(c).all():
            raise DefinitionError(f"{self.name}: coefficients must be a non-empty matrix of finite numbers "
                                  "(row i: the coefficients of u^i v^0, u^i v^1, ...)")
        self.c = c
        try:
            self.L = float(params.get("scale", 1.0))
        except (TypeError, ValueError):
            self.L = math.nan
        if not 0 < self.L < math.inf:
            raise DefinitionError(f"{self.name}: scale must be a positive length (m), got {params.get('scale')!r}")
        self.origin, *self.frame = _plane_frame(self.name, params)

    def evaluate(self, u: np.ndarray, v: np.ndarray) -> Arrays:
        u, v = np.broadcast_arrays(np.asarray(u, float), np.asarray(v, float))
        P = np.polynomial.polynomial
        a, b = u / self.L, v / self.L
        f = P.polyval2d(a, b, self.c)
        fu = P.polyval2d(a, b, P.polyder(self.c, axis=0)) / self.L if self.c.shape[0] > 1 else np.zeros_like(u)
        fv = P.polyval2d(a, b, P.polyder(self.c, axis=1)) / self.L if self.c.shape[1] > 1 else np.zeros_like(u)
        return _over_plane((self.origin, *self.frame), u, v, f, fu, fv)


def _over_plane(frame: Sequence[np.ndarray], u: np.ndarray, v: np.ndarray, w: np.ndarray, wu: np.ndarray,
                wv: np.ndarray) -> Arrays:
    """Point and partials of the height field ``origin + u e1 + v e2 + w normal`` (``frame`` =
    origin, e1, e2, normal) with heights ``w`` and their partials ``wu``, ``wv`` (arrays of u's shape)."""
    o, e1, e2, n = frame
    u, v, w, wu, wv = (x[..., None] for x in (u, v, w, wu, wv))
    return o + u * e1 + v * e2 + w * n, e1 + wu * n, e2 + wv * n


def _knots(name: str, key: str, knots: Any, n: int, p: int) -> np.ndarray:
    try:
        t = np.asarray(knots, dtype=float)
    except (TypeError, ValueError):
        raise DefinitionError(f"{name}: {key} must be a list of numbers") from None
    if t.ndim != 1 or len(t) != n + p + 1:
        raise DefinitionError(f"{name}: {key} has {t.size} knots; {n} control points of degree {p} "
                              f"need n + p + 1 = {n + p + 1}")
    if not np.isfinite(t).all() or (np.diff(t) < 0).any():
        raise DefinitionError(f"{name}: {key} must be finite and non-decreasing: {t.tolist()}")
    if not t[p] < t[n]:
        raise DefinitionError(f"{name}: {key} gives an empty domain [{t[p]}, {t[n]}]")
    return t


def basis_matrix(t: np.ndarray, p: int, x: np.ndarray, nu: int = 0) -> np.ndarray:
    """B-spline basis functions (or their ``nu``-th derivatives) of degree ``p`` on knots ``t`` at
    ``x``: a dense array of shape ``(len(x), len(t) - p - 1)``."""
    n = len(t) - p - 1
    return BSpline(t, np.eye(n), p, extrapolate=True)(np.asarray(x, float), nu=nu)


class Nurbs(Family):
    """A NURBS surface: ``degree_u``, ``degree_v``, ``knots_u``, ``knots_v``, ``control_points`` of
    shape (n, m, 3) in metres and optional ``weights`` (n, m), all > 0 (default 1: a B-spline).

    Evaluated through homogeneous coordinates ``A = sum N_a(u) N_b(v) w_ab (P_ab, 1)``; the point
    is ``A_xyz / A_w`` and the partials follow by the quotient rule,
    ``s_u = (A_xyz,u - s A_w,u) / A_w``. The domain is ``[t_p, t_n]`` in each direction.
    """

    name = "nurbs"
    params = ("degree_u", "degree_v", "knots_u", "knots_v", "control_points", "weights")

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        nm = self.name
        try:
            p, q = params["degree_u"], params["degree_v"]
            if not all(isinstance(d, int) and not isinstance(d, bool) for d in (p, q)):
                raise TypeError(f"degrees must be integers, got ({p!r}, {q!r})")  # (inf was an OverflowError)
            P = np.asarray(params["control_points"], dtype=float)
        except KeyError as exc:
            raise DefinitionError(f"{nm}: missing parameter {exc.args[0]!r}") from None
        except (TypeError, ValueError) as exc:
            raise DefinitionError(f"{nm}: invalid degree or control_points ({exc})") from None
        if p < 1 or q < 1:
            raise DefinitionError(f"{nm}: degrees must be >= 1, got ({p}, {q})")
        if P.ndim != 3 or P.shape[2] != 3 or not np.isfinite(P).all():
            raise DefinitionError(f"{nm}: control_points must be a finite (n, m, 3) net, got shape {P.shape}")
        n, m = P.shape[:2]
        if n <= p or m <= q:
            raise DefinitionError(f"{nm}: a {n} x {m} control net is too small for degrees ({p}, {q})")
        w = np.asarray(params.get("weights", np.ones((n, m))), dtype=float)
        if w.shape != (n, m) or not np.isfinite(w).all() or (w <= 0).any():
            raise DefinitionError(f"{nm}: weights must be positive with shape ({n}, {m})")
        self.p, self.q = p, q
        if "knots_u" not in params or "knots_v" not in params:
            raise DefinitionError(f"{nm}: knots_u and knots_v are required")
        self.tu = _knots(nm, "knots_u", params["knots_u"], n, p)
        self.tv = _knots(nm, "knots_v", params["knots_v"], m, q)
        self.Pw = np.concatenate([P * w[..., None], w[..., None]], axis=-1)  # homogeneous net

    def domain(self) -> tuple[tuple[float, float], tuple[float, float]]:
        n, m = self.Pw.shape[:2]
        return (float(self.tu[self.p]), float(self.tu[n])), (float(self.tv[self.q]), float(self.tv[m]))

    def limits(self) -> tuple[tuple[float, float] | None, tuple[float, float] | None]:
        return self.domain()  # (the basis beyond the knots is an extrapolation)

    def _combine(self, A: np.ndarray, Au: np.ndarray, Av: np.ndarray) -> Arrays:
        w, wu, wv = A[..., 3:], Au[..., 3:], Av[..., 3:]
        s = A[..., :3] / w
        return s, (Au[..., :3] - s * wu) / w, (Av[..., :3] - s * wv) / w

    def evaluate(self, u: np.ndarray, v: np.ndarray) -> Arrays:
        u, v = np.broadcast_arrays(np.asarray(u, float), np.asarray(v, float))
        shape = u.shape
        uf, vf = u.ravel(), v.ravel()
        Nu, dNu = basis_matrix(self.tu, self.p, uf), basis_matrix(self.tu, self.p, uf, 1)
        Nv, dNv = basis_matrix(self.tv, self.q, vf), basis_matrix(self.tv, self.q, vf, 1)
        A = np.einsum("ia,abk,ib->ik", Nu, self.Pw, Nv)
        Au = np.einsum("ia,abk,ib->ik", dNu, self.Pw, Nv)
        Av = np.einsum("ia,abk,ib->ik", Nu, self.Pw, dNv)
        s, su, sv = self._combine(A, Au, Av)
        return s.reshape(shape + (3,)), su.reshape(shape + (3,)), sv.reshape(shape + (3,))

    def evaluate_grid(self, u: np.ndarray, v: np.ndarray) -> Arrays:
        # Separable on a grid: A = Nu . Pw . Nv^T per coordinate, no per-point basis work.
        Nu, dNu = basis_matrix(self.tu, self.p, u), basis_matrix(self.tu, self.p, u, 1)
        Nv, dNv = basis_matrix(self.tv, self.q, v), basis_matrix(self.tv, self.q, v, 1)
        A = np.einsum("ia,abk,jb->ijk", Nu, self.Pw, Nv, optimize=True)
        Au = np.einsum("ia,abk,jb->ijk", dNu, self.Pw, Nv, optimize=True)
        Av = np.einsum("ia,abk,jb->ijk", Nu, self.Pw, dNv, optimize=True)
        return self._combine(A, Au, Av)


class ThinPlate(Family):
    """A thin-plate-spline height field over a plane (Argatov eq. 34):
    ``s(u, v) = origin + u e1 + v e2 + w(u, v) normal`` with
    ``w = b0 + b1 u/L + b2 v/L + sum_k f_k phi(|(u, v) - c_k| / L)``, ``phi(r) = r^2 ln r``.

    Parameters: ``origin``, ``e1``, ``e2``, ``normal`` (unit, e1 x e2 = normal), ``centres`` (k, 2)
    in metres, ``weights`` f (k,) and ``affine`` (b0, b1, b2) in metres, ``scale`` L (m). The
    domain must be given (``u_range``, ``v_range``, metres).
    """

    name = "thin_plate"
    params = ("origin", "e1", "e2", "normal", "centres", "weights", "affine", "scale")

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        missing = set(self.params) - set(params)
        if missing:
            raise DefinitionError(f"{self.name}: missing parameter(s) {sorted(missing)}")
        self.frame = _plane_frame(self.name, params)
        self.c = np.asarray(params["centres"], float)
        self.f = np.asarray(params["weights"], float)
        self.b = np.asarray(params["affine"], float)
        self.L = float(params["scale"])
        if (self.c.ndim != 2 or self.c.shape[1] != 2 or self.f.shape != (len(self.c),) or self.b.shape != (3,)
                or not (np.isfinite(self.c).all() and np.isfinite(self.f).all() and np.isfinite(self.b).all())
                or not self.L > 0):
            raise DefinitionError(f"{self.name}: centres (k, 2), weights (k,), affine (3,) must be finite "
                                  "and scale positive")

    @staticmethod
    def kernel(x: np.ndarray, c: np.ndarray, scale: float) -> np.ndarray:
        """``phi(|x_i - c_k| / scale)`` for points ``x`` (n, 2) and centres ``c`` (k, 2)."""
        r2 = ((x[:, None, :] - c[None, :, :]) ** 2).sum(-1) / scale**2
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(r2 > 0, 0.5 * r2 * np.log(r2), 0.0)

    def evaluate(self, u: np.ndarray, v: np.ndarray) -> Arrays:
        u, v = np.broadcast_arrays(np.asarray(u, float), np.asarray(v, float))
        x = np.column_stack([u.ravel(), v.ravel()])
        w, g = np.empty(len(x)), np.empty((len(x), 2))
        for i in range(0, len(x), 2000):  # bounded memory: points x centres per chunk
            d = (x[i:i + 2000, None, :] - self.c[None, :, :]) / self.L
            r2 = (d**2).sum(-1)
            with np.errstate(divide="ignore", invalid="ignore"):
                lg = np.where(r2 > 0, np.log(r2), 0.0)
            w[i:i + 2000] = self.b[0] + x[i:i + 2000] @ self.b[1:] / self.L + (0.5 * r2 * lg) @ self.f
            # d/dx (r^2 ln r) = (2 ln r + 1) (x - c) = (ln r2 + 1) (x - c), then / L for metres
            g[i:i + 2000] = (self.b[1:] + np.einsum("nk,nkj->nj", (lg + 1) * self.f, d)) / self.L
        return _over_plane(self.frame, u, v, w.reshape(u.shape), g[:, 0].reshape(u.shape), g[:, 1].reshape(u.shape))


#: the polar profiles' piecewise cubics by name, with the IMSL routine of the thesis each stands for:
#: not-a-knot (CSINT), Akima (CSAKM) and shape-preserving (CSCON; here scipy's PCHIP, which keeps the
#: data's monotonicity, the closest shape-preserving piecewise cubic scipy has)
PROFILE_SPLINES = {
    "not-a-knot": lambda t, r: CubicSpline(t, r, bc_type="not-a-knot"),
    "akima": Akima1DInterpolator,
    "shape-preserving": PchipInterpolator,
}


class PolarProfile(Family):
    """A planar profile in polar form about the frame's origin, extruded along z (thesis eqs.
    5.2-5.9, Markus eq. 10): ``s(u, v) = (r(u) cos u, r(u) sin u, v)``, u the polar angle (rad), v
    the extrusion (m). ``r(u)`` is a piecewise cubic through ``points`` (``[[x, y], ...]`` in
    metres, ordered along the profile with increasing polar angle) of kind ``spline`` (a key of
    :data:`PROFILE_SPLINES`), or the single cubic ``coefficients`` ``[a3, a2, a1, a0]`` (r in m, u in
    rad; ``[0, 0, 0, R]`` is a circle) over ``u_range``. The outward normal ``tu x tv`` points to the
    right of the direction of increasing u: away from the origin for a profile around it. The
    default u range is the points' polar angles; the default v range is +-5 mm."""

    name = "polar_profile"
    params = ("points", "spline", "coefficients")
    periods = (2 * math.pi, None)
    angular = (True, False)

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        nm = self.name
        if ("points" in params) == ("coefficients" in params):
            raise DefinitionError(f"{nm}: give either points (with spline) or coefficients")
        if "coefficients" in params:
            try:
                c = np.asarray(params["coefficients"], dtype=float)
            except (TypeError, ValueError):
                raise DefinitionError(f"{nm}: coefficients must be 4 numbers") from None
            if c.shape != (4,) or not np.isfinite(c).all():
                raise DefinitionError(f"{nm}: coefficients must be 4 finite numbers [a3, a2, a1, a0], got {c.tolist()}")
            poly = np.polynomial.Polynomial(c[::-1])
            self.r: Any = poly
            self.dr: Any = poly.deriv()
            self.theta: np.ndarray | None = None
            return
        kind = params.get("spline", "shape-preserving")
        if kind not in PROFILE_SPLINES:
            raise DefinitionError(f"{nm}: unknown spline {kind!r}; choose one of {', '.join(PROFILE_SPLINES)}")
        try:
            p = np.asarray(params["points"], dtype=float)
        except (TypeError, ValueError):
            raise DefinitionError(f"{nm}: points must be a list of [x, y] pairs (m)") from None
        if p.ndim != 2 or p.shape[1] != 2 or len(p) < 4 or not np.isfinite(p).all():
            raise DefinitionError(f"{nm}: points must be at least 4 finite [x, y] pairs (m), got shape {p.shape}")
        theta = np.unwrap(np.arctan2(p[:, 1], p[:, 0]))
        radius = np.hypot(p[:, 0], p[:, 1])
        if (radius <= 0).any() or not (np.all(np.diff(theta) > 0) or np.all(np.diff(theta) < 0)):
            raise DefinitionError(f"{nm}: the points' polar angles must increase strictly along the profile "
                                  "(a profile that is single-valued in polar form about the origin)")
        if theta[0] > theta[-1]:
            theta, radius = theta[::-1], radius[::-1]
        self.theta = theta
        spline = PROFILE_SPLINES[kind](theta, radius)
        self.r, self.dr = spline, spline.derivative()

    def domain(self) -> tuple[tuple[float, float], tuple[float, float]] | None:
        if self.theta is None:
            return None  # coefficients: the definition gives u_range
        return (float(self.theta[0]), float(self.theta[-1])), (-0.005, 0.005)

    def limits(self) -> tuple[tuple[float, float] | None, tuple[float, float] | None]:
        # through points: their polar angles (the spline beyond them is an extrapolation)
        return (None if self.theta is None else (float(self.theta[0]), float(self.theta[-1]))), None

    def evaluate(self, u: np.ndarray, v: np.ndarray) -> Arrays:
        u, v = np.broadcast_arrays(np.asarray(u, float), np.asarray(v, float))
        r, dr, cu, su = self.r(u), self.dr(u), np.cos(u), np.sin(u)
        s = np.stack([r * cu, r * su, v], axis=-1)
        tu = np.stack([dr * cu - r * su, dr * su + r * cu, np.zeros_like(u)], axis=-1)
        tv = np.zeros_like(s)
        tv[..., 2] = 1.0
        return s, tu, tv


FAMILIES: dict[str, type[Family]] = {
    cls.name: cls for cls in (Plane, Waves, Sphere, Ellipsoid, Cylinder, Torus, EllipticParaboloid, HeightPolynomial, Nurbs,
                              ThinPlate, PolarProfile)
}


def make_family(family: str | type[Family], params: Mapping[str, Any]) -> Family:
    """Instantiate a family by registry name (see :data:`FAMILIES`) or class."""
    if isinstance(family, str):
        try:
            family = FAMILIES[family]
        except KeyError:
            raise DefinitionError(f"unknown surface family {family!r}; choose one of "
                                  f"{', '.join(sorted(FAMILIES))}") from None
    return family(**dict(params))


def nurbs_sphere(radius: float) -> dict[str, Any]:
    """Parameters of an exact sphere as a rational biquadratic NURBS (a semicircle of 5 control
    points in u swept around the z axis by a 9-point circle in v)."""
    r2 = math.sqrt(0.5)
    # semicircle from the south pole to the north pole in the x-z half plane
    semi = [(0, -1, 1.0), (1, -1, r2), (1, 0, 1.0), (1, 1, r2), (0, 1, 1.0)]  # (rho, z, weight)
    circ = [(1, 0, 1.0), (1, 1, r2), (0, 1, 1.0), (-1, 1, r2), (-1, 0, 1.0), (-1, -1, r2), (0, -1, 1.0),
            (1, -1, r2), (1, 0, 1.0)]
    P = np.array([[[rho * cx * radius, rho * cy * radius, z * radius] for cx, cy, _ in circ]
                  for rho, z, _ in semi])
    W = np.array([[wa * wb for _, _, wb in circ] for _, _, wa in semi])
    return {"degree_u": 2, "degree_v": 2,
            "knots_u": [0, 0, 0, 0.5, 0.5, 1, 1, 1],
            "knots_v": [0, 0, 0, 0.25, 0.25, 0.5, 0.5, 0.75, 0.75, 1, 1, 1],
            "control_points": P.tolist(), "weights": W.tolist()}
