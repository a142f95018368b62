"""Benchmarks (``simclient bench NAME``: :data:`BENCHES`) and the helper that starts a store for
the demo, the benchmarks and the tests (:class:`StoreProcess`, :func:`serve_store`)."""

from simclient.bench._registry import BENCHES, Bench
from simclient.bench._server import (
    NginxProxy,
    S3Server,
    ServerProcess,
    StoreProcess,
    aws_environment,
    find_nginx,
    free_port,
    serve,
    serve_store,
)

__all__ = ["BENCHES", "Bench", "ServerProcess", "StoreProcess", "S3Server", "NginxProxy", "aws_environment",
           "find_nginx", "free_port", "serve", "serve_store"]
