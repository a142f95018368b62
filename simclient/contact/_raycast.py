"""The elastic foundation's element kernels: ray casts, the active-set search, the penetrating
elements and the quadratic quadrature (see :mod:`simclient.contact._elements`, whose
:class:`ElementDetector` calls them).

A compartment's elements live in two arrays laid out by :mod:`simclient.geometry.layout`: ``rays``
(float64, ``RAY_*`` columns: each element's centre and normal in the moving frame, its ray's start
and outcome, its signed interpenetration and midsurface normal) and ``flags`` (bool, ``FLAG_*``
columns). Units: SI (m); frames as the columns say.
"""

from __future__ import annotations

import math

import numpy as np

from simclient.geometry import layout as L
from simclient.geometry._interpolation import INSIDE, OUTSIDE_WINDOW, evaluate, locate
from simclient.geometry.kernels import helper, kernel

__all__ = ["ray_cast", "search", "to_moving", "penetrating", "sub_depths", "bilinear", "SUB_SIDE", "SUB_POINTS",
           "SUB_OFFSETS", "NEAR"]

# int64 inside the compiled code (not literals: a variable takes several of them)
HIT, LEFT_WINDOW, MISSED = np.int64(L.RAY_HIT), np.int64(L.RAY_LEFT_WINDOW), np.int64(L.RAY_MISSED)
NEAR = 2e-3  # m: a ray that leaves the window closer than this to the moving surface is cast again
#: sub-points per element side of the ``quadratic`` quadrature, at the centres of equal sub-cells
SUB_SIDE = 4
SUB_POINTS = SUB_SIDE * SUB_SIDE
_SUB = (np.arange(SUB_SIDE) + 0.5) / SUB_SIDE - 0.5  # in element spacings from the centre
#: the sub-points' (u, v) offsets from their element's centre, in element spacings (SUB_POINTS, 2)
SUB_OFFSETS = np.stack(np.meshgrid(_SUB, _SUB, indexing="ij"), axis=-1).reshape(-1, 2)

_WINDOW = "f8[:, :, ::1], i8[::1], f8[::1]"  # a window's buffer, ip and fp


