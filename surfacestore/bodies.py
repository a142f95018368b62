"""How many large response bodies a store process builds and holds at once.

A body over :data:`LARGE_BODY` (a block or window of large records, a preview, a result series)
is built in the thread pool, at most :data:`LARGE_AT_ONCE` at a time; a large data body counts
against :data:`LARGE_IN_FLIGHT` from being built until its last byte is handed to the connection
(the data endpoints send it in pieces, each once the client has read the one before), so a client
that does not read holds one body and no more, until the write timeout closes its connection
(:mod:`surfacestore.server`). A second after the last large body in flight, the memory the
allocator kept free is handed back (:func:`surfacestore.runtime.release_memory`), so the process
returns to its cache and start-up size after a burst.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from surfacestore.runtime import release_memory

__all__ = ["LARGE_BODY", "LARGE_AT_ONCE", "LARGE_IN_FLIGHT", "BodyBudget"]

#: bodies larger than this (bytes) are built in the thread pool, and sent in pieces of this size
LARGE_BODY = 2**20
#: large bodies built at once
LARGE_AT_ONCE = 4
#: large data bodies held at once, from being built until sent
LARGE_IN_FLIGHT = 16


class BodyBudget:
    """The limits of the module docstring for one process (its semaphores are made on the serving
    loop, at first use)."""

    def __init__(self) -> None:
        self._building: asyncio.Semaphore | None = None
        self._held: asyncio.Semaphore | None = None
        self._in_flight = 0

    def building(self) -> asyncio.Semaphore:
        """Held while a large body is built."""
        if self._building is None:
            self._building = asyncio.Semaphore(LARGE_AT_ONCE)
        return self._building

    @asynccontextmanager
    async def held(self) -> AsyncIterator[None]:
        """Held while a large data body exists: from before it is built until it is sent."""
        if self._held is None:
            self._held = asyncio.Semaphore(LARGE_IN_FLIGHT)
        async with self._held:
            self._in_flight += 1
            try:
                yield
            finally:
                self._in_flight -= 1
                if not self._in_flight:
                    asyncio.get_running_loop().call_later(1.0, self._release)

    def _release(self) -> None:
        if not self._in_flight:  # (none has come since)
            asyncio.get_running_loop().run_in_executor(None, release_memory)
