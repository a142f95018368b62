"""Compiled (numba) interpolation inside a storage window.

Window layout: a window of ``wu x wv`` records keeps its points in a buffer ``buf`` of shape
``(Bu, Bv, 14)`` with ``Bu = wu*u_pts``, ``Bv = wv*v_pts``, addressed modulo its size: grid point
``(i, j)`` lives at ``buf[i % Bu, j % Bv]``. Re-centring a window then only writes the new
strips; nothing already held moves. The window's parameters ``ip``, ``fp`` and the evaluation
output ``ev`` are laid out as :mod:`simclient.geometry.layout` says.

Interpolation modes: ``BILINEAR`` (the thesis, eq. 6.22: position, normal and both tangents
interpolated bilinearly from the four corner points; the normal renormalised) and ``HERMITE``
(bicubic Hermite patch from the corner positions and the stored partials ``tu``, ``tv``, with
the twist at each node estimated by central differences of the stored tangents; tangents and
normal are the exact derivatives of the interpolated position, and the interpolant is C1).
"""

from __future__ import annotations

import math

import numpy as np

from simclient.geometry import layout as L
from simclient.geometry.kernels import helper, kernel

__all__ = ["BILINEAR", "HERMITE", "INSIDE", "OUTSIDE_WINDOW", "OUTSIDE_TABLE", "evaluate", "locate"]

BILINEAR, HERMITE = L.INTERPOLATIONS["bilinear"], L.INTERPOLATIONS["hermite"]

#: where a parameter point lies (:func:`locate`)
INSIDE, OUTSIDE_WINDOW, OUTSIDE_TABLE = 0, 1, 2


@helper
def _cell(x: float, lo: int, hi: int) -> int:
    """Cell index (its lower grid point) for grid coordinate x, kept inside [lo, hi - 2]."""
    i = int(math.floor(x))
    if i < lo:
        i = lo
    if i > hi - 2:
        i = hi - 2
    return i


@helper
def _twist(buf: np.ndarray, a: int, b: int, c: int, d: int, e: int, f: int, g: int, h: int, fu: float,
           fv: float) -> tuple[float, float, float]:
    """A node's twist ``s_uv du dv`` from buffer points: ``(tu[a, b] - tu[c, d]) fu + (tv[e, f] - tv[g, h]) fv``."""
    return ((buf[a, b, 8] - buf[c, d, 8]) * fu + (buf[e, f, 11] - buf[g, h, 11]) * fv,
            (buf[a, b, 9] - buf[c, d, 9]) * fu + (buf[e, f, 12] - buf[g, h, 12]) * fv,
            (buf[a, b, 10] - buf[c, d, 10]) * fu + (buf[e, f, 13] - buf[g, h, 13]) * fv)


@helper
def _corner(P: float, U: float, V: float, W: float, a: tuple, b: tuple) -> tuple:
    """One corner's contribution to a Hermite patch and its first and second derivatives, from its
    value ``P``, slopes ``U``, ``V`` and twist ``W`` and its basis along each parameter ``a``, ``b``
    (value h, slope g, h', g', h'', g'')."""
    fa, ga, dfa, dga, ddfa, ddga = a
    fb, gb, dfb, dgb, ddfb, ddgb = b
    return (fa * fb * P + ga * fb * U + fa * gb * V + ga * gb * W,
            dfa * fb * P + dga * fb * U + dfa * gb * V + dga * gb * W,
            fa * dfb * P + ga * dfb * U + fa * dgb * V + ga * dgb * W,
            ddfa * fb * P + ddga * fb * U + ddfa * gb * V + ddga * gb * W,
            dfa * dfb * P + dga * dfb * U + dfa * dgb * V + dga * dgb * W,
            fa * ddfb * P + ga * ddfb * U + fa * ddgb * V + ga * ddgb * W)


@helper
def _hermite_basis(a: float) -> tuple[float, float, float, float, float, float, float, float, float, float, float,
                                      float]:
    """The cubic Hermite basis at ``a`` in [0, 1] and its first and second derivatives: values
    ``h0, h1`` (corner 0, 1), slopes ``g0, g1``, then ``h', g'`` and ``h'', g''`` in the same order."""
    a2 = a * a
    return (2 * a2 * a - 3 * a2 + 1, -2 * a2 * a + 3 * a2, a2 * a - 2 * a2 + a, a2 * a - a2,
            6 * a2 - 6 * a, -6 * a2 + 6 * a, 3 * a2 - 4 * a + 1, 3 * a2 - 2 * a,
            12 * a - 6, -12 * a + 6, 6 * a - 4, 6 * a - 2)


