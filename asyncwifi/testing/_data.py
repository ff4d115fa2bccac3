"""The simulated organization's data: seeded, deterministic, and mutable by the API.

Everything is derived from the seed only (never from the wall clock), so two simulators
with the same seed and sizes hold the same contacts, hotspots, segments and events. The
default data lives in January 2024 (``DEFAULT_EVENTS_START`` .. ``DEFAULT_EVENTS_END``).
A test adds new events as they would appear with :meth:`SimulatorData.add_events`.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from datetime import date, datetime
from typing import Any, Literal

from asyncwifi._clock import Clock, SystemClock
from asyncwifi.errors import ConfigurationError
from asyncwifi.testing._event_records import EventShape
from asyncwifi.testing._events import EVENT_TYPES, EventStore, Venue
from asyncwifi.testing._util import hex_id, iso_ms, iso_z, mix, to_epoch

__all__ = [
    "DEFAULT_EVENTS_END",
    "DEFAULT_EVENTS_START",
    "HotspotDate",
    "SimulatorData",
    "public",
    "served",
]

#: what a hotspot's ``date`` is (spec §2.2 shows a string only): when it last changed, or
#: when it was created (see ``Simulator(hotspot_date=...)``)
HotspotDate = Literal["modified", "created"]

#: 2024-01-01T00:00:00Z: where the default event range starts
DEFAULT_EVENTS_START = 1_704_067_200.0
#: 2024-01-31T00:00:00Z: where it ends (30 days)
DEFAULT_EVENTS_END = DEFAULT_EVENTS_START + 30 * 86_400.0
TIMEZONE = "Europe/Rome"
#: venues abroad where the organization's events also happen (name, IANA zone): with the
#: locations above they span four zones, so business time (local) is not in UTC order
_VENUES_ABROAD = (
    ("New York Fifth Avenue", "America/New_York"),
    ("San Francisco Union Square", "America/Los_Angeles"),
    ("Tokyo Shibuya", "Asia/Tokyo"),
)

_FIRST = (
    ("Giulia", "female"), ("Marco", "male"), ("Sofia", "female"), ("Luca", "male"),
    ("Emma", "female"), ("Noah", "male"), ("Alex", "other"), ("Chiara", "female"),
    ("Matteo", "male"), ("Lea", "female"), ("Jonas", "male"), ("Sam", "other"),
)  # fmt: skip
_LAST = ("Rossi", "Bianchi", "Müller", "Dubois", "García", "Smith", "Ferrari", "Novak")
_COUNTRIES = (("it", "+39"), ("fr", "+33"), ("de", "+49"), ("es", "+34"), ("gb", "+44"))
_SIGNUP = ("passthrough", "form", "facebook", "google", "kiosk", "sso")
_LOCATIONS = (
    ("Milano Duomo", "IT", "Milano", "Piazza del Duomo 1", "20122", "MI", 45.4642, 9.19),
    ("Roma Termini", "IT", "Roma", "Via Marsala 29", "00185", "RM", 41.9010, 12.5016),
    ("Torino Centro", "IT", "Torino", "Via Roma 101", "10123", "TO", 45.0677, 7.6824),
    ("Firenze SMN", "IT", "Firenze", "Piazza Stazione 4", "50123", "FI", 43.7764, 11.2480),
    ("Bologna Fiera", "IT", "Bologna", "Viale della Fiera 20", "40127", "BO", 44.5075, 11.3660),
)
_SEGMENTS = (
    ("Reachable by email", "Contacts with an email address", lambda c: bool(c["email"])),
    ("Reachable by phone", "Contacts with a phone number", lambda c: bool(c["phone"])),
    ("Italian guests", "Contacts whose country is Italy", lambda c: c["country"] == "it"),
    ("Frequent visitors", "More than 10 logins", lambda c: c["logins"] > 10),
    ("Marketing opt-in", "Accepted marketing communications", lambda c: c["_mktg"]),
    ("Dormant", "No login for 90 days", lambda c: c["logins"] <= 2),
)


def _contact(
    rnd: random.Random, seed: int, i: int, org: str, loc: dict[str, Any]
) -> dict[str, Any]:
    first, gender = rnd.choice(_FIRST)
    last = rnd.choice(_LAST)
    country, prefix = rnd.choice(_COUNTRIES)
    created = DEFAULT_EVENTS_START - rnd.randrange(30, 900) * 86_400 + rnd.randrange(86_400)
    modified = created + rnd.randrange(0, 200) * 86_400
    last_login = DEFAULT_EVENTS_START - rnd.random() * 20 * 86_400
    has_email, has_phone = rnd.random() < 0.85, rnd.random() < 0.6
    national = f"3{rnd.randrange(10**8, 10**9)}"
    email = f"{first.lower()}.{last.lower()}{i}@example.com".replace("ü", "u").replace("í", "i")
    year = rnd.randrange(1950, 2006)
    mktg = rnd.random() < 0.55
    logins = rnd.randrange(0, 40)
    visits = logins + rnd.randrange(0, 5)
    policy_date = iso_z(created)
    return {
        "cid": hex_id(seed, 0xC0, i),
        "title": rnd.choice((None, "Mr.", "Mrs.", "Miss")),
        "firstName": first,
        "lastName": last,
        "gender": gender,
        "birthDate": str(year),
        "birthDay": f"{rnd.randrange(1, 13):02d}-{rnd.randrange(1, 29):02d}",
        "age": 2024 - year,
        "country": country,
        "zipCode": rnd.choice((None, f"{rnd.randrange(10000, 99999)}")),
        "created": iso_z(created),
        "createdBusiness": iso_z(created),
        "modified": iso_z(modified),
        "email": email if has_email else None,
        "emailVerified": has_email and rnd.random() < 0.7,
        "emailValid": rnd.choice((True, True, None)) if has_email else None,
        "phone": f"{prefix}{national}" if has_phone else None,
        "phoneNumber": national if has_phone else None,
        "phonePrefix": prefix if has_phone else None,
        "phoneVerified": has_phone and rnd.random() < 0.5,
        "signupMethod": rnd.choice(_SIGNUP),
        "externalIdentityId": None,
        "username": email if has_email else f"guest{i}",
        "locked": False,
        "enabled": True,
        "organizationCid": org,
        "locationCid": loc["id"],
        "locationName": loc["name"],
        "system": rnd.choice(("splash", "mobileapp", "kiosk")),
        "type": "guest",
        "personalId": None,
        "externalSource": rnd.choice(("", "crm")),
        "lastLogin": iso_ms(last_login),
        "logins": logins,
        "ageVerification": rnd.choice((True, False, None)),
        "segmentCids": "",
        "segments": [],
        "policies": [
            {"name": "termsOfUse", "accepted": True, "date": policy_date, "version": "default"},
            {"name": "privacy", "accepted": True, "date": policy_date, "version": "default"},
            {"name": "mktgCommunications", "accepted": mktg, "date": policy_date, "version": "2"},
        ],
        "extId": {"id": f"crm-{i:06d}", "prop1": "", "prop2": ""} if i % 3 == 0 else {},
        "language": country if country != "gb" else "en",
        "splashLanguage": country if country != "gb" else "en",
        "genericCustomField": [{"key": "favouriteDrink", "value": rnd.choice(("tea", "coffee"))}],
        "metrics": {
            "frequencyMonthlyVisit": round(rnd.random() * 6, 2),
            "compassTopLocation": loc["id"],
            "compassTopLocationCount": visits,
            "topFrequencyBuckets": rnd.choice(("daily", "weekly", "monthly")),
            "lastVisitVenue": loc["id"],
            "prefVisitWDay": rnd.randrange(0, 7),
            "lastVisitDateUtc": iso_z(last_login),
            "avgVisitLength": rnd.randrange(300, 7200),
            "countVisitedLocations": rnd.randrange(1, 4),
            "prefVisitTimebucket": rnd.choice(("morning", "afternoon", "evening")),
            "prefVisitTimeHour": f"{rnd.randrange(8, 22):02d}",
            "lastVisitDateBusiness": iso_z(last_login + 3600),
            "countTotalVisits": visits,
            "conversionRate": round(rnd.random(), 3),
            "avgDaysBetweenVisits": round(rnd.random() * 30, 1),
        },
        "_mktg": mktg,
        "_index": i,
        "_created": created,
        "_modified": modified,
        "_lastLogin": last_login,
    }


#: contact fields spec §2.1 types "string" (not "string or null"): a contact without an
#: email or a phone is served without them, never with a null
_STRINGS = frozenset({"email", "phone", "phoneNumber", "phonePrefix"})


def public(contact: dict[str, Any]) -> dict[str, Any]:
    """A contact without the simulator's private (underscore) bookkeeping keys."""
    return {k: v for k, v in contact.items() if k[0] != "_"}


def served(contact: dict[str, Any]) -> dict[str, Any]:
    """A contact as the API serves it: :func:`public`, without the string fields it has no
    value for (spec §2.1 types them "string", not "string or null")."""
    return {
        k: v for k, v in contact.items() if k[0] != "_" and (v is not None or k not in _STRINGS)
    }


class SimulatorData:
    """The organization's contacts, locations, hotspots, segments and events.

    ``contacts`` (live, in creation order) and ``hotspots`` (by id) are the state the API
    reads and changes; ``events`` is the event log, which only grows (:meth:`add_events`,
    at the clock's now or late, in the past).
    Use :meth:`event_ids` to get exactly the ids a query would return (for exactly-once
    checks). ``clock`` is the simulator's (the default time of new events).
    """

    def __init__(
        self,
        *,
        seed: int,
        organization: str,
        contacts: int,
        hotspots: int,
        segments: int,
        events: int,
        events_start: datetime | str | float,
        events_end: datetime | str | float,
        event_shape: EventShape,
        hotspot_date: HotspotDate,
        clock: Clock | None = None,
    ) -> None:
        start, end = to_epoch(events_start), to_epoch(events_end)
        if start is None or end is None:
            raise ConfigurationError("events_start and events_end are required")
        self.seed = seed
        if hotspot_date not in ("modified", "created"):
            raise ConfigurationError(f"hotspot_date: 'modified' or 'created', not {hotspot_date!r}")
        #: what a hotspot's ``date`` is: its last change, or its creation
        self.hotspot_date: HotspotDate = hotspot_date
        #: the simulator's clock (when :meth:`add_events` adds events by default)
        self.clock: Clock = clock or SystemClock()
        self.organization = organization
        rnd = random.Random(mix(seed, 0xDA7A))
        n_locations = max(1, min(len(_LOCATIONS), -(-hotspots // 3)))
        #: the organization's locations (venues): id, name, address fields, coordinates
        self.locations: list[dict[str, Any]] = []
        for k in range(n_locations):
            name, country, city, address, zipc, state, lat, lon = _LOCATIONS[k]
            self.locations.append(
                {
                    "id": hex_id(seed, 0x10C, k),
                    "name": name,
                    "country": country,
                    "city": city,
                    "address": address,
                    "zip": zipc,
                    "state": state,
                    "latitude": lat,
                    "longitude": lon,
                    "timezone": TIMEZONE,
                    "extId": f"store-{k + 1:03d}",
                    "tags": ["retail", city.lower()],
                }
            )
        self._contacts: dict[str, dict[str, Any]] = {}
        #: every contact ever generated, by index (events refer to contacts by index)
        self.contact_order: list[str] = []
        for i in range(contacts):
            c = _contact(rnd, seed, i, organization, self.locations[i % n_locations])
            self._contacts[c["cid"]] = c
            self.contact_order.append(c["cid"])
        #: the segments (dashboard-defined groups); ids usable as the contacts' segmentId
        self.segments: list[dict[str, Any]] = []
        for k in range(segments):
            name, description, rule = _SEGMENTS[k % len(_SEGMENTS)]
            if k >= len(_SEGMENTS):
                name = f"{name} {k // len(_SEGMENTS) + 1}"
            sid = hex_id(seed, 0x5E6, k)
            members = [c for c in self._contacts.values() if rule(c)]
            for c in members:
                c["segments"].append({"cid": sid, "name": name})
                c["segmentCids"] = ",".join(s["cid"] for s in c["segments"])
            made = DEFAULT_EVENTS_START - (200 - k) * 86_400
            self.segments.append(
                {
                    "id": sid,
                    "name": name,
                    "description": description,
                    "lastRun": iso_z(DEFAULT_EVENTS_START - 3600),
                    "created": iso_z(made),
                    "modified": iso_z(made + 86_400 * k),
                    "segmentStatus": "ACTIVE" if k % 5 != 4 else "PAUSED",
                    "audience": len(members),
                }
            )
        #: hotspots by id (deleted ones stay, with ``deleted: true``)
        self.hotspots: dict[str, dict[str, Any]] = {}
        for k in range(hotspots):
            loc = self.locations[k % n_locations]
            made = DEFAULT_EVENTS_START - (400 - 7 * k) * 86_400
            mac = mix(seed, 0xAC, k) & 0xFFFFFFFFFF | 0x0200000000  # locally administered
            hid = hex_id(seed, 0x4057, k)
            self.hotspots[hid] = {
                "id": hid,
                "name": f"{loc['name']} AP {k // n_locations + 1}",
                "description": "Guest Wi-Fi access point",
                "firmware": rnd.choice(("MR 30.7", "MR 29.5", "10.4.1")),
                "vendor": "Cisco Meraki",
                "hotspotIdentifier": f"ap-{k + 1:04d}",
                "date": iso_z(made),
                "macAddress": ":".join(f"{(mac >> s) & 0xFF:02x}" for s in range(40, -8, -8)),
                "venueId": loc["id"],
                "country": loc["country"],
                "city": loc["city"],
                "address": loc["address"],
                "state": loc["state"],
                "zip": loc["zip"],
                "latitude": loc["latitude"],
                "longitude": loc["longitude"],
                "routerType": "meraki",
                "enabled": True,
                "deleted": False,
            }
        owners = []
        for cid in self.contact_order:
            c = self._contacts[cid]
            owners.append((c["email"] or "", c["phoneNumber"] or "", c["phonePrefix"] or ""))
        by_venue = {h["venueId"]: h["id"] for h in reversed(self.hotspots.values())}
        venues: list[Venue] = [
            (loc["id"], loc["name"], by_venue.get(loc["id"], ""), TIMEZONE)
            for loc in self.locations
        ]
        for k, (name, zone) in enumerate(_VENUES_ABROAD):
            venues.append((hex_id(seed, 0x10C, 100 + k), name, hex_id(seed, 0x4057, 100 + k), zone))
        #: the event log (see :class:`~asyncwifi.testing._events.EventStore`)
        self.events = EventStore(
            seed=seed,
            count=events,
            start=start,
            end=end,
            owners=owners,
            customer_ids=self.contact_order,
            organization=organization,
            venues=venues,
            shape=event_shape,
        )

    # -- contacts -------------------------------------------------------------------------

    @property
    def contacts(self) -> list[dict[str, Any]]:
        """The live contacts (deleted ones are gone), as the list endpoint shows them."""
        return [public(c) for c in self._contacts.values()]

    def contact(self, cid: str) -> dict[str, Any] | None:
        """One live contact's internal record, or ``None``."""
        return self._contacts.get(cid)

    def live_contacts(self) -> Iterable[dict[str, Any]]:
        """The internal records of the live contacts."""
        return self._contacts.values()

    def change_hotspot(self, hotspot_id: str, now: float, **fields: Any) -> None:
        """Change a hotspot upstream (as the dashboard would); with ``hotspot_date``
        "modified" its ``date`` becomes ``now``'s. ``deleted=True`` deletes it."""
        h = self.hotspots[hotspot_id]
        h.update(fields)
        if self.hotspot_date == "modified":
            h["date"] = iso_z(now)

    def delete_contact(self, cid: str) -> bool:
        """Remove a contact (spec §4.2 DELETE); its past events stay in the log."""
        return self._contacts.pop(cid, None) is not None

    def contact_index(self, cid: str) -> int | None:
        """The index by which events refer to a live contact."""
        c = self._contacts.get(cid)
        return None if c is None else int(c["_index"])

    # -- events ---------------------------------------------------------------------------

    def event_ids(
        self,
        date_start: datetime | date | str | float | None = None,
        date_end: datetime | date | str | float | None = None,
        types: Iterable[str] | None = None,
        *,
        customer: str | None = None,
    ) -> list[str]:
        """The ids the events API returns for this query, in ascending time order.

        ``date_start``/``date_end`` bound ``date`` inclusively, as ``dateStart``/``dateEnd``
        do; ``types`` are §4.5 names; ``customer`` a contact cid (the per-customer path).
        """
        names = None if types is None else list(types)
        for name in names or ():
            if name not in EVENT_TYPES:
                raise ConfigurationError(f"unknown event type {name!r}")
        owner = None
        if customer is not None:
            owner = self.contact_index(customer)
            if owner is None:
                return []
        sel = self.events.select(to_epoch(date_start), to_epoch(date_end), names, owner)
        ident = self.events.event_id
        return [ident(i) for i in sel]

    def add_events(
        self,
        count: int,
        *,
        at: datetime | str | float | None = None,
        until: datetime | str | float | None = None,
    ) -> list[str]:
        """Add ``count`` new events to the log, as they reach the platform now; their ids.

        Their times fall in ``[at, until]``: ``at`` defaults to the clock's now and
        ``until`` to ``at`` (aware datetimes, naive ones taken as UTC, ISO strings or epoch
        seconds), in whole seconds rounded down. An ``at`` in the past adds *late* events
        (a visit written when the guest leaves, an access point uploading after an outage):
        their own time lies among events served before, and ``dateStart``/``dateEnd``
        filter on it. Either way the ids are new and unique, deterministic from the seed
        and the number of calls so far. Queries and new scrolls serve them at once, in
        time order (``sortBy=utcTime``); a scroll opened before keeps what it selected.
        :meth:`event_ids` includes them.
        """
        start = self.clock.now() if at is None else to_epoch(at)
        end = start if until is None else to_epoch(until)
        if start is None or end is None:  # not reached: to_epoch of a value is a number
            raise ConfigurationError("add_events needs a time")
        added = self.events.append(count, start=start, end=end)
        return [self.events.event_id(i) for i in added]
