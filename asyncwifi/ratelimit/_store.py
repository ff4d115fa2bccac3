"""Where the admission log lives: the ``Store`` plug-in and the in-process ``MemoryStore``.

A store owns the sliding-window log (what was admitted when, under which tag) and answers
one question, asynchronously: "may one more go now, and if not, when?". Everything the
server said (pauses, remaining counts, object quotas) stays in the scheduler.
``MemoryStore`` answers exactly without I/O; ``RedisStore`` answers over the network.
"""

from __future__ import annotations

import abc
import copy
from collections.abc import Sequence
from typing import NamedTuple

from asyncwifi.errors import ValidationError
from asyncwifi.ratelimit._keepalive import KeepAlive, KeepAlives
from asyncwifi.ratelimit._limits import WindowSpec
from asyncwifi.ratelimit._log import Log, bound

__all__ = ["Answer", "MemoryStore", "Store", "WindowUsage"]

#: what ``Store.acquire`` answers: ``(ticket, at, "")`` when admitted at clock time ``at``
#: (``ticket`` gives it back), else ``(None, retry_at, why)``: ``why`` names the window
#: that holds it back, "pause" (a shared 429 pause) or "keepalive" (an open scroll's place)
Answer = tuple[object | None, float, str]


class WindowUsage(NamedTuple):
    """One window of a store as seen at a moment: how many used, and when it frees up."""

    limit: int
    used: int
    next_at: float
    reset_at: float | None


class Store(abc.ABC):
    """The admission log of one API key, shared by every scheduler that uses the store."""

    #: why the store runs a conservative local fallback, or None
    degraded: str | None = None

    def __init__(self) -> None:
        self._bound: list[tuple[str, int, float]] | None = None
        self._users = 0

    def bind(self, specs: Sequence[WindowSpec]) -> None:
        """Take on the windows to enforce (each scheduler using the store calls it)."""
        shape = [(s.name, s.count, s.span) for s in specs]
        if self._bound is not None and shape != self._bound:
            raise ValidationError(
                "this store is already bound to different limits;"
                " give each set of limits its own store"
            )
        if self._bound is None:
            self._bound = shape
            self._setup([copy.copy(s) for s in specs])
        self._users += 1

    async def detach(self) -> None:
        """A scheduler is done with the store: the last one closes it."""
        self._users -= 1
        if self._users <= 0:
            await self.aclose()

    @abc.abstractmethod
    def _setup(self, specs: list[WindowSpec]) -> None:
        """Build the log for ``specs`` (this store's own copies)."""

    @abc.abstractmethod
    async def acquire(self, now: float, tag: str, keepalive: KeepAlive | None = None) -> Answer:
        """Admit one request tagged ``tag`` at clock time ``now`` if every window allows it.
        ``keepalive`` names the open scroll the request belongs to (see ``_keepalive``)."""

    @abc.abstractmethod
    def configure(self, name: str, *, count: int | None = None, paced: bool | None = None) -> None:
        """Lower a window's count (the server said so) or switch its paced mode."""

    @abc.abstractmethod
    def refund(self, ticket: object, tag: str) -> None:
        """Give back an admission (``tag``'s) whose request was never sent."""

    @abc.abstractmethod
    def drop_keepalive(self, token: str) -> None:
        """A scroll ended: stop keeping a place for its next request."""

    @abc.abstractmethod
    def project(self, now: float, k: int) -> list[float]:
        """Estimated times of the next ``k`` admissions, each as early as allowed."""

    @abc.abstractmethod
    def usage(self, now: float) -> dict[str, WindowUsage]:
        """Per window: count, used, next admission time, and when it is fully free again."""

    @abc.abstractmethod
    async def tally(self, now: float, window: str) -> dict[str, int]:
        """Admissions per tag in ``window`` (the span up to ``now``), every user's."""

    def pause(self, until: float, now: float) -> None:  # noqa: B027 - optional hook
        """Share a server-ordered pause (until clock time ``until``) with other users."""

    @property
    def status(self) -> str:
        """Short description for the quota snapshot ("memory", "redis", "redis-fallback")."""
        return type(self).__name__

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release connections (no-op for in-process stores)."""


class MemoryStore(Store):
    """The default: the admission log in this process, exact, without I/O.

    One ``MemoryStore`` may be shared by several schedulers of the same process (one API
    key used by several clients); they then share one budget.
    """

    def __init__(self) -> None:
        super().__init__()
        self.log = Log([])
        self.keepalives = KeepAlives()

    def _setup(self, specs: list[WindowSpec]) -> None:
        self.log = Log(specs)

    async def acquire(self, now: float, tag: str, keepalive: KeepAlive | None = None) -> Answer:
        log = self.log
        if now < log.free:
            return None, log.free, log.why
        if keepalive is not None or self.keepalives.due:
            retry = self.keepalives.blocks(log, now, keepalive)
            if retry is not None:
                return None, retry, "keepalive"
        t = log.record(now, tag)
        if keepalive is not None:
            self.keepalives.admitted(keepalive, t)
        return t, now, ""

    def note(self, at: float, tag: str, keepalive: KeepAlive | None) -> float:
        """Log an admission made elsewhere (by the shared store this one stands in for)."""
        self.keepalives.admitted(keepalive, at)
        return self.log.record(at, tag)

    def configure(self, name: str, *, count: int | None = None, paced: bool | None = None) -> None:
        w = self.log.spec(name)
        if count is not None:
            w.count = max(1, min(w.count, count))
        if paced is not None:
            w.paced = paced
        self.log.refresh()

    def refund(self, ticket: object, tag: str) -> None:
        if isinstance(ticket, float):
            self.log.remove(ticket, tag)

    def drop_keepalive(self, token: str) -> None:
        self.keepalives.drop(token)

    def project(self, now: float, k: int) -> list[float]:
        return self.log.project(now, k)

    def usage(self, now: float) -> dict[str, WindowUsage]:
        log, out = self.log, {}
        for w in log.specs:
            free, _ = bound([w], log.times)
            newest = log.times[-1] if log.times else None
            reset = None if newest is None else newest + w.span
            out[w.name] = WindowUsage(w.count, log.used(now, w.span), max(free, now), reset)
        return out

    async def tally(self, now: float, window: str) -> dict[str, int]:
        return self.log.tally(now, self.log.spec(window).span)

    @property
    def status(self) -> str:
        return "memory"

    def __repr__(self) -> str:
        return f"MemoryStore({self.log!r})"
