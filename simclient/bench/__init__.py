"""Benchmarks (``simclient bench NAME``: :data:`BENCHES`) and the helper that starts a store for
the demo, the benchmarks and the tests (:class:`StoreProcess`, :func:`serve_store`)."""

import lazy_loader as _lazy

# (names load when first used; __init__.pyi lists them)
__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
