"""Type information of the package: its public names (loaded on first use, see __init__)."""

from ._base import (
    SCENARIOS as SCENARIOS, Progress as Progress, Scenario as Scenario, Summary as Summary, Tables as Tables,
    extent as extent, extent_param as extent_param, get_scenario as get_scenario, locate as locate, param as param,
    save_outputs as save_outputs,
)

__all__ = ["SCENARIOS", "Scenario", "Summary", "Tables", "Progress", "param", "get_scenario", "locate", "extent",
           "extent_param", "save_outputs"]
