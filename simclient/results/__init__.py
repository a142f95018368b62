"""Results as files: histories (NPZ, CSV), plots (matplotlib, imported when a plot is made), the
bodies' surfaces over a run as a VTK series for ParaView, and pressure-map series (Zarr for the
store's pages, VTK for ParaView). The scenarios' reports write theirs through these."""

import lazy_loader as _lazy

# (names load when first used; __init__.pyi lists them)
__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
