"""Objects (spec §8) as the command says them: what a job will spend against what is left of
the month's allowance.

The month-to-date count is the limiter's (its store's ``objects``, through a
:class:`~asyncwifi.ratelimit.Scheduler`): with ``--rate-store`` it is every process's of the
key, read from Redis (reading it is not an API request); without a shared store only this
process's count is known, and a command that has not run yet has exchanged nothing, so
nothing is known of the month. The allowance is ``--allowance`` (ASYNCWIFI_ALLOWANCE),
checked by the limiter's rule (``Limits.month``). Nothing here counts objects itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from asyncwifi._client import ALLOWANCE_ENV
from asyncwifi._clock import Clock
from asyncwifi._instant import format_instant
from asyncwifi.ratelimit import ALL, KINDS, VolumeSnapshot

if TYPE_CHECKING:
    from asyncwifi._client import Client
    from asyncwifi.cli._progress import Display

__all__ = [
    "NO_ALLOWANCE",
    "Standing",
    "client_standing",
    "contacts_plan",
    "left_for",
    "month_standing",
    "objects_lines",
    "objects_report",
]

#: why a count of this process alone says nothing of the month
_UNSHARED = (
    "without a shared --rate-store only this process's count is known, and it has exchanged nothing"
)

#: what a report says when no allowance was given, and how to give one
NO_ALLOWANCE = f"allowance unknown (--allowance or {ALLOWANCE_ENV})"


def left_for(volume: VolumeSnapshot, kind: str) -> int | None:
    """What the month's allowance leaves for objects of ``kind``: the least of what its
    own figure and the every-kind figure leave (the limiter holds a request back on either);
    None when neither is known."""
    left = [n for k in (ALL, kind) if (n := volume.remaining(k)) is not None]
    return min(left) if left else None


def _bound(volume: VolumeSnapshot, kind: str) -> int | None:
    """The allowance that applies to ``kind`` (the least of its figures), None if none."""
    figures = [volume.allowance[k] for k in (ALL, kind) if k in volume.allowance]
    return min(figures) if figures else None


@dataclass(frozen=True, slots=True)
class Standing:
    """The month's objects as the limiter's store holds them, against the allowance.

    ``volume`` is the limiter's snapshot (its counts empty when nothing was read);
    ``unread`` says why the month-to-date count is not known (None: it was read from a
    shared store, every process's).
    """

    volume: VolumeSnapshot
    unread: str | None = None

    def left(self, kind: str) -> int | None:
        """Objects of ``kind`` left this month; None when unknown (no allowance, or no count)."""
        return None if self.unread is not None else left_for(self.volume, kind)

    def at_most(self, kind: str) -> int | None:
        """Left this month, or, when the count is unknown, the whole allowance (what is left
        is no more than that); None without an allowance."""
        left = self.left(kind)
        return left if left is not None else _bound(self.volume, kind)

    def describe(self, kind: str) -> str:
        """The allowance and what is left of it, in words (for a dry run's or a plan's line)."""
        volume = self.volume
        bound = _bound(volume, kind)
        if bound is None:
            return NO_ALLOWANCE
        resets = format_instant(volume.resets_at, "seconds") if volume.resets_at else "?"
        if self.unread is not None:
            return (
                f"at most {bound:,} left of the month's allowance of {bound:,} "
                f"(month-to-date unknown: {self.unread}; resets {resets})"
            )
        left = self.left(kind)
        assert left is not None
        used = volume.used
        return (
            f"{left:,} left of the month's allowance of {bound:,} ({used:,} exchanged this "
            f"month by every user of the key, read from the rate store; resets {resets})"
        )

    def fields(self, kind: str) -> dict[str, object]:
        """The same, for a JSON report."""
        volume = self.volume
        return {
            "objects_allowance": dict(volume.allowance) or None,
            "objects_month": None if self.unread is not None else volume.used,
            "objects_left_month": self.left(kind),
            "objects_month_unknown": self.unread,
            "objects_month_resets_at": (
                format_instant(volume.resets_at, "seconds") if volume.resets_at else None
            ),
        }

    def excess(self, objects: int, kind: str) -> str | None:
        """The warning when a job's ``objects`` exceed what is left (or, the count unknown,
        the whole allowance); None when they fit or nothing is known."""
        limit = self.at_most(kind)
        if limit is None or objects <= limit:
            return None
        what = "left this month" if self.left(kind) is not None else "in the month's allowance"
        return (
            f"the job's {objects:,} objects exceed the {limit:,} {what}: past it, requests "
            "for objects are held back until the 1st (and, without an overage subscription, "
            "the platform enforces a hard threshold the next month: spec §8)"
        )


async def month_standing(
    allowance: Mapping[str, int],
    *,
    rate_store: str | None,
    client_key: str | None,
    clock: Clock | None = None,
) -> Standing:
    """The month's standing read from the limiter's store: shared (``rate_store``, named by
    ``client_key``) or, without one, nothing read; on ``clock`` (a simulated run's: its
    month), else the system's."""
    from asyncwifi.cli._config import shared_store
    from asyncwifi.ratelimit import Limits, Scheduler

    limits = Limits(month=allowance or None)
    if rate_store is None or client_key is None:
        why = _UNSHARED if rate_store is None else "no client key to name the shared store"
        async with Scheduler(limits, clock=clock) as scheduler:
            return Standing(scheduler.quota.volume, why)
    store = shared_store(rate_store, client_key)
    assert store is not None
    async with Scheduler(limits, store=store, clock=clock) as scheduler:
        await scheduler.objects()
        volume, degraded = scheduler.quota.volume, store.degraded
    if degraded is not None:
        return Standing(volume, "the rate store could not be read")
    return Standing(volume)


