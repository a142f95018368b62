"""Contact: detection (geometry only) and the laws that turn it into forces, as Simbody splits them.

- Point contact: :class:`ContactPair` solves the common-normal conditions between two storage
  windows (compiled Newton) and returns a :class:`Contact` with a :class:`ContactStatus` (along a
  sequence of poses in one call: :class:`Contacts`, :meth:`ContactPair.detect_many`); in the
  plane, :class:`ProfilePair` does the same for two profile tables and :class:`CirclePair` gives the
  closed-form circle and line cases.
- Atlases: :class:`AtlasPair` is a :class:`ContactPair` whose surface i is given by several tables
  (charts, e.g. a sphere with its poles on two axes), the contact point always on one where it lies
  well inside (:func:`chart_margin`; :class:`ChartIndex` finds it there): a ball rolls any way.
- Force laws: a :class:`ForceLaw` takes a contact and the relative velocity and returns a
  :class:`ContactForce`; :func:`make_law` looks one up by name in :data:`LAWS`. :class:`Friction`
  adds regularized Coulomb friction to a point contact's force (Simbody's Stribeck model).
- Elastic foundation: an :class:`ElementDetector` finds the elements of grids on a fixed table in
  contact with a moving table (:class:`ElementContact`); :class:`FoundationContact` applies a layer
  law (:class:`LinearLayer`, :class:`NonlinearLayer`; :class:`ViscoelasticLayer`, a standard linear
  solid per element, with a state each) and returns a :class:`CompartmentResult` each
  (:func:`zoomed_grid`: a finer grid over the part in contact, for a second pass;
  :meth:`FoundationContact.refine`: such passes until the results stop depending on the grid, a
  :class:`Refinement`);
  :func:`power_gap_strain_ratios` is the closed form of its large against small strain.
- Thin-layer closed forms (Argatov): :func:`compressible_law` and :func:`incompressible_law` give a
  point contact with effective radii the force of a thin cartilage layer without an element grid;
  :class:`ViscoelasticLaw` their standard-linear-solid form (a law with an internal state, which
  :class:`simclient.dynamics.MultibodySystem` integrates with the bodies).
"""

from simclient.contact._atlas import AtlasPair, ChartIndex, chart_margin
from simclient.contact._elements import (
    QUADRATURES,
    ElementContact,
    ElementDetector,
    ElementGrid,
    element_grid,
    zoomed_grid,
)
from simclient.contact._friction import FRICTION_PARAMS_SIZE, Friction, checked_friction, friction_coefficient
from simclient.contact._foundation import (
    CompartmentResult,
    FoundationContact,
    LayerLaw,
    LinearLayer,
    NonlinearLayer,
    Refinement,
    ViscoelasticLayer,
    layer_energy,
    layer_result,
    power_gap_strain_ratios,
)
from simclient.contact._laws import (
    DAMPING,
    LAWS,
    MATERIALS,
    ContactForce,
    DoubleLayer,
    ForceLaw,
    HertzianLaw,
    Material,
    PenaltyStep,
    ViscoelasticLaw,
    hertz_stiffness,
    law_force,
    make_law,
    step,
)
from simclient.contact._newton import ContactStatus, solve_contact
from simclient.contact._point import Contact, ContactPair, Contacts
from simclient.contact._profile import CirclePair, ProfilePair, planar_pose, solve_profile_contact
from simclient.contact._thin_layer import (
    EllipticContact,
    Layer,
    compressible_law,
    force_factor,
    incompressible_contact,
    incompressible_law,
    incompressible_modulus,
    shape_ratio,
    winkler_modulus,
)

__all__ = ["QUADRATURES", "ContactPair", "AtlasPair", "ChartIndex", "chart_margin",
           "Contact", "Contacts", "ContactStatus", "ContactForce", "ForceLaw", "HertzianLaw",
           "ViscoelasticLaw", "DoubleLayer", "PenaltyStep", "step", "law_force", "make_law", "LAWS", "DAMPING",
           "hertz_stiffness", "Material", "MATERIALS", "ElementGrid", "element_grid", "zoomed_grid", "ElementContact",
           "ElementDetector", "FoundationContact", "CompartmentResult", "Refinement", "LayerLaw", "LinearLayer", "NonlinearLayer",
           "ViscoelasticLayer", "layer_result", "layer_energy", "power_gap_strain_ratios", "solve_contact", "ProfilePair",
           "CirclePair", "planar_pose", "solve_profile_contact",
           "Layer", "winkler_modulus", "incompressible_modulus", "shape_ratio", "force_factor", "EllipticContact",
           "incompressible_contact", "compressible_law", "incompressible_law", "Friction", "friction_coefficient",
           "checked_friction", "FRICTION_PARAMS_SIZE"]