# (longer than 80 lines: both interpolations' corner sums written out in one compiled function, the
# hottest of the kernels, where a helper per corner would pass the buffer and offsets again)
@kernel("void(f8[:, :, ::1], i8[::1], f8[::1], f8, f8, f8[::1], i8, i8, i8)")
def evaluate(buf: np.ndarray, ip: np.ndarray, fp: np.ndarray, u: float, v: float, ev: np.ndarray, io: int, fo: int,
             eo: int) -> None:
    """Interpolate the window at (u, v) into ``ev`` (see the module docstring), by the window's
    interpolation (``ip``'s ``IP_MODE``). The window's parameters start at offsets ``io`` of ``ip``
    and ``fo`` of ``fp``, the output at ``eo`` of ``ev`` (hot kernels pass their packed arrays whole:
    a view costs reference counting)."""
    mode = ip[io + L.IP_MODE]
    Bu, Bv = ip[io + L.IP_BU], ip[io + L.IP_BV]
    du, dv = fp[fo + L.FP_DU], fp[fo + L.FP_DV]
    x = (u - fp[fo + L.FP_U0]) / du
    y = (v - fp[fo + L.FP_V0]) / dv
    i_lo, i_hi, j_lo, j_hi = ip[io + L.IP_I_LO], ip[io + L.IP_I_HI], ip[io + L.IP_J_LO], ip[io + L.IP_J_HI]
    i = _cell(x, i_lo, i_hi)
    j = _cell(y, j_lo, j_hi)
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
            ev[eo + L.EV_S + k] = w00 * p00 + w10 * p10 + w01 * p01 + w11 * p11
            ev[eo + L.EV_SU + k] = ((1 - b) * (p10 - p00) + b * (p11 - p01)) / du
            ev[eo + L.EV_SV + k] = ((1 - a) * (p01 - p00) + a * (p11 - p10)) / dv
            for f, o in ((8, L.EV_TU), (11, L.EV_TV), (5, L.EV_N)):  # table fields tu, tv, n
                q00, q10, q01, q11 = buf[i0, j0, f + k], buf[i1, j0, f + k], buf[i0, j1, f + k], buf[i1, j1, f + k]
                ev[eo + o + k] = w00 * q00 + w10 * q10 + w01 * q01 + w11 * q11
                if o == L.EV_TU:
                    ev[eo + L.EV_TUU + k] = ((1 - b) * (q10 - q00) + b * (q11 - q01)) / du
                    ev[eo + L.EV_TUV + k] = ((1 - a) * (q01 - q00) + a * (q11 - q10)) / dv
                elif o == L.EV_TV:
                    ev[eo + L.EV_TVU + k] = ((1 - b) * (q10 - q00) + b * (q11 - q01)) / du
                    ev[eo + L.EV_TVV + k] = ((1 - a) * (q01 - q00) + a * (q11 - q10)) / dv
        nn = math.sqrt(ev[eo + L.EV_N] ** 2 + ev[eo + L.EV_N + 1] ** 2 + ev[eo + L.EV_N + 2] ** 2)
        for k in range(3):
            ev[eo + L.EV_N + k] /= nn
        return
    # Bicubic Hermite. Basis on [0, 1]: value h0 (corner 0), h1 (corner 1); slope g0, g1.
    ha0, ha1, ga0, ga1, dha0, dha1, dga0, dga1, ddha0, ddha1, ddga0, ddga1 = _hermite_basis(a)
    hb0, hb1, gb0, gb1, dhb0, dhb1, dgb0, dgb1, ddhb0, ddhb1, ddgb0, ddgb1 = _hermite_basis(b)
    A0, A1 = (ha0, ga0, dha0, dga0, ddha0, ddga0), (ha1, ga1, dha1, dga1, ddha1, ddga1)  # each corner's basis
    B0, B1 = (hb0, gb0, dhb0, dgb0, ddhb0, ddgb0), (hb1, gb1, dhb1, dgb1, ddhb1, ddgb1)
    # twists at the four corner nodes (all three components), shared with the neighbouring cells:
    # the mean of d(tu)/dv and d(tv)/du by central differences (one-sided at the window's edges),
    # from the 4 x 4 points around the cell (rows i-1 .. i+2 and columns j-1 .. j+2, kept inside
    # the window)
    im, i2 = max(i - 1, i_lo), min(i + 2, i_hi - 1)
    jm, j2 = max(j - 1, j_lo), min(j + 2, j_hi - 1)
    imb, i2b, jmb, j2b = im % Bu, i2 % Bu, jm % Bv, j2 % Bv
    fu0, fu1 = 0.5 * du / (j + 1 - jm), 0.5 * du / (j2 - j)  # d(tu)/dv per grid step, times du dv / 2
    fv0, fv1 = 0.5 * dv / (i + 1 - im), 0.5 * dv / (i2 - i)
    t00x, t00y, t00z = _twist(buf, i0, j1, i0, jmb, i1, j0, imb, j0, fu0, fv0)
    t10x, t10y, t10z = _twist(buf, i1, j1, i1, jmb, i2b, j0, i0, j0, fu0, fv1)
    t01x, t01y, t01z = _twist(buf, i0, j2b, i0, j0, i1, j1, imb, j1, fu1, fv0)
    t11x, t11y, t11z = _twist(buf, i1, j2b, i1, j0, i2b, j1, i0, j1, fu1, fv1)
    for k in range(3):
        if k == 0:
            W00, W10, W01, W11 = t00x, t10x, t01x, t11x
        elif k == 1:
            W00, W10, W01, W11 = t00y, t10y, t01y, t11y
        else:
            W00, W10, W01, W11 = t00z, t10z, t01z, t11z
        # S(a, b) = sum over corners of [h(a) h(b) P + g(a) h(b) U + h(a) g(b) V + g(a) g(b) W],
        # slopes U, V and twists W per unit of a and b
        a00 = _corner(buf[i0, j0, 2 + k], buf[i0, j0, 8 + k] * du, buf[i0, j0, 11 + k] * dv, W00, A0, B0)
        a10 = _corner(buf[i1, j0, 2 + k], buf[i1, j0, 8 + k] * du, buf[i1, j0, 11 + k] * dv, W10, A1, B0)
        a01 = _corner(buf[i0, j1, 2 + k], buf[i0, j1, 8 + k] * du, buf[i0, j1, 11 + k] * dv, W01, A0, B1)
        a11 = _corner(buf[i1, j1, 2 + k], buf[i1, j1, 8 + k] * du, buf[i1, j1, 11 + k] * dv, W11, A1, B1)
        s_ = a00[0] + a10[0] + a01[0] + a11[0]
        sa = a00[1] + a10[1] + a01[1] + a11[1]
        sb = a00[2] + a10[2] + a01[2] + a11[2]
        saa = a00[3] + a10[3] + a01[3] + a11[3]
        sab = a00[4] + a10[4] + a01[4] + a11[4]
        sbb = a00[5] + a10[5] + a01[5] + a11[5]
        ev[eo + L.EV_S + k] = s_
        ev[eo + L.EV_SU + k] = sa / du
        ev[eo + L.EV_SV + k] = sb / dv
        ev[eo + L.EV_TU + k] = sa / du
        ev[eo + L.EV_TV + k] = sb / dv
        ev[eo + L.EV_TUU + k] = saa / (du * du)
        ev[eo + L.EV_TUV + k] = sab / (du * dv)
        ev[eo + L.EV_TVU + k] = sab / (du * dv)
        ev[eo + L.EV_TVV + k] = sbb / (dv * dv)
    su, sv = L.EV_SU, L.EV_SV
    nx = ev[eo + su + 1] * ev[eo + sv + 2] - ev[eo + su + 2] * ev[eo + sv + 1]
    ny = ev[eo + su + 2] * ev[eo + sv] - ev[eo + su] * ev[eo + sv + 2]
    nz = ev[eo + su] * ev[eo + sv + 1] - ev[eo + su + 1] * ev[eo + sv]
    nn = math.sqrt(nx * nx + ny * ny + nz * nz) * fp[fo + L.FP_NORMAL_SIGN]
    ev[eo + L.EV_N] = nx / nn
    ev[eo + L.EV_N + 1] = ny / nn
    ev[eo + L.EV_N + 2] = nz / nn


