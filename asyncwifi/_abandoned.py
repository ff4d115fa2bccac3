"""Answers whose callers left once their request was out (spec §8: what the server served is
exchanged, read or not): a stream's page fetched ahead when its consumer breaks. The request
goes on; its answer is read and counted in the background, and :meth:`Abandoned.settle`
waits for the stragglers (a stream's and a client's close)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["SETTLE_TIMEOUT", "Abandoned"]

#: the longest a close waits for answers its callers left (real seconds): an answer served
#: is counted if it comes by then; a server that does not answer cannot hold a stop
SETTLE_TIMEOUT = 5.0

R = TypeVar("R")


class Abandoned:
    """The answers being read after their callers left, each with the loop time after which
    a close no longer waits for it."""

    __slots__ = ("tasks",)

    def __init__(self) -> None:
        self.tasks: dict[asyncio.Task[None], float] = {}

    async def send(
        self,
        sending: Awaitable[R],
        then: Callable[[asyncio.Future[R]], Coroutine[Any, Any, None]],
    ) -> R:
        """``await sending``; if the caller is cancelled meanwhile, ``sending`` goes on and
        ``then(its future)`` runs in the background (the cancellation is raised)."""
        send = asyncio.ensure_future(sending)
        try:
            return await asyncio.shield(send)
        except asyncio.CancelledError:
            loop = asyncio.get_running_loop()
            task = loop.create_task(then(send))
            self.tasks[task] = loop.time() + SETTLE_TIMEOUT
            task.add_done_callback(self._done)
            raise

    def _done(self, task: asyncio.Task[None]) -> None:
        self.tasks.pop(task, None)

    async def settle(self) -> int:
        """Wait until every abandoned answer is read (and counted), each at most
        :data:`SETTLE_TIMEOUT` after its caller left (a stop stays prompt when the server
        does not answer); returns how many are still out (they go on being read in the
        background while the client is open)."""
        loop = asyncio.get_running_loop()
        while self.tasks and (left := max(self.tasks.values()) - loop.time()) > 0:
            await asyncio.wait(set(self.tasks), timeout=left)
        return len(self.tasks)

    def cancel(self) -> None:
        """Stop reading the answers still out (the client closes: its session goes)."""
        for task in list(self.tasks):
            task.cancel()
