"""Multibody dynamics with contact against tabulated surfaces, read through storage windows."""

from simclient.errors import (
    ContactError,
    SimClientError,
    SimulationError,
    SourceError,
    SourceNotFound,
    SourceRequestError,
    SourceUnavailable,
    TableChanged,
    WindowError,
)
from simclient.io._sources import CountingSource, HttpSource, LocalSource, MemorySource, Source, open_surface

__all__ = [
    "open_surface",
    "Source",
    "LocalSource",
    "HttpSource",
    "MemorySource",
    "CountingSource",
    "SimClientError",
    "SourceError",
    "SourceNotFound",
    "SourceRequestError",
    "SourceUnavailable",
    "TableChanged",
    "WindowError",
    "ContactError",
    "SimulationError",
]
