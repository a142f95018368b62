"""Geometry on tables: storage windows, compiled interpolation inside them, poses and rotations.

- :class:`StorageWindow`: the records around a contact point, re-centred by the thesis' rule;
  :meth:`StorageWindow.sample` interpolates position, normal and tangents.
- :func:`evaluate` / :func:`locate`: the compiled interpolation kernel and point location
  (for other compiled kernels; their packed arguments are laid out in :mod:`simclient.geometry.layout`).
- Poses: Euler parameters and rotation matrices (eq. 6.3), elementary rotations, surface poses.
"""

from simclient.geometry._interpolation import (
    BILINEAR,
    HERMITE,
    INSIDE,
    OUTSIDE_TABLE,
    OUTSIDE_WINDOW,
    evaluate,
    inline,
    jit,
    locate,
)
from simclient.geometry._poses import (
    G_matrix,
    L_matrix,
    euler_from_axis_angle,
    euler_from_matrix,
    normalize_euler,
    point_velocity,
    rotation_into,
    rot2,
    rotation_matrix,
    rx,
    ry,
    rz,
    surface_pose,
)
from simclient.geometry._window import INTERPOLATIONS, StorageWindow, SurfaceSample, record_of

__all__ = ["StorageWindow", "SurfaceSample", "INTERPOLATIONS", "record_of", "evaluate", "locate", "jit", "inline", "BILINEAR",
           "HERMITE", "INSIDE", "OUTSIDE_WINDOW", "OUTSIDE_TABLE", "rotation_matrix", "rotation_into",
           "euler_from_axis_angle", "euler_from_matrix", "G_matrix", "L_matrix", "normalize_euler", "point_velocity",
           "surface_pose", "rx", "ry", "rz", "rot2"]
