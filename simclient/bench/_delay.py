"""A TCP proxy on loopback that adds a fixed latency to every request: a store or a bucket "L ms
away", for the latency benchmark.

Each byte a client sends reaches the server ``delay_s`` after it was sent (chunks keep their
order and are delayed independently, as on a link with that one-way latency: requests in flight
at once overlap their delays, one after another they add up); replies come back at once. So one
HTTP request and its reply take one ``delay_s`` more than without the proxy, which is what a
client sees of a round trip to a distant server.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Self

__all__ = ["DelayProxy"]


class DelayProxy:
    """Forward ``127.0.0.1:port`` to ``upstream`` (``host:port``), every client-to-server chunk
    ``delay_s`` (s) late; ``url`` is ``http://127.0.0.1:port``. A context manager: the proxy runs
    in its own thread's event loop until the block ends."""

    def __init__(self, upstream: str, delay_s: float) -> None:
        host, _, port = upstream.removeprefix("http://").rstrip("/").rpartition(":")
        self.upstream, self.delay_s = (host, int(port)), float(delay_s)
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="delay-proxy", daemon=True)
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Self:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    def _serve(self) -> None:
        self._loop.run_until_complete(self._main())
        self._loop.close()

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        self._clients: set[asyncio.Task[None]] = set()
        server = await asyncio.start_server(self._client, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        await self._stop.wait()
        server.close()
        clients = list(self._clients)
        for t in clients:
            t.cancel()
        await asyncio.gather(*clients, return_exceptions=True)  # (each closes its connections)

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        me = asyncio.current_task()
        assert me is not None
        self._clients.add(me)
        try:
            await self._relay(reader, writer)
        finally:
            self._clients.discard(me)

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            writer.close()
            return
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()
        loop = asyncio.get_running_loop()

        async def receive() -> None:  # client -> queue, each chunk stamped with its arrival
            while chunk := await reader.read(65536):
                queue.put_nowait((loop.time() + self.delay_s, chunk))
            queue.put_nowait((loop.time() + self.delay_s, b""))

        async def deliver() -> None:  # queue -> server, each chunk at its time
            while True:
                due, chunk = await queue.get()
                await asyncio.sleep(max(due - loop.time(), 0.0))
                if not chunk:
                    up_writer.write_eof()
                    return
                up_writer.write(chunk)
                await up_writer.drain()

        async def reply() -> None:  # server -> client, at once
            while chunk := await up_reader.read(65536):
                writer.write(chunk)
                await writer.drain()
            writer.close()

        tasks = [asyncio.create_task(t()) for t in (receive, deliver, reply)]
        try:
            await asyncio.gather(*tasks)
        except (ConnectionError, OSError, asyncio.CancelledError):
            pass
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            writer.close()
            up_writer.close()
