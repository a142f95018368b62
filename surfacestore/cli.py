"""The ``surfacestore`` command line: serve tables over HTTP.

    surfacestore serve --root DIR [--host 127.0.0.1] [--port 8000] [--workers N] [--cache-mb M]
                       [--max-block-records N] [--token TOKEN] [--log-level info]

Every option can also be given as an environment variable (``SURFACESTORE_ROOT``,
``SURFACESTORE_PORT``, ``SURFACESTORE_TOKEN``, ...); options win over the environment.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from surfacestore.format import tune_allocator
from surfacestore.settings import Settings

__all__ = ["main"]


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    try:
        settings = Settings.from_env(root=args.root, host=args.host, port=args.port, workers=args.workers,
                                     cache_mb=args.cache_mb, max_block_records=args.max_block_records,
                                     token=args.token, log_level=args.log_level)
    except ValueError as exc:
        print(f"surfacestore: error: {exc}", file=sys.stderr)
        return 2
    if not settings.root.is_dir():
        print(f"surfacestore: error: root {settings.root} is not a folder", file=sys.stderr)
        return 1
    logging.basicConfig(level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("surfacestore").info("serving %s on http://%s:%d (%d worker(s), cache %.0f MiB%s)",
                                           settings.root.resolve(), settings.host, settings.port, settings.workers,
                                           settings.cache_mb, ", token required" if settings.token else "")
    if settings.workers > 1:
        os.environ.update(settings.to_env())
        uvicorn.run("surfacestore.app:create_app_from_env", factory=True, host=settings.host, port=settings.port,
                    workers=settings.workers, log_level=settings.log_level, timeout_graceful_shutdown=10)
    else:
        from surfacestore.app import create_app

        uvicorn.run(create_app(settings), host=settings.host, port=settings.port, log_level=settings.log_level,
                    timeout_graceful_shutdown=10)
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="surfacestore", description="Serve surface tables over HTTP (read-only).")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve", help="serve the tables under a folder")
    s.add_argument("--root", type=Path, help="folder of NAME.zarr tables [SURFACESTORE_ROOT, default tables]")
    s.add_argument("--host", help="address to bind [127.0.0.1: loopback only]")
    s.add_argument("--port", type=int, help="port [8000]")
    s.add_argument("--workers", type=int, help="server processes [1]")
    s.add_argument("--cache-mb", type=float, help="record cache per process, MiB [256]")
    s.add_argument("--max-block-records", type=int, help="most records per block/window request [1024]")
    s.add_argument("--token", help="require 'Authorization: Bearer TOKEN' on every endpoint but health")
    s.add_argument("--log-level", choices=["critical", "error", "warning", "info", "debug"])
    s.set_defaults(func=_serve)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    tune_allocator()
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
