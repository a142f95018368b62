"""The contact package's names that the command line lists without importing numpy: the force laws
(:mod:`simclient.contact._laws` builds them) with the damping factors of thesis Table 5.4, and the
elastic foundation's quadratures."""

from __future__ import annotations

import math
from collections.abc import Callable

__all__ = ["DAMPING", "LAW_NAMES", "QUADRATURES"]

#: Damping factor D(c_r) of each law of Table 5.4.
DAMPING: dict[str, Callable[[float], float]] = {
    "hertz": lambda cr: 0.0,
    "hunt-crossley": lambda cr: 3 * (1 - cr) / 2,
    "herbert-mcwhannell": lambda cr: 6 * (1 - cr) / ((2 * cr - 1) ** 2 + 3),
    "lee-wang": lambda cr: 3 * (1 - cr) / 4,
    "lankarani-nikravesh": lambda cr: 3 * (1 - cr**2) / 4,
    "gonthier": lambda cr: (1 - cr**2) / cr,
    "zhiying-qishao": lambda cr: 3 * (1 - cr**2) * math.exp(2 * (1 - cr)) / 4,
    "flores": lambda cr: 8 * (1 - cr) / (5 * cr),
}
#: every law's name (:data:`simclient.contact.LAWS`)
LAW_NAMES: tuple[str, ...] = (*DAMPING, "double-layer", "penalty-step")
#: the elastic foundation's element quadratures (:class:`simclient.contact.ElementDetector`)
QUADRATURES = ("centre", "quadratic")
