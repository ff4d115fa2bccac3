"""A TCP proxy that tests cut and restore, to make a real server (Redis, PostgreSQL) go away
mid-run."""

from __future__ import annotations

import asyncio
import contextlib

__all__ = ["CuttableProxy"]


class CuttableProxy:
    """Forwards 127.0.0.1:``port`` to 127.0.0.1:``target``; ``cut()`` drops every connection
    and refuses new ones until ``up`` is set again."""

    def __init__(self, target: int = 6379, *, cut_after: int | None = None) -> None:
        self.target = target
        self.up = True
        #: ``cut()`` by itself once more than this many bytes went towards the target
        #: (a server lost in the middle of a request); None: only when told
        self.cut_after = cut_after
        #: bytes forwarded towards the target so far
        self.sent = 0
        self.port = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _pipe(
        self, r: asyncio.StreamReader, w: asyncio.StreamWriter, upstream: bool = False
    ) -> None:
        with contextlib.suppress(ConnectionError, OSError):
            while data := await r.read(65536):
                if upstream:
                    self.sent += len(data)
                    if self.cut_after is not None and self.sent > self.cut_after:
                        self.cut()
                        break
                w.write(data)
                await w.drain()
        w.close()

    async def _handle(self, r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        if not self.up:
            w.close()
            return
        ur, uw = await asyncio.open_connection("127.0.0.1", self.target)
        if not self.up:  # cut while this one was connecting
            uw.close()
            w.close()
            return
        self._writers |= {w, uw}
        for pipe in (self._pipe(r, uw, upstream=True), self._pipe(ur, w)):
            t = asyncio.create_task(pipe)
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
