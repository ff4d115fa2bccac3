"""The simulator's one set of defaults: what ``Simulator()`` serves when nothing is said, and
what ``asyncwifi simulate`` (``python -m asyncwifi.testing``, ``SimulatorProcess``) and the
command line's ``--simulate`` start from, so that each serves the same data at the same pace.

Public as ``Simulator.DEFAULTS`` (a :class:`SimulatorDefaults`); a caller that leaves an
option out gets the value written here, and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass

from asyncwifi._defaults import (
    EMBEDDED_CONTACTS,
    EMBEDDED_EVENTS_PER_DAY,
    EMBEDDED_SPEED,
    SIMULATOR_PORT,
    SIMULATOR_SEED,
)
from asyncwifi.ratelimit import API_DAY, API_MINUTE
from asyncwifi.testing._data import DEFAULT_EVENTS_END, DEFAULT_EVENTS_START, HotspotDate
from asyncwifi.testing._event_records import EventShape
from asyncwifi.testing._limits import Mode

__all__ = ["SIMULATOR_DEFAULTS", "SimulatorDefaults"]

#: a UTC day, in clock seconds
_DAY = 86_400.0


@dataclass(frozen=True, slots=True)
class SimulatorDefaults:
    """The simulator's defaults (seeded data, gateway, lifetimes, where it serves).

    Data: ``seed`` of everything generated; ``contacts``, ``hotspots``, ``segments`` and
    ``events`` (spread over ``events_start`` .. ``events_end``, epoch seconds: January
    2024) are how many of each; ``event_shape`` and ``hotspot_date`` as in
    :class:`~asyncwifi.testing.Simulator`. A range of one's own (``--simulate`` covers the
    command's) gets :meth:`events_for` it, at the same density; ``--simulate``'s own are the
    ``embedded_*`` fields (each with its reason).

    Gateway and lifetimes: ``minute_limit`` and ``day_limit`` (the API's, spec §8),
    ``rate_limit_mode``, ``scroll_ttl`` and ``token_ttl`` (clock seconds),
    ``contacts_max_size`` (the vendor's 10,000).

    Pace and place: ``speed`` is clock seconds per real second for a simulator that makes
    its own clock (``asyncwifi simulate --speed``; ``Simulator()`` without a clock reads the
    system's, speed 1; ``--simulate`` runs at ``embedded_speed``); ``host`` and ``port`` are
    where a standalone simulator listens (an in-process ``Simulator()`` takes a free port).
    """

    seed: int = SIMULATOR_SEED
    contacts: int = 250
    hotspots: int = 12
    segments: int = 6
    events: int = 10_000
    events_start: float = DEFAULT_EVENTS_START
    events_end: float = DEFAULT_EVENTS_END
    event_shape: EventShape = "nested"
    hotspot_date: HotspotDate = "modified"
    minute_limit: int = API_MINUTE.count  # the API's (spec §8), as the client's ``Limits``
    day_limit: int = API_DAY.count
    rate_limit_mode: Mode = "fixed"
    scroll_ttl: float = 60.0
    token_ttl: float = _DAY
    contacts_max_size: int = 10_000
    speed: float = 1.0
    host: str = "127.0.0.1"
    port: int = SIMULATOR_PORT
    #: ``--simulate``'s faster clock and busier data (the reasons: ``asyncwifi._defaults``)
    embedded_speed: float = EMBEDDED_SPEED
    embedded_events_per_day: int = EMBEDDED_EVENTS_PER_DAY
    embedded_contacts: int = EMBEDDED_CONTACTS

    @property
    def events_per_day(self) -> float:
        """The default data's density: events a day of its range."""
        return self.events * _DAY / (self.events_end - self.events_start)

    def events_for(self, start: float, end: float) -> int:
        """How many events a range of one's own (``start`` .. ``end``, epoch seconds) holds
        at the default density."""
        return max(0, round(self.events_per_day * (end - start) / _DAY))


#: the one instance: ``Simulator.DEFAULTS``
SIMULATOR_DEFAULTS = SimulatorDefaults()
