"""The one base of every model, and the helpers all resources share.

Every model is a msgspec ``Struct`` with camelCase wire names, keyword-only construction,
defaults on every field (a field the server omits never fails decoding), unknown fields
tolerated (msgspec ignores them by default), ``omit_defaults`` so request bodies carry only
what the caller set, and ``gc=False`` because models never form reference cycles.
"""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec

__all__ = ["KeyValue", "Model", "parse_timestamp"]


class Model(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True, gc=False):
    """Base of every asyncwifi model (see the module docstring for why each option)."""


class KeyValue(Model):
    """A ``{key, value}`` pair (custom fields, geofence metadata)."""

    key: str | None = None
    #: a string in the documented shapes; numbers and booleans are accepted too, since a
    #: dashboard-defined custom field or geofence metadata may carry them (spec §6.2: not shown)
    value: str | int | float | bool | None = None


def parse_timestamp(value: str | float | int | None, *, assume_utc: bool = True) -> datetime | None:
    """Parse one of the API's timestamps into a ``datetime``.

    The API mixes shapes: ISO 8601 UTC (``2024-03-01T10:00:00Z``), with milliseconds
    (``...00.123Z``), with an offset, local business times with no zone
    (``2024-03-01T11:00:00``), bare dates, and epoch seconds in webhooks. A value with no
    zone is taken as UTC when ``assume_utc`` (the default), else returned naive (for the
    ``*Local`` / ``*Business`` fields, whose zone is the location's). ``None`` or an empty
    string gives ``None``; anything else that does not parse raises ``ValueError``.
    """
    if value is None or value == "":
        return None
    if isinstance(value, int | float):
        return datetime.fromtimestamp(float(value), tz=UTC)
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"not an ISO 8601 timestamp: {value!r}") from None
    if parsed.tzinfo is None and assume_utc:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed
