"""Small helpers the simulator's modules share: timestamps, query parsing, deterministic ids."""

from __future__ import annotations

from datetime import UTC, date, datetime

from asyncwifi._instant import format_instant, read_instant

__all__ = [
    "BadParameter",
    "hex_id",
    "iso_ms",
    "iso_z",
    "mix",
    "parse_bool",
    "parse_instant",
    "parse_int",
    "to_epoch",
]

_MASK64 = (1 << 64) - 1


class BadParameter(ValueError):
    """A request parameter or body field is invalid: answered 409 with this message (spec §7)."""


def mix(*values: int) -> int:
    """A cheap, well-spread 64-bit hash of integers (splitmix64 steps), stable across runs."""
    h = 0x9E3779B97F4A7C15
    for v in values:
        h = (h ^ (v & _MASK64)) * 0xBF58476D1CE4E5B9 & _MASK64
        h = (h ^ (h >> 31)) * 0x94D049BB133111EB & _MASK64
        h ^= h >> 29
    return h


def hex_id(*values: int) -> str:
    """A 24-hex-digit id (the shape of the platform's ids) derived from ``values``."""
    return f"{mix(*values) << 32 | mix(*values, 0x5EED) >> 32:024x}"


_MINUTES: dict[int, str] = {}
_SSZ = [f"{s:02d}Z" for s in range(60)]


def iso_z(t: float) -> str:
    """``t`` (epoch seconds) as ISO 8601 UTC with whole seconds: ``2024-01-05T10:00:00Z``.

    Hot (called for every event encoded), so the part up to the minute is cached.
    """
    minute, second = divmod(int(t // 1), 60)
    prefix = _MINUTES.get(minute)
    if prefix is None:
        if len(_MINUTES) > 200_000:
            _MINUTES.clear()
        prefix = _MINUTES[minute] = format_instant(minute * 60, "seconds")[:-3]
    return prefix + _SSZ[second]


def iso_ms(t: float) -> str:
    """``t`` as ISO 8601 UTC with milliseconds: ``2024-01-05T10:00:00.123Z``."""
    return format_instant(t)


def to_epoch(value: datetime | date | str | float | int | None) -> float | None:
    """Epoch seconds from a datetime (naive = UTC), a date, an ISO string or a number."""
    if value is None:
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        return parse_instant(value, "value")
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value.timestamp()
    return datetime(value.year, value.month, value.day, tzinfo=UTC).timestamp()


def parse_instant(text: str, name: str) -> float:
    """Parse an ISO 8601 timestamp query value (spec §4.5: "ISO 8601 UTC timestamp").

    Accepts ``Z`` or a numeric offset, fractions of seconds, and a bare date (midnight
    UTC); a value with no zone is taken as UTC. Anything else is a 409.
    """
    raw = text.strip()
    try:
        if not raw or len(raw) > 40 or raw[0] not in "0123456789":
            raise ValueError(raw)
        return read_instant(raw).timestamp()
    except ValueError:
        raise BadParameter(f"{name} must be an ISO 8601 UTC timestamp, got {text!r}") from None


def parse_bool(text: str | None, name: str, default: bool = False) -> bool:
    """A boolean query parameter: ``true``/``false`` (any case) or ``1``/``0``; else 409."""
    if text is None:
        return default
    low = text.strip().lower()
    if low in ("true", "1"):
        return True
    if low in ("false", "0"):
        return False
    raise BadParameter(f"{name} must be true or false, got {text!r}")


def parse_int(text: str | None, name: str, default: int, low: int, high: int) -> int:
    """An integer query parameter within ``[low, high]``; else 409 naming the range."""
    if text is None:
        return default
    try:
        value = int(text.strip())
    except ValueError:
        raise BadParameter(f"{name} must be an integer from {low} to {high}") from None
    if not low <= value <= high:
        raise BadParameter(f"{name} must be an integer from {low} to {high}, got {value}")
    return value
