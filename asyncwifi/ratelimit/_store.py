"""Where the admission log lives: the ``RateStore`` plug-in and the in-process ``MemoryStore``:
"may one more go now, and if not, when?", admissions counted per tag, and the objects
exchanged per kind this UTC day and month (spec §8, ``_volume``)."""

from __future__ import annotations

import abc
import copy
from collections.abc import Sequence

from asyncwifi.errors import ValidationError
from asyncwifi.ratelimit._keepalive import KeepAlive, blocked_until
from asyncwifi.ratelimit._limits import WindowSpec
from asyncwifi.ratelimit._log import Log, bound
from asyncwifi.ratelimit._volume import Ledger, ObjectCounts

__all__ = ["Answer", "MemoryStore", "RateStore"]

#: ``acquire``'s answer: ``(ticket, at, "")`` when admitted at clock time ``at``, else
#: ``(None, retry_at, why)``: the window that holds it back, "pause" or "keepalive"
Answer = tuple[object | None, float, str]


class RateStore(abc.ABC):
    """The admission log of one API key, shared by every scheduler that uses the store."""

    #: why the store runs a conservative local fallback, or None
    degraded: str | None = None

    def __init__(self) -> None:
        self.log = Log([])  # the windows' log as this process sees it (for estimates)
        self.seen: dict[str, int] = {}  # per window, what a shared log held at its answer
        self._shape: list[tuple[str, int, float]] | None = None
        self._users = 0
        self.ledger = Ledger()  # objects exchanged, in this process (a shared store: Redis)

    def bind(self, specs: Sequence[WindowSpec]) -> None:
        """Take on the windows to enforce (each scheduler using the store calls it)."""
        shape = [(s.name, s.count, s.span) for s in specs]
        if self._shape is None:
            self._shape = shape
            self._setup([copy.copy(s) for s in specs])
        elif shape != self._shape:
            raise ValidationError(
                "this store is already bound to different limits;"
                " give each set of limits its own store"
            )
        self._users += 1

    def attach(self) -> None:
        """Take on a user that only counts objects (a webhook receiver): the store stays
        open until that user detaches too (the last user closes it)."""
        self._users += 1

    def _setup(self, specs: list[WindowSpec]) -> None:
        self.log = Log(specs)

    async def detach(self) -> None:
        """A user (a scheduler, a receiver) is done with the store: the last one closes it."""
        self._users -= 1
        if self._users <= 0:
            await self.aclose()

    @abc.abstractmethod
    async def acquire(self, now: float, tag: str, keepalive: KeepAlive | None = None) -> Answer:
        """Admit one request tagged ``tag`` at clock time ``now`` if every window allows it
        (``keepalive``: the open scroll it belongs to, see ``_keepalive``)."""

    @abc.abstractmethod
    def refund(self, ticket: object, tag: str) -> None:
        """Give back an admission (``tag``'s) whose request was never sent."""

    @abc.abstractmethod
    def drop_keepalive(self, token: str) -> None:
        """A scroll ended: stop keeping a place for its next request."""

    @abc.abstractmethod
    async def tally(self, now: float, window: str) -> dict[str, int]:
        """Admissions per tag in ``window`` (its span up to ``now``), every user's."""

    async def add_objects(self, now: float, kind: str, count: int) -> ObjectCounts:
        """Count ``count`` objects of ``kind`` exchanged at ``now``; every user's counts of
        the UTC day and month after it."""
        return self.ledger.add(now, kind, count)

    async def object_counts(self, now: float) -> ObjectCounts:
        """Objects exchanged per kind this UTC day and month, every user's."""
        return self.ledger.read(now)

    def blank(self, span: float, own: int = 1) -> bool:
        """Whether the shortest window (``span``) held no admission but the latest ``own``
        (this user's since its quiet span) at the last answer: no user told the store of the
        key's recent spending (a cold start)."""
        if self.seen:  # a shared log's counts: the shortest window's is the least
            return min(self.seen.values()) <= own
        times = self.log.times
        return not times or self.log.used(times[-1], span) <= own

    def configure(self, name: str, *, count: int | None = None, paced: bool | None = None) -> None:
        """Lower a window's count (the server said so) or switch its paced mode."""
        self.log.configure(name, count, paced)

    def pause(self, until: float, now: float) -> None:  # noqa: B027 - optional hook
        """Share a server-ordered pause (until clock time ``until``) with other users."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release connections (no-op for in-process stores)."""

    @property
    def status(self) -> str:
        """What the quota snapshot calls the store: "memory" for a ``MemoryStore``."""
        return type(self).__name__.removesuffix("Store").lower()


class MemoryStore(RateStore):
    """The default: the admission log in this process, exact, without I/O. Several
    schedulers of one process may share one (one API key, several clients)."""

    def __init__(self) -> None:
        super().__init__()
        self.due: dict[str, float] = {}  # open scroll -> the latest time its next may go at

    async def acquire(self, now: float, tag: str, keepalive: KeepAlive | None = None) -> Answer:
        return self.take(now, tag, keepalive)

    def take(self, now: float, tag: str, keepalive: KeepAlive | None = None) -> Answer:
        """``acquire`` without a coroutine: this store never waits for I/O."""
        log, due = self.log, self.due
        free, why = bound(log.specs, log.times)
        if now < free:
            return None, free, why
        if keepalive is None and not due:  # the hot path: no scroll to keep a place for
            return log.record(now, tag), now, ""
        if (at := blocked_until(log, due, now, keepalive)) > now:
            return None, at, "keepalive"
        return self.note(now, tag, keepalive), now, ""

    def note(self, at: float, tag: str, keepalive: KeepAlive | None) -> float:
        """Log an admission at ``at`` unconditionally (a scroll's next is then due
        ``horizon`` later); returns the time logged."""
        t = self.log.record(at, tag)
        if keepalive is not None:
            self.due[keepalive.token] = t + keepalive.horizon
        return t

    def refund(self, ticket: object, tag: str) -> None:
        if isinstance(ticket, float):
            self.log.remove(ticket, tag)

    def drop_keepalive(self, token: str) -> None:
        self.due.pop(token, None)

    async def tally(self, now: float, window: str) -> dict[str, int]:
        return self.log.tally(now, self.log.spec(window).span)

    def __repr__(self) -> str:
        return f"MemoryStore({self.log!r})"
