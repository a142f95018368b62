"""Planar contact: profiles (tables of curves extruded along z) and the closed-form circle and line
cases of the thesis' section 5.3 (geometry only, like the 3D point contact).

Poses are the 3D embedding of planar ones: a rotation ``R`` about z and a translation ``c`` with
``c_z = 0``; contacts are :class:`Contact` objects whose vectors have ``z = 0``, so the force laws
and the dynamics treat planar and spatial contacts alike.

:class:`ProfilePair` solves the 2D common-normal conditions (thesis eqs. 5.19-5.20) in the polar
angles ``(theta_i, theta_j)`` of two profile tables (``preprocess`` family ``polar_profile``) read
at fixed ``v`` through storage windows::

    m_j . t_i = 0      (normals collinear; m_j = the outward normal of j, unnormalised)
    d . t_j = 0        (d = P_j - P_i along the normal of j)

by a damped Newton iteration with the analytic Jacobian (the tables' tangents and their
derivatives), warm-started. Sign convention as in 3D: ``normal`` is the outward normal of profile
j, ``indentation = (P_j - P_i) . normal`` (positive when overlapping).
"""

from __future__ import annotations

import math

import numpy as np

from simclient.contact._newton import CONVERGED
from simclient.contact._newton import NEEDS_UPDATE, NORMALS_ALIGNED, NOT_CONVERGED, SINGULAR, ContactStatus
from simclient.contact._newton import iterate_left, outside_quiet, pair_windows
from simclient.contact._point import Contact, ContactPair
from simclient.errors import ParameterError
from simclient.geometry import StorageWindow, evaluate, jit, rz
from simclient.geometry import layout as L

__all__ = ["ProfilePair", "CirclePair", "planar_pose"]


def planar_pose(x: float, y: float, angle: float) -> tuple[np.ndarray, np.ndarray]:
    """The 3D embedding ``(R, c)`` of a planar pose: position (m) and angle (rad) about z."""
    return rz(angle), np.array([x, y, 0.0])


@jit
def _curve(buf: np.ndarray, ip: np.ndarray, fp: np.ndarray, theta: float, v: float, mode: int, R: np.ndarray,
           c: np.ndarray, ev: np.ndarray, g: np.ndarray) -> None:
    """Point, tangent and the tangent's derivative of a profile at ``theta`` (global, planar):
    ``g = (P (0:2), t (2:4), t' (4:6))``."""
    evaluate(buf, ip, fp, theta, v, mode, ev)
    for o, k in ((0, L.EV_S), (2, L.EV_TU), (4, L.EV_TUU)):
        g[o] = R[0, 0] * ev[k] + R[0, 1] * ev[k + 1]
        g[o + 1] = R[1, 0] * ev[k] + R[1, 1] * ev[k + 1]
    g[0] += c[0]
    g[1] += c[1]


@jit
def _conditions(gi: np.ndarray, gj: np.ndarray, sj: float, F: np.ndarray) -> float:
    """F = (m_j . t_i, d . t_j); returns the merit (angle^2 + distance^2 in cells of i)."""
    mx, my = sj * gj[3], -sj * gj[2]
    dx, dy = gj[0] - gi[0], gj[1] - gi[1]
    F[0] = mx * gi[2] + my * gi[3]
    F[1] = dx * gj[2] + dy * gj[3]
    ti2 = gi[2] * gi[2] + gi[3] * gi[3]
    tj2 = gj[2] * gj[2] + gj[3] * gj[3]
    return F[0] * F[0] / (tj2 * ti2) + F[1] * F[1] / (tj2 * ti2)


