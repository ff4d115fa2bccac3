"""What a sync keeps (issue 41): ``resources`` (events, contacts, hotspots, segments) and
``event_types``. A resource not selected is never read, so it costs no request and no
object, and the object plan budgets nothing for it; the event feed asks the server for the
selected types only (its objects are the records returned)."""

from __future__ import annotations

from collections.abc import Collection

from asyncwifi.errors import ValidationError

__all__ = ["RESOURCES", "event_types_of", "resources_of"]

#: every resource a sync can keep, in the order a pass reads them
RESOURCES = ("events", "contacts", "hotspots", "segments")


def _names(value: str | Collection[str], what: str) -> list[str]:
    """A comma-separated string or a collection of names, stripped, in order, once each."""
    names = value.split(",") if isinstance(value, str) else list(value)
    if not all(isinstance(n, str) for n in names):
        raise ValidationError(f"{what} must be names, got {value!r}")
    kept = list(dict.fromkeys(n.strip() for n in names if n.strip()))
    if not kept:
        raise ValidationError(f"{what} must name at least one (or be left unset: all)")
    return kept


def resources_of(value: str | Collection[str] | None) -> frozenset[str]:
    """The selected resources (None: every one); an unknown name is a ``ValidationError``."""
    if value is None:
        return frozenset(RESOURCES)
    kept = _names(value, "resources")
    unknown = [n for n in kept if n not in RESOURCES]
    if unknown:
        raise ValidationError(
            f"unknown resource {unknown[0]!r} in resources: {', '.join(RESOURCES)}"
        )
    return frozenset(kept)


def event_types_of(value: str | Collection[str] | None) -> tuple[str, ...] | None:
    """The selected event types (None: every type), as the events list's ``types``."""
    return None if value is None else tuple(_names(value, "event_types"))
