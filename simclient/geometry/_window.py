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
Points live in a buffer addressed modulo its size (see :mod:`simclient.geometry._interpolation`), so an update writes
only the new strips and moves nothing. Over a table periodic in v (``Header.periodic_v``) a window
has no edge in v: its records and the parameter v run on past the seam (v beyond the table's
range, records numbered past its last; the records read are those modulo the grid), so a contact
point can go round any number of times.

``sample(u, v)`` interpolates position, unit normal and both tangents (surface frame, metres) with
the window's interpolation (``"hermite"``, the default, or the thesis' ``"bilinear"``).
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from simclient.errors import SourceError, WindowError
from simclient.geometry import layout as L
from simclient.geometry._interpolation import INSIDE, evaluate, locate
from simclient.geometry._prefetch import RecordSupply, cut, new_strips
from simclient.io import Source
from surfacestore.format import NFIELDS, Header, RecordBlock, window_block

__all__ = ["StorageWindow", "SurfaceSample", "record_of"]

INTERPOLATIONS = L.INTERPOLATIONS


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
    source : a :class:`simclient.io.Source`.
    extent : records in u and v; clamped (with a warning) to the table's record grid.
    interpolation : ``"hermite"`` (default) or ``"bilinear"``.
    centre : (u, v) to centre the first window on; default the table's centre.
    prefetch : for a distant source: keep the strips lately read for moves back, and fetch
        ahead of the contact point's travel in background threads, as far ahead as the source's
        measured fetch time needs at the point's measured pace (its positions come from
        :meth:`track` and the moves; :class:`simclient.geometry._prefetch.RecordSupply`). ``stats`` then counts
        ``prefetch_requests``, ``prefetch_bytes``, ``records_ahead`` (last chosen), ``hidden`` (moves served
        entirely from strips held, none of them still being fetched), ``stalls`` (moves that
        read, or waited for, at least one strip) and ``stalls_discarded`` (those of them that an
        integrator's failed trial made and :meth:`restore` undid: a detection at a stage state far
        off the motion walks its window where no travel leads; not in ``stalls``).
    """

    @classmethod
    def whole(cls, source: Source, interpolation: str = "hermite") -> StorageWindow:
        """A window holding all of a (small) table: a profile, a stop."""
        return cls(source, (source.header.n_rec_u, source.header.n_rec_v), interpolation)

    def __init__(self, source: Source, extent: tuple[int, int] = (3, 3), interpolation: str = "hermite",
                 centre: tuple[float, float] | None = None, prefetch: bool = False) -> None:
        h = source.header
        wu, wv = int(extent[0]), int(extent[1])
        if wu < 1 or wv < 1:
            raise WindowError(f"{source.name}: window extent {extent} must be at least 1 x 1")
        if (wu < 3 and wu < h.n_rec_u) or (wv < 3 and wv < h.n_rec_v):
            raise WindowError(f"{source.name}: window extent {wu} x {wv} is narrower than 3 records: interpolating "
                              "in the last cell of a record needs the first points of the next one, so a contact "
                              "point could never sit inside such a window (use 3 or more, or the whole table)")
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
        self._buffer = np.full((wu * h.u_pts, wv * h.v_pts, NFIELDS), np.nan)
        # the compiled kernels' window parameters (simclient.geometry.layout)
        self.ip = np.zeros(L.IP_SIZE, dtype=np.int64)
        self.ip[[L.IP_BU, L.IP_BV, L.IP_U_NPTS, L.IP_V_NPTS, L.IP_PERIODIC_V, L.IP_MODE]] = (
            *self._buffer.shape[:2], h.u_npts, h.v_npts, h.periodic_v, self.mode)
        self.fp = np.zeros(L.FP_SIZE)
        self.fp[[L.FP_U0, L.FP_DU, L.FP_V0, L.FP_DV, L.FP_NORMAL_SIGN]] = (h.u0, h.du, h.v0, h.dv, h.normal_sign)
        self.block: RecordBlock | None = None
        self.version = 0  # incremented at every placement
        self.updates = 0  # re-centrings after the first load
        self.records_fetched = 0
        self.bytes_fetched = 0  # the bytes of the records placed in the window
        self.bytes_read = 0  # the bytes the window read itself (with prefetch, fetches ahead count theirs)
        self.requests = 0
        self.wait_s = 0.0
        self.moves: list[tuple[float, RecordBlock]] = []  # (wall time, block) of every placement
        self.prefetch = prefetch
        self._supply = RecordSupply(h, self.extent, self._read, source.name) if prefetch else None
        self.hidden = self.stalls = 0
        self.stalls_discarded = 0  # stalls of moves an integrator's failed trial made, then undid
        self._unaccepted = 0  # stalls since the last accepted state (track)
        u, v = centre if centre is not None else ((h.u0 + h.u1) / 2, (h.v0 + h.v1) / 2)
        self._place(window_block(h, *self.record_of(u, v), wu, wv))

    @property
    def buffer(self) -> np.ndarray:
        """The window's points, ``(Bu, Bv, 14)``, addressed modulo its size (read-only here: only
        the window writes it, and contact pairs hold its address, which :attr:`version` tells them
        to refresh whenever it changes)."""
        return self._buffer

    # -- the update rule -----------------------------------------------------------------------

    def record_of(self, u: float, v: float) -> tuple[int, int]:
        """The record holding parameter point (u, v) (its cell's lower corner)."""
        h = self.header
        x, y = (u - h.u0) / h.du, (v - h.v0) / h.dv
        tol = 1e-9
        inside_v = math.isfinite(y) if h.periodic_v else -tol <= y <= h.v_npts - 1 + tol
        if not (-tol <= x <= h.u_npts - 1 + tol and inside_v) or x != x or y != y:
            raise WindowError(f"{self.name}: (u, v) = ({u}, {v}) is outside the table's parameter domain "
                              f"[{h.u0}, {h.u1}] x [{h.v0}, {h.v1}]")
        return record_of(h, u, v)

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
        q = self.quiet
        if q[0] <= u < q[2] and q[1] <= v < q[3]:
            return False  # fast path: inside the records that need no update
        if not self.needs_update(u, v):
            return False
        if self._supply is not None:
            self._supply.note(u, v, self.wait_s)
        self._place(window_block(self.header, *self.record_of(u, v), *self.extent))
        self.updates += 1
        return True

    def track(self, u: float, v: float) -> None:
        """The contact point of an accepted state is at (u, v): with ``prefetch``, what fetching
        ahead follows (:meth:`RecordSupply.track`); nothing without."""
        supply = self._supply
        if supply is not None:
            self._unaccepted = 0
            supply.track(u, v, self.block, self.wait_s)  # type: ignore[arg-type]  # (placed since __init__)

    def head(self, rate_u: float, rate_v: float) -> None:
        """The contact point moves at (``rate_u``, ``rate_v``) (parameter units per s): with
        ``prefetch``, a direction to fetch along before any pace is known
        (:meth:`RecordSupply.head`); nothing without."""
        if self._supply is not None:
            self._supply.head(rate_u, rate_v, self.block)  # type: ignore[arg-type]  # (placed since __init__)

    def close(self) -> None:
        """Stop fetching ahead (with ``prefetch``): fetches not begun are dropped, those running
        end on their own, the records held ahead go, and moves from here read what they need
        themselves. A process waits at its exit for the fetches queued in its threads: a run
        closes its windows once done with them."""
        if self._supply is not None:
            self._supply.close()
            self._supply = None

    def time_to_edge(self, u: float, v: float, rate_u: float, rate_v: float) -> float:
        """Time (s) until the parameter point (u, v), moving at (``rate_u``, ``rate_v``) (parameter
        units per s), leaves the points the window holds; inf if it never does (at rest, or
        heading for an edge of the window that is the table's own: past that there is no surface
        to follow)."""
        h, b = self.header, self.block
        assert b is not None
        i0, i1, j0, j1 = h.block_points(b)
        left = math.inf
        for x, rate, lo, hi, at_lo, at_hi in (
                (u, rate_u, h.u0 + i0 * h.du, h.u0 + (i1 - 1) * h.du, b.ri0 == 0, b.ri1 == h.n_rec_u),
                (v, rate_v, h.v0 + j0 * h.dv, h.v0 + (j1 - 1) * h.dv, b.rj0 == 0 and not h.periodic_v,
                 b.rj1 == h.n_rec_v and not h.periodic_v)):
            if rate > 0 and not at_hi:
                left = min(left, max(hi - x, 0.0) / rate)
            elif rate < 0 and not at_lo:
                left = min(left, max(x - lo, 0.0) / -rate)
        return left

    def centre_on(self, u: float, v: float, min_shift: int = 1) -> bool:
        """Re-centre on the record holding (u, v) if that moves the window by at least
        ``min_shift`` records in u or v (for contact areas, which the point rule of :meth:`update`
        does not cover; a shift threshold above 1 keeps an area whose centre hovers on a record
        boundary from moving the window back and forth); True when it moved."""
        block = window_block(self.header, *self.record_of(u, v), *self.extent)
        assert self.block is not None
        if max(abs(block.ri0 - self.block.ri0), abs(block.rj0 - self.block.rj0)) < max(min_shift, 1):
            return False
        self._place(block)
        self.updates += 1
        return True

    def restore(self, block: RecordBlock) -> bool:
        """Put the window back on ``block``, a placement it had (its :attr:`block` then): for a
        solver going back to an accepted state after a failed trial moved it. True when it moved."""
        # the moves since the last accepted state were a failed trial's (a detection at a stage
        # state far off the motion walking its window away): their stalls were no travel to fetch ahead for
        self.stalls -= self._unaccepted
        self.stalls_discarded += self._unaccepted
        self._unaccepted = 0
        if block == self.block:
            return False
        self._place(block)
        self.updates += 1
        return True

    def _place(self, new: RecordBlock) -> None:
        old, h = self.block, self.header
        strips = new_strips(old, new)
        waited = False
        # fetch everything first: a failing source leaves the window unchanged
        pieces: list[tuple[RecordBlock, np.ndarray | None]] = [(s, None) for s in strips]
        if self._supply is not None:
            if old is None:  # (the ring round the first window on its way while that is read, with its rows on)
                own = self._supply.first(new)
            pieces = []
            t = time.perf_counter()
            for strip in strips:
                got, slow = self._supply.take(strip)
                pieces += got
                waited |= slow
            self.wait_s += time.perf_counter() - t
            missing = [s for s, data in pieces if data is None]
            if missing:  # one read for all, with a margin (RecordSupply.around; the first window's: RecordSupply.first)
                waited = True
                block = self._supply.around(missing) if old is not None else own
                t = time.perf_counter()
                read = self._fetch(block, new)
                self._supply.remember(block, read, time.perf_counter() - t)
                pieces = [(s, cut(h, block, read, s) if data is None else data) for s, data in pieces]
        waited |= any(data is None for _, data in pieces)  # (without a supply: every strip)
        fetched = [(s, self._fetch(s, new) if data is None else data) for s, data in pieces]
        for s, data in fetched:
            self._store(s, data)
            self.records_fetched += s.n_records
            self.bytes_fetched += data.nbytes
        if self._supply is not None:
            if old is not None:
                self.stalls += waited
                self._unaccepted += waited
                self.hidden += not waited
            self._supply.moved(old, new)
        i0, i1, j0, j1 = h.block_points(new)
        self.ip[[L.IP_I_LO, L.IP_I_HI, L.IP_J_LO, L.IP_J_HI]] = (i0, i1, j0, j1)
        self.block = new
        self.version += 1
        # Parameter box of the records where update() has nothing to do: the window's non-border
        # records, extended to the window's edge where that edge is the table's.
        lo_i = new.ri0 if new.ri0 == 0 else new.ri0 + 1
        hi_i = new.ri1 if new.ri1 == h.n_rec_u else new.ri1 - 1
        lo_j = new.rj0 if new.rj0 == 0 and not h.periodic_v else new.rj0 + 1
        hi_j = new.rj1 if new.rj1 == h.n_rec_v and not h.periodic_v else new.rj1 - 1
        self.quiet = (h.u0 + lo_i * h.u_pts * h.du, h.v0 + lo_j * h.v_pts * h.dv,
                       h.u0 + hi_i * h.u_pts * h.du if hi_i < h.n_rec_u else h.u1 + 1e-9 * h.du,
                       h.v0 + hi_j * h.v_pts * h.dv if hi_j < h.n_rec_v or h.periodic_v else h.v1 + 1e-9 * h.dv)
        if hi_i <= lo_i or hi_j <= lo_j:
            self.quiet = (np.inf, np.inf, -np.inf, -np.inf)
        self.moves.append((time.perf_counter(), new))

    def _fetch(self, s: RecordBlock, new: RecordBlock) -> np.ndarray:
        """Read records ``s`` for the placement ``new``, waiting (counted in ``wait_s``)."""
        t = time.perf_counter()
        try:
            data = self._read(s)
        except SourceError as exc:
            raise SourceError(f"{self.name}: window update to records [{new.ri0}, {new.ri1}) x "
                              f"[{new.rj0}, {new.rj1}) failed fetching records [{s.ri0}, {s.ri1}) x "
                              f"[{s.rj0}, {s.rj1}): {exc}") from exc
        finally:
            self.wait_s += time.perf_counter() - t
            self.requests += 1
        self.bytes_read += data.nbytes
        return data

    def _read(self, s: RecordBlock) -> np.ndarray:
        """The points of records ``s`` from the source; over a periodic table's seam, in two reads
        (the records past either end of v are those modulo the grid)."""
        n = self.header.n_rec_v
        if not self.header.periodic_v or (0 <= s.rj0 and s.rj1 <= n):
            return self.source.read_block(s.ri0, s.ri1, s.rj0, s.rj1)
        parts, rj = [], s.rj0
        while rj < s.rj1:
            turn = rj // n * n  # the records of this turn round the table start here
            end = min(s.rj1, turn + n)
            parts.append(self.source.read_block(s.ri0, s.ri1, rj - turn, end - turn))
            rj = end
        return np.concatenate(parts, axis=1)

    def _store(self, s: RecordBlock, data: np.ndarray) -> None:
        """Write a strip into the modulo-addressed buffer (at most 2 x 2 pieces if it wraps)."""
        h = self.header
        Bu, Bv = self._buffer.shape[:2]
        i0, i1, j0, j1 = h.block_points(s)
        for a0 in _wrap(i0, i1, Bu):
            for b0 in _wrap(j0, j1, Bv):
                (ia, ib), (ja, jb) = a0, b0
                self._buffer[ia % Bu:(ia % Bu) + ib - ia, ja % Bv:(ja % Bv) + jb - ja] = \
                    data[ia - i0:ib - i0, ja - j0:jb - j0]

    # -- reading -----------------------------------------------------------------------------------

    def contains(self, u: float, v: float) -> bool:
        """True if (u, v) lies within the points the window holds."""
        return locate(self.ip, self.fp, float(u), float(v), 0, 0) == INSIDE

    def sample(self, u: float, v: float) -> SurfaceSample:
        """Interpolate at (u, v), which must lie inside the window (call :meth:`update` first)."""
        if not self.contains(u, v):
            raise WindowError(f"{self.name}: (u, v) = ({u}, {v}) is outside the window {self.block}")
        ev = np.empty(L.EV_SIZE)
        evaluate(self._buffer, self.ip, self.fp, float(u), float(v), ev, 0, 0, 0)
        return SurfaceSample(point=ev[L.EV_S:L.EV_S + 3].copy(), normal=ev[L.EV_N:L.EV_N + 3].copy(),
                             tu=ev[L.EV_TU:L.EV_TU + 3].copy(), tv=ev[L.EV_TV:L.EV_TV + 3].copy(),
                             su=ev[L.EV_SU:L.EV_SU + 3].copy(), sv=ev[L.EV_SV:L.EV_SV + 3].copy())

    def points(self, side: int | None = None) -> np.ndarray:
        """The window's points in grid order: array ``(i1-i0, j1-j0, 14)`` (a copy); with ``side``,
        every k-th point along each grid direction, k = max(1, points // side). Their v (field 1)
        is the window's: past a periodic table's seam, beyond the table's range."""
        i0, i1, j0, j1 = (int(x) for x in self.ip[[L.IP_I_LO, L.IP_I_HI, L.IP_J_LO, L.IP_J_HI]])
        su = max(1, (i1 - i0) // side) if side else 1
        sv = max(1, (j1 - j0) // side) if side else 1
        Bu, Bv = self.buffer.shape[:2]
        js = np.arange(j0, j1, sv)
        out = self.buffer[np.arange(i0, i1, su)[:, None] % Bu, js[None, :] % Bv]
        if self.header.periodic_v:
            out[..., 1] = self.header.v0 + js * self.header.dv
        return out

    @property
    def stats(self) -> dict[str, Any]:
        """``updates``, ``records_fetched``, ``bytes_fetched`` (placed in the window), ``bytes_read``
        (read by the window itself), ``requests``, ``wait_s`` (seconds); with prefetch also those
        of the ``prefetch`` parameter."""
        out = {"updates": self.updates, "records_fetched": self.records_fetched, "bytes_fetched": self.bytes_fetched,
               "bytes_read": self.bytes_read, "requests": self.requests, "wait_s": self.wait_s,
               "extent": list(self.extent)}
        if self._supply is not None:
            out.update(prefetch_requests=self._supply.requests, prefetch_bytes=self._supply.bytes,
                       records_ahead=self._supply.ahead, hidden=self.hidden, stalls=self.stalls,
                       stalls_discarded=self.stalls_discarded)
        return out


def record_of(h: Header, u: float, v: float) -> tuple[int, int]:
    """The record of table ``h`` holding parameter point (u, v) (its cell's lower corner),
    clamped to the table (in v only where it is not periodic: past the seam, the record numbered on
    past the grid's end, or before its start)."""
    i = min(max(int(np.floor((u - h.u0) / h.du)), 0), h.u_npts - 2)
    j = int(np.floor((v - h.v0) / h.dv))
    if not h.periodic_v:
        j = min(max(j, 0), h.v_npts - 2)
    return i // h.u_pts, j // h.v_pts


def _wrap(a: int, b: int, n: int) -> list[tuple[int, int]]:
    """Split [a, b) (b - a <= n) into pieces that do not wrap modulo n."""
    cut = (a // n + 1) * n
    return [(a, b)] if b <= cut else [(a, cut), (cut, b)]
