"""MkDocs hooks: the generated pages (command lines, scenarios, the HTTP API, validation and
benchmarks; see :mod:`docs.generate`) are added to the site at build time, never written to the
docs folder, and listed in the navigation where ``mkdocs.yml`` says ``GENERATED KIND``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

_pages: dict[str, str] = {}
_images: dict[str, bytes] = {}


def _generate() -> None:
    if str(ROOT) not in sys.path:  # (MkDocs restores sys.path after loading this file)
        sys.path.insert(0, str(ROOT))
    from docs.generate import benchmarks, cli, http_api, scenarios, validation

    _pages.clear()
    _images.clear()
    _pages.update(cli.pages())
    _pages.update(scenarios.pages())
    _pages["reference/http-api.md"] = http_api.page()
    text, images = validation.pages()
    _pages.update(text)
    _images.update(images)
    _pages.update(benchmarks.pages())


def _section(kind: str) -> list[Any]:
    """The navigation entries of the generated pages under ``kind/`` (its index first)."""
    prefix = {"cli": "reference/cli/"}.get(kind, f"{kind}/")
    paths = sorted(p for p in _pages if p.startswith(prefix))
    index = [p for p in paths if p.endswith("/index.md")]
    return index + [p for p in paths if p not in index]


def _fill(nav: Any) -> Any:
    if isinstance(nav, list):
        return [_fill(item) for item in nav]
    if isinstance(nav, dict):
        return {k: _fill(v) for k, v in nav.items()}
    if isinstance(nav, str) and nav.startswith("GENERATED "):
        return _section(nav.split()[1])
    return nav


def on_config(config: Any) -> Any:
    _generate()
    config["nav"] = _fill(config["nav"])
    return config


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    for path, text in {**_pages, **_images}.items():
        files.append(File.generated(config, path, content=text))
    return files