async def client_standing(api: Client, *, shared: bool) -> Standing:
    """The month's standing as an open client's limiter holds it, read from its store now
    (not a request): every process's with a ``shared`` store that answered, else only this
    process's, which has exchanged nothing yet. Read before a job starts, it is also where
    the job's own objects are counted from (the progress lines)."""
    await api.scheduler.objects()
    volume = api.quota.volume
    if not shared:
        return Standing(volume, _UNSHARED)
    if api.scheduler.store.degraded is not None:
        return Standing(volume, "the rate store could not be read")
    return Standing(volume)


def contacts_plan(display: Display, standing: Standing) -> None:
    """``contacts export``'s plan line: its objects (spec §8: each contact read once; the
    API has no count, so their number is learnt as they are read) against what is left of
    the month; a warning when nothing is."""
    display.info(
        "plan",
        "plan: every contact, each read once: one object per contact (their number is "
        f"learnt as they are read); {standing.describe('contacts')}",
        **standing.fields("contacts"),
    )
    if standing.left("contacts") == 0:
        display.warning(
            "objects",
            "nothing is left of the month's object allowance: requests for contacts stop "
            "until the 1st",
        )


def objects_report(volume: VolumeSnapshot, standing: Standing) -> dict[str, Any]:
    """``asyncwifi quota``'s objects: this UTC month's and today's by kind (the limiter's
    counts), the allowance and what is left of it, when the month resets, and whose counts
    these are."""
    kinds = [*KINDS, *sorted((set(volume.this_month) | set(volume.today)) - set(KINDS))]
    rows: list[dict[str, Any]] = [
        {
            "kind": kind,
            "this_month": volume.this_month.get(kind, 0),
            "today": volume.today.get(kind, 0),
            "allowance": volume.allowance.get(kind),
            "left": volume.remaining(kind),
        }
        for kind in kinds
    ]
    rows.append(
        {
            "kind": ALL,
            "this_month": volume.used,
            "today": sum(volume.today.values()),
            "allowance": volume.allowance.get(ALL),
            "left": volume.remaining(ALL),
        }
    )
    return {
        "month": volume.month,
        "resets_at": format_instant(volume.resets_at, "seconds") if volume.resets_at else None,
        "by_kind": rows,
        "allowance": dict(volume.allowance) or None,
        "counted_by": _counted_by(standing),
        "note": None if volume.allowance else _GIVE_ONE,
    }


_GIVE_ONE = (
    f"no allowance known: give the month's with --allowance or {ALLOWANCE_ENV} (objects, "
    "'10 access points' or '2000 contacts')"
)


def _counted_by(standing: Standing) -> str:
    if standing.unread is None:
        return "every user of the key (the rate store)"
    if standing.unread == _UNSHARED:
        return "this process alone (no --rate-store: other processes' objects are not known here)"
    return f"this process alone ({standing.unread})"


def objects_lines(report: Mapping[str, Any]) -> list[str]:
    """The lines under ``quota --format table``'s objects table."""
    lines = [
        f"objects of {report['month']} (UTC), counted by {report['counted_by']}; the month "
        f"resets at {report['resets_at']}"
    ]
    if report["note"]:
        lines.append(report["note"])
    return lines
