"""Rigid-body dynamics with contact: bodies, systems, constraints, loads and one integrator front door.

- :class:`Body`, :class:`Surface` (a table on a body), :class:`ContactModel` (two surfaces and a
  force law), :class:`MultibodySystem` (Newton-Euler with Euler parameters, the augmented form for
  constraints).
- Constraints: :class:`SphericalJoint`, :class:`RevoluteJoint`, :class:`Prescribed`.
- Loads: :class:`Ligament` with :class:`QuadraticLaw` or :class:`BlankevoortLaw`,
  :class:`PointLoad`, :func:`pulse`.
- Integration: :func:`simulate` (contact events), :func:`integrate` (any ODE), :data:`METHODS`.
"""

from simclient.dynamics._bodies import Body, Poses, Surface
from simclient.dynamics._constraints import Constraint, Prescribed, RevoluteJoint, SphericalJoint
from simclient.dynamics._integrate import METHODS, RK4, SimulationResult, integrate, simulate, solver_class
from simclient.dynamics._loads import BlankevoortLaw, Ligament, LigamentLaw, Load, PointLoad, QuadraticLaw, pulse
from simclient.dynamics._system import ContactModel, MultibodySystem

__all__ = ["Body", "Surface", "Poses", "ContactModel", "MultibodySystem", "Constraint", "SphericalJoint",
           "RevoluteJoint", "Prescribed", "Load", "LigamentLaw", "Ligament", "QuadraticLaw", "BlankevoortLaw",
           "PointLoad", "pulse", "METHODS", "RK4", "solver_class", "integrate", "simulate", "SimulationResult"]
