"""One page per scenario, from its package: the model's docstring, its parameters (units, defaults,
choices) and tables, the studies registered for it."""

from __future__ import annotations

import dataclasses
import importlib
import re
from typing import Any


def markdown(docstring: str) -> str:
    """A docstring's text as Markdown: reST's ``literals`` and :role:`targets` as code."""
    text = re.sub(r":(?:func|class|meth|mod|attr|data):`~?([^`]+)`", r"`\1`", docstring)
    return text.replace("``", "`")


def _show(value: Any) -> str:
    if isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, int) for v in value):
        return f"{value[0]}x{value[1]}"
    if value is None:
        return ""
    return repr(value) if isinstance(value, str) else f"{value:g}" if isinstance(value, float) else str(value)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _page(cls: Any, studies: list[Any]) -> str:
    module = importlib.import_module(cls.__module__)
    option = cls.name
    lines = [f"# `{option}`", "", f"*{cls.title}*", "",
             f"```bash\nsimclient run {option} [--tables DIR | --store URL] [--out DIR] [--json] [OPTIONS]\n```", "",
             markdown(module.__doc__ or "").strip(), "", "## Parameters", "",
             "| option | default | unit | meaning |", "|---|---|---|---|"]
    for f in dataclasses.fields(cls.Params):
        meta = f.metadata
        if "help" not in meta:
            continue
        choices = f" (one of {', '.join(f'`{c}`' for c in meta['choices'])})" if meta.get("choices") else ""
        lines.append(f"| `--{f.name.replace('_', '-')}` | `{_cell(_show(f.default))}` | {meta['unit']} | "
                     f"{_cell(meta['help'])}{choices} |")
    if cls.tables:
        lines += ["", "## Tables", "", "By role, the sample tables read by default (`--ROLE NAME` reads another "
                  "table of the folder or store):", "", "| role | table |", "|---|---|"]
        lines += [f"| `{role}` | `{name}` |" for role, name in cls.tables.items()]
    if studies:
        lines += ["", "## Studies", "", "`simclient study NAME [--out DIR] [--json]` runs a scenario's cases in "
                  "parallel and compares them:", ""]
        lines += [f"- `{s.name}`: {s.title}" for s in studies]
    return "\n".join(lines) + "\n"


def pages() -> dict[str, str]:
    """``scenarios/NAME.md`` for every registered scenario, and an index."""
    from simclient.scenarios import SCENARIOS
    from simclient.scenarios.studies import STUDIES

    out = {}
    index = ["# Scenarios", "", "Every scenario runs with `simclient run NAME` on the sample tables (built where "
             "missing) and prints its summary with `--json`; `--out DIR` writes its histories and plots. In Python, "
             "`SCENARIOS[NAME]().run(params, tables)` with the same parameters.", ""]
    for name in SCENARIOS:
        cls = SCENARIOS[name]
        out[f"scenarios/{name}.md"] = _page(cls, [s for s in STUDIES.values() if s.scenario == name])
        index.append(f"- [`{name}`]({name}.md): {cls.title}")
    out["scenarios/index.md"] = "\n".join(index) + "\n"
    return out
