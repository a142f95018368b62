"""Store replicas: the compose file's proxy configuration run for real with nginx in front of two
store processes (results identical to local tables, both replicas serving, one replica stopped
without a failed request), and the client's own round robin and failover over replicas."""

from __future__ import annotations


import httpx
import numpy as np
import pytest
from conftest import free_port

from simclient.bench import NginxProxy, StoreProcess, find_nginx
from simclient.scenarios import Tables, get_scenario

NGINX = find_nginx()


def _ball(tables: Tables) -> dict:
    cls = get_scenario("bouncing-ball")
    s = cls().run(cls.Params(t_end=0.12), tables)
    return {k: s[k] for k in ("impacts", "max_indentation_m", "impact_times_s")}


@pytest.fixture(scope="module")
def replicas(sample_tables):
    stores = [StoreProcess(sample_tables), StoreProcess(sample_tables)]
    yield stores
    for s in stores:
        s.stop()


def _cache(url: str) -> dict:
    return httpx.get(f"{url}/v1/health", timeout=5).json()["cache"]


@pytest.mark.skipif(NGINX is None, reason="nginx is not installed (Debian: apt-get install nginx-light; .ci/run "
                    "installs it where it can)")
def test_nginx_proxy_over_two_replicas(sample_tables, replicas):
    """deploy/nginx.conf, its upstream pointed at two local store processes: the bouncing ball
    through the proxy equals the ball from the tables' folder, both replicas serve records, and with
    one replica stopped the proxy keeps answering."""
    with NginxProxy([s.url for s in replicas]) as proxy:
        before = [_cache(s.url)["misses"] + _cache(s.url)["hits"] for s in replicas]
        local = _ball(Tables(folder=str(sample_tables)))
        for _ in range(2):  # two processes' worth of requests: round robin gives both replicas a share
            assert _ball(Tables(store=proxy.url)) == local
        after = [_cache(s.url)["misses"] + _cache(s.url)["hits"] for s in replicas]
        assert all(a > b for a, b in zip(after, before)), (before, after)
        replicas[1].stop()
        for _ in range(5):
            r = httpx.get(f"{proxy.url}/v1/surfaces/ball_333/block?ri0=0&ri1=1&rj0=0&rj1=1", timeout=10)
            assert r.status_code == 200


def test_client_round_robin_and_failover(sample_tables):
    """``Tables(store="A,B")``: each process reads from one replica (by its process id), and opening
    a table falls over to the next replica when one does not answer."""
    live = StoreProcess(sample_tables)
    try:
        dead = f"http://127.0.0.1:{free_port()}"  # nobody listens there
        t = Tables(store=f"{dead},{live.url}")
        assert sorted(t.replicas()) == sorted([dead, live.url])
        src = t.open("ball", "ball_333")
        assert src.url.startswith(live.url)
        block = src.read_block(0, 1, 0, 1)
        from simclient.io import open_surface

        np.testing.assert_array_equal(block, open_surface(str(sample_tables / "ball_333.zarr")).read_block(0, 1, 0, 1))
        assert _ball(Tables(store=f"{live.url},{live.url}")) == _ball(Tables(folder=str(sample_tables)))
    finally:
        live.stop()
