"""What a scheduler enforces: ``Limit(count, period)``, the windows ``Limits`` holds (spec §8:
60 a minute, 15,000 a day; any shape, so tests run ``Limit(60, 0.6)``), the month's object
allowance (spec §8, ``_volume``) and the policy when one binds."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from asyncwifi._protocol import require_positive
from asyncwifi.errors import ValidationError
from asyncwifi.ratelimit._volume import allowance_of

__all__ = ["API_DAY", "API_MINUTE", "DAY", "MINUTE", "Limit", "Limits", "WindowSpec"]

MINUTE, DAY = 60.0, 86_400.0  # the reference periods the margins are written for


@dataclass(frozen=True, slots=True)
class Limit:
    """At most ``count`` requests in any ``period`` seconds (of the scheduler's clock)."""

    count: int
    period: float

    def __post_init__(self) -> None:
        require_positive(self.count, "Limit count", integer=True)
        object.__setattr__(self, "period", float(require_positive(self.period, "Limit period")))


#: spec §8: the API's limits, 60 requests a minute and 15,000 a day (``Limits``' defaults,
#: and the simulator's gateway's)
API_MINUTE, API_DAY = Limit(60, MINUTE), Limit(15_000, DAY)


@dataclass(slots=True)
class WindowSpec:
    """One enforced window: at most ``count`` in any ``span`` (period + margin); a ``quota``
    (a day or longer) can be spent; ``paced``: admissions ``span / count`` apart."""

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
    """The windows of one API key (minute, day, ``others`` by the gateway's period names), its
    month's object allowance, and what to do when they bind.

    A margin widens each window (N in any ``period + margin``: the gateway counts at arrival,
    the client at send), written for 60 s and 86,400 s, scaled down with the period. On a
    spent quota ``on_exhausted="wait"`` waits for its reset (at most ``max_wait`` s), "raise"
    raises ``QuotaExhaustedError``; ``max_in_flight`` bounds the requests admitted and not
    released (None: no bound); ``max_connections`` the default transport's pool.

    ``month`` is the subscription's object volume (spec §8; None: not known, nothing held
    back): a number of objects a month of every kind together, the subscription's terms
    (``"10 access points"``: 2,000 each; ``"2000 contacts"``: 10 each), or a mapping of a kind
    (``"events"``, ...; ``"all"``: every kind) to either. Once reached, requests for objects
    follow ``on_exhausted`` until the 1st of the next month at 00:00 UTC (:attr:`allowance`
    is the checked figure per kind).
    """

    minute: Limit | None = API_MINUTE
    day: Limit | None = API_DAY
    minute_margin: float = 1.0
    day_margin: float = 60.0
    others: Mapping[str, Limit] = field(default_factory=dict, hash=False)
    on_exhausted: Literal["wait", "raise"] = "wait"
    max_wait: float | None = None
    max_in_flight: int | None = 16
    max_connections: int = 32
    month: int | str | Mapping[str, int | str] | None = field(default=None, hash=False)
    #: ``month``, checked: objects a month per kind (``"all"``: every kind together)
    allowance: Mapping[str, int] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "allowance", allowance_of(self.month))
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
            margin = float(require_positive(getattr(self, name), name, zero=True))
            object.__setattr__(self, name, margin)
        if self.on_exhausted not in ("wait", "raise"):
            raise ValidationError(f"on_exhausted must be 'wait' or 'raise': {self.on_exhausted!r}")
        if self.max_wait is not None:
            max_wait = float(require_positive(self.max_wait, "max_wait", zero=True))
            object.__setattr__(self, "max_wait", max_wait)
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
