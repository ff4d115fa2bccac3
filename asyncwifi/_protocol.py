"""Sans-I/O pieces of a request: argument checks, query strings, path segments.

Nothing here does I/O or reads the time: every function takes what it needs, so the rules
(which argument is refused, how a value is written) are tested directly. What a response
means is :mod:`asyncwifi._response`'s.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Literal
from urllib.parse import quote

from asyncwifi import _rules
from asyncwifi._instant import format_instant, parse_timestamp
from asyncwifi.errors import AsyncWifiError, ValidationError

__all__ = [
    "EVENT_TYPES",
    "TAGS",
    "Tag",
    "build_query",
    "format_datetime",
    "is_share",
    "organization_segment",
    "path_segment",
    "request_tag",
    "require_positive",
    "require_share",
    "require_text",
]

# spec §4.5: the accepted values of the events API's `events` parameter
EVENT_TYPES: frozenset[str] = frozenset(_rules.EVENT_TYPES)

#: what a request asks for, as the limiter counts it (``Scheduler.used(tag)``): the
#: resources (spec §4.2-§4.5), the login and logout (§4.1), else "other". Each caller of the
#: pipeline passes the tag of what it asks; this is the vocabulary's one owner
Tag = Literal["contacts", "events", "hotspots", "segments", "login", "logout", "other"]
TAGS: tuple[Tag, ...] = ("contacts", "events", "hotspots", "segments", "login", "logout", "other")

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def require_text(value: object, what: str) -> str:
    """A non-empty string without control characters, else ``ValidationError``."""
    if not isinstance(value, str):
        raise ValidationError(f"{what} must be a string, got {type(value).__name__}")
    if not value.strip():
        raise ValidationError(f"{what} must not be empty")
    if _CONTROL.search(value):
        raise ValidationError(f"{what} must not contain control characters")
    return value


def require_positive(
    value: object,
    what: str,
    *,
    integer: bool = False,
    zero: bool = False,
    error: type[AsyncWifiError] = ValidationError,
) -> float:
    """``value``, a finite number > 0 (>= 0 with ``zero``; an ``int`` when ``integer``; never
    a bool), else ``error``: the one check of counts and seconds given as options."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or (integer and not isinstance(value, int))
        or not math.isfinite(value)
        or not (value >= 0 if zero else value > 0)
    ):
        kind = ("non-negative " if zero else "positive ") + ("integer" if integer else "number")
        raise error(f"{what} must be a finite {kind}, got {value!r}")
    return value


def require_share(
    value: object, what: str, *, error: type[AsyncWifiError] = ValidationError
) -> float:
    """``value``, a share in (0, 1] (never a bool: ``share=True`` is a mistake, not 100 %),
    else ``error``: the one check of the request share and the object share."""
    if not is_share(value):
        raise error(f"{what} must be within (0, 1], got {value!r}")
    return float(value)  # type: ignore[arg-type]  # is_share: a number


def is_share(value: object) -> bool:
    """Whether ``value`` is a share in (0, 1]: a number, not a bool."""
    return not isinstance(value, bool) and isinstance(value, int | float) and 0 < value <= 1


def path_segment(value: object, what: str) -> str:
    """Percent-encode an id into exactly one path segment.

    ``/``, ``?``, ``#``, ``%`` and every other reserved character are encoded, and ``.``/``..``
    (which URL normalisation would resolve to another endpoint) are encoded as ``%2E``: an id
    can never reach a path other than the one it is an id in.
    """
    text = require_text(value, what)
    encoded = quote(text, safe="-_~!$&'()*+,;=:@")
    if encoded in (".", ".."):
        encoded = encoded.replace(".", "%2E")
    return encoded


def organization_segment(given: str | None, default: str | None) -> str:
    """The ``{cid}`` of an organization path: the call's, else the client's, encoded."""
    organization = given or default
    if organization is None:
        raise ValidationError("no organization: pass organization= or set it on the Client")
    return path_segment(organization, "organization")


def format_datetime(value: object, what: str) -> str:
    """An ISO 8601 UTC timestamp with milliseconds (``2026-01-01T00:00:00.000Z``).

    Accepts timezone-aware ``datetime`` objects and ISO 8601 strings that carry a zone
    (``Z`` or an offset); naive values are refused because their zone would be a guess.
    """
    if isinstance(value, str):
        try:
            value = parse_timestamp(value, assume_utc=False)
        except ValueError:
            raise ValidationError(f"{what}: not an ISO 8601 timestamp: {value!r}") from None
    if not isinstance(value, datetime):
        raise ValidationError(f"{what} must be a datetime or an ISO 8601 string")
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValidationError(
            f"{what} has no time zone; pass an aware datetime or a string ending in Z"
        )
    return format_instant(value)


def _query_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | str):
        return str(value)
    if isinstance(value, datetime):
        return format_datetime(value, "query parameter")
    if isinstance(value, Iterable):
        return ",".join(_query_value(v) for v in value)
    raise ValidationError(f"cannot put a {type(value).__name__} in a query string")


def build_query(
    params: Mapping[str, object], extra: Mapping[str, object] | None = None
) -> dict[str, str]:
    """Query parameters as strings: ``None`` dropped, booleans as ``true``/``false``, lists
    comma-joined. ``extra`` (the caller's own parameters, for what the spec does not show)
    may not silently override a parameter the SDK sets."""
    query = {key: _query_value(val) for key, val in params.items() if val is not None}
    for key, val in (extra or {}).items():
        require_text(key, "extra parameter name")
        if key in query:
            raise ValidationError(f"extra parameter {key!r} collides with a named argument")
        if val is not None:
            query[key] = _query_value(val)
    return query


def request_tag(path: str) -> Tag:
    """The :data:`Tag` of the route ``path`` takes, by the route's words at their places
    (spec §4), never by a value in the path (a hotspot identifier "events-hall").

    The pipeline does not sniff it: each caller passes the tag of what it asks. This reads
    it back from a path where only the path is known (a check that the two agree)."""
    words = path.strip("/").split("/")[1:]  # the version dropped
    head = words[0] if words else ""
    if head == "sts":
        action = words[1] if len(words) > 1 else ""
        return "login" if action == "login" else "logout" if action == "logout" else "other"
    if head == "hotspots":
        return "hotspots"
    if head == "segments":
        return "segments"
    if head == "organizations":  # /v1/organizations/{cid}/events, .../customers/{id}/events
        return "events" if words[-1] == "events" else "other"
    if head == "customers":  # a contact's events are events; the rest of a contact, contacts
        return "events" if len(words) == 3 and words[2] == "events" else "contacts"
    return "other"
