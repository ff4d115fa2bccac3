"""Scroll sessions, sans-I/O (spec §3, "Scroll session"; §4.2 and §4.5).

Every page is served with a new id. An id is a cursor: it names a session and the position
the next page starts at, and it expires ``ttl`` clock seconds after the request that issued
it (spec §3: a request more than ``ttl`` seconds later finds it expired; one exactly ``ttl``
later is still in time). An expired or unknown id answers like the end of the scroll (no
results), with a fresh id of its own; so does the latest id once the results are spent.
With ``single_use`` an id that was already used answers like an expired one (a retried page
is lost, as on servers whose cursors advance on the server side).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["Lookup", "ScrollRegistry", "ScrollSession"]


@dataclass(slots=True, eq=False)
class ScrollSession:
    """One scroll: a snapshot of the matching items and the page size fixed at its start."""

    kind: str
    items: Sequence[Any]
    size: int
    #: query parameters the session was opened with (events: for the size check)
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return len(self.items)


@dataclass(slots=True)
class _Entry:
    session: ScrollSession
    position: int
    expires: float
    used: bool = False


@dataclass(slots=True)
class Lookup:
    """What an id names at a given time."""

    status: Literal["ok", "expired", "unknown", "used"]
    session: ScrollSession | None = None
    position: int = 0


_FINISHED = ScrollSession("finished", (), 1)


class ScrollRegistry:
    """Issues and resolves scroll ids on the clock's time line."""

    __slots__ = ("_entries", "_salt", "_serial", "_sweep_at", "single_use", "ttl")

    def __init__(self, *, ttl: float, seed: int, single_use: bool = False) -> None:
        #: clock seconds an id stays valid after the request that issued it (spec §8: 60)
        self.ttl = ttl
        #: whether an id may be used only once
        self.single_use = single_use
        self._salt = f"scroll:{seed}:".encode()
        self._serial = 0
        self._entries: dict[str, _Entry] = {}
        self._sweep_at = 0

    def __len__(self) -> int:
        return len(self._entries)

    def issue(self, session: ScrollSession, position: int, now: float) -> str:
        """A new id for ``session`` at ``position``, valid until ``now + ttl``."""
        self._serial += 1
        digest = hashlib.sha256(self._salt + str(self._serial).encode()).digest()
        # shaped like an Elasticsearch scroll id: long, opaque, URL-safe base64
        sid = "FGluY2x1ZGVfY29udGV4dF91dWlk" + base64.urlsafe_b64encode(digest).decode()[:40]
        self._entries[sid] = _Entry(session, position, now + self.ttl)
        if len(self._entries) >= self._sweep_at:
            self._sweep(now)
        return sid

    def finished(self, now: float) -> str:
        """A fresh id that answers no results (sent with an end, expired or unknown page)."""
        return self.issue(_FINISHED, 0, now)

    def lookup(self, sid: str, now: float) -> Lookup:
        """Resolve ``sid`` at ``now``; an ``ok`` lookup marks the id used."""
        entry = self._entries.get(sid)
        if entry is None:
            return Lookup("unknown")
        if now > entry.expires:  # spec §3: "more than 60 seconds between two requests"
            return Lookup("expired", entry.session, entry.position)
        if entry.used and self.single_use:
            return Lookup("used", entry.session, entry.position)
        entry.used = True
        return Lookup("ok", entry.session, entry.position)

    def _sweep(self, now: float) -> None:
        """Forget ids long expired (kept a while so that a late request counts as expired)."""
        horizon = now - max(10 * self.ttl, 3600.0)
        self._entries = {k: e for k, e in self._entries.items() if e.expires > horizon}
        self._sweep_at = 2 * len(self._entries) + 1024
