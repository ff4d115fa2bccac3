"""Local retention (issue 41): the operator's retention rule applied to the mirror, with 0
requests and 0 objects.

``retention`` seconds: a contact whose **activity** (its last change on the platform,
``modified``, else ``created``; ``retention_by="creation"``: ``created``) is older, and an
event whose time is older, are purged from the mirror at the end of every pass (SQLite
zeroes their bytes), and never written again: a re-read of them (a reconcile, a first run's
``since``) drops them before they land. Dead letters are purged once set aside that long
ago. Hotspots and segments hold no guest's data: retention leaves them. Times are the
client's clock (a scaled clock in tests).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from asyncwifi._instant import utc_time
from asyncwifi._protocol import require_positive
from asyncwifi.errors import ValidationError

if TYPE_CHECKING:
    from asyncwifi.engine._copy import Copier

__all__ = [
    "RETENTION_BY",
    "apply_retention",
    "check_retention",
    "contact_time",
    "recent_rows",
    "retention_sql",
]

#: what a contact's age is read from
RETENTION_BY = ("activity", "creation")


def check_retention(retention: float | None, by: str) -> None:
    """A retention (seconds, or None: none) and its basis, checked."""
    if retention is not None:
        require_positive(retention, "retention")
    if by not in RETENTION_BY:
        raise ValidationError(f"retention_by: activity or creation, got {by!r}")


def contact_time(by: str) -> str:
    """The SQL of a contact's age (both dialects)."""
    return "created" if by == "creation" else "coalesce(modified, created)"


def retention_sql(by: str, p: Sequence[str]) -> dict[str, str]:
    """The purges of a retention, by table, in placeholders ``p``: the organization, the
    cutoff (and the dead letters' cutoff for ``sync_dead_letters``)."""
    return {
        "contacts": f"DELETE FROM contacts WHERE organization_id = {p[0]} "
        f"AND {contact_time(by)} < {p[1]}",
        "events": f"DELETE FROM events WHERE organization_id = {p[0]} AND time < {p[1]}",
        "sync_dead_letters": f"DELETE FROM sync_dead_letters WHERE organization_id = {p[0]} "
        f"AND first_seen < {p[1]}",
    }


def _cutoff(now: float, retention: float) -> datetime:
    return datetime.fromtimestamp(now, UTC) - timedelta(seconds=retention)


def recent_rows(
    retention: float | None, by: str, resource: str, names: Sequence[str],
    rows: list[Sequence[object]], now: float,
) -> list[Sequence[object]]:  # fmt: skip
    """``rows`` (columns ``names``) of ``resource`` the retention keeps (all of them
    without one): those older than the cutoff are dropped before they land."""
    if retention is None or resource not in ("contacts", "events"):
        return rows
    cutoff = _cutoff(now, retention)
    if resource == "events":
        at = names.index("time")
        return [r for r in rows if not _older(r[at], cutoff)]
    created, modified = names.index("created"), names.index("modified")
    if by == "creation":
        return [r for r in rows if not _older(r[created], cutoff)]
    return [r for r in rows if not _older(r[modified] or r[created], cutoff)]


def _older(value: object, cutoff: datetime) -> bool:
    """Whether a row's time is before ``cutoff`` (a row of no time is kept)."""
    if isinstance(value, str):
        value = utc_time(value)
    return isinstance(value, datetime) and value < cutoff


async def apply_retention(copier: Copier) -> dict[str, int]:
    """Apply the copier's retention to its destination (retried as every write is): the
    rows purged by table (nothing without a retention)."""
    options = copier.options
    if options.retention is None:
        return {}
    cutoff = _cutoff(copier.api.clock.now(), options.retention)
    letters = datetime.now(UTC) - timedelta(seconds=options.retention)  # set aside: real time
    destination = copier.destination
    purged = await copier._retrying(
        lambda: destination.retain(cutoff, options.retention_by, letters)
    )
    for table, count in purged.items():
        copier.stats.rows[table] = copier.stats.rows.get(table, 0) + count
    return purged
