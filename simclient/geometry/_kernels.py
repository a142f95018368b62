"""Compiled (numba) kernels: interpolation inside a storage window and the common-normal solve.

Window layout: a window of ``wu x wv`` records keeps its points in a buffer ``buf`` of shape
``(Bu, Bv, 14)`` with ``Bu = wu*u_pts``, ``Bv = wv*v_pts``, addressed modulo its size: grid point
``(i, j)`` lives at ``buf[i % Bu, j % Bv]``. Re-centring a window then only writes the new
strips; nothing already held moves.

Per-surface integer parameters ``ip`` (int64[8]): ``Bu, Bv, i_lo, i_hi, j_lo, j_hi, u_npts, v_npts``
where ``[i_lo, i_hi) x [j_lo, j_hi)`` are the grid points the window holds. Float parameters
``fp`` (float64[5]): ``u0, du, v0, dv, normal_sign``.

Evaluation output ``ev`` (float64[30]) in the surface frame: ``s (0:3)``, ``s_u (3:6)``,
``s_v (6:9)`` (derivatives of the interpolated position), ``T_u (9:12)``, ``T_v (12:15)`` (the
tangents used in the contact conditions), ``T_u,u (15:18)``, ``T_u,v (18:21)``, ``T_v,u (21:24)``,
``T_v,v (24:27)``, ``n (27:30)`` (unit normal).

Interpolation modes: ``BILINEAR`` (the thesis, eq. 6.22: position, normal and both tangents
interpolated bilinearly from the four corner points; the normal renormalised) and ``HERMITE``
(bicubic Hermite patch from the corner positions and the stored partials ``tu``, ``tv``, with
the twist at each node estimated by central differences of the stored tangents; tangents and
normal are the exact derivatives of the interpolated position, and the interpolant is C1).
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

__all__ = ["BILINEAR", "HERMITE", "evaluate", "solve_contact", "STATUS"]

BILINEAR = 0
HERMITE = 1

# Status codes of solve_contact
(CONVERGED, NOT_CONVERGED, SINGULAR, LEFT_WINDOW_I, LEFT_WINDOW_J, LEFT_TABLE_I, LEFT_TABLE_J,
 NORMALS_ALIGNED, NEEDS_UPDATE) = range(9)
STATUS = {CONVERGED: "converged", NOT_CONVERGED: "not converged", SINGULAR: "singular Jacobian",
          LEFT_WINDOW_I: "left window i", LEFT_WINDOW_J: "left window j", LEFT_TABLE_I: "left table i",
          LEFT_TABLE_J: "left table j", NORMALS_ALIGNED: "normals point the same way",
          NEEDS_UPDATE: "window update needed"}

_jit = nb.njit(cache=True, fastmath=False, error_model="numpy")


@_jit
def _cell(x: float, lo: int, hi: int) -> int:
    """Cell index (its lower grid point) for grid coordinate x, kept inside [lo, hi - 2]."""
    i = int(math.floor(x))
    if i < lo:
        i = lo
    if i > hi - 2:
        i = hi - 2
    return i


@_jit
def _twist3(buf: np.ndarray, ip: np.ndarray, i: int, j: int, du: float, dv: float) -> tuple[float, float, float]:
    """Twist s_uv * du * dv at grid node (i, j): the mean of d(tu)/dv and d(tv)/du by central
    differences (one-sided at the window's edges)."""
    Bu, Bv = ip[0], ip[1]
    jm, jp = max(j - 1, ip[4]), min(j + 1, ip[5] - 1)
    im, ip_ = max(i - 1, ip[2]), min(i + 1, ip[3] - 1)
    ii, jj = i % Bu, j % Bv
    jmb, jpb, imb, ipb = jm % Bv, jp % Bv, im % Bu, ip_ % Bu
    fu = 0.5 * du / (jp - jm)  # d(tu)/dv per grid step, times du dv / 2
    fv = 0.5 * dv / (ip_ - im)
    return ((buf[ii, jpb, 8] - buf[ii, jmb, 8]) * fu + (buf[ipb, jj, 11] - buf[imb, jj, 11]) * fv,
            (buf[ii, jpb, 9] - buf[ii, jmb, 9]) * fu + (buf[ipb, jj, 12] - buf[imb, jj, 12]) * fv,
            (buf[ii, jpb, 10] - buf[ii, jmb, 10]) * fu + (buf[ipb, jj, 13] - buf[imb, jj, 13]) * fv)


@_jit
def _corner(P, U, V, W, fa, ga, dfa, dga, ddfa, ddga, fb, gb, dfb, dgb, ddfb, ddgb):
    """One corner's contribution to a Hermite patch and its first and second derivatives."""
    return (fa * fb * P + ga * fb * U + fa * gb * V + ga * gb * W,
            dfa * fb * P + dga * fb * U + dfa * gb * V + dga * gb * W,
            fa * dfb * P + ga * dfb * U + fa * dgb * V + ga * dgb * W,
            ddfa * fb * P + ddga * fb * U + ddfa * gb * V + ddga * gb * W,
            dfa * dfb * P + dga * dfb * U + dfa * dgb * V + dga * dgb * W,
            fa * ddfb * P + ga * ddfb * U + fa * ddgb * V + ga * ddgb * W)


@_jit
def evaluate(buf: np.ndarray, ip: np.ndarray, fp: np.ndarray, u: float, v: float, mode: int,
             ev: np.ndarray) -> None:
    """Interpolate the window at (u, v) into ``ev`` (see the module docstring)."""
    Bu, Bv = ip[0], ip[1]
    du, dv = fp[1], fp[3]
    x = (u - fp[0]) / du
    y = (v - fp[2]) / dv
    i = _cell(x, ip[2], ip[3])
    j = _cell(y, ip[4], ip[5])
    a = x - i
    b = y - j
    i0, i1 = i % Bu, (i + 1) % Bu
    j0, j1 = j % Bv, (j + 1) % Bv
    if mode == BILINEAR:
        w00 = (1 - a) * (1 - b)
        w10 = a * (1 - b)
        w01 = (1 - a) * b
        w11 = a * b
        for k in range(3):
            p00, p10, p01, p11 = buf[i0, j0, 2 + k], buf[i1, j0, 2 + k], buf[i0, j1, 2 + k], buf[i1, j1, 2 + k]
            ev[k] = w00 * p00 + w10 * p10 + w01 * p01 + w11 * p11
            ev[3 + k] = ((1 - b) * (p10 - p00) + b * (p11 - p01)) / du
            ev[6 + k] = ((1 - a) * (p01 - p00) + a * (p11 - p10)) / dv
            for f, o in ((8, 9), (11, 12), (5, 27)):  # tu, tv, n
                q00, q10, q01, q11 = buf[i0, j0, f + k], buf[i1, j0, f + k], buf[i0, j1, f + k], buf[i1, j1, f + k]
                ev[o + k] = w00 * q00 + w10 * q10 + w01 * q01 + w11 * q11
                if o == 9:
                    ev[15 + k] = ((1 - b) * (q10 - q00) + b * (q11 - q01)) / du
                    ev[18 + k] = ((1 - a) * (q01 - q00) + a * (q11 - q10)) / dv
                elif o == 12:
                    ev[21 + k] = ((1 - b) * (q10 - q00) + b * (q11 - q01)) / du
                    ev[24 + k] = ((1 - a) * (q01 - q00) + a * (q11 - q10)) / dv
        nn = math.sqrt(ev[27] ** 2 + ev[28] ** 2 + ev[29] ** 2)
        for k in range(3):
            ev[27 + k] /= nn
        return
    # Bicubic Hermite. Basis on [0, 1]: value h0 (corner 0), h1 (corner 1); slope g0, g1.
    a2, b2 = a * a, b * b
    ha0, ha1 = 2 * a2 * a - 3 * a2 + 1, -2 * a2 * a + 3 * a2
    ga0, ga1 = a2 * a - 2 * a2 + a, a2 * a - a2
    dha0, dha1 = 6 * a2 - 6 * a, -6 * a2 + 6 * a
    dga0, dga1 = 3 * a2 - 4 * a + 1, 3 * a2 - 2 * a
    ddha0, ddha1 = 12 * a - 6, -12 * a + 6
    ddga0, ddga1 = 6 * a - 4, 6 * a - 2
    hb0, hb1 = 2 * b2 * b - 3 * b2 + 1, -2 * b2 * b + 3 * b2
    gb0, gb1 = b2 * b - 2 * b2 + b, b2 * b - b2
    dhb0, dhb1 = 6 * b2 - 6 * b, -6 * b2 + 6 * b
    dgb0, dgb1 = 3 * b2 - 4 * b + 1, 3 * b2 - 2 * b
    ddhb0, ddhb1 = 12 * b - 6, -12 * b + 6
    ddgb0, ddgb1 = 6 * b - 4, 6 * b - 2
    # twists at the four corner nodes (all three components), shared with the neighbouring cells
    t00x, t00y, t00z = _twist3(buf, ip, i, j, du, dv)
    t10x, t10y, t10z = _twist3(buf, ip, i + 1, j, du, dv)
    t01x, t01y, t01z = _twist3(buf, ip, i, j + 1, du, dv)
    t11x, t11y, t11z = _twist3(buf, ip, i + 1, j + 1, du, dv)
    for k in range(3):
        if k == 0:
            W00, W10, W01, W11 = t00x, t10x, t01x, t11x
        elif k == 1:
            W00, W10, W01, W11 = t00y, t10y, t01y, t11y
        else:
            W00, W10, W01, W11 = t00z, t10z, t01z, t11z
        # S(a, b) = sum over corners of [h(a) h(b) P + g(a) h(b) U + h(a) g(b) V + g(a) g(b) W],
        # slopes U, V and twists W per unit of a and b
        a00 = _corner(buf[i0, j0, 2 + k], buf[i0, j0, 8 + k] * du, buf[i0, j0, 11 + k] * dv, W00,
                      ha0, ga0, dha0, dga0, ddha0, ddga0, hb0, gb0, dhb0, dgb0, ddhb0, ddgb0)
        a10 = _corner(buf[i1, j0, 2 + k], buf[i1, j0, 8 + k] * du, buf[i1, j0, 11 + k] * dv, W10,
                      ha1, ga1, dha1, dga1, ddha1, ddga1, hb0, gb0, dhb0, dgb0, ddhb0, ddgb0)
        a01 = _corner(buf[i0, j1, 2 + k], buf[i0, j1, 8 + k] * du, buf[i0, j1, 11 + k] * dv, W01,
                      ha0, ga0, dha0, dga0, ddha0, ddga0, hb1, gb1, dhb1, dgb1, ddhb1, ddgb1)
        a11 = _corner(buf[i1, j1, 2 + k], buf[i1, j1, 8 + k] * du, buf[i1, j1, 11 + k] * dv, W11,
                      ha1, ga1, dha1, dga1, ddha1, ddga1, hb1, gb1, dhb1, dgb1, ddhb1, ddgb1)
        s_ = a00[0] + a10[0] + a01[0] + a11[0]
        sa = a00[1] + a10[1] + a01[1] + a11[1]
        sb = a00[2] + a10[2] + a01[2] + a11[2]
        saa = a00[3] + a10[3] + a01[3] + a11[3]
        sab = a00[4] + a10[4] + a01[4] + a11[4]
        sbb = a00[5] + a10[5] + a01[5] + a11[5]
        ev[k] = s_
        ev[3 + k] = sa / du
        ev[6 + k] = sb / dv
        ev[9 + k] = sa / du
        ev[12 + k] = sb / dv
        ev[15 + k] = saa / (du * du)
        ev[18 + k] = sab / (du * dv)
        ev[21 + k] = sab / (du * dv)
        ev[24 + k] = sbb / (dv * dv)
    nx = ev[4] * ev[8] - ev[5] * ev[7]
    ny = ev[5] * ev[6] - ev[3] * ev[8]
    nz = ev[3] * ev[7] - ev[4] * ev[6]
    nn = math.sqrt(nx * nx + ny * ny + nz * nz) * fp[4]
    ev[27] = nx / nn
    ev[28] = ny / nn
    ev[29] = nz / nn


@_jit
def _rot(R: np.ndarray, x: np.ndarray, o: int, out: np.ndarray, p: int) -> None:
    for r in range(3):
        out[p + r] = R[r, 0] * x[o] + R[r, 1] * x[o + 1] + R[r, 2] * x[o + 2]


@_jit
def _global(ev: np.ndarray, R: np.ndarray, c: np.ndarray, g: np.ndarray) -> None:
    """Rotate every vector of ``ev`` into the global frame; translate the position."""
    for o in range(0, 30, 3):
        _rot(R, ev, o, g, o)
    for r in range(3):
        g[r] += c[r]


@_jit
def _dot(a: np.ndarray, o: int, b: np.ndarray, p: int) -> float:
    return a[o] * b[p] + a[o + 1] * b[p + 1] + a[o + 2] * b[p + 2]


@_jit
def _solve4(J: np.ndarray, F: np.ndarray, x: np.ndarray) -> bool:
    """Solve J x = F (4 x 4) by Gaussian elimination with partial pivoting; False if singular."""
    A = J.copy()
    b = F.copy()
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


@_jit
def _inside(ip: np.ndarray, fp: np.ndarray, u: float, v: float) -> int:
    """0 inside the window's points, 1 outside the window but inside the table, 2 outside the table."""
    x = (u - fp[0]) / fp[1]
    y = (v - fp[2]) / fp[3]
    eps = 1e-9
    if x < -eps or y < -eps or x > ip[6] - 1 + eps or y > ip[7] - 1 + eps:
        return 2
    if x < ip[2] - eps or x > ip[3] - 1 + eps or y < ip[4] - eps or y > ip[5] - 1 + eps:
        return 1
    return 0


@_jit
def _cross(a: np.ndarray, o: int, b: np.ndarray, p: int, out: np.ndarray, q: int) -> None:
    out[q] = a[o + 1] * b[p + 2] - a[o + 2] * b[p + 1]
    out[q + 1] = a[o + 2] * b[p] - a[o] * b[p + 2]
    out[q + 2] = a[o] * b[p + 1] - a[o + 1] * b[p]


@_jit
def _residual(buf_i, ip_i, fp_i, buf_j, ip_j, fp_j, R_i, c_i, R_j, c_j, x, mode, ev, gi, gj, F, m) -> float:
    """Evaluate both surfaces (global frame) and the conditions F; return the merit."""
    evaluate(buf_i, ip_i, fp_i, x[0], x[1], mode, ev)
    _global(ev, R_i, c_i, gi)
    evaluate(buf_j, ip_j, fp_j, x[2], x[3], mode, ev)
    _global(ev, R_j, c_j, gj)
    _cross(gj, 9, gj, 12, m, 0)  # m_j = T_uj x T_vj, along the normal of j
    d0, d1, d2 = gj[0] - gi[0], gj[1] - gi[1], gj[2] - gi[2]
    F[0] = m[0] * gi[9] + m[1] * gi[10] + m[2] * gi[11]
    F[1] = m[0] * gi[12] + m[1] * gi[13] + m[2] * gi[14]
    F[2] = d0 * gj[9] + d1 * gj[10] + d2 * gj[11]
    F[3] = d0 * gj[12] + d1 * gj[13] + d2 * gj[14]
    # merit: rows 0-1 scaled to angles (rad), rows 2-3 to distances in grid cells of surface i,
    # so that surfaces with very different tangent lengths weigh alike
    mm = _dot(m, 0, m, 0)
    cell2 = fp_i[1] * fp_i[1] * _dot(gi, 9, gi, 9)
    return (F[0] ** 2 / (mm * _dot(gi, 9, gi, 9)) + F[1] ** 2 / (mm * _dot(gi, 12, gi, 12))
            + (F[2] ** 2 / _dot(gj, 9, gj, 9) + F[3] ** 2 / _dot(gj, 12, gj, 12)) / cell2)


@_jit
def solve_contact(buf_i: np.ndarray, buf_j: np.ndarray, ints: np.ndarray, flts: np.ndarray, R_i: np.ndarray,
                  c_i: np.ndarray, R_j: np.ndarray, c_j: np.ndarray, x: np.ndarray,
                  work: np.ndarray) -> tuple[int, int]:
    """Damped Newton solve of the common-normal conditions (thesis 6.19-6.20, 5.19-5.20).

    Arguments are packed to keep the call cheap (numba checks the type of every argument):
    ``ints = [ip_i (8), ip_j (8), mode, max_iter, check]``,
    ``flts = [fp_i (5), fp_j (5), tol, max_step, quiet_i (4), quiet_j (4)]``. With ``check`` set,
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

    ``work`` (float64[>= 160]) is scratch space; on return ``work[0:16]`` holds ``P_i (0:3)``,
    ``P_j (3:6)``, ``n_j (6:9)`` (global unit normal of surface j), ``indentation (9)`` =
    ``(P_j - P_i) . n_j`` (positive when the surfaces overlap), ``|F| (10)``, ``n_i (11:14)``.

    Returns ``(status, iterations)``; status codes in :data:`STATUS`.
    """
    ip_i, ip_j = ints[0:8], ints[8:16]
    mode, max_iter = ints[16], ints[17]
    fp_i, fp_j = flts[0:5], flts[5:10]
    tol, max_step = flts[10], flts[11]
    if ints[18]:  # the thesis' update rule, fast path: is each guess in its window's quiet records?
        q = flts[12:20]
        if not (q[0] <= x[0] < q[2] and q[1] <= x[1] < q[3] and q[4] <= x[2] < q[6] and q[5] <= x[3] < q[7]):
            return NEEDS_UPDATE, 0
    out = work[0:16]
    ev = work[16:46]
    gi = work[46:76]
    gj = work[76:106]
    F = work[106:110]
    Fn = work[110:114]
    J = work[114:130].reshape(4, 4)
    dx = work[130:134]
    xn = work[134:138]
    mj = work[138:141]
    mu = work[141:147]
    mv = work[147:153]
    h0, h1, h2, h3 = fp_i[1], fp_i[3], fp_j[1], fp_j[3]
    status = NOT_CONVERGED
    it = 0
    f2 = _residual(buf_i, ip_i, fp_i, buf_j, ip_j, fp_j, R_i, c_i, R_j, c_j, x, mode, ev, gi, gj, F, mj)
    while it < max_iter:
        it += 1
        d0, d1, d2 = gj[0] - gi[0], gj[1] - gi[1], gj[2] - gi[2]
        # rows 0-1: m_j . T_ui, m_j . T_vi with m_j = T_uj x T_vj; columns u_i, v_i, u_j, v_j
        _cross(gj, 15, gj, 12, mu, 0)  # dm/du_j = T_uj,u x T_vj + T_uj x T_vj,u
        _cross(gj, 9, gj, 21, mu, 3)
        _cross(gj, 18, gj, 12, mv, 0)  # dm/dv_j = T_uj,v x T_vj + T_uj x T_vj,v
        _cross(gj, 9, gj, 24, mv, 3)
        for k in range(3):
            mu[k] += mu[3 + k]
            mv[k] += mv[3 + k]
        for r in range(2):
            o = 9 if r == 0 else 12  # T_ui or T_vi
            J[r, 0] = _dot(mj, 0, gi, 15 if r == 0 else 21)
            J[r, 1] = _dot(mj, 0, gi, 18 if r == 0 else 24)
            J[r, 2] = _dot(mu, 0, gi, o)
            J[r, 3] = _dot(mv, 0, gi, o)
        # rows 2-3: d . T_uj, d . T_vj with d = P_j - P_i
        for r in range(2, 4):
            o = 9 if r == 2 else 12
            J[r, 0] = -_dot(gi, 3, gj, o)
            J[r, 1] = -_dot(gi, 6, gj, o)
            du_o = 15 if r == 2 else 21
            dv_o = 18 if r == 2 else 24
            J[r, 2] = _dot(gj, 3, gj, o) + d0 * gj[du_o] + d1 * gj[du_o + 1] + d2 * gj[du_o + 2]
            J[r, 3] = _dot(gj, 6, gj, o) + d0 * gj[dv_o] + d1 * gj[dv_o + 1] + d2 * gj[dv_o + 2]
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
            fn2 = _residual(buf_i, ip_i, fp_i, buf_j, ip_j, fp_j, R_i, c_i, R_j, c_j, xn, mode, ev, gi, gj, Fn, mj)
            # Newton steps may raise the merit for a while before converging fast: only a step
            # that makes it a hundred times worse is shortened (the trust region bounds the rest)
            if fn2 <= 100.0 * f2 or lam * m < tol:
                break
            lam *= 0.5
        for r in range(4):
            x[r] = xn[r]
            F[r] = Fn[r]
        f2 = fn2
        wi = _inside(ip_i, fp_i, x[0], x[1])
        wj = _inside(ip_j, fp_j, x[2], x[3])
        if wi == 2:
            status = LEFT_TABLE_I
            break
        if wj == 2:
            status = LEFT_TABLE_J
            break
        if wi == 1:
            status = LEFT_WINDOW_I
            break
        if wj == 1:
            status = LEFT_WINDOW_J
            break
        if lam * m < tol or math.sqrt(fn2) < tol:
            status = CONVERGED
            break
    for r in range(3):
        out[r] = gi[r]
        out[3 + r] = gj[r]
        out[6 + r] = gj[27 + r]
        out[11 + r] = gi[27 + r]
    out[9] = (gj[0] - gi[0]) * gj[27] + (gj[1] - gi[1]) * gj[28] + (gj[2] - gi[2]) * gj[29]
    out[10] = math.sqrt(f2)
    if status == CONVERGED and _dot(gi, 27, gj, 27) > 0.0:
        status = NORMALS_ALIGNED  # a wrong-way normal: the surfaces cannot touch here
    return status, it
