"""A read-only view of the scheduler's state: ``QuotaSnapshot`` (``api.quota``), taken from
the local log and what the server said (``_truth``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from asyncwifi._instant import period_end, utc_period
from asyncwifi.ratelimit._limits import Limits

if TYPE_CHECKING:
    from asyncwifi.ratelimit._store import RateStore
    from asyncwifi.ratelimit._truth import ServerTruth
    from asyncwifi.ratelimit._volume import Volume

__all__ = ["QuotaSnapshot", "VolumeSnapshot", "WindowSnapshot", "take_snapshot"]

Source = Literal["server", "local"]
Mode = Literal["exact", "paced"]


@dataclass(frozen=True, slots=True)
class WindowSnapshot:
    """One limit (or object quota): ``remaining``, the lower of the local log's figure and
    the server's last report (``source`` says which), back in full at ``reset_at``."""

    name: str
    limit: int | None
    remaining: int | None
    reset_at: float | None
    source: Source
    used: int | None = None


@dataclass(frozen=True, slots=True)
class VolumeSnapshot:
    """Objects exchanged per kind this UTC ``month`` and ``day`` (what the store last said:
    every process's with a shared store), the month's ``allowance`` per kind (``"all"``:
    every kind together; empty when none is known) and when the month resets."""

    month: str = ""
    this_month: Mapping[str, int] = field(default_factory=dict)
    today: Mapping[str, int] = field(default_factory=dict)
    allowance: Mapping[str, int] = field(default_factory=dict)
    resets_at: float | None = None

    @property
    def used(self) -> int:
        """Objects of every kind this month."""
        return sum(self.this_month.values())

    def remaining(self, kind: str = "all") -> int | None:
        """What the allowance of ``kind`` (``"all"``: every kind) leaves this month; None
        when no allowance is known for it."""
        if kind not in self.allowance:
            return None
        used = self.used if kind == "all" else self.this_month.get(kind, 0)
        return max(0, self.allowance[kind] - used)


@dataclass(frozen=True, slots=True)
class QuotaSnapshot:
    """What the scheduler knows of the quota: remaining per window and from where, a 429's
    pause, "paced" after an unexpected 429, the store (and why it runs a local fallback), the
    requests this scheduler admitted and did not give back (logins, retries included), and
    the objects exchanged this month against its allowance (``volume``)."""

    taken_at: float
    limits: Limits
    windows: Mapping[str, WindowSnapshot] = field(default_factory=dict)
    objects: Mapping[str, WindowSnapshot] = field(default_factory=dict)
    paused_until: float | None = None
    mode: Mode = "exact"
    store: str = "memory"
    degraded: str | None = None
    admitted: int = 0
    volume: VolumeSnapshot = field(default_factory=VolumeSnapshot)

    @property
    def minute(self) -> WindowSnapshot | None:
        return self.windows.get("minute")

    @property
    def day(self) -> WindowSnapshot | None:
        return self.windows.get("day")


def take_snapshot(
    now: float,
    limits: Limits,
    truth: ServerTruth,
    store: RateStore,
    admitted: int,
    volume: Volume | None = None,
) -> QuotaSnapshot:
    """The quota at ``now``: per window the lower of the local figure and the server's."""
    log, caps = store.log, truth.caps(now)
    windows = {}
    for w in log.specs:
        count = truth.specs[w.name].count
        used = min(max(log.used(now, w.span), store.seen.get(w.name, 0)), w.count)
        left = max(0, min(count, w.count) - used)
        reset_at = log.times[-1] + w.span if log.times else None
        source: Source = "local"
        if (cap := caps.get(w.name)) is not None and max(0, cap.left) <= left:
            left, reset_at, source = cap.left, cap.end, "server"
        windows[w.name] = WindowSnapshot(w.name, count, max(0, left), reset_at, source, used)
    objects = {
        name: WindowSnapshot(name, o.limit, o.remaining, o.window_end, "server")
        for name, o in truth.objects.items()
        if now < o.window_end or o.blocked_until > now
    }
    paused = truth.pause_until if truth.pause_until > now else None
    mode: Mode = "paced" if truth.paced_until else "exact"
    seen = volume.counts.at(now) if volume is not None and volume.counts is not None else None
    month = VolumeSnapshot(
        utc_period(now, "month"),
        dict(seen.this_month) if seen is not None else {},
        dict(seen.today) if seen is not None else {},
        dict(limits.allowance),
        period_end(now, "month"),
    )
    return QuotaSnapshot(
        now, limits, windows, objects, paused, mode, store.status, store.degraded, admitted, month
    )
