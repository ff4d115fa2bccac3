"""The limits a scheduler enforces: ``Limit(count, period)`` and the ``Limits`` pair.

spec §8: 60 requests per minute and 15,000 per day per account. Any count and period are
accepted so that tests and the simulator can run the same shapes faster (``Limit(60, 0.6)``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from asyncwifi.errors import ValidationError

__all__ = ["DAY", "MINUTE", "Limit", "Limits", "WindowSpec"]

#: reference periods the configured margins are written for (spec §8)
MINUTE = 60.0
DAY = 86_400.0


@dataclass(frozen=True, slots=True)
class Limit:
    """At most ``count`` requests in any ``period`` seconds (of the scheduler's clock)."""

    count: int
    period: float

    def __post_init__(self) -> None:
        if isinstance(self.count, bool) or not isinstance(self.count, int) or self.count < 1:
            raise ValidationError(f"Limit count must be an integer >= 1, got {self.count!r}")
        if isinstance(self.period, bool) or not isinstance(self.period, int | float):
            raise ValidationError(f"Limit period must be a number of seconds, got {self.period!r}")
        if not math.isfinite(self.period) or self.period <= 0:
            raise ValidationError(f"Limit period must be finite and > 0, got {self.period!r}")
        object.__setattr__(self, "period", float(self.period))

    @property
    def interval(self) -> float:
        """Seconds between two admissions when paced evenly: ``period / count``."""
        return self.period / self.count


@dataclass(frozen=True, slots=True)
class WindowSpec:
    """One enforced window: at most ``count`` admissions in any ``span`` = period + margin."""

    name: str
    count: int
    period: float
    margin: float
    span: float = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "span", self.period + self.margin)


def _check_margin(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(f"{name} must be a number of seconds, got {value!r}")
    if not math.isfinite(value) or value < 0:
        raise ValidationError(f"{name} must be finite and >= 0, got {value!r}")
    return float(value)


@dataclass(frozen=True, slots=True)
class Limits:
    """The minute and day limits of one API key, with safety margins in seconds.

    The gateway counts a request when it arrives, the client when it sends it; the margin
    widens each window the client enforces (N in any ``period + margin``) so that network
    jitter never puts N + 1 into one server window. Margins are written for the real
    periods (60 s and 86,400 s) and **scale with the period**: the margin applied to a limit
    is ``margin * min(1, period / reference)``, so ``Limit(60, 0.6)`` gets 0.01 s, exactly as
    a 100x faster clock would see the production setup. Either limit may be ``None``.
    """

    minute: Limit | None = Limit(60, MINUTE)
    day: Limit | None = Limit(15_000, DAY)
    minute_margin: float = 1.0
    day_margin: float = 60.0

    def __post_init__(self) -> None:
        for name in ("minute", "day"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, Limit):
                raise ValidationError(f"Limits.{name} must be a Limit or None, got {value!r}")
        object.__setattr__(
            self, "minute_margin", _check_margin("minute_margin", self.minute_margin)
        )
        object.__setattr__(self, "day_margin", _check_margin("day_margin", self.day_margin))

    def windows(self) -> tuple[WindowSpec, ...]:
        """The enforced windows, shortest period first, with their scaled margins."""
        out: list[WindowSpec] = []
        for name, limit, margin, ref in (
            ("minute", self.minute, self.minute_margin, MINUTE),
            ("day", self.day, self.day_margin, DAY),
        ):
            if limit is not None:
                scaled = margin * min(1.0, limit.period / ref)
                out.append(WindowSpec(name, limit.count, limit.period, scaled))
        out.sort(key=lambda w: w.period)
        return tuple(out)
