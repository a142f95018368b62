"""Principal radii of curvature and directions of a table at a parameter point
(``preprocess curvature TABLE --at U,V``): the effective radii Argatov's thin-layer laws and
Hertz's need.

From the stored partials: the tables hold ``tu = ds/du`` and ``tv = ds/dv`` at every grid point, so
the second derivatives are central differences of the tabulated tangents (``s_uu = d tu / du``,
``s_vv = d tv / dv``, ``s_uv`` the mean of ``d tu / dv`` and ``d tv / du``; error O(du^2)). At each
of the four grid points around (u, v) the shape operator ``I^-1 II`` is turned into a symmetric
3 x 3 tensor in the table frame, ``T = J I^-1 II I^-1 J^T`` with ``J = [tu tv]``, the tensors are
blended bilinearly, and T's two eigenpairs in the tangent plane give the principal curvatures and
directions. Sign convention: a radius is positive where the surface bends away from its outward
normal (a ball seen from outside, the convex side), negative where it bends towards it; ``R1`` is
the smaller in magnitude. Directions are unit vectors in the table's frame.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from preprocess.errors import PreprocessError
from surfacestore.format import RecordBlock, Table

__all__ = ["principal_curvatures"]


def _shape_tensor(P: np.ndarray, i: int, j: int, du: float, dv: float) -> np.ndarray:
    """T at grid point (i, j) of the point block ``P`` (rows/columns i-1..i+1, j-1..j+1 present)."""
    tu, tv, n = P[i, j, 8:11], P[i, j, 11:14], P[i, j, 5:8]
    s_uu = (P[i + 1, j, 8:11] - P[i - 1, j, 8:11]) / (2 * du)
    s_vv = (P[i, j + 1, 11:14] - P[i, j - 1, 11:14]) / (2 * dv)
    s_uv = ((P[i, j + 1, 8:11] - P[i, j - 1, 8:11]) / (2 * dv) + (P[i + 1, j, 11:14] - P[i - 1, j, 11:14]) / (2 * du)) / 2
    first = np.array([[tu @ tu, tu @ tv], [tu @ tv, tv @ tv]])
    second = np.array([[n @ s_uu, n @ s_uv], [n @ s_uv, n @ s_vv]])
    J = np.column_stack([tu, tv])
    inv = np.linalg.inv(first)
    T = J @ inv @ second @ inv @ J.T
    return (T + T.T) / 2


def principal_curvatures(table: Table, u: float, v: float) -> dict[str, Any]:
    """``R1_m``, ``R2_m`` (signed principal radii, m; ``inf`` where flat), ``direction1``,
    ``direction2`` (unit principal directions in the table frame), ``kappa1_per_m``,
    ``kappa2_per_m``, the ``normal`` and ``point`` there, for the table point (u, v) (the units of
    the table's parameters). See the module's notes for the method and the sign convention."""
    h = table.header
    if not (math.isfinite(u) and math.isfinite(v)):
        raise PreprocessError(f"{table.name}: --at {u},{v} is not a finite parameter point")
    x, y = (u - h.u0) / h.du, (v - h.v0) / h.dv
    if not (1 <= x <= h.u_npts - 2 and 1 <= y <= h.v_npts - 2):
        raise PreprocessError(f"{table.name}: ({u}, {v}) is outside the table's interior "
                              f"[{h.u0 + h.du}, {h.u0 + (h.u_npts - 2) * h.du}] x "
                              f"[{h.v0 + h.dv}, {h.v0 + (h.v_npts - 2) * h.dv}] (the differences need a grid "
                              "point on each side)")
    i0, j0 = min(int(x), h.u_npts - 3), min(int(y), h.v_npts - 3)
    rows, cols = (i0 - 1, i0 + 3), (j0 - 1, j0 + 3)  # the 4 x 4 points around the cell
    block = RecordBlock(rows[0] // h.u_pts, (rows[1] - 1) // h.u_pts + 1, cols[0] // h.v_pts, (cols[1] - 1) // h.v_pts + 1)
    B = table.read_block(block)
    a, b = rows[0] - block.ri0 * h.u_pts, cols[0] - block.rj0 * h.v_pts
    P = B[a:a + 4, b:b + 4]
    if not np.isfinite(P).all():
        raise PreprocessError(f"{table.name}: non-finite values near ({u}, {v})")
    wx, wy = x - i0, y - j0
    weights = {(0, 0): (1 - wx) * (1 - wy), (1, 0): wx * (1 - wy), (0, 1): (1 - wx) * wy, (1, 1): wx * wy}
    T = np.zeros((3, 3))
    normal, point = np.zeros(3), np.zeros(3)
    for (di, dj), w in weights.items():
        T += w * _shape_tensor(P, 1 + di, 1 + dj, h.du, h.dv)
        normal += w * P[1 + di, 1 + dj, 5:8]
        point += w * P[1 + di, 1 + dj, 2:5]
    normal /= np.linalg.norm(normal)
    vals, vecs = np.linalg.eigh(T)
    keep = np.argsort(np.abs(vecs.T @ normal))[:2]  # the two eigenvectors in the tangent plane
    pairs = []
    for k in keep:
        d = vecs[:, k] - (vecs[:, k] @ normal) * normal
        pairs.append((float(vals[k]), d / np.linalg.norm(d)))
    pairs.sort(key=lambda kd: -abs(kd[0]))  # the larger curvature (smaller radius) first

    def radius(kappa: float) -> float:
        return -1.0 / kappa if kappa != 0 else math.inf
    (k1, d1), (k2, d2) = pairs
    return {"table": table.name, "u": u, "v": v, "point_m": point.tolist(), "normal": normal.tolist(),
            "R1_m": radius(k1), "R2_m": radius(k2), "kappa1_per_m": k1, "kappa2_per_m": k2,
            "direction1": d1.tolist(), "direction2": d2.tolist(),
            "method": "central differences of the tabulated tangents, shape tensors blended bilinearly"}
