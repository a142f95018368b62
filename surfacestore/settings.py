"""Settings of the surface store, from arguments or ``SURFACESTORE_*`` environment variables."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

__all__ = ["Settings"]

ENV_PREFIX = "SURFACESTORE_"


@dataclass(frozen=True)
class Settings:
    """Store settings.

    root: folder holding the tables (``NAME.zarr``); host/port: where to listen (loopback by
    default); workers: server processes; cache_mb: size of each process' record cache in MiB;
    max_block_records: the most records one block or window request may return; token: when set,
    every endpoint but health requires ``Authorization: Bearer TOKEN``; log_level: uvicorn's;
    fast_path: serve the record/block/window endpoints from a pure ASGI middleware ahead of
    FastAPI's routing (False: through the FastAPI routes, for comparison).
    """

    root: Path = Path("tables")
    host: str = "127.0.0.1"
    port: int = 8000
    workers: int = 1
    cache_mb: float = 256.0
    max_block_records: int = 1024
    token: str | None = None
    log_level: str = "info"
    fast_path: bool = True

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Settings from ``SURFACESTORE_ROOT``, ``SURFACESTORE_PORT``, ... then ``overrides``."""
        env = os.environ if env is None else env
        values: dict[str, Any] = {}
        for f in fields(cls):
            raw = env.get(ENV_PREFIX + f.name.upper())
            if raw is None or raw == "":
                continue
            try:
                values[f.name] = _convert(f.name, raw)
            except ValueError:
                raise ValueError(f"{ENV_PREFIX}{f.name.upper()}={raw!r} is not a valid {f.name}") from None
        settings = cls(**values)
        return replace(settings, **{k: v for k, v in overrides.items() if v is not None})

    def to_env(self) -> dict[str, str]:
        """The settings as environment variables (for worker processes)."""
        return {ENV_PREFIX + f.name.upper(): str(getattr(self, f.name)) for f in fields(self)
                if getattr(self, f.name) is not None}


def _convert(name: str, raw: str) -> Any:
    if name == "root":
        return Path(raw)
    if name in ("port", "workers", "max_block_records"):
        return int(raw)
    if name == "cache_mb":
        return float(raw)
    if name == "fast_path":
        if raw.lower() not in ("1", "0", "true", "false", "yes", "no"):
            raise ValueError(raw)
        return raw.lower() in ("1", "true", "yes")
    return raw
