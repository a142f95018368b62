"""Windows that fetch ahead (:mod:`simclient.geometry._prefetch`): the points they hold are a
plain window's, and the records a move needs are there before it (no stall), within the memory bound."""

from __future__ import annotations

import time

import numpy as np

from simclient import LocalSource
from simclient.geometry import StorageWindow
from simclient.geometry import _prefetch
from simclient.geometry._prefetch import RecordSupply, _overlaps
from simclient.io import CountingSource
from surfacestore.format import RecordBlock


def test_prefetch_hides_updates_and_keeps_data_identical(sample_tables):
    src = LocalSource(sample_tables / "ground.zarr")
    h = src.header
    plain, pre = (StorageWindow(src, (3, 5), centre=(0.0, h.v0 + 20 * h.dv), prefetch=p) for p in (False, True))
    for k in range(300):  # the contact point moving steadily along +v (tracked, as simulate tracks it)
        v = h.v0 + (20 + k) * h.dv
        pre.track(0.0, v)
        for w in (plain, pre):
            w.update(0.0, v)
        if k % 37 == 0:
            time.sleep(0.02)  # let the background fetch finish, as the simulation's own work would
            np.testing.assert_array_equal(plain.points(), pre.points())
    assert plain.updates == pre.updates > 5
    st = pre.stats
    assert st["prefetch_requests"] > 0 and st["hidden"] + st["stalls"] == st["updates"]
    assert st["hidden"] > 0, st
    assert pre.requests < plain.requests // 2  # the window's own reads: the first, and a few


def test_prefetch_under_jumps_keeps_data_identical_bounded_and_moves_back_without_reads(sample_tables):
    """A window jumping about (back and forth, and far, as while an event is located) with
    prefetch holds exactly the plain window's points after every move; a move back to where it
    was reads nothing; the strips it holds stay within its bound."""
    src = LocalSource(sample_tables / "ground.zarr")
    h = src.header
    plain, pre = (StorageWindow(src, (3, 5), centre=(0.0, h.v0 + 60 * h.dv), prefetch=p) for p in (False, True))
    walk = np.random.default_rng(3)
    k = 60
    for step in range(300):
        k = int(np.clip(k + (walk.integers(-40, 41) if step % 25 == 0 else walk.integers(-2, 4)), 0, h.v_npts - 1))
        u = h.u0 + walk.integers(0, h.u_npts) * h.du if step % 50 == 0 else 0.0
        for w in (plain, pre):
            w.update(u, h.v0 + k * h.dv)
        np.testing.assert_array_equal(plain.points(), pre.points())
        supply = pre._supply
        assert sum(b.n_records for b, f in supply._held.items() if f.done()) <= supply.keep + 4 * 3 * 5
    assert plain.updates == pre.updates > 10
    back = pre.block
    pre.update(0.0, h.v0 + (k + 30) * h.dv if k + 30 < h.v_npts else h.v0)
    requests = pre.requests
    pre.restore(back)
    assert pre.requests == requests  # (its records were held)


class _Distant(CountingSource):
    """A source ``delay_s`` (s) away: every read waits that long first (as a request's round trip)."""

    def __init__(self, source, delay_s: float) -> None:
        super().__init__(source)
        self.delay_s = delay_s

    def read_block(self, ri0, ri1, rj0, rj1, array="points"):
        time.sleep(self.delay_s)
        return super().read_block(ri0, ri1, rj0, rj1, array)


def test_prefetch_follows_the_tracked_point_so_no_move_waits(sample_tables):
    """A contact point tracked at a steady pace (as ``simulate`` tracks it at every accepted step)
    across a table 20 ms away: every move of the window after the first placement, the first move
    included, finds its records fetched (no stall), and the points are those of a plain window;
    the strips ahead come in fewer requests than there are moves."""
    src = LocalSource(sample_tables / "ground.zarr")
    h = src.header
    far = _Distant(src, 0.02)
    plain = StorageWindow(src, (3, 9), centre=(0.0, h.v0 + 40 * h.dv))
    pre = StorageWindow(far, (3, 9), centre=(0.0, h.v0 + 40 * h.dv), prefetch=True)
    for k in range(40, 50, 2):  # the point's first positions, before it reaches a border record
        pre.track(0.0, h.v0 + k * h.dv)
        time.sleep(0.006)
    assert pre.updates == 0 and pre.stats["records_ahead"] > 0  # fetching ahead along +v before any move
    for k in range(50, h.v_npts - 40, 2):  # a point every 2 ms: 500 points (and 1000 grid steps) per second
        v = h.v0 + k * h.dv
        pre.track(0.0, v)
        time.sleep(0.002)
        for w in (plain, pre):
            w.update(0.0, v)
        np.testing.assert_array_equal(plain.points(), pre.points())
    st = pre.stats
    assert st["updates"] >= 5 and st["stalls"] == 0 and st["hidden"] == st["updates"], st
    assert st["prefetch_requests"] < st["updates"]  # (a request brings several moves' strips)
    assert far.requests == pre.requests + st["prefetch_requests"] and pre.requests == 1  # (the first window only)


