"""Read-only views of the scheduler's state: ``QuotaSnapshot`` (``api.quota``) and events.

``take_snapshot`` builds the snapshot from the local log (the store's) and what the server
said (``ServerTruth``): per window the lower figure wins, and its source is named.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from asyncwifi._instant import format_instant
from asyncwifi.ratelimit._limits import Limits
from asyncwifi.ratelimit._log import bound

if TYPE_CHECKING:
    from asyncwifi.ratelimit._store import RateStore
    from asyncwifi.ratelimit._truth import ServerTruth

__all__ = [
    "QuotaSnapshot",
    "ThrottleEvent",
    "WindowSnapshot",
    "fmt_time",
    "take_snapshot",
]

Source = Literal["server", "local"]
ThrottleKind = Literal[
    "pause", "paced", "exact", "limit", "exhausted", "object", "fallback", "restored"
]


@dataclass(frozen=True, slots=True)
class ThrottleEvent:
    """Passed to ``on_throttle`` whenever the scheduler slows down, stops or recovers
    (``count``: the limit the server reported, for a "limit" event)."""

    kind: ThrottleKind
    at: float
    name: str = ""
    until: float | None = None
    reason: str = ""
    count: int | None = None


@dataclass(frozen=True, slots=True)
class WindowSnapshot:
    """One limit (or object quota) as known at ``QuotaSnapshot.taken_at``.

    ``remaining`` is the lower of the local log's figure and the server's last report for
    the current window; ``source`` says which one it is. ``reset_at`` is when the figure is
    fully back (the server's window end, or the newest logged admission plus the span);
    ``next_at`` is the earliest time one more request may go for this limit alone.
    """

    name: str
    limit: int | None
    remaining: int | None
    reset_at: float | None
    source: Source
    used: int | None = None
    next_at: float | None = None
    paced: bool = False


@dataclass(frozen=True, slots=True)
class QuotaSnapshot:
    """What the scheduler knows of the quota: limits, remaining per window, and from where."""

    taken_at: float
    limits: Limits
    windows: Mapping[str, WindowSnapshot] = field(default_factory=dict)
    objects: Mapping[str, WindowSnapshot] = field(default_factory=dict)
    #: no request is admitted before this time (a 429 named a reset), or None
    paused_until: float | None = None
    pause_reason: str = ""
    #: "paced" after an unexpected 429 (admissions evenly spaced), else "exact"
    mode: Literal["exact", "paced"] = "exact"
    paced_until: float | None = None
    #: the store in use ("memory", "redis", "redis-fallback")
    store: str = "memory"
    #: why the store runs a conservative local fallback, or None
    degraded: str | None = None
    in_flight: int = 0
    waiting: int = 0
    #: requests admitted by this scheduler so far and not given back: every request
    #: sent, logins and retries included
    admitted: int = 0

    @property
    def minute(self) -> WindowSnapshot | None:
        return self.windows.get("minute")

    @property
    def day(self) -> WindowSnapshot | None:
        return self.windows.get("day")


def fmt_time(t: float) -> str:
    """A clock time as UTC text for logs and errors."""
    try:
        return format_instant(t, "seconds")
    except (OverflowError, OSError, ValueError):
        return f"{t:.0f}"


def take_snapshot(
    now: float, limits: Limits, truth: ServerTruth, store: RateStore, hint: float, **counts: int
) -> QuotaSnapshot:
    """The quota as known at ``now``: per window the lower of the local figure (the store's
    log, the shared store's last counts, its last refusal ``hint``) and the server's report
    (``counts``: the scheduler's in_flight, waiting and admitted)."""
    log, caps, gate = store.log, truth.caps(now), truth.gate(now)[0]
    newest = log.times[-1] if log.times else None
    windows: dict[str, WindowSnapshot] = {}
    for w in log.specs:
        count = truth.specs[w.name].count
        used = min(max(log.used(now, w.span), store.seen.get(w.name, 0)), w.count)
        local = max(0, min(count, w.count) - used)
        next_at = max(gate, hint, bound([w], log.times)[0], now)
        reset_at = None if newest is None else newest + w.span
        source: Source = "local"
        remaining, server = local, caps.get(w.name)
        if server is not None and max(0, server[0]) <= local:
            remaining, reset_at, source = max(0, server[0]), server[1], "server"
            if remaining == 0:
                next_at = max(next_at, server[1])
        paced = w.name in truth.paced_until
        windows[w.name] = WindowSnapshot(
            w.name, count, remaining, reset_at, source, used, next_at, paced
        )
    objects = {
        name: WindowSnapshot(
            name, o.limit, o.remaining, o.window_end, "server", next_at=max(now, o.blocked_until)
        )
        for name, o in truth.objects.items()
        if now < o.window_end or o.blocked_until > now
    }
    paused = truth.pause_until > now
    return QuotaSnapshot(
        taken_at=now,
        limits=limits,
        windows=windows,
        objects=objects,
        paused_until=truth.pause_until if paused else None,
        pause_reason=truth.pause_reason if paused else "",
        mode="paced" if truth.paced_until else "exact",
        paced_until=max(truth.paced_until.values(), default=None),
        store=store.status,
        degraded=store.degraded,
        **counts,
    )
