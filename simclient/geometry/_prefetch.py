"""Records held around a moving window, so that a distant source's latency is rarely waited for.

A window with ``prefetch`` keeps, besides its own records, a :class:`RecordSupply`: the strips of
records it fetched lately (a window moved back, as an integrator's rejected step or an event's
location does, finds them there; over a table periodic in v, a turn later too; a record fetched
already is never waited for again) and fetches running ahead of it.

- A table no larger than what the supply keeps (:data:`KEEP_MB`) is requested whole at the first
  window (the ring round it first, then the rest in a few blocks), and nothing later.
- Otherwise, before the first window is read, the ring of records one move deep round it is
  requested (the window reads those on its own record rows with its own, and on along them as
  far as :data:`AHEAD_BYTES` reach: :meth:`RecordSupply.first`); once told where the contact
  point heads (:meth:`RecordSupply.head`: the rate of its parameters at the first accepted
  state, before any contact), the records either way along that as far as :data:`AHEAD_BYTES`
  reach (an impact's trial steps walk the windows far along the travel, back and forth, before
  any pace is known).
- Then the supply follows the contact point: the window tells it where the point is at every
  accepted state of an integration (:meth:`RecordSupply.track`) and at every move. From the last
  ``history`` positions (the net displacement over the wall time between them, less the time
  waited for fetches: moves back and forth about one place are no travel) it takes the point's
  pace in records per second, and requests the strips of the windows on the point's way: the
  next move's shift, what the pace reaches within twice the measured fetch time, and one record
  more, at least as far as :data:`AHEAD_BYTES` reach (at most ``max_ahead`` records); when that
  lead runs short, as far again as is cheap, in one request (a source's requests cost it more
  than their bytes); and behind as far as is cheap (held already along a path travelled).
  Requests run several at once (a distant source's round trips overlap), nearest first.

Memory is bounded: fetches not begun off the corridor are dropped (one running is kept, its
round trip paid for), and the least recently used strips go once they hold more than
``keep_mb`` (MB; at least four windows' worth of records).
"""

from __future__ import annotations

import functools
import math
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from surfacestore.format import NFIELDS, Header, RecordBlock

__all__ = ["RecordSupply", "new_strips", "cut"]

#: the shortest wall time (s) between two positions kept for the pace (more often is noise and cost)
SAMPLE_EVERY = 0.005
#: the bytes of records fetched ahead however slow the travel (one round trip's worth; at most
#: ``max_ahead`` records)
AHEAD_BYTES = 1e6
#: the most records a supply keeps by default (MB); a table no larger is fetched whole
KEEP_MB = 8.0


