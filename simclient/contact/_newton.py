"""Compiled common-normal contact solves between two storage windows (kernels).

:func:`solve_contact` is a damped Newton solve of the common-normal conditions (thesis
6.19-6.20, 5.19-5.20) in the parameters of both surfaces, reading both windows' buffers through
:func:`simclient.geometry.evaluate`; :func:`solve_profile_contact` is its planar form (thesis
5.19-5.20) for two profiles. Their packed arguments are laid out as :mod:`simclient.geometry.layout`
says; their outcome is a :class:`ContactStatus`.
"""

from __future__ import annotations

import math
from enum import IntEnum
from typing import cast

import numpy as np

from simclient.geometry import layout as L
from simclient.geometry._interpolation import OUTSIDE_TABLE, OUTSIDE_WINDOW, evaluate, locate
from simclient.geometry.kernels import address_array, helper, kernel

__all__ = ["ContactStatus", "solve_contact", "solve_contacts", "solve_warm", "solve_profile_contact", "pair_arrays"]


class ContactStatus(IntEnum):
    """Outcome of a contact solve; ``str(status)`` is its description."""

    CONVERGED = 0
    NOT_CONVERGED = 1
    SINGULAR = 2  # the Jacobian of the conditions is singular
    LEFT_WINDOW_I = 3  # an iterate left window i (inside the table): the window must move
    LEFT_WINDOW_J = 4
    LEFT_TABLE_I = 5  # an iterate left table i: no contact point on the tables
    LEFT_TABLE_J = 6
    NORMALS_ALIGNED = 7  # converged, but the outward normals point the same way (a wrong-side surface)
    NEEDS_UPDATE = 8  # a guess lies outside a window's quiet records (the update rule must run first)
    SINGULAR_POINT_I = 9  # converged at a singular point of table i's parametrization (a pole): a false root
    SINGULAR_POINT_J = 10

    def __str__(self) -> str:
        return _DESCRIPTIONS[self]

    @property
    def left_window(self) -> bool:
        return self in (ContactStatus.LEFT_WINDOW_I, ContactStatus.LEFT_WINDOW_J)


_DESCRIPTIONS = {
    ContactStatus.CONVERGED: "converged", ContactStatus.NOT_CONVERGED: "not converged",
    ContactStatus.SINGULAR: "singular Jacobian", ContactStatus.LEFT_WINDOW_I: "left window i",
    ContactStatus.LEFT_WINDOW_J: "left window j", ContactStatus.LEFT_TABLE_I: "left table i",
    ContactStatus.LEFT_TABLE_J: "left table j", ContactStatus.NORMALS_ALIGNED: "normals point the same way",
    ContactStatus.NEEDS_UPDATE: "window update needed",
    ContactStatus.SINGULAR_POINT_I: "reached a singular point of table i's parametrization (a pole: its tangents "
                                    "vanish or are parallel; parametrize it so that no contact region holds one)",
    ContactStatus.SINGULAR_POINT_J: "reached a singular point of table j's parametrization (a pole: its tangents "
                                    "vanish or are parallel; parametrize it so that no contact region holds one)",
}
# int64 inside the compiled code (not literals: a variable takes several of them)
(CONVERGED, NOT_CONVERGED, SINGULAR, LEFT_WINDOW_I, LEFT_WINDOW_J, LEFT_TABLE_I, LEFT_TABLE_J, NORMALS_ALIGNED,
 NEEDS_UPDATE, SINGULAR_POINT_I, SINGULAR_POINT_J) = cast("tuple[int, ...]", tuple(np.int64(s) for s in ContactStatus))


