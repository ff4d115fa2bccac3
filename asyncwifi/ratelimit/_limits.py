"""What a scheduler enforces: ``Limit(count, period)``, the windows ``Limits`` holds (spec §8:
60 a minute, 15,000 a day; any shape, so tests run ``Limit(60, 0.6)``) and its policy."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from asyncwifi._protocol import require_positive
from asyncwifi.errors import ValidationError

__all__ = ["DAY", "MINUTE", "Limit", "Limits", "WindowSpec"]

MINUTE, DAY = 60.0, 86_400.0  # the reference periods the margins are written for


def _seconds(value: object, what: str, *, zero: bool) -> float:
    """``value`` as finite seconds (> 0, or >= 0 with ``zero``), else ``ValidationError``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(f"{what} must be a number of seconds, got {value!r}")
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero):
        raise ValidationError(f"{what} must be finite and {'>=' if zero else '>'} 0, got {value!r}")
    return float(value)


@dataclass(frozen=True, slots=True)
class Limit:
    """At most ``count`` requests in any ``period`` seconds (of the scheduler's clock)."""

    count: int
    period: float

    def __post_init__(self) -> None:
        if isinstance(self.count, bool) or not isinstance(self.count, int) or self.count < 1:
            raise ValidationError(f"Limit count must be an integer >= 1, got {self.count!r}")
        object.__setattr__(self, "period", _seconds(self.period, "Limit period", zero=False))

    @property
    def interval(self) -> float:
        """Seconds between two admissions when paced evenly: ``period / count``."""
        return self.period / self.count


@dataclass(slots=True)
class WindowSpec:
    """One enforced window: at most ``count`` in any ``span`` = period + margin. A ``quota``
    (a day or longer) can be spent, the others only pace; a store's copy may be lowered or
    ``paced`` (admissions ``span / count`` apart) as the server says."""

    name: str
    count: int
    period: float
    margin: float
    quota: bool = False
    paced: bool = False
    span: float = field(init=False)

    def __post_init__(self) -> None:
        self.span = self.period + self.margin


@dataclass(frozen=True, slots=True)
class Limits:
    """The windows of one API key (minute, day, any ``others``) and what to do when they bind.

    The gateway counts a request when it arrives, the client when it sends it: a margin
    widens each window (N in any ``period + margin``) so jitter never puts N + 1 into one
    server window; margins are written for 60 s and 86,400 s and scale down with the period.
    ``others`` names more windows by the gateway's period names (``{"hour": Limit(...)}``).
    On a spent quota, ``on_exhausted="wait"`` waits for its reset (at most ``max_wait`` s,
    else ``QuotaExhaustedError``), ``"raise"`` raises at once; ``max_in_flight`` bounds the
    requests between admission and release (None: no bound); ``max_connections`` bounds the
    default transport's connection pool (httpx's ``Limits`` meaning).
    """

    minute: Limit | None = Limit(60, MINUTE)
    day: Limit | None = Limit(15_000, DAY)
    minute_margin: float = 1.0
    day_margin: float = 60.0
    others: Mapping[str, Limit] = field(default_factory=dict, hash=False)
    on_exhausted: Literal["wait", "raise"] = "wait"
    max_wait: float | None = None
    max_in_flight: int | None = 16
    max_connections: int = 32

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
        for name in ("minute_margin", "day_margin"):
            object.__setattr__(self, name, _seconds(getattr(self, name), name, zero=True))
        if self.on_exhausted not in ("wait", "raise"):
            raise ValidationError(f"on_exhausted must be 'wait' or 'raise': {self.on_exhausted!r}")
        if self.max_wait is not None:
            object.__setattr__(self, "max_wait", _seconds(self.max_wait, "max_wait", zero=True))
        if self.max_in_flight is not None:
            require_positive(self.max_in_flight, "max_in_flight", integer=True)
        require_positive(self.max_connections, "max_connections", integer=True)

    def windows(self) -> list[WindowSpec]:
        """The enforced windows (fresh copies), shortest period first, with scaled margins."""
        out: list[WindowSpec] = []
        for name, limit in (("minute", self.minute), ("day", self.day), *self.others.items()):
            if limit is not None:
                quota = name == "day" or (name != "minute" and limit.period >= DAY)
                margin, ref = (self.day_margin, DAY) if quota else (self.minute_margin, MINUTE)
                scaled = margin * min(1.0, limit.period / ref)
                out.append(WindowSpec(name, limit.count, limit.period, scaled, quota))
        return sorted(out, key=lambda w: w.period)
