"""Records held around a moving window, so that a distant source's latency is rarely waited for.

A window with ``prefetch`` keeps, besides its own records, a :class:`RecordSupply`: the strips of
records it fetched lately (a window moved back, as an integrator's rejected step or an event's
location does, finds them there) and fetches running ahead of it. After each move the supply
takes the window's velocity from its last moves (the net displacement of the last ``history``
moves over their time, less the time waited for fetches; moves back and forth about one place
are no travel) and requests the
strips of the windows that velocity reaches within twice the measured fetch time, and one record
more (at most ``max_ahead`` records, and half of what it keeps), several at once (a distant source's requests overlap their
round trips), nearest first. Memory is bounded: strips
fetched ahead that leave the corridor are dropped, and the least recently used of the others
go once they hold more than ``keep_mb`` (MB; at least four windows' worth of records).
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from surfacestore.format import NFIELDS, Header, RecordBlock, window_block

__all__ = ["RecordSupply", "new_strips", "cut"]


class RecordSupply:
    """Strips of records for a window of ``extent`` over a table of ``header``, read by
    ``read(block)`` (a block of records -> its points) in ``workers`` threads."""

    def __init__(self, header: Header, extent: tuple[int, int], read: Callable[[RecordBlock], np.ndarray],
                 name: str, workers: int = 4, max_ahead: int = 32, history: int = 6, keep_mb: float = 8.0) -> None:
        self.header, self.extent, self._read = header, extent, read
        self.max_ahead, self.history = max_ahead, history
        record_bytes = header.u_pts * header.v_pts * NFIELDS * 8
        self.keep = max(int(keep_mb * 1e6 / record_bytes), 4 * extent[0] * extent[1])  # (records)
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix=f"prefetch-{name}")
        self._held: OrderedDict[RecordBlock, Future[np.ndarray]] = OrderedDict()
        self._lock = threading.Lock()
        self.requests = 0  # fetches ahead started
        self.bytes = 0  # the bytes they read
        self.fetch_s: float | None = None  # a fetch's duration, smoothed (s)
        self.ahead = 1  # records ahead, last chosen
        self._moves: list[tuple[float, RecordBlock]] = []  # (time less the waits, placement)

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

    def take(self, s: RecordBlock) -> tuple[list[tuple[RecordBlock, np.ndarray | None]], bool]:
        """Records ``s`` as pieces with their points from the strips held (``None`` for a piece
        none holds, or whose fetch failed: the caller reads it, and reports a failure), and
        whether that waited for a fetch still running."""
        h = self.header
        out: list[tuple[RecordBlock, np.ndarray | None]] = []
        waited = False
        for blk, piece in self._cover(s):
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
                    data = cut(h, blk, data, piece)
            out.append((piece, data))
        return out, waited

    def around(self, pieces: list[RecordBlock]) -> RecordBlock:
        """The block to read for records ``pieces`` that no strip held: their bounding box and a
        margin all round, a record for every 10 ms a fetch takes (one to eight, less where that
        would read over a quarter of what the supply keeps), within the table
        (in v, past the ends where it is periodic): a window that jumps where nothing was fetched
        ahead, as while an event is located, mostly jumps about there again, and one larger read
        costs a distant source far less than the round trips it saves."""
        h = self.header
        m = min(max(math.ceil(self.fetch_s / 0.01), 1), 8) if self.fetch_s is not None else 1
        while True:
            ri0, ri1 = max(min(p.ri0 for p in pieces) - m, 0), min(max(p.ri1 for p in pieces) + m, h.n_rec_u)
            rj0, rj1 = min(p.rj0 for p in pieces) - m, max(p.rj1 for p in pieces) + m
            if not h.periodic_v:
                rj0, rj1 = max(rj0, 0), min(rj1, h.n_rec_v)
            block = RecordBlock(ri0, ri1, rj0, rj1)
            if m == 0 or block.n_records <= self.keep // 4:  # (large records: a smaller margin)
                return block
            m -= 1

    def _cover(self, s: RecordBlock) -> list[tuple[RecordBlock | None, RecordBlock]]:
        """``s`` as pieces of the strips held (``None`` for records in none): the whole of ``s``
        from one strip where one holds it, else a record row at a time, runs of records that no
        strip holds joined."""
        whole = next((b for b in reversed(self._held) if _contains(b, s)), None)
        if whole is not None:
            return [(whole, s)]
        parts: list[tuple[RecordBlock | None, RecordBlock]] = []
        for ri in range(s.ri0, s.ri1):
            rj = s.rj0
            while rj < s.rj1:
                blk = next((b for b in reversed(self._held) if b.ri0 <= ri < b.ri1 and b.rj0 <= rj < b.rj1), None)
                end = min(blk.rj1, s.rj1) if blk is not None else rj + 1
                last = parts[-1] if parts else None
                if blk is None and last is not None and last[0] is None and last[1].ri0 == ri and last[1].rj1 == rj:
                    parts[-1] = (None, RecordBlock(ri, ri + 1, last[1].rj0, end))
                else:
                    parts.append((blk, RecordBlock(ri, ri + 1, rj, end)))
                rj = end
        return parts

    def moved(self, new: RecordBlock, waited_s: float) -> None:
        """After the window moved to ``new``, having waited ``waited_s`` (s) for fetches in all so
        far: request the strips of the travel ahead."""
        now = time.perf_counter() - waited_s  # (the window's pace when nothing is waited for)
        self._moves = [*self._moves[-self.history:], (now, new)]
        t0, first = self._moves[0]
        di = ((new.ri0 + new.ri1) - (first.ri0 + first.ri1)) / 2
        dj = ((new.rj0 + new.rj1) - (first.rj0 + first.rj1)) / 2
        if abs(di) < 1 and abs(dj) < 1:
            return  # no travel to follow (back and forth about one place)
        # records ahead: as far as the window travels, at its recent speed, in twice the time a
        # fetch takes, and one more; along its recent direction, a record at a time
        speed = max(abs(di), abs(dj)) / max(now - t0, 1e-6)  # records per second
        lead_s = 2 * self.fetch_s if self.fetch_s is not None else 0.0
        records = max(abs(di), abs(dj))
        h, (wu, wv) = self.header, self.extent
        self.ahead = min(math.ceil(speed * lead_s) + 1, self.max_ahead, max(self.keep // (2 * max(wu, wv)), 1))
        ci, cj = (new.ri0 + new.ri1 - 1) // 2, (new.rj0 + new.rj1 - 1) // 2
        wanted, prev = [], new
        for k in range(1, self.ahead + 1):
            ri = min(max(ci + round(k * di / records), 0), h.n_rec_u - 1)
            rj = cj + round(k * dj / records)
            nxt = window_block(h, ri, rj if h.periodic_v else min(max(rj, 0), h.n_rec_v - 1), wu, wv)
            wanted += new_strips(prev, nxt)
            prev = nxt
        corridor = RecordBlock(min(new.ri0, prev.ri0), max(new.ri1, prev.ri1), min(new.rj0, prev.rj0),
                               max(new.rj1, prev.rj1))
        for b in [b for b, f in self._held.items() if not f.done() and not _overlaps(b, corridor)]:
            self._held.pop(b).cancel()  # (the window went another way)
        for s in _runs([s for s in wanted if not any(_contains(b, s) for b in self._held)]):
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
            out[-1] = RecordBlock(min(b.ri0, s.ri0), max(b.ri1, s.ri1), min(b.rj0, s.rj0), max(b.rj1, s.rj1))
            count += 1
        else:
            out.append(s)
            count = 1
    return out


def _contains(outer: RecordBlock, inner: RecordBlock) -> bool:
    return outer.ri0 <= inner.ri0 and inner.ri1 <= outer.ri1 and outer.rj0 <= inner.rj0 and inner.rj1 <= outer.rj1


def _overlaps(a: RecordBlock, b: RecordBlock) -> bool:
    return a.ri0 < b.ri1 and b.ri0 < a.ri1 and a.rj0 < b.rj1 and b.rj0 < a.rj1


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
