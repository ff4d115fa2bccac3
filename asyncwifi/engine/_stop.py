"""How a stop ends the copy loop: every wait cut short, never a transaction (the one rule).

:class:`StopSwitch` is the copy loop's stop: :meth:`~StopSwitch.stop` sets it, and every
wait the loop makes goes through :meth:`~StopSwitch._unless_stopped`, which cancels the
wait (a request in backoff, a budget's wait, a sleep) and raises :class:`Stopped`; the
public steps end quietly on it (:func:`stoppable`). A feed is read through
:meth:`~StopSwitch._until_stopped`: closed between transactions, and with a
:class:`~asyncwifi.engine._room.PageRoom`, fetched only when the job has room for a page.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

from asyncwifi.engine._feeds import Batch
from asyncwifi.engine._room import PageRoom

__all__ = ["StopSwitch", "Stopped", "stoppable"]

T = TypeVar("T")
P = ParamSpec("P")


class Stopped(Exception):
    """A wait cut short by :meth:`StopSwitch.stop`; the public methods end quietly on it."""


class _Draining(Protocol):
    def _total(self) -> int: ...

    async def drain(self) -> None: ...


C = TypeVar("C", bound=_Draining)


def stoppable(
    method: Callable[Concatenate[C, P], Coroutine[Any, Any, int]],
) -> Callable[Concatenate[C, P], Coroutine[Any, Any, int]]:
    """A step that a stop ends early (``Stopped``): it returns the rows changed so far,
    once the writes in flight settled."""

    @functools.wraps(method)
    async def run(self: C, /, *args: P.args, **kwargs: P.kwargs) -> int:
        before = self._total()
        try:
            return await method(self, *args, **kwargs)
        except Stopped:
            await self.drain()
            return self._total() - before

    return run


class StopSwitch:
    """The stop of a copy loop and the one rule of cutting its waits short."""

    def __init__(self) -> None:
        self._stopping = asyncio.Event()

    def stop(self) -> None:
        """End the sync after the transaction in progress (if any)."""
        self._stopping.set()

    @property
    def stopping(self) -> bool:
        """Whether :meth:`stop` was called."""
        return self._stopping.is_set()

    async def _unless_stopped(self, wait: Callable[[], Awaitable[T]]) -> T:
        """``await wait()`` unless :meth:`stop` comes first: then it is cancelled (and has
        cleaned up) and ``Stopped`` is raised. The one rule for a stop cutting a wait
        short: around requests and sleeps, never around a transaction."""
        if self._stopping.is_set():
            raise Stopped

        async def waiting() -> T:
            return await wait()

        task = asyncio.ensure_future(waiting())
        stopper = asyncio.ensure_future(self._stopping.wait())
        try:
            await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopper.cancel()
            if not task.done():
                task.cancel()
                await asyncio.wait({task})
            if task.done() and not task.cancelled():
                # its error is raised below, or (this wait cancelled: a sibling failed with
                # the same cause) already reported by whoever failed first: never "never
                # retrieved"
                task.exception()
        if task.cancelled():
            raise Stopped
        return task.result()  # done first: its outcome, even when a stop came meanwhile

    async def _until_stopped(
        self, batches: AsyncIterator[Batch[Any]], room: PageRoom | None = None
    ) -> AsyncIterator[Batch[Any]]:
        """``batches`` until a stop is asked: then the feed is closed between transactions
        (the fetch of the next batch is cancelled: a request in backoff, a poll's sleep).
        With a ``room``, a place is taken before each fetch; the caller gives it back."""
        try:
            while True:
                try:
                    if room is not None:
                        await self._unless_stopped(room.take)
                except Stopped:
                    return
                try:
                    batch = await self._unless_stopped(lambda: anext(batches, None))
                except BaseException as exc:
                    if room is not None:
                        room.give()
                    if isinstance(exc, Stopped):
                        return
                    raise
                if batch is None:
                    if room is not None:
                        room.give()
                    return
                handed, batch = [batch], None  # handed out, not held while suspended
                yield handed.pop()
                if self._stopping.is_set():
                    return
        finally:
            aclose = getattr(batches, "aclose", None)
            if aclose is not None:
                await aclose()
