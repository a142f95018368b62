"""The ``surfacestore`` command line: serve tables over HTTP.

    surfacestore serve --root DIR [--host 127.0.0.1] [--port 8000] [--workers N] [--cache-mb M]
                       [--max-block-records N] [--max-block-mb M] [--max-header-kb K]
                       [--header-timeout S] [--limit-concurrency N] [--client-connections N] [--write-timeout S]
                       [--log-level info]

Every option can also be given as an environment variable (``SURFACESTORE_ROOT``,
``SURFACESTORE_PORT``, ``SURFACESTORE_TOKEN``, ...); options win over the environment.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from surfacestore import __version__
from surfacestore.runtime import tune_allocator
from surfacestore.errors import SurfaceStoreError
from surfacestore.format import TABLE_SUFFIX
from surfacestore.settings import Settings, parse_root

__all__ = ["main"]


def _serve(args: argparse.Namespace) -> int:
    from surfacestore.server import check_address, run

    try:
        settings = Settings.from_env(root=args.root, host=args.host, port=args.port, workers=args.workers,
                                     cache_mb=args.cache_mb, max_block_records=args.max_block_records,
                                     max_block_mb=args.max_block_mb, token=args.token, log_level=args.log_level,
                                     max_header_kb=args.max_header_kb, header_timeout=args.header_timeout,
                                     limit_concurrency=args.limit_concurrency,
                                     client_connections=args.client_connections,
                                     write_timeout=args.write_timeout)
    except ValueError as exc:
        print(f"surfacestore: error: {exc}", file=sys.stderr)
        return 2
    if args.token is not None:
        print("surfacestore: warning: --token is visible to every user of this machine in the process list; "
              "set SURFACESTORE_TOKEN in the environment instead", file=sys.stderr)
    if isinstance(settings.root, str):
        from surfacestore.objects import list_tables

        try:
            list_tables(settings.root, TABLE_SUFFIX)
        except SurfaceStoreError as exc:
            print(f"surfacestore: error: root {settings.root}: {exc}", file=sys.stderr)
            return 1
    elif not settings.root.is_dir():
        print(f"surfacestore: error: root {settings.root} is not a folder", file=sys.stderr)
        return 1
    try:
        check_address(settings.host, settings.port)
    except SurfaceStoreError as exc:
        print(f"surfacestore: error: {exc}", file=sys.stderr)
        return 1
    logging.basicConfig(level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("surfacestore").info("serving %s on http://%s:%d (%d worker(s), cache %.0f MiB%s)",
                                           settings.root if isinstance(settings.root, str) else
                                           settings.root.resolve(), settings.host, settings.port, settings.workers,
                                           settings.cache_mb, ", token required" if settings.token else "")
    run(settings)
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="surfacestore", description="Serve surface tables over HTTP (read-only).")
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve", help="serve the tables under a folder")
    s.add_argument("--root", type=parse_root, help="folder of NAME.zarr tables, or s3://BUCKET/PREFIX "
                   "[SURFACESTORE_ROOT, default tables]")
    s.add_argument("--host", help="address to bind [127.0.0.1: loopback only]")
    s.add_argument("--port", type=int, help="port [8000]")
    s.add_argument("--workers", type=int, help="server processes [1]")
    s.add_argument("--cache-mb", type=float, help="record cache per process, MiB [256]")
    s.add_argument("--max-block-records", type=int, help="most records per block/window request [1024]")
    s.add_argument("--max-block-mb", type=float, help="most MiB of body per block/window request [32]")
    s.add_argument("--max-header-kb", type=float, help="most KiB of request line and headers [16]")
    s.add_argument("--header-timeout", type=float, help="seconds a client may take to send a request's headers [10]")
    s.add_argument("--limit-concurrency", type=int, help="most open connections and running requests per process "
                   "(503 beyond) [512]")
    s.add_argument("--client-connections", type=int, help="most open connections from one address per process "
                   "(429 beyond) [64]")
    s.add_argument("--write-timeout", type=float, help="seconds a client may leave unread what the store sends "
                   "before its connection is closed [30]")
    s.add_argument("--token", help="require 'Authorization: Bearer TOKEN' on every endpoint but health (prefer "
                   "SURFACESTORE_TOKEN: arguments are visible in the process list)")
    s.add_argument("--log-level", choices=["critical", "error", "warning", "info", "debug"])
    s.set_defaults(func=_serve)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    tune_allocator()
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