class RecordSupply:
    """Strips of records for a window of ``extent`` over a table of ``header``, read by
    ``read(block)`` (a block of records -> its points) in ``workers`` threads."""

    def __init__(self, header: Header, extent: tuple[int, int], read: Callable[[RecordBlock], np.ndarray],
                 name: str, workers: int = 8, max_ahead: int = 32, history: int = 16, keep_mb: float | None = None) -> None:
        self.header, self.extent, self._read = header, extent, read
        self.max_ahead = max_ahead
        self.record_bytes = header.u_pts * header.v_pts * NFIELDS * 8
        keep_mb = KEEP_MB if keep_mb is None else keep_mb
        self.keep = max(int(keep_mb * 1e6 / self.record_bytes), 4 * extent[0] * extent[1])  # (records)
        self._period = header.n_rec_v if header.periodic_v else 0
        #: the table is small enough to be held whole: requested at the first window, nothing later
        self.whole = header.n_rec_u * header.n_rec_v <= self.keep
        self._asked_all = False
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix=f"prefetch-{name}")
        self._held: OrderedDict[RecordBlock, Future[np.ndarray]] = OrderedDict()
        self._lock = threading.Lock()
        self.requests = 0  # fetches ahead started
        self.bytes = 0  # the bytes they read
        self.fetch_s: float | None = None  # a fetch's duration, smoothed (s)
        self.ahead = 0  # records ahead, last chosen
        # the contact point's positions: (wall time, wall time less the waits (s), record coordinates in u and v)
        self._track: deque[tuple[float, float, float, float]] = deque(maxlen=history)
        self._next_note = 0.0  # (s, time.perf_counter) the next position is kept from
        self._planned: tuple[RecordBlock | None, int] = (None, 0)  # (placement, records ahead) requested
        self._heading: tuple[float, float] | None = None  # the point's direction (records in u and v), told

    # -- fetching --------------------------------------------------------------------------------

    def _fetch(self, s: RecordBlock) -> np.ndarray:
        t = time.perf_counter()
        data = self._read(s)
        self._timed(time.perf_counter() - t)
        with self._lock:
            self.bytes += data.nbytes
        return data

    def _timed(self, seconds: float) -> None:
        """Learn from one fetch's duration (s)."""
        with self._lock:
            self.fetch_s = seconds if self.fetch_s is None else 0.7 * self.fetch_s + 0.3 * seconds

    def remember(self, s: RecordBlock, data: np.ndarray, seconds: float) -> None:
        """Strip ``s`` read by the window itself in ``seconds``: held for a later move back."""
        self._timed(seconds)
        fut: Future[np.ndarray] = Future()
        fut.set_result(data)
        self._held[s] = fut
        self._evict()

    def close(self) -> None:
        """Drop the fetches not begun and the strips held (those running end on their own)."""
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._held.clear()

    # -- serving a move --------------------------------------------------------------------------

    def take(self, s: RecordBlock) -> tuple[list[tuple[RecordBlock, np.ndarray | None]], bool]:
        """Records ``s`` as pieces with their points from the strips held (``None`` for a piece
        none holds, or whose fetch failed: the caller reads it, and reports a failure), and
        whether that waited for a fetch still running."""
        out: list[tuple[RecordBlock, np.ndarray | None]] = []
        waited = False
        for blk, piece, lag in self._cover(s):
            data = None
            if blk is not None:
                fut = self._held[blk]
                self._held.move_to_end(blk)
                waited |= not fut.done()
                try:
                    data = fut.result()
                except Exception:  # noqa: BLE001 (read again by the caller, where a failure is reported)
                    data = None
                if data is not None:
                    data = cut(self.header, blk, data, RecordBlock(piece.ri0, piece.ri1, piece.rj0 - lag, piece.rj1 - lag))
            out.append((piece, data))
        return out, waited

    def around(self, pieces: list[RecordBlock]) -> RecordBlock:
        """The block to read for records ``pieces`` that no strip held: their bounding box and a
        margin all round, a record for every 10 ms a fetch takes (one to eight, less where that
        would read over a quarter of what the supply keeps), within the table
        (in v, past the ends where it is periodic): a window that jumps where nothing was fetched
        ahead, as while an event is located, mostly jumps about there again, and one larger read
        costs a distant source far less than the round trips it saves."""
        m = min(max(math.ceil(self.fetch_s / 0.01), 1), 8) if self.fetch_s is not None else 1
        box = functools.reduce(_hull, pieces)
        while True:
            block = self._grown(box, m, m)
            if m == 0 or block.n_records <= self.keep // 4:  # (large records: a smaller margin)
                return block
            m -= 1

    def _grown(self, b: RecordBlock, mu: int, mv: int) -> RecordBlock:
        """``b`` with ``mu`` records more on either side in u and ``mv`` in v, within the table (in
        v, past its ends where it is periodic, but a turn at most: more would read records twice)."""
        h = self.header
        ri0, ri1, rj0, rj1 = max(b.ri0 - mu, 0), min(b.ri1 + mu, h.n_rec_u), b.rj0 - mv, b.rj1 + mv
        if not h.periodic_v:
            rj0, rj1 = max(rj0, 0), min(rj1, h.n_rec_v)
        return RecordBlock(ri0, ri1, rj0, min(rj1, rj0 + h.n_rec_v))

    def _lag(self, b: RecordBlock, ri: int, rj: int) -> int | None:
        """The turns (in records, a multiple of the period in v; 0 where the table is not
        periodic) by which record (ri, rj) is numbered past its place in strip ``b``, or None
        where ``b`` does not hold it."""
        if not b.ri0 <= ri < b.ri1:
            return None
        if not self._period:
            return 0 if b.rj0 <= rj < b.rj1 else None
        k = (rj - b.rj0) % self._period
        return rj - b.rj0 - k if k < b.rj1 - b.rj0 else None

    def _newest(self) -> list[RecordBlock]:
        """The strips held, those fetched first (newest first), then those still being fetched: a
        record read already is never waited for again."""
        done: list[RecordBlock] = []
        running: list[RecordBlock] = []
        for b in reversed(self._held):
            (done if self._held[b].done() else running).append(b)
        return done + running

    def _holder(self, s: RecordBlock, held: list[RecordBlock] | None = None) -> tuple[RecordBlock, int] | None:
        """The strip of ``held`` (default :meth:`_newest`) that holds all of ``s``, and the lag of ``s`` in it."""
        for b in self._newest() if held is None else held:
            lag = self._lag(b, s.ri0, s.rj0)
            if lag is not None and s.ri1 <= b.ri1 and s.rj1 - lag <= b.rj1:
                return b, lag
        return None

    def _cover(self, s: RecordBlock) -> list[tuple[RecordBlock | None, RecordBlock, int]]:
        """``s`` as pieces of the strips held, with their lags (``None`` for records in none): the
        whole of ``s`` from one strip where one holds it, else a record row at a time, runs of
        records that no strip holds joined."""
        held = self._newest()
        whole = self._holder(s, held)
        if whole is not None:
            return [(whole[0], s, whole[1])]
        parts: list[tuple[RecordBlock | None, RecordBlock, int]] = []
        for ri in range(s.ri0, s.ri1):
            rj = s.rj0
            while rj < s.rj1:
                blk, lag = next(((b, g) for b in held if (g := self._lag(b, ri, rj)) is not None),
                                (None, 0))
                end = min(blk.rj1 + lag, s.rj1) if blk is not None else rj + 1
                last = parts[-1] if parts else None
                if blk is None and last is not None and last[0] is None and last[1].ri0 == ri and last[1].rj1 == rj:
                    parts[-1] = (None, RecordBlock(ri, ri + 1, last[1].rj0, end), 0)
                else:
                    parts.append((blk, RecordBlock(ri, ri + 1, rj, end), lag))
                rj = end
        return parts

    # -- following the contact point -------------------------------------------------------------

    def track(self, u: float, v: float, block: RecordBlock, waited_s: float) -> None:
        """The contact point is at (u, v) (the table's parameters) while the window holds
        ``block``, having waited ``waited_s`` (s) for fetches in all so far: learn its pace, and
        request the travel ahead where that asks for more than is requested."""
        if not self.note(u, v, waited_s):
            return
        planned, ahead = self._planned
        if planned != block or self._ahead() > ahead:
            self._plan(block)

    def head(self, rate_u: float, rate_v: float, block: RecordBlock) -> None:
        """The contact point heads along (``rate_u``, ``rate_v``) (the table's parameters per
        second, of any clock: a direction) while the window holds ``block``: while no pace is
        known, request the records either way along it (:meth:`_unknown_way`)."""
        h = self.header
        heading = (rate_u / (h.du * h.u_pts), rate_v / (h.dv * h.v_pts))
        if self._pace() != (0.0, 0.0) or not max(abs(heading[0]), abs(heading[1])) > 0:
            return
        self._heading = heading
        self._plan(block)

    def note(self, u: float, v: float, waited_s: float) -> bool:
        """Keep the contact point's position (u, v) for its pace (see :meth:`track`); False where
        the last was kept less than :data:`SAMPLE_EVERY` ago."""
        now = time.perf_counter()
        if now < self._next_note:
            return False
        self._next_note = now + SAMPLE_EVERY
        h = self.header
        # (the pace on the run's own clock, the waits taken out: what it would be with nothing waited for)
        self._track.append((now, now - waited_s, (u - h.u0) / (h.du * h.u_pts), (v - h.v0) / (h.dv * h.v_pts)))
        return True

    def first(self, new: RecordBlock) -> RecordBlock:
        """Before the first window ``new`` is read: request the ring's record rows above and below
        it (one move deep: the next move's, at the same time), or a table held :attr:`whole` all of
        it; returns the block the window reads itself: ``new`` and, on its record rows, the ring's
        records and on along v either way as far as :data:`AHEAD_BYTES` reach. A record row's
        records are one range of a table sharded by row (one request brings what several would:
        a bucket and a store charge per request more than per byte), and an impact's trial steps
        walk the windows along the travel before any heading is known (where it runs along v, its
        records are there; a heading along u is fetched once told, :meth:`head`)."""
        if self.whole:
            self._plan(new)
            return new
        wv = self.extent[1]
        self._request(new_strips(self._grown(new, 0, wv // 2), self._ring(new)[1]))
        return self._grown(new, 0, wv // 2 + min(self._cheap(False), self._most_ahead()))

    def moved(self, old: RecordBlock | None, new: RecordBlock) -> None:
        """After the window moved from ``old`` (None: its first placement) to ``new``: request the
        travel ahead; drop what it no longer heads for."""
        self._plan(new, old)

    def _pace(self) -> tuple[float, float]:
        """The contact point's velocity (records per second, in u and v) over the positions kept."""
        if len(self._track) < 2:
            return 0.0, 0.0
        (_, t0, x0, y0), (_, t1, x1, y1) = self._track[0], self._track[-1]
        dt = max(t1 - t0, 1e-6)
        return (x1 - x0) / dt, (y1 - y0) / dt

    def _ahead(self) -> int:
        """Records ahead to request: the next move's shift (half the window along the travel: a
        window re-centres once the point reaches its border record), as far as the point travels
        at its pace in twice the time a fetch takes, and one more, and at least :meth:`_cheap`
        (none while it does not travel)."""
        du, dv = self._pace()
        speed = max(abs(du), abs(dv))
        if speed == 0.0:
            return 0
        along_u = abs(du) > abs(dv)
        shift = self.extent[0] // 2 if along_u else self.extent[1] // 2
        lead_s = 2 * self.fetch_s if self.fetch_s is not None else 0.0
        return min(max(shift + math.ceil(speed * lead_s) + 1, self._cheap(along_u)), self.max_ahead, self._most_ahead())

    def _most_ahead(self) -> int:
        """The most records ahead (or behind) requested: half of what the supply keeps."""
        return max(self.keep // (2 * max(self.extent)), 1)

    def _cheap(self, along_u: bool) -> int:
        """Records along u (or v) that :data:`AHEAD_BYTES` of strips reach: where records are small,
        fetching further costs no more round trips (an integrator's trial steps overshoot along the
        travel, their detections walking the window there)."""
        return int(AHEAD_BYTES // (self.record_bytes * (self.extent[1] if along_u else self.extent[0])))

    def _line(self, new: RecordBlock, di: float, dj: float, n: int) -> tuple[list[RecordBlock], RecordBlock]:
        """The strips of the windows ``n`` records on from ``new`` along the direction (di, dj)
        (records), a record at a time, and the last of those windows (each as
        :func:`~surfacestore.format.window_block` places it, inlined: a run plans a line at every
        move, and the plain arithmetic costs a fraction of the checked call)."""
        nu, nv, periodic = self.header.n_rec_u, self.header.n_rec_v, self.header.periodic_v
        wu, wv = new.ri1 - new.ri0, new.rj1 - new.rj0
        step = max(abs(di), abs(dj))
        ci, cj = (new.ri0 + new.ri1 - 1) // 2, (new.rj0 + new.rj1 - 1) // 2
        u_at = functools.partial(_placed, lo=0, hi=nu - wu, half=wu // 2)  # (a centre record -> the window's first)
        v_at = functools.partial(_placed, lo=-math.inf if periodic else 0, hi=math.inf if periodic else nv - wv, half=wv // 2)
        if u_at(ci) == new.ri0 and v_at(cj) == new.rj0:  # (odd extents: ``new`` is placed on its centre)
            # a straight line (the offsets across it all round to 0): its records, a row or column at a time
            if abs(di) * n < 0.5 * step:
                end, sign = v_at(cj + math.copysign(n, dj)), 1 if dj > 0 else -1
                cols = range(new.rj1, end + wv) if sign > 0 else range(new.rj0 - 1, end - 1, -1)
                return [RecordBlock(new.ri0, new.ri1, c, c + 1) for c in cols], RecordBlock(new.ri0, new.ri1, end, end + wv)
            if abs(dj) * n < 0.5 * step:
                end, sign = u_at(ci + math.copysign(n, di)), 1 if di > 0 else -1
                rows = range(new.ri1, end + wu) if sign > 0 else range(new.ri0 - 1, end - 1, -1)
                return [RecordBlock(r, r + 1, new.rj0, new.rj1) for r in rows], RecordBlock(end, end + wu, new.rj0, new.rj1)
        strips, prev = [], new
        for k in range(1, n + 1):
            ri0, rj0 = u_at(ci + round(k * di / step)), v_at(cj + round(k * dj / step))
            if ri0 != prev.ri0 or rj0 != prev.rj0:
                nxt = RecordBlock(ri0, ri0 + wu, rj0, rj0 + wv)
                strips += new_strips(prev, nxt)
                prev = nxt
        return strips, prev

    def _unknown_way(self, new: RecordBlock) -> tuple[list[RecordBlock], RecordBlock]:
        """The strips to request round ``new`` while the point's pace is not known (the first
        window; the next move may go any way), nearest first, and the block they span: the ring
        one move deep (:meth:`_ring`), and where a heading was told (:meth:`head`), along it
        either way as far as :data:`AHEAD_BYTES` reach (an impact's trial steps walk the windows
        far along the travel, before any pace is known)."""
        wanted, span = self._ring(new)
        if self._heading is not None:
            di, dj = self._heading
            reach = min(self._cheap(abs(di) > abs(dj)), self._most_ahead())
            for sign in (1, -1):
                line, last = self._line(new, sign * di, sign * dj, reach)
                wanted += line
                span = _hull(span, last)
        return wanted, span

    def _ring(self, new: RecordBlock) -> tuple[list[RecordBlock], RecordBlock]:
        """The strips of the ring of records one move (half a window) deep round ``new``, and the block it spans."""
        ring = self._grown(new, self.extent[0] // 2, self.extent[1] // 2)
        return new_strips(new, ring), ring

    def _all(self, new: RecordBlock) -> list[RecordBlock]:
        """The strips of the whole table but ``new``: the ring round it first (:meth:`_ring`), then
        the rest in at most four blocks (few requests: a bucket's cost it more than their bytes)."""
        h = self.header
        wanted, ring = self._ring(new)
        rj0 = ring.rj0 if h.periodic_v else 0  # (a periodic table's turn from the ring's start)
        whole = RecordBlock(0, h.n_rec_u, rj0, rj0 + h.n_rec_v)
        return wanted + new_strips(ring, whole)

    def _plan(self, new: RecordBlock, old: RecordBlock | None = None) -> None:
        """Request the strips of the windows ahead of ``new`` along the point's travel (while no
        travel is known, those of :meth:`_unknown_way`), and behind as far as is cheap; after a
        move from ``old``, cancel the fetches still running off that corridor (the window went
        another way). A table held :attr:`whole` is requested all at the first plan, and nothing after."""
        if self.whole:
            if not self._asked_all:
                self._asked_all = True
                self._request(self._all(new))
            return
        self.ahead = ahead = self._ahead()
        self._planned = (new, ahead)
        if ahead == 0:
            wanted, start = self._unknown_way(new)
            end = start
        else:
            du, dv = self._pace()
            cheap = self._cheap(abs(du) > abs(dv))
            wanted, end = self._line(new, du, dv, ahead)
            held = self._newest()
            if any(self._holder(s, held) is None for s in wanted):
                # the lead runs short: as far again as is cheap (one request for several moves'
                # strips, not one each: a source's requests cost it more than their bytes)
                wanted, end = self._line(new, du, dv, min(ahead + cheap, self._most_ahead()))
            # and behind, as far as is cheap: where records are small, a trial step's detection that
            # walks the window back along the travel (friction at an impact) finds them there too
            # (along a path travelled they are held already: nothing is fetched)
            back, start = self._line(new, -du, -dv, min(cheap, ahead))
            wanted += back
        if old is not None:
            corridor = _hull(start, end)
            for b in [b for b, f in self._held.items() if not f.done() and not _overlaps(b, corridor, self._period)]:
                if self._held[b].cancel():  # (one already running is kept: its round trip is paid for)
                    del self._held[b]
        self._request(wanted)

    def _request(self, strips: list[RecordBlock]) -> None:
        """Fetch, in the background, the strips that none held holds (consecutive ones joined)."""
        held = self._newest()
        most = max(8, self._cheap(True), self._cheap(False))  # (strips a request: as many as are cheap)
        for s in _runs([s for s in strips if self._holder(s, held) is None], most):
            self._held[s] = self._pool.submit(self._fetch, s)
            self.requests += 1
        self._evict()

    def _evict(self) -> None:
        """Drop the least recently used strips already fetched while more than :attr:`keep` records are held."""
        held = sum(b.n_records for b in self._held)
        for b in [b for b, f in self._held.items() if f.done()]:
            if held <= self.keep:
                break
            del self._held[b]
            held -= b.n_records


def cut(h: Header, block: RecordBlock, data: np.ndarray, piece: RecordBlock) -> np.ndarray:
    """The points of records ``piece`` from ``data``, the points of ``block`` (which holds it)."""
    i0, _, j0, _ = h.block_points(block)
    p0, p1, q0, q1 = h.block_points(piece)
    return data[p0 - i0:p1 - i0, q0 - j0:q1 - j0]


def _runs(strips: list[RecordBlock], most: int = 8) -> list[RecordBlock]:
    """Consecutive strips that continue one another (the same records across, the next ones
    along) joined, up to ``most`` strips a block: one request for several records of travel (a
    fast window needs more strips per second than one request each could bring)."""
    out: list[RecordBlock] = []
    count = 0
    for s in strips:
        b = out[-1] if out else None
        if b is not None and count < most and (
                (b.rj0, b.rj1) == (s.rj0, s.rj1) and b.ri1 == s.ri0 or (b.ri0, b.ri1) == (s.ri0, s.ri1) and b.rj1 == s.rj0
                or (b.rj0, b.rj1) == (s.rj0, s.rj1) and s.ri1 == b.ri0 or (b.ri0, b.ri1) == (s.ri0, s.ri1) and s.rj1 == b.rj0):
            out[-1] = _hull(b, s)
            count += 1
        else:
            out.append(s)
            count = 1
    return out


def _placed(centre: float, lo: float, hi: float, half: int) -> int:
    """The first record of a window centred on record ``centre``, ``half`` records on either
    side, shifted inward to start within [``lo``, ``hi``] (as :func:`~surfacestore.format.window_block`)."""
    return int(min(max(centre - half, lo), hi))


def _hull(a: RecordBlock, b: RecordBlock) -> RecordBlock:
    """The smallest block holding ``a`` and ``b``."""
    return RecordBlock(min(a.ri0, b.ri0), max(a.ri1, b.ri1), min(a.rj0, b.rj0), max(a.rj1, b.rj1))


def _overlaps(a: RecordBlock, b: RecordBlock, period: int = 0) -> bool:
    """Whether ``a`` and ``b`` share a record (in v modulo ``period`` where that is not 0: a
    periodic table's records numbered a turn apart are the same)."""
    if not (a.ri0 < b.ri1 and b.ri0 < a.ri1):
        return False
    if period:  # (the blocks span a turn or two at most)
        return any(a.rj0 + k * period < b.rj1 and b.rj0 < a.rj1 + k * period for k in range(-2, 3))
    return a.rj0 < b.rj1 and b.rj0 < a.rj1


def new_strips(old: RecordBlock | None, new: RecordBlock) -> list[RecordBlock]:
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
