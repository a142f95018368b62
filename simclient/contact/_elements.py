"""Elastic-foundation elements on tabulated surfaces and their contact detection (Bei & Fregly 2004).

The fixed body carries a grid of contact *elements* sampled from its table (centre, unit normal,
area ``|tu x tv| du dv``, layer thickness); the moving body's table is read through storage windows.
For each element a ray is fired from its centre along its normal to the moving surface (a compiled
Newton solve for ``S(u, v) = O + t D``); the ray distance is corrected to the distance along the local
midsurface normal (the bisector of the element normal and the moving surface's normal), Bei &
Fregly's implicit midsurface: for a locally flat moving surface at angle ``alpha`` to the element,
``d = d_ray cos(alpha) / cos(alpha / 2)``. The result, an :class:`ElementContact` per compartment,
is geometry only: a layer law turns it into pressures (:mod:`simclient.contact._foundation`).

Active set (Bei & Fregly): when the relative pose changed less than ``copy_tol`` the previous
solution is copied; otherwise a breadth-first search evaluates the previously tracked elements and
spreads outward (8-neighbourhood) until it meets a ring of untracked elements, which also follows
contact areas that split. Two safeguards beyond the paper: the tracked set holds the elements
within ``margin`` of the moving surface (not only the penetrating ones), and every ``full_every``
solves a full search finds areas appearing away from the tracked ones; all elements are also
evaluated when nothing was tracked, or when the search from the previous set finds nothing.
``stats`` counts evaluations, copies, full searches and elements evaluated.

Units: SI (m, N, N m). Frames: element data live in the fixed surface frame; poses are those of
the surface frames, a table point ``s`` sitting at ``c + R s``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from simclient.contact._names import QUADRATURES
from simclient.contact._nearest import nearest
from simclient.contact._raycast import (NEAR, SUB_OFFSETS, SUB_POINTS, bilinear, penetrating, ray_cast, search,
                                        sub_depths, to_moving)
from simclient.errors import ContactError, ParameterError
from simclient.geometry import StorageWindow, record_of
from simclient.geometry import layout as L
from simclient.io import Source, read_field

__all__ = ["ElementGrid", "element_grid", "zoomed_grid", "ElementContact", "ElementDetector", "SUB_OFFSETS"]


@dataclass
class ElementGrid:
    """Contact elements on a fixed table, in its surface frame: ``shape`` (nu, nv) elements in grid
    order, their parameters ``uv`` (n, 2), ``centre`` (n, 3) m, unit ``normal`` (n, 3), ``area``
    (n,) m^2, ``thickness`` (n,) m, ``usable`` (n,) (inside the data footprint) and ``edges`` (n, 2, 3)
    m, the tangent vectors spanning each element along u and v (``su du``, ``sv dv``)."""

    name: str
    shape: tuple[int, int]
    uv: np.ndarray
    centre: np.ndarray
    normal: np.ndarray
    area: np.ndarray
    thickness: np.ndarray
    usable: np.ndarray
    edges: np.ndarray
    neighbours: np.ndarray = field(init=False, repr=False)
    #: the table, thickness and interpolation it was sampled with (:func:`element_grid`'s), which
    #: :meth:`FoundationContact.refine` samples again
    origin: tuple[Source, Any, str] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        nu, nv = self.shape
        idx = np.arange(nu * nv).reshape(nu, nv)
        pad = np.pad(idx, 1, constant_values=-1)
        self.neighbours = np.stack([pad[1 + a:1 + a + nu, 1 + b:1 + b + nv].ravel() for a in (-1, 0, 1)
                                    for b in (-1, 0, 1) if (a, b) != (0, 0)], axis=1)

    @property
    def n(self) -> int:
        return self.shape[0] * self.shape[1]


def element_grid(source: Source, name: str, u_range: tuple[float, float], v_range: tuple[float, float],
                 shape: tuple[int, int], thickness: float | str | Callable[[np.ndarray, np.ndarray], np.ndarray]
                 = "thickness", interpolation: str = "hermite") -> ElementGrid:
    """Elements at the centres of a ``shape`` grid of cells over ``u_range x v_range`` of the table
    (the table's parameter units). ``thickness``: metres, the name of the table's per-point field
    (default ``thickness``), or ``f(centre, normal) -> h``. Elements where the table's
    ``data_distance`` exceeds its fit's footprint radius are not usable, nor those without a layer
    (thickness <= 0: a natural layer's rim; more than a quarter of them is an error)."""
    h = source.header
    nu, nv = shape
    if not (nu >= 1 and nv >= 1):
        raise ParameterError(f"{source.name}: an element grid needs at least 1 x 1 elements, got {nu} x {nv}")
    du, dv = (u_range[1] - u_range[0]) / nu, (v_range[1] - v_range[0]) / nv
    u = u_range[0] + du * (np.arange(nu) + 0.5)
    v = v_range[0] + dv * (np.arange(nv) + 0.5)
    # (a centre beyond the table failed later, in the window, naming neither the grid nor the domain)
    tol = 1e-9 * max(abs(h.u1 - h.u0), abs(h.v1 - h.v0))
    inside_v = np.isfinite(v).all() if h.periodic_v else h.v0 - tol <= v.min() and v.max() <= h.v1 + tol
    if not (h.u0 - tol <= u.min() and u.max() <= h.u1 + tol and inside_v):
        raise ParameterError(f"{source.name}: the element grid {name!r} has its centres over u in [{u.min():.6g}, "
                             f"{u.max():.6g}], v in [{v.min():.6g}, {v.max():.6g}], beyond the table's parameter "
                             f"domain [{h.u0:.6g}, {h.u1:.6g}] x [{h.v0:.6g}, {h.v1:.6g}]")
    ri0, rj0 = record_of(h, u[0], v[0])
    ri1, rj1 = record_of(h, u[-1], v[-1])
    extent = (min(ri1 - ri0 + 3, h.n_rec_u), min(rj1 - rj0 + 3, h.n_rec_v))
    win = StorageWindow(source, extent=extent, interpolation=interpolation, centre=(u.mean(), v.mean()))
    U, V = np.meshgrid(u, v, indexing="ij")
    uv = np.column_stack([U.ravel(), V.ravel()])
    centre, normal = np.empty((len(uv), 3)), np.empty((len(uv), 3))
    edges = np.empty((len(uv), 2, 3))
    for k, (a, b) in enumerate(uv):
        s = win.sample(a, b)
        centre[k], normal[k] = s.point, s.normal
        edges[k] = s.su * du, s.sv * dv
    area = np.linalg.norm(np.cross(edges[:, 0], edges[:, 1]), axis=1)
    footprint = _footprint(source)
    usable = np.ones(len(uv), bool) if footprint is None else footprint[0](uv) <= footprint[1]
    if isinstance(thickness, str):
        hh = _field(source, thickness)(uv)
    elif callable(thickness):
        hh = np.asarray(thickness(centre, normal), float)
    else:
        hh = np.full(len(uv), float(thickness))
    if not np.isfinite(hh[usable]).all():
        raise ContactError(f"{source.name}: element thickness must be finite")
    # no layer (a natural layer's rim, thickness <= 0): no element there; all of them: bad input
    thin = usable & (hh <= 0)
    if thin.any() and thin.sum() > 0.25 * usable.sum():
        raise ContactError(f"{source.name}: element thickness must be positive ({thin.sum()} of "
                           f"{usable.sum()} usable elements have thickness <= 0, min {hh[usable].min():.3g} m)")
    usable &= ~thin
    return ElementGrid(name, (nu, nv), uv, centre, normal, area, hh, usable, edges,
                       origin=(source, thickness, interpolation))


def zoomed_grid(source: Source, grid: ElementGrid, active: np.ndarray, shape: tuple[int, int],
                thickness: float | str | Callable[[np.ndarray, np.ndarray], np.ndarray] = "thickness",
                pad: int = 1, interpolation: str = "hermite") -> ElementGrid:
    """A grid of ``shape`` elements over the part of ``grid`` in contact: the parameter box of the
    ``active`` elements' cells (a mask, e.g. a :class:`CompartmentResult`'s ``active``, or
    indices), ``pad`` of ``grid``'s elements wider on each side (within ``grid``'s box). A second
    pass there resolves the pressure with elements as many times smaller as the box is (Bei &
    Fregly's adaptive grids, in two levels: their peak pressures depend on the grid). ``source``,
    ``thickness`` and ``interpolation`` as for :func:`element_grid` (``grid``'s)."""
    nu, nv = grid.shape
    if nu < 2 or nv < 2:
        raise ParameterError(f"{grid.name}: zooming needs a grid of at least 2 x 2 elements, not {nu} x {nv}")
    touching = grid.uv[active]
    if not len(touching):
        raise ContactError(f"{grid.name}: no element in contact to zoom on")
    U, V = grid.uv[:, 0].reshape(nu, nv), grid.uv[:, 1].reshape(nu, nv)
    step = np.array([U[1, 0] - U[0, 0], V[0, 1] - V[0, 0]])
    first, last = grid.uv[0] - step / 2, grid.uv[-1] + step / 2  # (the grid's own box)
    lo = np.maximum(touching.min(axis=0) - (pad + 0.5) * step, first)
    hi = np.minimum(touching.max(axis=0) + (pad + 0.5) * step, last)
    return element_grid(source, grid.name, (lo[0], hi[0]), (lo[1], hi[1]), shape, thickness, interpolation)


def _footprint(source: Source) -> tuple[_GridField, float] | None:
    """For a fitted table with a ``data_distance`` field: that field and the fit's footprint radius
    (m); (u, v) lies within the data footprint where the distance is at most the radius (the surface
    beyond it is the fit's extrapolation). None for tables without one (every point counts)."""
    h = source.header
    radius = (h.source.get("fit") or {}).get("footprint_radius_m")
    if "data_distance" not in h.extras or radius is None:
        return None
    return _field(source, "data_distance"), float(radius)


def _constant(value: float, uv: np.ndarray) -> np.ndarray:
    return np.full(len(uv), value)


class _GridField:
    """Bilinear interpolation of a per-point field on the table's parameter grid at (u, v) rows
    (scipy's ``RegularGridInterpolator``, linear, compiled: the contact detection calls it at every
    evaluation, where scipy's per-call overhead outweighed the lookup)."""

    def __init__(self, u0: float, du: float, v0: float, dv: float, values: np.ndarray) -> None:
        self.u0, self.du, self.v0, self.dv = u0, du, v0, dv
        self.values = np.ascontiguousarray(values, dtype=float)

    def __call__(self, uv: np.ndarray) -> np.ndarray:
        return bilinear(self.values, self.u0, self.du, self.v0, self.dv, np.ascontiguousarray(uv, dtype=float))


def _field(source: Source, array: str) -> _GridField:
    """Bilinear interpolation of a table's extra per-point field (read whole) at (u, v) rows."""
    h = source.header
    return _GridField(h.u0, h.du, h.v0, h.dv, read_field(source, array))


@dataclass
class ElementContact:
    """The elements of one compartment in contact, for one pose (fixed surface frame): ``grid``,
    the indices ``active`` of the penetrating elements, ``depth`` (n,) m the interpenetration along
    the midsurface normal (0 where inactive), ``normal`` (len(active), 3) the unit midsurface normals
    of the active elements (the direction the moving body is pushed) and ``thickness`` (len(active),)
    m the layers' combined thickness there. With the ``quadratic`` quadrature, ``sub_depth``
    (len(active), SUB_POINTS) m: the interpenetration at each element's sub-points (<= 0: no
    contact there); an element is active when any of them penetrates."""

    grid: ElementGrid
    active: np.ndarray
    depth: np.ndarray
    normal: np.ndarray
    thickness: np.ndarray
    sub_depth: np.ndarray | None = None

    @property
    def mask(self) -> np.ndarray:
        """(n,) bool: True for the active elements."""
        m = np.zeros(self.grid.n, bool)
        m[self.active] = True
        return m


HIT, LEFT_WINDOW, MISSED = L.RAY_HIT, L.RAY_LEFT_WINDOW, L.RAY_MISSED


class _Compartment:
    """Per-compartment state: the moving window, the elements' ``rays`` and ``flags`` (laid out by
    :mod:`simclient.geometry.layout`; the attributes below are views of their columns) and the last
    solution."""

    def __init__(self, grid: ElementGrid, window: StorageWindow) -> None:
        self.grid = grid
        self.window = window
        n = grid.n
        self.rays = np.zeros((n, L.RAY_SIZE))
        self.flags = np.zeros((n, L.FLAG_SIZE), bool)
        self.flags[:, L.FLAG_USABLE] = grid.usable
        self.O, self.D = self.rays[:, L.RAY_O:L.RAY_O + 3], self.rays[:, L.RAY_D:L.RAY_D + 3]  # moving frame
        self.uv = self.rays[:, L.RAY_UV:L.RAY_UV + 2]  # each ray's start
        self.out = self.rays[:, L.RAY_T:L.RAY_STATUS + 1]  # its outcome: t, u, v, n (3), status
        self.warm = self.flags[:, L.FLAG_WARM]  # uv holds a hit from an earlier evaluation
        self.started = self.flags[:, L.FLAG_STARTED]  # uv holds a start on the moving surface (a hit or a coarse start)
        self.tracked = self.flags[:, L.FLAG_TRACKED]  # tracked set: penetrating or within the margin
        self.near, self.evaluated = self.flags[:, L.FLAG_NEAR], self.flags[:, L.FLAG_EVALUATED]  # this search's
        self.wave = np.zeros(n, np.int64)  # the compiled search's scratch
        self.since_full = 0
        self.points_version = -1
        self.points: np.ndarray | None = None  # the window's points (moving frame) and parameters, for coarse starts
        self.points_uv: np.ndarray | None = None
        self.last: ElementContact | None = None
        self.moving_h: Callable[[np.ndarray], np.ndarray] | None = None  # the moving layer's thickness at (u, v)
        # the element grid's shape and the moving table's data footprint (none: an empty field)
        self.field = np.zeros((0, 0))
        self.geometry = np.array([*grid.shape, 0.0, 1.0, 0.0, 1.0, math.inf])
        self.index, self.mid = np.zeros(n, np.int64), np.zeros((n, 3))  # the penetrating elements' scratch
        self.sub = np.zeros((n, SUB_POINTS))  # the quadratic quadrature's sub-point depths

    def footprint(self, field: _GridField, radius: float) -> None:
        """The moving table's data footprint: its ``data_distance`` field and the radius (m) within it."""
        self.field = field.values
        self.geometry[L.GRID_FOOT_U0:L.GRID_FOOT_RADIUS + 1] = (field.u0, field.du, field.v0, field.dv, radius)


class ElementDetector:
    """Which elements of grids on a fixed table touch a moving table, and how deep (geometry only;
    :class:`simclient.contact.FoundationContact` turns it into pressures and forces).

    Parameters
    ----------
    grids : element grids (compartments), from :func:`element_grid`.
    moving : the moving body's table (a source), or one per compartment (a mapping by grid name:
        e.g. one table per femoral condyle); one storage window of ``extent`` records per
        compartment, first centred at ``guesses[name]`` (moving-table parameters) or the table centre.
        Hits beyond a fitted moving table's data footprint (its ``data_distance`` field) are no contact.
    copy_tol : pose change (m, and rad times 1 m) below which the previous solution is copied.
    margin : the breadth-first search tracks and spreads through the elements within ``margin`` (m)
        of the moving surface, not only the penetrating ones, so areas about to touch are found.
    full_every : a full search every this many solves per compartment (0: never), which finds
        contact areas appearing away from the tracked ones.
    moving_thickness : a layer on the moving body too (two cartilage layers, Bei & Fregly's natural
        knee): metres, or the name of the moving table's per-point field (read whole, interpolated
        bilinearly at each ray's hit); the springs then have the combined thickness.
    compiled : run the search compiled where it can (every ray warm-started, no window move; the
        Python search otherwise, which is the reference: False runs it always).
    quadrature : ``"centre"`` (Bei & Fregly: an element is in contact, with its centre's
        interpenetration over its whole area, when its centre penetrates) or ``"quadratic"`` (the
        signed interpenetration, smooth across the contact's edge, interpolated quadratically over
        each element from its neighbours' and sampled at ``SUB_POINTS`` sub-points: the pressure is
        integrated over the part of the element in contact, so results depend far less on where
        the element centres fall on a contact a few elements wide). No extra rays either way.
    """

    def __init__(self, grids: list[ElementGrid], moving: Source | Mapping[str, Source], *,
                 extent: tuple[int, int] = (7, 7),
                 interpolation: str = "hermite", guesses: dict[str, tuple[float, float]] | None = None,
                 copy_tol: float = 1e-12, margin: float = 2e-4, full_every: int = 50, max_iter: int = 30,
                 tol: float = 1e-10, moving_thickness: float | str | None = None, compiled: bool = True,
                 quadrature: str = "centre") -> None:
        if quadrature not in QUADRATURES:
            raise ContactError(f"elastic foundation: unknown quadrature {quadrature!r}; choose {' or '.join(QUADRATURES)}")
        self.quadrature = quadrature
        guesses = guesses or {}
        tables = dict(moving) if isinstance(moving, Mapping) else {g.name: moving for g in grids}
        missing = [g.name for g in grids if g.name not in tables]
        if missing:
            raise ContactError(f"elastic foundation: no moving table for the compartment(s) {', '.join(missing)}")
        self.compartments = {g.name: _Compartment(g, StorageWindow(tables[g.name], extent=extent,
                                                                   interpolation=interpolation,
                                                                   centre=guesses.get(g.name)))
                             for g in grids}
        for g in grids:
            k = self.compartments[g.name]
            table = tables[g.name]
            # a second layer on the moving body (two cartilage layers: h = h_fixed + h_moving)
            if isinstance(moving_thickness, str):
                k.moving_h = _field(table, moving_thickness)
            elif moving_thickness is not None:
                k.moving_h = partial(_constant, float(moving_thickness))
            footprint = _footprint(table)
            if footprint is not None:
                k.footprint(*footprint)
        self.copy_tol, self.max_iter, self.tol = copy_tol, max_iter, tol
        self.compiled = compiled
        self.margin, self.full_every = margin, full_every
        self._pose: np.ndarray | None = None
        self.evaluations = self.copies = self.full_searches = self.searches = self.elements_evaluated = 0
        self.misses = self.python_searches = 0

    @property
    def stats(self) -> dict[str, Any]:
        """``evaluations`` (pose evaluations), ``copies`` (solutions copied), ``full_searches`` and
        ``searches`` (breadth-first, per compartment), ``elements_evaluated`` (ray casts),
        ``elements`` (usable elements), ``window_updates``, ``python_searches`` (searches that ran in
        Python: coarse starts or window moves, or ``compiled=False``), ``misses`` (rays whose last estimate
        penetrated but that stayed outside the window after re-centring: counted as out of contact;
        should be 0, else the window is too small for the contact area)."""
        return {"evaluations": self.evaluations, "copies": self.copies, "full_searches": self.full_searches,
                "searches": self.searches, "elements_evaluated": self.elements_evaluated, "misses": self.misses,
                "python_searches": self.python_searches,
                "elements": int(sum(c.grid.usable.sum() for c in self.compartments.values())),
                "window_updates": sum(c.window.updates for c in self.compartments.values())}

    def detect(self, R_fixed: np.ndarray, c_fixed: np.ndarray, R_moving: np.ndarray, c_moving: np.ndarray,
               full: bool = False) -> dict[str, ElementContact]:
        """Elements in contact for the surface frames' poses (global): per compartment, in the fixed
        surface frame. When the pose did not change the previous objects are returned (``copies``).
        ``full`` forces a full search (for checks)."""
        # relative pose of the moving surface frame in the fixed surface frame
        R = R_fixed.T @ R_moving
        c = R_fixed.T @ (c_moving - c_fixed)
        pose = np.concatenate([R.ravel(), c])
        if not np.isfinite(pose).all():
            raise ContactError(f"elastic foundation: non-finite pose of the moving body (R = {R.tolist()}, "
                               f"c = {c.tolist()})")
        self.evaluations += 1
        if (not full and self._pose is not None and np.abs(pose - self._pose).max() <= self.copy_tol
                and all(k.last is not None for k in self.compartments.values())):
            self.copies += 1
            return {name: k.last for name, k in self.compartments.items()}  # type: ignore[misc]
        self._pose = pose
        return {name: self._solve(k, R, c, full) for name, k in self.compartments.items()}

    # -- one compartment -------------------------------------------------------------------------
    def _solve(self, k: _Compartment, R: np.ndarray, c: np.ndarray, full: bool) -> ElementContact:
        g = k.grid
        to_moving(g.centre, g.normal, R, c, k.rays)
        k.since_full += 1
        full = full or not k.tracked.any() or (self.full_every > 0 and k.since_full >= self.full_every)
        if full:
            self.full_searches += 1
            k.since_full = 0
        else:
            self.searches += 1
        w = k.window
        status, casts, everything = 1, 0, False
        if self.compiled:
            settings = np.array([float(full), self.margin, self.max_iter, self.tol])
            status, casts, everything = search(w.buffer, w.ip, w.fp, k.rays, k.flags, g.neighbours, k.wave, settings)
        self.elements_evaluated += casts
        if status == 0:
            self.full_searches += everything and not full
            return self._finish(k, R)
        # the compiled search needs what only Python does here (coarse starts, window moves): again
        self.python_searches += 1
        evaluated, near = k.evaluated, k.near  # (penetrating or within `margin` of the moving surface)
        evaluated[:] = False
        near[:] = False
        wave = np.flatnonzero(g.usable if full else k.tracked)
        while len(wave):
            self._cast(k, wave)
            evaluated[wave] = True
            hit = wave[k.out[wave, 6] == HIT]
            hit_near = hit[k.out[hit, 0] < self.margin]
            near[hit_near] = True
            if full:
                break  # everything usable was evaluated
            nb_ = g.neighbours[hit_near].ravel()
            nb_ = np.unique(nb_[nb_ >= 0])
            wave = nb_[~evaluated[nb_] & g.usable[nb_]]
            if not len(wave) and not near.any():
                # the surfaces moved apart from every tracked element in one step: search everything
                self.full_searches += 1
                full = True
                wave = np.flatnonzero(g.usable & ~evaluated)
        return self._finish(k, R)

    def _finish(self, k: _Compartment, R: np.ndarray) -> ElementContact:
        """The search's result: the tracked set, and the contact of the penetrating elements."""
        k.tracked[:] = k.near
        g = k.grid
        depth = np.zeros(g.n)
        found = (k.rays, k.flags, np.ascontiguousarray(R), g.normal, k.field, k.geometry, k.index, depth, k.mid)
        sub = None
        if self.quadrature == "quadratic":
            m = sub_depths(*found, k.sub)
            sub = k.sub[:m].copy()
        else:
            m = penetrating(*found)
        a = k.index[:m].copy()
        h = g.thickness[a] if k.moving_h is None else g.thickness[a] + k.moving_h(k.out[a, 1:3])
        k.last = ElementContact(g, a, depth, k.mid[:m].copy(), h, sub)
        return k.last

    def _cast(self, k: _Compartment, idx: np.ndarray) -> None:
        """Ray casts for elements ``idx``. If rays leave the window within ``NEAR`` of the moving
        surface, the window is centred on the penetrating hits (or, with none, on those rays' exit
        points) and they are cast again; rays leaving farther away are out of contact. Rays still
        outside after that whose estimate penetrates are counted in ``misses`` (the window is
        then smaller than the contact area)."""
        w = k.window
        self.elements_evaluated += len(idx)
        for _ in range(3):
            warm = k.warm[idx]
            if not warm.all():
                k.uv[idx[~warm]] = self._coarse(k, k.O[idx[~warm]])
            ray_cast(w.buffer, w.ip, w.fp, k.rays, idx, self.max_iter, self.tol)
            k.started[idx] = True
            stale = idx[warm & (k.out[idx, 6] == MISSED)]
            if len(stale):  # missed from a stale last hit (see the compiled search): again from the nearest window point
                k.uv[stale] = self._coarse(k, k.O[stale])
                ray_cast(w.buffer, w.ip, w.fp, k.rays, stale, self.max_iter, self.tol)
                self.elements_evaluated += len(stale)
            st = k.out[idx, 6]
            k.warm[idx] = st == HIT
            k.uv[idx[st == HIT]] = k.out[idx[st == HIT], 1:3]
            left = idx[st == LEFT_WINDOW]
            near = left[k.out[left, 0] < NEAR]  # left close to (or inside) the moving surface
            if not len(near):
                return
            hits = idx[(st == HIT) & (k.out[idx, 0] < 0)]
            ref = k.out[hits, 1:3] if len(hits) else k.out[near, 1:3]
            h = w.header
            u, v = np.clip(ref.mean(axis=0), [h.u0, -np.inf if h.periodic_v else h.v0], [h.u1, np.inf if h.periodic_v else h.v1])
            # a penetrating ray outside the window moves it; others only for a shift of 2 records
            deep = (k.out[near, 0] < 0).any()
            if not w.centre_on(float(u), float(v), min_shift=1 if deep else 2):
                break
            idx = near
            k.warm[idx] = False
        self.misses += int((k.out[near, 0] < 0).sum())

    def _coarse(self, k: _Compartment, O: np.ndarray) -> np.ndarray:
        """Start parameters: the window point nearest each ray origin (``O``, moving frame)."""
        w = k.window
        if k.points_version != w.version:
            pts = w.points()[:-1, :-1]  # the last row/column starts a cell outside the window
            pts = pts[np.isfinite(pts[..., 2:5]).all(axis=-1)]
            k.points = np.ascontiguousarray(pts[:, 2:5])
            k.points_uv = np.ascontiguousarray(pts[:, 0:2])
            k.points_version = w.version
        assert k.points is not None and k.points_uv is not None
        found = np.empty(len(O), np.int64)
        nearest(k.points, np.ascontiguousarray(O, dtype=float), found)
        return k.points_uv[found]
