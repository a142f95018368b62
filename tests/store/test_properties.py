"""Property tests (hypothesis) of the store's parsing: table headers, record indices, and the
window arithmetic."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from surfacestore.app import _BadParameter, parse_index
from surfacestore.errors import RecordOutOfRange, TableCorrupt
from surfacestore.format import FIELDS, FORMAT, Header, window_block

VALID = {"format": FORMAT, "fields": list(FIELDS), "u_npts": 40, "v_npts": 50, "u_pts": 9, "v_pts": 7, "u0": -1.0,
         "v0": 0.0, "du": 0.05, "dv": 0.1, "digest": "sha256:0", "codec": "none", "shard_records": 0,
         "normal_sign": 1, "extras": [], "bbox": None, "rmax": None}
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                    max_leaves=6)


@pytest.mark.slow
@given(changes=st.dictionaries(st.sampled_from(sorted(VALID)), JSON, min_size=1, max_size=4))
@settings(max_examples=400, deadline=None)
def test_any_header_is_valid_or_table_corrupt(changes):
    """Whatever a header holds, opening it gives a valid header or TableCorrupt, nothing else."""
    try:
        h = Header.from_dict({**VALID, **changes})
    except TableCorrupt:
        return
    h.validate()  # what was accepted is consistent: the arithmetic the store does on it is safe
    assert h.n_rec_u >= 1 and h.n_rec_v >= 1 and h.record_bytes > 0
    assert math.isfinite(h.u1) and math.isfinite(h.v1)


@given(st.text(max_size=12))
@settings(max_examples=500, deadline=None)
def test_index_parsing_accepts_ascii_digits_only(raw):
    try:
        value = parse_index(raw, "ri")
    except _BadParameter:
        assert not (raw.isascii() and raw.isdigit() and len(raw) <= 18) or raw == ""
        return
    assert raw.isascii() and raw.lstrip("-").isdigit() and value == int(raw) and value >= 0


@given(n=st.integers(1, 10**6).map(str))
def test_index_parsing_round_trips(n):
    assert parse_index(n, "ri") == int(n)
    with pytest.raises(_BadParameter):
        parse_index("-" + n, "ri", minimum=0) if n != "0" else parse_index("x", "ri")


@given(nu=st.integers(1, 60), nv=st.integers(1, 60), pu=st.integers(1, 20), pv=st.integers(1, 20),
       wu=st.integers(1, 15), wv=st.integers(1, 15), data=st.data())
@settings(max_examples=400, deadline=None)
def test_window_block_arithmetic(nu, nv, pu, pv, wu, wv, data):
    h = Header(u_npts=nu, v_npts=nv, u_pts=min(pu, nu), v_pts=min(pv, nv), u0=0.0, v0=0.0, du=1.0, dv=1.0)
    ri = data.draw(st.integers(-2, h.n_rec_u + 2))
    rj = data.draw(st.integers(-2, h.n_rec_v + 2))
    if not (0 <= ri < h.n_rec_u and 0 <= rj < h.n_rec_v):
        with pytest.raises(RecordOutOfRange):
            window_block(h, ri, rj, wu, wv)
        return
    b = window_block(h, ri, rj, wu, wv)
    h.check_block(b)  # inside the record grid
    assert b.ri0 <= ri < b.ri1 and b.rj0 <= rj < b.rj1  # holds the centre record
    assert (b.ri1 - b.ri0, b.rj1 - b.rj0) == (min(wu, h.n_rec_u), min(wv, h.n_rec_v))
    # centred where the grid allows, shifted inward only at the borders
    for lo, hi, c, w, n in ((b.ri0, b.ri1, ri, wu, h.n_rec_u), (b.rj0, b.rj1, rj, wv, h.n_rec_v)):
        if 0 < lo and hi < n:
            assert lo == c - (min(w, n) - 1) // 2 or lo == c - min(w, n) // 2
