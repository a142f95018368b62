"""Errors raised by :mod:`preprocess`.

::

    PreprocessError
    ├── DefinitionError     (also ValueError)   a malformed or invalid surface definition
    ├── DegenerateNormal    (also ValueError)   tu x tv vanishes at grid points with no analytic normal
    └── FitError            (also ValueError)   data that cannot be read, parametrized or fitted
"""

from __future__ import annotations

__all__ = ["PreprocessError", "DefinitionError", "DegenerateNormal", "FitError"]


class PreprocessError(Exception):
    """Root of every error raised by preprocess."""


class DefinitionError(PreprocessError, ValueError):
    """A surface definition that is malformed or has invalid parameters."""


class DegenerateNormal(PreprocessError, ValueError):
    """The grid holds points where ``|tu x tv|`` vanishes and the family has no analytic normal."""


class FitError(PreprocessError, ValueError):
    """Input data that cannot be read, parametrized or fitted."""