@kernel("i8(i8[::1], f8[::1], f8, f8, i8, i8)", inline=True)
def locate(ip: np.ndarray, fp: np.ndarray, u: float, v: float, io: int, fo: int) -> int:
    """Where (u, v) lies: ``INSIDE`` the window's points, ``OUTSIDE_WINDOW`` but inside the table,
    or ``OUTSIDE_TABLE`` (tolerance 1e-9 grid cells; a table periodic in v has no edge in v);
    offsets as in :func:`evaluate`."""
    x = (u - fp[fo + L.FP_U0]) / fp[fo + L.FP_DU]
    y = (v - fp[fo + L.FP_V0]) / fp[fo + L.FP_DV]
    eps = 1e-9
    if x < -eps or x > ip[io + L.IP_U_NPTS] - 1 + eps:
        return OUTSIDE_TABLE
    if ip[io + L.IP_PERIODIC_V] == 0 and (y < -eps or y > ip[io + L.IP_V_NPTS] - 1 + eps):
        return OUTSIDE_TABLE
    if (x < ip[io + L.IP_I_LO] - eps or x > ip[io + L.IP_I_HI] - 1 + eps or y < ip[io + L.IP_J_LO] - eps
            or y > ip[io + L.IP_J_HI] - 1 + eps):
        return OUTSIDE_WINDOW
    return INSIDE
