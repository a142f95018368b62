"""The HTTP API's reference page, from the store's own OpenAPI schema (what ``/openapi.json`` serves)."""

from __future__ import annotations

import tempfile
from typing import Any

from docs.generate.scenarios import markdown


def _schema_text(schema: dict[str, Any]) -> str:
    kind = schema.get("type", "")
    bounds = [f"{k} {schema[k]}" for k in ("minimum", "maximum", "minLength", "maxLength") if k in schema]
    if "pattern" in schema:
        bounds.append(f"pattern `{schema['pattern']}`")
    if "default" in schema:
        bounds.append(f"default `{schema['default']}`")
    return ", ".join([kind, *bounds]) if kind else ", ".join(bounds)


def page() -> str:
    from surfacestore.app import create_app
    from surfacestore.settings import Settings

    with tempfile.TemporaryDirectory() as root:
        spec = create_app(Settings(root=root)).openapi()
    lines = ["# HTTP API", "", f"Version {spec['info'].get('version', '')} of the store's read-only API, from the "
             "OpenAPI schema the store serves at `/openapi.json` (and as pages at `/docs`). Binary bodies are NPY "
             "(`application/x-npy`, `numpy.load` reads them); errors are JSON `{\"error\", \"detail\"}`.", ""]
    for path, methods in spec["paths"].items():
        for method, op in methods.items():
            lines += [f"## `{method.upper()} {path}`", "", markdown(op.get("description") or op.get("summary", "")), ""]
            params = op.get("parameters", [])
            if params:
                lines += ["| parameter | in | required | schema | meaning |", "|---|---|---|---|---|"]
                for p in params:
                    lines.append(f"| `{p['name']}` | {p['in']} | {'yes' if p.get('required') else 'no'} | "
                                 f"{_schema_text(p.get('schema', {})).replace('|', '&#124;')} | "
                                 f"{(p.get('description') or '').replace('|', '&#124;')} |")
                lines.append("")
            lines += ["| status | meaning |", "|---|---|"]
            lines += [f"| {code} | {r.get('description', '')} |" for code, r in op.get("responses", {}).items()]
            lines.append("")
    return "\n".join(lines) + "\n"