@kernel(f"void({_WINDOW}, f8[:, ::1], i8[::1], i8, f8)")
def ray_cast(buf: np.ndarray, ip: np.ndarray, fp: np.ndarray, rays: np.ndarray, idx: np.ndarray, max_iter: int,
             tol: float) -> None:
    """For elements ``idx``: solve ``S(u, v) = O + t D`` (moving frame) by Newton from the ray's
    start; write the outcome (``RAY_T``, ``RAY_HIT_UV``, ``RAY_HIT_N``, ``RAY_STATUS``)."""
    ev = np.empty(L.EV_SIZE)
    for k in idx:
        u, v = rays[k, L.RAY_UV], rays[k, L.RAY_UV + 1]
        status = MISSED
        t = 0.0
        O0, O1, O2 = rays[k, L.RAY_O], rays[k, L.RAY_O + 1], rays[k, L.RAY_O + 2]
        D0, D1, D2 = rays[k, L.RAY_D], rays[k, L.RAY_D + 1], rays[k, L.RAY_D + 2]
        for _ in range(max_iter):
            where = locate(ip, fp, u, v, 0, 0)
            if where != INSIDE:
                status = LEFT_WINDOW if where == OUTSIDE_WINDOW else MISSED
                break
            evaluate(buf, ip, fp, u, v, ev, 0, 0, 0)
            # F = S - O - t D; J = [S_u, S_v, -D]
            f0 = ev[L.EV_S] - O0 - t * D0
            f1 = ev[L.EV_S + 1] - O1 - t * D1
            f2 = ev[L.EV_S + 2] - O2 - t * D2
            if math.sqrt(f0 * f0 + f1 * f1 + f2 * f2) < tol:
                # on the ray within tol: this point is the hit (a further step would move it by
                # less than tol and cost one more evaluation)
                t = (ev[L.EV_S] - O0) * D0 + (ev[L.EV_S + 1] - O1) * D1 + (ev[L.EV_S + 2] - O2) * D2
                status = HIT
                break
            a0, a1, a2 = ev[L.EV_SU], ev[L.EV_SU + 1], ev[L.EV_SU + 2]
            b0, b1, b2 = ev[L.EV_SV], ev[L.EV_SV + 1], ev[L.EV_SV + 2]
            c0, c1, c2 = -D0, -D1, -D2
            det = a0 * (b1 * c2 - b2 * c1) - b0 * (a1 * c2 - a2 * c1) + c0 * (a1 * b2 - a2 * b1)
            if det == 0.0 or det != det:
                break
            # Cramer's rule for J x = -F
            x0 = -(f0 * (b1 * c2 - b2 * c1) - b0 * (f1 * c2 - f2 * c1) + c0 * (f1 * b2 - f2 * b1)) / det
            x1 = -(a0 * (f1 * c2 - f2 * c1) - f0 * (a1 * c2 - a2 * c1) + c0 * (a1 * f2 - a2 * f1)) / det
            x2 = -(a0 * (b1 * f2 - b2 * f1) - b0 * (a1 * f2 - a2 * f1) + f0 * (a1 * b2 - a2 * b1)) / det
            # at most 4 grid cells per step
            scale = max(abs(x0) / (4 * fp[L.FP_DU]), abs(x1) / (4 * fp[L.FP_DV]), 1.0)
            u += x0 / scale
            v += x1 / scale
            t += x2 / scale
        rays[k, L.RAY_T] = t
        rays[k, L.RAY_HIT_UV] = u
        rays[k, L.RAY_HIT_UV + 1] = v
        if status == HIT:
            for a in range(3):
                rays[k, L.RAY_HIT_N + a] = ev[L.EV_N + a]
        rays[k, L.RAY_STATUS] = status


@helper
def _warm_starts(rays: np.ndarray, flags: np.ndarray, neighbours: np.ndarray, wave: np.ndarray, m: int) -> bool:
    """The starts of a wave's rays: a ray without a hit last time starts from a neighbour's, else
    its own last start; False where one has neither (the Python search must find it one)."""
    for a in range(m):
        k = wave[a]
        if not flags[k, L.FLAG_WARM]:
            start = -1
            for b in range(neighbours.shape[1]):
                j = neighbours[k, b]
                if j >= 0 and flags[j, L.FLAG_WARM]:
                    start = j
                    break
            if start >= 0:
                rays[k, L.RAY_UV], rays[k, L.RAY_UV + 1] = rays[start, L.RAY_UV], rays[start, L.RAY_UV + 1]
            elif not flags[k, L.FLAG_STARTED]:
                return False
    return True


@helper
def _retry_stale(buf: np.ndarray, ip: np.ndarray, fp: np.ndarray, rays: np.ndarray, flags: np.ndarray,
                 neighbours: np.ndarray, wave: np.ndarray, m: int, max_iter: int, tol: float) -> int:
    """A ray that missed from its own last hit, cast once more from a neighbour's hit of this
    search: a hit from poses ago is a stale start, whose iterates can step off the moving surface's
    edge although the ray meets it (a full search once missed an element 37 um deep). Returns the
    casts."""
    retry = np.empty(m, np.int64)
    r = 0
    for a in range(m):
        k = wave[a]
        if flags[k, L.FLAG_WARM] and rays[k, L.RAY_STATUS] == MISSED:
            for b in range(neighbours.shape[1]):
                j = neighbours[k, b]
                if j >= 0 and flags[j, L.FLAG_EVALUATED] and rays[j, L.RAY_STATUS] == HIT:
                    rays[k, L.RAY_UV], rays[k, L.RAY_UV + 1] = rays[j, L.RAY_HIT_UV], rays[j, L.RAY_HIT_UV + 1]
                    retry[r] = k
                    r += 1
                    break
    if r > 0:
        ray_cast(buf, ip, fp, rays, retry[:r], max_iter, tol)
    return r