def test_the_first_window_is_read_with_its_rows_as_far_as_is_cheap(sample_tables):
    """The first window is one read: its records and, on its record rows (one range each of a
    table sharded by row), the ring's and on either way as far as AHEAD_BYTES reach; the ring's
    rows above and below are one request each. Then the moves a record any way, and a walk along
    v as far as that read reaches (an impact's trial steps), wait for nothing; the points are a
    plain window's."""
    src = LocalSource(sample_tables / "ground.zarr")
    h = src.header
    asked: list[RecordBlock] = []

    class Logged(_Distant):
        def read_block(self, ri0, ri1, rj0, rj1, array="points"):
            asked.append(RecordBlock(ri0, ri1, rj0, rj1))
            return super().read_block(ri0, ri1, rj0, rj1, array)

    pre = StorageWindow(Logged(src, 0.02), (3, 9), centre=(0.0, 0.0), prefetch=True)
    b = pre.block
    assert not pre._supply.whole and pre.requests == 1
    reach = int(_prefetch.AHEAD_BYTES // (3 * h.u_pts * h.v_pts * 14 * 8))  # (records along v: 1 MB of 3-record columns)
    own = RecordBlock(b.ri0, b.ri1, max(b.rj0 - 4 - reach, 0), min(b.rj1 + 4 + reach, h.n_rec_v))  # (within the table)
    ring = (b.rj0 - 4, b.rj1 + 4)
    assert len(asked) == 3 and set(asked) == {own, RecordBlock(b.ri0 - 1, b.ri0, *ring), RecordBlock(b.ri1, b.ri1 + 1, *ring)}
    for fetch in list(pre._supply._held.values()):  # (the ring arrives)
        fetch.result()
    plain = StorageWindow(src, (3, 9), centre=(0.0, 0.0))
    ci, cj = b.ri0 + 1, b.rj0 + 4  # (the middle record)
    # (to a border record: the window re-centres there, a record along u, four along v; then to either end of the read)
    for di, rj in ((0, cj + 4), (0, cj - 4), (1, cj), (-1, cj), (0, own.rj0 + 4), (0, own.rj1 - 5)):
        u, v = h.u0 + ((ci + di) * h.u_pts + 4) * h.du, h.v0 + (rj * h.v_pts + 4) * h.dv
        for w in (plain, pre):
            w.update(u, v)
            w.restore(b)
        np.testing.assert_array_equal(plain.points(), pre.points())
    assert pre.stats["stalls"] == 0 and pre.stats["updates"] == 12 and pre.requests == 1, pre.stats  # (moves, and back)


def test_a_table_the_supply_can_hold_is_fetched_whole_once(sample_tables, monkeypatch):
    """The sample ground (12.4 MB) 20 ms away, with supplies that keep 16 MB: requested whole at
    the first window; once that arrived, moves anywhere on it wait for nothing and read nothing
    more, and every record was fetched once."""
    monkeypatch.setattr(_prefetch, "KEEP_MB", 16.0)
    src = LocalSource(sample_tables / "ground.zarr")
    h = src.header
    far = _Distant(src, 0.02)
    plain = StorageWindow(src, (3, 9), centre=(0.0, 0.0))
    pre = StorageWindow(far, (3, 9), centre=(0.0, 0.0), prefetch=True)
    assert pre._supply.whole
    time.sleep(1.0)  # (the table arrives: some 30 requests, 8 at a time, 20 ms each)
    walk = np.random.default_rng(7)
    for _ in range(60):
        u, v = h.u0 + walk.random() * (h.u1 - h.u0), h.v0 + walk.random() * (h.v1 - h.v0)
        for w in (plain, pre):
            w.update(u, v)
        np.testing.assert_array_equal(plain.points(), pre.points())
    st = pre.stats
    assert st["updates"] > 30 and st["stalls"] == 0 and pre.requests == 1, st
    record = h.u_pts * h.v_pts * 14 * 8
    assert st["prefetch_bytes"] + st["bytes_read"] == h.n_rec_u * h.n_rec_v * record  # (each record once)


def test_a_heading_fetches_either_way_along_it_before_any_pace(sample_tables):
    """Told where its contact point heads (+u, across the record rows the first read runs along)
    before any pace is known, a window 20 ms away fetches the records along u either way as far as
    AHEAD_BYTES reach: a walk 12 records back and 12 forward (an impact's trial steps) waits for
    nothing. Without the heading, it does."""
    src = LocalSource(sample_tables / "ground.zarr")
    h = src.header
    stalls = []
    for told in (True, False):
        w = StorageWindow(_Distant(src, 0.02), (3, 9), centre=(0.0, 0.0), prefetch=True)
        assert not w._supply.whole
        if told:
            w.head(0.7, 0.0)
        time.sleep(0.3)
        i, v = w.block.ri0 + 1, h.v0 + ((w.block.rj0 + 4) * h.v_pts + 4) * h.dv  # (the window's middle record)
        for k in [*range(-3, -13, -3), *range(-9, 13, 3)]:
            w.update(h.u0 + ((i + k) * h.u_pts + 4) * h.du, v)
        stalls.append(w.stats["stalls"])
    assert stalls[0] == 0 and stalls[1] > 2, stalls


def test_a_record_fetched_is_not_waited_for_again(sample_tables):
    """A strip being fetched (slowly) that holds a move's records too does not hold the move up
    where a strip fetched already holds them."""
    src = LocalSource(sample_tables / "ground.zarr")
    slow = _Distant(src, 0.5)
    supply = RecordSupply(src.header, (3, 9), lambda b: slow.read_block(b.ri0, b.ri1, b.rj0, b.rj1), "ground",
                          keep_mb=8)
    supply.remember(RecordBlock(10, 13, 10, 19), src.read_block(10, 13, 10, 19), 0.01)
    supply._request([RecordBlock(10, 13, 12, 30)])  # (newer, still running)
    t = time.perf_counter()
    pieces, waited = supply.take(RecordBlock(10, 13, 12, 15))
    assert not waited and time.perf_counter() - t < 0.1
    np.testing.assert_array_equal(pieces[0][1], src.read_block(10, 13, 12, 15))


def test_blocks_a_turn_apart_on_a_periodic_table_overlap():
    a, b = RecordBlock(0, 3, 10, 13), RecordBlock(0, 3, 1, 8)
    assert _overlaps(a, b, 9) and not _overlaps(a, b)
    assert not _overlaps(RecordBlock(0, 3, 10, 13), RecordBlock(0, 3, 5, 8), 9)
    assert not _overlaps(RecordBlock(3, 6, 10, 13), RecordBlock(0, 3, 1, 8), 9)


def test_a_closed_window_drops_its_queued_fetches_and_reads_for_itself(sample_tables):
    """Closing a supply (a run done with its window) drops the fetches not begun (a process would
    wait for them at its exit) and the records held; the closed window moves on reading itself."""
    src = LocalSource(sample_tables / "ground.zarr")
    h = src.header
    slow = _Distant(src, 0.2)
    supply = RecordSupply(h, (3, 9), lambda b: slow.read_block(b.ri0, b.ri1, b.rj0, b.rj1), "ground", workers=1)
    supply._request([RecordBlock(10, 13, 0, 5), RecordBlock(20, 23, 0, 5), RecordBlock(30, 33, 0, 5)])
    queued = list(supply._held.values())[1:]  # (one worker: the first runs, the others wait)
    supply.close()
    assert all(f.cancelled() for f in queued) and not supply._held
    pre = StorageWindow(slow, (3, 9), centre=(0.0, 0.0), prefetch=True)
    plain = StorageWindow(src, (3, 9), centre=(0.0, 0.0))
    pre.close()
    for w in (plain, pre):
        w.update(0.0, h.v0 + 250 * h.dv)
    np.testing.assert_array_equal(plain.points(), pre.points())
    assert pre.requests == 2 and "prefetch_requests" not in pre.stats


def test_a_line_of_windows_is_window_blocks_own(sample_tables):
    """The strips of the windows along a line (closed form for straight lines, plain arithmetic
    otherwise) are those of the windows ``window_block`` places a record at a time, on a table
    periodic in v and on one that is not, up to and past their borders."""
    from surfacestore.format import window_block

    rng = np.random.default_rng(11)
    for table in ("ball.zarr", "ground.zarr"):
        h = LocalSource(sample_tables / table).header
        for extent in ((3, 3), (3, 9), (5, 5), (1, 3)):
            supply = RecordSupply(h, extent, lambda b: None, "t")
            for _ in range(300):
                new = window_block(h, int(rng.integers(h.n_rec_u)), int(rng.integers(h.n_rec_v)), *extent)
                di, dj = rng.choice([0.0, 1e-3, 0.3, 1.0, 2.0], 2) * rng.choice([-1, 1], 2)
                if di == dj == 0:
                    continue
                n = int(rng.integers(1, 40))
                step = max(abs(di), abs(dj))
                ci, cj = (new.ri0 + new.ri1 - 1) // 2, (new.rj0 + new.rj1 - 1) // 2
                strips, prev = [], new
                for k in range(1, n + 1):
                    rj = cj + round(k * dj / step)
                    nxt = window_block(h, min(max(ci + round(k * di / step), 0), h.n_rec_u - 1),
                                       rj if h.periodic_v else min(max(rj, 0), h.n_rec_v - 1), *extent)
                    strips += _prefetch.new_strips(prev, nxt)
                    prev = nxt
                assert supply._line(new, di, dj, n) == (strips, prev), (table, extent, new, di, dj, n)
