"""Geometry on tables: storage windows, compiled interpolation inside them, poses and rotations.

- :class:`StorageWindow`: the records around a contact point, re-centred by the thesis' rule;
  :meth:`StorageWindow.sample` interpolates position, normal and tangents.
- :func:`evaluate` / :func:`locate`: the compiled interpolation kernel and point location
  (for other compiled kernels; their packed arguments are laid out in :mod:`simclient.geometry.layout`;
  how kernels are declared, built and loaded: :mod:`simclient.geometry.kernels`).
- Poses: Euler parameters and rotation matrices (eq. 6.3), elementary rotations, surface poses.
"""

import lazy_loader as _lazy

# (names load when first used; __init__.pyi lists them)
__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
