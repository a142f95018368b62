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


import numpy as np

from simclient.contact._newton import ContactStatus, solve_profile_contact
from simclient.contact._point import Contact, ContactPair, _poses
from simclient.errors import ParameterError
from simclient.geometry import StorageWindow, rz
from simclient.geometry import layout as L

__all__ = ["ProfilePair", "CirclePair", "planar_pose"]


def planar_pose(x: float, y: float, angle: float) -> tuple[np.ndarray, np.ndarray]:
    """The 3D embedding ``(R, c)`` of a planar pose: position (m) and angle (rad) about z."""
    return rz(angle), np.array([x, y, 0.0])


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
            self.refresh()
        return self._solve(*_poses(R_i, c_i, R_j, c_j), strict, update_windows, -1, np.empty(L.CONTACT_SIZE))


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
        return Contact(ContactStatus.CONVERGED, d)
