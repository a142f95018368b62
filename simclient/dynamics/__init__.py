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
  :data:`METHODS`; :class:`CompiledDOP853` (``DOP853-jit``: DOP853 with compiled stages);
  :class:`ForwardJacobian` (the Jacobian ``simulate`` gives the implicit methods);
  :func:`ligament_forces` (ligament forces along a result's history, compiled).
- Quasi-static equilibrium: :class:`StaticProblem` (one body's free coordinates under contacts,
  loads and gravity; prescribed coordinates; Newton with a line search; continuation along a path);
  :func:`newton` (the root search it uses, for any residual function); :func:`settle` (the
  equilibrium a viscous model ``c x' = f(x)`` comes to rest in, by pseudo-transient continuation).
"""

from simclient.dynamics._bodies import Body, Poses, Surface
from simclient.dynamics._compiled import CompiledDOP853, compile_system, gap_probe, ligament_forces
from simclient.dynamics._constraints import Constraint, Prescribed, RevoluteJoint, SphericalJoint
from simclient.dynamics._integrate import (
    METHODS,
    RK4,
    ForwardJacobian,
    SimulationResult,
    System,
    integrate,
    simulate,
    solver_class,
)
from simclient.dynamics._loads import (
    BlankevoortLaw,
    FoundationLoad,
    Ligament,
    LigamentLaw,
    LinearSpring,
    Load,
    PointLoad,
    QuadraticLaw,
    pulse,
    spring_damper,
)
from simclient.dynamics._planar import (
    PlanarBody,
    PlanarConstraint,
    PlanarContact,
    PlanarSystem,
    PrescribedMotion,
    ProfileSurface,
    Revolute2D,
)
from simclient.dynamics._static import (COORDINATES, NewtonResult, StaticProblem, StaticResult, continue_step, newton,
                                       settle, tangent_step)
from simclient.dynamics._system import ContactModel, MultibodySystem

__all__ = ["Body", "Surface", "Poses", "ContactModel", "MultibodySystem", "Constraint", "SphericalJoint",
           "RevoluteJoint", "Prescribed", "Load", "LigamentLaw", "Ligament", "QuadraticLaw", "BlankevoortLaw",
           "LinearSpring", "spring_damper", "PointLoad", "pulse", "METHODS", "RK4", "CompiledDOP853",
           "compile_system", "gap_probe", "ligament_forces", "solver_class", "integrate", "simulate",
           "SimulationResult", "System", "PlanarBody", "ProfileSurface", "PlanarContact", "PlanarSystem",
           "Revolute2D", "PrescribedMotion", "PlanarConstraint", "StaticProblem", "StaticResult", "COORDINATES",
           "newton", "settle", "continue_step", "tangent_step", "NewtonResult", "FoundationLoad", "ForwardJacobian"]
