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
  adds regularized Coulomb friction to a point contact's force (Simbody's Stribeck model). The laws
  and friction are kernels written once (:func:`law_force`, :func:`friction_force`), which the
  Python objects and the compiled right-hand side both call.
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

import lazy_loader as _lazy

# (names load when first used; __init__.pyi lists them)
__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
