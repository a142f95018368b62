"""Where tables come from: the :class:`Source` protocol, its implementations and ``open_surface``.

- :class:`LocalSource`: a table folder on disk (the embedded default, no server).
- :class:`HttpSource`: a table on a surface store, on keep-alive connections of the standard
  library for ``http://`` (:class:`KeepAliveTransport` offers them to httpx clients), or on an
  httpx transport given.
- :class:`MemorySource`: a whole table in memory; :class:`CountingSource` counts what passes through.
- :func:`load_npy`: the store's binary bodies; :func:`read_field`: a whole extra per-point field.
"""

import lazy_loader as _lazy

# (names load when first used; __init__.pyi lists them)
__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
