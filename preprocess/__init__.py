"""Turn surface definitions into surface tables: parametric families, NURBS, builds."""

from preprocess.build import Placement, SurfaceSpec, build_surface, load_spec, parse_surface, sample_points
from preprocess.errors import DefinitionError, DegenerateNormal, FitError, PreprocessError
from preprocess.families import FAMILIES, Family, make_family

__all__ = [
    "FAMILIES",
    "Family",
    "make_family",
    "Placement",
    "SurfaceSpec",
    "build_surface",
    "load_spec",
    "parse_surface",
    "sample_points",
    "PreprocessError",
    "DefinitionError",
    "DegenerateNormal",
    "FitError",
]
