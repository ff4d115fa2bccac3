"""What a sync measured of its organization, for its object plan (``_plan``), kept between
runs in a checkpoint: the rate of new events (events the forward reads delivered over the
event time they covered), of changed contacts and of changed hotspots (records the change
reads delivered over the clock time they covered), and whether the hotspots' date filter
reads changes only.

A rate weighs at most :data:`WINDOW` of time, so that it follows the organization as it
grows; a first run's read of its first week is a week's worth of events at once. The rate
of new events is also kept over exactly the last :data:`RECENT` of event time (a sliding
window of what each pass measured; a day: a shorter one would follow the day's own
rhythm): once that departs from the week's by more than chance (three standard deviations
of a Poisson count) and by a factor of two or more, the recent one is planned with until
the week's agrees with it again (within a fifth, or chance), so that a step (a new site, a
campaign) is followed within the day, not after the week, and a busier day alone does not
move the plan.

What the audit found late is kept too (``late_by``: the lookback that stores it on time,
and ``late_told``: the one said), so that the plan's lookback follows it across runs and
the operator is told once.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field

from asyncwifi.sync._plan import Observed

__all__ = ["CHECKPOINT", "RECENT", "WINDOW", "Measured"]

#: the checkpoint the measurements are kept in
CHECKPOINT = "sync.observed"
#: the most time a rate weighs (older measurements fade)
WINDOW = 7 * 86_400.0
#: the recent window of the rate of new events (a departure from the week's is followed)
RECENT = 86_400.0
#: how far the recent rate must be from the week's (either way) to be planned with, and
#: how near the week's must come again for the recent one to be left
DEPARTS = 2.0
AGREES = 1.2
_DAY = 86_400.0


@dataclass(slots=True)
class Measured:
    """Counts and the seconds they covered (see the module docstring)."""

    events: float = 0.0
    event_seconds: float = 0.0
    #: what each pass measured (events, seconds), oldest first, over the last
    #: :data:`RECENT` seconds of event time (the oldest cut to fit)
    recent: list[list[float]] = field(default_factory=list)
    #: whether the recent rate is the one planned with (it departed from the week's)
    following: bool = False
    changes: float = 0.0
    change_seconds: float = 0.0
    hotspot_changes: float = 0.0
    hotspot_seconds: float = 0.0
    #: None: not tried yet; False: the server answered the filter with older hotspots
    hotspot_filter: bool | None = None
    #: None: not tried yet; False: the server answered ``deleted=true`` with live hotspots
    #: (tombstones not read: deletes wait for the hotspots' whole read)
    hotspot_tombstones: bool | None = None
    #: when contact changes were last read (clock seconds)
    changes_at: float | None = None
    #: the lookback that would have stored on time what the audit found late, and the
    #: one the operator was told (seconds; 0: nothing found)
    late_by: float = 0.0
    late_told: float = 0.0

    @classmethod
    def decode(cls, text: str | None) -> Measured:
        """The stored measurements (nothing when none, or not readable: they only guide)."""
        if not text:
            return cls()
        try:
            data = json.loads(text)
            return cls(**{k: v for k, v in data.items() if k in cls.__slots__})
        except (ValueError, TypeError):
            return cls()

    def encode(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @staticmethod
    def _add(count: float, seconds: float, n: float, span: float) -> tuple[float, float]:
        if seconds + span > WINDOW and seconds > 0:  # the older part fades
            keep = max(0.0, WINDOW - span) / seconds
            count, seconds = count * keep, seconds * keep
        return count + n, seconds + span

    def add_events(self, n: int, seconds: float) -> None:
        """``n`` events delivered over ``seconds`` of event time."""
        if seconds > 0:
            self.events, self.event_seconds = self._add(self.events, self.event_seconds, n, seconds)
            recent = [*self.recent, [float(n), seconds]]
            over = sum(s for _, s in recent) - RECENT
            while over > 0:  # the oldest part leaves the window (a first run's week: most)
                count, span = recent[0]
                if span <= over:
                    recent.pop(0)
                else:
                    recent[0] = [count * (span - over) / span, span - over]
                over -= span
            self.recent = recent
            # a departure is followed until the week agrees again (see the docstring)
            factor = AGREES if self.following else DEPARTS
            seen, expected = self._recent()
            beyond = abs(seen - expected) > 3 * math.sqrt(max(expected, 1.0))
            self.following = beyond and not expected / factor < seen < expected * factor

    def _recent(self) -> tuple[float, float]:
        """Events of the recent window, and how many the week's rate expects there."""
        seconds = sum(s for _, s in self.recent)
        week = self.events / self.event_seconds if self.event_seconds else 0.0
        return sum(n for n, _ in self.recent), week * seconds

    @property
    def events_per_day(self) -> float:
        """New events a day: the week's rate, or the recent one while it is followed."""
        if not self.event_seconds:
            return 0.0
        seconds = sum(s for _, s in self.recent)
        if self.following and seconds:
            return self._recent()[0] / seconds * _DAY
        return self.events / self.event_seconds * _DAY

    def add_changes(self, n: int, seconds: float) -> None:
        """``n`` changed contacts read over ``seconds`` of clock time."""
        if seconds > 0:
            self.changes, self.change_seconds = self._add(
                self.changes, self.change_seconds, n, seconds
            )

    def add_hotspot_changes(self, n: int, seconds: float) -> None:
        """``n`` changed hotspots read over ``seconds`` of clock time."""
        if seconds > 0:
            self.hotspot_changes, self.hotspot_seconds = self._add(
                self.hotspot_changes, self.hotspot_seconds, n, seconds
            )

    @property
    def known(self) -> bool:
        """Whether a rate of new events was measured (a first pass was made)."""
        return self.event_seconds > 0

    def observed(
        self,
        *,
        contacts: int,
        hotspots: int,
        segments: int,
        spent: float = 0.0,
        days_left: float | None = None,
    ) -> Observed:
        """What the plan reads: these rates, with the sets' sizes and the month so far."""

        def per_day(n: float, seconds: float) -> float:
            return n / seconds * _DAY if seconds > 0 else 0.0

        return Observed(
            events_per_day=self.events_per_day,
            contacts=contacts,
            contact_changes_per_day=(
                per_day(self.changes, self.change_seconds) if self.change_seconds else None
            ),
            hotspots=hotspots,
            hotspot_changes_per_day=per_day(self.hotspot_changes, self.hotspot_seconds),
            segments=segments,
            hotspot_filter=self.hotspot_filter is not False,
            known=self.known,
            spent=spent,
            days_left=days_left,
            late_by=self.late_by,
        )
