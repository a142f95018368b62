"""Rigid-body dynamics with contact: bodies, systems, constraints, loads and one integrator front door.

- :class:`Body`, :class:`Surface` (a table on a body), :class:`ContactModel` (two surfaces and a
  force law), :class:`MultibodySystem` (Newton-Euler with Euler parameters, the augmented form for
  constraints).
- Constraints: :class:`SphericalJoint`, :class:`RevoluteJoint`, :class:`Prescribed`.
- Loads: :class:`Ligament` with :class:`QuadraticLaw` or :class:`BlankevoortLaw`,
  :class:`PointLoad`, :func:`pulse`, :class:`FoundationLoad` (elastic-foundation contact in a
  spatial system).
- Planar: :class:`PlanarBody`, :class:`PlanarSystem` (coordinates x, y, phi; the augmented form
  with analytic Jacobians), :class:`Revolute2D`, :class:`PrescribedMotion`, profile contacts
  (:class:`PlanarContact` on :class:`ProfileSurface`), :func:`spring_damper`.
- Integration: :func:`simulate` (contact events, any :class:`System`), :func:`integrate` (any ODE),
  :data:`METHODS`; :class:`Dop853` (``DOP853-jit``: the project's Dormand-Prince 8(5,3), its steps
  compiled for a system that has a compiled form); :class:`RK4`; :class:`ForwardJacobian` (the
  Jacobian ``simulate`` gives the implicit methods).
- The compiled side: :func:`pack_system` (a system as the kernels take it, :class:`SystemPack`),
  :func:`compile_system` (its :class:`CompiledSystem`, or why it has none), :func:`gap_probe`,
  :func:`ligament_forces` (ligament tensions along a result's history, compiled); the rules they
  share with the Python path: :func:`spring_force`, :func:`ligament_tension`.
- :func:`find_root`, :func:`find_minimum`: Brent's methods on an interval (the events' roots).
- Quasi-static equilibrium, one front door: :class:`StaticProblem` (a residual of named
  coordinates; strategies: Newton with a line search, a pseudo-transient settle, a one-coordinate
  slide, continuation along a path with tangent starts; results as :class:`StaticResult` data);
  :class:`BodyEquilibrium` (one body's free coordinates under contacts, loads and gravity).
"""

import lazy_loader as _lazy

# (names load when first used; __init__.pyi lists them)
__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