@helper
def _next_wave(flags: np.ndarray, neighbours: np.ndarray, wave: np.ndarray, m: int) -> int:
    """The next wave: the unevaluated usable neighbours of this wave's near hits, moved to the
    front of ``wave``; its size."""
    m2 = 0
    for a in range(m):
        k = wave[a]
        if flags[k, L.FLAG_NEAR]:
            for b in range(neighbours.shape[1]):
                j = neighbours[k, b]
                if j >= 0 and flags[j, L.FLAG_USABLE] and not flags[j, L.FLAG_EVALUATED] and not flags[j, L.FLAG_QUEUED]:
                    flags[j, L.FLAG_QUEUED] = True
                    wave[m + m2] = j
                    m2 += 1
    for a in range(m2):  # to the front (forwards: the source lies behind)
        wave[a] = wave[m + a]
    return m2


@kernel(f"Tuple((i8, i8, b1))({_WINDOW}, f8[:, ::1], b1[:, ::1], i8[:, ::1], i8[::1], f8[::1])")
def search(buf: np.ndarray, ip: np.ndarray, fp: np.ndarray, rays: np.ndarray, flags: np.ndarray,
           neighbours: np.ndarray, wave: np.ndarray, settings: np.ndarray) -> tuple[int, int, bool]:
    """The active-set search of :meth:`ElementDetector._solve`, compiled, for the usual case: every
    ray starts from its own last hit, a neighbour's, or its own last start (it has been cast from a
    coarse start before), and no ray leaves the window near the moving surface. ``settings``:
    ``SEARCH_*`` (a full search, the margin in m, Newton's iterations and tolerance). Returns
    ``(status, casts, searched all)``, status 0 when done (the ``near`` and ``evaluated`` flags set
    as the Python search sets them), 1 where that case does not hold (the Python search then runs:
    coarse starts from the window's points, window moves)."""
    full = settings[L.SEARCH_FULL] != 0.0
    margin, max_iter, tol = settings[L.SEARCH_MARGIN], int(settings[L.SEARCH_MAX_ITER]), settings[L.SEARCH_TOL]
    n = flags.shape[0]
    m = 0
    for k in range(n):
        flags[k, L.FLAG_NEAR] = flags[k, L.FLAG_EVALUATED] = flags[k, L.FLAG_QUEUED] = False
        if flags[k, L.FLAG_USABLE] if full else flags[k, L.FLAG_TRACKED]:
            wave[m] = k
            m += 1
    casts = 0
    everything = full
    while m > 0:
        if not _warm_starts(rays, flags, neighbours, wave, m):
            return 1, casts, everything
        ray_cast(buf, ip, fp, rays, wave[:m], max_iter, tol)
        casts += m
        for a in range(m):
            flags[wave[a], L.FLAG_STARTED] = flags[wave[a], L.FLAG_EVALUATED] = True
        casts += _retry_stale(buf, ip, fp, rays, flags, neighbours, wave, m, max_iter, tol)
        for a in range(m):
            k = wave[a]
            if rays[k, L.RAY_STATUS] == LEFT_WINDOW and rays[k, L.RAY_T] < NEAR:
                return 1, casts, everything
            hit = rays[k, L.RAY_STATUS] == HIT
            flags[k, L.FLAG_WARM] = hit
            if hit:
                rays[k, L.RAY_UV], rays[k, L.RAY_UV + 1] = rays[k, L.RAY_HIT_UV], rays[k, L.RAY_HIT_UV + 1]
                flags[k, L.FLAG_NEAR] = rays[k, L.RAY_T] < margin
        if everything:
            break
        m = _next_wave(flags, neighbours, wave, m)
        if m == 0 and not flags[:, L.FLAG_NEAR].any():
            # the surfaces moved apart from every tracked element in one step: search everything
            everything = True
            for k in range(n):
                if flags[k, L.FLAG_USABLE] and not flags[k, L.FLAG_EVALUATED]:
                    wave[m] = k
                    m += 1
    return 0, casts, everything


