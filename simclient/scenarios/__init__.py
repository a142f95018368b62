"""Scenarios: ready-made models run by ``simclient run NAME``, registered by name in :data:`SCENARIOS`.

Each scenario module declares a :class:`Scenario` subclass (its parameters, options, tables, run
and report, see :mod:`simclient.scenarios._base`), which registers it; this package imports every
scenario module listed in ``_MODULES``, so adding a scenario touches this folder only.
:mod:`simclient.scenarios.validate` holds the closed-form validation cases and
:mod:`simclient.scenarios.report` the histories and plots.
"""

import importlib as _importlib

from simclient.scenarios._base import (
    SCENARIOS,
    Progress,
    Scenario,
    Summary,
    Tables,
    extent,
    extent_param,
    get_scenario,
    locate,
    param,
)
from simclient.scenarios._tables import (ensure_sample_tables, ensure_table, missing_real_tables, sample_spec,
                                         table_exists)

#: the scenario modules (each registers its scenarios when imported)
_MODULES = ("bouncing_ball", "knee3d", "knee2d", "prosthetic_knee", "artificial_knee", "blankevoort", "natural_knee",
            "layer_drop")
for _name in _MODULES:
    _importlib.import_module(f"simclient.scenarios.{_name}")

__all__ = ["SCENARIOS", "Scenario", "Summary", "Tables", "Progress", "param", "get_scenario", "locate",
           "extent", "extent_param", "ensure_sample_tables", "ensure_table", "missing_real_tables", "sample_spec",
           "table_exists"]
