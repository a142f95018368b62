"""Type information of the package: its public names (loaded on first use, see __init__)."""

from ._interpolation import (
    BILINEAR as BILINEAR, HERMITE as HERMITE, INSIDE as INSIDE, OUTSIDE_TABLE as OUTSIDE_TABLE,
    OUTSIDE_WINDOW as OUTSIDE_WINDOW, evaluate as evaluate, locate as locate,
)
from ._poses import (
    G_matrix as G_matrix, L_matrix as L_matrix, euler_from_axis_angle as euler_from_axis_angle,
    euler_from_matrix as euler_from_matrix, normalize_euler as normalize_euler, place as place,
    point_velocity as point_velocity, rotation_into as rotation_into, rot2 as rot2,
    rotation_matrix as rotation_matrix, rx as rx, ry as ry, rz as rz, surface_pose as surface_pose,
)
from .layout import INTERPOLATIONS as INTERPOLATIONS
from ._window import (
    StorageWindow as StorageWindow, SurfaceSample as SurfaceSample,
    record_of as record_of,
)

__all__ = [
    "StorageWindow", "SurfaceSample", "INTERPOLATIONS", "record_of", "evaluate", "locate", "place", "BILINEAR",
    "HERMITE", "INSIDE", "OUTSIDE_WINDOW", "OUTSIDE_TABLE", "rotation_matrix", "rotation_into",
    "euler_from_axis_angle", "euler_from_matrix", "G_matrix", "L_matrix", "normalize_euler", "point_velocity",
    "surface_pose", "rx", "ry", "rz", "rot2",
]
