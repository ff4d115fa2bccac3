"""Events of the events API: spec §2.4, §4.5 and §6.1, in both published record shapes.

The vendor's reference shows two shapes of the same record (docs/reference/observed.md):

- **flat** (the schema of spec §2.4): ``type``, ``id`` and one sub-object (``visit``,
  ``signup``, ...). No field carries the time of the event.
- **nested** (the vendor's data example): ``organizationId``, ``customerId``,
  ``event{type,id}``, ``where{locationId,locationName,hotspotId}`` and
  ``when{createdAt,createdAtLocal,timezone}``; ``createdAt`` is UTC, ``createdAtLocal`` is the
  location's wall time written with a ``Z`` anyway.

:class:`Event` decodes both, and its ``id``, ``type`` and :attr:`Event.time` read the same
whichever arrived: the one accessor per field that the rest of the SDK uses. ``type`` is a
plain string, never an enum, so an event type the SDK does not know (the vendor's example
has ``arriving``) decodes like any other.
"""

from __future__ import annotations

from datetime import datetime

from asyncwifi._instant import parse_local, utc_time
from asyncwifi.models._base import Model

__all__ = [
    "EmailInfo",
    "Event",
    "EventKey",
    "EventKeyPage",
    "EventPage",
    "EventRef",
    "EventWhen",
    "EventWhere",
    "Promo",
    "Signup",
    "SmsInfo",
    "Survey",
    "Visit",
]


class Visit(Model):
    """``visit`` sub-object: when and how long a contact stayed at a location."""

    #: ISO 8601 UTC
    start_at: str | None = None
    #: the location's local time, no zone (see ``timezone``)
    start_at_local: str | None = None
    timezone: str | None = None
    #: seconds (a number; integral or not)
    duration: float | None = None


class Signup(Model):
    """``signup`` sub-object."""

    source: str | None = None


class EmailInfo(Model):
    """``email`` sub-object of the email campaign events (send/open/click_email)."""

    campaign_id: str | None = None
    communication_id: str | None = None
    channel: str | None = None
    campaign_name: str | None = None
    email: str | None = None


class SmsInfo(Model):
    """``sms`` sub-object of the SMS campaign events (send/click_sms)."""

    campaign_id: str | None = None
    communication_id: str | None = None
    channel: str | None = None
    campaign_name: str | None = None
    phone: str | None = None
    prefix: str | None = None


class Survey(Model):
    """``survey`` sub-object: the questions and the contact's answers, keyed by id."""

    campaign_id: str | None = None
    campaign_name: str | None = None
    answer_id: str | None = None
    questions: dict[str, str] | None = None
    answers: dict[str, str] | None = None


class Promo(Model):
    """``promo`` sub-object."""

    type: str | None = None


class EventRef(Model):
    """``event`` of the nested shape: the record's identity."""

    type: str | None = None
    id: str | None = None


class EventWhere(Model):
    """``where`` of the nested shape: the location (and access point) of the event."""

    location_id: str | None = None
    location_name: str | None = None
    hotspot_id: str | None = None


class EventWhen(Model):
    """``when`` of the nested shape.

    ``created_at`` is UTC. ``created_at_local`` is the location's wall time although it is
    written with a trailing ``Z`` (observed on the vendor's pages): it is kept as the
    server's text and never parsed as UTC. ``timezone`` is an IANA name.
    """

    created_at: str | None = None
    created_at_local: str | None = None
    timezone: str | None = None


class EventKey(Model):
    """What identifies an event and places it in time, whichever shape arrived: ``type``,
    ``id`` (filled from ``event`` when the record is nested: both shapes read the same) and
    :attr:`time` (the UTC time of the event when the record carries one, else ``None``).

    :class:`Event` is the whole record; an export that keeps each record's bytes anyway
    decodes only this (``events.keys()``): a third of the time and memory.
    """

    type: str | None = None
    id: str | None = None
    #: not in spec §2.4: the legacy field of the SDK's own simulator ("dated" records),
    #: ISO 8601 UTC. Read through :attr:`time`; nothing requires it
    date: str | None = None
    event: EventRef | None = None
    when: EventWhen | None = None

    def __post_init__(self) -> None:
        # one accessor per field whichever shape arrived (a flat record pays one test): the
        # first non-empty id of ``id`` and ``event.id``, as asyncwifi.models._identity reads
        # a record that did not decode
        if not self.id:
            ref = self.event
            self.id = (ref.id if ref is not None else None) or None
            if ref is not None and self.type is None:
                self.type = ref.type

    @property
    def time_text(self) -> str | None:
        """The server's text of the event's UTC time (``when.createdAt``, else ``date``)."""
        when = self.when
        if when is not None and when.created_at is not None:
            return when.created_at
        return self.date

    @property
    def time(self) -> datetime | None:
        """The event's time as an aware UTC ``datetime``; ``None`` when the record carries
        no UTC time (the spec's flat shape) or one that does not parse as ISO 8601."""
        return utc_time(self.time_text)

    @property
    def local_time(self) -> datetime | None:
        """The location's wall time of the event (``when.createdAtLocal``), naive: its
        trailing ``Z`` is dropped (observed.md: it is not UTC); ``None`` when absent."""
        when = self.when
        return None if when is None else parse_local(when.created_at_local)


class Event(EventKey):
    """One event record, flat (spec §2.4) or nested (the vendor's example): see the module.

    Its identity and time are :class:`EventKey`'s; the rest is the record's sub-objects
    (flat) or its place (nested, in the order the vendor's example lists it).
    """

    visit: Visit | None = None
    signup: Signup | None = None
    email: EmailInfo | None = None
    sms: SmsInfo | None = None
    survey: Survey | None = None
    promo: Promo | None = None
    organization_id: str | None = None
    customer_id: str | None = None
    where: EventWhere | None = None


class EventPage(Model):
    """The event envelope (spec §2.4), with ``scrollId`` when scrolling (spec §4.5)."""

    status: str | None = None
    generated: str | None = None
    count: int | None = None
    events: list[Event] | None = None
    # spec §4.5: with enableScroll=true the response carries the next page's scroll id
    scroll_id: str | None = None


class EventKeyPage(Model):
    """The event envelope read for :class:`EventKey` records (``events.keys()``)."""

    events: list[EventKey] | None = None
    scroll_id: str | None = None
