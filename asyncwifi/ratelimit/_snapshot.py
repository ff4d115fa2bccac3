"""Read-only views of the scheduler's state: ``QuotaSnapshot`` (``api.quota``) and events."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from asyncwifi.ratelimit._limits import Limits

__all__ = ["QuotaSnapshot", "ThrottleEvent", "WindowSnapshot"]

Source = Literal["server", "local"]


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

    @property
    def minute(self) -> WindowSnapshot | None:
        return self.windows.get("minute")

    @property
    def day(self) -> WindowSnapshot | None:
        return self.windows.get("day")


ThrottleKind = Literal[
    "pause", "paced", "exact", "limit", "exhausted", "object", "fallback", "restored"
]


@dataclass(frozen=True, slots=True)
class ThrottleEvent:
    """Passed to ``on_throttle`` whenever the scheduler slows down, stops or recovers."""

    kind: ThrottleKind
    at: float
    name: str = ""
    until: float | None = None
    reason: str = ""