@kernel("void(f8[:, ::1], f8[:, ::1], f8[:, ::1], f8[::1], f8[:, ::1])")
def to_moving(centre: np.ndarray, normal: np.ndarray, R: np.ndarray, c: np.ndarray, rays: np.ndarray) -> None:
    """The element centres and normals in the moving frame into ``rays``: ``O = R^T (centre - c)``,
    ``D = R^T normal`` (``R``, ``c``: the moving frame in the fixed one)."""
    for k in range(centre.shape[0]):
        x0, x1, x2 = centre[k, 0] - c[0], centre[k, 1] - c[1], centre[k, 2] - c[2]
        for r in range(3):
            rays[k, L.RAY_O + r] = R[0, r] * x0 + R[1, r] * x1 + R[2, r] * x2
            rays[k, L.RAY_D + r] = R[0, r] * normal[k, 0] + R[1, r] * normal[k, 1] + R[2, r] * normal[k, 2]


@helper(inline=True)
def _midsurface(rays: np.ndarray, k: int, R: np.ndarray, normal: np.ndarray, mid: np.ndarray, m: int) -> float:
    """Element ``k``'s ray distance turned into the signed interpenetration along the midsurface
    normal (m; > 0 penetrating), its unit midsurface normal written to ``mid[m]`` (fixed frame: the
    direction the moving body is pushed). For a locally flat moving surface at angle ``a`` to the
    element the ray distance ``t`` becomes ``-t cos(a) / cos(a / 2)``. NaN where the moving surface
    does not face the element (``cos a <= 0``): the ray met its back, through the moving body or
    the element's own (a condyle's far side), which is no contact whatever the distance."""
    h0, h1, h2 = rays[k, L.RAY_HIT_N], rays[k, L.RAY_HIT_N + 1], rays[k, L.RAY_HIT_N + 2]
    n0 = R[0, 0] * h0 + R[0, 1] * h1 + R[0, 2] * h2  # the moving normal, fixed frame
    n1 = R[1, 0] * h0 + R[1, 1] * h1 + R[1, 2] * h2
    n2 = R[2, 0] * h0 + R[2, 1] * h1 + R[2, 2] * h2
    cos_a = min(max(-(normal[k, 0] * n0 + normal[k, 1] * n1 + normal[k, 2] * n2), -1.0), 1.0)
    if cos_a <= 0.0:
        return math.nan
    b0, b1, b2 = normal[k, 0] - n0, normal[k, 1] - n1, normal[k, 2] - n2
    nb = max(math.sqrt(b0 * b0 + b1 * b1 + b2 * b2), 1e-300)
    mid[m, 0], mid[m, 1], mid[m, 2] = b0 / nb, b1 / nb, b2 / nb
    return -rays[k, L.RAY_T] * cos_a / math.sqrt(0.5 * (1 + cos_a))  # cos(a/2) = sqrt((1 + cos a) / 2)


@helper(inline=True)
def _bilinear_at(values: np.ndarray, u0: float, du: float, v0: float, dv: float, u: float, v: float) -> float:
    """Bilinear interpolation of ``values`` on the grid ``(u0 + i du, v0 + j dv)`` at (u, v)
    (linear extrapolation beyond the grid's last cells)."""
    nu, nv = values.shape
    x, y = (u - u0) / du, (v - v0) / dv
    i, j = min(max(int(math.floor(x)), 0), nu - 2), min(max(int(math.floor(y)), 0), nv - 2)
    fx, fy = x - i, y - j
    return ((1 - fx) * ((1 - fy) * values[i, j] + fy * values[i, j + 1])
            + fx * ((1 - fy) * values[i + 1, j] + fy * values[i + 1, j + 1]))


