"""Surface tables (Zarr v3) and the read-only HTTP store that serves them.

This package's root loads nothing until a name is used (the table format's names, the errors);
the web service lives in :mod:`surfacestore.app` and is imported on demand.
"""

import lazy_loader as _lazy

#: the version of the project's three packages (surfacestore, preprocess, simclient)
__version__ = "0.1.0"

# (names load when first used; __init__.pyi lists them)
__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
