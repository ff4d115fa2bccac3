"""Where the admission log lives: the ``Store`` interface and the in-process ``MemoryStore``.

A store owns the sliding-window logs (what was admitted when). Everything the server said
(pauses, remaining counts, object quotas) stays in the scheduler; the store only answers
"may one more go now, and if not, when?" for its windows. ``MemoryStore`` answers
synchronously and exactly; a shared store (``RedisStore``) answers over the network.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from typing import NamedTuple

from asyncwifi.errors import ValidationError
from asyncwifi.ratelimit._keepalive import KeepAlive, KeepAlives
from asyncwifi.ratelimit._limits import WindowSpec
from asyncwifi.ratelimit._window import Windows

__all__ = ["MemoryStore", "Store", "WindowUsage"]


class WindowUsage(NamedTuple):
    """One window of a store as seen at a moment: how many used, and when it frees up."""

    limit: int
    used: int
    next_at: float
    reset_at: float | None


class Store(abc.ABC):
    """The admission log of one API key, shared by every scheduler that uses the store."""

    #: True when ``try_acquire`` answers synchronously and exactly (no I/O)
    synchronous: bool = False

    def __init__(self) -> None:
        self._listeners: list[Callable[[str, str], None]] = []

    def listen(self, callback: Callable[[str, str], None]) -> None:
        """Call ``callback(kind, reason)`` on "fallback" and "restored" (shared store health)."""
        self._listeners.append(callback)

    def unlisten(self, callback: Callable[[str, str], None]) -> bool:
        """Stop calling ``callback``; returns True when no listener is left."""
        if callback in self._listeners:
            self._listeners.remove(callback)
        return not self._listeners

    def _emit(self, kind: str, reason: str) -> None:
        for cb in list(self._listeners):
            cb(kind, reason)

    @abc.abstractmethod
    def bind(self, specs: Sequence[WindowSpec]) -> None:
        """Set the windows to enforce (called by each scheduler that uses the store)."""

    @abc.abstractmethod
    def configure(self, name: str, *, count: int | None = None, paced: bool | None = None) -> None:
        """Lower a window's count (the server said so) or switch its paced mode."""

    def try_acquire(self, now: float, keepalive: KeepAlive | None = None) -> object | None:
        """Synchronous admission (only when ``synchronous``): a ticket, or None."""
        raise NotImplementedError

    @abc.abstractmethod
    async def acquire(
        self, now: float, keepalive: KeepAlive | None = None
    ) -> tuple[object | None, float]:
        """Admit one at ``now``: ``(ticket, at)`` with ``at`` the time the admission was
        logged at (``now``, or later if the store's time line had moved on), or
        ``(None, t)``: retry at time ``t``. ``keepalive`` names the open scroll the request
        belongs to (see ``_keepalive``): its next request is then kept a place."""

    @abc.abstractmethod
    def drop_keepalive(self, token: str) -> None:
        """A scroll ended: stop keeping a place for its next request."""

    @abc.abstractmethod
    def next_free(self, now: float) -> tuple[float, str]:
        """Best local estimate of the next admission time and the window that sets it."""

    @abc.abstractmethod
    def refund(self, ticket: object) -> None:
        """Give back an admission whose request was never sent."""

    def pause(self, until: float, now: float) -> None:  # noqa: B027 - optional hook
        """Share a server-ordered pause (until clock time ``until``) with other users."""

    @abc.abstractmethod
    def project(self, now: float, k: int) -> list[float]:
        """Estimated times of the next ``k`` admissions, each as early as allowed."""

    @abc.abstractmethod
    def usage(self, now: float) -> dict[str, WindowUsage]:
        """Per window: count, used, next admission time, and when it is fully free again."""

    @property
    def status(self) -> str:
        """Short description for the quota snapshot ("memory", "redis", "redis-fallback")."""
        return type(self).__name__

    @property
    def degraded(self) -> str | None:
        """Why the store is running a conservative fallback, or None."""
        return None

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release connections (no-op for in-process stores)."""


def _check_specs(old: Sequence[WindowSpec], new: Sequence[WindowSpec]) -> None:
    if [(s.name, s.count, s.span) for s in old] != [(s.name, s.count, s.span) for s in new]:
        raise ValidationError(
            "this store is already bound to different limits; give each set of limits its own store"
        )


class MemoryStore(Store):
    """The default: the admission log in this process, exact and synchronous.

    One ``MemoryStore`` may be shared by several schedulers of the same process (one API
    key used by several clients); they then share one budget.
    """

    synchronous = True

    def __init__(self) -> None:
        super().__init__()
        self._specs: tuple[WindowSpec, ...] | None = None
        self._windows = Windows()
        self._keepalives = KeepAlives()

    def bind(self, specs: Sequence[WindowSpec]) -> None:
        if self._specs is not None:
            _check_specs(self._specs, specs)
            return
        self._specs = tuple(specs)
        self._windows = Windows.from_specs(specs)

    def configure(self, name: str, *, count: int | None = None, paced: bool | None = None) -> None:
        w = self._windows.get(name)
        if count is not None:
            w.count = max(1, min(w.count, count))
        if paced is not None:
            w.paced = paced
        self._windows.refresh()

    def try_acquire(self, now: float, keepalive: KeepAlive | None = None) -> float | None:
        if keepalive is None and not self._keepalives:
            return self._windows.try_admit(now)  # the hot path: no scroll is open
        return self._admit(now, keepalive)[0]

    async def acquire(
        self, now: float, keepalive: KeepAlive | None = None
    ) -> tuple[object | None, float]:
        return self._admit(now, keepalive)

    def _admit(self, now: float, keepalive: KeepAlive | None) -> tuple[float | None, float]:
        windows = self._windows
        if now < windows.free:
            return None, windows.free
        retry = self._keepalives.blocks(windows, now, keepalive)
        if retry is not None:
            return None, retry
        t = windows.record(now)
        self._keepalives.admitted(keepalive, t)
        return t, now

    def drop_keepalive(self, token: str) -> None:
        self._keepalives.drop(token)

    def force(self, now: float) -> float:
        """Log an admission without checking (merging admissions made elsewhere)."""
        return self._windows.record(now)

    def next_free(self, now: float) -> tuple[float, str]:
        return self._windows.next_free(now)

    def refund(self, ticket: object) -> None:
        if isinstance(ticket, float):
            self._windows.remove(ticket)

    def project(self, now: float, k: int) -> list[float]:
        return self._windows.project(now, k)

    def usage(self, now: float) -> dict[str, WindowUsage]:
        out: dict[str, WindowUsage] = {}
        for w in self._windows:
            used = w.used(now)
            newest = w.newest()
            out[w.name] = WindowUsage(
                w.count, used, w.next_free(now), None if newest is None else newest + w.span
            )
        return out

    @property
    def status(self) -> str:
        return "memory"

    def __repr__(self) -> str:
        return f"MemoryStore({', '.join(map(repr, self._windows))})"