@jit
def solve_profile_contact(buf_i: np.ndarray, buf_j: np.ndarray, ints: np.ndarray, flts: np.ndarray,
                          R_i: np.ndarray, c_i: np.ndarray, R_j: np.ndarray, c_j: np.ndarray, x: np.ndarray,
                          work: np.ndarray) -> tuple[int, int]:
    """The 2D common-normal solve: same arguments and outputs as
    :func:`simclient.contact.solve_contact` (``x = (theta_i, v_i, theta_j, v_j)``, the v's fixed)."""
    ip_i, fp_i, ip_j, fp_j = pair_windows(ints, flts)
    mode, max_iter = ints[L.PAIR_MODE], ints[L.PAIR_MAX_ITER]
    tol, max_step = flts[L.PAIR_TOL], flts[L.PAIR_MAX_STEP]
    if outside_quiet(ints, flts, x):
        return NEEDS_UPDATE, 0
    out = work[0:L.OUT_SIZE]
    o = L.OUT_SIZE
    ev = work[o:o + L.EV_SIZE]
    gi, gj = work[o + L.EV_SIZE:o + L.EV_SIZE + 6], work[o + L.EV_SIZE + 6:o + L.EV_SIZE + 12]
    F = work[o + L.EV_SIZE + 12:o + L.EV_SIZE + 14]
    si, sj = fp_i[L.FP_NORMAL_SIGN], fp_j[L.FP_NORMAL_SIGN]
    hi, hj = fp_i[L.FP_DU], fp_j[L.FP_DU]
    status = NOT_CONVERGED
    it = 0
    _curve(buf_i, ip_i, fp_i, x[0], x[1], mode, R_i, c_i, ev, gi)
    _curve(buf_j, ip_j, fp_j, x[2], x[3], mode, R_j, c_j, ev, gj)
    f2 = _conditions(gi, gj, sj, F)
    while it < max_iter:
        it += 1
        dx, dy = gj[0] - gi[0], gj[1] - gi[1]
        mx, my = sj * gj[3], -sj * gj[2]
        a00 = mx * gi[4] + my * gi[5]
        a01 = sj * (gj[5] * gi[2] - gj[4] * gi[3])
        a10 = -(gi[2] * gj[2] + gi[3] * gj[3])
        a11 = gj[2] * gj[2] + gj[3] * gj[3] + dx * gj[4] + dy * gj[5]
        det = a00 * a11 - a01 * a10
        if det == 0.0 or det != det:
            status = SINGULAR
            break
        s0 = -(a11 * F[0] - a01 * F[1]) / det
        s1 = -(-a10 * F[0] + a00 * F[1]) / det
        m = max(abs(s0) / hi, abs(s1) / hj)
        if m > max_step:
            s0 *= max_step / m
            s1 *= max_step / m
            m = max_step
        x0, x2 = x[0], x[2]
        lam = 1.0
        fn2 = f2
        for _ in range(7):
            x[0], x[2] = x0 + lam * s0, x2 + lam * s1
            if iterate_left(ints, flts, x[0], x[1], x[2], x[3]) >= 0:
                break
            _curve(buf_i, ip_i, fp_i, x[0], x[1], mode, R_i, c_i, ev, gi)
            _curve(buf_j, ip_j, fp_j, x[2], x[3], mode, R_j, c_j, ev, gj)
            fn2 = _conditions(gi, gj, sj, F)
            # a decrease of the merit, else backtrack: the tables' curvature is piecewise (it jumps
            # between cells), and a full Newton step can cycle across a jump next to the solution
            if fn2 < f2 or lam * m < tol:
                break
            lam *= 0.5
        left = iterate_left(ints, flts, x[0], x[1], x[2], x[3])
        if left >= 0:
            status = left
            break
        f2 = fn2
        if lam * m < tol or math.sqrt(f2) < tol:
            status = CONVERGED
            break
    nj = math.hypot(gj[2], gj[3])
    ni = math.hypot(gi[2], gi[3])
    for r in range(L.OUT_SIZE):
        out[r] = 0.0
    out[L.OUT_PI], out[L.OUT_PI + 1] = gi[0], gi[1]
    out[L.OUT_PJ], out[L.OUT_PJ + 1] = gj[0], gj[1]
    out[L.OUT_N], out[L.OUT_N + 1] = sj * gj[3] / nj, -sj * gj[2] / nj
    out[L.OUT_NI], out[L.OUT_NI + 1] = si * gi[3] / ni, -si * gi[2] / ni
    out[L.OUT_DEPTH] = (gj[0] - gi[0]) * out[L.OUT_N] + (gj[1] - gi[1]) * out[L.OUT_N + 1]
    out[L.OUT_RESIDUAL] = math.sqrt(f2)
    if status == CONVERGED and out[L.OUT_N] * out[L.OUT_NI] + out[L.OUT_N + 1] * out[L.OUT_NI + 1] > 0.0:
        status = NORMALS_ALIGNED
    return status, it


