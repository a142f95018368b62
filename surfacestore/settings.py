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

    root: folder holding the tables (``NAME.zarr``), or an ``s3://BUCKET/PREFIX`` (object storage,
    see :mod:`surfacestore.objects`); host/port: where to listen (loopback by
    default); workers: server processes; cache_mb: size of each process' record cache in MiB;
    max_block_records and max_block_mb: the most records, and the most MiB of body, one block or
    window request may return (413 beyond either); token: when set, every endpoint with data or
    counters requires ``Authorization: Bearer TOKEN`` (the pages, the API docs and the health check's
    up-or-down are public); log_level: uvicorn's; fast_path: serve the
    record/block/window endpoints from a pure ASGI middleware ahead of FastAPI's routing (False:
    through the FastAPI routes, for comparison). Connection limits (per process): max_header_kb,
    the most KiB of request line and headers (431 beyond); header_timeout, the seconds a client may
    take to send them (408, then the connection is closed); limit_concurrency, the most open
    connections and running requests (503 beyond, served at once); client_connections, the most
    open connections from one address (beyond, a new one is answered 429 and closed at once, so a
    client flooding the store with connections cannot take the others' share); timeout_keep_alive,
    the seconds an idle keep-alive connection stays open; write_timeout, the seconds a client may
    leave unread what the store sends before its connection is closed.
    """

    root: Path | str = Path("tables")
    host: str = "127.0.0.1"
    port: int = 8000
    workers: int = 1
    cache_mb: float = 256.0
    max_block_records: int = 1024
    max_block_mb: float = 32.0
    token: str | None = None
    log_level: str = "info"
    fast_path: bool = True
    max_header_kb: float = 16.0
    header_timeout: float = 10.0
    limit_concurrency: int = 512
    client_connections: int = 64
    write_timeout: float = 30.0
    timeout_keep_alive: float = 5.0

    def __post_init__(self) -> None:
        if not 1 <= self.port <= 65535:
            raise ValueError(f"port must be 1 to 65535, got {self.port}")
        for key in ("workers", "max_block_records", "limit_concurrency", "client_connections"):
            if getattr(self, key) < 1:
                raise ValueError(f"{key} must be positive, got {getattr(self, key)}")
        for key in ("cache_mb", "max_block_mb", "max_header_kb", "header_timeout", "timeout_keep_alive",
                    "write_timeout"):
            value = getattr(self, key)
            if not (value >= 0 and value < float("inf")) or (key != "cache_mb" and value == 0):
                raise ValueError(f"{key} must be a positive number, got {value}")

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


def parse_root(raw: str) -> Path | str:
    """A root as given: an ``s3://`` location stays a string (a Path would fold its ``//``)."""
    return raw if raw.startswith("s3://") else Path(raw)


def _convert(name: str, raw: str) -> Any:
    if name == "root":
        return parse_root(raw)
    if name in ("port", "workers", "max_block_records", "limit_concurrency", "client_connections"):
        return int(raw)
    if name in ("cache_mb", "max_block_mb", "max_header_kb", "header_timeout", "timeout_keep_alive", "write_timeout"):
        return float(raw)
    if name == "fast_path":
        if raw.lower() not in ("1", "0", "true", "false", "yes", "no"):
            raise ValueError(raw)
        return raw.lower() in ("1", "true", "yes")
    return raw