@helper(inline=True)
def pair_windows(ints: np.ndarray, flts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A pair's window parameters in its work arrays: ``(ip_i, fp_i, ip_j, fp_j)``."""
    return (ints[L.PAIR_IP_I:L.PAIR_IP_I + L.IP_SIZE], flts[L.PAIR_FP_I:L.PAIR_FP_I + L.FP_SIZE],
            ints[L.PAIR_IP_J:L.PAIR_IP_J + L.IP_SIZE], flts[L.PAIR_FP_J:L.PAIR_FP_J + L.FP_SIZE])


@helper(inline=True)
def outside_quiet(ints: np.ndarray, flts: np.ndarray, x: np.ndarray) -> bool:
    """The thesis' update rule, fast path: with the check on, is a guess outside its window's
    quiet records (then the rule must run before solving)?"""
    if not ints[L.PAIR_CHECK]:
        return False
    i, j = L.PAIR_QUIET_I, L.PAIR_QUIET_J
    return not (flts[i] <= x[0] < flts[i + 2] and flts[i + 1] <= x[1] < flts[i + 3] and flts[j] <= x[2] < flts[j + 2]
                and flts[j + 1] <= x[3] < flts[j + 3])


@helper(inline=True)
def iterate_left(ints: np.ndarray, flts: np.ndarray, u_i: float, v_i: float, u_j: float, v_j: float) -> int:
    """The status of an iterate ``(u_i, v_i, u_j, v_j)`` outside a table or a window of the pair
    (tables first: no window can hold it), or -1 while it lies inside both windows."""
    wi = locate(ints, flts, u_i, v_i, L.PAIR_IP_I, L.PAIR_FP_I)
    wj = locate(ints, flts, u_j, v_j, L.PAIR_IP_J, L.PAIR_FP_J)
    if wi == OUTSIDE_TABLE:
        return LEFT_TABLE_I
    if wj == OUTSIDE_TABLE:
        return LEFT_TABLE_J
    if wi == OUTSIDE_WINDOW:
        return LEFT_WINDOW_I
    if wj == OUTSIDE_WINDOW:
        return LEFT_WINDOW_J
    return -1


# The solve's scratch space (``work``), by offset (simclient.geometry.layout's SOLVE_*): the kernels
# below pass ``work`` whole with offsets, never a view of it (every view costs two atomic
# reference-count updates, and in a solve of about a microsecond those were half of the time).
_GI, _GJ, _F, _FN, _J, _DX, _XN = L.SOLVE_GI, L.SOLVE_GJ, L.SOLVE_F, L.SOLVE_FN, L.SOLVE_J, L.SOLVE_DX, L.SOLVE_XN
_MJ, _MU, _MV = L.SOLVE_MJ, L.SOLVE_MU, L.SOLVE_MV
_EVI, _EVJ, _KEY = L.PAIR_EV_I, L.PAIR_EV_J, L.PAIR_KEY  # the surfaces' evaluations (own frames), their key


@helper(inline=True)
def _rot(R: np.ndarray, x: np.ndarray, o: int, out: np.ndarray, p: int) -> None:
    for r in range(3):
        out[p + r] = R[r, 0] * x[o] + R[r, 1] * x[o + 1] + R[r, 2] * x[o + 2]


@helper(inline=True)
def _global(w: np.ndarray, ev: int, R: np.ndarray, c: np.ndarray, g: int) -> None:
    """Rotate every vector of the evaluation at ``w[ev:]`` into the global frame at ``w[g:]``;
    translate the position."""
    for o in range(0, L.EV_SIZE, 3):
        _rot(R, w, ev + o, w, g + o)
    for r in range(3):
        w[g + L.EV_S + r] += c[r]


@helper(inline=True)
def _dot(a: np.ndarray, o: int, b: np.ndarray, p: int) -> float:
    return a[o] * b[p] + a[o + 1] * b[p + 1] + a[o + 2] * b[p + 2]


@helper(inline=True)
def _solve4(w: np.ndarray, A: int, b: int, x: int) -> bool:
    """Solve A x = b (4 x 4, all in ``w`` at these offsets, A row-major) by Gaussian elimination
    with partial pivoting, in place (A and b are overwritten); False if singular."""
    scale = 0.0
    for k in range(16):
        scale = max(scale, abs(w[A + k]))
    if scale == 0.0:
        return False
    for col in range(4):
        piv = col
        for r in range(col + 1, 4):
            if abs(w[A + 4 * r + col]) > abs(w[A + 4 * piv + col]):
                piv = r
        if abs(w[A + 4 * piv + col]) <= 1e-13 * scale:
            return False
        if piv != col:
            for c in range(4):
                w[A + 4 * col + c], w[A + 4 * piv + c] = w[A + 4 * piv + c], w[A + 4 * col + c]
            w[b + col], w[b + piv] = w[b + piv], w[b + col]
        for r in range(col + 1, 4):
            f = w[A + 4 * r + col] / w[A + 4 * col + col]
            for c in range(col, 4):
                w[A + 4 * r + c] -= f * w[A + 4 * col + c]
            w[b + r] -= f * w[b + col]
    for r in range(3, -1, -1):
        acc = w[b + r]
        for c in range(r + 1, 4):
            acc -= w[A + 4 * r + c] * w[x + c]
        w[x + r] = acc / w[A + 4 * r + r]
    return True


@helper(inline=True)
def _cross(a: np.ndarray, o: int, b: np.ndarray, p: int, out: np.ndarray, q: int) -> None:
    out[q] = a[o + 1] * b[p + 2] - a[o + 2] * b[p + 1]
    out[q + 1] = a[o + 2] * b[p] - a[o] * b[p + 2]
    out[q + 2] = a[o] * b[p + 1] - a[o + 1] * b[p]


@helper(inline=True)
def _surfaces(buf_i: np.ndarray, buf_j: np.ndarray, ints: np.ndarray, flts: np.ndarray, w: np.ndarray,
              u_i: float, v_i: float, u_j: float, v_j: float) -> None:
    """Both surfaces at ``(u_i, v_i, u_j, v_j)`` in their own frames into ``w`` at ``_EVI``,
    ``_EVJ``, unless they hold them already (the key at ``_KEY``: the parameters and both windows'
    placements they were taken at). A warm start is where the last solve ended, so its evaluations
    do not depend on the new poses."""
    a, b = L.PAIR_IP_I, L.PAIR_IP_J
    if (w[_KEY] == u_i and w[_KEY + 1] == v_i and w[_KEY + 2] == u_j and w[_KEY + 3] == v_j
            and w[_KEY + 4] == ints[a + L.IP_I_LO] and w[_KEY + 5] == ints[a + L.IP_J_LO]
            and w[_KEY + 6] == ints[b + L.IP_I_LO] and w[_KEY + 7] == ints[b + L.IP_J_LO]):
        return
    evaluate(buf_i, ints, flts, u_i, v_i, w, a, L.PAIR_FP_I, _EVI)
    evaluate(buf_j, ints, flts, u_j, v_j, w, b, L.PAIR_FP_J, _EVJ)
    w[_KEY], w[_KEY + 1], w[_KEY + 2], w[_KEY + 3] = u_i, v_i, u_j, v_j
    w[_KEY + 4], w[_KEY + 5] = ints[a + L.IP_I_LO], ints[a + L.IP_J_LO]
    w[_KEY + 6], w[_KEY + 7] = ints[b + L.IP_I_LO], ints[b + L.IP_J_LO]


@helper(inline=True)
def _singular_point(w: np.ndarray, g: int, du: float, dv: float) -> bool:
    """Whether the evaluation at ``w[g:]`` (global frame) lies at a singular point of its surface's
    parametrization: the grid cell there, spanned by ``T_u du`` and ``T_v dv``, has no area beside
    its longest side (below 1e-6 of its square; a sphere's pole, where ``T_v`` vanishes). There the
    conditions ``m . T_u = m . T_v = 0`` no longer say that the normals are collinear, and they
    have false roots: the pole itself, wherever the other normal points."""
    a0, a1, a2 = w[g + L.EV_TU] * du, w[g + L.EV_TU + 1] * du, w[g + L.EV_TU + 2] * du
    b0, b1, b2 = w[g + L.EV_TV] * dv, w[g + L.EV_TV + 1] * dv, w[g + L.EV_TV + 2] * dv
    c0, c1, c2 = a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0
    side2 = max(a0 * a0 + a1 * a1 + a2 * a2, b0 * b0 + b1 * b1 + b2 * b2)
    return c0 * c0 + c1 * c1 + c2 * c2 <= 1e-12 * side2 * side2


@helper(inline=True)
def _residual(R_i: np.ndarray, c_i: np.ndarray, R_j: np.ndarray, c_j: np.ndarray, flts: np.ndarray, w: np.ndarray,
              F: int) -> float:
    """Both surfaces' evaluations in the global frame and the conditions at ``w[F:F + 4]``;
    return the merit."""
    _global(w, _EVI, R_i, c_i, _GI)
    _global(w, _EVJ, R_j, c_j, _GJ)
    _cross(w, _GJ + L.EV_TU, w, _GJ + L.EV_TV, w, _MJ)  # m_j = T_uj x T_vj, along the normal of j
    d0, d1, d2 = w[_GJ] - w[_GI], w[_GJ + 1] - w[_GI + 1], w[_GJ + 2] - w[_GI + 2]
    tui, tvi, tuj, tvj = _GI + L.EV_TU, _GI + L.EV_TV, _GJ + L.EV_TU, _GJ + L.EV_TV
    w[F] = _dot(w, _MJ, w, tui)
    w[F + 1] = _dot(w, _MJ, w, tvi)
    w[F + 2] = d0 * w[tuj] + d1 * w[tuj + 1] + d2 * w[tuj + 2]
    w[F + 3] = d0 * w[tvj] + d1 * w[tvj + 1] + d2 * w[tvj + 2]
    # merit: rows 0-1 scaled to angles (rad), rows 2-3 to distances in grid cells of surface i,
    # so that surfaces with very different tangent lengths weigh alike
    mm = _dot(w, _MJ, w, _MJ)
    du = flts[L.PAIR_FP_I + L.FP_DU]
    cell2 = du * du * _dot(w, tui, w, tui)
    return (w[F] ** 2 / (mm * _dot(w, tui, w, tui)) + w[F + 1] ** 2 / (mm * _dot(w, tvi, w, tvi))
            + (w[F + 2] ** 2 / _dot(w, tuj, w, tuj) + w[F + 3] ** 2 / _dot(w, tvj, w, tvj)) / cell2)


_SOLVE = ("UniTuple(i8, 2)(f8[:, :, ::1], f8[:, :, ::1], i8[::1], f8[::1], f8[:, ::1], f8[::1], f8[:, ::1], f8[::1], "
          "f8[::1], f8[::1])")


# (longer than 80 lines: one compiled loop whose iterate, step and line search share locals;
# split into helpers, each call would pass the packed arrays again and the loop state back)
@kernel(_SOLVE)
def solve_contact(buf_i: np.ndarray, buf_j: np.ndarray, ints: np.ndarray, flts: np.ndarray, R_i: np.ndarray,
                  c_i: np.ndarray, R_j: np.ndarray, c_j: np.ndarray, x: np.ndarray,
                  work: np.ndarray) -> tuple[int, int]:
    """Damped Newton solve of the common-normal conditions (thesis 6.19-6.20, 5.19-5.20).

    Arguments are packed to keep the call cheap (numba checks the type of every argument), as
    :mod:`simclient.geometry.layout` lays them out: ``ints`` (both windows' ``ip``, the
    ``max_iter``, ``check``) and ``flts`` (both windows' ``fp``, ``tol``,
    ``max_step``, both quiet boxes). With ``check`` set,
    a guess outside a window's quiet box (``u_lo, v_lo, u_hi, v_hi``: the records where the update
    rule has nothing to do) returns ``NEEDS_UPDATE`` at once. Surface poses ``(R, c)``: a table point ``s``
    of surface k is at ``c_k + R_k s`` in the global frame.

    Unknowns ``x = (u_i, v_i, u_j, v_j)`` (updated in place, warm start). With the global points
    ``P_i``, ``P_j``, ``d = P_j - P_i``, the global tangents ``T`` and ``m_j = T_u,j x T_v,j``::

        m_j . T_u,i = 0,  m_j . T_v,i = 0,  d . T_u,j = 0,  d . T_v,j = 0

    i.e. the normals are collinear and d lies along the normal of j: the 3D form of the thesis'
    2D conditions (5.19)-(5.20). The all-distance form of (6.19)-(6.20), ``d . T = 0`` for all four
    tangents, also has roots wherever ``d = 0``, a whole curve when the surfaces overlap, which is
    exactly when contact matters; Newton is drawn to it and the Jacobian is singular there.

    Converged when the Newton step is below ``tol`` grid cells in every parameter, or the scaled
    residual (normals' misalignment in rad, distance off the normal in cells) is below ``tol``:
    at the cell boundaries of a piecewise interpolant the Jacobian jumps and Newton may creep
    there while the residual is already at round-off level. Steps are
    limited to ``max_step`` cells and halved (up to 6 times) while they make the merit
    ``sum (F_r / |T_r|)^2`` a hundred times worse.

    ``work`` (float64[SOLVE_WORK_SIZE] at least) is scratch space; on return its first ``OUT_SIZE`` values
    hold ``P_i``, ``P_j``, ``n_j`` (global unit normal of surface j), the indentation
    ``(P_j - P_i) . n_j`` (positive when the surfaces overlap), ``|F|`` and ``n_i`` at the
    ``OUT_*`` offsets.

    Returns ``(status, iterations)``, status a :class:`ContactStatus` value.
    """
    w = work
    max_iter = ints[L.PAIR_MAX_ITER]
    tol, max_step = flts[L.PAIR_TOL], flts[L.PAIR_MAX_STEP]
    if outside_quiet(ints, flts, x):
        return NEEDS_UPDATE, 0
    h0, h1 = flts[L.PAIR_FP_I + L.FP_DU], flts[L.PAIR_FP_I + L.FP_DV]
    h2, h3 = flts[L.PAIR_FP_J + L.FP_DU], flts[L.PAIR_FP_J + L.FP_DV]
    gi, gj = _GI, _GJ
    status = NOT_CONVERGED
    it = 0
    _surfaces(buf_i, buf_j, ints, flts, w, x[0], x[1], x[2], x[3])
    f2 = _residual(R_i, c_i, R_j, c_j, flts, w, _F)
    while it < max_iter:
        it += 1
        d0, d1, d2 = w[gj] - w[gi], w[gj + 1] - w[gi + 1], w[gj + 2] - w[gi + 2]
        # rows 0-1: m_j . T_ui, m_j . T_vi with m_j = T_uj x T_vj; columns u_i, v_i, u_j, v_j
        _cross(w, gj + L.EV_TUU, w, gj + L.EV_TV, w, _MU)  # dm/du_j = T_uj,u x T_vj + T_uj x T_vj,u
        _cross(w, gj + L.EV_TU, w, gj + L.EV_TVU, w, _MU + 3)
        _cross(w, gj + L.EV_TUV, w, gj + L.EV_TV, w, _MV)  # dm/dv_j = T_uj,v x T_vj + T_uj x T_vj,v
        _cross(w, gj + L.EV_TU, w, gj + L.EV_TVV, w, _MV + 3)
        for k in range(3):
            w[_MU + k] += w[_MU + 3 + k]
            w[_MV + k] += w[_MV + 3 + k]
        for r in range(2):
            t = gi + (L.EV_TU if r == 0 else L.EV_TV)  # T_ui or T_vi
            w[_J + 4 * r] = _dot(w, _MJ, w, gi + (L.EV_TUU if r == 0 else L.EV_TVU))
            w[_J + 4 * r + 1] = _dot(w, _MJ, w, gi + (L.EV_TUV if r == 0 else L.EV_TVV))
            w[_J + 4 * r + 2] = _dot(w, _MU, w, t)
            w[_J + 4 * r + 3] = _dot(w, _MV, w, t)
        # rows 2-3: d . T_uj, d . T_vj with d = P_j - P_i
        for r in range(2, 4):
            t = gj + (L.EV_TU if r == 2 else L.EV_TV)
            du_o = gj + (L.EV_TUU if r == 2 else L.EV_TVU)
            dv_o = gj + (L.EV_TUV if r == 2 else L.EV_TVV)
            w[_J + 4 * r] = -_dot(w, gi + L.EV_SU, w, t)
            w[_J + 4 * r + 1] = -_dot(w, gi + L.EV_SV, w, t)
            w[_J + 4 * r + 2] = _dot(w, gj + L.EV_SU, w, t) + d0 * w[du_o] + d1 * w[du_o + 1] + d2 * w[du_o + 2]
            w[_J + 4 * r + 3] = _dot(w, gj + L.EV_SV, w, t) + d0 * w[dv_o] + d1 * w[dv_o + 1] + d2 * w[dv_o + 2]
        for r in range(4):
            w[_F + r] = -w[_F + r]
        if not _solve4(w, _J, _F, _DX):
            status = SINGULAR
            break
        # limit the step to max_step cells
        m = max(abs(w[_DX]) / h0, abs(w[_DX + 1]) / h1, abs(w[_DX + 2]) / h2, abs(w[_DX + 3]) / h3)
        if m > max_step:
            for r in range(4):
                w[_DX + r] *= max_step / m
            m = max_step
        lam = 1.0
        for _ in range(7):
            for r in range(4):
                w[_XN + r] = x[r] + lam * w[_DX + r]
            _surfaces(buf_i, buf_j, ints, flts, w, w[_XN], w[_XN + 1], w[_XN + 2], w[_XN + 3])
            fn2 = _residual(R_i, c_i, R_j, c_j, flts, w, _FN)
            # Newton steps may raise the merit for a while before converging fast: only a step
            # that makes it a hundred times worse is shortened (the trust region bounds the rest)
            if fn2 <= 100.0 * f2 or lam * m < tol:
                break
            lam *= 0.5
        for r in range(4):
            x[r] = w[_XN + r]
            w[_F + r] = w[_FN + r]
        f2 = fn2
        left = iterate_left(ints, flts, x[0], x[1], x[2], x[3])
        if left >= 0:
            status = left
            break
        if lam * m < tol or math.sqrt(fn2) < tol:
            status = CONVERGED
            break
    for r in range(3):
        w[L.OUT_PI + r] = w[gi + L.EV_S + r]
        w[L.OUT_PJ + r] = w[gj + L.EV_S + r]
        w[L.OUT_N + r] = w[gj + L.EV_N + r]
        w[L.OUT_NI + r] = w[gi + L.EV_N + r]
    w[L.OUT_DEPTH] = ((w[gj] - w[gi]) * w[gj + L.EV_N] + (w[gj + 1] - w[gi + 1]) * w[gj + L.EV_N + 1]
                      + (w[gj + 2] - w[gi + 2]) * w[gj + L.EV_N + 2])
    w[L.OUT_RESIDUAL] = math.sqrt(f2)
    if status == CONVERGED:
        if _singular_point(w, gi, h0, h1):
            status = SINGULAR_POINT_I
        elif _singular_point(w, gj, h2, h3):
            status = SINGULAR_POINT_J
        elif _dot(w, gi + L.EV_N, w, gj + L.EV_N) > 0.0:
            status = NORMALS_ALIGNED  # a wrong-way normal: the surfaces cannot touch here
    return status, it


@helper(inline=True)
def pair_arrays(pair: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A pair's arrays (both windows' buffers, ``ints``, ``work``) from the address of its ``ints``,
    which holds the others' addresses: the fast path's call passes one integer instead of four
    arrays (numba wraps every array argument in a new reference-counted record, a fifth of a warm
    evaluation). The pair owns the arrays and keeps them alive; they are C-contiguous, of the
    layout's sizes and never reallocated."""
    ints = address_array(pair, L.PAIR_INTS_SIZE, np.int64)
    shape_i = (ints[L.PAIR_IP_I + L.IP_BU], ints[L.PAIR_IP_I + L.IP_BV], L.NFIELDS)
    shape_j = (ints[L.PAIR_IP_J + L.IP_BU], ints[L.PAIR_IP_J + L.IP_BV], L.NFIELDS)
    return (address_array(ints[L.PAIR_BUFFER_I], shape_i, np.float64),
            address_array(ints[L.PAIR_BUFFER_J], shape_j, np.float64), ints,
            address_array(ints[L.PAIR_WORK], L.PAIR_WORK_SIZE, np.float64))


#: :func:`solve_warm`'s code for pose arrays not in its signature's form (a shape, or strides of
#: another layout or item size): the caller normalises them and takes the general path
MALFORMED = -2


@helper(inline=True)
def _is_matrix(a: np.ndarray) -> bool:
    """Whether ``a`` is a C-contiguous 3 x 3 array of 8-byte items (its dtype the caller checks:
    a compiled entry reads any array's memory as its signature's type)."""
    return a.shape[0] == 3 and a.shape[1] == 3 and a.strides[0] == 24 and a.strides[1] == 8


@helper(inline=True)
def _is_vector(a: np.ndarray) -> bool:
    """Whether ``a`` is a contiguous 3-vector of 8-byte items (see :func:`_is_matrix`)."""
    return a.shape[0] == 3 and a.strides[0] == 8


@kernel("i8(i8, f8[:, ::1], f8[::1], f8[:, ::1], f8[::1], f8[::1], b1)")
def solve_warm(pair: int, R_i: np.ndarray, c_i: np.ndarray, R_j: np.ndarray, c_j: np.ndarray, data: np.ndarray,
               check: bool) -> int:
    """:func:`solve_contact` from the pair's warm start, a contact evaluation in one compiled call
    (the fast path of :meth:`ContactPair.detect`): the pair's state is its ``ints`` and ``work``
    (its scratch space, warm start and ``flts``, see :mod:`simclient.geometry.layout`), passed as
    the address of ``ints`` (:func:`pair_arrays`); the contact's data (``CONTACT_SIZE`` values: the
    output, the solution and the iterations) go into ``data``, its status is returned (one integer:
    a tuple would cost the call a tenth). Without a warm start (NaN) returns -1 at once: nothing
    tried (the caller starts from a coarse search); for pose arrays of another shape or layout,
    :data:`MALFORMED` (their dtypes and ranks the caller checks: a compiled entry cannot)."""
    data[L.CONTACT_ITERATIONS] = 0
    if not (_is_matrix(R_i) and _is_vector(c_i) and _is_matrix(R_j) and _is_vector(c_j)):
        return MALFORMED
    buf_i, buf_j, ints, work = pair_arrays(pair)
    ints[L.PAIR_CHECK] = check
    x = data[L.CONTACT_X:L.CONTACT_X + 4]  # the warm start, then the solution
    x[:] = work[L.PAIR_X:L.PAIR_X + 4]
    if math.isnan(x[0]):
        return -1
    status, it = solve_contact(buf_i, buf_j, ints, work[L.PAIR_FLTS:L.PAIR_FLTS + L.PAIR_FLTS_SIZE], R_i, c_i, R_j,
                               c_j, x, work)
    data[:L.OUT_SIZE] = work[:L.OUT_SIZE]
    data[L.CONTACT_ITERATIONS] = it
    ints[L.PAIR_EVALUATIONS] += 1
    ints[L.PAIR_ITERATIONS] += it
    if status == CONVERGED:
        work[L.PAIR_X:L.PAIR_X + 4] = x  # the next warm start
    return status


@kernel("i8(i8, f8[:, :, ::1], f8[:, ::1], f8[:, :, ::1], f8[:, ::1], i8, i8[::1], f8[:, ::1])")
def solve_contacts(pair: int, R_i: np.ndarray, c_i: np.ndarray, R_j: np.ndarray, c_j: np.ndarray, first: int,
                   status: np.ndarray, data: np.ndarray) -> int:
    """:func:`solve_contact` along a sequence of poses ``(R_i[k], c_i[k], R_j[k], c_j[k])`` from
    ``first`` on, each warm-started from the last converged solution (the pair's warm start, the
    address of its ``ints`` as for :func:`solve_warm`): statuses and the contacts' data
    (``CONTACT_SIZE`` values: output, solution and iterations) into ``status`` and ``data`` row k. Returns the
    number of poses, or the index of the first pose that needs the caller (a window to move, a
    solve that did not converge from its warm start: :meth:`ContactPair.detect` decides)."""
    buf_i, buf_j, ints, work = pair_arrays(pair)
    flts = work[L.PAIR_FLTS:L.PAIR_FLTS + L.PAIR_FLTS_SIZE]
    x = work[L.PAIR_X:L.PAIR_X + 4]
    xk = np.empty(4)
    for k in range(first, len(c_i)):
        xk[:] = x
        code, it = solve_contact(buf_i, buf_j, ints, flts, R_i[k], c_i[k], R_j[k], c_j[k], xk, work)
        if code != CONVERGED:
            return k
        ints[L.PAIR_EVALUATIONS] += 1
        ints[L.PAIR_ITERATIONS] += it
        status[k] = code
        data[k, :L.OUT_SIZE] = work[:L.OUT_SIZE]
        data[k, L.CONTACT_X:L.CONTACT_X + 4] = xk
        data[k, L.CONTACT_ITERATIONS] = it
        x[:] = xk
    return len(c_i)


@helper
def _curve(buf: np.ndarray, ip: np.ndarray, fp: np.ndarray, theta: float, v: float, R: np.ndarray,
           c: np.ndarray, ev: np.ndarray, g: np.ndarray) -> None:
    """Point, tangent and the tangent's derivative of a profile at ``theta`` (global, planar):
    ``g = (P (0:2), t (2:4), t' (4:6))``."""
    evaluate(buf, ip, fp, theta, v, ev, 0, 0, 0)
    for o, k in ((0, L.EV_S), (2, L.EV_TU), (4, L.EV_TUU)):
        g[o] = R[0, 0] * ev[k] + R[0, 1] * ev[k + 1]
        g[o + 1] = R[1, 0] * ev[k] + R[1, 1] * ev[k + 1]
    g[0] += c[0]
    g[1] += c[1]


@helper(inline=True)
def _conditions(gi: np.ndarray, gj: np.ndarray, sj: float, F: np.ndarray) -> float:
    """F = (m_j . t_i, d . t_j); returns the merit (angle^2 + distance^2 in cells of i)."""
    mx, my = sj * gj[3], -sj * gj[2]
    dx, dy = gj[0] - gi[0], gj[1] - gi[1]
    F[0] = mx * gi[2] + my * gi[3]
    F[1] = dx * gj[2] + dy * gj[3]
    ti2 = gi[2] * gi[2] + gi[3] * gi[3]
    tj2 = gj[2] * gj[2] + gj[3] * gj[3]
    return F[0] * F[0] / (tj2 * ti2) + F[1] * F[1] / (tj2 * ti2)


@kernel(_SOLVE)
def solve_profile_contact(buf_i: np.ndarray, buf_j: np.ndarray, ints: np.ndarray, flts: np.ndarray,
                          R_i: np.ndarray, c_i: np.ndarray, R_j: np.ndarray, c_j: np.ndarray, x: np.ndarray,
                          work: np.ndarray) -> tuple[int, int]:
    """The 2D common-normal solve: same arguments and outputs as
    :func:`simclient.contact.solve_contact` (``x = (theta_i, v_i, theta_j, v_j)``, the v's fixed)."""
    ip_i, fp_i, ip_j, fp_j = pair_windows(ints, flts)
    max_iter = ints[L.PAIR_MAX_ITER]
    tol, max_step = flts[L.PAIR_TOL], flts[L.PAIR_MAX_STEP]
    if outside_quiet(ints, flts, x):
        return NEEDS_UPDATE, 0
    out = work[0:L.OUT_SIZE]
    ev = work[L.PROFILE_EV:L.PROFILE_EV + L.EV_SIZE]
    gi, gj = work[L.PROFILE_GI:L.PROFILE_GI + 6], work[L.PROFILE_GJ:L.PROFILE_GJ + 6]
    F = work[L.PROFILE_F:L.PROFILE_F + 2]
    si, sj = fp_i[L.FP_NORMAL_SIGN], fp_j[L.FP_NORMAL_SIGN]
    hi, hj = fp_i[L.FP_DU], fp_j[L.FP_DU]
    status = NOT_CONVERGED
    it = 0
    _curve(buf_i, ip_i, fp_i, x[0], x[1], R_i, c_i, ev, gi)
    _curve(buf_j, ip_j, fp_j, x[2], x[3], R_j, c_j, ev, gj)
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
            _curve(buf_i, ip_i, fp_i, x[0], x[1], R_i, c_i, ev, gi)
            _curve(buf_j, ip_j, fp_j, x[2], x[3], R_j, c_j, ev, gj)
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
