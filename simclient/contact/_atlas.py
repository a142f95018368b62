"""Point contact on a surface given by an atlas: several tables (charts) of it, the contact point
always on one where its parametrization is regular.

A sphere's table has poles, where its tangent ``T_v`` vanishes and the common-normal solve cannot
go (:attr:`ContactStatus.SINGULAR_POINT_I`); a ball that rolls about any axis but its table's pole
axis brings its contact point to a pole within a quarter turn. Two tables of the same sphere with
their poles on different axes cover it: wherever one chart is near a pole, the other is near its
equator. :class:`AtlasPair` is a :class:`ContactPair` whose surface i has such charts. After each
detection that may move windows (not a probe), if the contact point has come within ``margin`` of
its chart's edge (the poles and a seam lie on a chart's parameter boundary), the pair moves to the
chart where the point lies farthest inside, finds the point's parameters there (:class:`ChartIndex`:
the nearest of a coarse sample of the chart's points, refined by the solve) and detects again.

The charts must describe one surface in one surface frame (the same placement on the body), as
tables built from one definition with a different ``pole_axis`` do; they differ only in their
parametrization, so a contact is the same on each to the tables' interpolation error.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from simclient.contact._point import Contact, ContactPair
from simclient.errors import ParameterError
from simclient.geometry import StorageWindow
from simclient.geometry import layout as L
from surfacestore.format import RecordBlock

__all__ = ["AtlasPair", "ChartIndex", "chart_margin"]

#: points per parameter direction of a :class:`ChartIndex` (at most; every k-th point of the grid)
INDEX_SIDE = 64


def _band(window: StorageWindow, margin: float) -> tuple[float, float, float, float]:
    """``(u_lo, u_hi, v_lo, v_hi)``: the parameters at least ``margin`` inside the chart
    (:func:`chart_margin`), v unbounded where the table is periodic in v."""
    h = window.header
    du, dv = margin * (h.u1 - h.u0), margin * (h.v1 - h.v0)
    return (h.u0 + du, h.u1 - du, -math.inf, math.inf) if h.periodic_v else (h.u0 + du, h.u1 - du, h.v0 + dv, h.v1 - dv)


def chart_margin(window: StorageWindow, u: float, v: float) -> float:
    """How far inside its chart the parameter point ``(u, v)`` lies: the distance to the nearest
    edge of the table's parameter ranges, as a fraction of that range (0 at an edge, 0.5 at the
    centre); v counts only where the table is not periodic in v."""
    h = window.header
    margin = min(u - h.u0, h.u1 - u) / (h.u1 - h.u0) if h.u1 > h.u0 else 0.5
    if not h.periodic_v and h.v1 > h.v0:
        margin = min(margin, min(v - h.v0, h.v1 - v) / (h.v1 - h.v0))
    return float(margin)


class ChartIndex:
    """Where a point (m, the surface frame) lies on a chart: the parameters of the nearest of every
    k-th point of the table (at most :data:`INDEX_SIDE` per direction), read once, record row by
    record row. A start for the common-normal solve, within k/2 grid cells of the point."""

    def __init__(self, window: StorageWindow) -> None:
        h, source = window.header, window.source
        step_u = max(1, h.u_npts // INDEX_SIDE)
        step_v = max(1, h.v_npts // INDEX_SIDE)
        rows = []
        for ri in range(h.n_rec_u):
            block = source.read_block(ri, ri + 1, 0, h.n_rec_v)
            rows.append(block[::step_u, ::step_v].reshape(-1, block.shape[-1]))
        samples = np.concatenate(rows)
        self.samples = np.ascontiguousarray(samples[np.isfinite(samples[:, 2:8]).all(axis=1)])  # (n, 14)
        self.params, self.points = self.samples[:, 0:2], self.samples[:, 2:5]

    def locate(self, point: np.ndarray) -> tuple[float, float]:
        """``(u, v)`` of the indexed point nearest ``point`` (surface frame, m)."""
        d = self.points - point
        k = int(np.argmin(np.einsum("ij,ij->i", d, d)))
        return float(self.params[k, 0]), float(self.params[k, 1])


class AtlasPair(ContactPair):
    """A :class:`ContactPair` whose surface i is an atlas: ``charts_i``, tables of one surface in one
    surface frame (see the module's description), each read by its own window; ``window_j`` as for
    :class:`ContactPair`, and its other options. ``margin`` (a fraction of a chart's parameter
    ranges, in (0, 0.5)): how near its chart's edge a contact point may come before the pair moves
    to another chart. ``chart`` is the index of the chart in use; ``switches`` counts the moves;
    ``closest_margin`` is the smallest margin a detection found the contact point at (0.5 until one
    finds it within ``margin``), a measure of how near a chart's edge the solves went.
    Messages name the table in use; :meth:`detect_many` solves pose by pose (each may move to
    another chart). A cold start (no warm start) searches each chart's :class:`ChartIndex`, which
    reads its table once, whole: atlases are for closed bodies (a ball), not for terrains. The
    charts' windows must use one interpolation, and their bounding spheres must agree (one
    surface, one frame)."""

    batched = False

    def __init__(self, charts_i: Sequence[StorageWindow], window_j: StorageWindow, *, margin: float = 0.2,
                 **options: object) -> None:
        charts = list(charts_i)
        names = ", ".join(w.name for w in charts)
        if len(charts) < 2:
            raise ParameterError(f"atlas ({names}): give at least two charts (one table is a ContactPair)")
        if not 0.0 < margin < 0.5:
            raise ParameterError(f"atlas ({names}): margin {margin!r} must lie in (0, 0.5), a fraction of the "
                                 "charts' parameter ranges")
        if len({w.mode for w in charts}) > 1:
            raise ParameterError(f"atlas ({names}): the charts must use one interpolation, not "
                                 f"{sorted({w.interpolation for w in charts})}")
        reach = [w.header.rmax for w in charts]
        if None not in reach and max(reach) - min(reach) > 1e-6 * max(reach):  # type: ignore[type-var, operator]
            raise ParameterError(f"atlas ({names}): the charts reach {reach} m from their frame's origin: not one "
                                 "surface in one frame")
        super().__init__(charts[0], window_j, **options)  # type: ignore[arg-type]
        self.charts, self.margin, self.chart, self.switches = charts, float(margin), 0, 0
        self.closest_margin = 0.5
        self._inside = _band(charts[0], self.margin)
        self._indexes: list[ChartIndex | None] = [None] * len(charts)
        self._placed_chart = 0

    def _use(self, chart: int) -> None:
        """Read surface i by chart ``chart`` from now on (its window's placement as it is)."""
        w = self.charts[chart]
        self.chart, self.wi = chart, w
        self._inside = _band(w, self.margin)
        self.refresh()  # (its parameters, placement and buffer into the kernels' arrays)
        self.label = self._label()

    def _index(self, chart: int) -> ChartIndex:
        index = self._indexes[chart]
        if index is None:
            index = self._indexes[chart] = ChartIndex(self.charts[chart])
        return index

    def detect(self, R_i: np.ndarray, c_i: np.ndarray, R_j: np.ndarray, c_j: np.ndarray,
               strict: bool = False, update_windows: bool = True) -> Contact:
        """:meth:`ContactPair.detect` on the chart in use; where the contact point has come within
        ``margin`` of that chart's edge (and windows may move: not for a probe), on the chart
        where it lies farthest inside."""
        if math.isnan(self.work[L.PAIR_X]):
            self._cold_start(R_i, c_i, R_j, c_j)
        k = super().detect(R_i, c_i, R_j, c_j, strict, update_windows)
        if not update_windows or not k.converged or self.inside(k._d[L.CONTACT_X:L.CONTACT_X + 2]):
            return k
        return self._switch(k, R_i, c_i, R_j, c_j)

    def inside(self, x: np.ndarray) -> bool:
        """Whether parameters ``x = (u_i, v_i, ...)`` of the chart in use lie at least ``margin``
        inside it (else the next detection that may move windows moves to another chart)."""
        u_lo, u_hi, v_lo, v_hi = self._inside
        return bool(u_lo <= x[0] <= u_hi and v_lo <= x[1] <= v_hi)

    def _cold_start(self, R_i: np.ndarray, c_i: np.ndarray, R_j: np.ndarray, c_j: np.ndarray) -> None:
        """A cold start (no warm start to go on from): the deepest of each chart's indexed points
        against window j's points (:meth:`ContactPair.coarse_guess` over the whole surface), and
        the chart where it lies farthest inside to start on."""
        best = max(((chart, *self._deepest(self._index(chart).samples, R_i, c_i, R_j, c_j))
                    for chart in range(len(self.charts))),
                   key=lambda found: chart_margin(self.charts[found[0]], found[1][0], found[1][1]))
        self._use(best[0])
        self.x = best[1]

    def _switch(self, k: Contact, R_i: np.ndarray, c_i: np.ndarray, R_j: np.ndarray, c_j: np.ndarray) -> Contact:
        """Move to the chart where ``k``'s point lies farthest inside and detect there; stay where
        that one does not converge."""
        x = k._d[L.CONTACT_X:L.CONTACT_X + 4]
        point = R_i.T @ (k.point_i - c_i)  # (the surface frame the charts share)
        best, best_margin, best_uv = self.chart, chart_margin(self.wi, x[0], x[1]), (x[0], x[1])
        self.closest_margin = min(self.closest_margin, best_margin)
        for chart in range(len(self.charts)):
            if chart != self.chart:
                uv = self._index(chart).locate(point)
                margin = chart_margin(self.charts[chart], *uv)
                if margin > best_margin:
                    best, best_margin, best_uv = chart, margin, uv
        if best == self.chart:
            return k
        old, old_x = self.chart, x.copy()
        self._use(best)
        self.x = np.array([best_uv[0], best_uv[1], x[2], x[3]])
        moved = ContactPair.detect(self, R_i, c_i, R_j, c_j, False, True)
        if moved.converged:
            self.switches += 1
            self.forget()  # (follow()'s rates were in the old chart's parameters)
            return moved
        self._use(old)
        self.x = old_x
        return k

    def _remember(self, k: Contact, R_i: np.ndarray, c_i: np.ndarray, R_j: np.ndarray, c_j: np.ndarray) -> None:
        super()._remember(k, R_i, c_i, R_j, c_j)
        self._placed_chart = self.chart

    def _continue(self, R_i: np.ndarray, c_i: np.ndarray, R_j: np.ndarray, c_j: np.ndarray) -> Contact:
        # (the last converged parameters are in the chart they were found on; the continuation's
        # detections then move from chart to chart as the point goes)
        self._use(self._placed_chart)
        return super()._continue(R_i, c_i, R_j, c_j)

    def checkpoint(self) -> tuple[int, tuple[np.ndarray | None, RecordBlock | None, RecordBlock | None]]:  # type: ignore[override]
        """The chart in use and :meth:`ContactPair.checkpoint` on it."""
        return self.chart, super().checkpoint()

    def restore(self, state: tuple[int, tuple[np.ndarray | None, RecordBlock | None, RecordBlock | None]]  # type: ignore[override]
                ) -> None:
        chart, inner = state
        if chart != self.chart:
            self._use(chart)
            self.forget()
        super().restore(inner)
