"""Type information of the package: its public names (loaded on first use, see __init__)."""

from ._registry import BENCHES as BENCHES, Bench as Bench, TableBuilder as TableBuilder
from ._server import (
    NginxProxy as NginxProxy, S3Server as S3Server, ServerProcess as ServerProcess, StoreProcess as StoreProcess,
    aws_environment as aws_environment, find_nginx as find_nginx, free_port as free_port, serve as serve,
    serve_store as serve_store,
)

__all__ = ["BENCHES", "Bench", "TableBuilder", "ServerProcess", "StoreProcess", "S3Server", "NginxProxy", "aws_environment",
           "find_nginx", "free_port", "serve", "serve_store"]
