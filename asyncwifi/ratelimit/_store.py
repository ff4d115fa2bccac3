"""Where the admission log lives: the ``RateStore`` plug-in and the in-process ``MemoryStore``:
"may one more go now, and if not, when?", admissions counted per tag, and the objects
exchanged per kind this UTC day and month, reserved before a request is sent and settled
by its answer (spec §8, ``_volume``, ``_reserve``)."""

from __future__ import annotations

import abc
import copy
from collections.abc import Mapping, Sequence
from typing import NamedTuple, TypeGuard

from asyncwifi.errors import ValidationError
from asyncwifi.ratelimit._keepalive import KeepAlive, blocked_until
from asyncwifi.ratelimit._limits import WindowSpec
from asyncwifi.ratelimit._log import Log, bound
from asyncwifi.ratelimit._truth import ThrottleEvent
from asyncwifi.ratelimit._volume import Grant, Ledger, ObjectCounts

__all__ = ["Answer", "MemoryStore", "RateStore"]


class Answer(NamedTuple):
    """A store's answer to "may one more go now?": admitted at clock time ``at`` under
    ``ticket`` (what a refund hands back), or, with no ticket, not before ``at`` because of
    ``why``: the window that holds it back, "pause" or "keepalive" ("": decide again)."""

    ticket: object | None
    at: float
    why: str = ""


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

    async def add_objects(
        self, now: float, kind: str, count: int, ticket: object = None
    ) -> ObjectCounts:
        """Count ``count`` objects of ``kind`` exchanged at ``now`` and end the reservation
        ``ticket`` (if any) in the same step; every user's counts of the UTC day and month
        after it."""
        self.ledger.holds.drop(ticket)
        return self.ledger.add(now, kind, count)

    async def reserve(
        self, now: float, kind: str, want: int, least: int, allowance: Mapping[str, int]
    ) -> Grant:
        """Hold up to ``want`` objects of ``kind`` (none if fewer than ``least`` are left)
        against ``allowance``, what was counted and every user's holds (``_volume.grant``)."""
        return self.ledger.reserve(self.ledger.read(now), kind, want, least, allowance)

    def release_objects(self, ticket: object) -> None:
        """End a reservation unused (its request failed or was never sent)."""
        self.ledger.holds.drop(ticket)

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

    def follow(self, event: ThrottleEvent, now: float) -> bool:
        """Carry out what the server's ``event`` asks of the log (a pause shared with other
        users, a lower count, paced mode); True when a window changed."""
        if event.kind == "pause" and event.until is not None:
            self.pause(event.until, now)
        elif event.kind in ("paced", "exact", "limit"):
            paced = None if event.kind == "limit" else event.kind == "paced"
            self.configure(event.name, count=event.count, paced=paced)
            return True
        return False

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

    @staticmethod
    def answers_as_itself(store: RateStore) -> TypeGuard[MemoryStore]:
        """Whether ``store`` is a ``MemoryStore`` that answers as this class does (no
        override of its answers): then it may be asked without a coroutine."""
        mine = type(store)
        return (
            isinstance(store, MemoryStore)
            and mine.acquire is MemoryStore.acquire
            and getattr(mine, "take", None) is MemoryStore.take
        )

    async def acquire(self, now: float, tag: str, keepalive: KeepAlive | None = None) -> Answer:
        return self.take(now, tag, keepalive)

    def take(self, now: float, tag: str, keepalive: KeepAlive | None = None) -> Answer:
        """``acquire`` without a coroutine: this store never waits for I/O."""
        refused = self.refusal(now, keepalive)
        return refused if refused is not None else Answer(self.note(now, tag, keepalive), now)

    def refusal(self, now: float, keepalive: KeepAlive | None = None) -> Answer | None:
        """Why one more admission (of ``keepalive``'s scroll, if given) may not go at ``now``
        (an answer with no ticket), or None: it may (:meth:`note` logs it)."""
        log, due = self.log, self.due
        free, why = bound(log.specs, log.times)
        if now < free:
            return Answer(None, free, why)
        if keepalive is None and not due:  # the hot path: no scroll to keep a place for
            return None
        if (at := blocked_until(log, due, now, keepalive)) > now:
            return Answer(None, at, "keepalive")
        return None

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