class ProfilePair(ContactPair):
    """Planar contact between two profile tables read by ``window_i`` and ``window_j`` at the
    extrusion coordinates ``v_i`` and ``v_j`` (m; default the middle of each table's v range).
    Poses are 3D embeddings of planar ones (see :func:`planar_pose`)."""

    kernel = staticmethod(solve_profile_contact)

    def __init__(self, window_i: StorageWindow, window_j: StorageWindow, *, v_i: float | None = None,
                 v_j: float | None = None, max_iter: int = 60, tol: float = 1e-9, max_step: float = 100.0,
                 coarse_points: int = 256) -> None:
        # profiles are finely sampled along u (a cell is a few hundredths of a degree): Newton may
        # take steps of many cells, and the coarse search looks at more points than on a surface
        super().__init__(window_i, window_j, max_iter=max_iter, tol=tol, max_step=max_step,
                         coarse_points=coarse_points)
        hi, hj = window_i.header, window_j.header
        self.v_i = (hi.v0 + hi.v1) / 2 if v_i is None else float(v_i)
        self.v_j = (hj.v0 + hj.v1) / 2 if v_j is None else float(v_j)

    def _coarse(self, R_i: np.ndarray, c_i: np.ndarray, R_j: np.ndarray, c_j: np.ndarray) -> tuple[np.ndarray, float]:
        """The coarse search over the windows' points, at the profiles' fixed v."""
        x, depth = super()._coarse(R_i, c_i, R_j, c_j)
        x[1], x[3] = self.v_i, self.v_j
        return x, depth

    def detect(self, R_i: np.ndarray, c_i: np.ndarray, R_j: np.ndarray, c_j: np.ndarray,
               strict: bool = False, update_windows: bool = True) -> Contact:
        """:meth:`ContactPair.detect` through its general path only (the planar knee evaluates few
        contacts; the one-call fast path is the spatial pairs')."""
        if not self.synced():
            self._sync()
        return self._solve(R_i, c_i, R_j, c_j, strict, update_windows, -1, 0, np.empty(L.CONTACT_SIZE))


class CirclePair:
    """The closed-form planar contacts of the thesis' section 5.3 (eqs. 5.25-5.31), with the same
    interface as :class:`ProfilePair`: a circle of radius ``R_i`` (m) centred at surface i's frame
    origin against surface j, which is a circle of radius ``R_j`` (``kind`` ``convex``: convex on
    convex; ``concave``: i inside the concave circle j) or the plane through j's origin with outward
    normal +y of its frame (``kind`` ``plane``)."""

    KINDS = ("convex", "concave", "plane")

    def __init__(self, R_i: float, R_j: float | None, kind: str) -> None:
        if kind not in self.KINDS:
            raise ParameterError(f"unknown circle contact {kind!r}; choose one of {', '.join(self.KINDS)}")
        if not R_i > 0 or (kind != "plane" and not (R_j is not None and R_j > 0)):
            raise ParameterError(f"circle contact: radii must be positive (m), got R_i = {R_i}, R_j = {R_j}")
        if kind == "concave" and R_j is not None and R_j <= R_i:
            raise ParameterError(f"concave contact needs R_j > R_i, got R_i = {R_i}, R_j = {R_j}")
        self.R_i, self.R_j, self.kind = float(R_i), None if R_j is None else float(R_j), kind
        self.evaluations = 0

    def detect(self, R_i: np.ndarray, c_i: np.ndarray, R_j: np.ndarray, c_j: np.ndarray,
               strict: bool = False, update_windows: bool = True) -> Contact:
        self.evaluations += 1
        ri = self.R_i
        d = np.zeros(L.CONTACT_SIZE)  # (its parameters: none, zero)
        if self.kind == "plane":
            n = R_j[:, 1].copy()
            h = float((c_i - c_j) @ n)  # height of the centre above the plane
            pi, pj = c_i - ri * n, c_i - h * n
        else:
            rj = self.R_j
            assert rj is not None
            gap = c_i - c_j
            dist = float(np.linalg.norm(gap))
            u = gap / dist if dist > 0 else np.array([0.0, -1.0, 0.0])
            if self.kind == "convex":
                n, pj, pi = u, c_j + rj * u, c_i - ri * u
            else:  # i inside j: the contact is where i's circle comes closest to j's
                n, pj, pi = -u, c_j + rj * u, c_i + ri * u
        d[L.OUT_PI:L.OUT_PI + 3], d[L.OUT_PJ:L.OUT_PJ + 3] = pi, pj
        d[L.OUT_N:L.OUT_N + 3], d[L.OUT_NI:L.OUT_NI + 3] = n, -n
        d[L.OUT_DEPTH] = float((pj - pi) @ n)
        return Contact(ContactStatus.CONVERGED, 0, d)
