"""A TCP proxy that tests cut and restore, to make a real server (Redis) go away mid-run."""

from __future__ import annotations

import asyncio
import contextlib

__all__ = ["CuttableProxy"]


class CuttableProxy:
    """Forwards 127.0.0.1:``port`` to 127.0.0.1:``target``; ``cut()`` drops every connection
    and refuses new ones until ``up`` is set again."""

    def __init__(self, target: int = 6379) -> None:
        self.target = target
        self.up = True
        self.port = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _pipe(self, r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, OSError):
            while data := await r.read(65536):
                w.write(data)
                await w.drain()
        w.close()

    async def _handle(self, r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        if not self.up:
            w.close()
            return
        ur, uw = await asyncio.open_connection("127.0.0.1", self.target)
        self._writers |= {w, uw}
        for t in (asyncio.create_task(self._pipe(r, uw)), asyncio.create_task(self._pipe(ur, w))):
            self._tasks.add(t)
            t.add_done_callback(self._tasks.discard)

    def cut(self) -> None:
        """Drop every connection; refuse new ones until ``up`` is True again."""
        self.up = False
        for w in self._writers:
            w.close()
        self._writers.clear()

    async def close(self) -> None:
        self.cut()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        for t in list(self._tasks):
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