@kernel("f8[::1](f8[:, ::1], f8, f8, f8, f8, f8[:, ::1])")
def bilinear(values: np.ndarray, u0: float, du: float, v0: float, dv: float, uv: np.ndarray) -> np.ndarray:
    """:func:`_bilinear_at` at (u, v) rows."""
    out = np.empty(uv.shape[0])
    for k in range(uv.shape[0]):
        out[k] = _bilinear_at(values, u0, du, v0, dv, uv[k, 0], uv[k, 1])
    return out


@helper(inline=True)
def _on_body(rays: np.ndarray, flags: np.ndarray, k: int, field: np.ndarray, grid: np.ndarray) -> bool:
    """Element ``k`` was tracked and evaluated, its ray hit the moving surface and, where the moving
    table has a data footprint (``field`` its ``data_distance`` on the footprint grid of ``grid``,
    non-empty), within the footprint's radius of the data (a hit beyond it is on the fit's
    extrapolation)."""
    if not (flags[k, L.FLAG_NEAR] and flags[k, L.FLAG_EVALUATED] and rays[k, L.RAY_STATUS] == HIT):
        return False
    if field.size == 0:
        return True
    return _bilinear_at(field, grid[L.GRID_FOOT_U0], grid[L.GRID_FOOT_DU], grid[L.GRID_FOOT_V0],
                        grid[L.GRID_FOOT_DV], rays[k, L.RAY_HIT_UV], rays[k, L.RAY_HIT_UV + 1]) <= grid[L.GRID_FOOT_RADIUS]


_FOUND = "f8[:, ::1], b1[:, ::1], f8[:, ::1], f8[:, ::1], f8[:, ::1], f8[::1], i8[::1], f8[::1], f8[:, ::1]"


@kernel(f"i8({_FOUND})")
def penetrating(rays: np.ndarray, flags: np.ndarray, R: np.ndarray, normal: np.ndarray, field: np.ndarray,
                grid: np.ndarray, index: np.ndarray, depth: np.ndarray, mid: np.ndarray) -> int:
    """The penetrating elements of a search (Bei & Fregly's centre rule): on the body
    (:func:`_on_body`), hit at a negative ray distance by a moving surface that faces them. Writes
    their indices to ``index[:m]``, the interpenetration along the midsurface normal to ``depth``
    (m) and the unit midsurface normals to ``mid[:m]`` (:func:`_midsurface`); returns m."""
    m = 0
    for k in range(flags.shape[0]):
        if rays[k, L.RAY_T] < 0 and _on_body(rays, flags, k, field, grid):
            d = _midsurface(rays, k, R, normal, mid, m)
            if d > 0:  # (NaN: the ray met the moving surface's back)
                depth[k] = d
                index[m] = k
                m += 1
    return m


@helper(inline=True)
def _known(rays: np.ndarray, nu: int, nv: int, i: int, j: int) -> float:
    """The signed depth of element (i, j), NaN outside the grid or where unknown."""
    if i < 0 or j < 0 or i >= nu or j >= nv:
        return math.nan
    return rays[i * nv + j, L.RAY_SIGNED]


@helper(inline=True)
def _slopes(lo: float, c: float, hi: float) -> tuple[float, float]:
    """First and second differences through (-1, lo), (0, c), (1, hi), one-sided or none where a
    neighbour is unknown (NaN)."""
    if lo == lo and hi == hi:
        return 0.5 * (hi - lo), 0.5 * (hi - 2 * c + lo)
    if hi == hi:
        return hi - c, 0.0
    if lo == lo:
        return c - lo, 0.0
    return 0.0, 0.0


