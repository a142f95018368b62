"""Multibody dynamics with contact against tabulated surfaces, read through storage windows.

The public API, by layer (each a subpackage importing only the layers before it):

- :mod:`simclient.io`: ``open_surface`` and the sources (``LocalSource``, ``HttpSource``,
  ``MemorySource``, ``CountingSource``);
- :mod:`simclient.geometry`: ``StorageWindow``;
- :mod:`simclient.contact`: ``ContactPair``, ``Contact``, ``ContactForce``, ``make_law`` and the
  force laws, ``FoundationContact`` and the layer laws;
- :mod:`simclient.dynamics`: ``Body``, ``Surface``, ``ContactModel``, ``MultibodySystem``,
  ``simulate``, ``SimulationResult``;
- :mod:`simclient.scenarios` and :mod:`simclient.bench`: ready-made models and benchmarks.

Names are resolved when first used (PEP 562), so ``import simclient`` loads no numba, scipy's
integrators, matplotlib or web framework.
"""

from __future__ import annotations

import importlib as _importlib
from typing import Any as _Any

from surfacestore import __version__ as __version__

from simclient.errors import (
    ContactError,
    ParameterError,
    PointerError,
    ServiceError,
    SimClientError,
    SimulationError,
    SourceCorrupt,
    SourceError,
    SourceNotFound,
    SourceRequestError,
    SourceUnavailable,
    TableChanged,
    WindowError,
)

#: public name -> the layer that defines it
_LAZY = {
    **dict.fromkeys(["open_surface", "Source", "LocalSource", "HttpSource", "MemorySource", "CountingSource"],
                    "simclient.io"),
    **dict.fromkeys(["StorageWindow"], "simclient.geometry"),
    **dict.fromkeys(["ContactPair", "Contact", "ContactStatus", "ContactForce", "ForceLaw", "HertzianLaw", "DoubleLayer",
                     "make_law", "LAWS", "FoundationContact", "LinearLayer", "NonlinearLayer"], "simclient.contact"),
    **dict.fromkeys(["Body", "Surface", "ContactModel", "MultibodySystem", "simulate", "SimulationResult"],
                    "simclient.dynamics"),
}

__all__ = [*_LAZY, "SimClientError", "SourceError", "SourceNotFound", "SourceRequestError", "SourceUnavailable",
           "SourceCorrupt", "TableChanged", "WindowError", "ContactError", "SimulationError", "ParameterError", "ServiceError",
           "PointerError"]


def __getattr__(name: str) -> _Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'simclient' has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
