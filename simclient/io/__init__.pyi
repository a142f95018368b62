"""Type information of the package: its public names (loaded on first use, see __init__)."""

from ._npy import load_npy as load_npy
from ._sources import (
    CountingSource as CountingSource, HttpSource as HttpSource, LocalSource as LocalSource,
    MemorySource as MemorySource, Source as Source, open_surface as open_surface, read_field as read_field,
)
from ._transport import KeepAliveTransport as KeepAliveTransport

__all__ = [
    "Source", "open_surface", "LocalSource", "HttpSource", "MemorySource", "CountingSource", "read_field",
    "load_npy", "KeepAliveTransport",
]
