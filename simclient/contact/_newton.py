"""Compiled (numba) common-normal contact solve between two storage windows.

:func:`solve_contact` is a damped Newton solve of the common-normal conditions (thesis
6.19-6.20, 5.19-5.20) in the parameters of both surfaces, reading both windows' buffers through
:func:`simclient.geometry.evaluate`; its packed arguments are laid out as
:mod:`simclient.geometry.layout` says. Its outcome is a :class:`ContactStatus`.
"""

from __future__ import annotations

import math
from enum import IntEnum

import numpy as np

from simclient.geometry import OUTSIDE_TABLE, OUTSIDE_WINDOW, evaluate, jit, locate
from simclient.geometry import layout as L

__all__ = ["ContactStatus", "solve_contact", "solve_contacts"]


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
}
# plain ints inside the compiled code
(CONVERGED, NOT_CONVERGED, SINGULAR, LEFT_WINDOW_I, LEFT_WINDOW_J, LEFT_TABLE_I, LEFT_TABLE_J, NORMALS_ALIGNED,
 NEEDS_UPDATE) = (int(s) for s in ContactStatus)


@jit
def pair_windows(ints: np.ndarray, flts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A pair's window parameters in its work arrays: ``(ip_i, fp_i, ip_j, fp_j)``."""
    return (ints[L.PAIR_IP_I:L.PAIR_IP_I + L.IP_SIZE], flts[L.PAIR_FP_I:L.PAIR_FP_I + L.FP_SIZE],
            ints[L.PAIR_IP_J:L.PAIR_IP_J + L.IP_SIZE], flts[L.PAIR_FP_J:L.PAIR_FP_J + L.FP_SIZE])


@jit
def outside_quiet(ints: np.ndarray, flts: np.ndarray, x: np.ndarray) -> bool:
    """The thesis' update rule, fast path: with the check on, is a guess outside its window's
    quiet records (then the rule must run before solving)?"""
    if not ints[L.PAIR_CHECK]:
        return False
    qi, qj = flts[L.PAIR_QUIET_I:L.PAIR_QUIET_I + 4], flts[L.PAIR_QUIET_J:L.PAIR_QUIET_J + 4]
    return not (qi[0] <= x[0] < qi[2] and qi[1] <= x[1] < qi[3] and qj[0] <= x[2] < qj[2] and qj[1] <= x[3] < qj[3])


@jit
def iterate_left(ip_i: np.ndarray, fp_i: np.ndarray, ip_j: np.ndarray, fp_j: np.ndarray, x: np.ndarray) -> int:
    """The status of an iterate ``x = (u_i, v_i, u_j, v_j)`` outside a table or a window
    (tables first: no window can hold it), or -1 while it lies inside both windows."""
    wi = locate(ip_i, fp_i, x[0], x[1])
    wj = locate(ip_j, fp_j, x[2], x[3])
    if wi == OUTSIDE_TABLE:
        return LEFT_TABLE_I
    if wj == OUTSIDE_TABLE:
        return LEFT_TABLE_J
    if wi == OUTSIDE_WINDOW:
        return LEFT_WINDOW_I
    if wj == OUTSIDE_WINDOW:
        return LEFT_WINDOW_J
    return -1


@jit
def _rot(R: np.ndarray, x: np.ndarray, o: int, out: np.ndarray, p: int) -> None:
    for r in range(3):
        out[p + r] = R[r, 0] * x[o] + R[r, 1] * x[o + 1] + R[r, 2] * x[o + 2]


@jit
def _global(ev: np.ndarray, R: np.ndarray, c: np.ndarray, g: np.ndarray) -> None:
    """Rotate every vector of ``ev`` into the global frame; translate the position."""
    for o in range(0, L.EV_SIZE, 3):
        _rot(R, ev, o, g, o)
    for r in range(3):
        g[L.EV_S + r] += c[r]


@jit
def _dot(a: np.ndarray, o: int, b: np.ndarray, p: int) -> float:
    return a[o] * b[p] + a[o + 1] * b[p + 1] + a[o + 2] * b[p + 2]


@jit
def _solve4(J: np.ndarray, F: np.ndarray, x: np.ndarray) -> bool:
    """Solve J x = F (4 x 4) by Gaussian elimination with partial pivoting, in place (J and F are
    overwritten: no allocation in the hot path); False if singular."""
    A = J
    b = F
    scale = 0.0
    for r in range(4):
        for c in range(4):
            scale = max(scale, abs(A[r, c]))
    if scale == 0.0:
        return False
    for col in range(4):
        piv = col
        for r in range(col + 1, 4):
            if abs(A[r, col]) > abs(A[piv, col]):
                piv = r
        if abs(A[piv, col]) <= 1e-13 * scale:
            return False
        if piv != col:
            for c in range(4):
                A[col, c], A[piv, c] = A[piv, c], A[col, c]
            b[col], b[piv] = b[piv], b[col]
        for r in range(col + 1, 4):
            f = A[r, col] / A[col, col]
            for c in range(col, 4):
                A[r, c] -= f * A[col, c]
            b[r] -= f * b[col]
    for r in range(3, -1, -1):
        acc = b[r]
        for c in range(r + 1, 4):
            acc -= A[r, c] * x[c]
        x[r] = acc / A[r, r]
    return True


@jit
def _cross(a: np.ndarray, o: int, b: np.ndarray, p: int, out: np.ndarray, q: int) -> None:
    out[q] = a[o + 1] * b[p + 2] - a[o + 2] * b[p + 1]
    out[q + 1] = a[o + 2] * b[p] - a[o] * b[p + 2]
    out[q + 2] = a[o] * b[p + 1] - a[o + 1] * b[p]


@jit
def _surfaces(buf_i: np.ndarray, ip_i: np.ndarray, fp_i: np.ndarray, buf_j: np.ndarray, ip_j: np.ndarray,
              fp_j: np.ndarray, x: np.ndarray, mode: int, evi: np.ndarray, evj: np.ndarray, key: np.ndarray) -> None:
    """Both surfaces at ``x`` in their own frames into ``evi``, ``evj``, unless they hold them
    already (``key``: the parameters and both windows' placements they were taken at). A warm
    start is where the last solve ended, so its evaluations do not depend on the new poses."""
    if (key[0] == x[0] and key[1] == x[1] and key[2] == x[2] and key[3] == x[3] and key[4] == ip_i[L.IP_I_LO]
            and key[5] == ip_i[L.IP_J_LO] and key[6] == ip_j[L.IP_I_LO] and key[7] == ip_j[L.IP_J_LO]):
        return
    evaluate(buf_i, ip_i, fp_i, x[0], x[1], mode, evi)
    evaluate(buf_j, ip_j, fp_j, x[2], x[3], mode, evj)
    key[0], key[1], key[2], key[3] = x[0], x[1], x[2], x[3]
    key[4], key[5], key[6], key[7] = ip_i[L.IP_I_LO], ip_i[L.IP_J_LO], ip_j[L.IP_I_LO], ip_j[L.IP_J_LO]


@jit
def _residual(R_i: np.ndarray, c_i: np.ndarray, R_j: np.ndarray, c_j: np.ndarray, fp_i: np.ndarray,
              evi: np.ndarray, evj: np.ndarray, gi: np.ndarray, gj: np.ndarray, F: np.ndarray, m: np.ndarray) -> float:
    """Both surfaces' evaluations in the global frame and the conditions F; return the merit."""
    _global(evi, R_i, c_i, gi)
    _global(evj, R_j, c_j, gj)
    _cross(gj, L.EV_TU, gj, L.EV_TV, m, 0)  # m_j = T_uj x T_vj, along the normal of j
    d0, d1, d2 = gj[L.EV_S] - gi[L.EV_S], gj[L.EV_S + 1] - gi[L.EV_S + 1], gj[L.EV_S + 2] - gi[L.EV_S + 2]
    F[0] = _dot(m, 0, gi, L.EV_TU)
    F[1] = _dot(m, 0, gi, L.EV_TV)
    F[2] = d0 * gj[L.EV_TU] + d1 * gj[L.EV_TU + 1] + d2 * gj[L.EV_TU + 2]
    F[3] = d0 * gj[L.EV_TV] + d1 * gj[L.EV_TV + 1] + d2 * gj[L.EV_TV + 2]
    # merit: rows 0-1 scaled to angles (rad), rows 2-3 to distances in grid cells of surface i,
    # so that surfaces with very different tangent lengths weigh alike
    mm = _dot(m, 0, m, 0)
    cell2 = fp_i[L.FP_DU] * fp_i[L.FP_DU] * _dot(gi, L.EV_TU, gi, L.EV_TU)
    return (F[0] ** 2 / (mm * _dot(gi, L.EV_TU, gi, L.EV_TU)) + F[1] ** 2 / (mm * _dot(gi, L.EV_TV, gi, L.EV_TV))
            + (F[2] ** 2 / _dot(gj, L.EV_TU, gj, L.EV_TU) + F[3] ** 2 / _dot(gj, L.EV_TV, gj, L.EV_TV)) / cell2)


@jit
def solve_contact(buf_i: np.ndarray, buf_j: np.ndarray, ints: np.ndarray, flts: np.ndarray, R_i: np.ndarray,
                  c_i: np.ndarray, R_j: np.ndarray, c_j: np.ndarray, x: np.ndarray,
                  work: np.ndarray) -> tuple[int, int]:
    """Damped Newton solve of the common-normal conditions (thesis 6.19-6.20, 5.19-5.20).

    Arguments are packed to keep the call cheap (numba checks the type of every argument), as
    :mod:`simclient.geometry.layout` lays them out: ``ints`` (both windows' ``ip``, the
    interpolation mode, ``max_iter``, ``check``) and ``flts`` (both windows' ``fp``, ``tol``,
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

    ``work`` (float64[PAIR_WORK_SIZE]) is scratch space; on return its first ``OUT_SIZE`` values
    hold ``P_i``, ``P_j``, ``n_j`` (global unit normal of surface j), the indentation
    ``(P_j - P_i) . n_j`` (positive when the surfaces overlap), ``|F|`` and ``n_i`` at the
    ``OUT_*`` offsets.

    Returns ``(status, iterations)``, status a :class:`ContactStatus` value.
    """
    ip_i, fp_i, ip_j, fp_j = pair_windows(ints, flts)
    mode, max_iter = ints[L.PAIR_MODE], ints[L.PAIR_MAX_ITER]
    tol, max_step = flts[L.PAIR_TOL], flts[L.PAIR_MAX_STEP]
    if outside_quiet(ints, flts, x):
        return NEEDS_UPDATE, 0
    out = work[0:L.OUT_SIZE]
    o = L.OUT_SIZE
    gi = work[o + L.EV_SIZE:o + 2 * L.EV_SIZE]
    gj = work[o + 2 * L.EV_SIZE:o + 3 * L.EV_SIZE]
    o += 3 * L.EV_SIZE
    F = work[o:o + 4]
    Fn = work[o + 4:o + 8]
    J = work[o + 8:o + 24].reshape(4, 4)
    dx = work[o + 24:o + 28]
    xn = work[o + 28:o + 32]
    mj = work[o + 32:o + 35]
    mu = work[o + 35:o + 41]
    mv = work[o + 41:o + 47]
    evi, evj = work[L.PAIR_EV_I:L.PAIR_EV_I + L.EV_SIZE], work[L.PAIR_EV_J:L.PAIR_EV_J + L.EV_SIZE]
    key = work[L.PAIR_KEY:L.PAIR_KEY + L.PAIR_KEY_SIZE]
    h0, h1, h2, h3 = fp_i[L.FP_DU], fp_i[L.FP_DV], fp_j[L.FP_DU], fp_j[L.FP_DV]
    status = NOT_CONVERGED
    it = 0
    _surfaces(buf_i, ip_i, fp_i, buf_j, ip_j, fp_j, x, mode, evi, evj, key)
    f2 = _residual(R_i, c_i, R_j, c_j, fp_i, evi, evj, gi, gj, F, mj)
    while it < max_iter:
        it += 1
        d0, d1, d2 = gj[L.EV_S] - gi[L.EV_S], gj[L.EV_S + 1] - gi[L.EV_S + 1], gj[L.EV_S + 2] - gi[L.EV_S + 2]
        # rows 0-1: m_j . T_ui, m_j . T_vi with m_j = T_uj x T_vj; columns u_i, v_i, u_j, v_j
        _cross(gj, L.EV_TUU, gj, L.EV_TV, mu, 0)  # dm/du_j = T_uj,u x T_vj + T_uj x T_vj,u
        _cross(gj, L.EV_TU, gj, L.EV_TVU, mu, 3)
        _cross(gj, L.EV_TUV, gj, L.EV_TV, mv, 0)  # dm/dv_j = T_uj,v x T_vj + T_uj x T_vj,v
        _cross(gj, L.EV_TU, gj, L.EV_TVV, mv, 3)
        for k in range(3):
            mu[k] += mu[3 + k]
            mv[k] += mv[3 + k]
        for r in range(2):
            t = L.EV_TU if r == 0 else L.EV_TV  # T_ui or T_vi
            J[r, 0] = _dot(mj, 0, gi, L.EV_TUU if r == 0 else L.EV_TVU)
            J[r, 1] = _dot(mj, 0, gi, L.EV_TUV if r == 0 else L.EV_TVV)
            J[r, 2] = _dot(mu, 0, gi, t)
            J[r, 3] = _dot(mv, 0, gi, t)
        # rows 2-3: d . T_uj, d . T_vj with d = P_j - P_i
        for r in range(2, 4):
            t = L.EV_TU if r == 2 else L.EV_TV
            J[r, 0] = -_dot(gi, L.EV_SU, gj, t)
            J[r, 1] = -_dot(gi, L.EV_SV, gj, t)
            du_o = L.EV_TUU if r == 2 else L.EV_TVU
            dv_o = L.EV_TUV if r == 2 else L.EV_TVV
            J[r, 2] = _dot(gj, L.EV_SU, gj, t) + d0 * gj[du_o] + d1 * gj[du_o + 1] + d2 * gj[du_o + 2]
            J[r, 3] = _dot(gj, L.EV_SV, gj, t) + d0 * gj[dv_o] + d1 * gj[dv_o + 1] + d2 * gj[dv_o + 2]
        for r in range(4):
            F[r] = -F[r]
        if not _solve4(J, F, dx):
            status = SINGULAR
            break
        # limit the step to max_step cells
        m = max(abs(dx[0]) / h0, abs(dx[1]) / h1, abs(dx[2]) / h2, abs(dx[3]) / h3)
        if m > max_step:
            for r in range(4):
                dx[r] *= max_step / m
            m = max_step
        lam = 1.0
        for _ in range(7):
            for r in range(4):
                xn[r] = x[r] + lam * dx[r]
            _surfaces(buf_i, ip_i, fp_i, buf_j, ip_j, fp_j, xn, mode, evi, evj, key)
            fn2 = _residual(R_i, c_i, R_j, c_j, fp_i, evi, evj, gi, gj, Fn, mj)
            # Newton steps may raise the merit for a while before converging fast: only a step
            # that makes it a hundred times worse is shortened (the trust region bounds the rest)
            if fn2 <= 100.0 * f2 or lam * m < tol:
                break
            lam *= 0.5
        for r in range(4):
            x[r] = xn[r]
            F[r] = Fn[r]
        f2 = fn2
        left = iterate_left(ip_i, fp_i, ip_j, fp_j, x)
        if left >= 0:
            status = left
            break
        if lam * m < tol or math.sqrt(fn2) < tol:
            status = CONVERGED
            break
    for r in range(3):
        out[L.OUT_PI + r] = gi[L.EV_S + r]
        out[L.OUT_PJ + r] = gj[L.EV_S + r]
        out[L.OUT_N + r] = gj[L.EV_N + r]
        out[L.OUT_NI + r] = gi[L.EV_N + r]
    out[L.OUT_DEPTH] = ((gj[L.EV_S] - gi[L.EV_S]) * gj[L.EV_N] + (gj[L.EV_S + 1] - gi[L.EV_S + 1]) * gj[L.EV_N + 1]
                      + (gj[L.EV_S + 2] - gi[L.EV_S + 2]) * gj[L.EV_N + 2])
    out[L.OUT_RESIDUAL] = math.sqrt(f2)
    if status == CONVERGED and _dot(gi, L.EV_N, gj, L.EV_N) > 0.0:
        status = NORMALS_ALIGNED  # a wrong-way normal: the surfaces cannot touch here
    return status, it


@jit
def solve_contacts(buf_i: np.ndarray, buf_j: np.ndarray, ints: np.ndarray, flts: np.ndarray, R_i: np.ndarray,
                   c_i: np.ndarray, R_j: np.ndarray, c_j: np.ndarray, x: np.ndarray, work: np.ndarray, first: int,
                   status: np.ndarray, params: np.ndarray, out: np.ndarray) -> int:
    """:func:`solve_contact` along a sequence of poses ``(R_i[k], c_i[k], R_j[k], c_j[k])`` from
    ``first`` on, each warm-started from the last converged solution ``x``: statuses, parameters and
    outputs (``OUT_SIZE`` values) into ``status``, ``params``, ``out`` row k. Returns the number of
    poses, or the index of the first pose that needs the caller (a window to move, a solve that
    did not converge from its warm start: :meth:`ContactPair.detect` decides)."""
    xk = np.empty(4)
    for k in range(first, len(c_i)):
        xk[:] = x
        code, _ = solve_contact(buf_i, buf_j, ints, flts, R_i[k], c_i[k], R_j[k], c_j[k], xk, work)
        if code != CONVERGED:
            return k
        status[k] = code
        params[k] = xk
        out[k] = work[:L.OUT_SIZE]
        x[:] = xk
    return len(c_i)
