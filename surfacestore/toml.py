"""Values as a TOML file spells them, for error messages about definitions and specifications
(``true``, not Python's ``True``; ``nan``; ``{a = 1}``)."""

from __future__ import annotations

import math
from typing import Any

__all__ = ["toml_value"]


def toml_value(v: Any) -> str:
    """``v`` (a value read from TOML, or a Python value it stands for) in TOML's spelling."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k} = {toml_value(x)}" for k, x in v.items()) + "}"
    return str(v)
