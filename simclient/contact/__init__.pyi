"""Type information of the package: its public names (loaded on first use, see __init__)."""

from ._atlas import AtlasPair as AtlasPair, ChartIndex as ChartIndex, chart_margin as chart_margin
from ._elements import (
    ElementContact as ElementContact, ElementDetector as ElementDetector,
    ElementGrid as ElementGrid, element_grid as element_grid, zoomed_grid as zoomed_grid,
)
from ._friction import Friction as Friction, checked_friction as checked_friction
from ._foundation import (
    CompartmentResult as CompartmentResult, FoundationContact as FoundationContact, LayerLaw as LayerLaw,
    LinearLayer as LinearLayer, NonlinearLayer as NonlinearLayer, Refinement as Refinement,
    ViscoelasticLayer as ViscoelasticLayer, layer_energy as layer_energy, layer_result as layer_result,
    power_gap_strain_ratios as power_gap_strain_ratios,
)
from ._names import DAMPING as DAMPING, LAW_NAMES as LAW_NAMES, QUADRATURES as QUADRATURES
from ._laws import (
    LAWS as LAWS, MATERIALS as MATERIALS, ContactForce as ContactForce,
    DoubleLayer as DoubleLayer, ForceLaw as ForceLaw, HertzianLaw as HertzianLaw, Material as Material,
    PenaltyStep as PenaltyStep, ViscoelasticLaw as ViscoelasticLaw, hertz_stiffness as hertz_stiffness,
    make_law as make_law,
)
from ._nearest import nearest as nearest
from ._newton import ContactStatus as ContactStatus, solve_contact as solve_contact
from ._point import Contact as Contact, ContactPair as ContactPair, Contacts as Contacts
from ._profile import CirclePair as CirclePair, ProfilePair as ProfilePair, planar_pose as planar_pose
from ._rules import (
    friction_coefficient as friction_coefficient, friction_force as friction_force, law_force as law_force,
    step as step,
)
from ._thin_layer import (
    EllipticContact as EllipticContact, Layer as Layer, compressible_law as compressible_law,
    force_factor as force_factor, incompressible_contact as incompressible_contact,
    incompressible_law as incompressible_law, incompressible_modulus as incompressible_modulus,
    shape_ratio as shape_ratio, winkler_modulus as winkler_modulus,
)

__all__ = [
    "QUADRATURES", "ContactPair", "AtlasPair", "ChartIndex", "chart_margin", "Contact", "Contacts", "ContactStatus",
    "ContactForce", "ForceLaw", "HertzianLaw", "ViscoelasticLaw", "DoubleLayer", "PenaltyStep", "step", "law_force",
    "make_law", "LAWS", "LAW_NAMES", "DAMPING", "hertz_stiffness", "Material", "MATERIALS", "ElementGrid", "element_grid",
    "zoomed_grid", "ElementContact", "ElementDetector", "FoundationContact", "CompartmentResult", "Refinement",
    "LayerLaw", "LinearLayer", "NonlinearLayer", "ViscoelasticLayer", "layer_result", "layer_energy",
    "power_gap_strain_ratios", "solve_contact", "ProfilePair", "CirclePair", "planar_pose", "Layer",
    "winkler_modulus", "incompressible_modulus", "shape_ratio", "force_factor", "EllipticContact",
    "incompressible_contact", "compressible_law", "incompressible_law", "Friction", "friction_coefficient",
    "friction_force", "checked_friction", "nearest",
]
