"""The recorded results the generated pages are made from: ``docs/data/KIND/NAME.json``, each the
JSON a command printed with the command, the date, the commit and the machine that ran it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[1] / "data"


def load(kind: str, name: str) -> dict[str, Any] | None:
    """The record ``docs/data/KIND/NAME.json``, or None where none was recorded."""
    path = DATA / kind / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def provenance(record: dict[str, Any]) -> str:
    """One line saying what ran where and when."""
    m = record["machine"]
    return (f"*Measured by `{record['command']}` on {record['date'][:10]} at commit `{record['commit']}`: "
            f"{m['cpu']}, {m['cores']} cores, {m['memory_GB']:.0f} GB, Python {m['python']}, {m['platform']}.*")


def missing(kind: str, name: str) -> str:
    return (f"!!! warning \"Not recorded\"\n    No `docs/data/{kind}/{name}.json` yet: "
            f"`python3 dev.py docs --record` measures it.\n")


def table(header: list[str], rows: list[list[Any]]) -> str:
    """A Markdown table; floats with 4 significant digits."""
    def cell(x: Any) -> str:
        if isinstance(x, bool):
            return "yes" if x else "no"
        if isinstance(x, float):
            return f"{x:.4g}"
        return str(x)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(x) for x in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"
