"""Scenarios: ready-made models run by ``simclient run NAME``, registered by name in :data:`SCENARIOS`.

Each scenario is a package of this folder in one shape (see :mod:`simclient.scenarios._base`): its
:class:`Scenario` subclass (parameters, options, tables) in its ``__init__``, its model's
``run(params, tables, *, out=None, progress=None) -> Summary`` in ``model``, its ``text`` report and
``save``d histories and plots in ``report``. :mod:`simclient.scenarios.models` holds the models the
validation cases and the tests build (public, for users too), :mod:`simclient.scenarios.validate`
the closed-form validation cases, :mod:`simclient.scenarios.studies` the studies and
:mod:`simclient.scenarios.sweep` the Dask sweeps.
"""

import lazy_loader as _lazy

# (names load when first used; __init__.pyi lists them)
__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
