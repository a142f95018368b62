"""Where tables come from: the :class:`Source` protocol, its implementations and ``open_surface``.

- :class:`LocalSource`: a table folder on disk (the embedded default, no server).
- :class:`HttpSource`: a table on a surface store, over an httpx transport
  (:class:`KeepAliveTransport` by default for ``http://``).
- :class:`MemorySource`: a whole table in memory; :class:`CountingSource` counts what passes through.
- :func:`load_npy`: the store's binary bodies; :func:`read_field`: a whole extra per-point field.
"""

from simclient.io._npy import load_npy
from simclient.io._sources import (
    CountingSource,
    HttpSource,
    LocalSource,
    MemorySource,
    Source,
    open_surface,
    read_field,
)
from simclient.io._transport import KeepAliveTransport

__all__ = ["Source", "open_surface", "LocalSource", "HttpSource", "MemorySource", "CountingSource", "read_field",
           "load_npy", "KeepAliveTransport"]