@helper
def _sub_points(rays: np.ndarray, nu: int, nv: int, k: int, sub: np.ndarray, m: int) -> bool:
    """Element ``k``'s quadratic sampled at its sub-points into ``sub[m]`` (see :func:`sub_depths`);
    whether any penetrates (False, unsampled, where none can)."""
    c = rays[k, L.RAY_SIGNED]
    i, j = k // nv, k % nv
    top = c
    whole = True  # all eight neighbours known: the quadratic interpolates, else it extrapolates
    for a in range(-1, 2):
        for b in range(-1, 2):
            x = _known(rays, nu, nv, i + a, j + b)
            if x != x:
                whole = False
            elif x > top:
                top = x
    if not whole and top <= 0:
        return False  # capped at the data, and nothing around penetrates: no sub-point can
    gu, cu = _slopes(_known(rays, nu, nv, i - 1, j), c, _known(rays, nu, nv, i + 1, j))
    gv, cv = _slopes(_known(rays, nu, nv, i, j - 1), c, _known(rays, nu, nv, i, j + 1))
    pp, pm = _known(rays, nu, nv, i + 1, j + 1), _known(rays, nu, nv, i + 1, j - 1)
    mp, mm = _known(rays, nu, nv, i - 1, j + 1), _known(rays, nu, nv, i - 1, j - 1)
    cross = 0.25 * (pp - pm - mp + mm) if (pp == pp and pm == pm and mp == mp and mm == mm) else 0.0
    if whole:
        # a peak between the centres is the surfaces' own: the quadratic is not capped, and can
        # penetrate where none of the nine centres does (a ridge across the element); skipped only
        # where its bound over the sub-points says it cannot (skipping wherever no centre
        # penetrated made the force jump, by 0.5 N in the artificial knee's swing, as a ridge's
        # element's centre crossed zero, and Newton stalled there)
        e = _SUB[SUB_SIDE - 1]  # the sub-points' largest offset, element spacings
        if c + e * (abs(gu) + abs(gv)) + e * e * (max(cu, 0.0) + max(cv, 0.0) + abs(cross)) <= 0:
            return False
        top = math.inf
    touching = False
    for a in range(SUB_SIDE):
        x = _SUB[a]
        for b in range(SUB_SIDE):
            y = _SUB[b]
            d = min(c + gu * x + gv * y + cu * x * x + cv * y * y + cross * x * y, top)
            sub[m, a * SUB_SIDE + b] = d
            touching = touching or d > 0
    return touching


@kernel(f"i8({_FOUND}, f8[:, ::1])")
def sub_depths(rays: np.ndarray, flags: np.ndarray, R: np.ndarray, normal: np.ndarray, field: np.ndarray,
               grid: np.ndarray, index: np.ndarray, depth: np.ndarray, mid: np.ndarray, sub: np.ndarray) -> int:
    """The ``quadratic`` quadrature: the signed interpenetration (smooth across the contact's edge,
    unlike the pressure) of every element on the body (:func:`_on_body`) that the moving surface
    faces, to ``RAY_SIGNED`` (NaN elsewhere), is interpolated over each element by the quadratic
    through it and its eight neighbours (one-sided or constant along a direction where they are
    unknown, and then capped at the largest of them so that it never overshoots the data) and
    sampled at ``SUB_POINTS`` sub-points. The elements with any penetrating sub-point: indices to
    ``index[:m]``, their centre's interpenetration (>= 0) to ``depth``, midsurface normals to
    ``mid[:m]``, sub-point interpenetrations (m) to ``sub[:m]``; returns m."""
    nu, nv = int(grid[L.GRID_NU]), int(grid[L.GRID_NV])
    mid_all = np.empty((1, 3))
    for k in range(nu * nv):
        rays[k, L.RAY_SIGNED] = math.nan
        if _on_body(rays, flags, k, field, grid):
            rays[k, L.RAY_SIGNED] = _midsurface(rays, k, R, normal, mid_all, 0)
            for a in range(3):
                rays[k, L.RAY_MID + a] = mid_all[0, a]
    m = 0
    for k in range(nu * nv):
        if rays[k, L.RAY_SIGNED] != rays[k, L.RAY_SIGNED]:
            continue
        if _sub_points(rays, nu, nv, k, sub, m):
            depth[k] = max(rays[k, L.RAY_SIGNED], 0.0)
            for a in range(3):
                mid[m, a] = rays[k, L.RAY_MID + a]
            index[m] = k
            m += 1
    return m
