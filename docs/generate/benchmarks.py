"""One page per benchmark of ``simclient bench``, from its recorded ``--json`` output
(``docs/data/benchmarks``): scalars as one table, lists of rows as tables, nested results as sections."""

from __future__ import annotations

from typing import Any

from docs.generate.data import load, missing, provenance, table


def _scalar(x: Any) -> bool:
    return isinstance(x, (int, float, str, bool)) or x is None


def _short(x: Any) -> Any:
    """A cell: a scalar as it is, a short list of scalars joined, anything else left out."""
    if _scalar(x):
        return "" if x is None else x
    if isinstance(x, (list, tuple)) and len(x) <= 4 and all(_scalar(v) for v in x):
        return " x ".join(str(v) for v in x) if all(isinstance(v, int) for v in x) else ", ".join(
            f"{v:.4g}" if isinstance(v, float) else str(v) for v in x)
    return None


def render(result: Any, level: int = 2) -> str:
    """``result`` (a benchmark's JSON) as Markdown."""
    if isinstance(result, list) and result and all(isinstance(r, dict) for r in result):
        keys = [k for k in dict.fromkeys(k for r in result for k in r) if any(_short(r.get(k)) is not None
                                                                              for r in result)]
        rows = [[_short(r.get(k)) if _short(r.get(k)) is not None else "" for k in keys] for r in result]
        return table([f"`{k}`" for k in keys], rows)
    if not isinstance(result, dict):
        return f"`{result}`\n"
    scalars = [[f"`{k}`", _short(v)] for k, v in result.items() if _short(v) is not None]
    parts = [table(["", "value"], scalars)] if scalars else []
    for k, v in result.items():
        if _short(v) is None:
            parts.append(f"{'#' * level} `{k}`\n\n{render(v, min(level + 1, 4))}")
    return "\n".join(parts)


def pages() -> dict[str, str]:
    """``benchmarks/NAME.md`` per benchmark, and an index."""
    from simclient.bench import BENCHES

    out = {}
    index = ["# Benchmarks", "", "Every `simclient bench NAME --json` result kept in `docs/data/benchmarks` with the "
             "machine and date it was measured on (`python3 dev.py docs --record` measures them again). Times are "
             "medians; compare ratios measured in one run, not absolute times across machines (they differ up to "
             "3x).", ""]
    for name, bench in BENCHES.items():
        record = load("benchmarks", name)
        text = [f"# `simclient bench {name}`", "", bench.description[:1].upper() + bench.description[1:] + ".", ""]
        text += [missing("benchmarks", name)] if record is None else [provenance(record), "", render(record["result"])]
        out[f"benchmarks/{name}.md"] = "\n".join(text) + "\n"
        index.append(f"- [`{name}`]({name}.md): {bench.description}")
    out["benchmarks/index.md"] = "\n".join(index) + "\n"
    return out
