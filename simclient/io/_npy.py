"""Decoding the store's binary bodies: NPY (``application/x-npy``) arrays of little-endian float64."""

from __future__ import annotations

import functools
import io
import math

import numpy as np

from simclient.errors import SourceError

__all__ = ["load_npy"]


def load_npy(body: bytes) -> np.ndarray:
    """The float64 array of an NPY body (format 1.0 or 2.0, C order, ``<f8``), without a copy.

    Raises :class:`simclient.errors.SourceError` for a malformed or truncated body, or one of
    another dtype or order.
    """
    # the header's length sits at bytes 8-9 (format 1.0) or 8-11 (2.0); parsed headers are cached
    # because numpy's parser evaluates the header's dict literal (about 50 us per response)
    if len(body) < 10 or body[:6] != b"\x93NUMPY":
        raise SourceError(f"malformed NPY body: {bytes(body[:10])!r}...")
    wide = body[6] >= 2
    end = (12 + int.from_bytes(body[8:12], "little")) if wide else (10 + int.from_bytes(body[8:10], "little"))
    shape = _npy_shape(bytes(body[:end]))
    if len(body) - end != 8 * math.prod(shape):
        raise SourceError(f"truncated NPY body: {len(body) - end} bytes of data for shape {shape}")
    return np.frombuffer(body, dtype="<f8", offset=end).reshape(shape)


@functools.lru_cache(maxsize=256)
def _npy_shape(header: bytes) -> tuple[int, ...]:
    f = io.BytesIO(header)
    try:
        major, _ = np.lib.format.read_magic(f)
        read_header = np.lib.format.read_array_header_1_0 if major == 1 else np.lib.format.read_array_header_2_0
        shape, fortran, dtype = read_header(f)
    except ValueError as exc:
        raise SourceError(f"malformed NPY body: {exc}") from None
    if fortran or dtype != np.dtype("<f8"):
        raise SourceError(f"unexpected NPY body: dtype {dtype}, fortran order {fortran}")
    return tuple(shape)
