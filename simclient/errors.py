"""Errors raised by :mod:`simclient`.

::

    SimClientError
    ├── SourceError                  a surface source failed (names the surface, records, cause)
    │   ├── SourceNotFound   (also FileNotFoundError)  no such table / 404
    │   ├── SourceRequestError (also ValueError)       the request was refused (4xx other than 404)
    │   ├── SourceUnavailable                          connection errors / 5xx after all retries
    │   ├── SourceCorrupt                              a corrupt table or record (not retried)
    │   └── TableChanged                               the table was rebuilt during the run
    ├── WindowError          (also ValueError)         a point outside the table, a bad extent
    ├── ContactError                                   contact detection failed (not converged, left the table)
    ├── SimulationError                                the integrator failed
    ├── PointerError                                   a compiled call would read a window's buffer
    │                                                  through a stale address (SIMCLIENT_CHECK_POINTERS)
    ├── ParameterError       (also ValueError)         a bad parameter: unknown law, method, scenario or
    │                                                  case; a value out of its range (names both)
    └── ServiceError                                   a helper service (a store started for a run, a Dask
                                                       scheduler) failed or does not answer
"""

from __future__ import annotations

import math
import numbers

__all__ = ["SimClientError", "SourceError", "SourceNotFound", "SourceRequestError", "SourceUnavailable",
           "SourceCorrupt", "TableChanged", "WindowError", "ContactError", "SimulationError", "ParameterError", "ServiceError",
           "PointerError"]


class SimClientError(Exception):
    """Root of every error raised by simclient."""


class SourceError(SimClientError):
    """A surface source failed."""


class SourceNotFound(SourceError, FileNotFoundError):
    """The table does not exist at the source."""


class SourceRequestError(SourceError, ValueError):
    """The source refused the request (bad parameters, out of range, unauthorized, too large)."""


class SourceUnavailable(SourceError):
    """The source could not be reached or kept failing after all retries."""


class SourceCorrupt(SourceError):
    """The table's header or a record is unreadable at the source (missing, truncated, failing its
    checksum): permanent until the table is rebuilt, so it is not retried."""


class TableChanged(SourceError):
    """The table's digest changed during the run (it was rebuilt under the same name)."""


class WindowError(SimClientError, ValueError):
    """A storage-window request that cannot be served (point outside the table, bad extent)."""


class ContactError(SimClientError):
    """Contact detection failed (Newton did not converge, the contact point left the table)."""


class SimulationError(SimClientError):
    """The integration failed."""


class PointerError(SimClientError):
    """A compiled call would read memory through an address that no longer is its array's (a
    window's buffer replaced without :meth:`simclient.contact.ContactPair.refresh`); raised by the
    checks ``SIMCLIENT_CHECK_POINTERS=1`` turns on, naming the pair and the window."""


class ParameterError(SimClientError, ValueError):
    """A parameter that cannot be used: an unknown name (law, integrator, scenario, validation
    case) or a value outside its range. The message names the parameter and the choices."""


class ServiceError(SimClientError):
    """A helper service failed: a store started for the demo, a benchmark or a test, or a sweep's
    Dask scheduler that does not answer."""


def nonnegative(value: object, what: str) -> float:
    """``value`` as a float if it is a finite real number >= 0; otherwise a :class:`ParameterError`
    naming ``what`` (a parameter and its unit) and the value."""
    if not (isinstance(value, numbers.Real) and math.isfinite(value) and float(value) >= 0):
        raise ParameterError(f"{what} must be a finite number >= 0, got {value!r}")
    return float(value)
