"""What a sync measured of its organization, for its object plan (``_plan``), kept between
runs in a checkpoint: the rate of new events (events the forward reads delivered over the
event time they covered), of changed contacts and of changed hotspots (records the change
reads delivered over the clock time they covered), and whether the hotspots' date filter
reads changes only.

A rate weighs at most :data:`WINDOW` of time, so that it follows the organization as it
grows; a first run's read of its first week is a week's worth of events at once.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from asyncwifi.sync._plan import Observed

__all__ = ["CHECKPOINT", "WINDOW", "Measured"]

#: the checkpoint the measurements are kept in
CHECKPOINT = "sync.observed"
#: the most time a rate weighs (older measurements fade)
WINDOW = 7 * 86_400.0
_DAY = 86_400.0


@dataclass(slots=True)
class Measured:
    """Counts and the seconds they covered (see the module docstring)."""

    events: float = 0.0
    event_seconds: float = 0.0
    changes: float = 0.0
    change_seconds: float = 0.0
    hotspot_changes: float = 0.0
    hotspot_seconds: float = 0.0
    #: None: not tried yet; False: the server answered the filter with older hotspots
    hotspot_filter: bool | None = None
    #: when contact changes were last read (clock seconds)
    changes_at: float | None = None

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

    def observed(self, *, contacts: int, hotspots: int, segments: int) -> Observed:
        """What the plan reads: these rates, with the sets' sizes."""

        def per_day(n: float, seconds: float) -> float:
            return n / seconds * _DAY if seconds > 0 else 0.0

        return Observed(
            events_per_day=per_day(self.events, self.event_seconds),
            contacts=contacts,
            contact_changes_per_day=(
                per_day(self.changes, self.change_seconds) if self.change_seconds else None
            ),
            hotspots=hotspots,
            hotspot_changes_per_day=per_day(self.hotspot_changes, self.hotspot_seconds),
            segments=segments,
            hotspot_filter=self.hotspot_filter is not False,
            known=self.known,
        )
