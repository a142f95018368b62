"""Storage windows: the records around the contact point, re-centred by the thesis' rule.

A :class:`StorageWindow` holds a ``wu x wv`` block of records of one table (DESIGN.md, thesis
section 6.3). ``update(u, v)`` applies the seven-step rule:

1. locate the contact record, the record holding the point (u, v);
2. if it is outside the window, go to 4;
3. if it is not a border record of the window, go to 7;
4. place a new window with the contact record at its centre (shifted inward at the table's borders);
5. note the new window's records;
6. read the records it does not already hold: one block request per new strip;
7. proceed.

A border record at the table's edge, where re-centring would give the same window, needs no update.
Points live in a buffer addressed modulo its size (see :mod:`simclient.kernels`), so an update writes
only the new strips and moves nothing.

``sample(u, v)`` interpolates position, unit normal and both tangents (surface frame, metres) with
the window's interpolation (``"hermite"``, the default, or the thesis' ``"bilinear"``).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from simclient import kernels
from simclient.errors import SourceError, WindowError
from simclient.sources import Source
from surfacestore.format import NFIELDS, RecordBlock, window_block

__all__ = ["StorageWindow", "SurfaceSample", "INTERPOLATIONS"]

INTERPOLATIONS = {"bilinear": kernels.BILINEAR, "hermite": kernels.HERMITE}


@dataclass(frozen=True)
class SurfaceSample:
    """An interpolated surface point (surface frame): ``point`` (m), unit ``normal``, ``tu``, ``tv``
    (m per unit parameter) and the derivatives of the interpolated position ``su``, ``sv``."""

    point: np.ndarray
    normal: np.ndarray
    tu: np.ndarray
    tv: np.ndarray
    su: np.ndarray
    sv: np.ndarray


class StorageWindow:
    """A window of ``extent = (wu, wv)`` records over ``source``.

    Parameters
    ----------
    source : a :class:`simclient.sources.Source`.
    extent : records in u and v; clamped (with a warning) to the table's record grid.
    interpolation : ``"hermite"`` (default) or ``"bilinear"``.
    centre : (u, v) to centre the first window on; default the table's centre.
    """

    def __init__(self, source: Source, extent: tuple[int, int] = (3, 3), interpolation: str = "hermite",
                 centre: tuple[float, float] | None = None) -> None:
        h = source.header
        wu, wv = int(extent[0]), int(extent[1])
        if wu < 1 or wv < 1:
            raise WindowError(f"{source.name}: window extent {extent} must be at least 1 x 1")
        if wu > h.n_rec_u or wv > h.n_rec_v:
            warnings.warn(f"{source.name}: window extent {wu} x {wv} exceeds the table's {h.n_rec_u} x "
                          f"{h.n_rec_v} records; clamped", stacklevel=2)
            wu, wv = min(wu, h.n_rec_u), min(wv, h.n_rec_v)
        if interpolation not in INTERPOLATIONS:
            raise WindowError(f"unknown interpolation {interpolation!r}; choose one of {sorted(INTERPOLATIONS)}")
        self.source = source
        self.name = source.name
        self.header = h
        self.extent = (wu, wv)
        self.interpolation = interpolation
        self.mode = INTERPOLATIONS[interpolation]
        self.buffer = np.full((wu * h.u_pts, wv * h.v_pts, NFIELDS), np.nan)
        # kernel parameters (see simclient.kernels)
        self.ip = np.array([self.buffer.shape[0], self.buffer.shape[1], 0, 0, 0, 0, h.u_npts, h.v_npts],
                           dtype=np.int64)
        self.fp = np.array([h.u0, h.du, h.v0, h.dv, float(h.normal_sign)])
        self.block: RecordBlock | None = None
        self.version = 0  # incremented at every placement
        self.updates = 0  # re-centrings after the first load
        self.records_fetched = 0
        self.bytes_fetched = 0
        self.requests = 0
        self.wait_s = 0.0
        self.moves: list[tuple[float, RecordBlock]] = []  # (wall time, block) of every placement
        u, v = centre if centre is not None else ((h.u0 + h.u1) / 2, (h.v0 + h.v1) / 2)
        self._place(window_block(h, *self.record_of(u, v), wu, wv))

    # -- the update rule -----------------------------------------------------------------------

    def record_of(self, u: float, v: float) -> tuple[int, int]:
        """The record holding parameter point (u, v) (its cell's lower corner)."""
        h = self.header
        x, y = (u - h.u0) / h.du, (v - h.v0) / h.dv
        tol = 1e-9
        if not (-tol <= x <= h.u_npts - 1 + tol and -tol <= y <= h.v_npts - 1 + tol) or x != x or y != y:
            raise WindowError(f"{self.name}: (u, v) = ({u}, {v}) is outside the table's parameter domain "
                              f"[{h.u0}, {h.u1}] x [{h.v0}, {h.v1}]")
        i = min(max(int(np.floor(x)), 0), h.u_npts - 2)
        j = min(max(int(np.floor(y)), 0), h.v_npts - 2)
        return i // h.u_pts, j // h.v_pts

    def needs_update(self, u: float, v: float) -> bool:
        """Steps 1-3: True if the window must be re-centred for the contact point (u, v)."""
        ri, rj = self.record_of(u, v)
        b = self.block
        assert b is not None
        inside = b.ri0 <= ri < b.ri1 and b.rj0 <= rj < b.rj1
        border = ri in (b.ri0, b.ri1 - 1) or rj in (b.rj0, b.rj1 - 1)
        if inside and not border:
            return False
        return window_block(self.header, ri, rj, *self.extent) != b

    def update(self, u: float, v: float) -> bool:
        """Apply the update rule for the contact point (u, v); True when the window re-centred."""
        q = self._quiet
        if q[0] <= u < q[2] and q[1] <= v < q[3]:
            return False  # fast path: inside the records that need no update
        if not self.needs_update(u, v):
            return False
        self._place(window_block(self.header, *self.record_of(u, v), *self.extent))
        self.updates += 1
        return True

    def _place(self, new: RecordBlock) -> None:
        old = self.block
        strips = _new_strips(old, new)
        fetched = []
        for s in strips:  # fetch everything first: a failing source leaves the window unchanged
            t = time.perf_counter()
            try:
                data = self.source.read_block(s.ri0, s.ri1, s.rj0, s.rj1)
            except SourceError as exc:
                raise SourceError(f"{self.name}: window update to records [{new.ri0}, {new.ri1}) x "
                                  f"[{new.rj0}, {new.rj1}) failed fetching records [{s.ri0}, {s.ri1}) x "
                                  f"[{s.rj0}, {s.rj1}): {exc}") from exc
            finally:
                self.wait_s += time.perf_counter() - t
                self.requests += 1
            fetched.append((s, data))
        for s, data in fetched:
            self._store(s, data)
            self.records_fetched += s.n_records
            self.bytes_fetched += data.nbytes
        h = self.header
        i0, i1, j0, j1 = h.block_points(new)
        self.ip[2:6] = (i0, i1, j0, j1)
        self.block = new
        self.version += 1
        # Parameter box of the records where update() has nothing to do: the window's non-border
        # records, extended to the window's edge where that edge is the table's.
        lo_i = new.ri0 if new.ri0 == 0 else new.ri0 + 1
        hi_i = new.ri1 if new.ri1 == h.n_rec_u else new.ri1 - 1
        lo_j = new.rj0 if new.rj0 == 0 else new.rj0 + 1
        hi_j = new.rj1 if new.rj1 == h.n_rec_v else new.rj1 - 1
        self.quiet = self._quiet = (h.u0 + lo_i * h.u_pts * h.du, h.v0 + lo_j * h.v_pts * h.dv,
                       h.u0 + hi_i * h.u_pts * h.du if hi_i < h.n_rec_u else h.u1 + 1e-9 * h.du,
                       h.v0 + hi_j * h.v_pts * h.dv if hi_j < h.n_rec_v else h.v1 + 1e-9 * h.dv)
        if hi_i <= lo_i or hi_j <= lo_j:
            self._quiet = (np.inf, np.inf, -np.inf, -np.inf)
        self.moves.append((time.perf_counter(), new))

    def _store(self, s: RecordBlock, data: np.ndarray) -> None:
        """Write a strip into the modulo-addressed buffer (at most 2 x 2 pieces if it wraps)."""
        h = self.header
        Bu, Bv = self.buffer.shape[:2]
        i0, i1, j0, j1 = h.block_points(s)
        for a0 in _wrap(i0, i1, Bu):
            for b0 in _wrap(j0, j1, Bv):
                (ia, ib), (ja, jb) = a0, b0
                self.buffer[ia % Bu:(ia % Bu) + ib - ia, ja % Bv:(ja % Bv) + jb - ja] = \
                    data[ia - i0:ib - i0, ja - j0:jb - j0]

    # -- reading -----------------------------------------------------------------------------------

    def contains(self, u: float, v: float) -> bool:
        """True if (u, v) lies within the points the window holds."""
        return kernels._inside(self.ip, self.fp, u, v) == 0

    def sample(self, u: float, v: float) -> SurfaceSample:
        """Interpolate at (u, v), which must lie inside the window (call :meth:`update` first)."""
        if not self.contains(u, v):
            raise WindowError(f"{self.name}: (u, v) = ({u}, {v}) is outside the window {self.block}")
        ev = np.empty(30)
        kernels.evaluate(self.buffer, self.ip, self.fp, float(u), float(v), self.mode, ev)
        return SurfaceSample(point=ev[0:3].copy(), normal=ev[27:30].copy(), tu=ev[9:12].copy(),
                             tv=ev[12:15].copy(), su=ev[3:6].copy(), sv=ev[6:9].copy())

    def points(self) -> np.ndarray:
        """The window's points in grid order: array ``(i1-i0, j1-j0, 14)`` (a copy)."""
        i0, i1, j0, j1 = (int(x) for x in self.ip[2:6])
        Bu, Bv = self.buffer.shape[:2]
        return self.buffer[np.arange(i0, i1)[:, None] % Bu, np.arange(j0, j1)[None, :] % Bv]

    @property
    def stats(self) -> dict[str, Any]:
        """``updates``, ``records_fetched``, ``bytes_fetched``, ``requests``, ``wait_s`` (seconds)."""
        return {"updates": self.updates, "records_fetched": self.records_fetched,
                "bytes_fetched": self.bytes_fetched, "requests": self.requests, "wait_s": self.wait_s,
                "extent": list(self.extent)}


def _wrap(a: int, b: int, n: int) -> list[tuple[int, int]]:
    """Split [a, b) (b - a <= n) into pieces that do not wrap modulo n."""
    cut = (a // n + 1) * n
    return [(a, b)] if b <= cut else [(a, cut), (cut, b)]


def _new_strips(old: RecordBlock | None, new: RecordBlock) -> list[RecordBlock]:
    """The records of ``new`` not in ``old``, as at most four rectangular strips."""
    if old is None:
        return [new]
    oi0, oi1 = max(old.ri0, new.ri0), min(old.ri1, new.ri1)
    oj0, oj1 = max(old.rj0, new.rj0), min(old.rj1, new.rj1)
    if oi0 >= oi1 or oj0 >= oj1:
        return [new]
    strips = []
    if new.ri0 < oi0:
        strips.append(RecordBlock(new.ri0, oi0, new.rj0, new.rj1))
    if oi1 < new.ri1:
        strips.append(RecordBlock(oi1, new.ri1, new.rj0, new.rj1))
    if new.rj0 < oj0:
        strips.append(RecordBlock(oi0, oi1, new.rj0, oj0))
    if oj1 < new.rj1:
        strips.append(RecordBlock(oi0, oi1, oj1, new.rj1))
    return strips
