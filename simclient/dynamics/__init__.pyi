"""Type information of the package: its public names (loaded on first use, see __init__)."""

from ._bodies import Body as Body, Poses as Poses, Surface as Surface
from ._constraints import (
    Constraint as Constraint, Prescribed as Prescribed, RevoluteJoint as RevoluteJoint,
    SphericalJoint as SphericalJoint,
)
from ._dop853 import Dop853 as Dop853
from ._integrate import (
    IntegrationResult as IntegrationResult, SimulationResult as SimulationResult, System as System,
    integrate as integrate, simulate as simulate,
)
from ._packed import (
    CompiledSystem as CompiledSystem, SystemPack as SystemPack, compile_system as compile_system,
    gap_probe as gap_probe, ligament_forces as ligament_forces, pack_system as pack_system,
)
from ._roots import find_minimum as find_minimum, find_root as find_root
from ._rules import ligament_tension as ligament_tension, spring_force as spring_force
from ._methods import METHODS as METHODS, solver_class as solver_class
from ._solvers import RK4 as RK4, ForwardJacobian as ForwardJacobian
from ._loads import (
    BlankevoortLaw as BlankevoortLaw, FoundationLoad as FoundationLoad, Ligament as Ligament,
    LigamentLaw as LigamentLaw, LinearSpring as LinearSpring, Load as Load, PointLoad as PointLoad,
    QuadraticLaw as QuadraticLaw, pulse as pulse, spring_damper as spring_damper,
)
from ._planar import (
    PlanarBody as PlanarBody, PlanarConstraint as PlanarConstraint, PlanarContact as PlanarContact,
    PlanarSystem as PlanarSystem, PrescribedMotion as PrescribedMotion, ProfileSurface as ProfileSurface,
    Revolute2D as Revolute2D,
)
from ._static import (
    COORDINATES as COORDINATES, BodyEquilibrium as BodyEquilibrium, StaticProblem as StaticProblem,
    StaticResult as StaticResult,
)
from ._system import ContactModel as ContactModel, MultibodySystem as MultibodySystem

__all__ = [
    "Body", "Surface", "Poses", "ContactModel", "MultibodySystem", "Constraint", "SphericalJoint", "RevoluteJoint",
    "Prescribed", "Load", "LigamentLaw", "Ligament", "QuadraticLaw", "BlankevoortLaw", "LinearSpring",
    "spring_damper", "PointLoad", "pulse", "METHODS", "RK4", "Dop853", "compile_system", "CompiledSystem",
    "pack_system", "SystemPack", "gap_probe", "ligament_forces", "spring_force", "ligament_tension", "find_root",
    "find_minimum", "solver_class", "integrate", "IntegrationResult", "simulate", "SimulationResult", "System",
    "PlanarBody", "ProfileSurface", "PlanarContact", "PlanarSystem", "Revolute2D", "PrescribedMotion",
    "PlanarConstraint", "StaticProblem", "StaticResult", "BodyEquilibrium", "COORDINATES", "FoundationLoad",
    "ForwardJacobian",
]
