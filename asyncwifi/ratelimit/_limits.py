"""The limits a scheduler enforces: ``Limit(count, period)`` and the windows ``Limits`` holds.

spec §8: 60 requests per minute and 15,000 per day per account. Any count and period are
accepted so that tests and the simulator can run the same shapes faster (``Limit(60, 0.6)``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
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


@dataclass(slots=True)
class WindowSpec:
    """One enforced window: at most ``count`` admissions in any ``span`` = period + margin.
    A ``quota`` window (a day or longer) can be spent, the others only pace; each store's
    copy may be lowered (``count``) or ``paced`` (``span / count`` apart) as the server says."""

    name: str
    count: int
    period: float
    margin: float
    quota: bool = False
    paced: bool = False
    span: float = field(init=False)

    def __post_init__(self) -> None:
        self.span = self.period + self.margin


def _check_margin(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(f"{name} must be a number of seconds, got {value!r}")
    if not math.isfinite(value) or value < 0:
        raise ValidationError(f"{name} must be finite and >= 0, got {value!r}")
    return float(value)


@dataclass(frozen=True, slots=True)
class Limits:
    """The windows of one API key (minute, day, any ``others``), with safety margins.

    The gateway counts a request when it arrives, the client when it sends it: a margin
    widens each window (N in any ``period + margin``) so network jitter never puts N + 1
    into one server window. Margins are written for 60 s and 86,400 s and scale down with
    the period (``margin * min(1, period / reference)``: ``Limit(60, 0.6)`` gets 0.01 s).
    Either limit may be ``None``; ``others`` names more windows by the gateway's period
    names (``{"hour": Limit(...)}``), a day or longer taking the day's margin.
    """

    minute: Limit | None = Limit(60, MINUTE)
    day: Limit | None = Limit(15_000, DAY)
    minute_margin: float = 1.0
    day_margin: float = 60.0
    others: Mapping[str, Limit] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        for name in ("minute", "day"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, Limit):
                raise ValidationError(f"Limits.{name} must be a Limit or None, got {value!r}")
        for name, value in self.others.items():
            if not isinstance(name, str) or not name or name in ("minute", "day"):
                raise ValidationError(f"Limits.others: a window needs a new name, got {name!r}")
            if not isinstance(value, Limit):
                raise ValidationError(f"Limits.others[{name!r}] must be a Limit, got {value!r}")
        object.__setattr__(
            self, "minute_margin", _check_margin("minute_margin", self.minute_margin)
        )
        object.__setattr__(self, "day_margin", _check_margin("day_margin", self.day_margin))

    def windows(self) -> list[WindowSpec]:
        """The enforced windows (fresh copies), shortest period first, with scaled margins."""
        out: list[WindowSpec] = []
        for name, limit in (("minute", self.minute), ("day", self.day), *self.others.items()):
            if limit is None:
                continue
            quota = name == "day" or (name != "minute" and limit.period >= DAY)
            margin, ref = (self.day_margin, DAY) if quota else (self.minute_margin, MINUTE)
            scaled = margin * min(1.0, limit.period / ref)
            out.append(WindowSpec(name, limit.count, limit.period, scaled, quota))
        out.sort(key=lambda w: w.period)
        return out
